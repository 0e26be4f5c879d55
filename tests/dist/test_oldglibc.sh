#!/usr/bin/env bash
# The glibc 2.17 artifacts of `make dist-all` (issue 47):
#
# 1. Each binary they ship (the wheel's extension, the npm addon, the C
#    library, telha) imports no glibc symbol version newer than GLIBC (the
#    manylinux2014 floor), no libstdc++ at all (zig's libc++ is linked in),
#    and needs only glibc's own libraries: read with objdump -T / readelf -d
#    (scripts/dist/elf_needs.py), so a newer symbol fails here even though
#    no glibc 2.17 system can be had on this machine.
# 2. Installed and run in ROOTFS, the oldest Debian root file system that
#    can be made here (tests/dist/rootfs.sh: bullseye, glibc 2.31, CPython
#    3.9, gcc), through chroot: the wheel in a new virtualenv with the
#    README's Python example, the telha tarball listing the store that
#    example wrote, the C tarball's shared library under the README's C
#    example built by the root file system's own gcc, its store listed by
#    telha. Its own Node (12) is older than the package's floor (18): this
#    machine's node and npm are copied in (the nodejs.org build needs glibc
#    2.28 and GLIBCXX_3.4.21, which bullseye has; it runs on bullseye's
#    libraries there), the two npm tarballs installed with npm --offline,
#    and the README's Node example run.
#
#   test_oldglibc.sh DIST VERSION README GLIBC ROOTFS
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
dist=$(cd "$1" && pwd) version=$2 readme=$(cd "$(dirname "$3")" && pwd)/$(basename "$3") glibc=$4 rootfs=$5
[ -n "$rootfs" ] && [ -f "$rootfs/.ready" ] || { echo "test_oldglibc.sh: no root file system in '$rootfs' (tests/dist/rootfs.sh)"; exit 1; }

tmp=$(mktemp -d)
# Inside the root file system: a directory of its own, removed at the end.
inside=/tmp/telha-dist-test.$$
trap 'rm -rf "$tmp" "$rootfs$inside"' EXIT
mkdir -p "$tmp/bin" "$rootfs$inside/dist"

wheel=$(cd "$dist" && for f in telha_jobs-"$version"-cp39-abi3-*.whl; do
  case $f in *[-.]manylinux_2_17_x86_64.*) echo "$f"; break ;; esac; done)
