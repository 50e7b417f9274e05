// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file array.hpp
/// The CUDA shape and data-movement kernels.
///
/// - Views, no kernel launched: Reshape, Flatten, Squeeze, Unsqueeze (output 0 shares input
///   0's buffer); Shape and Size (made on the host, uploaded).
/// - Moves by element size (1, 2, 4 or 8 bytes; every type `cuda_codegen::supported` has):
///   one generated library (`move_source`) holds a strided copy (`g_move_<S>`: an output
///   index mapped to an input offset through sizes and two sets of strides: Transpose, Split,
///   Slice with any steps, Concat one slab per input, Expand, Tile, DepthToSpace,
///   SpaceToDepth; rows contiguous on both sides move in units of up to 16 bytes,
///   `g_move_16`, and with 32-bit index arithmetic where every offset fits, `g_move32_<S>`),
///   Gather, GatherElements, Pad (constant, reflect, edge, wrap; CenterCropPad), Trilu,
///   ScatterND and a fill (ConstantOfShape). Contiguous runs become `cudaMemcpyAsync`.
/// - ScatterND and ScatterElements with a reduction (add, mul, max, min): a generated library
///   per element type and reduction (`scatter_reduce_source`), compare-and-swap updates.
/// - Range: a generated kernel per element type (and f16/bf16 stash type).
///
/// Shape arithmetic, attributes and error messages follow the Eigen CPU kernels
/// (`eigen_cpu/kernels/array.hpp`). Indices are checked on the host when the plan bound them
/// as constants (failing like the CPU kernels); indices only known on the device are not
/// checked: an out-of-range Gather / GatherElements index reads as zero, an out-of-range
/// ScatterND tuple is skipped. All index arithmetic is 64-bit.

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec {

namespace cuda_array_detail {

using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using i64 = std::int64_t;

/// Most dimensions of a move after merging (Tile of rank 6 needs 12).
inline constexpr int view_rank = 12;

/// Every element type the generated kernels handle (the move ops' type list).
inline std::vector<dtype> movable_types() {
  return {dtype::f16,   dtype::bf16,  dtype::f32,    dtype::f64,    dtype::int8,   dtype::int16, dtype::int32,
          dtype::int64, dtype::uint8, dtype::uint16, dtype::uint32, dtype::uint64, dtype::bool_};
}

// ---- shape arithmetic (as the CPU kernels do it) -------------------------------------------

using shape_rules::broadcast_strides;
using shape_rules::fix_index;
using shape_rules::normalize_axis;
using shape_rules::prod;
using shape_rules::reshape_sizes;
using shape_rules::sizes_str;
using shape_rules::strides_of;

/// Axes from attribute `name` when present, else from input `input` when given.
inline std::optional<std::vector<i64>> axes_of(context& ctx, const char* name, std::size_t input) {
  const kernel_node& n = ctx.node();
  if (n.has_attr(name)) return n.attr<std::vector<i64>>(name);
  if (ctx.has_input(input)) return cuda_detail::host_ints(ctx, input);
  return std::nullopt;
}

/// The first element of a numeric host tensor as a double.
inline double first_double(const gpass::tensor& t, const kernel_node& n, const char* what) {
  if (t.size() < 1) n.fail(std::string(what) + " is empty");
  double r = 0;
  gpass::visit_dtype(t.element_type(), [&]<class T>() {
    if constexpr (std::is_arithmetic_v<T>) r = static_cast<double>(t.data<T>()[0]);
    else if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) r = static_cast<float>(t.data<T>()[0]);
    else n.fail(std::string(what) + " must be numeric");
  });
  return r;
}

/// The bits of `v` as an element of `t` (in the low bytes of the word).
inline std::uint64_t scalar_bits(dtype t, double v, const kernel_node& n) {
  std::uint64_t bits = 0;
  if (!cuda_codegen::supported(t)) n.fail("no CUDA kernel for element type " + std::string(to_string(t)));
  gpass::visit_dtype(t, [&]<class T>() {
    T x{};
    if constexpr (std::is_same_v<T, bool>) x = v != 0;
    else if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) x = static_cast<T>(static_cast<float>(v));
    else if constexpr (std::is_arithmetic_v<T>) x = static_cast<T>(v);
    if constexpr (sizeof(T) <= 8) std::memcpy(&bits, &x, sizeof(T));
  });
  return bits;
}

/// The bits of element 0 of host tensor `t`.
inline std::uint64_t first_bits(const gpass::tensor& t) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, t.raw(), std::min<std::size_t>(size_of(t.element_type()), 8));
  return bits;
}

inline void require_movable(const context& ctx, dtype t) {
  if (!cuda_codegen::supported(t)) ctx.fail("no CUDA kernel for element type " + std::string(to_string(t)));
}

// ---- generated kernels --------------------------------------------------------------------

/// The kernel kinds of the move library, each generated for elements of 1, 2, 4 and 8 bytes.
enum class mk { move, gather, gather_el, pad, fill, trilu, scatter_nd, gather_nd, scatter_el, one_hot, count };
inline constexpr const char* mk_names[] = {"move", "gather", "gather_el", "pad", "fill", "trilu", "scatter_nd", "gather_nd", "scatter_el", "one_hot"};

/// The entry names of the move library, in `entry_index` order, then the wide and 32-bit
/// strided copies (`move_entry_index`).
inline const std::vector<std::string>& move_entries() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> r;
    for (const char* k : mk_names)
      for (int s : {1, 2, 4, 8}) r.push_back("g_" + std::string(k) + "_" + std::to_string(s));
    r.push_back("g_move_16");
    for (int s : {1, 2, 4, 8, 16}) r.push_back("g_move32_" + std::to_string(s));
    return r;
  }();
  return v;
}
inline std::size_t entry_index(mk k, std::size_t elem_size) {
  const std::size_t s = elem_size == 1 ? 0 : elem_size == 2 ? 1 : elem_size == 4 ? 2 : 3;
  return static_cast<std::size_t>(k) * 4 + s;
}
/// The strided copy of `unit`-byte units (1, 2, 4, 8 or 16), with 64-bit or 32-bit indexing.
inline std::size_t move_entry_index(std::size_t unit, bool index32) {
  constexpr std::size_t extra = static_cast<std::size_t>(mk::count) * 4;
  const std::size_t u = unit == 1 ? 0 : unit == 2 ? 1 : unit == 4 ? 2 : unit == 8 ? 3 : 4;
  if (index32) return extra + 1 + u;
  return u == 4 ? extra : entry_index(mk::move, unit);
}

/// The strided view a move kernel reads (host mirror of the device `g_view`).
struct g_view {
  long long n = 0, rank = 0, in_off = 0;
  long long sizes[view_rank] = {}, in_st[view_rank] = {}, out_st[view_rank] = {};
};
/// Pad's description (host mirror of the device `g_padv`).
struct g_padv {
  long long n = 0, rank = 0, mode = 0;
  long long out[view_rank] = {}, in[view_rank] = {}, begin[view_rank] = {}, in_st[view_rank] = {};
};

/// The device views, loop and index helpers the move and scatter-reduction libraries share.
inline std::string view_helpers_source() {
  std::string r = "#define G_R " + std::to_string(view_rank) + "\n";
  r += R"(struct g_view { long long n, rank, in_off; long long sizes[G_R], in_st[G_R], out_st[G_R]; };
#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x * blockDim.x)
__device__ __forceinline__ long long g_index(const void* p, int idx64, long long j) {
  return idx64 ? ((const long long*)p)[j] : (long long)((const int*)p)[j];
}
// the input offset of element i of a view walked in row-major order over its sizes
__device__ __forceinline__ long long g_walk(const g_view& v, long long i) {
  long long rest = i, off = 0;
  for (int d = (int)v.rank - 1; d >= 0; --d) {
    const long long c = rest % v.sizes[d];
    rest /= v.sizes[d];
    off += c * v.in_st[d];
  }
  return off;
}
// the offset of index tuple t (v.rank indices, negative ones from the end) into dimensions
// v.sizes at strides v.in_st; ok is false when an index is out of range
__device__ __forceinline__ long long g_tuple_offset(const void* idx, int idx64, const g_view& v, long long t, bool& ok) {
  long long off = 0;
  ok = true;
  for (int j = 0; j < (int)v.rank; ++j) {
    long long k = g_index(idx, idx64, t * v.rank + j);
    if (k < 0) k += v.sizes[j];
    if (k < 0 || k >= v.sizes[j]) ok = false;
    off += k * v.in_st[j];
  }
  return off;
}
)";
  return r;
}

