#!/usr/bin/env bash
# Every GPU check of a change, in one call on the borrowed H200 (about 9 minutes): one build of
# everything but lint, then in order, each bounded so that the rest still runs:
#   1. the pools (bench/pools-h200.sh on this build: the variable-length PyTorch loop with each
#      allocator, the fixed-shape rows, the recorded traces replayed);
#   2. every gpu test (ctest -L gpu), nccl-tests among them (built from NCCL_TESTS_SRC);
#   3. what gpumem check costs (empty launches, the frameworks' training loops, all_reduce_perf).
# Everything lands in $OUT: summary.md (printed last) and results.tar.gz (each part's files).
#   bench/session-h200.sh [BUILD_DIR]      (default build-gpu); STAGES="pools tests overhead"
# The overhead stage: RUNS (empty launches) and FW_RUNS (frameworks, all_reduce_perf) runs of
# each, FW_STEPS steps per training loop (300), CHECK_MODES among native, check, nocalls
# (--failed-calls=no) and allcalls (--watch-calls=all), default "native check". A training
# loop's figures are its total time and its median step time times its steps (train_loops.py),
# the latter moved far less by a pause of the machine.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$top/build-gpu}") # absolute: the tests run from inside it
out=${OUT:-$PWD/session-out}
res=$(mktemp -d)
stages=${STAGES:-pools tests overhead}
mkdir -p "$out"
SECONDS=0
summary=$out/summary.md
say() { echo "$*" | tee -a "$summary"; }
: > "$summary"
say "# GPU session: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
deps=$top/.dev/deps
cmake_extra=()
if [ -d "$deps" ]; then
  export PKG_CONFIG_PATH=$deps/lib/pkgconfig LD_LIBRARY_PATH=$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  cmake_extra=(-DCMAKE_PREFIX_PATH="$deps")
fi
nccl_src=${NCCL_TESTS_SRC:-$top/.dev/nccl-tests}
nccl_bin=$build/nccl-tests
if [ -x "$nccl_src/build-kit/build.sh" ]; then # beside the build: its own nvcc runs
  bash "$nccl_src/build-kit/build.sh" "$nccl_bin" all_reduce all_gather sendrecv \
    > "$res/nccl-build.txt" 2>&1 &
fi
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUMEM_BUILD_LINT=OFF \
  "${cmake_extra[@]}" > "$res/build.txt" 2>&1 &&
  cmake --build "$build" -j"$(nproc)" >> "$res/build.txt" 2>&1 &&
  make -C "$build/tests/check" -j"$(nproc)" >> "$res/build.txt" 2>&1 ||
  { say "build failed"; tail -40 "$res/build.txt"; }
wait
say "build: ${SECONDS} s"
export NCCL_TESTS_BIN=$nccl_bin NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nccl=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
[ -n "$nccl" ] && export LD_LIBRARY_PATH=$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
gpumem=$build/tools/gpumem

case " $stages " in *" pools "*)
  t=$SECONDS
  mkdir -p "$res/pools"
  BUILD=$build BUDGET=${POOLS_BUDGET:-170} OUT=$res/pools timeout $((${POOLS_BUDGET:-170} + 90)) bash "$top/bench/pools-h200.sh" \
    "$res/pools" > "$res/pools/stdout.txt" 2>&1
  say ""
  say "## pools ($((SECONDS - t)) s)"
  [ -f "$res/pools/pools-h200.md" ] && cat "$res/pools/pools-h200.md" >> "$summary"
  ;;
esac

case " $stages " in *" tests "*)
  t=$SECONDS
  (cd "$build" && timeout 280 ctest -L gpu -j12 --timeout 200 --output-on-failure) \
    > "$res/ctest-full.txt" 2>&1
  say ""
  say "## gpu tests ($((SECONDS - t)) s)"
  grep -E "tests passed|tests failed" "$res/ctest-full.txt" | tee -a "$summary"
  grep -E "\*\*\*(Failed|Timeout)|Not Run" "$res/ctest-full.txt" | head -40 | tee -a "$summary"
  ;;
esac

case " $stages " in *" overhead "*)
  t=$SECONDS
  median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
  spread() { echo "$(median < "$1") ($(sort -g "$1" | head -1)..$(sort -g "$1" | tail -1))"; }
  under() {
    local mode=$1; shift
    case $mode in
      native) "$@" ;;
      check) "$gpumem" check -q -- "$@" ;;
      nocalls) "$gpumem" check -q --failed-calls=no -- "$@" ;; # what watching failures costs
      allcalls) "$gpumem" check -q --watch-calls=all -- "$@" ;;
    esac
  }
  ov=$res/overhead.txt
  modes=${CHECK_MODES:-native check} steps=${FW_STEPS:-300}
  {
    echo "# gpumem check's cost: ${RUNS:-5} runs of each, $modes alternating; medians (min..max)"
    for i in $(seq "${RUNS:-5}"); do
      for mode in $modes; do
        under $mode "$build/bench/bench_check_b" 2>&1 | awk '/^RESULT/ {print $3}' >> "$res/t.b.$mode"
      done
    done
    for mode in $modes; do echo "bench_check_b (20,000 empty launches) $mode: $(spread "$res/t.b.$mode") s"; done
    for fw in ${FRAMEWORKS:-torch jax}; do
      python3 -c "import $fw" 2>/dev/null || continue
      for i in $(seq "${FW_RUNS:-3}"); do
        for mode in $modes; do
          under $mode python3 "$top/bench/check_overhead/train_loops.py" $fw "$steps" 2>&1 |
            awk -v t="$res/t.$fw.$mode" '/^RESULT/ {print $3 >> t} /^MEDIAN/ {print $3 >> (t ".med")}'
        done
      done
      for mode in $modes; do
        echo "train_loops $fw $steps steps $mode: $(spread "$res/t.$fw.$mode") s;" \
             "median step times $steps: $(spread "$res/t.$fw.$mode.med") s"
      done
      # which calls came through gpumem check, and how often (GPUMEM_CHECK_COUNT_CALLS)
      GPUMEM_CHECK_COUNT_CALLS=1 "$gpumem" check -q -- python3 \
        "$top/bench/check_overhead/train_loops.py" $fw "$steps" 2>&1 | grep -A12 'CALLS SEEN'
    done
    if [ -x "$nccl_bin/all_reduce_perf" ]; then
      for i in $(seq "${FW_RUNS:-3}"); do
        for mode in $modes; do
          under $mode "$nccl_bin/all_reduce_perf" -b 64M -e 256M -f 2 -g 1 -n 40 2>&1 |
            awk '/^ +[0-9]+ +[0-9]+ / {v = $7} END {if (v != "") print v}' >> "$res/t.ar.$mode"
        done
      done
      for mode in $modes; do echo "all_reduce_perf algbw at 256 MiB $mode: $(spread "$res/t.ar.$mode") GB/s"; done
    fi
  } > "$ov" 2>&1
  rm -f "$res"/t.*
  say ""
  say "## overhead ($((SECONDS - t)) s)"
  cat "$ov" >> "$summary"
  ;;
esac

tar -czf "$out/results.tar.gz" -C "$res" . 2>/dev/null
say ""
say "total: ${SECONDS} s"
cat "$summary"
