// SPDX-License-Identifier: Apache-2.0
// TensorFlow GraphDef import (<gpass/io/tensorflow.hpp>): hand-written pbtxt and hand-encoded
// binary GraphDefs covering the mapping rules and the text format, the real-TensorFlow
// fixtures of tests/data/tf (binary and text give the same graph, every node and edge is
// right, the graphs verify), TensorProto files, exact error messages, and a fuzz-style test
// (mutated GraphDefs import or throw gpass::error).

#include <complex>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <gpass/analysis/verify.hpp>
#include <gpass/io/tensorflow.hpp>
#include <gpass/io/text.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_tf_import {

using gpass::dim;
using gpass::dtype;
using gpass::shape;
using gpass::tensor;

namespace {

using strings = std::vector<std::string>;

const std::filesystem::path tf_data = std::filesystem::path(GPASS_TEST_DATA_DIR) / "tf";

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

gpass::graph<> from_text(const std::string& pbtxt) { return gpass::parse_tf_graph_def_text(pbtxt, "test.pbtxt"); }

std::string text_error(const std::string& pbtxt) {
  try {
    (void)from_text(pbtxt);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

std::string binary_error(const std::string& bytes, const gpass::tf_import_options& o = {}) {
  try {
    (void)gpass::parse_tf_graph_def(bytes, "test.pb", o);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

/// Producer of input `k` of `node` as "name" or "name:port".
std::string input_of(const gpass::graph<>& g, const std::string& node, int k) {
  auto in = g.input(g.at(node), k);
  if (in.empty) return "_";
  std::string s = g[in.node].name;
  if (in.port != 0) s += ":" + std::to_string(in.port);
  return s;
}

std::set<std::string> control_inputs_of(const gpass::graph<>& g, const std::string& node) {
  std::set<std::string> r;
  for (auto v : g.control_inputs(g.at(node))) r.insert(g[v].name);
  return r;
}

const gpass::attribute& attr(const gpass::graph<>& g, const std::string& node, const std::string& name) {
  return g[g.at(node)].attrs.at(name);
}

// ---- a minimal protobuf encoder for hand-made binary messages ------------------------------

std::string varint(std::uint64_t v) {
  std::string s;
  do {
    std::uint8_t b = v & 0x7f;
    v >>= 7;
    if (v) b |= 0x80;
    s += static_cast<char>(b);
  } while (v);
  return s;
}
std::string tag(std::uint32_t n, unsigned wt) { return varint((std::uint64_t{n} << 3) | wt); }
std::string ld(std::uint32_t n, const std::string& payload) { return tag(n, 2) + varint(payload.size()) + payload; }
std::string vi(std::uint32_t n, std::uint64_t v) { return tag(n, 0) + varint(v); }
std::string f32(std::uint32_t n, float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  std::string s = tag(n, 5);
  for (int i = 0; i < 4; ++i) s += static_cast<char>((u >> (8 * i)) & 0xff);
  return s;
}
std::string le_floats(const std::vector<float>& v) {
  std::string s;
  for (float f : v) {
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    for (int i = 0; i < 4; ++i) s += static_cast<char>((u >> (8 * i)) & 0xff);
  }
  return s;
}
std::string attr_entry(const std::string& key, const std::string& value_msg) { return ld(5, ld(1, key) + ld(2, value_msg)); }
std::string node_def(const std::string& name, const std::string& op, const strings& inputs, const std::string& rest = "") {
  std::string s = ld(1, name) + ld(2, op);
  for (const auto& i : inputs) s += ld(3, i);
  return ld(1, s + rest);
}

/// The fixtures that have a graph.pb.
std::vector<std::filesystem::path> fixture_dirs() {
  std::vector<std::filesystem::path> r;
  if (!std::filesystem::exists(tf_data)) return r;
  for (const auto& e : std::filesystem::directory_iterator(tf_data))
    if (e.is_directory() && std::filesystem::exists(e.path() / "graph.pb")) r.push_back(e.path());
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace

TEST_CASE("io.tensorflow.small_graph") {
  // ports, data and control edges, forward references, a v1 loop cycle, devices, unknown ops,
  // _output_shapes -> output types
  const std::string pbtxt = R"(
# comment line
node {
  name: "x"
  op: "Placeholder"
  attr { key: "dtype" value { type: DT_FLOAT } }
  attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } }
  attr { key: "_output_shapes" value { list { shape { dim { size: -1 } dim { size: 3 } } } } }
}
node {
  name: "split"
  op: "Split"
  input: "dim"
  input: "x"
  attr { key: "num_split" value { i: 3 } }
  attr { key: "T" value { type: DT_FLOAT } }
  attr { key: "_output_shapes" value { list { shape { dim { size: -1 } dim { size: 1 } } shape { unknown_rank: true } shape {} } } }
}
node { name: "dim" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
       attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 1 } } } }
node { name: "add" op: "AddV2" input: "split:2" input: "split" input: "^dim" device: "/device:CPU:0"
       attr { key: "T" value { type: DT_FLOAT } } }
node { name: "m" op: "RefMerge" input: "add" input: "n" attr { key: "T" value { type: DT_FLOAT } } attr { key: "N" value { i: 2 } } }
node { name: "n" op: "NextIteration" input: "m" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "u" op: "MyCustomOp" input: "add" input: "^m" }
node { name: "v" op: "Identity" input: "u:3" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "w" op: "NoOp" input: "^v" input: "^u" }
versions { producer: 1234 min_consumer: 12 }
)";
  auto g = from_text(pbtxt);
  const std::string want = R"(graph {frontend = "tf", min_consumer = 12, producer = 1234} {
  %x = tf::Placeholder() {dtype = f32, shape = shape[?,3]} -> (f32[?,3])
  %split:3 = tf::Split(%dim, %x) {T = f32, num_split = 3} -> (f32[?,1], f32[*], f32[])
  %dim = tf::Const() {dtype = i32, value = tensor<i32[]> [1]}
  %add = tf::AddV2(%split:2, %split:0, ^%dim) {T = f32} on "/device:CPU:0"
  %m:2 = Merge(%add, %n) {N = 2, T = f32}
  %n = NextIteration(%m:0) {T = f32}
  %u:4 = tf::MyCustomOp(%add, ^%m)
  %v = tf::Identity(%u:3) {T = f32}
  %w:0 = tf::NoOp(^%v, ^%u)
}
)";
  CHECK(gpass::print_text(g) == want);
  // the text IR reads back to the same graph
  CHECK(gpass::print_text(gpass::parse_text(want)) == want);
  // a v1 loop cycle verifies
  CHECK_NOTHROW(gpass::verify(g));
  CHECK(g[g.at("m")].domain.empty());
  CHECK(g[g.at("m")].op == "Merge");
  CHECK(g.num_outputs(g.at("w")) == 0);
  CHECK(control_inputs_of(g, "w") == std::set<std::string>{"u", "v"});
}

