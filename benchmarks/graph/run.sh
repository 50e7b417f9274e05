#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs the graph benchmarks, then prints a table: op, nodes, ns/node, and for each
# op the ratio ns/node(10^6) / ns/node(10^4) (target: <= 2.0).
#
#   benchmarks/graph/run.sh [build-dir] [extra benchmark flags...]
#
# Environment: GPASS_BENCH_LAYOUT=built measures on graphs laid out as built (see README.md);
# GPASS_BENCH_ITER_SCALE=k multiplies the iteration counts; JOBS (default 1) for the build.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:-$here/../../build/bench-graph}"
shift || true

cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target gpass_bench_graph -j "${JOBS:-1}"

json="$build/bench_graph.json"
# 3 repetitions; the table shows their median (extra flags given to run.sh override these)
"$build/gpass_bench_graph" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
  --benchmark_out="$json" --benchmark_out_format=json "$@"

python3 - "$json" <<'PY'
import json, re, sys
data = json.load(open(sys.argv[1]))
rows, medians = {}, {}
for b in data["benchmarks"]:
    if b.get("error_occurred"):
        continue
    m = re.match(r"bm_(\w+?)/(\d+)", b["name"])
    op, n = m.group(1).replace("_", "-"), int(m.group(2))
    if b.get("run_type") == "aggregate":
        if b.get("aggregate_name") == "median":
            medians[(op, n)] = b["ns/node"] * 1e9
    else:
        rows.setdefault((op, n), b["ns/node"] * 1e9)
rows.update(medians)  # the median of the repetitions when there are several
ctx = data["context"]
print()
print(f"host: {ctx.get('host_name', '?')}, {ctx.get('num_cpus', '?')} cpus, "
      f"library build: {ctx.get('library_build_type', '?')}")
print(f"{'op':<22}{'nodes':>10}{'ns/node':>10}" + ("   (median of repetitions)" if medians else ""))
ops = []
for (op, n) in rows:
    if op not in ops:
        ops.append(op)
for op in ops:
    for n in sorted(k[1] for k in rows if k[0] == op):
        print(f"{op:<22}{n:>10}{rows[(op, n)]:>10.1f}")
print()
print(f"{'op':<22}{'ratio 1e6/1e4':>14}")
for op in ops:
    a, b = rows.get((op, 1000000)), rows.get((op, 10000))
    r = f"{a / b:.2f}" if a and b else "n/a"
    print(f"{op:<22}{r:>14}{'' if r == 'n/a' or float(r) <= 2.0 else '   (above 2.0)'}")
PY
