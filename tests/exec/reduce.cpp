// SPDX-License-Identifier: Apache-2.0
// Tests of the Eigen CPU reduce-family kernels (reductions, ArgMax/ArgMin, CumSum, signal ops,
// NonMaxSuppression, TfIdfVectorizer, StringNormalizer, random generators).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>      // make_engine (the seeded reference draws)
#include <gpass/exec/fft.hpp>  // fft_plan (its length and byte checks)

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_reduce {

namespace {

using gpass::tensor;
using gpass::exec::eigen_cpu;
using gpass::exec::kernel_node;
using gpass::exec::value;
using i64 = std::int64_t;

const gpass::exec::kernel_registry<eigen_cpu>& reduce_registry() {
  static const gpass::exec::kernel_registry<eigen_cpu> r = [] {
    gpass::exec::kernel_registry<eigen_cpu> k;
    gpass::exec::register_eigen_cpu_reduce(k);
    return k;
  }();
  return r;
}

kernel_node node(const char* op, int opset, gpass::attribute_map attrs = {}, std::size_t outputs = 1) {
  kernel_node n{.name = "n", .op = op, .attrs = std::move(attrs), .opset = opset};
  n.output_types.resize(outputs);
  return n;
}

std::vector<value> run(const kernel_node& n, std::vector<value> in, int threads = 1) {
  eigen_cpu cpu({.threads = threads});
  return gpass::exec::run_kernel(cpu, reduce_registry(), n, std::move(in));
}

tensor run1(const kernel_node& n, std::vector<value> in, int threads = 1) { return run(n, std::move(in), threads).at(0).tensor(); }

// a run whose tensors may take at most `max_tensor_bytes` each
std::vector<value> run_limited(const kernel_node& n, std::vector<value> in, std::uint64_t max_tensor_bytes, int threads = 1) {
  eigen_cpu cpu({.threads = threads});
  return gpass::exec::run_kernel(cpu, reduce_registry(), n, std::move(in), {.max_tensor_bytes = max_tensor_bytes});
}

constexpr i64 i64_max = std::numeric_limits<i64>::max();

template <class T>
void check_close(const tensor& t, const std::vector<T>& want, double tol = 1e-5) {
  auto v = t.values<T>();
  REQUIRE(v.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(static_cast<double>(want[i]))) CHECK(std::isnan(static_cast<double>(v[i])));
      else if (std::isinf(want[i])) CHECK(v[i] == want[i]);
      else CHECK(static_cast<double>(v[i]) == doctest::Approx(static_cast<double>(want[i])).epsilon(tol));
    } else {
      CHECK(v[i] == want[i]);
    }
  }
}

// a 3x2x2 input: 1..12
tensor x322() { return tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 2, 2}); }

}  // namespace

TEST_CASE("exec.reduce.sum_axes_attribute_and_input") {
  // opset 11: axes attribute
  auto y = run1(node("ReduceSum", 11, {{"axes", std::vector<i64>{1}}, {"keepdims", i64{1}}}), {x322()});
  CHECK(y.sizes() == std::vector<i64>{3, 1, 2});
  check_close<float>(y, {4, 6, 12, 14, 20, 22});
  // opset 13: axes input, keepdims 0
  y = run1(node("ReduceSum", 13, {{"keepdims", i64{0}}}), {x322(), tensor::from<i64>({1})});
  CHECK(y.sizes() == std::vector<i64>{3, 2});
  check_close<float>(y, {4, 6, 12, 14, 20, 22});
  // default axes: everything
  y = run1(node("ReduceSum", 13, {{"keepdims", i64{1}}}), {x322()});
  CHECK(y.sizes() == std::vector<i64>{1, 1, 1});
  check_close<float>(y, {78});
  y = run1(node("ReduceSum", 13, {{"keepdims", i64{0}}}), {x322(), tensor::from<i64>(std::vector<i64>{})});
  CHECK(y.sizes().empty());
  check_close<float>(y, {78});
  // noop_with_empty_axes: input unchanged
  y = run1(node("ReduceSum", 13, {{"noop_with_empty_axes", i64{1}}}), {x322(), tensor::from<i64>(std::vector<i64>{})});
  CHECK(y == x322());
  // negative axes, several axes (inner contiguous, outer, and general layouts)
  y = run1(node("ReduceSum", 13, {{"keepdims", i64{0}}}), {x322(), tensor::from<i64>({-1, -2})});
  check_close<float>(y, {10, 26, 42});
  y = run1(node("ReduceSum", 13, {{"keepdims", i64{0}}}), {x322(), tensor::from<i64>({0})});
  check_close<float>(y, {15, 18, 21, 24});
  y = run1(node("ReduceSum", 13, {{"keepdims", i64{0}}}), {x322(), tensor::from<i64>({0, 2})});
  check_close<float>(y, {1 + 2 + 5 + 6 + 9 + 10, 3 + 4 + 7 + 8 + 11 + 12});
  // int64
  auto yi = run1(node("ReduceSum", 13, {{"keepdims", i64{0}}}), {tensor::from<i64>({1, 2, 3, 4}, {2, 2}), tensor::from<i64>({1})});
  check_close<i64>(yi, {3, 7});
}

TEST_CASE("exec.reduce.kinds") {
  const tensor x = tensor::from<float>({-1, 2, -3, 4, 0.5f, 2}, {2, 3});
  auto r = [&](const char* op, std::vector<i64> axes) {
    return run1(node(op, 11, {{"axes", axes}, {"keepdims", i64{0}}}), {x});
  };
  check_close<float>(r("ReduceMean", {1}), {-2.0f / 3, 6.5f / 3});
  check_close<float>(r("ReduceMax", {1}), {2, 4});
  check_close<float>(r("ReduceMin", {0}), {-1, 0.5f, -3});
  check_close<float>(r("ReduceProd", {1}), {6, 4});
  check_close<float>(r("ReduceL1", {1}), {6, 6.5f});
  check_close<float>(r("ReduceL2", {1}), {std::sqrt(14.0f), std::sqrt(20.25f)});
  check_close<float>(r("ReduceSumSquare", {0}), {17, 4.25f, 13});
  check_close<float>(r("ReduceLogSum", {0}), {std::log(3.0f), std::log(2.5f), std::numeric_limits<float>::quiet_NaN()});
  check_close<float>(r("ReduceLogSumExp", {1}),
                     {std::log(std::exp(-1.0f) + std::exp(2.0f) + std::exp(-3.0f)),
                      std::log(std::exp(4.0f) + std::exp(0.5f) + std::exp(2.0f))});
  // the outer ([R, K]) path for every kind
  check_close<float>(r("ReduceMax", {0}), {4, 2, 2});
  check_close<float>(r("ReduceL1", {0}), {5, 2.5f, 5});
  check_close<float>(r("ReduceProd", {0}), {-4, 1, -6});
  check_close<float>(r("ReduceLogSumExp", {0}),
                     {std::log(std::exp(-1.0f) + std::exp(4.0f)), std::log(std::exp(2.0f) + std::exp(0.5f)),
                      std::log(std::exp(-3.0f) + std::exp(2.0f))});
  // LogSumExp of large values stays finite
  auto big = run1(node("ReduceLogSumExp", 13, {{"keepdims", i64{0}}}), {tensor::from<double>({1000, 1000})});
  check_close<double>(big, {1000 + std::log(2.0)});
}