TEST_CASE("io.tensorflow.attributes_all_kinds") {
  const std::string pbtxt = R"(
node {
  name: "n"
  op: "Custom"
  attr { key: "i" value { i: -7 } }
  attr { key: "big" value { i: 0x7fffffffffffffff } }
  attr { key: "f" value { f: 1e-05 } }
  attr { key: "g" value { f: -inf } }
  attr { key: "h" value { f: 2.5f } }
  attr { key: "b" value { b: True } }
  attr { key: "s" value { s: "a\"b\001\x41\n" 'c\'d' } }
  attr { key: "t" value { type: DT_INT64_REF } }
  attr { key: "sh" value { shape { dim { size: 2 } dim { size: -1 } } } }
  attr { key: "ur" value { shape { unknown_rank: true } } }
  attr { key: "sc" value { shape { } } }
  attr { key: "fn" value { func { name: "body" attr { key: "T" value { type: DT_FLOAT } } } } }
  attr { key: "li" value { list { i: [1, -2, 3] } } }
  attr { key: "lf" value { list { f: 0.5 f: 2 } } }
  attr { key: "lb" value { list { b: [true, false] } } }
  attr { key: "ls" value { list { s: ["x", "y"] } } }
  attr { key: "lt" value { list { type: [DT_FLOAT, DT_HALF, DT_BFLOAT16, DT_STRING, DT_RESOURCE, DT_UINT64] } } }
  attr { key: "lsh" value { list { shape { dim { size: 1 } } shape { unknown_rank: true } } } }
  attr { key: "lfn" value { list { func { name: "a" } func { name: "b" } } } }
  attr { key: "lte" value { list { tensor { dtype: DT_INT32 tensor_shape { dim { size: 2 } } int_val: [4, 5] } } } }
  attr { key: "_class" value { list { } } }
  attr { key: "T" value { list { } } }
  attr { key: "output_shapes" value { list { } } }
  attr { key: "dilations" value { list { } } }
  attr { key: "branches" value { list { } } }
  attr { key: "i" value { i: 8 } }
}
)";
  auto g = from_text(pbtxt);
  CHECK(attr(g, "n", "i").as<std::int64_t>() == 8);  // map semantics: the last entry wins
  CHECK(attr(g, "n", "big").as<std::int64_t>() == INT64_MAX);
  CHECK(attr(g, "n", "f").as<double>() == static_cast<double>(1e-05f));
  CHECK(attr(g, "n", "g").as<double>() == -std::numeric_limits<double>::infinity());
  CHECK(attr(g, "n", "h").as<double>() == 2.5);
  CHECK(attr(g, "n", "b").as<bool>());
  CHECK(attr(g, "n", "s").as<std::string>() == std::string("a\"b\001A\nc'd"));
  CHECK(attr(g, "n", "t").as<dtype>() == dtype::int64);
  CHECK(attr(g, "n", "sh").as<shape>() == shape{2, dim()});
  CHECK(!attr(g, "n", "ur").as<shape>().has_rank());
  CHECK(attr(g, "n", "sc").as<shape>() == shape::scalar());
  CHECK(attr(g, "n", "fn").as<gpass::function_ref>().name == "body");
  CHECK(attr(g, "n", "fn.T").as<dtype>() == dtype::f32);  // instantiation attribute
  CHECK(attr(g, "n", "li").as<std::vector<std::int64_t>>() == std::vector<std::int64_t>{1, -2, 3});
  CHECK(attr(g, "n", "lf").as<std::vector<double>>() == std::vector<double>{0.5, 2.0});
  CHECK(attr(g, "n", "lb").as<std::vector<bool>>() == std::vector<bool>{true, false});
  CHECK(attr(g, "n", "ls").as<strings>() == strings{"x", "y"});
  CHECK(attr(g, "n", "lt").as<std::vector<dtype>>() ==
        std::vector<dtype>{dtype::f32, dtype::f16, dtype::bf16, dtype::string, dtype::resource, dtype::uint64});
  CHECK(attr(g, "n", "lsh").as<std::vector<shape>>() == std::vector<shape>{shape{1}, shape::unknown_rank()});
  CHECK(attr(g, "n", "lfn").as<std::vector<gpass::function_ref>>() ==
        std::vector<gpass::function_ref>{{"a"}, {"b"}});
  CHECK(attr(g, "n", "lte").as<std::vector<tensor>>() == std::vector<tensor>{tensor::from<std::int32_t>({4, 5})});
  // empty lists: the kind TensorFlow uses for that name, ints otherwise
  CHECK(attr(g, "n", "_class").is<strings>());
  CHECK(attr(g, "n", "T").is<std::vector<dtype>>());
  CHECK(attr(g, "n", "output_shapes").is<std::vector<shape>>());
  CHECK(attr(g, "n", "dilations").is<std::vector<std::int64_t>>());
  CHECK(attr(g, "n", "branches").is<std::vector<gpass::function_ref>>());
  // the text IR prints and re-reads every kind
  auto g2 = gpass::parse_text(gpass::print_text(g));
  CHECK(gpass::print_text(g2) == gpass::print_text(g));
}

