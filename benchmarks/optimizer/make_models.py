#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Build the optimizer benchmark's models and export them to ONNX.

    make_models.py OUT_DIR [--only a,b] [--force] [--seed N] [--batch N]

Every model is built in Keras 2 (tf_keras) with seeded random weights, exported with
tf2onnx at opset 17, and written to OUT_DIR/<name>.onnx together with

    OUT_DIR/<name>.inputs.npz    seeded random inputs (batch 1), keyed by ONNX input name
    OUT_DIR/<name>.outputs.npz   ONNX Runtime's outputs on the exported model for those
                                 inputs (ORT_DISABLE_ALL), keyed by ONNX output name

and OUT_DIR/manifest.json (package versions, seed, per-model node counts, sizes, export
times). A model whose three files already exist is skipped unless --force is given.

The models:

    mobilenetv2   tf_keras.applications.MobileNetV2(weights=None), 224x224x3
    resnet50      tf_keras.applications.ResNet50(weights=None), 224x224x3
    bert_encoder  a BERT-like encoder written here: token + position embeddings, 4 layers,
                  hidden 256, 4 heads, sequence 128, feed-forward 1024, erf GELU,
                  attention mask derived from the token ids (id 0 = padding)
    lstm          two stacked LSTM(128) over 32 steps of 64 features, Dense(10) head

The batch dimension is symbolic ("batch") unless --batch N fixes it.

Each model is built in a child process of its own (with PYTHONHASHSEED=0, and tf2onnx's
node hashing made independent of memory addresses), so that a model's files are
byte-identical from run to run and whether it is built alone or with the others (for the
same package versions and CPU: the BatchNormalization calibration below runs through
oneDNN, whose rounding may differ between CPUs).

Biases and LayerNormalization parameters are randomised too (a trained model has no two
alike; at their initial zeros and ones tf2onnx would merge them into shared constants).

