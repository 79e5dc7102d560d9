#!/usr/bin/env bash
# The pools on a GPU machine, in under 4 minutes (docs/pools.md, "Design"):
#   1. a variable-length PyTorch training loop (a transformer encoder layer, d_model 512,
#      batches of 8 sequences of 16 to 1024 tokens, 300 steps) with each allocator side by
#      side: PyTorch's caching allocator (default, expandable_segments:True,
#      backend:cudaMallocAsync, and the default recording every allocation's Python stack, to
#      see what that costs) and gpumem's device pool in each design (pages, segments, a block
#      per class: the earlier design); steps a second, peak reserved, peak allocated;
#   2. the fixed-shape pool rows: bench_pool_scale, 4 KiB and 1 MiB pairs, 1 and 16 threads;
#   3. traces of real workloads recorded through gpumem (the variable-length loop, the same
#      with fixed shapes, an inference server's loop, a CuPy program, and llm.c's GPT-2
#      trainer where LLMC_SRC names a checkout of it), kept as replay logs,
#      and each replayed by `gpumem bench --replay` into every allocator here;
#   4. what `gpumem check` costs the variable-length loop on gpumem's pool, and pool_loop's
#      pairs.
# Each part is bounded and guarded: one failing does not stop the others. Writes under OUT:
# pools-h200.md (the summary tables, also printed last), raw.txt (every command's output),
# replay.json, and logs/*.log.gz (the recorded replay logs, for bench/traces/).
# Usage, from the repository root of a fresh copy: bench/pools-h200.sh [OUT]  (default $OUT)
# BUILD=DIR reuses a build. BACKEND=sim tries what can run on a machine without a GPU.
# ALLOCS="a b ..." picks part 1's allocators (default: all); ROUNDS=N runs them N times in turn
# (default 1) and reports each one's median steps/s with every run's, for speeds closer than
# the machine's noise.
set -u
OUT=${1:-${OUT:?usage: bench/pools-h200.sh OUT}}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
B=${BUILD:-$top/build-pools}
BACKEND=${BACKEND:-cuda}
RAW=$OUT/raw.txt
MD=$OUT/pools-h200.md
SECONDS=0
BUDGET=${BUDGET:-225} # seconds; later parts are skipped when the run is near 4 minutes
: > "$RAW"

log() { printf '\n==== %s (%ss)\n' "$*" "$SECONDS" >> "$RAW"; echo "[$SECONDS s] $*" >&2; }
left() { echo $((BUDGET - SECONDS)); }
# run SECONDS CMD...: bounded, output to raw.txt, never fails the script
run() { local t=$1; shift; timeout "$t" "$@" >> "$RAW" 2>&1; local rc=$?; echo "(exit $rc)" >> "$RAW"; return $rc; }

# ---- 0. build what is needed
log "build"
deps=()
[ -d .dev/deps ] && deps=(-DCMAKE_PREFIX_PATH="$top/.dev/deps")
export PKG_CONFIG_PATH=$top/.dev/deps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export LD_LIBRARY_PATH=$top/.dev/deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -f "$B/CMakeCache.txt" ]; then
  run 60 cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DGPUMEM_BUILD_LINT=OFF \
    -DGPUMEM_BUILD_TESTS=ON -DGPUMEM_BUILD_BENCH=ON "${deps[@]}" ||
    run 60 cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DGPUMEM_BUILD_LINT=OFF \
      -DGPUMEM_BUILD_TESTS=OFF -DGPUMEM_BUILD_BENCH=ON "${deps[@]}"
fi
run 150 cmake --build "$B" -j"$(nproc)" --target gpumem_tool gpumem_python bench_pool_scale pool_loop
run 60 cmake --build "$B" -j"$(nproc)" --target test_pool test_pool_records
GPUMEM=$B/tools/gpumem
PYLIB=$B/python/libgpumem_python.so
export PYTHONPATH=$top/python${PYTHONPATH:+:$PYTHONPATH}
export GPUMEM_LIBRARY=$PYLIB
[ -x "$GPUMEM" ] || echo "gpumem not built: see $RAW" >&2

