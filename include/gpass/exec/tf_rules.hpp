// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_rules.hpp
/// What the kernels of TensorFlow ops (domain "tf") share across policies: readers of node
/// attributes (bools, a TF `b` or an int64; type attributes T, DstT, output_type...; int lists,
/// an empty list of any kind counting as empty), each failing naming the node when the
/// attribute has another kind (`flag_in` reads a bool from an attribute map, for a kernel's
/// `applies`); int outputs (`fill_ints`); and TF's shape rules: axes, reduction indices,
/// BiasAdd's bias, Select's condition, Squeeze, Slice, StridedSlice, the Pad ops.

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec::tf_rules {

using i64 = std::int64_t;

/// Bool attribute `a` (a TF `b`; an int64 is accepted too), `fallback` when absent.
inline bool flag(const kernel_node& n, std::string_view a, bool fallback) {
  auto it = n.attrs.find(a);
  if (it == n.attrs.end()) return fallback;
  if (it->second.is<bool>()) return it->second.as<bool>();
  if (it->second.is<i64>()) return it->second.as<i64>() != 0;
  n.fail("attribute '" + std::string(a) + "' is a " + std::string(it->second.kind_name()) + ", expected a bool");
}

/// Type attribute `a` (T, dtype, DstT, out_type, Tidx, output_type...), `fallback` when absent.
inline dtype type_attr(const kernel_node& n, std::string_view a, dtype fallback) {
  auto it = n.attrs.find(a);
  if (it == n.attrs.end()) return fallback;
  if (it->second.is<dtype>()) return it->second.as<dtype>();
  n.fail("attribute '" + std::string(a) + "' is a " + std::string(it->second.kind_name()) + ", expected a type");
}

/// Int-list attribute `a` (an empty list of any kind counts as empty), `{}` when absent.
inline std::vector<i64> int_list(const kernel_node& n, std::string_view a) {
  auto it = n.attrs.find(a);
  if (it == n.attrs.end()) return {};
  const attribute& v = it->second;
  if (v.is<std::vector<i64>>()) return v.as<std::vector<i64>>();
  if (v.is<i64>()) return {v.as<i64>()};
  bool empty = false;
  std::visit(
      [&](const auto& x) {
        if constexpr (requires { x.empty(); typename std::decay_t<decltype(x)>::value_type; }) empty = x.empty();
      },
      v.value());
  if (empty) return {};
  n.fail("attribute '" + std::string(a) + "' is a " + std::string(v.kind_name()) + ", expected a list of ints");
}

/// Bool attribute `a` of `m` (bool or int64), `fallback` when absent or of another kind.
inline bool flag_in(const attribute_map& m, std::string_view a, bool fallback) {
  auto it = m.find(a);
  if (it == m.end()) return fallback;
  if (it->second.is<bool>()) return it->second.as<bool>();
  if (it->second.is<i64>()) return it->second.as<i64>() != 0;
  return fallback;
}

/// `axis` in [-rank, rank) made non-negative (TF's message on error).
inline i64 tf_axis(i64 axis, i64 rank, const kernel_node& n, const char* what = "axis") {
  if (axis < -rank || axis >= rank)
    n.fail(std::string(what) + " " + std::to_string(axis) + " is out of range [" + std::to_string(-rank) + ", " +
           std::to_string(rank) + ")");
  return axis < 0 ? axis + rank : axis;
}

/// The sizes TF's Squeeze leaves of `sizes`: without `dims` every size-1 dimension goes, else
/// the dimensions `dims` names, each of which must have size 1.
inline std::vector<i64> squeeze_sizes(const std::vector<i64>& sizes, const std::vector<i64>& dims, const kernel_node& n) {
  const i64 rank = static_cast<i64>(sizes.size());
  std::vector<char> drop(sizes.size(), 0);
  for (i64 a : dims) {
    const auto k = static_cast<std::size_t>(tf_axis(a, rank, n, "squeeze dimension"));
    if (sizes[k] != 1)
      n.fail("cannot squeeze dimension " + std::to_string(a) + " of size " + std::to_string(sizes[k]) + " (input " +
             shape::of(sizes).to_string() + ")");
    drop[k] = 1;
  }
  std::vector<i64> s;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (!(dims.empty() ? sizes[i] == 1 : drop[i] != 0)) s.push_back(sizes[i]);
  return s;
}

/// Checks that `t`, the type of an int output (TF's out_type), is int32 or int64.
inline void check_int_output(dtype t, const kernel_node& n) {
  if (t != dtype::int64 && t != dtype::int32) n.fail("output type must be int32 or int64, got " + std::string(to_string(t)));
}

/// Fills the int32 or int64 tensor `y` (`check_int_output`) with `v` (TF's Shape / Size /
/// Rank and the like); values outside int32 fail when `y` is int32.
inline void fill_ints(gpass::tensor& y, const std::vector<i64>& v, const kernel_node& n) {
  check_int_output(y.element_type(), n);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (y.element_type() == dtype::int64) {
      y.data<i64>()[i] = v[i];
    } else {
      if (v[i] > INT32_MAX || v[i] < INT32_MIN) n.fail("value " + std::to_string(v[i]) + " does not fit in int32");
      y.data<std::int32_t>()[i] = static_cast<std::int32_t>(v[i]);
    }
  }
}

