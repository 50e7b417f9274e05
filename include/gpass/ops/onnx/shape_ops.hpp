// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file shape_ops.hpp
/// ONNX ops that compute or rearrange shapes: Constant, Shape, Size, Reshape, Flatten,
/// Squeeze, Unsqueeze, Concat, Split, Slice, Gather(Elements/ND), Transpose, Expand, Tile,
/// Pad, Range, ConstantOfShape, EyeLike, NonZero, Unique, Compress, OneHot, TopK,
/// DepthToSpace, SpaceToDepth, Identity and the shape-preserving Scatter/CumSum/Trilu/
/// ReverseSequence, with value propagation where shapes are computed (seed 000's
/// "constant propagation in type inference").

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/ops/onnx/common.hpp>

namespace gpass {

/// Registers the ONNX shape ops into `r` (see the file comment).
void register_onnx_shape_ops(op_registry& r);

namespace detail::onnx_ops {

using namespace gpass::onnx_shape;

// ---- value helpers ------------------------------------------------------------------------

// Output 0's contents are input 0's elements in the same order (Reshape, Squeeze, Identity...).
inline void same_elements_value(infer_context& c) {
  const known_value& v = c.input_value(0);
  if (v.empty()) return;
  const type& ot = c.output(0).type;
  if (v.is_known()) {
    if (ot.is_tensor() && ot.tensor().shape.is_fully_known()) {
      auto sizes = ot.tensor().shape.sizes();
      if (num_elements(sizes) != v.value.size()) return;
      if (sizes == v.value.sizes()) {
        c.set_value(0, v);
        return;
      }
      tensor t(v.value.element_type(), sizes);
      if (t.element_type() == dtype::string) {
        auto src = v.value.values<std::string>();
        std::copy(src.begin(), src.end(), t.values<std::string>().begin());
      } else if (t.nbytes()) {
        std::memcpy(t.raw(), v.value.raw(), t.nbytes());
      }
      c.set_value(0, known_value::of(std::move(t)));
      return;
    }
    if (auto d = v.dims(c.max_value_elements())) c.set_dims_value(0, std::move(*d));
    return;
  }
  c.set_dims_value(0, *v.elements);
}

// The int64 contents of input i, or of attribute `name` (whichever the opset uses).
inline std::optional<std::vector<std::int64_t>> ints_from(infer_context& c, std::size_t i, std::string_view name) {
  if (c.has_input(i)) return c.input_ints(i);
  return c.attr_ints(name);
}
inline bool given(infer_context& c, std::size_t i, std::string_view name) {
  return c.has_input(i) || c.attr(name) != nullptr;
}

// ---- Constant -----------------------------------------------------------------------------

inline void constant_infer(infer_context& c) {
  auto put = [&](tensor t) {
    c.set_tensor(0, t.element_type(), t.shape());
    c.set_value(0, known_value::of(std::move(t)));
  };
  if (const attribute* a = c.attr("value")) {
    if (a->is<tensor>()) return put(a->as<tensor>());
  }
  if (const attribute* a = c.attr("value_float")) return put(tensor::scalar<float>(static_cast<float>(a->as<double>())));
  if (const attribute* a = c.attr("value_int")) return put(tensor::scalar<std::int64_t>(a->as<std::int64_t>()));
  if (const attribute* a = c.attr("value_string")) return put(tensor::scalar<std::string>(a->as<std::string>()));
  if (const attribute* a = c.attr("value_floats")) {
    std::vector<float> v;
    for (double x : a->as<std::vector<double>>()) v.push_back(static_cast<float>(x));
    return put(tensor::from<float>(std::move(v)));
  }
  if (const attribute* a = c.attr("value_ints")) return put(tensor::from<std::int64_t>(a->as<std::vector<std::int64_t>>()));
  if (const attribute* a = c.attr("value_strings")) return put(tensor::from<std::string>(a->as<std::vector<std::string>>()));
  // sparse_value: the dense shape is not kept by gpass attributes; leave it to declared types
}

// ---- Shape / Size -------------------------------------------------------------------------

// The output dtype of Shape/Size: int64 (ONNX), or the `out_type` of a TensorFlow node.
inline dtype shape_dtype(infer_context& c) { return c.attr_dtype("out_type").value_or(dtype::int64); }

inline void shape_infer(infer_context& c) {
  auto r = c.input_rank(0);
  if (!r) {
    c.set_tensor(0, shape_dtype(c), shape{dim()});
    return;
  }
  auto n = static_cast<std::int64_t>(*r);
  std::int64_t start = c.attr_int("start", 0), end = n;
  if (const attribute* a = c.attr("end")) end = a->as<std::int64_t>();
  auto clamp = [n](std::int64_t x) { return std::clamp(x < 0 ? x + n : x, std::int64_t{0}, n); };
  start = clamp(start);
  end = clamp(end);
  std::int64_t len = std::max<std::int64_t>(end - start, 0);
  c.set_tensor(0, shape_dtype(c), shape{dim(len)});
  const shape s = c.input_shape(0);
  std::vector<dim> d(s.dims().begin() + start, s.dims().begin() + start + len);
  c.set_dims_value(0, std::move(d));
}

inline void size_infer(infer_context& c) {
  c.set_tensor(0, shape_dtype(c), shape::scalar());
  shape s = c.input_shape(0);
  dim n = s.num_elements();
  if (!n.is_unknown()) c.set_dims_value(0, {n});
}

// ---- Reshape / Flatten --------------------------------------------------------------------

// q such that q * den == num, for affine dims; unknown when not found.
inline dim exact_quotient(const dim& num, const dim& den) {
  if (num.is_unknown() || den.is_unknown()) return dim();
  if (den.is_known()) {
    if (den.value() == 0) return dim();
    return num / den.value();
  }
  if (num == den) return dim(1);
  // den = a*s (one term, no constant), num = b*s: q = b/a
  if (den.constant() == 0 && den.terms().size() == 1 && num.constant() == 0 && num.terms().size() == 1 &&
      num.terms()[0].first == den.terms()[0].first) {
    std::int64_t a = den.terms()[0].second, b = num.terms()[0].second;
    if (a != 0 && !(a == -1 && b == std::numeric_limits<std::int64_t>::min()) && b % a == 0)  // (min / -1 overflows)
      return dim(b / a);
  }
  return dim();
}

inline void reshape_to(infer_context& c, const std::vector<dim>& target, bool allowzero) {
  shape in = c.input_shape(0);
  std::vector<dim> out(target.size());
  std::optional<std::size_t> infer_at;
  for (std::size_t i = 0; i < target.size(); ++i) {
    const dim& t = target[i];
    if (t.is_known() && t.value() == -1) {
      if (infer_at) c.fail("shape has more than one -1");
      infer_at = i;
      continue;
    }
    if (t.is_known() && t.value() < -1) c.fail("invalid shape value " + std::to_string(t.value()));
    if (t.is_known() && t.value() == 0 && !allowzero) {
      if (in.has_rank()) {
        if (i >= in.rank()) c.fail("shape value 0 at index " + std::to_string(i) + " copies a dim the input (rank " +
                                   std::to_string(in.rank()) + ") does not have");
        out[i] = in[i];
      }
      continue;
    }
    out[i] = t;
  }
  if (allowzero && infer_at)
    for (const auto& t : target)
      if (t.is_known() && t.value() == 0) c.fail("allowzero with both 0 and -1 in the shape");
  dim total = in.num_elements();
  if (infer_at) {
    std::vector<dim> others;
    for (std::size_t i = 0; i < out.size(); ++i)
      if (i != *infer_at) others.push_back(out[i]);
    dim prod = product(others);
    if (total.is_known() && prod.is_known()) {
      if (prod.value() == 0 || total.value() % prod.value() != 0)
        c.fail("cannot reshape " + in.to_string() + " (" + total.to_string() + " elements) to " +
               shape(out).to_string() + " with -1");
      out[*infer_at] = dim(total.value() / prod.value());
    } else {
      out[*infer_at] = exact_quotient(total, prod);
    }
  } else if (total.is_known()) {
    dim prod = product(out);
    if (prod.is_known() && prod.value() != total.value())
      c.fail("cannot reshape " + in.to_string() + " (" + total.to_string() + " elements) to " + shape(out).to_string());
  }
  c.set_shape(0, shape(std::move(out)));
}

inline void reshape_infer(infer_context& c) {
  bool allowzero = c.attr_int("allowzero", 0) != 0;
  if (!c.has_input(1)) {  // opset 1-4: `shape` attribute
    if (auto s = c.attr_ints("shape")) {
      std::vector<dim> t;
      for (auto x : *s) t.push_back(int_dim(x));
      reshape_to(c, t, false);
    }
    return;
  }
  if (auto d = c.input_dims(1)) return reshape_to(c, *d, allowzero);
  // shape contents unknown: the rank is the shape input's length when known
  if (auto n = shape_input_length(c, 1)) c.set_shape(0, shape::unknown_dims(*n));
}

inline void flatten_infer(infer_context& c) {
  auto r = c.input_rank(0);
  if (!r) {
    c.set_shape(0, shape{dim(), dim()});
    return;
  }
  auto n = static_cast<std::int64_t>(*r);
  std::int64_t a = c.attr_int("axis", 1);
  if (a < -n || a > n) c.fail("axis " + std::to_string(a) + " out of range for rank " + std::to_string(n));
  if (a < 0) a += n;
  shape s = c.input_shape(0);
  std::vector<dim> lo(s.dims().begin(), s.dims().begin() + a), hi(s.dims().begin() + a, s.dims().end());
  c.set_shape(0, shape{product(lo), product(hi)});
}

// ---- Squeeze / Unsqueeze ------------------------------------------------------------------

inline void squeeze_infer(infer_context& c) {
  std::optional<std::vector<std::int64_t>> ax = c.has_input(1) ? c.input_ints(1) : c.attr_ints("axes");
  if (c.has_input(1) && !ax) {  // axes given but unknown
    c.set_shape(0, shape());
    return;
  }
  auto r = c.input_rank(0);
  if (!r) return;
  shape s = c.input_shape(0);
  std::vector<dim> out;
  if (!ax || ax->empty()) {
    for (const auto& d : s.dims()) {
      if (d.is_known() && d.value() == 1) continue;
      if (!d.is_known()) {  // might be 1: rank unknown
        c.set_shape(0, shape());
        return;
      }
      out.push_back(d);
    }
  } else {
    auto axs = axes(c, *ax, *r);
    for (std::size_t i = 0; i < s.rank(); ++i) {
      if (std::find(axs.begin(), axs.end(), i) == axs.end()) {
        out.push_back(s[i]);
        continue;
      }
      if (s[i].is_known() && s[i].value() != 1)
        c.fail("cannot squeeze axis " + std::to_string(i) + " of size " + s[i].to_string());
      c.unify(s[i], dim(1), "(squeezed axis " + std::to_string(i) + ")");
    }
  }
  c.set_shape(0, shape(std::move(out)));
}

inline void unsqueeze_infer(infer_context& c) {
  std::optional<std::vector<std::int64_t>> ax = c.has_input(1) ? c.input_ints(1) : c.attr_ints("axes");
  auto r = c.input_rank(0);
  if (!ax) {
    if (c.has_input(1)) {
      if (auto n = shape_input_length(c, 1); r && n) c.set_shape(0, shape::unknown_dims(*r + *n));
    }
    return;
  }
  if (!r) return;
  std::size_t out_rank = *r + ax->size();
  auto axs = axes(c, *ax, out_rank);
  shape s = c.input_shape(0);
  std::vector<dim> out;
  out.reserve(out_rank);
  std::size_t k = 0;
  for (std::size_t i = 0; i < out_rank; ++i) {
    if (std::find(axs.begin(), axs.end(), i) != axs.end()) out.push_back(dim(1));
    else out.push_back(s[k++]);
  }
  c.set_shape(0, shape(std::move(out)));
}

// ---- Concat / Split -----------------------------------------------------------------------

inline void concat_infer(infer_context& c) {
  std::optional<std::size_t> rank;
  std::size_t first = 0;
  for (std::size_t i = 0; i < c.num_inputs(); ++i)
    if (auto r = c.input_rank(i)) {
      if (rank && *rank != *r)
        c.fail("incompatible ranks " + std::to_string(*rank) + " and " + std::to_string(*r) + " in input " +
               std::to_string(i) + " (input " + std::to_string(first) + " has rank " + std::to_string(*rank) + ")");
      if (!rank) first = i;
      rank = *r;
    }
  if (!rank) return;
  if (*rank == 0) c.fail("cannot concatenate scalars");
  std::size_t a = axis(c, c.attr_int("axis", c.opset() != 0 && c.opset() < 4 ? 1 : 0), *rank);
  std::vector<dim> out = c.input_shape(first).dims();
  out[a] = dim(0);
  for (std::size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) continue;
    shape s = c.input_shape(i);
    if (!s.has_rank()) {
      out[a] = dim();
      continue;
    }
    for (std::size_t d = 0; d < *rank; ++d) {
      if (d == a) {
        out[a] = out[a] + s[d];
        continue;
      }
      out[d] = c.unify(out[d], s[d], "in input " + std::to_string(i) + " (dim " + std::to_string(d) + ")");
    }
  }
  c.set_shape(0, shape(std::move(out)));
}

inline void concat_value(infer_context& c) {
  auto r = c.output(0).type.is_tensor() && c.output(0).type.tensor().shape.has_rank()
               ? std::optional<std::size_t>(c.output(0).type.tensor().shape.rank())
               : std::nullopt;
  if (!r || *r != 1) return;
  std::vector<dim> out;
  for (std::size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) return;
    auto d = c.input_dims(i);
    if (!d) return;
    out.insert(out.end(), d->begin(), d->end());
  }
  if (static_cast<std::int64_t>(out.size()) > c.max_value_elements()) return;
  c.set_dims_value(0, std::move(out));
}

