#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gpass's CUDA policy against PyTorch (eager, cuDNN) on the same GPU, the same models and
inputs. Run on a machine with a GPU, PyTorch, torchvision, transformers and onnx:

    python3 benchmarks/cuda/compare_torch.py BENCH_CUDA [--models=resnet50,bert] [--batches=1,32]
                                              [--iters=50] [--out=results.json]

BENCH_CUDA is the gpass_bench_cuda binary (bench_cuda.cpp). For each model (random weights:
the timings do not depend on them) it exports ONNX with a symbolic batch, writes the inputs,
and for each batch size and each precision setting (f32; TF32 allowed) measures
  torch_us      the module on CUDA tensors, up to torch.cuda.synchronize (median of --iters)
  torch_host_us the same from host inputs to host outputs
  gpass_us      bench_cuda's device_us (a plan<cuda> on device inputs, synchronized), and
  gpass_host_us bench_cuda's host_us (a session run: host inputs to host outputs)
  gpass_graph_us bench_cuda's graph_us (the plan as CUDA graphs: cuda_graph_plan)
  gpass_host_pageable_us (with --pageable) host_us again with the outputs downloaded straight
                into pageable memory (`--pageable-download`) instead of through pinned buffers
and checks gpass's outputs against PyTorch's (f32: max relative error). With --ort (and an
onnxruntime whose CUDAExecutionProvider loads: onnxruntime-gpu for CUDA 13), ONNX Runtime's
CUDA execution provider on the same ONNX file is timed too (all graph optimizations; use_tf32
as the row says; cuDNN's exhaustive convolution search, its default):
  ort_us        run_with_iobinding with inputs and outputs in device memory (ONNX Runtime
                synchronizes at the end of a run)
  ort_host_us   run() from NumPy inputs to NumPy outputs
  ort_graph_us  run_with_iobinding with enable_cuda_graph (inputs and output bound to fixed
                device buffers; an error where ONNX Runtime refuses graphs for the model)
with ort_ratio = gpass_us / ort_us, ort_host_ratio = gpass_host_us / ort_host_us,
ort_graph_ratio = gpass_graph_us / ort_graph_us, ort_graph_ratio_vs_plain = gpass_graph_us / ort_us.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch


def make_model(name):
    if name == "resnet50":
        import torchvision
        m = torchvision.models.resnet50(weights=None).eval()
        def inputs(b):
            g = torch.Generator().manual_seed(0)
            return [torch.rand(b, 3, 224, 224, generator=g) * 2 - 1]
        return m, inputs, ["x"], ["y"], {"x": {0: "N"}, "y": {0: "N"}}
    if name == "bert":
        from transformers import BertConfig, BertModel
        cfg = BertConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                         max_position_embeddings=512, attn_implementation="eager")
        torch.manual_seed(0)
        bert = BertModel(cfg, add_pooling_layer=False).eval()

        class Encoder(torch.nn.Module):
            def __init__(self, b):
                super().__init__()
                self.b = b

            def forward(self, ids, mask):
                return self.b(input_ids=ids, attention_mask=mask).last_hidden_state

        m = Encoder(bert).eval()
        def inputs(b):
            g = torch.Generator().manual_seed(0)
            ids = torch.randint(0, cfg.vocab_size, (b, 128), generator=g)
            mask = torch.ones(b, 128, dtype=torch.int64)
            return [ids, mask]
        return m, inputs, ["ids", "mask"], ["y"], {"ids": {0: "N"}, "mask": {0: "N"}, "y": {0: "N"}}
    raise SystemExit(f"unknown model {name}")


def export(m, example, path, in_names, out_names, axes):
    with torch.no_grad():
        try:
            torch.onnx.export(m, tuple(example), path, input_names=in_names, output_names=out_names, dynamic_axes=axes,
                              opset_version=17, do_constant_folding=True, dynamo=False)
        except TypeError:
            torch.onnx.export(m, tuple(example), path, input_names=in_names, output_names=out_names, dynamic_axes=axes,
                              opset_version=17, do_constant_folding=True)


def median_us(f, iters, warmup=10):
    """The median wall time of `f` in microseconds over `iters` runs after `warmup`."""
    for _ in range(warmup):
        f()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t0) * 1e6)
    return float(np.median(ts))


