// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file array.hpp
/// Eigen CPU kernels: the array family (shape and data-movement ops of the ONNX default domain).
///
/// Reshape Shape Size Flatten Squeeze Unsqueeze Transpose Concat Split Slice Gather
/// GatherElements GatherND ScatterElements Scatter ScatterND Expand Tile Pad ConstantOfShape
/// Range OneHot Trilu EyeLike Compress NonZero Unique TopK ReverseSequence DepthToSpace
/// SpaceToDepth Resize Upsample CenterCropPad Col2Im TensorScatter BitCast.
///
/// Data movement is dispatched by element size (1/2/4/8/16-byte raw moves, plus a
/// `std::string` path), so every dtype (bool and string included) goes through a handful of
/// instantiations. Attribute-vs-input changes across opsets (Split `split`, Slice, Squeeze /
/// Unsqueeze `axes`, Pad `pads`, Upsample / Resize scales) are handled by what the node has.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/nn_rules.hpp>
#include <gpass/exec/resize_rules.hpp>

namespace gpass::exec::cpu_detail {

namespace array_detail {

using i64 = std::int64_t;

/// 16-byte element (complex128) moved as raw bytes.
struct raw16 {
  std::uint64_t lo, hi;
};

/// Calls `f.template operator()<U>()` with a move type for dtype `t`: an unsigned integer (or
/// `raw16`) of the element's size, or `std::string`.
template <class F>
void dispatch_move(dtype t, const kernel_node& n, F&& f) {
  if (t == dtype::string) return f.template operator()<std::string>();
  switch (size_of(t)) {
    case 1: return f.template operator()<std::uint8_t>();
    case 2: return f.template operator()<std::uint16_t>();
    case 4: return f.template operator()<std::uint32_t>();
    case 8: return f.template operator()<std::uint64_t>();
    case 16: return f.template operator()<raw16>();
    default: break;
  }
  n.fail("element type " + std::string(to_string(t)) + " is not supported by this kernel");
}

/// Element pointer of `t` as move type `U`.
template <class U>
U* elems(gpass::tensor& t) {
  if constexpr (std::is_same_v<U, std::string>) return t.data<std::string>();
  else return reinterpret_cast<U*>(t.raw());
}
template <class U>
const U* elems(const gpass::tensor& t) {
  if constexpr (std::is_same_v<U, std::string>) return t.data<std::string>();
  else return reinterpret_cast<const U*>(t.raw());
}

/// Copies `n` contiguous elements.
template <class U>
inline void copy_n(const U* src, i64 n, U* dst) {
  if (n <= 0) return;
  if constexpr (std::is_same_v<U, std::string>) std::copy(src, src + n, dst);
  else std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(U));
}

using shape_rules::prod;
using shape_rules::sizes_str;

/// Columns [j0, j1) of N rows of n1 from N-way interleaved values: o[i * n1 + j] =
/// s[j * N + i], in one pass over s (the compiler turns the N strided streams into shuffles):
/// an NHWC image of N channels to NCHW, the first op of a CNN fed in TensorFlow's layout
/// (224 x 224 x 3 on one thread: 41 us, the tiled transpose 56).
template <int N, class U>
void deinterleave(U* __restrict o, const U* __restrict s, i64 n1, i64 j0, i64 j1) {
  for (i64 j = j0; j < j1; ++j)
#pragma GCC unroll 4
    for (int i = 0; i < N; ++i) o[i * n1 + j] = s[j * N + i];
}

/// Copies the strided view (`src` base, `sizes`, element `strides`: any sign, 0 for
/// broadcast) into contiguous row-major `dst`. Merges contiguous dimensions, copies rows
/// with memcpy when the innermost stride is 1, transposes in tiles when the two innermost
/// dimensions are swapped, and splits rows over the policy's threads.
template <class U>
void strided_copy(const eigen_cpu& pol, U* dst, const U* src, const std::vector<i64>& sizes,
                  const std::vector<i64>& strides) {
  const i64 total = num_elements(sizes);
  if (total == 0) return;
  std::vector<i64> sz, st;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 1) continue;
    if (!sz.empty() && st.back() == strides[i] * sizes[i]) {
      sz.back() *= sizes[i];
      st.back() = strides[i];
    } else {
      sz.push_back(sizes[i]);
      st.push_back(strides[i]);
    }
  }
  if (sz.empty()) {
    dst[0] = src[0];
    return;
  }
  const std::size_t r = sz.size();
  // tiled transpose of the two innermost dimensions (outer ones are batches), in tasks of a
  // row tile and a run of columns (an NHWC image to NCHW has 3 rows: its columns are what
  // threads can share)
  if (r >= 2 && st[r - 2] == 1 && st[r - 1] != 1 && st[r - 1] != 0 && sz[r - 2] >= 2 && sz[r - 1] >= 8 &&
      sz[r - 2] * sz[r - 1] >= 64) {
    const i64 n0 = sz[r - 2], n1 = sz[r - 1], s1 = st[r - 1];
    const i64 batches = total / (n0 * n1);
    constexpr i64 tile = 32, run = 64 * tile;  // columns per task: a multiple of the tile
    const i64 row_tiles = (n0 + tile - 1) / tile, runs = (n1 + run - 1) / run;
    const double cost = static_cast<double>(std::min(n0, tile) * std::min(n1, run));
    pol.parallel_for(batches * row_tiles * runs, cost, [&](i64 b, i64 e) {
      for (i64 w = b; w < e; ++w) {
        const i64 cr = w % runs, rt = (w / runs) % row_tiles, batch = w / (runs * row_tiles);
        i64 off = 0, rem = batch;
        for (std::size_t d = r - 2; d-- > 0;) {
          off += (rem % sz[d]) * st[d];
          rem /= sz[d];
        }
        const U* s = src + off;
        U* o = dst + batch * n0 * n1;
        const i64 i0 = rt * tile, i1 = std::min(n0, i0 + tile);
        if constexpr (std::is_trivially_copyable_v<U>) {
          if (s1 == n0 && n0 <= 4) {  // interleaved rows (n0 <= tile: one row tile)
            const i64 j0 = cr * run, j1 = std::min(n1, j0 + run);
            if (n0 == 2) deinterleave<2>(o, s, n1, j0, j1);
            else if (n0 == 3) deinterleave<3>(o, s, n1, j0, j1);
            else deinterleave<4>(o, s, n1, j0, j1);
            continue;
          }
        }
        for (i64 j0 = cr * run; j0 < std::min(n1, cr * run + run); j0 += tile) {
          const i64 j1 = std::min(n1, j0 + tile);
          for (i64 i = i0; i < i1; ++i)
            for (i64 j = j0; j < j1; ++j) o[i * n1 + j] = s[i + j * s1];
        }
      }
    });
    return;
  }
  const i64 inner = sz[r - 1], is = st[r - 1];
  const i64 rows = total / inner;
  pol.parallel_for(rows, static_cast<double>(inner) + 4.0, [&](i64 b, i64 e) {
    std::vector<i64> idx(r, 0);
    i64 off = 0, rem = b;
    for (std::size_t d = r - 1; d-- > 0;) {
      idx[d] = rem % sz[d];
      rem /= sz[d];
      off += idx[d] * st[d];
    }
    for (i64 row = b; row < e; ++row) {
      U* o = dst + row * inner;
      const U* s = src + off;
      if (is == 1) copy_n(s, inner, o);
      else if (is == 0) std::fill(o, o + inner, s[0]);
      else
        for (i64 j = 0; j < inner; ++j) o[j] = s[j * is];
      for (std::size_t d = r - 1; d-- > 0;) {
        off += st[d];
        if (++idx[d] < sz[d]) break;
        off -= st[d] * sz[d];
        idx[d] = 0;
      }
    }
  });
}

/// Output 0 = the strided view of input `x` (sizes, strides, base offset), same dtype.
inline void copy_view(context& ctx, const gpass::tensor& x, std::vector<i64> out_sizes, const std::vector<i64>& view_sizes,
                      const std::vector<i64>& view_strides, i64 offset, std::size_t out = 0) {
  gpass::tensor& y = ctx.allocate_output(out, x.element_type(), std::move(out_sizes));
  if (y.size() == 0) return;
  check_string_copies(ctx, {&x}, y.size(), [&] {  // Expand, Tile: strides 0 repeat strings
    strided_walker<1> w(view_sizes, {view_strides});
    w.seek(0);
    const std::string* s = x.data<std::string>() + offset;
    double n = 0;
    for (i64 i = 0; i < y.size(); ++i, w.next()) n += static_cast<double>(s[w.offset(0)].size());
    return n;
  }, out);
  dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
    strided_copy<U>(ctx.policy(), elems<U>(y), elems<U>(x) + offset, view_sizes, view_strides);
  });
}

/// Index values (int32 / int64) of a tensor of any rank.
inline std::vector<i64> index_values(const gpass::tensor& t, const kernel_node& n, const char* what) {
  return int_values(t, n, what);
}

using shape_rules::fix_index;

/// Axes from attribute `name` when present, else from input `input` when given, else nothing.
inline std::optional<std::vector<i64>> axes_of(const context& ctx, const char* name, std::size_t input) {
  const kernel_node& n = ctx.node();
  if (n.has_attr(name)) return n.attr<std::vector<i64>>(name);
  if (ctx.has_input(input)) return int_values(ctx.input(input), n, name);
  return std::nullopt;
}

using shape_rules::onnx_dtype_attr;

