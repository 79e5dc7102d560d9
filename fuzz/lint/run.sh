#!/bin/sh
# fuzz/lint/run.sh NAME [RUNS]: fuzz/run.sh lint NAME [RUNS] (NAME: config, suppress, compdb
# or sarif).
exec "$(dirname "$0")/../run.sh" lint "$@"
