#!/usr/bin/env bash
# gpumem check on whole parallel jobs, on a GPU (gpu tests check_job_*):
#   torchrun      gpumem check -- torchrun --standalone --nproc_per_node=2 train_ddp.py
#                 (gloo, both ranks on GPU 0; rank 1 leaks 32 MiB)
#   mpirun_outer  gpumem check -- mpirun -np 2 APP        (APP: rank_leak.cu; rank 1 leaks)
#   mpirun_inner  mpirun -np 2 gpumem check -- APP        (a gpumem check in each rank)
#   jax           gpumem check -- python3 APP jax 20: 0 errors (APP:
#                 bench/check_overhead/train_loops.py)
# Each run writes one JSON report and one log per rank (%r). What must hold: rank 1's report
# (labelled rank 1) has the planted 32 MiB cudaMalloc leak as an error; rank 0's has no such
# leak, nothing definitely lost and no other finding (the C program's rank 0: no error at all);
# the launcher is not counted; the summary totals the ranks; --error-exitcode=9 applies.
#
#   run_jobs.sh MODE GPUMEM SRC_DIR [APP]
# Exit status: 0 as expected, 1 not, 77 skipped: no GPU, or no torch / torchrun / mpirun / jax.
set -uo pipefail
mode=$1 gpumem=$2 src=$3 app=${4:-}
skip() { echo "SKIP: $*"; exit 77; }
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  skip "no GPU"
fi
case $mode in
  torchrun)
    command -v torchrun >/dev/null 2>&1 || skip "no torchrun"
    python3 -c "import torch, torch.distributed" >/dev/null 2>&1 || skip "python3 cannot import torch" ;;
  mpirun_*) command -v mpirun >/dev/null 2>&1 || skip "no mpirun" ;;
  jax) python3 -c "import jax" >/dev/null 2>&1 || skip "python3 cannot import jax" ;;
  *) echo "usage: run_jobs.sh torchrun|mpirun_outer|mpirun_inner|jax GPUMEM SRC_DIR [APP]"; exit 2 ;;
esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-job-$mode.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset RANK LOCAL_RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID
# Open MPI refuses to run as root without these (the GPU machine's tests run as root).
mpirun=(mpirun --allow-run-as-root --oversubscribe -np 2)
export PYTHONUNBUFFERED=1
case $mode in
  torchrun)
    "$gpumem" check --error-exitcode=9 --log-file="$tmp/job.%r.log" --json="$tmp/job.%r.json" -- \
      torchrun --standalone --nproc_per_node=2 "$src/train_ddp.py" >"$tmp/out.txt" 2>&1 ;;
  mpirun_outer)
    "$gpumem" check --error-exitcode=9 --log-file="$tmp/job.%r.log" --json="$tmp/job.%r.json" -- \
      "${mpirun[@]}" "$app" >"$tmp/out.txt" 2>&1 ;;
  mpirun_inner)
    "${mpirun[@]}" "$gpumem" check --error-exitcode=9 --log-file="$tmp/job.%r.log" \
      --json="$tmp/job.%r.json" -- "$app" >"$tmp/out.txt" 2>&1 ;;
  jax)
    "$gpumem" check --json="$tmp/job.%p.json" -- python3 "$app" jax 20 >"$tmp/out.txt" 2>&1 ;;
esac
rc=$?
cat "$tmp/out.txt"
for f in "$tmp"/job.*.log; do [ -f "$f" ] && { echo "---- $(basename "$f")"; cat "$f"; }; done
echo "---- exit status $rc"
fails=0
fail() { echo "FAIL: $mode: $*"; fails=$((fails + 1)); }

if [ "$mode" = jax ]; then
  grep -q "^RESULT jax_train" "$tmp/out.txt" || fail "the JAX loop did not finish"
  ls "$tmp"/job.*.json >/dev/null 2>&1 || fail "no process of the JAX loop used CUDA (JAX on the CPU?)"
  errors=$(python3 - "$tmp" <<'PYTHON'
import glob, json, os, sys
errors = 0
for path in sorted(glob.glob(os.path.join(sys.argv[1], "job.*.json"))):
    doc = json.load(open(path))
    errors += doc["summary"]["errors"]
    for f in doc["findings"]:
        if f.get("suppressed") or f.get("error") is False:
            continue
        top = "; ".join(f"{fr['function']} ({os.path.basename(fr['module'] or '?')})"
                        for fr in f.get("alloc_stack", f.get("stack", []))[:6])
        print(f"finding: pid {doc['pid']}: {f['kind']} {f.get('leak_kind', '')} "
              f"{f.get('bytes', '')} bytes by {f.get('alloc_call', f.get('call'))}: {top}",
              file=sys.stderr)
print(errors)
PYTHON
)
  [ "$errors" = 0 ] || fail "$errors errors in the JAX training loop (findings above)"
  [ "$fails" -eq 0 ] && echo "ok: jax: a JAX training loop under gpumem check: 0 errors"
  [ "$fails" -eq 0 ]
  exit
