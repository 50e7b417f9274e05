// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file nn.hpp
/// The CUDA normalization kernels, generated and compiled by NVRTC on first use: Softmax and
/// LogSoftmax (a block per row, or a thread per column when the axis is not the last),
/// BatchNormalization (inference), LayerNormalization (with its Mean and InvStdDev outputs)
/// and InstanceNormalization (a block per row), LpNormalization and MeanVarianceNormalization
/// (a thread per line / group), for f16, bf16, f32 and f64. Semantics follow
/// the Eigen CPU kernels (`eigen_cpu/kernels/nn.hpp`).

#include <algorithm>
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
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>

namespace gpass::exec {

namespace cuda_nn {

using i64 = std::int64_t;
using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;

inline std::vector<dtype> float_types() { return {dtype::f16, dtype::bf16, dtype::f32, dtype::f64}; }

inline i64 prod(const std::vector<i64>& s, std::size_t b, std::size_t e) {
  i64 p = 1;
  for (std::size_t i = b; i < e && i < s.size(); ++i) p *= s[i];
  return p;
}

inline i64 normalize_axis(const context& ctx, i64 axis, i64 rank) {
  if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

inline void check_float(const context& ctx, const cuda_tensor& t, const char* what) {
  if (!cuda_codegen::is_float(t.element_type()))
    ctx.fail(std::string(what) + " must be a floating-point tensor, got " + std::string(to_string(t.element_type())));
}

/// Block-wide sum and max (any block size up to 1024; every thread gets the result).
inline const std::string& block_reduce_source() {
  static const std::string s = R"(template <class V> __device__ __forceinline__ V g_warp_sum(V v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
template <class V> __device__ __forceinline__ V g_warp_max(V v) {
  for (int o = 16; o > 0; o >>= 1) v = g_max(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}
template <int MAX, class V> __device__ V g_block_reduce(V v, V* sh) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  v = MAX ? g_warp_max(v) : g_warp_sum(v);
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < nw ? sh[lane] : (MAX ? (V)(-1.0 / 0.0) : (V)0);
    v = MAX ? g_warp_max(v) : g_warp_sum(v);
    if (lane == 0) sh[32] = v;
  }
  __syncthreads();
  return sh[32];
}
)";
  return s;
}

inline std::string head(dtype t) {
  return cuda_codegen::cuda_prelude() + "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\ntypedef " +
         std::string(cuda_codegen::compute_type(t)) + " W;\n" + block_reduce_source();
}

// ---- Softmax, LogSoftmax ----------------------------------------------------------------------

/// `smax_rows` (a block per contiguous row of n) and `smax_cols` (a thread per column of a
/// [outer, n, inner] view), both max-subtracted in the compute type.
inline std::string softmax_source(dtype t) {
  return head(t) + R"(extern "C" __global__ void smax_rows(const T* __restrict__ x, T* __restrict__ y, long long rows, long long n, int lg) {
  __shared__ W sh[33];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    W m = (W)(-1.0 / 0.0);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) m = g_max(m, (W)g_load(xr, i));
    m = g_block_reduce<1>(m, sh);
    W s = 0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += g_exp((W)g_load(xr, i) - m);
    s = g_block_reduce<0>(s, sh);
    if (lg) {
      const W c = m + g_log(s);
      for (long long i = threadIdx.x; i < n; i += blockDim.x) g_store(yr, i, (W)g_load(xr, i) - c);
    } else {
      const W inv = (W)1 / s;
      for (long long i = threadIdx.x; i < n; i += blockDim.x) g_store(yr, i, g_exp((W)g_load(xr, i) - m) * inv);
    }
  }
}
extern "C" __global__ void smax_cols(const T* __restrict__ x, T* __restrict__ y, long long outer, long long n, long long inner, int lg) {
  const long long total = outer * inner;
  for (long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x; u < total; u += (long long)gridDim.x * blockDim.x) {
    const long long o = u / inner, j = u - o * inner;
    const T* xc = x + o * n * inner + j;
    T* yc = y + o * n * inner + j;
    W m = (W)(-1.0 / 0.0);
    for (long long i = 0; i < n; ++i) m = g_max(m, (W)g_load(xc, i * inner));
    W s = 0;
    for (long long i = 0; i < n; ++i) s += g_exp((W)g_load(xc, i * inner) - m);
    if (lg) {
      const W c = m + g_log(s);
      for (long long i = 0; i < n; ++i) g_store(yc, i * inner, (W)g_load(xc, i * inner) - c);
    } else {
      const W inv = (W)1 / s;
      for (long long i = 0; i < n; ++i) g_store(yc, i * inner, g_exp((W)g_load(xc, i * inner) - m) * inv);
    }
  }
}
)";
}

