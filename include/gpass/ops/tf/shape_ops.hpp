// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file shape_ops.hpp
/// TensorFlow ops that compute or rearrange shapes: Shape, ShapeN, Size, Rank, Reshape,
/// ExpandDims, Squeeze, Transpose, ConcatV2, Concat, Pack, Unpack, Split, SplitV, Slice,
/// StridedSlice (begin/end/ellipsis/new-axis/shrink masks, on known and symbolic dims),
/// Fill, Range, Tile, Gather, GatherV2, GatherNd, BroadcastTo, Pad, PadV2, MirrorPad, Where,
/// OneHot, ReverseV2, Cumsum, BroadcastArgs, Unique, InvertPermutation, ClipByValue,
/// MatrixBandPart, TensorScatterUpdate/Add/Sub/Max/Min, ScatterNd, UnsortedSegment{Sum,Prod,Max,Min},
/// Segment{Sum,Mean,Prod,Max,Min}, ReverseSequence, Bincount, DenseBincount.
///
/// Value propagation (seed 000, "constant propagation in type inference"): `Shape` of a
/// fully known shape is a `value`, of a partly known one an incomplete value (`{1,n,3}`);
/// StridedSlice, Slice, Pack, Unpack, ConcatV2, Gather, Split, Reshape, ExpandDims, Squeeze,
/// Fill, Range and BroadcastArgs compute on known and incomplete values; Fill, Reshape, BroadcastTo and
/// Range take their output shapes from them (`Fill(Shape(x), v)` has `x`'s symbolic shape).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/ops/tf/common.hpp>

namespace gpass {

/// Registers the TensorFlow shape ops into `r` (see the file comment).
void register_tf_shape_ops(op_registry& r);

namespace detail::tf_ops {

namespace ox = detail::onnx_ops;

// ---- Shape / ShapeN / Size / Rank --------------------------------------------------------

inline void shape_n_infer(infer_context& c) {
  dtype d = c.attr_dtype("out_type").value_or(dtype::int32);
  for (std::size_t k = 0; k < c.num_outputs() && k < c.num_inputs(); ++k) {
    auto r = c.input_rank(k);
    if (!r) {
      c.set_tensor(k, d, shape{dim()});
      continue;
    }
    c.set_tensor(k, d, shape{dim(static_cast<std::int64_t>(*r))});
    c.set_dims_value(k, c.input_shape(k).dims());
  }
}

inline void rank_infer(infer_context& c) {
  c.set_tensor(0, dtype::int32, shape::scalar());
  if (auto r = c.input_rank(0)) c.set_dims_value(0, {dim(static_cast<std::int64_t>(*r))});
}

// ---- Reshape / ExpandDims / Squeeze / Transpose ------------------------------------------

// TensorFlow's Reshape: one -1 is inferred, 0 is a size (not "copy the input's dim").
inline void reshape_infer(infer_context& c) {
  if (auto d = c.input_dims(1)) return ox::reshape_to(c, *d, true);
  if (auto n = vector_length(c, 1)) c.set_shape(0, unknown_dims_of_length(c, 1, *n));
}

inline void expand_dims_infer(infer_context& c) {
  if (auto d = c.input_ints(1)) {
    if (d->size() != 1) c.fail("dim must have one element, has " + std::to_string(d->size()));
    return ox::unsqueeze_infer(c);
  }
  if (auto r = c.input_rank(0)) c.set_shape(0, shape::unknown_dims(*r + 1));
}

inline void squeeze_infer(infer_context& c) {
  attribute_map a;
  auto dims = c.attr_ints("squeeze_dims");
  if (!dims || dims->empty()) dims = c.attr_ints("axis");
  if (dims && !dims->empty()) a.emplace("axes", *dims);
  on_view(c, input_ports(c, 0, 1), a, ox::squeeze_infer);
}

inline void transpose_infer(infer_context& c) {
  if (auto p = c.input_ints(1)) {
    attribute_map a{{"perm", *p}};
    on_view(c, input_ports(c, 0, 1), a, ox::transpose_infer);
    return;
  }
  if (auto r = c.input_rank(0)) c.set_shape(0, shape::unknown_dims(*r));
  else if (auto n = vector_length(c, 1)) c.set_shape(0, unknown_dims_of_length(c, 1, *n));
}

// ---- ConcatV2 / Concat --------------------------------------------------------------------

// The values are inputs [first, last); the axis is input `axis_at`.
inline void concat_like_infer(infer_context& c, std::size_t first, std::size_t last, std::size_t axis_at) {
  if (auto ax = c.input_int(axis_at)) {
    attribute_map a{{"axis", *ax}};
    on_view(c, input_ports(c, first, last), a, ox::concat_infer);
  } else {
    for (std::size_t i = first; i < last; ++i)
      if (auto r = c.input_rank(i)) {
        c.set_shape(0, shape::unknown_dims(*r));
        break;
      }
  }
  dtype_from_inputs(c, first, last);
}
inline void concat_like_value(infer_context& c, std::size_t first, std::size_t last, std::size_t axis_at) {
  if (!c.input_int(axis_at)) return;
  on_view(c, input_ports(c, first, last), attribute_map{}, ox::concat_value);
}
inline void concat_v2_infer(infer_context& c) {
  std::size_t n = c.num_inputs() - 1;
  concat_like_infer(c, 0, n, n);
}
inline void concat_v2_value(infer_context& c) {
  std::size_t n = c.num_inputs() - 1;
  concat_like_value(c, 0, n, n);
}

// ---- Pack / Unpack ------------------------------------------------------------------------

inline void pack_infer(infer_context& c) {
  std::optional<shape> s;
  for (std::size_t i = 0; i < c.num_inputs(); ++i) {
    shape si = c.input_shape(i);
    if (!s) {
      s = si;
      continue;
    }
    try {
      s = c.symbols().unify(*s, si);
    } catch (const error& e) {
      c.fail(e.message() + " in input " + std::to_string(i) + " (values to pack must have one shape)");
    }
  }
  if (!s || !s->has_rank()) return;
  auto r = static_cast<std::int64_t>(s->rank());
  std::int64_t a = c.attr_int("axis", 0);
  if (a < -r - 1 || a > r) c.fail("axis " + std::to_string(a) + " out of range for rank " + std::to_string(r + 1));
  if (a < 0) a += r + 1;
  std::vector<dim> out = s->dims();
  out.insert(out.begin() + a, dim(static_cast<std::int64_t>(c.num_inputs())));
  c.set_shape(0, shape(std::move(out)));
}

// Pack along `axis` of values with `sizes`: outer blocks of prod(sizes[:axis]), each the
// inputs' inner blocks of prod(sizes[axis:]) in turn.
inline void pack_value(infer_context& c) {
  const std::size_t n = c.num_inputs();
  if (n == 0) return;
  auto sizes = value_sizes(c, 0);
  if (!sizes) return;
  std::vector<std::vector<dim>> in(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto d = c.input_dims(i);
    auto si = value_sizes(c, i);
    if (!d || !si || *si != *sizes) return;
    in[i] = std::move(*d);
  }
  auto r = static_cast<std::int64_t>(sizes->size());
  std::int64_t a = c.attr_int("axis", 0);
  if (a < 0) a += r + 1;
  if (a < 0 || a > r) return;
  std::int64_t outer = num_elements(std::vector<std::int64_t>(sizes->begin(), sizes->begin() + a));
  std::int64_t inner = num_elements(std::vector<std::int64_t>(sizes->begin() + a, sizes->end()));
  if (outer * inner * static_cast<std::int64_t>(n) > c.max_value_elements()) return;
  std::vector<dim> out;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < n; ++i)
      for (std::int64_t k = 0; k < inner; ++k) out.push_back(in[i][static_cast<std::size_t>(o * inner + k)]);
  c.set_dims_value(0, std::move(out));
}

inline void unpack_infer(infer_context& c) {
  auto r = c.input_rank(0);
  if (!r) return;
  if (*r == 0) c.fail("cannot unpack a scalar");
  shape s = c.input_shape(0);
  std::size_t a = axis(c, c.attr_int("axis", 0), *r);
  c.unify(s[a], dim(static_cast<std::int64_t>(c.num_outputs())),
          "(axis " + std::to_string(a) + " against the " + std::to_string(c.num_outputs()) + " outputs)");
  std::vector<dim> out = s.dims();
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(a));
  for (std::size_t k = 0; k < c.num_outputs(); ++k) c.set_shape(k, shape(out));
}

