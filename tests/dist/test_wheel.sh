#!/usr/bin/env bash
# The wheel in dist/ as a user gets it: a new virtualenv per interpreter,
# `pip install --no-index --find-links dist telha-jobs` (by name, nothing
# from an index, no pip config), then import it, run the README's Python
# example against a store in a temporary directory, and type-check that
# example with mypy --strict against the stubs the wheel ships.
#
#   test_wheel.sh DIST VERSION README BUILD_PYTHON [PYTHON...]
#
# With no PYTHON given it picks, among the interpreters on this machine
# (pyenv's and python3.X on PATH) other than the build's, the oldest one the
# wheel supports and the newest; with none it uses the build's. mypy comes
# from PyPI (pip's cache), only after the package was installed from dist/.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
dist=$(cd "$1" && pwd) version=$2 readme=$(cd "$(dirname "$3")" && pwd)/$(basename "$3") build_py=$4
shift 4

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

wheel=$(cd "$dist" && ls telha_jobs-"$version"-*.whl 2>/dev/null | head -n 1)
floor=$(python3 - "$dist/$wheel" <<'EOF'
import re, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
m = re.search(r"^Requires-Python: >=(\d+\.\d+)", meta, re.M)
print(m.group(1) if m else "3.0")
EOF
)

pythons=("$@")
if [ ${#pythons[@]} -eq 0 ]; then
  build_v=$("$build_py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  mapfile -t pythons < <(
    { ls -d "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.*/bin/python3 2>/dev/null
      compgen -c python3. | grep -Ex 'python3\.[0-9]+' | sort -u | while read -r c; do command -v "$c"; done |
        grep -v '/shims/'; } |
    while read -r p; do
      v=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
      echo "$v $p"
    done | python3 -c '
import sys
floor, build = sys.argv[1], sys.argv[2]
key = lambda v: tuple(map(int, v.split(".")))
seen = {}
for line in sys.stdin:
    v, p = line.split(maxsplit=1)
    if key(v) >= key(floor) and v != build:
        seen.setdefault(v, p.strip())
vs = sorted(seen, key=key)
for v in dict.fromkeys(vs[:1] + vs[-1:]):
    print(seen[v])
' "$floor" "$build_v")
  [ ${#pythons[@]} -eq 0 ] && pythons=("$build_py")
fi
echo "== the wheel $wheel (Requires-Python >=$floor) on: $(for p in "${pythons[@]}"; do "$p" -c 'import platform; print(platform.python_version(), end=" ")'; done)"

# The README's Python example, completed: `parse` is "your code"; afterwards
# the store must hold the one job, completed.
{
  cat <<'EOF'
def parse(doc: str) -> int:
    if doc != "s3://bucket/a.pdf":
        raise ValueError(f"unexpected document {doc}")
    return 12


EOF
  readme_block "$readme" '## Python' python
  cat <<'EOF'

with telha_jobs.Queue("./telha-data") as check:
    total = check.stats()["total"]
    assert total["completed"] == 1 and total["pending"] == 0, total
print("README example: 1 job completed")
EOF
} > "$tmp/readme_example.py"

clean_pip() { env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null \
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$@"; }

# One interpreter's checks. The interpreters run side by side: most of the
# time goes to venv creation, installs and the example's 5-second wait.
one_python() {
  local py=$1 v venv work vpy
  v=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv="$tmp/venv-$v"
  work="$tmp/work-$v"
  mkdir -p "$work"
  "$py" -m venv "$venv"
  vpy="$venv/bin/python"

  check "py$v: pip install --no-index --find-links dist telha-jobs" \
    clean_pip "$vpy" -m pip install --no-index --find-links "$dist" telha-jobs
  check "py$v: pip chose the abi3 manylinux wheel (not the sdist)" "$vpy" - <<EOF
import importlib.metadata as md
d = md.distribution("telha-jobs")
assert d.version == "$version", d.version
tags = [l.split(": ", 1)[1] for l in d.read_text("WHEEL").splitlines() if l.startswith("Tag: ")]
assert tags and all("-abi3-manylinux_" in t for t in tags), tags
print(tags)
EOF
  check "py$v: import telha_jobs (__version__ $version, from the venv)" "$vpy" - <<EOF
import os, telha_jobs
assert telha_jobs.__version__ == "$version", telha_jobs.__version__
assert os.path.realpath(telha_jobs.__file__).startswith(os.path.realpath("$venv") + "/"), telha_jobs.__file__
print(telha_jobs.__file__)
EOF
  check "py$v: the stubs ship in the wheel (_native.pyi, py.typed)" "$vpy" - <<'EOF'
import importlib.metadata as md
d = md.distribution("telha-jobs")
recorded = {str(f): f for f in d.files}
for want in ("telha_jobs/_native.pyi", "telha_jobs/py.typed"):
    assert want in recorded, f"{want} is not in the wheel's RECORD"
    assert d.locate_file(recorded[want]).is_file(), f"{want} is not installed"
EOF
  check "py$v: the README's Python example against a temporary store" \
    bash -c 'cd "$1" && "$2" "$3" | grep -x "README example: 1 job completed"' _ "$work" "$vpy" "$tmp/readme_example.py"
  check "py$v: mypy --strict on the README example (the wheel's stubs)" bash -c \
    '"$1" -m pip install -q --no-compile mypy && cd "$2" && "$1" -m mypy --strict --no-incremental "$3"' \
    _ "$vpy" "$work" "$tmp/readme_example.py"
  echo "$dist_passed $dist_failed" > "$tmp/counts-$v"
}

pids=()
for i in "${!pythons[@]}"; do
  one_python "${pythons[$i]}" > "$tmp/out-$i" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  cat "$tmp/out-$i"
done
runs=0
for c in "$tmp"/counts-*; do
  [ -e "$c" ] || continue
  read -r p f < "$c"
  dist_passed=$((dist_passed + p)) dist_failed=$((dist_failed + f)) runs=$((runs + 1))
done
if [ "$runs" -ne ${#pythons[@]} ]; then
  echo "FAIL only $runs of ${#pythons[@]} interpreters finished their checks"
  dist_failed=$((dist_failed + 1))
fi

finish "dist wheel"
