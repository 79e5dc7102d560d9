#!/bin/sh
# The copy measurements on a GPU machine, as recorded in docs/perf/: bench_copy with the
# default ring (every path, the fill bound, JSON), probe_hostreg, the GPU copy tests, and
# bench_copy's staged path with other ring shapes. Run from the repository root after a build
# in build/ (BUILD overrides); results go to $OUT (default: ./copy-results).
B=${BUILD:-build}
OUT=${OUT:-copy-results}
mkdir -p "$OUT"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
lscpu > "$OUT/lscpu.txt" 2>&1
timeout 60 "$B/bench/bench_copy" cuda --fill --json "$OUT/bench_copy.json" > "$OUT/bench_copy.txt" 2>&1
timeout 30 "$B/bench/probe_hostreg" > "$OUT/probe_hostreg.txt" 2>&1
(cd "$B" && ctest -L gpu -R copy --output-on-failure --timeout 60) > "$OUT/ctest.txt" 2>&1
for shape in "4 16MiB 8" "4 16MiB 12" "8 8MiB 0" "16 4MiB 0" "8 16MiB 0"; do
  set -- $shape
  GPUMEM_COPY_SLOTS=$1 GPUMEM_COPY_SLOT_BYTES=$2 GPUMEM_COPY_THREADS=$3 \
    timeout 30 "$B/bench/bench_copy" cuda --paths staged --json "$OUT/staged-$1x$2-t$3.json" \
    > "$OUT/staged-$1x$2-t$3.txt" 2>&1
done
echo done
