// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file norm.hpp
/// The CUDA kernels of ONNX RMSNormalization and GroupNormalization (a block per normalized
/// row or group), LRN (a thread per element summing its channel window), Hardmax (a block per
/// row, or a thread per column when the axis is not the last), RotaryEmbedding (a thread per
/// element) and Dropout in inference form (output 0 the input itself, the mask all true), for
/// f16, bf16, f32 and f64, generated and compiled by NVRTC on first use.
///
/// Semantics follow the Eigen CPU kernels (`eigen_cpu/kernels/attention.hpp`,
/// `eigen_cpu/kernels/nn.hpp`, `eigen_cpu/kernels/elementwise.hpp`), including where they round:
/// RMSNormalization and GroupNormalization (version 21) round each intermediate to
/// `stash_type`, GroupNormalization version 18 to X's type; the normalized value is rounded
/// to X's type before the scale multiplies it. Sums are accumulated in the stash type's
/// compute type (float, or double for f64), where the CPU kernel accumulates in double.
///
/// Differences from the CPU kernels, by design of the CUDA policy: RotaryEmbedding checks
/// position_ids against the caches on the host only when they are a constant of the plan (as
/// the CUDA Gather checks its indices); a run-time position id out of range writes zeros in
/// the rotated part of its row instead of failing. Dropout with a training_mode input is left
/// to the CPU (`applies`); should one reach the kernel anyway, a true training_mode with a
/// nonzero ratio fails.

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
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/nn_rules.hpp>

namespace gpass::exec {

namespace cuda_norm {

using i64 = std::int64_t;
using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using cuda_nn::axis_rows;
using cuda_nn::check_float;
using cuda_nn::float_types;
using cuda_nn::normalize_axis;
using cuda_nn::prod;

/// stash_type as a float dtype (an ONNX TensorProto data type number; others fail naming the node).
inline dtype stash_type_attr(const kernel_node& n) { return nn_rules::float_type_attr(n.attr<i64>("stash_type", 1), n, "stash_type"); }

/// A device function `name(W v)`: `v` rounded to element type `t` and back to the compute type W.
inline std::string round_function(const char* name, dtype t) {
  std::string body;
  switch (t) {
    case dtype::f64: body = "return v;"; break;
    case dtype::f32: body = "return (W)(float)v;"; break;
    case dtype::f16: body = "return (W)g_to_float(g_to_half((float)v));"; break;
    case dtype::bf16: body = "return (W)g_to_float(g_to_bf16((float)v));"; break;
    default: throw error("cuda norm: no rounding to " + std::string(to_string(t)));
  }
  return "__device__ __forceinline__ W " + std::string(name) + "(W v) { " + body + " }\n";
}

/// The common head of a normalization library: the prelude, X's storage type T, the
/// compute type W (double when X or the stash type is f64, else float), the block reduction,
/// `g_st` (round to the stash type) and `g_rt` (round to X's type).
inline std::string head(dtype t, dtype stash) {
  const bool wide = t == dtype::f64 || stash == dtype::f64;
  return cuda_codegen::cuda_prelude() + "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\ntypedef " +
         (wide ? "double" : "float") + " W;\n" + cuda_nn::block_reduce_source() + round_function("g_st", stash) +
         round_function("g_rt", t);
}

/// Threads per block for rows of `n` elements (a multiple of 32, at most 256).
inline unsigned row_threads(i64 n) { return n <= 32 ? 32u : n <= 64 ? 64u : n <= 128 ? 128u : 256u; }

/// Blocks for `rows` rows, a block each (grid-stride beyond 65535).
inline unsigned row_blocks(i64 rows) { return static_cast<unsigned>(std::clamp<i64>(rows, 1, 65535)); }

// ---- RMSNormalization -------------------------------------------------------------------------

/// How a broadcast operand is read against X (host mirror of the device `g_bc`): X's
/// dimensions merged where the operand walks them the same way, the operand's stride of each
/// (0 where it broadcasts).
struct g_bc {
  long long rank = 0;
  long long sizes[cuda_codegen::max_rank] = {};
  long long st[cuda_codegen::max_rank] = {};
};

inline const char* bc_source() {
  return R"(struct g_bc { long long rank; long long sizes[8]; long long st[8]; };
__device__ __forceinline__ long long g_bc_off(const g_bc& b, long long i) {
  long long off = 0;
  for (int d = (int)b.rank - 1; d >= 0; --d) {
    const long long c = i % b.sizes[d];
    i /= b.sizes[d];
    off += c * b.st[d];
  }
  return off;
}
)";
}

/// The view of an operand of `sizes` that broadcasts (right-aligned) to X's `x` sizes.
inline g_bc broadcast_view(const context& ctx, const std::vector<i64>& x, const std::vector<i64>& sizes) {
  static_assert(cuda_codegen::max_rank == 8, "the device struct g_bc holds 8 dimensions");
  const std::size_t rank = x.size(), off = rank - sizes.size();
  std::vector<i64> st(rank, 0);
  i64 stride = 1;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    st[off + d] = sizes[d] == 1 ? 0 : stride;
    stride *= sizes[d];
  }
  std::vector<i64> ms, mst;
  for (std::size_t d = 0; d < rank; ++d) {
    if (x[d] == 1) continue;
    if (!ms.empty() && mst.back() == st[d] * x[d]) {
      ms.back() *= x[d];
      mst.back() = st[d];
    } else {
      ms.push_back(x[d]);
      mst.push_back(st[d]);
    }
  }
  if (ms.size() > static_cast<std::size_t>(cuda_codegen::max_rank))
    ctx.fail("broadcasting over " + std::to_string(ms.size()) + " dimensions that cannot be merged (the CUDA kernels take " +
             std::to_string(cuda_codegen::max_rank) + ")");
  g_bc b;
  if (ms.empty()) {  // every size 1 (or X a scalar): one element
    b.rank = 1;
    b.sizes[0] = 1;
    return b;
  }
  b.rank = static_cast<long long>(ms.size());
  for (std::size_t d = 0; d < ms.size(); ++d) {
    b.sizes[d] = ms[d];
    b.st[d] = mst[d];
  }
  return b;
}

