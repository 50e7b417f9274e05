// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file image.hpp
/// TensorFlow's image ops: CombinedNonMaxSuppression, NonMaxSuppression and its V2..V5 forms (score_threshold,
/// pad_to_max_output_size, soft_nms_sigma), CropAndResize, AdjustContrastv2, AdjustHue,
/// AdjustSaturation, RGBToHSV, HSVToRGB and ExtractImagePatches. Shapes use the values of
/// `max_output_size` and `crop_size` when they are known; bad ranks, sizes, thresholds and
/// attributes fail as TensorFlow's kernels would.
/// \code
///   // image: f32[n,32,32,3], boxes: f32[b,4], box_ind: i32[b], crop_size = [7, 5]
///   //   ->  CropAndResize(image, boxes, box_ind, crop_size): f32[b,7,5,3]
/// \endcode

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/ops/tf/common.hpp>

namespace gpass {

/// Registers the TensorFlow image ops into `r` (see the file comment).
void register_tf_image_ops(op_registry& r);

namespace detail::tf_ops::tf_image {

// Fails unless input `i` (when its rank is known) has rank `lo` (`at_least`: rank >= lo).
inline void want_rank(infer_context& c, std::size_t i, std::size_t lo, const char* what, bool at_least = false) {
  auto r = c.input_rank(i);
  if (!r || *r == lo || (at_least && *r > lo)) return;
  c.fail(std::string(what) + " must have rank " + (at_least ? ">= " : "") + std::to_string(lo) + ", got " +
         c.input_shape(i).to_string());
}

// Fails when dim `d` is known and not `want`.
inline void want_dim(infer_context& c, const dim& d, std::int64_t want, const std::string& what) {
  if (d.is_known() && d.value() != want)
    c.fail(what + " must be " + std::to_string(want) + ", got " + d.to_string());
}

// `d` itself unless it is unknown, then a fresh symbol of the node.
inline dim named(infer_context& c, const dim& d, const char* purpose) {
  return d.is_unknown() ? c.fresh_dim(purpose) : d;
}

// CombinedNonMaxSuppression(boxes [B, N, q, 4], scores [B, N, K], per class, total, iou,
// score): nmsed boxes [B, M, 4], scores / classes [B, M], valid_detections [B], M the total
// (pad_per_class: at most per class * K).
inline void combined_nms_infer(infer_context& c) {
  want_rank(c, 0, 4, "boxes");
  want_rank(c, 1, 3, "scores");
  static const char* names[] = {"max_output_size_per_class", "max_total_size", "iou_threshold", "score_threshold"};
  for (std::size_t i = 2; i < 6; ++i) want_rank(c, i, 0, names[i - 2]);
  const shape& b = c.input_shape(0);
  const shape& s = c.input_shape(1);
  if (b.has_rank()) want_dim(c, b[3], 4, "boxes' dim 3 (its columns)");
  dim batch = b.has_rank() ? b[0] : dim::unknown();
  if (b.has_rank() && s.has_rank()) {
    batch = c.unify(b[0], s[0], "(boxes and scores must have the same batch)");
    c.unify(b[1], s[1], "(boxes and scores must have one row per box)");
    if (b[2].is_known() && s[2].is_known() && b[2].value() != 1 && b[2].value() != s[2].value())
      c.fail("third dimension of boxes must be either 1 or num classes, got " + b[2].to_string());
  }
  const auto per_class = c.input_int(2), total = c.input_int(3);
  if (per_class && *per_class <= 0) c.fail("max_size_per_class must be > 0, got " + std::to_string(*per_class));
  if (total && *total <= 0) c.fail("max_total_size must be > 0, got " + std::to_string(*total));
  if (auto v = c.input_doubles(4); v && v->size() == 1 && !((*v)[0] >= 0 && (*v)[0] <= 1))
    c.fail("iou_threshold must be in [0, 1], got " + std::to_string((*v)[0]));
  dim m = c.fresh_dim("detections");
  if (total) {
    m = dim(*total);
    if (c.attr_int("pad_per_class", 0) != 0) {
      if (per_class && s.has_rank() && s[2].is_known()) {
        const auto cap = checked_mul(*per_class, s[2].value());
        if (cap) m = dim(std::min(*total, *cap));
      } else {
        m = c.fresh_dim("detections");
      }
    }
  }
  c.set_shape(0, shape{batch, m, dim(4)});
  c.set_shape(1, shape{batch, m});
  c.set_shape(2, shape{batch, m});
  c.set_shape(3, shape{batch});
}

// NonMaxSuppression / V2..V5(boxes [n, 4], scores [n], max_output_size, thresholds...):
// selected_indices [k] (V4 / V5 with pad_to_max_output_size: [max_output_size]), V5's
// selected_scores [k], V4 / V5's valid_outputs [].
inline void nms_infer(infer_context& c) {
  want_rank(c, 0, 2, "boxes");
  want_rank(c, 1, 1, "scores");
  for (std::size_t i = 2; i < c.num_inputs(); ++i) {
    static const char* names[] = {"", "", "max_output_size", "iou_threshold", "score_threshold", "soft_nms_sigma"};
    want_rank(c, i, 0, i < 6 ? names[i] : "threshold");
  }
  const shape& b = c.input_shape(0);
  const shape& s = c.input_shape(1);
  if (b.has_rank()) want_dim(c, b[1], 4, "boxes' dim 1 (its columns)");
  if (b.has_rank() && s.has_rank()) c.unify(b[0], s[0], "(boxes and scores must have one row per box)");
  const auto max = c.input_int(2);
  if (max && *max < 0) c.fail("max_output_size must be non-negative, got " + std::to_string(*max));
  std::optional<double> iou;
  if (c.num_inputs() == 3) iou = c.attr_float("iou_threshold", 0.5);
  else if (auto v = c.input_doubles(3); v && v->size() == 1) iou = (*v)[0];
  if (iou && !(*iou >= 0 && *iou <= 1)) c.fail("iou_threshold must be in [0, 1], got " + std::to_string(*iou));
  if (c.num_inputs() == 6)
    if (auto v = c.input_doubles(5); v && v->size() == 1 && !((*v)[0] >= 0))
      c.fail("soft_nms_sigma must be >= 0, got " + std::to_string((*v)[0]));
  const bool pad = c.num_outputs() > 1 && c.attr_int("pad_to_max_output_size", 0) != 0;
  const dim k = pad && max ? dim(*max) : c.fresh_dim("selected");
  c.set_shape(0, shape{k});
  if (c.num_outputs() == 3) c.set_shape(1, shape{k});
  if (c.num_outputs() > 1) c.set_shape(c.num_outputs() - 1, shape::scalar());
}

// CropAndResize(image [b, h, w, d], boxes [n, 4], box_ind [n], crop_size [2]):
// crops [n, crop_height, crop_width, d].
inline void crop_and_resize_infer(infer_context& c) {
  want_rank(c, 0, 4, "image");
  want_rank(c, 1, 2, "boxes");
  want_rank(c, 2, 1, "box_ind");
  want_rank(c, 3, 1, "crop_size");
  const std::string method = c.attr_string("method", "bilinear");
  if (method != "bilinear" && method != "nearest")
    c.fail("method must be 'bilinear' or 'nearest', got '" + method + "'");
  const shape& img = c.input_shape(0);
  const shape& b = c.input_shape(1);
  const shape& ind = c.input_shape(2);
  if (c.input_rank(3)) want_dim(c, c.input_shape(3)[0], 2, "crop_size's length");
  if (b.has_rank()) want_dim(c, b[1], 4, "boxes' dim 1 (its columns)");
  dim n = b.has_rank() ? b[0] : dim();
  if (ind.has_rank()) n = c.unify(n, ind[0], "(boxes and box_ind must have one row per box)");
  dim ch, cw;
  if (auto sz = c.input_dims(3)) {
    if (sz->size() != 2) c.fail("crop_size must have 2 elements, has " + std::to_string(sz->size()));
    for (const dim& d : *sz)
      if (d.is_known() && d.value() <= 0) c.fail("crop dimensions must be positive, got crop_size " + d.to_string());
    ch = (*sz)[0];
    cw = (*sz)[1];
  }
  c.set_shape(0, shape{named(c, n, "boxes"), named(c, ch, "crop_height"), named(c, cw, "crop_width"),
                       img.has_rank() ? named(c, img[3], "depth") : c.fresh_dim("depth")});
}

// AdjustContrastv2 / AdjustHue / AdjustSaturation(images [..., h, w, c], factor []): images'
// shape (hue and saturation: c == 3).
inline void adjust_infer(infer_context& c, const char* factor, bool rgb) {
  want_rank(c, 0, 3, "images", true);
  want_rank(c, 1, 0, factor);
  const shape& s = c.input_shape(0);
  if (rgb && s.has_rank()) want_dim(c, s[s.rank() - 1], 3, "images' last dim (its channels)");
  c.set_shape(0, s);
}

// RGBToHSV / HSVToRGB(images [..., 3]): images' shape.
inline void colorspace_infer(infer_context& c) {
  want_rank(c, 0, 1, "images", true);
  const shape& s = c.input_shape(0);
  if (s.has_rank()) want_dim(c, s[s.rank() - 1], 3, "images' last dim");
  c.set_shape(0, s);
}

/// The output size of a window of `k` taps `rate` apart moved by `stride` over `in` cells, as
/// TensorFlow's GetWindowedOutputSize computes it (`same`: SAME padding); fails through `fail`.
template <class Fail>
std::int64_t patch_output_size(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t rate, bool same,
                               Fail&& fail) {
  const auto span = checked_mul(k - 1, rate - 1);
  const auto eff = span ? checked_add(k, *span) : std::nullopt;
  if (!eff) fail("the window of " + std::to_string(k) + " taps at rate " + std::to_string(rate) + " overflows");
  if (same) return in / stride + (in % stride != 0 ? 1 : 0);
  // (in - eff + stride) / stride, truncating as TensorFlow's; `in - eff + stride` overflowed
  // for an input near INT64_MAX, so a non-negative `in - eff` is divided first
  const std::int64_t d = in - *eff;
  const std::int64_t out = d >= 0 ? d / stride + 1 : (d + stride) / stride;
  if (out < 0)
    fail("computed output size would be negative: " + std::to_string(out) + " [input size " + std::to_string(in) +
         ", effective window " + std::to_string(*eff) + ", stride " + std::to_string(stride) + "]");
  return out;
}

/// ExtractImagePatches' geometry along one axis: its input size, taps, stride, rate, output
/// size and the padding before it (SAME: half the total, the odd cell at the end).
struct patch_axis {
  std::int64_t in = 0, k = 0, stride = 0, rate = 0, out = 0, pad = 0;
};
template <class Fail>
patch_axis patch_geometry(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t rate, bool same, Fail&& fail) {
  patch_axis a{in, k, stride, rate, 0, 0};
  a.out = patch_output_size(in, k, stride, rate, same, fail);
  if (same) {
    const std::int64_t eff = k + (k - 1) * (rate - 1);  // (checked by patch_output_size)
    const auto steps = checked_mul(std::max<std::int64_t>(a.out - 1, 0), stride);
    const auto need = steps ? checked_add(*steps, eff) : std::nullopt;
    if (!need) fail("ExtractImagePatches' padding overflows");
    a.pad = std::max<std::int64_t>(0, *need - in) / 2;
  }
  return a;
}

/// ExtractImagePatches' attribute `a` (ksizes / strides / rates): 4 values, 1 at the batch and
/// depth, >= 1 elsewhere; returns the two spatial ones.
template <class Fail>
std::pair<std::int64_t, std::int64_t> patch_attr(const std::optional<std::vector<std::int64_t>>& v, const char* a,
                                                 Fail&& fail) {
  if (!v || v->size() != 4)
    fail(std::string(a) + " must have 4 values, has " + (v ? std::to_string(v->size()) : std::string("none")));
  if ((*v)[0] != 1 || (*v)[3] != 1) fail(std::string(a) + " must be 1 at the batch and depth dims (space only)");
  if ((*v)[1] < 1 || (*v)[2] < 1 || (*v)[1] > INT32_MAX || (*v)[2] > INT32_MAX)
    fail(std::string(a) + " must be positive int32 values, got [" + std::to_string((*v)[1]) + ", " +
         std::to_string((*v)[2]) + "]");
  return {(*v)[1], (*v)[2]};
}

// ExtractImagePatches(images [b, h, w, d]): [b, out_h, out_w, kh * kw * d].
inline void extract_image_patches_infer(infer_context& c) {
  auto fail = [&c](const std::string& m) { c.fail(m); };
  want_rank(c, 0, 4, "images");
  const auto [kr, kc] = patch_attr(c.attr_ints("ksizes"), "ksizes", fail);
  const auto [sr, sc] = patch_attr(c.attr_ints("strides"), "strides", fail);
  const auto [rr, rc] = patch_attr(c.attr_ints("rates"), "rates", fail);
  const std::string pad = c.attr_string("padding", "");
  if (pad != "SAME" && pad != "VALID") c.fail("padding must be SAME or VALID, got '" + pad + "'");
  const shape& s = c.input_shape(0);
  std::vector<dim> out(4);
  if (s.has_rank()) {
    out[0] = s[0];
    if (s[1].is_known()) out[1] = dim(patch_output_size(s[1].value(), kr, sr, rr, pad == "SAME", fail));
    if (s[2].is_known()) out[2] = dim(patch_output_size(s[2].value(), kc, sc, rc, pad == "SAME", fail));
    const auto taps = checked_mul(kr, kc);
    if (!taps) c.fail("ksizes overflow");
    out[3] = mul_dims(int_dim(*taps), s[3]);
  }
  const char* purpose[] = {"batch", "rows", "cols", "depth"};
  for (std::size_t i = 0; i < 4; ++i) out[i] = named(c, out[i], purpose[i]);
  c.set_shape(0, shape(std::move(out)));
}

}  // namespace detail::tf_ops::tf_image
}  // namespace gpass

