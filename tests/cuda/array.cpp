// SPDX-License-Identifier: Apache-2.0
// The CUDA shape and data-movement kernels: every generated source compiles to PTX for sm_80
// and sm_90 (no GPU needed), and on a GPU each op matches the Eigen CPU kernel.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_array {

namespace {

using namespace gpass_test_cuda::prelude;


// values in [lo, hi), from 0 for the unsigned types
tensor rnd(dtype t, ints sizes, double lo, double hi, std::uint64_t seed) {
  const bool u = t == dtype::uint8 || t == dtype::uint16 || t == dtype::uint32 || t == dtype::uint64;
  return random_tensor(t, std::move(sizes), u ? 0.0 : lo, u ? hi - lo : hi, seed);
}

const dtype all_types[] = {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::int8, dtype::int16, dtype::int32,
                           dtype::int64, dtype::uint8, dtype::uint16, dtype::uint32, dtype::uint64, dtype::bool_};

}  // namespace

TEST_CASE("cuda: array kernels are registered for the ops they implement") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_array(r);
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Shape", "Size", "Transpose", "Concat", "Split", "Slice",
                         "Gather", "GatherElements", "Expand", "Tile", "Pad", "ConstantOfShape", "Range", "DepthToSpace",
                         "SpaceToDepth", "Trilu", "ScatterND", "GatherND", "ScatterElements", "Scatter", "OneHot"})
    CHECK_MESSAGE(r.has("", op), op);
}

TEST_CASE("cuda: shape ops match the CPU kernels, and Reshape is a view") {
  GPASS_REQUIRE_GPU();
  const auto x = random_tensor(dtype::f32, {2, 3, 1, 4}, -2, 2, 1);
  differential(node("Reshape", 21), {x, I({0, -1})});
  differential(node("Reshape", 21), {x, I({-1, 3, 4})});
  differential(node("Reshape", 21, {{"allowzero", i64{1}}}), {x, I({24})});
  differential(node("Flatten", 21), {x});
  differential(node("Flatten", 21, {{"axis", i64{-1}}}), {x});
  differential(node("Flatten", 21, {{"axis", i64{0}}}), {x});
  differential(node("Squeeze", 21), {x});
  differential(node("Squeeze", 21), {x, I({2})});
  differential(node("Squeeze", 11, {{"axes", ints{-2}}}), {x});
  differential(node("Unsqueeze", 21), {x, I({0, -1})});
  differential(node("Unsqueeze", 11, {{"axes", ints{1}}}), {x});
  differential(node("Shape", 21), {x});
  differential(node("Shape", 21, {{"start", i64{1}}, {"end", i64{-1}}}), {x});
  differential(node("Shape", 21, {{"start", i64{-10}}}), {x});
  differential(node("Size", 21), {x});
  // the output shares the input's buffer
  auto& g = *gpass_test_cuda::gpu();
  std::vector<ex::basic_value<ex::cuda_tensor>> in;
  in.emplace_back(g.upload(x, g.default_stream()));
  in.emplace_back(g.upload(I({6, 4}), g.default_stream()));
  const void* before = in[0].tensor().data();
  auto n = node("Reshape", 21);
  n.input_types.resize(2);
  auto out = ex::run_kernel(g, g.kernels(), n, std::move(in));
  CHECK(out[0].tensor().data() == before);
  CHECK(out[0].tensor().sizes() == ints{6, 4});
}

