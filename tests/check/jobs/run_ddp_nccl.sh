#!/usr/bin/env bash
# gpumem check around a DistributedDataParallel job on NCCL (gpu tests check_job_ddp_nccl*):
#   run_ddp_nccl.sh clean|leak GPUMEM SRC_DIR
# torchrun starts one rank per GPU (up to 2; NCCL runs one rank per GPU, so one GPU gives a
# one-rank job). clean: every rank's report has no error. leak: the last rank leaks 32 MiB
# (ddp_nccl.py's GPUMEM_TEST_LEAK_RANK), which its report has as its only error, labelled with
# its rank; every other rank is clean; --error-exitcode=9 applies.
# Exit status: 0 as expected, 1 not, 77 skipped: no GPU, or no torch / torchrun.
set -uo pipefail
mode=$1 gpumem=$2 src=$3
skip() { echo "SKIP: $*"; exit 77; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$gpus" -ge 1 ] || skip "no GPU"
command -v torchrun >/dev/null 2>&1 || skip "no torchrun"
python3 -c "import torch.distributed as d; assert d.is_nccl_available()" >/dev/null 2>&1 ||
  skip "python3's torch has no NCCL"
n=$((gpus < 2 ? gpus : 2))
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
for f in fails:
    print("FAIL:", f)
if not fails:
    print(f"ok: ddp_nccl {mode}: {n} rank(s)" + (f", the leak found in rank {leaker} alone" if leaker is not None else ", all clean"))
sys.exit(1 if fails else 0)
PYTHON
