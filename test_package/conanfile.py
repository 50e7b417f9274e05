# SPDX-License-Identifier: Apache-2.0
import os

from conan import ConanFile
from conan.tools.build import can_run
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout


class GpassTestConan(ConanFile):
    settings = "os", "arch", "compiler", "build_type"

    def requirements(self):
        self.requires(self.tested_reference_str)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        CMakeDeps(self).generate()
        tc = CMakeToolchain(self)
        # the cuda component's test too when the package was made with it
        tc.cache_variables["GPASS_TEST_CUDA"] = bool(self.dependencies[self.tested_reference_str].options.get_safe("with_cuda"))
        tc.generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def test(self):
        if can_run(self):
            self.run(os.path.join(self.cpp.build.bindir, "test_package"), env="conanrun")
            if self.dependencies[self.tested_reference_str].options.get_safe("with_cuda"):
                self.run(os.path.join(self.cpp.build.bindir, "test_package_cuda"), env="conanrun")
