#!/bin/sh
# gpumem report's command line: --summary of a known trace (peak, the sites live then, leaks at
# end), and clear errors for a missing, empty, foreign, damaged or cut-short trace, and for
# usage mistakes.
# usage: report_cli.sh GPUMEM MAKE_TRACE
gpumem=$1 make_trace=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() { # expect STATUS PATTERN ARGS...: status and a line of the output (stdout + stderr)
  want=$1 pattern=$2
  shift 2
  out=$("$gpumem" report "$@" 2>&1)
  got=$?
  if [ "$got" -ne "$want" ] || ! printf '%s\n' "$out" | grep -q -E -- "$pattern"; then
    echo "FAIL: gpumem report $*: status $got (want $want), wanted /$pattern/ in:"
    printf '%s\n' "$out"
    fails=$((fails + 1))
  else
    echo "ok   gpumem report $* ~ /$pattern/"
  fi
}

GPUMEM_BACKEND=sim GPUMEM_BACKTRACE=1 GPUMEM_LEAK_REPORT=off GPUMEM_TRACE="$tmp/t.json" \
  "$make_trace" || { echo "FAIL: make_trace"; exit 1; }

expect 0 "^peak: 12\.0 MiB live at [0-9.]+ (us|ms|s)$" --summary "$tmp/t.json"
expect 0 "^ +8\.0 MiB in 1 device allocation at .*make_trace\.c:[0-9]+ \(make_peak\)$" --summary "$tmp/t.json"
expect 0 "^ +4\.0 MiB in 4 device allocations at .*make_trace\.c:[0-9]+ \(load_weights\)$" --summary "$tmp/t.json"
expect 0 "^ +at .*make_trace\.c:[0-9]+ \((make_peak|main|scenario)\)$" --summary "$tmp/t.json"
expect 0 "^leaks at end: 192\.0 KiB in 3 allocations from 1 call site$" --summary "$tmp/t.json"
expect 0 "^ +192\.0 KiB in 3 pinned allocations at .*\(leak_cache\)$" --summary "$tmp/t.json"
expect 0 "^  device memory, device 0 +12\.0 MiB at " --summary "$tmp/t.json"
expect 0 "^  8 allocations, 13 events over [0-9.]+ (us|ms|s), 3 call sites$" --summary "$tmp/t.json"
expect 0 "in 1 more call site" --summary "$tmp/t.json" --top 1
expect 0 "^failed allocations: 1$" --summary "$tmp/t.json"
expect 0 "^  [0-9.]+ (us|ms|s): out of memory: 1\.0 PiB device memory on device 0 at .*make_trace\.c:[0-9]+ \(ask_too_much\), cudaErrorMemoryAllocation$" --summary "$tmp/t.json"
expect 0 "^usage: gpumem report --html TRACE -o FILE.html" --help

# Names with escapes (read by jansson, not the fast path) come out unescaped.
sed 's/(make_peak)/(make\\"peak)/g' "$tmp/t.json" > "$tmp/escaped.json"
expect 0 '^ +8\.0 MiB in 1 device allocation at .*make_trace\.c:[0-9]+ \(make"peak\)$' --summary "$tmp/escaped.json"

