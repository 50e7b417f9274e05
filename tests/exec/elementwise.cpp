// SPDX-License-Identifier: Apache-2.0
// Tests of the Eigen CPU elementwise kernels (exec/eigen_cpu/kernels/elementwise.hpp).

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>

#include "kernel_fixture.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_elementwise {

namespace {

using gpass::tensor;
using gpass::exec::value;
namespace ex = gpass::exec;

using fixture = gpass_test_exec::kernel_fixture<ex::register_eigen_cpu_elementwise, 17>;
using gpass_test_exec::vals;

template <class T>
tensor t(std::vector<T> v, std::vector<std::int64_t> sizes) {
  return tensor::from<T>(std::move(v), std::move(sizes));
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(want[i])) {
      CHECK(got[i] == want[i]);
    } else {
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol));
    }
  }
}

}  // namespace

TEST_CASE("exec.elementwise.add_broadcast_paths") {
  fixture f;
  // same shape
  auto y = f.run1("Add", {t<float>({1, 2, 3, 4}, {2, 2}), t<float>({10, 20, 30, 40}, {2, 2})});
  CHECK(y.sizes() == std::vector<std::int64_t>{2, 2});
  CHECK(vals<float>(y) == std::vector<float>{11, 22, 33, 44});
  // scalar on either side
  CHECK(vals<float>(f.run1("Sub", {t<float>({1, 2, 3}, {3}), tensor::scalar(1.0f)})) == std::vector<float>{0, 1, 2});
  CHECK(vals<float>(f.run1("Sub", {tensor::scalar(1.0f), t<float>({1, 2, 3}, {3})})) == std::vector<float>{0, -1, -2});
  // row vector
  y = f.run1("Mul", {t<float>({1, 2, 3, 4, 5, 6}, {2, 3}), t<float>({1, 10, 100}, {3})});
  CHECK(vals<float>(y) == std::vector<float>{1, 20, 300, 4, 50, 600});
  // column vector
  y = f.run1("Add", {t<float>({1, 2, 3, 4, 5, 6}, {2, 3}), t<float>({10, 20}, {2, 1})});
  CHECK(vals<float>(y) == std::vector<float>{11, 12, 13, 24, 25, 26});
  // both sides broadcast (outer product) and rank extension
  y = f.run1("Add", {t<float>({1, 2}, {2, 1, 1}), t<float>({10, 20, 30}, {1, 3})});
  CHECK(y.sizes() == std::vector<std::int64_t>{2, 1, 3});
  CHECK(vals<float>(y) == std::vector<float>{11, 21, 31, 12, 22, 32});
  // generic middle broadcast [2,3,2] + [3,1]
  y = f.run1("Add", {t<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2}), t<float>({100, 200, 300}, {3, 1})});
  CHECK(vals<float>(y) == std::vector<float>{100, 101, 202, 203, 304, 305, 106, 107, 208, 209, 310, 311});
  // int types go through the scalar loops
  auto yi = f.run1("Add", {t<std::uint8_t>({250, 1}, {2}), t<std::uint8_t>({10, 2}, {2})});
  CHECK(vals<std::uint8_t>(yi) == std::vector<std::uint8_t>{4, 3});
  auto y32 = f.run1("Add", {t<std::int32_t>({std::numeric_limits<std::int32_t>::max()}, {1}), tensor::scalar<std::int32_t>(1)});
  CHECK(vals<std::int32_t>(y32) == std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min()});
  // f16
  auto yh = f.run1("Add", {t<Eigen::half>({Eigen::half(1.5f)}, {1}), t<Eigen::half>({Eigen::half(2.0f)}, {1})});
  CHECK(static_cast<float>(vals<Eigen::half>(yh)[0]) == 3.5f);
  // empty
  y = f.run1("Add", {t<float>({}, {0, 3}), t<float>({1, 2, 3}, {3})});
  CHECK(y.sizes() == std::vector<std::int64_t>{0, 3});
}

