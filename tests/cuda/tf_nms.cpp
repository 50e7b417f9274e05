// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of tf_nms.hpp (TensorFlow's NonMaxSuppression V1 to V5 and
// CombinedNonMaxSuppression): which nodes the GPU serves (no GPU needed), each against the
// Eigen CPU kernel on a GPU (without one, the CPU side of each comparison runs), and the errors
// naming the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_tf_nms {

namespace {

using namespace gpass_test_cuda::prelude;

std::string nms_op(int version) { return version == 1 ? "NonMaxSuppression" : "NonMaxSuppressionV" + std::to_string(version); }

gpass::exec::kernel_node nms(int version, gpass::attribute_map attrs = {}) {
  return node(nms_op(version), 1, std::move(attrs), version == 5 ? 3 : version == 4 ? 2 : 1, "tf");
}

/// A 0-D tensor of type `t` holding `v`.
tensor scalar(double v, dtype t = dtype::f32) {
  tensor r(t, {});
  if (t == dtype::f16) r.data<Eigen::half>()[0] = Eigen::half(static_cast<float>(v));
  else if (t == dtype::int32) r.data<std::int32_t>()[0] = static_cast<std::int32_t>(v);
  else r.data<float>()[0] = static_cast<float>(v);
  return r;
}

/// `n` boxes ([n, 4] of `sizes`' leading dims) in a few overlapping clusters, corners sometimes
/// given the other way round, in [0, 1] or a little past it.
tensor clustered_boxes(std::vector<i64> sizes, std::uint64_t seed, dtype t = dtype::f32) {
  tensor u = rnd(sizes, seed, dtype::f64, 0, 1);
  tensor r(t, sizes);
  const i64 n = u.size() / 4;
  for (i64 i = 0; i < n; ++i) {
    const double* v = u.data<double>() + i * 4;
    const double cy = 0.2 + 0.6 * static_cast<double>(i % 3) / 2 + 0.05 * v[0], cx = 0.3 + 0.05 * v[1];
    const double h = 0.1 + 0.3 * v[2], w = 0.1 + 0.3 * v[3];
    double b[4] = {cy - h / 2, cx - w / 2, cy + h / 2, cx + w / 2};
    if (i % 5 == 3) std::swap(b[0], b[2]);
    for (int c = 0; c < 4; ++c) {
      if (t == dtype::f16) r.data<Eigen::half>()[i * 4 + c] = Eigen::half(static_cast<float>(b[c]));
      else r.data<float>()[i * 4 + c] = static_cast<float>(b[c]);
    }
  }
  return r;
}

void set(tensor& t, i64 i, double v) {
  if (t.element_type() == dtype::f16) t.data<Eigen::half>()[i] = Eigen::half(static_cast<float>(v));
  else t.data<float>()[i] = static_cast<float>(v);
}

}  // namespace

TEST_CASE("cuda: the TensorFlow non-max suppressions the GPU serves") {
  for (int version = 2; version <= 5; ++version) {
    CAPTURE(version);
    CHECK(gpass_test_cuda::serves_in("tf", nms_op(version).c_str(), {dtype::f32, dtype::f32, dtype::int32}));
    CHECK(gpass_test_cuda::serves_in("tf", nms_op(version).c_str(), {dtype::f16, dtype::f16, dtype::int32}));
    CHECK_FALSE(gpass_test_cuda::serves_in("tf", nms_op(version).c_str(), {dtype::f64, dtype::f64, dtype::int32}));
  }
  CHECK(gpass_test_cuda::serves_in("tf", "NonMaxSuppression", {dtype::f32, dtype::f32, dtype::int32}));
  CHECK_FALSE(gpass_test_cuda::serves_in("tf", "NonMaxSuppression", {dtype::f16, dtype::f16, dtype::int32}));
  CHECK(gpass_test_cuda::serves_in("tf", "CombinedNonMaxSuppression", {dtype::f32, dtype::f32, dtype::int32, dtype::int32}));
}