TEST_CASE("io.tensorflow.tensors") {
  auto value_of = [](const std::string& tensor_text) {
    auto g = from_text("node { name: 'c' op: 'Const' attr { key: 'value' value { tensor { " + tensor_text + " } } } }");
    return attr(g, "c", "value").as<tensor>();
  };
  // fewer values than elements: the last one repeats; none: zeros
  CHECK(value_of("dtype: DT_FLOAT tensor_shape { dim { size: 2 } dim { size: 2 } } float_val: [1.5, -2]") ==
        tensor::from<float>({1.5f, -2, -2, -2}, {2, 2}));
  CHECK(value_of("dtype: DT_INT64 tensor_shape { dim { size: 3 } }") == tensor::from<std::int64_t>({0, 0, 0}));
  CHECK(value_of("dtype: DT_DOUBLE tensor_shape { } double_val: 0.1") == tensor::scalar<double>(0.1));
  CHECK(value_of("dtype: DT_INT8 tensor_shape { dim { size: 2 } } int_val: [-3, 4]") == tensor::from<std::int8_t>({-3, 4}));
  CHECK(value_of("dtype: DT_UINT8 tensor_shape { dim { size: 2 } } int_val: 255") == tensor::from<std::uint8_t>({255, 255}));
  CHECK(value_of("dtype: DT_UINT16 tensor_shape { dim { size: 1 } } int_val: 65535") == tensor::from<std::uint16_t>({65535}));
  CHECK(value_of("dtype: DT_UINT32 tensor_shape { dim { size: 1 } } uint32_val: 4000000000") ==
        tensor::from<std::uint32_t>({4000000000u}));
  CHECK(value_of("dtype: DT_UINT64 tensor_shape { dim { size: 1 } } uint64_val: 18446744073709551615") ==
        tensor::from<std::uint64_t>({UINT64_MAX}));
  CHECK(value_of("dtype: DT_BOOL tensor_shape { dim { size: 3 } } bool_val: [true, false]") ==
        tensor::from<bool>({true, false, false}));
  CHECK(value_of("dtype: DT_STRING tensor_shape { dim { size: 2 } } string_val: 'ab\\000c'") ==
        tensor::from<std::string>({std::string("ab\0c", 4), std::string("ab\0c", 4)}));
  CHECK(value_of("dtype: DT_COMPLEX64 tensor_shape { dim { size: 2 } } scomplex_val: [1, 2, 3, 4]") ==
        tensor::from<std::complex<float>>({{1, 2}, {3, 4}}));
  CHECK(value_of("dtype: DT_COMPLEX128 tensor_shape { dim { size: 2 } } dcomplex_val: [1, 2]") ==
        tensor::from<std::complex<double>>({{1, 2}, {1, 2}}));
  {
    // half and bfloat16 values are bit patterns in half_val
    tensor h = value_of("dtype: DT_HALF tensor_shape { dim { size: 2 } } half_val: [15360, 49152]");  // 1.0, -2.0
    REQUIRE(h.element_type() == dtype::f16);
    CHECK(static_cast<float>(h.data<Eigen::half>()[0]) == 1.0f);
    CHECK(static_cast<float>(h.data<Eigen::half>()[1]) == -2.0f);
    tensor b = value_of("dtype: DT_BFLOAT16 tensor_shape { dim { size: 1 } } half_val: 16256");  // 1.0
    REQUIRE(b.element_type() == dtype::bf16);
    CHECK(static_cast<float>(b.data<Eigen::bfloat16>()[0]) == 1.0f);
  }
  // tensor_content: raw little-endian bytes (text: an escaped string)
  CHECK(value_of("dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: '\\000\\000\\200?\\000\\000\\000\\300'") ==
        tensor::from<float>({1.0f, -2.0f}));
  CHECK(value_of("dtype: DT_INT32 tensor_shape { dim { size: 2 } dim { size: 0 } }") == tensor(dtype::int32, {2, 0}));

  // errors, each naming the node and op
  CHECK(text_error("node { name: 'c' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape "
                   "{ dim { size: 1 } } float_val: [1, 2] } } } }") ==
        "gpass: test.pbtxt: node 'c' (op Const): attribute 'value': tensor of dtype DT_FLOAT and shape [1] has 2 "
        "float_val values for 1 elements");
  CHECK(text_error("node { name: 'c' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_FLOAT "
                   "int_val: 1 } } } }") ==
        "gpass: test.pbtxt: node 'c' (op Const): attribute 'value': tensor of dtype DT_FLOAT has values in int_val "
        "(expected float_val)");
  CHECK(text_error("node { name: 'c' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape "
                   "{ dim { size: 2 } } tensor_content: 'abc' } } } }") ==
        "gpass: test.pbtxt: node 'c' (op Const): attribute 'value': tensor of dtype DT_FLOAT and shape [2] needs 8 bytes "
        "of tensor_content, got 3");
  CHECK(text_error("node { name: 'c' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape "
                   "{ dim { size: -1 } } } } } }") ==
        "gpass: test.pbtxt: node 'c' (op Const): attribute 'value': tensor of dtype DT_FLOAT has an unknown dim in its "
        "shape [?]");
  CHECK(text_error("node { name: 'c' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_QINT8 } } } }") ==
        "gpass: test.pbtxt: node 'c' (op Const): attribute 'value': tensor of dtype DT_QINT8: no gpass dtype for it");
  CHECK(text_error("node { name: 'c' op: 'Const' attr { key: 'dtype' value { type: DT_INVALID } } }") ==
        "gpass: test.pbtxt: node 'c' (op Const): attribute 'dtype': DT_INVALID has no gpass dtype");
  // one value repeated over a huge shape, materialized (splat_fill_bytes = 0; by default it
  // is a Fill: tf.run_acyclic.splat_constants), stops at the size limit instead of allocating it
  gpass::tf_import_options small;
  small.max_tensor_bytes = 1 << 20;
  small.splat_fill_bytes = 0;
  const std::string huge = "node { name: 'c' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_FLOAT "
                           "tensor_shape { dim { size: 1000000 } dim { size: 1000000 } } float_val: 1 } } } }";
  try {
    (void)gpass::parse_tf_graph_def_text(huge, "huge.pbtxt", small);
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(std::string(e.what()) ==
          "gpass: huge.pbtxt: node 'c' (op Const): attribute 'value': tensor of dtype DT_FLOAT and shape "
          "[1000000,1000000] needs 4000000000000 bytes made of repeated values, more than the 1048576 bytes left of "
          "max_tensor_bytes");
  }
  // the limit is for the whole import: two tensors of 600000 bytes do not fit in 1 MiB
  const std::string two = "node { name: 'a' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_FLOAT "
                          "tensor_shape { dim { size: 150000 } } float_val: 1 } } } }"
                          "node { name: 'b' op: 'Const' attr { key: 'value' value { tensor { dtype: DT_FLOAT "
                          "tensor_shape { dim { size: 150000 } } } } } }";
  try {
    (void)gpass::parse_tf_graph_def_text(two, "two.pbtxt", small);
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(std::string(e.what()) ==
          "gpass: two.pbtxt: node 'b' (op Const): attribute 'value': tensor of dtype DT_FLOAT and shape [150000] needs "
          "600000 bytes made of repeated values, more than the 448576 bytes left of max_tensor_bytes");
  }
  CHECK_NOTHROW(gpass::parse_tf_graph_def_text(two, "two.pbtxt"));
}