TEST_CASE("exec.elementwise.binary_errors") {
  fixture f;
  CHECK_THROWS_WITH_AS(f.run1("Add", {t<float>({1, 2, 3}, {3}), t<float>({1, 2}, {2})}),
                       doctest::Contains("cannot broadcast"), gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("Add", {t<float>({1}, {1}), t<double>({1}, {1})}), doctest::Contains("different element types"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("Div", {t<std::int32_t>({1, 2}, {2}), t<std::int32_t>({1, 0}, {2})}),
                       doctest::Contains("division by zero"), gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("Mod", {t<std::int64_t>({1}, {1}), t<std::int64_t>({0}, {1})}), doctest::Contains("by zero"),
                       gpass::error);
  CHECK_THROWS_AS(f.run1("And", {t<float>({1}, {1}), t<float>({1}, {1})}), gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("BitShift", {t<std::uint8_t>({1}, {1}), t<std::uint8_t>({1}, {1})}, {{"direction", std::string("UP")}}),
                       doctest::Contains("direction"), gpass::error);
}

TEST_CASE("exec.elementwise.div_mod_pow") {
  fixture f;
  CHECK(vals<std::int32_t>(f.run1("Div", {t<std::int32_t>({7, -7, 7, std::numeric_limits<std::int32_t>::min()}, {4}),
                                          t<std::int32_t>({2, 2, -2, -1}, {4})})) ==
        std::vector<std::int32_t>{3, -3, -3, std::numeric_limits<std::int32_t>::min()});
  CHECK(vals<float>(f.run1("Div", {t<float>({1, 3}, {2}), t<float>({2, 4}, {2})})) == std::vector<float>{0.5f, 0.75f});
  // Mod: Python sign by default, C fmod with fmod=1
  auto a = t<std::int32_t>({-4, 7, 5, -7}, {4});
  auto b = t<std::int32_t>({3, -3, 2, -2}, {4});
  CHECK(vals<std::int32_t>(f.run1("Mod", {a, b})) == std::vector<std::int32_t>{2, -2, 1, -1});
  CHECK(vals<std::int32_t>(f.run1("Mod", {a, b}, {{"fmod", std::int64_t{1}}})) == std::vector<std::int32_t>{-1, 1, 1, -1});
  check_close(vals<float>(f.run1("Mod", {t<float>({-4.5f, 7.5f}, {2}), t<float>({3, -3}, {2})}, {{"fmod", std::int64_t{1}}})),
              {-1.5f, 1.5f});
  CHECK(vals<std::uint8_t>(f.run1("Mod", {t<std::uint8_t>({7, 9}, {2}), tensor::scalar<std::uint8_t>(4)})) ==
        std::vector<std::uint8_t>{3, 1});
  // Pow with mixed types
  check_close(vals<float>(f.run1("Pow", {t<float>({2, 3}, {2}), t<std::int64_t>({3, 2}, {2})})), {8, 9});
  CHECK(vals<std::int64_t>(f.run1("Pow", {t<std::int64_t>({2, 3}, {2}), t<float>({3, 0.5f}, {2})})) ==
        std::vector<std::int64_t>{8, 1});
  CHECK(vals<std::int32_t>(f.run1("Pow", {t<std::int32_t>({2, -3, 2}, {3}), t<std::int32_t>({10, 3, -1}, {3})})) ==
        std::vector<std::int32_t>{1024, -27, 0});
  check_close(vals<float>(f.run1("Pow", {t<float>({4, 9}, {2}), tensor::scalar(0.5f)})), {2, 3});
  check_close(vals<float>(f.run1("Pow", {t<float>({2}, {1}), tensor::scalar<std::uint64_t>(4)})), {16});
}

TEST_CASE("exec.elementwise.bitshift_logic_compare") {
  fixture f;
  CHECK(vals<std::uint8_t>(f.run1("BitShift", {t<std::uint8_t>({1, 16, 255}, {3}), t<std::uint8_t>({1, 2, 9}, {3})},
                                  {{"direction", std::string("LEFT")}})) == std::vector<std::uint8_t>{2, 64, 0});
  CHECK(vals<std::uint32_t>(f.run1("BitShift", {t<std::uint32_t>({16, 4}, {2}), tensor::scalar<std::uint32_t>(2)},
                                   {{"direction", std::string("RIGHT")}})) == std::vector<std::uint32_t>{4, 1});
  auto p = t<bool>({true, true, false, false}, {2, 2});
  auto q = t<bool>({true, false}, {2});
  CHECK(vals<bool>(f.run1("And", {p, q})) == std::vector<bool>{true, false, false, false});
  CHECK(vals<bool>(f.run1("Or", {p, q})) == std::vector<bool>{true, true, true, false});
  CHECK(vals<bool>(f.run1("Xor", {p, q})) == std::vector<bool>{false, true, true, false});
  CHECK(vals<bool>(f.run1("Not", {q})) == std::vector<bool>{false, true});
  auto x = t<float>({1, 2, 3}, {3});
  auto y = tensor::scalar(2.0f);
  CHECK(vals<bool>(f.run1("Less", {x, y})) == std::vector<bool>{true, false, false});
  CHECK(vals<bool>(f.run1("LessOrEqual", {x, y})) == std::vector<bool>{true, true, false});
  CHECK(vals<bool>(f.run1("Greater", {x, y})) == std::vector<bool>{false, false, true});
  CHECK(vals<bool>(f.run1("GreaterOrEqual", {x, y})) == std::vector<bool>{false, true, true});
  CHECK(vals<bool>(f.run1("Equal", {x, y})) == std::vector<bool>{false, true, false});
  CHECK(vals<bool>(f.run1("Equal", {t<std::string>({"a", "b"}, {2}), tensor::scalar(std::string("b"))})) ==
        std::vector<bool>{false, true});
  CHECK(vals<bool>(f.run1("Equal", {t<std::int32_t>({1, 2}, {2}), t<std::int32_t>({1, 3}, {2})})) == std::vector<bool>{true, false});
}

TEST_CASE("exec.elementwise.variadic") {
  fixture f;
  auto a = t<float>({3, 2, 1}, {3});
  auto b = t<float>({1, 4, 4}, {3});
  auto c = t<float>({2, 5, 3}, {3});
  CHECK(vals<float>(f.run1("Max", {a, b, c})) == std::vector<float>{3, 5, 4});
  CHECK(vals<float>(f.run1("Min", {a, b, c})) == std::vector<float>{1, 2, 1});
  CHECK(vals<float>(f.run1("Sum", {a, b, c})) == std::vector<float>{6, 11, 8});
  CHECK(vals<float>(f.run1("Mean", {a, b, c})) == std::vector<float>{2, 11.0f / 3, 8.0f / 3});
  CHECK(vals<float>(f.run1("Max", {a})) == std::vector<float>{3, 2, 1});
  CHECK(vals<float>(f.run1("Mean", {a})) == std::vector<float>{3, 2, 1});
  // broadcast across all inputs
  auto y = f.run1("Sum", {t<float>({1, 2}, {2, 1}), t<float>({10, 20, 30}, {3}), tensor::scalar(100.0f)});
  CHECK(y.sizes() == std::vector<std::int64_t>{2, 3});
  CHECK(vals<float>(y) == std::vector<float>{111, 121, 131, 112, 122, 132});
  // NaN propagates
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto m = vals<float>(f.run1("Max", {t<float>({nan, 1}, {2}), t<float>({1, nan}, {2})}));
  CHECK(std::isnan(m[0]));
  CHECK(std::isnan(m[1]));
  CHECK(vals<std::uint64_t>(f.run1("Min", {t<std::uint64_t>({5, 1}, {2}), t<std::uint64_t>({2, 3}, {2})})) ==
        std::vector<std::uint64_t>{2, 1});
  CHECK_THROWS_AS(f.run1("Max", {a, t<double>({1}, {1})}), gpass::error);
}

TEST_CASE("exec.elementwise.unary_math") {
  fixture f;
  auto x = t<float>({-1.5f, -0.5f, 0.5f, 1.5f, 2.5f}, {5});
  CHECK(vals<float>(f.run1("Round", {x})) == std::vector<float>{-2, -0, 0, 2, 2});
  CHECK(vals<float>(f.run1("Floor", {x})) == std::vector<float>{-2, -1, 0, 1, 2});
  CHECK(vals<float>(f.run1("Ceil", {x})) == std::vector<float>{-1, -0, 1, 2, 3});
  CHECK(vals<float>(f.run1("Abs", {x})) == std::vector<float>{1.5f, 0.5f, 0.5f, 1.5f, 2.5f});
  CHECK(vals<float>(f.run1("Neg", {x})) == std::vector<float>{1.5f, 0.5f, -0.5f, -1.5f, -2.5f});
  CHECK(vals<float>(f.run1("Sign", {t<float>({-3, 0, 2}, {3})})) == std::vector<float>{-1, 0, 1});
  CHECK(vals<std::int32_t>(f.run1("Abs", {t<std::int32_t>({-3, 4}, {2})})) == std::vector<std::int32_t>{3, 4});
  CHECK(vals<std::int64_t>(f.run1("Sign", {t<std::int64_t>({-3, 0, 4}, {3})})) == std::vector<std::int64_t>{-1, 0, 1});
  auto p = t<float>({0.25f, 0.5f, 1.0f}, {3});
  check_close(vals<float>(f.run1("Exp", {p})), {std::exp(0.25f), std::exp(0.5f), std::exp(1.0f)});
  check_close(vals<float>(f.run1("Log", {p})), {std::log(0.25f), std::log(0.5f), 0});
  check_close(vals<float>(f.run1("Sqrt", {p})), {0.5f, std::sqrt(0.5f), 1});
  check_close(vals<float>(f.run1("Reciprocal", {p})), {4, 2, 1});
  check_close(vals<float>(f.run1("Sin", {p})), {std::sin(0.25f), std::sin(0.5f), std::sin(1.0f)});
  check_close(vals<float>(f.run1("Cos", {p})), {std::cos(0.25f), std::cos(0.5f), std::cos(1.0f)});
  check_close(vals<float>(f.run1("Tan", {p})), {std::tan(0.25f), std::tan(0.5f), std::tan(1.0f)});
  check_close(vals<float>(f.run1("Asin", {p})), {std::asin(0.25f), std::asin(0.5f), std::asin(1.0f)});
  check_close(vals<float>(f.run1("Acos", {p})), {std::acos(0.25f), std::acos(0.5f), 0});
  check_close(vals<float>(f.run1("Atan", {p})), {std::atan(0.25f), std::atan(0.5f), std::atan(1.0f)});
  check_close(vals<float>(f.run1("Sinh", {p})), {std::sinh(0.25f), std::sinh(0.5f), std::sinh(1.0f)});
  check_close(vals<float>(f.run1("Cosh", {p})), {std::cosh(0.25f), std::cosh(0.5f), std::cosh(1.0f)});
  check_close(vals<float>(f.run1("Tanh", {p})), {std::tanh(0.25f), std::tanh(0.5f), std::tanh(1.0f)});
  check_close(vals<float>(f.run1("Asinh", {p})), {std::asinh(0.25f), std::asinh(0.5f), std::asinh(1.0f)});
  check_close(vals<float>(f.run1("Acosh", {t<float>({1, 2}, {2})})), {0, std::acosh(2.0f)});
  check_close(vals<float>(f.run1("Atanh", {p})), {std::atanh(0.25f), std::atanh(0.5f), INFINITY});
  check_close(vals<float>(f.run1("Erf", {p})), {std::erf(0.25f), std::erf(0.5f), std::erf(1.0f)});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  auto s = t<float>({-inf, 0, inf, nan}, {4});
  CHECK(vals<bool>(f.run1("IsNaN", {s})) == std::vector<bool>{false, false, false, true});
  CHECK(vals<bool>(f.run1("IsInf", {s})) == std::vector<bool>{true, false, true, false});
  CHECK(vals<bool>(f.run1("IsInf", {s}, {{"detect_negative", std::int64_t{0}}})) == std::vector<bool>{false, false, true, false});
  CHECK(vals<bool>(f.run1("IsInf", {s}, {{"detect_positive", std::int64_t{0}}})) == std::vector<bool>{true, false, false, false});
  // double and f16 take their own paths
  CHECK(vals<double>(f.run1("Sqrt", {t<double>({4, 9}, {2})})) == std::vector<double>{2, 3});
  CHECK(static_cast<float>(vals<Eigen::half>(f.run1("Exp", {t<Eigen::half>({Eigen::half(0.0f)}, {1})}))[0]) == 1.0f);
  // below exp's underflow: 0, not the subnormal floor of Eigen's vectorized exp (2.9e-39 for
  // every argument under -88.38); the vector path needs a run of elements, so 16 of them
  {
    std::vector<float> lo(16, -200.0f), out;
    lo[1] = -100.0f;
    lo[2] = -80.0f;
    lo[3] = -1e30f;
    out = vals<float>(f.run1("Exp", {t<float>(lo, {16})}));
    CHECK(out[0] == 0.0f);
    CHECK(out[1] < 4e-39f);
    CHECK(out[2] == doctest::Approx(std::exp(-80.0)).epsilon(1e-5));
    CHECK(out[3] == 0.0f);
    std::vector<double> lod(16, -1000.0);
    CHECK(vals<double>(f.run1("Exp", {t<double>(lod, {16})}))[5] == 0.0);
  }
  CHECK_THROWS_AS(f.run1("Sqrt", {t<std::int32_t>({4}, {1})}), gpass::error);
}

TEST_CASE("exec.elementwise.activations") {
  fixture f;
  auto x = t<float>({-2, -0.5f, 0, 1, 3}, {5});
  CHECK(vals<float>(f.run1("Relu", {x})) == std::vector<float>{0, 0, 0, 1, 3});
  CHECK(vals<std::int32_t>(f.run1("Relu", {t<std::int32_t>({-2, 5}, {2})})) == std::vector<std::int32_t>{0, 5});
  check_close(vals<float>(f.run1("LeakyRelu", {x}, {{"alpha", 0.1}})), {-0.2f, -0.05f, 0, 1, 3});
  check_close(vals<float>(f.run1("LeakyRelu", {x})), {-0.02f, -0.005f, 0, 1, 3});
  check_close(vals<float>(f.run1("Elu", {x}, {{"alpha", 2.0}})), {2 * (std::exp(-2.0f) - 1), 2 * (std::exp(-0.5f) - 1), 0, 1, 3});
  const float sa = 1.67326319217681884765625f, sg = 1.05070102062225341796875f;
  check_close(vals<float>(f.run1("Selu", {x})), {sg * sa * (std::exp(-2.0f) - 1), sg * sa * (std::exp(-0.5f) - 1), 0, sg, 3 * sg});
  check_close(vals<float>(f.run1("Celu", {x}, {{"alpha", 2.0}})), {2 * (std::exp(-1.0f) - 1), 2 * (std::exp(-0.25f) - 1), 0, 1, 3});
  auto sig = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
  check_close(vals<float>(f.run1("Sigmoid", {x})), {sig(-2), sig(-0.5f), 0.5f, sig(1), sig(3)});
  check_close(vals<float>(f.run1("HardSigmoid", {x})), {0.1f, 0.4f, 0.5f, 0.7f, 1});
  check_close(vals<float>(f.run1("HardSwish", {x})), {-2 * (1.0f / 6), -0.5f * (0.5f - 0.5f / 6), 0, 1 * (0.5f + 1.0f / 6), 3});
  check_close(vals<float>(f.run1("Softplus", {x})), {std::log1p(std::exp(-2.0f)), std::log1p(std::exp(-0.5f)), std::log(2.0f),
                                                    std::log1p(std::exp(1.0f)), std::log1p(std::exp(3.0f))});
  check_close(vals<float>(f.run1("Softsign", {x})), {-2.0f / 3, -0.5f / 1.5f, 0, 0.5f, 0.75f});
  CHECK(vals<float>(f.run1("ThresholdedRelu", {x}, {{"alpha", 0.5}})) == std::vector<float>{0, 0, 0, 1, 3});
  check_close(vals<float>(f.run1("Shrink", {x}, {{"lambd", 1.0}, {"bias", 0.5}})), {-1.5f, 0, 0, 0, 2.5f});
  {  // Shrink on integers: a result past the type (int64's 2^63, a huge or NaN bias) converts
     // defined (NaN 0, saturating past int64, wrapping into narrower types); a cast was undefined
    constexpr std::int64_t i64max = std::numeric_limits<std::int64_t>::max();
    CHECK(vals<std::int64_t>(f.run1("Shrink", {t<std::int64_t>({i64max, 0, -5}, {3})}, {{"bias", 0.0}})) ==
          std::vector<std::int64_t>{i64max, 0, -5});
    CHECK(vals<std::int64_t>(f.run1("Shrink", {t<std::int64_t>({3, -3}, {2})}, {{"bias", 1e30}})) ==
          std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), i64max});
    CHECK(vals<std::int32_t>(f.run1("Shrink", {t<std::int32_t>({5, -5, 0}, {3})}, {{"bias", std::nan("")}})) ==
          std::vector<std::int32_t>{0, 0, 0});
    CHECK(vals<std::int8_t>(f.run1("Shrink", {t<std::int8_t>({100, -100}, {2})}, {{"bias", -100.0}})) ==
          std::vector<std::int8_t>{-56, 56});
  }
  check_close(vals<float>(f.run1("Gelu", {t<float>({0, 1}, {2})})), {0, 0.5f * (1 + std::erf(1 / std::sqrt(2.0f)))});
  check_close(vals<float>(f.run1("Gelu", {t<float>({1}, {1})}, {{"approximate", std::string("tanh")}})), {0.841192f}, 1e-4f);
  // PRelu: slope broadcast to X (unidirectional)
  auto px = t<float>({-1, 2, -3, 4, -5, 6}, {2, 3});
  check_close(vals<float>(f.run1("PRelu", {px, t<float>({0.1f, 0.2f, 0.3f}, {3})})), {-0.1f, 2, -0.9f, 4, -1.0f, 6});
  CHECK(vals<float>(f.run1("PRelu", {px, tensor::scalar(0.5f)})) == std::vector<float>{-0.5f, 2, -1.5f, 4, -2.5f, 6});
  CHECK_THROWS_AS(f.run1("PRelu", {t<float>({1, 2, 3}, {3}), t<float>({1, 2, 3, 4, 5, 6}, {2, 3})}), gpass::error);
  // opset 6: a 1-D slope of the channel count applies along axis 1
  auto x4 = t<float>({-1, -1, -1, -1}, {1, 2, 2, 1});
  CHECK(vals<float>(f.run1("PRelu", {x4, t<float>({0.5f, 2}, {2})}, {}, 6)) == std::vector<float>{-0.5f, -0.5f, -2, -2});
}

