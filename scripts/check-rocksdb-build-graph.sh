#!/usr/bin/env bash
# Does every build still compile RocksDB exactly once? (`make check-vendor`,
# part of `make test`; `--update` rewrites the expected list.)
#
# librocksdb-sys (RocksDB's C++, ~40 min on two cores) keeps its build hash
# only while every package in its dependency graph keeps its version and
# features: its own (lz4-sys, libc, cc) and bindgen's host graph (bindgen,
# cexpr, nom, memchr, minimal-lexical, clang-sys, libloading, glob,
# itertools, either, proc-macro2, quote, syn, unicode-ident, regex,
# regex-automata, regex-syntax, rustc-hash, shlex, bitflags, cc, jobserver,
# ...). Cargo unifies features per build over the packages that build
# selects, so a new dependency anywhere (a crate enabling `memchr/std` or
# `syn/visit` on the host) can change them: then RocksDB is compiled again,
# and, when only some builds see the new crate, compiled twice and again on
# every switch between them (vendor/prost-derive/README.telha is one such
# case).
#
# For each build the Makefile runs, this lists librocksdb-sys's whole graph
# (`cargo tree`, normal and build edges, no dedupe; nothing is compiled) as
# "name version [features]" lines and compares them with the committed
# scripts/rocksdb-build-graph.txt. It fails naming the build and the lines
# that changed. When a change is intended (a rocksdb or bindgen upgrade),
# run with --update, commit the list, and expect one cold RocksDB build.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
expected=scripts/rocksdb-build-graph.txt

# The builds the Makefile runs, each its own feature resolution.
builds=(
  "make build, test-core|"
  "lint (clippy --workspace)|--workspace"
  "bench-core, demo-rust, doc, BENCH_REF|-p telha-jobs"
  "c-lib (libtelha_jobs)|-p telha-jobs-ffi"
  "py-wheel (maturin)|-p telha-jobs-py"
  "node-build (napi)|-p telha-jobs-node"
  "bench-cluster|-p telha-jobs-cluster"
  "test-cluster-failpoints, test-cluster-long|-p telha-jobs-cluster --features failpoints"
  "test-otel (the core's otel feature)|-p telha-jobs-otel-tests"
  "clippy of the core with otel|-p telha-jobs --features otel"
)

# librocksdb-sys and everything below it in one build's graph, sorted.
graph() { # package selection
  local out
  # shellcheck disable=SC2086
  out=$($CARGO tree --locked -q $1 -e normal,build -f '{p} [{f}]' --no-dedupe --prefix depth 2>&1) ||
    { echo "cargo tree failed ($1):" >&2; echo "$out" >&2; return 1; }
  echo "$out" | awk '
    match($0, /^[0-9]+/) {
      d = substr($0, 1, RLENGTH) + 0; rest = substr($0, RLENGTH + 1)
      if (inside && d <= root) inside = 0
      if (!inside && rest ~ /^librocksdb-sys /) { inside = 1; root = d }
      if (inside) print rest
    }' | LC_ALL=C sort -u
}

if [ "${1:-}" = "--update" ]; then
  graph "" > "$expected"
  echo "wrote $expected ($(wc -l < "$expected") packages); commit it"
  exit 0
fi

passed=0 failed=0
for b in "${builds[@]}"; do
  name=${b%%|*} sel=${b#*|}
  got=$(graph "$sel")
  if [ -z "$got" ]; then
    echo "FAILED: $name: librocksdb-sys not found in its graph (cargo tree $sel)"
    failed=$((failed + 1))
  elif diff=$(diff <(LC_ALL=C sort -u "$expected") <(echo "$got")); then
    passed=$((passed + 1))
  else
    echo "FAILED: $name (cargo tree $sel): RocksDB's build graph differs from $expected," \
      "so librocksdb-sys would be compiled again (~40 min). Changed (- expected, + now):"
    echo "$diff" | sed -n 's/^</  -/p; s/^>/  +/p'
    echo "  Find who enables a feature: cargo tree $sel -e features -i <package>;" \
      "if the change is intended, run $0 --update and commit the list."
    failed=$((failed + 1))
  fi
done
echo "check-rocksdb-build-graph: $passed passed, $failed failed ($(wc -l < "$expected") packages in each of ${#builds[@]} builds)"
[ "$failed" -eq 0 ]
