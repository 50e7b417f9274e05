// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of tf_sparse.hpp (SparseSegmentSum / Mean / SqrtN and their WithNumSegments
// forms, Bincount, DenseBincount, SparseToDense, SparseReshape, SparseFillEmptyRows): which
// nodes the GPU serves (no GPU needed), each op against the Eigen CPU kernel on a GPU (bit for
// bit: the same sums in the same order; without a GPU, the CPU side of each comparison runs),
// and the errors naming the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_tf_sparse {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::run_cpu;
using gpass_test_cuda::run_gpu;

gpass::exec::kernel_node tf(std::string op) { return node(std::move(op), 1, {}, 1, "tf"); }

tensor i32s(std::vector<std::int32_t> v, ints sizes) { return tensor::from<std::int32_t>(std::move(v), std::move(sizes)); }
tensor i64s(ints v, ints sizes) { return tensor::from<i64>(std::move(v), std::move(sizes)); }

const char* const reductions[] = {"SparseSegmentSum", "SparseSegmentMean", "SparseSegmentSqrtN"};

}  // namespace

TEST_CASE("cuda: the TensorFlow sparse segment reductions the GPU serves") {
  for (const char* base : reductions)
    for (const char* suffix : {"", "WithNumSegments"}) {
      const std::string op = std::string(base) + suffix;
      CAPTURE(op);
      for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16})
        CHECK(gpass_test_cuda::serves_in("tf", op.c_str(), {t, dtype::int32, dtype::int64}));
      CHECK_FALSE(gpass_test_cuda::serves_in("tf", op.c_str(), {dtype::int32, dtype::int32, dtype::int32}));
    }
}

TEST_CASE("cuda: TensorFlow SparseSegmentSum, Mean and SqrtN match the CPU kernels bit for bit") {
  GPASS_GPU_OR_CPU_SIDE();
  const auto data = rnd({6, 3, 4}, 1);
  // repeated and unordered indices; gaps in the ids (empty segments are 0); one segment; rows
  // of one element; int64 indices and ids
  const auto idx = i32s({5, 0, 0, 3, 2, 5, 1}, {7});
  const auto ids = i32s({0, 0, 2, 2, 2, 3, 6}, {7});
  for (const char* op : reductions) {
    CAPTURE(op);
    differential(tf(op), {data, idx, ids}, 0, 0);
    differential(tf(op), {data, i32s({4, 4, 4}, {3}), i32s({0, 0, 0}, {3})}, 0, 0);
    differential(tf(op), {rnd({5}, 2), i64s({0, 2, 4, 1}, {4}), i64s({1, 1, 2, 2}, {4})}, 0, 0);
    differential(tf(op), {rnd({4, 7}, 3, dtype::f64), i32s({3, 1, 0}, {3}), i64s({0, 1, 1}, {3})}, 0, 0);
    differential(tf(op), {rnd({4, 5}, 4, dtype::f16), i32s({3, 1, 0, 2}, {4}), i32s({0, 0, 0, 1}, {4})}, 0, 0);
    differential(tf(op), {rnd({4, 5}, 5, dtype::bf16), i32s({3, 1, 0, 2}, {4}), i32s({0, 1, 1, 1}, {4})}, 0, 0);
    // no indices: no segments (without num_segments), or num_segments zero rows
    differential(tf(op), {data, i32s({}, {0}), i32s({}, {0})}, 0, 0);
    const std::string with = std::string(op) + "WithNumSegments";
    differential(tf(with), {data, i32s({}, {0}), i32s({}, {0}), tensor::scalar<std::int32_t>(3)}, 0, 0);
    // num_segments past the last id; the last id exactly
    differential(tf(with), {data, idx, ids, tensor::scalar<std::int32_t>(9)}, 0, 0);
    differential(tf(with), {data, idx, ids, tensor::scalar<i64>(7)}, 0, 0);
    // a long segment (more terms than a warp), wide rows
    std::vector<std::int32_t> many, zeros;
    for (int i = 0; i < 300; ++i) {
      many.push_back(i % 17);
      zeros.push_back(i < 150 ? 0 : 1);
    }
    differential(tf(op), {rnd({17, 300}, 6), i32s(many, {300}), i32s(zeros, {300})}, 0, 0);
  }
}