/// `rms_rows(x, scale, y, rows, n, eps, b)`: a block per row of n; the scale read at
/// `g_bc_off(b, element)`; S the scale's storage type.
inline std::string rms_source(dtype t, dtype s, dtype stash) {
  return head(t, stash) + "typedef " + std::string(cuda_codegen::storage_type(s)) + " S;\n" + bc_source() +
         R"(extern "C" __global__ void rms_rows(const T* __restrict__ x, const S* __restrict__ sc, T* __restrict__ y, long long rows, long long n,
    double eps, g_bc b) {
  __shared__ W sh[33];
  const W e = g_st((W)eps);
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    W acc = 0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
      const W xu = g_st((W)g_load(xr, i));
      acc += g_st(xu * xu);
    }
    acc = g_block_reduce<0>(acc, sh);
    const W ms = g_st(n ? acc / (W)n : (W)0);
    const W rms = g_st(g_sqrt(g_st(ms + e)));
    T* yr = y + r * n;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
      const W xu = g_st((W)g_load(xr, i));
      const W nv = g_rt(g_st(xu / rms));
      g_store(yr, i, nv * g_load(sc, g_bc_off(b, r * n + i)));
    }
  }
}
)";
}

inline fn make_rms_norm(const kernel_node& n) {
  const i64 axis_attr = n.attr<i64>("axis", -1);
  const double eps = n.attr<double>("epsilon", 1e-5);
  const dtype stash = stash_type_attr(n);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& sc = ctx.input(1);
    check_float(ctx, x, "X");
    check_float(ctx, sc, "scale");
    const auto& s = x.sizes();
    const i64 rank = static_cast<i64>(s.size());
    if (rank == 0) ctx.fail("X must have rank >= 1");
    const std::size_t a = static_cast<std::size_t>(normalize_axis(ctx, axis_attr, rank));
    const i64 outer = prod(s, 0, a), inner = prod(s, a, s.size());
    // scale broadcasts (unidirectionally) to X
    const auto& ss = sc.sizes();
    bool fits = ss.size() <= s.size();
    for (std::size_t i = 0; fits && i < ss.size(); ++i) {
      const i64 d = ss[i], want = s[s.size() - ss.size() + i];
      fits = d == 1 || d == want;
    }
    if (!fits) ctx.fail("scale " + sc.shape().to_string() + " does not broadcast to X " + x.shape().to_string());
    const dtype t = x.element_type();
    auto& y = ctx.allocate_output(0, t, s);
    if (y.size() == 0) return;
    g_bc b = broadcast_view(ctx, s, ss);
    auto& pol = ctx.policy();
    const dtype st = sc.element_type();
    const auto& k = lib->get(pol, std::string(to_string(t)) + "," + std::string(to_string(st)) + "," + std::string(to_string(stash)),
                             {"rms_rows"}, [&] { return rms_source(t, st, stash); });
    const void* xp = x.data();
    const void* sp = sc.data();
    void* yp = y.data();
    long long rr = outer, nn = inner;
    double e = static_cast<double>(static_cast<float>(eps));  // the CPU kernel's epsilon: a float attribute
    void* args[] = {&xp, &sp, &yp, &rr, &nn, &e, &b};
    pol.launch(k.kernels[0], row_blocks(outer), row_threads(inner), args, ctx.stream());
  };
}

