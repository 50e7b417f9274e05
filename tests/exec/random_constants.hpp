// SPDX-License-Identifier: Apache-2.0
#pragma once
// Random weights for graphs written as text in the executor tests.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace gpass_test_exec_util {

/// `n` floats uniform in [-scale, scale) from std::mt19937 seeded `seed`.
inline std::vector<float> random_floats(std::size_t n, unsigned seed, float scale) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

/// `%name = Constant() {value = tensor<f32[sizes]> [...]} -> (f32[sizes])` with random values
/// (printed with 9 significant digits: read back exactly).
inline std::string constant(const std::string& name, const std::vector<std::int64_t>& sizes, unsigned seed, float scale) {
  std::size_t n = 1;
  std::string dims;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    n *= static_cast<std::size_t>(sizes[i]);
    dims += (i ? "," : "") + std::to_string(sizes[i]);
  }
  std::string s = "  %" + name + " = Constant() {value = tensor<f32[" + dims + "]> [";
  const auto v = random_floats(n, seed, scale);
  char buf[32];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%s%.9g", i ? ", " : "", static_cast<double>(v[i]));
    s += buf;
  }
  return s + "]} -> (f32[" + dims + "])\n";
}

}  // namespace gpass_test_exec_util