TEST_CASE("cuda: the TensorFlow sparse segment reductions fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  const auto data = rnd({4, 2}, 1);
  fails(tf("SparseSegmentSum"), {tensor::scalar(1.0f), i32s({0}, {1}), i32s({0}, {1})}, "data must have rank >= 1");
  fails(tf("SparseSegmentSum"), {data, i32s({0, 1}, {1, 2}), i32s({0, 0}, {2})}, "must be vectors");
  fails(tf("SparseSegmentMean"), {data, i32s({0, 1}, {2}), i32s({0}, {1})}, "indices has 2 elements, segment_ids 1");
  fails(tf("SparseSegmentMean"), {data, i32s({0, 4}, {2}), i32s({0, 0}, {2})}, "indices[1] = 4 is not in [0, 4)");
  fails(tf("SparseSegmentSqrtN"), {data, i32s({0, 1, 2}, {3}), i32s({1, 0, 2}, {3})}, "segment ids are not increasing");
  fails(tf("SparseSegmentSqrtN"), {data, i32s({0}, {1}), i32s({-1}, {1})}, "segment ids are not increasing");
  fails(tf("SparseSegmentSumWithNumSegments"), {data, i32s({0, 1}, {2}), i32s({0, 2}, {2}), tensor::scalar<std::int32_t>(2)},
        "is not less than num_segments 2");
  fails(tf("SparseSegmentSumWithNumSegments"), {data, i32s({0}, {1}), i32s({0}, {1}), tensor::scalar<std::int32_t>(-1)},
        "num_segments must be non-negative");
  fails(tf("SparseSegmentSum"), {data, i64s({0}, {1}), i64s({std::numeric_limits<i64>::max()}, {1})}, "overflows int64");
  fails(tf("SparseSegmentSum"), {data, tensor::from<float>({0}, {1}), i32s({0}, {1})}, "indices");
}

TEST_CASE("cuda: TensorFlow Bincount and DenseBincount match the CPU kernels bit for bit") {
  for (dtype t : {dtype::f32, dtype::f16, dtype::int8, dtype::uint64})
    CHECK(gpass_test_cuda::serves_in("tf", "DenseBincount", {dtype::int64, dtype::int64, t}));
  CHECK(gpass_test_cuda::serves_in("tf", "Bincount", {dtype::int32, dtype::int32, dtype::f64}));
  CHECK_FALSE(gpass_test_cuda::serves_in("tf", "Bincount", {dtype::int32, dtype::int32, dtype::string}));
  GPASS_GPU_OR_CPU_SIDE();
  const tensor size = tensor::from<std::int32_t>({5}, {});
  const auto arr = i32s({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 0, 4, 4}, {14});
  // unweighted (counts), weighted (sums in input order; values >= size dropped), every weight type
  differential(tf("Bincount"), {arr, size, tensor(dtype::f32, {0})}, 0, 0);
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::int8, dtype::uint16, dtype::int64}) {
    CAPTURE(t);
    differential(tf("Bincount"), {arr, size, rnd({14}, 12, t, -100, 100)}, 0, 0);
  }
  // int8 sums wrap as the CPU's; f16 counts saturate at 2048 as the CPU's rounding does
  differential(tf("Bincount"), {i32s(std::vector<std::int32_t>(300, 1), {300}), size, tensor::from<std::int8_t>(std::vector<std::int8_t>(300, 100), {300})}, 0, 0);
  differential(tf("Bincount"), {i32s(std::vector<std::int32_t>(3000, 2), {3000}), size, tensor::from<Eigen::half>(std::vector<Eigen::half>(3000, Eigen::half(1.0f)), {3000})}, 0, 0);
  // DenseBincount: 1-D and 2-D (a histogram per row), int64 values and size, binary_output
  const auto rows = i64s({0, 2, 2, 7, 1, 1, 1, 3, 4, 0, 6, 6}, {3, 4});
  const tensor size8 = tensor::from<i64>({8}, {});
  for (const bool binary : {false, true}) {
    CAPTURE(binary);
    const auto n = node("DenseBincount", 1, {{"binary_output", binary}}, 1, "tf");
    differential(n, {rows, size8, tensor(dtype::f32, {0})}, 0, 0);
    differential(n, {rows, size8, rnd({3, 4}, 13, dtype::f64)}, 0, 0);
    differential(n, {i64s({5, 5, 0}, {3}), size8, rnd({3}, 14, dtype::int32, -5, 5)}, 0, 0);
  }
  // a size of 0: an empty output; no values: zeros
  differential(tf("Bincount"), {arr, tensor::from<std::int32_t>({0}, {}), tensor(dtype::f32, {0})}, 0, 0);
  differential(tf("Bincount"), {tensor(dtype::int32, {0}), size, tensor(dtype::f32, {0})}, 0, 0);
}