ctar="telha-jobs-$version-x86_64-linux-gnu"
clitar="telha-$version-x86_64-linux-gnu"
{ [ -n "$wheel" ] && python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); n = next(n for n in z.namelist() if n.endswith(".so")); open(sys.argv[2] + "/_native.so", "wb").write(z.read(n))' "$dist/$wheel" "$tmp/bin"
  tar -xzf "$dist/npm/telha-jobs-linux-x64-gnu-$version.tgz" -C "$tmp" && cp "$tmp"/package/*.node "$tmp/bin/"
  tar -xzf "$dist/c/$ctar.tar.gz" -C "$tmp" && cp "$tmp/$ctar/lib/libtelha_jobs.so.$version" "$tmp/bin/"
  tar -xzf "$dist/cli/$clitar.tar.gz" -C "$tmp" && cp "$tmp/$clitar/telha" "$tmp/bin/"; } >/dev/null 2>&1
echo "== $dist: ${wheel:-no wheel}, the addon, the C library, telha"

for f in _native.so telha-jobs.linux-x64-gnu.node "libtelha_jobs.so.$version" telha; do
  check "$f: no GLIBC_ version above $glibc, no libstdc++, only glibc's libraries needed" \
    python3 - "$root/scripts/dist/elf_needs.py" "$tmp/bin/$f" "$glibc" <<'EOF'
import json, subprocess, sys
tool, path, floor = sys.argv[1:]
key = lambda v: tuple(int(p) for p in v.split("."))
d = json.loads(subprocess.run([sys.executable, tool, path], check=True, capture_output=True, text=True).stdout)
print(f"{d['file']}: GLIBC_{d['glibc']} max, GLIBCXX {d['glibcxx']}, CXXABI {d['cxxabi']}, GCC_{d['gcc']}, NEEDED {' '.join(d['needed'])}")
# The versions above the floor, each with its symbols (what to fix).
out = subprocess.run(["objdump", "-T", path], check=True, capture_output=True, text=True).stdout
newer = sorted({l.split()[-1] + " " + t for l in out.splitlines() if "*UND*" in l
                for t in [p.strip("()") for p in l.split() if p.strip("()").startswith("GLIBC_2.")]
                if key(t[len("GLIBC_"):]) > key(floor)})
print("\n".join(newer[:20]))
glibc_libs = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libutil.so.1",
              "ld-linux-x86-64.so.2", "libgcc_s.so.1"}
bad = newer or d["glibcxx"] or d["cxxabi"] or set(d["needed"]) - glibc_libs
sys.exit(1 if bad else 0)
EOF
done

# What the README's install section and docs/install.md say of this set.
check "README.md and docs/install.md name these artifacts and glibc $glibc" python3 - "$readme" "$root/docs/install.md" "$dist" "$glibc" <<'EOF'
import re, sys
from pathlib import Path
readme, page, dist, glibc = Path(sys.argv[1]).read_text(), Path(sys.argv[2]).read_text(), Path(sys.argv[3]), sys.argv[4]
m = re.search(r"^## Install$(.*?)^## ", readme, re.M | re.S)
install = " ".join(m.group(1).split()) if m else ""
files = sorted(str(p.relative_to(dist)) for p in dist.rglob("*") if p.is_file() and p.name != "SHA256SUMS")
wheel = next(f for f in files if f.endswith(".whl"))
missing = [w for w in (wheel, f"glibc {glibc} or newer") if w not in install]
missing += [f"docs/install.md: dist-all/{f}" for f in files if f"dist-all/{f}" not in page]
missing += [f"docs/install.md: glibc {glibc} or newer"] if f"glibc {glibc} or newer" not in page else []
print("\n".join(f"not said: {w}" for w in missing))
sys.exit(1 if missing or not files else 0)
EOF

# In the old root file system (chroot: its own loader, glibc and Python).
cp "$dist/$wheel" "$rootfs$inside/dist/"
tar -xzf "$dist/cli/$clitar.tar.gz" -C "$rootfs$inside"
tar -xzf "$dist/c/$ctar.tar.gz" -C "$rootfs$inside"
{ printf 'def parse(doc):\n    return 3\n\n'; readme_block "$readme" '## Python' python; } > "$rootfs$inside/readme.py"
{
  printf '#include <stdio.h>\n#include <string.h>\n#include <telha_jobs.h>\nint main(void) {\n'
  printf 'if (strcmp(tj_version(), "%s") != 0) { fprintf(stderr, "version %%s\\n", tj_version()); return 2; }\n' "$version"
  readme_block "$readme" '## C' c
  printf 'return 0;\n}\n'
} > "$rootfs$inside/readme.c"
# Each step a script run by the root file system's sh, in $inside.
printf 'version=%s clitar=%s ctar=%s\n' "$version" "$clitar" "$ctar" > "$rootfs$inside/env.sh"
cat > "$rootfs$inside/wheel.sh" <<'EOF'
python3 -m venv venv
venv/bin/pip install -q --no-index --find-links dist telha-jobs
venv/bin/python -c 'import telha_jobs; print(telha_jobs.__file__)'
EOF
cat > "$rootfs$inside/example.sh" <<'EOF'
venv/bin/python readme.py
test -d telha-data
EOF
cat > "$rootfs$inside/cli.sh" <<'EOF'
got=$("./$clitar/telha" --version); echo "$got"; [ "$got" = "telha $version" ]
"./$clitar/telha" --db telha-data jobs ls
"./$clitar/telha" --db telha-data --json jobs ls --state completed --kind ingest:pdf > ls.json
venv/bin/python -c 'import json; j = json.load(open("ls.json"))["jobs"]; assert [x["kind"] for x in j] == ["ingest:pdf"], j'
EOF
cat > "$rootfs$inside/c.sh" <<'EOF'
gcc -std=c11 -Wall -Wextra -Werror readme.c -I"$ctar/include" -L"$ctar/lib" -Wl,-rpath,"$PWD/$ctar/lib" -ltelha_jobs -o readme-c
mkdir -p run-c && cd run-c
out=$(../readme-c); [ -z "$out" ] && [ -d telha-data ]
"../$clitar/telha" --db telha-data --json jobs ls --state completed --kind ingest:pdf > ls.json
../venv/bin/python -c 'import json; j = json.load(open("ls.json"))["jobs"]; assert [x["kind"] for x in j] == ["ingest:pdf"], j'
EOF
# The README's Node example, completed as tests/dist/test_npm.sh does it,
# and the addon it loaded must be the platform package's.
{
  echo "async function handle (payload) { if (payload.doc !== 's3://bucket/a.pdf') throw new Error('payload ' + JSON.stringify(payload)); return { pages: 12 } }"
  echo "(async () => {"
  readme_block "$readme" '## Node' js
  cat <<'EOF'
  const info = await q.get(job.id)
  if (info.state !== 'completed') throw new Error('job is ' + info.state)
  await q.close()
  const loaded = Object.keys(require.cache).filter((f) => f.endsWith('.node'))
  const want = require('node:path').resolve('node_modules/telha-jobs-linux-x64-gnu/telha-jobs.linux-x64-gnu.node')
  if (JSON.stringify(loaded) !== JSON.stringify([want])) throw new Error('addons loaded: ' + loaded)
  console.log('README example: 1 job completed on Node ' + process.version)
})().catch((e) => { console.error(e); process.exit(1) })
EOF
} > "$rootfs$inside/readme_example.js"
node_bin=$(readlink -f "$(command -v node)")
npm_dir=$(cd "$(dirname "$(readlink -f "$(command -v npm)")")/.." && pwd)
mkdir -p "$rootfs$inside/node/bin" "$rootfs$inside/npm-dist"
cp "$node_bin" "$rootfs$inside/node/bin/node"
cp -a "$npm_dir" "$rootfs$inside/node/npm"
cp "$dist"/npm/*.tgz "$rootfs$inside/npm-dist/"
cat > "$rootfs$inside/node.sh" <<'EOF'
export PATH="$PWD/node/bin:$PATH" npm_config_cache="$PWD/npm-cache" npm_config_userconfig="$PWD/npmrc" \
  npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
: > npmrc
mkdir -p app-node && cd app-node
node ../node/npm/bin/npm-cli.js install --offline --no-progress \
  "../npm-dist/telha-jobs-linux-x64-gnu-$version.tgz" "../npm-dist/telha-jobs-$version.tgz"
cp ../readme_example.js . && node readme_example.js | grep -x "README example: 1 job completed on Node v.*"
EOF
in_root() { chroot "$rootfs" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root /bin/sh -ec "cd $inside && . ./env.sh && . ./$1"; }

rootfs_libc=$(chroot "$rootfs" /bin/sh -c 'ldd --version | head -n 1' 2>&1 | awk '{print $NF}')
host_libc=$(ldd --version | head -n 1 | awk '{print $NF}')
check "the root file system's glibc ($rootfs_libc, $(chroot "$rootfs" python3 -V 2>&1)) is older than this machine's ($host_libc)" \
  bash -c '[ "$(printf "%s\n%s\n" "$1" "$2" | sort -V | head -n 1)" = "$1" ] && [ "$1" != "$2" ]' _ "$rootfs_libc" "$host_libc"
check "there: the wheel installs by name into a new virtualenv (pip --no-index --find-links) and imports" in_root wheel.sh
check "there: the README's Python example writes ./telha-data" in_root example.sh
check "there: telha --version, then telha jobs ls lists the example's completed ingest:pdf job" in_root cli.sh
check "there: the README's C example built by its gcc against the tarball's shared library, run; telha lists its completed job" in_root c.sh
check "there: npm install --offline of the two npm tarballs, the README's Node example on this machine's Node ($(node --version))" in_root node.sh

finish "dist glibc $glibc"
