#!/usr/bin/env python3
"""Test of bench/lint/mutants: on fixture.cu it makes exactly the expected mutants of the five
types (and none in a macro, #if 0, a conditional, device code, an unreached function, an
unbraced if, a comment or a string, nor of memory the file does not allocate with CUDA), each
one statement changed with the lines kept; and it judges lint findings as the rules say.

usage: test_mutants.py MUTANTS_SCRIPT FIXTURE"""
import importlib.machinery
import importlib.util
import sys

script, fixture = sys.argv[1], sys.argv[2]
loader = importlib.machinery.SourceFileLoader("mutants", script)
spec = importlib.util.spec_from_loader("mutants", loader)
mutants = importlib.util.module_from_spec(spec)
loader.exec_module(mutants)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


text = open(fixture).read()
lines = text.split("\n")
sites = mutants.find_sites(text)
got = sorted((s["type"], s["line"]) for s in sites)
want = sorted([("unwrap", 24), ("unwrap", 25)] +
              [(t, ln) for t in ("drop", "swap", "duplicate", "use") for ln in (40, 41, 43)])
check(got == want, "sites: got %s, want %s" % (got, want))

expect = {
    ("unwrap", 24): "  cudaMalloc((void **)&d, n * sizeof(T));",
    ("unwrap", 25): "  cudaMallocHost(&h, n * sizeof(T));",
    ("drop", 40): "  ",
    ("swap", 40): "  cudaFreeHost(d);",
    ("duplicate", 40): "  cudaFree(d); cudaFree(d);",
    ("use", 40): "  cudaFree(d); (void)cudaMemset(d, 0, 1);",
    ("drop", 41): "  ",
    ("swap", 41): "  CHECK(cudaFree(h));",
    ("duplicate", 41): "  CHECK(cudaFreeHost(h)); CHECK(cudaFreeHost(h));",
    ("use", 41): "  CHECK(cudaFreeHost(h)); ((char *)(h))[0] = 0;",
    ("swap", 43): "    cudaFreeHost(u);",
}
for s in sites:
    mutated = mutants.apply_site(text, s).split("\n")
    check(len(mutated) == len(lines), "%s:%d keeps the line count" % (s["type"], s["line"]))
    changed = [i + 1 for i, (a, b) in enumerate(zip(lines, mutated)) if a != b]
    check(changed == [s["line"]], "%s:%d changes only its line (changed %s)" % (
        s["type"], s["line"], changed))
    k = (s["type"], s["line"])
    if k in expect:
        line = mutated[s["line"] - 1].split("//")[0].rstrip()
        check(line == expect[k].rstrip() or (expect[k].strip() == "" and line.strip() == ""),
              "%s:%d is %r, want %r" % (k[0], k[1], line, expect[k]))
    if s["type"] != "unwrap":
        check(s["alloc_lines"] == {"d": [24], "h": [25], "u": [26]}[s["var"]],
              "%s:%d allocation lines %s" % (k[0], k[1], s["alloc_lines"]))

# Judging: a new finding of the expected rule at the line (or, for drop, at the allocation)
# counts; one already in the baseline, another rule, or far away does not.
by = {(s["type"], s["line"]): s for s in sites}
F = lambda line, rule, msg="m", related=(): {"file": "u.cu", "line": line, "rule": rule,
                                             "message": msg, "related": list(related)}
base = [F(10, "GM004")]
cases = [
    ("drop", 40, [F(24, "GM001")], "found"),
    ("drop", 40, [F(60, "GM006", related=[24])], "found"),
    ("drop", 40, [F(25, "GM001")], "missed"),     # another variable's allocation
    ("drop", 40, [F(24, "GM006", related=[23])], "missed"),  # an exit there, other memory
    ("swap", 41, [F(41, "GM002")], "found"),
    ("swap", 41, [F(41, "GM008")], "missed"),     # another rule
    ("unwrap", 24, [F(24, "GM004")], "found"),
    ("unwrap", 24, [F(10, "GM004")], "missed"),   # in the baseline
    ("duplicate", 43, [F(43, "GM008")], "found"),
    ("duplicate", 43, [F(30, "GM008")], "missed"),  # far from the mutation
    ("use", 40, [F(40, "GM009")], "found"),
    ("use", 40, [], "missed"),
]
for t, ln, findings, want_status in cases:
    status, _, others = mutants.judge(by[(t, ln)], "u.cu", base, base + findings)
    check(status == want_status, "judge %s:%d %s: %s, want %s" % (t, ln, findings, status,
                                                                 want_status))
status, _, others = mutants.judge(by[("swap", 41)], "u.cu", base, [F(41, "GM008")])
check(len(others) == 1, "a new finding of another rule is reported as found by another rule")
check(mutants.masked(by[("unwrap", 24)], "u.cu", [F(24, "GM004")]),
      "an unwrap whose line already has GM004 is masked")
check(not mutants.masked(by[("unwrap", 24)], "u.cu", base), "no GM004 there: not masked")
check(mutants.masked(by[("drop", 40)], "u.cu", [F(24, "GM001")]),
      "a drop whose variable is already reported leaked is masked")
check(mutants.judge(by[("drop", 40)], "u.cu", base, [F(24, "GM005")])[0] == "found",
      "a drop reported as an allocation lost in a loop (GM005) at the allocation is found")
check(mutants.judge(by[("drop", 40)], "u.cu", base, [F(30, "GM005")])[0] == "missed",
      "a GM005 at another line is not the drop's")
check(mutants.masked(by[("drop", 40)], "u.cu", [F(24, "GM005")]),
      "a drop whose allocation is already reported lost in a loop is masked")
check(not mutants.masked(by[("drop", 40)], "u.cu", [F(24, "GM006", related=[23])]),
      "a drop is not masked by an exit at its allocation that leaks other memory")
check(not mutants.masked(by[("drop", 40)], "u.cu", [F(60, "GM006", related=[24])]),
      "a drop is not masked by an early-exit leak of its variable (the drop adds a GM001)")

# The held-out parts: lists of benchmark folders, none in both (a benchmark tuned on in one
# part would otherwise be reported as held out in the other).
first, second = mutants.read_heldout("heldout"), mutants.read_heldout("heldout2")
check(len(first) > 100 and len(second) > 100, "both held-out lists read: %d, %d"
      % (len(first), len(second)))
check(not first & second, "held-out parts overlap: %s" % sorted(first & second)[:5])
check(all(b.startswith(("hecbench/src/", "rodinia/cuda/")) or b == "nccl-tests"
          for b in first | second), "every held-out entry is a benchmark folder")

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
