#!/bin/sh
# Speed of `gpumem lint` on generated trees of about MB megabytes (50 by default):
#   dense  every file is CUDA memory code (the lint corpus and samples-style programs)
#   mixed  a third of the bytes is that CUDA code, the rest real host C and C++ (the
#          tree-sitter runtime and node-addon-api headers from tools/lint/node_modules),
#          as in a project where some files use CUDA
# and times linting each on one core (-j 1, pinned with taskset) and with -j JOBS.
#
# usage: bench/lint/run.sh LINT [MB] [JOBS]
#   LINT  build/tools/gpumem (then `lint` is added) or a gpumem-lint-dev binary
set -eu
lint=${1:?usage: bench/lint/run.sh LINT [MB] [JOBS]}
mb=${2:-50}
jobs=${3:-$(nproc)}
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../../tests/lint
nm=$here/../../tools/lint/node_modules
case $(basename "$lint") in gpumem) cmd="$lint lint" ;; *) cmd=$lint ;; esac
work=${TMPDIR:-/tmp}

# gen TREE CUDA_SHARE: CUDA_SHARE is the percentage of bytes that is CUDA code.
gen() {
  tree=$1 share=$2
  [ -f "$tree/.done" ] && return 0
  rm -rf "$tree"
  mkdir -p "$tree"
  cat "$src"/corpus/*.cu "$src"/samples/* > "$tree/chunk"
  chunk=$(wc -c < "$tree/chunk")
  set -- "$nm"/tree-sitter/vendor/tree-sitter/lib/src/*.c "$nm"/tree-sitter/vendor/tree-sitter/lib/src/*.h \
    "$nm"/node-addon-api/*.h
  total=0 i=0 host=0 cuda=0
  limit=$((mb * 1000000))
  while [ "$total" -lt "$limit" ]; do
    d=$tree/dir$((i / 50))
    [ -d "$d" ] || mkdir -p "$d"
    if [ "$share" -ge 100 ] || [ $((cuda * (100 - share))) -le $((host * share)) ]; then
      case $((i % 3)) in 0) ext=cu ;; 1) ext=cpp ;; *) ext=cuh ;; esac
      cp "$tree/chunk" "$d/file$i.$ext"
      total=$((total + chunk))
      cuda=$((cuda + chunk))
    else
      eval "f=\${$(( (i % $#) + 1 ))}"
      cp "$f" "$d/file$i.${f##*.}"
      n=$(wc -c < "$f")
      total=$((total + n))
      host=$((host + n))
    fi
    i=$((i + 1))
  done
  rm "$tree/chunk"
  touch "$tree/.done"
}

measure() { # TREE LABEL COMMAND...
  tree=$1 label=$2
  shift 2
  bytes=$(find "$tree" -type f -name 'file*' -exec cat {} + | wc -c)
  start=$(date +%s.%N)
  "$@" -q --no-config --format=json -o /dev/null "$tree" || [ $? -eq 1 ] # 1: findings
  end=$(date +%s.%N)
  awk -v b="$bytes" -v s="$start" -v e="$end" -v l="$label" \
    'BEGIN { t = e - s; printf "%-28s %6.1f MB %7.2f s  %6.1f MB/s\n", l, b / 1e6, t, b / t / 1e6 }'
}

one=""
command -v taskset >/dev/null 2>&1 && one="taskset -c 0"
for kind in dense mixed; do
  tree=$work/gpumem-lint-bench-$kind-$mb
  if [ $kind = dense ]; then gen "$tree" 100; else gen "$tree" 33; fi
  measure "$tree" "$kind, one core (-j 1)" $one $cmd -j 1
  measure "$tree" "$kind, -j $jobs" $cmd -j "$jobs"
done