TEST_CASE("exec.elementwise.sign_selects_vectorized") {
  // LeakyRelu, Elu, PRelu and Exp choose per element by a comparison; over 1003 values (whole
  // packets and a tail) with NaN, +-inf, +-0 and values past exp's range among them, f32 and
  // f64, each equals the scalar rule: LeakyRelu and PRelu exactly (the sign of zero kept, NaN
  // stays NaN), Elu and Exp within 2 ulp-ish (a packet exp), Exp exactly 0 below its range.
  fixture f;
  auto check_type = [&]<class T>() {
    std::vector<T> xs;
    const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
    for (T v : {nan, inf, -inf, T(0), -T(0), T(-1000), T(-90), T(-87.5), T(88), T(710)}) xs.push_back(v);
    for (int i = 0; xs.size() < 1003; ++i) xs.push_back(T(std::sin(i * 0.37) * 6.0));
    const tensor x = t<T>(xs, {static_cast<std::int64_t>(xs.size())});
    auto same = [](T got, T want) {
      if (std::isnan(want)) return std::isnan(got);
      if (want == 0) return got == 0 && std::signbit(got) == std::signbit(want);
      return got == want;
    };
    auto close = [](T got, T want) {
      if (std::isnan(want)) return std::isnan(got);
      if (std::isinf(want) || want == 0) return got == want;
      return std::abs(got - want) <= T(4) * std::numeric_limits<T>::epsilon() * std::abs(want);
    };
    const auto leaky = vals<T>(f.run1("LeakyRelu", {x}, {{"alpha", 0.1}}));
    const auto elu = vals<T>(f.run1("Elu", {x}, {{"alpha", 0.5}}));
    const auto prelu = vals<T>(f.run1("PRelu", {x, t<T>({T(0.25)}, {1})}));
    const auto ex = vals<T>(f.run1("Exp", {x}));
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const T v = xs[i];
      INFO("x=" << v);
      CHECK(same(leaky[i], v >= 0 ? v : v * T(0.1)));
      CHECK(same(prelu[i], v < 0 ? v * T(0.25) : v));
      CHECK(close(elu[i], v >= 0 ? v : T(0.5) * (std::exp(v) - T(1))));
      const T lowest = std::is_same_v<T, float> ? T(-88.3762626647949) : T(-709.436139303104);
      CHECK(close(ex[i], v < lowest ? T(0) : std::exp(v)));
    }
  };
  check_type.template operator()<float>();
  check_type.template operator()<double>();
}

