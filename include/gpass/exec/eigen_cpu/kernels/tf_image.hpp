// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_image.hpp
/// Eigen CPU kernels of TensorFlow's image ops (domain "tf"), with TensorFlow's CPU semantics:
///
/// NonMaxSuppression (f32) and V2..V5 (f32 and f16 boxes and scores): greedy selection by score
/// (ties: the lower index first), IoU computed in float on boxes given by any two opposite
/// corners (0 when a box is empty), a candidate dropped when its IoU with a selected box is
/// above iou_threshold; V3+ keep only scores above score_threshold; V5's soft-NMS
/// (soft_nms_sigma > 0) rescales a candidate by exp(-0.5 / sigma * iou^2) per selected box and
/// queues it again, as TensorFlow does, in the element type; V4 / V5 pad to max_output_size.
///
/// CropAndResize (any numeric image, float crops): TensorFlow's coordinates (a crop size of 1
/// samples the box's centre), bilinear or nearest (round half away from zero); samples
/// outside the image are extrapolation_value.
///
/// AdjustContrastv2, AdjustHue, AdjustSaturation (f32, as TensorFlow registers them on CPU):
/// the per-channel mean summed by folding the image in halves; hue through TensorFlow's
/// H-and-V-range form, saturation through HSV, in float. RGBToHSV, HSVToRGB (f32, f64, f16,
/// bf16) in the element type.
///
/// ExtractImagePatches (every POD type): output depth in (row, column, channel) order; SAME
/// pads with zeros.
///
/// CombinedNonMaxSuppression (f32): the greedy NMS above per image and class, then the
/// selections of all classes by descending score (ties: the lower class, then the earlier
/// selection; TensorFlow's sort leaves ties in no set order), max_total_size of them
/// (pad_per_class caps it at max_output_size_per_class * classes), boxes clipped to [0, 1]
/// with clip_boxes, zero padding. Only real selections are output (TensorFlow's kernel can
/// emit its placeholder entries when selected scores are below -1).
///
/// Bad ranks, sizes, indices and thresholds are errors naming the node, as on TensorFlow's
/// CPU. Private (`gpass::exec::cpu_detail`).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <gpass/core/checked.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>
#include <gpass/exec/tf_nms_rules.hpp>
#include <gpass/ops/tf/image.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

