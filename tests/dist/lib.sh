# Shared by the tests of the release artifacts (tests/dist/*.sh), sourced.
#
#   check NAME CMD ARGS...   runs CMD; "ok NAME (T s)" or "FAIL NAME (T s)" and its output
#   finish LABEL             prints "LABEL: N passed, N failed"; exit status 1 on a failure
#
# A check's output is shown only when it fails. Checks run in order and each
# stands alone: a failed install fails the checks after it too, by itself.

dist_passed=0
dist_failed=0

check() {
  local name=$1 out start=$SECONDS
  shift
  if out=$("$@" 2>&1); then
    dist_passed=$((dist_passed + 1))
    echo "ok   $name ($((SECONDS - start)) s)"
  else
    dist_failed=$((dist_failed + 1))
    echo "FAIL $name ($((SECONDS - start)) s)"
    printf '%s\n' "$out" | tail -n 40 | sed 's/^/     /'
  fi
}

finish() {
  echo "$1: $dist_passed passed, $dist_failed failed"
  [ "$dist_failed" -eq 0 ]
}

# The first fenced block of LANG under the heading HEADING of README.md (up
# to the next heading of the same or a higher level).
readme_block() { python3 "$(dirname "${BASH_SOURCE[0]}")/readme_block.py" "$@"; }
