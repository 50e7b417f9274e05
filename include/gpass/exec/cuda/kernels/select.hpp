// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file select.hpp
/// The CUDA selection kernels: TopK and NonZero, for every element type the generated
/// kernels handle (TopK: the numeric ones).
///
/// - TopK sorts each row along the axis by a bitonic network over (key, index) pairs in
///   scratch memory (the row padded to a power of two): the key is an order-preserving
///   unsigned image of the value (-0 as +0, every NaN the largest value, as the CPU kernel
///   orders them), complemented for `largest`, so equal values keep the lower index first.
///   One launch per stage of the network; the first k of each row are then gathered from the
///   input (values bit for bit) with their int64 indices.
/// - NonZero counts the non-zero elements per block of a contiguous chunk, reads the counts
///   back (the output's size depends on them), and each block writes the coordinates of its
///   chunk in order (a block-wide prefix sum per tile).
///
/// Semantics and error messages follow the Eigen CPU kernels (`eigen_cpu/kernels/array.hpp`).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/error.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec {

namespace cuda_select {

using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using i64 = std::int64_t;

/// The element types TopK takes (numeric).
inline std::vector<dtype> topk_types() {
  return {dtype::f16,   dtype::bf16,  dtype::f32,    dtype::f64,    dtype::int8,   dtype::int16,
          dtype::int32, dtype::int64, dtype::uint8,  dtype::uint16, dtype::uint32, dtype::uint64};
}
/// The element types NonZero takes (every type with a device form).
inline std::vector<dtype> nonzero_types() {
  std::vector<dtype> r = topk_types();
  r.push_back(dtype::bool_);
  return r;
}

/// `g_key(W)`: an unsigned image of a value of element type `t` that sorts as the value does
/// (-0 as +0, every NaN the largest, as the CPU kernels order them); TopK's and Unique's.
inline std::string key_source(dtype t) {
  std::string s;
  if (cuda_codegen::is_float(t)) {
    s += R"(__device__ __forceinline__ unsigned long long g_key(W w) {
  const double v = (double)w;
  if (v != v) return 0xffffffffffffffffull;  // every NaN: the largest
  if (v == 0.0) return 0x8000000000000000ull;  // -0 and +0 are equal
  const unsigned long long u = (unsigned long long)__double_as_longlong(v);
  return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}
)";
  } else if (cuda_codegen::is_signed_int(t)) {
    s += "__device__ __forceinline__ unsigned long long g_key(W w) { return (unsigned long long)(long long)w ^ 0x8000000000000000ull; }\n";
  } else {
    s += "__device__ __forceinline__ unsigned long long g_key(W w) { return (unsigned long long)w; }\n";
  }
  return s;
}

/// `g_block_scan(f, &total)`: the exclusive prefix sum of `f` over the block's threads (a
/// multiple of 32 of them, every one calling it), and in `total` the block's sum: within each
/// warp by shuffles, then over the warps.
inline std::string block_scan_source() {
  return R"(__device__ int g_block_scan(int f, int* total) {
  __shared__ int warp_sum[32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  int v = f;
  for (int o = 1; o < 32; o <<= 1) {
    const int u = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += u;
  }
  if (lane == 31) warp_sum[w] = v;
  __syncthreads();
  if (w == 0) {
    int s = lane < nw ? warp_sum[lane] : 0;
    for (int o = 1; o < 32; o <<= 1) {
      const int u = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o) s += u;
    }
    if (lane < nw) warp_sum[lane] = s;  // inclusive over the warps
  }
  __syncthreads();
  const int before = (w > 0 ? warp_sum[w - 1] : 0) + v - f;
  *total = warp_sum[nw - 1];
  __syncthreads();  // (warp_sum is the next call's)
  return before;
}
)";
}

