"""gpumem report on damaged and hostile traces: it reads what it can or refuses with a message,
and never crashes, hangs or prints a terminal escape.

    hostile_traces.py GPUMEM TRACE COUNT [SEED]

TRACE is a real trace to start from (make_trace writes one). Each of COUNT mutants is that
trace with one damage: bytes flipped, a cut, lines swapped or repeated, numbers made huge,
negative or not numbers, ids set to the extremes, names holding escapes and control bytes,
invalid UTF-8. Each is read by `gpumem report --summary`, `--html`, `--memory-viz` and
`--perfetto`; a run that dies of a signal, outlasts 20 s, exits with another status than 0 or
1, or writes ESC to the terminal fails the test, and so does a snapshot that Python's pickle
cannot read. Prints one line per failure and a summary; exit 0 when none failed.
"""
import os
import pickle
import random
import re
import subprocess
import sys
import tempfile

NUMBER = re.compile(rb'("(?:ts|bytes|device|stack|dropped)":)(-?[0-9.e+]+)')
ID = re.compile(rb'("id":")(0x[0-9a-f]+)(")')
NAME = re.compile(rb'("name":")([^"]*)(")')


def mutate(data, rng):
    lines = data.split(b"\n")
    kind = rng.randrange(9)
    if kind == 0:  # flip bytes
        b = bytearray(data)
        for _ in range(rng.randint(1, 20)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if kind == 1:  # cut anywhere
        return data[:rng.randrange(len(data))]
    if kind == 2:  # swap two lines
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)
    if kind == 3:  # repeat a line many times
        i = rng.randrange(len(lines))
        return b"\n".join(lines[:i] + [lines[i]] * rng.randint(2, 2000) + lines[i:])
    if kind == 4:  # numbers made extreme
        values = [b"1e308", b"-1e308", b"9223372036854775807", b"-9223372036854775808",
                  b"18446744073709551615", b"0", b"-1", b"1e-300", b"123456789012345678901234"]
        return NUMBER.sub(lambda m: m.group(1) + rng.choice(values), data)
    if kind == 5:  # ids at the extremes
        ids = [b"0x0", b"0xffffffffffffffff", b"0xfffffffffffffffe", b"0x1", b"0x" + b"f" * 40]
        return ID.sub(lambda m: m.group(1) + rng.choice(ids) + m.group(3), data)
    if kind in (6, 7):  # a call site's name with escapes and control bytes, or not UTF-8
        bad = [b"\\u001b[2J", b"\\u009b31m", b"\\u0007", b"\\r", b"\\u0000", b"\\ud800",
               b"\xff\xfe", b"\xc3"]
        spans = [i for i, line in enumerate(lines) if line.startswith(b'{"ph":"b"')]
        for i in rng.sample(spans, min(len(spans), 3)):
            lines[i] = NAME.sub(lambda m: m.group(1) + rng.choice(bad) + m.group(2) + m.group(3),
                                lines[i], count=1)
        return b"\n".join(lines)
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 4096)))  # noise


def run(cmd):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=20)
    except subprocess.TimeoutExpired:
        return "ran past 20 s"
    if p.returncode not in (0, 1):
        return f"exit status {p.returncode}"
    if b"\x1b" in p.stdout or b"\xc2\x9b" in p.stdout:  # ESC, or CSI as UTF-8
        return "wrote a terminal escape"
    return None


def readable(snap):
    """None, or why the snapshot written (if any) is not one Python reads."""
    if not os.path.exists(snap):
        return None
    try:
        with open(snap, "rb") as f:
            pickle.load(f)
    except Exception as e:  # any failure to read it is the finding
        return f"the snapshot does not unpickle: {e!r}"
    return None


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    gpumem, trace, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) == 5 else 20261202)
    data = open(trace, "rb").read()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        path, page = os.path.join(tmp, "t.json"), os.path.join(tmp, "t.html")
        snap, proto = os.path.join(tmp, "t.pickle"), os.path.join(tmp, "t.pftrace")
        for n in range(count):
            with open(path, "wb") as f:
                f.write(mutate(data, rng))
            for cmd in ([gpumem, "report", "--summary", path],
                        [gpumem, "report", "--html", path, "-o", page],
                        [gpumem, "report", "--memory-viz", path, "-o", snap],
                        [gpumem, "report", "--perfetto", path, "-o", proto]):
                if os.path.exists(snap):
                    os.remove(snap)
                why = run(cmd) or readable(snap)
                if why:
                    failures += 1
                    keep = os.path.join(os.getcwd(), f"hostile-{n}.json")
                    os.replace(path, keep)
                    print(f"FAIL: mutant {n}: {' '.join(cmd[1:3])}: {why} (kept as {keep})")
                    break
    print(f"hostile traces: {count - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
