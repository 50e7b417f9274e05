// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of RMSNormalization, GroupNormalization, LRN, Hardmax, RotaryEmbedding and
// inference Dropout (`exec/cuda/kernels/norm.hpp`): registered for the opsets and nodes the CPU
// kernels serve (Dropout with a training_mode input not), their sources compile (the NVRTC
// test of every generated source covers them), and on a GPU each matches the Eigen CPU kernel
// on ragged shapes, every attribute variant, the float types, empty tensors and bad inputs.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_norm {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::run_cpu;
using gpass_test_cuda::run_gpu;

/// A tensor of type `t` and `sizes` holding `v` (NaN allowed).
tensor vals(dtype t, ints sizes, const std::vector<double>& v) {
  tensor r(t, std::move(sizes));
  REQUIRE(static_cast<std::size_t>(r.size()) == v.size());
  gpass::visit_dtype(t, [&]<class T>() {
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
      T* p = r.data<T>();
      for (std::size_t i = 0; i < v.size(); ++i) {
        if constexpr (std::is_same_v<T, double>) p[i] = v[i];
        else p[i] = static_cast<T>(static_cast<float>(v[i]));
      }
    }
  });
  return r;
}

/// Small integers (as floats of type `t`): rows full of ties.
tensor ties(dtype t, ints sizes, std::uint64_t seed) {
  tensor r = rnd(std::move(sizes), seed, dtype::f64, -3, 3);
  std::vector<double> v(static_cast<std::size_t>(r.size()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::floor(r.data<double>()[i]);
  return vals(t, r.sizes(), v);
}

/// Tolerances per element type for the normalizations (rtol, atol).
struct tol {
  double rtol, atol;
};
tol tol_for(dtype t) {
  switch (t) {
    case dtype::f16: return {4e-3, 4e-3};
    case dtype::bf16: return {2e-2, 2e-2};
    case dtype::f64: return {1e-6, 1e-7};  // the default stash type rounds to float
    default: return {1e-4, 1e-5};
  }
}

const dtype all_floats[] = {dtype::f32, dtype::f16, dtype::bf16, dtype::f64};

}  // namespace

TEST_CASE("cuda: the norm kernels are registered (RMS, group, LRN, Hardmax, rotary, Dropout)") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  for (const char* op : {"RMSNormalization", "GroupNormalization", "LRN", "Hardmax", "RotaryEmbedding", "Dropout"}) {
    INFO(op);
    CHECK(r.has("", op));
    for (dtype t : all_floats) CHECK(r.serves(ex::kernel_query{.op = op, .inputs = {t}}));
    CHECK_FALSE(r.serves(ex::kernel_query{.op = op, .inputs = {dtype::int32}}));
  }
  // the opsets the CPU kernels start at
  CHECK(r.find("", "RMSNormalization", 22, dtype::f32) == nullptr);
  CHECK(r.find("", "RMSNormalization", 23, dtype::f32) != nullptr);
  CHECK(r.find("", "RotaryEmbedding", 22, dtype::f32) == nullptr);
  CHECK(r.find("", "RotaryEmbedding", 23, dtype::f32) != nullptr);
  CHECK(r.find("", "GroupNormalization", 17, dtype::f32) == nullptr);
  CHECK(r.find("", "GroupNormalization", 18, dtype::f32) != nullptr);
  CHECK(r.find("", "GroupNormalization", 21, dtype::f16) != nullptr);
  CHECK(r.find("", "Hardmax", 1, dtype::f64) != nullptr);
  CHECK(r.find("", "LRN", 1, dtype::bf16) != nullptr);
  CHECK(r.find("", "Dropout", 7, dtype::f32) != nullptr);
  // Dropout: inference only; a node with a training_mode input stays on the CPU
  CHECK(r.serves(ex::kernel_query{.op = "Dropout", .inputs = {dtype::f32, dtype::f32}, .outputs = {dtype::f32, dtype::bool_}}));
  CHECK(r.serves(ex::kernel_query{.op = "Dropout", .inputs = {dtype::f16, dtype::undefined, dtype::undefined}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.op = "Dropout", .inputs = {dtype::f32, dtype::f32, dtype::bool_}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.op = "Dropout", .inputs = {dtype::f32, dtype::undefined, dtype::bool_}}));
  // and their sources are in the list the NVRTC test compiles
  std::size_t n = 0;
  for (const auto& [name, src] : ex::cuda_generated_sources())
    for (const char* p : {"rms_norm_", "group_norm_", "lrn_", "hardmax_", "rotary_", "dropout_mask_"})
      if (name.rfind(p, 0) == 0) ++n;
  CHECK(n == ex::cuda_norm::norm_generated_sources().size());
  CHECK(n >= 30);
}