/// A scalar of dtype `t` holding `v` (numeric and bool).
inline gpass::tensor scalar_of(dtype t, double v, const kernel_node& n) {
  gpass::tensor r;
  using L = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int16_t, std::int32_t, std::int64_t,
                      std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t, bool>;
  dispatch<L>(t, n, [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) r = gpass::tensor::scalar<bool>(v != 0);
    else if constexpr (std::is_integral_v<T>) r = gpass::tensor::scalar<T>(float_to_int<T>(v));  // (1e30 or NaN: defined)
    else r = gpass::tensor::scalar<T>(static_cast<T>(static_cast<compute_t<T>>(v)));
  });
  return r;
}

/// The first element of a numeric tensor as double (depth, k, scalars of any numeric type).
inline double first_as_double(const gpass::tensor& t, const kernel_node& n, const char* what) {
  if (t.size() < 1) n.fail(std::string(what) + " is empty");
  double r = 0;
  dispatch<numeric_types>(t.element_type(), n, [&]<class T>() { r = static_cast<double>(static_cast<compute_t<T>>(t.data<T>()[0])); });
  return r;
}

using shape_rules::reshape_sizes;

inline int opset_of(const kernel_node& n) { return n.opset > 0 ? n.opset : 1000; }

/// Output 0 = the tensors `xs` (same element type and rank, equal sizes off the axis)
/// concatenated along `axis_attr` (negative counts from the end).
inline void concat_into(context& ctx, const std::vector<const gpass::tensor*>& xs, i64 axis_attr) {
  const auto [axis, out] = shape_rules::concat_shape(xs, axis_attr, ctx.node());
  const gpass::tensor& x0 = *xs[0];
  gpass::tensor& y = ctx.allocate_output(0, x0.element_type(), out);
  if (y.size() == 0) return;
  if (x0.element_type() == dtype::string) {  // the same input may come many times
    double n = 0;
    for (const auto* x : xs) n += string_chars(*x);
    check_string_output(ctx, y.size(), n);
  }
  const i64 outer = prod(out, 0, axis);
  const i64 row = prod(out, axis, out.size());
  dispatch_move(x0.element_type(), ctx.node(), [&]<class U>() {
    U* o = elems<U>(y);
    ctx.policy().parallel_for(outer, static_cast<double>(row), [&](i64 b, i64 e) {
      for (i64 k = b; k < e; ++k) {
        U* dst = o + k * row;
        for (const auto* x : xs) {
          const i64 chunk = prod(x->sizes(), axis, x->rank());
          copy_n(elems<U>(*x) + k * chunk, chunk, dst);
          dst += chunk;
        }
      }
    });
  });
}

/// Outputs 0 and 1 = the `k` largest (`largest`) or smallest elements of `x` along axis
/// `axis` (non-negative), sorted, ties by lower index (NaN counts as the largest), and their
/// indices as `index_type` (int64 or int32).
inline void topk_into(context& ctx, const gpass::tensor& x, i64 axis_i, i64 k, bool largest, dtype index_type = dtype::int64) {
  const std::size_t axis = static_cast<std::size_t>(axis_i);
  const i64 dim = x.sizes()[axis];
  if (k < 0 || k > dim) ctx.fail("k " + std::to_string(k) + " is out of range for axis size " + std::to_string(dim));
  std::vector<i64> out = x.sizes();
  out[axis] = k;
  gpass::tensor& yv = ctx.allocate_output(0, x.element_type(), out);
  gpass::tensor& yi = ctx.allocate_output(1, index_type, out);
  const i64 outer = prod(x.sizes(), 0, axis), inner = prod(x.sizes(), axis + 1, x.rank());
  if (yv.size() == 0) return;
  dispatch<type_list<i64, std::int32_t>>(index_type, ctx.node(), [&]<class I>() {
    dispatch<numeric_types>(x.element_type(), ctx.node(), [&]<class T>() {
      using C = compute_t<T>;
      const T* s = x.data<T>();
      T* ov = yv.data<T>();
      I* oi = yi.data<I>();
      ctx.policy().parallel_for(outer * inner, static_cast<double>(dim) * 8.0, [&](i64 b, i64 e) {
        std::vector<std::pair<C, i64>> line(static_cast<std::size_t>(dim));
        for (i64 w = b; w < e; ++w) {
          const i64 o = w / inner, j = w % inner;
          const T* base = s + o * dim * inner + j;
          for (i64 t = 0; t < dim; ++t) line[static_cast<std::size_t>(t)] = {static_cast<C>(base[t * inner]), t};
          auto cmp = [largest](const std::pair<C, i64>& a, const std::pair<C, i64>& c) {
            if constexpr (std::is_floating_point_v<C>) {  // NaN counts as the largest value
              const bool an = std::isnan(a.first), cn = std::isnan(c.first);
              if (an || cn) {
                if (an && cn) return a.second < c.second;
                return largest ? an : cn;
              }
            }
            if (a.first != c.first) return largest ? a.first > c.first : a.first < c.first;
            return a.second < c.second;
          };
          std::partial_sort(line.begin(), line.begin() + k, line.end(), cmp);
          for (i64 t = 0; t < k; ++t) {
            const i64 at = (o * k + t) * inner + j;
            ov[at] = static_cast<T>(line[static_cast<std::size_t>(t)].first);
            oi[at] = static_cast<I>(line[static_cast<std::size_t>(t)].second);
          }
        }
      });
    });
  });
}

/// Output 0 = `x` repeated `reps[d]` times along each axis `d` (ONNX Tile, TF Tile);
/// `what` names the repetitions in errors ("repeats", "multiples").
inline void tile_into(context& ctx, const gpass::tensor& x, const std::vector<i64>& reps, const char* what) {
  if (reps.size() != x.rank())
    ctx.fail(std::string(what) + " has " + std::to_string(reps.size()) + " entries for rank " + std::to_string(x.rank()));
  const auto st = strides_of(x.sizes());
  std::vector<i64> out, vs, vst;
  for (std::size_t d = 0; d < x.rank(); ++d) {
    if (reps[d] < 0) ctx.fail(std::string(what) + " has a negative entry");
    auto n = checked_mul(x.sizes()[d], reps[d]);
    if (!n) ctx.fail(std::string(what) + ": " + std::to_string(x.sizes()[d]) + " * " + std::to_string(reps[d]) + " overflows int64");
    out.push_back(*n);
    vs.insert(vs.end(), {reps[d], x.sizes()[d]});
    vst.insert(vst.end(), {0, st[d]});
  }
  copy_view(ctx, x, out, vs, vst, 0);
}

/// Fills `y` (allocated, of x's element type) from `x` by per-axis index maps (ONNX / TF Pad,
/// Resize nearest): element (o_0, ..., o_r-1) of `y` = x[maps[0][o_0], ..., maps[r-1][o_r-1]],
/// or `cval` (a one-element tensor of x's type; empty: zero) where a map entry is -1. The run
/// [lo, hi) of the inner axis, when given, must map to consecutive input indices: it is
/// copied as a block. Rows are split over the policy's threads.
inline void gather_by_maps(context& ctx, const gpass::tensor& x, gpass::tensor& y, const std::vector<std::vector<i64>>& maps,
                           const gpass::tensor& cval, i64 lo = 0, i64 hi = 0) {
  if (y.size() == 0) return;
  const std::size_t rank = x.rank();
  const std::vector<i64>& out = y.sizes();
  const auto st = strides_of(x.sizes());
  // the offset in x of output row `row` (every axis but the last); false: a row of the constant
  auto row_source = [&](i64 row, i64& off) {
    off = 0;
    bool constant = false;
    for (std::size_t d = rank - 1; d-- > 0;) {
      const i64 src = maps[d][static_cast<std::size_t>(row % out[d])];
      row /= out[d];
      if (src < 0) constant = true;
      off += src * st[d];
    }
    return !constant;
  };
  check_string_copies(ctx, {&x, &cval}, y.size(), [&] {  // the rows as below, counted
    const std::string* s = x.data<std::string>();
    const double c = cval.empty() ? 0.0 : static_cast<double>(cval.data<std::string>()[0].size());
    if (rank == 0) return static_cast<double>(s[0].size());
    const i64 inner = out[rank - 1];
    const auto& im = maps[rank - 1];
    double n = 0;
    for (i64 row = 0; row < y.size() / inner; ++row) {
      i64 off = 0;
      const bool constant = !row_source(row, off);
      for (i64 j = 0; j < inner; ++j) {
        const i64 m = im[static_cast<std::size_t>(j)];
        n += constant || m < 0 ? c : static_cast<double>(s[off + m].size());
      }
    }
    return n;
  });
  dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
    const U c = cval.empty() ? U{} : elems<U>(cval)[0];
    const U* s = elems<U>(x);
    U* o = elems<U>(y);
    if (rank == 0) {
      o[0] = s[0];
      return;
    }
    const i64 inner = out[rank - 1];
    const auto& im = maps[rank - 1];
    ctx.policy().parallel_for(y.size() / inner, static_cast<double>(inner) + 8.0, [&](i64 b, i64 e) {
      for (i64 row = b; row < e; ++row) {
        U* orow = o + row * inner;
        i64 off = 0;
        if (!row_source(row, off)) {
          std::fill(orow, orow + inner, c);
          continue;
        }
        const U* srow = s + off;
        auto one = [&](i64 j) {
          const i64 m = im[static_cast<std::size_t>(j)];
          orow[j] = m < 0 ? c : srow[m];
        };
        for (i64 j = 0; j < lo; ++j) one(j);
        if (hi > lo) copy_n(srow + im[static_cast<std::size_t>(lo)], hi - lo, orow + lo);
        for (i64 j = hi; j < inner; ++j) one(j);
      }
    });
  });
}

