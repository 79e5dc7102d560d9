#!/bin/sh
# doctest.py on pages written here: it must pass a right block, fail a wrong one with the
# page, the line and a diff, check excerpts, and refuse a marker it does not know.
# usage: selftest.sh PYTHON DOCTEST SOURCE_DIR BUILD_DIR PROG
py=$1 doctest=$2 src=$3 build=$4 prog=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
run() { # run WANT_STATUS PATTERN PAGE
  out=$("$py" "$doctest" "$src" "$build" "$prog" "$3" 2>&1)
  got=$?
  if [ "$got" -ne "$1" ] || ! printf '%s\n' "$out" | grep -qF -- "$2"; then
    echo "FAIL: $3: status $got (want $1), output without '$2':"; printf '%s\n' "$out"
    fails=$((fails + 1))
  else
    echo "ok   $(basename "$3"): status $got, '$2'"
  fi
}
t='```'
printf '# right\n\n<!-- doc-test -->\n%s\n$ echo hello at 0x1234 after 12 ms\nhello at 0xdead after 3 ms\n$ printf "a\\nb\\n"\na\nb\n%s\n' "$t" "$t" > "$tmp/right.md"
run 0 "2 commands checked, 0 failed" "$tmp/right.md"
printf '# wrong\n\ntext\n\n<!-- doc-test -->\n\n%sconsole\n$ echo one\ntwo\n%s\n' "$t" "$t" > "$tmp/wrong.md"
run 1 "wrong.md:8: \$ echo one: the output differs" "$tmp/wrong.md"
run 1 "+one" "$tmp/wrong.md"
run 1 "-two" "$tmp/wrong.md"
printf '<!-- doc-test: excerpt -->\n%s\n$ printf "a\\nb\\nc\\n"\nb\nc\n%s\n<!-- doc-test: excerpt -->\n%s\n$ printf "a\\nb\\nc\\n"\na\nc\n%s\n' "$t" "$t" "$t" "$t" > "$tmp/excerpt.md"
run 1 "1 failed" "$tmp/excerpt.md"
run 1 "excerpt.md:9: \$ printf" "$tmp/excerpt.md"
printf '<!-- doc-test -->\n%s\n$ printf "a\\nb\\nc\\nd\\n"\na\n...\nd\n%s\n' "$t" "$t" > "$tmp/dots.md"
run 0 "1 commands checked, 0 failed" "$tmp/dots.md"
printf '<!-- doc-test -->\n%s\n$ printf "a\\nb\\nc\\n"\na\n...\nd\n%s\n' "$t" "$t" > "$tmp/dots_wrong.md"
run 1 "1 failed" "$tmp/dots_wrong.md"
printf '<!-- doc-test: exerpt -->\n%s\n$ true\n%s\n' "$t" "$t" > "$tmp/unknown.md"
run 1 "unknown doc-test word exerpt" "$tmp/unknown.md"
printf '# nothing marked\n\n%s\n$ false\n%s\n' "$t" "$t" > "$tmp/none.md"
run 2 "no checked block" "$tmp/none.md"
# The stand-ins: ./prog prints gpumem's warnings, gpumem is on PATH, the source folder is masked.
printf '<!-- doc-test -->\n%s\n$ GPUMEM_FROBNICATE=1 ./prog\ngpumem: warning: unknown option GPUMEM_FROBNICATE is ignored; `gpumem info` lists the options\n$ gpumem --version | cut -c1-7\ngpumem \n$ echo %s/docs\ndocs\n%s\n' "$t" "$src" "$t" > "$tmp/standins.md"
run 0 "3 commands checked, 0 failed" "$tmp/standins.md"
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