TEST_CASE("exec.reduce.general_layout_all_kinds") {
  // axes {0, 2} of a 2x3x2 tensor: a strided walk; compare with a direct computation
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = 0.25f * static_cast<float>(i) - 1.0f;
  const tensor x = tensor::from<float>(v, {2, 3, 2});
  auto y = run1(node("ReduceLogSumExp", 11, {{"axes", std::vector<i64>{0, 2}}, {"keepdims", i64{1}}}), {x});
  CHECK(y.sizes() == std::vector<i64>{1, 3, 1});
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int a = 0; a < 2; ++a)
      for (int c = 0; c < 2; ++c) s += std::exp(static_cast<double>(v[a * 6 + j * 2 + c]));
    CHECK(y.values<float>()[j] == doctest::Approx(std::log(s)).epsilon(1e-5));
  }
  auto m = run1(node("ReduceMean", 11, {{"axes", std::vector<i64>{0, 2}}, {"keepdims", i64{0}}}), {x});
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int a = 0; a < 2; ++a)
      for (int c = 0; c < 2; ++c) s += v[a * 6 + j * 2 + c];
    CHECK(m.values<float>()[j] == doctest::Approx(s / 4).epsilon(1e-5));
  }
}

TEST_CASE("exec.reduce.empty_and_noop") {
  const tensor e(gpass::dtype::f32, {2, 0});
  const float inf = std::numeric_limits<float>::infinity();
  auto r = [&](const char* op) { return run1(node(op, 18, {{"keepdims", i64{0}}}), {e, tensor::from<i64>({1})}); };
  check_close<float>(r("ReduceMax"), {-inf, -inf});
  check_close<float>(r("ReduceMin"), {inf, inf});
  check_close<float>(r("ReduceSum"), {0, 0});
  check_close<float>(r("ReduceProd"), {1, 1});
  check_close<float>(r("ReduceLogSumExp"), {-inf, -inf});
  check_close<float>(r("ReduceLogSum"), {-inf, -inf});
  auto mi = run1(node("ReduceMax", 18, {{"keepdims", i64{1}}}), {tensor(gpass::dtype::int32, {0, 3}), tensor::from<i64>({0})});
  CHECK(mi.sizes() == std::vector<i64>{1, 3});
  check_close<std::int32_t>(mi, {std::numeric_limits<std::int32_t>::lowest(), std::numeric_limits<std::int32_t>::lowest(),
                                 std::numeric_limits<std::int32_t>::lowest()});
  // an empty output
  auto eo = run1(node("ReduceSum", 13, {{"keepdims", i64{0}}}), {e, tensor::from<i64>({0})});
  CHECK(eo.sizes() == std::vector<i64>{0});
  // noop with empty axes still maps the elements (ReduceSumSquare squares them)
  auto sq = run1(node("ReduceSumSquare", 18, {{"noop_with_empty_axes", i64{1}}}), {tensor::from<float>({-2, 3})});
  check_close<float>(sq, {4, 9});
  // a scalar input
  auto s = run1(node("ReduceSum", 13, {{"keepdims", i64{0}}}), {tensor::scalar(5.0f)});
  CHECK(s.sizes().empty());
  check_close<float>(s, {5});
}

TEST_CASE("exec.reduce.errors") {
  CHECK_THROWS_AS(run(node("ReduceSum", 13), {x322(), tensor::from<i64>({3})}), gpass::error);
  CHECK_THROWS_AS(run(node("ReduceSum", 13), {x322(), tensor::from<i64>({1, -2})}), gpass::error);
  CHECK_THROWS_AS(run(node("ReduceSum", 13), {x322(), tensor::from<float>({1})}), gpass::error);
  CHECK_THROWS_AS(run(node("ReduceLogSumExp", 13), {tensor::from<i64>({1})}), gpass::error);
  CHECK_THROWS_AS(run(node("ArgMax", 13, {{"axis", i64{5}}}), {x322()}), gpass::error);
  CHECK_THROWS_AS(run(node("ArgMax", 13, {{"axis", i64{1}}}), {tensor(gpass::dtype::f32, {2, 0})}), gpass::error);
  CHECK_THROWS_AS(run(node("CumSum", 14), {x322(), tensor::scalar<i64>(3)}), gpass::error);
}

TEST_CASE("exec.reduce.parallel_big") {
  // full reduction (chunked partials), inner rows, outer rows, general: threads 2 == threads 1
  const i64 n = 300000;
  std::vector<float> v(n);
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
  const tensor x = tensor::from<float>(v, {n});
  double want = 0;
  for (float f : v) want += f;
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceLogSumExp", "ReduceL2"}) {
    auto a = run1(node(op, 13, {{"keepdims", i64{0}}}), {x}, 1);
    auto b = run1(node(op, 13, {{"keepdims", i64{0}}}), {x}, 2);
    CHECK(a.values<float>()[0] == doctest::Approx(b.values<float>()[0]).epsilon(1e-4));
  }
  CHECK(run1(node("ReduceSum", 13, {{"keepdims", i64{0}}}), {x}, 2).values<float>()[0] == doctest::Approx(want).epsilon(1e-4));
  CHECK(run1(node("ReduceMax", 13, {{"keepdims", i64{0}}}), {x}, 2).values<float>()[0] == doctest::Approx(0.999));
  const tensor m = x.reshaped({300, 10, 100});
  for (std::vector<i64> axes : {std::vector<i64>{2}, std::vector<i64>{0}, std::vector<i64>{1}, std::vector<i64>{0, 2}}) {
    auto a = run1(node("ReduceMean", 11, {{"axes", axes}}), {m}, 1);
    auto b = run1(node("ReduceMean", 11, {{"axes", axes}}), {m}, 2);
    REQUIRE(a.sizes() == b.sizes());
    for (i64 i = 0; i < a.size(); ++i) CHECK(a.values<float>()[i] == doctest::Approx(b.values<float>()[i]).epsilon(1e-5));
  }
  auto am1 = run1(node("ArgMax", 13, {{"axis", i64{1}}}), {m}, 1);
  auto am2 = run1(node("ArgMax", 13, {{"axis", i64{1}}}), {m}, 2);
  CHECK(am1 == am2);
}

TEST_CASE("exec.reduce.argmax_argmin") {
  const tensor x = tensor::from<float>({2, 1, 3, 10, 3, 3}, {2, 3});
  auto y = run1(node("ArgMax", 13, {{"axis", i64{1}}, {"keepdims", i64{1}}}), {x});
  CHECK(y.sizes() == std::vector<i64>{2, 1});
  check_close<i64>(y, {2, 0});
  y = run1(node("ArgMin", 13, {{"axis", i64{1}}, {"keepdims", i64{0}}}), {x});
  check_close<i64>(y, {1, 1});
  y = run1(node("ArgMin", 13, {{"axis", i64{-1}}, {"keepdims", i64{0}}, {"select_last_index", i64{1}}}), {x});
  check_close<i64>(y, {1, 2});
  y = run1(node("ArgMax", 13, {{"keepdims", i64{0}}}), {x});
  CHECK(y.sizes() == std::vector<i64>{3});
  check_close<i64>(y, {1, 1, 0});
  y = run1(node("ArgMax", 13, {{"select_last_index", i64{1}}}), {tensor::from<std::int32_t>({5, 5, 1})});
  CHECK(y.sizes() == std::vector<i64>{1});
  check_close<i64>(y, {1});
}