TEST_CASE("cuda: Transpose, Concat, Split and Slice match the CPU kernels on every element type") {
  GPASS_GPU_OR_CPU_SIDE();
  for (dtype t : all_types) {
    INFO("type " << gpass::to_string(t));
    const auto x = rnd(t, {2, 3, 4, 5}, -50, 50, 2);
    differential(node("Transpose", 21), {x});
    differential(node("Transpose", 21, {{"perm", ints{0, 2, 3, 1}}}), {x});
    differential(node("Transpose", 21, {{"perm", ints{1, 0, 2, 3}}}), {x});
    const auto a = rnd(t, {2, 1, 4, 5}, -50, 50, 3);
    differential(node("Concat", 21, {{"axis", i64{1}}}), {x, a, x});
    differential(node("Concat", 21, {{"axis", i64{-1}}}), {x, x});
    differential(node("Concat", 21, {{"axis", i64{0}}}), {x, x});
    differential(node("Split", 18, {{"axis", i64{2}}}, 2), {x});
    differential(node("Split", 18, {{"axis", i64{-1}}}, 3), {x, I({1, 3, 1})});
    differential(node("Split", 18, {{"axis", i64{3}}, {"num_outputs", i64{2}}}, 2), {x});
    differential(node("Split", 11, {{"axis", i64{1}}, {"split", ints{2, 1}}}, 2), {x});
    differential(node("Slice", 21), {x, I({1, 0}), I({3, 100}), I({2, 3})});
    differential(node("Slice", 21), {x, I({-1, 4}), I({-100, 0}), I({1, 3}), I({-1, -2})});
    differential(node("Slice", 21), {x, I({0, 1}), I({2, -1}), I({0, 2}), I({1, 2})});
    differential(node("Slice", 9, {{"starts", ints{1}}, {"ends", ints{2}}, {"axes", ints{1}}}), {x});
    differential(node("Slice", 21), {x, I32({0}), I32({0}), I32({1})});  // empty result
  }
  // a large transpose (tiled shapes of a real model)
  const auto big = random_tensor(dtype::f16, {8, 128, 12, 64}, -1, 1, 4);
  differential(node("Transpose", 21, {{"perm", ints{0, 2, 1, 3}}}), {big});
  // rows contiguous on both sides move in units of up to 16 bytes where sizes, strides and
  // offsets allow (a run of 8 floats: 16; of 6 halves: 4; of 3 bytes: 1); a Slice that starts
  // mid-row (an unaligned offset) and one with negative steps fall back to smaller units
  for (dtype t : {dtype::f32, dtype::f16, dtype::uint8, dtype::f64}) {
    INFO("type " << gpass::to_string(t));
    const auto r8 = rnd(t, {3, 5, 4, 8}, -50, 50, 7), r6 = rnd(t, {3, 5, 4, 6}, -50, 50, 8), r3 = rnd(t, {2, 3, 5, 3}, -50, 50, 9);
    for (const auto& x : {r8, r6, r3}) {
      differential(node("Transpose", 21, {{"perm", ints{0, 2, 1, 3}}}), {x});
      differential(node("Transpose", 21, {{"perm", ints{2, 1, 0, 3}}}), {x});
      differential(node("Concat", 21, {{"axis", i64{-1}}}), {x, x});
      differential(node("Slice", 21), {x, I({1}), I({100}), I({3})});
      differential(node("Slice", 21), {x, I({1, 2}), I({3, 4}), I({1, 3})});
      differential(node("Slice", 21), {x, I({-1, 3}), I({-100, 0}), I({1, 2}), I({-1, -1})});
    }
  }
}

TEST_CASE("cuda: Gather, GatherElements and ScatterND match the CPU kernels") {
  GPASS_REQUIRE_GPU();
  for (dtype t : {dtype::f32, dtype::f16, dtype::int64, dtype::uint8, dtype::bool_}) {
    INFO("type " << gpass::to_string(t));
    const auto x = rnd(t, {5, 4, 3}, -50, 50, 5);
    differential(node("Gather", 21), {x, I({0, -1, 3, 3})});
    differential(node("Gather", 21, {{"axis", i64{1}}}), {x, I32({3, 0, -4}).reshaped({3, 1})});
    differential(node("Gather", 21, {{"axis", i64{-1}}}), {x, tensor::scalar<i64>(2)});
    differential(node("GatherElements", 21, {{"axis", i64{1}}}), {x, I({0, 3, -1, 2, 1, 1}).reshaped({2, 1, 3})});
    differential(node("GatherElements", 21, {{"axis", i64{0}}}), {x, I({4, 0, -5, 2}).reshaped({1, 2, 2})});
    const auto up = rnd(t, {2, 3}, -50, 50, 6);
    differential(node("ScatterND", 21), {x, I({1, 2, 4, -1}).reshaped({2, 2}), up});
    differential(node("ScatterND", 21), {x, I({3, 0}).reshaped({2, 1}), rnd(t, {2, 4, 3}, -5, 5, 7)});
  }
  // an embedding lookup
  const auto table = random_tensor(dtype::f32, {1000, 256}, -1, 1, 8);
  const auto ids = random_tensor(dtype::int64, {4, 33}, 0, 1000, 9);
  differential(node("Gather", 21), {table, ids});
  // indices the plan knows are checked on the host, like the CPU kernel
  auto n = node("Gather", 21);
  n.constant_inputs = {std::nullopt, I({7})};
  CHECK_THROWS_AS(gpass_test_cuda::run_gpu(n, {random_tensor(dtype::f32, {5, 2}), I({7})}), gpass::error);
}

