// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file resize_rules.hpp
/// What every executor's Resize / Upsample shares: the attributes read once
/// (`read_resize_options`), the output sizes from scales or sizes with axes, roi and
/// keep_aspect_ratio_policy (`plan_resize`), and per resized axis the source indices and
/// weights of each output position (`plan_resize_axis`: nearest with its rounding modes,
/// linear and cubic with antialias and exclude_outside, every coordinate transformation
/// mode). Errors name the node.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec::resize_rules {

using i64 = std::int64_t;

/// Resize / Upsample settings read once from the attributes.
struct resize_options {
  int mode = 0;        ///< 0 nearest, 1 linear, 2 cubic
  std::string coord;   ///< coordinate_transformation_mode
  std::string nearest; ///< nearest_mode ("simple": the pre-11 rule)
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  bool antialias = false;
  std::optional<std::vector<i64>> axes;
  std::string keep_aspect;
  std::optional<std::vector<float>> scales_attr;  ///< Upsample-7
  bool upsample = false;                           ///< Upsample: inputs (X, scales)
  bool v10 = false;                                ///< Resize-10: inputs (X, scales)
};

/// One axis of a resize: for each output position, `n` source indices and weights (or
/// extrapolated).
struct resize_axis {
  i64 in = 0, out = 0;
  int n = 0;
  std::vector<i64> idx;
  std::vector<double> w;
  std::vector<char> extrap;
};

inline double cubic_weight(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

/// Source coordinate of output position `y`.
inline double resize_coord(const resize_options& o, double y, double scale, i64 in, i64 out_int, double roi0, double roi1) {
  const double out = scale * static_cast<double>(in);
  const std::string& c = o.coord;
  if (c == "align_corners") return out == 1 ? 0.0 : y * static_cast<double>(in - 1) / (out - 1);
  if (c == "asymmetric") return y / scale;
  if (c == "tf_crop_and_resize") {
    const double x = out == 1 ? (roi1 - roi0) * static_cast<double>(in - 1) / 2
                              : y * (roi1 - roi0) * static_cast<double>(in - 1) / (out - 1);
    return x + roi0 * static_cast<double>(in - 1);
  }
  if (c == "tf_half_pixel_for_nn") return (y + 0.5) / scale;  // Resize-11
  if (c == "pytorch_half_pixel") return out == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (c == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out_int) / out;
    const double offset = static_cast<double>(in) / 2 * (1 - adjustment);
    return offset + (y + 0.5) / scale - 0.5;
  }
  return (y + 0.5) / scale - 0.5;  // half_pixel
}