TEST_CASE("exec.reduce.cumsum") {
  const tensor x = tensor::from<double>({1, 2, 3, 4, 5});
  auto r = [&](i64 excl, i64 rev) {
    return run1(node("CumSum", 14, {{"exclusive", excl}, {"reverse", rev}}), {x, tensor::scalar<std::int32_t>(0)});
  };
  check_close<double>(r(0, 0), {1, 3, 6, 10, 15});
  check_close<double>(r(1, 0), {0, 1, 3, 6, 10});
  check_close<double>(r(0, 1), {15, 14, 12, 9, 5});
  check_close<double>(r(1, 1), {14, 12, 9, 5, 0});
  const tensor m = tensor::from<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  check_close<float>(run1(node("CumSum", 14), {m, tensor::scalar<i64>(0)}), {1, 2, 3, 5, 7, 9});
  check_close<float>(run1(node("CumSum", 14), {m, tensor::scalar<i64>(-1)}), {1, 3, 6, 4, 9, 15});
}

namespace {
// naive DFT of a complex signal (re, im interleaved)
std::vector<double> naive_dft(const std::vector<double>& x, int sign) {
  const std::size_t n = x.size() / 2;
  std::vector<double> r(2 * n, 0.0);
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t j = 0; j < n; ++j) {
      const double a = sign * 2.0 * 3.14159265358979323846 * static_cast<double>(j * k % n) / static_cast<double>(n);
      r[2 * k] += x[2 * j] * std::cos(a) - x[2 * j + 1] * std::sin(a);
      r[2 * k + 1] += x[2 * j] * std::sin(a) + x[2 * j + 1] * std::cos(a);
    }
  return r;
}
}  // namespace

TEST_CASE("exec.reduce.windows") {
  auto hann = run1(node("HannWindow", 17), {tensor::scalar<std::int32_t>(10)});
  CHECK(hann.element_type() == gpass::dtype::f32);
  check_close<float>(hann, {0, 0.0954915f, 0.3454915f, 0.6545085f, 0.9045085f, 1, 0.9045085f, 0.6545085f, 0.3454915f, 0.0954915f}, 1e-4);
  auto sym = run1(node("HannWindow", 17, {{"periodic", i64{0}}}), {tensor::scalar<i64>(3)});
  check_close<float>(sym, {0, 1, 0});
  auto ham = run1(node("HammingWindow", 17, {{"output_datatype", i64{11}}}), {tensor::scalar<i64>(4)});
  CHECK(ham.element_type() == gpass::dtype::f64);
  const double a0 = 25.0 / 46.0, a1 = 21.0 / 46.0;
  check_close<double>(ham, {a0 - a1, a0, a0 + a1, a0});
  auto bl = run1(node("BlackmanWindow", 17, {{"periodic", i64{0}}}), {tensor::scalar<i64>(3)});
  check_close<float>(bl, {0.0f, 1.0f, 0.0f}, 1e-4);
  CHECK(run1(node("HannWindow", 17), {tensor::scalar<i64>(0)}).size() == 0);
  CHECK_THROWS_AS(run(node("HannWindow", 17), {tensor::scalar<i64>(-1)}), gpass::error);
}

TEST_CASE("exec.reduce.windows_over_the_limits") {
  // the output's limit checked before any value is made (was a vector of 2^40 doubles first)
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    CHECK_THROWS_WITH_AS(run(node(op, 17), {tensor::scalar<i64>(i64{1} << 40)}), doctest::Contains("max_tensor_bytes"), gpass::error);
  CHECK_THROWS_WITH_AS(run_limited(node("HannWindow", 17), {tensor::scalar<i64>(1 << 20)}, 1 << 20), doctest::Contains("max_tensor_bytes"),
                       gpass::error);
  CHECK(run_limited(node("HannWindow", 17), {tensor::scalar<i64>(1 << 18)}, 1 << 20).at(0).tensor().size() == 1 << 18);
}

TEST_CASE("exec.reduce.dft") {
  for (int len : {8, 10, 7, 1}) {
    // complex input [1, len, 2] along axis 1
    std::vector<double> sig(2 * len);
    for (int i = 0; i < 2 * len; ++i) sig[i] = std::sin(0.7 * i) + 0.1 * i;
    const tensor xc = tensor::from<double>(sig, {1, len, 2});
    auto y = run1(node("DFT", 17, {{"axis", i64{1}}}), {xc});
    CHECK(y.sizes() == std::vector<i64>{1, len, 2});
    check_close<double>(y, naive_dft(sig, -1), 1e-9);
    // inverse round trip
    auto back = run1(node("DFT", 17, {{"axis", i64{1}}, {"inverse", i64{1}}}), {y});
    check_close<double>(back, sig, 1e-9);
    // real input, onesided
    std::vector<double> re(len), as_c(2 * len, 0.0);
    for (int i = 0; i < len; ++i) re[i] = as_c[2 * i] = std::cos(1.3 * i) - 0.2 * i;
    auto yr = run1(node("DFT", 17, {{"axis", i64{-2}}, {"onesided", i64{1}}}), {tensor::from<double>(re, {len, 1})});
    CHECK(yr.sizes() == std::vector<i64>{len / 2 + 1, 2});
    auto full = naive_dft(as_c, -1);
    full.resize(2 * (len / 2 + 1));
    check_close<double>(yr, full, 1e-9);
  }
  // dft_length pads with zeros; the axis in the middle of other dimensions
  const tensor x = tensor::from<float>({1, 2, 3, 4, 5, 6}, {1, 2, 3, 1});
  auto y = run1(node("DFT", 17, {{"axis", i64{2}}}), {x, tensor::scalar<i64>(4)});
  CHECK(y.sizes() == std::vector<i64>{1, 2, 4, 2});
  auto w0 = naive_dft({1, 0, 2, 0, 3, 0, 0, 0}, -1), w1 = naive_dft({4, 0, 5, 0, 6, 0, 0, 0}, -1);
  w0.insert(w0.end(), w1.begin(), w1.end());
  check_close<float>(y, std::vector<float>(w0.begin(), w0.end()), 1e-5);
  // onesided inverse (complex to real) undoes a onesided forward
  std::vector<float> re{1, -2, 0.5f, 4, 3, -1};
  auto spec = run1(node("DFT", 17, {{"axis", i64{0}}, {"onesided", i64{1}}}), {tensor::from<float>(re, {6, 1})});
  auto real = run1(node("DFT", 17, {{"axis", i64{0}}, {"onesided", i64{1}}, {"inverse", i64{1}}}), {spec});
  CHECK(real.sizes() == std::vector<i64>{6, 1});
  check_close<float>(real, re, 1e-5);
  // opset 20: axis as input 2
  auto y20 = run1(node("DFT", 20), {x, value{}, tensor::scalar<i64>(2)});
  CHECK(y20.sizes() == std::vector<i64>{1, 2, 3, 2});
  CHECK_THROWS_AS(run(node("DFT", 17, {{"axis", i64{3}}}), {x}), gpass::error);
  CHECK_THROWS_AS(run(node("DFT", 17), {tensor::from<float>({1, 2, 3}, {1, 1, 3})}), gpass::error);
}

