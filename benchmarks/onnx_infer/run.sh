#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds gpass_bench_onnx_infer directly with g++ (no CMake) and runs it.
#   benchmarks/onnx_infer/run.sh [nodes=100000] [reps=3]
# Environment: CXX (default g++), BUILD_DIR (default /tmp/gpass_bench_onnx_infer).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-/tmp/gpass_bench_onnx_infer}
cxx=${CXX:-g++}
flags="-std=c++20 -O3 -march=x86-64-v3 -DNDEBUG -DONNX_ML=1 -DONNX_NAMESPACE=onnx"
mkdir -p "$build"
exe="$build/gpass_bench_onnx_infer"
# rebuild when the source or any gpass header is newer than the executable
if [ ! -x "$exe" ] || [ -n "$(find "$here/bench_onnx_infer.cpp" "$root/include" -newer "$exe" -print -quit)" ]; then
  echo "building $exe ($cxx $flags)" >&2
  $cxx $flags -I"$root/include" -I/usr/include/eigen3 "$here/bench_onnx_infer.cpp" -o "$exe" \
    -lonnx -lonnx_proto -lprotobuf -lpthread
fi
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) CPUs; flags: $flags"
exec "$exe" "$@"
