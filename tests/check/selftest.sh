#!/usr/bin/env bash
# Tests run_one.sh without a GPU: a stand-in nvidia-smi lists one, a stand-in gpumem answers
# `check --help` and, for `check`, writes the JSON documents it is given (in FAKE_DOCS:
# top.json, and child.json when there is one) and prints FAKE_OUTPUT, then exits FAKE_RC.
# Each case says whether run_one.sh must accept or refuse what the stand-in reports.
#
#   selftest.sh TESTS_CHECK_DIR
#
# Prints "selftest: ok" when every case came out as it should; exits 77 without python3.
set -uo pipefail

dir=${1:?usage: selftest.sh TESTS_CHECK_DIR}
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-check-selftest.XXXXXX")
trap '[ -n "${SELFTEST_KEEP:-}" ] || rm -rf "$tmp"' EXIT

mkdir -p "$tmp/bin"
cat >"$tmp/bin/nvidia-smi" <<'EOF'
#!/bin/sh
echo "GPU 0: Stand-in GPU (UUID: GPU-00000000-0000-0000-0000-000000000000)"
EOF
cat >"$tmp/bin/gpumem" <<'EOF'
#!/usr/bin/env bash
[ "$1" = check ] || exit 2
[ "$2" = --help ] && exit 0
json=
for arg in "$@"; do
  case $arg in --json=*) json=${arg#--json=} ;; esac
done
cp "$FAKE_DOCS/top.json" "${json//%p/1000}"
[ -f "$FAKE_DOCS/child.json" ] && cp "$FAKE_DOCS/child.json" "${json//%p/1001}"
printf '%s\n' "$FAKE_OUTPUT"
exit "$FAKE_RC"
EOF
chmod +x "$tmp/bin/nvidia-smi" "$tmp/bin/gpumem"
export PATH="$tmp/bin:$PATH"

failures=0
# case NAME accept|refuse PROGRAM-SOURCE RC OUTPUT TOP-JSON [CHILD-JSON]
case_() {
  local name=$1 want=$2 src=$3 rc=$4 output=$5 top=$6 child=${7:-}
  local docs="$tmp/docs-$name"
  mkdir -p "$docs"
  printf '%s\n' "$top" >"$docs/top.json"
  [ -z "$child" ] || printf '%s\n' "$child" >"$docs/child.json"
  FAKE_DOCS=$docs FAKE_RC=$rc FAKE_OUTPUT=$output \
    bash "$dir/run_one.sh" "$tmp/bin/gpumem" "/build/check_$(basename "${src%.*}")_static" \
    "$dir/progs/$src" >"$tmp/$name.log" 2>&1
  local got=$?
  if { [ "$want" = accept ] && [ $got -eq 0 ]; } || { [ "$want" = refuse ] && [ $got -eq 1 ]; }; then
    echo "selftest: $name: $want: as it should (run_one.sh exited $got)"
  else
    echo "selftest: $name: run_one.sh exited $got, but should $want; its output:"
    cat "$tmp/$name.log"
    failures=$((failures + 1))
  fi
}

frame() { # file line
  printf '{"function":"main","file":"/work/tests/check/progs/%s","line":%s,"module":"x"}' "$1" "$2"
}
doc() { # command-json status-fields findings-json errors leaks leaked-bytes
  printf '{"schema":"gpumem-check/1","pid":1000,"command":%s,%s,"findings":[%s],"peak":{"device":0},"summary":{"errors":%s,"leaks":%s,"leaked_bytes":%s,"suppressed":0}}' \
    "$1" "$2" "$3" "$4" "$5" "${6:-0}"
}
prog() { printf '["/build/check_%s_static"]' "$1"; }

leak_device='{"kind":"leak","alloc_call":"cudaMalloc","memory":"device","bytes":1048576,"address":"0x7f0000000000","alloc_stack":['"$(frame leak_device.cu 18)"']}'
case_ leak_ok accept leak_device.cu 99 "leak_device: done" \
  "$(doc "$(prog leak_device)" '"status":"exited","exit_code":0' "$leak_device" 1 1 1048576)"
case_ leak_missing refuse leak_device.cu 0 "leak_device: done" \
  "$(doc "$(prog leak_device)" '"status":"exited","exit_code":0' "" 0 0 0)"
case_ leak_twice refuse leak_device.cu 99 "leak_device: done" \
  "$(doc "$(prog leak_device)" '"status":"exited","exit_code":0' "$leak_device,$leak_device" 2 2 2097152)"
case_ leak_wrong_bytes refuse leak_device.cu 99 "leak_device: done" \
  "$(doc "$(prog leak_device)" '"status":"exited","exit_code":0' "${leak_device/1048576/4096}" 1 1 4096)"
case_ leak_no_line refuse leak_device.cu 99 "leak_device: done" \
  "$(doc "$(prog leak_device)" '"status":"exited","exit_code":0' "${leak_device/leak_device.cu/other.cu}" 1 1 1048576)"
case_ leak_exit_not_99 refuse leak_device.cu 0 "leak_device: done" \
  "$(doc "$(prog leak_device)" '"status":"exited","exit_code":0' "$leak_device" 1 1 1048576)"
case_ leak_no_closing_line refuse leak_device.cu 99 "" \
  "$(doc "$(prog leak_device)" '"status":"exited","exit_code":0' "$leak_device" 1 1 1048576)"
case_ leak_bad_summary refuse leak_device.cu 99 "leak_device: done" \
  "$(doc "$(prog leak_device)" '"status":"exited","exit_code":0' "$leak_device" 1 0 0)"

del='{"kind":"mismatched-release","call":"operator delete","memory":"managed","bytes":256,"alloc_call":"cudaMallocManaged","stack":['"$(frame mismatch_delete_managed.cu 27)"']}'
del_array='{"kind":"mismatched-release","call":"operator delete[]","memory":"managed","bytes":4096,"alloc_call":"cudaMallocManaged","alloc_stack":['"$(frame mismatch_delete_managed.cu 24)"']}'
case_ delete_ok accept mismatch_delete_managed.cu 99 "mismatch_delete_managed: done" \
  "$(doc "$(prog mismatch_delete_managed)" '"status":"exited","exit_code":0' "$del_array,$del" 2 0)"
case_ delete_one_missing refuse mismatch_delete_managed.cu 99 "mismatch_delete_managed: done" \
  "$(doc "$(prog mismatch_delete_managed)" '"status":"exited","exit_code":0' "$del" 1 0)"

invalid='{"kind":"invalid-free","call":"cudaFree","address":"0x7ffc00000000","stack":[]}'
case_ invalid_ok accept invalid_free_stack.cu 99 "invalid_free_stack: done" \
  "$(doc "$(prog invalid_free_stack)" '"status":"exited","exit_code":0' "$invalid" 1 0)"
case_ invalid_with_memory refuse invalid_free_stack.cu 99 "invalid_free_stack: done" \
  "$(doc "$(prog invalid_free_stack)" '"status":"exited","exit_code":0' "${invalid/\"call\"/\"memory\":\"device\",\"call\"}" 1 0)"

case_ clean_exit_ok accept clean_exit_code.cu 3 "clean_exit_code: done" \
  "$(doc "$(prog clean_exit_code)" '"status":"exited","exit_code":3' "" 0 0)"
case_ clean_exit_lost refuse clean_exit_code.cu 0 "clean_exit_code: done" \
  "$(doc "$(prog clean_exit_code)" '"status":"exited","exit_code":3' "" 0 0)"

suppressed='{"kind":"leak","alloc_call":"cudaMalloc","memory":"device","bytes":4096,"count":1,"suppressed":"known","alloc_stack":[]}'
case_ suppressed_ignored accept clean_exit_code.cu 3 "clean_exit_code: done" \
  "$(doc "$(prog clean_exit_code)" '"status":"exited","exit_code":3' "$suppressed" 0 0)"

abort_leak='{"kind":"leak","alloc_call":"cudaMalloc","memory":"device","bytes":65536,"alloc_stack":['"$(frame leak_abort.cu 15)"']}'
case_ abort_ok accept leak_abort.cu 134 "leak_abort: aborting with a device block live" \
  "$(doc "$(prog leak_abort)" '"status":"signaled","signal":6' "$abort_leak" 1 1 65536)"
case_ abort_as_exit refuse leak_abort.cu 99 "" \
  "$(doc "$(prog leak_abort)" '"status":"exited","exit_code":0' "$abort_leak" 1 1 65536)"

parent='{"kind":"leak","alloc_call":"cudaMallocHost","memory":"pinned","bytes":8192,"alloc_stack":['"$(frame fork_child.cu 60)"']}'
child='{"kind":"leak","alloc_call":"cudaMalloc","memory":"device","bytes":16384,"alloc_stack":['"$(frame fork_child.cu 17)"']}'
child_cmd='["/build/check_fork_child_static","child"]'
case_ fork_ok accept fork_child.cu 99 "fork_child: done" \
  "$(doc "$(prog fork_child)" '"status":"exited","exit_code":0' "$parent" 1 1 8192)" \
  "$(doc "$child_cmd" '"status":"exited","exit_code":0' "$child" 1 1 16384)"
case_ fork_child_in_parent refuse fork_child.cu 99 "fork_child: done" \
  "$(doc "$(prog fork_child)" '"status":"exited","exit_code":0' "$parent,$child" 2 2 24576)" \
  "$(doc "$child_cmd" '"status":"exited","exit_code":0' "" 0 0)"
case_ fork_no_child refuse fork_child.cu 99 "fork_child: done" \
  "$(doc "$(prog fork_child)" '"status":"exited","exit_code":0' "$parent" 1 1 8192)"

case_ cupti_ok accept cupti_subscriber.cu 0 "cupti_subscriber: done" \
  "$(doc "$(prog cupti_subscriber)" '"status":"unchecked"' "" 0 0)"
case_ cupti_checked refuse cupti_subscriber.cu 0 "cupti_subscriber: done" \
  "$(doc "$(prog cupti_subscriber)" '"status":"exited","exit_code":0' "" 0 0)"

case_ not_json refuse leak_device.cu 99 "leak_device: done" '{"schema": '

# A program that needs two GPUs (// expect-gpus: 2), where the stand-in lists one: skipped.
FAKE_DOCS=$tmp FAKE_RC=0 FAKE_OUTPUT= bash "$dir/run_one.sh" "$tmp/bin/gpumem" \
  /build/check_leak_two_gpus_static "$dir/progs/leak_two_gpus.cu" >"$tmp/two_gpus.log" 2>&1
got=$?
if [ $got -eq 77 ] && grep -q "needs 2 GPUs, nvidia-smi -L lists 1" "$tmp/two_gpus.log"; then
  echo "selftest: two_gpus: skipped with one GPU, as it should"
else
  echo "selftest: two_gpus: run_one.sh exited $got, but should skip (77); its output:"
  cat "$tmp/two_gpus.log"
  failures=$((failures + 1))
fi

if [ $failures -ne 0 ]; then
  echo "selftest: $failures case(s) wrong"
  exit 1
fi
echo "selftest: ok"
