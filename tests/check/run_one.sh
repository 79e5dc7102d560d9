#!/usr/bin/env bash
# Runs one program of tests/check/progs under `gpumem check` and compares what it reports with
# the expect lines that open the program's source.
#
#   run_one.sh GPUMEM PROGRAM SOURCE
#
# Expect lines, in the comment block at the top of SOURCE:
#   // expect: KIND CALL MEMORY [bytes=N] [offset=N] [error=NAME] [count=N]
#       One finding of PROGRAM's own process. CALL is the release call, or the allocation call
#       for a leak or a failed allocation; it may contain spaces ("operator delete[]"): the
#       first word is the kind, the last word before any key=value is the memory kind ("-" for
#       a finding without one). key=value pairs are checked when given (any field of the
#       JSON finding: leak_kind=definite|reachable for a leak, say).
#   // expect-child: ...   the same, for the findings of PROGRAM's child processes together
#   // expect-exit: N      PROGRAM's own exit status (default 0)
#   // expect-status: exited|signaled|unchecked   (default exited)
#   // expect-signal: N    the signal, with signaled
#   // expect-gpus: N      the program needs N GPUs: skipped (77) when nvidia-smi -L lists fewer
#   Where the finding was made, as frames of SOURCE itself, innermost first:
#       at=CHAIN        the finding's stack: a leak's allocation, else the release call (or the
#                       failed allocation)
#       alloc_at=CHAIN  the allocation's stack of a finding on a release (a mismatch, say)
#       first_at=CHAIN  a double free's first release
#     CHAIN is FUNC@MARK frames joined by "," (called from the next frame) or ">" (inlined into
#     the next frame): "make_buffer@alloc,main@leak" or "fill_in@alloc>main@leak". MARK names
#     the line of SOURCE that ends with the comment "// @MARK". The stack's innermost frames
#     in SOURCE's file (any frames before them, in other files, are passed over: a C++ runtime's
#     own operator delete, say) must be these, one for one: the function (C++ names without
#     their parameters; a compiler's clone suffix such as ".constprop.0" is allowed), the file,
#     the marked line and whether it is inlined into the next frame (the last frame's own
#     inlining is not checked).
# A program without expect lines must get no findings. The findings must match exactly, as a
# multiset: none missing, none more (suppressed findings do not count). A leak finding is one
# call site; count=N checks how many blocks it groups (the programs leak one block per site).
# Every finding must carry at= (its allocation's too, alloc_at=, where the JSON has it) and
# every finding but invalid-free must have a stack frame in SOURCE's file.
#
# CHECK_SYMBOLS_ONLY=1 in the environment: PROGRAM's host code has no debug information (built
# with nvcc -lineinfo but without -g, which gives line tables to device code only, or a C
# compiler without -g), so stacks name functions from the symbol table alone. Each CHAIN is
# then checked without its inlined frames (they are part of the function they were inlined
# into), from the first frame of PROGRAM's own module, by function; a frame's file and line
# are checked only where the stack has them. The rule of a frame in SOURCE's file is dropped.
#
# gpumem check runs with --error-exitcode=99, so its own exit status must be 99 when findings
# were reported and PROGRAM's own otherwise; PROGRAM must print "<name>: done" (its closing line)
# unless it is expected to die of a signal.
#
# Exit status: 0 as expected, 1 not, 2 usage, 77 skipped: no GPU (nvidia-smi -L lists none) or
# GPUMEM has no check command yet (`GPUMEM check --help` fails).
set -uo pipefail

if [ $# -ne 3 ]; then
  echo "usage: run_one.sh GPUMEM PROGRAM SOURCE" >&2
  exit 2
fi
gpumem=$1 prog=$2 src=$3
name=$(basename "$src")
name=${name%.*}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "SKIP: no GPU (nvidia-smi -L lists none)"
  exit 77
fi
need_gpus=$(sed -n 's|^//[[:space:]]*expect-gpus:[[:space:]]*\([0-9][0-9]*\).*|\1|p' "$src" | head -1)
have_gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ -n "$need_gpus" ] && [ "$have_gpus" -lt "$need_gpus" ]; then
  echo "SKIP: $name needs $need_gpus GPUs, nvidia-smi -L lists $have_gpus"
  exit 77
fi
if ! "$gpumem" check --help >/dev/null 2>&1; then
  echo "SKIP: $gpumem has no check command ('$gpumem check --help' fails)"
  exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "run_one.sh: python3 is needed to read the JSON reports" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-check-$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The program runs in the scratch folder, so that anything it writes stays there.
# Every leak is listed and counted, whatever its kind (definitely lost or still reachable):
# the programs' expect lines say which with leak_kind= where it matters.
(cd "$tmp" && exec "$gpumem" check --error-exitcode=99 --leak-check=full \
  --show-leak-kinds=all --errors-for-leak-kinds=all \
  "--json=$tmp/out.%p.json" -- "$prog") >"$tmp/output.txt" 2>&1
