#!/usr/bin/env bash
# `make fuzz`: seed the corpora, build every target with cargo-fuzz on the
# stable toolchain (RUSTC_BOOTSTRAP=1 lets stable rustc take -Zsanitizer),
# run each for FUZZ_SECONDS, and print per target the executions, exec/s,
# corpus size and any crash, ending with "fuzz: N passed, N failed".
#
# Environment (mk/fuzz.mk sets them):
#   CARGO_FUZZ        the cargo-fuzz binary
#   FUZZ_TARGET_DIR   its own target dir (never the main one: other flags)
#   FUZZ_SECONDS      seconds per target (default 300)
#   FUZZ_TARGETS      which targets (default: all of them)
#   FUZZ_LOG_DIR      where each run's libFuzzer log goes
#
# Each target runs on corpus/<target> (grown here, ignored by git) and the
# committed regressions/<target> (which make test replays; README.md).
set -uo pipefail
cd "$(dirname "$0")"

CARGO=${CARGO:-cargo}
CARGO_FUZZ=${CARGO_FUZZ:-cargo-fuzz}
FUZZ_TARGET_DIR=${FUZZ_TARGET_DIR:?set FUZZ_TARGET_DIR}
FUZZ_SECONDS=${FUZZ_SECONDS:-300}
FUZZ_TARGETS=${FUZZ_TARGETS:-record_decoder key_decoder payload_decoder format_marker config_parser}
FUZZ_LOG_DIR=${FUZZ_LOG_DIR:-$FUZZ_TARGET_DIR/logs}
export RUSTC_BOOTSTRAP=1
# cargo-fuzz must not inherit the main build's target dir.
unset CARGO_TARGET_DIR

# The longest input libFuzzer makes, per target.
max_len() {
    case $1 in
        record_decoder | payload_decoder) echo 8192 ;;
        config_parser) echo 4096 ;;
        *) echo 1024 ;;
    esac
}

mkdir -p "$FUZZ_LOG_DIR" corpus artifacts
echo "== seeds (fuzz/examples/seeds.rs)"
"$CARGO" run --release --quiet --example seeds --target-dir "$FUZZ_TARGET_DIR" -- corpus || exit 1
echo "== build (cargo-fuzz $("$CARGO_FUZZ" --version | awk '{print $2}'), address sanitizer, debug assertions)"
"$CARGO_FUZZ" fuzz build --target-dir "$FUZZ_TARGET_DIR" || exit 1

passed=0
failed=0
report=()
for t in $FUZZ_TARGETS; do
    log=$FUZZ_LOG_DIR/$t.log
    mkdir -p "artifacts/$t"
    before=$(ls "artifacts/$t" | wc -l)
    echo "== $t: ${FUZZ_SECONDS}s, max_len $(max_len "$t"), log $log"
    start=$(date +%s)
    # New inputs go to corpus/$t (the first directory); the committed
    # regressions/$t seed the run too.
    seeds=()
    [ -d "regressions/$t" ] && seeds=("regressions/$t")
    "$CARGO_FUZZ" fuzz run --target-dir "$FUZZ_TARGET_DIR" "$t" "corpus/$t" "${seeds[@]}" -- \
        -max_total_time="$FUZZ_SECONDS" -max_len="$(max_len "$t")" -timeout=10 \
        -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    files=$(ls "corpus/$t" | wc -l)
    crash=$(sed -n 's/.*Test unit written to \(.*\)/\1/p' "$log" | tail -1)
    line="$t: ${execs:-?} executions, ${rate:-?} exec/s, corpus ${files} inputs (cov ${cov:-?}), ${secs}s"
    if [ "$rc" -eq 0 ] && [ -z "$crash" ]; then
        passed=$((passed + 1))
        line="$line, no crash"
    else
        failed=$((failed + 1))
        line="$line, FAILED (exit $rc): ${crash:-see $log}"
        grep -m1 -A1 -E "panicked at|ERROR: (AddressSanitizer|libFuzzer)" "$log" | sed 's/^/    /'
    fi
    echo "$line"
    report+=("$line")
    after=$(ls "artifacts/$t" | wc -l)
    [ "$after" -gt "$before" ] && echo "    new artifacts in fuzz/artifacts/$t/: $((after - before))"
done

echo "== summary (${FUZZ_SECONDS}s per target)"
printf '%s\n' "${report[@]}"
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
