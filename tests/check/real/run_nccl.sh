#!/usr/bin/env bash
# gpumem check on NCCL programs (gpu tests check_nccl_*):
#   run_nccl.sh PERF CUMEM GPUMEM SRC_DIR [GPUS [RANKS]]
#     PERF: all_reduce, all_gather or sendrecv: nccl-tests' PERF_perf on GPUS GPUs (default 1),
#           a correct run, under gpumem check with NCCL_CUMEM_ENABLE=CUMEM (1: NCCL's VMM
#           buffers, its default; 0: cudaMalloc). RANKS 1 (default): one process, -g GPUS;
#           RANKS 2: `gpumem check -- mpirun -np 2`, each rank -g GPUS/2, a report per rank
#           (nccl-tests built with MPI: NCCL_TESTS_MPI_BIN names its folder, else
#           NCCL_TESTS_BIN's programs must link MPI). Must hold: 0 errors in every report (no
#           false double release of NCCL's retained cuMem handles, of one GPU's buffers mapped
#           by another, no refused handle-type probe reported), the test's own check passes
#           ("Out of bounds values : 0 OK"), with CUMEM=1 virtual memory was seen, and the
#           communicator spans the GPUS GPUs (nccl-tests lists a line per rank and GPU).
#     planted: nccl_planted.cu (this folder), built here against the same NCCL, on one GPU: its
#           planted leak and double release are found, and nothing else.
# nccl-tests is not part of gpumem: NCCL_TESTS_BIN names a folder with its built programs
# (all_reduce_perf, ...; `make` in a clone of github.com/NVIDIA/nccl-tests builds them, `make
# MPI=1` the MPI ones). NCCL itself is found as PyTorch's wheel ships it (python3 -c 'import
# nvidia.nccl'), or under NCCL_HOME. NCCL's NVLink multicast (NVLS) stays off: on machines with
# two GPUs or more it is known to fail where the GPUs' fabric does not offer it.
# Exit status: 0 as expected, 1 not, 77 skipped (no GPU, fewer than GPUS GPUs, no nccl-tests,
# no MPI build of them or no mpirun, no NCCL), with one line that says which.
set -uo pipefail
perf=$1 cumem=$2 gpumem=$3 src=$4 gpus=${5:-1} ranks=${6:-1}
skip() { echo "SKIP: $*"; exit 77; }
have=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$have" -ge 1 ] || skip "no GPU"
[ "$have" -ge "$gpus" ] || skip "check_nccl on $gpus GPUs: nvidia-smi -L lists $have"
[ "$ranks" = 1 ] || [ "$ranks" = 2 ] || { echo "run_nccl.sh: RANKS is 1 or 2, not $ranks"; exit 2; }
[ $((gpus % ranks)) -eq 0 ] || { echo "run_nccl.sh: $gpus GPUs do not split over $ranks ranks"; exit 2; }
nccl=${NCCL_HOME:-$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)}
[ -n "$nccl" ] && [ -e "$nccl/include/nccl.h" ] || skip "no NCCL (neither NCCL_HOME nor PyTorch's nvidia.nccl)"
export LD_LIBRARY_PATH=$nccl/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-nccl.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ "$perf" = planted ]; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  lib=$(cd "$nccl/lib" && ls libnccl.so* 2>/dev/null | head -n1)
  "$nvcc" -g -lineinfo -O0 -I"$nccl/include" -o "$tmp/nccl_planted" "$src/nccl_planted.cu" \
    -L"$nccl/lib" -l:"$lib" -Xlinker -rpath -Xlinker "$nccl/lib" ||
    { echo "FAIL: cannot build nccl_planted.cu"; exit 1; }
  prog=("$tmp/nccl_planted")
