// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of tf_color.hpp (AdjustHue, AdjustSaturation, AdjustContrastv2, RGBToHSV,
// HSVToRGB, ExtractImagePatches): which nodes the GPU serves (no GPU needed), each op against
// the Eigen CPU kernel on a GPU (without one, the CPU side of each comparison runs), and the
// errors naming the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_tf_color {

namespace {

using namespace gpass_test_cuda::prelude;

gpass::exec::kernel_node tf(std::string op, gpass::attribute_map attrs = {}) { return node(std::move(op), 1, std::move(attrs), 1, "tf"); }

}  // namespace

TEST_CASE("cuda: the TensorFlow colour and patch ops the GPU serves") {
  auto serves = [](const char* op, std::vector<dtype> in) { return gpass_test_cuda::serves_in("tf", op, std::move(in)); };
  for (const char* op : {"RGBToHSV", "HSVToRGB"}) {
    CHECK(serves(op, {dtype::f32}));
    CHECK(serves(op, {dtype::f64}));
    CHECK_FALSE(serves(op, {dtype::f16}));  // (TensorFlow's half arithmetic: the CPU)
  }
  for (const char* op : {"AdjustHue", "AdjustSaturation", "AdjustContrastv2"}) CHECK(serves(op, {dtype::f32, dtype::f32}));
  CHECK(serves("ExtractImagePatches", {dtype::uint8}));
  CHECK(serves("ExtractImagePatches", {dtype::bool_}));
  CHECK_FALSE(serves("ExtractImagePatches", {dtype::string}));
}

TEST_CASE("cuda: TensorFlow's colour ops match the CPU kernels bit for bit") {
  GPASS_GPU_OR_CPU_SIDE();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const auto img = rnd({2, 5, 7, 3}, 1, dtype::f32, 0, 1);
  // greys, saturated colours, equal channels in every order, negatives, NaN and infinities
  const auto edge = tensor::from<float>({0.5f, 0.5f, 0.5f, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 0.2f, 0.7f, 0.7f,
                                         0.7f, 0.2f, 0.7f, -0.3f, 0.4f, 1.5f, nan, 0.5f, 0.2f, inf, 0, 0, 0, 0, 0, 1e-30f, 2e-30f, 0},
                                        {1, 2, 7, 3});
  for (const auto& x : {img, edge}) {
    differential(tf("RGBToHSV"), {x}, 0, 0);
    differential(tf("HSVToRGB"), {x}, 0, 0);
    for (const float d : {0.0f, 0.25f, -0.6f, 3.5f, 1000.0f})
      differential(tf("AdjustHue"), {x, tensor::scalar(d)}, 0, 0);
    for (const float s : {0.0f, 0.5f, 1.0f, 2.5f})
      differential(tf("AdjustSaturation"), {x, tensor::scalar(s)}, 0, 0);
    for (const float c : {0.0f, 0.5f, 2.0f, -1.0f})
      differential(tf("AdjustContrastv2"), {x, tensor::scalar(c)}, 0, 0);
  }
  differential(tf("RGBToHSV"), {rnd({4, 3}, 2, dtype::f64, -1, 2)}, 0, 0);
  differential(tf("HSVToRGB"), {rnd({4, 3}, 3, dtype::f64, -1, 2)}, 0, 0);
  // contrast over planes of every fold shape: one pixel, an odd number of rows, many channels
  for (const ints& s : std::vector<ints>{{1, 1, 3}, {3, 1, 2}, {5, 3, 4}, {2, 9, 11, 5}, {1, 31, 17, 1}})
    differential(tf("AdjustContrastv2"), {rnd(s, 4, dtype::f32, -2, 2), tensor::scalar(1.7f)}, 0, 0);
  differential(tf("AdjustHue"), {tensor(dtype::f32, {0, 4, 3}), tensor::scalar(0.5f)}, 0, 0);
}

TEST_CASE("cuda: TensorFlow ExtractImagePatches matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto x = rnd({2, 7, 6, 3}, 5);
  struct patch_case {
    ints k, s, r;
    std::string padding;
  };
  const patch_case cases[] = {{{1, 3, 3, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, "VALID"}, {{1, 3, 2, 1}, {1, 2, 3, 1}, {1, 1, 1, 1}, "SAME"},
                              {{1, 2, 2, 1}, {1, 1, 2, 1}, {1, 2, 2, 1}, "SAME"},  {{1, 2, 3, 1}, {1, 3, 1, 1}, {1, 3, 1, 1}, "VALID"},
                              {{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, "VALID"}};
  for (const auto& c : cases) {
    const gpass::attribute_map a{{"ksizes", c.k}, {"strides", c.s}, {"rates", c.r}, {"padding", c.padding}};
    differential(tf("ExtractImagePatches", a), {x}, 0, 0);
    differential(tf("ExtractImagePatches", a), {rnd({1, 5, 5, 2}, 6, dtype::uint8, 0, 255)}, 0, 0);
  }
}

TEST_CASE("cuda: TensorFlow's colour and patch ops fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  fails(tf("AdjustHue"), {rnd({2, 2, 4}, 1), tensor::scalar(0.1f)}, "must have 3 channels");
  fails(tf("AdjustSaturation"), {rnd({2, 3}, 1), tensor::scalar(0.1f)}, "at least 3-D");
  fails(tf("AdjustContrastv2"), {rnd({2, 2, 3}, 1), tensor::from<float>({1, 2}, {2})}, "must be scalar");
  fails(tf("RGBToHSV"), {rnd({2, 4}, 1)}, "must have 3 channels");
  fails(tf("ExtractImagePatches", {{"ksizes", ints{1, 9, 1, 1}}, {"strides", ints{1, 1, 1, 1}}, {"rates", ints{1, 1, 1, 1}}, {"padding", std::string("VALID")}}),
        {rnd({1, 3, 3, 1}, 2)}, "would be negative");
}

}  // namespace gpass_test_cuda_tf_color