def torch_time(m, xs, iters, host):
    with torch.no_grad():
        dev = [x.cuda() for x in xs]
        def once():
            if host:
                y = m(*[x.cuda() for x in xs])
                return y.cpu()
            y = m(*dev)
            torch.cuda.synchronize()
            return y
        for _ in range(10):
            once()
        torch.cuda.synchronize()
        return median_us(once, iters, warmup=0)


def ort_time(path, xs, in_names, tf32, iters):
    """ONNX Runtime's CUDA EP on `path`: (device-resident us, host-to-host us, output, providers)."""
    import onnxruntime as ort
    if hasattr(ort, "preload_dlls"):  # the CUDA and cuDNN libraries of the nvidia-* wheels, where there are
        try:
            ort.preload_dlls()
        except Exception:  # noqa: BLE001 - the system's libraries may serve instead
            pass
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts = {"device_id": "0", "cudnn_conv_algo_search": "EXHAUSTIVE", "use_tf32": "1" if tf32 else "0"}
    sess = ort.InferenceSession(path, so, providers=[("CUDAExecutionProvider", opts), "CPUExecutionProvider"])
    feeds = {n: x.numpy() for n, x in zip(in_names, xs)}
    io = sess.io_binding()
    dev = {n: ort.OrtValue.ortvalue_from_numpy(v, "cuda", 0) for n, v in feeds.items()}
    for n, v in dev.items():
        io.bind_ortvalue_input(n, v)
    out_name = sess.get_outputs()[0].name
    io.bind_output(out_name, "cuda")

    t_dev = median_us(lambda: sess.run_with_iobinding(io), iters)
    t_host = median_us(lambda: sess.run([out_name], feeds), iters)
    y = sess.run([out_name], feeds)[0]
    return t_dev, t_host, y, sess.get_providers()


