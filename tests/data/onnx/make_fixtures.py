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
- onnx_ml.onnx: ai.onnx.ml's ArrayFeatureExtractor (numbers and strings), Binarizer,
  LabelEncoder (strings to int64 with keys_strings, floats to strings with a NaN key, int64 to
  float through keys_tensor / values_tensor / default_tensor) and TreeEnsemble (SUM with
  a BRANCH_MEMBER node and NaN inputs that follow nodes_missing_value_tracks_true, AVERAGE over
  three targets with a one-leaf tree), with ONNX Runtime's outputs.
- onnx_ml_classic.onnx: the classic ai.onnx.ml models scikit-learn's converters write
  (LinearClassifier / LinearRegressor, SVMClassifier with each kernel, votes, probabilities and
  the binary case, SVMRegressor with one_class, TreeEnsembleRegressor and
  TreeEnsembleClassifier 3 with each aggregate, base values, missing-value tracking, the
  binary forest and boosting forms, double thresholds and weights) and their preprocessing
  (Scaler, Normalizer, Imputer, OneHotEncoder, FeatureVectorizer, CategoryMapper), with ONNX
  Runtime's outputs; float, double and int64 inputs.
- onnx_preview.onnx: ai.onnx.preview's FlexAttention (grouped-query heads with a score_mod
  that adds a bias captured from the outer graph and a causal mask; a prob_mod and an explicit
  scale; float16) and ai.onnx.preview.training's Adagrad, Adam and Momentum (two tensors each,
  Nesterov): ONNX Runtime has no kernels for them, so the references are onnx's own
  (`onnx.reference.ReferenceEvaluator`).
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


def save_io_reference(name: str, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    """As save_io, with onnx's reference evaluator computing the outputs."""
    from onnx.reference import ReferenceEvaluator
    outs = ReferenceEvaluator(model).run(None, feeds)
    for k, (n, v) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(v, n), os.path.join(HERE, f"{name}.input_{k}.pb"))
    for k, (o, v) in enumerate(zip(model.graph.output, outs)):
        onnx.save_tensor(numpy_helper.from_array(np.asarray(v), o.name), os.path.join(HERE, f"{name}.output_{k}.pb"))


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


