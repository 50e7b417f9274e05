// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file reduce.hpp
/// The CUDA reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
/// ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare (axes as attribute or input,
/// keepdims, noop_with_empty_axes), ArgMax / ArgMin (select_last_index) and CumSum
/// (exclusive, reverse). A kernel is generated per (op, element type) and compiled by NVRTC
/// on first use.
///
/// A reduction sees its input as kept dimensions (one output element each) and reduced
/// dimensions, both read through strides (neighbouring dimensions of one kind merged). Two
/// entries: `red_block`, a block per output element whose threads stride over the reduced
/// elements and combine by warp shuffles (the reduced dimensions innermost, as in LayerNorm
/// rows [B*S, H] or global pooling [N*C, H*W], or few outputs), and `red_thread`, a thread
/// per output element (the kept dimensions innermost: neighbouring threads read neighbouring
/// elements). f16 / bf16 / f32 accumulate in float, f64 in double, integers in 64 bits
/// (wrapping as the CPU kernels' own-type sums do; means, L2 and LogSum of integer sums
/// that overflow their type may differ). Semantics and messages follow
/// `eigen_cpu/kernels/reduce.hpp`; the order in which floats are added differs.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>

namespace gpass::exec {

namespace cuda_reduce_detail {

using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using i64 = std::int64_t;

/// Most kept or reduced dimensions after merging.
inline constexpr int red_rank = 12;

/// What a Reduce* op computes.
enum class rkind { sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square };

inline std::vector<dtype> reduce_types() {
  return {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::int32, dtype::int64, dtype::uint32, dtype::uint64, dtype::int8, dtype::uint8};
}
inline std::vector<dtype> float_types() { return {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}; }
inline std::vector<dtype> numeric_types() {
  return {dtype::f32,   dtype::f64,   dtype::f16,   dtype::bf16,  dtype::int8,   dtype::int16,
          dtype::int32, dtype::int64, dtype::uint8, dtype::uint16, dtype::uint32, dtype::uint64};
}
inline std::vector<dtype> cumsum_types() {
  return {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::int32, dtype::int64, dtype::uint32, dtype::uint64};
}

/// `axis` in [-rank, rank) made non-negative (rank 0 takes axis 0); else fails naming the node.
inline i64 normalize_axis(i64 axis, i64 rank, const kernel_node& n) {
  if (axis < -rank || axis >= std::max<i64>(rank, 1))
    n.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

/// The accumulator type of element type `t`.
inline std::string acc_type(dtype t) {
  if (t == dtype::bool_) return "int";
  if (cuda_codegen::is_float(t)) return t == dtype::f64 ? "double" : "float";
  return cuda_codegen::is_signed_int(t) ? "long long" : "unsigned long long";
}

/// The lowest (`high` false) or highest value of `t` as a literal of its accumulator type.
inline std::string bound_literal(dtype t, bool high) {
  const std::string a = acc_type(t);
  if (cuda_codegen::is_float(t)) return cuda_codegen::literal(high ? 1.0 / 0.0 : -1.0 / 0.0, a);
  auto ll = [&](long long v) { return v == std::numeric_limits<long long>::min() ? std::string("(-9223372036854775807LL - 1)") : "(" + std::to_string(v) + "LL)"; };
  auto ull = [&](unsigned long long v) { return "(" + std::to_string(v) + "ULL)"; };
  switch (t) {
    case dtype::bool_: return high ? "1" : "0";
    case dtype::int8: return ll(high ? 127 : -128);
    case dtype::int16: return ll(high ? 32767 : -32768);
    case dtype::int32: return ll(high ? 2147483647LL : -2147483648LL);
    case dtype::int64: return ll(high ? std::numeric_limits<long long>::max() : std::numeric_limits<long long>::min());
    case dtype::uint8: return ull(high ? 255u : 0u);
    case dtype::uint16: return ull(high ? 65535u : 0u);
    case dtype::uint32: return ull(high ? 4294967295ull : 0u);
    case dtype::uint64: return ull(high ? std::numeric_limits<unsigned long long>::max() : 0u);
    default: break;
  }
  throw error("cuda reduce: no bounds for element type " + std::string(to_string(t)));
}

/// A generated reduction `k` over element type `t` (entries `red_thread`, `red_block`).
inline std::string reduce_source(rkind k, dtype t) {
  std::string s = cuda_codegen::cuda_prelude();
  const std::string A = acc_type(t);
  s += "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\ntypedef " + A + " A;\n";
  s += "#define G_R " + std::to_string(red_rank) + "\n";
  s += "#define G_LSE " + std::string(k == rkind::log_sum_exp ? "1" : "0") + "\n";
  // init, combine, per-element map, finish
  std::string init = "(A)0", comb = "a + b";
  switch (k) {
    case rkind::prod: init = "(A)1"; comb = "a * b"; break;
    case rkind::max: init = bound_literal(t, false); comb = "b > a ? b : a"; break;
    case rkind::min: init = bound_literal(t, true); comb = "b < a ? b : a"; break;
    default: break;
  }
  std::string map = "v";
  if (k == rkind::l1 && !cuda_codegen::is_unsigned_int(t)) map = "v < (A)0 ? (A)(-v) : v";
  if (k == rkind::l2 || k == rkind::sum_square) map = "v * v";
  if (k == rkind::log_sum_exp) map = "g_exp(v - shift)";
  std::string fin = "acc";
  const bool fl = cuda_codegen::is_float(t);
  switch (k) {
    case rkind::mean: fin = fl ? "acc / (A)count" : "count ? (A)(acc / (A)count) : (A)0"; break;
    case rkind::l2: fin = "g_sqrt((double)acc)"; break;
    case rkind::log_sum: fin = "g_log((double)acc)"; break;
    case rkind::log_sum_exp: fin = "g_log(acc) + shift"; break;
    default: break;
  }
  s += "__device__ __forceinline__ A g_init() { return " + init + "; }\n";
  s += "__device__ __forceinline__ A g_comb(A a, A b) { return " + comb + "; }\n";
  s += "__device__ __forceinline__ A g_map(A v, A shift) { (void)shift; return " + map + "; }\n";
  s += "__device__ __forceinline__ void g_fin(T* y, long long o, A acc, long long count, A shift) { (void)count; (void)shift; g_store(y, o, " +
       fin + "); }\n";
  s += "__device__ __forceinline__ A g_neg_inf() { return " + bound_literal(t, false) + "; }\n";
  s += R"(struct g_red { long long out_n, red_n, kr, rr; long long ks[G_R], kst[G_R], rs[G_R], rst[G_R]; };
__device__ __forceinline__ long long g_kept_off(const g_red& a, long long o) {
  long long off = 0;
  for (int d = (int)a.kr - 1; d >= 0; --d) { off += (o % a.ks[d]) * a.kst[d]; o /= a.ks[d]; }
  return off;
}
__device__ __forceinline__ long long g_red_off(const g_red& a, long long r) {
  if (a.rr == 1) return r * a.rst[0];
  long long off = 0;
  for (int d = (int)a.rr - 1; d >= 0; --d) { off += (r % a.rs[d]) * a.rst[d]; r /= a.rs[d]; }
  return off;
}
__device__ __forceinline__ A g_val(const T* x, long long i) { return (A)g_load(x, i); }
__device__ __forceinline__ bool g_finite(A v) { return v == v && v - v == v - v; }
__device__ __forceinline__ A g_max2(A a, A b) { return b > a ? b : a; }
__device__ __forceinline__ A g_op(int kind, A a, A b) { return kind ? g_max2(a, b) : g_comb(a, b); }
// the block's combination of every thread's `v` (kind 0: g_comb, 1: max), `id` for the unused lanes
__device__ __forceinline__ A g_block(A v, int kind, A id) {
  __shared__ A sh[32];
  for (int o = 16; o > 0; o >>= 1) v = g_op(kind, v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < nw ? sh[lane] : id;
    for (int o = 16; o > 0; o >>= 1) v = g_op(kind, v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) sh[0] = v;
  }
  __syncthreads();
  return sh[0];
}
extern "C" __global__ void red_thread(T* __restrict__ y, const T* __restrict__ x, g_red a) {
  for (long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x; o < a.out_n; o += (long long)gridDim.x * blockDim.x) {
    const T* base = x + g_kept_off(a, o);
    A shift = (A)0;
    if (G_LSE) {
      A m = g_neg_inf();
      for (long long r = 0; r < a.red_n; ++r) m = g_max2(m, g_val(base, g_red_off(a, r)));
      shift = g_finite(m) ? m : (A)0;
    }
    A acc = g_init();
    for (long long r = 0; r < a.red_n; ++r) acc = g_comb(acc, g_map(g_val(base, g_red_off(a, r)), shift));
    g_fin(y, o, acc, a.red_n, shift);
  }
}
extern "C" __global__ void red_block(T* __restrict__ y, const T* __restrict__ x, g_red a) {
  for (long long o = blockIdx.x; o < a.out_n; o += gridDim.x) {
    const T* base = x + g_kept_off(a, o);
    A shift = (A)0;
    if (G_LSE) {
      A m = g_neg_inf();
      for (long long r = threadIdx.x; r < a.red_n; r += blockDim.x) m = g_max2(m, g_val(base, g_red_off(a, r)));
      m = g_block(m, 1, g_neg_inf());
      shift = g_finite(m) ? m : (A)0;
    }
    A acc = g_init();
    for (long long r = threadIdx.x; r < a.red_n; r += blockDim.x) acc = g_comb(acc, g_map(g_val(base, g_red_off(a, r)), shift));
    acc = g_block(acc, 0, g_init());
    if (threadIdx.x == 0) g_fin(y, o, acc, a.red_n, shift);
  }
}
)";
  return s;
}

/// ArgMax (`is_max`) / ArgMin over element type `t` (entries `arg_thread`, `arg_block`).
inline std::string arg_source(dtype t, bool is_max, bool last) {
  std::string s = cuda_codegen::cuda_prelude();
  // compared in int for the 8- and 16-bit integers (the warp shuffles take 32 and 64 bits)
  const std::string C = cuda_codegen::is_int(t) && size_of(t) < 4 ? std::string("int") : std::string(cuda_codegen::compute_type(t));
  s += "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\ntypedef " + C + " C;\n";
  const std::string gt = is_max ? ">" : "<";
  // better(v, best): v (at a later index) replaces best, as the CPU kernel scans
  s += "__device__ __forceinline__ bool g_better(C v, C best) { return " +
       std::string(last ? "!(v " + std::string(is_max ? "<" : ">") + " best)" : "v " + gt + " best") + "; }\n";
  // pair(vb, ib) wins over (va, ia) at any index order: the better value, ties by index
  s += "__device__ __forceinline__ bool g_wins(C vb, long long ib, C va, long long ia) {\n"
       "  if (ia < 0) return ib >= 0;\n  if (ib < 0) return false;\n"
       "  if (vb == va) return " + std::string(last ? "ib > ia" : "ib < ia") + ";\n  return vb " + gt + " va;\n}\n";
  s += R"(extern "C" __global__ void arg_thread(long long* __restrict__ y, const T* __restrict__ x, long long outer, long long len, long long inner) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < outer * inner; i += (long long)gridDim.x * blockDim.x) {
    const long long o = i / inner, j = i % inner;
    const T* base = x + o * len * inner + j;
    C best = (C)g_load(base, 0);
    long long bi = 0;
    for (long long r = 1; r < len; ++r) {
      const C v = (C)g_load(base, r * inner);
      if (g_better(v, best)) { best = v; bi = r; }
    }
    y[i] = bi;
  }
}
extern "C" __global__ void arg_block(long long* __restrict__ y, const T* __restrict__ x, long long outer, long long len) {
  __shared__ C shv[32];
  __shared__ long long shi[32];
  for (long long o = blockIdx.x; o < outer; o += gridDim.x) {
    const T* base = x + o * len;
    C best = (C)0;
    long long bi = -1;
    for (long long r = threadIdx.x; r < len; r += blockDim.x) {
      const C v = (C)g_load(base, r);
      if (bi < 0 || g_better(v, best)) { best = v; bi = r; }
    }
    for (int s = 16; s > 0; s >>= 1) {
      const C v = __shfl_xor_sync(0xffffffffu, best, s);
      const long long k = __shfl_xor_sync(0xffffffffu, bi, s);
      if (g_wins(v, k, best, bi)) { best = v; bi = k; }
    }
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    __syncthreads();
    if (lane == 0) { shv[w] = best; shi[w] = bi; }
    __syncthreads();
    if (w == 0) {
      best = lane < nw ? shv[lane] : (C)0;
      bi = lane < nw ? shi[lane] : -1;
      for (int s = 16; s > 0; s >>= 1) {
        const C v = __shfl_xor_sync(0xffffffffu, best, s);
        const long long k = __shfl_xor_sync(0xffffffffu, bi, s);
        if (g_wins(v, k, best, bi)) { best = v; bi = k; }
      }
      if (lane == 0) y[o] = bi;
    }
  }
}
)";
  return s;
}

