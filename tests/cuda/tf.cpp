// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of TensorFlow ops (domain "tf"): which nodes they serve (no GPU needed), and
// on a GPU each op against the Eigen CPU kernel (TensorFlow's semantics, checked against
// TensorFlow by the tf tests) on ordinary and special values, and the frontend fixtures of
// tests/data/tf through a session on cuda_devices() giving TensorFlow's values.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

#if GPASS_CUDA_TESTS_TF
#include <gpass/io/tensorflow.hpp>
#include <gpass/passes/tf.hpp>
#include <gpass/session.hpp>
#include <gpass/session/cuda_devices.hpp>

#include "../tf/fixture_support.hpp"
#endif

namespace gpass_test_cuda_tf {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::check_close;
using gpass_test_cuda::run_gpu;
using i64 = std::int64_t;

gpass::exec::kernel_node tf(std::string op, gpass::attribute_map attrs = {}, std::size_t outputs = 1) {
  return node(std::move(op), 1, std::move(attrs), outputs, "tf");
}

/// f32 values with NaN, infinities, signed zeros, halves and ordinary numbers.
tensor specials() {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  return tensor::from<float>({nan, inf, -inf, 0.0f, -0.0f, 0.5f, -0.5f, 1.5f, -2.5f, 2.5f, 3.0f, -7.25f, 1e-3f, 100.0f, -0.75f, 6.5f},
                             {4, 4});
}

tensor i64s(std::vector<i64> v, std::vector<i64> sizes) { return tensor::from<i64>(std::move(v), std::move(sizes)); }

/// `v` as a 1-D tensor of integer type `t`.
tensor of_type(dtype t, const std::vector<i64>& v) {
  tensor r(t, {static_cast<i64>(v.size())});
  gpass::visit_dtype(t, [&]<class T>() {
    if constexpr (std::is_integral_v<T>)
      for (std::size_t i = 0; i < v.size(); ++i) r.data<T>()[i] = static_cast<T>(v[i]);
  });
  return r;
}

/// Whether the CUDA registry serves a TF node of `op` with these input types and attributes.
bool serves(const char* op, std::vector<dtype> inputs, const gpass::attribute_map& attrs = {}) {
  return gpass_test_cuda::serves_in("tf", op, std::move(inputs), attrs);
}

}  // namespace

TEST_CASE("cuda: TensorFlow ops the GPU serves, and those left to the CPU") {
  CHECK(serves("AddV2", {dtype::f32, dtype::f32}));
  CHECK(serves("AddV2", {dtype::int32, dtype::int32}));
  CHECK(serves("RealDiv", {dtype::f16, dtype::f16}));
  // integer division fails on zero in TensorFlow: such nodes stay on the CPU
  for (const char* op : {"Div", "FloorDiv", "FloorMod", "TruncateMod", "Mod", "Reciprocal"}) {
    CAPTURE(op);
    CHECK(serves(op, {dtype::f32, dtype::f32}));
    CHECK_FALSE(serves(op, {dtype::int32, dtype::int32}));
  }
  CHECK(serves("BatchMatMulV2", {dtype::f32, dtype::f32}, {{"adj_x", false}, {"adj_y", false}}));
  CHECK(serves("BatchMatMulV2", {dtype::f32, dtype::f32}, {{"adj_x", true}}));  // (transposed operands)
  CHECK_FALSE(serves("BatchMatMulV2", {dtype::int32, dtype::int32}));
  CHECK(serves("ArgMax", {dtype::f32, dtype::int32}, {{"output_type", dtype::int64}}));
  CHECK(serves("ArgMax", {dtype::f32, dtype::int32}, {{"output_type", dtype::int32}}));  // (cast from the int64 indices)
  CHECK(serves("All", {dtype::bool_, dtype::int32}));
  CHECK_FALSE(serves("Sum", {dtype::bool_, dtype::int32}));
  CHECK(serves("GatherV2", {dtype::f32, dtype::int32, dtype::int32}, {{"batch_dims", i64{0}}}));
  CHECK_FALSE(serves("GatherV2", {dtype::f32, dtype::int32, dtype::int32}, {{"batch_dims", i64{1}}}));
  CHECK(serves("Gather", {dtype::f32, dtype::int64}));
  CHECK(serves("Where", {dtype::bool_}));
  CHECK(serves("Concat", {dtype::int32, dtype::f32, dtype::f32}));
  CHECK(serves("TopKV2", {dtype::f32, dtype::int32}));
  CHECK(serves("UnsortedSegmentMax", {dtype::bf16, dtype::int64, dtype::int32}));
  CHECK_FALSE(serves("UnsortedSegmentSum", {dtype::bool_, dtype::int64, dtype::int32}));
  CHECK(serves("ScatterNd", {dtype::int32, dtype::f32, dtype::int32}));
  CHECK(serves("TensorScatterAdd", {dtype::f32, dtype::int64, dtype::f32}));
  CHECK(serves("TensorScatterUpdate", {dtype::bool_, dtype::int64, dtype::bool_}));
  CHECK_FALSE(serves("TensorScatterMax", {dtype::bool_, dtype::int64, dtype::bool_}));
  CHECK(serves("TensorScatterSub", {dtype::f32, dtype::int64, dtype::f32}));
  CHECK_FALSE(serves("SegmentSum", {dtype::bool_, dtype::int64}));
  CHECK_FALSE(serves("Gather", {dtype::string, dtype::int64}));
  CHECK(serves("MirrorPad", {dtype::f32, dtype::int32}, {{"mode", std::string("REFLECT")}}));
  CHECK_FALSE(serves("MirrorPad", {dtype::f32, dtype::int32}, {{"mode", std::string("SYMMETRIC")}}));
  CHECK_FALSE(serves("Unique", {dtype::string}));  // strings stay on the CPU
  CHECK(serves("Conv2D", {dtype::f32, dtype::f32}, {{"data_format", std::string("NHWC")}}));
  CHECK(serves("DepthwiseConv2dNative", {dtype::f64, dtype::f64}, {{"data_format", std::string("NCHW")}}));
  CHECK(serves("MaxPool", {dtype::f32}));
  CHECK_FALSE(serves("AvgPool", {dtype::f32}, {{"data_format", std::string("NCHW_VECT_C")}}));
  CHECK_FALSE(serves("Conv2D", {dtype::int32, dtype::int32}));
  CHECK(serves("ReluGrad", {dtype::f32, dtype::f32}));
  CHECK(serves("SplitV", {dtype::int64, dtype::int32, dtype::int32}));
  CHECK(serves("FusedBatchNormV3", {dtype::f32}, {{"is_training", false}}));
  CHECK(serves("FusedBatchNormV3", {dtype::f32}, {{"is_training", true}}));  // (batch statistics: tf_batch_norm.hpp)
  CHECK_FALSE(serves("FusedBatchNormV3", {dtype::f32}, {{"is_training", true}, {"data_format", std::string("NCHW")}}));
  CHECK_FALSE(serves("Unpack", {dtype::string}));
  CHECK(serves("BiasAddGrad", {dtype::bf16}));
  CHECK_FALSE(serves("BiasAddGrad", {dtype::int32}));
}

