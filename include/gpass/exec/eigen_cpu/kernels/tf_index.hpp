// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_index.hpp
/// Eigen CPU kernels of TensorFlow's indexed reads and writes, segment reductions and image
/// resizing (domain "tf"), with TensorFlow's CPU semantics:
///
/// GatherNd; ScatterNd (duplicates add up); TensorScatterUpdate / Add / Sub / Max / Min;
/// UnsortedSegmentSum / Prod / Max / Min (negative ids dropped, empty segments the
/// reduction's identity: 0, 1, lowest, highest); SegmentSum / Mean / Prod / Max / Min (ids
/// sorted; empty segments 0, of SegmentProd 1); ReverseSequence; Unique, UniqueWithCounts (first-occurrence order); Bincount and
/// DenseBincount (1-D and 2-D, weights, binary_output); ResizeBilinear,
/// ResizeNearestNeighbor and ResizeBicubic (NHWC; align_corners, half_pixel_centers,
/// TensorFlow's coordinate rules, clamping and cubic weight table), ResizeArea; DepthToSpace,
/// SpaceToDepth, Roll, DynamicStitch, ParallelDynamicStitch, DynamicPartition, SparseToDense,
/// SparseSegmentSum / Mean / SqrtN (and WithNumSegments); L2Loss, BroadcastArgs, MatrixBandPart, InTopKV2.
///
/// Indices out of range are errors naming the node, as on TensorFlow's CPU.
/// Private (`gpass::exec::cpu_detail`).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/exec/eigen_cpu/kernels/array.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>
#include <gpass/exec/tf_ctc_rules.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

namespace index_detail {

/// Product of `s[b, e)`.
inline i64 prod(const std::vector<i64>& s, std::size_t b, std::size_t e) {
  i64 p = 1;
  for (std::size_t i = b; i < e; ++i) p *= s[i];
  return p;
}

/// The flat row offsets that `indices` [..., k] select in a tensor of `sizes` (its first k
/// dims): one per index vector, in units of the slice size `prod(sizes[k:])`.
inline std::vector<i64> nd_rows(const gpass::tensor& indices, const std::vector<i64>& sizes, const kernel_node& n,
                                const char* what) {
  if (indices.rank() < 1) n.fail(std::string(what) + " must have rank >= 1");
  const auto k = static_cast<std::size_t>(indices.sizes().back());
  if (k > sizes.size())
    n.fail(std::string(what) + "'s last dim " + std::to_string(k) + " is more than the rank " + std::to_string(sizes.size()));
  const auto v = int_values(indices, n, what);
  std::vector<i64> rows(static_cast<std::size_t>(prod(indices.sizes(), 0, indices.rank() - 1)), 0);
  for (std::size_t r = 0; k > 0 && r < rows.size(); ++r) {
    i64 off = 0;
    for (std::size_t d = 0; d < k; ++d) {
      const i64 i = v[r * k + d];
      if (i < 0 || i >= sizes[d]) {
        std::string where = "[";
        for (std::size_t e = 0; e < k; ++e) where += (e ? ", " : "") + std::to_string(v[r * k + e]);
        n.fail(std::string(what) + where + "] does not index into " + shape::of(sizes).to_string());
      }
      off = off * sizes[d] + i;
    }
    rows[r] = off;
  }
  return rows;
}

/// `dst` combined with `src`: 0 set, 1 add, 2 sub, 3 max, 4 min, 5 mul (strings and bools are set).
template <class T>
void combine(T& dst, const T& src, int mode) {  // 0 set, 1 add, 2 sub, 3 max, 4 min, 5 mul
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>) {
    dst = src;
    (void)mode;
  } else {
    using C = compute_t<T>;
    const C a = static_cast<C>(dst), b = static_cast<C>(src);
    switch (mode) {
      case 0: dst = src; break;
      case 1: dst = static_cast<T>(add_w(a, b)); break;  // (integers wrap: no signed overflow)
      case 2: dst = static_cast<T>(sub_w(a, b)); break;
      case 3: dst = static_cast<T>(std::max(a, b)); break;
      case 4: dst = static_cast<T>(std::min(a, b)); break;
      default: dst = static_cast<T>(mul_w(a, b)); break;
    }
  }
}

/// `out` (already holding the base values) with `updates`' slices combined into the rows
/// that `indices` selects (TensorScatter*, ScatterNd).
inline void scatter_nd_into(context& ctx, gpass::tensor& out, const gpass::tensor& indices, const gpass::tensor& updates,
                            int mode) {
  const auto& sizes = out.sizes();
  const auto rows = nd_rows(indices, sizes, ctx.node(), "indices");
  const auto k = static_cast<std::size_t>(indices.sizes().back());
  const i64 slice = prod(sizes, k, sizes.size());
  // updates must be indices.shape[:-1] + shape[k:]
  std::vector<i64> want(indices.sizes().begin(), indices.sizes().end() - 1);
  want.insert(want.end(), sizes.begin() + static_cast<std::ptrdiff_t>(k), sizes.end());
  if (updates.sizes() != want)
    ctx.fail("updates has shape " + updates.shape().to_string() + ", expected " + shape::of(want).to_string());
  if (updates.element_type() != out.element_type()) ctx.fail("updates and tensor have different element types");
  dispatch<all_types>(out.element_type(), ctx.node(), [&]<class T>() {
    T* o = out.data<T>();
    const T* u = updates.data<T>();
    for (std::size_t r = 0; r < rows.size(); ++r)
      for (i64 j = 0; j < slice; ++j) combine(o[rows[r] * slice + j], u[static_cast<i64>(r) * slice + j], mode);
  });
}

/// The identity of a segment reduction for `T` (0 sum, 1 prod, lowest max, highest min).
template <class T>
T reduction_identity(int mode) {
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>) {
    return T{};
  } else {
    using C = compute_t<T>;
    switch (mode) {
      case 3: return static_cast<T>(std::numeric_limits<C>::lowest());
      case 4: return static_cast<T>(std::numeric_limits<C>::max());
      case 5: return static_cast<T>(C(1));
      default: return static_cast<T>(C(0));
    }
  }
}

