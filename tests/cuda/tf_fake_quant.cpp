// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of tf_fake_quant.hpp (FakeQuantWithMinMaxArgs / Vars): which nodes the GPU
// serves, the quantization against the Eigen CPU kernel bit for bit on a GPU (without one, the
// CPU side of each comparison runs), and the errors naming the node.

#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_tf_fake_quant {

namespace {

using namespace gpass_test_cuda::prelude;

gpass::exec::kernel_node tf(std::string op, gpass::attribute_map attrs = {}) { return node(std::move(op), 1, std::move(attrs), 1, "tf"); }

}  // namespace

TEST_CASE("cuda: TensorFlow FakeQuantWithMinMaxArgs / Vars match the CPU kernels bit for bit") {
  CHECK(gpass_test_cuda::serves_in("tf", "FakeQuantWithMinMaxArgs", {dtype::f32}));
  CHECK(gpass_test_cuda::serves_in("tf", "FakeQuantWithMinMaxVars", {dtype::f32, dtype::f32, dtype::f32}));
  CHECK_FALSE(gpass_test_cuda::serves_in("tf", "FakeQuantWithMinMaxArgs", {dtype::f64}));
  GPASS_GPU_OR_CPU_SIDE();
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const auto x = rnd({5, 40}, 1, dtype::f32, -8, 8);
  const auto edge = tensor::from<float>({nan, inf, -inf, 0.0f, -0.0f, 5.99f, -6.01f, 0.5f}, {8});
  // the default range, a range that needs nudging (0 between levels), narrow range, 4 bits, 16 bits
  const gpass::attribute_map args[] = {{},
                                       {{"min", -1.3}, {"max", 2.9}},
                                       {{"min", 0.2}, {"max", 3.0}, {"narrow_range", true}},
                                       {{"min", -3.0}, {"max", -0.5}, {"num_bits", i64{4}}},
                                       {{"min", -2.0}, {"max", 2.0}, {"num_bits", i64{16}}}};
  for (const auto& a : args) {
    differential(tf("FakeQuantWithMinMaxArgs", a), {x}, 0, 0);
    differential(tf("FakeQuantWithMinMaxArgs", a), {edge}, 0, 0);
  }
  for (const auto& [lo, hi] : std::vector<std::pair<float, float>>{{-1.3f, 2.9f}, {0.0f, 0.0f}, {0.4f, 1.7f}, {-5.0f, -1.0f}}) {
    differential(tf("FakeQuantWithMinMaxVars"), {x, tensor::scalar(lo), tensor::scalar(hi)}, 0, 0);
    differential(tf("FakeQuantWithMinMaxVars", {{"num_bits", i64{3}}, {"narrow_range", true}}), {edge, tensor::scalar(lo), tensor::scalar(hi)}, 0, 0);
  }
  differential(tf("FakeQuantWithMinMaxArgs"), {tensor(dtype::f32, {0, 3})}, 0, 0);
}

TEST_CASE("cuda: TensorFlow's fake quantization fails as the CPU's does, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  fails(tf("FakeQuantWithMinMaxArgs", {{"num_bits", i64{1}}}), {rnd({2}, 1)}, "num_bits must be in [2, 16]");
  fails(tf("FakeQuantWithMinMaxArgs", {{"min", 2.0}, {"max", 1.0}}), {rnd({2}, 1)}, "must be less than max");
  fails(tf("FakeQuantWithMinMaxVars"), {rnd({2}, 1), tensor::scalar(0.0), tensor::scalar(1.0f)}, "min must be a float32 scalar");
  fails(tf("FakeQuantWithMinMaxVars"), {rnd({2}, 1), tensor::scalar(0.0f), tensor::from<float>({1, 2}, {2})}, "max must be a float32 scalar");
}

}  // namespace gpass_test_cuda_tf_fake_quant
