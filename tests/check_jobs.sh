#!/bin/sh
# `gpumem check` of parallel jobs (check_jobs.c, a stand-in torchrun and mpirun): each process's
# report and summary line labelled by its rank, %r in --log-file and --json, the launcher not
# counted, a rank killed by a signal named with it, the totals over the ranks and the exit
# status; and the other way round, a `gpumem check` in each rank (`mpirun gpumem check -- ./app`).
# usage: check_jobs.sh GPUMEM CHECK_JOBS FAKE_LIBCUDA
gpumem=$1 prog=$2
# A stand-in driver (tests/fake_libcuda.c): `gpumem check` runs only where a driver loads.
GPUMEM_LIBCUDA=$3
export GPUMEM_LIBCUDA
unset RANK LOCAL_RANK OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_LOCAL_RANK PMI_RANK MPI_LOCALRANKID \
  SLURM_PROCID SLURM_LOCALID
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
want() { # want PATTERN [FILE]: a line of the output (or of FILE) matches
  if [ -n "${2:-}" ]; then
    grep -qE -- "$1" "$2" || fail "no line matching: $1 in $2"
  elif ! printf '%s\n' "$out" | grep -qE -- "$1"; then
    fail "no line matching: $1"
  fi
}
P='pid [0-9]+'

# ---- torchrun: 5 ranks (0 clean, 1 leaks 32 MiB, 2 leaks 1 MiB and is killed by SIGSEGV, 3
# exits with status 3, 4 is killed by SIGKILL), each writing run.RANK.log and run.RANK.json.
out=$(cd "$tmp" && GPUMEM_CHECK_STACKS=0 "$gpumem" check --log-file=run.%r.log \
  --json=run.%r.json --error-exitcode=9 -- "$prog" torchrun 5 2>&1)
rc=$?
printf '%s\n' "$out"
want "^gpumem check: 4 ranks checked, each with its report above:$"
want "^gpumem check:   rank 0 \($P, .*check_jobs worker 0\): 0 errors \(0 leaks, 0 bytes\), exited 0$"
want "^gpumem check:   rank 1 \($P, .*check_jobs worker 1\): 1 error \(1 leak, 33,554,432 bytes\), exited 0$"
want "^gpumem check:   rank 2 \($P, .*check_jobs worker 2\): 1 error \(1 leak, 1,048,576 bytes\), killed by SIGSEGV$"
want "^gpumem check:   rank 3 \($P, .*check_jobs worker 3\): 0 errors \(0 leaks, 0 bytes\), exited 3$"
want "^gpumem check: total: 2 errors \(2 leaks, 34,603,008 bytes\) in 4 ranks$"
want "^gpumem check: rank 2 \($P\) killed by SIGSEGV$"
want "^gpumem check: rank 3 \($P\) exited with status 3$"
# The rank killed by SIGKILL: named, not counted.
want "^gpumem check:   rank 4 \($P, .*check_jobs worker 4\): no report$"
want "^gpumem check: rank 4 \($P\) wrote no report: it was killed by SIGKILL \(which cannot be caught\), ended by _exit\(\), or is still running; what it did with CUDA is unknown$"
# The launcher (no CUDA) is no rank and is not counted.
want "^gpumem check: .*check_jobs \($P\) used no CUDA; 4 processes it started were checked, each with its report above$"
printf '%s\n' "$out" | grep -q "launcher" && fail "a launcher that used no CUDA is listed"
# Errors in some rank: --error-exitcode.
[ "$rc" -eq 9 ] || fail "exit status $rc, not --error-exitcode's 9"
# One log and one JSON report per rank, named by %r, each saying whose it is.
names=$(cd "$tmp" && ls run.* | tr '\n' ' ')
[ "$names" = "run.0.json run.0.log run.1.json run.1.log run.2.json run.2.log run.3.json run.3.log " ] ||
  fail "files by rank: $names"
