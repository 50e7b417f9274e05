// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file signal.hpp
/// CUDA kernels of ONNX's window functions (opset 17: HannWindow, HammingWindow and
/// BlackmanWindow) and MelWeightMatrix. A window's size is read on the host and checked as on
/// the CPU; a generated kernel writes each element from the CPU's formula in double (0.5 - 0.5
/// cos(2 pi i / N), ...), converted to the output_datatype through its compute type as the
/// CPU converts it. The device's double cos is not glibc's: elements agree to an ulp of
/// double, which the conversion to the output type nearly always hides. MelWeightMatrix's
/// filter edges are computed on the host by the CPU's rule (`signal_rules::mel_edges`), then a
/// thread per weight: the CPU's values, bit for bit.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/shape_rules.hpp>
#include <gpass/exec/signal_rules.hpp>

namespace gpass::exec {

namespace cuda_signal {

using cuda_detail::context;
using cuda_detail::fn;
using i64 = std::int64_t;

/// The window kinds.
enum class window_kind { hann, hamming, blackman };

/// `window(y, size, N)`: y[i] = the window of kind `k` at i over a period of N (1 when N <= 0),
/// stored as `t`.
inline std::string window_source(dtype t, window_kind k) {
  const char* value = k == window_kind::hann      ? "0.5 - 0.5 * cos(a)"
                      : k == window_kind::hamming ? "25.0 / 46.0 - (21.0 / 46.0) * cos(a)"
                                                  : "0.42 - 0.5 * cos(a) + 0.08 * cos(2.0 * a)";
  return cuda_nn::head(t) + R"(extern "C" __global__ void window(T* __restrict__ y, long long size, double N) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < size; i += (long long)gridDim.x * blockDim.x) {
    double v = 1.0;
    if (N > 0) {
      const double a = 2.0 * 3.141592653589793 * (double)i / N;
      v = )" + value + R"(;
    }
    g_store(y, i, (W)v);
  }
}
)";
}

/// `mel`: y [nbins, mels] of MelWeightMatrix from the filter edges `e` (see
/// `signal_rules::mel_edges`): filter i rises over bins [e[i], e[i + 1]] and falls over
/// [e[i + 1], e[i + 2]), the falling side written last as on the CPU; 0 elsewhere.
inline std::string mel_source(dtype t) {
  return cuda_nn::head(t) + R"(extern "C" __global__ void mel(T* __restrict__ y, const long long* __restrict__ e, long long mels, long long nbins) {
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < mels * nbins; k += (long long)gridDim.x * blockDim.x) {
    const long long j = k / mels, i = k - j * mels, l = e[i], c = e[i + 1], h = e[i + 2];
    double v = 0;
    if (h > c && j >= c && j < h) v = (double)(h - j) / (double)(h - c);
    else if (j >= l && j <= c) v = c == l ? 1.0 : (double)(j - l) / (double)(c - l);
    g_store(y, k, (W)v);
  }
}
)";
}

/// The single value of a scalar (or one-element) numeric input, as a double, read on the host.
inline double scalar_value(context& ctx, std::size_t i, const char* what) {
  if (ctx.input(i).size() != 1) ctx.fail(std::string(what) + " must hold one value, got " + std::to_string(ctx.input(i).size()));
  return cuda_detail::host_values_as<double>(ctx, i, 0.0)[0];
}

/// The single integer of a scalar (or one-element) int32 / int64 input, read on the host.
inline i64 scalar_int(context& ctx, std::size_t i, const char* what) {
  const std::vector<i64> v = cuda_detail::host_ints(ctx, i);
  if (v.size() != 1) ctx.fail(std::string(what) + " must hold one value, got " + std::to_string(v.size()));
  return v[0];
}

/// MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
/// upper_edge_hertz): output_datatype (default f32); the checks and edges the CPU's.
inline fn make_mel(const kernel_node& n) {
  const dtype out = shape_rules::onnx_dtype_attr(n, "output_datatype", dtype::f32);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [out, lib](context& ctx) {
    const i64 mels = scalar_int(ctx, 0, "num_mel_bins"), dft = scalar_int(ctx, 1, "dft_length"), rate = scalar_int(ctx, 2, "sample_rate");
    const double lo = scalar_value(ctx, 3, "lower_edge_hertz"), hi = scalar_value(ctx, 4, "upper_edge_hertz");
    signal_rules::check_mel_args(mels, dft, rate, lo, hi, ctx.node());
    const i64 nbins = dft / 2 + 1;
    cuda_tensor& y = ctx.allocate_output(0, out, {nbins, mels});
    const std::vector<i64> e = signal_rules::mel_edges(mels, dft, rate, lo, hi, ctx.node());
    auto& pol = ctx.policy();
    const cuda_tensor de = cuda_detail::upload_vector(ctx, dtype::int64, e);
    const auto& k = lib->get(pol, std::string(to_string(out)), {"mel"}, [&] { return mel_source(out); });
    void* yp = y.data();
    const void* ep = de.data();
    long long m = mels, b = nbins;
    void* args[] = {&yp, &ep, &m, &b};
    pol.launch(k.kernels[0], pol.blocks_for(y.size()), 256, args, ctx.stream());
  };
}

/// The output types a window may have (every number type, as the CPU).
inline std::vector<dtype> window_output_types() {
  return {dtype::f16,   dtype::bf16,  dtype::f32,    dtype::f64,    dtype::int8,   dtype::int16,
          dtype::int32, dtype::int64, dtype::uint8, dtype::uint16, dtype::uint32, dtype::uint64};
}

/// HannWindow / HammingWindow / BlackmanWindow(size): output_datatype (default f32), periodic.
inline fn make_window(const kernel_node& n, window_kind k) {
  const dtype out = shape_rules::onnx_dtype_attr(n, "output_datatype", dtype::f32);
  const bool periodic = n.attr<i64>("periodic", 1) != 0;
  bool numeric = false;
  for (dtype t : window_output_types()) numeric = numeric || t == out;
  if (!numeric) n.fail("output_datatype must be numeric");
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [=](context& ctx) {
    const i64 size = scalar_int(ctx, 0, "size");
    if (size < 0) ctx.fail("window size must be non-negative, got " + std::to_string(size));
    cuda_tensor& y = ctx.allocate_output(0, out, {size});
    if (size == 0) return;
    auto& pol = ctx.policy();
    const auto& kn = lib->get(pol, std::string(to_string(out)), {"window"}, [&] { return window_source(out, k); });
    void* yp = y.data();
    long long count = size;
    double N = static_cast<double>(periodic ? size : size - 1);
    void* args[] = {&yp, &count, &N};
    pol.launch(kn.kernels[0], pol.blocks_for(size), 256, args, ctx.stream());
  };
}

}  // namespace cuda_signal

/// Every source signal.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> signal_generated_sources() {
  using cuda_signal::window_kind;
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::int32})
    for (window_kind k : {window_kind::hann, window_kind::hamming, window_kind::blackman})
      r.emplace_back("window_" + std::string(to_string(t)) + "_" + std::to_string(static_cast<int>(k)), cuda_signal::window_source(t, k));
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::int32}) r.emplace_back("mel_" + std::string(to_string(t)), cuda_signal::mel_source(t));
  return r;
}

/// Registers signal.hpp's kernels.
inline void register_cuda_signal(kernel_registry<cuda>& r) {
  using cuda_signal::window_kind;
  const std::pair<const char*, window_kind> windows[] = {
      {"HannWindow", window_kind::hann}, {"HammingWindow", window_kind::hamming}, {"BlackmanWindow", window_kind::blackman}};
  for (const auto& [op, k] : windows)
    r.add({.op = op, .since_version = 17, .dtypes = {dtype::int32, dtype::int64},
           .make = [k](const kernel_node& n) { return cuda_signal::make_window(n, k); }});
  r.add({.op = "MelWeightMatrix", .since_version = 17, .dtypes = {dtype::int32, dtype::int64}, .make = cuda_signal::make_mel});
}

}  // namespace gpass::exec
