#!/usr/bin/env bash
# The C release tarball, from what `make install-c` installs:
#
#   telha-jobs-<version>-<arch>-linux-gnu/
#     lib/libtelha_jobs.so.<version>, .so.<abi> -> it, .so -> .so.<abi>
#     lib/libtelha_jobs.a
#     lib/pkgconfig/telha_jobs.pc   (prefix=${pcfiledir}/../..: relocatable)
#     include/telha_jobs.h
#     README.md                     (what it needs: glibc, libstdc++)
#
#   c-tarball.sh OUT_DIR VERSION ABI NEEDS_JSON [ARCH LIB_DIR]
#
# Run by mk/dist.mk (it passes MAKE and the install-c variables). ARCH and
# LIB_DIR (another build's output directory: a cross or zig build) install
# that build's library instead of c-lib's (install-c-files). A library that
# imports no GLIBCXX_ symbol carries its C++ runtime (zig's libc++): its .a
# would need that libc++ at link time, so the tarball leaves it out and its
# README says so. The archive is reproducible: sorted names, owner 0, the
# last commit's time.
set -euo pipefail
out=$1 version=$2 abi=$3 needs=$4 arch=${5:-$(uname -m)} lib_dir=${6:-}
name="telha-jobs-$version-$arch-linux-gnu"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/$name"

if [ -n "$lib_dir" ]; then
  "${MAKE:-make}" -s --no-print-directory install-c-files C_LIB_DIR="$lib_dir" PREFIX=/ DESTDIR="$root" >/dev/null
else
  "${MAKE:-make}" -s --no-print-directory install-c PREFIX=/ DESTDIR="$root" >/dev/null
fi
# install-c wrote prefix=/; a tarball is unpacked anywhere.
sed -i 's|^prefix=.*|prefix=${pcfiledir}/../..|' "$root/lib/pkgconfig/telha_jobs.pc"

field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]] or "")' "$needs" "$1"; }
glibc=$(field glibc)
glibcxx=$(field glibcxx)
if [ -n "$glibcxx" ]; then
  needs_text="glibc $glibc or newer and libstdc++ with \`GLIBCXX_$glibcxx\`"
  keep=S drop=N
else
  needs_text="glibc $glibc or newer (its C++ runtime is linked in)"
  keep=N drop=S
  rm -f "$root/lib/libtelha_jobs.a"
fi
sed -e "/^@$drop@/d" -e "s/^@$keep@//" \
    -e "s|@VERSION@|$version|g" -e "s|@ABI@|$abi|g" -e "s|@ARCH@|$arch|g" \
    -e "s|@NAME@|$name|g" -e "s|@NEEDS@|$needs_text|g" \
    "$(dirname "$0")/c-README.md.in" > "$root/README.md"

mtime=$(git log -1 --format=%ct 2>/dev/null || date +%s)
mkdir -p "$out"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" -C "$stage" -cf - "$name" \
  | gzip -n -6 > "$out/$name.tar.gz"
