#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Optimizer benchmark: gpass-opt against ONNX Runtime, onnxsim and onnxoptimizer.
#
#   benchmarks/optimizer/run.sh [BUILD_DIR] [compare.py options...]
#
# BUILD_DIR (default build/bench) receives models/ (made by make_models.py; models already
# there are kept), models/optimized/ (every optimizer's output), optimizer-results.json and
# optimizer-results.txt (the printed tables).
#
# Environment:
#   GPASS_OPT  gpass-opt to measure (default BUILD_DIR/../ci/examples/gpass-opt/gpass-opt)
#   OPTVENV    Python venv to use or create (default /tmp/optvenv); packages from
#              requirements.txt are installed into it when one of them is missing
#   PYTHON     interpreter that creates the venv (default python3)
#
# Options after BUILD_DIR go to compare.py, e.g.
#   run.sh build/bench --gpass-latency-cmd '{gpass_opt} -O3 {model} --run --repeat=50 --threads={threads}'
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

build="$repo/build/bench"
if [[ $# -gt 0 && "$1" != -* ]]; then
  build="$1"
  shift
fi
mkdir -p "$build"
build="$(cd "$build" && pwd)"
gpass_opt="${GPASS_OPT:-$build/../ci/examples/gpass-opt/gpass-opt}"

source "$here/venv.sh"
bench_header "$repo"
echo "build:   $build"
echo "gpass-opt: $gpass_opt"
[[ -x "$gpass_opt" ]] || echo "warning: $gpass_opt is not an executable; its columns will be failures"

echo
echo "== models ($build/models)"
start=$SECONDS
"$py" "$here/make_models.py" "$build/models" 2> >(grep -v -E '^(I|W|E)0000 |^WARNING: All log messages|^  warnings.warn' >&2)
echo "models ready in $((SECONDS - start)) s"

echo
echo "== compare"
start=$SECONDS
"$py" "$here/compare.py" "$build/models" --gpass-opt "$gpass_opt" --out "$build/optimizer-results.json" "$@" |
  tee "$build/optimizer-results.txt"
echo "compare took $((SECONDS - start)) s"