inline resize_axis plan_resize_axis(const resize_options& o, i64 in, i64 out, double scale, double roi0, double roi1) {
  resize_axis a;
  a.in = in;
  a.out = out;
  a.extrap.assign(static_cast<std::size_t>(out), 0);
  // kernel offsets k relative to i0 (x = i0 + r, r in (0, 1]) and weight function
  i64 k0 = 0, k1 = 1;
  const double s = std::min(scale, 1.0);
  if (o.mode == 1) {
    k0 = o.antialias ? static_cast<i64>(std::floor(-1 / s)) + 1 : 0;
    k1 = 2 - k0;
  } else if (o.mode == 2) {
    if (o.antialias) {
      k0 = static_cast<i64>(std::floor(-2 / s)) + 1;
      k1 = 2 - k0;
    } else {
      k0 = -1;
      k1 = 3;
    }
  }
  a.n = o.mode == 0 ? 1 : static_cast<int>(k1 - k0);
  a.idx.resize(static_cast<std::size_t>(out * a.n));
  a.w.resize(static_cast<std::size_t>(out * a.n));
  for (i64 y = 0; y < out; ++y) {
    double x = resize_coord(o, static_cast<double>(y), scale, in, out, roi0, roi1);
    if (o.coord == "tf_crop_and_resize" && !(x >= 0 && x <= static_cast<double>(in - 1))) a.extrap[static_cast<std::size_t>(y)] = 1;
    // a roi of NaN or 1e300 gives a coordinate no int64 holds (casting it is undefined): any
    // such coordinate is outside the input, as far as the taps are concerned
    if (!(std::abs(x) < 4e18)) x = x > 0 ? static_cast<double>(in) + 1 : -2.0;
    const std::size_t base = static_cast<std::size_t>(y * a.n);
    if (o.mode == 0) {
      i64 i;
      const double f = std::floor(x), r = x - f;
      if (o.nearest == "simple") i = static_cast<i64>(scale < 1 ? std::ceil(x) : std::floor(x));
      else if (r == 0) i = static_cast<i64>(f);
      else if (o.nearest == "round_prefer_ceil") i = static_cast<i64>(r < 0.5 ? f : f + 1);
      else if (o.nearest == "floor") i = static_cast<i64>(f);
      else if (o.nearest == "ceil") i = static_cast<i64>(f + 1);
      else i = static_cast<i64>(r <= 0.5 ? f : f + 1);  // round_prefer_floor
      a.idx[base] = std::clamp<i64>(i, 0, in - 1);
      a.w[base] = 1;
      continue;
    }
    i64 i0 = static_cast<i64>(std::floor(x));
    double r = x - static_cast<double>(i0);
    if (r == 0) {
      i0 -= 1;
      r = 1;
    }
    double sum = 0;
    for (i64 k = k0; k < k1; ++k) {
      const double d = static_cast<double>(k) - r;
      double w;
      if (o.mode == 1) w = o.antialias ? std::clamp(1 - std::abs(d * s), 0.0, 1.0) : 1 - std::abs(d);
      else w = cubic_weight(o.antialias ? d * s : d, o.cubic_a);
      const i64 src = i0 + k;
      if (o.exclude_outside && (src < 0 || src >= in)) w = 0;
      a.idx[base + static_cast<std::size_t>(k - k0)] = std::clamp<i64>(src, 0, in - 1);
      a.w[base + static_cast<std::size_t>(k - k0)] = w;
      sum += w;
    }
    if ((o.antialias || o.exclude_outside) && sum != 0)
      for (int k = 0; k < a.n; ++k) a.w[base + static_cast<std::size_t>(k)] /= sum;
  }
  return a;
}

inline resize_options read_resize_options(const kernel_node& n, bool upsample) {
  resize_options o;
  const std::string mode = n.attr<std::string>("mode", "nearest");
  if (mode == "nearest") o.mode = 0;
  else if (mode == "linear" || mode == "bilinear") o.mode = 1;
  else if (mode == "cubic" && !upsample) o.mode = 2;
  else n.fail("unknown mode '" + mode + "'");
  o.upsample = upsample;
  o.v10 = !upsample && n.opset > 0 && n.opset < 11;
  if (upsample || o.v10) {
    o.coord = "asymmetric";
    o.nearest = "simple";
    if (upsample && n.has_attr("scales")) o.scales_attr = n.attr<std::vector<float>>("scales");
    return o;
  }
  o.coord = n.attr<std::string>("coordinate_transformation_mode", "half_pixel");
  static const char* coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                 "asymmetric", "tf_crop_and_resize", "tf_half_pixel_for_nn"};
  if (std::find_if(std::begin(coords), std::end(coords), [&](const char* c) { return o.coord == c; }) == std::end(coords))
    n.fail("unknown coordinate_transformation_mode '" + o.coord + "'");
  o.nearest = n.attr<std::string>("nearest_mode", "round_prefer_floor");
  if (o.nearest != "round_prefer_floor" && o.nearest != "round_prefer_ceil" && o.nearest != "floor" && o.nearest != "ceil")
    n.fail("unknown nearest_mode '" + o.nearest + "'");
  o.cubic_a = n.attr<double>("cubic_coeff_a", -0.75);
  o.exclude_outside = n.attr<i64>("exclude_outside", 0) != 0;
  o.extrapolation = n.attr<double>("extrapolation_value", 0.0);
  o.antialias = n.attr<i64>("antialias", 0) != 0;
  if (n.has_attr("axes")) o.axes = n.attr<std::vector<i64>>("axes");
  o.keep_aspect = n.attr<std::string>("keep_aspect_ratio_policy", "stretch");
  if (o.keep_aspect != "stretch" && o.keep_aspect != "not_larger" && o.keep_aspect != "not_smaller")
    n.fail("unknown keep_aspect_ratio_policy '" + o.keep_aspect + "'");
  return o;
}

