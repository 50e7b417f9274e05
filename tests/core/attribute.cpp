// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/core/attribute.hpp>

#include <cstdint>
#include <string>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_core_attribute {

using namespace gpass;

TEST_CASE("core.attribute.kinds") {
  CHECK(attribute().kind_name() == "int");
  CHECK(attribute().as<std::int64_t>() == 0);
  CHECK(attribute(3).kind_name() == "int");         // int -> int64
  CHECK(attribute(3L).is<std::int64_t>());
  CHECK(attribute(2.5f).kind_name() == "float");    // float -> double
  CHECK(attribute(2.5f).as<double>() == 2.5);
  CHECK(attribute("s").kind_name() == "string");    // const char* -> string
  CHECK(attribute(std::string("s")).as<std::string>() == "s");
  CHECK(attribute(true).kind_name() == "bool");
  CHECK(attribute(dtype::f32).kind_name() == "dtype");
  CHECK(attribute(shape{2}).kind_name() == "shape");
  CHECK(attribute(type()).kind_name() == "type");
  CHECK(attribute(tensor::scalar<float>(1)).kind_name() == "tensor");
  CHECK(attribute(function_ref{"body"}).kind_name() == "func");
  CHECK(attribute(std::vector<std::int64_t>{1, 2}).kind_name() == "ints");
  CHECK(attribute(std::vector<double>{}).kind_name() == "floats");
  CHECK(attribute(std::vector<std::string>{"a"}).kind_name() == "strings");
  CHECK(attribute(std::vector<bool>{true}).kind_name() == "bools");
  CHECK(attribute(std::vector<dtype>{}).kind_name() == "dtypes");
  CHECK(attribute(std::vector<shape>{}).kind_name() == "shapes");
  CHECK(attribute(std::vector<type>{}).kind_name() == "types");
  CHECK(attribute(std::vector<tensor>{}).kind_name() == "tensors");
  CHECK(attribute(std::vector<function_ref>{}).kind_name() == "funcs");
  CHECK(attribute::kind_name_of<double>() == "float");
  CHECK(attribute::kind_name_of<std::vector<function_ref>>() == "funcs");
}

TEST_CASE("core.attribute.as_errors") {
  attribute a = std::int64_t{3};
  CHECK(a.is<std::int64_t>());
  CHECK(!a.is<double>());
  CHECK_THROWS_WITH_AS(a.as<double>(), "gpass: attribute is a int, not a float", gpass::error);
  CHECK_THROWS_WITH_AS(attribute("x").as<std::vector<std::string>>(), "gpass: attribute is a string, not a strings",
                       gpass::error);
  CHECK_THROWS_AS(attribute(true).as<std::int64_t>(), gpass::error);
}

TEST_CASE("core.attribute.equality_and_maps") {
  CHECK(attribute(1) == attribute(std::int64_t{1}));
  CHECK(attribute(1) != attribute(1.0));
  CHECK(attribute(std::vector<std::int64_t>{1}) != attribute(std::vector<double>{1}));
  CHECK(attribute(tensor::from<float>({1, 2})) == attribute(tensor::from<float>({1, 2})));
  attribute_map m{{"b", 2}, {"a", "x"}};
  CHECK(m.begin()->first == "a");  // ordered by name
  CHECK(get_or<std::int64_t>(m, "b", 0) == 2);
  CHECK(get_or<std::int64_t>(m, "missing", 7) == 7);
  CHECK_THROWS_AS(get_or<std::int64_t>(m, "a", 0), gpass::error);
  CHECK(m.find(std::string_view("a")) != m.end());  // heterogeneous lookup
  attribute v = std::vector<std::int64_t>{1, 2};
  std::get<std::vector<std::int64_t>>(v.value()).push_back(3);
  CHECK(v.as<std::vector<std::int64_t>>().size() == 3);
}

}  // namespace gpass_test_core_attribute