TEST_CASE("cuda: TensorFlow element-wise ops match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const tensor s = specials();
  const auto x = random_tensor(dtype::f32, {2, 3, 4}, -3, 3, 21);
  const auto pos = random_tensor(dtype::f32, {2, 3, 4}, 1.05, 4, 22);
  const auto row = random_tensor(dtype::f32, {4}, -2, 2, 23);
  const auto unit = random_tensor(dtype::f32, {2, 3, 4}, -0.95, 0.95, 24);
  for (const char* op : {"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "FloorDiv", "FloorMod", "TruncateMod", "Mod", "Maximum",
                         "Minimum", "Pow", "SquaredDifference", "Atan2", "DivNoNan", "MulNoNan", "Less", "LessEqual", "Greater",
                         "GreaterEqual", "Equal", "NotEqual"}) {
    CAPTURE(op);
    differential(tf(op), {x, row}, 2e-6, 1e-6);
    differential(tf(op), {s, s.reshaped({4, 4})}, 2e-6, 1e-6);
    differential(tf(op), {s, tensor::scalar(0.0f)}, 2e-6, 1e-6);  // by zero: inf, NaN, 0 (NoNan)
    differential(tf(op), {tensor::scalar(-1.5f), s}, 2e-6, 1e-6);
  }
  for (const char* op : {"Neg", "Abs", "Square", "Exp", "Expm1", "Log1p", "Tanh", "Sin", "Cos", "Atan", "Sinh", "Cosh", "Erf", "Asinh",
                         "Floor", "Ceil", "Rint", "Round", "Sign", "Reciprocal", "Inv", "Sigmoid", "Relu", "Relu6", "Elu", "Selu",
                         "Softplus", "Softsign", "IsNan", "IsInf", "IsFinite", "ZerosLike", "OnesLike"}) {
    CAPTURE(op);
    differential(tf(op), {x}, 2e-6, 1e-6);
    differential(tf(op), {s}, 2e-6, 1e-6);
  }
  for (const char* op : {"Sqrt", "Rsqrt", "Log", "Acosh"}) differential(tf(op), {pos}, 2e-6, 1e-6);
  for (const char* op : {"Asin", "Acos", "Atanh", "Tan"}) differential(tf(op), {unit}, 2e-6, 1e-6);
  differential(tf("LeakyRelu"), {s});
  differential(tf("LeakyRelu", {{"alpha", 0.01}}), {x});
  differential(tf("AddN"), {x, x, random_tensor(dtype::f32, {2, 3, 4}, -1, 1, 25)});
  differential(tf("BiasAdd"), {x, row});
  differential(tf("BiasAdd", {{"data_format", std::string("NCHW")}}), {x, random_tensor(dtype::f32, {3}, -1, 1, 26)});
  differential(tf("BiasAddV1"), {x, row});
  differential(tf("ClipByValue"), {s, tensor::scalar(-1.0f), tensor::scalar(2.0f)});
  differential(tf("ClipByValue"), {x, random_tensor(dtype::f32, {2, 3, 4}, -2, 0, 27), tensor::from<float>({1.0f})});
  const auto c = random_tensor(dtype::bool_, {2, 3, 4}, 0, 1, 28);
  differential(tf("Select"), {c, x, pos});
  differential(tf("Select"), {tensor::from<bool>({true, false}), x, pos});  // a vector picks rows
  differential(tf("Select"), {tensor::scalar(false), x, pos});
  differential(tf("SelectV2"), {random_tensor(dtype::bool_, {3, 1}, 0, 1, 29), x, row});
  differential(tf("LogicalAnd"), {c, tensor::scalar(true)});
  differential(tf("LogicalOr"), {c, random_tensor(dtype::bool_, {4}, 0, 1, 30)});
  differential(tf("LogicalNot"), {c});
  // Cast: rounding to bfloat16 and half, truncation when asked, to integers and bool
  differential(tf("Cast", {{"DstT", dtype::bf16}}), {x});
  differential(tf("Cast", {{"DstT", dtype::bf16}, {"Truncate", true}}), {x});
  differential(tf("Cast", {{"DstT", dtype::bf16}, {"Truncate", true}}), {s});
  differential(tf("Cast", {{"DstT", dtype::f16}, {"SrcT", dtype::f32}}), {x});
  differential(tf("Cast", {{"DstT", dtype::int32}}), {x});
  differential(tf("Cast", {{"DstT", dtype::bool_}}), {x});
  // 16-bit floats: one rounding per step where the CPU takes it
  const auto h = random_tensor(dtype::f16, {5, 7}, -3, 3, 31);
  const auto hy = random_tensor(dtype::f16, {7}, 0.25, 3, 32);
  for (const char* op : {"AddV2", "Mul", "RealDiv", "FloorDiv", "FloorMod", "Maximum", "SquaredDifference"}) differential(tf(op), {h, hy}, 1e-3, 1e-3);
  for (const char* op : {"Relu6", "Tanh", "Sigmoid", "Elu"}) differential(tf(op), {h}, 1e-3, 1e-3);
  const auto b = random_tensor(dtype::bf16, {3, 8}, -3, 3, 33);
  differential(tf("FloorDiv"), {b, random_tensor(dtype::bf16, {1}, 0.3, 0.31, 34)}, 1e-2, 1e-2);
}