/// The scales, sizes and roi a Resize / Upsample node's inputs give (empty: not given).
struct resize_inputs {
  std::vector<double> scales, roi;
  std::vector<i64> sizes;
};

/// Reads the scales, sizes and roi by the node's opset layout: Upsample and Resize-10 (X,
/// scales), Resize-11+ (X, roi, scales, sizes), Upsample-7 its `scales` attribute. `has(i)`
/// says whether input i is given, `input(i)` returns it as a host tensor.
template <class Has, class Get>
resize_inputs read_resize_inputs(const resize_options& opt, const kernel_node& n, Has&& has, Get&& input) {
  auto float_values = [&](const gpass::tensor& t, const char* what) {
    std::vector<double> v;
    if (t.element_type() == dtype::f32) for (float f : t.values<float>()) v.push_back(f);
    else if (t.element_type() == dtype::f64) for (double f : t.values<double>()) v.push_back(f);
    else n.fail(std::string(what) + " must be float or double");
    return v;
  };
  resize_inputs r;
  if (opt.scales_attr) {
    r.scales.assign(opt.scales_attr->begin(), opt.scales_attr->end());
  } else if (opt.upsample || opt.v10) {
    r.scales = float_values(input(1), "scales");
  } else {
    if (has(1)) {
      const gpass::tensor t = input(1);
      if (t.size() > 0) r.roi = float_values(t, "roi");
    }
    if (has(2)) {
      const gpass::tensor t = input(2);
      if (t.size() > 0) r.scales = float_values(t, "scales");
    }
    if (has(3)) {
      const gpass::tensor t = input(3);
      if (t.element_type() == dtype::int64) for (auto v : t.values<std::int64_t>()) r.sizes.push_back(v);
      else if (t.element_type() == dtype::int32) for (auto v : t.values<std::int32_t>()) r.sizes.push_back(v);
      else if (t.size() > 0) n.fail("sizes must be int64");
    }
  }
  return r;
}

/// A resize's geometry: the output sizes and, per axis, whether it is resized and its plan.
struct resize_plan {
  std::vector<i64> out;
  std::vector<char> active;
  std::vector<resize_axis> plans;
};

