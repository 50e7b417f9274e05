// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear
// (`exec/cuda/kernels/quant.hpp`), and com.microsoft FusedMatMul (`exec/cuda/kernels/linalg.hpp`,
// on MatMul's cuBLASLt path): registered for the types they serve and declining the rest
// (which stay on the CPU), their sources compile (the NVRTC test of every generated source
// covers them), and on a GPU each matches the Eigen CPU kernel per tensor, per axis and
// blocked, on ragged shapes, saturating values, exact .5 ties, empty tensors and bad inputs.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_quant {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::run_cpu;
using gpass_test_cuda::run_gpu;

/// A float tensor of type `t` holding `v`.
tensor vals(dtype t, ints sizes, const std::vector<double>& v) {
  tensor r(t, std::move(sizes));
  REQUIRE(static_cast<std::size_t>(r.size()) == v.size());
  gpass::visit_dtype(t, [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) {
      for (std::size_t i = 0; i < v.size(); ++i) r.data<T>()[i] = v[i];
    } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
      for (std::size_t i = 0; i < v.size(); ++i) r.data<T>()[i] = static_cast<T>(static_cast<float>(v[i]));
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      for (std::size_t i = 0; i < v.size(); ++i) r.data<T>()[i] = static_cast<T>(v[i]);
    }
  });
  return r;
}

/// Values on a grid of quarters in [lo, hi) (type `t`): divided by a scale of 0.5 (or 0.25)
/// many land exactly on .5, the ties QuantizeLinear rounds to even.
tensor quarters(dtype t, ints sizes, std::uint64_t seed, double lo = -200, double hi = 200) {
  tensor r = rnd(std::move(sizes), seed, dtype::f64, lo, hi);
  std::vector<double> v(static_cast<std::size_t>(r.size()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::floor(r.data<double>()[i] * 4) / 4;
  return vals(t, r.sizes(), v);
}

/// Scales that are powers of two (exact in every float type) in [1/8, 2], of `sizes`.
tensor scales(dtype t, ints sizes, std::uint64_t seed) {
  tensor r = rnd(std::move(sizes), seed, dtype::f64, 0, 5);
  std::vector<double> v(static_cast<std::size_t>(r.size()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::ldexp(1.0, static_cast<int>(std::floor(r.data<double>()[i])) - 3);
  return vals(t, r.sizes(), v);
}

}  // namespace

TEST_CASE("cuda: the quant kernels are registered and decline what stays on the CPU") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  for (const char* op : {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}) CHECK(r.has("", op));
  // QuantizeLinear: x f32 / f16 / bf16 / f64 / int32, to 8- and 16-bit integers
  for (dtype x : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::int32}) {
    CHECK(r.serves(ex::kernel_query{.op = "QuantizeLinear", .inputs = {x, dtype::f32}}));
    for (dtype q : {dtype::uint8, dtype::int8, dtype::uint16, dtype::int16})
      CHECK(r.serves(ex::kernel_query{.op = "QuantizeLinear", .inputs = {x, dtype::f16, q}}));
  }
  CHECK_FALSE(r.serves(ex::kernel_query{.op = "QuantizeLinear", .inputs = {dtype::int8, dtype::f32}}));
  // 4-bit and float8 outputs, f8e8m0 scales: declined (the CPU kernel serves them)
  for (dtype q : {dtype::i4, dtype::u4, dtype::f8e4m3fn})
    CHECK_FALSE(r.serves(ex::kernel_query{.op = "QuantizeLinear", .inputs = {dtype::f32, dtype::f32, q}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.op = "QuantizeLinear", .inputs = {dtype::f32, dtype::f8e8m0}}));
  const gpass::attribute_map to_int4{{"output_dtype", i64{22}}}, to_i16{{"output_dtype", i64{5}}};
  CHECK_FALSE(r.serves(ex::kernel_query{.op = "QuantizeLinear", .attrs = &to_int4, .inputs = {dtype::f32, dtype::f32}}));
  CHECK(r.serves(ex::kernel_query{.op = "QuantizeLinear", .attrs = &to_i16, .inputs = {dtype::f32, dtype::f32}}));
  // DequantizeLinear: 8-, 16- and 32-bit integers; not 4-bit nor float8
  for (dtype q : {dtype::uint8, dtype::int8, dtype::uint16, dtype::int16, dtype::int32})
    for (dtype s : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64}) CHECK(r.serves(ex::kernel_query{.op = "DequantizeLinear", .inputs = {q, s}}));
  for (dtype q : {dtype::i4, dtype::u4, dtype::f8e4m3fn, dtype::f8e5m2})
    CHECK_FALSE(r.serves(ex::kernel_query{.op = "DequantizeLinear", .inputs = {q, dtype::f32}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.op = "DequantizeLinear", .inputs = {dtype::uint8, dtype::f8e8m0}}));
  // DynamicQuantizeLinear: f32 only
  CHECK(r.serves(ex::kernel_query{.op = "DynamicQuantizeLinear", .inputs = {dtype::f32}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.op = "DynamicQuantizeLinear", .inputs = {dtype::f16}}));
  // and their sources are in the list the NVRTC test compiles
  std::size_t n = 0;
  for (const auto& [name, src] : ex::cuda_generated_sources())
    for (const char* p : {"quantize_", "dequantize_", "dynamic_quantize_"})
      if (name.rfind(p, 0) == 0) ++n;
  CHECK(n == ex::cuda_quant::quant_generated_sources().size());
  CHECK(n >= 15);
}

