// SPDX-License-Identifier: Apache-2.0
// The CUDA element-wise kernels: every generated source compiles to PTX for sm_80 and sm_90
// (no GPU needed), and on a GPU each op matches the Eigen CPU kernel.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_elementwise {

namespace {

using gpass::dtype;
using gpass::tensor;
namespace ex = gpass::exec;
using gpass_test_cuda::differential;
using gpass_test_cuda::node;
using gpass_test_cuda::random_tensor;

// A node of `op` with the attributes its description reads.
ex::kernel_node node_for(const ex::cuda_detail::elementwise_op& op) {
  gpass::attribute_map a;
  if (op.op == "BitShift") a["direction"] = std::string("LEFT");
  if (op.op == "Cast") a["to"] = dtype::f16;
  return node(std::string(op.op), 21, a);
}

// Input types for `op` with `t` as its type-selecting input.
std::vector<dtype> inputs_for(const ex::cuda_detail::elementwise_op& op, dtype t) {
  std::vector<dtype> ts(static_cast<std::size_t>(op.min_inputs), t);
  if (op.op == "Where") ts = {dtype::bool_, dtype::f32, dtype::f32};
  if (op.op == "Clip") ts = {t, t, t};
  return ts;
}

}  // namespace

TEST_CASE("cuda: every element-wise kernel compiles with NVRTC for sm_80 and sm_90, for every type it accepts") {
  std::size_t compiled = 0;
  for (const auto& op : ex::cuda_detail::elementwise_ops()) {
    const auto n = node_for(op);
    for (dtype t : ex::cuda_detail::dtypes_of(op.accepts)) {
      const auto ts = inputs_for(op, t);
      const dtype out = op.output ? op.output(n, ts) : ts[0];
      const std::string src = ex::cuda_codegen::elementwise_source({ts, out, op.body(n, ts)});
      for (int arch : {80, 90}) {
        INFO(op.op << " on " << gpass::to_string(t) << " for sm_" << arch);
        CHECK_NOTHROW(ex::nvrtc_compile(src, std::string(op.op), arch, ex::nvrtc_target::ptx));
        ++compiled;
      }
    }
  }
  MESSAGE(compiled << " element-wise kernels compiled to PTX");
  CHECK(compiled > 500);
}

TEST_CASE("cuda: a generated source that does not compile is an error with NVRTC's log") {
  CHECK_THROWS_WITH_AS(ex::nvrtc_compile("extern \"C\" __global__ void k() { undeclared(); }", "bad.cu", 90, ex::nvrtc_target::ptx),
                       doctest::Contains("undeclared"), gpass::error);
}

TEST_CASE("cuda: element-wise ops match the CPU kernels") {
  GPASS_REQUIRE_GPU();
  const auto x = random_tensor(dtype::f32, {2, 3, 4}, -3, 3, 1);
  const auto y = random_tensor(dtype::f32, {2, 3, 4}, 0.5, 3, 2);
  const auto row = random_tensor(dtype::f32, {4}, -1, 1, 3);
  const auto col = random_tensor(dtype::f32, {3, 1}, -1, 1, 4);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"}) {
    differential(node(op), {x, y});
    differential(node(op), {x, row});
    differential(node(op), {col, x});
  }
  for (const char* op : {"Exp", "Tanh", "Sigmoid", "Relu", "Abs", "Neg", "Sqrt", "Erf", "Softplus", "Floor", "Round", "HardSwish"})
    differential(node(op), {op == std::string("Sqrt") ? y : x}, 2e-6, 1e-6);
  differential(node("LeakyRelu", 16, {{"alpha", 0.2}}), {x});
  differential(node("Sum"), {x, row, col});
  differential(node("Mean"), {x, y, row});
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) differential(node(op), {x, row});
  const auto c = random_tensor(dtype::bool_, {3, 4}, 0, 1, 5);
  differential(node("Where"), {c, x, row});
  differential(node("Clip", 13), {x, tensor::scalar(-1.0f), tensor::scalar(1.5f)});
  differential(node("Clip", 13), {x, tensor{}, tensor::scalar(0.5f)});
  differential(node("Cast", 21, {{"to", dtype::f16}}), {x});
  differential(node("Cast", 21, {{"to", dtype::int32}}), {x});
  const auto xi = random_tensor(dtype::int64, {5, 6}, -20, 20, 6);
  const auto yi = random_tensor(dtype::int64, {6}, 1, 7, 7);
  for (const char* op : {"Add", "Mul", "Div", "Max"}) differential(node(op), {xi, yi});
  differential(node("Mod"), {xi, yi});
  differential(node("Mod", 13, {{"fmod", std::int64_t{1}}}), {xi, yi});
  const auto h = random_tensor(dtype::f16, {7, 9}, -2, 2, 8);
  differential(node("Mul"), {h, h}, 1e-3, 1e-3);
}

}  // namespace gpass_test_cuda_elementwise
