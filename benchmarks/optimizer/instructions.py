#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Instructions per graph optimization, gpass-opt against ONNX Runtime, counted by callgrind.

    instructions.py MODELS_DIR --gpass-opt PATH [--models a,b] [--repeats 3] [--runs 5]
                    [--out instructions.json]

Wall-clock differences of ORT session creations are noise on a shared 2-vCPU VM (the
optimization is a small part of creating a session); instruction counts repeat. Both sides
are counted under `valgrind --tool=callgrind`:

  * ONNX Runtime: one Python process per model (under callgrind, collection off at start)
    creates sessions at ORT_DISABLE_ALL, ORT_ENABLE_BASIC and ORT_ENABLE_EXTENDED, one
    intra-op thread, no spinning, interleaved, after one uncounted creation per level; each
    counted creation is bracketed by callgrind client requests (cg_toggle.c, built here with
    cc, called through ctypes) and dumped on its own. A level's optimization is its creation
    minus the creation at ORT_DISABLE_ALL: what the graph transformers cost, and the
    re-resolves (type inference) they trigger. ORT's model-load type inference (Graph::Resolve
    before any transformer) happens at every level, so the subtraction removes it.
  * gpass: `gpass-opt -O<n> --no-verify --timing --timing-runs=RUNS MODEL -o OUT`, counted with
    `--toggle-collect='*runs_passes*::run*'` (the pipeline runs alone: no import, export or
    graph copies), divided by RUNS. `infer` is the pipeline `--passes=infer-values`: the
    first full type / shape / value inference every -O level begins with, the counterpart
    of ORT's load-time inference. Both gross (the whole pipeline) and net (minus `infer`)
    figures are reported: net is the like-for-like comparison with ORT's subtraction, gross
    is what gpass-opt spends.