TEST_CASE("cuda: QuantizeLinear (quant) matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  const auto ql = [](gpass::attribute_map a = {}) { return node("QuantizeLinear", 21, std::move(a)); };
  const tensor none;
  const tensor x = quarters(dtype::f32, {3, 7, 5}, 1);
  // per tensor: values past both ends of every type (saturation), ties at .5 (scale 0.5)
  for (dtype q : {dtype::uint8, dtype::int8, dtype::uint16, dtype::int16}) {
    INFO("type " << to_string(q));
    const tensor big = quarters(dtype::f32, {4, 33}, 2, -70000, 70000);
    differential(ql(), {big, vals(dtype::f32, {}, {0.5}), vals(q, {}, {3})}, 0, 0);
    differential(ql(), {x, vals(dtype::f32, {}, {0.5}), vals(q, {}, {0})}, 0, 0);
    differential(ql(), {x, vals(dtype::f32, {1}, {0.25}), vals(q, {1}, {1})}, 0, 0);
  }
  // no zero point: uint8, or the output_dtype
  differential(ql(), {x, vals(dtype::f32, {}, {0.5})}, 0, 0);
  differential(ql({{"output_dtype", i64{3}}}), {x, vals(dtype::f32, {}, {0.5})}, 0, 0);
  differential(ql({{"output_dtype", i64{5}}}), {x, vals(dtype::f32, {}, {0.25})}, 0, 0);
  // exact ties both ways, NaN and infinities
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  differential(ql({{"output_dtype", i64{3}}}), {vals(dtype::f32, {10}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, nan, inf, -inf, 127.5}),
                                                vals(dtype::f32, {}, {1})},
               0, 0);
  // per axis, every axis (negative too), zero points per channel
  for (i64 axis : {i64{0}, i64{1}, i64{2}, i64{-1}, i64{-3}}) {
    INFO("axis " << axis);
    const i64 c = x.sizes()[static_cast<std::size_t>(axis < 0 ? axis + 3 : axis)];
    differential(ql({{"axis", axis}}), {x, scales(dtype::f32, {c}, 3), random_tensor(dtype::int8, {c}, -20, 20, 4)}, 0, 0);
    differential(ql({{"axis", axis}}), {x, scales(dtype::f32, {c}, 5)}, 0, 0);
  }
  // blocked: block sizes that divide the axis and that leave a ragged last block
  for (i64 axis : {i64{0}, i64{1}, i64{2}}) {
    for (i64 block : {i64{1}, i64{2}, i64{3}, i64{7}}) {
      INFO("axis " << axis << ", block " << block);
      ints ps = x.sizes();
      const std::size_t a = static_cast<std::size_t>(axis);
      ps[a] = (ps[a] + block - 1) / block;
      differential(ql({{"axis", axis}, {"block_size", block}}), {x, scales(dtype::f32, ps, 6), random_tensor(dtype::uint8, ps, 100, 150, 7)},
                   0, 0);
    }
  }
  // other x and scale types (a library each: a few)
  differential(ql(), {quarters(dtype::f16, {6, 9}, 8, -300, 300), vals(dtype::f16, {}, {0.5}), vals(dtype::uint8, {}, {128})}, 0, 0);
  differential(ql({{"axis", i64{0}}}), {quarters(dtype::bf16, {6, 9}, 9), scales(dtype::f64, {6}, 10), random_tensor(dtype::int8, {6}, -5, 5, 11)},
               0, 0);
  differential(ql({{"axis", i64{1}}, {"block_size", i64{4}}}),
               {random_tensor(dtype::int32, {5, 9}, -100000, 100000, 12), scales(dtype::bf16, {5, 3}, 13), random_tensor(dtype::int16, {5, 3}, -9, 9, 14)},
               0, 0);
  differential(ql({{"output_dtype", i64{4}}}), {quarters(dtype::f64, {70000}, 15, -1000, 70000), vals(dtype::f32, {}, {0.5})}, 0, 0);
  // empty tensors
  differential(ql(), {quarters(dtype::f32, {0, 5}, 16), vals(dtype::f32, {}, {0.5}), vals(dtype::int8, {}, {1})}, 0, 0);
  differential(ql({{"axis", i64{1}}}), {quarters(dtype::f32, {0, 5}, 17), scales(dtype::f32, {5}, 18)}, 0, 0);
  // bad inputs fail as on the CPU
  CHECK_THROWS_AS(run_gpu(ql({{"axis", i64{1}}}), {x, scales(dtype::f32, {5}, 19)}), gpass::error);
  CHECK_THROWS_AS(run_cpu(ql({{"axis", i64{1}}}), {x, scales(dtype::f32, {5}, 19)}), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(ql({{"axis", i64{1}}, {"block_size", i64{2}}}), {x, scales(dtype::f32, {3, 3, 5}, 20)}),
                       doctest::Contains("blocked quantization"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(ql({{"output_dtype", i64{3}}}), {x, vals(dtype::f32, {}, {1}), vals(dtype::uint8, {}, {1})}),
                       doctest::Contains("output_dtype"), gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(ql({{"axis", i64{1}}}), {x, scales(dtype::f32, {7}, 21), vals(dtype::uint8, {2}, {1, 1})}),
                       doctest::Contains("y_zero_point has sizes"), gpass::error);
  CHECK_THROWS_AS(run_gpu(ql({{"block_size", i64{-1}}}), {x, vals(dtype::f32, {}, {1})}), gpass::error);
  // a zero scale: an error where the plan knows the scale (a constant), as on the CPU
  {
    auto n = ql();
    const tensor zero = vals(dtype::f32, {}, {0});
    n.constant_inputs.resize(2);
    n.constant_inputs[1] = zero;
    CHECK_THROWS_WITH_AS(run_gpu(n, {x, zero}), doctest::Contains("finite and non-zero"), gpass::error);
    CHECK_THROWS_WITH_AS(run_cpu(n, {x, zero}), doctest::Contains("finite and non-zero"), gpass::error);
  }
  (void)none;
}