inline void split_infer(infer_context& c) {
  const std::size_t n = c.num_outputs();
  std::optional<std::vector<std::int64_t>> sizes;
  bool split_given = false;
  if (c.has_input(1)) {
    split_given = true;
    sizes = c.input_ints(1);
  } else if (c.attr("split")) {
    split_given = true;
    sizes = c.attr_ints("split");
  }
  auto r = c.input_rank(0);
  if (!r) return;
  shape s = c.input_shape(0);
  std::size_t a = axis(c, c.attr_int("axis", 0), *r);
  std::vector<dim> parts(n);
  if (sizes) {
    if (sizes->size() != n)
      c.fail("split has " + std::to_string(sizes->size()) + " sizes for " + std::to_string(n) + " outputs");
    std::int64_t sum = 0;
    for (auto x : *sizes) {
      if (x < 0) c.fail("negative split size " + std::to_string(x));
      const auto next = checked_add(sum, x);
      if (!next) c.fail("split sizes sum past int64 (adding " + std::to_string(x) + " to " + std::to_string(sum) + ")");
      sum = *next;
    }
    if (s[a].is_known() && s[a].value() != sum)
      c.fail("split sizes sum to " + std::to_string(sum) + ", axis " + std::to_string(a) + " has " + s[a].to_string());
    for (std::size_t k = 0; k < n; ++k) parts[k] = dim((*sizes)[k]);
  } else if (!split_given && c.attr("num_outputs")) {
    // Split-18: ceil(size / num_outputs) per output, the last ones smaller (the kernel's rule)
    const std::int64_t k = c.attr_int("num_outputs", 0);
    if (k <= 0) c.fail("num_outputs must be positive, got " + std::to_string(k));
    if (static_cast<std::size_t>(k) != n)
      c.fail("num_outputs is " + std::to_string(k) + " but the node has " + std::to_string(n) + " outputs");
    if (s[a].is_known()) {
      // ceil(total / k), without the overflow of total + k - 1
      const std::int64_t total = s[a].value(), chunk = total / k + (total % k != 0 ? 1 : 0);
      for (std::size_t i = 0; i < n; ++i)
        parts[i] = dim(std::clamp<std::int64_t>(total - chunk * static_cast<std::int64_t>(i), 0, chunk));
    }
  } else if (!split_given) {
    dim q = s[a] / static_cast<std::int64_t>(n);
    if (s[a].is_known() && q.is_unknown())
      c.fail("axis " + std::to_string(a) + " of size " + s[a].to_string() + " does not split evenly into " +
             std::to_string(n) + " outputs");
    for (auto& p : parts) p = q;
  }
  set_split_shapes(c, s, a, parts);
}