def onnx_ml() -> None:
    """ai.onnx.ml ops as scikit-learn converters write them."""
    r = np.random.default_rng(21)
    f, i64, s = TensorProto.FLOAT, TensorProto.INT64, TensorProto.STRING
    ml = "ai.onnx.ml"
    # (no post_transform: ONNX Runtime numbers them LOGISTIC 1, SOFTMAX 2, where ONNX says SOFTMAX 1,
    # LOGISTIC 2; tests/onnx/functions.cpp checks gpass's transforms by themselves)
    # two trees over 3 features, SUM, one target; node 0 of tree 0 tracks NaN to true
    t1 = dict(nodes_featureids=[0, 2, 1], nodes_modes=numpy_helper.from_array(np.array([0, 3, 6], np.uint8), "m"),
              nodes_splits=numpy_helper.from_array(np.array([0.1, -0.2, 0.0], np.float32), "s"),
              nodes_truenodeids=[0, 1, 2], nodes_trueleafs=[1, 1, 1], nodes_falsenodeids=[1, 2, 3],
              nodes_falseleafs=[1, 1, 1], nodes_missing_value_tracks_true=[1, 0, 0],
              membership_values=numpy_helper.from_array(np.array([1.0, 3.0, np.nan], np.float32), "mv"),
              leaf_targetids=[0, 0, 0, 0], leaf_weights=numpy_helper.from_array(np.array([0.5, -1.25, 2.0, 0.75], np.float32), "w"),
              tree_roots=[0, 2], n_targets=1, aggregate_function=1)
    # one deeper tree and a one-leaf tree (both branches the same leaf), AVERAGE over 3 targets
    t2 = dict(nodes_featureids=[1, 0, 2, 0], nodes_modes=numpy_helper.from_array(np.array([1, 2, 0, 0], np.uint8), "m"),
              nodes_splits=numpy_helper.from_array(np.array([0.0, 0.3, 0.5, 0.0], np.float32), "s"),
              nodes_truenodeids=[1, 0, 2, 4], nodes_trueleafs=[0, 1, 1, 1], nodes_falsenodeids=[2, 1, 3, 4],
              nodes_falseleafs=[0, 1, 1, 1],
              leaf_targetids=[0, 1, 2, 0, 2], leaf_weights=numpy_helper.from_array(np.array([1.0, 2.0, -1.0, 0.5, 3.0], np.float32), "w"),
              tree_roots=[0, 3], n_targets=3, aggregate_function=0)
    nodes = [
        helper.make_node("ArrayFeatureExtractor", ["x", "idx"], ["afe"], domain=ml),
        helper.make_node("ArrayFeatureExtractor", ["names", "idx1"], ["afe_s"], domain=ml),
        helper.make_node("Binarizer", ["xb"], ["bin"], domain=ml, threshold=0.25),  # ORT refuses NaN here
        # (no repeated key: ONNX says the last one counts, ONNX Runtime takes the first)
        helper.make_node("LabelEncoder", ["names"], ["codes"], domain=ml, keys_strings=["cat", "dog", "eel"],
                         values_int64s=[3, 5, 7], default_int64=-4),
        helper.make_node("LabelEncoder", ["x_keys"], ["labels"], domain=ml, keys_floats=[0.5, float("nan"), -1.0],
                         values_strings=["half", "nan", "minus"], default_string="other"),
        helper.make_node("LabelEncoder", ["ids"], ["weights"], domain=ml,
                         keys_tensor=numpy_helper.from_array(np.array([1, 2, 3], np.int64), "k"),
                         values_tensor=numpy_helper.from_array(np.array([0.5, 1.5, 2.5], np.float32), "v"),
                         default_tensor=numpy_helper.from_array(np.array([-9.0], np.float32), "d")),
        helper.make_node("TreeEnsemble", ["x"], ["te_sum"], domain=ml, **t1),
        helper.make_node("TreeEnsemble", ["x"], ["te_avg"], domain=ml, **t2),
    ]
    ins = [helper.make_tensor_value_info("x", f, [6, 3]), helper.make_tensor_value_info("idx", i64, [2]),
           helper.make_tensor_value_info("names", s, [2, 3]), helper.make_tensor_value_info("idx1", i64, [1, 2]),
           helper.make_tensor_value_info("x_keys", f, [5]), helper.make_tensor_value_info("ids", i64, [2, 2]),
           helper.make_tensor_value_info("xb", f, [2, 3])]
    outs = [helper.make_tensor_value_info("afe", f, [6, 2]), helper.make_tensor_value_info("afe_s", s, [2, 2]),
            helper.make_tensor_value_info("bin", f, [2, 3]), helper.make_tensor_value_info("codes", i64, [2, 3]),
            helper.make_tensor_value_info("labels", s, [5]), helper.make_tensor_value_info("weights", f, [2, 2]),
            helper.make_tensor_value_info("te_sum", f, [6, 1]), helper.make_tensor_value_info("te_avg", f, [6, 3])]
    graph = helper.make_graph(nodes, "onnx_ml", ins, outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(ml, 5)],
                              producer_name="gpass-fixture", ir_version=10)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "onnx_ml.onnx"))
    x = r.uniform(-1, 1, (6, 3)).astype(np.float32)
    x[1, 0] = np.nan  # tracks true at tree 0's root
    x[2, 1] = 3.0     # a member of tree 1's set
    x[3, 1] = 1.0
    save_io("onnx_ml", model, {
        "x": x, "idx": np.array([2, 0], np.int64),
        "names": np.array([["dog", "cat", "fox"], ["eel", "dog", "cow"]], dtype=object), "idx1": np.array([[2, 1]], np.int64),
        "x_keys": np.array([0.5, np.nan, -1.0, 2.0, -0.0], np.float32), "ids": np.array([[3, 1], [7, 2]], np.int64),
        "xb": np.array([[0.25, 0.3, -1.0], [0.0, 2.0, 0.2499]], np.float32)})


