// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_rules.hpp
/// What the kernels of TensorFlow ops (domain "tf") share across policies: readers of node
/// attributes (bools, a TF `b` or an int64; type attributes T, DstT, output_type...; int lists,
/// an empty list of any kind counting as empty), each failing naming the node when the
/// attribute has another kind (`flag_in` reads a bool from an attribute map, for a kernel's
/// `applies`); int outputs (`fill_ints`); and TF's shape rules: axes, reduction indices,
/// BiasAdd's bias, Select's condition, Squeeze, Slice, StridedSlice, the Pad ops, Split,
/// SplitV, Unpack, ReverseV2, EnsureShape, and the
/// window of the convolutions and pools (`window`, `geometry`: strides, dilations, ksize,
/// SAME / VALID / EXPLICIT padding).

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/checked.hpp>
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
  // only the spec's entries have mask bits (as in TF and in inference: bits past them are
  // ignored; one counted as an ellipsis left the input's dims past the spec unsliced and the
  // output unwritten)
  const auto spec_bits = (std::uint64_t{1} << sparse) - 1;
  const auto ellipsis_bits = static_cast<std::uint64_t>(ellipsis_mask) & spec_bits;
  if (ellipsis_bits & (ellipsis_bits - 1)) n.fail("multiple ellipses in a slice spec are not allowed");
  // an implicit ellipsis at the end when there is none
  std::size_t sparse_dims = sparse;
  i64 ellipsis = static_cast<i64>(ellipsis_bits);
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

/// Split's parts: `k` equal parts of dimension `axis` (size `dim`); `num` is the num_split
/// attribute (-1 when absent), which must be `k`.
inline std::vector<i64> split_equal_sizes(i64 dim, std::size_t axis, i64 k, i64 num, const kernel_node& n) {
  if (num >= 0 && num != k) n.fail("num_split is " + std::to_string(num) + ", the node has " + std::to_string(k) + " outputs");
  if (k == 0 || dim % k != 0)
    n.fail("dimension " + std::to_string(axis) + " of size " + std::to_string(dim) + " cannot be split into " + std::to_string(k) +
           " equal parts");
  return std::vector<i64>(static_cast<std::size_t>(k), dim / k);
}

/// SplitV's parts: `sizes` (size_splits, one -1 inferred) of dimension `axis` of size `dim`.
inline std::vector<i64> split_v_sizes(std::vector<i64> sizes, i64 dim, std::size_t axis, const kernel_node& n) {
  i64 known = 0;
  int infer = -1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (infer >= 0) n.fail("size_splits has more than one -1");
      infer = static_cast<int>(i);
    } else if (sizes[i] < 0) {
      n.fail("size_splits has a negative entry " + std::to_string(sizes[i]));
    } else {
      known += sizes[i];
    }
  }
  if (infer >= 0) {
    if (known > dim) n.fail("size_splits sum to more than the dimension size " + std::to_string(dim));
    sizes[static_cast<std::size_t>(infer)] = dim - known;
  } else if (known != dim) {
    n.fail("size_splits sum to " + std::to_string(known) + ", dimension " + std::to_string(axis) + " has size " + std::to_string(dim));
  }
  return sizes;
}

/// Unpack's axis of an input of `sizes` (attribute `axis_attr`, `num` -1 when absent) into
/// `outputs` outputs, one per index of that axis.
inline std::size_t unpack_axis(const std::vector<i64>& sizes, i64 axis_attr, i64 num, std::size_t outputs, const kernel_node& n) {
  const i64 rank = static_cast<i64>(sizes.size());
  if (rank == 0) n.fail("cannot unpack a scalar");
  const auto axis = static_cast<std::size_t>(tf_axis(axis_attr, rank, n));
  const i64 dim = sizes[axis];
  if ((num >= 0 && num != dim) || static_cast<i64>(outputs) != dim)
    n.fail("dimension " + std::to_string(axis) + " has size " + std::to_string(dim) + ", the node unpacks " + std::to_string(outputs));
  return axis;
}

/// ReverseV2's view of an input of `sizes`: the axes (negative from the end, none repeated)
/// walked backwards.
inline shape_rules::strided_view reverse_view(const std::vector<i64>& sizes, const std::vector<i64>& axes, const kernel_node& n) {
  const i64 rank = static_cast<i64>(sizes.size());
  shape_rules::strided_view v{sizes, shape_rules::strides_of(sizes), 0};
  std::vector<char> rev(sizes.size(), 0);
  for (i64 a : axes) {
    const auto k = static_cast<std::size_t>(tf_axis(a, rank, n));
    if (rev[k]) n.fail("axis " + std::to_string(a) + " is repeated");
    rev[k] = 1;
  }
  i64 count = 1;
  for (i64 s : sizes) count *= s;
  for (std::size_t d = 0; d < sizes.size(); ++d)
    if (rev[d] && sizes[d] > 0) {
      v.offset += (sizes[d] - 1) * v.strides[d];
      v.strides[d] = -v.strides[d];
    }
  if (count == 0) v.offset = 0;
  return v;
}

/// DepthToSpace (`to_space`) / SpaceToDepth with `block_size` b on a 4-D input of `sizes`:
/// NHWC moves b x b blocks between the depth and the height and width (depth index
/// (i * b + j) * C' + c for block row i, column j), NCHW does the same (ONNX's DCR order). The
/// output's sizes and the 6-D view of the input read in output order.
inline shape_rules::rearranged_view depth_space_view(const std::vector<i64>& sizes, i64 b, bool nchw, bool to_space, const kernel_node& n) {
  if (sizes.size() != 4) n.fail("input must be 4-D, got " + shape::of(sizes).to_string());
  if (nchw) return shape_rules::depth_space_view(sizes, b, false, to_space, n);
  auto mul = [&](i64 x, i64 y) {
    const auto r = checked_mul(x, y);
    if (!r) n.fail("block_size " + std::to_string(b) + " with input sizes " + shape::of(sizes).to_string() + " overflows int64");
    return *r;
  };
  const i64 N = sizes[0], H = sizes[1], W = sizes[2], C = sizes[3], bb = mul(b, b);
  if (to_space) {
    if (C % bb != 0) n.fail("depth " + std::to_string(C) + " is not a multiple of block_size^2 = " + std::to_string(bb));
    const i64 oc = C / bb;
    // x as [N, H, W, b(i), b(j), C'] read in the order [N, H, i, W, j, C']
    return {{N, mul(H, b), mul(W, b), oc}, {{N, H, b, W, b, oc}, {H * W * C, W * C, b * oc, C, oc, 1}, 0}};
  }
  if (H % b != 0 || W % b != 0)
    n.fail("height " + std::to_string(H) + " and width " + std::to_string(W) + " must be multiples of block_size " + std::to_string(b));
  const i64 oh = H / b, ow = W / b;
  // output [N, H', W', b(i), b(j), C] from x[n, h * b + i, w * b + j, c]
  return {{N, oh, ow, mul(bb, C)}, {{N, oh, ow, b, b, C}, {H * W * C, b * W * C, b * C, W * C, C, 1}, 0}};
}

