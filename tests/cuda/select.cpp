// SPDX-License-Identifier: Apache-2.0
// The CUDA selection kernels (TopK, NonZero): every generated source compiles to PTX for
// sm_80 and sm_90 (no GPU needed), and on a GPU each op matches the Eigen CPU kernel exactly:
// ties, NaN, signed zeros, rows that are not a power of two long, every axis.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_select {

namespace {

using namespace gpass_test_cuda::prelude;

}  // namespace

TEST_CASE("cuda: TopK and NonZero are registered and their sources compile with NVRTC") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  CHECK(r.has("", "TopK"));
  CHECK(r.has("", "NonZero"));
  for (const auto& [name, src] : ex::cuda_select::select_generated_sources())
    for (int arch : {80, 90}) {
      INFO(name << " sm_" << arch);
      CHECK(!ex::nvrtc_compile(src, name, arch, ex::nvrtc_target::ptx).empty());
    }
}

TEST_CASE("cuda: TopK matches the CPU kernel (ties by index, NaN as the largest, every axis and type)") {
  GPASS_GPU_OR_CPU_SIDE();
  std::uint64_t seed = 200;
  // integers in a small range: many ties, which must keep the lower index first
  for (const ints& s : {ints{7}, ints{1, 1}, ints{3, 5}, ints{4, 100}, ints{2, 3, 37}, ints{3000}, ints{2, 1025, 3}}) {
    for (i64 axis = -1; axis < static_cast<i64>(s.size()); ++axis) {
      const i64 dim = s[static_cast<std::size_t>(axis < 0 ? axis + static_cast<i64>(s.size()) : axis)];
      const tensor x = rnd(s, seed++, dtype::f32, -4, 4);
      tensor xi = x;
      for (i64 i = 0; i < xi.size(); ++i) xi.data<float>()[i] = std::floor(xi.data<float>()[i]);
      for (i64 k : {i64{0}, i64{1}, (dim + 1) / 2, dim}) {
        for (i64 largest : {0, 1}) {
          INFO("shape " << gpass::shape::of(s).to_string() << " axis " << axis << " k " << k << " largest " << largest);
          const gpass::attribute_map a{{"axis", axis}, {"largest", largest}};
          differential(node("TopK", 11, a, 2), {x, I({k})}, 0, 0);
          differential(node("TopK", 11, a, 2), {xi, I({k})}, 0, 0);
        }
      }
    }
  }
  // k as an attribute (opset 1)
  differential(node("TopK", 1, {{"k", i64{3}}}, 2), {rnd({4, 9}, seed++)}, 0, 0);
  // NaN (the largest), signed zeros (equal), infinities
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const tensor special = tensor::from<float>({1.0f, nan, -0.0f, 0.0f, -inf, inf, nan, -1.0f, 0.0f, -0.0f, 2.0f, -nan});
  for (i64 largest : {0, 1})
    for (i64 k : {1, 4, 12}) differential(node("TopK", 11, {{"largest", largest}}, 2), {special, I({k})}, 0, 0);
  // other element types
  for (dtype t : {dtype::f16, dtype::bf16, dtype::f64, dtype::int8, dtype::int32, dtype::int64, dtype::uint8, dtype::uint64}) {
    INFO("type " << to_string(t));
    const bool u = t == dtype::uint8 || t == dtype::uint64;
    const tensor x = rnd({3, 50}, seed++, t, u ? 0 : -20, 20);
    for (i64 largest : {0, 1}) differential(node("TopK", 11, {{"largest", largest}}, 2), {x, I({7})}, 0, 0);
  }
}

TEST_CASE("cuda: NonZero matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  std::uint64_t seed = 300;
  // values in [-1, 1) floored: about half zeros
  for (const ints& s : {ints{}, ints{1}, ints{0}, ints{7}, ints{3, 0, 2}, ints{5, 9}, ints{2, 3, 4, 5}, ints{4099}, ints{700, 1500}}) {
    INFO("shape " << gpass::shape::of(s).to_string());
    tensor x = rnd(s, seed++, dtype::f32, -1, 1);
    for (i64 i = 0; i < x.size(); ++i) x.data<float>()[i] = std::floor(x.data<float>()[i]);
    differential(node("NonZero", 13), {x}, 0, 0);
  }
  // sparse: mostly zeros over many blocks
  tensor sparse = tensor(dtype::f32, {3000, 2001});
  for (i64 i = 0; i < sparse.size(); i += 997) sparse.data<float>()[i] = 1.0f;
  differential(node("NonZero", 13), {sparse}, 0, 0);
  differential(node("NonZero", 13), {tensor(dtype::f32, {5, 5})}, 0, 0);
  for (dtype t : {dtype::bool_, dtype::int32, dtype::int64, dtype::uint8, dtype::f16, dtype::bf16, dtype::f64}) {
    INFO("type " << to_string(t));
    differential(node("NonZero", 13), {rnd({6, 17}, seed++, t, t == dtype::uint8 ? 0 : -1, t == dtype::uint8 ? 2 : 1)}, 0, 0);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  differential(node("NonZero", 13), {tensor::from<float>({0.0f, -0.0f, nan, 1.0f})}, 0, 0);
}

}  // namespace gpass_test_cuda_select