TEST_CASE("cuda: TensorFlow integer element-wise ops match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto a = random_tensor(dtype::int32, {4, 6}, -100, 100, 41);
  const auto b = random_tensor(dtype::int32, {6}, -40, 40, 42);
  for (const char* op : {"Add", "AddV2", "Sub", "Mul", "Maximum", "Minimum", "SquaredDifference", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
                         "Less", "GreaterEqual", "Equal", "NotEqual"}) {
    CAPTURE(op);
    differential(tf(op), {a, b});
  }
  for (const char* op : {"Neg", "Abs", "Square", "Sign", "Relu", "Relu6", "Round", "Invert", "ZerosLike", "OnesLike"}) {
    CAPTURE(op);
    differential(tf(op), {a});
  }
  // shifts: amounts below 0 and past the width clamp; signed left shifts wrap
  for (dtype t : {dtype::int8, dtype::int16, dtype::int32, dtype::int64, dtype::uint8, dtype::uint32}) {
    CAPTURE(t);
    const bool is_unsigned = t == dtype::uint8 || t == dtype::uint32;
    const auto v = random_tensor(t, {2, 40}, is_unsigned ? 0 : -120, 120, 43);
    const auto amount = of_type(t, {is_unsigned ? 3 : -3, -1, 0, 1, 2, 5, 7, 8, 15, 16, 31, 32, 63, 64, 70, 3, 4, 6, 9, 12, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55,
                                    0, 0, 0, 0, 1, 1, 1, 1, 2, 2});
    differential(tf("LeftShift"), {v, amount});
    differential(tf("RightShift"), {v, amount});
  }
  // wrapping: INT64_MIN - 1, INT32 products
  differential(tf("Sub"), {i64s({std::numeric_limits<i64>::min(), 5}, {2}), i64s({1, -3}, {2})});
  differential(tf("Mul"), {tensor::from<std::int32_t>({1 << 20, -7}), tensor::from<std::int32_t>({1 << 13, 3})});
  differential(tf("AddN"), {a, a, a});
  differential(tf("BiasAdd"), {a, b});
  differential(tf("ClipByValue"), {a, tensor::scalar<std::int32_t>(-10), tensor::scalar<std::int32_t>(10)});
  differential(tf("Cast", {{"DstT", dtype::f32}}), {a});
}

