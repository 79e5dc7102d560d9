#!/usr/bin/env bash
# `gpumem report --merge`: the JSON reports of a job's ranks as one report (a line per rank, the
# worst first; a finding of several ranks once, with its ranks; the totals; --json), and their
# traces as one trace (each rank a process of its own, one clock, unique ids) that gpumem
# report itself reads back; and the usage errors.
#   merge.sh GPUMEM MAKE_TRACE
set -uo pipefail
gpumem=$1 make_trace=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Three ranks: 0 clean, 1 and 2 leak at the same line (different sizes), 2 also frees twice,
# 1 also has a suppressed leak (not an error).
python3 - "$tmp" <<'PYTHON'
import json, os, sys
d = sys.argv[1]
def frame(fn, line):
    return {"function": fn, "file": "/job/train.py", "line": line, "module": "/usr/bin/python3"}
leak = lambda b: {"kind": "leak", "alloc_call": "cudaMalloc", "count": 1, "leak_kind": "definite",
                  "memory": "device", "device": 0, "bytes": b,
                  "alloc_stack": [{"function": "cudaMalloc", "file": None, "line": 0,
                                   "module": "/usr/lib/libcudart.so"}, frame("load", 10), frame("main", 40)]}
def doc(rank, pid, findings, errors, leaked):
    return {"schema": "gpumem-check/1", "tool": "gpumem check", "version": "x", "pid": pid,
            "rank": rank, "local_rank": rank, "rank_from": "RANK", "command": ["python3"],
            "status": "exited", "exit_code": 0, "findings": findings, "peak": {},
            "summary": {"errors": errors, "leaks": sum(f["kind"] == "leak" for f in findings if "suppressed" not in f),
                        "leaked_bytes": leaked, "suppressed": 0}}
supp = dict(leak(999), suppressed="cache")
double = {"kind": "double-free", "call": "cudaFree", "memory": "device", "bytes": 64,
          "address": "0x1", "stack": [frame("step", 20)], "alloc_call": "cudaMalloc",
          "alloc_stack": [frame("step", 18)], "first_release_call": "cudaFree",
          "first_release_stack": [frame("step", 19)]}
json.dump(doc(0, 100, [], 0, 0), open(os.path.join(d, "check.0.json"), "w"))
json.dump(doc(1, 101, [leak(1 << 20), supp], 1, 1 << 20), open(os.path.join(d, "check.1.json"), "w"))
json.dump(doc(2, 102, [leak(2 << 20), double], 2, 2 << 20), open(os.path.join(d, "check.2.json"), "w"))
PYTHON
out=$("$gpumem" report --merge --json="$tmp/merged.json" "$tmp"/check.*.json 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 3 ] || fail "exit status $rc, not 3 (errors in some rank)"
want() { grep -qE -- "$1" <<<"$out" || fail "no line matching: $1"; }
want "^gpumem report: 3 processes of one job, 2 with errors; the worst first:$"
# The worst first: rank 2 (2 errors), rank 1, rank 0.
order=$(printf '%s\n' "$out" | sed -n 's/^  rank \([0-9]\) .*/\1/p' | tr -d '\n')
[ "$order" = 210 ] || fail "ranks in the order $order, not 210 (the worst first)"
want "^  leak cudaMalloc\(\) device, 1.0 MiB to 2.0 MiB each: in ranks 1-2 \(2 of 3\)$"
want "^      by load \(/job/train.py:10\)$"
want "^  double-free cudaFree\(\) device, 64 B each: in rank 2 \(1 of 3\)$"
want "^total: 3 errors, 3.0 MiB leaked, in 3 processes$"
grep -q "999" <<<"$out" && fail "a suppressed finding is shown"
python3 - "$tmp/merged.json" <<'PYTHON' || fail "the merged JSON"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpumem-check-merged/1", d["schema"]
assert [r["rank"] for r in d["ranks"]] == [2, 1, 0], d["ranks"]
assert d["findings"][0]["ranks"] == [1, 2] and d["findings"][0]["bytes_in_all"] == 3 << 20, d["findings"][0]
assert d["summary"] == {"errors": 3, "leaked_bytes": 3 << 20}, d["summary"]
PYTHON