inline void unpack_value(infer_context& c) {
  auto d = c.input_dims(0);
  auto sizes = value_sizes(c, 0);
  if (!d || !sizes || sizes->empty()) return;
  auto r = static_cast<std::int64_t>(sizes->size());
  std::int64_t a = c.attr_int("axis", 0);
  if (a < 0) a += r;
  if (a < 0 || a >= r) return;
  std::int64_t outer = num_elements(std::vector<std::int64_t>(sizes->begin(), sizes->begin() + a));
  std::int64_t inner = num_elements(std::vector<std::int64_t>(sizes->begin() + a + 1, sizes->end()));
  std::int64_t len = (*sizes)[static_cast<std::size_t>(a)];
  if (len != static_cast<std::int64_t>(c.num_outputs())) return;
  for (std::int64_t k = 0; k < len; ++k) {
    std::vector<dim> out;
    if (d->empty()) {  // (outer or inner is 0; the other may be huge)
      c.set_dims_value(static_cast<std::size_t>(k), std::move(out));
      continue;
    }
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) out.push_back((*d)[static_cast<std::size_t>((o * len + k) * inner + i)]);
    c.set_dims_value(static_cast<std::size_t>(k), std::move(out));
  }
}

// ---- Split / SplitV -----------------------------------------------------------------------

// Split(split_dim, value): num_split equal parts.
inline void split_infer(infer_context& c) {
  if (auto ax = c.input_int(0)) {
    attribute_map a{{"axis", *ax}};
    on_view(c, input_ports(c, 1, 2), a, ox::split_infer);
    // a symbolic dim that does not divide evenly as an affine dim (n / 2): the parts' own size
    shape s = c.input_shape(1);
    std::size_t at = s.has_rank() && s.rank() > 0 ? axis(c, *ax, s.rank()) : 0;
    if (s.has_rank() && s.rank() > 0 && s[at].is_symbolic())
      for (std::size_t k = 0; k < c.num_outputs(); ++k) {
        const type& t = c.output(k).type;
        if (!t.is_tensor() || !t.tensor().shape.has_rank() || !t.tensor().shape[at].is_unknown()) continue;
        shape o = t.tensor().shape;
        o[at] = c.fresh_dim("part");
        c.set_shape(k, o);
      }
  } else if (auto r = c.input_rank(1)) {
    for (std::size_t k = 0; k < c.num_outputs(); ++k) c.set_shape(k, shape::unknown_dims(*r));
  }
  for (std::size_t k = 0; k < c.num_outputs(); ++k)
    if (c.input_dtype(1) != dtype::undefined) c.set_dtype(k, c.input_dtype(1));
}

// SplitV(value, size_splits, split_dim): one size may be -1 (the rest).
inline void split_v_infer(infer_context& c) {
  auto r = c.input_rank(0);
  if (!r) return;
  shape s = c.input_shape(0);
  auto ax = c.input_int(2);
  if (!ax) {
    for (std::size_t k = 0; k < c.num_outputs(); ++k) c.set_shape(k, shape::unknown_dims(*r));
    return;
  }
  std::size_t a = axis(c, *ax, *r, "split_dim");
  auto sizes = c.input_dims(1);
  const std::size_t n = c.num_outputs();
  std::vector<dim> parts(n);
  if (sizes) {
    if (sizes->size() != n)
      c.fail("size_splits has " + std::to_string(sizes->size()) + " sizes for " + std::to_string(n) + " outputs");
    std::optional<std::size_t> rest;
    dim sum = dim(0);
    for (std::size_t k = 0; k < n; ++k) {
      const dim& x = (*sizes)[k];
      if (x.is_known() && x.value() == -1) {
        if (rest) c.fail("size_splits has more than one -1");
        rest = k;
        continue;
      }
      if (x.is_known() && x.value() < 0) c.fail("negative size " + std::to_string(x.value()) + " in size_splits");
      parts[k] = x;
      if (sum.is_known() && x.is_known() && !checked_add(sum.value(), x.value()))
        c.fail("size_splits sum to more than int64 holds (" + sum.to_string() + " + " + x.to_string() + " overflows)");
      sum = add_dims(sum, x);
    }
    if (rest) {
      dim left = sub_dims(s[a], sum);
      if (left.is_known() && left.value() < 0)
        c.fail("size_splits sum to " + sum.to_string() + ", more than axis " + std::to_string(a) + " of size " +
               s[a].to_string());
      parts[*rest] = left;
    } else if (s[a].is_known() && sum.is_known() && sum.value() != s[a].value()) {
      c.fail("size_splits sum to " + sum.to_string() + ", axis " + std::to_string(a) + " has " + s[a].to_string());
    } else if (!s[a].is_unknown() && !sum.is_unknown()) {
      c.unify(s[a], sum, "(size_splits against axis " + std::to_string(a) + ")");
    }
  }
  set_split_shapes(c, s, a, parts);
}

// ---- Slice / StridedSlice -----------------------------------------------------------------

// Slice(input, begin, size): size -1 takes the rest of the dim.
inline void slice_infer(infer_context& c) {
  auto r = c.input_rank(0);
  auto b = c.input_dims(1), sz = c.input_dims(2);
  if (!r) {
    if (auto n = vector_length(c, 1)) c.set_shape(0, unknown_dims_of_length(c, 1, *n));
    return;
  }
  shape s = c.input_shape(0);
  if (!b || !sz) {
    c.set_shape(0, shape::unknown_dims(*r));
    return;
  }
  if (b->size() != *r || sz->size() != *r)
    c.fail("begin and size must have one element per dim (" + std::to_string(*r) + "), have " +
           std::to_string(b->size()) + " and " + std::to_string(sz->size()));
  std::vector<dim> out(*r);
  for (std::size_t i = 0; i < *r; ++i) {
    const dim &bi = (*b)[i], &si = (*sz)[i];
    if (bi.is_known() && bi.value() < 0) c.fail("negative begin " + std::to_string(bi.value()) + " at dim " + std::to_string(i));
    if (si.is_known() && si.value() == -1) {
      out[i] = bi.is_unknown() ? dim() : sub_dims(s[i], bi);
    } else {
      if (si.is_known() && si.value() < -1) c.fail("invalid size " + std::to_string(si.value()) + " at dim " + std::to_string(i));
      out[i] = si;
    }
    if (out[i].is_known() && out[i].value() < 0) c.fail("begin " + bi.to_string() + " beyond dim " + std::to_string(i) + " of size " + s[i].to_string());
    dim end = add_dims(bi, out[i]);
    // (a known begin + size past INT64_MAX, which add_dims leaves unknown, is past any dim)
    if (bi.is_known() && out[i].is_known() && !checked_add(bi.value(), out[i].value()))
      c.fail("slice [" + bi.to_string() + ", " + bi.to_string() + " + " + out[i].to_string() + ") out of range for dim " +
             std::to_string(i) + " of size " + s[i].to_string() + " (its end overflows int64)");
    if (end.is_known() && s[i].is_known() && end.value() > s[i].value())
      c.fail("slice [" + bi.to_string() + ", " + end.to_string() + ") out of range for dim " + std::to_string(i) +
             " of size " + s[i].to_string());
  }
  c.set_shape(0, shape(std::move(out)));
}