/// The move library: every kernel that moves elements by their size.
inline const std::string& move_source() {
  static const std::string s = [] {
    std::string r = cuda_codegen::cuda_prelude();
    r += view_helpers_source();
    r += R"(struct g_padv { long long n, rank, mode; long long out[G_R], in[G_R], begin[G_R], in_st[G_R]; };
template <class U> __device__ __forceinline__ void t_move(U* __restrict__ y, const U* __restrict__ x, const g_view& v) {
  G_LOOP(v.n) {
    long long rest = i, io = v.in_off, oo = 0;
    for (int d = (int)v.rank - 1; d >= 0; --d) {
      const long long c = rest % v.sizes[d];
      rest /= v.sizes[d];
      io += c * v.in_st[d];
      oo += c * v.out_st[d];
    }
    y[oo] = x[io];
  }
}
// the same where every element count, offset and stride fits in 32 bits (cheaper division;
// a negative stride wraps modulo 2^32 and the sum still lands on the right offset)
template <class U> __device__ __forceinline__ void t_move32(U* __restrict__ y, const U* __restrict__ x, const g_view& v) {
  const unsigned n = (unsigned)v.n;
  const int rank = (int)v.rank;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned rest = i, io = (unsigned)v.in_off, oo = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const unsigned s = (unsigned)v.sizes[d], c = rest % s;
      rest /= s;
      io += c * (unsigned)v.in_st[d];
      oo += c * (unsigned)v.out_st[d];
    }
    y[oo] = x[io];
  }
}
template <class U> __device__ __forceinline__ void t_gather(U* __restrict__ y, const U* __restrict__ x, const void* idx, int idx64,
                                                            long long n, long long ni, long long inner, long long dim) {
  G_LOOP(n) {
    const long long in = i % inner, t = i / inner, j = t % ni, o = t / ni;
    long long k = g_index(idx, idx64, j);
    if (k < 0) k += dim;
    y[i] = (k < 0 || k >= dim) ? (U)0 : x[(o * dim + k) * inner + in];
  }
}
template <class U> __device__ __forceinline__ void t_gather_el(U* __restrict__ y, const U* __restrict__ x, const void* idx, int idx64,
                                                               const g_view& v, long long axis_st, long long dim) {
  G_LOOP(v.n) {
    const long long io = g_walk(v, i);
    long long k = g_index(idx, idx64, i);
    if (k < 0) k += dim;
    y[i] = (k < 0 || k >= dim) ? (U)0 : x[io + k * axis_st];
  }
}
template <class U> __device__ __forceinline__ void t_pad(U* __restrict__ y, const U* __restrict__ x, const g_padv& p, U cval) {
  G_LOOP(p.n) {
    long long rest = i, io = 0;
    bool constant = false;
    for (int d = (int)p.rank - 1; d >= 0; --d) {
      const long long o = rest % p.out[d];
      rest /= p.out[d];
      long long k = o - p.begin[d];
      const long long in = p.in[d];
      if (k < 0 || k >= in) {
        if (p.mode == 0) { constant = true; break; }
        if (p.mode == 2) k = k < 0 ? 0 : in - 1;
        else if (p.mode == 3) k = ((k % in) + in) % in;
        else if (in == 1) k = 0;
        else {
          const long long period = 2 * (in - 1);
          k = ((k % period) + period) % period;
          if (k >= in) k = period - k;
        }
      }
      io += k * p.in_st[d];
    }
    y[i] = constant ? cval : x[io];
  }
}
template <class U> __device__ __forceinline__ void t_fill(U* __restrict__ y, long long n, U v) {
  G_LOOP(n) y[i] = v;
}
template <class U> __device__ __forceinline__ void t_trilu(U* __restrict__ y, const U* __restrict__ x, long long n, long long rows,
                                                           long long cols, long long lo, long long hi) {
  G_LOOP(n) {
    const long long j = i % cols, r = (i / cols) % rows;
    y[i] = j - r >= lo && j - r <= hi ? x[i] : (U)0;
  }
}
template <class U> __device__ __forceinline__ void t_scatter_nd(U* __restrict__ y, const U* __restrict__ up, const void* idx, int idx64,
                                                                const g_view& v, long long block) {
  G_LOOP(v.n) {
    bool ok;
    const long long off = g_tuple_offset(idx, idx64, v, i / block, ok);
    if (ok) y[off + i % block] = up[i];
  }
}
template <class U> __device__ __forceinline__ void t_gather_nd(U* __restrict__ y, const U* __restrict__ x, const void* idx, int idx64,
                                                               const g_view& v, long long block, long long tuples, long long batch_st) {
  G_LOOP(v.n) {
    const long long t = i / block;
    bool ok;
    const long long off = (t / tuples) * batch_st + g_tuple_offset(idx, idx64, v, t, ok);
    y[i] = ok ? x[off + i % block] : (U)0;
  }
}
template <class U> __device__ __forceinline__ void t_scatter_el(U* __restrict__ y, const U* __restrict__ up, const void* idx, int idx64,
                                                                const g_view& v, long long axis_st, long long dim) {
  G_LOOP(v.n) {
    const long long off = g_walk(v, i);
    long long k = g_index(idx, idx64, i);
    if (k < 0) k += dim;
    if (k >= 0 && k < dim) y[off + k * axis_st] = up[i];
  }
}
template <class U> __device__ __forceinline__ void t_one_hot(U* __restrict__ y, const U* __restrict__ vals, const void* idx, int idx64,
                                                             long long n, long long depth, long long inner, int wrap) {
  G_LOOP(n) {
    const long long j = i % inner, t = i / inner, c = t % depth, o = t / depth;
    long long k = g_index(idx, idx64, o * inner + j);
    if (k < 0 && wrap) k += depth;
    y[i] = k == c ? vals[1] : vals[0];
  }
}
)";
    const char* types[] = {"unsigned char", "unsigned short", "unsigned int", "unsigned long long", "uint4"};
    const int sizes[] = {1, 2, 4, 8, 16};
    for (int q = 0; q < 5; ++q) {
      const std::string U = types[q], S = std::to_string(sizes[q]);
      if (q == 4) r += "extern \"C\" __global__ void g_move_16(uint4* y, const uint4* x, g_view v) { t_move(y, x, v); }\n";
      r += "extern \"C\" __global__ void g_move32_" + S + "(" + U + "* y, const " + U + "* x, g_view v) { t_move32(y, x, v); }\n";
    }
    for (int q = 0; q < 4; ++q) {
      const std::string U = types[q], S = std::to_string(sizes[q]);
      r += "extern \"C\" __global__ void g_move_" + S + "(" + U + "* y, const " + U + "* x, g_view v) { t_move(y, x, v); }\n";
      r += "extern \"C\" __global__ void g_gather_" + S + "(" + U + "* y, const " + U +
           "* x, const void* idx, int idx64, long long n, long long ni, long long inner, long long dim) { t_gather(y, x, idx, idx64, n, ni, inner, dim); }\n";
      r += "extern \"C\" __global__ void g_gather_el_" + S + "(" + U + "* y, const " + U +
           "* x, const void* idx, int idx64, g_view v, long long axis_st, long long dim) { t_gather_el(y, x, idx, idx64, v, axis_st, dim); }\n";
      r += "extern \"C\" __global__ void g_pad_" + S + "(" + U + "* y, const " + U + "* x, g_padv p, " + U + " cval) { t_pad(y, x, p, cval); }\n";
      r += "extern \"C\" __global__ void g_fill_" + S + "(" + U + "* y, long long n, " + U + " v) { t_fill(y, n, v); }\n";
      r += "extern \"C\" __global__ void g_trilu_" + S + "(" + U + "* y, const " + U +
           "* x, long long n, long long rows, long long cols, long long lo, long long hi) { t_trilu(y, x, n, rows, cols, lo, hi); }\n";
      r += "extern \"C\" __global__ void g_scatter_nd_" + S + "(" + U + "* y, const " + U +
           "* up, const void* idx, int idx64, g_view v, long long block) { t_scatter_nd(y, up, idx, idx64, v, block); }\n";
      r += "extern \"C\" __global__ void g_gather_nd_" + S + "(" + U + "* y, const " + U +
           "* x, const void* idx, int idx64, g_view v, long long block, long long tuples, long long batch_st) "
           "{ t_gather_nd(y, x, idx, idx64, v, block, tuples, batch_st); }\n";
      r += "extern \"C\" __global__ void g_scatter_el_" + S + "(" + U + "* y, const " + U +
           "* up, const void* idx, int idx64, g_view v, long long axis_st, long long dim) { t_scatter_el(y, up, idx, idx64, v, axis_st, dim); }\n";
      r += "extern \"C\" __global__ void g_one_hot_" + S + "(" + U + "* y, const " + U +
           "* vals, const void* idx, int idx64, long long n, long long depth, long long inner, int wrap) "
           "{ t_one_hot(y, vals, idx, idx64, n, depth, inner, wrap); }\n";
    }
    return r;
  }();
  return s;
}

/// Range's kernel for element type `t` (f16 / bf16: `stash` 1 computes in float, 11 in double).
inline std::string range_source(dtype t, i64 stash) {
  std::string r = cuda_codegen::cuda_prelude();
  const std::string S(cuda_codegen::storage_type(t));
  r += "extern \"C\" __global__ void g_range(" + S + "* y, long long n, double start, double delta, long long istart, long long idelta) {\n";
  r += "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n";
  if (t == dtype::f64) {
    r += "    y[i] = __dadd_rn(start, __dmul_rn((double)i, delta));\n";
  } else if (t == dtype::f32) {
    r += "    y[i] = __fadd_rn((float)start, __fmul_rn((float)i, (float)delta));\n";
  } else if (t == dtype::f16 || t == dtype::bf16) {
    if (stash == 11) r += "    g_store(y, i, (float)__dadd_rn(start, __dmul_rn((double)i, delta)));\n";
    else r += "    g_store(y, i, __fadd_rn((float)start, __fmul_rn((float)i, (float)delta)));\n";
  } else {
    r += "    y[i] = (" + S + ")(long long)((unsigned long long)istart + (unsigned long long)i * (unsigned long long)idelta);\n";
  }
  r += "  }\n}\n";
  return r;
}