TEST_CASE("cuda: TensorFlow Bincount and DenseBincount fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  const tensor size = tensor::from<std::int32_t>({5}, {});
  fails(tf("Bincount"), {i32s({1, -2, 3}, {3}), size, tensor(dtype::f32, {0})}, "input has a negative value -2");
  fails(tf("Bincount"), {i32s({1, 2, 3}, {3}), tensor::from<std::int32_t>({-1}, {}), tensor(dtype::f32, {0})}, "size must be non-negative");
  fails(tf("Bincount"), {i32s({1, 2, 3}, {3}), size, rnd({2}, 15)}, "weights must have the shape of the input");
  fails(tf("Bincount"), {i32s({1, 2, 3, 4}, {2, 2}), size, tensor(dtype::f32, {0})}, "input must be 1-D");
  fails(tf("DenseBincount"), {i32s({1, 2}, {1, 1, 2}), size, tensor(dtype::f32, {0})}, "input must be 1-D or 2-D");
}

TEST_CASE("cuda: TensorFlow SparseToDense matches the CPU kernel") {
  for (dtype t : {dtype::f32, dtype::int64, dtype::bool_, dtype::f16, dtype::uint8})
    CHECK(gpass_test_cuda::serves_in("tf", "SparseToDense", {dtype::int32, dtype::int32, t, t}));
  CHECK_FALSE(gpass_test_cuda::serves_in("tf", "SparseToDense", {dtype::int32, dtype::int32, dtype::string, dtype::string}));
  GPASS_GPU_OR_CPU_SIDE();
  // 2-D indices with a vector of values; one value for all; 1-D and scalar indices; repeated and
  // unordered indices without validate_indices (the last value wins); other element types
  const auto n = tf("SparseToDense");
  differential(n, {i32s({0, 1, 1, 3, 2, 0}, {3, 2}), i32s({3, 4}, {2}), rnd({3}, 1), tensor::scalar(0.5f)}, 0, 0);
  differential(n, {i64s({0, 2, 1, 1}, {2, 2}), i64s({2, 3}, {2}), tensor::scalar(7.0f), tensor::scalar(-1.0f)}, 0, 0);
  differential(n, {i32s({1, 4, 5}, {3}), i32s({6}, {1}), rnd({3}, 2, dtype::int64, -50, 50), tensor::scalar<i64>(9)}, 0, 0);
  differential(n, {tensor::scalar<std::int32_t>(2), i32s({4}, {1}), tensor::scalar(true), tensor::scalar(false)}, 0, 0);
  const auto loose = node("SparseToDense", 1, {{"validate_indices", false}}, 1, "tf");
  differential(loose, {i32s({3, 1, 3, 0, 1}, {5}), i32s({5}, {1}), rnd({5}, 3, dtype::f16), tensor::from<Eigen::half>({Eigen::half(2.0f)}, {})}, 0, 0);
  // an empty output
  differential(n, {tensor(dtype::int32, {0, 2}), i32s({0, 3}, {2}), tensor(dtype::f32, {0}), tensor::scalar(1.0f)}, 0, 0);
}

TEST_CASE("cuda: TensorFlow SparseToDense fails as the CPU's does, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  const auto n = tf("SparseToDense");
  fails(n, {i32s({1, 1, 0, 1}, {2, 2}), i32s({2, 2}, {2}), rnd({2}, 1), tensor::scalar(0.0f)}, "sparse_indices[1] is out of order");
  fails(n, {i32s({1, 1}, {2}), i32s({4}, {1}), rnd({2}, 2), tensor::scalar(0.0f)}, "sparse_indices[1] is repeated");
  fails(n, {i32s({1, 4}, {2}), i32s({4}, {1}), rnd({2}, 3), tensor::scalar(0.0f)}, "sparse_indices[1] is out of bounds of [4]");
  fails(n, {i32s({1, 2}, {2}), i32s({4}, {1}), rnd({3}, 4), tensor::scalar(0.0f)}, "sparse_values must be a scalar or a vector of 2");
  fails(n, {i32s({1, 2}, {2}), i32s({4, 4}, {2}), rnd({2}, 5), tensor::scalar(0.0f)}, "output_shape has 2 dims, the indices 1");
  fails(n, {i32s({1, 2}, {2}), i32s({4}, {1}), rnd({2}, 6), rnd({1}, 7)}, "default_value must be a scalar");
}

TEST_CASE("cuda: TensorFlow SparseReshape matches the CPU kernel bit for bit") {
  CHECK(gpass_test_cuda::serves_in("tf", "SparseReshape", {dtype::int64, dtype::int64, dtype::int64}));
  GPASS_GPU_OR_CPU_SIDE();
  const auto n = node("SparseReshape", 1, {}, 2, "tf");
  differential(n, {i64s({0, 0, 0, 2, 1, 1, 2, 3}, {4, 2}), i64s({3, 4}, {2}), i64s({2, -1, 3}, {3})}, 0, 0);  // a -1 inferred
  differential(n, {i64s({0, 1, 2, 1, 0, 1}, {2, 3}), i64s({2, 2, 3}, {3}), i64s({-1}, {1})}, 0, 0);             // flattened
  differential(n, {i64s({0, 1}, {1, 2}), i64s({2, 3}, {2}), i64s({2, 3}, {2})}, 0, 0);                         // the same shape
  differential(n, {tensor(dtype::int64, {0, 2}), i64s({0, 3}, {2}), i64s({3, 0}, {2})}, 0, 0);                  // no entries
  // an index outside the shape is not checked (as TensorFlow): it wraps as the CPU's does
  differential(n, {i64s({5, 7, -1, 2}, {2, 2}), i64s({3, 4}, {2}), i64s({6, 2}, {2})}, 0, 0);
}

