#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generate the TensorFlow 2 fixtures of gpass's TensorFlow frontend (issue 19).

TF2 code as users write it: `tf.function`s with control flow v2 (`While`/`StatelessWhile`,
`If`/`StatelessIf`, `Case`), calls of other functions (`PartitionedCall`/
`StatefulPartitionedCall`), `tf.TensorArray` (TensorList ops in the function bodies) and
Keras RNNs. Two kinds of fixture, written to tests/data/tf2/<name>/:

* frozen graphs: the concrete function frozen with `convert_variables_to_constants_v2(
  lower_control_flow=False)` (variables -> Const, control flow v2 kept), written as
  `graph.pb` / `graph.pbtxt` with `fixture.txt` as in tests/data/tf (feed/fetch lines);
* SavedModels (`saved_model/`, made by `tf.saved_model.save`): `fixture.txt` has a line
  `saved_model saved_model <signature>` and feeds/fetches named by the signature's keys.

  feed_<i>.pb / output_<i>.pb   TensorProto messages (binary, tf.make_tensor_proto)

Usage:  python3 tests/data/tf2/make_fixtures.py [--out DIR] [--only name,name]

Needs tensorflow-cpu and tf_keras. Deterministic: fixed seeds and inputs, one thread.
"""

import argparse
import os
import pathlib
import shutil
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import text_format  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

HERE = pathlib.Path(__file__).resolve().parent
SEED = 4321


def rng(salt):
    return np.random.RandomState(SEED + salt)


class Frozen:
    """A tf.function, its input signature and the numpy inputs: frozen to a GraphDef."""

    def __init__(self, fn, inputs, specs=None, freeze=True):
        self.fn = fn
        self.freeze = freeze  # False: the concrete function's own graph (no variables to fold;
        # freezing would lower Case to _SwitchN/Merge and inline the calls)
        self.inputs = inputs
        self.specs = specs or [tf.TensorSpec([None] + list(a.shape[1:]), tf.as_dtype(a.dtype)) for a in inputs]


class Saved:
    """A tf.Module saved with one signature (`serving_default`), fed by keyword."""

    def __init__(self, module, fn, inputs):
        self.module = module
        self.fn = fn
        self.inputs = inputs  # {signature key: array}


# --------------------------------------------------------------------------- fixtures

def while_v2():
    """A tf.while_loop in a tf.function: `While` with cond/body functions, a loop-invariant
    captured tensor, a counter and a matrix."""
    w = tf.constant(rng(1).randn(3, 3).astype(np.float32) * 0.5)

    @tf.function
    def f(x, n):
        def body(i, acc):
            return i + 1, tf.tanh(tf.matmul(acc, w) + tf.cast(i, tf.float32))
        i, acc = tf.while_loop(lambda i, acc: i < n, body, [tf.constant(0), x])
        return acc, i

    return Frozen(f, [rng(2).randn(2, 3).astype(np.float32), np.array(4, np.int32)],
                  [tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([], tf.int32)])


def cond_v2():
    """tf.cond on a fed predicate and on a computed one (`If`/`StatelessIf`), one branch
    returning two values."""

    @tf.function
    def f(x, p):
        a = tf.cond(p, lambda: x * 2.0, lambda: x - 1.0)
        b, c = tf.cond(tf.reduce_sum(x) > 0.0, lambda: (tf.exp(x), x + a), lambda: (x, a * a))
        return a + b, c

    return Frozen(f, [rng(3).randn(2, 4).astype(np.float32), np.array(False)],
                  [tf.TensorSpec([None, 4], tf.float32), tf.TensorSpec([], tf.bool)])


def case_v2():
    """tf.switch_case (`Case` with three branches; index 7 takes the default, the last)."""

    @tf.function
    def f(x, k):
        return (tf.switch_case(k, [lambda: x + 1.0, lambda: x * x, lambda: -x]),
                tf.switch_case(k + 6, [lambda: x, lambda: x * 3.0]))

    return Frozen(f, [rng(4).randn(3).astype(np.float32), np.array(1, np.int32)],
                  [tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.int32)], freeze=False)


def nested_calls():
    """A tf.function calling another tf.function twice (`StatefulPartitionedCall` or
    `PartitionedCall` nodes kept by freezing), one of them inside a loop body."""

    @tf.function
    def inner(a, b):
        return tf.nn.relu(a * b + 0.5)

    @tf.function
    def f(x, y):
        z = inner(x, y)
        _, acc = tf.while_loop(lambda i, acc: i < 3, lambda i, acc: (i + 1, inner(acc, y)), [0, z])
        return acc + inner(z, x)

    return Frozen(f, [rng(5).randn(2, 2).astype(np.float32), rng(6).randn(2, 2).astype(np.float32)], freeze=False)


def tensor_list_loop():
    """tf.TensorArray in a tf.function: TensorListReserve / SetItem / Stack, and a
    TensorListFromTensor / GetItem (unstack) read in the loop."""

    @tf.function
    def f(x):
        n = tf.shape(x)[0]
        xs = tf.TensorArray(tf.float32, size=n).unstack(x)
        out = tf.TensorArray(tf.float32, size=n)
        def body(i, s, out):
            s = s * 0.5 + xs.read(i)
            return i + 1, s, out.write(i, s)
        _, s, out = tf.while_loop(lambda i, s, out: i < n, body, [0, tf.zeros_like(x[0]), out])
        return out.stack(), s

    return Frozen(f, [rng(7).randn(5, 3).astype(np.float32)])


def keras_lstm():
    """A tf_keras LSTM (return_sequences) + GRU + Dense, random weights: TF2 Keras RNNs
    freeze to `While` loops over TensorLists."""
    import tf_keras as keras
    keras.utils.set_random_seed(SEED)
    m = keras.Sequential([keras.layers.Input((6, 4)), keras.layers.LSTM(5, return_sequences=True),
                          keras.layers.GRU(3), keras.layers.Dense(2)])

    @tf.function
    def f(x):
        return m(x, training=False)

    return Frozen(f, [rng(8).randn(2, 6, 4).astype(np.float32)],
                  [tf.TensorSpec([None, 6, 4], tf.float32)])


def keras_bidirectional():
    """A tf_keras Bidirectional LSTM (the backward direction reverses the sequence:
    ReverseV2) + a GRU with go_backwards, random weights."""
    import tf_keras as keras
    keras.utils.set_random_seed(SEED + 1)
    m = keras.Sequential([keras.layers.Input((5, 3)), keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True)),
                          keras.layers.GRU(3, go_backwards=True), keras.layers.Dense(2)])

    @tf.function
    def f(x):
        return m(x, training=False)

    return Frozen(f, [rng(15).randn(2, 5, 3).astype(np.float32)], [tf.TensorSpec([None, 5, 3], tf.float32)])


def index_ops():
    """TensorFlow's indexed reads and writes, segment reductions, sequence reversal, unique,
    bincount and image resizing in one tf.function (frozen), and small ones: inverse
    hyperbolic functions, bitwise ops, L2Loss, BroadcastArgs, MatrixBandPart, InTopKV2."""

    @tf.function
    def f(x, img, ids):
        nd_idx = tf.constant([[1, 2], [0, 0], [2, 1]])
        g = tf.gather_nd(x, nd_idx)                                   # GatherNd
        g2 = tf.gather_nd(x, tf.constant([[2], [0]]))                 # rows
        sc = tf.scatter_nd(tf.constant([[1], [3], [1]]), tf.constant([1.0, 2.0, 4.0]), tf.constant([5]))
        tu = tf.tensor_scatter_nd_update(x, tf.constant([[0, 1], [2, 3]]), tf.constant([9.0, -9.0]))
        ta = tf.tensor_scatter_nd_add(x, tf.constant([[1]]), tf.ones([1, 4]))
        tm = tf.tensor_scatter_nd_max(x, tf.constant([[0, 0], [1, 1]]), tf.constant([0.5, 0.5]))
        us = tf.math.unsorted_segment_sum(x, ids, 4)
        um = tf.math.unsorted_segment_max(x, ids, 4)
        ss = tf.math.segment_sum(x, tf.constant([0, 0, 2]))
        sm = tf.math.segment_mean(x, tf.constant([0, 1, 1]))
        rs = tf.reverse_sequence(img[:, :, :, 0], tf.constant([2, 4]), seq_axis=1, batch_axis=0)
        u, ui = tf.unique(tf.constant([4, 1, 4, 2, 1, 7]))
        bc = tf.math.bincount(tf.constant([1, 1, 3, 0, 6]), minlength=5, maxlength=5)
        rb = tf.compat.v1.image.resize_bilinear(img, [5, 7], align_corners=True)
        rb2 = tf.image.resize(img, [3, 6], method="bilinear")       # half_pixel_centers
        rb3 = tf.compat.v1.image.resize_bilinear(img, [6, 3])       # legacy asymmetric
        rn = tf.compat.v1.image.resize_nearest_neighbor(img, [7, 5])
        rn2 = tf.image.resize(img, [5, 9], method="nearest")        # half_pixel_centers
        rn3 = tf.compat.v1.image.resize_nearest_neighbor(img, [3, 3], align_corners=True)
        rv = tf.reverse(x, [0, 1])
        small = tf.clip_by_value(x, -0.9, 0.9)
        hyp = tf.math.asinh(x) + tf.math.acosh(tf.abs(x) + 1.0) + tf.math.atanh(small)
        bits = tf.cast(tf.reshape(x * 10.0, [-1]), tf.int32)
        bw = (tf.bitwise.bitwise_and(bits, 6), tf.bitwise.bitwise_or(bits, 6), tf.bitwise.bitwise_xor(bits, 6),
              tf.bitwise.invert(bits))
        l2 = tf.nn.l2_loss(x)
        bargs = tf.broadcast_dynamic_shape(tf.shape(x), tf.shape(img)[1:2])
        band = tf.linalg.band_part(x, 1, 0)
        topk = tf.math.in_top_k(tf.constant([0, 3, 2]), x, 2)
        return (g, g2, sc, tu, ta, tm, us, um, ss, sm, rs, u, ui, bc, rb, rb2, rb3, rn, rn2, rn3, rv, hyp) + bw + \
            (l2, bargs, band, topk)

    r = rng(14)
    return Frozen(f, [r.randn(3, 4).astype(np.float32), r.randn(2, 4, 5, 2).astype(np.float32),
                      np.array([3, -1, 0], np.int32)],
                  [tf.TensorSpec([3, 4], tf.float32), tf.TensorSpec([2, 4, 5, 2], tf.float32),
                   tf.TensorSpec([3], tf.int32)])


def random_ops():
    """TensorFlow's random streams, which gpass reproduces bit for bit: the stateless ops (V2
    through StatelessRandomGetKeyCounter, and the V1 raw ops) on a fed seed, in f32, f64, f16,
    bf16 and ints, and the stateful seeded ops (the first run's values)."""

    @tf.function
    def f(seed):
        return (tf.random.stateless_uniform([3, 5], seed),
                tf.random.stateless_uniform([7], seed, dtype=tf.float64),
                tf.random.stateless_uniform([6], seed, dtype=tf.float16),
                tf.random.stateless_uniform([6], seed, dtype=tf.bfloat16),
                tf.random.stateless_normal([9], seed),
                tf.random.stateless_normal([5], seed, dtype=tf.float64),
                tf.random.stateless_truncated_normal([11], seed),
                tf.random.stateless_truncated_normal([3], seed, dtype=tf.float64),
                tf.random.stateless_uniform([6], seed, minval=-5, maxval=17, dtype=tf.int32),
                tf.random.stateless_uniform([5], seed, minval=-(2 ** 40), maxval=2 ** 41, dtype=tf.int64),
                tf.random.stateless_uniform([4], seed, minval=None, maxval=None, dtype=tf.int64),
                tf.raw_ops.StatelessRandomUniform(shape=[5], seed=seed),
                tf.raw_ops.StatelessRandomNormal(shape=[4], seed=seed),
                tf.raw_ops.StatelessTruncatedNormal(shape=[6], seed=seed),
                tf.raw_ops.StatelessRandomUniformInt(shape=[4], seed=seed, minval=3, maxval=9),
                tf.random.uniform([2, 3], seed=7),
                tf.random.normal([5], seed=8),
                tf.random.truncated_normal([6], seed=9),
                tf.random.uniform([4], minval=0, maxval=100, dtype=tf.int32, seed=10))

    return Frozen(f, [np.array([12345, -678], np.int64)], [tf.TensorSpec([2], tf.int64)])


def saved_mlp():
    """A SavedModel of a tf.Module with variables (dense layers) and a loop: the variables
    are read from the TensorBundle checkpoint in variables/."""

    class Mlp(tf.Module):
        def __init__(self):
            super().__init__()
            r = rng(9)
            self.w1 = tf.Variable(r.randn(4, 8).astype(np.float32) * 0.5, name="w1")
            self.b1 = tf.Variable(r.randn(8).astype(np.float32) * 0.1, name="b1")
            self.w2 = tf.Variable(r.randn(8, 3).astype(np.float32) * 0.5, name="w2")
            self.steps = tf.Variable(2, name="steps")

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="features")])
        def __call__(self, x):
            h = tf.nn.relu(tf.matmul(x, self.w1) + self.b1)
            _, h = tf.while_loop(lambda i, h: i < self.steps, lambda i, h: (i + 1, h * 0.9 + 0.1), [0, h])
            logits = tf.matmul(h, self.w2)
            return {"logits": logits, "probabilities": tf.nn.softmax(logits)}

    m = Mlp()
    return Saved(m, m.__call__, {"features": rng(10).randn(2, 4).astype(np.float32)})