TEST_CASE("cuda: GatherND, ScatterElements and OneHot match the CPU kernels") {
  GPASS_REQUIRE_GPU();
  for (dtype t : {dtype::f32, dtype::f16, dtype::int64, dtype::int8, dtype::bool_}) {
    INFO("type " << gpass::to_string(t));
    const auto x = rnd(t, {5, 4, 3}, -50, 50, 11);
    differential(node("GatherND", 13), {x, I({1, 2, 4, -1, 0, 3}).reshaped({3, 2})});
    differential(node("GatherND", 13), {x, I32({4, -2}).reshaped({2, 1})});
    differential(node("GatherND", 13), {x, I({1, 2, 0, 4, 3, 2}).reshaped({2, 3})});
    differential(node("GatherND", 13, {{"batch_dims", i64{1}}}), {x, I({3, 0, 1, 2, 0, 1, 1, 1, 2, 2}).reshaped({5, 1, 2})});
    differential(node("GatherND", 13, {{"batch_dims", i64{2}}}), {x, I({0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1}).reshaped({5, 4, 1})});
    const auto up = rnd(t, {2, 1, 3}, -50, 50, 12);
    differential(node("ScatterElements", 18, {{"axis", i64{1}}}), {x, I({0, 3, -1, 2, 1, 1}).reshaped({2, 1, 3}), up});
    differential(node("ScatterElements", 18, {{"axis", i64{0}}}), {x, I32({4, 0, -5, 2, 3, 1}).reshaped({2, 1, 3}), up});
    differential(node("Scatter", 9, {{"axis", i64{2}}}), {x, I({2, 0, 1, 1, 0, 2}).reshaped({2, 1, 3}), up});
    const tensor vals = rnd(t, {2}, -50, 50, 13);
    for (i64 axis : {-1, 0, 1, 2}) {
      INFO("OneHot axis " << axis);
      differential(node("OneHot", 11, {{"axis", axis}}), {I({0, 3, -1, 7, 2, 9}).reshaped({2, 3}), I({5}), vals});
    }
    differential(node("OneHot", 11), {I32({1, 0, 4}), tensor::scalar<float>(4.0f), vals});
  }
  // a batched gather of rows (a detection head's top boxes, say)
  differential(node("GatherND", 13, {{"batch_dims", i64{1}}}),
               {random_tensor(dtype::f32, {4, 100, 64}, -1, 1, 14), random_tensor(dtype::int64, {4, 30, 1}, 0, 100, 15)});
  // constant out-of-range indices fail on the host, as on the CPU
  auto n = node("GatherND", 13);
  n.constant_inputs = {std::nullopt, I({9, 0}).reshaped({1, 2})};
  CHECK_THROWS_AS(gpass_test_cuda::run_gpu(n, {random_tensor(dtype::f32, {5, 2}), I({9, 0}).reshaped({1, 2})}), gpass::error);
  // every reduction is served here
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_array(r);
  for (const char* red : {"none", "add", "mul", "max", "min"}) {
    gpass::attribute_map a{{"reduction", std::string(red)}};
    CHECK(r.serves(ex::kernel_query{.op = "ScatterElements", .attrs = &a}));
    CHECK(r.serves(ex::kernel_query{.op = "ScatterND", .attrs = &a}));
  }
  // OneHot takes numeric indices of any type (strings and bool run on the CPU)
  CHECK(r.serves(ex::kernel_query{.op = "OneHot", .inputs = {dtype::f32, dtype::int64, dtype::f32}}));
  CHECK(r.serves(ex::kernel_query{.op = "OneHot", .inputs = {dtype::int32, dtype::int64, dtype::f32}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.op = "OneHot", .inputs = {dtype::bool_, dtype::int64, dtype::f32}}));
  for (dtype t : {dtype::f32, dtype::f16, dtype::f64, dtype::uint8, dtype::int16}) {
    INFO("OneHot indices of type " << gpass::to_string(t));
    const bool u = t == dtype::uint8;
    differential(node("OneHot", 11), {random_tensor(t, {3, 4}, u ? 0 : -6, 6, 16), I({5}), rnd(dtype::f32, {2}, -5, 5, 17)});
  }
}

