#!/usr/bin/env bash
# What `make dist` wrote, before anything is installed: the list of
# artifacts, their checksums, one version everywhere (the workspace's, in
# Cargo.toml), the sdist standing on its own, and the README's install
# section stating what the artifacts record that they need.
#
#   test_artifacts.sh DIST VERSION README WORK
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
dist=$(cd "$1" && pwd) version=$2 readme=$(cd "$(dirname "$3")" && pwd)/$(basename "$3") work=$(cd "$4" && pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"

# dist/ is also pip's index directory: nothing else there may look like a
# telha-jobs archive to pip (an npm .tgz named telha-jobs-V.tgz does).
check "dist/: the wheel, the sdist, SHA256SUMS; npm/: two packages; c/: the tarball; cli/: telha's" bash -c '
  cd "$1" && find . -type f | sort > "$2/got"
  printf "%s\n" ./SHA256SUMS "./telha_jobs-$3.tar.gz" "./npm/telha-jobs-$3.tgz" \
    "./npm/telha-jobs-linux-x64-gnu-$3.tgz" "./c/telha-jobs-$3-$(uname -m)-linux-gnu.tar.gz" \
    "./cli/telha-$3-$(uname -m)-linux-gnu.tar.gz" > "$2/want"
  ls | grep -Ex "telha_jobs-$3-cp39-abi3-manylinux_[0-9]+_[0-9]+_x86_64\.whl" | sed "s|^|./|" >> "$2/want"
  sort -o "$2/want" "$2/want"
  diff "$2/want" "$2/got"' _ "$dist" "$tmp" "$version"
check "SHA256SUMS matches every artifact" bash -c 'cd "$1" && sha256sum --strict -c SHA256SUMS' _ "$dist"

check "one version: Cargo.toml's $version in node/, the wheel, the sdist, both npm packages" python3 - "$dist" "$version" <<'EOF'
import json, re, sys, tarfile, zipfile
from pathlib import Path
dist, v = Path(sys.argv[1]), sys.argv[2]
bad = []
def want(what, got):
    if got != v:
        bad.append(f"{what}: {got!r}")
pkg = json.loads(Path("node/package.json").read_text())
want("node/package.json", pkg["version"])
lock = json.loads(Path("node/package-lock.json").read_text())
want("node/package-lock.json", lock["version"])
want("node/package-lock.json packages['']", lock["packages"][""]["version"])
# napi-rs writes the version into the loader it generates (the platform
# package's version check).
for got in set(re.findall(r"expected ([0-9][^ ]*) but got", Path("node/index.js").read_text())):
    want("node/index.js", got)
whl = next(dist.glob("telha_jobs-*.whl"))
z = zipfile.ZipFile(whl)
meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
want("wheel METADATA", re.search(r"^Version: (.*)$", meta, re.M).group(1))
rp = re.search(r"^Requires-Python: >=(\d+)\.(\d+)$", meta, re.M)
if not rp or f"cp{rp.group(1)}{rp.group(2)}-abi3" not in whl.name:
    bad.append(f"Requires-Python {rp and rp.group(0)} does not match the abi3 tag of {whl.name}")
with tarfile.open(dist / f"telha_jobs-{v}.tar.gz") as t:
    pkginfo = t.extractfile(f"telha_jobs-{v}/PKG-INFO").read().decode()
want("sdist PKG-INFO", re.search(r"^Version: (.*)$", pkginfo, re.M).group(1))
for tgz in (dist / "npm").glob("*.tgz"):
    with tarfile.open(tgz) as t:
        p = json.load(t.extractfile("package/package.json"))
    want(tgz.name, p["version"])
    for name, dep in p.get("optionalDependencies", {}).items():
        want(f"{tgz.name} optionalDependencies[{name}]", dep)
print("\n".join(bad) or f"all {v}")
sys.exit(1 if bad else 0)
EOF

# The sdist: the py crate plus every workspace crate its build needs, and a
# workspace manifest and lock file that resolve with nothing outside it.
sdist="$dist/telha_jobs-$version.tar.gz"
check "the sdist holds the crates the py crate's graph needs, and Cargo.lock" bash -c '
  tar -xzf "$1" -C "$2" && cd "$2/telha_jobs-$3" || exit 1
  for f in pyproject.toml PKG-INFO Cargo.toml Cargo.lock README.md py/Cargo.toml py/src/lib.rs \
      python/telha_jobs/__init__.py python/telha_jobs/_native.pyi python/telha_jobs/py.typed \
      core/Cargo.toml core/src/lib.rs client/Cargo.toml server/Cargo.toml proto/Cargo.toml \
      vendor/prost-derive/Cargo.toml; do
    [ -e "$f" ] || { echo "missing $f"; exit 1; }
  done' _ "$sdist" "$tmp" "$version"
check "the unpacked sdist resolves on its own (cargo metadata --locked --offline)" bash -c '
  cd "$1/telha_jobs-$2" && cargo metadata --format-version 1 --locked --offline --manifest-path py/Cargo.toml > "$1/metadata.json" &&
  python3 - "$1/metadata.json" "$PWD" <<EOF
import json, sys
m = json.load(open(sys.argv[1]))
local = [p for p in m["packages"] if p["source"] is None]
outside = [p["manifest_path"] for p in local if not p["manifest_path"].startswith(sys.argv[2] + "/")]
names = sorted(p["name"] for p in local)
print("local crates:", ", ".join(names))
assert not outside, outside
assert "telha-jobs-py" in names and "prost-derive" in names, names
EOF' _ "$tmp" "$version"

# The README's install section states what the artifacts record.
check "the README's install section states the wheel's glibc, the addon's Node-API and glibc, the C library's" \
  python3 - "$readme" "$dist" "$work" <<'EOF'
import json, re, sys
from pathlib import Path
readme, dist, work = Path(sys.argv[1]).read_text(), Path(sys.argv[2]), Path(sys.argv[3])
m = re.search(r"^## Install$(.*?)^## ", readme, re.M | re.S)
assert m, "no '## Install' section"
text = " ".join(m.group(1).split())
whl = next(dist.glob("telha_jobs-*.whl")).name
g = re.search(r"manylinux_(\d+)_(\d+)_", whl)
node = json.loads((work / "node-needs.json").read_text())
c = json.loads((work / "c-needs.json").read_text())
wants = {
    "wheel": f"CPython 3.9 or newer (one abi3 wheel) on x86_64 Linux with glibc {g.group(1)}.{g.group(2)} or newer",
    "npm": f"Node.js 18 or newer (Node-API {node['node_api']}) on x86_64 Linux with glibc {node['glibc']} or newer",
    "C": f"glibc {c['glibc']} or newer and libstdc++ with GLIBCXX_{c['glibcxx']}",
}
missing = {k: w for k, w in wants.items() if w not in text.replace("`", "")}
for k, w in missing.items():
    print(f"{k}: the install section does not say: {w}")
sys.exit(1 if missing else 0)
EOF

finish "dist artifacts"
