// SPDX-License-Identifier: Apache-2.0
// gpass::symbol_table: fresh symbols, unification (bindings), resolution, joins.

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

#include <gpass/core/symbols.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_core_symbols {

using gpass::dim;
using gpass::shape;

TEST_CASE("core.symbols.fresh_names_are_deterministic_and_unique") {
  gpass::symbol_table s;
  s.declare("n");
  CHECK(s.fresh("n").to_string() == "n_1");
  CHECK(s.fresh("n").to_string() == "n_2");
  CHECK(s.fresh("loop").to_string() == "loop");
  CHECK(s.fresh("a/b.c").to_string() == "a_b_c");
  CHECK(s.fresh("3x").to_string() == "s3x");
  // the same key gives the same symbol
  dim k1 = s.fresh_for("node/0", "nz");
  dim k2 = s.fresh_for("node/0", "nz");
  dim k3 = s.fresh_for("node/1", "nz");
  CHECK(k1 == k2);
  CHECK(k1.to_string() == "nz");
  CHECK(k3.to_string() == "nz_1");
}

TEST_CASE("core.symbols.unify_binds_and_resolves") {
  gpass::symbol_table s;
  dim n = dim::symbol("n"), m = dim::symbol("m"), k = dim::symbol("k");
  for (auto x : {"n", "m", "k"}) s.declare(x);
  CHECK(s.unify(m, n * 2));  // m = 2*n (m is newer than n: m is bound)
  CHECK(s.resolve(m).to_string() == "2*n");
  CHECK(s.resolve(m + k).to_string() == "k+2*n");
  CHECK(s.unify(n, dim(3)));
  CHECK(s.resolve(m) == dim(6));
  CHECK(s.resolve(shape{m, k, 4}).to_string() == "[6,k,4]");
  CHECK(s.version() == 2);
  // nothing new to learn
  CHECK(s.unify(m, dim(6)));
  CHECK(s.unify(k, dim()));
  CHECK(s.version() == 2);
}

TEST_CASE("core.symbols.unify_detects_contradictions") {
  gpass::symbol_table s;
  dim n = dim::symbol("n"), m = dim::symbol("m");
  CHECK_FALSE(s.unify(dim(3), dim(4)));
  CHECK_FALSE(s.unify(n, n + dim(1)));
  CHECK_FALSE(s.unify(n + dim(5), dim(2)));  // n would be -3
  CHECK_FALSE(s.unify(n * 2, dim(5)));       // n would be 2.5
  CHECK(s.unify(n * 2, dim(6)));
  CHECK(s.resolve(n) == dim(3));
  // 2*m == 3*p cannot be solved in one step: nothing is learned, no contradiction
  CHECK(s.unify(m * 2, dim::symbol("p") * 3));
  CHECK(s.resolve(m) == m);
}

TEST_CASE("core.symbols.long_binding_chains_resolve_iteratively") {
  gpass::symbol_table s;
  const int n = 20000;
  for (int i = 0; i <= n; ++i) s.declare("s" + std::to_string(i));
  // s(i+1) = s(i) + 1, bound newest-first so the chain is as long as possible
  bool ok = true;
  for (int i = 0; i < n; ++i)
    ok = ok && s.unify(dim::symbol("s" + std::to_string(i + 1)), dim::symbol("s" + std::to_string(i)) + dim(1));
  CHECK(ok);
  CHECK(s.resolve(dim::symbol("s" + std::to_string(n))).to_string() == "s0+" + std::to_string(n));
  CHECK(s.unify(dim::symbol("s0"), dim(1)));
  CHECK(s.resolve(dim::symbol("s" + std::to_string(n))) == dim(n + 1));
}