/// The TopK library of element type `t`: `topk_keys` (rows of (key, index) pairs, padded),
/// `topk_stage` (one compare-exchange stage of the bitonic network), `topk_out` (the first k
/// of each row into the values and indices outputs).
inline std::string topk_source(dtype t) {
  const std::string T(cuda_codegen::storage_type(t)), W(cuda_codegen::compute_type(t));
  std::string s = cuda_codegen::cuda_prelude();
  s += "typedef " + T + " T;\ntypedef " + W + " W;\n";
  s += key_source(t);
  s += R"(#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x * blockDim.x)
// rows = outer * inner lines of `dim` elements at stride `inner`; each padded to P slots
extern "C" __global__ void topk_keys(const T* __restrict__ x, unsigned long long* __restrict__ key, long long* __restrict__ idx,
                                     long long rows, long long dim, long long inner, long long P, int largest) {
  G_LOOP(rows * P) {
    const long long r = i / P, t = i - r * P;
    if (t < dim) {
      const long long o = r / inner, j = r - o * inner;
      const unsigned long long k = g_key(g_load(x, (o * dim + t) * inner + j));
      key[i] = largest ? ~k : k;
      idx[i] = t;
    } else {  // padding: after every element
      key[i] = 0xffffffffffffffffull;
      idx[i] = 0x7fffffffffffffffll;
    }
  }
}
// one stage (block size kk, distance jj) of the bitonic sort of each row, ascending by (key, index)
extern "C" __global__ void topk_stage(unsigned long long* __restrict__ key, long long* __restrict__ idx, long long rows, long long P,
                                      long long kk, long long jj) {
  G_LOOP(rows * P) {
    const long long a = i % P, b = a ^ jj;
    if (b <= a) continue;
    const long long ia = i, ib = i - a + b;
    const unsigned long long ka = key[ia], kb = key[ib];
    const long long xa = idx[ia], xb = idx[ib];
    const bool greater = ka > kb || (ka == kb && xa > xb);
    const bool up = (a & kk) == 0;
    if (greater == up) {
      key[ia] = kb; key[ib] = ka;
      idx[ia] = xb; idx[ib] = xa;
    }
  }
}
extern "C" __global__ void topk_out(const long long* __restrict__ idx, const T* __restrict__ x, T* __restrict__ yv,
                                    long long* __restrict__ yi, long long rows, long long k, long long dim, long long inner, long long P) {
  G_LOOP(rows * k) {
    const long long r = i / k, t = i - r * k;
    const long long o = r / inner, j = r - o * inner;
    const long long id = idx[r * P + t];
    const long long at = (o * k + t) * inner + j;
    yv[at] = x[(o * dim + id) * inner + j];
    yi[at] = id;
  }
}
)";
  return s;
}

inline const std::vector<std::string>& topk_entries() {
  static const std::vector<std::string> e{"topk_keys", "topk_stage", "topk_out"};
  return e;
}

/// Most dimensions NonZero's input may have.
inline constexpr int max_rank = 16;

/// The host image of `g_dims`.
struct dims_arg {
  long long rank = 0;
  long long sizes[max_rank] = {};
};

/// The NonZero library of element type `t`: `nz_count` (non-zero elements per block's chunk)
/// and `nz_write` (their coordinates, in order).
inline std::string nonzero_source(dtype t) {
  const std::string T(cuda_codegen::storage_type(t)), W(cuda_codegen::compute_type(t));
  std::string s = cuda_codegen::cuda_prelude();
  s += "typedef " + T + " T;\ntypedef " + W + " W;\n";
  s += block_scan_source();
  s += "#define G_R " + std::to_string(max_rank) + "\n";
  s += R"(struct g_dims { long long rank; long long sizes[G_R]; };
__device__ __forceinline__ bool g_nz(const T* x, long long i) { return g_load(x, i) != (W)0; }
// block b counts the non-zero elements of [b * chunk, min(n, (b + 1) * chunk))
extern "C" __global__ void nz_count(const T* __restrict__ x, long long n, long long chunk, long long* __restrict__ counts) {
  __shared__ long long part[32];
  const long long begin = blockIdx.x * chunk, end = min(n, begin + chunk);
  long long c = 0;
  for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) c += g_nz(x, i) ? 1 : 0;
  for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = c;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long sum = 0;
    for (int w = 0; w < (int)((blockDim.x + 31) >> 5); ++w) sum += part[w];
    counts[blockIdx.x] = sum;
  }
}
// block b writes the coordinates of its chunk's non-zero elements from position offsets[b] on:
// y[d * total + position] = coordinate d (row-major)
extern "C" __global__ void nz_write(const T* __restrict__ x, long long n, long long chunk, const long long* __restrict__ offsets,
                                    long long total, long long* __restrict__ y, g_dims dims) {
  const long long begin = blockIdx.x * chunk, end = min(n, begin + chunk);
  long long base = offsets[blockIdx.x];
  for (long long tile = begin; tile < end; tile += blockDim.x) {
    const long long i = tile + threadIdx.x;
    const int f = (i < end && g_nz(x, i)) ? 1 : 0;
    int tile_total;
    const int before = g_block_scan(f, &tile_total);
    if (f) {
      const long long pos = base + before;
      long long rest = i;
      for (int d = (int)dims.rank - 1; d >= 0; --d) {
        y[d * total + pos] = rest % dims.sizes[d];
        rest /= dims.sizes[d];
      }
    }
    base += tile_total;
  }
}
)";
  return s;
}