/// The sorted, distinct axes TF's reduction indices `v` name in a tensor of rank `rank`
/// (negative from the end, repeats allowed; a scalar takes 0 and -1 and reduces nothing).
inline std::vector<i64> reduction_axes(const std::vector<i64>& v, i64 rank, const kernel_node& n) {
  std::vector<i64> axes;
  for (i64 a : v) {
    if (rank == 0 && (a == 0 || a == -1)) continue;
    const i64 d = tf_axis(a, rank, n, "reduction index");
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) axes.push_back(d);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

/// BiasAdd's bias of sizes `bs` as a view broadcastable to a value of sizes `xs` (channels
/// last, or dim 1 for NCHW): 1-D, of the channel dimension's size.
inline std::vector<i64> bias_sizes(const std::vector<i64>& xs, const std::vector<i64>& bs, bool nchw, const kernel_node& n) {
  if (bs.size() != 1) n.fail("bias must be 1-D, got sizes " + shape::of(bs).to_string());
  if (xs.size() < 2) n.fail("value must have rank >= 2, got sizes " + shape::of(xs).to_string());
  const std::size_t c = nchw ? 1 : xs.size() - 1;
  if (xs[c] != bs[0])
    n.fail("bias has " + std::to_string(bs[0]) + " elements, the channel dimension of " + shape::of(xs).to_string() + " has " +
           std::to_string(xs[c]));
  std::vector<i64> r(xs.size() - c, 1);
  r[0] = bs[0];
  return r;
}

/// The sizes Select (v1) reads its condition of sizes `c` as: t's sizes or a scalar as they
/// are, a vector of t's first dimension as [n, 1, ...]; `t` and `e` must have equal sizes.
inline std::vector<i64> select_condition_sizes(const std::vector<i64>& c, const std::vector<i64>& t, const std::vector<i64>& e,
                                               const kernel_node& n) {
  if (t != e) n.fail("t and e have different sizes " + shape::of(t).to_string() + " and " + shape::of(e).to_string());
  if (c == t || c.empty()) return c;
  if (c.size() == 1 && !t.empty() && c[0] == t[0]) {
    std::vector<i64> s(t.size(), 1);
    s[0] = c[0];
    return s;
  }
  n.fail("condition of sizes " + shape::of(c).to_string() + " must be a scalar, a vector of the first dimension or of the sizes of t " +
         shape::of(t).to_string());
}

/// The view TF's Slice takes of a tensor of `sizes`: begin[i] in [0, dim], size[i] -1 (to the
/// end) or with begin + size <= dim.
inline shape_rules::strided_view slice_view(const std::vector<i64>& sizes, const std::vector<i64>& begin, const std::vector<i64>& size,
                                            const kernel_node& n) {
  if (begin.size() != sizes.size() || size.size() != sizes.size())
    n.fail("begin and size must have one entry per dimension of " + shape::of(sizes).to_string());
  shape_rules::strided_view v{std::vector<i64>(sizes.size()), shape_rules::strides_of(sizes), 0};
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    const i64 dim = sizes[d];
    const i64 len = size[d] == -1 ? dim - begin[d] : size[d];
    if (begin[d] < 0 || len < 0 || begin[d] + len > dim)
      n.fail("expected begin[" + std::to_string(d) + "] = " + std::to_string(begin[d]) + " and size = " + std::to_string(size[d]) +
             " to fit dimension size " + std::to_string(dim));
    v.sizes[d] = len;
    v.offset += begin[d] * v.strides[d];
  }
  if (shape_rules::prod(v.sizes, 0, v.sizes.size()) == 0) v.offset = 0;
  return v;
}

