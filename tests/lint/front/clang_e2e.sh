#!/bin/sh
# End-to-end: `gpumem lint` with the real clang 22 and a small test plugin (test_plugin.cpp)
# on tests/lint/front/clang/: a CUDA unit with a finding, its path and its allocation note;
# a C unit whose finding is suppressed; a C++ unit that does not compile (exit status 3, its
# first error named); host code nvcc compiles and clang's CUDA mode alone does not (nvcc/:
# host min/max, isfinite, clock, __stcs, a program's own min, omp.h, a launch from a kernel, a
# kernel calling a function declared for the host and defined for the device, a C++98 string
# literal with a macro right after it ("%"PRIu64), a .c file that is CUDA), each analyzed.
# Usage: clang_e2e.sh GPUMEM_LINT CLANG PLUGIN SOURCE_DIR
set -u
lint=$1 clang=$2 plugin=$3 src=$4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cd "$src" || exit 1
fail=0
check() { if ! grep -qF -- "$1" "$2"; then echo "FAIL: '$1' not in $2:"; head -c 2000 "$2"; fail=1; fi; }
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" --path=full -j2 . \
  >"$out/stdout" 2>"$out/stderr"
rc=$?
[ "$rc" -eq 3 ] || { echo "FAIL: exit status $rc, expected 3"; fail=1; }
check "leak.cu:13:9: warning: memory from gm_alloc is never released [GM001]" "$out/stdout"
check "leak.cu:8:15: note: allocated here with gm_alloc" "$out/stdout"
check "leak.cu:12:9: note: Assuming 'c' is not equal to 0" "$out/stdout"
check "broken.cpp: not analyzed: " "$out/stderr"
check "error: use of undeclared identifier 'undeclared_name'" "$out/stderr"
if grep -q "leak.c:" "$out/stdout"; then echo "FAIL: the suppressed finding was reported"; fail=1; fi
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" -j2 nvcc \
  >"$out/nvcc.out" 2>"$out/nvcc.err"
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: nvcc/: exit status $rc, expected 0"; cat "$out/nvcc.err"; fail=1; }
check "in 7 files" "$out/nvcc.out"
check "note: nvcc/launch_in_c.c: analyzed as CUDA, as nvcc -x cu compiles it: nvcc/launch_in_c.c:5 declares a __global__ function" "$out/nvcc.err"
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" --format=sarif leak.cu \
  >"$out/sarif" 2>"$out/stderr2"
rc=$?
[ "$rc" -eq 1 ] || { echo "FAIL: exit status $rc, expected 1"; cat "$out/stderr2"; fail=1; }
check '"relatedLocations"' "$out/sarif"
check '"codeFlows"' "$out/sarif"
check '"clang/issueHash/v1"' "$out/sarif"
check '"gpumemLintHash/v2"' "$out/sarif"
# The baseline hides it; the fingerprint holds when lines are added above.
cp leak.cu "$out/leak.cu"
cp -r include "$out/include"
cd "$out" || exit 1
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" --format=sarif -o base.sarif \
  leak.cu 2>/dev/null
{ printf '// one\n// two\n'; cat "$src/leak.cu"; } > leak.cu
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" --baseline=base.sarif leak.cu \
  >"$out/base.txt" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { echo "FAIL: with the baseline: exit status $rc"; cat "$out/base.txt"; fail=1; }
check "1 in the baseline not shown" "$out/base.txt"
# Statements nested 300 deep: the finding inside is still reported.
awk 'BEGIN { s = "void *gm_alloc(int n); void gm_leak(void);\nint deep(int x) {\n";
             for (i = 0; i < 300; i++) s = s "{"; s = s "\nvoid *p = gm_alloc(x);\ngm_leak();\n";
             for (i = 0; i < 300; i++) s = s "}"; print s "\nreturn x;\n}" }' > deep.c
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" deep.c >"$out/deep.txt" 2>&1
rc=$?
[ "$rc" -eq 1 ] || { echo "FAIL: deep nesting: exit status $rc, expected 1"; fail=1; }
check "deep.c:5:1: warning: memory from gm_alloc is never released [GM001]" "$out/deep.txt"
# Progress: on a terminal only.
if grep -q "\[1/" "$out/deep.txt"; then echo "FAIL: progress shown without a terminal"; fail=1; fi
if command -v script >/dev/null 2>&1; then
  script -qec "$lint --no-config --clang=$clang --analyzer-plugin=$plugin deep.c" /dev/null \
    > "$out/tty.txt" 2>&1
  check "[1/1] deep.c" "$out/tty.txt"