// ---- GroupNormalization -----------------------------------------------------------------------

/// `gn_rows(x, scale, bias, y, rows, len, groups, cpg, inner, per_channel, eps)`: a block per
/// group of len = cpg * inner contiguous elements; scale and bias per channel or per group.
inline std::string group_norm_source(dtype t, dtype s, dtype bt, dtype stash) {
  return head(t, stash) + "typedef " + std::string(cuda_codegen::storage_type(s)) + " S;\ntypedef " +
         std::string(cuda_codegen::storage_type(bt)) + " B;\n" +
         R"(extern "C" __global__ void gn_rows(const T* __restrict__ x, const S* __restrict__ sc, const B* __restrict__ bi, T* __restrict__ y,
    long long rows, long long len, long long groups, long long cpg, long long inner, int per_channel, double eps) {
  __shared__ W sh[33];
  const W e = g_st((W)eps);
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const long long g = r % groups;
    const T* xg = x + r * len;
    T* yg = y + r * len;
    W sum = 0;
    for (long long i = threadIdx.x; i < len; i += blockDim.x) sum += g_st((W)g_load(xg, i));
    sum = g_block_reduce<0>(sum, sh);
    const W mean = g_st(len ? sum / (W)len : (W)0);
    W var = 0;
    for (long long i = threadIdx.x; i < len; i += blockDim.x) {
      const W d = g_st((W)g_load(xg, i)) - mean;
      var += d * d;
    }
    var = g_block_reduce<0>(var, sh);
    var = g_st(len ? var / (W)len : (W)0);
    const W sd = g_st(g_sqrt(g_st(var + e)));
    for (long long i = threadIdx.x; i < len; i += blockDim.x) {
      const long long p = per_channel ? g * cpg + i / inner : g;
      const W xu = g_st((W)g_load(xg, i));
      const W nv = g_rt(g_st(g_st(xu - mean) / sd));
      g_store(yg, i, g_rt((W)(g_load(sc, p) * nv)) + g_load(bi, p));
    }
  }
}
)";
}