/// Segment reduction of `data` by `ids` (over ids' dims) into `segments` rows; rows of
/// negative ids are dropped; `mean` divides each by its count; empty segments hold
/// `empty_zero ? 0 : identity`.
inline void segment_reduce(context& ctx, const gpass::tensor& data, const std::vector<i64>& ids, const std::vector<i64>& id_sizes,
                           i64 segments, int mode, bool mean, bool empty_zero) {
  const auto& ds = data.sizes();
  if (id_sizes.size() > ds.size() || !std::equal(id_sizes.begin(), id_sizes.end(), ds.begin()))
    ctx.fail("segment_ids shape " + shape::of(id_sizes).to_string() + " is not a prefix of data's " + data.shape().to_string());
  std::vector<i64> out_sizes{segments};
  out_sizes.insert(out_sizes.end(), ds.begin() + static_cast<std::ptrdiff_t>(id_sizes.size()), ds.end());
  gpass::tensor& out = ctx.allocate_output(0, data.element_type(), out_sizes);
  dispatch<numeric_types>(data.element_type(), ctx.node(), [&]<class T>() {
    std::fill(out.data<T>(), out.data<T>() + out.size(), reduction_identity<T>(mode));
  });
  // no data: nothing to add (TensorFlow returns here without looking at the ids); also keeps
  // the work below from scaling with `segments` (a value) when the output is empty
  if (data.size() == 0) return;
  const i64 inner = data.size() / static_cast<i64>(ids.size());  // (data has no zero dim)
  // counts only for the mean and the empty segments; `segments` <= out.size() here
  std::vector<i64> count;
  if (mean || empty_zero) {
    check_scratch(ctx, static_cast<double>(segments) * sizeof(i64), "the segment counts");
    count.assign(static_cast<std::size_t>(segments), 0);
  }
  dispatch<numeric_types>(data.element_type(), ctx.node(), [&]<class T>() {
    T* o = out.data<T>();
    const T* x = data.data<T>();
    for (std::size_t r = 0; r < ids.size(); ++r) {
      const i64 s = ids[r];
      if (s < 0) continue;
      if (s >= segments) ctx.fail("segment id " + std::to_string(s) + " is out of range [0, " + std::to_string(segments) + ")");
      if (!count.empty()) ++count[static_cast<std::size_t>(s)];
      for (i64 j = 0; j < inner; ++j) combine(o[s * inner + j], x[static_cast<i64>(r) * inner + j], mode);
    }
    using C = compute_t<T>;
    for (i64 s = 0; !count.empty() && s < segments; ++s) {
      const i64 c = count[static_cast<std::size_t>(s)];
      for (i64 j = 0; j < inner; ++j) {
        T& v = o[s * inner + j];
        if (c == 0 && empty_zero) v = static_cast<T>(C(0));
        else if (mean && c > 0) {
          if constexpr (std::is_integral_v<C>) {
            // divided in 64 bits: a count of 256 (65536) rows is 0 as an int8 (int16), and the
            // quotient's magnitude is at most the sum's, so it narrows back exactly
            using W = std::conditional_t<std::is_signed_v<C>, std::int64_t, std::uint64_t>;
            v = static_cast<T>(static_cast<W>(static_cast<C>(v)) / static_cast<W>(c));
          } else {
            v = static_cast<T>(static_cast<C>(v) / static_cast<C>(c));
          }
        }
      }
    }
  });
}

using tf_rules::resize_scale;
using tf_resize_sizes = tf_rules::resize_sizes;

/// The sizes of a resize: the NHWC image (input 0) and the output's height and width (input 1),
/// checked.
inline tf_resize_sizes tf_resize_geometry(const context& ctx) {
  return tf_rules::resize_geometry(ctx.input(0).sizes(), vector_ints(ctx.input(1), ctx.node(), "size"), ctx.node());
}

/// Writes every element of the float NHWC result `out` of resizing `x` as `f(at, row, column,
/// c)`: `at(y, x, c)` reads the image of the element's batch as float, `row` and `column` are
/// the plans `ys` / `xs` of the element's output row and column.
template <class Plan, class F>
void resize_into_float(const context& ctx, const gpass::tensor& x, gpass::tensor& out, const tf_resize_sizes& d,
                       const std::vector<Plan>& ys, const std::vector<Plan>& xs, F&& f) {
  dispatch<numeric_types>(x.element_type(), ctx.node(), [&]<class T>() {
    const T* in = x.data<T>();
    float* o = out.data<float>();
    for (i64 b = 0; b < d.N; ++b) {
      const T* image = in + b * d.H * d.W * d.C;
      auto at = [&](i64 y, i64 xx, i64 c) { return static_cast<float>(static_cast<compute_t<T>>(image[(y * d.W + xx) * d.C + c])); };
      for (i64 y = 0; y < d.OH; ++y)
        for (i64 xx = 0; xx < d.OW; ++xx)
          for (i64 c = 0; c < d.C; ++c)
            o[((b * d.OH + y) * d.OW + xx) * d.C + c] = f(at, ys[static_cast<std::size_t>(y)], xs[static_cast<std::size_t>(xx)], c);
    }
  });
}

}  // namespace index_detail

