// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file transformer.hpp
/// The CUDA kernels of the transformer ops: com.microsoft SkipLayerNormalization and
/// SkipSimplifiedLayerNormalization (a block per row: the sum input + skip (+ bias), its
/// statistics and the normalized row in one kernel), gpass::ScaledDotProductAttention (two
/// strided-batched cuBLASLt products around one generated kernel that scales the scores, adds
/// the bias and takes the softmax of each row) and com.microsoft MultiHeadAttention (its heads
/// laid out per head, then the same products around a masked softmax), for f16, bf16, f32 and
/// f64. Semantics follow the Eigen CPU kernels (`eigen_cpu/kernels/nn.hpp`,
/// `eigen_cpu/kernels/attention.hpp`): input and skip broadcast like NumPy, the attention
/// bias broadcasts with the scores, Q, K and V read broadcast where the bias is larger.

#include <algorithm>
#include <array>
#include <cmath>
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
#include <gpass/exec/nn_rules.hpp>
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

/// `sdpa_softmax(scores, probs, bias, a)`: probs = softmax(scores * scale + bias) in the
/// compute type as exp(x - max) / sum (in place when `scores` is `probs`); `per` 0: a block per
/// output row; 1, 2, 4, 8 or 16: a warp per row of up to 32 * `per` scores, held in registers
/// (one library each: a model compiles the one its rows need).
inline std::string sdpa_softmax_source(dtype t, int per = 0) {
  std::string r = cuda_nn::head(t) + R"(struct g_sdpa { long long rows, L, So, Ho, B, H, S; long long bs[4]; double scale; };
__device__ __forceinline__ W g_score(const T* sr, const T* br, long long bst, W scale, long long j) {
  W v = (W)g_load(sr, j) * scale;
  if (br) v += (W)g_load(br, j * bst);
  return v;
}
)";
  if (per == 0) {
    r += R"(extern "C" __global__ void sdpa_softmax(const T* sc, T* p, const T* __restrict__ bias, g_sdpa a) {
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
    return r;
  }
  r += "#define PER " + std::to_string(per) + "\n";
  r += R"(// rows of up to 32 * PER scores: a warp per row, its scores held in registers (one read, one
// write, shuffles instead of shared memory)
extern "C" __global__ void sdpa_softmax_w(const T* sc, T* p, const T* __restrict__ bias, g_sdpa a) {
  const W scale = (W)a.scale;
  const int lane = threadIdx.x & 31;
  const long long step = (long long)gridDim.x * (blockDim.x >> 5);
  for (long long r = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < a.rows; r += step) {
    const long long i = r % a.So, u = r / a.So, h = u % a.Ho, b = u / a.Ho;
    const T* sr = sc + (((a.B == 1 ? 0 : b) * a.H + (a.H == 1 ? 0 : h)) * a.S + (a.S == 1 ? 0 : i)) * a.L;
    const T* br = bias ? bias + b * a.bs[0] + h * a.bs[1] + i * a.bs[2] : nullptr;
    W v[PER];
    W m = (W)(-1.0 / 0.0);
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const long long j = lane + 32LL * k;
      v[k] = j < a.L ? g_score(sr, br, a.bs[3], scale, j) : (W)(-1.0 / 0.0);
      m = g_max(m, v[k]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = g_max(m, __shfl_xor_sync(0xffffffffu, m, o));
    W s = 0;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      v[k] = lane + 32LL * k < a.L ? g_exp(v[k] - m) : (W)0;
      s += v[k];
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    T* pr = p + r * a.L;
#pragma unroll
    for (int k = 0; k < PER; ++k) {
      const long long j = lane + 32LL * k;
      if (j < a.L) g_store(pr, j, v[k] / s);
    }
  }
}
)";
  return r;
}

/// The warp-per-row variant for rows of `L` scores (0: rows over 512, a block each).
inline int sdpa_softmax_per(long long L) { return L <= 32 ? 1 : L <= 64 ? 2 : L <= 128 ? 4 : L <= 256 ? 8 : L <= 512 ? 16 : 0; }