inline void slice_value(infer_context& c) {
  if (c.input_rank(0) != std::optional<std::size_t>(1)) return;
  auto d = c.input_dims(0);
  auto b = c.input_ints(1);
  if (!d || !b || b->size() != 1) return;
  const type& t = c.output(0).type;
  if (!t.is_tensor() || !t.tensor().shape.is_fully_known() || t.tensor().shape.rank() != 1) return;
  if ((*b)[0] < 0) return;  // (a negative begin wrapped around to a huge start)
  auto start = static_cast<std::size_t>((*b)[0]);
  auto len = static_cast<std::size_t>(t.tensor().shape[0].value());
  if (start > d->size() || len > d->size() - start) return;
  c.set_dims_value(0, std::vector<dim>(d->begin() + static_cast<std::ptrdiff_t>(start),
                                       d->begin() + static_cast<std::ptrdiff_t>(start + len)));
}

// One entry of StridedSlice's dense spec, in output order.
struct strided_entry {
  enum kind_t { slice, new_axis, shrink } kind = slice;
  std::size_t in_dim = 0;  // the input dim (slice, shrink)
  dim begin, end;          // values (may be symbolic or unknown); ignored where masked
  std::optional<std::int64_t> stride;
  bool begin_masked = false, end_masked = false;
};

// TensorFlow's dense spec of a StridedSlice over an input of rank `rank`: the sparse spec of
// `n` entries (begin/end/strides, their contents where known) with the ellipsis expanded (an
// implicit one at the end when there is none), new axes and shrunk axes marked.
inline std::vector<strided_entry> strided_spec(infer_context& c, std::size_t rank, std::size_t n,
                                               const std::optional<std::vector<dim>>& b,
                                               const std::optional<std::vector<dim>>& e,
                                               const std::optional<std::vector<dim>>& st) {
  const std::int64_t bm = c.attr_int("begin_mask", 0), em = c.attr_int("end_mask", 0),
                     ell = c.attr_int("ellipsis_mask", 0), na = c.attr_int("new_axis_mask", 0),
                     sh = c.attr_int("shrink_axis_mask", 0);
  auto bit = [](std::int64_t mask, std::size_t i) { return i < 63 && ((mask >> i) & 1) != 0; };
  std::optional<std::size_t> ellipsis;
  for (std::size_t i = 0; i < n; ++i)
    if (bit(ell, i)) {
      if (ellipsis) c.fail("more than one ellipsis in ellipsis_mask " + std::to_string(ell));
      ellipsis = i;
    }
  const std::size_t total = ellipsis ? n : n + 1;  // an implicit ellipsis after the last entry
  const std::size_t at = ellipsis ? *ellipsis : n;
  std::size_t new_after = 0;
  for (std::size_t i = at + 1; i < n; ++i)
    if (bit(na, i)) ++new_after;
  const std::size_t consumed_after = total - at - 1 - new_after;
  std::vector<strided_entry> r;
  std::size_t full = 0;
  for (std::size_t i = 0; i < total; ++i) {
    if (i == at) {
      if (consumed_after > rank || rank - consumed_after < full)
        c.fail("slice spec of " + std::to_string(n) + " entries indexes more dims than the input's " + std::to_string(rank));
      for (std::size_t next = rank - consumed_after; full < next; ++full) {
        strided_entry x;
        x.in_dim = full;
        x.stride = 1;
        x.begin_masked = x.end_masked = true;
        r.push_back(x);
      }
      continue;
    }
    strided_entry x;
    if (bit(na, i)) {
      x.kind = strided_entry::new_axis;
      r.push_back(x);
      continue;
    }
    if (full >= rank)
      c.fail("slice spec of " + std::to_string(n) + " entries indexes more dims than the input's " + std::to_string(rank));
    x.kind = bit(sh, i) ? strided_entry::shrink : strided_entry::slice;
    x.in_dim = full++;
    if (b) x.begin = (*b)[i];
    if (e) x.end = (*e)[i];
    if (st && (*st)[i].is_known()) {
      x.stride = (*st)[i].value();
      if (*x.stride == 0) c.fail("stride 0 at index " + std::to_string(i));
    }
    x.begin_masked = bit(bm, i);
    x.end_masked = bit(em, i);
    r.push_back(x);
  }
  return r;
}

// Start and end of a slice entry as ONNX-style bounds for `slice_len` (masked bounds are the
// far ends); nullopt when a bound is not known.
inline std::optional<std::pair<std::int64_t, std::int64_t>> strided_bounds(const strided_entry& x) {
  constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min() / 4, hi = std::numeric_limits<std::int64_t>::max();
  const bool fwd = x.stride.value_or(1) > 0;
  std::int64_t b = 0, e = 0;
  if (x.begin_masked) b = fwd ? 0 : -1;
  else if (x.begin.is_known()) b = x.begin.value();
  else return std::nullopt;
  if (x.end_masked) e = fwd ? hi : lo;
  else if (x.end.is_known()) e = x.end.value();
  else return std::nullopt;
  return std::pair{b, e};
}

// The size of a slice entry over input dim `d` (known or symbolic).
inline dim strided_len(const strided_entry& x, const dim& d) {
  if (!x.stride) return dim();
  const std::int64_t st = *x.stride;
  if (x.begin_masked && x.end_masked && (st == 1 || st == -1)) return d;
  auto be = strided_bounds(x);
  if (d.is_known()) {
    if (!be) return dim();
    return dim(ox::slice_len(d.value(), be->first, be->second, st));
  }
  if (st != 1) return dim();
  if (be) return ox::slice_len_symbolic(d, be->first, be->second, st);
  // x[b:n] of a dim n: n - b
  if (!x.end_masked && x.end == d && !d.is_unknown()) {
    if (x.begin_masked) return d;
    if (x.begin.is_known()) {
      const std::int64_t b = x.begin.value();
      if (b >= 0) return sub_dims(d, x.begin);
      // x[-k:n] is the last k; -INT64_MIN overflows, and that start is before any dim's first
      return b == std::numeric_limits<std::int64_t>::min() ? d : dim(-b);
    }
  }
  return dim();
}

