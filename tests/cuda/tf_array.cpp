// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of tf_array.hpp and the TF ops added to tf.hpp with them (BatchMatMul with
// adjoints, MaxPoolV2, TensorScatterSub, the sorted segment reductions): which nodes the GPU
// serves (no GPU needed), each op against the Eigen CPU kernel on a GPU (without one, the CPU
// side of each comparison runs: the cases are valid inputs of the reference kernels), and the
// GPU kernels' errors naming the node as the CPU's do.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_tf_array {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::run_cpu;
using gpass_test_cuda::run_gpu;

gpass::exec::kernel_node tf(std::string op, gpass::attribute_map attrs = {}, std::size_t outputs = 1) {
  return node(std::move(op), 1, std::move(attrs), outputs, "tf");
}

tensor i32s(std::vector<std::int32_t> v, ints sizes) { return tensor::from<std::int32_t>(std::move(v), std::move(sizes)); }
tensor i64s(ints v, ints sizes) { return tensor::from<i64>(std::move(v), std::move(sizes)); }

/// A 2-D pool's window and input.
struct pool_case {
  std::string padding;
  ints ksize, strides, input;
  dtype t = dtype::f32;
};

/// Whether the CUDA registry serves a TF node of `op` with these input types and attributes.
bool serves(const char* op, std::vector<dtype> inputs, const gpass::attribute_map& attrs = {}) {
  return gpass_test_cuda::serves_in("tf", op, std::move(inputs), attrs);
}

}  // namespace

TEST_CASE("cuda: the TensorFlow array, segment and product ops the GPU serves") {
  const dtype f = dtype::f32, i32 = dtype::int32, i64t = dtype::int64;
  for (const char* op : {"DepthToSpace", "SpaceToDepth"}) {
    CHECK(serves(op, {f}));
    CHECK(serves(op, {dtype::int8}, {{"data_format", std::string("NCHW")}}));
    CHECK_FALSE(serves(op, {f}, {{"data_format", std::string("NCHW_VECT_C")}}));
    CHECK_FALSE(serves(op, {dtype::string}));
  }
  for (const char* op : {"SpaceToBatchND", "BatchToSpaceND"}) CHECK(serves(op, {f, i32, i32}));
  CHECK(serves("Roll", {dtype::uint16, i64t, i64t}));
  CHECK(serves("ReverseSequence", {f, i64t}));
  CHECK(serves("OneHot", {i32, i32, f, f}));
  CHECK(serves("OneHot", {i64t, i32, dtype::int8, dtype::int8}));
  CHECK_FALSE(serves("OneHot", {dtype::uint8, i32, f, f}));  // other index types: the CPU
  CHECK_FALSE(serves("OneHot", {i32, i32, dtype::string, dtype::string}));
  CHECK(serves("MatrixBandPart", {dtype::f64, i64t, i64t}));
  for (dtype t : {f, dtype::f64, i32, i64t}) CHECK(serves("Range", {t, t, t}));
  CHECK_FALSE(serves("Range", {dtype::int16, dtype::int16, dtype::int16}));
  CHECK(serves("LRN", {dtype::f16}));
  CHECK(serves("L2Loss", {dtype::bf16}));
  CHECK_FALSE(serves("L2Loss", {i32}));
  for (const char* op : {"InvertPermutation", "BroadcastArgs", "BroadcastGradientArgs"}) {
    CHECK(serves(op, {i32, i32}));
    CHECK_FALSE(serves(op, {f, f}));
  }
  for (const char* op : {"BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"}) {
    CHECK(serves(op, {f, f}, {{"adj_x", true}, {"adj_y", true}}));
    CHECK_FALSE(serves(op, {i32, i32}));
  }
  CHECK_FALSE(serves("BatchMatMulV3", {dtype::f16, dtype::f16}, {{"Tout", f}}));
  CHECK(serves("MaxPoolV2", {f, i32, i32}));
  CHECK(serves("SoftmaxCrossEntropyWithLogits", {f, f}));
  CHECK(serves("DynamicStitch", {i32, i32, f, f}));
  CHECK_FALSE(serves("DynamicStitch", {i32, dtype::string}));
  CHECK(serves("DynamicPartition", {dtype::int16, i32}));
  CHECK(serves("ConjugateTranspose", {f, i32}));
  CHECK(serves("CheckNumerics", {dtype::f16}));
  CHECK_FALSE(serves("CheckNumerics", {i32}));
  CHECK(serves("InTopKV2", {f, i32, i32}));
  CHECK(serves("MaxPoolGrad", {f, f, f}));
  CHECK(serves("AvgPoolGrad", {i32, dtype::f64}));
  CHECK_FALSE(serves("AvgPoolGrad", {i32, f}, {{"data_format", std::string("NCHW")}}));
  CHECK(serves("Conv2DBackpropInput", {i32, f, f}));
  CHECK_FALSE(serves("Conv2DBackpropInput", {i32, f, f}, {{"data_format", std::string("NCHW")}}));  // (the CPU's: NHWC only)
  CHECK(serves("DepthwiseConv2dNativeBackpropInput", {i32, dtype::f64, dtype::f64}));
  CHECK(serves("Conv3DBackpropInputV2", {i32, f, f}));
  CHECK(serves("Conv3DBackpropFilterV2", {dtype::f64, i32, dtype::f64}));
  CHECK(serves("MaxPool3DGrad", {f, f, f}));
  CHECK(serves("AvgPool3DGrad", {i32, dtype::f64}));
  CHECK_FALSE(serves("MaxPool3DGrad", {dtype::f16, dtype::f16, dtype::f16}));
  for (const char* op : {"Conv3D", "MaxPool3D", "AvgPool3D"}) {
    CHECK(serves(op, {f, f}));
    CHECK_FALSE(serves(op, {f, f}, {{"data_format", std::string("NCDHW")}}));  // (the CPU's: NDHWC only)
  }
  CHECK(serves("Conv2DBackpropFilter", {f, i32, f}));
  CHECK(serves("DepthwiseConv2dNativeBackpropFilter", {dtype::f64, i32, dtype::f64}));
  CHECK_FALSE(serves("Conv2DBackpropFilter", {f, i32, f}, {{"data_format", std::string("NCHW")}}));
  CHECK_FALSE(serves("Conv2DBackpropFilter", {dtype::f16, i32, dtype::f16}));  // (cuDNN's f16 sums differ: the CPU)
  CHECK(serves("SparseSoftmaxCrossEntropyWithLogits", {dtype::f16, i64t}));
  CHECK_FALSE(serves("SparseSoftmaxCrossEntropyWithLogits", {i32, i64t}));
  CHECK(serves("TensorScatterSub", {dtype::int16, i32, dtype::int16}));
  CHECK_FALSE(serves("TensorScatterSub", {dtype::bool_, i32, dtype::bool_}));
  for (const char* op : {"SegmentSum", "SegmentMean", "SegmentProd", "SegmentMax", "SegmentMin"}) {
    CHECK(serves(op, {f, i32}));
    CHECK(serves(op, {dtype::uint8, i64t}));
    CHECK_FALSE(serves(op, {dtype::bool_, i32}));
  }
}

