#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Data parallelism figures, measured in this run on this machine:
#  1. all-reduce bandwidth under `mpirun -np 2`: MPI_Allreduce alone vs gpass's MPI process
#     group vs an all_reduce node run by a session, on the same f32 buffers (gpass_bench_mpi);
#  2. training steps/s of the MLP and CNN fixtures (tests/data/tf/mlp_training: three 3-6-3
#     MLPs; cnn_training: three 7x7x2 CNNs; SGD, momentum, Adam) on batches of BATCH rows
#     (default 8192) and CNN_BATCH images (default 256), made here by repeating the
#     fixtures' 8: one device, --data-parallel=2 (two CPU devices of one process), and
#     `mpirun -np 2 --data-parallel=mpi` (two processes), STEPS steps each (default 200);
#     and the model spread over two ranks (`--cluster=worker:2 --place=round-robin`: every
#     node in turn on the other rank, the cost of moving tensors between processes);
#  3. the round trip of a buffer between 2 ranks: MPI_Send/MPI_Recv alone vs a session run
#     over a cluster of two tasks (gpass_bench_mpi, second table).
#
#   benchmarks/mpi/run.sh [build-dir]
# Builds gpass-opt and gpass_bench_mpi with -O3 -march=x86-64-v3 (Release).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
build="${1:-$root/build/bench-mpi}"
batch="${BATCH:-8192}"
steps="${STEPS:-200}"
root_flag=()
if [[ "$(id -u)" -eq 0 ]]; then root_flag=(--allow-run-as-root); fi

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O3 -march=x86-64-v3 -DNDEBUG" \
  -DGPASS_BUILD_TESTS=OFF -DGPASS_BUILD_EXAMPLES=ON -DGPASS_BUILD_BENCHMARKS=ON -DGPASS_BUILD_PYTHON=OFF \
  -DGPASS_WITH_ONNX=OFF >/dev/null
cmake --build "$build" --target gpass-opt gpass_bench_mpi -j "${JOBS:-2}"
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cpus, load average: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== all-reduce (mpirun -np 2) =="
mpirun "${root_flag[@]}" --oversubscribe -np 2 "$build/benchmarks/mpi/gpass_bench_mpi"

report() {  # report NAME < gpass-opt stderr+stdout
  local out; out="$(cat)"
  local per; per="$(sed -n 's/^steps: .*(\([0-9.e+-]*\) ms per step)$/\1/p' <<<"$out" | head -1)"
  local loss; loss="$(sed -n 's/^sgd\/loss:0 f32\[\] checksum=\([^ ]*\) .*/\1/p' <<<"$out" | head -1)"
  echo "{\"config\": \"$1\", \"ms_per_step\": $per, \"steps_per_s\": $(python3 -c "print(round(1000/$per, 1))"), \"sgd_loss\": $loss}"
}
for fixture in mlp_training cnn_training; do
  b="$batch"
  if [[ "$fixture" == cnn_training ]]; then b="${CNN_BATCH:-256}"; fi
  echo "== $fixture steps, batch $b, $steps steps =="
  fx="$root/tests/data/tf/$fixture"
  feeds="$build/${fixture}_feeds"
  mkdir -p "$feeds"
  python3 "$here/repeat_feeds.py" "$fx/feed_0.pb" "$fx/feed_1.pb" "$b" "$feeds"
  common=("$fx/graph.pb" --tf-feeds=x:0,ids:0 --tf-fetches=sgd/loss:0,mom/loss:0,adam/loss:0 --tf-targets=train
          --passes=tf-frontend --session --init=init --steps="$steps" --input="$feeds/feed_0.pb" --input="$feeds/feed_1.pb"
          --timing)
  "$build/examples/gpass-opt/gpass-opt" "${common[@]}" 2>&1 | report "1 device"
  "$build/examples/gpass-opt/gpass-opt" "${common[@]}" --data-parallel=2 2>&1 | report "2 replicas, 1 process"
  mpirun "${root_flag[@]}" --oversubscribe -np 2 "$build/examples/gpass-opt/gpass-opt" "${common[@]}" --data-parallel=mpi 2>&1 |
    report "2 ranks (mpirun -np 2)"
  mpirun "${root_flag[@]}" --oversubscribe -np 2 "$build/examples/gpass-opt/gpass-opt" "${common[@]}" --cluster=worker:2 \
    --place=round-robin 2>&1 | report "model over 2 ranks, round-robin (--cluster=worker:2)"
done