/// SpaceToBatchND (`to_batch`) / BatchToSpaceND of an input of `sizes` with `block` (M block
/// sizes) and `pc` (the paddings or crops, [M, 2] flat): blocks of the M spatial dims after the
/// batch move into the batch dim (output batch index = block offset * N + n, block offsets
/// row-major), zero-padded first; the inverse interleaves them back and crops. `big` and
/// `small` are the spatial sizes of the (padded) space side and of the batch side.
struct space_batch_plan {
  std::vector<i64> out, big, small;
  i64 blocks = 1, batch = 0;  // the product of the block sizes; N, the batch of the space side
};
inline space_batch_plan plan_space_batch(const std::vector<i64>& sizes, const std::vector<i64>& block, const std::vector<i64>& pc_sizes,
                                         const std::vector<i64>& pv, bool to_batch, const kernel_node& n) {
  const std::size_t m = block.size();
  const char* what = to_batch ? "paddings" : "crops";
  if (pc_sizes.size() != 2 || pc_sizes[0] != static_cast<i64>(m) || pc_sizes[1] != 2)
    n.fail(std::string(what) + " must have sizes [" + std::to_string(m) + ", 2], got " + shape::of(pc_sizes).to_string());
  if (m == 0 || sizes.size() < m + 1)
    n.fail("input of sizes " + shape::of(sizes).to_string() + " needs a batch dim and " + std::to_string(m) + " spatial dims");
  auto ok = [&](std::optional<i64> v) {
    if (!v) n.fail("block_shape and " + std::string(what) + " with input sizes " + shape::of(sizes).to_string() + " overflows int64");
    return *v;
  };
  space_batch_plan p;
  for (auto b : block) {
    if (b < 1) n.fail("block_shape values must be positive");
    p.blocks = ok(checked_mul(p.blocks, b));
  }
  for (auto v : pv)
    if (v < 0) n.fail(std::string(what) + " must be non-negative");
  p.out = sizes;
  p.big.resize(m);
  p.small.resize(m);
  if (to_batch) {
    p.batch = sizes[0];
    p.out[0] = ok(checked_mul(sizes[0], p.blocks));
    for (std::size_t i = 0; i < m; ++i) {
      p.big[i] = ok(checked_add(ok(checked_add(sizes[i + 1], pv[2 * i])), pv[2 * i + 1]));
      if (p.big[i] % block[i] != 0)
        n.fail("padded spatial dim " + std::to_string(i + 1) + " (" + std::to_string(p.big[i]) + ") is not a multiple of the block size " +
               std::to_string(block[i]));
      p.small[i] = p.out[i + 1] = p.big[i] / block[i];
    }
  } else {
    if (sizes[0] % p.blocks != 0)
      n.fail("batch " + std::to_string(sizes[0]) + " is not a multiple of the block count " + std::to_string(p.blocks));
    p.batch = p.out[0] = sizes[0] / p.blocks;
    for (std::size_t i = 0; i < m; ++i) {
      p.small[i] = sizes[i + 1];
      p.big[i] = ok(checked_mul(p.small[i], block[i]));
      const auto left = checked_sub(p.big[i], pv[2 * i]);  // (crops near INT64_MAX wrapped past the check)
      const auto out = left ? checked_sub(*left, pv[2 * i + 1]) : std::nullopt;
      if (!out || *out < 0) n.fail("crops are larger than spatial dim " + std::to_string(i + 1));
      p.out[i + 1] = *out;
    }
  }
  return p;
}

/// Roll: the shift (in [0, n)) of each axis of an input of `sizes`; shifts of a repeated axis
/// add up.
inline std::vector<i64> roll_shifts(const std::vector<i64>& sizes, const std::vector<i64>& shift, const std::vector<i64>& axis,
                                    const std::vector<i64>& shift_sizes, const std::vector<i64>& axis_sizes, const kernel_node& n) {
  if (shift.size() != axis.size() || shift_sizes.size() != axis_sizes.size())
    n.fail("shift and axis must have the same shape, got " + shape::of(shift_sizes).to_string() + " and " + shape::of(axis_sizes).to_string());
  std::vector<i64> by(sizes.size(), 0);
  for (std::size_t k = 0; k < axis.size(); ++k) {
    const auto a = static_cast<std::size_t>(tf_axis(axis[k], static_cast<i64>(sizes.size()), n));
    if (sizes[a] > 0) by[a] = ((by[a] + shift[k] % sizes[a]) % sizes[a] + sizes[a]) % sizes[a];
  }
  return by;
}

/// SparseReshape's output shape for `N` entries of rank `R` in `in_shape`: `out_shape` with
/// its one -1 inferred, holding as many dense values; TensorFlow's checks and messages.
inline std::vector<i64> sparse_reshape_shape(i64 N, i64 R, const std::vector<i64>& in_shape, std::vector<i64> out_shape,
                                             const kernel_node& n) {
  const i64 R2 = static_cast<i64>(out_shape.size());
  if (R != static_cast<i64>(in_shape.size()))
    n.fail("input SparseTensor rank " + std::to_string(R) + " must match input_shape length " + std::to_string(in_shape.size()));
  i64 dense = 1;
  for (i64 d : in_shape) {
    const auto m = checked_mul(dense, d);
    if (d < 0 || !m) n.fail("input_shape " + shape::of(in_shape).to_string() + " is invalid");
    dense = *m;
  }
  i64 product = 1, unknown = -1;
  for (i64 d = 0; d < R2; ++d) {
    const i64 v = out_shape[static_cast<std::size_t>(d)];
    if (v == -1) {
      if (unknown != -1) n.fail("only one output dimension may be -1, not both " + std::to_string(unknown) + " and " + std::to_string(d));
      unknown = d;
    } else {
      const auto m = checked_mul(product, v);
      if (v < 0 || !m) n.fail("size " + std::to_string(d) + " must be non-negative, not " + std::to_string(v));
      product = *m;
    }
  }
  if (unknown != -1) {
    if (product <= 0) n.fail("reshape cannot infer the missing input size for an empty tensor unless all specified input sizes are non-zero");
    if (dense % product != 0)
      n.fail("input to reshape is a SparseTensor with " + std::to_string(dense) + " dense values, but the requested shape requires a multiple of " +
             std::to_string(product));
    out_shape[static_cast<std::size_t>(unknown)] = dense / product;
    product = dense;
  }
  if (product != dense)
    n.fail("input to reshape is a tensor with " + std::to_string(dense) + " dense values, but the requested shape has " + std::to_string(product));
  // (as TensorFlow; an empty shape would make a stride 0, a division by zero)
  if (N > 0 && dense == 0)
    n.fail("Input tensor has " + std::to_string(N) + " non zero elements but input shape (" + shape::of(in_shape).to_string() +
           ") or output shape (" + shape::of(out_shape).to_string() + ") is empty");
  return out_shape;
}

/// Checks SparseFillEmptyRows' inputs (indices [N, R], values [N], dense_shape of R values,
/// default_value a scalar of the values' type) and returns the number of rows, dense_shape[0].
inline i64 sparse_fill_rows(const std::vector<i64>& ix, const std::vector<i64>& vals, dtype vals_type, const std::vector<i64>& def, dtype def_type,
                            const std::vector<i64>& dshape, const kernel_node& n) {
  if (ix.size() != 2) n.fail("indices must be a matrix, got " + shape::of(ix).to_string());
  const i64 N = ix[0], R = ix[1];
  if (vals.size() != 1 || vals[0] != N) n.fail("values must be a vector of " + std::to_string(N) + ", got " + shape::of(vals).to_string());
  if (!def.empty()) n.fail("default_value must be a scalar, got " + shape::of(def).to_string());
  if (def_type != vals_type) n.fail("values and default_value have different types");
  if (static_cast<i64>(dshape.size()) != R) n.fail("dense_shape has " + std::to_string(dshape.size()) + " dims, the indices " + std::to_string(R));
  if (R == 0) n.fail("dense_shape must not be empty");
  const i64 rows = dshape[0];
  if (rows < 0) n.fail("dense_shape[0] must be non-negative, got " + std::to_string(rows));
  if (rows == 0 && N > 0) n.fail("received SparseTensor with dense_shape[0] = 0 but indices.shape[0] = " + std::to_string(N));
  return rows;
}