inline const std::vector<std::string>& nonzero_entries() {
  static const std::vector<std::string> e{"nz_count", "nz_write"};
  return e;
}

/// How a kernel of "a block per chunk, counts read back" splits `n` positions: chunks of at
/// least 4096, at most 1024 of them (NonZero's and Unique's).
struct chunk_plan {
  long long blocks = 1, chunk = 0;
};
inline chunk_plan chunks_for(long long n) {
  chunk_plan c;
  c.blocks = std::min<long long>(1024, std::max<long long>(1, (n + 4095) / 4096));
  c.chunk = (n + c.blocks - 1) / c.blocks;
  return c;
}

/// The per-chunk counts read back: each chunk's first position (int64, on the host) and their
/// total.
inline std::pair<gpass::tensor, long long> chunk_offsets(context& ctx, const cuda_tensor& counts) {
  const gpass::tensor hc = ctx.policy().download(counts, ctx.stream());
  gpass::tensor offsets = gpass::tensor::uninitialized(dtype::int64, {hc.size()});
  long long total = 0;
  for (i64 b = 0; b < hc.size(); ++b) {
    offsets.data<i64>()[b] = total;
    total += hc.data<i64>()[b];
  }
  return {std::move(offsets), total};
}

inline fn make_topk(const kernel_node& n) {
  const i64 axis_attr = n.attr<i64>("axis", -1);
  const bool largest = n.attr<i64>("largest", 1) != 0;
  const std::optional<i64> k_attr = n.has_attr("k") ? std::optional<i64>(n.attr<i64>("k")) : std::nullopt;
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    if (!cuda_codegen::supported(t) || t == dtype::bool_) ctx.fail("no CUDA TopK for element type " + std::string(to_string(t)));
    const i64 rank = static_cast<i64>(x.rank());
    if (rank == 0) ctx.fail("input must have rank >= 1");
    const auto axis = static_cast<std::size_t>(shape_rules::normalize_axis(axis_attr, rank, ctx.node()));
    i64 k = 0;
    if (k_attr) {
      k = *k_attr;
    } else {
      const auto kv = cuda_detail::host_ints(ctx, 1);
      if (kv.size() != 1) ctx.fail("K must have one element");
      k = kv[0];
    }
    const auto& xs = x.sizes();
    const i64 dim = xs[axis];
    if (k < 0 || k > dim) ctx.fail("k " + std::to_string(k) + " is out of range for axis size " + std::to_string(dim));
    std::vector<i64> out = xs;
    out[axis] = k;
    auto& yv = ctx.allocate_output(0, t, out);
    auto& yi = ctx.allocate_output(1, dtype::int64, out);
    if (yv.size() == 0) return;
    const i64 outer = shape_rules::prod(xs, 0, axis), inner = shape_rules::prod(xs, axis + 1, xs.size());
    long long rows = mul_or_throw(outer, inner, "TopK rows");
    long long P = 1;
    while (P < dim) P <<= 1;
    auto& pol = ctx.policy();
    const i64 slots = mul_or_throw(rows, P, "TopK scratch");
    cuda_tensor keys = pol.allocate_tensor(dtype::uint64, {slots}, ctx.stream());
    cuda_tensor idx = pol.allocate_tensor(dtype::int64, {slots}, ctx.stream());
    const auto& kl = lib->get(pol, std::string(to_string(t)), topk_entries(), [&] { return topk_source(t); });
    const void* xp = x.data();
    void* kp = keys.data();
    void* ip = idx.data();
    long long d = dim, in = inner;
    int lg = largest ? 1 : 0;
    const unsigned blocks = pol.blocks_for(slots);
    {
      void* args[] = {&xp, &kp, &ip, &rows, &d, &in, &P, &lg};
      pol.launch(kl.kernels[0], blocks, 256, args, ctx.stream());
    }
    for (long long kk = 2; kk <= P; kk <<= 1)
      for (long long jj = kk >> 1; jj > 0; jj >>= 1) {
        void* args[] = {&kp, &ip, &rows, &P, &kk, &jj};
        pol.launch(kl.kernels[1], blocks, 256, args, ctx.stream());
      }
    void* vp = yv.data();
    void* op = yi.data();
    long long kq = k;
    void* args[] = {&ip, &xp, &vp, &op, &rows, &kq, &d, &in, &P};
    pol.launch(kl.kernels[2], pol.blocks_for(yv.size()), 256, args, ctx.stream());
  };
}

