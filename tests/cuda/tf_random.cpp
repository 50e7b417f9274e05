// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of tf_random.hpp (TensorFlow's stateless and stateful random ops): which
// nodes the GPU serves (no GPU needed), each op's stream against the Eigen CPU kernel's on a GPU
// (uniform floats and integers bit for bit, normals within the device libm's ulps; without a
// GPU, the CPU side of each comparison runs), and the errors naming the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_tf_random {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::run_cpu;

gpass::exec::kernel_node tf(std::string op, gpass::attribute_map attrs = {}, std::size_t outputs = 1) {
  return node(std::move(op), 1, std::move(attrs), outputs, "tf");
}

tensor i32s(std::vector<std::int32_t> v, ints sizes) { return tensor::from<std::int32_t>(std::move(v), std::move(sizes)); }
tensor i64s(ints v, ints sizes) { return tensor::from<i64>(std::move(v), std::move(sizes)); }

}  // namespace

TEST_CASE("cuda: the TensorFlow random ops the GPU serves") {
  auto serves = [](const char* op, std::vector<dtype> in, const gpass::attribute_map& attrs) {
    return gpass_test_cuda::serves_in("tf", op, std::move(in), attrs);
  };
  const dtype i32 = dtype::int32;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) {
    CHECK(serves("StatelessRandomUniform", {i32, i32}, {{"dtype", t}}));
    CHECK(serves("StatelessRandomNormalV2", {i32, dtype::uint64, dtype::uint64, i32}, {{"dtype", t}}));
    CHECK(serves("StatelessTruncatedNormal", {i32, dtype::int64}, {{"dtype", t}}));
    CHECK(serves("RandomStandardNormal", {i32}, {{"dtype", t}}));
  }
  for (dtype t : {dtype::int32, dtype::int64, dtype::uint32, dtype::uint64}) {
    CHECK(serves("StatelessRandomUniformFullInt", {i32, i32}, {{"dtype", t}}));
    CHECK(serves("RandomUniformInt", {i32, t, t}, {{"Tout", t}}));
    CHECK_FALSE(serves("StatelessRandomUniform", {i32, i32}, {{"dtype", t}}));  // (the CPU fails as TensorFlow)
  }
  CHECK_FALSE(serves("StatelessRandomUniformInt", {i32, i32}, {{"dtype", dtype::f32}}));
  for (const char* op : {"StatelessRandomGetKeyCounter", "StatelessRandomGetKeyCounterAlg", "StatelessRandomGetAlg"})
    CHECK(serves(op, {i32}, {}));
}

TEST_CASE("cuda: TensorFlow's stateless random ops draw the CPU kernels' streams") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto shape = i32s({3, 5, 7}, {3});  // 105 elements: a partial last block
  const auto seed = i64s({1234, -5}, {2});
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) {
    CAPTURE(t);
    const gpass::attribute_map a{{"dtype", t}};
    differential(tf("StatelessRandomUniform", a), {shape, seed}, 0, 0);  // bit for bit
    differential(tf("StatelessRandomNormal", a), {shape, seed}, 1e-5, 1e-6);
    differential(tf("StatelessTruncatedNormal", a), {shape, seed}, 1e-5, 1e-6);
  }
  // one element; a counter whose low word carries into the high half (V2's key and counter)
  differential(tf("StatelessRandomUniform", {{"dtype", dtype::f32}}), {i32s({1}, {1}), i32s({7, 9}, {2})}, 0, 0);
  const auto key = tensor::from<std::uint64_t>({0x0123456789abcdefull}, {1});
  const auto counter = tensor::from<std::uint64_t>({0xfffffffffffffffeull, 41}, {2});
  for (const char* op : {"StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2"})
    for (dtype t : {dtype::f32, dtype::f64}) {
      CAPTURE(op);
      differential(tf(op, {{"dtype", t}}), {i32s({50}, {1}), key, counter, tensor::scalar<std::int32_t>(1)},
                   std::string(op) == "StatelessRandomUniformV2" ? 0 : 1e-5, 1e-6);
    }
  // integers: bounded (negative bounds, the widest int32 range) and full range, every type
  for (dtype t : {dtype::int32, dtype::int64, dtype::uint32, dtype::uint64}) {
    CAPTURE(t);
    differential(tf("StatelessRandomUniformFullInt", {{"dtype", t}}), {shape, seed}, 0, 0);
    differential(tf("StatelessRandomUniformFullIntV2", {{"dtype", t}}), {i32s({9}, {1}), key, counter, tensor::scalar<std::int32_t>(3)}, 0, 0);
  }
  differential(tf("StatelessRandomUniformInt", {{"dtype", dtype::int32}}), {shape, seed, tensor::scalar<std::int32_t>(-7), tensor::scalar<std::int32_t>(12)},
               0, 0);
  differential(tf("StatelessRandomUniformInt", {{"dtype", dtype::int32}}),
               {shape, seed, tensor::scalar<std::int32_t>(-2147483647 - 1), tensor::scalar<std::int32_t>(2147483647)}, 0, 0);
  differential(tf("StatelessRandomUniformInt", {{"dtype", dtype::int64}}), {shape, seed, tensor::scalar<i64>(-1000000000000), tensor::scalar<i64>(3)},
               0, 0);
  differential(tf("StatelessRandomUniformIntV2", {{"dtype", dtype::int64}}),
               {i32s({11}, {1}), key, counter, tensor::scalar<std::int32_t>(1), tensor::scalar<i64>(5), tensor::scalar<i64>(9)}, 0, 0);
  // an empty output takes any bounds (TensorFlow checks them only for elements)
  differential(tf("StatelessRandomUniformInt", {{"dtype", dtype::int32}}), {i32s({0, 4}, {2}), seed, tensor::scalar<std::int32_t>(5), tensor::scalar<std::int32_t>(5)},
               0, 0);
  // without a dtype attribute: TensorFlow's defaults (uint64 for the full-range ints)
  differential(tf("StatelessRandomUniformFullInt"), {shape, seed}, 0, 0);
  CHECK(gpass_test_cuda::run_cpu(tf("StatelessRandomUniformFullInt"), {shape, seed}).at(0).element_type() == dtype::uint64);
  // the key / counter / alg ops
  differential(tf("StatelessRandomGetKeyCounter", {}, 2), {seed}, 0, 0);
  differential(tf("StatelessRandomGetKeyCounterAlg", {}, 3), {i32s({-1, 2147483647}, {2})}, 0, 0);
  differential(tf("StatelessRandomGetAlg"), {}, 0, 0);
}