/// Where SparseFillEmptyRows puts each entry: the entries grouped by row in row order (input
/// order within a row), one entry [row, 0, ...] for each row without one.
struct sparse_fill_plan {
  std::vector<i64> place;               ///< each input entry's output position
  std::vector<std::uint8_t> empty;      ///< per row: whether it had no entry (the bool output)
  std::vector<i64> empty_rows, empty_at;  ///< the rows without an entry and their output positions
  i64 total = 0;                        ///< output entries
};
/// The plan of `N` entries of rank `R` (their indices `iv`, row-major) in `rows` rows (its
/// per-row scratch checked by the caller); an entry whose row is outside [0, rows) fails.
inline sparse_fill_plan plan_sparse_fill(const std::vector<i64>& iv, i64 N, i64 R, i64 rows, const kernel_node& n) {
  sparse_fill_plan p;
  std::vector<i64> start(static_cast<std::size_t>(rows), 0), filled(static_cast<std::size_t>(rows), 0);
  for (i64 j = 0; j < N; ++j) {
    const i64 row = iv[static_cast<std::size_t>(j * R)];
    if (row < 0 || row >= rows) n.fail("indices(" + std::to_string(j) + ", 0) is invalid: " + std::to_string(row) + " >= " + std::to_string(rows));
    ++start[static_cast<std::size_t>(row)];
  }
  p.empty.resize(static_cast<std::size_t>(rows));
  for (i64 row = 0; row < rows; ++row) {  // counts -> first output position of each row
    const auto r = static_cast<std::size_t>(row);
    const i64 c = start[r];
    p.empty[r] = c == 0;
    if (c == 0) {
      p.empty_rows.push_back(row);
      p.empty_at.push_back(p.total);
    }
    start[r] = p.total;
    p.total += c == 0 ? 1 : c;
  }
  p.place.resize(static_cast<std::size_t>(N));
  for (i64 j = 0; j < N; ++j) {
    const auto row = static_cast<std::size_t>(iv[static_cast<std::size_t>(j * R)]);
    p.place[static_cast<std::size_t>(j)] = start[row] + filled[row]++;
  }
  return p;
}

/// InvertPermutation: the inverse of the permutation `p` of [0, n).
inline std::vector<i64> invert_permutation(const std::vector<i64>& p, const kernel_node& n) {
  std::vector<i64> inv(p.size(), -1);
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] < 0 || p[i] >= static_cast<i64>(p.size()) || inv[static_cast<std::size_t>(p[i])] >= 0)
      n.fail("x is not a permutation of [0, " + std::to_string(p.size()) + ")");
    inv[static_cast<std::size_t>(p[i])] = static_cast<i64>(i);
  }
  return inv;
}

/// BroadcastArgs: the shape `a` and `b` broadcast to (numpy's rule).
inline std::vector<i64> broadcast_args(const std::vector<i64>& a, const std::vector<i64>& b, const kernel_node& n) {
  std::vector<i64> out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const i64 x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) n.fail("incompatible shapes " + shape::of(a).to_string() + " and " + shape::of(b).to_string());
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

/// Range: TensorFlow's checks of start, limit and delta (of any one numeric type).
template <class T>
inline void check_range(T start, T limit, T delta, const kernel_node& n) {
  if (delta == T(0)) n.fail("requires delta != 0");
  if (delta > T(0) && start > limit) n.fail("requires start <= limit when delta > 0");
  if (delta < T(0) && start < limit) n.fail("requires start >= limit when delta < 0");
}