/// Output 0 = `x` padded by `begin[d]` / `end[d]` elements (negative: cropped) on each axis;
/// mode `m`: 0 constant (`cval`, a one-element tensor of x's type; empty: zero), 1 reflect,
/// 2 edge, 3 wrap.
inline void pad_into(context& ctx, const gpass::tensor& x, const std::vector<i64>& begin, const std::vector<i64>& end, int m,
                     const gpass::tensor& cval) {
  const std::size_t rank = x.rank();
  std::vector<i64> out(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    const i64 in = x.sizes()[d];
    const auto o = checked_add(in, begin[d]);
    const auto n = o ? checked_add(*o, end[d]) : std::nullopt;
    if (!n) ctx.fail("axis " + std::to_string(d) + " padded to a size that overflows int64");
    out[d] = *n;
    if (out[d] < 0) ctx.fail("pads remove more than the " + std::to_string(in) + " elements of axis " + std::to_string(d));
  }
  // the output first (its size checked against the run's limits), then index maps no longer
  // than its axes: huge pads of an empty output allocate nothing
  gpass::tensor& y = ctx.allocate_output(0, x.element_type(), out);
  if (y.size() == 0) return;
  std::vector<std::vector<i64>> maps(rank);  // output index -> input index, -1: the constant
  for (std::size_t d = 0; d < rank; ++d) {
    const i64 in = x.sizes()[d];
    maps[d].resize(static_cast<std::size_t>(out[d]));
    for (i64 o = 0; o < out[d]; ++o) {
      i64 i = o - begin[d];
      if (i < 0 || i >= in) {
        if (m != 0 && in == 0) ctx.fail("cannot pad an empty axis in this mode");
        if (m == 0) i = -1;
        else if (m == 2) i = std::clamp<i64>(i, 0, in - 1);
        else if (m == 3) i = ((i % in) + in) % in;
        else if (in == 1) i = 0;
        else {
          const i64 period = 2 * (in - 1);
          i = ((i % period) + period) % period;
          if (i >= in) i = period - i;
        }
      }
      maps[d][static_cast<std::size_t>(o)] = i;
    }
  }
  // the run of the inner axis copied as a block: o in [lo, hi) reads o - begin
  i64 lo = 0, hi = 0;
  if (rank > 0) {
    lo = std::clamp<i64>(begin[rank - 1], 0, out[rank - 1]);
    hi = std::clamp<i64>(begin[rank - 1] + x.sizes()[rank - 1], lo, out[rank - 1]);
  }
  gather_by_maps(ctx, x, y, maps, cval, lo, hi);
}

/// Output 0 = the coordinates (int64) of the non-zero (true) elements of `x`, in row-major
/// order: sizes [rank, n] (ONNX NonZero), or [n, rank] when `hit_major` (TF Where).
inline void nonzero_into(context& ctx, const gpass::tensor& x, bool hit_major) {
  std::vector<i64> hits;
  using L = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int16_t, std::int32_t, std::int64_t,
                      std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t, bool>;
  dispatch<L>(x.element_type(), ctx.node(), [&]<class T>() {
    const T* p = x.data<T>();
    for (i64 i = 0; i < x.size(); ++i)
      if (static_cast<compute_t<T>>(p[i]) != compute_t<T>(0)) hits.push_back(i);
  });
  const i64 nnz = static_cast<i64>(hits.size());
  const auto rank = static_cast<i64>(x.rank());
  gpass::tensor& y = ctx.allocate_output(0, dtype::int64, hit_major ? std::vector<i64>{nnz, rank} : std::vector<i64>{rank, nnz});
  // output steps between hits and between axes
  const i64 hit_step = hit_major ? rank : 1, axis_step = hit_major ? 1 : nnz;
  i64* o = y.data<i64>();
  for (i64 j = 0; j < nnz; ++j) {
    i64 rem = hits[static_cast<std::size_t>(j)];
    for (i64 d = rank; d-- > 0;) {
      o[j * hit_step + d * axis_step] = rem % x.sizes()[static_cast<std::size_t>(d)];
      rem /= x.sizes()[static_cast<std::size_t>(d)];
    }
  }
}

}  // namespace array_detail

/// Registers the shape ops (Reshape, Shape, Size, Flatten, Squeeze, Unsqueeze).
inline void register_array_shape(registry& r) {
  using namespace array_detail;
  r.add({.op = "Reshape", .alias_input = 0, .make = [](const kernel_node& n) -> fn {
    const bool allowzero = n.attr<i64>("allowzero", 0) != 0;
    std::optional<std::vector<i64>> attr_shape;
    if (n.has_attr("shape")) attr_shape = n.attr<std::vector<i64>>("shape");
    return [allowzero, attr_shape](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      std::vector<i64> req = attr_shape ? *attr_shape : int_values(ctx.input(1), ctx.node(), "shape");
      ctx.set_output(0, x.reshaped(reshape_sizes(x.sizes(), std::move(req), allowzero, ctx.node())));
    };
  }});
  r.add({.op = "Shape", .make = [](const kernel_node& n) -> fn {
    const i64 start = n.attr<i64>("start", 0);
    const std::optional<i64> end = n.has_attr("end") ? std::optional<i64>(n.attr<i64>("end")) : std::nullopt;
    return [start, end](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const i64 rank = static_cast<i64>(x.rank());
      auto clampi = [&](i64 v) { return std::clamp(v < 0 ? v + rank : v, i64{0}, rank); };
      const i64 b = clampi(start), e = clampi(end.value_or(rank));
      const i64 len = std::max<i64>(0, e - b);
      gpass::tensor& y = ctx.allocate_output(0, dtype::int64, {len});
      for (i64 i = 0; i < len; ++i) y.data<i64>()[i] = x.sizes()[static_cast<std::size_t>(b + i)];
    };
  }});
  r.add({.op = "Size", .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      gpass::tensor& y = ctx.allocate_output(0, dtype::int64, {});
      y.data<i64>()[0] = ctx.input(0).size();
    };
  }});
  r.add({.op = "Flatten", .alias_input = 0, .make = [](const kernel_node& n) -> fn {
    const i64 axis = n.attr<i64>("axis", 1);
    return [axis](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const i64 rank = static_cast<i64>(x.rank());
      if (axis < -rank || axis > rank)
        ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
      const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
      ctx.set_output(0, x.reshaped({prod(x.sizes(), 0, a), prod(x.sizes(), a, x.rank())}));
    };
  }});
  r.add({.op = "Squeeze", .alias_input = 0, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      ctx.set_output(0, x.reshaped(shape_rules::squeeze_sizes(x.sizes(), axes_of(ctx, "axes", 1), ctx.node())));
    };
  }});
  r.add({.op = "Unsqueeze", .alias_input = 0, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      auto axes = axes_of(ctx, "axes", 1);
      if (!axes) ctx.fail("axes are missing");
      ctx.set_output(0, x.reshaped(shape_rules::unsqueeze_sizes(x.sizes(), *axes, ctx.node())));
    };
  }});
}