TEST_CASE("exec.elementwise.where_clip") {
  fixture f;
  auto c = t<bool>({true, false}, {2});
  auto y = f.run1("Where", {c, t<float>({1, 2, 3, 4}, {2, 2}), tensor::scalar(0.0f)});
  CHECK(vals<float>(y) == std::vector<float>{1, 0, 3, 0});
  auto ys = f.run1("Where", {t<bool>({true, false}, {2, 1}), tensor::scalar(std::string("a")), t<std::string>({"x", "y"}, {2})});
  CHECK(ys.sizes() == std::vector<std::int64_t>{2, 2});
  CHECK(vals<std::string>(ys) == std::vector<std::string>{"a", "a", "x", "y"});
  CHECK_THROWS_AS(f.run1("Where", {t<float>({1}, {1}), tensor::scalar(1.0f), tensor::scalar(1.0f)}), gpass::error);
  auto x = t<float>({-3, -1, 0, 2, 5}, {5});
  CHECK(vals<float>(f.run1("Clip", {x, tensor::scalar(-1.0f), tensor::scalar(2.0f)})) == std::vector<float>{-1, -1, 0, 2, 2});
  CHECK(vals<float>(f.run1("Clip", {x, value{}, tensor::scalar(1.0f)})) == std::vector<float>{-3, -1, 0, 1, 1});
  CHECK(vals<float>(f.run1("Clip", {x})) == std::vector<float>{-3, -1, 0, 2, 5});
  CHECK(vals<float>(f.run1("Clip", {x}, {{"min", -2.0}, {"max", 1.0}}, 6)) == std::vector<float>{-2, -1, 0, 1, 1});
  CHECK(vals<std::int8_t>(f.run1("Clip", {t<std::int8_t>({-100, 5, 100}, {3}), tensor::scalar<std::int8_t>(0)})) ==
        std::vector<std::int8_t>{0, 5, 100});
  CHECK_THROWS_AS(f.run1("Clip", {x, t<float>({1, 2}, {2})}), gpass::error);
  // Clip-6 bounds outside an integer type's range saturate (a cast of 1000 to int8 was undefined)
  CHECK(vals<std::int8_t>(f.run1("Clip", {t<std::int8_t>({-100, 5, 100}, {3})}, {{"min", -1000.0}, {"max", 1000.0}}, 6)) ==
        std::vector<std::int8_t>{-100, 5, 100});
  CHECK(vals<std::int8_t>(f.run1("Clip", {t<std::int8_t>({-100, 5, 100}, {3})}, {{"min", 1000.0}}, 6)) == std::vector<std::int8_t>{127, 127, 127});
  // NaN passes through Clip and Relu on the vectorized rows and the scalar tails alike
  std::vector<float> nv(19, std::numeric_limits<float>::quiet_NaN());
  for (float v : vals<float>(f.run1("Clip", {t<float>(nv, {19}), tensor::scalar(0.0f), tensor::scalar(1.0f)}))) CHECK(std::isnan(v));
  for (float v : vals<float>(f.run1("Relu", {t<float>(nv, {19})}))) CHECK(std::isnan(v));
  for (float v : vals<float>(f.run1("HardSigmoid", {t<float>(nv, {19})}))) CHECK(std::isnan(v));
}