/// Y[g] (M x n) = A[g] (M x K) op(B[g]) for each of G heads stored one after another: B[g] is
/// K x n, or n x K read transposed (`tb`); one strided-batched cuBLASLt product.
inline void heads_product(context& ctx, cuda_linalg::lt_state& lt, dtype t, i64 G, i64 M, i64 n, i64 K, bool tb, const void* a,
                          const void* b, void* y) {
  cuda_linalg::lt_problem p{.t = t, .ta = false, .tb = tb, .M = M, .N = n, .K = K, .lda = K, .ldb = tb ? K : n, .ldc = n};
  if (G > 1) {
    p.batch = G;
    p.stride_a = M * K;
    p.stride_b = K * n;
    p.stride_c = M * n;
  }
  cuda_linalg::lt_matmul(ctx, lt, p, 1.0, 0.0, a, b, y);
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
    if (D == 0) pol.fill_zero(scores, ctx.stream());
    else heads_product(ctx, st->lt, t, G, S, L, D, true, q.data(), k.data(), scores.data());
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
    const int per = sdpa_softmax_per(L);
    const auto& kk = st->lib.get(pol, std::string(to_string(t)) + "," + std::to_string(per), {per ? "sdpa_softmax_w" : "sdpa_softmax"},
                                 [&] { return sdpa_softmax_source(t, per); });
    const void* sp = scores.data();
    void* pp = probs.data();
    const void* bp = bias ? bias->data() : nullptr;
    void* args[] = {&sp, &pp, &bp, &a};
    // a warp per row: 8 rows per block of 256 threads; or a block per row
    const i64 blocks = per ? (a.rows + 7) / 8 : a.rows;
    pol.launch(kk.kernels[0], static_cast<unsigned>(std::min<i64>(blocks, 65535)), 256, args, ctx.stream());
    // Y [Bo*Ho, So, Dv] = P V
    if (Bo == B && Ho == H) {
      heads_product(ctx, st->lt, t, G, So, Dv, L, false, probs.data(), v.data(), y.data());
      return;
    }
    // the bias enlarges batch or heads: V read broadcast, one product per output batch and head
    for (i64 u = 0; u < Bo * Ho; ++u) {
      const i64 b = u / Ho, h = u % Ho, in = (B == 1 ? 0 : b) * H + (H == 1 ? 0 : h);
      const auto* ap = static_cast<const std::byte*>(probs.data()) + static_cast<std::size_t>(u * So * L) * es;
      const auto* vp = static_cast<const std::byte*>(v.data()) + static_cast<std::size_t>(in * L * Dv) * es;
      auto* yp = static_cast<std::byte*>(y.data()) + static_cast<std::size_t>(u * So * Dv) * es;
      heads_product(ctx, st->lt, t, 1, So, Dv, L, false, ap, vp, yp);
    }
  };
}

// ---- MultiHeadAttention (com.microsoft) -------------------------------------------------------

/// The grid-stride loop `G_LOOP(count)` and `mha_merge(y, x, B, S, N, H)`: y [B, S, N, H] = x
/// [B, N, S, H], the heads merged back (after a source's head: T). Shared by the attention
/// libraries (this one's and ONNX Attention's).
inline const std::string& heads_merge_source() {
  static const std::string s = R"(#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x * blockDim.x)
extern "C" __global__ void mha_merge(T* __restrict__ y, const T* __restrict__ x, long long B, long long S, long long N, long long H) {
  G_LOOP(B * N * S * H) {
    const long long h = i % H, n = (i / H) % N, s = (i / (H * N)) % S, b = i / (H * N * S);
    y[i] = x[((b * N + n) * S + s) * H + h];
  }
}
)";
  return s;
}

