#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Makes the ONNX fixtures of tests/onnx/functions.cpp with onnx's helpers and ONNX Runtime's
outputs as the references (committed; rerun only to change them):

    /tmp/optvenv/bin/python tests/data/onnx/make_fixtures.py

- local_functions.onnx: a model shaped like the ones PyTorch's dynamo exporter writes
  (opset 18, model-local functions in a `pkg.torch` domain): a function with attributes and a
  default (`LayerNormLike`: epsilon through `ref_attr_name`, called with and without it), a
  function calling another (`Mlp` -> `Gelu`), the opset-18 reductions with axes as an input.
- external_data.onnx + external_data.bin: weights stored beside the model
  (`data_location = EXTERNAL`).
- ort_contrib.onnx: ONNX Runtime's com.microsoft Gelu, BiasGelu, FastGelu, QuickGelu and
  SkipLayerNormalization.
- ort_contrib2.onnx: its SkipSimplifiedLayerNormalization, EmbedLayerNormalization (with
  segments, a mask and position ids; and a second one with none of them) and Attention (a
  0/1 mask, end positions, unidirectional with an attention bias).
- ort_contrib3.onnx: its MultiHeadAttention: self-attention with a bias and a 0/1 key padding
  mask, cross-attention with key lengths and an attention bias, per-head key and value, a
  decoder step with past_key / past_value (unidirectional; present_key / present_value out);
  Attention with its past state (a [B, P + S] mask, unidirectional; end positions); FusedMatMul
  with transBatchA / transBatchB (with and without transA / transB).
  (ONNX Runtime's CPU kernel takes no packed KV: tests/onnx/functions.cpp checks gpass's
  against separate K and V).