TEST_CASE("cuda: TensorFlow's stateful random ops draw the CPU kernels' first stream") {
  GPASS_GPU_OR_CPU_SIDE();
  // a fresh kernel on each side: the seeded generator's first draw
  const gpass::attribute_map seeded{{"seed", i64{87654321}}, {"seed2", i64{-3}}, {"dtype", dtype::f32}};
  differential(tf("RandomUniform", seeded), {i32s({6, 9}, {2})}, 0, 0);
  differential(tf("RandomStandardNormal", seeded), {i32s({6, 9}, {2})}, 1e-5, 1e-6);
  differential(tf("TruncatedNormal", seeded), {i32s({6, 9}, {2})}, 1e-5, 1e-6);
  differential(tf("RandomUniform", {{"seed", i64{5}}, {"dtype", dtype::f64}}), {i32s({13}, {1})}, 0, 0);
  differential(tf("RandomUniformInt", {{"seed", i64{5}}, {"seed2", i64{6}}, {"Tout", dtype::int64}}),
               {i32s({13}, {1}), tensor::scalar<i64>(-4), tensor::scalar<i64>(40)}, 0, 0);
}

TEST_CASE("cuda: TensorFlow's random ops fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  const auto seed = i64s({1, 2}, {2});
  fails(tf("StatelessRandomUniform", {{"dtype", dtype::f32}}), {i32s({-1, 2}, {2}), seed}, "negative dim");
  fails(tf("StatelessRandomUniform", {{"dtype", dtype::f32}}), {i32s({2}, {1}), i64s({1, 2, 3}, {3})}, "seed must have shape [2]");
  fails(tf("StatelessRandomUniformInt", {{"dtype", dtype::int32}}), {i32s({2}, {1}), seed, tensor::scalar<std::int32_t>(5), tensor::scalar<std::int32_t>(5)},
        "need minval < maxval");
  fails(tf("StatelessRandomUniformInt", {{"dtype", dtype::int32}}), {i32s({2}, {1}), seed, tensor::scalar<i64>(0), tensor::scalar<i64>(i64{1} << 40)},
        "do not fit the output type");
  const auto key = tensor::from<std::uint64_t>({1}, {1});
  const auto counter = tensor::from<std::uint64_t>({1, 2}, {2});
  fails(tf("StatelessRandomUniformV2", {{"dtype", dtype::f32}}), {i32s({2}, {1}), key, counter, tensor::scalar<std::int32_t>(2)}, "is not Philox");
  fails(tf("StatelessRandomUniformV2", {{"dtype", dtype::f32}}), {i32s({2}, {1}), key, tensor::from<std::uint64_t>({1}, {1}), tensor::scalar<std::int32_t>(1)},
        "counter must be two uint64");
}

}  // namespace gpass_test_cuda_tf_random
