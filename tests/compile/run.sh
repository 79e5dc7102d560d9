#!/bin/sh
# Compile-time pairing: with GCC >= 11, gpumem's allocation functions carry
# malloc(gpumem_free, 1), so GCC flags free()/cudaFree()/cudaFreeHost() on gpumem memory and
# -fanalyzer flags a leak on an early return. Compiles mismatched_dealloc.c and expects each
# diagnostic; compiles correct.c with the same flags and -Werror and expects silence.
# usage: run.sh CC GPUMEM_INCLUDE_DIR CUDA_INCLUDE_DIR...   Exit 77 (skipped) without GCC >= 11.
set -u
cc=$1
shift
here=$(dirname "$0")
incs=
for d in "$@"; do incs="$incs -I$d"; done
export LC_ALL=C   # ASCII quotes in GCC's messages

is_gcc11=$(printf '#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11\nyes\n#endif\n' |
           "$cc" -E -P -x c - 2>/dev/null)
if [ "$is_gcc11" != "yes" ]; then
    echo "SKIP: $cc is not GCC >= 11: no malloc(deallocator) attribute"
    exit 77
fi

flags="-std=c11 -Wall -Wextra -fanalyzer -fdiagnostics-plain-output"
out=$("$cc" $flags $incs -c "$here/mismatched_dealloc.c" -o /dev/null 2>&1)
echo "$out"
fail=0
expect() {
    if printf '%s\n' "$out" | grep -Eq "$1"; then
        echo "ok:   $1"
    else
        echo "FAIL: no diagnostic matches: $1"
        fail=1
    fi
}
expect "mismatched_dealloc.c:14:[0-9]+: warning: 'free' called on pointer returned from a mismatched allocation function \[-Wmismatched-dealloc\]"
expect "mismatched_dealloc.c:21:[0-9]+: warning: 'cudaFree' called on pointer returned from a mismatched allocation function \[-Wmismatched-dealloc\]"
expect "mismatched_dealloc.c:23:[0-9]+: warning: 'cudaFreeHost' called on pointer returned from a mismatched allocation function \[-Wmismatched-dealloc\]"
expect "mismatched_dealloc.c:33:[0-9]+: warning: leak of 'd' .*\[-Wanalyzer-malloc-leak\]"

good=$("$cc" $flags -Wpedantic -Werror $incs -c "$here/correct.c" -o /dev/null 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$good" ]; then
    echo "FAIL: correct.c is not silent:"
    echo "$good"
    fail=1
else
    echo "ok:   correct.c compiles without a warning"
fi
[ $fail -eq 0 ] && echo "compile pairing: ok"
exit $fail