# Hand-written traces. hand FILE LINES...: a trace with these event lines and a complete end.
hand() {
  f=$1; shift
  { echo '{"displayTimeUnit":"ns","traceEvents":['
    echo '{"ph":"M","pid":1,"tid":0,"name":"gpumem_trace","args":{"schema":"gpumem-trace/1","tool":"gpumem"}},'
    for l in "$@"; do echo "$l,"; done
    echo '{"ph":"M","pid":1,"tid":0,"ts":30.0,"name":"gpumem_end","args":{"events":4,"dropped":'"${dropped:-0}"',"end_ts":30.0}}'
    echo '],'; echo '"stackFrames":{'; echo '}}'; } > "$f"
}
ev() { # ev PH TS ID BYTES
  echo '{"ph":"'"$1"'","pid":1,"tid":1,"ts":'"$2"',"cat":"device","name":"a.c:'"$4"' (f)","id":"'"$3"'","args":{"bytes":'"$4"',"device":0}}'
}
# The peak table's columns line up, the longest name ("device-async memory, device 0") too.
evk() { # evk PH TS ID BYTES KIND
  echo '{"ph":"'"$1"'","pid":1,"tid":1,"ts":'"$2"',"cat":"'"$5"'","name":"a.c:1 (f)","id":"'"$3"'","args":{"bytes":'"$4"',"device":0}}'
}
hand "$tmp/kinds.json" "$(evk b 1.0 0x1 4096 device)" "$(evk b 2.0 0x2 8192 device-async)"
at=$("$gpumem" report --summary "$tmp/kinds.json" | sed -n '/^peak by memory kind/,/^$/p' |
  grep ' memory, device ' | awk '{ print index($0, " at ") }' | sort -u)
if [ "$(printf '%s\n' "$at" | wc -l)" -ne 1 ] || [ -z "$at" ]; then
  echo "FAIL: the peak table's columns do not line up (' at ' at columns: $at)"
  "$gpumem" report --summary "$tmp/kinds.json"
  fails=$((fails + 1))
else
  echo "ok   the peak table's columns line up"
fi

# The largest id is an allocation like any other (it once stood for an empty slot).
# Its release without its allocation (a trace that began late) releases nothing else.
hand "$tmp/maxid.json" "$(ev b 1.0 0x1 8192)" "$(ev e 2.0 0xffffffffffffffff 4096)" \
  "$(ev b 3.0 0xffffffffffffffff 4096)" "$(ev e 4.0 0xffffffffffffffff 4096)"
expect 0 "^leaks at end: 8\.0 KiB in 1 allocation from 1 call site$" --summary "$tmp/maxid.json"
expect 0 "^  1 releases of allocations the trace does not have were left out$" --summary "$tmp/maxid.json"
hand "$tmp/maxid_alone.json" "$(ev e 2.0 0xffffffffffffffff 4096)"
expect 0 "^no allocations in the trace$" --summary "$tmp/maxid_alone.json"
# Threads write their events in their own order: times count from the earliest, not the first.
hand "$tmp/order.json" "$(ev b 10.0 0x1 4096)" "$(ev b 5.0 0x2 8192)" "$(ev e 20.0 0x1 4096)"
expect 0 "^peak: 12\.0 KiB live at 5\.000 us$" --summary "$tmp/order.json"
expect 0 "events over 15\.000 us" --summary "$tmp/order.json"
# Events the tracer could not record are said, and so are timestamps that are no time.
dropped=3 hand "$tmp/dropped.json" "$(ev b 1.0 0x1 4096)" "$(ev b 1e300 0x2 4096)"
expect 0 "warning: the traced program could not record 3 events" --summary "$tmp/dropped.json"
expect 0 "^  1 events with a timestamp that is no time" --summary "$tmp/dropped.json"
# The page has no place for them: said on stderr, for every output; the rest is shown (exit 0).
expect 0 "^gpumem report: warning: $tmp/dropped.json: 1 event with a timestamp that is no time \(NaN, infinite or out of range\) left out" \
  --html "$tmp/dropped.json" -o "$tmp/dropped.html"
expect 0 "^gpumem report: warning: $tmp/dropped.json: the traced program could not record 3 events" \
  --html "$tmp/dropped.json" -o "$tmp/dropped.html"
for t in nan inf -inf -1e300; do
  hand "$tmp/time_$t.json" "$(ev b 1.0 0x1 4096)" "$(ev b 2.0 0x2 4096)" "$(ev e 3.0 0x2 4096)" \
    "$(ev e "$t" 0x1 4096)"
  expect 0 "warning: $tmp/time_$t.json: 1 event with a timestamp that is no time" \
    --summary "$tmp/time_$t.json"
  expect 0 "^leaks at end: 4\.0 KiB in 1 allocation" --summary "$tmp/time_$t.json"
done

