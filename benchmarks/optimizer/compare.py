#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare gpass-opt's graph optimizer with ONNX Runtime, onnxsim and onnxoptimizer.

    compare.py MODELS_DIR --gpass-opt PATH [--out results.json] [options]

MODELS_DIR is what make_models.py wrote: <name>.onnx with <name>.inputs.npz and
<name>.outputs.npz (reference outputs of ONNX Runtime on the unoptimized model). For each
model this measures

  * nodes (top level, inside subgraphs, per op type) of the original model and of what each
    optimizer makes of it: ORT at ORT_ENABLE_BASIC and ORT_ENABLE_EXTENDED (the model ORT
    saves through SessionOptions.optimized_model_filepath), onnxsim.simplify,
    onnxoptimizer.optimize with get_fuse_and_elimination_passes(), gpass-opt -O1/-O2/-O3;
  * optimization time: ORT session creation at each level minus session creation at
    ORT_DISABLE_ALL (both reported), onnxsim.simplify, onnxoptimizer.optimize, and
    gpass-opt's own "optimize: <ms> ms" line (plus the process wall time);
  * whether each optimized model still loads and runs in ORT (ORT_DISABLE_ALL) and gives
    the reference outputs (rtol 1e-4, atol 1e-5 by default);
  * execution latency of ORT (ORT_ENABLE_EXTENDED, 1 and 2 intra-op threads) on the original
    model and, when --gpass-latency-cmd is given, of gpass's executor.

A gpass-opt failure (non-zero exit, unknown flag, missing output, timeout) is recorded with
its error text; the other columns are still measured. Results go to a table on stdout and,
in full, to the JSON file given by --out.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections import Counter

OPTIMIZE_RE = re.compile(r"^optimize: ([0-9.]+) ms", re.M)
MEDIAN_RE = re.compile(r"median: ([0-9.]+) ms")
# --timing's per-pass lines, loosely: "<pass>: ... <ms> ms[, ...]"
PASS_RE = re.compile(r"^([^\s:]+): .*?([0-9.]+) ms\b", re.M)

GPASS_LEVELS = [1, 2, 3]
VARIANTS = ["original", "ort_basic", "ort_extended", "onnxsim", "onnxoptimizer"] + [f"gpass_O{l}" for l in GPASS_LEVELS]
VARIANT_TITLES = {
    "original": "original",
    "ort_basic": "ORT basic",
    "ort_extended": "ORT ext",
    "onnxsim": "onnxsim",
    "onnxoptimizer": "onnxopt",
    "gpass_O1": "gpass -O1",
    "gpass_O2": "gpass -O2",
    "gpass_O3": "gpass -O3",
}


def log(msg):
    print(f"[compare] {msg}", file=sys.stderr, flush=True)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def tail(text, limit=4000):
    text = text or ""
    return text if len(text) <= limit else "..." + text[-limit:]


def error_text(e):
    return f"{type(e).__name__}: {e}"


# --------------------------------------------------------------------------------------
# Environment
# --------------------------------------------------------------------------------------


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except Exception:
        pass
    return platform.processor() or "unknown"


def cpu_busy(seconds=1.0):
    """Fraction of all CPUs busy over SECONDS while this process sleeps (other load), or None."""

    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + (v[4] if len(v) > 4 else 0)  # total, idle + iowait

    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
        return round(1.0 - (i1 - i0) / max(t1 - t0, 1), 3)
    except Exception:
        return None


def environment(args, modules):
    env = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": sys.version.split()[0],
        "versions": {},
        "gpass_opt": args.gpass_opt,
        "other_cpu_load_start": cpu_busy(),
    }
    for name, mod in modules.items():
        env["versions"][name] = getattr(mod, "__version__", "unknown")
    try:
        p = subprocess.run([args.gpass_opt, "--version"], capture_output=True, text=True, timeout=30)
        text = (p.stdout.strip() or p.stderr.strip() or "(no output)").splitlines()[0]
        env["gpass_opt_version"] = text + ("" if p.returncode == 0 else f" (exit {p.returncode})")
    except Exception as e:
        env["gpass_opt_version"] = error_text(e)
    return env


# --------------------------------------------------------------------------------------
# Node counts
# --------------------------------------------------------------------------------------


def op_key(node):
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"


