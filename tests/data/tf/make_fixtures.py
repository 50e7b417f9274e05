#!/usr/bin/env python3
"""Generate the real-TensorFlow fixtures of gpass's TensorFlow frontend (issue 5).

Every fixture is built in TF1 graph mode with v1 control flow (Enter/Merge/Switch/Exit/
NextIteration/LoopCond frames, Switch/Merge conditionals, TensorArrayV3), run once in a
TensorFlow session to get the reference outputs, frozen (variables -> Const, graph pruned
to the ancestors of the fetches) unless the fixture is about variables, and written to
tests/data/tf/<name>/:

  graph.pb      binary GraphDef
  graph.pbtxt   the same GraphDef in protobuf text format
  fixture.txt   one item per line:
                  tf_version <v>
                  target <node_name>           ops run (each in its own Session.run, in order,
                                               with the feeds) before the fetches, e.g. an
                                               initializer, or a training step
                  feed <node:port> <file>      a fed tensor
                  fetch <node:port> <file>     TensorFlow's value of a fetched tensor
  feed_<i>.pb / output_<i>.pb   TensorProto messages (binary, tf.make_tensor_proto)

Usage:  python3 tests/data/tf/make_fixtures.py [--out DIR] [--only name,name]

Needs tensorflow-cpu and tf_keras (the legacy Keras 2 that still ships
tf.compat.v1.nn.rnn_cell.LSTMCell; Keras 3 dropped it). Deterministic: fixed graph and op
seeds, one intra/inter-op thread, fixed numpy inputs, deterministic serialization.
"""

import argparse
import collections
import os
import pathlib
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # LSTMCell lives in tf_keras
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # bit-stable float results

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import text_format  # noqa: E402

tf.compat.v1.disable_eager_execution()
tf.compat.v1.disable_control_flow_v2()

v1 = tf.compat.v1
HERE = pathlib.Path(__file__).resolve().parent
SEED = 1234


class Spec:
    """What a builder returns: feeds {placeholder tensor: numpy array}, fetches [tensor],
    targets [op] run before the fetches (each in its own Session.run)."""

    def __init__(self, feeds, fetches, targets=(), freeze=True, add_shapes=False, post=None):
        self.post = post  # GraphDef -> None, applied after freezing
        self.feeds = feeds
        self.fetches = fetches
        self.targets = list(targets)
        self.freeze = freeze
        self.add_shapes = add_shapes


def rng(salt):
    return np.random.RandomState(SEED + salt)


# --------------------------------------------------------------------------- fixtures

def while_one_var():
    """Single loop variable: i = x; while i < 10: i = i + 1."""
    x = v1.placeholder(tf.int32, [], name="x")
    r = v1.while_loop(lambda i: i < 10, lambda i: i + 1, [x], name="loop")
    out = tf.identity(r, name="out")
    twice = tf.multiply(r, 2, name="twice")
    return Spec({x: np.array(3, np.int32)}, [out, twice])


def while_two_vars():
    """Two loop variables: a counter and a float vector of dynamic length."""
    n = v1.placeholder(tf.int32, [], name="n")
    acc0 = v1.placeholder(tf.float32, [None], name="acc")

    def body(i, acc):
        return i + 1, acc * 1.5 + tf.cast(i, tf.float32)

    i, acc = v1.while_loop(lambda i, acc: i < n, body, [tf.constant(0), acc0], name="loop")
    return Spec({n: np.array(4, np.int32), acc0: rng(1).randn(5).astype(np.float32)},
                [tf.identity(i, name="i_out"), tf.identity(acc, name="acc_out")])


def while_invariant():
    """A loop reading an outer tensor in its body (is_constant Enter) and a constant; only
    the matrix is fetched, so the counter's Exit is pruned (a Switch without an Exit)."""
    w = v1.placeholder(tf.float32, [None, 3], name="w")
    x0 = v1.placeholder(tf.float32, [None, 3], name="x")

    def body(i, x):
        return i + 1, tf.tanh(x * w + tf.constant([0.5, -0.25, 1.0]))

    _, x = v1.while_loop(lambda i, x: i < 4, body, [tf.constant(0), x0], name="loop")
    r = rng(2)
    return Spec({w: r.randn(2, 3).astype(np.float32), x0: r.randn(2, 3).astype(np.float32)},
                [tf.identity(x, name="out")])


def nested_loops():
    """Outer loop i < n; inner loop j < i (its bound is the outer loop variable); the inner
    body reads an outer placeholder (an invariant crossing two frames)."""
    n = v1.placeholder(tf.int32, [], name="n")
    v = v1.placeholder(tf.float32, [None], name="v")

    def outer_body(i, acc):
        def inner_body(j, a):
            return j + 1, a * 0.5 + tf.cast(i + j, tf.float32) * v

        _, acc2 = v1.while_loop(lambda j, a: j < i, inner_body, [tf.constant(0), acc],
                                name="inner")
        return i + 1, acc2

    i, acc = v1.while_loop(lambda i, acc: i < n, outer_body, [tf.constant(0), tf.zeros_like(v)],
                           name="outer")
    return Spec({n: np.array(4, np.int32), v: rng(3).randn(3).astype(np.float32)},
                [tf.identity(i, name="i_out"), tf.identity(acc, name="acc_out")])


def while_growing():
    """A tensor that doubles its first dimension every iteration (ConcatV2 in the body,
    shape invariant [None, 2])."""
    x0 = v1.placeholder(tf.float32, [None, 2], name="x")

    def body(i, x):
        return i + 1, tf.concat([x, x * 0.5 + 1.0], axis=0)

    _, x = v1.while_loop(lambda i, x: i < 3, body, [tf.constant(0), x0],
                         shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, 2])],
                         name="loop")
    return Spec({x0: rng(4).randn(2, 2).astype(np.float32)},
                [tf.identity(x, name="out"), tf.shape(x, name="out_shape")])


def tensor_array_loop():
    """TensorArrayV3: unstack (Scatter) the input along time, Read/compute/Write in a loop
    with a carried accumulator, then Stack, Gather and Size outside the loop."""
    x = v1.placeholder(tf.float32, [None, 3], name="x")
    steps = tf.shape(x)[0]
    ta_in = tf.TensorArray(tf.float32, size=steps, name="ta_in").unstack(x)
    ta_out0 = tf.TensorArray(tf.float32, size=steps, clear_after_read=False, name="ta_out")

    def body(i, acc, ta):
        e = ta_in.read(i)
        acc = acc + e
        return i + 1, acc, ta.write(i, tf.tanh(e) * 2.0 + acc)

    _, acc, ta_out = v1.while_loop(lambda i, acc, ta: i < steps, body,
                                   [tf.constant(0), tf.zeros([3]), ta_out0], name="loop")
    stacked = tf.identity(ta_out.stack(), name="stacked")
    gathered = tf.identity(ta_out.gather([0, 2]), name="gathered")
    size = tf.identity(ta_out.size(), name="size")
    return Spec({x: rng(5).randn(4, 3).astype(np.float32)},
                [stacked, gathered, size, tf.identity(acc, name="acc_out")], add_shapes=True)


def dynamic_rnn_lstm():
    """tf.compat.v1.nn.dynamic_rnn over an LSTMCell (batch 2, time 3, input 4, units 5);
    batch and time are None in the placeholder; weights frozen to Const."""
    x = v1.placeholder(tf.float32, [None, None, 4], name="x")
    cell = v1.nn.rnn_cell.LSTMCell(5, initializer=v1.glorot_uniform_initializer(seed=7),
                                   name="lstm")
    outputs, state = v1.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope="rnn")
    init = v1.global_variables_initializer()
    return Spec({x: rng(6).randn(2, 3, 4).astype(np.float32)},
                [tf.identity(outputs, name="outputs"), tf.identity(state.c, name="state_c"),
                 tf.identity(state.h, name="state_h")],
                targets=[init], add_shapes=True)


def cond():
    """tf.cond (v1: Switch/Merge) on a placeholder predicate, twice: once on p and once on
    not p, so both branches of some cond are taken whatever p is. The second returns two
    values."""
    p = v1.placeholder(tf.bool, [], name="p")
    x = v1.placeholder(tf.float32, [None], name="x")
    c1 = tf.cond(p, lambda: x * 2.0 + 1.0, lambda: tf.reduce_sum(x) * x, name="cond1")
    c2a, c2b = tf.cond(tf.logical_not(p),
                       lambda: (tf.exp(x), tf.reduce_max(x)),
                       lambda: (tf.square(x) - 1.0, tf.reduce_min(x)), name="cond2")
    return Spec({p: np.array(True), x: rng(7).randn(4).astype(np.float32)},
                [tf.identity(c1, name="out1"), tf.identity(c2a, name="out2"),
                 tf.identity(c2b, name="out3")])


def variables():
    """Not frozen. A VariableV2 (ref variable: VariableV2, Assign, Identity '/read') and a
    resource variable (VarHandleOp, AssignVariableOp, ReadVariableOp, AssignAddVariableOp).

    Reference semantics: TensorFlow ran, each in its own Session.run and in this order,
      1. target `init`   (global_variables_initializer: both variables get their initial values)
      2. target `update` (v_ref := v_ref * 2  via Assign;
                          v_res := v_res + 1   via AssignVariableOp, then
                          v_res := v_res + d   via AssignAddVariableOp, d a Const)
      3. the fetches with the feed x: y = x @ v_ref + v_res, and v_ref, v_res as read then.
    So the fetched values are those after one `update`.
    """
    x = v1.placeholder(tf.float32, [None, 3], name="x")
    r = rng(8)
    v_ref = v1.Variable(r.randn(3, 2).astype(np.float32), use_resource=False, name="v_ref")
    v_res = v1.Variable(r.randn(2).astype(np.float32), use_resource=True, name="v_res")
    a_ref = v1.assign(v_ref, v_ref * 2.0, name="assign_ref")
    a_res = v_res.assign(v_res.read_value() + 1.0, name="assign_res", read_value=False)
    with tf.control_dependencies([a_res]):
        a_add = v_res.assign_add(tf.constant([0.25, -0.5]), name="assign_add_res",
                                 read_value=False)
    update = tf.group(a_ref, a_add, name="update")
    init = v1.global_variables_initializer()
    y = tf.add(tf.matmul(x, v_ref), v_res.read_value(), name="y")
    return Spec({x: r.randn(2, 3).astype(np.float32)},
                [y, tf.identity(v_ref, name="v_ref_value"),
                 tf.identity(v_res.read_value(), name="v_res_value")],
                targets=[init, update], freeze=False)


