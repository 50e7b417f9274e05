#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The concurrency tests under ThreadSanitizer: the units built once with the `tsan` preset
# (Debug, -O1 -fsanitize=thread), then the test files that run plans and sessions from many
# threads (tests/exec/concurrent.cpp, tests/session/*.cpp: sessions, placement, data-parallel
# replicas and their collectives, the cluster transport) compiled with the same flags and
# run. Exit 1 on a failed test or any ThreadSanitizer report.
#
#   scripts/tsan.sh            (JOBS, default 1: the units take a few GB each to compile)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build/tsan"
cmake --preset tsan -S "$root" >/dev/null
cmake --build "$build" --target gpass_units -j "${JOBS:-1}"
flags=(-DGPASS_SEPARATE_COMPILATION "-DGPASS_TEST_DATA_DIR=\"$root/tests/data\"" -I "$root/include" -isystem /usr/include/eigen3
       -std=gnu++20 -O1 -g -fsanitize=thread -fno-omit-frame-pointer)
objs=()
for f in tests/exec/concurrent.cpp tests/session/session.cpp tests/session/placer.cpp tests/session/data_parallel.cpp \
         tests/session/cluster.cpp tests/main.cpp; do
  o="$build/tsan_$(echo "$f" | tr / _).o"
  g++ "${flags[@]}" -c "$root/$f" -o "$o"
  objs+=("$o")
done
g++ -fsanitize=thread "${objs[@]}" "$build/libgpass_units.a" -o "$build/tsan_tests" -lpthread
log="$build/tsan_tests.log"
TSAN_OPTIONS="halt_on_error=0" "$build/tsan_tests" "$@" 2>&1 | tee "$log" | tail -4
reports=$(grep -c "WARNING: ThreadSanitizer" "$log" || true)
echo "ThreadSanitizer reports: $reports"
grep -q "Status: SUCCESS" "$log" && test "$reports" -eq 0