TEST_CASE("cuda: TensorFlow DepthToSpace, SpaceToDepth, SpaceToBatchND, BatchToSpaceND, Roll and ReverseSequence match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const gpass::attribute_map nchw{{"block_size", i64{2}}, {"data_format", std::string("NCHW")}};
  differential(tf("DepthToSpace", {{"block_size", i64{2}}}), {rnd({2, 3, 4, 8}, 1)});
  differential(tf("DepthToSpace", {{"block_size", i64{3}}}), {rnd({1, 2, 2, 18}, 2, dtype::int8, -100, 100)});
  differential(tf("DepthToSpace", nchw), {rnd({2, 8, 3, 4}, 3)});
  differential(tf("SpaceToDepth", {{"block_size", i64{2}}}), {rnd({2, 4, 6, 3}, 4)});
  differential(tf("SpaceToDepth", nchw), {rnd({1, 3, 4, 6}, 5, dtype::f64)});
  // SpaceToBatchND: two spatial dims with padding, one trailing dim; one spatial dim, two
  // trailing; no padding; int64 block and paddings
  differential(tf("SpaceToBatchND"), {rnd({2, 5, 7, 3}, 6), i32s({2, 3}, {2}), i32s({1, 0, 2, 0}, {2, 2})});
  differential(tf("SpaceToBatchND"), {rnd({3, 4, 2, 2}, 7), i32s({2}, {1}), i32s({1, 1}, {1, 2})});
  differential(tf("SpaceToBatchND"), {rnd({1, 4, 4, 1}, 8, dtype::int32, -50, 50), i64s({2, 2}, {2}), i64s({0, 0, 0, 0}, {2, 2})});
  differential(tf("SpaceToBatchND"), {rnd({2, 3, 3, 2}, 9), i64s({4, 4}, {2}), i64s({3, 2, 0, 1}, {2, 2})});
  differential(tf("BatchToSpaceND"), {rnd({12, 3, 3, 3}, 10), i32s({2, 3}, {2}), i32s({1, 0, 2, 0}, {2, 2})});
  differential(tf("BatchToSpaceND"), {rnd({6, 3, 2, 2}, 11), i32s({2}, {1}), i32s({1, 2}, {1, 2})});
  differential(tf("BatchToSpaceND"), {rnd({8, 2, 3, 1}, 12, dtype::f16), i64s({2, 4}, {2}), i64s({0, 1, 3, 2}, {2, 2})});
  // SpaceToBatchND then BatchToSpaceND with the same paddings as crops: the input again
  // (checked on the CPU side too)
  {
    const auto x = rnd({2, 5, 7, 3}, 13);
    const auto block = i32s({2, 3}, {2}), pads = i32s({1, 0, 2, 0}, {2, 2});
    const auto b = run_cpu(tf("SpaceToBatchND"), {x, block, pads}).at(0);
    gpass_test_cuda::check_close(run_cpu(tf("BatchToSpaceND"), {b, block, pads}).at(0), x, 0, 0);
    if (gpass_test_cuda::gpu()) gpass_test_cuda::check_close(run_gpu(tf("BatchToSpaceND"), {run_gpu(tf("SpaceToBatchND"), {x, block, pads}).at(0), block, pads}).at(0), x, 0, 0);
  }
  // crops whose sum wraps int64 are larger than the dim (they wrapped past the check once)
  {
    const gpass::exec::kernel_node b2s = tf("BatchToSpaceND");
    const std::vector<tensor> in{rnd({2, 1, 1}, 19), i64s({2}, {1}), i64s({std::numeric_limits<i64>::max(), std::numeric_limits<i64>::max()}, {1, 2})};
    CHECK_THROWS_WITH_AS(run_cpu(b2s, in), doctest::Contains("crops are larger"), gpass::error);
    if (gpass_test_cuda::gpu()) CHECK_THROWS_WITH_AS(run_gpu(b2s, in), doctest::Contains("crops are larger"), gpass::error);
  }
  // Roll: two axes, a negative shift, a repeated axis, shifts past the size, none
  const auto x = rnd({3, 4, 5}, 14);
  differential(tf("Roll"), {x, i32s({1, -2}, {2}), i32s({0, 2}, {2})});
  differential(tf("Roll"), {x, i64s({3, 4, 9}, {3}), i64s({1, 1, -1}, {3})});
  differential(tf("Roll"), {x, i32s({0}, {1}), i32s({1}, {1})});
  differential(tf("Roll"), {x, i32s({1, 1, 1}, {3}), i32s({0, 1, 2}, {3})});
  differential(tf("Roll"), {rnd({7}, 15, dtype::uint8, 0, 200), i32s({-3}, {}), i32s({0}, {})});
  // ReverseSequence: lengths 0, 1, full and partial; the batch after the sequence; negative dims
  differential(tf("ReverseSequence", {{"seq_dim", i64{1}}, {"batch_dim", i64{0}}}), {rnd({4, 3, 2}, 16), i64s({0, 1, 3, 2}, {4})});
  differential(tf("ReverseSequence", {{"seq_dim", i64{0}}, {"batch_dim", i64{2}}}), {rnd({5, 2, 3}, 17), i32s({5, 2, 4}, {3})});
  differential(tf("ReverseSequence", {{"seq_dim", i64{-1}}, {"batch_dim", i64{-3}}}), {rnd({2, 3, 4}, 18, dtype::int64, -9, 9), i32s({4, 3}, {2})});
}

