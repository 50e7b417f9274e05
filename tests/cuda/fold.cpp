// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of fold.hpp (Col2Im, MaxUnpool): which nodes the GPU serves (no GPU
// needed), each against the Eigen CPU kernel on a GPU (bit for bit; without a GPU, the CPU
// side of each comparison runs), and the errors naming the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_fold {

namespace {

using namespace gpass_test_cuda::prelude;

}  // namespace

TEST_CASE("cuda: Col2Im and MaxUnpool are served on the GPU") {
  for (dtype t : {dtype::f32, dtype::f16, dtype::int8, dtype::uint64}) CHECK(gpass_test_cuda::serves_in("", "Col2Im", {t, dtype::int64, dtype::int64}));
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16}) CHECK(gpass_test_cuda::serves_in("", "MaxUnpool", {t, dtype::int64}));
}

TEST_CASE("cuda: Col2Im and MaxUnpool match the CPU kernels bit for bit") {
  GPASS_GPU_OR_CPU_SIDE();
  // Col2Im: 2-D with strides, pads and dilations (positions several blocks overlap, and ones
  // none reaches); 1-D int8 (the sums wrap); 3-D f64
  differential(node("Col2Im", 18, {{"strides", ints{1, 2}}, {"pads", ints{1, 0, 0, 1}}, {"dilations", ints{2, 1}}}),
               {rnd({2, 18, 12}, 1), I({5, 6}), I({2, 3})}, 0, 0);
  differential(node("Col2Im", 18), {rnd({1, 6, 5}, 2, dtype::int8, -128, 127), I({7}), I({3})}, 0, 0);
  differential(node("Col2Im", 18, {{"strides", ints{2, 1, 1}}}), {rnd({1, 8, 12}, 3, dtype::f64), I({4, 3, 4}), I({2, 2, 2})}, 0, 0);
  differential(node("Col2Im", 18), {rnd({1, 4, 9}, 4, dtype::f16), I({4, 4}), I({2, 2})}, 0, 0);
  // MaxUnpool: MaxPool's indices; several inputs naming one output (the last wins); an
  // output_shape larger than the inferred one
  const gpass::attribute_map pool{{"kernel_shape", ints{2, 2}}, {"strides", ints{2, 2}}};
  const auto x = rnd({2, 3, 6, 4}, 5);
  const auto pooled = gpass_test_cuda::run_cpu(node("MaxPool", 12, pool, 2), {x});
  differential(node("MaxUnpool", 11, pool), {pooled.at(0), pooled.at(1)}, 0, 0);
  differential(node("MaxUnpool", 11, pool), {pooled.at(0), pooled.at(1), I({2, 3, 7, 5})}, 0, 0);
  differential(node("MaxUnpool", 11, {{"kernel_shape", ints{2}}}),
               {rnd({1, 1, 4}, 6), tensor::from<i64>({2, 2, 0, 2}, {1, 1, 4})}, 0, 0);
}

TEST_CASE("cuda: Col2Im and MaxUnpool fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  fails(node("Col2Im", 18), {rnd({1, 4, 9}, 1), I({4, 4}), I({2})}, "must have the same non-zero length");
  fails(node("Col2Im", 18), {rnd({1, 5, 9}, 2), I({4, 4}), I({2, 2})}, "is not a multiple of prod(block_shape)");
  fails(node("Col2Im", 18), {rnd({1, 4, 8}, 3), I({4, 4}), I({2, 2})}, "input has 8 blocks");
  const gpass::attribute_map pool{{"kernel_shape", ints{2}}};
  fails(node("MaxUnpool", 11, pool), {rnd({1, 1, 4}, 4), tensor::from<i64>({0, 9, 1, 2}, {1, 1, 4})}, "index 9 out of range [0, 5)");
  fails(node("MaxUnpool", 11, pool), {rnd({1, 1, 4}, 5), tensor::from<i64>({0, 1}, {1, 1, 2})}, "differs from X's");
  fails(node("MaxUnpool", 11, pool), {rnd({1, 1, 4}, 6), tensor::from<i64>({0, 1, 2, 4}, {1, 1, 4}), I({1, 1, 4})},
        "index 4 falls outside output_shape");
}

}  // namespace gpass_test_cuda_fold
