// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of ONNX Attention, TensorScatter and SwiGLU: registered for the nodes they
// take (no GPU needed), their sources compile (the NVRTC test of every generated source covers
// them), and on a GPU each matches the Eigen CPU kernel; without one each comparison runs its
// CPU side.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_attention {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::fails_alike;
using gpass_test_cuda::serves_in;

/// An Attention node at `opset` with `outputs` outputs.
ex::kernel_node attention(int opset, gpass::attribute_map attrs = {}, std::size_t outputs = 1) {
  return node("Attention", opset, std::move(attrs), outputs);
}

/// Q, K and V [B, H, S, D] (4-D) of type `t`, seeds from `seed`.
std::vector<tensor> qkv(ints q, ints k, ints v, std::uint64_t seed, dtype t = dtype::f32) {
  return {rnd(std::move(q), seed, t), rnd(std::move(k), seed + 1, t), rnd(std::move(v), seed + 2, t)};
}

}  // namespace

TEST_CASE("cuda: Attention, TensorScatter and SwiGLU are registered for the nodes they take") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  CHECK(r.has("", "Attention"));
  CHECK(r.has("", "TensorScatter"));
  CHECK(r.has("", "SwiGLU"));
  CHECK(serves_in("", "Attention", {dtype::f32, dtype::f32, dtype::f32}));
  CHECK(serves_in("", "Attention", {dtype::f16, dtype::f16, dtype::f16, dtype::bool_}));
  CHECK(serves_in("", "Attention", {dtype::bf16, dtype::bf16, dtype::bf16, dtype::bf16, dtype::bf16, dtype::bf16}));
  // V of another type than Q: the CPU kernel
  CHECK_FALSE(serves_in("", "Attention", {dtype::f16, dtype::f16, dtype::f32}));
  CHECK_FALSE(serves_in("", "Attention", {dtype::int32, dtype::int32, dtype::int32}));
  CHECK(serves_in("", "TensorScatter", {dtype::int8, dtype::int8, dtype::int64}));
  CHECK(serves_in("", "SwiGLU", {dtype::bf16, dtype::bf16}));
  CHECK_FALSE(serves_in("", "SwiGLU", {dtype::int32, dtype::int32}));
}

TEST_CASE("cuda: Attention matches the CPU kernel (layouts, grouped heads, caches)") {
  GPASS_GPU_OR_CPU_SIDE();
  // 4-D, one key/value head per query head; a scale given
  differential(attention(23), qkv({2, 3, 5, 8}, {2, 3, 7, 8}, {2, 3, 7, 6}, 1), 1e-4, 1e-5);
  differential(attention(23, {{"scale", 0.3}}), qkv({1, 2, 4, 16}, {1, 2, 9, 16}, {1, 2, 9, 16}, 4), 1e-4, 1e-5);
  // grouped-query heads: 6 query heads over 2 and over 1 key/value heads
  differential(attention(24), qkv({2, 6, 3, 4}, {2, 2, 5, 4}, {2, 2, 5, 3}, 7), 1e-4, 1e-5);
  differential(attention(24), qkv({1, 6, 3, 4}, {1, 1, 5, 4}, {1, 1, 5, 3}, 10), 1e-4, 1e-5);
  // 3-D inputs (batch, seq, heads * head) with grouped heads
  differential(attention(23, {{"q_num_heads", i64{4}}, {"kv_num_heads", i64{2}}}), qkv({2, 3, 4 * 5}, {2, 6, 2 * 5}, {2, 6, 2 * 3}, 13), 1e-4,
               1e-5);
  // past key and value, the present ones as outputs (4-D and 3-D), with the qk output
  const tensor pk = rnd({2, 2, 4, 5}, 16), pv = rnd({2, 2, 4, 3}, 17);
  differential(attention(23, {}, 4), {rnd({2, 2, 3, 5}, 18), rnd({2, 2, 2, 5}, 19), rnd({2, 2, 2, 3}, 20), tensor{}, pk, pv}, 1e-4, 1e-5);
  differential(attention(23, {{"q_num_heads", i64{4}}, {"kv_num_heads", i64{2}}, {"is_causal", i64{1}}}, 3),
               {rnd({2, 3, 20}, 21), rnd({2, 2, 10}, 22), rnd({2, 2, 6}, 23), tensor{}, pk, pv}, 1e-4, 1e-5);
  // a long row (a block of 256 threads), f64
  differential(attention(23), qkv({1, 2, 3, 32}, {1, 2, 700, 32}, {1, 2, 700, 16}, 24), 1e-4, 1e-5);
  differential(attention(23, {}, 4), qkv({2, 2, 3, 8}, {2, 2, 5, 8}, {2, 2, 5, 4}, 27, dtype::f64), 1e-10, 1e-12);
  // nothing to attend: no keys, an empty value head, an empty query
  differential(attention(23, {}, 4), qkv({1, 2, 3, 4}, {1, 2, 0, 4}, {1, 2, 0, 5}, 30), 1e-4, 1e-5);
  differential(attention(23, {}, 4), qkv({1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 0}, 33), 1e-4, 1e-5);
  differential(attention(23), qkv({1, 2, 0, 4}, {1, 2, 5, 4}, {1, 2, 5, 3}, 36), 1e-4, 1e-5);
}

