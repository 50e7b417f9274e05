#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/data/hostile/: small model files an attacker could hand gpass, one per class of
bad input (size arithmetic that overflows, resource exhaustion, runaway loops and recursion,
strictness about versions and attributes, malformed files). tests/tools/hostile_inputs.sh
runs gpass-opt on each and requires a clear `gpass:` error (exit 1) within the limits, and
the fuzz replay tests (fuzz.replay.onnx, fuzz.replay.run) replay the ONNX ones.
Needs the onnx Python package (pip install onnx); run from the repository root.
"""
import os
import struct

import onnx
from onnx import TensorProto, helper

out = "tests/data/hostile"
os.makedirs(out, exist_ok=True)


def varint(n):
    b = b""
    while True:
        x = n & 0x7F
        n >>= 7
        if n:
            b += bytes([x | 0x80])
        else:
            return b + bytes([x])


def save(name, graph, opset=17, **kw):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kw)
    m.ir_version = 8
    with open(os.path.join(out, name), "wb") as f:
        f.write(m.SerializeToString())


def const(name, values, dtype=TensorProto.INT64, dims=None):
    dims = [len(values)] if dims is None else dims
    return helper.make_node("Constant", [], [name], value=helper.make_tensor(name + "_v", dtype, dims, values))


f32 = TensorProto.FLOAT
x6 = helper.make_tensor_value_info("x", f32, [6])

# Reshape to sizes whose product overflows int64, then Gather from it
save("reshape_overflow.onnx", helper.make_graph(
    [const("s", [1 << 33, 1 << 33, -1]), helper.make_node("Reshape", ["x", "s"], ["r"]),
     const("i", [5]), helper.make_node("Gather", ["r", "i"], ["y"])],
    "reshape_overflow", [x6], [helper.make_tensor_value_info("y", f32, None)]))

# Tile by 2^40 along one axis: the output size overflows nothing but no machine holds it
save("tile_huge.onnx", helper.make_graph(
    [const("rep", [1 << 40]), helper.make_node("Tile", ["x", "rep"], ["y"])],
    "tile_huge", [x6], [helper.make_tensor_value_info("y", f32, None)]))

# ConstantOfShape of 10^12 elements
save("constant_of_shape_huge.onnx", helper.make_graph(
    [const("shape", [1000000, 1000000]), helper.make_node("ConstantOfShape", ["shape"], ["y"])],
    "constant_of_shape_huge", [], [helper.make_tensor_value_info("y", f32, None)]))

# Expand whose shape product wraps around int64 (2^32 * 2^32)
save("expand_wrap.onnx", helper.make_graph(
    [const("shape", [1 << 32, 1 << 32, 6]), helper.make_node("Expand", ["x", "shape"], ["y"])],
    "expand_wrap", [x6], [helper.make_tensor_value_info("y", f32, None)]))

# Loop with trip count 2^62 and a body that does nothing
body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"])],
    "body",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, [])])
save("loop_forever.onnx", helper.make_graph(
    [const("M", [1 << 62], dims=[]), helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c_v", TensorProto.BOOL, [], [True])),
     helper.make_node("Loop", ["M", "c"], [], body=body),
     helper.make_node("Identity", ["x"], ["y"])],
    "loop_forever", [x6], [helper.make_tensor_value_info("y", f32, [6])]))
# (the Loop has no outputs: make it needed by giving it one loop-carried value instead)
body2 = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Identity", ["v_in"], ["v_out"])],
    "body",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
     helper.make_tensor_value_info("v_in", f32, [6])],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("v_out", f32, [6])])
save("loop_forever.onnx", helper.make_graph(
    [const("M", [1 << 62], dims=[]), helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c_v", TensorProto.BOOL, [], [True])),
     helper.make_node("Loop", ["M", "c", "x"], ["y"], body=body2)],
    "loop_forever", [x6], [helper.make_tensor_value_info("y", f32, [6])]))

# values and attributes that sized work or scratch beyond the input and output (2026-11-29):
# a RoiAlign box of 10^13 pixels (10^26 samples per bin), a DFT of 10^9 + 7 points of one
# sample (48 GB of Bluestein tables before its 8 GB output was checked), DepthToSpace with
# blocksize 2^32 (b * b wrapped to 0: SIGFPE)
x44 = helper.make_tensor_value_info("x", f32, [1, 1, 4, 4])
save("roi_align_huge_roi.onnx", helper.make_graph(
    [const("rois", [0.0, 0.0, 1e13, 1e13], dtype=f32, dims=[1, 4]), const("b", [0]),
     helper.make_node("RoiAlign", ["x", "rois", "b"], ["y"])],
    "roi_align_huge_roi", [x44], [helper.make_tensor_value_info("y", f32, None)]), opset=16)
x111 = helper.make_tensor_value_info("x", f32, [1, 1, 1])
save("dft_huge_length.onnx", helper.make_graph(
    [const("n", [1000000007], dims=[]), helper.make_node("DFT", ["x", "n"], ["y"], axis=1)],
    "dft_huge_length", [x111], [helper.make_tensor_value_info("y", f32, None)]), opset=17)
save("depth_to_space_2e32.onnx", helper.make_graph(
    [helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=1 << 32)],
    "depth_to_space_2e32", [x44], [helper.make_tensor_value_info("y", f32, None)]), opset=13)

# an attribute the op's version does not define (SpaceToDepth-13 has no `mode`)
x4 = helper.make_tensor_value_info("x", f32, [1, 4, 2, 2])
save("unknown_attribute.onnx", helper.make_graph(
    [helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2, mode="CRD")],
    "unknown_attribute", [x4], [helper.make_tensor_value_info("y", f32, None)]), opset=13)

# (an op version gpass does not have: none of onnx 1.23's default-domain ops has one left; the
# importer's check of `onnx_op_version` against the schemas' since_version stays for newer
# releases)

# an opset no ONNX release has yet
save("future_opset.onnx", helper.make_graph(
    [helper.make_node("Relu", ["x"], ["y"])],
    "future_opset", [x6], [helper.make_tensor_value_info("y", f32, [6])]), opset=99)

# gpass's channel-blocked ops (domain "gpass", what -O3's nchwc-layout makes) with bad
# attributes or operands: each must be refused by name (NCHWc kernels read raw blocked
# buffers, so a geometry they accepted wrongly would read out of bounds)
def nchwc_save(name, nodes, x_shape, inits):
    g = helper.make_graph(nodes, name[:-5], [helper.make_tensor_value_info("x", f32, x_shape)],
                          [helper.make_tensor_value_info("y", f32, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("gpass", 1)])
    m.ir_version = 8
    with open(os.path.join(out, name), "wb") as f:
        f.write(m.SerializeToString())


def nchwc_conv(name, x_shape, w_shape, block=16, z=False, **attrs):
    ones = helper.make_tensor("w", f32, w_shape, [0.5] * (w_shape[0] * w_shape[1] * w_shape[2] * w_shape[3]))
    nodes = [helper.make_node("NchwcReorderInput", ["x"], ["xb"], domain="gpass", block=block),
             helper.make_node("NchwcConv", ["xb", "w"] + (["", "xb"] if z else []), ["c"], domain="gpass", block=block,
                              **attrs),
             helper.make_node("NchwcReorderOutput", ["c"], ["y"], domain="gpass", channels=w_shape[0])]
    nchwc_save(name, nodes, x_shape, [ones])


nchwc_conv("nchwc_conv_window_past_input.onnx", [1, 16, 3, 3], [1, 16, 7, 7])
nchwc_conv("nchwc_conv_zero_stride.onnx", [1, 16, 6, 6], [1, 16, 3, 3], strides=[0, 0])
nchwc_conv("nchwc_conv_zero_dilation.onnx", [1, 16, 6, 6], [1, 16, 3, 3], dilations=[0, 1])
nchwc_conv("nchwc_conv_negative_pad.onnx", [1, 16, 6, 6], [1, 16, 3, 3], pads=[-1, 0, 0, 0])
nchwc_conv("nchwc_conv_group_not_dividing.onnx", [1, 16, 6, 6], [16, 16, 3, 3], group=3)
nchwc_conv("nchwc_conv_block_7.onnx", [1, 16, 6, 6], [1, 16, 1, 1], block=7)
nchwc_conv("nchwc_conv_tanh.onnx", [1, 16, 6, 6], [1, 16, 1, 1], activation="Tanh")
nchwc_conv("nchwc_conv_kernel_shape_not_w.onnx", [1, 16, 6, 6], [1, 16, 3, 3], kernel_shape=[5, 5])
nchwc_conv("nchwc_conv_residual_shape.onnx", [1, 16, 6, 6], [32, 16, 1, 1], z=True)
nchwc_save("nchwc_pool_zero_window.onnx", [
    helper.make_node("NchwcReorderInput", ["x"], ["xb"], domain="gpass", block=16),
    helper.make_node("NchwcAveragePool", ["xb"], ["p"], domain="gpass", block=16, kernel_shape=[0, 3]),
    helper.make_node("NchwcReorderOutput", ["p"], ["y"], domain="gpass", channels=20)], [1, 20, 7, 7], [])
nchwc_save("nchwc_reorder_channels_past_blocks.onnx", [
    helper.make_node("NchwcReorderInput", ["x"], ["xb"], domain="gpass", block=16),
    helper.make_node("NchwcReorderOutput", ["xb"], ["y"], domain="gpass", channels=40)], [1, 20, 7, 7], [])

# If nested 300 deep (built as bytes: the Python protobuf refuses messages this deep)
def pb_field(num, payload):  # a length-delimited field
    key = (num << 3) | 2
    return bytes([key]) + varint(len(payload)) + payload


leaf = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "leaf", [], [helper.make_tensor_value_info("e", f32, [6])])
graph_bytes = helper.make_graph([helper.make_node("Identity", ["x"], ["y0"])], "level", [],
                                [helper.make_tensor_value_info("y0", f32, [6])]).SerializeToString()
for d in range(300):
    node = helper.make_node("If", ["c"], [f"y{d + 1}"], else_branch=leaf).SerializeToString()
    then_attr = pb_field(1, b"then_branch") + pb_field(6, graph_bytes) + varint(20 << 3) + bytes([5])  # type GRAPH
    node += pb_field(5, then_attr)
    out_info = helper.make_tensor_value_info(f"y{d + 1}", f32, [6]).SerializeToString()
    graph_bytes = pb_field(1, node) + pb_field(2, f"level{d}".encode()) + pb_field(12, out_info)
top = helper.make_graph([helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c_v", TensorProto.BOOL, [], [True]))],
                        "if_nested_300", [x6], []).SerializeToString()
top += pb_field(1, helper.make_node("Identity", ["y300"], ["y"]).SerializeToString())
top += pb_field(12, helper.make_tensor_value_info("y", f32, [6]).SerializeToString())
# splice the deepest If (the last `node` built) into the top graph, before the Identity
top_graph = top[: top.index(pb_field(1, helper.make_node("Identity", ["y300"], ["y"]).SerializeToString()))] + pb_field(1, node) + top[top.index(pb_field(1, helper.make_node("Identity", ["y300"], ["y"]).SerializeToString())):]
model = helper.make_model(helper.make_graph([], "placeholder", [], []), opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
model.ClearField("graph")
open(os.path.join(out, "if_nested_300.onnx"), "wb").write(model.SerializeToString() + pb_field(7, top_graph))

# a model file cut in the middle
whole = open(os.path.join(out, "tile_huge.onnx"), "rb").read()
open(os.path.join(out, "truncated.onnx"), "wb").write(whole[: len(whole) // 2])
# empty files
for name in ("empty.onnx", "empty.pb", "empty.gir"):
    open(os.path.join(out, name), "wb").close()


# TensorFlow: a 10^9-element Const of one repeated value (a splat) in a few hundred bytes
def field(num, wire, payload):
    key = varint((num << 3) | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def attr_entry(key, value):  # NodeDef.attr map entry: key=1, value=2 (AttrValue)
    return field(5, 2, field(1, 2, key.encode()) + field(2, 2, value))


dim = field(2, 2, field(1, 0, varint(1000)))  # TensorShapeProto.dim { size: 1000 }
shape3 = dim * 3
tensor = field(1, 0, varint(1)) + field(2, 2, shape3) + field(5, 5, struct.pack("<f", 1.0))  # dtype, tensor_shape, float_val
const_node = field(1, 2, b"big") + field(2, 2, b"Const") + attr_entry("dtype", field(6, 0, varint(1))) + attr_entry("value", field(8, 2, tensor))
open(os.path.join(out, "tf_splat_const.pb"), "wb").write(field(1, 2, const_node))

# TensorFlow: Reshape of a constant to sizes whose product wraps (constant propagation runs it)
def tf_const_int64(name, values):
    t = field(1, 0, varint(9)) + field(2, 2, field(2, 2, field(1, 0, varint(len(values))))) + b"".join(field(10, 0, varint(v & ((1 << 64) - 1))) for v in values)
    return field(1, 2, name.encode()) + field(2, 2, b"Const") + attr_entry("dtype", field(6, 0, varint(9))) + attr_entry("value", field(8, 2, t))


def tf_node(name, op, inputs, attrs=b""):
    return field(1, 2, name.encode()) + field(2, 2, op.encode()) + b"".join(field(3, 2, i.encode()) for i in inputs) + attrs


t_attr = attr_entry("T", field(6, 0, varint(9))) + attr_entry("Tshape", field(6, 0, varint(9)))
gd = (field(1, 2, tf_const_int64("x", [1, 2, 3, 4, 5, 6])) + field(1, 2, tf_const_int64("s", [1 << 33, 1 << 33, -1]))
      + field(1, 2, tf_node("r", "Reshape", ["x", "s"], t_attr))
      + field(1, 2, tf_const_int64("i", [5]))
      + field(1, 2, tf_node("g", "GatherV2", ["r", "i", "axis"], attr_entry("Tparams", field(6, 0, varint(9))) + attr_entry("Tindices", field(6, 0, varint(9))) + attr_entry("Taxis", field(6, 0, varint(9)))))
      + field(1, 2, tf_const_int64("axis", [0])))
open(os.path.join(out, "tf_reshape_overflow.pb"), "wb").write(gd)

# text IR: a function that calls itself
open(os.path.join(out, "recursive_function.gir"), "w").write("""# A function that calls itself through an If: never ends without the call-depth limit.
graph {
  %x = arg() {index = 0} -> (f32[2])
  %c = Constant() {value = tensor<bool[]> [true]} -> (bool[])
  %y = If(%c, %x) {then_branch = @f, else_branch = @f, _captures = 1} -> (f32[2])
  %r:0 = return(%y)
}

func @f {
  %e = function_entry() {names = ["x"]} -> (f32[2])
  %c = Constant() {value = tensor<bool[]> [true]} -> (bool[])
  %y = If(%c, %e) {then_branch = @f, else_branch = @f, _captures = 1} -> (f32[2])
  %r:0 = return(%y)
}
""")
print("wrote", len(os.listdir(out)), "files to", out)