inline void strided_slice_infer(infer_context& c) {
  auto r = c.input_rank(0);
  auto b = c.input_dims(1), e = c.input_dims(2), st = c.input_dims(3);
  std::optional<std::size_t> n;
  for (std::size_t i = 1; i < 4 && !n; ++i) n = vector_length(c, i);
  if (!r || !n) return;
  for (const auto* v : {&b, &e, &st})
    if (*v && (*v)->size() != *n)
      c.fail("begin, end and strides must have one length, have " + std::to_string(b ? b->size() : *n) + ", " +
             std::to_string(e ? e->size() : *n) + " and " + std::to_string(st ? st->size() : *n));
  shape s = c.input_shape(0);
  std::vector<dim> out;
  for (const auto& x : strided_spec(c, *r, *n, b, e, st)) {
    if (x.kind == strided_entry::new_axis) {
      out.push_back(dim(1));
      continue;
    }
    const dim& d = s[x.in_dim];
    if (x.kind == strided_entry::shrink) {
      if (d.is_known() && x.begin.is_known()) {
        std::int64_t i = x.begin.value() < 0 ? x.begin.value() + d.value() : x.begin.value();
        if (i < 0 || i >= d.value())
          c.fail("index " + x.begin.to_string() + " out of range for dim " + std::to_string(x.in_dim) + " of size " +
                 d.to_string() + " (shrink_axis_mask)");
      }
      continue;
    }
    dim len = strided_len(x, d);
    // bounds known but the size not affine in the dim (x[:k] of a dim n is min(k, n)): a
    // size of its own, named after the node
    if (len.is_unknown() && !d.is_unknown() && x.stride && strided_bounds(x))
      len = c.fresh_dim("d" + std::to_string(out.size()));
    out.push_back(len);
  }
  c.set_shape(0, shape(std::move(out)));
}

// Elements of the slice of a known or incomplete value: the cartesian product, in row-major
// order, of the indices each input dim contributes.
inline void strided_slice_value(infer_context& c) {
  auto d = c.input_dims(0);
  auto sizes = value_sizes(c, 0);
  auto b = c.input_dims(1), e = c.input_dims(2), st = c.input_dims(3);
  if (!d || !sizes || !b || !e || !st || b->size() != e->size() || b->size() != st->size()) return;
  auto spec = strided_spec(c, sizes->size(), b->size(), b, e, st);
  std::vector<std::vector<std::int64_t>> idx(sizes->size());
  std::int64_t total = 1;
  for (const auto& x : spec) {
    if (x.kind == strided_entry::new_axis) continue;
    const std::int64_t n = (*sizes)[x.in_dim];
    auto& v = idx[x.in_dim];
    if (x.kind == strided_entry::shrink) {
      if (!x.begin.is_known()) return;
      std::int64_t i = x.begin.value() < 0 ? x.begin.value() + n : x.begin.value();
      if (i < 0 || i >= n) return;
      v.push_back(i);
    } else {
      auto be = strided_bounds(x);
      if (!be || !x.stride) return;
      const std::int64_t step = *x.stride;
      std::int64_t len = ox::slice_len(n, be->first, be->second, step);
      std::int64_t start = be->first < 0 ? be->first + n : be->first;
      start = step > 0 ? std::clamp<std::int64_t>(start, 0, n) : std::clamp<std::int64_t>(start, -1, n - 1);
      // (checked before the indices are listed: a value with no elements may have a dim of 2^40)
      if (len > c.max_value_elements()) return;
      for (std::int64_t k = 0; k < len; ++k) v.push_back(start + k * step);
    }
    total *= static_cast<std::int64_t>(v.size());
    if (total > c.max_value_elements()) return;
  }
  std::vector<dim> out;
  out.reserve(static_cast<std::size_t>(total));
  if (total == 0) return c.set_dims_value(0, {});
  std::vector<std::size_t> pos(idx.size(), 0);
  for (std::int64_t k = 0; k < total; ++k) {
    std::int64_t flat = 0;
    for (std::size_t j = 0; j < idx.size(); ++j) flat = flat * (*sizes)[j] + idx[j][pos[j]];
    out.push_back((*d)[static_cast<std::size_t>(flat)]);
    for (std::size_t j = idx.size(); j-- > 0;) {
      if (++pos[j] < idx[j].size()) break;
      pos[j] = 0;
    }
  }
  c.set_dims_value(0, std::move(out));
}

// ---- Fill / Range / Tile / BroadcastTo / Pad ----------------------------------------------

// Fill(dims, value): the shape is dims' (known or incomplete) contents.
inline void fill_infer(infer_context& c) {
  on_view(c, input_ports(c, 0, 1), attribute_map{}, ox::constant_of_shape_infer);
  c.set_dtype(0, c.input_dtype(1));
  if (auto rv = c.input_rank(1); rv && *rv != 0) c.fail("value must be a scalar, got " + c.input_shape(1).to_string());
}
inline void fill_value(infer_context& c) {
  const known_value& v = c.input_value(1);
  if (!v.is_known()) return;
  attribute_map a{{"value", v.value}};
  on_view(c, input_ports(c, 0, 1), a, ox::constant_of_shape_value);
}

// Pad(input, paddings [rank, 2]): ONNX's pads are [begins..., ends...].
// SpaceToBatchND (to_batch) / BatchToSpaceND: [N, s_1..s_M, rest] <-> [N * prod(block),
// (s_i + pads) / block_i, rest]; with crops on the way back.
inline void space_batch_infer(infer_context& c, bool to_batch) {
  auto block = c.input_ints(1);
  auto pc = c.input_ints(2);
  shape x = c.input_shape(0);
  if (!x.has_rank() || !block) {
    if (x.has_rank()) c.set_shape(0, shape::unknown_dims(x.rank()));
    return;
  }
  const std::size_t m = block->size();
  if (m == 0 || x.rank() < m + 1)
    c.fail("input " + x.to_string() + " needs a batch dim and " + std::to_string(m) + " spatial dims");
  if (pc && pc->size() != 2 * m)
    c.fail(std::string(to_batch ? "paddings" : "crops") + " has " + std::to_string(pc->size()) + " values for " +
           std::to_string(m) + " spatial dims");
  std::int64_t blocks = 1;
  for (auto b : *block) {
    if (b < 1) c.fail("block_shape values must be positive");
    blocks = mul_or_throw(blocks, b);
  }
  std::vector<dim> out(x.dims());
  const dim& n = x[0];
  if (to_batch) out[0] = n * blocks;
  else {
    if (n.is_known() && n.value() % blocks != 0)
      c.fail("batch " + std::to_string(n.value()) + " is not a multiple of the block count " + std::to_string(blocks));
    out[0] = n / blocks;  // exact (a symbolic batch times the blocks divides back), else unknown
  }
  for (std::size_t i = 0; i < m; ++i) {
    const dim& s = x[i + 1];
    if (!pc || !s.is_known()) {
      out[i + 1] = dim();
      continue;
    }
    if ((*pc)[2 * i] < 0 || (*pc)[2 * i + 1] < 0) c.fail(std::string(to_batch ? "paddings" : "crops") + " must be non-negative");
    const std::int64_t a = add_or_throw((*pc)[2 * i], (*pc)[2 * i + 1]);
    if (to_batch) {
      const std::int64_t padded = add_or_throw(s.value(), a);
      if (padded % (*block)[i] != 0)
        c.fail("padded spatial dim " + std::to_string(i + 1) + " (" + std::to_string(padded) +
               ") is not a multiple of the block size " + std::to_string((*block)[i]));
      out[i + 1] = dim(padded / (*block)[i]);
    } else {
      const std::int64_t full = mul_or_throw(s.value(), (*block)[i]);
      if (full < a) c.fail("crops are larger than spatial dim " + std::to_string(i + 1));
      out[i + 1] = dim(full - a);
    }
  }
  c.set_shape(0, shape(std::move(out)));
}