def node_stats(model):
    """Top-level nodes and op types, and the same for every nested subgraph (If, Loop, Scan)."""
    from onnx import AttributeProto

    top = Counter(op_key(n) for n in model.graph.node)
    nested = Counter()

    def walk(graph):
        for n in graph.node:
            for a in n.attribute:
                subs = [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs) if a.type == AttributeProto.GRAPHS else []
                for g in subs:
                    nested.update(op_key(m) for m in g.node)
                    walk(g)

    walk(model.graph)
    # Local functions (FunctionProto) hold nodes too; report them apart.
    fn_nodes = sum(len(f.node) for f in model.functions)
    order = lambda c: dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
    return {
        "nodes": len(model.graph.node),
        "subgraph_nodes": sum(nested.values()),
        "total_nodes": len(model.graph.node) + sum(nested.values()),
        "function_nodes": fn_nodes,
        "initializers": len(model.graph.initializer),
        "op_types": order(top),
        "subgraph_op_types": order(nested),
    }


def count_file(path):
    import onnx

    st = node_stats(onnx.load(path))
    st["bytes"] = os.path.getsize(path)
    return st


# --------------------------------------------------------------------------------------
# ONNX Runtime helpers
# --------------------------------------------------------------------------------------


def session_options(ort, level, threads=1, save=None):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    if save:
        so.optimized_model_filepath = save
    return so


def new_session(ort, path, so):
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def feeds_for(sess, inputs):
    """Map the saved inputs onto the session's inputs: by name, else by position."""
    names = [i.name for i in sess.get_inputs()]
    if set(names) == set(inputs):
        return {n: inputs[n] for n in names}, "name"
    if len(names) == len(inputs):
        return dict(zip(names, inputs.values())), "position"
    raise RuntimeError(f"model inputs {names} do not match the saved inputs {list(inputs)}")


def check_outputs(ort, np, path, inputs, ref, rtol, atol):
    """Run PATH in ORT with optimizations off; compare with the reference outputs."""
    res = {"ok": False}
    try:
        sess = new_session(ort, path, session_options(ort, ort.GraphOptimizationLevel.ORT_DISABLE_ALL))
        feed, how = feeds_for(sess, inputs)
        res["inputs_matched_by"] = how
        out_names = [o.name for o in sess.get_outputs()]
        outs = sess.run(out_names, feed)
        if set(ref) <= set(out_names):
            pairs = [(n, ref[n], outs[out_names.index(n)]) for n in ref]
            res["outputs_matched_by"] = "name"
        elif len(out_names) == len(ref):
            pairs = [(n, r, o) for (n, r), o in zip(ref.items(), outs)]
            res["outputs_matched_by"] = "position"
        else:
            raise RuntimeError(f"model outputs {out_names} do not match the reference outputs {list(ref)}")
        worst, ok, per = 0.0, True, {}
        for name, r, o in pairs:
            o = np.asarray(o)
            if o.shape != r.shape:
                per[name] = {"ok": False, "error": f"shape {list(o.shape)} != reference {list(r.shape)}"}
                ok = False
                continue
            if r.dtype.kind in "fc":
                diff = float(np.max(np.abs(o.astype(np.float64) - r.astype(np.float64)))) if r.size else 0.0
                good = bool(np.allclose(o, r, rtol=rtol, atol=atol))
            else:
                diff = float(np.max(np.abs(o.astype(np.int64) - r.astype(np.int64)))) if r.size else 0.0
                good = bool(np.array_equal(o, r))
            per[name] = {"ok": good, "max_abs_diff": diff}
            worst = max(worst, diff)
            ok = ok and good
        res.update(ok=ok, max_abs_diff=worst, outputs=per)
    except Exception as e:
        res["error"] = error_text(e)
    return res


def ort_latency(ort, path, inputs, threads, level, warmup, min_runs, min_seconds, max_runs):
    sess = new_session(ort, path, session_options(ort, level, threads=threads))
    feed, _ = feeds_for(sess, inputs)
    for _ in range(warmup):
        sess.run(None, feed)
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - start < min_seconds and len(times) < max_runs):
        t = time.perf_counter()
        sess.run(None, feed)
        times.append((time.perf_counter() - t) * 1e3)
    return {
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "mean_ms": statistics.fmean(times),
        "runs": len(times),
    }


