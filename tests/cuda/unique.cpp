// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of unique.hpp (ONNX Unique, TensorFlow Unique / UniqueWithCounts): which
// nodes the GPU serves and every generated source compiling with NVRTC (no GPU needed), each op
// against the Eigen CPU kernel on a GPU (exactly: the same values, indices and counts; without
// a GPU, the CPU side of each comparison runs), and the errors naming the node.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_unique {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::fails_alike;
using gpass_test_cuda::run_cpu;

gpass::exec::kernel_node tf(std::string op, gpass::attribute_map a = {}) {
  const std::size_t outs = op == "UniqueWithCounts" ? 3 : 2;
  return node(std::move(op), 1, std::move(a), outs, "tf");
}

// values in [lo, hi) floored: many repeats
tensor floored(ints s, std::uint64_t seed, double lo, double hi) {
  tensor x = rnd(std::move(s), seed, dtype::f32, lo, hi);
  for (i64 i = 0; i < x.size(); ++i) x.data<float>()[i] = std::floor(x.data<float>()[i]);
  return x;
}

template <class T>
std::vector<T> vec(const tensor& t) {
  const auto v = t.values<T>();
  return {v.begin(), v.end()};
}

const float nan = std::numeric_limits<float>::quiet_NaN();
const float inf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("cuda: Unique is served for numbers and bool, and its sources compile with NVRTC") {
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::int8, dtype::int64, dtype::uint64, dtype::bool_}) {
    CAPTURE(to_string(t));
    CHECK(gpass_test_cuda::serves_in("", "Unique", {t}));
    CHECK(gpass_test_cuda::serves_in("tf", "Unique", {t}));
    CHECK(gpass_test_cuda::serves_in("tf", "UniqueWithCounts", {t}));
  }
  CHECK_FALSE(gpass_test_cuda::serves_in("", "Unique", {dtype::string}));
  CHECK_FALSE(gpass_test_cuda::serves_in("tf", "Unique", {dtype::string}));
  CHECK_FALSE(gpass_test_cuda::serves_in("tf", "UniqueWithCounts", {dtype::complex64}));
  for (const auto& [name, src] : ex::cuda_unique::unique_generated_sources())
    for (int arch : {80, 90}) {
      INFO(name << " sm_" << arch);
      CHECK(!ex::nvrtc_compile(src, name, arch, ex::nvrtc_target::ptx).empty());
    }
}

TEST_CASE("cuda: ONNX Unique matches the CPU kernel (sorted and by first occurrence, every axis, NaN and signed zeros)") {
  GPASS_GPU_OR_CPU_SIDE();
  std::uint64_t seed = 500;
  // flattened: one to several chunks of 4096 positions, sizes not a power of two
  for (const ints& s : {ints{1}, ints{7}, ints{3, 5}, ints{2, 3, 4}, ints{4096}, ints{4097}, ints{3, 5000}, ints{70000}}) {
    for (double range : {3.0, 1000.0}) {
      const tensor x = floored(s, seed++, -range, range);
      for (i64 sorted : {0, 1}) {
        INFO("shape " << gpass::shape::of(s).to_string() << " range " << range << " sorted " << sorted);
        differential(node("Unique", 11, {{"sorted", sorted}}, 4), {x}, 0, 0);
      }
    }
  }
  // all distinct (random floats), all equal
  differential(node("Unique", 11, {}, 4), {rnd({5000}, seed++)}, 0, 0);
  differential(node("Unique", 11, {{"sorted", i64{0}}}, 4), {rnd({777}, seed++)}, 0, 0);
  differential(node("Unique", 11, {}, 4), {tensor::from<float>(std::vector<float>(9000, 2.5f))}, 0, 0);
  // slices along an axis: rows compared element by element
  for (const ints& s : {ints{6, 3}, ints{3, 6}, ints{2, 9, 2}, ints{4, 3, 5}, ints{300, 2}}) {
    const tensor x = floored(s, seed++, -1, 1);  // 0 / -1 only: repeated slices
    for (i64 axis = -static_cast<i64>(s.size()); axis < static_cast<i64>(s.size()); ++axis)
      for (i64 sorted : {0, 1}) {
        INFO("shape " << gpass::shape::of(s).to_string() << " axis " << axis << " sorted " << sorted);
        differential(node("Unique", 11, {{"axis", axis}, {"sorted", sorted}}, 4), {x}, 0, 0);
      }
  }
  // NaN (all equal, after every number: NumPy's order), -0 equal to +0, infinities
  const tensor special = tensor::from<float>({1.0f, nan, -0.0f, 0.0f, -inf, inf, nan, -1.0f, 0.0f, -0.0f, 2.0f, -nan, inf});
  for (i64 sorted : {0, 1}) differential(node("Unique", 11, {{"sorted", sorted}}, 4), {special}, 0, 0);
  const tensor rows = tensor::from<float>({nan, 1, nan, 1, -0.0f, 2, 0.0f, 2, 0.0f, 1}, {5, 2});
  for (i64 sorted : {0, 1}) differential(node("Unique", 11, {{"axis", i64{0}}, {"sorted", sorted}}, 4), {rows}, 0, 0);
  // fewer outputs; empty input; an empty slice (every row equal)
  for (std::size_t outs : {1, 2, 3}) differential(node("Unique", 11, {}, outs), {floored({50}, seed++, -5, 5)}, 0, 0);
  differential(node("Unique", 11, {}, 4), {tensor(dtype::f32, {0})}, 0, 0);
  differential(node("Unique", 11, {{"axis", i64{0}}}, 4), {tensor(dtype::f32, {4, 0})}, 0, 0);
  differential(node("Unique", 11, {{"axis", i64{1}}}, 4), {tensor(dtype::f32, {4, 0})}, 0, 0);
  // other element types
  for (dtype t : {dtype::f16, dtype::bf16, dtype::f64, dtype::int8, dtype::int32, dtype::int64, dtype::uint8, dtype::uint64, dtype::bool_}) {
    INFO("type " << to_string(t));
    const bool u = t == dtype::uint8 || t == dtype::uint64 || t == dtype::bool_;
    const tensor x = rnd({3, 40}, seed++, t, u ? 0 : -9, u ? 2 : 9);
    for (i64 sorted : {0, 1}) {
      differential(node("Unique", 11, {{"sorted", sorted}}, 4), {x}, 0, 0);
      differential(node("Unique", 11, {{"sorted", sorted}, {"axis", i64{1}}}, 4), {x}, 0, 0);
    }
  }
}

