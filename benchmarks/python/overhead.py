#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The per-call cost of gpass.run from Python against the same compiled plan called from C++
(Graph.time_runs: a C++ loop over plan::run), and against ONNX Runtime's InferenceSession.run
on the same model and input when onnxruntime is installed; also checks that gpass's outputs
equal ONNX Runtime's.

    python3 benchmarks/python/overhead.py [--repeat N] [-O LEVEL] [model.onnx ...]

Each model is optimized at -O LEVEL (default 2; 0 runs it as loaded) by gpass.optimize before
it runs; ONNX Runtime runs the original file.

Default models: a one-node Relu (the call overhead itself) and tests/data/python/small_cnn.onnx.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

import gpass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

RELU_IR = """graph {
  %x = arg() {index = 0} -> (f32[1,16])
  %y = Relu(%x) -> (f32[1,16])
  %r:0 = return(%y) {names = ["y"]}
}
"""


def per_call(fn, repeat, rounds=7):
    """Median over `rounds` of the mean time of `repeat` calls, in microseconds."""
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        times.append((time.perf_counter() - t0) / repeat * 1e6)
    return statistics.median(times)


def measure(name, loaded, onnx_path, repeat, level):
    g = gpass.optimize(loaded, level=level) if level > 0 else loaded
    feeds = gpass.random_inputs(g, seed=1)
    gpass.run(g, feeds)  # compile
    py_us = per_call(lambda: gpass.run(g, feeds), repeat)
    prepared = {k: np.ascontiguousarray(v) for k, v in feeds.items()}
    cpp_us = statistics.median(g._g.time_runs(prepared, repeat) * 1e6 for _ in range(7))
    nodes = lambda graph: sum(graph.op_counts().values())
    row = {"model": name, f"nodes_O0_to_O{level}": f"{nodes(loaded)}->{nodes(g)}", "gpass_python_us": py_us, "gpass_cpp_us": cpp_us, "overhead_us": py_us - cpp_us}
    try:
        import onnxruntime as ort
    except ImportError:
        return row
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    ort_out = sess.run(names, feeds)
    ours = gpass.run(g, feeds)
    row["max_abs_diff_vs_ort"] = max(float(np.max(np.abs(ours[n] - o))) if o.size else 0.0 for n, o in zip(names, ort_out))
    row["ort_python_us"] = per_call(lambda: sess.run(names, feeds), repeat)
    row["ratio_gpass_over_ort"] = py_us / row["ort_python_us"]
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("models", nargs="*")
    p.add_argument("--repeat", type=int, default=2000)
    p.add_argument("-O", dest="level", type=int, default=2, choices=[0, 1, 2, 3])
    a = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if not a.models:
            relu = gpass.parse(RELU_IR)
            relu_path = os.path.join(tmp, "relu.onnx")
            relu.save(relu_path)
            rows.append(measure("relu[1,16]", relu, relu_path, a.repeat, a.level))
            cnn = os.path.join(ROOT, "tests", "data", "python", "small_cnn.onnx")
            rows.append(measure("small_cnn", gpass.load(cnn), cnn, a.repeat // 4, a.level))
        for m in a.models:
            rows.append(measure(os.path.basename(m), gpass.load(m), m, a.repeat // 4, a.level))
    print(f"gpass {gpass.__version__} ({gpass._gpass.binding}), -O{a.level}, Python {sys.version.split()[0]}, numpy {np.__version__}")
    for r in rows:
        print("  ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))


if __name__ == "__main__":
    main()