# --------------------------------------------------------------------------------------
# gpass-opt
# --------------------------------------------------------------------------------------


def run_gpass(gpass_opt, level, model, out, repeat, timeout, flags=()):
    cmd = [gpass_opt, f"-O{level}", "--timing", *flags, model, "-o", out]
    res = {"cmd": shlex.join(cmd), "ok": False, "runs": []}
    for i in range(repeat):
        if os.path.exists(out):
            os.remove(out)
        run = {}
        t = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            run.update(wall_ms=(time.perf_counter() - t) * 1e3, returncode=None)
            res["runs"].append(run)
            res["error"] = f"timed out after {timeout} s; stderr: {tail(e.stderr if isinstance(e.stderr, str) else '', 2000)}"
            return res
        except OSError as e:
            res["error"] = error_text(e)
            return res
        run["wall_ms"] = (time.perf_counter() - t) * 1e3
        run["returncode"] = p.returncode
        m = OPTIMIZE_RE.search(p.stderr)
        run["optimize_ms"] = float(m.group(1)) if m else None
        res["runs"].append(run)
        if i == 0:
            res["stderr"] = tail(p.stderr)
            res["pass_times"] = [
                {"pass": m.group(1), "ms": float(m.group(2))}
                for m in PASS_RE.finditer(p.stderr)
                if m.group(1) not in ("optimize", "total")
            ]
        if p.returncode != 0:
            text = (p.stderr.strip() or p.stdout.strip() or "(no output)")
            res["error"] = f"exit status {p.returncode}: {tail(text, 2000)}"
            return res
        if not os.path.exists(out):
            res["error"] = f"exit status 0 but no output file {out}"
            return res
    res["ok"] = True
    res["optimize_ms"] = median(r["optimize_ms"] for r in res["runs"])
    res["wall_ms"] = median(r["wall_ms"] for r in res["runs"])
    if res["optimize_ms"] is None:
        res["note"] = "no 'optimize: <ms> ms' line on stderr"
    return res


def gpass_latency(template, gpass_opt, model, threads, timeout):
    cmd_text = template.format(model=shlex.quote(model), threads=threads, gpass_opt=shlex.quote(gpass_opt))
    res = {"cmd": cmd_text}
    try:
        p = subprocess.run(shlex.split(cmd_text), capture_output=True, text=True, timeout=timeout)
        res["returncode"] = p.returncode
        m = MEDIAN_RE.search(p.stdout)
        if p.returncode != 0:
            res["error"] = f"exit status {p.returncode}: {tail(p.stderr.strip() or p.stdout.strip() or '(no output)', 2000)}"
        elif not m:
            res["error"] = f"no 'median: <ms> ms' on stdout: {tail(p.stdout, 1000)}"
        else:
            res["median_ms"] = float(m.group(1))
    except Exception as e:
        res["error"] = error_text(e)
    return res


# --------------------------------------------------------------------------------------
# One model
# --------------------------------------------------------------------------------------


def timed_on_copies(onnx, model, repeat, optimize):
    """Runs optimize(copy of model) `repeat` times (a fresh copy each time, outside the timing);
    returns the times in ms and the last result."""
    times, result = [], None
    for _ in range(repeat):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        t = time.perf_counter()
        result = optimize(m)
        times.append((time.perf_counter() - t) * 1e3)
    return times, result


