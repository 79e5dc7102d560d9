#!/bin/sh
# `gpumem check`'s command line, without a GPU: usage errors exit 2 with a message, the
# program's own exit status comes back, a program that cannot run gives 127, a signal 128+N,
# a program that uses no CUDA is said to have been left unchecked, one killed before it could
# write its report (SIGKILL) is said to have been killed (in the JSON report too), and a machine
# without the NVIDIA driver gives 77. FAKE_LIBCUDA is a stand-in driver (tests/fake_libcuda.c)
# so that the launcher runs the program here; the checked program itself never loads it.
# usage: check_cli.sh GPUMEM FAKE_LIBCUDA [FORK_NOCUDA FAKE_SONAME_LIBCUDA]
gpumem=$1
GPUMEM_LIBCUDA=$2
fork_nocuda=${3:-} soname_libcuda=${4:-}
export GPUMEM_LIBCUDA
# Not a rank of a parallel job (a Slurm job's SLURM_PROCID, say): reports as for a program alone.
unset RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID
fails=0
expect() { # expect STATUS PATTERN -- ARGS...
  want=$1 pattern=$2
  shift 3
  out=$("$gpumem" check "$@" 2>&1)
  got=$?
  if [ "$got" -ne "$want" ] || ! printf '%s\n' "$out" | grep -q -- "$pattern"; then
    echo "FAIL: gpumem check $*: status $got (want $want), output:"
    printf '%s\n' "$out"
    fails=$((fails + 1))
  else
    echo "ok   gpumem check $*"
  fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '{\n  mine\n  gpumem:leek\n}\n' > "$tmp/bad.supp"
printf '{\n  mine\n  gpumem:leak\n  call:cudaMalloc\n}\n' > "$tmp/good.supp"

expect 2 "no PROGRAM to run" --
expect 2 "no PROGRAM to run" -- --leak-check=full
expect 2 "unknown option '--frobnicate'" -- --frobnicate -- true
expect 2 "unknown option '--leak-chek'; did you mean --leak-check?" -- --leak-chek=full -- true
expect 2 "unknown option '-x'" -- -x -- true
expect 2 "--quiet takes no value" -- --quiet=1 -- true
expect 2 "--json needs a value" -- --json
# Both forms of a value, and a PROGRAM without `--`.
expect 2 "--leak-check takes no, summary or full, not 'some'" -- --leak-check some -- true
expect 0 "true used no CUDA" -- --leak-check summary --error-exitcode 3 true
expect 0 "true used no CUDA" -- --json "$tmp/out.json" -- true
expect 0 "true used no CUDA" -- --log-file="$tmp/log" true
# -q: no note for a program that used no CUDA.
out=$("$gpumem" check -q -- true 2>&1)
if [ $? -ne 0 ] || [ -n "$out" ]; then
  echo "FAIL: gpumem check -q -- true printed: $out"; fails=$((fails + 1))
else
  echo "ok   gpumem check -q -- true (silent)"
fi
# No driver: one message and the status of "cannot run here".
GPUMEM_LIBCUDA=$tmp/libcuda.so.1 expect 77 "no NVIDIA driver here ($tmp/libcuda.so.1 not found); gpumem check needs a GPU to run a program" -- -- true
GPUMEM_LIBCUDA=$tmp/libcuda.so.1 expect 77 "without a GPU: gpumem lint works, and the library runs on its simulated device (GPUMEM_BACKEND=sim)" -- -- true
expect 2 "--leak-check takes no, summary or full, not 'some'" -- --leak-check=some -- true
expect 2 "--error-exitcode takes a number from 0 to 255, not '300'" -- --error-exitcode=300 -- true
expect 2 "--failed-calls takes error, note or no, not 'maybe'" -- --failed-calls=maybe -- true
expect 2 "--watch-calls takes most or all, not 'every'" -- --watch-calls=every -- true
long=$(printf '%04080d' 0)
expect 2 "--log-file: the name can be .* bytes long once %p and %r are expanded, more than a path may be (4095)" -- --log-file="/tmp/$long.%r.log" -- true
expect 0 "true used no CUDA" -- --failed-calls=note -- true
expect 2 "--error-exitcode takes a number from 0 to 255, not 'x'" -- --error-exitcode=x -- true
expect 2 "--gen-suppressions takes no or yes" -- --gen-suppressions=maybe -- true
expect 2 "--log-file needs a path" -- --log-file= -- true
expect 2 "--show-leak-kinds takes definite, reachable, all or none (comma-separated), not 'lost'" -- --show-leak-kinds=lost -- true
expect 2 "--errors-for-leak-kinds takes definite, reachable, all or none (comma-separated), not 'definite,x'" -- --errors-for-leak-kinds=definite,x -- true
expect 0 "true used no CUDA" -- --show-leak-kinds=definite,reachable --errors-for-leak-kinds=all -- true
# Every leak is listed and counted by default; valgrind's rule on request.
expect 0 "sh used no CUDA" -- -- sh -c 'test "$GPUMEM_CHECK_SHOW_LEAK_KINDS" = all && test "$GPUMEM_CHECK_ERRORS_FOR_LEAK_KINDS" = all'
expect 0 "sh used no CUDA" -- --errors-for-leak-kinds=definite -- sh -c 'test "$GPUMEM_CHECK_ERRORS_FOR_LEAK_KINDS" = definite'
expect 0 "sh used no CUDA" -- --show-leak-kinds=all -- sh -c 'test "$GPUMEM_CHECK_SHOW_LEAK_KINDS" = all'
# The default suppressions beside the library are read (passed on to the program's processes)
# unless --default-suppressions=no; missing, they are warned about; broken, an error.
expect 0 "sh used no CUDA" -- -- sh -c 'case "$GPUMEM_CHECK_SUPPRESSIONS" in */default.supp*) exit 0;; *) exit 1;; esac'
expect 0 "sh used no CUDA" -- --default-suppressions=no -- sh -c 'case "$GPUMEM_CHECK_SUPPRESSIONS" in *default.supp*) exit 1;; *) exit 0;; esac'
expect 2 "--default-suppressions takes yes or no, not 'maybe'" -- --default-suppressions=maybe -- true
lib=$(dirname "$gpumem")/check/libgpumem_check.so
if [ -f "$lib" ]; then
  mkdir -p "$tmp/alone" "$tmp/broken"
  cp "$lib" "$tmp/alone/" && cp "$lib" "$tmp/broken/" && cp "$tmp/bad.supp" "$tmp/broken/default.supp"
  GPUMEM_CHECK_LIBRARY=$tmp/alone/libgpumem_check.so expect 0 "the default suppressions ($tmp/alone/default.supp) are missing" -- -- true
  out=$(GPUMEM_CHECK_LIBRARY=$tmp/alone/libgpumem_check.so "$gpumem" check --default-suppressions=no -- true 2>&1)
  if printf '%s\n' "$out" | grep -q "are missing"; then echo "FAIL: --default-suppressions=no still warns"; fails=$((fails + 1)); else echo "ok   --default-suppressions=no: no warning"; fi
  GPUMEM_CHECK_LIBRARY=$tmp/broken/libgpumem_check.so expect 2 "default.supp:3: unknown finding kind after gpumem:" -- -- true
fi
# The preloaded realloc and the wrapped main leave ordinary programs alone (sort reallocs).
expect 0 "sort used no CUDA" -- -- sort /etc/passwd /etc/passwd /etc/passwd
expect 2 "bad.supp:3: unknown finding kind after gpumem: 'leek'; did you mean gpumem:leak?" -- --suppressions="$tmp/bad.supp" -- true
expect 2 "cannot read the suppression file" -- --suppressions="$tmp/none.supp" -- true
expect 0 "true used no CUDA" -- --suppressions="$tmp/good.supp" -- true
expect 3 "sh used no CUDA" -- -- sh -c 'exit 3'
expect 3 "sh used no CUDA" -- --error-exitcode=9 -- sh -c 'exit 3'
expect 127 "cannot run $tmp/none: No such file or directory" -- -- "$tmp/none"
# The program is looked for before anything else: a typo is not answered with "no driver".
GPUMEM_LIBCUDA=$tmp/libcuda.so.1 expect 127 "cannot run $tmp/none: No such file or directory" -- -- "$tmp/none"
expect 127 "cannot run gpumem-no-such-program: no such program in PATH" -- -- gpumem-no-such-program
printf 'x\n' > "$tmp/plain"
expect 127 "cannot run $tmp/plain: not executable" -- -- "$tmp/plain"
expect 127 "cannot run $tmp: it is a folder" -- -- "$tmp"
expect 143 "sh was killed by signal 15 (SIGTERM) and left no report" -- -- sh -c 'kill -TERM $$'
expect 137 "sh was killed by signal 9 (SIGKILL) and left no report: either it used no CUDA, or the signal ended it before its report could be written (SIGKILL cannot be caught)" -- -- sh -c 'kill -KILL $$'
expect 137 "sh was killed by signal 9" -- --json="$tmp/killed.json" -- sh -c 'kill -KILL $$'
if grep -q '"status": "killed"' "$tmp/killed.json" && grep -q '"signal": 9' "$tmp/killed.json"; then
  echo "ok   the JSON report of a killed program says so"
else
  echo "FAIL: no JSON report saying the program was killed:"; cat "$tmp/killed.json"
  fails=$((fails + 1))
fi
# An earlier run's clean report is removed before the program starts: a program killed before
# it writes its own must not leave CI reading the earlier clean one.
printf '{\n  "schema": "gpumem-check/1",\n  "status": "exited",\n  "findings": []\n}\n' > "$tmp/stale.json"
echo "==123== ERROR SUMMARY: 0 errors" > "$tmp/stale.log"
expect 137 "sh was killed by signal 9" -- --json="$tmp/stale.json" --log-file="$tmp/stale.log" -- sh -c 'kill -KILL $$'
if grep -q '"status": "killed"' "$tmp/stale.json" && ! [ -e "$tmp/stale.log" ]; then
  echo "ok   an earlier run's reports are gone when the program was killed"
else
  echo "FAIL: an earlier run's report is left as if it were this run's:"; cat "$tmp/stale.json"
  fails=$((fails + 1))
fi
# Relative report paths are made absolute: the program may change its folder before it writes.
cd "$tmp" || exit 1
expect 0 "log $tmp/rel.log json $tmp/rel.json" -- --log-file=rel.log --json rel.json -- \
  sh -c 'echo "log $GPUMEM_CHECK_LOG json $GPUMEM_CHECK_JSON"'
cd - > /dev/null || exit 1
expect 0 "sh used no CUDA" -- -- sh -c 'test -n "$CUDA_INJECTION64_PATH" && test -n "$LD_PRELOAD"'
GPUMEM_CHECK_LIBRARY=$tmp/none expect 2 "GPUMEM_CHECK_LIBRARY=$tmp/none cannot be read" -- -- true
CUDA_INJECTION64_PATH=/opt/other/libinject.so expect 0 "CUDA_INJECTION64_PATH=/opt/other/libinject.so is replaced by gpumem check's own" -- -- true
echo "not a library" > "$tmp/libbroken.so"
GPUMEM_CHECK_LIBRARY=$tmp/libbroken.so expect 2 "cannot load $tmp/libbroken.so" -- -- true
# A process that loads the driver without initializing it, and its forked worker, used no
# CUDA: neither is said to have run unchecked. Another tool's CUDA_INJECTION64_PATH is.
if [ -n "$fork_nocuda" ]; then
  expect 0 "check_fork_nocuda used no CUDA, so there was nothing to check" -- -- "$fork_nocuda" "$soname_libcuda"
  if printf '%s\n' "$out" | grep -q "not injected"; then
    echo "FAIL: a process that never initialized CUDA is said to be unchecked"
    fails=$((fails + 1))
  fi
  expect 0 "CUDA_INJECTION64_PATH names another tool's library, /opt/other/libinject.so" -- -- \
    env CUDA_INJECTION64_PATH=/opt/other/libinject.so "$fork_nocuda" "$soname_libcuda"
fi
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
