#!/usr/bin/env bash
# The cross-language round trip on one store, in sequence (each step its own
# process, so each opens the store after the previous one has released it):
#   1. Node enqueues plain-object payloads       (enqueue.js)
#   2. Python leases and completes half          (complete_half.py)
#   3. C leases and fails the rest               (fail_rest, built from fail_rest.c)
#   4. Python and the CLI read everything back   (verify.py: telha jobs ls/show --json)
#   5. Node reads everything back                (verify.js)
# Ends with "N passed, N failed" over the five steps.
#
#   tests/roundtrip/run.sh PYTHON FAIL_REST_BIN TELHA_BIN
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=$1 c_bin=$2 telha=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
store=$tmp/store manifest=$tmp/manifest.json
passed=0 failed=0
step() {
  local name=$1; shift
  echo "== roundtrip: $name"
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}
step "node enqueues" node "$here/enqueue.js" "$store" "$manifest"
[ $failed -eq 0 ] && step "python completes half" "$py" "$here/complete_half.py" "$store" "$manifest"
[ $failed -eq 0 ] && step "c fails the rest" "$c_bin" "$store" "$manifest"
[ $failed -eq 0 ] && step "python and the cli read back" "$py" "$here/verify.py" "$store" "$manifest" "$telha"
[ $failed -eq 0 ] && step "node reads back" node "$here/verify.js" "$store" "$manifest"
# A step that did not run because an earlier one failed counts as failed.
failed=$((5 - passed))
echo "roundtrip: $passed of 5 steps passed on one store"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
