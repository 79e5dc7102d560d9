#!/usr/bin/env python3
"""gpumem report --memory-viz and --perfetto, checked field by field against the trace.

memory-viz: the pickle is read by Python's own pickle (and each opcode checked with
pickletools to be one that PyTorch's viewer, MemoryViz.js, reads too); every allocation and
release of the trace must be its trace entries (segment_alloc and alloc; free_requested,
free_completed and segment_free), with its address, size, stream, time and stack as frames, on
its device's trace (host memory on the device after the last GPU); the segments are what was
live at the end; the blocks are inside live segments at every point, as the viewer's "Allocator
State History" needs; --max-entries keeps the last entries.

perfetto: the file is decoded by protoc against tests/report/perfetto_trace.proto (Perfetto's
messages, as its public protos number them); no field may be unknown to it; each allocation is
one slice on a track named by its call site, slices on a track never overlap, the counters end
at the bytes live at the end, each flow starts at an allocation and ends at its release.

usage: views_check.py memory-viz GPUMEM TRACE
       views_check.py perfetto GPUMEM TRACE PROTO     (exit 77 without protoc)
TRACE is a trace of the known scenario (tests/report/make_trace.c); a second trace with
several devices, kinds, streams and threads is written here.
"""
import json
import os
import pickle
import pickletools
import re
import shutil
import subprocess
import sys
import tempfile

failures = 0


def check(what, ok, detail=""):
    global failures
    if ok:
        print("ok   " + what)
    else:
        failures += 1
        print("FAIL " + what + (": " + str(detail) if detail else ""))


# ---- the trace, read as any JSON reader would ----

def read_trace(path):
    """(events, stacks): the b/e/i events in file order and the stacks table."""
    events, stacks = [], {}
    with open(path, encoding="utf-8") as f:
        for line in f.read().split("\n")[1:]:
            if line.startswith("]"):
                break
            line = line.rstrip(",")
            if not line:
                continue
            e = json.loads(line)
            if e.get("name") == "gpumem_stacks":
                stacks = {int(k): v for k, v in e["args"]["stacks"].items()}
            if e.get("ph") in ("b", "e"):
                events.append(e)
    return events, stacks


HOST_KINDS = {"pinned", "host", "registered"}
# Every kind holds memory but reserved address ranges (cuMemAddressReserve).
REPORT_KINDS = {"device", "managed", "pinned", "host", "device-async", "registered", "virtual",
                "array", "mipmapped-array", "graph"}


def allocations(events):
    """Each allocation: its b event, its e event (or None) and its index."""
    by_id, out = {}, []
    for e in events:
        if e["cat"] not in REPORT_KINDS or e["args"]["bytes"] <= 0:
            continue
        if e["ph"] == "b":
            a = {"b": e, "e": None}
            by_id[e["id"]] = a
            out.append(a)
        elif e["id"] in by_id and by_id[e["id"]]["e"] is None:
            by_id[e["id"]]["e"] = e
    return out


def frame_of(text):
    m = re.match(r"^(.*):(\d+) \((.*)\)$", text)
    if m:
        return {"filename": m.group(1), "line": int(m.group(2)), "name": m.group(3)}
    m = re.match(r"^(.*) \(in (.*)\)$", text)
    if m:
        return {"filename": m.group(2), "line": 0, "name": m.group(1)}
    return {"filename": "??", "line": 0, "name": text}


def device_index(allocs):
    """The memory_viz device of each allocation: its device, or after the last for host memory."""
    last = max([a["b"]["args"]["device"] for a in allocs if a["b"]["cat"] not in HOST_KINDS],
               default=-1)
    return lambda a: last + 1 if a["b"]["cat"] in HOST_KINDS else a["b"]["args"]["device"]


# ---- memory-viz ----

# What torch/utils/viz/MemoryViz.js's unpickler reads (and Python reads them all).
VIEWER_OPCODES = {"PROTO", "EMPTY_DICT", "EMPTY_LIST", "MARK", "SETITEMS", "APPENDS", "BININT",
                  "BININT1", "BININT2", "LONG1", "BINUNICODE", "NEWFALSE", "TUPLE2",
                  "LONG_BINPUT", "BINGET", "LONG_BINGET", "STOP"}


def memory_viz(gpumem, trace, tmp, max_entries=None):
    out = os.path.join(tmp, "snapshot.pickle")
    cmd = [gpumem, "report", "--memory-viz", trace, "-o", out]
    if max_entries:
        cmd += ["--max-entries", str(max_entries)]
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    check("%s: exit status 0" % " ".join(cmd[1:4]), run.returncode == 0, run.stdout.decode())
    with open(out, "rb") as f:
        data = f.read()
    ops = {op.name for op, _, _ in pickletools.genops(data)}
    check("only opcodes PyTorch's viewer reads", ops <= VIEWER_OPCODES, ops - VIEWER_OPCODES)
    return pickle.loads(data)