/// CumSum and CumProd over element type `t` (entry `cumsum`; `product` 1: running products).
inline std::string cumsum_source(dtype t) {
  std::string s = cuda_codegen::cuda_prelude();
  s += "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\ntypedef " + std::string(cuda_codegen::compute_type(t)) + " C;\n";
  s += R"(extern "C" __global__ void cumsum(T* __restrict__ y, const T* __restrict__ x, long long outer, long long len, long long inner,
                                  int exclusive, int reverse, int product) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < outer * inner; i += (long long)gridDim.x * blockDim.x) {
    const long long o = i / inner, j = i % inner;
    C acc = product ? (C)1 : (C)0;
    for (long long q = 0; q < len; ++q) {
      const long long r = reverse ? len - 1 - q : q;
      const long long off = (o * len + r) * inner + j;
      const C v = (C)g_load(x, off);
      if (exclusive) g_store(y, off, acc);
      acc = product ? (C)(acc * v) : (C)(acc + v);
      if (!exclusive) g_store(y, off, acc);
    }
  }
}
)";
  return s;
}

/// Host mirror of the device `g_red`.
struct g_red {
  long long out_n = 1, red_n = 1, kr = 0, rr = 0;
  long long ks[red_rank] = {}, kst[red_rank] = {}, rs[red_rank] = {}, rst[red_rank] = {};
};