TEST_CASE("cuda: TensorFlow Unique and UniqueWithCounts match the CPU kernels (first-occurrence order, every NaN its own value)") {
  GPASS_GPU_OR_CPU_SIDE();
  std::uint64_t seed = 600;
  for (const char* op : {"Unique", "UniqueWithCounts"}) {
    CAPTURE(op);
    for (i64 n : {1, 2, 5, 100, 4096, 4097, 12289, 70000})
      for (double range : {2.0, 50.0, 1e6}) {
        INFO("n " << n << " range " << range);
        const tensor x = floored({n}, seed++, -range, range);
        differential(tf(op), {x}, 0, 0);
        differential(tf(op, {{"out_idx", dtype::int64}}), {x}, 0, 0);
      }
    const tensor special = tensor::from<float>({nan, 1.0f, nan, -0.0f, 0.0f, -inf, inf, nan, -1.0f, 0.0f, -0.0f, 2.0f, -nan, inf, 1.0f});
    differential(tf(op), {special}, 0, 0);
    differential(tf(op, {{"out_idx", dtype::int64}}), {tensor::from<float>(std::vector<float>(5000, nan))}, 0, 0);
    differential(tf(op), {tensor(dtype::f32, {0})}, 0, 0);
    for (dtype t : {dtype::f16, dtype::bf16, dtype::f64, dtype::int8, dtype::int32, dtype::int64, dtype::uint16, dtype::bool_}) {
      INFO("type " << to_string(t));
      const bool u = t == dtype::uint16 || t == dtype::bool_;
      differential(tf(op), {rnd({300}, seed++, t, u ? 0 : -20, u ? 2 : 20)}, 0, 0);
    }
  }
}

TEST_CASE("cuda: Unique's errors name the node, as the CPU's") {
  fails_alike(tf("Unique"), {rnd({2, 3}, 1)}, "x must be a vector");
  fails_alike(tf("UniqueWithCounts", {{"out_idx", dtype::f32}}), {rnd({3}, 2)}, "output type must be int32 or int64");
  fails_alike(node("Unique", 11, {{"axis", i64{2}}}, 4), {rnd({2, 3}, 3)}, "axis 2 is out of range");
  fails_alike(node("Unique", 11, {{"axis", i64{0}}}, 4), {tensor::from<float>({1.0f}, {})}, "axis 0 is out of range for rank 0");
}

TEST_CASE("cuda: the CPU's Unique, the reference, orders NaN and signed zeros as NumPy") {
  // (the CPU kernel alone: the reference both executors follow)
  const tensor x = tensor::from<float>({nan, 1.0f, nan, -0.0f, 0.0f}, {5});
  auto s = run_cpu(node("Unique", 11, {}, 4), {x});
  REQUIRE(s.size() == 4);
  CHECK(std::signbit(s[0].data<float>()[0]));  // the group of -0 and +0 shows its first, -0
  CHECK(s[0].data<float>()[1] == 1.0f);
  CHECK(std::isnan(s[0].data<float>()[2]));
  CHECK(s[0].size() == 3);
  CHECK(vec<i64>(s[1]) == std::vector<i64>{3, 1, 0});
  CHECK(vec<i64>(s[2]) == std::vector<i64>{2, 1, 2, 0, 0});
  CHECK(vec<i64>(s[3]) == std::vector<i64>{2, 1, 2});
  auto f = run_cpu(node("Unique", 11, {{"sorted", i64{0}}}, 4), {x});
  CHECK(vec<i64>(f[1]) == std::vector<i64>{0, 1, 3});
  CHECK(vec<i64>(f[2]) == std::vector<i64>{0, 1, 0, 2, 2});
  CHECK(vec<i64>(f[3]) == std::vector<i64>{2, 1, 2});
  // TensorFlow's: every NaN its own value, in first-occurrence order
  auto t = run_cpu(tf("UniqueWithCounts"), {x});
  CHECK(t[0].size() == 4);
  CHECK(vec<std::int32_t>(t[1]) == std::vector<std::int32_t>{0, 1, 2, 3, 3});
  CHECK(vec<std::int32_t>(t[2]) == std::vector<std::int32_t>{1, 1, 1, 2});
}

}  // namespace gpass_test_cuda_unique
