#!/usr/bin/env bash
# Pool scaling on a GPU machine: bench_pool_scale (device and pinned pools, 4 KiB and 1 MiB)
# at 1, 2, 4, 8 and 16 threads, 10 runs each, min / median / max, on the real device; then
# the pool and thread-cache tests labelled gpu. Writes pool-scale.md (the table, the machine,
# the commit and the targets met or not) and the raw output into the output folder.
# Usage: bench/pool-scale-h200.sh BUILD_DIR OUT_DIR   (from the repository root of a tree
# built in BUILD_DIR as Release, e.g.
#   cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release -DGPUMEM_BUILD_LINT=OFF
#   cmake --build build-rel -j --target bench_pool_scale bench_pool test_pool test_tcache)
# Takes about a minute; each step is bounded, under 4 minutes in all. BACKEND=sim tries the
# script on a machine without a GPU (the simulated device; no peers, gpu tests skipped).
set -u
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR OUT_DIR" >&2
  exit 2
fi
B=$1
OUT=$2
BACKEND=${BACKEND:-cuda}
mkdir -p "$OUT"
md=$OUT/pool-scale.md
raw=$OUT/bench_pool_scale.txt
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
lscpu > "$OUT/lscpu.txt" 2>&1
timeout 120 "$B/bench/bench_pool_scale" "$BACKEND" --threads 1,2,4,8,16 --runs 10 > "$raw" 2>&1
rc=$?
timeout 45 "$B/bench/bench_pool" "$BACKEND" --quick > "$OUT/bench_pool.txt" 2>&1
(cd "$B" && timeout 60 ctest -L gpu -R 'pool|tcache' --output-on-failure) > "$OUT/ctest.txt" 2>&1
ctest_rc=$?

{
  echo "# bench_pool_scale on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
       "(build type $(grep -m1 '^CMAKE_BUILD_TYPE' "$B/CMakeCache.txt" 2>/dev/null | cut -d= -f2))"
  echo "- CPU: $(grep -m1 'Model name' "$OUT/lscpu.txt" | sed 's/.*: *//'), $(nproc) cores"
  echo "- command: \`$B/bench/bench_pool_scale $BACKEND --threads 1,2,4,8,16 --runs 10\` (exit $rc)"
  echo "- gpu tests \`ctest -L gpu -R 'pool|tcache'\`: exit $ctest_rc (ctest.txt)"
  echo
  echo "ns a pair: aggregate wall time over every thread's pairs (the slowest thread's time);"
  echo "speedup: one thread's median over the row's median."
  echo
  grep '^|' "$raw"
  echo
  echo "Against the targets (one thread <= 100 ns; 16 threads >= 8x):"
  echo
  awk '/^RESULT bench=pool_scale/ {
         for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
         if (v["threads"] == 1)
           printf "- %s, 1 thread: %s ns median: %s\n", v["key"], v["ns_per_pair_median"],
                  (v["ns_per_pair_median"] + 0 <= 100 ? "met" : "missed")
         if (v["threads"] == 16)
           printf "- %s, 16 threads: %sx: %s\n", v["key"], v["speedup_vs_1t"],
                  (v["speedup_vs_1t"] + 0 >= 8 ? "met" : "missed")
       }' "$raw"
  echo
  echo "bench_pool --quick, same build (peers on the same machine):"
  echo
  grep '^|' "$OUT/bench_pool.txt"
} > "$md"
cat "$md"