TEST_CASE("cuda: ScatterND and ScatterElements with a reduction match the CPU kernels (repeated indices included)") {
  GPASS_GPU_OR_CPU_SIDE();
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::int8, dtype::int16, dtype::int32, dtype::int64, dtype::uint8,
                  dtype::uint16, dtype::bool_}) {
    for (const char* red : {"add", "mul", "max", "min"}) {
      INFO("type " << gpass::to_string(t) << ", reduction " << red);
      const gpass::attribute_map a{{"reduction", std::string(red)}};
      // float sums and products depend on the order the updates land in
      const double tol = t == dtype::f16 || t == dtype::bf16 ? 2e-2 : 1e-5;
      // small values: products of a few stay exact in every type
      const auto x = rnd(t, {5, 4, 3}, -3, 3, 21);
      // repeated tuples and indices: several updates land on one element
      differential(node("ScatterND", 18, a), {x, I({1, 2, 1, 2, 4, -1, 1, 2}).reshaped({4, 2}), rnd(t, {4, 3}, -3, 3, 22)}, tol, tol);
      differential(node("ScatterND", 18, a), {x, I({3, 0, 3}).reshaped({3, 1}), rnd(t, {3, 4, 3}, -3, 3, 23)}, tol, tol);
      auto ae = a;
      ae["axis"] = i64{1};
      differential(node("ScatterElements", 18, ae), {x, I({0, 0, -1, 2, 0, 1, 3, 3, 3}).reshaped({3, 1, 3}), rnd(t, {3, 1, 3}, -3, 3, 24)}, tol, tol);
    }
  }
  // many updates to few elements: the compare-and-swap loops under contention
  const auto x = random_tensor(dtype::f32, {4}, -1, 1, 25);
  const auto idx = random_tensor(dtype::int64, {20000, 1}, 0, 4, 26);
  for (const char* red : {"max", "min"})
    differential(node("ScatterND", 18, {{"reduction", std::string(red)}}), {x, idx, random_tensor(dtype::f32, {20000}, -1, 1, 27)}, 0, 0);
  const auto ones = random_tensor(dtype::int32, {20000}, 1, 2, 28);
  differential(node("ScatterND", 18, {{"reduction", std::string("add")}}), {random_tensor(dtype::int32, {4}, 0, 1, 29), idx, ones}, 0, 0);
  differential(node("ScatterND", 18, {{"reduction", std::string("add")}}),
               {random_tensor(dtype::int16, {4}, 0, 1, 29), idx, random_tensor(dtype::int16, {20000}, 1, 2, 30)}, 0, 0);
}

TEST_CASE("cuda: EyeLike, Compress and ReverseSequence match the CPU kernels") {
  GPASS_REQUIRE_GPU();
  for (dtype t : {dtype::f32, dtype::f16, dtype::int64, dtype::int8, dtype::bool_}) {
    INFO("type " << gpass::to_string(t));
    for (i64 k : {-5, -2, 0, 1, 3, 7}) {
      differential(node("EyeLike", 9, {{"k", k}}), {rnd(t, {4, 6}, -5, 5, 31)});
      differential(node("EyeLike", 9, {{"k", k}}), {rnd(t, {6, 3}, -5, 5, 32)});
    }
    differential(node("EyeLike", 9, {{"dtype", i64{6}}}), {rnd(t, {3, 3}, -5, 5, 33)});  // int32
    const auto x = rnd(t, {4, 5, 3}, -50, 50, 34);
    const tensor c = tensor::from<bool>({true, false, true, true});
    differential(node("Compress", 11, {{"axis", i64{0}}}), {x, c});
    differential(node("Compress", 11, {{"axis", i64{1}}}), {x, tensor::from<bool>({false, true, false, true, true})});
    differential(node("Compress", 11, {{"axis", i64{-1}}}), {x, tensor::from<bool>({true, false})});
    differential(node("Compress", 11), {x, tensor::from<bool>({false, true, true, false, false, false, true})});
    differential(node("Compress", 11, {{"axis", i64{0}}}), {x, tensor::from<bool>({false, false})});
    differential(node("ReverseSequence", 10), {rnd(t, {5, 4, 3}, -50, 50, 35), I({5, 0, 1, 3})});
    differential(node("ReverseSequence", 10, {{"batch_axis", i64{0}}, {"time_axis", i64{1}}}), {rnd(t, {3, 6, 2}, -50, 50, 36), I({6, 2, 4})});
    differential(node("ReverseSequence", 10, {{"batch_axis", i64{2}}, {"time_axis", i64{0}}}), {rnd(t, {4, 3, 2}, -50, 50, 37), I({4, 1})});
  }
  auto n = node("Compress", 11, {{"axis", i64{0}}});
  CHECK_THROWS_AS(gpass_test_cuda::run_gpu(n, {rnd(dtype::f32, {2, 2}, -1, 1, 38), tensor::from<bool>({false, false, true})}), gpass::error);
}

