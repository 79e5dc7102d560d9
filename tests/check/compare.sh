#!/usr/bin/env bash
# Runs each program of tests/check/progs under `gpumem check` and under compute-sanitizer's
# leak check, and writes a markdown page with the two outputs side by side, per program, below
# the bugs the program plants (its expect lines). It builds nothing.
#
#   tests/check/compare.sh BUILD_DIR OUT.md [--runtime static|shared] [PROGRAM...]
#
# PROGRAMs (names of progs/ without extension) limit the page to those; default: every one.
# BUILD_DIR must hold tools/gpumem and tests/check/check_<prog>_<runtime> (default static,
# nvcc's default runtime). compute-sanitizer is taken from $COMPUTE_SANITIZER, else PATH, else
# the toolkit that BUILD_DIR was configured with, else /usr/local/cuda/bin. The page records the
# date, the machine, the GPU and driver, compute-sanitizer's version and the git commit.
set -uo pipefail

usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
build=$1 out=$2
shift 2
runtime=static
only=()
while [ $# -gt 0 ]; do
  case $1 in
    --runtime) [ $# -ge 2 ] || usage; runtime=$2; shift ;;
    -*) usage ;;
    *) only+=("$1") ;;
  esac
  shift
done
case $runtime in static|shared) ;; *) usage ;; esac

# The programs run in a scratch folder: the build folder must be an absolute path there.
abs=$(cd "$build" 2>/dev/null && pwd) || { echo "compare.sh: no folder $build" >&2; exit 2; }
build=$abs
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
gpumem=$build/tools/gpumem
if [ ! -x "$gpumem" ]; then
  echo "compare.sh: $gpumem not found; build it first: cmake --build $build" >&2
  exit 1
fi

sanitizer=${COMPUTE_SANITIZER:-}
if [ -z "$sanitizer" ]; then
  sanitizer=$(command -v compute-sanitizer || true)
fi
if [ -z "$sanitizer" ] && [ -f "$build/CMakeCache.txt" ]; then
  bindir=$(sed -n 's/^CUDAToolkit_BIN_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")
  [ -x "$bindir/compute-sanitizer" ] && sanitizer=$bindir/compute-sanitizer
fi
if [ -z "$sanitizer" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  sanitizer=/usr/local/cuda/bin/compute-sanitizer
fi
if [ -z "$sanitizer" ]; then
  echo "compare.sh: compute-sanitizer not found; set COMPUTE_SANITIZER to its path" >&2
  exit 1
fi

gpu=unknown driver=unknown
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)
  driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)
fi
# SOURCE_COMMIT names the commit where the tree was copied without its history.
commit=${SOURCE_COMMIT:-$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)}
if [ -z "${SOURCE_COMMIT:-}" ] && [ "$commit" != unknown ] && [ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  commit="$commit (with uncommitted changes to tracked files)"
fi
sanitizer_version=$("$sanitizer" --version 2>&1 | grep -i version | head -n1)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# fenced FILE: the file in a fenced block, with any ``` inside it defused.
fenced() {
  printf '\n```\n'
  # shellcheck disable=SC2016 # the backquotes are the text to match, not an expansion
  sed 's/^```/` ``/' "$1"
  printf '```\n\n'
}

{
  echo "# gpumem check and compute-sanitizer on the planted bugs"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- machine: $(uname -n), $(uname -sr)"
  echo "- GPU: $gpu, driver $driver"
  echo "- compute-sanitizer: ${sanitizer_version:-unknown} ($sanitizer)"
  echo "- gpumem commit: $commit"
  if [ ${#only[@]} -gt 0 ]; then
    echo "- programs: ${only[*]} (of tests/check/progs), built with the $runtime CUDA runtime (-g -lineinfo -O0)"
  else
    echo "- programs: tests/check/progs, built with the $runtime CUDA runtime (-g -lineinfo -O0)"
  fi
  echo "- commands: \`gpumem check --leak-check=full -- PROG\` and"
  echo "  \`compute-sanitizer --leak-check full --error-exitcode 0 PROG\`; each cell is"
  echo "  stdout and stderr together, then the exit status"
  echo
} >"$out.tmp"

status=0
for src in "$here"/progs/*.cu "$here"/progs/*.c; do
  name=$(basename "$src")
  name=${name%.*}
  if [ ${#only[@]} -gt 0 ] && [[ " ${only[*]} " != *" $name "* ]]; then
    continue
  fi
  prog=$build/tests/check/check_${name}_$runtime
  if [ ! -x "$prog" ]; then
    echo "compare.sh: $prog not found; skipped" >&2
    status=1
    continue
  fi
  echo "compare.sh: $name" >&2
  (cd "$tmp" && timeout 300 "$gpumem" check --leak-check=full -- "$prog") >"$tmp/gpumem.txt" 2>&1
  echo "[exit status $?]" >>"$tmp/gpumem.txt"
  (cd "$tmp" && timeout 300 "$sanitizer" --leak-check full --error-exitcode 0 "$prog") \
    >"$tmp/sanitizer.txt" 2>&1
  echo "[exit status $?]" >>"$tmp/sanitizer.txt"
  {
    echo "## $name"
    echo
    expected=$(sed -n '/^\/\//!q; s|^// \(expect[a-z-]*:.*\)|\1|p' "$src")
    if [ -n "$expected" ]; then
      printf '%s\n' "$expected" | sed 's/^/    /'
    else
      echo "    (no bugs planted: no findings expected)"
    fi
    echo
    echo "<table><tr><th>gpumem check</th><th>compute-sanitizer</th></tr>"
    echo "<tr><td valign=\"top\">"
    fenced "$tmp/gpumem.txt"
    echo "</td><td valign=\"top\">"
    fenced "$tmp/sanitizer.txt"
    echo "</td></tr></table>"
    echo
  } >>"$out.tmp"
done
mv "$out.tmp" "$out"
echo "compare.sh: wrote $out" >&2
exit $status