def variables_in_loop():
    """Not frozen. Variables read and written inside a v1 while loop body: a resource
    variable accumulates (AssignAddVariableOp of x * i) and a reference variable is scaled
    (Assign of v * 1.5, the variable reaching the body through a RefEnter) every iteration;
    the bound n is fed. Reference semantics: target `init`, then the fetches (the loop runs in
    the fetch run): the values read after the loop, and the counter.
    """
    n = v1.placeholder(tf.int32, [], name="n")
    x = v1.placeholder(tf.float32, [2], name="x")
    acc = v1.Variable(np.zeros(2, np.float32), use_resource=True, name="acc")
    scale = v1.Variable(np.float32(1.0), use_resource=False, name="scale")

    def body(i):
        a = acc.assign_add(x * tf.cast(i, tf.float32), read_value=False)
        s = v1.assign(scale, scale * 1.5)
        with tf.control_dependencies([a, s]):
            return i + 1

    count = v1.while_loop(lambda i: i < n, body, [tf.constant(0)], name="loop")
    init = v1.global_variables_initializer()
    with tf.control_dependencies([count]):
        acc_value = tf.identity(acc.read_value(), name="acc_value")
        scale_value = tf.identity(scale.read_value(), name="scale_value")
    return Spec({n: np.array(4, np.int32), x: rng(14).randn(2).astype(np.float32)},
                [acc_value, scale_value, tf.identity(count, name="count")],
                targets=[init], freeze=False)


def shape_ops():
    """Shape arithmetic on a placeholder with a None batch: Fill(Shape(x)), Range over the
    batch, StridedSlice of a shape, Pack/Reshape/Tile/ExpandDims with computed shapes."""
    x = v1.placeholder(tf.float32, [None, 3], name="x")
    sh = tf.shape(x, name="sh")
    filled = tf.fill(sh, 2.0, name="filled")
    out_fill = tf.add(filled, x, name="out_fill")
    batch = sh[0]
    rng_ = tf.range(0, batch, 1, name="rng")
    out_range = tf.cast(rng_, tf.float32, name="out_range")
    tail = sh[1:]
    flat = tf.reshape(x, tf.stack([batch * tail[0]]), name="flat")
    zeros = tf.zeros(tf.stack([batch, 2]), name="zeros")
    tiled = tf.tile(tf.expand_dims(out_range, 1), tf.stack([1, tail[0]]), name="tiled")
    out_tile = tf.add(tiled, x, name="out_tile")
    squeezed = tf.squeeze(tf.expand_dims(x, 1), axis=[1], name="squeezed")  # list(int) attr
    return Spec({x: rng(9).randn(5, 3).astype(np.float32)},
                [out_fill, out_range, tf.identity(tail, name="tail"), flat, zeros, out_tile,
                 tf.identity(tf.size(x), name="size"), squeezed], add_shapes=True)


def multi_output():
    """Ops with several outputs whose ports feed different consumers: Split, SplitV, Unpack
    (one output unused), TopKV2 (values and indices), IdentityN."""
    x = v1.placeholder(tf.float32, [None, 6], name="x")
    a, b = tf.split(x, 2, axis=1, name="split")
    p, q, s = tf.split(x, [1, 2, 3], axis=1, name="splitv")
    u0, _, u2 = tf.unstack(a, axis=1, name="unpack")
    values, indices = tf.nn.top_k(x, k=2, name="topk")
    out_ab = tf.multiply(a, b, name="out_ab")
    out_u = tf.add(u0, u2, name="out_u")
    out_pqs = tf.concat([s, q, p], axis=1, name="out_pqs")
    out_v = tf.identity(values, name="out_v")
    out_i = tf.cast(indices, tf.float32, name="out_i")
    ida, idi = tf.identity_n([a, indices], name="idn")  # list(type) attr, two outputs
    out_idn = tf.add(ida, tf.cast(idi[:, :1], tf.float32), name="out_idn")
    return Spec({x: rng(10).randn(3, 6).astype(np.float32)},
                [out_ab, out_u, out_pqs, out_v, out_i, indices, out_idn], add_shapes=True)


def control_deps():
    """tf.control_dependencies around ops, an Identity with a ^control input, a NoOp
    barrier (tf.group), all pruned to what the fetches depend on; `a` has a device."""
    x = v1.placeholder(tf.float32, [None, 3], name="x")
    with tf.device("/device:CPU:0"):  # a NodeDef device string
        a = tf.multiply(x, 2.0, name="a")
    with tf.control_dependencies([a]):
        b = tf.add(x, 1.0, name="b")
    with tf.control_dependencies([b]):
        c = tf.identity(a, name="c")
    barrier = tf.group(b, c, name="barrier")
    with tf.control_dependencies([barrier]):
        d = tf.multiply(c, b, name="d")
        e = tf.reduce_sum(d, axis=1, name="e")
    return Spec({x: rng(11).randn(2, 3).astype(np.float32)}, [c, d, e])


def while_ctrl():
    """A loop whose body has control dependencies (an op gated by another inside the
    frame) and whose result is gated after the loop."""
    x0 = v1.placeholder(tf.float32, [None], name="x")

    def body(i, x):
        t = tf.multiply(x, 1.5, name="t")
        with tf.control_dependencies([t]):
            i2 = tf.add(i, 1, name="i2")
        with tf.control_dependencies([i2]):
            x2 = tf.subtract(t, 0.25, name="x2")
        return i2, x2

    i, x = v1.while_loop(lambda i, x: i < 3, body, [tf.constant(0), x0], name="loop")
    with tf.control_dependencies([i]):
        out = tf.identity(x, name="out")
    return Spec({x0: rng(12).randn(4).astype(np.float32)}, [out, tf.identity(i, name="i_out")])


def stable_function_names(gd):
    """`__inference_f_<uid>` -> `__inference_f` (the uid depends on what the process built
    before), in the library and in every `func` attribute."""
    ren = {f.signature.name: re.sub(r"_\d+$", "", f.signature.name) for f in gd.library.function}
    for f in gd.library.function:
        f.signature.name = ren[f.signature.name]
    nodes = list(gd.node) + [n for f in gd.library.function for n in f.node_def]
    for n in nodes:
        for a in n.attr.values():
            if a.WhichOneof("value") == "func" and a.func.name in ren:
                a.func.name = ren[a.func.name]


def function_call():
    """A tf.function called from the v1 graph: a PartitionedCall node (`f` func attr, Tin/Tout
    list(type) attrs) and a FunctionDefLibrary with one two-result function whose NodeDef
    inputs use the FunctionDef form `node:out_arg:index`. Import coverage; it lives in extra/
    because the tf-frontend pipeline is not required to inline function calls."""
    x = v1.placeholder(tf.float32, [None, 3], name="x")
    y = v1.placeholder(tf.float32, [None, 3], name="y")

    @tf.function(autograph=False)
    def f(a, b):
        return a * b + 1.0, tf.tanh(a)

    p, q = f(x, y)
    r = rng(13)
    return Spec({x: r.randn(2, 3).astype(np.float32), y: r.randn(2, 3).astype(np.float32)},
                [tf.identity(p, name="o1"), tf.identity(q, name="o2")],
                post=stable_function_names)


def mlp_gradients():
    """Forward and backward of a small MLP as `tf.gradients` builds it: MatMul, BiasAdd,
    Relu, Tanh, Sigmoid, a broadcasting Add, the dense and the sparse softmax cross-entropy,
    reduce_mean; the gradients of the loss with respect to the weights and the input
    (ReluGrad, TanhGrad, SigmoidGrad, BiasAddGrad, BroadcastGradientArgs over shapes computed
    at run time (the batch is dynamic), the MatMul transposes, the cross-entropies' backprop
    outputs)."""
    r = rng(40)
    x = v1.placeholder(tf.float32, [None, 3], name="x")  # a dynamic batch: shapes computed at run time
    labels = v1.placeholder(tf.float32, [None, 2], name="labels")
    ids = v1.placeholder(tf.int32, [None], name="ids")
    w1 = tf.constant(r.randn(3, 5).astype(np.float32), name="w1")
    b1 = tf.constant((r.randn(5) * 0.1).astype(np.float32), name="b1")
    w2 = tf.constant(r.randn(5, 4).astype(np.float32), name="w2")
    w3 = tf.constant(r.randn(4, 2).astype(np.float32), name="w3")
    b3 = tf.constant((r.randn(1, 2) * 0.1).astype(np.float32), name="b3")
    h1 = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w1), b1), name="h1")
    h2 = tf.tanh(tf.matmul(h1, w2), name="h2")
    h3 = tf.multiply(tf.sigmoid(h2), 2.0, name="h3")
    logits = tf.add(tf.matmul(h3, w3), b3, name="logits")
    dense = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits), name="dense")
    sparse = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits), name="sparse")
    loss = tf.add(dense, 0.5 * sparse, name="loss")
    grads = tf.gradients(loss, [w1, b1, w2, w3, b3, x])
    outs = [tf.identity(g, name=f"grad_{n}") for g, n in zip(grads, ["w1", "b1", "w2", "w3", "b3", "x"])]
    # the reduction axes of a broadcast's gradient, on shapes fed at run time (size-1 axes of
    # both sides included)
    s0 = v1.placeholder(tf.int32, [None], name="s0")
    s1 = v1.placeholder(tf.int32, [None], name="s1")
    bga = tf.raw_ops.BroadcastGradientArgs(s0=s0, s1=s1, name="bga")
    xv = r.randn(4, 3).astype(np.float32)
    lv = np.eye(2, dtype=np.float32)[[0, 1, 1, 0]]
    iv = np.array([1, 0, 1, 1], np.int32)
    return Spec({x: xv, labels: lv, ids: iv, s0: np.array([4, 1, 3], np.int32), s1: np.array([2, 1, 4, 1, 1], np.int32)},
                [loss] + outs + [bga[0], bga[1]])


def train_three(model, feeds, rates):
    """Three copies of `model(scope, resource)` trained together in one step: "sgd"
    (reference variables) by GradientDescent, "mom" (resource variables) by Momentum 0.9,
    "adam" (reference variables) by Adam, at `rates`; NOT frozen: targets `init`, then `train`
    20 times (every run fed `feeds`), then the three losses."""
    l_sgd = model("sgd", False)
    l_mom = model("mom", True)
    l_adam = model("adam", False)
    train = tf.group(v1.train.GradientDescentOptimizer(rates[0]).minimize(l_sgd),
                     v1.train.MomentumOptimizer(rates[1], 0.9).minimize(l_mom),
                     v1.train.AdamOptimizer(rates[2]).minimize(l_adam), name="train")
    init = v1.global_variables_initializer()
    return Spec(feeds, [l_sgd, l_mom, l_adam], targets=[init] + [train] * 20, freeze=False)


def mlp_model(x, ids, init_w1, init_w2, out_bias):
    """`model(scope, resource)` for `train_three`: a 3-6-3 MLP (Relu; an output bias when
    `out_bias`) with its own variables in `scope`, its mean sparse cross-entropy loss."""

    def model(scope, resource):
        with v1.variable_scope(scope):
            w1 = v1.get_variable("w1", initializer=init_w1, use_resource=resource)
            b1 = v1.get_variable("b1", initializer=np.zeros(6, np.float32), use_resource=resource)
            w2 = v1.get_variable("w2", initializer=init_w2, use_resource=resource)
            b2 = v1.get_variable("b2", initializer=np.zeros(3, np.float32), use_resource=resource) if out_bias else None
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
            logits = tf.matmul(h, w2) + b2 if out_bias else tf.matmul(h, w2)
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits), name="loss")

    return model