TEST_CASE("io.tensorflow.text_format") {
  // `< >` messages, `:` before a message, lists of messages, separators, numbers, ignored fields
  const std::string pbtxt = R"(
node <
  name: 'a' ; op: "Const"
  attr: { key: "value"
          value { tensor { dtype: DT_INT32 tensor_shape { dim: [{ size: 4 }] } int_val: [0x10, 010, -5, 7] } } },
  experimental_debug_info { original_node_names: "orig" }
  experimental_type { type_id: TFT_PRODUCT args { type_id: TFT_TENSOR args { type_id: TFT_FLOAT } } }
>
node [{ name: "b" op: "Identity" input: "a" }, { name: "c" op: "Identity" input: "b" }]
library { function { signature { name: "f" description: "ignored" attr { name: "T" type: "type" } } } }
versions { producer: 5 bad_consumers: [1, 2] }
debug_info { files: "x.py" }
)";
  auto g = from_text(pbtxt);
  CHECK(attr(g, "a", "value").as<tensor>() == tensor::from<std::int32_t>({16, 8, -5, 7}));
  CHECK(input_of(g, "c", 0) == "b");
  CHECK(g.attrs().at("bad_consumers").as<std::vector<std::int64_t>>() == std::vector<std::int64_t>{1, 2});
  CHECK(g.find_function("f") != nullptr);
  // floats: exponent, suffix, nan, integers
  auto g2 = from_text("node { name: 'n' op: 'X' attr { key: 'l' value { list { f: [1e-05, .5, 3., 2.5e+2, nan, -Infinity, 7] } } } }");
  const auto& l = attr(g2, "n", "l").as<std::vector<double>>();
  REQUIRE(l.size() == 7);
  CHECK(l[0] == static_cast<double>(1e-05f));
  CHECK(l[1] == 0.5);
  CHECK(l[2] == 3.0);
  CHECK(l[3] == 250.0);
  CHECK(std::isnan(l[4]));
  CHECK(l[5] == -std::numeric_limits<double>::infinity());
  CHECK(l[6] == 7.0);

  // errors name the file, line and column
  CHECK(text_error("node {\n  name: \"x\"\n  nam: \"y\"\n}\n") == "gpass: test.pbtxt:3:3: unknown field 'nam' in NodeDef");
  CHECK(text_error("node {\n  name: \"x\"\n") == "gpass: test.pbtxt:3:1: expected '}' to close NodeDef, got end of input");
  CHECK(text_error("node { name \"x\" }") == "gpass: test.pbtxt:1:13: expected ':' after field 'name', got a string");
  CHECK(text_error("node { name: 5 }") == "gpass: test.pbtxt:1:14: expected a string, got '5'");
  CHECK(text_error("node { name: 'x' attr { key: 'a' value { type: DT_FLOATY } } }") ==
        "gpass: test.pbtxt:1:48: unknown DataType 'DT_FLOATY'");
  CHECK(text_error("node { name: 'x' attr { key: 'a' value { i: 9223372036854775808 } } }") ==
        "gpass: test.pbtxt:1:45: integer 9223372036854775808 out of range for int64");
  CHECK(text_error("versions { producer: 2147483648 }") ==
        "gpass: test.pbtxt:1:22: integer 2147483648 out of range for int32");
  CHECK(text_error("node { name: 'a\\q' }") == "gpass: test.pbtxt:1:16: invalid escape '\\q'");
  CHECK(text_error("node { name: 'x' } }") == "gpass: test.pbtxt:1:20: expected a field name of GraphDef, got '}'");
  CHECK(text_error("node { name: 'x' op: 'Y' attr { key: 'b' value { b: yes } } }") ==
        "gpass: test.pbtxt:1:53: expected true or false, got 'yes'");
  CHECK(text_error("node { name: 'x' @ }") == "gpass: test.pbtxt:1:18: unexpected character '@'");
  CHECK(text_error("versions { [ext.x]: 1 }") ==
        "gpass: test.pbtxt:1:12: extensions and Any expansions ('[...]' field names) are not supported");
  // the fixture of a malformed file (an unterminated string on line 10)
  const auto bad = tf_data / "bad" / "malformed.pbtxt";
  if (std::filesystem::exists(bad)) {
    try {
      (void)gpass::read_tf_graph_file(bad);
      FAIL("no error");
    } catch (const gpass::error& e) {
      CHECK(std::string(e.what()) == "gpass: " + bad.string() + ":10:10: unterminated string (newline inside a string)");
      CHECK(e.context().line == 10);
    }
  }
  // nesting is bounded (no stack overflow on hostile input)
  std::string deep = "node { name: 'x' op: 'Y' attr { key: 'a' value { ";
  for (int i = 0; i < 200; ++i) deep += "func { name: 'f' attr { key: 'a' value { ";
  CHECK(text_error(deep).find("messages nested deeper than 100 levels") != std::string::npos);
}

