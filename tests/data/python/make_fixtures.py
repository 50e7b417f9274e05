#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Makes the Python module's ONNX Runtime fixture (tests/data/python): a small CNN with what
-O2 rewrites (a BatchNormalization after a Conv, a shape subgraph that folds, MatMul+Add) and
a symbolic batch dim, a seeded input batch, and the outputs ONNX Runtime computes for it.

Needs onnx and onnxruntime (pip); the files it writes are committed:
    python3 tests/data/python/make_fixtures.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)


def const(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


inits = [
    const("W", rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32)),
    const("B", rng.normal(0, 0.1, (4,)).astype(np.float32)),
    const("scale", rng.uniform(0.5, 1.5, (4,)).astype(np.float32)),
    const("shift", rng.normal(0, 0.1, (4,)).astype(np.float32)),
    const("mean", rng.normal(0, 0.1, (4,)).astype(np.float32)),
    const("var", rng.uniform(0.5, 1.5, (4,)).astype(np.float32)),
    const("W2", rng.normal(0, 0.2, (64, 5)).astype(np.float32)),
    const("b2", rng.normal(0, 0.1, (5,)).astype(np.float32)),
    const("zero", np.array(0, np.int64)),
    const("minus_one", np.array([-1], np.int64)),
]
nodes = [
    helper.make_node("Conv", ["x", "W", "B"], ["conv"], pads=[1, 1, 1, 1]),
    helper.make_node("BatchNormalization", ["conv", "scale", "shift", "mean", "var"], ["bn"], epsilon=1e-5),
    helper.make_node("Relu", ["bn"], ["relu"]),
    helper.make_node("MaxPool", ["relu"], ["pool"], kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Shape", ["pool"], ["shape"]),
    helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
    helper.make_node("Unsqueeze", ["batch", "zero_axes"], ["batch1"]),
    helper.make_node("Concat", ["batch1", "minus_one"], ["flat_shape"], axis=0),
    helper.make_node("Reshape", ["pool", "flat_shape"], ["flat"]),
    helper.make_node("MatMul", ["flat", "W2"], ["mm"]),
    helper.make_node("Add", ["mm", "b2"], ["logits"]),
    helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
]
inits.append(const("zero_axes", np.array([0], np.int64)))
graph = helper.make_graph(
    nodes, "small_cnn",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 5]),
     helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 5])],
    inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="gpass-fixtures")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(here, "small_cnn.onnx"))

x = rng.normal(0, 1, (2, 3, 8, 8)).astype(np.float32)
sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
logits, probs = sess.run(["logits", "probs"], {"x": x})
for name, a in [("input_x", x), ("ort_logits", logits), ("ort_probs", probs)]:
    with open(os.path.join(here, name + ".pb"), "wb") as f:
        f.write(numpy_helper.from_array(a, name).SerializeToString())
with open(os.path.join(here, "fixture.txt"), "w") as f:
    f.write(f"onnxruntime {ort.__version__}\nonnx {onnx.__version__}\n")
print("wrote", here)