/// Registers Transpose, Concat, Split, Slice, Expand, Tile, DepthToSpace, SpaceToDepth.
inline void register_array_move(registry& r) {
  using namespace array_detail;
  r.add({.op = "Transpose", .make = [](const kernel_node& n) -> fn {
    std::optional<std::vector<i64>> perm;
    if (n.has_attr("perm")) perm = n.attr<std::vector<i64>>("perm");
    return [perm](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto v = shape_rules::transpose_view(x.sizes(), perm, ctx.node());
      copy_view(ctx, x, v.sizes, v.sizes, v.strides, 0);
    };
  }});
  r.add({.op = "Concat", .make = [](const kernel_node& n) -> fn {
    const i64 axis_attr = n.attr<i64>("axis", n.opset > 0 && n.opset < 4 ? 1 : 0);
    if (!n.has_attr("axis") && n.opset >= 4) n.fail("missing attribute 'axis'");
    return [axis_attr](context& ctx) {
      std::vector<const gpass::tensor*> xs;
      for (std::size_t i = 0; i < ctx.num_inputs(); ++i)
        if (ctx.has_input(i)) xs.push_back(&ctx.input(i));
      concat_into(ctx, xs, axis_attr);
    };
  }});
  r.add({.op = "Split", .make = [](const kernel_node& n) -> fn {
    const i64 axis_attr = n.attr<i64>("axis", 0);
    std::optional<std::vector<i64>> split_attr;
    if (n.has_attr("split")) split_attr = n.attr<std::vector<i64>>("split");
    const std::optional<i64> num_outputs =
        n.has_attr("num_outputs") ? std::optional<i64>(n.attr<i64>("num_outputs")) : std::nullopt;
    return [axis_attr, split_attr, num_outputs](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const i64 rank = static_cast<i64>(x.rank());
      if (rank == 0) ctx.fail("cannot split a scalar (rank 0)");
      const std::size_t axis = static_cast<std::size_t>(normalize_axis(axis_attr, rank, ctx.node()));
      const i64 dim = x.sizes()[axis];
      const std::size_t nout = ctx.num_outputs();
      std::vector<i64> parts;
      if (split_attr) parts = *split_attr;
      else if (ctx.has_input(1)) parts = int_values(ctx.input(1), ctx.node(), "split");
      parts = shape_rules::split_sizes(dim, std::move(parts), num_outputs, nout, ctx.node());
      const auto st = strides_of(x.sizes());
      i64 start = 0;
      for (std::size_t i = 0; i < nout; ++i) {
        std::vector<i64> s = x.sizes();
        s[axis] = parts[i];
        copy_view(ctx, x, s, s, st, start * st[axis], i);
        start += parts[i];
      }
    };
  }});
  r.add({.op = "Slice", .make = [](const kernel_node& n) -> fn {
    const auto at = shape_rules::slice_attrs::read(n);
    return [at](context& ctx) {
      const kernel_node& nd = ctx.node();
      const gpass::tensor& x = ctx.input(0);
      std::vector<i64> starts, ends, steps;
      std::optional<std::vector<i64>> axes;
      if (at) {
        starts = at->starts;
        ends = at->ends;
        axes = at->axes;
      } else {
        starts = int_values(ctx.input(1), nd, "starts");
        ends = int_values(ctx.input(2), nd, "ends");
        if (ctx.has_input(3)) axes = int_values(ctx.input(3), nd, "axes");
        if (ctx.has_input(4)) steps = int_values(ctx.input(4), nd, "steps");
      }
      const auto v = shape_rules::slice_view(x.sizes(), starts, ends, std::move(axes), steps, nd);
      copy_view(ctx, x, v.sizes, v.sizes, v.strides, v.offset);
    };
  }});
  r.add({.op = "Expand", .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto req = int_values(ctx.input(1), ctx.node(), "shape");
      for (i64 v : req)
        if (v < 0) ctx.fail("shape has a negative size " + std::to_string(v));
      const auto out = broadcast_sizes(x.sizes(), req, ctx.node());
      copy_view(ctx, x, out, out, broadcast_strides(x.sizes(), out), 0);
    };
  }});
  r.add({.op = "Tile", .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      tile_into(ctx, ctx.input(0), int_values(ctx.input(1), ctx.node(), "repeats"), "repeats");
    };
  }});
  r.add({.op = "DepthToSpace", .make = [](const kernel_node& n) -> fn {
    const i64 b = n.attr<i64>("blocksize");
    const std::string mode = n.attr<std::string>("mode", "DCR");
    if (b <= 0) n.fail("blocksize must be positive");
    if (mode != "DCR" && mode != "CRD") n.fail("mode must be DCR or CRD, got '" + mode + "'");
    return [b, crd = mode == "CRD"](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto r = shape_rules::depth_space_view(x.sizes(), b, crd, true, ctx.node());
      copy_view(ctx, x, r.out, r.view.sizes, r.view.strides, 0);
    };
  }});
  r.add({.op = "SpaceToDepth", .make = [](const kernel_node& n) -> fn {
    const i64 b = n.attr<i64>("blocksize");
    if (b <= 0) n.fail("blocksize must be positive");
    const std::string mode = n.attr<std::string>("mode", "DCR");  // SpaceToDepth-28
    if (mode != "DCR" && mode != "CRD") n.fail("mode must be DCR or CRD, not '" + mode + "'");
    return [b, crd = mode == "CRD"](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto r = shape_rules::depth_space_view(x.sizes(), b, crd, false, ctx.node());
      copy_view(ctx, x, r.out, r.view.sizes, r.view.strides, 0);
    };
  }});
}

/// Registers Gather, GatherElements, GatherND, ScatterElements, Scatter, ScatterND.
inline void register_array_index(registry& r) {
  using namespace array_detail;
  r.add({.op = "Gather", .make = [](const kernel_node& n) -> fn {
    const i64 axis_attr = n.attr<i64>("axis", 0);
    return [axis_attr](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& it = ctx.input(1);
      const i64 rank = static_cast<i64>(x.rank());
      if (rank == 0) ctx.fail("data must have rank >= 1");
      const std::size_t axis = static_cast<std::size_t>(normalize_axis(axis_attr, rank, ctx.node()));
      auto idx = index_values(it, ctx.node(), "indices");
      const i64 dim = x.sizes()[axis];
      for (auto& v : idx) v = fix_index(v, dim, ctx.node(), "index");
      std::vector<i64> out(x.sizes().begin(), x.sizes().begin() + static_cast<std::ptrdiff_t>(axis));
      out.insert(out.end(), it.sizes().begin(), it.sizes().end());
      out.insert(out.end(), x.sizes().begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.sizes().end());
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), out);
      if (y.size() == 0) return;
      const i64 outer = prod(x.sizes(), 0, axis), inner = prod(x.sizes(), axis + 1, x.rank());
      const i64 ni = static_cast<i64>(idx.size());
      check_string_copies(ctx, {&x}, y.size(), [&] {  // indices may repeat
        const std::string* s = x.data<std::string>();
        double n = 0;
        for (i64 w = 0; w < outer * ni; ++w) {
          const std::string* src = s + (w / ni * dim + idx[static_cast<std::size_t>(w % ni)]) * inner;
          for (i64 t = 0; t < inner; ++t) n += static_cast<double>(src[t].size());
        }
        return n;
      });
      dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
        const U* s = elems<U>(x);
        U* o = elems<U>(y);
        ctx.policy().parallel_for(outer * ni, static_cast<double>(inner) + 2.0, [&](i64 b, i64 e) {
          for (i64 w = b; w < e; ++w) {
            const i64 k = w / ni, j = w % ni;
            const U* src = s + (k * dim + idx[static_cast<std::size_t>(j)]) * inner;
            if (inner == 1) o[w] = *src;
            else copy_n(src, inner, o + w * inner);
          }
        });
      });
    };
  }});
  r.add({.op = "GatherElements", .make = [](const kernel_node& n) -> fn {
    const i64 axis_attr = n.attr<i64>("axis", 0);
    return [axis_attr](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& it = ctx.input(1);
      const std::size_t axis = shape_rules::elements_axis(x.sizes(), it.sizes(), nullptr, axis_attr, ctx.node());
      auto idx = index_values(it, ctx.node(), "indices");
      const i64 dim = x.sizes()[axis];
      for (auto& v : idx) v = fix_index(v, dim, ctx.node(), "index");
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), it.sizes());
      if (y.size() == 0) return;
      auto st = strides_of(x.sizes());
      const i64 sa = st[axis];
      st[axis] = 0;
      check_string_copies(ctx, {&x}, y.size(), [&] {
        const std::string* s = x.data<std::string>();
        strided_walker<1> w(it.sizes(), {st});
        w.seek(0);
        double c = 0;
        for (i64 i = 0, n = y.size(); i < n; ++i, w.next()) c += static_cast<double>(s[w.offset(0) + idx[static_cast<std::size_t>(i)] * sa].size());
        return c;
      });
      dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
        const U* s = elems<U>(x);
        U* o = elems<U>(y);
        strided_walker<1> w(it.sizes(), {st});
        w.seek(0);
        for (i64 i = 0, n = y.size(); i < n; ++i, w.next()) o[i] = s[w.offset(0) + idx[static_cast<std::size_t>(i)] * sa];
      });
    };
  }});
  r.add({.op = "GatherND", .make = [](const kernel_node& n) -> fn {
    const i64 batch = n.attr<i64>("batch_dims", 0);
    return [batch](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& it = ctx.input(1);
      const std::size_t b = static_cast<std::size_t>(batch);
      if (batch < 0 || it.rank() < 1 || b >= it.rank() || b >= x.rank())
        ctx.fail("batch_dims " + std::to_string(batch) + " does not fit data " + sizes_str(x.sizes()) + " and indices " +
                 sizes_str(it.sizes()));
      for (std::size_t d = 0; d < b; ++d)
        if (x.sizes()[d] != it.sizes()[d]) ctx.fail("batch dimensions of data and indices differ");
      const i64 k = it.sizes().back();
      if (k < 1 || static_cast<std::size_t>(k) + b > x.rank())
        ctx.fail("index tuples of length " + std::to_string(k) + " do not fit data " + sizes_str(x.sizes()));
      std::vector<i64> out(it.sizes().begin(), it.sizes().end() - 1);
      out.insert(out.end(), x.sizes().begin() + static_cast<std::ptrdiff_t>(b + static_cast<std::size_t>(k)), x.sizes().end());
      auto idx = index_values(it, ctx.node(), "indices");
      const i64 nb = prod(x.sizes(), 0, b);
      const i64 tuples = prod(it.sizes(), b, it.rank() - 1);  // per batch
      const i64 block = prod(x.sizes(), b + static_cast<std::size_t>(k), x.rank());
      const i64 batch_stride = prod(x.sizes(), b, x.rank());
      const auto st = strides_of(x.sizes());
      std::vector<i64> offs(static_cast<std::size_t>(nb * tuples));
      for (i64 bi = 0; bi < nb; ++bi)
        for (i64 t = 0; t < tuples; ++t) {
          i64 off = bi * batch_stride;
          const std::size_t base = static_cast<std::size_t>((bi * tuples + t) * k);
          for (i64 j = 0; j < k; ++j) {
            const std::size_t d = b + static_cast<std::size_t>(j);
            off += fix_index(idx[base + static_cast<std::size_t>(j)], x.sizes()[d], ctx.node(), "index") * st[d];
          }
          offs[static_cast<std::size_t>(bi * tuples + t)] = off;
        }
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), out);
      if (y.size() == 0) return;
      check_string_copies(ctx, {&x}, y.size(), [&] {
        const std::string* s = x.data<std::string>();
        double n = 0;
        for (i64 off : offs)
          for (i64 j = 0; j < block; ++j) n += static_cast<double>(s[off + j].size());
        return n;
      });
      dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
        const U* s = elems<U>(x);
        U* o = elems<U>(y);
        for (std::size_t i = 0; i < offs.size(); ++i) copy_n(s + offs[i], block, o + static_cast<i64>(i) * block);
      });
    };
  }});
  // scatter: copy data, then write updates at the (validated) offsets with a reduction
  auto scatter_make = [](bool nd) {
    return [nd](const kernel_node& n) -> fn {
      const std::string red = n.attr<std::string>("reduction", "none");
      if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
        n.fail("unknown reduction '" + red + "'");
      const i64 axis_attr = n.attr<i64>("axis", 0);
      return [nd, red, axis_attr](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        const gpass::tensor& it = ctx.input(1);
        const gpass::tensor& up = ctx.input(2);
        if (up.element_type() != x.element_type()) ctx.fail("updates and data have different element types");
        auto idx = index_values(it, ctx.node(), "indices");
        std::vector<i64> offs;  // destination offset of each update block
        i64 block = 1;
        if (!nd) {
          const std::size_t axis = shape_rules::elements_axis(x.sizes(), it.sizes(), &up.sizes(), axis_attr, ctx.node());
          auto st = strides_of(x.sizes());
          const i64 sa = st[axis];
          st[axis] = 0;
          strided_walker<1> w(it.sizes(), {st});
          w.seek(0);
          offs.resize(idx.size());
          for (std::size_t i = 0; i < idx.size(); ++i, w.next())
            offs[i] = w.offset(0) + fix_index(idx[i], x.sizes()[axis], ctx.node(), "index") * sa;
        } else {
          if (it.rank() < 1) ctx.fail("indices must have rank >= 1");
          const i64 k = it.sizes().back();
          if (k < 0 || static_cast<std::size_t>(k) > x.rank()) ctx.fail("index tuples are longer than the data rank");
          std::vector<i64> want(it.sizes().begin(), it.sizes().end() - 1);
          want.insert(want.end(), x.sizes().begin() + k, x.sizes().end());
          if (up.sizes() != want)
            ctx.fail("updates have sizes " + sizes_str(up.sizes()) + ", expected " + sizes_str(want));
          const auto st = strides_of(x.sizes());
          block = prod(x.sizes(), static_cast<std::size_t>(k), x.rank());
          const i64 tuples = prod(it.sizes(), 0, it.rank() - 1);
          offs.resize(static_cast<std::size_t>(tuples));
          for (i64 t = 0; t < tuples; ++t) {
            i64 off = 0;
            for (i64 j = 0; j < k; ++j)
              off += fix_index(idx[static_cast<std::size_t>(t * k + j)], x.sizes()[static_cast<std::size_t>(j)], ctx.node(),
                               "index") * st[static_cast<std::size_t>(j)];
            offs[static_cast<std::size_t>(t)] = off;
          }
        }
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
        if (red == "none") {
          dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
            copy_n(elems<U>(x), x.size(), elems<U>(y));
            const U* u = elems<U>(up);
            U* o = elems<U>(y);
            for (std::size_t i = 0; i < offs.size(); ++i) copy_n(u + static_cast<i64>(i) * block, block, o + offs[i]);
          });
          return;
        }
        using L = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int16_t, std::int32_t, std::int64_t,
                            std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t, bool>;
        const int op = red == "add" ? 0 : red == "mul" ? 1 : red == "max" ? 2 : 3;
        dispatch<L>(x.element_type(), ctx.node(), [&]<class T>() {
          copy_n(x.data<T>(), x.size(), y.data<T>());
          const T* u = up.data<T>();
          T* o = y.data<T>();
          for (std::size_t i = 0; i < offs.size(); ++i)
            for (i64 j = 0; j < block; ++j) {
              T& d = o[offs[i] + j];
              const T v = u[static_cast<i64>(i) * block + j];
              if constexpr (std::is_same_v<T, bool>) {
                d = op == 0 || op == 2 ? (d || v) : (d && v);
              } else {
                using C = compute_t<T>;
                const C a = static_cast<C>(d), c = static_cast<C>(v);
                // (integer add / mul wrap: int32 / int64 sums, uint16 products past int, are defined)
                d = static_cast<T>(op == 0 ? add_w<C>(a, c) : op == 1 ? mul_w<C>(a, c) : op == 2 ? std::max(a, c) : std::min(a, c));
              }
            }
        });
      };
    };
  };
  r.add({.op = "ScatterElements", .make = scatter_make(false)});
  r.add({.op = "Scatter", .make = scatter_make(false)});
  r.add({.op = "ScatterND", .make = scatter_make(true)});
}

