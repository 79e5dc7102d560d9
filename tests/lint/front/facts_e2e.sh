#!/bin/sh
# End-to-end: release and allocation helpers defined in another file of the program are
# followed without --release-fn (the facts of the first pass, tools/lint/facts.c), and a
# function that two units define (two programs in one run) is not.
# Usage: facts_e2e.sh GPUMEM_LINT CLANG PLUGIN FACTS_DIR
set -u
lint=$1 clang=$2 plugin=$3 dir=$(cd "$4" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
cd "$dir/program" || exit 1
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" -j2 . >"$out/text" 2>"$out/err"
for want in 'main.cu:8:5: warning: memory allocated with cudaMalloc is released again with release_buffer (cudaFree)' \
            'main.cu:9:5: warning: memory allocated with cudaMallocHost is released with release_buffer (cudaFree); release it with cudaFreeHost' \
            'main.cu:10:5: warning: memory allocated with alloc_buffer (cudaMalloc) is never released' \
            'main.cu:11:5: warning: memory allocated with cudaMalloc is never released'; do
  grep -qF "$want" "$out/text" || { echo "FAIL: no '$want'"; fail=1; }
done
[ "$(grep -c ': warning: ' "$out/text")" -eq 4 ] || { echo "FAIL: not 4 findings:"; cat "$out/text" "$out/err"; fail=1; }
cd "$dir/two_programs" || exit 1
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" -j2 . >"$out/two" 2>"$out/err2"
if grep -q "GM008" "$out/two"; then
  echo "FAIL: a function two units define was taken as one of them:"; cat "$out/two"; fail=1
fi
[ "$fail" -eq 0 ] && echo "facts end-to-end: 2 passed, 0 failed"
exit "$fail"
