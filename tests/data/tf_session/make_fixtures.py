#!/usr/bin/env python3
"""Generate the real-TensorFlow fixtures of gpass's session (issue 16).

Each fixture is a TF1 graph (v1 control flow) with device requests and colocation
constraints, run by TensorFlow in a `tf.compat.v1.Session` with two CPU devices
(`ConfigProto(device_count={"CPU": 2})`), one or several `Session.run` calls in order. What
TensorFlow did is recorded next to the graph in tests/data/tf_session/<name>/:

  graph.pb        binary GraphDef (not frozen: variables stay variables)
  fixture.txt     one item per line:
                    tf_version <v>
                    soft_placement             (allow_soft_placement=True for every run)
                    run                        starts the next Session.run; then its
                      feed <node:port> <file>    fed tensors,
                      fetch <node:port> <file>   TensorFlow's fetched values,
                      target <node>              targets,
                      sends <n>                  _Send/_HostSend nodes in TensorFlow's
                                                 partition graphs of that run
                      error <text>               the run fails; <text> is TensorFlow's
                                                 message (one line, at most 240 characters)
                    place <node> <device>      TensorFlow's device for a node (the first
                                               run's partition graphs, nodes with a device
                                               request or colocation constraint)
  run<r>_feed<i>.pb / run<r>_fetch<i>.pb        TensorProto files

Usage:  python3 tests/data/tf_session/make_fixtures.py [--only name,name]
Needs tensorflow-cpu. Deterministic (fixed inputs, one thread, deterministic serialization).
"""

import argparse
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.compat.v1.disable_eager_execution()
tf.compat.v1.disable_control_flow_v2()
v1 = tf.compat.v1
HERE = pathlib.Path(__file__).resolve().parent


class Run:
    def __init__(self, feeds=None, fetches=(), targets=()):
        self.feeds = dict(feeds or {})
        self.fetches = list(fetches)
        self.targets = list(targets)


class Spec:
    def __init__(self, runs, soft=False, post=None):
        self.runs = runs
        self.soft = soft
        self.post = post  # GraphDef -> GraphDef edits made before TensorFlow runs it


def name_of(t):
    return t if isinstance(t, str) else t.name


def placement():
    """Requested devices, colocation (`colocate_with`), an unconstrained chain; the second
    run feeds an intermediate tensor (everything upstream of it is cut)."""
    x = v1.placeholder(tf.float32, [2, 3], name="x")
    with tf.device("/cpu:0"):
        a = tf.multiply(x, 2.0, name="a")
    with tf.device("/cpu:1"):
        b = tf.add(a, 1.0, name="b")
    with v1.colocate_with(a.op):
        c = tf.square(b, name="c")
    d = tf.tanh(c * 0.1, name="d")
    with tf.device("/device:CPU:1"):
        e = tf.reduce_sum(d, axis=1, name="e")
    f = tf.identity(e, name="f")
    xv = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    bv = np.array([[1, -1, 2], [0.5, 3, -2]], np.float32)
    return Spec([Run({x: xv}, [d, f]), Run({"b:0": bv}, ["f:0", "d:0"])])


def loop_devices():
    """A v1 while loop whose body runs on /cpu:1 while the loop variables live on /cpu:0:
    tensors cross devices in every iteration. (TensorFlow refuses to fetch a tensor inside
    the loop, `marked as not fetchable`; the loop's results are fetched.)"""
    x = v1.placeholder(tf.float32, [3], name="x")
    n = v1.placeholder(tf.int32, [], name="n")

    def body(i, acc):
        with tf.device("/cpu:1"):
            m = tf.multiply(acc, 0.5, name="m")
            s = tf.sin(m, name="s")
        return i + 1, s + acc

    with tf.device("/cpu:0"):
        i0 = tf.constant(0, name="i0")
        r = v1.while_loop(lambda i, acc: i < n, body, [i0, x], name="loop")
        out = tf.identity(r[1], name="out")
        count = tf.identity(r[0], name="count")
    xv = np.array([0.1, 0.2, 0.3], np.float32)
    return Spec([Run({x: xv, n: np.array(5, np.int32)}, [out, count]),
                 Run({x: xv * 3, n: np.array(2, np.int32)}, [count, out])])


def variables_devices():
    """A resource variable on /cpu:1 and a reference variable on /cpu:0 (its Assign is
    colocated with it by `_class`), updated by targets, read in a later run: their values
    live in the session across runs."""
    x = v1.placeholder(tf.float32, [2], name="x")
    with tf.device("/cpu:1"):
        v = v1.get_variable("v", initializer=np.array([1.0, 2.0], np.float32), use_resource=True)
    with tf.device("/cpu:0"):
        r = v1.Variable(np.array([0.5, 0.25], np.float32), name="r")
    upd_v = v.assign_add(x, name="upd_v")
    upd_r = v1.assign(r, r * 2.0, name="upd_r")
    update = tf.group(upd_v, upd_r, name="update")
    y = tf.multiply(v.read_value(), r, name="y")
    init = v1.global_variables_initializer()
    xv = np.array([10.0, 20.0], np.float32)
    return Spec([Run(targets=[init]), Run({x: xv}, targets=[update]), Run({x: xv}, targets=[update]),
                 Run(fetches=[y])])


