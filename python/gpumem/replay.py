"""PyTorch's side of `gpumem bench --replay`: a replay log (gpumem-replay 1, written by
gpumem bench) replayed into PyTorch's caching allocator through
torch.cuda.caching_allocator_alloc and caching_allocator_delete, in the log's order, on one
thread, each of the recording's streams a torch.cuda.Stream (stream 0, the default stream).

    python3 -m gpumem.replay [--limit BYTES] [--cold BYTES] LOG

PYTORCH_CUDA_ALLOC_CONF chooses the allocator's settings (expandable_segments:True), as for
any PyTorch program. Prints one JSON line: peak_reserved (torch.cuda.memory_reserved() read
after every operation), requested_at_peak, ns_per_op (a second, timed replay), oom_at (the
operation that ran out of memory under --limit, a memory fraction of the device, or -1).
With --cold, the timed replay writes BYTES of a host buffer (a byte a cache line) before each
operation and times the operations alone, as gpumem bench --replay --cold does."""
import argparse
import json
import sys
import time


def load(path):
    ops = []
    with open(path) as f:
        if not f.readline().startswith("gpumem-replay 1"):
            raise SystemExit("%s: not a replay log (gpumem-replay 1)" % path)
        sizes = {}
        for line in f:
            if line.startswith("a "):
                _, slot, size, stream, _thread, _ns = line.split()
                sizes[slot] = int(size)
                ops.append((True, slot, int(size), int(stream, 16)))
            elif line.startswith("f "):
                slot = line.split()[1]
                ops.append((False, slot, sizes.get(slot, 0), 0))
    return ops


def replay(torch, ops, streams, measure, cold=None):
    ptr = {}
    stream_of = {}
    live = peak = at_peak = 0
    oom = -1
    in_ops = 0
    start = time.perf_counter_ns()
    for i, (alloc, slot, size, handle) in enumerate(ops):
        if cold is not None:
            cold[::64] += 1
            op_start = time.perf_counter_ns()
        try:
            if alloc:
                s = streams[handle]
                ptr[slot] = torch.cuda.caching_allocator_alloc(size, stream=s)
                stream_of[slot] = s
                live += size
            elif slot in ptr:
                torch.cuda.caching_allocator_delete(ptr.pop(slot))
                live -= size
        except RuntimeError:  # torch.OutOfMemoryError is one
            oom = i
            break
        if cold is not None:
            in_ops += time.perf_counter_ns() - op_start
        if measure:
            reserved = torch.cuda.memory_reserved()
            if reserved > peak:
                peak, at_peak = reserved, live
    torch.cuda.synchronize()
    elapsed = in_ops if cold is not None else time.perf_counter_ns() - start
    for p in ptr.values():
        torch.cuda.caching_allocator_delete(p)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return peak, at_peak, elapsed / max(len(ops), 1), oom


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m gpumem.replay")
    parser.add_argument("--limit", type=int, default=0, help="bytes PyTorch may reserve")
    parser.add_argument("--cold", type=int, default=0,
                        help="bytes written before each timed operation")
    parser.add_argument("log")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed here (import torch failed)")
        return 0
    if not torch.cuda.is_available():
        print("PyTorch sees no CUDA device")
        return 0
    ops = load(args.log)
    if args.limit:
        total = torch.cuda.get_device_properties(0).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, args.limit / total))
    handles = sorted({h for alloc, _, _, h in ops if alloc})
    streams = {h: (torch.cuda.default_stream() if h == 0 else torch.cuda.Stream())
               for h in handles}
    peak, at_peak, _, oom = replay(torch, ops, streams, True)
    ns = 0.0
    if oom < 0:
        cold = torch.zeros(args.cold, dtype=torch.uint8) if args.cold else None
        _, _, ns, _ = replay(torch, ops, streams, False, cold)
    print(json.dumps({"peak_reserved": peak, "requested_at_peak": at_peak,
                      "ns_per_op": round(ns, 1), "oom_at": oom}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