TEST_CASE("cuda: TensorFlow OneHot, MatrixBandPart, Range, LRN and L2Loss match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  // OneHot: negative and too large indices match nothing; the axis first, in the middle, last
  const auto idx = i32s({0, 3, -1, 2, 4, 1}, {2, 3});
  for (const i64 axis : {-1, 0, 1, 2})
    differential(tf("OneHot", {{"axis", axis}}), {idx, tensor::scalar<std::int32_t>(4), tensor::scalar(5.0f), tensor::scalar(-1.0f)});
  differential(tf("OneHot"), {i64s({2, -7, 0}, {3}), tensor::scalar<std::int32_t>(3), tensor::scalar<std::int8_t>(1), tensor::scalar<std::int8_t>(0)});
  differential(tf("OneHot"), {i64s({2, 0}, {2}), tensor::scalar<std::int32_t>(0), tensor::scalar(1.0), tensor::scalar(0.0)});
  // MatrixBandPart: bands, a whole side kept (-1), the diagonal alone, everything
  const auto m = rnd({2, 4, 5}, 20);
  for (const auto& [lo, up] : std::vector<std::pair<i64, i64>>{{1, 2}, {-1, 0}, {0, -1}, {0, 0}, {-1, -1}, {4, 5}})
    differential(tf("MatrixBandPart"), {m, tensor::scalar<i64>(lo), tensor::scalar<i64>(up)});
  differential(tf("MatrixBandPart"), {rnd({3, 3}, 21, dtype::int16, -100, 100), tensor::scalar<std::int32_t>(1), tensor::scalar<std::int32_t>(0)});
  // Range: up, down, fractional steps, int32 at its limits
  differential(tf("Range"), {tensor::scalar<std::int32_t>(0), tensor::scalar<std::int32_t>(10), tensor::scalar<std::int32_t>(3)});
  differential(tf("Range"), {tensor::scalar<i64>(5), tensor::scalar<i64>(-6), tensor::scalar<i64>(-2)});
  differential(tf("Range"), {tensor::scalar(1.0f), tensor::scalar(2.0f), tensor::scalar(0.3f)});
  differential(tf("Range"), {tensor::scalar(-1.5), tensor::scalar(-1.5), tensor::scalar(0.25)});
  differential(tf("Range"), {tensor::scalar<std::int32_t>(std::numeric_limits<std::int32_t>::min()),
                             tensor::scalar<std::int32_t>(std::numeric_limits<std::int32_t>::max()),
                             tensor::scalar<std::int32_t>(std::numeric_limits<std::int32_t>::max())});
  // LRN over the depth: a radius inside the depth, one past it, f64
  differential(tf("LRN", {{"depth_radius", i64{2}}, {"bias", 1.5}, {"alpha", 0.3}, {"beta", 0.75}}), {rnd({2, 3, 3, 7}, 22)}, 1e-5, 1e-6);
  differential(tf("LRN", {{"depth_radius", i64{10}}}), {rnd({1, 2, 2, 4}, 23)}, 1e-5, 1e-6);
  differential(tf("LRN", {{"depth_radius", i64{1}}, {"alpha", 0.5}}), {rnd({1, 2, 1, 5}, 24, dtype::f64)}, 1e-12, 1e-12);
  // L2Loss: f32, f64, f16 (the sum in float, as the CPU), a scalar, no elements
  differential(tf("L2Loss"), {rnd({3, 40}, 25)}, 1e-5, 1e-6);
  differential(tf("L2Loss"), {rnd({7, 5}, 26, dtype::f64)}, 1e-12, 1e-12);
  differential(tf("L2Loss"), {rnd({16}, 27, dtype::f16)}, 1e-3, 1e-3);
  differential(tf("L2Loss"), {rnd({4}, 28, dtype::f16, 150, 200)}, 1e-3, 1e-3);  // a sum past f16's range, its half within
  differential(tf("L2Loss"), {tensor::scalar(3.0f)});
  differential(tf("L2Loss"), {tensor(dtype::f32, {0, 3})});
}

