#!/usr/bin/env bash
# Installs outbound into a scratch prefix and builds a tiny outside project
# against it with find_package(outbound CONFIG).
set -euo pipefail
src=$1 work=$2 cmake=$3 cxx=$4
rm -rf "$work"
mkdir -p "$work"
"$cmake" -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DOUTBOUND_BUILD_TESTS=OFF -DOUTBOUND_BUILD_BENCH=OFF -DOUTBOUND_INSTALL=ON \
  -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
"$cmake" --build "$work/build" >/dev/null
"$cmake" --install "$work/build" >/dev/null
"$cmake" -S "$src/tests/consumer/project" -B "$work/consumer" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
"$cmake" --build "$work/consumer" >/dev/null
"$work/consumer/consumer"