namespace image_detail {

using nms_types = type_list<float, Eigen::half>;
using color_types = type_list<float, double, Eigen::half, Eigen::bfloat16>;
using pod_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int16_t, std::int32_t,
                            std::int64_t, std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t, bool>;

/// The value of a rank-0 numeric input as a double (TensorFlow's IsScalar check).
inline double scalar_value(const context& ctx, std::size_t i, const char* what) {
  const gpass::tensor& t = ctx.input(i);
  tf_nms_rules::check_scalar(t.sizes(), what, ctx.node());
  return as_doubles(t, ctx.node())[0];
}

/// TensorFlow's intersection over union of boxes i and j (rows of [n, 4], any two opposite
/// corners), in float; 0 when either box is empty.
template <class T>
float iou(const T* b, i64 i, i64 j) {
  auto f = [b](i64 r, int c) { return static_cast<float>(b[r * 4 + c]); };
  const float ymin_i = std::min(f(i, 0), f(i, 2)), xmin_i = std::min(f(i, 1), f(i, 3));
  const float ymax_i = std::max(f(i, 0), f(i, 2)), xmax_i = std::max(f(i, 1), f(i, 3));
  const float ymin_j = std::min(f(j, 0), f(j, 2)), xmin_j = std::min(f(j, 1), f(j, 3));
  const float ymax_j = std::max(f(j, 0), f(j, 2)), xmax_j = std::max(f(j, 1), f(j, 3));
  const float area_i = (ymax_i - ymin_i) * (xmax_i - xmin_i);
  const float area_j = (ymax_j - ymin_j) * (xmax_j - xmin_j);
  if (area_i <= 0 || area_j <= 0) return 0.0f;
  const float iy = std::max(std::min(ymax_i, ymax_j) - std::max(ymin_i, ymin_j), 0.0f);
  const float ix = std::max(std::min(xmax_i, xmax_j) - std::max(xmin_i, xmin_j), 0.0f);
  const float inter = iy * ix;
  return inter / (area_i + area_j - inter);
}

/// TensorFlow's greedy (soft) NMS in the element type T: the selected boxes and their scores.
template <class T>
void greedy_nms(const T* boxes, const T* scores, i64 n, i64 max_out, T iou_thr, T score_thr, T sigma,
                std::vector<i64>& selected, std::vector<T>& selected_scores) {
  struct candidate {
    i64 box;
    T score;
    std::size_t begin;  // the selected boxes from here on are still to be compared with
  };
  auto below = [](const candidate& a, const candidate& b) {
    return (a.score == b.score && a.box > b.box) || a.score < b.score;
  };
  std::priority_queue<candidate, std::deque<candidate>, decltype(below)> queue(below);
  for (i64 i = 0; i < n; ++i)
    if (scores[i] > score_thr) queue.push({i, scores[i], 0});
  const bool soft = sigma > T(0);
  const T scale = soft ? T(-0.5) / sigma : T(0);
  auto weight = [&](T sim) {
    const T w = static_cast<T>(std::exp(static_cast<float>(scale * sim * sim)));
    return soft || sim <= iou_thr ? w : T(0);
  };
  while (static_cast<i64>(selected.size()) < max_out && !queue.empty()) {
    candidate c = queue.top();
    const T original = c.score;
    queue.pop();
    bool suppressed = false;
    for (std::size_t j = selected.size(); j-- > c.begin;) {
      const T sim = static_cast<T>(iou(boxes, c.box, selected[j]));
      c.score = c.score * weight(sim);
      if (!soft && sim > iou_thr) {
        suppressed = true;
        break;
      }
      if (c.score <= score_thr) break;
    }
    c.begin = selected.size();
    if (suppressed) continue;
    if (c.score == original) {
      selected.push_back(c.box);
      selected_scores.push_back(c.score);
    } else if (c.score > score_thr) {
      queue.push(c);  // softly suppressed: back in the queue with its lower score
    }
  }
}

// NonMaxSuppression (version 1) .. V5
inline void non_max_suppression(context& ctx, int version, float iou_attr, bool pad) {
  const kernel_node& node = ctx.node();
  const gpass::tensor& boxes = ctx.input(0);
  const gpass::tensor& scores = ctx.input(1);
  const gpass::tensor& max_t = ctx.input(2);
  tf_nms_rules::check_scalar(max_t.sizes(), "max_output_size", node);
  const i64 max_out = int_values(max_t, node, "max_output_size")[0];
  const double iou_thr = version == 1 ? iou_attr : scalar_value(ctx, 3, "iou_threshold");
  tf_nms_rules::check_iou_threshold(iou_thr, node);
  const double score_thr = version >= 3 ? scalar_value(ctx, 4, "score_threshold") : 0.0;
  const double sigma = version == 5 ? scalar_value(ctx, 5, "soft_nms_sigma") : 0.0;
  tf_nms_rules::check_soft_nms_sigma(sigma, node);
  const i64 n = tf_nms_rules::nms_boxes(boxes.sizes(), boxes.element_type(), scores.sizes(), scores.element_type(), node);
  if (version == 5)
    for (std::size_t i = 3; i < 6; ++i)
      if (ctx.input(i).element_type() != boxes.element_type())
        ctx.fail("the thresholds of NonMaxSuppressionV5 must be " + std::string(to_string(boxes.element_type())));
  tf_nms_rules::check_max_output_size(max_out, node);
  dispatch<nms_types>(boxes.element_type(), node, [&]<class T>() {
    std::vector<i64> sel;
    std::vector<T> sel_scores;
    // the thresholds in T (from float, as TensorFlow's GetScalar); V1 / V2 select every score
    const T lowest = std::numeric_limits<T>::lowest();
    greedy_nms<T>(boxes.data<T>(), scores.data<T>(), n, max_out, static_cast<T>(static_cast<float>(iou_thr)),
                  version >= 3 ? static_cast<T>(static_cast<float>(score_thr)) : lowest,
                  static_cast<T>(static_cast<float>(sigma)), sel, sel_scores);
    const i64 valid = static_cast<i64>(sel.size());
    const i64 k = pad ? max_out : valid;
    gpass::tensor& idx = ctx.allocate_output(0, dtype::int32, {k});
    std::int32_t* o = idx.data<std::int32_t>();
    for (i64 i = 0; i < k; ++i) o[i] = i < valid ? static_cast<std::int32_t>(sel[static_cast<std::size_t>(i)]) : 0;
    if (version == 5) {
      gpass::tensor& sc = ctx.allocate_output(1, boxes.element_type(), {k});
      T* s = sc.data<T>();
      for (i64 i = 0; i < k; ++i) s[i] = i < valid ? sel_scores[static_cast<std::size_t>(i)] : T(0);
    }
    if (version >= 4)
      ctx.allocate_output(version == 5 ? 2 : 1, dtype::int32, {}).template data<std::int32_t>()[0] =
          static_cast<std::int32_t>(valid);
  });
}

// CropAndResize(image, boxes, box_ind, crop_size)
inline void crop_and_resize(context& ctx, bool bilinear, float extrapolation) {
  const kernel_node& node = ctx.node();
  const gpass::tensor& image = ctx.input(0);
  const gpass::tensor& boxes = ctx.input(1);
  const gpass::tensor& box_ind = ctx.input(2);
  const gpass::tensor& crop = ctx.input(3);
  if (boxes.element_type() != dtype::f32) ctx.fail("boxes must be float32");
  const tf_rules::crop_sizes c = tf_rules::crop_geometry(image.sizes(), boxes.sizes(), box_ind.sizes(), crop.sizes(),
                                                         [&] { return int_values(crop, node, "crop_size"); }, node);
  const auto ind = int_values(box_ind, node, "box_ind");
  const float* bx = boxes.data<float>();
  tf_rules::check_crop_boxes(ind, bx, c, node);
  const i64 H = c.H, W = c.W, D = c.D;
  num_elements_or_throw(std::vector<i64>{c.n, c.CH, c.CW, D});
  gpass::tensor& out = ctx.allocate_output(0, dtype::f32, {c.n, c.CH, c.CW, D});
  if (out.size() == 0) return;
  float* o = out.data<float>();
  dispatch<numeric_types>(image.element_type(), node, [&]<class T>() {
    const T* img = image.data<T>();
    auto px = [&](i64 b, i64 y, i64 x, i64 d) { return static_cast<float>(img[((b * H + y) * W + x) * D + d]); };
    for (i64 b = 0; b < c.n; ++b) {
      const float* box = bx + b * 4;  // y1, x1, y2, x2
      const i64 src = ind[static_cast<std::size_t>(b)];
      const auto rows = tf_rules::crop_axis(box[0], box[2], c.CH, H), cols = tf_rules::crop_axis(box[1], box[3], c.CW, W);
      for (i64 y = 0; y < c.CH; ++y) {
        float* row = o + (b * c.CH + y) * c.CW * D;
        const tf_rules::crop_tap& ty = rows[static_cast<std::size_t>(y)];
        for (i64 x = 0; x < c.CW; ++x) {
          float* cell = row + x * D;
          const tf_rules::crop_tap& tx = cols[static_cast<std::size_t>(x)];
          if (!ty.inside || !tx.inside) {
            std::fill(cell, cell + D, extrapolation);
          } else if (bilinear) {
            for (i64 d = 0; d < D; ++d) {
              const float tl = px(src, ty.lo, tx.lo, d), tr = px(src, ty.lo, tx.hi, d);
              const float bl = px(src, ty.hi, tx.lo, d), br = px(src, ty.hi, tx.hi, d);
              const float t = tl + (tr - tl) * tx.lerp, bo = bl + (br - bl) * tx.lerp;
              cell[d] = t + (bo - t) * ty.lerp;
            }
          } else {
            for (i64 d = 0; d < D; ++d) cell[d] = px(src, ty.near, tx.near, d);
          }
        }
      }
    }
  });
}

/// Checks the images (rank >= 3; `rgb`: 3 channels) and the scalar factor of an Adjust* op;
/// returns the factor.
inline float adjust_args(const context& ctx, const char* factor, bool rgb) {
  const gpass::tensor& x = ctx.input(0);
  if (x.rank() < 3) ctx.fail("input must be at least 3-D, got shape " + x.shape().to_string());
  if (x.element_type() != dtype::f32) ctx.fail("images must be float32 on the CPU");
  const gpass::tensor& f = ctx.input(1);
  if (f.rank() != 0) ctx.fail(std::string(factor) + " must be scalar, got shape " + f.shape().to_string());
  if (f.element_type() != dtype::f32) ctx.fail(std::string(factor) + " must be float32");
  if (rgb && x.sizes().back() != 3)
    ctx.fail("input must have 3 channels but instead has " + std::to_string(x.sizes().back()) + " channels");
  return f.data<float>()[0];
}

// AdjustContrastv2(images, contrast_factor)
inline void adjust_contrast(context& ctx) {
  const float factor = adjust_args(ctx, "contrast_factor", false);
  const gpass::tensor& x = ctx.input(0);
  const auto& s = x.sizes();
  gpass::tensor& y = ctx.allocate_output(0, dtype::f32, s);
  if (x.size() == 0) return;
  const i64 C = s.back(), image = s[s.size() - 3] * s[s.size() - 2], plane = image * C, batch = x.size() / plane;
  const float* in = x.data<float>();
  float* out = y.data<float>();
  std::vector<float> sum(static_cast<std::size_t>(plane));
  for (i64 b = 0; b < batch; ++b) {
    const float* p = in + b * plane;
    // TensorFlow's sum: fold the plane in halves (the odd middle row carried over) down to one row
    i64 remaining = image;
    bool first = true;
    do {
      const i64 right = remaining / 2, left = remaining - right;
      if (first) {
        for (i64 k = 0; k < right * C; ++k) sum[static_cast<std::size_t>(k)] = p[left * C + k] + p[k];
        if (left > right) std::copy_n(p + right * C, C, sum.begin() + right * C);
      } else {
        float* acc = sum.data();
        for (i64 k = 0; k < right * C; ++k) acc[k] += acc[left * C + k];
      }
      remaining = left;
      first = false;
    } while (remaining > 1);
    const float scale = 1.0f / static_cast<float>(image);
    float* q = out + b * plane;
    for (i64 k = 0; k < plane; ++k) {
      const float mean = sum[static_cast<std::size_t>(k % C)] * scale;
      q[k] = mean + factor * (p[k] - mean);
    }
  }
}

/// x86's conversion of a float outside int's range (or NaN) to int: INT_MIN (what TensorFlow's
/// kernels get there; C++ leaves it undefined).
inline int to_int(float v) {
  return v > -2147483648.0f && v < 2147483648.0f ? static_cast<int>(v) : INT32_MIN;
}

/// Output 0 = the f32 RGB pixels of input 0, each mapped by `f(in, out, a)` (three floats
/// each), `a` the scalar input `name` (AdjustHue's delta, AdjustSaturation's scale).
template <class F>
void map_rgb(context& ctx, const char* name, F f) {
  const float a = adjust_args(ctx, name, true);
  const gpass::tensor& x = ctx.input(0);
  gpass::tensor& y = ctx.allocate_output(0, dtype::f32, x.sizes());
  const float* p = x.data<float>();
  float* q = y.data<float>();
  for (i64 i = 0; i < x.size() / 3; ++i, p += 3, q += 3) f(p, q, a);
}

// AdjustHue(images, delta): TensorFlow's H-and-V-range conversion in float
inline void adjust_hue(context& ctx) {
  map_rgb(ctx, "delta", [](const float* p, float* q, float delta) {
    const float r = p[0], g = p[1], b = p[2];
    float lo, mid, hi;
    int cat;
    if (r < g) {
      if (b < r) hi = g, mid = r, lo = b, cat = 1;
      else if (b > g) hi = b, mid = g, lo = r, cat = 3;
      else hi = g, mid = b, lo = r, cat = 2;
    } else {
      if (b < g) hi = r, mid = g, lo = b, cat = 0;
      else if (b > r) hi = b, mid = r, lo = g, cat = 4;
      else hi = r, mid = b, lo = g, cat = 5;
    }
    float h = 0;
    if (hi != lo) {
      const float ratio = (mid - lo) / (hi - lo);
      h = static_cast<float>(cat) + ((cat & 1) == 0 ? ratio : 1 - ratio);
    }
    h += delta * 6;
    if (std::isfinite(h)) {
      if (std::abs(h) > 64 * 6.0f) h = std::fmod(h, 6.0f);
      while (h < 0) h += 6;
      while (h >= 6) h -= 6;
    }  // (TensorFlow's loop never ends on an infinite hue; a NaN one passes through)
    const int hc = to_int(h);
    float ratio = h - static_cast<float>(hc);
    if ((hc & 1) != 0) ratio = 1 - ratio;
    const float v = lo + ratio * (hi - lo);
    switch (hc) {
      case 0: q[0] = hi, q[1] = v, q[2] = lo; break;
      case 1: q[0] = v, q[1] = hi, q[2] = lo; break;
      case 2: q[0] = lo, q[1] = hi, q[2] = v; break;
      case 3: q[0] = lo, q[1] = v, q[2] = hi; break;
      case 4: q[0] = v, q[1] = lo, q[2] = hi; break;
      default: q[0] = hi, q[1] = lo, q[2] = v;
    }
  });
}

// AdjustSaturation(images, scale): TensorFlow's HSV round trip in float
inline void adjust_saturation(context& ctx) {
  map_rgb(ctx, "scale", [](const float* p, float* q, float scale) {
    const float r = p[0], g = p[1], b = p[2];
    const float v = std::max(r, std::max(g, b));
    const float range = v - std::min(r, std::min(g, b));
    float s = v > 0 ? range / v : 0.0f;
    const float norm = 1.0f / (6.0f * range);
    float h;  // (the 2/6 and 4/6 offsets are added in double, as TensorFlow's)
    if (r == v) h = norm * (g - b);
    else if (g == v) h = static_cast<float>(static_cast<double>(norm * (b - r)) + 2.0 / 6.0);
    else h = static_cast<float>(static_cast<double>(norm * (r - g)) + 4.0 / 6.0);
    if (range <= 0.0f) h = 0;
    if (h < 0.0f) h = h + 1;
    s = std::min(1.0f, std::max(0.0f, s * scale));
    // back to RGB
    const float c = s * v, m = v - c, dh = h * 6;
    const int hc = to_int(dh);
    float f = dh;
    if (std::isfinite(f)) {
      if (std::abs(f) > 64.0f) f = std::fmod(f, 2.0f);
      while (f <= 0) f += 2.0f;
      while (f >= 2.0f) f -= 2.0f;
    }
    const float xx = c * (1 - std::abs(f - 1));
    float rr = 0, gg = 0, bb = 0;
    switch (hc) {
      case 0: rr = c, gg = xx; break;
      case 1: rr = xx, gg = c; break;
      case 2: gg = c, bb = xx; break;
      case 3: gg = xx, bb = c; break;
      case 4: rr = xx, bb = c; break;
      case 5: rr = c, bb = xx; break;
      default: break;
    }
    q[0] = rr + m;
    q[1] = gg + m;
    q[2] = bb + m;
  });
}

/// Checks the images of RGBToHSV / HSVToRGB: rank >= 1, 3 in the last dim.
inline void colorspace_args(const context& ctx) {
  const gpass::tensor& x = ctx.input(0);
  if (x.rank() < 1) ctx.fail("input must be at least 1-D, got shape " + x.shape().to_string());
  if (x.sizes().back() != 3)
    ctx.fail("input must have 3 channels but input only has " + std::to_string(x.sizes().back()) + " channels");
}

// RGBToHSV(images), in the element type as TensorFlow's Eigen expression
inline void rgb_to_hsv(context& ctx) {
  colorspace_args(ctx);
  const gpass::tensor& x = ctx.input(0);
  gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
  dispatch<color_types>(x.element_type(), ctx.node(), [&]<class T>() {
    const T* p = x.data<T>();
    T* q = y.data<T>();
    for (i64 i = 0; i < x.size() / 3; ++i, p += 3, q += 3) {
      const T r = p[0], g = p[1], b = p[2];
      T v = std::numeric_limits<T>::lowest(), lo = std::numeric_limits<T>::max();
      for (int k = 0; k < 3; ++k) {
        if (p[k] > v) v = p[k];
        if (p[k] < lo) lo = p[k];
      }
      const T range = v - lo;
      const T s = v > T(0) ? T(range / v) : T(0);
      const T norm = T(T(1) / range) * T(T(1) / T(6));
      T h = r == v ? T(norm * T(g - b)) : g == v ? T(T(norm * T(b - r)) + T(T(2) / T(6)))
                                                 : T(T(norm * T(r - g)) + T(T(4) / T(6)));
      if (!(range > T(0))) h = T(0);
      if (h < T(0)) h = T(h + T(1));
      q[0] = h;
      q[1] = s;
      q[2] = v;
    }
  });
}

// HSVToRGB(images), in the element type as TensorFlow's Eigen expression
inline void hsv_to_rgb(context& ctx) {
  colorspace_args(ctx);
  const gpass::tensor& x = ctx.input(0);
  gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
  dispatch<color_types>(x.element_type(), ctx.node(), [&]<class T>() {
    using Eigen::numext::abs;
    auto clamp01 = [](T v) { return v > T(1) ? T(1) : v < T(0) ? T(0) : v; };
    const T* p = x.data<T>();
    T* q = y.data<T>();
    for (i64 i = 0; i < x.size() / 3; ++i, p += 3, q += 3) {
      const T h = p[0], s = p[1], v = p[2];
      const T dh = h * T(6);
      const T dr = clamp01(T(abs(T(dh - T(3))) - T(1)));
      const T dg = clamp01(T(T(-abs(T(dh - T(2)))) + T(2)));
      const T db = clamp01(T(T(-abs(T(dh - T(4)))) + T(2)));
      const T one_s = T(-s) + T(1);
      q[0] = T(T(one_s + T(s * dr)) * v);
      q[1] = T(T(one_s + T(s * dg)) * v);
      q[2] = T(T(one_s + T(s * db)) * v);
    }
  });
}

using gpass::detail::tf_ops::tf_image::patch_axis;

inline patch_axis patch_geometry(const kernel_node& n, i64 in, i64 k, i64 stride, i64 rate, bool same) {
  return gpass::detail::tf_ops::tf_image::patch_geometry(in, k, stride, rate, same, [&n](const std::string& m) { n.fail(m); });
}

// ExtractImagePatches(images) {ksizes, strides, rates, padding}
inline void extract_image_patches(context& ctx, std::pair<i64, i64> k, std::pair<i64, i64> s,
                                  std::pair<i64, i64> r, bool same) {
  const kernel_node& node = ctx.node();
  const gpass::tensor& x = ctx.input(0);
  if (x.rank() != 4) ctx.fail("input must be 4-dimensional, got shape " + x.shape().to_string());
  const i64 B = x.sizes()[0], H = x.sizes()[1], W = x.sizes()[2], C = x.sizes()[3];
  const patch_axis ay = patch_geometry(node, H, k.first, s.first, r.first, same);
  const patch_axis ax = patch_geometry(node, W, k.second, s.second, r.second, same);
  const i64 depth = mul_or_throw(mul_or_throw(k.first, k.second, "patch taps"), C, "patch depth");
  const std::vector<i64> sizes{B, ay.out, ax.out, depth};
  num_elements_or_throw(sizes);
  gpass::tensor& y = ctx.allocate_output(0, x.element_type(), sizes);
  if (y.size() == 0) return;
  dispatch<pod_types>(x.element_type(), node, [&]<class T>() {
    const T* in = x.data<T>();
    T* o = y.data<T>();
    for (i64 b = 0; b < B; ++b)
      for (i64 oy = 0; oy < ay.out; ++oy)
        for (i64 ox = 0; ox < ax.out; ++ox)
          for (i64 ky = 0; ky < ay.k; ++ky) {
            const i64 iy = oy * ay.stride - ay.pad + ky * ay.rate;
            for (i64 kx = 0; kx < ax.k; ++kx, o += C) {
              const i64 ix = ox * ax.stride - ax.pad + kx * ax.rate;
              if (iy < 0 || iy >= H || ix < 0 || ix >= W) std::fill(o, o + C, T{});
              else std::copy_n(in + ((b * H + iy) * W + ix) * C, C, o);
            }
          }
  });
}

// CombinedNonMaxSuppression(boxes [B, N, q, 4], scores [B, N, K], max_output_size_per_class,
// max_total_size, iou_threshold, score_threshold): per image and class, TensorFlow's greedy
// NMS (scores > score_threshold, IoU > iou_threshold suppressing, at most
// min(max_output_size_per_class, N) boxes; q = 1 shares the boxes between the classes); then
// per image the selections of every class by descending score (ties: the lower class, then
// the earlier selection), the first max_total_size of them (pad_per_class: at most
// max_output_size_per_class * K), boxes clipped to [0, 1] with clip_boxes, zero padding.
inline void combined_nms(context& ctx, bool pad_per_class, bool clip_boxes) {
  const gpass::tensor& boxes = ctx.input(0);
  const gpass::tensor& scores = ctx.input(1);
  const tf_nms_rules::combined_shape shape = tf_nms_rules::combined_nms_shape(boxes.sizes(), scores.sizes(), ctx.node());
  const i64 B = shape.B, N = shape.N, q = shape.q, K = shape.K;
  for (std::size_t i = 2; i < 4; ++i)
    if (ctx.input(i).rank() != 0) ctx.fail(std::string(i == 2 ? "max_output_size_per_class" : "max_total_size") + " must be 0-D");
  const i64 per_class = int_values(ctx.input(2), ctx.node(), "max_output_size_per_class")[0];
  const i64 total = int_values(ctx.input(3), ctx.node(), "max_total_size")[0];
  const i64 out_per_image = tf_nms_rules::combined_nms_per_image(per_class, total, K, pad_per_class, ctx.node());
  const double iou_thr = scalar_value(ctx, 4, "iou_threshold"), score_thr = scalar_value(ctx, 5, "score_threshold");
  tf_nms_rules::check_iou_threshold(iou_thr, ctx.node());
  if (boxes.element_type() != dtype::f32 || scores.element_type() != dtype::f32)
    ctx.fail("boxes and scores must be float32");
  const i64 keep = std::min(per_class, N);
  gpass::tensor& ob = ctx.allocate_output_zeroed(0, dtype::f32, {B, out_per_image, 4});
  gpass::tensor& os = ctx.allocate_output_zeroed(1, dtype::f32, {B, out_per_image});
  gpass::tensor& oc = ctx.allocate_output_zeroed(2, dtype::f32, {B, out_per_image});
  gpass::tensor& ov = ctx.allocate_output(3, dtype::int32, {B});
  const float* pb = boxes.data<float>();
  const float* ps = scores.data<float>();
  struct pick {
    float score;
    i64 cls, rank, box;
  };
  std::vector<float> class_boxes, class_scores;
  std::vector<i64> sel;
  std::vector<float> sel_scores;
  for (i64 b = 0; b < B; ++b) {
    std::vector<pick> picks;
    for (i64 k = 0; k < K; ++k) {
      const i64 col = q > 1 ? k : 0;
      class_boxes.resize(static_cast<std::size_t>(N * 4));
      class_scores.resize(static_cast<std::size_t>(N));
      for (i64 i = 0; i < N; ++i) {
        std::copy_n(pb + ((b * N + i) * q + col) * 4, 4, class_boxes.data() + i * 4);
        class_scores[static_cast<std::size_t>(i)] = ps[(b * N + i) * K + k];
      }
      sel.clear();
      sel_scores.clear();
      greedy_nms<float>(class_boxes.data(), class_scores.data(), N, keep, static_cast<float>(iou_thr),
                        static_cast<float>(score_thr), 0.0f, sel, sel_scores);
      for (std::size_t j = 0; j < sel.size(); ++j) picks.push_back({sel_scores[j], k, static_cast<i64>(j), sel[j]});
    }
    std::stable_sort(picks.begin(), picks.end(), [](const pick& x, const pick& y) { return x.score > y.score; });
    const i64 valid = std::min<i64>(static_cast<i64>(picks.size()), out_per_image);
    ov.data<std::int32_t>()[b] = static_cast<std::int32_t>(valid);
    for (i64 j = 0; j < valid; ++j) {
      const pick& p = picks[static_cast<std::size_t>(j)];
      const float* src = pb + ((b * N + p.box) * q + (q > 1 ? p.cls : 0)) * 4;
      float* dst = ob.data<float>() + (b * out_per_image + j) * 4;
      for (int c = 0; c < 4; ++c) dst[c] = clip_boxes ? std::max(std::min(src[c], 1.0f), 0.0f) : src[c];
      os.data<float>()[b * out_per_image + j] = p.score;
      oc.data<float>()[b * out_per_image + j] = static_cast<float>(p.cls);
    }
  }
}

}  // namespace image_detail