/// Registers Pad, ConstantOfShape, Range, OneHot, Trilu, EyeLike.
inline void register_array_make(registry& r) {
  using namespace array_detail;
  r.add({.op = "Pad", .make = [](const kernel_node& n) -> fn {
    const std::string mode = n.attr<std::string>("mode", "constant");
    if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
      n.fail("unknown mode '" + mode + "'");
    std::optional<std::vector<i64>> pads_attr;
    if (n.has_attr("pads")) pads_attr = n.attr<std::vector<i64>>("pads");
    else if (n.has_attr("paddings")) pads_attr = n.attr<std::vector<i64>>("paddings");
    const double value_attr = n.attr<double>("value", 0.0);
    const int m = mode == "constant" ? 0 : mode == "reflect" ? 1 : mode == "edge" ? 2 : 3;
    return [m, pads_attr, value_attr](context& ctx) {
      const kernel_node& nd = ctx.node();
      const gpass::tensor& x = ctx.input(0);
      const std::size_t rank = x.rank();
      std::vector<i64> pads = pads_attr ? *pads_attr : int_values(ctx.input(1), nd, "pads");
      std::vector<i64> begin(rank, 0), end(rank, 0);
      if (!pads_attr && ctx.has_input(3)) {
        const auto axes = int_values(ctx.input(3), nd, "axes");
        if (pads.size() != 2 * axes.size())
          ctx.fail("pads has " + std::to_string(pads.size()) + " entries for " + std::to_string(axes.size()) + " axes");
        for (std::size_t i = 0; i < axes.size(); ++i) {
          const std::size_t a = static_cast<std::size_t>(shape_rules::dim_axis(axes[i], static_cast<i64>(rank), nd));
          begin[a] = pads[i];
          end[a] = pads[i + axes.size()];
        }
      } else {
        if (pads.size() != 2 * rank)
          ctx.fail("pads has " + std::to_string(pads.size()) + " entries for rank " + std::to_string(rank));
        for (std::size_t i = 0; i < rank; ++i) {
          begin[i] = pads[i];
          end[i] = pads[i + rank];
        }
      }
      gpass::tensor cval;
      if (!pads_attr && ctx.has_input(2)) {
        cval = ctx.input(2);
        if (cval.element_type() != x.element_type()) ctx.fail("constant_value has another element type than data");
        if (cval.size() < 1) ctx.fail("constant_value is empty");
      } else if (x.element_type() != dtype::string && !pads_attr) {
        cval = scalar_of(x.element_type(), 0.0, nd);
      } else if (x.element_type() != dtype::string) {
        cval = scalar_of(x.element_type(), value_attr, nd);
      }
      pad_into(ctx, x, begin, end, m, cval);
    };
  }});
  r.add({.op = "ConstantOfShape", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    gpass::tensor value = gpass::tensor::scalar<float>(0.0f);
    if (n.has_attr("value")) value = n.attr<gpass::tensor>("value");
    if (value.size() != 1) n.fail("value must have one element");
    return [value](context& ctx) {
      const auto s = int_values(ctx.input(0), ctx.node(), "shape");
      for (i64 v : s)
        if (v < 0) ctx.fail("shape has a negative size " + std::to_string(v));
      gpass::tensor& y = ctx.allocate_output(0, value.element_type(), s);
      check_string_copies(ctx, {&value}, y.size(), [&] { return static_cast<double>(y.size()) * string_chars(value); });
      dispatch_move(value.element_type(), ctx.node(), [&]<class U>() {
        U* o = elems<U>(y);
        std::fill(o, o + y.size(), elems<U>(value)[0]);
      });
    };
  }});
  r.add({.op = "Range", .make = [](const kernel_node& n) -> fn {
    // Range-27's stash_type: f16 / bf16 ranges computed in float (1, the default) or double (11)
    const i64 stash = n.attr<i64>("stash_type", 1);
    if (stash != 1 && stash != 11) n.fail("stash_type must be 1 (float) or 11 (double), got " + std::to_string(stash));
    return [stash](context& ctx) {
      const gpass::tensor &a = ctx.input(0), &l = ctx.input(1), &d = ctx.input(2);
      if (l.element_type() != a.element_type() || d.element_type() != a.element_type())
        ctx.fail("start, limit and delta must have the same element type");
      if (a.size() != 1 || l.size() != 1 || d.size() != 1) ctx.fail("start, limit and delta must be scalars");
      using L = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int16_t, std::int32_t, std::int64_t>;
      dispatch<L>(a.element_type(), ctx.node(), [&]<class T>() {
        if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
          const double start = static_cast<float>(a.data<T>()[0]), limit = static_cast<float>(l.data<T>()[0]),
                       delta = static_cast<float>(d.data<T>()[0]);
          const i64 count = shape_rules::range_count(start, limit, delta, ctx.node());
          gpass::tensor& y = ctx.allocate_output(0, a.element_type(), {count});
          T* o = y.data<T>();
          for (i64 i = 0; i < count; ++i)
            o[i] = stash == 1 ? static_cast<T>(static_cast<float>(start) + static_cast<float>(i) * static_cast<float>(delta))
                              : static_cast<T>(static_cast<float>(start + static_cast<double>(i) * delta));
        } else {
          const T start = a.data<T>()[0], limit = l.data<T>()[0], delta = d.data<T>()[0];
          i64 count;
          if constexpr (std::is_floating_point_v<T>)
            count = shape_rules::range_count(double(start), double(limit), double(delta), ctx.node());
          else
            count = shape_rules::range_count(i64(start), i64(limit), i64(delta), ctx.node());
          gpass::tensor& y = ctx.allocate_output(0, a.element_type(), {count});
          T* o = y.data<T>();
          // in int64: every element lies in [start, limit), and i * delta stays within limit - start,
          // which range_count checked fits int64 (an int32 start + i * delta may pass int32 midway)
          for (i64 i = 0; i < count; ++i) {
            if constexpr (std::is_floating_point_v<T>) o[i] = static_cast<T>(start + static_cast<T>(i) * delta);
            else o[i] = static_cast<T>(static_cast<i64>(start) + i * static_cast<i64>(delta));
          }
        }
      });
    };
  }});
  r.add({.op = "OneHot", .type_input = 2, .make = [](const kernel_node& n) -> fn {
    const i64 axis_attr = n.attr<i64>("axis", -1);
    return [axis_attr](context& ctx) {
      const gpass::tensor &ind = ctx.input(0), &dep = ctx.input(1), &vals = ctx.input(2);
      const i64 depth = float_to_int<i64>(first_as_double(dep, ctx.node(), "depth"));  // (NaN, 1e30: defined)
      if (depth < 1) ctx.fail("depth must be positive, got " + std::to_string(depth));
      if (vals.size() != 2) ctx.fail("values must have 2 elements (off, on)");
      const i64 rank = static_cast<i64>(ind.rank()) + 1;
      const std::size_t axis = static_cast<std::size_t>(normalize_axis(axis_attr, rank, ctx.node()));
      std::vector<i64> idx(static_cast<std::size_t>(ind.size()));
      dispatch<numeric_types>(ind.element_type(), ctx.node(), [&]<class T>() {
        const T* p = ind.data<T>();
        for (std::size_t i = 0; i < idx.size(); ++i) {
          if constexpr (std::is_integral_v<T>) idx[i] = static_cast<i64>(p[i]);
          else idx[i] = float_to_int<i64>(static_cast<compute_t<T>>(p[i]));  // (NaN or 1e30: defined)
        }
      });
      std::vector<i64> out = ind.sizes();
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(axis), depth);
      gpass::tensor& y = ctx.allocate_output(0, vals.element_type(), out);
      const i64 outer = prod(ind.sizes(), 0, axis), inner = prod(ind.sizes(), axis, ind.rank());
      check_string_copies(ctx, {&vals}, y.size(), [&] {  // depth copies of off and on per index
        i64 on = 0;
        for (i64 v : idx) on += v >= -depth && v < depth;  // the indices the loop below writes `on` at
        const std::string* p = vals.data<std::string>();
        return static_cast<double>(y.size() - on) * static_cast<double>(p[0].size()) + static_cast<double>(on) * static_cast<double>(p[1].size());
      });
      dispatch_move(vals.element_type(), ctx.node(), [&]<class U>() {
        const U off = elems<U>(vals)[0], on = elems<U>(vals)[1];
        U* o = elems<U>(y);
        std::fill(o, o + y.size(), off);
        for (i64 k = 0; k < outer; ++k)
          for (i64 j = 0; j < inner; ++j) {
            i64 v = idx[static_cast<std::size_t>(k * inner + j)];
            if (v < 0) v += depth;
            if (v >= 0 && v < depth) o[(k * depth + v) * inner + j] = on;
          }
      });
    };
  }});
  r.add({.op = "Trilu", .make = [](const kernel_node& n) -> fn {
    const bool upper = n.attr<i64>("upper", 1) != 0;
    return [upper](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      if (x.rank() < 2) ctx.fail("input must have rank >= 2");
      const i64 k_in = ctx.has_input(1) ? float_to_int<i64>(first_as_double(ctx.input(1), ctx.node(), "k")) : 0;
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
      const i64 R = x.sizes()[x.rank() - 2], C = x.sizes()[x.rank() - 1];
      const i64 mats = x.size() == 0 ? 0 : x.size() / (R * C);  // (R * C of an empty x may overflow)
      // a diagonal beyond every row or column acts as the nearest one that is (no i + k overflow)
      const i64 k = mats == 0 ? 0 : std::clamp<i64>(k_in, -R - 1, C + 1);
      dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
        copy_n(elems<U>(x), x.size(), elems<U>(y));
        U* o = elems<U>(y);
        for (i64 m = 0; m < mats; ++m)
          for (i64 i = 0; i < R; ++i) {
            U* row = o + (m * R + i) * C;
            // upper keeps j >= i + k, lower keeps j <= i + k
            const i64 b = upper ? 0 : std::clamp<i64>(i + k + 1, 0, C);
            const i64 e = upper ? std::clamp<i64>(i + k, 0, C) : C;
            std::fill(row + b, row + e, U{});
          }
      });
    };
  }});
  r.add({.op = "EyeLike", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const i64 k = n.attr<i64>("k", 0);
    const dtype to = n.has_attr("dtype") ? onnx_dtype_attr(n, "dtype", dtype::undefined) : dtype::undefined;
    return [k, to](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      if (x.rank() != 2) ctx.fail("input must have rank 2, got " + sizes_str(x.sizes()));
      const dtype t = to == dtype::undefined ? x.element_type() : to;
      gpass::tensor& y = ctx.allocate_output_zeroed(0, t, x.sizes());
      const i64 R = x.sizes()[0], C = x.sizes()[1];
      // a diagonal outside the matrix gives all zeros: k clamped to [-R, C] (no -k or i + k overflow)
      const i64 kc = std::clamp<i64>(k, -R, C);
      const gpass::tensor one = scalar_of(t, 1.0, ctx.node());
      dispatch_move(t, ctx.node(), [&]<class U>() {
        U* o = elems<U>(y);
        for (i64 i = std::max<i64>(0, -kc); i < R && i + kc < C; ++i) o[i * C + i + kc] = elems<U>(one)[0];
      });
    };
  }});
}

