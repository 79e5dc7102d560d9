#!/bin/sh
# How long the HTML timeline of a 1 000 000-event trace takes to be ready in headless
# Chromium: the page's own count (performance.now() when it has drawn, from the start of
# navigation: reading the file, parsing the data, aggregating, drawing), and the wall time of
# the whole browser run. Also the trace's and the page's sizes and `gpumem report`'s time.
# usage: bench/timeline/render-1m.sh [BUILD_DIR] [EVENTS]   (default build, 1000000)
set -eu
build=${1:-build}
events=${2:-1000000}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "render-1m: no Chromium (apt-get install chromium)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
t0=$(now)
GPUMEM_BACKEND=sim GPUMEM_LEAK_REPORT=off GPUMEM_TRACE="$tmp/t.json" \
  "$build/tests/make_trace" many "$events"
t1=$(now)
"$build/tools/gpumem" report --html "$tmp/t.json" -o "$tmp/t.html"
t2=$(now)
echo "events: $events; trace $(du -h "$tmp/t.json" | cut -f1), written in $(echo "$t1 - $t0" | bc) s"
echo "gpumem report --html: $(echo "$t2 - $t1" | bc) s, page $(du -h "$tmp/t.html" | cut -f1)"
for run in 1 2 3; do
  s=$(now)
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$tmp/profile-$run" --window-size=1400,1000 \
    --dump-dom "file://$tmp/t.html" > "$tmp/dom.html" 2>/dev/null
  e=$(now)
  ms=$(grep -o 'data-render-ms="[0-9]*"' "$tmp/dom.html" | grep -o '[0-9]*' || echo "?")
  drawn=$(grep -c 'data-drawn="1"' "$tmp/dom.html" || true)
  echo "run $run: page ready after $ms ms (drawn: $drawn); browser run $(echo "$e - $s" | bc) s wall"
done
echo "RESULT bench=timeline_render events=$events page_ready_ms=$ms"