def saved_keras_cnn():
    """A tf_keras CNN (Conv2D + BatchNormalization + DepthwiseConv2D + MaxPooling2D +
    GlobalAveragePooling2D + Dense softmax, random weights) saved with tf.saved_model.save:
    Keras' nested call functions, inference-mode FusedBatchNormV3."""
    import tf_keras as keras
    keras.utils.set_random_seed(SEED)
    inp = keras.layers.Input((8, 8, 3), name="image")
    x = keras.layers.Conv2D(4, 3, padding="same", activation="relu")(inp)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.DepthwiseConv2D(3, padding="valid", activation="relu")(x)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    out = keras.layers.Dense(3, activation="softmax", name="scores")(x)
    m = keras.Model(inp, out)
    # non-trivial moving statistics, as after training
    bn = m.layers[2]
    r = rng(11)
    bn.moving_mean.assign(r.randn(4).astype(np.float32) * 0.1)
    bn.moving_variance.assign(r.rand(4).astype(np.float32) + 0.5)
    return Saved(m, None, {"image": rng(12).randn(2, 8, 8, 3).astype(np.float32)})


def keras_cnn_layout():
    """A frozen tf_keras CNN with every NHWC form the `tf-layout` pass converts: Conv2D with
    SAME / VALID padding, strides, dilations and a bias, DepthwiseConv2D (multiplier 2),
    inference BatchNormalization (FusedBatchNormV3) with non-trivial statistics, ReLU6 and
    ReLU, ZeroPadding2D (Pad), a residual Add, MaxPooling2D, AveragePooling2D,
    Concatenate on channels, GlobalAveragePooling2D (Mean) and a Dense softmax."""
    import tf_keras as keras
    keras.utils.set_random_seed(SEED)
    L = keras.layers
    inp = L.Input((17, 16, 3))
    x = L.Conv2D(8, 3, strides=2, padding="same", use_bias=False)(inp)
    x = L.BatchNormalization()(x)
    x = L.ReLU(6.0)(x)
    a = L.DepthwiseConv2D(3, padding="same", depth_multiplier=2, use_bias=False)(x)
    a = L.BatchNormalization()(a)
    a = L.ReLU()(a)
    a = L.Conv2D(8, 1, use_bias=True)(a)
    x = L.Add()([x, a])
    x = L.ZeroPadding2D(((1, 0), (0, 1)))(x)
    x = L.Conv2D(6, 3, padding="valid", dilation_rate=2, activation="relu")(x)
    p = L.MaxPooling2D(2, padding="same")(x)
    q = L.AveragePooling2D(2, padding="same")(x)
    x = L.Concatenate()([p, q])
    x = L.Conv2D(5, 2, strides=(1, 2), padding="valid")(x)
    x = L.GlobalAveragePooling2D()(x)
    out = L.Dense(3, activation="softmax")(x)
    m = keras.Model(inp, out)
    r = rng(13)
    for layer in m.layers:
        if isinstance(layer, L.BatchNormalization):
            n = layer.moving_mean.shape[0]
            layer.moving_mean.assign(r.randn(n).astype(np.float32) * 0.1)
            layer.moving_variance.assign(r.rand(n).astype(np.float32) + 0.5)
            layer.gamma.assign(r.rand(n).astype(np.float32) + 0.5)
            layer.beta.assign(r.randn(n).astype(np.float32) * 0.1)

    @tf.function
    def f(x):
        return m(x, training=False)

    return Frozen(f, [rng(14).randn(2, 17, 16, 3).astype(np.float32)],
                  [tf.TensorSpec([None, 17, 16, 3], tf.float32)])


