#!/bin/sh
# Runs one libFuzzer harness in the background at nice 19: fuzz/run.sh SET NAME [RUNS], SET
# lint (fuzz/lint/: config, suppress, compdb or sarif) or files (fuzz/files/: replay, trace
# or supp), RUNS default 10 000 000, after SET/build.sh. Its corpus grows in
# SET/build/corpus-NAME, crashes land in SET/build/artifacts-NAME/, the log in
# SET/build/fuzz-NAME.log (its last lines give number_of_executed_units). Seeds: SET/seeds/NAME
# and the regression inputs in SET/crashes/NAME. MAX_LEN sets the largest input (4096).
set -eu
[ $# -ge 2 ] || { echo "usage: fuzz/run.sh lint|files NAME [RUNS]" >&2; exit 2; }
here=$(cd "$(dirname "$0")/$1" && pwd)
name=$2
runs=${3:-10000000}
[ -x "$here/build/fuzz_$name" ] || { echo "fuzz/run.sh: $here/build/fuzz_$name: not built (fuzz/$1/build.sh)" >&2; exit 1; }
cd "$here/build"
mkdir -p "corpus-$name" "artifacts-$name"
nohup nice -n 19 "./fuzz_$name" -runs="$runs" -max_len="${MAX_LEN:-4096}" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="artifacts-$name/" -print_final_stats=1 -close_fd_mask=2 \
  "corpus-$name" "../seeds/$name" "../crashes/$name" > "fuzz-$name.log" 2>&1 &
echo "fuzz_$name: pid $!, log $here/build/fuzz-$name.log"
