#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and tests the Conan 2 package of gpass offline, from a fresh clone: the recipe
# (conanfile.py) against Debian's Boost, Eigen, protobuf and ONNX as platform requirements
# (conan/profiles/debian12), then test_package/ (a consumer found through the package's
# gpassConfig.cmake) runs and prints its result.
#
#   scripts/conan-create.sh            (CONAN: a conan 2 executable; default: `conan` on
#                                       PATH, else a venv in build/conan-venv made with
#                                       `pip install conan`, which needs PyPI once)
# The Conan home is build/conan-home (nothing outside the tree is touched).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/deps.sh"
conan="${CONAN:-}"
if [[ -z "$conan" ]]; then
  if command -v conan >/dev/null 2>&1 && conan --version | grep -q "version 2"; then
    conan=conan
  else
    if [[ ! -x "$root/build/conan-venv/bin/conan" ]]; then
      command -v python3 >/dev/null || { echo "conan-create.sh: needs python3" >&2; exit 1; }
      python3 -m venv "$root/build/conan-venv" || { apt-get install -y python3-venv && python3 -m venv "$root/build/conan-venv"; }
      "$root/build/conan-venv/bin/pip" install -q "conan>=2,<3"
    fi
    conan="$root/build/conan-venv/bin/conan"
  fi
fi
export CONAN_HOME="$root/build/conan-home"
rm -rf "$root/test_package/build"
"$conan" create "$root" -pr:a "$root/conan/profiles/debian12" "$@"
