#!/usr/bin/env bash
# Is vendor/prost-derive still needed? (`make check-vendor`, part of `make test`.)
#
# The vendored copy differs from prost-derive 0.14.6 on crates.io only in
# taking itertools without default features (vendor/prost-derive/README.telha).
# With upstream's defaults, itertools' `use_std` turns on `either/use_std` on
# the host (build scripts and proc macros), where bindgen, librocksdb-sys's
# build dependency, uses the same `either` through itertools. Cargo unifies
# features per build, over the packages that build selects: a build that has
# prost-derive in its graph (the workspace, the wheel, the Node addon) and one
# that has not (`-p telha-jobs`, `-p telha-jobs-ffi`) then give bindgen
# different dependency hashes, so librocksdb-sys gets a second build hash and
# RocksDB's C++ (~40 min on two cores) is compiled a second time.
#
# This resolves the workspace twice with `cargo tree` (nothing is compiled,
# no target directory is touched): as it is, and as a scratch copy without
# the [patch.crates-io] section (upstream prost-derive). For each build the
# Makefile runs it prints the features `either` gets. The patch is needed
# while upstream gives different builds different features and the patched
# workspace gives them all the same. It ends with "N passed, N failed" and
# exits non-zero when either check fails; the message says what to do.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
CARGO=${CARGO:-cargo}

# The builds the Makefile runs, each its own feature resolution.
builds=(
  "make build, test-core|"
  "bench-core, demo-rust, doc, BENCH_REF|-p telha-jobs"
  "c-lib (libtelha_jobs)|-p telha-jobs-ffi"
  "py-wheel (maturin)|-p telha-jobs-py"
  "node-build (napi)|-p telha-jobs-node"
)

# Every `either` node of one build's graph with its features, one line.
either_features() { # dir, extra cargo flags, package selection
  local dir=$1 flags=$2 sel=$3 out
  # shellcheck disable=SC2086
  out=$(cd "$dir" && $CARGO tree $flags $sel -q -i either -e normal,build \
    -f '{p} [{f}]' --depth 0 2>&1) || { echo "cargo tree failed in $dir ($sel):" >&2; echo "$out" >&2; return 1; }
  echo "$out" | sed -n 's/^either v[^ ]* //p' | sort -u | paste -sd' ' -
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ws=$tmp/ws
mkdir "$ws"
# A copy of the checkout's files (tracked and new, not ignored), then the
# manifest without its [patch.crates-io] section (up to the next blank line).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$ws"
else
  tar --exclude=./target --exclude=./node/node_modules --exclude=./.git -cf - . | tar -xf - -C "$ws"
fi
awk '/^\[patch\.crates-io\]/ {skip = 1; next} skip && /^[[:space:]]*$/ {skip = 0} !skip' \
  Cargo.toml > "$ws/Cargo.toml"
entry='^prost-derive *= *\{ *path *= *"vendor/prost-derive"'
if grep -Eq "$entry" "$ws/Cargo.toml" || ! grep -Eq "$entry" Cargo.toml; then
  echo "check-vendor: Cargo.toml's [patch.crates-io] prost-derive entry not found as expected" >&2
  exit 1
fi
# The scratch copy needs prost-derive from the registry: offline when it is
# already in cargo's cache, else fetched (a small download, no build).
scratch_flags=--offline
if ! (cd "$ws" && $CARGO tree --offline -q -p prost-derive --depth 0 >/dev/null 2>&1); then
  scratch_flags=
fi

printf '%-40s %-18s %s\n' "build" "with the patch" "upstream prost-derive"
patched_all=() upstream_all=()
for b in "${builds[@]}"; do
  name=${b%%|*} sel=${b#*|}
  p=$(either_features "$root" --locked "$sel")
  u=$(either_features "$ws" "$scratch_flags" "$sel")
  printf '%-40s %-18s %s\n' "$name" "$p" "$u"
  patched_all+=("$p") upstream_all+=("$u")
done

distinct() { printf '%s\n' "$@" | sort -u | wc -l; }
passed=0 failed=0
if [ "$(distinct "${patched_all[@]}")" -eq 1 ]; then
  echo "ok: with the patch every build resolves either the same way (one bindgen, one RocksDB build)"
  passed=$((passed + 1))
else
  echo "FAILED: with the patch the builds resolve either differently: the vendoring no longer" \
    "keeps RocksDB's build hash stable; see which crate now enables either's features:" \
    "cargo tree -e features -i either"
  failed=$((failed + 1))
fi
if [ "$(distinct "${upstream_all[@]}")" -gt 1 ]; then
  echo "ok: upstream prost-derive would give either different features in different builds," \
    "so the patch is still needed"
  passed=$((passed + 1))
else
  echo "FAILED: upstream prost-derive resolves either the same way in every build: the patch" \
    "is no longer needed. Remove vendor/prost-derive and the [patch.crates-io] entry, then" \
    "run \`cargo build --release -v 2>&1 | grep librocksdb-sys\`: it stays 'Fresh' when" \
    "upstream's features (right column) equal the patched ones (left column); otherwise" \
    "RocksDB is compiled once more, for good."
  failed=$((failed + 1))
fi
echo "check-vendor: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
