// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file transformer.hpp
/// The CUDA kernels of the ops the optimizer's transformer fusions write:
/// com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization (a block per row:
/// the sum input + skip (+ bias), its statistics and the normalized row in one kernel) and
/// gpass::ScaledDotProductAttention (two strided-batched cuBLASLt products around one
/// generated kernel that scales the scores, adds the bias and takes the softmax of each row),
/// for f16, bf16, f32 and f64. Semantics follow the Eigen CPU kernels (`eigen_cpu/kernels/nn.hpp`,
/// `eigen_cpu/kernels/attention.hpp`): input and skip broadcast like NumPy, the attention
/// bias broadcasts with the scores, Q, K and V read broadcast where the bias is larger.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/linalg.hpp>
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec {

namespace cuda_transformer {

using i64 = std::int64_t;
using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;

// ---- SkipLayerNormalization, SkipSimplifiedLayerNormalization ---------------------------------

/// `skln_rows(x, skip, skip_rows, gamma, beta, bias, y, mean, inv, sum, rows, n, eps,
/// simplified)`: a block per row of n; the skip row is `row % skip_rows`; beta, bias, mean,
/// inv and sum may be null; the statistics come from the sum in the compute type.
inline std::string skip_norm_source(dtype t) {
  return cuda_nn::head(t) + R"(__device__ __forceinline__ W g_skip_value(const T* xr, const T* sr, const T* bi, long long i) {
  W v = (W)g_load(xr, i) + (W)g_load(sr, i);
  if (bi) v += (W)g_load(bi, i);
  return v;
}
extern "C" __global__ void skln_rows(const T* __restrict__ x, const T* __restrict__ sk, long long skip_rows, const T* __restrict__ ga,
    const T* __restrict__ be, const T* __restrict__ bi, T* __restrict__ y, float* __restrict__ mean, float* __restrict__ invs,
    T* __restrict__ sum, long long rows, long long n, double eps, int simplified) {
  __shared__ W sh[33];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    const T* sr = sk + (r % skip_rows) * n;
    W m = 0;
    if (!simplified) {
      W s = 0;
      for (long long i = threadIdx.x; i < n; i += blockDim.x) s += g_skip_value(xr, sr, bi, i);
      m = g_block_reduce<0>(s, sh) / (W)n;
    }
    W q = 0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
      const W d = g_skip_value(xr, sr, bi, i) - m;
      q += d * d;
    }
    q = g_block_reduce<0>(q, sh);
    const W inv = (W)1 / g_sqrt(q / (W)n + (W)eps);
    T* yr = y + r * n;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
      const W v = g_skip_value(xr, sr, bi, i);
      if (sum) g_store(sum + r * n, i, v);
      W o = (v - m) * inv * (W)g_load(ga, i);
      if (be) o += (W)g_load(be, i);
      g_store(yr, i, o);
    }
    if (threadIdx.x == 0) {
      if (mean) mean[r] = (float)m;
      if (invs) invs[r] = (float)inv;
    }
  }
}
)";
}

/// A copy of `t` broadcast to `sizes` (NumPy), on the device.
inline cuda_tensor broadcast_copy(context& ctx, lazy_library& lib, const cuda_tensor& t, const std::vector<i64>& sizes) {
  auto& pol = ctx.policy();
  const dtype et = t.element_type();
  cuda_tensor e = pol.allocate_tensor(et, sizes, ctx.stream());
  const auto& k = lib.get(pol, "copy," + std::string(to_string(et)), {"ew_flat", "ew_strided"},
                          [&] { return cuda_codegen::elementwise_source({{et}, et, "r = x0;"}); });
  const cuda_tensor* xs[] = {&t};
  cuda_detail::launch_elementwise(ctx, k, e, xs);
  return e;
}

