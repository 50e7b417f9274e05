#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end checks of the gpass-opt command-line tool: bundled example, text-IR files,
# --timing / --print-ir-after-all / --dot / -o / --list-passes, exit codes, a crash
# reproducer that gpass-opt reads back, --run (random and .pb inputs, --save-outputs,
# --print-tensor), -O levels with --check / --summary / --input-shape, TensorFlow GraphDef input (when
# GPASS_OPT_WITH_TENSORFLOW is set), and --session (one and two devices, placement log, trace).
#   gpass_opt.sh <gpass-opt> <tests/data dir> <scratch dir> [ONNX model, when built with ONNX]
set -u
opt=$1 data=$2 tmp=$3 model=${4:-}
rm -rf "$tmp" && mkdir -p "$tmp"
fails=0 passes=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then passes=$((passes + 1)); else echo "FAIL: $name"; fails=$((fails + 1)); fi
}
train() {  # train FIXTURE_DIR FETCHES REPLICAS OUT: a TF training fixture's init, 20 steps, then the fetches
  "$opt" "$1/graph.pb" --tf-feeds=x:0,ids:0 --tf-fetches="$2" --tf-targets=train --passes=tf-frontend --session \
    --init=init --steps=21 --input="$1/feed_0.pb" --input="$1/feed_1.pb" --data-parallel="$3" >"$4" 2>&1
}

# 1. bundled example through the default pipeline
"$opt" --passes=default --timing --print-ir-after-all --stats >"$tmp/out.gir" 2>"$tmp/err.txt"
check "example exit 0" test $? -eq 0
check "dead branch removed" bash -c "! grep -q side_act '$tmp/out.gir'"
check "live output kept" grep -q '%y = MatMul' "$tmp/out.gir"
check "timing line format" grep -Eq '^dce: [0-9]+ nodes \([+-][0-9]+\), [0-9]+ edges \([+-][0-9]+\), [0-9]+\.[0-9]{2} ms$' "$tmp/err.txt"
check "ir after each pass" grep -q 'IR after delete-disconnected' "$tmp/err.txt"
check "statistics printed" grep -q 'statistic dce.removed-nodes = 3' "$tmp/err.txt"

# 2. output file, DOT, and reading the output back (round trip through the tool)
"$opt" --passes=dce -o "$tmp/o.gir" --dot="$tmp/o.dot"
check "-o exit 0" test $? -eq 0
check "dot written" grep -q '^digraph' "$tmp/o.dot"
"$opt" "$tmp/o.gir" -o "$tmp/o2.gir"
check "re-read output" cmp -s "$tmp/o.gir" "$tmp/o2.gir"

