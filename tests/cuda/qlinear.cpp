// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of qlinear.hpp (MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv):
// which nodes the GPU serves (no GPU needed), each against the Eigen CPU kernel on a GPU (bit
// for bit: exact integer sums, the CPU's float requantization; without a GPU, the CPU side of
// each comparison runs), and the errors naming the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_qlinear {

namespace {

using namespace gpass_test_cuda::prelude;

tensor u8(ints sizes, std::uint64_t seed, double lo = 0, double hi = 255) { return rnd(std::move(sizes), seed, dtype::uint8, lo, hi); }
tensor i8(ints sizes, std::uint64_t seed, double lo = -128, double hi = 127) { return rnd(std::move(sizes), seed, dtype::int8, lo, hi); }

}  // namespace

TEST_CASE("cuda: the integer products the GPU serves") {
  for (const char* op : {"MatMulInteger", "QLinearMatMul"})
    for (dtype t : {dtype::uint8, dtype::int8}) CHECK(gpass_test_cuda::serves_in("", op, {t}));
  CHECK_FALSE(gpass_test_cuda::serves_in("", "MatMulInteger", {dtype::int16}));
}

TEST_CASE("cuda: MatMulInteger and QLinearMatMul match the CPU kernels bit for bit") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto mmi = node("MatMulInteger", 10), qmm = node("QLinearMatMul", 21);
  // 2-D past one tile each way (K not a multiple of 16); u8 x i8, i8 x u8; scalar, per-row and
  // per-column zero points; no zero points
  differential(mmi, {u8({37, 53}, 1), i8({53, 21}, 2), tensor::from<std::uint8_t>({7}, {}), tensor::from<std::int8_t>({-5}, {})}, 0, 0);
  differential(mmi, {i8({5, 40}, 3), u8({40, 33}, 4), i8({5}, 5, -20, 20), u8({33}, 6, 100, 150)}, 0, 0);
  differential(mmi, {u8({4, 3}, 7), u8({3, 2}, 8)}, 0, 0);
  // batches and their broadcasting; 1-D operands
  differential(mmi, {u8({2, 1, 4, 6}, 9), i8({3, 6, 5}, 10)}, 0, 0);
  differential(mmi, {u8({6}, 11), i8({2, 6, 5}, 12)}, 0, 0);
  differential(mmi, {i8({3, 4, 6}, 13), i8({6}, 14)}, 0, 0);
  // QLinearMatMul: per-tensor and per-row / per-column scales and zero points, u8 and i8 out
  differential(qmm, {u8({2, 1, 4, 6}, 15), rnd({4}, 16, dtype::f32, 0.001, 0.01), u8({4}, 17, 100, 150), i8({3, 6, 5}, 18),
                     rnd({5}, 19, dtype::f32, 0.001, 0.01), i8({5}, 20, -10, 10), tensor::from<float>({0.0005f}, {}),
                     tensor::from<std::uint8_t>({128}, {})},
               0, 0);
  differential(qmm, {i8({20, 35}, 21), tensor::from<float>({0.02f}, {}), tensor::from<std::int8_t>({3}, {}), i8({35, 18}, 22),
                     tensor::from<float>({0.03f}, {}), tensor::from<std::int8_t>({-2}, {}), tensor::from<float>({0.4f}, {}),
                     tensor::from<std::int8_t>({-7}, {})},
               0, 0);
  // saturation both ways
  differential(qmm, {u8({3, 8}, 23), tensor::from<float>({1.0f}, {}), tensor::from<std::uint8_t>({0}, {}), u8({8, 4}, 24),
                     tensor::from<float>({1.0f}, {}), tensor::from<std::uint8_t>({0}, {}), tensor::from<float>({0.5f}, {}),
                     tensor::from<std::uint8_t>({10}, {})},
               0, 0);
}