/// Registers the kernels of this file (see the file comment).
inline void register_tf_image(registry& r) {
  using namespace image_detail;
  for (int version = 1; version <= 5; ++version)
    r.add({.domain = domain,
           .op = version == 1 ? std::string("NonMaxSuppression") : "NonMaxSuppressionV" + std::to_string(version),
           .dtypes = version == 1 ? type_list<float>::dtypes() : nms_types::dtypes(),
           .make = [version](const kernel_node& n) -> fn {
             const float iou = version == 1 ? n.attr<float>("iou_threshold", 0.5f) : 0.0f;
             const bool pad = version >= 4 && flag(n, "pad_to_max_output_size", false);
             return [version, iou, pad](context& ctx) { non_max_suppression(ctx, version, iou, pad); };
           }});
  r.add({.domain = domain, .op = "CombinedNonMaxSuppression", .dtypes = {dtype::f32}, .make = [](const kernel_node& n) -> fn {
    const bool pad = flag(n, "pad_per_class", false), clip = flag(n, "clip_boxes", true);
    return [pad, clip](context& ctx) { combined_nms(ctx, pad, clip); };
  }});
  r.add({.domain = domain, .op = "CropAndResize", .dtypes = numeric_types::dtypes(),
         .make = [](const kernel_node& n) -> fn {
           const std::string method = n.attr<std::string>("method", "bilinear");
           if (method != "bilinear" && method != "nearest")
             n.fail("method must be 'bilinear' or 'nearest', got '" + method + "'");
           const float extrapolation = n.attr<float>("extrapolation_value", 0.0f);
           const bool bilinear = method == "bilinear";
           return [bilinear, extrapolation](context& ctx) { crop_and_resize(ctx, bilinear, extrapolation); };
         }});
  const std::pair<const char*, void (*)(context&)> color_ops[] = {
      {"AdjustContrastv2", adjust_contrast}, {"AdjustHue", adjust_hue}, {"AdjustSaturation", adjust_saturation}};
  for (const auto& [op, run] : color_ops)
    r.add({.domain = domain, .op = op, .dtypes = type_list<float>::dtypes(), .make = [run](const kernel_node&) -> fn {
             return run;
           }});
  r.add({.domain = domain, .op = "RGBToHSV", .dtypes = color_types::dtypes(),
         .make = [](const kernel_node&) -> fn { return rgb_to_hsv; }});
  r.add({.domain = domain, .op = "HSVToRGB", .dtypes = color_types::dtypes(),
         .make = [](const kernel_node&) -> fn { return hsv_to_rgb; }});
  r.add({.domain = domain, .op = "ExtractImagePatches", .dtypes = pod_types::dtypes(),
         .make = [](const kernel_node& n) -> fn {
           auto fail = [&n](const std::string& m) { n.fail(m); };
           using gpass::detail::tf_ops::tf_image::patch_attr;
           const auto k = patch_attr(std::optional(int_list(n, "ksizes")), "ksizes", fail);
           const auto s = patch_attr(std::optional(int_list(n, "strides")), "strides", fail);
           const auto rt = patch_attr(std::optional(int_list(n, "rates")), "rates", fail);
           const std::string pad = n.attr<std::string>("padding", "");
           if (pad != "SAME" && pad != "VALID") n.fail("padding must be SAME or VALID, got '" + pad + "'");
           return [k, s, rt, same = pad == "SAME"](context& ctx) { extract_image_patches(ctx, k, s, rt, same); };
         }});
}

}  // namespace gpass::exec::cpu_detail::tf_detail
