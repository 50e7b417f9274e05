#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Instruction counts (valgrind --tool=callgrind) and times of the hottest CPU kernels of the
# real-model benchmark, at BEFORE (a commit) and at the working tree:
#   benchmarks/executor/kernel_instructions.sh BEFORE [OUT_DIR] [REPS]
# Builds kernel_instructions.cpp twice (-O3 -march=x86-64-v3) against each side's headers,
# then prints, per kernel, the instructions per run of both sides and their ratio, and the
# best of three wall-clock times per run (valgrind runs the AVX2 micro-kernels; the times are
# native). KERNELS (environment) picks some of them: KERNELS="lstm8 sdpa". Needs g++,
# valgrind, Eigen.
set -euo pipefail
before=${1:?usage: kernel_instructions.sh BEFORE [OUT_DIR] [REPS]}
out=${2:-/tmp/gpass-kernel-instructions}
reps=${3:-3}
repo=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out/before"
git -C "$repo" archive "$before" include | tar -x -C "$out/before"
flags=(-std=c++20 -O3 -march=x86-64-v3 -DNDEBUG -isystem /usr/include/eigen3)
g++ "${flags[@]}" -I"$out/before/include" "$repo/benchmarks/executor/kernel_instructions.cpp" -o "$out/before.bin" &
g++ "${flags[@]}" -I"$repo/include" "$repo/benchmarks/executor/kernel_instructions.cpp" -o "$out/after.bin"
wait
printf '%-7s %14s %14s %6s %12s %12s\n' kernel before after ratio "before us" "after us"
for k in ${KERNELS:-dw dw2 dw6 dw7 dw13 dw14 dw112 pw pj pe pl c3 c3b c3c c3d c1 c1s2 stem nc3 nc3b nc3c nc3d nc1 nc1e nc1x nc1s nc1s4 ncpe ncpj lstm1 lstm8 sdpa}; do
  declare -A ins us
  for side in before after; do
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/cg.$k.$side" "$out/$side.bin" "$k" "$reps" \
      >/dev/null 2>"$out/log.$k.$side"
    ins[$side]=$(( $(grep -o 'Collected : [0-9]*' "$out/log.$k.$side" | grep -o '[0-9]*$') / reps ))
    best=
    for _ in 1 2 3; do
      t=$("$out/$side.bin" "$k" 200 | awk '{print $4}')
      if [[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$t; fi
    done
    us[$side]=$best
  done
  printf '%-7s %14d %14d %6.3f %12s %12s\n' "$k" "${ins[before]}" "${ins[after]}" \
    "$(awk -v a="${ins[after]}" -v b="${ins[before]}" 'BEGIN{print a / b}')" "${us[before]}" "${us[after]}"
done
