// SPDX-License-Identifier: Apache-2.0
// ONNX import: hand-built models covering the mapping rules, captures and errors.

#include <complex>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <onnx/checker.h>

#include <gpass/io/onnx.hpp>

#include "onnx_test_support.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_onnx_import {

using namespace onnx_test;
using gpass::dim;
using gpass::dtype;

namespace {

using strings = std::vector<std::string>;

/// Name of the producer of input `k` of node `node` ("" when empty), with ":port" when not 0.
std::string input_name(const gpass::graph<>& g, const std::string& node, int k) {
  auto in = g.input(g.at(node), k);
  if (in.empty) return "";
  std::string s = g[in.node].name;
  if (in.port != 0) s += ":" + std::to_string(in.port);
  return s;
}

std::string error_of(const onnx::ModelProto& m, const gpass::onnx_import_options& o = {}) {
  try {
    (void)gpass::import_onnx(m, o);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

/// import -> export -> check_model -> import gives the same graph; returns the export.
onnx::ModelProto round_trip(const gpass::graph<>& g) {
  onnx::ModelProto m = gpass::export_onnx(g);
  CHECK_NOTHROW(onnx::checker::check_model(m));
  auto g2 = gpass::import_onnx(m);
  CHECK(diff_graphs(g, g2) == "");
  return m;
}

std::filesystem::path temp_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / ("gpass_onnx_test_" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("onnx.import.simple_graph") {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", f32({2, "n"}));
  add_node(g, "Relu", {"x"}, {"y"});
  add_output(g, "y", f32({2, "n"}));

  auto gg = gpass::import_onnx(m);
  REQUIRE(gg.num_nodes() == 3);
  const auto& x = gg[gg.at("x")];
  CHECK(x.op == "arg");
  CHECK(x.attrs.at("index").as<std::int64_t>() == 0);
  CHECK(x.outputs.at(0) == gpass::type(gpass::tensor_type{dtype::f32, gpass::shape{2, dim::symbol("n")}}));
  const auto& y = gg[gg.at("y")];
  CHECK(y.op == "Relu");
  CHECK(y.domain == "");
  CHECK(y.attrs.empty());  // the node name is its value name: nothing to remember
  CHECK(y.outputs.at(0).to_string() == "f32[2,n]");
  CHECK(input_name(gg, "y", 0) == "x");
  const auto& r = gg[gg.at("return")];
  CHECK(r.op == "return");
  CHECK(r.outputs.empty());
  CHECK(r.attrs.at("names").as<strings>() == strings{"y"});
  CHECK(input_name(gg, "return", 0) == "y");
  CHECK(gg.attrs().at("frontend").as<std::string>() == "onnx");
  CHECK(gg.attrs().at("ir_version").as<std::int64_t>() == 8);
  CHECK(gg.attrs().at("opset_import").as<strings>() == strings{":17"});
  CHECK(gg.attrs().at("name").as<std::string>() == "g");
  CHECK(gg.functions().empty());

  auto e = round_trip(gg);
  REQUIRE(e.graph().node_size() == 1);
  CHECK(e.graph().node(0).op_type() == "Relu");
  CHECK(e.graph().node(0).input(0) == "x");
  CHECK(e.graph().node(0).output(0) == "y");
  CHECK(e.graph().input(0).type().tensor_type().shape().dim(1).dim_param() == "n");
  CHECK(e.graph().output(0).name() == "y");
}

TEST_CASE("onnx.import.model_fields") {
  auto m = make_model(13, 7);
  m.set_producer_name("pytorch");
  m.set_producer_version("1.9");
  m.set_domain("org.example");
  m.set_model_version(42);
  m.set_doc_string("a model");
  auto* o = m.add_opset_import();
  o->set_domain("ai.onnx.ml");
  o->set_version(2);
  auto* p = m.add_metadata_props();
  p->set_key("author");
  p->set_value("me=you");
  m.mutable_graph()->set_doc_string("the graph");
  add_input(m.mutable_graph(), "x", f32({1}));
  add_node(m.mutable_graph(), "Identity", {"x"}, {"y"});
  add_output(m.mutable_graph(), "y", f32({1}));

  auto g = gpass::import_onnx(m);
  const auto& a = g.attrs();
  CHECK(a.at("ir_version").as<std::int64_t>() == 7);
  CHECK(a.at("opset_import").as<strings>() == strings{":13", "ai.onnx.ml:2"});
  CHECK(a.at("producer_name").as<std::string>() == "pytorch");
  CHECK(a.at("producer_version").as<std::string>() == "1.9");
  CHECK(a.at("domain").as<std::string>() == "org.example");
  CHECK(a.at("model_version").as<std::int64_t>() == 42);
  CHECK(a.at("doc_string").as<std::string>() == "a model");
  CHECK(a.at("metadata_keys").as<strings>() == strings{"author"});
  CHECK(a.at("metadata_values").as<strings>() == strings{"me=you"});
  CHECK(a.at("graph_doc_string").as<std::string>() == "the graph");

  auto e = round_trip(g);
  CHECK(e.ir_version() == 7);
  CHECK(e.producer_name() == "pytorch");
  CHECK(e.model_version() == 42);
  CHECK(e.opset_import_size() == 2);
  CHECK(e.opset_import(1).domain() == "ai.onnx.ml");
  CHECK(e.metadata_props(0).value() == "me=you");
  CHECK(e.graph().doc_string() == "the graph");
}

TEST_CASE("onnx.import.initializers") {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", f32({2}));
  add_input(g, "b", f32({2}));  // an input with a default value
  *g->add_initializer() = float_tensor("w", {2}, {1.5f, -2.0f});
  *g->add_initializer() = float_tensor("b", {2}, {0.25f, 0.5f});
  add_node(g, "Mul", {"x", "w"}, {"xw"});
  add_node(g, "Add", {"xw", "b"}, {"y"});
  add_output(g, "y", f32({2}));

  SUBCASE("as constants") {
    auto gg = gpass::import_onnx(m);
    const auto& w = gg[gg.at("w")];
    CHECK(w.op == "Constant");
    CHECK(w.domain == "");
    CHECK(w.outputs.at(0).to_string() == "f32[2]");
    CHECK(w.attrs.size() == 1);
    auto wv = w.attrs.at("value").as<gpass::tensor>();
    CHECK(wv.values<float>()[1] == -2.0f);
    const auto& b = gg[gg.at("b")];
    CHECK(b.op == "arg");
    CHECK(b.attrs.at("index").as<std::int64_t>() == 1);
    CHECK(b.attrs.at("default").as<gpass::tensor>().values<float>()[0] == 0.25f);
    auto e = round_trip(gg);
    CHECK(e.graph().input_size() == 2);
    CHECK(e.graph().initializer_size() == 2);
    CHECK(e.graph().node_size() == 2);  // w is an initializer again, not a Constant node
  }
  SUBCASE("as graph inputs") {
    gpass::onnx_import_options o;
    o.initializers_as_constants = false;
    auto gg = gpass::import_onnx(m, o);
    const auto& w = gg[gg.at("w")];
    CHECK(w.op == "arg");
    CHECK(w.attrs.at("index").as<std::int64_t>() == 2);  // after the declared inputs
    CHECK(w.attrs.at("default").as<gpass::tensor>().values<float>()[0] == 1.5f);
    auto e = round_trip(gg);
    CHECK(e.graph().input_size() == 3);
    CHECK(e.graph().input(2).name() == "w");
  }
}

TEST_CASE("onnx.import.bool_raw_bytes_are_0_or_1") {
  // raw_data bytes of a bool tensor other than 0 and 1 (found by the run fuzz target: Where read
  // a bool of value 10) read as true, stored as 1
  onnx::TensorProto t;
  t.set_name("c");
  t.set_data_type(onnx::TensorProto::BOOL);
  t.add_dims(3);
  t.set_raw_data(std::string("\x0a\x00\xff", 3));
  const gpass::tensor v = gpass::detail::onnx_io::tensor_from_onnx(t);
  const auto* b = reinterpret_cast<const unsigned char*>(v.raw());
  CHECK(b[0] == 1);
  CHECK(b[1] == 0);
  CHECK(b[2] == 1);
}

TEST_CASE("onnx.import.constant_nodes_stay_nodes") {
  auto m = make_model();
  auto* g = m.mutable_graph();
  auto* c = add_node(g, "Constant", {}, {"k"});
  *add_attr(c, "value", onnx::AttributeProto::TENSOR)->mutable_t() = float_tensor("", {1}, {3.0f});
  add_output(g, "k", f32({1}));
  auto gg = gpass::import_onnx(m);
  CHECK(gg[gg.at("k")].attrs.at("_onnx_node").as<bool>() == true);
  auto e = round_trip(gg);
  CHECK(e.graph().node_size() == 1);
  CHECK(e.graph().initializer_size() == 0);
}

TEST_CASE("onnx.import.node_names") {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", f32({4}));
  add_node(g, "Relu", {"x"}, {"t0"}, "conv1");     // unique ONNX name: kept
  add_node(g, "Relu", {"t0"}, {"a"});              // unnamed: its output name
  add_node(g, "Relu", {"a"}, {"b"}, "dup");        // duplicated ONNX names
  add_node(g, "Relu", {"b"}, {"c"}, "dup");
  add_node(g, "Relu", {"c"}, {"d"}, "x");          // ONNX name of another value
  add_node(g, "Relu", {"d"}, {"conv1"});           // output named like a node
  auto* drop = add_node(g, "Dropout", {"conv1", "", ""}, {"e", ""});  // omitted input and output
  (void)drop;
  add_output(g, "e", f32({4}));

  auto gg = gpass::import_onnx(m);
  CHECK(gg[gg.at("conv1")].attrs.at("_onnx_outputs").as<strings>() == strings{"t0"});
  CHECK(gg.find("a"));
  CHECK_FALSE(gg[gg.at("a")].attrs.contains("_onnx_outputs"));
  CHECK(gg[gg.at("dup")].attrs.at("_onnx_outputs").as<strings>() == strings{"b"});
  CHECK(gg.find("c"));  // the second "dup" is named after its output
  CHECK_FALSE(gg[gg.at("c")].attrs.contains("_onnx_outputs"));
  CHECK(gg.find("d"));  // "x" is the input
  CHECK(gg.find("conv1_1"));  // "conv1" is taken by the first node
  CHECK(gg[gg.at("conv1_1")].attrs.at("_onnx_outputs").as<strings>() == strings{"conv1"});
  const auto& e = gg[gg.at("e")];
  CHECK(e.outputs.size() == 2);
  CHECK(e.attrs.at("_onnx_outputs").as<strings>() == strings{"e", ""});
  CHECK(gg.num_inputs(gg.at("e")) == 3);
  CHECK(input_name(gg, "e", 0) == "conv1_1");
  CHECK(input_name(gg, "e", 1) == "");
  CHECK(input_name(gg, "e", 2) == "");
  CHECK(input_name(gg, "d", 0) == "c");

  auto ex = round_trip(gg);
  // value names are those of the original model
  strings outs;
  for (const auto& n : ex.graph().node())
    for (const auto& o : n.output()) outs.push_back(o);
  CHECK(outs == strings{"t0", "a", "b", "c", "d", "conv1", "e", ""});
  CHECK(ex.graph().node(6).input_size() == 3);
  CHECK(ex.graph().node(6).input(1) == "");
}

TEST_CASE("onnx.import.attributes") {
  using A = onnx::AttributeProto;
  auto m = make_model();
  auto* o = m.add_opset_import();
  o->set_domain("test");
  o->set_version(1);
  auto* g = m.mutable_graph();
  add_input(g, "x", f32({1}));
  auto* n = add_node(g, "Custom", {"x"}, {"y"});
  n->set_domain("test");
  n->set_doc_string("custom op");
  add_attr(n, "i", A::INT)->set_i(-7);
  add_attr(n, "f", A::FLOAT)->set_f(0.1f);
  add_attr(n, "s", A::STRING)->set_s(std::string("a\0\xff", 3));
  *add_attr(n, "t", A::TENSOR)->mutable_t() = float_tensor("named", {2}, {1, 2});
  auto* ints = add_attr(n, "ints", A::INTS);
  ints->add_ints(1);
  ints->add_ints(-2);
  auto* floats = add_attr(n, "floats", A::FLOATS);
  floats->add_floats(0.5f);
  auto* ss = add_attr(n, "strings", A::STRINGS);
  ss->add_strings("p");
  ss->add_strings("");
  auto* ts = add_attr(n, "tensors", A::TENSORS);
  *ts->add_tensors() = float_tensor("", {1}, {4});
  add_attr(n, "empty_ints", A::INTS);
  auto* tp = add_attr(n, "tp", A::TYPE_PROTO)->mutable_tp();
  tp->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  auto* tps = add_attr(n, "tps", A::TYPE_PROTOS);
  *tps->add_type_protos() = f32({3});
  auto* untyped = n->add_attribute();  // IR v1 style: no type, the field says it
  untyped->set_name("old");
  untyped->set_i(5);
  add_output(g, "y", f32({1}));

  auto gg = gpass::import_onnx(m);
  const auto& y = gg[gg.at("y")];
  CHECK(y.domain == "test");
  CHECK(y.attrs.at("i").as<std::int64_t>() == -7);
  CHECK(static_cast<float>(y.attrs.at("f").as<double>()) == 0.1f);
  CHECK(y.attrs.at("s").as<std::string>() == std::string("a\0\xff", 3));
  CHECK(y.attrs.at("t").as<gpass::tensor>().values<float>()[1] == 2.0f);
  CHECK(y.attrs.at("ints").as<std::vector<std::int64_t>>() == std::vector<std::int64_t>{1, -2});
  CHECK(y.attrs.at("floats").as<std::vector<double>>() == std::vector<double>{0.5});
  CHECK(y.attrs.at("strings").as<strings>() == strings{"p", ""});
  CHECK(y.attrs.at("tensors").as<std::vector<gpass::tensor>>().size() == 1);
  CHECK(y.attrs.at("empty_ints").as<std::vector<std::int64_t>>().empty());
  CHECK(y.attrs.at("tp").as<gpass::type>().to_string() == "list<i64[*], ?>");
  CHECK(y.attrs.at("tps").as<std::vector<gpass::type>>().at(0).to_string() == "f32[3]");
  CHECK(y.attrs.at("old").as<std::int64_t>() == 5);
  CHECK(y.attrs.at("_onnx_doc").as<std::string>() == "custom op");

  auto e = round_trip(gg);
  const auto& en = e.graph().node(0);
  CHECK(en.doc_string() == "custom op");
  CHECK(en.domain() == "test");
  for (const auto& a : en.attribute()) {
    if (a.name() == "f") {
      CHECK(a.type() == A::FLOAT);
      CHECK(a.f() == 0.1f);
    }
    if (a.name() == "s") CHECK(a.s() == std::string("a\0\xff", 3));
    if (a.name() == "empty_ints") CHECK(a.type() == A::INTS);
    if (a.name() == "old") CHECK(a.type() == A::INT);
    if (a.name() == "tp") CHECK(a.tp().sequence_type().elem_type().tensor_type().elem_type() == onnx::TensorProto::INT64);
  }
}

TEST_CASE("onnx.import.tensors") {
  using gpass::detail::onnx_io::tensor_from_onnx;
  using gpass::detail::onnx_io::tensor_to_onnx;
  using T = onnx::TensorProto;
  auto make = [](int type, std::vector<std::int64_t> dims) {
    T t;
    t.set_name("t");
    t.set_data_type(type);
    for (auto d : dims) t.add_dims(d);
    return t;
  };
  auto back_and_forth = [](const gpass::tensor& x) {
    T t;
    tensor_to_onnx(x, t);
    if (x.element_type() != dtype::string) CHECK(t.has_raw_data());
    CHECK(tensor_from_onnx(t) == x);
  };
  SUBCASE("typed fields") {
    auto f = make(T::FLOAT, {2, 2});
    for (float v : {1.f, 2.f, 3.f, 4.f}) f.add_float_data(v);
    auto tf = tensor_from_onnx(f);
    CHECK(tf.element_type() == dtype::f32);
    CHECK(tf.sizes() == std::vector<std::int64_t>{2, 2});
    CHECK(tf.values<float>()[3] == 4.f);
    back_and_forth(tf);

    auto h = make(T::FLOAT16, {2});
    h.add_int32_data(0x3C00);  // 1.0
    h.add_int32_data(0xC000);  // -2.0
    auto th = tensor_from_onnx(h);
    CHECK(th.element_type() == dtype::f16);
    CHECK(static_cast<float>(th.values<Eigen::half>()[1]) == -2.0f);
    back_and_forth(th);

    auto bf = make(T::BFLOAT16, {1});
    bf.add_int32_data(0x3F80);  // 1.0
    CHECK(static_cast<float>(tensor_from_onnx(bf).values<Eigen::bfloat16>()[0]) == 1.0f);

    auto b = make(T::BOOL, {3});
    for (int v : {1, 0, 1}) b.add_int32_data(v);
    auto tb = tensor_from_onnx(b);
    CHECK(tb.values<bool>()[0]);
    CHECK_FALSE(tb.values<bool>()[1]);
    back_and_forth(tb);

    auto i8 = make(T::INT8, {2});
    i8.add_int32_data(-128);
    i8.add_int32_data(127);
    CHECK(tensor_from_onnx(i8).values<std::int8_t>()[0] == -128);

    auto u16 = make(T::UINT16, {1});
    u16.add_int32_data(65535);
    CHECK(tensor_from_onnx(u16).values<std::uint16_t>()[0] == 65535);

    auto i64 = make(T::INT64, {1});
    i64.add_int64_data(-(std::int64_t{1} << 40));
    CHECK(tensor_from_onnx(i64).values<std::int64_t>()[0] == -(std::int64_t{1} << 40));

    auto u32 = make(T::UINT32, {1});
    u32.add_uint64_data(4000000000u);
    CHECK(tensor_from_onnx(u32).values<std::uint32_t>()[0] == 4000000000u);

    auto u64 = make(T::UINT64, {1});
    u64.add_uint64_data(~std::uint64_t{0});
    CHECK(tensor_from_onnx(u64).values<std::uint64_t>()[0] == ~std::uint64_t{0});

    auto d = make(T::DOUBLE, {1});
    d.add_double_data(0.1);
    CHECK(tensor_from_onnx(d).values<double>()[0] == 0.1);

    auto c = make(T::COMPLEX64, {2});
    for (float v : {1.f, 2.f, 3.f, 4.f}) c.add_float_data(v);
    auto tc = tensor_from_onnx(c);
    CHECK(tc.values<std::complex<float>>()[1] == std::complex<float>(3, 4));
    back_and_forth(tc);

    auto cd = make(T::COMPLEX128, {1});
    cd.add_double_data(5);
    cd.add_double_data(-6);
    CHECK(tensor_from_onnx(cd).values<std::complex<double>>()[0] == std::complex<double>(5, -6));

    auto s = make(T::STRING, {2});
    s.add_string_data("hello");
    s.add_string_data(std::string("\0\x01", 2));
    auto ts = tensor_from_onnx(s);
    CHECK(ts.values<std::string>()[1] == std::string("\0\x01", 2));
    back_and_forth(ts);

    auto scalar = make(T::INT32, {});
    scalar.add_int32_data(9);
    CHECK(tensor_from_onnx(scalar).rank() == 0);
    CHECK(tensor_from_onnx(make(T::FLOAT, {0, 3})).size() == 0);  // empty tensor, no data
  }
  SUBCASE("raw data is little-endian") {
    auto t = make(T::INT32, {2});
    const unsigned char bytes[] = {1, 0, 0, 0, 0, 1, 0, 0};
    t.set_raw_data(std::string(reinterpret_cast<const char*>(bytes), sizeof bytes));
    auto x = tensor_from_onnx(t);
    CHECK(x.values<std::int32_t>()[0] == 1);
    CHECK(x.values<std::int32_t>()[1] == 256);
    T out;
    tensor_to_onnx(x, out);
    CHECK(out.raw_data() == t.raw_data());
  }
  SUBCASE("errors") {
    auto t = make(T::FLOAT, {3});
    t.set_raw_data(std::string(8, '\0'));
    CHECK_THROWS_WITH_AS(tensor_from_onnx(t), doctest::Contains("tensor 't': raw_data has 8 bytes"), gpass::error);
    auto few = make(T::FLOAT, {3});
    few.add_float_data(1);
    CHECK_THROWS_WITH_AS(tensor_from_onnx(few), doctest::Contains("float_data has 1 entries"), gpass::error);
    auto wrong = make(T::INT64, {1});
    wrong.add_float_data(1);
    CHECK_THROWS_WITH_AS(tensor_from_onnx(wrong), doctest::Contains("float_data given"), gpass::error);
    auto neg = make(T::FLOAT, {-1});
    CHECK_THROWS_WITH_AS(tensor_from_onnx(neg), doctest::Contains("negative dimension"), gpass::error);
    auto range = make(T::UINT8, {1});
    range.add_int32_data(300);
    CHECK_THROWS_WITH_AS(tensor_from_onnx(range), doctest::Contains("out of range"), gpass::error);
    auto undef = make(T::UNDEFINED, {1});
    CHECK_THROWS_WITH_AS(tensor_from_onnx(undef), doctest::Contains("UNDEFINED"), gpass::error);
    auto missing = make(T::FLOAT, {1 << 20, 1 << 20});  // no data for a huge tensor: no allocation
    CHECK_THROWS_AS(tensor_from_onnx(missing), gpass::error);
    auto huge = make(T::FLOAT, {std::int64_t{1} << 40, std::int64_t{1} << 40});
    CHECK_THROWS_WITH_AS(tensor_from_onnx(huge), doctest::Contains("too many elements"), gpass::error);
  }
  SUBCASE("in a model, errors name the initializer") {
    auto m = make_model();
    auto* w = m.mutable_graph()->add_initializer();
    *w = float_tensor("weights", {4}, {1, 2});
    add_output(m.mutable_graph(), "weights", f32({4}));
    CHECK(error_of(m).find("node 'weights' (op Constant): tensor 'weights': float_data has 2 entries") !=
          std::string::npos);
  }
}

TEST_CASE("onnx.import.sparse") {
  auto m = make_model();
  auto* g = m.mutable_graph();
  auto* s = g->add_sparse_initializer();
  s->add_dims(2);
  s->add_dims(3);
  *s->mutable_values() = float_tensor("sp", {2}, {7, 8});
  auto* idx = s->mutable_indices();
  idx->set_data_type(onnx::TensorProto::INT64);
  idx->add_dims(2);
  idx->add_int64_data(1);
  idx->add_int64_data(5);
  auto* c = add_node(g, "Constant", {}, {"k"});
  auto* sv = add_attr(c, "sparse_value", onnx::AttributeProto::SPARSE_TENSOR)->mutable_sparse_tensor();
  *sv = *s;
  add_node(g, "Add", {"sp", "k"}, {"y"});
  add_output(g, "y", f32({2, 3}));
  auto gg = gpass::import_onnx(m);
  auto dense = gg[gg.at("sp")].attrs.at("value").as<gpass::tensor>();
  CHECK(dense.sizes() == std::vector<std::int64_t>{2, 3});
  CHECK(std::vector<float>(dense.values<float>().begin(), dense.values<float>().end()) ==
        std::vector<float>{0, 7, 0, 0, 0, 8});
  CHECK(gg[gg.at("k")].attrs.at("value").as<gpass::tensor>() == dense);
  round_trip(gg);

  // other sparse attributes are refused
  auto m2 = make_model();
  auto* n = add_node(m2.mutable_graph(), "Foo", {}, {"z"});
  *add_attr(n, "sp", onnx::AttributeProto::SPARSE_TENSOR)->mutable_sparse_tensor() = *s;
  add_output(m2.mutable_graph(), "z");
  CHECK(error_of(m2).find("node 'z' (op Foo): attribute 'sp': sparse tensor attributes are not supported") !=
        std::string::npos);
}

TEST_CASE("onnx.import.types") {
  auto m = make_model();
  auto* g = m.mutable_graph();
  onnx::TypeProto unranked;
  unranked.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  add_input(g, "x", f32({"batch", "?", 3}));
  add_input(g, "u", tensor_type(onnx::TensorProto::INT64, {}));
  onnx::TypeProto seq;
  *seq.mutable_sequence_type()->mutable_elem_type() = f32({"?"});
  add_input(g, "s", seq);
  onnx::TypeProto opt;
  *opt.mutable_optional_type()->mutable_elem_type() = f32({2});
  add_input(g, "o", opt);
  onnx::TypeProto denoted = f32({4});
  denoted.mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_denotation("DATA_BATCH");
  add_input(g, "d", denoted);
  add_node(g, "Relu", {"x"}, {"r"});
  add_node(g, "Relu", {"r"}, {"r2"});
  add_node(g, "Relu", {"r"}, {"q"});
  add_value(g->mutable_value_info(), "r", f32({"batch", 5, 3}));
  add_value(g->mutable_value_info(), "q", unranked);
  add_value(g->mutable_value_info(), "nothing", f32({1}));  // names no value: dropped
  add_output(g, "r2", f32({"batch", "?", 3}));
  add_output(g, "o", opt);
  add_output(g, "u", f32({7}));  // declared differently from the input it passes through

  auto gg = gpass::import_onnx(m);
  CHECK(gg[gg.at("x")].outputs[0].to_string() == "f32[batch,?,3]");
  CHECK(gg[gg.at("u")].outputs[0].to_string() == "i64[]");
  CHECK(gg[gg.at("q")].outputs[0].to_string() == "f32[*]");
  CHECK(gg[gg.at("s")].outputs[0].to_string() == "list<f32[?], ?>");
  CHECK(gg[gg.at("o")].outputs[0].is_unknown());
  CHECK(gg[gg.at("o")].attrs.at("_onnx_types").as<strings>().at(0).find("optional_type") == 0);
  CHECK(gg[gg.at("d")].outputs[0].to_string() == "f32[4]");
  CHECK(gg[gg.at("d")].attrs.at("_onnx_types").as<strings>().at(0).find("DATA_BATCH") != std::string::npos);
  CHECK_FALSE(gg[gg.at("x")].attrs.contains("_onnx_types"));
  CHECK(gg[gg.at("r")].outputs[0].to_string() == "f32[batch,5,3]");
  CHECK(gg[gg.at("r2")].outputs[0].to_string() == "f32[batch,?,3]");
  const auto& ret = gg[gg.at("return")];
  CHECK(ret.attrs.at("_onnx_types").as<strings>().at(0) == "");
  CHECK(ret.attrs.at("_onnx_types").as<strings>().at(2).find("dim_value: 7") != std::string::npos);

  auto e = round_trip(gg);
  // the exact ONNX types come back
  CHECK(gpass::detail::onnx_io::same_proto(e.graph().input(3).type(), opt));
  CHECK(gpass::detail::onnx_io::same_proto(e.graph().input(4).type(), denoted));
  CHECK(gpass::detail::onnx_io::same_proto(e.graph().output(1).type(), opt));
  CHECK(gpass::detail::onnx_io::same_proto(e.graph().output(2).type(), f32({7})));
  CHECK(e.graph().value_info_size() == 2);
  CHECK(e.graph().value_info(0).name() == "r");
  CHECK_FALSE(e.graph().value_info(1).type().tensor_type().has_shape());

  // a type gpass refines later wins over the kept text
  gg[gg.at("d")].outputs[0] = gpass::tensor_type{dtype::f32, gpass::shape{8}};
  auto e2 = gpass::export_onnx(gg);
  CHECK(e2.graph().input(4).type().tensor_type().shape().dim(0).dim_value() == 8);
}

TEST_CASE("onnx.import.if_captures") {
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "cond", tensor_type(onnx::TensorProto::BOOL, {}));
  add_input(g, "x", f32({2}));
  *g->add_initializer() = float_tensor("w", {2}, {1, 1});
  auto* n = add_node(g, "If", {"cond"}, {"y"}, "choose");
  auto* then_g = add_graph_attr(n, "then_branch");
  then_g->set_name("then");
  add_node(then_g, "Add", {"x", "w"}, {"t"});
  add_output(then_g, "t", f32({2}));
  auto* else_g = add_graph_attr(n, "else_branch");
  else_g->set_name("else");
  add_node(else_g, "Sub", {"x", "x"}, {"e"});
  add_output(else_g, "e", f32({2}));
  add_output(g, "y", f32({2}));

  auto gg = gpass::import_onnx(m);
  const auto v = gg.at("choose");
  CHECK(gg[v].attrs.at("_onnx_outputs").as<strings>() == strings{"y"});
  CHECK(gg[v].attrs.at("then_branch").as<gpass::function_ref>().name == "choose.then_branch");
  CHECK(gg[v].attrs.at("else_branch").as<gpass::function_ref>().name == "choose.else_branch");
  CHECK(gg[v].attrs.at("_captures").as<std::int64_t>() == 2);
  REQUIRE(gg.num_inputs(v) == 3);
  // attributes are taken by name: else_branch (x) before then_branch (x, w)
  CHECK(input_name(gg, "choose", 1) == "x");
  CHECK(input_name(gg, "choose", 2) == "w");
  const auto* then_f = gg.find_function("choose.then_branch");
  REQUIRE(then_f);
  const auto& entry = (*then_f)[then_f->at("function_entry")];
  CHECK(entry.op == "function_entry");
  CHECK(entry.outputs.size() == 2);  // no formal inputs, two captures
  CHECK(entry.attrs.at("names").as<strings>().empty());
  CHECK(entry.outputs[0].to_string() == "f32[2]");
  CHECK(input_name(*then_f, "t", 0) == "function_entry");
  CHECK(input_name(*then_f, "t", 1) == "function_entry:1");
  CHECK(then_f->attrs().at("name").as<std::string>() == "then");
  const auto* else_f = gg.find_function("choose.else_branch");
  REQUIRE(else_f);
  CHECK((*else_f)[else_f->at("function_entry")].outputs.size() == 2);  // all captures of the node
  CHECK(gg.num_nodes() == 5);  // cond, x, w, choose, return

  auto e = round_trip(gg);
  const auto& en = e.graph().node(0);
  CHECK(en.input_size() == 1);  // captures are implicit again
  for (const auto& a : en.attribute()) {
    CHECK(a.g().input_size() == 0);
    if (a.name() == "then_branch") {
      CHECK(a.g().node(0).input(0) == "x");
      CHECK(a.g().node(0).input(1) == "w");
    }
  }
}

TEST_CASE("onnx.import.nested_captures") {
  // Loop body (iter, cond, v) -> (cond, v2); inside it an If whose then_branch uses "outer"
  // from the main graph (two levels up) and "v" from the body (one level up).
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "trip", tensor_type(onnx::TensorProto::INT64, {}));
  add_input(g, "c0", tensor_type(onnx::TensorProto::BOOL, {}));
  add_input(g, "v0", f32({3}));
  add_input(g, "outer", f32({3}));
  auto* loop = add_node(g, "Loop", {"trip", "c0", "v0"}, {"vN"});
  auto* body = add_graph_attr(loop, "body");
  body->set_name("body");
  add_input(body, "i", tensor_type(onnx::TensorProto::INT64, {}));
  add_input(body, "c", tensor_type(onnx::TensorProto::BOOL, {}));
  add_input(body, "v", f32({3}));
  add_node(body, "Identity", {"c"}, {"c_out"});
  auto* iff = add_node(body, "If", {"c"}, {"v2"});
  auto* th = add_graph_attr(iff, "then_branch");
  th->set_name("then");
  add_node(th, "Add", {"v", "outer"}, {"sum"});
  add_output(th, "sum", f32({3}));
  auto* el = add_graph_attr(iff, "else_branch");
  el->set_name("else");
  add_node(el, "Identity", {"v"}, {"same"});
  add_output(el, "same", f32({3}));
  add_output(body, "c_out", tensor_type(onnx::TensorProto::BOOL, {}));
  add_output(body, "v2", f32({3}));
  add_output(g, "vN", f32({3}));
  REQUIRE_NOTHROW(onnx::checker::check_model(m));

  auto gg = gpass::import_onnx(m);
  // the Loop captures "outer" for its body
  const auto lv = gg.at("vN");
  CHECK(gg[lv].attrs.at("_captures").as<std::int64_t>() == 1);
  REQUIRE(gg.num_inputs(lv) == 4);
  CHECK(input_name(gg, "vN", 3) == "outer");
  const auto* bf = gg.find_function("vN.body");
  REQUIRE(bf);
  const auto& be = (*bf)[bf->at("function_entry")];
  CHECK(be.attrs.at("names").as<strings>() == strings{"i", "c", "v"});
  CHECK(be.outputs.size() == 4);  // i, c, v + outer
  CHECK(be.outputs[3].to_string() == "f32[3]");
  // the If in the body captures v (a formal of the body) and outer (the body's capture)
  const auto iv = bf->at("v2");
  CHECK((*bf)[iv].attrs.at("_captures").as<std::int64_t>() == 2);
  REQUIRE(bf->num_inputs(iv) == 3);
  CHECK(input_name(*bf, "v2", 1) == "function_entry:2");
  CHECK(input_name(*bf, "v2", 2) == "function_entry:3");
  const auto* tf = gg.find_function("v2.then_branch");
  REQUIRE(tf);
  CHECK(input_name(*tf, "sum", 0) == "function_entry");
  CHECK(input_name(*tf, "sum", 1) == "function_entry:1");
  CHECK(gg.functions().size() == 3);

  auto e = round_trip(gg);
  const auto& eb = e.graph().node(0).attribute(0).g();
  CHECK(e.graph().node(0).input_size() == 3);
  CHECK(eb.input_size() == 3);
  const onnx::NodeProto* inner_if = nullptr;
  for (const auto& n : eb.node())
    if (n.op_type() == "If") inner_if = &n;
  REQUIRE(inner_if);
  CHECK(inner_if->input_size() == 1);
  for (const auto& a : inner_if->attribute())
    if (a.name() == "then_branch") {
      CHECK(a.g().node(0).input(0) == "v");
      CHECK(a.g().node(0).input(1) == "outer");
    }
}

TEST_CASE("onnx.import.subgraph_output_is_outer_value") {
  // a branch that returns an enclosing value directly
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "cond", tensor_type(onnx::TensorProto::BOOL, {}));
  add_input(g, "x", f32({2}));
  auto* n = add_node(g, "If", {"cond"}, {"y"});
  auto* th = add_graph_attr(n, "then_branch");
  th->set_name("then");
  add_output(th, "x", f32({2}));
  auto* el = add_graph_attr(n, "else_branch");
  el->set_name("else");
  add_node(el, "Neg", {"x"}, {"nx"});
  add_output(el, "nx", f32({2}));
  add_output(g, "y", f32({2}));
  auto gg = gpass::import_onnx(m);
  const auto* tf = gg.find_function("y.then_branch");
  REQUIRE(tf);
  CHECK(input_name(*tf, "return", 0) == "function_entry");
  auto e = round_trip(gg);
  for (const auto& a : e.graph().node(0).attribute())
    if (a.name() == "then_branch") CHECK(a.g().output(0).name() == "x");
}

TEST_CASE("onnx.import.errors") {
  SUBCASE("missing producer") {
    auto m = make_model();
    add_node(m.mutable_graph(), "Relu", {"nope"}, {"y"});
    add_output(m.mutable_graph(), "y");
    CHECK(error_of(m) == "gpass: node 'y' (op Relu): input 0 ('nope') has no producer");
  }
  SUBCASE("duplicate value") {
    auto m = make_model();
    add_input(m.mutable_graph(), "x", f32({1}));
    add_node(m.mutable_graph(), "Relu", {"x"}, {"y"});
    add_node(m.mutable_graph(), "Neg", {"x"}, {"y"}, "second");
    add_output(m.mutable_graph(), "y");
    CHECK(error_of(m) == "gpass: node 'second' (op Neg): value 'y' is defined twice (node output); ONNX graphs are "
                         "in SSA form");
  }
  SUBCASE("input listed twice") {
    auto m = make_model();
    add_input(m.mutable_graph(), "x", f32({1}));
    add_input(m.mutable_graph(), "x", f32({1}));
    CHECK(error_of(m).find("graph input 'x' is listed twice") != std::string::npos);
  }
  SUBCASE("graph output without producer") {
    auto m = make_model();
    add_output(m.mutable_graph(), "ghost", f32({1}));
    CHECK(error_of(m).find("graph output 'ghost' has no producer") != std::string::npos);
  }
  SUBCASE("reserved op and attribute names") {
    auto m = make_model();
    add_node(m.mutable_graph(), "return", {}, {"y"});
    CHECK(error_of(m).find("op 'return' in the default domain is reserved") != std::string::npos);
    auto m2 = make_model();
    add_attr(add_node(m2.mutable_graph(), "Foo", {}, {"y"}), "_captures", onnx::AttributeProto::INT)->set_i(1);
    CHECK(error_of(m2).find("node 'y' (op Foo): attribute name '_captures' is reserved") != std::string::npos);
  }
  SUBCASE("attribute without value") {
    auto m = make_model();
    auto* a = add_node(m.mutable_graph(), "Foo", {}, {"y"})->add_attribute();
    a->set_name("empty");
    CHECK(error_of(m).find("node 'y' (op Foo): attribute 'empty': no value") != std::string::npos);
  }
  SUBCASE("cycle") {
    auto m = make_model();
    add_node(m.mutable_graph(), "Relu", {"b"}, {"a"});
    add_node(m.mutable_graph(), "Relu", {"a"}, {"b"});
    add_output(m.mutable_graph(), "b");
    CHECK(error_of(m).find("cycle: ") != std::string::npos);
  }
  SUBCASE("capture without producer names the node") {
    auto m = make_model();
    add_input(m.mutable_graph(), "cond", tensor_type(onnx::TensorProto::BOOL, {}));
    auto* n = add_node(m.mutable_graph(), "If", {"cond"}, {"y"}, "branch");
    auto* th = add_graph_attr(n, "then_branch");
    add_node(th, "Neg", {"missing"}, {"t"});
    add_output(th, "t");
    *add_graph_attr(n, "else_branch") = *th;
    add_output(m.mutable_graph(), "y");
    CHECK(error_of(m).find("node 'branch' (op If): value 'missing' used in subgraph attribute") != std::string::npos);
  }
  SUBCASE("errors inside a subgraph name the function") {
    auto m = make_model();
    add_input(m.mutable_graph(), "cond", tensor_type(onnx::TensorProto::BOOL, {}));
    auto* n = add_node(m.mutable_graph(), "If", {"cond"}, {"y"});
    auto* th = add_graph_attr(n, "then_branch");
    add_node(th, "Neg", {"cond"}, {"t"});
    add_node(th, "Neg", {"cond"}, {"t"}, "again");
    add_output(th, "t");
    add_output(m.mutable_graph(), "y");
    CHECK(error_of(m) == "gpass: node 'again' (op Neg): in function 'y.then_branch': value 't' is defined twice (node "
                         "output); ONNX graphs are in SSA form");
    // an error that is not about a node names the node holding the subgraph
    th->mutable_node()->RemoveLast();
    th->mutable_output(0)->set_name("");
    CHECK(error_of(m) == "gpass: node 'y' (op If): in function 'y.then_branch': graph output 0 has no name");
    // an output of a subgraph that nothing defines is a capture without producer
    th->mutable_output(0)->set_name("ghost");
    CHECK(error_of(m) == "gpass: node 'y' (op If): value 'ghost' used in subgraph attribute 'then_branch' has no "
                         "producer");
  }
  SUBCASE("subgraph nesting limit") {
    auto m = make_model();
    auto* g = m.mutable_graph();
    add_input(g, "c", tensor_type(onnx::TensorProto::BOOL, {}));
    for (int i = 0; i < 4; ++i) {
      auto* n = add_node(g, "If", {"c"}, {"y" + std::to_string(i)});
      add_output(g, "y" + std::to_string(i));
      g = add_graph_attr(n, "then_branch");
    }
    add_node(g, "Identity", {"c"}, {"leaf"});
    add_output(g, "leaf");
    gpass::onnx_import_options o;
    o.max_subgraph_depth = 2;
    CHECK(error_of(m, o).find("nested deeper than 2 levels") != std::string::npos);
    o.max_subgraph_depth = 4;
    CHECK(error_of(m, o) == "no error");
  }
  SUBCASE("unsupported model parts") {
    auto m = make_model();
    m.add_functions();  // (model-local functions are supported: tests/onnx/functions.cpp)
    CHECK(error_of(m).find("a model-local function has no name") != std::string::npos);
    auto m2 = make_model();
    m2.add_training_info();
    CHECK(error_of(m2).find("training_info is not supported") != std::string::npos);
  }
  SUBCASE("external data needs a folder") {
    auto m = make_model();
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name("big");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(2);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value("weights.bin");
    add_output(m.mutable_graph(), "big");
    CHECK(error_of(m).find("node 'big' (op Constant): tensor 'big': external data ('weights.bin') needs a folder") !=
          std::string::npos);
  }
  SUBCASE("the checker option") {
    auto m = make_model();
    add_input(m.mutable_graph(), "x", f32({1}));
    add_node(m.mutable_graph(), "NoSuchOp", {"x"}, {"y"});
    add_output(m.mutable_graph(), "y", f32({1}));
    CHECK(error_of(m) == "no error");
    gpass::onnx_import_options o;
    o.check_model = true;
    CHECK(error_of(m, o).find("ONNX checker: ") != std::string::npos);
  }
}

TEST_CASE("onnx.import.infer_shapes_option") {
  auto m = make_model();
  add_input(m.mutable_graph(), "x", f32({2, 3}));
  add_node(m.mutable_graph(), "Relu", {"x"}, {"a"});
  add_node(m.mutable_graph(), "Transpose", {"a"}, {"y"});
  add_output(m.mutable_graph(), "y");
  CHECK(gpass::import_onnx(m)[gpass::import_onnx(m).at("a")].outputs[0].is_unknown());
  gpass::onnx_import_options o;
  o.infer_shapes = true;
  auto g = gpass::import_onnx(m, o);
  CHECK(g[g.at("a")].outputs[0].to_string() == "f32[2,3]");
  CHECK(g[g.at("y")].outputs[0].to_string() == "f32[3,2]");
}

TEST_CASE("onnx.import.files") {
  const auto dir = temp_dir("files");
  SUBCASE("unreadable and malformed files name the file") {
    auto missing = dir / "missing.onnx";
    CHECK_THROWS_WITH_AS(gpass::read_onnx_file(missing), doctest::Contains((missing.string() + ": cannot open").c_str()),
                         gpass::error);
    auto garbage = dir / "garbage.onnx";
    std::ofstream(garbage, std::ios::binary) << "\xff\xff\xff\xff not protobuf";
    CHECK_THROWS_WITH_AS(gpass::read_onnx_file(garbage), doctest::Contains((garbage.string() + ": not an ONNX model").c_str()),
                         gpass::error);
    auto bad = dir / "bad.onnx";
    auto m = make_model();
    add_node(m.mutable_graph(), "Relu", {"nope"}, {"y"});
    {
      std::ofstream out(bad, std::ios::binary);
      m.SerializeToOstream(&out);
    }
    try {
      (void)gpass::read_onnx_file(bad);
      FAIL("no error");
    } catch (const gpass::error& e) {
      CHECK(e.context().file == bad.string());
      CHECK(e.context().node == "y");
      CHECK(std::string(e.what()) == "gpass: " + bad.string() + ": node 'y' (op Relu): input 0 ('nope') has no producer");
    }
  }
  SUBCASE("external data next to the model") {
    auto m = make_model();
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(2);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto kv = [&](const char* k, const std::string& v) {
      auto* p = t->add_external_data();
      p->set_key(k);
      p->set_value(v);
    };
    kv("location", "data/w.bin");
    kv("offset", "4");
    kv("length", "8");
    add_output(m.mutable_graph(), "w", f32({2}));
    std::filesystem::create_directories(dir / "data");
    {
      std::ofstream out(dir / "data" / "w.bin", std::ios::binary);
      float v[3] = {9.f, 1.5f, -3.f};
      out.write(reinterpret_cast<const char*>(v), sizeof v);
    }
    auto write = [&](const onnx::ModelProto& mm) {
      std::ofstream out(dir / "ext.onnx", std::ios::binary);
      mm.SerializeToOstream(&out);
    };
    write(m);
    auto g = gpass::read_onnx_file(dir / "ext.onnx");
    auto w = g[g.at("w")].attrs.at("value").as<gpass::tensor>();
    CHECK(w.values<float>()[0] == 1.5f);
    CHECK(w.values<float>()[1] == -3.f);
    round_trip(g);  // exported inline

    t->mutable_external_data(0)->set_value("../w.bin");
    write(m);
    CHECK_THROWS_WITH_AS(gpass::read_onnx_file(dir / "ext.onnx"), doctest::Contains("leaves the model's folder"),
                         gpass::error);
    t->mutable_external_data(0)->set_value("data/w.bin");
    t->mutable_external_data(2)->set_value("12");
    write(m);
    CHECK_THROWS_WITH_AS(gpass::read_onnx_file(dir / "ext.onnx"), doctest::Contains("external data length 12"),
                         gpass::error);
    t->mutable_external_data(2)->set_value("8");
    t->mutable_external_data(1)->set_value("8");
    write(m);
    CHECK_THROWS_WITH_AS(gpass::read_onnx_file(dir / "ext.onnx"), doctest::Contains("is too short"), gpass::error);
  }
  std::filesystem::remove_all(dir);
}

namespace {
struct tagged_node : gpass::node {
  int tag = 0;
};
}  // namespace

TEST_CASE("onnx.import.custom_node_type") {
  auto m = make_model();
  add_input(m.mutable_graph(), "x", f32({2}));
  add_node(m.mutable_graph(), "Relu", {"x"}, {"y"});
  add_output(m.mutable_graph(), "y", f32({2}));
  using TG = gpass::graph<tagged_node>;
  auto g = gpass::import_onnx<TG>(m);
  CHECK(g[g.at("y")].op == "Relu");
  CHECK(g[g.at("y")].tag == 0);
  auto e = gpass::export_onnx(g);
  CHECK_NOTHROW(onnx::checker::check_model(e));
  CHECK(diff_graphs(g, gpass::import_onnx<TG>(e)) == "");
}

TEST_CASE("onnx.import.values_named_like_gpass_nodes") {
  // values called "function_entry" and "return" do not clash with the nodes gpass adds
  auto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "cond", tensor_type(onnx::TensorProto::BOOL, {}));
  auto* n = add_node(g, "If", {"cond"}, {"return"});
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* b = add_graph_attr(n, branch);
    b->set_name(branch);
    *b->add_initializer() = float_tensor("function_entry", {1}, {1});
    add_node(b, "Neg", {"function_entry"}, {"out"});
    add_output(b, "out", f32({1}));
  }
  add_output(g, "return", f32({1}));
  REQUIRE_NOTHROW(onnx::checker::check_model(m));
  auto gg = gpass::import_onnx(m);
  CHECK(gg[gg.at("return")].op == "If");
  CHECK(gg[gg.at("return_1")].op == "return");
  const auto* f = gg.find_function("return.then_branch");
  REQUIRE(f);
  CHECK((*f)[f->at("function_entry")].op == "function_entry");
  const auto& k = (*f)[f->at("function_entry_1")];
  CHECK(k.op == "Constant");
  CHECK(k.attrs.at("_onnx_outputs").as<strings>() == strings{"function_entry"});
  auto e = round_trip(gg);
  CHECK(e.graph().node(0).attribute(0).g().initializer(0).name() == "function_entry");
}

}  // namespace gpass_test_onnx_import