/// The rows of a softmax-like op over `axis` of sizes `s`: (outer, len, inner), row r of
/// outer index o and inner index i at o * len * inner + i, stride inner; before opset 13
/// (`legacy`) the input coerced to 2-D at the axis (inner 1); a scalar is one row of one.
struct axis_rows_t {
  i64 outer = 1, len = 1, inner = 1;
};
inline axis_rows_t axis_rows(const context& ctx, const std::vector<i64>& s, i64 axis, bool legacy) {
  axis_rows_t r;
  const i64 rank = static_cast<i64>(s.size());
  if (rank == 0) return r;
  const std::size_t a = static_cast<std::size_t>(normalize_axis(ctx, axis, rank));
  r.outer = prod(s, 0, a);
  if (legacy) {
    r.len = prod(s, a, s.size());
  } else {
    r.len = s[a];
    r.inner = prod(s, a + 1, s.size());
  }
  return r;
}

inline fn make_softmax(const kernel_node& n, bool log) {
  const bool legacy = n.opset > 0 && n.opset < 13;
  const i64 axis_attr = n.attr<i64>("axis", legacy ? 1 : -1);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    check_float(ctx, x, "input");
    const auto& s = x.sizes();
    const auto [outer, len, inner] = axis_rows(ctx, s, axis_attr, legacy);
    const dtype t = x.element_type();
    auto& y = ctx.allocate_output(0, t, s);
    if (y.size() == 0) return;
    const auto& k = lib->get(ctx.policy(), std::string(to_string(t)), {"smax_rows", "smax_cols"}, [&] { return softmax_source(t); });
    const void* xp = x.data();
    void* yp = y.data();
    int lg = log ? 1 : 0;
    long long o = outer, n2 = len, in = inner;
    auto& pol = ctx.policy();
    if (inner == 1) {
      void* args[] = {&xp, &yp, &o, &n2, &lg};
      pol.launch(k.kernels[0], static_cast<unsigned>(std::min<i64>(outer, 65535)), 256, args, ctx.stream());
    } else {
      void* args[] = {&xp, &yp, &o, &n2, &in, &lg};
      pol.launch(k.kernels[1], pol.blocks_for(outer * inner), 256, args, ctx.stream());
    }
  };
}

// ---- BatchNormalization (inference) --------------------------------------------------------

/// `bn(y, x, scale, bias, mean, var, n, C, inner, eps)`: per channel, k = scale / sqrt(var +
/// eps) and b = bias - mean k in double (as the CPU), y = x k + b in the compute type.
inline std::string batch_norm_source(dtype t, const std::vector<dtype>& ps) {
  std::string s = head(t);
  for (std::size_t i = 0; i < 4; ++i) s += "typedef " + std::string(cuda_codegen::storage_type(ps[i])) + " P" + std::to_string(i) + ";\n";
  s += R"(extern "C" __global__ void bn(T* __restrict__ y, const T* __restrict__ x, const P0* __restrict__ sc, const P1* __restrict__ bi,
    const P2* __restrict__ mu, const P3* __restrict__ va, long long n, long long C, long long inner, double eps) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long c = (i / inner) % C;
    const double k = (double)g_load(sc, c) / sqrt((double)g_load(va, c) + eps);
    const double b = (double)g_load(bi, c) - (double)g_load(mu, c) * k;
    g_store(y, i, (W)g_load(x, i) * (W)k + (W)b);
  }
}
)";
  return s;
}

