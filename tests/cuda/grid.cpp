// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of grid.hpp (GridSample, AffineGrid, RoiAlign, DeformConv): which nodes the GPU serves
// (no GPU needed), each against the Eigen CPU kernel on a GPU (bit for bit: the CPU's
// arithmetic step for step; without a GPU, the CPU side of each comparison runs), and the
// errors naming the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_grid {

namespace {

using namespace gpass_test_cuda::prelude;

gpass::exec::kernel_node grid_sample(const std::string& mode, const std::string& pad, bool align) {
  return node("GridSample", 22, {{"mode", mode}, {"padding_mode", pad}, {"align_corners", i64{align}}});
}

/// A grid of `sizes` in [lo, hi) with a NaN and an infinity among its first values.
tensor grid_of(ints sizes, std::uint64_t seed, double lo, double hi, dtype t = dtype::f32) {
  tensor g = rnd(std::move(sizes), seed, dtype::f32, lo, hi);
  g.data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
  g.data<float>()[2] = -std::numeric_limits<float>::infinity();
  if (t == dtype::f32) return g;
  return gpass_test_cuda::run_cpu(node("Cast", 21, {{"to", i64{t == dtype::f64 ? 11 : 10}}}), {g}).at(0);
}

}  // namespace

TEST_CASE("cuda: the sampling grids the GPU serves") {
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) {
    CHECK(gpass_test_cuda::serves_in("", "GridSample", {t, t}));
    CHECK(gpass_test_cuda::serves_in("", "AffineGrid", {t, dtype::int64}));
  }
  CHECK_FALSE(gpass_test_cuda::serves_in("", "GridSample", {dtype::int32, dtype::f32}));
}

TEST_CASE("cuda: GridSample and AffineGrid match the CPU kernels bit for bit") {
  GPASS_GPU_OR_CPU_SIDE();
  // every mode, padding and corner rule over 1, 2 and 3 spatial dimensions; coordinates past
  // the edges (reflected more than once), NaN and infinite ones; a dimension of one cell
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (const char* pad : {"zeros", "border", "reflection"})
      for (const bool align : {false, true}) {
        CAPTURE(mode);
        CAPTURE(pad);
        CAPTURE(align);
        const auto n = grid_sample(mode, pad, align);
        differential(n, {rnd({2, 3, 5, 7}, 1), grid_of({2, 4, 6, 2}, 2, -1.7, 1.7)}, 0, 0);
        differential(n, {rnd({2, 2, 6}, 3), grid_of({2, 9, 1}, 4, -3, 3)}, 0, 0);
        differential(n, {rnd({1, 2, 3, 4, 5}, 5), grid_of({1, 2, 3, 2, 3}, 6, -1.3, 1.3)}, 0, 0);
        differential(n, {rnd({1, 1, 1, 6}, 7), grid_of({1, 3, 3, 2}, 8, -1.2, 1.2)}, 0, 0);
      }
  // other types: f64 image and grid, f16 image with an f32 grid
  differential(grid_sample("linear", "zeros", false), {rnd({1, 2, 4, 4}, 9, dtype::f64), grid_of({1, 3, 3, 2}, 10, -1, 1, dtype::f64)}, 0, 0);
  differential(grid_sample("cubic", "border", true), {rnd({1, 2, 4, 4}, 11, dtype::f16), grid_of({1, 3, 3, 2}, 12, -1, 1)}, 0, 0);
  // an empty output
  differential(grid_sample("linear", "zeros", false), {rnd({1, 2, 4, 4}, 13), tensor(dtype::f32, {1, 0, 3, 2})}, 0, 0);
  // AffineGrid: 2-D and 3-D, both corner rules, f32 and f64
  for (const bool align : {false, true}) {
    const auto n = node("AffineGrid", 20, {{"align_corners", i64{align}}});
    differential(n, {rnd({3, 2, 3}, 14), I({3, 2, 5, 4})}, 0, 0);
    differential(n, {rnd({2, 3, 4}, 15), I({2, 1, 3, 4, 5})}, 0, 0);
    differential(n, {rnd({1, 2, 3}, 16, dtype::f64), I({1, 1, 1, 7})}, 0, 0);
  }
}