inline fn make_group_norm(const kernel_node& n) {
  const i64 groups = n.attr<i64>("num_groups");
  if (groups <= 0) n.fail("num_groups must be positive, got " + std::to_string(groups));
  const double eps = n.attr<double>("epsilon", 1e-5);
  // version 21 (opset 21 on): scale and bias per channel and stash_type; 18: per group, in X's type
  const bool per_channel = n.opset == 0 || n.opset >= 21;
  const dtype stash_attr = per_channel ? stash_type_attr(n) : dtype::undefined;
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    check_float(ctx, x, "X");
    const auto& s = x.sizes();
    if (s.size() < 2) ctx.fail("X must have rank >= 2 (N x C x ...), got " + x.shape().to_string());
    const i64 N = s[0], Cn = s[1], inner = prod(s, 2, s.size());
    if (Cn % groups != 0)
      ctx.fail("the number of channels " + std::to_string(Cn) + " is not a multiple of num_groups " + std::to_string(groups));
    const i64 per = per_channel ? Cn : groups;
    for (std::size_t k = 1; k < 3; ++k) {
      check_float(ctx, ctx.input(k), "scale and bias");
      if (ctx.input(k).size() != per)
        ctx.fail(std::string(k == 1 ? "scale" : "bias") + " must have " + std::to_string(per) +
                 (per_channel ? " elements (one per channel), got " : " elements (one per group), got ") +
                 ctx.input(k).shape().to_string());
    }
    const dtype t = x.element_type();
    const dtype stash = per_channel ? stash_attr : t;
    auto& y = ctx.allocate_output(0, t, s);
    if (y.size() == 0) return;
    const cuda_tensor &sc = ctx.input(1), &bi = ctx.input(2);
    const dtype st = sc.element_type(), bt = bi.element_type();
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol,
                             std::string(to_string(t)) + "," + std::string(to_string(st)) + "," + std::string(to_string(bt)) + "," +
                                 std::string(to_string(stash)),
                             {"gn_rows"}, [&] { return group_norm_source(t, st, bt, stash); });
    const i64 cpg = Cn / groups, len = cpg * inner, rows = N * groups;
    const void* xp = x.data();
    const void* sp = sc.data();
    const void* bp = bi.data();
    void* yp = y.data();
    long long rr = rows, ll = len, gg = groups, cc = cpg, ii = inner;
    int pc = per_channel ? 1 : 0;
    double e = static_cast<double>(static_cast<float>(eps));  // the CPU kernel's epsilon: a float attribute
    void* args[] = {&xp, &sp, &bp, &yp, &rr, &ll, &gg, &cc, &ii, &pc, &e};
    pol.launch(k.kernels[0], row_blocks(rows), row_threads(len), args, ctx.stream());
  };
}

// ---- LRN --------------------------------------------------------------------------------------

/// `lrn(x, y, total, C, inner, lo, hi, alpha_over_size, bias, neg_beta)`: a thread per element
/// of [N, C, inner]: x * (bias + alpha / size * sum of the squares of channels [c - lo, c + hi])
/// ^ -beta, in the compute type.
inline std::string lrn_source(dtype t) {
  return cuda_nn::head(t) + R"(extern "C" __global__ void lrn(const T* __restrict__ x, T* __restrict__ y, long long total, long long C,
    long long inner, long long lo, long long hi, double as, double bias, double nbeta) {
  const W a = (W)as, b = (W)bias, p = (W)nbeta;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const long long j = i % inner, u = i / inner, c = u % C, base = (u - c) * inner + j;
    const long long k0 = c - lo > 0 ? c - lo : 0, k1 = c + hi < C - 1 ? c + hi : C - 1;
    W acc = 0;
    for (long long k = k0; k <= k1; ++k) {
      const W v = (W)g_load(x, base + k * inner);
      acc += v * v;
    }
    g_store(y, i, (W)g_load(x, i) * g_pow(b + a * acc, p));
  }
}
)";
}

inline fn make_lrn(const kernel_node& n) {
  const double alpha = n.attr<double>("alpha", 1e-4);
  const double beta = n.attr<double>("beta", 0.75);
  const double bias = n.attr<double>("bias", 1.0);
  const i64 size = n.attr<i64>("size");
  if (size <= 0) n.fail("size must be positive, got " + std::to_string(size));
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    check_float(ctx, x, "input");
    const auto& s = x.sizes();
    if (s.size() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got rank " + std::to_string(s.size()));
    const i64 C = s[1], inner = prod(s, 2, s.size());
    const dtype t = x.element_type();
    auto& y = ctx.allocate_output(0, t, s);
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, std::string(to_string(t)), {"lrn"}, [&] { return lrn_source(t); });
    const void* xp = x.data();
    void* yp = y.data();
    long long total = y.size(), cc = C, ii = inner, lo = (size - 1) / 2, hi = size - 1 - lo;  // floor / ceil of (size-1)/2
    double as = alpha / static_cast<double>(size), b = bias, nb = -beta;
    void* args[] = {&xp, &yp, &total, &cc, &ii, &lo, &hi, &as, &b, &nb};
    pol.launch(k.kernels[0], pol.blocks_for(total), 256, args, ctx.stream());
  };
}

