// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of the transformer fusions (SkipLayerNormalization, its simplified form,
// ScaledDotProductAttention, ONNX Runtime's MultiHeadAttention, Attention and
// EmbedLayerNormalization): registered, their sources compile (the NVRTC test of every
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
  CHECK(r.has("com.microsoft", "Attention"));
  CHECK(r.has("com.microsoft", "EmbedLayerNormalization"));
  // Attention with a shared past/present buffer (past_sequence_length) runs on the CPU
  CHECK(r.serves(ex::kernel_query{.domain = "com.microsoft", .op = "Attention", .inputs = {dtype::f32, dtype::f32, dtype::f32}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.domain = "com.microsoft",
                                        .op = "Attention",
                                        .inputs = {dtype::f32, dtype::f32, dtype::f32, dtype::int32, dtype::f32, dtype::undefined, dtype::int32}}));
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

TEST_CASE("cuda: ONNX Runtime's Attention matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  const i64 B = 2, S = 5, Hin = 16, N = 2;
  auto att = [](gpass::attribute_map extra, std::size_t outputs = 1) {
    gpass::attribute_map a{{"num_heads", std::int64_t{2}}};
    for (auto& [k, v] : extra) a[k] = v;
    return node("Attention", 1, std::move(a), outputs, "com.microsoft");
  };
  const tensor x = rnd({B, S, Hin}, 80, dtype::f32, -1, 1), w = rnd({Hin, 3 * 12}, 81, dtype::f32, -0.5, 0.5), bias = rnd({36}, 82);
  const tensor none;
  differential(att({}), {x, w}, 1e-4, 1e-5);
  differential(att({}, 2), {x, w, bias}, 1e-4, 1e-5);
  // every mask_index form: key ends, ends then starts, 0/1 per key, 0/1 per query and key
  differential(att({}), {x, w, bias, tensor::from<std::int32_t>({3, 5}, {B})}, 1e-4, 1e-5);
  differential(att({}), {x, w, bias, tensor::from<std::int32_t>({4, 5, 1, 0}, {2 * B})}, 1e-4, 1e-5);
  differential(att({{"mask_filter_value", -1e4}}), {x, w, bias, rnd({B, S}, 83, dtype::int32, 0, 2)}, 1e-4, 1e-5);
  differential(att({}), {x, w, bias, rnd({B, S, S}, 84, dtype::int32, 0, 2)}, 1e-4, 1e-5);
  // unidirectional after a past of 3 (present out), an attention bias, a scale
  const tensor past = rnd({2, B, N, 3, 6}, 85);
  differential(att({{"unidirectional", std::int64_t{1}}}, 2), {x, w, bias, none, past}, 1e-4, 1e-5);
  differential(att({{"scale", 0.3}}, 2), {x, w, bias, rnd({B, 8}, 86, dtype::int32, 0, 2), past, rnd({1, N, S, 8}, 87)}, 1e-4, 1e-5);
  differential(att({}), {x, w, none, none, none, rnd({B, 1, S, S}, 88)}, 1e-4, 1e-5);
  // qkv_hidden_sizes with a narrower V; half precision
  differential(att({{"qkv_hidden_sizes", std::vector<std::int64_t>{8, 8, 4}}}), {x, rnd({Hin, 20}, 89, dtype::f32, -0.5, 0.5), rnd({20}, 90)},
               1e-4, 1e-5);
  differential(att({}, 2), {rnd({B, S, Hin}, 91, dtype::f16, -1, 1), rnd({Hin, 36}, 92, dtype::f16, -0.5, 0.5), rnd({36}, 93, dtype::f16)},
               1e-2, 1e-2);
  // bad inputs fail as on the CPU
  gpass_test_cuda::fails_alike(att({}), {x, w, bias, tensor::from<std::int32_t>({1, 2, 3}, {3})}, "is not [B], [2B], [B, total] or [B, S, total]");
  gpass_test_cuda::fails_alike(att({}), {x, rnd({Hin, 35}, 94)}, "do not split into Q, K, V");
  gpass_test_cuda::fails_alike(att({{"qkv_hidden_sizes", std::vector<std::int64_t>{8, 8, 4}}}, 2),
                               {x, rnd({Hin, 20}, 95), rnd({20}, 96)}, "present needs equal Q, K and V head sizes");
}

TEST_CASE("cuda: EmbedLayerNormalization matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  const i64 B = 2, S = 6, H = 40, V = 30;
  auto eln = [](std::size_t outputs) { return node("EmbedLayerNormalization", 1, {{"epsilon", 1e-5}}, outputs, "com.microsoft"); };
  const tensor ids = rnd({B, S}, 100, dtype::int32, 0, V), seg = rnd({B, S}, 101, dtype::int32, 0, 2);
  const tensor word = rnd({V, H}, 102), pos = rnd({16, H}, 103), segemb = rnd({2, H}, 104), gamma = rnd({H}, 105), beta = rnd({H}, 106);
  const tensor mask = rnd({B, S}, 107, dtype::int32, 0, 2);
  const tensor none;
  differential(eln(3), {ids, seg, word, pos, segemb, gamma, beta, mask}, 1e-5, 1e-5);
  differential(eln(1), {ids, none, word, pos, none, gamma, beta}, 1e-5, 1e-5);
  // position ids per batch and shared; int64 ids; f16
  differential(eln(2), {ids, seg, word, pos, segemb, gamma, beta, none, rnd({B, S}, 108, dtype::int64, 0, 16)}, 1e-5, 1e-5);
  differential(eln(3), {rnd({B, S}, 109, dtype::int64, 0, V), none, word, pos, none, gamma, beta, mask, rnd({1, S}, 110, dtype::int32, 0, 16)},
               1e-5, 1e-5);
  differential(eln(3), {ids, seg, rnd({V, 512}, 111, dtype::f16), rnd({16, 512}, 112, dtype::f16), rnd({2, 512}, 113, dtype::f16),
                        rnd({512}, 114, dtype::f16), rnd({512}, 115, dtype::f16), mask},
               5e-3, 5e-3);
  // an id out of its table fails as on the CPU
  gpass_test_cuda::fails_alike(eln(1), {tensor::from<std::int32_t>({1, 2, 30}, {1, 3}), none, word, pos, none, gamma, beta},
                               "input id 30 is out of range [0, 30)");
  gpass_test_cuda::fails_alike(eln(1), {rnd({1, 20}, 116, dtype::int32, 0, V), none, word, pos, none, gamma, beta}, "position id 16 is out of range");
}

}  // namespace gpass_test_cuda_transformer
