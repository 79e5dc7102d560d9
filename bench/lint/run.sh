#!/bin/sh
# Speed of `gpumem lint` against plain `clang++-22 --analyze` (Clang's default checkers only)
# on the same translation units with the same flags, and -j1 against -j2.
#
# usage: bench/lint/run.sh LINT PLUGIN PATH... (e.g. build/tools/gpumem build/tools/lint/
#        analyzer/gpumem-analyzer.so /work/shared/corpus/rodinia)
#   LINT    build/tools/gpumem (then `lint` is added) or a gpumem-lint-dev binary
#   PLUGIN  gpumem-analyzer.so
# Prints one line per measurement: what, units, seconds; and the load average before each.
# The baseline runs the commands `gpumem lint --print-commands` prints, less the plugin's
# arguments (-load, -analyzer-checker=gpumem..., -analyzer-disable-checker and checker options),
# one at a time or two at a time, as gpumem lint -j1 and -j2 do.
set -eu
lint=${1:?usage: bench/lint/run.sh LINT PLUGIN PATH...}
plugin=${2:?usage: bench/lint/run.sh LINT PLUGIN PATH...}
shift 2
case $(basename "$lint") in gpumem) cmd="$lint lint" ;; *) cmd=$lint ;; esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

$cmd --no-config --analyzer-plugin="$plugin" --print-commands "$@" > "$work/gpumem.cmds"
units=$(wc -l < "$work/gpumem.cmds")
# The same commands without the plugin: drop each "-Xclang X" pair that loads or configures it.
i=0
while IFS= read -r line; do
  i=$((i + 1))
  echo "$line" | awk -v out="$work/$i.sarif" '{
    n = split($0, a, " "); s = ""
    for (k = 1; k <= n; k++) {
      if (a[k] == "-Xclang" && (a[k + 1] == "-load" || a[k + 1] == "-analyzer-config")) { k += 3; continue }
      if (a[k] == "-Xclang" && (a[k + 1] ~ /^-analyzer-checker=gpumem/ || a[k + 1] ~ /^-analyzer-disable-checker=/)) { k += 1; continue }
      if (a[k] == "UNIT.sarif") a[k] = out
      s = s (s == "" ? "" : " ") a[k]
    }
    print s
  }'
done < "$work/gpumem.cmds" > "$work/clang.cmds"

run_clang() { # JOBS
  xargs -P "$1" -I{} sh -c '{} >/dev/null 2>&1 || true' < "$work/clang.cmds"
}

for round in 1 2; do
  for j in 1 2; do
    echo "load $(load)"
    t0=$(now); run_clang "$j"; t1=$(now)
    echo "clang --analyze (default checkers) -j$j: $units units, $(echo "$t1 - $t0" | bc) s"
    echo "load $(load)"
    t0=$(now)
    $cmd --no-config -q --analyzer-plugin="$plugin" -j"$j" --fail-on=never "$@" > /dev/null 2>&1 || true
    t1=$(now)
    echo "gpumem lint -j$j: $units units, $(echo "$t1 - $t0" | bc) s"
  done
done
