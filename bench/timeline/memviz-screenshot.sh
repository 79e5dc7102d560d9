#!/bin/sh
# A screenshot of PyTorch's memory viewer showing a snapshot, for the docs' pictures: headless
# Chromium opens a page that runs PyTorch's own viewer (MemoryViz.js, from an installed PyTorch:
# torch/utils/viz/MemoryViz.js; bench/views-h200.sh brings a copy back) on the snapshot, with
# d3 version 5 (which the viewer imports from a CDN) from the npm registry instead, so nothing
# is fetched while the page runs.
#   usage: bench/timeline/memviz-screenshot.sh SNAPSHOT MEMORYVIZ_JS OUT.png [VIEW] [WxH]
#   VIEW: "Active Memory Timeline" (default), "Allocator State History" or
#         "Active Cached Segment Timeline"
set -eu
snap=$1 viz=$2 png=$3
view=${4:-Active Memory Timeline}
size=${5:-1400,900}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "memviz-screenshot: no Chromium (apt-get install chromium)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent d3@5.16.0 > /dev/null && tar xzf d3-5.16.0.tgz package/dist/d3.min.js)
cp "$tmp/package/dist/d3.min.js" "$tmp/d3.min.js"
# The viewer imports d3 and four of its parts by URL; the UMD build has them all as window.d3.
sed -e 's|^import \* as d3 from .*|const d3 = window.d3;|' \
    -e 's|^import {\(.*\)} from "https://cdn.skypack.dev/d3-[a-z]*@1";|const {\1} = window.d3;|' \
    "$viz" > "$tmp/MemoryViz.js"
if grep -q '^import' "$tmp/MemoryViz.js"; then
  echo "memviz-screenshot: MemoryViz.js imports something else by URL:" >&2
  grep '^import' "$tmp/MemoryViz.js" >&2
  exit 1
fi
b64=$(base64 -w0 "$snap")
cat > "$tmp/page.html" <<HTML
<!DOCTYPE html>
<html><head><meta charset="utf-8"></head><body>
<script src="d3.min.js"></script>
<script type="module">
import {add_local_files} from "./MemoryViz.js";
add_local_files([{name: "$(basename "$snap")", base64: "$b64"}], "$view");
// Hover over the tallest narrow allocation, so that the picture shows its frames below.
setTimeout(() => {
  let best = null, height = -1;
  for (const p of document.querySelectorAll("polygon")) {
    const b = p.getBBox();
    if (b.width < 300 && b.height > height) { height = b.height; best = p; }
  }
  if (best) best.dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
}, 1500);
</script>
</body></html>
HTML
"$browser" --headless --no-sandbox --disable-gpu --no-first-run --allow-file-access-from-files \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$tmp/profile" --window-size="$size" --virtual-time-budget=8000 \
  --screenshot="$png" "file://$tmp/page.html" > /dev/null 2>&1
echo "memviz-screenshot: $png"
