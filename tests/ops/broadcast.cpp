// SPDX-License-Identifier: Apache-2.0
// gpass::broadcast_shapes: numpy broadcasting with symbolic dims.

#include <doctest/doctest.h>

#include <gpass/ops/broadcast.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_ops_broadcast {

using gpass::dim;
using gpass::shape;

TEST_CASE("ops.broadcast.numpy_rules") {
  gpass::symbol_table s;
  dim n = dim::symbol("n"), m = dim::symbol("m");
  auto b = [&](std::vector<shape> v) { return gpass::broadcast_shapes(v, s).to_string(); };
  CHECK(b({shape{2, 3}, shape{3}}) == "[2,3]");
  CHECK(b({shape{2, 1}, shape{1, 3}}) == "[2,3]");
  CHECK(b({shape{}, shape{}}) == "[*]");  // `shape{}` is the unknown rank
  CHECK(b({shape::scalar(), shape{4}}) == "[4]");
  CHECK(b({shape{n, 1}, shape{3}}) == "[n,3]");
  CHECK(b({shape{n}, shape{n}}) == "[n]");
  CHECK(b({shape{1}, shape{n}}) == "[n]");
  CHECK(b({shape{3}, shape{n}}) == "[3]");  // n is 3 or 1: 3 either way
  CHECK(b({shape{n}, shape{m}}) == "[?]");  // could be n, m or either
  CHECK(b({shape{dim()}, shape{5}}) == "[5]");
  CHECK(b({shape{dim()}, shape{1}}) == "[?]");
  CHECK(b({shape{2, 3}, shape()}) == "[*]");
  CHECK(b({shape{1, 2}, shape{3, 1}, shape{4, 1, 1}}) == "[4,3,2]");
  CHECK_THROWS_WITH_AS(b({shape{2, 3}, shape{1, 1}, shape{4}}), doctest::Contains("incompatible dims 3 and 4 in input 2"),
                       gpass::error);
}

}  // namespace gpass_test_ops_broadcast