inline fn make_batch_norm(const kernel_node& n) {
  const double eps = n.attr<double>("epsilon", 1e-5);
  const int opset = n.opset;
  bool training = false;
  if (opset >= 14) training = n.attr<i64>("training_mode", 0) != 0;
  else if (opset > 0 && opset < 7) training = n.attr<i64>("is_test", 0) == 0 && n.num_outputs() > 1;
  else training = n.num_outputs() > 1;
  if (training) n.fail("the CUDA BatchNormalization runs in inference mode only (training_mode, or running statistics asked for)");
  const bool spatial = opset >= 9 || opset == 0 ? true : n.attr<i64>("spatial", 1) != 0;
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    check_float(ctx, x, "X");
    const auto& s = x.sizes();
    if (s.size() < 2) ctx.fail("X must have rank >= 2 (N x C x ...), got rank " + std::to_string(s.size()));
    const i64 C = spatial ? s[1] : prod(s, 1, s.size());
    const i64 inner = spatial ? prod(s, 2, s.size()) : 1;
    std::vector<dtype> ps;
    for (std::size_t k = 1; k < 5; ++k) {
      const cuda_tensor& p = ctx.input(k);
      check_float(ctx, p, "scale, B, mean and var");
      if (p.size() != C)
        ctx.fail("input " + std::to_string(k) + " has " + std::to_string(p.size()) + " elements, expected " + std::to_string(C));
      ps.push_back(p.element_type());
    }
    const dtype t = x.element_type();
    auto& y = ctx.allocate_output(0, t, s);
    if (y.size() == 0) return;
    std::string key(to_string(t));
    for (dtype p : ps) key += "," + std::string(to_string(p));
    const auto& k = lib->get(ctx.policy(), key, {"bn"}, [&] { return batch_norm_source(t, ps); });
    void* yp = y.data();
    const void* xp = x.data();
    const void *p0 = ctx.input(1).data(), *p1 = ctx.input(2).data(), *p2 = ctx.input(3).data(), *p3 = ctx.input(4).data();
    long long nn = y.size(), cc = C, in = inner;
    double e = eps;
    void* args[] = {&yp, &xp, &p0, &p1, &p2, &p3, &nn, &cc, &in, &e};
    ctx.policy().launch(k.kernels[0], ctx.policy().blocks_for(nn), 256, args, ctx.stream());
  };
}

// ---- LayerNormalization, InstanceNormalization ------------------------------------------------

/// `ln_rows(x, y, scale, bias, mean, inv, rows, n, eps)`: a block per row of n; scale and bias
/// (bias may be null) index by column; mean / inv (may be null) get the row's statistics.
/// `in_rows(x, y, scale, bias, rows, n, C, eps)`: a block per (n, c) plane, scale and bias by
/// channel.
inline std::string norm_source(dtype t, dtype st, dtype bt, dtype ut) {
  std::string s = head(t);
  s += "typedef " + std::string(cuda_codegen::storage_type(st)) + " S;\n";
  s += "typedef " + std::string(cuda_codegen::storage_type(bt)) + " B;\n";
  s += "typedef " + std::string(cuda_codegen::storage_type(ut)) + " U;\n";
  s += R"(__device__ __forceinline__ void g_stats(const T* xr, long long n, W* sh, W& m, W& inv, W eps) {
  W s = 0;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) s += (W)g_load(xr, i);
  s = g_block_reduce<0>(s, sh);
  m = n ? s / (W)n : (W)0;
  W q = 0;
  for (long long i = threadIdx.x; i < n; i += blockDim.x) { const W d = (W)g_load(xr, i) - m; q += d * d; }
  q = g_block_reduce<0>(q, sh);
  const W v = n ? q / (W)n : (W)0;
  inv = (W)1 / g_sqrt(v + eps);
}
extern "C" __global__ void ln_rows(const T* __restrict__ x, T* __restrict__ y, const S* __restrict__ sc, const B* __restrict__ bi,
    U* __restrict__ mean, U* __restrict__ invs, long long rows, long long n, double eps) {
  __shared__ W sh[33];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    W m, inv;
    g_stats(xr, n, sh, m, inv, (W)eps);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
      const W b = bi ? (W)g_load(bi, i) : (W)0;
      g_store(yr, i, ((W)g_load(xr, i) - m) * inv * (W)g_load(sc, i) + b);
    }
    if (threadIdx.x == 0) {
      if (mean) g_store(mean, r, m);
      if (invs) g_store(invs, r, inv);
    }
  }
}
extern "C" __global__ void in_rows(const T* __restrict__ x, T* __restrict__ y, const S* __restrict__ sc, const B* __restrict__ bi,
    long long rows, long long n, long long C, double eps) {
  __shared__ W sh[33];
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    W m, inv;
    g_stats(xr, n, sh, m, inv, (W)eps);
    const long long c = r % C;
    // as the CPU: k = scale / sqrt(var + eps) in the compute type
    const W k = (W)g_load(sc, c) * inv;
    const W b = (W)g_load(bi, c);
    for (long long i = threadIdx.x; i < n; i += blockDim.x) g_store(yr, i, ((W)g_load(xr, i) - m) * k + b);
  }
}
)";
  return s;
}

