#!/usr/bin/env bash
# The `telha` release tarball (issue 47):
#
#   telha-<version>-<arch>-linux-<libc>/
#     telha         the binary (as built: release profile)
#     telha.txt     every command's --help, man-style (scripts/dist/cli_help.py)
#     LICENSE       the repository's
#     README.md     what it is and needs (scripts/dist/cli-README.md.in)
#
#   cli-tarball.sh OUT_DIR VERSION BIN ARCH LIBC NEEDS_JSON [HELP_BIN]
#
# NEEDS_JSON is scripts/dist/elf_needs.py's report on BIN. HELP_BIN is a
# binary of the same version this machine can run (the host build, when BIN
# is cross-compiled): the help text is the same on every target. Reproducible
# as the C tarball: sorted names, owner 0, the last commit's time.
set -euo pipefail
out=$1 version=$2 bin=$3 arch=$4 libc=$5 needs=$6 help_bin=${7:-$3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
name="telha-$version-$arch-linux-$libc"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
dir="$stage/$name"
mkdir -p "$dir"

got=$("$help_bin" --version)
[ "$got" = "telha $version" ] || { echo "cli-tarball.sh: $help_bin --version says '$got', want 'telha $version'" >&2; exit 1; }
install -m 755 "$bin" "$dir/telha"
python3 "$here/cli_help.py" "$help_bin" > "$dir/telha.txt"
cp "$root/LICENSE" "$dir/LICENSE"

field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")' "$needs" "$1"; }
glibc=$(field glibc)
glibcxx=$(field glibcxx)
if [ "$libc" = gnu ]; then
  needs_text="glibc $glibc or newer"
  [ -n "$glibcxx" ] && needs_text="$needs_text and libstdc++ with \`GLIBCXX_$glibcxx\`"
  libc_text=glibc
else
  needs_text="nothing else (statically linked)"
  libc_text=$libc
fi
sed -e "s|@VERSION@|$version|g" -e "s|@ARCH@|$arch|g" -e "s|@LIBC@|$libc_text|g" \
    -e "s|@NAME@|$name|g" -e "s|@NEEDS@|$needs_text|g" \
    "$here/cli-README.md.in" > "$dir/README.md"

mtime=$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)
mkdir -p "$out"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$mtime" -C "$stage" -cf - "$name" \
  | gzip -n -6 > "$out/$name.tar.gz"