/// The move library's compiled kernels for a node.
/// The reductions ScatterND and ScatterElements apply (`reduction`), as the CPU kernels do:
/// add, mul, max (`a < u ? u : a`), min (`u < a ? u : a`) in the compute type; on bool add
/// and max are `or`, mul and min `and`.
enum class scatter_reduction { none, add, mul, max, min };

inline scatter_reduction read_scatter_reduction(const kernel_node& n) {
  const std::string red = n.attr<std::string>("reduction", "none");
  if (red == "none") return scatter_reduction::none;
  if (red == "add") return scatter_reduction::add;
  if (red == "mul") return scatter_reduction::mul;
  if (red == "max") return scatter_reduction::max;
  if (red == "min") return scatter_reduction::min;
  n.fail("unknown reduction '" + red + "'");
}

/// The scatter-reduction library of element type `t` and reduction `red`: `sr_nd` and
/// `sr_el` (ScatterND's and ScatterElements' walks, as `g_scatter_nd_<S>` / `g_scatter_el_<S>`)
/// combining each update into its destination with a compare-and-swap loop on the aligned
/// word that holds it (updates to one element may come from several threads).
inline std::string scatter_reduce_source(dtype t, scatter_reduction red) {
  const std::string T(cuda_codegen::storage_type(t)), W(cuda_codegen::compute_type(t));
  std::string r = cuda_codegen::cuda_prelude();
  r += view_helpers_source();
  r += "typedef " + T + " T;\ntypedef " + W + " W;\n";
  std::string combine;
  if (t == dtype::bool_) combine = red == scatter_reduction::add || red == scatter_reduction::max ? "a || u" : "a && u";
  else if (red == scatter_reduction::add) combine = "(W)(a + u)";
  else if (red == scatter_reduction::mul) combine = "(W)(a * u)";
  else if (red == scatter_reduction::max) combine = "a < u ? u : a";
  else combine = "u < a ? u : a";
  r += "__device__ __forceinline__ W g_combine(W a, W u) { return " + combine + "; }\n";
  r += R"(union g_bits { T t; unsigned long long b; };
// the element in the low bytes of `bits` combined with u, in the low bytes of the result
__device__ __forceinline__ unsigned long long g_next(unsigned long long bits, W u) {
  g_bits cur, nv;
  cur.b = bits;
  nv.b = 0;
  g_store(&nv.t, 0, g_combine(g_load(&cur.t, 0), u));
  return nv.b;
}
__device__ __forceinline__ void g_update(T* p, W u) {
  if (sizeof(T) == 8) {
    unsigned long long* a = (unsigned long long*)p;
    unsigned long long old = *a, seen;
    do {
      seen = old;
      old = atomicCAS(a, seen, g_next(seen, u));
    } while (seen != old);
  } else {
    const unsigned long long at = (unsigned long long)p;
    unsigned int* a = (unsigned int*)(at & ~3ull);
    const unsigned int shift = (unsigned int)(at & 3ull) * 8u;
    const unsigned int low = sizeof(T) == 4 ? 0xffffffffu : (1u << (8u * sizeof(T))) - 1u;
    const unsigned int mask = low << shift;
    unsigned int old = *a, seen;
    do {
      seen = old;
      const unsigned int bits = (unsigned int)g_next((seen >> shift) & low, u);
      old = atomicCAS(a, seen, (seen & ~mask) | ((bits << shift) & mask));
    } while (seen != old);
  }
}
extern "C" __global__ void sr_nd(T* y, const T* up, const void* idx, int idx64, g_view v, long long block) {
  G_LOOP(v.n) {
    bool ok;
    const long long off = g_tuple_offset(idx, idx64, v, i / block, ok);
    if (ok) g_update(y + off + i % block, g_load(up, i));
  }
}
extern "C" __global__ void sr_el(T* y, const T* up, const void* idx, int idx64, g_view v, long long axis_st, long long dim) {
  G_LOOP(v.n) {
    const long long off = g_walk(v, i);
    long long k = g_index(idx, idx64, i);
    if (k < 0) k += dim;
    if (k >= 0 && k < dim) g_update(y + off + k * axis_st, g_load(up, i));
  }
}
)";
  return r;
}

inline const lazy_library::entry& scatter_reduce_kernels(context& ctx, lazy_library& lib, dtype t, scatter_reduction red) {
  return lib.get(ctx.policy(), "scatter_reduce," + std::string(to_string(t)) + "," + std::to_string(static_cast<int>(red)),
                 {"sr_nd", "sr_el"}, [&] { return scatter_reduce_source(t, red); });
}

inline const lazy_library::entry& move_kernels(context& ctx, lazy_library& lib) {
  return lib.get(ctx.policy(), "move", move_entries(), [] { return move_source(); });
}

/// Copies the view of `x` (`sizes`, element strides `in_st` from element `in_off`) to `y`
/// (device address) at element strides `out_st`. Merges dimensions, copies contiguous runs
/// with `cudaMemcpyAsync`.
inline void move(context& ctx, lazy_library& lib, dtype t, void* y, const void* x, const std::vector<i64>& sizes,
                 const std::vector<i64>& in_st, const std::vector<i64>& out_st, i64 in_off) {
  i64 n = 1;
  for (i64 s : sizes) n *= s;
  if (n == 0) return;
  const std::size_t es = size_of(t);
  std::vector<i64> sz, is, os;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (!sz.empty() && is.back() == in_st[d] * sizes[d] && os.back() == out_st[d] * sizes[d]) {
      sz.back() *= sizes[d];
      is.back() = in_st[d];
      os.back() = out_st[d];
    } else {
      sz.push_back(sizes[d]);
      is.push_back(in_st[d]);
      os.push_back(out_st[d]);
    }
  }
  auto& p = ctx.policy();
  const auto* src = static_cast<const std::byte*>(x) + in_off * static_cast<i64>(es);
  if (sz.empty() || (sz.size() == 1 && is[0] == 1 && os[0] == 1)) {
    p.copy_on_device(y, src, static_cast<std::size_t>(n) * es, ctx.stream());
    return;
  }
  if (sz.size() > static_cast<std::size_t>(view_rank))
    ctx.fail("a copy over " + std::to_string(sz.size()) + " dimensions that cannot be merged (the CUDA kernels take " +
             std::to_string(view_rank) + ")");
  // A run contiguous on both sides (a Transpose that keeps the last axis, a Concat, a Slice of
  // whole rows) moves in wider units: up to 16 bytes a thread, where the sizes, strides, offset
  // and both addresses allow.
  std::size_t unit = es;
  if (os.back() == 1 && is.back() == 1) {
    for (std::size_t c : {std::size_t{16}, std::size_t{8}, std::size_t{4}, std::size_t{2}}) {
      if (c <= es) break;
      const auto fits = [&](i64 elems) { return (elems * static_cast<i64>(es)) % static_cast<i64>(c) == 0; };
      bool ok = fits(sz.back()) && fits(in_off) && reinterpret_cast<std::uintptr_t>(x) % c == 0 &&
                reinterpret_cast<std::uintptr_t>(y) % c == 0;
      for (std::size_t d = 0; ok && d + 1 < sz.size(); ++d) ok = fits(is[d]) && fits(os[d]);
      if (!ok) continue;
      const i64 k = static_cast<i64>(c / es);
      sz.back() /= k;
      for (std::size_t d = 0; d + 1 < sz.size(); ++d) {
        is[d] /= k;
        os[d] /= k;
      }
      in_off /= k;
      n /= k;
      unit = c;
      break;
    }
  }
  // 32-bit indexing where every offset the walk reaches fits
  i64 in_hi = in_off, in_lo = in_off, out_hi = 0;
  for (std::size_t d = 0; d < sz.size(); ++d) {
    (is[d] > 0 ? in_hi : in_lo) += (sz[d] - 1) * is[d];
    out_hi += (sz[d] - 1) * std::max<i64>(os[d], 0);
  }
  constexpr i64 lim = i64{1} << 31;
  bool index32 = n < lim && in_hi < lim && in_lo >= 0 && out_hi < lim;
  for (std::size_t d = 0; index32 && d < sz.size(); ++d) index32 = is[d] > -lim && is[d] < lim && os[d] >= 0 && os[d] < lim;
  g_view v;
  v.n = n;
  v.rank = static_cast<long long>(sz.size());
  v.in_off = in_off;
  for (std::size_t d = 0; d < sz.size(); ++d) {
    v.sizes[d] = sz[d];
    v.in_st[d] = is[d];
    v.out_st[d] = os[d];
  }
  const auto& k = move_kernels(ctx, lib);
  void* yp = y;
  void* xp = const_cast<void*>(x);
  void* args[] = {&yp, &xp, &v};
  p.launch(k.kernels[move_entry_index(unit, index32)], p.blocks_for(n), 256, args, ctx.stream());
}

/// Output `out` = the view of `x` (`sizes`, `strides`, `offset`) as a new contiguous tensor
/// of `out_sizes` (the same element count).
inline void copy_view(context& ctx, lazy_library& lib, const cuda_tensor& x, std::vector<i64> out_sizes, const std::vector<i64>& sizes,
                      const std::vector<i64>& strides, i64 offset, std::size_t out = 0) {
  cuda_tensor& y = ctx.allocate_output(out, x.element_type(), std::move(out_sizes));
  if (y.size() == 0) return;
  move(ctx, lib, x.element_type(), y.data(), x.data(), sizes, strides, strides_of(sizes), offset);
}

// ---- kernels --------------------------------------------------------------------------------