def bench_model(name, path, args, mods, work_dir):
    np, onnx, ort, onnxsim, onnxoptimizer = mods["numpy"], mods["onnx"], mods["onnxruntime"], mods["onnxsim"], mods["onnxoptimizer"]
    L = ort.GraphOptimizationLevel
    r = {"file": path, "bytes": os.path.getsize(path), "variants": {}, "errors": []}
    V = r["variants"]
    out = lambda suffix: os.path.join(work_dir, f"{name}.{suffix}.onnx")

    base = os.path.splitext(path)[0]
    inputs = ref = None
    try:
        with np.load(base + ".inputs.npz") as z:
            inputs = {k: z[k] for k in z.files}
        with np.load(base + ".outputs.npz") as z:
            ref = {k: z[k] for k in z.files}
    except Exception as e:
        r["errors"].append(f"reference inputs/outputs: {error_text(e)}; equality checks and latency skipped")

    model = onnx.load(path)
    V["original"] = node_stats(model)
    V["original"]["bytes"] = r["bytes"]

    def check(variant_path):
        if inputs is None or args.no_check:
            return None
        return check_outputs(ort, np, variant_path, inputs, ref, args.rtol, args.atol)

    # ---- ONNX Runtime -------------------------------------------------------------------
    levels = {"disabled": L.ORT_DISABLE_ALL, "basic": L.ORT_ENABLE_BASIC, "extended": L.ORT_ENABLE_EXTENDED}
    try:
        new_session(ort, path, session_options(ort, L.ORT_DISABLE_ALL))  # warm-up: first load pays one-off costs
        create = {k: [] for k in levels}
        for _ in range(args.ort_repeat):  # interleaved so that drift hits every level alike
            for k, lv in levels.items():
                so = session_options(ort, lv)
                t = time.perf_counter()
                s = new_session(ort, path, so)
                create[k].append((time.perf_counter() - t) * 1e3)
                del s
        r["ort_disabled_create_ms"] = median(create["disabled"])
        r["ort_disabled_create_ms_all"] = create["disabled"]
        for k in ("basic", "extended"):
            v = V[f"ort_{k}"] = {}
            v["create_ms_all"] = create[k]
            v["create_ms"] = median(create[k])
            v["time_ms"] = v["create_ms"] - r["ort_disabled_create_ms"]  # the optimization part
            p = out(f"ort_{k}")
            new_session(ort, path, session_options(ort, levels[k], save=p))
            v.update(count_file(p))
            v["path"] = p
            v["check"] = check(p)
    except Exception as e:
        r["errors"].append(f"onnxruntime: {error_text(e)}")
    log(f"{name}: ORT done")

    # ---- onnxsim ------------------------------------------------------------------------
    v = V["onnxsim"] = {}
    try:
        times, (simplified, ok) = timed_on_copies(onnx, model, args.sim_repeat, onnxsim.simplify)
        p = out("onnxsim")
        onnx.save(simplified, p)
        v.update(time_ms=median(times), time_ms_all=times, simplify_check=ok, path=p)
        v.update(count_file(p))
        v["check"] = check(p)
    except Exception as e:
        v["error"] = error_text(e)
    log(f"{name}: onnxsim done")

    # ---- onnxoptimizer ------------------------------------------------------------------
    v = V["onnxoptimizer"] = {}
    try:
        passes = onnxoptimizer.get_fuse_and_elimination_passes()
        times, optimized = timed_on_copies(onnx, model, args.onnxopt_repeat, lambda m: onnxoptimizer.optimize(m, passes))
        p = out("onnxoptimizer")
        onnx.save(optimized, p)
        v.update(time_ms=median(times), time_ms_all=times, passes=passes, path=p)
        v.update(count_file(p))
        v["check"] = check(p)
    except Exception as e:
        v["error"] = error_text(e)
    log(f"{name}: onnxoptimizer done")

    # ---- gpass-opt ----------------------------------------------------------------------
    for lvl in GPASS_LEVELS:
        p = out(f"gpass_O{lvl}")
        v = V[f"gpass_O{lvl}"] = run_gpass(args.gpass_opt, lvl, path, p, args.gpass_repeat, args.gpass_timeout,
                                                   shlex.split(args.gpass_flags))
        if v["ok"]:
            v["time_ms"] = v["optimize_ms"]
            v["path"] = p
            try:
                v.update(count_file(p))
            except Exception as e:
                v["ok"] = False
                v["error"] = f"output does not load: {error_text(e)}"
            # Every level that wrote a model is checked (-O2 is the one that must round-trip).
            if v["ok"]:
                if any(n.domain == "gpass" for n in onnx.load(p, load_external_data=False).graph.node):
                    # gpass's fused ops (-O3): ORT cannot run them; gpass-opt --check covers them
                    v["check"] = {"skipped": "has gpass-domain ops"}
                else:
                    v["check"] = check(p)
        log(f"{name}: gpass -O{lvl} {'ok' if v['ok'] else 'FAILED: ' + v.get('error', '')[:200]}")

    # ---- ratios: gpass time / other time (below 1: gpass faster) ------------------------
    ratios = {}
    for lvl in GPASS_LEVELS:
        g = V[f"gpass_O{lvl}"]
        for kind in ("optimize_ms", "wall_ms"):
            gt = g.get(kind) if g.get("ok") else None
            row = {}
            for other in ("ort_basic", "ort_extended", "onnxsim", "onnxoptimizer"):
                ot = V.get(other, {}).get("time_ms")
                row[other] = gt / ot if gt is not None and ot is not None and ot > 0 else None
            ratios[f"gpass_O{lvl}_{kind}"] = row
    r["ratios"] = ratios

    # ---- latency ------------------------------------------------------------------------
    lat = r["latency"] = {"ort_extended": {}, "gpass_O3": {}}
    if inputs is not None and not args.no_latency:
        for th in args.threads:
            try:
                lat["ort_extended"][str(th)] = ort_latency(
                    ort, path, inputs, th, L.ORT_ENABLE_EXTENDED, args.warmup, args.min_runs, args.min_seconds, args.max_runs
                )
            except Exception as e:
                lat["ort_extended"][str(th)] = {"error": error_text(e)}
            if args.gpass_latency_cmd:
                lat["gpass_O3"][str(th)] = gpass_latency(args.gpass_latency_cmd, args.gpass_opt, path, th, args.gpass_timeout)
        if not args.gpass_latency_cmd:
            lat["gpass_O3"] = "skipped (no --gpass-latency-cmd)"
    log(f"{name}: latency done")
    return r