inline fn make_skip_norm(const kernel_node& n, bool simplified) {
  const double eps = n.attr<double>("epsilon", 1e-12);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x0 = ctx.input(0);
    const cuda_tensor& s0 = ctx.input(1);
    cuda_nn::check_float(ctx, x0, "input");
    const dtype t = x0.element_type();
    const std::vector<std::vector<i64>> both{x0.sizes(), s0.sizes()};
    const std::vector<i64> sizes = cuda_detail::broadcast_sizes(ctx, both);
    if (sizes.empty()) ctx.fail("input must have rank >= 1");
    // input and skip broadcast to their sum's sizes; a skip whose sizes are the sum's last
    // ones is read in place with a period of its rows
    const cuda_tensor x = x0.sizes() == sizes ? x0 : broadcast_copy(ctx, *lib, x0, sizes);
    const cuda_tensor skip = shape_rules::repeats_into(s0.sizes(), sizes) ? s0 : broadcast_copy(ctx, *lib, s0, sizes);
    const cuda_tensor& gamma = ctx.input(2);
    const cuda_tensor* beta = !simplified && ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const std::size_t bias_input = simplified ? 3 : 4;
    const cuda_tensor* bias = ctx.has_input(bias_input) ? &ctx.input(bias_input) : nullptr;
    const i64 H = sizes.back(), rows = H ? x.size() / H : 0;
    if (x.size() != 0 && (skip.size() == 0 || skip.size() % H != 0 || x.size() % skip.size() != 0))
      ctx.fail("skip has shape " + skip.shape().to_string() + ", the input " + x.shape().to_string());
    for (const cuda_tensor* p : {&gamma, beta, bias}) {
      if (!p) continue;
      if (p->size() != H) ctx.fail("gamma, beta and bias must have " + std::to_string(H) + " values");
      if (p->element_type() != t) ctx.fail("gamma, beta and bias must have the input's element type");
    }
    if (s0.element_type() != t) ctx.fail("skip must have the input's element type");
    auto& y = ctx.allocate_output(0, t, sizes);
    std::vector<i64> stat_sizes(sizes.begin(), sizes.end() - 1);
    stat_sizes.push_back(1);
    auto wanted = [&](std::size_t k) { return ctx.num_outputs() > k && ctx.output_wanted(k); };
    void* mp = wanted(1) ? ctx.allocate_output(1, dtype::f32, stat_sizes).data() : nullptr;
    void* ip = wanted(2) ? ctx.allocate_output(2, dtype::f32, stat_sizes).data() : nullptr;
    void* sp = wanted(3) ? ctx.allocate_output(3, t, sizes).data() : nullptr;
    if (rows == 0) return;
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, std::string(to_string(t)), {"skln_rows"}, [&] { return skip_norm_source(t); });
    const void* xp = x.data();
    const void* kp = skip.data();
    long long skip_rows = skip.size() / H, rr = rows, nn = H;
    const void* gp = gamma.data();
    const void* bep = beta ? beta->data() : nullptr;
    const void* bip = bias ? bias->data() : nullptr;
    void* yp = y.data();
    double e = eps;
    int simp = simplified ? 1 : 0;
    void* args[] = {&xp, &kp, &skip_rows, &gp, &bep, &bip, &yp, &mp, &ip, &sp, &rr, &nn, &e, &simp};
    pol.launch(k.kernels[0], static_cast<unsigned>(std::min<i64>(rows, 65535)), 256, args, ctx.stream());
  };
}

// ---- ScaledDotProductAttention --------------------------------------------------------------

/// What the softmax kernel of attention reads (host mirror of the device `g_sdpa`): output rows
/// [Bo, Ho, So] of L scores; the scores' own sizes B, H, S (1 where broadcast); the bias's
/// strides over [Bo, Ho, So, L] (0 where it broadcasts).
struct g_sdpa {
  long long rows = 0, L = 0, So = 0, Ho = 0, B = 0, H = 0, S = 0;
  long long bs[4] = {};
  double scale = 1;
};