inline fn make_transpose(const kernel_node& n) {
  std::optional<std::vector<i64>> perm;
  if (n.has_attr("perm")) perm = n.attr<std::vector<i64>>("perm");
  auto lib = std::make_shared<lazy_library>();
  return [perm, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    require_movable(ctx, x.element_type());
    const auto v = shape_rules::transpose_view(x.sizes(), perm, ctx.node());
    copy_view(ctx, *lib, x, v.sizes, v.sizes, v.strides, 0);
  };
}

/// Output 0 = `xs` joined along `axis_attr` (checked by `concat_shape`).
inline void concat_into(context& ctx, lazy_library& lib, const std::vector<const cuda_tensor*>& xs, i64 axis_attr) {
  const auto [axis, out] = shape_rules::concat_shape(xs, axis_attr, ctx.node());
  const cuda_tensor& x0 = *xs[0];
  require_movable(ctx, x0.element_type());
  cuda_tensor& y = ctx.allocate_output(0, x0.element_type(), out);
  if (y.size() == 0) return;
  const auto ost = strides_of(out);
  const std::size_t es = size_of(x0.element_type());
  i64 at = 0;
  for (const auto* x : xs) {
    auto* dst = static_cast<std::byte*>(y.data()) + at * ost[axis] * static_cast<i64>(es);
    move(ctx, lib, x0.element_type(), dst, x->data(), x->sizes(), strides_of(x->sizes()), ost, 0);
    at += x->sizes()[axis];
  }
}

inline fn make_concat(const kernel_node& n) {
  const i64 axis_attr = n.attr<i64>("axis", n.opset > 0 && n.opset < 4 ? 1 : 0);
  if (!n.has_attr("axis") && n.opset >= 4) n.fail("missing attribute 'axis'");
  auto lib = std::make_shared<lazy_library>();
  return [axis_attr, lib](context& ctx) {
    std::vector<const cuda_tensor*> xs;
    for (std::size_t i = 0; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i)) xs.push_back(&ctx.input(i));
    concat_into(ctx, *lib, xs, axis_attr);
  };
}

inline fn make_split(const kernel_node& n) {
  const i64 axis_attr = n.attr<i64>("axis", 0);
  std::optional<std::vector<i64>> split_attr;
  if (n.has_attr("split")) split_attr = n.attr<std::vector<i64>>("split");
  const std::optional<i64> num_outputs = n.has_attr("num_outputs") ? std::optional<i64>(n.attr<i64>("num_outputs")) : std::nullopt;
  auto lib = std::make_shared<lazy_library>();
  return [axis_attr, split_attr, num_outputs, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    require_movable(ctx, x.element_type());
    const i64 rank = static_cast<i64>(x.rank());
    if (rank == 0) ctx.fail("cannot split a scalar (rank 0)");
    const std::size_t axis = static_cast<std::size_t>(normalize_axis(axis_attr, rank, ctx.node()));
    const i64 dim = x.sizes()[axis];
    const std::size_t nout = ctx.num_outputs();
    std::vector<i64> parts;
    if (split_attr) parts = *split_attr;
    else if (ctx.has_input(1)) parts = cuda_detail::host_ints(ctx, 1);
    parts = shape_rules::split_sizes(dim, std::move(parts), num_outputs, nout, ctx.node());
    const auto st = strides_of(x.sizes());
    i64 start = 0;
    for (std::size_t i = 0; i < nout; ++i) {
      std::vector<i64> s = x.sizes();
      s[axis] = parts[i];
      copy_view(ctx, *lib, x, s, s, st, start * st[axis], i);
      start += parts[i];
    }
  };
}

inline fn make_slice(const kernel_node& n) {
  const auto at = shape_rules::slice_attrs::read(n);
  auto lib = std::make_shared<lazy_library>();
  return [at, lib](context& ctx) {
    const kernel_node& nd = ctx.node();
    const cuda_tensor& x = ctx.input(0);
    require_movable(ctx, x.element_type());
    std::vector<i64> starts, ends, steps;
    std::optional<std::vector<i64>> axes;
    if (at) {
      starts = at->starts;
      ends = at->ends;
      axes = at->axes;
    } else {
      starts = cuda_detail::host_ints(ctx, 1);
      ends = cuda_detail::host_ints(ctx, 2);
      if (ctx.has_input(3)) axes = cuda_detail::host_ints(ctx, 3);
      if (ctx.has_input(4)) steps = cuda_detail::host_ints(ctx, 4);
    }
    const auto v = shape_rules::slice_view(x.sizes(), starts, ends, std::move(axes), steps, nd);
    copy_view(ctx, *lib, x, v.sizes, v.sizes, v.strides, v.offset);
  };
}

inline fn make_expand(const kernel_node&) {
  auto lib = std::make_shared<lazy_library>();
  return [lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    require_movable(ctx, x.element_type());
    const auto req = cuda_detail::host_ints(ctx, 1);
    for (i64 v : req)
      if (v < 0) ctx.fail("shape has a negative size " + std::to_string(v));
    const auto out = shape_rules::broadcast_sizes(x.sizes(), req, ctx.node());
    copy_view(ctx, *lib, x, out, out, broadcast_strides(x.sizes(), out), 0);
  };
}

inline fn make_tile(const kernel_node&) {
  auto lib = std::make_shared<lazy_library>();
  return [lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    require_movable(ctx, x.element_type());
    const auto reps = cuda_detail::host_ints(ctx, 1);
    if (reps.size() != x.rank())
      ctx.fail("repeats has " + std::to_string(reps.size()) + " entries for rank " + std::to_string(x.rank()));
    const auto st = strides_of(x.sizes());
    std::vector<i64> out, vs, vst;
    for (std::size_t d = 0; d < x.rank(); ++d) {
      if (reps[d] < 0) ctx.fail("repeats has a negative entry");
      auto m = checked_mul(x.sizes()[d], reps[d]);
      if (!m) ctx.fail("repeats: " + std::to_string(x.sizes()[d]) + " * " + std::to_string(reps[d]) + " overflows int64");
      out.push_back(*m);
      vs.insert(vs.end(), {reps[d], x.sizes()[d]});
      vst.insert(vst.end(), {0, st[d]});
    }
    copy_view(ctx, *lib, x, out, vs, vst, 0);
  };
}

inline fn make_depth_space(const kernel_node& n, bool to_space) {
  const i64 b = n.attr<i64>("blocksize");
  const std::string mode = n.attr<std::string>("mode", "DCR");
  if (b <= 0) n.fail("blocksize must be positive");
  if (mode != "DCR" && mode != "CRD") n.fail("mode must be DCR or CRD, got '" + mode + "'");
  auto lib = std::make_shared<lazy_library>();
  return [b, crd = mode == "CRD", to_space, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    require_movable(ctx, x.element_type());
    const auto r = shape_rules::depth_space_view(x.sizes(), b, crd, to_space, ctx.node());
    copy_view(ctx, *lib, x, r.out, r.view.sizes, r.view.strides, 0);
  };
}

/// Checks constant indices on the host (as the CPU kernels do); run-time indices are not.
inline void check_constant_indices(context& ctx, std::size_t input, i64 dim) {
  if (ctx.node().constant_input(input))
    for (i64 v : cuda_detail::host_ints(ctx, input)) fix_index(v, dim, ctx.node(), "index");
}

inline void require_index_type(const context& ctx, const cuda_tensor& t) {
  if (t.element_type() != dtype::int64 && t.element_type() != dtype::int32)
    ctx.fail("indices must be int32 or int64, not " + std::string(to_string(t.element_type())));
}

inline fn make_gather(const kernel_node& n) {
  const i64 axis_attr = n.attr<i64>("axis", 0);
  auto lib = std::make_shared<lazy_library>();
  return [axis_attr, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& it = ctx.input(1);
    require_movable(ctx, x.element_type());
    require_index_type(ctx, it);
    const i64 rank = static_cast<i64>(x.rank());
    if (rank == 0) ctx.fail("data must have rank >= 1");
    const std::size_t axis = static_cast<std::size_t>(normalize_axis(axis_attr, rank, ctx.node()));
    const i64 dim = x.sizes()[axis];
    check_constant_indices(ctx, 1, dim);
    std::vector<i64> out(x.sizes().begin(), x.sizes().begin() + static_cast<std::ptrdiff_t>(axis));
    out.insert(out.end(), it.sizes().begin(), it.sizes().end());
    out.insert(out.end(), x.sizes().begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.sizes().end());
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), out);
    if (y.size() == 0) return;
    if (dim == 0) ctx.fail("index into an empty axis");
    long long nn = y.size(), ni = it.size(), inner = prod(x.sizes(), axis + 1, x.rank()), d = dim;
    int idx64 = it.element_type() == dtype::int64;
    void *yp = y.data(), *xp = x.data(), *ip = it.data();
    void* args[] = {&yp, &xp, &ip, &idx64, &nn, &ni, &inner, &d};
    auto& p = ctx.policy();
    const auto& k = move_kernels(ctx, *lib);
    p.launch(k.kernels[entry_index(mk::gather, size_of(x.element_type()))], p.blocks_for(nn), 256, args, ctx.stream());
  };
}