/// DynamicStitch / ParallelDynamicStitch: the merged sizes ([the largest index + 1] + the
/// data's trailing sizes) of index inputs holding `idx` (their values) of `index_sizes`, and data
/// inputs of `data_sizes` and `data_types`; TensorFlow's checks (no negative index; each data
/// input's shape is its indices' shape + one common tail; one element type).
/// (`check_stitch_indices` checks each index input as it is read, as TensorFlow does.)
inline void check_stitch_indices(const std::vector<i64>& idx, std::size_t i, const kernel_node& n) {
  for (i64 v : idx)
    if (v < 0) n.fail("indices[" + std::to_string(i) + "] holds " + std::to_string(v) + ", a negative index");
}
inline std::vector<i64> stitch_sizes(const std::vector<std::vector<i64>>& idx, const std::vector<std::vector<i64>>& index_sizes,
                                     const std::vector<std::vector<i64>>& data_sizes, const std::vector<dtype>& data_types,
                                     const kernel_node& n) {
  i64 rows = 0;
  for (std::size_t i = 0; i < idx.size(); ++i) {
    check_stitch_indices(idx[i], i, n);
    for (i64 v : idx[i]) rows = std::max(rows, v + 1);
  }
  const auto& d0 = data_sizes.at(0);
  const std::size_t r0 = index_sizes.at(0).size();
  if (d0.size() < r0) n.fail("data[0] has rank " + std::to_string(d0.size()) + ", less than indices[0]'s");
  const std::vector<i64> tail(d0.begin() + static_cast<std::ptrdiff_t>(r0), d0.end());
  for (std::size_t i = 0; i < idx.size(); ++i) {
    const auto& ix = index_sizes[i];
    const auto& d = data_sizes[i];
    if (data_types[i] != data_types[0]) n.fail("data inputs have different element types");
    const bool starts = d.size() >= ix.size() && std::equal(ix.begin(), ix.end(), d.begin());
    if (!starts || !std::equal(d.begin() + static_cast<std::ptrdiff_t>(ix.size()), d.end(), tail.begin(), tail.end()))
      n.fail("data[" + std::to_string(i) + "].shape = " + shape::of(d).to_string() + " is not indices[" + std::to_string(i) + "].shape " +
             shape::of(ix).to_string() + " + " + shape::of(tail).to_string());
  }
  std::vector<i64> out{rows};
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

/// DynamicPartition(data of `data_sizes`, partitions `pv` of `p_sizes`) into `parts` outputs
/// (the node has `outputs`): each partition's row count, and the trailing sizes of a row.
struct partition_plan {
  std::vector<i64> count, tail;
};
inline partition_plan plan_partition(const std::vector<i64>& data_sizes, const std::vector<i64>& p_sizes, const std::vector<i64>& pv, i64 parts,
                                     std::size_t outputs, const kernel_node& n) {
  if (data_sizes.size() < p_sizes.size() || !std::equal(p_sizes.begin(), p_sizes.end(), data_sizes.begin()))
    n.fail("data.shape " + shape::of(data_sizes).to_string() + " must start with partitions.shape " + shape::of(p_sizes).to_string());
  if (outputs != static_cast<std::size_t>(parts))
    n.fail("num_partitions is " + std::to_string(parts) + " but the node has " + std::to_string(outputs) + " outputs");
  partition_plan p;
  p.count.assign(static_cast<std::size_t>(parts), 0);
  for (std::size_t j = 0; j < pv.size(); ++j) {
    if (pv[j] < 0 || pv[j] >= parts)
      n.fail("partitions[" + std::to_string(j) + "] = " + std::to_string(pv[j]) + " is not in [0, " + std::to_string(parts) + ")");
    ++p.count[static_cast<std::size_t>(pv[j])];
  }
  p.tail.assign(data_sizes.begin() + static_cast<std::ptrdiff_t>(p_sizes.size()), data_sizes.end());
  return p;
}

/// EnsureShape: `sizes` must match `want` where it is known.
inline void check_ensure_shape(const std::vector<i64>& sizes, const gpass::shape& want, const kernel_node& n) {
  if (!want.has_rank()) return;
  bool ok = want.rank() == sizes.size();
  for (std::size_t d = 0; ok && d < sizes.size(); ++d)
    if (want[d].is_known()) ok = want[d].value() == sizes[d];
  if (!ok) n.fail("shape of tensor " + shape::of(sizes).to_string() + " is not compatible with expected shape " + want.to_string());
}

/// The geometry of a 2-D or 3-D window over an input of [N, H, W, C], [N, C, H, W] (the ops
/// that take NCHW) or [N, D, H, W, C]; a 2-D window has D = KD = OD = 1. Spatial positions are flat:
/// (d * H + h) * W + w in the input, (od * OH + oh) * OW + ow in the output.
struct geometry {
  i64 N = 0, D = 1, H = 0, W = 0, C = 0;              // input
  i64 KD = 1, KH = 1, KW = 1;                         // window
  i64 SD = 1, SH = 1, SW = 1, DD = 1, DH = 1, DW = 1; // strides, dilations
  i64 PF = 0, PT = 0, PL = 0;                         // padding before (front, top, left)
  i64 OD = 1, OH = 0, OW = 0;                         // output
  i64 in_positions() const { return D * H * W; }
  i64 out_positions() const { return OD * OH * OW; }
  i64 taps() const { return KD * KH * KW; }
};

// The window attributes of node `n`: strides, dilations (convolutions), ksize (`pool`),
// padding, for a 2-D op (4 values each, NHWC or NCHW) or a 3-D one (`volumetric`: 5 values, NDHWC).
struct window {
  std::vector<i64> strides, dilations, ksize, explicit_paddings;
  std::string padding;
  bool nchw = false;        // NCHW (where the kernel takes it); channels last otherwise
  bool volumetric = false;  // a 3-D op
  std::size_t rank = 4;     // the input's rank and the attributes' length
  std::size_t d = 0, h = 1, w = 2;  // the spatial dims' positions in the attributes (d: 3-D only)
  // `nchw_ok`: the kernel reads NCHW too (the forward 2-D pools on the CPU; the GPU's 2-D ops)
  window(const kernel_node& n, bool pool, bool nchw_ok = false, bool volumetric_op = false) : volumetric(volumetric_op) {
    const std::string last = volumetric ? "NDHWC" : "NHWC";
    const std::string format = n.attr<std::string>("data_format", last);
    nchw = format == "NCHW" && nchw_ok && !volumetric;
    if (format != last && !nchw)
      n.fail("data_format " + format + " is not supported" +
             (nchw_ok && !volumetric ? std::string(" (NHWC or NCHW)") : " on the CPU here (" + last + " only, as TensorFlow's CPU kernels)"));
    rank = volumetric ? 5 : 4;
    if (volumetric) d = 1, h = 2, w = 3;
    else if (nchw) h = 2, w = 3;
    const std::size_t c = nchw ? 1 : rank - 1;
    auto values = [&](const char* what, std::vector<i64> v, bool required) {
      if (v.empty() && !required) v.assign(rank, 1);
      if (v.size() != rank)
        n.fail(std::string(what) + " must have " + std::to_string(rank) + " values (" + format + "), got " +
               std::to_string(v.size()));
      if (v[0] != 1 || v[c] != 1) n.fail(std::string(what) + " must be 1 in the batch and channel dims");
      for (i64 x : v)
        if (x < 1) n.fail(std::string(what) + " must be positive");
      return v;
    };
    strides = values("strides", int_list(n, "strides"), false);
    if (pool) ksize = values("ksize", int_list(n, "ksize"), true);
    else dilations = values("dilations", int_list(n, "dilations"), false);
    padding = n.attr<std::string>("padding");
    if (padding == "EXPLICIT" && !volumetric) {
      explicit_paddings = int_list(n, "explicit_paddings");
      if (explicit_paddings.size() != 8) n.fail("explicit_paddings must have 8 values");
      for (i64 p : explicit_paddings)
        if (p < 0) n.fail("explicit_paddings must be >= 0");
    } else if (padding != "SAME" && padding != "VALID") {
      n.fail("unknown padding '" + padding + "'" + (volumetric ? " (SAME or VALID)" : ""));
    }
  }

  // The pooling window's (KD, KH, KW).
  std::array<i64, 3> pool_window() const {
    return {volumetric ? ksize[d] : 1, ksize[h], ksize[w]};
  }
  // A filter's window: [KD,] KH, KW of [KD, KH, KW, in, out] or [KH, KW, in, out].
  std::array<i64, 3> filter_window(const std::vector<i64>& f) const {
    return volumetric ? std::array<i64, 3>{f[0], f[1], f[2]} : std::array<i64, 3>{1, f[0], f[1]};
  }
  // The sizes of an output with `channels` channels over geometry `g`.
  std::vector<i64> output_sizes(const geometry& g, i64 channels) const {
    if (volumetric) return {g.N, g.OD, g.OH, g.OW, channels};
    return nchw ? std::vector<i64>{g.N, channels, g.OH, g.OW} : std::vector<i64>{g.N, g.OH, g.OW, channels};
  }

  geometry resolve(const std::vector<i64>& input, std::array<i64, 3> k, const kernel_node& n) const {
    if (input.size() != rank)
      n.fail("the input must have rank " + std::to_string(rank) + " (" +
             (volumetric ? "NDHWC" : nchw ? "NCHW" : "NHWC") + "), got sizes " + shape::of(input).to_string());
    geometry g;
    g.N = input[0], g.H = input[h], g.W = input[w], g.C = input[nchw ? 1 : rank - 1];
    g.KD = k[0], g.KH = k[1], g.KW = k[2], g.SH = strides[h], g.SW = strides[w];
    if (!dilations.empty()) g.DH = dilations[h], g.DW = dilations[w];
    auto dim = [&](i64 in, i64 kk, i64 s, i64 dil, i64 pad_lo, i64 pad_hi, i64& before) {
      auto overflow = [&](const char* what) {
        n.fail(std::string(what) + " overflows int64 (window " + std::to_string(kk) + ", dilation " + std::to_string(dil) +
               ", input size " + std::to_string(in) + ")");
      };
      const auto scaled = checked_mul(kk - 1, dil);
      if (!scaled || *scaled == std::numeric_limits<i64>::max()) overflow("the window's extent");
      const i64 eff = *scaled + 1;
      if (padding == "SAME") {
        const i64 out = in / s + (in % s != 0 ? 1 : 0);
        const auto reach = checked_add((out - 1) * s, eff);  // (out - 1) * s < in
        if (!reach) overflow("the padded extent");
        const i64 total = std::max<i64>(0, *reach - in);
        before = total / 2;
        return out;
      }
      before = padding == "EXPLICIT" ? pad_lo : 0;
      const auto lo = checked_add(in, padding == "EXPLICIT" ? pad_lo : 0);
      const auto whole = lo ? checked_add(*lo, padding == "EXPLICIT" ? pad_hi : 0) : std::nullopt;
      if (!whole) overflow("the padded input size");
      const i64 span = *whole - eff;
      if (span < 0) n.fail("the window (" + std::to_string(eff) + ") is larger than the padded input (" + std::to_string(in) + ")");
      return span / s + 1;
    };
    const auto& e = explicit_paddings;
    if (volumetric) {
      g.D = input[d], g.SD = strides[d];
      if (!dilations.empty()) g.DD = dilations[d];
      g.OD = dim(g.D, g.KD, g.SD, g.DD, 0, 0, g.PF);
    }
    g.OH = dim(g.H, g.KH, g.SH, g.DH, e.empty() ? 0 : e[2 * h], e.empty() ? 0 : e[2 * h + 1], g.PT);
    g.OW = dim(g.W, g.KW, g.SW, g.DW, e.empty() ? 0 : e[2 * w], e.empty() ? 0 : e[2 * w + 1], g.PL);
    return g;
  }
};

// ---- the convolution gradients' operands ------------------------------------------------------

/// A sizes input's values (`v`, read by the kernel): `count` values, none negative.
inline std::vector<i64> sizes_values(std::vector<i64> v, std::size_t count, const kernel_node& n, const char* what) {
  if (v.size() != count) n.fail(std::string(what) + " must have " + std::to_string(count) + " values, got " + std::to_string(v.size()));
  for (i64 d : v)
    if (d < 0) n.fail(std::string(what) + " must be >= 0");
  return v;
}

/// The [KH, KW, C, OC] (2-D) or [KD, KH, KW, C, OC] (3-D) filter checked against the input's channels.
inline void check_filter(const std::vector<i64>& f, i64 channels, const window& win, const kernel_node& n) {
  if (f.size() != win.rank)
    n.fail("the filter must have rank " + std::to_string(win.rank) + (win.volumetric ? " (DHWIO)" : " (HWIO)") + ", got sizes " +
           shape::of(f).to_string());
  if (f[win.rank - 2] != channels)
    n.fail("the filter's input depth " + std::to_string(f[win.rank - 2]) + " differs from the input's channels " + std::to_string(channels) +
           " (grouped convolutions are not supported on the CPU here)");
}

/// Checks a depthwise filter's sizes [KH, KW, C, M] against the input's channels `c` (-1: unknown).
inline void check_depthwise_filter(const std::vector<i64>& fs, i64 c, const kernel_node& n) {
  if (fs.size() != 4) n.fail("the filter must have rank 4 ([KH, KW, C, M]), got sizes " + shape::of(fs).to_string());
  if (c >= 0 && fs[2] != c)
    n.fail("the filter's input depth " + std::to_string(fs[2]) + " differs from the input's channels " + std::to_string(c));
}

/// The C * M output channels of a depthwise convolution, unbounded when the filter is
/// empty (M from it, or from the filter_sizes input).
inline i64 depthwise_channels(i64 C, i64 M, const kernel_node& n) {
  const auto oc = checked_mul(C, M);
  if (!oc) n.fail("the output channels (" + std::to_string(C) + " x channel multiplier " + std::to_string(M) + ") overflow int64");
  return *oc;
}

/// `sizes` (an out_backprop's or a grad's) must be the window op's output sizes.
inline void check_output_sizes(const std::vector<i64>& sizes, const window& win, const geometry& g, i64 channels, const char* what,
                               const char* op, const kernel_node& n) {
  const std::vector<i64> want = win.output_sizes(g, channels);
  if (sizes != want)
    n.fail(std::string(what) + " has sizes " + shape::of(sizes).to_string() + ", the " + op + "'s output is " + shape::of(want).to_string());
}

/// The operands of a convolution gradient (Conv2D's, Conv3D's or a depthwise one's,
/// `depthwise`): the input's sizes `xs` and the filter's `fs` (one of them read from a sizes
/// input), the geometry and the output channels, with out_backprop's sizes `dys` checked
/// against them.
struct grad_operands {
  std::vector<i64> xs, fs;
  geometry g;
  i64 out_channels = 0;
};
inline grad_operands conv_grad_operands(std::vector<i64> xs, std::vector<i64> fs, const std::vector<i64>& dys, const window& win,
                                        bool depthwise, const kernel_node& n) {
  grad_operands o;
  o.xs = std::move(xs);
  o.fs = std::move(fs);
  const i64 channels = o.xs.size() == win.rank ? o.xs.back() : -1;
  if (depthwise) check_depthwise_filter(o.fs, channels, n);
  else check_filter(o.fs, channels, win, n);
  o.g = win.resolve(o.xs, win.filter_window(o.fs), n);
  o.out_channels = depthwise ? depthwise_channels(o.g.C, o.fs[3], n) : o.fs.back();
  check_output_sizes(dys, win, o.g, o.out_channels, "out_backprop", depthwise ? "depthwise convolution" : "convolution", n);
  return o;
}

// ---- the diagonal ops: MatrixDiag, MatrixDiagPart, MatrixSetDiag and their V2 / V3 forms ----

/// Where the shorter diagonals of a band sit in their storage rows (V3's `align`).
struct diag_alignment {
  bool super_left = true, sub_left = true;  // V1 and V2: LEFT_LEFT
};

inline diag_alignment read_diag_alignment(const kernel_node& n) {
  if (!n.has_attr("align")) return {};
  const std::string a = n.attr<std::string>("align");
  if (a == "LEFT_LEFT") return {true, true};
  if (a == "LEFT_RIGHT") return {true, false};
  if (a == "RIGHT_LEFT") return {false, true};
  if (a == "RIGHT_RIGHT") return {false, false};
  n.fail("align must be LEFT_RIGHT, RIGHT_LEFT, LEFT_LEFT or RIGHT_RIGHT, got '" + a + "'");
}

/// The band [lower, upper] of `k`'s values `v` (one or two, within int32 as TensorFlow's int32 `k`).
inline std::pair<i64, i64> diag_band_ends(const std::vector<i64>& v, const kernel_node& n) {
  if (v.empty() || v.size() > 2) n.fail("k must have one or two elements, has " + std::to_string(v.size()));
  for (i64 x : v)
    if (x < INT32_MIN || x > INT32_MAX) n.fail("k value " + std::to_string(x) + " does not fit in int32");
  if (v.front() > v.back())
    n.fail("k's lower diagonal " + std::to_string(v.front()) + " is above its upper diagonal " + std::to_string(v.back()));
  return {v.front(), v.back()};
}

/// The geometry of a band of diagonals lo..hi in a batch of rows x cols matrices, and of its
/// storage: diagonal d (from `hi` down to `lo`) is storage row `hi - d` of `len` elements.
struct diag_band {
  i64 lo = 0, hi = 0, rows = 0, cols = 0, len = 0;
  diag_alignment align;
  i64 count() const { return hi - lo + 1; }
  /// Diagonal d's length and where it starts in its storage row.
  std::pair<i64, i64> extent(i64 d) const {
    const i64 n = std::max<i64>(0, std::min(rows + std::min<i64>(d, 0), cols - std::max<i64>(d, 0)));
    const bool left = (d >= 0 && align.super_left) || (d <= 0 && align.sub_left);
    return {n, left ? 0 : len - n};
  }
  /// The sizes of the band's storage for matrices of `sizes` (batch dims, then [count,] len).
  std::vector<i64> storage_sizes(const std::vector<i64>& sizes) const {
    std::vector<i64> out(sizes.begin(), sizes.end() - 2);
    if (lo < hi) out.push_back(count());
    out.push_back(len);
    return out;
  }
  /// Calls f(matrix offset, storage offset) for each element of the band in one matrix.
  template <class F>
  void each(F&& f) const {
    for (i64 d = hi; d >= lo; --d) {
      const auto [n, at] = extent(d);
      const i64 row0 = std::max<i64>(0, -d), col0 = std::max<i64>(0, d), base = (hi - d) * len + at;
      for (i64 e = 0; e < n; ++e) f((row0 + e) * cols + col0 + e, base + e);
    }
  }
};

/// The band `k` (V1: the main diagonal) of matrices of `sizes` (rank >= 2, checked), checked
/// to lie in them (both ends in (-rows, cols); 0 always may, for empty matrices).
inline diag_band diag_band_of_matrices(const std::vector<i64>& sizes, std::pair<i64, i64> k, diag_alignment align, const kernel_node& n) {
  if (sizes.size() < 2) n.fail("input must have rank >= 2, got " + shape::of(sizes).to_string());
  diag_band b{.lo = k.first, .hi = k.second, .align = align};
  b.rows = sizes[sizes.size() - 2];
  b.cols = sizes[sizes.size() - 1];
  for (i64 d : {b.lo, b.hi})
    if (d != 0 && (d <= -b.rows || d >= b.cols))
      n.fail("diagonal " + std::to_string(d) + " is outside a " + std::to_string(b.rows) + "x" + std::to_string(b.cols) +
             " matrix (k must be in (" + std::to_string(-b.rows) + ", " + std::to_string(b.cols) + "))");
  b.len = std::max<i64>(0, std::min(b.rows + std::min<i64>(b.hi, 0), b.cols - std::max<i64>(b.lo, 0)));
  return b;
}

/// MatrixDiag of diagonals of `sizes`, band `k`, `num_rows` / `num_cols` (-1: the least size
/// that holds the band; square when both are -1): the band in the output matrices, the output
/// sizes and the batch (the number of matrices).
struct diag_plan {
  diag_band b;
  std::vector<i64> out;
  i64 batch = 1;
};
inline diag_plan plan_matrix_diag(const std::vector<i64>& xs, std::pair<i64, i64> k, i64 rows, i64 cols, diag_alignment align,
                                  const kernel_node& n) {
  if (xs.empty()) n.fail("diagonal must have rank >= 1, got " + shape::of(xs).to_string());
  diag_plan p;
  diag_band& b = p.b;
  b.lo = k.first;
  b.hi = k.second;
  b.align = align;
  const std::size_t r = xs.size();
  if (b.lo < b.hi && (r < 2 || xs[r - 2] != b.count()))
    n.fail("diagonal " + shape::of(xs).to_string() + " does not hold the " + std::to_string(b.count()) + " diagonals of k [" +
           std::to_string(b.lo) + ", " + std::to_string(b.hi) + "] (its dim -2 must be their number)");
  b.len = xs[r - 1];
  const i64 min_rows = b.len - std::min<i64>(b.hi, 0), min_cols = b.len + std::max<i64>(b.lo, 0);
  if (rows < -1 || (rows != -1 && rows < min_rows))
    n.fail("num_rows " + std::to_string(rows) + " is less than the " + std::to_string(min_rows) + " rows the diagonals need");
  if (cols < -1 || (cols != -1 && cols < min_cols))
    n.fail("num_cols " + std::to_string(cols) + " is less than the " + std::to_string(min_cols) + " columns the diagonals need");
  if (rows == -1 && cols == -1) rows = cols = std::max(min_rows, min_cols);
  else if (rows == -1) rows = min_rows;
  else if (cols == -1) cols = min_cols;
  if (rows != min_rows && cols != min_cols)
    n.fail("num_rows " + std::to_string(rows) + " and num_cols " + std::to_string(cols) +
           " do not fit the diagonals: one of them must be the least size (" + std::to_string(min_rows) + " rows or " +
           std::to_string(min_cols) + " columns)");
  b.rows = rows;
  b.cols = cols;
  const std::size_t lead = b.lo == b.hi ? r - 1 : r - 2;
  p.out.assign(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(lead));
  for (std::size_t i = 0; i < lead; ++i) p.batch *= xs[i];
  p.out.push_back(rows);
  p.out.push_back(cols);
  return p;
}

/// `padding_value` (of `sizes` and `t`) must be one value of the diagonal's element type `want`.
inline void check_diag_padding(const std::vector<i64>& sizes, dtype t, dtype want, const kernel_node& n) {
  if (shape_rules::prod(sizes, 0, sizes.size()) != 1 || sizes.size() > 1)
    n.fail("padding_value must be a scalar, got sizes " + shape::of(sizes).to_string());
  if (t != want) n.fail("padding_value is " + std::string(to_string(t)) + ", the diagonal " + std::string(to_string(want)));
}

/// MatrixSetDiag: input of `xs` / `xt`, diagonal of `ds` / `dt`, band `k`: the band, checked.
inline diag_band plan_matrix_set_diag(const std::vector<i64>& xs, dtype xt, const std::vector<i64>& ds, dtype dt, std::pair<i64, i64> k,
                                      diag_alignment align, const kernel_node& n) {
  if (xs.size() < 2) n.fail("input must have rank >= 2, got " + shape::of(xs).to_string());
  if (ds.empty()) n.fail("diagonal must have rank >= 1, got " + shape::of(ds).to_string());
  if (dt != xt) n.fail("diagonal is " + std::string(to_string(dt)) + ", input " + std::string(to_string(xt)));
  const diag_band b = diag_band_of_matrices(xs, k, align, n);
  const std::vector<i64> want = b.storage_sizes(xs);
  if (ds != want)
    n.fail("diagonal has shape " + shape::of(ds).to_string() + ", expected " + shape::of(want).to_string() + " for input " +
           shape::of(xs).to_string() + " and k [" + std::to_string(b.lo) + ", " + std::to_string(b.hi) + "]");
  return b;
}

// ---- SparseSegmentSum / Mean / SqrtN and their WithNumSegments forms ----

/// TensorFlow's checks of the operands' shapes: data of rank >= 1, indices and segment_ids
/// vectors of one length.
inline void check_sparse_segment_shapes(const std::vector<i64>& data, const std::vector<i64>& indices, const std::vector<i64>& ids,
                                        const kernel_node& n) {
  if (data.empty()) n.fail("data must have rank >= 1");
  if (indices.size() != 1 || ids.size() != 1) n.fail("indices and segment_ids must be vectors");
  if (indices[0] != ids[0]) n.fail("indices has " + std::to_string(indices[0]) + " elements, segment_ids " + std::to_string(ids[0]));
}

/// The number of segments (`num`, num_segments, when given; else the last id + 1) after
/// TensorFlow's checks of the values: each index in [0, rows), the ids non-negative,
/// increasing and below the number of segments.
inline i64 sparse_segment_count(i64 rows, const std::vector<i64>& iv, const std::vector<i64>& sv, std::optional<i64> num, const kernel_node& n) {
  i64 segments = 0;
  if (!num && !sv.empty()) {
    const auto next = checked_add(sv.back(), i64(1));  // (the id may be INT64_MAX)
    if (!next) n.fail("segment id " + std::to_string(sv.back()) + " + 1 overflows int64");
    segments = *next;
  }
  if (num) {
    segments = *num;
    if (segments < 0) n.fail("num_segments must be non-negative, got " + std::to_string(segments));
  }
  for (std::size_t i = 0; i < sv.size(); ++i) {
    if (iv[i] < 0 || iv[i] >= rows)
      n.fail("indices[" + std::to_string(i) + "] = " + std::to_string(iv[i]) + " is not in [0, " + std::to_string(rows) + ")");
    if (sv[i] < 0 || (i > 0 && sv[i] < sv[i - 1])) n.fail("segment ids are not increasing");
    if (sv[i] >= segments)
      n.fail("segment_ids[" + std::to_string(i) + "] = " + std::to_string(sv[i]) + " is not less than num_segments " + std::to_string(segments));
  }
  return segments;
}

// ---- the image resizes: ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic, ResizeArea ----

/// TensorFlow's resize scale: (in - 1) / (out - 1) with align_corners (and out > 1), else in / out.
inline float resize_scale(i64 in, i64 out, bool align_corners) {
  return align_corners && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                  : static_cast<float>(in) / static_cast<float>(out);
}

/// TensorFlow's resize attributes: align_corners and half_pixel_centers (not both).
struct resize_attrs {
  bool align = false, half = false;
};
inline resize_attrs read_resize_attrs(const kernel_node& n) {
  const resize_attrs a{flag(n, "align_corners", false), flag(n, "half_pixel_centers", false)};
  if (a.align && a.half) n.fail("align_corners and half_pixel_centers cannot both be true");
  return a;
}

/// The sizes of a resize of an NHWC image of `xs` to `size`'s (height, width) values, checked.
struct resize_sizes {
  i64 N = 0, H = 0, W = 0, C = 0, OH = 0, OW = 0;
};
inline resize_sizes resize_geometry(const std::vector<i64>& xs, const std::vector<i64>& size, const kernel_node& n) {
  if (xs.size() != 4) n.fail("images must be 4-D (NHWC), got " + shape::of(xs).to_string());
  if (size.size() != 2 || size[0] <= 0 || size[1] <= 0) n.fail("size must be 2 positive values");
  // (every resize reads the image's edge rows and columns: index in_n - 1)
  if (xs[1] == 0 || xs[2] == 0) n.fail("cannot resize an empty image (input image must be of non-zero size)");
  return {xs[0], xs[1], xs[2], xs[3], size[0], size[1]};
}

/// ResizeBilinear's taps of each output position of an axis: the two input positions (both
/// clamped: float rounding of i * scale may pass in_n - 1 for sizes past 2^24) and the
/// fraction between them.
struct bilinear_tap {
  i64 lo, hi;
  float lerp;
};
inline std::vector<bilinear_tap> bilinear_axis(i64 out_n, i64 in_n, float scale, bool half) {
  std::vector<bilinear_tap> v(static_cast<std::size_t>(out_n));
  for (i64 i = 0; i < out_n; ++i) {
    const float in = half ? (static_cast<float>(i) + 0.5f) * scale - 0.5f : static_cast<float>(i) * scale;
    const float f = std::floor(in);
    v[static_cast<std::size_t>(i)] = {std::clamp<i64>(static_cast<i64>(f), 0, in_n - 1),
                                      std::clamp<i64>(static_cast<i64>(std::ceil(in)), 0, in_n - 1), in - f};
  }
  return v;
}

/// ResizeNearestNeighbor's input position of each output position of an axis.
inline std::vector<i64> nearest_axis(i64 out_n, i64 in_n, float scale, bool align, bool half) {
  std::vector<i64> v(static_cast<std::size_t>(out_n));
  for (i64 i = 0; i < out_n; ++i) {
    const float in = half ? (static_cast<float>(i) + 0.5f) * scale : static_cast<float>(i) * scale;
    const i64 s = std::min<i64>(align ? static_cast<i64>(std::round(in)) : static_cast<i64>(std::floor(in)), in_n - 1);
    v[static_cast<std::size_t>(i)] = half ? std::max<i64>(s, 0) : s;
  }
  return v;
}

/// ResizeBicubic's four taps of each output position of an axis, TensorFlow's: the cubic
/// weights of the fraction read from a 1025-entry table (the fraction rounded to 1/1024),
/// a = -0.75 with the taps clamped to the edge, or with half_pixel_centers Keys' a = -0.5 with
/// the taps outside the image weighted 0 and the rest renormalized.
struct bicubic_taps {
  std::array<i64, 4> at;
  std::array<float, 4> w;
};
inline std::vector<bicubic_taps> bicubic_axis(i64 out_n, i64 in_n, float scale, bool half) {
  constexpr i64 table_size = 1024;
  const double a = half ? -0.5 : -0.75;
  std::vector<float> table(2 * (table_size + 1));
  for (i64 i = 0; i <= table_size; ++i) {
    float t = static_cast<float>(static_cast<double>(i) / table_size);
    table[static_cast<std::size_t>(2 * i)] = static_cast<float>(((a + 2) * t - (a + 3)) * t * t + 1);
    t += 1.0f;
    table[static_cast<std::size_t>(2 * i + 1)] = static_cast<float>(((a * t - 5 * a) * t + 8 * a) * t - 4 * a);
  }
  std::vector<bicubic_taps> v(static_cast<std::size_t>(out_n));
  for (i64 o = 0; o < out_n; ++o) {
    const float in = half ? (static_cast<float>(o) + 0.5f) * scale - 0.5f : static_cast<float>(o) * scale;
    const i64 lo = static_cast<i64>(std::floor(in));
    const i64 off = static_cast<i64>(std::lrintf((in - static_cast<float>(lo)) * static_cast<float>(table_size)));
    const std::array<float, 4> w{table[static_cast<std::size_t>(off * 2 + 1)], table[static_cast<std::size_t>(off * 2)],
                                 table[static_cast<std::size_t>((table_size - off) * 2)],
                                 table[static_cast<std::size_t>((table_size - off) * 2 + 1)]};
    bicubic_taps& t = v[static_cast<std::size_t>(o)];
    float sum = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const i64 want = lo - 1 + static_cast<i64>(k);
      t.at[k] = std::clamp<i64>(want, 0, in_n - 1);
      t.w[k] = !half || t.at[k] == want ? w[k] : 0.0f;
      sum += t.w[k];
    }
    if (half && std::abs(sum) >= 1000.0f * std::numeric_limits<float>::min()) {
      const float inv = 1.0f / sum;
      for (float& wk : t.w) wk *= inv;
    }
  }
  return v;
}

