// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/core/dtype.hpp>

#include <cstddef>
#include <string>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_core_dtype {

using gpass::dtype;

TEST_CASE("core.dtype.names_round_trip") {
  for (std::size_t i = 0; i < gpass::detail::dtype_table.size(); ++i) {
    auto t = static_cast<dtype>(i);
    CAPTURE(i);
    CHECK(gpass::detail::dtype_table[i].type == t);  // the table is indexed by the enum
    auto parsed = gpass::parse_dtype(gpass::to_string(t));
    REQUIRE(parsed);
    CHECK(*parsed == t);
  }
  CHECK(gpass::to_string(dtype::f32) == "f32");
  CHECK(gpass::to_string(dtype::int64) == "i64");
  CHECK(gpass::to_string(dtype::bool_) == "bool");
  CHECK(gpass::to_string(dtype::string) == "str");
  CHECK(gpass::to_string(dtype::undefined) == "?");
  CHECK(gpass::to_string(dtype::complex64) == "c64");
  CHECK(!gpass::parse_dtype("f33"));
  CHECK(!gpass::parse_dtype(""));
  CHECK(!gpass::parse_dtype("float"));
  static_assert(gpass::parse_dtype("bf16") == dtype::bf16);
}

TEST_CASE("core.dtype.sizes_and_classes") {
  CHECK(gpass::size_of(dtype::f32) == 4);
  CHECK(gpass::size_of(dtype::f16) == 2);
  CHECK(gpass::size_of(dtype::bool_) == 1);
  CHECK(gpass::size_of(dtype::complex128) == 16);
  CHECK(gpass::size_of(dtype::string) == 0);
  CHECK(gpass::size_of(dtype::undefined) == 0);
  CHECK(gpass::is_floating(dtype::bf16));
  CHECK(!gpass::is_floating(dtype::complex64));
  CHECK(gpass::is_integer(dtype::uint64));
  CHECK(gpass::is_integer(dtype::int8));
  CHECK(!gpass::is_integer(dtype::bool_));
  CHECK(gpass::is_unsigned(dtype::uint8));
  CHECK(!gpass::is_unsigned(dtype::int64));
  CHECK(gpass::is_trivial(dtype::complex64));
  CHECK(!gpass::is_trivial(dtype::string));
  CHECK(!gpass::is_trivial(dtype::resource));
  CHECK(!gpass::is_trivial(dtype::undefined));
}

}  // namespace gpass_test_core_dtype
