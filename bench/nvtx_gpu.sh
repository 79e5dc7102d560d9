#!/bin/bash
# Pools and compute-sanitizer (GPUMEM_NVTX), and the stream-ordered peers of `gpumem bench`,
# on a GPU machine, in under 4 minutes. Run from the repository root of a built tree:
#   bench/nvtx_gpu.sh BUILD_DIR OUT_DIR
# It builds the few targets it needs (quick when the tree is built), then:
#   1. what compute-sanitizer puts in a program's environment (how GPUMEM_NVTX=auto finds it);
#   2. the NVTX tests: the host ones (a stand-in tool) and the gpu ones under memcheck;
#   3. bench_pool cuda --quick --pools-only, GPUMEM_NVTX=0 and 1 alternating, 10 runs each:
#      min / median / max ns a pair per row; then one run each under compute-sanitizer;
#   4. gpumem bench --quick (and the full run when time allows): the allocation table.
# Writes OUT_DIR/nvtx-gpu.md (the summary) and the raw outputs beside it.
set -u
B=${1:?usage: bench/nvtx_gpu.sh BUILD_DIR OUT_DIR}
OUT=${2:?usage: bench/nvtx_gpu.sh BUILD_DIR OUT_DIR}
mkdir -p "$OUT"
MD=$OUT/nvtx-gpu.md
SECONDS=0

sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
[ -z "$sanitizer" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] &&
  sanitizer=/usr/local/cuda/bin/compute-sanitizer
export COMPUTE_SANITIZER=$sanitizer

cmake --build "$B" -j16 --target gpu_nvtx_memcheck test_nvtx nvtx_stub bench_pool gpumem_tool \
  > "$OUT/build.txt" 2>&1 || { echo "build failed: $OUT/build.txt"; exit 1; }

{
  echo "# GPUMEM_NVTX and the stream-ordered peers on $(hostname), $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown);" \
    "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1);" \
    "compute-sanitizer: ${sanitizer:-not found} $("${sanitizer:-false}" --version 2>/dev/null | grep -i version | head -n1)"
} > "$MD"

# 1. The environment compute-sanitizer gives a program (env is not a CUDA program, but the
# launcher sets the variables before it starts it).
if [ -n "$sanitizer" ]; then
  timeout 60 "$sanitizer" --tool memcheck env > "$OUT/sanitizer-env.txt" 2>&1
  {
    echo
    echo "## 1. What compute-sanitizer puts in a program's environment"
    echo
    echo "Lines with INJECTION, PRELOAD, NVTX or SANITIZER (GPUMEM_NVTX=auto looks for"
    echo "\`sanitizer\` in NVTX_INJECTION64_PATH, CUDA_INJECTION64_PATH and LD_PRELOAD):"
    echo
    echo '```'
    grep -i -E 'injection|preload|nvtx|sanitizer' "$OUT/sanitizer-env.txt" | grep -v '^=====' | cut -c1-300
    echo '```'
  } >> "$MD"
fi

# 2. The tests.
(cd "$B" && timeout 150 ctest -R '^nvtx_|^gpu_nvtx_memcheck' --output-on-failure) \
  > "$OUT/ctest.txt" 2>&1
{
  echo
  echo "## 2. Tests (ctest -R '^nvtx_|^gpu_nvtx_memcheck')"
  echo
  echo '```'
  grep -E 'Test +#|tests passed|ok   |FAIL|SKIP' "$OUT/ctest.txt"
  echo '```'
} >> "$MD"

# 3. The pools' cost with NVTX off and on, alternating so that drift hits both alike.
for i in $(seq 1 10); do
  [ $SECONDS -gt 170 ] && break # the runs so far are summarized; the table counts them
  for v in 0 1; do
    GPUMEM_NVTX=$v timeout 60 "$B/bench/bench_pool" cuda --quick --pools-only \
      > "$OUT/bench_pool-nvtx$v-run$i.txt" 2>&1
  done
done
summary() { # the RESULT lines of files $@: min / median / max of two fields per key
  python3 - "$@" <<'EOF'
import re, statistics, sys
rows = {}
for path in sys.argv[1:]:
    for line in open(path):
        if not line.startswith("RESULT bench=pool"):
            continue
        f = dict(kv.split("=", 1) for kv in line.split()[1:])
        rows.setdefault(f["key"], []).append((float(f["ns_per_pair_1t"]),
                                              float(f["ns_per_pair_16t_aggregate"])))
for key, v in rows.items():
    a, b = [x[0] for x in v], [x[1] for x in v]
    print(f"{key} {len(v)} {min(a):.1f} {statistics.median(a):.1f} {max(a):.1f} "
          f"{min(b):.1f} {statistics.median(b):.1f} {max(b):.1f}")
EOF
}
summary "$OUT"/bench_pool-nvtx0-run*.txt > "$OUT/pool-nvtx0.txt"
summary "$OUT"/bench_pool-nvtx1-run*.txt > "$OUT/pool-nvtx1.txt"
{
  echo
  echo "## 3. bench_pool cuda --quick --pools-only, 10 runs each (ns a pair; min / median / max)"
  echo
  echo "| row | GPUMEM_NVTX | runs | 1 thread | 16 threads, aggregate |"
  echo "|---|---|---:|---|---|"
  for v in 0 1; do
    while read -r key n a1 a2 a3 b1 b2 b3; do
      echo "| $key | $v | $n | $a1 / $a2 / $a3 | $b1 / $b2 / $b3 |"
    done < "$OUT/pool-nvtx$v.txt"
  done | sort
} >> "$MD"

if [ -n "$sanitizer" ] && [ $SECONDS -lt 170 ]; then
  for v in 0 1; do
    GPUMEM_NVTX=$v timeout 45 "$sanitizer" --tool memcheck "$B/bench/bench_pool" cuda --quick \
      --pools-only > "$OUT/bench_pool-sanitizer-nvtx$v.txt" 2>&1
  done
  {
    echo
    echo "Under compute-sanitizer (memcheck), one run each (ns a pair, 1 thread / 16 threads):"
    echo
    for v in 0 1; do
      echo "- GPUMEM_NVTX=$v: $(summary "$OUT/bench_pool-sanitizer-nvtx$v.txt" |
        awk '{printf "%s %s / %s; ", $1, $4, $7}')"
    done
  } >> "$MD"
fi

# 4. gpumem bench: the allocation table with the new peers.
timeout 60 "$B/tools/gpumem" bench --quick --json "$OUT/bench-quick.json" \
  > "$OUT/bench-quick.txt" 2> "$OUT/bench-quick.err"
{
  echo
  echo "## 4. gpumem bench --quick, allocation"
  echo
  echo '```'
  sed -n '1,/^copies of/p' "$OUT/bench-quick.txt" | sed '$d'
  echo '```'
} >> "$MD"
if [ $SECONDS -lt 180 ]; then
  timeout 50 "$B/tools/gpumem" bench --json "$OUT/bench-full.json" \
    > "$OUT/bench-full.txt" 2> "$OUT/bench-full.err"
  {
    echo
    echo "## gpumem bench (full run), allocation"
    echo
    echo '```'
    sed -n '1,/^copies of/p' "$OUT/bench-full.txt" | sed '$d'
    echo '```'
  } >> "$MD"
fi
echo >> "$MD"
echo "Took ${SECONDS} s." >> "$MD"
echo "wrote $MD (${SECONDS} s)"
