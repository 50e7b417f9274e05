// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of tf_matrix.hpp (MatrixDiag, MatrixDiagPart, MatrixSetDiag and their V2 /
// V3 forms): which nodes the GPU serves (no GPU needed), each op against the Eigen CPU kernel
// on a GPU (without one, the CPU side of each comparison runs), and the errors naming the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_tf_matrix {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::run_cpu;
using gpass_test_cuda::run_gpu;

gpass::exec::kernel_node tf(std::string op, gpass::attribute_map attrs = {}) { return node(std::move(op), 1, std::move(attrs), 1, "tf"); }

tensor i32s(std::vector<std::int32_t> v, ints sizes) { return tensor::from<std::int32_t>(std::move(v), std::move(sizes)); }
tensor k_of(std::int32_t lo, std::int32_t hi) { return lo == hi ? tensor::scalar<std::int32_t>(lo) : i32s({lo, hi}, {2}); }

gpass::attribute_map aligned(const char* a) { return {{"align", std::string(a)}}; }

const char* const alignments[] = {"LEFT_LEFT", "LEFT_RIGHT", "RIGHT_LEFT", "RIGHT_RIGHT"};

}  // namespace

TEST_CASE("cuda: the TensorFlow diagonal ops the GPU serves") {
  for (const char* base : {"MatrixDiag", "MatrixDiagPart", "MatrixSetDiag"})
    for (const char* suffix : {"", "V2", "V3"}) {
      const std::string op = std::string(base) + suffix;
      CAPTURE(op);
      for (dtype t : {dtype::f32, dtype::f16, dtype::f64, dtype::int8, dtype::uint64, dtype::bool_})
        CHECK(gpass_test_cuda::serves_in("tf", op.c_str(), {t, dtype::int32, dtype::int32}));
      CHECK_FALSE(gpass_test_cuda::serves_in("tf", op.c_str(), {dtype::string, dtype::int32}));
    }
}

TEST_CASE("cuda: TensorFlow MatrixDiag, MatrixDiagPart and MatrixSetDiag (V1, V2, V3) match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto m = rnd({2, 4, 5}, 1);       // wide matrices
  const auto tall = rnd({3, 6, 3}, 2);    // tall ones
  // V1: the main diagonal, of one type per element size
  differential(tf("MatrixDiagPart"), {m});
  differential(tf("MatrixDiagPart"), {rnd({3, 2}, 3, dtype::int8, -100, 100)});
  differential(tf("MatrixDiag"), {rnd({2, 3}, 4, dtype::f16)});
  differential(tf("MatrixDiag"), {rnd({4}, 5, dtype::int64, -9, 9)});
  differential(tf("MatrixSetDiag"), {tall, rnd({3, 3}, 6)});
  differential(tf("MatrixSetDiag"), {rnd({2, 2}, 7, dtype::bool_), rnd({2}, 8, dtype::bool_)});
  // V2 / V3: single diagonals above, on and below the main one; bands across it, above it, below
  // it; each alignment; the padding value
  const std::pair<std::int32_t, std::int32_t> bands[] = {{1, 1}, {0, 0}, {-2, -2}, {-1, 2}, {1, 3}, {-3, -1}, {-3, 4}};
  for (const auto& [lo, hi] : bands)
    for (const char* a : alignments) {
      CAPTURE(lo);
      CAPTURE(hi);
      CAPTURE(a);
      differential(tf("MatrixDiagPartV3", aligned(a)), {m, k_of(lo, hi), tensor::scalar(-7.5f)});
      const auto parts = run_cpu(tf("MatrixDiagPartV3", aligned(a)), {m, k_of(lo, hi), tensor::scalar(-7.5f)});
      differential(tf("MatrixSetDiagV3", aligned(a)), {m, parts.at(0), k_of(lo, hi)});
      differential(tf("MatrixDiagV3", aligned(a)), {parts.at(0), k_of(lo, hi), tensor::scalar<std::int32_t>(-1),
                                                    tensor::scalar<std::int32_t>(-1), tensor::scalar(0.5f)});
      if (hi < 3 && lo > -3) {
        differential(tf("MatrixDiagPartV3", aligned(a)), {tall, k_of(lo, hi), tensor::scalar(0.0f)});
        differential(tf("MatrixSetDiagV3", aligned(a)),
                     {tall, run_cpu(tf("MatrixDiagPartV3", aligned(a)), {tall, k_of(lo, hi), tensor::scalar(1.0f)}).at(0), k_of(lo, hi)});
      }
    }
  // V2 is LEFT_LEFT; MatrixDiag with num_rows / num_cols past the least sizes (one of them least)
  differential(tf("MatrixDiagPartV2"), {m, k_of(-1, 2), tensor::scalar(3.0f)});
  differential(tf("MatrixDiagV2"), {rnd({2, 3}, 9), k_of(1, 1), tensor::scalar<std::int32_t>(3), tensor::scalar<std::int32_t>(6),
                                    tensor::scalar(9.0f)});
  differential(tf("MatrixDiagV3", aligned("RIGHT_LEFT")),
               {rnd({2, 3, 4}, 10, dtype::f64), k_of(-1, 1), tensor::scalar<std::int32_t>(7), tensor::scalar<std::int32_t>(-1),
                tensor::scalar(-1.0)});
  differential(tf("MatrixDiagV3"), {rnd({3}, 11, dtype::uint16, 0, 60000), k_of(-2, -2), tensor::scalar<std::int32_t>(-1),
                                    tensor::scalar<std::int32_t>(4), tensor::scalar<std::uint16_t>(7)});
  // empty matrices and batches
  differential(tf("MatrixDiagPartV3"), {tensor(dtype::f32, {0, 3, 3}), k_of(0, 1), tensor::scalar(1.0f)});
  differential(tf("MatrixDiagPartV3"), {tensor(dtype::f32, {2, 0, 3}), k_of(0, 0), tensor::scalar(1.0f)});
  differential(tf("MatrixDiagV3"), {tensor(dtype::f32, {0, 2}), k_of(0, 0), tensor::scalar<std::int32_t>(-1),
                                    tensor::scalar<std::int32_t>(-1), tensor::scalar(1.0f)});
  differential(tf("MatrixSetDiagV3"), {tensor(dtype::f32, {0, 3, 3}), tensor(dtype::f32, {0, 3}), k_of(0, 0)});
}

