#!/usr/bin/env bash
# Runs the benchmarks of an existing build and writes a markdown report. It builds nothing.
#
#   bench/run.sh BUILD_DIR OUTPUT.md [--quick] [--backend cuda|sim|auto] [--threads N]
#
# BUILD_DIR must hold bench/bench_registry and bench/bench_alloc, e.g. from
#   cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DGPUMEM_BUILD_LINT=OFF
#   cmake --build build-bench -j --target bench_registry bench_alloc
# --backend (default auto: cuda when nvidia-smi lists a GPU, else sim) is bench_alloc's;
# sim numbers are gpumem's overhead over the simulated device, not GPU numbers. --quick runs
# about ten times fewer iterations. The report records the date, the machine, the GPU (from
# nvidia-smi) and the git commit, then each benchmark's tables and its RESULT lines.
set -euo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
build=$1 out=$2
shift 2
quick=() backend=auto threads=()
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=(--quick) ;;
    --backend) [ $# -ge 2 ] || usage; backend=$2; shift ;;
    --threads) [ $# -ge 2 ] || usage; threads=(--threads "$2"); shift ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage ;;
  esac
  shift
done
case $backend in cuda|sim|auto) ;; *) echo "run.sh: --backend takes cuda, sim or auto" >&2; exit 2 ;; esac

reg=$build/bench/bench_registry alloc=$build/bench/bench_alloc
for exe in "$reg" "$alloc"; do
  if [ ! -x "$exe" ]; then
    echo "run.sh: $exe not found; build it first:" >&2
    echo "  cmake --build $build --target bench_registry bench_alloc" >&2
    exit 1
  fi
done

gpus=
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>/dev/null || true)
fi
if [ "$backend" = auto ]; then
  if [ -n "$gpus" ]; then backend=cuda; else backend=sim; fi
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && [ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit (with uncommitted changes to tracked files)"
fi
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n1)
[ -n "$cpu" ] || cpu=$(uname -m)
cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || echo unknown)
load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
start=$(date +%s)
echo "run.sh: bench_registry ${quick[*]:-} ${threads[*]:-}" >&2
if ! timeout 600 "$reg" "${quick[@]}" "${threads[@]}" >"$tmp/registry" 2>"$tmp/registry.err"; then
  status=1
  echo "run.sh: bench_registry failed; see the report" >&2
fi
echo "run.sh: bench_alloc $backend ${quick[*]:-}" >&2
if ! timeout 600 "$alloc" "$backend" "${quick[@]}" >"$tmp/alloc" 2>"$tmp/alloc.err"; then
  status=1
  echo "run.sh: bench_alloc failed; see the report" >&2
fi
elapsed=$(( $(date +%s) - start ))
load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)

section() { # name, file: the tables, then anything on stderr
  grep -v '^RESULT ' "$2" || true
  if [ -s "$2.err" ]; then
    printf '\n%s wrote to stderr:\n\n```\n' "$1"
    cat "$2.err"
    printf '```\n'
  fi
  echo
}

{
  echo "# gpumem benchmarks, $(date -u +%Y-%m-%d)"
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
  echo "| commit | $commit |"
  echo "| CPU | $cpu, $cores cores online, $mem memory |"
  echo "| OS | $(uname -sr) |"
  if [ -n "$gpus" ]; then
    echo "| GPU (nvidia-smi) | $(echo "$gpus" | sed 's/$/<br>/' | tr -d '\n' | sed 's/<br>$//') |"
  else
    echo "| GPU | none found (no nvidia-smi, or it lists no GPU) |"
  fi
  echo "| bench_alloc backend | $backend$([ "$backend" = sim ] && echo ': simulated device, not GPU numbers') |"
  echo "| mode | ${quick[*]:-full}$([ ${#threads[@]} -gt 0 ] && echo ", ${threads[*]}") |"
  echo "| load average before / after | $load_before / $load_after |"
  echo "| run time | ${elapsed} s |"
  echo
  section bench_registry "$tmp/registry"
  section bench_alloc "$tmp/alloc"
  echo "## Machine-readable results"
  echo
  echo '```'
  grep -h '^RESULT ' "$tmp/registry" "$tmp/alloc" || true
  echo '```'
} >"$tmp/report.md"
mkdir -p "$(dirname "$out")"
cp "$tmp/report.md" "$out"
echo "run.sh: wrote $out (${elapsed} s)" >&2
exit $status
