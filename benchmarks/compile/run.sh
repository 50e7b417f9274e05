#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compile cost of gpass: time and peak compiler memory (/usr/bin/time -v) of
#   (a) a user translation unit (user_tu.cpp: <gpass/all.hpp>, a small graph run on the Eigen
#       CPU policy) with GPASS_SEPARATE_COMPILATION,
#   (b) each gpass unit (gpass/**/src/*.cpp) with GPASS_SEPARATE_COMPILATION,
#   (c) the same user TU in full header-only mode,
# then links (a)+(b) and (c) and runs both (they must print "0 2 0 4").
#
#   benchmarks/compile/run.sh                 g++, -O2, one compile at a time
#   CXX=clang++-16 benchmarks/compile/run.sh  another compiler
#   CXXFLAGS="-O1" benchmarks/compile/run.sh  other flags
#   JOBS=2 benchmarks/compile/run.sh          compile the units (b) 2 at a time (times then
#                                             share the cores: use JOBS=1 for the figures)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

CXX="${CXX:-g++}"
CXXFLAGS="${CXXFLAGS:--O2}"
JOBS="${JOBS:-1}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }

base=(-std=c++20 $CXXFLAGS -Iinclude -I/usr/include/eigen3)
mapfile -t units < <(cmake -P cmake/gpassListUnits.cmake 2>&1 | sed 's/^-- //')

measure() {  # measure <label> <output.o> <compiler args...>
  local label="$1" obj="$2"; shift 2
  if ! /usr/bin/time -v -o "$obj.time" "$CXX" "${base[@]}" "$@" -c -o "$obj" 2>"$obj.err"; then
    echo "FAILED: $label"; cat "$obj.err"; return 1
  fi
  local s kb
  s=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$obj.time" | awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
  kb=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$obj.time")
  printf '%-44s %7.1f s %7.0f MB\n' "$label" "$s" "$(awk -v kb="$kb" 'BEGIN { print kb / 1024 }')"
}

echo "compiler: $($CXX --version | head -1); flags: ${base[*]}"
echo "machine: $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "(a) user TU, GPASS_SEPARATE_COMPILATION"
measure "benchmarks/compile/user_tu.cpp" "$out/user.o" -DGPASS_SEPARATE_COMPILATION benchmarks/compile/user_tu.cpp
echo
echo "(b) units, GPASS_SEPARATE_COMPILATION (JOBS=$JOBS)"
i=0
for u in "${units[@]}"; do
  measure "${u#include/}" "$out/unit$i.o" -DGPASS_SEPARATE_COMPILATION "$u" &
  i=$((i + 1))
  if (( i % JOBS == 0 )); then wait; fi
done
wait
echo
echo "(c) user TU, header-only"
measure "benchmarks/compile/user_tu.cpp" "$out/header_only.o" benchmarks/compile/user_tu.cpp
echo
"$CXX" -o "$out/separate" "$out/user.o" "$out"/unit*.o -pthread
"$CXX" -o "$out/header_only" "$out/header_only.o" -pthread
echo "run, separate:    $("$out/separate")"
echo "run, header-only: $("$out/header_only")"