TEST_CASE("cuda: the TensorFlow diagonal ops fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  const auto m = rnd({3, 4}, 1);
  fails(tf("MatrixDiagPartV3"), {m, k_of(2, 1), tensor::scalar(0.0f)}, "above its upper diagonal");
  fails(tf("MatrixDiagPartV3"), {m, i32s({0, 1, 2}, {3}), tensor::scalar(0.0f)}, "k must have one or two elements");
  fails(tf("MatrixDiagPartV3"), {m, k_of(4, 4), tensor::scalar(0.0f)}, "is outside a 3x4 matrix");
  fails(tf("MatrixDiagPartV3"), {m, k_of(0, 0), tensor::scalar(0.0)}, "padding_value is f64");
  fails(tf("MatrixDiagPartV3"), {m, k_of(0, 0), tensor::from<float>({0, 1}, {2})}, "padding_value must be a scalar");
  fails(tf("MatrixDiagPart"), {rnd({3}, 2)}, "input must have rank >= 2");
  fails(tf("MatrixDiagV3"), {rnd({2, 3}, 3), k_of(0, 2), tensor::scalar<std::int32_t>(-1), tensor::scalar<std::int32_t>(-1),
                             tensor::scalar(0.0f)},
        "does not hold the 3 diagonals");
  fails(tf("MatrixDiagV3"), {rnd({3}, 4), k_of(0, 0), tensor::scalar<std::int32_t>(2), tensor::scalar<std::int32_t>(-1), tensor::scalar(0.0f)},
        "num_rows 2 is less than");
  fails(tf("MatrixDiagV3"), {rnd({3}, 4), k_of(0, 0), tensor::scalar<std::int32_t>(5), tensor::scalar<std::int32_t>(5), tensor::scalar(0.0f)},
        "one of them must be the least size");
  fails(tf("MatrixSetDiagV3"), {m, rnd({2}, 5), k_of(0, 0)}, "expected [3]");
  fails(tf("MatrixSetDiag"), {m, rnd({3}, 6, dtype::f64)}, "diagonal is f64");
  fails(tf("MatrixDiagPartV3", aligned("UP")), {m, k_of(0, 0), tensor::scalar(0.0f)}, "align must be");
}

}  // namespace gpass_test_cuda_tf_matrix
