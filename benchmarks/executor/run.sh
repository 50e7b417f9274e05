#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs the executor benchmark: gpass (Eigen CPU executor) vs ONNX Runtime, same
# machine, same run, same intra-op thread count (1 and 2), alternating between the two.
#
#   benchmarks/executor/run.sh [build-dir]
#
# Environment: JOBS (default 1) for the build; ROUNDS (default 3) alternations per row (the
# table shows the median of the rounds' medians); ITER_SCALE (default 1) multiplies the
# per-model iteration counts; THREADS (default "1 2"); MODELS=quick skips the
# pytorch-converted models; SKIP_BUILD=1 reuses the binaries already in the build folder
# (bench_gpass, gpass_eigen_gemm); RESNET_VARIANT=FILE.onnx adds a row for another CNN file;
# MARCH (default x86-64-v3) is the -march of the build (MARCH=native: AVX-512 where the CPU has
# it, as ONNX Runtime picks at run time). Needs python3 with onnx, onnxruntime and numpy.
# The table gives each side's median (and min) over the rounds, the ratio of the medians and
# of the mins (the min is steadier on a busy machine), and the memory plan's figures.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:-$here/../../build/bench-executor}"
data="${GPASS_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}/pytorch-converted"

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPASS_BENCH_EXECUTOR_MARCH="${MARCH:-x86-64-v3}" >/dev/null
  cmake --build "$build" --target gpass_bench_executor gpass_eigen_gemm -j "${JOBS:-1}"
fi
python3 "$here/make_models.py" "$build/models"

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cpus, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gpass build: -O3 -march=${MARCH:-x86-64-v3} -DNDEBUG (SKIP_BUILD=1: as the binaries in $build were built); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "f32 GEMM, 1 thread (Eigen; gpass's engine with B packed):"
"$build/gpass_eigen_gemm"

python3 - "$build" "$data" <<'PY'
import glob, json, os, statistics, subprocess, sys, time
import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

build, data = sys.argv[1], sys.argv[2]
bench = os.path.join(build, "bench_gpass")
rounds = int(os.environ.get("ROUNDS", "3"))
scale = float(os.environ.get("ITER_SCALE", "1"))
threads_list = [int(t) for t in os.environ.get("THREADS", "1 2").split()]

# (label, model path, batch, iterations)
cases = [("identity (floor)", f"{build}/models/identity.onnx", 1, 2000),
         ("mlp", f"{build}/models/mlp.onnx", 1, 300),
         ("mlp", f"{build}/models/mlp.onnx", 64, 100),
         ("resnet_small", f"{build}/models/resnet_small.onnx", 1, 100)]
if os.environ.get("RESNET_VARIANT"):  # an extra model file to run like resnet_small
    cases.append(("resnet_small_variant", os.environ["RESNET_VARIANT"], 1, 100))
if os.environ.get("MODELS", "all") != "quick":
    for d in sorted(glob.glob(os.path.join(data, "test_*"))):
        name = os.path.basename(d)
        if "Conv" not in name and "Linear" not in name:
            continue
        t = onnx.load_tensor(os.path.join(d, "test_data_set_0", "input_0.pb"))
        cases.append((name[5:], os.path.join(d, "model.onnx"), int(t.dims[0]) if t.dims else 1, 2000))

def run_gpass(path, batch, threads, iters, dump=None):
    cmd = [bench, path, f"--threads={threads}", f"--batch={batch}", f"--iters={iters}"]
    if dump:
        cmd.append(f"--dump={dump}")
    p = subprocess.run(cmd, capture_output=True, text=True)
    line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "{}"
    r = json.loads(line)
    if p.returncode != 0 and "error" not in r:
        r["error"] = p.stderr.strip()[-300:]
    return r

def read_dump(folder):
    ins, outs = {}, []
    for line in open(os.path.join(folder, "shapes.txt")):
        what, k, name, dt, *dims = line.split()
        arr = np.fromfile(os.path.join(folder, f"{what}_{k}.bin"), dtype={"f32": np.float32, "f64": np.float64}[dt])
        arr = arr.reshape([int(x) for x in dims])
        if what == "input":
            ins[name] = arr
        else:
            outs.append(arr)
    return ins, outs

def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