inline void split_value(infer_context& c) {
  auto d = c.input_dims(0);
  if (!d || c.input_rank(0) != std::optional<std::size_t>(1)) return;
  std::size_t at = 0;
  for (std::size_t k = 0; k < c.num_outputs(); ++k) {
    const type& t = c.output(k).type;
    if (!t.is_tensor() || !t.tensor().shape.is_fully_known() || t.tensor().shape.rank() != 1) return;
    auto len = static_cast<std::size_t>(t.tensor().shape[0].value());
    if (at + len > d->size()) return;
    c.set_dims_value(k, std::vector<dim>(d->begin() + at, d->begin() + at + len));
    at += len;
  }
}

// ---- Slice --------------------------------------------------------------------------------

struct slice_spec {
  std::vector<std::int64_t> starts, ends, axes, steps;
};

// The size of a slice of a known dim (ONNX clamping rules).
inline std::int64_t slice_len(std::int64_t n, std::int64_t start, std::int64_t end, std::int64_t step) {
  auto norm = [n](std::int64_t x, std::int64_t lo, std::int64_t hi) {
    if (x < 0) x += n;
    return std::clamp(x, lo, hi);
  };
  // ceil(span / |step|) as (span - 1) / |step| + 1: span + step - 1 overflowed for steps
  // near INT64_MAX, and -step for INT64_MIN
  if (step > 0) {
    start = norm(start, 0, n);
    end = norm(end, 0, n);
    return end > start ? (end - start - 1) / step + 1 : 0;
  }
  start = norm(start, -1, n - 1);
  end = norm(end, -1, n - 1);
  return start > end ? 1 - (start - end - 1) / step : 0;
}

/// A Slice end at or past this bound means "to the end" of a symbolic dim (and a start at or
/// below its negation "from the start"): what exporters write for `x[a:]`, 2^31 - 1, 2^63 - 1,
/// or tf2onnx's 10^9 for masked ends. Shape inference and the executor's batch-split proof
/// both read slices so.
inline constexpr std::int64_t slice_unbounded = 1'000'000'000;

// The size of a slice of a symbolic dim `n`, when it is affine: step 1, and the end is "to
// the end" (>= slice_unbounded) or counted from the end (< 0). The start may count from
// either side. This assumes the symbolic dim is at least as large as the bounds it is sliced
// with (otherwise ONNX clamps) and below slice_unbounded; an end counted from the start
// (`x[:k]` with a symbolic size) gives an unknown dim, since min(k, n) is not affine.
inline dim slice_len_symbolic(const dim& n, std::int64_t start, std::int64_t end, std::int64_t step) {
  if (step != 1 || n.is_unknown()) return dim();
  if (end >= 0 && end < slice_unbounded) return dim();
  dim s = start >= 0 ? dim(start) : n + int_dim(start);
  dim e = end >= slice_unbounded ? n : n + int_dim(end);
  dim r = sub_dims(e, s);
  if (r.is_known() && r.value() < 0) return dim(0);
  return r;
}

inline std::optional<slice_spec> slice_params(infer_context& c, std::size_t rank) {
  slice_spec p;
  const bool inputs = c.has_input(1) || c.num_inputs() > 1;
  std::optional<std::vector<std::int64_t>> st, en, ax, sp;
  if (inputs) {
    st = c.input_ints(1);
    en = c.input_ints(2);
    if (c.has_input(3)) ax = c.input_ints(3);
    if (c.has_input(4)) sp = c.input_ints(4);
    if (!st || !en || (c.has_input(3) && !ax) || (c.has_input(4) && !sp)) return std::nullopt;
  } else {
    st = c.attr_ints("starts");
    en = c.attr_ints("ends");
    ax = c.attr_ints("axes");
    if (!st || !en) return std::nullopt;
  }
  p.starts = *st;
  p.ends = *en;
  if (p.starts.size() != p.ends.size())
    c.fail("starts has " + std::to_string(p.starts.size()) + " values, ends " + std::to_string(p.ends.size()));
  if (ax) p.axes = *ax;
  else
    for (std::size_t i = 0; i < p.starts.size(); ++i) p.axes.push_back(static_cast<std::int64_t>(i));
  if (sp) p.steps = *sp;
  else p.steps.assign(p.starts.size(), 1);
  if (p.axes.size() != p.starts.size() || p.steps.size() != p.starts.size())
    c.fail("starts, ends, axes and steps must have the same length");
  for (auto s : p.steps)
    if (s == 0) c.fail("slice step 0");
  auto axs = axes(c, p.axes, rank);
  for (std::size_t i = 0; i < axs.size(); ++i) p.axes[i] = static_cast<std::int64_t>(axs[i]);
  return p;
}