# 3. every text-IR fixture passes through unchanged when no pass runs
for f in "$data"/ir/*.gir; do
  "$opt" --no-verify "$f" >"$tmp/fx.gir" 2>/dev/null && "$opt" --no-verify "$tmp/fx.gir" >"$tmp/fx2.gir" 2>/dev/null
  check "fixture $(basename "$f") stable" cmp -s "$tmp/fx.gir" "$tmp/fx2.gir"
done

# 4. errors and exit codes
"$opt" --bogus >/dev/null 2>"$tmp/e1.txt"
check "usage error exit 2" test $? -eq 2
"$opt" --passes=dcee >/dev/null 2>"$tmp/e2.txt"
check "unknown pass exit 1" test $? -eq 1
check "unknown pass suggests" grep -q "did you mean 'dce'" "$tmp/e2.txt"
"$opt" "$tmp/missing.gir" >/dev/null 2>"$tmp/e3.txt"
check "missing file exit 1" test $? -eq 1
printf 'graph {\n  %%a = X(%%nope)\n}\n' >"$tmp/bad.gir"
"$opt" "$tmp/bad.gir" >/dev/null 2>"$tmp/e4.txt"
check "parse error exit 1" test $? -eq 1
check "parse error has line:col" grep -Eq 'bad.gir:2:[0-9]+' "$tmp/e4.txt"
"$opt" --list-passes >"$tmp/list.txt"
check "list passes" grep -q '^  infer-shapes' "$tmp/list.txt"
check "list pass options" grep -q '^      max-sweeps: int = 64 - ' "$tmp/list.txt"
check "list fixed-point" grep -q '^  fixed-point - ' "$tmp/list.txt"
"$opt" --passes='dce{nosuchopt=1}' >/dev/null 2>"$tmp/e7.txt"
check "unknown option exit 1" test $? -eq 1
check "unknown option lists the valid ones" grep -q "pass 'dce' has no option 'nosuchopt'; its options: keep: string" "$tmp/e7.txt"
"$opt" --passes='fixed-point{pipeline="delete-disconnected,dce"}' --stats >/dev/null 2>"$tmp/e8.txt"
check "fixed-point runs" grep -q 'statistic fixed-point.rounds = ' "$tmp/e8.txt"

# 5. crash reproducer: a failing pass writes its input; gpass-opt reads it back and fails the same way
"$opt" --passes=dce,infer-shapes --reproducer-dir="$tmp/repro" "$data/tools/bad_shapes.gir" >/dev/null 2>"$tmp/e5.txt"
check "failing pass exit 1" test $? -eq 1
check "error names pass and node" grep -q "pass 'infer-shapes'.*node 'sum' (op Add)" "$tmp/e5.txt"
check "error names reproducer" grep -q "reproducer written to $tmp/repro/infer-shapes.reproducer.gir" "$tmp/e5.txt"
"$opt" --passes=infer-shapes "$tmp/repro/infer-shapes.reproducer.gir" >/dev/null 2>"$tmp/e6.txt"
check "reproducer re-fails" grep -q "node 'sum' (op Add)" "$tmp/e6.txt"

# 6. ONNX in and out (when gpass-opt has ONNX support)
if [[ -n "$model" ]]; then
  "$opt" --passes=infer-shapes,dce "$model" -o "$tmp/out.onnx" 2>"$tmp/e7.txt"
  check "onnx in/out exit 0" test $? -eq 0
  "$opt" "$tmp/out.onnx" >"$tmp/from_onnx.gir"
  check "exported onnx reads back" grep -q 'return(' "$tmp/from_onnx.gir"
  check "inferred types exported" grep -q -- '-> (f32\[' "$tmp/from_onnx.gir"
fi

# 7. optimization levels: -O2 folds the batch norm into the Conv, the shape computation into a
# constant Reshape target, merges the Sigmoids; --check compares with the input graph
"$opt" -O2 --summary --check=3 --timing "$data/tools/optimize.gir" >"$tmp/o2.gir" 2>"$tmp/o2.txt"
check "-O2 exit 0" test $? -eq 0
check "-O2 folds the batch norm" bash -c "! grep -q BatchNormalization '$tmp/o2.gir'"
check "-O2 folds the shape computation" bash -c "! grep -q 'Shape(' '$tmp/o2.gir'"
check "-O2 merges common subexpressions" test "$(grep -c 'Sigmoid(' "$tmp/o2.gir")" -eq 1
check "-O2 elides large constants" grep -q 'tensor<f32\[4,3,3,3\]> __elided__' "$tmp/o2.gir"
check "--summary table" grep -Eq '^BatchNormalization +1 +0$' "$tmp/o2.txt"
check "--check reports ok" grep -Eq '^check: 3 run\(s\) on seeded random inputs, max abs diff .*: ok$' "$tmp/o2.txt"
check "--timing total" grep -Eq '^optimize: [0-9.e-]+ ms$' "$tmp/o2.txt"
"$opt" -O2 --timing --timing-runs=4 "$data/tools/optimize.gir" >"$tmp/o2r.gir" 2>"$tmp/o2r.txt"
check "--timing-runs median" grep -Eq '^optimize: [0-9.e-]+ ms \(median of 4, min [0-9.e-]+ ms\)$' "$tmp/o2r.txt"
check "--timing-runs result as one run" cmp "$tmp/o2.gir" "$tmp/o2r.gir"
"$opt" -O3 --run --repeat=3 "$data/tools/optimize.gir" >"$tmp/o3run.txt" 2>"$tmp/o3e.txt"
check "-O3 runs its fused ops" grep -Eq '^latency median: [0-9.e-]+ ms, min: [0-9.e-]+ ms \(3 runs\)$' "$tmp/o3run.txt"
"$opt" -O3 --check=2 "$data/tools/optimize.gir" >"$tmp/o3.gir" 2>"$tmp/o3c.txt"
check "-O3 fuses the activation (a channel-blocked conv)" grep -Eq 'gpass::NchwcConv\(%x, %c/weight, %bn/Sub\) \{activation = "Relu", block = (8|16),' "$tmp/o3.gir"
check "-O3 reorders the blocked conv back to NCHW" grep -Eq '%act = gpass::NchwcReorderOutput\(%act/nchwc\) \{channels = 4\}' "$tmp/o3.gir"
check "-O3 --check ok" grep -q ': ok$' "$tmp/o3c.txt"
"$opt" -O2 --print-large-constants "$data/tools/optimize.gir" >"$tmp/o2full.gir" 2>/dev/null
check "--print-large-constants prints them" bash -c "! grep -q __elided__ '$tmp/o2full.gir'"
"$opt" --passes=infer-shapes "$tmp/o2full.gir" >/dev/null 2>&1
check "optimized IR parses back" test $? -eq 0
"$opt" "$tmp/o2.gir" >/dev/null 2>"$tmp/o2e.txt"
check "elided IR does not parse" grep -q 'was elided when printed' "$tmp/o2e.txt"
"$opt" -O1 --input-shape=x:2,3,6,6 "$data/tools/optimize.gir" >"$tmp/o1.gir" 2>/dev/null
check "--input-shape fixes the input" grep -q '%x = arg() {index = 0} -> (f32\[2,3,6,6\])' "$tmp/o1.gir"
check "--input-shape folds the target" grep -q 'tensor<i64\[2\]> \[2, -1\]' "$tmp/o1.gir"
"$opt" -O1 --input-shape=nope:1 "$data/tools/optimize.gir" >/dev/null 2>"$tmp/o1e.txt"
check "--input-shape unknown input names the inputs" grep -q "has no input 'nope' (its inputs: 'x')" "$tmp/o1e.txt"
"$opt" -O1 --input-shape=x:1,3 "$data/tools/optimize.gir" >/dev/null 2>"$tmp/o1e2.txt"
check "--input-shape rank mismatch" grep -q "has rank 4" "$tmp/o1e2.txt"
"$opt" --passes='simplify-inference{batch-norm=some}' "$data/tools/optimize.gir" >/dev/null 2>"$tmp/o1e3.txt"
check "bad option value named" grep -q "expects all, foldable or none, got 'some'" "$tmp/o1e3.txt"

# 8. --run: execute the result on the Eigen CPU executor
"$opt" --run >"$tmp/run1.txt" 2>"$tmp/e8.txt"
check "run bundled example exit 0" test $? -eq 0
check "run prints plan stats" grep -Eq '^plan: [0-9]+ steps, .*[0-9]+ peak bytes, [0-9]+ naive bytes' "$tmp/run1.txt"
check "run prints output line" grep -Eq '^y f32\[1,2\] checksum=[-0-9.e+]+ mean_abs=[0-9.e+-]+$' "$tmp/run1.txt"
"$opt" --run --seed=7 >"$tmp/run2.txt" && "$opt" --run --seed=7 --threads=2 >"$tmp/run3.txt"
check "same seed same outputs" cmp -s "$tmp/run2.txt" "$tmp/run3.txt"
"$opt" --run --seed=8 >"$tmp/run4.txt"
check "other seed other outputs" bash -c "! cmp -s '$tmp/run2.txt' '$tmp/run4.txt'"
"$opt" --run --threads=0 >/dev/null 2>&1
check "bad --threads exit 2" test $? -eq 2
"$opt" --seed=1 --input=x.pb >/dev/null 2>&1
check "--input without --run exit 2" test $? -eq 2
printf 'graph {\n  %%x = arg() {index = 0}\n  %%r:0 = return(%%x)\n}\n' >"$tmp/untyped.gir"
"$opt" --run "$tmp/untyped.gir" >/dev/null 2>"$tmp/e9.txt"
check "untyped input exit 1" test $? -eq 1
check "untyped input named" grep -q "input 'x'" "$tmp/e9.txt"
printf 'graph {\n  %%x = arg() {index = 0} -> (f32[2])\n  %%y = NoSuchOp(%%x)\n  %%r:0 = return(%%y)\n}\n' >"$tmp/unsupported.gir"
"$opt" --no-verify --run "$tmp/unsupported.gir" >/dev/null 2>"$tmp/e10.txt"
check "unsupported op exit 1" test $? -eq 1
check "unsupported op named" grep -q "NoSuchOp" "$tmp/e10.txt"

# 9. --run on ONNX test data: .pb inputs, saved outputs, --print-tensor
add=/usr/share/libonnx-testdata/data/node/test_add
if [[ -n "$model" && -f "$add/model.onnx" ]]; then
  set0=$add/test_data_set_0
  "$opt" --run "$add/model.onnx" --input="$set0/input_0.pb" --input="$set0/input_1.pb" \
    --save-outputs="$tmp/saved" >"$tmp/run_add.txt" 2>"$tmp/e11.txt"
  check "run add exit 0" test $? -eq 0
  check "saved output written" test -s "$tmp/saved/output_0.pb"
  "$opt" --print-tensor="$set0/output_0.pb" >"$tmp/want.txt"
  check "print-tensor exit 0" test $? -eq 0
  check "print-tensor format" grep -Eq '^sum f32\[3,4,5\] checksum=[-0-9.e+]+ mean_abs=[0-9.e+-]+$' "$tmp/want.txt"
  "$opt" --print-tensor="$tmp/saved/output_0.pb" >"$tmp/got.txt"
  check "saved output matches expected" cmp -s "$tmp/want.txt" "$tmp/got.txt"
  check "printed output matches expected" bash -c "grep -v -e '^plan:' -e '^batch:' '$tmp/run_add.txt' | cmp -s - '$tmp/want.txt'"
  check "run says the batch runs whole" grep -q "^batch: whole (no input has a symbolic batch size" "$tmp/run_add.txt"
  "$opt" --run "$add/model.onnx" --input="$set0/input_0.pb" >/dev/null 2>"$tmp/e12.txt"
  check "too few inputs exit 1" test $? -eq 1
  check "too few inputs message" grep -q "expected 2 --input file(s), got 1" "$tmp/e12.txt"
  "$opt" --run "$add/model.onnx" --input="$set0/input_0.pb" --input="$set0/input_1.pb" --input="$set0/input_1.pb" >/dev/null 2>&1
  check "too many inputs exit 1" test $? -eq 1
  "$opt" --run "$add/model.onnx" --input="$set0/input_0.pb" --input="$add/../test_add_bcast/test_data_set_0/input_1.pb" >/dev/null 2>"$tmp/e13.txt"
  check "wrong input shape exit 1" test $? -eq 1
  check "wrong input shape message" grep -q "input 'y'" "$tmp/e13.txt"
  "$opt" --run "$add/model.onnx" --seed=5 >"$tmp/r5a.txt" && "$opt" --run "$add/model.onnx" --seed=5 >"$tmp/r5b.txt"
  check "onnx same seed same outputs" cmp -s "$tmp/r5a.txt" "$tmp/r5b.txt"
  "$opt" --run "$add/model.onnx" --input="$tmp/missing.pb" --input="$set0/input_1.pb" >/dev/null 2>&1
  check "missing .pb exit 1" test $? -eq 1
fi

# 10. TensorFlow GraphDefs (.pbtxt text, .pb binary) when gpass-opt has TensorFlow support
tfx=$data/tf/multi_output
if [[ -n "${GPASS_OPT_WITH_TENSORFLOW:-}" && -f "$tfx/graph.pbtxt" ]]; then
  "$opt" "$tfx/graph.pbtxt" --passes=delete-disconnected >"$tmp/tf_text.gir" 2>"$tmp/e14.txt"
  check "tf pbtxt exit 0" test $? -eq 0
  check "tf pbtxt prints text IR" grep -q '^  %split:2 = tf::Split(%split/split_dim, %x) {T = f32, num_split = 2} -> (f32\[?,3\], f32\[?,3\])$' "$tmp/tf_text.gir"
  check "tf graph attributes" grep -q '^graph {frontend = "tf", ' "$tmp/tf_text.gir"
  "$opt" "$tfx/graph.pb" --passes=delete-disconnected >"$tmp/tf_bin.gir" 2>/dev/null
  check "tf pb same as pbtxt" cmp -s "$tmp/tf_text.gir" "$tmp/tf_bin.gir"
  cp "$tfx/graph.pb" "$tmp/graph.bin"
  "$opt" --input-format=tf "$tmp/graph.bin" --passes=delete-disconnected >"$tmp/tf_fmt.gir" 2>/dev/null
  check "--input-format=tf" cmp -s "$tmp/tf_text.gir" "$tmp/tf_fmt.gir"
  "$opt" "$tmp/tf_text.gir" >"$tmp/tf_reread.gir" 2>/dev/null
  check "tf import re-reads as text IR" cmp -s "$tmp/tf_text.gir" "$tmp/tf_reread.gir"
  "$opt" "$data/tf/while_one_var/graph.pb" >"$tmp/tf_loop.gir" 2>/dev/null
  check "tf v1 loop verifies" grep -q '= NextIteration(' "$tmp/tf_loop.gir"
  "$opt" "$data/tf/bad/bad_port.pbtxt" >/dev/null 2>"$tmp/e15.txt"
  check "tf bad port exit 1" test $? -eq 1
  check "tf bad port message" grep -q "node 'y' (op Identity): input 0 ('split:5'): output index 5 out of range" "$tmp/e15.txt"
  "$opt" "$data/tf/bad/malformed.pbtxt" >/dev/null 2>"$tmp/e16.txt"
  check "tf malformed exit 1" test $? -eq 1
  check "tf malformed line:col" grep -q 'malformed.pbtxt:10:10: unterminated string' "$tmp/e16.txt"
  "$opt" --input-format=pb "$tfx/graph.pb" >/dev/null 2>&1
  check "bad --input-format exit 2" test $? -eq 2
  head -c 100 "$tfx/graph.pb" >"$tmp/truncated.pb"
  "$opt" "$tmp/truncated.pb" >/dev/null 2>"$tmp/e17.txt"
  check "truncated tf pb exit 1" test $? -eq 1
  check "truncated tf pb names offset" grep -q 'truncated.pb: byte offset' "$tmp/e17.txt"
  # the TF signature from the command line, the frontend, a run on random feeds
  "$opt" "$data/tf/while_growing/graph.pb" --tf-feeds=x:0 --tf-fetches=out:0,out_shape:0 --passes=tf-frontend \
    -o "$tmp/tf_frontend.gir" >/dev/null 2>"$tmp/e18.txt"
  check "tf-frontend with --tf-feeds exit 0" test $? -eq 0
  check "tf-frontend makes a while" grep -q '= while(' "$tmp/tf_frontend.gir"
  check "tf-frontend leaves no Merge" bash -c "! grep -q 'Merge(' '$tmp/tf_frontend.gir'"
  check "--tf-fetches make the return" grep -q '%_fetches:0 = return(%out, %out_shape)' "$tmp/tf_frontend.gir"
  "$opt" "$data/tf/while_growing/graph.pb" --tf-feeds=x:0 --tf-fetches=out:0,out_shape:0 --passes=tf-frontend \
    --run --seed=3 >"$tmp/tf_run.txt" 2>"$tmp/e19.txt"
  check "tf --run exit 0" test $? -eq 0
  check "tf --run prints both outputs" test "$(grep -c 'checksum=' "$tmp/tf_run.txt")" -eq 2
  "$opt" "$data/tf/while_growing/graph.pb" --tf-fetches=nope:0 >/dev/null 2>"$tmp/e20.txt"
  check "unknown fetch exit 1" test $? -eq 1
  check "unknown fetch named" grep -q "nope" "$tmp/e20.txt"
  "$opt" --tf-feeds=x:0 >/dev/null 2>&1
  check "--tf-feeds without a TF input exit 2" test $? -eq 2
  if [[ -n "$model" ]]; then  # an ONNX model named .pb is still read as ONNX (first byte 0x08)
    cp "$model" "$tmp/onnx_model.pb"
    "$opt" "$tmp/onnx_model.pb" >"$tmp/onnx_pb.gir" 2>/dev/null
    check "onnx .pb detected" grep -q 'return(' "$tmp/onnx_pb.gir"
  fi
fi

# 11. --session: the same outputs as --run, on one device and on two with the nodes spread
"$opt" "$data/tools/optimize.gir" --run --seed=5 >"$tmp/plan_run.txt" 2>/dev/null
"$opt" "$data/tools/optimize.gir" --session --seed=5 >"$tmp/sess1.txt" 2>/dev/null
check "--session exit 0" test $? -eq 0
check "--session one device, no send/recv" grep -q '^session: 1 device(s), 1 partition(s) run, 0 send/recv pair(s)' "$tmp/sess1.txt"
"$opt" "$data/tools/optimize.gir" --session --seed=5 --devices=cpu:0,cpu:1 --place=round-robin --log-device-placement \
  --trace="$tmp/trace.json" >"$tmp/sess2.txt" 2>"$tmp/placement.txt"
check "--session two devices exit 0" test $? -eq 0
check "--session spreads over two devices" grep -Eq '^session: 2 device\(s\), 2 partition\(s\) run, [1-9][0-9]* send/recv' "$tmp/sess2.txt"
check "--session outputs equal --run's (1 device)" diff <(grep checksum= "$tmp/plan_run.txt") <(grep checksum= "$tmp/sess1.txt")
check "--session outputs equal --run's (2 devices)" diff <(grep checksum= "$tmp/plan_run.txt") <(grep checksum= "$tmp/sess2.txt")
check "--log-device-placement lines" grep -Eq '^[^ ]+: \([A-Za-z:_]+\): /job:localhost/replica:0/task:0/device:CPU:[01]$' "$tmp/placement.txt"
check "--trace writes a Chrome trace" grep -q '"traceEvents"' "$tmp/trace.json"
check "--trace names both devices" test "$(grep -c 'process_name' "$tmp/trace.json")" -eq 2
"$opt" "$data/tools/optimize.gir" --session --devices=gpu:0,cpu:0 >"$tmp/gpu.txt" 2>"$tmp/e_gpu.txt"
if [ $? -eq 0 ]; then  # a GPU (and the cuda component): the outputs are --run's
  check "--devices=gpu:0,cpu:0 outputs equal --run's" diff <(grep checksum= "$tmp/plan_run.txt") <(grep checksum= "$tmp/gpu.txt")
else  # no GPU, or no cuda component: a clear error
  check "--devices=gpu:0 says why not" grep -Eq 'no such CUDA device|without the cuda component' "$tmp/e_gpu.txt"
fi
"$opt" "$data/tools/optimize.gir" --session --devices=tpu:0 >/dev/null 2>"$tmp/e_tpu.txt"
check "--devices=tpu:0 exit 1" test $? -eq 1
check "--devices=tpu:0 names the device kinds" grep -q 'cpu:N or gpu:N' "$tmp/e_tpu.txt"
"$opt" "$data/tools/optimize.gir" --devices=cpu:0 >/dev/null 2>&1
check "--devices without --session exit 2" test $? -eq 2
"$opt" "$data/tools/optimize.gir" --session --place=everywhere >/dev/null 2>&1
check "--place bad value exit 2" test $? -eq 2
if [[ -n "${GPASS_OPT_WITH_TENSORFLOW:-}" ]]; then
  for fx in while_two_vars nested_loops while_ctrl cond dynamic_rnn_lstm; do
    feeds=$(awk '$1=="feed"{print $2}' "$data/tf/$fx/fixture.txt" | paste -sd,)
    fetches=$(awk '$1=="fetch"{print $2}' "$data/tf/$fx/fixture.txt" | paste -sd,)
    "$opt" "$data/tf/$fx/graph.pb" --tf-feeds="$feeds" --tf-fetches="$fetches" --passes=tf-frontend --run --seed=2 \
      >"$tmp/tf_plan_$fx.txt" 2>/dev/null
    "$opt" "$data/tf/$fx/graph.pb" --tf-feeds="$feeds" --tf-fetches="$fetches" --passes=tf-frontend --session --seed=2 \
      --devices=cpu:0,cpu:1 --place=round-robin >"$tmp/tf_sess_$fx.txt" 2>/dev/null
    check "tf $fx --session exit 0" test $? -eq 0
    check "tf $fx --session equals --run" diff <(grep checksum= "$tmp/tf_plan_$fx.txt") <(grep checksum= "$tmp/tf_sess_$fx.txt")
  done
  # training: init, then 21 steps of three optimizers on two devices; the 21st step's losses are
  # TensorFlow's after 20 steps (tests/data/tf/mlp_training/output_*.pb: 0.7056527, 0.71732223,
  # 0.5977696)
  mt="$data/tf/mlp_training"
  "$opt" "$mt/graph.pb" --tf-feeds=x:0,ids:0 --tf-fetches=sgd/loss:0,mom/loss:0,adam/loss:0 --tf-targets=train \
    --passes=tf-frontend --session --init=init --steps=21 --input="$mt/feed_0.pb" --input="$mt/feed_1.pb" \
    --devices=cpu:0,cpu:1 --place=round-robin >"$tmp/steps.txt" 2>"$tmp/e31.txt"
  check "--steps exit 0" test $? -eq 0
  check "--steps runs 21 steps" grep -q '^session: 21 step(s) after 1 init target(s), 2 signature(s) compiled' "$tmp/steps.txt"
  check "--steps sgd loss" grep -q '^sgd/loss:0 f32\[\] checksum=0.705653 ' "$tmp/steps.txt"
  check "--steps momentum loss" grep -q '^mom/loss:0 f32\[\] checksum=0.717322 ' "$tmp/steps.txt"
  check "--steps adam loss" grep -q '^adam/loss:0 f32\[\] checksum=0.59777 ' "$tmp/steps.txt"
  "$opt" "$mt/graph.pb" --tf-feeds=x:0,ids:0 --tf-fetches=sgd/loss:0 --tf-targets=train --passes=tf-frontend --session \
    --steps=2 --input="$mt/feed_0.pb" --input="$mt/feed_1.pb" >/dev/null 2>"$tmp/e32.txt"
  check "--steps without --init exit 1" test $? -eq 1
  check "--steps without --init: uninitialized variable" grep -q 'never initialized' "$tmp/e32.txt"
  # data parallelism: the same 20 steps over 2 replicas (each on half the batch, gradients
  # all-reduced) give the one-device losses; 3 replicas cannot split the batch of 8
  "$opt" "$mt/graph.pb" --tf-feeds=x:0,ids:0 --tf-fetches=sgd/loss:0,mom/loss:0,adam/loss:0 --tf-targets=train \
    --passes=tf-frontend --session --init=init --steps=21 --input="$mt/feed_0.pb" --input="$mt/feed_1.pb" \
    --data-parallel=2 >"$tmp/dp.txt" 2>"$tmp/e33.txt"
  check "--data-parallel=2 exit 0" test $? -eq 0
  check "--data-parallel=2 replicas" grep -q 'data-parallel: 2 replica(s) x 1 process(es)$' "$tmp/dp.txt"
  check "--data-parallel=2 sgd loss" grep -q '^sgd/loss:0 f32\[\] checksum=0.705653 ' "$tmp/dp.txt"
  check "--data-parallel=2 momentum loss" grep -q '^mom/loss:0 f32\[\] checksum=0.717322 ' "$tmp/dp.txt"
  check "--data-parallel=2 adam loss" grep -q '^adam/loss:0 f32\[\] checksum=0.59777 ' "$tmp/dp.txt"
  "$opt" "$mt/graph.pb" --tf-feeds=x:0,ids:0 --tf-fetches=sgd/loss:0 --tf-targets=train --passes=tf-frontend --session \
    --init=init --steps=1 --input="$mt/feed_0.pb" --input="$mt/feed_1.pb" --data-parallel=3 >/dev/null 2>"$tmp/e34.txt"
  check "--data-parallel=3 exit 1" test $? -eq 1
  check "--data-parallel=3 batch error" grep -q "node 'replica_[0-9]/x' (op batch_slice): a batch of 8 does not split into 3 equal slices" "$tmp/e34.txt"
  # the CNN fixture (Conv2D, pooling and their gradients): TensorFlow's losses after 20 steps
  # (0.13403524, 0.0017680076, 0.30955112) on one device and on two replicas
  ct="$data/tf/cnn_training"
  for dp in 1 2; do
    train "$ct" sgd/loss:0,mom/loss:0,adam/loss:0 $dp "$tmp/cnn$dp.txt"
    check "cnn --data-parallel=$dp exit 0" test $? -eq 0
    check "cnn --data-parallel=$dp sgd loss" grep -q '^sgd/loss:0 f32\[\] checksum=0.134035 ' "$tmp/cnn$dp.txt"
    check "cnn --data-parallel=$dp momentum loss" grep -q '^mom/loss:0 f32\[\] checksum=0.00176799 ' "$tmp/cnn$dp.txt"
    check "cnn --data-parallel=$dp adam loss" grep -q '^adam/loss:0 f32\[\] checksum=0.309551 ' "$tmp/cnn$dp.txt"
  done
  # Adagrad and RMSProp (tests/data/tf/mlp_more_optimizers): TensorFlow's losses (0.68197393,
  # 1.0500033, 0.98657763) over two replicas
  mo="$data/tf/mlp_more_optimizers"
  train "$mo" adagrad/loss:0,rmsprop/loss:0,rms_momentum/loss:0 2 "$tmp/mo.txt"
  check "adagrad/rmsprop --data-parallel=2 exit 0" test $? -eq 0
  check "adagrad loss" grep -q '^adagrad/loss:0 f32\[\] checksum=0.681974 ' "$tmp/mo.txt"
  check "rmsprop loss" grep -q '^rmsprop/loss:0 f32\[\] checksum=1.05 ' "$tmp/mo.txt"
  check "rmsprop momentum loss" grep -q '^rms_momentum/loss:0 f32\[\] checksum=0.986578 ' "$tmp/mo.txt"
  # seeded random initializers (tests/data/tf/mlp_random_init): TensorFlow's losses
  # (0.70737827, 0.49148744 (printed 0.491487 or 0.491488: a last-bit difference), 0.6529114) on one device and over two replicas
  ri="$data/tf/mlp_random_init"
  for dp in 1 2; do
    train "$ri" sgd/loss:0,mom/loss:0,adam/loss:0 $dp "$tmp/ri$dp.txt"
    check "random init --data-parallel=$dp exit 0" test $? -eq 0
    check "random init --data-parallel=$dp sgd loss" grep -q '^sgd/loss:0 f32\[\] checksum=0.707378 ' "$tmp/ri$dp.txt"
    check "random init --data-parallel=$dp momentum loss" grep -Eq '^mom/loss:0 f32\[\] checksum=0.49148[78] ' "$tmp/ri$dp.txt"
    check "random init --data-parallel=$dp adam loss" grep -q '^adam/loss:0 f32\[\] checksum=0.652911 ' "$tmp/ri$dp.txt"
  done
  # centered RMSProp, Adadelta, Ftrl, FtrlV2 (tests/data/tf/mlp_optimizers_3): TensorFlow's losses
  # (1.0628021, 1.321841, 0.8504803, 0.8714072) over two replicas
  o3="$data/tf/mlp_optimizers_3"
  train "$o3" centered_rmsprop/loss:0,adadelta/loss:0,ftrl/loss:0,ftrl_v2/loss:0 2 "$tmp/o3.txt"
  check "centered rmsprop/adadelta/ftrl --data-parallel=2 exit 0" test $? -eq 0
  check "centered rmsprop loss" grep -q '^centered_rmsprop/loss:0 f32\[\] checksum=1.0628 ' "$tmp/o3.txt"
  check "adadelta loss" grep -q '^adadelta/loss:0 f32\[\] checksum=1.32184 ' "$tmp/o3.txt"
  check "ftrl loss" grep -q '^ftrl/loss:0 f32\[\] checksum=0.85048 ' "$tmp/o3.txt"
  check "ftrl v2 loss" grep -q '^ftrl_v2/loss:0 f32\[\] checksum=0.871407 ' "$tmp/o3.txt"
  "$opt" "$mt/graph.pb" --session --data-parallel=2 --devices=cpu:0 >/dev/null 2>"$tmp/e35.txt"
  check "--data-parallel=2 with one device: usage error" grep -q 'needs as many --devices' "$tmp/e35.txt"
fi

# a TensorFlow 2 SavedModel (a directory): read with its checkpoint, bound to a signature
sm="$data/tf2/saved_mlp/saved_model"
if [[ -d "$sm" ]]; then
  "$opt" "$sm" --passes=tf-frontend --run --input-shape=features:2,4 --input-format=saved_model >"$tmp/sm.txt" 2>&1
  check "SavedModel --run exit 0" test $? -eq 0
  check "SavedModel logits" grep -q '^logits f32\[2,3\] checksum=' "$tmp/sm.txt"
  check "SavedModel probabilities sum to 2" grep -q '^probabilities f32\[2,3\] checksum=2 ' "$tmp/sm.txt"
  "$opt" "$sm" --tf-signature=predict >/dev/null 2>"$tmp/e40.txt"
  check "SavedModel unknown signature: the known ones listed" grep -q "no signature 'predict' (it has serving_default)" "$tmp/e40.txt"
  "$opt" "$data/tf/while_one_var/graph.pb" --tf-signature=x >/dev/null 2>"$tmp/e41.txt"
  check "--tf-signature on a GraphDef: usage error" grep -q 'need a SavedModel input' "$tmp/e41.txt"
fi

# data parallelism on an ONNX model: batch-major outputs gathered back in batch order
if [[ -n "$model" ]]; then
  "$opt" "$model" --session --input-shape=0:2,3,7,5 >"$tmp/dp1.txt" 2>&1
  "$opt" "$model" --session --input-shape=0:2,3,7,5 --data-parallel=2 >"$tmp/dp2.txt" 2>&1
  check "onnx --data-parallel=2 exit 0" test $? -eq 0
  check "onnx --data-parallel=2 outputs equal" diff <(grep checksum "$tmp/dp1.txt") <(grep checksum "$tmp/dp2.txt")
fi

echo "$passes passed, $fails failed"
test "$fails" -eq 0