inline const char* kind_name(rkind k) {
  switch (k) {
    case rkind::sum: return "sum";
    case rkind::mean: return "mean";
    case rkind::max: return "max";
    case rkind::min: return "min";
    case rkind::prod: return "prod";
    case rkind::l1: return "l1";
    case rkind::l2: return "l2";
    case rkind::log_sum: return "log_sum";
    case rkind::log_sum_exp: return "log_sum_exp";
    case rkind::sum_square: return "sum_square";
  }
  return "?";
}

inline fn make_reduce(const kernel_node& n, rkind k) {
  const bool keepdims = n.attr<i64>("keepdims", 1) != 0;
  const bool noop = n.attr<i64>("noop_with_empty_axes", 0) != 0;
  const bool has_attr_axes = n.has_attr("axes");
  const std::vector<i64> attr_axes = has_attr_axes ? n.attr<std::vector<i64>>("axes") : std::vector<i64>{};
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    if (!cuda_codegen::supported(t) || (k == rkind::log_sum_exp && !cuda_codegen::is_float(t)) ||
        (t == dtype::bool_ && k != rkind::max && k != rkind::min))
      ctx.fail("no CUDA kernel for element type " + std::string(to_string(t)));
    const i64 rank = static_cast<i64>(x.rank());
    std::vector<i64> axes = attr_axes;
    if (!has_attr_axes && ctx.has_input(1)) axes = cuda_detail::host_ints(ctx, 1);
    std::vector<char> mask(static_cast<std::size_t>(rank), 0);
    if (axes.empty()) {
      if (!noop) std::fill(mask.begin(), mask.end(), char{1});
    } else {
      for (i64 a : axes) {
        const i64 d = normalize_axis(a, rank, ctx.node());
        if (rank == 0) continue;
        if (mask[static_cast<std::size_t>(d)]) ctx.fail("axis " + std::to_string(a) + " is repeated in axes");
        mask[static_cast<std::size_t>(d)] = 1;
      }
    }
    // kept and reduced dimensions, neighbours of one kind merged
    std::vector<i64> out_sizes, ks, kst, rs, rst;
    const auto& sz = x.sizes();
    std::vector<i64> st(sz.size(), 1);
    for (std::size_t i = sz.size(); i-- > 1;) st[i - 1] = st[i] * sz[i];
    i64 out_n = 1, red_n = 1;
    int last_kind = -1;
    for (std::size_t d = 0; d < sz.size(); ++d) {
      if (mask[d]) {
        red_n *= sz[d];
        if (keepdims) out_sizes.push_back(1);
      } else {
        out_n *= sz[d];
        out_sizes.push_back(sz[d]);
      }
      if (sz[d] == 1) continue;
      auto& s = mask[d] ? rs : ks;
      auto& q = mask[d] ? rst : kst;
      if (last_kind == mask[d]) {
        s.back() *= sz[d];
        q.back() = st[d];
      } else {
        s.push_back(sz[d]);
        q.push_back(st[d]);
      }
      last_kind = mask[d];
    }
    cuda_tensor& y = ctx.allocate_output(0, t, out_sizes);
    if (out_n == 0) return;
    if (ks.size() > static_cast<std::size_t>(red_rank) || rs.size() > static_cast<std::size_t>(red_rank))
      ctx.fail("a reduction over more than " + std::to_string(red_rank) + " separate groups of dimensions");
    g_red a;
    a.out_n = out_n;
    a.red_n = red_n;
    a.kr = static_cast<long long>(ks.size());
    a.rr = static_cast<long long>(rs.size());
    for (std::size_t d = 0; d < ks.size(); ++d) a.ks[d] = ks[d], a.kst[d] = kst[d];
    for (std::size_t d = 0; d < rs.size(); ++d) a.rs[d] = rs[d], a.rst[d] = rst[d];
    const std::string key = std::string(kind_name(k)) + "/" + std::string(to_string(t));
    const auto& kk = lib->get(ctx.policy(), key, {"red_thread", "red_block"}, [&] { return reduce_source(k, t); });
    auto& p = ctx.policy();
    const bool inner_reduced = !rs.empty() && rst.back() == 1;
    const bool block = red_n >= 32 && (inner_reduced || out_n * 32 < red_n);
    void *yp = y.data(), *xp = x.data();
    void* args[] = {&yp, &xp, &a};
    if (block) {
      unsigned threads = 32;
      while (threads < 256 && static_cast<i64>(threads) < red_n) threads *= 2;
      if (red_n >= 16384 && out_n < p.multiprocessors() * 4) threads = 1024;
      const unsigned grid = static_cast<unsigned>(std::min<i64>(out_n, i64{1} << 24));
      p.launch(kk.kernels[1], grid, threads, args, ctx.stream());
    } else {
      p.launch(kk.kernels[0], p.blocks_for(out_n), 256, args, ctx.stream());
    }
  };
}

