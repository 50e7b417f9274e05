#!/usr/bin/env bash
# Demo: builds the gpass-opt driver and runs a compile-time-checked pass pipeline on its
# bundled example graph (an MLP block with a dead branch and a disconnected constant),
# printing the IR after each pass and the timing/statistics report.
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
if [[ $# -eq 0 ]]; then
  set -- --passes=delete-disconnected,dce --timing --print-ir-after-all
fi
echo "\$ gpass-opt $*"
exec "$exe" "$@"