def onnx_preview() -> None:
    """ai.onnx.preview's FlexAttention and ai.onnx.preview.training's optimizers."""
    r = np.random.default_rng(23)
    f, f16, i64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64
    pv, tr = "ai.onnx.preview", "ai.onnx.preview.training"
    b, hq, hkv, lq, lk, e, ev = 2, 4, 2, 3, 5, 8, 6
    # score_mod: scores + a bias, then a causal mask (keys j <= i + 2); once with the bias and
    # mask inside the function, once captured from the outer graph (onnx's reference evaluator
    # cannot run captures: its output is the first one's, computed from the inside variant)
    rel_bias = r.standard_normal((1, 1, lq, lk)).astype(np.float32)
    causal = np.arange(lk)[None, :] <= np.arange(lq)[:, None] + 2

    def score_mod(inside: bool) -> onnx.GraphProto:
        score_nodes = [helper.make_node("Add", ["scores", "rel_bias"], ["biased"]),
                       helper.make_node("Where", ["causal", "biased", "neg_inf"], ["scores_out"])]
        inits = [numpy_helper.from_array(np.array(-np.inf, np.float32), "neg_inf")]
        if inside:
            inits += [numpy_helper.from_array(rel_bias, "rel_bias"), numpy_helper.from_array(causal, "causal")]
        return helper.make_graph(score_nodes, "score_mod", [helper.make_tensor_value_info("scores", f, None)],
                                 [helper.make_tensor_value_info("scores_out", f, None)], inits)

    prob_mod = helper.make_graph([helper.make_node("Mul", ["probs", "two"], ["probs_out"])], "prob_mod",
                                 [helper.make_tensor_value_info("probs", f, None)], [helper.make_tensor_value_info("probs_out", f, None)],
                                 [numpy_helper.from_array(np.array(2.0, np.float32), "two")])
    nodes = [
        helper.make_node("FlexAttention", ["q", "k", "v"], ["gqa_mod"], domain=pv, score_mod=score_mod(True)),
        helper.make_node("FlexAttention", ["q", "k", "v"], ["gqa_capture"], domain=pv, score_mod=score_mod(False)),
        helper.make_node("FlexAttention", ["q", "k", "v"], ["scaled_prob"], domain=pv, prob_mod=prob_mod, scale=0.2),
        helper.make_node("FlexAttention", ["qh", "kh", "vh"], ["half"], domain=pv),
        helper.make_node("Adagrad", ["R", "T", "x1", "x2", "g1", "g2", "h1", "h2"], ["ag_x1", "ag_x2", "ag_h1", "ag_h2"], domain=tr,
                         decay_factor=0.1, epsilon=1e-5, norm_coefficient=0.01),
        helper.make_node("Adam", ["R", "T", "x1", "x2", "g1", "g2", "h1", "h2", "h1", "h2"],
                         ["ad_x1", "ad_x2", "ad_v1", "ad_v2", "ad_h1", "ad_h2"], domain=tr, alpha=0.9, beta=0.99, epsilon=1e-3,
                         norm_coefficient=0.01, norm_coefficient_post=0.02),
        helper.make_node("Momentum", ["R", "T", "x1", "x2", "g1", "g2", "h1", "h2"], ["mo_x1", "mo_x2", "mo_v1", "mo_v2"], domain=tr,
                         alpha=0.9, beta=0.5, mode="nesterov", norm_coefficient=0.01),
    ]
    inits = [numpy_helper.from_array(rel_bias, "rel_bias"), numpy_helper.from_array(causal, "causal")]
    ins = [helper.make_tensor_value_info("q", f, [b, hq, lq, e]), helper.make_tensor_value_info("k", f, [b, hkv, lk, e]),
           helper.make_tensor_value_info("v", f, [b, hkv, lk, ev]), helper.make_tensor_value_info("qh", f16, [1, 2, lq, e]),
           helper.make_tensor_value_info("kh", f16, [1, 2, lk, e]), helper.make_tensor_value_info("vh", f16, [1, 2, lk, ev]),
           helper.make_tensor_value_info("R", f, []), helper.make_tensor_value_info("T", i64, []),
           helper.make_tensor_value_info("x1", f, [4]), helper.make_tensor_value_info("x2", f, [2, 3]),
           helper.make_tensor_value_info("g1", f, [4]), helper.make_tensor_value_info("g2", f, [2, 3]),
           helper.make_tensor_value_info("h1", f, [4]), helper.make_tensor_value_info("h2", f, [2, 3])]
    outs = [helper.make_tensor_value_info("gqa_mod", f, [b, hq, lq, ev]), helper.make_tensor_value_info("gqa_capture", f, [b, hq, lq, ev]),
            helper.make_tensor_value_info("scaled_prob", f, [b, hq, lq, ev]),
            helper.make_tensor_value_info("half", f16, [1, 2, lq, ev])]
    for p in ("ag", "ad", "mo"):
        outs += [helper.make_tensor_value_info(f"{p}_x1", f, [4]), helper.make_tensor_value_info(f"{p}_x2", f, [2, 3])]
        if p == "ad":
            outs += [helper.make_tensor_value_info("ad_v1", f, [4]), helper.make_tensor_value_info("ad_v2", f, [2, 3])]
        outs += [helper.make_tensor_value_info(f"{p}_{'v' if p == 'mo' else 'h'}1", f, [4]),
                 helper.make_tensor_value_info(f"{p}_{'v' if p == 'mo' else 'h'}2", f, [2, 3])]
    graph = helper.make_graph(nodes, "onnx_preview", ins, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid(pv, 1), helper.make_opsetid(tr, 1)],
                              producer_name="gpass-fixture", ir_version=10)
    onnx.save(model, os.path.join(HERE, "onnx_preview.onnx"))
    reference = onnx.ModelProto()
    reference.CopyFrom(model)
    reference.graph.node[1].attribute[0].g.CopyFrom(score_mod(True))
    rnd = lambda *shape: r.standard_normal(shape).astype(np.float32)
    save_io_reference("onnx_preview", reference, {
        "q": rnd(b, hq, lq, e), "k": rnd(b, hkv, lk, e), "v": rnd(b, hkv, lk, ev), "qh": rnd(1, 2, lq, e).astype(np.float16),
        "kh": rnd(1, 2, lk, e).astype(np.float16), "vh": rnd(1, 2, lk, ev).astype(np.float16),
        "R": np.array(0.1, np.float32), "T": np.array(3, np.int64), "x1": rnd(4), "x2": rnd(2, 3), "g1": rnd(4), "g2": rnd(2, 3),
        "h1": np.abs(rnd(4)), "h2": np.abs(rnd(2, 3))})


