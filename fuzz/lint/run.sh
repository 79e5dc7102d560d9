#!/bin/sh
# Runs one harness in the background at nice 19: fuzz/lint/run.sh NAME [RUNS] (NAME: config,
# suppress, compdb or sarif; RUNS default 10 000 000). Its corpus grows in build/corpus-NAME,
# crashes land in build/artifacts-NAME/, the log in build/fuzz-NAME.log (its last lines give
# number_of_executed_units). Seeds: seeds/NAME and the regression inputs in crashes/NAME.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
name=$1
runs=${2:-10000000}
cd "$here/build"
mkdir -p "corpus-$name" "artifacts-$name"
nohup nice -n 19 "./fuzz_$name" -runs="$runs" -max_len="${MAX_LEN:-4096}" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="artifacts-$name/" -print_final_stats=1 -close_fd_mask=2 \
  "corpus-$name" "../seeds/$name" "../crashes/$name" > "fuzz-$name.log" 2>&1 &
echo "fuzz_$name: pid $!, log $here/build/fuzz-$name.log"