/// `sdpa_softmax(scores, probs, bias, a)`: a block per output row, probs = softmax(scores *
/// scale + bias) in the compute type as exp(x - max) / sum (in place when `scores` is `probs`).
inline std::string sdpa_softmax_source(dtype t) {
  return cuda_nn::head(t) + R"(struct g_sdpa { long long rows, L, So, Ho, B, H, S; long long bs[4]; double scale; };
__device__ __forceinline__ W g_score(const T* sr, const T* br, long long bst, W scale, long long j) {
  W v = (W)g_load(sr, j) * scale;
  if (br) v += (W)g_load(br, j * bst);
  return v;
}
extern "C" __global__ void sdpa_softmax(const T* sc, T* p, const T* __restrict__ bias, g_sdpa a) {
  __shared__ W sh[33];
  const W scale = (W)a.scale;
  for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const long long i = r % a.So, u = r / a.So, h = u % a.Ho, b = u / a.Ho;
    const T* sr = sc + (((a.B == 1 ? 0 : b) * a.H + (a.H == 1 ? 0 : h)) * a.S + (a.S == 1 ? 0 : i)) * a.L;
    const T* br = bias ? bias + b * a.bs[0] + h * a.bs[1] + i * a.bs[2] : nullptr;
    W m = (W)(-1.0 / 0.0);
    for (long long j = threadIdx.x; j < a.L; j += blockDim.x) m = g_max(m, g_score(sr, br, a.bs[3], scale, j));
    m = g_block_reduce<1>(m, sh);
    W s = 0;
    for (long long j = threadIdx.x; j < a.L; j += blockDim.x) s += g_exp(g_score(sr, br, a.bs[3], scale, j) - m);
    s = g_block_reduce<0>(s, sh);
    T* pr = p + r * a.L;
    for (long long j = threadIdx.x; j < a.L; j += blockDim.x) g_store(pr, j, g_exp(g_score(sr, br, a.bs[3], scale, j) - m) / s);
  }
}
)";
}

/// A node's state: the products' cuBLASLt plans and the softmax kernel.
struct sdpa_state {
  cuda_linalg::lt_state lt;
  lazy_library lib;
};