inline void slice_infer(infer_context& c) {
  auto r = c.input_rank(0);
  if (!r) return;
  shape s = c.input_shape(0);
  auto p = slice_params(c, *r);
  if (!p) {
    // parameters unknown: sliced axes (or all, when axes are unknown) become unknown
    std::optional<std::vector<std::int64_t>> ax = c.has_input(3) ? c.input_ints(3) : std::nullopt;
    std::vector<dim> out = s.dims();
    if (ax) {
      for (auto a : axes(c, *ax, *r)) out[a] = dim();
    } else {
      for (auto& d : out) d = dim();
    }
    c.set_shape(0, shape(std::move(out)));
    return;
  }
  std::vector<dim> out = s.dims();
  for (std::size_t i = 0; i < p->axes.size(); ++i) {
    auto a = static_cast<std::size_t>(p->axes[i]);
    const dim& n = s[a];
    if (n.is_known()) out[a] = dim(slice_len(n.value(), p->starts[i], p->ends[i], p->steps[i]));
    else out[a] = slice_len_symbolic(n, p->starts[i], p->ends[i], p->steps[i]);
  }
  c.set_shape(0, shape(std::move(out)));
}

inline void slice_value(infer_context& c) {
  if (c.input_rank(0) != std::optional<std::size_t>(1)) return;
  auto d = c.input_dims(0);
  if (!d) return;
  auto p = slice_params(c, 1);
  if (!p || p->axes.size() != 1) return;
  auto n = static_cast<std::int64_t>(d->size());
  std::int64_t step = p->steps[0];
  std::int64_t start = p->starts[0], end = p->ends[0];
  std::int64_t len = slice_len(n, start, end, step);
  if (start < 0) start += n;
  if (step > 0) start = std::clamp<std::int64_t>(start, 0, n);
  else start = std::clamp<std::int64_t>(start, -1, n - 1);
  std::vector<dim> out;
  for (std::int64_t k = 0; k < len; ++k) out.push_back((*d)[static_cast<std::size_t>(start + k * step)]);
  c.set_dims_value(0, std::move(out));
}

// ---- Gather family ------------------------------------------------------------------------

inline void gather_infer(infer_context& c) {
  auto r = c.input_rank(0);
  if (!r) return;
  if (*r == 0) c.fail("cannot gather from a scalar");
  shape data = c.input_shape(0), idx = c.input_shape(1);
  std::size_t a = axis(c, c.attr_int("axis", 0), *r);
  if (!idx.has_rank()) return;
  std::vector<dim> out(data.dims().begin(), data.dims().begin() + a);
  out.insert(out.end(), idx.dims().begin(), idx.dims().end());
  out.insert(out.end(), data.dims().begin() + a + 1, data.dims().end());
  c.set_shape(0, shape(std::move(out)));
}

inline void gather_value(infer_context& c) {
  if (c.input_rank(0) != std::optional<std::size_t>(1)) return;
  auto d = c.input_dims(0);
  auto idx = c.input_ints(1);
  if (!d || !idx) return;
  auto n = static_cast<std::int64_t>(d->size());
  std::vector<dim> out;
  for (auto i : *idx) {
    if (i < -n || i >= n) c.fail("index " + std::to_string(i) + " out of range for " + std::to_string(n) + " elements");
    out.push_back((*d)[static_cast<std::size_t>(i < 0 ? i + n : i)]);
  }
  c.set_dims_value(0, std::move(out));
}

inline void gather_elements_infer(infer_context& c) {
  if (auto r = c.input_rank(0)) axis(c, c.attr_int("axis", 0), *r);
  c.set_shape(0, c.input_shape(1));
}

inline void gather_nd_infer(infer_context& c) {
  shape data = c.input_shape(0), idx = c.input_shape(1);
  if (!data.has_rank() || !idx.has_rank()) return;
  if (idx.rank() == 0) c.fail("indices must have rank >= 1");
  const std::int64_t batch_dims = c.attr_int("batch_dims", 0);
  if (batch_dims < 0) c.fail("batch_dims must not be negative, got " + std::to_string(batch_dims));
  auto b = static_cast<std::size_t>(batch_dims);
  const dim& last = idx[idx.rank() - 1];
  if (!last.is_known()) return;
  auto k = static_cast<std::size_t>(last.value());
  if (b > data.rank() || k > data.rank() - b)  // (b + k could wrap)
    c.fail("indices last dim " + std::to_string(k) + " + batch_dims " + std::to_string(b) + " exceeds data rank " +
           std::to_string(data.rank()));
  std::vector<dim> out(idx.dims().begin(), idx.dims().end() - 1);
  out.insert(out.end(), data.dims().begin() + static_cast<std::ptrdiff_t>(b + k), data.dims().end());
  c.set_shape(0, shape(std::move(out)));
}

// ---- Transpose / Expand / Tile / Pad ------------------------------------------------------

inline void transpose_infer(infer_context& c) {
  auto r = c.input_rank(0);
  auto perm = c.attr_ints("perm");
  if (!r) {
    if (perm) c.set_shape(0, shape::unknown_dims(perm->size()));
    return;
  }
  shape s = c.input_shape(0);
  std::vector<std::int64_t> p;
  if (perm) p = *perm;
  else
    for (std::size_t i = 0; i < *r; ++i) p.push_back(static_cast<std::int64_t>(*r - 1 - i));
  if (p.size() != *r) c.fail("perm has " + std::to_string(p.size()) + " entries for rank " + std::to_string(*r));
  auto ax = axes(c, p, *r, "perm");
  std::vector<dim> out;
  for (auto a : ax) out.push_back(s[a]);
  c.set_shape(0, shape(std::move(out)));
}

inline void expand_infer(infer_context& c) {
  shape in = c.input_shape(0);
  if (auto d = c.input_dims(1)) {
    shape target(*d);
    // a target dim of 1 keeps the input's dim; otherwise numpy rules
    try {
      c.set_shape(0, broadcast_shapes({in, target}, c.symbols()));
    } catch (const error& e) {
      c.fail(e.message());
    }
    return;
  }
  if (auto len = shape_input_length(c, 1); in.has_rank() && len) {
    // target unknown: an input dim other than 1 survives (the target there is 1 or the same)
    const std::size_t t = *len;
    std::size_t r = std::max<std::size_t>(in.rank(), t);
    std::vector<dim> out(r);
    for (std::size_t i = 0; i < in.rank(); ++i) {
      const dim& d = in[i];
      std::size_t p = r - in.rank() + i;
      if (p < r - t || (d.is_known() && d.value() != 1)) out[p] = d;  // no target dim there, or not 1
    }
    c.set_shape(0, shape(std::move(out)));
  }
}

inline void expand_value(infer_context& c) {
  // only the common shape pattern: expanding a known scalar/vector to a small known shape
  const type& t = c.output(0).type;
  if (!t.is_tensor() || !t.tensor().shape.is_fully_known()) return;
  auto sizes = t.tensor().shape.sizes();
  auto d = c.input_dims(0);
  auto in = value_sizes(c, 0);
  if (!d || !in || num_elements(sizes) > c.max_value_elements() || in->size() > sizes.size()) return;
  for (std::size_t i = 0; i < in->size(); ++i) {
    std::int64_t a = (*in)[in->size() - 1 - i], b = sizes[sizes.size() - 1 - i];
    if (a != 1 && a != b) return;
  }
  std::vector<dim> out;
  for (std::int64_t e = 0; e < num_elements(sizes); ++e)
    out.push_back((*d)[broadcast_index(static_cast<std::size_t>(e), sizes, *in)]);
  c.set_dims_value(0, std::move(out));
}

