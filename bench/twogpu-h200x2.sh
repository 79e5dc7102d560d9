#!/usr/bin/env bash
# The two-GPU checks, in one call on a machine with two GPUs (nvidia-h200-x2: two H200s joined
# by NVLink), from a fresh copy of the repository, in at most 9 minutes:
#   1. builds everything but lint (the planted programs too), nccl-tests from NCCL_TESTS_SRC
#      (default .dev/nccl-tests, with its build-kit/build.sh) and, where mpicxx is, nccl-tests
#      again with MPI for the two-rank tests (nvcc with mpicxx as its host compiler);
#   2. the two-GPU gpu tests (ctest -L gpu -R '2gpus|2ranks|two_gpus|multi_gpu|gpu_portable'):
#      nccl-tests all_reduce, all_gather and sendrecv under gpumem check with -g 2 and as two
#      mpirun ranks, cuMem on and off (0 findings each); DDP on NCCL with two ranks, clean and
#      with a leak planted in rank 1; the planted programs that need two GPUs; the library's
#      own multi-device tests;
#   3. gpumem bench, a full run, with its devices section (peer copies both ways, peer access
#      off and on, against the NVLink limit; each device's pool);
#   4. what gpumem check costs all_reduce_perf -g 2 (bus bandwidth, native and checked,
#      alternating).
# Each stage is bounded so that the rest still runs. $OUT gets summary.md (printed last),
# ctest.txt, bench.txt, bench.json, overhead.txt, build.txt (its end).
#   bench/twogpu-h200x2.sh [BUILD_DIR]      (default build-gpu)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$top/build-gpu}") # absolute: tests and tools run from other folders
out=${OUT:-$PWD/twogpu-out}
limit=${LIMIT_S:-530} # the whole run, in seconds
mkdir -p "$out"
SECONDS=0
summary=$out/summary.md
say() { echo "$*" | tee -a "$summary"; }
# The seconds a stage may take: its own budget, less what the stages after it need.
budget() { local b=$1 left=$((limit - SECONDS - $2)); echo $((b < left ? b : (left > 10 ? left : 10))); }
: > "$summary"
say "# two GPUs: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(nvidia-smi -L | grep -c '^GPU ') GPUs, commit $(git -C "$top" rev-parse --short HEAD 2>/dev/null)"
nvidia-smi topo -m 2>/dev/null | head -4 | sed 's/^/    /' >> "$summary"

deps=$top/.dev/deps
cmake_extra=()
if [ -d "$deps" ]; then
  export PKG_CONFIG_PATH=$deps/lib/pkgconfig LD_LIBRARY_PATH=$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  cmake_extra=(-DCMAKE_PREFIX_PATH="$deps")
fi
nccl_src=${NCCL_TESTS_SRC:-$top/.dev/nccl-tests}
nccl_bin=$build/nccl-tests
nccl_mpi_bin=$build/nccl-tests-mpi
if [ -x "$nccl_src/build-kit/build.sh" ]; then # beside the build: their own nvcc runs
  bash "$nccl_src/build-kit/build.sh" "$nccl_bin" all_reduce all_gather sendrecv \
    > "$out/nccl-build.txt" 2>&1 &
  if command -v mpicxx >/dev/null 2>&1; then
    NVCC_PREPEND_FLAGS="-ccbin=$(command -v mpicxx) -DMPI_SUPPORT" bash "$nccl_src/build-kit/build.sh" \
      "$nccl_mpi_bin" all_reduce all_gather sendrecv > "$out/nccl-mpi-build.txt" 2>&1 &
  else
    echo "no mpicxx: the two-rank tests will say SKIP" > "$out/nccl-mpi-build.txt"
  fi