inline fn make_sdpa(const kernel_node& n) {
  const double scale = n.attr<double>("scale", 1.0);
  auto st = std::make_shared<sdpa_state>();
  return [scale, st](context& ctx) {
    const cuda_tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
    const cuda_tensor* bias = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
      ctx.fail("Q, K and V must be 4-D, got " + q.shape().to_string() + ", " + k.shape().to_string() + ", " + v.shape().to_string());
    const i64 B = q.sizes()[0], H = q.sizes()[1], S = q.sizes()[2], D = q.sizes()[3], L = k.sizes()[2], Dv = v.sizes()[3];
    if (k.sizes()[0] != B || k.sizes()[1] != H || k.sizes()[3] != D || v.sizes()[0] != B || v.sizes()[1] != H || v.sizes()[2] != L)
      ctx.fail("Q " + q.shape().to_string() + ", K " + k.shape().to_string() + " and V " + v.shape().to_string() + " do not agree");
    cuda_nn::check_float(ctx, q, "Q");
    const dtype t = q.element_type();
    for (const cuda_tensor* x : {&k, &v, bias})
      if (x && x->element_type() != t) ctx.fail("Q, K, V and the bias must have one element type");
    std::array<i64, 4> out{B, H, S, L};
    g_sdpa a;
    if (bias) {
      const auto view = shape_rules::attention_bias(bias->sizes(), out, ctx.node());
      out = view.sizes;
      for (std::size_t d = 0; d < 4; ++d) a.bs[d] = view.strides[d];
    }
    const i64 Bo = out[0], Ho = out[1], So = out[2];
    auto& y = ctx.allocate_output(0, t, {Bo, Ho, So, Dv});
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    if (L == 0) {  // no key: the product with an empty V is zeros
      pol.fill_zero(y, ctx.stream());
      return;
    }
    const std::size_t es = size_of(t);
    const i64 G = B * H;
    // scores [B*H, S, L] = Q K^T (the scale is applied with the bias, as the CPU does)
    const bool same = Bo == B && Ho == H && So == S;
    cuda_tensor scores = pol.allocate_tensor(t, {G, S, L}, ctx.stream());
    cuda_linalg::lt_problem qk{.t = t, .ta = false, .tb = true, .M = S, .N = L, .K = D, .lda = D, .ldb = D, .ldc = L};
    if (G > 1) {
      qk.batch = G;
      qk.stride_a = S * D;
      qk.stride_b = L * D;
      qk.stride_c = S * L;
    }
    if (D == 0) pol.fill_zero(scores, ctx.stream());
    else cuda_linalg::lt_matmul(ctx, st->lt, qk, 1.0, 0.0, q.data(), k.data(), scores.data());
    // probabilities [Bo*Ho, So, L]: in place when the bias does not enlarge the scores
    cuda_tensor probs = same ? scores : pol.allocate_tensor(t, {Bo * Ho, So, L}, ctx.stream());
    a.rows = Bo * Ho * So;
    a.L = L;
    a.So = So;
    a.Ho = Ho;
    a.B = B;
    a.H = H;
    a.S = S;
    a.scale = scale;
    const auto& kk = st->lib.get(pol, std::string(to_string(t)), {"sdpa_softmax"}, [&] { return sdpa_softmax_source(t); });
    const void* sp = scores.data();
    void* pp = probs.data();
    const void* bp = bias ? bias->data() : nullptr;
    void* args[] = {&sp, &pp, &bp, &a};
    pol.launch(kk.kernels[0], static_cast<unsigned>(std::min<i64>(a.rows, 65535)), 256, args, ctx.stream());
    // Y [Bo*Ho, So, Dv] = P V
    cuda_linalg::lt_problem pv{.t = t, .M = So, .N = Dv, .K = L, .lda = L, .ldb = Dv, .ldc = Dv};
    if (Bo == B && Ho == H) {
      if (G > 1) {
        pv.batch = G;
        pv.stride_a = So * L;
        pv.stride_b = L * Dv;
        pv.stride_c = So * Dv;
      }
      cuda_linalg::lt_matmul(ctx, st->lt, pv, 1.0, 0.0, probs.data(), v.data(), y.data());
      return;
    }
    // the bias enlarges batch or heads: V read broadcast, one product per output batch and head
    for (i64 u = 0; u < Bo * Ho; ++u) {
      const i64 b = u / Ho, h = u % Ho, in = (B == 1 ? 0 : b) * H + (H == 1 ? 0 : h);
      const auto* ap = static_cast<const std::byte*>(probs.data()) + static_cast<std::size_t>(u * So * L) * es;
      const auto* vp = static_cast<const std::byte*>(v.data()) + static_cast<std::size_t>(in * L * Dv) * es;
      auto* yp = static_cast<std::byte*>(y.data()) + static_cast<std::size_t>(u * So * Dv) * es;
      cuda_linalg::lt_matmul(ctx, st->lt, pv, 1.0, 0.0, ap, vp, yp);
    }
  };
}

/// Every generated source of this family for each float type: (name, source).
inline std::vector<std::pair<std::string, std::string>> transformer_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : cuda_nn::float_types()) {
    const std::string ts(to_string(t));
    r.emplace_back("skip_norm_" + ts, skip_norm_source(t));
    r.emplace_back("sdpa_softmax_" + ts, sdpa_softmax_source(t));
  }
  return r;
}

}  // namespace cuda_transformer

/// Registers com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization and
/// gpass::ScaledDotProductAttention.
inline void register_cuda_transformer(kernel_registry<cuda>& r) {
  using namespace cuda_transformer;
  const auto ft = cuda_nn::float_types();
  r.add({.domain = "com.microsoft", .op = "SkipLayerNormalization", .dtypes = ft,
         .make = [](const kernel_node& n) { return make_skip_norm(n, false); }});
  r.add({.domain = "com.microsoft", .op = "SkipSimplifiedLayerNormalization", .dtypes = ft,
         .make = [](const kernel_node& n) { return make_skip_norm(n, true); }});
  r.add({.domain = "gpass", .op = "ScaledDotProductAttention", .dtypes = ft, .make = make_sdpa});
}

}  // namespace gpass::exec
