// SPDX-License-Identifier: Apache-2.0
// The CUDA products, convolutions and pools: every generated source compiles to PTX for
// sm_80 and sm_90 (no GPU needed), and on a GPU each op matches the Eigen CPU kernel.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_linalg {

namespace {

using namespace gpass_test_cuda::prelude;

tensor rnd(std::vector<i64> s, std::uint64_t seed, dtype t = dtype::f32) { return random_tensor(t, std::move(s), -1, 1, seed); }

}  // namespace

TEST_CASE("cuda: the linalg kernels are registered") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  for (const char* op : {"MatMul", "Gemm", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "GlobalMaxPool",
                         "GlobalAveragePool", "GlobalLpPool"})
    CHECK(r.has("", op));
  for (const char* d : {"gpass", "com.microsoft"}) {
    CHECK(r.has(d, "FusedGemm"));
    CHECK(r.has(d, "FusedConv"));
  }
}

TEST_CASE("cuda: MatMul matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  const std::vector<std::pair<ints, ints>> cases{
      {{3, 4}, {4, 5}},          {{4}, {4, 5}},       {{3, 4}, {4}},          {{4}, {4}},
      {{2, 3, 4}, {4, 5}},       {{2, 3, 4}, {2, 4, 5}}, {{3, 4}, {2, 4, 5}}, {{2, 1, 3, 4}, {3, 4, 5}},
      {{1, 3, 4}, {2, 4, 5}},    {{7, 0}, {0, 3}},    {{0, 4}, {4, 3}},       {{64, 96}, {96, 33}}};
  std::uint64_t seed = 1;
  for (const auto& [a, b] : cases) {
    INFO("a " << gpass::shape::of(a).to_string() << " b " << gpass::shape::of(b).to_string());
    differential(node("MatMul", 13), {rnd(a, seed), rnd(b, seed + 1)}, 1e-4, 1e-5);
    seed += 2;
  }
  differential(node("MatMul", 13), {rnd({2, 8, 16}, 3, dtype::f64), rnd({16, 4}, 4, dtype::f64)}, 1e-10, 1e-12);
  differential(node("MatMul", 13), {rnd({8, 16}, 5, dtype::f16), rnd({16, 8}, 6, dtype::f16)}, 1e-2, 1e-2);
  differential(node("MatMul", 13), {rnd({8, 16}, 7, dtype::bf16), rnd({16, 8}, 8, dtype::bf16)}, 2e-2, 2e-2);
}

TEST_CASE("cuda: Gemm and FusedGemm match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const i64 M = 5, K = 7, N = 6;
  for (int ta : {0, 1})
    for (int tb : {0, 1}) {
      const tensor a = rnd(ta ? ints{K, M} : ints{M, K}, 10);
      const tensor b = rnd(tb ? ints{N, K} : ints{K, N}, 11);
      gpass::attribute_map at{{"transA", i64{ta}}, {"transB", i64{tb}}};
      differential(node("Gemm", 13, at), {a, b}, 1e-4, 1e-5);
      for (const ints& cs : {ints{N}, ints{1, N}, ints{M, N}, ints{M, 1}, ints{}, ints{1, 1}}) {
        INFO("C " << gpass::shape::of(cs).to_string());
        const tensor c = rnd(cs, 12);
        differential(node("Gemm", 13, at), {a, b, c}, 1e-4, 1e-5);
        auto at2 = at;
        at2["alpha"] = 0.5;
        at2["beta"] = 2.0;
        differential(node("Gemm", 13, at2), {a, b, c}, 1e-4, 1e-5);
        for (const char* act : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Clip"}) {
          auto f = at;
          f["activation"] = std::string(act);
          if (std::string(act) == "Clip") f["activation_params"] = std::vector<double>{-0.3, 0.4};
          differential(node("FusedGemm", 1, f, 1, "gpass"), {a, b, c}, 1e-4, 1e-5);
          differential(node("FusedGemm", 1, f, 1, "com.microsoft"), {a, b}, 1e-4, 1e-5);
        }
      }
    }
  differential(node("Gemm", 13), {rnd({4, 0}, 13), rnd({0, 3}, 14), rnd({3}, 15)}, 1e-5, 1e-6);
  differential(node("Gemm", 13), {rnd({4, 8}, 16, dtype::f64), rnd({8, 3}, 17, dtype::f64), rnd({3}, 18, dtype::f64)}, 1e-10, 1e-12);
  differential(node("Gemm", 13), {rnd({4, 8}, 16, dtype::f16), rnd({8, 3}, 17, dtype::f16), rnd({3}, 18, dtype::f16)}, 1e-2, 1e-2);
}

