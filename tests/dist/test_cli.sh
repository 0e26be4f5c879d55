#!/usr/bin/env bash
# The `telha` release tarball in dist/cli/ as an operator gets it: unpacked
# in a temporary directory and run from there (nothing of the checkout's on
# PATH): its --version, its man-style telha.txt against the binary's own
# --help, then the README's Python example (BUILD_PYTHON, the wheel
# installed) writes a store and `telha jobs ls` reads it; the needs the
# README states are checked against the binary.
#
#   test_cli.sh DIST VERSION README BUILD_PYTHON [TARBALL_GLOB]
#
# TARBALL_GLOB picks the tarball in DIST/cli (default: this machine's arch,
# glibc); RUNNER (e.g. "qemu-aarch64-static -L ROOT") runs a foreign binary.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
dist=$(cd "$1" && pwd) version=$2 readme=$(cd "$(dirname "$3")" && pwd)/$(basename "$3") py=$4
glob=${5:-telha-$version-$(uname -m)-linux-gnu.tar.gz}
runner=${RUNNER:-}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tarball=$(ls "$dist"/cli/$glob 2>/dev/null | head -n 1)
name=$(basename "${tarball:-none}" .tar.gz)
echo "== ${tarball:-no $glob in $dist/cli} unpacked in $tmp"
bin="$tmp/$name/telha"

check "the tarball unpacks into one directory: telha (executable), telha.txt, LICENSE, README.md" bash -c '
  [ -f "$1" ] && tar -xzf "$1" -C "$2" && [ "$(ls "$2")" = "$3" ] || exit 1
  cd "$2/$3" && find . -type f | sort > "$2/../got" &&
  printf "%s\n" ./LICENSE ./README.md ./telha ./telha.txt > "$2/../want" &&
  diff "$2/../want" "$2/../got" && [ -x telha ] && grep -q "Apache License" LICENSE' \
  _ "$tarball" "$tmp" "$name"
mkdir -p "$tmp/run"

check "telha --version from the unpacked directory: telha $version" bash -c '
  out=$(cd "$3" && env -i PATH=/usr/bin:/bin $4 "$1" --version) && echo "$out" && [ "$out" = "telha $2" ]' \
  _ "$bin" "$version" "$tmp/run" "$runner"

# telha.txt is the binary's own help: every command it lists has its section,
# and each section is exactly what `telha <command> --help` prints.
check "telha.txt holds every command's --help, as the binary prints it" python3 - "$bin" "$tmp/$name/telha.txt" "$runner" <<'PYEOF'
import re, subprocess, sys
binary, txt, runner = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3].split()
sections = dict(re.findall(r"^={78}\n([^\n]+)\n={78}\n\n(.*?)(?=\n={78}\n|\Z)", txt, re.M | re.S))
def helptext(path):
    return subprocess.run([*runner, binary, *path, "--help"], check=True, capture_output=True, text=True).stdout.rstrip() + "\n"
def commands(text):
    m = re.search(r"^Commands:\n(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    return [w for w in re.findall(r"^  (\S+)", m.group(1), re.M) if w != "help"] if m else []
todo, seen, bad = [[]], 0, []
while todo:
    path = todo.pop()
    want = helptext(path)
    key = "TELHA" if not path else " ".join(["telha", *path])
    if sections.get(key, "").rstrip() != want.rstrip():
        bad.append(key)
    seen += 1
    todo += [[*path, c] for c in commands(want)]
print(f"{seen} commands, {len(sections)} sections; differing or missing: {bad or 'none'}")
sys.exit(1 if bad or seen != len(sections) or seen < 10 else 0)
PYEOF

# The README's Python example (parse() is the reader's code) writes a store;
# the unpacked telha reads it.
{ printf 'def parse(doc):\n    return 3\n\n'; readme_block "$readme" '## Python' python; } > "$tmp/readme.py"
check "the README's Python example writes ./telha-data; telha jobs ls lists its completed ingest:pdf job" bash -c '
  cd "$3" && "$2" "$4/readme.py" || exit 1
  env -i PATH=/usr/bin:/bin $5 "$1" --db telha-data jobs ls && \
  env -i PATH=/usr/bin:/bin $5 "$1" --db telha-data --json jobs ls > ls.json &&
  python3 -c "import json,sys; j=json.load(open(\"ls.json\"))[\"jobs\"]; sys.exit(0 if [(x[\"kind\"], x[\"state\"]) for x in j] == [(\"ingest:pdf\", \"completed\")] else 1)"' \
  _ "$bin" "$py" "$tmp/run" "$tmp" "$runner"

check "the tarball's README states the binary's glibc (and libstdc++) needs" bash -c '
  needs=$(python3 "$1/scripts/dist/elf_needs.py" "$2/telha") || exit 1
  read -r glibc glibcxx < <(printf "%s" "$needs" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d[\"glibc\"], d[\"glibcxx\"] or \"-\")")
  echo "telha: glibc $glibc, GLIBCXX_$glibcxx"
  text=$(tr -s " \n" "  " < "$2/README.md")
  case "$text" in *"glibc $glibc or newer"*) ;; *) exit 1;; esac
  [ "$glibcxx" = - ] || case "$text" in *"GLIBCXX_$glibcxx"*) ;; *) exit 1;; esac' _ "$root" "$tmp/$name"

finish "dist telha"