TEST_CASE("cuda: TensorFlow SoftmaxCrossEntropyWithLogits and the sparse one match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto x = rnd({5, 7}, 50);
  const auto labels = rnd({5, 7}, 51, dtype::f32, 0, 1);
  differential(tf("SoftmaxCrossEntropyWithLogits", {}, 2), {x, labels}, 1e-5, 1e-6);
  // broadcast labels: a row, a column, a vector, a scalar
  differential(tf("SoftmaxCrossEntropyWithLogits", {}, 2), {x, rnd({1, 7}, 52, dtype::f32, 0, 1)}, 1e-5, 1e-6);
  differential(tf("SoftmaxCrossEntropyWithLogits", {}, 2), {x, rnd({5, 1}, 53, dtype::f32, 0, 1)}, 1e-5, 1e-6);
  differential(tf("SoftmaxCrossEntropyWithLogits", {}, 2), {x, rnd({7}, 54, dtype::f32, 0, 1)}, 1e-5, 1e-6);
  differential(tf("SoftmaxCrossEntropyWithLogits", {}, 2), {x, tensor::scalar(0.25f)}, 1e-5, 1e-6);
  // wide rows (more classes than a block's threads), large logits, f64 and f16
  differential(tf("SoftmaxCrossEntropyWithLogits", {}, 2), {rnd({3, 1000}, 55, dtype::f32, -80, 80), rnd({3, 1000}, 56, dtype::f32, 0, 1)},
               1e-4, 1e-4);
  differential(tf("SoftmaxCrossEntropyWithLogits", {}, 2), {rnd({4, 9}, 57, dtype::f64), rnd({4, 9}, 58, dtype::f64, 0, 1)}, 1e-12, 1e-12);
  differential(tf("SoftmaxCrossEntropyWithLogits", {}, 2), {rnd({2, 6}, 59, dtype::f16), rnd({2, 6}, 60, dtype::f16, 0, 1)}, 2e-3, 2e-3);
  differential(tf("SparseSoftmaxCrossEntropyWithLogits", {}, 2), {x, i32s({0, 6, 3, 3, 1}, {5})}, 1e-5, 1e-6);
  differential(tf("SparseSoftmaxCrossEntropyWithLogits", {}, 2), {rnd({2, 300}, 61), i64s({299, 0}, {2})}, 1e-5, 1e-6);
  differential(tf("SparseSoftmaxCrossEntropyWithLogits", {}, 2), {tensor(dtype::f32, {0, 4}), i32s({}, {0})});
}

TEST_CASE("cuda: a sparse label outside the classes is NaN on the GPU (TensorFlow's GPU kernel) and an error where it is constant") {
  GPASS_REQUIRE_GPU();
  const auto x = rnd({3, 4}, 62);
  const auto out = run_gpu(tf("SparseSoftmaxCrossEntropyWithLogits", {}, 2), {x, i32s({1, 4, -1}, {3})});
  const auto want = run_cpu(tf("SparseSoftmaxCrossEntropyWithLogits", {}, 2), {x.clone(), i32s({1, 0, 0}, {3})});
  REQUIRE(out.size() == 2);
  CHECK(out[0].data<float>()[0] == doctest::Approx(want[0].data<float>()[0]).epsilon(1e-5));
  for (int r : {1, 2}) {
    CHECK(std::isnan(out[0].data<float>()[r]));
    for (int j = 0; j < 4; ++j) CHECK(std::isnan(out[1].data<float>()[r * 4 + j]));
  }
  auto n = tf("SparseSoftmaxCrossEntropyWithLogits", {}, 2);
  n.constant_inputs = {std::nullopt, i32s({1, 4, 0}, {3})};
  CHECK_THROWS_WITH_AS(run_gpu(n, {x, i32s({1, 4, 0}, {3})}), doctest::Contains("outside the valid range [0, 4)"), gpass::error);
}

TEST_CASE("cuda: TensorFlow InvertPermutation, BroadcastArgs and BroadcastGradientArgs match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  differential(tf("InvertPermutation"), {i32s({2, 0, 3, 1}, {4})});
  differential(tf("InvertPermutation"), {i64s({}, {0})});
  differential(tf("BroadcastArgs"), {i32s({2, 1, 3}, {3}), i32s({4, 1}, {2})});
  differential(tf("BroadcastArgs"), {i64s({}, {0}), i64s({5, 2}, {2})});
  differential(tf("BroadcastGradientArgs", {}, 2), {i32s({2, 1, 3}, {3}), i32s({4, 1}, {2})});
  differential(tf("BroadcastGradientArgs", {}, 2), {i64s({2, 3}, {2}), i64s({2, 3}, {2})});
  differential(tf("BroadcastGradientArgs", {}, 2), {i64s({1, 1}, {2}), i64s({1}, {1})});
}

TEST_CASE("cuda: TensorFlow BatchMatMul with adjoints, MaxPoolV2, TensorScatterSub and the sorted segment ops match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  // BatchMatMul v1 (equal batches) and V2 (broadcast), every adjoint combination
  for (const char* op : {"BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"})
    for (const bool ax : {false, true})
      for (const bool ay : {false, true}) {
        CAPTURE(op);
        const auto a = rnd(ax ? ints{2, 4, 3} : ints{2, 3, 4}, 30), b = rnd(ay ? ints{2, 5, 4} : ints{2, 4, 5}, 31);
        differential(tf(op, {{"adj_x", ax}, {"adj_y", ay}}), {a, b}, 1e-5, 1e-5);
      }
  differential(tf("BatchMatMulV2", {{"adj_x", true}}), {rnd({3, 1, 6, 2}, 32), rnd({4, 6, 5}, 33)}, 1e-5, 1e-5);
  differential(tf("BatchMatMul", {{"adj_y", true}}), {rnd({2, 2, 3, 4}, 34, dtype::f64), rnd({2, 2, 5, 4}, 35, dtype::f64)}, 1e-12, 1e-12);
  // MaxPoolV2: ksize and strides as inputs, NHWC and NCHW
  differential(tf("MaxPoolV2", {{"padding", std::string("SAME")}}), {rnd({1, 6, 5, 3}, 36), i32s({1, 2, 3, 1}, {4}), i32s({1, 2, 2, 1}, {4})});
  differential(tf("MaxPoolV2", {{"padding", std::string("VALID")}, {"data_format", std::string("NCHW")}}),
               {rnd({2, 3, 6, 6}, 37), i32s({1, 1, 3, 3}, {4}), i32s({1, 1, 1, 2}, {4})});
  // TensorScatterSub: f32 rows, int32 elements (wrapping), repeated indices of an integer type
  differential(tf("TensorScatterSub"), {rnd({5, 3}, 38), i32s({4, 0}, {2, 1}), rnd({2, 3}, 39)});
  differential(tf("TensorScatterSub"),
               {i32s({std::numeric_limits<std::int32_t>::min(), 5, 7, 9}, {2, 2}), i64s({0, 0, 1, 1}, {2, 2}), i32s({1, -3}, {2})});
  differential(tf("TensorScatterSub"), {rnd({6}, 40, dtype::int64, -9, 9), i32s({1, 1, 4}, {3, 1}), i64s({2, 5, -1}, {3})});
  // the sorted segment ops: empty segments (0 or, for SegmentProd, 1), a mean of integers,
  // rows of more than one element
  const auto data = rnd({6, 3}, 41);
  const auto ids = i32s({0, 0, 2, 2, 2, 5}, {6});
  for (const char* op : {"SegmentSum", "SegmentMean", "SegmentProd", "SegmentMax", "SegmentMin"}) {
    CAPTURE(op);
    differential(tf(op), {data, ids}, 1e-6, 1e-6);
    differential(tf(op), {rnd({5}, 42, dtype::int32, -20, 20), i64s({1, 1, 1, 3, 3}, {5})});
    differential(tf(op), {rnd({4, 2, 2}, 43, dtype::uint8, 0, 250), i64s({0, 1, 1, 1}, {4})});
    differential(tf(op), {tensor(dtype::f32, {0, 3}), i32s({}, {0})});
  }
  differential(tf("SegmentMean"), {rnd({300}, 44, dtype::int8, -100, 100), i32s(std::vector<std::int32_t>(300, 0), {300})});
}