want "^==[0-9]+== gpumem check: rank 1 \($P, local rank 1, from RANK\): .*check_jobs worker 1$" "$tmp/run.1.log"
want "^==[0-9]+== ERROR SUMMARY of rank 1 \($P\): 1 error \(1 leak\), 0 suppressed$" "$tmp/run.1.log"
want "^==[0-9]+== ERROR SUMMARY of rank 0 \($P\): 0 errors \(0 leaks\), 0 suppressed$" "$tmp/run.0.log"
# The killed rank's report, written from its signal handler, says whose it is too.
want "^==[0-9]+== gpumem check: rank 2 \($P, local rank 2, from RANK\): " "$tmp/run.2.log"
want "^==[0-9]+== ERROR SUMMARY of rank 2 \($P\): 1 error \(1 leak\), 0 suppressed$" "$tmp/run.2.log"
want '"pid": [0-9]+, "rank": 1, "local_rank": 1, "rank_from": "RANK", ' "$tmp/run.1.json"
want '"pid": [0-9]+, "rank": 2, "local_rank": 2, "rank_from": "RANK", ' "$tmp/run.2.json"
want '"status": "signaled", "signal": 11' "$tmp/run.2.json"
head -1 "$tmp/run.0.log" | grep -q "rank 0" || fail "run.0.log does not start with its rank"
rm -f "$tmp"/run.*

# Without --error-exitcode: the launcher's own status (1: a rank failed).
out=$(cd "$tmp" && GPUMEM_CHECK_STACKS=0 "$gpumem" check -q --log-file=q.%r.log -- "$prog" torchrun 2 2>&1)
rc=$?
[ "$rc" -eq 0 ] || fail "exit status $rc, not the launcher's 0"
want "^gpumem check: total: 1 error \(1 leak, 33,554,432 bytes\) in 2 ranks$"
# -q: no header line, but the summary still names the rank.
head -1 "$tmp/q.1.log" | grep -q "^==[0-9]*== gpumem check: rank" && fail "-q: the header line is written"
want "^==[0-9]+== ERROR SUMMARY of rank 1 \($P\): 1 error" "$tmp/q.1.log"