# --------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------


def print_table(title, header, rows, notes=()):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    print(f"\n{title}")
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))
    for n in notes:
        print(f"  {n}")


def fmt_ms(x):
    if x is None:
        return "-"
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def fmt_nodes(v):
    if not v or "nodes" not in v:
        return "fail" if v else "-"
    s = str(v["nodes"])
    if v.get("subgraph_nodes"):
        s += f"+{v['subgraph_nodes']}"
    return s


def report(results, show_ops):
    models = results["models"]
    rows = [[m] + [fmt_nodes(r["variants"].get(k)) for k in VARIANTS] for m, r in models.items()]
    print_table(
        "Nodes (top-level graph; +N: nodes inside subgraphs)",
        ["model"] + [VARIANT_TITLES[k] for k in VARIANTS],
        rows,
        ["fail: that optimizer failed (see Failures below)"] if any("fail" in row for row in rows) else [],
    )

    rows = []
    for m, r in models.items():
        V = r["variants"]
        ort_cell = lambda k: f"{fmt_ms(V.get(k, {}).get('time_ms'))} ({fmt_ms(V.get(k, {}).get('create_ms'))})"
        g_cell = lambda k: (
            f"{fmt_ms(V[k].get('optimize_ms'))} ({fmt_ms(V[k].get('wall_ms'))})" if V.get(k, {}).get("ok") else "fail"
        )
        rows.append(
            [m, fmt_ms(r.get("ort_disabled_create_ms")), ort_cell("ort_basic"), ort_cell("ort_extended")]
            + [fmt_ms(V.get("onnxsim", {}).get("time_ms")), fmt_ms(V.get("onnxoptimizer", {}).get("time_ms"))]
            + [g_cell(f"gpass_O{l}") for l in GPASS_LEVELS]
        )
    print_table(
        "Optimization time, ms (medians)",
        ["model", "ORT off", "ORT basic", "ORT ext", "onnxsim", "onnxopt", "gpass -O1", "gpass -O2", "gpass -O3"],
        rows,
        [
            "ORT off: session creation at ORT_DISABLE_ALL; ORT basic/ext: creation minus 'ORT off' (creation itself)",
            "gpass: the 'optimize:' line of --timing (process wall time, with parsing and writing the model)",
        ],
    )

    rows = []
    for m, r in models.items():
        for lvl in GPASS_LEVELS:
            q = r.get("ratios", {}).get(f"gpass_O{lvl}_optimize_ms", {})
            f = lambda x: "-" if x is None else f"{x:.2f}"
            rows.append([m, f"-O{lvl}"] + [f(q.get(k)) for k in ("ort_basic", "ort_extended", "onnxsim", "onnxoptimizer")])
    print_table(
        "gpass optimization time / other optimizer's time (below 1: gpass faster)",
        ["model", "gpass", "/ORT basic", "/ORT ext", "/onnxsim", "/onnxopt"],
        rows,
    )

    rows = []
    for m, r in models.items():
        cells = [m]
        for k in VARIANTS[1:]:
            c = r["variants"].get(k, {}).get("check")
            if not c:
                cells.append("-")
            elif "skipped" in c:
                cells.append("gpass ops")
            elif "error" in c:
                cells.append("ERROR")
            else:
                cells.append(f"{'ok' if c['ok'] else 'DIFF'} {c['max_abs_diff']:.1e}")
        rows.append(cells)
    print_table(
        "Outputs vs ORT on the original model (optimized model run at ORT_DISABLE_ALL; max |diff|)",
        ["model"] + [VARIANT_TITLES[k] for k in VARIANTS[1:]],
        rows,
        ["ok/DIFF: allclose at the given rtol/atol; ERROR: did not load or run (see the JSON); -: not run"],
    )

    threads = results["settings"]["threads"]
    rows = []
    for m, r in models.items():
        lat = r.get("latency", {})
        cells = [m]
        for th in threads:
            cells.append(fmt_ms(lat.get("ort_extended", {}).get(str(th), {}).get("median_ms")))
        g = lat.get("gpass_O3", {})
        for th in threads:
            cells.append(fmt_ms(g.get(str(th), {}).get("median_ms")) if isinstance(g, dict) else "skip")
        rows.append(cells)
    print_table(
        "Latency, ms (median per run, batch 1)",
        ["model"] + [f"ORT ext t={t}" for t in threads] + [f"gpass -O3 t={t}" for t in threads],
        rows,
    )

    if show_ops:
        for m, r in models.items():
            V = r["variants"]
            keys = [k for k in VARIANTS if V.get(k, {}).get("op_types") is not None]
            ops = sorted({o for k in keys for o in list(V[k]["op_types"]) + list(V[k]["subgraph_op_types"])})
            ops.sort(key=lambda o: (-V["original"]["op_types"].get(o, 0), o))
            rows = []
            for o in ops:
                rows.append(
                    [o]
                    + [
                        str(V[k]["op_types"].get(o, 0) + V[k]["subgraph_op_types"].get(o, 0) or ".")
                        for k in keys
                    ]
                )
            print_table(f"{m}: nodes per op type (subgraphs included; '.' = 0)", ["op"] + [VARIANT_TITLES[k] for k in keys], rows)

    errors = []
    for m, r in models.items():
        errors += [f"{m}: {e}" for e in r.get("errors", [])]
        for k in VARIANTS:
            v = r["variants"].get(k, {})
            if v.get("error"):
                errors.append(f"{m}, {VARIANT_TITLES[k]}: {v['error'].strip()[:500]}")
            c = v.get("check") or {}
            if c.get("error"):
                errors.append(f"{m}, {VARIANT_TITLES[k]}, output check: {c['error'][:500]}")
    if errors:
        print("\nFailures:")
        for e in errors:
            print("  " + e.replace("\n", "\n    "))