def _set(gd, node, device=None, colocate=None):
    for n in gd.node:
        if n.name == node:
            if device is not None:
                n.device = device
            if colocate is not None:
                n.attr["_class"].list.s[:] = [("loc:@" + c).encode() for c in colocate]
    return gd


def colocation_conflict():
    """`c` is colocated with `a` (which requests /cpu:0) and requests /cpu:1. TensorFlow 2.21
    does not refuse: it puts `c` on /cpu:0 and drops the request (the `place` lines record
    it); gpass reports the conflict, naming both nodes."""
    x = v1.placeholder(tf.float32, [2], name="x")
    with tf.device("/cpu:0"):
        a = tf.multiply(x, 2.0, name="a")
    c = tf.square(a, name="c")
    return Spec([Run({x: np.array([1, 2], np.float32)}, [c])],
                post=lambda gd: _set(gd, "c", device="/device:CPU:1", colocate=["a"]))


def missing_device():
    """A node requests /device:GPU:0, which the session does not have: an error without soft
    placement (first fixture), the CPU with it (soft_placement_device)."""
    x = v1.placeholder(tf.float32, [2], name="x")
    with tf.device("/device:GPU:0"):
        a = tf.multiply(x, 2.0, name="a")
    b = tf.add(a, 1.0, name="b")
    return Spec([Run({x: np.array([1, 2], np.float32)}, [b])])


def soft_placement_device():
    spec = missing_device()
    spec.soft = True
    return spec


def resize_area_device():
    """A ResizeArea requested on /cpu:1 (an op placed where asked, the size constant beside it),
    its result read on /cpu:0."""
    x = v1.placeholder(tf.float32, [1, 4, 4, 2], name="x")
    with tf.device("/cpu:1"):
        c = v1.image.resize_area(x, [6, 6], name="resize")
    y = tf.nn.relu(c, name="y")
    return Spec([Run({x: np.linspace(0, 1, 32, dtype=np.float32).reshape(1, 4, 4, 2)}, [y])])


FIXTURES = [placement, loop_devices, variables_devices, colocation_conflict, missing_device, soft_placement_device,
            resize_area_device]


def make(fn):
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(1234)
        spec = fn()
        gd = g.as_graph_def()
    if spec.post:
        gd = spec.post(gd)
    g2 = tf.Graph()
    with g2.as_default():
        tf.graph_util.import_graph_def(gd, name="")
    d = HERE / fn.__name__
    d.mkdir(parents=True, exist_ok=True)
    for f in d.iterdir():
        if f.is_file():
            f.unlink()
    (d / "graph.pb").write_bytes(gd.SerializeToString(deterministic=True))
    lines = [f"tf_version {tf.__version__}"]
    if spec.soft:
        lines.append("soft_placement")
    config = v1.ConfigProto(device_count={"CPU": 2}, intra_op_parallelism_threads=1, inter_op_parallelism_threads=1,
                            allow_soft_placement=spec.soft)
    placed = {}
    constrained = {n.name for n in gd.node if n.device or "_class" in n.attr}
    with v1.Session(graph=g2, config=config) as sess:
        for r, run in enumerate(spec.runs):
            lines.append("run")
            feed_dict = {}
            for i, (t, arr) in enumerate(run.feeds.items()):
                fname = f"run{r}_feed{i}.pb"
                (d / fname).write_bytes(tf.make_tensor_proto(arr).SerializeToString())
                lines.append(f"feed {name_of(t)} {fname}")
                feed_dict[g2.get_tensor_by_name(name_of(t))] = arr
            fetches = [g2.get_tensor_by_name(name_of(t)) for t in run.fetches]
            targets = [g2.get_operation_by_name(name_of(t) if isinstance(t, str) else t.name) for t in run.targets]
            for t in run.targets:
                lines.append(f"target {t if isinstance(t, str) else t.name}")
            opts = v1.RunOptions(output_partition_graphs=True)
            md = v1.RunMetadata()
            try:
                values = sess.run(fetches + targets, feed_dict=feed_dict, options=opts, run_metadata=md)[:len(fetches)]
            except tf.errors.OpError as e:
                msg = " ".join(l.strip() for l in e.message.splitlines() if l.strip() and "Graph execution error" not in l)
                lines.append("error " + msg[:240])
                continue
            for i, (t, val) in enumerate(zip(run.fetches, values)):
                fname = f"run{r}_fetch{i}.pb"
                (d / fname).write_bytes(tf.make_tensor_proto(np.asarray(val)).SerializeToString())
                lines.append(f"fetch {name_of(t)} {fname}")
            sends = sum(1 for pg in md.partition_graphs for n in pg.node if n.op in ("_Send", "_HostSend"))
            lines.append(f"sends {sends}")
            if not placed:
                for pg in md.partition_graphs:
                    for n in pg.node:
                        if n.name in constrained:
                            placed[n.name] = n.device
    for name in sorted(placed):
        lines.append(f"place {name} {placed[name]}")
    (d / "fixture.txt").write_text("\n".join(lines) + "\n")
    size = sum(f.stat().st_size for f in d.iterdir())
    print(f"{fn.__name__}: {len(gd.node)} nodes, {len(spec.runs)} runs, {size} bytes", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    for fn in FIXTURES:
        if not only or fn.__name__ in only:
            make(fn)


if __name__ == "__main__":
    main()
