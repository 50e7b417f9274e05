#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpass-opt --data-parallel=mpi under mpirun: the MLP training fixture (tests/data/tf/
# mlp_training) over 2 ranks (1 and 2 replicas each) gives the one-device losses after 20
# steps (TensorFlow's: 0.705653, 0.717322, 0.59777), the CNN fixture's too; 3 ranks cannot
# split the batch of 8.
#   mpi_data_parallel.sh <gpass-opt> <tests/data dir> <mpiexec>
set -u
opt=$1 data=$2 mpiexec=$3
source "$(dirname "${BASH_SOURCE[0]}")/mpi_lib.sh"
mt="$data/tf/mlp_training"
run() {  # run NP MODE OUT
  OMPI_MCA_rmaps_base_oversubscribe=1 "$mpiexec" "${root[@]}" --oversubscribe -np "$1" "$opt" "$mt/graph.pb" \
    --tf-feeds=x:0,ids:0 --tf-fetches=sgd/loss:0,mom/loss:0,adam/loss:0 --tf-targets=train --passes=tf-frontend \
    --session --init=init --steps=21 --input="$mt/feed_0.pb" --input="$mt/feed_1.pb" --data-parallel="$2" >"$3" 2>"$3.err"
}
for mode in "2 mpi 1" "2 mpi:2 2"; do
  set -- $mode
  run "$1" "$2" "$tmp/out_$2.txt"
  check "np $1 $2 exit 0" test $? -eq 0
  check "np $1 $2 topology" grep -q "data-parallel: $3 replica(s) x $1 process(es)$" "$tmp/out_$2.txt"
  check "np $1 $2 one copy of the results" test "$(grep -c '^sgd/loss:0' "$tmp/out_$2.txt")" -eq 1
  check "np $1 $2 sgd loss" grep -q '^sgd/loss:0 f32\[\] checksum=0.705653 ' "$tmp/out_$2.txt"
  check "np $1 $2 momentum loss" grep -q '^mom/loss:0 f32\[\] checksum=0.717322 ' "$tmp/out_$2.txt"
  check "np $1 $2 adam loss" grep -q '^adam/loss:0 f32\[\] checksum=0.59777 ' "$tmp/out_$2.txt"
done
# the CNN fixture over 2 ranks: TensorFlow's losses (0.13403524, 0.0017680076, 0.30955112)
ct="$data/tf/cnn_training"
OMPI_MCA_rmaps_base_oversubscribe=1 "$mpiexec" "${root[@]}" --oversubscribe -np 2 "$opt" "$ct/graph.pb" \
  --tf-feeds=x:0,ids:0 --tf-fetches=sgd/loss:0,mom/loss:0,adam/loss:0 --tf-targets=train --passes=tf-frontend \
  --session --init=init --steps=21 --input="$ct/feed_0.pb" --input="$ct/feed_1.pb" --data-parallel=mpi >"$tmp/cnn.txt" 2>&1
check "cnn np 2 exit 0" test $? -eq 0
check "cnn np 2 sgd loss" grep -q '^sgd/loss:0 f32\[\] checksum=0.134035 ' "$tmp/cnn.txt"
check "cnn np 2 momentum loss" grep -q '^mom/loss:0 f32\[\] checksum=0.00176799 ' "$tmp/cnn.txt"
check "cnn np 2 adam loss" grep -q '^adam/loss:0 f32\[\] checksum=0.309551 ' "$tmp/cnn.txt"
run 3 mpi "$tmp/out3.txt"
check "np 3 fails" test $? -ne 0
check "np 3 batch error" grep -q "a batch of 8 does not split into 3 equal slices" "$tmp/out3.txt.err"
summary
