// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/core/type.hpp>

#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_core_type {

using namespace gpass;

TEST_CASE("core.type.to_string") {
  CHECK(type().to_string() == "?");
  CHECK(type().is_unknown());
  type t = tensor_type{dtype::f32, shape{2, 3}};
  CHECK(t.is_tensor());
  CHECK(t.to_string() == "f32[2,3]");
  CHECK(type(tensor_type{}).to_string() == "?[*]");
  CHECK(type(tensor_type{dtype::int64, shape(std::vector<dim>{})}).to_string() == "i64[]");
  list_type l{tensor_type{dtype::f32, shape{dim(), 3}}, dim::symbol("n"), ""};
  CHECK(type(l).is_list());
  CHECK(type(l).to_string() == "list<f32[?,3], n>");
  l.same_length_as = "ta:1";
  CHECK(type(l).to_string() == "list<f32[?,3], n, like %ta:1>");
  tuple_type tu{{type(tensor_type{dtype::f32, shape{2}}), type()}};
  CHECK(type(tu).is_tuple());
  CHECK(type(tu).to_string() == "tuple<f32[2], ?>");
  CHECK(type(tuple_type{}).to_string() == "tuple<>");
  tuple_type nested{{type(tu), type(l)}};
  CHECK(type(nested).to_string() == "tuple<tuple<f32[2], ?>, list<f32[?,3], n, like %ta:1>>");
}

TEST_CASE("core.type.equality_and_access") {
  type a = tensor_type{dtype::f32, shape{2}};
  type b = tensor_type{dtype::f32, shape{2}};
  CHECK(a == b);
  CHECK(a != type(tensor_type{dtype::f64, shape{2}}));
  CHECK(a != type());
  CHECK(type() == type(unknown_type{}));
  CHECK(a.tensor().element == dtype::f32);
  a.tensor().shape = shape{3};
  CHECK(a.to_string() == "f32[3]");
  CHECK_THROWS(a.list());
  tuple_type t1{{a, type()}};
  tuple_type t2{{a, type()}};
  CHECK(type(t1) == type(t2));
  t2.elements.pop_back();
  CHECK(type(t1) != type(t2));
  CHECK(type(t1).tuple().elements.size() == 2);
  list_type l1{tensor_type{dtype::f32, shape{}}, dim(4), ""};
  list_type l2 = l1;
  l2.same_length_as = "x:0";
  CHECK(type(l1) != type(l2));
  CHECK(type(l1).list().length == dim(4));
}

}  // namespace gpass_test_core_type
