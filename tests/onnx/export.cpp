// SPDX-License-Identifier: Apache-2.0
// ONNX export: graphs built with the gpass API (not imported), naming, errors, files.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <onnx/checker.h>

#include <gpass/io/onnx.hpp>

#include "onnx_test_support.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_onnx_export {

using gpass::dtype;
using G = gpass::graph<>;
using strings = std::vector<std::string>;

namespace {

gpass::type f32(std::initializer_list<gpass::dim> dims) { return gpass::tensor_type{dtype::f32, gpass::shape(dims)}; }

G::node_id add(G& g, std::string name, std::string op, std::vector<G::node_id> inputs, std::size_t outputs = 1,
               gpass::attribute_map attrs = {}) {
  gpass::node n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.outputs.assign(outputs, gpass::type{});
  n.attrs = std::move(attrs);
  auto v = g.add_node(std::move(n));
  for (auto i : inputs) g.add_input(v, i, 0);
  return v;
}

G::node_id add_arg(G& g, const std::string& name, std::int64_t index, gpass::type t) {
  auto v = add(g, name, "arg", {}, 1, {{"index", index}});
  g[v].outputs[0] = std::move(t);
  return v;
}

G::node_id add_return(G& g, std::vector<std::pair<G::node_id, int>> outs, strings names = {}) {
  gpass::attribute_map a;
  if (!names.empty()) a["names"] = names;
  auto r = add(g, "return", "return", {}, 0, std::move(a));
  for (auto [v, p] : outs) g.add_input(r, v, p);
  return r;
}

strings node_outputs(const onnx::GraphProto& g) {
  strings r;
  for (const auto& n : g.node())
    for (const auto& o : n.output()) r.push_back(o);
  return r;
}

std::string export_error(const G& g) {
  try {
    (void)gpass::export_onnx(g);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("onnx.export.hand_built_graph") {
  G g;
  auto x = add_arg(g, "x", 0, f32({2, 3}));
  auto w = add(g, "w", "Constant", {}, 1, {{"value", gpass::tensor::from<float>({1, 2, 3, 4, 5, 6}, {3, 2})}});
  auto mm = add(g, "mm", "MatMul", {x, w});
  g[mm].outputs[0] = f32({2, 2});
  auto relu = add(g, "relu", "Relu", {mm});
  g[relu].outputs[0] = f32({2, 2});
  add_return(g, {{relu, 0}}, {"out"});

  auto m = gpass::export_onnx(g);
  REQUIRE_NOTHROW(onnx::checker::check_model(m));
  CHECK(m.ir_version() == 8);
  REQUIRE(m.opset_import_size() == 1);
  CHECK(m.opset_import(0).version() == 17);
  CHECK(m.graph().name() == "main");
  REQUIRE(m.graph().input_size() == 1);
  CHECK(m.graph().input(0).name() == "x");
  REQUIRE(m.graph().initializer_size() == 1);
  CHECK(m.graph().initializer(0).name() == "w");
  CHECK(m.graph().initializer(0).raw_data().size() == 24);
  CHECK(node_outputs(m.graph()) == strings{"mm", "out"});  // the return names its producer's value
  CHECK(m.graph().node(1).name() == "relu");
  CHECK(m.graph().output(0).name() == "out");
  CHECK(m.graph().output(0).type().tensor_type().shape().dim(1).dim_value() == 2);
  REQUIRE(m.graph().value_info_size() == 1);
  CHECK(m.graph().value_info(0).name() == "mm");

  // and back: same graph, except what ONNX adds (ir_version, opset, graph name, value names)
  auto back = gpass::import_onnx(m);
  CHECK(back[back.at("relu")].attrs.at("_onnx_outputs").as<strings>() == strings{"out"});
  CHECK(back[back.at("w")].attrs.size() == 1);
  CHECK(back[back.at("w")].outputs[0].to_string() == "f32[3,2]");
}

TEST_CASE("onnx.export.value_names") {
  G g;
  auto x = add_arg(g, "x", 0, f32({4}));
  auto split = add(g, "split", "Split", {x}, 3);
  auto a = add(g, "a", "Relu", {split});
  g.add_input(add(g, "b", "Add", {}), split, 1);
  g.add_input(g.at("b"), split, 2);
  // explicit names that collide: with a derived name ("a") and with each other ("b")
  auto c = add(g, "c", "Neg", {a}, 1, {{"_onnx_outputs", strings{"a"}}});
  auto d = add(g, "d", "Neg", {c}, 1, {{"_onnx_outputs", strings{"b"}}});
  for (auto v : g.nodes())
    for (auto& t : g[v].outputs) t = f32({4});
  SUBCASE("derived, explicit and deduplicated names") {
    add_return(g, {{d, 0}, {g.at("b"), 0}});
    auto m = gpass::export_onnx(g);
    REQUIRE_NOTHROW(onnx::checker::check_model(m));
    // Split: split, split:1, split:2; explicit names claim before derived ones
    CHECK(node_outputs(m.graph()) == strings{"split", "split:1", "split:2", "a_1", "b_1", "a", "b"});
    CHECK(m.graph().output(0).name() == "b");
    CHECK(m.graph().output(1).name() == "b_1");
  }
  SUBCASE("outputs that need an Identity") {
    // an input passed through under another name, and one value output under two names
    add_return(g, {{x, 0}, {d, 0}, {d, 0}}, {"x_out", "first", "second"});
    auto m = gpass::export_onnx(g);
    REQUIRE_NOTHROW(onnx::checker::check_model(m));
    strings outs;
    for (const auto& o : m.graph().output()) outs.push_back(o.name());
    CHECK(outs == strings{"x_out", "first", "second"});
    const auto& last = m.graph().node(m.graph().node_size() - 1);
    CHECK(last.op_type() == "Identity");
    CHECK(last.input(0) == "first");
    CHECK(last.output(0) == "second");
    // re-import and export again: stable
    auto g2 = gpass::import_onnx(m);
    CHECK(gpass::export_onnx(g2).SerializeAsString() == gpass::export_onnx(gpass::import_onnx(gpass::export_onnx(g2))).SerializeAsString());
  }
}

TEST_CASE("onnx.export.topological_order") {
  G g;
  // inserted consumer first: the export must sort
  auto r = add(g, "r", "Relu", {});
  auto x = add_arg(g, "x", 0, f32({1}));
  auto n = add(g, "n", "Neg", {x});
  g.add_input(r, n, 0);
  g[r].outputs[0] = f32({1});
  add_return(g, {{r, 0}});
  auto m = gpass::export_onnx(g);
  REQUIRE_NOTHROW(onnx::checker::check_model(m));
  CHECK(node_outputs(m.graph()) == strings{"n", "r"});

  // a cycle is an error naming it
  G c;
  auto p = add(c, "p", "Relu", {});
  auto q = add(c, "q", "Relu", {p});
  c.add_input(p, q, 0);
  CHECK(export_error(c).find("cycle: ") != std::string::npos);
}

TEST_CASE("onnx.export.attributes") {
  G g;
  auto x = add_arg(g, "x", 0, f32({2, 3}));
  gpass::attribute_map a{{"to", dtype::f16},
                         {"flag", true},
                         {"perm_shape", gpass::shape{1, 0}},
                         {"bools", std::vector<bool>{true, false}},
                         {"dtypes", std::vector<dtype>{dtype::int64}},
                         {"t", gpass::type(gpass::tensor_type{dtype::int32, gpass::shape::of({})})}};
  auto n = add(g, "n", "Custom", {x}, 1, a);
  g[n].domain = "test";
  g[n].outputs[0] = f32({2, 3});
  add_return(g, {{n, 0}});
  auto m = gpass::export_onnx(g);
  REQUIRE_NOTHROW(onnx::checker::check_model(m));
  bool found_test_opset = false;
  for (const auto& o : m.opset_import()) found_test_opset |= o.domain() == "test" && o.version() == 1;
  CHECK(found_test_opset);
  for (const auto& at : m.graph().node(0).attribute()) {
    if (at.name() == "to") CHECK(at.i() == onnx::TensorProto::FLOAT16);
    if (at.name() == "flag") CHECK(at.i() == 1);
    if (at.name() == "perm_shape") CHECK(at.ints_size() == 2);
    if (at.name() == "bools") CHECK(at.ints(1) == 0);
    if (at.name() == "dtypes") CHECK(at.ints(0) == onnx::TensorProto::INT64);
    if (at.name() == "t") CHECK(at.tp().tensor_type().elem_type() == onnx::TensorProto::INT32);
  }
  g[n].attrs["bad"] = gpass::shape{gpass::dim::symbol("n")};
  CHECK(export_error(g) == "gpass: node 'n' (op Custom): attribute 'bad': shape [n] is not fully known");
}

TEST_CASE("onnx.export.errors") {
  SUBCASE("gpass ops") {
    G g;
    auto x = add_arg(g, "x", 0, f32({1}));
    add(g, "loop", "while", {x}, 1, {{"cond", gpass::function_ref{"c"}}, {"body", gpass::function_ref{"b"}}});
    CHECK(export_error(g) == "gpass: node 'loop' (op while): op 'while' is a gpass op with no ONNX form (lower it first)");
  }
  SUBCASE("graphs of another frontend") {
    G g;
    g.attrs()["frontend"] = std::string("tensorflow");
    CHECK(export_error(g) == "gpass: the graph comes from the 'tensorflow' frontend (graph attribute frontend); its ops "
                             "are not ONNX ops");
  }
  SUBCASE("missing function") {
    G g;
    auto c = add_arg(g, "c", 0, gpass::tensor_type{dtype::bool_, gpass::shape::of({})});
    add(g, "if", "If", {c}, 1, {{"then_branch", gpass::function_ref{"nowhere"}}, {"else_branch", gpass::function_ref{"nowhere"}}});
    CHECK(export_error(g).find("function 'nowhere' is not in the graph's function library") != std::string::npos);
  }
  SUBCASE("arg in a function") {
    G g;
    auto c = add_arg(g, "c", 0, gpass::tensor_type{dtype::bool_, gpass::shape::of({})});
    auto v = add(g, "v", "If", {c}, 1, {{"then_branch", gpass::function_ref{"f"}}, {"else_branch", gpass::function_ref{"f"}}});
    add_return(g, {{v, 0}});
    G f;
    add_arg(f, "oops", 0, f32({1}));
    g.add_function("f", f);
    CHECK(export_error(g).find("arg node in a function") != std::string::npos);
  }
  SUBCASE("unconnected output") {
    G g;
    add(g, "return", "return", {}, 0);
    g.add_empty_input(g.at("return"));
    CHECK(export_error(g).find("graph output 0 is not connected") != std::string::npos);
  }
}

TEST_CASE("onnx.export.functions") {
  // an If built by hand: branches take no formals, one capture each
  G g;
  auto c = add_arg(g, "c", 0, gpass::tensor_type{dtype::bool_, gpass::shape::of({})});
  auto x = add_arg(g, "x", 1, f32({2}));
  auto v = add(g, "v", "If", {c, x}, 1,
               {{"then_branch", gpass::function_ref{"then"}}, {"else_branch", gpass::function_ref{"else"}}, {"_captures", 1}});
  g[v].outputs[0] = f32({2});
  add_return(g, {{v, 0}});
  for (const char* name : {"then", "else"}) {
    G f;
    auto e = add(f, "function_entry", "function_entry", {}, 1, {{"names", strings{}}});
    f[e].outputs[0] = f32({2});
    auto body = add(f, std::string(name) + "_out", std::string(name) == "then" ? "Relu" : "Neg", {e});
    f[body].outputs[0] = f32({2});
    add_return(f, {{body, 0}});
    g.add_function(name, std::move(f));
  }
  auto m = gpass::export_onnx(g);
  REQUIRE_NOTHROW(onnx::checker::check_model(m));
  const auto& node = m.graph().node(0);
  CHECK(node.input_size() == 1);
  for (const auto& a : node.attribute()) {
    CHECK(a.g().input_size() == 0);
    CHECK(a.g().node(0).input(0) == "x");
    CHECK(a.g().name() == a.name().substr(0, 4));
  }
  // re-import: the importer's own function names, the same structure
  auto g2 = gpass::import_onnx(m);
  CHECK(g2[g2.at("v")].attrs.at("_captures").as<std::int64_t>() == 1);
  CHECK(g2.find_function("v.then_branch"));
  // a function that has fewer arguments than its caller's captures
  g[v].attrs["_captures"] = std::int64_t{2};
  g.add_input(v, c, 0);
  CHECK(export_error(g).find("fewer than the 2 captures") != std::string::npos);
}

TEST_CASE("onnx.export.ir3_constants") {
  G g;
  g.attrs()["ir_version"] = std::int64_t{3};
  g.attrs()["opset_import"] = strings{":9"};
  auto k = add(g, "k", "Constant", {}, 1, {{"value", gpass::tensor::from<float>({1, 2})}});
  g[k].outputs[0] = f32({2});
  add_return(g, {{k, 0}});
  auto m = gpass::export_onnx(g);
  REQUIRE_NOTHROW(onnx::checker::check_model(m));
  CHECK(m.graph().initializer_size() == 0);  // IR 3 initializers must be inputs: keep a node
  CHECK(m.graph().node(0).op_type() == "Constant");
}

TEST_CASE("onnx.export.files_and_determinism") {
  const auto dir = std::filesystem::temp_directory_path() / "gpass_onnx_test_export";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  G g;
  auto x = add_arg(g, "x", 0, f32({gpass::dim::symbol("n")}));
  auto y = add(g, "y", "Relu", {x});
  g[y].outputs[0] = f32({gpass::dim::symbol("n")});
  add_return(g, {{y, 0}});
  CHECK(gpass::export_onnx(g).SerializeAsString() == gpass::export_onnx(G(g)).SerializeAsString());
  gpass::write_onnx_file(g, dir / "m.onnx");
  auto back = gpass::read_onnx_file(dir / "m.onnx");
  CHECK(back[back.at("x")].outputs[0].to_string() == "f32[n]");
  CHECK(back.num_nodes() == 3);
  auto nowhere = dir / "no" / "such" / "dir" / "m.onnx";
  CHECK_THROWS_WITH_AS(gpass::write_onnx_file(g, nowhere), doctest::Contains((nowhere.string() + ": cannot open").c_str()),
                       gpass::error);
  std::filesystem::remove_all(dir);
}

}  // namespace gpass_test_onnx_export