rc=$?

# Does PROGRAM define operator delete itself (libstdc++ linked statically)?
CHECK_STATIC_CXX=0
if command -v nm >/dev/null 2>&1 && nm "$prog" 2>/dev/null | grep -q ' T _ZdlPv$'; then
  CHECK_STATIC_CXX=1
fi
export CHECK_STATIC_CXX
if python3 - "$src" "$prog" "$rc" "$tmp" "$name" <<'PYTHON'
import glob, json, os, re, sys
from collections import Counter

src, prog, rc, tmp, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
static_cxx = os.environ.get("CHECK_STATIC_CXX") == "1"
symbols_only = os.environ.get("CHECK_SYMBOLS_ONLY") == "1"
problems = []
FRAME_KEYS = {"at": "stack", "alloc_at": "alloc_stack", "first_at": "first_release_stack"}

# ---- The marked lines of SOURCE: "// @MARK" at the end of a line of code ----
marks = {}
with open(src) as f:
    for number, line in enumerate(f, 1):
        m = re.search(r"\S.*//\s*@([A-Za-z0-9_]+)\s*$", line)
        if m:
            if m.group(1) in marks:
                sys.exit(f"run_one.sh: {src}:{number}: mark @{m.group(1)} is on line "
                         f"{marks[m.group(1)]} already")
            marks[m.group(1)] = number

def parse_chain(text, line):
    """'f@a,g@b>h@c' -> [(func, line, inlined into the next)], innermost first."""
    chain = []
    for part, sep in re.findall(r"([^,>]+)([,>]?)", text):
        func, _, mark = part.partition("@")
        if not func or mark not in marks:
            sys.exit(f"run_one.sh: {src}: bad frame {part!r} (no // @{mark} line?) in: "
                     f"{line.strip()}")
        chain.append((func, marks[mark], sep == ">"))
    return chain

# ---- The expect lines ----
expect = {"expect": [], "expect-child": []}
exit_code, status, signal = 0, "exited", None
with open(src) as f:
    for line in f:
        if not line.startswith("//"):
            break
        m = re.match(r"//\s*(expect(?:-child|-exit|-status|-signal)?):\s*(.*?)\s*$", line)
        if not m:
            continue
        key, value = m.groups()
        if key in expect:
            words = value.split()
            pairs = {}
            while words and "=" in words[-1]:
                k, v = words.pop().split("=", 1)
                pairs[k] = parse_chain(v, line) if k in FRAME_KEYS else v
            if len(words) < 3:
                sys.exit(f"run_one.sh: {src}: bad expect line: {line.strip()}")
            if "at" not in pairs:
                sys.exit(f"run_one.sh: {src}: expect line without at=FUNC@MARK (where the "
                         f"finding is made): {line.strip()}")
            call = " ".join(words[1:-1])
            # A program that carries the C++ runtime itself (a toolchain that links
            # libstdc++ statically) calls its own operator delete, which no preloaded library
            # can replace; its delete reaches gpumem check as the free() inside it.
            if static_cxx and call.startswith("operator delete"):
                call = "free"
            expect[key].append(((words[0], call, words[-1]), pairs))
        elif key == "expect-exit":
            exit_code = int(value)
        elif key == "expect-status":
            status = value
        else:
            signal = int(value)
if status not in ("exited", "signaled", "unchecked"):
    sys.exit(f"run_one.sh: {src}: expect-status must be exited, signaled or unchecked")

# ---- The JSON documents: PROGRAM's own, and its children's ----
docs = []
for path in sorted(glob.glob(os.path.join(tmp, "out.*.json"))):
    try:
        with open(path) as f:
            docs.append((path, json.load(f)))
    except (OSError, ValueError) as e:
        problems.append(f"{os.path.basename(path)} is not valid JSON: {e}")
        with open(path, errors="replace") as f:
            print(f"--- {path} ---\n{f.read()}")

def is_top(doc):
    cmd = doc.get("command") or []
    return bool(cmd) and os.path.basename(str(cmd[0])) == os.path.basename(prog) and len(cmd) == 1

tops = [d for d in docs if is_top(d[1])]
if len(tops) != 1 and len(docs) == 1:
    tops = docs
top = tops[0][1] if len(tops) == 1 else None
children = [d for d in docs if top is None or d[1] is not top]
if top is None:
    problems.append(f"expected one JSON document for the program itself ({prog} with no "
                    f"arguments), found {len(tops)} among {len(docs)}: " +
                    ", ".join(f"{os.path.basename(p)} {d.get('command')}" for p, d in docs))
    top = {}

def triple(finding):
    kind = finding.get("kind", "?")
    call = finding.get("alloc_call") if kind == "leak" else finding.get("call")
    return (kind, call or "?", finding.get("memory", "-"))