TEST_CASE("cuda: Attention matches the CPU kernel (masks, softcap, qk outputs, precisions)") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto in = qkv({2, 2, 4, 8}, {2, 2, 6, 8}, {2, 2, 6, 5}, 40);
  auto with = [&](tensor mask) { return std::vector<tensor>{in[0], in[1], in[2], std::move(mask)}; };
  // boolean masks broadcast from each rank; one shorter than the keys; a row with nothing open
  for (const ints& ms : {ints{6}, ints{4, 6}, ints{2, 1, 4, 6}, ints{2, 2, 4, 6}, ints{1, 2, 1, 4}}) {
    INFO("mask " << gpass::shape::of(ms).to_string());
    differential(attention(24, {}, 4), with(rnd(ms, 41, dtype::bool_)), 1e-4, 1e-5);
  }
  tensor closed(dtype::bool_, {4, 6});
  std::fill_n(closed.data<bool>(), 24, false);
  closed.data<bool>()[7] = true;  // row 1 sees key 1, the others nothing
  differential(attention(24, {{"qk_matmul_output_mode", i64{3}}}, 4), with(closed), 1e-4, 1e-5);
  // additive masks of Q's type and of int64, with -inf entries
  tensor add = rnd({4, 6}, 42, dtype::f32, -2, 2);
  add.data<float>()[3] = -std::numeric_limits<float>::infinity();
  for (i64 mode = 0; mode < 4; ++mode) differential(attention(23, {{"qk_matmul_output_mode", mode}}, 4), with(add), 1e-4, 1e-5);
  differential(attention(23, {}, 4), with(rnd({2, 1, 1, 6}, 43, dtype::int64, -3, 3)), 1e-4, 1e-5);
  differential(attention(24, {}, 4), with(tensor(dtype::bool_, {4, 0})), 1e-4, 1e-5);  // a mask of no keys: every key masked
  // causal with a mask; the sliding windows (25); softcap in each qk mode
  differential(attention(23, {{"is_causal", i64{1}}}, 4), with(rnd({4, 6}, 44, dtype::bool_)), 1e-4, 1e-5);
  for (const auto& [l, r] : {std::pair<i64, i64>{1, 0}, {2, -1}, {-1, 1}, {0, 0}}) {
    INFO("window " << l << ", " << r);
    differential(attention(25, {{"left_window_size", l}, {"right_window_size", r}, {"is_causal", i64{r == 0 ? 1 : 0}}}, 4), in, 1e-4, 1e-5);
  }
  for (i64 mode = 0; mode < 4; ++mode)
    differential(attention(23, {{"softcap", 2.5}, {"qk_matmul_output_mode", mode}}, 4), with(add), 1e-4, 1e-5);
  // nonpad_kv_seqlen (24): the keys past each batch's length masked, the queries at its end
  differential(attention(24, {{"is_causal", i64{1}}}, 4), {in[0], in[1], in[2], tensor{}, tensor{}, tensor{}, I({6, 4})}, 1e-4, 1e-5);
  differential(attention(24), {in[0], in[1], in[2], tensor{}, tensor{}, tensor{}, I({0, 5})}, 1e-4, 1e-5);
  // f16 and bf16 (each step rounded), softmax_precision float and double, bf16's running sum
  const auto h = qkv({1, 4, 3, 16}, {1, 2, 40, 16}, {1, 2, 40, 8}, 50, dtype::f16);
  differential(attention(23, {}, 4), h, 2e-3, 2e-3);
  differential(attention(23, {{"softmax_precision", i64{1}}, {"softcap", 4.0}}, 4), h, 2e-3, 2e-3);
  const auto b = qkv({1, 4, 3, 16}, {1, 2, 40, 16}, {1, 2, 40, 8}, 53, dtype::bf16);
  differential(attention(23, {{"is_causal", i64{1}}}, 4), b, 1e-2, 1e-2);
  differential(attention(23, {{"softmax_precision", i64{16}}}, 4), qkv({1, 2, 3, 8}, {1, 2, 9, 8}, {1, 2, 9, 4}, 56), 1e-2, 1e-2);
  differential(attention(23, {{"softmax_precision", i64{11}}}, 4), in, 1e-4, 1e-5);
  differential(attention(23, {}, 4), {h[0], h[1], h[2], rnd({3, 40}, 59, dtype::f16, -1, 1)}, 2e-3, 2e-3);
}

