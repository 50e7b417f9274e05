#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs gpass's CPU executor on the backend node tests of the newest onnx release on PyPI.
#
#   scripts/onnx_current_conformance.sh [BUILD_DIR]
#
# Makes a venv with onnx (needs PyPI), writes the node test data from onnx's own generators
# (scripts/gen_onnx_node_data.py; ~60 MB under $GPASS_ONNX_DATA, default
# /tmp/gpass-onnx-current), builds gpass_conformance in BUILD_DIR (default build/ci) and runs
# it with tests/conformance/expected_pass_onnx_current.txt: the exit status is 1 when a listed
# test does not pass, and tests that pass without being listed are printed. CI runs Debian's
# onnx 1.12 suite instead (tests/conformance/expected_pass.txt); this script is the check for
# the current release (ONNX_VERSION picks another one, e.g. ONNX_VERSION=1.23.2). The tests
# listed in tests/conformance/reference_precision_onnx_current.txt fail the runner's
# comparison because the stored values are the less precise ones; for them
# scripts/onnx_reference_precision.py checks that gpass is at least as near the exact result.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$here/build/ci}"
data="${GPASS_ONNX_DATA:-/tmp/gpass-onnx-current}"
venv="${GPASS_ONNX_VENV:-/tmp/gpass-onnx-venv}"
spec="onnx${ONNX_VERSION:+==$ONNX_VERSION}"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q "$spec" numpy ml_dtypes
"$venv/bin/python" "$here/scripts/gen_onnx_node_data.py" "$data"

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake --preset ci -S "$here" -B "$build"
fi
cmake --build "$build" --target gpass_conformance gpass-opt -j"$(nproc)"
"$build/tests/gpass_conformance" "$data" --suite=node --quiet \
  --expected="$here/tests/conformance/expected_pass_onnx_current.txt"

# The tests whose stored values are less precise than gpass's: gpass must be at least as
# near the exact (double) result as the reference is.
mapfile -t imprecise < <(grep -v -e '^#' -e '^$' "$here/tests/conformance/reference_precision_onnx_current.txt")
"$venv/bin/python" "$here/scripts/onnx_reference_precision.py" \
  "$build/examples/gpass-opt/gpass-opt" "${imprecise[@]/#/$data/node/}"