def _classic_trees(r: np.random.Generator, n_trees: int, depth: int, features: int, outputs: int, prefix: str,
                   positive: bool = False, per_leaf: int = 1, scale: float = 1.0) -> dict:
    """Random complete trees in the classic nodes_* / <prefix>_* attributes: every mode, splits and
    inputs on a 0.25 grid (so that the EQ, NEQ and the strict and non-strict modes all decide
    some rows), missing values tracked at random (NEQ nodes always to true: there ONNX Runtime
    sends NaN to the true branch whatever the flag, the spec by the flag)."""
    modes = ["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"]
    a = {k: [] for k in ("nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
                         "nodes_truenodeids", "nodes_falsenodeids", "nodes_missing_value_tracks_true")}
    w = {f"{prefix}_{k}": [] for k in ("treeids", "nodeids", "ids", "weights")}
    for t in range(n_trees):
        count = 2 ** (depth + 1) - 1
        # node ids in a shuffled order: the tree's root is still its first listed node
        ids = [0] + list(r.permutation(np.arange(1, count)))
        for k in range(count):
            leaf = k >= 2 ** depth - 1
            mode = "LEAF" if leaf else modes[int(r.integers(0, len(modes)))]
            a["nodes_treeids"].append(t)
            a["nodes_nodeids"].append(int(ids[k]))
            a["nodes_featureids"].append(0 if leaf else int(r.integers(0, features)))
            a["nodes_modes"].append(mode)
            a["nodes_values"].append(0.0 if leaf else float(r.integers(-3, 4)) * 0.25)
            a["nodes_truenodeids"].append(0 if leaf else int(ids[2 * k + 1]))
            a["nodes_falsenodeids"].append(0 if leaf else int(ids[2 * k + 2]))
            a["nodes_missing_value_tracks_true"].append(1 if mode == "BRANCH_NEQ" else int(r.integers(0, 2)))
            if leaf:
                for o in r.choice(outputs, size=min(per_leaf, outputs), replace=False):
                    v = float(r.uniform(0, 1) if positive else r.uniform(-1, 1)) * scale
                    w[f"{prefix}_treeids"].append(t)
                    w[f"{prefix}_nodeids"].append(int(ids[k]))
                    w[f"{prefix}_ids"].append(int(o))
                    w[f"{prefix}_weights"].append(v)
    a.update(w)
    return a


