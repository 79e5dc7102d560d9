#!/bin/sh
# End-to-end: `gpumem lint` with gpumem's own analyzer plugin on tests/lint/corpus: every unit
# analyzed, every rule found at least once, with its allocation site where it has one, in the
# text and SARIF outputs. Usage: plugin_e2e.sh GPUMEM_LINT CLANG PLUGIN CORPUS INCLUDE_DIR
set -u
lint=$1 clang=$2 plugin=$3 corpus=$4 inc=$5
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$corpus" || exit 1
fail=0
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" -j2 . -- -I"$inc" \
  >"$out/text" 2>"$out/err"
rc=$?
[ "$rc" -eq 1 ] || { echo "FAIL: exit status $rc, expected 1"; head -c 3000 "$out/err"; fail=1; }
if grep -q "not analyzed" "$out/err"; then echo "FAIL: units not analyzed:"; grep "not analyzed" "$out/err"; fail=1; fi
for n in 01 02 03 04 05 06 07 08 09 10 11; do
  grep -q "\[GM0$n\]\$" "$out/text" || { echo "FAIL: no GM0$n finding"; fail=1; }
done
grep -q "note: allocated here with " "$out/text" || { echo "FAIL: no allocation note"; fail=1; }
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" -j2 --format=sarif . -- -I"$inc" \
  >"$out/sarif" 2>/dev/null
for key in '"relatedLocations"' '"codeFlows"' '"gpumemLintHash/v2"' '"clang/issueHash/v1"'; do
  grep -q "$key" "$out/sarif" || { echo "FAIL: no $key in the SARIF report"; fail=1; }
done
# The path starts at the allocation and stays in the user's code: no branch before it
# ("Assuming 'argc' ..."), no step inside cuda_runtime.h's wrappers.
cat > "$out/notes.cu" <<'EOF2'
#include <cuda_runtime.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1024;
  float *d;
  if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess)
    return 1;
  if (cudaMemset(d, 0, n * sizeof(float)) != cudaSuccess)
    return 1;
  return 0;
}
EOF2
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" --path=full "$out/notes.cu" \
  >"$out/notes" 2>/dev/null
grep -q "allocated here with cudaMalloc" "$out/notes" || { echo "FAIL: no allocation note"; cat "$out/notes"; fail=1; }
if grep -q "argc\|cuda_runtime.h" "$out/notes"; then
  echo "FAIL: path steps before the allocation or in CUDA's headers:"; cat "$out/notes"; fail=1
fi
# Units clang refused and nvcc compiles: a __shared__ variable with an initializer, and an
# MPI program where MPI is not installed (gpumem lint's own mpi.h then stands in).
cat > "$out/nvcc_accepts.cu" <<'EOF2'
#include <mpi.h>
#include <cuda_runtime.h>
__global__ void count(int *out) {
  __shared__ int seen = 0;
  out[0] = seen;
}
int main(int argc, char **argv) {
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int *d;
  if (cudaMalloc(&d, sizeof(int)) != cudaSuccess)
    return 1;
  count<<<1, 1>>>(d);
  MPI_Finalize();
  return 0;
}
EOF2
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" "$out/nvcc_accepts.cu" \
  >"$out/accepts" 2>"$out/accepts.err"
if grep -q "not analyzed" "$out/accepts.err"; then
  echo "FAIL: a unit nvcc compiles was not analyzed:"; cat "$out/accepts.err"; fail=1
fi
grep -q "memory allocated with cudaMalloc is never released" "$out/accepts" ||
  { echo "FAIL: no GM001 in the MPI program:"; cat "$out/accepts"; fail=1; }
[ "$fail" -eq 0 ] && echo "plugin end-to-end: 1 passed, 0 failed"
exit "$fail"
