#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds gpass and runs every test: `cmake --workflow --preset ci` (configure build/ci,
# build with 2 jobs, ctest). Exits non-zero when anything fails.
#
#   scripts/test.sh                 dependencies, configure, build, test
#   GPASS_JOBS=4 scripts/test.sh    more parallel build jobs (default 2)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/deps.sh

export CMAKE_BUILD_PARALLEL_LEVEL="${GPASS_JOBS:-2}"
export CTEST_OUTPUT_ON_FAILURE=1

log="build/ci-test.log"
mkdir -p build
start=$(date +%s)
set +e
cmake --workflow --preset ci 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
end=$(date +%s)

echo
echo "==== gpass test summary ($((end - start)) s) ===="
if grep -qE '^[0-9]+% tests passed' "$log"; then
  grep -E '^[0-9]+% tests passed|^Total Test time|^The following tests (FAILED|did not run)|^[[:space:]]+[0-9]+ - ' "$log" || true
else
  echo "no test summary: the configure or build step failed (see $log)"
fi
if [[ $rc -ne 0 ]]; then
  echo "FAILED (exit $rc)"
else
  echo "OK"
fi
exit "$rc"