fi

# The reports by rank: one line per rank (rank, pid, errors, planted, definite, others, reachable).
python3 - "$tmp" >"$tmp/ranks.txt" <<'PYTHON'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "job.*.json"))):
    doc = json.load(open(path))
    planted = definite = others = reachable = 0
    for f in doc["findings"]:
        if f.get("suppressed"):
            continue
        if f["kind"] != "leak":
            others += 1
        elif f.get("alloc_call") == "cudaMalloc" and f.get("bytes") == 32 << 20 and f.get("error", True):
            planted += 1
        elif f.get("leak_kind") == "definite":
            definite += 1
        else:
            reachable += f.get("bytes", 0)
            top = "; ".join(f"{fr['function']} ({os.path.basename(fr['module'] or '?')})"
                            for fr in f.get("alloc_stack", [])[:5])
            print(f"# rank {doc.get('rank')}: still reachable {f.get('bytes')} bytes by "
                  f"{f.get('alloc_call')}, referenced from {f.get('reachable_from')}: {top}",
                  file=sys.stderr)
    print(os.path.basename(path), doc.get("rank", "none"), doc["pid"], doc["summary"]["errors"],
          planted, definite, others, reachable)
PYTHON
cat "$tmp/ranks.txt"
# A launcher that starts CUDA itself (Open MPI's mpirun does, to look at the GPUs) writes a
# report of its own under norank-PID: it must hold nothing.
files=$(cut -d' ' -f1 "$tmp/ranks.txt" | grep -v '^job\.norank-' | tr '\n' ' ')
[ "$files" = "job.0.json job.1.json " ] || fail "JSON reports by rank: '$files', not job.0.json job.1.json"
while read -r file rank pid errors planted definite others reachable; do
  case $rank in
    none) [ "$errors" -eq 0 ] && [ "$planted" -eq 0 ] && [ "$definite" -eq 0 ] && [ "$others" -eq 0 ] &&
            [ "$reachable" -eq 0 ] || fail "the launcher's report $file is not empty: $errors errors"
          echo "launcher (pid $pid): an empty report of its own" ;;
    0) [ "$planted" -eq 0 ] && [ "$definite" -eq 0 ] && [ "$others" -eq 0 ] ||
         fail "rank 0 (pid $pid) is not clean: planted $planted, definitely lost $definite, other findings $others"
       if [ "$mode" != torchrun ] && [ "$errors" -ne 0 ]; then fail "rank 0 (pid $pid): $errors errors"; fi
       echo "rank 0 (pid $pid): $errors errors, $reachable bytes still reachable" ;;
    1) [ "$planted" -eq 1 ] || fail "rank 1 (pid $pid): the planted 32 MiB leak is not reported as an error"
       echo "rank 1 (pid $pid): $errors errors, the planted leak among them; $reachable bytes still reachable besides" ;;
    *) fail "$file: rank $rank" ;;
  esac
done <"$tmp/ranks.txt"
grep -qE "^==[0-9]+== gpumem check: rank 1 \(pid [0-9]+, local rank 1, from (RANK|OMPI_COMM_WORLD_RANK)\)" \
  "$tmp/job.1.log" || fail "rank 1's log does not say whose it is"
grep -qE "^==[0-9]+== ERROR SUMMARY of rank 1 \(pid [0-9]+\): [1-9][0-9]* error" "$tmp/job.1.log" ||
  fail "rank 1's log: no ERROR SUMMARY of rank 1 with errors"
if [ "$mode" = mpirun_inner ]; then
  # Each rank's own gpumem check exits 9 or 0; mpirun passes on a failure.
  [ "$rc" -ne 0 ] || fail "mpirun exited 0 though rank 1's gpumem check found errors"
else
  [ "$rc" -eq 9 ] || fail "exit status $rc, not --error-exitcode's 9"
  grep -q "^gpumem check: 2 ranks checked, each with its report above:$" "$tmp/out.txt" ||
    fail "the summary does not count 2 ranks"
  grep -qE "^gpumem check:   rank 1 \(pid [0-9]+, .*\): [1-9][0-9]* errors? \([0-9]+ leaks?, [0-9,]+ bytes\), exited 0$" \
    "$tmp/out.txt" || fail "no summary line for rank 1"
  grep -qE "^gpumem check: total: [1-9][0-9]* errors? .* in 2 ranks$" "$tmp/out.txt" ||
    fail "no total over the 2 ranks"
  if [ "$mode" = mpirun_outer ]; then
    grep -q "^gpumem check: total: 1 error (1 leak, 33,554,432 bytes) in 2 ranks$" "$tmp/out.txt" ||
      fail "the total is not rank 1's one leak of 32 MiB"
  fi
fi
[ "$fails" -eq 0 ] && echo "ok: $mode: the leak is found in rank 1, labelled rank 1; rank 0 has none"
[ "$fails" -eq 0 ]