def time_ort(sess, feeds, iters):
    # IOBinding: inputs bound once, so the loop measures sess.run_with_iobinding (plus the
    # Python call); the outputs are allocated by ORT on every run, like gpass's.
    b = sess.io_binding()
    for k, v in feeds.items():
        b.bind_cpu_input(k, v)
    for o in sess.get_outputs():
        b.bind_output(o.name)
    for _ in range(max(3, iters // 10)):
        sess.run_with_iobinding(b)
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run_with_iobinding(b)
        ts.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(ts), min(ts)

rows = []
for label, path, batch, iters in cases:
    iters = max(5, int(iters * scale))
    dump = os.path.join(build, "dump", label + f"_b{batch}")
    for threads in threads_list:
        g_med, o_med, g_min, o_min = [], [], [], []
        info, err, diff = {}, None, None
        try:
            sess = ort_session(path, threads)
        except Exception as e:
            sess, err = None, f"ORT: {e}"
        feeds = None
        for r in range(rounds):
            res = run_gpass(path, batch, threads, iters, dump if (r == 0 and threads == threads_list[0]) else None)
            if "error" in res:
                err = "gpass: " + res["error"]
                break
            info = res
            g_med.append(res["median_us"]); g_min.append(res["min_us"])
            if sess is None:
                continue
            if feeds is None:
                ins, outs = read_dump(dump)
                feeds = {i.name: ins[i.name] for i in sess.get_inputs() if i.name in ins}
                if threads == threads_list[0]:
                    got = sess.run(None, feeds)
                    diff = max(float(np.max(np.abs(got[k].astype(np.float64) - outs[k]))) if outs[k].size else 0.0
                               for k in range(min(len(got), len(outs))))
            m, mn = time_ort(sess, feeds, iters)
            o_med.append(m); o_min.append(mn)
        row = dict(model=label, batch=batch, threads=threads, iters=iters, error=err, max_abs_diff=diff,
                   group="pytorch-converted" if path.startswith(data) else "ours")
        if g_med:
            row.update(gpass_us=statistics.median(g_med), gpass_min_us=min(g_min),
                       peak=info["planned_peak_bytes"], naive=info["naive_bytes"], steps=info["steps"],
                       dynamic=info["dynamic_buffers"], consts=info.get("constant_bytes", 0))
        if o_med:
            row.update(ort_us=statistics.median(o_med), ort_min_us=min(o_min))
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)

json.dump(rows, open(os.path.join(build, "results.json"), "w"), indent=1)
print()
print(f"{'model':<32}{'batch':>6}{'thr':>4}{'gpass us':>11}{'ORT us':>11}{'ratio':>7}{'gpass min':>10}{'ORT min':>10}{'ratio':>7}"
      f"{'peak MB':>10}{'naive MB':>10}{'consts MB':>10}{'max|diff|':>11}")
for r in rows:
    if r.get("gpass_us") is None or r.get("ort_us") is None:
        print(f"{r['model']:<32}{r['batch']:>6}{r['threads']:>4}   {r['error'] or 'n/a'}"[:200])
        continue
    d = "" if r["max_abs_diff"] is None else f"{r['max_abs_diff']:.1e}"
    print(f"{r['model']:<32}{r['batch']:>6}{r['threads']:>4}{r['gpass_us']:>11.1f}{r['ort_us']:>11.1f}"
          f"{r['gpass_us'] / r['ort_us']:>7.2f}{r['gpass_min_us']:>10.1f}{r['ort_min_us']:>10.1f}{r['gpass_min_us'] / r['ort_min_us']:>7.2f}"
          f"{r['peak'] / 2**20:>10.3f}{r['naive'] / 2**20:>10.3f}{r['consts'] / 2**20:>10.3f}{d:>11}")
# the memory plan of our models: the arena (activations; weights are Constant nodes, never in
# the arena) against the sum of the planned values
print()
print("memory plan (MB = 2^20 bytes): planned peak (arena) vs naive (sum of planned values), weights not included")
seen = set()
for r in rows:
    if r["group"] == "ours" and r.get("peak") is not None and (r["model"], r["batch"]) not in seen:
        seen.add((r["model"], r["batch"]))
        print(f"  {r['model']:<22} batch {r['batch']:<4} peak {r['peak'] / 2**20:8.3f}  naive {r['naive'] / 2**20:8.3f}"
              f"  ({r['naive'] / r['peak']:.1f}x less)" if r["peak"] else f"  {r['model']:<22} batch {r['batch']:<4} nothing planned")
# geometric mean of the ratios of the pytorch-converted models, per thread count
for t in threads_list:
    rs = [r["gpass_us"] / r["ort_us"] for r in rows if r["group"] != "ours" and r["threads"] == t and r.get("gpass_us") and r.get("ort_us")]
    rm = [r["gpass_min_us"] / r["ort_min_us"] for r in rows if r["group"] != "ours" and r["threads"] == t and r.get("gpass_us") and r.get("ort_us")]
    if rs:
        print(f"pytorch-converted Conv*/Linear*, {t} thread(s): {len(rs)} models, geometric mean ratio "
              f"{float(np.exp(np.mean(np.log(rs)))):.2f} (of the mins {float(np.exp(np.mean(np.log(rm)))):.2f}), max {max(rs):.2f}")
print(f"load average after the run: {open('/proc/loadavg').read().split()[:3]}")
PY
