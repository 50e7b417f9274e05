#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A model past protobuf's 2 GiB limit through gpass and back to ONNX Runtime.

    onnx_large_model.py GPASS_OPT [WORK_DIR] [--rows N]

Writes WORK_DIR/big.onnx (default /tmp/gpass-large-model) with a float32 initializer W of
N x 4096 (default N = 150000: 2.46 GB, stored in big.bin as external data) and the graph
y = Gather(W, idx) + B; then
  1. `GPASS_OPT big.onnx --run --input=idx.pb --save-outputs=...` (gpass maps big.bin),
  2. `GPASS_OPT big.onnx -o out/big.onnx` (the export passes 2 GiB, so write_onnx_file puts
     every tensor of 1 KiB or more into out/big.onnx.data by itself),
  3. ONNX Runtime runs the original and gpass's export,
and prints each step's time and peak RSS and the largest difference from numpy's W[idx] + B.
Needs onnx, numpy and onnxruntime, and about 5 GB of disk. Exit status 1 on any difference.
"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def run(cmd):
    """Runs cmd; returns (seconds, peak RSS in MB) of that process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return time.perf_counter() - t, usage.ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("gpass_opt")
    ap.add_argument("work", nargs="?", default="/tmp/gpass-large-model")
    ap.add_argument("--rows", type=int, default=150000)
    args = ap.parse_args()
    gpass_opt = os.path.abspath(args.gpass_opt)
    rows, cols = args.rows, 4096
    os.makedirs(os.path.join(args.work, "out"), exist_ok=True)
    os.makedirs(os.path.join(args.work, "outputs"), exist_ok=True)
    os.chdir(args.work)

    rng = np.random.default_rng(0)
    idx = np.array([0, rows // 2 + 7, rows - 1], np.int64)
    picked = np.empty((len(idx), cols), np.float32)
    with open("big.bin", "wb") as f:  # written in blocks: the model is never whole in memory
        for r in range(0, rows, 10000):
            block = rng.standard_normal((min(10000, rows - r), cols), dtype=np.float32)
            for k, i in enumerate(idx):
                if r <= i < r + len(block):
                    picked[k] = block[i - r]
            block.tofile(f)
    bias = rng.standard_normal((cols,), dtype=np.float32)
    w = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[rows, cols],
                    data_location=TensorProto.EXTERNAL)
    for k, v in (("location", "big.bin"), ("offset", "0"), ("length", str(rows * cols * 4))):
        e = w.external_data.add()
        e.key, e.value = k, v
    graph = helper.make_graph(
        [helper.make_node("Gather", ["W", "idx"], ["g"], axis=0), helper.make_node("Add", ["g", "B"], ["y"])],
        "large", [helper.make_tensor_value_info("idx", TensorProto.INT64, [len(idx)])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [len(idx), cols])],
        [w, numpy_helper.from_array(bias, "B")])
    onnx.save_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), "big.onnx")
    onnx.save_tensor(numpy_helper.from_array(idx, "idx"), "idx.pb")
    expect = picked + bias
    print("model: W %d x %d float32 = %.2f GB external" % (rows, cols, rows * cols * 4 / 1e9))

    worst = 0.0
    s, rss = run([gpass_opt, "big.onnx", "--run", "--input=idx.pb", "--save-outputs=outputs"])
    got = numpy_helper.to_array(onnx.load_tensor("outputs/output_0.pb"))
    worst = max(worst, float(np.abs(got - expect).max()))
    print("gpass --run: %.2f s, peak RSS %.0f MB, max |diff| %g" % (s, rss, np.abs(got - expect).max()))
    s, rss = run([gpass_opt, "big.onnx", "-o", "out/big.onnx"])
    print("gpass export: %.2f s, peak RSS %.0f MB; out/big.onnx %d bytes, out/big.onnx.data %d bytes" % (
        s, rss, os.path.getsize("out/big.onnx"), os.path.getsize("out/big.onnx.data")))
    import onnxruntime as ort
    for path in ("big.onnx", "out/big.onnx"):
        y = ort.InferenceSession(path).run(None, {"idx": idx})[0]
        worst = max(worst, float(np.abs(y - expect).max()))
        print("onnxruntime %s: max |diff| %g" % (path, np.abs(y - expect).max()))
    return 1 if worst > 0 else 0


if __name__ == "__main__":
    sys.exit(main())
