#!/usr/bin/env bash
# Installs gpumem from a build folder into a scratch prefix (a non-system one, as a user's
# ~/.local is), then uses it as a user would:
#  - find_package(gpumem): the shared and static libraries, gpumem::gpumem_cli, and
#    gpumem_add_check_test registered with the right command line (it runs on a GPU only:
#    without one gpumem check exits 77 and CTest counts the test as skipped);
#  - pkg-config, shared (the README's command, with -Wl,-rpath) and --static;
#  - the installed `gpumem` finds its libgpumem_check.so, man pages and completion are there;
#  - the Python package imports from where it was installed and finds its library.
# usage: run.sh BUILD_DIR SOURCE_DIR CUDA_TOOLKIT_ROOT FAKE_LIBCUDA
set -euo pipefail
build=$1 src=$2 cuda=$3 fake_libcuda=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/gpumem.h"
ls "$prefix"/lib*/libgpumem.so "$prefix"/lib*/libgpumem.a >/dev/null
test -x "$prefix/bin/gpumem"
ls "$prefix"/lib*/gpumem/libgpumem_check.so >/dev/null
test -f "$prefix/share/bash-completion/completions/gpumem"
test -f "$prefix/share/zsh/site-functions/_gpumem"
test -f "$prefix/share/doc/gpumem/README.md" && test -f "$prefix/share/doc/gpumem/docs/check.md"
# Every relative link and image of the installed docs leads to an installed file.
python3 - "$prefix/share/doc/gpumem" <<'PYTHON'
import os, re, sys
root, broken, seen = sys.argv[1], [], 0
for folder, _, files in os.walk(root):
    for name in files:
        if not name.endswith(".md"):
            continue
        page = os.path.join(folder, name)
        text = re.sub(r"```.*?```", "", open(page, encoding="utf-8").read(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            seen += 1
            path = os.path.normpath(os.path.join(folder, target.split("#")[0]))
            if not os.path.exists(path):
                broken.append(f"{os.path.relpath(page, root)}: {target}")
if broken or seen < 50:
    sys.exit(f"installed docs: {len(broken)} of {seen} links broken:\n" + "\n".join(broken))
print(f"installed docs: {seen} links and images, all there")
PYTHON
if [ -n "${INSTALL_TEST_EXPECT_MAN:-}" ]; then
  for page in gpumem gpumem-check gpumem-bench gpumem-info; do test -s "$prefix/share/man/man1/$page.1"; done
  MANPATH=$prefix/share/man man -w gpumem-check >/dev/null
fi

# The installed gpumem finds the check library in its own prefix (the driver is a stand-in,
# so that gpumem check runs a program here: `true` uses no CUDA).
out=$(GPUMEM_LIBCUDA=$fake_libcuda "$prefix/bin/gpumem" check -- true 2>&1)
[[ $out == *"true used no CUDA"* ]] || { echo "installed gpumem check: $out"; exit 1; }

# The Python package: Python finds it in PREFIX/lib/pythonX.Y/site-packages (on PYTHONPATH, as
# docs/python.md says for a prefix other than ~/.local), and it finds libgpumem_python.so in
# the prefix by itself (no GPUMEM_LIBRARY), which finds libgpumem.so beside it.
if command -v python3 >/dev/null; then
  pydir=$(ls -d "$prefix"/lib/python3*/site-packages)
  out=$(cd "$work" && env -u GPUMEM_LIBRARY -u LD_LIBRARY_PATH GPUMEM_BACKEND=sim PYTHONPATH="$pydir" \
    python3 -c 'import gpumem; p = gpumem.alloc(1000); print(gpumem.library_path(), gpumem.stats()["bytes"]["device"]["current"]); gpumem.free(p)')
  want="$(ls "$prefix"/lib*/libgpumem_python.so) 1000"
  [[ $out == "$want" ]] || { echo "installed Python package: '$out', want '$want'"; exit 1; }
fi

cmake -S "$src/tests/install/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCUDAToolkit_ROOT="$cuda" >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/consumer_shared"
"$work/cmake/consumer_static"
# The check test's command line, as CTest will run it.
listing=$(cd "$work/cmake" && ctest -N -V)
want="$prefix/bin/gpumem \"check\" \"--error-exitcode=99\" \"--\" \"$work/cmake/consumer_shared\""
[[ $listing == *"$want"* ]] || { echo "consumer_checked is not registered as $want:"; echo "$listing"; exit 1; }
want="$prefix/bin/gpumem \"check\" \"--error-exitcode=42\" \"--leak-check=summary\" \"--\" \"$work/cmake/consumer_shared\" \"leak\""
[[ $listing == *"$want"* ]] || { echo "consumer_leak_found is not registered as $want:"; echo "$listing"; exit 1; }
# Run them: on a GPU both pass; without one the check tests are skipped, not passed.
# (Without the test's GPUMEM_BACKEND=sim: under gpumem check the program must use the GPU.)
results=$(cd "$work/cmake" && env -u GPUMEM_BACKEND -u GPUMEM_SIM_DEVICE_BYTES ctest --output-on-failure 2>&1) || { echo "$results"; exit 1; }
echo "$results" | grep -E "consumer_(cli|checked|leak)"
if ! ldconfig -p | grep -q 'libcuda\.so\.1 '; then
  echo "$results" | grep -q "consumer_checked .*Skipped" || { echo "no GPU, yet consumer_checked was not skipped"; exit 1; }
fi

# docs/ci.md's CTest recipe, as the page shows it: it builds, lists its tests with the command
# lines its comments give, and runs them (the check tests are skipped without a GPU).
recipes=$work/recipes
python3 "$src/tests/ci/ci_recipes.py" extract "$src/docs/ci.md" "$recipes"
cmake -S "$recipes" -B "$recipes/build" -DCMAKE_PREFIX_PATH="$prefix" -DCUDAToolkit_ROOT="$cuda" >/dev/null
cmake --build "$recipes/build" >/dev/null
listing=$(cd "$recipes/build" && ctest -N -V)
for want in "$prefix/bin/gpumem \"check\" \"--error-exitcode=99\" \"--\" \"$recipes/build/app\" \"--small\"" \
            "$prefix/bin/gpumem \"check\" \"--error-exitcode=42\" \"-q\" \"--leak-check=summary\" \"--\" \"$recipes/build/app\" \"--small\"" \
            "$prefix/bin/gpumem \"--version\""; do
  [[ $listing == *"$want"* ]] || { echo "docs/ci.md's recipe: no test runs $want:"; echo "$listing"; exit 1; }
done
(cd "$recipes/build" && env -u GPUMEM_BACKEND -u GPUMEM_SIM_DEVICE_BYTES ctest --output-on-failure >/dev/null) || { echo "docs/ci.md's recipe: ctest failed"; exit 1; }

pc_dir=$(dirname "$(ls "$prefix"/lib*/pkgconfig/gpumem.pc)")
export PKG_CONFIG_PATH=$pc_dir
# The README's command for a prefix outside the loader's path.
cc -std=c11 "$src/tests/install/consumer/main.c" $(pkg-config --cflags --libs gpumem) \
  -Wl,-rpath,"$(pkg-config --variable=libdir gpumem)" -o "$work/consumer_pc"
"$work/consumer_pc"
# Statically: Libs.private names what libgpumem.a needs (jansson, libdw, libunwind...).
cc -std=c11 "$src/tests/install/consumer/main.c" $(pkg-config --cflags gpumem) \
  "$(pkg-config --variable=libdir gpumem)/libgpumem.a" $(pkg-config --libs-only-other --libs-only-l --static gpumem | sed 's/-lgpumem//') \
  -o "$work/consumer_pc_static"
"$work/consumer_pc_static"
echo "install test: ok"
