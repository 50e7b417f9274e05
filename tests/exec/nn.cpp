// SPDX-License-Identifier: Apache-2.0
// Tests of the Eigen CPU nn kernels: softmax family, normalizations, recurrent layers,
// losses, GridSample and RoiAlign. Expected values are computed by hand or by small
// independent reference loops written here from the ONNX operator definitions.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/exec/eigen_cpu.hpp>

#include "kernel_fixture.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_nn {

namespace {

using gpass::attribute;
using gpass::attribute_map;
using gpass::tensor;
using gpass::exec::eigen_cpu;
using gpass::exec::kernel_node;
using gpass::exec::value;
using i64 = std::int64_t;

using nn_fixture = gpass_test_exec::kernel_fixture<gpass::exec::register_eigen_cpu_nn, 0>;
using gpass_test_exec::attrs;
using gpass_test_exec::node;

void check_close(const tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  REQUIRE(t.size() == static_cast<i64>(want.size()));
  for (std::size_t i = 0; i < want.size(); ++i) {
    double got = 0;
    if (t.element_type() == gpass::dtype::f32) got = t.values<float>()[i];
    else if (t.element_type() == gpass::dtype::f64) got = t.values<double>()[i];
    else if (t.element_type() == gpass::dtype::f16) got = static_cast<float>(t.values<Eigen::half>()[i]);
    else FAIL("unexpected dtype");
    INFO("element " << i);
    CHECK(got == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
  }
}

std::vector<double> softmax_ref(std::vector<double> x) {
  double m = x[0];
  for (double v : x) m = std::max(m, v);
  double s = 0;
  for (double& v : x) s += (v = std::exp(v - m));
  for (double& v : x) v /= s;
  return x;
}

std::vector<float> iota_f(i64 n, float scale = 1.0f, float shift = 0.0f) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = std::sin(static_cast<float>(i) * 0.37f) * scale + shift;
  return v;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

// ---- softmax family -------------------------------------------------------------------

TEST_CASE("exec.nn.softmax.last_axis_and_stability") {
  nn_fixture f;
  auto x = tensor::from<float>({1, 2, 3, 1000, 1001, 1002}, {2, 3});
  auto r = softmax_ref({1, 2, 3});
  check_close(f.run(node("Softmax", 13), {x})[0].tensor(), {r[0], r[1], r[2], r[0], r[1], r[2]});
  check_close(f.run(node("LogSoftmax", 13), {x})[0].tensor(),
              {std::log(r[0]), std::log(r[1]), std::log(r[2]), std::log(r[0]), std::log(r[1]), std::log(r[2])});
  check_close(f.run(node("Hardmax", 13), {x})[0].tensor(), {0, 0, 1, 0, 0, 1});
}

// a masked score (-1e9, as attention masks write it) has probability exactly 0, not a
// subnormal: along a contiguous row and down a column (axis 0 of [n, 24])
TEST_CASE("exec.nn.softmax.masked_scores_are_zero") {
  nn_fixture f;
  std::vector<float> v(48, 0.5f);
  for (std::size_t i = 0; i < v.size(); ++i)
    if (i % 3 == (i < 24 ? 0u : 1u)) v[i] = -1e9f;  // never both of a column
  v[8] = -95.0f;  // exp(-95.5) / sum is a subnormal: 0
  auto x = tensor::from<float>(v, {2, 24});
  for (i64 axis : {1, 0}) {
    const auto y = f.run(node("Softmax", 13, 1, attrs({{"axis", axis}})), {x})[0].tensor();
    const float* p = y.data<float>();
    for (std::size_t i = 0; i < v.size(); ++i) {
      CAPTURE(axis);
      CAPTURE(i);
      if (v[i] < -90.0f) CHECK(p[i] == 0.0f);
      else CHECK((p[i] == 0.0f || p[i] >= std::numeric_limits<float>::min()));
    }
  }
  // row 0 along axis 1: 15 equal scores of 24
  const auto y = f.run(node("Softmax", 13), {x})[0].tensor();
  CHECK(y.data<float>()[1] == doctest::Approx(1.0 / 15.0));
}

TEST_CASE("exec.nn.softmax.opset13_axis_vs_legacy_coercion") {
  nn_fixture f;
  // x: [2, 2, 2]; axis 1
  auto x = tensor::from<float>({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  // opset 13: along axis 1 only: pairs (0,2), (1,3), (4,6), (5,7)
  auto a = softmax_ref({0, 2});
  auto y13 = f.run(node("Softmax", 13, 1, attrs({{"axis", i64{1}}})), {x})[0].tensor();
  check_close(y13, {a[0], a[0], a[1], a[1], a[0], a[0], a[1], a[1]});
  // opset 11: coerced to [2, 4]: softmax over each row of 4
  auto b = softmax_ref({0, 1, 2, 3});
  auto y11 = f.run(node("Softmax", 11, 1, attrs({{"axis", i64{1}}})), {x})[0].tensor();
  check_close(y11, {b[0], b[1], b[2], b[3], b[0], b[1], b[2], b[3]});
  // legacy default axis is 1, new default is -1
  auto d11 = f.run(node("LogSoftmax", 11), {x})[0].tensor();
  check_close(d11, {std::log(b[0]), std::log(b[1]), std::log(b[2]), std::log(b[3]), std::log(b[0]), std::log(b[1]),
                    std::log(b[2]), std::log(b[3])});
  auto c = softmax_ref({0, 1});
  check_close(f.run(node("Softmax", 13), {x})[0].tensor(), {c[0], c[1], c[0], c[1], c[0], c[1], c[0], c[1]});
  // negative axis, axis 0 (inner > 1 path)
  check_close(f.run(node("Softmax", 13, 1, attrs({{"axis", i64{-3}}})), {x})[0].tensor(),
              {softmax_ref({0, 4})[0], softmax_ref({1, 5})[0], softmax_ref({2, 6})[0], softmax_ref({3, 7})[0],
               softmax_ref({0, 4})[1], softmax_ref({1, 5})[1], softmax_ref({2, 6})[1], softmax_ref({3, 7})[1]});
}

TEST_CASE("exec.nn.hardmax.first_maximum_wins") {
  nn_fixture f;
  auto x = tensor::from<float>({3, 1, 3, 2, 2, 2}, {2, 3});
  check_close(f.run(node("Hardmax", 13), {x})[0].tensor(), {1, 0, 0, 1, 0, 0});
  // along axis 0 (strided path): columns (3,2), (1,2), (3,2)
  check_close(f.run(node("Hardmax", 13, 1, attrs({{"axis", i64{0}}})), {x})[0].tensor(), {1, 0, 1, 0, 1, 0});
  // legacy: whole tensor flattened from axis 0
  check_close(f.run(node("Hardmax", 11, 1, attrs({{"axis", i64{0}}})), {x})[0].tensor(), {1, 0, 0, 0, 0, 0});
}

TEST_CASE("exec.nn.softmax.dtypes") {
  nn_fixture f;
  auto r = softmax_ref({0.5, -1, 2});
  check_close(f.run(node("Softmax", 13), {tensor::from<double>({0.5, -1, 2})})[0].tensor(), r, 1e-12);
  auto h = f.run(node("Softmax", 13), {tensor::from<Eigen::half>({Eigen::half(0.5f), Eigen::half(-1.0f), Eigen::half(2.0f)})})[0].tensor();
  CHECK(h.element_type() == gpass::dtype::f16);
  check_close(h, r, 2e-3);
  CHECK_THROWS_AS(f.run(node("Softmax", 13), {tensor::from<std::int32_t>({1, 2})}), gpass::error);
}

TEST_CASE("exec.nn.softmax.errors_and_empty") {
  nn_fixture f;
  auto x = tensor::from<float>({1, 2, 3, 4}, {2, 2});
  CHECK_THROWS_AS(f.run(node("Softmax", 13, 1, attrs({{"axis", i64{2}}})), {x}), gpass::error);
  CHECK_THROWS_AS(f.run(node("LogSoftmax", 11, 1, attrs({{"axis", i64{-3}}})), {x}), gpass::error);
  auto e = f.run(node("Softmax", 13), {tensor(gpass::dtype::f32, {0, 3})})[0].tensor();
  CHECK(e.sizes() == std::vector<i64>{0, 3});
}

TEST_CASE("exec.nn.softmax.parallel_matches_serial") {
  nn_fixture one(1), two(2);
  for (i64 axis : {i64{-1}, i64{1}, i64{0}}) {
    auto x = tensor::from<float>(iota_f(64 * 300 * 5, 10.0f), {64, 300, 5});
    for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
      auto n = node(op, 13, 1, attrs({{"axis", axis}}));
      auto a = one.run(n, {x})[0].tensor();
      auto b = two.run(n, {x})[0].tensor();
      CHECK(a == b);
    }
  }
  // rows sum to one
  auto x = tensor::from<float>(iota_f(512 * 1000, 5.0f), {512, 1000});
  auto y = two.run(node("Softmax", 13), {x})[0].tensor();
  auto v = y.values<float>();
  for (i64 r = 0; r < 512; r += 97) {
    double s = 0;
    for (i64 j = 0; j < 1000; ++j) s += v[static_cast<std::size_t>(r * 1000 + j)];
    CHECK(s == doctest::Approx(1.0).epsilon(1e-4));
  }
}

// ---- normalizations -------------------------------------------------------------------

TEST_CASE("exec.nn.batch_norm.inference") {
  nn_fixture f;
  // X [1, 2, 2]: channel 0 = {1, 2}, channel 1 = {3, 4}
  auto x = tensor::from<float>({1, 2, 3, 4}, {1, 2, 2});
  auto scale = tensor::from<float>({2, 1});
  auto bias = tensor::from<float>({0, 1});
  auto mean = tensor::from<float>({1, 3});
  auto var = tensor::from<float>({4, 1});
  auto n = node("BatchNormalization", 15, 1, attrs({{"epsilon", 0.0}}));
  auto y = f.run(n, {x, scale, bias, mean, var})[0].tensor();
  check_close(y, {0, 1, 1, 2});
  // opset 7 spatial = 0: per-activation statistics of shape [C, D]
  auto n7 = node("BatchNormalization", 7, 1, attrs({{"epsilon", 0.0}, {"spatial", i64{0}}}));
  auto y7 = f.run(n7, {x, tensor::from<float>({1, 1, 1, 1}, {2, 2}), tensor::from<float>({0, 0, 0, 0}, {2, 2}),
                       tensor::from<float>({1, 1, 1, 1}, {2, 2}), tensor::from<float>({1, 1, 1, 1}, {2, 2})})[0]
                .tensor();
  check_close(y7, {0, 1, 2, 3});
  CHECK_THROWS_AS(f.run(n, {x, tensor::from<float>({1, 2, 3}), bias, mean, var}), gpass::error);
  CHECK_THROWS_AS(f.run(n, {x, scale, bias, mean}), gpass::error);
}

TEST_CASE("exec.nn.batch_norm.training_mode") {
  nn_fixture f;
  // X [2, 1, 2]: channel 0 values {0, 2, 4, 6}: mean 3, var 5
  auto x = tensor::from<float>({0, 2, 4, 6}, {2, 1, 2});
  auto n = node("BatchNormalization", 15, 3, attrs({{"epsilon", 0.0}, {"momentum", 0.5}, {"training_mode", i64{1}}}));
  auto out = f.run(n, {x, tensor::from<float>({1}), tensor::from<float>({0}), tensor::from<float>({1}), tensor::from<float>({1})});
  const double s = std::sqrt(5.0);
  check_close(out[0].tensor(), {-3 / s, -1 / s, 1 / s, 3 / s});
  check_close(out[1].tensor(), {0.5 * 1 + 0.5 * 3});
  check_close(out[2].tensor(), {0.5 * 1 + 0.5 * 5});
}

TEST_CASE("exec.nn.instance_norm") {
  nn_fixture f;
  auto x = tensor::from<float>({1, 3, 4, 6}, {1, 2, 2});
  auto n = node("InstanceNormalization", 6, 1, attrs({{"epsilon", 0.0}}));
  auto y = f.run(n, {x, tensor::from<float>({2, 1}), tensor::from<float>({0, 5})})[0].tensor();
  check_close(y, {-2, 2, 4, 6});
  // epsilon keeps a constant channel finite
  auto c = f.run(node("InstanceNormalization", 6), {tensor::from<float>({7, 7}, {1, 1, 2}), tensor::from<float>({1}), tensor::from<float>({0.5f})})[0].tensor();
  check_close(c, {0.5, 0.5});
  CHECK_THROWS_AS(f.run(n, {x, tensor::from<float>({2}), tensor::from<float>({0})}), gpass::error);
}

TEST_CASE("exec.nn.layer_norm.outputs_and_axis") {
  nn_fixture f;
  auto x = tensor::from<float>({1, 3, 2, 2, 0, 4, 6, 6}, {2, 2, 2});
  auto scale = tensor::from<float>({1, 2, 1, 2}, {2, 2});
  auto bias = tensor::from<float>({0, 0, 1, 1}, {2, 2});
  auto n = node("LayerNormalization", 17, 3, attrs({{"axis", i64{1}}, {"epsilon", 0.0}}));
  auto out = f.run(n, {x, scale, bias});
  // row 0 = {1,3,2,2}: mean 2, var 0.5; row 1 = {0,4,6,6}: mean 4, var 6
  const double a = 1 / std::sqrt(0.5), b = 1 / std::sqrt(6.0);
  check_close(out[0].tensor(), {-1 * a, 2 * a, 1, 1, -4 * b, 0, 2 * b + 1, 4 * b + 1});
  CHECK(out[1].tensor().sizes() == std::vector<i64>{2, 1, 1});
  check_close(out[1].tensor(), {2, 4});
  check_close(out[2].tensor(), {a, b});
  // default axis -1, no bias, scale broadcast from [1]
  auto y = f.run(node("LayerNormalization", 17, 1, attrs({{"epsilon", 0.0}})), {tensor::from<float>({1, 3}, {1, 2}), tensor::from<float>({3})})[0].tensor();
  check_close(y, {-3, 3});
  CHECK_THROWS_AS(f.run(n, {x, tensor::from<float>({1, 2, 3})}), gpass::error);
  // f64 input: Y is f64, Mean and InvStdDev have the stash type (f32 by default)
  auto d = f.run(node("LayerNormalization", 17, 3, attrs({{"epsilon", 0.0}})), {tensor::from<double>({1, 3}, {1, 2}), tensor::from<double>({1})});
  CHECK(d[0].tensor().element_type() == gpass::dtype::f64);
  CHECK(d[1].tensor().element_type() == gpass::dtype::f32);
  check_close(d[0].tensor(), {-1, 1});
  check_close(d[1].tensor(), {2});
}

TEST_CASE("exec.nn.lrn") {
  nn_fixture f;
  auto x = tensor::from<float>({1, 2, 3}, {1, 3, 1, 1});
  auto n = node("LRN", 13, 1, attrs({{"size", i64{2}}, {"alpha", 2.0}, {"beta", 1.0}, {"bias", 1.0}}));
  // size 2: window [c, c+1]; denominator 1 + (2/2) * sum of squares
  check_close(f.run(n, {x})[0].tensor(), {1.0 / (1 + 1 + 4), 2.0 / (1 + 4 + 9), 3.0 / (1 + 9)});
  CHECK_THROWS_AS(f.run(node("LRN", 13), {x}), gpass::error);  // size is required
}

// Windows of over 32 channels slide down the channels (a running sum) instead of being summed
// for each channel: the values of the definition's sum, and no outputs x size work.
TEST_CASE("exec.nn.lrn.wide_windows") {
  nn_fixture f;
  const i64 N = 2, C = 100, inner = 3;
  const auto xv = iota_f(N * C * inner, 1.5f, 0.2f);
  const std::vector<double> xd(xv.begin(), xv.end());
  const double alpha = 0.01, beta = 0.75, bias = 1.5;
  for (i64 size : {1, 5, 32, 33, 64, 65, 199, 200, 201, 1001}) {
    INFO("size " << size);
    const i64 lo = (size - 1) / 2, hi = size - 1 - lo;
    std::vector<double> want(xv.size());
    for (i64 n = 0; n < N; ++n)
      for (i64 c = 0; c < C; ++c)
        for (i64 j = 0; j < inner; ++j) {
          double sq = 0;
          for (i64 k = std::max<i64>(0, c - lo); k <= std::min(C - 1, c + hi); ++k) sq += xd[static_cast<std::size_t>((n * C + k) * inner + j)] * xd[static_cast<std::size_t>((n * C + k) * inner + j)];
          const auto at = static_cast<std::size_t>((n * C + c) * inner + j);
          want[at] = xd[at] * std::pow(bias + alpha / static_cast<double>(size) * sq, -beta);
        }
    auto n = node("LRN", 13, 1, attrs({{"size", size}, {"alpha", alpha}, {"beta", beta}, {"bias", bias}}));
    check_close(f.run(n, {tensor::from<float>(xv, {N, C, inner})})[0].tensor(), want, 1e-5);
    check_close(f.run(n, {tensor::from<double>(xd, {N, C, inner})})[0].tensor(), want, 1e-12);
  }
  // threads split the planes: the same values
  nn_fixture two(2);
  auto big_x = tensor::from<float>(iota_f(4 * 100 * 700, 1.5f), {4, 100, 700});
  auto wide = node("LRN", 13, 1, attrs({{"size", i64{65}}}));
  CHECK(f.run(wide, {big_x})[0].tensor() == two.run(wide, {big_x})[0].tensor());
  // 2^20 channels of one pixel, a window of 2^21 (each covers every channel): 2^40 steps before
  const i64 big = i64{1} << 20;
  auto y = f.run(node("LRN", 13, 1, attrs({{"size", 2 * big}, {"alpha", 2.0}, {"beta", 1.0}})), {tensor::from<float>(std::vector<float>(big, 1.0f), {1, big, 1, 1})})[0].tensor();
  const auto yv = gpass_test_exec::vals<float>(y);
  CHECK(std::all_of(yv.begin(), yv.end(), [](float v) { return v == 0.5f; }));  // 1 / (1 + 2 / 2^21 x 2^20)
}

TEST_CASE("exec.nn.mean_variance_normalization") {
  nn_fixture f;
  auto x = tensor::from<float>({1, 3, 5, 5, 2, 2}, {3, 2});
  auto y = f.run(node("MeanVarianceNormalization", 13, 1, attrs({{"axes", std::vector<i64>{0}}})), {x})[0].tensor();
  // column 0 = {1, 5, 2}: mean 8/3; column 1 = {3, 5, 2}: mean 10/3
  auto norm = [](std::vector<double> c) {
    double m = 0, v = 0;
    for (double e : c) m += e / 3;
    for (double e : c) v += (e - m) * (e - m) / 3;
    for (double& e : c) e = (e - m) / (std::sqrt(v) + 1e-9);
    return c;
  };
  auto c0 = norm({1, 5, 2}), c1 = norm({3, 5, 2});
  check_close(y, {c0[0], c1[0], c0[1], c1[1], c0[2], c1[2]});
  CHECK_THROWS_AS(f.run(node("MeanVarianceNormalization", 13), {x}), gpass::error);  // default axes need rank 4
  // a scalar has no axis 0 to reduce (found by fuzzing `run`: it marked reduced[0] of an
  // empty vector; fuzz/regressions/run/mvn_scalar.onnx)
  CHECK_THROWS_WITH_AS(f.run(node("MeanVarianceNormalization", 13), {gpass::tensor::scalar(1.0f)}),
                       doctest::Contains("axis 0 is out of range for rank 0"), gpass::error);
}

// ---- recurrent layers -----------------------------------------------------------------

TEST_CASE("exec.nn.rnn.single_step_by_hand") {
  nn_fixture f;
  // one step, batch 1, input 1, hidden 1
  auto x = tensor::from<float>({0.5f}, {1, 1, 1});
  SUBCASE("RNN") {
    auto y = f.run(node("RNN", 14, 2, attrs({{"hidden_size", i64{1}}})),
                   {x, tensor::from<float>({2}, {1, 1, 1}), tensor::from<float>({3}, {1, 1, 1}), tensor::from<float>({0.1f, 0.2f}, {1, 2}),
                    value{}, tensor::from<float>({0.4f}, {1, 1, 1})});
    const double h = std::tanh(2 * 0.5 + 3 * 0.4 + 0.3);
    check_close(y[0].tensor(), {h});
    check_close(y[1].tensor(), {h});
    CHECK(y[0].tensor().sizes() == std::vector<i64>{1, 1, 1, 1});
  }
  SUBCASE("GRU") {
    // W = [wz, wr, wh], R = [rz, rr, rh], B = [wbz wbr wbh rbz rbr rbh]
    auto W = tensor::from<float>({1, 2, 3}, {1, 3, 1});
    auto R = tensor::from<float>({0.5f, -1, 2}, {1, 3, 1});
    auto B = tensor::from<float>({0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, {1, 6});
    auto h0 = tensor::from<float>({0.7f}, {1, 1, 1});
    const double xv = 0.5, hp = 0.7;
    const double z = sigmoid(1 * xv + 0.5 * hp + 0.1 + 0.4), r = sigmoid(2 * xv - 1 * hp + 0.2 + 0.5);
    for (i64 lbr : {i64{0}, i64{1}}) {
      const double hh = lbr ? std::tanh(3 * xv + r * (2 * hp + 0.6) + 0.3) : std::tanh(3 * xv + (r * hp) * 2 + 0.6 + 0.3);
      const double h = (1 - z) * hh + z * hp;
      auto y = f.run(node("GRU", 14, 2, attrs({{"hidden_size", i64{1}}, {"linear_before_reset", lbr}})), {x, W, R, B, value{}, h0});
      check_close(y[0].tensor(), {h});
      check_close(y[1].tensor(), {h});
    }
  }
  SUBCASE("LSTM with peepholes and clip") {
    // gates i, o, f, c
    auto W = tensor::from<float>({1, 2, 3, 4}, {1, 4, 1});
    auto R = tensor::from<float>({0.5f, -1, 2, 0.25f}, {1, 4, 1});
    auto B = tensor::from<float>({0.1f, 0.2f, 0.3f, 0.4f, 0, 0, 0, 0}, {1, 8});
    auto h0 = tensor::from<float>({0.7f}, {1, 1, 1});
    auto c0 = tensor::from<float>({-0.3f}, {1, 1, 1});
    auto P = tensor::from<float>({0.2f, 0.3f, 0.4f}, {1, 3});  // Pi, Po, Pf
    const double xv = 0.5, hp = 0.7, cp = -0.3, clip = 2.5;
    auto cl = [&](double v) { return std::clamp(v, -clip, clip); };
    const double i = sigmoid(cl(1 * xv + 0.5 * hp + 0.1 + 0.2 * cp));
    const double fg = sigmoid(cl(3 * xv + 2 * hp + 0.3 + 0.4 * cp));
    const double cc = std::tanh(cl(4 * xv + 0.25 * hp + 0.4));
    const double c = fg * cp + i * cc;
    const double o = sigmoid(cl(2 * xv - 1 * hp + 0.2 + 0.3 * c));
    const double h = o * std::tanh(c);
    auto y = f.run(node("LSTM", 14, 3, attrs({{"hidden_size", i64{1}}, {"clip", clip}})), {x, W, R, B, value{}, h0, c0, P});
    check_close(y[0].tensor(), {h});
    check_close(y[1].tensor(), {h});
    check_close(y[2].tensor(), {c});
  }
}

namespace {
// An independent scalar-loop reference of a forward single-direction RNN (tanh) over
// X [S, B, I] with per-batch lengths, for checking directions, masking and layout.
std::vector<double> rnn_ref(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& r, i64 S, i64 B, i64 I,
                            i64 H, const std::vector<i64>& lens, bool reverse, std::vector<double>& yh) {
  std::vector<double> y(static_cast<std::size_t>(S * B * H), 0.0);
  yh.assign(static_cast<std::size_t>(B * H), 0.0);
  for (i64 b = 0; b < B; ++b) {
    std::vector<double> h(static_cast<std::size_t>(H), 0.0);
    for (i64 s = 0; s < lens[static_cast<std::size_t>(b)]; ++s) {
      const i64 t = reverse ? lens[static_cast<std::size_t>(b)] - 1 - s : s;
      std::vector<double> hn(static_cast<std::size_t>(H));
      for (i64 j = 0; j < H; ++j) {
        double a = 0;
        for (i64 k = 0; k < I; ++k) a += w[static_cast<std::size_t>(j * I + k)] * x[static_cast<std::size_t>((t * B + b) * I + k)];
        for (i64 k = 0; k < H; ++k) a += r[static_cast<std::size_t>(j * H + k)] * h[static_cast<std::size_t>(k)];
        hn[static_cast<std::size_t>(j)] = std::tanh(a);
      }
      h = hn;
      for (i64 j = 0; j < H; ++j) y[static_cast<std::size_t>((t * B + b) * H + j)] = h[static_cast<std::size_t>(j)];
    }
    for (i64 j = 0; j < H; ++j) yh[static_cast<std::size_t>(b * H + j)] = h[static_cast<std::size_t>(j)];
  }
  return y;
}
}  // namespace

TEST_CASE("exec.nn.rnn.bidirectional_sequence_lens_layout") {
  nn_fixture f;
  const i64 S = 4, B = 3, I = 2, H = 3;
  const auto xv = iota_f(S * B * I);
  const auto w0 = iota_f(H * I, 0.5f, 0.1f), w1 = iota_f(H * I, -0.4f, 0.05f);
  const auto r0 = iota_f(H * H, 0.3f), r1 = iota_f(H * H, 0.2f, -0.1f);
  std::vector<float> w = w0, r = r0;
  w.insert(w.end(), w1.begin(), w1.end());
  r.insert(r.end(), r1.begin(), r1.end());
  const std::vector<i64> lens{4, 2, 0};
  std::vector<double> yhf, yhr;
  auto yf = rnn_ref(xv, w0, r0, S, B, I, H, lens, false, yhf);
  auto yr = rnn_ref(xv, w1, r1, S, B, I, H, lens, true, yhr);
  std::vector<double> want_y, want_yh = yhf;
  want_yh.insert(want_yh.end(), yhr.begin(), yhr.end());
  for (i64 t = 0; t < S; ++t)
    for (const auto* src : {&yf, &yr})
      for (i64 i = 0; i < B * H; ++i) want_y.push_back((*src)[static_cast<std::size_t>(t * B * H + i)]);
  auto n = node("RNN", 14, 2, attrs({{"hidden_size", H}, {"direction", std::string("bidirectional")}}));
  auto out = f.run(n, {tensor::from<float>(xv, {S, B, I}), tensor::from<float>(w, {2, H, I}), tensor::from<float>(r, {2, H, H}), value{},
                       tensor::from<std::int32_t>({4, 2, 0})});
  CHECK(out[0].tensor().sizes() == std::vector<i64>{S, 2, B, H});
  check_close(out[0].tensor(), want_y);
  check_close(out[1].tensor(), want_yh);

  // layout 1: X [B, S, I], Y [B, S, D, H], Y_h [B, D, H]
  std::vector<float> xb(xv.size());
  for (i64 s = 0; s < S; ++s)
    for (i64 b = 0; b < B; ++b)
      for (i64 k = 0; k < I; ++k) xb[static_cast<std::size_t>((b * S + s) * I + k)] = xv[static_cast<std::size_t>((s * B + b) * I + k)];
  auto n1 = n;
  n1.attrs["layout"] = i64{1};
  auto out1 = f.run(n1, {tensor::from<float>(xb, {B, S, I}), tensor::from<float>(w, {2, H, I}), tensor::from<float>(r, {2, H, H}),
                         value{}, tensor::from<std::int64_t>({4, 2, 0})});
  CHECK(out1[0].tensor().sizes() == std::vector<i64>{B, S, 2, H});
  CHECK(out1[1].tensor().sizes() == std::vector<i64>{B, 2, H});
  std::vector<double> want_y1, want_yh1;
  for (i64 b = 0; b < B; ++b)
    for (i64 s = 0; s < S; ++s)
      for (i64 d = 0; d < 2; ++d)
        for (i64 j = 0; j < H; ++j) want_y1.push_back(want_y[static_cast<std::size_t>(((s * 2 + d) * B + b) * H + j)]);
  for (i64 b = 0; b < B; ++b)
    for (i64 d = 0; d < 2; ++d)
      for (i64 j = 0; j < H; ++j) want_yh1.push_back(want_yh[static_cast<std::size_t>((d * B + b) * H + j)]);
  check_close(out1[0].tensor(), want_y1);
  check_close(out1[1].tensor(), want_yh1);
}

/// One recurrent cell of the f32-against-f64 checks: op, gates, GRU's linear_before_reset,
/// whether an LSTM gets peepholes.
struct rnn_cell_case {
  const char* op;
  i64 gates;
  i64 lbr;
  bool peepholes;
};

/// Runs the layer `cc` (hidden H, direction `dir`) on f32 inputs with `f32` (its weights as
/// inputs, then as constant inputs of the node, packed once) and on the same values in f64
/// with `f64` (Eigen in double): every output agrees within 2e-5.
inline void check_rnn_against_double(nn_fixture& f32, nn_fixture& f64, const rnn_cell_case& cc, i64 H, const char* dir,
                                     const tensor& x, const tensor& w, const tensor& r, const tensor& b, const tensor& lens,
                                     const tensor& h0, const tensor& c0, const tensor& p) {
  auto f64_of = [](const tensor& t) {
    tensor v(gpass::dtype::f64, t.sizes());
    for (i64 i = 0; i < t.size(); ++i) v.data<double>()[i] = t.data<float>()[i];
    return v;
  };
  gpass::attribute_map a = attrs({{"hidden_size", H}, {"direction", std::string(dir)}});
  if (cc.lbr) a["linear_before_reset"] = cc.lbr;
  const bool lstm = std::string(cc.op) == "LSTM";
  auto n = node(cc.op, 14, lstm ? 3 : 2, a);
  std::vector<value> in{x, w, r, b, lens, h0};
  std::vector<value> in64{f64_of(x), f64_of(w), f64_of(r), f64_of(b), lens, f64_of(h0)};
  if (lstm) {
    in.push_back(c0);
    in64.push_back(f64_of(c0));
    if (cc.peepholes) {
      in.push_back(p);
      in64.push_back(f64_of(p));
    }
  }
  const auto want = f64.run(n, in64);
  auto constant = n;
  constant.constant_inputs = {std::nullopt, w, r};
  for (const kernel_node* k : {&n, &constant}) {
    const auto got = f32.run(*k, in);
    REQUIRE(got.size() == want.size());
    for (std::size_t o = 0; o < got.size(); ++o) {
      const tensor& g = got[o].tensor();
      const tensor& e = want[o].tensor();
      REQUIRE(g.sizes() == e.sizes());
      double worst = 0;
      for (i64 i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g.data<float>()[i] - e.data<double>()[i]));
      CHECK(worst < 2e-5);
    }
  }
}

TEST_CASE("exec.nn.rnn.engine_against_double") {
  // f32 layers run on the GEMM engine (weights packed per run, or once when they are constant
  // inputs of the node); f64 layers run on Eigen in double: the same layer in both types
  // agrees. Hidden 37 and input 19 (ragged against every panel width), batch 3 with lengths
  // (one sequence empty) and batch 1 (one-row products), both directions, every cell and
  // GRU's two reset placements, peepholes, initial states.
  nn_fixture f;
  const i64 S = 5, I = 19, H = 37;
  for (const rnn_cell_case& cc : {rnn_cell_case{"LSTM", 4, 0, true}, rnn_cell_case{"LSTM", 4, 0, false}, rnn_cell_case{"GRU", 3, 0, false},
                                  rnn_cell_case{"GRU", 3, 1, false}, rnn_cell_case{"RNN", 1, 0, false}})
    for (i64 B : {i64{3}, i64{1}})
      for (const char* dir : {"forward", "reverse", "bidirectional"}) {
        INFO(std::string(cc.op) << " linear_before_reset=" << cc.lbr << " peepholes=" << cc.peepholes << " B=" << B << " " << dir);
        const i64 D = std::string(dir) == "bidirectional" ? 2 : 1, GH = cc.gates * H;
        const tensor x = tensor::from<float>(iota_f(S * B * I, 0.8f), {S, B, I});
        const tensor w = tensor::from<float>(iota_f(D * GH * I, 0.3f, 0.01f), {D, GH, I});
        const tensor r = tensor::from<float>(iota_f(D * GH * H, 0.15f, -0.02f), {D, GH, H});
        const tensor b = tensor::from<float>(iota_f(D * 2 * GH, 0.2f), {D, 2 * GH});
        const tensor lens = B == 3 ? tensor::from<std::int32_t>({5, 3, 0}) : tensor::from<std::int32_t>({5});
        const tensor h0 = tensor::from<float>(iota_f(D * B * H, 0.5f), {D, B, H});
        const tensor c0 = tensor::from<float>(iota_f(D * B * H, -0.4f), {D, B, H});
        const tensor p = tensor::from<float>(iota_f(D * 3 * H, 0.1f), {D, 3 * H});
        check_rnn_against_double(f, f, cc, H, dir, x, w, r, b, lens, h0, c0, p);
      }
}

TEST_CASE("exec.nn.rnn.sequences_shared_by_threads") {
  // f32 layers whose batch is big enough to share run their sequences in ranges, one thread
  // each, every step (40 sequences over 2 and 3 threads): against the same layer in double on
  // one thread. Every cell (the default LSTM, an LSTM with peepholes, GRU with both reset
  // placements, RNN), sequences of every length (empty ones, full ones), both directions and
  // bidirectional (the directions on the threads, the sequences not shared), hidden 64 and 45
  // (ragged against the panels), random weights, initial states.
  nn_fixture one;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> u(-0.6f, 0.6f);
  auto random = [&](std::vector<i64> s) {
    tensor t(gpass::dtype::f32, s);
    for (i64 i = 0; i < t.size(); ++i) t.data<float>()[i] = u(rng);
    return t;
  };
  for (int threads : {2, 3})
    for (const rnn_cell_case& cc : {rnn_cell_case{"LSTM", 4, 0, false}, rnn_cell_case{"LSTM", 4, 0, true}, rnn_cell_case{"GRU", 3, 0, false},
                                    rnn_cell_case{"GRU", 3, 1, false}, rnn_cell_case{"RNN", 1, 0, false}})
      for (i64 H : {i64{64}, i64{45}})
        for (const char* dir : {"forward", "reverse", "bidirectional"}) {
          INFO("threads=" << threads << " " << std::string(cc.op) << " lbr=" << cc.lbr << " peepholes=" << cc.peepholes << " H=" << H << " " << dir);
          nn_fixture many(threads);
          const i64 S = 8, B = 40, I = 23, D = std::string(dir) == "bidirectional" ? 2 : 1, GH = cc.gates * H;
          const tensor x = random({S, B, I}), w = random({D, GH, I}), r = random({D, GH, H}), b = random({D, 2 * GH});
          const tensor h0 = random({D, B, H}), c0 = random({D, B, H}), p = random({D, 3 * H});
          std::vector<std::int32_t> len_values(static_cast<std::size_t>(B));
          for (i64 i = 0; i < B; ++i) len_values[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i == 3 ? 0 : i % 3 == 0 ? S : (i * 5) % (S + 1));
          const tensor lens = tensor::from<std::int32_t>(len_values, {B});
          check_rnn_against_double(many, one, cc, H, dir, x, w, r, b, lens, h0, c0, p);
        }
}

TEST_CASE("exec.nn.rnn.units_shared_by_threads") {
  // the default LSTM with fewer sequences than threads cuts each step's hidden units among
  // them (H a multiple of the GEMM's panel width; 45 is not: one thread): 1 and 2 sequences
  // (one of them shorter, so its state is kept and its outputs zero past its end) of an odd
  // and an even step count (the state ends in either of its two buffers) on 2 and 3 threads
  // (3 on a 2-core machine: parts wait on a descheduled thread's), both directions, against
  // the same layer in double on one thread
  nn_fixture one;
  std::mt19937 rng(43);
  std::uniform_real_distribution<float> u(-0.6f, 0.6f);
  auto random = [&](std::vector<i64> s) {
    tensor t(gpass::dtype::f32, s);
    for (i64 i = 0; i < t.size(); ++i) t.data<float>()[i] = u(rng);
    return t;
  };
  const rnn_cell_case cc{"LSTM", 4, 0, false};
  for (int threads : {2, 3})
    for (i64 B : {i64{1}, i64{2}})
      for (i64 H : {i64{64}, i64{128}, i64{45}})
        for (const char* dir : {"forward", "reverse"})
          for (i64 S : {i64{9}, i64{8}}) {
            INFO("threads=" << threads << " B=" << B << " H=" << H << " " << dir << " S=" << S);
            nn_fixture many(threads);
            const i64 I = 19, GH = 4 * H;
            const tensor x = random({S, B, I}), w = random({1, GH, I}), r = random({1, GH, H}), b = random({1, 2 * GH});
            const tensor h0 = random({1, B, H}), c0 = random({1, B, H}), p = random({1, 3 * H});
            const auto s32 = static_cast<std::int32_t>(S);
            const tensor lens = B == 1 ? tensor::from<std::int32_t>({s32}) : tensor::from<std::int32_t>({s32, 4});
            check_rnn_against_double(many, one, cc, H, dir, x, w, r, b, lens, h0, c0, p);
          }
}

TEST_CASE("exec.nn.rnn.unit_parts_without_workers") {
  // an LSTM of one sequence whose step units are cut among 2 threads, run where the pool's
  // worker cannot take its part: from inside the two ranges of another parallel_for (the
  // worker's own run is inline, the caller's nested call queues the part behind the busy
  // worker), so a thread claims the other part at step 1 and runs both; against the same
  // layer on one thread
  const i64 S = 7, B = 1, I = 5, H = 64, GH = 4 * H;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto random = [&](std::vector<i64> sizes) {
    tensor t(gpass::dtype::f32, std::move(sizes));
    for (i64 i = 0; i < t.size(); ++i) t.data<float>()[i] = u(rng);
    return t;
  };
  const std::vector<value> in{random({S, B, I}), random({1, GH, I}), random({1, GH, H}), random({1, 2 * GH})};
  const auto n = node("LSTM", 14, 3, attrs({{"hidden_size", H}}));
  nn_fixture one;
  const auto want = one.run(n, in);
  nn_fixture two(2);
  std::vector<value> got[2];
  std::atomic<int> started{0};
  two.cpu.parallel_for(2, 1e9, [&](i64 i0, i64 i1) {
    // both ranges running before either calls: the worker busy with its own (bounded, in case
    // the caller runs both ranges)
    started.fetch_add(1);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (started.load() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    for (i64 i = i0; i < i1; ++i) got[i] = two.run(n, in);
  });
  for (const auto& g : got) {
    REQUIRE(g.size() == want.size());
    for (std::size_t o = 0; o < g.size(); ++o) {
      const tensor& t = g[o].tensor();
      const tensor& e = want[o].tensor();
      REQUIRE(t.sizes() == e.sizes());
      for (i64 k = 0; k < t.size(); ++k) CHECK(t.data<float>()[k] == doctest::Approx(e.data<float>()[k]).epsilon(1e-6));
    }
  }
}

TEST_CASE("exec.nn.rnn.activations_and_errors") {
  nn_fixture f;
  auto x = tensor::from<float>({-0.5f}, {1, 1, 1});
  auto w = tensor::from<float>({2}, {1, 1, 1});
  auto r = tensor::from<float>({0}, {1, 1, 1});
  auto run = [&](attribute_map a) { return f.run(node("RNN", 14, 1, std::move(a)), {x, w, r})[0].tensor(); };
  check_close(run(attrs({{"activations", std::vector<std::string>{"Relu"}}})), {0});
  check_close(run(attrs({{"activations", std::vector<std::string>{"LeakyRelu"}}, {"activation_alpha", std::vector<double>{0.5}}})), {-0.5});
  check_close(run(attrs({{"activations", std::vector<std::string>{"Affine"}}, {"activation_alpha", std::vector<double>{3.0}},
                         {"activation_beta", std::vector<double>{1.0}}})),
              {-2});
  check_close(run(attrs({{"activations", std::vector<std::string>{"HardSigmoid"}}})), {0.3});  // 0.2 * -1 + 0.5 = 0.3
  CHECK_THROWS_AS(run(attrs({{"activations", std::vector<std::string>{"Nope"}}})), gpass::error);
  CHECK_THROWS_AS(run(attrs({{"direction", std::string("sideways")}})), gpass::error);
  // W of the wrong shape, sequence_lens out of range
  CHECK_THROWS_AS(f.run(node("RNN", 14), {x, tensor::from<float>({1, 2}, {1, 1, 2}), r}), gpass::error);
  CHECK_THROWS_AS(f.run(node("GRU", 14), {x, w, r}), gpass::error);  // GRU needs 3 gates
  CHECK_THROWS_AS(f.run(node("RNN", 14), {x, w, r, value{}, tensor::from<std::int32_t>({2})}), gpass::error);
}

// ---- losses ---------------------------------------------------------------------------

TEST_CASE("exec.nn.nll_loss") {
  nn_fixture f;
  // input [N=2, C=3]
  auto x = tensor::from<float>({-1, -2, -3, -4, -5, -6}, {2, 3});
  auto t = tensor::from<std::int64_t>({2, 0});
  auto w = tensor::from<float>({0.5f, 1, 2});
  check_close(f.run(node("NegativeLogLikelihoodLoss", 13), {x, t})[0].tensor(), {(3 + 4) / 2.0});
  check_close(f.run(node("NegativeLogLikelihoodLoss", 13, 1, attrs({{"reduction", std::string("none")}})), {x, t})[0].tensor(), {3, 4});
  check_close(f.run(node("NegativeLogLikelihoodLoss", 13), {x, t, w})[0].tensor(), {(3 * 2 + 4 * 0.5) / 2.5});
  check_close(f.run(node("NegativeLogLikelihoodLoss", 13, 1, attrs({{"reduction", std::string("sum")}})), {x, t, w})[0].tensor(), {8});
  auto ii = node("NegativeLogLikelihoodLoss", 13, 1, attrs({{"ignore_index", i64{0}}}));
  check_close(f.run(ii, {x, t, w})[0].tensor(), {3});
  auto scalar = f.run(node("NegativeLogLikelihoodLoss", 13), {x, t})[0].tensor();
  CHECK(scalar.rank() == 0);
  CHECK_THROWS_AS(f.run(node("NegativeLogLikelihoodLoss", 13), {x, tensor::from<std::int64_t>({3, 0})}), gpass::error);
  CHECK_THROWS_AS(f.run(node("NegativeLogLikelihoodLoss", 13), {x, tensor::from<std::int64_t>({1, 0, 1})}), gpass::error);
  CHECK_THROWS_AS(f.run(node("NegativeLogLikelihoodLoss", 13, 1, attrs({{"reduction", std::string("avg")}})), {x, t}), gpass::error);
}

// An empty input may have any other sizes: LayerNormalization's per-row vectors, an RNN's
// steps and their input projections are sized from them, so they are allocated (limit
// checked) or checked as scratch before anything is built.
TEST_CASE("exec.nn.empty_inputs_with_huge_sizes") {
  nn_fixture f;
  const i64 big = i64{1} << 20;
  auto ln = f.run(node("LayerNormalization", 17, 3, attrs({{"axis", i64{1}}})), {tensor(gpass::dtype::f32, {0, big, big}), tensor::from<float>({2}, {1})});
  CHECK(ln[0].tensor().size() == 0);
  CHECK(ln[1].tensor().sizes() == std::vector<i64>{0, 1, 1});
  // empty rows: the statistics are one value per row, 2^40 of them: over max_tensor_bytes
  CHECK_THROWS_WITH_AS(f.run(node("LayerNormalization", 17, 3, attrs({{"axis", i64{2}}})), {tensor(gpass::dtype::f32, {big, big, 0}), tensor(gpass::dtype::f32, {0})}),
                       doctest::Contains("max_tensor_bytes"), gpass::error);
  // empty rows, a few of them: mean 0, 1 / sqrt(epsilon)
  auto few = f.run(node("LayerNormalization", 17, 3, attrs({{"axis", i64{1}}, {"epsilon", 0.25}})), {tensor(gpass::dtype::f32, {2, 0}), tensor(gpass::dtype::f32, {0})});
  check_close(few[1].tensor(), {0, 0});
  check_close(few[2].tensor(), {2, 2});
  // an RNN over an input of size 0 with 2^40 steps x batch entries: an error, not 4 TB
  auto W = tensor(gpass::dtype::f32, {1, 1, 0}), R = tensor::from<float>({0.5f}, {1, 1, 1});
  CHECK_THROWS_WITH_AS(f.run(node("RNN", 14, 2, attrs({{"hidden_size", i64{1}}})), {tensor(gpass::dtype::f32, {big, big, 0}), W, R}),
                       doctest::Contains("max_tensor_bytes"), gpass::error);
}

// Loops over the other sizes of an empty input, and sizes from attributes: no work for an
// empty output, or an error (each ran 2^40 or more steps, allocated terabytes, or read or
// wrote out of bounds before).
TEST_CASE("exec.nn.hostile_sizes_and_attributes") {
  nn_fixture f;
  const i64 big = i64{1} << 40;
  auto empty = [](std::vector<i64> s) { return tensor(gpass::dtype::f32, std::move(s)); };
  auto one = tensor::from<float>({1}, {1});
  // N x C = 2^40 instances (rows, windows) of nothing
  CHECK(f.run(node("InstanceNormalization", 6), {empty({big, 1, 0}), one, one})[0].tensor().size() == 0);
  CHECK(f.run(node("BatchNormalization", 15), {empty({big, 1, 0}), one, one, one, one})[0].tensor().size() == 0);
  auto bn = f.run(node("BatchNormalization", 15, 3, attrs({{"training_mode", i64{1}}})), {empty({big, 1, 0}), one, one, one, one});
  check_close(bn[1].tensor(), {0.9});  // running mean: 0.9 x 1 + 0.1 x 0 (no elements)
  CHECK(f.run(node("LRN", 13, 1, attrs({{"size", i64{3}}})), {empty({big, 1, 0})})[0].tensor().size() == 0);
  CHECK(f.run(node("LpNormalization", 1, 1, attrs({{"axis", i64{1}}})), {empty({big, 0})})[0].tensor().size() == 0);
  // MeanVarianceNormalization: a sum per kept index, 2^40 of them, over no elements
  CHECK(f.run(node("MeanVarianceNormalization", 13, 1, attrs({{"axes", std::vector<i64>{0}}})), {empty({0, big})})[0].tensor().size() == 0);
  // AffineGrid: a grid of 2^60 x 0 points
  auto ag = f.run(node("AffineGrid", 20), {tensor::from<float>(std::vector<float>(12, 0.5f), {1, 3, 4}), tensor::from<i64>({1, 1, i64{1} << 30, i64{1} << 30, 0})})[0].tensor();
  CHECK(ag.sizes() == std::vector<i64>{1, i64{1} << 30, i64{1} << 30, 0, 3});
  // DeformConv over 2^40 empty images; pads whose sum overflows int64
  auto w1 = tensor::from<float>({1}, {1, 1, 1, 1});
  auto dc = f.run(node("DeformConv", 19), {empty({big, 1, 0, 0}), w1, empty({big, 2, 0, 0})})[0].tensor();
  CHECK(dc.sizes() == std::vector<i64>{big, 1, 0, 0});
  CHECK_THROWS_WITH_AS(f.run(node("DeformConv", 19, 1, attrs({{"pads", std::vector<i64>{i64{1} << 62, 0, i64{1} << 62, 0}}})), {w1, w1, empty({1, 2, 0, 1})}),
                       doctest::Contains("overflow"), gpass::error);
  // RoiAlign without channels: 1024 rois of 2^22 samples each (sampling_ratio 2^11), for nothing
  auto roi = f.run(node("RoiAlign", 16, 1, attrs({{"sampling_ratio", i64{1} << 11}})),
                   {empty({1, 0, 4, 4}), tensor::from<float>(std::vector<float>(4096, 1.0f), {1024, 4}), tensor::from<i64>(std::vector<i64>(1024, 0))})[0]
                 .tensor();
  CHECK(roi.sizes() == std::vector<i64>{1024, 0, 1, 1});
  // RNNs with no batch (2^40 steps of nothing) or no hidden units (2^40 steps x batch entries)
  auto r1 = f.run(node("RNN", 14, 2, attrs({{"hidden_size", i64{1}}})), {empty({big, 0, 1}), tensor::from<float>({1}, {1, 1, 1}), tensor::from<float>({1}, {1, 1, 1})});
  CHECK(r1[0].tensor().sizes() == std::vector<i64>{big, 1, 0, 1});
  CHECK(r1[1].tensor().sizes() == std::vector<i64>{1, 0, 1});
  const i64 m = i64{1} << 20;
  auto r0 = f.run(node("GRU", 14, 2), {empty({m, m, 0}), empty({1, 0, 0}), empty({1, 0, 0})});
  CHECK(r0[0].tensor().sizes() == std::vector<i64>{m, 1, m, 0});
  CHECK(r0[1].tensor().sizes() == std::vector<i64>{1, m, 0});
  // hidden_size 2^62: 4 gates x 2^62 wrapped around to 0 rows of W, then states of 2^62 values
  CHECK_THROWS_WITH_AS(f.run(node("LSTM", 14, 2, attrs({{"hidden_size", i64{1} << 62}})), {tensor::from<float>({1}, {1, 1, 1}), empty({1, 0, 1}), empty({1, 0, i64{1} << 62})}),
                       doctest::Contains("too large"), gpass::error);

  // com.microsoft ops
  auto run_ms = [&](const std::string& op, std::vector<value> in, attribute_map a) {
    kernel_node n{.name = "n", .op = op, .domain = "com.microsoft", .attrs = std::move(a), .opset = 1};
    n.input_types.resize(in.size());
    n.output_types.resize(1);
    return f.run(n, std::move(in)).at(0).tensor();
  };
  // Attention: negative qkv_hidden_sizes that sum to the weights' columns (read before Q's)
  CHECK_THROWS_WITH_AS(run_ms("Attention", {tensor::from<float>({1, 2}, {1, 1, 2}), tensor::from<float>(std::vector<float>(12, 0.5f), {2, 6})},
                              attrs({{"num_heads", i64{1}}, {"qkv_hidden_sizes", std::vector<i64>{-2, -2, 10}}})),
                       doctest::Contains("qkv_hidden_sizes must be in"), gpass::error);
  // Attention: present (output 1) with a V head narrower than Q's: its value part would read
  // past each QKV row (up to dq - dv columns beyond the weights'); refused
  {
    kernel_node n{.name = "n", .op = "Attention", .domain = "com.microsoft",
                  .attrs = attrs({{"num_heads", i64{2}}, {"qkv_hidden_sizes", std::vector<i64>{8, 8, 4}}}), .opset = 1};
    n.input_types.resize(2);
    n.output_types.resize(2);
    CHECK_THROWS_WITH_AS(f.run(n, {tensor::from<float>(std::vector<float>(12, 0.5f), {1, 3, 4}), tensor::from<float>(std::vector<float>(80, 0.25f), {4, 20})}),
                         doctest::Contains("present needs equal Q, K and V head sizes, got 4 and 2"), gpass::error);
    n.output_types.resize(1);  // without present: fine
    CHECK(f.run(n, {tensor::from<float>(std::vector<float>(12, 0.5f), {1, 3, 4}), tensor::from<float>(std::vector<float>(80, 0.25f), {4, 20})})
              .at(0)
              .tensor()
              .sizes() == std::vector<i64>{1, 3, 4});
  }
  // Attention: weights of no columns over an empty input of 2^40 positions (a bias row each);
  // Q and K of 2^18 positions x 49152 columns with an empty V (48 GiB for an empty output)
  auto none = run_ms("Attention", {empty({m, m, 0}), empty({0, 0}), empty({0})}, attrs({{"num_heads", i64{1}}}));
  CHECK(none.sizes() == std::vector<i64>{m, m, 0});
  CHECK_THROWS_WITH_AS(run_ms("Attention", {tensor::from<float>(std::vector<float>(1 << 18, 1.0f), {1, 1 << 18, 1}), tensor::from<float>(std::vector<float>(49152, 0.5f), {1, 49152})},
                              attrs({{"num_heads", i64{1}}, {"qkv_hidden_sizes", std::vector<i64>{24576, 24576, 0}}})),
                       doctest::Contains("max_tensor_bytes"), gpass::error);
  // MultiHeadAttention: per-head values of no positions, 3 heads of 6148914691236517206 (their
  // product wrapped around to 2: Y's width, written far past)
  CHECK_THROWS_WITH_AS(run_ms("MultiHeadAttention", {tensor::from<float>({1, 2, 3}, {1, 1, 3}), empty({1, 3, 0, 1}), empty({1, 3, 0, 6148914691236517206})},
                              attrs({{"num_heads", i64{3}}})),
                       doctest::Contains("overflow"), gpass::error);
  // SkipLayerNormalization: input [2^17, 1, 1] and skip [1, 2^17, 1] broadcast to 2^34 values
  // (64 GiB, made before the output)
  const std::vector<float> ones(1 << 17, 1.0f);
  CHECK_THROWS_WITH_AS(run_ms("SkipLayerNormalization", {tensor::from<float>(ones, {1 << 17, 1, 1}), tensor::from<float>(ones, {1, 1 << 17, 1}), one}, {}),
                       doctest::Contains("max_tensor_bytes"), gpass::error);
}

TEST_CASE("exec.nn.softmax_cross_entropy_loss") {
  nn_fixture f;
  // scores [N=1, C=2, D=2], labels [1, 2]
  auto x = tensor::from<float>({1, 3, 2, 0}, {1, 2, 2});
  auto t = tensor::from<std::int64_t>({0, 1}, {1, 2});
  auto out = f.run(node("SoftmaxCrossEntropyLoss", 13, 2, attrs({{"reduction", std::string("none")}})), {x, t});
  auto p0 = softmax_ref({1, 2}), p1 = softmax_ref({3, 0});
  check_close(out[0].tensor(), {-std::log(p0[0]), -std::log(p1[1])});
  check_close(out[1].tensor(), {std::log(p0[0]), std::log(p1[0]), std::log(p0[1]), std::log(p1[1])});
  auto m = f.run(node("SoftmaxCrossEntropyLoss", 13), {x, t})[0].tensor();
  check_close(m, {(-std::log(p0[0]) - std::log(p1[1])) / 2});
}

// ---- sampling -------------------------------------------------------------------------

TEST_CASE("exec.nn.grid_sample") {
  nn_fixture f;
  auto x = tensor::from<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  // grid points (x, y): corners with align_corners = 1, plus the center and a far-away point
  auto grid = tensor::from<float>({-1, -1, 1, -1, -1, 1, 1, 1, 0, 0, 5, 5}, {1, 1, 6, 2});
  auto y = f.run(node("GridSample", 16, 1, attrs({{"align_corners", i64{1}}})), {x, grid})[0].tensor();
  CHECK(y.sizes() == std::vector<i64>{1, 1, 1, 6});
  check_close(y, {1, 2, 3, 4, 2.5, 0});
  auto yb = f.run(node("GridSample", 16, 1, attrs({{"align_corners", i64{1}}, {"padding_mode", std::string("border")}})), {x, grid})[0].tensor();
  check_close(yb, {1, 2, 3, 4, 2.5, 4});
  auto yn = f.run(node("GridSample", 16, 1, attrs({{"mode", std::string("nearest")}, {"align_corners", i64{1}}})), {x, grid})[0].tensor();
  check_close(yn, {1, 2, 3, 4, 1, 0});  // center rounds half to even: (0.5, 0.5) -> (0, 0)
  CHECK_THROWS_AS(f.run(node("GridSample", 16, 1, attrs({{"mode", std::string("area")}})), {x, grid}), gpass::error);
  CHECK_THROWS_AS(f.run(node("GridSample", 16), {x, tensor::from<float>({0, 0, 0}, {1, 1, 1, 3})}), gpass::error);
}

namespace {

// GridSample by the ONNX definition over any rank: every combination of the taps (1, 2 or 4
// per dimension) weighted by the product of its weights, the coordinate padded first
// (border: clamped, reflection: folded) and then each tap's index (zeros: 0 outside, border:
// clamped, reflection: folded); taps repeated by padding are not merged. A NaN coordinate
// gives 0.
std::vector<double> grid_sample_ref(const std::vector<double>& x, const std::vector<i64>& xs, const std::vector<double>& grid,
                                    const std::vector<i64>& gs, const std::string& mode, const std::string& pad, bool align) {
  const std::size_t k = xs.size() - 2;
  const i64 N = xs[0], C = xs[1];
  i64 plane = 1, points = 1;
  for (std::size_t i = 0; i < k; ++i) plane *= xs[2 + i], points *= gs[1 + i];
  auto fold = [](double v, double lo, double hi) {  // reflection, one fold at a time
    if (hi <= lo) return lo;
    while (v < lo || v > hi) v = v < lo ? 2 * lo - v : 2 * hi - v;
    return v;
  };
  auto cubic = [](double t) {  // Keys' kernel, A = -0.75
    const double A = -0.75, a = std::abs(t);
    if (a <= 1) return ((A + 2) * a - (A + 3)) * a * a + 1;
    if (a < 2) return ((A * a - 5 * A) * a + 8 * A) * a - 4 * A;
    return 0.0;
  };
  const int taps = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
  std::vector<double> y(static_cast<std::size_t>(N * C * points));
  for (i64 n = 0; n < N; ++n)
    for (i64 p = 0; p < points; ++p) {
      std::vector<std::vector<i64>> idx(k);
      std::vector<std::vector<double>> wts(k);
      bool nan = false;
      for (std::size_t i = 0; i < k; ++i) {
        const double v = grid[static_cast<std::size_t>((n * points + p) * static_cast<i64>(k) + static_cast<i64>(k - 1 - i))];
        const double len = static_cast<double>(xs[2 + i]);
        double c = align ? (v + 1) / 2 * (len - 1) : ((v + 1) * len - 1) / 2;
        const double lo = align ? 0 : -0.5, hi = align ? len - 1 : len - 0.5;
        if (mode == "nearest") c = std::nearbyint(c);
        if (std::isnan(c)) nan = true;
        if (nan) break;
        if (c < lo || c > hi) {
          if (pad == "border") c = std::min(std::max(c, 0.0), len - 1);
          else if (pad == "reflection") c = fold(c, lo, hi);
        }
        const double f0 = std::floor(c);
        for (int t = 0; t < taps; ++t) {
          i64 q = mode == "nearest" ? static_cast<i64>(c) : static_cast<i64>(f0) + t - (taps == 4 ? 1 : 0);
          double w = mode == "nearest" ? 1.0 : mode == "linear" ? (t == 0 ? 1 - (c - f0) : c - f0) : cubic(c - static_cast<double>(q));
          if (q < 0 || q >= xs[2 + i]) {
            if (pad == "zeros") q = -1;
            else if (pad == "border") q = std::min<i64>(std::max<i64>(q, 0), xs[2 + i] - 1);
            else q = std::min<i64>(std::max<i64>(static_cast<i64>(fold(static_cast<double>(q), lo, hi)), 0), xs[2 + i] - 1);
          }
          idx[i].push_back(q);
          wts[i].push_back(w);
        }
      }
      for (i64 c = 0; c < C; ++c) {
        double acc = 0;
        i64 combos = 1;
        for (std::size_t i = 0; i < k && !nan; ++i) combos *= taps;
        for (i64 cmb = 0; cmb < (nan ? 0 : combos); ++cmb) {
          i64 rest = cmb, off = 0;
          double w = 1;
          bool inside = true;
          std::vector<i64> at(k);
          for (std::size_t i = k; i-- > 0;) {  // last dimension fastest
            const auto t = static_cast<std::size_t>(rest % taps);
            rest /= taps;
            at[i] = idx[i][t];
            inside = inside && at[i] >= 0;
            w *= wts[i][t];
          }
          if (!inside) continue;
          for (std::size_t i = 0; i < k; ++i) off = off * xs[2 + i] + at[i];
          acc += w * x[static_cast<std::size_t>((n * C + c) * plane + off)];
        }
        y[static_cast<std::size_t>((n * C + c) * points + p)] = acc;
      }
    }
  return y;
}

std::vector<double> to_doubles(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace

TEST_CASE("exec.nn.grid_sample.volumetric_by_hand") {
  nn_fixture f;
  // X [1, 1, 2, 2, 2] = 4d + 2h + w: trilinear interpolation reproduces it inside
  auto x = tensor::from<float>({0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 2, 2, 2});
  // grid points (x, y, z) = (w, h, d) normalized; align_corners 1: -1 and 1 are the centers of the ends
  auto grid = tensor::from<float>({0, 0, 0, 1, -1, 0, -1, 1, 1, 0.5f, 0, -1, 3, 0, 0, 5, 5, 5}, {1, 1, 2, 3, 3});
  auto al = attrs({{"align_corners", i64{1}}});
  auto y = f.run(node("GridSample", 20, 1, al), {x, grid})[0].tensor();
  CHECK(y.sizes() == std::vector<i64>{1, 1, 1, 2, 3});
  check_close(y, {3.5, 3, 6, 1.75, 0, 0});
  al["padding_mode"] = std::string("border");
  check_close(f.run(node("GridSample", 20, 1, al), {x, grid})[0].tensor(), {3.5, 3, 6, 1.75, 4, 7});
  // nearest (half to even): (0, 0, 0) -> (0.5, 0.5, 0.5) -> 0; (0.5, 0, -1) -> w 0.75 -> 1, h 0.5 -> 0, d 0
  al["mode"] = std::string("nearest");
  al["padding_mode"] = std::string("zeros");
  check_close(f.run(node("GridSample", 20, 1, al), {x, grid})[0].tensor(), {0, 1, 6, 1, 0, 0});
  // align_corners 0: -1 and 1 are the outer edges; (-0.5, -0.5, -0.5) is the center of voxel 0
  auto g0 = tensor::from<float>({-0.5f, -0.5f, -0.5f, 0.5f, 0.5f, 0.5f, 0, 0, 0}, {1, 1, 1, 3, 3});
  check_close(f.run(node("GridSample", 20), {x, g0})[0].tensor(), {0, 7, 3.5});
}

TEST_CASE("exec.nn.grid_sample.nd_against_reference") {
  // 5-D and 6-D inputs (3 and 4 spatial dimensions, some of size 1 or 2, where padding
  // repeats or drops taps), every mode, padding and align_corners, f64 and f32
  nn_fixture f;
  for (const auto& [xs, gs] : {std::pair<std::vector<i64>, std::vector<i64>>{{2, 2, 3, 2, 4}, {2, 2, 3, 1, 3}},
                               std::pair<std::vector<i64>, std::vector<i64>>{{1, 2, 2, 1, 3, 5}, {1, 2, 2, 1, 2, 4}}}) {
    i64 nx = 1, ng = 1;
    for (i64 v : xs) nx *= v;
    for (i64 v : gs) ng *= v;
    const auto xv = iota_f(nx, 2.0f, 0.5f);
    auto gv = iota_f(ng, 1.6f);
    gv[3] = -1.0f, gv[5] = 1.0f, gv[7] = 0.0f;  // (the ends and the center exactly)
    for (const char* mode : {"nearest", "linear", "cubic"})
      for (const char* pad : {"zeros", "border", "reflection"})
        for (i64 align : {0, 1}) {
          INFO(mode << " " << pad << " align_corners " << align << " rank " << xs.size());
          auto a = attrs({{"mode", std::string(mode)}, {"padding_mode", std::string(pad)}, {"align_corners", align}});
          const auto want = grid_sample_ref(to_doubles(xv), xs, to_doubles(gv), gs, mode, pad, align != 0);
          const std::vector<double> xd = to_doubles(xv), gd = to_doubles(gv);
          auto yd = f.run(node("GridSample", 20, 1, a), {tensor::from<double>(xd, xs), tensor::from<double>(gd, gs)})[0].tensor();
          check_close(yd, want, 1e-12);
          auto yf = f.run(node("GridSample", 20, 1, a), {tensor::from<float>(xv, xs), tensor::from<float>(gv, gs)})[0].tensor();
          check_close(yf, want, 1e-5);
        }
  }
}

TEST_CASE("exec.nn.grid_sample.volumetric_parallel") {
  // 2 x 1000 points of 8 channels, cubic with reflection: 2 threads give the same values,
  // which are the reference's
  nn_fixture one(1), two(2);
  const std::vector<i64> xs{2, 8, 6, 5, 7}, gs{2, 10, 10, 10, 3};
  const auto xv = iota_f(2 * 8 * 6 * 5 * 7, 2.0f), gv = iota_f(2 * 1000 * 3, 1.3f);
  auto n = node("GridSample", 20, 1, attrs({{"mode", std::string("cubic")}, {"padding_mode", std::string("reflection")}}));
  const std::vector<value> in{tensor::from<float>(xv, xs), tensor::from<float>(gv, gs)};
  auto a = one.run(n, in)[0].tensor();
  CHECK(a == two.run(n, in)[0].tensor());
  check_close(a, grid_sample_ref(to_doubles(xv), xs, to_doubles(gv), gs, "cubic", "reflection", false), 1e-5);
}

// The spec allows any rank, but the points an output point reads grow as taps^rank: over
// 1024 of them (cubic over 12 dimensions of size 4 was 4^12 for each output point) is an
// error; dimensions of size 1 read one point, whatever the rank.
TEST_CASE("exec.nn.grid_sample.high_rank") {
  nn_fixture f;
  // X [N, C, k x d] and a grid [N, out..., k]
  auto xsizes = [](i64 C, std::size_t k, i64 d) {
    std::vector<i64> s{1, C};
    s.insert(s.end(), k, d);
    return s;
  };
  auto gsizes = [](i64 points, std::size_t k) {
    std::vector<i64> s{1, points};
    s.insert(s.end(), k - 1, 1);
    s.push_back(static_cast<i64>(k));
    return s;
  };
  auto count = [](const std::vector<i64>& s) {
    i64 n = 1;
    for (i64 v : s) n *= v;
    return n;
  };
  auto cubic = attrs({{"mode", std::string("cubic")}});
  // 12 spatial dimensions of size 2: 2^12 points each (cubic or linear), over the limit
  {
    const auto xs = xsizes(1, 12, 2), gs = gsizes(1, 12);
    auto x = tensor::from<float>(iota_f(count(xs)), xs);
    auto g = tensor::from<float>(std::vector<float>(12, 0.1f), gs);
    CHECK_THROWS_WITH_AS(f.run(node("GridSample", 20, 1, cubic), {x, g}), doctest::Contains("over the limit of 1024"), gpass::error);
    CHECK_THROWS_WITH_AS(f.run(node("GridSample", 20), {x, g}), doctest::Contains("reads 4096 input points"), gpass::error);
    // nearest reads one point at any rank: the last corner
    auto near = attrs({{"mode", std::string("nearest")}, {"align_corners", i64{1}}});
    auto corner = tensor::from<float>(std::vector<float>(12, 1.0f), gs);
    check_close(f.run(node("GridSample", 20, 1, near), {x, corner})[0].tensor(), {iota_f(count(xs)).back()});
  }
  // linear over 10 dimensions of size 2: 1024 points, the most allowed; 11 is over
  {
    const auto xs = xsizes(2, 10, 2), gs = gsizes(3, 10);
    const std::vector<float> xv = iota_f(count(xs)), gv = iota_f(30, 1.2f);
    auto y = f.run(node("GridSample", 20, 1, attrs({{"padding_mode", std::string("border")}})), {tensor::from<float>(xv, xs), tensor::from<float>(gv, gs)})[0].tensor();
    check_close(y, grid_sample_ref(to_doubles(xv), xs, to_doubles(gv), gs, "linear", "border", false), 1e-5);
    const auto x11 = xsizes(1, 11, 2);
    CHECK_THROWS_WITH_AS(f.run(node("GridSample", 20), {tensor::from<float>(iota_f(count(x11)), x11), tensor::from<float>(std::vector<float>(11, 0.0f), gsizes(1, 11))}),
                         doctest::Contains("over the limit of 1024"), gpass::error);
  }
  // cubic over 40 dimensions of size 1 (4^40 taps, a count that wrapped around to 0): one
  // point each, padding repeats or drops the other taps. Border: the weights sum to 1;
  // zeros: the tap on the point has weight W(0.15) in each dimension.
  {
    const auto xs = xsizes(2, 40, 1);
    auto x = tensor::from<float>({3, -5}, xs);
    auto g = tensor::from<float>(std::vector<float>(40, 0.3f), gsizes(1, 40));
    auto border = cubic;
    border["padding_mode"] = std::string("border");
    check_close(f.run(node("GridSample", 20, 1, border), {x, g})[0].tensor(), {3, -5});
    const double p = std::pow((1.25 * 0.15 - 2.25) * 0.15 * 0.15 + 1, 40);
    check_close(f.run(node("GridSample", 20, 1, cubic), {x, g})[0].tensor(), {3 * p, -5 * p}, 1e-4);
  }
}

// Coordinates that are NaN, infinite or huge: no cast of NaN to an index, no int64 overflow,
// no reflection loop per period. A NaN coordinate samples nothing (0) in every padding mode,
// as an infinite one does where padding does not bring it back (zeros, reflection); border
// clamps an infinite one to the edge.
TEST_CASE("exec.nn.grid_sample.nan_inf_and_huge_coordinates") {
  nn_fixture f;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto x = tensor::from<float>({1, 2, 3, 4}, {1, 1, 2, 2});
  // points (x, y): (NaN, 0), (0, NaN), (inf, 0), (-inf, 0), (1e38, 0), (-1e38, 0), (3e5, 0)
  auto grid = tensor::from<float>({nan, 0, 0, nan, inf, 0, -inf, 0, 1e38f, 0, -1e38f, 0, 3e5f, 0}, {1, 1, 7, 2});
  for (const char* mode : {"nearest", "linear", "cubic"})
    for (i64 align : {0, 1}) {
      INFO(mode << " align_corners " << align);
      auto a = attrs({{"mode", std::string(mode)}, {"align_corners", align}});
      auto y = f.run(node("GridSample", 20, 1, a), {x, grid})[0].tensor();
      check_close(y, {0, 0, 0, 0, 0, 0, 0});
      a["padding_mode"] = std::string("border");
      auto yb = gpass_test_exec::vals<float>(f.run(node("GridSample", 20, 1, a), {x, grid})[0].tensor());
      CHECK(yb[0] == 0);
      CHECK(yb[1] == 0);
      // y = 0 is halfway between the rows (nearest: rounds to the row below, 0.5 -> 0 or 0 -> 0)
      CHECK(yb[2] == yb[4]);
      CHECK(yb[3] == yb[5]);
      CHECK(yb[4] == yb[6]);
      CHECK(yb[2] > yb[3]);  // the right column (2, 4) against the left one (1, 3)
      a["padding_mode"] = std::string("reflection");
      auto yr = gpass_test_exec::vals<float>(f.run(node("GridSample", 20, 1, a), {x, grid})[0].tensor());
      for (std::size_t i = 0; i < 4; ++i) CHECK(yr[i] == 0);
      for (std::size_t i = 4; i < 7; ++i) {  // folded somewhere inside: a value of X's range
        CHECK(std::isfinite(yr[i]));
        CHECK(yr[i] >= 0.5);
        CHECK(yr[i] <= 4.5);
      }
    }
  // f64 grid: a coordinate of 1e300 (its pixel position overflows to inf) and 1e18 (beyond
  // int64 when doubled)
  auto xd = tensor::from<double>({1, 2, 3, 4}, {1, 1, 2, 2});
  auto gd = tensor::from<double>({1e300, 0, 1e18, 0, -1e18, 0}, {1, 1, 3, 2});
  check_close(f.run(node("GridSample", 20), {xd, gd})[0].tensor(), {0, 0, 0});
  check_close(f.run(node("GridSample", 20, 1, attrs({{"padding_mode", std::string("border")}})), {xd, gd})[0].tensor(), {3, 3, 2});
}

TEST_CASE("exec.nn.grid_sample.empty") {
  nn_fixture f;
  const i64 big = i64{1} << 40;
  // no channels: an empty output whatever the grid
  auto y = f.run(node("GridSample", 20), {tensor(gpass::dtype::f32, {1, 0, 4, 4}), tensor::from<float>(std::vector<float>(8, 0.0f), {1, 2, 2, 2})})[0].tensor();
  CHECK(y.sizes() == std::vector<i64>{1, 0, 2, 2});
  // an empty batch with huge other sizes (their products overflow): no work
  auto e = f.run(node("GridSample", 20), {tensor(gpass::dtype::f32, {0, 1, big, big, big}), tensor(gpass::dtype::f32, {0, big, big, 1, 3})})[0].tensor();
  CHECK(e.sizes() == std::vector<i64>{0, 1, big, big, 1});
  // an empty spatial extent with points to sample: an error
  CHECK_THROWS_WITH_AS(f.run(node("GridSample", 20), {tensor(gpass::dtype::f32, {1, 1, 0, 4}), tensor::from<float>({0, 0}, {1, 1, 1, 2})}),
                       doctest::Contains("empty spatial extent"), gpass::error);
}

TEST_CASE("exec.nn.roi_align") {
  nn_fixture f;
  auto x = tensor::from<float>(std::vector<float>(2 * 1 * 4 * 4, 3.0f), {2, 1, 4, 4});
  auto rois = tensor::from<float>({0, 0, 3, 3, 1, 1, 2, 2}, {2, 4});
  auto bi = tensor::from<std::int64_t>({0, 1});
  auto y = f.run(node("RoiAlign", 16, 1, attrs({{"output_height", i64{2}}, {"output_width", i64{2}}})), {x, rois, bi})[0].tensor();
  CHECK(y.sizes() == std::vector<i64>{2, 1, 2, 2});
  check_close(y, std::vector<double>(8, 3.0));
  // a linear ramp along W is reproduced at the sample centres
  std::vector<float> ramp(16);
  for (int i = 0; i < 16; ++i) ramp[static_cast<std::size_t>(i)] = static_cast<float>(i % 4);
  auto r = f.run(node("RoiAlign", 16, 1, attrs({{"output_height", i64{1}}, {"output_width", i64{2}}, {"sampling_ratio", i64{1}}})),
                 {tensor::from<float>(ramp, {1, 1, 4, 4}), tensor::from<float>({0.5f, 0.5f, 3.5f, 3.5f}, {1, 4}), tensor::from<std::int64_t>({0})})[0]
               .tensor();
  check_close(r, {0.75, 2.25});
  CHECK_THROWS_AS(f.run(node("RoiAlign", 16), {x, rois, tensor::from<std::int64_t>({0, 2})}), gpass::error);
  CHECK_THROWS_AS(f.run(node("RoiAlign", 16), {x, tensor::from<float>({0, 0, 1}, {1, 3}), tensor::from<std::int64_t>({0})}), gpass::error);
  // hostile rois: a box of 10^13 pixels would sample each bin 10^26 times (an error naming the
  // roi and the limit, not a hang), a NaN or infinite coordinate is an error, not a cast of NaN
  auto one = tensor::from<std::int64_t>({0});
  CHECK_THROWS_WITH_AS(f.run(node("RoiAlign", 16), {x, tensor::from<float>({0, 0, 1e13f, 1e13f}, {1, 4}), one}),
                       doctest::Contains("max_tensor_bytes"), gpass::error);
  CHECK_THROWS_WITH_AS(f.run(node("RoiAlign", 16, 1, attrs({{"sampling_ratio", i64{1} << 40}})), {x, rois, bi}),
                       doctest::Contains("roi 0 samples"), gpass::error);
  CHECK_THROWS_WITH_AS(f.run(node("RoiAlign", 16), {x, tensor::from<float>({0, std::nanf(""), 1, 1}, {1, 4}), one}),
                       doctest::Contains("not finite"), gpass::error);
  CHECK_THROWS_WITH_AS(f.run(node("RoiAlign", 16, 1, attrs({{"spatial_scale", 1e308}})), {x, rois, bi}), doctest::Contains("not finite"),
                       gpass::error);
  // a negative box (half_pixel, no clamp) has no samples: zeros, as the spec's loops give
  auto neg = f.run(node("RoiAlign", 16), {x, tensor::from<float>({3, 3, 0, 0}, {1, 4}), one})[0].tensor();
  check_close(neg, std::vector<double>(1, 0.0));
}

}  // namespace gpass_test_exec_nn
