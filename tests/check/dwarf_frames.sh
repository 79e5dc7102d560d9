#!/usr/bin/env bash
# Checks, without a GPU, that the frames the planted-bug programs' expect lines assert (at=,
# alloc_at=, first_at=; see run_one.sh) are what the compiler made of each build: for every
# built program BUILD_DIR/check_<prog>_<variant> and every CHAIN of progs/<prog>.*,
#   - with debug information: each run of CHAIN's frames up to a "called from" (",") is the
#     inline chain of some call instruction, as llvm-symbolizer reads it from the DWARF at the
#     call's return address less one (where a stack's frame is looked up): the functions, the
#     marked lines, inlined or not; the first run's call instruction calls the finding's CALL
#     for at= (the runtime header's cudaMallocHost<T> calls cudaHostAlloc, a driver call may
#     be its _v2 version), a CUDA function for alloc_at= and first_at=; and each later run's
#     call instruction calls the function the run before it ends in (so no tail call, no frame
#     left out);
#   - built without -g (_nog variants): the program has no DWARF line table at all (nvcc
#     -lineinfo gives host code none), and each function of CHAIN that is not inlined is in
#     its symbol table.
# So a compiler that inlines, clones or tail-calls differently, or a marker on the wrong line,
# is found here, before the programs run under gpumem check on a GPU.
#
#   dwarf_frames.sh BUILD_DIR PROGS_DIR
#
# Prints "dwarf_frames: ok" when every chain was found; exits 77 without python3, objdump,
# readelf, nm or llvm-symbolizer ($LLVM_SYMBOLIZER, PATH, or /usr/lib/llvm-*/bin).
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: dwarf_frames.sh BUILD_DIR PROGS_DIR" >&2; exit 2; }
for tool in python3 objdump readelf nm; do
  command -v $tool >/dev/null 2>&1 || { echo "SKIP: no $tool"; exit 77; }
done
sym=${LLVM_SYMBOLIZER:-$(command -v llvm-symbolizer || ls /usr/lib/llvm-*/bin/llvm-symbolizer 2>/dev/null | sort -V | tail -1)}
[ -n "$sym" ] && [ -x "$sym" ] || { echo "SKIP: no llvm-symbolizer"; exit 77; }

exec python3 - "$1" "$2" "$sym" <<'PYTHON'
import concurrent.futures, glob, os, re, subprocess, sys

build, progs, symbolizer = sys.argv[1], sys.argv[2], sys.argv[3]

def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout

def same_function(name, func):
    """As run_one.sh: name is func, but for C++ parameters or a compiler's clone suffix."""
    return re.fullmatch(re.escape(func) + r"(\(.*\))?( const)?( \[clone [^]]*\])*"
                        r"(\.(constprop|isra|part|cold|localalias)(\.\d+)?)*", name) is not None

def may_hold(current, func):
    """Whether function current (objdump's name) may hold func's calls: func itself, or, for a
    lambda, the function it is inlined into, whose name names it (std::thread's _M_run)."""
    return same_function(current, func) or ("{lambda" in func and func in current)

def chains_of(src):
    """The (key, text, [(func, line, inlined into the next)], call) of src's expect lines."""
    marks, out = {}, []
    with open(src) as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, 1):
        m = re.search(r"\S.*//\s*@([A-Za-z0-9_]+)\s*$", line)
        if m:
            marks[m.group(1)] = number
    for line in lines:
        if not line.startswith("//"):
            break
        m = re.match(r"//\s*expect(?:-child)?:\s*(.*)", line)
        if not m:
            continue
        words = [w for w in m.group(1).split() if "=" not in w]
        call = " ".join(words[1:-1])
        for key, text in re.findall(r"\b(at|alloc_at|first_at)=(\S+)", line):
            chain = [(func, marks.get(mark), sep == ">")
                     for func, mark, sep in re.findall(r"([^,>@]+)@([^,>]+)([,>]?)", text)]
            out.append((key, text, chain, call))
    return out

def calls_the(target, key, call):
    """Whether a call instruction to target (objdump's name for it) makes the finding."""
    name = re.sub(r"@plt$", "", target)
    if "operator delete" in name:
        name = name[name.index("operator delete"):]
    else:
        name = re.sub(r"^\S+ (?=\S+[<(])", "", name)      # a C++ function's return type
        name = re.sub(r"[<(].*", "", name)
    if key != "at":
        return re.match(r"cu[A-Z]|cuda[A-Z]", name) is not None
    if call.startswith("operator delete") or call == "free":
        return name.startswith("operator delete") or name == "free"
    return name in (call, call + "_v2") or (call, name) == ("cudaMallocHost", "cudaHostAlloc")