TEST_CASE("cuda: TensorFlow views, products, reductions and softmax match the CPU kernels") {
  GPASS_REQUIRE_GPU();
  const auto x = random_tensor(dtype::f32, {2, 3, 4}, -3, 3, 51);
  // views
  differential(tf("Identity"), {x});
  differential(tf("Reshape"), {x, i64s({4, -1}, {2})});
  differential(tf("Reshape"), {random_tensor(dtype::f32, {0, 3}, -1, 1, 52), i64s({3, 0, 5}, {3})});  // 0 is a size
  differential(tf("ExpandDims"), {x, tensor::scalar<std::int32_t>(-1)});
  differential(tf("ExpandDims"), {x, tensor::scalar<std::int32_t>(1)});
  const auto ones = random_tensor(dtype::f32, {1, 3, 1, 2}, -1, 1, 53);
  differential(tf("Squeeze"), {ones});
  differential(tf("Squeeze", {{"squeeze_dims", std::vector<i64>{-2}}}), {ones});
  differential(tf("Transpose"), {x, tensor::from<std::int32_t>({2, 0, 1})});
  // products
  const auto a = random_tensor(dtype::f32, {5, 7}, -1, 1, 54);
  const auto bt = random_tensor(dtype::f32, {3, 7}, -1, 1, 55);
  differential(tf("MatMul", {{"transpose_b", true}}), {a, bt}, 1e-5, 1e-5);
  differential(tf("MatMul", {{"transpose_a", true}}), {random_tensor(dtype::f32, {7, 5}, -1, 1, 56), random_tensor(dtype::f32, {7, 2}, -1, 1, 57)},
               1e-5, 1e-5);
  differential(tf("BatchMatMulV2"), {random_tensor(dtype::f32, {2, 1, 3, 4}, -1, 1, 58), random_tensor(dtype::f32, {5, 4, 2}, -1, 1, 59)},
               1e-5, 1e-5);
  // reductions: negative and repeated indices, keep_dims, a scalar index, none, a scalar input
  for (const char* op : {"Sum", "Mean", "Max", "Min", "Prod", "EuclideanNorm"}) {
    CAPTURE(op);
    differential(tf(op), {x, tensor::from<std::int32_t>({-1, 0, 2})}, 1e-5, 1e-5);
    differential(tf(op, {{"keep_dims", true}}), {x, tensor::from<std::int32_t>({1, -2})}, 1e-5, 1e-5);
    differential(tf(op), {x, tensor::scalar<std::int32_t>(1)}, 1e-5, 1e-5);
    differential(tf(op), {x, tensor::from<i64>(std::vector<i64>{}, {0})}, 1e-5, 1e-5);
    differential(tf(op), {tensor::scalar(2.5f), tensor::from<std::int32_t>({0})}, 1e-5, 1e-5);
  }
  differential(tf("Sum"), {random_tensor(dtype::int32, {3, 5}, -9, 9, 60), tensor::from<std::int32_t>({0})});
  differential(tf("Mean"), {random_tensor(dtype::int64, {3, 5}, -9, 9, 61), tensor::from<std::int32_t>({1})});
  const auto bools = random_tensor(dtype::bool_, {3, 4}, 0, 1, 62);
  differential(tf("All"), {bools, tensor::from<std::int32_t>({1})});
  differential(tf("Any", {{"keep_dims", true}}), {bools, tensor::from<std::int32_t>({0, -2})});
  differential(tf("ArgMax"), {x, tensor::scalar<std::int32_t>(-1)});
  differential(tf("ArgMin", {{"output_type", dtype::int64}}), {x, tensor::scalar<i64>(1)});
  differential(tf("ArgMax", {{"output_type", dtype::int32}}), {x, tensor::scalar<std::int32_t>(2)});
  differential(tf("ArgMin", {{"output_type", dtype::int32}}), {x, tensor::scalar<i64>(0)});
  // TopKV2 / TopK: values and indices (int32 by default), equal values in index order
  const auto ties = tensor::from<float>({1, 3, 3, 2, 5, 5, 5, 0}, {2, 4});
  differential(tf("TopKV2", {}, 2), {ties, tensor::scalar<std::int32_t>(3)});
  differential(tf("TopKV2", {{"index_type", dtype::int64}}, 2), {x, tensor::scalar<std::int32_t>(2)});
  differential(tf("TopK", {{"k", i64{4}}}, 2), {x});
  differential(tf("Cumsum", {{"exclusive", true}}), {x, tensor::scalar<std::int32_t>(2)});
  differential(tf("Cumprod", {{"reverse", true}}), {x, tensor::scalar<std::int32_t>(0)}, 1e-5, 1e-5);
  differential(tf("Softmax"), {x}, 1e-5, 1e-6);
  differential(tf("LogSoftmax"), {specials()}, 1e-5, 1e-6);
  // gradients of a dense network: activations (features at 0 and 6 exactly), BiasAddGrad
  const auto grads = random_tensor(dtype::f32, {4, 4}, -2, 2, 63);
  const auto feats = tensor::from<float>({0.0f, 6.0f, -0.0f, 5.5f, 6.5f, -1.0f, 0.25f, 3.0f, -6.0f, 1e-4f, -1e-4f, 7.0f, 2.0f, 0.0f, 6.0f, -3.0f}, {4, 4});
  const auto ys = random_tensor(dtype::f32, {4, 4}, -1, 1, 64);
  for (const char* op : {"ReluGrad", "Relu6Grad"}) differential(tf(op), {grads, feats});
  for (const char* op : {"TanhGrad", "SigmoidGrad"}) {
    differential(tf(op), {ys, grads}, 1e-5, 1e-6);
    differential(tf(op), {random_tensor(dtype::f16, {3, 5}, -1, 1, 65), random_tensor(dtype::f16, {3, 5}, -2, 2, 66)}, 1e-3, 1e-3);
  }
  CHECK_THROWS_WITH(run_gpu(tf("ReluGrad"), {grads, random_tensor(dtype::f32, {4, 1}, -1, 1, 67)}), doctest::Contains("must have the same shape"));
  const auto back = random_tensor(dtype::f32, {2, 3, 4, 5}, -2, 2, 68);
  differential(tf("BiasAddGrad"), {back}, 1e-5, 1e-5);
  differential(tf("BiasAddGrad", {{"data_format", std::string("NCHW")}}), {back}, 1e-5, 1e-5);
  differential(tf("BiasAddGrad"), {random_tensor(dtype::f64, {7, 3}, -2, 2, 69)}, 1e-12, 1e-12);
}