inline void pad_infer(infer_context& c) {
  auto p = c.input_ints(1);
  if (!p) {
    if (auto r = c.input_rank(0)) c.set_shape(0, shape::unknown_dims(*r));
    return;
  }
  if (auto r = c.input_rank(0); r && p->size() != 2 * *r)
    c.fail("paddings has " + std::to_string(p->size()) + " values for rank " + std::to_string(*r) + " (expected [" +
           std::to_string(*r) + ", 2])");
  std::vector<std::int64_t> pads(p->size());
  const std::size_t h = p->size() / 2;
  const shape& x = c.input_shape(0);
  for (std::size_t i = 0; i < h; ++i) {
    pads[i] = (*p)[2 * i];
    pads[i + h] = (*p)[2 * i + 1];
    // TensorFlow's paddings only add (ONNX's negative pads crop); a padded size past INT64_MAX,
    // which ONNX's Pad leaves unknown, is not a size
    if (pads[i] < 0 || pads[i + h] < 0)
      c.fail("paddings must be non-negative, got " + std::to_string(pads[i]) + " and " + std::to_string(pads[i + h]) +
             " for dim " + std::to_string(i));
    if (x.has_rank() && i < x.rank() && x[i].is_known()) {
      const auto both = checked_add(pads[i], pads[i + h]);
      if (!both || !checked_add(x[i].value(), *both))
        c.fail("dim " + std::to_string(i) + " of size " + x[i].to_string() + " padded by " + std::to_string(pads[i]) +
               " and " + std::to_string(pads[i + h]) + " overflows int64");
    }
  }
  attribute_map a{{"pads", pads}};
  on_view(c, input_ports(c, 0, 1), a, ox::pad_infer);
}

// ---- Gather family ------------------------------------------------------------------------

// GatherV2(params, indices, axis) with batch_dims: params[:axis] + indices[batch_dims:] +
// params[axis+1:]; Gather (v1) has axis 0.
inline void gather_infer(infer_context& c) {
  std::optional<std::int64_t> ax = c.num_inputs() > 2 ? c.input_int(2) : std::optional<std::int64_t>(0);
  auto r = c.input_rank(0);
  shape p = c.input_shape(0), idx = c.input_shape(1);
  if (!r || !idx.has_rank()) return;
  if (*r == 0) c.fail("cannot gather from a scalar");
  std::int64_t bd = c.attr_int("batch_dims", 0);
  if (bd < 0) bd += static_cast<std::int64_t>(idx.rank());
  if (!ax) {  // the axis is computed at run time: only the rank is known
    if (bd >= 0 && static_cast<std::size_t>(bd) <= idx.rank())
      c.set_shape(0, shape::unknown_dims(*r - 1 + idx.rank() - static_cast<std::size_t>(bd)));
    return;
  }
  std::size_t a = axis(c, *ax, *r);
  if (bd < 0 || static_cast<std::size_t>(bd) > idx.rank() || static_cast<std::size_t>(bd) > a)
    c.fail("batch_dims " + std::to_string(c.attr_int("batch_dims", 0)) + " out of range (axis " + std::to_string(a) +
           ", indices rank " + std::to_string(idx.rank()) + ")");
  for (std::size_t i = 0; i < static_cast<std::size_t>(bd); ++i)
    c.unify(p[i], idx[i], "(batch dim " + std::to_string(i) + " of params and indices)");
  std::vector<dim> out(p.dims().begin(), p.dims().begin() + static_cast<std::ptrdiff_t>(a));
  out.insert(out.end(), idx.dims().begin() + bd, idx.dims().end());
  out.insert(out.end(), p.dims().begin() + static_cast<std::ptrdiff_t>(a) + 1, p.dims().end());
  c.set_shape(0, shape(std::move(out)));
}
inline void gather_value(infer_context& c) {
  if (c.num_inputs() > 2 && c.input_int(2).value_or(1) != 0) return;
  on_view(c, input_ports(c, 0, 2), attribute_map{}, ox::gather_value);
}

// Where(condition): the coordinates of the true elements, [count, rank] int64.
inline void where_infer(infer_context& c) {
  auto r = c.input_rank(0);
  dim count = nonzero_count(c, "count");
  c.set_tensor(0, dtype::int64, shape{count, r ? dim(static_cast<std::int64_t>(*r)) : dim()});
}

// BroadcastArgs(s0, s1): the broadcast of two shapes given as vectors; its value is the
// broadcast of their (known or symbolic) elements.
inline void broadcast_args_infer(infer_context& c) {
  auto a = vector_length(c, 0), b = vector_length(c, 1);
  c.set_shape(0, shape{a && b ? dim(static_cast<std::int64_t>(std::max(*a, *b))) : dim()});
}
inline void broadcast_args_value(infer_context& c) {
  auto a = c.input_dims(0), b = c.input_dims(1);
  if (!a || !b) return;
  shape r;
  try {
    r = broadcast_shapes({shape(*a), shape(*b)}, c.symbols());
  } catch (const error& e) {
    c.fail(e.message() + " (shapes " + shape(*a).to_string() + " and " + shape(*b).to_string() + ")");
  }
  c.set_dims_value(0, r.dims());
}

// Unique(x) / UniqueWithCounts(x): the distinct elements (a size of their own), per element its
// index among them, and (WithCounts) each one's count.
inline void unique_infer(infer_context& c) {
  if (auto r = c.input_rank(0); r && *r != 1) c.fail("x must be 1-D, got " + c.input_shape(0).to_string());
  const dim count = c.fresh_dim("count");
  c.set_shape(0, shape{count});
  c.set_shape(1, c.input_shape(0));
  if (c.num_outputs() > 2) c.set_shape(2, shape{count});  // UniqueWithCounts' counts
}

// ScatterNd(indices, updates, shape): the shape input's value.
inline void scatter_nd_infer(infer_context& c) { set_shape_from_input(c, 0, 2); }

// The dims of `data` after the first `skip`, after a leading `first` (unknown rank: unknown).
inline void leading_dim_then_rest(infer_context& c, dim first, std::size_t skip) {
  const shape x = c.input_shape(0);
  if (!x.has_rank()) return;
  if (x.rank() < skip) c.fail("data has rank " + std::to_string(x.rank()) + ", less than segment_ids' " + std::to_string(skip));
  std::vector<dim> d{std::move(first)};
  d.insert(d.end(), x.dims().begin() + static_cast<std::ptrdiff_t>(skip), x.dims().end());
  c.set_shape(0, shape(std::move(d)));
}

// UnsortedSegment*(data, segment_ids, num_segments): [num_segments] + data.shape[rank(ids):].
inline void unsorted_segment_infer(infer_context& c) {
  auto r = c.input_rank(1);
  if (!r) return;
  auto n = c.input_dims(2);
  leading_dim_then_rest(c, n && n->size() == 1 ? (*n)[0] : c.fresh_dim("segments"), *r);
}

// Segment*(data, segment_ids): [max id + 1] + data.shape[1:].
inline void segment_infer(infer_context& c) {
  if (auto r = c.input_rank(1); r && *r != 1) c.fail("segment_ids must be 1-D, got " + c.input_shape(1).to_string());
  leading_dim_then_rest(c, c.fresh_dim("segments"), 1);
}