/// `mha_heads(y, x, bias, B, S, N, H)`: y [B, N, S, H] = x [B, S, N, H] + bias[n H + h] (bias may
/// be null); `mha_merge(y, x, B, S, N, H)`: y [B, S, N, H] = x [B, N, S, H];
/// `mha_softmax(scores, mask, bias, a)`: a block per row of the scores [B, N, S, L], in place:
/// softmax(scores * scale + filter where masked + attention bias) in the compute type, as
/// ONNX Runtime's CPU kernel (the mask: key ends [B], ends then starts [2B], 0/1 [B, L] or
/// [B, S, L]; causal: the keys after the query's position P + i);
/// `ora_part(y, qkv, bias, past, B, S, N, P, d, col0, W3)`: y [B, N, P + S, d] from the past
/// [B, N, P, d] (may be null when P is 0) then the columns col0 + n d + e of qkv [B * S, W3] (+
/// bias, which may be null): com.microsoft Attention's Q, K or V per head.
inline std::string mha_source(dtype t) {
  return cuda_nn::head(t) + heads_merge_source() + R"(extern "C" __global__ void mha_heads(T* __restrict__ y, const T* __restrict__ x, const T* __restrict__ bias, long long B, long long S,
    long long N, long long H) {
  G_LOOP(B * N * S * H) {
    const long long h = i % H, s = (i / H) % S, n = (i / (H * S)) % N, b = i / (H * S * N);
    W v = (W)g_load(x, ((b * S + s) * N + n) * H + h);
    if (bias) v += (W)g_load(bias, n * H + h);
    g_store(y, i, v);
  }
}
struct g_mha { long long rows, L, S, N, B, P, bias_b, bias_n; int mask_kind, causal; double scale, filter; };
__device__ __forceinline__ W g_mha_score(const T* sr, const int* mask, const T* br, const g_mha& a, long long b, long long i, long long j) {
  W v = (W)g_load(sr, j) * (W)a.scale;
  bool masked = a.causal && j > a.P + i;
  if (a.mask_kind == 1) masked = masked || j >= (long long)mask[b];
  else if (a.mask_kind == 2) masked = masked || j >= (long long)mask[b] || j < (long long)mask[a.B + b];
  else if (a.mask_kind == 3) masked = masked || mask[b * a.L + j] == 0;
  else if (a.mask_kind == 4) masked = masked || mask[(b * a.S + i) * a.L + j] == 0;
  if (masked) v += (W)a.filter;
  if (br) v += (W)g_load(br, j);
  return v;
}
extern "C" __global__ void ora_part(T* __restrict__ y, const T* __restrict__ qkv, const T* __restrict__ bias, const T* __restrict__ past,
    long long B, long long S, long long N, long long P, long long d, long long col0, long long W3) {
  const long long L = P + S;
  G_LOOP(B * N * L * d) {
    const long long e = i % d, t = (i / d) % L, u = i / (d * L), n = u % N, b = u / N;
    if (t < P) {
      y[i] = past[(u * P + t) * d + e];
      continue;
    }
    W v = (W)g_load(qkv, (b * S + t - P) * W3 + col0 + n * d + e);
    if (bias) v += (W)g_load(bias, col0 + n * d + e);
    g_store(y, i, v);
  }
}
extern "C" __global__ void mha_softmax(T* sc, const int* __restrict__ mask, const T* __restrict__ bias, g_mha a) {
  __shared__ W sh[33];
  for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const long long i = r % a.S, u = r / a.S, n = u % a.N, b = u / a.N;
    T* sr = sc + r * a.L;
    const T* br = bias ? bias + (((a.bias_b == 1 ? 0 : b) * a.bias_n + (a.bias_n == 1 ? 0 : n)) * a.S + i) * a.L : nullptr;
    W m = (W)(-1.0 / 0.0);
    for (long long j = threadIdx.x; j < a.L; j += blockDim.x) m = g_max(m, g_mha_score(sr, mask, br, a, b, i, j));
    m = g_block_reduce<1>(m, sh);
    W s = 0;
    for (long long j = threadIdx.x; j < a.L; j += blockDim.x) s += g_exp(g_mha_score(sr, mask, br, a, b, i, j) - m);
    s = g_block_reduce<0>(s, sh);
    for (long long j = threadIdx.x; j < a.L; j += blockDim.x) {
      const W p = g_exp(g_mha_score(sr, mask, br, a, b, i, j) - m) / s;
      g_store(sr, j, p);
    }
  }
}
)";
}

/// What `mha_softmax` reads (host mirror of the device `g_mha`): rows B * N * S of L scores, the
/// past length P, the attention bias's batch and head counts (1: broadcast), the mask's kind (0
/// none, 1 key ends [B], 2 ends then starts [2B], 3 0/1 [B, L], 4 0/1 [B, S, L]), causality, the
/// scale and the value added where masked.
struct g_mha {
  long long rows = 0, L = 0, S = 0, N = 0, B = 0, P = 0, bias_b = 1, bias_n = 1;
  int mask_kind = 0, causal = 0;
  double scale = 1, filter = 0;
};

