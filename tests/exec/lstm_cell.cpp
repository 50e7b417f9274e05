// SPDX-License-Identifier: Apache-2.0
// Tests of the vectorized default LSTM cell (kernels/lstm_cell.hpp): every form this processor
// runs (AVX-512, AVX2, portable Eigen arrays) against the cell in double precision, over
// ragged hidden sizes (tails of every length for both vector widths), arguments from 10^-2 to
// 10^2 (exp's clamp, tanh's two branches), and the special values.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/lstm_cell.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_lstm_cell {

namespace {

namespace lc = gpass::exec::cpu_detail::lstm_cell;
using i64 = std::int64_t;

struct form {
  std::string name;
  lc::row_fn f;
};

/// The forms this processor can run.
std::vector<form> forms() {
  std::vector<form> r{{"portable", &lc::row_portable}};
#if GPASS_SGEMM_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) r.push_back({"avx2", &lc::avx2::row});
  if (__builtin_cpu_supports("avx512f")) r.push_back({"avx512", &lc::avx512::row});
#endif
  return r;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// The cell in double: c and h from gates, bias and the previous c.
void reference(const std::vector<float>& g, const std::vector<float>& b, const std::vector<float>& c0, i64 H,
               std::vector<double>& c, std::vector<double>& h) {
  c.assign(static_cast<std::size_t>(H), 0.0);
  h.assign(static_cast<std::size_t>(H), 0.0);
  for (i64 j = 0; j < H; ++j) {
    auto at = [&](i64 q) { return static_cast<double>(g[static_cast<std::size_t>(q * H + j)]) + b[static_cast<std::size_t>(q * H + j)]; };
    const double i = sigmoid(at(0)), o = sigmoid(at(1)), f = sigmoid(at(2)), gg = std::tanh(at(3));
    c[static_cast<std::size_t>(j)] = f * c0[static_cast<std::size_t>(j)] + i * gg;
    h[static_cast<std::size_t>(j)] = o * std::tanh(c[static_cast<std::size_t>(j)]);
  }
}

}  // namespace

TEST_CASE("exec.lstm_cell.forms_match_double") {
  std::mt19937 rng(17);
  for (const form& fm : forms()) {
    double worst = 0;
    for (i64 H : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100}) {
      for (double scale : {0.01, 0.3, 1.0, 3.0, 20.0, 100.0}) {
        std::normal_distribution<float> d(0.0f, static_cast<float>(scale));
        std::vector<float> g(static_cast<std::size_t>(4 * H)), b(g.size()), c0(static_cast<std::size_t>(H));
        for (auto& v : g) v = d(rng);
        for (auto& v : b) v = d(rng);
        for (auto& v : c0) v = d(rng);
        std::vector<double> cr, hr;
        reference(g, b, c0, H, cr, hr);
        std::vector<float> c = c0, h(static_cast<std::size_t>(H), -7.0f);
        // the units past H must not be read or written: guard values around the state
        std::vector<float> cg(static_cast<std::size_t>(H + 32), 5.0f), hg(cg.size(), 5.0f);
        std::copy(c.begin(), c.end(), cg.begin() + 16);
        fm.f(g.data(), b.data(), cg.data() + 16, hg.data() + 16, H, H);
        for (i64 k = 0; k < 16; ++k) {
          REQUIRE(cg[static_cast<std::size_t>(k)] == 5.0f);
          REQUIRE(hg[static_cast<std::size_t>(k)] == 5.0f);
          REQUIRE(cg[static_cast<std::size_t>(H + 16 + k)] == 5.0f);
          REQUIRE(hg[static_cast<std::size_t>(H + 16 + k)] == 5.0f);
        }
        for (i64 j = 0; j < H; ++j) {
          const double cj = cg[static_cast<std::size_t>(j + 16)], hj = hg[static_cast<std::size_t>(j + 16)];
          const double ec = std::abs(cj - cr[static_cast<std::size_t>(j)]) / (1.0 + std::abs(cr[static_cast<std::size_t>(j)]));
          const double eh = std::abs(hj - hr[static_cast<std::size_t>(j)]);
          worst = std::max({worst, ec, eh});
        }
      }
    }
    INFO("form " << fm.name << ": worst error " << worst);
    CHECK(worst < 5e-7);
  }
}

