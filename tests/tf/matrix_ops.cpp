// SPDX-License-Identifier: Apache-2.0
// The TensorFlow diagonal ops and MatrixDeterminant (ops/tf/matrix.hpp, exec/eigen_cpu/kernels/
// tf_matrix.hpp) on hand-written graphs: shapes from known k / num_rows / num_cols, the errors
// of bad bands and sizes (at inference, and in the kernels when k is fed), TensorFlow's
// alignment and its determinant of singular and empty matrices. Their values against
// TensorFlow are checked by the fixture tests/data/tf/matrix_ops (tests/tf/frontend_fixtures.cpp).

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

#include "text_graphs.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_tf_matrix_ops {

namespace {

using G = gpass::graph<>;
namespace ex = gpass::exec;
using gpass_test::tf_text::infer;
using gpass_test::tf_text::out_of;
using gpass_test::tf_text::run;

// A graph whose band `k` is fed (arg 1), so that the kernel sees it first.
std::string fed_k(const std::string& x_type, const std::string& op_line) {
  return "  %x = arg() {index = 0} -> (" + x_type + ")\n  %k = arg() {index = 1} -> (i32[*])\n" + op_line +
         "  %r:0 = return(%y)\n";
}

gpass::tensor ints(std::vector<std::int32_t> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return gpass::tensor::from<std::int32_t>(std::move(v), {n});
}

}  // namespace

TEST_CASE("tf.matrix.shapes") {
  const std::string d = "%d = arg() {index = 0} -> (f32[n,3,4])\n";
  const std::string k = "%k = tf::Const() {dtype = i32, value = tensor<i32[2]> [-1, 1]}\n";
  auto c = [](const char* name, int v) {
    return "%" + std::string(name) + " = tf::Const() {dtype = i32, value = tensor<i32[]> [" + std::to_string(v) +
           "]}\n";
  };
  const std::string pad = "%p = tf::Const() {dtype = f32, value = tensor<f32[]> [0.0]}\n";
  CHECK(out_of(d + k + c("r", -1) + c("c", -1) + pad + "%y = tf::MatrixDiagV3(%d, %k, %r, %c, %p) {T = f32}") ==
        "f32[n,4,4]");
  CHECK(out_of(d + k + c("r", 5) + c("c", -1) + pad + "%y = tf::MatrixDiagV3(%d, %k, %r, %c, %p) {T = f32}") ==
        "f32[n,5,4]");
  CHECK(out_of(d + c("k", 2) + c("r", -1) + c("c", -1) + pad + "%y = tf::MatrixDiagV2(%d, %k, %r, %c, %p) {T = f32}") ==
        "f32[n,3,6,6]");
  CHECK(out_of(d + "%y = tf::MatrixDiag(%d) {T = f32}") == "f32[n,3,4,4]");
  CHECK(out_of(d + "%y = tf::MatrixDiagPart(%d) {T = f32}") == "f32[n,3]");
  CHECK(out_of(d + c("k", -2) + pad + "%y = tf::MatrixDiagPartV3(%d, %k, %p) {T = f32}") == "f32[n,1]");
  CHECK(out_of(d + "%k = tf::Const() {dtype = i32, value = tensor<i32[2]> [-2, 3]}\n" + pad +
             "%y = tf::MatrixDiagPartV3(%d, %k, %p) {T = f32}") == "f32[n,6,3]");
  CHECK(out_of("%x = arg() {index = 0} -> (f32[*])\n%d = arg() {index = 1} -> (f32[b,4,3])\n" + k +
             "%y = tf::MatrixSetDiagV3(%x, %d, %k) {T = f32}") == "f32[b,?,?]");
  CHECK(out_of("%x = arg() {index = 0} -> (f64[b,5,5])\n%y = tf::MatrixDeterminant(%x) {T = f64}") == "f64[b]");

  // bad bands and sizes, when known, fail at inference
  auto fails = [](const std::string& body, const char* what) {
    CHECK_THROWS_WITH_AS(infer(body), doctest::Contains(what), gpass::error);
  };
  fails(d + c("k", 4) + pad + "%y = tf::MatrixDiagPartV3(%d, %k, %p) {T = f32}", "diagonal 4 is outside a 3x4 matrix");
  fails(d + "%k = tf::Const() {dtype = i32, value = tensor<i32[2]> [1, -1]}\n" + pad +
            "%y = tf::MatrixDiagPartV3(%d, %k, %p) {T = f32}",
        "above its upper diagonal");
  fails(d + "%k = tf::Const() {dtype = i32, value = tensor<i32[2]> [-2, 1]}\n" + c("r", -1) + c("c", -1) + pad +
            "%y = tf::MatrixDiagV3(%d, %k, %r, %c, %p) {T = f32}",
        "the number of diagonals");
  fails(d + k + c("r", 5) + c("c", 6) + pad + "%y = tf::MatrixDiagV3(%d, %k, %r, %c, %p) {T = f32}", "do not fit");
  fails(d + k + c("r", 3) + c("c", -1) + pad + "%y = tf::MatrixDiagV3(%d, %k, %r, %c, %p) {T = f32}",
        "num_rows 3 is less than the 4 rows");
  fails("%x = arg() {index = 0} -> (f32[2,3,4])\n%d = arg() {index = 1} -> (f32[2,4])\n" + c("k", 0) +
            "%y = tf::MatrixSetDiagV2(%x, %d, %k) {T = f32}",
        "the diagonal length");
  fails("%x = arg() {index = 0} -> (f32[2,3,4])\n%y = tf::MatrixDeterminant(%x) {T = f32}", "must be square");
}

