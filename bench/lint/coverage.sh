#!/bin/sh
# How many translation units of real CUDA code bases `gpumem lint` analyses when given only
# each benchmark's folder and the include folders its own Makefiles name (-I), and why the
# others are not analysed (clang's first error, classified). Prints a Markdown table.
#
# usage: bench/lint/coverage.sh [--parse] GPUMEM BENCH_FOLDER...
#   GPUMEM        build/tools/gpumem (or build/tools/lint/gpumem-lint-dev)
#   BENCH_FOLDER  one benchmark each (e.g. HeCBench's src/*-cuda, Rodinia's cuda/*, a
#                 checkout of nccl-tests); each is given to one `gpumem lint` run
#   --parse       quick: run each unit's analyzer command line as `gpumem lint
#                 --print-commands` gives it, with clang's -fsyntax-only instead of --analyze
#                 (parse errors only; a unit that parses is almost always analysed)
# PLUGIN: --analyzer-plugin (with --parse, any file will do). JOBS (default 2) benchmarks at once; TIMEOUT (default 600) seconds per unit.
# FINDINGS (without --parse): a file that gets every finding of the run, one JSON object a
# line with the benchmark folder added ("folder"), for reading them (precision). A folder's code
# base (a row of the table) is the first of hecbench, rodinia, nccl-tests in its path, else
# the name of its parent folder. Units not analysed are listed on stderr with clang's error.
set -eu
parse=0
if [ "${1:-}" = --parse ]; then parse=1; shift; fi
gpumem=${1:?usage: bench/lint/coverage.sh [--parse] GPUMEM BENCH_FOLDER...}
shift
exec python3 - "$parse" "$gpumem" "$@" <<'PY'
import concurrent.futures as cf, glob, json, os, re, subprocess, sys, threading

parse, gpumem, folders = sys.argv[1] == "1", os.path.abspath(sys.argv[2]), sys.argv[3:]
jobs = int(os.environ.get("JOBS", "2"))
lock = threading.Lock()
timeout = int(os.environ.get("TIMEOUT", "600"))
# gpumem's `lint` command, or the front end's standalone binary (which takes no command).
lint = [gpumem, "lint"] if os.path.basename(gpumem) == "gpumem" else [gpumem]
if os.environ.get("PLUGIN"):
    lint.append("--analyzer-plugin=" + os.environ["PLUGIN"])

def own_includes(folder):
    """The -I folders the benchmark's Makefiles name, relative ones that exist."""
    flags = []
    for mk in sorted(glob.glob(f"{folder}/Makefile*") + glob.glob(f"{folder}/*/Makefile*")
                     + glob.glob(f"{folder}/*.mk") + glob.glob(f"{folder}/*/*.mk")):
        try:
            text = open(mk, errors="replace").read()
        except OSError:
            continue
        for d in re.findall(r"-I\s*([^\s$'\"<>]+)", text):
            if d.startswith("/"):
                continue
            p = os.path.normpath(os.path.join(os.path.dirname(mk), d))
            if os.path.isdir(p) and f"-I{p}" not in flags:
                flags.append(f"-I{p}")
    return flags

def parse_units(folder, flags):
    """(unit, first error or None) for each unit, from --print-commands run as -fsyntax-only."""
    cmd = lint + ["--no-config", "--print-commands", folder, "--"] + flags
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    res = []
    for line in out.splitlines():
        a = line.split(" ")
        keep, i = [], 0
        while i < len(a):
            if a[i] == "--analyze":
                keep.append("-fsyntax-only")
            elif a[i] == "-Xclang" and i + 1 < len(a) and (a[i + 1] in ("-load", "-analyzer-config")
                                                           or a[i + 1].startswith("-analyzer")):
                i += 4 if a[i + 1] in ("-load", "-analyzer-config") else 2
                continue
            elif a[i] in ("--analyzer-output", "-o"):
                i += 1
            else:
                keep.append(a[i])
            i += 1
        unit = keep[-1]
        try:
            p = subprocess.run(keep + ["-w"], capture_output=True, text=True, timeout=timeout)
            err = None if p.returncode == 0 else first_error(p.stderr) or f"exit status {p.returncode}"
        except subprocess.TimeoutExpired:
            err = f"timed out after {timeout} s"
        res.append((unit, err))
    return res