TEST_CASE("cuda: Expand, Tile, Pad, Trilu, DepthToSpace and SpaceToDepth match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  for (dtype t : {dtype::f32, dtype::bf16, dtype::int32, dtype::int8, dtype::f64}) {
    INFO("type " << gpass::to_string(t));
    const auto x = rnd(t, {3, 1, 4}, -50, 50, 10);
    differential(node("Expand", 21), {x, I({2, 3, 5, 4})});
    differential(node("Expand", 21), {x, I({1, 1})});
    differential(node("Tile", 21), {x, I({2, 3, 1})});
    differential(node("Tile", 21), {x, I({1, 1, 0})});
    for (const char* mode : {"constant", "reflect", "edge", "wrap"}) {
      INFO("mode " << mode);
      const auto y = rnd(t, {2, 3, 4}, -50, 50, 11);
      differential(node("Pad", 21, {{"mode", std::string(mode)}}), {y, I({0, 1, 2, 1, 2, 3})});
      differential(node("Pad", 21, {{"mode", std::string(mode)}}), {y, I({0, -1, 1, 0, 0, -2})});
      differential(node("Pad", 21, {{"mode", std::string(mode)}}), {y, I({2, 1, 1, 2}), tensor{}, I({-1, 1})});
    }
    const auto y = rnd(t, {2, 3, 4}, -50, 50, 12);
    differential(node("Pad", 21), {y, I({1, 1, 1, 1, 1, 1}), rnd(t, {}, 1, 9, 13)});
    differential(node("Trilu", 21), {rnd(t, {2, 4, 5}, -9, 9, 14)});
    differential(node("Trilu", 21, {{"upper", i64{0}}}), {rnd(t, {2, 4, 5}, -9, 9, 14), tensor::scalar<i64>(-1)});
    differential(node("Trilu", 21), {rnd(t, {5, 3}, -9, 9, 15), tensor::scalar<i64>(2)});
    const auto z = rnd(t, {2, 8, 3, 2}, -50, 50, 16);
    differential(node("DepthToSpace", 21, {{"blocksize", i64{2}}}), {z});
    differential(node("DepthToSpace", 21, {{"blocksize", i64{2}}, {"mode", std::string("CRD")}}), {z});
    const auto w = rnd(t, {2, 3, 4, 6}, -50, 50, 17);
    differential(node("SpaceToDepth", 21, {{"blocksize", i64{2}}}), {w});
  }
  differential(node("Pad", 2, {{"pads", ints{0, 1, 0, 2}}, {"value", 1.5}}), {random_tensor(dtype::f32, {2, 3})});
}

TEST_CASE("cuda: ConstantOfShape and Range match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  differential(node("ConstantOfShape", 21), {I({2, 3})});
  differential(node("ConstantOfShape", 21, {{"value", tensor::from<std::int32_t>({7})}}), {I({4, 0})});
  differential(node("ConstantOfShape", 21, {{"value", tensor::from<float>({-2.5f})}}), {I({3, 5, 7})});
  differential(node("ConstantOfShape", 21, {{"value", tensor::scalar<bool>(true)}}), {I({9})});
  differential(node("Range", 21), {tensor::scalar<float>(0.5f), tensor::scalar<float>(10.0f), tensor::scalar<float>(0.75f)});
  differential(node("Range", 21), {tensor::scalar<double>(3), tensor::scalar<double>(-4), tensor::scalar<double>(-0.3)});
  differential(node("Range", 21), {tensor::scalar<i64>(-7), tensor::scalar<i64>(20), tensor::scalar<i64>(3)});
  differential(node("Range", 21), {tensor::scalar<std::int32_t>(10), tensor::scalar<std::int32_t>(0), tensor::scalar<std::int32_t>(-4)});
  differential(node("Range", 21), {tensor::scalar<std::int32_t>(0), tensor::scalar<std::int32_t>(5), tensor::scalar<std::int32_t>(-1)});
  const auto h = [](float v) { return tensor::scalar<Eigen::half>(Eigen::half(v)); };
  differential(node("Range", 21), {h(1), h(30), h(0.7f)});
  differential(node("Range", 27, {{"stash_type", i64{11}}}), {h(1), h(30), h(0.7f)});
}