TEST_CASE("io.tensorflow.functions") {
  const std::string pbtxt = R"(
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
node { name: "call" op: "twice" input: "x" }
node { name: "r0" op: "Identity" input: "call:1" }
library {
  function {
    signature {
      name: "twice"
      input_arg { name: "a" type: DT_FLOAT }
      output_arg { name: "sum" type: DT_FLOAT }
      output_arg { name: "parts" type: DT_FLOAT }
      control_output: "side"
    }
    node_def { name: "s" op: "Split" input: "dim" input: "a" attr { key: "num_split" value { i: 2 } } attr { key: "T" value { type: DT_FLOAT } } }
    node_def { name: "dim" op: "Const" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "value" value { tensor { dtype: DT_INT32 int_val: 0 } } } }
    node_def { name: "add" op: "AddV2" input: "s:output:1" input: "a:0" attr { key: "T" value { type: DT_FLOAT } } }
    node_def { name: "top" op: "TopKV2" input: "add:z:0" input: "dim:output:0" }
    node_def { name: "cat" op: "ConcatV2" input: "s:output" input: "dim" attr { key: "N" value { i: 2 } } }
    node_def { name: "side" op: "NoOp" input: "^top" }
    ret { key: "sum" value: "top:indices:0" }
    ret { key: "parts" value: "a" }
    control_ret { key: "side" value: "side" }
    attr { key: "_noinline" value { b: true } }
    arg_attr { key: 0 value { attr { key: "_output_shapes" value { list { shape { dim { size: 4 } } } } } } }
  }
  gradient { function_name: "twice" gradient_func: "twice_grad" }
}
)";
  auto g = from_text(pbtxt);
  // a call of a library function has one output per result
  CHECK(g.num_outputs(g.at("call")) == 2);
  CHECK(input_of(g, "r0", 0) == "call:1");
  CHECK(g.attrs().at("tf_gradients").as<strings>() == strings{"twice:twice_grad"});
  const auto* f = g.find_function("twice");
  REQUIRE(f != nullptr);
  const std::string want = R"(graph {_noinline = true} {
  %function_entry = function_entry() {names = ["a"]} -> (f32[4])
  %s:2 = tf::Split(%dim, %function_entry) {T = f32, num_split = 2}
  %dim = tf::Const() {dtype = i32, value = tensor<i32[]> [0]}
  %add = tf::AddV2(%s:1, %function_entry) {T = f32}
  %top:2 = tf::TopKV2(%add, %dim)
  %cat = tf::ConcatV2(%s:0, %s:1, %dim) {N = 2}
  %side:0 = tf::NoOp(^%top)
  %return:0 = return(%top:1, %function_entry, ^%side) {names = ["sum", "parts"]}
}
)";
  CHECK(gpass::print_text(*f) == want);
  CHECK_NOTHROW(gpass::verify(g));

  // a placeholder attribute (a polymorphic function body) is kept as its name
  auto p = from_text(R"(library { function {
    signature { name: "poly" input_arg { name: "a" type_attr: "T" } output_arg { name: "y" type_attr: "T" } }
    node_def { name: "n" op: "Neg" input: "a" attr { key: "T" value { placeholder: "T" } } }
    ret { key: "y" value: "n:y:0" } } })");
  const auto& pn = (*p.find_function("poly"))[p.find_function("poly")->at("n")];
  CHECK(pn.attrs.at("T").as<std::string>() == "T");
  CHECK(pn.attrs.at("_tf_placeholders").as<strings>() == strings{"T"});
  CHECK(gpass::print_text(*p.find_function("poly")).find("%function_entry = function_entry() {names = [\"a\"]}\n") !=
        std::string::npos);
}

TEST_CASE("io.tensorflow.function_errors") {
  auto with_body = [](const std::string& body) {
    return "library { function { signature { name: 'f' input_arg { name: 'a' type: DT_FLOAT } output_arg { name: 'y' "
           "type: DT_FLOAT } } " +
           body + " } }";
  };
  CHECK(text_error(with_body("node_def { name: 't' op: 'TopKV2' input: 'a' input: 'a' } node_def { name: 'm' op: 'Identity' "
                             "input: 't:nope:0' } ret { key: 'y' value: 'm:output:0' }")) ==
        "gpass: test.pbtxt: node 'm' (op Identity): in function 'f': input 0: input 't:nope:0': op TopKV2 has no output "
        "argument 'nope' (it has values, indices)");
  CHECK(text_error(with_body("node_def { name: 'u' op: 'Mystery' input: 'a' } node_def { name: 'm' op: 'Identity' "
                             "input: 'u:out:0' } ret { key: 'y' value: 'm:output:0' }")) ==
        "gpass: test.pbtxt: node 'm' (op Identity): in function 'f': input 0: input 'u:out:0' names output argument 'out' "
        "of node 'u', but the outputs of op Mystery are not known to the importer (use a known op, or a function of the "
        "library)");
  CHECK(text_error(with_body("node_def { name: 's' op: 'Split' input: 'a' input: 'a' attr { key: 'num_split' value { i: 2 } } } "
                             "ret { key: 'y' value: 's:output:2' }")) ==
        "gpass: test.pbtxt: in function 'f': ret 'y': input 's:output:2': index 2 out of range (output argument 'output' "
        "of op Split has 2)");
  CHECK(text_error(with_body("node_def { name: 'n' op: 'Identity' input: 'a' }")) ==
        "gpass: test.pbtxt: in function 'f': output argument 'y' has no entry in ret");
  CHECK(text_error("library { function { signature { name: 'f' input_arg { name: 'a' number_attr: 'N' type: DT_FLOAT } } } }") ==
        "gpass: test.pbtxt: function 'f': input argument 'a' is a list (number_attr N); functions with list arguments "
        "are not supported");
  CHECK(text_error("library { function { signature { name: 'f' } } function { signature { name: 'f' } } }") ==
        "gpass: test.pbtxt: function 'f' is defined twice in the library");
}

