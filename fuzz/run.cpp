// SPDX-License-Identifier: Apache-2.0
// Fuzz target run: ONNX models imported, inferred, planned and run on the Eigen CPU executor
// under tight limits (16 MiB per tensor, 128 MiB alive, 1000 loop iterations, call depth 16),
// on inputs made from the declared types (unknown dims 2, elements 0, 1, 2, ...). Property:
// bad input and failing kernels are gpass::errors; nothing crashes, reads out of bounds,
// hangs or takes more memory than the limits.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>

#include "harness.hpp"
#include "onnx_input.hpp"

namespace {
gpass::exec::value input_for(const gpass::type& t) {
  if (!t.is_tensor()) return {};
  const auto& tt = t.tensor();
  if (!tt.shape.has_rank() || !gpass::is_trivial(tt.element)) return {};
  std::vector<std::int64_t> sizes;
  for (const auto& d : tt.shape.dims()) sizes.push_back(d.is_known() ? std::min<std::int64_t>(d.value(), 64) : 2);
  gpass::tensor x(tt.element, sizes);
  if (x.size() > 4096) return {};
  gpass::visit_dtype(tt.element, [&]<class T>() {
    if constexpr (std::is_arithmetic_v<T>) {
      T* p = x.data<T>();
      for (std::int64_t i = 0; i < x.size(); ++i) p[i] = static_cast<T>(i % 3);
    }
  });
  return x;
}
}  // namespace

GPASS_FUZZ_TARGET(run) {
  auto g = gpass_fuzz::import_onnx_and_infer(gpass_fuzz::bytes_of(data, size));
  if (!g) return 0;
  static gpass::exec::eigen_cpu cpu;
  gpass::exec::plan_options po;
  po.limits.max_tensor_bytes = std::uint64_t{16} << 20;
  po.limits.max_run_bytes = std::uint64_t{128} << 20;
  po.limits.max_loop_iterations = 1000;
  po.limits.max_call_depth = 16;
  try {
    gpass::exec::plan<gpass::exec::eigen_cpu> p(*g, cpu, po);
    std::vector<gpass::exec::value> in;
    for (const auto& t : p.input_types()) in.push_back(input_for(t));
    (void)p.run(std::move(in));
  } catch (const gpass::error&) {
  }
  return 0;
}
