// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one-node kernel runner the Eigen CPU kernel tests share: a policy, a registry filled by
// `Register` (one kernel family, or all of them), and `run` / `run1` for an op of the default
// domain at an opset (`DefaultOpset` unless given), or `run` of a node made by `node`.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/eigen_cpu.hpp>

namespace gpass_test_exec {

template <void (*Register)(gpass::exec::kernel_registry<gpass::exec::eigen_cpu>&), int DefaultOpset>
struct kernel_fixture {
  gpass::exec::eigen_cpu cpu;
  gpass::exec::kernel_registry<gpass::exec::eigen_cpu> reg;
  explicit kernel_fixture(int threads = 1) : cpu({.threads = threads}) { Register(reg); }

  /// The outputs of `op` (`outputs` ports) on `in`.
  std::vector<gpass::exec::value> run(const std::string& op, std::vector<gpass::exec::value> in, gpass::attribute_map attrs = {},
                                      int opset = DefaultOpset, std::size_t outputs = 1) {
    gpass::exec::kernel_node n{.name = "n", .op = op, .attrs = std::move(attrs), .opset = opset};
    n.input_types.resize(in.size());
    n.output_types.resize(outputs);
    return gpass::exec::run_kernel(cpu, reg, n, std::move(in));
  }
  /// The outputs of node `n` on `in`.
  std::vector<gpass::exec::value> run(const gpass::exec::kernel_node& n, std::vector<gpass::exec::value> in) {
    return gpass::exec::run_kernel(cpu, reg, n, std::move(in));
  }
  /// Output 0 of `op` on `in`, a tensor.
  gpass::tensor run1(const std::string& op, std::vector<gpass::exec::value> in, gpass::attribute_map attrs = {},
                     int opset = DefaultOpset) {
    return run(op, std::move(in), std::move(attrs), opset).at(0).tensor();
  }
};

/// A node of op `op` (default domain) at `opset` with `outputs` output ports.
inline gpass::exec::kernel_node node(const char* op, int opset, std::size_t outputs = 1, gpass::attribute_map attrs = {}) {
  gpass::exec::kernel_node n{.name = "n", .op = op, .attrs = std::move(attrs), .opset = opset};
  n.output_types.resize(outputs);
  return n;
}

/// An attribute map from name-value pairs.
inline gpass::attribute_map attrs(std::initializer_list<std::pair<const char*, gpass::attribute>> kv) {
  gpass::attribute_map m;
  for (const auto& [k, v] : kv) m[k] = v;
  return m;
}

/// An f32 tensor of `sizes`, uniform in [-1, 1) from `seed`.
inline gpass::tensor random_f32(std::vector<std::int64_t> sizes, unsigned seed) {
  gpass::tensor t(gpass::dtype::f32, std::move(sizes));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  for (std::int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = d(gen);
  return t;
}

/// The elements of `t` as a vector.
template <class T>
std::vector<T> vals(const gpass::tensor& t) {
  auto s = t.values<T>();
  return {s.begin(), s.end()};
}

}  // namespace gpass_test_exec