def mlp_training():
    """Three small MLPs (same data, their own variables) trained together by
    `GradientDescentOptimizer` (reference variables: ApplyGradientDescent),
    `MomentumOptimizer` (resource variables: ResourceApplyMomentum) and `AdamOptimizer`
    (reference variables: ApplyAdam, its beta powers updated by Assign); NOT frozen: targets
    `init`, then `train` 20 times (every run fed the same batch), then the three losses."""
    r = rng(50)
    x = v1.placeholder(tf.float32, [None, 3], name="x")
    ids = v1.placeholder(tf.int32, [None], name="ids")
    init_w1 = (r.randn(3, 6) * 0.5).astype(np.float32)
    init_w2 = (r.randn(6, 3) * 0.5).astype(np.float32)
    model = mlp_model(x, ids, init_w1, init_w2, True)
    xv = r.randn(8, 3).astype(np.float32)
    iv = np.array([0, 1, 2, 0, 1, 2, 1, 0], np.int32)
    return train_three(model, {x: xv, ids: iv}, (0.5, 0.1, 0.05))


def cnn_training():
    """Three small CNNs (NHWC: Conv2D SAME + BiasAdd + Relu, MaxPool VALID, Conv2D VALID with
    stride 2, AvgPool SAME, a dense layer, sparse softmax cross-entropy) trained together by
    GradientDescent, Momentum (resource variables) and Adam, as `mlp_training`: targets
    `init`, then `train` 20 times, then the three losses. The gradients use
    Conv2DBackpropInput/Filter, MaxPoolGrad, AvgPoolGrad, BiasAddGrad, ReluGrad."""
    r = rng(60)
    x = v1.placeholder(tf.float32, [None, 7, 7, 2], name="x")
    ids = v1.placeholder(tf.int32, [None], name="ids")
    init_k1 = (r.randn(3, 3, 2, 4) * 0.4).astype(np.float32)
    init_k2 = (r.randn(2, 2, 4, 5) * 0.4).astype(np.float32)
    init_w = (r.randn(5, 3) * 0.5).astype(np.float32)

    def model(scope, resource):
        with v1.variable_scope(scope):
            k1 = v1.get_variable("k1", initializer=init_k1, use_resource=resource)
            c1 = v1.get_variable("c1", initializer=np.full(4, 0.1, np.float32), use_resource=resource)
            k2 = v1.get_variable("k2", initializer=init_k2, use_resource=resource)
            w = v1.get_variable("w", initializer=init_w, use_resource=resource)
            b = v1.get_variable("b", initializer=np.zeros(3, np.float32), use_resource=resource)
            h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, k1, strides=1, padding="SAME"), c1))   # 7x7x4
            h = tf.nn.max_pool2d(h, ksize=2, strides=2, padding="VALID")                          # 3x3x4
            h = tf.nn.relu(tf.nn.conv2d(h, k2, strides=2, padding="VALID"))                       # 1x1x5
            h = tf.nn.avg_pool2d(h, ksize=2, strides=2, padding="SAME")                           # 1x1x5
            logits = tf.matmul(tf.reshape(h, [-1, 5]), w) + b
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits), name="loss")

    xv = r.randn(8, 7, 7, 2).astype(np.float32)
    iv = np.array([0, 1, 2, 0, 1, 2, 1, 0], np.int32)
    return train_three(model, {x: xv, ids: iv}, (0.2, 0.05, 0.02))


def dwcnn_training():
    """Three small NHWC CNNs with depthwise convolutions (Conv2D SAME + Relu, a depthwise
    convolution with channel multiplier 2, SAME, stride 2, dilation-free, + Relu, a second
    depthwise one VALID with multiplier 1, AvgPool, dense) trained 20 steps by
    GradientDescent, Momentum (resource variables) and Adam: the gradients use
    DepthwiseConv2dNativeBackpropInput/Filter; targets `init`, `train` x 20, the losses."""
    r = rng(70)
    x = v1.placeholder(tf.float32, [None, 6, 6, 2], name="x")
    ids = v1.placeholder(tf.int32, [None], name="ids")
    init_k1 = (r.randn(3, 3, 2, 3) * 0.4).astype(np.float32)
    init_d1 = (r.randn(3, 3, 3, 2) * 0.4).astype(np.float32)
    init_d2 = (r.randn(2, 2, 6, 1) * 0.4).astype(np.float32)
    init_w = (r.randn(6, 3) * 0.5).astype(np.float32)

    def model(scope, resource):
        with v1.variable_scope(scope):
            k1 = v1.get_variable("k1", initializer=init_k1, use_resource=resource)
            d1 = v1.get_variable("d1", initializer=init_d1, use_resource=resource)
            d2 = v1.get_variable("d2", initializer=init_d2, use_resource=resource)
            w = v1.get_variable("w", initializer=init_w, use_resource=resource)
            h = tf.nn.relu(tf.nn.conv2d(x, k1, strides=1, padding="SAME"))                         # 6x6x3
            h = tf.nn.relu(tf.nn.depthwise_conv2d(h, d1, strides=[1, 2, 2, 1], padding="SAME"))   # 3x3x6
            h = tf.nn.depthwise_conv2d(h, d2, strides=[1, 1, 1, 1], padding="VALID")              # 2x2x6
            h = tf.nn.avg_pool2d(h, ksize=2, strides=2, padding="VALID")                          # 1x1x6
            logits = tf.matmul(tf.reshape(h, [-1, 6]), w)
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits), name="loss")

    xv = r.randn(8, 6, 6, 2).astype(np.float32)
    iv = np.array([0, 1, 2, 0, 1, 2, 1, 0], np.int32)
    return train_three(model, {x: xv, ids: iv}, (0.2, 0.05, 0.02))


def cnn_bn_training():
    """Three small CNNs with a training-mode batch normalization (FusedBatchNormV3 on the
    batch's statistics, its scale and offset trained) between a SAME convolution and a
    strided one: the gradients add FusedBatchNormGradV3 (and ShapeN, ZerosLike). Targets
    `init`, then `train` 20 times, then the three losses."""
    r = rng(70)
    x = v1.placeholder(tf.float32, [None, 6, 6, 2], name="x")
    ids = v1.placeholder(tf.int32, [None], name="ids")
    init_k1 = (r.randn(3, 3, 2, 4) * 0.4).astype(np.float32)
    init_k2 = (r.randn(3, 3, 4, 3) * 0.3).astype(np.float32)
    init_w = (r.randn(3 * 3 * 3, 3) * 0.3).astype(np.float32)

    def model(scope, resource):
        with v1.variable_scope(scope):
            k1 = v1.get_variable("k1", initializer=init_k1, use_resource=resource)
            gamma = v1.get_variable("gamma", initializer=np.ones(4, np.float32), use_resource=resource)
            beta = v1.get_variable("beta", initializer=np.zeros(4, np.float32), use_resource=resource)
            k2 = v1.get_variable("k2", initializer=init_k2, use_resource=resource)
            w = v1.get_variable("w", initializer=init_w, use_resource=resource)
            h = tf.nn.conv2d(x, k1, strides=1, padding="SAME")                                   # 6x6x4
            h, _, _ = v1.nn.fused_batch_norm(h, gamma, beta, epsilon=1e-3, is_training=True)
            h = tf.nn.relu(h)
            h = tf.nn.conv2d(h, k2, strides=2, padding="SAME")                                   # 3x3x3
            logits = tf.matmul(tf.reshape(h, [-1, 27]), w)
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits), name="loss")

    xv = r.randn(8, 6, 6, 2).astype(np.float32)
    iv = np.array([0, 1, 2, 0, 1, 2, 1, 0], np.int32)
    return train_three(model, {x: xv, ids: iv}, (0.2, 0.05, 0.02))


def mlp_optimizers(salt, out_bias, runs):
    """`mlp_training`'s MLP (weights from rng(salt)) trained by one optimizer per model:
    `runs` is [(scope, resource variables, optimizer)]; NOT frozen: targets `init`, then
    `train` 20 times (every run fed the same batch), then one loss per model."""
    r = rng(salt)
    x = v1.placeholder(tf.float32, [None, 3], name="x")
    ids = v1.placeholder(tf.int32, [None], name="ids")
    init_w1 = (r.randn(3, 6) * 0.5).astype(np.float32)
    init_w2 = (r.randn(6, 3) * 0.5).astype(np.float32)
    model = mlp_model(x, ids, init_w1, init_w2, out_bias)
    losses = [model(scope, resource) for scope, resource, _ in runs]
    train = tf.group(*[opt.minimize(loss) for (_, _, opt), loss in zip(runs, losses)], name="train")
    init = v1.global_variables_initializer()
    xv = r.randn(8, 3).astype(np.float32)
    iv = np.array([0, 1, 2, 0, 1, 2, 1, 0], np.int32)
    return Spec({x: xv, ids: iv}, losses, targets=[init] + [train] * 20, freeze=False)


def mlp_more_optimizers():
    """`mlp_training`'s MLP trained 20 steps by the other v1 optimizers that apply one
    ApplyX op per variable: Adagrad (reference variables: ApplyAdagrad), RMSProp (resource
    variables: ResourceApplyRMSProp, slot `rms` starting at 1) and RMSProp with momentum
    (reference variables: ApplyRMSProp); targets `init`, then `train` 20 times, then the losses."""
    return mlp_optimizers(80, False, [("adagrad", False, v1.train.AdagradOptimizer(0.3)),
                                      ("rmsprop", True, v1.train.RMSPropOptimizer(0.02)),
                                      ("rms_momentum", False, v1.train.RMSPropOptimizer(0.01, momentum=0.8))])


def mlp_optimizers_3():
    """`mlp_training`'s MLP trained 20 steps by four more v1 optimizers: centered RMSProp
    (resource variables: ResourceApplyCenteredRMSProp), Adadelta (ApplyAdadelta), Ftrl with
    L1/L2 (ApplyFtrl) and Ftrl with L2 shrinkage and lr_power -0.7 (resource variables:
    ResourceApplyFtrlV2); targets `init`, then `train` 20 times, then the four losses."""
    return mlp_optimizers(90, True, [
        ("centered_rmsprop", True, v1.train.RMSPropOptimizer(0.02, momentum=0.5, centered=True)),
        ("adadelta", False, v1.train.AdadeltaOptimizer(5.0, rho=0.9)),
        ("ftrl", False, v1.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01, l2_regularization_strength=0.02)),
        ("ftrl_v2", True, v1.train.FtrlOptimizer(0.2, learning_rate_power=-0.7, l2_regularization_strength=0.01,
                                                 l2_shrinkage_regularization_strength=0.05))])


