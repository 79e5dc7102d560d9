#!/usr/bin/env bash
# PyTorch's caching allocator and CuPy's MemoryPool against gpumem's pools, on a GPU: writes
# OUT/python-frameworks.md (a markdown table, min / median / max of 10 repetitions).
# Under 4 minutes on an H200. Runs from the repository root of a built tree.
#   usage: bench/python/run.sh BUILD_DIR OUT_DIR
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: bench/python/run.sh BUILD_DIR OUT_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
lib=$build/python/libgpumem_python.so
[ -f "$lib" ] || { echo "bench/python/run.sh: $lib not found: build the gpumem_python target" >&2; exit 1; }
cd "$top"
env -u GPUMEM_BACKEND GPUMEM_LIBRARY="$lib" PYTHONPATH="$top/python${PYTHONPATH:+:$PYTHONPATH}" \
  python3 bench/python/frameworks.py "$out/python-frameworks.md"
echo "written: $out/python-frameworks.md"
