// SPDX-License-Identifier: Apache-2.0
// The CUDA element-wise kernels: every generated source compiles to PTX for sm_80 and sm_90
// (no GPU needed), and on a GPU each op matches the Eigen CPU kernel.

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_elementwise {

namespace {

using namespace gpass_test_cuda::prelude;

}  // namespace

TEST_CASE("cuda: every generated kernel compiles with NVRTC for sm_80 and sm_90") {
  // every family's sources (the element-wise ones for every op and type they accept),
  // compiled on every core
  const auto sources = ex::cuda_generated_sources();
  std::atomic<std::size_t> next{0}, compiled{0};
  std::mutex mu;
  std::vector<std::string> failures;
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < sources.size();)
      for (int arch : {80, 90}) {
        try {
          ex::nvrtc_compile(sources[i].second, sources[i].first, arch, ex::nvrtc_target::ptx);
          ++compiled;
        } catch (const std::exception& e) {
          std::lock_guard lock(mu);
          failures.push_back(sources[i].first + " sm_" + std::to_string(arch) + ": " + e.what());
        }
      }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  for (const auto& f : failures) MESSAGE(f);
  CHECK(failures.empty());
  MESSAGE(compiled.load() << " generated kernels compiled to PTX (" << sources.size() << " sources, two architectures)");
  CHECK(compiled.load() == 2 * sources.size());
  CHECK(sources.size() > 600);
}

TEST_CASE("cuda: a generated source that does not compile is an error with NVRTC's log") {
  CHECK_THROWS_WITH_AS(ex::nvrtc_compile("extern \"C\" __global__ void k() { undeclared(); }", "bad.cu", 90, ex::nvrtc_target::ptx),
                       doctest::Contains("undeclared"), gpass::error);
}

TEST_CASE("cuda: element-wise ops match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto x = random_tensor(dtype::f32, {2, 3, 4}, -3, 3, 1);
  const auto y = random_tensor(dtype::f32, {2, 3, 4}, 0.5, 3, 2);
  const auto row = random_tensor(dtype::f32, {4}, -1, 1, 3);
  const auto col = random_tensor(dtype::f32, {3, 1}, -1, 1, 4);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"}) {
    differential(node(op), {x, y});
    differential(node(op), {x, row});
    differential(node(op), {col, x});
  }
  for (const char* op : {"Exp", "Tanh", "Sigmoid", "Relu", "Abs", "Neg", "Sqrt", "Erf", "Softplus", "Floor", "Round", "HardSwish"})
    differential(node(op), {op == std::string("Sqrt") ? y : x}, 2e-6, 1e-6);
  differential(node("LeakyRelu", 16, {{"alpha", 0.2}}), {x});
  differential(node("Swish", 24), {x}, 2e-6, 1e-6);
  differential(node("Swish", 24, {{"alpha", 40.0}}), {x}, 2e-6, 1e-6);  // exp of a large |alpha x|
  differential(node("Gelu", 20, {{"approximate", std::string("tanh")}}), {x}, 1e-5, 1e-6);
  differential(node("Gelu", 1, {}, 1, "gpass"), {x}, 1e-5, 1e-6);
  differential(node("BiasGelu", 1, {}, 1, "com.microsoft"), {x, row}, 1e-5, 1e-6);
  differential(node("FastGelu", 1, {}, 1, "com.microsoft"), {x, row}, 1e-5, 1e-6);
  differential(node("QuickGelu", 1, {}, 1, "com.microsoft"), {x}, 1e-5, 1e-6);
  differential(node("Sum"), {x, row, col});
  differential(node("Mean"), {x, y, row});
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) differential(node(op), {x, row});
  const auto c = random_tensor(dtype::bool_, {3, 4}, 0, 1, 5);
  differential(node("Where"), {c, x, row});
  differential(node("Clip", 13), {x, tensor::scalar(-1.0f), tensor::scalar(1.5f)});
  differential(node("Clip", 13), {x, tensor{}, tensor::scalar(0.5f)});
  differential(node("Cast", 21, {{"to", dtype::f16}}), {x});
  differential(node("Cast", 21, {{"to", dtype::int32}}), {x});
  const auto xi = random_tensor(dtype::int64, {5, 6}, -20, 20, 6);
  const auto yi = random_tensor(dtype::int64, {6}, 1, 7, 7);
  for (const char* op : {"Add", "Mul", "Div", "Max"}) differential(node(op), {xi, yi});
  differential(node("Mod"), {xi, yi});
  differential(node("Mod", 13, {{"fmod", std::int64_t{1}}}), {xi, yi});
  const auto h = random_tensor(dtype::f16, {7, 9}, -2, 2, 8);
  differential(node("Mul"), {h, h}, 1e-3, 1e-3);
}

TEST_CASE("cuda: gpass::FusedElementwise (a fusion group as one kernel) matches the CPU kernel") {
  GPASS_REQUIRE_GPU();
  const auto fused = [](std::vector<std::string> program) {
    return node("FusedElementwise", 1, {{"program", std::move(program)}}, 1, "gpass");
  };
  const auto x = random_tensor(dtype::f32, {4, 5, 6}, -3, 3, 11);
  const auto w = random_tensor(dtype::f32, {6}, -1, 1, 12);
  const auto b = random_tensor(dtype::f32, {5, 1}, -1, 1, 13);
  // what fuse-elementwise writes for x * w + b -> tanh, times sigmoid(x): inputs broadcast
  differential(fused({"Mul x0 x1", "Add s0 x2", "Tanh s1", "Sigmoid x0", "Mul s2 s3"}), {x, w, b}, 1e-5, 1e-6);
  differential(fused({"Relu x0", "Neg s0", "Exp s1"}), {x}, 1e-5, 1e-6);
  differential(fused({"Sub x0 x1", "Abs s0", "Sqrt s1", "Div s2 x1"}), {x, w}, 1e-5, 1e-6);
  differential(fused({"Sub x0 x1", "Mul s0 x2", "Reciprocal s1"}), {random_tensor(dtype::f64, {3, 7}, -2, 2, 15), random_tensor(dtype::f64, {7}, -1, 1, 16),
                                                   random_tensor(dtype::f64, {3, 1}, 0, 2, 17)},
               1e-12, 1e-14);
}

}  // namespace gpass_test_cuda_elementwise
