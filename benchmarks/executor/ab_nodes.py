#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Two gpass-opt binaries on one model, node by node (issue 15): which layers a change moved.

    ab_nodes.py OLD_GPASS_OPT NEW_GPASS_OPT MODEL.onnx INPUT.pb [--threads 1] [--reps 8]
                [--runs 10] [--by block|layer]

Runs `gpass-opt -O3 MODEL --session --run --threads=T --repeat=RUNS --trace=...` REPS times
for each binary, alternating (old first on even repetitions, new first on odd ones), each a
process of its own. Per node, the minimum of its traced-run times over the repetitions is
kept (this shared VM's speed changes in bursts lasting seconds; a minimum is what each binary
can do); the nodes are summed by key: `block` (the Keras block of the name: MobileNetV2's block_N,
ResNet's stage with its blocks' 3x3 layers apart: conv5_2, conv5_other; else `rest`) or `layer`
(the node's name, its first part (the model's prefix) stripped). Also printed: each process's latency median
and minimum, and the median over repetitions of new/old process medians (paired in time).

INPUT.pb: an ONNX TensorProto, e.g. the ones real_models.py writes under
BUILD/models/real_models/<model>_b<batch>/.
"""
import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

LATENCY_RE = re.compile(r"latency median: ([\d.eE+-]+) ms, min: ([\d.eE+-]+) ms")


def traced_run(binary, model, inp, threads, runs, trace):
    cmd = [binary, "-O3", model, "--session", "--run", f"--threads={threads}", f"--repeat={runs}", f"--input={inp}",
           f"--trace={trace}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    m = LATENCY_RE.search(p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"{binary}: exit status {p.returncode}: {(p.stderr or p.stdout).strip()[-800:]}")
    with open(trace) as f:
        d = json.load(f)
    events = d["traceEvents"] if isinstance(d, dict) else d
    per_node = collections.Counter()
    for e in events:
        if e.get("ph") == "X":
            per_node[e["name"].split("/", 1)[-1]] += e["dur"]  # the model's prefix stripped
    return (float(m.group(1)), float(m.group(2))), per_node


def block_key(name):
    m = re.search(r"\b(conv\d+_block|block_\d+|expanded_conv)", name)
    if not m:
        return "rest"
    if m.group(1).endswith("_block"):  # ResNet: conv5_2 (the blocks' 3x3), conv5_other
        return m.group(1)[: -len("_block")] + ("_2" if "_2_" in name[m.start():] else "_other")
    return m.group(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--by", choices=["block", "layer"], default="block")
    args = ap.parse_args()
    bins = {"old": args.old, "new": args.new}
    mins = {k: {} for k in bins}
    latency = {k: [] for k in bins}
    with tempfile.TemporaryDirectory(prefix="ab_nodes_") as tmp:
        for r in range(args.reps):
            order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
            for k in order:
                lat, per_node = traced_run(bins[k], args.model, args.input, args.threads, args.runs,
                                           os.path.join(tmp, f"{k}.json"))
                latency[k].append(lat)
                for n, v in per_node.items():
                    mins[k][n] = min(mins[k].get(n, v), v)
    key = block_key if args.by == "block" else (lambda n: n)
    totals = {k: collections.Counter() for k in bins}
    for k in bins:
        for n, v in mins[k].items():
            totals[k][key(n)] += v
    keys = sorted(set(totals["old"]) | set(totals["new"]))
    print(f"{'key':40s} {'old us':>9s} {'new us':>9s} {'new/old':>8s}")
    for c in keys:
        o, n = totals["old"][c], totals["new"][c]
        print(f"{c:40s} {o:9.0f} {n:9.0f} {n / o if o else float('nan'):8.3f}")
    so, sn = sum(totals["old"].values()), sum(totals["new"].values())
    print(f"{'sum of the minima':40s} {so:9.0f} {sn:9.0f} {sn / so if so else float('nan'):8.3f}")
    for k in bins:
        print(f"{k} processes' latency median/min (ms):", " ".join(f"{a:.2f}/{b:.2f}" for a, b in latency[k]))
    ratios = [latency["new"][i][0] / latency["old"][i][0] for i in range(args.reps)]
    print(f"median of the paired new/old process medians: {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
