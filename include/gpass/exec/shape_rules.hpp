// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file shape_rules.hpp
/// The shape arithmetic that every executor's kernels share (the Eigen CPU ones and the
/// CUDA ones compute the same output sizes, views and errors): row-major strides, axes and
/// indices made non-negative, reshape sizes, broadcasting, and the view a Slice takes.
/// Errors name the node.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/exec/kernel.hpp>

namespace gpass::exec::shape_rules {

using i64 = std::int64_t;

inline std::string sizes_str(const std::vector<i64>& s) { return shape::of(s).to_string(); }

/// The product of `s[b..e)`.
inline i64 prod(const std::vector<i64>& s, std::size_t b, std::size_t e) {
  i64 p = 1;
  for (std::size_t i = b; i < e; ++i) p *= s[i];
  return p;
}

/// Row-major strides of `sizes` (in elements).
inline std::vector<i64> strides_of(const std::vector<i64>& sizes) {
  std::vector<i64> s(sizes.size(), 1);
  for (std::size_t i = sizes.size(); i-- > 1;) s[i - 1] = s[i] * sizes[i];
  return s;
}

/// `axis` in [-rank, rank) made non-negative (rank 0 takes axis 0); out of range fails
/// naming the node.
inline i64 normalize_axis(i64 axis, i64 rank, const kernel_node& n) {
  if (axis < -rank || axis >= std::max<i64>(rank, 1))
    n.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

/// `axis` as an index into the `rank` dimensions of a tensor: in [-rank, rank) made
/// non-negative (unlike `normalize_axis`, a scalar has no axis 0); out of range fails.
inline i64 dim_axis(i64 axis, i64 rank, const kernel_node& n) {
  if (axis < -rank || axis >= rank) n.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

/// An index in [-dim, dim) made non-negative; out of range fails naming the node.
inline i64 fix_index(i64 v, i64 dim, const kernel_node& n, const char* what) {
  if (v < -dim || v >= dim)
    n.fail(std::string(what) + " " + std::to_string(v) + " is out of range [" + std::to_string(-dim) + ", " + std::to_string(dim) +
           ")");
  return v < 0 ? v + dim : v;
}

/// Elements of a range (ONNX Range, TF Range) of floating-point bounds:
/// max(ceil((limit - start) / delta), 0). A zero delta, and a count no int64 holds (an
/// infinite or NaN bound, 1e30 elements), fail naming the node.
inline i64 range_count(double start, double limit, double delta, const kernel_node& n) {
  if (delta == 0) n.fail("delta is 0");
  const double c = std::ceil((limit - start) / delta);
  if (!(c < 9.2e18))
    n.fail("the range has too many elements (start, limit, delta: " + std::to_string(start) + ", " + std::to_string(limit) + ", " +
           std::to_string(delta) + ")");
  return c > 0 ? static_cast<i64>(c) : 0;
}

/// Elements of a range of int64 bounds: max(ceil((limit - start) / delta), 0), exact; a zero
/// delta and a `limit - start` that overflows int64 fail naming the node.
inline i64 range_count(i64 start, i64 limit, i64 delta, const kernel_node& n) {
  if (delta == 0) n.fail("delta is 0");
  const auto span = checked_sub(limit, start);
  if (!span) n.fail("the range has too many elements (limit - start overflows int64)");
  if (delta == -1 && *span == std::numeric_limits<i64>::min()) n.fail("the range has too many elements (more than int64 holds)");
  const i64 c = *span / delta + ((*span % delta != 0) && ((*span < 0) == (delta < 0)) ? 1 : 0);
  return std::max<i64>(0, c);
}

/// Shape of a reshape: 0 copies the input dim (unless allowzero), -1 is inferred.
inline std::vector<i64> reshape_sizes(const std::vector<i64>& in, std::vector<i64> req, bool allowzero, const kernel_node& n) {
  i64 known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < req.size(); ++i) {
    if (req[i] == 0 && !allowzero) {
      if (i >= in.size()) n.fail("shape has 0 at position " + std::to_string(i) + " beyond the input rank");
      req[i] = in[i];
    }
    if (req[i] == -1) {
      if (infer >= 0) n.fail("shape has more than one -1");
      infer = static_cast<int>(i);
    } else if (req[i] < 0) {
      n.fail("shape has invalid size " + std::to_string(req[i]));
    } else {
      auto k = checked_mul(known, req[i]);
      if (!k) n.fail("shape " + sizes_str(req) + " has more elements than int64 counts");
      known = *k;
    }
  }
  const i64 total = prod(in, 0, in.size());
  if (infer >= 0) {
    if (known == 0 || total % known != 0) n.fail("cannot reshape " + sizes_str(in) + " to " + sizes_str(req) + " (cannot infer -1)");
    req[static_cast<std::size_t>(infer)] = total / known;
  } else if (known != total) {
    n.fail("cannot reshape " + sizes_str(in) + " (" + std::to_string(total) + " elements) to " + sizes_str(req));
  }
  return req;
}

/// The multidirectional (NumPy) broadcast of `a` and `b`; incompatible sizes fail naming the
/// node.
inline std::vector<i64> broadcast_sizes(const std::vector<i64>& a, const std::vector<i64>& b, const kernel_node& n) {
  const std::size_t r = std::max(a.size(), b.size());
  std::vector<i64> out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const i64 x = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const i64 y = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (x != y && x != 1 && y != 1) n.fail("cannot broadcast sizes " + sizes_str(a) + " and " + sizes_str(b));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

/// Strides (in elements) for reading a tensor of `sizes` broadcast to `out` (rank of `out`):
/// 0 on broadcast dimensions.
inline std::vector<i64> broadcast_strides(const std::vector<i64>& sizes, const std::vector<i64>& out) {
  std::vector<i64> s(out.size(), 0);
  const auto own = strides_of(sizes);
  const std::size_t off = out.size() - sizes.size();
  for (std::size_t i = 0; i < sizes.size(); ++i) s[off + i] = sizes[i] == 1 ? 0 : own[i];
  return s;
}

/// True when `sizes`, leading 1s dropped, are not empty and are the last sizes of `out`: a
/// tensor that broadcasts to `out` by repetition (a bias vector, a position table), so it
/// can be read with a period of its element count instead of per-element strides.
inline bool repeats_into(const std::vector<i64>& sizes, const std::vector<i64>& out) {
  std::size_t first = 0;
  while (first < sizes.size() && sizes[first] == 1) ++first;
  const std::size_t k = sizes.size() - first;
  return k != 0 && k <= out.size() && std::equal(sizes.begin() + static_cast<std::ptrdiff_t>(first), sizes.end(),
                                                 out.end() - static_cast<std::ptrdiff_t>(k));
}

/// The axis of a GatherElements / ScatterElements over `data` with `indices` (and, for a
/// scatter, `updates`): one rank >= 1 for all, updates of the indices' sizes, indices no larger
/// than the data off the axis.
inline std::size_t elements_axis(const std::vector<i64>& data, const std::vector<i64>& indices, const std::vector<i64>* updates,
                                 i64 axis_attr, const kernel_node& n) {
  const i64 rank = static_cast<i64>(data.size());
  if (!updates && (rank == 0 || indices.size() != data.size())) n.fail("data and indices must have the same rank >= 1");
  if (updates && (rank == 0 || indices.size() != data.size() || *updates != indices))
    n.fail("data, indices and updates must have the same rank, indices and updates the same sizes");
  const std::size_t axis = static_cast<std::size_t>(normalize_axis(axis_attr, rank, n));
  for (std::size_t d = 0; d < data.size(); ++d)
    if (d != axis && indices[d] > data[d]) n.fail("indices " + sizes_str(indices) + " exceed data " + sizes_str(data) + " off the axis");
  return axis;
}

/// Attention scores [B, H, S, L] broadcast (NumPy) with a bias of sizes `bias` (at most 4
/// dimensions): the broadcast sizes, and the bias's element strides over them (0 where it
/// repeats). The bias may not change the key length L.
struct attention_bias_view {
  std::array<i64, 4> sizes{}, strides{};
};
inline attention_bias_view attention_bias(const std::vector<i64>& bias, const std::array<i64, 4>& scores, const kernel_node& n) {
  if (bias.size() > 4) n.fail("the bias " + sizes_str(bias) + " has more than 4 dimensions");
  std::vector<i64> b4(4 - bias.size(), 1);
  b4.insert(b4.end(), bias.begin(), bias.end());
  attention_bias_view v{scores, {0, 0, 0, 0}};
  i64 stride = 1;
  for (std::size_t d = 4; d-- > 0;) {
    const i64 b = b4[d], o = scores[d];
    if (b != 1 && o != 1 && b != o)
      n.fail("the bias " + sizes_str(bias) + " does not broadcast with the scores " + sizes_str({scores.begin(), scores.end()}));
    if (d == 3 && b != 1 && b != scores[3]) n.fail("the bias " + sizes_str(bias) + " changes the key length " + std::to_string(scores[3]));
    v.sizes[d] = std::max(b, o);
    v.strides[d] = b == 1 ? 0 : stride;
    stride *= b;
  }
  return v;
}

/// What one axis of a Slice takes: the first index and the element count.
struct slice_range {
  i64 start = 0, count = 0;
};
/// Axis `dim` sliced from `s` to `e` (negative: from the end) by `step`, clamped as ONNX says.
inline slice_range slice_axis(i64 s, i64 e, i64 step, i64 dim) {
  if (s < 0) s += dim;
  if (e < 0) e += dim;
  slice_range r;
  if (step > 0) {
    s = std::clamp<i64>(s, 0, dim);
    e = std::clamp<i64>(e, 0, dim);
    // ceil((e - s) / step) as (e - s - 1) / step + 1: e - s + step - 1 overflowed for steps
    // near INT64_MAX, and -step below for INT64_MIN
    r.count = e > s ? (e - s - 1) / step + 1 : 0;
  } else if (dim == 0) {
    s = 0;  // an empty axis: nothing to take (and no valid clamp range)
    r.count = 0;
  } else {
    s = std::clamp<i64>(s, 0, dim - 1);
    e = std::clamp<i64>(e, -1, dim - 1);
    r.count = s > e ? 1 - (s - e - 1) / step : 0;
  }
  r.start = s;
  return r;
}

/// Slice-1's attributes (starts, ends, axes; later opsets take inputs): none when the node
/// has no `starts` attribute.
struct slice_attrs {
  std::vector<i64> starts, ends;
  std::optional<std::vector<i64>> axes;
  static std::optional<slice_attrs> read(const kernel_node& n) {
    if (!n.has_attr("starts")) return std::nullopt;
    slice_attrs a{n.attr<std::vector<i64>>("starts"), n.attr<std::vector<i64>>("ends"), std::nullopt};
    if (n.has_attr("axes")) a.axes = n.attr<std::vector<i64>>("axes");
    return a;
  }
};

/// A strided view of a row-major tensor: its sizes, the strides it walks and the offset of
/// its first element (in elements).
struct strided_view {
  std::vector<i64> sizes, strides;
  i64 offset = 0;
};

/// The view a Slice of a tensor of `sizes` takes (`axes` default to 0.., `steps` empty to
/// 1s); inconsistent lengths, a repeated axis or a zero step fail naming the node.
inline strided_view slice_view(const std::vector<i64>& sizes, const std::vector<i64>& starts, const std::vector<i64>& ends,
                               std::optional<std::vector<i64>> axes, const std::vector<i64>& steps, const kernel_node& n) {
  const i64 rank = static_cast<i64>(sizes.size());
  if (starts.size() != ends.size()) n.fail("starts and ends have different lengths");
  if (axes && axes->size() != starts.size()) n.fail("axes and starts have different lengths");
  if (!steps.empty() && steps.size() != starts.size()) n.fail("steps and starts have different lengths");
  if (!axes) {
    if (static_cast<i64>(starts.size()) > rank) n.fail("more starts than dimensions");
    axes.emplace(starts.size());
    std::iota(axes->begin(), axes->end(), i64{0});
  }
  const auto st = strides_of(sizes);
  strided_view v{sizes, st, 0};
  std::vector<char> seen(sizes.size(), 0);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const std::size_t a = static_cast<std::size_t>(dim_axis((*axes)[i], rank, n));
    if (seen[a]) n.fail("axis " + std::to_string((*axes)[i]) + " is repeated");
    seen[a] = 1;
    const i64 step = steps.empty() ? 1 : steps[i];
    if (step == 0) n.fail("step is 0");
    const slice_range r = slice_axis(starts[i], ends[i], step, sizes[a]);
    v.sizes[a] = r.count;
    v.strides[a] = st[a] * step;
    if (r.count > 0) v.offset += r.start * st[a];
  }
  return v;
}

/// The view Transpose reads: `perm` (default: the axes reversed) must permute the axes.
inline strided_view transpose_view(const std::vector<i64>& sizes, const std::optional<std::vector<i64>>& perm, const kernel_node& n) {
  const std::size_t rank = sizes.size();
  std::vector<i64> p(rank);
  if (perm) {
    if (perm->size() != rank) n.fail("perm has " + std::to_string(perm->size()) + " entries for rank " + std::to_string(rank));
    std::vector<char> seen(rank, 0);
    for (std::size_t i = 0; i < rank; ++i) {
      const i64 a = normalize_axis((*perm)[i], static_cast<i64>(rank), n);
      if (seen[static_cast<std::size_t>(a)]) n.fail("perm is not a permutation");
      seen[static_cast<std::size_t>(a)] = 1;
      p[i] = a;
    }
  } else {
    for (std::size_t i = 0; i < rank; ++i) p[i] = static_cast<i64>(rank - 1 - i);
  }
  const auto st = strides_of(sizes);
  strided_view v{std::vector<i64>(rank), std::vector<i64>(rank), 0};
  for (std::size_t i = 0; i < rank; ++i) {
    v.sizes[i] = sizes[static_cast<std::size_t>(p[i])];
    v.strides[i] = st[static_cast<std::size_t>(p[i])];
  }
  return v;
}

/// The sizes of Split's `outputs` parts of an axis of `dim`: `parts` when given, else equal
/// parts (Split-18 `num_outputs`: the last ones smaller); they must sum to `dim`.
inline std::vector<i64> split_sizes(i64 dim, std::vector<i64> parts, const std::optional<i64>& num_outputs, std::size_t outputs,
                                    const kernel_node& n) {
  if (parts.empty()) {
    if (num_outputs && static_cast<std::size_t>(*num_outputs) != outputs)
      n.fail("num_outputs is " + std::to_string(*num_outputs) + " but the node has " + std::to_string(outputs) + " outputs");
    if (outputs == 0) n.fail("no outputs");
    const i64 k = static_cast<i64>(outputs);
    if (num_outputs) {
      const i64 chunk = (dim + k - 1) / k;
      for (i64 i = 0; i < k; ++i) parts.push_back(std::clamp<i64>(dim - i * chunk, 0, chunk));
    } else {
      if (dim % k != 0) n.fail("axis size " + std::to_string(dim) + " cannot be split into " + std::to_string(k) + " equal parts");
      parts.assign(outputs, dim / k);
    }
  }
  if (parts.size() != outputs) n.fail("split has " + std::to_string(parts.size()) + " entries for " + std::to_string(outputs) + " outputs");
  i64 sum = 0;
  for (i64 p : parts) {
    if (p < 0) n.fail("split has a negative entry");
    sum += p;
  }
  if (sum != dim) n.fail("split sums to " + std::to_string(sum) + ", the axis has size " + std::to_string(dim));
  return parts;
}

/// DepthToSpace (`to_space`) or SpaceToDepth of an NCHW tensor of `sizes` with `blocksize`
/// (CRD or DCR order): the output's sizes, and the 6-D view of the input read in output order.
struct rearranged_view {
  std::vector<i64> out;
  strided_view view;
};
inline rearranged_view depth_space_view(const std::vector<i64>& sizes, i64 b, bool crd, bool to_space, const kernel_node& n) {
  if (sizes.size() != 4) n.fail("input must have rank 4, got " + sizes_str(sizes));
  if (b <= 0) n.fail("blocksize must be positive, got " + std::to_string(b));
  const i64 N = sizes[0], C = sizes[1], H = sizes[2], W = sizes[3];
  // products with the blocksize (an attribute: 2^32 made b * b wrap to 0, then C % 0)
  auto mul = [&](i64 x, i64 y) {
    const auto r = checked_mul(x, y);
    if (!r) n.fail("blocksize " + std::to_string(b) + " with input sizes " + sizes_str(sizes) + " overflows int64");
    return *r;
  };
  const i64 bb = mul(b, b);
  if (to_space) {
    if (C % bb != 0) n.fail("channels " + std::to_string(C) + " are not a multiple of blocksize^2");
    const i64 c2 = C / bb, sC = H * W;
    return {{N, c2, mul(H, b), mul(W, b)},
            {{N, c2, H, b, W, b},
             crd ? std::vector<i64>{C * sC, mul(bb, sC), W, mul(b, sC), 1, sC} : std::vector<i64>{C * sC, sC, W, mul(mul(b, c2), sC), 1, c2 * sC},
             0}};
  }
  if (H % b != 0 || W % b != 0) n.fail("spatial sizes are not multiples of blocksize");
  // output channel (by * b + bx) * C + c (DCR) or (c * b + by) * b + bx (CRD)
  return {{N, mul(C, bb), H / b, W / b},
          {crd ? std::vector<i64>{N, C, b, b, H / b, W / b} : std::vector<i64>{N, b, b, C, H / b, W / b},
           crd ? std::vector<i64>{C * H * W, H * W, W, 1, mul(b, W), b} : std::vector<i64>{C * H * W, W, 1, H * W, mul(b, W), b}, 0}};
}

/// Squeeze: `sizes` without the `axes` (which must be 1s), or without every 1 when no axes.
inline std::vector<i64> squeeze_sizes(const std::vector<i64>& sizes, const std::optional<std::vector<i64>>& axes, const kernel_node& n) {
  const i64 rank = static_cast<i64>(sizes.size());
  std::vector<char> drop(sizes.size(), 0);
  if (axes) {
    for (i64 a : *axes) {
      const auto k = static_cast<std::size_t>(dim_axis(a, rank, n));
      if (sizes[k] != 1)
        n.fail("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(sizes[k]) + " (input " + sizes_str(sizes) + ")");
      drop[k] = 1;
    }
  } else {
    for (std::size_t i = 0; i < sizes.size(); ++i) drop[i] = sizes[i] == 1;
  }
  std::vector<i64> s;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (!drop[i]) s.push_back(sizes[i]);
  return s;
}

/// Unsqueeze: `sizes` with a 1 inserted at each of `axes` (of the output's rank, distinct).
inline std::vector<i64> unsqueeze_sizes(const std::vector<i64>& sizes, const std::vector<i64>& axes, const kernel_node& n) {
  const i64 out_rank = static_cast<i64>(sizes.size() + axes.size());
  std::vector<char> ins(static_cast<std::size_t>(out_rank), 0);
  for (i64 a : axes) {
    const auto k = static_cast<std::size_t>(normalize_axis(a, out_rank, n));
    if (ins[k]) n.fail("axis " + std::to_string(a) + " is repeated");
    ins[k] = 1;
  }
  std::vector<i64> s;
  std::size_t j = 0;
  for (std::size_t i = 0; i < ins.size(); ++i) s.push_back(ins[i] ? 1 : sizes[j++]);
  return s;
}

/// Concat of `xs` (any tensor type: same element type and rank, equal sizes off the axis)
/// along `axis_attr` (negative counts from the end): the axis and the output's sizes.
template <class Tensor>
std::pair<std::size_t, std::vector<i64>> concat_shape(const std::vector<const Tensor*>& xs, i64 axis_attr, const kernel_node& n) {
  if (xs.empty()) n.fail("no inputs");
  const Tensor& x0 = *xs[0];
  const i64 rank = static_cast<i64>(x0.rank());
  if (rank == 0) n.fail("cannot concatenate scalars");
  const std::size_t axis = static_cast<std::size_t>(normalize_axis(axis_attr, rank, n));
  std::vector<i64> out = x0.sizes();
  out[axis] = 0;
  for (const auto* x : xs) {
    if (x->element_type() != x0.element_type()) n.fail("inputs have different element types");
    if (x->rank() != x0.rank()) n.fail("inputs have different ranks");
    for (std::size_t d = 0; d < x0.rank(); ++d)
      if (d != axis && x->sizes()[d] != x0.sizes()[d])
        n.fail("input sizes " + sizes_str(x->sizes()) + " and " + sizes_str(x0.sizes()) + " differ off the axis");
    out[axis] += x->sizes()[axis];
  }
  return {axis, std::move(out)};
}

/// The dtype an ONNX `dtype` / `to` attribute names (a dtype or an ONNX TensorProto number).
inline dtype onnx_dtype_attr(const kernel_node& n, const char* name, dtype fallback) {
  auto it = n.attrs.find(name);
  if (it == n.attrs.end()) return fallback;
  if (it->second.is<dtype>()) return it->second.as<dtype>();
  if (it->second.is<i64>()) {
    static constexpr dtype table[] = {dtype::undefined, dtype::f32,    dtype::uint8,  dtype::int8,   dtype::uint16,
                                      dtype::int16,     dtype::int32,  dtype::int64,  dtype::string, dtype::bool_,
                                      dtype::f16,       dtype::f64,    dtype::uint32, dtype::uint64, dtype::complex64,
                                      dtype::complex128, dtype::bf16};
    const i64 v = it->second.as<i64>();
    if (v > 0 && v < static_cast<i64>(std::size(table))) return table[v];
  }
  n.fail(std::string("attribute '") + name + "' does not name a known element type");
}

/// CenterCropPad's pads of each axis of `sizes` (negative: a crop) that bring `want` along
/// `axes_attr` (every axis when absent; repeats fail) to their centre: of an odd difference
/// the larger half at the end.
struct pad_bounds {
  std::vector<i64> begin, end;
};
inline pad_bounds center_crop_pad(const std::vector<i64>& sizes, const std::vector<i64>& want,
                                  const std::optional<std::vector<i64>>& axes_attr, const kernel_node& n) {
  const i64 rank = static_cast<i64>(sizes.size());
  std::vector<i64> axes;
  if (axes_attr) {
    std::vector<char> seen(static_cast<std::size_t>(rank), 0);
    for (i64 a : *axes_attr) {
      const i64 k = dim_axis(a, rank, n);
      if (seen[static_cast<std::size_t>(k)]++) n.fail("axes repeat axis " + std::to_string(a));
      axes.push_back(k);
    }
  } else {
    for (i64 d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (want.size() != axes.size()) n.fail("shape has " + std::to_string(want.size()) + " values for " + std::to_string(axes.size()) + " axes");
  pad_bounds b{std::vector<i64>(static_cast<std::size_t>(rank), 0), std::vector<i64>(static_cast<std::size_t>(rank), 0)};
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::size_t a = static_cast<std::size_t>(axes[i]);
    const i64 dim = sizes[a], sh = want[i];
    if (sh < 0) n.fail("shape must not be negative, got " + std::to_string(sh));
    const i64 diff = sh - dim;  // > 0: pad, < 0: crop
    b.begin[a] = diff >= 0 ? diff / 2 : -((-diff) / 2);
    b.end[a] = diff - b.begin[a];
  }
  return b;
}

/// TensorScatter's view of past_cache [batch, ..., L (at `axis`), inner...] and update (S along
/// the axis): `outer` rows before the axis, of which `per_batch` make one batch.
struct tensor_scatter_plan {
  i64 batch = 0, axis = 0, L = 0, S = 0, outer = 0, per_batch = 0, inner = 0;
};
/// Checks past_cache (`cache`) and update (`upd`, `same_type`: of the cache's element type)
/// for axis `axis_attr` and returns the view.
inline tensor_scatter_plan tensor_scatter(const std::vector<i64>& cache, const std::vector<i64>& upd, bool same_type, i64 axis_attr,
                                          const kernel_node& n) {
  const i64 rank = static_cast<i64>(cache.size());
  if (rank < 2) n.fail("past_cache must have rank >= 2, got " + shape::of(cache).to_string());
  tensor_scatter_plan p;
  p.axis = normalize_axis(axis_attr, rank, n);
  if (p.axis == 0) n.fail("axis must not be the batch axis 0");
  if (!same_type) n.fail("update and past_cache have different element types");
  if (upd.size() != cache.size()) n.fail("update has rank " + std::to_string(upd.size()) + ", past_cache " + std::to_string(rank));
  for (std::size_t d = 0; d < cache.size(); ++d)
    if (static_cast<i64>(d) == p.axis ? upd[d] > cache[d] : upd[d] != cache[d])
      n.fail("update " + shape::of(upd).to_string() + " does not fit past_cache " + shape::of(cache).to_string() + " along axis " +
             std::to_string(p.axis));
  const std::size_t a = static_cast<std::size_t>(p.axis);
  p.batch = cache[0];
  p.L = cache[a];
  p.S = upd[a];
  p.outer = prod(cache, 0, a);
  p.per_batch = prod(cache, 1, a);
  p.inner = prod(cache, a + 1, cache.size());
  return p;
}
/// Checks TensorScatter's write indices: one per batch, each with its S updates inside the
/// axis (mode linear) or wrapping around it (circular).
inline void check_tensor_scatter_writes(const std::vector<i64>& write, const tensor_scatter_plan& p, bool circular, const kernel_node& n) {
  if (static_cast<i64>(write.size()) != p.batch)
    n.fail("write_indices has " + std::to_string(write.size()) + " values for batch " + std::to_string(p.batch));
  for (i64 w : write)
    if (w < 0 || w >= (p.L == 0 ? 1 : p.L) || (!circular && w + p.S > p.L))
      n.fail("write index " + std::to_string(w) + " with " + std::to_string(p.S) + " updates does not fit axis size " + std::to_string(p.L) +
             (circular ? "" : " (mode linear)"));
}

// ---- sliding windows (Conv, ConvTranspose, pooling) ----------------------------------------

/// Window attributes as read from a node (checked once when the kernel is made).
struct window_attrs {
  std::vector<i64> kernel, strides, dilations, pads;
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;

  static window_attrs read(const kernel_node& n) {
    window_attrs a;
    a.kernel = n.attr<std::vector<i64>>("kernel_shape", {});
    a.strides = n.attr<std::vector<i64>>("strides", {});
    a.dilations = n.attr<std::vector<i64>>("dilations", {});
    a.pads = n.attr<std::vector<i64>>("pads", {});
    a.auto_pad = n.attr<std::string>("auto_pad", "NOTSET");
    if (a.auto_pad.empty()) a.auto_pad = "NOTSET";
    a.ceil_mode = n.attr<i64>("ceil_mode", 0) != 0;
    if (a.auto_pad != "NOTSET" && a.auto_pad != "VALID" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER")
      n.fail("unknown auto_pad '" + a.auto_pad + "'");
    for (i64 v : a.kernel)
      if (v <= 0) n.fail("kernel_shape must be positive");
    for (i64 v : a.strides)
      if (v <= 0) n.fail("strides must be positive");
    for (i64 v : a.dilations)
      if (v <= 0) n.fail("dilations must be positive");
    for (i64 v : a.pads)
      if (v < 0) n.fail("pads must be non-negative");
    return a;
  }
};

/// Resolved geometry of a sliding window over `in` spatial sizes.
struct window_geometry {
  std::vector<i64> in, kernel, strides, dilations, pad_begin, pad_end, out;
  i64 effective(std::size_t d) const { return (kernel[d] - 1) * dilations[d] + 1; }
};

inline window_geometry resolve_window(const window_attrs& a, std::vector<i64> in, std::vector<i64> kernel,
                                      const kernel_node& n) {
  const std::size_t r = in.size();
  window_geometry g;
  g.in = std::move(in);
  g.kernel = std::move(kernel);
  if (g.kernel.size() != r) n.fail("kernel_shape has " + std::to_string(g.kernel.size()) + " values for " + std::to_string(r) + " spatial dimensions");
  auto list = [&](const std::vector<i64>& v, std::size_t want, const char* what) {
    if (v.empty()) return std::vector<i64>(want, what[0] == 'p' ? 0 : 1);
    if (v.size() != want) n.fail(std::string(what) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(want));
    return v;
  };
  g.strides = list(a.strides, r, "strides");
  g.dilations = list(a.dilations, r, "dilations");
  std::vector<i64> pads = list(a.pads, 2 * r, "pads");
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(r));
  g.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(r), pads.end());
  g.out.resize(r);
  for (std::size_t d = 0; d < r; ++d) {
    const i64 s = g.strides[d], x = g.in[d];
    auto overflow = [&](const char* what) {
      n.fail(std::string(what) + " overflows int64 (kernel_shape " + std::to_string(g.kernel[d]) + ", dilation " +
             std::to_string(g.dilations[d]) + ", input size " + std::to_string(x) + ")");
    };
    const auto eff_checked = checked_mul(g.kernel[d] - 1, g.dilations[d]);
    if (!eff_checked || *eff_checked == std::numeric_limits<i64>::max()) overflow("the window's extent");
    const i64 eff = *eff_checked + 1;
    if (a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER") {
      const i64 o = x / s + (x % s != 0 ? 1 : 0);
      const auto reach = checked_add((o - 1) * s, eff);  // (o - 1) * s < x
      if (!reach) overflow("the padded extent");
      const i64 total = std::max<i64>(0, *reach - x);
      const i64 small = total / 2, big = total - small;
      g.pad_begin[d] = a.auto_pad == "SAME_UPPER" ? small : big;
      g.pad_end[d] = a.auto_pad == "SAME_UPPER" ? big : small;
      g.out[d] = o;
      continue;
    }
    if (a.auto_pad == "VALID") g.pad_begin[d] = g.pad_end[d] = 0;
    const auto padded = checked_add(x, g.pad_begin[d]);
    const auto whole = padded ? checked_add(*padded, g.pad_end[d]) : std::nullopt;
    if (!whole) overflow("the padded input size");
    const i64 span = *whole - eff;
    if (span < 0)
      n.fail("window of size " + std::to_string(eff) + " does not fit input size " + std::to_string(x) + " (with padding)");
    i64 o = span / s + (a.ceil_mode && span % s != 0 ? 1 : 0) + 1;
    if (a.ceil_mode) {  // the last window must start inside the input or its begin padding
      const auto last = checked_mul(o - 1, s);
      if (!last || *last >= *padded) --o;
    }
    g.out[d] = o;
  }
  return g;
}

/// ConvTranspose's geometry over `in` spatial sizes: `out` from strides, dilations, pads and
/// `output_padding`, or from `output_shape` / SAME auto_pad (the pads then follow from the
/// output, and may be negative: an output larger than the full result). The full result
/// before cropping has `strides * (in - 1) + output_padding + (kernel - 1) * dilations + 1`
/// per dimension; `out = full - pad_begin - pad_end`.
inline window_geometry resolve_transpose_window(const window_attrs& wa, const std::vector<i64>& output_padding,
                                                const std::vector<i64>& output_shape, std::vector<i64> in, std::vector<i64> kernel,
                                                const kernel_node& n) {
  const std::size_t rk = in.size();
  window_geometry g;
  g.in = std::move(in);
  g.kernel = std::move(kernel);
  if (g.kernel.size() != rk) n.fail("kernel_shape has " + std::to_string(g.kernel.size()) + " values for " + std::to_string(rk) + " spatial dimensions");
  auto list = [&](const std::vector<i64>& v, std::size_t want, i64 dflt, const char* what) {
    if (v.empty()) return std::vector<i64>(want, dflt);
    if (v.size() != want) n.fail(std::string(what) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(want));
    return v;
  };
  g.strides = list(wa.strides, rk, 1, "strides");
  g.dilations = list(wa.dilations, rk, 1, "dilations");
  const std::vector<i64> op = list(output_padding, rk, 0, "output_padding");
  std::vector<i64> pads = list(wa.pads, 2 * rk, 0, "pads");
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(rk));
  g.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(rk), pads.end());
  g.out.resize(rk);
  std::vector<i64> oshape = output_shape;
  if (oshape.size() == rk + 2) oshape.erase(oshape.begin(), oshape.begin() + 2);
  if (!oshape.empty() && oshape.size() != rk)
    n.fail("output_shape has " + std::to_string(oshape.size()) + " values for " + std::to_string(rk) + " spatial dimensions");
  const bool same = wa.auto_pad == "SAME_UPPER" || wa.auto_pad == "SAME_LOWER";
  for (std::size_t d = 0; d < rk; ++d) {
    const auto scaled = checked_mul(g.strides[d], g.in[d] - 1);
    const auto padded = scaled ? checked_add(*scaled, op[d]) : std::nullopt;
    const auto whole = padded ? checked_add(*padded, g.effective(d)) : std::nullopt;
    if (!whole) n.fail("the output size of spatial dimension " + std::to_string(d) + " overflows int64");
    const i64 full = *whole;
    if (!oshape.empty() || same) {
      const auto same_size = checked_mul(g.in[d], g.strides[d]);
      if (oshape.empty() && !same_size) n.fail("the output size of spatial dimension " + std::to_string(d) + " overflows int64");
      const i64 target = !oshape.empty() ? oshape[d] : *same_size;
      const i64 total = full - target;
      const i64 half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor division
      if (wa.auto_pad == "SAME_UPPER") {
        g.pad_begin[d] = half;
        g.pad_end[d] = total - half;
      } else {
        g.pad_begin[d] = total - half;
        g.pad_end[d] = half;
      }
      g.out[d] = target;
    } else {
      if (wa.auto_pad == "VALID") g.pad_begin[d] = g.pad_end[d] = 0;
      g.out[d] = full - g.pad_begin[d] - g.pad_end[d];
    }
    if (g.out[d] < 0) n.fail("negative output size");
  }
  return g;
}

}  // namespace gpass::exec::shape_rules
