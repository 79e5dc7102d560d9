#!/usr/bin/env python3
"""The held-out part of the mutation corpus: benchmarks whose mutants no change of the analyzer
is tuned on, and on which recall is reported.

A benchmark is one folder of a code base: `hecbench/src/NAME` (HeCBench), `rodinia/cuda/NAME`
(Rodinia), `nccl-tests` (all of nccl-tests). A benchmark is held out when both hold:

  - the SHA-256 of "gpumem-lint-heldout:NAME" (NAME: the folder's own name) is even, which picks
    about half of the benchmarks, independently of their code and of the analyzer; and
  - no earlier recall run of the project (the docs/perf/lint-mutants-*.jsonl files as they were
    when the split was made, listed in SEEN below) put a mutant in it: those benchmarks' misses
    were read while the analyzer was changed before, so they are tuning data already.

The split was made once, before any change it is used to measure, and is kept in
bench/lint/heldout.txt; `bench/lint/mutants --part heldout|tuning` reads that file. This script
makes the list again from a corpus folder, to check it
(`split.py CORPUS | diff - <(grep -v '^#' heldout.txt)`).

  split.py CORPUS      the held-out benchmarks of CORPUS (a folder holding hecbench/, rodinia/,
                       nccl-tests/), one a line
"""

import glob
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The earlier runs whose mutants were read: the files of docs/perf when the split was made.
SEEN = ("lint-mutants-2026-12-02.jsonl", "lint-mutants-2026-12-02-after.jsonl",
        "lint-mutants-2026-12-02-b.jsonl", "lint-mutants-2026-12-02-c.jsonl",
        "lint-mutants-2026-12-02-c-seed7.jsonl", "lint-mutants-2026-12-02-c-seed7-before.jsonl",
        "lint-mutants-2026-12-02-d-seed2026.jsonl", "lint-mutants-2026-12-02-d-seed7.jsonl")


def benchmark(path):
    """The benchmark folder a unit belongs to, as `hecbench/src/NAME`, `rodinia/cuda/NAME` or
    `nccl-tests`; None outside the three code bases."""
    parts = os.path.normpath(path).split(os.sep)
    for base, depth in (("hecbench", 2), ("rodinia", 2), ("nccl-tests", 0)):
        if base in parts:
            i = parts.index(base)
            if len(parts) > i + depth:
                return "/".join(parts[i:i + depth + 1])
    return None


def held_out(name, seen):
    digest = hashlib.sha256(("gpumem-lint-heldout:" + name.split("/")[-1]).encode()).digest()
    return digest[-1] % 2 == 0 and name not in seen


def seen_benchmarks():
    seen = set()
    for f in SEEN:
        with open(os.path.join(HERE, "..", "..", "docs", "perf", f)) as rows:
            for line in rows:
                b = benchmark(json.loads(line)["unit"])
                if b:
                    seen.add(b)
    return seen


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if len(argv) == 2 else 2
    root = argv[1]
    folders = [os.path.relpath(p, root) for pattern in
               ("hecbench/src/*/", "rodinia/cuda/*/", "nccl-tests/")
               for p in sorted(glob.glob(os.path.join(root, pattern)))]
    seen = seen_benchmarks()
    for f in folders:
        name = f.rstrip("/")
        if held_out(name, seen):
            print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
