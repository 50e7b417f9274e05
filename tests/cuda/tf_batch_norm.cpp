// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of tf_batch_norm.hpp (FusedBatchNorm / V2 / V3 in training and inference,
// FusedBatchNormGrad / V2 / V3): which nodes the GPU serves (no GPU needed), each op against
// the Eigen CPU kernel on a GPU (without one, the CPU side of each comparison runs), and the
// errors naming the node.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_tf_batch_norm {

namespace {

using namespace gpass_test_cuda::prelude;

gpass::exec::kernel_node tf(std::string op, gpass::attribute_map attrs, std::size_t outputs) {
  return node(std::move(op), 1, std::move(attrs), outputs, "tf");
}

}  // namespace

TEST_CASE("cuda: the TensorFlow batch normalizations the GPU serves") {
  const dtype f = dtype::f32;
  const gpass::attribute_map train{{"is_training", true}}, infer{{"is_training", false}};
  const gpass::attribute_map nchw_train{{"is_training", true}, {"data_format", std::string("NCHW")}};
  const gpass::attribute_map nchw_infer{{"is_training", false}, {"data_format", std::string("NCHW")}};
  for (const char* op : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}) {
    CAPTURE(op);
    for (dtype t : {f, dtype::f64}) {
      CHECK(gpass_test_cuda::serves_in("tf", op, {t, t, t, t, t}, train));
      CHECK(gpass_test_cuda::serves_in("tf", op, {t, t, t, t, t}, infer));
    }
    CHECK_FALSE(gpass_test_cuda::serves_in("tf", op, {dtype::f16, dtype::f16, dtype::f16, dtype::f16, dtype::f16}, train));  // (nor the CPU)
    CHECK(gpass_test_cuda::serves_in("tf", op, {f, f, f, f, f}, nchw_infer));
    CHECK_FALSE(gpass_test_cuda::serves_in("tf", op, {f, f, f, f, f}, nchw_train));  // (the CPU's: NHWC only)
    CHECK_FALSE(gpass_test_cuda::serves_in("tf", op, {dtype::int32, f, f, f, f}, train));
  }
  for (const char* op : {"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"}) {
    CHECK(gpass_test_cuda::serves_in("tf", op, {f, f, f, f, f}, train));
    CHECK(gpass_test_cuda::serves_in("tf", op, {dtype::f64, dtype::f64, dtype::f64, dtype::f64, dtype::f64}, infer));
    CHECK_FALSE(gpass_test_cuda::serves_in("tf", op, {f, f, f, f, f}, nchw_train));
  }
}

TEST_CASE("cuda: TensorFlow FusedBatchNorm in training and its gradients match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const std::vector<std::pair<ints, dtype>> shapes = {
      {{4, 5, 6, 3}, dtype::f32},   {{2, 100, 100, 4}, dtype::f32},  // many chunks of rows
      {{7, 2}, dtype::f64},         {{3, 4, 4, 5}, dtype::f64},
      {{1, 1, 1, 6}, dtype::f32},   // one row: the variance's Bessel correction is 1
  };
  std::uint64_t seed = 1;
  for (const auto& [xs, t] : shapes) {
    CAPTURE(t);
    const i64 C = xs.back();
    const double tol = t == dtype::f32 ? 1e-5 : 1e-12;
    const auto x = rnd(xs, seed++, t, -2, 3), scale = rnd({C}, seed++, t, 0.5, 1.5), offset = rnd({C}, seed++, t);
    const auto rmean = rnd({C}, seed++, t), rvar = rnd({C}, seed++, t, 0.5, 2);
    // V3 (6 outputs) with the running statistics blended; V2 and V1 (5) without
    differential(tf("FusedBatchNormV3", {{"is_training", true}, {"epsilon", 1e-3}, {"exponential_avg_factor", 0.3}}, 6),
                 {x, scale, offset, rmean, rvar}, tol, tol);
    differential(tf("FusedBatchNormV2", {{"is_training", true}}, 5), {x, scale, offset, tensor(t, {0}), tensor(t, {0})}, tol, tol);
    differential(tf("FusedBatchNorm", {{"is_training", true}, {"epsilon", 0.01}}, 5), {x, scale, offset, rmean, rvar}, tol, tol);
    // the gradients of a training step (the batch statistics) and of inference
    const auto fwd = gpass_test_cuda::run_cpu(tf("FusedBatchNormV3", {{"is_training", true}}, 6), {x, scale, offset, rmean, rvar});
    const auto dy = rnd(xs, seed++, t);
    differential(tf("FusedBatchNormGradV3", {{"is_training", true}}, 6), {dy, x, scale, fwd.at(3), fwd.at(4), fwd.at(5)}, tol, tol);
    differential(tf("FusedBatchNormGrad", {{"is_training", false}, {"epsilon", 0.01}}, 5), {dy, x, scale, rmean, rvar}, tol, tol);
    differential(tf("FusedBatchNormV3", {{"is_training", false}}, 6), {x, scale, offset, rmean, rvar}, tol, tol);
  }
  // no rows: empty outputs, zero statistics and parameter gradients
  const auto e = tensor(dtype::f32, {0, 3}), p = rnd({3}, 50);
  differential(tf("FusedBatchNormV3", {{"is_training", true}}, 6), {e, p, p, p, p}, 0, 0);
  differential(tf("FusedBatchNormGradV3", {{"is_training", true}}, 6), {e, e, p, p, p, p}, 0, 0);
}

TEST_CASE("cuda: the TensorFlow batch normalizations fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  const auto x = rnd({2, 3}, 1), p = rnd({3}, 2);
  fails(tf("FusedBatchNormV3", {{"is_training", true}}, 6), {x, rnd({2}, 3), p, p, p}, "input 1 must have 3 elements");
  fails(tf("FusedBatchNormV3", {{"is_training", true}}, 6), {x, p, p, rnd({3}, 4, dtype::f64), p}, "mixed precision");
  fails(tf("FusedBatchNormV3", {{"is_training", true}}, 6), {rnd({3}, 5), p, p, p, p}, "x must have rank >= 2");
  fails(tf("FusedBatchNormGradV3", {{"is_training", true}}, 6), {rnd({2, 4}, 6), x, p, p, p, p}, "differ");
  fails(tf("FusedBatchNormGradV3", {{"is_training", true}}, 6), {x, x, p, rnd({2}, 7), p, p}, "input 3 must be f32[3]");
}

}  // namespace gpass_test_cuda_tf_batch_norm