/// MultiHeadAttention on the GPU for query [B, S, D] with key [B, L, D] and value [B, L, Dv]
/// (plus bias [2D + Dv]) or per-head key and value [B, N, L, H]; key_padding_mask as lengths [B]
/// or 0/1 [B, L]; attention_bias [B or 1, N or 1, S, L]; unidirectional. Packed forms, past
/// state and the other mask forms run where the CPU kernel does (`applies`).
inline fn make_mha(const kernel_node& n) {
  const i64 N = n.attr<i64>("num_heads");
  if (N <= 0) n.fail("num_heads must be positive");
  const bool causal = n.attr<i64>("unidirectional", 0) != 0;
  const double filter = n.attr<double>("mask_filter_value", -10000.0);
  const double scale_attr = n.attr<double>("scale", 0.0);
  auto st = std::make_shared<sdpa_state>();
  return [=](context& ctx) {
    const cuda_tensor& q = ctx.input(0);
    if (!ctx.has_input(1) || !ctx.has_input(2)) ctx.fail("the CUDA kernel takes separate key and value");
    const cuda_tensor& k = ctx.input(1);
    const cuda_tensor& v = ctx.input(2);
    const cuda_tensor* bias = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const cuda_tensor* mask = ctx.has_input(4) ? &ctx.input(4) : nullptr;
    const cuda_tensor* abias = ctx.has_input(5) ? &ctx.input(5) : nullptr;
    for (std::size_t i = 6; i < 10; ++i)
      if (ctx.has_input(i)) ctx.fail("the CUDA kernel takes no past state, past_sequence_length or cache_indirection");
    if (ctx.num_outputs() > 1 && (ctx.output_wanted(1) || (ctx.num_outputs() > 2 && ctx.output_wanted(2)) || (ctx.num_outputs() > 3 && ctx.output_wanted(3))))
      ctx.fail("the CUDA kernel has no present or qk output");
    cuda_nn::check_float(ctx, q, "query");
    const dtype t = q.element_type();
    for (const cuda_tensor* x : {&k, &v, bias, abias})
      if (x && x->element_type() != t) ctx.fail("query, key, value, bias and attention_bias must have one element type");
    if (q.rank() != 3 || q.sizes()[2] % N != 0) ctx.fail("query must be [B, S, D] with D a multiple of num_heads, got " + q.shape().to_string());
    const i64 B = q.sizes()[0], S = q.sizes()[1], D = q.sizes()[2], H = D / N;
    const bool per_head = k.rank() == 4;
    i64 L = 0, Hv = 0;
    if (per_head) {
      if (k.sizes() != std::vector<i64>{B, N, k.sizes()[2], H} || v.rank() != 4 || v.sizes()[0] != B || v.sizes()[1] != N ||
          v.sizes()[2] != k.sizes()[2])
        ctx.fail("per-head key and value must be [B, num_heads, L, H], got " + k.shape().to_string() + " and " + v.shape().to_string());
      if (bias) ctx.fail("a bias cannot go with per-head key and value");
      L = k.sizes()[2];
      Hv = v.sizes()[3];
    } else {
      if (k.rank() != 3 || v.rank() != 3 || k.sizes()[0] != B || k.sizes()[2] != D || v.sizes()[0] != B || v.sizes()[1] != k.sizes()[1] ||
          v.sizes()[2] % N != 0)
        ctx.fail("key and value must be [B, L, D] and [B, L, Dv], got " + k.shape().to_string() + " and " + v.shape().to_string());
      L = k.sizes()[1];
      Hv = v.sizes()[2] / N;
    }
    const i64 Dv = N * Hv;
    if (bias && bias->size() != 2 * D + Dv) ctx.fail("bias must have " + std::to_string(2 * D + Dv) + " values");
    g_mha a;
    a.rows = B * N * S;
    a.L = L;
    a.S = S;
    a.N = N;
    a.B = B;
    a.causal = causal ? 1 : 0;
    a.scale = scale_attr != 0.0 ? scale_attr : 1.0 / std::sqrt(static_cast<double>(H));
    a.filter = filter;
    a.mask_kind = 0;
    if (mask) {
      if (mask->element_type() != dtype::int32) ctx.fail("key_padding_mask must be int32");
      if (mask->rank() == 1 && mask->sizes()[0] == B) a.mask_kind = 1;
      else if (mask->rank() == 2 && mask->sizes() == std::vector<i64>{B, L}) a.mask_kind = 3;
      else ctx.fail("the CUDA kernel takes key_padding_mask [B] or [B, L], got " + mask->shape().to_string());
    }
    a.bias_b = a.bias_n = 1;
    if (abias) {
      nn_rules::check_ort_attention_bias(abias->sizes(), B, N, S, L, ctx.node());
      a.bias_b = abias->sizes()[0];
      a.bias_n = abias->sizes()[1];
    }
    auto& y = ctx.allocate_output(0, t, {B, S, Dv});
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    if (L == 0) {
      pol.fill_zero(y, ctx.stream());
      return;
    }
    const auto& kk = st->lib.get(pol, "mha," + std::string(to_string(t)), {"mha_heads", "mha_merge", "mha_softmax", "ora_part"},
                                 [&] { return mha_source(t); });
    const std::size_t es = size_of(t);
    // the heads: [B, len, N, h] (+ its part of the bias) -> [B, N, len, h]
    auto heads = [&](const cuda_tensor& x, i64 len, i64 h, i64 bias_at) {
      cuda_tensor o = pol.allocate_tensor(t, {B, N, len, h}, ctx.stream());
      void* op = o.data();
      const void* xp = x.data();
      const void* bp = bias ? static_cast<const void*>(static_cast<const std::byte*>(bias->data()) + static_cast<std::size_t>(bias_at) * es) : nullptr;
      long long bb = B, ll = len, nn = N, hh = h;
      void* args[] = {&op, &xp, &bp, &bb, &ll, &nn, &hh};
      pol.launch(kk.kernels[0], pol.blocks_for(o.size()), 256, args, ctx.stream());
      return o;
    };
    const cuda_tensor qh = heads(q, S, H, 0);
    const cuda_tensor kh = per_head ? k : heads(k, L, H, D);
    const cuda_tensor vh = per_head ? v : heads(v, L, Hv, 2 * D);
    const i64 G = B * N;
    cuda_tensor scores = pol.allocate_tensor(t, {G, S, L}, ctx.stream());
    heads_product(ctx, st->lt, t, G, S, L, H, true, qh.data(), kh.data(), scores.data());
    {
      void* sp = scores.data();
      const void* mp = mask ? mask->data() : nullptr;
      const void* bp = abias ? abias->data() : nullptr;
      void* args[] = {&sp, &mp, &bp, &a};
      pol.launch(kk.kernels[2], static_cast<unsigned>(std::min<i64>(a.rows, 65535)), 256, args, ctx.stream());
    }
    cuda_tensor yh = pol.allocate_tensor(t, {B, N, S, Hv}, ctx.stream());
    heads_product(ctx, st->lt, t, G, S, Hv, L, false, scores.data(), vh.data(), yh.data());
    void* yp = y.data();
    const void* xp = yh.data();
    long long bb = B, ss = S, nn = N, hh = Hv;
    void* args[] = {&yp, &xp, &bb, &ss, &nn, &hh};
    pol.launch(kk.kernels[1], pol.blocks_for(y.size()), 256, args, ctx.stream());
  };
}

