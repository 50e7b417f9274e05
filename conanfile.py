# SPDX-License-Identifier: Apache-2.0
"""Conan 2 recipe of gpass: a header-only library (package_type "header-library") whose
package is its own CMake install (include/, share/cmake/gpass with gpassConfig.cmake and the
units script, share/pkgconfig/gpass.pc). Consumers find it with find_package(gpass CONFIG
[COMPONENTS onnx tensorflow mpi cuda]); the components below mirror the CMake ones for the
other generators (PkgConfigDeps, ...).

The CUDA toolkit (NVRTC, cuBLASLt, the runtime) and cuDNN are system dependencies of the
`cuda` component (`-o "gpass/*:with_cuda=True"`): no Conan package provides them, so the
recipe uses the toolkit it finds (CUDA_PATH or CUDA_HOME, else /usr/local/cuda), as the CMake
package does through FindCUDAToolkit.

    conan create . -pr:a conan/profiles/debian12      # offline, Debian's Boost/Eigen/ONNX
    scripts/conan-create.sh                          # the same from a fresh clone
    scripts/conan-create.sh -o "gpass/*:with_cuda=True"
"""
import os
import re

from conan import ConanFile
from conan.errors import ConanException
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load


class GpassConan(ConanFile):
    name = "gpass"
    package_type = "header-library"
    license = "Apache-2.0"
    description = "Header-only C++20 library for deep-learning computation graphs"
    topics = ("deep-learning", "graph", "compiler", "onnx", "tensorflow", "header-only")
    settings = "os", "arch", "compiler", "build_type"
    options = {"with_onnx": [True, False], "with_tensorflow": [True, False], "with_mpi": [True, False],
               "with_cuda": [True, False]}
    default_options = {"with_onnx": True, "with_tensorflow": True, "with_mpi": False, "with_cuda": False}
    # option -> (CMake targets file the component installs, what it needs when it is missing)
    _components = {
        "with_onnx": ("gpassOnnxTargets.cmake", "ONNX and protobuf"),
        "with_tensorflow": ("gpassTensorflowTargets.cmake", "nothing beyond gpass"),
        "with_mpi": ("gpassMpiTargets.cmake", "an MPI implementation (FindMPI, MPI::MPI_CXX)"),
        "with_cuda": ("gpassCudaTargets.cmake",
                      "the CUDA toolkit >= 12.0 with NVRTC and cuBLASLt, and cuDNN (system packages; set CUDA_PATH)"),
    }
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
        tc.cache_variables["GPASS_WITH_CUDA"] = bool(self.options.with_cuda)
        if self.options.with_cuda:
            root = self._cuda_root()
            if root:
                tc.cache_variables["CUDAToolkit_ROOT"] = root
        tc.cache_variables["GPASS_BUILD_PYTHON"] = False
        tc.generate()

    def package(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.install()
        # a component asked for but not built (its dependency was not found) is an error here,
        # not a package that lacks it
        cmakedir = os.path.join(self.package_folder, "share", "cmake", "gpass")
        for option, (targets, needs) in self._components.items():
            if self.options.get_safe(option) and not os.path.isfile(os.path.join(cmakedir, targets)):
                raise ConanException(f"gpass: {option}=True but the component was not built: it needs {needs}")
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))

    @staticmethod
    def _cuda_root():
        for var in ("CUDA_PATH", "CUDA_HOME"):
            if os.environ.get(var) and os.path.isdir(os.environ[var]):
                return os.environ[var]
        return "/usr/local/cuda" if os.path.isdir("/usr/local/cuda") else None

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
        if self.options.with_cuda:
            # system dependency: the toolkit's headers and libraries where it is installed
            cuda = self.cpp_info.components["cuda"]
            cuda.set_property("cmake_target_name", "gpass::cuda")
            cuda.bindirs = []
            cuda.requires = ["core"]
            root = self._cuda_root()
            cuda.includedirs = [os.path.join(root, "include")] if root else []
            cuda.libdirs = [d for d in (os.path.join(root, "lib64"), os.path.join(root, "lib")) if os.path.isdir(d)] if root else []
            # cuBLASLt and NVRTC are opened at run time (gpass/exec/cuda/dynload.hpp), first at these paths
            cuda.system_libs = ["cudart_static", "cudnn", "dl", "rt"]
            for macro, name in (("GPASS_CUDA_CUBLASLT_PATH", "libcublasLt.so"), ("GPASS_CUDA_NVRTC_PATH", "libnvrtc.so")):
                found = [os.path.join(d, name) for d in cuda.libdirs if os.path.exists(os.path.join(d, name))]
                if found:
                    cuda.defines.append(f'{macro}="{found[0]}"')
