#!/usr/bin/env bash
# The timeline of a real run: builds gpumem (gpumem check and gpumem report) and the sample
# CUDA program (sample.cu: a peak at step 6, a pinned leak), runs the sample under
# `gpumem check --trace`, and writes into $OUT (default ./timeline-out):
#   trace.json     the trace (opens in https://ui.perfetto.dev)
#   check.txt      gpumem check's report
#   summary.txt    gpumem report --summary
#   timeline.html  gpumem report --html (the page docs/timeline.md shows)
#   timeline.png   its screenshot, where Chromium is installed (else: bench/timeline/screenshot.sh
#                  timeline.html timeline.png on a machine that has it)
#   machine.txt    date, GPU, driver, commit
#   bench_trace.txt  what recording costs per allocation + release pair on this machine
#   ctest.txt      the gpu test of gpumem check --trace (report_check_trace_gpu)
# Optional libraries: .dev/deps from scripts/gpu-deps is used when present (jansson is needed
# for gpumem report; without it the trace is still written).
#   bench/timeline/h200-run.sh [BUILD_DIR]      (default build-timeline)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build-timeline}
out=${OUT:-$PWD/timeline-out}
mkdir -p "$out"
deps=$top/.dev/deps
cmake_extra=()
if [ -d "$deps" ]; then
  export PKG_CONFIG_PATH=$deps/lib/pkgconfig LD_LIBRARY_PATH=$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  cmake_extra=(-DCMAKE_PREFIX_PATH="$deps")
fi
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUMEM_BUILD_LINT=OFF \
  "${cmake_extra[@]}" > "$out/cmake.txt"
cmake --build "$build" -j"$(nproc)" --target gpumem_tool bench_trace > "$out/build.txt"
cmake --build "$build" -j"$(nproc)" --target check_leak_pinned_static >> "$out/build.txt" 2>&1 || true
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc" -O2 -g -lineinfo -o "$build/timeline_sample" "$top/bench/timeline/sample.cu"
gpumem=$build/tools/gpumem
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  git -C "$top" rev-parse HEAD || true
} > "$out/machine.txt"
status=0
"$gpumem" check --trace="$out/trace.json" --log-file="$out/check.txt" -- "$build/timeline_sample" ||
  status=$?
echo "gpumem check exited with $status (the sample's own status; its leak is reported in check.txt)"
cat "$out/check.txt"
[ -s "$out/trace.json" ] || { echo "h200-run: no trace was written" >&2; exit 1; }
if "$gpumem" report --help > /dev/null 2>&1; then
  "$gpumem" report --summary "$out/trace.json" | tee "$out/summary.txt"
  "$gpumem" report --html "$out/trace.json" -o "$out/timeline.html"
  if command -v chromium > /dev/null; then
    "$top/bench/timeline/screenshot.sh" "$out/timeline.html" "$out/timeline.png"
  fi
else
  echo "h200-run: gpumem report was not built (no jansson); make the summary and the page" \
       "from $out/trace.json on a machine that has it" >&2
fi
"$build/bench/bench_trace" | tee "$out/bench_trace.txt" || true
(cd "$build" && ctest -R report_check_trace_gpu --output-on-failure) > "$out/ctest.txt" 2>&1 || true
tail -3 "$out/ctest.txt"
ls -la "$out"