// ---- Attention (com.microsoft) -------------------------------------------------------------

/// A node's state: the projection's and the heads' cuBLASLt plans, the MHA library.
struct ort_attention_state {
  cuda_linalg::lt_state lt;
  lazy_library lib;
};

/// com.microsoft Attention on the GPU: QKV = input x weights (one cuBLASLt product), each of Q,
/// K and V laid out per head with its bias (the past's keys and values first: straight into
/// present when it is wanted), then the products around the masked softmax of MultiHeadAttention
/// (every mask_index form, unidirectional after the past, attention_bias) and the heads merged.
/// Checks and messages are the CPU's (`nn_rules::ort_attention_check`).
inline fn make_ort_attention(const kernel_node& n) {
  const nn_rules::ort_attention_attrs at = nn_rules::read_ort_attention_attrs(n);
  auto st = std::make_shared<ort_attention_state>();
  return [at, st](context& ctx) {
    const bool want_present = ctx.num_outputs() > 1 && ctx.output_wanted(1);
    const nn_rules::ort_attention_sizes z = nn_rules::ort_attention_check(ctx, at.heads, at.qkv_sizes, want_present);
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& w = ctx.input(1);
    const cuda_tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
    const cuda_tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const cuda_tensor* past = ctx.has_input(4) ? &ctx.input(4) : nullptr;
    const cuda_tensor* abias = ctx.has_input(5) ? &ctx.input(5) : nullptr;
    cuda_nn::check_float(ctx, x, "input");
    const dtype t = x.element_type();
    for (const cuda_tensor* p : {&w, bias, abias})
      if (p && p->element_type() != t) ctx.fail("weights, bias and attention_bias must have the input's element type");
    if (mask && mask->element_type() != dtype::int32) ctx.fail("mask_index must be int32");
    const i64 B = z.B, S = z.S, N = at.heads, T = z.total, dq = z.dq, dv = z.dv, P = z.P;
    auto& pol = ctx.policy();
    cuda_tensor& y = ctx.allocate_output(0, t, {B, S, z.Hv});
    cuda_tensor* present = want_present ? &ctx.allocate_output(1, t, {2, B, N, T, dq}) : nullptr;
    if (z.W3 == 0 || (y.size() == 0 && (!present || present->size() == 0))) return;
    const auto& kk = st->lib.get(pol, "mha," + std::string(to_string(t)), {"mha_heads", "mha_merge", "mha_softmax", "ora_part"},
                                 [&] { return mha_source(t); });
    const std::size_t es = size_of(t);
    // qkv [B * S, W3] = input [B * S, Hin] x weights [Hin, W3]
    cuda_tensor qkv = pol.allocate_tensor(t, {B * S, z.W3}, ctx.stream());
    if (z.Hin == 0) pol.fill_zero(qkv, ctx.stream());
    else if (B * S > 0) {
      cuda_linalg::lt_problem p{.t = t, .M = B * S, .N = z.W3, .K = z.Hin, .lda = z.Hin, .ldb = z.W3, .ldc = z.W3};
      cuda_linalg::lt_matmul(ctx, st->lt, p, 1.0, 0.0, x.data(), w.data(), qkv.data());
    }
    // Q [B, N, S, dq], K [B, N, T, dq], V [B, N, T, dv]: K and V in present's halves when wanted
    auto part = [&](void* out, i64 p0, i64 d, i64 col0, const void* past_part) {
      const i64 count = B * N * (p0 + S) * d;
      if (count == 0) return;
      const void* qp = qkv.data();
      const void* bp = bias ? bias->data() : nullptr;
      long long bb = B, ss = S, nn = N, pp = p0, dd = d, c0 = col0, w3 = z.W3;
      void* args[] = {&out, &qp, &bp, &past_part, &bb, &ss, &nn, &pp, &dd, &c0, &w3};
      pol.launch(kk.kernels[3], pol.blocks_for(count), 256, args, ctx.stream());
    };
    const auto* past_k = past ? static_cast<const std::byte*>(past->data()) : nullptr;
    const auto* past_v = past ? past_k + static_cast<std::size_t>(B * N * P * dq) * es : nullptr;
    cuda_tensor kh = present ? cuda_tensor{} : pol.allocate_tensor(t, {B, N, T, dq}, ctx.stream());
    cuda_tensor vh = present ? cuda_tensor{} : pol.allocate_tensor(t, {B, N, T, dv}, ctx.stream());
    void* kp = present ? present->data() : kh.data();
    void* vp = present ? static_cast<void*>(static_cast<std::byte*>(present->data()) + static_cast<std::size_t>(B * N * T * dq) * es) : vh.data();
    part(kp, P, dq, z.Hq, past_k);
    part(vp, P, dv, z.Hq + z.Hk, past_v);
    if (y.size() == 0) return;
    cuda_tensor qh = pol.allocate_tensor(t, {B, N, S, dq}, ctx.stream());
    part(qh.data(), 0, dq, 0, nullptr);
    // scores [B * N, S, T] = Q K^T, then the masked softmax in place
    const i64 G = B * N;
    cuda_tensor scores = pol.allocate_tensor(t, {G, S, T}, ctx.stream());
    if (dq == 0) pol.fill_zero(scores, ctx.stream());
    else heads_product(ctx, st->lt, t, G, S, T, dq, true, qh.data(), kp, scores.data());
    g_mha a;
    a.rows = G * S;
    a.L = T;
    a.S = S;
    a.N = N;
    a.B = B;
    a.P = P;
    a.mask_kind = z.mask_kind;
    a.causal = at.causal ? 1 : 0;
    a.scale = at.scale != 0.0 ? at.scale : 1.0 / std::sqrt(static_cast<double>(dq));
    a.filter = at.filter;
    if (abias) {
      a.bias_b = abias->sizes()[0];
      a.bias_n = abias->sizes()[1];
    }
    if (a.rows > 0 && T > 0) {
      void* sp = scores.data();
      const void* mp = mask ? mask->data() : nullptr;
      const void* bp = abias ? abias->data() : nullptr;
      void* args[] = {&sp, &mp, &bp, &a};
      pol.launch(kk.kernels[2], static_cast<unsigned>(std::min<i64>(a.rows, 65535)), 256, args, ctx.stream());
    }
    // Y [B, N, S, dv] = P V, merged to [B, S, N dv]
    cuda_tensor yh = pol.allocate_tensor(t, {B, N, S, dv}, ctx.stream());
    if (T == 0) pol.fill_zero(yh, ctx.stream());
    else heads_product(ctx, st->lt, t, G, S, dv, T, false, scores.data(), vp, yh.data());
    void* yp = y.data();
    const void* xp = yh.data();
    long long bb = B, ss = S, nn = N, hh = dv;
    void* args[] = {&yp, &xp, &bb, &ss, &nn, &hh};
    pol.launch(kk.kernels[1], pol.blocks_for(y.size()), 256, args, ctx.stream());
  };
}

