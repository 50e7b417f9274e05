// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/core/dim.hpp>

#include <cstdint>
#include <limits>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_core_dim {

using gpass::dim;

TEST_CASE("core.dim.kinds") {
  dim u;
  CHECK(u.is_unknown());
  CHECK(!u.is_known());
  CHECK(!u.is_symbolic());
  CHECK(u.to_string() == "?");
  CHECK(dim::unknown() == u);

  dim k(4);
  CHECK(k.is_known());
  CHECK(k.value() == 4);
  CHECK(k.known_value() == 4);
  CHECK(k.to_string() == "4");
  CHECK(dim(0).is_known());
  CHECK(dim(0).to_string() == "0");

  dim n = dim::symbol("n");
  CHECK(n.is_symbolic());
  CHECK(n.is_single_symbol());
  CHECK(!n.known_value());
  CHECK(n.to_string() == "n");
  CHECK((n * 2).is_symbolic());
  CHECK(!(n * 2).is_single_symbol());
  CHECK(!(n + 1).is_single_symbol());
}

TEST_CASE("core.dim.known_negative_is_unknown") {
  CHECK(dim(-1).is_unknown());
  CHECK(dim(std::int64_t{-7}).to_string() == "?");
  CHECK((dim(5) - dim(7)).is_unknown());
  CHECK(dim::affine(-3, {}).is_unknown());
  CHECK((dim(7) - dim(5)) == dim(2));
  // a symbolic dim may have a negative constant: n-1 is a size when n >= 1
  CHECK((dim::symbol("n") - 1).to_string() == "n-1");
}

TEST_CASE("core.dim.affine_arithmetic") {
  dim n = dim::symbol("n");
  dim m = dim::symbol("m");
  CHECK(n + n == n * 2);
  CHECK((n + n).to_string() == "2*n");
  CHECK((n * 4) / 2 == 2 * n);
  CHECK(((n * 4) / 2).to_string() == "2*n");
  CHECK((n * 4 + 1).to_string() == "4*n+1");
  CHECK(((n * 4 + 2) / 4).is_unknown());  // not exact
  CHECK(((n * 3) / 2).is_unknown());
  CHECK((n / 0).is_unknown());
  CHECK((n / -1).is_unknown());
  CHECK((dim(12) / 4) == dim(3));
  CHECK((n * m).is_unknown());
  CHECK((n * dim(3)) == 3 * n);
  CHECK((dim(3) * n) == n * 3);
  CHECK((dim(3) * dim(5)) == dim(15));
  CHECK((n - n) == dim(0));
  CHECK((n - n).is_known());
  CHECK((n * 0) == dim(0));
  CHECK((n + m - n) == m);
  CHECK((-1 * n).to_string() == "-n");
  CHECK((dim(1) - n).to_string() == "-n+1");
  // terms are sorted by symbol name
  CHECK((2 * n + m - 3).to_string() == "m+2*n-3");
  CHECK(dim::affine(-3, {{"n", 2}, {"m", 1}}).to_string() == "m+2*n-3");
  CHECK(dim::affine(0, {{"n", 1}, {"n", -1}}) == dim(0));
  CHECK((2 * n + m - 3).terms().size() == 2);
  CHECK((2 * n + m - 3).constant() == -3);
  // a coefficient of INT64_MIN: its magnitude was -c (a signed overflow)
  const dim low = n * std::numeric_limits<std::int64_t>::min();
  CHECK(low.to_string() == "-9223372036854775808*n");
  CHECK((low + m).to_string() == "m-9223372036854775808*n");
}

TEST_CASE("core.dim.unknown_propagates") {
  dim n = dim::symbol("n");
  dim u;
  CHECK((u + 1).is_unknown());
  CHECK((n + u).is_unknown());
  CHECK((u * 2).is_unknown());
  CHECK((u / 2).is_unknown());
  CHECK((u * n).is_unknown());
  CHECK((dim(2) * u).is_unknown());
}

TEST_CASE("core.dim.equality") {
  dim n = dim::symbol("n");
  CHECK(n == dim::symbol("n"));
  CHECK(n != dim::symbol("m"));
  CHECK(n != dim(1));
  CHECK(n + 1 != n);
  CHECK(dim(3) != dim());
  CHECK(dim() == dim());  // both unknown: structurally equal (not a claim that the sizes match)
}

}  // namespace gpass_test_core_dim
