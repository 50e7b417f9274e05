# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmark scripts that need Python with TensorFlow, tf2onnx and ONNX Runtime
# (benchmarks/optimizer/run.sh, benchmarks/executor/real_models.sh): sets `py` to the venv's
# interpreter, creating the venv and installing requirements.txt into it when a package is
# missing, and defines `bench_header REPO` (prints the machine, the date and the commit).
#
#   OPTVENV  the venv (default /tmp/optvenv)
#   PYTHON   interpreter that creates it (default python3)
_gpass_req="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/requirements.txt"
venv="${OPTVENV:-/tmp/optvenv}"
if [[ ! -x "$venv/bin/python" ]]; then
  echo "creating the venv $venv"
  "${PYTHON:-python3}" -m venv "$venv"
fi
py="$venv/bin/python"
if ! "$py" - <<'PYEOF'
import importlib.util, sys
mods = ["tensorflow", "tf_keras", "tf2onnx", "onnx", "onnxruntime", "onnxsim", "onnxoptimizer", "numpy"]
missing = [m for m in mods if importlib.util.find_spec(m) is None]
if missing:
    print("missing Python packages: " + " ".join(missing))
sys.exit(1 if missing else 0)
PYEOF
then
  "$py" -m pip install --disable-pip-version-check -q -r "$_gpass_req"
fi

bench_header() {
  echo "machine: $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -n1), nproc $(nproc)"
  echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  local rev
  if rev="$(git -C "$1" rev-parse --short HEAD 2>/dev/null)"; then
    [[ -n "$(git -C "$1" status --porcelain --untracked-files=no 2>/dev/null)" ]] && rev="$rev (modified)"
    echo "gpass:   $rev"
  fi
}
