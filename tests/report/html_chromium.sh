#!/bin/sh
# gpumem report --html, opened in headless Chromium from a file: the page draws (it says so in
# the DOM), shows the peak's call site and the totals, and its screenshot has the right size
# and is not blank (chart colours, the peak's red). Exit 77 (skipped) without Chromium.
# usage: html_chromium.sh GPUMEM MAKE_TRACE PNG_STATS
gpumem=$1 make_trace=$2 png_stats=$3
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then
  echo "SKIP: no Chromium (apt-get install chromium, or scripts/setup)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

GPUMEM_BACKEND=sim GPUMEM_BACKTRACE=1 GPUMEM_LEAK_REPORT=off GPUMEM_TRACE="$tmp/t.json" "$make_trace" ||
  fail "make_trace"
"$gpumem" report --html "$tmp/t.json" -o "$tmp/t.html" || fail "gpumem report --html"
if grep -q -E '(src|href)="https?:|<link |import\(' "$tmp/t.html"; then
  fail "the page refers to the network"
fi
# This machine may have no network: nothing Chromium would fetch by itself is asked for.
chrome() { # chrome NAME ARGS...: a fresh profile each run
  name=$1
  shift
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$tmp/profile-$name" --window-size=1400,1000 --virtual-time-budget=10000 "$@" \
    2>"$tmp/chrome-$name.err"
}
chrome dom --dump-dom "file://$tmp/t.html" > "$tmp/dom.html" || fail "chromium --dump-dom: $(tail -3 "$tmp/chrome-dom.err")"
check_dom() { # check_dom WHAT PATTERN
  if grep -q -- "$2" "$tmp/dom.html"; then echo "ok   DOM: $1"; else fail "DOM has no $1 ($2)"; fi
}
check_dom "drawn marker" 'data-drawn="1"'
check_dom "peak site" '<strong id="peak-site">[^<]*make_trace.c:[0-9]* (make_peak)</strong>'
check_dom "peak total" '<span id="total-peak">12.0 MiB</span>'
check_dom "leaked total" '<span id="total-leaked">192.0 KiB in 3 allocations</span>'
check_dom "allocations" '<span id="total-allocs">8</span>'
check_dom "failed allocations" '<span id="total-failed">1</span>'
check_dom "largest sites table" '<td>.*make_trace.c:[0-9]* (load_weights)</td>'
check_dom "a track per kind and device" 'pinned memory, device 0: peak 192.0 KiB'

# Hover, click and drag, driven by interact.html through the page's own event handlers.
cp "$(dirname "$0")/interact.html" "$tmp/interact.html"
chrome act --allow-file-access-from-files --dump-dom "file://$tmp/interact.html" > "$tmp/act.html" ||
  fail "chromium interact.html"
check_act() { # check_act WHAT PATTERN
  if grep -q -E -- "$2" "$tmp/act.html"; then echo "ok   interaction: $1"; else fail "interaction: $1 ($2)"; sed -n '/<pre id="out">/,/<\/pre>/p' "$tmp/act.html"; fi
}
check_act "hover at the peak shows the total and the peak's site" '>hover: [^<]*: 12.0 MiB live.*8.0 MiB +[^<]*make_peak'
check_act "click pins the moment with its sites and the largest one's stack" '^click: 12.0 MiB live.*make_peak.*at [^<]*make_trace.c:'
check_act "drag zooms" '^zoom: changed .* – '
check_act "double-click resets" '^reset: whole trace, '

chrome shot --screenshot="$tmp/shot.png" "file://$tmp/t.html" >/dev/null || fail "chromium --screenshot"
stats=$("$png_stats" "$tmp/shot.png") || fail "png_stats"
echo "screenshot: $stats (width height non-white colored peak-red)"
set -- $stats
[ "$1" = 1400 ] && [ "$2" = 1000 ] || fail "screenshot is $1 x $2, not 1400 x 1000"
[ "${3:-0}" -gt 40000 ] || fail "screenshot is nearly blank ($3 non-white pixels)"
[ "${4:-0}" -gt 20000 ] || fail "screenshot has no chart fills ($4 coloured pixels)"
[ "${5:-0}" -gt 50 ] || fail "screenshot has no peak marker ($5 red pixels)"
[ "$fails" -eq 0 ] && echo "html_chromium: all checks passed"
exit $((fails > 0))