TEST_CASE("exec.elementwise.cast") {
  fixture f;
  auto to = [](std::int64_t onnx_type) { return gpass::attribute_map{{"to", onnx_type}}; };
  CHECK(vals<std::int32_t>(f.run1("Cast", {t<float>({1.7f, -1.7f, 3}, {3})}, to(6))) == std::vector<std::int32_t>{1, -1, 3});
  CHECK(vals<bool>(f.run1("Cast", {t<float>({0, -0.0f, 2}, {3})}, to(9))) == std::vector<bool>{false, false, true});
  CHECK(vals<float>(f.run1("Cast", {t<bool>({true, false}, {2})}, to(1))) == std::vector<float>{1, 0});
  CHECK(vals<std::int8_t>(f.run1("Cast", {t<std::int16_t>({200, -1}, {2})}, to(3))) == std::vector<std::int8_t>{-56, -1});
  CHECK(vals<double>(f.run1("Cast", {t<Eigen::half>({Eigen::half(0.5f)}, {1})}, to(11))) == std::vector<double>{0.5});
  CHECK(static_cast<float>(vals<Eigen::half>(f.run1("Cast", {t<double>({0.25}, {1})}, to(10)))[0]) == 0.25f);
  // f32 -> bf16 rounds to nearest, ties to even (truncation would give 0x3ef5 0x3f80 0x3f80 0x3f80 0x7f7f)
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  auto bf = vals<Eigen::bfloat16>(f.run1(
      "Cast", {t<float>({0.48033667f, 1.00390625f, 1.01171875f, 1.0039072f, 3.4028235e38f, -0.0f, 1e-40f, inf, -inf, nan}, {10})},
      to(16)));
  std::vector<std::uint16_t> bits;
  for (auto b : bf) bits.push_back(Eigen::numext::bit_cast<std::uint16_t>(b));
  CHECK(bits[0] == 0x3ef6);  // above the half: up
  CHECK(bits[1] == 0x3f80);  // tie, even below: down
  CHECK(bits[2] == 0x3f82);  // tie, even above: up
  CHECK(bits[3] == 0x3f81);  // just above the tie: up
  CHECK(bits[4] == 0x7f80);  // past the largest bf16: infinity
  CHECK(bits[5] == 0x8000);  // negative zero keeps its sign
  CHECK(bits[6] == 0x0001);  // a subnormal rounds to the nearest bf16 subnormal
  CHECK(bits[7] == 0x7f80);
  CHECK(bits[8] == 0xff80);
  CHECK(std::isnan(static_cast<float>(bf[9])));
  // f32 -> f16 also rounds to nearest even: 1+2^-11 is a tie (down), 65520 rounds to infinity
  auto h = vals<Eigen::half>(f.run1("Cast", {t<float>({1.00048828125f, 1.00146484375f, 65520.0f, 6e-8f, nan}, {5})}, to(10)));
  CHECK(Eigen::numext::bit_cast<std::uint16_t>(h[0]) == 0x3c00);
  CHECK(Eigen::numext::bit_cast<std::uint16_t>(h[1]) == 0x3c02);
  CHECK(Eigen::numext::bit_cast<std::uint16_t>(h[2]) == 0x7c00);
  CHECK(Eigen::numext::bit_cast<std::uint16_t>(h[3]) == 0x0001);  // the smallest f16 subnormal
  CHECK(std::isnan(static_cast<float>(h[4])));
  // strings
  CHECK(vals<std::string>(f.run1("Cast", {t<float>({0.039187793f, 1.5f, -2}, {3})}, to(8))) ==
        std::vector<std::string>{"0.039187793", "1.5", "-2"});
  CHECK(vals<std::string>(f.run1("Cast", {t<std::int64_t>({-42}, {1})}, to(8))) == std::vector<std::string>{"-42"});
  auto sf = vals<float>(f.run1("Cast", {t<std::string>({"0.5", "1e2", "+INF", "-inf", "NaN", " 3 "}, {6})}, to(1)));
  CHECK(sf[0] == 0.5f);
  CHECK(sf[1] == 100.0f);
  CHECK(std::isinf(sf[2]));
  CHECK(sf[2] > 0);
  CHECK(sf[3] < 0);
  CHECK(std::isnan(sf[4]));
  CHECK(sf[5] == 3.0f);
  CHECK(vals<std::int64_t>(f.run1("Cast", {t<std::string>({"9007199254740993", "-7", "2.9"}, {3})}, to(7))) ==
        std::vector<std::int64_t>{9007199254740993LL, -7, 2});
  CHECK_THROWS_WITH_AS(f.run1("Cast", {t<std::string>({"hello"}, {1})}, to(1)), doctest::Contains("hello"), gpass::error);
  // a dtype attribute works too; NaN to int is 0
  CHECK(vals<std::int32_t>(f.run1("Cast", {t<float>({std::numeric_limits<float>::quiet_NaN()}, {1})},
                                  {{"to", gpass::dtype::int32}})) == std::vector<std::int32_t>{0});
  CHECK_THROWS_AS(f.run1("Cast", {t<float>({1}, {1})}, to(99)), gpass::error);
  // CastLike takes the type of input 1
  CHECK(vals<double>(f.run1("CastLike", {t<float>({1.5f}, {1}), t<double>({}, {0})})) == std::vector<double>{1.5});
}