`make_fixtures.py NAME...` remakes only those fixtures.
Each model's input and ONNX Runtime's outputs are written as <name>.input_<k>.pb /
<name>.output_<k>.pb (TensorProto files).
"""
from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DOMAIN = "pkg.torch.2.9"
OPSETS = [helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1)]
rng = np.random.default_rng(7)


def save_io(name: str, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    sess = ort.InferenceSession(model.SerializeToString() if name != "external_data" else os.path.join(HERE, name + ".onnx"),
                                providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    for k, (n, v) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(HERE, f"{name}.input_{k}.pb"))
    for k, (o, v) in enumerate(zip(sess.get_outputs(), outs)):
        onnx.save_tensor(numpy_helper.from_array(v, o.name), os.path.join(HERE, f"{name}.output_{k}.pb"))


def local_functions() -> None:
    f = TensorProto.FLOAT
    # LayerNormLike(x, scale, bias) {epsilon = 1e-5, axis: the normalized axis (as an axes input)}
    eps = onnx.AttributeProto(name="value_float", ref_attr_name="epsilon", type=onnx.AttributeProto.FLOAT)
    eps_node = helper.make_node("Constant", [], ["eps"])
    eps_node.attribute.append(eps)
    ln = helper.make_function(
        DOMAIN, "LayerNormLike", ["x", "scale", "bias"], ["y"],
        [
            helper.make_node("Constant", [], ["axes"], value=numpy_helper.from_array(np.array([-1], np.int64))),
            helper.make_node("ReduceMean", ["x", "axes"], ["mean"]),
            helper.make_node("Sub", ["x", "mean"], ["d"]),
            helper.make_node("Mul", ["d", "d"], ["d2"]),
            helper.make_node("ReduceMean", ["d2", "axes"], ["var"]),
            eps_node,
            helper.make_node("Add", ["var", "eps"], ["ve"]),
            helper.make_node("Sqrt", ["ve"], ["sd"]),
            helper.make_node("Div", ["d", "sd"], ["n"]),
            helper.make_node("Mul", ["n", "scale"], ["ns"]),
            helper.make_node("Add", ["ns", "bias"], ["y"]),
        ],
        OPSETS, attributes=[])
    ln.attribute_proto.append(helper.make_attribute("epsilon", 1e-5))
    gelu = helper.make_function(
        DOMAIN, "Gelu", ["x"], ["y"],
        [
            helper.make_node("Constant", [], ["c"], value_float=0.7071067811865476),
            helper.make_node("Constant", [], ["half"], value_float=0.5),
            helper.make_node("Constant", [], ["one"], value_float=1.0),
            helper.make_node("Mul", ["x", "c"], ["xc"]),
            helper.make_node("Erf", ["xc"], ["e"]),
            helper.make_node("Add", ["e", "one"], ["e1"]),
            helper.make_node("Mul", ["x", "half"], ["xh"]),
            helper.make_node("Mul", ["xh", "e1"], ["y"]),
        ],
        OPSETS)
    mlp = helper.make_function(
        DOMAIN, "Mlp", ["x", "w1", "w2"], ["y"],
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"]),
            helper.make_node("Gelu", ["h"], ["g"], domain=DOMAIN),
            helper.make_node("MatMul", ["g", "w2"], ["y"]),
        ],
        OPSETS)
    d, h = 8, 16
    inits = [
        numpy_helper.from_array(rng.standard_normal((d, h)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.standard_normal((h, d)).astype(np.float32), "w2"),
        numpy_helper.from_array(rng.standard_normal(d).astype(np.float32), "scale"),
        numpy_helper.from_array(rng.standard_normal(d).astype(np.float32), "bias"),
        numpy_helper.from_array(np.array([1], np.int64), "red_axes"),
    ]
    nodes = [
        helper.make_node("Mlp", ["x", "w1", "w2"], ["m"], domain=DOMAIN, name="mlp"),
        helper.make_node("Add", ["x", "m"], ["r"]),
        helper.make_node("LayerNormLike", ["r", "scale", "bias"], ["n1"], domain=DOMAIN, name="ln1", epsilon=1e-3),
        helper.make_node("LayerNormLike", ["n1", "scale", "bias"], ["n2"], domain=DOMAIN, name="ln2"),
        helper.make_node("ReduceMax", ["n2", "red_axes"], ["mx"], keepdims=0),
        helper.make_node("ReduceL2", ["n2", "red_axes"], ["l2"], keepdims=1),
    ]
    graph = helper.make_graph(nodes, "torch_like", [helper.make_tensor_value_info("x", f, [2, 5, d])],
                              [helper.make_tensor_value_info("mx", f, [2, d]), helper.make_tensor_value_info("l2", f, [2, 1, d])],
                              inits)
    model = helper.make_model(graph, opset_imports=OPSETS, functions=[ln, gelu, mlp], producer_name="gpass-fixture",
                              ir_version=10)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "local_functions.onnx"))
    save_io("local_functions", model, {"x": rng.standard_normal((2, 5, d)).astype(np.float32)})


def external_data() -> None:
    f = TensorProto.FLOAT
    w = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"]), helper.make_node("Relu", ["y"], ["z"])],
        "external", [helper.make_tensor_value_info("x", f, [3, 64])], [helper.make_tensor_value_info("z", f, [3, 32])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="gpass-fixture",
                              ir_version=10)
    path = os.path.join(HERE, "external_data.onnx")
    if os.path.exists(os.path.join(HERE, "external_data.bin")):  # onnx appends to an existing file
        os.remove(os.path.join(HERE, "external_data.bin"))
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="external_data.bin",
                    size_threshold=0)
    save_io("external_data", model, {"x": rng.standard_normal((3, 64)).astype(np.float32)})


def ort_contrib() -> None:
    """ONNX Runtime's com.microsoft ops that its transformer optimizer writes."""
    f = TensorProto.FLOAT
    ms = "com.microsoft"
    h = 16
    inits = [numpy_helper.from_array(rng.standard_normal(h).astype(np.float32), n) for n in ("bias", "gamma", "beta", "sbias")]
    nodes = [
        helper.make_node("Gelu", ["x"], ["g"], domain=ms),
        helper.make_node("BiasGelu", ["x", "bias"], ["bg"], domain=ms),
        helper.make_node("FastGelu", ["x", "bias"], ["fg"], domain=ms),
        helper.make_node("QuickGelu", ["x"], ["qg"], domain=ms, alpha=1.5),
        helper.make_node("SkipLayerNormalization", ["x", "skip", "gamma", "beta", "sbias"], ["sln", "", "", "sum"], domain=ms,
                         epsilon=1e-5),
    ]
    outs = [helper.make_tensor_value_info(n, f, [2, 3, h]) for n in ("g", "bg", "fg", "qg", "sln", "sum")]
    graph = helper.make_graph(nodes, "ort_contrib", [helper.make_tensor_value_info("x", f, [2, 3, h]),
                                                     helper.make_tensor_value_info("skip", f, [2, 3, h])], outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)],
                              producer_name="gpass-fixture", ir_version=8)
    onnx.save(model, os.path.join(HERE, "ort_contrib.onnx"))
    save_io("ort_contrib", model, {"x": rng.standard_normal((2, 3, h)).astype(np.float32),
                                   "skip": rng.standard_normal((2, 3, h)).astype(np.float32)})


