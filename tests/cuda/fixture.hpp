// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the CUDA tests share: the process's GPU policy (null where no GPU is usable, and the
// tests that need one skip with a message), and `differential`: one node run by the CUDA
// kernel and by the Eigen CPU kernel on the same inputs, outputs compared.

#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/cuda.hpp>
#include <gpass/exec/eigen_cpu.hpp>

#include "../session/loop_graph.hpp"

namespace gpass_test_cuda {

using gpass_test_graphs::while_loop;

/// The policy on device 0, made once; null (and a message printed once) without a GPU.
inline gpass::exec::cuda* gpu() {
  static std::unique_ptr<gpass::exec::cuda> p = [] {
    std::unique_ptr<gpass::exec::cuda> r;
    if (gpass::exec::cuda_device_count() > 0) r = std::make_unique<gpass::exec::cuda>();
    else MESSAGE("no CUDA device: the tests that run CUDA kernels are skipped");
    return r;
  }();
  return p.get();
}

/// Returns from the calling test case when there is no GPU.
#define GPASS_REQUIRE_GPU()                                           \
  do {                                                                \
    if (!::gpass_test_cuda::gpu()) {                                  \
      MESSAGE("skipped: no CUDA device");                             \
      return;                                                         \
    }                                                                 \
  } while (0)

/// Set (for one test case, by `GPASS_GPU_OR_CPU_SIDE`) where there is no GPU: `differential`
/// then runs the CPU side only.
inline bool& cpu_side_only() {
  static thread_local bool v = false;
  return v;
}
struct cpu_side_scope {
  cpu_side_scope() { cpu_side_only() = gpu() == nullptr; }
  ~cpu_side_scope() { cpu_side_only() = false; }
  cpu_side_scope(const cpu_side_scope&) = delete;
  cpu_side_scope& operator=(const cpu_side_scope&) = delete;
};

/// For a test case whose GPU work is all `differential` calls: with a GPU it runs as written;
/// without one each `differential` runs the CPU kernel alone, so that CI still checks that the
/// case's nodes and inputs are ones the CPU kernels take (the reference side of the
/// comparison), and the case says so.
#define GPASS_GPU_OR_CPU_SIDE()                                                           \
  ::gpass_test_cuda::cpu_side_scope gpass_cpu_side_scope_;                              \
  do {                                                                                    \
    if (!::gpass_test_cuda::gpu()) MESSAGE("no CUDA device: the CPU side of each comparison only"); \
  } while (0)

/// A node of op `op` (default domain) at `opset`, `outputs` output ports.
inline gpass::exec::kernel_node node(std::string op, int opset = 21, gpass::attribute_map attrs = {}, std::size_t outputs = 1,
                                     std::string domain = {}) {
  gpass::exec::kernel_node n{.name = "n", .op = std::move(op), .domain = std::move(domain), .attrs = std::move(attrs), .opset = opset};
  n.output_types.resize(outputs);
  return n;
}

/// Whether the CUDA registry serves a node of `op` in `domain` with these input types and
/// attributes (no GPU needed).
inline bool serves_in(const std::string& domain, const char* op, std::vector<gpass::dtype> inputs, const gpass::attribute_map& attrs = {}) {
  static const gpass::exec::kernel_registry<gpass::exec::cuda> reg = [] {
    gpass::exec::kernel_registry<gpass::exec::cuda> r;
    gpass::exec::register_cuda_kernels(r);
    return r;
  }();
  return reg.serves({.domain = domain, .op = op, .attrs = &attrs, .inputs = std::move(inputs)});
}

/// Runs `n` on the GPU: uploads `in` (a default tensor: an omitted input), downloads every
/// tensor output.
inline std::vector<gpass::tensor> run_gpu(const gpass::exec::kernel_node& n, const std::vector<gpass::tensor>& in) {
  auto& g = *gpu();
  std::vector<gpass::exec::basic_value<gpass::exec::cuda_tensor>> dev;
  for (const auto& t : in) {
    if (t.empty()) dev.emplace_back();
    else dev.emplace_back(g.upload(t, g.default_stream()));
  }
  gpass::exec::kernel_node m = n;
  m.input_types.resize(in.size());
  auto out = gpass::exec::run_kernel(g, g.kernels(), m, std::move(dev));
  std::vector<gpass::tensor> r;
  for (auto& v : out) r.push_back(v.is_tensor() ? g.download(v.tensor(), g.default_stream()) : gpass::tensor{});
  return r;
}

/// Runs `n` with the Eigen CPU kernels.
inline std::vector<gpass::tensor> run_cpu(const gpass::exec::kernel_node& n, const std::vector<gpass::tensor>& in) {
  static gpass::exec::eigen_cpu cpu;
  std::vector<gpass::exec::value> v;
  for (const auto& t : in) {
    if (t.empty()) v.emplace_back();
    else v.emplace_back(t);
  }
  gpass::exec::kernel_node m = n;
  m.input_types.resize(in.size());
  auto out = gpass::exec::run_kernel(cpu, cpu.kernels(), m, std::move(v));
  std::vector<gpass::tensor> r;
  for (auto& o : out) r.push_back(o.is_tensor() ? o.tensor() : gpass::tensor{});
  return r;
}

/// Element `i` of `t` as a double.
inline double element(const gpass::tensor& t, std::int64_t i) {
  return gpass::visit_dtype(t.element_type(), [&]<class T>() -> double {
    if constexpr (std::is_arithmetic_v<T>) return static_cast<double>(t.data<T>()[i]);
    else if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) return static_cast<double>(static_cast<float>(t.data<T>()[i]));
    else return 0.0;
  });
}