// ---- Hardmax ----------------------------------------------------------------------------------

/// `hmax_rows(x, y, rows, n)`: a block per contiguous row; `hmax_cols(x, y, outer, n, inner)`:
/// a thread per column of a [outer, n, inner] view. Both pick what the CPU kernel's scan
/// `if (x[i] > x[best]) best = i` picks: the first maximum, NaN never greater; a NaN first
/// element stays the pick.
inline std::string hardmax_source(dtype t) {
  return cuda_nn::head(t) + R"(// (v, i): the better of the two candidates; i < 0: none; equal values: the lower index
__device__ __forceinline__ void g_hm_pick(W& v, long long& i, W ov, long long oi) {
  if (oi < 0) return;
  if (i < 0 || ov > v || (!(v > ov) && oi < i)) {
    v = ov;
    i = oi;
  }
}
extern "C" __global__ void hmax_rows(const T* __restrict__ x, T* __restrict__ y, long long rows, long long n) {
  __shared__ W sv[32];
  __shared__ long long si[33];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * n;
    W v = 0;
    long long bi = -1;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
      const W a = (W)g_load(xr, i);
      if (!g_isnan(a) && (bi < 0 || a > v)) {
        v = a;
        bi = i;
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      const W ov = __shfl_down_sync(0xffffffffu, v, o);
      const long long oi = __shfl_down_sync(0xffffffffu, bi, o);
      g_hm_pick(v, bi, ov, oi);
    }
    __syncthreads();
    if (lane == 0) {
      sv[w] = v;
      si[w] = bi;
    }
    __syncthreads();
    if (w == 0) {
      v = lane < nw ? sv[lane] : (W)0;
      bi = lane < nw ? si[lane] : -1;
      for (int o = 16; o > 0; o >>= 1) {
        const W ov = __shfl_down_sync(0xffffffffu, v, o);
        const long long oi = __shfl_down_sync(0xffffffffu, bi, o);
        g_hm_pick(v, bi, ov, oi);
      }
      if (lane == 0) si[32] = bi < 0 || g_isnan((W)g_load(xr, 0)) ? 0 : bi;
    }
    __syncthreads();
    const long long best = si[32];
    T* yr = y + r * n;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) g_store(yr, i, i == best ? (W)1 : (W)0);
  }
}
extern "C" __global__ void hmax_cols(const T* __restrict__ x, T* __restrict__ y, long long outer, long long n, long long inner) {
  const long long total = outer * inner;
  for (long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x; u < total; u += (long long)gridDim.x * blockDim.x) {
    const long long o = u / inner, j = u - o * inner;
    const T* xc = x + o * n * inner + j;
    T* yc = y + o * n * inner + j;
    long long best = 0;
    W bv = (W)g_load(xc, 0);
    for (long long i = 1; i < n; ++i) {
      const W a = (W)g_load(xc, i * inner);
      if (a > bv) {
        bv = a;
        best = i;
      }
    }
    for (long long i = 0; i < n; ++i) g_store(yc, i * inner, i == best ? (W)1 : (W)0);
  }
}
)";
}

inline fn make_hardmax(const kernel_node& n) {
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
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, std::string(to_string(t)), {"hmax_rows", "hmax_cols"}, [&] { return hardmax_source(t); });
    const void* xp = x.data();
    void* yp = y.data();
    long long oo = outer, nn = len, ii = inner;
    if (inner == 1) {
      void* args[] = {&xp, &yp, &oo, &nn};
      pol.launch(k.kernels[0], row_blocks(outer), row_threads(len), args, ctx.stream());
    } else {
      void* args[] = {&xp, &yp, &oo, &nn, &ii};
      pol.launch(k.kernels[1], pol.blocks_for(outer * inner), 256, args, ctx.stream());
    }
  };
}

