# SPDX-License-Identifier: Apache-2.0
"""Conan 2 recipe of gpass: a header-only library (package_type "header-library") whose
package is its own CMake install (include/, share/cmake/gpass with gpassConfig.cmake and the
units script, share/pkgconfig/gpass.pc). Consumers find it with find_package(gpass CONFIG
[COMPONENTS onnx tensorflow mpi]); the components below mirror the CMake ones for the other
generators (PkgConfigDeps, ...).

    conan create . -pr:a conan/profiles/debian12      # offline, Debian's Boost/Eigen/ONNX
    scripts/conan-create.sh                          # the same from a fresh clone
"""
import os
import re

from conan import ConanFile
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load


class GpassConan(ConanFile):
    name = "gpass"
    package_type = "header-library"
    license = "Apache-2.0"
    description = "Header-only C++20 library for deep-learning computation graphs"
    topics = ("deep-learning", "graph", "compiler", "onnx", "tensorflow", "header-only")
    settings = "os", "arch", "compiler", "build_type"
    options = {"with_onnx": [True, False], "with_tensorflow": [True, False], "with_mpi": [True, False]}
    default_options = {"with_onnx": True, "with_tensorflow": True, "with_mpi": False}
    exports_sources = "CMakeLists.txt", "LICENSE", "cmake/*", "include/*"
    no_copy_source = True

    def set_version(self):
        text = load(self, os.path.join(self.recipe_folder, "include", "gpass", "version.hpp"))
        parts = [re.search(rf"#define GPASS_VERSION_{p} (\d+)", text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
        self.version = ".".join(parts)

    def requirements(self):
        self.requires("boost/[>=1.74 <2]")
        self.requires("eigen/[>=3.3 <4]")
        if self.options.with_onnx:
            self.requires("onnx/[>=1.12 <2]")
            self.requires("protobuf/[>=3.21]")
        if self.options.with_mpi:
            self.requires("openmpi/[>=4.1 <6]")

    def layout(self):
        cmake_layout(self)

    def package_id(self):
        self.info.clear()

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["GPASS_BUILD_TESTS"] = False
        tc.cache_variables["GPASS_BUILD_EXAMPLES"] = False
        tc.cache_variables["GPASS_BUILD_BENCHMARKS"] = False
        tc.cache_variables["GPASS_INSTALL"] = True
        tc.cache_variables["GPASS_WITH_ONNX"] = bool(self.options.with_onnx)
        tc.cache_variables["GPASS_WITH_TENSORFLOW"] = bool(self.options.with_tensorflow)
        tc.cache_variables["GPASS_WITH_MPI"] = bool(self.options.with_mpi)
        tc.cache_variables["GPASS_BUILD_PYTHON"] = False
        tc.generate()

    def package(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.install()
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))

    def package_info(self):
        # find_package(gpass) uses the package's own gpassConfig.cmake (components, units)
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.set_property("pkg_config_name", "gpass")
        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "gpass::gpass")
        core.set_property("pkg_config_name", "gpass")
        core.includedirs = ["include"]
        core.builddirs = [os.path.join("share", "cmake", "gpass")]
        core.bindirs = []
        core.libdirs = []
        core.requires = ["boost::boost", "eigen::eigen"]
        if self.settings.os in ("Linux", "FreeBSD"):
            core.system_libs = ["pthread"]
        if self.options.with_onnx:
            onnx = self.cpp_info.components["onnx"]
            onnx.set_property("cmake_target_name", "gpass::onnx")
            onnx.bindirs = []
            onnx.libdirs = []
            onnx.requires = ["core", "onnx::onnx", "protobuf::protobuf"]
        if self.options.with_tensorflow:
            tf = self.cpp_info.components["tensorflow"]
            tf.set_property("cmake_target_name", "gpass::tensorflow")
            tf.bindirs = []
            tf.libdirs = []
            tf.requires = ["core"]
        if self.options.with_mpi:
            mpi = self.cpp_info.components["mpi"]
            mpi.set_property("cmake_target_name", "gpass::mpi")
            mpi.bindirs = []
            mpi.libdirs = []
            mpi.requires = ["core", "openmpi::openmpi"]
