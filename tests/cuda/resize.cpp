// SPDX-License-Identifier: Apache-2.0
// The CUDA Resize and Upsample: on a GPU every mode, coordinate transformation and rounding
// rule matches the Eigen CPU kernel (the same host plans, run on the device).

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_resize {

namespace {

using namespace gpass_test_cuda::prelude;

tensor F(std::vector<float> v) { return tensor::from<float>(std::move(v)); }

}  // namespace

TEST_CASE("cuda: Resize and Upsample are registered; linear and cubic of other types run elsewhere") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  CHECK(r.has("", "Resize"));
  CHECK(r.has("", "Upsample"));
  gpass::attribute_map lin{{"mode", std::string("linear")}}, near{{"mode", std::string("nearest")}};
  CHECK(r.serves(ex::kernel_query{.op = "Resize", .attrs = &lin, .inputs = {dtype::f32}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.op = "Resize", .attrs = &lin, .inputs = {dtype::uint16}}));
  CHECK(r.serves(ex::kernel_query{.op = "Resize", .attrs = &near, .inputs = {dtype::uint16}}));
}

TEST_CASE("cuda: Resize matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  const tensor x = random_tensor(dtype::f32, {2, 3, 5, 7}, -2, 2, 1);
  const tensor up = F({1, 1, 2.5f, 1.5f}), down = F({1, 1, 0.6f, 0.45f});
  const tensor none;
  for (const char* coord : {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"}) {
    for (const char* mode : {"nearest", "linear", "cubic"}) {
      INFO(mode << " " << coord);
      gpass::attribute_map a{{"mode", std::string(mode)}, {"coordinate_transformation_mode", std::string(coord)}};
      differential(node("Resize", 19, a), {x, none, up}, 1e-5, 1e-6);
      differential(node("Resize", 19, a), {x, none, down}, 1e-5, 1e-6);
      a["antialias"] = std::int64_t{1};
      if (std::string(mode) != "nearest") differential(node("Resize", 19, a), {x, none, down}, 1e-5, 1e-6);
    }
  }
  for (const char* nm : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    INFO(nm);
    differential(node("Resize", 19, {{"mode", std::string("nearest")}, {"nearest_mode", std::string(nm)}}), {x, none, F({1, 1, 1.7f, 0.8f})});
  }
  // sizes with axes and a keep-aspect policy; cubic with exclude_outside and another coefficient
  differential(node("Resize", 19, {{"mode", std::string("linear")}, {"axes", ints{2, 3}}}), {x, none, none, I({9, 4})}, 1e-5, 1e-6);
  differential(node("Resize", 19, {{"mode", std::string("linear")}, {"axes", ints{-1, -2}}, {"keep_aspect_ratio_policy", std::string("not_larger")}}),
               {x, none, none, I({20, 8})}, 1e-5, 1e-6);
  differential(node("Resize", 19, {{"mode", std::string("cubic")}, {"exclude_outside", std::int64_t{1}}, {"cubic_coeff_a", -0.5}}),
               {x, none, up}, 1e-5, 1e-6);
  // tf_crop_and_resize with its extrapolation value
  differential(node("Resize", 19, {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                                   {"extrapolation_value", 7.5}}),
               {x, F({0, 0, 0.2f, -0.3f, 1, 1, 0.9f, 1.2f}), none, I({2, 3, 6, 6})}, 1e-5, 1e-6);
  // integer and half tensors; nearest on bytes and int64 (exact)
  differential(node("Resize", 19, {{"mode", std::string("linear")}}), {random_tensor(dtype::uint8, {1, 2, 4, 5}, 0, 255, 2), none, up});
  differential(node("Resize", 19, {{"mode", std::string("cubic")}}), {random_tensor(dtype::int32, {1, 2, 4, 5}, -100, 100, 3), none, up});
  differential(node("Resize", 19, {{"mode", std::string("linear")}}), {random_tensor(dtype::f16, {1, 2, 4, 5}, -2, 2, 4), none, up}, 2e-3, 2e-3);
  differential(node("Resize", 19), {random_tensor(dtype::int64, {1, 2, 4, 5}, -100, 100, 5), none, up});
  differential(node("Resize", 19), {random_tensor(dtype::bool_, {1, 2, 4, 5}, 0, 1, 6), none, down});
  // Resize-10 and Upsample (inputs X, scales; asymmetric coordinates)
  differential(node("Resize", 10, {{"mode", std::string("linear")}}), {x, up}, 1e-5, 1e-6);
  differential(node("Upsample", 9, {{"mode", std::string("nearest")}}), {x, F({1, 1, 2, 3})});
  // a segmentation head's 8x bilinear upsampling of a larger map
  differential(node("Resize", 19, {{"mode", std::string("linear")}}), {random_tensor(dtype::f32, {1, 21, 32, 32}, -4, 4, 7), none, F({1, 1, 8, 8})},
               1e-5, 1e-6);
}

}  // namespace gpass_test_cuda_resize
