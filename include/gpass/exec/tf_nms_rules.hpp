// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_nms_rules.hpp
/// The rules of TensorFlow's NonMaxSuppression (V1 to V5) and CombinedNonMaxSuppression that
/// the Eigen CPU and CUDA kernels share: the checks of their shapes and arguments, in
/// TensorFlow's words, and the output size of CombinedNonMaxSuppression. Errors name the node.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/checked.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/exec/kernel.hpp>

namespace gpass::exec::tf_nms_rules {

using i64 = std::int64_t;

/// Checks that an argument of `sizes` is a scalar (TensorFlow's IsScalar).
inline void check_scalar(const std::vector<i64>& sizes, const std::string& what, const kernel_node& n) {
  if (!sizes.empty()) n.fail(what + " must be 0-D, got shape " + shape::of(sizes).to_string());
}

/// Checks an IoU threshold (in [0, 1]; NaN fails).
inline void check_iou_threshold(double iou, const kernel_node& n) {
  if (!(iou >= 0 && iou <= 1)) n.fail("iou_threshold must be in [0, 1], got " + std::to_string(iou));
}

/// Checks V5's soft_nms_sigma (>= 0; NaN fails).
inline void check_soft_nms_sigma(double sigma, const kernel_node& n) {
  if (!(sigma >= 0)) n.fail("soft_nms_sigma must be >= 0, got " + std::to_string(sigma));
}

/// The number of boxes of NonMaxSuppression's boxes [n, 4] and scores [n] (of the boxes' type).
inline i64 nms_boxes(const std::vector<i64>& boxes, dtype boxes_type, const std::vector<i64>& scores, dtype scores_type,
                     const kernel_node& n) {
  if (boxes.size() != 2) n.fail("boxes must be 2-D, got shape " + shape::of(boxes).to_string());
  const i64 count = boxes[0];
  if (boxes[1] != 4) n.fail("boxes must have 4 columns, got shape " + shape::of(boxes).to_string());
  if (scores.size() != 1) n.fail("scores must be 1-D, got shape " + shape::of(scores).to_string());
  if (scores[0] != count) n.fail("scores has " + std::to_string(scores[0]) + " elements for " + std::to_string(count) + " boxes");
  if (scores_type != boxes_type)
    n.fail("scores are " + std::string(to_string(scores_type)) + ", boxes " + std::string(to_string(boxes_type)));
  return count;
}

/// Checks max_output_size (non-negative, fits in int32: the selected indices are int32).
inline void check_max_output_size(i64 max_out, const kernel_node& n) {
  if (max_out < 0) n.fail("max_output_size must be non-negative, got " + std::to_string(max_out));
  if (max_out > INT32_MAX) n.fail("max_output_size " + std::to_string(max_out) + " does not fit in int32");
}

/// CombinedNonMaxSuppression's geometry: boxes [B, N, q, 4] (q 1: shared by the K classes, or
/// K), scores [B, N, K].
struct combined_shape {
  i64 B = 0, N = 0, q = 0, K = 0;
};
inline combined_shape combined_nms_shape(const std::vector<i64>& boxes, const std::vector<i64>& scores, const kernel_node& n) {
  if (boxes.size() != 4) n.fail("boxes must be 4-D, got shape " + shape::of(boxes).to_string());
  if (scores.size() != 3) n.fail("scores must be 3-D, got shape " + shape::of(scores).to_string());
  const combined_shape c{boxes[0], boxes[1], boxes[2], scores[2]};
  if (boxes[3] != 4) n.fail("boxes must have 4 columns, got shape " + shape::of(boxes).to_string());
  if (scores[0] != c.B || scores[1] != c.N)
    n.fail("scores " + shape::of(scores).to_string() + " must be [batch, num_boxes, num_classes] of boxes " + shape::of(boxes).to_string());
  if (c.q != 1 && c.q != c.K) n.fail("third dimension of boxes must be either 1 or num classes, got " + std::to_string(c.q));
  return c;
}

/// Checks CombinedNonMaxSuppression's sizes (both positive, the total within int32) and
/// returns the detections kept per image: max_total_size, or with pad_per_class at most
/// max_output_size_per_class * K.
inline i64 combined_nms_per_image(i64 per_class, i64 total, i64 K, bool pad_per_class, const kernel_node& n) {
  if (per_class <= 0) n.fail("max_size_per_class must be > 0, got " + std::to_string(per_class));
  if (total <= 0) n.fail("max_total_size must be > 0, got " + std::to_string(total));
  if (total > INT32_MAX) n.fail("max_total_size " + std::to_string(total) + " does not fit in int32");
  const auto cap = gpass::checked_mul(per_class, K);
  return pad_per_class && cap ? std::min(total, *cap) : total;
}

}  // namespace gpass::exec::tf_nms_rules