inline fn make_layer_norm(const kernel_node& n) {
  const double eps = n.attr<double>("epsilon", 1e-5);
  const i64 axis_attr = n.attr<i64>("axis", -1);
  const i64 stash = n.attr<i64>("stash_type", 1);
  dtype stat_type = stash == 11 ? dtype::f64 : stash == 10 ? dtype::f16 : stash == 16 ? dtype::bf16 : dtype::f32;
  if (n.num_outputs() > 1 && n.output_types[1].is_tensor()) {
    const dtype t = n.output_types[1].tensor().element;
    if (cuda_codegen::is_float(t)) stat_type = t;
  }
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    check_float(ctx, x, "X");
    const auto& s = x.sizes();
    const i64 rank = static_cast<i64>(s.size());
    if (rank == 0) ctx.fail("X must have rank >= 1");
    const std::size_t a = static_cast<std::size_t>(normalize_axis(ctx, axis_attr, rank));
    const i64 outer = prod(s, 0, a), inner = prod(s, a, s.size());
    const std::vector<i64> norm_sizes(s.begin() + static_cast<std::ptrdiff_t>(a), s.end());
    auto& pol = ctx.policy();
    // Scale and B broadcast (unidirectionally) to the normalized dimensions: expanded on the
    // device when they are not already of that many elements
    auto expand = [&](const cuda_tensor& p, const char* what) {
      check_float(ctx, p, what);
      if (p.size() == inner && (p.rank() == norm_sizes.size() || p.rank() <= 1)) return p;
      auto bad = [&] {
        ctx.fail(std::string(what) + " of shape " + p.shape().to_string() + " does not broadcast to " + shape::of(norm_sizes).to_string());
      };
      if (p.rank() > norm_sizes.size()) bad();
      const auto& ps = p.sizes();
      for (std::size_t i = 0; i < ps.size(); ++i) {
        const i64 want = norm_sizes[norm_sizes.size() - ps.size() + i];
        if (ps[i] != 1 && ps[i] != want) bad();
      }
      const dtype pt = p.element_type();
      cuda_tensor e = pol.allocate_tensor(pt, norm_sizes, ctx.stream());
      const auto& k = lib->get(pol, "copy," + std::string(to_string(pt)), {"ew_flat", "ew_strided"},
                               [&] { return cuda_codegen::elementwise_source({{pt}, pt, "r = x0;"}); });
      const cuda_tensor* xs[] = {&p};
      cuda_detail::launch_elementwise(ctx, k, e, xs);
      return e;
    };
    const cuda_tensor scale = expand(ctx.input(1), "Scale");
    const cuda_tensor bias = ctx.has_input(2) ? expand(ctx.input(2), "B") : cuda_tensor{};
    std::vector<i64> stat_sizes = s;
    for (std::size_t i = a; i < stat_sizes.size(); ++i) stat_sizes[i] = 1;
    const dtype t = x.element_type();
    auto& y = ctx.allocate_output(0, t, s);
    void* mp = nullptr;
    void* ip = nullptr;
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) mp = ctx.allocate_output(1, stat_type, stat_sizes).data();
    if (ctx.num_outputs() > 2 && ctx.output_wanted(2)) ip = ctx.allocate_output(2, stat_type, stat_sizes).data();
    if (outer == 0) return;
    const dtype bt = bias.empty() ? t : bias.element_type();
    const std::string key = std::string(to_string(t)) + "," + std::string(to_string(scale.element_type())) + "," +
                            std::string(to_string(bt)) + "," + std::string(to_string(stat_type));
    const auto& k = lib->get(pol, key, {"ln_rows", "in_rows"}, [&] { return norm_source(t, scale.element_type(), bt, stat_type); });
    const void* xp = x.data();
    void* yp = y.data();
    const void* sp = scale.data();
    const void* bp = bias.empty() ? nullptr : bias.data();
    long long rows = outer, nn = inner;
    double e = eps;
    void* args[] = {&xp, &yp, &sp, &bp, &mp, &ip, &rows, &nn, &e};
    pol.launch(k.kernels[0], static_cast<unsigned>(std::min<i64>(outer, 65535)), 256, args, ctx.stream());
  };
}

