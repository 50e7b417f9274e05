// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of the transformer fusions (SkipLayerNormalization, its simplified form,
// ScaledDotProductAttention): registered, their sources compile (the NVRTC test of every
// generated source covers them), and on a GPU each matches the Eigen CPU kernel.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_transformer {

namespace {

using namespace gpass_test_cuda::prelude;

}  // namespace

TEST_CASE("cuda: the transformer kernels are registered") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  CHECK(r.has("com.microsoft", "SkipLayerNormalization"));
  CHECK(r.has("com.microsoft", "SkipSimplifiedLayerNormalization"));
  CHECK(r.has("gpass", "ScaledDotProductAttention"));
  CHECK(r.has("com.microsoft", "MultiHeadAttention"));
  // packed forms and the past state run where the CPU kernel does
  CHECK(r.serves(ex::kernel_query{.domain = "com.microsoft", .op = "MultiHeadAttention", .inputs = {dtype::f32, dtype::f32, dtype::f32}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.domain = "com.microsoft", .op = "MultiHeadAttention", .inputs = {dtype::f32}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.domain = "com.microsoft",
                                        .op = "MultiHeadAttention",
                                        .inputs = {dtype::f32, dtype::f32, dtype::f32, dtype::undefined, dtype::undefined, dtype::undefined,
                                                   dtype::f32, dtype::f32}}));
}

TEST_CASE("cuda: SkipLayerNormalization and SkipSimplifiedLayerNormalization match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto sln = [](std::size_t outputs) { return node("SkipLayerNormalization", 1, {{"epsilon", 1e-5}}, outputs, "com.microsoft"); };
  const auto ssln = [](std::size_t outputs) { return node("SkipSimplifiedLayerNormalization", 1, {{"epsilon", 1e-5}}, outputs, "com.microsoft"); };
  for (i64 H : {i64{64}, i64{1000}}) {
    INFO("hidden " << H);
    const tensor x = rnd({2, 5, H}, 1), g = rnd({H}, 3), b = rnd({H}, 4), bias = rnd({H}, 5);
    for (const ints& ss : {ints{2, 5, H}, ints{5, H}, ints{1, H}, ints{H}}) {
      INFO("skip " << gpass::shape::of(ss).to_string());
      const tensor s = rnd(ss, 2);
      differential(sln(4), {x, s, g, b, bias}, 1e-4, 1e-5);
      differential(sln(1), {x, s, g}, 1e-4, 1e-5);
      differential(sln(4), {x, s, g, tensor{}, bias}, 1e-4, 1e-5);
      differential(ssln(4), {x, s, g, bias}, 1e-4, 1e-5);
      differential(ssln(1), {x, s, g}, 1e-4, 1e-5);
    }
  }
  // the input broadcast to the skip's sizes, and a skip that does not repeat into the sum
  differential(sln(4), {rnd({1, 5, 32}, 6), rnd({2, 5, 32}, 7), rnd({32}, 8), rnd({32}, 9)}, 1e-4, 1e-5);
  differential(sln(1), {rnd({2, 5, 32}, 10), rnd({2, 1, 32}, 11), rnd({32}, 12)}, 1e-4, 1e-5);
  differential(sln(4), {rnd({3, 200}, 13, dtype::f16), rnd({3, 200}, 14, dtype::f16), rnd({200}, 15, dtype::f16), rnd({200}, 16, dtype::f16),
                        rnd({200}, 17, dtype::f16)},
               5e-3, 5e-3);
  differential(ssln(1), {rnd({3, 40}, 18, dtype::bf16), rnd({40}, 19, dtype::bf16), rnd({40}, 20, dtype::bf16)}, 2e-2, 2e-2);
  differential(sln(4), {rnd({3, 40}, 21, dtype::f64), rnd({3, 40}, 22, dtype::f64), rnd({40}, 23, dtype::f64)}, 1e-10, 1e-12);
}