/// The geometry of resizing sizes `in` with the `scales` or `sizes` (exactly one non-empty)
/// and `roi` the node's inputs hold (empty: not given). `on_sizes`, when given, sees the output
/// sizes before the per-axis plans are made (a kernel allocates its output there, so that the
/// run's limits stop an outsized resize before its plans take memory); an empty output gets
/// no plans.
inline resize_plan plan_resize(const resize_options& opt, const std::vector<i64>& in, const std::vector<double>& scales,
                               const std::vector<i64>& sizes, const std::vector<double>& roi, const kernel_node& n,
                               const std::function<void(const std::vector<i64>&)>& on_sizes = nullptr) {
  // an output size as int64, or a failure naming the axis (a scale may ask for any size)
  auto out_size = [&](double v, std::size_t d) {
    if (!(v < 9.0e18)) n.fail("the output size of axis " + std::to_string(d) + " (" + std::to_string(v) + ") is too large");
    return static_cast<i64>(v);
  };
  const std::size_t rank = in.size();
  if (scales.empty() == sizes.empty()) n.fail("exactly one of scales and sizes must be given");
  std::vector<i64> axes;
  if (opt.axes) {
    std::vector<char> seen(rank, 0);
    for (i64 a : *opt.axes) {
      const i64 k = shape_rules::dim_axis(a, static_cast<i64>(rank), n);
      if (seen[static_cast<std::size_t>(k)]) n.fail("axes repeat axis " + std::to_string(a));
      seen[static_cast<std::size_t>(k)] = 1;
      axes.push_back(k);
    }
  } else {
    for (std::size_t d = 0; d < rank; ++d) axes.push_back(static_cast<i64>(d));
  }
  const std::size_t na = axes.size();
  if (!scales.empty() && scales.size() != na)
    n.fail("scales has " + std::to_string(scales.size()) + " entries for " + std::to_string(na) + " axes");
  if (!sizes.empty() && sizes.size() != na)
    n.fail("sizes has " + std::to_string(sizes.size()) + " entries for " + std::to_string(na) + " axes");
  if (!roi.empty() && roi.size() != 2 * na)
    n.fail("roi has " + std::to_string(roi.size()) + " entries for " + std::to_string(na) + " axes");
  if (opt.coord == "tf_crop_and_resize" && roi.empty()) n.fail("tf_crop_and_resize needs roi");
  std::vector<double> sc(rank, 1.0), r0(rank, 0.0), r1(rank, 1.0);
  std::vector<i64> out = in;
  for (std::size_t i = 0; i < na; ++i) {
    const std::size_t d = static_cast<std::size_t>(axes[i]);
    if (!roi.empty()) {
      r0[d] = roi[i];
      r1[d] = roi[na + i];
    }
    if (!scales.empty()) {
      if (!(scales[i] > 0)) n.fail("scales must be positive");
      sc[d] = scales[i];
      out[d] = out_size(std::floor(scales[i] * static_cast<double>(in[d])), d);
    } else {
      if (sizes[i] < 0) n.fail("sizes must be non-negative");
      out[d] = sizes[i];
      sc[d] = in[d] ? static_cast<double>(sizes[i]) / static_cast<double>(in[d]) : 1.0;
    }
  }
  if (!sizes.empty() && !opt.keep_aspect.empty() && opt.keep_aspect != "stretch") {
    double s = opt.keep_aspect == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
    for (i64 a : axes) s = opt.keep_aspect == "not_larger" ? std::min(s, sc[static_cast<std::size_t>(a)]) : std::max(s, sc[static_cast<std::size_t>(a)]);
    for (i64 a : axes) {
      sc[static_cast<std::size_t>(a)] = s;
      out[static_cast<std::size_t>(a)] = out_size(s * static_cast<double>(in[static_cast<std::size_t>(a)]) + 0.5, static_cast<std::size_t>(a));
    }
  }
  for (std::size_t d = 0; d < rank; ++d)
    if (in[d] == 0 && out[d] != 0) n.fail("cannot resize an empty axis to a non-empty one");
  const auto total = checked_num_elements(out);
  if (!total) n.fail("the output's element count overflows int64");
  if (on_sizes) on_sizes(out);
  std::vector<resize_axis> plans(rank);
  std::vector<char> active(rank, 0);
  if (*total == 0) return {std::move(out), std::move(active), std::move(plans)};
  for (std::size_t d = 0; d < rank; ++d) {
    const bool identity = out[d] == in[d] && std::abs(sc[d] - 1.0) < 1e-12 && r0[d] == 0.0 && r1[d] == 1.0;
    if (identity && opt.coord != "tf_crop_and_resize") continue;
    active[d] = 1;
    plans[d] = plan_resize_axis(opt, in[d], out[d], sc[d], r0[d], r1[d]);
  }
  return {std::move(out), std::move(active), std::move(plans)};
}

}  // namespace gpass::exec::resize_rules
