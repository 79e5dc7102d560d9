#!/usr/bin/env bash
# gpumem check on real programs of the GPU stack, on a GPU machine, in one go (about 8 minutes
# on an H200 with 16 cores):
#   1. builds gpumem (check), the planted-bug programs and nccl-tests (from NCCL_TESTS_SRC, a
#      copy of nccl-tests' sources with a build-kit/build.sh that builds them against the NCCL
#      in PyTorch's wheel);
#   2. runs the gpu tests of gpumem check (ctest -L gpu -R '^check_'), nccl-tests and the DDP
#      job on NCCL among them;
#   3. a census of the CUDA calls that fail in real programs (nccl-tests with NCCL's VMM buffers
#      and without, a DDP job on NCCL, PyTorch, CuPy and JAX training loops), each under
#      `gpumem check --failed-calls=note`: call, status, count, the first frame of the program;
#   4. what checking costs: bench_check_a (cudaMalloc + kernel + cudaFree) and bench_check_b
#      (empty launches) natively, under gpumem check and under --failed-calls=no; nccl-tests'
#      all_reduce_perf bus bandwidth natively and under gpumem check; N runs each, alternating.
#   bench/check-real-h200.sh [BUILD_DIR]     (writes into $OUT, default ./check-real-out)
# Variables: RUNS (5), FW_RUNS (RUNS) and FW_MODES ("native check all no") for the frameworks,
# CTEST_REGEX (^check_) for the tests of stage 2.
# Optional libraries: .dev/deps from scripts/gpu-deps is used when present.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$top/build-real}") # absolute: tests and tools run from other folders
out=${OUT:-$PWD/check-real-out}
runs=${RUNS:-5}
nccl_src=${NCCL_TESTS_SRC:-$top/.dev/nccl-tests}
mkdir -p "$out"
SECONDS=0
stage() { echo "== $* (${SECONDS} s)"; }
deps=$top/.dev/deps
cmake_extra=()
if [ -d "$deps" ]; then
  export PKG_CONFIG_PATH=$deps/lib/pkgconfig LD_LIBRARY_PATH=$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  cmake_extra=(-DCMAKE_PREFIX_PATH="$deps")
fi
jobs=$(nproc)
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  git -C "$top" rev-parse --short HEAD 2>/dev/null || echo "commit unknown"
  python3 -c 'import torch; print("torch", torch.__version__)' 2>/dev/null
} > "$out/machine.txt" 2>&1

stage "1. build"
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUMEM_BUILD_LINT=OFF \
  "${cmake_extra[@]}" > "$out/build.txt" 2>&1 &&
  cmake --build "$build" -j"$jobs" --target gpumem_tool gpumem_check bench_check_a bench_check_b \
    >> "$out/build.txt" 2>&1 &&
  make -C "$build/tests/check" -j"$jobs" >> "$out/build.txt" 2>&1 ||
  { echo "build failed"; tail -30 "$out/build.txt"; exit 1; }
gpumem=$build/tools/gpumem
nccl_bin=$build/nccl-tests
if [ -x "$nccl_src/build-kit/build.sh" ]; then
  bash "$nccl_src/build-kit/build.sh" "$nccl_bin" all_reduce all_gather sendrecv \
    > "$out/nccl-build.txt" 2>&1 || echo "nccl-tests did not build (nccl-build.txt)"
fi
export NCCL_TESTS_BIN=$nccl_bin NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nccl=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
[ -n "$nccl" ] && export LD_LIBRARY_PATH=$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

stage "2. gpu tests of gpumem check"
(cd "$build" && timeout 330 ctest -L gpu -R "${CTEST_REGEX:-^check_}" -j12 --timeout 240 --output-on-failure) \
  > "$out/ctest-full.txt" 2>&1
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Skipped\)" "$out/ctest-full.txt" | tail -60 \
  > "$out/ctest.txt"
# The output of each failed test, cut to what fits.
awk '/^[0-9]+\/[0-9]+ Test +#[0-9]+: .*\*\*\*(Failed|Timeout)/{p=1} /^ +Start /{p=0} p' \
  "$out/ctest-full.txt" | cut -c1-400 | head -1500 >> "$out/ctest.txt"

