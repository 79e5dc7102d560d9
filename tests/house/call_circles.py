#!/usr/bin/env python3
"""Call circles between a library's source files, from its object files.

A file calls another when it uses a global symbol (nm: U) that the other alone defines.
Symbols the C and C++ runtimes export (free, realloc, _exit, operator delete, ...) tie no
files: a file that defines one interposes on the runtime (gpumem check's preload.c), and the
others' calls to it are calls of the runtime, not of that file. Prints each strongly
connected component of more than one file, with the symbols that tie each pair.

    python3 tests/house/call_circles.py [--fail] [--allow A.c,B.c,...] OBJ|FOLDER|@LIST...

(@LIST: a file naming object files, one a line.)

e.g. python3 tests/house/call_circles.py build/src/CMakeFiles/gpumem_objects.dir

Exit status 0; with --fail, 1 when a circle is found that --allow does not cover (a circle
whose files are all in the list); 2 for bad usage or no object files."""
import collections
import glob
import os
import subprocess
import sys


def runtime_symbols():
    """What the C and C++ runtimes export, from the compiler's own libc and libstdc++."""
    names = {"free", "malloc", "calloc", "realloc", "_exit", "exit", "abort"}
    for lib in ("libc.so.6", "libstdc++.so.6"):
        try:
            path = subprocess.run(["cc", "-print-file-name=" + lib], capture_output=True,
                                  text=True, check=True).stdout.strip()
            out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True,
                                 text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            continue
        names.update(line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip())
    return names


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
    args, fail, allow = [], False, set()
    it = iter(argv[1:])
    for a in it:
        if a in ("-h", "--help"):
            print(__doc__)
            return 0
        if a == "--fail":
            fail = True
        elif a == "--allow":
            allow = set(next(it, "").split(","))
        elif a.startswith("-"):
            print(f"call_circles: unknown option {a}", file=sys.stderr)
            return 2
        else:
            args.append(a)
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    objs = []
    for a in args:
        if a.startswith("@"):  # a file listing object files, one a line
            objs += [line.strip() for line in open(a[1:]) if line.strip().endswith(".o")]
        elif os.path.isdir(a):
            objs += sorted(glob.glob(os.path.join(a, "**", "*.o"), recursive=True))
        elif a.endswith(".o") and os.path.isfile(a):
            objs.append(a)
    if not objs:
        print(f"call_circles: no object files in {' '.join(args)}: build first", file=sys.stderr)
        return 2
    runtime = runtime_symbols()
    defs, uses = {}, {}
    for o in objs:
        name = os.path.basename(o).removesuffix(".o")
        defs[name], uses[name] = symbols(o)
    owner = {s: f for f, d in defs.items() for s in d if s not in runtime}
    edges = collections.defaultdict(dict)
    for f, used in uses.items():
        for s in used:
            g = owner.get(s)
            if g and g != f:
                edges[f].setdefault(g, set()).add(s)
    found = [c for c in components(sorted(defs), edges) if len(c) > 1]
    bad = 0
    for c in found:
        allowed = set(c) <= allow
        bad += not allowed
        print(f"circle of {len(c)} files{' (allowed)' if allowed else ''}: {' '.join(c)}")
        for f in c:
            for g in sorted(edges[f]):
                if g in c:
                    print(f"  {f} -> {g}: {', '.join(sorted(edges[f][g]))}")
    if not found:
        print("no call circles")
    return 1 if fail and bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