/// ResizeArea's cells of each output position of an axis, TensorFlow's: output cell [o*s,
/// (o+1)*s) covers input cells floor(o*s) .. ceil((o+1)*s)-1, each weighted by the part of it
/// inside the output cell (indices past the image clamped to its edge).
struct area_cells {
  std::vector<i64> at;
  std::vector<float> w;
};
inline std::vector<area_cells> area_axis(i64 out_n, i64 in_n, float scale) {
  std::vector<area_cells> v(static_cast<std::size_t>(out_n));
  for (i64 o = 0; o < out_n; ++o) {
    const float in0 = static_cast<float>(o) * scale, in1 = static_cast<float>(o + 1) * scale;
    const i64 first = static_cast<i64>(std::floor(in0)), end = static_cast<i64>(std::ceil(in1));
    area_cells& c = v[static_cast<std::size_t>(o)];
    for (i64 i = first; i < end; ++i) {
      const float lo = static_cast<float>(i), hi = static_cast<float>(i + 1);
      c.at.push_back(std::clamp<i64>(i, 0, in_n - 1));
      c.w.push_back(lo < in0 ? (hi > in1 ? scale : hi - in0) : (hi > in1 ? in1 - lo : 1.0f));
    }
  }
  return v;
}

// ---- CropAndResize ----