stage "3. census of failed calls"
census() { # census NAME ARGS...: the program under gpumem check --failed-calls=note
  local name=$1; shift
  local dir=$out/census-tmp/$name
  mkdir -p "$dir"
  (cd "$dir" && timeout 150 "$gpumem" check --failed-calls=note --json="$dir/r.%p.json" -- "$@") \
    > "$dir/out.txt" 2>&1
  python3 - "$name" "$dir" <<'PYTHON' >> "$out/census.txt"
import glob, json, os, sys
name, d = sys.argv[1], sys.argv[2]
for path in sorted(glob.glob(os.path.join(d, "r.*.json"))):
    doc = json.load(open(path))
    errs = doc.get("summary", {}).get("errors")
    print(f"## {name} (pid {doc.get('pid')}, rank {doc.get('rank', '-')}): {errs} errors, "
          f"status {doc.get('status')}, peak {doc.get('peak')}")
    for f in doc.get("findings", []):
        st = f.get("stack") or f.get("alloc_stack") or []
        mods = [fr for fr in st if fr.get("module")]
        prog = next((fr for fr in st if fr.get("file")), mods[0] if mods else {})
        lib = os.path.basename(str(mods[0].get("module"))) if mods else "?"
        print(f"  {f.get('kind')} {f.get('call') or f.get('alloc_call')} {f.get('error', '')} "
              f"x{f.get('count', 1)} {'(suppressed)' if f.get('suppressed') else ''} first frame "
              f"{lib}:{(st[0].get('function') if st else '?')} program {prog.get('function')} "
              f"{os.path.basename(str(prog.get('file')))}:{prog.get('line')}")
PYTHON
}
rm -f "$out/census.txt"
if [ -x "$nccl_bin/all_reduce_perf" ]; then
  NCCL_CUMEM_ENABLE=1 census all_reduce_cumem "$nccl_bin/all_reduce_perf" -b 8 -e 16M -f 4 -g 1
  NCCL_CUMEM_ENABLE=0 census all_reduce_nocumem "$nccl_bin/all_reduce_perf" -b 8 -e 16M -f 4 -g 1
fi
census ddp_nccl torchrun --standalone --nproc_per_node=1 "$top/tests/check/jobs/ddp_nccl.py"
census torch_train python3 "$top/tests/check/frameworks/torch_train.py"
census cupy_train python3 "$top/tests/check/frameworks/cupy_train.py"
census jax python3 "$top/bench/check_overhead/train_loops.py" jax 20
rm -rf "$out/census-tmp"

stage "4. what checking costs"
median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
spread() { echo "$(median < "$1") ($(sort -g "$1" | head -1)..$(sort -g "$1" | tail -1))"; }
# One run of a command in a mode: native, check (the default), all (--watch-calls=all), no
# (--failed-calls=no: the memory calls only, as before failed calls were watched).
under() {
  local mode=$1; shift
  case $mode in
    native) "$@" ;;
    check) "$gpumem" check -q -- "$@" ;;
    all) "$gpumem" check -q --watch-calls=all -- "$@" ;;
    no) "$gpumem" check -q --failed-calls=no -- "$@" ;;
  esac
}
modes=(native check all no)
{
  echo "# what checking costs: $runs runs of each, modes alternating; medians (min..max)"
  echo "# modes: native; check (default); all (--watch-calls=all); no (--failed-calls=no)"
  for p in a b; do
    for mode in "${modes[@]}"; do : > "$out/t.$p.$mode"; done
    for i in $(seq "$runs"); do
      for mode in "${modes[@]}"; do
        under $mode "$build/bench/bench_check_$p" 2>&1 | awk '/^RESULT/ {print $3}' >> "$out/t.$p.$mode"
      done
    done
    for mode in "${modes[@]}"; do echo "bench_check_$p $mode: $(spread "$out/t.$p.$mode") s"; done
  done
  fwmodes=(${FW_MODES:-native check all no})
  for fw in torch cupy jax; do
    python3 -c "import $fw" 2>/dev/null || continue
    for mode in "${fwmodes[@]}"; do : > "$out/t.$fw.$mode"; done
    for i in $(seq "${FW_RUNS:-$runs}"); do
      for mode in "${fwmodes[@]}"; do
        under $mode python3 "$top/bench/check_overhead/train_loops.py" $fw 200 2>&1 |
          awk '/^RESULT/ {print $3}' >> "$out/t.$fw.$mode"
      done
    done
    for mode in "${fwmodes[@]}"; do echo "train_loops $fw $mode: $(spread "$out/t.$fw.$mode") s"; done
  done
  if [ -x "$nccl_bin/all_reduce_perf" ]; then
    under native "$nccl_bin/all_reduce_perf" -b 64M -e 256M -f 2 -g 1 -n 40 > "$out/allreduce-native.txt" 2>&1
    for mode in native check; do : > "$out/t.ar.$mode"; done
    for i in $(seq "$runs"); do
      for mode in native check; do
        under $mode "$nccl_bin/all_reduce_perf" -b 64M -e 256M -f 2 -g 1 -n 40 2>&1 |
          awk '/^ +[0-9]+ +[0-9]+ / {v = $7} END {if (v != "") print v}' >> "$out/t.ar.$mode"
      done
    done
    # One GPU: the bus bandwidth is 0 by definition (2(n-1)/n of the algorithm's); the
    # out-of-place algorithm bandwidth of the largest size (256 MiB) is what is compared.
    for mode in native check; do echo "all_reduce_perf algbw 256M $mode: $(spread "$out/t.ar.$mode") GB/s"; done
  fi
} > "$out/overhead.txt" 2>&1
rm -f "$out"/t.*

stage "done"
cat "$out/machine.txt"
cat "$out/overhead.txt"
grep -E "tests passed|tests failed" "$out/ctest.txt"
grep -c "Failed\|Timeout" "$out/ctest.txt"
