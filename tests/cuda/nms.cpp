// SPDX-License-Identifier: Apache-2.0
// The CUDA kernel of ONNX NonMaxSuppression: registered (no GPU needed), its source compiles
// (the NVRTC test of every generated source covers it), and on a GPU it selects the boxes the
// Eigen CPU kernel selects, in the same order; without one each comparison runs its CPU side.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_nms {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::fails_alike;
using gpass_test_cuda::serves_in;

ex::kernel_node nms(i64 center = 0) { return node("NonMaxSuppression", 11, {{"center_point_box", center}}); }
tensor F(std::vector<float> v) { return tensor::from<float>(std::move(v)); }

/// Boxes [B, N, 4] as corners in [0, 20) with sides up to 6 (many overlaps), of type `t`.
tensor boxes(i64 B, i64 N, std::uint64_t seed, dtype t = dtype::f32) { return rnd({B, N, 4}, seed, t, 0, 20); }

}  // namespace

TEST_CASE("cuda: NonMaxSuppression is registered") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  CHECK(r.has("", "NonMaxSuppression"));
  CHECK(serves_in("", "NonMaxSuppression", {dtype::f32, dtype::f32, dtype::int64, dtype::f32, dtype::f32}));
  CHECK_FALSE(serves_in("", "NonMaxSuppression", {dtype::f32, dtype::f16}));
}

TEST_CASE("cuda: NonMaxSuppression matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  const tensor b = boxes(2, 300, 1), s = rnd({2, 3, 300}, 2, dtype::f32, 0, 1);
  for (float iou : {0.0f, 0.3f, 0.7f, 1.0f}) {
    INFO("iou " << iou);
    differential(nms(), {b, s, I({10}), F({iou}), F({0.5f})});
    differential(nms(), {b, s, I({1000}), F({iou})});
    differential(nms(1), {b, s, I({7}), F({iou}), F({0.2f})});
  }
  // without thresholds (every box a candidate), a huge max_output_boxes_per_class, none
  differential(nms(), {b, s, I({std::numeric_limits<i64>::max()}), F({0.5f})});
  differential(nms(), {b, s});
  differential(nms(), {b, s, I({-4}), F({0.5f})});
  // ties (scores of four values), NaN scores, degenerate and NaN boxes
  tensor tied = rnd({1, 2, 200}, 3, dtype::int64, 0, 4);
  tensor ts(dtype::f32, {1, 2, 200});
  for (i64 i = 0; i < 400; ++i) ts.data<float>()[i] = static_cast<float>(tied.data<i64>()[i]);
  ts.data<float>()[5] = std::nanf("");
  ts.data<float>()[17] = std::nanf("");
  tensor bb = boxes(1, 200, 4);
  bb.data<float>()[8] = bb.data<float>()[10];  // a box of no height
  bb.data<float>()[13] = std::nanf("");
  differential(nms(), {bb, ts, I({50}), F({0.4f})});
  differential(nms(), {bb, ts, I({50}), F({0.4f}), F({1.0f})});
  // f64 and f16, many classes of few boxes, one box
  differential(nms(), {boxes(3, 40, 5, dtype::f64), rnd({3, 9, 40}, 6, dtype::f64, 0, 1), I({5}), tensor::from<double>({0.5})});
  differential(nms(1), {boxes(1, 64, 7, dtype::f16), rnd({1, 2, 64}, 8, dtype::f16, 0, 1), I({64}), F({0.5f}), F({0.1f})});
  differential(nms(), {boxes(1, 1, 9), rnd({1, 1, 1}, 10), I({3})});
  differential(nms(), {boxes(0, 5, 11), rnd({0, 2, 5}, 12), I({3})});
}

TEST_CASE("cuda: NonMaxSuppression fails on bad inputs as the CPU kernel does") {
  const tensor b = boxes(1, 5, 20), s = rnd({1, 2, 5}, 21);
  fails_alike(nms(), {rnd({1, 5, 3}, 22), s}, "boxes must have shape");
  fails_alike(nms(), {b, rnd({1, 2, 6}, 23)}, "do not match boxes");
  fails_alike(nms(), {b, s, I({3}), F({1.5f})}, "iou_threshold must be in [0, 1]");
}

}  // namespace gpass_test_cuda_nms