/// The number of real values `t` holds: two per complex element (its real and imaginary parts).
inline std::int64_t part_count(const gpass::tensor& t) {
  const bool complex = t.element_type() == gpass::dtype::complex64 || t.element_type() == gpass::dtype::complex128;
  return complex ? 2 * t.size() : t.size();
}

/// Real value `i` of `t` as a double: element `i`, or of a complex tensor part `i` (element i / 2's
/// real part for even i, imaginary for odd).
inline double part(const gpass::tensor& t, std::int64_t i) {
  if (t.element_type() == gpass::dtype::complex64) {
    const auto& z = t.data<std::complex<float>>()[i / 2];
    return i % 2 ? z.imag() : z.real();
  }
  if (t.element_type() == gpass::dtype::complex128) {
    const auto& z = t.data<std::complex<double>>()[i / 2];
    return i % 2 ? z.imag() : z.real();
  }
  return element(t, i);
}

/// Checks that `got` equals `want`: same type and sizes, every element (every part of a complex
/// one) within `rtol * |want| + atol` (NaN matching NaN).
inline void check_close(const gpass::tensor& got, const gpass::tensor& want, double rtol = 1e-5, double atol = 1e-6) {
  REQUIRE(got.element_type() == want.element_type());
  REQUIRE(got.sizes() == want.sizes());
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < part_count(want); ++i) {
    const double a = part(got, i), b = part(want, i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;
    if (!(std::abs(a - b) <= rtol * std::abs(b) + atol)) {
      if (bad++ < 5) MESSAGE("value " << i << ": got " << a << ", want " << b);
    }
  }
  CHECK(bad == 0);
}

/// Runs `n` on both and compares every output (see `check_close`).
inline void differential(const gpass::exec::kernel_node& n, const std::vector<gpass::tensor>& in, double rtol = 1e-5,
                         double atol = 1e-6) {
  auto want = run_cpu(n, in);
  if (cpu_side_only()) {  // no GPU: the reference side must run, and give every output
    INFO("op " << n.op);
    CHECK(want.size() == n.output_types.size());
    return;
  }
  auto got = run_gpu(n, in);
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    INFO("op " << n.op << ", output " << k);
    if (want[k].empty()) continue;
    check_close(got[k], want[k], rtol, atol);
  }
}

/// Checks that node `n` fails on `in` with a message that contains `what` and names the op:
/// the CPU kernel always, the GPU's too where there is a GPU.
inline void fails_alike(const gpass::exec::kernel_node& n, const std::vector<gpass::tensor>& in, const char* what) {
  CAPTURE(n.op);
  CHECK_THROWS_WITH_AS(run_cpu(n, in), doctest::Contains(what), gpass::error);
  if (!gpu()) return;
  CHECK_THROWS_WITH_AS(run_gpu(n, in), doctest::Contains(what), gpass::error);
  try {
    run_gpu(n, in);
  } catch (const gpass::error& e) {
    CHECK(std::string(e.what()).find(n.op) != std::string::npos);
  }
}

/// A tensor of `sizes` with deterministic values in [lo, hi) (integers: rounded; complex: each
/// part).
inline gpass::tensor random_tensor(gpass::dtype t, std::vector<std::int64_t> sizes, double lo = -2, double hi = 2,
                                   std::uint64_t seed = 1) {
  gpass::tensor r(t, std::move(sizes));
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  gpass::visit_dtype(t, [&]<class T>() {
    if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
      T* p = r.data<T>();
      for (std::int64_t i = 0; i < r.size(); ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const double u = static_cast<double>(s >> 11) / 9007199254740992.0;
        double v = lo + (hi - lo) * u;
        if constexpr (std::is_same_v<T, bool>) p[i] = v > (lo + hi) / 2;
        else if constexpr (std::is_integral_v<T>) p[i] = static_cast<T>(std::floor(v));
        else p[i] = static_cast<T>(static_cast<float>(v));
      }
    } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      T* p = r.data<T>();
      for (std::int64_t i = 0; i < 2 * r.size(); ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const double u = static_cast<double>(s >> 11) / 9007199254740992.0;
        const auto v = static_cast<typename T::value_type>(lo + (hi - lo) * u);
        if (i % 2) p[i / 2].imag(v);
        else p[i / 2].real(v);
      }
    }
  });
  return r;
}

/// What every CUDA test file uses (`using namespace gpass_test_cuda::prelude;`).
namespace prelude {
using gpass::dtype;
using gpass::tensor;
namespace ex = gpass::exec;
using gpass_test_cuda::differential;
using gpass_test_cuda::node;
using gpass_test_cuda::random_tensor;
using i64 = std::int64_t;
using ints = std::vector<i64>;
/// A float tensor (or of type `t`) of `sizes` with deterministic values in [lo, hi).
inline tensor rnd(ints sizes, std::uint64_t seed, dtype t = dtype::f32, double lo = -3, double hi = 3) {
  return random_tensor(t, std::move(sizes), lo, hi, seed);
}
/// An int64 (`I`) or int32 (`I32`) vector.
inline tensor I(ints v) { return tensor::from<i64>(std::move(v)); }
inline tensor I32(std::vector<std::int32_t> v) { return tensor::from<std::int32_t>(std::move(v)); }
}  // namespace prelude

}  // namespace gpass_test_cuda
