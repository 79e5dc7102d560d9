#!/bin/sh
# PyTorch's viewer reads gpumem's snapshot of a real PyTorch run: a training loop with buffers
# from the CUDA driver beside it (torch_train.py) runs under `gpumem check --trace`, gpumem
# report --memory-viz makes the snapshot, and memviz_torch.py reads it with
# torch.cuda._memory_viz and compares it with PyTorch's own snapshot of the same run.
# Exit 77 (skipped) without a GPU or without PyTorch.
# usage: memviz_torch_gpu.sh GPUMEM [OUT_DIR]   (OUT_DIR keeps the trace, snapshots and pages)
gpumem=$1
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -n "$out" ] || out=$tmp
mkdir -p "$out"
python=$(command -v python3) || { echo "skip: no python3"; exit 77; }
"$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
  { echo "skip: PyTorch with a CUDA device is not here"; exit 77; }
"$gpumem" check --trace="$out/trace_torch.json" --log-file="$tmp/check.txt" -- \
  "$python" "$here/torch_train.py" "$out/torch_own.pickle" || true
cat "$tmp/check.txt"
[ -s "$out/trace_torch.json" ] || { echo "FAIL: no trace was written"; exit 1; }
"$gpumem" report --memory-viz "$out/trace_torch.json" -o "$out/torch.pickle" ||
  { echo "FAIL: gpumem report --memory-viz"; exit 1; }
"$python" "$here/memviz_torch.py" "$out/torch.pickle" "$out/torch_own.pickle" "$out"
