// SPDX-License-Identifier: Apache-2.0
// update_globals: TensorFlow's optimizer steps on globals (ApplyGradientDescent / ApplyMomentum /
// ApplyAdam after variables-to-globals), values worked out by hand from TensorFlow's formulas.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/io/text.hpp>

namespace gpass_test_exec_update_globals {

namespace {
std::vector<float> values(const gpass::tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.size()); }
}  // namespace

TEST_CASE("exec.update_globals.momentum_nesterov_and_adam") {
  gpass::graph<> g = gpass::parse_text(R"(graph {"global:w" = tensor<f32[2]> [1.0, 2.0], "global:a" = tensor<f32[2]> [0.0, 0.0]} {
  %lr = Constant() {value = tensor<f32[]> [0.5]}
  %g = arg() {index = 0} -> (f32[*])
  %m = Constant() {value = tensor<f32[]> [0.9]}
  %u = update_globals(%lr, %g, %m) {rule = "momentum", use_nesterov = true, variables = ["w", "a"]}
  %r:0 = return(%u)
})");
  gpass::exec::eigen_cpu cpu;
  gpass::exec::plan p(g, cpu);
  auto out = p.run({gpass::tensor::from<float>({1, 1})});
  // accum = 0 * 0.9 + 1 = 1; Nesterov: w -= 1 * 0.5 + 1 * 0.9 * 0.5
  CHECK(values(out[0].tensor())[0] == doctest::Approx(0.05f));
  CHECK(values(*p.globals().get("w"))[1] == doctest::Approx(1.05f));
  CHECK(values(*p.globals().get("a")) == std::vector<float>{1, 1});
  // a gradient of another shape than the variable: an error naming the global
  CHECK_THROWS_WITH(p.run({gpass::tensor::from<float>({1, 1, 1})}), doctest::Contains("global 'w'"));

  gpass::graph<> adam = gpass::parse_text(R"(graph {"global:w" = tensor<f32[1]> [1.0], "global:m" = tensor<f32[1]> [0.0], "global:v" = tensor<f32[1]> [0.0]} {
  %b1p = Constant() {value = tensor<f32[]> [0.9]}
  %b2p = Constant() {value = tensor<f32[]> [0.999]}
  %lr = Constant() {value = tensor<f32[]> [0.1]}
  %b1 = Constant() {value = tensor<f32[]> [0.9]}
  %b2 = Constant() {value = tensor<f32[]> [0.999]}
  %eps = Constant() {value = tensor<f32[]> [0.0]}
  %g = arg() {index = 0} -> (f32[1])
  %u = update_globals(%b1p, %b2p, %lr, %b1, %b2, %eps, %g) {rule = "adam", variables = ["w", "m", "v"]}
  %r:0 = return(%u)
})");
  gpass::exec::plan q(adam, cpu);
  auto o = q.run({gpass::tensor::from<float>({2})});
  // first step: m = 0.2, v = 0.004, lr_t = 0.1 * sqrt(0.001) / 0.1; w -= lr_t * 0.2 / sqrt(0.004) = 0.1
  CHECK(values(o[0].tensor())[0] == doctest::Approx(0.9f));
  CHECK(values(*q.globals().get("m"))[0] == doctest::Approx(0.2f));
  CHECK(values(*q.globals().get("v"))[0] == doctest::Approx(0.004f));
}

}  // namespace gpass_test_exec_update_globals