def mlp_proximal():
    """`mlp_training`'s MLP trained 20 steps by the proximal optimizers: ProximalGradientDescent
    with L1 and L2 (ApplyProximalGradientDescent), ProximalAdagrad with L1 and L2 (resource
    variables: ResourceApplyProximalAdagrad) and without (ApplyProximalAdagrad); targets
    `init`, then `train` 20 times, then the three losses."""
    return mlp_optimizers(100, True, [
        ("proximal_gd", False, v1.train.ProximalGradientDescentOptimizer(0.3, l1_regularization_strength=0.01,
                                                                         l2_regularization_strength=0.05)),
        ("proximal_adagrad", True, v1.train.ProximalAdagradOptimizer(0.4, l1_regularization_strength=0.02,
                                                                     l2_regularization_strength=0.01)),
        ("proximal_adagrad_plain", False, v1.train.ProximalAdagradOptimizer(0.3))])


def mlp_random_init():
    """`mlp_training`'s three MLPs with seeded random initializers instead of constants:
    glorot uniform (RandomUniform), truncated normal (TruncatedNormal) and random normal
    (RandomStandardNormal) weights, op seeds from the graph seed; NOT frozen: targets `init`
    (draws the initial values: gpass's random kernels reproduce TensorFlow's streams), then
    `train` 20 times, then the three losses."""
    r = rng(60)
    x = v1.placeholder(tf.float32, [None, 3], name="x")
    ids = v1.placeholder(tf.int32, [None], name="ids")

    def model(scope, resource):
        with v1.variable_scope(scope):
            w1 = v1.get_variable("w1", [3, 6], initializer=v1.glorot_uniform_initializer(), use_resource=resource)
            b1 = v1.get_variable("b1", [6], initializer=v1.random_normal_initializer(stddev=0.1), use_resource=resource)
            w2 = v1.get_variable("w2", [6, 3], initializer=v1.truncated_normal_initializer(stddev=0.5),
                                 use_resource=resource)
            h = tf.nn.relu(tf.matmul(x, w1) + b1)
            logits = tf.matmul(h, w2)
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits), name="loss")

    xv = r.randn(8, 3).astype(np.float32)
    iv = np.array([2, 1, 0, 0, 1, 2, 1, 0], np.int32)
    return train_three(model, {x: xv, ids: iv}, (0.5, 0.1, 0.05))


def image_resize():
    """ResizeBicubic as tf.compat.v1.image.resize_bicubic writes it: upsampling and downsampling,
    align_corners, half_pixel_centers (Keys' kernel, taps outside the image weighted 0), a
    uint8 image; ResizeBilinear with half_pixel_centers beside it."""
    img = v1.placeholder(tf.float32, [2, 5, 7, 3], name="img")
    img8 = v1.placeholder(tf.uint8, [1, 4, 6, 2], name="img8")
    raw = tf.raw_ops
    outs = [
        raw.ResizeBicubic(images=img, size=[8, 11], name="bicubic_up"),
        raw.ResizeBicubic(images=img, size=[3, 4], half_pixel_centers=True, name="bicubic_down_hpc"),
        raw.ResizeBicubic(images=img, size=[9, 13], half_pixel_centers=True, name="bicubic_up_hpc"),
        raw.ResizeBicubic(images=img, size=[9, 5], align_corners=True, name="bicubic_align"),
        raw.ResizeBicubic(images=img8, size=[7, 9], name="bicubic_u8"),
        raw.ResizeBilinear(images=img, size=[8, 11], half_pixel_centers=True, name="bilinear_hpc"),
    ]
    return Spec({img: (rng(31).rand(2, 5, 7, 3) * 4 - 2).astype(np.float32),
                 img8: rng(32).randint(0, 256, (1, 4, 6, 2)).astype(np.uint8)}, outs)


def image_area_unique():
    """ResizeArea (down, up, same size, a non-integer ratio, align_corners; 3 channels and not
    3; float, uint8, int32 and half images) and UniqueWithCounts (float with -0 beside +0 and
    NaNs, int64 with int64 indices, strings)."""
    img = v1.placeholder(tf.float32, [2, 5, 7, 3], name="img")
    img2 = v1.placeholder(tf.float32, [1, 6, 9, 2], name="img2")
    img8 = v1.placeholder(tf.uint8, [1, 4, 6, 2], name="img8")
    raw = tf.raw_ops
    xf = tf.constant([3.0, -0.0, 1.5, 3.0, 0.0, float("nan"), 1.5, float("nan"), 7.0], tf.float32, name="xf")
    xi = v1.placeholder(tf.int64, [10], name="xi")
    xs = tf.constant(["b", "a", "b", "c", "a", "b"], name="xs")
    uf = raw.UniqueWithCounts(x=xf, name="unique_f")
    ui = raw.UniqueWithCounts(x=xi, out_idx=tf.int64, name="unique_i")
    us = raw.UniqueWithCounts(x=xs, name="unique_s")
    outs = [
        raw.ResizeArea(images=img, size=[3, 4], name="area_down"),
        raw.ResizeArea(images=img, size=[8, 11], name="area_up"),
        raw.ResizeArea(images=img, size=[5, 7], name="area_same"),
        raw.ResizeArea(images=img, size=[9, 5], align_corners=True, name="area_align"),
        raw.ResizeArea(images=img2, size=[4, 5], name="area_ratio"),
        raw.ResizeArea(images=img2, size=[4, 7], align_corners=True, name="area_align2"),
        raw.ResizeArea(images=img8, size=[3, 4], name="area_u8"),
        raw.ResizeArea(images=tf.cast(img2 * 100, tf.int32), size=[5, 4], name="area_i32"),
        raw.ResizeArea(images=tf.cast(img, tf.float16), size=[4, 6], name="area_f16"),
        uf.idx, uf.count,
        ui.y, ui.idx, ui.count,
        us.y, us.idx, us.count,
    ]
    return Spec({img: (rng(33).rand(2, 5, 7, 3) * 4 - 2).astype(np.float32),
                 img2: rng(34).rand(1, 6, 9, 2).astype(np.float32),
                 img8: rng(35).randint(0, 256, (1, 4, 6, 2)).astype(np.uint8),
                 xi: np.array([5, -2, 5, 9, -2, 0, 5, 1 << 40, 0, 9], np.int64)}, outs)


def matrix_ops():
    """MatrixDiag / DiagPart / SetDiag and their V2 / V3 forms: k a scalar (0, super- and
    subdiagonals) and bands [lo, hi] of both signs, the four V3 aligns (V2 is LEFT_LEFT),
    num_rows / num_cols given and -1, nonzero padding, batched and non-square matrices, int32,
    float, half and bool; MatrixDeterminant on float32 and float64 batches with singular
    matrices (a -0 among them), a permutation, a 20x20 one and an empty 0x0 batch."""
    raw = tf.raw_ops
    d3 = v1.placeholder(tf.float32, [2, 3, 4], name="d3")   # 3 diagonals of length 4, batched
    vi = v1.placeholder(tf.int32, [2, 4], name="vi")        # one diagonal of length 4, batched
    m = v1.placeholder(tf.float32, [2, 3, 5], name="m")     # non-square, batched
    mi = v1.placeholder(tf.int32, [4, 3], name="mi")        # tall, int
    det32 = v1.placeholder(tf.float32, [4, 3, 3], name="det32")
    det64 = v1.placeholder(tf.float64, [2, 4, 4], name="det64")
    big = v1.placeholder(tf.float64, [20, 20], name="big")
    empty = v1.placeholder(tf.float32, [2, 0, 0], name="empty")
    aligns = ["LEFT_RIGHT", "RIGHT_LEFT", "LEFT_LEFT", "RIGHT_RIGHT"]
    outs = [
        raw.MatrixDiag(diagonal=vi, name="diag_v1"),
        raw.MatrixDiagV2(diagonal=vi, k=1, num_rows=-1, num_cols=-1, padding_value=9, name="diag_v2_super"),
        raw.MatrixDiagV2(diagonal=d3, k=[-1, 1], num_rows=-1, num_cols=-1, padding_value=0.5, name="diag_v2_band"),
        raw.MatrixDiagV3(diagonal=vi, k=-2, num_rows=-1, num_cols=-1, padding_value=-3, name="diag_v3_sub"),
        raw.MatrixDiagV3(diagonal=vi, k=1, num_rows=4, num_cols=-1, padding_value=0, name="diag_v3_rows"),
        raw.MatrixDiagV3(diagonal=vi, k=1, num_rows=6, num_cols=5, padding_value=7, name="diag_v3_rows_cols"),
        raw.MatrixDiagV3(diagonal=d3, k=[-1, 1], num_rows=5, num_cols=-1, padding_value=0.25, name="diag_v3_tall"),
        raw.MatrixDiagV3(diagonal=d3, k=[-1, 1], num_rows=-1, num_cols=6, padding_value=0.25, name="diag_v3_wide"),
        raw.MatrixDiagV3(diagonal=d3[0], k=[-2, 0], num_rows=-1, num_cols=-1, padding_value=1,
                         align="RIGHT_RIGHT", name="diag_v3_subs"),
        raw.MatrixDiagV3(diagonal=d3[1], k=[1, 3], num_rows=-1, num_cols=-1, padding_value=-1,
                         align="LEFT_RIGHT", name="diag_v3_supers"),
        raw.MatrixDiagV3(diagonal=tf.greater(vi, 2), k=[0, 0], num_rows=-1, num_cols=-1, padding_value=True,
                         name="diag_v3_bool"),
        raw.MatrixDiagV3(diagonal=tf.constant([[1.0, 2.0], [3.0, 4.0]]), k=[0, 1], num_rows=-1, num_cols=-1,
                         padding_value=8.0, name="diag_v3_const"),
        raw.MatrixDiagPart(input=m, name="part_v1"),
        raw.MatrixDiagPartV2(input=m, k=[-1, 2], padding_value=-1.0, name="part_v2"),
        raw.MatrixDiagPartV3(input=mi, k=-2, padding_value=5, name="part_v3_sub"),
        raw.MatrixDiagPartV3(input=mi, k=[0, 0], padding_value=5, name="part_v3_pair"),
        raw.MatrixDiagPartV3(input=mi, k=[-3, 2], padding_value=-7, align="LEFT_RIGHT", name="part_v3_int"),
        raw.MatrixDiagPartV3(input=tf.cast(m, tf.float16), k=[1, 4], padding_value=2.0, name="part_v3_f16"),
        raw.MatrixSetDiag(input=m, diagonal=d3[:, 0, :3] + 10, name="set_v1"),
        raw.MatrixSetDiagV2(input=m, diagonal=d3[:, :, :3] * 3, k=[-1, 1], name="set_v2"),
        raw.MatrixSetDiagV3(input=mi, diagonal=vi[0, :2] * 100, k=-2, name="set_v3_sub"),
        raw.MatrixSetDiagV3(input=mi, diagonal=tf.reshape(tf.range(1, 13), [4, 3]), k=[-2, 1], align="RIGHT_RIGHT",
                            name="set_v3_int"),
        raw.MatrixDeterminant(input=det32, name="det_f32"),
        raw.MatrixDeterminant(input=det64, name="det_f64"),
        raw.MatrixDeterminant(input=big, name="det_big"),
        raw.MatrixDeterminant(input=empty, name="det_empty"),
    ]
    # every align on a band of a non-square batch, each op
    for a in aligns:
        low = a.lower()
        outs.append(raw.MatrixDiagV3(diagonal=d3, k=[-1, 1], num_rows=-1, num_cols=-1, padding_value=0.5, align=a,
                                     name=f"diag_{low}"))
        outs.append(raw.MatrixDiagPartV3(input=m, k=[-2, 3], padding_value=7.0, align=a, name=f"part_{low}"))
        outs.append(raw.MatrixSetDiagV3(input=m, diagonal=tf.reshape(tf.range(24, dtype=tf.float32), [2, 4, 3]),
                                        k=[-1, 2], align=a, name=f"set_{low}"))
    r = rng(36)
    dets = r.randn(4, 3, 3).astype(np.float32)
    dets[1] = [[1, 2, 3], [2, 4, 6], [0, 1, 5]]  # singular: a zero pivot after a row swap
    dets[2] = [[0, 1, 0], [0, 0, 1], [1, 0, 0]]  # a permutation
    dets[3] = [[0, 0, 0], [1, 2, 3], [4, 5, 6]]  # a zero row
    return Spec({d3: r.randn(2, 3, 4).astype(np.float32),
                 vi: r.randint(-9, 10, (2, 4)).astype(np.int32),
                 m: r.randn(2, 3, 5).astype(np.float32),
                 mi: r.randint(-50, 50, (4, 3)).astype(np.int32),
                 det32: dets,
                 det64: r.randn(2, 4, 4),
                 big: np.eye(20) + 0.2 * r.randn(20, 20),
                 empty: np.zeros((2, 0, 0), np.float32)}, outs)


