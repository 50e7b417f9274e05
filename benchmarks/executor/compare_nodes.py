#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where a model's time goes in gpass and in ONNX Runtime, node by node (issue 15).

    compare_nodes.py MODEL.onnx BATCH THREADS [--reps 5] [--by block|layer|node|op]
                     [--gpass-opt PATH]

gpass: `gpass-opt -O3 MODEL --session --run --threads=T --repeat=5 --trace=...` REPS times
(each a process of its own), the kernel times of the traced run after the timed ones.
ONNX Runtime: one InferenceSession (ORT_ENABLE_ALL, intra_op T, inter_op 1, sequential, CPU
provider) with profiling on, 3 warm-up runs, then REPS runs. Both get the same random inputs
(floats uniform in [-1, 1), integers in [0, 100); symbolic dims set to BATCH).

Times are summed per key and the minimum over the repetitions kept (this shared VM's speed
changes in bursts; a minimum is what each side can do). Keys: `block` (Keras layer-block
names found in the node names: block_3, conv4_block2, ...; else the name's first part),
`node` (the node names as each runtime has them), `layer` (the node names with the model's
prefix and each runtime's suffixes stripped (`:0`, gpass's `/nchwc`, ORT's `_nchwc`), so that
a convolution both runtimes fused with the same activation shows on one row; fusions that
differ still show apart, e.g. gpass's residual convolution under the name of the add's Relu,
ORT's under its batch norm), `op` (the op types, gpass's fused ops under their own names). ORT's per-node
figures include its profiler's cost (a few microseconds a node), so its totals exceed its
unprofiled latency on graphs of many small nodes.

Run with the benchmark venv (benchmarks/optimizer/venv.sh), e.g.
    /tmp/optvenv/bin/python benchmarks/executor/compare_nodes.py build/bench/models/mobilenetv2.onnx 1 1 --by op
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("batch", type=int)
    ap.add_argument("threads", type=int)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--by", choices=["block", "layer", "node", "op"], default="block")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--gpass-opt", default=os.path.join(here, "..", "..", "build", "bench", "examples", "gpass-opt", "gpass-opt"))
    args = ap.parse_args()

    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    m = onnx.load(args.model)
    initializers = {i.name for i in m.graph.initializer}
    inputs = [i for i in m.graph.input if i.name not in initializers]
    rng = np.random.default_rng(0)
    work = tempfile.mkdtemp(prefix="compare_nodes_")
    paths, feeds = [], {}
    for k, i in enumerate(inputs):
        t = i.type.tensor_type
        dims = [d.dim_value if d.dim_value > 0 else args.batch for d in t.shape.dim]
        if t.elem_type == onnx.TensorProto.FLOAT:
            x = rng.uniform(-1, 1, dims).astype(np.float32)
        else:
            x = rng.integers(0, 100, dims).astype(np.int32 if t.elem_type == onnx.TensorProto.INT32 else np.int64)
        feeds[i.name] = x
        p = os.path.join(work, f"input_{k}.pb")
        with open(p, "wb") as f:
            f.write(numpy_helper.from_array(x, i.name).SerializeToString())
        paths.append(p)

    def key(name, op):
        if args.by == "op":
            return op
        if args.by == "node":
            return name
        if args.by == "layer":
            n = re.sub(r"(:0)?[/_]nchwc$", "", name).replace(":0", "")
            return n.split("/", 1)[1] if "/" in n else n
        mm = re.search(r"(block_\d+|conv\d_block\d+|conv\d|Conv1|Conv_1|lstm\d|encoder_\d+|layer_\d+|pool\d|predictions|logits)", name)
        return mm.group(1) if mm else name.split("/")[0][:40]

    def keep_min(best, run):
        for k, v in run.items():
            best[k] = min(best.get(k, v), v)

    gpass = {}
    trace = os.path.join(work, "trace.json")
    for _ in range(args.reps):
        cmd = [args.gpass_opt, "-O3", args.model, "--session", "--run", f"--threads={args.threads}", "--repeat=5", f"--trace={trace}"]
        subprocess.run(cmd + [f"--input={p}" for p in paths], check=True, stdout=subprocess.DEVNULL)
        run = collections.defaultdict(float)
        with open(trace) as f:
            for e in json.load(f)["traceEvents"]:
                if e.get("ph") == "X":
                    run[key(e["name"], e["cat"])] += e["dur"]
        keep_min(gpass, run)

    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(work, "ort")
    s = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    for _ in range(3):
        s.run(None, feeds)
    for _ in range(args.reps):
        s.run(None, feeds)
    with open(s.end_profiling()) as f:
        events = json.load(f)
    runs = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "Session" and e["name"] == "model_run"][-args.reps:]
    per_run = [collections.defaultdict(float) for _ in runs]
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            for i, (a, b) in enumerate(runs):
                if a <= e["ts"] <= b:
                    per_run[i][key(e["name"][: -len("_kernel_time")], e["args"].get("op_name", "?"))] += e["dur"]
    onnxrt = {}
    for run in per_run:
        keep_min(onnxrt, run)

    print(f"{'key':60s} {'gpass us':>9s} {'ORT us':>9s} {'ratio':>6s}")
    keys = sorted(set(gpass) | set(onnxrt), key=lambda k: -max(gpass.get(k, 0), onnxrt.get(k, 0)))
    for k in keys:
        g, o = gpass.get(k, 0.0), onnxrt.get(k, 0.0)
        print(f"{k[-60:]:60s} {g:9.0f} {o:9.0f} {g / o if o else float('nan'):6.2f}")
    tg, to = sum(gpass.values()), sum(onnxrt.values())
    print(f"{'total':60s} {tg:9.0f} {to:9.0f} {tg / to if to else float('nan'):6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
