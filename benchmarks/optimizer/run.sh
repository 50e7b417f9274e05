#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Optimizer benchmark: gpass-opt against ONNX Runtime, onnxsim and onnxoptimizer.
#
#   benchmarks/optimizer/run.sh [BUILD_DIR] [compare.py options...]
#
# BUILD_DIR (default build/bench) receives models/ (made by make_models.py; models already
# there are kept), models/optimized/ (every optimizer's output), optimizer-results.json and
# optimizer-results.txt (the printed tables).
#
# Environment:
#   GPASS_OPT  gpass-opt to measure (default BUILD_DIR/../ci/examples/gpass-opt/gpass-opt)
#   OPTVENV    Python venv to use or create (default /tmp/optvenv); packages from
#              requirements.txt are installed into it when one of them is missing
#   PYTHON     interpreter that creates the venv (default python3)
#
# Options after BUILD_DIR go to compare.py, e.g.
#   run.sh build/bench --gpass-latency-cmd '{gpass_opt} -O3 {model} --run --repeat=50 --threads={threads}'
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

build="$repo/build/bench"
if [[ $# -gt 0 && "$1" != -* ]]; then
  build="$1"
  shift
fi
mkdir -p "$build"
build="$(cd "$build" && pwd)"
gpass_opt="${GPASS_OPT:-$build/../ci/examples/gpass-opt/gpass-opt}"
venv="${OPTVENV:-/tmp/optvenv}"

echo "machine: $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), nproc $(nproc)"
echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
if rev="$(git -C "$repo" rev-parse --short HEAD 2>/dev/null)"; then
  [[ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]] && rev="$rev (modified)"
  echo "gpass:   $rev"
fi
echo "build:   $build"
echo "gpass-opt: $gpass_opt"
[[ -x "$gpass_opt" ]] || echo "warning: $gpass_opt is not an executable; its columns will be failures"

if [[ ! -x "$venv/bin/python" ]]; then
  echo "creating the venv $venv"
  "${PYTHON:-python3}" -m venv "$venv"
fi
py="$venv/bin/python"
if ! "$py" - <<'EOF'
import importlib.util, sys
mods = ["tensorflow", "tf_keras", "tf2onnx", "onnx", "onnxruntime", "onnxsim", "onnxoptimizer", "numpy"]
missing = [m for m in mods if importlib.util.find_spec(m) is None]
if missing:
    print("missing Python packages: " + " ".join(missing))
sys.exit(1 if missing else 0)
EOF
then
  "$py" -m pip install --disable-pip-version-check -q -r "$here/requirements.txt"
fi

echo
echo "== models ($build/models)"
start=$SECONDS
"$py" "$here/make_models.py" "$build/models" 2> >(grep -v -E '^(I|W|E)0000 |^WARNING: All log messages|^  warnings.warn' >&2)
echo "models ready in $((SECONDS - start)) s"

echo
echo "== compare"
start=$SECONDS
"$py" "$here/compare.py" "$build/models" --gpass-opt "$gpass_opt" --out "$build/optimizer-results.json" "$@" |
  tee "$build/optimizer-results.txt"
echo "compare took $((SECONDS - start)) s"