def saved_v1():
    """A TF1 SavedModel (tf.compat.v1.saved_model.simple_save): reference variables
    (VariableV2) restored by save/RestoreV2 -> save/Assign in the graph itself."""
    return SavedV1()


class SavedV1:
    def build(self, d):
        v1 = tf.compat.v1
        with tf.Graph().as_default() as g, v1.Session(graph=g) as sess:
            v1.set_random_seed(SEED)
            x = v1.placeholder(tf.float32, [None, 3], name="x")
            with v1.variable_scope("dense", use_resource=False):
                w = v1.get_variable("w", [3, 2], initializer=v1.random_normal_initializer(seed=SEED))
                b = v1.get_variable("b", [2], initializer=v1.random_normal_initializer(seed=SEED + 1))
            y = tf.nn.tanh(tf.matmul(x, w) + b, name="y")
            sess.run(v1.global_variables_initializer())
            feed = rng(13).randn(2, 3).astype(np.float32)
            out = sess.run(y, {x: feed})
            v1.saved_model.simple_save(sess, str(d / "saved_model"), inputs={"x": x}, outputs={"y": y})
        return {"x": feed}, {"y": out}


FIXTURES = [while_v2, cond_v2, case_v2, nested_calls, tensor_list_loop, keras_lstm, keras_bidirectional, index_ops,
            random_ops, saved_mlp, saved_keras_cnn, saved_v1, keras_cnn_layout]


