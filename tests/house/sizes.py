#!/usr/bin/env python3
"""The product's size limits: no source file over 1,000 lines, no function over 80.

    python3 tests/house/sizes.py [ROOT]

Walks ROOT's src/, tools/, include/ and python/ (the product; tests, benchmarks and examples
are not held to it). C, C++ and CUDA functions are told by the house layout: a definition's
body opens at the start of a line (a lone `{`, or a signature ending in `{` in the analyzer's
C++) and closes with `}` at the start of a line; its length counts both braces. Python
functions are measured by their syntax tree. Prints each file or function over its limit and
exits 1 if there is one; 0 and "sizes: ok" otherwise."""
import ast
import os
import re
import sys

FILE_LIMIT, FUNCTION_LIMIT = 1000, 80
ROOTS = ("src", "tools", "include", "python")
C_LIKE = re.compile(r"\.(c|h|cc|cpp|hpp|cu|cuh|inc|def)$")
NOT_A_FUNCTION = ("namespace", "struct", "class", "enum", "union", "typedef", "extern \"C\"")


def c_functions(lines):
    start = None
    for i, line in enumerate(lines):
        opens = line == "{" or (line and not line[0].isspace() and line.endswith("{")
                                and "(" in line and not line.startswith(NOT_A_FUNCTION)
                                and "=" not in line)
        if opens:
            start = i
        elif line.startswith("}") and start is not None:
            yield start + 1, i - start + 1
            start = None


def py_functions(text):
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.lineno, node.end_lineno - node.lineno + 1


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    if root in ("-h", "--help"):
        print(__doc__)
        return 0
    over, files = [], 0
    for top in ROOTS:
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                path = os.path.join(d, n)
                is_py = n.endswith(".py")
                if not (is_py or C_LIKE.search(n)):
                    continue
                files += 1
                text = open(path, encoding="utf-8", errors="replace").read()
                lines = text.split("\n")
                rel = os.path.relpath(path, root)
                if len(lines) - 1 > FILE_LIMIT:
                    over.append(f"{rel}: {len(lines) - 1} lines (limit {FILE_LIMIT})")
                funcs = py_functions(text) if is_py else c_functions(lines)
                for line, length in funcs:
                    if length > FUNCTION_LIMIT:
                        over.append(f"{rel}:{line}: a function of {length} lines "
                                    f"(limit {FUNCTION_LIMIT})")
    if files == 0:
        print(f"sizes: no source files under {root}", file=sys.stderr)
        return 2
    for o in over:
        print(o)
    if over:
        return 1
    print(f"sizes: ok ({files} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