TEST_CASE("io.tensorflow.graph_errors") {
  // the bad/ fixtures made next to the real ones
  auto file_error = [](const std::string& name) {
    try {
      (void)gpass::read_tf_graph_file(tf_data / "bad" / name);
    } catch (const gpass::error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  if (std::filesystem::exists(tf_data / "bad" / "unknown_input.pbtxt")) {
    CHECK(file_error("unknown_input.pbtxt") == "gpass: " + (tf_data / "bad" / "unknown_input.pbtxt").string() +
                                                   ": node 'y' (op Identity): input 0 ('does_not_exist') names no node");
    CHECK(file_error("bad_port.pbtxt") == "gpass: " + (tf_data / "bad" / "bad_port.pbtxt").string() +
                                              ": node 'y' (op Identity): input 0 ('split:5'): output index 5 out of range "
                                              "(op Split has 2 outputs here)");
  }
  // the bad/ graphs that are errors for the loop passes, not for the importer, import and verify
  for (const char* name : {"two_loopconds.pbtxt", "nextiteration_without_merge.pbtxt"})
    if (std::filesystem::exists(tf_data / "bad" / name)) {
      CAPTURE(name);
      CHECK_NOTHROW(gpass::verify(gpass::read_tf_graph_file(tf_data / "bad" / name)));
    }
  CHECK(text_error("node { name: 's' op: 'Split' input: 'd' input: 'd' attr { key: 'num_split' value { i: 2 } } }"
                   "node { name: 'd' op: 'Const' }"
                   "node { name: 'y' op: 'Identity' input: 's:5' }") ==
        "gpass: test.pbtxt: node 'y' (op Identity): input 0 ('s:5'): output index 5 out of range (op Split has 2 outputs "
        "here)");
  CHECK(text_error("node { name: 'a' op: 'Const' } node { name: 'y' op: 'Identity' input: 'a:1' }") ==
        "gpass: test.pbtxt: node 'y' (op Identity): input 0 ('a:1'): output index 1 out of range (op Const has 1 output "
        "here)");
  CHECK(text_error("node { name: 'a' op: 'NoOp' } node { name: 'y' op: 'Identity' input: 'a' }") ==
        "gpass: test.pbtxt: node 'y' (op Identity): input 0 ('a'): output index 0 out of range (op NoOp has 0 outputs "
        "here)");
  CHECK(text_error("node { name: 'a' op: 'Const' } node { name: 'a' op: 'Identity' }") ==
        "gpass: test.pbtxt: node 'a' (op Identity): duplicate node name (NodeDefs 0 and 1)");
  CHECK(text_error("node { name: 'a' op: 'Const' } node { name: 'y' op: 'Identity' input: 'a:x' }") ==
        "gpass: test.pbtxt: node 'y' (op Identity): input 0: bad input 'a:x': the output port 'x' is not a number");
  CHECK(text_error("node { name: 'a' op: 'Const' } node { name: 'y' op: 'Identity' input: 'a:0:1' }") ==
        "gpass: test.pbtxt: node 'y' (op Identity): input 0: bad input 'a:0:1': more than one ':'");
  CHECK(text_error("node { name: 'a' op: 'Const' } node { name: 'y' op: 'Identity' input: '^a:0' }") ==
        "gpass: test.pbtxt: node 'y' (op Identity): input 0: bad input '^a:0': a control input names a node, not an "
        "output");
  CHECK(text_error("node { name: 'y' op: 'Identity' input: '' }") ==
        "gpass: test.pbtxt: node 'y' (op Identity): input 0: bad input '': empty name");
  CHECK(text_error("node { name: 'y' op: 'Identity' input: '^nope' }") ==
        "gpass: test.pbtxt: node 'y' (op Identity): input 0 ('^nope') names no node");
  CHECK(text_error("node { op: 'Identity' }") == "gpass: test.pbtxt: node '#0' (op Identity): NodeDef 0 has no name");
  CHECK(text_error("node { name: 'y' }") == "gpass: test.pbtxt: node 'y': node has no op");
  CHECK(text_error("node { name: 's' op: 'Split' }") ==
        "gpass: test.pbtxt: node 's' (op Split): attribute 'num_split' (the number of outputs 'output') is missing");
  CHECK(text_error("node { name: 's' op: 'Split' attr { key: 'num_split' value { i: -1 } } }") ==
        "gpass: test.pbtxt: node 's' (op Split): attribute 'num_split' = -1 is not a valid number of outputs");
  CHECK(text_error("node { name: 's' op: 'TopKV2' attr { key: '_output_shapes' value { list { shape {} } } } }") ==
        "gpass: test.pbtxt: node 's' (op TopKV2): _output_shapes has 1 entries, but op TopKV2 has 2 outputs here");
  CHECK(text_error("node { name: 'u' op: 'Mystery' attr { key: '_output_shapes' value { list { shape {} } } } }"
                   "node { name: 'y' op: 'Identity' input: 'u:1' }") ==
        "gpass: test.pbtxt: node 'y' (op Identity): input 0 ('u:1'): output index 1 out of range (node 'u' has 1 outputs "
        "in _output_shapes)");
  // output ports cost a few bytes of input each: their total is bounded
  std::string many;
  for (int i = 0; i < 10; ++i) many += "node { name: 'y" + std::to_string(i) + "' op: 'Identity' input: 'u:999999' }";
  CHECK(text_error("node { name: 'u' op: 'Mystery' }" + many) ==
        "gpass: test.pbtxt: node 'u' (op Mystery): the graph has more than 66240 output ports for 11 nodes (this node has "
        "1000000): refused as corrupted or hostile input");
  CHECK(text_error("node { name: 'u' op: 'Mystery' attr { key: 'x' value { } } }") ==
        "gpass: test.pbtxt: node 'u' (op Mystery): attribute 'x' has no value");
  CHECK(text_error("node { name: 'u' op: 'Mystery' attr { key: 'x' value { list { i: 1 s: 'a' } } } }") ==
        "gpass: test.pbtxt: node 'u' (op Mystery): attribute 'x': the list mixes i and s values");
}

TEST_CASE("io.tensorflow.binary") {
  // a hand-encoded GraphDef: packed and unpacked floats, unknown fields skipped, tensor_content
  const std::string tensor_a = ld(8, vi(1, 1) + ld(2, ld(2, vi(1, 3))) + ld(5, le_floats({1, 2}).substr(0, 8)));
  const std::string tensor_b = ld(8, vi(1, 1) + ld(2, ld(2, vi(1, 3))) + f32(5, 4) + f32(5, 5));
  const std::string tensor_c = ld(8, vi(1, 1) + ld(2, ld(2, vi(1, 2))) + ld(4, le_floats({6, 7})));
  const std::string gd = node_def("a", "Const", {}, attr_entry("value", tensor_a) + vi(99, 5) /* unknown field */) +
                         node_def("b", "Const", {}, attr_entry("value", tensor_b)) +
                         node_def("c", "Const", {}, attr_entry("value", tensor_c)) +
                         node_def("s", "AddN", {"a", "b", "c:0", "^a"}) + ld(4, vi(1, 42));
  auto g = gpass::parse_tf_graph_def(gd, "hand.pb");
  CHECK(attr(g, "a", "value").as<tensor>() == tensor::from<float>({1, 2, 2}));
  CHECK(attr(g, "b", "value").as<tensor>() == tensor::from<float>({4, 5, 5}));
  CHECK(attr(g, "c", "value").as<tensor>() == tensor::from<float>({6, 7}));
  CHECK(input_of(g, "s", 2) == "c");
  CHECK(control_inputs_of(g, "s") == std::set<std::string>{"a"});
  CHECK(g.attrs().at("producer").as<std::int64_t>() == 42);
  // the same graph written as text gives the same IR
  auto t = from_text(R"(
node { name: "a" op: "Const" attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: [1, 2] } } } }
node { name: "b" op: "Const" attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 3 } } float_val: 4 float_val: 5 } } } }
node { name: "c" op: "Const" attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 2 } } tensor_content: "\000\000\300@\000\000\340@" } } } }
node { name: "s" op: "AddN" input: "a" input: "b" input: "c:0" input: "^a" }
versions { producer: 42 }
)");
  CHECK(gpass::print_text(t) == gpass::print_text(g));

  // malformed binary: exact messages with the byte offset
  CHECK(binary_error(gd.substr(0, gd.size() - 1)) == "gpass: test.pb: byte offset " + std::to_string(gd.size() - 3) +
                                                         ": length 2 runs past the end of the data (1 bytes left)");
  CHECK(binary_error(gd.substr(0, gd.size() - 3) + "\x80") ==
        "gpass: test.pb: byte offset " + std::to_string(gd.size() - 3) + ": truncated varint");
  CHECK(binary_error(ld(1, std::string(1, '\0'))) == "gpass: test.pb: byte offset 2: field number 0 (not a protobuf message, or corrupted data)");
  CHECK(binary_error(ld(1, vi(1, 5))) ==  // NodeDef.name as a varint
        "gpass: test.pb: byte offset 2: field 'name' (number 1) of NodeDef has wire type varint, expected "
        "length-delimited");
  CHECK(binary_error(vi(1, 3)) ==
        "gpass: test.pb: byte offset 0: field 'node' (number 1) of GraphDef has wire type varint, expected length-delimited");
  CHECK(binary_error(tag(1, 2) + varint(1000) + "abc") ==
        "gpass: test.pb: byte offset 1: length 1000 runs past the end of the data (3 bytes left)");
  CHECK(binary_error(tag(7, 3)) == "gpass: test.pb: byte offset 1: unsupported start-group field");
  CHECK(binary_error(std::string(11, '\xff')) == "gpass: test.pb: byte offset 0: varint does not fit in 64 bits");
  CHECK(binary_error(std::string(10, '\x80') + '\x01') == "gpass: test.pb: byte offset 0: varint longer than 10 bytes");
  CHECK(binary_error(node_def("a", "Const", {}, attr_entry("value", ld(8, vi(1, 1) + ld(5, "abc")))), {}) ==
        "gpass: test.pb: byte offset 29: packed field 'float_val' of TensorProto: 3 bytes is not a multiple of 4");
  // a length that is larger than the rest never allocates it
  CHECK(binary_error(tag(1, 2) + varint(std::uint64_t{1} << 62)).find("runs past the end of the data") != std::string::npos);
  // nesting bounded
  std::string av = vi(3, 1);  // AttrValue { i: 1 }, then AttrValue.func.attr[k] nested 120 times
  for (int i = 0; i < 120; ++i) av = ld(10, ld(2, ld(1, "k") + ld(2, av)));
  const std::string deep = ld(1, ld(1, "n") + ld(2, "X") + ld(5, ld(1, "k") + ld(2, av)));
  CHECK(binary_error(deep).find("nested deeper than 100 levels") != std::string::npos);
}