# --------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models_dir")
    ap.add_argument("--gpass-opt", required=True, help="path of the gpass-opt executable")
    ap.add_argument("--out", default="results.json", help="JSON file for every number (default results.json)")
    ap.add_argument("--work-dir", help="where optimized models go (default MODELS_DIR/optimized)")
    ap.add_argument("--models", default="", help="comma-separated subset of the models (file names without .onnx)")
    ap.add_argument("--ort-repeat", type=int, default=5, help="ORT session creations per level (median)")
    ap.add_argument("--sim-repeat", type=int, default=3, help="onnxsim.simplify runs (median)")
    ap.add_argument("--onnxopt-repeat", type=int, default=5, help="onnxoptimizer.optimize runs (median)")
    ap.add_argument("--gpass-repeat", type=int, default=3, help="gpass-opt runs per level (median)")
    ap.add_argument("--gpass-timeout", type=float, default=600, help="seconds before a gpass-opt run is killed")
    ap.add_argument("--gpass-flags", default="--no-verify --timing-runs=20",
                    help="extra gpass-opt options for the optimization runs (default '%(default)s': the structural "
                    "verification after each pass is a debugging aid that ORT and onnxsim do not do; --timing-runs "
                    "optimizes 20 copies in the process and reports their median, warm as ORT's timed sessions are "
                    "after its untimed first one)")
    ap.add_argument(
        "--gpass-latency-cmd",
        default="{gpass_opt} -O3 {model} --run --repeat=30 --threads={threads}",
        help="command template for gpass's executor latency, with {model} {threads} (and {gpass_opt}); "
        "its stdout must contain 'median: <ms> ms' (default: '%(default)s'; '' skips it)",
    )
    ap.add_argument("--threads", default="1,2", help="intra-op thread counts for latency (default 1,2)")
    ap.add_argument("--warmup", type=int, default=3, help="ORT latency: untimed runs first")
    ap.add_argument("--min-runs", type=int, default=10, help="ORT latency: at least this many timed runs")
    ap.add_argument("--min-seconds", type=float, default=2.0, help="ORT latency: and keep going for this long")
    ap.add_argument("--max-runs", type=int, default=1000, help="ORT latency: but no more runs than this")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--no-check", action="store_true", help="skip the output equality checks")
    ap.add_argument("--no-latency", action="store_true", help="skip the latency measurements")
    ap.add_argument("--no-op-table", action="store_true", help="do not print the per-op-type tables")
    args = ap.parse_args()
    args.threads = [int(t) for t in args.threads.split(",") if t]

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy
    import onnx
    import onnxoptimizer
    import onnxruntime
    import onnxsim

    mods = {"numpy": numpy, "onnx": onnx, "onnxruntime": onnxruntime, "onnxsim": onnxsim, "onnxoptimizer": onnxoptimizer}
    onnxruntime.set_default_logger_severity(3)

    models_dir = os.path.abspath(args.models_dir)
    work_dir = os.path.abspath(args.work_dir or os.path.join(models_dir, "optimized"))
    os.makedirs(work_dir, exist_ok=True)

    names = sorted(f[:-5] for f in os.listdir(models_dir) if f.endswith(".onnx") and not f.endswith(".tmp.onnx"))
    manifest = os.path.join(models_dir, "manifest.json")
    if os.path.exists(manifest):  # keep make_models.py's order
        with open(manifest) as f:
            order = list(json.load(f).get("models", {}))
        names.sort(key=lambda n: (order.index(n) if n in order else len(order), n))
    if args.models:
        wanted = [n for n in args.models.split(",") if n]
        missing = [n for n in wanted if n not in names]
        if missing:
            ap.error(f"not in {models_dir}: {', '.join(missing)}")
        names = [n for n in names if n in wanted]
    if not names:
        ap.error(f"no .onnx models in {models_dir}")

    results = {
        "env": environment(args, mods),
        "settings": {
            "models_dir": models_dir,
            "work_dir": work_dir,
            "ort_repeat": args.ort_repeat,
            "sim_repeat": args.sim_repeat,
            "onnxopt_repeat": args.onnxopt_repeat,
            "gpass_repeat": args.gpass_repeat,
            "threads": args.threads,
            "rtol": args.rtol,
            "atol": args.atol,
            "gpass_latency_cmd": args.gpass_latency_cmd,
            "ort_session_threads_for_timing": 1,
        },
        "models": {},
    }
    t0 = time.perf_counter()
    for name in names:
        log(f"{name}: start")
        try:
            results["models"][name] = bench_model(name, os.path.join(models_dir, name + ".onnx"), args, mods, work_dir)
        except Exception as e:  # a model that cannot even be loaded
            import traceback

            results["models"][name] = {"errors": [error_text(e), traceback.format_exc()], "variants": {}, "ratios": {}}
            log(f"{name}: FAILED: {error_text(e)}")
        with open(args.out, "w") as f:  # written after every model, so a crash keeps what was measured
            json.dump(results, f, indent=2)
    results["elapsed_s"] = time.perf_counter() - t0
    results["env"]["other_cpu_load_end"] = cpu_busy()

    env = results["env"]
    print(f"machine: {env['cpu']}, {env['nproc']} CPUs; {env['date']}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in env["versions"].items()) + f"; gpass-opt: {env['gpass_opt_version']}")
    loads = [x for x in (env["other_cpu_load_start"], env["other_cpu_load_end"]) if x is not None]
    if loads and max(loads) > 0.1:
        print(
            f"warning: other processes kept {100 * max(loads):.0f}% of the CPUs busy (sampled for 1 s before and "
            "after the run): the times, latency with several threads most of all, are unreliable"
        )
    report(results, not args.no_op_table)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
    print(f"\nresults: {os.path.abspath(args.out)} ({results['elapsed_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
