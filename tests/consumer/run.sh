#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How a user gets outbound into their build, each way tested:
#  1. cmake --install of shared libraries into a scratch prefix (SONAME
#     checked), then an outside project with find_package(outbound 0.2
#     CONFIG COMPONENTS http testing), building the checkout example and its
#     tests with the kit as a user's project would, a gRPC client with the
#     rpc component and a stub of its own, and a plain compiler command
#     with pkg-config;
#  2. an install of static libraries (the default), from the build that
#     runs this test (it built them already): the HTTP and gRPC consumers
#     through find_package, the HTTP one through pkg-config, the libraries'
#     own dependencies handed on by both;
#  3. add_subdirectory of the source tree, which builds only the libraries.
set -euo pipefail
src=$1 work=$2 cmake=$3 cxx=$4 built=$5
# The two builds of the libraries here are unoptimised (no CMAKE_BUILD_TYPE)
# and unity builds (CMAKE_UNITY_BUILD: a target's sources compiled eight at
# a time as one file, so their headers are parsed once per batch): this test
# proves how a project finds and links outbound, not how fast it runs, and
# it compiles the libraries twice more. The unity build halves that (the
# shared libraries: 213 s of CPU to 100 s), and keeps each library's
# file-local names unique, as a user's own unity build needs. The static
# libraries are the ones the build running this test made (`built`), so
# they are installed, not compiled a third time.
rm -rf "$work"
mkdir -p "$work"
version=$(sed -n 's/^project(outbound VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
major_minor=${version%.*}
echo "== outbound $version"

echo "== install (shared libraries)"
"$cmake" -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE= -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_UNITY_BUILD=ON \
  -DBUILD_SHARED_LIBS=ON -DOUTBOUND_BUILD_TESTS=OFF -DOUTBOUND_BUILD_BENCH=OFF \
  -DOUTBOUND_BUILD_TOOLS=OFF -DOUTBOUND_BUILD_EXAMPLES=OFF -DOUTBOUND_INSTALL=ON \
  -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
"$cmake" --build "$work/build" >/dev/null
"$cmake" --install "$work/build" >/dev/null
libdir=$(dirname "$(find "$work/prefix" -name 'liboutbound_http.so' | head -1)")
for part in core http config testing rpc; do
  soname=$(readelf -d "$libdir/liboutbound_$part.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
  if [ "$soname" != "liboutbound_$part.so.$major_minor" ]; then
    echo "liboutbound_$part.so: SONAME '$soname', expected liboutbound_$part.so.$major_minor"
    exit 1
  fi
  test -f "$libdir/pkgconfig/outbound-$part.pc"
done
test -f "$work/prefix/include/outbound/version.h"
test -f "$work/prefix/share/doc/outbound/LICENSE"

echo "== find_package"
"$cmake" -S "$src/tests/consumer/project" -B "$work/consumer" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DOUTBOUND_ASK="$major_minor" \
  -DOUTBOUND_EXAMPLES_DIR="$src/examples" -DOUTBOUND_RPC_PROTO="$src/tests/rpc/echo.proto" \
  >/dev/null
"$cmake" --build "$work/consumer" >/dev/null
"$work/consumer/consumer"
"$work/consumer/http_consumer"
"$work/consumer/rpc_consumer"
echo "== the checkout example and its tests, built against the installed tree"
"$work/consumer/checkout_walk" --gtest_brief=1
# While the major version is 0, another minor version is not this one.
major=${version%%.*} minor=${major_minor#*.}
for other in "$major.$((minor - 1))" "$major.$((minor + 1))"; do
  if "$cmake" -S "$src/tests/consumer/project" -B "$work/consumer-$other" -G Ninja \
       -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix" \
       -DOUTBOUND_ASK="$other" >/dev/null 2>&1; then
    echo "find_package(outbound $other) accepted $version"
    exit 1
  fi
done

echo "== pkg-config"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
test "$(pkg-config --modversion outbound-http)" = "$version"
test "$(pkg-config --modversion outbound-rpc)" = "$version"
pkg-config --exists --print-errors outbound-rpc
# The gRPC client is the library's own HTTP/2: no grpc++ to link.
if pkg-config --libs outbound-rpc | grep -q grpc; then
  echo "pkg-config --libs outbound-rpc names grpc++: $(pkg-config --libs outbound-rpc)"
  exit 1
fi
# shellcheck disable=SC2046
"$cxx" -std=c++20 "$src/tests/consumer/project/http_main.cc" -o "$work/pc_consumer" \
  $(pkg-config --cflags --libs outbound-http)
LD_LIBRARY_PATH="$libdir" "$work/pc_consumer"

# The default install: static libraries, whose private dependencies (OpenSSL,
# nghttp2, zlib) the package config and the
# pkg-config files must hand to the consumer.
echo "== install (static libraries, from $built)"
"$cmake" --install "$built" --prefix "$work/prefix-static" >/dev/null
static_lib=$(find "$work/prefix-static" -name 'liboutbound_http.a' | head -1)
if [ -z "$static_lib" ]; then
  echo "$built installed no liboutbound_http.a: this test wants the static libraries (BUILD_SHARED_LIBS off)"
  exit 1
fi
static_libdir=$(dirname "$static_lib")
"$cmake" -S "$src/tests/consumer/project" -B "$work/consumer-static" -G Ninja \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/prefix-static" \
  -DOUTBOUND_ASK="$major_minor" -DOUTBOUND_RPC_PROTO="$src/tests/rpc/echo.proto" >/dev/null
"$cmake" --build "$work/consumer-static" --target http_consumer rpc_consumer >/dev/null
"$work/consumer-static/http_consumer"
"$work/consumer-static/rpc_consumer"
# Plain --libs, not --static: that would ask for the system libraries' own
# static dependencies, which Debian's -dev packages do not all install.
# The HTTP client links OpenSSL, nghttp2 and zlib, and nothing else.
static_http_libs=$(PKG_CONFIG_PATH="$static_libdir/pkgconfig" pkg-config --libs outbound-http)
for lib in -lssl -lnghttp2 -lz; do
  case " $static_http_libs " in
    *" $lib "*) ;;
    *) echo "pkg-config --libs outbound-http lacks $lib: $static_http_libs" >&2; exit 1 ;;
  esac
done
case "$static_http_libs" in
  *curl*) echo "pkg-config --libs outbound-http names libcurl: $static_http_libs" >&2; exit 1 ;;
esac
# shellcheck disable=SC2046
"$cxx" -std=c++20 "$src/tests/consumer/project/http_main.cc" -o "$work/pc_consumer_static" \
  $(PKG_CONFIG_PATH="$static_libdir/pkgconfig" pkg-config --cflags --libs outbound-http)
"$work/pc_consumer_static"

echo "== add_subdirectory"
"$cmake" -S "$src/tests/consumer/subdirectory" -B "$work/subdirectory" -G Ninja \
  -DCMAKE_BUILD_TYPE= -DCMAKE_UNITY_BUILD=ON -DCMAKE_CXX_COMPILER="$cxx" \
  -DOUTBOUND_SOURCE_DIR="$src" >/dev/null
"$cmake" --build "$work/subdirectory" --target http_consumer >/dev/null
"$work/subdirectory/http_consumer"