TEST_CASE("exec.elementwise.identity_dropout") {
  fixture f;
  auto x = t<float>({1, 2, 3}, {3});
  auto y = f.run1("Identity", {x});
  CHECK(y == x);
  std::vector<tensor> seq{x, t<float>({4}, {1})};
  auto out = f.run("Identity", {value(seq)});
  REQUIRE(out[0].is_sequence());
  CHECK(out[0].sequence().size() == 2);
  CHECK(f.run("Identity", {value{}})[0].is_none());
  // Dropout: inference passes through, mask all true
  auto d = f.run("Dropout", {x}, {}, 13, 2);
  CHECK(d[0].tensor() == x);
  CHECK(vals<bool>(d[1].tensor()) == std::vector<bool>{true, true, true});
  d = f.run("Dropout", {x, tensor::scalar(0.0f), tensor::scalar(true)}, {}, 13, 2);
  CHECK(d[0].tensor() == x);
  d = f.run("Dropout", {x}, {{"ratio", 0.2}}, 7, 2);
  CHECK(vals<float>(d[1].tensor()) == std::vector<float>{1, 1, 1});
  // training mode: each element kept with probability 1 - ratio and scaled by 1 / (1 - ratio),
  // the mask saying which; the same seed draws the same mask
  std::vector<float> ones_v(20000, 1.0f);
  const tensor ones = t<float>(ones_v, {100, 200});
  auto train = [&](double seed) {
    return f.run("Dropout", {ones, tensor::scalar(0.3f), tensor::scalar(true)}, {{"seed", seed}}, 13, 2);
  };
  auto a = train(5.0), b = train(5.0), c = train(6.0);
  CHECK(a[0].tensor() == b[0].tensor());
  CHECK_FALSE(a[0].tensor() == c[0].tensor());
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < ones.size(); ++i) {
    const float v = a[0].tensor().data<float>()[i];
    const bool m = a[1].tensor().data<bool>()[i];
    CHECK((m ? std::abs(v - 1.0f / 0.7f) < 1e-6f : v == 0.0f));
    kept += m;
  }
  CHECK(std::abs(static_cast<double>(kept) / static_cast<double>(ones.size()) - 0.7) < 0.02);
  // opset 7's mask has the input's type; a ratio of 1 or more is an error
  auto old = f.run("Dropout", {ones}, {{"ratio", 0.5}, {"seed", 1.0}}, 7, 2);
  CHECK(old[0].tensor() == ones);  // before opset 12 there is no training mode here
  CHECK_THROWS_WITH_AS(f.run("Dropout", {x, tensor::scalar(1.0f), tensor::scalar(true)}, {}, 13, 1), doctest::Contains("[0, 1)"),
                       gpass::error);
}

