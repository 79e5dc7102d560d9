#!/usr/bin/env python3
"""Runs the commands that README.md and docs/*.md show and compares their output with the page.

Only blocks marked as checked are run. A checked block is a fenced block right after the
marker line (blank lines may come between):

    <!-- doc-test -->
    ```console
    $ gpumem help info
    usage: gpumem info [--config]
    ...
    ```

In the block, each line that starts with "$ " is a command (run with sh from a scratch
folder); the lines up to the next command are what it prints (stdout and stderr together).
A line "..." among the shown lines stands for any number of lines of output. Marker words
after "doc-test:" change the comparison:

    excerpt    the shown lines must appear, in order and together, in the output (the page
               shows part of a long output), as if "..." began and ended them; without it the
               output must be exactly the lines
    no-driver  the block shows what happens without the NVIDIA driver: it is skipped on a
               machine where libcuda.so.1 loads

Before comparing, both sides are masked: hexadecimal addresses, "==PID==" prefixes, times
(12 ms, 0.26 s, 44 s), the source and build folders (a path inside the source folder is shown
relative to it, as pages do) and /tmp paths. Trailing blank lines are ignored.

What the scratch folder holds, for commands to use:
    gpumem, and everything the build made in tools/ and examples/, on PATH
    build/          the build folder (build/examples/gpumem_ownership ...)
    ./prog          a program that only starts gpumem (so it prints gpumem's warnings)
    scripts/demo    the built demo (the real scripts/demo builds first)
    examples/       the repository's examples (a link), as from the repository's root

usage: doctest.py SOURCE_DIR BUILD_DIR PROG [PAGE.md...]   (default: README.md docs/*.md)
Exit status 0 when every checked block matches, 1 when one does not (each mismatch is shown
with its page, line and a diff), 2 when no page has a checked block.
"""
import ctypes
import difflib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^\s*<!--\s*doc-test(?::\s*([a-z\- ]*))?\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
KNOWN_WORDS = {"excerpt", "no-driver"}


