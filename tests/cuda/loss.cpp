// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of loss.hpp (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss): which
// nodes the GPU serves (no GPU needed), each against the Eigen CPU kernel on a GPU (without
// one, the CPU side of each comparison runs), and the errors naming the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_loss {

namespace {

using namespace gpass_test_cuda::prelude;

const char* const losses[] = {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"};

gpass::exec::kernel_node loss(const char* op, const std::string& reduction, bool ignore = false) {
  gpass::attribute_map a{{"reduction", reduction}};
  if (ignore) a["ignore_index"] = i64{-1};
  return node(op, 13, std::move(a), std::string(op) == "SoftmaxCrossEntropyLoss" ? 2 : 1);
}

}  // namespace

TEST_CASE("cuda: the losses the GPU serves") {
  for (const char* op : losses) {
    CAPTURE(op);
    for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) CHECK(gpass_test_cuda::serves_in("", op, {t, dtype::int64}));
    CHECK_FALSE(gpass_test_cuda::serves_in("", op, {dtype::int32, dtype::int64}));
  }
}

TEST_CASE("cuda: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  // [N, C], [N, C, D1, D2]; weights; ignore_index (and a mean whose every target is ignored:
  // NaN as on the CPU); int32 targets; every reduction; the 16-bit types in float
  const auto target_2d = I({0, 4, 2, 1, 3, 3});
  const auto target_4d = tensor::from<i64>({0, 4, 2, 1, 3, 3, -1, 0, 4, 2, 2, 1}, {2, 3, 2});
  for (const char* op : losses)
    for (const char* red : {"none", "sum", "mean"}) {
      CAPTURE(op);
      CAPTURE(red);
      differential(loss(op, red), {rnd({6, 5}, 1), target_2d}, 1e-5, 1e-6);
      differential(loss(op, red), {rnd({6, 5}, 2, dtype::f64), target_2d, rnd({5}, 3, dtype::f64, 0.1, 2)}, 1e-12, 1e-15);
      differential(loss(op, red, true), {rnd({2, 5, 3, 2}, 4), target_4d, rnd({5}, 5, dtype::f32, 0.1, 2)}, 1e-5, 1e-6);
      differential(loss(op, red, true), {rnd({2, 5, 3, 2}, 6), tensor::from<i64>(std::vector<i64>(12, -1), {2, 3, 2})}, 1e-5, 1e-6);
      differential(loss(op, red), {rnd({3, 4}, 7), tensor::from<std::int32_t>({3, 0, 1}, {3})}, 1e-5, 1e-6);
      differential(loss(op, red), {rnd({4, 6, 3}, 8, dtype::f16), tensor::from<i64>({0, 5, 2, 1, 3, 3, 4, 0, 5, 2, 2, 1}, {4, 3})}, 1e-3, 1e-3);
      differential(loss(op, red), {rnd({4, 6}, 9, dtype::bf16), I({5, 0, 1, 2})}, 1e-2, 1e-2);
    }
  // no batch: an empty loss (none), 0 (sum), NaN (mean)
  for (const char* red : {"none", "sum", "mean"}) differential(loss("SoftmaxCrossEntropyLoss", red), {tensor(dtype::f32, {0, 5}), I({})}, 0, 0);
}

TEST_CASE("cuda: the losses fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  for (const char* op : losses) {
    CAPTURE(op);
    fails(loss(op, "mean"), {rnd({3, 4}, 1), I({0, 4, 1})}, "target value 4 is out of range [0, 4)");
    fails(loss(op, "mean", true), {rnd({3, 4}, 2), I({0, -2, 1})}, "target value -2 is out of range");
    fails(loss(op, "sum"), {rnd({3, 4}, 3), I({0, 1})}, "target has shape");
    fails(loss(op, "sum"), {rnd({3, 4}, 4), I({0, 1, 2}), rnd({3}, 5)}, "weight must have shape [C] = [4]");
    fails(loss(op, "sum"), {rnd({4}, 6), I({0})}, "must have rank >= 2");
    fails(loss(op, "average"), {rnd({3, 4}, 7), I({0, 1, 2})}, "reduction must be none, sum or mean");
  }
}

}  // namespace gpass_test_cuda_loss