/// What a StridedSlice does to an input of given sizes: the processing sizes, strides
/// (in elements, of the input), base offset, and the final sizes.
struct strided_slice_plan {
  std::vector<i64> sizes, strides, final_sizes;
  i64 offset = 0;
};

/// TF's StridedSlice semantics: the sparse spec (begin/end/strides with masks, one optional
/// ellipsis, new axes) expanded to one entry per input dimension (an absent ellipsis is
/// implied at the end), begin/end clamped like Python slices, shrink-axis entries taking
/// exactly one element.
inline strided_slice_plan plan_strided_slice(const std::vector<i64>& in, const std::vector<i64>& begin,
                                             const std::vector<i64>& end, const std::vector<i64>& strides, i64 begin_mask,
                                             i64 end_mask, i64 ellipsis_mask, i64 new_axis_mask, i64 shrink_mask,
                                             const kernel_node& n) {
  const std::size_t sparse = begin.size();
  if (end.size() != sparse || strides.size() != sparse)
    n.fail("begin, end and strides must have the same length, got " + std::to_string(begin.size()) + ", " +
           std::to_string(end.size()) + " and " + std::to_string(strides.size()));
  if (sparse > 62) n.fail("too many slice entries");
  auto bit = [](i64 m, std::size_t i) { return ((m >> i) & 1) != 0; };
  if (ellipsis_mask & (ellipsis_mask - 1)) n.fail("multiple ellipses in a slice spec are not allowed");
  // an implicit ellipsis at the end when there is none
  std::size_t sparse_dims = sparse;
  i64 ellipsis = ellipsis_mask;
  if (!ellipsis) {
    ellipsis = i64{1} << sparse;
    ++sparse_dims;
  }
  std::size_t new_after_ellipsis = 0;
  {
    bool seen = false;
    for (std::size_t i = 0; i < sparse; ++i) {
      if (seen && bit(new_axis_mask, i)) ++new_after_ellipsis;
      if (bit(ellipsis, i)) seen = true;
    }
  }
  const std::size_t dense = in.size();
  struct entry {
    i64 begin = 0, end = 0, stride = 1;
    bool begin_masked = false, end_masked = false, shrink = false;
  };
  std::vector<entry> dn(dense);
  constexpr i64 new_axis = -1, shrunk = -2;
  std::vector<i64> gather;  // final dims: a dense index, new_axis or shrunk
  std::size_t full = 0;
  for (std::size_t i = 0; i < sparse_dims; ++i) {
    if (bit(ellipsis, i)) {
      const i64 want = static_cast<i64>(dense + 1 + new_after_ellipsis) - static_cast<i64>(sparse_dims - i);
      const std::size_t next = static_cast<std::size_t>(std::clamp<i64>(want, static_cast<i64>(full), static_cast<i64>(dense)));
      for (; full < next; ++full) {
        dn[full] = entry{0, 0, 1, true, true, false};
        gather.push_back(static_cast<i64>(full));
      }
    } else if (bit(new_axis_mask, i)) {
      gather.push_back(new_axis);
    } else {
      if (full == dense) n.fail("index " + std::to_string(i) + " of the slice spec is out of range for rank " + std::to_string(dense));
      dn[full] = entry{begin[i], end[i], strides[i], bit(begin_mask, i), bit(end_mask, i), bit(shrink_mask, i)};
      gather.push_back(dn[full].shrink ? shrunk : static_cast<i64>(full));
      ++full;
    }
  }
  strided_slice_plan p;
  const auto st = shape_rules::strides_of(in);
  for (std::size_t d = 0; d < dense; ++d) {
    const entry& e = dn[d];
    const i64 dim = in[d];
    if (e.stride == 0) n.fail("strides[" + std::to_string(d) + "] must be non-zero");
    i64 b, en;
    if (e.shrink) {
      if (e.stride <= 0) n.fail("only stride 1 allowed on non-range indexing");
      const i64 fwd = e.begin < 0 ? dim + e.begin : e.begin;
      if (fwd < 0 || fwd >= dim)
        n.fail("slice index " + std::to_string(e.begin) + " of dimension " + std::to_string(d) + " out of bounds (size " +
               std::to_string(dim) + ")");
      b = fwd;
      en = fwd + 1;
    } else {
      const i64 lo = e.stride > 0 ? 0 : -1, hi = e.stride > 0 ? dim : dim - 1;
      auto canonical = [&](i64 x, bool masked, bool is_begin) {
        if (masked) return (e.stride > 0) == is_begin ? lo : hi;
        const i64 fwd = x < 0 ? dim + x : x;
        return std::clamp(fwd, lo, hi);
      };
      b = canonical(e.begin, e.begin_masked, true);
      en = canonical(e.end, e.end_masked, false);
    }
    const i64 interval = e.shrink ? 1 : en - b;
    i64 size = 0;
    if (interval != 0 && (interval < 0) == (e.stride < 0))
      size = interval / e.stride + (interval % e.stride != 0 ? 1 : 0);
    p.sizes.push_back(size);
    p.strides.push_back(st[d] * e.stride);
    if (size > 0) p.offset += b * st[d];
  }
  for (i64 g : gather) {
    if (g == shrunk) continue;
    p.final_sizes.push_back(g == new_axis ? 1 : p.sizes[static_cast<std::size_t>(g)]);
  }
  if (shape_rules::prod(p.sizes, 0, p.sizes.size()) == 0) p.offset = 0;
  return p;
}

/// The (begin, end) padding per dimension of TF's Pad / PadV2 / MirrorPad from `paddings` of
/// sizes `psizes` (must be [rank, 2]) and `values`: non-negative, and less than the dimension
/// for a REFLECT mirror (`reflect`).
inline std::pair<std::vector<i64>, std::vector<i64>> paddings(const std::vector<i64>& sizes, const std::vector<i64>& psizes,
                                                              const std::vector<i64>& values, bool reflect, const kernel_node& n) {
  const std::size_t rank = sizes.size();
  if (psizes.size() != 2 || psizes[0] != static_cast<i64>(rank) || psizes[1] != 2)
    n.fail("paddings must have sizes [" + std::to_string(rank) + ", 2], got " + shape::of(psizes).to_string());
  std::vector<i64> begin(rank), end(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    begin[d] = values[2 * d];
    end[d] = values[2 * d + 1];
    if (begin[d] < 0 || end[d] < 0) n.fail("paddings must be non-negative");
    if (reflect && (begin[d] >= sizes[d] || end[d] >= sizes[d]))
      n.fail("REFLECT paddings must be less than the dimension size " + std::to_string(sizes[d]));
  }
  return {std::move(begin), std::move(end)};
}

}  // namespace gpass::exec::tf_rules
