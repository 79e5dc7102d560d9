#!/usr/bin/env python3
"""A snapshot from `gpumem report --memory-viz`, read by PyTorch's own viewer code
(torch.cuda._memory_viz, where PyTorch is installed): its text summaries (segsum, trace), its
flame graphs' input (memory, segments), its HTML pages (trace_plot, segment_plot), each with
what it must say; the snapshot's shape against the keys PyTorch's readers use; and, with
PyTorch's own snapshot of the same run, that every segment PyTorch's caching allocator took is
in gpumem's (same address, same size), and what gpumem has beside it.

usage: memviz_torch.py GPUMEM_SNAPSHOT [TORCH_SNAPSHOT [OUT_DIR]]
Exit 0 when every check passes, 1 when one fails, 77 without PyTorch. OUT_DIR gets the HTML
pages (trace_plot.html, segment_plot.html) and the summaries.
"""
import os
import pickle
import sys

failures = 0


def check(what, ok, detail=""):
    global failures
    print(("ok   " if ok else "FAIL ") + what + ("" if ok or not detail else ": " + str(detail)))
    failures += 0 if ok else 1


# The keys PyTorch's readers use (torch/cuda/_memory_viz.py, torch/utils/viz/MemoryViz.js).
SEGMENT_KEYS = {"device", "address", "total_size", "allocated_size", "active_size", "stream",
                "blocks"}
BLOCK_KEYS = {"size", "requested_size", "state", "frames"}
ENTRY_KEYS = {"action", "addr", "size", "stream", "frames"}
FRAME_KEYS = {"filename", "line", "name"}


def shape(data, torch_own):
    segs = data["segments"]
    check("segments have the keys PyTorch reads",
          all(SEGMENT_KEYS <= set(s) for s in segs), [SEGMENT_KEYS - set(s) for s in segs][:1])
    check("blocks have the keys PyTorch reads",
          all(BLOCK_KEYS <= set(b) for s in segs for b in s["blocks"]))
    entries = [e for d in data["device_traces"] for e in d]
    check("trace entries have the keys PyTorch reads",
          entries and all(ENTRY_KEYS <= set(e) for e in entries))
    check("frames have the keys PyTorch reads",
          all(FRAME_KEYS <= set(f) for e in entries for f in e["frames"]))
    actions = {e["action"] for e in entries}
    check("the actions PyTorch records", actions <= {"alloc", "free_requested", "free_completed",
                                                     "segment_alloc", "segment_free"}, actions)
    if torch_own:
        # What PyTorch's own snapshot of the same run has, gpumem's has too (beside its own keys).
        for what, ours, theirs in (
                ("segment", segs[:1], torch_own["segments"][:1]),
                ("trace entry", entries[:1], [e for d in torch_own["device_traces"] for e in d][:1])):
            if ours and theirs:
                missing = set(theirs[0]) - set(ours[0]) - {"segment_pool_id", "is_expandable",
                                                          "compile_context", "user_metadata",
                                                          "requested_size", "device_free",
                                                          "forward_frames"}
                print("     %s keys PyTorch's own snapshot has that gpumem's does not: %s"
                      % (what, sorted(missing) or "none"))


def viewer(mv, data, out):
    live = sum(s["total_size"] for s in data["segments"])
    text = mv.segsum(data)
    check("segsum: total_reserved is the bytes live at the end",
          "total_reserved: %s" % mv.Bytes(live) in text, text.splitlines()[-12:-9])
    check("segsum: total_allocated equals it (each segment is one allocation)",
          "total_allocated: %s" % mv.Bytes(live) in text)
    t = mv.trace(data)
    mallocs = sum(1 for d in data["device_traces"] for e in d if e["action"] == "segment_alloc")
    check("trace: a cudaMalloc line per segment_alloc", t.count("cudaMalloc(") == mallocs,
          (t.count("cudaMalloc("), mallocs))
    flame = mv.memory(data, format_flamegraph=lambda lines: lines)
    total = sum(int(line.rsplit(" ", 1)[1]) for line in flame.splitlines() if line)
    check("memory: the flame graph's bytes are the bytes live", total == live, (total, live))
    seg = mv.segments(data, format_flamegraph=lambda lines: lines)
    check("segments: a flame graph line per segment", len(seg.splitlines()) == len(data["segments"]))
    for name, page in (("trace_plot", mv.trace_plot(data)), ("segment_plot", mv.segment_plot(data))):
        check(name + ": an HTML page with the snapshot in it",
              "<!DOCTYPE html>" in page[:200] and "snapshot.pickle" in page and
              len(page) > len(pickle.dumps(data)))
        if out:
            with open(os.path.join(out, name + ".html"), "w") as f:
                f.write(page)
    if out:
        with open(os.path.join(out, "segsum.txt"), "w") as f:
            f.write(text)


def against_torch(data, own):
    """PyTorch's own segments of the run are in gpumem's snapshot, at the same address and size."""
    def segs(snap, dev):
        return {(e["addr"], e["size"]) for e in snap["device_traces"][dev]
                if e["action"] == "segment_alloc"}
    theirs, ours = segs(own, 0), segs(data, 0)
    check("every cudaMalloc of PyTorch's caching allocator is in gpumem's snapshot",
          theirs and theirs <= ours, sorted(theirs - ours)[:3])
    extra = ours - theirs
    print("     gpumem's snapshot has %d allocations on device 0 that PyTorch's does not "
          "(%.1f MiB): %s" % (len(extra), sum(s for _, s in extra) / 2**20,
                              sorted(s >> 20 for _, s in extra)[-4:]))
    check("among them the 64 MiB and 128 MiB buffers from cuMemAlloc",
          {64 << 20, 128 << 20} <= {s for _, s in extra})
    host = data.get("gpumem", {}).get("host_memory_device", -1)
    pinned = len(data["device_traces"][host]) if host >= 0 else 0
    check("pinned memory (PyTorch's pin_memory) on the host device after the GPUs",
          host >= 1 and pinned > 0, host)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    try:
        import torch.cuda._memory_viz as mv
    except ImportError:
        print("skip: PyTorch is not installed here")
        return 77
    with open(argv[1], "rb") as f:
        data = pickle.load(f)
    own = None
    if len(argv) > 2 and argv[2]:
        with open(argv[2], "rb") as f:
            own = pickle.load(f)
    out = argv[3] if len(argv) > 3 else None
    shape(data, own)
    viewer(mv, data, out)
    if own:
        against_torch(data, own)
    print("memviz_torch: %d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