TEST_CASE("cuda: TensorFlow shape and data-movement ops match the CPU kernels") {
  GPASS_REQUIRE_GPU();
  const auto x = random_tensor(dtype::f32, {2, 3, 4}, -3, 3, 81);
  const auto y = random_tensor(dtype::f32, {2, 3, 1}, -3, 3, 82);
  differential(tf("Shape"), {x});
  differential(tf("Shape", {{"out_type", dtype::int64}}), {x});
  differential(tf("Size"), {x});
  differential(tf("Rank"), {x});
  differential(tf("ConcatV2"), {x, y, x, tensor::scalar<std::int32_t>(-1)});
  differential(tf("ConcatV2"), {x, x, tensor::scalar<i64>(0)});
  differential(tf("Concat"), {tensor::scalar<std::int32_t>(1), x, random_tensor(dtype::f32, {2, 1, 4}, -1, 1, 90), x});
  differential(tf("Pack", {{"axis", i64{1}}}), {x, x, random_tensor(dtype::f32, {2, 3, 4}, -1, 1, 83)});
  differential(tf("Pack", {{"axis", i64{-1}}}), {tensor::from<std::int32_t>({1, 2}), tensor::from<std::int32_t>({3, 4})});
  differential(tf("Slice"), {x, tensor::from<std::int32_t>({1, 0, 1}), tensor::from<std::int32_t>({-1, 2, 3})});
  // StridedSlice: masks, a negative stride, an ellipsis with a new axis, a shrunk axis
  const auto sl = [](i64 b, i64 e, i64 el, i64 na, i64 sh) {
    return tf("StridedSlice", {{"begin_mask", b}, {"end_mask", e}, {"ellipsis_mask", el}, {"new_axis_mask", na}, {"shrink_axis_mask", sh}});
  };
  differential(sl(0, 0, 0, 0, 0), {x, tensor::from<std::int32_t>({0, 1, 0}), tensor::from<std::int32_t>({2, 3, 4}), tensor::from<std::int32_t>({1, 1, 2})});
  differential(sl(1, 1, 0, 0, 2), {x, tensor::from<std::int32_t>({0, -1, 3}), tensor::from<std::int32_t>({0, 0, -5}), tensor::from<std::int32_t>({1, 1, -1})});
  differential(sl(0, 0, 1, 2, 0), {x, tensor::from<std::int32_t>({0, 0, 1}), tensor::from<std::int32_t>({0, 0, 3}), tensor::from<std::int32_t>({1, 1, 1})});
  differential(tf("Tile"), {x, tensor::from<std::int32_t>({2, 1, 3})});
  differential(tf("BroadcastTo"), {y, tensor::from<std::int32_t>({5, 2, 3, 4})});
  differential(tf("Fill"), {tensor::from<std::int32_t>({2, 3}), tensor::scalar(1.5f)});
  differential(tf("Fill"), {tensor::from<i64>({0, 4}), tensor::scalar<std::int32_t>(7)});
  differential(tf("GatherV2"), {x, tensor::from<std::int32_t>({2, 0, 2, 1}, {2, 2}), tensor::scalar<std::int32_t>(1)});
  differential(tf("GatherV2"), {x, tensor::from<i64>({3, 0}), tensor::scalar<i64>(-1)});
  differential(tf("Gather"), {x, tensor::from<std::int32_t>({1, 0, 1}, {3, 1})});
  differential(tf("Where"), {tensor::from<bool>({true, false, true, true, false, true}, {2, 3})});
  differential(tf("Where"), {random_tensor(dtype::int32, {3, 4, 5}, -1, 2, 84)});
  differential(tf("Where"), {tensor::from<float>({0.0f, 0.0f})});  // none: [0, 1]
  // GatherNd, ScatterNd (duplicates add up), TensorScatter* (through ONNX's GatherND / ScatterND)
  differential(tf("GatherNd"), {x, tensor::from<std::int32_t>({1, 2, 0, 0, 1, 1}, {3, 2})});
  differential(tf("GatherNd"), {x, tensor::from<i64>({1, 0, 3, 0, 2, 1}, {2, 3})});
  const auto rows = random_tensor(dtype::f32, {3, 4}, -2, 2, 85);
  differential(tf("ScatterNd"), {tensor::from<std::int32_t>({0, 2, 0}, {3, 1}), rows, tensor::from<std::int32_t>({4, 4})});
  const auto base = random_tensor(dtype::f32, {4, 3}, -2, 2, 86);
  const auto upd = random_tensor(dtype::f32, {2, 3}, -2, 2, 87);
  differential(tf("TensorScatterUpdate"), {base, tensor::from<i64>({1, 3}, {2, 1}), upd});
  for (const char* op : {"TensorScatterAdd", "TensorScatterMax", "TensorScatterMin"})
    differential(tf(op), {base, tensor::from<i64>({2, 2}, {2, 1}), upd}, 1e-6, 1e-6);  // one row twice
  differential(tf("TensorScatterAdd"), {random_tensor(dtype::int32, {3, 2}, -5, 5, 88), tensor::from<i64>({0, 1, 2, 1}, {2, 2}),
                                        tensor::from<std::int32_t>({7, -7})});
  // UnsortedSegment*: repeated ids, a negative one (dropped), an empty segment (the identity)
  const auto seg_data = random_tensor(dtype::f32, {5, 3}, -2, 2, 91);
  const auto seg_ids = tensor::from<std::int32_t>({2, 0, -1, 2, 0});
  for (const char* op : {"UnsortedSegmentSum", "UnsortedSegmentProd", "UnsortedSegmentMax", "UnsortedSegmentMin"}) {
    CAPTURE(op);
    differential(tf(op), {seg_data, seg_ids, tensor::scalar<std::int32_t>(4)}, 1e-6, 1e-6);
    differential(tf(op), {random_tensor(dtype::int32, {2, 3, 2}, -9, 9, 92), tensor::from<i64>({1, 1, 0, 1, -5, 0}, {2, 3}),
                          tensor::scalar<i64>(3)});
    differential(tf(op), {random_tensor(dtype::f16, {4}, -2, 2, 93), tensor::from<std::int32_t>({0, 0, 1, 0}),
                          tensor::scalar<std::int32_t>(3)}, 1e-3, 1e-3);
  }
  differential(tf("Gather"), {tensor::from<i64>({5, 6, 7}), tensor::from<i64>({2, 2, 0})});
  const auto p = tensor::from<std::int32_t>({1, 0, 0, 2, 2, 1}, {3, 2});
  differential(tf("Pad"), {x, p});
  differential(tf("PadV2"), {x, p, tensor::scalar(-9.0f)});
  differential(tf("MirrorPad", {{"mode", std::string("REFLECT")}}), {x, p});
  // Split, SplitV (a -1, an empty part), Unpack, ReverseV2, IdentityN, EnsureShape, ShapeN
  differential(tf("Split", {{"num_split", i64{2}}}, 2), {tensor::scalar<std::int32_t>(-1), x});
  differential(tf("Split", {}, 3), {tensor::scalar<i64>(1), random_tensor(dtype::int32, {2, 6}, -9, 9, 85)});
  differential(tf("SplitV", {}, 3), {x, tensor::from<std::int32_t>({1, -1, 1}), tensor::scalar<std::int32_t>(2)});
  differential(tf("SplitV", {}, 2), {random_tensor(dtype::f16, {2, 3}, -1, 1, 86), tensor::from<i64>({0, 3}), tensor::scalar<i64>(1)});
  differential(tf("Unpack", {{"num", i64{3}}, {"axis", i64{1}}}, 3), {x});
  differential(tf("Unpack", {{"axis", i64{-1}}}, 4), {x});
  differential(tf("ReverseV2"), {x, tensor::from<std::int32_t>({0, -1})});
  differential(tf("ReverseV2"), {x, tensor::from<i64>(std::vector<i64>{}, {0})});
  differential(tf("ReverseV2"), {random_tensor(dtype::f32, {3, 0, 2}, -1, 1, 87), tensor::from<std::int32_t>({1, 2})});
  differential(tf("IdentityN", {}, 2), {x, y});
  differential(tf("EnsureShape", {{"shape", gpass::shape::of({2, 3, 4})}}), {x});
  differential(tf("ShapeN", {{"out_type", dtype::int64}}, 2), {x, y});
  CHECK_THROWS_WITH(run_gpu(tf("EnsureShape", {{"shape", gpass::shape::of({2, 3, 5})}}), {x}), doctest::Contains("not compatible with expected shape"));
  CHECK_THROWS_WITH(run_gpu(tf("Split", {}, 3), {tensor::scalar<std::int32_t>(2), x}), doctest::Contains("cannot be split into 3 equal parts"));
  CHECK_THROWS_WITH(run_gpu(tf("SplitV", {}, 2), {x, tensor::from<std::int32_t>({-1, -1}), tensor::scalar<std::int32_t>(2)}),
                    doctest::Contains("more than one -1"));
  CHECK_THROWS_WITH(run_gpu(tf("Unpack", {{"num", i64{2}}, {"axis", i64{1}}}, 2), {x}), doctest::Contains("the node unpacks 2"));
  CHECK_THROWS_WITH(run_gpu(tf("ReverseV2"), {x, tensor::from<std::int32_t>({1, -2})}), doctest::Contains("is repeated"));
  CHECK_THROWS_WITH(run_gpu(tf("Pad"), {x, tensor::from<std::int32_t>({1, 0, 0, 2}, {2, 2})}), doctest::Contains("paddings must have sizes [3, 2]"));
  CHECK_THROWS_WITH(run_gpu(tf("Slice"), {x, tensor::from<std::int32_t>({1, 0, 1}), tensor::from<std::int32_t>({2, 2, 3})}),
                    doctest::Contains("to fit dimension size 2"));
  CHECK_THROWS_WITH(run_gpu(tf("ConcatV2"), {x, random_tensor(dtype::f32, {2, 4, 4}, -1, 1, 84), tensor::scalar<std::int32_t>(2)}),
                    doctest::Contains("differ off the axis"));
}