inline void gpass::register_tf_image_ops(op_registry& r) {
  using namespace detail::tf_ops::tf_image;
  tf_op("NonMaxSuppression").in("boxes:f32").in("scores:f32").in("max_output_size:i32").out("selected_indices:i32")
      .attr("iou_threshold", "float", 0.5).infer(nms_infer).add(r);
  tf_op("NonMaxSuppressionV2").in("boxes:T").in("scores:T").in("max_output_size:i32").in("iou_threshold:T_threshold")
      .out("selected_indices:i32").type_attr("T", dtype::f32).type_attr("T_threshold", dtype::f32).infer(nms_infer)
      .add(r);
  tf_op("NonMaxSuppressionV3").in("boxes:T").in("scores:T").in("max_output_size:i32").in("iou_threshold:T_threshold")
      .in("score_threshold:T_threshold").out("selected_indices:i32").type_attr("T", dtype::f32)
      .type_attr("T_threshold", dtype::f32).infer(nms_infer).add(r);
  tf_op("NonMaxSuppressionV4").in("boxes:T").in("scores:T").in("max_output_size:i32").in("iou_threshold:T_threshold")
      .in("score_threshold:T_threshold").out("selected_indices:i32").out("valid_outputs:i32")
      .type_attr("T", dtype::f32).type_attr("T_threshold", dtype::f32).attr("pad_to_max_output_size", "bool", false)
      .infer(nms_infer).add(r);
  tf_op("NonMaxSuppressionV5").in("boxes:T").in("scores:T").in("max_output_size:i32").in("iou_threshold:T")
      .in("score_threshold:T").in("soft_nms_sigma:T").out("selected_indices:i32").out("selected_scores:T")
      .out("valid_outputs:i32").type_attr("T", dtype::f32).attr("pad_to_max_output_size", "bool", false)
      .infer(nms_infer)
      .doc("Greedy non-maximum suppression by score (ties: the lower index first), IoU > iou_threshold "
           "suppressing; soft_nms_sigma > 0 rescales overlapping scores by exp(-iou^2 / (2 sigma)).")
      .add(r);
  tf_op("CombinedNonMaxSuppression").in("boxes:f32").in("scores:f32").in("max_output_size_per_class:i32")
      .in("max_total_size:i32").in("iou_threshold:f32").in("score_threshold:f32").out("nmsed_boxes:f32")
      .out("nmsed_scores:f32").out("nmsed_classes:f32").out("valid_detections:i32")
      .attr("pad_per_class", "bool", false).attr("clip_boxes", "bool", true).infer(combined_nms_infer)
      .doc("Per image and class greedy NMS, then the best max_total_size detections of all classes by score, "
           "boxes clipped to [0, 1] (clip_boxes), zero padded; valid_detections counts them.")
      .add(r);
  tf_op("CropAndResize").in("image:T").in("boxes:f32").in("box_ind:i32").in("crop_size:i32").out("crops:f32")
      .type_attr("T").attr("method", "string", "bilinear").attr("extrapolation_value", "float", 0.0)
      .infer(crop_and_resize_infer)
      .doc("Crops of normalized boxes [y1, x1, y2, x2] of the images resized to crop_size (bilinear or nearest); "
           "samples outside the image are extrapolation_value.")
      .add(r);
  tf_op("AdjustContrastv2").in("images:T").in("contrast_factor:f32").out("output:T").type_attr("T", dtype::f32)
      .infer([](infer_context& c) { adjust_infer(c, "contrast_factor", false); }).add(r);
  tf_op("AdjustHue").in("images:T").in("delta:f32").out("output:T").type_attr("T", dtype::f32)
      .infer([](infer_context& c) { adjust_infer(c, "delta", true); }).add(r);
  tf_op("AdjustSaturation").in("images:T").in("scale:f32").out("output:T").type_attr("T", dtype::f32)
      .infer([](infer_context& c) { adjust_infer(c, "scale", true); }).add(r);
  tf_op("RGBToHSV").in("images:T").out("output:T").type_attr("T", dtype::f32).infer(colorspace_infer).add(r);
  tf_op("HSVToRGB").in("images:T").out("output:T").type_attr("T", dtype::f32).infer(colorspace_infer).add(r);
  tf_op("ExtractImagePatches").in("images:T").out("patches:T").type_attr("T").req("ksizes", "ints")
      .req("strides", "ints").req("rates", "ints").req("padding", "string").infer(extract_image_patches_infer)
      .doc("The kh x kw patches (taps `rates` apart, moved by `strides`) of each image, flattened into the depth "
           "(row, column, channel order); SAME pads with zeros.")
      .add(r);
}
