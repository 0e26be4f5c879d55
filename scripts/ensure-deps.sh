#!/usr/bin/env bash
# Install what a fresh Debian machine with only Rust, Python 3.11, Node 20 and
# gcc lacks for the build. Idempotent and quiet when everything is there.
set -euo pipefail

need_apt=()
# bindgen (librocksdb-sys) loads libclang at build time.
if ! ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1; then
  need_apt+=(libclang-dev)
fi
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v make >/dev/null 2>&1 || need_apt+=(make)

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "ensure-deps: installing ${need_apt[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

for c in clippy rustfmt; do
  if ! cargo "$([ $c = rustfmt ] && echo fmt || echo clippy)" --version >/dev/null 2>&1; then
    rustup component add "$c" >/dev/null 2>&1 || echo "ensure-deps: could not add $c (lint will be skipped)"
  fi
done
