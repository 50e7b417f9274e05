// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file nn.hpp
/// ONNX neural-network ops: convolutions (Conv, ConvTranspose, ConvInteger, QLinearConv),
/// pooling (Max/Average/Lp, global, MaxRoiPool, MaxUnpool), normalizations (Batch, Instance,
/// Layer, LRN, MeanVariance, Lp), Dropout, resizing (Upsample, Resize), recurrent layers
/// (RNN, GRU, LSTM), GridSample, RoiAlign, NonMaxSuppression.
///
/// Spatial sizes follow the ONNX formulas; with symbolic sizes they stay affine where the
/// stride is 1 (`n + pads - (k-1)*d`), and are unknown otherwise.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <boost/container/small_vector.hpp>

#include <gpass/ops/onnx/common.hpp>

namespace gpass {

/// Registers the ONNX neural-network ops into `r` (see the file comment).
void register_onnx_nn_ops(op_registry& r);

namespace detail::onnx_ops {

using namespace gpass::onnx_shape;

struct window {
  // inline storage: reading a window allocates nothing for up to 4 spatial dims
  using ints = boost::container::small_vector<std::int64_t, 8>;
  ints kernel, strides, dilations, pads;  // pads: begins then ends
  std::string auto_pad;
  bool ceil_mode = false;
};

// The ints attribute `name` (an int is one value) into `out`, else `count` times `fallback`.
inline void read_window_ints(infer_context& c, std::string_view name, std::size_t count, std::int64_t fallback,
                             window::ints& out) {
  const attribute* a = c.attr(name);
  if (!a) {
    out.assign(count, fallback);
  } else if (a->is<std::vector<std::int64_t>>()) {
    const auto& v = a->as<std::vector<std::int64_t>>();
    out.assign(v.begin(), v.end());
  } else if (a->is<std::int64_t>()) {
    out.assign(1, a->as<std::int64_t>());
  } else {
    c.fail("attribute '" + std::string(name) + "' is a " + std::string(a->kind_name()) + ", expected ints");
  }
}

// Window attributes for `k` spatial dims; `kernel_from` is the weight's spatial dims when the
// kernel_shape attribute is absent (Conv).
inline std::optional<window> read_window(infer_context& c, std::size_t k, const shape* weight) {
  window w;
  if (c.attr("kernel_shape")) read_window_ints(c, "kernel_shape", 0, 0, w.kernel);
  else if (weight && weight->has_rank() && weight->rank() == k + 2) {
    for (std::size_t i = 0; i < k; ++i) {
      if (!(*weight)[i + 2].is_known()) return std::nullopt;
      w.kernel.push_back((*weight)[i + 2].value());
    }
  } else {
    return std::nullopt;
  }
  if (w.kernel.size() != k)
    c.fail("kernel_shape has " + std::to_string(w.kernel.size()) + " values for " + std::to_string(k) + " spatial dims");
  read_window_ints(c, "strides", k, 1, w.strides);
  read_window_ints(c, "dilations", k, 1, w.dilations);
  read_window_ints(c, "pads", 2 * k, 0, w.pads);
  if (w.strides.size() != k) c.fail("strides has " + std::to_string(w.strides.size()) + " values, expected " + std::to_string(k));
  if (w.dilations.size() != k)
    c.fail("dilations has " + std::to_string(w.dilations.size()) + " values, expected " + std::to_string(k));
  if (w.pads.size() != 2 * k) c.fail("pads has " + std::to_string(w.pads.size()) + " values, expected " + std::to_string(2 * k));
  for (auto s : w.strides)
    if (s <= 0) c.fail("strides must be positive");
  for (auto d : w.dilations)
    if (d <= 0) c.fail("dilations must be positive");
  for (auto kk : w.kernel)
    if (kk <= 0) c.fail("kernel_shape must be positive");
  w.auto_pad = c.attr_string("auto_pad", "NOTSET");
  w.ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  return w;
}

inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

// The window's extent with dilation, (kernel - 1) * dilation + 1 (attributes: overflow-checked).
inline std::int64_t effective_kernel(const window& w, std::size_t i) {
  return add_or_throw(mul_or_throw(w.kernel[i] - 1, w.dilations[i], "kernel_shape x dilations"), 1, "kernel_shape x dilations");
}
// The padding of spatial dim i, begin + end (overflow-checked).
inline std::int64_t total_pads(const window& w, std::size_t i) {
  return w.auto_pad == "VALID" ? 0 : add_or_throw(w.pads[i], w.pads[i + w.kernel.size()], "pads");
}

// One output spatial size of a sliding window.
inline dim window_out(infer_context& c, const dim& in, const window& w, std::size_t i) {
  const std::int64_t k = effective_kernel(w, i), s = w.strides[i];
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") {
    if (in.is_known()) return dim(ceil_div(in.value(), s));
    return s == 1 ? in : dim();
  }
  const std::int64_t pads = total_pads(w, i);
  if (in.is_known()) {
    const std::int64_t padded = add_or_throw(in.value(), pads, "padded input"), span = sub_or_throw(padded, k, "padded input");
    if (span < 0) c.fail("window (effective size " + std::to_string(k) + ") larger than the padded input " + std::to_string(padded));
    return dim((w.ceil_mode ? ceil_div(span, s) : floor_div(span, s)) + 1);
  }
  if (s == 1) return add_dims(in, int_dim(add_or_throw(sub_or_throw(pads, k, "pads"), 1, "pads")));
  return dim();
}

inline void conv_infer(infer_context& c) {
  const shape &x = c.input_shape(0), &wt = c.input_shape(c.op() == "QLinearConv" ? 3 : 1);
  if (!x.has_rank()) {
    if (wt.has_rank()) c.set_shape(0, shape::unknown_dims(wt.rank()));
    return;
  }
  if (x.rank() < 3) c.fail("input must have rank >= 3 (N, C, spatial...), got " + x.to_string());
  std::size_t k = x.rank() - 2;
  if (wt.has_rank() && wt.rank() != x.rank())
    c.fail("weight rank " + std::to_string(wt.rank()) + " does not match input rank " + std::to_string(x.rank()));
  std::int64_t group = c.attr_int("group", 1);
  if (wt.has_rank()) c.unify(x[1], wt[1] * group, "(input channels vs weight dim 1 * group)");
  std::vector<dim> out{x[0], wt.has_rank() ? wt[0] : dim()};
  auto w = read_window(c, k, &wt);
  for (std::size_t i = 0; i < k; ++i) out.push_back(w ? window_out(c, x[i + 2], *w, i) : dim());
  c.set_shape(0, shape(std::move(out)));
}

inline void conv_transpose_infer(infer_context& c) {
  shape x = c.input_shape(0), wt = c.input_shape(1);
  if (!x.has_rank()) return;
  if (x.rank() < 3) c.fail("input must have rank >= 3 (N, C, spatial...), got " + x.to_string());
  std::size_t k = x.rank() - 2;
  if (wt.has_rank() && wt.rank() != x.rank())
    c.fail("weight rank " + std::to_string(wt.rank()) + " does not match input rank " + std::to_string(x.rank()));
  std::int64_t group = c.attr_int("group", 1);
  if (wt.has_rank()) c.unify(x[1], wt[0], "(input channels vs weight dim 0)");
  std::vector<dim> out{x[0], wt.has_rank() ? wt[1] * group : dim()};
  if (auto os = c.attr_ints("output_shape")) {
    if (os->size() < k) c.fail("output_shape has " + std::to_string(os->size()) + " values for " + std::to_string(k) + " spatial dims");
    for (std::size_t i = os->size() - k; i < os->size(); ++i) out.push_back(dim((*os)[i]));
    c.set_shape(0, shape(std::move(out)));
    return;
  }
  auto w = read_window(c, k, &wt);
  auto op = c.attr_ints("output_padding").value_or(std::vector<std::int64_t>(k, 0));
  for (std::size_t i = 0; i < k; ++i) {
    if (!w || i >= op.size()) {
      out.push_back(dim());
      continue;
    }
    const dim& d = x[i + 2];
    const std::int64_t s = w->strides[i], ke = effective_kernel(*w, i);
    if (w->auto_pad == "SAME_UPPER" || w->auto_pad == "SAME_LOWER") {
      out.push_back(mul_dims(d, dim(s)));
      continue;
    }
    const std::int64_t pads = total_pads(*w, i);
    // s*(d-1) + output_padding + ke - pads
    const std::int64_t extra = sub_or_throw(add_or_throw(add_or_throw(op[i], -s, "output_padding"), ke, "output_padding"), pads, "pads");
    out.push_back(add_dims(mul_dims(d, dim(s)), int_dim(extra)));
  }
  c.set_shape(0, shape(std::move(out)));
}

// The output shape of a pooling-like op over input 0 (rank >= 3: N, C, spatial...): N, C, then
// `spatial(x_i, window, i)` for each spatial dim i, or unknown dims when the window
// attributes cannot be read. Nothing when input 0's rank is unknown.
template <class Spatial>
inline std::optional<shape> pool_out_shape(infer_context& c, Spatial spatial) {
  const shape& x = c.input_shape(0);
  if (!x.has_rank()) return std::nullopt;
  if (x.rank() < 3) c.fail("input must have rank >= 3 (N, C, spatial...), got " + x.to_string());
  std::size_t k = x.rank() - 2;
  auto w = read_window(c, k, nullptr);
  std::vector<dim> out{x[0], x[1]};
  for (std::size_t i = 0; i < k; ++i) out.push_back(w ? spatial(x[i + 2], *w, i) : dim());
  return shape(std::move(out));
}

inline void pool_infer(infer_context& c) {
  auto out = pool_out_shape(c, [&c](const dim& in, const window& w, std::size_t i) { return window_out(c, in, w, i); });
  if (!out) return;
  c.set_shape(0, *out);
  c.set_tensor(1, dtype::int64, *out);  // MaxPool's Indices
}

inline void global_pool_infer(infer_context& c) {
  shape x = c.input_shape(0);
  if (!x.has_rank()) return;
  if (x.rank() < 2) c.fail("input must have rank >= 2, got " + x.to_string());
  std::vector<dim> out{x[0], x[1]};
  out.resize(x.rank(), dim(1));
  c.set_shape(0, shape(std::move(out)));
}

inline void max_unpool_infer(infer_context& c) {
  if (c.has_input(2)) {
    if (auto d = c.input_dims(2)) c.set_shape(0, shape(*d));
    else if (auto r = c.input_rank(0)) c.set_shape(0, shape::unknown_dims(*r));
    return;
  }
  auto out = pool_out_shape(c, [](const dim& in, const window& w, std::size_t i) {
    // (MaxUnpool's output ignores auto_pad: the pads as given)
    const std::int64_t pads = add_or_throw(w.pads[i], w.pads[i + w.kernel.size()], "pads");
    return add_dims(mul_dims(in, dim(w.strides[i])), int_dim(sub_or_throw(w.kernel[i] - w.strides[i], pads, "pads")));
  });
  if (out) c.set_shape(0, std::move(*out));
}

inline void batch_norm_infer(infer_context& c) {
  shape x = c.input_shape(0);
  c.set_shape(0, x);
  dim ch = x.has_rank() && x.rank() >= 2 ? x[1] : dim();
  for (std::size_t i = 1; i < 5; ++i)
    if (auto r = c.input_rank(i); r && *r == 1 && x.has_rank() && x.rank() >= 2 &&
        (c.opset() == 0 || c.opset() >= 9))
      ch = c.unify(ch, c.input_shape(i)[0], "(channels of input " + std::to_string(i) + ")");
  dtype stat = c.input_dtype(3);
  for (std::size_t k = 1; k < c.num_outputs(); ++k) c.set_tensor(k, stat == dtype::undefined ? c.input_dtype(0) : stat, shape{ch});
}

inline void layer_norm_infer(infer_context& c) {
  shape x = c.input_shape(0);
  c.set_shape(0, x);
  dtype u = c.attr_int("stash_type", 1) == 1 ? dtype::f32 : c.input_dtype(0);
  if (!x.has_rank()) {
    c.set_tensor(1, u, shape());
    c.set_tensor(2, u, shape());
    return;
  }
  std::size_t a = axis(c, c.attr_int("axis", -1), x.rank());
  shape m = x;
  for (std::size_t i = a; i < x.rank(); ++i) m[i] = dim(1);
  c.set_tensor(1, u, m);
  c.set_tensor(2, u, m);
}

inline void dropout_infer(infer_context& c) {
  c.set_shape(0, c.input_shape(0));
  dtype mask = c.opset() != 0 && c.opset() < 10 ? c.input_dtype(0) : dtype::bool_;
  c.set_tensor(1, mask, c.input_shape(0));
}

// floor(d * s), a known dim scaled; fails when it is past int64 (casting it would be UB).
inline dim scaled_dim(infer_context& c, std::int64_t d, double s) {
  const double x = std::floor(static_cast<double>(d) * s);
  const auto r = double_to_int64(x);
  if (!r) c.fail("scale " + std::to_string(s) + " makes a size of " + std::to_string(d) + " past int64");
  return dim(*r);
}

// Output sizes from scales (floor(d * s)) or sizes.
inline void resize_to(infer_context& c, std::optional<std::vector<double>> scales, std::optional<std::vector<dim>> sizes) {
  shape x = c.input_shape(0);
  if (sizes && !sizes->empty()) {
    if (x.has_rank() && sizes->size() != x.rank())
      c.fail("sizes has " + std::to_string(sizes->size()) + " values for rank " + std::to_string(x.rank()));
    c.set_shape(0, shape(*sizes));
    return;
  }
  if (!x.has_rank()) return;
  if (!scales || scales->empty()) {
    c.set_shape(0, shape::unknown_dims(x.rank()));
    return;
  }
  if (scales->size() != x.rank())
    c.fail("scales has " + std::to_string(scales->size()) + " values for rank " + std::to_string(x.rank()));
  std::vector<dim> out;
  for (std::size_t i = 0; i < x.rank(); ++i) {
    double s = (*scales)[i];
    if (!(s > 0)) c.fail("scale " + std::to_string(s) + " must be positive");  // (NaN too)
    const dim& d = x[i];
    if (d.is_known()) out.push_back(scaled_dim(c, d.value(), s));
    else if (s == std::floor(s) && double_to_int64(s)) out.push_back(d * static_cast<std::int64_t>(s));
    else out.push_back(dim());
  }
  c.set_shape(0, shape(std::move(out)));
}

inline void upsample_infer(infer_context& c) {
  if (c.has_input(1)) return resize_to(c, c.input_doubles(1), std::nullopt);
  if (auto s = c.attr_floats("scales")) return resize_to(c, s, std::nullopt);
  if (c.attr("height_scale")) {  // opset 1: NCHW with height/width scales
    return resize_to(c, std::vector<double>{1.0, 1.0, c.attr_float("height_scale", 1), c.attr_float("width_scale", 1)},
                     std::nullopt);
  }
}

inline void resize_infer(infer_context& c) {
  if (c.opset() != 0 && c.opset() < 11) return resize_to(c, c.input_doubles(1), std::nullopt);
  std::optional<std::vector<dim>> sizes;
  if (c.has_input(3)) {
    sizes = c.input_dims(3);
    if (!sizes) {
      if (auto r = c.input_rank(0)) c.set_shape(0, shape::unknown_dims(*r));
      return;
    }
  }
  std::optional<std::vector<double>> scales;
  if (c.has_input(2)) {
    scales = c.input_doubles(2);
    if (!scales && !sizes) {
      // an empty scales tensor means "use sizes"
      if (auto r = c.input_rank(0)) c.set_shape(0, shape::unknown_dims(*r));
      return;
    }
  }
  const auto axes_attr = c.attr_ints("axes");
  const std::string policy = c.attr_string("keep_aspect_ratio_policy", "stretch");
  if (!axes_attr && (policy == "stretch" || !sizes || sizes->empty())) return resize_to(c, scales, sizes);
  // Resize-18: scales / sizes for the listed axes only (the others keep their size), and
  // sizes adjusted to keep the aspect ratio ("not_larger" / "not_smaller")
  shape x = c.input_shape(0);
  if (!x.has_rank()) return;
  const std::size_t rank = x.rank();
  std::vector<std::int64_t> ax_raw;
  if (axes_attr) ax_raw = *axes_attr;
  else
    for (std::size_t i = 0; i < rank; ++i) ax_raw.push_back(static_cast<std::int64_t>(i));
  const auto ax = axes(c, ax_raw, rank);
  const bool use_sizes = sizes && !sizes->empty();
  const std::size_t given = use_sizes ? sizes->size() : scales ? scales->size() : 0;
  if (given == 0) return c.set_shape(0, shape::unknown_dims(rank));
  if (given != ax.size())
    c.fail(std::string(use_sizes ? "sizes" : "scales") + " has " + std::to_string(given) + " values for " +
           std::to_string(ax.size()) + " axes");
  std::vector<dim> out = x.dims();
  if (!use_sizes) {
    for (std::size_t i = 0; i < ax.size(); ++i) {
      const double s = (*scales)[i];
      if (!(s > 0)) c.fail("scale " + std::to_string(s) + " must be positive");
      const dim& d = x[ax[i]];
      out[ax[i]] = d.is_known() ? scaled_dim(c, d.value(), s) : dim();
    }
  } else if (policy == "stretch") {
    for (std::size_t i = 0; i < ax.size(); ++i) out[ax[i]] = (*sizes)[i];
  } else {
    if (policy != "not_larger" && policy != "not_smaller")
      c.fail("keep_aspect_ratio_policy must be stretch, not_larger or not_smaller, not '" + policy + "'");
    double scale = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
    for (std::size_t i = 0; i < ax.size(); ++i) {
      const dim& d = x[ax[i]];
      if (!d.is_known() || !(*sizes)[i].is_known() || d.value() == 0) return c.set_shape(0, shape::unknown_dims(rank));
      const double s = static_cast<double>((*sizes)[i].value()) / static_cast<double>(d.value());
      scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
    }
    for (std::size_t a : ax) {
      const auto n = double_to_int64(scale * static_cast<double>(x[a].value()) + 0.5);  // (UB to cast past int64)
      if (!n) c.fail("the aspect-ratio scale " + std::to_string(scale) + " makes dim " + std::to_string(a) + " (size " +
                     x[a].to_string() + ") past int64");
      out[a] = dim(*n);
    }
  }
  c.set_shape(0, shape(std::move(out)));
}

inline void rnn_infer(infer_context& c) {
  shape x = c.input_shape(0), w = c.input_shape(1);
  std::string dir = c.attr_string("direction", "forward");
  dim dirs = dir == "bidirectional" ? dim(2) : dim(1);
  dim hidden;
  if (const attribute* h = c.attr("hidden_size")) hidden = dim(h->as<std::int64_t>());
  else if (w.has_rank() && w.rank() == 3) {
    std::int64_t gates = c.op() == "LSTM" ? 4 : c.op() == "GRU" ? 3 : 1;
    hidden = w[1] / gates;
  }
  const bool batch_first = c.attr_int("layout", 0) != 0;
  dim seq, batch;
  if (x.has_rank()) {
    if (x.rank() != 3) c.fail("X must be 3-D, got " + x.to_string());
    seq = batch_first ? x[1] : x[0];
    batch = batch_first ? x[0] : x[1];
  }
  if (batch_first) {
    c.set_shape(0, shape{batch, seq, dirs, hidden});
    c.set_shape(1, shape{batch, dirs, hidden});
    c.set_shape(2, shape{batch, dirs, hidden});
  } else {
    c.set_shape(0, shape{seq, dirs, batch, hidden});
    c.set_shape(1, shape{dirs, batch, hidden});
    c.set_shape(2, shape{dirs, batch, hidden});
  }
}

}  // namespace detail::onnx_ops
}  // namespace gpass