TEST_CASE("cuda: RoiAlign matches the CPU kernel bit for bit") {
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16}) CHECK(gpass_test_cuda::serves_in("", "RoiAlign", {t, t, dtype::int64}));
  GPASS_GPU_OR_CPU_SIDE();
  // boxes inside, past the edges and smaller than a pixel; both modes and coordinate rules; the
  // adaptive grid and a fixed sampling_ratio; f64 and f16
  const auto rois = tensor::from<float>({0, 0, 10, 8, 2.5f, 1.5f, 6, 7.5f, -3, -2, 20, 15, 5, 5, 5.2f, 5.1f}, {4, 4});
  const auto batch = I({1, 0, 1, 0});
  for (const char* mode : {"avg", "max"})
    for (const char* ct : {"half_pixel", "output_half_pixel"})
      for (const i64 ratio : {0, 2}) {
        CAPTURE(mode);
        CAPTURE(ct);
        CAPTURE(ratio);
        const auto n = node("RoiAlign", 16,
                            {{"mode", std::string(mode)}, {"coordinate_transformation_mode", std::string(ct)}, {"sampling_ratio", ratio},
                             {"output_height", i64{3}}, {"output_width", i64{4}}, {"spatial_scale", 0.8}});
        differential(n, {rnd({2, 3, 9, 11}, 1), rois, batch}, 0, 0);
      }
  const auto n = node("RoiAlign", 16, {{"output_height", i64{2}}, {"output_width", i64{2}}});
  differential(n, {rnd({1, 2, 5, 5}, 2, dtype::f64), tensor::from<double>({0, 0, 4, 4, 1, 1, 3, 2}, {2, 4}), I({0, 0})}, 0, 0);
  differential(n, {rnd({1, 2, 5, 5}, 3, dtype::f16), gpass_test_cuda::run_cpu(node("Cast", 21, {{"to", i64{10}}}), {rois}).at(0), I({0, 0, 0, 0})}, 0, 0);
  // no rois
  differential(n, {rnd({1, 2, 5, 5}, 4), tensor(dtype::f32, {0, 4}), I({})}, 0, 0);
}

TEST_CASE("cuda: DeformConv matches the CPU kernel bit for bit") {
  GPASS_GPU_OR_CPU_SIDE();
  CHECK(gpass_test_cuda::serves_in("", "DeformConv", {dtype::f32, dtype::f32, dtype::f32}));
  CHECK_FALSE(gpass_test_cuda::serves_in("", "DeformConv", {dtype::int32, dtype::int32, dtype::int32}));
  struct cfg {
    i64 N, C, H, W, M, group, og, kH, kW;
    ints strides, pads, dil;
  };
  const cfg cfgs[] = {{1, 2, 5, 6, 3, 1, 1, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}},
                      {2, 4, 7, 5, 4, 2, 2, 3, 2, {2, 1}, {0, 1, 2, 0}, {1, 2}},
                      {1, 6, 4, 4, 6, 3, 3, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}},
                      {2, 2, 6, 6, 2, 1, 2, 2, 2, {1, 2}, {1, 0, 0, 1}, {2, 1}}};
  for (const auto& c : cfgs)
    for (dtype t : {dtype::f32, dtype::f64, dtype::f16})
      for (int extras = 0; extras < 3; ++extras) {
        CAPTURE(c.C);
        CAPTURE(to_string(t));
        CAPTURE(extras);
        const i64 oH = (c.H + c.pads[0] + c.pads[2] - (c.kH - 1) * c.dil[0] - 1) / c.strides[0] + 1;
        const i64 oW = (c.W + c.pads[1] + c.pads[3] - (c.kW - 1) * c.dil[1] - 1) / c.strides[1] + 1;
        const i64 taps = c.kH * c.kW;
        tensor off = rnd({c.N, c.og * taps * 2, oH, oW}, 2, t, -2.5, 2.5);
        if (t == dtype::f32) {  // a NaN and a far-away offset read nothing
          off.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
          off.data<float>()[3] = 1e9f;
        }
        std::vector<tensor> in{rnd({c.N, c.C, c.H, c.W}, 1, t), rnd({c.M, c.C / c.group, c.kH, c.kW}, 3, t), off};
        if (extras >= 1) in.push_back(rnd({c.M}, 4, t));
        if (extras == 2) in.push_back(rnd({c.N, c.og * taps, oH, oW}, 5, t, 0, 1));
        differential(node("DeformConv", 19,
                          {{"group", c.group}, {"offset_group", c.og}, {"kernel_shape", ints{c.kH, c.kW}}, {"strides", c.strides},
                           {"pads", c.pads}, {"dilations", c.dil}}),
                     in, 0, 0);
      }
  // a mask without a bias
  differential(node("DeformConv", 19), {rnd({1, 2, 4, 4}, 6), rnd({2, 2, 2, 2}, 7), rnd({1, 8, 3, 3}, 8), tensor{}, rnd({1, 4, 3, 3}, 9)}, 0, 0);
  differential(node("DeformConv", 19), {rnd({0, 2, 4, 4}, 6), rnd({2, 2, 2, 2}, 7), rnd({0, 8, 3, 3}, 8)}, 0, 0);
}