TEST_CASE("cuda: TensorFlow DynamicStitch, DynamicPartition, ConjugateTranspose, CheckNumerics and InTopKV2 match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  // DynamicStitch: repeated indices (the later input, and the later position, win), a row no
  // index names (0), 2-D indices, rows of several elements
  for (const char* op : {"DynamicStitch", "ParallelDynamicStitch"}) {
    CAPTURE(op);
    differential(tf(op), {i32s({0, 4, 2}, {3}), i32s({2, 5, 5}, {3}), rnd({3, 2}, 70), rnd({3, 2}, 71)});
    differential(tf(op), {i32s({6, 1, 3, 0}, {2, 2}), rnd({2, 2, 3}, 72, dtype::int64, -9, 9)});
    differential(tf(op), {i32s({1}, {1}), i32s({}, {0}), rnd({1}, 73, dtype::f16), tensor(dtype::f16, {0})});
  }
  // DynamicPartition: an empty partition, 2-D partitions, rows of several elements
  const auto data = rnd({6, 2}, 74);
  differential(tf("DynamicPartition", {{"num_partitions", i64{3}}}, 3), {data, i32s({2, 0, 2, 2, 0, 0}, {6})});
  differential(tf("DynamicPartition", {{"num_partitions", i64{2}}}, 2), {rnd({2, 3, 2}, 75, dtype::uint8, 0, 200), i32s({1, 1, 0, 1, 1, 1}, {2, 3})});
  differential(tf("DynamicPartition", {{"num_partitions", i64{2}}}, 2), {tensor(dtype::f32, {0, 4}), i32s({}, {0})});
  differential(tf("ConjugateTranspose"), {rnd({2, 3, 4}, 76), i32s({2, 0, 1}, {3})});
  // CheckNumerics: every element finite, the input itself
  differential(tf("CheckNumerics", {{"message", std::string("m")}}), {rnd({3, 5}, 77)});
  differential(tf("CheckNumerics"), {rnd({4}, 78, dtype::f16)});
  differential(tf("CheckNumerics"), {tensor::from<double>({1e300, -1e300}, {2})});  // finite doubles past float's range
  // InTopKV2: ties (equal values are not larger), a k past the classes, out of range and
  // non-finite targets (false)
  const auto pr = tensor::from<float>({0.1f, 0.9f, 0.9f, 0.3f, 0.5f, 0.2f, std::numeric_limits<float>::quiet_NaN(), 0.0f, 1.0f, 2.0f, 3.0f, 4.0f},
                                      {3, 4});
  for (const i64 k : {0, 1, 2, 5})
    differential(tf("InTopKV2"), {pr, i32s({2, 0, 3}, {3}), tensor::scalar<std::int32_t>(static_cast<std::int32_t>(k))});
  differential(tf("InTopKV2"), {pr, i64s({4, 2, -1}, {3}), tensor::scalar<i64>(3)});
  // targets below the top: row 0's class 0 (three larger), row 2's class 1 (two larger)
  for (const i64 k : {1, 2, 3, 4})
    differential(tf("InTopKV2"), {pr, i32s({0, 1, 1}, {3}), tensor::scalar<std::int32_t>(static_cast<std::int32_t>(k))});
}

