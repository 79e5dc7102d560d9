#!/bin/sh
# Stack samples of a running program without perf: starts PROGRAM ARGS..., waits 3 s, attaches
# cuda-gdb (or gdb where there is none) N times (-batch, "thread apply all bt"), and prints how many of all the sampled
# stacks hold each function (a function twice in one stack counts twice) and, for the
# threads running `run` (pool_loop's), which function each was in at the moment (frame #0).
# cuda-gdb stops the program while it takes a sample; what the driver does while a debugger
# is attached may differ (CUDA calls were seen waiting on a futex), so sample code that makes
# no CUDA call, such as pool pairs served from a cache.
#
# usage: bench/sample_stacks.sh N PROGRAM ARGS...
#   e.g. bench/sample_stacks.sh 8 build/bench/pool_loop --threads 16 --bytes 4096 --seconds 25
set -eu
n=${1:?usage: bench/sample_stacks.sh N PROGRAM ARGS...}
shift
gdb=$(command -v cuda-gdb || command -v gdb || true)
[ -n "$gdb" ] || { echo "sample_stacks: neither cuda-gdb nor gdb is on PATH" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$@" > "$tmp/out" &
pid=$!
sleep 3
i=0
while [ "$i" -lt "$n" ]; do
  i=$((i + 1))
  timeout 20 "$gdb" -q -p "$pid" -batch -ex "thread apply all bt 30" > "$tmp/s$i" 2>/dev/null || true
  sleep 0.3
done
wait "$pid" || true
cat "$tmp/out"
echo "== functions on the sampled stacks (count: stacks holding it; ?? is code without symbols)"
cat "$tmp"/s* | grep -E '^#' | sed -E 's/^#[0-9]+ +(0x[0-9a-f]+ in )?//; s/ \(.*//' | sort | uniq -c |
  sort -rn | head -40
echo "== frame #0 of the threads in run()"
for f in "$tmp"/s*; do
  awk '/^Thread/ { if (n && inrun) print top; n = 0; inrun = 0 }
       /^#/ { if (n == 0) top = $0; n++; if ($0 ~ / run /) inrun = 1 }
       END { if (n && inrun) print top }' "$f"
done | sed -E 's/^#[0-9]+ +(0x[0-9a-f]+ in )?//; s/ \(.*//' | sort | uniq -c | sort -rn