/// CropAndResize's sizes, checked as TensorFlow checks them: an NHWC image [batch, H, W, D]
/// (H, W > 0), boxes [n, 4], box_ind [n] (no boxes and no indices: no crops, whatever their
/// shapes), crop_size's two positive values (`crop_values()`, read once its shape is checked).
struct crop_sizes {
  i64 batch = 0, H = 0, W = 0, D = 0, n = 0, CH = 0, CW = 0;
};
template <class Values>
crop_sizes crop_geometry(const std::vector<i64>& image, const std::vector<i64>& boxes, const std::vector<i64>& box_ind,
                         const std::vector<i64>& crop_shape, Values&& crop_values, const kernel_node& n) {
  auto text = [](const std::vector<i64>& s) { return shape::of(s).to_string(); };
  if (image.size() != 4) n.fail("input image must be 4-D, got shape " + text(image));
  crop_sizes c{image[0], image[1], image[2], image[3], 0, 0, 0};
  if (c.H <= 0 || c.W <= 0) n.fail("image dimensions must be positive, got shape " + text(image));
  if (boxes.size() != 2) n.fail("boxes must be 2-D, got shape " + text(boxes));
  if (box_ind.size() != 1) n.fail("box_ind must be 1-D, got shape " + text(box_ind));
  if (boxes[0] * boxes[1] != 0 || box_ind[0] != 0) {
    c.n = boxes[0];
    if (boxes[1] != 4) n.fail("boxes must have 4 columns, got shape " + text(boxes));
    if (box_ind[0] != c.n) n.fail("box_ind has " + std::to_string(box_ind[0]) + " elements for " + std::to_string(c.n) + " boxes");
  }
  if (crop_shape.size() != 1 || crop_shape[0] != 2) n.fail("crop_size must be 1-D with two elements, got shape " + text(crop_shape));
  const std::vector<i64> crop = crop_values();
  c.CH = crop[0];
  c.CW = crop[1];
  if (c.CH <= 0 || c.CW <= 0 || c.CH > INT32_MAX || c.CW > INT32_MAX)
    n.fail("crop dimensions must be positive, got crop_size [" + std::to_string(c.CH) + ", " + std::to_string(c.CW) + "]");
  return c;
}