inline void tile_infer(infer_context& c) {
  auto r = c.input_rank(0);
  if (!r) return;
  shape s = c.input_shape(0);
  if (!c.has_input(1)) return;
  auto rep = c.input_dims(1);
  if (!rep) {
    c.set_shape(0, shape::unknown_dims(*r));
    return;
  }
  if (rep->size() != *r) c.fail("repeats has " + std::to_string(rep->size()) + " values for rank " + std::to_string(*r));
  std::vector<dim> out;
  for (std::size_t i = 0; i < *r; ++i) {
    if ((*rep)[i].is_known() && (*rep)[i].value() < 0)
      c.fail("repeats[" + std::to_string(i) + "] is " + std::to_string((*rep)[i].value()) + " (repeats must not be negative)");
    out.push_back(mul_dims(s[i], (*rep)[i]));
  }
  c.set_shape(0, shape(std::move(out)));
}

inline void pad_infer(infer_context& c) {
  auto r = c.input_rank(0);
  if (!r) return;
  std::optional<std::vector<std::int64_t>> pads;
  if (c.has_input(1)) pads = c.input_ints(1);
  else if (c.attr("pads")) pads = c.attr_ints("pads");
  else pads = c.attr_ints("paddings");
  if (!pads) {
    c.set_shape(0, shape::unknown_dims(*r));
    return;
  }
  if (c.has_input(3)) {  // Pad-18: pads for the listed axes, zero for the others
    auto ax_raw = c.input_ints(3);
    if (!ax_raw) return c.set_shape(0, shape::unknown_dims(*r));
    const auto ax = axes(c, *ax_raw, *r);
    if (pads->size() != 2 * ax.size())
      c.fail("pads has " + std::to_string(pads->size()) + " values for " + std::to_string(ax.size()) + " axes");
    std::vector<std::int64_t> full(2 * *r, 0);
    for (std::size_t i = 0; i < ax.size(); ++i) {
      full[ax[i]] = (*pads)[i];
      full[ax[i] + *r] = (*pads)[i + ax.size()];
    }
    pads = std::move(full);
  }
  if (pads->size() != 2 * *r)
    c.fail("pads has " + std::to_string(pads->size()) + " values for rank " + std::to_string(*r));
  shape s = c.input_shape(0);
  std::vector<dim> out;
  for (std::size_t i = 0; i < *r; ++i) {
    dim d = add_dims(add_dims(s[i], int_dim((*pads)[i])), int_dim((*pads)[i + *r]));
    if (d.is_known() && d.value() < 0) c.fail("pads make axis " + std::to_string(i) + " negative");
    out.push_back(d.is_known() ? dim(d.value()) : d);
  }
  c.set_shape(0, shape(std::move(out)));
}

// ---- Range / ConstantOfShape / EyeLike ----------------------------------------------------

inline void range_infer(infer_context& c) {
  for (std::size_t i = 0; i < 3; ++i)
    if (auto rk = c.input_rank(i); rk && *rk != 0 && !(*rk == 1 && c.input_shape(i)[0] == dim(1)))
      c.fail("input " + std::to_string(i) + " must be a scalar, got " + c.input_shape(i).to_string());
  if (is_integer(c.input_dtype(0)) && !is_unsigned(c.input_dtype(0))) {
    // signed integers: the exact count (doubles round past 2^53), as the kernels compute it
    auto st = c.input_int(0), li = c.input_int(1), de = c.input_int(2);
    if (st && li && de) {
      if (*de == 0) c.fail("delta is 0");
      const auto span = checked_sub(*li, *st);
      if (!span || (*de == -1 && *span == std::numeric_limits<std::int64_t>::min()))
        c.fail("the range has too many elements (start " + std::to_string(*st) + ", limit " + std::to_string(*li) +
               ", delta " + std::to_string(*de) + ")");
      const std::int64_t n = *span / *de + ((*span % *de != 0) && ((*span < 0) == (*de < 0)) ? 1 : 0);
      c.set_shape(0, shape{dim(std::max<std::int64_t>(n, 0))});
      return;
    }
  }
  auto st = c.input_doubles(0), li = c.input_doubles(1), de = c.input_doubles(2);
  if (st && li && de && st->size() == 1 && li->size() == 1 && de->size() == 1) {
    if ((*de)[0] == 0) c.fail("delta is 0");
    const double n = std::ceil(((*li)[0] - (*st)[0]) / (*de)[0]);
    // (casting a NaN or a count past int64 is UB)
    const auto len = double_to_int64(std::max(n, 0.0));
    if (!len)
      c.fail("the range has too many elements (start " + std::to_string((*st)[0]) + ", limit " + std::to_string((*li)[0]) +
             ", delta " + std::to_string((*de)[0]) + ")");
    c.set_shape(0, shape{dim(*len)});
    return;
  }
  // start + k*delta up to a symbolic limit: length limit - start when delta is 1
  auto sd = c.input_dims(0), ld = c.input_dims(1), dd = c.input_dims(2);
  if (sd && ld && dd && sd->size() == 1 && ld->size() == 1 && dd->size() == 1 && (*dd)[0] == dim(1)) {
    dim len = sub_dims((*ld)[0], (*sd)[0]);
    if (len.is_symbolic()) {
      c.set_shape(0, shape{len});
      return;
    }
  }
  c.set_shape(0, shape{c.fresh_dim("len")});
}

inline void range_value(infer_context& c) {
  const type& t = c.output(0).type;
  if (!t.is_tensor() || !t.tensor().shape.is_fully_known()) return;
  auto n = t.tensor().shape[0].value();
  if (n > c.max_value_elements()) return;
  auto st = c.input_doubles(0), de = c.input_doubles(2);
  if (!st || !de || st->empty() || de->empty()) return;
  dtype d = t.tensor().element;
  if (d == dtype::undefined) return;
  // integers exactly (through doubles an int64 could round to 2^63, which no cast may take),
  // and checked (the length may come from a declared type, not from the bounds)
  const bool exact = is_integer(d) && !is_unsigned(d);
  const auto ist = c.input_int(0), ide = c.input_int(2);
  if (exact && (!ist || !ide)) return;
  std::vector<std::int64_t> ints;
  if (exact)
    for (std::int64_t k = 0; k < n; ++k) {
      const auto step = checked_mul(k, *ide);
      const auto x = step ? checked_add(*ist, *step) : std::nullopt;
      if (!x) return;
      ints.push_back(*x);
    }
  tensor out(d, {n});
  bool fits = true;
  visit_dtype(d, [&]<class T>() {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      T* p = out.data<T>();
      for (std::int64_t k = 0; k < n; ++k) p[k] = static_cast<T>(ints[static_cast<std::size_t>(k)]);
    } else if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      T* p = out.data<T>();
      for (std::int64_t k = 0; k < n; ++k) {
        const double x = (*st)[0] + static_cast<double>(k) * (*de)[0];
        if constexpr (std::is_integral_v<T>) fits = fits && fits_integer<T>(x);  // (unsigned)
        p[k] = fits ? static_cast<T>(x) : T{};
      }
    }
  });
  if (!fits) return;
  c.set_value(0, known_value::of(std::move(out)));
}

