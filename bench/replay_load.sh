#!/usr/bin/env bash
# How long `gpumem bench --replay` takes to read a long replay log, for each gpumem command
# given: a made-up log of N allocations (default 400,000) of 1 byte to 1 MiB, each released
# once L (default 50,000) newer ones are live, read and written back as a log
# (`--write-log /dev/null`: the reading, no replay). Three runs each, in turn; wall seconds.
#   bench/replay_load.sh GPUMEM [GPUMEM...]      (N=... L=... to change the log)
# Needs no GPU (GPUMEM_BACKEND=sim).
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
n=${N:-400000} lag=${L:-50000}
log=$(mktemp "${TMPDIR:-/tmp}/gpumem-replay-load-XXXXXX.log")
trap 'rm -f "$log"' EXIT
awk -v n="$n" -v lag="$lag" 'BEGIN {
  srand(1); print "gpumem-replay 1"; t = 0
  for (i = 1; i <= n; i++) {
    printf "a %d %d 0 1 %d\n", i, 1 + int(rand() * 1048576), t; t += 10
    if (i > lag) { printf "f %d 1 %d\n", i - lag, t; t += 10 }
  }
  for (i = n - lag + 1; i <= n; i++) { printf "f %d 1 %d\n", i, t; t += 10 }
}' > "$log"
echo "log: $n allocations, $lag live at most, $(wc -l < "$log") lines"
for run in 1 2 3; do
  for g in "$@"; do
    s=$(date +%s.%N)
    GPUMEM_BACKEND=sim "$g" bench --replay "$log" --write-log /dev/null > /dev/null 2>&1 ||
      { echo "bench/replay_load.sh: $g could not read the log" >&2; exit 1; }
    e=$(date +%s.%N)
    echo "run $run  $g  $(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.2f s", e - s }')"
  done
done