TEST_CASE("exec.elementwise.quantize") {
  fixture f;
  auto x = t<float>({0, 2, 3, 1000, -254, -1000}, {6});
  auto q = f.run1("QuantizeLinear", {x, tensor::scalar(2.0f), tensor::scalar<std::uint8_t>(128)});
  CHECK(vals<std::uint8_t>(q) == std::vector<std::uint8_t>{128, 129, 130, 255, 1, 0});
  // round half to even: 3/2 = 1.5 -> 2, 5/2 = 2.5 -> 2
  q = f.run1("QuantizeLinear", {t<float>({3, 5, -3}, {3}), tensor::scalar(2.0f), tensor::scalar<std::int8_t>(0)});
  CHECK(vals<std::int8_t>(q) == std::vector<std::int8_t>{2, 2, -2});
  // default zero point: uint8 0
  CHECK(vals<std::uint8_t>(f.run1("QuantizeLinear", {t<float>({-1, 4}, {2}), tensor::scalar(1.0f)})) == std::vector<std::uint8_t>{0, 4});
  // per axis
  auto xa = t<float>({1, 2, 3, 4, 5, 6}, {1, 2, 3});
  q = f.run1("QuantizeLinear", {xa, t<float>({1, 2}, {2}), t<std::uint8_t>({0, 10}, {2})});
  CHECK(vals<std::uint8_t>(q) == std::vector<std::uint8_t>{1, 2, 3, 12, 12, 13});
  auto dq = f.run1("DequantizeLinear", {t<std::uint8_t>({1, 2, 3, 12, 12, 14}, {1, 2, 3}), t<float>({1, 2}, {2}),
                                         t<std::uint8_t>({0, 10}, {2})});
  CHECK(vals<float>(dq) == std::vector<float>{1, 2, 3, 4, 4, 8});
  dq = f.run1("DequantizeLinear", {t<std::int8_t>({-128, 0, 127}, {3}), tensor::scalar(0.5f), tensor::scalar<std::int8_t>(-1)});
  CHECK(vals<float>(dq) == std::vector<float>{-63.5f, 0.5f, 64});
  dq = f.run1("DequantizeLinear", {t<std::int32_t>({-4, 6}, {2}), tensor::scalar(0.5f)});
  CHECK(vals<float>(dq) == std::vector<float>{-2, 3});
  CHECK_THROWS_AS(f.run1("QuantizeLinear", {xa, t<float>({1, 2, 3}, {3})}), gpass::error);
  CHECK_THROWS_AS(f.run1("QuantizeLinear", {xa, tensor::scalar(0.0f)}), gpass::error);
  // a scalar x has no axis for per-axis or blocked parameters (its sizes were read past the end)
  CHECK_THROWS_WITH_AS(f.run1("QuantizeLinear", {tensor::scalar(1.0f), t<float>({1, 2}, {2})}),
                       doctest::Contains("per-axis quantization needs x of rank >= 1, x is a scalar"), gpass::error);
  CHECK_THROWS_WITH_AS(f.run1("DequantizeLinear", {tensor::scalar<std::int8_t>(1), tensor::scalar(2.0f)}, {{"block_size", std::int64_t{2}}}, 21),
                       doctest::Contains("blocked quantization needs x of rank >= 1"), gpass::error);
  // DynamicQuantizeLinear: range [min(0, x), max(0, x)] over 255 steps
  auto r = f.run("DynamicQuantizeLinear", {t<float>({0, 2, -3, -2.5f, 3.34f, -6}, {6})}, {}, 11, 3);
  const float scale = (3.34f + 6) / 255;
  CHECK(vals<float>(r[1].tensor())[0] == doctest::Approx(scale));
  CHECK(vals<std::uint8_t>(r[2].tensor())[0] == 164);
  CHECK(vals<std::uint8_t>(r[0].tensor()) == std::vector<std::uint8_t>{164, 219, 82, 96, 255, 0});
  r = f.run("DynamicQuantizeLinear", {t<float>({0, 0}, {2})}, {}, 11, 3);
  CHECK(vals<std::uint8_t>(r[0].tensor()) == std::vector<std::uint8_t>{0, 0});
}

