#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write a large binary GraphDef made of many small v1 while loops, for the ns/node benchmark
of gpass's TensorFlow import + frontend.

TensorFlow builds ONE loop (TF1 graph mode, v1 control flow, frozen):

    x: f32[?], n: i32[]
    i, v = 0, x;  while i < n: i, v = i + 1, v * 2 - v + 1     # loop frame `loop/while_context`
    out = Identity(v)

Its NodeDefs are then replicated in Python, copy k renamed `l<k>/<name>` with frame_name
`l<k>/loop/while_context` (and colocation `_class` references renamed); copy k's loop-variable Enter reads copy k-1's Exit, so the loops
form one chain x -> loop 0 -> loop 1 -> ... -> out; every copy's bound Enter (is_constant)
reads the shared placeholder `n`. No TensorFlow graph construction per copy.

Usage:  python3 benchmarks/tf_frontend/make_large.py [--nodes 100000] [--out /tmp/tf_large.pb]
            [--pbtxt] [--verify]
--nodes is the approximate total node count (rounded up to whole loops); --verify imports the
result into TensorFlow and runs it (n = 2, x = [1, 2]), comparing with the closed form; use it
with small counts. Prints the node, loop and byte counts.
"""

import argparse
import math
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import text_format  # noqa: E402

tf.compat.v1.disable_eager_execution()
tf.compat.v1.disable_control_flow_v2()
v1 = tf.compat.v1


def template():
    """The frozen GraphDef of one loop, its external inputs and its output tensor."""
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None], name="x")
        n = v1.placeholder(tf.int32, [], name="n")
        with tf.name_scope("loop_init"):
            zero = tf.constant(0)
        _, y = v1.while_loop(lambda i, v: i < n, lambda i, v: (i + 1, v * 2.0 - v + 1.0),
                             [zero, x], name="loop")
        tf.identity(y, name="out")
        with v1.Session(graph=g) as sess:
            gd = v1.graph_util.convert_variables_to_constants(sess, g.as_graph_def(), ["out"])
    return gd


def split_name(inp):
    """'^a' / 'a' / 'a:1' -> (prefix, node, suffix)."""
    pre = "^" if inp.startswith("^") else ""
    body = inp[len(pre):]
    node, sep, port = body.partition(":")
    return pre, node, (sep + port)


def build(total_nodes):
    tpl = template()
    fixed = {"x", "n", "out"}
    loop_nodes = [nd for nd in tpl.node if nd.name not in fixed]
    loop_names = {nd.name for nd in loop_nodes}
    out_node = next(nd for nd in tpl.node if nd.name == "out")
    _, exit_node, exit_port = split_name(out_node.input[0])  # the value's Exit
    copies = max(1, math.ceil((total_nodes - len(fixed)) / len(loop_nodes)))

    gd = tf.compat.v1.GraphDef()
    gd.versions.CopyFrom(tpl.versions)
    for nd in tpl.node:
        if nd.name in ("x", "n"):
            gd.node.add().CopyFrom(nd)
    prev = "x"  # tensor the next copy's loop-variable Enter reads
    for k in range(copies):
        pfx = f"l{k}/"
        for src in loop_nodes:
            nd = gd.node.add()
            nd.CopyFrom(src)
            nd.name = pfx + src.name
            for j, inp in enumerate(src.input):
                pre, node, suf = split_name(inp)
                if node in loop_names:
                    nd.input[j] = pre + pfx + node + suf
                elif node == "x":
                    nd.input[j] = pre + prev
                # `n` stays shared
            if "_class" in nd.attr:  # colocation: [b"loc:@node"]
                cls = nd.attr["_class"].list.s
                for j, c in enumerate(cls):
                    ref = c.decode()[len("loc:@"):]
                    if c.startswith(b"loc:@") and ref in loop_names:
                        cls[j] = ("loc:@" + pfx + ref).encode()
            if "frame_name" in nd.attr:
                nd.attr["frame_name"].s = (pfx + src.attr["frame_name"].s.decode()).encode()
        prev = pfx + exit_node + exit_port
    out = gd.node.add()
    out.CopyFrom(out_node)
    out.input[0] = prev
    return gd, copies, len(loop_nodes)


def verify(gd, copies):
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(gd, name="")
        with v1.Session(graph=g) as sess:
            x = np.array([1.0, 2.0], np.float32)
            got = sess.run("out:0", {"x:0": x, "n:0": np.array(2, np.int32)})
    ref = x.astype(np.float64) + 2 * copies  # each loop: two iterations of v * 2 - v + 1
    err = float(np.max(np.abs(got - ref)))
    print(f"verify: out = {got.tolist()}, closed form {ref.tolist()}, max abs err {err:.2e}",
          file=sys.stderr)
    if err > 1e-5:
        raise SystemExit("verify failed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100000)
    ap.add_argument("--out", default="/tmp/tf_large.pb")
    ap.add_argument("--pbtxt", action="store_true", help="also write <out>txt in text format")
    ap.add_argument("--verify", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    gd, copies, per_loop = build(args.nodes)
    data = gd.SerializeToString(deterministic=True)
    pathlib.Path(args.out).write_bytes(data)
    if args.pbtxt:
        pathlib.Path(args.out + "txt").write_text(text_format.MessageToString(gd))
    print(f"{args.out}: {len(gd.node)} nodes, {copies} loops of {per_loop} nodes, "
          f"{len(data)} bytes, {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    if args.verify:
        verify(gd, copies)


if __name__ == "__main__":
    main()