TEST_CASE("cuda: RMSNormalization (norm) matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  const auto rms = [](gpass::attribute_map a) { return node("RMSNormalization", 23, std::move(a)); };
  // rows of 1, 7, 33 and 1000 over the last axis
  for (i64 n : {i64{1}, i64{7}, i64{33}, i64{1000}}) {
    INFO("row " << n);
    differential(rms({}), {rnd({3, 5, n}, 1), rnd({n}, 2)}, 1e-4, 1e-5);
    differential(rms({{"epsilon", 1e-2}}), {rnd({4, n}, 3), rnd({1, n}, 4)}, 1e-4, 1e-5);
  }
  // other axes, and scales broadcast over the normalized and the outer dimensions
  const tensor x = rnd({2, 3, 4, 5}, 5);
  for (i64 axis : {i64{0}, i64{1}, i64{2}, i64{-1}, i64{-3}}) {
    INFO("axis " << axis);
    differential(rms({{"axis", axis}}), {x, rnd({5}, 6)}, 1e-4, 1e-5);
    differential(rms({{"axis", axis}}), {x, rnd({1}, 7)}, 1e-4, 1e-5);
    differential(rms({{"axis", axis}}), {x, rnd({4, 1}, 8)}, 1e-4, 1e-5);
    differential(rms({{"axis", axis}}), {x, rnd({2, 3, 4, 5}, 9)}, 1e-4, 1e-5);
    differential(rms({{"axis", axis}}), {x, rnd({3, 1, 5}, 10)}, 1e-4, 1e-5);
  }
  // the float types; the stash types and a scale of another float type for some (each
  // combination is a library NVRTC compiles: a few, to keep the test fast)
  for (dtype t : all_floats) {
    INFO("type " << to_string(t));
    const auto [rt, at] = tol_for(t);
    differential(rms({}), {rnd({6, 33}, 11, t), rnd({33}, 12, t)}, rt, at);
    differential(rms({{"axis", i64{1}}}), {rnd({2, 7, 9}, 13, t), rnd({7, 9}, 14, t)}, rt, at);
  }
  differential(rms({{"stash_type", i64{11}}}), {rnd({6, 33}, 15), rnd({33}, 16)}, 1e-4, 1e-5);
  differential(rms({{"stash_type", i64{11}}}), {rnd({6, 33}, 15, dtype::f64), rnd({33}, 16, dtype::f64)}, 1e-10, 1e-12);
  differential(rms({{"stash_type", i64{10}}}), {rnd({5, 20}, 17), rnd({20}, 18)}, 1e-2, 1e-2);
  differential(rms({}), {rnd({5, 20}, 19, dtype::f16), rnd({20}, 20, dtype::f32)}, 4e-3, 4e-3);
  differential(rms({{"stash_type", i64{16}}}), {rnd({5, 20}, 21), rnd({20}, 22)}, 3e-2, 3e-2);
  // more rows than blocks in the grid (grid-stride over rows); empty tensors; a scalar-sized row
  differential(rms({}), {rnd({70000, 3}, 23), rnd({3}, 24)}, 1e-4, 1e-5);
  differential(rms({}), {rnd({0, 7}, 25), rnd({7}, 26)});
  differential(rms({{"axis", i64{0}}}), {rnd({3, 0}, 27), rnd({1}, 28)});
  differential(rms({}), {rnd({1}, 29), rnd({1}, 30)}, 1e-4, 1e-5);
  // bad inputs fail naming the node, on the GPU as on the CPU
  CHECK_THROWS_WITH_AS(run_gpu(rms({}), {rnd({3, 5}, 31), rnd({4}, 32)}), doctest::Contains("does not broadcast"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(rms({}), {rnd({3, 5}, 31), rnd({2, 3, 5}, 32)}), doctest::Contains("does not broadcast"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(rms({{"axis", i64{2}}}), {rnd({3, 5}, 33), rnd({5}, 34)}), doctest::Contains("out of range"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(rms({{"stash_type", i64{6}}}), {rnd({3, 5}, 35), rnd({5}, 36)}), doctest::Contains("stash_type"),
                       gpass::error);
  CHECK_THROWS_AS(run_cpu(rms({}), {rnd({3, 5}, 31), rnd({4}, 32)}), gpass::error);
}

TEST_CASE("cuda: GroupNormalization (norm) matches the CPU kernel, opset 18 and 21") {
  GPASS_REQUIRE_GPU();
  const auto gn = [](int opset, i64 groups, gpass::attribute_map a = {}) {
    a["num_groups"] = groups;
    return node("GroupNormalization", opset, std::move(a));
  };
  const tensor x = rnd({2, 6, 5, 7}, 40);
  for (i64 g : {i64{1}, i64{2}, i64{3}, i64{6}}) {
    INFO("groups " << g);
    // 21: scale and bias per channel; 18: per group
    differential(gn(21, g), {x, rnd({6}, 41), rnd({6}, 42)}, 1e-4, 1e-5);
    differential(gn(18, g), {x, rnd({g}, 43), rnd({g}, 44)}, 1e-4, 1e-5);
    differential(gn(21, g, {{"epsilon", 0.5}}), {x, rnd({6}, 45), rnd({6}, 46)}, 1e-4, 1e-5);
  }
  // rank 2 (one element per channel), rank 3 with long groups, rank 5; ragged sizes
  differential(gn(21, 2), {rnd({3, 4}, 47), rnd({4}, 48), rnd({4}, 49)}, 1e-4, 1e-5);
  differential(gn(21, 2), {rnd({1, 4, 1000}, 50), rnd({4}, 51), rnd({4}, 52)}, 1e-4, 1e-5);
  differential(gn(18, 3), {rnd({2, 3, 33}, 53), rnd({3}, 54), rnd({3}, 55)}, 1e-4, 1e-5);
  differential(gn(21, 1), {rnd({2, 2, 3, 1, 7}, 56), rnd({2}, 57), rnd({2}, 58)}, 1e-4, 1e-5);
  // the float types; opset 18 rounds to X's type; stash types and parameters of other float
  // types for some (each combination is a library NVRTC compiles: a few, to keep the test fast)
  for (dtype t : all_floats) {
    INFO("type " << to_string(t));
    const auto [rt, at] = tol_for(t);
    const tensor xt = rnd({2, 4, 33}, 59, t);
    differential(gn(21, 2), {xt, rnd({4}, 60, t), rnd({4}, 61, t)}, rt, at);
    differential(gn(18, 2), {xt, rnd({2}, 66, t), rnd({2}, 67, t)}, t == dtype::f16 ? 1e-2 : t == dtype::bf16 ? 5e-2 : rt,
                 t == dtype::f16 ? 1e-2 : t == dtype::bf16 ? 5e-2 : at);
  }
  differential(gn(21, 2, {{"stash_type", i64{11}}}), {rnd({2, 4, 33}, 62), rnd({4}, 63), rnd({4}, 64)}, 1e-4, 1e-5);
  differential(gn(21, 2, {{"stash_type", i64{11}}}), {rnd({2, 4, 33}, 62, dtype::f64), rnd({4}, 63, dtype::f64), rnd({4}, 64, dtype::f64)},
               1e-10, 1e-12);
  differential(gn(21, 4), {rnd({2, 4, 33}, 65, dtype::f16), rnd({4}, 64, dtype::f32), rnd({4}, 65, dtype::f64)}, 4e-3, 4e-3);
  differential(gn(21, 2, {{"stash_type", i64{10}}}), {rnd({2, 4, 9}, 68), rnd({4}, 69), rnd({4}, 70)}, 1e-2, 1e-2);
  // many groups (grid-stride over the blocks); empty tensors
  differential(gn(21, 4), {rnd({20000, 8, 1}, 71), rnd({8}, 72), rnd({8}, 73)}, 1e-4, 1e-5);
  differential(gn(21, 2), {rnd({0, 4, 3}, 74), rnd({4}, 75), rnd({4}, 76)});
  differential(gn(21, 2), {rnd({2, 4, 0}, 77), rnd({4}, 78), rnd({4}, 79)});
  // bad inputs
  CHECK_THROWS_WITH_AS(run_gpu(gn(21, 4), {rnd({2, 6, 3}, 80), rnd({6}, 81), rnd({6}, 82)}), doctest::Contains("not a multiple"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(gn(21, 2), {rnd({2, 6, 3}, 83), rnd({2}, 84), rnd({2}, 85)}), doctest::Contains("one per channel"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(gn(18, 2), {rnd({2, 6, 3}, 86), rnd({6}, 87), rnd({2}, 88)}), doctest::Contains("one per group"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(gn(21, 2), {rnd({6}, 89), rnd({6}, 90), rnd({6}, 91)}), doctest::Contains("rank >= 2"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(gn(21, 0), {rnd({2, 6}, 92), rnd({6}, 93), rnd({6}, 94)}), doctest::Contains("num_groups"), gpass::error);
}

TEST_CASE("cuda: LRN (norm) matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  const auto lrn = [](i64 size, gpass::attribute_map a = {}) {
    a["size"] = size;
    return node("LRN", 13, std::move(a));
  };
  const tensor x = rnd({2, 7, 5, 3}, 100);
  for (i64 size : {i64{1}, i64{2}, i64{3}, i64{4}, i64{5}, i64{9}}) {
    INFO("size " << size);
    differential(lrn(size), {x}, 1e-4, 1e-5);
    differential(lrn(size, {{"alpha", 0.5}, {"beta", 0.4}, {"bias", 2.0}}), {x}, 1e-4, 1e-5);
  }
  // rank 2 (one element per channel), rank 3 and 5; ragged sizes
  differential(lrn(3), {rnd({4, 33}, 101)}, 1e-4, 1e-5);
  differential(lrn(5, {{"alpha", 1e-2}}), {rnd({1, 33, 1000}, 102)}, 1e-4, 1e-5);
  differential(lrn(4, {{"beta", 1.5}}), {rnd({2, 3, 2, 3, 7}, 103)}, 1e-4, 1e-5);
  for (dtype t : all_floats) {
    INFO("type " << to_string(t));
    differential(lrn(3, {{"alpha", 0.3}}), {rnd({2, 7, 9}, 104, t)}, t == dtype::f64 ? 1e-12 : tol_for(t).rtol,
                 t == dtype::f64 ? 1e-13 : tol_for(t).atol);
  }
  differential(lrn(3), {rnd({0, 7, 3}, 105)});
  differential(lrn(3), {rnd({2, 0, 3}, 106)});
  CHECK_THROWS_WITH_AS(run_gpu(lrn(3), {rnd({7}, 107)}), doctest::Contains("rank >= 2"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(lrn(0), {rnd({2, 7}, 108)}), doctest::Contains("size must be positive"), gpass::error);
}

TEST_CASE("cuda: Hardmax (norm) matches the CPU kernel, opset < 13 and 13") {
  GPASS_REQUIRE_GPU();
  const auto hm = [](int opset, i64 axis) { return node("Hardmax", opset, {{"axis", axis}}); };
  // values with many ties: the first maximum wins
  const tensor x = ties(dtype::f32, {3, 4, 5, 6}, 110);
  for (int opset : {11, 13}) {
    for (i64 axis : {i64{0}, i64{1}, i64{2}, i64{3}, i64{-1}, i64{-4}}) {
      INFO("opset " << opset << ", axis " << axis);
      differential(hm(opset, axis), {x}, 0, 0);
    }
    INFO("opset " << opset << ", default axis");
    differential(node("Hardmax", opset), {x}, 0, 0);
  }
  // rows of 1, 7, 33 and 1000, the last axis and another
  for (i64 n : {i64{1}, i64{7}, i64{33}, i64{1000}}) {
    INFO("row " << n);
    differential(hm(13, -1), {ties(dtype::f32, {5, n}, 111)}, 0, 0);
    differential(hm(13, 0), {ties(dtype::f32, {n, 5}, 112)}, 0, 0);
    differential(hm(13, -1), {rnd({3, n}, 113)}, 0, 0);
    differential(hm(11, 0), {ties(dtype::f32, {2, n}, 114)}, 0, 0);
  }
  // NaN: a NaN first element stays the pick; a later NaN is never greater; a row of NaN
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v{nan, 1, 2, 2, 1, nan, 3, nan, nan, 1, 3, 0, nan, nan, nan, nan, 0, -1, -1, 0};
  for (dtype t : all_floats) {
    INFO("type " << to_string(t));
    differential(hm(13, -1), {vals(t, {4, 5}, v)}, 0, 0);
    differential(hm(13, 0), {vals(t, {4, 5}, v)}, 0, 0);
    differential(hm(11, 1), {vals(t, {2, 2, 5}, v)}, 0, 0);
    differential(hm(13, -1), {ties(t, {6, 33}, 115)}, 0, 0);
    differential(hm(13, 1), {rnd({4, 9, 3}, 116, t)}, 0, 0);
  }
  // -0 ties +0; many rows (grid-stride); a scalar; empty tensors
  differential(hm(13, -1), {vals(dtype::f32, {1, 3}, {-0.0, 0.0, -1})}, 0, 0);
  differential(hm(13, -1), {ties(dtype::f32, {70000, 3}, 117)}, 0, 0);
  differential(node("Hardmax", 13), {vals(dtype::f32, {}, {nan})}, 0, 0);
  differential(hm(13, 0), {rnd({0, 3}, 118)});
  differential(hm(13, 1), {rnd({3, 0, 2}, 119)});
  differential(hm(11, 1), {rnd({3, 0}, 120)});
  CHECK_THROWS_WITH_AS(run_gpu(hm(13, 2), {rnd({3, 4}, 121)}), doctest::Contains("out of range"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(hm(11, -3), {rnd({3, 4}, 122)}), doctest::Contains("out of range"), gpass::error);
}

TEST_CASE("cuda: RotaryEmbedding (norm) matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  const auto rope = [](gpass::attribute_map a = {}) { return node("RotaryEmbedding", 23, std::move(a)); };
  const i64 B = 2, H = 3, S = 5, D = 8;
  for (i64 inter : {i64{0}, i64{1}}) {
    INFO("interleaved " << inter);
    // 4-D (B, H, S, D) without position ids: caches (B, S, D / 2)
    differential(rope({{"interleaved", inter}}), {rnd({B, H, S, D}, 130), rnd({B, S, D / 2}, 131), rnd({B, S, D / 2}, 132)}, 1e-5, 1e-5);
    // with position ids (int64, int32): caches (max_pos, D / 2)
    const tensor pos = tensor::from<i64>({0, 3, 7, 15, 2, 1, 1, 9, 4, 0}, {B, S});
    const tensor pos32 = tensor::from<std::int32_t>({5, 3, 7, 15, 2, 0, 1, 9, 14, 6}, {B, S});
    differential(rope({{"interleaved", inter}}), {rnd({B, H, S, D}, 133), rnd({16, D / 2}, 134), rnd({16, D / 2}, 135), pos}, 1e-5, 1e-5);
    differential(rope({{"interleaved", inter}}), {rnd({B, H, S, D}, 136), rnd({16, D / 2}, 137), rnd({16, D / 2}, 138), pos32}, 1e-5,
                 1e-5);
    // 3-D (B, S, H * D) with num_heads
    differential(rope({{"interleaved", inter}, {"num_heads", H}}), {rnd({B, S, H * D}, 139), rnd({B, S, D / 2}, 140), rnd({B, S, D / 2}, 141)},
                 1e-5, 1e-5);
    differential(rope({{"interleaved", inter}, {"num_heads", H}}),
                 {rnd({B, S, H * D}, 142), rnd({16, D / 2}, 143), rnd({16, D / 2}, 144), pos}, 1e-5, 1e-5);
    // a partial rotation (rotary_embedding_dim < head size): the rest is copied
    for (i64 rot : {i64{2}, i64{4}, i64{6}}) {
      INFO("rotary_embedding_dim " << rot);
      differential(rope({{"interleaved", inter}, {"rotary_embedding_dim", rot}}),
                   {rnd({B, H, S, D}, 145), rnd({B, S, rot / 2}, 146), rnd({B, S, rot / 2}, 147)}, 1e-5, 1e-5);
      differential(rope({{"interleaved", inter}, {"rotary_embedding_dim", rot}, {"num_heads", i64{2}}}),
                   {rnd({B, S, 2 * D}, 148), rnd({16, rot / 2}, 149), rnd({16, rot / 2}, 150), pos}, 1e-5, 1e-5);
    }
    // the float types; an odd sequence and a long head
    for (dtype t : all_floats) {
      INFO("type " << to_string(t));
      const double tl = t == dtype::f16 ? 2e-3 : t == dtype::bf16 ? 1e-2 : t == dtype::f64 ? 1e-13 : 1e-5;
      differential(rope({{"interleaved", inter}}), {rnd({1, 2, 7, 64}, 151, t), rnd({1, 7, 32}, 152, t), rnd({1, 7, 32}, 153, t)}, tl, tl);
      differential(rope({{"interleaved", inter}, {"num_heads", i64{4}}, {"rotary_embedding_dim", i64{16}}}),
                   {rnd({2, 33, 4 * 32}, 154, t), rnd({40, 8}, 155, t), rnd({40, 8}, 156, t),
                    tensor::from<i64>(std::vector<i64>(66, 39), {2, 33})},
                   tl, tl);
    }
  }
  // empty tensors
  differential(rope(), {rnd({0, H, S, D}, 157), rnd({0, S, D / 2}, 158), rnd({0, S, D / 2}, 159)});
  differential(rope({{"num_heads", H}}), {rnd({B, 0, H * D}, 160), rnd({B, 0, D / 2}, 161), rnd({B, 0, D / 2}, 162)});
  // bad inputs
  const tensor x = rnd({B, H, S, D}, 163), c = rnd({B, S, D / 2}, 164);
  CHECK_THROWS_WITH_AS(run_gpu(rope({{"rotary_embedding_dim", i64{3}}}), {x, rnd({B, S, 1}, 165), rnd({B, S, 1}, 166)}),
                       doctest::Contains("must be even"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(rope({{"rotary_embedding_dim", i64{10}}}), {x, c, c}), doctest::Contains("larger than the head size"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(rope(), {rnd({B, S, H * D}, 167), c, c}), doctest::Contains("num_heads"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(rope({{"num_heads", i64{5}}}), {rnd({B, S, H * D}, 168), c, c}), doctest::Contains("not a multiple"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(rope(), {x, rnd({B, S, D}, 169), rnd({B, S, D}, 170)}), doctest::Contains("cos_cache and sin_cache"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(rope(), {x, c, rnd({B, S, D / 2}, 171, dtype::f64)}), doctest::Contains("element type"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(rope(), {x, rnd({16, D / 2}, 172), rnd({16, D / 2}, 173), tensor::from<i64>({0, 1, 2}, {1, 3})}),
                       doctest::Contains("position_ids"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(rope(), {rnd({B, S}, 174), c, c}), doctest::Contains("3-D or 4-D"), gpass::error);
  // a position id out of range: an error where the plan knows the ids (a constant), as on the CPU
  {
    const tensor bad = tensor::from<i64>({0, 3, 7, 16, 2, 1, 1, 9, 4, 0}, {B, S});
    auto n = rope();
    n.constant_inputs.resize(4);
    n.constant_inputs[3] = bad;
    CHECK_THROWS_WITH_AS(run_gpu(n, {x, rnd({16, D / 2}, 175), rnd({16, D / 2}, 176), bad}), doctest::Contains("out of range"), gpass::error);
    CHECK_THROWS_WITH_AS(run_cpu(n, {x, rnd({16, D / 2}, 175), rnd({16, D / 2}, 176), bad}), doctest::Contains("out of range"), gpass::error);
  }
}

TEST_CASE("cuda: Dropout (norm) in inference form matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  const tensor none;
  for (dtype t : all_floats) {
    INFO("type " << to_string(t));
    const tensor x = rnd({3, 33}, 180, t);
    // output 0 is the input; the mask all true (bool), or ones of the input's type before opset 10
    differential(node("Dropout", 13, {}, 2), {x}, 0, 0);
    differential(node("Dropout", 13, {}, 1), {x}, 0, 0);
    differential(node("Dropout", 12, {}, 2), {x, vals(dtype::f32, {}, {0.3})}, 0, 0);
    differential(node("Dropout", 7, {{"ratio", 0.3}}, 2), {x}, 0, 0);
    differential(node("Dropout", 10, {}, 2), {x}, 0, 0);
  }
  const auto out = run_gpu(node("Dropout", 13, {}, 2), {rnd({1000}, 181)});
  REQUIRE(out.size() == 2);
  CHECK(out[1].element_type() == dtype::bool_);
  const auto old = run_gpu(node("Dropout", 7, {}, 2), {rnd({5}, 182, dtype::f16)});
  CHECK(old[1].element_type() == dtype::f16);
  // a training_mode input that is false (a node that reached the kernel anyway): inference
  differential(node("Dropout", 13, {}, 2), {rnd({4, 7}, 183), none, tensor::scalar(false)}, 0, 0);
  // ratio 0 in training mode: the input unchanged
  differential(node("Dropout", 13, {}, 2), {rnd({4, 7}, 184), vals(dtype::f32, {}, {0.0}), tensor::scalar(true)}, 0, 0);
  // empty tensors
  differential(node("Dropout", 13, {}, 2), {rnd({0, 3}, 185)}, 0, 0);
  // training mode is not the CUDA kernel's; a ratio that is not a scalar fails as on the CPU
  CHECK_THROWS_WITH_AS(run_gpu(node("Dropout", 13, {}, 2), {rnd({4, 7}, 186), vals(dtype::f32, {}, {0.5}), tensor::scalar(true)}),
                       doctest::Contains("training"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(node("Dropout", 13, {}, 2), {rnd({4, 7}, 187), rnd({2}, 188)}), doctest::Contains("ratio must be a scalar"),
                       gpass::error);
}

}  // namespace gpass_test_cuda_norm