TEST_CASE("io.tensorflow.fixtures") {
  const auto dirs = fixture_dirs();
  if (dirs.empty()) {
    MESSAGE("tests/data/tf has no fixtures; skipped");
    return;
  }
  CHECK(dirs.size() >= 13);
  for (const auto& d : dirs) {
    CAPTURE(d.string());
    auto gb = gpass::read_tf_graph_file(d / "graph.pb");
    auto gt = gpass::read_tf_graph_file(d / "graph.pbtxt");
    // binary and text give the same graph
    CHECK(gpass::print_text(gb) == gpass::print_text(gt));
    // verifies (v1 loop cycles allowed)
    CHECK_NOTHROW(gpass::verify(gb));
    CHECK(gb.attrs().at("frontend").as<std::string>() == "tf");
    CHECK(gb.attrs().at("producer").as<std::int64_t>() > 0);
    for (auto v : gb.nodes()) {
      const auto& n = gb[v];
      const bool cf = n.op == "Enter" || n.op == "Exit" || n.op == "Merge" || n.op == "Switch" || n.op == "NextIteration" ||
                      n.op == "LoopCond";
      CHECK_MESSAGE(n.domain == (cf ? "" : "tf"), n.name);
      CHECK(!n.attrs.contains("_output_shapes"));
    }
    // the op counts TensorFlow listed for this graph.pb (tests/data/tf/README.md)
    const std::string readme = slurp(tf_data / "README.md");
    const std::string key = "- `" + d.filename().string() + "` (";
    if (auto at = readme.find(key); at != std::string::npos) {
      std::string line = readme.substr(at, readme.find('\n', at) - at);
      std::map<std::string, int> want, got;
      const auto colon = line.find("): ");
      const int nodes = std::stoi(line.substr(key.size()));
      std::istringstream ops(line.substr(colon + 3));
      std::string item;
      while (std::getline(ops, item, ',')) {
        const auto c = item.find(':');
        std::string op = item.substr(0, c);
        op.erase(0, op.find_first_not_of(' '));
        want[std::string(gpass::detail::tf_io::gpass_op_name(op))] += std::stoi(item.substr(c + 1));  // RefEnter: Enter
      }
      for (auto v : gb.nodes()) ++got[gb[v].op];
      CHECK(static_cast<int>(gb.num_nodes()) == nodes);
      CHECK(got == want);
    }
    // every fetched and fed tensor names an existing port
    std::istringstream fx(slurp(d / "fixture.txt"));
    std::string kind, name, file;
    while (fx >> kind) {
      if (kind == "feed" || kind == "fetch") {
        fx >> name >> file;
        auto colon = name.rfind(':');
        auto v = gb.find(name.substr(0, colon));
        REQUIRE(v);
        CHECK(std::stoll(name.substr(colon + 1)) < static_cast<long long>(gb.num_outputs(*v)));
        CHECK_NOTHROW(gpass::read_tf_tensor_file(d / file));
      } else {
        std::getline(fx, name);
      }
    }
  }
}

