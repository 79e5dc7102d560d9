#!/usr/bin/env bash
# Installs gpumem from a build folder into a scratch prefix, then builds a consumer program
# against it both ways: find_package(gpumem) (shared and static) and pkg-config.
# usage: run.sh BUILD_DIR SOURCE_DIR CUDA_TOOLKIT_ROOT
set -euo pipefail
build=$1 src=$2 cuda=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/gpumem.h"
ls "$work"/prefix/lib*/libgpumem.so "$work"/prefix/lib*/libgpumem.a >/dev/null

cmake -S "$src/tests/install/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCUDAToolkit_ROOT="$cuda" >/dev/null
cmake --build "$work/cmake" >/dev/null
"$work/cmake/consumer_shared"
"$work/cmake/consumer_static"

pc_dir=$(dirname "$(ls "$work"/prefix/lib*/pkgconfig/gpumem.pc)")
export PKG_CONFIG_PATH=$pc_dir
cc -std=c11 "$src/tests/install/consumer/main.c" $(pkg-config --cflags --libs gpumem) \
  -Wl,-rpath,"$(pkg-config --variable=libdir gpumem)" -o "$work/consumer_pc"
"$work/consumer_pc"
echo "install test: ok"
