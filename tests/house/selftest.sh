#!/bin/sh
# The house checks themselves (sizes.py, call_circles.py) on small trees made here: each must
# fail on what it exists to catch and pass on what it must let through.
set -u
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0
expect() { # STATUS WHAT COMMAND...
    want=$1 what=$2
    shift 2
    "$@" > "$t/out" 2>&1
    got=$?
    if [ "$got" != "$want" ]; then
        echo "FAIL: $what: exit $got, expected $want"
        cat "$t/out"
        fails=$((fails + 1))
    fi
}

# sizes.py: a function of 81 lines, then a file of 1,001 lines, then both within the limits.
mkdir -p "$t/a/src" "$t/a/python"
{ echo "int f(void)"; echo "{"; i=0; while [ $i -lt 79 ]; do echo "    ;"; i=$((i + 1)); done; echo "}"; } > "$t/a/src/long.c"
expect 1 "an 81-line function" python3 "$here/sizes.py" "$t/a"
grep -q "src/long.c:2: a function of 81 lines" "$t/out" || { echo "FAIL: the long function not named"; fails=$((fails + 1)); }
{ echo "int f(void)"; echo "{"; echo "}"; i=0; while [ $i -lt 998 ]; do echo "/* */"; i=$((i + 1)); done; } > "$t/a/src/long.c"
expect 1 "a 1,001-line file" python3 "$here/sizes.py" "$t/a"
{ echo "def f():"; i=0; while [ $i -lt 80 ]; do echo "    pass"; i=$((i + 1)); done; } > "$t/a/python/long.py"
head -n 1000 "$t/a/src/long.c" > "$t/a/src/ok.c" && rm "$t/a/src/long.c"
expect 1 "an 81-line Python function" python3 "$here/sizes.py" "$t/a"
sed -i '$d' "$t/a/python/long.py"
expect 0 "files and functions at the limits" python3 "$here/sizes.py" "$t/a"

# call_circles.py: a.c and b.c call each other; c.c defines free(), which a.c calls (the C
# library's, interposed: no tie).
mkdir -p "$t/o"
printf 'void b(void);\nvoid a(void) { b(); }\nvoid free(void *);\nvoid a2(void) { free(0); }\n' > "$t/o/a.c"
printf 'void a(void);\nvoid b(void) { a(); }\n' > "$t/o/b.c"
printf 'void a(void);\nvoid free(void *p) { (void)p; a(); }\n' > "$t/o/c.c"
for f in a b c; do cc -c -o "$t/o/$f.o" "$t/o/$f.c" || exit 1; done
expect 1 "a circle of two files" python3 "$here/call_circles.py" --fail "$t/o"
grep -q "circle of 2 files: a b" "$t/out" || { echo "FAIL: the circle a b not named"; cat "$t/out"; fails=$((fails + 1)); }
expect 0 "the circle allowed" python3 "$here/call_circles.py" --fail --allow a,b "$t/o"
printf '%s\n%s\n' "$t/o/a.o" "$t/o/c.o" > "$t/list"
expect 0 "a call of an interposed free()" python3 "$here/call_circles.py" --fail "@$t/list"
expect 2 "no object files" python3 "$here/call_circles.py" --fail "$t/a"

# layers.py: a calls b, so a is drawn above b; drawn the other way round, the call is named.
printf '### Layers\n\n```text\na.c   on top\nb.c\n```\n\n## Next\n' > "$t/up.md"
printf '### Layers\n\n```text\nb.c\na.c\n```\n' > "$t/down.md"
mkdir -p "$t/l"
printf 'void b(void);\nvoid a(void) { b(); }\n' > "$t/l/a.c"
printf 'void b(void) {}\n' > "$t/l/b.c"
for f in a b; do cc -c -o "$t/l/$f.c.o" "$t/l/$f.c" || exit 1; done
printf '%s\n%s\n' "$t/l/a.c.o" "$t/l/b.c.o" > "$t/ab"
expect 0 "a drawing true to the calls" python3 "$here/layers.py" "$t/up.md" "@$t/ab"
expect 1 "a drawing upside down" python3 "$here/layers.py" "$t/down.md" "@$t/ab"
grep -q "a.c (row 2) calls b.c (row 1)" "$t/out" || { echo "FAIL: the wrong call not named"; cat "$t/out"; fails=$((fails + 1)); }
printf '### Layers\n\n```text\na.c\n```\n' > "$t/short.md"
expect 1 "a file left out of the drawing" python3 "$here/layers.py" "$t/short.md" "@$t/ab"

[ $fails -eq 0 ] && echo "house selftest: ok"
exit $((fails != 0))