Batch normalisation statistics are not left at their initial values (mean 0, variance 1,
which would make every BatchNormalization an identity-like op with activations that grow
or vanish through 50 layers): gamma and beta are randomised, then one forward pass in
training mode with momentum 0 over a seeded calibration batch sets the moving mean and
variance to the statistics of the activations each layer actually sees. The result behaves
numerically like a trained network (activations stay in range), which matters for the
equality checks done on optimized models.
"""

import argparse
import json
import os
import subprocess
import sys
import time

# Keras 3 cannot be converted by tf2onnx; tf_keras is Keras 2 for TF >= 2.16.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

MODEL_NAMES = ["mobilenetv2", "resnet50", "bert_encoder", "lstm"]
OPSET = 17


def log(msg):
    print(f"[make_models] {msg}", flush=True)


# --------------------------------------------------------------------------------------
# Model builders. Each returns (keras_model, tf2onnx input signature, numpy input dict,
# calibration input or None).
# --------------------------------------------------------------------------------------


def _randomize_affine(keras, model, rng):
    """Biases and LayerNormalization gamma/beta away from their 0/1 initial values.

    A trained model has no two such vectors alike; left at their initial values they are all
    equal, and tf2onnx would merge them into one shared constant.
    """
    for layer in model.submodules if hasattr(model, "submodules") else model.layers:
        if isinstance(layer, keras.layers.LayerNormalization):
            gamma, beta = layer.get_weights()
            layer.set_weights(
                [rng.uniform(0.8, 1.2, gamma.shape).astype(gamma.dtype), rng.normal(0.0, 0.02, beta.shape).astype(beta.dtype)]
            )
        elif isinstance(layer, keras.layers.Dense) and layer.use_bias:
            w, b = layer.get_weights()
            layer.set_weights([w, rng.normal(0.0, 0.02, b.shape).astype(b.dtype)])
        elif isinstance(layer, keras.layers.LSTM):
            ws = layer.get_weights()  # kernel, recurrent kernel, bias (forget part starts at 1)
            ws[-1] = ws[-1] + rng.normal(0.0, 0.05, ws[-1].shape).astype(ws[-1].dtype)
            layer.set_weights(ws)


def _calibrate_batchnorm(keras, model, calib, rng):
    """Random affine BN parameters, then moving statistics taken from one training pass."""
    bns = [l for l in model.layers if isinstance(l, keras.layers.BatchNormalization)]
    saved = []
    for bn in bns:
        weights = bn.get_weights()  # gamma, beta, moving_mean, moving_variance (if scale/center)
        new = []
        names = [w.name for w in bn.weights]
        for w, n in zip(weights, names):
            if "gamma" in n:
                new.append(rng.uniform(0.5, 1.5, size=w.shape).astype(w.dtype))
            elif "beta" in n:
                new.append(rng.normal(0.0, 0.1, size=w.shape).astype(w.dtype))
            else:
                new.append(w)
        bn.set_weights(new)
        saved.append(bn.momentum)
        bn.momentum = 0.0
    model(calib, training=True)
    for bn, m in zip(bns, saved):
        bn.momentum = m
    return len(bns)


def build_cnn(name, tf, keras, np, rng, batch):
    app = {"mobilenetv2": keras.applications.MobileNetV2, "resnet50": keras.applications.ResNet50}[name]
    model = app(weights=None, input_shape=(224, 224, 3), classes=1000)
    calib = rng.uniform(-1.0, 1.0, size=(8, 224, 224, 3)).astype(np.float32)
    n_bn = _calibrate_batchnorm(keras, model, calib, rng)
    log(f"{name}: {len(model.layers)} Keras layers, {model.count_params()} parameters, {n_bn} BatchNormalization calibrated")
    spec = (tf.TensorSpec((batch, 224, 224, 3), tf.float32, name="input"),)
    inputs = {"input": rng.uniform(-1.0, 1.0, size=(1, 224, 224, 3)).astype(np.float32)}
    return model, spec, inputs


def build_bert(tf, keras, np, rng, batch, layers=4, hidden=256, heads=4, seq=128, ff=1024, vocab=8192, gelu="erf"):
    head_dim = hidden // heads

    def init():
        # A fresh, seeded initializer per weight: a shared unseeded instance gives every
        # weight the same values.
        return keras.initializers.TruncatedNormal(stddev=0.02, seed=int(rng.integers(1 << 31)))

    class Gelu(keras.layers.Layer):
        """GELU written out as BERT implementations do: x * 0.5 * (1 + erf(x / sqrt 2)).

        (tf.nn.gelu's exact form goes through Erfc, which tf2onnx cannot convert.)
        """

        def call(self, x):
            if gelu == "tanh":
                return tf.nn.gelu(x, approximate=True)
            return x * 0.5 * (1.0 + tf.math.erf(x / np.float32(np.sqrt(2.0))))

    class PositionEmbedding(keras.layers.Layer):
        def build(self, input_shape):
            self.table = self.add_weight(
                name="table", shape=(seq, hidden), initializer=init()
            )

        def call(self, x):
            return x + self.table[tf.newaxis, :, :]

    class SelfAttention(keras.layers.Layer):
        """Multi-head self-attention with separate Dense Q, K, V and output projections."""

        def __init__(self, **kw):
            super().__init__(**kw)
            self.q = keras.layers.Dense(hidden, kernel_initializer=init(), name="query")
            self.k = keras.layers.Dense(hidden, kernel_initializer=init(), name="key")
            self.v = keras.layers.Dense(hidden, kernel_initializer=init(), name="value")
            self.o = keras.layers.Dense(hidden, kernel_initializer=init(), name="output")

        def _split(self, x):
            b = tf.shape(x)[0]
            x = tf.reshape(x, [b, -1, heads, head_dim])
            return tf.transpose(x, [0, 2, 1, 3])  # [b, heads, seq, head_dim]

        def call(self, x, mask_bias):
            q, k, v = self._split(self.q(x)), self._split(self.k(x)), self._split(self.v(x))
            scores = tf.matmul(q, k, transpose_b=True) * (1.0 / np.sqrt(head_dim)).astype(np.float32)
            scores = scores + mask_bias  # [b, 1, 1, seq] broadcast
            probs = tf.nn.softmax(scores, axis=-1)
            ctx = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
            ctx = tf.reshape(ctx, [tf.shape(x)[0], -1, hidden])
            return self.o(ctx)

    class MaskBias(keras.layers.Layer):
        def call(self, ids):
            keep = tf.cast(tf.not_equal(ids, 0), tf.float32)
            return (1.0 - keep)[:, tf.newaxis, tf.newaxis, :] * -10000.0

    ids = keras.Input(shape=(seq,), dtype="int32", name="input_ids")
    x = keras.layers.Embedding(vocab, hidden, embeddings_initializer=init(), name="word_embeddings")(ids)
    x = PositionEmbedding(name="position_embeddings")(x)
    x = keras.layers.LayerNormalization(epsilon=1e-12, name="embeddings_ln")(x)
    bias = MaskBias(name="mask_bias")(ids)
    for i in range(layers):
        a = SelfAttention(name=f"layer{i}_attention")(x, bias)
        x = keras.layers.LayerNormalization(epsilon=1e-12, name=f"layer{i}_attention_ln")(x + a)
        h = keras.layers.Dense(ff, kernel_initializer=init(), name=f"layer{i}_intermediate")(x)
        h = Gelu(name=f"layer{i}_gelu")(h)
        h = keras.layers.Dense(hidden, kernel_initializer=init(), name=f"layer{i}_ffn_output")(h)
        x = keras.layers.LayerNormalization(epsilon=1e-12, name=f"layer{i}_output_ln")(x + h)
    sequence_output = keras.layers.Lambda(lambda t: t, name="sequence_output")(x)
    cls = keras.layers.Lambda(lambda t: t[:, 0, :], name="cls")(x)
    pooled = keras.layers.Dense(hidden, activation="tanh", kernel_initializer=init(), name="pooled_output")(cls)
    model = keras.Model(ids, [sequence_output, pooled], name="bert_encoder")
    _randomize_affine(keras, model, rng)
    # A few pad tokens at the end of the sequence so the mask is not all ones.
    sample = rng.integers(1, vocab, size=(1, seq), dtype=np.int64).astype(np.int32)
    sample[:, seq - 16 :] = 0
    log(f"bert_encoder: {layers} layers, hidden {hidden}, {heads} heads, seq {seq}, {model.count_params()} parameters")
    spec = (tf.TensorSpec((batch, seq), tf.int32, name="input_ids"),)
    return model, spec, {"input_ids": sample}


def build_lstm(tf, keras, np, rng, batch, steps=32, features=64, units=128, classes=10):
    inp = keras.Input(shape=(steps, features), name="sequence")
    x = keras.layers.LSTM(units, return_sequences=True, name="lstm1")(inp)
    x = keras.layers.LSTM(units, name="lstm2")(x)
    out = keras.layers.Dense(classes, name="logits")(x)
    model = keras.Model(inp, out, name="lstm")
    _randomize_affine(keras, model, rng)
    log(f"lstm: 2 x LSTM({units}) over {steps} steps of {features} features, {model.count_params()} parameters")
    spec = (tf.TensorSpec((batch, steps, features), tf.float32, name="sequence"),)
    inputs = {"sequence": rng.normal(0.0, 1.0, size=(1, steps, features)).astype(np.float32)}
    return model, spec, inputs


# --------------------------------------------------------------------------------------


def count_nodes(graph):
    n = 0
    for node in graph.node:
        n += 1
        for a in node.attribute:
            if a.g is not None and a.HasField("g"):
                n += count_nodes(a.g)
            for g in a.graphs:
                n += count_nodes(g)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--only", default="", help="comma-separated subset of: " + ",".join(MODEL_NAMES))
    ap.add_argument("--force", action="store_true", help="rebuild models that already exist")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--batch", type=int, default=0, help="fixed batch size (default 0: symbolic)")
    ap.add_argument("--gelu", choices=["erf", "tanh"], default="erf", help="GELU form in bert_encoder")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # internal: build this one model here
    args = ap.parse_args()
    if args.child:
        build_one(args.child, args)
        return 0

    names = [n for n in args.only.split(",") if n] or MODEL_NAMES
    unknown = set(names) - set(MODEL_NAMES)
    if unknown:
        ap.error(f"unknown model(s): {', '.join(sorted(unknown))}")
    os.makedirs(args.out_dir, exist_ok=True)

    def paths(name):
        base = os.path.join(args.out_dir, name)
        return base + ".onnx", base + ".inputs.npz", base + ".outputs.npz"

    to_build = [n for n in names if args.force or not all(os.path.exists(p) for p in paths(n))]
    for n in names:
        if n not in to_build:
            log(f"{n}: present, skipped (--force to rebuild)")
    if not to_build:
        return 0

    # One child process per model, with a fixed string-hash seed: tf2onnx's generated names
    # depend on a process-wide counter and on set iteration order, so this is what makes a
    # model's file byte-identical from run to run, whichever subset is built.
    t0 = time.perf_counter()
    manifest_path = os.path.join(args.out_dir, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    manifest.update({"opset": OPSET, "seed": args.seed, "batch": args.batch if args.batch > 0 else "symbolic"})
    manifest.setdefault("models", {})
    env = dict(os.environ, PYTHONHASHSEED="0")
    failures = 0
    for name in MODEL_NAMES:
        if name not in to_build:
            continue
        info_path = os.path.join(args.out_dir, f".{name}.info.json")
        if os.path.exists(info_path):
            os.remove(info_path)
        cmd = [sys.executable, os.path.abspath(__file__), args.out_dir, "--child", name,
               "--seed", str(args.seed), "--batch", str(args.batch), "--gelu", args.gelu]
        rc = subprocess.run(cmd, env=env).returncode
        if rc != 0 or not os.path.exists(info_path):
            failures += 1
            log(f"{name}: FAILED (exit status {rc})")
            manifest["models"].pop(name, None)
        else:
            with open(info_path) as f:
                info = json.load(f)
            os.remove(info_path)
            manifest["versions"] = info.pop("versions")
            manifest["models"][name] = info
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=2)
    # Keep the manifest's models in the canonical order.
    manifest["models"] = {n: manifest["models"][n] for n in MODEL_NAMES if n in manifest["models"]}
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=2)
    log(f"done in {time.perf_counter() - t0:.1f} s, {failures} failure(s)")
    return 1 if failures else 0


def build_one(name, args):
    """Build, export and check one model (in a child process); write .<name>.info.json."""
    t0 = time.perf_counter()
    import numpy as np
    import onnx
    import onnxruntime as ort
    import tensorflow as tf
    import tf2onnx
    import tf_keras as keras

    log(f"{name}: imports took {time.perf_counter() - t0:.1f} s")
    tf.config.experimental.enable_op_determinism()
    # tf2onnx keeps its nodes in sets, hashed by object id: which of two merged duplicates
    # survives (and its name) then changes from run to run. Hashing by name, with the fixed
    # PYTHONHASHSEED this process runs under, makes the export the same every time.
    tf2onnx.graph.Node.__hash__ = lambda node: hash(node.name)
    batch = args.batch if args.batch > 0 else None
    base = os.path.join(args.out_dir, name)
    onnx_path, in_path, out_path = base + ".onnx", base + ".inputs.npz", base + ".outputs.npz"

    # Each model has its own seed derived from the base one.
    seed = args.seed + 1000 * MODEL_NAMES.index(name)
    keras.utils.set_random_seed(seed)
    rng = np.random.default_rng(seed)

    t = time.perf_counter()
    if name in ("mobilenetv2", "resnet50"):
        model, spec, inputs = build_cnn(name, tf, keras, np, rng, batch)
    elif name == "bert_encoder":
        model, spec, inputs = build_bert(tf, keras, np, rng, batch, gelu=args.gelu)
    else:
        model, spec, inputs = build_lstm(tf, keras, np, rng, batch)
    build_s = time.perf_counter() - t

    t = time.perf_counter()
    model_proto, _ = tf2onnx.convert.from_keras(model, input_signature=spec, opset=OPSET)
    if batch is None:
        # tf2onnx names the unknown batch dimension unk__N; give it one shared name.
        for vi in list(model_proto.graph.input) + list(model_proto.graph.output):
            dims = vi.type.tensor_type.shape.dim
            if len(dims) and not dims[0].HasField("dim_value"):
                dims[0].dim_param = "batch"
    onnx.checker.check_model(model_proto)
    tmp = onnx_path + ".tmp"
    onnx.save(model_proto, tmp)
    export_s = time.perf_counter() - t

    # Reference outputs: ORT with every graph optimization off.
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(tmp, so, providers=["CPUExecutionProvider"])
    feed_names = [i.name for i in sess.get_inputs()]
    if sorted(feed_names) != sorted(inputs):
        raise RuntimeError(f"ONNX inputs {feed_names} differ from the prepared {sorted(inputs)}")
    out_names = [o.name for o in sess.get_outputs()]
    outs = sess.run(out_names, inputs)
    keras_outs = model(list(inputs.values())[0] if len(inputs) == 1 else inputs, training=False)
    if not isinstance(keras_outs, (list, tuple)):
        keras_outs = [keras_outs]
    keras_diff = max(float(np.max(np.abs(np.asarray(k) - o))) for k, o in zip(keras_outs, outs))

    np.savez(in_path, **inputs)
    np.savez(out_path, **dict(zip(out_names, outs)))
    os.replace(tmp, onnx_path)

    ops = {}
    for node in model_proto.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    info = {
        "file": os.path.basename(onnx_path),
        "bytes": os.path.getsize(onnx_path),
        "nodes": len(model_proto.graph.node),
        "nodes_with_subgraphs": count_nodes(model_proto.graph),
        "op_types": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        "initializers": len(model_proto.graph.initializer),
        "inputs": {k: [list(v.shape), str(v.dtype)] for k, v in inputs.items()},
        "outputs": {n: [list(o.shape), str(o.dtype)] for n, o in zip(out_names, outs)},
        "seed": seed,
        "build_s": round(build_s, 2),
        "export_s": round(export_s, 2),
        "max_abs_diff_keras_vs_ort": keras_diff,
        "versions": {
            "python": sys.version.split()[0],
            "tensorflow": tf.__version__,
            "tf_keras": keras.__version__,
            "tf2onnx": tf2onnx.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": ort.__version__,
            "numpy": np.__version__,
        },
    }
    with open(os.path.join(args.out_dir, f".{name}.info.json"), "w") as f:
        json.dump(info, f, indent=2)
    log(
        f"{name}: {info['nodes']} nodes ({info['nodes_with_subgraphs']} with subgraphs), "
        f"{info['bytes'] / 1e6:.1f} MB, build {build_s:.1f} s, export {export_s:.1f} s, "
        f"|keras - ort| max {keras_diff:.2e}"
    )


if __name__ == "__main__":
    sys.exit(main())
