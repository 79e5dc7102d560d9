#!/usr/bin/env bash
# What `gpumem check` costs Python frameworks' training loops: runs train_loops.py for JAX,
# PyTorch and CuPy (each one python3 can import) natively and under `gpumem check`, alternating,
# N times each, and writes a markdown table of the medians of the loops' own times (after
# warm-up) and of the whole processes' wall times, with the overheads.
#
#   bench/check_overhead/frameworks.sh GPUMEM OUT.md [--runs N] [--steps S]  (N 5, S 200)
#
# GPUMEM is the built `gpumem` command (BUILD/tools/gpumem). The report records the date, the
# GPU and driver, and the git commit. Needs a GPU: without one it says so and exits 77.
set -uo pipefail
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
gpumem=$1 out=$2
shift 2
runs=5 steps=200
while [ $# -gt 0 ]; do
  case $1 in
    --runs) [ $# -ge 2 ] || usage; runs=$2; shift ;;
    --steps) [ $# -ge 2 ] || usage; steps=$2; shift ;;
    *) usage ;;
  esac
  shift
done
case "$runs$steps" in *[!0-9]*) echo "frameworks.sh: --runs and --steps take numbers" >&2; exit 2 ;; esac
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "frameworks.sh: no GPU here; nothing measured" >&2; exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
script=$here/train_loops.py
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-fwbench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
one() { # one FRAMEWORK MODE RUN: appends "loop wall" to $tmp/FRAMEWORK.MODE
  local fw=$1 mode=$2 log=$tmp/$1.$2.$3.log t0 t1
  t0=$(date +%s.%N)
  if [ "$mode" = native ]; then
    python3 "$script" "$fw" "$steps" >"$log" 2>&1
  else
    "$gpumem" check -q --log-file="$tmp/$fw.$3.check.%p" -- python3 "$script" "$fw" "$steps" >"$log" 2>&1
  fi
  local rc=$?
  t1=$(date +%s.%N)
  local loop
  loop=$(awk -v n="${fw}_train" '$1 == "RESULT" && $2 == n {print $3}' "$log")
  if [ $rc -ne 0 ] || [ -z "$loop" ]; then
    echo "frameworks.sh: $fw ($mode) failed (exit $rc):" >&2; tail -5 "$log" >&2; return 1
  fi
  echo "$loop $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')" >>"$tmp/$fw.$mode"
}

{
  echo "# gpumem check on framework training loops ($steps steps, medians of $runs runs)"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown),"
  echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(nproc) CPUs."
  echo
  echo "| framework | loop native (s) | loop under check (s) | overhead | process native (s) | process under check (s) |"
  echo "|---|---|---|---|---|---|"
} >"$out"
for fw in jax torch cupy; do
  if ! python3 -c "import $fw" >/dev/null 2>&1; then
    echo "| $fw | not installed | | | | |" >>"$out"; continue
  fi
  echo "frameworks.sh: $fw, $runs runs each way" >&2
  ok=1
  for r in $(seq "$runs"); do
    one "$fw" native "$r" || ok=0
    one "$fw" check "$r" || ok=0
  done
  if [ $ok -eq 0 ]; then echo "| $fw | failed: see stderr | | | | |" >>"$out"; continue; fi
  ln=$(cut -d' ' -f1 "$tmp/$fw.native" | median); lc=$(cut -d' ' -f1 "$tmp/$fw.check" | median)
  wn=$(cut -d' ' -f2 "$tmp/$fw.native" | median); wc=$(cut -d' ' -f2 "$tmp/$fw.check" | median)
  pct=$(awk -v c="$lc" -v n="$ln" 'BEGIN {printf "%.1f", (c - n) * 100 / n}')
  printf '| %s | %.3f | %.3f | %+.1f %% | %.2f | %.2f |\n' "$fw" "$ln" "$lc" "$pct" "$wn" "$wc" >>"$out"
  echo "  runs ($fw, loop seconds): native $(cut -d' ' -f1 "$tmp/$fw.native" | tr '\n' ' '); check $(cut -d' ' -f1 "$tmp/$fw.check" | tr '\n' ' ')" >>"$tmp/runs"
done
{ echo; echo "Each run's loop time:"; echo; sed 's/^/- /' "$tmp/runs" 2>/dev/null; } >>"$out"
cat "$out"
