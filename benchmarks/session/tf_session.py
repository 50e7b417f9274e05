#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The TensorFlow side of the session benchmark: writes a 10-node GraphDef (x -> 8 element-wise
ops -> y, on [4] floats) to --out, then times tf.compat.v1.Session.run on it (one CPU device,
one thread, the same feed every run) and prints one JSON line:
{"peer": "tensorflow", "nodes": 10, "runs": N, "us_median": M, "us_min": L}."""
import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=20000)
    args = ap.parse_args()
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [4], name="x")
        c = tf.constant(np.array([0.5, -1.0, 2.0, 0.25], np.float32), name="c")
        a = tf.add(x, c, name="a")
        b = tf.multiply(a, c, name="b")
        r = tf.nn.relu(b, name="r")
        t = tf.tanh(r, name="t")
        s = tf.subtract(t, x, name="s")
        n = tf.negative(s, name="n")
        m = tf.maximum(n, c, name="m")
        tf.identity(m, name="y")
    gd = g.as_graph_def()
    assert len(gd.node) == 10, len(gd.node)
    with open(args.out, "wb") as f:
        f.write(gd.SerializeToString(deterministic=True))
    config = v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    feed = np.array([1.0, 2.0, -3.0, 4.0], np.float32)
    with v1.Session(graph=g, config=config) as sess:
        fetch = g.get_tensor_by_name("y:0")
        xin = g.get_tensor_by_name("x:0")
        for _ in range(200):
            sess.run(fetch, {xin: feed})
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter_ns()
            sess.run(fetch, {xin: feed})
            times.append(time.perf_counter_ns() - t0)
        y = sess.run(fetch, {xin: feed})
    times.sort()
    print(json.dumps({"peer": "tensorflow", "version": tf.__version__, "nodes": 10, "runs": args.runs,
                      "us_median": times[len(times) // 2] / 1000, "us_min": times[0] / 1000,
                      "y": [float(v) for v in y]}))


if __name__ == "__main__":
    main()