TEST_CASE("tf.matrix.kernel_errors") {
  const auto x = gpass::tensor(gpass::dtype::f32, {2, 3, 4});
  const std::string pad = "  %p = tf::Const() {dtype = f32, value = tensor<f32[]> [0.0]}\n";
  const std::string part = fed_k("f32[2,3,4]", pad + "  %y = tf::MatrixDiagPartV3(%x, %k, %p) {T = f32}\n");
  CHECK_THROWS_WITH_AS(run(part, {x, ints({5})}), doctest::Contains("diagonal 5 is outside a 3x4 matrix"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run(part, {x, ints({-3, 0})}), doctest::Contains("diagonal -3 is outside"), gpass::error);
  CHECK_THROWS_WITH_AS(run(part, {x, ints({1, 0})}), doctest::Contains("above its upper diagonal"), gpass::error);
  CHECK_THROWS_WITH_AS(run(part, {x, ints({0, 1, 2})}), doctest::Contains("one or two elements"), gpass::error);
  CHECK_THROWS_WITH_AS(run(part, {x, ints({})}), doctest::Contains("one or two elements"), gpass::error);

  const std::string rc = "  %nr = tf::Const() {dtype = i32, value = tensor<i32[]> [-1]}\n"
                         "  %nc = tf::Const() {dtype = i32, value = tensor<i32[]> [-1]}\n";
  const std::string diag = fed_k("f32[2,3,4]", pad + rc + "  %y = tf::MatrixDiagV3(%x, %k, %nr, %nc, %p) {T = f32}\n");
  CHECK_THROWS_WITH_AS(run(diag, {x, ints({-2, 1})}), doctest::Contains("does not hold the 4 diagonals"), gpass::error);
  const auto v = gpass::tensor(gpass::dtype::f32, {3});
  CHECK_THROWS_WITH_AS(run(fed_k("f32[3]", pad + rc + "  %y = tf::MatrixDiagV3(%x, %k, %nr, %nc, %p) {T = f32}\n"),
                           {v, ints({0, 1})}),
                       doctest::Contains("does not hold the 2 diagonals"), gpass::error);

  const auto m = gpass::tensor(gpass::dtype::f32, {3, 4});
  const std::string set = "  %x = arg() {index = 0} -> (f32[3,4])\n  %d = arg() {index = 1} -> (f32[*])\n"
                          "  %k = arg() {index = 2} -> (i32[*])\n  %y = tf::MatrixSetDiagV3(%x, %d, %k) {T = f32}\n"
                          "  %r:0 = return(%y)\n";
  CHECK_THROWS_WITH_AS(run(set, {m, gpass::tensor(gpass::dtype::f32, {4}), ints({0})}),
                       doctest::Contains("diagonal has shape [4], expected [3]"), gpass::error);
  CHECK_THROWS_WITH_AS(run(set, {m, gpass::tensor(gpass::dtype::f32, {2, 3}), ints({0, 2})}),
                       doctest::Contains("expected [3,3]"), gpass::error);

  CHECK_THROWS_WITH_AS(run("  %x = arg() {index = 0} -> (f32[*])\n  %y = tf::MatrixDeterminant(%x) {T = f32}\n"
                           "  %r:0 = return(%y)\n",
                           {gpass::tensor(gpass::dtype::f32, {2, 3})}),
                       doctest::Contains("square"), gpass::error);
  const std::string bad_align = "  %y = tf::MatrixDiagPartV3(%x, %k, %p) {T = f32, align = \"UP\"}\n";
  CHECK_THROWS_WITH_AS(run(fed_k("f32[2,3,4]", pad + bad_align), {x, ints({0})}),
                       doctest::Contains("align must be"), gpass::error);
}

TEST_CASE("tf.matrix.values") {
  // TensorFlow's example: diagonals 1..12 of k [-1, 1], RIGHT_LEFT (superdiagonals on the right)
  std::vector<float> d(12);
  for (int i = 0; i < 12; ++i) d[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);
  const std::string body = "  %x = arg() {index = 0} -> (f32[3,4])\n"
                           "  %k = tf::Const() {dtype = i32, value = tensor<i32[2]> [-1, 1]}\n"
                           "  %n = tf::Const() {dtype = i32, value = tensor<i32[]> [-1]}\n"
                           "  %p = tf::Const() {dtype = f32, value = tensor<f32[]> [0.5]}\n"
                           "  %y = tf::MatrixDiagV3(%x, %k, %n, %n, %p) {T = f32, align = \"RIGHT_LEFT\"}\n"
                           "  %z = tf::MatrixDiagPartV3(%y, %k, %p) {T = f32, align = \"RIGHT_LEFT\"}\n"
                           "  %r:0 = return(%y, %z)\n";
  const auto out = run(body, {gpass::tensor::from<float>(d, {3, 4})});
  const auto y = out.at(0).tensor().values<float>();
  CHECK(std::vector<float>(y.begin(), y.end()) ==
        std::vector<float>{5, 2, 0.5f, 0.5f, 9, 6, 3, 0.5f, 0.5f, 10, 7, 4, 0.5f, 0.5f, 11, 8});
  // the part of the matrix is the diagonals again, with the padding where they were unused
  const auto z = out.at(1).tensor().values<float>();
  CHECK(std::vector<float>(z.begin(), z.end()) == std::vector<float>{0.5f, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0.5f});

  // determinants: a singular matrix after a row swap is -0 (as in TensorFlow), an empty one 1
  const auto det = run("  %x = arg() {index = 0} -> (f64[*])\n  %y = tf::MatrixDeterminant(%x) {T = f64}\n"
                       "  %r:0 = return(%y)\n",
                       {gpass::tensor::from<double>({1, 2, 2, 4, 0, 1, 1, 0, 2, 0, 0, 3}, {3, 2, 2})});
  const auto dv = det.at(0).tensor().values<double>();
  CHECK(dv[0] == 0.0);
  CHECK(std::signbit(dv[0]));
  CHECK(dv[1] == -1.0);
  CHECK(dv[2] == doctest::Approx(6.0));
  const auto empty = run("  %x = arg() {index = 0} -> (f32[*])\n  %y = tf::MatrixDeterminant(%x) {T = f32}\n"
                         "  %r:0 = return(%y)\n",
                         {gpass::tensor(gpass::dtype::f32, {2, 0, 0})});
  const auto ev = empty.at(0).tensor().values<float>();
  CHECK(std::vector<float>(ev.begin(), ev.end()) == std::vector<float>{1, 1});
}

}  // namespace gpass_test_tf_matrix_ops