TEST_CASE("io.tensorflow.fixture_nodes") {
  if (!std::filesystem::exists(tf_data / "multi_output" / "graph.pb")) return;
  {
    auto g = gpass::read_tf_graph_file(tf_data / "multi_output" / "graph.pb");
    CHECK(g.num_outputs(g.at("split")) == 2);
    CHECK(g.num_outputs(g.at("splitv")) == 3);
    CHECK(g.num_outputs(g.at("unpack")) == 3);
    CHECK(g.num_outputs(g.at("topk")) == 2);
    CHECK(g.num_outputs(g.at("idn")) == 2);
    CHECK(input_of(g, "out_ab", 0) == "split");
    CHECK(input_of(g, "out_ab", 1) == "split:1");
    CHECK(input_of(g, "out_u", 1) == "unpack:2");
    CHECK(input_of(g, "out_pqs", 0) == "splitv:2");
    CHECK(input_of(g, "out_i", 0) == "topk:1");
    CHECK(input_of(g, "idn", 1) == "topk:1");
    // _output_shapes -> types, dtypes from the op's type attributes
    CHECK(g[g.at("topk")].outputs[1].to_string() == "i32[?,2]");
    CHECK(g[g.at("idn")].outputs[1].to_string() == "i32[?,2]");
    CHECK(g[g.at("splitv")].outputs[1].to_string() == "f32[?,2]");
    CHECK(attr(g, "idn", "T").as<std::vector<dtype>>() == std::vector<dtype>{dtype::f32, dtype::int32});
  }
  if (std::filesystem::exists(tf_data / "control_deps" / "graph.pb")) {
    auto g = gpass::read_tf_graph_file(tf_data / "control_deps" / "graph.pb");
    CHECK(control_inputs_of(g, "c") == std::set<std::string>{"b"});
    CHECK(control_inputs_of(g, "barrier") == std::set<std::string>{"b", "c"});
    CHECK(control_inputs_of(g, "d") == std::set<std::string>{"barrier"});
    CHECK(g.num_outputs(g.at("barrier")) == 0);
    CHECK(g[g.at("a")].device == "/device:CPU:0");
    CHECK(input_of(g, "d", 0) == "c");
    CHECK(input_of(g, "d", 1) == "b");
  }
  if (std::filesystem::exists(tf_data / "while_one_var" / "graph.pb")) {
    auto g = gpass::read_tf_graph_file(tf_data / "while_one_var" / "graph.pb");
    std::size_t merges = 0;
    for (auto v : g.nodes())
      if (g[v].op == "Merge") {
        ++merges;
        CHECK(g.num_outputs(v) == 2);
        CHECK(g[g.input(v, 1).node].op == "NextIteration");  // the back edge
      } else if (g[v].op == "Switch") {
        CHECK(g.num_outputs(v) == 2);
      } else if (g[v].op == "Enter") {
        CHECK(g[v].attrs.at("frame_name").is<std::string>());
      }
    CHECK(merges == 1);
  }
}

TEST_CASE("io.tensorflow.tensor_files") {
  if (!std::filesystem::exists(tf_data / "cond" / "feed_1.pb")) return;
  // cond: feed p (bool scalar True), x f32[4]
  tensor p = gpass::read_tf_tensor_file(tf_data / "cond" / "feed_0.pb");
  CHECK(p.element_type() == dtype::bool_);
  CHECK(p.rank() == 0);
  CHECK(p.data<bool>()[0]);
  tensor x = gpass::read_tf_tensor_file(tf_data / "cond" / "feed_1.pb");
  CHECK(x.element_type() == dtype::f32);
  CHECK(x.sizes() == std::vector<std::int64_t>{4});
  // a hand-made TensorProto, and a file that is not one
  CHECK(gpass::parse_tf_tensor(vi(1, 3) + ld(2, ld(2, vi(1, 2))) + ld(7, varint(9))) == tensor::from<std::int32_t>({9, 9}));
  try {
    (void)gpass::parse_tf_tensor(vi(1, 3) + ld(2, ld(2, vi(1, 2))) + vi(6, 1), "t.pb");
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(std::string(e.what()) ==
          "gpass: t.pb: byte offset 8: field 'double_val' (number 6) of TensorProto has wire type varint, expected fixed64");
  }
  try {
    (void)gpass::read_tf_graph_file(tf_data / "no_such_graph.pb");
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(std::string(e.what()) ==
          "gpass: " + (tf_data / "no_such_graph.pb").string() + ": cannot open the TensorFlow GraphDef file: no such file");
  }
  try {
    (void)gpass::read_tf_tensor_file(tf_data / "no_such_file.pb");
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(std::string(e.what()) == "gpass: " + (tf_data / "no_such_file.pb").string() + ": cannot open the TensorProto file: no such file");
  }
}

TEST_CASE("io.tensorflow.format_detection") {
  if (!std::filesystem::exists(tf_data / "cond" / "graph.pb")) return;
  const auto dir = std::filesystem::temp_directory_path() / "gpass_tf_import_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // no telling extension: decided by the first byte
  std::filesystem::copy_file(tf_data / "cond" / "graph.pb", dir / "binary_graph");
  std::filesystem::copy_file(tf_data / "cond" / "graph.pbtxt", dir / "text_graph");
  const std::string want = gpass::print_text(gpass::read_tf_graph_file(tf_data / "cond" / "graph.pb"));
  CHECK(gpass::print_text(gpass::read_tf_graph_file(dir / "binary_graph")) == want);
  CHECK(gpass::print_text(gpass::read_tf_graph_file(dir / "text_graph")) == want);
  CHECK(gpass::detail::tf_io::looks_binary_graph_def(slurp(tf_data / "cond" / "graph.pb")));
  CHECK(!gpass::detail::tf_io::looks_binary_graph_def(slurp(tf_data / "cond" / "graph.pbtxt")));
  std::filesystem::remove_all(dir);
}

TEST_CASE("io.tensorflow.fuzz") {
  // mutated GraphDefs (byte flips, truncations, inserted bytes) either import or throw
  // gpass::error; never crash, hang or allocate without bound
  const auto dirs = fixture_dirs();
  if (dirs.empty()) return;
  gpass::tf_import_options o;
  o.max_tensor_bytes = 1 << 20;
  std::mt19937_64 rng(12345);
  int imported = 0, rejected = 0;
  for (const auto& d : dirs) {
    const std::string base = slurp(d / "graph.pb");
    const std::string text = slurp(d / "graph.pbtxt");
    for (int round = 0; round < 60; ++round) {
      std::string m = base;
      const int kind = static_cast<int>(rng() % 4);
      if (kind == 0) {
        m.resize(rng() % m.size());
      } else if (kind == 1) {
        for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) m[rng() % m.size()] = static_cast<char>(rng());
      } else if (kind == 2) {
        m.insert(rng() % m.size(), 1, static_cast<char>(rng()));
      } else {
        m[rng() % m.size()] ^= static_cast<char>(1u << (rng() % 8));
      }
      try {
        auto g = gpass::parse_tf_graph_def(m, "fuzz.pb", o);
        (void)gpass::print_text(g);
        ++imported;
      } catch (const gpass::error&) {
        ++rejected;
      }
      // the text form too: truncations and flips
      std::string t = text;
      if (round % 2 == 0) t.resize(rng() % t.size());
      else t[rng() % t.size()] = static_cast<char>(rng() % 128);
      try {
        (void)gpass::parse_tf_graph_def_text(t, "fuzz.pbtxt", o);
        ++imported;
      } catch (const gpass::error&) {
        ++rejected;
      }
    }
  }
  MESSAGE("fuzz: " << imported << " imported, " << rejected << " rejected");
  CHECK(imported + rejected == static_cast<int>(dirs.size()) * 120);
  CHECK(rejected > 0);
}

}  // namespace gpass_test_tf_import
