#!/usr/bin/env bash
# gpumem check around a DistributedDataParallel job on NCCL (gpu tests check_job_ddp_nccl*):
#   run_ddp_nccl.sh clean|leak GPUMEM SRC_DIR [RANKS]
# torchrun starts RANKS ranks (1 or 2, default 1), one per GPU, as NCCL runs them: RANKS 2
# needs two GPUs and is skipped, with one line, where nvidia-smi lists fewer. clean: every
# rank's report has no error. leak: the last rank leaks 32 MiB (ddp_nccl.py's
# GPUMEM_TEST_LEAK_RANK), which its report has as its only error; with two ranks its log says
# whose it is (rank 1) and the other rank is clean; --error-exitcode=9 applies.
# Exit status: 0 as expected, 1 not, 77 skipped: no GPU, too few GPUs, or no torch / torchrun.
set -uo pipefail
mode=$1 gpumem=$2 src=$3 n=${4:-1}
skip() { echo "SKIP: $*"; exit 77; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$gpus" -ge 1 ] || skip "no GPU"
[ "$gpus" -ge "$n" ] || skip "a DDP job of $n ranks needs $n GPUs: nvidia-smi -L lists $gpus"
command -v torchrun >/dev/null 2>&1 || skip "no torchrun"
python3 -c "import torch.distributed as d; assert d.is_nccl_available()" >/dev/null 2>&1 ||
  skip "python3's torch has no NCCL"
[ "$n" = 1 ] || [ "$n" = 2 ] || { echo "run_ddp_nccl.sh: RANKS is 1 or 2, not $n"; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-ddp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset RANK LOCAL_RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID GPUMEM_TEST_LEAK_RANK
[ "$mode" = leak ] && export GPUMEM_TEST_LEAK_RANK=$((n - 1))
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
"$gpumem" check --error-exitcode=9 --log-file="$tmp/job.%r.log" --json="$tmp/job.%r.json" -- \
  torchrun --standalone --nproc_per_node="$n" "$src/ddp_nccl.py" >"$tmp/out.txt" 2>&1
rc=$?
cat "$tmp/out.txt"
for f in "$tmp"/job.*.log; do [ -f "$f" ] && { echo "---- $(basename "$f")"; cat "$f"; }; done
echo "---- exit status $rc"
python3 - "$tmp" "$mode" "$n" "$rc" <<'PYTHON'
import glob, json, os, sys
tmp, mode, n, rc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
fails = []
ranks = {}
for path in sorted(glob.glob(os.path.join(tmp, "job.*.json"))):
    doc = json.load(open(path))
    rank = doc.get("rank")
    errs = [f for f in doc["findings"] if not f.get("suppressed") and f.get("error") is not False
            and not f.get("note")]
    for f in errs:
        st = f.get("alloc_stack") or f.get("stack") or []
        top = "; ".join(f"{fr['function']} ({os.path.basename(fr.get('module') or '?')})" for fr in st[:5])
        print(f"rank {rank}: {f['kind']} {f.get('alloc_call') or f.get('call')} {f.get('bytes', '')} "
              f"{f.get('error', '')}: {top}")
    if rank is None:
        if errs:
            fails.append(f"{os.path.basename(path)} (no rank) has {len(errs)} errors")
        continue
    ranks[rank] = errs
if sorted(ranks) != list(range(n)):
    fails.append(f"reports of ranks {sorted(ranks)}, expected 0..{n - 1}")
leaker = n - 1 if mode == "leak" else None
for rank, errs in ranks.items():
    planted = [f for f in errs if f["kind"] == "leak" and f.get("alloc_call") == "cudaMalloc"
               and f.get("bytes") == 32 << 20]
    if rank == leaker:
        if len(planted) != 1 or len(errs) != 1:
            fails.append(f"rank {rank}: {len(errs)} errors, expected the planted leak alone")
    elif errs:
        fails.append(f"rank {rank}: {len(errs)} errors in a clean rank")
want_rc = 9 if mode == "leak" else 0
if rc != want_rc:
    fails.append(f"exit status {rc}, expected {want_rc}")
if mode == "leak" and n == 2:
    log = open(os.path.join(tmp, "job.1.log"), errors="replace").read() \
        if os.path.exists(os.path.join(tmp, "job.1.log")) else ""
    import re
    if not re.search(r"^==\d+== gpumem check: rank 1 \(pid \d+, local rank 1, from RANK\)", log, re.M):
        fails.append("rank 1's log does not say whose it is")
    if not re.search(r"^==\d+== ERROR SUMMARY of rank 1 \(pid \d+\): 1 error", log, re.M):
        fails.append("rank 1's log has no ERROR SUMMARY of rank 1 with its one error")
for f in fails:
    print("FAIL:", f)
if not fails:
    print(f"ok: ddp_nccl {mode}: {n} rank(s)" + (f", the leak found in rank {leaker} alone" if leaker is not None else ", all clean"))
sys.exit(1 if fails else 0)
PYTHON
