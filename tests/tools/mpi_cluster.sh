#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpass-opt --session --cluster under mpirun: the devices of a TensorFlow cluster on the
# ranks, the nodes spread round-robin over them (every tensor that can cross ranks does,
# over MPI), the training fixtures give TensorFlow's losses after 20 steps
# (tests/data/tf/mlp_training: 0.705653, 0.717322, 0.59777; cnn_training: 0.134035,
# 0.00176799, 0.309551), a loop whose body spans the ranks gives TensorFlow's values, and a
# cluster that does not fit the mpirun is an error.
#   mpi_cluster.sh <gpass-opt> <tests/data dir> <mpiexec>
set -u
opt=$1 data=$2 mpiexec=$3
source "$(dirname "${BASH_SOURCE[0]}")/mpi_lib.sh"
mpi() {  # mpi NP ARGS...
  local np=$1; shift
  OMPI_MCA_rmaps_base_oversubscribe=1 timeout 240 "$mpiexec" "${root[@]}" --oversubscribe -np "$np" "$opt" "$@"
}
train() {  # train FIXTURE CLUSTER NP OUT
  local t="$data/tf/$1"
  mpi "$3" "$t/graph.pb" --tf-feeds=x:0,ids:0 --tf-fetches=sgd/loss:0,mom/loss:0,adam/loss:0 --tf-targets=train \
    --passes=tf-frontend --session --init=init --steps=21 --input="$t/feed_0.pb" --input="$t/feed_1.pb" \
    --cluster="$2" --devices=cpu:0,cpu:1 --place=round-robin >"$4" 2>"$4.err"
}
train mlp_training worker:2 2 "$tmp/mlp.txt"
check "mlp worker:2 exit 0" test $? -eq 0
check "mlp worker:2 on 4 devices" grep -q "cluster: 4 device(s) in worker:2" "$tmp/mlp.txt"
check "mlp worker:2 sends" grep -Eq " [1-9][0-9]* send/recv pair" "$tmp/mlp.txt"
check "mlp one copy of the results" test "$(grep -c '^sgd/loss:0' "$tmp/mlp.txt")" -eq 1
check "mlp sgd loss" grep -q '^sgd/loss:0 f32\[\] checksum=0.705653 ' "$tmp/mlp.txt"
check "mlp momentum loss" grep -q '^mom/loss:0 f32\[\] checksum=0.717322 ' "$tmp/mlp.txt"
check "mlp adam loss" grep -q '^adam/loss:0 f32\[\] checksum=0.59777 ' "$tmp/mlp.txt"
train cnn_training ps:1,worker:1 2 "$tmp/cnn.txt"
check "cnn ps:1,worker:1 exit 0" test $? -eq 0
check "cnn sgd loss" grep -q '^sgd/loss:0 f32\[\] checksum=0.134035 ' "$tmp/cnn.txt"
check "cnn momentum loss" grep -q '^mom/loss:0 f32\[\] checksum=0.00176799 ' "$tmp/cnn.txt"
check "cnn adam loss" grep -q '^adam/loss:0 f32\[\] checksum=0.309551 ' "$tmp/cnn.txt"
# nested while loops spread over three ranks (their bodies' parts run in the other
# processes): the values of one process on one device (which equal TensorFlow's: tests/tf)
nl="$data/tf/nested_loops"
loops=("$nl/graph.pb" --tf-feeds=n:0,v:0 --tf-fetches=i_out:0,acc_out:0 --passes=tf-frontend --session --steps=2
       --input="$nl/feed_0.pb" --input="$nl/feed_1.pb")
mpi 3 "${loops[@]}" --cluster=worker:3 --place=round-robin >"$tmp/loops.txt" 2>"$tmp/loops.err"
check "loops worker:3 exit 0" test $? -eq 0
"$opt" "${loops[@]}" >"$tmp/want.txt" 2>&1
check "loops one process exit 0" test $? -eq 0
check "loops i_out" grep -qxF "$(grep '^i_out:0 ' "$tmp/want.txt")" "$tmp/loops.txt"
check "loops acc_out" grep -qxF "$(grep '^acc_out:0 ' "$tmp/want.txt")" "$tmp/loops.txt"
check "loops sends" grep -Eq " [1-9][0-9]* send/recv pair" "$tmp/loops.txt"
# a cluster of 3 tasks under 2 ranks
train mlp_training worker:3 2 "$tmp/bad.txt"
check "worker:3 on 2 ranks fails" test $? -ne 0
check "worker:3 on 2 ranks error" grep -q "3 task(s) for the 2 rank(s)" "$tmp/bad.txt.err"
summary
