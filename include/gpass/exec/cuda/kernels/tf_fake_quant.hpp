// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_fake_quant.hpp
/// CUDA kernels of TensorFlow's FakeQuantWithMinMaxArgs (min, max attributes) and
/// FakeQuantWithMinMaxVars (min, max scalar inputs, read on the device: no host wait), f32 as
/// the CPU kernels: the range nudged so that 0 is one of the levels (TensorFlow's float
/// arithmetic, in each thread), each value clamped to it and rounded to the nearest level
/// (halves up); Vars with min = max = 0 gives zeros.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/tf.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/tf_rules.hpp>

namespace gpass::exec {

namespace cuda_tf {

/// `fake_quant(x, y, n, pmin, pmax, amin, amax, qmin, qmax)`: the bounds from pmin / pmax when
/// given (Vars), else amin / amax.
inline const std::string& fake_quant_source() {
  static const std::string s = cuda_codegen::cuda_prelude() + R"(extern "C" __global__ void fake_quant(const float* __restrict__ x,
    float* __restrict__ y, long long n, const float* pmin, const float* pmax, float amin, float amax, float qmin, float qmax) {
  const float mn = pmin ? *pmin : amin, mx = pmax ? *pmax : amax;
  const bool zeros = pmin && mn == 0.0f && mx == 0.0f;
  const float scale = (mx - mn) / (qmax - qmin);
  const float zero_from_min = qmin - mn / scale;
  const float zero = zero_from_min < qmin ? qmin : zero_from_min > qmax ? qmax : roundf(zero_from_min);
  const float lo = (qmin - zero) * scale, hi = (qmax - zero) * scale, inv = 1.0f / scale;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    if (zeros) {
      y[i] = 0.0f;
      continue;
    }
    const float v = x[i], m = lo < v ? v : lo, c = (m < hi ? m : hi) - lo;
    y[i] = floorf(c * inv + 0.5f) * scale + lo;
  }
}
)";
  return s;
}

inline fn make_tf_fake_quant(const kernel_node& n, bool vars) {
  const i64 bits = n.attr<i64>("num_bits", 8);
  if (bits < 2 || bits > 16) n.fail("num_bits must be in [2, 16], got " + std::to_string(bits));
  const float qmin = flag(n, "narrow_range", false) ? 1.0f : 0.0f, qmax = static_cast<float>((1 << bits) - 1);
  const float amin = static_cast<float>(n.attr<double>("min", -6.0)), amax = static_cast<float>(n.attr<double>("max", 6.0));
  if (!vars && !(amin < amax)) n.fail("min (" + std::to_string(amin) + ") must be less than max (" + std::to_string(amax) + ")");
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    if (x.element_type() != dtype::f32) ctx.fail("inputs must be float32");
    if (vars)
      for (std::size_t k : {std::size_t{1}, std::size_t{2}})
        if (ctx.input(k).element_type() != dtype::f32 || ctx.input(k).size() != 1 || ctx.input(k).rank() > 1)
          ctx.fail(std::string(k == 1 ? "min" : "max") + " must be a float32 scalar");
    cuda_tensor& y = ctx.allocate_output(0, dtype::f32, x.sizes());
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, "fake_quant", {"fake_quant"}, [] { return fake_quant_source(); });
    const void* xp = x.data();
    void* yp = y.data();
    const void* pmin = vars ? ctx.input(1).data() : nullptr;
    const void* pmax = vars ? ctx.input(2).data() : nullptr;
    long long nn = y.size();
    float a0 = amin, a1 = amax, q0 = qmin, q1 = qmax;
    void* args[] = {&xp, &yp, &nn, &pmin, &pmax, &a0, &a1, &q0, &q1};
    pol.launch(k.kernels[0], pol.blocks_for(nn), 256, args, ctx.stream());
  };
}

}  // namespace cuda_tf

/// Every source tf_fake_quant.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> tf_fake_quant_generated_sources() { return {{"tf::fake_quant", cuda_tf::fake_quant_source()}}; }

/// Registers FakeQuantWithMinMaxArgs and FakeQuantWithMinMaxVars.
inline void register_cuda_tf_fake_quant(kernel_registry<cuda>& r) {
  r.add({.domain = "tf", .op = "FakeQuantWithMinMaxArgs", .dtypes = {dtype::f32},
         .make = [](const kernel_node& n) { return cuda_tf::make_tf_fake_quant(n, false); }});
  r.add({.domain = "tf", .op = "FakeQuantWithMinMaxVars", .dtypes = {dtype::f32},
         .make = [](const kernel_node& n) { return cuda_tf::make_tf_fake_quant(n, true); }});
}

}  // namespace gpass::exec