# Two traces of one program, made 1 s apart on the wall clock by their heads (as on two
# machines whose monotonic clocks differ): merged, each rank is a process, times line up.
for r in 0 1; do
  GPUMEM_BACKEND=sim GPUMEM_TRACE="$tmp/trace.$r.json" "$make_trace" >/dev/null 2>&1 ||
    fail "make_trace for rank $r"
done
python3 - "$tmp" <<'PYTHON'
import json, os, re, sys
d = sys.argv[1]
for r in (0, 1):
    p = os.path.join(d, f"trace.{r}.json")
    text = open(p).read()
    # the rank gpumem check notes, and wall clocks 1 s apart for the same monotonic start
    text = re.sub(r'"realtime_ts":[0-9.]+', lambda m: f'"realtime_ts":{1e12 + r * 1e6:.3f},"rank":{r}', text, count=1)
    open(p, "w").write(text)
PYTHON
"$gpumem" report --merge -o "$tmp/merged-trace.json" "$tmp"/trace.*.json 2>"$tmp/err.txt" ||
  fail "merging traces: $(cat "$tmp/err.txt")"
grep -q "2 traces merged into" "$tmp/err.txt" || fail "no note of the merge: $(cat "$tmp/err.txt")"
python3 - "$tmp" <<'PYTHON' || fail "the merged trace"
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "merged-trace.json")))
ev = m["traceEvents"]
pids = sorted({e["pid"] for e in ev if e.get("name") == "process_name"})
assert pids == [0, 1], pids
names = [e["args"]["name"] for e in ev if e.get("name") == "process_name"]
assert names[0].startswith("rank 0 (pid ") and names[1].startswith("rank 1 (pid "), names
starts = {e["pid"]: e["args"]["start_ts"] for e in ev if e.get("name") == "gpumem_trace"}
assert abs((starts[1] - starts[0]) - 1e6 - (0)) < 2e6, starts  # rank 1 starts about 1 s later
ids = [(e["pid"], e["id"]) for e in ev if e.get("ph") == "b"]
assert len({i for _, i in ids}) == len(ids), "allocation ids collide"
one = [e for e in ev if e.get("ph") == "b" and e["pid"] == 0]
two = [e for e in ev if e.get("ph") == "b" and e["pid"] == 1]
assert len(one) == len(two) > 0, (len(one), len(two))
assert min(e["ts"] for e in two) - min(e["ts"] for e in one) > 0.5e6, "rank 1 not moved 1 s later"
PYTHON
# gpumem report reads the merged trace as any other.
"$gpumem" report --summary "$tmp/merged-trace.json" >"$tmp/summary.txt" 2>&1 ||
  fail "gpumem report --summary of the merged trace: $(cat "$tmp/summary.txt")"
grep -q "allocations" "$tmp/summary.txt" || fail "no summary of the merged trace"

# Usage: nothing to merge; traces without -o; an input named as the output; not a report.
expect_usage() { # STATUS PATTERN ARGS...
  local want=$1 pattern=$2; shift 2
  local o
  o=$("$gpumem" report "$@" 2>&1)
  local got=$?
  { [ "$got" -eq "$want" ] && grep -q -- "$pattern" <<<"$o"; } ||
    fail "gpumem report $*: status $got (want $want): $o"
}
expect_usage 2 "needs the files to merge" --merge
expect_usage 2 "traces were given: -o FILE names the merged trace" --merge "$tmp/trace.0.json"
expect_usage 2 "is both an input and an output" --merge -o "$tmp/trace.0.json" "$tmp/trace.0.json"
echo "not json" >"$tmp/notes.txt"
expect_usage 1 "neither a gpumem check JSON report nor a trace" --merge "$tmp/notes.txt"
[ "$fails" -eq 0 ] && echo "merge: ok"
[ "$fails" -eq 0 ]