def array_ops_2():
    """DepthToSpace / SpaceToDepth (NHWC), Roll (a repeated axis, negative and large shifts),
    Cumprod (exclusive, reverse), LeftShift / RightShift (amounts past the width and negative),
    LRN, DynamicStitch / ParallelDynamicStitch, DynamicPartition, SparseToDense,
    SparseSegmentSum / Mean / SqrtN (with and without num_segments), FakeQuantWithMinMaxArgs /
    Vars, MaxPoolV2, MaxPoolWithArgmax (ties among rounded values; int32 indices with the batch)."""
    raw = tf.raw_ops
    x = v1.placeholder(tf.float32, [2, 4, 6, 8], name="x")
    xi = v1.placeholder(tf.int32, [3, 4, 5], name="xi")
    data = v1.placeholder(tf.float32, [5, 3], name="data")
    fq = v1.placeholder(tf.float32, [4, 7], name="fq")
    a = tf.constant([[1, -7, 100], [-128, 127, 3]], tf.int8, name="a8")
    sh = tf.constant([[0, 1, 9], [-1, 7, 2]], tf.int8, name="s8")
    a32 = tf.constant([1, -1, 123456, -99, 7, 1 << 30], tf.int32, name="a32")
    s32 = tf.constant([31, 31, 3, 40, -2, 1], tf.int32, name="s32")
    u8 = tf.constant([255, 1, 128], tf.uint8, name="u8")
    su8 = tf.constant([1, 8, 3], tf.uint8, name="su8")
    parts = raw.DynamicPartition(data=data, partitions=tf.constant([2, 0, 2, 1, 2], tf.int32), num_partitions=3,
                                 name="partition")
    parts2 = raw.DynamicPartition(data=xi, partitions=tf.constant([[0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 0, 1]], tf.int32),
                                  num_partitions=2, name="partition2")
    seg_ix = tf.constant([0, 4, 1, 1, 3, 2], tf.int32)
    seg_id = tf.constant([0, 0, 1, 1, 1, 3], tf.int32)
    outs = [
        raw.DepthToSpace(input=x, block_size=2, name="d2s"),
        raw.SpaceToDepth(input=x, block_size=2, name="s2d"),
        raw.DepthToSpace(input=tf.reshape(xi[:, :, :4], [1, 3, 4, 4]), block_size=2, name="d2s_int"),
        raw.Roll(input=xi, shift=tf.constant([2, -1, 7]), axis=tf.constant([0, 2, 2]), name="roll"),
        raw.Roll(input=data, shift=tf.constant(-12, tf.int64), axis=tf.constant(0, tf.int64), name="roll_scalar"),
        raw.Cumprod(x=data, axis=0, name="cumprod"),
        raw.Cumprod(x=data, axis=1, exclusive=True, reverse=True, name="cumprod_ex_rev"),
        raw.LeftShift(x=a, y=sh, name="lshift8"),
        raw.RightShift(x=a, y=sh, name="rshift8"),
        raw.LeftShift(x=a32, y=s32, name="lshift32"),
        raw.RightShift(x=a32, y=s32, name="rshift32"),
        raw.LeftShift(x=u8, y=su8, name="lshiftu8"),
        raw.RightShift(x=u8, y=su8, name="rshiftu8"),
        raw.LRN(input=x, name="lrn"),
        raw.LRN(input=x, depth_radius=2, bias=1.5, alpha=0.3, beta=0.75, name="lrn2"),
        raw.DynamicStitch(indices=[tf.constant([0, 4], tf.int32), tf.constant([[2], [6]], tf.int32)],
                          data=[data[:2], tf.reshape(data[2:4], [2, 1, 3])], name="stitch"),
        raw.ParallelDynamicStitch(indices=[tf.constant([1, 0], tf.int32), tf.constant([1], tf.int32)],
                                  data=[tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([[9.0, 8.0]])], name="pstitch"),
        parts[0], parts[1], parts[2], parts2[0], parts2[1],
        raw.SparseToDense(sparse_indices=tf.constant([[0, 1], [1, 3], [2, 0]], tf.int64), output_shape=tf.constant([3, 4], tf.int64),
                          sparse_values=tf.constant([5.0, 6.0, 7.0]), default_value=tf.constant(-1.0), name="s2dense"),
        raw.SparseToDense(sparse_indices=tf.constant([3, 1, 3], tf.int32), output_shape=tf.constant([5], tf.int32),
                          sparse_values=tf.constant(4, tf.int32), default_value=tf.constant(0, tf.int32),
                          validate_indices=False, name="s2dense_unsorted"),
        raw.SparseSegmentSum(data=data, indices=seg_ix, segment_ids=seg_id, name="ss_sum"),
        raw.SparseSegmentMean(data=data, indices=seg_ix, segment_ids=seg_id, name="ss_mean"),
        raw.SparseSegmentSqrtN(data=data, indices=seg_ix, segment_ids=seg_id, name="ss_sqrtn"),
        raw.SparseSegmentSumWithNumSegments(data=data, indices=seg_ix, segment_ids=seg_id, num_segments=tf.constant(6),
                                            name="ss_sum_n"),
        raw.SparseSegmentMeanWithNumSegments(data=data, indices=tf.constant([4, 0], tf.int64),
                                             segment_ids=tf.constant([1, 2], tf.int64), num_segments=tf.constant(4, tf.int64),
                                             name="ss_mean_n"),
        raw.SparseSegmentSqrtNWithNumSegments(data=data, indices=seg_ix, segment_ids=seg_id, num_segments=tf.constant(5),
                                              name="ss_sqrtn_n"),
        raw.FakeQuantWithMinMaxArgs(inputs=fq, name="fq_args"),
        raw.FakeQuantWithMinMaxArgs(inputs=fq, min=-1.2, max=3.3, num_bits=4, narrow_range=True, name="fq_args_narrow"),
        raw.FakeQuantWithMinMaxArgs(inputs=fq, min=0.5, max=2.5, name="fq_args_positive"),
        raw.FakeQuantWithMinMaxVars(inputs=fq, min=tf.constant(-2.5), max=tf.constant(1.75), num_bits=6, name="fq_vars"),
        raw.MaxPoolV2(input=x, ksize=tf.constant([1, 3, 2, 1]), strides=tf.constant([1, 2, 2, 1]), padding="SAME",
                      name="maxpool_v2"),
    ]
    mpa = raw.MaxPoolWithArgmax(input=tf.round(x * 2), ksize=[1, 2, 3, 1], strides=[1, 2, 2, 1], padding="VALID",
                                name="maxpool_argmax")
    mpb = raw.MaxPoolWithArgmax(input=x, ksize=[1, 3, 3, 1], strides=[1, 1, 2, 1], padding="SAME", Targmax=tf.int32,
                                include_batch_in_index=True, name="maxpool_argmax_b")
    outs += [mpa.output, mpa.argmax, mpb.output, mpb.argmax]
    return Spec({x: (rng(41).rand(2, 4, 6, 8) * 4 - 2).astype(np.float32),
                 xi: rng(42).randint(-50, 50, (3, 4, 5)).astype(np.int32),
                 data: (rng(43).rand(5, 3) * 2 + 0.25).astype(np.float32),
                 fq: (rng(44).rand(4, 7) * 12 - 6).astype(np.float32)}, outs)


