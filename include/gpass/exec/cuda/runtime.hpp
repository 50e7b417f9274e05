// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file runtime.hpp
/// The CUDA runtime as the CUDA policy uses it: error checks that throw `gpass::error`, the
/// number of devices (0, not an error, on a machine with no GPU or no driver), and a device's
/// compute capability.
///
/// The policy links the CUDA runtime statically (`CUDA::cudart_static`), which finds the
/// driver library when it is first used: a program built with the `cuda` component starts on
/// a machine without a GPU and learns there is none from `cuda_device_count()`.

#include <cstddef>
#include <string>
#include <string_view>

#include <cuda_runtime_api.h>

#include <gpass/core/error.hpp>

namespace gpass::exec::cuda_detail {

/// Throws `gpass::error` "cuda: <what>: <the runtime's message>" unless `e` is success.
inline void check(cudaError_t e, std::string_view what) {
  if (e == cudaSuccess) return;
  (void)cudaGetLastError();  // clear the sticky-free error state
  throw error("cuda: " + std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

}  // namespace gpass::exec::cuda_detail

namespace gpass::exec {

/// The number of CUDA devices this process can use; 0 when there is no GPU, no driver, or a
/// driver older than the runtime (never throws).
inline int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

/// Compute capability of `device` as major * 10 + minor (90 for an H100); throws when the
/// device does not exist.
inline int cuda_compute_capability(int device) {
  int major = 0, minor = 0;
  cuda_detail::check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "compute capability");
  cuda_detail::check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "compute capability");
  return major * 10 + minor;
}

}  // namespace gpass::exec
