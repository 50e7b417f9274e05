# SPDX-License-Identifier: Apache-2.0
# Sourced by the mpirun test scripts: a temporary folder ($tmp, removed at exit), `check NAME
# COMMAND...` (counts passes and fails, prints the failures), `summary` (prints the counts,
# fails when one check did), and `root` (mpirun's --allow-run-as-root when run as root).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 passes=0
check() {
  local name=$1; shift
  if "$@"; then passes=$((passes + 1)); else echo "FAIL: $name"; fails=$((fails + 1)); fi
}
summary() {
  echo "$passes passed, $fails failed"
  test "$fails" -eq 0
}
# Under the sanitizer presets: Open MPI's own allocations at MPI_Init are not freed at
# MPI_Finalize (in its plugins, which it unloads, so LeakSanitizer cannot even name them):
# leak checking off for these runs only; ASan's and UBSan's other checks stay on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
root=()
if [[ "$(id -u)" -eq 0 ]]; then root=(--allow-run-as-root); fi
