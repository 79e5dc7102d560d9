#!/bin/sh
# Speed of `gpumem lint` against plain `clang++-22 --analyze` (Clang's default checkers only)
# on the same translation units with the same flags, and -j1 against -j2.
#
# usage: bench/lint/run.sh LINT PLUGIN PATH... (e.g. build/tools/gpumem build/tools/lint/
#        analyzer/gpumem-analyzer.so CORPUS/rodinia)
#   LINT    build/tools/gpumem (then `lint` is added) or a gpumem-lint-dev binary
#   PLUGIN  gpumem-analyzer.so
# Prints one line per measurement (wall, user and sys seconds) and the load average before
# each; JOBS="1 2" (the default) picks the -j values.
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

# One measurement: wall seconds, and the CPU seconds of the command and its children (the
# analyzer processes), which a machine shared with other work disturbs less than the wall.
measure() { # WHAT COMMAND...
  what=$1
  shift
  echo "load average before: $(load)"
  /usr/bin/time -f "$what: %e s wall, %U s user, %S s sys" "$@" > /dev/null 2> "$work/time" || true
  tail -1 "$work/time"
}

for j in ${JOBS:-1 2}; do
  measure "clang --analyze (default checkers) -j$j, $units units" \
    xargs -P "$j" -I{} sh -c '{} >/dev/null 2>&1 || true' < "$work/clang.cmds"
  measure "gpumem lint -j$j, $units units" \
    $cmd --no-config -q --analyzer-plugin="$plugin" -j"$j" --fail-on=never "$@"
done
$cmd --no-config -q --analyzer-plugin="$plugin" -j2 --fail-on=never --format=json "$@" \
  2>/dev/null | grep -E '"(files|notAnalyzed|warnings)":' | tr -d ' ,' | tr '\n' ' '
echo