TEST_CASE("cuda: TensorFlow SparseReshape fails as the CPU's does, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  const auto n = node("SparseReshape", 1, {}, 2, "tf");
  const tensor one = i64s({0, 0}, {1, 2});
  fails(n, {one, i64s({3, 4}, {2}), i64s({5, -1}, {2})}, "requires a multiple of 5");
  fails(n, {one, i64s({3, 4}, {2}), i64s({-1, -1}, {2})}, "only one output dimension may be -1");
  fails(n, {one, i64s({3, 4, 1}, {3}), i64s({12}, {1})}, "must match input_shape length");
  fails(n, {one, i64s({3, 4}, {2}), i64s({5}, {1})}, "the requested shape has 5");
  fails(n, {one, i64s({3, 0}, {2}), i64s({0}, {1})}, "non zero elements");
}

TEST_CASE("cuda: TensorFlow SparseFillEmptyRows matches the CPU kernel bit for bit") {
  CHECK(gpass_test_cuda::serves_in("tf", "SparseFillEmptyRows", {dtype::int64, dtype::f32, dtype::int64, dtype::f32}));
  CHECK(gpass_test_cuda::serves_in("tf", "SparseFillEmptyRows", {dtype::int64, dtype::bool_, dtype::int64, dtype::bool_}));
  CHECK_FALSE(gpass_test_cuda::serves_in("tf", "SparseFillEmptyRows", {dtype::int64, dtype::string, dtype::int64, dtype::string}));
  GPASS_GPU_OR_CPU_SIDE();
  const auto n = node("SparseFillEmptyRows", 1, {}, 4, "tf");
  // rows 0, 2 and 4 of 6 empty; entries out of row order, two in a row
  differential(n, {i64s({3, 1, 1, 0, 3, 0, 5, 2, 1, 2}, {5, 2}), rnd({5}, 1), i64s({6, 4}, {2}), tensor::scalar(-1.0f)}, 0, 0);
  // every row filled; int64 values; rank 3
  differential(n, {i64s({0, 0, 1, 1, 1, 0}, {2, 3}), rnd({2}, 2, dtype::int64, -9, 9), i64s({2, 2, 2}, {3}), tensor::scalar<i64>(7)}, 0, 0);
  // no entries: each row gets the default; bool and f16 values
  differential(n, {tensor(dtype::int64, {0, 2}), tensor(dtype::bool_, {0}), i64s({3, 5}, {2}), tensor::scalar(true)}, 0, 0);
  differential(n, {i64s({2, 0}, {1, 2}), rnd({1}, 3, dtype::f16), i64s({4, 1}, {2}), tensor::from<Eigen::half>({Eigen::half(0.5f)}, {})}, 0, 0);
  // no rows and no entries
  differential(n, {tensor(dtype::int64, {0, 2}), tensor(dtype::f32, {0}), i64s({0, 3}, {2}), tensor::scalar(0.0f)}, 0, 0);
}

TEST_CASE("cuda: TensorFlow SparseFillEmptyRows fails as the CPU's does, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  const auto n = node("SparseFillEmptyRows", 1, {}, 4, "tf");
  fails(n, {i64s({7, 0}, {1, 2}), rnd({1}, 4), i64s({6, 4}, {2}), tensor::scalar(0.0f)}, "indices(0, 0) is invalid: 7 >= 6");
  fails(n, {i64s({1, 0}, {1, 2}), rnd({2}, 5), i64s({6, 4}, {2}), tensor::scalar(0.0f)}, "values must be a vector of 1");
  fails(n, {i64s({1, 0}, {1, 2}), rnd({1}, 6), i64s({6, 4}, {2}), tensor::scalar(0.0)}, "values and default_value have different types");
  fails(n, {i64s({1, 0}, {1, 2}), rnd({1}, 7), i64s({0, 4}, {2}), tensor::scalar(0.0f)}, "dense_shape[0] = 0");
  fails(n, {i64s({1, 0}, {1, 2}), rnd({1}, 8), i64s({6, 4, 1}, {3}), tensor::scalar(0.0f)}, "dense_shape has 3 dims, the indices 2");
}

}  // namespace gpass_test_cuda_tf_sparse