// ---- RotaryEmbedding --------------------------------------------------------------------------

/// What `rope` reads (host mirror of the device `g_rope`): X as (B, H, S, D) when `four`, else
/// (B, S, H * D); the rotated size and its half; the caches' rows (max_pos with position ids).
struct g_rope {
  long long total = 0, B = 0, S = 0, H = 0, D = 0, rot = 0, half = 0, max_pos = 0;
  int four = 0, interleaved = 0, pos64 = 0;
};

/// `rope(x, cos, sin, pos, y, a)`: a thread per element of X; pos (int32 or int64, `a.pos64`)
/// may be null: the caches are then (B, S, half).
inline std::string rotary_source(dtype t) {
  return cuda_nn::head(t) + round_function("g_rt", t) +
         R"(struct g_rope { long long total, B, S, H, D, rot, half, max_pos; int four, interleaved, pos64; };
extern "C" __global__ void rope(const T* __restrict__ x, const T* __restrict__ cs, const T* __restrict__ sn, const void* __restrict__ pos,
    T* __restrict__ y, g_rope a) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < a.total; i += (long long)gridDim.x * blockDim.x) {
    const long long d = i % a.D;
    if (d >= a.rot) {
      y[i] = x[i];
      continue;
    }
    long long b, q;
    if (a.four) {
      q = (i / a.D) % a.S;
      b = i / (a.D * a.S * a.H);
    } else {
      q = (i / (a.D * a.H)) % a.S;
      b = i / (a.D * a.H * a.S);
    }
    long long row = b * a.S + q;
    if (pos) {
      row = a.pos64 ? ((const long long*)pos)[row] : (long long)((const int*)pos)[row];
      if (row < 0 || row >= a.max_pos) {  // out of range (checked on the host when constant)
        g_store(y, i, (W)0);
        continue;
      }
    }
    const bool second = a.interleaved ? (d & 1) != 0 : d >= a.half;
    const long long j = a.interleaved ? d >> 1 : (second ? d - a.half : d);
    const long long i1 = a.interleaved ? 2 * j : j, i2 = a.interleaved ? 2 * j + 1 : j + a.half;
    const long long base = i - d;
    const W c = (W)g_load(cs, row * a.half + j), s = (W)g_load(sn, row * a.half + j);
    const W x1 = (W)g_load(x, base + i1), x2 = (W)g_load(x, base + i2);
    g_store(y, i, second ? g_rt(s * x1) + g_rt(c * x2) : g_rt(c * x1) - g_rt(s * x2));
  }
}
)";
}