TEST_CASE("exec.reduce.dft_hostile_lengths") {
  // an empty output needs no plan (was ~50 GB of Bluestein tables for 10^9 + 7 points)
  auto e = run1(node("DFT", 17, {{"axis", i64{1}}}), {tensor(gpass::dtype::f32, {0, 1, 1}), tensor::scalar<i64>(1000000007)});
  CHECK(e.sizes() == std::vector<i64>{0, 1000000007, 2});
  // the plan's tables count against max_tensor_bytes: 40001 points fit a 1 MiB output, not their tables
  const tensor one = tensor::from<float>({1}, {1, 1, 1});
  CHECK_THROWS_WITH_AS(run_limited(node("DFT", 17, {{"axis", i64{1}}}), {one, tensor::scalar<i64>(40001)}, 1 << 20),
                       doctest::Contains("the plan of a DFT of 40001 points"), gpass::error);
  CHECK_THROWS_WITH_AS(run_limited(node("DFT", 17, {{"axis", i64{1}}}), {one, tensor::scalar<i64>(40001)}, 1 << 20),
                       doctest::Contains("max_tensor_bytes"), gpass::error);
  auto y = run_limited(node("DFT", 17, {{"axis", i64{1}}}), {one, tensor::scalar<i64>(1001)}, 1 << 20).at(0).tensor();
  CHECK(y.sizes() == std::vector<i64>{1, 1001, 2});
  for (i64 k = 0; k < 1001; ++k) {  // the transform of an impulse: all ones
    CHECK(y.values<float>()[2 * k] == doctest::Approx(1.0));
    CHECK(y.values<float>()[2 * k + 1] == doctest::Approx(0.0).scale(1));
  }
  // past 2^62 points no power of two holds the convolution (the search wrapped to 0 and never ended)
  const i64 huge = (i64{1} << 62) + 1;
  CHECK_THROWS_WITH_AS(run(node("DFT", 17, {{"axis", i64{1}}}), {one, tensor::scalar<i64>(huge)}), doctest::Contains("overflows"),
                       gpass::error);
  CHECK(run1(node("DFT", 17, {{"axis", i64{1}}}), {tensor(gpass::dtype::f32, {0, 1, 1}), tensor::scalar<i64>(huge)}).size() == 0);
  using gpass::exec::fft::fft_plan;
  CHECK(fft_plan::padded_length(10) == std::size_t{32});
  CHECK(fft_plan::padded_length(std::size_t{1} << 62) == std::size_t{0});
  CHECK(fft_plan::padded_length((std::size_t{1} << 61) + 1) == std::size_t{1} << 63);
  CHECK_FALSE(fft_plan::padded_length((std::size_t{1} << 62) + 1).has_value());
  CHECK_FALSE(fft_plan::padded_length(std::numeric_limits<std::size_t>::max()).has_value());
  CHECK_FALSE(fft_plan::bytes_needed((std::size_t{1} << 61) + 1).has_value());
  CHECK(fft_plan::bytes_needed(16) == std::size_t{24 * 16});
  CHECK(fft_plan::bytes_needed(10) == std::size_t{16 * (20 + 80)});
  CHECK_THROWS_WITH_AS(fft_plan((std::size_t{1} << 62) + 1, -1), doctest::Contains("too long"), gpass::error);
  // each thread that runs the plan holds its own line and scratch: 40001 points (a convolution
  // of 131072) take 6.2 MiB on one line, 9.8 MiB on two lines run by two threads
  CHECK(fft_plan::bytes_needed(10, 2) == std::size_t{16 * (42 + 2 * 58)});
  CHECK(fft_plan::bytes_needed(16, 3) == std::size_t{3 * 24 * 16});
  CHECK_FALSE(fft_plan::bytes_needed(1 << 20, std::numeric_limits<std::size_t>::max()).has_value());
  const auto two_lines = [](int threads) {
    return run_limited(node("DFT", 17, {{"axis", i64{1}}}), {tensor::from<float>({1, 1}, {2, 1, 1}), tensor::scalar<i64>(40001)},
                       7 << 20, threads);
  };
  CHECK(two_lines(1).at(0).tensor().sizes() == std::vector<i64>{2, 40001, 2});
  CHECK_THROWS_WITH_AS(two_lines(4), doctest::Contains("the plan of a DFT of 40001 points on 2 threads"), gpass::error);
  CHECK(run_limited(node("DFT", 17, {{"axis", i64{1}}}), {one, tensor::scalar<i64>(40001)}, 7 << 20, 4).at(0).tensor().size() == 80002);
  // STFT: no batch, a signal as long as it likes: an empty output, no window, no plan
  auto s = run1(node("STFT", 17), {tensor(gpass::dtype::f32, {0, 1000000007, 1}), tensor::scalar<i64>(1)});
  CHECK(s.sizes() == std::vector<i64>{0, 1, 500000004, 2});
  std::vector<float> sig(40001, 0.0f);
  sig[0] = 1;
  CHECK_THROWS_WITH_AS(run_limited(node("STFT", 17), {tensor::from<float>(sig, {1, 40001, 1}), tensor::scalar<i64>(1)}, 1 << 20),
                       doctest::Contains("the plan of a DFT of 40001 points"), gpass::error);
}

TEST_CASE("exec.reduce.stft") {
  std::vector<float> sig(20);
  for (int i = 0; i < 20; ++i) sig[i] = static_cast<float>(i % 5) - 1.5f;
  const tensor x = tensor::from<float>(sig, {1, 20, 1});
  const std::vector<float> win{0.5f, 1, 1, 0.5f, 0.25f, 1};
  auto y = run1(node("STFT", 17), {x, tensor::scalar<i64>(4), tensor::from<float>(win)});
  const i64 frames = 1 + (20 - 6) / 4;
  CHECK(y.sizes() == std::vector<i64>{1, frames, 4, 2});
  for (i64 f = 0; f < frames; ++f) {
    std::vector<double> frame(12, 0.0);
    for (int j = 0; j < 6; ++j) frame[2 * j] = sig[f * 4 + j] * win[j];
    auto want = naive_dft(frame, -1);
    for (int k = 0; k < 4; ++k) {
      CHECK(y.values<float>()[(f * 4 + k) * 2] == doctest::Approx(want[2 * k]).epsilon(1e-5));
      CHECK(y.values<float>()[(f * 4 + k) * 2 + 1] == doctest::Approx(want[2 * k + 1]).scale(1).epsilon(1e-5));
    }
  }
  // frame_length without a window; not onesided
  auto z = run1(node("STFT", 17, {{"onesided", i64{0}}}), {x, tensor::scalar<i64>(5), value{}, tensor::scalar<i64>(5)});
  CHECK(z.sizes() == std::vector<i64>{1, 4, 5, 2});
  CHECK(z.values<float>()[0] == doctest::Approx(-1.5 - 0.5 + 0.5 + 1.5 + 2.5));
  CHECK_THROWS_AS(run(node("STFT", 17), {x, tensor::scalar<i64>(4), tensor::from<float>(win), tensor::scalar<i64>(5)}), gpass::error);
}

