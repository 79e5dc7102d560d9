#!/bin/sh
# `gpumem check` of a program that forks and execs workers (check_multi.c): one report per
# process, then one summary line per process (the launcher apart), the total, the total by
# device, and each process that failed.
gpumem=$1 prog=$2
# A stand-in driver (tests/fake_libcuda.c): `gpumem check` runs only where a driver loads.
GPUMEM_LIBCUDA=$3
export GPUMEM_LIBCUDA
# Not a rank of a parallel job (a Slurm job's SLURM_PROCID, say): reports as for a program alone.
unset RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(cd "$tmp" && GPUMEM_CHECK_STACKS=0 "$gpumem" check --log-file="$tmp/log.%p" -- "$prog" 2>&1)
rc=$?
printf '%s\n' "$out"
fails=0
want() {
  if ! printf '%s\n' "$out" | grep -qE -- "$1"; then echo "FAIL: no line matching: $1"; fails=$((fails + 1)); fi
}
# The launcher allocated nothing: listed apart, not counted.
want "^gpumem check: 3 processes checked, each with its report above:$"
want "^gpumem check:   pid [0-9]+ \(.*check_multi\): launcher, no CUDA memory allocated; not counted$"
want "^gpumem check:   pid [0-9]+ \(.*check_multi worker 1\): 1 error \(1 leak, 1,048,576 bytes\), exited 1$"
want "^gpumem check:   pid [0-9]+ \(.*check_multi worker 2\): 2 errors \(2 leaks, 2,097,152 bytes\), exited 2$"
want "^gpumem check:   pid [0-9]+ \(.*check_multi worker 3\): 3 errors \(3 leaks, 3,145,728 bytes\), exited 3$"
want "^gpumem check: total: 6 errors \(6 leaks, 6,291,456 bytes\) in 3 processes$"
# Each worker that failed, with its status.
want "^gpumem check: pid [0-9]+ \(.*check_multi worker 2\) exited with status 2$"
# One worker per device: the total by device.
want "^gpumem check: device 0: 1 leak \(1,048,576 bytes\) in 1 process, 1 allocation made, largest peak of one process 1.0 MiB$"
want "^gpumem check: device 1: 2 leaks \(2,097,152 bytes\) in 1 process, 2 allocations made, largest peak of one process 2.0 MiB$"
want "^gpumem check: device 2: 3 leaks \(3,145,728 bytes\) in 1 process, 3 allocations made, largest peak of one process 3.0 MiB$"
[ "$rc" -eq 0 ] || { echo "FAIL: exit status $rc, not the program's 0"; fails=$((fails + 1)); }
# One report each: the launcher's log, and the workers' (their pids appended by %p).
n=$(ls "$tmp" | grep -c '^log\.')
[ "$n" -eq 4 ] || { echo "FAIL: $n logs, not 4"; fails=$((fails + 1)); }
grep -l "ERROR SUMMARY: 3 errors (3 leaks)" "$tmp"/log.* >/dev/null || { echo "FAIL: no worker 3 report"; fails=$((fails + 1)); }
# A launcher that used no CUDA itself: said so, with the workers' lines.
out=$(cd "$tmp" && GPUMEM_CHECK_STACKS=0 "$gpumem" check --log-file="$tmp/nocuda.%p" -- "$prog" nocuda 2>&1)
printf '%s\n' "$out"
want "^gpumem check: 3 processes checked, each with its report above:$"
want "^gpumem check: .*check_multi \(pid [0-9]+\) used no CUDA; 3 processes it started were checked, each with its report above$"
[ "$fails" -eq 0 ] && echo "check multi: ok"
[ "$fails" -eq 0 ]
