// SPDX-License-Identifier: Apache-2.0
// One plan of a small CNN on the real Eigen CPU kernels (Conv, Relu, Add, GlobalAveragePool,
// Flatten, Gemm, MatMul, Softmax; weights as Constant nodes, so the products use their
// pre-packed forms) run from 8 threads at once, each with its own inputs: every result must
// equal, bit for bit, the result of the same plan run alone on the same input.
#include <doctest/doctest.h>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>

#include "random_constants.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_concurrent {

namespace {

namespace ex = gpass::exec;
using i64 = std::int64_t;

using gpass_test_exec_util::constant;
using gpass_test_exec_util::random_floats;

// x: f32[4,3,16,16] -> conv3x3 8 + Relu -> conv3x3/2 16 + Relu -> conv1x1 16 + Add + Relu ->
// GlobalAveragePool -> Flatten -> Gemm (transB) 10 -> MatMul 10x10 -> Softmax.
gpass::graph<> small_cnn() {
  std::string t = "graph {\n  %x = arg() {index = 0} -> (f32[4,3,16,16])\n";
  t += constant("w1", {8, 3, 3, 3}, 1, 0.5f) + constant("b1", {8}, 2, 0.1f);
  t += constant("w2", {16, 8, 3, 3}, 3, 0.3f) + constant("b2", {16}, 4, 0.1f);
  t += constant("w3", {16, 16, 1, 1}, 5, 0.4f);
  t += constant("wf", {10, 16}, 6, 0.5f) + constant("bf", {10}, 7, 0.1f);
  t += constant("wm", {10, 10}, 8, 0.5f);
  t += R"(  %c1 = Conv(%x, %w1, %b1) {pads = [1, 1, 1, 1], kernel_shape = [3, 3]} -> (f32[4,8,16,16])
  %r1 = Relu(%c1) -> (f32[4,8,16,16])
  %c2 = Conv(%r1, %w2, %b2) {pads = [1, 1, 1, 1], strides = [2, 2]} -> (f32[4,16,8,8])
  %r2 = Relu(%c2) -> (f32[4,16,8,8])
  %c3 = Conv(%r2, %w3) -> (f32[4,16,8,8])
  %s3 = Add(%c3, %r2) -> (f32[4,16,8,8])
  %r3 = Relu(%s3) -> (f32[4,16,8,8])
  %gap = GlobalAveragePool(%r3) -> (f32[4,16,1,1])
  %flat = Flatten(%gap) {axis = 1} -> (f32[4,16])
  %fc = Gemm(%flat, %wf, %bf) {transB = 1} -> (f32[4,10])
  %mm = MatMul(%fc, %wm) -> (f32[4,10])
  %y = Softmax(%mm) {axis = 1} -> (f32[4,10])
  %r:0 = return(%y, %r1)
})";
  return gpass::parse_text(t);
}

std::vector<float> floats(const ex::value& v) {
  auto s = v.tensor().values<float>();
  return {s.begin(), s.end()};
}

}  // namespace

TEST_CASE("exec.plan.concurrent_runs_real_kernels") {
  const auto g = small_cnn();
  constexpr int threads = 8, inputs_per_thread = 3, reps = 20;
  for (int intra : {1, 2}) {
    INFO("intra-op threads: " << intra);
    ex::eigen_cpu cpu({.threads = intra});
    ex::plan<ex::eigen_cpu> p(g, cpu);
    CHECK(p.stats().planned_buffers > 0);  // the arena is in use (pooled per run)

    // each thread's inputs, and their results run alone, one after the other
    std::vector<std::vector<gpass::tensor>> in(threads);
    std::vector<std::vector<std::vector<std::vector<float>>>> alone(threads);
    for (int t = 0; t < threads; ++t)
      for (int k = 0; k < inputs_per_thread; ++k) {
        in[t].push_back(gpass::tensor::from<float>(random_floats(4 * 3 * 16 * 16, 100 + 10 * t + k, 1.f), {4, 3, 16, 16}));
        auto out = p.run({in[t].back()});
        REQUIRE(out.size() == 2);
        alone[t].push_back({floats(out[0]), floats(out[1])});
      }
    // sanity: the results are probabilities and differ between inputs
    for (int i = 0; i < 4; ++i) {
      double sum = 0;
      for (int j = 0; j < 10; ++j) sum += alone[0][0][0][static_cast<std::size_t>(i * 10 + j)];
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    }
    CHECK(alone[0][0][0] != alone[1][0][0]);

    std::vector<int> mismatches(threads, 0), runs(threads, 0);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (int r = 0; r < reps; ++r)
          for (int k = 0; k < inputs_per_thread; ++k) {
            const int kk = (k + r + t) % inputs_per_thread;
            auto out = p.run({in[t][static_cast<std::size_t>(kk)]});
            ++runs[t];
            if (floats(out[0]) != alone[t][kk][0] || floats(out[1]) != alone[t][kk][1]) ++mismatches[t];
          }
      });
    for (auto& th : pool) th.join();
    for (int t = 0; t < threads; ++t) {
      INFO("thread " << t);
      CHECK(runs[t] == reps * inputs_per_thread);
      CHECK(mismatches[t] == 0);
    }
  }
}

TEST_CASE("exec.plan.real_kernels_agree_across_thread_counts") {
  // the same CNN on 1 and 2 intra-op threads: equal up to rounding
  const auto g = small_cnn();
  ex::eigen_cpu one({.threads = 1}), two({.threads = 2});
  ex::plan<ex::eigen_cpu> p1(g, one), p2(g, two);
  const auto x = gpass::tensor::from<float>(random_floats(4 * 3 * 16 * 16, 7, 1.f), {4, 3, 16, 16});
  const auto a = p1.run({x}), b = p2.run({x});
  for (std::size_t o = 0; o < 2; ++o) {
    const auto va = floats(a[o]), vb = floats(b[o]);
    REQUIRE(va.size() == vb.size());
    for (std::size_t i = 0; i < va.size(); ++i) CHECK(std::abs(va[i] - vb[i]) <= 1e-5f * (1.f + std::abs(va[i])));
  }
}

}  // namespace gpass_test_exec_concurrent