def ort_graph_time(path, xs, in_names, tf32, iters, out_shape):
    """ONNX Runtime's CUDA EP with `enable_cuda_graph` (inputs and output bound to fixed device
    buffers, as it requires): (device-resident us, output)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts = {"device_id": "0", "cudnn_conv_algo_search": "EXHAUSTIVE", "use_tf32": "1" if tf32 else "0",
            "enable_cuda_graph": "1"}
    sess = ort.InferenceSession(path, so, providers=[("CUDAExecutionProvider", opts), "CPUExecutionProvider"])
    io = sess.io_binding()
    dev = {n: ort.OrtValue.ortvalue_from_numpy(x.numpy(), "cuda", 0) for n, x in zip(in_names, xs)}
    for n, v in dev.items():
        io.bind_ortvalue_input(n, v)
    out = ort.OrtValue.ortvalue_from_shape_and_type(list(out_shape), np.float32, "cuda", 0)
    io.bind_ortvalue_output(sess.get_outputs()[0].name, out)
    for _ in range(3):  # the first runs capture the graph
        sess.run_with_iobinding(io)
    t = median_us(lambda: sess.run_with_iobinding(io), iters)
    return t, out.numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("--models", default="resnet50,bert")
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--out", default="")
    ap.add_argument("--ort", action="store_true", help="time ONNX Runtime's CUDA execution provider too")
    ap.add_argument("--pageable", action="store_true", help="time gpass's host path with pageable downloads too")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    work = tempfile.mkdtemp(prefix="gpass_cuda_bench_")
    rows = []
    for name in a.models.split(","):
        m, inputs, in_names, out_names, axes = make_model(name)
        path = os.path.join(work, name + ".onnx")
        try:
            export(m, inputs(1), path, in_names, out_names, axes)
        except Exception as e:  # noqa: BLE001 - report and go on with the next model
            print(json.dumps({"model": name, "error": f"export: {e}"[:600]}), flush=True)
            continue
        m = m.cuda()
        for b in [int(x) for x in a.batches.split(",")]:
            xs = inputs(b)
            idir = os.path.join(work, f"{name}_{b}_in")
            os.makedirs(idir, exist_ok=True)
            for k, x in enumerate(xs):
                x.numpy().tofile(os.path.join(idir, f"input_{k}.bin"))
            for tf32 in (False, True):
                torch.backends.cuda.matmul.allow_tf32 = tf32
                torch.backends.cudnn.allow_tf32 = tf32
                with torch.no_grad():
                    ref = m(*[x.cuda() for x in xs]).float().cpu().numpy()
                t_dev = torch_time(m, xs, a.iters, host=False)
                t_host = torch_time(m, xs, a.iters, host=True)
                odir = os.path.join(work, f"{name}_{b}_{int(tf32)}_out")
                cmd = [a.bench, path, f"--batch={b}", f"--iters={a.iters}", f"--inputs={idir}", f"--dump={odir}"]
                if tf32:
                    cmd.append("--tf32")
                p = subprocess.run(cmd, capture_output=True, text=True)
                row = {"model": name, "batch": b, "tf32": tf32, "torch_us": t_dev, "torch_host_us": t_host}
                if p.returncode != 0:
                    row["error"] = f"exit {p.returncode}: " + (p.stderr + p.stdout)[-600:]
                else:
                    g = json.loads(p.stdout.strip().splitlines()[-1])
                    row.update({"gpass_us": g["device_us"], "gpass_graph_us": g.get("graph_us", -1),
                                "graph_rel_diff": g.get("graph_rel_diff"), "graph_uncapturable": g.get("graph_uncapturable"),
                                "gpass_host_us": g["host_us"], "on_gpu": g["on_gpu"],
                                "cpu_ops": g["cpu_ops"], "first_run_ms": g["first_run_ms"], "nvrtc_s": g["nvrtc_s"],
                                "nvrtc_compiled": g["nvrtc_compiled"], "nodes": g["nodes"]})
                    got = np.fromfile(os.path.join(odir, "output_0.bin"), dtype=np.float32)
                    if got.size == ref.size:
                        row["max_rel_err"] = float(np.max(np.abs(got - ref.ravel())) / (np.max(np.abs(ref)) + 1e-30))
                    else:
                        row["max_rel_err"] = f"size {got.size} vs {ref.size}"
                    if g["device_us"] > 0:
                        row["ratio"] = g["device_us"] / t_dev
                    row["host_ratio"] = g["host_us"] / t_host
                    if a.pageable:
                        q = subprocess.run([c for c in cmd if not c.startswith("--dump=")] + ["--pageable-download"], capture_output=True, text=True)
                        if q.returncode == 0:
                            row["gpass_host_pageable_us"] = json.loads(q.stdout.strip().splitlines()[-1])["host_us"]
                if a.ort:
                    try:
                        o_dev, o_host, o_y, provs = ort_time(path, xs, in_names, tf32, a.iters)
                        row.update({"ort_us": o_dev, "ort_host_us": o_host, "ort_providers": provs,
                                    "ort_max_rel_err": float(np.max(np.abs(o_y.astype(np.float32).ravel() - ref.ravel())) /
                                                             (np.max(np.abs(ref)) + 1e-30))})
                        if row.get("gpass_us"):
                            row["ort_ratio"] = row["gpass_us"] / o_dev
                        if row.get("gpass_host_us"):
                            row["ort_host_ratio"] = row["gpass_host_us"] / o_host
                        if row.get("gpass_graph_us", -1) > 0:
                            row["ort_graph_ratio_vs_plain"] = row["gpass_graph_us"] / o_dev
                    except Exception as e:  # noqa: BLE001 - report and go on
                        row["ort_error"] = str(e)[:600]
                    try:
                        og, og_y = ort_graph_time(path, xs, in_names, tf32, a.iters, ref.shape)
                        row.update({"ort_graph_us": og, "ort_graph_max_rel_err": float(
                            np.max(np.abs(og_y.astype(np.float32).ravel() - ref.ravel())) / (np.max(np.abs(ref)) + 1e-30))})
                        if row.get("gpass_graph_us", -1) > 0:
                            row["ort_graph_ratio"] = row["gpass_graph_us"] / og
                    except Exception as e:  # noqa: BLE001 - ORT refuses CUDA graphs when a node is on its CPU provider
                        row["ort_graph_error"] = str(e)[:600]
                rows.append(row)
                print(json.dumps(row), flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
