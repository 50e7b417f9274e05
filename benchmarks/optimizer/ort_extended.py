#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the models ONNX Runtime's extended optimizer saves (its com.microsoft fused ops) on
gpass and compares the outputs with ONNX Runtime's on the unoptimized models.

    ort_extended.py MODELS_DIR GPASS_OPT [--only a,b]

MODELS_DIR is make_models.py's output (<name>.onnx, <name>.inputs.npz, <name>.outputs.npz).
For each model: an ONNX Runtime session at ORT_ENABLE_EXTENDED writes
MODELS_DIR/optimized/<name>.ort_extended.onnx (optimized_model_filepath); its com.microsoft
ops are counted; `GPASS_OPT <that model> --run --input=... --save-outputs=...` runs it on
the saved inputs; the largest |gpass - ORT| over the outputs is printed (ORT's reference:
the unoptimized model at ORT_DISABLE_ALL, outputs.npz).
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("models")
    ap.add_argument("gpass_opt")
    ap.add_argument("--only", default="mobilenetv2,resnet50,bert_encoder,lstm")
    args = ap.parse_args()
    os.makedirs(os.path.join(args.models, "optimized"), exist_ok=True)
    worst = 0.0
    for name in args.only.split(","):
        src = os.path.join(args.models, name + ".onnx")
        dst = os.path.join(args.models, "optimized", name + ".ort_extended.onnx")
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        so.optimized_model_filepath = dst
        ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
        m = onnx.load(dst)
        ops = collections.Counter(f"{n.domain}:{n.op_type}" for n in m.graph.node if n.domain not in ("", "ai.onnx"))
        inputs = np.load(os.path.join(args.models, name + ".inputs.npz"))
        want = np.load(os.path.join(args.models, name + ".outputs.npz"))
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [args.gpass_opt, dst, "--run", f"--save-outputs={tmp}"]
            for k, vi in enumerate(m.graph.input):
                if vi.name not in inputs:
                    continue
                f = os.path.join(tmp, f"in_{k}.pb")
                onnx.save_tensor(numpy_helper.from_array(inputs[vi.name], vi.name), f)
                cmd.append(f"--input={f}")
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name}: gpass-opt failed: {r.stderr.strip()[-400:]}")
                worst = float("inf")
                continue
            diffs = []
            for k, vo in enumerate(m.graph.output):
                got = numpy_helper.to_array(onnx.load_tensor(os.path.join(tmp, f"output_{k}.pb")))
                ref = want[vo.name]
                diffs.append(float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))) if ref.size else 0.0)
        d = max(diffs) if diffs else 0.0
        worst = max(worst, d)
        print(f"{name}: {len(m.graph.node)} nodes at ORT_ENABLE_EXTENDED, com.microsoft ops {dict(ops)}; "
              f"gpass max |diff| vs ORT (unoptimized) {d:.3g}")
    return 0 if worst < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
