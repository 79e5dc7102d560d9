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
# PROGRAM-SOURCE is a file of progs/, or an absolute path; SYMBOLS_ONLY=1 sets
# CHECK_SYMBOLS_ONLY for run_one.sh; WHY=TEXT: a refusal must say TEXT (so that it is refused
# for the reason the case is about).
case_() {
  local name=$1 want=$2 src=$3 rc=$4 output=$5 top=$6 child=${7:-}
  local docs="$tmp/docs-$name"
  mkdir -p "$docs"
  printf '%s\n' "$top" >"$docs/top.json"
  [ -z "$child" ] || printf '%s\n' "$child" >"$docs/child.json"
  case $src in /*) ;; *) src=$dir/progs/$src ;; esac
  FAKE_DOCS=$docs FAKE_RC=$rc FAKE_OUTPUT=$output CHECK_SYMBOLS_ONLY=${SYMBOLS_ONLY:-0} \
    bash "$dir/run_one.sh" "$tmp/bin/gpumem" "/build/check_$(basename "${src%.*}")_static" \
    "$src" >"$tmp/$name.log" 2>&1
  local got=$?
  if [ "$want" = refuse ] && [ -n "${WHY:-}" ] && ! grep -qF -- "$WHY" "$tmp/$name.log"; then
    echo "selftest: $name: run_one.sh refused, but without saying '$WHY'; its output:"
    cat "$tmp/$name.log"
    failures=$((failures + 1))
  elif { [ "$want" = accept ] && [ $got -eq 0 ]; } || { [ "$want" = refuse ] && [ $got -eq 1 ]; }; then
    echo "selftest: $name: $want: as it should (run_one.sh exited $got)"
  else
    echo "selftest: $name: run_one.sh exited $got, but should $want; its output:"
    cat "$tmp/$name.log"
    failures=$((failures + 1))
  fi
}

# mark FILE MARK: the number of the line of progs/FILE (or of FILE) that ends with // @MARK.
mark() {
  local file=$1
  case $file in /*) ;; *) file=$dir/progs/$file ;; esac
  grep -n "// @$2\$" "$file" | cut -d: -f1
}
frame() { # file line [function [inlined]]
  printf '{"function":"%s","file":"/work/tests/check/progs/%s","line":%s,"module":"x"%s}' \
    "${3:-main}" "$1" "$2" "${4:+,\"inlined\":true}"
}
doc() { # command-json status-fields findings-json errors leaks leaked-bytes
  printf '{"schema":"gpumem-check/1","pid":1000,"command":%s,%s,"findings":[%s],"peak":{"device":0},"summary":{"errors":%s,"leaks":%s,"leaked_bytes":%s,"suppressed":0}}' \
    "$1" "$2" "$3" "$4" "$5" "${6:-0}"
}
prog() { printf '["/build/check_%s_static"]' "$1"; }

leak_device='{"kind":"leak","alloc_call":"cudaMalloc","memory":"device","bytes":1048576,"address":"0x7f0000000000","alloc_stack":['"$(frame leak_device.cu "$(mark leak_device.cu alloc)")"']}'
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

m=mismatch_delete_managed.cu
del='{"kind":"mismatched-release","call":"operator delete","memory":"managed","bytes":256,"alloc_call":"cudaMallocManaged","stack":['"$(frame $m "$(mark $m delete_one)")"'],"alloc_stack":['"$(frame $m "$(mark $m one)")"']}'
del_array='{"kind":"mismatched-release","call":"operator delete[]","memory":"managed","bytes":4096,"alloc_call":"cudaMallocManaged","stack":['"$(frame $m "$(mark $m delete_many)")"'],"alloc_stack":['"$(frame $m "$(mark $m many)")"']}'
case_ delete_ok accept mismatch_delete_managed.cu 99 "mismatch_delete_managed: done" \
  "$(doc "$(prog mismatch_delete_managed)" '"status":"exited","exit_code":0' "$del_array,$del" 2 0)"
case_ delete_one_missing refuse mismatch_delete_managed.cu 99 "mismatch_delete_managed: done" \
  "$(doc "$(prog mismatch_delete_managed)" '"status":"exited","exit_code":0' "$del" 1 0)"

invalid='{"kind":"invalid-free","call":"cudaFree","address":"0x7ffc00000000","stack":['"$(frame invalid_free_stack.cu "$(mark invalid_free_stack.cu planted)")"']}'
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

abort_leak='{"kind":"leak","alloc_call":"cudaMalloc","memory":"device","bytes":65536,"alloc_stack":['"$(frame leak_abort.cu "$(mark leak_abort.cu alloc)")"']}'
case_ abort_ok accept leak_abort.cu 134 "leak_abort: aborting with a device block live" \
  "$(doc "$(prog leak_abort)" '"status":"signaled","signal":6' "$abort_leak" 1 1 65536)"
# The crash-time report symbolizes its stacks in a child: a signaled leak shows its frame too.
case_ abort_no_stack refuse leak_abort.cu 134 "leak_abort: aborting with a device block live" \
  "$(doc "$(prog leak_abort)" '"status":"signaled","signal":6' "${abort_leak/\"alloc_stack\":\[*\]/\"alloc_stack\":[]}" 1 1 65536)"
case_ abort_as_exit refuse leak_abort.cu 99 "" \
  "$(doc "$(prog leak_abort)" '"status":"exited","exit_code":0' "$abort_leak" 1 1 65536)"

parent='{"kind":"leak","alloc_call":"cudaMallocHost","memory":"pinned","bytes":8192,"alloc_stack":['"$(frame fork_child.cu "$(mark fork_child.cu alloc)")"']}'
child='{"kind":"leak","alloc_call":"cudaMalloc","memory":"device","bytes":16384,"alloc_stack":['"$(frame fork_child.cu "$(mark fork_child.cu child_alloc)" child)"','"$(frame fork_child.cu "$(mark fork_child.cu child)")"']}'
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

# ---- Frames (at=, alloc_at=): a source of the stand-in's own, with an inline chain ----
cat >"$tmp/frames.cu" <<'EOF'
// expect: leak cudaMalloc device bytes=4096 at=fill@alloc>make@fill,main@make
// expect: mismatched-release cudaFree pinned bytes=64 at=main@release alloc_at=main@pinned
//
// Not compiled: the stand-in gpumem's reports are written below.
static inline void fill(void **p) { cudaMalloc(p, 4096); } // @alloc
static void *make(void) { void *p; fill(&p); return p; } // @fill
int main(void) { void *h; cudaMallocHost(&h, 64); make(); cudaFree(h); } // @make
void pinned(void **h) { cudaMallocHost(h, 64); } // @pinned
void release(void *h) { cudaFree(h); } // @release
EOF
f=$tmp/frames.cu
ff() { # function mark [inlined]
  printf '{"function":"%s","file":"/src/%s","line":%s,"module":"/build/check_%s_static"%s}' \
    "$1" "$(basename "$f")" "$(mark "$f" "$2")" "$(basename "${f%.*}")" "${3:+,\"inlined\":true}"
}
other='{"function":"operator delete(void*)","file":null,"line":0,"module":"/build/check_frames_static"}'
lk() { # the leak's alloc_stack frames
  printf '{"kind":"leak","alloc_call":"cudaMalloc","memory":"device","bytes":4096,"alloc_stack":[%s]}' "$1"
}
mm() { # the mismatch's stack frames, its alloc_stack frames
  printf '{"kind":"mismatched-release","call":"cudaFree","memory":"pinned","bytes":64,"alloc_call":"cudaMallocHost","stack":[%s],"alloc_stack":[%s]}' "$1" "$2"
}
mm_ok=$(mm "$(ff main release)" "$(ff main pinned)")
fcase() { # name accept|refuse leak-frames [mismatch-json]
  case_ "$1" "$2" "$f" 99 "frames: done" \
    "$(doc "$(prog frames)" '"status":"exited","exit_code":0' "$(lk "$3"),${4:-$mm_ok}" 2 1 4096)"
}
right="$(ff fill alloc 1),$(ff make fill),$(ff main make)"
fcase frames_right accept "$right"
fcase frames_cxx_name_and_clone accept \
  "$(ff 'fill(void**)' alloc 1),$(ff 'make() [clone .constprop.0]' fill),$(ff main make)"
fcase frames_other_file_first accept "$other,$right"
WHY="frame 2 should be make at frames.cu:6: the function is 'made'" fcase frames_wrong_function refuse "$(ff fill alloc 1),$(ff made fill),$(ff main make)"
WHY="frame 2 should be make at frames.cu:6: the line is 7" fcase frames_wrong_line refuse "$(ff fill alloc 1),$(ff make make),$(ff main make)"
WHY="frame 1 should be fill at frames.cu:5: the function is 'make'" fcase frames_missing_inline_frame refuse "$(ff make fill),$(ff main make)"
WHY="frame 1 should be fill at frames.cu:5: it is not marked inlined" fcase frames_inline_not_marked refuse "$(ff fill alloc),$(ff make fill),$(ff main make)"
WHY="frame 2 should be make at frames.cu:6: it is marked inlined" fcase frames_call_marked_inlined refuse "$(ff fill alloc 1),$(ff make fill 1),$(ff main make)"
WHY="frame 3 should be main at frames.cu:7: the stack ends before it" fcase frames_caller_missing refuse "$(ff fill alloc 1),$(ff make fill)"
WHY="none of the frames in frames.cu in alloc_stack" fcase frames_no_frame_in_file refuse "$other"
WHY="at: frame 1 should be main at frames.cu:9: the line is 8" fcase frames_release_wrong_line refuse "$right" "$(mm "$(ff main pinned)" "$(ff main pinned)")"
WHY="alloc_at: frame 1 should be main at frames.cu:8: the line is 9" fcase frames_alloc_wrong_line refuse "$right" "$(mm "$(ff main release)" "$(ff main release)")"
WHY="alloc_at: none of the frames in frames.cu in alloc_stack" fcase frames_alloc_stack_empty refuse "$right" "$(mm "$(ff main release)" "")"

# Symbols only (no debug information in the host code): no file, no line, no inlined frames.
sym() { # function
  printf '{"function":"%s","file":null,"line":0,"module":"/build/check_frames_static"}' "$1"
}
libc='{"function":"free","file":null,"line":0,"module":"/lib/libc.so.6"}'
sym_mm=$(mm "$(sym main)" "$(sym main)")
SYMBOLS_ONLY=1 fcase symbols_right accept "$(sym make),$(sym main)" "$sym_mm"
SYMBOLS_ONLY=1 fcase symbols_after_other_module accept "$libc,$(sym make),$(sym main)" "$sym_mm"
SYMBOLS_ONLY=1 fcase symbols_with_lines accept "$(ff make fill),$(ff main make)" "$sym_mm"
SYMBOLS_ONLY=1 WHY="frame 1 should be make at frames.cu:6: the function is 'fill'" fcase symbols_wrong_function refuse "$(sym fill),$(sym main)" "$sym_mm"
SYMBOLS_ONLY=1 WHY="frame 2 should be main at frames.cu:7: the stack ends before it" fcase symbols_caller_missing refuse "$(sym make)" "$sym_mm"
SYMBOLS_ONLY=1 WHY="frame 1 should be make at frames.cu:6: the line is 7" fcase symbols_present_line_wrong refuse "$(ff make make),$(ff main make)" "$sym_mm"
WHY="none of the frames in frames.cu in alloc_stack" fcase symbols_need_the_variable refuse "$(sym make),$(sym main)" "$sym_mm"

# An expect line must say where (at=); a mismatch with an allocation stack, alloc_at= too.
cat >"$tmp/no_at.cu" <<'EOF'
// expect: leak cudaMalloc device bytes=4096
int main(void) { void *p; cudaMalloc(&p, 4096); } // @alloc
EOF
f=$tmp/no_at.cu
WHY="expect line without at=" case_ expect_without_at refuse "$f" 99 "no_at: done" \
  "$(doc "$(prog no_at)" '"status":"exited","exit_code":0' "$(lk "$(ff main alloc)")" 1 1 4096)"
cat >"$tmp/no_alloc_at.cu" <<'EOF'
// expect: mismatched-release cudaFree pinned bytes=64 at=main@release
void pinned(void **h) { cudaMallocHost(h, 64); } // @pinned
int main(void) { void *h; pinned(&h); cudaFree(h); } // @release
EOF
f=$tmp/no_alloc_at.cu
WHY="its expect line no alloc_at=" case_ mismatch_without_alloc_at refuse "$f" 99 "no_alloc_at: done" \
  "$(doc "$(prog no_alloc_at)" '"status":"exited","exit_code":0' \
    "$(mm "$(ff main release)" "$(ff pinned pinned),$(ff main release)")" 1 0)"
case_ mismatch_without_alloc_stack accept "$f" 99 "no_alloc_at: done" \
  "$(doc "$(prog no_alloc_at)" '"status":"exited","exit_code":0' \
    "$(mm "$(ff main release)" "")" 1 0)"

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
