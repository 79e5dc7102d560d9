#!/bin/sh
# Text from outside reaches a terminal without its control characters: the library's messages
# that quote an option's value, an unknown option's name, the trace's and the report's file
# names (from GPUMEM_TRACE, GPUMEM_REPORT_FILE) write them as \xNN. Each message must hold the
# escape written out and no ESC, BEL or C1 byte.
# usage: visible_text.sh GPUMEM MAKE_TRACE
gpumem=$1 make_trace=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
esc=$(printf '\033') bel=$(printf '\007') csi=$(printf '\302\233')
check() { # check FILE PATTERN: no control character in FILE, and PATTERN (fixed) in it
  if grep -q -e "$esc" -e "$bel" -e "$csi" "$1"; then
    echo "FAIL: a control character reached the output ($2):"; cat -v "$1"; fails=$((fails + 1))
  elif ! grep -q -F -- "$2" "$1"; then
    echo "FAIL: '$2' not in:"; cat -v "$1"; fails=$((fails + 1))
  else
    echo "ok   $2"
  fi
}
export GPUMEM_BACKEND=sim GPUMEM_SIM_DEVICE_BYTES=1GiB
GPUMEM_REGCACHE="${esc}[2J${bel}" "$gpumem" info --config > /dev/null 2> "$tmp/value.txt"
check "$tmp/value.txt" 'GPUMEM_REGCACHE=\x1b[2J\x07 is not valid'
env "GPUMEM_NOPE${esc}]0;x${bel}=1" "$gpumem" info --config > /dev/null 2> "$tmp/name.txt"
check "$tmp/name.txt" 'unknown option GPUMEM_NOPE\x1b]0;x\x07 is ignored'
GPUMEM_TRACE="$tmp/no${csi}such/t.json" GPUMEM_LEAK_REPORT=off "$make_trace" 2> "$tmp/trace.txt"
check "$tmp/trace.txt" "cannot write the trace to $tmp/no\\xc2\\x9bsuch/t.json"
GPUMEM_REPORT_FILE="$tmp/no${esc}such/r.txt" "$make_trace" 2> "$tmp/report.txt"
check "$tmp/report.txt" "cannot write the report to $tmp/no\\x1bsuch/r.txt"
[ "$fails" -eq 0 ] && echo "visible text: every message clean" || echo "visible text: $fails failed"
exit "$fails"
