#!/bin/sh
# A large trace in each format `gpumem report` writes: the trace of EVENTS allocations and
# releases (make_trace many: 200 call sites, up to 2000 allocations live at once) as Chrome
# trace JSON (the trace itself), Perfetto's protobuf (--perfetto), PyTorch's memory snapshot
# (--memory-viz, all entries and the last 100 000 a device as PyTorch's docs record) and the
# HTML page: each file's size, and the wall time, CPU time and peak memory of writing it.
# usage: bench/timeline/views-5m.sh [BUILD_DIR] [EVENTS]   (default build, 5000000)
set -eu
build=${1:-build}
events=${2:-5000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# measure NAME OUT COMMAND...: one line: size of OUT, wall s, user + sys s, peak RSS MiB
measure() {
  name=$1 out=$2
  shift 2
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" >/dev/null
  read -r wall user sys rss <"$tmp/time"
  size=$(stat -c %s "$out")
  printf '%-34s %12s bytes (%7.1f MB) %7.2f s wall %7.2f s CPU %7.0f MiB peak\n' "$name" "$size" \
    "$(echo "$size / 1000000" | bc -l)" "$wall" "$(echo "$user + $sys" | bc -l)" \
    "$(echo "$rss / 1024" | bc -l)"
}
export GPUMEM_BACKEND=sim GPUMEM_LEAK_REPORT=off
measure "trace (JSON), $events events" "$tmp/t.json" \
  env GPUMEM_TRACE="$tmp/t.json" "$build/tests/make_trace" many "$events"
g="$build/tools/gpumem"
measure "--perfetto (protobuf)" "$tmp/t.pftrace" "$g" report --perfetto "$tmp/t.json" -o "$tmp/t.pftrace"
measure "--memory-viz (all entries)" "$tmp/t.pickle" "$g" report --memory-viz "$tmp/t.json" -o "$tmp/t.pickle"
measure "--memory-viz --max-entries 100000" "$tmp/s.pickle" \
  "$g" report --memory-viz "$tmp/t.json" -o "$tmp/s.pickle" --max-entries 100000
measure "--html" "$tmp/t.html" "$g" report --html "$tmp/t.json" -o "$tmp/t.html"
if command -v python3 >/dev/null; then
  /usr/bin/time -f "%e %M" -o "$tmp/time" python3 -c "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))" "$tmp/t.pickle"
  read -r wall rss <"$tmp/time"
  echo "python3 pickle.load of the whole snapshot: $wall s, $(echo "$rss / 1024" | bc) MiB peak"
fi