inline fn make_arg(const kernel_node& n, bool is_max) {
  const i64 axis_attr = n.attr<i64>("axis", 0);
  const bool keepdims = n.attr<i64>("keepdims", 1) != 0;
  const bool last = n.attr<i64>("select_last_index", 0) != 0;
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    if (!cuda_codegen::supported(t) || t == dtype::bool_) ctx.fail("no CUDA kernel for element type " + std::string(to_string(t)));
    const i64 rank = static_cast<i64>(x.rank());
    const i64 axis = normalize_axis(axis_attr, rank, ctx.node());
    std::vector<i64> out_sizes;
    long long outer = 1, len = 1, inner = 1;
    for (i64 d = 0; d < rank; ++d) {
      const i64 s = x.sizes()[static_cast<std::size_t>(d)];
      if (d != axis) out_sizes.push_back(s);
      else if (keepdims) out_sizes.push_back(1);
      if (d < axis) outer *= s;
      else if (d == axis) len = s;
      else inner *= s;
    }
    if (len == 0 && outer * inner != 0) ctx.fail("cannot take the arg of an empty axis");
    cuda_tensor& y = ctx.allocate_output(0, dtype::int64, out_sizes);
    if (outer * inner == 0) return;
    const std::string key = std::string(to_string(t));
    const auto& k = lib->get(ctx.policy(), key, {"arg_thread", "arg_block"}, [&] { return arg_source(t, is_max, last); });
    auto& p = ctx.policy();
    void *yp = y.data(), *xp = x.data();
    if (inner == 1 && len >= 64) {
      unsigned threads = 32;
      while (threads < 256 && static_cast<i64>(threads) < len) threads *= 2;
      void* args[] = {&yp, &xp, &outer, &len};
      p.launch(k.kernels[1], static_cast<unsigned>(std::min<long long>(outer, 1ll << 24)), threads, args, ctx.stream());
    } else {
      void* args[] = {&yp, &xp, &outer, &len, &inner};
      p.launch(k.kernels[0], p.blocks_for(outer * inner), 256, args, ctx.stream());
    }
  };
}