TEST_CASE("cuda: DequantizeLinear (quant) matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  const auto dq = [](gpass::attribute_map a = {}) { return node("DequantizeLinear", 21, std::move(a)); };
  for (dtype q : {dtype::uint8, dtype::int8, dtype::uint16, dtype::int16, dtype::int32}) {
    INFO("type " << to_string(q));
    // the type's whole range (int32: beyond float's exact integers)
    const double lo = q == dtype::uint8 || q == dtype::uint16 ? 0 : q == dtype::int8 ? -128 : q == dtype::int16 ? -32768 : -2.0e9;
    const double hi = q == dtype::uint8 ? 256 : q == dtype::int8 ? 128 : q == dtype::uint16 ? 65536 : q == dtype::int16 ? 32768 : 2.0e9;
    const tensor x = random_tensor(q, {3, 7, 5}, lo, hi, 30);
    differential(dq(), {x, vals(dtype::f32, {}, {0.37}), vals(q, {}, {3})}, 0, 0);
    differential(dq(), {x, vals(dtype::f32, {1}, {0.37})}, 0, 0);
    for (i64 axis : {i64{0}, i64{1}, i64{2}, i64{-1}}) {
      INFO("axis " << axis);
      const i64 c = x.sizes()[static_cast<std::size_t>(axis < 0 ? axis + 3 : axis)];
      differential(dq({{"axis", axis}}), {x, rnd({c}, 31, dtype::f32, 0.01, 2), random_tensor(q, {c}, 0, 100, 32)}, 0, 0);
    }
  }
  // blocked, ragged last blocks, every axis
  const tensor x = random_tensor(dtype::int8, {4, 9, 6}, -128, 128, 33);
  for (i64 axis : {i64{0}, i64{1}, i64{2}, i64{-2}}) {
    for (i64 block : {i64{1}, i64{2}, i64{4}, i64{9}}) {
      INFO("axis " << axis << ", block " << block);
      ints ps = x.sizes();
      const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + 3 : axis);
      ps[a] = (ps[a] + block - 1) / block;
      differential(dq({{"axis", axis}, {"block_size", block}}), {x, rnd(ps, 34, dtype::f32, 0.01, 2), random_tensor(dtype::int8, ps, -9, 9, 35)},
                   0, 0);
    }
  }
  // scale types and output_dtype
  differential(dq(), {x, vals(dtype::f16, {}, {0.1})}, 0, 0);
  differential(dq({{"axis", i64{1}}}), {random_tensor(dtype::uint8, {5, 7}, 0, 256, 36), rnd({7}, 37, dtype::bf16, 0.01, 2)}, 0, 0);
  differential(dq({{"axis", i64{0}}}), {random_tensor(dtype::int16, {5, 7}, -30000, 30000, 38), rnd({5}, 39, dtype::f64, 0.01, 2)}, 0, 0);
  differential(dq({{"output_dtype", i64{16}}}), {random_tensor(dtype::uint8, {70000}, 0, 256, 40), vals(dtype::f32, {}, {0.3})}, 0, 0);
  // empty tensors
  differential(dq(), {random_tensor(dtype::uint8, {0, 4}, 0, 9, 41), vals(dtype::f32, {}, {0.5})}, 0, 0);
  // bad inputs fail as on the CPU
  CHECK_THROWS_WITH_AS(run_gpu(dq(), {x, vals(dtype::f32, {}, {1}), vals(dtype::uint8, {}, {1})}), doctest::Contains("x_zero_point has element type"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run_gpu(dq({{"axis", i64{1}}}), {x, rnd({9}, 42), random_tensor(dtype::int8, {3}, 0, 2, 43)}),
                       doctest::Contains("x_zero_point has sizes"), gpass::error);
  CHECK_THROWS_AS(run_gpu(dq({{"axis", i64{1}}}), {x, rnd({6}, 44)}), gpass::error);
  CHECK_THROWS_AS(run_cpu(dq({{"axis", i64{1}}}), {x, rnd({6}, 44)}), gpass::error);
  CHECK_THROWS_AS(run_gpu(dq({{"axis", i64{3}}}), {x, rnd({6}, 45)}), gpass::error);
}

