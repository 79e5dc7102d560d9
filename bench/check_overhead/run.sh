#!/usr/bin/env bash
# What `gpumem check` and compute-sanitizer cost a program: runs bench_check_a, _b and _c of an
# existing build natively, under `gpumem check` and under `compute-sanitizer --leak-check full`,
# N times each, and writes a markdown report of the medians and the overheads. It builds nothing.
#
#   bench/check_overhead/run.sh BUILD_DIR OUT.md [--runs N] [--no-sanitizer]  (N: default 5)
#
# BUILD_DIR must hold bench/bench_check_{a,b,c} and tools/gpumem, e.g. from
#   cmake --build BUILD_DIR --target bench_check_a bench_check_b bench_check_c gpumem_tool
# Each program times its own loop (after a warm-up) and prints "RESULT name seconds"; start-up
# and the checkers' exit reports are not in the numbers. compute-sanitizer is taken from
# $COMPUTE_SANITIZER, else PATH, else the toolkit BUILD_DIR was configured with, else
# /usr/local/cuda/bin; without one, or with --no-sanitizer, its column is left out. The report
# records the date, the machine, the GPU and driver, and the git commit.
set -uo pipefail

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
build=$1 out=$2
shift 2
runs=5 no_sanitizer=0
while [ $# -gt 0 ]; do
  case $1 in
    --runs) [ $# -ge 2 ] || usage; runs=$2; shift ;;
    --no-sanitizer) no_sanitizer=1 ;;
    *) usage ;;
  esac
  shift
done
case $runs in ''|*[!0-9]*|0) echo "run.sh: --runs takes a positive number" >&2; exit 2 ;; esac

# The programs run in a scratch folder: the build folder must be an absolute path there.
abs=$(cd "$build" 2>/dev/null && pwd) || { echo "run.sh: no folder $build" >&2; exit 2; }
build=$abs
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
gpumem=$build/tools/gpumem
programs=(a b c)
for p in "${programs[@]}"; do
  if [ ! -x "$build/bench/bench_check_$p" ]; then
    echo "run.sh: $build/bench/bench_check_$p not found; build it first:" >&2
    echo "  cmake --build $build --target bench_check_a bench_check_b bench_check_c gpumem_tool" >&2
    exit 1
  fi
done
if [ ! -x "$gpumem" ] || ! "$gpumem" check --help >/dev/null 2>&1; then
  echo "run.sh: $gpumem has no check command; build gpumem_tool first" >&2
  exit 1
fi

sanitizer=${COMPUTE_SANITIZER:-}
[ -n "$sanitizer" ] || sanitizer=$(command -v compute-sanitizer || true)
if [ -z "$sanitizer" ] && [ -f "$build/CMakeCache.txt" ]; then
  bindir=$(sed -n 's/^CUDAToolkit_BIN_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")
  [ -x "$bindir/compute-sanitizer" ] && sanitizer=$bindir/compute-sanitizer
fi
if [ -z "$sanitizer" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  sanitizer=/usr/local/cuda/bin/compute-sanitizer
fi
modes=(native check)
if [ $no_sanitizer -eq 1 ]; then
  sanitizer=
  echo "run.sh: --no-sanitizer: compute-sanitizer's column is left out" >&2
elif [ -n "$sanitizer" ]; then
  modes+=(sanitizer)
else
  echo "run.sh: compute-sanitizer not found: its column is left out" >&2
fi

gpu=unknown driver=unknown
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -n1)
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)
fi
# SOURCE_COMMIT names the commit where the tree was copied without its history.
commit=${SOURCE_COMMIT:-$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ -z "${SOURCE_COMMIT:-}" ] && [ "$commit" != unknown ] && [ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit (with uncommitted changes to tracked files)"
fi
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n1)
sanitizer_version=
[ -z "$sanitizer" ] || sanitizer_version=$("$sanitizer" --version 2>&1 | grep -i version | head -n1)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-check-overhead.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run MODE PROGRAM LOG: one run; prints the program's RESULT name and seconds.
run() {
  local mode=$1 exe=$2 log=$3
  case $mode in
    native) (cd "$tmp" && timeout 600 "$exe") ;;
    check) (cd "$tmp" && timeout 600 "$gpumem" check --leak-check=full -- "$exe") ;;
    sanitizer) (cd "$tmp" && timeout 600 "$sanitizer" --leak-check full "$exe") ;;
  esac >"$log" 2>&1
  local rc=$?
  local line
  line=$(grep -m1 '^RESULT ' "$log" || true)
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    echo "run.sh: $mode $(basename "$exe") failed (exit status $rc); its output:" >&2
    cat "$log" >&2
    return 1
  fi
  echo "${line#RESULT }"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