inline fn make_cumsum(const kernel_node& n, bool product = false) {
  const bool exclusive = n.attr<i64>("exclusive", 0) != 0;
  const bool reverse = n.attr<i64>("reverse", 0) != 0;
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    const auto ok = cumsum_types();
    if (std::find(ok.begin(), ok.end(), t) == ok.end()) ctx.fail("no CUDA kernel for element type " + std::string(to_string(t)));
    const auto av = cuda_detail::host_ints(ctx, 1);
    if (av.size() != 1) ctx.fail("axis must hold one value");
    const i64 rank = static_cast<i64>(x.rank());
    if (rank == 0) ctx.fail(std::string(product ? "CumProd" : "CumSum") + " needs an input of rank >= 1");
    const i64 axis = normalize_axis(av[0], rank, ctx.node());
    long long outer = 1, len = 1, inner = 1;
    for (i64 d = 0; d < rank; ++d) {
      const i64 s = x.sizes()[static_cast<std::size_t>(d)];
      if (d < axis) outer *= s;
      else if (d == axis) len = s;
      else inner *= s;
    }
    cuda_tensor& y = ctx.allocate_output(0, t, x.sizes());
    if (y.size() == 0) return;
    const auto& k = lib->get(ctx.policy(), std::string(to_string(t)), {"cumsum"}, [&] { return cumsum_source(t); });
    auto& p = ctx.policy();
    void *yp = y.data(), *xp = x.data();
    int ex = exclusive, rev = reverse, prod = product;
    void* args[] = {&yp, &xp, &outer, &len, &inner, &ex, &rev, &prod};
    p.launch(k.kernels[0], p.blocks_for(outer * inner), 256, args, ctx.stream());
  };
}