TEST_CASE("exec.elementwise.legacy_broadcast") {
  fixture f;
  // opset 6 broadcast=1 axis=1: B of [3] aligns with dimension 1 of A [2,3,2]
  auto a = t<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2});
  auto y = f.run1("Add", {a, t<float>({100, 200, 300}, {3})}, {{"broadcast", std::int64_t{1}}, {"axis", std::int64_t{1}}}, 6);
  CHECK(vals<float>(y) == std::vector<float>{100, 101, 202, 203, 304, 305, 106, 107, 208, 209, 310, 311});
  CHECK_THROWS_AS(f.run1("Add", {a, t<float>({1, 2, 3}, {3})}, {{"broadcast", std::int64_t{1}}, {"axis", std::int64_t{2}}}, 6),
                  gpass::error);
  // an axis near INT64_MAX (axis + B's rank overflowed and passed the check)
  CHECK_THROWS_WITH_AS(f.run1("Add", {a, t<float>({1, 2, 3}, {3})},
                              {{"broadcast", std::int64_t{1}}, {"axis", std::numeric_limits<std::int64_t>::max()}}, 6),
                       doctest::Contains("legacy broadcast axis"), gpass::error);
}

TEST_CASE("exec.elementwise.parallel") {
  fixture serial(1), par(3);
  const std::int64_t n = 64, m = 4097;
  std::vector<float> av(static_cast<std::size_t>(n * m)), bv(static_cast<std::size_t>(m)), cv(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i % 101) - 50.0f;
  for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i % 7);
  for (std::size_t i = 0; i < cv.size(); ++i) cv[i] = static_cast<float>(i);
  auto a = t<float>(av, {n, m});
  auto b = t<float>(bv, {m});
  auto c = t<float>(cv, {n, 1});
  for (const char* op : {"Add", "Mul", "Max"}) {
    CAPTURE(op);
    auto s = serial.run1(op, {a, b});
    auto p = par.run1(op, {a, b});
    CHECK(s == p);
    // a row and a column broadcast together: rows split across threads mid-row
    auto s2 = serial.run1(op, {b, c});
    auto p2 = par.run1(op, {b, c});
    CHECK(s2 == p2);
    CHECK(vals<float>(s2)[static_cast<std::size_t>(3 * m + 5)] ==
          (std::string(op) == "Add" ? 3.0f + 5 : std::string(op) == "Mul" ? 3.0f * 5 : 5.0f));
  }
  auto s = serial.run1("Tanh", {a});
  CHECK(s == par.run1("Tanh", {a}));
  auto w = par.run1("Where", {par.run1("Less", {a, tensor::scalar(0.0f)}), a, c});
  CHECK(w == serial.run1("Where", {serial.run1("Less", {a, tensor::scalar(0.0f)}), a, c}));
  CHECK(vals<float>(w)[1] == -49.0f);  // a[1] = -49 < 0: taken from a
  CHECK(vals<float>(w)[60] == 0.0f);   // a[60] = 10: taken from c, row 0
  // an error in one thread's range reaches the caller
  std::vector<std::int32_t> zi(static_cast<std::size_t>(n * m), 1);
  zi.back() = 0;
  CHECK_THROWS_AS(par.run1("Div", {t<std::int32_t>(zi, {n, m}), t<std::int32_t>(zi, {n, m})}), gpass::error);
}

}  // namespace gpass_test_exec_elementwise