TEST_CASE("core.symbols.unify_types_names_what_differs") {
  gpass::symbol_table s;
  using gpass::dtype;
  using gpass::tensor_type;
  gpass::type a = tensor_type{dtype::f32, shape{dim::symbol("n"), 3}};
  gpass::type b = tensor_type{dtype::undefined, shape{5, dim()}};
  CHECK(s.unify(a, b).to_string() == "f32[5,3]");
  CHECK(s.unify(gpass::type{}, a).to_string() == "f32[5,3]");
  CHECK_THROWS_WITH_AS(s.unify(a, gpass::type(tensor_type{dtype::int64, shape()})),
                       doctest::Contains("incompatible dtypes f32 and i64"), gpass::error);
  CHECK_THROWS_WITH_AS(s.unify(a, gpass::type(tensor_type{dtype::f32, shape{1, 2, 3}})),
                       doctest::Contains("incompatible ranks 2 and 3"), gpass::error);
  CHECK_THROWS_WITH_AS(s.unify(a, gpass::type(tensor_type{dtype::f32, shape{5, 4}})),
                       doctest::Contains("incompatible dims 3 and 4 (dim 1"), gpass::error);
}

TEST_CASE("core.symbols.join_widens_and_absorbs") {
  gpass::symbol_table s;
  using gpass::dtype;
  using gpass::tensor_type;
  gpass::type a = tensor_type{dtype::f32, shape{2, 2}};
  gpass::type b = tensor_type{dtype::f32, shape{4, 2}};
  gpass::type j = s.join(a, b, "loop/v0", "loop");
  CHECK(j.to_string() == "f32[loop,2]");
  // joining the widened type with anything at the same key gives it back: a fixed point
  gpass::type twice = tensor_type{dtype::f32, shape{dim::symbol("loop") * 2, 2}};
  CHECK(s.join(j, twice, "loop/v0", "loop") == j);
  // different ranks: unknown rank; unknown: unknown
  CHECK(s.join(a, gpass::type(tensor_type{dtype::f32, shape{2}}), "k", "x").to_string() == "f32[*]");
  CHECK(s.join(a, gpass::type{}, "k", "x").to_string() == "?");
  CHECK(s.join(a, a, "k", "x") == a);
  CHECK_THROWS_WITH_AS(s.join(a, gpass::type(tensor_type{dtype::int64, shape{2, 2}}), "k", "x"),
                       doctest::Contains("incompatible dtypes f32 and i64"), gpass::error);
  // an empty list says nothing about its elements
  gpass::list_type empty{tensor_type{dtype::f32, shape()}, dim(0), {}};
  gpass::list_type one{tensor_type{dtype::f32, shape{3}}, dim(1), {}};
  CHECK(s.join(gpass::type(empty), gpass::type(one), "l", "seq").to_string() == "list<f32[3], seq_len>");
}

TEST_CASE("core.symbols.arithmetic_past_int64_learns_nothing") {
  // value propagation carries integers as dims (dim::integer may be negative): differences
  // and substitutions that overflow int64 were undefined behaviour (found by fuzzing: Tile
  // with repeats near INT64_MIN unified with a declared size)
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
  gpass::symbol_table s;
  for (auto x : {"n", "m", "p"}) s.declare(x);
  const dim n = dim::symbol("n"), m = dim::symbol("m"), p = dim::symbol("p");
  CHECK_FALSE(s.unify(dim(1), dim::integer(-big)));  // two different constants
  CHECK_FALSE(s.unify(dim::integer(-big), dim(big)));
  CHECK(s.unify(n + dim(big), dim::integer(-5)));  // n + big - (-5) overflows: nothing learned
  CHECK_FALSE(s.is_bound("n"));
  // p = 2*m, then m = big*n: p's value 2*big*n is past int64, so p resolves to `?`
  CHECK(s.unify(p, m * 2));
  CHECK(s.unify(m, n * big));
  CHECK(s.resolve(m) == n * big);
  CHECK(s.resolve(p).is_unknown());
  CHECK(s.resolve(p + dim(1)).is_unknown());
  CHECK(s.unify(p, dim(4)));  // nothing to learn from `?`
}

}  // namespace gpass_test_core_symbols
