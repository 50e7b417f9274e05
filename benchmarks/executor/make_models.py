#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the executor benchmark's models (random weights, numpy seed 0, opset 13) into a folder:

  mlp.onnx           x: f32[N,784] -> 4 Gemm layers 784-1024-1024-1024-10 (Relu after the first
                     three; the last Gemm gives the logits), batch dim symbolic 'N'.
  resnet_small.onnx  x: f32[1,3,64,64] -> conv3x3 32 + Relu (batch norm folded into the conv bias),
                     a residual block (conv3x3-Relu-conv3x3-Add-Relu) at 32, 64 and 128 channels with
                     a stride-2 1x1 projection conv between the stages (64x64 -> 32x32 -> 16x16),
                     GlobalAveragePool, Flatten, Gemm to 10.

  identity.onnx      x: f32[1,4] -> Identity: the per-run floor of each runtime (call overhead).

  python3 make_models.py OUT_DIR

Built with onnx.helper only (no torch). The files are generated, never committed (the MLP is ~12 MB).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
rng = np.random.default_rng(0)


def weight(name, shape, fan_in):
    # He-style scale so activations stay O(1) through the layers
    w = rng.standard_normal(shape).astype(np.float32) * np.float32(np.sqrt(2.0 / fan_in))
    return numpy_helper.from_array(w, name)


def bias(name, n):
    return numpy_helper.from_array((rng.standard_normal(n) * 0.01).astype(np.float32), name)


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="gpass-benchmarks")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def make_mlp(path):
    sizes = [784, 1024, 1024, 1024, 10]
    nodes, inits = [], []
    cur = "x"
    for i in range(4):
        k, n = sizes[i], sizes[i + 1]
        inits += [weight(f"fc{i}.weight", (n, k), k), bias(f"fc{i}.bias", n)]  # torch layout, transB=1
        out = f"fc{i}" if i < 3 else "y"
        nodes.append(helper.make_node("Gemm", [cur, f"fc{i}.weight", f"fc{i}.bias"], [out],
                                      name=f"fc{i}", transB=1))
        if i < 3:
            nodes.append(helper.make_node("Relu", [out], [f"relu{i}"], name=f"relu{i}"))
            cur = f"relu{i}"
    g = helper.make_graph(nodes, "mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)
    save(g, path)


def make_resnet_small(path):
    nodes, inits = [], []

    def conv(name, x, cin, cout, k, stride=1):
        inits.extend([weight(name + ".weight", (cout, cin, k, k), cin * k * k), bias(name + ".bias", cout)])
        p = k // 2
        nodes.append(helper.make_node("Conv", [x, name + ".weight", name + ".bias"], [name], name=name,
                                      kernel_shape=[k, k], strides=[stride, stride], pads=[p, p, p, p]))
        return name

    def relu(x):
        nodes.append(helper.make_node("Relu", [x], [x + ".relu"], name=x + ".relu"))
        return x + ".relu"

    def block(name, x, c):
        h = relu(conv(name + ".conv1", x, c, c, 3))
        h = conv(name + ".conv2", h, c, c, 3)
        nodes.append(helper.make_node("Add", [h, x], [name + ".add"], name=name + ".add"))
        return relu(name + ".add")

    h = relu(conv("stem", "x", 3, 32, 3))
    h = block("block1", h, 32)
    h = conv("proj1", h, 32, 64, 1, stride=2)
    h = block("block2", h, 64)
    h = conv("proj2", h, 64, 128, 1, stride=2)
    h = block("block3", h, 128)
    nodes.append(helper.make_node("GlobalAveragePool", [h], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flat", axis=1))
    inits.extend([weight("fc.weight", (10, 128), 128), bias("fc.bias", 10)])
    nodes.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1))
    g = helper.make_graph(nodes, "resnet_small",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    save(g, path)


def make_identity(path):
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="id")], "identity",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    save(g, path)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    make_mlp(os.path.join(out, "mlp.onnx"))
    make_resnet_small(os.path.join(out, "resnet_small.onnx"))
    make_identity(os.path.join(out, "identity.onnx"))
    print(f"wrote {out}/mlp.onnx, {out}/resnet_small.onnx and {out}/identity.onnx")