TEST_CASE("cuda: the sampling grids fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  fails(grid_sample("linear", "zeros", false), {rnd({2, 3, 5, 7}, 1), rnd({2, 4, 6, 3}, 2)}, "grid has shape");
  fails(grid_sample("linear", "zeros", false), {rnd({2, 3}, 3), rnd({2, 3}, 4)}, "X must have rank >= 3");
  fails(grid_sample("linear", "zeros", false), {tensor(dtype::f32, {1, 1, 0, 4}), rnd({1, 2, 2, 2}, 5)}, "cannot sample from an empty spatial extent");
  fails(grid_sample("cubic", "zeros", false), {rnd({1, 1, 4, 4, 4, 4, 4, 4}, 6), rnd({1, 1, 1, 1, 1, 1, 1, 6}, 7)}, "over the limit of 1024");
  fails(grid_sample("area", "zeros", false), {rnd({1, 1, 4, 4}, 8), rnd({1, 2, 2, 2}, 9)}, "mode must be nearest, linear or cubic");
  fails(node("AffineGrid", 20), {rnd({3, 2, 3}, 10), I({3, 2, 5})}, "size must have 4 (2-D) or 5 (3-D) values");
  fails(node("AffineGrid", 20), {rnd({3, 2, 4}, 11), I({3, 2, 5, 4})}, "theta must be [3, 2, 3]");
  const auto roi = node("RoiAlign", 16);
  fails(roi, {rnd({1, 2, 5, 5}, 12), tensor::from<float>({0, 0, 4, 4}, {1, 4}), I({1})}, "batch index 1 is out of range [0, 1)");
  fails(roi, {rnd({1, 2, 5, 5}, 13), tensor::from<float>({0, 0, 4, 4}, {1, 4}), I({0, 0})}, "batch_indices must have num_rois elements");
  fails(roi, {rnd({1, 2, 5, 5}, 14), tensor::from<float>({0, 0, std::numeric_limits<float>::infinity(), 4}, {1, 4}), I({0})}, "not finite");
  fails(roi, {rnd({1, 2, 5, 5}, 15), tensor::from<float>({0, 0, 4}, {1, 3}), I({0})}, "rois must have shape [num_rois, 4]");
  const auto deform = node("DeformConv", 19);
  fails(deform, {rnd({1, 2, 4, 4}, 16), rnd({2, 2, 2, 2}, 17), rnd({1, 8, 2, 3}, 18)}, "offset is [1,8,2,3], expected [1,8,3,3]");
  fails(deform, {rnd({1, 2, 4, 4}, 19), rnd({2, 3, 2, 2}, 20), rnd({1, 8, 3, 3}, 21)}, "X has 2 channels");
  fails(deform, {rnd({1, 2, 4, 4}, 22), rnd({2, 2, 2, 2}, 23), rnd({1, 8, 3, 3}, 24, dtype::f64)}, "offset is f64, X f32");
  fails(deform, {rnd({1, 2, 4, 4}, 25), rnd({2, 2, 2, 2}, 26), rnd({1, 8, 3, 3}, 27), rnd({3}, 28)}, "B must have 2 values");
}

}  // namespace gpass_test_cuda_grid
