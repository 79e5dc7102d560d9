#!/usr/bin/env python3
"""Call circles between a library's source files, from its object files.

A file calls another when it uses a global symbol (nm: U) that the other alone defines.
Prints each strongly connected component of more than one file, with the symbols that tie
each pair. Usage, after a build:

    python3 bench/house/call_circles.py build/src/CMakeFiles/gpumem_objects.dir

Exit status 0; 2 when the folder holds no object files."""
import collections
import glob
import os
import subprocess
import sys


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TDBRC":
            defined.add(f[2])
        elif len(f) == 2 and f[0] == "U":
            used.add(f[1])
    return defined, used


def components(nodes, edges):
    """Tarjan's algorithm, iterative."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    out.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = counter[0]
                counter[0] += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(edges[w])))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) == 2 else 2
    root = argv[1]
    objs = sorted(glob.glob(os.path.join(root, "**", "*.o"), recursive=True))
    if not objs:
        print(f"call_circles: no object files under {root}: build first", file=sys.stderr)
        return 2
    defs, uses = {}, {}
    for o in objs:
        name = os.path.relpath(o, root).removesuffix(".o")
        defs[name], uses[name] = symbols(o)
    owner = {s: f for f, d in defs.items() for s in d}
    edges = collections.defaultdict(dict)
    for f, used in uses.items():
        for s in used:
            g = owner.get(s)
            if g and g != f:
                edges[f].setdefault(g, set()).add(s)
    found = [c for c in components(sorted(defs), edges) if len(c) > 1]
    for c in found:
        print(f"circle of {len(c)} files: {' '.join(c)}")
        for f in c:
            for g in sorted(edges[f]):
                if g in c:
                    print(f"  {f} -> {g}: {', '.join(sorted(edges[f][g]))}")
    if not found:
        print("no call circles")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