TEST_CASE("cuda: DynamicQuantizeLinear (quant) matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  const auto dql = node("DynamicQuantizeLinear", 11, {}, 3);
  differential(dql, {rnd({3, 7, 5}, 50)}, 0, 0);
  differential(dql, {rnd({100003}, 51, dtype::f32, -7, 2)}, 0, 0);  // many blocks
  differential(dql, {rnd({33}, 52, dtype::f32, 0.5, 3)}, 0, 0);     // all positive: the range widened to 0
  differential(dql, {rnd({33}, 53, dtype::f32, -3, -0.5)}, 0, 0);   // all negative
  differential(dql, {vals(dtype::f32, {4}, {0, 0, 0, 0})}, 0, 0);   // a zero range: scale 0
  differential(dql, {vals(dtype::f32, {6}, {-127.5, 0, 127.5, 1.5, 2.5, -1})}, 0, 0);
  differential(dql, {rnd({0, 3}, 54)}, 0, 0);                       // empty
  differential(node("DynamicQuantizeLinear", 11, {}, 1), {rnd({9}, 55)}, 0, 0);
  CHECK_THROWS_AS(run_gpu(dql, {rnd({4}, 56, dtype::f64)}), gpass::error);
}

TEST_CASE("cuda: com.microsoft FusedMatMul (quant) is registered without transBatch") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  CHECK(r.has("com.microsoft", "FusedMatMul"));
  for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64})
    CHECK(r.serves(ex::kernel_query{.domain = "com.microsoft", .op = "FusedMatMul", .inputs = {t, t}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.domain = "com.microsoft", .op = "FusedMatMul", .inputs = {dtype::int32, dtype::int32}}));
  const gpass::attribute_map plain{{"alpha", 0.5}, {"transA", i64{1}}, {"transB", i64{1}}};
  const gpass::attribute_map tba{{"transBatchA", i64{1}}}, tbb{{"transBatchB", i64{1}}};
  CHECK(r.serves(ex::kernel_query{.domain = "com.microsoft", .op = "FusedMatMul", .attrs = &plain, .inputs = {dtype::f32, dtype::f32}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.domain = "com.microsoft", .op = "FusedMatMul", .attrs = &tba, .inputs = {dtype::f32, dtype::f32}}));
  CHECK_FALSE(r.serves(ex::kernel_query{.domain = "com.microsoft", .op = "FusedMatMul", .attrs = &tbb, .inputs = {dtype::f32, dtype::f32}}));
}

