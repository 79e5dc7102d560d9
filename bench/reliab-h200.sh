#!/usr/bin/env bash
# The Python hooks on a GPU with real PyTorch (and CuPy where installed) once a subinterpreter
# exists: CPython then answers PyGILState_Check() with 1 on every thread, and a hook that
# trusted it read Python frames from PyTorch's allocations, made with the GIL released (a
# crash). Each case runs in a process of its own, with the hooks of this tree and, when git
# can show it, with the hooks of the commit before the fix (BASE), which should crash.
# Then the frameworks' gpu tests (python_*_gpu). From the repository root:
#   bench/reliab-h200.sh [OUT_DIR]      (default $OUT, else ./reliab-results)
# Builds only libgpumem_python (Release, no lint) in build-reliab/; about a minute on 16 cores.
# Writes summary.md (the table, printed last), cases.txt, ctest.txt and build.txt to OUT_DIR.
set -u
OUT=${1:-${OUT:-reliab-results}}
B=build-reliab
BASE=${BASE:-ee944f4}
mkdir -p "$OUT"
deps=$PWD/.dev/deps
[ -d "$deps" ] && export PKG_CONFIG_PATH=$deps/lib/pkgconfig LD_LIBRARY_PATH=$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
start=$(date +%s)
{ timeout 100 cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DGPUMEM_BUILD_LINT=OFF \
    ${deps:+-DCMAKE_PREFIX_PATH=$deps} &&
  timeout 150 cmake --build "$B" -j"$(nproc)" --target gpumem_python; } > "$OUT/build.txt" 2>&1
built=$?
lib=$(find "$B" -name 'libgpumem_python.so' | head -1)
# The hooks before the fix, built against this tree's libgpumem (the API they use is the same).
old_lib=
if [ -n "$lib" ] && git show "$BASE:python/hooks.c" > "$B/old_hooks.c" 2>/dev/null; then
  mkdir -p "$B/old/gpumem"
  git archive "$BASE" python/gpumem | tar -x -C "$B/old" --strip-components=1 2>/dev/null
  cuda_bin=$(sed -n 's/^CUDAToolkit_BIN_DIR:PATH=//p' "$B/CMakeCache.txt")
  gpumem_dir=$PWD/$(dirname "$(find "$B" -name 'libgpumem.so' | head -1)")
  if cc -shared -fPIC -O2 -std=gnu11 -Iinclude -Ipython -I"${cuda_bin%/bin}/include" \
       "$B/old_hooks.c" -L"$gpumem_dir" -Wl,-rpath,"$gpumem_dir" -lgpumem -ldl -lpthread \
       -o "$B/old/libgpumem_python.so" >> "$OUT/build.txt" 2>&1; then
    old_lib=$PWD/$B/old/libgpumem_python.so
  fi
fi

cat > "$B/cases.py" <<'PY'
import sys, threading, time
try:
    import _interpreters as interpreters
except ImportError:
    import _xxsubinterpreters as interpreters
import torch
import gpumem
gpumem.torch.use()
case = sys.argv[1]
interpreters.create()                      # from here PyGILState_Check() is 1 everywhere
before = gpumem.stats()["count"]["device"]["total"]
if case == "alloc":                        # PyTorch's allocations, GIL released
    x = torch.empty(1 << 20, device="cuda")
    y = torch.ones(1 << 22, device="cuda") * 2
    torch.cuda.synchronize()
    del x, y
elif case == "thread":                     # a worker allocates while the main thread holds the GIL
    done = []
    def work():
        done.append(torch.zeros(1 << 20, device="cuda").sum().item())
    t = threading.Thread(target=work)
    t.start()
    end = time.monotonic() + 20
    while not done and time.monotonic() < end:
        pass
    t.join()
elif case == "forms":                      # the device forms PyTorch takes
    x = torch.empty(1 << 20, device="cuda")
    for d in (None, 0, "cuda", "cuda:0", torch.device("cuda:0"), torch.device("cuda")):
        assert gpumem.torch.memory_stats(d)["allocation.all.current"] >= 1, d
    p = gpumem.alloc(4096, device=torch.device("cuda:0"), stream=torch.cuda.current_stream())
    gpumem.free(p, stream=torch.cuda.current_stream())
made = gpumem.stats()["count"]["device"]["total"] - before
print(f"ok {case}: {made} gpumem allocations")
PY
run_case() { # run_case LIB PKG CASE -> "ok ..." or the way it ended
  local log=$B/case.txt
  GPUMEM_LIBRARY=$1 PYTHONPATH=$2 GPUMEM_BACKEND=cuda timeout 60 python3 "$B/cases.py" "$3" \
    > "$log" 2>&1
  rc=$?
  { echo "== $4 $3: exit $rc"; cat "$log"; } >> "$OUT/cases.txt"
  if [ "$rc" -eq 0 ]; then tail -1 "$log"
  elif [ "$rc" -gt 128 ]; then echo "died of signal $((rc - 128))"
  else echo "exit $rc: $(tail -1 "$log")"; fi
}
rows=
for c in alloc thread forms; do
  new=$( [ -n "$lib" ] && run_case "$PWD/$lib" "$PWD/python" "$c" new || echo "not built")
  old=$( [ -n "$old_lib" ] && run_case "$old_lib" "$PWD/$B/old" "$c" old || echo "not built")
  rows="$rows| $c | $new | $old |"$'\n'
done
(cd "$B" && timeout 120 ctest -R 'python_(torch|cupy|numba)_gpu' --output-on-failure) \
  > "$OUT/ctest.txt" 2>&1
ctest_rc=$?
{
  echo "# Python hooks with a subinterpreter, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  echo "- date $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?), build exit $built, $(python3 --version 2>&1), torch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)"
  echo "- frameworks' gpu tests (python_*_gpu): exit $ctest_rc; $(grep -E 'tests passed|tests failed' "$OUT/ctest.txt" | tail -1)"
  echo "- $(($(date +%s) - start)) s in all"
  echo
  echo "| case | this tree | before the fix ($BASE) |"
  echo "| --- | --- | --- |"
  printf '%s' "$rows"
} | tee "$OUT/summary.md"
