// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file det.hpp
/// CUDA kernels of the determinants: ONNX Det (f32, f64, f16, bf16) and TensorFlow's
/// MatrixDeterminant (f32, f64), each matrix [..., n, n] factored by LU with partial pivoting
/// in a block of its own (the pivot search by one thread, the row swap, the column scaling and
/// the trailing update by all; each element is updated by one thread per step, so the order
/// of operations is a serial factorization's). The two follow their CPU kernels:
/// - Det: in double whatever the type; the product of the pivots, the sign flipped per row
///   swap; 0 at the first zero pivot (the CPU's `determinant`, step for step).
/// - MatrixDeterminant: in the input's type, as Eigen's PartialPivLU that TensorFlow uses (a
///   zero pivot column left unscaled, the factorization carried on); the result
///   sign * exp(sum of log |pivot|), the sign the permutation's times each pivot's (NaN
///   carried), as TensorFlow computes it. The CPU's sum of logs is Eigen's (vectorized)
///   reduction, this one a serial sum: results agree to rounding, not bit for bit.

#include <algorithm>
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

namespace gpass::exec {

namespace cuda_det {

using cuda_detail::context;
using cuda_detail::fn;
using i64 = std::int64_t;

/// `det_onnx` and `det_tf` over x [batch, n, n] (T) into y [batch]; `work` holds a matrix of
/// the factorization type per block (double for Det, W for MatrixDeterminant).
inline std::string det_source(dtype t) {
  return cuda_nn::head(t) + R"(template <class S> __device__ __forceinline__ S g_abs(S v) { return v < 0 ? -v : v; }
// loads matrix m into a; returns after the block has it
template <class S> __device__ void g_load_matrix(const T* __restrict__ x, S* a, long long m, long long n) {
  for (long long i = threadIdx.x; i < n * n; i += blockDim.x) a[i] = (S)(W)g_load(x, m * n * n + i);
  __syncthreads();
}
// the row at or below the diagonal of column c's first largest magnitude; -1 when that is 0
// (NaN is never larger, and a NaN pivot is kept)
template <class S> __device__ long long g_pivot(const S* a, long long n, long long c) {
  long long p = c;
  S best = g_abs(a[c * n + c]);
  for (long long r = c + 1; r < n; ++r)
    if (g_abs(a[r * n + c]) > best) best = g_abs(a[r * n + c]), p = r;
  return best != (S)0 ? p : -1;
}
// swaps rows c and p of a (all threads)
template <class S> __device__ void g_swap_rows(S* a, long long n, long long c, long long p) {
  for (long long k = threadIdx.x; k < n; k += blockDim.x) {
    const S v = a[c * n + k];
    a[c * n + k] = a[p * n + k];
    a[p * n + k] = v;
  }
}
extern "C" __global__ void det_onnx(const T* __restrict__ x, T* __restrict__ y, double* __restrict__ work, long long batch, long long n) {
  __shared__ double det;
  __shared__ long long piv;
  double* a = work + blockIdx.x * n * n;
  for (long long m = blockIdx.x; m < batch; m += gridDim.x) {
    g_load_matrix(x, a, m, n);
    if (threadIdx.x == 0) det = 1.0;
    for (long long c = 0; c < n; ++c) {
      if (threadIdx.x == 0) {
        piv = g_pivot(a, n, c);
        if (piv < 0) det = 0.0;
        else if (piv != c) det = -det;
      }
      __syncthreads();
      const long long p = piv;
      if (p < 0) break;
      if (p != c) g_swap_rows(a, n, c, p);
      __syncthreads();
      const double d = a[c * n + c];
      if (threadIdx.x == 0) det *= d;
      const long long rest = n - c - 1;
      for (long long e = threadIdx.x; e < rest * rest; e += blockDim.x) {
        const long long r = c + 1 + e / rest, k = c + 1 + e % rest;
        const double f = a[r * n + c] / d;
        if (f != 0.0) a[r * n + k] -= f * a[c * n + k];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) g_store(y, m, (W)det);
    __syncthreads();
  }
}
extern "C" __global__ void det_tf(const T* __restrict__ x, T* __restrict__ y, W* __restrict__ work, long long batch, long long n) {
  __shared__ long long piv;
  __shared__ int swaps;
  W* a = work + blockIdx.x * n * n;
  for (long long m = blockIdx.x; m < batch; m += gridDim.x) {
    g_load_matrix(x, a, m, n);
    if (threadIdx.x == 0) swaps = 0;
    for (long long c = 0; c < n; ++c) {
      if (threadIdx.x == 0) {
        piv = g_pivot(a, n, c);  // (-1: a zero column, left as it is)
        if (piv >= 0 && piv != c) swaps ^= 1;
      }
      __syncthreads();
      const long long p = piv;
      if (p >= 0 && p != c) {
        g_swap_rows(a, n, c, p);
        __syncthreads();
      }
      if (p >= 0)
        for (long long r = c + 1 + threadIdx.x; r < n; r += blockDim.x) a[r * n + c] /= a[c * n + c];
      __syncthreads();
      const long long rest = n - c - 1;
      for (long long e = threadIdx.x; e < rest * rest; e += blockDim.x) {
        const long long r = c + 1 + e / rest, k = c + 1 + e % rest;
        a[r * n + k] -= a[r * n + c] * a[c * n + k];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      W log_abs = 0, sign = swaps ? (W)-1 : (W)1;
      for (long long i = 0; i < n; ++i) {
        const W d = a[i * n + i];
        log_abs += g_log(g_abs(d));
        sign *= d != d ? d : d > 0 ? (W)1 : d < 0 ? (W)-1 : (W)0;
      }
      g_store(y, m, sign * g_exp(log_abs));
    }
    __syncthreads();
  }
}
)";
}

/// Det / MatrixDeterminant (`tf`): the checks and messages of the CPU kernels, then one block
/// per matrix (at most enough blocks for 256 MiB of factorization space).
inline fn make_det(bool tf) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [tf, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const auto& xs = x.sizes();
    if (tf) {
      if (xs.size() < 2) ctx.fail("input must have rank >= 2, got " + x.shape().to_string());
      if (xs[xs.size() - 2] != xs.back()) ctx.fail("input matrices must be square, got " + x.shape().to_string());
    } else if (xs.size() < 2 || xs[xs.size() - 1] != xs[xs.size() - 2]) {
      ctx.fail("Det needs square matrices [..., M, M], got " + x.shape().to_string());
    }
    const i64 n = xs.back();
    const dtype t = x.element_type();
    cuda_tensor& y = ctx.allocate_output(0, t, std::vector<i64>(xs.begin(), xs.end() - 2));
    const i64 batch = y.size();
    if (batch == 0) return;
    auto& pol = ctx.policy();
    const dtype work_type = tf ? t : dtype::f64;  // (MatrixDeterminant: f32 or f64)
    const i64 per_block = std::max<i64>(n * n, 1);
    const i64 blocks = std::clamp<i64>((i64{256} << 20) / (per_block * static_cast<i64>(size_of(work_type))), 1, std::min<i64>(batch, 65535));
    cuda_tensor work = pol.allocate_tensor(work_type, {blocks * per_block}, ctx.stream());
    const auto& k = lib->get(pol, std::string(to_string(t)), {"det_onnx", "det_tf"}, [&] { return det_source(t); });
    const void* xp = x.data();
    void* yp = y.data();
    void* wp = work.data();
    long long b = batch, nn = n;
    void* args[] = {&xp, &yp, &wp, &b, &nn};
    pol.launch(k.kernels[tf ? 1 : 0], static_cast<unsigned>(blocks), n > 16 ? 256 : 32, args, ctx.stream());
  };
}

}  // namespace cuda_det

/// Every source det.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> det_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) r.emplace_back("det_" + std::string(to_string(t)), cuda_det::det_source(t));
  return r;
}

/// Registers det.hpp's kernels.
inline void register_cuda_det(kernel_registry<cuda>& r) {
  r.add({.op = "Det", .dtypes = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}, .make = [](const kernel_node&) { return cuda_det::make_det(false); }});
  r.add({.domain = "tf", .op = "MatrixDeterminant", .dtypes = {dtype::f32, dtype::f64},
         .make = [](const kernel_node&) { return cuda_det::make_det(true); }});
}

}  // namespace gpass::exec