TEST_CASE("exec.reduce.mel_weight_matrix") {
  auto m = run1(node("MelWeightMatrix", 17),
                {tensor::scalar<std::int32_t>(8), tensor::scalar<std::int32_t>(16), tensor::scalar<std::int32_t>(8192),
                 tensor::scalar(0.0f), tensor::scalar(4096.0f)});
  CHECK(m.sizes() == std::vector<i64>{9, 8});
  // every filter has a peak of 1
  for (int i = 0; i < 8; ++i) {
    float mx = 0;
    for (int j = 0; j < 9; ++j) mx = std::max(mx, m.values<float>()[j * 8 + i]);
    CHECK(mx == 1.0f);
  }
}

TEST_CASE("exec.reduce.mel_weight_matrix_hostile") {
  auto mel = [](i64 mels, i64 dft, float lo, float hi) {
    return run(node("MelWeightMatrix", 17), {tensor::scalar<i64>(mels), tensor::scalar<i64>(dft), tensor::scalar<i64>(8192),
                                             tensor::scalar(lo), tensor::scalar(hi)});
  };
  // NaN passed every range check and reached a cast to int64
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH_AS(mel(8, 16, nan, 4096), doctest::Contains("finite"), gpass::error);
  CHECK_THROWS_WITH_AS(mel(8, 16, 0, nan), doctest::Contains("finite"), gpass::error);
  // the output checked first (were a filter table of num_mel_bins + 2 and a weight table in doubles)
  CHECK_THROWS_WITH_AS(mel(1000000000000, 16, 0, 4096), doctest::Contains("max_tensor_bytes"), gpass::error);
  // num_mel_bins + 2, dft_length + 1 and the output's element count overflowed int64
  CHECK_THROWS_WITH_AS(mel(i64_max, 16, 0, 4096), doctest::Contains("overflows"), gpass::error);
  CHECK_THROWS_WITH_AS(mel(1, i64_max, 0, 4096), doctest::Contains("do not fit in memory"), gpass::error);
  // one filter over the whole band
  auto one = mel(1, 8, 0, 4096).at(0).tensor();
  CHECK(one.sizes() == std::vector<i64>{5, 1});
}

TEST_CASE("exec.reduce.non_max_suppression") {
  // boxes as (y1, x1, y2, x2); the test of the ONNX docs (suppress by IOU)
  const tensor boxes = tensor::from<float>({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f, 0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101},
                                           {1, 6, 4});
  const tensor scores = tensor::from<float>({0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}, {1, 1, 6});
  auto y = run1(node("NonMaxSuppression", 11),
                {boxes, scores, tensor::from<i64>({3}), tensor::from<float>({0.5f}), tensor::from<float>({0.0f})});
  CHECK(y.sizes() == std::vector<i64>{3, 3});
  check_close<i64>(y, {0, 0, 3, 0, 0, 0, 0, 0, 5});
  // score threshold and a limit of 2
  y = run1(node("NonMaxSuppression", 11), {boxes, scores, tensor::from<i64>({2}), tensor::from<float>({0.5f}), tensor::from<float>({0.4f})});
  check_close<i64>(y, {0, 0, 3, 0, 0, 0});
  // center_point_box: (xc, yc, w, h)
  const tensor cb = tensor::from<float>({0.5f, 0.5f, 1, 1, 0.5f, 0.6f, 1, 1, 0.5f, 10.5f, 1, 1}, {1, 3, 4});
  y = run1(node("NonMaxSuppression", 11, {{"center_point_box", i64{1}}}),
           {cb, tensor::from<float>({0.9f, 0.95f, 0.5f}, {1, 1, 3}), tensor::from<i64>({10}), tensor::from<float>({0.5f})});
  check_close<i64>(y, {0, 0, 1, 0, 0, 2});
  // no max_output_boxes_per_class: nothing selected
  y = run1(node("NonMaxSuppression", 11), {boxes, scores});
  CHECK(y.sizes() == std::vector<i64>{0, 3});
  CHECK_THROWS_AS(run(node("NonMaxSuppression", 11), {boxes, tensor::from<float>({1, 2}, {1, 1, 2})}), gpass::error);
  // NaN scores rank after every number (among themselves by index), equal scores by index
  const float nan = std::numeric_limits<float>::quiet_NaN();
  y = run1(node("NonMaxSuppression", 11),
           {boxes, tensor::from<float>({nan, 0.5f, nan, 0.5f, 0.7f, 0.1f}, {1, 1, 6}), tensor::from<i64>({6}), tensor::from<float>({1.0f})});
  check_close<i64>(y, {0, 0, 4, 0, 0, 1, 0, 0, 3, 0, 0, 5, 0, 0, 0, 0, 0, 2});
  // a NaN iou_threshold is not in [0, 1]
  CHECK_THROWS_WITH_AS(run(node("NonMaxSuppression", 11), {boxes, scores, tensor::from<i64>({3}), tensor::from<float>({nan})}),
                       doctest::Contains("iou_threshold must be in [0, 1]"), gpass::error);
}

TEST_CASE("exec.reduce.tfidf") {
  // pool: unigrams {2, 3, 5, 4}, bigrams {(5,6), (7,8), (6,7)}
  gpass::attribute_map a{{"min_gram_length", i64{2}},
                         {"max_gram_length", i64{2}},
                         {"max_skip_count", i64{0}},
                         {"mode", std::string("TF")},
                         {"ngram_counts", std::vector<i64>{0, 4}},
                         {"ngram_indexes", std::vector<i64>{0, 1, 2, 3, 4, 5, 6}},
                         {"pool_int64s", std::vector<i64>{2, 3, 5, 4, 5, 6, 7, 8, 6, 7}}};
  const tensor x = tensor::from<std::int32_t>({1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8}, {2, 6});
  auto y = run1(node("TfIdfVectorizer", 9, a), {x});
  CHECK(y.sizes() == std::vector<i64>{2, 7});
  check_close<float>(y, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1});
  // unigrams and bigrams with skips
  a["min_gram_length"] = i64{1};
  a["max_skip_count"] = i64{5};
  y = run1(node("TfIdfVectorizer", 9, a), {x});
  check_close<float>(y, {0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1});
  // IDF with weights; string pool
  gpass::attribute_map s{{"min_gram_length", i64{1}},
                         {"max_gram_length", i64{1}},
                         {"max_skip_count", i64{0}},
                         {"mode", std::string("TFIDF")},
                         {"ngram_counts", std::vector<i64>{0}},
                         {"ngram_indexes", std::vector<i64>{1, 0}},
                         {"pool_strings", std::vector<std::string>{"a", "b"}},
                         {"weights", std::vector<double>{0.5, 2.0}}};
  y = run1(node("TfIdfVectorizer", 9, s), {tensor::from<std::string>({"a", "b", "a", "c"})});
  CHECK(y.sizes() == std::vector<i64>{2});
  check_close<float>(y, {0.5f, 4.0f});
  a["mode"] = std::string("bad");
  CHECK_THROWS_AS(run(node("TfIdfVectorizer", 9, a), {x}), gpass::error);
}