def same_function(name, func):
    """name (as the JSON has it) is func, but for C++ parameters or a clone suffix."""
    return re.fullmatch(re.escape(func) + r"(\(.*\))?( const)?( \[clone [^]]*\])*"
                        r"(\.(constprop|isra|part|cold|localalias)(\.\d+)?)*", str(name)) is not None

def fmt_frame(fr):
    return (f"{fr.get('function')} {os.path.basename(str(fr.get('file')))}:{fr.get('line')}" +
            (" (inlined into the next)" if fr.get("inlined") else ""))

def fmt_chain(chain):
    return "".join(f"{func} line {line}" + (" inlined into " if inl else ", called from ")
                   for func, line, inl in chain)[:-len(", called from ")]

def stack_key(finding, key):
    return "alloc_stack" if key == "at" and finding.get("kind") == "leak" else FRAME_KEYS[key]

def frames_problem(finding, key, chain):
    """Why finding's stack for key does not begin (in SOURCE's file) with chain; None if it does."""
    name = stack_key(finding, key)
    stack = finding.get(name)
    if not isinstance(stack, list):
        return f"{key}: the finding has no {name}"
    base = os.path.basename(src)
    if symbols_only:
        chain = [c for c in chain if not c[2]]
        first = next((i for i, fr in enumerate(stack) if os.path.basename(
            str(fr.get("module") or "")) == os.path.basename(prog)), None)
        where = f"the frames of {os.path.basename(prog)}"
    else:
        first = next((i for i, fr in enumerate(stack)
                      if os.path.basename(str(fr.get("file") or "")) == base), None)
        where = f"the frames in {base}"
    if first is None:
        return (f"{key}: none of {where} in {name}; expected {fmt_chain(chain)}; "
                f"frames: " + "; ".join(fmt_frame(fr) for fr in stack))
    got = stack[first:first + len(chain)]
    for i, (func, line, inl) in enumerate(chain):
        fr = got[i] if i < len(got) else None
        why = None
        have_line = not symbols_only or (fr is not None and fr.get("file") and fr.get("line"))
        if fr is None:
            why = "the stack ends before it"
        elif not same_function(fr.get("function"), func):
            why = f"the function is {fr.get('function')!r}"
        elif have_line and os.path.basename(str(fr.get("file") or "")) != base:
            why = f"the file is {fr.get('file')!r}"
        elif have_line and fr.get("line") != line:
            why = f"the line is {fr.get('line')!r}"
        elif i + 1 < len(chain) and bool(fr.get("inlined")) != inl:
            why = ("it is not marked inlined into the next frame" if inl
                   else "it is marked inlined into the next frame")
        if why:
            return (f"{key}: frame {i + 1} should be {func} at {base}:{line}: {why}; expected "
                    f"{fmt_chain(chain)}; {name} from {where} on: " +
                    "; ".join(fmt_frame(fr) for fr in stack[first:]))
    return None

def frames_ok(finding, pairs, report):
    ok = True
    # The allocation's stack is asserted wherever a finding on a release has one.
    if (finding.get("kind") != "leak" and finding.get("alloc_stack") and "alloc_at" not in pairs):
        ok = False
        if report:
            problems.append(f"{' '.join(triple(finding))}: the finding has an alloc_stack, but "
                            f"its expect line no alloc_at=")
    for key, chain in pairs.items():
        if key not in FRAME_KEYS:
            continue
        why = frames_problem(finding, key, chain)
        if why:
            ok = False
            if report:
                problems.append(f"{' '.join(triple(finding))}: {why}")
    return ok

def satisfies(finding, pairs):
    for k, v in pairs.items():
        if k in FRAME_KEYS:
            continue
        have = finding.get(k, 1 if k == "count" else None)
        if str(have) != v:
            return False
    return True

def compare(what, findings, expected):
    """Matches findings to expectations one to one; returns whether all matched."""
    left = list(findings)
    missing = []
    for exp in sorted(expected, key=lambda e: -len(e[1])):
        # A finding whose frames are right too, else one whose frames are wrong (said so).
        fits = [i for i, f in enumerate(left) if triple(f) == exp[0] and satisfies(f, exp[1])]
        right = [i for i in fits if frames_ok(left[i], exp[1], False)]
        if right or fits:
            i = (right or fits)[0]
            if not right:
                frames_ok(left[i], exp[1], True)
            del left[i]
        else:
            missing.append(exp)
    if not missing and not left:
        return True
    def fmt_exp(e):
        return " ".join(e[0]) + "".join(f" {k}={v}" for k, v in sorted(e[1].items())
                                        if k not in FRAME_KEYS)
    def fmt_found(f):
        extra = {k: f[k] for k in ("bytes", "count", "offset", "error", "address") if k in f}
        return " ".join(triple(f)) + "".join(f" {k}={v}" for k, v in extra.items())
    problems.append(f"{what}: the findings differ from the expect lines")
    print(f"{what}: expected ({len(expected)}):")
    for e in expected:
        print(f"    {fmt_exp(e)}")
    print(f"{what}: reported ({len(findings)}):")
    for f in findings:
        print(f"    {fmt_found(f)}")
    for e in missing:
        print(f"{what}: missing: {fmt_exp(e)}")
    for f in left:
        print(f"{what}: not expected: {fmt_found(f)}")
    return False