TEST_CASE("cuda: Attention fails on bad inputs as the CPU kernel does") {
  const auto in = qkv({1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 3}, 60);
  fails_alike(attention(24), {in[0], in[1], in[2], tensor{}, tensor{}, tensor{}, I({6})}, "is out of range");
  fails_alike(attention(23), {in[0], in[1], in[2], rnd({1, 2, 3, 6}, 61, dtype::bool_)}, "longer than the total sequence length");
  fails_alike(attention(23), {in[0], in[1], in[2], rnd({3, 3, 5}, 62, dtype::bool_)}, "does not broadcast");
  fails_alike(attention(23), {in[0], rnd({1, 2, 5, 3}, 63), in[2]}, "head size");
  fails_alike(attention(23), {rnd({1, 3, 3, 4}, 64), in[1], in[2]}, "must be a multiple of the key/value heads");
  fails_alike(attention(23), {in[0], in[1], in[2], tensor{}, rnd({1, 2, 2, 4}, 65), tensor{}}, "given together");
}

TEST_CASE("cuda: TensorScatter matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto ts = [](std::string mode, i64 axis) { return node("TensorScatter", 24, {{"mode", mode}, {"axis", axis}}); };
  // the KV-cache form [B, H, L, D], updates along -2, linear and circular
  const tensor cache = rnd({3, 2, 8, 4}, 70), upd = rnd({3, 2, 3, 4}, 71);
  differential(ts("linear", -2), {cache, upd, I({0, 5, 2})});
  differential(ts("circular", -2), {cache, upd, I({6, 7, 0})});
  differential(ts("linear", 2), {cache, upd});  // no write indices: all at 0
  // other axes and element types
  differential(ts("circular", 1), {rnd({2, 5, 3}, 72, dtype::f16), rnd({2, 4, 3}, 73, dtype::f16), I({3, 1})});
  differential(ts("linear", -1), {rnd({2, 3, 6}, 74, dtype::int8, -100, 100), rnd({2, 3, 2}, 75, dtype::int8, -100, 100), I({4, 1})});
  differential(ts("linear", 3), {rnd({2, 2, 2, 5}, 76, dtype::f64), rnd({2, 2, 2, 5}, 77, dtype::f64)});
  differential(ts("linear", 1), {rnd({2, 4}, 78, dtype::bool_), rnd({2, 1}, 79, dtype::bool_), I({3, 0})});
}

TEST_CASE("cuda: TensorScatter fails on bad inputs as the CPU kernel does") {
  const auto ts = [](std::string mode) { return node("TensorScatter", 24, {{"mode", mode}}); };
  const tensor cache = rnd({2, 6, 4}, 80), upd = rnd({2, 3, 4}, 81);
  fails_alike(ts("linear"), {cache, upd, I({0, 4})}, "does not fit axis size");
  fails_alike(ts("circular"), {cache, upd, I({0, 6})}, "does not fit axis size");
  fails_alike(ts("linear"), {cache, upd, I({0})}, "values for batch");
  fails_alike(ts("linear"), {cache, rnd({2, 7, 4}, 82)}, "does not fit past_cache");
}

TEST_CASE("cuda: SwiGLU matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) {
    INFO(gpass::to_string(t));
    const double tol = t == dtype::bf16 ? 1e-2 : t == dtype::f16 ? 2e-3 : 1e-6;
    differential(node("SwiGLU", 28), {rnd({3, 1000}, 90, t), rnd({3, 1000}, 91, t)}, tol, tol);
    differential(node("SwiGLU", 28, {{"alpha", 1.702}}), {rnd({7}, 92, t, -30, 30), rnd({7}, 93, t)}, tol, tol);
  }
  differential(node("SwiGLU", 28), {rnd({0, 4}, 94), rnd({0, 4}, 95)});
}

}  // namespace gpass_test_cuda_attention