/// Launches GatherElements' (`mk::gather_el`: y[i] = src at the index) or ScatterElements'
/// (`mk::scatter_el`: y at the index = src[i]) kernel over the indices `it` along `axis` of
/// data `x` (the index position walks `it`'s sizes, the other axes stride as in `x`).
inline void launch_along_axis(context& ctx, lazy_library& lib, mk kind, void* y, const cuda_tensor& x, const void* src,
                              const cuda_tensor& it, std::size_t axis, scatter_reduction red = scatter_reduction::none) {
  if (x.rank() > static_cast<std::size_t>(view_rank)) ctx.fail("rank " + std::to_string(x.rank()) + " is over the CUDA kernels' " + std::to_string(view_rank));
  auto st = strides_of(x.sizes());
  long long axis_st = st[axis], d = x.sizes()[axis];
  st[axis] = 0;
  g_view v;
  v.n = it.size();
  v.rank = static_cast<long long>(x.rank());
  for (std::size_t q = 0; q < x.rank(); ++q) {
    v.sizes[q] = it.sizes()[q];
    v.in_st[q] = st[q];
  }
  int idx64 = it.element_type() == dtype::int64;
  const void* ip = it.data();
  void* args[] = {&y, &src, &ip, &idx64, &v, &axis_st, &d};
  auto& p = ctx.policy();
  const cudaKernel_t k = red != scatter_reduction::none ? scatter_reduce_kernels(ctx, lib, x.element_type(), red).kernels[1]
                                                        : move_kernels(ctx, lib).kernels[entry_index(kind, size_of(x.element_type()))];
  p.launch(k, p.blocks_for(v.n), 256, args, ctx.stream());
}

inline fn make_gather_elements(const kernel_node& n) {
  const i64 axis_attr = n.attr<i64>("axis", 0);
  auto lib = std::make_shared<lazy_library>();
  return [axis_attr, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& it = ctx.input(1);
    require_movable(ctx, x.element_type());
    require_index_type(ctx, it);
    const std::size_t axis = shape_rules::elements_axis(x.sizes(), it.sizes(), nullptr, axis_attr, ctx.node());
    const i64 dim = x.sizes()[axis];
    check_constant_indices(ctx, 1, dim);
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), it.sizes());
    if (y.size() == 0) return;
    if (dim == 0) ctx.fail("index into an empty axis");
    launch_along_axis(ctx, *lib, mk::gather_el, y.data(), x, x.data(), it, axis);
  };
}

inline fn make_scatter_nd(const kernel_node& n) {
  const scatter_reduction red = read_scatter_reduction(n);
  auto lib = std::make_shared<lazy_library>();
  return [lib, red](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& it = ctx.input(1);
    const cuda_tensor& up = ctx.input(2);
    require_movable(ctx, x.element_type());
    require_index_type(ctx, it);
    if (up.element_type() != x.element_type()) ctx.fail("updates and data have different element types");
    if (it.rank() < 1) ctx.fail("indices must have rank >= 1");
    const i64 k = it.sizes().back();
    if (k < 0 || static_cast<std::size_t>(k) > x.rank()) ctx.fail("index tuples are longer than the data rank");
    std::vector<i64> want(it.sizes().begin(), it.sizes().end() - 1);
    want.insert(want.end(), x.sizes().begin() + k, x.sizes().end());
    if (up.sizes() != want) ctx.fail("updates have sizes " + sizes_str(up.sizes()) + ", expected " + sizes_str(want));
    if (k > view_rank) ctx.fail("index tuples longer than " + std::to_string(view_rank));
    if (ctx.node().constant_input(1)) {
      const auto idx = cuda_detail::host_ints(ctx, 1);
      for (std::size_t i = 0; i < idx.size(); ++i)
        fix_index(idx[i], x.sizes()[i % static_cast<std::size_t>(k)], ctx.node(), "index");
    }
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
    ctx.policy().copy_on_device(y.data(), x.data(), x.nbytes(), ctx.stream());
    if (up.size() == 0) return;
    const auto st = strides_of(x.sizes());
    long long block = prod(x.sizes(), static_cast<std::size_t>(k), x.rank());
    g_view v;
    v.n = up.size();
    v.rank = k;
    for (i64 j = 0; j < k; ++j) {
      v.sizes[j] = x.sizes()[static_cast<std::size_t>(j)];
      v.in_st[j] = st[static_cast<std::size_t>(j)];
    }
    int idx64 = it.element_type() == dtype::int64;
    void *yp = y.data(), *upp = up.data(), *ip = it.data();
    void* args[] = {&yp, &upp, &ip, &idx64, &v, &block};
    auto& p = ctx.policy();
    const cudaKernel_t kk = red != scatter_reduction::none
                                ? scatter_reduce_kernels(ctx, *lib, x.element_type(), red).kernels[0]
                                : move_kernels(ctx, *lib).kernels[entry_index(mk::scatter_nd, size_of(x.element_type()))];
    p.launch(kk, p.blocks_for(v.n), 256, args, ctx.stream());
  };
}

inline fn make_gather_nd(const kernel_node& n) {
  const i64 batch = n.attr<i64>("batch_dims", 0);
  auto lib = std::make_shared<lazy_library>();
  return [batch, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& it = ctx.input(1);
    require_movable(ctx, x.element_type());
    require_index_type(ctx, it);
    const std::size_t b = static_cast<std::size_t>(batch);
    if (batch < 0 || it.rank() < 1 || b >= it.rank() || b >= x.rank())
      ctx.fail("batch_dims " + std::to_string(batch) + " does not fit data " + sizes_str(x.sizes()) + " and indices " + sizes_str(it.sizes()));
    for (std::size_t d = 0; d < b; ++d)
      if (x.sizes()[d] != it.sizes()[d]) ctx.fail("batch dimensions of data and indices differ");
    const i64 k = it.sizes().back();
    if (k < 1 || static_cast<std::size_t>(k) + b > x.rank())
      ctx.fail("index tuples of length " + std::to_string(k) + " do not fit data " + sizes_str(x.sizes()));
    if (k > view_rank) ctx.fail("index tuples longer than " + std::to_string(view_rank));
    const auto kk = static_cast<std::size_t>(k);
    if (ctx.node().constant_input(1)) {
      const auto idx = cuda_detail::host_ints(ctx, 1);
      for (std::size_t i = 0; i < idx.size(); ++i) fix_index(idx[i], x.sizes()[b + i % kk], ctx.node(), "index");
    }
    std::vector<i64> out(it.sizes().begin(), it.sizes().end() - 1);
    out.insert(out.end(), x.sizes().begin() + static_cast<std::ptrdiff_t>(b + kk), x.sizes().end());
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), out);
    if (y.size() == 0) return;
    const auto st = strides_of(x.sizes());
    g_view v;
    v.n = y.size();
    v.rank = k;
    for (std::size_t j = 0; j < kk; ++j) {
      v.sizes[j] = x.sizes()[b + j];
      v.in_st[j] = st[b + j];
    }
    long long block = prod(x.sizes(), b + kk, x.rank()), tuples = prod(it.sizes(), b, it.rank() - 1),
              batch_st = prod(x.sizes(), b, x.rank());
    if (tuples == 0 || block == 0) return;
    int idx64 = it.element_type() == dtype::int64;
    void *yp = y.data(), *xp = x.data(), *ip = it.data();
    void* args[] = {&yp, &xp, &ip, &idx64, &v, &block, &tuples, &batch_st};
    auto& p = ctx.policy();
    const auto& kern = move_kernels(ctx, *lib);
    p.launch(kern.kernels[entry_index(mk::gather_nd, size_of(x.element_type()))], p.blocks_for(v.n), 256, args, ctx.stream());
  };
}

inline fn make_scatter_elements(const kernel_node& n) {
  const scatter_reduction red = read_scatter_reduction(n);
  const i64 axis_attr = n.attr<i64>("axis", 0);
  auto lib = std::make_shared<lazy_library>();
  return [axis_attr, lib, red](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& it = ctx.input(1);
    const cuda_tensor& up = ctx.input(2);
    require_movable(ctx, x.element_type());
    require_index_type(ctx, it);
    if (up.element_type() != x.element_type()) ctx.fail("updates and data have different element types");
    const std::size_t axis = shape_rules::elements_axis(x.sizes(), it.sizes(), &up.sizes(), axis_attr, ctx.node());
    check_constant_indices(ctx, 1, x.sizes()[axis]);
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
    ctx.policy().copy_on_device(y.data(), x.data(), x.nbytes(), ctx.stream());
    if (up.size() == 0) return;
    launch_along_axis(ctx, *lib, mk::scatter_el, y.data(), x, up.data(), it, axis, red);
  };
}

/// OneHot: int32 or int64 indices as they are, other numeric ones truncated to int64 first.
/// Output 0 = the one-hot encoding of the int32 / int64 `ind` along `axis` (of the output):
/// `vals` [off, on] (a device tensor of 2 elements), `depth` classes; negative indices count
/// from the end when `wrap` (ONNX), match nothing otherwise (TensorFlow).
inline void one_hot_into(context& ctx, lazy_library& lib, const cuda_tensor& ind, const cuda_tensor& vals, i64 depth, i64 axis, bool wrap) {
  std::vector<i64> out = ind.sizes();
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis), depth);
  cuda_tensor& y = ctx.allocate_output(0, vals.element_type(), out);
  if (y.size() == 0) return;
  long long nn = y.size(), dd = depth, inner = prod(ind.sizes(), static_cast<std::size_t>(axis), ind.rank());
  int idx64 = ind.element_type() == dtype::int64, w = wrap;
  void *yp = y.data(), *vp = vals.data(), *ip = ind.data();
  void* args[] = {&yp, &vp, &ip, &idx64, &nn, &dd, &inner, &w};
  auto& p = ctx.policy();
  const auto& k = move_kernels(ctx, lib);
  p.launch(k.kernels[entry_index(mk::one_hot, size_of(vals.element_type()))], p.blocks_for(nn), 256, args, ctx.stream());
}

