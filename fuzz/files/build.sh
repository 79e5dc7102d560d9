#!/bin/sh
# Builds the libFuzzer harnesses of the files users hand to gpumem (README.md here) with clang
# 22: fuzz_replay, fuzz_trace and fuzz_supp in fuzz/files/build/ (FUZZ_OUT: another folder).
# The parsers' sources are compiled here, with the fuzzer's coverage; the rest of gpumem comes
# from a build with the same sanitizers (a plain one's library replaces free(), which ASan's
# cannot share), made first if needed:
#   fuzz/files/build.sh [SANBUILD]   (default: build-address-undefined, as
#                                     GPUMEM_SANITIZE=address,undefined scripts/test makes it)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
sb=${1:-$top/build-address-undefined}
out=${FUZZ_OUT:-$here/build}
CC=${CC:-clang-22}
mkdir -p "$out"
if [ ! -f "$sb/CMakeCache.txt" ]; then
  cmake -S "$top" -B "$sb" -DGPUMEM_SANITIZE=address,undefined -DGPUMEM_BUILD_BENCH=OFF \
    -DGPUMEM_BUILD_LINT=OFF > "$out/configure.log"
fi
grep -q '^GPUMEM_SANITIZE:STRING=address,undefined$' "$sb/CMakeCache.txt" ||
  { echo "fuzz/files/build.sh: $sb is not a GPUMEM_SANITIZE=address,undefined build" >&2; exit 1; }
cmake --build "$sb" --target gpumem_static gpumem_cli gpumem_check_engine gpumem_report_core \
  > "$out/deps.log"
lib=$(find "$sb" -name libgpumem.a | head -n 1)
cli=$(find "$sb" -name libgpumem_cli.a | head -n 1)
engine=$(find "$sb" -name libgpumem_check_engine.a | head -n 1)
cuda=$(sed -n 's/^CUDAToolkit_BIN_DIR:PATH=//p' "$sb/CMakeCache.txt" | head -n 1)
flags="-std=c11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
  -I$here -I$top/include -I$sb/src -I$top/src -I$top/tools ${cuda:+-I$cuda/../include}"
libs="$lib -ljansson -lz -ldw -lelf -lunwind -lm -ldl -lpthread"
r=$top/tools/report
$CC $flags -DGPUMEM_HAVE_ZLIB=1 -I"$top/tools/bench" "$here/fuzz_replay.c" \
  "$top/tools/bench/replay_load.c" -lz -o "$out/fuzz_replay"
echo "built $out/fuzz_replay"
$CC $flags -I"$r" "$here/fuzz_trace.c" "$r/report.c" "$r/load.c" "$r/html.c" "$r/merge.c" \
  "$r/report_pools.c" "$r/memviz.c" "$r/pickle.c" "$r/perfetto.c" "$r/protobuf.c" \
  "$sb"/tools/report/timeline_*.c "$cli" $libs -o "$out/fuzz_trace"
echo "built $out/fuzz_trace"
$CC $flags -I"$top/tools/check" "$here/fuzz_supp.c" "$top/tools/check/suppress.c" "$engine" \
  $libs -o "$out/fuzz_supp"
echo "built $out/fuzz_supp"
