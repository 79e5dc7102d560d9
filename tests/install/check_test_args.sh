#!/bin/sh
# gpumem_add_check_test (cmake/gpumemCheckTest.cmake) refuses what it cannot run: no COMMAND,
# an unknown argument, ERROR_EXITCODE 0, 77 (skip) or above 255; and a right call registers
# `gpumem check --error-exitcode=N [options] -- program args` with SKIP_RETURN_CODE 77.
# usage: check_test_args.sh SOURCE_DIR
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
project() { # project BODY: a project with a stand-in gpumem::gpumem_cli
  mkdir -p "$tmp/p" && rm -rf "$tmp/p"/* "$tmp/b"
  cat > "$tmp/p/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(t NONE)
enable_testing()
add_executable(gpumem::gpumem_cli IMPORTED)
set_target_properties(gpumem::gpumem_cli PROPERTIES IMPORTED_LOCATION /bin/sh)
include($src/cmake/gpumemCheckTest.cmake)
$1
CMAKE
  cmake -S "$tmp/p" -B "$tmp/b" 2>&1
}
refused() { # refused WHAT PATTERN BODY
  out=$(project "$3")
  if [ $? -ne 0 ] && printf '%s\n' "$out" | grep -qF -- "$2"; then echo "ok   refused: $1"; else
    echo "FAIL: $1 not refused with '$2':"; printf '%s\n' "$out"; fails=$((fails + 1)); fi
}
refused "no COMMAND" "COMMAND is missing" "gpumem_add_check_test(t1)"
refused "an unknown argument" "unknown arguments" "gpumem_add_check_test(t1 FROB COMMAND a)"
refused "ERROR_EXITCODE 77" "other than 77" "gpumem_add_check_test(t1 COMMAND a ERROR_EXITCODE 77)"
refused "ERROR_EXITCODE 0" "from 1 to 255" "gpumem_add_check_test(t1 COMMAND a ERROR_EXITCODE 0)"
refused "ERROR_EXITCODE 300" "from 1 to 255" "gpumem_add_check_test(t1 COMMAND a ERROR_EXITCODE 300)"
out=$(project 'gpumem_add_check_test(t1 COMMAND /bin/prog x y ERROR_EXITCODE 5 CHECK_OPTIONS -q WORKING_DIRECTORY /tmp)') &&
  listing=$(cd "$tmp/b" && ctest -N -V 2>&1) || { echo "FAIL: a right call: $out"; exit 1; }
want='/bin/sh "check" "--error-exitcode=5" "-q" "--" "/bin/prog" "x" "y"'
if printf '%s\n' "$listing" | grep -qF -- "$want" && printf '%s\n' "$listing" | grep -qF "Working Directory: /tmp"; then
  echo "ok   registered: $want"
else
  echo "FAIL: not registered as $want:"; printf '%s\n' "$listing"; fails=$((fails + 1))
fi
grep -q 'SKIP_RETURN_CODE "77"' "$tmp/b/CTestTestfile.cmake" && echo "ok   SKIP_RETURN_CODE 77" ||
  { echo "FAIL: no SKIP_RETURN_CODE 77 in CTestTestfile.cmake"; cat "$tmp/b/CTestTestfile.cmake"; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