namespace {
// TfIdfVectorizer as the ONNX spec reads: every n-gram of min..max items, skip_count 0 ..
// max_skip_count items apart (unigrams once), counted into ngram_indexes, then weighed
std::vector<float> naive_tfidf(const std::vector<i64>& x, i64 rows, i64 C, i64 min_g, i64 max_g, i64 max_skip, const std::string& mode,
                               const std::vector<i64>& counts, const std::vector<i64>& indexes, const std::vector<i64>& pool,
                               const std::vector<float>& weights) {
  std::map<std::vector<i64>, i64> grams;
  i64 no = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const i64 size = static_cast<i64>(k) + 1, end = k + 1 < counts.size() ? counts[k + 1] : static_cast<i64>(pool.size());
    for (i64 p = counts[k]; p < end; p += size, ++no)
      if (size >= min_g && size <= max_g) grams.emplace(std::vector<i64>(pool.begin() + p, pool.begin() + p + size), indexes[no]);
  }
  i64 out = 0;
  for (i64 i : indexes) out = std::max(out, i + 1);
  std::vector<double> f(static_cast<std::size_t>(rows * out), 0.0);
  for (i64 r = 0; r < rows; ++r)
    for (i64 start = 0; start < C; ++start)
      for (i64 skip = 0; skip <= max_skip; ++skip)
        for (i64 n = min_g; n <= max_g; ++n) {
          if ((n == 1 && skip > 0) || start + (skip + 1) * (n - 1) >= C) continue;
          std::vector<i64> key;
          for (i64 j = 0; j < n; ++j) key.push_back(x[r * C + start + j * (skip + 1)]);
          if (auto it = grams.find(key); it != grams.end()) f[r * out + it->second] += 1;
        }
  std::vector<float> y;
  for (std::size_t i = 0; i < f.size(); ++i) {
    const std::size_t w = i % static_cast<std::size_t>(out);
    double v = f[i];
    if (mode == "IDF") v = v > 0 ? (weights.empty() ? 1.0 : weights[w]) : 0.0;
    else if (mode == "TFIDF" && !weights.empty()) v *= weights[w];
    y.push_back(static_cast<float>(v));
  }
  return y;
}
}  // namespace

TEST_CASE("exec.reduce.tfidf_hostile") {
  gpass::attribute_map a{{"min_gram_length", i64{1}},
                         {"max_gram_length", i64{2}},
                         {"max_skip_count", i64{1000000000000000}},
                         {"mode", std::string("TF")},
                         {"ngram_counts", std::vector<i64>{0, 2}},
                         {"ngram_indexes", std::vector<i64>{0, 1, 2}},
                         {"pool_int64s", std::vector<i64>{5, 6, 5, 6}}};
  // max_skip_count 10^15: the skips stop once no bigram fits (ran 10^15 times per item)
  check_close<float>(run1(node("TfIdfVectorizer", 9, a), {tensor::from<i64>({5})}), {1, 0, 0});
  check_close<float>(run1(node("TfIdfVectorizer", 9, a), {tensor::from<i64>({5, 5, 6, 6})}), {2, 2, 4});
  // max_skip_count + 1 overflowed (no n-gram was counted at all)
  a["max_skip_count"] = i64_max;
  check_close<float>(run1(node("TfIdfVectorizer", 9, a), {tensor::from<i64>({5, 7, 6})}), {1, 1, 1});
  // n-gram lengths near int64's end: start + skip * (n - 1) overflowed
  a["min_gram_length"] = i64{1} << 62;
  a["max_gram_length"] = i64{1} << 62;
  check_close<float>(run1(node("TfIdfVectorizer", 9, a), {tensor::from<i64>({5, 7, 6})}), {0, 0, 0});
  // the output checked first (was a table of rows x (max(ngram_indexes) + 1) doubles first)
  gpass::attribute_map big{{"min_gram_length", i64{1}},   {"max_gram_length", i64{1}},
                           {"max_skip_count", i64{0}},    {"mode", std::string("TF")},
                           {"ngram_counts", std::vector<i64>{0}}, {"ngram_indexes", std::vector<i64>{1000000000000}},
                           {"pool_int64s", std::vector<i64>{5}}};
  CHECK_THROWS_WITH_AS(run(node("TfIdfVectorizer", 9, big), {tensor::from<i64>({5})}), doctest::Contains("max_tensor_bytes"), gpass::error);
  big["ngram_indexes"] = std::vector<i64>{i64_max};
  CHECK_THROWS_WITH_AS(run(node("TfIdfVectorizer", 9, big), {tensor::from<i64>({5})}), doctest::Contains("too large"), gpass::error);
  // a large output index with a small pool: the counts take a slot per n-gram
  big["ngram_indexes"] = std::vector<i64>{99999};
  auto y = run1(node("TfIdfVectorizer", 9, big), {tensor::from<i64>({5, 1, 5}, {1, 3})});
  CHECK(y.sizes() == std::vector<i64>{1, 100000});
  CHECK(y.values<float>()[99999] == 2.0f);
  CHECK(y.values<float>()[0] == 0.0f);
}

TEST_CASE("exec.reduce.tfidf_against_spec") {
  // random pools, inputs and attributes: the kernel matches the spec's plain loops
  std::mt19937 gen(7);
  auto pick = [&](int lo, int hi) { return static_cast<i64>(std::uniform_int_distribution<int>(lo, hi)(gen)); };
  for (int round = 0; round < 300; ++round) {
    const i64 sizes = pick(1, 3), min_g = pick(1, 3), max_g = min_g + pick(0, 2), max_skip = pick(0, 6);
    std::vector<i64> counts, pool, indexes;
    for (i64 k = 0; k < sizes; ++k) {
      counts.push_back(static_cast<i64>(pool.size()));
      const i64 grams = pick(0, 4);
      for (i64 g = 0; g < grams * (k + 1); ++g) pool.push_back(pick(0, 3));
    }
    const i64 total = static_cast<i64>(pool.size());
    i64 ngrams = 0;
    for (i64 k = 0; k < sizes; ++k) ngrams += ((k + 1 < sizes ? counts[k + 1] : total) - counts[k]) / (k + 1);
    if (ngrams == 0) continue;
    for (i64 g = 0; g < ngrams; ++g) indexes.push_back(pick(0, static_cast<int>(ngrams)));  // repeats and gaps
    const std::string mode = round % 3 == 0 ? "TF" : round % 3 == 1 ? "IDF" : "TFIDF";
    std::vector<float> weights;
    if (round % 2) {
      i64 out = 0;
      for (i64 i : indexes) out = std::max(out, i + 1);
      for (i64 i = 0; i < out; ++i) weights.push_back(0.25f * static_cast<float>(pick(0, 8)));
    }
    const i64 rows = pick(1, 3), C = pick(0, 9);
    std::vector<i64> x;
    for (i64 i = 0; i < rows * C; ++i) x.push_back(pick(0, 3));
    gpass::attribute_map a{{"min_gram_length", min_g},   {"max_gram_length", max_g},  {"max_skip_count", max_skip},
                           {"mode", mode},               {"ngram_counts", counts},    {"ngram_indexes", indexes},
                           {"pool_int64s", pool}};
    if (!weights.empty()) a["weights"] = std::vector<double>(weights.begin(), weights.end());
    CAPTURE(round);
    auto y = run1(node("TfIdfVectorizer", 9, a), {tensor::from<i64>(x, {rows, C})});
    auto want = naive_tfidf(x, rows, C, min_g, max_g, max_skip, mode, counts, indexes, pool, weights);
    REQUIRE(y.size() == static_cast<i64>(want.size()));
    for (std::size_t i = 0; i < want.size(); ++i) CHECK(y.values<float>()[i] == want[i]);
  }
}

