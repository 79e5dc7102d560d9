#!/bin/sh
# gpumem lint on a tree of real CUDA code, one unit at a time with the include folders that
# code's own Makefiles give (the unit's folder and the two above it), and the defines that map
# the runtime APIs CUDA 13 removed to their successors; prints the JSON reports' findings as
# one merged JSON list, and the units that could not be analysed on stderr.
#
# usage: bench/lint/real.sh GPUMEM TREE > findings.json
#   GPUMEM  build/tools/gpumem
#   TREE    a folder of sources (e.g. Rodinia's cuda/ and nccl-tests, side by side)
# EXTRA_FLAGS adds flags for every unit.
set -eu
gpumem=${1:?usage: bench/lint/real.sh GPUMEM TREE}
tree=${2:?usage: bench/lint/real.sh GPUMEM TREE}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$tree"
find . -type f \( -name '*.cu' -o -name '*.c' -o -name '*.cpp' \) | sed 's|^\./||' | sort > "$work/units"
n=$(wc -l < "$work/units")
i=0
while IFS= read -r unit; do
  i=$((i + 1))
  dir=$(dirname "$unit")
  printf '[%d/%d] %s\n' "$i" "$n" "$unit" >&2
  # shellcheck disable=SC2086
  "$gpumem" lint --no-config -q --fail-on=never --format=json -o "$work/$i.json" "$unit" -- \
    -I"$dir" -I"$dir/.." -I"$dir/../.." -DcudaThreadSynchronize=cudaDeviceSynchronize \
    -DcudaThreadExit=cudaDeviceReset ${EXTRA_FLAGS:-} -w 2> "$work/$i.err" || true
  grep 'not analyzed' "$work/$i.err" >&2 || true
done < "$work/units"
python3 - "$work" "$n" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
findings, seen, analysed = [], set(), 0
for i in range(1, n + 1):
    try:
        with open(f"{work}/{i}.json") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        continue
    if not doc.get("notAnalyzed"):
        analysed += 1
    for x in doc.get("findings", []):
        key = (x["file"], x["line"], x["rule"], x["message"])
        if key not in seen:
            seen.add(key)
            findings.append(x)
json.dump({"units": n, "analysed": analysed, "findings": findings}, sys.stdout, indent=1)
print()
PY
