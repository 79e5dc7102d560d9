#!/bin/sh
# Runs the lint fuzzer: JOBS processes (default 1) sharing build/corpus, RUNS executions each.
# Fast mode (the default) uses UBSan only; replay the corpus under ASan afterwards with
# `FUZZ_SANITIZE=address,undefined ./build.sh && build/fuzz_lint -runs=0 build/corpus`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/build"
runs=${RUNS:-10000000}
jobs=${JOBS:-1}
mkdir -p corpus artifacts
i=1
while [ "$i" -le "$jobs" ]; do
  len=$((512 * i))
  nohup nice -n 19 ./fuzz_lint -runs="$runs" -max_len="$len" -timeout=10 -rss_limit_mb=2048 \
    -detect_leaks=0 -dict=../cuda.dict -artifact_prefix=artifacts/ -print_final_stats=1 \
    corpus ../seeds ../../../tests/lint/corpus > "fuzz-$(date +%s)-$i.log" 2>&1 &
  i=$((i + 1))
done
