#!/bin/sh
# How many translation units of real CUDA code bases `gpumem lint` analyses when given only
# each benchmark's folder and the include folders its own Makefiles name (-I), and why the
# others are not analysed (clang's first error, classified). Prints a Markdown table.
#
# usage: bench/lint/coverage.sh [--parse] [--defines] GPUMEM BENCH_FOLDER...
#   GPUMEM        build/tools/gpumem (or build/tools/lint/gpumem-lint-dev)
#   BENCH_FOLDER  one benchmark each (e.g. HeCBench's src/*-cuda, Rodinia's cuda/*, a
#                 checkout of nccl-tests); each is given to one `gpumem lint` run
#   --parse       quick: run each unit's analyzer command line as `gpumem lint
#                 --print-commands` gives it, with clang's -fsyntax-only instead of --analyze
#                 (parse errors only; a unit that parses is almost always analysed)
#   --defines     also give each benchmark the -D flags its Makefile gives (the files named
#                 Makefile, makefile or GNUmakefile in the folder and its subfolders, read as
#                 make reads them with no variable set on the command line: assignments,
#                 $(VAR) and ifeq/ifneq/ifdef/ifndef; a flag whose value is left with a `$`
#                 is dropped): what a user who passes their build's defines after `--` gets
# PLUGIN: --analyzer-plugin (with --parse, any file will do). JOBS (default 2) benchmarks at once; TIMEOUT (default 600) seconds per unit.
# FINDINGS (without --parse): a file that gets every finding of the run, one JSON object a
# line with the benchmark folder added ("folder"), for reading them (precision). A folder's code
# base (a row of the table) is the first of hecbench, rodinia, nccl-tests in its path, else
# the name of its parent folder. Units not analysed are listed on stderr with clang's error.
set -eu
parse=0 defines=0
while :; do
  case ${1:-} in
    --parse) parse=1; shift ;;
    --defines) defines=1; shift ;;
    *) break ;;
  esac
done
gpumem=${1:?usage: bench/lint/coverage.sh [--parse] [--defines] GPUMEM BENCH_FOLDER...}
shift
exec python3 - "$parse" "$defines" "$gpumem" "$@" <<'PY'
import concurrent.futures as cf, glob, json, os, re, subprocess, sys, threading

parse, defines = sys.argv[1] == "1", sys.argv[2] == "1"
gpumem, folders = os.path.abspath(sys.argv[3]), sys.argv[4:]
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

def make_lines(path):
    """A Makefile's logical lines: continuations joined, comments dropped."""
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return []
    out = []
    for line in re.sub(r"\\\n", " ", text).splitlines():
        line = re.sub(r"(?<!\\)#.*", "", line)
        if line.strip():
            out.append(line)
    return out

def make_expand(value, env, depth=0):
    """$(VAR) and ${VAR} with the values set so far (unset: empty); $(func ...) is kept."""
    if depth > 8:
        return value
    def one(m):
        name = m.group(1) or m.group(2)
        return make_expand(env.get(name, ""), env, depth + 1)
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_.]*)\)|\$\{([A-Za-z_][A-Za-z0-9_.]*)\}", one, value)

def make_condition(line, env):
    """ifeq/ifneq/ifdef/ifndef's truth, or None when the line is not one."""
    m = re.match(r"\s*(ifeq|ifneq|ifdef|ifndef)\s+(.*)$", line)
    if not m:
        return None
    kind, rest = m.group(1), m.group(2).strip()
    if kind in ("ifdef", "ifndef"):
        v = env.get(make_expand(rest, env), "")
        return bool(v.strip()) == (kind == "ifdef")
    m2 = re.match(r"\((.*),(.*)\)$", rest) or re.match(r"[\"'](.*)[\"']\s+[\"'](.*)[\"']$", rest)
    if not m2:
        return False
    a, b = (make_expand(x, env).strip() for x in m2.groups())
    return (a == b) == (kind == "ifeq")

def own_defines(folder):
    """The -D flags the benchmark's Makefiles give, first definition of a name wins."""
    flags, names = [], set()
    for mk in sorted(glob.glob(f"{folder}/[Mm]akefile") + glob.glob(f"{folder}/GNUmakefile")
                     + glob.glob(f"{folder}/*/[Mm]akefile")):
        env, stack, recipes = {}, [], []  # stack: (branch taken, some branch taken) per if
        for line in make_lines(mk):
            active = all(t for t, _ in stack)
            word = line.split()[0]
            if word == "else":
                taken, any_taken = stack[-1] if stack else (False, True)
                rest = line.split(None, 1)[1] if len(line.split()) > 1 else ""
                cond = make_condition(rest, env) if rest else True
                if stack:
                    stack[-1] = (not any_taken and bool(cond), any_taken or bool(cond))
                continue
            if word == "endif":
                if stack:
                    stack.pop()
                continue
            cond = make_condition(line, env)
            if cond is not None:
                stack.append((cond, cond))
                continue
            if not active:
                continue
            if line.startswith("\t"):
                recipes.append(line)
                continue
            m = re.match(r"\s*(?:override\s+|export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*([:?+!]?)=\s*(.*)$", line)
            if m:
                name, op, value = m.groups()
                if op == "?" and name in env:
                    continue
                value = make_expand(value, env) if op == ":" else value
                env[name] = (env.get(name, "") + " " + value) if op == "+" else value
        text = " ".join(make_expand(v, env) for v in list(env.values()) + recipes)
        for d in re.findall(r"(?<![\w-])-D\s*([A-Za-z_][A-Za-z0-9_]*(?:=[^\s'\"]*)?)", text):
            name = d.split("=")[0]
            if "$" in d or "(" in d or name in names:
                continue
            names.add(name)
            flags.append("-D" + d)
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
    flags = own_includes(folder) + (own_defines(folder) if defines else [])
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