TEST_CASE("cuda: TensorFlow Conv2DBackpropInput / Filter and DepthwiseConv2dNativeBackpropInput / Filter match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  struct grad_case {
    const char* op;
    std::string padding;
    ints strides, dilations, pads, input;
  };
  // SAME with the odd pixel at the end, VALID with a row the forward never read (stride 2 over a
  // height of 8 with a 3-tall filter), dilations, explicit paddings; depthwise with a multiplier of 2
  const std::vector<grad_case> cases = {
      {"Conv2DBackpropInput", "SAME", {1, 2, 2, 1}, {1, 1, 1, 1}, {}, {2, 7, 6, 3}},
      {"Conv2DBackpropInput", "VALID", {1, 2, 2, 1}, {1, 1, 1, 1}, {}, {2, 8, 7, 3}},
      {"Conv2DBackpropInput", "SAME", {1, 1, 1, 1}, {1, 2, 2, 1}, {}, {1, 6, 6, 3}},
      {"Conv2DBackpropInput", "EXPLICIT", {1, 2, 1, 1}, {1, 1, 1, 1}, {0, 0, 1, 2, 0, 1, 0, 0}, {2, 7, 6, 3}},
      {"DepthwiseConv2dNativeBackpropInput", "SAME", {1, 2, 2, 1}, {1, 1, 1, 1}, {}, {2, 7, 6, 3}},
      {"DepthwiseConv2dNativeBackpropInput", "VALID", {1, 1, 1, 1}, {1, 1, 2, 1}, {}, {1, 6, 7, 3}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.op);
    CAPTURE(c.padding);
    const bool dw = std::string(c.op) != "Conv2DBackpropInput";
    gpass::attribute_map a{{"padding", c.padding}, {"strides", c.strides}, {"dilations", c.dilations}, {"data_format", std::string("NHWC")}};
    if (!c.pads.empty()) a["explicit_paddings"] = c.pads;
    const auto f = rnd(dw ? ints{3, 3, 3, 2} : ints{3, 2, 3, 4}, 80);
    // out_backprop of the forward op's output sizes (the forward op run on the CPU gives them)
    const auto fwd = run_cpu(tf(dw ? "DepthwiseConv2dNative" : "Conv2D", a), {rnd(c.input, 81), f}).at(0);
    const auto dy = rnd(fwd.sizes(), 82);
    std::vector<std::int32_t> sizes(c.input.begin(), c.input.end());
    differential(tf(c.op, a), {i32s(sizes, {4}), f, dy}, 1e-4, 1e-4);  // (cuDNN's algorithms add in other orders)
    // the filter gradient of the same convolution
    std::vector<std::int32_t> fsizes(f.sizes().begin(), f.sizes().end());
    differential(tf(dw ? "DepthwiseConv2dNativeBackpropFilter" : "Conv2DBackpropFilter", a), {rnd(c.input, 83), i32s(fsizes, {4}), dy}, 1e-4, 1e-4);
  }
  // the 3-D gradients (NDHWC): SAME with the odd plane at the end, VALID leaving planes unread, dilations
  for (const std::string padding : {"SAME", "VALID"}) {
    CAPTURE(padding);
    const gpass::attribute_map a3{{"padding", padding}, {"strides", ints{1, 2, 1, 2, 1}}, {"dilations", ints{1, 1, 2, 1, 1}}};
    const auto x3 = rnd({2, 6, 7, 5, 3}, 96);
    const auto f3 = rnd({3, 2, 2, 3, 4}, 97);
    const auto dy3 = rnd(run_cpu(tf("Conv3D", a3), {x3, f3}).at(0).sizes(), 98);
    differential(tf("Conv3DBackpropInputV2", a3), {i32s({2, 6, 7, 5, 3}, {5}), f3, dy3}, 1e-4, 1e-4);
    differential(tf("Conv3DBackpropFilterV2", a3), {x3, i32s({3, 2, 2, 3, 4}, {5}), dy3}, 1e-4, 1e-4);
  }
  // a filter gradient in f64, and one whose input has no images (zeros)
  const gpass::attribute_map same{{"padding", std::string("SAME")}, {"strides", ints{1, 1, 1, 1}}};
  const auto x64 = rnd({2, 5, 4, 3}, 84, dtype::f64);
  differential(tf("Conv2DBackpropFilter", same), {x64, i32s({3, 3, 3, 2}, {4}), rnd({2, 5, 4, 2}, 85, dtype::f64)}, 1e-10, 1e-10);
  differential(tf("DepthwiseConv2dNativeBackpropFilter", same), {x64, i32s({3, 3, 3, 2}, {4}), rnd({2, 5, 4, 6}, 86, dtype::f64)}, 1e-10, 1e-10);
  differential(tf("Conv2DBackpropFilter", same), {tensor(dtype::f32, {0, 5, 4, 3}), i32s({3, 3, 3, 2}, {4}), tensor(dtype::f32, {0, 5, 4, 2})});
}

TEST_CASE("cuda: TensorFlow Conv3D, MaxPool3D, AvgPool3D and the 3-D pools' gradients match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  // SAME with the odd plane at the end, VALID leaving planes unread, strides, dilations (Conv3D)
  for (const std::string padding : {"SAME", "VALID"}) {
    CAPTURE(padding);
    const auto x = rnd({2, 5, 6, 7, 3}, 90);
    const gpass::attribute_map conv{{"padding", padding}, {"strides", ints{1, 2, 1, 2, 1}}};
    const gpass::attribute_map dilated{{"padding", padding}, {"strides", ints{1, 1, 1, 1, 1}}, {"dilations", ints{1, 2, 1, 2, 1}}};
    differential(tf("Conv3D", conv), {x, rnd({3, 2, 3, 3, 4}, 91)}, 1e-4, 1e-4);
    differential(tf("Conv3D", dilated), {x, rnd({2, 3, 2, 3, 2}, 92)}, 1e-4, 1e-4);
    const gpass::attribute_map pool{{"padding", padding}, {"ksize", ints{1, 2, 3, 2, 1}}, {"strides", ints{1, 2, 2, 1, 1}}};
    differential(tf("MaxPool3D", pool), {x}, 0, 0);
    differential(tf("AvgPool3D", pool), {x}, 1e-5, 1e-6);
    differential(tf("MaxPool3D", pool), {rnd({1, 4, 4, 4, 2}, 93, dtype::f64)}, 0, 0);
    // their gradients: the 3-D max to every input within 1e-5 of the window's maximum (ties
    // from a coarse grid of values), the average over the valid positions, bit for bit
    const auto xt = rnd({2, 5, 6, 7, 3}, 94, dtype::f32, -2, 2);
    tensor coarse(dtype::f32, xt.sizes());
    for (i64 i = 0; i < xt.size(); ++i) coarse.data<float>()[i] = std::round(xt.data<float>()[i] * 2) / 2;
    const auto y = run_cpu(tf("MaxPool3D", pool), {coarse}).at(0);
    const auto dy = rnd(y.sizes(), 95);
    differential(tf("MaxPool3DGrad", pool), {coarse, y, dy}, 0, 0);
    differential(tf("AvgPool3DGrad", pool), {i32s({2, 5, 6, 7, 3}, {5}), dy}, 0, 0);
  }
}