# ---- 0b. the pool tests on the device (the page-mapped design on real CUDA)
TESTS=""
for t in test_pool test_pool_records; do
  [ -x "$B/tests/$t" ] || { TESTS="$TESTS $t: not built;"; continue; }
  log "$t $BACKEND"
  if run 60 "$B/tests/$t" "$BACKEND"; then TESTS="$TESTS $t: passed;"; else TESTS="$TESTS $t: FAILED (raw.txt);"; fi
done

# ---- 1. the variable-length loop, each allocator
declare -A RATE RES ALLOC RUNS CUDA_MS TRACED_RATE TRACED_RES
workload() { # WORKLOAD ALLOCATOR [ENV...]: one process, its JSON line parsed
  local w=$1 a=$2; shift 2
  local line
  line=$(env "$@" timeout 60 python3 bench/python/workloads.py "$w" "$a" 2>>"$RAW" | tail -n 1)
  echo "$w $a: $line" >> "$RAW"
  case $line in
    *steps_per_s*)
      RATE[$w,$a]=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["steps_per_s"])' "$line")
      RUNS[$w,$a]="${RUNS[$w,$a]:-}${RUNS[$w,$a]:+ }${RATE[$w,$a]}"
      CUDA_MS[$w,$a]="${CUDA_MS[$w,$a]:-}${CUDA_MS[$w,$a]:+ }$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print("%s/%s" % (j["pages_moved"], j["cuda_ms"]) if "cuda_ms" in j else "-")' "$line")"
      RES[$w,$a]=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["peak_reserved"])' "$line")
      ALLOC[$w,$a]=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["peak_allocated"])' "$line") ;;
  esac
}
TORCH_ALLOCS=${ALLOCS:-torch-default torch-expandable torch-async gpumem-classes gpumem-segments gpumem-vmm torch-history}
ROUNDS=${ROUNDS:-1}
median() { tr ' ' '\n' | sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
if [ "$BACKEND" = cuda ] && python3 -c 'import torch' 2>/dev/null; then
  for r in $(seq "$ROUNDS"); do
    for a in $TORCH_ALLOCS; do
      [ "$(left)" -gt 150 ] || { log "skip varlen $a (round $r): time"; continue; }
      log "varlen $a (round $r)"
      workload varlen "$a"
    done
  done
  for a in $TORCH_ALLOCS; do
    [ -n "${RUNS[varlen,$a]:-}" ] && RATE[varlen,$a]=$(echo "${RUNS[varlen,$a]}" | median)
  done
else
  log "no PyTorch (or no GPU): part 1 skipped"
fi

# ---- 2. fixed-size pool pairs
log "bench_pool_scale"
: > "$OUT/scale.txt"
if [ "$(left)" -gt 120 ]; then
  timeout 40 "$B/bench/bench_pool_scale" "$BACKEND" --threads 1,16 --runs 5 > "$OUT/scale.txt" 2>&1
  cat "$OUT/scale.txt" >> "$RAW"
fi

# ---- 3. record traces, keep them as replay logs, replay each
record() { # NAME WORKLOAD ALLOCATOR
  local name=$1 trace=$OUT/logs/$1.trace.json
  local runs=${RUNS[$2,$3]:-} cuda=${CUDA_MS[$2,$3]:-} rate=${RATE[$2,$3]:-} res=${RES[$2,$3]:-}
  local alloc=${ALLOC[$2,$3]:-}
  rm -f "$trace"
  log "record $name"
  workload "$2" "$3" GPUMEM_TRACE="$trace"
  # a traced run is not one of the rounds: the table keeps the rounds' figures (the recorded
  # runs' own are in the line under the table)
  TRACED_RATE[$2]=${RATE[$2,$3]:-} TRACED_RES[$2]=${RES[$2,$3]:-}
  if [ -n "$runs" ]; then
    RUNS[$2,$3]=$runs CUDA_MS[$2,$3]=$cuda RATE[$2,$3]=$rate RES[$2,$3]=$res ALLOC[$2,$3]=$alloc
  fi
  if [ -s "$trace" ] && run 30 "$GPUMEM" bench --replay "$trace" --write-log "$OUT/logs/$name.log"; then
    gzip -9f "$OUT/logs/$name.log"
  fi
  rm -f "$trace"
}
if [ "$BACKEND" = cuda ] && python3 -c 'import torch' 2>/dev/null; then
  [ "$(left)" -gt 110 ] && record varlen varlen gpumem-vmm
  [ "$(left)" -gt 100 ] && record fixed fixed gpumem-vmm
  [ "$(left)" -gt 90 ] && record serve serve gpumem-vmm
fi
if [ "$BACKEND" = cuda ] && python3 -c 'import cupy' 2>/dev/null; then
  [ "$(left)" -gt 80 ] && record cupy cupy gpumem-vmm
fi
# llm.c's GPT-2 trainer (karpathy/llm.c, not kept here: LLMC_SRC=DIR names a checkout with
# train_gpt2.cu), built single-GPU with the flags of its Makefile, trained from random
# initialization (-e d6: 6 layers) on random tokens for 20 steps under gpumem check --trace:
# an unmodified CUDA program's allocations, recorded from outside it.
if [ "$BACKEND" = cuda ] && [ -f "${LLMC_SRC:-}/train_gpt2.cu" ] && [ "$(left)" -gt 70 ]; then
  log "record llmc"
  llmc=$OUT/llmc-work
  mkdir -p "$llmc/data"
  if run 120 nvcc -O3 -t=0 --use_fast_math -std=c++17 -DENABLE_BF16 -arch=native \
       "$LLMC_SRC/train_gpt2.cu" -lcublas -lcublasLt -o "$llmc/train_gpt2cu" &&
     run 30 python3 bench/python/llmc_tokens.py "$llmc/data" &&
     (cd "$llmc" && run 90 "$GPUMEM" check -q --trace="$llmc/llmc.trace.json" -- ./train_gpt2cu \
        -e d6 -i "data/train.bin" -j "data/val.bin" -b 8 -t 512 -d 4096 -x 20 -v 5 -m 4 \
        -s 0 -n 0 -h 0 -y 0) &&
     run 30 "$GPUMEM" bench --replay "$llmc/llmc.trace.json" --write-log "$OUT/logs/llmc.log"; then
    gzip -9f "$OUT/logs/llmc.log"
  fi
  rm -rf "$llmc"
fi
echo "[" > "$OUT/replay.json"
: > "$OUT/replay-tables.txt"
first=1
for f in "$OUT"/logs/varlen.log.gz "$OUT"/logs/fixed.log.gz "$OUT"/logs/serve.log.gz \
         "$OUT"/logs/cupy.log.gz "$OUT"/logs/llmc.log.gz bench/traces/*.log.gz; do
  [ -f "$f" ] || continue
  case $f in bench/traces/*) [ -f "$OUT/logs/$(basename "$f")" ] && continue ;; esac
  [ "$(left)" -gt 45 ] || { log "skip replay $f: time"; continue; }
  name=$(basename "$f" .log.gz)
  gunzip -c "$f" > "/tmp/$name.log" || continue
  log "replay $name"
  rm -f "/tmp/$name.json"
  timeout 60 env GPUMEM_BACKEND="$BACKEND" PYTHONPATH="$PYTHONPATH" "$GPUMEM" bench \
    --replay "/tmp/$name.log" --json "/tmp/$name.json" > "/tmp/$name.txt" 2>> "$RAW"
  echo "(exit $?)" >> "$RAW"
  cat "/tmp/$name.txt" >> "$RAW"
  { cat "/tmp/$name.txt"; echo; } >> "$OUT/replay-tables.txt"
  if [ -s "/tmp/$name.json" ]; then
    [ $first = 1 ] || echo "," >> "$OUT/replay.json"
    cat "/tmp/$name.json" >> "$OUT/replay.json"
    first=0
  fi
done
echo "]" >> "$OUT/replay.json"

# ---- 4. what gpumem check costs
CHECK_RATE=""
if [ "$BACKEND" = cuda ] && python3 -c 'import torch' 2>/dev/null && [ "$(left)" -gt 30 ]; then
  log "varlen gpumem-vmm under gpumem check"
  line=$(timeout 60 "$GPUMEM" check --leak-check=summary -- python3 bench/python/workloads.py varlen gpumem-vmm 2>>"$RAW" | grep steps_per_s | tail -n 1)
  echo "check: $line" >> "$RAW"
  CHECK_RATE=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["steps_per_s"])' "$line" 2>/dev/null)
fi
POOL_PLAIN="" POOL_CHECK=""
if [ "$(left)" -gt 12 ]; then
  log "pool_loop, plain and under gpumem check"
  POOL_PLAIN=$(timeout 20 "$B/bench/pool_loop" --threads 1 --seconds 3 2>&1 | tee -a "$RAW" | grep -o 'ns_per_pair_aggregate=[0-9.]*' | head -n 1)
  POOL_CHECK=$(timeout 30 "$GPUMEM" check -- "$B/bench/pool_loop" --threads 1 --seconds 3 2>&1 | tee -a "$RAW" | grep -o 'ns_per_pair_aggregate=[0-9.]*' | head -n 1)
fi

# ---- summary
mib() { [ -n "${1:-}" ] && awk -v b="$1" 'BEGIN { printf "%.0f MiB", b / 1048576 }' || echo "-"; }
{
  echo "# gpumem pools on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)," \
       "$(nproc) cores, $(python3 -c 'import torch; print("PyTorch", torch.__version__)' 2>/dev/null), run took ${SECONDS}s"
  echo
  echo "Tests on the device:$TESTS"
  echo
  echo "## Variable-length transformer loop (300 steps, 8 x 16..1024 tokens)"
  echo
  echo "| allocator | steps/s (median of $ROUNDS) | every run | peak reserved | peak allocated | pages moved / CUDA ms, each run |"
  echo "|---|---:|---|---:|---:|---|"
  for a in $TORCH_ALLOCS; do
    echo "| $a | ${RATE[varlen,$a]:--} | ${RUNS[varlen,$a]:--} | $(mib "${RES[varlen,$a]:-}") | $(mib "${ALLOC[varlen,$a]:-}") | ${CUDA_MS[varlen,$a]:--} |"
  done
  echo
  echo "Recorded runs (gpumem-vmm, with GPUMEM_TRACE): varlen ${TRACED_RATE[varlen]:--} steps/s" \
       "$(mib "${TRACED_RES[varlen]:-}") reserved; fixed ${TRACED_RATE[fixed]:--} steps/s" \
       "$(mib "${TRACED_RES[fixed]:-}"); serve ${TRACED_RATE[serve]:--} requests/s" \
       "$(mib "${TRACED_RES[serve]:-}"); cupy ${TRACED_RATE[cupy]:--} steps/s $(mib "${TRACED_RES[cupy]:-}")"
  echo
  echo "## Fixed-size pairs (bench_pool_scale, median of 5 runs)"
  echo
  grep '^|' "$OUT/scale.txt"
  echo
  echo "## Replays (gpumem bench --replay)"
  echo
  echo '```'
  cat "$OUT/replay-tables.txt" 2>/dev/null
  echo '```'
  echo
  echo "## gpumem check's cost"
  echo
  echo "- variable-length loop on gpumem-vmm: ${RATE[varlen,gpumem-vmm]:--} steps/s plain, ${CHECK_RATE:--} under gpumem check"
  echo "- pool_loop, 1 thread, 4 KiB device pairs: ${POOL_PLAIN:--} plain, ${POOL_CHECK:--} under gpumem check"
} > "$MD"
rm -f "$OUT/replay-tables.txt" "$OUT/scale.txt"
ls "$OUT/logs" >> "$RAW" 2>&1
cat "$MD"