inline void constant_of_shape_infer(infer_context& c) {
  dtype d = dtype::f32;
  if (const attribute* a = c.attr("value"); a && a->is<tensor>()) d = a->as<tensor>().element_type();
  if (auto dims = c.input_dims(0)) {
    for (const auto& x : *dims)
      if (x.is_known() && x.value() < 0) c.fail("negative dim " + x.to_string() + " in the shape");
    c.set_tensor(0, d, shape(*dims));
    return;
  }
  if (auto n = shape_input_length(c, 0)) c.set_tensor(0, d, shape::unknown_dims(*n));
  else c.set_tensor(0, d, shape());
}

inline void constant_of_shape_value(infer_context& c) {
  const type& t = c.output(0).type;
  if (!t.is_tensor() || !t.tensor().shape.is_fully_known()) return;
  auto sizes = t.tensor().shape.sizes();
  if (num_elements(sizes) > c.max_value_elements()) return;
  tensor fill;
  if (const attribute* a = c.attr("value"); a && a->is<tensor>()) fill = a->as<tensor>();
  else fill = tensor::scalar<float>(0.0f);
  if (fill.size() != 1 || fill.element_type() == dtype::string) return;
  tensor out(fill.element_type(), sizes);
  std::size_t es = size_of(fill.element_type());
  for (std::int64_t i = 0; i < out.size(); ++i) std::memcpy(out.raw() + i * es, fill.raw(), es);
  c.set_value(0, known_value::of(std::move(out)));
}

inline void eye_like_infer(infer_context& c) {
  if (auto r = c.input_rank(0); r && *r != 2) c.fail("input must be 2-D, got " + c.input_shape(0).to_string());
  dtype d = c.attr_dtype("dtype").value_or(c.input_dtype(0));
  c.set_tensor(0, d, c.input_shape(0));
}

// ---- data-dependent sizes -----------------------------------------------------------------

inline void nonzero_infer(infer_context& c) {
  auto r = c.input_rank(0);
  dim count = nonzero_count(c, "0");
  c.set_tensor(0, dtype::int64, shape{r ? dim(static_cast<std::int64_t>(*r)) : dim(), count});
}

inline void unique_infer(infer_context& c) {
  shape s = c.input_shape(0);
  dim u = c.fresh_dim("0");
  const attribute* ax = c.attr("axis");
  if (!ax) {
    c.set_shape(0, shape{u});
    c.set_tensor(2, dtype::int64, shape{s.num_elements()});
  } else if (s.has_rank()) {
    std::size_t a = axis(c, ax->as<std::int64_t>(), s.rank());
    shape o = s;
    o[a] = u;
    c.set_shape(0, o);
    c.set_tensor(2, dtype::int64, shape{s[a]});
  }
  c.set_tensor(1, dtype::int64, shape{u});
  c.set_tensor(3, dtype::int64, shape{u});
}

inline void compress_infer(infer_context& c) {
  shape s = c.input_shape(0);
  if (auto cr = c.input_rank(1); cr && *cr != 1) c.fail("condition must be 1-D, got " + c.input_shape(1).to_string());
  dim n = c.fresh_dim("0");
  if (auto v = c.input_doubles(1)) {
    std::int64_t k = 0;
    for (double x : *v) k += x != 0;
    n = dim(k);
  }
  const attribute* ax = c.attr("axis");
  if (!ax) {
    c.set_shape(0, shape{n});
    return;
  }
  if (!s.has_rank()) return;
  std::size_t a = axis(c, ax->as<std::int64_t>(), s.rank());
  shape o = s;
  o[a] = n;
  c.set_shape(0, o);
}

inline void onehot_infer(infer_context& c) {
  shape s = c.input_shape(0);
  if (!s.has_rank()) return;
  auto r = static_cast<std::int64_t>(s.rank());
  std::int64_t a = c.attr_int("axis", -1);
  if (a < -r - 1 || a > r) c.fail("axis " + std::to_string(a) + " out of range for output rank " + std::to_string(r + 1));
  if (a < 0) a += r + 1;
  dim depth;
  if (auto d = c.input_doubles(1); d && d->size() == 1) {
    const auto k = double_to_int64((*d)[0]);  // (casting NaN or 1e30 is UB)
    if (!k) c.fail("depth " + std::to_string((*d)[0]) + " is not a size (NaN, or past int64)");
    depth = dim(*k);
  } else if (auto dd = c.input_dims(1); dd && dd->size() == 1) depth = (*dd)[0];
  std::vector<dim> out = s.dims();
  out.insert(out.begin() + a, depth);
  c.set_shape(0, shape(std::move(out)));
}

inline void topk_infer(infer_context& c) {
  shape s = c.input_shape(0);
  if (!s.has_rank()) return;
  std::size_t a = axis(c, c.attr_int("axis", -1), s.rank());
  dim k;
  if (c.has_input(1)) {
    if (auto kd = c.input_dims(1); kd && kd->size() == 1) k = (*kd)[0];
  } else if (const attribute* ka = c.attr("k")) {
    k = dim(ka->as<std::int64_t>());
  }
  if (k.is_known() && s[a].is_known() && k.value() > s[a].value())
    c.fail("k " + k.to_string() + " exceeds axis size " + s[a].to_string());
  shape o = s;
  o[a] = k;
  c.set_shape(0, o);
  c.set_shape(1, o);
}

inline void depth_to_space_infer(infer_context& c) {
  shape s = c.input_shape(0);
  if (!s.has_rank()) return;
  if (s.rank() != 4) c.fail("input must be 4-D, got " + s.to_string());
  std::int64_t b = c.attr_int("blocksize", 1);
  if (b <= 0) c.fail("blocksize must be positive");
  const auto bb = checked_mul(b, b);
  if (!bb) c.fail("blocksize " + std::to_string(b) + " is too large (its square overflows int64)");
  dim ch = s[1] / *bb;
  if (s[1].is_known() && ch.is_unknown()) c.fail("channels " + s[1].to_string() + " not divisible by blocksize^2");
  c.set_shape(0, shape{s[0], ch, s[2] * b, s[3] * b});
}

inline void space_to_depth_infer(infer_context& c) {
  shape s = c.input_shape(0);
  if (!s.has_rank()) return;
  if (s.rank() != 4) c.fail("input must be 4-D, got " + s.to_string());
  std::int64_t b = c.attr_int("blocksize", 1);
  if (b <= 0) c.fail("blocksize must be positive");
  const auto bb = checked_mul(b, b);
  if (!bb) c.fail("blocksize " + std::to_string(b) + " is too large (its square overflows int64)");
  dim h = s[2] / b, w = s[3] / b;
  if ((s[2].is_known() && h.is_unknown()) || (s[3].is_known() && w.is_unknown()))
    c.fail("spatial dims of " + s.to_string() + " not divisible by blocksize " + std::to_string(b));
  c.set_shape(0, shape{s[0], s[1] * *bb, h, w});
}

}  // namespace detail::onnx_ops
}  // namespace gpass

