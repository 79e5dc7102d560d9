#!/bin/sh
# gpumem check --trace on a real GPU: a program that leaks 64 KiB of pinned memory (and holds a
# 64 KiB device buffer meanwhile) is run under the checker with --trace; the trace reads back
# with gpumem report: the peak, the leak and its call site in the program's source. Exit 77
# (skipped) without a GPU.
# usage: check_trace_gpu.sh GPUMEM PROGRAM
gpumem=$1 prog=$2
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "SKIP: no GPU (nvidia-smi -L lists none)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
"$gpumem" check --trace="$tmp/t.json" --log-file="$tmp/check.txt" -- "$prog" || true
"$gpumem" report --summary "$tmp/t.json" > "$tmp/summary.txt" 2>&1 || fails=1
cat "$tmp/summary.txt"
for pattern in '^peak: 128\.0 KiB live at ' '^leaks at end: 64\.0 KiB in 1 allocation from 1 call site$' \
    '64\.0 KiB in 1 pinned allocation at .*leak_pinned\.cu:[0-9]+ \(main\)$'; do
  if grep -q -E "$pattern" "$tmp/summary.txt"; then echo "ok   /$pattern/"; else echo "FAIL: no /$pattern/"; fails=1; fi
done
"$gpumem" report --html "$tmp/t.json" -o "$tmp/t.html" || fails=1
exit $fails