def image_ops():
    """NonMaxSuppression V1..V5 (overlapping boxes with tied scores, flipped corners, an empty box,
    score_threshold, pad_to_max_output_size, soft_nms_sigma, max_output_size below and above the
    survivors, half boxes); CropAndResize (boxes partly outside the image, a flipped box, a crop
    size of 1 on one axis, bilinear and nearest, extrapolation_value, float and uint8 images);
    AdjustContrastv2, AdjustHue (positive, negative and wrapping deltas), AdjustSaturation,
    RGBToHSV / HSVToRGB (grey pixels and tied channels among them); ExtractImagePatches (SAME and
    VALID, strides and rates > 1, float and int32)."""
    raw = tf.raw_ops
    boxes = v1.placeholder(tf.float32, [10, 4], name="boxes")
    scores = v1.placeholder(tf.float32, [10], name="scores")
    img = v1.placeholder(tf.float32, [2, 5, 6, 3], name="img")
    img8 = v1.placeholder(tf.uint8, [1, 4, 4, 2], name="img8")
    rgb = v1.placeholder(tf.float32, [2, 5, 7, 3], name="rgb")
    pat = v1.placeholder(tf.float32, [2, 7, 8, 3], name="pat")
    f = lambda v: tf.constant(v, tf.float32)
    h = lambda v: tf.constant(v, tf.float16)
    v4 = raw.NonMaxSuppressionV4(boxes=boxes, scores=scores, max_output_size=8, iou_threshold=f(0.5),
                                 score_threshold=f(0.55), pad_to_max_output_size=True, name="nms_v4_pad")
    v4b = raw.NonMaxSuppressionV4(boxes=boxes, scores=scores, max_output_size=3, iou_threshold=f(0.3),
                                  score_threshold=f(0.0), name="nms_v4_short")
    v5 = raw.NonMaxSuppressionV5(boxes=boxes, scores=scores, max_output_size=20, iou_threshold=f(0.5),
                                 score_threshold=f(0.1), soft_nms_sigma=f(0.5), name="nms_v5_soft")
    v5p = raw.NonMaxSuppressionV5(boxes=boxes, scores=scores, max_output_size=12, iou_threshold=f(0.4),
                                  score_threshold=f(0.2), soft_nms_sigma=f(0.0), pad_to_max_output_size=True,
                                  name="nms_v5_hard_pad")
    v5h = raw.NonMaxSuppressionV5(boxes=tf.cast(boxes, tf.float16), scores=tf.cast(scores, tf.float16),
                                  max_output_size=6, iou_threshold=h(0.5), score_threshold=h(0.05),
                                  soft_nms_sigma=h(0.3), name="nms_v5_half")
    cboxes = tf.constant([[0.13, 0.21, 0.83, 0.91], [-0.31, -0.22, 0.52, 1.27], [0.93, 0.84, 0.11, 0.07],
                          [0.37, 0.11, 0.71, 0.63]], tf.float32)
    cind = tf.constant([0, 1, 0, 1], tf.int32)
    outs = [
        raw.NonMaxSuppression(boxes=boxes, scores=scores, max_output_size=20, name="nms_v1"),
        raw.NonMaxSuppression(boxes=boxes, scores=scores, max_output_size=2, iou_threshold=0.3, name="nms_v1_short"),
        raw.NonMaxSuppressionV2(boxes=boxes, scores=scores, max_output_size=20, iou_threshold=f(0.5), name="nms_v2"),
        raw.NonMaxSuppressionV2(boxes=tf.cast(boxes, tf.float16), scores=tf.cast(scores, tf.float16),
                                max_output_size=20, iou_threshold=f(0.7), name="nms_v2_half"),
        raw.NonMaxSuppressionV3(boxes=boxes, scores=scores, max_output_size=20, iou_threshold=f(0.3),
                                score_threshold=f(0.55), name="nms_v3"),
        raw.NonMaxSuppressionV3(boxes=tf.cast(boxes, tf.float16), scores=tf.cast(scores, tf.float16),
                                max_output_size=4, iou_threshold=h(0.5), score_threshold=h(0.5), name="nms_v3_half"),
        v4.selected_indices, v4.valid_outputs, v4b.selected_indices, v4b.valid_outputs,
        v5.selected_indices, v5.selected_scores, v5.valid_outputs,
        v5p.selected_indices, v5p.selected_scores, v5p.valid_outputs,
        v5h.selected_indices, v5h.selected_scores, v5h.valid_outputs,
        raw.CropAndResize(image=img, boxes=cboxes, box_ind=cind, crop_size=[3, 4], name="crop_bilinear"),
        raw.CropAndResize(image=img, boxes=cboxes, box_ind=cind, crop_size=[5, 3], method="nearest",
                          extrapolation_value=-1.5, name="crop_nearest"),
        raw.CropAndResize(image=img, boxes=cboxes, box_ind=cind, crop_size=[1, 5], extrapolation_value=0.25,
                          name="crop_row"),
        raw.CropAndResize(image=img, boxes=cboxes, box_ind=cind, crop_size=[4, 1], method="nearest",
                          name="crop_col"),
        raw.CropAndResize(image=img8, boxes=cboxes[:3], box_ind=tf.zeros([3], tf.int32), crop_size=[3, 3],
                          name="crop_u8"),
        raw.CropAndResize(image=img8, boxes=cboxes[1:], box_ind=tf.zeros([3], tf.int32), crop_size=[2, 5],
                          method="nearest", extrapolation_value=7.0, name="crop_u8_nearest"),
        raw.AdjustContrastv2(images=rgb, contrast_factor=f(1.7), name="contrast"),
        raw.AdjustContrastv2(images=pat[0, :, :4], contrast_factor=f(-0.5), name="contrast_rank3"),
        raw.AdjustHue(images=rgb, delta=f(0.3), name="hue_pos"),
        raw.AdjustHue(images=rgb, delta=f(-0.45), name="hue_neg"),
        raw.AdjustHue(images=rgb, delta=f(0.9), name="hue_wrap"),
        raw.AdjustSaturation(images=rgb, scale=f(0.4), name="saturation_down"),
        raw.AdjustSaturation(images=rgb, scale=f(2.5), name="saturation_up"),
        raw.RGBToHSV(images=rgb, name="rgb_to_hsv"),
        raw.HSVToRGB(images=rgb, name="hsv_to_rgb"),
        raw.HSVToRGB(images=raw.RGBToHSV(images=rgb), name="hsv_round_trip"),
        raw.RGBToHSV(images=tf.cast(rgb, tf.float64), name="rgb_to_hsv_f64"),
        raw.ExtractImagePatches(images=pat, ksizes=[1, 3, 2, 1], strides=[1, 2, 3, 1], rates=[1, 1, 1, 1],
                                padding="SAME", name="patches_same"),
        raw.ExtractImagePatches(images=pat, ksizes=[1, 2, 3, 1], strides=[1, 1, 2, 1], rates=[1, 2, 2, 1],
                                padding="VALID", name="patches_valid_rates"),
        raw.ExtractImagePatches(images=pat, ksizes=[1, 3, 3, 1], strides=[1, 2, 2, 1], rates=[1, 2, 1, 1],
                                padding="SAME", name="patches_same_rates"),
        raw.ExtractImagePatches(images=tf.cast(pat * 10, tf.int32), ksizes=[1, 2, 2, 1], strides=[1, 3, 3, 1],
                                rates=[1, 1, 1, 1], padding="VALID", name="patches_int"),
    ]
    nb = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [1, 10.15, 0, 11.15],
                   [0, 100, 1, 101], [0.5, 0.5, 0.2, 0.2], [0.3, 0.3, 0.6, 0.6], [2, 2, 2, 3], [5, 5, 6, 6]],
                  np.float32)
    ns = np.array([0.9, 0.75, 0.625, 0.95, 0.5, 0.3, 0.9, 0.625, 0.8, 0.9], np.float32)
    colors = rng(51).rand(2, 5, 7, 3).astype(np.float32)
    colors[0, 0, :] = colors[0, 0, :, :1]         # grey pixels
    colors[0, 1, :, 1] = colors[0, 1, :, 0]       # r == g
    colors[0, 2, :, 2] = colors[0, 2, :, 1]       # g == b
    colors[1, 0, :, 0] = colors[1, 0, :, 2]       # r == b
    return Spec({boxes: nb, scores: ns,
                 img: (rng(52).rand(2, 5, 6, 3) * 4 - 2).astype(np.float32),
                 img8: rng(53).randint(0, 256, (1, 4, 4, 2)).astype(np.uint8),
                 rgb: colors,
                 pat: rng(54).rand(2, 7, 8, 3).astype(np.float32)}, outs)


def sparse_ctc():
    """SparseReshape (a -1, the same shape, rank changes, an empty tensor), SparseFillEmptyRows
    (rows out of order, empty rows first / last / inside, float and string values, no
    entries) and CTCGreedyDecoder (merge_repeated both ways, a blank index of its own, short
    and empty sequences, ties; float and double)."""
    raw = tf.raw_ops
    i64 = tf.int64
    ind = v1.placeholder(i64, [5, 3], name="ind")
    shp = tf.constant([2, 3, 4], i64, name="shp")
    rs1 = raw.SparseReshape(input_indices=ind, input_shape=shp, new_shape=tf.constant([6, -1], i64), name="reshape_m1")
    rs2 = raw.SparseReshape(input_indices=ind, input_shape=shp, new_shape=tf.constant([4, 3, 2], i64), name="reshape_3d")
    rs3 = raw.SparseReshape(input_indices=ind, input_shape=shp, new_shape=shp, name="reshape_same")
    rs4 = raw.SparseReshape(input_indices=tf.zeros([0, 2], i64), input_shape=tf.constant([0, 5], i64),
                            new_shape=tf.constant([5, 0, 1], i64), name="reshape_empty")
    fi = v1.placeholder(i64, [6, 2], name="fi")
    fv = v1.placeholder(tf.float32, [6], name="fv")
    fe1 = raw.SparseFillEmptyRows(indices=fi, values=fv, dense_shape=tf.constant([8, 5], i64),
                                  default_value=tf.constant(-1.5), name="fill_f")
    fe2 = raw.SparseFillEmptyRows(indices=tf.constant([[1, 0], [1, 2], [3, 1]], i64), values=tf.constant(["a", "b", "c"]),
                                  dense_shape=tf.constant([5, 3], i64), default_value=tf.constant("z"), name="fill_s")
    fe3 = raw.SparseFillEmptyRows(indices=tf.zeros([0, 2], i64), values=tf.zeros([0], tf.int32),
                                  dense_shape=tf.constant([3, 4], i64), default_value=tf.constant(7), name="fill_none")
    logits = v1.placeholder(tf.float32, [7, 3, 5], name="logits")
    lens = v1.placeholder(tf.int32, [3], name="lens")
    d1 = raw.CTCGreedyDecoder(inputs=logits, sequence_length=lens, merge_repeated=True, name="ctc_merge")
    d2 = raw.CTCGreedyDecoder(inputs=logits, sequence_length=lens, merge_repeated=False, name="ctc_plain")
    d3 = raw.CTCGreedyDecoder(inputs=tf.cast(logits, tf.float64), sequence_length=lens, merge_repeated=True,
                              blank_index=0, name="ctc_blank0")
    outs = list(rs1) + list(rs2) + list(rs3) + list(rs4) + list(fe1) + list(fe2) + list(fe3) + list(d1) + list(d2) + list(d3)
    x = np.round(rng(40).rand(7, 3, 5) * 4, 0).astype(np.float32)  # integers: ties between classes
    x[:, :, 4] -= 1.0  # blanks (class 4) win less often
    return Spec({ind: np.array([[0, 0, 1], [0, 2, 3], [1, 0, 0], [1, 1, 2], [1, 2, 3]], np.int64),
                 fi: np.array([[6, 1], [2, 0], [6, 0], [2, 4], [4, 3], [2, 1]], np.int64),
                 fv: np.array([1, 2, 3, 4, 5, 6], np.float32),
                 logits: x, lens: np.array([7, 4, 0], np.int32)}, outs)