// ---- EmbedLayerNormalization (com.microsoft) ---------------------------------------------

/// `eln_rows(ids, seg, pos, word, pos_emb, seg_emb, gamma, beta, y, sum, rows, S, H, pos_per_row,
/// eps)`: a block per token t: e = word[ids[t]] + pos_emb[pos[t] or t % S] (+ seg_emb[seg[t]]),
/// its mean and variance in double, y = (e - mean) / sqrt(var + eps) * gamma + beta; sum (may be
/// null) the sum e; seg and pos (may be null) int64 ids, checked on the host.
inline std::string embed_ln_source(dtype t) {
  return cuda_codegen::cuda_prelude() + "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\ntypedef double W;\n" +
         cuda_nn::block_reduce_source() + R"(__device__ __forceinline__ double g_embed(const T* wr, const T* pr, const T* sr, long long j) {
  double e = (double)g_load(wr, j) + (double)g_load(pr, j);
  if (sr) e += (double)g_load(sr, j);
  return e;
}
extern "C" __global__ void eln_rows(const long long* __restrict__ ids, const long long* __restrict__ seg, const long long* __restrict__ pos,
    const T* __restrict__ word, const T* __restrict__ pos_emb, const T* __restrict__ seg_emb, const T* __restrict__ gamma,
    const T* __restrict__ beta, T* __restrict__ y, T* __restrict__ sum, long long rows, long long S, long long H, int pos_per_row, double eps) {
  __shared__ double sh[33];
  for (long long t = blockIdx.x; t < rows; t += gridDim.x) {
    const T* wr = word + ids[t] * H;
    const T* pr = pos_emb + (pos ? pos[pos_per_row ? t : t % S] : t % S) * H;
    const T* sr = seg ? seg_emb + seg[t] * H : 0;
    double m = 0;
    for (long long j = threadIdx.x; j < H; j += blockDim.x) m += g_embed(wr, pr, sr, j);
    m = g_block_reduce<0>(m, sh) / (double)H;
    double v = 0;
    for (long long j = threadIdx.x; j < H; j += blockDim.x) {
      const double d = g_embed(wr, pr, sr, j) - m;
      v += d * d;
    }
    v = g_block_reduce<0>(v, sh);
    const double inv = 1.0 / g_sqrt(v / (double)H + eps);
    for (long long j = threadIdx.x; j < H; j += blockDim.x) {
      const double e = g_embed(wr, pr, sr, j);
      if (sum) g_store(sum + t * H, j, e);
      g_store(y + t * H, j, (e - m) * inv * (double)g_load(gamma, j) + (double)g_load(beta, j));
    }
  }
}
)";
}

