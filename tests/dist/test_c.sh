#!/usr/bin/env bash
# The C tarball in dist/ as a user gets it: unpacked under a temporary
# prefix, the README's C example built with pkg-config against it (shared,
# with the rpath the tarball's README shows, and static) and run in a
# temporary directory; the version and the glibc needs it states checked
# against the library itself.
#
#   test_c.sh DIST VERSION ABI README
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
dist=$(cd "$1" && pwd) version=$2 abi=$3 readme=$(cd "$(dirname "$4")" && pwd)/$(basename "$4")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tarball=$(ls "$dist"/telha-jobs-"$version"-*-linux-gnu.tar.gz 2>/dev/null | head -n 1)
name=$(basename "$tarball" .tar.gz)
prefix="$tmp/opt/$name"
mkdir -p "$tmp/opt" "$tmp/run-shared" "$tmp/run-static"
echo "== $(basename "$tarball") unpacked under $tmp/opt"

check "the tarball unpacks into one directory with the release layout" bash -c '
  tar -xzf "$1" -C "$2" && [ "$(ls "$2")" = "$3" ] || exit 1
  cd "$2/$3" && find . \( -type f -o -type l \) | sort > "$4/got"
  printf "%s\n" ./README.md ./include/telha_jobs.h ./lib/libtelha_jobs.a ./lib/libtelha_jobs.so \
    ./lib/libtelha_jobs.so.$5 ./lib/libtelha_jobs.so.$6 ./lib/pkgconfig/telha_jobs.pc | sort > "$4/want"
  diff "$4/want" "$4/got" &&
  [ "$(readlink lib/libtelha_jobs.so)" = libtelha_jobs.so.$5 ] &&
  [ "$(readlink lib/libtelha_jobs.so.$5)" = libtelha_jobs.so.$6 ] &&
  readelf -d lib/libtelha_jobs.so.$6 | grep -q "SONAME.*\[libtelha_jobs\.so\.$5\]"' \
  _ "$tarball" "$tmp/opt" "$name" "$tmp" "$abi" "$version"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
unset PKG_CONFIG_LIBDIR
check "pkg-config finds it where it was unpacked (relocatable .pc), version $version" bash -c '
  [ "$(pkg-config --modversion telha_jobs)" = "$1" ] &&
  [ "$(realpath "$(pkg-config --variable=libdir telha_jobs)")" = "$(realpath "$2/lib")" ] &&
  [ "$(realpath "$(pkg-config --variable=includedir telha_jobs)")" = "$(realpath "$2/include")" ]' _ "$version" "$prefix"

# The README's C example as the body of main() (as mk/c.mk's test-c-readme),
# plus the versions the library reports.
{
  printf '#include <stdio.h>\n#include <string.h>\n#include <telha_jobs.h>\nint main(void) {\n'
  printf 'if (strcmp(tj_version(), "%s") != 0 || tj_abi_version() != TJ_ABI_VERSION || TJ_ABI_VERSION != %s) {\n' "$version" "$abi"
  printf '    fprintf(stderr, "version %%s, abi %%u\\n", tj_version(), tj_abi_version()); return 2;\n}\n'
  readme_block "$readme" '## C' c
  printf 'return 0;\n}\n'
} > "$tmp/readme.c"

cflags="-std=c11 -Wall -Wextra -Werror"
check "README C example, shared: cc ... \$(pkg-config --cflags --libs telha_jobs) -Wl,-rpath" bash -c '
  cc $1 "$2/readme.c" $(pkg-config --cflags --libs telha_jobs) -Wl,-rpath,"$(pkg-config --variable=libdir telha_jobs)" -o "$2/readme-shared" &&
  readelf -d "$2/readme-shared" | grep -q "NEEDED.*\[libtelha_jobs\.so\.$3\]" &&
  ldd "$2/readme-shared" | grep "libtelha_jobs" | grep -q "$4/lib/" &&
  cd "$2/run-shared" && out=$("$2/readme-shared") && [ -z "$out" ] && [ -d telha-data ]' _ "$cflags" "$tmp" "$abi" "$prefix"
check "README C example, static: cc ... \$(pkg-config --variable=static_libs telha_jobs)" bash -c '
  cc $1 "$2/readme.c" $(pkg-config --cflags telha_jobs) $(pkg-config --variable=static_libs telha_jobs) -o "$2/readme-static" &&
  ! ldd "$2/readme-static" | grep -q libtelha_jobs &&
  cd "$2/run-static" && out=$("$2/readme-static") && [ -z "$out" ] && [ -d telha-data ]' _ "$cflags" "$tmp"
check "the tarball's README states the library's glibc and libstdc++ needs" bash -c '
  needs=$(python3 "$1/scripts/dist/elf_needs.py" "$2/lib/libtelha_jobs.so.$3") || exit 1
  read -r glibc glibcxx < <(printf "%s" "$needs" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d[\"glibc\"], d[\"glibcxx\"])")
  echo "libtelha_jobs.so: glibc $glibc, GLIBCXX_$glibcxx"
  grep -q "glibc $glibc or newer and libstdc++ with" "$2/README.md" && grep -q "GLIBCXX_$glibcxx" "$2/README.md"' \
  _ "$root" "$prefix" "$version"

finish "dist C"