inline void gpass::register_onnx_shape_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  namespace ot = onnx_types;
  const auto all = ot::all();
  const auto ix = ot::index();

  onnx_op("Constant", 1).out("output:T").tc("T", all).opt("value", "tensor").opt("sparse_value", "tensor")
      .opt("value_float", "float").opt("value_floats", "floats").opt("value_int", "int").opt("value_ints", "ints")
      .opt("value_string", "string").opt("value_strings", "strings").infer(constant_infer).add(r);
  // `out_type` is not ONNX: it lets TensorFlow's Shape/Size (same name, same domain) keep their dtype
  onnx_op("Shape", 1).in("data:T").out("shape:T1").tc("T", all).tc("T1", {dtype::int64}).opt("start", "int")
      .opt("end", "int").opt("out_type", "dtype").infer(shape_infer).add(r);
  onnx_op("Size", 1).in("data:T").out("size:T1").tc("T", all).tc("T1", {dtype::int64}).opt("out_type", "dtype")
      .infer(size_infer).add(r);

  onnx_op("Reshape", 1).until(4).in("data:T").out("reshaped:T").tc("T", all).opt("shape", "ints")
      .infer(reshape_infer).propagate(same_elements_value).add(r);
  onnx_op("Reshape", 5).until(13).in("data:T").in("shape:i64").out("reshaped:T").tc("T", all)
      .infer(reshape_infer).propagate(same_elements_value).add(r);
  onnx_op("Reshape", 14).in("data:T").in("shape:i64").out("reshaped:T").tc("T", all)
      .attr("allowzero", "int", std::int64_t{0}).infer(reshape_infer).propagate(same_elements_value).add(r);
  onnx_op("Flatten", 1).in("input:T").out("output:T").tc("T", all).attr("axis", "int", std::int64_t{1})
      .infer(flatten_infer).propagate(same_elements_value).add(r);

  onnx_op("Squeeze", 1).until(12).in("data:T").out("squeezed:T").tc("T", all).opt("axes", "ints")
      .infer(squeeze_infer).propagate(same_elements_value).add(r);
  onnx_op("Squeeze", 13).in("data:T").in("axes?:i64").out("squeezed:T").tc("T", all)
      .infer(squeeze_infer).propagate(same_elements_value).add(r);
  onnx_op("Unsqueeze", 1).until(12).in("data:T").out("expanded:T").tc("T", all).req("axes", "ints")
      .infer(unsqueeze_infer).propagate(same_elements_value).add(r);
  onnx_op("Unsqueeze", 13).in("data:T").in("axes:i64").out("expanded:T").tc("T", all)
      .infer(unsqueeze_infer).propagate(same_elements_value).add(r);

  onnx_op("Concat", 1).until(3).in("inputs*:T").out("concat_result:T").tc("T", all).attr("axis", "int", std::int64_t{1})
      .infer(concat_infer).propagate(concat_value).add(r);
  onnx_op("Concat", 4).in("inputs*:T").out("concat_result:T").tc("T", all).req("axis", "int")
      .infer(concat_infer).propagate(concat_value).add(r);

  onnx_op("Split", 1).until(1).in("input:T").in("split?:T").out("outputs*:T").tc("T", all).opt("axis", "int")
      .opt("split", "ints").infer(split_infer).propagate(split_value).add(r);
  onnx_op("Split", 2).until(12).in("input:T").out("outputs*:T").tc("T", all).attr("axis", "int", std::int64_t{0})
      .opt("split", "ints").infer(split_infer).propagate(split_value).add(r);
  onnx_op("Split", 13).until(17).in("input:T").in("split?:i64").out("outputs*:T").tc("T", all)
      .attr("axis", "int", std::int64_t{0}).infer(split_infer).propagate(split_value).add(r);
  onnx_op("Split", 18).in("input:T").in("split?:i64").out("outputs*:T").tc("T", all)
      .attr("axis", "int", std::int64_t{0}).opt("num_outputs", "int").infer(split_infer).propagate(split_value).add(r);

  onnx_op("Slice", 1).until(9).in("data:T").out("output:T").tc("T", all).opt("axes", "ints").req("starts", "ints")
      .req("ends", "ints").infer(slice_infer).propagate(slice_value).add(r);
  onnx_op("Slice", 10).in("data:T").in("starts:Tind").in("ends:Tind").in("axes?:Tind").in("steps?:Tind")
      .out("output:T").tc("T", all).tc("Tind", ix).infer(slice_infer).propagate(slice_value).add(r);

  onnx_op("Gather", 1).in("data:T").in("indices:Tind").out("output:T").tc("T", all).tc("Tind", ix)
      .attr("axis", "int", std::int64_t{0}).infer(gather_infer).propagate(gather_value).add(r);
  onnx_op("GatherElements", 11).in("data:T").in("indices:Tind").out("output:T").tc("T", all).tc("Tind", ix)
      .attr("axis", "int", std::int64_t{0}).infer(gather_elements_infer).add(r);
  onnx_op("GatherND", 11).in("data:T").in("indices:i64").out("output:T").tc("T", all)
      .attr("batch_dims", "int", std::int64_t{0}).infer(gather_nd_infer).add(r);

  onnx_op("Transpose", 1).in("data:T").out("transposed:T").tc("T", all).opt("perm", "ints").infer(transpose_infer).add(r);
  onnx_op("Expand", 8).in("input:T").in("shape:i64").out("output:T").tc("T", all).infer(expand_infer)
      .propagate(expand_value).add(r);
  onnx_op("Tile", 1).until(5).in("input:T").in("tiles:T").in("axis:T").out("output:T").tc("T", all)
      .infer([](infer_context& c) {
        if (auto rk = c.input_rank(0)) c.set_shape(0, shape::unknown_dims(*rk));
      })
      .add(r);
  onnx_op("Tile", 6).in("input:T").in("repeats:i64").out("output:T").tc("T", all).infer(tile_infer).add(r);
  onnx_op("Pad", 1).until(1).in("data:T").out("output:T").tc("T", all).req("paddings", "ints")
      .attr("mode", "string", "constant").attr("value", "float", 0.0).infer(pad_infer).add(r);
  onnx_op("Pad", 2).until(10).in("data:T").out("output:T").tc("T", all).req("pads", "ints")
      .attr("mode", "string", "constant").attr("value", "float", 0.0).infer(pad_infer).add(r);
  onnx_op("Pad", 11).until(17).in("data:T").in("pads:i64").in("constant_value?:T").out("output:T").tc("T", all)
      .attr("mode", "string", "constant").infer(pad_infer).add(r);
  // Pad-18: the pads of the axes listed by input 3 only (Pad-19 adds the mode "wrap")
  onnx_op("Pad", 18).in("data:T").in("pads:i64").in("constant_value?:T").in("axes?:Tind").out("output:T")
      .tc("T", all).tc("Tind", ix).attr("mode", "string", "constant").infer(pad_infer).add(r);

  onnx_op("Range", 11).until(26).in("start:T").in("limit:T").in("delta:T").out("output:T").tc("T", ot::numeric())
      .infer(range_infer).propagate(range_value).add(r);
  // Range-27: stash_type 1 computes f16 / bf16 ranges in float (what gpass's kernel does in
  // every version)
  onnx_op("Range", 27).in("start:T").in("limit:T").in("delta:T").out("output:T").tc("T", ot::numeric())
      .attr("stash_type", "int", std::int64_t{1}).infer(range_infer).propagate(range_value).add(r);
  onnx_op("ConstantOfShape", 9).in("input:i64").out("output:T2").tc("T2", all).opt("value", "tensor")
      .infer(constant_of_shape_infer).propagate(constant_of_shape_value).add(r);
  onnx_op("EyeLike", 9).in("input:T1").out("output:T2").tc("T1", all).tc("T2", all).opt("dtype", "int")
      .attr("k", "int", std::int64_t{0}).infer(eye_like_infer).add(r);

  onnx_op("NonZero", 9).in("X:T").out("Y:i64").tc("T", all).infer(nonzero_infer).add(r);
  onnx_op("Unique", 11).in("X:T").out("Y:T").out("indices?:i64").out("inverse_indices?:i64").out("counts?:i64")
      .tc("T", all).opt("axis", "int").attr("sorted", "int", std::int64_t{1}).infer(unique_infer).add(r);
  onnx_op("Compress", 9).in("input:T").in("condition:T1").out("output:T").tc("T", all).tc("T1", ot::boolean())
      .opt("axis", "int").infer(compress_infer).add(r);
  onnx_op("OneHot", 9).in("indices:T1").in("depth:T2").in("values:T3").out("output:T3").tc("T1", ot::numeric())
      .tc("T2", ot::numeric()).tc("T3", all).attr("axis", "int", std::int64_t{-1}).infer(onehot_infer).add(r);
  onnx_op("TopK", 1).until(9).in("X:T").out("Values:T").out("Indices:i64").tc("T", ot::numeric())
      .attr("axis", "int", std::int64_t{-1}).req("k", "int").infer(topk_infer).add(r);
  onnx_op("TopK", 10).in("X:T").in("K:i64").out("Values:T").out("Indices:i64").tc("T", ot::numeric())
      .attr("axis", "int", std::int64_t{-1}).attr("largest", "int", std::int64_t{1}).attr("sorted", "int", std::int64_t{1})
      .infer(topk_infer).add(r);
  onnx_op("DepthToSpace", 1).in("input:T").out("output:T").tc("T", all).req("blocksize", "int")
      .attr("mode", "string", "DCR").infer(depth_to_space_infer).add(r);
  onnx_op("SpaceToDepth", 1).until(27).in("input:T").out("output:T").tc("T", all).req("blocksize", "int")
      .infer(space_to_depth_infer).add(r);
  onnx_op("SpaceToDepth", 28).in("input:T").out("output:T").tc("T", all).req("blocksize", "int")
      .attr("mode", "string", "DCR").infer(space_to_depth_infer).add(r);

  onnx_op("Identity", 1).in("input:V").out("output:V").infer(same_as_input0)
      .propagate([](infer_context& c) { c.set_value(0, c.input_value(0)); })
      .backward(same_as_output0_backward).add(r);

  // same shape as input 0
  auto same = [&](const char* name, int since, std::vector<const char*> extra_inputs) {
    onnx_op o(name, since);
    o.in("data:T");
    for (const char* e : extra_inputs) o.in(e);
    o.out("output:T").tc("T", all).infer(shape_as_input0);
    return o;
  };
  same("Scatter", 9, {"indices:Tind", "updates:T"}).attr("axis", "int", std::int64_t{0}).add(r);
  same("ScatterElements", 11, {"indices:Tind", "updates:T"}).attr("axis", "int", std::int64_t{0})
      .attr("reduction", "string", "none").add(r);
  same("ScatterND", 11, {"indices:i64", "updates:T"}).attr("reduction", "string", "none").add(r);
  same("CumSum", 11, {"axis:T2"}).attr("exclusive", "int", std::int64_t{0}).attr("reverse", "int", std::int64_t{0}).add(r);
  same("TensorScatter", 24, {"update:T", "write_indices?:i64"}).attr("axis", "int", std::int64_t{-2})
      .attr("mode", "string", "linear").add(r);
  onnx_op("BitCast", 26).in("input:T1").out("output:T2").tc("T1", all).tc("T2", all).req("to", "int")
      .infer([](infer_context& c) {
        const dtype to = c.attr_dtype("to").value_or(dtype::undefined), from = c.input_dtype(0);
        if (to != dtype::undefined && from != dtype::undefined && size_of(to) != size_of(from))
          c.fail("cannot bit-cast " + std::string(to_string(from)) + " to " + std::string(to_string(to)) + " (the widths differ)");
        c.set_tensor(0, to, c.input_shape(0));
      })
      .add(r);
  onnx_op("CenterCropPad", 18).in("input_data:T").in("shape:Tind").out("output_data:T").tc("T", all).tc("Tind", ix)
      .opt("axes", "ints")
      .infer([](infer_context& c) {
        auto rk = c.input_rank(0);
        if (!rk) return;
        std::vector<std::int64_t> raw;
        if (auto a = c.attr_ints("axes")) raw = *a;
        else
          for (std::size_t i = 0; i < *rk; ++i) raw.push_back(static_cast<std::int64_t>(i));
        const auto ax = axes(c, raw, *rk);
        std::vector<dim> out = c.input_shape(0).dims();
        auto want = c.input_dims(1);
        if (want && want->size() != ax.size())
          c.fail("shape has " + std::to_string(want->size()) + " values for " + std::to_string(ax.size()) + " axes");
        for (std::size_t i = 0; i < ax.size(); ++i) out[ax[i]] = want ? (*want)[i] : dim();
        c.set_shape(0, shape(std::move(out)));
      })
      .add(r);
  onnx_op("Col2Im", 18).in("input:T").in("image_shape:i64").in("block_shape:i64").out("output:T").tc("T", all)
      .opt("dilations", "ints").opt("pads", "ints").opt("strides", "ints")
      .infer([](infer_context& c) {
        shape x = c.input_shape(0);
        if (x.has_rank() && x.rank() != 3) c.fail("input must be 3-D, got " + x.to_string());
        auto image = c.input_dims(1);
        auto block = c.input_ints(2);
        dim ch;
        if (x.has_rank() && block) {
          std::int64_t k = 1;
          for (auto b : *block) {
            const auto next = checked_mul(k, b);
            if (!next) c.fail("the product of block_shape " + detail::sizes_text(*block) + " overflows int64");
            k = *next;
          }
          if (k > 0 && x[1].is_known()) {
            if (x[1].value() % k != 0)
              c.fail("input's dimension 1 (" + x[1].to_string() + ") is not a multiple of prod(block_shape) " + std::to_string(k));
            ch = dim(x[1].value() / k);
          }
        }
        if (!image) {
          if (auto n = shape_input_length(c, 1)) c.set_shape(0, shape::unknown_dims(*n + 2));
          return;
        }
        std::vector<dim> out{x.has_rank() ? x[0] : dim(), ch};
        out.insert(out.end(), image->begin(), image->end());
        c.set_shape(0, shape(std::move(out)));
      })
      .add(r);
  same("CumProd", 26, {"axis:T2"}).attr("exclusive", "int", std::int64_t{0}).attr("reverse", "int", std::int64_t{0}).add(r);
  same("Trilu", 14, {"k?:i64"}).attr("upper", "int", std::int64_t{1}).add(r);
  same("ReverseSequence", 10, {"sequence_lens:i64"}).attr("batch_axis", "int", std::int64_t{1})
      .attr("time_axis", "int", std::int64_t{0}).add(r);
}
