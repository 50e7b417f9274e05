// SPDX-License-Identifier: Apache-2.0
// Hostile inputs: string tensors within run_limits::max_tensor_bytes. allocate_output counts a
// string tensor's elements, not their characters, so the kernels that make strings count
// the characters first (kernels/elementwise.hpp, array.hpp, tf_strings.hpp): StringConcat of
// a tensor with itself, Expand / Tile / Gather / Pad of one long string, AsString with a
// wide `width` fail with a gpass error naming the op and the limit instead of allocating
// gigabytes; tensors of normal size still work.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_string_limits {

namespace {

namespace ex = gpass::exec;
using gpass::tensor;
using i64 = std::int64_t;

constexpr std::uint64_t one_mb = std::uint64_t{1} << 20;

tensor strings(std::vector<std::string> v, std::vector<i64> sizes = {}) {
  if (sizes.empty()) sizes = {static_cast<i64>(v.size())};
  tensor t(gpass::dtype::string, sizes);
  for (std::size_t i = 0; i < v.size(); ++i) t.data<std::string>()[i] = std::move(v[i]);
  return t;
}
tensor i64s(std::vector<i64> v) { return tensor::from<i64>(std::move(v)); }

// Output 0 of one node of `op` on `in`, under max_tensor_bytes = 1 MiB.
tensor run(const std::string& op, std::vector<ex::value> in, gpass::attribute_map attrs = {}, const std::string& domain = "") {
  ex::eigen_cpu cpu;
  ex::kernel_node n{.name = "n", .op = op, .domain = domain, .attrs = std::move(attrs)};
  n.input_types.resize(in.size());
  n.output_types.resize(1);
  return ex::run_kernel(cpu, cpu.kernels(), n, std::move(in), {.max_tensor_bytes = one_mb}).at(0).tensor();
}

// The error of `run`, or "" when it succeeds.
std::string run_error(const std::string& op, std::vector<ex::value> in, gpass::attribute_map attrs = {},
                      const std::string& domain = "") {
  try {
    (void)run(op, std::move(in), std::move(attrs), domain);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "";
}

// The error names the op and the limit.
void check_over(const std::string& e, const std::string& op) {
  CAPTURE(e);
  CHECK(e.find("(op " + op + ")") != std::string::npos);
  CHECK(e.find("over the limit of 1048576 bytes per tensor (max_tensor_bytes)") != std::string::npos);
}

const std::string kb(1000, 'k');  // a 1000-character string: 2000 copies are 2 MB

}  // namespace

TEST_CASE("exec.string_limits.string_concat") {
  const std::string half(600'000, 'a');  // 1.2 MB concatenated with itself
  const std::string e = run_error("StringConcat", {strings({half}), strings({half})});
  check_over(e, "StringConcat");
  CHECK(e.find("would hold 1200000 characters in 1 strings") != std::string::npos);
  // broadcast: a 300 kB string repeated into 4 elements
  check_over(run_error("StringConcat", {strings({std::string(300'000, 'b')}), strings({"", "", "", ""})}), "StringConcat");
  // normal sizes
  const tensor y = run("StringConcat", {strings({"ab", "c"}), strings({"x"})});
  CHECK(y.data<std::string>()[0] == "abx");
  CHECK(y.data<std::string>()[1] == "cx");
  CHECK(run("StringConcat", {strings({std::string(400'000, 'a')}), strings({std::string(400'000, 'b')})}).data<std::string>()[0].size() ==
        800'000);
}

TEST_CASE("exec.string_limits.string_concat_doubling_in_a_plan") {
  // each node concatenates the last with itself: 2 characters become 2^25 after 24 nodes
  // (2^31 after 30); under 1 MiB the node making 2^20 characters fails
  std::string text = "graph {\n  %c0 = arg() {index = 0} -> (str[1])\n";
  for (int k = 1; k <= 24; ++k)
    text += "  %c" + std::to_string(k) + " = StringConcat(%c" + std::to_string(k - 1) + ", %c" + std::to_string(k - 1) + ") -> (str[1])\n";
  text += "  %r:0 = return(%c24)\n}\n";
  const auto g = gpass::parse_text(text);
  ex::eigen_cpu cpu;
  ex::plan<ex::eigen_cpu> p(g, cpu, {.limits = {.max_tensor_bytes = one_mb}});
  std::string e;
  try {
    (void)p.run({strings({"ab"})});
  } catch (const gpass::error& err) {
    e = err.what();
  }
  CAPTURE(e);
  CHECK(e.find("node 'c19' (op StringConcat)") != std::string::npos);
  CHECK(e.find("would hold 1048576 characters") != std::string::npos);
  CHECK(e.find("(max_tensor_bytes)") != std::string::npos);
}

TEST_CASE("exec.string_limits.copies_of_a_long_string") {
  // Expand, Tile, Gather, GatherElements, GatherND, Concat, ConstantOfShape, OneHot, Pad,
  // Resize: 2000 copies of 1000 characters
  check_over(run_error("Expand", {strings({kb}), i64s({2000})}), "Expand");
  check_over(run_error("Tile", {strings({kb}), i64s({2000})}), "Tile");
  check_over(run_error("Gather", {strings({kb, "x"}), i64s(std::vector<i64>(2000, 0))}), "Gather");
  check_over(run_error("GatherElements", {strings({kb, "x"}), i64s(std::vector<i64>(2000, 0))}), "GatherElements");
  check_over(run_error("GatherND", {strings({kb, "x"}), tensor::from<i64>(std::vector<i64>(2000, 0), {2000, 1})}), "GatherND");
  check_over(run_error("ConstantOfShape", {i64s({2000})}, {{"value", strings({kb})}}), "ConstantOfShape");
  check_over(run_error("OneHot", {i64s(std::vector<i64>(2000, 1)), tensor::scalar<i64>(3), strings({"", kb})}), "OneHot");
  check_over(run_error("OneHot", {i64s({7}), tensor::scalar<i64>(2000), strings({kb, ""})}), "OneHot");  // off copies
  // Concat of one input many times (each input is within the limit)
  const std::string big(300'000, 'c');
  check_over(run_error("Concat", {strings({big}), strings({big}), strings({big}), strings({big})}, {{"axis", i64{0}}}), "Concat");
  // Pad: copies of the constant, of the edge
  check_over(run_error("Pad", {strings({""}), i64s({0, 2000}), strings({kb})}), "Pad");
  check_over(run_error("Pad", {strings({kb}), i64s({0, 2000})}, {{"mode", std::string("edge")}}), "Pad");
  // Resize (nearest) of strings
  check_over(run_error("Resize", {strings({kb, kb}), ex::value{}, tensor::from<float>({1000.0f})}, {{"mode", std::string("nearest")}}), "Resize");
}

TEST_CASE("exec.string_limits.normal_copies_still_work") {
  // the bound (2000 x the longest string) is over the limit, the exact count is not
  tensor x = strings({kb, "x"});
  std::vector<i64> ones(2000, 1);
  ones[0] = 0;
  const tensor g = run("Gather", {x, i64s(ones)});
  CHECK(g.size() == 2000);
  CHECK(g.data<std::string>()[0] == kb);
  CHECK(g.data<std::string>()[1999] == "x");
  const tensor ge = run("GatherElements", {x, i64s(ones)});
  CHECK(ge.data<std::string>()[0] == kb);
  tensor c(gpass::dtype::bool_, {2000});
  for (i64 i = 0; i < 2000; ++i) c.data<bool>()[i] = i == 5;
  const tensor w = run("Where", {c, strings({kb}), strings({""})});
  CHECK(w.data<std::string>()[5] == kb);
  CHECK(w.data<std::string>()[6].empty());
  // copies within the limit
  const tensor e = run("Expand", {strings({kb}), i64s({500})});
  CHECK(e.size() == 500);
  CHECK(e.data<std::string>()[499] == kb);
  CHECK(run("Tile", {strings({"ab", "c"}), i64s({3})}).data<std::string>()[4] == "ab");
  CHECK(run("Pad", {strings({"a"}), i64s({1, 1}), strings({"z"})}).data<std::string>()[2] == "z");
  // a slice of a tensor with one long string: the exact count, the slice fits
  std::vector<std::string> many(3000, "s");
  many[0] = std::string(2'000'000, 'L');
  const tensor s = run("Slice", {strings(many), i64s({1}), i64s({3000})});
  CHECK(s.size() == 2999);
  CHECK(s.data<std::string>()[0] == "s");
}

TEST_CASE("exec.string_limits.where") {
  tensor c(gpass::dtype::bool_, {2000});
  for (i64 i = 0; i < 2000; ++i) c.data<bool>()[i] = true;
  check_over(run_error("Where", {c, strings({kb}), strings({""})}), "Where");
}

TEST_CASE("exec.string_limits.tf_as_string") {
  // `width` up to 2^20 pads every element: 4 floats are 4 MiB
  const gpass::attribute_map wide{{"T", gpass::dtype::f32}, {"width", i64{1} << 20}};
  const std::string e = run_error("AsString", {tensor::from<float>({1, 2, 3, 4})}, wide, "tf");
  check_over(e, "AsString");
  const gpass::attribute_map narrow{{"T", gpass::dtype::f32}, {"width", i64{12}}, {"precision", i64{2}}};
  const tensor y = run("AsString", {tensor::from<float>({1.5f, -2})}, narrow, "tf");
  CHECK(y.data<std::string>()[0] == "        1.50");
  CHECK(y.data<std::string>()[1] == "       -2.00");
  // strings padded to the width
  check_over(run_error("AsString", {strings({"a", "b"})}, {{"T", gpass::dtype::string}, {"width", i64{600'000}}}, "tf"), "AsString");
}

TEST_CASE("exec.string_limits.tf_copies") {
  // TensorFlow's Fill, OneHot, GatherV2 and GatherNd of a long string
  check_over(run_error("Fill", {i64s({2000}), tensor::scalar(kb)}, {}, "tf"), "Fill");
  check_over(run_error("OneHot", {i64s(std::vector<i64>(2000, 0)), tensor::scalar<i64>(1), tensor::scalar(kb), tensor::scalar(std::string())},
                       {}, "tf"),
             "OneHot");
  check_over(run_error("GatherV2", {strings({kb}), i64s(std::vector<i64>(2000, 0)), tensor::scalar<i64>(0)}, {}, "tf"), "GatherV2");
  check_over(run_error("GatherNd", {strings({kb}), tensor::from<i64>(std::vector<i64>(2000, 0), {2000, 1})}, {}, "tf"), "GatherNd");
  // within the limit: the exact count (one index on the long string)
  std::vector<i64> ones(2000, 1);
  ones[3] = 0;
  const tensor g = run("GatherV2", {strings({kb, "x"}), i64s(ones), tensor::scalar<i64>(0)}, {}, "tf");
  CHECK(g.data<std::string>()[3] == kb);
  CHECK(g.data<std::string>()[4] == "x");
  CHECK(run("Fill", {i64s({3}), tensor::scalar(std::string("ab"))}, {}, "tf").data<std::string>()[2] == "ab");
}

TEST_CASE("exec.string_limits.ml_labels") {
  // LabelEncoder / CategoryMapper copy a label attribute once per input element
  const gpass::attribute_map le{{"keys_int64s", std::vector<i64>{1}}, {"values_strings", std::vector<std::string>{kb}},
                                {"default_string", std::string("-")}};
  check_over(run_error("LabelEncoder", {i64s(std::vector<i64>(2000, 1))}, le, "ai.onnx.ml"), "LabelEncoder");
  const tensor y = run("LabelEncoder", {i64s({1, 2})}, le, "ai.onnx.ml");
  CHECK(y.data<std::string>()[0] == kb);
  CHECK(y.data<std::string>()[1] == "-");
  const gpass::attribute_map cm{{"cats_int64s", std::vector<i64>{1}}, {"cats_strings", std::vector<std::string>{kb}}};
  check_over(run_error("CategoryMapper", {i64s(std::vector<i64>(2000, 1))}, cm, "ai.onnx.ml"), "CategoryMapper");
}

TEST_CASE("exec.string_limits.string_split") {
  // one string of 100,000 delimiters pads each of 1000 others to 100,001 pieces: 10^8 cells
  // (3.2 GB of empty strings), refused before any piece is made
  std::vector<std::string> v(1000, "a");
  v[0] = std::string(100'000, ',');
  const std::string e = run_error("StringSplit", {strings(v)}, {{"delimiter", std::string(",")}});
  CAPTURE(e);
  CHECK(e.find("(op StringSplit)") != std::string::npos);
  CHECK(e.find("max_tensor_bytes") != std::string::npos);
  const tensor y = run("StringSplit", {strings({"a,b", "c"})}, {{"delimiter", std::string(",")}});
  REQUIRE(y.sizes() == std::vector<i64>{2, 2});
  CHECK(y.data<std::string>()[1] == "b");
  CHECK(y.data<std::string>()[3].empty());
}

}  // namespace gpass_test_exec_string_limits