inline fn make_one_hot(const kernel_node& n) {
  const i64 axis_attr = n.attr<i64>("axis", -1);
  auto lib = std::make_shared<lazy_library>();
  return [axis_attr, lib](context& ctx) {
    cuda_tensor ind = ctx.input(0);
    const cuda_tensor& vals = ctx.input(2);
    require_movable(ctx, ind.element_type());
    if (ind.element_type() != dtype::int64 && ind.element_type() != dtype::int32) {
      // other numeric indices: truncated to int64 first, as the CPU kernel converts them
      const dtype t = ind.element_type();
      cuda_tensor as64 = ctx.policy().allocate_tensor(dtype::int64, ind.sizes(), ctx.stream());
      const cuda_tensor* xs[] = {&ind};
      const auto& k = lib->get(ctx.policy(), "index," + std::string(to_string(t)), {"ew_flat", "ew_strided"},
                               [&] { return cuda_codegen::elementwise_source({{t}, dtype::int64, "r = (R)x0;"}); });
      cuda_detail::launch_elementwise(ctx, k, as64, xs);
      ind = std::move(as64);
    }
    require_movable(ctx, vals.element_type());
    const gpass::tensor dep = cuda_detail::host_value(ctx, 1);
    const i64 depth = static_cast<i64>(first_double(dep, ctx.node(), "depth"));
    if (depth < 1) ctx.fail("depth must be positive, got " + std::to_string(depth));
    if (vals.size() != 2) ctx.fail("values must have 2 elements (off, on)");
    const i64 rank = static_cast<i64>(ind.rank()) + 1;
    one_hot_into(ctx, *lib, ind, vals, depth, normalize_axis(axis_attr, rank, ctx.node()), true);
  };
}

/// EyeLike: zeros with ones on diagonal `k` (of the input's element type, or `dtype`).
inline fn make_eye_like(const kernel_node& n) {
  const i64 k = n.attr<i64>("k", 0);
  const dtype to = n.has_attr("dtype") ? shape_rules::onnx_dtype_attr(n, "dtype", dtype::undefined) : dtype::undefined;
  auto lib = std::make_shared<lazy_library>();
  return [k, to, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    if (x.rank() != 2) ctx.fail("input must have rank 2, got " + sizes_str(x.sizes()));
    const dtype t = to == dtype::undefined ? x.element_type() : to;
    require_movable(ctx, t);
    cuda_tensor& y = ctx.allocate_output_zeroed(0, t, x.sizes());
    const i64 R = x.sizes()[0], C = x.sizes()[1];
    const i64 first = std::max<i64>(0, -k);
    const i64 count = std::max<i64>(0, std::min(R - first, C - first - k));
    if (count <= 0) return;
    // the one, as a device scalar, moved with input stride 0 onto the diagonal
    const std::uint64_t bits = scalar_bits(t, 1.0, ctx.node());
    cuda_tensor one = ctx.policy().allocate_tensor(t, {}, ctx.stream());
    ctx.policy().copy_to_device(one.data(), &bits, size_of(t), ctx.stream());
    auto* dst = static_cast<std::byte*>(y.data()) + (first * C + first + k) * static_cast<i64>(size_of(t));
    move(ctx, *lib, t, dst, one.data(), {count}, {0}, {C + 1}, 0);
  };
}

/// Compress: the condition read on the host, its selected positions gathered on the device.
inline fn make_compress(const kernel_node& n) {
  const std::optional<i64> axis_attr = n.has_attr("axis") ? std::optional<i64>(n.attr<i64>("axis")) : std::nullopt;
  auto lib = std::make_shared<lazy_library>();
  return [axis_attr, lib](context& ctx) {
    const cuda_tensor& x0 = ctx.input(0);
    require_movable(ctx, x0.element_type());
    const gpass::tensor cond = cuda_detail::host_value(ctx, 1);
    if (cond.element_type() != dtype::bool_ || cond.rank() != 1) ctx.fail("condition must be a 1-D bool tensor");
    const cuda_tensor x = axis_attr ? x0 : x0.reshaped({x0.size()});
    // (dim_axis, not normalize_axis: the axis indexes x's sizes, and a scalar has no axis 0)
    const std::size_t axis =
        axis_attr ? static_cast<std::size_t>(shape_rules::dim_axis(*axis_attr, static_cast<i64>(x.rank()), ctx.node())) : 0;
    const i64 dim = x.sizes()[axis];
    std::vector<i64> sel;
    const bool* c = cond.data<bool>();
    for (i64 i = 0; i < cond.size(); ++i)
      if (c[i]) {
        if (i >= dim) ctx.fail("condition selects index " + std::to_string(i) + " beyond the axis size " + std::to_string(dim));
        sel.push_back(i);
      }
    std::vector<i64> out = x.sizes();
    out[axis] = static_cast<i64>(sel.size());
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), out);
    if (y.size() == 0) return;
    const cuda_tensor idx = ctx.policy().upload(gpass::tensor::from<i64>(sel), ctx.stream());
    long long nn = y.size(), ni = static_cast<long long>(sel.size()), inner = prod(x.sizes(), axis + 1, x.rank()), d = dim;
    int idx64 = 1;
    void *yp = y.data(), *xp = x.data(), *ip = idx.data();
    void* args[] = {&yp, &xp, &ip, &idx64, &nn, &ni, &inner, &d};
    auto& p = ctx.policy();
    const auto& k = move_kernels(ctx, *lib);
    p.launch(k.kernels[entry_index(mk::gather, size_of(x.element_type()))], p.blocks_for(nn), 256, args, ctx.stream());
  };
}

/// Output 0 = `x` with the first `lens[b]` steps (in [0, time dim]) along axis `ta` of each
/// entry b along axis `ba` reversed: a copy, then per entry those steps moved reversed (a
/// negative stride along the time axis).
inline void reverse_sequence_into(context& ctx, lazy_library& lib, const cuda_tensor& x, const std::vector<i64>& lens, std::size_t ba,
                                  std::size_t ta) {
  cuda_tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
  if (y.size() == 0) return;
  auto& p = ctx.policy();
  p.copy_on_device(y.data(), x.data(), x.nbytes(), ctx.stream());
  const auto st = strides_of(x.sizes());
  const auto es = static_cast<i64>(size_of(x.element_type()));
  for (std::size_t b = 0; b < lens.size(); ++b) {
    const i64 l = lens[b];
    if (l <= 1) continue;  // nothing to reverse
    std::vector<i64> sizes = x.sizes(), in_st = st;
    sizes[ba] = 1;
    sizes[ta] = l;
    in_st[ta] = -st[ta];
    const i64 at = static_cast<i64>(b) * st[ba];
    move(ctx, lib, x.element_type(), static_cast<std::byte*>(y.data()) + at * es, x.data(), sizes, in_st, st, at + (l - 1) * st[ta]);
  }
}

/// ReverseSequence (`reverse_sequence_into`), ONNX's checks.
inline fn make_reverse_sequence(const kernel_node& n) {
  const i64 batch_attr = n.attr<i64>("batch_axis", 1), time_attr = n.attr<i64>("time_axis", 0);
  auto lib = std::make_shared<lazy_library>();
  return [batch_attr, time_attr, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    require_movable(ctx, x.element_type());
    const i64 rank = static_cast<i64>(x.rank());
    if (rank < 2) ctx.fail("input must have rank >= 2");
    const auto ba = static_cast<std::size_t>(normalize_axis(batch_attr, rank, ctx.node()));
    const auto ta = static_cast<std::size_t>(normalize_axis(time_attr, rank, ctx.node()));
    if (ba == ta) ctx.fail("batch_axis and time_axis are the same");
    const auto lens = cuda_detail::host_ints(ctx, 1);
    const i64 B = x.sizes()[ba], T = x.sizes()[ta];
    if (static_cast<i64>(lens.size()) != B) ctx.fail("sequence_lens must have one entry per batch");
    for (i64 l : lens)
      if (l < 0 || l > T) ctx.fail("sequence length " + std::to_string(l) + " is out of range [0, " + std::to_string(T) + "]");
    reverse_sequence_into(ctx, *lib, x, lens, ba, ta);
  };
}