def have_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def blocks(path):
    """Yields (line number of the fence, marker words, block lines) for each checked block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        words = set((m.group(1) or "").split())
        unknown = words - KNOWN_WORDS
        if unknown:
            raise ValueError("%s:%d: unknown doc-test word %s (known: %s)"
                             % (path, i + 1, " ".join(sorted(unknown)), " ".join(sorted(KNOWN_WORDS))))
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        f = FENCE.match(lines[j]) if j < len(lines) else None
        if not f:
            raise ValueError("%s:%d: a doc-test marker must be followed by a fenced block" % (path, i + 1))
        indent, fence = f.group(1), f.group(2)
        body = []
        k = j + 1
        while k < len(lines) and not lines[k].strip().startswith(fence):
            body.append(lines[k][len(indent):] if lines[k].startswith(indent) else lines[k])
            k += 1
        if k == len(lines):
            raise ValueError("%s:%d: the checked block is not closed" % (path, j + 1))
        yield j + 1, words, body
        i = k + 1


def commands(body, first_line):
    """Splits a block into (line number, command, expected lines)."""
    out = []
    for n, line in enumerate(body):
        if line.startswith("$ "):
            out.append((first_line + n, line[2:], []))
        elif out:
            out[-1][2].append(line)
    return out


def masker(src, build, scratch):
    roots = []
    for path, shown in ((build, "build"), (src, None), (scratch, None)):
        for p in {path, os.path.realpath(path)}:
            roots.append((p.rstrip("/") + "/", shown))
    roots.sort(key=lambda r: -len(r[0]))
    subs = [
        (re.compile(r"0x[0-9a-fA-F]+"), "0x…"),
        (re.compile(r"==\d+=="), "==PID=="),
        (re.compile(r"\b\d+(\.\d+)?\s?(ns|us|µs|ms|s|sec)\b"), "<time>"),
        (re.compile(r"/tmp/[^\s:'\")]+"), "/tmp/…"),
    ]

    def mask(lines):
        res = []
        for line in lines:
            for root, shown in roots:
                line = line.replace(root, shown + "/" if shown else "")
            for rx, rep in subs:
                line = rx.sub(rep, line)
            res.append(line.rstrip())
        while res and not res[-1]:
            res.pop()
        return res

    return mask


def matches(got, want, excerpt):
    """Whether got is want, where a line "..." in want stands for any lines (an excerpt has
    one at each end)."""
    chunks, cur = [], []
    for line in want:
        if line == "...":
            chunks.append(cur)
            cur = []
        else:
            cur.append(line)
    chunks.append(cur)
    if excerpt:
        chunks = [[]] + chunks + [[]]
    if len(chunks) == 1:
        return got == want
    first, last = chunks[0], chunks[-1]
    if got[:len(first)] != first or len(got) < len(first) + len(last):
        return False
    if last and got[len(got) - len(last):] != last:
        return False
    pos, end = len(first), len(got) - len(last)
    for chunk in chunks[1:-1]:
        n = len(chunk)
        at = next((i for i in range(pos, end - n + 1) if got[i:i + n] == chunk), None)
        if at is None:
            return False
        pos = at + n
    return True


def scratch_folder(src, build, prog):
    d = tempfile.mkdtemp(prefix="gpumem-doctest.")
    os.symlink(build, os.path.join(d, "build"))
    shutil.copy(prog, os.path.join(d, "prog"))
    # The pages' examples name the user's program ./my_program: gpumem check looks for it first.
    shutil.copy(prog, os.path.join(d, "my_program"))
    os.symlink(os.path.join(src, "examples"), os.path.join(d, "examples"))
    os.makedirs(os.path.join(d, "scripts"))
    demo = os.path.join(d, "scripts", "demo")
    with open(demo, "w") as f:
        f.write('#!/bin/sh\nexec "%s/examples/gpumem_demo" "$@"\n' % build)
    os.chmod(demo, 0o755)
    return d


def environment(build):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUMEM_")}
    env["PATH"] = os.pathsep.join([os.path.join(build, "tools"), os.path.join(build, "examples"),
                                   env.get("PATH", "/usr/bin:/bin")])
    env["LC_ALL"] = "C"
    env.pop("COLUMNS", None)
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    return env


def main(argv):
    if len(argv) < 4:
        print("usage: doctest.py SOURCE_DIR BUILD_DIR PROG [PAGE.md...]", file=sys.stderr)
        return 2
    src, build, prog = (os.path.abspath(a) for a in argv[1:4])
    pages = argv[4:] or [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
    driver = have_driver()
    scratch = scratch_folder(src, build, prog)
    mask = masker(src, build, scratch)
    env = environment(build)
    checked = failed = skipped = 0
    try:
        for page in pages:
            page = os.path.abspath(page)
            rel = os.path.relpath(page, src) if page.startswith(src + "/") else page
            try:
                found = list(blocks(page))
            except ValueError as e:
                print("doc test: %s" % e)
                failed += 1
                continue
            for line, words, body in found:
                if "no-driver" in words and driver:
                    skipped += 1
                    print("skip %s:%d (shows a machine without the NVIDIA driver)" % (rel, line))
                    continue
                cmds = commands(body, line + 1)
                if not cmds:
                    print("FAIL %s:%d: a checked block has no '$ ' command" % (rel, line))
                    failed += 1
                    continue
                for line, cmd, shown in cmds:
                    checked += 1
                    run = subprocess.run(["sh", "-c", cmd], cwd=scratch, env=env, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, timeout=120)
                    got = mask(run.stdout.decode("utf-8", "replace").split("\n"))
                    want = mask(shown)
                    ok = matches(got, want, "excerpt" in words)
                    if ok:
                        print("ok   %s:%d: $ %s" % (rel, line, cmd))
                        continue
                    failed += 1
                    how = "does not contain the shown lines" if "excerpt" in words else "differs"
                    print("FAIL %s:%d: $ %s: the output %s (exit status %d); - page, + output:"
                          % (rel, line, cmd, how, run.returncode))
                    sys.stdout.writelines(difflib.unified_diff(
                        [w + "\n" for w in want], [g + "\n" for g in got], rel, "output", n=2))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("doc test: %d commands checked, %d failed, %d blocks skipped" % (checked, failed, skipped))
    if failed:
        print("(a checked block is marked with <!-- doc-test -->; tests/doc/doctest.py explains the rules)")
        return 1
    if checked == 0 and skipped == 0:
        print("doc test: no checked block in %s" % " ".join(pages))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