# Hostile traces: names that hold terminal escapes are printed without them; sizes whose sums
# pass int64 stop at its end; a folder or a device is not a trace.
esc='{"ph":"b","pid":1,"tid":1,"ts":1.0,"cat":"device","name":"\u001b[31mred\u009b (f)","id":"0x1","args":{"bytes":4096,"device":0}}'
hand "$tmp/esc.json" "$esc"
"$gpumem" report --summary "$tmp/esc.json" > "$tmp/esc.txt" 2>&1
if grep -q "$(printf '\033')" "$tmp/esc.txt"; then echo "FAIL: an escape reached the terminal"; fails=$((fails + 1)); fi
expect 0 "in 1 device allocation at \?\[31mred\?\? \(f\)$" --summary "$tmp/esc.json"
# A lone byte 0x9B (CSI to an 8-bit terminal) in a name that is not UTF-8.
c1=$(printf '{"ph":"b","pid":1,"tid":1,"ts":1.0,"cat":"device","name":"a\2332J (g)","id":"0x1","args":{"bytes":4096,"device":0}}')
hand "$tmp/c1.json" "$c1"
"$gpumem" report --summary "$tmp/c1.json" > "$tmp/c1.txt" 2>&1
if grep -q "$(printf '\233')" "$tmp/c1.txt"; then echo "FAIL: a C1 byte reached the terminal"; fails=$((fails + 1)); fi
expect 0 "in 1 device allocation at a\?2J \(g\)$" --summary "$tmp/c1.json"
hand "$tmp/huge.json" "$(ev b 1.0 0x1 9223372036854775807)" "$(ev b 2.0 0x2 9223372036854775807)"
expect 0 "^leaks at end: 8\.0 EiB in 2 allocations from 1 call site$" --summary "$tmp/huge.json"
expect 1 "error: $tmp is a folder, not a trace file" --summary "$tmp"
expect 1 "error: /dev/zero is a device or other special file, not a trace file" --summary /dev/zero

# The page never replaces the trace it is made from.
cp "$tmp/t.json" "$tmp/keep.json"
expect 2 "error: -o $tmp/t.json is the trace itself" --html "$tmp/t.json" -o "$tmp/t.json"
mkdir "$tmp/sub"
ln -s "$tmp/t.json" "$tmp/link.json"
ln "$tmp/t.json" "$tmp/hard.json"
expect 2 "is the trace itself" --html "$tmp/t.json" -o "$tmp/sub/../t.json"
expect 2 "is the trace itself" --html "$tmp/t.json" -o "$tmp/link.json"
expect 2 "is the trace itself" --html "$tmp/link.json" -o "$tmp/hard.json"
cmp -s "$tmp/t.json" "$tmp/keep.json" || { echo "FAIL: the trace was overwritten"; fails=$((fails + 1)); }
rm "$tmp/hard.json"

# Errors: each says what is wrong with which file.
expect 1 "error: cannot read the trace $tmp/none.json: No such file or directory" --summary "$tmp/none.json"
: > "$tmp/empty.json"
expect 1 "error: $tmp/empty.json is empty" --summary "$tmp/empty.json"
printf '{"traceEvents":[{"ph":"X","name":"foo","pid":1,"tid":1,"ts":0,"dur":5}]}\n' > "$tmp/chrome.json"
expect 1 "error: $tmp/chrome.json is not a gpumem trace" --summary "$tmp/chrome.json"
printf 'hello\n' > "$tmp/text.txt"
expect 1 "is not a gpumem trace" --summary "$tmp/text.txt"
# Cut short (a crash): read up to where it stops, with a warning.
head -n 9 "$tmp/t.json" > "$tmp/cut.json"
sed -n 10p "$tmp/t.json" | cut -c 1-30 >> "$tmp/cut.json"
expect 0 "warning: $tmp/cut.json ends early" --summary "$tmp/cut.json"
expect 0 "the trace ends early" --summary "$tmp/cut.json"
# Cut anywhere: read what there is, or refuse with a message; never crash.
size=$(wc -c < "$tmp/t.json")
for off in 1 30 60 90 150 300 500 800 1200 1700 2300 3000 3800 4700 5600 6600; do
  [ "$off" -lt "$size" ] || continue
  head -c "$off" "$tmp/t.json" > "$tmp/cut-$off.json"
  out=$("$gpumem" report --summary "$tmp/cut-$off.json" 2>&1)
  got=$?
  if [ "$got" -gt 1 ] || ! printf '%s\n' "$out" | grep -q -E "ends early|error: .*cut-$off.json"; then
    echo "FAIL: the trace cut at byte $off: status $got, output:"
    printf '%s\n' "$out"
    fails=$((fails + 1))
  fi