TEST_CASE("cuda: com.microsoft FusedMatMul (quant) matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  const auto fmm = [](i64 ta, i64 tb, double alpha) {
    return node("FusedMatMul", 1, {{"transA", ta}, {"transB", tb}, {"alpha", alpha}}, 1, "com.microsoft");
  };
  // (A, B) as stored; transA / transB swap the last two dimensions of an operand of rank >= 2
  struct c {
    ints a, b;
    i64 ta, tb;
  };
  const std::vector<c> cases{
      {{3, 4}, {4, 5}, 0, 0},          {{4, 3}, {4, 5}, 1, 0},          {{3, 4}, {5, 4}, 0, 1},       {{4, 3}, {5, 4}, 1, 1},
      {{4}, {5, 4}, 1, 1},             {{4, 3}, {4}, 1, 1},             {{2, 4, 3}, {4, 5}, 1, 0},    {{2, 3, 4}, {5, 4}, 0, 1},
      {{2, 4, 3}, {2, 5, 4}, 1, 1},    {{3, 4}, {2, 5, 4}, 0, 1},       {{2, 1, 4, 3}, {3, 4, 5}, 1, 0}, {{1, 4, 3}, {2, 5, 4}, 1, 1},
      {{7, 0}, {3, 0}, 0, 1},          {{0, 4}, {0, 3}, 1, 0},          {{4, 0}, {4, 3}, 1, 0},
      {{96, 64}, {33, 96}, 1, 1}};
  std::uint64_t seed = 60;
  for (const auto& k : cases) {
    INFO("a " << gpass::shape::of(k.a).to_string() << " b " << gpass::shape::of(k.b).to_string() << " transA " << k.ta << " transB " << k.tb);
    differential(fmm(k.ta, k.tb, 1.0), {rnd(k.a, seed), rnd(k.b, seed + 1)}, 1e-4, 1e-5);
    differential(fmm(k.ta, k.tb, -0.375), {rnd(k.a, seed), rnd(k.b, seed + 1)}, 1e-4, 1e-5);
    seed += 2;
  }
  differential(fmm(1, 0, 2.0), {rnd({2, 16, 8}, 90, dtype::f64), rnd({16, 4}, 91, dtype::f64)}, 1e-10, 1e-12);
  differential(fmm(0, 1, 0.5), {rnd({8, 16}, 92, dtype::f16), rnd({8, 16}, 93, dtype::f16)}, 1e-2, 1e-2);
  differential(fmm(1, 1, 0.5), {rnd({16, 8}, 94, dtype::bf16), rnd({8, 16}, 95, dtype::bf16)}, 2e-2, 2e-2);
  // bad inputs fail as on the CPU
  CHECK_THROWS_WITH_AS(run_gpu(fmm(1, 0, 1.0), {rnd({3, 4}, 96), rnd({4, 5}, 97)}), doctest::Contains("inner dimensions"), gpass::error);
  CHECK_THROWS_WITH_AS(run_cpu(fmm(1, 0, 1.0), {rnd({3, 4}, 96), rnd({4, 5}, 97)}), doctest::Contains("inner dimensions"), gpass::error);
  CHECK_THROWS_AS(run_gpu(fmm(0, 0, 1.0), {rnd({3, 4}, 98), rnd({4, 5}, 99, dtype::f64)}), gpass::error);
}

}  // namespace gpass_test_cuda_quant
