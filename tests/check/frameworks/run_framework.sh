#!/usr/bin/env bash
# Runs one framework script of tests/check/frameworks under `gpumem check` with no option
# (the defaults a user gets) and checks the outcome:
#   *_train.py  0 errors, and the script's closing line;
#   *_leak.py   the planted 64 MiB cudaMalloc leak found: by default as an error (definitely
#               lost), or else listed with --show-leak-kinds=all (still reachable: a stale copy
#               of the pointer left in the interpreter's freed memory); says which.
#
#   run_framework.sh GPUMEM SCRIPT
# Exit status: 0 as expected, 1 not, 77 skipped: no GPU, or python3 lacks the framework.
set -uo pipefail
gpumem=$1 script=$2
name=$(basename "$script" .py)
module=${name%%_*}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "SKIP: no GPU"; exit 77
fi
if ! python3 -c "import $module" >/dev/null 2>&1; then
  echo "SKIP: python3 cannot import $module"; exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-fw-$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
run() { # run TAG [OPTIONS...]
  local tag=$1; shift
  (cd "$tmp" && PYTHONUNBUFFERED=1 "$gpumem" check "--json=$tmp/$tag.%p.json" "$@" -- \
     python3 "$script") >"$tmp/$tag.txt" 2>&1
  echo $? >"$tmp/$tag.rc"
  cat "$tmp/$tag.txt"
}
summarize() { # summarize TAG: errors, and the planted leak's kind if listed
  python3 - "$tmp" "$1" <<'PYTHON'
import glob, json, os, sys
tmp, tag = sys.argv[1], sys.argv[2]
errors, planted = 0, []
for path in glob.glob(os.path.join(tmp, tag + ".*.json")):
    doc = json.load(open(path))
    errors += doc["summary"]["errors"]
    for f in doc["findings"]:
        if f["kind"] == "leak" and f.get("alloc_call") == "cudaMalloc" and f.get("bytes") == 64 << 20 \
                and not f.get("suppressed"):
            planted.append((f.get("leak_kind"), f.get("error", True)))
print(errors, ",".join(f"{k}:{'error' if e else 'listed'}" for k, e in planted) or "-")
PYTHON
}
run default
read -r errors planted < <(summarize default)
grep -q "$name: done" "$tmp/default.txt" || { echo "FAIL: $name did not finish"; exit 1; }
case $name in
  *_train)
    if [ "$errors" -ne 0 ]; then echo "FAIL: $name: $errors errors with the default options"; exit 1; fi
    echo "ok: $name: 0 errors with the default options" ;;
  *_leak)
    if [[ $planted == *definite:error* ]]; then
      echo "ok: $name: the planted leak is found by default (definitely lost; $errors errors in all)"
      exit 0
    fi
    run all --show-leak-kinds=all
    read -r errors_all planted_all < <(summarize all)
    if [[ $planted_all == *reachable* ]]; then
      echo "ok: $name: the planted leak is found with --show-leak-kinds=all (still reachable: a stale copy of its pointer remains in the process's memory)"
      exit 0
    fi
    echo "FAIL: $name: the planted 64 MiB leak was not found (default: $planted, all: $planted_all)"
    exit 1 ;;
esac
