#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the vcpkg overlay port (ports/gpass) does, without vcpkg (which cannot be fetched
# here): checks the manifest, then performs the portfile's steps by hand — configure with
# its options (features: FEATURES, default "tensorflow"), install into a package directory
# laid out as vcpkg's (CURRENT_PACKAGES_DIR), the config fixup's checks (config in
# share/gpass, no absolute path of the build or source tree left in the installed CMake and
# pkg-config files, no debug/ tree), usage and copyright in share/gpass — and finally
# consumes the result: test_package/ configured with only CMAKE_PREFIX_PATH = that
# directory, built and run.
#
#   scripts/vcpkg-layout.sh            FEATURES="tensorflow onnx" for both (features: onnx tensorflow mpi cuda)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
features="${FEATURES:-tensorflow}"
work="$root/build/vcpkg-layout-${features// /-}"   # one per feature set: runs may go side by side
pkg="$work/packages/gpass_x64-linux"
rm -rf "$work" && mkdir -p "$work"

python3 "$root/ports/check_manifest.py" "$root/ports/gpass/vcpkg.json"

opts=(-DGPASS_WITH_ONNX=OFF -DGPASS_WITH_TENSORFLOW=OFF -DGPASS_WITH_MPI=OFF -DGPASS_WITH_CUDA=OFF)
consumer_opts=()
for f in $features; do
  case "$f" in
    onnx) opts+=(-DGPASS_WITH_ONNX=ON) ;;
    tensorflow) opts+=(-DGPASS_WITH_TENSORFLOW=ON) ;;
    mpi) opts+=(-DGPASS_WITH_MPI=ON) ;;
    cuda) opts+=(-DGPASS_WITH_CUDA=ON); consumer_opts+=(-DGPASS_TEST_CUDA=ON) ;;
    *) echo "vcpkg-layout.sh: unknown feature '$f'" >&2; exit 2 ;;
  esac
done
# vcpkg_cmake_configure + vcpkg_cmake_install (VCPKG_BUILD_TYPE release)
cmake -S "$root" -B "$work/build" -DCMAKE_BUILD_TYPE=Release "${opts[@]}" -DGPASS_BUILD_TESTS=OFF \
  -DGPASS_BUILD_EXAMPLES=OFF -DGPASS_BUILD_BENCHMARKS=OFF -DGPASS_BUILD_PYTHON=OFF -DGPASS_INSTALL=ON -DGPASS_INSTALL_CMAKEDIR=share/gpass >/dev/null
cmake --install "$work/build" --prefix "$pkg" >/dev/null
# vcpkg_cmake_config_fixup(CONFIG_PATH share/gpass), vcpkg_fixup_pkgconfig, the removals
test -f "$pkg/share/gpass/gpassConfig.cmake" || { echo "FAIL: no share/gpass/gpassConfig.cmake" >&2; exit 1; }
test -f "$pkg/share/pkgconfig/gpass.pc" || { echo "FAIL: no share/pkgconfig/gpass.pc" >&2; exit 1; }
# each feature's component is installed (a feature whose dependency is missing fails here)
for f in $features; do
  t="$pkg/share/gpass/gpass$(tr '[:lower:]' '[:upper:]' <<< "${f:0:1}")${f:1}Targets.cmake"
  test -f "$t" || { echo "FAIL: feature $f: no $(basename "$t") (its dependency was not found; see the configure output)" >&2; exit 1; }
done
if grep -rl -e "$work/build" -e "$root/include" "$pkg/share" ; then
  echo "FAIL: absolute build or source paths in the installed files above" >&2
  exit 1
fi
rm -rf "$pkg/debug" "$pkg/share/doc"
# file(INSTALL usage), vcpkg_install_copyright
cp "$root/ports/gpass/usage" "$pkg/share/gpass/usage"
cp "$root/LICENSE" "$pkg/share/gpass/copyright"
echo "layout:"; (cd "$pkg" && find . -maxdepth 3 -type d | sort | sed 's/^/  /')

# a consumer of the installed tree, as vcpkg's toolchain would point it there
cmake -S "$root/test_package" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$pkg" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "${consumer_opts[@]}" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/test_package"
if [[ -x "$work/consumer/test_package_cuda" ]]; then "$work/consumer/test_package_cuda"; fi
echo "vcpkg layout: OK"