TEST_CASE("cuda: TensorFlow NonMaxSuppression V1 to V5 match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  for (dtype t : {dtype::f32, dtype::f16}) {
    CAPTURE(to_string(t));
    const i64 n = 60;
    const tensor boxes = clustered_boxes({n, 4}, 1, t);
    tensor scores = rnd({n}, 2, t, 0, 1);
    // ties (the lower index first), a NaN, infinities
    set(scores, 7, 0.5);
    set(scores, 8, 0.5);
    set(scores, 9, std::numeric_limits<double>::quiet_NaN());
    set(scores, 10, std::numeric_limits<double>::infinity());
    set(scores, 11, -std::numeric_limits<double>::infinity());
    for (int version = 1; version <= 5; ++version) {
      if (version == 1 && t != dtype::f32) continue;
      for (i64 max_out : {i64{0}, i64{1}, i64{7}, n + 5})
        for (double iou : {0.0, 0.3, 0.7, 1.0})
          for (bool pad : {false, true}) {
            if (pad && version < 4) continue;
            CAPTURE(version);
            CAPTURE(max_out);
            CAPTURE(iou);
            CAPTURE(pad);
            gpass::attribute_map a;
            if (version == 1) a["iou_threshold"] = static_cast<float>(iou);
            if (version >= 4) a["pad_to_max_output_size"] = pad;
            std::vector<tensor> in{boxes, scores, scalar(static_cast<double>(max_out), dtype::int32)};
            if (version >= 2) in.push_back(scalar(iou, version == 5 ? t : dtype::f32));
            if (version >= 3) in.push_back(scalar(0.25, version == 5 ? t : dtype::f32));
            if (version == 5) in.push_back(scalar(0.0, t));
            differential(nms(version, a), in, 0, 0);
          }
    }
    // soft-NMS: the scores decay and come back in order (within an ulp of expf)
    for (double sigma : {0.1, 0.5, 2.0})
      for (double score_thr : {-1.0, 0.1, 0.4}) {
        CAPTURE(sigma);
        CAPTURE(score_thr);
        differential(nms(5), {boxes, scores, scalar(40, dtype::int32), scalar(0.5, t), scalar(score_thr, t), scalar(sigma, t)},
                     t == dtype::f32 ? 1e-6 : 1e-3, 0);
      }
    // no boxes; boxes of NaN (hard NMS: a NaN IoU weighs 0 and sends the candidate back)
    differential(nms(4, {{"pad_to_max_output_size", true}}),
                 {tensor(t, {0, 4}), tensor(t, {0}), scalar(3, dtype::int32), scalar(0.5), scalar(0.0)}, 0, 0);
    tensor nan_boxes = boxes;
    for (i64 c = 0; c < 4; ++c) set(nan_boxes, 3 * 4 + c, std::numeric_limits<double>::quiet_NaN());
    set(nan_boxes, 20 * 4 + 1, std::numeric_limits<double>::quiet_NaN());
    for (double score_thr : {-2.0, 0.1})
      differential(nms(3), {nan_boxes, scores, scalar(30, dtype::int32), scalar(0.5), scalar(score_thr)}, 0, 0);
  }
  // many boxes: the ranking and the heap over more than a block's threads
  const tensor big = clustered_boxes({3000, 4}, 5);
  differential(nms(5), {big, rnd({3000}, 6, dtype::f32, 0, 1), scalar(300, dtype::int32), scalar(0.6), scalar(0.05), scalar(0.0)}, 0, 0);
  differential(nms(5), {big, rnd({3000}, 7, dtype::f32, 0, 1), scalar(100, dtype::int32), scalar(0.6), scalar(0.05), scalar(0.5)}, 1e-6, 0);
}

TEST_CASE("cuda: TensorFlow CombinedNonMaxSuppression matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto combined = [](gpass::attribute_map a) { return node("CombinedNonMaxSuppression", 1, std::move(a), 4, "tf"); };
  const i64 B = 3, N = 40, K = 4;
  tensor scores = rnd({B, N, K}, 11, dtype::f32, 0, 1);
  scores.data<float>()[5] = scores.data<float>()[9];  // a tie across classes
  for (i64 q : {i64{1}, K}) {
    const tensor boxes = clustered_boxes({B, N, q, 4}, 12 + q);
    for (bool pad : {false, true})
      for (bool clip : {false, true})
        for (i64 per_class : {i64{1}, i64{6}, N + 3})
          for (i64 total : {i64{5}, i64{30}, i64{500}}) {
            CAPTURE(q);
            CAPTURE(pad);
            CAPTURE(clip);
            CAPTURE(per_class);
            CAPTURE(total);
            differential(combined({{"pad_per_class", pad}, {"clip_boxes", clip}}),
                         {boxes, scores, scalar(static_cast<double>(per_class), dtype::int32), scalar(static_cast<double>(total), dtype::int32),
                          scalar(0.5), scalar(0.3)},
                         0, 0);
          }
  }
  // no boxes; a threshold nothing passes
  differential(combined({}), {tensor(dtype::f32, {2, 0, 1, 4}), tensor(dtype::f32, {2, 0, 3}), scalar(4, dtype::int32),
                              scalar(6, dtype::int32), scalar(0.5), scalar(0.1)}, 0, 0);
  differential(combined({}), {clustered_boxes({B, N, 1, 4}, 20), scores, scalar(4, dtype::int32), scalar(6, dtype::int32), scalar(0.5),
                              scalar(2.0)}, 0, 0);
}

TEST_CASE("cuda: the TensorFlow non-max suppressions fail as the CPU's do, naming the node") {
  using gpass_test_cuda::fails_alike;
  const tensor b = clustered_boxes({6, 4}, 30), s = rnd({6}, 31, dtype::f32, 0, 1);
  fails_alike(nms(3), {rnd({6, 3}, 32), s, scalar(3, dtype::int32), scalar(0.5), scalar(0.1)}, "boxes must have 4 columns");
  fails_alike(nms(3), {b, rnd({5}, 33), scalar(3, dtype::int32), scalar(0.5), scalar(0.1)}, "scores has 5 elements for 6 boxes");
  fails_alike(nms(3), {b, s, scalar(3, dtype::int32), scalar(1.5), scalar(0.1)}, "iou_threshold must be in [0, 1]");
  fails_alike(nms(3), {b, s, scalar(-1, dtype::int32), scalar(0.5), scalar(0.1)}, "max_output_size must be non-negative");
  fails_alike(nms(3), {b, s, I32({3}), scalar(0.5), scalar(0.1)}, "max_output_size must be 0-D");
  fails_alike(nms(5), {b, s, scalar(3, dtype::int32), scalar(0.5), scalar(0.1), scalar(-1.0)}, "soft_nms_sigma must be >= 0");
  const auto combined = node("CombinedNonMaxSuppression", 1, {}, 4, "tf");
  fails_alike(combined, {clustered_boxes({1, 6, 2, 4}, 34), rnd({1, 6, 3}, 35), scalar(3, dtype::int32), scalar(5, dtype::int32), scalar(0.5),
                         scalar(0.1)},
              "third dimension of boxes must be either 1 or num classes");
  fails_alike(combined, {clustered_boxes({1, 6, 1, 4}, 36), rnd({1, 6, 3}, 37), scalar(0, dtype::int32), scalar(5, dtype::int32), scalar(0.5),
                         scalar(0.1)},
              "max_size_per_class must be > 0");
}

}  // namespace gpass_test_cuda_tf_nms