inline void register_tf_index_ops(registry& r) {
  using namespace index_detail;
  r.add({.domain = domain, .op = "GatherNd", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& p = ctx.input(0);
             const gpass::tensor& idx = ctx.input(1);
             const auto rows = nd_rows(idx, p.sizes(), ctx.node(), "indices");
             const auto k = static_cast<std::size_t>(idx.sizes().back());
             const i64 slice = prod(p.sizes(), k, p.rank());
             std::vector<i64> out(idx.sizes().begin(), idx.sizes().end() - 1);
             out.insert(out.end(), p.sizes().begin() + static_cast<std::ptrdiff_t>(k), p.sizes().end());
             gpass::tensor& y = ctx.allocate_output(0, p.element_type(), out);
             check_string_copies(ctx, {&p}, y.size(), [&] {  // rows may repeat
               const std::string* s = p.data<std::string>();
               double n = 0;
               for (const i64 row : rows)
                 for (i64 t = 0; t < slice; ++t) n += static_cast<double>(s[row * slice + t].size());
               return n;
             });
             dispatch<all_types>(p.element_type(), ctx.node(), [&]<class T>() {
               const T* s = p.data<T>();
               T* o = y.data<T>();
               for (std::size_t i = 0; i < rows.size(); ++i) std::copy_n(s + rows[i] * slice, slice, o + static_cast<i64>(i) * slice);
             });
           };
         }});
  // ScatterNd(indices, updates, shape): zeros with the updates added in
  r.add({.domain = domain, .op = "ScatterNd", .type_input = 1, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const auto sizes = vector_ints(ctx.input(2), ctx.node(), "shape");
             for (i64 s : sizes)
               if (s < 0) ctx.fail("shape has a negative dim " + std::to_string(s));
             gpass::tensor& out = ctx.allocate_output(0, ctx.input(1).element_type(), sizes);
             dispatch<all_types>(out.element_type(), ctx.node(), [&]<class T>() { std::fill(out.data<T>(), out.data<T>() + out.size(), T{}); });
             scatter_nd_into(ctx, out, ctx.input(0), ctx.input(1), 1);
           };
         }});
  const std::pair<const char*, int> scatters[] = {{"TensorScatterUpdate", 0}, {"TensorScatterAdd", 1}, {"TensorScatterSub", 2},
                                                  {"TensorScatterMax", 3},    {"TensorScatterMin", 4}};
  for (const auto& [op, mode] : scatters)
    r.add({.domain = domain, .op = op, .make = [mode](const kernel_node&) -> fn {
             return [mode](context& ctx) {
               gpass::tensor out = ctx.input(0).clone();
               scatter_nd_into(ctx, out, ctx.input(1), ctx.input(2), mode);
               ctx.set_output(0, std::move(out));
             };
           }});
  const std::pair<const char*, int> unsorted[] = {{"UnsortedSegmentSum", 1}, {"UnsortedSegmentProd", 5},
                                                  {"UnsortedSegmentMax", 3}, {"UnsortedSegmentMin", 4}};
  for (const auto& [op, mode] : unsorted)
    r.add({.domain = domain, .op = op, .make = [mode](const kernel_node&) -> fn {
             return [mode](context& ctx) {
               const gpass::tensor& ids = ctx.input(1);
               const i64 num = scalar_int(ctx.input(2), ctx.node(), "num_segments");
               if (num < 0) ctx.fail("num_segments must be non-negative, got " + std::to_string(num));
               segment_reduce(ctx, ctx.input(0), int_values(ids, ctx.node(), "segment_ids"), ids.sizes(), num, mode, false, false);
             };
           }});
  const std::pair<const char*, int> sorted[] = {{"SegmentSum", 1}, {"SegmentMean", 1}, {"SegmentProd", 5},
                                                {"SegmentMax", 3}, {"SegmentMin", 4}};
  for (const auto& [op, mode] : sorted)
    r.add({.domain = domain, .op = op, .make = [mode, mean = std::string_view(op) == "SegmentMean"](const kernel_node&) -> fn {
             return [mode, mean](context& ctx) {
               const gpass::tensor& ids = ctx.input(1);
               if (ids.rank() != 1) ctx.fail("segment_ids must be a vector, got " + ids.shape().to_string());
               const auto v = int_values(ids, ctx.node(), "segment_ids");
               for (std::size_t i = 0; i < v.size(); ++i) {
                 if (v[i] < 0) ctx.fail("segment ids must be non-negative, got " + std::to_string(v[i]));
                 if (i > 0 && v[i] < v[i - 1]) ctx.fail("segment ids are not increasing");
               }
               const auto num = v.empty() ? std::optional<i64>(0) : checked_add(v.back(), 1);  // (the id may be INT64_MAX)
               if (!num) ctx.fail("segment id " + std::to_string(v.back()) + " + 1 overflows int64");
               // (an empty segment of SegmentMax / Min is 0 in TensorFlow, not the identity; of
               // SegmentProd 1, the identity)
               segment_reduce(ctx, ctx.input(0), v, ids.sizes(), *num, mode, mean, mode != 5);
             };
           }});
  r.add({.domain = domain, .op = "ReverseSequence", .make = [](const kernel_node& n) -> fn {
           const i64 seq_attr = n.attr<i64>("seq_dim"), batch_attr = n.attr<i64>("batch_dim", 0);
           return [seq_attr, batch_attr](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const auto rank = static_cast<i64>(x.rank());
             const i64 seq = tf_axis(seq_attr, rank, ctx.node(), "seq_dim"), batch = tf_axis(batch_attr, rank, ctx.node(), "batch_dim");
             if (seq == batch) ctx.fail("seq_dim and batch_dim are both " + std::to_string(seq));
             const auto len = vector_ints(ctx.input(1), ctx.node(), "seq_lengths");
             const auto& s = x.sizes();
             if (static_cast<i64>(len.size()) != s[static_cast<std::size_t>(batch)])
               ctx.fail("seq_lengths has " + std::to_string(len.size()) + " entries, the batch dim is " + std::to_string(s[static_cast<std::size_t>(batch)]));
             for (i64 l : len)
               if (l < 0 || l > s[static_cast<std::size_t>(seq)])
                 ctx.fail("seq_lengths has " + std::to_string(l) + ", outside [0, " + std::to_string(s[static_cast<std::size_t>(seq)]) + "]");
             gpass::tensor out = x.clone();
             const auto st = strides_of(s);
             dispatch<all_types>(x.element_type(), ctx.node(), [&]<class T>() {
               const T* in = x.data<T>();
               T* o = out.data<T>();
               std::vector<i64> c(s.size(), 0);
               for (i64 f = 0; f < x.size(); ++f) {
                 i64 rem = f;
                 for (std::size_t d = 0; d < s.size(); ++d) c[d] = (rem / st[d]) % s[d];
                 const i64 l = len[static_cast<std::size_t>(c[static_cast<std::size_t>(batch)])];
                 const i64 t = c[static_cast<std::size_t>(seq)];
                 if (t < l) o[f + (l - 1 - 2 * t) * st[static_cast<std::size_t>(seq)]] = in[f];
               }
             });
             ctx.set_output(0, std::move(out));
           };
         }});
  // Unique / UniqueWithCounts (x 1-D): the values in order of first occurrence, each element's
  // index among them, and (WithCounts) how often each occurs. Values are equal as TensorFlow's
  // hash map compares them: -0 equals +0, and every NaN is a value of its own.
  auto unique = [](bool counts) {
    return [counts](const kernel_node& n) -> fn {
      const dtype it = type_attr(n, "out_idx", dtype::int32);
      return [it, counts](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        if (x.rank() != 1) ctx.fail("x must be a vector, got " + x.shape().to_string());
        std::vector<i64> idx(static_cast<std::size_t>(x.size()));
        std::vector<i64> first;  // the position of each unique value's first occurrence
        std::vector<i64> count;
        dispatch<all_types>(x.element_type(), ctx.node(), [&]<class T>() {
          const T* p = x.data<T>();
          std::map<T, i64> seen;  // (ordered: every dtype here has operator<; NaNs never enter it)
          for (i64 i = 0; i < x.size(); ++i) {
            bool nan = false;
            if constexpr (!std::is_integral_v<T> && !std::is_same_v<T, std::string>)
              nan = std::isnan(static_cast<double>(static_cast<compute_t<T>>(p[i])));
            i64 k = static_cast<i64>(first.size());
            if (nan) first.push_back(i);
            else if (auto [pos, fresh] = seen.emplace(p[i], k); fresh) first.push_back(i);
            else k = pos->second;
            if (k == static_cast<i64>(count.size())) count.push_back(0);
            ++count[static_cast<std::size_t>(k)];
            idx[static_cast<std::size_t>(i)] = k;
          }
          gpass::tensor& y = ctx.allocate_output(0, x.element_type(), {static_cast<i64>(first.size())});
          for (std::size_t k = 0; k < first.size(); ++k) y.data<T>()[k] = p[first[k]];
        });
        write_ints(ctx, 1, it, idx, {x.size()});
        if (counts) write_ints(ctx, 2, it, count, {static_cast<i64>(count.size())});
      };
    };
  };
  r.add({.domain = domain, .op = "Unique", .make = unique(false)});
  r.add({.domain = domain, .op = "UniqueWithCounts", .make = unique(true)});
  // Bincount(arr, size, weights) 1-D; DenseBincount(input, size, weights) 1-D or 2-D, binary_output
  auto bincount = [](bool dense) {
    return [dense](const kernel_node& n) -> fn {
      const bool binary = dense && flag(n, "binary_output", false);
      return [dense, binary](context& ctx) {
        const gpass::tensor& a = ctx.input(0);
        const i64 size = scalar_int(ctx.input(1), ctx.node(), "size");
        if (size < 0) ctx.fail("size must be non-negative, got " + std::to_string(size));
        const gpass::tensor& w = ctx.input(2);
        const bool weighted = w.size() > 0;
        if (weighted && w.sizes() != a.sizes()) ctx.fail("weights must have the shape of the input, or be empty");
        if (a.rank() > (dense ? 2u : 1u) || (!dense && a.rank() != 1))
          ctx.fail(std::string("input must be ") + (dense ? "1-D or 2-D" : "1-D") + ", got " + a.shape().to_string());
        const auto v = int_values(a, ctx.node(), "input");
        const i64 rows = a.rank() == 2 ? a.sizes()[0] : 1, cols = a.rank() == 2 ? a.sizes()[1] : a.size();
        std::vector<i64> out_sizes = a.rank() == 2 ? std::vector<i64>{rows, size} : std::vector<i64>{size};
        gpass::tensor& out = ctx.allocate_output(0, w.element_type(), out_sizes);
        dispatch<numeric_types>(w.element_type(), ctx.node(), [&]<class T>() {
          using C = compute_t<T>;
          T* o = out.data<T>();
          std::fill(o, o + out.size(), static_cast<T>(C(0)));
          for (i64 r = 0; r < rows; ++r)
            for (i64 c = 0; c < cols; ++c) {
              const i64 b = v[static_cast<std::size_t>(r * cols + c)];
              if (b < 0) ctx.fail("input has a negative value " + std::to_string(b));
              if (b >= size) continue;  // TensorFlow drops values >= size
              T& dst = o[r * size + b];
              if (binary) dst = static_cast<T>(C(1));
              else dst = static_cast<T>(add_w(static_cast<C>(dst), weighted ? static_cast<C>(w.data<T>()[r * cols + c]) : C(1)));
            }
        });
      };
    };
  };
  r.add({.domain = domain, .op = "Bincount", .type_input = 2, .make = bincount(false)});
  r.add({.domain = domain, .op = "DenseBincount", .type_input = 2, .make = bincount(true)});

  // ResizeBilinear / ResizeNearestNeighbor (NHWC), TensorFlow's coordinate rules
  auto resize = [](bool bilinear) {
    return [bilinear](const kernel_node& n) -> fn {
      const auto [align, half] = tf_rules::read_resize_attrs(n);
      return [bilinear, align, half](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        const tf_resize_sizes dims = tf_resize_geometry(ctx);
        const auto [N, H, W, C, OH, OW] = dims;
        const float hs = resize_scale(H, OH, align), ws = resize_scale(W, OW, align);
        gpass::tensor& out = ctx.allocate_output(0, bilinear ? dtype::f32 : x.element_type(), {N, OH, OW, C});
        if (bilinear) {
          using tap = tf_rules::bilinear_tap;
          resize_into_float(ctx, x, out, dims, tf_rules::bilinear_axis(OH, H, hs, half), tf_rules::bilinear_axis(OW, W, ws, half),
                            [](auto& at, const tap& wy, const tap& wx, i64 c) {
                              const float tl = at(wy.lo, wx.lo, c), tr = at(wy.lo, wx.hi, c);
                              const float bl = at(wy.hi, wx.lo, c), br = at(wy.hi, wx.hi, c);
                              const float top = tl + (tr - tl) * wx.lerp, bottom = bl + (br - bl) * wx.lerp;
                              return top + (bottom - top) * wy.lerp;
                            });
        } else {
          const auto sy = tf_rules::nearest_axis(OH, H, hs, align, half), sx = tf_rules::nearest_axis(OW, W, ws, align, half);
          dispatch<all_types>(x.element_type(), ctx.node(), [&]<class T>() {
            const T* in = x.data<T>();
            T* o = out.data<T>();
            for (i64 b = 0; b < N; ++b)
              for (i64 y = 0; y < OH; ++y)
                for (i64 xx = 0; xx < OW; ++xx)
                  std::copy_n(in + ((b * H + sy[static_cast<std::size_t>(y)]) * W + sx[static_cast<std::size_t>(xx)]) * C, C,
                              o + ((b * OH + y) * OW + xx) * C);
          });
        }
      };
    };
  };
  r.add({.domain = domain, .op = "ResizeBilinear", .make = resize(true)});
  r.add({.domain = domain, .op = "ResizeNearestNeighbor", .make = resize(false)});

  // ResizeBicubic (NHWC, float output), TensorFlow's: the cubic weights of a fraction read from
  // a 1025-entry table (the fraction rounded to 1/1024), a = -0.75 with the taps clamped to the
  // edge, or with half_pixel_centers Keys' a = -0.5 with the taps outside the image weighted 0
  // and the rest renormalized; rows interpolated first, then columns, in float
  r.add({.domain = domain, .op = "ResizeBicubic", .make = [](const kernel_node& n) -> fn {
           const auto [align, half] = tf_rules::read_resize_attrs(n);
           return [align, half](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const tf_resize_sizes dims = tf_resize_geometry(ctx);
             const auto [N, H, W, C, OH, OW] = dims;
             using taps = tf_rules::bicubic_taps;
             gpass::tensor& out = ctx.allocate_output(0, dtype::f32, {N, OH, OW, C});
             resize_into_float(ctx, x, out, dims, tf_rules::bicubic_axis(OH, H, resize_scale(H, OH, align), half),
                               tf_rules::bicubic_axis(OW, W, resize_scale(W, OW, align), half),
                               [](auto& at, const taps& ty, const taps& tx, i64 c) {
                                 std::array<float, 4> col{};
                                 for (std::size_t k = 0; k < 4; ++k) {
                                   const i64 cx = tx.at[k];
                                   col[k] = at(ty.at[0], cx, c) * ty.w[0] + at(ty.at[1], cx, c) * ty.w[1] + at(ty.at[2], cx, c) * ty.w[2] +
                                            at(ty.at[3], cx, c) * ty.w[3];
                                 }
                                 return col[0] * tx.w[0] + col[1] * tx.w[1] + col[2] * tx.w[2] + col[3] * tx.w[3];
                               });
           };
         }});

  // ResizeArea (NHWC, float output), TensorFlow's: output cell [o*s, (o+1)*s) of each axis (s the
  // resize scale) covers input cells floor(o*s) .. ceil((o+1)*s)-1, each weighted by the part of it
  // inside the output cell (indices past the image clamped to its edge); per output row the
  // weighted sum over each input row (first cell, interior cells, last cell) times the row's
  // weight, added up, times 1 / (sh * sw); all in float.
  r.add({.domain = domain, .op = "ResizeArea", .make = [](const kernel_node& n) -> fn {
           const bool align = flag(n, "align_corners", false);
           return [align](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const tf_resize_sizes dims = tf_resize_geometry(ctx);
             const auto [N, H, W, C, OH, OW] = dims;
             using cells = tf_rules::area_cells;
             const float hs = resize_scale(H, OH, align), ws = resize_scale(W, OW, align);
             const float norm = static_cast<float>(1.0 / static_cast<double>(hs * ws));
             gpass::tensor& out = ctx.allocate_output(0, dtype::f32, {N, OH, OW, C});
             resize_into_float(ctx, x, out, dims, tf_rules::area_axis(OH, H, hs), tf_rules::area_axis(OW, W, ws), [norm](auto& at, const cells& ty, const cells& tx, i64 c) {
               float sum = 0;
               const std::size_t nx = tx.at.size();
               // (no cells: align_corners on a 1-pixel axis, scale 0: the sum is 0, times 1/0)
               if (nx == 0) return sum * norm;
               for (std::size_t r = 0; r < ty.at.size(); ++r) {
                 const i64 y = ty.at[r];
                 // the row's first cell, the interior ones unweighted, the last one (as TensorFlow adds them)
                 float row = at(y, tx.at[0], c) * tx.w[0];
                 if (nx > 1) {
                   for (std::size_t k = 1; k + 1 < nx; ++k) row += at(y, tx.at[k], c);
                   row += at(y, tx.at[nx - 1], c) * tx.w[nx - 1];
                 }
                 sum += row * ty.w[r];
               }
               return sum * norm;
             });
           };
         }});

  // DepthToSpace / SpaceToDepth (block_size b): a copy of the view tf_rules::depth_space_view
  // gives (NHWC, or NCHW in ONNX's DCR order)
  auto depth_space = [](bool to_space) {
    return [to_space](const kernel_node& n) -> fn {
      const i64 b = n.attr<i64>("block_size");
      if (b < 2) n.fail("block_size must be at least 2, got " + std::to_string(b));
      const std::string fmt = n.attr<std::string>("data_format", "NHWC");
      if (fmt != "NHWC" && fmt != "NCHW") n.fail("data_format must be NHWC or NCHW, got '" + fmt + "'");
      return [to_space, b, nchw = fmt == "NCHW"](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        const auto v = tf_rules::depth_space_view(x.sizes(), b, nchw, to_space, ctx.node());
        array_detail::copy_view(ctx, x, v.out, v.view.sizes, v.view.strides, 0);
      };
    };
  };
  r.add({.domain = domain, .op = "DepthToSpace", .make = depth_space(true)});
  r.add({.domain = domain, .op = "SpaceToDepth", .make = depth_space(false)});

  // Roll(input, shift, axis): output[..., i_a, ...] = input[..., (i_a - shift_a) mod n_a, ...];
  // shifts of a repeated axis add up
  r.add({.domain = domain, .op = "Roll", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const auto shift = vector_ints(ctx.input(1), ctx.node(), "shift"), axis = vector_ints(ctx.input(2), ctx.node(), "axis");
             const auto& s = x.sizes();
             const std::size_t rank = s.size();
             const auto by = tf_rules::roll_shifts(s, shift, axis, ctx.input(1).sizes(), ctx.input(2).sizes(), ctx.node());
             if (rank == 0) return ctx.set_output(0, x.clone());
             gpass::tensor& y = ctx.allocate_output(0, x.element_type(), s);
             if (y.size() == 0) return;
             const auto st = strides_of(s);
             const i64 n = s[rank - 1], k = by[rank - 1], rows = x.size() / n;
             dispatch<all_types>(x.element_type(), ctx.node(), [&]<class T>() {
               const T* in = x.data<T>();
               T* out = y.data<T>();
               std::vector<i64> c(rank, 0);  // the output row's index (its last dim 0)
               for (i64 row = 0; row < rows; ++row) {
                 i64 src = 0;
                 for (std::size_t d = 0; d + 1 < rank; ++d) src += ((c[d] - by[d] + s[d]) % s[d]) * st[d];
                 // out[k..n) = in[0..n-k), out[0..k) = in[n-k..n)
                 std::copy_n(in + src, n - k, out + row * n + k);
                 std::copy_n(in + src + (n - k), k, out + row * n);
                 for (std::size_t d = rank - 1; d-- > 0;) {
                   if (++c[d] < s[d]) break;
                   c[d] = 0;
                 }
               }
             });
           };
         }});

  // DynamicStitch / ParallelDynamicStitch(indices_0..N-1, data_0..N-1): merged[indices_i[j...]]
  // = data_i[j..., :], later inputs over earlier ones, rows no index names 0
  auto stitch = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const std::size_t n = ctx.num_inputs() / 2;
      if (n == 0 || ctx.num_inputs() % 2 != 0) ctx.fail("needs N indices and N data inputs");
      std::vector<std::vector<i64>> idx(n), isz(n), dsz(n);
      std::vector<dtype> dts(n);
      for (std::size_t i = 0; i < n; ++i) {
        const gpass::tensor& ix = ctx.input(i);
        if (ix.element_type() != dtype::int32) ctx.fail("indices must be int32");
        idx[i] = int_values(ix, ctx.node(), "indices");
        tf_rules::check_stitch_indices(idx[i], i, ctx.node());
        isz[i] = ix.sizes();
        dsz[i] = ctx.input(n + i).sizes();
        dts[i] = ctx.input(n + i).element_type();
      }
      const gpass::tensor& d0 = ctx.input(n);
      const std::vector<i64> out = tf_rules::stitch_sizes(idx, isz, dsz, dts, ctx.node());
      const std::vector<i64> tail(out.begin() + 1, out.end());
      gpass::tensor& y = ctx.allocate_output_zeroed(0, d0.element_type(), out);
      const i64 slice = prod(tail, 0, tail.size());
      if (y.size() == 0) return;
      dispatch<all_types>(d0.element_type(), ctx.node(), [&]<class T>() {
        T* o = y.data<T>();
        for (std::size_t i = 0; i < n; ++i) {
          const T* src = ctx.input(n + i).data<T>();
          for (std::size_t j = 0; j < idx[i].size(); ++j)
            std::copy_n(src + static_cast<i64>(j) * slice, slice, o + idx[i][j] * slice);
        }
      });
    };
  };
  r.add({.domain = domain, .op = "DynamicStitch", .make = stitch});
  r.add({.domain = domain, .op = "ParallelDynamicStitch", .make = stitch});

  // DynamicPartition(data, partitions): output p stacks the slices data[j...] with
  // partitions[j...] == p, in row-major order
  r.add({.domain = domain, .op = "DynamicPartition", .make = [](const kernel_node& n) -> fn {
           const i64 parts = n.attr<i64>("num_partitions");
           if (parts < 1) n.fail("num_partitions must be at least 1, got " + std::to_string(parts));
           return [parts](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const gpass::tensor& p = ctx.input(1);
             if (p.element_type() != dtype::int32) ctx.fail("partitions must be int32");
             const auto pv = int_values(p, ctx.node(), "partitions");
             const auto plan = tf_rules::plan_partition(x.sizes(), p.sizes(), pv, parts, ctx.num_outputs(), ctx.node());
             const auto& count = plan.count;
             const auto& tail = plan.tail;
             const i64 slice = prod(tail, 0, tail.size());
             std::vector<gpass::tensor*> outs;
             for (i64 q = 0; q < parts; ++q) {
               std::vector<i64> sz{count[static_cast<std::size_t>(q)]};
               sz.insert(sz.end(), tail.begin(), tail.end());
               outs.push_back(&ctx.allocate_output(static_cast<std::size_t>(q), x.element_type(), sz));
             }
             dispatch<all_types>(x.element_type(), ctx.node(), [&]<class T>() {
               const T* src = x.data<T>();
               std::vector<i64> at(static_cast<std::size_t>(parts), 0);
               for (std::size_t j = 0; j < pv.size(); ++j) {
                 const auto q = static_cast<std::size_t>(pv[j]);
                 std::copy_n(src + static_cast<i64>(j) * slice, slice, outs[q]->data<T>() + at[q]++ * slice);
               }
             });
           };
         }});

  // SparseReshape(input_indices [N, R], input_shape [R], new_shape [R']): each index's
  // row-major position in input_shape unravelled in new_shape (one -1 inferred); TensorFlow's
  // checks and messages
  r.add({.domain = domain, .op = "SparseReshape", .type_input = -1, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& ix = ctx.input(0);
             if (ix.rank() != 2) ctx.fail("input_indices must be a matrix, got " + ix.shape().to_string());
             const auto in_shape = vector_ints(ctx.input(1), ctx.node(), "input_shape");
             const i64 N = ix.sizes()[0], R = ix.sizes()[1];
             const auto out_shape = tf_rules::sparse_reshape_shape(N, R, in_shape, vector_ints(ctx.input(2), ctx.node(), "new_shape"), ctx.node());
             const i64 R2 = static_cast<i64>(out_shape.size());
             write_ints(ctx, 1, dtype::int64, out_shape, {R2});
             gpass::tensor& y = ctx.allocate_output(0, dtype::int64, {N, R2});
             if (N == 0) return;
             const auto iv = int_values(ix, ctx.node(), "input_indices");
             i64* o = y.data<i64>();
             if (in_shape == out_shape) {
               std::copy(iv.begin(), iv.end(), o);
               return;
             }
             // (dense > 0: every stride is at most dense; the indices are not checked, as in
             // TensorFlow, so an index out of the shape wraps instead of overflowing)
             const auto ist = strides_of(in_shape), ost = strides_of(out_shape);
             for (i64 j = 0; j < N; ++j) {
               i64 at = 0;
               for (i64 d = 0; d < R; ++d) at = add_w(at, mul_w(iv[static_cast<std::size_t>(j * R + d)], ist[static_cast<std::size_t>(d)]));
               for (i64 d = 0; d < R2; ++d) {
                 o[j * R2 + d] = at / ost[static_cast<std::size_t>(d)];
                 at %= ost[static_cast<std::size_t>(d)];
               }
             }
           };
         }});
  // SparseFillEmptyRows(indices [N, R], values [N], dense_shape [R], default_value): the
  // entries grouped by row in row order (input order within a row), an entry [row, 0, ...] =
  // default_value for each row without one; empty_row_indicator; reverse_index_map (input
  // entry -> output position)
  r.add({.domain = domain, .op = "SparseFillEmptyRows", .type_input = 1, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& ix = ctx.input(0);
             const gpass::tensor& vals = ctx.input(1);
             const gpass::tensor& def = ctx.input(3);
             const auto dshape = vector_ints(ctx.input(2), ctx.node(), "dense_shape");
             const i64 rows = tf_rules::sparse_fill_rows(ix.sizes(), vals.sizes(), vals.element_type(), def.sizes(), def.element_type(), dshape, ctx.node());
             const i64 N = ix.sizes()[0], R = ix.sizes()[1];
             const auto iv = int_values(ix, ctx.node(), "indices");
             // rows is a value: the output of one entry per row comes first, under the limits (as in
             // TensorFlow), then the per-row scratch
             gpass::tensor& empty = ctx.allocate_output(2, dtype::bool_, {rows});
             check_scratch(ctx, static_cast<double>(rows) * 2 * sizeof(i64), "the row table");
             const tf_rules::sparse_fill_plan plan = tf_rules::plan_sparse_fill(iv, N, R, rows, ctx.node());
             std::copy(plan.empty.begin(), plan.empty.end(), empty.data<bool>());
             gpass::tensor& oi = ctx.allocate_output_zeroed(0, dtype::int64, {plan.total, R});
             gpass::tensor& rev = ctx.allocate_output(3, dtype::int64, {N});
             for (i64 j = 0; j < N; ++j) {
               const i64 at = plan.place[static_cast<std::size_t>(j)];
               std::copy_n(iv.begin() + j * R, R, oi.data<i64>() + at * R);
               rev.data<i64>()[j] = at;
             }
             for (std::size_t e = 0; e < plan.empty_rows.size(); ++e) oi.data<i64>()[plan.empty_at[e] * R] = plan.empty_rows[e];
             gpass::tensor& ov = ctx.allocate_output(1, vals.element_type(), {plan.total});
             dispatch<all_types>(vals.element_type(), ctx.node(), [&]<class T>() {
               T* o = ov.data<T>();
               std::fill(o, o + plan.total, def.data<T>()[0]);
               for (i64 j = 0; j < N; ++j) o[plan.place[static_cast<std::size_t>(j)]] = vals.data<T>()[j];
             });
           };
         }});
  // CTCGreedyDecoder(inputs [max_time, batch, classes], sequence_length [batch]): per batch
  // entry the class of the (first) largest score of each of its time steps, blanks dropped
  // and, with merge_repeated, repeats merged; log_probability = -(the sum of those scores)
  r.add({.domain = domain, .op = "CTCGreedyDecoder", .dtypes = {dtype::f32, dtype::f64}, .make = [](const kernel_node& n) -> fn {
           const bool merge = flag(n, "merge_repeated", false);
           const i64 blank_attr = n.attr<i64>("blank_index", -1);
           return [merge, blank_attr](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const auto len = vector_ints(ctx.input(1), ctx.node(), "sequence_length");
             i64 blank = 0;
             const auto sizes = tf_ctc_rules::check_greedy(x.sizes(), len, blank_attr, blank, ctx.node());
             const i64 B = sizes.B, C = sizes.C;
             std::vector<std::vector<i64>> seqs(static_cast<std::size_t>(B));
             gpass::tensor& lp = ctx.allocate_output(3, x.element_type(), {B, 1});
             dispatch<type_list<float, double>>(x.element_type(), ctx.node(), [&]<class S>() {
               const S* p = x.data<S>();
               for (i64 b = 0; b < B; ++b) {
                 S score = 0;
                 i64 prev = -1;
                 auto& seq = seqs[static_cast<std::size_t>(b)];
                 for (i64 t = 0; t < len[static_cast<std::size_t>(b)]; ++t) {
                   const S* row = p + (t * B + b) * C;
                   i64 best = 0;
                   for (i64 c = 1; c < C; ++c)
                     if (row[c] > row[best]) best = c;
                   score += -row[best];
                   if (best != blank && !(merge && best == prev)) seq.push_back(best);
                   prev = best;
                 }
                 lp.data<S>()[b] = score;
               }
             });
             i64 total = 0, longest = 0;
             for (const auto& s : seqs) total += static_cast<i64>(s.size()), longest = std::max<i64>(longest, static_cast<i64>(s.size()));
             gpass::tensor& oi = ctx.allocate_output(0, dtype::int64, {total, 2});
             gpass::tensor& ov = ctx.allocate_output(1, dtype::int64, {total});
             i64 k = 0;
             for (i64 b = 0; b < B; ++b)
               for (std::size_t i = 0; i < seqs[static_cast<std::size_t>(b)].size(); ++i, ++k) {
                 oi.data<i64>()[2 * k] = b;
                 oi.data<i64>()[2 * k + 1] = static_cast<i64>(i);
                 ov.data<i64>()[k] = seqs[static_cast<std::size_t>(b)][i];
               }
             write_ints(ctx, 2, dtype::int64, {B, longest}, {2});
           };
         }});

  // SparseToDense(indices [N, R] / [N] / scalar, output_shape [R], values [N] / scalar,
  // default_value): default_value everywhere but at the indices; validate_indices: the indices
  // strictly increasing (row-major), else later ones win
  r.add({.domain = domain, .op = "SparseToDense", .type_input = 2, .make = [](const kernel_node& n) -> fn {
           const bool validate = flag(n, "validate_indices", true);
           return [validate](context& ctx) {
             const gpass::tensor& ix = ctx.input(0);
             const gpass::tensor& vals = ctx.input(2);
             const gpass::tensor& def = ctx.input(3);
             const auto shape_v = vector_ints(ctx.input(1), ctx.node(), "output_shape");
             const std::vector<i64> flat =
                 tf_rules::sparse_to_dense_offsets(ix.sizes(), int_values(ix, ctx.node(), "sparse_indices"), shape_v, vals.sizes(), def.sizes(),
                                                   vals.element_type() == def.element_type(), validate, ctx.node());
             const i64 num = static_cast<i64>(flat.size());
             gpass::tensor& y = ctx.allocate_output(0, vals.element_type(), shape_v);
             dispatch<all_types>(vals.element_type(), ctx.node(), [&]<class T>() {
               T* o = y.data<T>();
               std::fill(o, o + y.size(), def.data<T>()[0]);
               const T* v = vals.data<T>();
               for (i64 j = 0; j < num; ++j) o[flat[static_cast<std::size_t>(j)]] = v[vals.rank() == 0 ? 0 : j];
             });
           };
         }});

  // SparseSegment{Sum,Mean,SqrtN}[WithNumSegments](data, indices, segment_ids[, num_segments]):
  // output[segment_ids[i]] accumulates data[indices[i]]; ids sorted; Mean divides by the
  // segment's count, SqrtN by its square root; empty segments 0
  auto sparse_segment = [](int kind, bool with_num) {  // kind: 0 sum, 1 mean, 2 sqrt n
    return [kind, with_num](const kernel_node&) -> fn {
      return [kind, with_num](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        const gpass::tensor& ix = ctx.input(1);
        const gpass::tensor& ids = ctx.input(2);
        tf_rules::check_sparse_segment_shapes(x.sizes(), ix.sizes(), ids.sizes(), ctx.node());
        const auto iv = int_values(ix, ctx.node(), "indices"), sv = int_values(ids, ctx.node(), "segment_ids");
        std::optional<i64> num;
        if (with_num) num = scalar_int(ctx.input(3), ctx.node(), "num_segments");
        const i64 segments = tf_rules::sparse_segment_count(x.sizes()[0], iv, sv, num, ctx.node());
        std::vector<i64> out = x.sizes();
        out[0] = segments;
        const i64 slice = prod(x.sizes(), 1, x.rank());
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), out);
        dispatch<float_types>(x.element_type(), ctx.node(), [&]<class T>() {
          using C = compute_t<T>;
          const T* src = x.data<T>();
          T* o = y.data<T>();
          std::fill(o, o + y.size(), static_cast<T>(C(0)));
          std::vector<C> acc(static_cast<std::size_t>(slice));
          for (std::size_t i = 0; i < sv.size();) {
            std::size_t e = i;
            std::fill(acc.begin(), acc.end(), C(0));
            for (; e < sv.size() && sv[e] == sv[i]; ++e)
              for (i64 k = 0; k < slice; ++k) acc[static_cast<std::size_t>(k)] += static_cast<C>(src[iv[e] * slice + k]);
            const C count = static_cast<C>(e - i);
            const C div = kind == 1 ? count : kind == 2 ? static_cast<C>(std::sqrt(count)) : C(1);
            for (i64 k = 0; k < slice; ++k) o[sv[i] * slice + k] = static_cast<T>(acc[static_cast<std::size_t>(k)] / div);
            i = e;
          }
        });
      };
    };
  };
  for (const auto& [name, kind] : {std::pair{"SparseSegmentSum", 0}, std::pair{"SparseSegmentMean", 1}, std::pair{"SparseSegmentSqrtN", 2}}) {
    r.add({.domain = domain, .op = name, .make = sparse_segment(kind, false)});
    r.add({.domain = domain, .op = std::string(name) + "WithNumSegments", .make = sparse_segment(kind, true)});
  }

  // ---- small ones: L2Loss, BroadcastArgs, MatrixBandPart, InTopKV2 ----
  r.add({.domain = domain, .op = "L2Loss", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             dispatch<float_types>(x.element_type(), ctx.node(), [&]<class T>() {
               using C = compute_t<T>;
               C sum = 0;
               for (i64 i = 0; i < x.size(); ++i) {
                 const C v = static_cast<C>(x.data<T>()[i]);
                 sum += v * v;
               }
               ctx.allocate_output(0, x.element_type(), {}).template data<T>()[0] = static_cast<T>(sum / C(2));
             });
           };
         }});
  r.add({.domain = domain, .op = "BroadcastArgs", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const auto a = vector_ints(ctx.input(0), ctx.node(), "s0"), b = vector_ints(ctx.input(1), ctx.node(), "s1");
             const auto out = tf_rules::broadcast_args(a, b, ctx.node());
             write_ints(ctx, 0, ctx.input(0).element_type(), out, {static_cast<i64>(out.size())});
           };
         }});
  r.add({.domain = domain, .op = "MatrixBandPart", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             if (x.rank() < 2) ctx.fail("input must have rank >= 2, got " + x.shape().to_string());
             const i64 lower = scalar_int(ctx.input(1), ctx.node(), "num_lower"), upper = scalar_int(ctx.input(2), ctx.node(), "num_upper");
             const i64 m = x.sizes()[x.rank() - 2], k = x.sizes()[x.rank() - 1];
             if (lower > m) ctx.fail("num_lower must be at most the number of rows, got " + std::to_string(lower));
             if (upper > k) ctx.fail("num_upper must be at most the number of columns, got " + std::to_string(upper));
             gpass::tensor out = x.clone();
             dispatch<all_types>(x.element_type(), ctx.node(), [&]<class T>() {
               T* o = out.data<T>();
               for (i64 base = 0; base < x.size(); base += m * k)
                 for (i64 i = 0; i < m; ++i)
                   for (i64 j = 0; j < k; ++j)
                     if ((lower >= 0 && i - j > lower) || (upper >= 0 && j - i > upper)) o[base + i * k + j] = T{};
             });
             ctx.set_output(0, std::move(out));
           };
         }});
  r.add({.domain = domain, .op = "InTopKV2", .type_input = -1, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& p = ctx.input(0);
             if (p.rank() != 2 || p.element_type() != dtype::f32) ctx.fail("predictions must be a 2-D f32 tensor");
             const auto t = vector_ints(ctx.input(1), ctx.node(), "targets");
             const i64 k = scalar_int(ctx.input(2), ctx.node(), "k"), rows = p.sizes()[0], cols = p.sizes()[1];
             if (static_cast<i64>(t.size()) != rows) ctx.fail("targets must have one entry per row of predictions");
             gpass::tensor& out = ctx.allocate_output(0, dtype::bool_, {rows});
             for (i64 r = 0; r < rows; ++r) {
               const i64 c = t[static_cast<std::size_t>(r)];
               bool in = false;
               if (c >= 0 && c < cols && std::isfinite(p.data<float>()[r * cols + c])) {
                 const float v = p.data<float>()[r * cols + c];
                 i64 more = 0;
                 for (i64 j = 0; j < cols; ++j) more += p.data<float>()[r * cols + j] > v;
                 in = more < k;
               }
               out.data<bool>()[r] = in;
             }
           };
         }});
}

}  // namespace gpass::exec::cpu_detail::tf_detail