def check_shape(what, doc):
    if doc.get("schema") != "gpumem-check/1":
        problems.append(f"{what}: schema is {doc.get('schema')!r}, not 'gpumem-check/1'")
    findings = doc.get("findings")
    if not isinstance(findings, list):
        problems.append(f"{what}: no findings list")
        return []
    # Suppressed findings are listed too, marked; they count for nothing.
    findings = [f for f in findings if not f.get("suppressed")]
    base = os.path.basename(src)
    for f in findings:
        kind = f.get("kind")
        if kind == "leak" and "call" in f:
            problems.append(f"{what}: a leak has a call ({f['call']}); leaks name only alloc_call")
        if kind == "failed-alloc" and not str(f.get("error", "")).startswith("cudaError"):
            problems.append(f"{what}: failed-alloc without a CUDA error name: {f.get('error')!r}")
        if kind == "invalid-free" or symbols_only:
            continue
        frames = (f.get("alloc_stack") or []) + (f.get("stack") or [])
        if not any(os.path.basename(str(fr.get("file") or "")) == base
                   and isinstance(fr.get("line"), int) and fr["line"] > 0 for fr in frames):
            problems.append(f"{what}: {' '.join(triple(f))}: no stack frame in {base} with a "
                            f"line number (-g -lineinfo); frames: " +
                            "; ".join(f"{fr.get('function')} {fr.get('file')}:{fr.get('line')}"
                                      for fr in frames))
    # The summary counts findings (a leak finding is a call site, of "count" blocks), leaks
    # among them, and the bytes of all the leaks.
    summary = doc.get("summary") or {}
    leaks = [f for f in findings if f.get("kind") == "leak"]
    said = (summary.get("errors"), summary.get("leaks"), summary.get("leaked_bytes"))
    found = (len(findings), len(leaks), sum(f.get("bytes", 0) for f in leaks))
    if said != found:
        problems.append(f"{what}: summary says errors, leaks, leaked_bytes = {said}; the "
                        f"findings make {found}")
    return findings

# ---- The program's own process ----
if top:
    findings = check_shape("program", top)
    compare("program", findings, expect["expect"])
    if top.get("status") != status:
        problems.append(f"status is {top.get('status')!r}, expected {status!r}")
    elif status == "exited" and top.get("exit_code") != exit_code:
        problems.append(f"exit_code is {top.get('exit_code')!r}, expected {exit_code}")
    elif status == "signaled" and signal is not None and top.get("signal") != signal:
        problems.append(f"signal is {top.get('signal')!r}, expected {signal}")

# ---- Its children, all together ----
child_findings = []
for path, doc in children:
    child_findings += check_shape(f"child {os.path.basename(path)}", doc)
if expect["expect-child"] and not children:
    problems.append("expect-child lines, but no JSON document from a child process")
compare("children", child_findings, expect["expect-child"])

# ---- gpumem check's own exit status ----
# (Dying of the program's signal itself, as a shell sees it, is allowed too.)
if status == "signaled":
    allowed, said = {99} | ({128 + signal} if signal else set(range(129, 160))), \
        f"99 or {128 + signal if signal else '128 + the signal'}"
elif expect["expect"]:
    allowed, said = {99}, "99 (--error-exitcode)"
else:
    allowed, said = {exit_code}, f"{exit_code} (the program's own)"
if rc not in allowed:
    problems.append(f"gpumem check exited with {rc}, expected {said}")

# ---- The closing line ----
with open(os.path.join(tmp, "output.txt"), errors="replace") as f:
    output = f.read()
if status != "signaled" and not re.search(rf"^{re.escape(name)}: done$", output, re.M):
    problems.append(f"the program did not print its closing line '{name}: done'")

if problems:
    for p in problems:
        print(f"FAIL: {p}")
    if top:
        print("--- the program's JSON ---")
        print(json.dumps(top, indent=1))
    sys.exit(1)
n = len(expect["expect"]) + len(expect["expect-child"])
print(f"{name}: ok ({n} finding{'s' if n != 1 else ''} as expected, status {status}, "
      f"gpumem check exited with {rc})")
PYTHON
then
  exit 0
fi
echo "--- the output of gpumem check and the program (gpumem check exited with $rc) ---"
cat "$tmp/output.txt"
exit 1