/// Checks CropAndResize's box indices (in [0, batch)) and box corners (finite).
inline void check_crop_boxes(const std::vector<i64>& ind, const float* boxes, const crop_sizes& c, const kernel_node& n) {
  for (i64 b : ind)
    if (b < 0 || b >= c.batch)
      n.fail("box_ind has values outside [0, batch_size): " + std::to_string(b) + " for a batch of " + std::to_string(c.batch));
  for (i64 i = 0; i < 4 * c.n; ++i)
    if (!std::isfinite(boxes[i])) n.fail("boxes contain at least one element that is not finite");
}

/// CropAndResize's sample of each of the `count` crop positions along an axis of `size`
/// cells, TensorFlow's: the coordinate lo * (size - 1) + k * scale (the box's centre for a crop
/// of 1); whether it lies in the image (NaN: not; then the output is the extrapolation value),
/// the cells at its floor and ceiling, the fraction between them and the nearest cell.
struct crop_tap {
  bool inside = false;
  i64 lo = 0, hi = 0, near = 0;
  float lerp = 0;
};
inline std::vector<crop_tap> crop_axis(float lo, float hi, i64 count, i64 size) {
  const float m1 = static_cast<float>(size - 1);
  const float scale = count > 1 ? (hi - lo) * m1 / static_cast<float>(count - 1) : 0.0f;
  std::vector<crop_tap> v(static_cast<std::size_t>(count));
  for (i64 k = 0; k < count; ++k) {
    const float in = count > 1 ? lo * m1 + static_cast<float>(k) * scale
                               : static_cast<float>(0.5 * static_cast<double>(lo + hi) * static_cast<double>(m1));
    crop_tap& t = v[static_cast<std::size_t>(k)];
    t.inside = in >= 0 && in <= m1;
    if (!t.inside) continue;
    t.lo = static_cast<i64>(std::floor(in));
    t.hi = static_cast<i64>(std::ceil(in));
    t.lerp = in - static_cast<float>(t.lo);
    t.near = static_cast<i64>(std::round(in));
  }
  return v;
}