/// Output 0 = `x` padded by `begin` / `end` per axis (negative: cropped) in mode `m` (0
/// constant `cval`, the element's bits; 1 reflect, 2 edge, 3 wrap).
inline void pad_into(context& ctx, lazy_library& lib, const cuda_tensor& x, const std::vector<i64>& begin, const std::vector<i64>& end, int m,
                     std::uint64_t cval) {
  const std::size_t rank = x.rank();
  std::vector<i64> out(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    const i64 in = x.sizes()[d];
    out[d] = in + begin[d] + end[d];
    if (out[d] < 0) ctx.fail("pads remove more than the " + std::to_string(in) + " elements of axis " + std::to_string(d));
    if (m != 0 && in == 0 && out[d] > 0) ctx.fail("cannot pad an empty axis in this mode");
  }
  cuda_tensor& y = ctx.allocate_output(0, x.element_type(), out);
  if (y.size() == 0) return;
  // dimensions neither padded nor cropped fold into the next one out
  const auto st = strides_of(x.sizes());
  g_padv pv;
  pv.n = y.size();
  pv.mode = m;
  int r = 0;
  for (std::size_t d = 0; d < rank; ++d) {
    if (out[d] == 1 && x.sizes()[d] == 1 && begin[d] == 0) continue;
    if (r > 0 && begin[d] == 0 && end[d] == 0 && pv.begin[r - 1] == 0 && pv.out[r - 1] == pv.in[r - 1] &&
        pv.in_st[r - 1] == st[d] * x.sizes()[d]) {
      pv.out[r - 1] *= out[d];
      pv.in[r - 1] *= x.sizes()[d];
      pv.in_st[r - 1] = st[d];
      continue;
    }
    if (r == view_rank) ctx.fail("padding over more than " + std::to_string(view_rank) + " dimensions");
    pv.out[r] = out[d];
    pv.in[r] = x.sizes()[d];
    pv.begin[r] = begin[d];
    pv.in_st[r] = st[d];
    ++r;
  }
  pv.rank = r;
  void *yp = y.data(), *xp = x.data();
  void* args[] = {&yp, &xp, &pv, &cval};
  auto& p = ctx.policy();
  const auto& k = move_kernels(ctx, lib);
  p.launch(k.kernels[entry_index(mk::pad, size_of(x.element_type()))], p.blocks_for(pv.n), 256, args, ctx.stream());
}

/// CenterCropPad(input, shape): axes; the pads the CPU's (`shape_rules::center_crop_pad`),
/// padding with zeros.
inline fn make_center_crop_pad(const kernel_node& n) {
  std::optional<std::vector<i64>> axes_attr;
  if (n.has_attr("axes")) axes_attr = n.attr<std::vector<i64>>("axes");
  auto lib = std::make_shared<lazy_library>();
  return [axes_attr, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    require_movable(ctx, x.element_type());
    const auto [begin, end] = shape_rules::center_crop_pad(x.sizes(), cuda_detail::host_ints(ctx, 1), axes_attr, ctx.node());
    pad_into(ctx, *lib, x, begin, end, 0, 0);
  };
}

inline fn make_pad(const kernel_node& n) {
  const std::string mode = n.attr<std::string>("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") n.fail("unknown mode '" + mode + "'");
  std::optional<std::vector<i64>> pads_attr;
  if (n.has_attr("pads")) pads_attr = n.attr<std::vector<i64>>("pads");
  else if (n.has_attr("paddings")) pads_attr = n.attr<std::vector<i64>>("paddings");
  const double value_attr = n.attr<double>("value", 0.0);
  const int m = mode == "constant" ? 0 : mode == "reflect" ? 1 : mode == "edge" ? 2 : 3;
  auto lib = std::make_shared<lazy_library>();
  return [m, pads_attr, value_attr, lib](context& ctx) {
    const kernel_node& nd = ctx.node();
    const cuda_tensor& x = ctx.input(0);
    require_movable(ctx, x.element_type());
    const std::size_t rank = x.rank();
    std::vector<i64> pads = pads_attr ? *pads_attr : cuda_detail::host_ints(ctx, 1);
    std::vector<i64> begin(rank, 0), end(rank, 0);
    if (!pads_attr && ctx.has_input(3)) {
      const auto axes = cuda_detail::host_ints(ctx, 3);
      if (pads.size() != 2 * axes.size())
        ctx.fail("pads has " + std::to_string(pads.size()) + " entries for " + std::to_string(axes.size()) + " axes");
      for (std::size_t i = 0; i < axes.size(); ++i) {
        // (dim_axis: the axis indexes begin / end, of x's rank; a scalar has no axis 0)
        const std::size_t a = static_cast<std::size_t>(shape_rules::dim_axis(axes[i], static_cast<i64>(rank), nd));
        begin[a] = pads[i];
        end[a] = pads[i + axes.size()];
      }
    } else {
      if (pads.size() != 2 * rank) ctx.fail("pads has " + std::to_string(pads.size()) + " entries for rank " + std::to_string(rank));
      for (std::size_t i = 0; i < rank; ++i) {
        begin[i] = pads[i];
        end[i] = pads[i + rank];
      }
    }
    std::uint64_t cval = 0;
    if (!pads_attr && ctx.has_input(2)) {
      if (ctx.input(2).element_type() != x.element_type()) ctx.fail("constant_value has another element type than data");
      if (ctx.input(2).size() < 1) ctx.fail("constant_value is empty");
      cval = first_bits(cuda_detail::host_value(ctx, 2));
    } else if (pads_attr) {
      cval = scalar_bits(x.element_type(), value_attr, nd);
    }
    pad_into(ctx, *lib, x, begin, end, m, cval);
  };
}

inline fn make_constant_of_shape(const kernel_node& n) {
  gpass::tensor value = gpass::tensor::scalar<float>(0.0f);
  if (n.has_attr("value")) value = n.attr<gpass::tensor>("value");
  if (value.size() != 1) n.fail("value must have one element");
  if (!cuda_codegen::supported(value.element_type()))
    n.fail("no CUDA kernel for element type " + std::string(to_string(value.element_type())));
  const dtype t = value.element_type();
  const std::uint64_t bits = first_bits(value);
  auto lib = std::make_shared<lazy_library>();
  return [t, bits, lib](context& ctx) {
    const auto s = cuda_detail::host_ints(ctx, 0);
    for (i64 v : s)
      if (v < 0) ctx.fail("shape has a negative size " + std::to_string(v));
    cuda_tensor& y = ctx.allocate_output(0, t, s);
    if (y.size() == 0) return;
    auto& p = ctx.policy();
    if (bits == 0) {
      p.fill_zero(y, ctx.stream());
      return;
    }
    void* yp = y.data();
    long long nn = y.size();
    std::uint64_t v = bits;
    void* args[] = {&yp, &nn, &v};
    const auto& k = move_kernels(ctx, *lib);
    p.launch(k.kernels[entry_index(mk::fill, size_of(t))], p.blocks_for(nn), 256, args, ctx.stream());
  };
}

/// Output 0 = `x` (rank >= 2) with the elements of each matrix outside the band lo <= column -
/// row <= hi zeroed (Trilu, TF's MatrixBandPart).
inline void band_into(context& ctx, lazy_library& lib, const cuda_tensor& x, long long lo, long long hi) {
  cuda_tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
  if (y.size() == 0) return;
  long long nn = y.size(), rows = x.sizes()[x.rank() - 2], cols = x.sizes()[x.rank() - 1];
  void *yp = y.data(), *xp = x.data();
  void* args[] = {&yp, &xp, &nn, &rows, &cols, &lo, &hi};
  auto& p = ctx.policy();
  const auto& kk = move_kernels(ctx, lib);
  p.launch(kk.kernels[entry_index(mk::trilu, size_of(x.element_type()))], p.blocks_for(nn), 256, args, ctx.stream());
}

inline fn make_trilu(const kernel_node& n) {
  const bool upper = n.attr<i64>("upper", 1) != 0;
  auto lib = std::make_shared<lazy_library>();
  return [upper, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    require_movable(ctx, x.element_type());
    if (x.rank() < 2) ctx.fail("input must have rank >= 2");
    const i64 k = ctx.has_input(1) ? static_cast<i64>(first_double(cuda_detail::host_value(ctx, 1), ctx.node(), "k")) : 0;
    band_into(ctx, *lib, x, upper ? k : LLONG_MIN, upper ? LLONG_MAX : k);
  };
}

inline std::vector<dtype> range_types() { return {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::int16, dtype::int32, dtype::int64}; }

/// Output 0 = Range(start `a`, limit `l`, delta `d`: host scalars of one element type of
/// `range_types()`), `stash` the f16 / bf16 compute type (1 float, 11 double).
inline void range_into(context& ctx, lazy_library& lib, i64 stash, const gpass::tensor& a, const gpass::tensor& l, const gpass::tensor& d) {
  const dtype t = a.element_type();
  double start = 0, delta = 0;
  long long istart = 0, idelta = 0;
  i64 count = 0;
  if (cuda_codegen::is_float(t)) {
    start = first_double(a, ctx.node(), "start");
    delta = first_double(d, ctx.node(), "delta");
    const double limit = first_double(l, ctx.node(), "limit");
    count = shape_rules::range_count(start, limit, delta, ctx.node());
    if (t == dtype::f32) {  // the CPU kernel reads them as float
      start = static_cast<float>(start);
      delta = static_cast<float>(delta);
    }
  } else {
    istart = static_cast<i64>(first_double(a, ctx.node(), "start"));
    idelta = static_cast<i64>(first_double(d, ctx.node(), "delta"));
    if (t == dtype::int64) {  // exact, past 2^53
      istart = a.data<std::int64_t>()[0];
      idelta = d.data<std::int64_t>()[0];
    }
    const i64 limit = t == dtype::int64 ? l.data<std::int64_t>()[0] : static_cast<i64>(first_double(l, ctx.node(), "limit"));
    count = shape_rules::range_count(i64(istart), limit, i64(idelta), ctx.node());
  }
  cuda_tensor& y = ctx.allocate_output(0, t, {count});
  if (count == 0) return;
  const std::string key = std::string(to_string(t)) + "/" + std::to_string(stash);
  const auto& k = lib.get(ctx.policy(), key, {"g_range"}, [&] { return range_source(t, stash); });
  void* yp = y.data();
  long long nn = count;
  void* args[] = {&yp, &nn, &start, &delta, &istart, &idelta};
  auto& p = ctx.policy();
  p.launch(k.kernels[0], p.blocks_for(nn), 256, args, ctx.stream());
}

