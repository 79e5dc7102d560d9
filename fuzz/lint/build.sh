#!/bin/sh
# Builds the libFuzzer harnesses of gpumem lint's parsers with clang 22 (Debian's clang-22
# ships libclang_rt.fuzzer): fuzz_config, fuzz_suppress, fuzz_compdb and fuzz_sarif in
# fuzz/lint/build/ (FUZZ_OUT: another folder). FUZZ_SANITIZE picks the sanitizers (default
# address,undefined). The same harnesses build from CMake with -DGPUMEM_BUILD_FUZZ=ON.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
lint=$here/../../tools/lint
out=${FUZZ_OUT:-$here/build}
CC=${CC:-clang-22}
san=${FUZZ_SANITIZE-address,undefined}
mkdir -p "$out"
# gpumem's version, from the one place that defines it.
version=$(sed -n 's/^#define GPUMEM_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' "$here/../../include/gpumem.h" |
  paste -sd.)
flags="-std=c11 -O1 -g -Wall -Wextra -fno-sanitize-recover=all -I$lint -DLINT_VERSION=\"$version\"
  $(pkg-config --cflags jansson)"
objs=""
for s in base.c config.c files.c flags.c suppress.c sarif_in.c output.c runner.c facts.c; do
  $CC $flags -fsanitize=fuzzer-no-link${san:+,$san} -c "$lint/$s" -o "$out/${s%.c}.o"
  objs="$objs $out/${s%.c}.o"
done
for h in config suppress compdb sarif; do
  $CC $flags -fsanitize=fuzzer${san:+,$san} "$here/fuzz_$h.c" $objs \
    $(pkg-config --libs jansson) -o "$out/fuzz_$h"
  echo "built $out/fuzz_$h"
done
