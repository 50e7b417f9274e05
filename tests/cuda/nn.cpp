// SPDX-License-Identifier: Apache-2.0
// The CUDA normalization kernels: every generated source compiles to PTX for sm_80 and sm_90
// (no GPU needed), and on a GPU each op matches the Eigen CPU kernel.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_nn {

namespace {

using namespace gpass_test_cuda::prelude;

}  // namespace

TEST_CASE("cuda: the nn kernels are registered") {
  ex::kernel_registry<ex::cuda> r;
  ex::register_cuda_kernels(r);
  for (const char* op : {"Softmax", "LogSoftmax", "BatchNormalization", "LayerNormalization", "InstanceNormalization", "RNN", "GRU", "LSTM",
                         "LpNormalization", "MeanVarianceNormalization"})
    CHECK(r.has("", op));
}

TEST_CASE("cuda: Softmax and LogSoftmax match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const tensor x = rnd({2, 3, 5, 7}, 1), big = rnd({3, 1000}, 2, dtype::f32, -30, 30), s = tensor::scalar(1.5f);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (i64 axis : {-1, 0, 1, 2, 3}) {
      INFO(op << " axis " << axis);
      differential(node(op, 13, {{"axis", axis}}), {x}, 1e-5, 1e-6);
      differential(node(op, 11, {{"axis", axis}}), {x}, 1e-5, 1e-6);
    }
    differential(node(op, 13), {big}, 1e-5, 1e-6);
    differential(node(op, 11), {x}, 1e-5, 1e-6);
    differential(node(op, 13), {s}, 1e-5, 1e-6);
    differential(node(op, 13), {rnd({0, 4}, 3)}, 1e-5, 1e-6);
    differential(node(op, 13), {rnd({4, 33}, 4, dtype::f64)}, 1e-12, 1e-14);
    differential(node(op, 13), {rnd({4, 33}, 5, dtype::f16)}, 2e-3, 2e-3);
    differential(node(op, 13, {{"axis", i64{0}}}), {rnd({5, 9}, 6, dtype::bf16)}, 1e-2, 1e-2);
  }
}

TEST_CASE("cuda: BatchNormalization matches the CPU kernel") {
  GPASS_GPU_OR_CPU_SIDE();
  for (const ints& s : {ints{2, 3}, ints{2, 3, 7}, ints{2, 4, 5, 6}, ints{1, 2, 3, 4, 5}}) {
    const i64 C = s[1];
    const tensor x = rnd(s, 10), sc = rnd({C}, 11), b = rnd({C}, 12), m = rnd({C}, 13), v = rnd({C}, 14, dtype::f32, 0.1, 2);
    differential(node("BatchNormalization", 15, {{"epsilon", 1e-3}}), {x, sc, b, m, v}, 1e-5, 1e-5);
    differential(node("BatchNormalization", 9), {x, sc, b, m, v}, 1e-5, 1e-5);
  }
  const tensor xh = rnd({2, 3, 4, 4}, 15, dtype::f16);
  differential(node("BatchNormalization", 15), {xh, rnd({3}, 16), rnd({3}, 17), rnd({3}, 18), rnd({3}, 19, dtype::f32, 0.1, 2)}, 2e-3, 2e-3);
  const tensor xd = rnd({2, 3, 4}, 20, dtype::f64);
  auto p = [](std::uint64_t seed, double lo) { return rnd({3}, seed, dtype::f64, lo, 2); };
  differential(node("BatchNormalization", 15), {xd, p(21, -2), p(22, -2), p(23, -2), p(24, 0.1)}, 1e-12, 1e-12);
}

TEST_CASE("cuda: LayerNormalization and InstanceNormalization match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const tensor x = rnd({2, 3, 4, 50}, 30);
  for (i64 axis : {-1, -2, 1, 0}) {
    INFO("axis " << axis);
    const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + 4 : axis);
    const ints norm(x.sizes().begin() + static_cast<std::ptrdiff_t>(a), x.sizes().end());
    const tensor sc = rnd(norm, 31), b = rnd(norm, 32);
    differential(node("LayerNormalization", 17, {{"axis", axis}, {"epsilon", 1e-4}}, 3), {x, sc, b}, 1e-4, 1e-5);
    differential(node("LayerNormalization", 17, {{"axis", axis}}, 1), {x, sc}, 1e-4, 1e-5);
  }
  // Scale and B that broadcast to the normalized dimensions
  differential(node("LayerNormalization", 17, {{"axis", i64{2}}}, 3), {x, rnd({50}, 33), rnd({1, 50}, 34)}, 1e-4, 1e-5);
  differential(node("LayerNormalization", 17, {}, 3), {rnd({7, 300}, 35, dtype::f16), rnd({300}, 36, dtype::f16), rnd({300}, 37, dtype::f16)},
               5e-3, 5e-3);
  differential(node("LayerNormalization", 17, {}, 3), {rnd({7, 30}, 38, dtype::f64), rnd({30}, 39, dtype::f64)}, 1e-10, 1e-12);
  for (const ints& s : {ints{2, 3, 40}, ints{2, 4, 5, 6}, ints{1, 2, 3}}) {
    const tensor xi = rnd(s, 40), sc = rnd({s[1]}, 41), b = rnd({s[1]}, 42);
    differential(node("InstanceNormalization", 6, {{"epsilon", 1e-3}}), {xi, sc, b}, 1e-4, 1e-5);
  }
}

}  // namespace gpass_test_cuda_nn