inline fn make_rotary(const kernel_node& n) {
  const bool interleaved = n.attr<i64>("interleaved", 0) != 0;
  const i64 num_heads = n.attr<i64>("num_heads", 0);
  const i64 rot_attr = n.attr<i64>("rotary_embedding_dim", 0);
  if (rot_attr < 0) n.fail("rotary_embedding_dim must not be negative, got " + std::to_string(rot_attr));
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor &cs = ctx.input(1), &sn = ctx.input(2);
    check_float(ctx, x, "X");
    const auto& s = x.sizes();
    if (x.rank() != 3 && x.rank() != 4) ctx.fail("X must be 3-D or 4-D, got " + x.shape().to_string());
    for (const cuda_tensor* t : {&cs, &sn})
      if (t->element_type() != x.element_type())
        ctx.fail("cos_cache and sin_cache must have X's element type " + std::string(to_string(x.element_type())));
    g_rope a;
    a.B = s[0];
    if (x.rank() == 4) {
      a.H = s[1];
      a.S = s[2];
      a.D = s[3];
    } else {
      if (num_heads <= 0) ctx.fail("a 3-D X needs a positive attribute num_heads");
      if (s[2] % num_heads != 0)
        ctx.fail("X's hidden size " + std::to_string(s[2]) + " is not a multiple of num_heads " + std::to_string(num_heads));
      a.H = num_heads;
      a.S = s[1];
      a.D = s[2] / num_heads;
    }
    a.rot = rot_attr == 0 ? a.D : rot_attr;
    if (a.rot > a.D) ctx.fail("rotary_embedding_dim " + std::to_string(a.rot) + " is larger than the head size " + std::to_string(a.D));
    if (a.rot % 2 != 0) ctx.fail("the rotated size " + std::to_string(a.rot) + " must be even");
    a.half = a.rot / 2;
    const bool pos = ctx.has_input(3);
    const std::size_t cache_rank = pos ? 2 : 3;
    for (const cuda_tensor* t : {&cs, &sn}) {
      if (t->rank() != cache_rank || t->sizes().back() != a.half)
        ctx.fail(std::string("cos_cache and sin_cache must be ") + (pos ? "(max_position, " : "(batch, seq, ") + std::to_string(a.half) +
                 ") " + (pos ? "with position_ids" : "without position_ids") + ", got " + t->shape().to_string());
      if (t->sizes() != cs.sizes()) ctx.fail("cos_cache and sin_cache must have the same shape");
    }
    const void* pp = nullptr;
    if (pos) {
      const cuda_tensor& p = ctx.input(3);
      if (p.rank() != 2 || p.sizes()[0] != a.B || p.sizes()[1] != a.S)
        ctx.fail("position_ids must be (batch, seq) = (" + std::to_string(a.B) + ", " + std::to_string(a.S) + "), got " +
                 p.shape().to_string());
      if (p.element_type() != dtype::int64 && p.element_type() != dtype::int32)
        ctx.fail("position_ids must be int32 or int64, got " + std::string(to_string(p.element_type())));
      a.max_pos = cs.sizes()[0];
      if (ctx.node().constant_input(3))  // checked on the host only when the plan knows them (no synchronization)
        for (i64 id : cuda_detail::host_ints(ctx, 3))
          if (id < 0 || id >= a.max_pos)
            ctx.fail("position id " + std::to_string(id) + " is out of range [0, " + std::to_string(a.max_pos) + ") of the caches");
      a.pos64 = p.element_type() == dtype::int64 ? 1 : 0;
      pp = p.data();
    } else if (cs.sizes()[0] != a.B || cs.sizes()[1] != a.S) {
      ctx.fail("cos_cache and sin_cache must be (batch, seq, rotary_dim / 2) = (" + std::to_string(a.B) + ", " + std::to_string(a.S) +
               ", " + std::to_string(a.half) + "), got " + cs.shape().to_string());
    }
    const dtype t = x.element_type();
    auto& y = ctx.allocate_output(0, t, s);
    if (y.size() == 0) return;
    a.total = y.size();
    a.four = x.rank() == 4 ? 1 : 0;
    a.interleaved = interleaved ? 1 : 0;
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, std::string(to_string(t)), {"rope"}, [&] { return rotary_source(t); });
    const void* xp = x.data();
    const void* cp = cs.data();
    const void* sp = sn.data();
    void* yp = y.data();
    void* args[] = {&xp, &cp, &sp, &pp, &yp, &a};
    pol.launch(k.kernels[0], pol.blocks_for(a.total), 256, args, ctx.stream());
  };
}

// ---- Dropout (inference) ----------------------------------------------------------------------

/// The library that fills a tensor of `t` with ones (true): an element-wise kernel of no input.
inline std::string ones_source(dtype t) { return cuda_codegen::elementwise_source({{}, t, t == dtype::bool_ ? "r = true;" : "r = 1;"}); }

