// SPDX-License-Identifier: Apache-2.0
// The test package of the cuda component: a generated element-wise kernel (Add of two f32
// inputs) compiled by NVRTC to PTX for sm_80. No GPU is needed: NVRTC runs on the host.
#include <iostream>
#include <string>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/nvrtc.hpp>
#include <gpass/version.hpp>

int main() {
  const gpass::exec::cuda_codegen::elementwise_spec add{{gpass::dtype::f32, gpass::dtype::f32}, gpass::dtype::f32, "r = x0 + x1;"};
  const std::string ptx = gpass::exec::nvrtc_compile(gpass::exec::cuda_codegen::elementwise_source(add), "add.cu", 80, gpass::exec::nvrtc_target::ptx);
  const bool ok = ptx.find(".entry ew_flat") != std::string::npos && ptx.find(".entry ew_strided") != std::string::npos;
  std::cout << "gpass " << gpass::version_string << " cuda component (installed package): NVRTC " << gpass::exec::nvrtc_version()
            << ", Add kernel to PTX for sm_80: " << ptx.size() << " bytes, entries " << (ok ? "ew_flat ew_strided" : "MISSING") << '\n';
  return ok ? 0 : 1;
}