inline fn make_nonzero(const kernel_node&) {
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    if (!cuda_codegen::supported(t)) ctx.fail("no CUDA NonZero for element type " + std::string(to_string(t)));
    const auto& xs = x.sizes();
    if (xs.size() > static_cast<std::size_t>(max_rank))
      ctx.fail("the CUDA NonZero takes inputs of rank up to " + std::to_string(max_rank) + ", got " + std::to_string(xs.size()));
    long long n = x.size();
    const i64 rank = static_cast<i64>(xs.size());
    auto& pol = ctx.policy();
    if (n == 0) {
      ctx.allocate_output(0, dtype::int64, {rank, 0});
      return;
    }
    const auto& kl = lib->get(pol, std::string(to_string(t)), nonzero_entries(), [&] { return nonzero_source(t); });
    const chunk_plan c = chunks_for(n);
    const long long blocks = c.blocks;
    long long chunk = c.chunk;
    cuda_tensor counts = pol.allocate_tensor(dtype::int64, {blocks}, ctx.stream());
    const void* xp = x.data();
    void* cp = counts.data();
    {
      void* args[] = {&xp, &n, &chunk, &cp};
      pol.launch(kl.kernels[0], static_cast<unsigned>(blocks), 256, args, ctx.stream());
    }
    auto [offsets, total] = chunk_offsets(ctx, counts);
    auto& y = ctx.allocate_output(0, dtype::int64, {rank, total});
    if (total == 0 || rank == 0) {
      // rank 0: a scalar that is non-zero has one (empty) coordinate tuple
      return;
    }
    const cuda_tensor off = pol.upload(offsets, ctx.stream());
    dims_arg dims;
    dims.rank = rank;
    for (std::size_t d = 0; d < xs.size(); ++d) dims.sizes[d] = xs[d];
    const void* op = off.data();
    void* yp = y.data();
    void* args[] = {&xp, &n, &chunk, &op, &total, &yp, &dims};
    pol.launch(kl.kernels[1], static_cast<unsigned>(blocks), 256, args, ctx.stream());
  };
}

/// Generated sources of this family for representative element types: (name, source).
inline std::vector<std::pair<std::string, std::string>> select_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  // the three key encodings (float, signed, unsigned) and a 16-bit float; NonZero's load kinds
  for (dtype t : {dtype::f32, dtype::f16, dtype::int64, dtype::uint8}) r.emplace_back("topk_" + std::string(to_string(t)), topk_source(t));
  for (dtype t : {dtype::f32, dtype::bf16, dtype::bool_}) r.emplace_back("nonzero_" + std::string(to_string(t)), nonzero_source(t));
  return r;
}

}  // namespace cuda_select

/// Registers TopK and NonZero.
inline void register_cuda_select(kernel_registry<cuda>& r) {
  using namespace cuda_select;
  r.add({.op = "TopK", .dtypes = topk_types(), .make = make_topk});
  r.add({.op = "NonZero", .dtypes = nonzero_types(), .make = make_nonzero});
}

}  // namespace gpass::exec
