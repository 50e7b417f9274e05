// SPDX-License-Identifier: Apache-2.0
// SparseReshape, SparseFillEmptyRows and CTCGreedyDecoder (ops/tf, exec/eigen_cpu/kernels/
// tf_index.hpp) on hand-written graphs: their inferred shapes and the errors of bad inputs,
// with TensorFlow's rules. Their values against TensorFlow are checked by the fixture
// tests/data/tf/sparse_ctc (tests/tf/frontend_fixtures.cpp).

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>

#include "text_graphs.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_tf_sparse_ctc_ops {

namespace {

using gpass_test::tf_text::out_of;
using gpass_test::tf_text::run;
using i64 = std::int64_t;

gpass::tensor i64s(std::vector<i64> v, std::vector<i64> sizes) { return gpass::tensor::from<i64>(std::move(v), std::move(sizes)); }

// SparseReshape of fed indices, input shape and new shape.
const std::string reshape =
    "  %i = arg() {index = 0} -> (i64[*])\n  %s = arg() {index = 1} -> (i64[*])\n  %n = arg() {index = 2} -> (i64[*])\n"
    "  %y:2 = tf::SparseReshape(%i, %s, %n)\n  %r:0 = return(%y:0, %y:1)\n";

// SparseFillEmptyRows of fed indices, f32 values and dense shape, default -1.
const std::string fill =
    "  %i = arg() {index = 0} -> (i64[*])\n  %v = arg() {index = 1} -> (f32[*])\n  %s = arg() {index = 2} -> (i64[*])\n"
    "  %d = tf::Const() {dtype = f32, value = tensor<f32[]> [-1.0]}\n"
    "  %y:4 = tf::SparseFillEmptyRows(%i, %v, %s, %d) {T = f32}\n  %r:0 = return(%y:0, %y:1, %y:2, %y:3)\n";

std::string ctc(const std::string& attrs) {
  return "  %x = arg() {index = 0} -> (f32[*])\n  %l = arg() {index = 1} -> (i32[*])\n"
         "  %y:4 = tf::CTCGreedyDecoder(%x, %l) {T = f32" +
         attrs + "}\n  %r:0 = return(%y:0, %y:1, %y:2, %y:3)\n";
}

}  // namespace

TEST_CASE("tf.sparse_ctc.shapes") {
  const std::string args = "%i = arg() {index = 0} -> (i64[n,3])\n%s = arg() {index = 1} -> (i64[3])\n";
  CHECK(out_of(args + "%k = tf::Const() {dtype = i64, value = tensor<i64[2]> [6, 4]}\n%y:2 = tf::SparseReshape(%i, %s, %k)") ==
        "i64[n,2]");
  CHECK(out_of(args + "%k = tf::Const() {dtype = i64, value = tensor<i64[2]> [6, 4]}\n%y:2 = tf::SparseReshape(%i, %s, %k)", "y", 1) ==
        "i64[2]");
  const std::string fargs = "%i = arg() {index = 0} -> (i64[n,2])\n%v = arg() {index = 1} -> (f32[n])\n"
                            "%s = tf::Const() {dtype = i64, value = tensor<i64[2]> [7, 5]}\n"
                            "%d = tf::Const() {dtype = f32, value = tensor<f32[]> [0.0]}\n";
  CHECK(out_of(fargs + "%y:4 = tf::SparseFillEmptyRows(%i, %v, %s, %d) {T = f32}", "y", 2) == "bool[7]");
  CHECK(out_of(fargs + "%y:4 = tf::SparseFillEmptyRows(%i, %v, %s, %d) {T = f32}", "y", 3) == "i64[n]");
  const std::string cargs = "%x = arg() {index = 0} -> (f32[t,b,c])\n%l = arg() {index = 1} -> (i32[b])\n";
  CHECK(out_of(cargs + "%y:4 = tf::CTCGreedyDecoder(%x, %l) {T = f32}", "y", 3) == "f32[b,1]");
  CHECK(out_of(cargs + "%y:4 = tf::CTCGreedyDecoder(%x, %l) {T = f32}", "y", 2) == "i64[2]");
  CHECK_THROWS_WITH_AS(out_of("%x = arg() {index = 0} -> (f32[t,c])\n%l = arg() {index = 1} -> (i32[b])\n"
                              "%y:4 = tf::CTCGreedyDecoder(%x, %l) {T = f32}"),
                       doctest::Contains("inputs must be 3-D"), gpass::error);
}

