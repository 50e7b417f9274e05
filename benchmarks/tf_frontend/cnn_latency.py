#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TensorFlow CNN latency: gpass's CPU executor against TensorFlow's own CPU run of the same
frozen GraphDef (issue 19): Keras MobileNetV2 and ResNet50 (tf_keras applications, random
weights, 224x224x3, batch 1), frozen with convert_variables_to_constants_v2; TensorFlow runs
the frozen graph in a v1 Session (1 intra/inter-op thread), gpass runs it after tf-frontend
(and after -O2 and -O3, whose `tf-layout` runs the convolutions in NCHW) with one thread (`gpass_bench_tf_frontend latency`). Medians of REPS runs after
warm-up; the same input.

Usage:  python3 benchmarks/tf_frontend/cnn_latency.py BENCH_BINARY [--reps 20] [--models mobilenet_v2,resnet50]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402


def build(name):
    import tf_keras as keras
    keras.utils.set_random_seed(1)
    ctor = {"mobilenet_v2": keras.applications.MobileNetV2, "resnet50": keras.applications.ResNet50}[name]
    m = ctor(weights=None, input_shape=(224, 224, 3))
    f = tf.function(lambda x: m(x, training=False))
    frozen = convert_variables_to_constants_v2(f.get_concrete_function(tf.TensorSpec([1, 224, 224, 3], tf.float32)))
    return frozen.graph.as_graph_def(), frozen.inputs[0].name, frozen.outputs[0].name


def tf_latency(gd, feed, fetch, x, reps):
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(gd, name="")
    cfg = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    with tf.compat.v1.Session(graph=g, config=cfg) as s:
        for _ in range(3):
            out = s.run(fetch, {feed: x})
        ms = []
        for _ in range(reps):
            t0 = time.perf_counter()
            s.run(fetch, {feed: x})
            ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms), min(ms), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--models", default="mobilenet_v2,resnet50")
    a = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp())
    for name in a.models.split(","):
        gd, feed, fetch = build(name)
        (tmp / f"{name}.pb").write_bytes(gd.SerializeToString())
        x = np.random.RandomState(0).rand(1, 224, 224, 3).astype(np.float32)
        (tmp / "x.pb").write_bytes(tf.make_tensor_proto(x).SerializeToString())
        tmed, tmin, _ = tf_latency(gd, feed, fetch, x, a.reps)
        row = {"model": name, "tf_ms_median": round(tmed, 3), "tf_ms_min": round(tmin, 3)}
        for opt in ("", "O2", "O3"):
            args = [a.bench, "latency", str(tmp / f"{name}.pb"), str(tmp / "x.pb"), feed, fetch, str(a.reps)] + ([opt] if opt else [])
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode != 0:
                row["gpass" + opt] = "error: " + (r.stderr.strip().splitlines() or ["?"])[-1][:200]
                continue
            j = json.loads(r.stdout)
            row["gpass" + (opt or "") + "_ms_median"] = j["ms_median"]
            row["ratio" + (opt or "")] = round(j["ms_median"] / tmed, 2)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
