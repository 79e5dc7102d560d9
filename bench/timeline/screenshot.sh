#!/bin/sh
# A 1400 x 1000 screenshot of a gpumem timeline page, with headless Chromium and no network.
#   bench/timeline/screenshot.sh timeline.html timeline.png
set -eu
[ $# -eq 2 ] || { echo "usage: screenshot.sh PAGE.html OUT.png" >&2; exit 2; }
page=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$profile" --window-size=1400,1000 --virtual-time-budget=10000 \
  --hide-scrollbars --screenshot="$out" "file://$page" 2>/dev/null
echo "wrote $out"
