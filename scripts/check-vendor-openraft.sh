#!/usr/bin/env bash
# Is vendor/openraft still crates.io's openraft 0.9.25 plus our one change?
# (`make check-vendor`, part of `make test`; vendor/openraft/README.telha.)
#
# Takes the published crate (cargo's registry copy when it is there, else
# the .crate from static.crates.io, checked against the checksum Cargo.lock
# had for it), applies vendor/openraft/telha.patch to a scratch copy and
# compares the result with vendor/openraft file by file. Nothing else may
# differ: a re-vendor or an edit of the copy must go through telha.patch.
# Ends with "check-vendor-openraft: N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
version=0.9.25
sha256=a97014fb78acb77be3a40ac2da305f6dd3a6b243f3a908ace87d29b3972eaafd
pass=0
fail=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

upstream=
for d in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/openraft-$version; do
  [ -f "$d/Cargo.toml" ] && upstream=$d && break
done
if [ -z "$upstream" ]; then
  crate=$scratch/openraft-$version.crate
  if ! curl -sSfL --retry 3 -o "$crate" \
    "https://static.crates.io/crates/openraft/openraft-$version.crate"; then
    echo "FAIL: openraft $version is neither in cargo's registry nor downloadable from static.crates.io"
    echo "check-vendor-openraft: 0 passed, 1 failed"
    exit 1
  fi
  got=$(sha256sum "$crate" | cut -d' ' -f1)
  if [ "$got" != "$sha256" ]; then
    echo "FAIL: the downloaded openraft-$version.crate has sha256 $got, crates.io's index says $sha256"
    echo "check-vendor-openraft: 0 passed, 1 failed"
    exit 1
  fi
  tar -xzf "$crate" -C "$scratch"
  upstream=$scratch/openraft-$version
fi

cp -r "$upstream" "$scratch/patched"
if (cd "$scratch/patched" && patch -p1 -s --no-backup-if-mismatch < "$root/vendor/openraft/telha.patch"); then
  echo "ok: vendor/openraft/telha.patch applies to crates.io's openraft $version"
  pass=$((pass + 1))
else
  echo "FAIL: vendor/openraft/telha.patch no longer applies to crates.io's openraft $version"
  fail=$((fail + 1))
fi
# The registry's own files are not vendored; README.telha and telha.patch are ours.
if diff -r -x .cargo-ok -x .cargo_vcs_info.json -x Cargo.lock -x Cargo.toml.orig \
  -x README.telha -x telha.patch "$scratch/patched" "$root/vendor/openraft" > "$scratch/diff"; then
  echo "ok: vendor/openraft is crates.io's openraft $version with telha.patch applied, nothing else"
  pass=$((pass + 1))
else
  echo "FAIL: vendor/openraft differs from crates.io's openraft $version + telha.patch:"
  head -40 "$scratch/diff"
  echo "(edit vendor/openraft only through telha.patch: regenerate it with the command in README.telha)"
  fail=$((fail + 1))
fi
echo "check-vendor-openraft: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