/// Registers Compress, NonZero, Unique, TopK, ReverseSequence.
inline void register_array_select(registry& r) {
  using namespace array_detail;
  r.add({.op = "Compress", .make = [](const kernel_node& n) -> fn {
    const std::optional<i64> axis_attr = n.has_attr("axis") ? std::optional<i64>(n.attr<i64>("axis")) : std::nullopt;
    return [axis_attr](context& ctx) {
      const gpass::tensor& x0 = ctx.input(0);
      const gpass::tensor& cond = ctx.input(1);
      if (cond.element_type() != dtype::bool_ || cond.rank() != 1) ctx.fail("condition must be a 1-D bool tensor");
      const gpass::tensor x = axis_attr ? x0 : x0.reshaped({x0.size()});
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
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), out);
      if (y.size() == 0) return;
      const i64 outer = prod(x.sizes(), 0, axis), inner = prod(x.sizes(), axis + 1, x.rank());
      dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
        const U* s = elems<U>(x);
        U* o = elems<U>(y);
        for (i64 k = 0; k < outer; ++k)
          for (i64 j : sel) {
            copy_n(s + (k * dim + j) * inner, inner, o);
            o += inner;
          }
      });
    };
  }});
  r.add({.op = "NonZero", .make = [](const kernel_node&) -> fn {
    return [](context& ctx) { nonzero_into(ctx, ctx.input(0), false); };
  }});
  r.add({.op = "Unique", .make = [](const kernel_node& n) -> fn {
    const bool sorted = n.attr<i64>("sorted", 1) != 0;
    const std::optional<i64> axis_attr = n.has_attr("axis") ? std::optional<i64>(n.attr<i64>("axis")) : std::nullopt;
    return [sorted, axis_attr](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const std::size_t rank = x.rank();
      std::size_t axis = 0;
      i64 nrows = x.size(), m = 1;
      // rows laid out contiguously: the axis moved to the front
      gpass::tensor rows = x;
      std::vector<i64> rest;
      if (axis_attr) {
        axis = static_cast<std::size_t>(shape_rules::dim_axis(*axis_attr, static_cast<i64>(rank), ctx.node()));
        nrows = x.sizes()[axis];
        const auto st = strides_of(x.sizes());
        std::vector<i64> vs{nrows}, vst{st[axis]};
        for (std::size_t d = 0; d < rank; ++d)
          if (d != axis) {
            vs.push_back(x.sizes()[d]);
            vst.push_back(st[d]);
            rest.push_back(x.sizes()[d]);
          }
        m = prod(rest, 0, rest.size());
        rows = x.element_type() == dtype::string ? gpass::tensor(x.element_type(), vs) : gpass::tensor::uninitialized(x.element_type(), vs);
        dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
          strided_copy<U>(ctx.policy(), elems<U>(rows), elems<U>(x), vs, vst);
        });
      }
      std::vector<i64> order(static_cast<std::size_t>(nrows));
      std::iota(order.begin(), order.end(), i64{0});
      std::vector<i64> group(static_cast<std::size_t>(nrows));  // row -> unique slot (in sorted order)
      std::vector<i64> firsts;                                    // per slot: first row index
      dispatch<all_types>(x.element_type(), ctx.node(), [&]<class T>() {
        const T* p = rows.data<T>();
        // values in NumPy's order (the reference's np.unique): -0 equal to +0, every NaN equal
        // and after every number
        auto lt = [](const T& a, const T& b) {
          if constexpr (!std::is_integral_v<T> && !std::is_same_v<T, std::string>) {
            const bool na = std::isnan(static_cast<double>(static_cast<compute_t<T>>(a)));
            const bool nb = std::isnan(static_cast<double>(static_cast<compute_t<T>>(b)));
            if (na || nb) return !na && nb;
          }
          return a < b;
        };
        auto less = [&](i64 a, i64 b) {
          const T *ra = p + a * m, *rb = p + b * m;
          for (i64 j = 0; j < m; ++j) {
            if (lt(ra[j], rb[j])) return true;
            if (lt(rb[j], ra[j])) return false;
          }
          return false;
        };
        std::stable_sort(order.begin(), order.end(), less);
        for (std::size_t i = 0; i < order.size(); ++i) {
          if (i == 0 || less(order[i - 1], order[i])) firsts.push_back(order[i]);
          group[static_cast<std::size_t>(order[i])] = static_cast<i64>(firsts.size()) - 1;
        }
      });
      const i64 k = static_cast<i64>(firsts.size());
      // slot order: sorted (as found) or by first occurrence
      std::vector<i64> slot_of(static_cast<std::size_t>(k));  // sorted slot -> output position
      std::iota(slot_of.begin(), slot_of.end(), i64{0});
      if (!sorted) {
        std::vector<i64> by_first(static_cast<std::size_t>(k));
        std::iota(by_first.begin(), by_first.end(), i64{0});
        std::sort(by_first.begin(), by_first.end(), [&](i64 a, i64 b) { return firsts[static_cast<std::size_t>(a)] < firsts[static_cast<std::size_t>(b)]; });
        for (i64 pos = 0; pos < k; ++pos) slot_of[static_cast<std::size_t>(by_first[static_cast<std::size_t>(pos)])] = pos;
      }
      std::vector<i64> first_at(static_cast<std::size_t>(k)), counts(static_cast<std::size_t>(k), 0);
      for (i64 s = 0; s < k; ++s) first_at[static_cast<std::size_t>(slot_of[static_cast<std::size_t>(s)])] = firsts[static_cast<std::size_t>(s)];
      std::vector<i64> inverse(static_cast<std::size_t>(nrows));
      for (i64 i = 0; i < nrows; ++i) {
        inverse[static_cast<std::size_t>(i)] = slot_of[static_cast<std::size_t>(group[static_cast<std::size_t>(i)])];
        ++counts[static_cast<std::size_t>(inverse[static_cast<std::size_t>(i)])];
      }
      // Y
      std::vector<i64> ysz = axis_attr ? x.sizes() : std::vector<i64>{k};
      if (axis_attr) ysz[axis] = k;
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), ysz);
      if (y.size() != 0) {
        dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
          // gather the unique rows, then move the axis back
          const U* p = elems<U>(rows);
          if (!axis_attr) {
            U* o = elems<U>(y);
            for (i64 j = 0; j < k; ++j) o[j] = p[first_at[static_cast<std::size_t>(j)]];
            return;
          }
          std::vector<i64> us{k};
          us.insert(us.end(), rest.begin(), rest.end());
          gpass::tensor u = x.element_type() == dtype::string ? gpass::tensor(x.element_type(), us) : gpass::tensor::uninitialized(x.element_type(), us);
          U* q = elems<U>(u);
          for (i64 j = 0; j < k; ++j) copy_n(p + first_at[static_cast<std::size_t>(j)] * m, m, q + j * m);
          const auto rst = strides_of(rest);
          std::vector<i64> vst(rank);
          for (std::size_t d = 0, rd = 0; d < rank; ++d) vst[d] = d == axis ? m : rst[rd++];
          strided_copy<U>(ctx.policy(), elems<U>(y), q, ysz, vst);
        });
      }
      auto put = [&](std::size_t out, const std::vector<i64>& v) {
        if (out >= ctx.num_outputs()) return;
        gpass::tensor& t = ctx.allocate_output(out, dtype::int64, {static_cast<i64>(v.size())});
        std::copy(v.begin(), v.end(), t.data<i64>());
      };
      put(1, first_at);
      put(2, inverse);
      put(3, counts);
    };
  }});
  r.add({.op = "TopK", .make = [](const kernel_node& n) -> fn {
    const i64 axis_attr = n.attr<i64>("axis", -1);
    const bool largest = n.attr<i64>("largest", 1) != 0;
    const std::optional<i64> k_attr = n.has_attr("k") ? std::optional<i64>(n.attr<i64>("k")) : std::nullopt;
    return [axis_attr, largest, k_attr](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const i64 rank = static_cast<i64>(x.rank());
      if (rank == 0) ctx.fail("input must have rank >= 1");
      const std::size_t axis = static_cast<std::size_t>(normalize_axis(axis_attr, rank, ctx.node()));
      const i64 k = k_attr ? *k_attr : [&] {
        const auto kv = int_values(ctx.input(1), ctx.node(), "K");
        if (kv.size() != 1) ctx.fail("K must have one element");
        return kv[0];
      }();
      topk_into(ctx, x, static_cast<i64>(axis), k, largest);
    };
  }});
  r.add({.op = "ReverseSequence", .make = [](const kernel_node& n) -> fn {
    const i64 batch_attr = n.attr<i64>("batch_axis", 1), time_attr = n.attr<i64>("time_axis", 0);
    return [batch_attr, time_attr](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const i64 rank = static_cast<i64>(x.rank());
      if (rank < 2) ctx.fail("input must have rank >= 2");
      const std::size_t ba = static_cast<std::size_t>(normalize_axis(batch_attr, rank, ctx.node()));
      const std::size_t ta = static_cast<std::size_t>(normalize_axis(time_attr, rank, ctx.node()));
      if (ba == ta) ctx.fail("batch_axis and time_axis are the same");
      const auto lens = int_values(ctx.input(1), ctx.node(), "sequence_lens");
      const i64 B = x.sizes()[ba], T = x.sizes()[ta];
      if (static_cast<i64>(lens.size()) != B) ctx.fail("sequence_lens must have one entry per batch");
      for (i64 l : lens)
        if (l < 0 || l > T) ctx.fail("sequence length " + std::to_string(l) + " is out of range [0, " + std::to_string(T) + "]");
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
      if (y.size() == 0) return;
      const auto st = strides_of(x.sizes());
      dispatch_move(x.element_type(), ctx.node(), [&]<class U>() {
        const U* s = elems<U>(x);
        U* o = elems<U>(y);
        std::vector<i64> idx(x.rank(), 0);
        for (i64 i = 0, n = y.size(); i < n; ++i) {
          const i64 b = idx[ba], t = idx[ta], l = lens[static_cast<std::size_t>(b)];
          o[i] = t < l ? s[i + (l - 1 - 2 * t) * st[ta]] : s[i];
          for (std::size_t d = x.rank(); d-- > 0;) {
            if (++idx[d] < x.sizes()[d]) break;
            idx[d] = 0;
          }
        }
      });
    };
  }});
}

