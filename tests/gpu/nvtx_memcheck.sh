#!/bin/sh
# Runs tests/gpu/nvtx_memcheck.cu under compute-sanitizer's memcheck and checks its verdicts:
# with GPUMEM_NVTX on, an access one past a pool block's request, or into a released block,
# is an "Invalid __global__ write"; with GPUMEM_NVTX=0 memcheck sees nothing (the access is in
# memory CUDA counts as allocated); with GPUMEM_NVTX unset, gpumem finds compute-sanitizer
# itself; a program that stays in bounds gets 0 errors with NVTX on.
# Usage: nvtx_memcheck.sh PROGRAM device|pinned. Exits 77 without a GPU or compute-sanitizer.
prog=$1 which=$2
sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
[ -z "$sanitizer" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] &&
  sanitizer=/usr/local/cuda/bin/compute-sanitizer
if [ -z "$sanitizer" ]; then
  echo "SKIP: compute-sanitizer not found (set COMPUTE_SANITIZER to its path)"
  exit 77
fi
"$prog" none >/dev/null 2>&1
[ $? -eq 77 ] && { echo "SKIP: no CUDA device"; exit 77; }

failures=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# run NVTX MODE: memcheck's report of PROGRAM MODE with GPUMEM_NVTX=NVTX ("" leaves it unset).
run() {
  if [ -n "$1" ]; then
    GPUMEM_NVTX=$1 "$sanitizer" --tool memcheck --destroy-on-device-error kernel "$prog" "$2" \
      >"$out" 2>&1
  else
    env -u GPUMEM_NVTX "$sanitizer" --tool memcheck --destroy-on-device-error kernel "$prog" \
      "$2" >"$out" 2>&1
  fi
}

errors() {
  sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$out" | tail -n1
}

# expect NVTX MODE found|clean
expect() {
  run "$1" "$2"
  n=$(errors)
  label="GPUMEM_NVTX=${1:-(unset)} $2"
  if [ "$3" = found ] && [ "${n:-0}" -ge 1 ] && grep -q "Invalid __global__ write" "$out"; then
    echo "ok   $label: memcheck reports it ($n error(s))"
  elif [ "$3" = clean ] && [ "$n" = 0 ] && grep -q " ok (0 failures)" "$out"; then
    echo "ok   $label: 0 errors"
  else
    echo "FAIL $label: expected $3, memcheck said ${n:-nothing}:"
    sed 's/^/    | /' "$out"
    failures=$((failures + 1))
  fi
}

if [ "$which" = pinned ]; then
  expect 1 pinned-past found
  expect 0 pinned-past clean
  expect 1 pinned-clean clean
else
  expect 1 device-past found
  expect 0 device-past clean
  expect "" device-past found
  expect 1 device-freed found
  expect 0 device-freed clean
  expect 1 clean clean
fi
[ $failures -eq 0 ] && echo "nvtx memcheck ($which): ok" || echo "nvtx memcheck ($which): $failures failed"
exit $((failures != 0))