/// EmbedLayerNormalization on the GPU: the ids (and the mask, for mask_index) read back and
/// checked as on the CPU, then a block per token. The CPU's checks and messages
/// (`nn_rules::embed_ln_check`).
inline fn make_embed_ln(const kernel_node& n) {
  const double eps = n.attr<double>("epsilon", 1e-12);
  auto lib = std::make_shared<lazy_library>();
  return [eps, lib](context& ctx) {
    const nn_rules::embed_ln_sizes z = nn_rules::embed_ln_check(ctx);
    const cuda_tensor& word = ctx.input(2);
    const dtype t = word.element_type();
    cuda_nn::check_float(ctx, word, "word_embedding");
    for (std::size_t i : {std::size_t{3}, std::size_t{4}, std::size_t{5}, std::size_t{6}})
      if (ctx.has_input(i) && ctx.input(i).element_type() != t)
        ctx.fail("the embeddings, gamma and beta must have the word embedding's element type " + std::string(to_string(t)));
    const i64 rows = z.B * z.S;
    // the ids on the host: each row checked as the CPU checks it, then uploaded as int64
    auto ids_of = [&](std::size_t i, i64 table_rows, const char* what) {
      std::vector<i64> v = cuda_detail::host_ints(ctx, i);
      for (i64 r : v) nn_rules::check_embed_row(r, table_rows, what, ctx.node());
      return v;
    };
    const std::vector<i64> id = ids_of(0, word.sizes()[0], "input id");
    const std::vector<i64> sid = ctx.has_input(1) ? ids_of(1, ctx.input(4).sizes()[0], "segment id") : std::vector<i64>{};
    std::vector<i64> pid;
    if (ctx.has_input(8) && rows > 0) pid = ids_of(8, ctx.input(3).sizes()[0], "position id");
    else
      for (i64 s = 0; s < std::min<i64>(z.S, rows); ++s) nn_rules::check_embed_row(s, ctx.input(3).sizes()[0], "position id", ctx.node());
    auto& pol = ctx.policy();
    cuda_tensor& y = ctx.allocate_output(0, t, {z.B, z.S, z.H});
    cuda_tensor* sum = ctx.num_outputs() > 2 && ctx.output_wanted(2) ? &ctx.allocate_output(2, t, {z.B, z.S, z.H}) : nullptr;
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
      std::vector<std::int32_t> counts(static_cast<std::size_t>(z.B), 0);
      if (ctx.has_input(7)) {
        const std::vector<i64> m = cuda_detail::host_ints(ctx, 7);
        if (static_cast<i64>(m.size()) != rows) ctx.fail("mask must have the shape of input_ids");
        for (i64 k = 0; k < rows; ++k) counts[static_cast<std::size_t>(k / z.S)] += m[static_cast<std::size_t>(k)] != 0;
      }
      cuda_tensor& mi = ctx.allocate_output(1, dtype::int32, {z.B});
      if (z.B > 0) pol.copy_to_device(mi.data(), counts.data(), counts.size() * sizeof(std::int32_t), ctx.stream());
    }
    if (y.size() == 0) return;
    const cuda_tensor ids_d = cuda_detail::upload_vector(ctx, dtype::int64, id);
    const cuda_tensor seg_d = sid.empty() ? cuda_tensor{} : cuda_detail::upload_vector(ctx, dtype::int64, sid);
    const cuda_tensor pos_d = pid.empty() ? cuda_tensor{} : cuda_detail::upload_vector(ctx, dtype::int64, pid);
    const auto& k = lib->get(pol, std::string(to_string(t)), {"eln_rows"}, [&] { return embed_ln_source(t); });
    const void* ip = ids_d.data();
    const void* sp = sid.empty() ? nullptr : seg_d.data();
    const void* pp = pid.empty() ? nullptr : pos_d.data();
    const void* wp = word.data();
    const void* pe = ctx.input(3).data();
    const void* se = sid.empty() ? nullptr : ctx.input(4).data();
    const void* gp = ctx.input(5).data();
    const void* bp = ctx.input(6).data();
    void* yp = y.data();
    void* smp = sum ? sum->data() : nullptr;
    long long rr = rows, ss = z.S, hh = z.H;
    int per_row = static_cast<i64>(pid.size()) == rows && rows != z.S ? 1 : 0;
    double e = eps;
    void* args[] = {&ip, &sp, &pp, &wp, &pe, &se, &gp, &bp, &yp, &smp, &rr, &ss, &hh, &per_row, &e};
    pol.launch(k.kernels[0], static_cast<unsigned>(std::min<i64>(rows, 65535)), 256, args, ctx.stream());
  };
}

