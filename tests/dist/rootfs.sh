#!/usr/bin/env bash
# An old Debian root file system for the install tests of `make
# test-dist-all` (issue 47), made once with debootstrap and kept:
#
#   rootfs.sh SUITE ARCH DIR
#
# SUITE is the oldest Debian release deb.debian.org still serves (bullseye:
# glibc 2.31, CPython 3.9; older ones moved to archive.debian.org, which is
# not reachable from these machines). ARCH other than the host's (arm64) is
# made with --foreign and finished under qemu-user-static. What it holds:
# python3 with venv (the wheel's README example), gcc (the C example),
# nothing of the host's. DIR/.ready marks a finished one; a failed run
# leaves no marker and is made again from scratch.
set -euo pipefail
suite=$1 arch=$2 dir=$3
[ -f "$dir/.ready" ] && exit 0
need() { command -v "$1" >/dev/null 2>&1 || { SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo;
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$2" >/dev/null; }; }
need debootstrap debootstrap
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
include=python3,python3-venv,gcc,libc6-dev,ca-certificates
if [ "$arch" = "$(dpkg --print-architecture)" ]; then
  debootstrap --variant=minbase --arch="$arch" --include="$include" "$suite" "$dir" http://deb.debian.org/debian
else
  need qemu-aarch64-static qemu-user-static
  debootstrap --foreign --variant=minbase --arch="$arch" --include="$include" "$suite" "$dir" http://deb.debian.org/debian
  cp "$(command -v qemu-aarch64-static)" "$dir/usr/bin/"
  chroot "$dir" /usr/bin/qemu-aarch64-static /bin/sh /debootstrap/debootstrap --second-stage
fi
chroot "$dir" sh -c 'ldd --version | head -n 1; python3 -V'
touch "$dir/.ready"