TEST_CASE("cuda: an axis that indexes a scalar's sizes fails as on the CPU (Compress, Pad)") {
  GPASS_REQUIRE_GPU();
  // a scalar has no axis 0 to index (normalize_axis would let one through): a gpass error on
  // both, never a read past the empty size vector
  const tensor s = tensor::scalar<float>(2.5f);
  for (i64 axis : {0, -1}) {
    INFO("axis " << axis);
    const auto n = node("Compress", 11, {{"axis", axis}});
    const std::vector<tensor> in{s, tensor::from<bool>({true})};
    CHECK_THROWS_AS(gpass_test_cuda::run_cpu(n, in), gpass::error);
    CHECK_THROWS_AS(gpass_test_cuda::run_gpu(n, in), gpass::error);
  }
  // without an axis the scalar is flattened to [1] first
  differential(node("Compress", 11), {s, tensor::from<bool>({true})});
  for (i64 axis : {0, -1}) {
    INFO("pad axis " << axis);
    const auto n = node("Pad", 21);
    const std::vector<tensor> in{s, I({1, 1}), tensor{}, I({axis})};
    CHECK_THROWS_AS(gpass_test_cuda::run_cpu(n, in), gpass::error);
    CHECK_THROWS_AS(gpass_test_cuda::run_gpu(n, in), gpass::error);
  }
}

TEST_CASE("cuda: BitCast is a view of the input's bytes as another type of the same width") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  gpass::attribute_map to_i32{{"to", i64{6}}}, to_bool{{"to", i64{9}}};
  CHECK(r.serves({.op = "BitCast", .attrs = &to_i32, .inputs = {dtype::f32}}));
  CHECK_FALSE(r.serves({.op = "BitCast", .attrs = &to_bool, .inputs = {dtype::uint8}}));  // (bytes made 0 / 1: the CPU's)
  GPASS_REQUIRE_GPU();
  const auto x = random_tensor(dtype::f32, {3, 4}, -3, 3, 91);
  differential(node("BitCast", 26, {{"to", i64{6}}}), {x}, 0, 0);   // f32 -> i32
  differential(node("BitCast", 26, {{"to", i64{12}}}), {x}, 0, 0);  // f32 -> u32
  differential(node("BitCast", 26, {{"to", i64{16}}}), {random_tensor(dtype::f16, {5}, -3, 3, 92)}, 0, 0);  // f16 -> bf16
  CHECK_THROWS_WITH(gpass_test_cuda::run_gpu(node("BitCast", 26, {{"to", i64{7}}}), {x}), doctest::Contains("the widths differ"));
}

TEST_CASE("cuda: CenterCropPad matches the CPU kernel") {
  CHECK(gpass_test_cuda::serves_in("", "CenterCropPad", {dtype::f32, dtype::int64}));
  GPASS_GPU_OR_CPU_SIDE();
  // crop and pad in one node, odd differences (the extra element at the end), listed axes
  // (negative, in any order), every axis, an axis cropped to nothing; other types
  const auto x = rnd(dtype::f32, {4, 5, 6}, -3, 3, 1);
  differential(node("CenterCropPad", 18), {x, I({3, 8, 6})}, 0, 0);
  differential(node("CenterCropPad", 18, {{"axes", ints{-1, 0}}}), {x, I({3, 7})}, 0, 0);
  differential(node("CenterCropPad", 18, {{"axes", ints{1}}}), {x, I({0})}, 0, 0);
  differential(node("CenterCropPad", 18), {rnd(dtype::uint8, {3, 3}, 0, 255, 2), I({6, 1})}, 0, 0);
  differential(node("CenterCropPad", 18), {rnd(dtype::int64, {2, 7}, -9, 9, 3), I({5, 2})}, 0, 0);
}

TEST_CASE("cuda: CenterCropPad fails as the CPU's does, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  const auto x = rnd(dtype::f32, {4, 5}, -3, 3, 4);
  fails(node("CenterCropPad", 18), {x, I({3})}, "shape has 1 values for 2 axes");
  fails(node("CenterCropPad", 18), {x, I({3, -1})}, "shape must not be negative");
  fails(node("CenterCropPad", 18, {{"axes", ints{1, -1}}}), {x, I({3, 3})}, "axes repeat axis");
}

}  // namespace gpass_test_cuda_array