inline fn make_dropout(const kernel_node& n) {
  const int opset = n.opset;
  auto lib = std::make_shared<lazy_library>();
  return [opset, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    check_float(ctx, x, "data");
    if (opset == 0 || opset >= 12) {
      if (ctx.has_input(1)) {
        const cuda_tensor& rt = ctx.input(1);
        if (rt.size() != 1) ctx.fail("ratio must be a scalar");
        check_float(ctx, rt, "ratio");
      }
      if (ctx.has_input(2)) {  // the placer leaves such nodes to the CPU; here only inference runs
        const cuda_tensor& tm = ctx.input(2);
        if (tm.element_type() != dtype::bool_ || tm.size() != 1) ctx.fail("training_mode must be a bool scalar");
        const gpass::tensor h = cuda_detail::host_value(ctx, 2);
        if (h.data<bool>()[0]) {
          double ratio = 0.5;
          if (ctx.has_input(1)) {
            const gpass::tensor r = cuda_detail::host_value(ctx, 1);
            ratio = visit_dtype(r.element_type(), [&]<class T>() -> double {
              if constexpr (std::is_arithmetic_v<T>) return static_cast<double>(r.data<T>()[0]);
              else if constexpr (std::is_constructible_v<float, T>) return static_cast<double>(static_cast<float>(r.data<T>()[0]));
              else return 0.5;
            });
          }
          if (ratio != 0) ctx.fail("the CUDA kernel runs Dropout in inference only (training_mode true): training mode runs on the CPU");
        }
      }
    }
    ctx.set_output(0, ctx.input_value(0));
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
      const dtype mt = opset > 0 && opset < 10 ? x.element_type() : dtype::bool_;  // opset < 10: the mask in the input's type
      auto& m = ctx.allocate_output(1, mt, x.sizes());
      if (m.size() == 0) return;
      const auto& k = lib->get(ctx.policy(), std::string(to_string(mt)), {"ew_flat", "ew_strided"}, [&] { return ones_source(mt); });
      cuda_detail::launch_elementwise(ctx, k, m, {});
    }
  };
}

/// Every generated source of this family for representative types and attributes: (name, source).
inline std::vector<std::pair<std::string, std::string>> norm_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : float_types()) {
    const std::string ts(to_string(t));
    r.emplace_back("rms_norm_" + ts, rms_source(t, t, dtype::f32));
    r.emplace_back("rms_norm_f32scale_stash_" + ts, rms_source(t, dtype::f32, t));
    r.emplace_back("group_norm_" + ts, group_norm_source(t, t, t, dtype::f32));
    r.emplace_back("group_norm_v18_" + ts, group_norm_source(t, t, t, t));
    r.emplace_back("group_norm_f64params_" + ts, group_norm_source(t, dtype::f64, dtype::f16, dtype::f64));
    r.emplace_back("lrn_" + ts, lrn_source(t));
    r.emplace_back("hardmax_" + ts, hardmax_source(t));
    r.emplace_back("rotary_" + ts, rotary_source(t));
    r.emplace_back("dropout_mask_" + ts, ones_source(t));
  }
  r.emplace_back("dropout_mask_bool", ones_source(dtype::bool_));
  return r;
}

}  // namespace cuda_norm

/// Registers RMSNormalization (opset 23), GroupNormalization (18; per-channel scale and bias
/// and stash_type from 21), LRN, Hardmax, RotaryEmbedding (23) and Dropout without a
/// training_mode input.
inline void register_cuda_norm(kernel_registry<cuda>& r) {
  using namespace cuda_norm;
  const auto ft = float_types();
  r.add({.domain = "", .op = "RMSNormalization", .since_version = 23, .dtypes = ft, .make = make_rms_norm});
  r.add({.domain = "", .op = "GroupNormalization", .since_version = 18, .dtypes = ft, .make = make_group_norm});
  r.add({.domain = "", .op = "LRN", .dtypes = ft, .make = make_lrn});
  r.add({.domain = "", .op = "Hardmax", .dtypes = ft, .make = make_hardmax});
  r.add({.domain = "", .op = "RotaryEmbedding", .since_version = 23, .dtypes = ft, .make = make_rotary});
  // inference only: a node with a training_mode input (opset 12 on) runs where the CPU kernel does
  r.add({.domain = "", .op = "Dropout", .dtypes = ft, .alias_input = 0, .make = make_dropout, .applies = [](const kernel_query& q) {
           return q.inputs.size() < 3 || q.inputs[2] == dtype::undefined;
         }});
}

}  // namespace gpass::exec
