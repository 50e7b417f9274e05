#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpass's CPU executor against ONNX Runtime on real architectures (issue 15).

    real_models.py MODELS_DIR --gpass-opt PATH [--models a,b] [--batches 1,8] [--threads 1,2]
                   [--rounds 3] [--runs 20] [--min-time-ms 250] [--out results.json]

MODELS_DIR holds the models of benchmarks/optimizer/make_models.py (MobileNetV2, ResNet50, a
BERT-like encoder, a 2-layer LSTM: tf_keras + tf2onnx, opset 17, random weights, symbolic
batch). For each model, batch and thread count, in `--rounds` alternating rounds:

- gpass: `gpass-opt -O3 MODEL --run --input=... --threads=T --repeat=RUNS` in a process of its
  own: the -O3 pipeline, the plan built once, one warm-up run, then RUNS timed runs (its
  'latency median' line);
- ONNX Runtime: this script again (`--ort-child`) in a process of its own: an
  InferenceSession with ORT_ENABLE_ALL, intra_op_num_threads T, inter_op 1, sequential, the
  CPU provider; one warm-up run, then RUNS timed `run` calls (time.perf_counter).

RUNS is `--runs`, or more where a process would time less than `--min-time-ms` (estimated by a
gpass process of 3 runs; the table's `runs` column): the host's speed changes over seconds,
and 20 runs of a 1 ms model would sample it over 25 ms only.

Both get the same inputs (written once per batch as TensorProto files), and their outputs are
compared (max |diff|). Peak RSS is each process's VmHWM (read while it runs): gpass-opt's includes
reading the model and optimizing it, ORT's the interpreter, numpy and the ORT library too,
so the no-session baseline of that child (`--ort-child` without a session) is measured and
reported beside it. The table shows the median over the rounds of each side's median (their
ratio), the ratio of the two sides' fastest runs (mins), `paired`: the median over the rounds
of the round's gpass median / ORT median (a round's two processes run one after the other,
under about the same host state, which on a shared VM changes over seconds), and
`steal%`: the share of the VM's CPU time its host took while the row ran (from /proc/stat), the
noise a figure was measured under.
"""

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

MODELS = ["mobilenetv2", "resnet50", "bert_encoder", "lstm"]
LATENCY_RE = re.compile(r"latency median: ([0-9.eE+-]+) ms, min: ([0-9.eE+-]+) ms")


def log(msg):
    print(f"[real_models] {msg}", file=sys.stderr, flush=True)


def vm_hwm_mb(pid):
    """The peak resident size of process `pid` so far (VmHWM, MiB); None once it has exited."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def run_measured(cmd, timeout):
    """Runs cmd; returns (exit status, stdout, stderr, peak RSS in MiB, wall seconds).

    The peak is the child's VmHWM, read every 5 ms while it runs (the last reading before it
    exits): unlike ru_maxrss it starts at the exec, so the copy of this Python process the
    child was forked from is not counted."""
    out_path, err_path = f"/tmp/real_models.{os.getpid()}.out", f"/tmp/real_models.{os.getpid()}.err"
    start = time.perf_counter()
    peak = 0.0
    with open(out_path, "w") as out, open(err_path, "w") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        deadline = start + timeout
        while True:
            hwm = vm_hwm_mb(p.pid)
            if hwm is not None:
                peak = max(peak, hwm)
            pid, status, _ = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                p.kill()
                pid, status, _ = os.wait4(p.pid, 0)
                break
            time.sleep(0.005)
    p.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path) as f:
        stdout = f.read()
    with open(err_path) as f:
        stderr = f.read()
    os.remove(out_path)
    os.remove(err_path)
    return p.returncode, stdout, stderr, peak, time.perf_counter() - start


# --------------------------------------------------------------------------------------
# inputs and outputs
# --------------------------------------------------------------------------------------


def make_inputs(models_dir, model, batch, work):
    """The model's saved batch-1 inputs grown to `batch` rows (floats: fresh uniform values in
    [-1, 1), seed 0; integers, e.g. token ids: the saved row repeated), written as
    TensorProto files input_K.pb in graph-input order. Returns their paths."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    saved = np.load(os.path.join(models_dir, f"{model}.inputs.npz"))
    graph = onnx.load(os.path.join(models_dir, f"{model}.onnx"), load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    names = [i.name for i in graph.input if i.name not in inits]
    rng = np.random.default_rng(0)
    d = os.path.join(work, f"{model}_b{batch}")
    os.makedirs(d, exist_ok=True)
    paths = []
    for k, name in enumerate(names):
        x = saved[name]
        if x.dtype.kind == "f":
            y = rng.uniform(-1.0, 1.0, size=(batch,) + x.shape[1:]).astype(x.dtype)
        else:
            y = np.repeat(x[:1], batch, axis=0)
        path = os.path.join(d, f"input_{k}.pb")
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(y, name).SerializeToString())
        paths.append(path)
    return paths


def cpu_ticks():
    """(all, steal) clock ticks of every CPU so far, from /proc/stat (None elsewhere): on a
    virtual machine, steal is the time its vCPUs were ready to run but the host ran something
    else, which slows the runs it falls in (two threads most: one stalled thread holds up
    every parallel region)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(v[:8]), (v[7] if len(v) > 7 else 0)