TEST_CASE("cuda: TensorFlow MaxPoolGrad and AvgPoolGrad match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  // overlapping windows, SAME with the odd pixel at the end, VALID leaving rows unread, a
  // window larger than the stride both ways, a stride larger than the window (inputs no
  // window reads), f64; the sums are the CPU's in the CPU's order: equal bits
  const std::vector<pool_case> cases = {{"SAME", {1, 3, 3, 1}, {1, 2, 2, 1}, {2, 7, 6, 3}},
                                        {"VALID", {1, 2, 2, 1}, {1, 2, 2, 1}, {1, 5, 7, 2}},
                                        {"SAME", {1, 2, 3, 1}, {1, 1, 2, 1}, {2, 4, 5, 1}},
                                        {"VALID", {1, 3, 1, 1}, {1, 1, 1, 1}, {1, 6, 3, 4}},
                                        {"VALID", {1, 2, 1, 1}, {1, 3, 4, 1}, {1, 8, 9, 2}},
                                        {"SAME", {1, 3, 2, 1}, {1, 2, 1, 1}, {2, 5, 4, 3}, dtype::f64}};
  for (const auto& c : cases) {
    CAPTURE(c.padding);
    const gpass::attribute_map a{{"padding", c.padding}, {"ksize", c.ksize}, {"strides", c.strides}, {"data_format", std::string("NHWC")}};
    const auto x = rnd(c.input, 90, c.t);
    const auto y = run_cpu(tf("MaxPool", a), {x}).at(0);
    const auto dy = rnd(y.sizes(), 91, c.t);
    differential(tf("MaxPoolGrad", a), {x, y, dy}, 0, 0);
    std::vector<std::int32_t> sizes(c.input.begin(), c.input.end());
    differential(tf("AvgPoolGrad", a), {i32s(sizes, {4}), dy}, 0, 0);
  }
  // NaN inputs: a NaN first in its window keeps the gradient, a later one never takes it
  {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const gpass::attribute_map a{{"padding", std::string("VALID")}, {"ksize", ints{1, 2, 2, 1}}, {"strides", ints{1, 1, 1, 1}}};
    const auto x = tensor::from<float>({nan, 1, 2, 3, nan, 5, 6, 7, 8}, {1, 3, 3, 1});
    differential(tf("MaxPoolGrad", a), {x, run_cpu(tf("MaxPool", a), {x}).at(0), rnd({1, 2, 2, 1}, 93)}, 0, 0);
  }
  // ties: the first maximum of each window takes the gradient
  const gpass::attribute_map a{{"padding", std::string("VALID")}, {"ksize", ints{1, 2, 2, 1}}, {"strides", ints{1, 1, 1, 1}}};
  const auto x = tensor::from<float>({1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 3, 3, 1});
  differential(tf("MaxPoolGrad", a), {x, run_cpu(tf("MaxPool", a), {x}).at(0), rnd({1, 2, 2, 1}, 92)}, 0, 0);
}

TEST_CASE("cuda: TensorFlow MaxPoolWithArgmax matches the CPU kernel") {
  CHECK(serves("MaxPoolWithArgmax", {dtype::f32}));
  CHECK(serves("MaxPoolWithArgmax", {dtype::f64}));
  CHECK_FALSE(serves("MaxPoolWithArgmax", {dtype::int32}));
  GPASS_GPU_OR_CPU_SIDE();
  // windows overlapping, SAME with padding, VALID leaving cells unread; int64 and int32
  // indices, with and without the batch in them; f64; the maximum and its index bit for bit
  const std::vector<pool_case> cases = {{"SAME", {1, 3, 3, 1}, {1, 2, 2, 1}, {2, 7, 6, 3}},
                                        {"VALID", {1, 2, 2, 1}, {1, 2, 2, 1}, {3, 5, 7, 2}},
                                        {"SAME", {1, 2, 3, 1}, {1, 1, 2, 1}, {2, 4, 5, 1}, dtype::f64},
                                        {"VALID", {1, 2, 1, 1}, {1, 3, 4, 1}, {1, 8, 9, 2}}};
  for (const auto& c : cases)
    for (const dtype at : {dtype::int64, dtype::int32})
      for (const bool with_batch : {false, true}) {
        CAPTURE(c.padding);
        CAPTURE(at);
        CAPTURE(with_batch);
        const gpass::attribute_map a{{"padding", c.padding}, {"ksize", c.ksize}, {"strides", c.strides}, {"Targmax", at},
                                     {"include_batch_in_index", with_batch}};
        differential(tf("MaxPoolWithArgmax", a, 2), {rnd(c.input, 94, c.t)}, 0, 0);
      }
  // ties (the first maximum), NaNs (a NaN first in its window stays), infinities
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const gpass::attribute_map a{{"padding", std::string("VALID")}, {"ksize", ints{1, 2, 2, 1}}, {"strides", ints{1, 1, 1, 1}}};
  differential(tf("MaxPoolWithArgmax", a, 2), {tensor::from<float>({1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 3, 3, 1})}, 0, 0);
  differential(tf("MaxPoolWithArgmax", a, 2), {tensor::from<float>({nan, 1, 2, 3, nan, 5, -inf, 7, inf}, {1, 3, 3, 1})}, 0, 0);
  // no images: empty outputs
  differential(tf("MaxPoolWithArgmax", a, 2), {tensor(dtype::f32, {0, 3, 3, 2})}, 0, 0);
}