TEST_CASE("cuda: ScaledDotProductAttention matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  const auto sdpa = [](double scale) { return node("ScaledDotProductAttention", 1, {{"scale", scale}}, 1, "gpass"); };
  const tensor q = rnd({2, 3, 7, 16}, 30), k = rnd({2, 3, 9, 16}, 31), v = rnd({2, 3, 9, 8}, 32);
  differential(sdpa(0.25), {q, k, v}, 1e-4, 1e-5);
  for (const ints& bs : {ints{2, 1, 1, 9}, ints{1, 1, 7, 9}, ints{9}, ints{2, 3, 7, 9}, ints{3, 1, 1}, ints{1}}) {
    INFO("bias " << gpass::shape::of(bs).to_string());
    differential(sdpa(0.25), {q, k, v, rnd(bs, 33, dtype::f32, -4, 4)}, 1e-4, 1e-5);
  }
  // a bias larger than Q in batch, heads and query rows: Q, K and V read broadcast
  differential(sdpa(0.5), {rnd({1, 1, 1, 16}, 34), rnd({1, 1, 9, 16}, 35), rnd({1, 1, 9, 8}, 36), rnd({2, 3, 5, 9}, 37)}, 1e-4, 1e-5);
  differential(sdpa(0.5), {rnd({2, 1, 4, 16}, 38), rnd({2, 1, 9, 16}, 39), rnd({2, 1, 9, 8}, 40), rnd({1, 4, 1, 9}, 41)}, 1e-4, 1e-5);
  // one batch and head; a query of one row; no keys
  differential(sdpa(1.0), {rnd({1, 1, 5, 8}, 42), rnd({1, 1, 6, 8}, 43), rnd({1, 1, 6, 4}, 44)}, 1e-4, 1e-5);
  differential(sdpa(1.0), {rnd({2, 2, 1, 8}, 45), rnd({2, 2, 6, 8}, 46), rnd({2, 2, 6, 4}, 47)}, 1e-4, 1e-5);
  differential(sdpa(1.0), {rnd({2, 2, 3, 8}, 48), rnd({2, 2, 0, 8}, 49), rnd({2, 2, 0, 4}, 50)}, 1e-4, 1e-5);
  // rows of over 512 scores (a block per row; shorter rows take a warp each)
  differential(sdpa(0.125), {rnd({1, 2, 3, 16}, 65), rnd({1, 2, 600, 16}, 66), rnd({1, 2, 600, 8}, 67), rnd({600}, 68)}, 1e-4, 1e-5);
  differential(sdpa(0.125), {rnd({1, 2, 3, 16}, 69), rnd({1, 2, 300, 16}, 70), rnd({1, 2, 300, 8}, 71)}, 1e-4, 1e-5);
  // BERT-base's sizes, and the other float types
  differential(sdpa(0.125), {rnd({2, 12, 128, 64}, 51), rnd({2, 12, 128, 64}, 52), rnd({2, 12, 128, 64}, 53), rnd({2, 1, 1, 128}, 54)},
               2e-4, 1e-5);
  differential(sdpa(0.25), {rnd({2, 2, 7, 16}, 55, dtype::f16), rnd({2, 2, 9, 16}, 56, dtype::f16), rnd({2, 2, 9, 8}, 57, dtype::f16)},
               1e-2, 5e-3);
  differential(sdpa(0.25), {rnd({2, 2, 7, 16}, 58, dtype::f64), rnd({2, 2, 9, 16}, 59, dtype::f64), rnd({2, 2, 9, 8}, 60, dtype::f64),
                            rnd({7, 9}, 61, dtype::f64)},
               1e-10, 1e-12);
  // bad inputs fail naming the node
  CHECK_THROWS_WITH_AS(gpass_test_cuda::run_gpu(sdpa(1.0), {rnd({2, 2, 7, 16}, 62), rnd({2, 2, 9, 8}, 63), rnd({2, 2, 9, 8}, 64)}),
                       doctest::Contains("do not agree"), gpass::error);
}

TEST_CASE("cuda: MultiHeadAttention matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  const i64 B = 2, S = 5, L = 7, N = 3, H = 8, D = N * H;
  auto mha = [](gpass::attribute_map extra) {
    gpass::attribute_map a{{"num_heads", std::int64_t{3}}};
    for (auto& [k, v] : extra) a[k] = v;
    return node("MultiHeadAttention", 1, std::move(a), 1, "com.microsoft");
  };
  const tensor q = rnd({B, S, D}, 70), k = rnd({B, L, D}, 71), v = rnd({B, L, D}, 72), bias = rnd({3 * D}, 73);
  const tensor none;
  differential(mha({}), {q, k, v}, 1e-4, 1e-5);
  differential(mha({}), {q, k, v, bias}, 1e-4, 1e-5);
  // a 0/1 key padding mask, key lengths, an attention bias, a scale
  const tensor mask01 = tensor::from<std::int32_t>({1, 1, 1, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1}, {B, L});
  differential(mha({}), {q, k, v, bias, mask01}, 1e-4, 1e-5);
  differential(mha({{"scale", 0.2}}), {q, k, v, none, tensor::from<std::int32_t>({4, 7}, {B}), rnd({1, N, S, L}, 74)}, 1e-4, 1e-5);
  differential(mha({}), {q, k, v, none, none, rnd({B, 1, S, L}, 75)}, 1e-4, 1e-5);
  // self-attention, unidirectional; per-head key and value of another head size
  differential(mha({{"unidirectional", std::int64_t{1}}}), {q, q, q, bias, none}, 1e-4, 1e-5);
  differential(mha({}), {q, rnd({B, N, L, H}, 76), rnd({B, N, L, 4}, 77)}, 1e-4, 1e-5);
  // half precision
  differential(mha({}), {rnd({B, S, D}, 78, dtype::f16), rnd({B, L, D}, 79, dtype::f16), rnd({B, L, D}, 80, dtype::f16)}, 1e-2, 5e-3);
}

}  // namespace gpass_test_cuda_transformer