def call_sites(exe, funcs, base):
    """[(call target, [(func, file, line, inlined)] in base's file)] of the call instructions
    in the functions named funcs."""
    calls, current = [], None
    lines = run("objdump", "-d", "-C", "--no-show-raw-insn", exe).split("\n")
    for i, l in enumerate(lines):
        m = re.match(r"[0-9a-f]+ <(.*)>:$", l)
        if m:
            current = m.group(1)
            continue
        m = re.match(r"\s*([0-9a-f]+):\s+call\s+\S+(?:\s+<(.*)>)?", l)
        if not m or current is None or not any(may_hold(current, f) for f in funcs):
            continue
        nxt = next((int(n.group(1), 16) for n in (re.match(r"\s*([0-9a-f]+):", x)
                                                   for x in lines[i + 1:i + 4]) if n), None)
        if nxt is not None:
            calls.append((nxt - 1, re.sub(r"[+@].*", "", m.group(2) or "")))
    if not calls:
        return []
    out = run(symbolizer, "--obj=" + exe, "--inlining", "--demangle", "--output-style=GNU",
              "-a", *[hex(a) for a, _ in calls]).split("\n")
    # After each address, its frames innermost first: a function's line, then file:line.
    frames, k, pending = {}, -1, None
    for l in out:
        if re.fullmatch(r"0x[0-9a-f]+", l):
            k, pending = k + 1, None
            frames[k] = []
        elif k >= 0 and l:
            if pending is None:
                pending = l
            else:
                # file:line, maybe :column, maybe " (discriminator N)"
                m = re.fullmatch(r"(.*?):(\d+)(?::\d+)?(?: \(discriminator \d+\))?", l)
                frames[k].append((pending, m.group(1), int(m.group(2))) if m else
                                 (pending, l, 0))
                pending = None
    sites = []
    for k, (_, target) in enumerate(calls):
        fr = frames.get(k, [])
        chain = [(re.sub(r"\(.*", "", func), os.path.basename(file), line, j + 1 < len(fr))
                 for j, (func, file, line) in enumerate(fr)]
        mine = [c for c in chain if c[1] == base]
        if mine:
            sites.append((target, mine))
    return sites

def check(exe, src):
    base = os.path.basename(src)
    chains = chains_of(src)
    problems = []
    if exe.endswith("_nog"):
        if ".debug_line" in run("readelf", "-S", "-W", exe):
            problems.append("built without -g, yet it has a .debug_line section")
        symbols = [l.split(" ", 2)[-1] for l in run("nm", "-C", exe).split("\n") if l]
        for key, text, chain, _ in chains:
            for func, _, inlined in chain:
                if not inlined and not any(same_function(s, func) for s in symbols):
                    problems.append(f"{key}={text}: no symbol for {func}")
        return problems
    funcs = {func for _, _, chain, _ in chains for func, _, _ in chain}
    sites = call_sites(exe, funcs, base)
    for key, text, chain, call in chains:
        runs = [[]]
        for frame in chain:
            runs[-1].append(frame)
            if not frame[2]:
                runs.append([])
        runs = [r for r in runs if r]
        for n, part in enumerate(runs):
            want = [(func, line, inlined) for func, line, inlined in part]
            found = [s for s in sites
                     if len(s[1]) == len(want)
                     and all(same_function(g[0], w[0]) and g[2] == w[1] and g[3] == w[2]
                             for g, w in zip(s[1], want))
                     and (same_function(s[0], runs[n - 1][-1][0]) if n else
                          calls_the(s[0], key, call))]
            if not found:
                problems.append(
                    f"{key}={text}: no call instruction at " +
                    " inlined into ".join(f"{f} line {l}" for f, l, _ in want) +
                    f" calling {runs[n - 1][-1][0] if n else call}" + "; call sites in " + base +
                    ": " + "; ".join(" < ".join(f"{f}:{l}{'(inlined)' if i else ''}"
                                                for f, _, l, i in s[1]) + f" -> {s[0]}"
                                     for s in sites))
    return problems

sources = {os.path.splitext(os.path.basename(p))[0]: p
           for p in glob.glob(os.path.join(progs, "*.cu")) + glob.glob(os.path.join(progs, "*.c"))}
work = []
for name, src in sorted(sources.items()):
    if not chains_of(src):
        continue
    exes = [e for e in glob.glob(os.path.join(build, f"check_{name}_*"))
            if os.access(e, os.X_OK) and os.path.isfile(e) and
            re.fullmatch(rf"check_{re.escape(name)}_(static|shared)(_O[23](_nog)?)?",
                         os.path.basename(e))]
    for variant in ("static", "shared", "static_O2", "shared_O2"):
        if os.path.join(build, f"check_{name}_{variant}") not in exes:
            print(f"dwarf_frames: check_{name}_{variant} is not built in {build}")
            sys.exit(1)
    work += [(e, src) for e in sorted(exes)]

failed = 0
with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
    for (exe, src), problems in zip(work, pool.map(lambda w: check(*w), work)):
        for p in problems:
            print(f"dwarf_frames: {os.path.basename(exe)}: {p}")
        failed += bool(problems)
if failed:
    print(f"dwarf_frames: {failed} of {len(work)} programs differ from their expect lines")
    sys.exit(1)
print(f"dwarf_frames: ok ({len(work)} programs)")
PYTHON