inline fn make_instance_norm(const kernel_node& n) {
  const double eps = n.attr<double>("epsilon", 1e-5);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    check_float(ctx, x, "input");
    const auto& s = x.sizes();
    if (s.size() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got rank " + std::to_string(s.size()));
    const i64 N = s[0], C = s[1], inner = prod(s, 2, s.size());
    for (std::size_t k = 1; k < 3; ++k) {
      check_float(ctx, ctx.input(k), "scale and B");
      if (ctx.input(k).size() != C) ctx.fail("scale and B must have C = " + std::to_string(C) + " elements");
    }
    const dtype t = x.element_type();
    auto& y = ctx.allocate_output(0, t, s);
    if (N * C == 0) return;
    const dtype st = ctx.input(1).element_type(), bt = ctx.input(2).element_type();
    const std::string key = std::string(to_string(t)) + "," + std::string(to_string(st)) + "," + std::string(to_string(bt));
    const auto& k = lib->get(ctx.policy(), key, {"ln_rows", "in_rows"}, [&] { return norm_source(t, st, bt, dtype::f32); });
    const void* xp = x.data();
    void* yp = y.data();
    const void* sp = ctx.input(1).data();
    const void* bp = ctx.input(2).data();
    long long rows = N * C, nn = inner, cc = C;
    double e = eps;
    void* args[] = {&xp, &yp, &sp, &bp, &rows, &nn, &cc, &e};
    ctx.policy().launch(k.kernels[1], static_cast<unsigned>(std::min<i64>(rows, 65535)), 256, args, ctx.stream());
  };
}

// ---- LpNormalization, MeanVarianceNormalization ----------------------------------------------

/// Most dimensions MeanVarianceNormalization takes.
inline constexpr int mvn_rank = 8;

