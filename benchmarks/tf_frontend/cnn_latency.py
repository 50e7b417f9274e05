#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TensorFlow CNN latency: gpass's CPU executor against TensorFlow's own CPU run of the same
frozen GraphDef (issue 19): Keras MobileNetV2 and ResNet50 (tf_keras applications, random
weights, 224x224x3, batch 1), frozen with convert_variables_to_constants_v2; TensorFlow runs
the frozen graph in a v1 Session, gpass runs it after tf-frontend (and after -O2 and -O3,
whose `tf-layout` runs the convolutions in NCHW) on its CPU executor
(`gpass_bench_tf_frontend latency`). Medians of REPS runs after warm-up; the same input.

Threads. For a row of T threads both sides run on the same T CPUs (`taskset`: the
process's CPU affinity from its start) and are told T threads (TensorFlow:
intra_op_parallelism_threads=T, inter_op_parallelism_threads=1). TensorFlow runs in a
process of its own that only loads the frozen GraphDef: in the process that had built the
Keras model, tensorflow-cpu 2.21 did not keep to intra_op_parallelism_threads=1 (ResNet50
used 1.8 CPU-seconds per wall second on a 2-CPU machine). So the T=1 row also reports
TensorFlow's unpinned run, and every TensorFlow figure comes with its CPU time per run.

Usage:  python3 benchmarks/tf_frontend/cnn_latency.py BENCH_BINARY [--reps 20]
            [--models mobilenet_v2,resnet50] [--threads 1,2]
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")


def build(name):
    import tensorflow as tf
    import tf_keras as keras
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
    keras.utils.set_random_seed(1)
    ctor = {"mobilenet_v2": keras.applications.MobileNetV2, "resnet50": keras.applications.ResNet50}[name]
    m = ctor(weights=None, input_shape=(224, 224, 3))
    f = tf.function(lambda x: m(x, training=False))
    frozen = convert_variables_to_constants_v2(f.get_concrete_function(tf.TensorSpec([1, 224, 224, 3], tf.float32)))
    return frozen.graph.as_graph_def(), frozen.inputs[0].name, frozen.outputs[0].name


def tf_worker(graph, x_npy, feed, fetch, reps, threads):
    """Runs in a child process whose CPU affinity the parent chose; prints one JSON object."""
    import numpy as np
    import tensorflow as tf
    gd = tf.compat.v1.GraphDef()
    gd.ParseFromString(pathlib.Path(graph).read_bytes())
    x = np.load(x_npy)
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(gd, name="")
    cfg = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=threads, inter_op_parallelism_threads=1)
    with tf.compat.v1.Session(graph=g, config=cfg) as s:
        for _ in range(3):
            s.run(fetch, {feed: x})
        ms = []
        c0 = time.process_time()
        for _ in range(reps):
            t0 = time.perf_counter()
            s.run(fetch, {feed: x})
            ms.append((time.perf_counter() - t0) * 1e3)
        cpu_ms = (time.process_time() - c0) * 1e3 / reps
    print(json.dumps({"ms_median": statistics.median(ms), "ms_min": min(ms), "cpu_ms_per_run": cpu_ms}))


def pinned(cpus):
    """The command prefix that runs a child on `cpus` (none: unpinned). util-linux's taskset,
    not a preexec_fn: this process has TensorFlow's threads running, where a preexec_fn may
    deadlock."""
    return ["taskset", "-c", ",".join(str(c) for c in sorted(cpus))] if cpus else []


def run_tf(tmp, name, feed, fetch, reps, threads, cpus):
    args = [sys.executable, __file__, "--tf-worker", str(tmp / f"{name}.pb"), str(tmp / "x.npy"), feed, fetch,
            str(reps), str(threads)]
    r = subprocess.run(pinned(cpus) + args, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("TensorFlow run failed: " + r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--tf-worker":
        g, x, feed, fetch, reps, threads = sys.argv[2:8]
        return tf_worker(g, x, feed, fetch, int(reps), int(threads))
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--models", default="mobilenet_v2,resnet50")
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    import numpy as np
    import tensorflow as tf
    tmp = pathlib.Path(tempfile.mkdtemp())
    cpus_all = sorted(os.sched_getaffinity(0))
    for name in a.models.split(","):
        gd, feed, fetch = build(name)
        (tmp / f"{name}.pb").write_bytes(gd.SerializeToString())
        x = np.random.RandomState(0).rand(1, 224, 224, 3).astype(np.float32)
        np.save(tmp / "x.npy", x)
        (tmp / "x.pb").write_bytes(tf.make_tensor_proto(x).SerializeToString())
        for threads in (int(t) for t in a.threads.split(",")):
            if threads > len(cpus_all):
                continue
            cpus = set(cpus_all[:threads])
            t = run_tf(tmp, name, feed, fetch, a.reps, threads, cpus)
            row = {"model": name, "threads": threads, "cpus": sorted(cpus), "tf_ms_median": round(t["ms_median"], 3),
                   "tf_ms_min": round(t["ms_min"], 3), "tf_cpu_ms_per_run": round(t["cpu_ms_per_run"], 1)}
            if len(cpus) < len(cpus_all):
                u = run_tf(tmp, name, feed, fetch, a.reps, threads, None)
                row["tf_unpinned_ms_median"] = round(u["ms_median"], 3)
                row["tf_unpinned_cpu_ms_per_run"] = round(u["cpu_ms_per_run"], 1)
            for opt in ("O0", "O2", "O3"):
                args = [a.bench, "latency", str(tmp / f"{name}.pb"), str(tmp / "x.pb"), feed, fetch, str(a.reps), opt,
                        str(threads)]
                r = subprocess.run(pinned(cpus) + args, capture_output=True, text=True)
                key = "" if opt == "O0" else opt
                if r.returncode != 0:
                    row["gpass" + key] = "error: " + (r.stderr.strip().splitlines() or ["?"])[-1][:200]
                    continue
                j = json.loads(r.stdout)
                row["gpass" + key + "_ms_median"] = j["ms_median"]
                row["ratio" + key] = round(j["ms_median"] / t["ms_median"], 2)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