# --------------------------------------------------------------------------- writer

def write_tensor(path, arr):
    path.write_bytes(tf.make_tensor_proto(np.asarray(arr)).SerializeToString())


def make(builder, out_root):
    name = builder.__name__
    spec = builder()
    d = out_root / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    lines = [f"tf_version {tf.__version__}"]
    if isinstance(spec, Frozen):
        concrete = spec.fn.get_concrete_function(*spec.specs)
        frozen = convert_variables_to_constants_v2(concrete, lower_control_flow=False) if spec.freeze else concrete
        gd = frozen.graph.as_graph_def()
        values = frozen(*[tf.constant(a) for a in spec.inputs])
        if not isinstance(values, (list, tuple)):
            values = [values]
        (d / "graph.pb").write_bytes(gd.SerializeToString(deterministic=True))
        (d / "graph.pbtxt").write_text(text_format.MessageToString(gd))
        for i, (t, arr) in enumerate(zip(frozen.inputs, spec.inputs)):
            write_tensor(d / f"feed_{i}.pb", arr)
            lines.append(f"feed {t.name} feed_{i}.pb")
        for i, (t, val) in enumerate(zip(frozen.outputs, values)):
            write_tensor(d / f"output_{i}.pb", val.numpy())
            lines.append(f"fetch {t.name} output_{i}.pb")
        nodes = len(gd.node) + sum(len(f.node_def) for f in gd.library.function)
    elif isinstance(spec, SavedV1):
        feeds, out = spec.build(d)
        lines.append("saved_model saved_model serving_default")
        for i, (k, arr) in enumerate(feeds.items()):
            write_tensor(d / f"feed_{i}.pb", arr)
            lines.append(f"feed {k} feed_{i}.pb")
        for i, k in enumerate(sorted(out)):
            write_tensor(d / f"output_{i}.pb", out[k])
            lines.append(f"fetch {k} output_{i}.pb")
        nodes = -1
    else:
        if spec.fn is not None:
            sig = spec.fn.get_concrete_function()
            tf.saved_model.save(spec.module, str(d / "saved_model"), signatures={"serving_default": sig})
        else:  # a Keras model: its own serving signature
            tf.saved_model.save(spec.module, str(d / "saved_model"))
        loaded = tf.saved_model.load(str(d / "saved_model"))
        out = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in spec.inputs.items()})
        lines.append("saved_model saved_model serving_default")
        for i, (k, arr) in enumerate(spec.inputs.items()):
            write_tensor(d / f"feed_{i}.pb", arr)
            lines.append(f"feed {k} feed_{i}.pb")
        for i, k in enumerate(sorted(out)):
            write_tensor(d / f"output_{i}.pb", out[k].numpy())
            lines.append(f"fetch {k} output_{i}.pb")
        nodes = -1
    (d / "fixture.txt").write_text("\n".join(lines) + "\n")
    size = sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
    print(f"{name}: {nodes} nodes, {size} bytes", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=pathlib.Path, default=HERE)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    for b in FIXTURES:
        if not only or b.__name__ in only:
            tf.random.set_seed(SEED)
            make(b, a.out)


if __name__ == "__main__":
    main()
