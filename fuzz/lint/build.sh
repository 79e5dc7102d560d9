#!/usr/bin/env bash
# Builds the libFuzzer harness with clang (needs Debian's clang-14 and libclang-rt-14-dev,
# and tools/lint/node_modules from `npm ci --ignore-scripts`). Output: fuzz/lint/build/fuzz_lint
# (FUZZ_OUT: another folder). FUZZ_SANITIZE picks the sanitizers (default address,undefined;
# undefined alone runs several times faster); FUZZ_LDFLAGS adds link flags, e.g.
# "-static-libstdc++ -static-libgcc" to run the fuzzer on another machine with more cores.
set -eu
FUZZ_LDFLAGS=${FUZZ_LDFLAGS:-}
here=$(cd "$(dirname "$0")" && pwd)
lint=$here/../../tools/lint
nm=$lint/node_modules
out=${FUZZ_OUT:-$here/build}
mkdir -p "$out"
CC=${CC:-clang}
san=${FUZZ_SANITIZE-address,undefined}
ts_inc="-I$nm/tree-sitter/vendor/tree-sitter/lib/include"
# The generated parser is tables: no instrumentation there keeps the fuzzer fast.
[ "$out/parser.o" -nt "$nm/tree-sitter-cuda/src/parser.c" ] ||
  $CC -O1 -w -c "$nm/tree-sitter-cuda/src/parser.c" -I"$nm/tree-sitter-cuda/src" -o "$out/parser.o"
# The tree-sitter runtime is fuzzed upstream (OSS-Fuzz); instrumenting it here would spend
# most of each run in the parser's table lookups, so it gets neither coverage nor sanitizers
# unless FUZZ_RUNTIME_SANITIZE says so. The lint code gets both.
rsan=${FUZZ_RUNTIME_SANITIZE:-}
$CC -O2 -g -w -D_DEFAULT_SOURCE ${rsan:+-fsanitize=$rsan} -c \
  "$nm/tree-sitter/vendor/tree-sitter/lib/src/lib.c" -I"$nm/tree-sitter/vendor/tree-sitter/lib/src" \
  $ts_inc -o "$out/lib.o"
$CC -O2 -g -w ${rsan:+-fsanitize=$rsan} -c "$nm/tree-sitter-cuda/src/scanner.c" \
  -I"$nm/tree-sitter-cuda/src" -o "$out/scanner.o"
srcs="analyze.c ast.c config.c files.c output.c rules_memory.c rules_check.c rules_vector.c"
objs=""
for s in $srcs; do
  $CC -std=c11 -O1 -g -Wall -Wextra -fsanitize=fuzzer-no-link${san:+,$san} -fno-sanitize-recover=all -I"$lint" $ts_inc \
    $(pkg-config --cflags jansson) -c "$lint/$s" -o "$out/${s%.c}.o"
  objs="$objs $out/${s%.c}.o"
done
$CC -std=c11 -O1 -g -Wall -Wextra -fsanitize=fuzzer${san:+,$san} -fno-sanitize-recover=all -I"$lint" $ts_inc \
  "$here/fuzz_lint.c" $objs "$out/lib.o" "$out/scanner.o" "$out/parser.o" \
  $(pkg-config --libs jansson) -lpthread $FUZZ_LDFLAGS \
  -o "$out/fuzz_lint"
echo "built $out/fuzz_lint"