def conv3d():
    """Conv3D (SAME with unit strides, VALID with strides, float and double), MaxPool3D and
    AvgPool3D (SAME and VALID windows, strides over depth, rows and columns) and the gradients
    tf.gradients writes for them: Conv3DBackpropInputV2, Conv3DBackpropFilterV2, MaxPool3DGrad,
    AvgPool3DGrad; and a MaxPool3DGrad over an input with tied maxima (TensorFlow's CPU kernel
    gives the gradient to every input within 1e-5 of the window's maximum)."""
    raw = tf.raw_ops
    x = v1.placeholder(tf.float32, [2, 5, 6, 4, 3], name="x")
    f = v1.placeholder(tf.float32, [3, 2, 3, 3, 4], name="f")
    xt = v1.placeholder(tf.float32, [1, 4, 4, 5, 2], name="xt")
    c1 = tf.nn.conv3d(x, f, strides=[1, 1, 1, 1, 1], padding="SAME", name="conv_same")
    c2 = tf.nn.conv3d(x, f, strides=[1, 2, 1, 2, 1], padding="VALID", name="conv_valid")
    c3 = tf.nn.conv3d(tf.cast(x, tf.float64), tf.cast(f, tf.float64), strides=[1, 1, 2, 1, 1], padding="SAME",
                      name="conv_f64")
    m1 = tf.nn.max_pool3d(x, ksize=[1, 2, 2, 2, 1], strides=[1, 2, 2, 2, 1], padding="SAME", name="max_same")
    m2 = tf.nn.max_pool3d(x, ksize=[1, 3, 2, 1, 1], strides=[1, 1, 2, 1, 1], padding="VALID", name="max_valid")
    a1 = tf.nn.avg_pool3d(x, ksize=[1, 3, 2, 2, 1], strides=[1, 2, 1, 2, 1], padding="SAME", name="avg_same")
    a2 = tf.nn.avg_pool3d(x, ksize=[1, 2, 3, 2, 1], strides=[1, 1, 1, 1, 1], padding="VALID", name="avg_valid")
    ys = [c1, c2, m1, m2, a1, a2]
    weights = [tf.constant((rng(51 + k).randn(*y.shape.as_list()) * 0.25).astype(np.float32)) for k, y in enumerate(ys)]
    loss = tf.add_n([tf.reduce_sum(y * w) for y, w in zip(ys, weights)], name="loss")
    dx, df = tf.gradients(loss, [x, f], name="grads")
    mt = tf.nn.max_pool3d(xt, ksize=[1, 2, 2, 3, 1], strides=[1, 2, 1, 2, 1], padding="SAME", name="max_ties")
    gt = raw.MaxPool3DGrad(orig_input=xt, orig_output=mt, grad=tf.ones_like(mt) * 0.5 + tf.cast(
        tf.reshape(tf.range(tf.size(mt)), tf.shape(mt)), tf.float32), ksize=[1, 2, 2, 3, 1], strides=[1, 2, 1, 2, 1],
        padding="SAME", name="max_ties_grad")
    xs = (rng(50).randn(2, 5, 6, 4, 3) * 0.25).astype(np.float32)  # small sums: float32 within 1e-5 of TF's order
    ties = np.round(rng(52).rand(1, 4, 4, 5, 2) * 2).astype(np.float32)  # 0, 1, 2: many equal maxima
    return Spec({x: xs, f: (rng(53).randn(3, 2, 3, 3, 4) * 0.25).astype(np.float32), xt: ties},
                [c1, c2, c3, m1, m2, a1, a2, dx, df, mt, gt])


def string_ops():
    """AsString (floats with the default, precision, scientific, shortest, width + '0' / '-' /
    '+' fills; int32 / int64 / uint8 with width and fill; bools; strings with a width; halves),
    StringToNumber (float, double, int32, int64: whitespace, signs, hex, inf / infinity / nan in
    any case, exponents, overflow to inf and underflow to 0, subnormals, the int limits) and
    StringLower / StringUpper (ASCII letters; other bytes unchanged), StringStrip, StringLength
    (bytes and UTF-8 characters)."""
    raw = tf.raw_ops
    x = v1.placeholder(tf.float32, [7], name="x")
    xi = v1.placeholder(tf.int32, [4], name="xi")
    fs = v1.placeholder(tf.string, [16], name="fs")
    ints = v1.placeholder(tf.string, [8], name="ints")
    text = v1.placeholder(tf.string, [3], name="text")
    outs = [raw.AsString(input=x, name="as_default"), raw.AsString(input=x, precision=3, name="as_precision"),
            raw.AsString(input=x, scientific=True, name="as_scientific"),
            raw.AsString(input=x, shortest=True, name="as_shortest"),
            raw.AsString(input=x, width=12, fill="0", name="as_zero_fill"),
            raw.AsString(input=x, precision=2, width=9, fill="-", name="as_left"),
            raw.AsString(input=x, precision=1, fill="+", name="as_plus"),
            raw.AsString(input=tf.cast(x, tf.float64), precision=10, name="as_f64"),
            raw.AsString(input=tf.cast(x, tf.float16), precision=4, name="as_f16"),
            raw.AsString(input=xi, width=6, fill="0", name="as_i32"),
            raw.AsString(input=tf.cast(xi, tf.int64) * 1000000007, name="as_i64"),
            raw.AsString(input=tf.cast(tf.abs(xi), tf.uint8), width=4, name="as_u8"),
            raw.AsString(input=tf.greater(xi, 0), name="as_bool"),
            raw.AsString(input=text, width=8, name="as_str"),
            raw.StringToNumber(string_tensor=fs, out_type=tf.float32, name="to_f32"),
            raw.StringToNumber(string_tensor=fs, out_type=tf.float64, name="to_f64"),
            raw.StringToNumber(string_tensor=ints, out_type=tf.int64, name="to_i64"),
            raw.StringToNumber(string_tensor=ints[:5], out_type=tf.int32, name="to_i32"),
            raw.StringLower(input=text, name="lower"), raw.StringUpper(input=text, name="upper"),
            raw.StringStrip(input=ints, name="strip"), raw.StringLength(input=text, name="length_bytes"),
            raw.StringLength(input=text, unit="UTF8_CHAR", name="length_chars")]
    return Spec({x: np.array([3.14159, -2.5, 1e10, 1e-5, np.nan, -np.inf, 0.1], np.float32),
                 xi: np.array([5, -17, 0, 123456], np.int32),
                 fs: np.array([b"1.5", b" 2 ", b"-inf", b"NaN", b"0x1A", b"1e-3", b"+7", b".5", b"-0x10", b"Infinity",
                               b"1e-50", b"1e40", b"4e-320", b"0x1p3", b"\t8\n", b"11111111111111111111111111111111"]),
                 ints: np.array([b" -42 ", b"2147483647", b"-2147483648", b"+5", b"007", b"9223372036854775807",
                                 b"-9223372036854775808", b"\t12\n"]),
                 text: np.array([b"Hello World!", "\u00c4Bc \u00e9 Zz".encode(), b""])}, outs)


def combined_nms():
    """CombinedNonMaxSuppression: boxes shared by the classes (q = 1) and per class (q = 3),
    overlapping clusters and boxes outside [0, 1]; max_total_size below and above what the
    classes select; pad_per_class both ways; clip_boxes both ways; a score threshold that
    empties one image's class."""
    raw = tf.raw_ops
    b1 = v1.placeholder(tf.float32, [2, 10, 1, 4], name="b1")
    b3 = v1.placeholder(tf.float32, [2, 10, 3, 4], name="b3")
    sc = v1.placeholder(tf.float32, [2, 10, 3], name="sc")
    i32 = lambda v: tf.constant(v, tf.int32)
    f32 = lambda v: tf.constant(v, tf.float32)
    outs = []
    for k, (boxes, per, total, iou, thr, pad, clip) in enumerate([
            (b1, 3, 5, 0.5, 0.2, False, True), (b1, 4, 20, 0.4, 0.0, False, False), (b3, 2, 7, 0.5, 0.3, True, True),
            (b3, 3, 4, 0.6, 0.1, True, False), (b3, 10, 30, 0.3, 0.75, False, True)]):
        outs += list(raw.CombinedNonMaxSuppression(boxes=boxes, scores=sc, max_output_size_per_class=i32(per),
                                                   max_total_size=i32(total), iou_threshold=f32(iou),
                                                   score_threshold=f32(thr), pad_per_class=pad, clip_boxes=clip,
                                                   name="cnms_%d" % k))
    r = rng(60)
    centers = r.rand(2, 10, 1, 2) * 1.2 - 0.1  # some boxes reach outside [0, 1]
    centers[:, 5:] = centers[:, :5] + r.rand(2, 5, 1, 2) * 0.05  # clusters of overlapping boxes
    size = r.rand(2, 10, 1, 2) * 0.3 + 0.1
    one = np.concatenate([centers - size / 2, centers + size / 2], axis=3).astype(np.float32)
    three = (one + r.rand(2, 10, 3, 4) * 0.04).astype(np.float32)
    scores = r.permutation(60).reshape(2, 10, 3).astype(np.float32) / 60.0  # distinct: no ties
    return Spec({b1: one, b3: three, sc: scores}, outs)


def spectral():
    """RFFT / IRFFT (fft_length equal, cropping, padding by tf.signal, odd), RFFT2D / IRFFT2D, RFFT3D /
    IRFFT3D, FFT / IFFT / FFT2D / IFFT2D / FFT3D / IFFT3D of complex spectra, Complex (with
    broadcasting), Conj, Real, Imag, ComplexAbs, Angle, complex128, and tf.signal.stft's magnitude (frames, a Hann window,
    RFFT, ComplexAbs). Only real tensors are fetched."""
    raw = tf.raw_ops
    x = v1.placeholder(tf.float32, [2, 3, 8], name="x")
    sig = v1.placeholder(tf.float32, [2, 40], name="sig")
    n = lambda *v: tf.constant(list(v), tf.int32)
    r8 = raw.RFFT(input=x, fft_length=n(8), name="rfft8")
    parts = lambda z, tag: [raw.Real(input=z, Tout=z.dtype.real_dtype, name="re_" + tag),
                            raw.Imag(input=z, Tout=z.dtype.real_dtype, name="im_" + tag)]
    outs = [raw.ComplexAbs(x=r8, Tout=tf.float32, name="abs8"), raw.Angle(input=r8, Tout=tf.float32, name="angle8")]
    outs += parts(raw.RFFT(input=x, fft_length=n(6), name="rfft6"), "rfft6")
    outs += parts(tf.signal.rfft(x, fft_length=[11], name="rfft11"), "rfft11")  # padded by tf.signal (Pad + RFFT)
    outs += parts(raw.RFFT2D(input=x, fft_length=n(3, 8), name="rfft2"), "rfft2")
    outs += parts(raw.RFFT3D(input=x, fft_length=n(2, 2, 5), name="rfft3"), "rfft3")
    outs += [raw.IRFFT(input=r8, fft_length=n(8), name="irfft8"), raw.IRFFT(input=r8, fft_length=n(7), name="irfft7"),
             tf.signal.irfft(r8, fft_length=[12], name="irfft12"),
             raw.IRFFT2D(input=raw.RFFT2D(input=x, fft_length=n(3, 8)), fft_length=n(3, 8), name="irfft2"),
             raw.IRFFT3D(input=raw.RFFT3D(input=x, fft_length=n(2, 3, 6)), fft_length=n(2, 2, 5), name="irfft3")]
    outs += parts(raw.FFT(input=r8, name="fft1"), "fft1")
    outs += parts(raw.IFFT(input=r8, name="ifft1"), "ifft1")
    outs += parts(raw.FFT2D(input=r8, name="fft2"), "fft2")
    outs += parts(raw.IFFT2D(input=raw.Conj(input=r8), name="ifft2"), "ifft2")
    outs += parts(raw.FFT3D(input=r8, name="fft3"), "fft3")
    outs += parts(raw.IFFT3D(input=r8, name="ifft3"), "ifft3")
    r64 = raw.RFFT(input=tf.cast(x, tf.float64), fft_length=n(5), Tcomplex=tf.complex128, name="rfft_f64")
    outs += [raw.ComplexAbs(x=r64, Tout=tf.float64, name="abs_f64"),
             raw.IRFFT(input=r64, fft_length=n(5), Treal=tf.float64, name="irfft_f64")]
    outs += [tf.abs(tf.signal.stft(sig, frame_length=16, frame_step=8, fft_length=16), name="stft")]
    c = raw.Complex(real=x, imag=x[:, :1, :] * 2.0, Tout=tf.complex64, name="complex")  # broadcast imag
    outs += [raw.Angle(input=c, Tout=tf.float32, name="angle_c")] + parts(raw.FFT(input=c, name="fft_c"), "fft_c")
    return Spec({x: (rng(70).randn(2, 3, 8) * 0.3).astype(np.float32),
                 sig: np.sin(np.arange(80).reshape(2, 40) * 0.3).astype(np.float32)}, outs)