namespace gpass_test_cuda_nn {

TEST_CASE("cuda: RNN, GRU and LSTM match the CPU kernels (directions, layouts, states, lengths, peepholes, clip, activations)") {
  GPASS_GPU_OR_CPU_SIDE();
  using strings = std::vector<std::string>;
  struct layer {
    const char* op;
    i64 gates;
    std::size_t outputs;
  };
  std::uint64_t seed = 400;
  for (const layer& l : {layer{"RNN", 1, 2}, layer{"GRU", 3, 2}, layer{"LSTM", 4, 3}}) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      for (i64 layout : {0, 1}) {
        INFO(l.op << " " << dir << " layout " << layout);
        const i64 S = 5, B = 3, I = 4, H = 6, D = std::string(dir) == "bidirectional" ? 2 : 1, GH = l.gates * H;
        const ints xs = layout ? ints{B, S, I} : ints{S, B, I}, ss = layout ? ints{B, D, H} : ints{D, B, H};
        const tensor X = rnd(xs, seed++, dtype::f32, -1, 1), W = rnd({D, GH, I}, seed++, dtype::f32, -0.5, 0.5),
                     R = rnd({D, GH, H}, seed++, dtype::f32, -0.5, 0.5), Bi = rnd({D, 2 * GH}, seed++, dtype::f32, -0.5, 0.5),
                     h0 = rnd(ss, seed++, dtype::f32, -1, 1), c0 = rnd(ss, seed++, dtype::f32, -1, 1),
                     P = rnd({D, 3 * H}, seed++, dtype::f32, -0.5, 0.5);
        const tensor lens = I32({5, 2, 0});
        gpass::attribute_map a{{"hidden_size", H}, {"direction", std::string(dir)}, {"layout", layout}};
        const bool lstm = l.gates == 4;
        // the minimal form, then every input
        differential(node(l.op, 14, a, l.outputs), {X, W, R}, 1e-4, 1e-5);
        std::vector<tensor> all{X, W, R, Bi, lens, h0};
        if (lstm) all.insert(all.end(), {c0, P});
        differential(node(l.op, 14, a, l.outputs), all, 1e-4, 1e-5);
        if (l.gates == 3) {
          auto lbr = a;
          lbr["linear_before_reset"] = i64{1};
          differential(node(l.op, 14, lbr, l.outputs), all, 1e-4, 1e-5);
        }
        // other activations and a clip
        auto b = a;
        b["clip"] = 0.7;
        const strings acts = l.gates == 4 ? strings{"HardSigmoid", "LeakyRelu", "Softsign"}
                             : l.gates == 3 ? strings{"HardSigmoid", "Elu"}
                                            : strings{"ScaledTanh"};
        b["activations"] = acts;
        b["activation_alpha"] = std::vector<double>{0.3, 0.2};
        b["activation_beta"] = std::vector<double>{0.4};
        differential(node(l.op, 14, b, l.outputs), all, 1e-4, 1e-5);
      }
    }
  }
  // LSTM with input_forget; f64 and f16 layers
  differential(node("LSTM", 14, {{"hidden_size", i64{3}}, {"input_forget", i64{1}}}, 3),
               {rnd({4, 2, 3}, 420, dtype::f32, -1, 1), rnd({1, 12, 3}, 421, dtype::f32, -1, 1), rnd({1, 12, 3}, 422, dtype::f32, -1, 1)},
               1e-4, 1e-5);
  differential(node("GRU", 14, {{"hidden_size", i64{3}}}, 2),
               {rnd({4, 2, 3}, 423, dtype::f64, -1, 1), rnd({1, 9, 3}, 424, dtype::f64, -1, 1), rnd({1, 9, 3}, 425, dtype::f64, -1, 1)},
               1e-10, 1e-12);
  differential(node("LSTM", 14, {{"hidden_size", i64{4}}}, 3),
               {rnd({3, 2, 5}, 426, dtype::f16, -1, 1), rnd({1, 16, 5}, 427, dtype::f16, -1, 1), rnd({1, 16, 4}, 428, dtype::f16, -1, 1)},
               2e-2, 2e-3);
}

}  // namespace gpass_test_cuda_nn

namespace gpass_test_cuda_nn {

TEST_CASE("cuda: LpNormalization and MeanVarianceNormalization match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16}) {
    INFO("type " << gpass::to_string(t));
    const double tol = t == dtype::f16 ? 1e-3 : 1e-6;
    tensor x = rnd({2, 3, 4, 5}, 500, t, -2, 2);
    for (i64 axis : {-1, 0, 1, 2})
      for (i64 p : {1, 2}) differential(node("LpNormalization", 1, {{"axis", axis}, {"p", p}}), {x}, tol, tol);
    differential(node("LpNormalization", 1), {tensor(t, {3, 4})}, 0, 0);  // zero norms give 0
    differential(node("MeanVarianceNormalization", 13), {x}, tol, tol);
    for (const ints& axes : {ints{1}, ints{0, 1}, ints{2, 3}, ints{-1}, ints{0, 1, 2, 3}})
      differential(node("MeanVarianceNormalization", 13, {{"axes", axes}}), {x}, tol, tol);
  }
}

}  // namespace gpass_test_cuda_nn