def shown_addresses(allocs):
    """Each allocation's address in the snapshot (None: left out): its own, or for memory
    without one (arrays, by their registry keys above 2^56) one from 2^52 up, 2 MiB-aligned;
    cuMemCreate handles (virtual memory at a key) are left out, shown where they are mapped."""
    shown, nxt = [], 1 << 52
    for a in allocs:
        addr = int(a["b"]["args"].get("address", "0x0"), 16)
        if addr and addr < 1 << 56:
            shown.append(addr)
        elif addr and a["b"]["cat"] == "virtual":
            shown.append(None)
        else:
            shown.append(nxt)
            nxt += (a["b"]["args"]["bytes"] + (2 << 20) - 1) // (2 << 20) * (2 << 20)
    return shown


def expected_entries(allocs, stacks, where):
    """Per device: the entries the trace makes, in time order."""
    shown = shown_addresses(allocs)
    timeline = []
    for i, a in enumerate(allocs):
        if shown[i] is None:
            continue
        timeline.append((a["b"]["ts"], 0, i, a, "b"))
        if a["e"]:
            timeline.append((a["e"]["ts"], 1, i, a, "e"))
    timeline.sort(key=lambda x: (x[0], x[2], x[1]))
    per = {}
    for ts, _, i, a, ph in timeline:
        b = a["b"]["args"]
        frames = [frame_of(s) for s in stacks.get(b.get("stack", 0), [])] or [frame_of(a["b"]["name"])]
        if ph == "e":
            frames = [frame_of(a["e"]["args"]["released_at"])]
        actions = ["segment_alloc", "alloc"] if ph == "b" else \
            ["free_requested", "free_completed", "segment_free"]
        for act in actions:
            per.setdefault(where(a), []).append({
                "action": act, "addr": shown[i], "size": b["bytes"],
                "stream": int(b.get("stream", "0x0"), 16), "frames": frames,
                "time_us": int(round(ts * 1000)) // 1000})
    return per


def viewer_invariants(snap, dev):
    """Walks a device's trace backwards from the snapshot's segments, as MemoryViz.js's
    Allocator State History does: every block inside a segment, every step."""
    segs = {s["address"]: s["total_size"] for s in snap["segments"] if s["device"] == dev}
    blocks = {b["address"]: b["size"] for s in snap["segments"] if s["device"] == dev
              for b in s["blocks"]}
    for e in reversed(snap["device_traces"][dev]):
        act = e["action"]
        if act == "free_completed":
            blocks[e["addr"]] = e["size"]
        elif act == "alloc":
            blocks.pop(e["addr"], None)
        elif act == "segment_free":
            segs[e["addr"]] = e["size"]
        elif act == "segment_alloc":
            segs.pop(e["addr"], None)
        for addr, size in blocks.items():
            if not any(s <= addr and addr + size <= s + n for s, n in segs.items()):
                return "block %#x (%d bytes) outside every segment" % (addr, size)
    return None


def check_memory_viz(gpumem, trace, tmp):
    events, stacks = read_trace(trace)
    allocs = allocations(events)
    where = device_index(allocs)
    snap = memory_viz(gpumem, trace, tmp)
    name = os.path.basename(trace)
    check(name + ": a dict with segments and device_traces",
          isinstance(snap, dict) and {"segments", "device_traces"} <= set(snap))
    want = expected_entries(allocs, stacks, where)
    ndev = max(want) + 1 if want else 0
    check(name + ": one trace per device", len(snap["device_traces"]) == ndev,
          "%d, want %d" % (len(snap["device_traces"]), ndev))
    for dev in range(ndev):
        got = snap["device_traces"][dev]
        w = want.get(dev, [])
        check(name + ": device %d: %d entries" % (dev, len(w)), len(got) == len(w), len(got))
        bad = [(g, x) for g, x in zip(got, w) if g != x]
        check(name + ": device %d: each entry as the trace says" % dev, not bad,
              bad[:1])
        check(name + ": device %d: blocks inside segments at every step" % dev,
              viewer_invariants(snap, dev) is None, viewer_invariants(snap, dev))
    shown = shown_addresses(allocs)
    live = sorted((where(a), shown[i], a["b"]["args"]["bytes"])
                  for i, a in enumerate(allocs) if a["e"] is None and shown[i] is not None)
    segs = sorted((s["device"], s["address"], s["total_size"]) for s in snap["segments"])
    check(name + ": the segments are the allocations live at the end", segs == live,
          (segs, live))
    addrs = [e["addr"] for d in snap["device_traces"] for e in d] + [s[1] for s in segs]
    check(name + ": every address exact as a JavaScript number (below 2^53)",
          all(0 < x < 1 << 53 for x in addrs), [hex(x) for x in addrs if not 0 < x < 1 << 53][:3])
    for s in snap["segments"]:
        b = s["blocks"]
        ok = len(b) == 1 and b[0]["address"] == s["address"] and b[0]["size"] == s["total_size"] \
            and b[0]["state"] == "active_allocated" and s["allocated_size"] == s["total_size"]
        check(name + ": segment %#x holds its one block" % s["address"], ok, s)
    # PyTorch's record keeps the last max_entries: so does --max-entries.
    short = memory_viz(gpumem, trace, tmp, max_entries=4)
    for dev in range(ndev):
        full = snap["device_traces"][dev]
        part = short["device_traces"][dev]
        check(name + ": --max-entries 4: device %d keeps its last entries" % dev,
              len(part) <= 4 and part == full[len(full) - len(part):] and
              (len(full) <= 4 or len(part) >= 2), len(part))


# ---- perfetto ----

def parse_text(text):
    """protoc's text format as nested lists of (key, value or list)."""
    root, stack = [], []
    cur = root
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        if line.endswith("{"):
            node = []
            cur.append((line[:-1].strip(), node))
            stack.append(cur)
            cur = node
        elif line == "}":
            cur = stack.pop()
        else:
            k, v = line.split(":", 1)
            v = v.strip()
            if v.startswith('"'):
                v = json.loads(v) if "\\" not in v else v[1:-1].encode().decode("unicode_escape")
            cur.append((k, v))
    return root


def get(node, key, default=None):
    for k, v in node:
        if k == key:
            return v
    return default


def get_all(node, key):
    return [v for k, v in node if k == key]


def perfetto(gpumem, traces, proto, tmp):
    out = os.path.join(tmp, "trace.pftrace")
    cmd = [gpumem, "report"]
    for t in traces:
        cmd += ["--perfetto", t]
    cmd += ["-o", out]
    run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    check("gpumem report --perfetto (%d traces): exit status 0" % len(traces),
          run.returncode == 0, run.stdout.decode())
    with open(out, "rb") as f:
        dec = subprocess.run(["protoc", "--proto_path=" + os.path.dirname(proto),
                              "--decode=perfetto.protos.Trace", os.path.basename(proto)],
                             stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check("protoc decodes it as perfetto.protos.Trace", dec.returncode == 0, dec.stderr.decode())
    text = dec.stdout.decode()
    unknown = [l for l in text.split("\n") if re.match(r"^\s*\d+\s*[:{]", l)]
    check("no field unknown to Perfetto's messages", not unknown, unknown[:3])
    return [v for k, v in parse_text(text) if k == "packet"], os.path.getsize(out)


def check_one_process(packets, seq, trace, name):
    events, stacks = read_trace(trace)
    allocs = allocations(events)
    mine = [p for p in packets if get(p, "trusted_packet_sequence_id") == str(seq)]
    check(name + ": packets on sequence %d" % seq, bool(mine))
    if not mine:
        return 0
    tracks, names, args = {}, {}, {}
    process = None
    for p in mine:
        td = get(p, "track_descriptor")
        if td:
            tracks[get(td, "uuid")] = td
            if get(td, "process"):
                process = get(td, "process")
        inter = get(p, "interned_data") or []
        for k, v in inter:
            (names if k == "event_names" else args)[get(v, "iid")] = get(v, "name")
    check(name + ": a process with the trace's pid", process is not None and
          get(process, "pid") == str(events[0]["pid"] if events else 0), process)
    first = mine[0]
    check(name + ": the first packet clears the sequence's state",
          get(first, "sequence_flags") == "3")
    check(name + ": times in the trace's own clock (no clock to convert from)",
          all(get(p, "trace_packet_defaults") is None for p in mine))
    counters = {u: get(td, "name") for u, td in tracks.items() if get(td, "counter")}
    units = {get(get(td, "counter"), "unit") for td in tracks.values() if get(td, "counter")}
    check(name + ": counters in bytes", units == {"UNIT_SIZE_BYTES"}, units)
    kinds = sorted({"%s memory, device %d" % (a["b"]["cat"], a["b"]["args"]["device"])
                    for a in allocs})
    pools = pool_counters(trace)
    check(name + ": a counter per memory kind and device, two per pool",
          sorted(counters.values()) == sorted(kinds + list(pools)),
          (sorted(counters.values()), kinds, sorted(pools)))
    slices, open_on, last_value, flows, instants, times = [], {}, {}, {}, [], []
    for p in mine:
        te = get(p, "track_event")
        if not te:
            continue
        times.append(int(get(p, "timestamp")))
        ty, track = get(te, "type"), get(te, "track_uuid")
        for cu, cv in zip(get_all(te, "extra_counter_track_uuids"), get_all(te, "extra_counter_values")):
            last_value[counters.get(cu, "?")] = int(cv)
        if ty == "TYPE_COUNTER":
            last_value[counters.get(track, "?")] = int(get(te, "counter_value"))
        if ty == "TYPE_SLICE_BEGIN":
            check_nesting = track not in open_on
            if not check_nesting:
                check(name + ": slices on a track never overlap", False, track)
            a = {get(args_, "name_iid"): args_ for args_ in get_all(te, "debug_annotations")}
            open_on[track] = (int(get(p, "timestamp")), a)
            slices.append((get(tracks[track], "name"), names[get(te, "name_iid")],
                           int(get(a[[k for k, v in args.items() if v == "bytes"][0]], "uint_value"))))
        elif ty == "TYPE_SLICE_END":
            open_on.pop(track, None)
        elif ty == "TYPE_INSTANT":
            instants.append(names.get(get(te, "name_iid")))
            for f in get_all(te, "flow_ids"):
                flows.setdefault(f, []).append("start")
            for f in get_all(te, "terminating_flow_ids"):
                flows.setdefault(f, []).append("end")
    check(name + ": packets in time order", times == sorted(times))
    want = sorted((a["b"]["name"], a["b"]["cat"], a["b"]["args"]["bytes"]) for a in allocs)
    check(name + ": a slice per allocation, on its call site's track, named by its kind",
          sorted(slices) == want, (sorted(slices)[:3], want[:3]))
    check(name + ": the allocations live at the end are the slices left open",
          len(open_on) == sum(1 for a in allocs if a["e"] is None), len(open_on))
    live = {}
    for a in allocs:
        k = "%s memory, device %d" % (a["b"]["cat"], a["b"]["args"]["device"])
        live[k] = live.get(k, 0) + (0 if a["e"] else a["b"]["args"]["bytes"])
    live.update(pools)
    check(name + ": each counter ends at the bytes live at the end (a pool's: its last)",
          last_value == live, (last_value, live))
    released = sum(1 for a in allocs if a["e"])
    check(name + ": a flow from each allocation, ending at its release",
          len(flows) == len(allocs) and
          sum(1 for v in flows.values() if v == ["start", "end"]) == released and
          all(v in (["start"], ["start", "end"]) for v in flows.values()), flows)
    return len(mine)


def pool_counters(trace):
    """A pool's two counters' names and last values: reserved, and its blocks' in use."""
    out = {}
    with open(trace, encoding="utf-8") as f:
        for line in f:
            if not line.startswith('{"ph":"C"') or " pool 0x" not in line:
                continue
            e = json.loads(line.rstrip().rstrip(","))
            out[e["name"]] = e["args"]["reserved"]
            out[e["name"].replace(" reserved, device ", " in use, device ")] = e["args"]["in_use"]
    return out


# ---- a trace with several devices, kinds, streams and threads ----

def hand_trace(path):
    ev = []

    def span(ph, ts, id_, kind, dev, addr, size, tid, stack=0, stream="0x0", site="k.cu:10 (f)"):
        args = {"bytes": size, "device": dev, "address": addr}
        if ph == "b":
            args.update({"stream": stream, "stack": stack})
        else:
            args["released_at"] = "cudaFree"
        ev.append({"ph": ph, "pid": 77, "tid": tid, "ts": ts, "cat": kind, "name": site,
                   "id": id_, "args": args})
    span("b", 10.0, "0x1", "device", 0, "0x7f0000000000", 1 << 20, 1, stack=1)
    span("b", 11.0, "0x2", "device", 1, "0x7f0100000000", 2 << 20, 2, site="k.cu:20 (g)")
    span("b", 12.0, "0x3", "pinned", 0, "0x7e0000000000", 4096, 1, site="k.cu:30 (h)")
    span("b", 13.0, "0x4", "device-async", 1, "0x7f0100200000", 8192, 1, stream="0x5555",
         site="k.cu:40 (i)")
    span("b", 13.5, "0x5", "device", 0, "0x7f0000100000", 512, 1, stack=1)
    span("e", 14.0, "0x1", "device", 0, "0x7f0000000000", 1 << 20, 2)
    span("b", 14.0, "0x6", "device", 0, "0x7f0000000000", 1 << 20, 1, stack=1)
    span("e", 15.0, "0x4", "device-async", 1, "0x7f0100200000", 8192, 2)
    span("e", 16.0, "0x3", "pinned", 0, "0x7e0000000000", 4096, 1)
    span("e", 17.0, "0x6", "device", 0, "0x7f0000000000", 1 << 20, 1)
    # Arrays and graph memory count; a reserved address range holds no memory and does not.
    span("b", 18.0, "0x7", "array", 1, "0x7f0100400000", 65536, 1, site="k.cu:50 (arr)")
    span("b", 19.0, "0x8", "graph", 0, "0x7f0000200000", 4096, 1, site="k.cu:60 (gr)")
    span("b", 20.0, "0x9", "reserved", 0, "0x7d0000000000", 1 << 30, 1, site="k.cu:70 (va)")
    # What gpumem check records for memory without an address: registry keys above 2^56 (an
    # array's; a cuMemCreate handle's, whose memory shows where it is mapped).
    span("b", 21.0, "0xa", "array", 0, "0xc000000012345600", 3 << 20, 1, site="k.cu:80 (tex)")
    span("b", 22.0, "0xb", "virtual", 0, "0x8000000000000100", 2 << 20, 1, site="k.cu:90 (vmm)")
    span("b", 23.0, "0xc", "virtual", 0, "0x7f0000400000", 2 << 20, 1, site="k.cu:91 (vmm)")
    span("b", 24.0, "0xd", "array", 0, "0xc000000012345700", 1024, 1, site="k.cu:80 (tex)")
    with open(path, "w") as f:
        f.write('{"displayTimeUnit":"ns","traceEvents":[\n')
        f.write(json.dumps({"ph": "M", "pid": 77, "tid": 0, "name": "process_name",
                            "args": {"name": "gpumem check: ./multi"}}) + ",\n")
        f.write(json.dumps({"ph": "M", "pid": 77, "tid": 0, "name": "gpumem_trace",
                            "args": {"schema": "gpumem-trace/1", "tool": "gpumem check"}}) + ",\n")
        for e in ev:
            f.write(json.dumps(e, separators=(",", ":")) + ",\n")
        # A pool's counters, as the library writes them when its reserved memory changes.
        for ts, res, use in ((12.5, 20 << 20, 4096), (16.5, 22 << 20, 3 << 20), (17.5, 2 << 20, 0)):
            f.write('{"ph":"C","pid":77,"tid":1,"ts":%.3f,"name":"device pool 0x55d0c0 reserved, '
                    'device 0","args":{"reserved":%d,"in_use":%d}},\n' % (ts, res, use))
        f.write(json.dumps({"ph": "M", "pid": 77, "tid": 0, "name": "gpumem_stacks",
                            "args": {"stacks": {"1": ["k.cu:10 (f)", "k.cu:99 (main)",
                                                      "start (in libc.so.6)"]}}}) + ",\n")
        f.write(json.dumps({"ph": "M", "pid": 77, "tid": 0, "name": "gpumem_end",
                            "args": {"events": len(ev), "dropped": 0}}) + "\n")
        f.write('],\n"stackFrames":{\n}}\n')


def main(argv):
    if len(argv) < 4 or argv[1] not in ("memory-viz", "perfetto"):
        print(__doc__)
        return 2
    what, gpumem, trace = argv[1], argv[2], argv[3]
    tmp = tempfile.mkdtemp(prefix="gpumem-views.")
    try:
        multi = os.path.join(tmp, "multi.json")
        hand_trace(multi)
        if what == "memory-viz":
            for t in (trace, multi):
                check_memory_viz(gpumem, t, tmp)
        else:
            if not shutil.which("protoc"):
                print("skip: protoc is not installed (apt-get install protobuf-compiler)")
                return 77
            proto = argv[4]
            for t in (trace, multi):
                packets, _ = perfetto(gpumem, [t], proto, tmp)
                check_one_process(packets, 1, t, os.path.basename(t))
            packets, _ = perfetto(gpumem, [trace, multi], proto, tmp)
            n1 = check_one_process(packets, 1, trace, "two traces, the first")
            n2 = check_one_process(packets, 2, multi, "two traces, the second")
            check("two traces: every packet is one of their sequences", n1 + n2 == len(packets))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