TEST_CASE("exec.reduce.string_normalizer") {
  const tensor x = tensor::from<std::string>({"Monday", "tuesday", "monday", "Wed"}, {1, 4});
  auto y = run1(node("StringNormalizer", 10, {{"case_change_action", std::string("UPPER")}, {"stopwords", std::vector<std::string>{"monday"}}}), {x});
  CHECK(y.sizes() == std::vector<i64>{1, 2});
  CHECK(y.values<std::string>()[0] == "TUESDAY");
  CHECK(y.values<std::string>()[1] == "WED");
  y = run1(node("StringNormalizer", 10, {{"is_case_sensitive", i64{1}}, {"stopwords", std::vector<std::string>{"monday"}}}),
           {tensor::from<std::string>({"Monday", "monday"})});
  CHECK(y.sizes() == std::vector<i64>{1});
  CHECK(y.values<std::string>()[0] == "Monday");
  y = run1(node("StringNormalizer", 10, {{"stopwords", std::vector<std::string>{"x"}}}), {tensor::from<std::string>({"X", "x"})});
  CHECK(y.sizes() == std::vector<i64>{1});
  CHECK(y.values<std::string>()[0].empty());
  y = run1(node("StringNormalizer", 10, {{"case_change_action", std::string("LOWER")}}), {tensor::from<std::string>({"AbC"})});
  CHECK(y.values<std::string>()[0] == "abc");
  CHECK_THROWS_AS(run(node("StringNormalizer", 10), {tensor::from<std::string>({"a", "b"}, {2, 1})}), gpass::error);
}

TEST_CASE("exec.reduce.random") {
  auto u = run1(node("RandomUniform", 1, {{"shape", std::vector<i64>{3, 4}}, {"low", 2.0}, {"high", 3.0}, {"seed", 5.0}}), {});
  CHECK(u.sizes() == std::vector<i64>{3, 4});
  CHECK(u.element_type() == gpass::dtype::f32);
  for (float v : u.values<float>()) CHECK((v >= 2.0f && v <= 3.0f));
  // seeded: reproducible
  CHECK(u == run1(node("RandomUniform", 1, {{"shape", std::vector<i64>{3, 4}}, {"low", 2.0}, {"high", 3.0}, {"seed", 5.0}}), {}));
  auto nl = run1(node("RandomNormalLike", 1, {{"dtype", i64{11}}}), {tensor(gpass::dtype::f32, {1000})});
  CHECK(nl.element_type() == gpass::dtype::f64);
  double mean = 0;
  for (double v : nl.values<double>()) mean += v / 1000;
  CHECK(std::abs(mean) < 0.2);
  auto ul = run1(node("RandomUniformLike", 15), {tensor(gpass::dtype::f64, {2, 2})});
  CHECK(ul.element_type() == gpass::dtype::f64);
  auto b = run1(node("Bernoulli", 15), {tensor::from<float>({0, 1, 0, 1})});
  check_close<float>(b, {0, 1, 0, 1});
  auto bb = run1(node("Bernoulli", 15, {{"dtype", i64{9}}}), {tensor::from<double>({1, 0})});
  CHECK(bb.element_type() == gpass::dtype::bool_);
  CHECK(bb.values<bool>()[0]);
  CHECK_FALSE(bb.values<bool>()[1]);
  CHECK_THROWS_AS(run(node("RandomUniform", 1), {}), gpass::error);
  CHECK_THROWS_AS(run(node("RandomNormal", 1, {{"shape", std::vector<i64>{2}}, {"dtype", i64{7}}}), {}), gpass::error);
}

TEST_CASE("exec.reduce.random_over_the_limits") {
  // the output checked before any value is drawn (was a vector of 10^12 doubles first)
  for (const char* op : {"RandomUniform", "RandomNormal"}) {
    CHECK_THROWS_WITH_AS(run(node(op, 1, {{"shape", std::vector<i64>{1000000000000}}}), {}), doctest::Contains("max_tensor_bytes"),
                         gpass::error);
    CHECK_THROWS_WITH_AS(run(node(op, 1, {{"shape", std::vector<i64>{i64{1} << 32, i64{1} << 32}}}), {}), doctest::Contains("overflows"),
                         gpass::error);
  }
  // seeded values as before: drawn in order into the output
  auto u = run1(node("RandomUniform", 1, {{"shape", std::vector<i64>{5}}, {"seed", 3.0}, {"dtype", i64{11}}}), {});
  auto eng = gpass::exec::cpu_detail::make_engine(true, 3.0);
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  for (int i = 0; i < 5; ++i) CHECK(u.values<double>()[i] == dist(eng));
}

TEST_CASE("exec.reduce.general_layout_threads") {
  // [R, K, R] and [K, R, K, R] layouts with 1 and 2 threads, against a direct computation
  const i64 A = 40, B = 6, Cc = 30, D = 50;
  std::vector<float> v(A * B * Cc * D);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  const tensor x = tensor::from<float>(v, {A, B, Cc, D});
  for (int threads : {1, 2}) {
    auto y = run1(node("ReduceSumSquare", 11, {{"axes", std::vector<i64>{0, 2, 3}}, {"keepdims", i64{0}}}), {x}, threads);
    REQUIRE(y.sizes() == std::vector<i64>{B});
    for (i64 b = 0; b < B; ++b) {
      double s = 0;
      for (i64 a = 0; a < A; ++a)
        for (i64 c = 0; c < Cc * D; ++c) s += double(v[(a * B + b) * Cc * D + c]) * v[(a * B + b) * Cc * D + c];
      CHECK(y.values<float>()[b] == doctest::Approx(s).epsilon(1e-4));
    }
    auto z = run1(node("ReduceLogSumExp", 11, {{"axes", std::vector<i64>{1, 3}}, {"keepdims", i64{1}}}), {x}, threads);
    REQUIRE(z.sizes() == std::vector<i64>{A, 1, Cc, 1});
    for (i64 a = 0; a < A; a += 7)
      for (i64 c = 0; c < Cc; c += 5) {
        double s = 0;
        for (i64 b = 0; b < B; ++b)
          for (i64 d = 0; d < D; ++d) s += std::exp(double(v[((a * B + b) * Cc + c) * D + d]));
        CHECK(z.values<float>()[a * Cc + c] == doctest::Approx(std::log(s)).epsilon(1e-5));
      }
    auto m = run1(node("ReduceMin", 11, {{"axes", std::vector<i64>{0, 2}}, {"keepdims", i64{0}}}), {x}, threads);
    REQUIRE(m.sizes() == std::vector<i64>{B, D});
    for (i64 b = 0; b < B; ++b)
      for (i64 d = 0; d < D; d += 3) {
        float mn = 1e9f;
        for (i64 a = 0; a < A; ++a)
          for (i64 c = 0; c < Cc; ++c) mn = std::min(mn, v[((a * B + b) * Cc + c) * D + d]);
        CHECK(m.values<float>()[b * D + d] == mn);
      }
  }
  // an empty reduced dimension in a general layout
  auto e = run1(node("ReduceProd", 11, {{"axes", std::vector<i64>{0, 2}}, {"keepdims", i64{0}}}), {tensor(gpass::dtype::f32, {2, 3, 0})});
  check_close<float>(e, {1, 1, 1});
}

