#!/usr/bin/env bash
# gpumem check on NCCL programs (gpu tests check_nccl_*), on one GPU:
#   run_nccl.sh PERF CUMEM GPUMEM SRC_DIR
#     PERF: all_reduce, all_gather or sendrecv: nccl-tests' PERF_perf -g 1, a correct run, under
#           gpumem check with NCCL_CUMEM_ENABLE=CUMEM (1: NCCL's VMM buffers, its default; 0:
#           cudaMalloc). Must hold: 0 errors (no false double release of NCCL's retained cuMem
#           handles, no refused handle-type probe reported), the test's own check passes
#           ("Out of bounds values : 0 OK"), and with CUMEM=1 virtual memory was seen.
#     planted: nccl_planted.cu (this folder), built here against the same NCCL: its planted leak
#           and double release are found, and nothing else.
# nccl-tests is not part of gpumem: NCCL_TESTS_BIN names a folder with its built programs
# (all_reduce_perf, ...; `make` in a clone of github.com/NVIDIA/nccl-tests builds them). NCCL
# itself is found as PyTorch's wheel ships it (python3 -c 'import nvidia.nccl'), or under
# NCCL_HOME. Exit status: 0 as expected, 1 not, 77 skipped (no GPU, no nccl-tests or NCCL).
set -uo pipefail
perf=$1 cumem=$2 gpumem=$3 src=$4
skip() { echo "SKIP: $*"; exit 77; }
nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || skip "no GPU"
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
  [ -n "$bin" ] && [ -x "$bin/${perf}_perf" ] ||
    skip "NCCL_TESTS_BIN names no folder with nccl-tests' ${perf}_perf"
  prog=("$bin/${perf}_perf" -b 8 -e 16M -f 4 -g 1 -c 1)
fi
export NCCL_CUMEM_ENABLE=$cumem NCCL_NVLS_ENABLE=0
(cd "$tmp" && "$gpumem" check --error-exitcode=9 --json="$tmp/check.json" -- "${prog[@]}") \
  >"$tmp/out.txt" 2>&1
rc=$?
cat "$tmp/out.txt"
python3 - "$tmp/check.json" "$perf" "$cumem" "$rc" "$tmp/out.txt" <<'PYTHON'
import json, sys
path, perf, cumem, rc, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
fails = []
try:
    doc = json.load(open(path))
except (OSError, ValueError) as e:
    print(f"FAIL: no JSON report: {e}"); sys.exit(1)
findings = [f for f in doc.get("findings", []) if not f.get("suppressed")]
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
    if cumem == "1" and "virtual" not in doc.get("peak", {}):
        fails.append("NCCL_CUMEM_ENABLE=1 but no virtual memory was seen")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
PYTHON
