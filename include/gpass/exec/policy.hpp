// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file policy.hpp
/// `gpass::exec::executor_policy`: what a backend (Eigen on the CPU, CUDA) provides to
/// `gpass::exec::plan`.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <gpass/core/tensor.hpp>

namespace gpass::exec {

template <class P>
class kernel_registry;

/// A backend. A policy object owns the backend's resources (a thread pool, a CUDA context and
/// its handles); plans refer to it and must not outlive it. Every member is safe to call from
/// several threads at once.
///
/// - `P::name`: the device kind (`"cpu"`, `"cuda"`), used in messages and device strings;
/// - `P::tensor_type`: the tensor that kernels read and write (a host `gpass::tensor` on the
///   CPU; a device tensor elsewhere); `P::stream_type`: an ordered queue of device work
///   (a no-op type on the CPU, `cudaStream_t` on CUDA);
/// - device memory: `allocate(bytes)` (aligned to at least 64 bytes) and
///   `deallocate(ptr, bytes)`;
/// - transfers: `copy_to_device(dst, host_src, bytes, stream)`,
///   `copy_to_host(host_dst, src, bytes, stream)`, `copy_on_device(dst, src, bytes, stream)`:
///   asynchronous with respect to the host where the device allows it, ordered on the
///   stream; `synchronize(stream)` waits for all work queued on it;
/// - `default_stream()`, and `make_stream()` for each concurrent run;
/// - `upload(host tensor, stream)` / `download(tensor, stream)`: a tensor to and from the
///   host (identity on the CPU); `allocate_tensor(dtype, sizes, stream)` (contents
///   unspecified) and `fill_zero(tensor, stream)`;
/// - `kernels()`: the `kernel_registry<P>` that plans bind nodes to, by (domain, op, dtype).
template <class P>
concept executor_policy = requires(P& p, const P& cp, std::size_t n, void* dst, const void* src,
                                   typename P::stream_type& s, const gpass::tensor& host,
                                   const typename P::tensor_type& dev) {
  typename P::tensor_type;
  typename P::stream_type;
  { P::name } -> std::convertible_to<std::string_view>;
  { p.allocate(n) } -> std::same_as<void*>;
  { p.deallocate(dst, n) };
  { p.copy_to_device(dst, src, n, s) };
  { p.copy_to_host(dst, src, n, s) };
  { p.copy_on_device(dst, src, n, s) };
  { p.synchronize(s) };
  { p.make_stream() } -> std::same_as<typename P::stream_type>;
  { p.upload(host, s) } -> std::same_as<typename P::tensor_type>;
  { p.download(dev, s) } -> std::same_as<gpass::tensor>;
  { p.allocate_tensor(dtype::f32, std::vector<std::int64_t>{}, s) } -> std::same_as<typename P::tensor_type>;
  { p.fill_zero(const_cast<typename P::tensor_type&>(dev), s) };
  { cp.kernels() } -> std::same_as<const kernel_registry<P>&>;
};

}  // namespace gpass::exec
