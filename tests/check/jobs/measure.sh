#!/usr/bin/env bash
# On a GPU machine: runs the gpu tests of parallel jobs (check_job_*) and looks at what a
# torchrun job leaves still reachable in each rank: each such leak's size, allocation call,
# allocating frames (function and library) and where the pointer to it was found. Writes
# OUT/check-jobs.md. About 2 minutes, at most 4.
#
#   tests/check/jobs/measure.sh BUILD OUT      (from the repository root of a built tree)
set -uo pipefail
build=$(cd "$1" && pwd) out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
md=$out/check-jobs.md
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-jobs-measure.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cmake --build "$build" --target gpumem_tool check_job_rank_leak >"$tmp/build.txt" 2>&1 ||
  { echo "build failed:"; tail -20 "$tmp/build.txt"; exit 1; }
{
  echo "# gpumem check on parallel jobs"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown),"
  echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1),"
  echo "torch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo none),"
  echo "jax $(python3 -c 'import jax; print(jax.__version__)' 2>/dev/null || echo none),"
  echo "$(command -v mpirun >/dev/null && mpirun --version 2>/dev/null | head -1 || echo 'no mpirun')."
  echo
  echo "## The gpu tests"
  echo
  (cd "$build" && timeout 150 ctest -L gpu -R '^check_job_' --output-on-failure \
    >"$out/check-jobs-ctest.txt" 2>&1)
  echo '```'
  grep -E 'Test +#|tests passed|^ok:|^FAIL|^SKIP|^rank [01] ' "$out/check-jobs-ctest.txt"
  echo '```'
  echo
  echo "(the whole output: check-jobs-ctest.txt)"
} >"$md"

# The torchrun job with every leak listed, and the still reachable ones looked at.
unset RANK LOCAL_RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID
(cd "$tmp" && timeout 80 "$build/tools/gpumem" check --log-file="$tmp/job.%r.log" \
  --json="$tmp/job.%r.json" -- torchrun --standalone --nproc_per_node=2 "$here/train_ddp.py" \
  >"$tmp/out.txt" 2>&1)
echo "exit status $?" >>"$tmp/out.txt"
cp "$tmp"/job.*.log "$tmp/out.txt" "$out/" 2>/dev/null
{
  echo
  echo "## What each rank of the torchrun job (gloo, 2 ranks on one GPU) leaves still reachable"
  echo
  echo "\`gpumem check --log-file=job.%r.log --json=job.%r.json -- torchrun --standalone"
  echo "--nproc_per_node=2 tests/check/jobs/train_ddp.py\`; gpumem check's own summary:"
  echo
  echo '```'
  grep '^gpumem check' "$tmp/out.txt"
  tail -1 "$tmp/out.txt"
  echo '```'
  echo
  python3 - "$tmp" <<'PYTHON'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "job.*.json"))):
    doc = json.load(open(path))
    s = doc["summary"]
    print(f"### rank {doc.get('rank', 'none')} (pid {doc['pid']}): {s['errors']} errors, "
          f"{s['leaked_bytes']} bytes leaked, {s['suppressed']} suppressed")
    print()
    for f in doc["findings"]:
        if f["kind"] != "leak":
            print(f"- {f['kind']} by {f.get('call')}")
            continue
        kind = f.get("leak_kind", "?")
        supp = f" (suppressed: {f['suppressed']})" if f.get("suppressed") else ""
        print(f"- {f['bytes']} bytes in {f['count']} {f.get('memory')} allocation(s) by "
              f"{f['alloc_call']}, {kind}{supp}")
        if f.get("reachable_from"):
            print(f"  - referenced from: {f['reachable_from']}")
        for fr in f.get("alloc_stack", [])[:10]:
            mod = os.path.basename(fr.get("module") or "?")
            where = f" {os.path.basename(fr['file'])}:{fr['line']}" if fr.get("file") else ""
            print(f"  - {fr.get('function')} ({mod}){where}")
    print()
PYTHON
} >>"$md" 2>&1
echo "wrote $md"