TEST_CASE("cuda: ConvInteger and QLinearConv match the CPU kernels bit for bit") {
  for (const char* op : {"ConvInteger", "QLinearConv"})
    for (dtype t : {dtype::uint8, dtype::int8}) CHECK(gpass_test_cuda::serves_in("", op, {t}));
  GPASS_GPU_OR_CPU_SIDE();
  // 1-D, 2-D and 3-D; groups, strides, dilations, explicit pads and SAME / VALID; scalar and
  // per-channel zero points and scales; the bias; u8 and i8 in and out
  const gpass::attribute_map a2{{"group", i64{2}}, {"strides", ints{2, 1}}, {"dilations", ints{1, 2}}, {"pads", ints{1, 2, 0, 1}}};
  differential(node("QLinearConv", 10, a2),
               {u8({2, 4, 7, 6}, 1), tensor::from<float>({0.02f}, {}), tensor::from<std::uint8_t>({120}, {}), i8({6, 2, 3, 2}, 2),
                rnd({6}, 3, dtype::f32, 0.001, 0.01), i8({6}, 4, -5, 5), tensor::from<float>({0.05f}, {}),
                tensor::from<std::uint8_t>({100}, {}), rnd({6}, 5, dtype::int32, -1000, 1000)},
               0, 0);
  differential(node("QLinearConv", 10, {{"auto_pad", std::string("SAME_LOWER")}}),
               {i8({1, 3, 5, 5}, 6), tensor::from<float>({0.1f}, {}), tensor::from<std::int8_t>({-4}, {}), i8({2, 3, 3, 3}, 7),
                tensor::from<float>({0.05f}, {}), tensor::from<std::int8_t>({0}, {}), tensor::from<float>({0.3f}, {}),
                tensor::from<std::int8_t>({5}, {})},
               0, 0);
  differential(node("ConvInteger", 10, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", ints{2}}}),
               {i8({1, 3, 11}, 8), u8({4, 3, 4}, 9), tensor::from<std::int8_t>({-3}, {}), tensor::from<std::uint8_t>({130}, {})}, 0, 0);
  differential(node("ConvInteger", 10), {u8({1, 2, 4, 5, 3}, 10), u8({3, 2, 2, 3, 2}, 11), tensor::from<std::uint8_t>({17}, {})}, 0, 0);
  differential(node("ConvInteger", 10, {{"pads", ints{1, 1, 1, 1}}}), {u8({2, 1, 3, 3}, 12), u8({1, 1, 2, 2}, 13)}, 0, 0);
}

TEST_CASE("cuda: the integer products fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  const auto mmi = node("MatMulInteger", 10), qmm = node("QLinearMatMul", 21);
  fails(mmi, {u8({3, 4}, 1), u8({5, 2}, 2)}, "MatMul inner dimensions differ");
  fails(mmi, {u8({3, 4}, 3), u8({4, 2}, 4), u8({2}, 5)}, "a zero point must be a scalar or have M values");
  fails(mmi, {u8({3, 4}, 6), u8({4, 2}, 7), u8({3}, 8), u8({3}, 9)}, "b zero point must be a scalar or have N values");
  const tensor s = tensor::from<float>({0.1f}, {});
  const tensor z = tensor::from<std::uint8_t>({1}, {});
  fails(qmm, {u8({3, 4}, 10), rnd({2}, 11), z, u8({4, 2}, 12), s, z, s, z}, "a_scale must be a scalar or have M values");
  fails(qmm, {u8({3, 4}, 13), s, z, u8({4, 2}, 14), s, z, rnd({2}, 15), z}, "y_scale and y_zero_point must be scalars");
  const auto ci = node("ConvInteger", 10), qc = node("QLinearConv", 10);
  fails(ci, {u8({1, 3, 5, 5}, 16), u8({2, 2, 3, 3}, 17)}, "input has 3 channels but weight expects 2 x group 1");
  fails(ci, {u8({1, 3, 5, 5}, 18), u8({2, 3, 3, 3}, 19), u8({2}, 20)}, "x zero point must be a scalar");
  fails(ci, {u8({1, 3, 2, 2}, 21), u8({2, 3, 3, 3}, 22)}, "does not fit input size");
  fails(qc, {u8({1, 3, 5, 5}, 23), s, z, u8({2, 3, 3, 3}, 24), rnd({3}, 25), z, s, z}, "w_scale must be a scalar or have M values");
  fails(qc, {u8({1, 3, 5, 5}, 26), s, z, u8({2, 3, 3, 3}, 27), s, z, s, z, rnd({2}, 28, dtype::int64)}, "bias must be int32 with M values");
}

}  // namespace gpass_test_cuda_qlinear