TEST_CASE("cuda: the TensorFlow kernels of tf_array.hpp fail as the CPU's do, naming the node") {
  GPASS_REQUIRE_GPU();
  auto fails = [](const gpass::exec::kernel_node& n, const std::vector<tensor>& in, const char* what) {
    CAPTURE(n.op);
    CHECK_THROWS_WITH_AS(run_cpu(n, in), doctest::Contains(what), gpass::error);
    CHECK_THROWS_WITH_AS(run_gpu(n, in), doctest::Contains(what), gpass::error);
    try {
      run_gpu(n, in);
    } catch (const gpass::error& e) {
      CHECK(std::string(e.what()).find(n.op) != std::string::npos);
    }
  };
  fails(tf("DepthToSpace", {{"block_size", i64{2}}}), {rnd({1, 2, 2, 6}, 1)}, "not a multiple of block_size^2");
  fails(tf("SpaceToDepth", {{"block_size", i64{2}}}), {rnd({1, 3, 2, 1}, 2)}, "must be multiples of block_size");
  fails(tf("SpaceToBatchND"), {rnd({1, 3, 3, 1}, 3), i32s({2, 2}, {2}), i32s({0, 0, 0, 0}, {2, 2})}, "is not a multiple of the block size");
  fails(tf("BatchToSpaceND"), {rnd({3, 2, 2, 1}, 4), i32s({2}, {1}), i32s({0, 0}, {1, 2})}, "is not a multiple of the block count");
  fails(tf("BatchToSpaceND"), {rnd({4, 2, 2, 1}, 4), i32s({2, 2}, {2}), i32s({3, 2, 0, 0}, {2, 2})}, "crops are larger");
  fails(tf("Roll"), {rnd({3}, 5), i32s({1, 1}, {2}), i32s({0}, {1})}, "shift and axis must have the same shape");
  fails(tf("ReverseSequence", {{"seq_dim", i64{1}}}), {rnd({2, 3}, 6), i32s({4, 1}, {2})}, "outside [0, 3]");
  fails(tf("MatrixBandPart"), {rnd({2, 3}, 7), tensor::scalar<i64>(3), tensor::scalar<i64>(0)}, "num_lower must be at most");
  fails(tf("Range"), {tensor::scalar(0.0f), tensor::scalar(1.0f), tensor::scalar(0.0f)}, "requires delta != 0");
  fails(tf("Range"), {tensor::scalar<i64>(5), tensor::scalar<i64>(1), tensor::scalar<i64>(1)}, "requires start <= limit");
  fails(tf("InvertPermutation"), {i32s({0, 0}, {2})}, "is not a permutation");
  fails(tf("BroadcastArgs"), {i32s({2}, {1}), i32s({3}, {1})}, "incompatible shapes");
  fails(tf("BatchMatMul"), {rnd({2, 3, 4}, 8), rnd({1, 4, 5}, 9)}, "batch dimensions differ");
  fails(tf("BatchMatMulV2", {{"adj_x", true}}), {rnd({2, 3, 4}, 8), rnd({2, 4, 5}, 9)}, "inner dimensions differ");
  fails(tf("SegmentSum"), {rnd({3}, 10), i32s({0, 2, 1}, {3})}, "segment ids are not increasing");
  fails(tf("SegmentMax"), {rnd({2}, 11), i64s({-1, 0}, {2})}, "must be non-negative");
  fails(tf("SegmentMax"), {rnd({3}, 11), i64s({-1, 0}, {2})}, "must be non-negative");  // (before the shape, as the CPU)
  fails(tf("OneHot"), {i32s({1}, {1}), tensor::scalar<std::int32_t>(-1), tensor::scalar(1.0f), tensor::scalar(0.0f)}, "depth must be non-negative");
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  fails(tf("CheckNumerics", {{"message", std::string("check x")}}), {tensor::from<float>({1, inf, nan, 2}, {4})}, "check x : Tensor had Inf values");
  fails(tf("CheckNumerics", {{"message", std::string("check x")}}), {tensor::from<float>({1, nan, -inf, 2}, {2, 2})}, "check x : Tensor had NaN values");
  fails(tf("DynamicStitch"), {i32s({0, -1}, {2}), rnd({2}, 12)}, "a negative index");
  const gpass::attribute_map pool{{"padding", std::string("VALID")}, {"ksize", ints{1, 2, 2, 1}}, {"strides", ints{1, 1, 1, 1}}};
  fails(tf("AvgPoolGrad", pool), {i32s({1, 3, 3, 1}, {4}), rnd({1, 3, 2, 1}, 16)}, "grad has sizes");
  fails(tf("AvgPoolGrad", pool), {i32s({1, 3, 3}, {3}), rnd({1, 2, 2, 1}, 17)}, "orig_input_shape must have 4 values");
  fails(tf("MaxPoolGrad", pool), {rnd({1, 3, 3, 1}, 18), rnd({1, 2, 2, 1}, 19), rnd({1, 2, 2, 1}, 20, dtype::f64)}, "different element types");
  fails(tf("Conv2DBackpropInput", {{"padding", std::string("VALID")}, {"strides", ints{1, 1, 1, 1}}}),
        {i32s({1, 4, 4, 2}, {4}), rnd({3, 3, 2, 5}, 14), rnd({1, 3, 2, 5}, 15)}, "out_backprop has sizes");
  fails(tf("DynamicPartition", {{"num_partitions", i64{2}}}, 2), {rnd({3}, 13), i32s({0, 2, 1}, {3})}, "is not in [0, 2)");
  fails(tf("Conv2DBackpropFilter", {{"padding", std::string("VALID")}, {"strides", ints{1, 1, 1, 1}}}),
        {rnd({1, 4, 4, 2}, 21), i32s({3, 3, 2, 5}, {4}), rnd({1, 3, 2, 5}, 22)}, "out_backprop has sizes");
  fails(tf("DepthwiseConv2dNativeBackpropFilter", {{"padding", std::string("VALID")}, {"strides", ints{1, 1, 1, 1}}}),
        {rnd({1, 4, 4, 2}, 23), i32s({3, 3, 2}, {3}), rnd({1, 2, 2, 2}, 24)}, "filter_sizes must have 4 values");
  const gpass::attribute_map wide{{"padding", std::string("VALID")}, {"ksize", ints{1, 3, 3, 1}}, {"strides", ints{1, 1, 1, 1}}};
  fails(tf("MaxPoolWithArgmax", wide, 2), {rnd({1, 2, 4, 1}, 25)}, "is larger than the padded input");
  fails(tf("MaxPoolWithArgmax", wide, 2), {rnd({2, 4, 1}, 26)}, "the input must have rank 4");
}

}  // namespace gpass_test_cuda_tf_array