TEST_CASE("exec.lstm_cell.unit_ranges") {
  // units [u0, u1) of a row (the gates H apart), as two threads cutting a step's units run
  // them: the same values as the whole row (the x86 forms to the bit: each lane computes
  // alike; Eigen's arrays may take a unit through its scalar tail in one call and a packet in
  // the other, 1 ulp apart), nothing outside the range touched
  std::mt19937 rng(23);
  std::normal_distribution<float> d(0.0f, 2.0f);
  for (const form& fm : forms())
    for (i64 H : {17, 64, 100})
      for (i64 u0 : {i64{0}, i64{1}, H / 2})
        for (i64 u1 : {u0 + 1, H - 3, H}) {
          if (u1 <= u0 || u1 > H) continue;
          INFO("form " << fm.name << " H " << H << " units [" << u0 << ", " << u1 << ")");
          std::vector<float> g(static_cast<std::size_t>(4 * H)), b(g.size()), c0(static_cast<std::size_t>(H));
          for (auto& v : g) v = d(rng);
          for (auto& v : b) v = d(rng);
          for (auto& v : c0) v = d(rng);
          std::vector<float> cw = c0, hw(static_cast<std::size_t>(H));
          fm.f(g.data(), b.data(), cw.data(), hw.data(), H, H);
          std::vector<float> cp = c0, hp(static_cast<std::size_t>(H), -9.0f);
          fm.f(g.data() + u0, b.data() + u0, cp.data() + u0, hp.data() + u0, u1 - u0, H);
          const float tol = fm.name == "portable" ? 5e-7f : 0.0f;
          for (i64 j = 0; j < H; ++j) {
            const std::size_t at = static_cast<std::size_t>(j);
            if (j < u0 || j >= u1) {
              CHECK(cp[at] == c0[at]);
              CHECK(hp[at] == -9.0f);
              continue;
            }
            CHECK(std::abs(cp[at] - cw[at]) <= tol * (1.0f + std::abs(cw[at])));
            CHECK(std::abs(hp[at] - hw[at]) <= tol);
          }
        }
}

TEST_CASE("exec.lstm_cell.special_values") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const form& fm : forms()) {
    INFO("form " << fm.name);
    // every gate at x, c = 0.5 before: c = s(x) * 0.5 + s(x) * tanh(x), h = s(x) * tanh(c)
    for (float x : {inf, -inf, 0.0f, -0.0f, 1e-30f, 88.5f, -88.5f, 200.0f, -200.0f, 0.6249f, 0.6251f, -0.6251f, 44.0f, -44.0f,
                    // tanh's reduction: n from 0 to -1 at 2|x| = ln 2 / 2, its clamp at 9
                    0.17328f, 0.17330f, -0.17330f, 8.99f, 9.01f, -9.01f, 1e-8f, 5e-4f}) {
      const float g[4] = {x, x, x, x}, b[4] = {0, 0, 0, 0};
      float c = 0.5f, h = 0.0f;
      fm.f(g, b, &c, &h, 1, 1);
      const double s = std::isinf(x) ? (x > 0 ? 1.0 : 0.0) : sigmoid(x);
      const double cr = s * 0.5 + s * (std::isinf(x) ? (x > 0 ? 1.0 : -1.0) : std::tanh(static_cast<double>(x)));
      const double hr = s * std::tanh(cr);
      INFO("x = " << x << ": c " << c << " vs " << cr << ", h " << h << " vs " << hr);
      CHECK(std::abs(c - cr) < 5e-7);
      CHECK(std::abs(h - hr) < 5e-7);
    }
    // NaN in a gate is NaN in the state and the output
    const float g[4] = {0.1f, 0.2f, 0.3f, nan}, b[4] = {0, 0, 0, 0};
    float c = 0.5f, h = 0.0f;
    fm.f(g, b, &c, &h, 1, 1);
    CHECK(std::isnan(c));
    CHECK(std::isnan(h));
  }
}

TEST_CASE("exec.lstm_cell.tanh_relative_error") {
  // c = sigmoid(200) * tanh(x) + f * 0 = tanh(x) (the input gate 1 in f32): tanh's relative
  // error from tiny arguments (where 1 - 2 / (e^2x + 1) would cancel) through its clamp
  for (const form& fm : forms()) {
    double worst = 0, at = 0;
    for (double e = -7.0; e <= 1.4; e += 0.0007)
      for (double sign : {1.0, -1.0}) {
        const float x = static_cast<float>(sign * std::pow(10.0, e));
        const float g[4] = {200.0f, 0.0f, 0.0f, x}, b[4] = {0, 0, 0, 0};
        float c = 0.0f, h = 0.0f;
        fm.f(g, b, &c, &h, 1, 1);
        const double want = std::tanh(static_cast<double>(x));
        const double err = std::abs(c - want) / std::abs(want);
        if (err > worst) {
          worst = err;
          at = x;
        }
      }
    INFO("form " << fm.name << ": worst relative error " << worst << " at x = " << at);
    CHECK(worst < 4e-7);
  }
}

TEST_CASE("exec.lstm_cell.dispatch_follows_the_gemm_engine") {
  const lc::row_fn f = lc::row_for_this_cpu();
  REQUIRE(static_cast<bool>(f));
#if GPASS_SGEMM_X86
  if (gpass::exec::cpu_detail::sgemm::kernel().name == "avx512") CHECK(static_cast<bool>(f == &lc::avx512::row));
  if (gpass::exec::cpu_detail::sgemm::kernel().name == "avx2") CHECK(static_cast<bool>(f == &lc::avx2::row));
  if (gpass::exec::cpu_detail::sgemm::kernel().name == "generic") CHECK(static_cast<bool>(f == &lc::row_portable));
#else
  CHECK(static_cast<bool>(f == &lc::row_portable));
#endif
}

}  // namespace gpass_test_exec_lstm_cell