namespace array_detail {

using resize_rules::plan_resize;
using resize_rules::read_resize_inputs;
using resize_rules::read_resize_options;
using resize_rules::resize_inputs;
using resize_rules::resize_axis;
using resize_rules::resize_options;
using resize_rules::resize_plan;

inline fn make_resize(resize_options opt) {
  return [opt](context& ctx) {
    const kernel_node& nd = ctx.node();
    const gpass::tensor& x = ctx.input(0);
    const std::size_t rank = x.rank();
    const resize_inputs ri = read_resize_inputs(opt, nd, [&](std::size_t i) { return ctx.has_input(i); },
                                                [&](std::size_t i) { return ctx.input(i); });
    gpass::tensor* yp = nullptr;
    const resize_plan rp = plan_resize(opt, x.sizes(), ri.scales, ri.sizes, ri.roi, nd,
                                       [&](const std::vector<i64>& out) { yp = &ctx.allocate_output(0, x.element_type(), out); });
    const std::vector<i64>& out = rp.out;
    const std::vector<char>& active = rp.active;
    const std::vector<resize_axis>& plans = rp.plans;
    gpass::tensor& y = *yp;
    if (y.size() == 0) return;
    if (opt.mode == 0) {
      // nearest: a gather by per-axis index maps (any element type, exact)
      gpass::tensor ev;
      if (x.element_type() != dtype::string) ev = scalar_of(x.element_type(), opt.extrapolation, nd);
      std::vector<std::vector<i64>> maps(rank);
      for (std::size_t d = 0; d < rank; ++d) {
        maps[d].resize(static_cast<std::size_t>(out[d]));
        for (i64 o = 0; o < out[d]; ++o)
          maps[d][static_cast<std::size_t>(o)] =
              !active[d] ? o : plans[d].extrap[static_cast<std::size_t>(o)] ? -1 : plans[d].idx[static_cast<std::size_t>(o)];
      }
      gather_by_maps(ctx, x, y, maps, ev);
      return;
    }
    // linear / cubic: separable passes in double, the last axis first
    using L = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::uint8_t, std::int32_t, std::int64_t>;
    dispatch<L>(x.element_type(), nd, [&]<class T>() {
      std::vector<i64> cur = x.sizes();
      std::vector<double> buf(static_cast<std::size_t>(x.size()));
      const T* s = x.data<T>();
      for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<double>(static_cast<compute_t<T>>(s[i]));
      std::vector<double> next;
      for (std::size_t d = rank; d-- > 0;) {
        if (!active[d]) continue;
        const resize_axis& p = plans[d];
        const i64 outer = prod(cur, 0, d), inner = prod(cur, d + 1, rank);
        // between passes the tensor has the input's sizes before d and the output's from d:
        // larger than both when some axes shrink and others grow
        const double cells = static_cast<double>(outer) * static_cast<double>(p.out) * static_cast<double>(inner);
        check_scratch(ctx, cells * sizeof(double), "the resize pass over axis " + std::to_string(d));
        next.assign(static_cast<std::size_t>(cells), 0.0);
        ctx.policy().parallel_for(outer * p.out, static_cast<double>(inner * p.n) + 4.0, [&](i64 b, i64 e) {
          for (i64 w = b; w < e; ++w) {
            const i64 o = w / p.out, yy = w % p.out;
            double* dst = next.data() + w * inner;
            if (p.extrap[static_cast<std::size_t>(yy)]) {
              std::fill(dst, dst + inner, opt.extrapolation);
              continue;
            }
            for (int k = 0; k < p.n; ++k) {
              const double wt = p.w[static_cast<std::size_t>(yy * p.n + k)];
              if (wt == 0) continue;
              const double* src = buf.data() + (o * p.in + p.idx[static_cast<std::size_t>(yy * p.n + k)]) * inner;
              for (i64 j = 0; j < inner; ++j) dst[j] += wt * src[j];
            }
          }
        });
        cur[d] = p.out;
        buf.swap(next);
      }
      T* o = y.data<T>();
      for (std::size_t i = 0; i < buf.size(); ++i) {
        if constexpr (std::is_integral_v<T>) {
          const double v = std::nearbyint(buf[i]);
          // clamped to T's range, then converted defined: NaN (a NaN extrapolation_value) gives 0,
          // and int64's upper bound double(INT64_MAX) = 2^63 saturates instead of overflowing
          o[i] = float_to_int<T>(std::clamp(v, static_cast<double>(std::numeric_limits<T>::lowest()),
                                            static_cast<double>(std::numeric_limits<T>::max())));
        } else {
          o[i] = static_cast<T>(static_cast<compute_t<T>>(buf[i]));
        }
      }
    });
  };
}

}  // namespace array_detail

