#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpass's CPU executor against ONNX Runtime on MobileNetV2, ResNet50, a BERT-like encoder and a
# 2-layer LSTM (issue 15): latency at 1 and 2 threads, batch 1 and 8, and peak RSS.
#
#   benchmarks/executor/real_models.sh [BUILD_DIR] [real_models.py options...]
#
# BUILD_DIR (default build/bench) receives models/ (benchmarks/optimizer/make_models.py:
# tf_keras + tf2onnx, opset 17, random weights; models already there are kept),
# real-models.json and real-models.txt. Options go to real_models.py, e.g.
#   real_models.sh build/bench --models bert_encoder --batches 1 --rounds 5
#
# Environment:
#   GPASS_OPT  gpass-opt to measure (default: BUILD_DIR/examples/gpass-opt/gpass-opt, built
#              there with the `bench` preset, -O3 -march=x86-64-v3, when missing)
#   OPTVENV    Python venv (default /tmp/optvenv; see benchmarks/optimizer/venv.sh)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
case "${1:-}" in
  "" | -*) build="$repo/build/bench" ;;
  *) build="$1"; shift ;;
esac
mkdir -p "$build" && build="$(cd "$build" && pwd)"
gpass_opt="${GPASS_OPT:-$build/examples/gpass-opt/gpass-opt}"
if [[ -z "${GPASS_OPT:-}" && ! -x "$gpass_opt" ]]; then
  echo "== building gpass-opt in $build (preset bench)"
  cmake --preset bench -B "$build" >/dev/null
  cmake --build "$build" --target gpass-opt -j"${JOBS:-2}"
fi
source "$repo/benchmarks/optimizer/venv.sh"
bench_header "$repo"
echo "gpass-opt: $gpass_opt"
"$py" "$repo/benchmarks/optimizer/make_models.py" "$build/models" 2> >(grep -v -E '^(I|W|E)0000 |^WARNING: All log messages|^  warnings.warn' >&2)
"$py" "$here/real_models.py" "$build/models" --gpass-opt "$gpass_opt" --out "$build/real-models.json" "$@" |
  tee "$build/real-models.txt"