inline const std::pair<const char*, rkind> reductions[] = {
    {"ReduceSum", rkind::sum},       {"ReduceMean", rkind::mean}, {"ReduceMax", rkind::max},        {"ReduceMin", rkind::min},
    {"ReduceProd", rkind::prod},     {"ReduceL1", rkind::l1},     {"ReduceL2", rkind::l2},          {"ReduceLogSum", rkind::log_sum},
    {"ReduceLogSumExp", rkind::log_sum_exp}, {"ReduceSumSquare", rkind::sum_square},
};

/// The element types reduction `k` takes.
inline std::vector<dtype> types_of(rkind k) {
  auto types = k == rkind::log_sum_exp ? float_types() : reduce_types();
  if (k == rkind::max || k == rkind::min) types.push_back(dtype::bool_);
  return types;
}

}  // namespace cuda_reduce_detail

/// Every source the reduction kernels generate (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> reduce_generated_sources() {
  using namespace cuda_reduce_detail;
  std::vector<std::pair<std::string, std::string>> r;
  for (const auto& [name, k] : reductions)
    for (dtype t : types_of(k)) r.emplace_back(std::string(name) + "_" + std::string(to_string(t)), reduce_source(k, t));
  for (dtype t : numeric_types())
    for (int m = 0; m < 4; ++m)
      r.emplace_back(std::string(m & 1 ? "ArgMax" : "ArgMin") + (m & 2 ? "_last_" : "_") + std::string(to_string(t)), arg_source(t, m & 1, m & 2));
  for (dtype t : cumsum_types()) r.emplace_back("CumSum_" + std::string(to_string(t)), cumsum_source(t));
  return r;
}

/// Registers the CUDA reductions, ArgMax / ArgMin, CumSum and CumProd.
inline void register_cuda_reduce(kernel_registry<cuda>& r) {
  using namespace cuda_reduce_detail;
  for (const auto& [name, k] : reductions) {
    const rkind kind = k;
    r.add({.op = name, .dtypes = types_of(kind), .make = [kind](const kernel_node& n) -> fn { return make_reduce(n, kind); }});
  }
  r.add({.op = "ArgMax", .dtypes = numeric_types(), .make = [](const kernel_node& n) -> fn { return make_arg(n, true); }});
  r.add({.op = "ArgMin", .dtypes = numeric_types(), .make = [](const kernel_node& n) -> fn { return make_arg(n, false); }});
  r.add({.op = "CumSum", .dtypes = cumsum_types(), .make = [](const kernel_node& n) -> fn { return make_cumsum(n); }});
  r.add({.op = "CumProd", .since_version = 26, .dtypes = cumsum_types(), .make = [](const kernel_node& n) -> fn { return make_cumsum(n, true); }});
}

}  // namespace gpass::exec
