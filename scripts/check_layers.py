#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The include layering of gpass: every folder of include/gpass is a layer, and a file may
include (#include <gpass/...>) only files of its own layer, of a lower layer, or the base
headers. The order, lowest first (README "Layout"):

    core < graph < ops < analysis < io < exec < pass < passes < session

base headers: gpass/config.hpp and gpass/version.hpp (includable from anywhere); the other
top-level headers (all.hpp, the umbrellas, fwd.hpp, src.hpp) sit above every layer and may
not be included from a folder. Files checked: *.hpp and the units (*.cpp) under
include/gpass.

    scripts/check_layers.py [include-dir]     exit 0 when the layering holds; prints the
                                              folder graph, its cycles and every violation
"""
import os
import re
import sys

LAYERS = ["core", "graph", "ops", "analysis", "io", "exec", "pass", "passes", "session"]
BASE = {"config.hpp", "version.hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s*<gpass/([^>]+)>', re.M)


def layer_of(rel):
    """'exec/plan.hpp' -> 'exec'; top-level files -> None."""
    return rel.split("/", 1)[0] if "/" in rel else None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "include")
    root = os.path.join(root, "gpass")
    rank = {name: i for i, name in enumerate(LAYERS)}
    edges = {}          # folder -> set of folders it includes
    violations = []
    files = 0
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith((".hpp", ".cpp")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            src = layer_of(rel)
            files += 1
            with open(path, encoding="utf-8") as f:
                text = f.read()
            if src is None:
                continue  # top-level headers may include anything
            if src not in rank:
                violations.append(f"gpass/{rel}: folder '{src}' is not a known layer (add it to LAYERS and the README)")
                continue
            for m in INCLUDE.finditer(text):
                target = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                dst = layer_of(target)
                if dst is None:
                    if target not in BASE:
                        violations.append(f"gpass/{rel}:{line}: includes the top-level header <gpass/{target}>")
                    continue
                if dst != src:
                    edges.setdefault(src, set()).add(dst)
                if dst not in rank:
                    violations.append(f"gpass/{rel}:{line}: includes <gpass/{target}> of unknown folder '{dst}'")
                elif rank[dst] > rank[src]:
                    violations.append(f"gpass/{rel}:{line}: layer '{src}' includes <gpass/{target}> of the higher layer '{dst}'")

    # cycles of the folder graph (Tarjan's strongly connected components, iterative)
    index, low, on, stack, sccs, counter = {}, {}, set(), [], [], [0]
    nodes = sorted(set(edges) | {d for ds in edges.values() for d in ds})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]; counter[0] += 1
        stack.append(start); on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]; counter[0] += 1
                    stack.append(nxt); on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop(); on.discard(w); comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    sccs.append(sorted(comp))

    print(f"gpass layers (lowest first): {' < '.join(LAYERS)}; {files} files checked")
    for src in sorted(edges, key=lambda s: rank.get(s, 99)):
        print(f"  {src:9} -> {', '.join(sorted(edges[src], key=lambda d: rank.get(d, 99)))}")
    print(f"folder cycles: {len(sccs)}" + "".join(f"\n  cycle: {' <-> '.join(c)}" for c in sccs))
    print(f"violations: {len(violations)}")
    for v in violations:
        print(f"  {v}")
    return 1 if violations or sccs else 0


if __name__ == "__main__":
    sys.exit(main())