/// `lp_norm(x, y, lines, len, inner, p)`: a thread per line of `len` at stride `inner`, the
/// norm (p = 1 or 2) in double, a zero norm giving 0; `mvn(x, y, groups, per, g_mvn)`: a
/// thread per group of the kept dimensions, mean and deviation over the reduced ones in
/// double, y = (x - mean) / (deviation + 1e-9). As the CPU kernels compute them.
inline std::string lp_mvn_source(dtype t) {
  std::string s = cuda_codegen::cuda_prelude();
  s += "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\ntypedef " + std::string(cuda_codegen::compute_type(t)) + " W;\n";
  s += "#define G_R " + std::to_string(mvn_rank) + "\n";
  s += R"(extern "C" __global__ void lp_norm(const T* __restrict__ x, T* __restrict__ y, long long lines, long long len, long long inner,
                                   int p) {
  for (long long w = blockIdx.x * (long long)blockDim.x + threadIdx.x; w < lines; w += (long long)gridDim.x * blockDim.x) {
    const long long base = (w / inner) * len * inner + w % inner;
    double norm = 0;
    for (long long k = 0; k < len; ++k) {
      const double v = (double)g_load(x, base + k * inner);
      norm += p == 1 ? fabs(v) : v * v;
    }
    if (p == 2) norm = sqrt(norm);
    for (long long k = 0; k < len; ++k)
      g_store(y, base + k * inner, norm == 0 ? (W)0 : (W)((double)g_load(x, base + k * inner) / norm));
  }
}
// the kept dimensions (sizes, strides in x) locate a group; the reduced ones its elements
struct g_mvn { long long kr, rr; long long ks[G_R], kst[G_R], rs[G_R], rst[G_R]; };
__device__ __forceinline__ long long g_off(const long long* sizes, const long long* strides, long long rank, long long i) {
  long long off = 0;
  for (int d = (int)rank - 1; d >= 0; --d) { off += (i % sizes[d]) * strides[d]; i /= sizes[d]; }
  return off;
}
extern "C" __global__ void mvn(const T* __restrict__ x, T* __restrict__ y, long long groups, long long per, g_mvn m) {
  for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < groups; g += (long long)gridDim.x * blockDim.x) {
    const long long base = g_off(m.ks, m.kst, m.kr, g);
    double sum = 0;
    for (long long j = 0; j < per; ++j) sum += (double)(W)g_load(x, base + g_off(m.rs, m.rst, m.rr, j));
    const double mean = sum / (double)per;
    double sq = 0;
    for (long long j = 0; j < per; ++j) { const double d = (double)(W)g_load(x, base + g_off(m.rs, m.rst, m.rr, j)) - mean; sq += d * d; }
    const double inv = 1.0 / (sqrt(sq / (double)per) + 1e-9);
    for (long long j = 0; j < per; ++j) {
      const long long o = base + g_off(m.rs, m.rst, m.rr, j);
      g_store(y, o, (W)(((double)(W)g_load(x, o) - mean) * inv));
    }
  }
}
)";
  return s;
}

/// Host mirror of the device `g_mvn`.
struct mvn_arg {
  long long kr = 0, rr = 0;
  long long ks[mvn_rank] = {}, kst[mvn_rank] = {}, rs[mvn_rank] = {}, rst[mvn_rank] = {};
};

inline fn make_lp_normalization(const kernel_node& n) {
  const i64 axis_attr = n.attr<i64>("axis", -1), p = n.attr<i64>("p", 2);
  if (p != 1 && p != 2) n.fail("p must be 1 or 2, got " + std::to_string(p));
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    check_float(ctx, x, "input");
    const auto& s = x.sizes();
    if (s.empty()) ctx.fail("input must have rank >= 1");
    const auto axis = static_cast<std::size_t>(normalize_axis(ctx, axis_attr, static_cast<i64>(s.size())));
    long long outer = prod(s, 0, axis), len = s[axis], inner = prod(s, axis + 1, s.size());
    const dtype t = x.element_type();
    auto& y = ctx.allocate_output(0, t, s);
    if (y.size() == 0) return;
    const auto& k = lib->get(ctx.policy(), std::string(to_string(t)), {"lp_norm", "mvn"}, [&] { return lp_mvn_source(t); });
    const void* xp = x.data();
    void* yp = y.data();
    long long lines = outer * inner;
    int pp = static_cast<int>(p);
    void* args[] = {&xp, &yp, &lines, &len, &inner, &pp};
    ctx.policy().launch(k.kernels[0], ctx.policy().blocks_for(lines), 256, args, ctx.stream());
  };
}

