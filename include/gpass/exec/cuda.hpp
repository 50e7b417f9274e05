// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file cuda.hpp
/// The CUDA backend: the `gpass::exec::cuda` policy with its kernels (generated element-wise,
/// reduction and data-movement kernels compiled by NVRTC; cuBLASLt products; cuDNN
/// convolutions and pooling), and `cuda_devices` for sessions. Part of the optional `cuda`
/// component (`find_package(gpass COMPONENTS cuda)`, target `gpass::cuda`); never included
/// by `<gpass/all.hpp>`.
/// \code
///   #include <gpass/exec/cuda.hpp>
///   gpass::session s(g, {.devices = gpass::cuda_devices()});   // GPU:0 first, CPU:0 for the rest
///   auto out = s.run({{"x", x}}, {"y"});
/// \endcode

#include <gpass/exec/cuda/kernels/array.hpp>
#include <gpass/exec/cuda/kernels/control.hpp>
#include <gpass/exec/cuda/kernels/elementwise.hpp>
#include <gpass/exec/cuda/kernels/linalg.hpp>
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/kernels/reduce.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>

namespace gpass::exec {

/// Adds every CUDA kernel family to `r`.
inline void register_cuda_kernels(kernel_registry<cuda>& r) {
  register_cuda_elementwise(r);
  register_cuda_control(r);
  register_cuda_linalg(r);
  register_cuda_nn(r);
  register_cuda_array(r);
  register_cuda_reduce(r);
}

inline const kernel_registry<cuda>& cuda::kernels() const {
  static const kernel_registry<cuda> r = [] {
    kernel_registry<cuda> k;
    register_cuda_kernels(k);
    return k;
  }();
  return r;
}

}  // namespace gpass::exec
