#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Per-run overhead of gpass::session::run vs TensorFlow's Session.run on the same 10-node
# GraphDef, same machine, one thread each, measured in this run.
#
#   benchmarks/session/run.sh [build-dir]        (RUNS, default 20000; PYTHON, default python3)
#
# Needs python3 with tensorflow-cpu. Builds gpass_bench_session with -O3 -march=x86-64-v3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
build="${1:-$root/build/bench-session}"
py="${PYTHON:-python3}"
runs="${RUNS:-20000}"

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGPASS_BUILD_TESTS=OFF -DGPASS_BUILD_EXAMPLES=OFF \
  -DGPASS_BUILD_BENCHMARKS=ON -DGPASS_WITH_ONNX=OFF >/dev/null
cmake --build "$build" --target gpass_bench_session -j "${JOBS:-1}"
bench="$build/benchmarks/session/gpass_bench_session"

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cpus, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
graph="$build/session10.pb"
tf_json="$("$py" "$here/tf_session.py" --out "$graph" --runs "$runs" 2>/dev/null | tail -1)"
gp1="$("$bench" "$graph" "$runs" 1)"
gp2="$("$bench" "$graph" "$runs" 2)"
echo "$tf_json"
echo "$gp1"
echo "$gp2"
"$py" - "$tf_json" "$gp1" "$gp2" <<'PY'
import json, sys
tf, g1, g2 = (json.loads(a) for a in sys.argv[1:4])
assert all(abs(a - b) <= 1e-6 for a, b in zip(tf["y"], g1["y"])), (tf["y"], g1["y"])
print()
print("| | per-run median (us) | min (us) | / TensorFlow |")
print("|---|---:|---:|---:|")
print(f"| TensorFlow {tf['version']} Session.run (Python) | {tf['us_median']:.2f} | {tf['us_min']:.2f} | 1 |")
for g in (g1, g2):
    print(f"| gpass session.run, {g['devices']} CPU device(s) | {g['us_median']:.2f} | {g['us_min']:.2f} | {g['us_median'] / tf['us_median']:.3f} |")
print(f"| gpass plan.run (no session) | {g1['plan_us_median']:.2f} | | {g1['plan_us_median'] / tf['us_median']:.3f} |")
PY