/// Every generated source of this family for each float type: (name, source).
inline std::vector<std::pair<std::string, std::string>> transformer_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : cuda_nn::float_types()) {
    const std::string ts(to_string(t));
    r.emplace_back("skip_norm_" + ts, skip_norm_source(t));
    for (int per : {0, 1, 2, 4, 8, 16}) r.emplace_back("sdpa_softmax_" + ts + "_" + std::to_string(per), sdpa_softmax_source(t, per));
    r.emplace_back("mha_" + ts, mha_source(t));
    r.emplace_back("embed_ln_" + ts, embed_ln_source(t));
  }
  return r;
}

}  // namespace cuda_transformer

/// Registers com.microsoft SkipLayerNormalization, SkipSimplifiedLayerNormalization,
/// MultiHeadAttention, Attention and EmbedLayerNormalization, and
/// gpass::ScaledDotProductAttention.
inline void register_cuda_transformer(kernel_registry<cuda>& r) {
  using namespace cuda_transformer;
  const auto ft = cuda_nn::float_types();
  r.add({.domain = "com.microsoft", .op = "SkipLayerNormalization", .dtypes = ft,
         .make = [](const kernel_node& n) { return make_skip_norm(n, false); }});
  r.add({.domain = "com.microsoft", .op = "SkipSimplifiedLayerNormalization", .dtypes = ft,
         .make = [](const kernel_node& n) { return make_skip_norm(n, true); }});
  r.add({.domain = "gpass", .op = "ScaledDotProductAttention", .dtypes = ft, .make = make_sdpa});
  // MultiHeadAttention: separate or per-head key and value, no past state, masks [B] / [B, L]
  r.add({.domain = "com.microsoft", .op = "MultiHeadAttention", .dtypes = ft, .make = make_mha, .applies = [](const kernel_query& q) {
           // inputs known: key and value given (not packed), nothing from the past; one output
           if (q.inputs.size() < 3 || q.inputs[1] == dtype::undefined || q.inputs[2] == dtype::undefined) return false;
           for (std::size_t i = 6; i < q.inputs.size(); ++i)
             if (q.inputs[i] != dtype::undefined) return false;
           for (std::size_t i = 1; i < q.outputs.size(); ++i)
             if (q.outputs[i] != dtype::undefined) return false;
           return q.inputs.size() < 5 || q.inputs[4] == dtype::undefined || q.inputs[4] == dtype::int32;
         }});
  // Attention: an int32 mask_index, no shared past/present buffer (past_sequence_length)
  r.add({.domain = "com.microsoft", .op = "Attention", .dtypes = ft, .make = make_ort_attention, .applies = [](const kernel_query& q) {
           if (q.inputs.size() > 3 && q.inputs[3] != dtype::undefined && q.inputs[3] != dtype::int32) return false;
           return q.inputs.size() < 7 || q.inputs[6] == dtype::undefined;
         }});
  r.add({.domain = "com.microsoft", .op = "EmbedLayerNormalization", .dtypes = ft, .type_input = 2, .make = make_embed_ln});
}

}  // namespace gpass::exec