# A clean job: --error-exitcode does not apply.
out=$(cd "$tmp" && GPUMEM_CHECK_STACKS=0 "$gpumem" check --error-exitcode=9 --log-file=c.%r.log -- "$prog" torchrun 1 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "a clean rank: exit status $rc, not 0"
want "used no CUDA; 1 process it started was checked, with its report above$"

# ---- mpirun: the ranks from OMPI_COMM_WORLD_RANK; files of the launcher (it initialized CUDA,
# allocated nothing) get "norank-PID" for %r, and it is listed apart, not counted.
out=$(cd "$tmp" && GPUMEM_CHECK_STACKS=0 "$gpumem" check --log-file=mpi.%r.log --trace=tr.%r.json \
  -- "$prog" mpirun 2 2>&1)
printf '%s\n' "$out"
# --trace takes %r too.
[ -s "$tmp/tr.0.json" ] && [ -s "$tmp/tr.1.json" ] || fail "no trace by rank: $(ls "$tmp")"
grep -q '"cudaMalloc"' "$tmp/tr.1.json" || fail "rank 1's trace has no cudaMalloc"
want "^gpumem check: 2 ranks checked, each with its report above:$"
want "^gpumem check:   rank 1 \($P, .*check_jobs worker 1\): 1 error \(1 leak, 33,554,432 bytes\), exited 0$"
want "^==[0-9]+== gpumem check: rank 1 \($P, local rank 1, from OMPI_COMM_WORLD_RANK\): " "$tmp/mpi.1.log"
out=$(cd "$tmp" && GPUMEM_CHECK_STACKS=0 "$gpumem" check --log-file=cu.%r.log -- "$prog" torchrun-cuda 2 2>&1)
rc=$?
printf '%s\n' "$out"
want "^gpumem check: 2 ranks checked, each with its report above:$"
want "^gpumem check:   $P \(.*check_jobs torchrun-cuda 2\): launcher, no CUDA memory allocated; not counted$"
want "^gpumem check: total: 1 error \(1 leak, 33,554,432 bytes\) in 2 ranks$"
ls "$tmp" | grep -qE '^cu\.norank-[0-9]+\.log$' || fail "no cu.norank-PID.log for the launcher: $(ls "$tmp")"
[ -f "$tmp/cu.0.log" ] && [ -f "$tmp/cu.1.log" ] || fail "no cu.0.log and cu.1.log"

# ---- `mpirun -np 2 gpumem check -- ./app`: a gpumem check in each rank, each with its report
# labelled by the rank it inherits, in files by %r; --error-exitcode in the rank with errors.
rm -f "$tmp"/*
"$prog" outer 2 "$gpumem" --log-file="$tmp/outer.%r.log" --json="$tmp/outer.%r.json" \
  --error-exitcode=9 >"$tmp/outer.out" 2>&1
rc=$?
cat "$tmp/outer.out"
[ "$rc" -eq 1 ] || fail "the launcher of gpumem checks: status $rc, not 1 (a rank's gpumem check exited 9)"
names=$(cd "$tmp" && ls outer.*.* | tr '\n' ' ')
[ "$names" = "outer.0.json outer.0.log outer.1.json outer.1.log " ] || fail "files by rank: $names"
want "^==[0-9]+== gpumem check: rank 0 \($P, local rank 0, from OMPI_COMM_WORLD_RANK\): " "$tmp/outer.0.log"
want "^==[0-9]+== ERROR SUMMARY of rank 1 \($P\): 1 error \(1 leak\), 0 suppressed$" "$tmp/outer.1.log"
want '"rank": 1, "local_rank": 1, "rank_from": "OMPI_COMM_WORLD_RANK"' "$tmp/outer.1.json"

# A rank killed by SIGKILL before its report (`mpirun gpumem check --json=k.%r.json -- ./app`):
# an earlier run's k.4.json is removed first, and the one left says killed, with the rank.
printf '{\n  "schema": "gpumem-check/1",\n  "status": "exited", "summary": {"errors": 0}}\n' >"$tmp/k.4.json"
RANK=4 "$gpumem" check --json="$tmp/k.%r.json" -- sh -c 'kill -KILL $$' >/dev/null 2>&1
rc=$?
[ "$rc" -eq 137 ] || fail "a rank killed by SIGKILL: exit status $rc, not 137"
want '"status": "killed"' "$tmp/k.4.json"
want '"rank": 4,' "$tmp/k.4.json"

# A job run again: every report an earlier run left under the run's names is gone before the
# program starts (a rank that does not run this time, or is killed before its report, must not
# leave an earlier clean report to be read as this run's), whatever rank or pid it was; a file
# that only matches the name and is no report stays. A gpumem check that is one rank of a job
# removes its own rank's files only: the others belong to other ranks' checks.
report='{\n  "schema": "gpumem-check/1",\n  "status": "exited",\n  "summary": {"errors": 0}\n}\n'
for r in 0 1 norank-77; do printf "$report" >"$tmp/again.$r.json"; done
echo "==4242== ERROR SUMMARY of rank 1 (pid 4242): 0 errors (0 leaks), 0 suppressed" >"$tmp/again.1.log"
printf "$report" >"$tmp/again.1.json.4243"
echo "my notes" >"$tmp/again.notes.json"
(unset RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID
 "$gpumem" check --json="$tmp/again.%r.json" --log-file="$tmp/again.%r.log" -- sh -c true) >/dev/null 2>&1
left=$(cd "$tmp" && ls again.* | tr '\n' ' ')
[ "$left" = "again.notes.json " ] || fail "an earlier run's reports left beside this run's: $left"
printf "$report" >"$tmp/k.3.json"
RANK=4 "$gpumem" check --json="$tmp/k.%r.json" -- sh -c true >/dev/null 2>&1
[ -e "$tmp/k.3.json" ] || fail "rank 4's gpumem check removed rank 3's report"
[ "$fails" -eq 0 ] && echo "check jobs: ok"
[ "$fails" -eq 0 ]
