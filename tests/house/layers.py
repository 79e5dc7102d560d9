#!/usr/bin/env python3
"""The README's drawing of the layers, checked against the build's object files.

    python3 tests/house/layers.py README.md @CHECK_OBJECTS @SRC_OBJECTS

The section "### Layers" of README.md holds two ```text blocks, gpumem check's library then
src/, each listing files top to bottom, one row a line (a line that starts with spaces goes on
the row above; words not ending in .c describe the row). A file may call files on the rows
below its own only; on its own row too where the row says "(the circle)". Every object file
of a list must be on its block's drawing, and every file drawn must be an object file.
Prints what breaks the drawing and exits 1; "layers: ok" and 0 when nothing does."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import call_circles  # noqa: E402


def drawings(readme):
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"^### Layers\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not m:
        return []
    blocks = re.findall(r"```text\n(.*?)```", m.group(1), re.S)
    out = []
    for b in blocks:
        rows = []
        for line in b.splitlines():
            if not line.strip():
                continue
            files = [w for w in line.split() if w.endswith(".c")]
            if line.startswith(" ") and rows:
                rows[-1][0].extend(files)
                rows[-1][1] |= "(the circle)" in line
            else:
                rows.append([files, "(the circle)" in line])
        out.append(rows)
    return out


def calls(objects):
    runtime = call_circles.runtime_symbols()
    defs, uses = {}, {}
    for o in objects:
        name = os.path.basename(o).removesuffix(".o")
        defs[name], uses[name] = call_circles.symbols(o)
    owner = {s: f for f, d in defs.items() for s in d if s not in runtime}
    edges = {f: {owner[s] for s in u if s in owner and owner[s] != f} for f, u in uses.items()}
    return set(defs), edges


def check(rows, objects, what):
    problems = []
    row_of, circle = {}, set()
    for i, (files, is_circle) in enumerate(rows):
        for f in files:
            row_of[f] = i
        if is_circle:
            circle.add(i)
    files, edges = calls(objects)
    for f in sorted(files - set(row_of)):
        problems.append(f"{what}: {f} is not drawn")
    for f in sorted(set(row_of) - files):
        problems.append(f"{what}: {f} is drawn but is no object file")
    for f in sorted(files & set(row_of)):
        for g in sorted(edges.get(f, ())):
            if g not in row_of:
                continue
            if row_of[g] < row_of[f] or (row_of[g] == row_of[f] and row_of[f] not in circle):
                problems.append(f"{what}: {f} (row {row_of[f] + 1}) calls {g} (row {row_of[g] + 1})")
    return problems


def read_list(arg):
    if arg.startswith("@"):
        return [line.strip() for line in open(arg[1:]) if line.strip().endswith(".o")]
    return [arg]


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2
    blocks = drawings(argv[1])
    lists = argv[2:]
    if len(blocks) != len(lists):
        print(f"layers: {argv[1]} draws {len(blocks)} blocks for {len(lists)} object lists")
        return 1
    problems = []
    for i, (rows, arg) in enumerate(zip(blocks, lists)):
        objects = read_list(arg)
        if not objects:
            print(f"layers: no object files in {arg}: build first", file=sys.stderr)
            return 2
        problems += check(rows, objects, f"block {i + 1}")
    for p in problems:
        print(p)
    if problems:
        return 1
    print("layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