done
echo "ok   traces cut at 16 places are read or refused with a message"
# Damaged in the middle: an error, with the line.
{ head -n 5 "$tmp/t.json"; echo '{"ph":"b", garbage'; tail -n +6 "$tmp/t.json"; } > "$tmp/bad.json"
expect 1 "error: $tmp/bad.json:6: not a JSON event" --summary "$tmp/bad.json"
# Output that cannot be written.
expect 1 "error: cannot write $tmp/no/such/dir.html" --html "$tmp/t.json" -o "$tmp/no/such/dir.html"
expect 1 "error: writing /dev/full failed" --html "$tmp/t.json" -o /dev/full

# gpumem check --trace into a folder that does not exist: refused before the program runs.
out=$("$gpumem" check --trace="$tmp/no/such/t.json" -- true 2>&1)
got=$?
if [ "$got" -ne 2 ] || ! printf '%s\n' "$out" | grep -q "gpumem check: error: --trace=$tmp/no/such/t.json cannot be written: $tmp/no/such: No such file or directory"; then
  echo "FAIL: gpumem check --trace into a missing folder: status $got, output:"
  printf '%s\n' "$out"
  fails=$((fails + 1))
else
  echo "ok   gpumem check --trace into a missing folder is refused"
fi

# Usage.
expect 2 "say what to make" 
expect 2 "unexpected argument '$tmp/t.json' \(gpumem report takes options only\)" "$tmp/t.json"
expect 2 "--html needs -o FILE.html" --html "$tmp/t.json"
expect 2 "separate runs" --html "$tmp/t.json" --summary "$tmp/t.json" -o x.html
expect 2 "--memory-viz needs -o FILE.pickle" --memory-viz "$tmp/t.json"
expect 2 "--perfetto needs -o FILE.pftrace" --perfetto "$tmp/t.json"
expect 2 "--perfetto and --memory-viz are separate runs" --perfetto "$tmp/t.json" --memory-viz "$tmp/t.json" -o x
expect 2 "-o goes with --html, --memory-viz and --perfetto" --summary "$tmp/t.json" -o x
expect 2 "--max-entries goes with --memory-viz" --perfetto "$tmp/t.json" -o x --max-entries 5
expect 2 "--max-entries takes a number from 1 to" --memory-viz "$tmp/t.json" -o x --max-entries 0
expect 2 "is the trace itself, which --perfetto would replace" --perfetto "$tmp/t.json" --perfetto "$tmp/t.json" -o "$tmp/t.json"
expect 1 "cannot read the trace $tmp/none.json" --perfetto "$tmp/t.json" --perfetto "$tmp/none.json" -o "$tmp/x.pftrace"
expect 1 "cannot write $tmp/no/such/x.pickle" --memory-viz "$tmp/t.json" -o "$tmp/no/such/x.pickle"
expect 1 "cannot write $tmp/no/such/x.pftrace" --perfetto "$tmp/t.json" -o "$tmp/no/such/x.pftrace"
expect 2 "--summary needs a value" --summary
expect 2 "unknown option '--frob'" --frob
expect 2 "did you mean --summary" --sumary "$tmp/t.json"
expect 0 "^peak: 12\.0 MiB" --summary="$tmp/t.json"
expect 2 "--top takes a number" --summary "$tmp/t.json" --top 0
[ "$fails" -eq 0 ] && echo "report_cli: all checks passed"
exit $((fails > 0))
