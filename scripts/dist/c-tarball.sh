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
#   c-tarball.sh OUT_DIR VERSION ABI NEEDS_JSON
#
# Run by mk/dist.mk (it passes MAKE and the install-c variables). The
# archive is reproducible: sorted names, owner 0, the last commit's time.
set -euo pipefail
out=$1 version=$2 abi=$3 needs=$4
arch=$(uname -m)
name="telha-jobs-$version-$arch-linux-gnu"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/$name"

"${MAKE:-make}" -s --no-print-directory install-c PREFIX=/ DESTDIR="$root" >/dev/null
# install-c wrote prefix=/; a tarball is unpacked anywhere.
sed -i 's|^prefix=.*|prefix=${pcfiledir}/../..|' "$root/lib/pkgconfig/telha_jobs.pc"

field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$needs" "$1"; }
glibc=$(field glibc)
glibcxx=$(field glibcxx)
sed -e "s|@VERSION@|$version|g" -e "s|@ABI@|$abi|g" -e "s|@ARCH@|$arch|g" \
    -e "s|@NAME@|$name|g" -e "s|@GLIBC@|$glibc|g" -e "s|@GLIBCXX@|$glibcxx|g" \
    "$(dirname "$0")/c-README.md.in" > "$root/README.md"

mtime=$(git log -1 --format=%ct 2>/dev/null || date +%s)
mkdir -p "$out"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" -C "$stage" -cf - "$name" \
  | gzip -n -6 > "$out/$name.tar.gz"