namespace {
/// `x` transposed by `perm` (the CPU's Transpose kernel).
tensor transposed(const tensor& x, std::vector<std::int32_t> perm) {
  return gpass_test_cuda::run_cpu(tf("Transpose"), {x, tensor::from<std::int32_t>(std::move(perm))})[0];
}
}  // namespace

TEST_CASE("cuda: TensorFlow convolutions and pools match the CPU kernels, in NHWC and NCHW") {
  GPASS_REQUIRE_GPU();
  const auto x = random_tensor(dtype::f32, {2, 7, 6, 3}, -2, 2, 91);
  const auto f = random_tensor(dtype::f32, {3, 2, 3, 4}, -1, 1, 92);
  const auto dw = random_tensor(dtype::f32, {3, 3, 3, 2}, -1, 1, 93);
  auto conv = [](const char* op, std::string padding, std::vector<i64> strides, std::vector<i64> dilations = {1, 1, 1, 1},
                 std::vector<i64> explicit_pads = {}, std::string format = "NHWC") {
    gpass::attribute_map a{{"padding", std::move(padding)}, {"strides", std::move(strides)}, {"dilations", std::move(dilations)},
                           {"data_format", std::move(format)}};
    if (!explicit_pads.empty()) a["explicit_paddings"] = std::move(explicit_pads);
    return tf(op, std::move(a));
  };
  struct conv_case {
    const char* op;
    std::string padding;
    std::vector<i64> strides, dilations, pads;
  };
  const std::vector<conv_case> cases = {
      {"Conv2D", "SAME", {1, 1, 1, 1}, {1, 1, 1, 1}, {}},
      {"Conv2D", "SAME", {1, 2, 2, 1}, {1, 1, 1, 1}, {}},  // odd padding: the extra pixel at the end
      {"Conv2D", "VALID", {1, 1, 2, 1}, {1, 2, 1, 1}, {}},
      {"Conv2D", "EXPLICIT", {1, 2, 1, 1}, {1, 1, 1, 1}, {0, 0, 1, 2, 0, 1, 0, 0}},
      {"DepthwiseConv2dNative", "SAME", {1, 2, 2, 1}, {1, 1, 1, 1}, {}},
      {"DepthwiseConv2dNative", "VALID", {1, 1, 1, 1}, {1, 1, 2, 1}, {}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.op);
    CAPTURE(c.padding);
    const tensor& w = std::string(c.op) == "Conv2D" ? f : dw;
    const auto n = conv(c.op, c.padding, c.strides, c.dilations, c.pads);
    differential(n, {x, w}, 1e-5, 1e-5);
    // NCHW on the GPU against the CPU's NHWC (the CPU kernels take NHWC only)
    const tensor want = transposed(gpass_test_cuda::run_cpu(n, {x, w})[0], {0, 3, 1, 2});
    auto nchw = [](const std::vector<i64>& v) { return std::vector<i64>{v[0], v[3], v[1], v[2]}; };
    std::vector<i64> pads_nchw;
    if (!c.pads.empty()) pads_nchw = {c.pads[0], c.pads[1], c.pads[6], c.pads[7], c.pads[2], c.pads[3], c.pads[4], c.pads[5]};
    const auto got = run_gpu(conv(c.op, c.padding, nchw(c.strides), nchw(c.dilations), pads_nchw, "NCHW"), {transposed(x, {0, 3, 1, 2}), w});
    check_close(got[0], want, 1e-5, 1e-5);
  }
  differential(conv("Conv2D", "SAME", {1, 2, 1, 1}), {random_tensor(dtype::f64, {1, 5, 4, 2}, -1, 1, 94), random_tensor(dtype::f64, {2, 3, 2, 3}, -1, 1, 95)},
               1e-12, 1e-12);
  // grouped Conv2D (input channels a multiple of the filter's depth; the CPU kernel takes none):
  // against ONNX's Conv with `group` on the CPU
  {
    const auto xg = random_tensor(dtype::f32, {1, 5, 5, 4}, -1, 1, 96);
    const auto fg = random_tensor(dtype::f32, {3, 3, 2, 6}, -1, 1, 97);
    const auto got = run_gpu(conv("Conv2D", "SAME", {1, 1, 1, 1}), {xg, fg});
    gpass::attribute_map a{{"group", i64{2}}, {"pads", std::vector<i64>{1, 1, 1, 1}}};
    const auto want = gpass_test_cuda::run_cpu(node("Conv", 11, a), {transposed(xg, {0, 3, 1, 2}), transposed(fg, {3, 2, 0, 1})});
    check_close(got[0], transposed(want[0], {0, 2, 3, 1}), 1e-5, 1e-5);
  }
  // pools, NHWC and NCHW
  for (const char* op : {"MaxPool", "AvgPool"})
    for (const auto& [padding, k, s] : {std::tuple{std::string("SAME"), i64{3}, i64{2}}, std::tuple{std::string("VALID"), i64{2}, i64{2}},
                                        std::tuple{std::string("SAME"), i64{2}, i64{1}}}) {
      CAPTURE(op);
      CAPTURE(padding);
      const auto n = tf(op, {{"padding", padding}, {"ksize", std::vector<i64>{1, k, k, 1}}, {"strides", std::vector<i64>{1, s, s, 1}}});
      differential(n, {x}, 1e-5, 1e-6);
      const auto m = tf(op, {{"padding", padding}, {"ksize", std::vector<i64>{1, 1, k, k}}, {"strides", std::vector<i64>{1, 1, s, s}},
                             {"data_format", std::string("NCHW")}});
      differential(m, {transposed(x, {0, 3, 1, 2})}, 1e-5, 1e-6);
    }
  // inference batch norm (all six outputs of V3), NHWC and NCHW
  {
    const auto scale = random_tensor(dtype::f32, {3}, 0.5, 2, 101), offset = random_tensor(dtype::f32, {3}, -1, 1, 102);
    const auto mean = random_tensor(dtype::f32, {3}, -1, 1, 103), var = random_tensor(dtype::f32, {3}, 0.1, 2, 104);
    const auto bn = tf("FusedBatchNormV3", {{"epsilon", 0.001}, {"is_training", false}}, 6);
    differential(bn, {x, scale, offset, mean, var}, 1e-6, 1e-6);
    const tensor want = transposed(gpass_test_cuda::run_cpu(bn, {x, scale, offset, mean, var})[0], {0, 3, 1, 2});
    const auto got = run_gpu(tf("FusedBatchNorm", {{"epsilon", 0.001}, {"is_training", false}, {"data_format", std::string("NCHW")}}, 5),
                             {transposed(x, {0, 3, 1, 2}), scale, offset, mean, var});
    check_close(got[0], want, 1e-6, 1e-6);
    CHECK_THROWS_WITH(run_gpu(bn, {x, scale, offset, random_tensor(dtype::f32, {4}, -1, 1, 105), var}), doctest::Contains("must have 3 elements"));
  }
  // empty batches, and the errors of TensorFlow's rules
  differential(conv("Conv2D", "SAME", {1, 1, 1, 1}), {random_tensor(dtype::f32, {0, 4, 4, 3}, -1, 1, 98), f});
  CHECK_THROWS_WITH(run_gpu(conv("Conv2D", "SAME", {1, 1, 1, 1}), {random_tensor(dtype::f32, {1, 4, 4, 5}, -1, 1, 99), f}),
                    doctest::Contains("not a multiple of the filter's input depth"));
  CHECK_THROWS_WITH(run_gpu(conv("Conv2D", "VALID", {1, 1, 1, 1}), {random_tensor(dtype::f32, {1, 2, 2, 3}, -1, 1, 100), f}),
                    doctest::Contains("larger than the padded input"));
  CHECK_THROWS_WITH(run_gpu(conv("Conv2D", "SAME", {2, 1, 1, 1}), {x, f}), doctest::Contains("must be 1 in the batch and channel dims"));
}

