#!/usr/bin/env bash
# gpumem bench's devices section on the simulated devices (host tests bench_devices_sim*):
#   devices_sim.sh GPUMEM MODE
#     two:    GPUMEM_SIM_DEVICES=2: the rows of both ordered pairs (cuMemcpyPeer and gpumem_copy,
#             peer access off and on) and of each device's pool are in the table and the JSON,
#             every figure positive, exit status 0
#     one:    one device: one line says so, the JSON's devices has the note and no rows
#     nopeer: three devices that cannot reach each other (GPUMEM_SIM_PEER_ACCESS=0): the raw peer
#             rows say why they were not measured, gpumem_copy (staged) is measured, status 0
# Exit status: 0 as expected, 1 not, 77 without python3 or without JSON in this gpumem.
set -uo pipefail
gpumem=$1 mode=$2
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-bench-devices.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GPUMEM_BACKEND=sim GPUMEM_SIM_DEVICE_BYTES=1GiB
case $mode in
  two) export GPUMEM_SIM_DEVICES=2 ;;
  one) export GPUMEM_SIM_DEVICES=1 ;;
  nopeer) export GPUMEM_SIM_DEVICES=3 GPUMEM_SIM_PEER_ACCESS=0 ;;
  *) echo "usage: devices_sim.sh GPUMEM two|one|nopeer"; exit 2 ;;
esac
"$gpumem" bench --quick --json "$tmp/bench.json" >"$tmp/out.txt" 2>"$tmp/err.txt"
rc=$?
cat "$tmp/out.txt"
if grep -q "built without jansson" "$tmp/err.txt"; then echo "SKIP: no JSON in this gpumem"; exit 77; fi
python3 - "$tmp/bench.json" "$tmp/out.txt" "$mode" "$rc" <<'PYTHON'
import json, re, sys
path, out, mode, rc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
text = open(out).read()
doc = json.load(open(path))
dev = doc["devices"]
fails = []
def want(cond, what):
    if not cond:
        fails.append(what)
want(rc == 0, f"exit status {rc}")
want(doc["backend"] == "sim", "backend is not sim")
want(doc["allocation"]["rows"] == [] and doc["copies"]["rows"] == [], "single-device rows on sim")
want("simulated devices (GPUMEM_BACKEND=sim)" in text, "no line about the simulated devices")
peers, pools = dev["peer_copies"], dev["pools"]["rows"]
if mode == "one":
    want(dev["count"] == 1 and dev["measured"] == 0, f"count {dev['count']}")
    want(dev["note"] and "one device" in dev["note"], f"note {dev['note']}")
    want(peers == [] and pools == [], "rows with one device")
    want(re.search(r"\nseveral devices: not measured: one device here .*\n", text), "no one-line note")
    want("between devices" not in text, "a peer table with one device")
else:
    n = 2 if mode == "two" else 3
    want(dev["count"] == n and dev["measured"] == n, f"count {dev['count']}")
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b]
    want(sorted((p["src"], p["dst"], p["key"]) for p in peers) ==
         sorted((a, b, k) for a, b in pairs for k in ("peer_copy", "gpumem_copy")),
         "peer rows are not both kinds for every ordered pair")
    want(len(dev["links"]) == len(pairs) and all(l["why"] == "simulated devices" for l in dev["links"]),
         "links")
    for p in peers:
        raw_refused = mode == "nopeer" and p["key"] == "peer_copy"
        for col in ("access_off_gbps", "access_on_gbps"):
            v = p[col]
            if raw_refused:
                want(v is None, f"{p['key']} {p['src']}->{p['dst']} {col} measured though refused")
            else:
                want(isinstance(v, float) and v > 0, f"{p['key']} {p['src']}->{p['dst']} {col} = {v}")
        if raw_refused:
            want(p["note"] and "GPUMEM_SIM_PEER_ACCESS=0" in p["note"], f"note {p['note']}")
        else:
            want(p["note"] is None and min(p["samples"]) >= 1, f"note {p['note']}, samples {p['samples']}")
    want([(r["device"], r["key"]) for r in pools] ==
         [(0, "pool_device")] + [(d, k) for d in range(1, n)
                                 for k in ("pool_device", "pool_device_other_current")],
         "pool rows")
    for r in pools:
        want(all(isinstance(v, float) and v > 0 for v in r["median_ns"]), f"pool row {r}")
    ratio = [r["vs_ratio"] for r in pools if r["key"] == "pool_device_other_current"]
    want(all(x is not None and x > 0 for rr in ratio for x in rr), f"ratios {ratio}")
    for a, b in pairs:
        want(re.search(rf"\n  device {a} -> {b}: link limit unknown \(simulated devices\)\n"
                       r"    cuMemcpyPeer +([0-9.]+|-) .*\n    gpumem_copy +[0-9]+\.[0-9] ", text),
             f"table lines of {a} -> {b}")
    want(re.search(r"\n  device 1: the same, device 0 current +[0-9.]+ us +[0-9.]+ us +"
                   r"[0-9.]+x, [0-9.]+x the device's own\n", text), "pool line of device 1")
for f in fails:
    print("FAIL:", f)
if not fails:
    print(f"ok: bench devices on the simulated device ({mode})")
sys.exit(1 if fails else 0)
PYTHON