TEST_CASE("exec.reduce.dtypes") {
  using half = Eigen::half;
  const tensor h = tensor::from<half>({half(1), half(2), half(3), half(4), half(5), half(6)}, {2, 3});
  for (i64 axis : {0, 1}) {
    auto y = run1(node("ReduceMean", 11, {{"axes", std::vector<i64>{axis}}, {"keepdims", i64{0}}}), {h});
    CHECK(y.element_type() == gpass::dtype::f16);
    const std::vector<float> want = axis == 0 ? std::vector<float>{2.5f, 3.5f, 4.5f} : std::vector<float>{2, 5};
    REQUIRE(y.size() == static_cast<i64>(want.size()));
    for (std::size_t i = 0; i < want.size(); ++i) CHECK(static_cast<float>(y.values<half>()[i]) == want[i]);
  }
  auto l1 = run1(node("ReduceL1", 11, {{"keepdims", i64{0}}}), {tensor::from<std::int8_t>({-3, 4, -5})});
  check_close<std::int8_t>(l1, {12});
  auto mn = run1(node("ReduceMean", 11, {{"keepdims", i64{0}}}), {tensor::from<std::int32_t>({1, 2, 4})});
  check_close<std::int32_t>(mn, {2});
  auto u = run1(node("ReduceMin", 11, {{"axes", std::vector<i64>{0}}}), {tensor::from<std::uint64_t>({7, 3, 5, 9}, {2, 2})});
  check_close<std::uint64_t>(u, {5, 3});
  auto cs = run1(node("CumSum", 14), {tensor::from<half>({half(1), half(2), half(3)}), tensor::scalar<i64>(0)});
  CHECK(static_cast<float>(cs.values<half>()[2]) == 6.0f);
  CHECK_THROWS_AS(run(node("ReduceSum", 13), {tensor::from<std::string>({"a"})}), gpass::error);
  // integers whose square root or log is NaN or -inf (int8's 12 * 12 wraps to -112; log 0):
  // the double was cast to the integer type (undefined; a fuzz finding), now float_to_int's 0
  for (int threads : {1, 2}) {
    auto l2 = run1(node("ReduceL2", 11, {{"keepdims", i64{0}}}), {tensor::from<std::int8_t>({12})}, threads);
    check_close<std::int8_t>(l2, {0});
    auto ls = run1(node("ReduceLogSum", 11, {{"axes", std::vector<i64>{1}}, {"keepdims", i64{0}}}),
                   {tensor::from<std::int32_t>({0, 0, 3, 4}, {2, 2})}, threads);
    check_close<std::int32_t>(ls, {0, 1});
  }
  // int32 / int64 sums and products wrap (two's complement) in every layout, as the executor's
  // integer arithmetic does: they overflowed (undefined) before
  using i32 = std::int32_t;
  constexpr i32 i32_max = std::numeric_limits<i32>::max(), i32_min = std::numeric_limits<i32>::min();
  auto reduce = [&](const char* op, tensor t, std::vector<i64> axes, int threads = 1) {
    return run1(node(op, 11, {{"axes", std::move(axes)}, {"keepdims", i64{0}}}), {std::move(t)}, threads);
  };
  for (int threads : {1, 2}) {
    check_close<i32>(reduce("ReduceSum", tensor::from<i32>({i32_max, 1}), {0}, threads), {i32_min});
    check_close<i32>(reduce("ReduceSum", tensor::from<i32>({i32_max, 1, 1, 1}, {2, 2}), {0}, threads), {i32_min, 2});
    check_close<i32>(reduce("ReduceSum", tensor::from<i32>({i32_max, 7, 1, 7, 0, 7, 0, 7}, {2, 2, 2}), {0, 2}, threads),
                     {i32_min + 13, 15});
    check_close<i32>(reduce("ReduceL1", tensor::from<i32>({i32_min, 0}), {0}, threads), {i32_min});
    check_close<i32>(reduce("ReduceL1", tensor::from<i32>({i32_min, -1, 0, -2}, {2, 2}), {0}, threads), {i32_min, 3});
    check_close<i32>(reduce("ReduceSumSquare", tensor::from<i32>({65536, 3}), {0}, threads), {9});
    check_close<i32>(reduce("ReduceMean", tensor::from<i32>({i32_max, 1}), {0}, threads), {i32_min / 2});
    check_close<i64>(reduce("ReduceProd", tensor::from<i64>({i64{1} << 62, 4, 5}), {0}, threads), {0});
    check_close<i64>(reduce("ReduceProd", tensor::from<i64>({i64{1} << 62, 1, 4, 1}, {2, 2}), {0}, threads), {0, 1});
    auto cs = run1(node("CumSum", 14), {tensor::from<i32>({i32_max, 1, 1}), tensor::scalar<i64>(0)}, threads);
    check_close<i32>(cs, {i32_max, i32_min, i32_min + 1});
  }
  // a mean of 256 (or 128) int8 elements: the count as int8 was 0 (a division by zero) or -128
  // (the sum itself accumulates in int8 and wraps, as ReduceSum's)
  for (const auto& [n, first, want] : {std::tuple<int, std::int8_t, std::int8_t>{128, -128, -1}, {256, 100, 0}}) {
    std::vector<std::int8_t> v(static_cast<std::size_t>(n), 0);
    v[0] = first;
    check_close<std::int8_t>(reduce("ReduceMean", tensor::from<std::int8_t>(v), {0}), {want});
    check_close<std::int8_t>(reduce("ReduceMean", tensor::from<std::int8_t>(v, {n, 1}), {0}), {want});
  }
  std::vector<i64> big(200000, i64_max);  // the chunked path of one big reduction
  check_close<i64>(reduce("ReduceSum", tensor::from<i64>(big), {0}, 2), {-200000});
}

}  // namespace gpass_test_exec_reduce