// Bincount(arr, size, weights) / DenseBincount(input, size, weights): [size], or [rows, size].
inline void bincount_infer(infer_context& c) {
  auto n = c.input_dims(1);
  const dim size = n && n->size() == 1 ? (*n)[0] : c.fresh_dim("size");
  const shape x = c.input_shape(0);
  if (x.has_rank() && x.rank() == 2) c.set_shape(0, shape{x[0], size});
  else c.set_shape(0, shape{size});
}

// DepthToSpace / SpaceToDepth (block_size b, NHWC or NCHW): depth / (b*b) and height, width
// times b, or the inverse.
inline void depth_space_infer(infer_context& c, bool to_space) {
  const shape x = c.input_shape(0);
  const std::int64_t b = c.attr_int("block_size", 0);
  if (b < 2) c.fail("block_size must be at least 2, got " + std::to_string(b));
  const auto bb = checked_mul(b, b);  // (b * b was a signed overflow past 3037000499)
  if (!bb) c.fail("block_size " + std::to_string(b) + " is too large (its square overflows int64)");
  const std::string fmt = c.attr_string("data_format", "NHWC");
  if (fmt != "NHWC" && fmt != "NCHW") c.fail("data_format must be NHWC or NCHW, got '" + fmt + "'");
  if (!x.has_rank()) return c.set_shape(0, shape::unknown_dims(4));
  if (x.rank() != 4) c.fail("input must be 4-D, got " + x.to_string());
  const bool nchw = fmt == "NCHW";
  const std::size_t h = nchw ? 2 : 1, w = h + 1, ch = nchw ? 1 : 3;
  std::vector<dim> out = x.dims();
  auto scale = [&](std::size_t k, bool up) {
    if (!x[k].is_known()) return void(out[k] = dim());
    const std::int64_t v = x[k].value();
    if (up) {
      if (v > std::numeric_limits<std::int64_t>::max() / b) c.fail("dim " + std::to_string(k) + " times block_size overflows");
      out[k] = dim(v * b);
    } else {
      if (v % b != 0) c.fail("dim " + std::to_string(k) + " (" + std::to_string(v) + ") is not a multiple of block_size " + std::to_string(b));
      out[k] = dim(v / b);
    }
  };
  scale(h, to_space);
  scale(w, to_space);
  if (!x[ch].is_known()) out[ch] = dim();
  else if (to_space) {
    if (x[ch].value() % *bb != 0)
      c.fail("depth " + std::to_string(x[ch].value()) + " is not a multiple of block_size^2 = " + std::to_string(*bb));
    out[ch] = dim(x[ch].value() / *bb);
  } else {
    if (x[ch].value() > std::numeric_limits<std::int64_t>::max() / *bb) c.fail("depth times block_size^2 overflows");
    out[ch] = dim(x[ch].value() * *bb);
  }
  c.set_shape(0, shape(out));
}

// [a fresh first dim] + data's dims after the first `skip` (unknown rank: unknown).
inline void fresh_rows_then(infer_context& c, std::size_t port, const shape& data, std::optional<std::size_t> skip,
                            const char* name) {
  if (!data.has_rank() || !skip) return c.set_shape(port, shape());
  if (*skip > data.rank()) c.fail("data has rank " + std::to_string(data.rank()) + ", less than its indices' " + std::to_string(*skip));
  std::vector<dim> out{c.fresh_dim(name)};
  out.insert(out.end(), data.dims().begin() + static_cast<std::ptrdiff_t>(*skip), data.dims().end());
  c.set_shape(port, shape(out));
}

// DynamicStitch / ParallelDynamicStitch(indices_0..N-1, data_0..N-1): [max index + 1] +
// data_0's dims after indices_0's rank.
inline void dynamic_stitch_infer(infer_context& c) {
  if (c.num_inputs() == 0 || c.num_inputs() % 2 != 0)
    c.fail("needs N indices and N data inputs, got " + std::to_string(c.num_inputs()) + " inputs");
  const std::size_t n = c.num_inputs() / 2;
  fresh_rows_then(c, 0, c.input_shape(n), c.input_rank(0), "stitched");
}

// DynamicPartition(data, partitions): num_partitions outputs, each [its count] + data's dims
// after partitions' rank.
inline void dynamic_partition_infer(infer_context& c) {
  const std::int64_t n = c.attr_int("num_partitions", -1);
  if (n < 1) c.fail("num_partitions must be at least 1, got " + std::to_string(n));
  if (static_cast<std::size_t>(n) != c.num_outputs())
    c.fail("num_partitions is " + std::to_string(n) + " but the node has " + std::to_string(c.num_outputs()) + " outputs");
  for (std::size_t k = 0; k < c.num_outputs(); ++k) fresh_rows_then(c, k, c.input_shape(0), c.input_rank(1), "part");
}

// SparseToDense(indices, output_shape, values, default_value): output_shape's value.
inline void sparse_to_dense_infer(infer_context& c) { set_shape_from_input(c, 0, 1); }

// SparseSegment{Sum,Mean,SqrtN}[WithNumSegments](data, indices, segment_ids[, num_segments]):
// [num_segments, or last id + 1] + data's dims after the first.
inline void sparse_segment_infer(infer_context& c) {
  const shape data = c.input_shape(0);
  if (data.has_rank() && data.rank() < 1) c.fail("data must have rank >= 1");
  if (!data.has_rank()) return c.set_shape(0, shape());
  std::vector<dim> out = data.dims();
  const auto k = c.num_inputs() > 3 ? c.input_int(3) : std::nullopt;
  out[0] = k ? dim(*k) : c.fresh_dim("segments");
  c.set_shape(0, shape(out));
}

// SparseReshape(input_indices [N, R], input_shape [R], new_shape [R']): [N, R'] and [R'] (the
// new shape with its -1 resolved: new_shape's value when it has no -1).
inline void sparse_reshape_infer(infer_context& c) {
  const shape ind = c.input_shape(0);
  if (ind.has_rank() && ind.rank() != 2) c.fail("input_indices must be a matrix, got " + ind.to_string());
  const shape ns = c.input_shape(2);
  if (ns.has_rank() && ns.rank() != 1) c.fail("new_shape must be a vector, got " + ns.to_string());
  const dim n = ind.has_rank() ? ind[0] : c.fresh_dim("nnz");
  const dim r = ns.has_rank() ? ns[0] : c.fresh_dim("rank");
  c.set_shape(0, shape{n, r});
  c.set_shape(1, shape{r});
  if (auto v = c.input_ints(2); v && std::find(v->begin(), v->end(), -1) == v->end()) {
    std::vector<dim> d(v->begin(), v->end());
    c.set_dims_value(1, d);
  }
}

// SparseFillEmptyRows(indices [N, R], values [N], dense_shape [R], default_value): the entries
// with one more per empty row ([M, R], [M]), empty_row_indicator [dense_shape[0]],
// reverse_index_map [N].
inline void sparse_fill_empty_rows_infer(infer_context& c) {
  const shape ind = c.input_shape(0);
  if (ind.has_rank() && ind.rank() != 2) c.fail("indices must be a matrix, got " + ind.to_string());
  if (auto r = c.input_rank(3); r && *r != 0) c.fail("default_value must be a scalar, got " + c.input_shape(3).to_string());
  const dim m = c.fresh_dim("entries");
  c.set_shape(0, shape{m, ind.has_rank() ? ind[1] : c.fresh_dim("rank")});
  c.set_shape(1, shape{m});
  const auto d = c.input_dims(2);
  c.set_shape(2, shape{d && !d->empty() ? (*d)[0] : c.fresh_dim("rows")});
  c.set_shape(3, shape{ind.has_rank() ? ind[0] : c.fresh_dim("nnz")});
}

}  // namespace detail::tf_ops
}  // namespace gpass

