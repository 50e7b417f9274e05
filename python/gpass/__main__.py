# SPDX-License-Identifier: Apache-2.0
"""`python -m gpass`: the command line of the Python module.

    python -m gpass optimize in.onnx out.onnx -O2 --check 3    # onnxsim-style
    python -m gpass optimize in.onnx out.gir --passes fold-constants,cse,dce
    python -m gpass run model.onnx --input x=x.npy             # random inputs when none given
    python -m gpass print model.onnx                           # text IR
    python -m gpass passes                                     # passes and pipelines
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import List, Optional

import numpy as np

import gpass


def _summary(before: dict, after: dict) -> str:
    keys = sorted(set(before) | set(after))
    w = max([5] + [len(k) for k in keys])
    lines = [f"{'op':<{w}}  {'before':>8}{'after':>8}"]
    for k in keys:
        lines.append(f"{k:<{w}}  {before.get(k, 0):>8}{after.get(k, 0):>8}")
    lines.append(f"{'total':<{w}}  {sum(before.values()):>8}{sum(after.values()):>8}")
    return "\n".join(lines)


def _optimize(a: argparse.Namespace) -> int:
    g = gpass.load(a.input, a.format)
    before = g.op_counts()
    original = g.copy() if a.check > 0 else None
    t0 = time.perf_counter()
    report = g.optimize(a.level, a.passes, a.verify)
    ms = (time.perf_counter() - t0) * 1e3
    for sev, pass_, node, msg in report.diagnostics:
        where = (f": pass '{pass_}'" if pass_ else "") + (f": node '{node}'" if node else "")
        print(f"gpass: {sev}{where}: {msg}", file=sys.stderr)
    if not a.quiet:
        print(_summary(before, g.op_counts()), file=sys.stderr)
        print(f"optimize: {ms:.3g} ms", file=sys.stderr)
    if original is not None:
        r = gpass.check(original, g, runs=a.check, seed=a.seed, rtol=a.tolerance, atol=a.tolerance)
        print(f"check: {r.runs} run(s) on seeded random inputs, max abs diff {r.max_abs_diff:.3g} ({r.where}), "
              f"tolerance {a.tolerance:g}: {'ok' if r.ok else 'FAILED'}", file=sys.stderr)
        if not r.ok:
            return 1
    if a.output:
        g.save(a.output)
    else:
        sys.stdout.write(g.text(elide_large_constants=True))
    return 0


def _run(a: argparse.Namespace) -> int:
    g = gpass.load(a.input, a.format)
    feeds = gpass.random_inputs(g, a.seed) if not a.input_files else {}
    for spec in a.input_files:
        name, _, path = spec.partition("=")
        if not path:
            raise SystemExit(f"--input needs NAME=FILE (.npy, or .pb: an ONNX TensorProto), got '{spec}'")
        feeds[name] = np.load(path) if path.endswith(".npy") else gpass.read_tensor(path)
    t0 = time.perf_counter()
    out = gpass.run(g, feeds, threads=a.threads)
    ms = (time.perf_counter() - t0) * 1e3
    for name, v in out.items():
        if isinstance(v, np.ndarray):
            print(f"{name}: {v.dtype}{list(v.shape)} {np.array2string(v.ravel()[:8], precision=6)}"
                  f"{' ...' if v.size > 8 else ''}")
        else:
            print(f"{name}: {type(v).__name__}")
    print(f"run: {ms:.3g} ms (first call: compiles the plan)", file=sys.stderr)
    return 0


def _print(a: argparse.Namespace) -> int:
    g = gpass.load(a.input, a.format)
    if a.infer_shapes:
        g.infer_shapes()
    sys.stdout.write(g.text(elide_large_constants=not a.full))
    return 0


def _passes(a: argparse.Namespace) -> int:
    for name, doc, options in gpass.list_passes():
        print(f"{name}" + (f" - {doc}" if doc else ""))
        for o in options:
            print(f"    {o}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpass", description="gpass: optimize, inspect and run graphs")
    p.add_argument("--version", action="version", version=f"gpass {gpass.__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    o = sub.add_parser("optimize", help="optimize a model (onnxsim-style)")
    o.add_argument("input")
    o.add_argument("output", nargs="?", help=".onnx, or text IR for other names (default: print text IR)")
    for lvl in range(4):
        o.add_argument(f"-O{lvl}", dest="level", action="store_const", const=lvl)
    o.add_argument("--passes", default=None, help="a pipeline run after the -O level, e.g. fold-constants,cse,dce")
    o.add_argument("--check", type=int, default=0, metavar="N", help="compare outputs on N seeded random inputs")
    o.add_argument("--tolerance", type=float, default=1e-4)
    o.add_argument("--seed", type=int, default=0)
    o.add_argument("--verify", action="store_true", help="verify the graph after every pass")
    o.add_argument("--format", default=None, help="input format: onnx, tf, gir (default: from the name)")
    o.add_argument("-q", "--quiet", action="store_true", help="no op summary")
    o.set_defaults(func=_optimize, level=2)

    r = sub.add_parser("run", help="run a model on the CPU executor")
    r.add_argument("input")
    r.add_argument("--input", dest="input_files", action="append", default=[], metavar="NAME=FILE")
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--format", default=None)
    r.set_defaults(func=_run)

    pr = sub.add_parser("print", help="print a model as text IR")
    pr.add_argument("input")
    pr.add_argument("--infer-shapes", action="store_true")
    pr.add_argument("--full", action="store_true", help="print large constants in full")
    pr.add_argument("--format", default=None)
    pr.set_defaults(func=_print)

    ps = sub.add_parser("passes", help="list the passes and pipelines")
    ps.set_defaults(func=_passes)

    a = p.parse_args(argv)
    try:
        return a.func(a)
    except gpass.Error as e:
        print(e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
