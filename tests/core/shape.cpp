// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/core/checked.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <limits>

#include <cstdint>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_core_shape {

using gpass::dim;
using gpass::shape;

TEST_CASE("core.shape.printing") {
  CHECK(shape().to_string() == "[*]");
  CHECK(shape::unknown_rank().to_string() == "[*]");
  CHECK(shape{}.to_string() == "[*]");  // {} is the default constructor: unknown rank
  CHECK(shape(std::vector<dim>{}).to_string() == "[]");
  CHECK(shape{2, 3}.to_string() == "[2,3]");
  CHECK(shape{2, dim(), dim::symbol("n")}.to_string() == "[2,?,n]");
  CHECK(shape::unknown_dims(2).to_string() == "[?,?]");
  CHECK(shape::of({4, -1}).to_string() == "[4,?]");
  CHECK(shape{dim::symbol("n") * 2 + 1}.to_string() == "[2*n+1]");
}

TEST_CASE("core.shape.rank_and_sizes") {
  shape s{2, 3};
  CHECK(s.has_rank());
  CHECK(s.rank() == 2);
  CHECK(s.is_fully_known());
  CHECK(s.sizes() == std::vector<std::int64_t>{2, 3});
  CHECK(s[1] == dim(3));
  s[1] = dim::symbol("n");
  CHECK(!s.is_fully_known());
  CHECK(!shape().has_rank());
  CHECK(!shape().is_fully_known());
  shape scalar(std::vector<dim>{});
  CHECK(scalar.has_rank());
  CHECK(scalar.rank() == 0);
  CHECK(scalar.is_fully_known());
}

TEST_CASE("core.shape.num_elements") {
  dim n = dim::symbol("n");
  CHECK(shape{2, 3}.num_elements() == dim(6));
  CHECK(shape(std::vector<dim>{}).num_elements() == dim(1));
  CHECK(shape{2, n}.num_elements() == 2 * n);
  CHECK(shape{2, n}.num_elements().to_string() == "2*n");
  CHECK(shape{n, dim::symbol("m")}.num_elements().is_unknown());
  CHECK(shape{2, dim()}.num_elements().is_unknown());
  CHECK(shape().num_elements().is_unknown());
  CHECK(shape{0, n}.num_elements() == dim(0));
  CHECK(gpass::num_elements({2, 3, 4}) == 24);
  CHECK(gpass::num_elements({}) == 1);
  CHECK(gpass::num_elements({5, 0}) == 0);
}

TEST_CASE("core.shape.equality") {
  CHECK(shape() == shape());
  CHECK(shape() != shape(std::vector<dim>{}));
  CHECK(shape{2, 3} == shape::of({2, 3}));
  CHECK(shape{2, 3} != shape{3, 2});
  CHECK(shape{2} != shape{2, 1});
  CHECK(shape{dim::symbol("n")} == shape{dim::symbol("n")});
}

}  // namespace gpass_test_core_shape

namespace gpass_test_core_shape_checked {

TEST_CASE("core.checked.size_arithmetic_never_wraps") {
  const std::int64_t big = std::int64_t{1} << 32;
  CHECK(!gpass::checked_mul(big, big));
  CHECK(gpass::checked_mul(big, 4) == big * 4);
  CHECK(!gpass::checked_add(std::numeric_limits<std::int64_t>::max(), 1));
  CHECK(!gpass::checked_sub(std::numeric_limits<std::int64_t>::min(), 1));
  CHECK(!gpass::checked_num_elements(std::vector<std::int64_t>{big, big, 0}));  // overflows before the 0
  CHECK(gpass::checked_num_elements(std::vector<std::int64_t>{0, big, big}) == 0);
  CHECK(!gpass::checked_bytes(std::int64_t{1} << 62, 4));
  CHECK(gpass::sub_or_throw(5, 7, "pads") == -2);
  CHECK_THROWS_WITH_AS(gpass::sub_or_throw(std::numeric_limits<std::int64_t>::min(), 1, "pads"),
                       "gpass: pads: -9223372036854775808 - 1 overflows int64", gpass::error);
  CHECK_THROWS_WITH_AS(gpass::num_elements({big, big}), "gpass: the element count of [4294967296,4294967296] overflows int64",
                       gpass::error);
  // tensors check their sizes: no wrapped-around size reaches an allocation or an index
  CHECK_THROWS_AS(gpass::tensor(gpass::dtype::f32, {big, big}), gpass::error);
  CHECK_THROWS_AS(gpass::tensor::uninitialized(gpass::dtype::f64, {std::int64_t{1} << 61}), gpass::error);
  CHECK_THROWS_AS(gpass::tensor::from<float>({1, 2}).reshaped({big, big, 2}), gpass::error);
  // dims: an overflowing sum or product is unknown, never a wrapped size
  CHECK((gpass::dim(std::numeric_limits<std::int64_t>::max()) + gpass::dim(1)).is_unknown());
  CHECK((gpass::dim(big) * big).is_unknown());
  CHECK((gpass::dim::symbol("n") * std::numeric_limits<std::int64_t>::max() * 2).is_unknown());
  CHECK((gpass::dim(big) * 2).value() == big * 2);
}

}  // namespace gpass_test_core_shape_checked