TEST_CASE("tf.sparse_ctc.values_and_errors") {
  // SparseReshape: [2, 3] -> [3, -1]; the error cases TensorFlow reports
  const auto idx = i64s({0, 1, 1, 2}, {2, 2});
  auto out = run(reshape, {idx, i64s({2, 3}, {2}), i64s({3, -1}, {2})});
  CHECK(std::vector<i64>(out.at(0).tensor().values<i64>().begin(), out.at(0).tensor().values<i64>().end()) ==
        std::vector<i64>{0, 1, 2, 1});
  CHECK(std::vector<i64>(out.at(1).tensor().values<i64>().begin(), out.at(1).tensor().values<i64>().end()) == std::vector<i64>{3, 2});
  CHECK_THROWS_WITH_AS(run(reshape, {idx, i64s({2, 3}, {2}), i64s({-1, -1}, {2})}), doctest::Contains("only one output dimension may be -1"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run(reshape, {idx, i64s({2, 3}, {2}), i64s({4, -1}, {2})}), doctest::Contains("requires a multiple of 4"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run(reshape, {idx, i64s({2, 3}, {2}), i64s({7}, {1})}), doctest::Contains("requested shape has 7"), gpass::error);
  CHECK_THROWS_WITH_AS(run(reshape, {idx, i64s({2, 3, 1}, {3}), i64s({6}, {1})}), doctest::Contains("must match input_shape length"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run(reshape, {i64s({}, {0, 2}), i64s({0, 3}, {2}), i64s({0, -1}, {2})}),
                       doctest::Contains("cannot infer the missing input size"), gpass::error);

  // SparseFillEmptyRows: rows 0 and 2 empty, row 1 out of order entries kept in input order
  const auto fidx = i64s({1, 2, 3, 0, 1, 0}, {3, 2});
  const auto fv = gpass::tensor::from<float>({5.0f, 6.0f, 7.0f});
  out = run(fill, {fidx, fv, i64s({4, 3}, {2})});
  CHECK(std::vector<i64>(out.at(0).tensor().values<i64>().begin(), out.at(0).tensor().values<i64>().end()) ==
        std::vector<i64>{0, 0, 1, 2, 1, 0, 2, 0, 3, 0});
  CHECK(std::vector<float>(out.at(1).tensor().values<float>().begin(), out.at(1).tensor().values<float>().end()) ==
        std::vector<float>{-1, 5, 7, -1, 6});
  CHECK(std::vector<i64>(out.at(3).tensor().values<i64>().begin(), out.at(3).tensor().values<i64>().end()) == std::vector<i64>{1, 4, 2});
  CHECK_THROWS_WITH_AS(run(fill, {fidx, fv, i64s({3, 3}, {2})}), doctest::Contains("indices(1, 0) is invalid"), gpass::error);
  CHECK_THROWS_WITH_AS(run(fill, {fidx, fv, i64s({0, 3}, {2})}), doctest::Contains("dense_shape[0] = 0"), gpass::error);
  CHECK_THROWS_WITH_AS(run(fill, {fidx, gpass::tensor::from<float>({1.0f}), i64s({4, 3}, {2})}), doctest::Contains("values must be a vector of 3"),
                       gpass::error);

  // CTCGreedyDecoder: sequence lengths past max_time and blank indices out of range
  const gpass::tensor x(gpass::dtype::f32, {2, 1, 3});
  CHECK_THROWS_WITH_AS(run(ctc(""), {x, gpass::tensor::from<std::int32_t>({3})}), doctest::Contains("sequence_length(0) = 3 is not in [0, 2]"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run(ctc(", blank_index = 3"), {x, gpass::tensor::from<std::int32_t>({2})}),
                       doctest::Contains("blank_index 3 is out of range"), gpass::error);
  CHECK_THROWS_WITH_AS(run(ctc(""), {x, gpass::tensor::from<std::int32_t>({1, 1})}), doctest::Contains("2 entries for a batch of 1"),
                       gpass::error);
}

}  // namespace gpass_test_tf_sparse_ctc_ops