else
  bin=${NCCL_TESTS_BIN:-}
  [ "$ranks" = 2 ] && bin=${NCCL_TESTS_MPI_BIN:-$bin}
  [ -n "$bin" ] && [ -x "$bin/${perf}_perf" ] ||
    skip "NCCL_TESTS_BIN names no folder with nccl-tests' ${perf}_perf"
  prog=("$bin/${perf}_perf" -b 8 -e 16M -f 4 -g $((gpus / ranks)) -c 1)
  if [ "$ranks" = 2 ]; then
    command -v mpirun >/dev/null 2>&1 || skip "no mpirun"
    ldd "$bin/${perf}_perf" 2>/dev/null | grep -q 'libmpi' ||
      skip "$bin/${perf}_perf is not built with MPI (make MPI=1), so mpirun would start two 1-rank jobs"
    # Open MPI refuses to run as root without these (the GPU machine's tests run as root).
    prog=(mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_LIBRARY_PATH -x NCCL_CUMEM_ENABLE
          -x NCCL_NVLS_ENABLE "${prog[@]}")
  fi
fi
export NCCL_CUMEM_ENABLE=$cumem NCCL_NVLS_ENABLE=0
unset RANK LOCAL_RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID
json=$tmp/check.json
[ "$ranks" = 2 ] && json=$tmp/check.%r.json
(cd "$tmp" && "$gpumem" check --error-exitcode=9 --json="$json" -- "${prog[@]}") \
  >"$tmp/out.txt" 2>&1
rc=$?
cat "$tmp/out.txt"
python3 - "$tmp" "$perf" "$cumem" "$rc" "$tmp/out.txt" "$gpus" "$ranks" <<'PYTHON'
import glob, json, os, re, sys
tmp, perf, cumem, rc, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
gpus, ranks = int(sys.argv[6]), int(sys.argv[7])
fails = []
paths = sorted(glob.glob(os.path.join(tmp, "check*.json")))
docs = []
for path in paths:
    try:
        docs.append(json.load(open(path)))
    except (OSError, ValueError) as e:
        fails.append(f"{os.path.basename(path)}: {e}")
if not docs:
    print("FAIL: no JSON report"); sys.exit(1)
# With mpirun: a report per rank (check.0.json, check.1.json), and the launcher's own, empty,
# where it starts CUDA (check.norank-PID.json).
if ranks == 2:
    got = sorted(d.get("rank") for d in docs if d.get("rank") is not None)
    if got != [0, 1]:
        fails.append(f"reports of ranks {got}, expected [0, 1]")
findings = [f for d in docs for f in d.get("findings", []) if not f.get("suppressed")]
def where(f):
    st = f.get("stack") or f.get("alloc_stack") or []
    return next((f"{fr.get('function')} {fr.get('file')}:{fr.get('line')}" for fr in st
                 if fr.get("file")), st[0].get("function") if st else "?")
for f in findings:
    print(f"finding: {f.get('kind')} {f.get('call') or f.get('alloc_call')} {f.get('error', '')} "
          f"x{f.get('count', 1)} at {where(f)}")
text = open(out, errors="replace").read()
if perf == "planted":
    kinds = sorted((f["kind"], f.get("call") or f.get("alloc_call")) for f in findings)
    want = [("double-free", "cudaFree"), ("leak", "cudaMalloc")]
    if kinds != want:
        fails.append(f"findings {kinds}, expected {want}")
    if rc != 9:
        fails.append(f"exit status {rc}, expected 9 (--error-exitcode)")
    if "nccl_planted: done" not in text:
        fails.append("the program did not finish")
else:
    if findings or rc != 0:
        fails.append(f"{len(findings)} findings and exit status {rc} for a correct run")
    if "Out of bounds values : 0 OK" not in text:
        fails.append("nccl-tests' own check did not pass")
    if cumem == "1" and not all("virtual" in d.get("peak", {}) for d in docs
                                if ranks == 1 or d.get("rank") is not None):
        fails.append("NCCL_CUMEM_ENABLE=1 but no virtual memory was seen")
    # nccl-tests lists each rank's GPU: "#  Rank  1 Group  0 Pid ... device  1 [...]".
    listed = len(re.findall(r"^#\s+Rank\s+\d+ ", text, re.M))
    if listed != gpus:
        fails.append(f"nccl-tests lists {listed} ranks, expected {gpus} (one per GPU)")
for f in fails:
    print("FAIL:", f)
if not fails:
    print(f"ok: {perf} with NCCL_CUMEM_ENABLE={cumem}, {gpus} GPU(s) in {ranks} process(es): "
          + ("its planted bugs alone" if perf == "planted" else "0 findings"))
sys.exit(1 if fails else 0)
PYTHON
