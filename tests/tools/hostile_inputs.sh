#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpass-opt on hostile inputs (tests/data/hostile, made by scripts/make_hostile_inputs.py):
# each must end with exit status 1 and a clear `gpass:` error containing the expected words,
# never a crash, an "internal error", a hang (60 s; GPASS_HOSTILE_TIMEOUT seconds where set, as
# the sanitizer builds do: loop_forever.onnx runs gpass-opt's default 10^7 loop iterations before
# its limit stops it, about 5 s in a release build and over a minute under ASan) or more than
# 1.2 GB of memory. Prints one table row per input: exit status, peak RSS (when /usr/bin/time
# exists), first error line.
#   hostile_inputs.sh <gpass-opt> <tests/data dir> [tensorflow: 1 when gpass-opt reads GraphDefs] [onnx: 1]
set -u
opt=$1 data=$2/hostile tf=${3:-0} onnx=${4:-0}
limit=${GPASS_HOSTILE_TIMEOUT:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 rows=0
timer=()
[[ -x /usr/bin/time ]] && timer=(/usr/bin/time -f "%M" -o "$tmp/rss")

try() {  # try FILE EXPECTED-REGEX ARGS...
  local file=$1 want=$2; shift 2
  rm -f "$tmp/rss"
  timeout "$limit" "${timer[@]}" "$opt" "$@" "$data/$file" >"$tmp/out" 2>"$tmp/err"
  local status=$?
  local first rss="n/a"
  first=$(grep -m1 -E 'gpass' "$tmp/err" || head -n1 "$tmp/err")
  [[ -s "$tmp/rss" ]] && rss="$(($(tail -n1 "$tmp/rss") / 1024)) MB"
  printf '| %-28s | %4s | %8s | %s\n' "$file" "$status" "$rss" "${first:0:150}"
  rows=$((rows + 1))
  local ok=1
  [[ $status -eq 1 ]] || ok=0
  grep -q '^gpass' "$tmp/err" || ok=0
  grep -q 'internal error' "$tmp/err" && ok=0
  grep -Eq "$want" "$tmp/err" || ok=0
  if [[ -s "$tmp/rss" ]] && (($(tail -n1 "$tmp/rss") > 1200 * 1024)); then ok=0; fi
  if ((!ok)); then
    echo "FAIL: $file (expected exit 1 and an error matching '$want')"
    sed 's/^/    /' "$tmp/err" | head -5
    fails=$((fails + 1))
  fi
}

echo "| input                        | exit | peak RSS | first error line"
try empty.gir 'is empty'
mkdir -p "$tmp/dir.gir"
saved=$data
data=$tmp
try dir.gir 'is a directory'
data=$saved
try recursive_function.gir 'calls itself|max_call_depth' --run --no-verify
if [[ "$tf" == 1 ]]; then
  try empty.pb 'is empty' --passes=tf-frontend
  try tf_splat_const.pb 'max_tensor_bytes' --tf-fetches=big:0 --passes=tf-frontend --run
  try tf_reshape_overflow.pb 'overflow|int64' --passes=tf-frontend --run
fi
if [[ "$onnx" == 1 ]]; then
  try empty.onnx 'is empty'
  try truncated.onnx 'protobuf parsing failed|not an ONNX model'
  try reshape_overflow.onnx 'overflow|int64' --run
  try tile_huge.onnx 'max_tensor_bytes|overflow' --run
  try expand_wrap.onnx 'overflow|int64' --run
  try constant_of_shape_huge.onnx 'max_tensor_bytes|overflow' --run -O1
  try loop_forever.onnx 'max_loop_iterations' --run
  try unknown_attribute.onnx "attribute 'mode' is not defined by SpaceToDepth at opset 13"
  try future_opset.onnx 'opset 99'
  try if_nested_300.onnx 'nested deeper'
  try roi_align_huge_roi.onnx 'max_tensor_bytes' --run
  try dft_huge_length.onnx 'max_tensor_bytes' --run
  try depth_to_space_2e32.onnx 'overflow|int64|blocksize' --run
  try nchwc_conv_window_past_input.onnx 'NchwcConv.*does not fit' --run
  try nchwc_conv_zero_stride.onnx 'NchwcConv.*strides must be positive' --run
  try nchwc_conv_zero_dilation.onnx 'NchwcConv.*dilations must be positive' --run
  try nchwc_conv_negative_pad.onnx 'NchwcConv.*pads must be non-negative' --run
  try nchwc_conv_group_not_dividing.onnx 'NchwcConv.*multiple of group' --run
  try nchwc_conv_block_7.onnx 'block must be 8 or 16' --run
  try nchwc_conv_tanh.onnx "NchwcConv.*not 'Tanh'" --run
  try nchwc_conv_kernel_shape_not_w.onnx 'NchwcConv.*kernel_shape does not match' --run
  try nchwc_conv_residual_shape.onnx "NchwcConv.*Z must be" --run
  try nchwc_pool_zero_window.onnx 'NchwcAveragePool.*kernel_shape must be positive' --run
  try nchwc_reorder_channels_past_blocks.onnx 'NchwcReorderOutput.*does not hold 40 channels' --run
fi
echo "hostile inputs: $rows tried, $fails failed"
((fails == 0))
