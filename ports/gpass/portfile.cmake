# SPDX-License-Identifier: Apache-2.0
# vcpkg overlay port of gpass (header-only): `vcpkg install gpass --overlay-ports=<gpass>/ports`.
# The source is the gpass tree this port lives in (a registry port would use
# vcpkg_from_github with a REF and SHA512 instead).
set(VCPKG_BUILD_TYPE release)  # header-only: one configuration
get_filename_component(SOURCE_PATH "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)

vcpkg_check_features(OUT_FEATURE_OPTIONS FEATURE_OPTIONS
  FEATURES
    onnx GPASS_WITH_ONNX
    tensorflow GPASS_WITH_TENSORFLOW
    mpi GPASS_WITH_MPI
    cuda GPASS_WITH_CUDA
)

vcpkg_cmake_configure(
  SOURCE_PATH "${SOURCE_PATH}"
  OPTIONS
    ${FEATURE_OPTIONS}
    -DGPASS_BUILD_TESTS=OFF
    -DGPASS_BUILD_EXAMPLES=OFF
    -DGPASS_BUILD_BENCHMARKS=OFF
    -DGPASS_BUILD_PYTHON=OFF
    -DGPASS_INSTALL=ON
    -DGPASS_INSTALL_CMAKEDIR=share/gpass
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(PACKAGE_NAME gpass CONFIG_PATH share/gpass)
vcpkg_fixup_pkgconfig()

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug" "${CURRENT_PACKAGES_DIR}/share/doc")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
