// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file loss.hpp
/// CUDA kernels of ONNX's losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (f32,
/// f64, f16, bf16), as the CPU kernels compute them. The targets are read back and checked on
/// the host (a target outside [0, C) that is not ignore_index fails naming it, as on the CPU);
/// then on the device:
/// - SoftmaxCrossEntropyLoss: the log-softmax over C of each (n, d) in the compute type (float
///   for the 16-bit types), kept in that type for the loss and written to the optional
///   log_prob output in the input's;
/// - each (n, d)'s term -lp[n, target, d] * weight[target] and its weight, in double (0 and 0
///   when ignored), written as the output for reduction none;
/// - for sum and mean, one block adds the terms (and for mean the weights) in double in a
///   fixed order: the result does not depend on the run. The CPU adds in sequence; the two
///   double sums round differently, so f64 results agree to rounding, not bit for bit.

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
#include <gpass/exec/nn_rules.hpp>

namespace gpass::exec {

namespace cuda_loss {

using cuda_detail::context;
using cuda_detail::fn;
using i64 = std::int64_t;

/// The loss kernels of inputs of `t` and weights of `weight` (see the file comment): `lsm` (log-softmax over the
/// [N, C, D] view into W, and into T when asked), `nll_x` / `nll_w` (the terms, reading the
/// log-probabilities as T or as W), `nll_sum` (one block).
inline std::string loss_source(dtype t, dtype weight) {
  return cuda_nn::head(t) + "typedef " + std::string(cuda_codegen::storage_type(weight)) + R"( WT;
extern "C" __global__ void lsm(const T* __restrict__ x, W* __restrict__ lp, T* __restrict__ out, long long N,
                                long long C, long long D) {
  for (long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x; u < N * D; u += (long long)gridDim.x * blockDim.x) {
    const long long b = u / D, d = u - b * D, at = b * C * D + d;
    W m = (W)(-1.0 / 0.0);
    for (long long c = 0; c < C; ++c) m = g_max(m, (W)g_load(x, at + c * D));
    W s = 0;
    for (long long c = 0; c < C; ++c) s += g_exp((W)g_load(x, at + c * D) - m);
    const W lg = m + g_log(s);  // (x - (m + log s), as the CPU's log-softmax)
    for (long long c = 0; c < C; ++c) {
      const W v = (W)g_load(x, at + c * D) - lg;
      lp[at + c * D] = v;
      if (out) g_store(out, at + c * D, v);
    }
  }
}
// the terms of each (n, d): target t (int64 when t64), weight (null: 1), ignore (when has_ignore);
// into y (reduction none) or into loss and wsum for nll_sum
template <class P> __device__ __forceinline__ void t_nll(const P* __restrict__ lp, const void* __restrict__ target, int t64,
    const WT* __restrict__ weight, int has_ignore, long long ignore, double* __restrict__ loss, double* __restrict__ wsum,
    T* __restrict__ y, long long N, long long C, long long D) {
  for (long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x; u < N * D; u += (long long)gridDim.x * blockDim.x) {
    const long long t = t64 ? ((const long long*)target)[u] : (long long)((const int*)target)[u];
    double l = 0, w = 0;
    if (!(has_ignore && t == ignore)) {
      const long long b = u / D, d = u - b * D;
      w = weight ? (double)g_load(weight, t) : 1.0;
      l = -(double)(W)g_load(lp, (b * C + t) * D + d) * w;
    }
    if (y) g_store(y, u, (W)l);
    else loss[u] = l, wsum[u] = w;
  }
}
extern "C" __global__ void nll_x(const T* __restrict__ lp, const void* __restrict__ target, int t64, const WT* __restrict__ weight,
    int has_ignore, long long ignore, double* __restrict__ loss, double* __restrict__ wsum, T* __restrict__ y, long long N, long long C,
    long long D) {
  t_nll(lp, target, t64, weight, has_ignore, ignore, loss, wsum, y, N, C, D);
}
extern "C" __global__ void nll_w(const W* __restrict__ lp, const void* __restrict__ target, int t64, const WT* __restrict__ weight,
    int has_ignore, long long ignore, double* __restrict__ loss, double* __restrict__ wsum, T* __restrict__ y, long long N, long long C,
    long long D) {
  t_nll(lp, target, t64, weight, has_ignore, ignore, loss, wsum, y, N, C, D);
}
// one block of 256: y = sum(loss), or sum(loss) / sum(wsum) (mean)
extern "C" __global__ void nll_sum(const double* __restrict__ loss, const double* __restrict__ wsum, T* __restrict__ y, long long n, int mean) {
  __shared__ double sl[256], sw[256];
  double a = 0, b = 0;
  for (long long i = threadIdx.x; i < n; i += 256) a += loss[i], b += wsum[i];
  sl[threadIdx.x] = a;
  sw[threadIdx.x] = b;
  __syncthreads();
  for (int h = 128; h > 0; h >>= 1) {
    if ((int)threadIdx.x < h) sl[threadIdx.x] += sl[threadIdx.x + h], sw[threadIdx.x] += sw[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0) g_store(y, 0, (W)(mean ? sl[0] / sw[0] : sl[0]));
}
)";
}

using nn_rules::parse_reduction;
using nn_rules::reduction;

/// NegativeLogLikelihoodLoss(input, target[, weight]) and SoftmaxCrossEntropyLoss(scores,
/// target[, weights]) -> (output[, log_prob]) (`softmax`); the checks, their order and messages
/// the CPU kernels'.
inline fn make_loss(const kernel_node& n, bool softmax) {
  const reduction red = parse_reduction(n);
  const bool has_ignore = n.has_attr("ignore_index");
  const i64 ignore = n.attr<i64>("ignore_index", 0);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const auto& s = x.sizes();
    if (s.size() < 2)
      ctx.fail(std::string(softmax ? "scores" : "input") + " must have rank >= 2 (N x C x ...), got rank " + std::to_string(s.size()));
    const dtype t = x.element_type();
    const i64 N = s[0], C = s[1], D = cuda_nn::prod(s, 2, s.size());
    const cuda_tensor& tt = ctx.input(1);
    std::vector<i64> want_t{N};
    want_t.insert(want_t.end(), s.begin() + 2, s.end());
    if (tt.sizes() != want_t) ctx.fail("target has shape " + tt.shape().to_string() + ", expected " + shape::of(want_t).to_string());
    const std::vector<i64> target = cuda_detail::host_ints(ctx, 1);
    const cuda_tensor* w = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    if (w) {
      cuda_nn::check_float(ctx, *w, "weight");
      if (w->sizes() != std::vector<i64>{C}) ctx.fail("weight must have shape [C] = [" + std::to_string(C) + "]");
    }
    for (i64 v : target)
      if (!(has_ignore && v == ignore) && (v < 0 || v >= C))
        ctx.fail("target value " + std::to_string(v) + " is out of range [0, " + std::to_string(C) + ")");
    auto& pol = ctx.policy();
    const dtype wt = w ? w->element_type() : t;
    const auto& k = lib->get(pol, std::string(to_string(t)) + "_" + std::string(to_string(wt)), {"lsm", "nll_x", "nll_w", "nll_sum"},
                             [&] { return loss_source(t, wt); });
    const void* wp = w ? w->data() : nullptr;
    cuda_tensor& y = ctx.allocate_output(0, t, red == reduction::none ? want_t : std::vector<i64>{});
    cuda_tensor lp;  // (SoftmaxCrossEntropyLoss: the log-probabilities in the compute type)
    if (softmax && x.size() > 0) lp = pol.allocate_tensor(t == dtype::f64 ? dtype::f64 : dtype::f32, s, ctx.stream());
    cuda_tensor* log_prob = nullptr;
    if (softmax && ctx.num_outputs() > 1 && ctx.output_wanted(1)) log_prob = &ctx.allocate_output(1, t, s);
    const void* xp = x.data();
    long long nn = N, cc = C, dd = D;
    if (softmax && x.size() > 0) {
      void* lpp = lp.data();
      void* op = log_prob ? log_prob->data() : nullptr;
      void* args[] = {&xp, &lpp, &op, &nn, &cc, &dd};
      pol.launch(k.kernels[0], pol.blocks_for(N * D), 256, args, ctx.stream());
    }
    const i64 terms = N * D;
    cuda_tensor loss, wsum;  // (the terms for sum and mean)
    if (red != reduction::none) {
      loss = pol.allocate_tensor(dtype::f64, {terms}, ctx.stream());
      wsum = pol.allocate_tensor(dtype::f64, {terms}, ctx.stream());
    }
    if (terms > 0) {
      const void* lpp = softmax ? lp.data() : xp;
      const void* tp = tt.data();
      int t64 = tt.element_type() == dtype::int64;
      int hi = has_ignore;
      long long ig = ignore;
      void* lossp = loss.data();
      void* wsp = wsum.data();
      void* yp = red == reduction::none ? y.data() : nullptr;
      void* args[] = {&lpp, &tp, &t64, &wp, &hi, &ig, &lossp, &wsp, &yp, &nn, &cc, &dd};
      pol.launch(k.kernels[softmax ? 2 : 1], pol.blocks_for(terms), 256, args, ctx.stream());
    }
    if (red != reduction::none) {
      const void* lossp = loss.data();
      const void* wsp = wsum.data();
      void* yp = y.data();
      long long count = terms;
      int mean = red == reduction::mean;
      void* args[] = {&lossp, &wsp, &yp, &count, &mean};
      pol.launch(k.kernels[3], 1, 256, args, ctx.stream());
    }
  };
}

}  // namespace cuda_loss

/// Every source loss.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> loss_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16})
    r.emplace_back("loss_" + std::string(to_string(t)), cuda_loss::loss_source(t, t));
  r.emplace_back("loss_f16_f32", cuda_loss::loss_source(dtype::f16, dtype::f32));
  return r;
}

/// Registers loss.hpp's kernels.
inline void register_cuda_loss(kernel_registry<cuda>& r) {
  const std::vector<dtype> floats{dtype::f32, dtype::f64, dtype::f16, dtype::bf16};
  r.add({.op = "NegativeLogLikelihoodLoss", .dtypes = floats, .make = [](const kernel_node& n) { return cuda_loss::make_loss(n, false); }});
  r.add({.op = "SoftmaxCrossEntropyLoss", .dtypes = floats, .make = [](const kernel_node& n) { return cuda_loss::make_loss(n, true); }});
}

}  // namespace gpass::exec