inline void gpass::register_onnx_nn_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  namespace ot = onnx_types;
  const auto fl = ot::floats();
  const auto num = ot::numeric();
  auto window_attrs = [](onnx_op& o) -> onnx_op& {
    return o.attr("auto_pad", "string", "NOTSET").opt("kernel_shape", "ints").opt("pads", "ints").opt("strides", "ints");
  };

  {
    onnx_op o("Conv", 1);
    o.in("X:T").in("W:T").in("B?:T").out("Y:T").tc("T", fl).opt("dilations", "ints").attr("group", "int", std::int64_t{1});
    window_attrs(o).infer(conv_infer).add(r);
  }
  // act(Conv(X, W, B) + Z): gpass's fused op (the optimizer's -O3) and ONNX Runtime's
  // (com.microsoft, what its extended optimizer saves), alike
  for (const char* domain : {"gpass", "com.microsoft"}) {
    onnx_op o("FusedConv", 1);
    o.in("X:T").in("W:T").in("B?:T").in("Z?:T").out("Y:T").tc("T", fl).opt("dilations", "ints")
        .attr("group", "int", std::int64_t{1}).attr("activation", "string", "").opt("activation_params", "floats");
    op_schema s = window_attrs(o).infer(conv_infer).doc("Conv, plus Z, through `activation`").build();
    s.domain = domain;
    r.add(std::move(s));
  }
  {
    onnx_op o("ConvInteger", 10);
    o.in("x:T1").in("w:T2").in("x_zero_point?:T1").in("w_zero_point?:T2").out("y:i32").tc("T1", ot::ints())
        .tc("T2", ot::ints()).opt("dilations", "ints").attr("group", "int", std::int64_t{1});
    window_attrs(o).infer(conv_infer).add(r);
  }
  {
    onnx_op o("QLinearConv", 10);
    o.in("x:T1").in("x_scale:f32").in("x_zero_point:T1").in("w:T2").in("w_scale:f32").in("w_zero_point:T2")
        .in("y_scale:f32").in("y_zero_point:T3").in("B?:i32").out("y:T3").tc("T1", ot::ints()).tc("T2", ot::ints())
        .tc("T3", ot::ints()).opt("dilations", "ints").attr("group", "int", std::int64_t{1});
    window_attrs(o).infer(conv_infer).add(r);
  }
  {
    onnx_op o("ConvTranspose", 1);
    o.in("X:T").in("W:T").in("B?:T").out("Y:T").tc("T", fl).opt("dilations", "ints").attr("group", "int", std::int64_t{1})
        .opt("output_padding", "ints").opt("output_shape", "ints");
    window_attrs(o).infer(conv_transpose_infer).add(r);
  }
  {
    onnx_op o("MaxPool", 1);
    o.in("X:T").out("Y:T").out("Indices?:i64").tc("T", num).attr("ceil_mode", "int", std::int64_t{0})
        .opt("dilations", "ints").attr("storage_order", "int", std::int64_t{0});
    window_attrs(o).infer(pool_infer).add(r);
  }
  {
    onnx_op o("AveragePool", 1);
    o.until(18).in("X:T").out("Y:T").tc("T", fl).attr("ceil_mode", "int", std::int64_t{0})
        .attr("count_include_pad", "int", std::int64_t{0});
    window_attrs(o).infer(pool_infer).add(r);
  }
  {
    onnx_op o("AveragePool", 19);  // dilations
    o.in("X:T").out("Y:T").tc("T", fl).attr("ceil_mode", "int", std::int64_t{0})
        .attr("count_include_pad", "int", std::int64_t{0}).opt("dilations", "ints");
    window_attrs(o).infer(pool_infer).add(r);
  }
  {
    onnx_op o("LpPool", 1);
    o.until(17).in("X:T").out("Y:T").tc("T", fl).attr("p", "int", std::int64_t{2});
    window_attrs(o).infer(pool_infer).add(r);
  }
  {
    onnx_op o("LpPool", 18);  // ceil_mode, dilations
    o.in("X:T").out("Y:T").tc("T", fl).attr("p", "int", std::int64_t{2}).attr("ceil_mode", "int", std::int64_t{0})
        .opt("dilations", "ints");
    window_attrs(o).infer(pool_infer).add(r);
  }
  for (const char* n : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
    onnx_op(n, 1).in("X:T").out("Y:T").tc("T", fl).infer(global_pool_infer).add(r);
  onnx_op("MaxRoiPool", 1).in("X:T").in("rois:T").out("Y:T").tc("T", fl).req("pooled_shape", "ints")
      .attr("spatial_scale", "float", 1.0)
      .infer([](infer_context& c) {
        shape x = c.input_shape(0), rois = c.input_shape(1);
        auto ps = c.attr_ints("pooled_shape");
        if (!ps || ps->size() != 2) c.fail("pooled_shape must have 2 values");
        c.set_shape(0, shape{rois.has_rank() && rois.rank() == 2 ? rois[0] : dim(),
                             x.has_rank() && x.rank() == 4 ? x[1] : dim(), dim((*ps)[0]), dim((*ps)[1])});
      })
      .add(r);
  onnx_op("MaxUnpool", 9).in("X:T1").in("I:i64").in("output_shape?:i64").out("output:T1").tc("T1", num)
      .req("kernel_shape", "ints").opt("pads", "ints").opt("strides", "ints").infer(max_unpool_infer).add(r);

  onnx_op("BatchNormalization", 1).until(13).in("X:T").in("scale:T").in("B:T").in("mean:T").in("var:T").out("Y:T")
      .out("mean?:T").out("var?:T").out("saved_mean?:T").out("saved_var?:T").tc("T", fl).attr("epsilon", "float", 1e-5)
      .attr("momentum", "float", 0.9).infer(batch_norm_infer).add(r);
  onnx_op("BatchNormalization", 14).in("X:T").in("scale:T1").in("B:T1").in("input_mean:T2").in("input_var:T2")
      .out("Y:T").out("running_mean?:T2").out("running_var?:T2").tc("T", fl).tc("T1", fl).tc("T2", fl)
      .attr("epsilon", "float", 1e-5).attr("momentum", "float", 0.9).attr("training_mode", "int", std::int64_t{0})
      .infer(batch_norm_infer).add(r);
  onnx_op("InstanceNormalization", 1).in("input:T").in("scale:T").in("B:T").out("output:T").tc("T", fl)
      .attr("epsilon", "float", 1e-5).infer(shape_as_input0).add(r);
  onnx_op("LayerNormalization", 17).in("X:T").in("Scale:T").in("B?:T").out("Y:T").out("Mean?:U").out("InvStdDev?:U")
      .tc("T", fl).tc("U", fl).attr("axis", "int", std::int64_t{-1}).attr("epsilon", "float", 1e-5)
      .attr("stash_type", "int", std::int64_t{1}).infer(layer_norm_infer).add(r);
  onnx_op("LRN", 1).in("X:T").out("Y:T").tc("T", fl).attr("alpha", "float", 1e-4).attr("beta", "float", 0.75)
      .attr("bias", "float", 1.0).req("size", "int").infer(shape_as_input0).add(r);
  onnx_op("MeanVarianceNormalization", 9).in("X:T").out("Y:T").tc("T", fl)
      .attr("axes", "ints", std::vector<std::int64_t>{0, 2, 3}).infer(shape_as_input0).add(r);
  onnx_op("LpNormalization", 1).in("input:T").out("output:T").tc("T", fl).attr("axis", "int", std::int64_t{-1})
      .attr("p", "int", std::int64_t{2}).infer(shape_as_input0).add(r);

  onnx_op("Dropout", 1).until(11).in("data:T").out("output:T").out("mask?:T1").tc("T", fl)
      .attr("ratio", "float", 0.5).infer(dropout_infer).backward(same_as_output0_backward).add(r);
  onnx_op("Dropout", 12).in("data:T").in("ratio?:T1").in("training_mode?:T2").out("output:T").out("mask?:T2")
      .tc("T", fl).tc("T1", fl).tc("T2", ot::boolean()).opt("seed", "int").infer(dropout_infer)
      .backward(same_as_output0_backward).add(r);

  onnx_op("Upsample", 1).until(8).in("X:T").out("Y:T").tc("T", num).attr("mode", "string", "nearest")
      .opt("scales", "floats").opt("height_scale", "float").opt("width_scale", "float").infer(upsample_infer).add(r);
  onnx_op("Upsample", 9).in("X:T").in("scales:f32").out("Y:T").tc("T", num).attr("mode", "string", "nearest")
      .infer(upsample_infer).add(r);
  onnx_op("Resize", 10).until(10).in("X:T").in("scales:f32").out("Y:T").tc("T", num).attr("mode", "string", "nearest")
      .infer(resize_infer).add(r);
  onnx_op("Resize", 11).until(17).in("X:T1").in("roi?:T2").in("scales?:f32").in("sizes?:i64").out("Y:T1").tc("T1", num)
      .tc("T2", fl).attr("coordinate_transformation_mode", "string", "half_pixel").attr("cubic_coeff_a", "float", -0.75)
      .attr("exclude_outside", "int", std::int64_t{0}).attr("extrapolation_value", "float", 0.0)
      .attr("mode", "string", "nearest").attr("nearest_mode", "string", "round_prefer_floor").infer(resize_infer).add(r);
  // Resize-18: axes, antialias, keep_aspect_ratio_policy (Resize-19 adds the coordinate mode
  // half_pixel_symmetric: no signature change)
  onnx_op("Resize", 18).in("X:T1").in("roi?:T2").in("scales?:f32").in("sizes?:i64").out("Y:T1").tc("T1", num)
      .tc("T2", fl).attr("antialias", "int", std::int64_t{0}).opt("axes", "ints")
      .attr("coordinate_transformation_mode", "string", "half_pixel").attr("cubic_coeff_a", "float", -0.75)
      .attr("exclude_outside", "int", std::int64_t{0}).attr("extrapolation_value", "float", 0.0)
      .attr("keep_aspect_ratio_policy", "string", "stretch").attr("mode", "string", "nearest")
      .attr("nearest_mode", "string", "round_prefer_floor").infer(resize_infer).add(r);

  struct rnn {
    const char* name;
    std::vector<const char*> ins;
    std::vector<const char*> outs;
  };
  for (const auto& x : {rnn{"RNN", {"X:T", "W:T", "R:T", "B?:T", "sequence_lens?:T1", "initial_h?:T"}, {"Y?:T", "Y_h?:T"}},
                        rnn{"GRU", {"X:T", "W:T", "R:T", "B?:T", "sequence_lens?:T1", "initial_h?:T"}, {"Y?:T", "Y_h?:T"}},
                        rnn{"LSTM",
                            {"X:T", "W:T", "R:T", "B?:T", "sequence_lens?:T1", "initial_h?:T", "initial_c?:T", "P?:T"},
                            {"Y?:T", "Y_h?:T", "Y_c?:T"}}}) {
    onnx_op o(x.name, 1);
    for (const char* i : x.ins) o.in(i);
    for (const char* i : x.outs) o.out(i);
    o.tc("T", fl).tc("T1", {dtype::int32}).opt("activation_alpha", "floats").opt("activation_beta", "floats")
        .opt("activations", "strings").opt("clip", "float").attr("direction", "string", "forward")
        .opt("hidden_size", "int").attr("layout", "int", std::int64_t{0}).infer(rnn_infer).add(r);
  }

  onnx_op("GridSample", 16).in("X:T1").in("grid:T2").out("Y:T1").tc("T1", ot::all()).tc("T2", fl)
      .attr("align_corners", "int", std::int64_t{0}).attr("mode", "string", "bilinear")
      .attr("padding_mode", "string", "zeros")
      .infer([](infer_context& c) {
        shape x = c.input_shape(0), g = c.input_shape(1);
        if (x.has_rank() && x.rank() != 4) c.fail("X must be 4-D, got " + x.to_string());
        if (g.has_rank() && g.rank() != 4) c.fail("grid must be 4-D, got " + g.to_string());
        dim n = x.has_rank() ? x[0] : dim();
        if (g.has_rank()) n = c.unify(n, g[0], "(batch of grid)");
        c.set_shape(0, shape{n, x.has_rank() ? x[1] : dim(), g.has_rank() ? g[1] : dim(), g.has_rank() ? g[2] : dim()});
      })
      .add(r);
  onnx_op("DeformConv", 19).in("X:T").in("W:T").in("offset:T").in("B?:T").in("mask?:T").out("Y:T").tc("T", fl)
      .opt("dilations", "ints").attr("group", "int", std::int64_t{1}).opt("kernel_shape", "ints")
      .attr("offset_group", "int", std::int64_t{1}).opt("pads", "ints").opt("strides", "ints")
      .infer([](infer_context& c) {
        shape x = c.input_shape(0), w = c.input_shape(1), off = c.input_shape(2);
        if (x.has_rank() && x.rank() != 4) c.fail("only 2-D DeformConv is supported, X is " + x.to_string());
        // the output's spatial sizes are the offset's
        c.set_shape(0, shape{x.has_rank() ? x[0] : dim(), w.has_rank() ? w[0] : dim(),
                             off.has_rank() && off.rank() == 4 ? off[2] : dim(), off.has_rank() && off.rank() == 4 ? off[3] : dim()});
      })
      .add(r);
  // ONNX Runtime's com.microsoft activations and SkipLayerNormalization
  {
    auto ms = [&](onnx_op o) {
      op_schema s = o.build();
      s.domain = "com.microsoft";
      r.add(std::move(s));
    };
    ms(onnx_op("Gelu", 1).in("X:T").out("Y:T").tc("T", fl).infer(same_as_input0));
    ms(onnx_op("QuickGelu", 1).in("X:T").out("Y:T").tc("T", fl).attr("alpha", "float", 1.702).infer(same_as_input0));
    ms(onnx_op("BiasGelu", 1).in("A:T").in("B:T").out("C:T").tc("T", fl).infer(shape_as_input0));
    ms(onnx_op("FastGelu", 1).in("X:T").in("bias?:T").out("Y:T").tc("T", fl).infer(shape_as_input0));
    // the Skip*LayerNormalization outputs: the input's shape broadcast with the skip's (ONNX
    // Runtime takes a skip of [1, S, H] or [S, H] too; gpass any NumPy broadcast); mean and
    // inv_std_var f32 with the last axis 1
    auto skip_norm_shapes = [](infer_context& c) {
      shape x = broadcast_inputs(c, 0, 2);
      c.set_shape(0, x);
      if (c.num_outputs() > 3) c.set_shape(3, x);
      if (x.has_rank() && x.rank() >= 1) {
        std::vector<dim> d = x.dims();
        d.back() = dim(1);
        for (std::size_t k = 1; k < 3 && k < c.num_outputs(); ++k) c.set_tensor(k, dtype::f32, shape(d));
      }
    };
    ms(onnx_op("SkipLayerNormalization", 1).in("input:T").in("skip:T").in("gamma:T").in("beta?:T").in("bias?:T")
           .out("output:T").out("mean?:U").out("inv_std_var?:U").out("input_skip_bias_sum?:T").tc("T", fl)
           .tc("U", {dtype::f32}).attr("epsilon", "float", 1e-12)
           .infer(skip_norm_shapes));
    ms(onnx_op("SkipSimplifiedLayerNormalization", 1).in("input:T").in("skip:T").in("gamma:T").in("bias?:T")
           .out("output:T").out("mean?:U").out("inv_std_var?:U").out("input_skip_bias_sum?:T").tc("T", fl)
           .tc("U", {dtype::f32}).attr("epsilon", "float", 1e-12)
           .infer(skip_norm_shapes));
    ms(onnx_op("Attention", 1).in("input:T").in("weights:T").in("bias?:T").in("mask_index?:M").in("past?:T")
           .in("attention_bias?:T").in("past_sequence_length?:M").out("output:T").out("present?:T").tc("T", fl)
           .tc("M", {dtype::int32}).req("num_heads", "int").attr("unidirectional", "int", std::int64_t{0})
           .attr("mask_filter_value", "float", -10000.0).attr("scale", "float", 0.0)
           .opt("qkv_hidden_sizes", "ints").attr("past_present_share_buffer", "int", std::int64_t{0})
           .attr("do_rotary", "int", std::int64_t{0})
           .infer([](infer_context& c) {
             shape x = c.input_shape(0), w = c.input_shape(1);
             dim hv;
             if (w.has_rank() && w.rank() == 2 && w[1].is_known() && w[1].value() % 3 == 0) hv = dim(w[1].value() / 3);
             if (auto q = c.attr_ints("qkv_hidden_sizes"); q && q->size() == 3) hv = dim((*q)[2]);
             c.set_tensor(0, c.input_dtype(0), x.has_rank() && x.rank() == 3 ? shape{x[0], x[1], hv} : shape());
             // present [2, B, N, P + S, head size] from past [2, B, N, P, head size]
             if (c.num_outputs() > 1 && c.has_input(4)) {
               const shape p = c.input_shape(4);
               c.set_tensor(1, c.input_dtype(0), p.has_rank() && p.rank() == 5 && x.has_rank() && x.rank() == 3
                                                     ? shape{p[0], p[1], p[2], add_dims(p[3], x[1]), p[4]}
                                                     : shape());
             }
           }));
    // MultiHeadAttention: output [B, S, Dv]; present_key / present_value [B, N, P + L, H]
    ms(onnx_op("MultiHeadAttention", 1).in("query:T").in("key?:T").in("value?:T").in("bias?:T").in("key_padding_mask?:M")
           .in("attention_bias?:T").in("past_key?:T").in("past_value?:T").in("past_sequence_length?:M")
           .in("cache_indirection?:M").out("output:T").out("present_key?:T").out("present_value?:T").out("qk?:QK")
           .tc("T", fl).tc("M", {dtype::int32}).tc("QK", fl).req("num_heads", "int").attr("unidirectional", "int", std::int64_t{0})
           .attr("mask_filter_value", "float", -10000.0).attr("scale", "float", 0.0)
           .infer([](infer_context& c) {
             const dim N(c.attr_int("num_heads", 1));
             if (N.value() <= 0) c.fail("num_heads must be positive");
             const shape q = c.input_shape(0);
             const shape k = c.has_input(1) ? c.input_shape(1) : shape(), v = c.has_input(2) ? c.input_shape(2) : shape();
             if (q.has_rank() && q.rank() != 3 && q.rank() != 5) c.fail("query must be [B, S, D] or packed [B, S, N, 3, H], got " + q.to_string());
             dim B, S, Hq, Hv, L;
             if (q.has_rank()) {
               B = q[0];
               S = q[1];
               Hq = q.rank() == 5 ? q[4] : div_dims(q[2], N);
             }
             if (q.has_rank() && q.rank() == 5) {
               Hv = Hq;
               L = S;
             } else if (k.has_rank() && k.rank() == 5) {
               Hv = k[4];
               L = k[1];
             } else {
               if (k.has_rank()) L = k.rank() == 4 ? k[2] : k[1];
               if (v.has_rank()) Hv = v.rank() == 4 ? v[3] : div_dims(v[v.rank() - 1], N);
             }
             const dim P = c.has_input(6) && c.input_shape(6).has_rank() && c.input_shape(6).rank() == 4 ? c.input_shape(6)[2] : dim(0);
             const dim total = c.has_input(6) ? add_dims(P, L) : L;
             c.set_tensor(0, c.input_dtype(0), q.has_rank() ? shape{B, S, mul_dims(N, Hv)} : shape());
             if (c.num_outputs() > 1) c.set_tensor(1, c.input_dtype(0), shape{B, N, total, Hq});
             if (c.num_outputs() > 2) c.set_tensor(2, c.input_dtype(0), shape{B, N, total, Hv});
             if (c.num_outputs() > 3) c.set_tensor(3, c.input_dtype(0), shape{B, N, S, total});
           }));
    ms(onnx_op("EmbedLayerNormalization", 1).in("input_ids:T1").in("segment_ids?:T1").in("word_embedding:T")
           .in("position_embedding:T").in("segment_embedding?:T").in("gamma:T").in("beta:T").in("mask?:T1")
           .in("position_ids?:T1").out("output:T").out("mask_index?:T1").out("embedding_sum?:T").tc("T1", {dtype::int32})
           .tc("T", fl).attr("epsilon", "float", 1e-12).attr("mask_index_type", "int", std::int64_t{1})
           .infer([](infer_context& c) {
             shape ids = c.input_shape(0), w = c.input_shape(2);
             const dim h = w.has_rank() && w.rank() == 2 ? w[1] : dim();
             const shape out = ids.has_rank() && ids.rank() == 2 ? shape{ids[0], ids[1], h} : shape();
             c.set_tensor(0, c.input_dtype(2), out);
             if (c.num_outputs() > 1) c.set_tensor(1, dtype::int32, ids.has_rank() && ids.rank() == 2 ? shape{ids[0]} : shape());
             if (c.num_outputs() > 2) c.set_tensor(2, c.input_dtype(2), out);
           }));
  }
  onnx_op("AffineGrid", 20).in("theta:T1").in("size:T2").out("grid:T1").tc("T1", fl).tc("T2", {dtype::int64})
      .attr("align_corners", "int", std::int64_t{0})
      .infer([](infer_context& c) {
        shape t = c.input_shape(0);
        if (t.has_rank() && t.rank() != 3) c.fail("theta must be 3-D, got " + t.to_string());
        auto size = c.input_dims(1);
        if (!size) {
          shape ss = c.input_shape(1);  // the length of size gives the rank
          if (ss.has_rank() && ss.rank() == 1 && ss[0].is_known()) {
            const std::int64_t k = ss[0].value();
            if (k != 4 && k != 5) c.fail("size must have 4 or 5 values, got " + std::to_string(k));
            c.set_shape(0, shape::unknown_dims(static_cast<std::size_t>(k)));
          }
          return;
        }
        if (size->size() != 4 && size->size() != 5)
          c.fail("size must have 4 (2-D) or 5 (3-D) values, got " + std::to_string(size->size()));
        std::vector<dim> out{(*size)[0]};
        out.insert(out.end(), size->begin() + 2, size->end());
        out.push_back(dim(static_cast<std::int64_t>(size->size() - 2)));
        if (t.has_rank()) out[0] = c.unify(out[0], t[0], "(batch of theta)");
        c.set_shape(0, shape(std::move(out)));
      })
      .add(r);
  onnx_op("RoiAlign", 10).in("X:T1").in("rois:T1").in("batch_indices:T2").out("Y:T1").tc("T1", fl)
      .tc("T2", {dtype::int64}).attr("mode", "string", "avg").attr("output_height", "int", std::int64_t{1})
      .attr("output_width", "int", std::int64_t{1}).attr("sampling_ratio", "int", std::int64_t{0})
      .attr("spatial_scale", "float", 1.0).attr("coordinate_transformation_mode", "string", "half_pixel")
      .infer([](infer_context& c) {
        shape x = c.input_shape(0), rois = c.input_shape(1);
        c.set_shape(0, shape{rois.has_rank() && rois.rank() == 2 ? rois[0] : dim(),
                             x.has_rank() && x.rank() == 4 ? x[1] : dim(), dim(c.attr_int("output_height", 1)),
                             dim(c.attr_int("output_width", 1))});
      })
      .add(r);
  onnx_op("NonMaxSuppression", 10).in("boxes:f32").in("scores:f32").in("max_output_boxes_per_class?:i64")
      .in("iou_threshold?:f32").in("score_threshold?:f32").out("selected_indices:i64")
      .attr("center_point_box", "int", std::int64_t{0})
      .infer([](infer_context& c) { c.set_tensor(0, dtype::int64, shape{c.fresh_dim("0"), dim(3)}); })
      .add(r);
}