def _as_tensors(a: dict, names: list[str]) -> dict:
    """Version 3's double-precision forms of the float attributes `names`."""
    a = dict(a)
    for n in names:
        a[n + "_as_tensor"] = numpy_helper.from_array(np.array(a.pop(n), np.float64), n)
    return a


def onnx_ml_classic() -> None:
    """The classic ai.onnx.ml models scikit-learn's converters write (ai.onnx.ml 3), with ONNX
    Runtime's outputs: Linear{Classifier,Regressor}, SVM{Classifier,Regressor},
    TreeEnsemble{Regressor,Classifier}, Scaler, Normalizer, Imputer, OneHotEncoder,
    FeatureVectorizer, CategoryMapper. Where ONNX Runtime departs from the spec (a binary
    classifier's SOFTMAX / PROBIT, the one-target transforms, base values of targets no leaf
    weighs, NaN at BRANCH_NEQ, PROBIT's approximation) the models stay out of the difference:
    tests/onnx/functions.cpp checks those cases by themselves."""
    r = np.random.default_rng(31)
    f, f64, i64, s = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.STRING
    ml = "ai.onnx.ml"
    n, nf = 8, 3
    rnd = lambda *shape: r.standard_normal(shape).astype(np.float32)
    nodes, outs = [], []

    def node(op, inputs, outputs, types, **kw):
        nodes.append(helper.make_node(op, inputs, outputs, domain=ml, name=outputs[0], **kw))
        for o, (t, shape) in zip(outputs, types):
            outs.append(helper.make_tensor_value_info(o, t, shape))

    def classifier(op, x, tag, labels_type, cols, **kw):
        node(op, [x], [f"{tag}_y", f"{tag}_z"], [(labels_type, [n]), (f, [n, cols])], **kw)

    # linear models
    classifier("LinearClassifier", "x", "lc_multi", i64, 3, coefficients=rnd(3 * nf).tolist(), intercepts=rnd(3).tolist(),
               classlabels_ints=[4, 8, 15])
    classifier("LinearClassifier", "x", "lc_softmax", s, 3, coefficients=rnd(3 * nf).tolist(), intercepts=rnd(3).tolist(),
               classlabels_strings=["ant", "bee", "cat"], post_transform="SOFTMAX", multi_class=1)
    classifier("LinearClassifier", "x", "lc_binary", i64, 2, coefficients=rnd(nf).tolist(), intercepts=[0.25],
               classlabels_ints=[0, 1], post_transform="LOGISTIC")
    classifier("LinearClassifier", "xd", "lc_double", s, 3, coefficients=rnd(3 * nf).tolist(), intercepts=rnd(3).tolist(),
               classlabels_strings=["a", "b", "c"], post_transform="LOGISTIC")
    node("LinearRegressor", ["x"], ["lr"], [(f, [n, 2])], coefficients=rnd(2 * nf).tolist(), intercepts=[0.5, -1.5], targets=2)
    # SVMs: one-vs-one with votes (3 classes: a score per pair), with probabilities, binary,
    # linear mode; every kernel
    def svc(per_class, classes, **kw):
        v = sum(per_class)
        return dict(support_vectors=rnd(v * nf).tolist(), coefficients=rnd((classes - 1) * v).tolist(),
                    rho=rnd(classes * (classes - 1) // 2).tolist(), vectors_per_class=per_class, **kw)
    classifier("SVMClassifier", "x", "svc_rbf", i64, 3, kernel_type="RBF", kernel_params=[0.3, 0.0, 0.0],
               classlabels_ints=[1, 2, 3], **svc([2, 3, 2], 3))
    classifier("SVMClassifier", "x", "svc_poly_prob", s, 3, kernel_type="POLY", kernel_params=[0.5, 1.0, 3.0],
               classlabels_strings=["x", "y", "z"], prob_a=(-np.abs(rnd(3)) - 0.5).tolist(), prob_b=(0.1 * rnd(3)).tolist(),
               **svc([2, 2, 3], 3))
    classifier("SVMClassifier", "x", "svc_sigmoid_binary", i64, 2, kernel_type="SIGMOID", kernel_params=[0.4, 0.2, 0.0],
               classlabels_ints=[0, 1], **{**svc([3, 2], 2), "rho": [-0.9]})  # (votes both ways)
    classifier("SVMClassifier", "xd", "svc_linear_prob", s, 2, kernel_type="LINEAR", classlabels_strings=["no", "yes"], kernel_params=[0.0, 0.0, 0.0],
               prob_a=[-1.5], prob_b=[0.25], **svc([2, 2], 2))
    classifier("SVMClassifier", "x", "svm_linear_mode", i64, 3, coefficients=rnd(3 * nf).tolist(), rho=[0.3], kernel_params=[0.0, 0.0, 0.0],
               classlabels_ints=[7, 8, 9], post_transform="LOGISTIC")
    node("SVMRegressor", ["x"], ["svr_rbf"], [(f, [n, 1])], kernel_type="RBF", kernel_params=[0.2, 0.0, 0.0], n_supports=4,
         support_vectors=rnd(4 * nf).tolist(), coefficients=rnd(4).tolist(), rho=[0.5])
    node("SVMRegressor", ["x"], ["svr_linear"], [(f, [n, 1])], coefficients=rnd(nf).tolist(), rho=[-0.25],
         kernel_params=[0.0, 0.0, 0.0])  # (ONNX Runtime requires kernel_params)
    node("SVMRegressor", ["x"], ["svr_one_class"], [(f, [n, 1])], kernel_type="POLY", kernel_params=[0.5, 0.5, 2.0],
         n_supports=3, support_vectors=rnd(3 * nf).tolist(), coefficients=rnd(3).tolist(), rho=[-0.75], one_class=1)
    # tree ensembles: regressors with each aggregate (base values where every target is weighed
    # in every tree), classifiers multiclass and binary (probabilities as scikit-learn's forests,
    # margins with a base value and LOGISTIC as its gradient boosting)
    node("TreeEnsembleRegressor", ["xn"], ["ter_sum"], [(f, [n, 2])], n_targets=2, base_values=[0.5, -0.5],
         **_classic_trees(r, 3, 3, nf, 2, "target", per_leaf=2))
    for agg in ("AVERAGE", "MIN", "MAX"):
        node("TreeEnsembleRegressor", ["xn"], [f"ter_{agg.lower()}"], [(f, [n, 1])], n_targets=1, aggregate_function=agg,
             **_classic_trees(r, 4, 2, nf, 1, "target"))
    node("TreeEnsembleRegressor", ["xd"], ["ter_double"], [(f, [n, 3])], n_targets=3, post_transform="SOFTMAX",
         **_as_tensors(_classic_trees(r, 3, 2, nf, 3, "target", per_leaf=3), ["nodes_values", "target_weights"]))
    classifier("TreeEnsembleClassifier", "xn", "tec_multi", s, 3, classlabels_strings=["r", "g", "b"], base_values=[0.1, 0.2, -0.1],
               post_transform="SOFTMAX", **_classic_trees(r, 3, 3, nf, 3, "class", per_leaf=2))
    classifier("TreeEnsembleClassifier", "xn", "tec_multi_none", i64, 4, classlabels_int64s=[10, 20, 30, 40],
               **_classic_trees(r, 4, 2, nf, 4, "class", per_leaf=2))
    classifier("TreeEnsembleClassifier", "xn", "tec_softmax_zero", i64, 4, classlabels_int64s=[1, 2, 3, 4],
               post_transform="SOFTMAX_ZERO", **_classic_trees(r, 2, 2, nf, 4, "class"))  # classes no leaf weighs stay 0
    forest = _classic_trees(r, 4, 2, nf, 1, "class", positive=True, scale=0.25)
    classifier("TreeEnsembleClassifier", "xn", "tec_binary_forest", i64, 2, classlabels_int64s=[3, 7], **forest)
    classifier("TreeEnsembleClassifier", "xn", "tec_binary_boost", s, 2, classlabels_strings=["neg", "pos"], base_values=[0.2],
               post_transform="LOGISTIC", **_classic_trees(r, 3, 2, nf, 1, "class"))
    classifier("TreeEnsembleClassifier", "xd", "tec_double", i64, 3, classlabels_int64s=[0, 1, 2],
               **_as_tensors(_classic_trees(r, 2, 3, nf, 3, "class", per_leaf=3), ["nodes_values", "class_weights"]))
    # preprocessing
    node("Scaler", ["x"], ["scaled"], [(f, [n, nf])], offset=rnd(nf).tolist(), scale=rnd(nf).tolist())
    node("Scaler", ["xi"], ["scaled_int"], [(f, [4, nf])], offset=[1.5], scale=[0.5])
    for norm in ("MAX", "L1"):
        node("Normalizer", ["x"], [f"norm_{norm.lower()}"], [(f, [n, nf])], norm=norm)
    node("Normalizer", ["xd"], ["norm_l2"], [(f, [n, nf])], norm="L2")
    node("Imputer", ["xn"], ["imputed"], [(f, [n, nf])], imputed_value_floats=[-1.0, -2.0, -3.0], replaced_value_float=float("nan"))
    node("Imputer", ["xi"], ["imputed_int"], [(i64, [4, nf])], imputed_value_int64s=[99], replaced_value_int64=2)
    node("OneHotEncoder", ["cats"], ["onehot_s"], [(f, [2, 3, 4])], cats_strings=["cat", "dog", "eel", "fox"])
    node("OneHotEncoder", ["xi"], ["onehot_i"], [(f, [4, nf, 3])], cats_int64s=[3, 1, 2], zeros=1)
    node("OneHotEncoder", ["xq"], ["onehot_f"], [(f, [5, 3])], cats_int64s=[0, 1, -1])  # floats cast to int64
    node("FeatureVectorizer", ["x", "xn", "x"], ["features"], [(f, [n, 9])], inputdimensions=[2, 4, 3])  # cut, padded
    node("FeatureVectorizer", ["xd", "xd"], ["features_double"], [(f, [n, 4])], inputdimensions=[1, 3])
    node("FeatureVectorizer", ["xi8"], ["features_int"], [(f, [n, 2])], inputdimensions=[2])
    node("CategoryMapper", ["cats"], ["cat_ids"], [(i64, [2, 3])], cats_strings=["cat", "dog", "eel"], cats_int64s=[5, 6, 7],
         default_int64=-9)
    node("CategoryMapper", ["ids"], ["cat_names"], [(s, [5])], cats_strings=["cat", "dog", "eel"], cats_int64s=[5, 6, 7],
         default_string="none")
    ins = [helper.make_tensor_value_info("x", f, [n, nf]), helper.make_tensor_value_info("xd", f64, [n, nf]),
           helper.make_tensor_value_info("xn", f, [n, nf]), helper.make_tensor_value_info("xi", i64, [4, nf]),
           helper.make_tensor_value_info("xi8", i64, [n, 1]), helper.make_tensor_value_info("xq", f, [5]),
           helper.make_tensor_value_info("cats", s, [2, 3]), helper.make_tensor_value_info("ids", i64, [5])]
    graph = helper.make_graph(nodes, "onnx_ml_classic", ins, outs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ml, 3)],
                              producer_name="gpass-fixture", ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, "onnx_ml_classic.onnx"))
    grid = lambda *shape: (r.integers(-4, 5, shape) * 0.25).astype(np.float32)
    xn = grid(n, nf)
    xn[1, 0] = xn[4, 2] = xn[6, 1] = np.nan  # missing values: the trees' tracks, the Imputer
    save_io("onnx_ml_classic", model, {
        "x": rnd(n, nf), "xd": r.standard_normal((n, nf)), "xn": xn, "xi": r.integers(0, 4, (4, nf)).astype(np.int64),
        "xi8": r.integers(-5, 5, (n, 1)).astype(np.int64), "xq": np.array([0.9, -1.5, 1.0, 2.0, -0.2], np.float32),
        "cats": np.array([["dog", "cat", "fox"], ["eel", "gnu", "dog"]], dtype=object), "ids": np.array([5, 7, 0, 6, -1], np.int64)})


if __name__ == "__main__":
    import sys
    makers = {"local_functions": local_functions, "external_data": external_data, "ort_contrib": ort_contrib,
              "ort_contrib2": ort_contrib2, "ort_contrib3": ort_contrib3, "onnx_ml": onnx_ml, "onnx_preview": onnx_preview,
              "onnx_ml_classic": onnx_ml_classic}
    for name in sys.argv[1:] or list(makers):
        makers[name]()
