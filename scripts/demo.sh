#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Demo: builds the gpass-opt driver and runs a compile-time-checked pass pipeline on its
# bundled example graph (an MLP block with a dead branch and a disconnected constant),
# printing the IR after each pass and the timing/statistics report; then the optimizer (-O3)
# on a small Conv + BatchNormalization graph, with its before/after op table and --check.
#
#   scripts/demo.sh                      the default demo
#   scripts/demo.sh --passes=dce x.gir   any gpass-opt arguments instead
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/deps.sh

export CMAKE_BUILD_PARALLEL_LEVEL="${GPASS_JOBS:-2}"
cmake --preset ci >/dev/null
cmake --build --preset ci --target gpass-opt

exe=build/ci/examples/gpass-opt/gpass-opt
if [[ $# -ne 0 ]]; then
  echo "\$ gpass-opt $*"
  exec "$exe" "$@"
fi
echo "\$ gpass-opt --passes=delete-disconnected,dce --timing --print-ir-after-all"
"$exe" --passes=delete-disconnected,dce --timing --print-ir-after-all
# the optimizer: a Conv + BatchNormalization + shape computation, at -O3, checked against
# the input graph on random inputs
echo
echo "\$ gpass-opt -O3 --summary --check=3 tests/data/tools/optimize.gir"
exec "$exe" -O3 --summary --check=3 tests/data/tools/optimize.gir