status=0
declare -A med name
for p in "${programs[@]}"; do
  for mode in "${modes[@]}"; do
    : >"$tmp/$p.$mode.times"
    for ((i = 1; i <= runs; i++)); do
      echo "run.sh: bench_check_$p, $mode, run $i of $runs" >&2
      if r=$(run "$mode" "$build/bench/bench_check_$p" "$tmp/$p.$mode.$i.log"); then
        name[$p]=${r% *}
        echo "${r##* }" >>"$tmp/$p.$mode.times"
      else
        status=1
      fi
    done
    if [ -s "$tmp/$p.$mode.times" ]; then
      med[$p.$mode]=$(median <"$tmp/$p.$mode.times")
    else
      med[$p.$mode]=
    fi
  done
done

# overhead NATIVE OTHER: "+12.3 %" (or "x4.5" when over 10 times slower), "-" without both.
overhead() {
  if [ -z "$1" ] || [ -z "$2" ]; then echo "-"; return; fi
  awk -v n="$1" -v o="$2" 'BEGIN {
    if (n <= 0) { print "-"; exit }
    r = o / n
    if (r >= 10) printf "x%.1f", r; else printf "%+.1f %%", (r - 1) * 100 }'
}

describe() {
  case $1 in
    a) echo "20 000 x (cudaMalloc 4 KiB, small kernel, cudaFree)" ;;
    b) echo "20 000 tiny kernel launches, one synchronize" ;;
    c) echo "100 scaled copies of 64 MiB (memory-bound kernel)" ;;
  esac
}

{
  echo "# Overhead of gpumem check and compute-sanitizer"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(uname -n), ${cpu:-$(uname -m)}, $(nproc) cores, $(uname -sr)"
  echo "- GPU: $gpu, driver $driver"
  if [ $no_sanitizer -eq 1 ]; then
    echo "- compute-sanitizer: not run (--no-sanitizer)"
  else
    echo "- compute-sanitizer: ${sanitizer_version:-not found}"
  fi
  echo "- gpumem commit: $commit"
  echo "- runs: $runs per program and mode; the median of each; overhead against native."
  echo "  \`gpumem check --leak-check=full -- PROG\`; \`compute-sanitizer --leak-check full PROG\`"
  echo "  (memcheck, its default tool). Times are the programs' own loops, after a warm-up."
  echo
  header="| program | what | native (s) | gpumem check (s) | overhead |"
  rule="|---|---|---:|---:|---:|"
  if [ -n "$sanitizer" ]; then
    header="$header compute-sanitizer (s) | overhead |"
    rule="$rule---:|---:|"
  fi
  echo "$header"
  echo "$rule"
  for p in "${programs[@]}"; do
    n=${med[$p.native]} c=${med[$p.check]}
    row="| bench_check_$p (${name[$p]:-?}) | $(describe "$p") | ${n:--} | ${c:--} | $(overhead "$n" "$c") |"
    if [ -n "$sanitizer" ]; then
      s=${med[$p.sanitizer]}
      row="$row ${s:--} | $(overhead "$n" "$s") |"
    fi
    echo "$row"
  done
  echo
  echo "## Every run (seconds)"
  echo
  for p in "${programs[@]}"; do
    for mode in "${modes[@]}"; do
      echo "- bench_check_$p, $mode: $(tr '\n' ' ' <"$tmp/$p.$mode.times")"
    done
  done
} >"$out"
echo "run.sh: wrote $out" >&2
exit $status
