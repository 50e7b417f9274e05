// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of det.hpp (ONNX Det, TensorFlow MatrixDeterminant): which nodes the GPU
// serves (no GPU needed), each against the Eigen CPU kernel on a GPU (Det step for step in
// double: the same bits; MatrixDeterminant to rounding, its log sum is Eigen's vectorized one
// on the CPU; without a GPU, the CPU side of each comparison runs), and the errors naming the
// node.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_det {

namespace {

using namespace gpass_test_cuda::prelude;

gpass::exec::kernel_node det() { return node("Det", 22); }
gpass::exec::kernel_node tf_det() { return node("MatrixDeterminant", 1, {}, 1, "tf"); }

/// Matrices [batch..., n, n] with a singular one (two proportional rows) and a zero one last.
tensor matrices(ints sizes, std::uint64_t seed, dtype t) {
  tensor x = rnd(sizes, seed, dtype::f64, -2, 2);
  const i64 n = sizes.back(), count = x.size() / (n * n);
  double* p = x.data<double>();
  if (count >= 2 && n >= 2)
    for (i64 k = 0; k < n; ++k) p[(count - 2) * n * n + n + k] = 3 * p[(count - 2) * n * n + k];
  if (count >= 3)
    for (i64 k = 0; k < n * n; ++k) p[(count - 1) * n * n + k] = 0;
  tensor y(t, sizes);
  gpass::visit_dtype(t, [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) y = x;
    else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>)
      for (i64 i = 0; i < x.size(); ++i) y.data<T>()[i] = static_cast<T>(static_cast<float>(p[i]));
  });
  return y;
}

}  // namespace

TEST_CASE("cuda: the determinants the GPU serves") {
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) CHECK(gpass_test_cuda::serves_in("", "Det", {t}));
  CHECK_FALSE(gpass_test_cuda::serves_in("", "Det", {dtype::int32}));
  for (dtype t : {dtype::f32, dtype::f64}) CHECK(gpass_test_cuda::serves_in("tf", "MatrixDeterminant", {t}));
  CHECK_FALSE(gpass_test_cuda::serves_in("tf", "MatrixDeterminant", {dtype::f16}));
}

TEST_CASE("cuda: Det and MatrixDeterminant match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  // one thread (n <= 16) and a block of threads per matrix; batch dims; pivoting, singular and
  // zero matrices
  for (i64 n : {1, 2, 3, 5, 17, 40})
    for (dtype t : {dtype::f64, dtype::f32}) {
      CAPTURE(n);
      CAPTURE(t);
      const tensor x = matrices({2, 3, n, n}, 10 + static_cast<std::uint64_t>(n), t);
      differential(det(), {x}, 1e-12, 0);
      differential(tf_det(), {x}, t == dtype::f64 ? 1e-10 : 1e-4, t == dtype::f64 ? 1e-300 : 1e-30);
    }
  for (dtype t : {dtype::f16, dtype::bf16}) differential(det(), {matrices({4, 3, 3}, 20, t)}, 1e-12, 0);
  // a matrix without rows (determinant 1), no matrices
  differential(det(), {tensor(dtype::f32, {2, 0, 0})}, 0, 0);
  differential(tf_det(), {tensor(dtype::f64, {3, 0, 0})}, 0, 0);
  differential(det(), {tensor(dtype::f32, {0, 4, 4})}, 0, 0);
}

TEST_CASE("cuda: the determinants fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  fails(det(), {rnd({2, 3, 4}, 1)}, "Det needs square matrices");
  fails(det(), {rnd({3}, 2)}, "Det needs square matrices");
  fails(tf_det(), {rnd({2, 3, 4}, 3)}, "input matrices must be square");
  fails(tf_det(), {rnd({3}, 4)}, "input must have rank >= 2");
}

}  // namespace gpass_test_cuda_det