def ort_contrib2() -> None:
    """SkipSimplifiedLayerNormalization and EmbedLayerNormalization."""
    r = np.random.default_rng(11)
    f = TensorProto.FLOAT
    i32 = TensorProto.INT32
    ms = "com.microsoft"
    h, vocab, positions, segments, b, s = 16, 30, 12, 2, 2, 5
    def init(name, shape):
        return numpy_helper.from_array(r.standard_normal(shape).astype(np.float32), name)
    inits = [init("gamma", h), init("beta", h), init("sbias", h), init("word", (vocab, h)), init("pos", (positions, h)),
             init("seg", (segments, h)), init("qkv_w", (h, 3 * h)), init("qkv_b", 3 * h), init("abias", (1, 2, s, s))]
    inits.append(numpy_helper.from_array(np.array([3, 5], np.int32), "ends"))
    nodes = [
        helper.make_node("SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "sbias"], ["ssln", "", "inv", "sum"],
                         domain=ms, epsilon=1e-5),
        helper.make_node("EmbedLayerNormalization", ["ids", "segs", "word", "pos", "seg", "gamma", "beta", "mask", "pids"],
                         ["emb", "mask_index", "emb_sum"], domain=ms, epsilon=1e-5),
        helper.make_node("EmbedLayerNormalization", ["ids", "", "word", "pos", "", "gamma", "beta"], ["emb2", "mask_index2"],
                         domain=ms, epsilon=1e-5),
        helper.make_node("Attention", ["x", "qkv_w", "qkv_b", "mask"], ["att_mask"], domain=ms, num_heads=2),
        helper.make_node("Attention", ["x", "qkv_w", "qkv_b", "ends"], ["att_ends"], domain=ms, num_heads=4),
        helper.make_node("Attention", ["x", "qkv_w", "qkv_b", "", "", "abias"], ["att_causal"], domain=ms, num_heads=2,
                         unidirectional=1),
    ]
    outs = [helper.make_tensor_value_info("ssln", f, [b, s, h]), helper.make_tensor_value_info("inv", f, [b, s, 1]),
            helper.make_tensor_value_info("sum", f, [b, s, h]), helper.make_tensor_value_info("emb", f, [b, s, h]),
            helper.make_tensor_value_info("mask_index", i32, [b]), helper.make_tensor_value_info("emb_sum", f, [b, s, h]),
            helper.make_tensor_value_info("emb2", f, [b, s, h]), helper.make_tensor_value_info("mask_index2", i32, [b])]
    outs += [helper.make_tensor_value_info(n, f, [b, s, h]) for n in ("att_mask", "att_ends", "att_causal")]
    ins = [helper.make_tensor_value_info("x", f, [b, s, h]), helper.make_tensor_value_info("skip", f, [b, s, h]),
           helper.make_tensor_value_info("ids", i32, [b, s]), helper.make_tensor_value_info("segs", i32, [b, s]),
           helper.make_tensor_value_info("mask", i32, [b, s]), helper.make_tensor_value_info("pids", i32, [b, s])]
    graph = helper.make_graph(nodes, "ort_contrib2", ins, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)],
                              producer_name="gpass-fixture", ir_version=8)
    onnx.save(model, os.path.join(HERE, "ort_contrib2.onnx"))
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
    save_io("ort_contrib2", model, {
        "x": r.standard_normal((b, s, h)).astype(np.float32), "skip": r.standard_normal((b, s, h)).astype(np.float32),
        "ids": r.integers(0, vocab, (b, s)).astype(np.int32), "segs": r.integers(0, segments, (b, s)).astype(np.int32),
        "mask": mask, "pids": np.array([[4, 3, 2, 1, 0], [0, 2, 4, 6, 8]], np.int32)})