def steal_pct(before, after):
    if before is None or after is None or after[0] <= before[0]:
        return float("nan")
    return 100.0 * (after[1] - before[1]) / (after[0] - before[0])


def read_pb(path):
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def max_diff(a_dir, b_dir):
    """Largest |a - b| over the outputs output_K.pb of two folders (by position)."""
    import numpy as np

    worst, k = 0.0, 0
    while os.path.exists(os.path.join(a_dir, f"output_{k}.pb")):
        a = read_pb(os.path.join(a_dir, f"output_{k}.pb")).astype(np.float64)
        b = read_pb(os.path.join(b_dir, f"output_{k}.pb")).astype(np.float64)
        if a.shape != b.shape:
            raise RuntimeError(f"output {k}: gpass shape {list(a.shape)}, ORT {list(b.shape)}")
        if a.size:
            worst = max(worst, float(np.max(np.abs(a - b))))
        k += 1
    if k == 0:
        raise RuntimeError(f"no outputs in {a_dir}")
    return worst


# --------------------------------------------------------------------------------------
# the ONNX Runtime child
# --------------------------------------------------------------------------------------


def ort_child(args):
    """Runs in its own process: prints one JSON line (median_ms, min_ms, runs)."""
    import numpy as np  # noqa: F401  (the baseline counts it)
    import onnxruntime as ort
    from onnx import numpy_helper

    if args.model is None:  # baseline: interpreter, numpy, onnx, onnxruntime; no session
        print(json.dumps({"baseline": True}))
        return
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    sess = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for meta, path in zip(sess.get_inputs(), args.inputs):
        feeds[meta.name] = read_pb(path)
    outs = sess.run(None, feeds)  # warm-up
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        for k, o in enumerate(outs):
            with open(os.path.join(args.save, f"output_{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(o).SerializeToString())
    times = []
    for _ in range(args.runs):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({"median_ms": statistics.median(times), "min_ms": min(times), "runs": len(times)}))


# --------------------------------------------------------------------------------------
# one row
# --------------------------------------------------------------------------------------


def gpass_once(args, model_path, inputs, threads, runs, save):
    cmd = [args.gpass_opt, "-O3", model_path, "--run", f"--threads={threads}", f"--repeat={runs}"]
    cmd += [f"--input={p}" for p in inputs]
    if save:
        cmd.append(f"--save-outputs={save}")
    rc, out, err, rss, wall = run_measured(cmd, args.timeout)
    m = LATENCY_RE.search(out)
    if rc != 0 or not m:
        raise RuntimeError(f"gpass-opt exit status {rc}: {(err or out).strip()[-800:]}")
    return {"median_ms": float(m.group(1)), "min_ms": float(m.group(2)), "rss_mb": rss, "wall_s": wall}


def ort_once(args, model_path, inputs, threads, runs, save):
    cmd = [sys.executable, os.path.abspath(__file__), "--ort-child", "--model", model_path, "--threads", str(threads),
           "--runs", str(runs)]
    cmd += ["--inputs", *inputs]
    if save:
        cmd += ["--save", save]
    rc, out, err, rss, wall = run_measured(cmd, args.timeout)
    if rc != 0:
        raise RuntimeError(f"ORT child exit status {rc}: {err.strip()[-800:]}")
    r = json.loads(out.strip().splitlines()[-1])
    r.update(rss_mb=rss, wall_s=wall)
    return r


def measure(args, model, batch, threads, inputs, work):
    path = os.path.join(args.models_dir, f"{model}.onnx")
    row = {"model": model, "batch": batch, "threads": threads, "gpass": [], "ort": []}
    gsave, osave = os.path.join(work, "gpass_out"), os.path.join(work, "ort_out")
    # runs per process: --runs, or more where a process would time less than --min-time-ms
    # (estimated by a gpass process of 3 runs): the host's speed changes over seconds, and 20
    # runs of a 1 ms model sample it over 25 ms only
    runs = args.runs
    if args.min_time_ms > 0:
        est = gpass_once(args, path, inputs, threads, 3, None)["median_ms"]
        runs = max(args.runs, math.ceil(args.min_time_ms / max(est, 1e-3)))
    row["runs"] = runs
    for r in range(args.rounds):
        first = r == 0
        row["gpass"].append(gpass_once(args, path, inputs, threads, runs, gsave if first else None))
        row["ort"].append(ort_once(args, path, inputs, threads, runs, osave if first else None))
        if first:
            row["max_abs_diff"] = max_diff(gsave, osave)
    for side in ("gpass", "ort"):
        row[f"{side}_ms"] = statistics.median(x["median_ms"] for x in row[side])
        row[f"{side}_min_ms"] = min(x["min_ms"] for x in row[side])
        row[f"{side}_rss_mb"] = max(x["rss_mb"] for x in row[side])
    row["ratio"] = row["gpass_ms"] / row["ort_ms"]
    row["ratio_min"] = row["gpass_min_ms"] / row["ort_min_ms"]
    # each round's gpass process and the ORT process right after it see about the same host
    # state (it changes over seconds): the median of those rounds' ratios
    row["ratio_paired"] = statistics.median(g["median_ms"] / o["median_ms"] for g, o in zip(row["gpass"], row["ort"]))
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models_dir", nargs="?")
    ap.add_argument("--gpass-opt")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20, help="timed runs per process (after one warm-up run), at least")
    ap.add_argument("--min-time-ms", type=float, default=250,
                    help="more runs where a process would time less than this (0: --runs always)")
    ap.add_argument("--timeout", type=float, default=1200)
    ap.add_argument("--out", help="write every figure here (JSON)")
    ap.add_argument("--work", default=None, help="folder for inputs and outputs (default MODELS_DIR/real_models)")
    # the ORT child
    ap.add_argument("--ort-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--inputs", nargs="*", default=[], help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ort_child:
        args.threads = int(args.threads.split(",")[0])
        ort_child(args)
        return 0
    if not args.models_dir or not args.gpass_opt:
        ap.error("MODELS_DIR and --gpass-opt are required")
    work = args.work or os.path.join(args.models_dir, "real_models")
    os.makedirs(work, exist_ok=True)
    rc, _, err, base_rss, _ = run_measured([sys.executable, os.path.abspath(__file__), "--ort-child"], 300)
    if rc != 0:
        raise SystemExit(f"the ORT baseline child failed: {err.strip()[-800:]}")
    log(f"ORT child without a session: {base_rss:.1f} MB peak RSS")
    rows, failures = [], []
    table_start = cpu_ticks()
    for model in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            inputs = make_inputs(args.models_dir, model, batch, work)
            for threads in (int(t) for t in args.threads.split(",")):
                log(f"{model} batch {batch} threads {threads}")
                try:
                    before = cpu_ticks()
                    row = measure(args, model, batch, threads, inputs, os.path.join(work, f"{model}_b{batch}_t{threads}"))
                    row["steal_pct"] = steal_pct(before, cpu_ticks())
                    rows.append(row)
                except Exception as e:  # a failing row is reported, the others still run
                    failures.append({"model": model, "batch": batch, "threads": threads, "error": str(e)})
                    log(f"  failed: {e}")
    hdr = (f"{'model':14s} {'batch':>5s} {'thr':>3s} {'gpass ms':>9s} {'ORT ms':>9s} {'ratio':>6s} {'(mins)':>6s} {'paired':>6s} "
           f"{'gpass MB':>9s} {'ORT MB':>8s} {'ORT-base':>8s} {'max|diff|':>9s} {'steal%':>6s} {'runs':>5s}")
    print(hdr)
    for r in rows:
        print(f"{r['model']:14s} {r['batch']:5d} {r['threads']:3d} {r['gpass_ms']:9.2f} {r['ort_ms']:9.2f} {r['ratio']:6.2f} "
              f"{r['ratio_min']:6.2f} {r['ratio_paired']:6.2f} {r['gpass_rss_mb']:9.1f} {r['ort_rss_mb']:8.1f} {r['ort_rss_mb'] - base_rss:8.1f} "
              f"{r['max_abs_diff']:9.1e} {r['steal_pct']:6.1f} {r['runs']:5d}")
    for f in failures:
        print(f"{f['model']:14s} {f['batch']:5d} {f['threads']:3d} FAILED: {f['error']}")
    print(f"(ORT MB: the ORT child's peak RSS; ORT-base: minus that child without a session, {base_rss:.1f} MB; "
          f"median of {args.rounds} rounds' medians of `runs` runs ({args.runs} or more, a process timing about "
          f"{args.min_time_ms:g} ms or more); paired: the median of the rounds' "
          f"gpass/ORT, each round's two processes run one after the other; steal%: the CPU time the host took from "
          f"this VM while the row ran, {steal_pct(table_start, cpu_ticks()):.1f}% over the table)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"ort_baseline_rss_mb": base_rss, "rows": rows, "failures": failures, "runs": args.runs,
                       "rounds": args.rounds}, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