TEST_CASE("cuda: TensorFlow kernels fail as the CPU's do, naming the node") {
  GPASS_REQUIRE_GPU();
  const auto x = random_tensor(dtype::f32, {2, 3, 4}, -3, 3, 71);
  CHECK_THROWS_WITH(run_gpu(tf("BiasAdd"), {x, random_tensor(dtype::f32, {3}, -1, 1, 72)}), doctest::Contains("bias has 3 elements"));
  CHECK_THROWS_WITH(run_gpu(tf("Squeeze", {{"squeeze_dims", std::vector<i64>{0}}}), {x}), doctest::Contains("cannot squeeze dimension 0"));
  CHECK_THROWS_WITH(run_gpu(tf("Sum"), {x, tensor::from<std::int32_t>({3})}), doctest::Contains("reduction index 3 is out of range"));
  CHECK_THROWS_WITH(run_gpu(tf("ArgMax"), {random_tensor(dtype::f32, {2, 0}, 0, 1, 73), tensor::scalar<std::int32_t>(1)}),
                    doctest::Contains("empty dimension"));
  CHECK_THROWS_WITH(run_gpu(tf("Select"), {tensor::from<bool>({true, false, true}), x, x}), doctest::Contains("condition of sizes"));
  CHECK_THROWS_WITH(run_gpu(tf("Cast", {{"DstT", dtype::f16}, {"SrcT", dtype::f64}}), {x}), doctest::Contains("SrcT is"));
  CHECK_THROWS_WITH(run_gpu(tf("Reshape"), {x, i64s({5, -1}, {2})}), doctest::Contains("cannot reshape"));
  // TF's indices are never negative (ONNX's may be): constant ones are checked as on the CPU
  for (const char* op : {"Gather", "GatherV2"}) {
    auto n = tf(op);
    const auto idx = tensor::from<std::int32_t>({1, -1});
    n.constant_inputs = {std::nullopt, idx};
    std::vector<tensor> in{x, idx};
    if (std::string(op) == "GatherV2") in.push_back(tensor::scalar<std::int32_t>(0));
    CHECK_THROWS_WITH(run_gpu(n, in), doctest::Contains("indices[1] = -1 is not in [0, 2)"));
    CHECK_THROWS_WITH(gpass_test_cuda::run_cpu(n, in), doctest::Contains("indices[1] = -1 is not in [0, 2)"));
  }
  {
    auto n = tf("GatherNd");
    const auto idx = tensor::from<std::int32_t>({1, 0, -1, 2}, {2, 2});
    n.constant_inputs = {std::nullopt, idx};
    for (auto* run : {&gpass_test_cuda::run_gpu, &gpass_test_cuda::run_cpu})
      CHECK_THROWS_WITH((*run)(n, {x, idx}), doctest::Contains("indices[-1, 2] does not index into [2,3,4]"));
    auto s = tf("ScatterNd");
    const auto sidx = tensor::from<std::int32_t>({0, 5}, {2, 1});
    s.constant_inputs = {sidx};
    const std::vector<tensor> in{sidx, random_tensor(dtype::f32, {2, 4}, -1, 1, 89), tensor::from<std::int32_t>({3, 4})};
    for (auto* run : {&gpass_test_cuda::run_gpu, &gpass_test_cuda::run_cpu})
      CHECK_THROWS_WITH((*run)(s, in), doctest::Contains("indices[5] does not index into [3,4]"));
  }
  {
    auto n = tf("UnsortedSegmentSum");
    const auto ids = tensor::from<std::int32_t>({0, 3});
    n.constant_inputs = {std::nullopt, ids};
    const std::vector<tensor> in{random_tensor(dtype::f32, {2, 2}, -1, 1, 94), ids, tensor::scalar<std::int32_t>(3)};
    for (auto* run : {&gpass_test_cuda::run_gpu, &gpass_test_cuda::run_cpu})
      CHECK_THROWS_WITH((*run)(n, in), doctest::Contains("segment id 3 is out of range [0, 3)"));
  }
}

