// SPDX-License-Identifier: Apache-2.0
// The TF string ops (ops/tf/misc.hpp, exec/eigen_cpu/kernels/tf_strings.hpp) on hand-written
// graphs: shapes, the cases the fixture leaves out, and the errors of bad strings and
// attributes, with TensorFlow's rules and messages. Their values against TensorFlow are
// checked by the fixture tests/data/tf/string_ops (tests/tf/frontend_fixtures.cpp).

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>

#include "text_graphs.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_tf_string_ops {

namespace {

using gpass_test::tf_text::out_of;
using gpass_test::tf_text::run;

gpass::tensor strings(std::vector<std::string> v) {
  gpass::tensor t(gpass::dtype::string, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) t.data<std::string>()[i] = v[i];
  return t;
}

std::vector<std::string> texts(const gpass::exec::value& v) {
  const auto& t = v.tensor();
  return {t.data<std::string>(), t.data<std::string>() + t.size()};
}

// One op on a fed string vector.
std::string on_strings(const std::string& op, const std::string& attrs = "") {
  return "  %x = arg() {index = 0} -> (str[*])\n  %y = tf::" + op + "(%x) {" + attrs + "}\n  %r:0 = return(%y)\n";
}

}  // namespace

TEST_CASE("tf.strings.shapes") {
  CHECK(out_of("%x = arg() {index = 0} -> (f32[n,3])\n%y = tf::AsString(%x) {T = f32}") == "str[n,3]");
  CHECK(out_of("%x = arg() {index = 0} -> (str[2,n])\n%y = tf::StringToNumber(%x) {out_type = i64}") == "i64[2,n]");
  CHECK(out_of("%x = arg() {index = 0} -> (str[4])\n%y = tf::StringToNumber(%x)") == "f32[4]");
  CHECK(out_of("%x = arg() {index = 0} -> (str[4])\n%y = tf::StringLength(%x)") == "i32[4]");
  CHECK(out_of("%x = arg() {index = 0} -> (str[m])\n%y = tf::StringUpper(%x)") == "str[m]");
}

TEST_CASE("tf.strings.values") {
  // numbers TensorFlow reads and the ones it refuses
  auto f64 = run(on_strings("StringToNumber", "out_type = f64"), {strings({" +1e3 ", "nan(0x1)", "-INFINITY", "0x1.8p1", "1e-400"})});
  const double* d = f64.at(0).tensor().data<double>();
  CHECK(d[0] == 1000.0);
  CHECK(std::isnan(d[1]));
  CHECK(d[2] == -INFINITY);
  CHECK(d[3] == 3.0);
  CHECK(d[4] == 0.0);
  for (const char* bad : {"1e", "", " ", "0x", "+-1", "- 1", "1,5", "inf1", "nan(", "0x-1", "--1"}) {
    CAPTURE(bad);
    const std::string want = "StringToNumberOp could not correctly convert string: " + std::string(bad);
    CHECK_THROWS_WITH_AS(run(on_strings("StringToNumber"), {strings({"1", bad})}), doctest::Contains(want.c_str()), gpass::error);
  }
  auto i32 = run(on_strings("StringToNumber", "out_type = i32"), {strings({"-2147483648", " +2147483647\t"})});
  CHECK(i32.at(0).tensor().data<std::int32_t>()[0] == INT32_MIN);
  CHECK(i32.at(0).tensor().data<std::int32_t>()[1] == INT32_MAX);
  for (const char* bad : {"2147483648", "-2147483649", "1.0", "0x10", "1e3"})
    CHECK_THROWS_WITH_AS(run(on_strings("StringToNumber", "out_type = i32"), {strings({bad})}),
                         doctest::Contains("could not correctly convert"), gpass::error);
  // case, strip and length leave other bytes alone
  CHECK(texts(run(on_strings("StringUpper"), {strings({"a\xc3\xa4z!", ""})}).at(0)) == std::vector<std::string>{"A\xc3\xa4Z!", ""});
  CHECK(texts(run(on_strings("StringStrip"), {strings({" \t x y \n", "   "})}).at(0)) == std::vector<std::string>{"x y", ""});
  auto len = run(on_strings("StringLength", "unit = \"UTF8_CHAR\""), {strings({"a\xc3\xa4\xe2\x82\xac", ""})});
  CHECK(len.at(0).tensor().data<std::int32_t>()[0] == 3);
  CHECK(len.at(0).tensor().data<std::int32_t>()[1] == 0);
  // AsString of strings pads to the width; uint64 and int8 use their own conversions
  CHECK(texts(run(on_strings("AsString", "T = str, width = 4, fill = \"-\""), {strings({"ab"})}).at(0)) ==
        std::vector<std::string>{"ab  "});
  auto big = run("  %x = arg() {index = 0} -> (u64[2])\n  %y = tf::AsString(%x) {T = u64}\n  %r:0 = return(%y)\n",
                 {gpass::tensor::from<std::uint64_t>({18446744073709551615ull, 0})});
  CHECK(texts(big.at(0)) == std::vector<std::string>{"18446744073709551615", "0"});
  auto small = run("  %x = arg() {index = 0} -> (i8[2])\n  %y = tf::AsString(%x) {T = i8, width = 5, fill = \"+\"}\n  %r:0 = return(%y)\n",
                   {gpass::tensor::from<std::int8_t>({-128, 7})});
  CHECK(texts(small.at(0)) == std::vector<std::string>{" -128", "   +7"});
}

TEST_CASE("tf.strings.attribute_errors_name_the_node") {
  auto as_string = [&](const std::string& attrs, const char* type = "f32") {
    return "  %x = arg() {index = 0} -> (" + std::string(type) + "[2])\n  %y = tf::AsString(%x) {T = " + type + attrs +
           "}\n  %r:0 = return(%y)\n";
  };
  const auto f = gpass::tensor::from<float>({1.0f, 2.0f});
  const auto i = gpass::tensor::from<std::int32_t>({1, 2});
  CHECK_THROWS_WITH_AS(run(as_string(", scientific = true, shortest = true"), {f}),
                       doctest::Contains("Cannot select both scientific and shortest notation"), gpass::error);
  CHECK_THROWS_WITH_AS(run(as_string(", fill = \"ab\""), {f}), doctest::Contains("Fill string must be one or fewer characters"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run(as_string(", fill = \"x\""), {f}), doctest::Contains("Fill argument not supported: \"x\""), gpass::error);
  CHECK_THROWS_WITH_AS(run(as_string(", precision = 2", "i32"), {i}), doctest::Contains("precision not supported for datatype"),
                       gpass::error);
  CHECK_THROWS_WITH_AS(run(as_string(", scientific = true", "i32"), {i}),
                       doctest::Contains("scientific and shortest format not supported"), gpass::error);
  CHECK_THROWS_WITH_AS(run(on_strings("StringLower", "encoding = \"utf-8\""), {strings({"A"})}),
                       doctest::Contains("Unicode case mapping"), gpass::error);
  CHECK_THROWS_WITH_AS(run(on_strings("StringLength", "unit = \"UTF16_CHAR\""), {strings({"A"})}),
                       doctest::Contains("unit must be BYTE or UTF8_CHAR"), gpass::error);
  CHECK_THROWS_WITH_AS(run(on_strings("StringToNumber", "out_type = u8"), {strings({"1"})}), doctest::Contains("out_type"),
                       gpass::error);
  try {
    run(on_strings("StringToNumber"), {strings({"x"})});
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(std::string(e.what()).find("'y'") != std::string::npos);  // the node
  }
}

}  // namespace gpass_test_tf_string_ops