/// Registers Resize and Upsample.
inline void register_array_resize(registry& r) {
  using namespace array_detail;
  r.add({.op = "Resize", .make = [](const kernel_node& n) -> fn { return make_resize(read_resize_options(n, false)); }});
  r.add({.op = "Upsample", .make = [](const kernel_node& n) -> fn { return make_resize(read_resize_options(n, true)); }});
}

/// Registers the ops new since opset 18: CenterCropPad, Col2Im, TensorScatter, BitCast.
inline void register_array_new(registry& r) {
  using namespace array_detail;
  // CenterCropPad (18): each listed axis cropped or zero-padded to its size in `shape`,
  // centered (an odd difference leaves the extra element at the end)
  r.add({.op = "CenterCropPad", .since_version = 18, .make = [](const kernel_node& n) -> fn {
    std::optional<std::vector<i64>> axes_attr;
    if (n.has_attr("axes")) axes_attr = n.attr<std::vector<i64>>("axes");
    return [axes_attr](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto [begin, end] = shape_rules::center_crop_pad(x.sizes(), int_values(ctx.input(1), ctx.node(), "shape"), axes_attr, ctx.node());
      pad_into(ctx, x, begin, end, 0, gpass::tensor{});
    };
  }});
  // TensorScatter (24): the cache with `update` written along `axis` from each batch's write
  // index (input 2; 0 when absent), "linear" (must fit) or "circular" (wraps around)
  r.add({.op = "TensorScatter", .since_version = 24, .make = [](const kernel_node& n) -> fn {
    const std::string mode = n.attr<std::string>("mode", "linear");
    if (mode != "linear" && mode != "circular") n.fail("mode must be linear or circular, not '" + mode + "'");
    const i64 axis_attr = n.attr<i64>("axis", -2);
    return [circular = mode == "circular", axis_attr](context& ctx) {
      const gpass::tensor& cache = ctx.input(0);
      const gpass::tensor& upd = ctx.input(1);
      const shape_rules::tensor_scatter_plan p =
          shape_rules::tensor_scatter(cache.sizes(), upd.sizes(), upd.element_type() == cache.element_type(), axis_attr, ctx.node());
      std::vector<i64> write(static_cast<std::size_t>(p.batch), 0);
      if (ctx.has_input(2)) write = int_values(ctx.input(2), ctx.node(), "write_indices");
      shape_rules::check_tensor_scatter_writes(write, p, circular, ctx.node());
      const i64 L = p.L, S = p.S, outer = p.outer, per_batch = p.per_batch, inner = p.inner;
      gpass::tensor& y = ctx.allocate_output(0, cache.element_type(), cache.sizes());
      dispatch_move(cache.element_type(), ctx.node(), [&]<class U>() {
        copy_n(elems<U>(cache), cache.size(), elems<U>(y));
        const U* u = elems<U>(upd);
        U* o = elems<U>(y);
        for (i64 q = 0; q < outer; ++q) {
          const i64 w = write[static_cast<std::size_t>(q / (per_batch ? per_batch : 1))];
          for (i64 k = 0; k < S; ++k) {
            const i64 at = circular ? (w + k) % L : w + k;
            copy_n(u + (q * S + k) * inner, inner, o + (q * L + at) * inner);
          }
        }
      });
    };
  }});
  // BitCast (26): the same bytes as element type `to` of the same width
  r.add({.op = "BitCast", .since_version = 26, .make = [](const kernel_node& n) -> fn {
    const i64 code = n.attr<i64>("to");
    const auto to = dtype_from_onnx_code(code);
    if (!to || *to == dtype::string || size_of(*to) == 0) n.fail("'to' (" + std::to_string(code) + ") is not a type gpass can bit-cast to");
    return [to = *to](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      if (x.element_type() == dtype::string || bit_width(x.element_type()) != bit_width(to))
        ctx.fail("cannot bit-cast " + std::string(to_string(x.element_type())) + " to " + std::string(to_string(to)) +
                 " (the widths differ)");
      gpass::tensor& y = ctx.allocate_output(0, to, x.sizes());
      if (to == dtype::bool_) {  // a bool holds 0 or 1
        const auto* p = reinterpret_cast<const std::uint8_t*>(x.raw());
        for (i64 i = 0; i < x.size(); ++i) y.data<bool>()[i] = p[i] != 0;
      } else if (x.nbytes()) {
        std::memcpy(y.raw(), x.raw(), x.nbytes());
      }
    };
  }});
  // Col2Im (18): input [N, C * prod(block), L] of sliding blocks summed back into an image
  // [N, C, image_shape...] (the inverse of im2col; strides, pads, dilations)
  r.add({.op = "Col2Im", .since_version = 18, .dtypes = numeric_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const auto strides_attr = n.attr<std::vector<i64>>("strides", {});
    const auto pads_attr = n.attr<std::vector<i64>>("pads", {});
    const auto dil_attr = n.attr<std::vector<i64>>("dilations", {});
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const std::vector<i64> image = int_values(ctx.input(1), ctx.node(), "image_shape");
      const std::vector<i64> block = int_values(ctx.input(2), ctx.node(), "block_shape");
      const nn_rules::col2im_geometry geo = nn_rules::col2im_plan(x.sizes(), image, block, strides_attr, pads_attr, dil_attr, ctx.node());
      const std::size_t nd = image.size();
      const auto& st = geo.strides;
      const auto& dl = geo.dilations;
      const auto& pb = geo.pad_begin;
      const auto& blocks = geo.blocks;
      const i64 kprod = geo.kprod, L = geo.L, N = x.sizes()[0], C = geo.C;
      const std::vector<i64>& out = geo.out;
      const i64 plane = prod(image, 0, nd);
      dispatch<numeric_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using CT = compute_t<T>;
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), out);
        if (y.size() == 0) return;  // (an empty image or input: its other sizes may be anything)
        std::vector<CT> acc(static_cast<std::size_t>(plane));
        const T* in = x.data<T>();
        T* o = y.data<T>();
        std::vector<i64> kidx(nd), bidx(nd);
        for (i64 nc = 0; nc < N * C; ++nc) {
          std::fill(acc.begin(), acc.end(), CT(0));
          for (i64 k = 0; k < kprod; ++k) {
            for (i64 r = k, d = static_cast<i64>(nd); d-- > 0;) {
              kidx[static_cast<std::size_t>(d)] = r % block[static_cast<std::size_t>(d)];
              r /= block[static_cast<std::size_t>(d)];
            }
            const T* row = in + (nc * kprod + k) * L;
            for (i64 l = 0; l < L; ++l) {
              i64 pos = 0;
              bool inside = true;
              for (i64 r = l, d = static_cast<i64>(nd); d-- > 0;) {
                const std::size_t ud = static_cast<std::size_t>(d);
                bidx[ud] = r % blocks[ud];
                r /= blocks[ud];
              }
              for (std::size_t d = 0; d < nd; ++d) {
                const i64 p = bidx[d] * st[d] - pb[d] + kidx[d] * dl[d];
                if (p < 0 || p >= image[d]) {
                  inside = false;
                  break;
                }
                pos = pos * image[d] + p;
              }
              if (inside) acc[static_cast<std::size_t>(pos)] = add_w<CT>(acc[static_cast<std::size_t>(pos)], static_cast<CT>(row[l]));  // (int sums wrap)
            }
          }
          for (i64 i = 0; i < plane; ++i) o[nc * plane + i] = static_cast<T>(acc[static_cast<std::size_t>(i)]);
        }
      });
    };
  }});
}

/// Registers the array family.
inline void register_array(registry& r) {
  register_array_shape(r);
  register_array_move(r);
  register_array_index(r);
  register_array_make(r);
  register_array_select(r);
  register_array_resize(r);
  register_array_new(r);
}

}  // namespace gpass::exec::cpu_detail