#if GPASS_CUDA_TESTS_TF
// Every GraphDef fixture of tests/data/tf and tests/data/tf2 through a session on cuda_devices():
// targets each in their own run, then the fetches; TensorFlow's values within a tolerance that allows for the GPU's
// summation orders (cuBLAS, reductions), and most nodes on the GPU.
TEST_CASE("cuda: the TensorFlow fixtures on cuda_devices give TensorFlow's values") {
  GPASS_REQUIRE_GPU();
  namespace tfx = gpass_test::tf;
  using G = gpass::graph<>;
  int fixtures = 0;
  std::map<std::string, int> total;
  std::vector<std::pair<std::string, std::filesystem::path>> names;  // TF 1 and the TF 2 GraphDefs (not the SavedModels)
  for (const auto& root : {tfx::data_dir, tfx::tf2_data_dir})
    for (const auto& e : std::filesystem::directory_iterator(root))
      if (e.is_directory() && std::filesystem::exists(e.path() / "fixture.txt") && std::filesystem::exists(e.path() / "graph.pb"))
        names.emplace_back(e.path().filename().string(), root);
  for (const auto& [name, root] : names) {
    const auto f = tfx::read_fixture(name, root);
    INFO(f.name);
    std::vector<std::pair<std::string, gpass::exec::value>> feeds;
    for (const auto& [t, file] : f.feeds) feeds.emplace_back(t, gpass::read_tf_tensor_file(file));
    std::vector<std::string> fetches;
    for (const auto& [t, file] : f.fetches) fetches.push_back(t);
    try {
      gpass::session_options<G> o;
      o.devices = gpass::cuda_devices<G>();
      o.prepare = [](G& g) {
        gpass::pass_context ctx;
        gpass::tf_frontend(g, ctx);
      };
      gpass::session<G> s(gpass::read_tf_graph_file<G>(f.dir / "graph.pb"), o);
      for (const auto& t : f.targets) (void)s.run(feeds, {}, {t});
      const auto got = s.run(feeds, fetches);
      std::map<std::string, int> per_device;
      for (const auto& [n, d] : s.last_placement()) ++per_device[gpass::parse_device_name(d).short_name()];
      std::string placed;
      for (const auto& [d, c] : per_device) {
        placed += " " + d + "=" + std::to_string(c);
        total[d] += c;
      }
      MESSAGE(f.name << ": placement" << placed);
      CHECK(got.size() == f.fetches.size());
      for (std::size_t k = 0; k < std::min(got.size(), f.fetches.size()); ++k) {
        INFO(f.fetches[k].first);
        const tensor want = gpass::read_tf_tensor_file(f.fetches[k].second);
        if (!got[k].is_tensor()) {
          FAIL_CHECK("not a tensor");
          continue;
        }
        if (got[k].tensor().element_type() != want.element_type() || got[k].tensor().sizes() != want.sizes()) {
          FAIL_CHECK("got " << got[k].tensor().shape().to_string() << " of " << gpass::to_string(got[k].tensor().element_type()));
          continue;
        }
        if (want.element_type() == dtype::f32 || want.element_type() == dtype::f64) check_close(got[k].tensor(), want, 1e-4, 1e-4);
        else CHECK(tfx::max_abs_diff(got[k].tensor(), want) == 0);
      }
    } catch (const std::exception& e) {  // the other fixtures still run
      FAIL_CHECK(f.name << ": " << std::string(e.what()));
    }
    ++fixtures;
  }
  std::string placed;
  for (const auto& [d, c] : total) placed += " " + d + "=" + std::to_string(c);
  MESSAGE(fixtures << " fixtures, nodes placed (last runs):" << placed);
  CHECK(fixtures == 43);
  CHECK(total["gpu:0"] > 0);
}
#endif

}  // namespace gpass_test_cuda_tf