Prints a table (millions of instructions per optimization) and writes everything to --out.
Needs valgrind, a C compiler and the Python packages of requirements.txt (onnxruntime).
"""

import argparse
import ctypes
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LEVELS = ["off", "basic", "extended"]
GPASS_VARIANTS = {"infer": ["--passes=infer-values"], "O1": ["-O1"], "O2": ["-O2"], "O3": ["-O3"]}


# ---------------------------------------------------------------------------------------------
# the child: ORT session creations under callgrind


def ort_child(model, repeats, lib):
    import onnxruntime as ort

    cg = ctypes.CDLL(lib)
    cg.gpass_cg_dump.argtypes = [ctypes.c_char_p]
    L = ort.GraphOptimizationLevel
    level = {"off": L.ORT_DISABLE_ALL, "basic": L.ORT_ENABLE_BASIC, "extended": L.ORT_ENABLE_EXTENDED}

    def options(name):
        so = ort.SessionOptions()
        so.graph_optimization_level = level[name]
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.add_session_config_entry("session.inter_op.allow_spinning", "0")
        return so

    with open(model, "rb") as f:
        data = f.read()
    for name in LEVELS:  # uncounted: first-use costs (kernel registries, allocators)
        ort.InferenceSession(data, options(name), providers=["CPUExecutionProvider"])
    for rep in range(repeats):
        for name in LEVELS:
            so = options(name)
            cg.gpass_cg_zero()
            cg.gpass_cg_toggle()
            s = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
            cg.gpass_cg_toggle()
            cg.gpass_cg_dump(f"ort {name} {rep}".encode())
            del s


# ---------------------------------------------------------------------------------------------
# the parent


def build_toggle_lib(work):
    lib = os.path.join(work, "cg_toggle.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", os.path.join(HERE, "cg_toggle.c"), "-o", lib], check=True)
    return lib


CLIENT_REQUEST = "desc: Trigger: Client Request: "


def read_dump(path):
    label, total = None, None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(CLIENT_REQUEST):
                label = line[len(CLIENT_REQUEST):].strip()
            elif line.startswith("totals:") or line.startswith("summary:"):
                total = int(line.split()[1])
    return label, total


def measure_ort(model, repeats, lib, work):
    out = os.path.join(work, "ort")
    os.makedirs(out, exist_ok=True)
    for f in glob.glob(os.path.join(out, "*")):
        os.remove(f)
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--dump-instr=no",
           f"--callgrind-out-file={out}/cg.%p", sys.executable, os.path.abspath(__file__), "--ort-child", model,
           "--repeats", str(repeats), "--lib", lib]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ORT under callgrind failed ({r.returncode}): {r.stderr[-2000:]}")
    counts = {name: [] for name in LEVELS}
    for path in glob.glob(os.path.join(out, "cg.*")):
        label, total = read_dump(path)
        if label and label.startswith("ort ") and total is not None:
            counts[label.split()[1]].append(total)
    for name in LEVELS:
        if len(counts[name]) != repeats:
            raise RuntimeError(f"expected {repeats} dumps for {name}, found {len(counts[name])}")
    return counts


def measure_gpass(gpass_opt, model, variant, runs, work, verify):
    out_file = os.path.join(work, f"gpass-{variant}.onnx")
    cg_out = os.path.join(work, f"gpass-{variant}.cg")
    cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=*runs_passes*::run*", f"--callgrind-out-file={cg_out}",
           gpass_opt, *GPASS_VARIANTS[variant], "--timing", f"--timing-runs={runs}", model, "-o", out_file]
    if not verify:
        cmd.insert(cmd.index("--timing"), "--no-verify")
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"gpass-opt {variant} failed ({r.returncode}): {r.stderr[-2000:]}")
    m = re.search(r"Collected : (\d+)", r.stderr)
    if not m:
        raise RuntimeError("no 'Collected' line in callgrind's output")
    return int(m.group(1)) / runs


def millions(x):
    return f"{x / 1e6:.2f}" if x is not None else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models_dir", nargs="?")
    ap.add_argument("--gpass-opt")
    ap.add_argument("--models", default="mobilenetv2,resnet50,bert_encoder,lstm")
    ap.add_argument("--repeats", type=int, default=3, help="counted ORT session creations per level")
    ap.add_argument("--runs", type=int, default=5, help="gpass-opt --timing-runs")
    ap.add_argument("--verify", action="store_true", help="let gpass-opt verify after each pass (default: --no-verify)")
    ap.add_argument("--ort-from", help="take ORT's counts from an earlier --out file (same models and ORT) instead of measuring")
    ap.add_argument("--out", default="instructions.json")
    ap.add_argument("--ort-child", help=argparse.SUPPRESS)
    ap.add_argument("--lib", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ort_child:
        ort_child(args.ort_child, args.repeats, args.lib)
        return 0
    if not args.models_dir or not args.gpass_opt:
        ap.error("MODELS_DIR and --gpass-opt are required")

    earlier = None
    if args.ort_from:
        with open(args.ort_from) as f:
            earlier = json.load(f)
    results = {"settings": vars(args).copy(), "models": {}}
    with tempfile.TemporaryDirectory() as work:
        lib = build_toggle_lib(work)
        for name in args.models.split(","):
            model = os.path.join(args.models_dir, name + ".onnx")
            if not os.path.exists(model):
                print(f"{name}: {model} missing, skipped", file=sys.stderr)
                continue
            if earlier:
                ort = earlier["models"][name]["ort_creation"]
            else:
                print(f"{name}: ONNX Runtime ...", file=sys.stderr, flush=True)
                ort = measure_ort(model, args.repeats, lib, work)
            g = {}
            for variant in GPASS_VARIANTS:
                print(f"{name}: gpass {variant} ...", file=sys.stderr, flush=True)
                g[variant] = measure_gpass(args.gpass_opt, model, variant, args.runs, work, args.verify)
            off = statistics.median(ort["off"])
            opt = {lv: [x - off for x in ort[lv]] for lv in ("basic", "extended")}
            results["models"][name] = {"ort_creation": ort, "ort_optimization": opt, "gpass": g}

    rows = []
    for name, r in results["models"].items():
        g, o = r["gpass"], r["ort_optimization"]
        basic, ext = statistics.median(o["basic"]), statistics.median(o["extended"])
        spread = max(max(v) - min(v) for v in r["ort_creation"].values())
        net = {k: g[k] - g["infer"] for k in ("O1", "O2", "O3")}
        r["ratios"] = {
            "O2/basic gross": g["O2"] / basic, "O2/basic net": net["O2"] / basic,
            "O3/extended gross": g["O3"] / ext, "O3/extended net": net["O3"] / ext,
        }
        rows.append([name, millions(statistics.median(r["ort_creation"]["off"])), millions(basic), millions(ext),
                     millions(spread), millions(g["infer"]), millions(g["O2"]), millions(g["O3"]),
                     f"{r['ratios']['O2/basic gross']:.2f} / {r['ratios']['O2/basic net']:.2f}",
                     f"{r['ratios']['O3/extended gross']:.2f} / {r['ratios']['O3/extended net']:.2f}"])
    head = ["model", "ORT off", "ORT basic", "ORT ext", "ORT spread", "gpass infer", "gpass -O2", "gpass -O3",
            "-O2/basic gross/net", "-O3/ext gross/net"]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    print("Millions of instructions per optimization (callgrind); ORT basic/ext: creation minus creation at "
          "ORT_DISABLE_ALL (median of the repeats); ORT spread: largest max-min of one level's creations; "
          "net: gpass minus its initial inference (infer)")
    for row in [head] + rows:
        print("  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(row, widths))))
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
