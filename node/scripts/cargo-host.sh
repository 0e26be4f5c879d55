#!/usr/bin/env bash
# Cargo as `napi build` should call it here (napi build runs "$CARGO").
#
# @napi-rs/cli 3 always passes `--target <triple>`, even for the host. With
# an explicit --target cargo builds into $CARGO_TARGET_DIR/<triple>/ and
# compiles librocksdb-sys (~40 min of C++) a second time. This wrapper drops
# `--target` when it names the host, so the addon is built exactly like
# every other crate of the workspace (release profile, no --target, the one
# target dir), then points <triple>/release at release/ so napi finds the
# artifact where it looks for it. Any other target is passed through.
set -euo pipefail
real_cargo=${TELHA_REAL_CARGO:-cargo}
host=$(rustc -vV | sed -n 's/^host: //p')
args=()
dropped=""
while (($#)); do
  case "$1" in
    --target)
      if [[ "${2:-}" == "$host" ]]; then dropped=$2; shift 2; continue; fi ;;
    --target=*)
      if [[ "${1#--target=}" == "$host" ]]; then dropped=${1#--target=}; shift; continue; fi ;;
  esac
  args+=("$1")
  shift
done
"$real_cargo" "${args[@]}"
if [[ -n "$dropped" && "${args[0]:-}" == "build" ]]; then
  dir=${CARGO_TARGET_DIR:?CARGO_TARGET_DIR must be set}
  mkdir -p "$dir/$dropped"
  ln -sfn ../release "$dir/$dropped/release"
fi
