#!/usr/bin/env bash
# An old Debian root file system for the install tests of `make
# test-dist-all` (issue 47), made once with debootstrap and kept:
#
#   rootfs.sh SUITE ARCH DIR [INCLUDE]
#
# SUITE is the oldest Debian release deb.debian.org still serves (bullseye:
# glibc 2.31, CPython 3.9; older ones moved to archive.debian.org, which is
# not reachable from these machines). What it holds: python3 with venv (the
# wheel's README example), gcc (the C example), nothing of the host's;
# INCLUDE (a comma list of packages) replaces that list.
#
# ARCH other than the host's (arm64) runs under qemu-user-static, without
# binfmt_misc (not mounted in these containers, and a kernel-wide setting):
# qemu runs one program and cannot follow its exec of another, so
# debootstrap's second stage (dpkg and the maintainer scripts) cannot run.
# Its first stage (--foreign) downloads every package; each one is unpacked
# here (dpkg-deb -x), /usr/bin/qemu-aarch64-static copied in, and ldconfig
# run through it. No maintainer script runs: what the tests use (python3,
# its standard library, libc, nodejs) needs none. DIR/.ready marks a
# finished one; a failed run leaves no marker and is made again from
# scratch.
set -euo pipefail
suite=$1 arch=$2 dir=$3 include=${4:-python3,python3-venv,gcc,libc6-dev,ca-certificates}
[ -f "$dir/.ready" ] && exit 0
need() { command -v "$1" >/dev/null 2>&1 || { SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo;
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$2" >/dev/null; }; }
need debootstrap debootstrap
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
if [ "$arch" = "$(dpkg --print-architecture)" ]; then
  debootstrap --variant=minbase --arch="$arch" --include="$include" "$suite" "$dir" http://deb.debian.org/debian
elif [ "$arch" = arm64 ]; then
  need qemu-aarch64-static qemu-user-static
  debootstrap --foreign --variant=minbase --arch="$arch" --include="$include" "$suite" "$dir" http://deb.debian.org/debian
  for deb in "$dir"/var/cache/apt/archives/*.deb; do dpkg-deb -x "$deb" "$dir"; done
  rm -rf "$dir/debootstrap" "$dir"/var/cache/apt/archives/*.deb
  cp "$(command -v qemu-aarch64-static)" "$dir/usr/bin/"
  chroot "$dir" /usr/bin/qemu-aarch64-static /sbin/ldconfig
  chroot "$dir" /usr/bin/qemu-aarch64-static /lib/aarch64-linux-gnu/libc.so.6 | head -n 1
  [ ! -x "$dir/usr/bin/python3" ] || chroot "$dir" /usr/bin/qemu-aarch64-static /usr/bin/python3 -V
else
  echo "rootfs.sh: no way to run ARCH $arch here (amd64 and arm64 only)" >&2
  exit 1
fi
[ "$arch" != "$(dpkg --print-architecture)" ] || chroot "$dir" sh -c 'ldd --version | head -n 1; python3 -V'
touch "$dir/.ready"
