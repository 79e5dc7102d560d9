#!/usr/bin/env bash
# gpumem's traces of real GPU programs in PyTorch's memory viewer and in Perfetto, on a machine
# with a GPU and PyTorch (the borrowed H200: about 2 minutes). From a fresh copy of the
# repository it builds gpumem (gpumem check and gpumem report; no lint, no tests), then:
#   1. a PyTorch training loop with buffers from the CUDA driver beside it
#      (tests/report/torch_train.py) under `gpumem check --trace`, with PyTorch's own snapshot
#      of the same run; gpumem report --memory-viz; PyTorch's viewer code reads the snapshot
#      (tests/report/memviz_torch.py: the gpu test report_memory_viz_torch);
#   2. a CUDA program (bench/timeline/sample.cu: weights, activations, a 24 GiB workspace, a
#      pinned leak) under `gpumem check --trace`, its snapshot read the same way;
#   3. --perfetto of both, timed.
# $OUT gets (at most 8 files): log.txt (everything printed, the summary table last),
# trace_torch.json, torch_own.pickle (PyTorch's own snapshot), trace_cuda.json, trace_plot.html
# (torch.cuda._memory_viz's page of gpumem's snapshot of the PyTorch run), and MemoryViz.js
# (PyTorch's viewer, from its installed package, for screenshots elsewhere).
# The optional libraries come from .dev/deps (scripts/gpu-deps) when present.
#   usage: bench/views-h200.sh [BUILD_DIR]      (default build-views)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$top/build-views}") # absolute: tests and tools run from other folders
out=${OUT:-$PWD/views-out}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rows=()
row() { rows+=("$(printf '| %-44s | %s |' "$1" "$2")"); }

main() {
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  git -C "$top" rev-parse --short HEAD 2>/dev/null || true
  deps=$top/.dev/deps
  cmake_extra=()
  if [ -d "$deps" ]; then
    export PKG_CONFIG_PATH=$deps/lib/pkgconfig LD_LIBRARY_PATH=$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    cmake_extra=(-DCMAKE_PREFIX_PATH="$deps")
  fi
  t0=$(date +%s)
  cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUMEM_BUILD_LINT=OFF \
    -DGPUMEM_BUILD_TESTS=OFF -DGPUMEM_BUILD_BENCH=OFF "${cmake_extra[@]}" > "$work/cmake.txt" 2>&1 ||
    { tail -20 "$work/cmake.txt"; exit 1; }
  cmake --build "$build" -j"$(nproc)" --target gpumem_tool gpumem_check > "$work/build.txt" 2>&1 ||
    { tail -30 "$work/build.txt"; exit 1; }
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$nvcc" -O2 -g -lineinfo -o "$build/timeline_sample" "$top/bench/timeline/sample.cu" ||
    echo "views-h200: nvcc failed: the CUDA program is left out"
  gpumem=$build/tools/gpumem
  row "build (gpumem, gpumem check)" "$(( $(date +%s) - t0 )) s"
  "$gpumem" report --help > /dev/null 2>&1 || { echo "views-h200: gpumem report was not built (jansson)"; exit 1; }

  echo "== 1. PyTorch: a training loop and cuMemAlloc buffers, under gpumem check"
  t1=$(date +%s)
  "$top/tests/report/memviz_torch_gpu.sh" "$gpumem" "$work/torch" | tee "$work/torch.txt"
  status=${PIPESTATUS[0]}
  case $status in 0) verdict=passed ;; 77) verdict="skipped: no GPU or no PyTorch" ;; *) verdict=FAILED ;; esac
  row "PyTorch run + PyTorch's viewer on the snapshot" \
    "$verdict; $(grep -c '^ok' "$work/torch.txt") checks ok, $(grep -c '^FAIL' "$work/torch.txt") failed; $(( $(date +%s) - t1 )) s"
  grep '^     ' "$work/torch.txt" | head -4

  echo "== 2. A CUDA program, under gpumem check"
  if [ -x "$build/timeline_sample" ]; then
    "$gpumem" check --trace="$work/trace_cuda.json" --log-file="$work/check_cuda.txt" -- \
      "$build/timeline_sample"
    cat "$work/check_cuda.txt"
    : > "$work/cuda.txt"
    "$gpumem" report --memory-viz "$work/trace_cuda.json" -o "$work/cuda.pickle" &&
      python3 "$top/tests/report/memviz_torch.py" "$work/cuda.pickle" "" | tee "$work/cuda.txt"
    row "CUDA program (sample.cu): PyTorch's viewer on the snapshot" \
      "$(grep -c '^ok' "$work/cuda.txt") checks ok, $(grep -c '^FAIL' "$work/cuda.txt") failed"
    cp "$work/trace_cuda.json" "$out/" 2>/dev/null
  fi

  echo "== 3. Perfetto's protobuf"
  for t in torch cuda; do
    trace=$work/trace_$t.json
    [ -f "$trace" ] || trace=$work/$t/trace_$t.json
    [ -f "$trace" ] || continue
    s=$(date +%s.%N)
    "$gpumem" report --perfetto "$trace" -o "$work/$t.pftrace" || continue
    e=$(date +%s.%N)
    row "--perfetto of the $t trace" \
      "$(stat -c %s "$work/$t.pftrace") bytes from $(stat -c %s "$trace") of JSON, $(printf '%.2f' "$(echo "$e - $s" | bc)") s"
  done

  cp "$work/torch/trace_torch.json" "$work/torch/torch_own.pickle" "$work/torch/trace_plot.html" "$out/" 2>/dev/null
  viz=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "utils", "viz", "MemoryViz.js"))' 2>/dev/null)
  if [ -f "$viz" ]; then cp "$viz" "$out/"; else echo "views-h200: MemoryViz.js is not in this PyTorch's package"; fi
  python3 -c 'import torch; print("PyTorch", torch.__version__)' 2>/dev/null
  echo
  echo "| views-h200 | result |"
  echo "| --- | --- |"
  printf '%s\n' "${rows[@]}"
  ls -la "$out"
}
main 2>&1 | tee "$out/log.txt"
