#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How far gpass and onnx's reference outputs are from the exact result of a node test.

    onnx_reference_precision.py GPASS_OPT TEST_DIR [TEST_DIR...]

For each backend node test directory (model.onnx + test_data_set_*/), the same graph is
evaluated once more with every floating-point type (float16, bfloat16, float, double) made
double: graph inputs, outputs and value_info, Cast / CastLike targets, EyeLike / random
`dtype`, initializers, Constant and ConstantOfShape tensors. onnx's ReferenceEvaluator runs
that graph on the test's inputs converted exactly to double; the result is the "exact" value
of the computation the model describes (each op evaluated in double, rounded once).

gpass runs the original model (`gpass-opt --run --input ... --save-outputs`) and the script
prints, per output, the largest distance of gpass's values and of the stored expected values
from the exact ones, in units in the last place of the output type (ulp at the exact value,
or at 2^-10 of the output's largest magnitude for values near zero) and absolute. A test whose gpass error is no larger than the reference's (and within the
rounding the graph itself asks for) is a difference of the reference's precision, not a wrong
result of gpass. Needs onnx, numpy and ml_dtypes (the venv of onnx_current_conformance.sh).
Exit status 1 when gpass's error is larger than the reference's on any output.
"""
import glob
import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

FLOATS = {TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE}
NP = {TensorProto.FLOAT16: np.float16, TensorProto.BFLOAT16: ml_dtypes.bfloat16,
      TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64}


def to_double_tensor(t):
    if t.data_type not in FLOATS:
        return t
    a = numpy_helper.to_array(t).astype(np.float64)
    return numpy_helper.from_array(a, t.name)


def widen_type(tp):
    if tp.HasField("tensor_type") and tp.tensor_type.elem_type in FLOATS:
        tp.tensor_type.elem_type = TensorProto.DOUBLE
    for inner in ("sequence_type", "optional_type"):
        if tp.HasField(inner):
            widen_type(getattr(tp, inner).elem_type)


def widen_graph(g):
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        widen_type(vi.type)
    for i, t in enumerate(g.initializer):
        g.initializer[i].CopyFrom(to_double_tensor(t))
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                a.t.CopyFrom(to_double_tensor(a.t))
            elif a.type == onnx.AttributeProto.GRAPH:
                widen_graph(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    widen_graph(sub)
            elif a.name in ("to", "dtype") and a.type == onnx.AttributeProto.INT and a.i in FLOATS:
                a.i = TensorProto.DOUBLE
        if n.op_type == "ConstantOfShape" and not any(a.name == "value" for a in n.attribute):
            # the default value is a float32 zero
            n.attribute.append(helper.make_attribute(
                "value", numpy_helper.from_array(np.zeros(1, np.float64))))


def ulp(exact, np_type):
    """The spacing of np_type at |exact|, where |exact| is taken as at least 2^-10 of the
    output's largest magnitude (values that cancel to about zero are measured on the scale
    of the output, not in ulps of a denormal)."""
    info = ml_dtypes.finfo(np_type)
    mag = np.abs(exact)
    floor = max(float(info.smallest_normal), float(mag.max(initial=0.0)) / 1024.0)
    mag = np.where(mag < floor, floor, mag)
    e = np.floor(np.log2(mag))
    return np.exp2(e - info.nmant)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    gpass_opt = sys.argv[1]
    worse = 0
    for test in sys.argv[2:]:
        model = onnx.load(os.path.join(test, "model.onnx"))
        wide = onnx.ModelProto()
        wide.CopyFrom(model)
        widen_graph(wide.graph)
        evaluator = ReferenceEvaluator(wide)
        in_names = [i.name for i in model.graph.input
                    if i.name not in {t.name for t in model.graph.initializer}]
        for ds in sorted(glob.glob(os.path.join(test, "test_data_set_*"))):
            inputs = [onnx.load_tensor(f) for f in
                      sorted(glob.glob(os.path.join(ds, "input_*.pb")),
                             key=lambda p: int(p.rsplit("_", 1)[1][:-3]))]
            feeds = {}
            for name, t in zip(in_names, inputs):
                a = numpy_helper.to_array(t)
                feeds[name] = a.astype(np.float64) if t.data_type in FLOATS else a
            exact = evaluator.run(None, feeds)
            with tempfile.TemporaryDirectory() as out:
                cmd = [gpass_opt, os.path.join(test, "model.onnx"), "--run",
                       "--save-outputs=" + out]
                cmd += ["--input=" + os.path.join(ds, "input_%d.pb" % k) for k in range(len(inputs))]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                got = [onnx.load_tensor(os.path.join(out, "output_%d.pb" % k))
                       for k in range(len(exact))]
            for k, x in enumerate(exact):
                want_t = onnx.load_tensor(os.path.join(ds, "output_%d.pb" % k))
                if want_t.data_type not in FLOATS:
                    continue
                kind = NP[want_t.data_type]
                want = numpy_helper.to_array(want_t).astype(np.float64)
                mine = numpy_helper.to_array(got[k]).astype(np.float64)
                step = ulp(x, kind)
                e_ref, e_gpass = np.abs(want - x), np.abs(mine - x)
                print("%-48s %s out %d %-8s ulp: reference max %.2f, gpass max %.2f | "
                      "abs: reference %.3g, gpass %.3g | gpass nearer/equal/farther %d/%d/%d" % (
                          os.path.basename(test.rstrip("/")), os.path.basename(ds), k,
                          np.dtype(kind).name, (e_ref / step).max(), (e_gpass / step).max(),
                          e_ref.max(), e_gpass.max(), (e_gpass < e_ref).sum(),
                          (e_gpass == e_ref).sum(), (e_gpass > e_ref).sum()))
                if e_gpass.max() > e_ref.max():
                    worse += 1
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