inline fn make_range(const kernel_node& n) {
  const i64 stash = n.attr<i64>("stash_type", 1);
  if (stash != 1 && stash != 11) n.fail("stash_type must be 1 (float) or 11 (double), got " + std::to_string(stash));
  auto lib = std::make_shared<lazy_library>();
  return [stash, lib](context& ctx) {
    const dtype t = ctx.input(0).element_type();
    if (ctx.input(1).element_type() != t || ctx.input(2).element_type() != t)
      ctx.fail("start, limit and delta must have the same element type");
    if (ctx.input(0).size() != 1 || ctx.input(1).size() != 1 || ctx.input(2).size() != 1)
      ctx.fail("start, limit and delta must be scalars");
    const auto r = range_types();
    if (std::find(r.begin(), r.end(), t) == r.end()) ctx.fail("no CUDA Range of element type " + std::string(to_string(t)));
    range_into(ctx, *lib, stash, cuda_detail::host_value(ctx, 0), cuda_detail::host_value(ctx, 1), cuda_detail::host_value(ctx, 2));
  };
}

}  // namespace cuda_array_detail

/// Every source the array kernels generate (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> array_generated_sources() {
  using namespace cuda_array_detail;
  std::vector<std::pair<std::string, std::string>> r;
  r.emplace_back("move", move_source());
  // every reduction on f32; every element size (the compare-and-swap word differs) with one
  auto reduce = [&](dtype t, scatter_reduction red) {
    r.emplace_back("scatter_reduce_" + std::string(to_string(t)) + "_" + std::to_string(static_cast<int>(red)), scatter_reduce_source(t, red));
  };
  for (auto red : {scatter_reduction::add, scatter_reduction::mul, scatter_reduction::max, scatter_reduction::min}) reduce(dtype::f32, red);
  reduce(dtype::f16, scatter_reduction::add);
  reduce(dtype::bf16, scatter_reduction::max);
  reduce(dtype::f64, scatter_reduction::mul);
  reduce(dtype::int8, scatter_reduction::min);
  reduce(dtype::int64, scatter_reduction::add);
  reduce(dtype::bool_, scatter_reduction::mul);
  for (dtype t : range_types()) {
    r.emplace_back("range_" + std::string(to_string(t)), range_source(t, 1));
    if (t == dtype::f16 || t == dtype::bf16) r.emplace_back("range_" + std::string(to_string(t)) + "_stash11", range_source(t, 11));
  }
  return r;
}

/// Registers the CUDA shape and data-movement kernels.
inline void register_cuda_array(kernel_registry<cuda>& r) {
  using namespace cuda_array_detail;
  using cuda_detail::host_ints;
  // ---- views and shapes
  r.add({.op = "Reshape", .alias_input = 0, .make = [](const kernel_node& n) -> fn {
    const bool allowzero = n.attr<i64>("allowzero", 0) != 0;
    std::optional<std::vector<i64>> attr_shape;
    if (n.has_attr("shape")) attr_shape = n.attr<std::vector<i64>>("shape");
    return [allowzero, attr_shape](context& ctx) {
      const cuda_tensor& x = ctx.input(0);
      std::vector<i64> req = attr_shape ? *attr_shape : host_ints(ctx, 1);
      ctx.set_output(0, x.reshaped(reshape_sizes(x.sizes(), std::move(req), allowzero, ctx.node())));
    };
  }});
  // BitCast (26): the same bytes as element type `to` of the same width, a view of the input
  // (to bool stays on the CPU, whose kernel makes each byte 0 or 1)
  r.add({.op = "BitCast", .since_version = 26, .alias_input = 0, .make = [](const kernel_node& n) -> fn {
           const i64 code = n.attr<i64>("to");
           const auto to = dtype_from_onnx_code(code);
           if (!to || *to == dtype::string || size_of(*to) == 0) n.fail("'to' (" + std::to_string(code) + ") is not a type gpass can bit-cast to");
           return [to = *to](context& ctx) {
             const cuda_tensor& x = ctx.input(0);
             if (bit_width(x.element_type()) != bit_width(to))
               ctx.fail("cannot bit-cast " + std::string(to_string(x.element_type())) + " to " + std::string(to_string(to)) +
                        " (the widths differ)");
             ctx.set_output(0, cuda_tensor(to, x.sizes(), x.buffer()));
           };
         },
         .applies = [](const kernel_query& q) {
           if (!q.attrs) return true;
           auto it = q.attrs->find("to");
           if (it == q.attrs->end() || !it->second.is<i64>()) return true;  // (the kernel's maker reports it)
           const auto to = dtype_from_onnx_code(it->second.as<i64>());
           return !to || (*to != dtype::bool_ && cuda::holds(*to));
         }});
  r.add({.op = "Flatten", .alias_input = 0, .make = [](const kernel_node& n) -> fn {
    const i64 axis = n.attr<i64>("axis", 1);
    return [axis](context& ctx) {
      const cuda_tensor& x = ctx.input(0);
      const i64 rank = static_cast<i64>(x.rank());
      if (axis < -rank || axis > rank) ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
      const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
      ctx.set_output(0, x.reshaped({prod(x.sizes(), 0, a), prod(x.sizes(), a, x.rank())}));
    };
  }});
  r.add({.op = "Squeeze", .alias_input = 0, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const cuda_tensor& x = ctx.input(0);
      ctx.set_output(0, x.reshaped(shape_rules::squeeze_sizes(x.sizes(), axes_of(ctx, "axes", 1), ctx.node())));
    };
  }});
  r.add({.op = "Unsqueeze", .alias_input = 0, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const cuda_tensor& x = ctx.input(0);
      auto axes = axes_of(ctx, "axes", 1);
      if (!axes) ctx.fail("axes are missing");
      ctx.set_output(0, x.reshaped(shape_rules::unsqueeze_sizes(x.sizes(), *axes, ctx.node())));
    };
  }});
  r.add({.op = "Shape", .make = [](const kernel_node& n) -> fn {
    const i64 start = n.attr<i64>("start", 0);
    const std::optional<i64> end = n.has_attr("end") ? std::optional<i64>(n.attr<i64>("end")) : std::nullopt;
    return [start, end](context& ctx) {
      const cuda_tensor& x = ctx.input(0);
      const i64 rank = static_cast<i64>(x.rank());
      auto clampi = [&](i64 v) { return std::clamp(v < 0 ? v + rank : v, i64{0}, rank); };
      const i64 b = clampi(start), e = clampi(end.value_or(rank));
      const i64 len = std::max<i64>(0, e - b);
      gpass::tensor h(dtype::int64, {len});
      for (i64 i = 0; i < len; ++i) h.data<i64>()[i] = x.sizes()[static_cast<std::size_t>(b + i)];
      cuda_tensor& y = ctx.allocate_output(0, dtype::int64, {len});
      ctx.policy().copy_to_device(y.data(), h.raw(), h.nbytes(), ctx.stream());
    };
  }});
  r.add({.op = "Size", .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const i64 v = ctx.input(0).size();
      cuda_tensor& y = ctx.allocate_output(0, dtype::int64, {});
      ctx.policy().copy_to_device(y.data(), &v, sizeof v, ctx.stream());
    };
  }});
  // ---- data movement
  const auto types = movable_types();
  r.add({.op = "Transpose", .dtypes = types, .make = make_transpose});
  r.add({.op = "Concat", .dtypes = types, .make = make_concat});
  r.add({.op = "Split", .dtypes = types, .make = make_split});
  r.add({.op = "Slice", .dtypes = types, .make = make_slice});
  r.add({.op = "Expand", .dtypes = types, .make = make_expand});
  r.add({.op = "Tile", .dtypes = types, .make = make_tile});
  r.add({.op = "DepthToSpace", .dtypes = types, .make = [](const kernel_node& n) { return make_depth_space(n, true); }});
  r.add({.op = "SpaceToDepth", .dtypes = types, .make = [](const kernel_node& n) { return make_depth_space(n, false); }});
  r.add({.op = "Gather", .dtypes = types, .make = make_gather});
  r.add({.op = "GatherElements", .dtypes = types, .make = make_gather_elements});
  r.add({.op = "ScatterND", .dtypes = types, .make = make_scatter_nd});
  r.add({.op = "GatherND", .dtypes = types, .make = make_gather_nd});
  r.add({.op = "ScatterElements", .dtypes = types, .make = make_scatter_elements});
  r.add({.op = "Scatter", .dtypes = types, .make = make_scatter_elements});
  r.add({.op = "OneHot", .dtypes = types, .type_input = 2, .make = make_one_hot, .applies = [](const kernel_query& q) {
            return !q.inputs.empty() && q.inputs[0] != dtype::bool_ && cuda_codegen::supported(q.inputs[0]);
          }});
  r.add({.op = "Pad", .dtypes = types, .make = make_pad});
  r.add({.op = "CenterCropPad", .since_version = 18, .dtypes = types, .make = make_center_crop_pad});
  r.add({.op = "EyeLike", .type_input = -1, .make = make_eye_like});
  r.add({.op = "Compress", .dtypes = types, .make = make_compress});
  r.add({.op = "ReverseSequence", .dtypes = types, .make = make_reverse_sequence});
  r.add({.op = "Trilu", .dtypes = types, .make = make_trilu});
  r.add({.op = "ConstantOfShape", .type_input = -1, .make = make_constant_of_shape});
  r.add({.op = "Range", .dtypes = range_types(), .make = make_range});
}

}  // namespace gpass::exec
