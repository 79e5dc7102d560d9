#!/bin/sh
# docs/images/memviz-sim.png: bench/timeline/sample.c on the simulated device, traced
# (GPUMEM_TRACE), made into PyTorch's snapshot by gpumem report --memory-viz, and shown by
# PyTorch's own viewer in headless Chromium (memviz-screenshot.sh; MemoryViz.js from an
# installed PyTorch, torch/utils/viz/MemoryViz.js, or the copy bench/views-h200.sh brings back).
#   usage: bench/timeline/memviz-sim.sh MEMORYVIZ_JS [BUILD_DIR] [OUT.png]
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
viz=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
build=$(cd "${2:-$top/build}" && pwd)
png=${3:-$top/docs/images/memviz-sim.png}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Paths in the frames as the repository names them (bench/timeline/sample.c).
cc -O2 -g -fdebug-prefix-map="$top/=" -fmacro-prefix-map="$top/=" -I"$top/include" \
  $(pkg-config --cflags-only-I cuda 2>/dev/null || echo -I/usr/local/cuda/include) \
  "$top/bench/timeline/sample.c" -L"$build/src" -lgpumem -Wl,-rpath,"$build/src" -o "$tmp/sample"
(cd "$top" && GPUMEM_BACKEND=sim GPUMEM_BACKTRACE=1 GPUMEM_TRACE="$tmp/sample.json" \
  GPUMEM_LEAK_REPORT=off "$tmp/sample")
"$build/tools/gpumem" report --memory-viz "$tmp/sample.json" -o "$tmp/sample.pickle"
"$top/bench/timeline/memviz-screenshot.sh" "$tmp/sample.pickle" "$viz" "$png" \
  "Active Memory Timeline" 1400,600