inline void gpass::register_tf_shape_ops(op_registry& r) {
  using namespace detail::tf_ops;
  const auto i32 = dtype::int32;

  tf_op("Shape").in("input:T").out("output:out_type").type_attr("T").type_attr("out_type", i32)
      .infer(ox::shape_infer).doc("The shape of `input` as a vector (known or incomplete value).").add(r);
  tf_op("ShapeN").in("input*:T").out("output*:out_type").type_attr("T").type_attr("out_type", i32).opt("N", "int")
      .infer(shape_n_infer).doc("The shapes of the N inputs.").add(r);
  tf_op("Size").in("input:T").out("output:out_type").type_attr("T").type_attr("out_type", i32).infer(ox::size_infer)
      .doc("The number of elements of `input`.").add(r);
  tf_op("Rank").in("input:T").out("output:i32").type_attr("T").infer(rank_infer).doc("The rank of `input`.").add(r);

  tf_op("Reshape").in("tensor:T").in("shape:Tshape").out("output:T").type_attr("T").type_attr("Tshape", i32)
      .infer(reshape_infer).propagate(ox::same_elements_value).add(r);
  tf_op("ExpandDims").in("input:T").in("dim:Tdim").out("output:T").type_attr("T").type_attr("Tdim", i32)
      .infer(expand_dims_infer).propagate(ox::same_elements_value).add(r);
  tf_op("Squeeze").in("input:T").out("output:T").type_attr("T").attr("squeeze_dims", "ints", std::vector<std::int64_t>{})
      .infer(squeeze_infer).propagate(ox::same_elements_value).add(r);
  tf_op("Transpose").in("x:T").in("perm:Tperm").out("y:T").type_attr("T").type_attr("Tperm", i32)
      .infer(transpose_infer).add(r);

  tf_op("ConcatV2").in("values~:T").out("output:T").type_attr("T").type_attr("Tidx", i32).opt("N", "int")
      .num_inputs(2, op_schema::unbounded).infer(concat_v2_infer).propagate(concat_v2_value)
      .doc("The N values concatenated along the axis given by the last input.").add(r);
  tf_op("Concat").in("concat_dim:i32").in("values*:T").out("output:T").type_attr("T").opt("N", "int")
      .infer([](infer_context& c) { concat_like_infer(c, 1, c.num_inputs(), 0); })
      .propagate([](infer_context& c) { concat_like_value(c, 1, c.num_inputs(), 0); }).add(r);
  tf_op("Pack").in("values*:T").out("output:T").type_attr("T").opt("N", "int").attr("axis", "int", std::int64_t{0})
      .infer(pack_infer).propagate(pack_value).add(r);
  tf_op("Unpack").in("value:T").out("output*:T").type_attr("T").opt("num", "int").attr("axis", "int", std::int64_t{0})
      .infer(unpack_infer).propagate(unpack_value).add(r);
  tf_op("Split").in("split_dim:i32").in("value:T").out("output*:T").type_attr("T").opt("num_split", "int")
      .infer(split_infer)
      .propagate([](infer_context& c) {
        if (auto a = c.input_int(0); a && (*a == 0 || *a == -1)) on_view(c, input_ports(c, 1, 2), attribute_map{}, ox::split_value);
      })
      .add(r);
  tf_op("SplitV").in("value:T").in("size_splits:Tlen").in("split_dim:i32").out("output*:T").type_attr("T")
      .type_attr("Tlen", dtype::int64).opt("num_split", "int").infer(split_v_infer)
      .propagate([](infer_context& c) {
        if (auto a = c.input_int(2); a && (*a == 0 || *a == -1))
          on_view(c, input_ports(c, 0, 1), attribute_map{}, ox::split_value);
      })
      .add(r);

  tf_op("Slice").in("input:T").in("begin:Index").in("size:Index").out("output:T").type_attr("T").type_attr("Index")
      .infer(slice_infer).propagate(slice_value).add(r);
  tf_op("StridedSlice").in("input:T").in("begin:Index").in("end:Index").in("strides:Index").out("output:T")
      .type_attr("T").type_attr("Index").attr("begin_mask", "int", std::int64_t{0}).attr("end_mask", "int", std::int64_t{0})
      .attr("ellipsis_mask", "int", std::int64_t{0}).attr("new_axis_mask", "int", std::int64_t{0})
      .attr("shrink_axis_mask", "int", std::int64_t{0}).infer(strided_slice_infer).propagate(strided_slice_value)
      .doc("NumPy-style strided slicing with TensorFlow's masks.").add(r);

  tf_op("Fill").in("dims:index_type").in("value:T").out("output:T").type_attr("T").type_attr("index_type", i32)
      .infer(fill_infer).propagate(fill_value).doc("A tensor of shape `dims` filled with `value`.").add(r);
  tf_op("Range").in("start:Tidx").in("limit:Tidx").in("delta:Tidx").out("output:Tidx").type_attr("Tidx", i32)
      .infer(ox::range_infer).propagate(ox::range_value).add(r);
  tf_op("Tile").in("input:T").in("multiples:Tmultiples").out("output:T").type_attr("T").type_attr("Tmultiples", i32)
      .infer(ox::tile_infer).add(r);
  tf_op("BroadcastTo").in("input:T").in("shape:Tidx").out("output:T").type_attr("T").type_attr("Tidx", i32)
      .infer(ox::expand_infer).propagate(ox::expand_value).add(r);
  tf_op("Pad").in("input:T").in("paddings:Tpaddings").out("output:T").type_attr("T").type_attr("Tpaddings", i32)
      .infer(pad_infer).add(r);
  tf_op("PadV2").in("input:T").in("paddings:Tpaddings").in("constant_values:T").out("output:T").type_attr("T")
      .type_attr("Tpaddings", i32).infer(pad_infer).add(r);
  tf_op("MirrorPad").in("input:T").in("paddings:Tpaddings").out("output:T").type_attr("T").type_attr("Tpaddings", i32)
      .req("mode", "string").infer(pad_infer).add(r);
  tf_op("SpaceToBatchND").in("input:T").in("block_shape:Tblock_shape").in("paddings:Tpaddings").out("output:T")
      .type_attr("T").type_attr("Tblock_shape", i32).type_attr("Tpaddings", i32)
      .infer([](infer_context& c) { space_batch_infer(c, true); })
      .doc("Blocks of the spatial dims (zero-padded first) moved into the batch dim (what Keras' dilated convolutions freeze to).")
      .add(r);
  tf_op("BatchToSpaceND").in("input:T").in("block_shape:Tblock_shape").in("crops:Tcrops").out("output:T")
      .type_attr("T").type_attr("Tblock_shape", i32).type_attr("Tcrops", i32)
      .infer([](infer_context& c) { space_batch_infer(c, false); })
      .doc("The inverse of SpaceToBatchND: batch blocks back into the spatial dims, then cropped.")
      .add(r);

  tf_op("GatherV2").in("params:Tparams").in("indices:Tindices").in("axis:Taxis").out("output:Tparams")
      .type_attr("Tparams").type_attr("Tindices").type_attr("Taxis").attr("batch_dims", "int", std::int64_t{0})
      .infer(gather_infer).propagate(gather_value).add(r);
  tf_op("Gather").in("params:Tparams").in("indices:Tindices").out("output:Tparams").type_attr("Tparams")
      .type_attr("Tindices").attr("validate_indices", "bool", true).infer(gather_infer).propagate(gather_value).add(r);
  tf_op("GatherNd").in("params:Tparams").in("indices:Tindices").out("output:Tparams").type_attr("Tparams")
      .type_attr("Tindices").infer(ox::gather_nd_infer).add(r);

  tf_op("BroadcastArgs").in("s0:T").in("s1:T").out("r0:T").type_attr("T", i32).infer(broadcast_args_infer)
      .propagate(broadcast_args_value).add(r);
  tf_op("Unique").in("x:T").out("y:T").out("idx:out_idx").type_attr("T").type_attr("out_idx", i32)
      .infer(unique_infer).add(r);
  tf_op("UniqueWithCounts").in("x:T").out("y:T").out("idx:out_idx").out("count:out_idx").type_attr("T")
      .type_attr("out_idx", i32).infer(unique_infer).add(r);
  tf_op("InvertPermutation").in("x:T").out("y:T").type_attr("T", i32).infer(shape_as_input0).add(r);
  tf_op("ClipByValue").in("t:T").in("clip_value_min:T").in("clip_value_max:T").out("output:T").type_attr("T")
      .infer(shape_as_input0).add(r);
  tf_op("MatrixBandPart").in("input:T").in("num_lower:Tindex").in("num_upper:Tindex").out("band:T").type_attr("T")
      .type_attr("Tindex", dtype::int64).infer(shape_as_input0).add(r);
  for (const char* n : {"TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub", "TensorScatterMax", "TensorScatterMin"})
    tf_op(n).in("tensor:T").in("indices:Tindices").in("updates:T").out("output:T").type_attr("T").type_attr("Tindices")
        .infer(shape_as_input0).add(r);
  tf_op("Where").in("input:T").out("index:i64").type_attr("T").infer(where_infer).add(r);
  tf_op("ScatterNd").in("indices:Tindices").in("updates:T").in("shape:Tindices").out("output:T").type_attr("T")
      .type_attr("Tindices").infer(scatter_nd_infer).doc("Zeros of `shape` with `updates` added at `indices` (duplicates add up).").add(r);
  for (const char* n : {"UnsortedSegmentSum", "UnsortedSegmentProd", "UnsortedSegmentMax", "UnsortedSegmentMin"})
    tf_op(n).in("data:T").in("segment_ids:Tindices").in("num_segments:Tnumsegments").out("output:T").type_attr("T")
        .type_attr("Tindices").type_attr("Tnumsegments", i32).infer(unsorted_segment_infer).add(r);
  for (const char* n : {"SegmentSum", "SegmentMean", "SegmentProd", "SegmentMax", "SegmentMin"})
    tf_op(n).in("data:T").in("segment_ids:Tindices").out("output:T").type_attr("T").type_attr("Tindices")
        .infer(segment_infer).add(r);
  tf_op("ReverseSequence").in("input:T").in("seq_lengths:Tlen").out("output:T").type_attr("T")
      .type_attr("Tlen", dtype::int64).attr("seq_dim", "int", std::int64_t{0}).attr("batch_dim", "int", std::int64_t{0})
      .infer(shape_as_input0).add(r);
  tf_op("Bincount").in("arr:i32").in("size:i32").in("weights:T").out("bins:T").type_attr("T").infer(bincount_infer).add(r);
  tf_op("DenseBincount").in("input:Tidx").in("size:Tidx").in("weights:T").out("output:T").type_attr("Tidx").type_attr("T")
      .attr("binary_output", "bool", false).infer(bincount_infer).add(r);
  tf_op("OneHot").in("indices:TI").in("depth:i32").in("on_value:T").in("off_value:T").out("output:T").type_attr("T")
      .type_attr("TI", dtype::int64).attr("axis", "int", std::int64_t{-1}).infer(ox::onehot_infer).add(r);
  tf_op("ReverseV2").in("tensor:T").in("axis:Tidx").out("output:T").type_attr("T").type_attr("Tidx", i32)
      .infer(shape_as_input0).add(r);
  for (const char* n : {"Cumsum", "Cumprod"})
    tf_op(n).in("x:T").in("axis:Tidx").out("out:T").type_attr("T").type_attr("Tidx", i32)
        .attr("exclusive", "bool", false).attr("reverse", "bool", false).infer(shape_as_input0).add(r);
  tf_op("Roll").in("input:T").in("shift:Tshift").in("axis:Taxis").out("output:T").type_attr("T").type_attr("Tshift")
      .type_attr("Taxis").infer(shape_as_input0).add(r);
  for (const bool to_space : {true, false})
    tf_op(to_space ? "DepthToSpace" : "SpaceToDepth").in("input:T").out("output:T").type_attr("T").opt("block_size", "int")
        .attr("data_format", "string", "NHWC").infer([to_space](infer_context& c) { depth_space_infer(c, to_space); }).add(r);
  for (const char* n : {"DynamicStitch", "ParallelDynamicStitch"})
    tf_op(n).in("inputs~:T").out("merged:T").type_attr("T").opt("N", "int").num_inputs(2, op_schema::unbounded)
        .infer(dynamic_stitch_infer).doc("indices_0..N-1 (int32) then data_0..N-1: merged[indices_i[...]] = data_i[...]; the rest 0.")
        .add(r);
  tf_op("DynamicPartition").in("data:T").in("partitions:i32").out("outputs*:T").type_attr("T").opt("num_partitions", "int")
      .infer(dynamic_partition_infer).add(r);
  tf_op("SparseToDense").in("sparse_indices:Tindices").in("output_shape:Tindices").in("sparse_values:T")
      .in("default_value:T").out("dense:T").type_attr("T").type_attr("Tindices").attr("validate_indices", "bool", true)
      .infer(sparse_to_dense_infer).add(r);
  tf_op("SparseReshape").in("input_indices:i64").in("input_shape:i64").in("new_shape:i64").out("output_indices:i64")
      .out("output_shape:i64").infer(sparse_reshape_infer)
      .doc("the COO indices of a sparse tensor of input_shape, reshaped row-major to new_shape (one -1 inferred)").add(r);
  tf_op("SparseFillEmptyRows").in("indices:i64").in("values:T").in("dense_shape:i64").in("default_value:T")
      .out("output_indices:i64").out("output_values:T").out("empty_row_indicator:bool").out("reverse_index_map:i64")
      .type_attr("T").infer(sparse_fill_empty_rows_infer)
      .doc("entries by row (input order within a row), an entry [row, 0, ...] = default_value for each empty row").add(r);
  for (const char* n : {"SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN"}) {
    for (const bool with_num : {false, true}) {
      auto o = tf_op(with_num ? std::string(n) + "WithNumSegments" : std::string(n));
      o.in("data:T").in("indices:Tidx").in("segment_ids:Tsegmentids");
      if (with_num) o.in("num_segments:Tnumsegments").type_attr("Tnumsegments", i32);
      o.out("output:T").type_attr("T").type_attr("Tidx", i32).type_attr("Tsegmentids", i32)
          .attr("sparse_gradient", "bool", false).infer(sparse_segment_infer).add(r);
    }
  }
}

// the definitions of the ONNX functions used above (see tf/detail/onnx_functions.hpp)
#include <gpass/ops/onnx/shape_ops.hpp>