fi
t=$SECONDS
timeout "$(budget 240 300)" bash -c "cmake -S '$top' -B '$build' -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGPUMEM_BUILD_LINT=OFF ${cmake_extra[*]} && cmake --build '$build' -j$(nproc) &&
  make -C '$build/tests/check' -j$(nproc)" > "$out/build.log" 2>&1 ||
  { say "build failed or ran out of time"; tail -30 "$out/build.log"; }
wait
tail -40 "$out/build.log" > "$out/build.txt"
rm -f "$out/build.log"
cat "$out/nccl-build.txt" "$out/nccl-mpi-build.txt" 2>/dev/null | grep -E "error|_perf$" | head -10 >> "$out/build.txt"
rm -f "$out/nccl-build.txt" "$out/nccl-mpi-build.txt"
say "build: $((SECONDS - t)) s; nccl-tests: $(ls "$nccl_bin"/*_perf 2>/dev/null | wc -l) built, with MPI: $(ls "$nccl_mpi_bin"/*_perf 2>/dev/null | wc -l)"

export NCCL_TESTS_BIN=$nccl_bin NCCL_TESTS_MPI_BIN=$nccl_mpi_bin NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nccl=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
[ -n "$nccl" ] && export LD_LIBRARY_PATH=$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
gpumem=$build/tools/gpumem

# 2. the two-GPU gpu tests
t=$SECONDS
(cd "$build" && timeout "$(budget 220 120)" ctest -L gpu -R '2gpus|2ranks|two_gpus|multi_gpu|gpu_portable' \
  -j4 --timeout 200 -V) > "$out/ctest.txt" 2>&1
say ""
say "## two-GPU gpu tests ($((SECONDS - t)) s)"
grep -E "tests passed|tests failed" "$out/ctest.txt" | tee -a "$summary"
grep -E "\*\*\*(Failed|Timeout)|\(Skipped\)|Not Run" "$out/ctest.txt" | head -40 | tee -a "$summary"
# Each test's verdict line (ctest -V prefixes a test's output with its number).
grep -E "^[0-9]+: (FAIL|SKIP|ok)" "$out/ctest.txt" | sort -n | head -60 | tee -a "$summary"

# 3. gpumem bench: every section, the devices one included (a quick run when time is short)
t=$SECONDS
run=()
[ $((limit - SECONDS)) -gt 170 ] || run=(--quick)
timeout "$(budget 120 60)" "$gpumem" bench ${run[@]+"${run[@]}"} --json "$out/bench.json" \
  > "$out/bench.txt" 2> "$out/bench-progress.txt"
rc=$?
tail -3 "$out/bench-progress.txt" >> "$out/bench.txt"
rm -f "$out/bench-progress.txt"
say ""
say "## gpumem bench ${run[*]} (exit $rc, $((SECONDS - t)) s): between devices"
sed -n '/^between devices/,$p' "$out/bench.txt" | tee -a "$summary"

# 4. gpumem check's cost on all_reduce_perf -g 2: bus bandwidth, alternating
t=$SECONDS
if [ -x "$nccl_bin/all_reduce_perf" ] && [ $((limit - SECONDS)) -gt 50 ]; then
  for _ in 1 2; do
    for mode in native check; do
      pre=()
      [ $mode = check ] && pre=("$gpumem" check -q --)
      [ $((limit - SECONDS)) -gt 15 ] || continue
      timeout "$(budget 30 5)" ${pre[@]+"${pre[@]}"} "$nccl_bin/all_reduce_perf" -b 64M -e 512M -f 2 -g 2 -n 20 2>&1 |
        awk -v m=$mode '/Avg bus bandwidth/ {print m, $NF}'
    done
  done > "$out/overhead.txt"
  say ""
  say "## all_reduce_perf -g 2 -b 64M -e 512M, average bus bandwidth in GB/s ($((SECONDS - t)) s)"
  for mode in native check; do
    say "$mode: $(awk -v m=$mode '$1 == m {printf "%s ", $2}' "$out/overhead.txt")"
  done
fi

say ""
say "total: ${SECONDS} s"
cat "$summary"