def ort_contrib3() -> None:
    """MultiHeadAttention in the forms ONNX Runtime's CPU kernel takes."""
    r = np.random.default_rng(13)
    f = TensorProto.FLOAT
    i32 = TensorProto.INT32
    ms = "com.microsoft"
    b, s, l, n, hd, p = 2, 4, 6, 2, 8, 3
    d = n * hd
    def rnd(*shape):
        return r.standard_normal(shape).astype(np.float32)
    inits = [numpy_helper.from_array(rnd(3 * d), "qkv_bias"), numpy_helper.from_array(rnd(1, n, s, l), "abias"),
             numpy_helper.from_array(np.array([6, 4], np.int32), "klens"), numpy_helper.from_array(rnd(d, 3 * d), "qkv_w"),
             numpy_helper.from_array(np.array([7, 5], np.int32), "klens3")]
    nodes = [
        helper.make_node("MultiHeadAttention", ["q", "q", "q", "qkv_bias", "qmask"], ["self"], domain=ms, num_heads=n),
        helper.make_node("MultiHeadAttention", ["q", "k", "v", "", "klens", "abias"], ["cross"], domain=ms, num_heads=n,
                         scale=0.3),
        helper.make_node("MultiHeadAttention", ["q", "kh", "vh"], ["per_head"], domain=ms, num_heads=n),
        helper.make_node("MultiHeadAttention", ["q", "q", "q", "qkv_bias", "", "", "pk", "pv"], ["step", "pres_k", "pres_v"],
                         domain=ms, num_heads=n, unidirectional=1),
        # Attention with its past state [2, B, N, P, H] and present out, a [B, P + S] mask
        helper.make_node("Attention", ["q", "qkv_w", "qkv_bias", "pmask", "past"], ["att_past", "present"], domain=ms,
                         num_heads=n, unidirectional=1),
        helper.make_node("Attention", ["q", "qkv_w", "qkv_bias", "klens3", "past"], ["att_past_ends", "present2"], domain=ms,
                         num_heads=n),
        # FusedMatMul reading an operand with its first dimension behind the batch ones
        helper.make_node("FusedMatMul", ["fa", "fb"], ["fm_batch_a"], domain=ms, transBatchA=1),
        helper.make_node("FusedMatMul", ["fa2", "fb2"], ["fm_batch_b"], domain=ms, transBatchB=1, transB=1, alpha=0.5),
        helper.make_node("FusedMatMul", ["fa3", "fb3"], ["fm_batch_ta"], domain=ms, transBatchA=1, transA=1),
    ]
    ins = [helper.make_tensor_value_info("q", f, [b, s, d]), helper.make_tensor_value_info("k", f, [b, l, d]),
           helper.make_tensor_value_info("v", f, [b, l, d]), helper.make_tensor_value_info("kh", f, [b, n, l, hd]),
           helper.make_tensor_value_info("vh", f, [b, n, l, hd]), helper.make_tensor_value_info("pk", f, [b, n, p, hd]),
           helper.make_tensor_value_info("pv", f, [b, n, p, hd]),
           helper.make_tensor_value_info("qmask", i32, [b, s]), helper.make_tensor_value_info("pmask", i32, [b, p + s]),
           helper.make_tensor_value_info("past", f, [2, b, n, p, hd]),
           helper.make_tensor_value_info("fa", f, [3, 2, 4, 5]), helper.make_tensor_value_info("fb", f, [2, 4, 5, 6]),
           helper.make_tensor_value_info("fa2", f, [2, 4, 3, 5]), helper.make_tensor_value_info("fb2", f, [6, 2, 4, 5]),
           helper.make_tensor_value_info("fa3", f, [5, 2, 4, 3]), helper.make_tensor_value_info("fb3", f, [2, 4, 5, 6])]
    outs = [helper.make_tensor_value_info(x, f, [b, s, d]) for x in ("self", "cross", "per_head", "step")]
    outs += [helper.make_tensor_value_info(x, f, [b, n, p + s, hd]) for x in ("pres_k", "pres_v")]
    outs += [helper.make_tensor_value_info("att_past", f, [b, s, d]), helper.make_tensor_value_info("present", f, [2, b, n, p + s, hd]),
             helper.make_tensor_value_info("att_past_ends", f, [b, s, d]),
             helper.make_tensor_value_info("present2", f, [2, b, n, p + s, hd])]
    outs += [helper.make_tensor_value_info(x, f, None) for x in ("fm_batch_a", "fm_batch_b", "fm_batch_ta")]
    graph = helper.make_graph(nodes, "ort_contrib3", ins, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)],
                              producer_name="gpass-fixture", ir_version=8)
    onnx.save(model, os.path.join(HERE, "ort_contrib3.onnx"))
    save_io("ort_contrib3", model, {
        "q": rnd(b, s, d), "k": rnd(b, l, d), "v": rnd(b, l, d), "kh": rnd(b, n, l, hd), "vh": rnd(b, n, l, hd),
        "pk": rnd(b, n, p, hd), "pv": rnd(b, n, p, hd),
        "qmask": np.array([[1, 1, 1, 0], [1, 1, 1, 1]], np.int32),
        "pmask": np.array([[1, 1, 1, 1, 1, 1, 0], [0, 1, 1, 1, 1, 1, 1]], np.int32), "past": rnd(2, b, n, p, hd),
        "fa": rnd(3, 2, 4, 5), "fb": rnd(2, 4, 5, 6), "fa2": rnd(2, 4, 3, 5), "fb2": rnd(6, 2, 4, 5), "fa3": rnd(5, 2, 4, 3),
        "fb3": rnd(2, 4, 5, 6)})


if __name__ == "__main__":
    import sys
    makers = {"local_functions": local_functions, "external_data": external_data, "ort_contrib": ort_contrib,
              "ort_contrib2": ort_contrib2, "ort_contrib3": ort_contrib3}
    for name in sys.argv[1:] or list(makers):
        makers[name]()
