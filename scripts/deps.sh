#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the packages gpass needs to build, test and run its demo, on Debian 12 (bookworm)
# or a derivative. Installs only what is missing; `apt-get update` runs only then. Works as
# root (no sudo needed) or as a user with sudo.
#
#   scripts/deps.sh            install what is missing
#   scripts/deps.sh --check    only report what is missing (exit 1 if anything is)
set -euo pipefail

packages=(
  cmake g++ make                        # toolchain (CMake >= 3.25)
  libboost-dev libeigen3-dev            # gpass::gpass (Boost.Graph, Boost.Hana, Eigen 3)
  doctest-dev                           # tests
  libbenchmark-dev                      # benchmarks
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata   # component onnx + its tests
  pkgconf                               # the pkg-config consumer test (install.pkg_config_consumer)
  libopenmpi-dev openmpi-bin            # component mpi, tools.mpi_data_parallel (mpirun -np 2)
  python3 python3-dev python3-numpy python3-pytest pybind11-dev   # the Python module and its tests (offline: pybind11)
)

check_only=0
if [[ "${1:-}" == "--check" ]]; then check_only=1; fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "deps.sh: not a Debian-based system (no dpkg-query); install these yourself:" >&2
  echo "  ${packages[*]}" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps.sh: all dependencies are installed"
  exit 0
fi
echo "deps.sh: missing: ${missing[*]}"
if [[ $check_only -eq 1 ]]; then exit 1; fi

if [[ "$(id -u)" -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "deps.sh: not root and no sudo: install as root: apt-get install ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "deps.sh: installed ${missing[*]}"