TEST_CASE("cuda: Conv and FusedConv match the CPU kernels") {
  GPASS_REQUIRE_GPU();
  struct conv_case {
    ints x, w;
    gpass::attribute_map a;
  };
  const std::vector<conv_case> cases{
      {{2, 3, 9, 9}, {4, 3, 3, 3}, {}},
      {{1, 4, 8, 7}, {6, 2, 3, 3}, {{"group", i64{2}}, {"pads", ints{1, 1, 1, 1}}}},
      {{1, 4, 10, 10}, {4, 1, 3, 3}, {{"group", i64{4}}, {"strides", ints{2, 2}}, {"pads", ints{1, 1, 1, 1}}}},
      {{1, 3, 11, 9}, {2, 3, 3, 2}, {{"dilations", ints{2, 1}}, {"strides", ints{1, 2}}}},
      {{1, 3, 10, 10}, {5, 3, 3, 3}, {{"auto_pad", std::string("SAME_UPPER")}, {"strides", ints{2, 2}}}},
      {{1, 3, 10, 10}, {5, 3, 4, 4}, {{"auto_pad", std::string("SAME_LOWER")}}},
      {{1, 3, 8, 8}, {2, 3, 3, 3}, {{"pads", ints{0, 1, 2, 0}}}},
      {{2, 3, 17}, {4, 3, 5}, {{"pads", ints{2, 2}}, {"strides", ints{2}}}},
      {{1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, {{"pads", ints{1, 1, 1, 1, 1, 1}}}},
  };
  std::uint64_t seed = 30;
  for (const auto& c : cases) {
    INFO("x " << gpass::shape::of(c.x).to_string() << " w " << gpass::shape::of(c.w).to_string());
    const tensor x = rnd(c.x, seed++), w = rnd(c.w, seed++), b = rnd({c.w[0]}, seed++);
    differential(node("Conv", 11, c.a), {x, w}, 1e-4, 1e-5);
    differential(node("Conv", 11, c.a), {x, w, b}, 1e-4, 1e-5);
    auto f = c.a;
    f["activation"] = std::string("Relu");
    const auto y = gpass_test_cuda::run_cpu(node("Conv", 11, c.a), {x, w, b})[0];
    const tensor z = rnd(y.sizes(), seed++);
    differential(node("FusedConv", 1, f, 1, "gpass"), {x, w, b, z}, 1e-4, 1e-5);
    f["activation"] = std::string("LeakyRelu");
    f["activation_params"] = std::vector<double>{0.1};
    differential(node("FusedConv", 1, f, 1, "com.microsoft"), {x, w, b}, 1e-4, 1e-5);
  }
  differential(node("Conv", 11), {rnd({1, 3, 6, 6}, 40, dtype::f64), rnd({2, 3, 3, 3}, 41, dtype::f64)}, 1e-10, 1e-12);
  differential(node("Conv", 11), {rnd({1, 8, 6, 6}, 42, dtype::f16), rnd({8, 8, 3, 3}, 43, dtype::f16)}, 2e-2, 2e-2);
}

TEST_CASE("cuda: ConvTranspose matches the CPU kernel (pads, output_padding, output_shape, auto_pad, groups, dilations)") {
  GPASS_GPU_OR_CPU_SIDE();
  struct case_ {
    ints x, w;
    gpass::attribute_map a;
  };
  const std::vector<case_> cases{
      {{1, 3, 5, 5}, {3, 2, 3, 3}, {}},
      {{2, 4, 6, 5}, {4, 3, 3, 3}, {{"strides", ints{2, 2}}, {"pads", ints{1, 1, 1, 1}}}},
      {{1, 4, 5, 5}, {4, 2, 3, 3}, {{"group", i64{2}}, {"strides", ints{3, 2}}, {"output_padding", ints{1, 1}}}},
      {{1, 2, 4, 6}, {2, 3, 3, 2}, {{"pads", ints{0, 1, 2, 0}}, {"strides", ints{2, 1}}}},
      {{1, 2, 5, 5}, {2, 2, 3, 3}, {{"dilations", ints{2, 2}}, {"strides", ints{2, 2}}}},
      {{1, 3, 4, 4}, {3, 2, 3, 3}, {{"strides", ints{2, 2}}, {"output_shape", ints{10, 9}}}},
      {{1, 3, 4, 4}, {3, 2, 3, 3}, {{"strides", ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}},
      {{1, 3, 4, 4}, {3, 2, 4, 4}, {{"strides", ints{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}}},
      {{2, 3, 7}, {3, 2, 4}, {{"strides", ints{3}}, {"pads", ints{1, 2}}}},
      {{1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, {{"strides", ints{2, 1, 2}}, {"output_padding", ints{1, 0, 1}}}},
  };
  std::uint64_t seed = 90;
  for (const auto& c : cases) {
    INFO("x " << gpass::shape::of(c.x).to_string() << " w " << gpass::shape::of(c.w).to_string());
    const i64 groups = c.a.count("group") ? c.a.at("group").as<i64>() : 1;
    const tensor x = rnd(c.x, seed++), w = rnd(c.w, seed++), b = rnd({c.w[1] * groups}, seed++);
    differential(node("ConvTranspose", 11, c.a), {x, w}, 1e-4, 1e-5);
    differential(node("ConvTranspose", 11, c.a), {x, w, b}, 1e-4, 1e-5);
  }
  differential(node("ConvTranspose", 11, {{"strides", ints{2, 2}}}), {rnd({1, 2, 4, 4}, 98, dtype::f64), rnd({2, 3, 3, 3}, 99, dtype::f64)},
               1e-10, 1e-12);
}

TEST_CASE("cuda: FusedConv with either epilogue (the cuDNN fused call, or conv then a generated kernel) matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  using choice = ex::cuda::options::epilogue;
  const tensor x = rnd({2, 8, 12, 12}, 80), w = rnd({16, 8, 3, 3}, 81), b = rnd({16}, 82), z = rnd({2, 16, 12, 12}, 83);
  gpass::attribute_map f{{"pads", ints{1, 1, 1, 1}}, {"activation", std::string("Relu")}};
  const auto n = node("FusedConv", 1, f, 1, "gpass");
  for (const auto& in : {std::vector<tensor>{x, w, b, z}, std::vector<tensor>{x, w, b}}) {
    const auto want = gpass_test_cuda::run_cpu(n, in)[0];
    for (choice c : {choice::timed, choice::cudnn_fused, choice::separate}) {
      INFO("epilogue " << static_cast<int>(c) << ", inputs " << in.size());
      ex::cuda g({.conv_epilogue = c});
      std::vector<ex::basic_value<ex::cuda_tensor>> dev;
      for (const auto& t : in) dev.emplace_back(g.upload(t, g.default_stream()));
      ex::kernel_node m = n;
      m.input_types.resize(in.size());
      for (int run = 0; run < 2; ++run) {  // the first run of a shape times both forms (timed)
        auto out = ex::run_kernel(g, g.kernels(), m, dev);
        gpass_test_cuda::check_close(g.download(out.at(0).tensor(), g.default_stream()), want, 1e-4, 1e-5);
      }
    }
  }
}

TEST_CASE("cuda: pooling matches the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const tensor x2 = rnd({2, 3, 9, 8}, 50), x1 = rnd({2, 3, 11}, 51), x3 = rnd({1, 2, 5, 6, 7}, 52);
  const std::vector<gpass::attribute_map> attrs{
      {{"kernel_shape", ints{3, 3}}},
      {{"kernel_shape", ints{2, 2}}, {"strides", ints{2, 2}}},
      {{"kernel_shape", ints{3, 3}}, {"strides", ints{2, 2}}, {"pads", ints{1, 1, 1, 1}}},
      {{"kernel_shape", ints{3, 3}}, {"strides", ints{2, 2}}, {"pads", ints{1, 0, 1, 2}}, {"count_include_pad", i64{1}}},
      {{"kernel_shape", ints{3, 2}}, {"strides", ints{2, 2}}, {"ceil_mode", i64{1}}},
      {{"kernel_shape", ints{3, 3}}, {"auto_pad", std::string("SAME_UPPER")}, {"strides", ints{2, 2}}},
      {{"kernel_shape", ints{2, 2}}, {"dilations", ints{2, 2}}},
  };
  for (const auto& a : attrs) {
    differential(node("AveragePool", 19, a), {x2}, 1e-5, 1e-6);
    auto lp = a;
    lp.erase("count_include_pad");
    differential(node("LpPool", 18, lp), {x2}, 1e-5, 1e-6);
    lp["p"] = i64{3};
    differential(node("LpPool", 18, lp), {x2}, 1e-5, 1e-6);
    differential(node("MaxPool", 12, a), {x2}, 0, 0);
    differential(node("MaxPool", 12, a, 2), {x2}, 0, 0);
  }
  auto a1 = gpass::attribute_map{{"kernel_shape", ints{3}}, {"strides", ints{2}}, {"pads", ints{1, 1}}};
  differential(node("AveragePool", 19, a1), {x1}, 1e-5, 1e-6);
  differential(node("MaxPool", 12, a1, 2), {x1}, 0, 0);
  auto a3 = gpass::attribute_map{{"kernel_shape", ints{2, 3, 2}}, {"pads", ints{1, 0, 1, 0, 1, 1}}};
  differential(node("AveragePool", 19, a3), {x3}, 1e-5, 1e-6);
  differential(node("MaxPool", 12, a3), {x3}, 0, 0);
  differential(node("LpPool", 18, a3), {x3}, 1e-5, 1e-6);
  differential(node("LpPool", 18, a1), {x1}, 1e-5, 1e-6);
  auto so = gpass::attribute_map{{"kernel_shape", ints{2, 2}}, {"storage_order", i64{1}}};
  differential(node("MaxPool", 12, so, 2), {x2}, 0, 0);
  for (const tensor& x : {x1, x2, x3, rnd({2, 5, 33, 40}, 53)}) {
    differential(node("GlobalAveragePool"), {x}, 1e-5, 1e-6);
    differential(node("GlobalMaxPool"), {x}, 0, 0);
    differential(node("GlobalLpPool", 2), {x}, 1e-5, 1e-6);
    differential(node("GlobalLpPool", 2, {{"p", i64{1}}}), {x}, 1e-5, 1e-6);
  }
  differential(node("LpPool", 18, {{"kernel_shape", ints{2, 2}}}), {rnd({1, 2, 6, 6}, 55, dtype::f64)}, 1e-10, 1e-12);
  differential(node("GlobalAveragePool"), {rnd({2, 3, 7, 7}, 54, dtype::f16)}, 1e-2, 1e-3);
}

}  // namespace gpass_test_cuda_linalg