FIXTURES = [
    while_one_var, while_two_vars, while_invariant, nested_loops, while_growing,
    tensor_array_loop, dynamic_rnn_lstm, cond, variables, shape_ops, multi_output,
    control_deps, while_ctrl, variables_in_loop, mlp_gradients, mlp_training, cnn_training,
    cnn_bn_training, mlp_more_optimizers, mlp_random_init, mlp_optimizers_3, dwcnn_training, mlp_proximal,
    image_resize, image_area_unique, matrix_ops, array_ops_2, image_ops, sparse_ctc, conv3d, string_ops, combined_nms, spectral,
]
# Written to extra/<name>/ in the same format; not part of the must-run-through-tf-frontend set.
EXTRA = [function_call]


# --------------------------------------------------------------------------- writer

def tensor_name(t):
    return t.name  # "node:port"


def make(fn, out_root):
    name = fn.__name__
    g = tf.Graph()
    with g.as_default():
        v1.set_random_seed(SEED)
        spec = fn()
        config = v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
        with v1.Session(graph=g, config=config) as sess:
            for t in spec.targets:
                sess.run(t, feed_dict=spec.feeds)  # (targets that need no feed ignore it)
            values = sess.run(spec.fetches, feed_dict=spec.feeds)
            gd = g.as_graph_def(add_shapes=spec.add_shapes)
            if spec.freeze:
                keep = sorted({t.op.name for t in spec.fetches})
                gd = v1.graph_util.convert_variables_to_constants(sess, gd, keep)
    if spec.post:
        spec.post(gd)
    # A frozen graph has no initializer left to run.
    targets = [t.name for t in spec.targets] if not spec.freeze else []

    d = out_root / name
    d.mkdir(parents=True, exist_ok=True)
    for f in d.iterdir():
        if f.is_file():
            f.unlink()
    (d / "graph.pb").write_bytes(gd.SerializeToString(deterministic=True))
    (d / "graph.pbtxt").write_text(text_format.MessageToString(gd))
    lines = [f"tf_version {tf.__version__}"]
    lines += [f"target {t}" for t in targets]
    for i, (ph, arr) in enumerate(spec.feeds.items()):
        fname = f"feed_{i}.pb"
        (d / fname).write_bytes(tf.make_tensor_proto(arr).SerializeToString())
        lines.append(f"feed {tensor_name(ph)} {fname}")
    for i, (t, val) in enumerate(zip(spec.fetches, values)):
        fname = f"output_{i}.pb"
        (d / fname).write_bytes(tf.make_tensor_proto(np.asarray(val)).SerializeToString())
        lines.append(f"fetch {tensor_name(t)} {fname}")
    (d / "fixture.txt").write_text("\n".join(lines) + "\n")
    size = sum(f.stat().st_size for f in d.iterdir())
    print(f"{name}: {len(gd.node)} nodes, {size} bytes", file=sys.stderr)


# --------------------------------------------------------------------------- bad inputs

_PLACEHOLDER = """node {
  name: "x"
  op: "Placeholder"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: 4 } dim { size: 6 } } } }
}
"""

BAD_TEXT = {
    # Line 10: the string never ends (and the message is never closed).
    "malformed.pbtxt": _PLACEHOLDER + """node {
  name: "y"
  op: "Identity"
  input: "x
  attr { key: "T" value { type: DT_FLOAT } }
}
""",
    "unknown_input.pbtxt": _PLACEHOLDER + """node {
  name: "y"
  op: "Identity"
  input: "does_not_exist"
  attr { key: "T" value { type: DT_FLOAT } }
}
""",
    "bad_port.pbtxt": _PLACEHOLDER + """node {
  name: "split/split_dim"
  op: "Const"
  attr { key: "dtype" value { type: DT_INT32 } }
  attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 1 } } }
}
node {
  name: "split"
  op: "Split"
  input: "split/split_dim"
  input: "x"
  attr { key: "T" value { type: DT_FLOAT } }
  attr { key: "num_split" value { i: 2 } }
}
node {
  name: "y"
  op: "Identity"
  input: "split:5"
  attr { key: "T" value { type: DT_FLOAT } }
}
""",
}


def _copy_node(gd, name, new_name, **inputs):
    """Append a copy of node `name` named `new_name`; inputs[i] replaces input i."""
    src = next(n for n in gd.node if n.name == name)
    n = gd.node.add()
    n.CopyFrom(src)
    n.name = new_name
    for i, v in inputs.items():
        n.input[int(i[1:])] = v
    return n


def make_bad(out_root):
    """tests/data/tf/bad/: inputs the importer / functionalize_loops must reject."""
    d = out_root / "bad"
    d.mkdir(parents=True, exist_ok=True)
    for fname, text in BAD_TEXT.items():
        (d / fname).write_text(text)
    base = tf.compat.v1.GraphDef()
    base.ParseFromString((out_root / "while_one_var" / "graph.pb").read_bytes())

    # two_loopconds: a second loop variable in frame loop/while_context whose Switch takes
    # its predicate from a second LoopCond (on the same Less).
    gd = tf.compat.v1.GraphDef()
    gd.CopyFrom(base)
    _copy_node(gd, "loop/Enter", "loop/Enter_1")
    _copy_node(gd, "loop/Merge", "loop/Merge_1", i0="loop/Enter_1", i1="loop/NextIteration_1")
    _copy_node(gd, "loop/LoopCond", "loop/LoopCond_1")
    _copy_node(gd, "loop/Switch", "loop/Switch_1", i0="loop/Merge_1", i1="loop/LoopCond_1")
    _copy_node(gd, "loop/Identity", "loop/Identity_1", i0="loop/Switch_1:1")
    _copy_node(gd, "loop/NextIteration", "loop/NextIteration_1", i0="loop/Identity_1")
    _copy_node(gd, "loop/Exit", "loop/Exit_1", i0="loop/Switch_1")
    _copy_node(gd, "out", "out_1", i0="loop/Exit_1")
    (d / "two_loopconds.pbtxt").write_text(text_format.MessageToString(gd))

    # nextiteration_without_merge: the loop is intact, plus a second NextIteration of the
    # body's value whose output is consumed by nothing (no Merge takes it).
    gd = tf.compat.v1.GraphDef()
    gd.CopyFrom(base)
    _copy_node(gd, "loop/NextIteration", "loop/NextIteration_1")
    (d / "nextiteration_without_merge.pbtxt").write_text(text_format.MessageToString(gd))


def check(d):
    """Re-run the stored graph.pb in a fresh TensorFlow session from fixture.txt alone
    (targets in order, then feeds -> fetches) and compare with the stored outputs. Returns
    the largest absolute difference (exact 0 expected)."""
    gd = tf.compat.v1.GraphDef()
    gd.ParseFromString((d / "graph.pb").read_bytes())
    items = [line.split() for line in (d / "fixture.txt").read_text().splitlines() if line]
    g = tf.Graph()
    with g.as_default():
        tf.graph_util.import_graph_def(gd, name="")
        with v1.Session(graph=g) as sess:
            for it in items:
                if it[0] == "target":
                    sess.run(g.get_operation_by_name(it[1]))
            feeds = {g.get_tensor_by_name(it[1]): tf.make_ndarray(load_tensor(d / it[2]))
                     for it in items if it[0] == "feed"}
            fetches = [it for it in items if it[0] == "fetch"]
            got = sess.run([g.get_tensor_by_name(it[1]) for it in fetches], feed_dict=feeds)
    worst = 0.0
    for it, val in zip(fetches, got):
        ref = tf.make_ndarray(load_tensor(d / it[2]))
        if ref.shape != np.shape(val) or ref.dtype != np.asarray(val).dtype:
            raise SystemExit(f"{d.name}: {it[1]} shape/dtype mismatch")
        worst = max(worst, float(np.max(np.abs(ref.astype(np.float64) - val), initial=0.0)))
    return worst


def print_op_counts(root, names):
    total = collections.Counter()
    for name in names:
        gd = tf.compat.v1.GraphDef()
        gd.ParseFromString((root / name / "graph.pb").read_bytes())
        c = collections.Counter(n.op for n in gd.node)
        fn = collections.Counter(n.op for f in gd.library.function for n in f.node_def)
        total.update(set(c) | set(fn))
        print(f"- `{name}` ({len(gd.node)} nodes): "
              + ", ".join(f"{op}: {k}" for op, k in sorted(c.items()))
              + ("; in its functions: " + ", ".join(f"{op}: {k}" for op, k in sorted(fn.items()))
                 if fn else ""))
    print()
    print("Fixtures using each op: "
          + ", ".join(f"{op}: {k}" for op, k in sorted(total.items())))


def load_tensor(path):
    t = tf.compat.v1.make_tensor_proto(0)  # a TensorProto instance
    t.ParseFromString(path.read_bytes())
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--only", default="")
    ap.add_argument("--check", action="store_true",
                    help="only re-run the stored fixtures in TensorFlow and compare")
    ap.add_argument("--op-counts", action="store_true",
                    help="only print `op: count` per stored fixture (markdown, for README.md)")
    args = ap.parse_args()
    only = {s for s in args.only.split(",") if s}
    if args.op_counts:
        print_op_counts(pathlib.Path(args.out), [f.__name__ for f in FIXTURES]
                        + [f"extra/{f.__name__}" for f in EXTRA])
        return
    root = pathlib.Path(args.out)
    for fn, where in [(f, root) for f in FIXTURES] + [(f, root / "extra") for f in EXTRA]:
        if only and fn.__name__ not in only:
            continue
        if args.check:
            print(f"{fn.__name__}: max abs diff {check(where / fn.__name__)}")
        else:
            make(fn, where)
    if not args.check and (not only or "bad" in only):
        make_bad(pathlib.Path(args.out))


if __name__ == "__main__":
    main()