inline fn make_mvn(const kernel_node& n) {
  const std::vector<i64> axes_attr = n.attr<std::vector<i64>>("axes", std::vector<i64>{0, 2, 3});
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    check_float(ctx, x, "input");
    const auto& s = x.sizes();
    const i64 rank = static_cast<i64>(s.size());
    std::vector<char> reduced(s.size(), 0);
    for (i64 a : axes_attr) reduced[static_cast<std::size_t>(normalize_axis(ctx, a, rank))] = 1;
    mvn_arg m;
    long long groups = 1, per = 1;
    i64 stride = 1;
    std::vector<i64> st(s.size());
    for (std::size_t d = s.size(); d-- > 0;) {
      st[d] = stride;
      stride *= s[d];
    }
    for (std::size_t d = 0; d < s.size(); ++d) {
      if (s[d] == 1) continue;  // no walk needed
      const bool r = reduced[d] != 0;
      long long& count = r ? m.rr : m.kr;
      if (count >= mvn_rank) ctx.fail("MeanVarianceNormalization over more than " + std::to_string(mvn_rank) + " dimensions");
      (r ? m.rs : m.ks)[count] = s[d];
      (r ? m.rst : m.kst)[count] = st[d];
      ++count;
      (r ? per : groups) *= s[d];
    }
    const dtype t = x.element_type();
    auto& y = ctx.allocate_output(0, t, s);
    if (y.size() == 0) return;
    const auto& k = lib->get(ctx.policy(), std::string(to_string(t)), {"lp_norm", "mvn"}, [&] { return lp_mvn_source(t); });
    const void* xp = x.data();
    void* yp = y.data();
    void* args[] = {&xp, &yp, &groups, &per, &m};
    ctx.policy().launch(k.kernels[1], ctx.policy().blocks_for(groups, 64), 64, args, ctx.stream());
  };
}

/// Every generated source of this family for representative types: (name, source).
inline std::vector<std::pair<std::string, std::string>> nn_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : float_types()) {
    const std::string ts(to_string(t));
    r.emplace_back("softmax_" + ts, softmax_source(t));
    r.emplace_back("batch_norm_" + ts, batch_norm_source(t, {t, t, t, t}));
    r.emplace_back("batch_norm_f32params_" + ts, batch_norm_source(t, {dtype::f32, dtype::f32, dtype::f32, dtype::f32}));
    r.emplace_back("norm_" + ts, norm_source(t, t, t, dtype::f32));
    r.emplace_back("norm_stats_" + ts, norm_source(t, dtype::f32, t, t));
    r.emplace_back("lp_mvn_" + ts, lp_mvn_source(t));
  }
  return r;
}

}  // namespace cuda_nn

/// Registers Softmax, LogSoftmax, BatchNormalization, LayerNormalization,
/// InstanceNormalization, LpNormalization and MeanVarianceNormalization.
inline void register_cuda_nn(kernel_registry<cuda>& r) {
  using namespace cuda_nn;
  const auto ft = float_types();
  r.add({.domain = "", .op = "Softmax", .dtypes = ft, .make = [](const kernel_node& n) { return make_softmax(n, false); }});
  r.add({.domain = "", .op = "LogSoftmax", .dtypes = ft, .make = [](const kernel_node& n) { return make_softmax(n, true); }});
  r.add({.domain = "", .op = "BatchNormalization", .dtypes = ft, .make = [](const kernel_node& n) { return make_batch_norm(n); },
         // inference only: training_mode (opset 14) or the running statistics asked for go elsewhere
         .applies = [](const kernel_query& q) {
           if (q.attrs && get_or(*q.attrs, "training_mode", std::int64_t{0}) != 0) return false;
           // the running statistics asked for (several outputs) but for opset < 7's is_test
           return q.outputs.size() <= 1 || (q.attrs && get_or(*q.attrs, "is_test", std::int64_t{0}) != 0);
         }});
  r.add({.domain = "", .op = "LayerNormalization", .dtypes = ft, .make = [](const kernel_node& n) { return make_layer_norm(n); }});
  r.add({.domain = "", .op = "InstanceNormalization", .dtypes = ft, .make = [](const kernel_node& n) { return make_instance_norm(n); }});
  r.add({.domain = "", .op = "LpNormalization", .dtypes = ft, .make = [](const kernel_node& n) { return make_lp_normalization(n); }});
  r.add({.domain = "", .op = "MeanVarianceNormalization", .dtypes = ft, .make = [](const kernel_node& n) { return make_mvn(n); }});
}

}  // namespace gpass::exec
