#!/usr/bin/env bash
# The sdist in dist/ as pip builds it where no wheel fits: a new virtualenv,
# `pip install --no-binary telha-jobs` from dist/ (no index: maturin, the
# only build requirement, is downloaded from PyPI into a local directory
# first), which compiles everything, RocksDB's C++ included (~40 min on 2
# cores), into $CARGO_TARGET_DIR (mk/dist.mk gives it a directory of its
# own). Then import it and run the README's Python example.
#
#   test_sdist.sh DIST VERSION README PYTHON
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
dist=$(cd "$1" && pwd) version=$2 readme=$(cd "$(dirname "$3")" && pwd)/$(basename "$3") py=$4
: "${CARGO_TARGET_DIR:?set CARGO_TARGET_DIR to a directory of its own}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sdist="$dist/telha_jobs-$version.tar.gz"
requires=$(tar -xOzf "$sdist" "telha_jobs-$version/pyproject.toml" | python3 -c '
import re, sys
print(" ".join(re.findall(r"\"([^\"]+)\"", re.search(r"requires\s*=\s*\[([^]]*)\]", sys.stdin.read()).group(1))))')
echo "== $(basename "$sdist"): build requires $requires; CARGO_TARGET_DIR=$CARGO_TARGET_DIR"

"$py" -m venv "$tmp/venv"
vpy="$tmp/venv/bin/python"
# shellcheck disable=SC2086
check "pip download the build requirements ($requires) from PyPI" \
  "$vpy" -m pip download -q -d "$tmp/wheelhouse" $requires

start=$(date +%s)
check "pip install --no-binary telha-jobs: the sdist built from source" \
  env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null "$vpy" -m pip install -v --no-index \
    --find-links "$dist" --find-links "$tmp/wheelhouse" --no-binary telha-jobs telha-jobs
echo "   (the build took $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s)"

check "import telha_jobs (built from the sdist, __version__ $version)" "$vpy" - <<EOF
import importlib.metadata as md, telha_jobs
assert telha_jobs.__version__ == "$version", telha_jobs.__version__
wheel = md.distribution("telha-jobs").read_text("WHEEL")
assert "Generator: maturin" in wheel, wheel
print(wheel)
EOF

{
  printf 'def parse(doc: str) -> int:\n    return 12\n\n\n'
  readme_block "$readme" '## Python' python
  printf '\nwith telha_jobs.Queue("./telha-data") as check:\n'
  printf '    assert check.stats()["total"]["completed"] == 1\n'
  printf 'print("README example: 1 job completed")\n'
} > "$tmp/readme_example.py"
mkdir "$tmp/work"
check "the README's Python example on the sdist build" \
  bash -c 'cd "$1" && "$2" "$3" | grep -x "README example: 1 job completed"' _ "$tmp/work" "$vpy" "$tmp/readme_example.py"

finish "dist sdist"