def analyse_units(folder, flags):
    """(unit, first error or None) for each unit, from a real `gpumem lint` run."""
    cmd = lint + ["--no-config", "-q", "--fail-on=never", "--format=json", "-j1",
           f"--timeout={timeout}", folder, "--"] + flags + ["-w"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        return [(folder, "gpumem lint failed: " + p.stderr.strip()[:200])]
    if os.environ.get("FINDINGS"):
        with lock, open(os.environ["FINDINGS"], "a") as out:
            for f in doc.get("findings", []):
                out.write(json.dumps(dict(f, folder=folder)) + "\n")
    bad = {}
    for m in doc.get("notAnalyzed", []):
        unit, _, why = m.partition(": not analyzed: ")
        bad[unit] = why or m
    n = doc["summary"]["files"]
    return [(u, w) for u, w in bad.items()] + [(None, None)] * (n - len(bad))

def first_error(text):
    for line in text.splitlines():
        if "error: " in line:
            return line
    return None

CLASSES = [  # (class, regex on clang's first error), the first match wins
    ("header not found", r"'([^']+)' file not found"),
    ("texture reference (removed in CUDA 12)", r"texture|cudaBindTexture|tex1Dfetch|tex2D\b"),
    ("API removed in CUDA 13", r"cudaThread|cudaDeviceProp.*(clockRate|memoryClockRate)|no member named '(clockRate|memoryClockRate|maxGridSize|deviceOverlap|computeMode|kernelExecTimeoutEnabled)'|cudaMemcpy(To|From)Array|cudaProfilerInitialize"),
    ("device function called from host", r"reference to __device__ function|no matching function for call to '(min|max)'"),
    ("undeclared name", r"use of undeclared identifier|unknown type name|no member named"),
    ("no matching call", r"no matching (function|constructor|member function)"),
    ("timeout or crash", r"timed out|crashed|exit status"),
]

def classify(err):
    for name, rx in CLASSES:
        m = re.search(rx, err)
        if m:
            return name + (f": {m.group(1)}" if name == "header not found" else "")
    return "other"

def codebase(folder):
    parts = os.path.normpath(os.path.abspath(folder)).split("/")
    for name in ("hecbench", "rodinia", "nccl-tests"):
        if name in parts:
            return name
    return parts[-2]

def run(folder):
    flags = own_includes(folder)
    return folder, (parse_units if parse else analyse_units)(folder, flags)

totals, reasons, failures = {}, {}, []
with cf.ThreadPoolExecutor(jobs) as ex:
    for folder, res in ex.map(run, folders):
        cb = codebase(folder)
        t = totals.setdefault(cb, [0, 0])
        for unit, err in res:
            t[0] += 1
            if err is None:
                t[1] += 1
                continue
            c = classify(err)
            reasons[(cb, c)] = reasons.get((cb, c), 0) + 1
            failures.append((cb, unit, err))
print(f"| code base | units | analysed | not analysed |\n|---|---|---|---|")
all_n = all_a = 0
for cb, (n, a) in sorted(totals.items()):
    print(f"| {cb} | {n} | {a} ({100 * a / max(n, 1):.1f} %) | {n - a} |")
    all_n, all_a = all_n + n, all_a + a
if all_n:
    print(f"| all | {all_n} | {all_a} ({100 * all_a / all_n:.1f} %) | {all_n - all_a} |")
print("\n| code base | why not analysed (clang's first error) | units |\n|---|---|---|")
for (cb, c), k in sorted(reasons.items(), key=lambda x: (x[0][0], -x[1])):
    print(f"| {cb} | {c} | {k} |")
print()
for cb, unit, err in sorted(failures, key=lambda x: (x[0], str(x[1]))):
    print(f"{cb}\t{unit}\t{err}", file=sys.stderr)
PY