fi
# A file name that is not UTF-8 keeps its findings in JSON (jansson refuses such text; the
# name gets U+FFFD where its bytes are not UTF-8).
bad=$(printf 'l\351ak.cu')
cp leak.cu "$bad"
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" --format=json "$bad" \
  >"$out/bad.json" 2>"$out/bad.err"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if any(f["file"].endswith("l\ufffdak.cu") for f in d["findings"]) else 1)' "$out/bad.json" ||
  { echo "FAIL: the finding in a non-UTF-8 file name is missing from the JSON:"; head -c 1000 "$out/bad.json"; fail=1; }
rm -f "$bad"
# A file name holding a newline cannot make a warning line of its own in text output.
nl=$(printf 'x\nfake.cu:1:1: warning: injected [GM001]\ny.cu')
cp leak.cu "$nl"
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" "$nl" >"$out/nl.txt" 2>&1
if grep -q '^fake.cu:1:1: warning: injected' "$out/nl.txt"; then
  echo "FAIL: a file name's newline made a line of its own:"; cat "$out/nl.txt"; fail=1
fi
check 'x\nfake.cu:1:1: warning: injected [GM001]\ny.cu:' "$out/nl.txt"
rm -f "$nl"
# Stopped by a signal while clang runs: the clang processes go, and so does the temporary
# folder; lint dies of the signal (SIGINT from python3, whose children keep it unignored).
printf '#!/bin/sh\nexec sleep 37\n' > slowclang && chmod +x slowclang
mkdir -p tmpd
for sig in TERM INT HUP; do
  python3 - "$lint" "$plugin" "$sig" <<'PYTHON' || fail=1
import os, signal, subprocess, sys, time
lint, plugin, sig = sys.argv[1], sys.argv[2], getattr(signal, "SIG" + sys.argv[3])
env = dict(os.environ, TMPDIR=os.path.abspath("tmpd"))
p = subprocess.Popen([lint, "--no-config", "--clang=./slowclang", "--analyzer-plugin=" + plugin,
                      "-j2", "leak.cu", "deep.c"], env=env, stderr=subprocess.PIPE)
for _ in range(100):  # until both clang stand-ins run
    if subprocess.run(["pgrep", "-f", "sleep 37"], capture_output=True).stdout.count(b"\n") >= 2:
        break
    time.sleep(0.05)
p.send_signal(sig)
err = p.communicate(timeout=20)[1].decode(errors="replace")
left = subprocess.run(["pgrep", "-f", "sleep 37"], capture_output=True).stdout.split()
problems = []
if p.returncode != -sig:
    problems.append(f"status {p.returncode}, not killed by the signal")
if left:
    problems.append(f"{len(left)} clang processes left running")
    for pid in left:
        os.kill(int(pid), signal.SIGKILL)
if os.listdir("tmpd"):
    problems.append(f"temporary folder left: {os.listdir('tmpd')}")
if "stopped by signal" not in err:
    problems.append("no word of the stop on stderr")
for what in problems:
    print(f"FAIL: SIG{sys.argv[3]}: {what}")
sys.exit(1 if problems else 0)
PYTHON
done
# An output that is an input is refused before anything runs, and the input is left alone.
cp deep.c deep.keep
"$lint" --no-config --clang="$clang" --analyzer-plugin="$plugin" -o deep.c deep.c \
  >"$out/same.txt" 2>&1
rc=$?
[ "$rc" -eq 2 ] || { echo "FAIL: -o the input: exit status $rc, expected 2"; fail=1; }
check "error: -o deep.c is the input deep.c" "$out/same.txt"
cmp -s deep.c deep.keep || { echo "FAIL: -o the input overwrote it"; fail=1; }
[ "$fail" -eq 0 ] && echo "clang end-to-end: 1 passed, 0 failed"
exit "$fail"