// ---- SparseToDense ----

/// SparseToDense's checks and each index's flat offset in the output: indices `ix` [N, R] /
/// [N] / scalar (values `iv`), output_shape `shape_v`, values [N] / scalar, a scalar default of
/// the values' type; with `validate` the offsets strictly increasing (row-major), as TensorFlow
/// checks them.
inline std::vector<i64> sparse_to_dense_offsets(const std::vector<i64>& ix, const std::vector<i64>& iv, const std::vector<i64>& shape_v,
                                                const std::vector<i64>& vals, const std::vector<i64>& def, bool same_types, bool validate,
                                                const kernel_node& n) {
  auto text = [](const std::vector<i64>& s) { return shape::of(s).to_string(); };
  if (ix.size() > 2) n.fail("sparse_indices must have rank <= 2, got " + text(ix));
  for (i64 d : shape_v)
    if (d < 0) n.fail("output_shape has a negative dim " + std::to_string(d));
  const i64 num = ix.empty() ? 1 : ix[0];
  const i64 R = ix.size() == 2 ? ix[1] : 1;
  if (static_cast<i64>(shape_v.size()) != R)
    n.fail("output_shape has " + std::to_string(shape_v.size()) + " dims, the indices " + std::to_string(R));
  if (!(vals.empty() || (vals.size() == 1 && vals[0] == num)))
    n.fail("sparse_values must be a scalar or a vector of " + std::to_string(num) + ", got " + text(vals));
  if (!def.empty()) n.fail("default_value must be a scalar");
  if (!same_types) n.fail("sparse_values and default_value have different types");
  // the strides, checked (output_shape is a value; an overflowing one fails before the
  // offsets are formed; the output's own size is checked when it is allocated)
  std::vector<i64> st(shape_v.size(), 1);
  for (std::size_t d = shape_v.size(); d-- > 1;) {
    const auto m = checked_mul(st[d], shape_v[d]);
    if (!m) n.fail("output_shape " + text(shape_v) + " has too many elements");
    st[d - 1] = *m;
  }
  std::vector<i64> flat(static_cast<std::size_t>(num));
  for (i64 j = 0; j < num; ++j) {
    i64 off = 0;
    for (i64 d = 0; d < R; ++d) {
      const i64 v = iv[static_cast<std::size_t>(j * R + d)];
      if (v < 0 || v >= shape_v[static_cast<std::size_t>(d)]) n.fail("sparse_indices[" + std::to_string(j) + "] is out of bounds of " + text(shape_v));
      off += v * st[static_cast<std::size_t>(d)];
    }
    if (validate && j > 0 && off <= flat[static_cast<std::size_t>(j - 1)])
      n.fail("sparse_indices[" + std::to_string(j) + "] is " + (off == flat[static_cast<std::size_t>(j - 1)] ? "repeated" : "out of order"));
    flat[static_cast<std::size_t>(j)] = off;
  }
  return flat;
}

}  // namespace gpass::exec::tf_rules
