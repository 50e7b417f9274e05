// SPDX-License-Identifier: Apache-2.0
// The op registry: core and ONNX schemas, opset ranges, arity from formals, core type functions.

#include <doctest/doctest.h>

#include <string>

#include <gpass/io/text.hpp>
#include <gpass/ops/opset.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_ops_registry {

TEST_CASE("ops.registry.global_has_core_and_onnx_ops") {
  const auto& r = gpass::op_registry::global();
  for (const char* n : {"get_tuple", "make_tuple", "while", "if", "function_entry", "return", "Merge"})
    CHECK_MESSAGE(r.find("", n) != nullptr, n);
  for (const char* n : {"Add", "Conv", "Reshape", "Loop", "If", "Scan", "SequenceAt", "Einsum", "NonZero", "STFT"})
    CHECK_MESSAGE(r.find("", n) != nullptr, n);
  // "ai.onnx" is the default domain
  CHECK(r.find("ai.onnx", "Relu") == r.find("", "Relu"));
  CHECK(r.find("com.example", "Relu") == nullptr);
  // every schema has an inference function except the signature and result ops
  for (const auto* s : r.all())
    if (s->domain.empty() && s->name != "function_entry" && s->name != "return" && s->name != "arg" &&
        s->name != "retval" && s->name != "send" && s->name != "recv" && s->name != "get_global")
      CHECK_MESSAGE(static_cast<bool>(s->infer), s->name);
}

TEST_CASE("ops.registry.opset_ranges_follow_semantic_changes") {
  const auto& r = gpass::op_registry::global();
  const auto* sq11 = r.find("", "Squeeze", 11);
  const auto* sq13 = r.find("", "Squeeze", 13);
  REQUIRE(sq11);
  REQUIRE(sq13);
  CHECK(sq11 != sq13);
  CHECK(sq11->max_inputs == 1);
  CHECK(sq11->find_attribute("axes") != nullptr);
  CHECK(sq13->max_inputs == 2);
  CHECK(sq13->min_inputs == 1);
  CHECK(sq13->find_attribute("axes") == nullptr);
  CHECK(r.find("", "Squeeze") == sq13);  // newest
  CHECK(r.find("", "Slice", 9)->max_inputs == 1);
  CHECK(r.find("", "Slice", 10)->max_inputs == 5);
  CHECK(r.find("", "Clip", 6)->max_inputs == 1);
  CHECK(r.find("", "Clip", 11)->max_inputs == 3);
  CHECK(r.find("", "ReduceSum", 12)->max_inputs == 1);
  CHECK(r.find("", "ReduceSum", 13)->max_inputs == 2);
  CHECK(r.find("", "Reshape", 13)->find_attribute("allowzero") == nullptr);
  CHECK(r.find("", "Reshape", 14)->find_attribute("allowzero") != nullptr);
  CHECK(r.find("", "Split", 11)->max_inputs == 1);
  CHECK(r.find("", "Split", 13)->max_inputs == 2);
  CHECK(r.find("", "Pad", 2)->find_attribute("pads")->required);
  CHECK(r.find("", "Pad", 11)->min_inputs == 2);
  CHECK(r.find("", "Add", 6)->find_attribute("broadcast") != nullptr);
  CHECK(r.find("", "Add", 7)->find_attribute("broadcast") == nullptr);
  CHECK(r.find("", "Unsqueeze", 12)->find_attribute("axes")->required);
  // variadic and optional formals
  const auto* concat = r.find("", "Concat");
  CHECK(concat->min_inputs == 1);
  CHECK(concat->max_inputs == gpass::op_schema::unbounded);
  CHECK(r.find("", "Conv")->min_inputs == 2);
  CHECK(r.find("", "Conv")->max_inputs == 3);
  CHECK(r.find("", "MaxPool")->max_outputs == 2);
  CHECK(r.find("", "NonZero")->outputs.at(0).type == "i64");
  CHECK(r.find("", "RandomNormal")->traits.stateful);
}

TEST_CASE("ops.registry.overlapping_ranges_are_refused") {
  gpass::op_registry r;
  gpass::register_onnx_ops(r);
  gpass::op_schema s;
  s.name = "Relu";
  s.since_version = 3;
  CHECK_THROWS_WITH_AS(r.add(s), doctest::Contains("registered twice"), gpass::error);
}

TEST_CASE("ops.registry.core_tuple_ops_and_globals") {
  auto g = gpass::parse_text(R"(graph {
  %a = arg() {index = 0} -> (f32[2])
  %b = arg() {index = 1} -> (list<i64[], n>)
  %t = make_tuple(%a, %b)
  %e = get_tuple(%t) {index = 1}
  %s = set_global(%a) {variable = "v"}
  %r:0 = return(%e, %s)
})");
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  CHECK(g[g.at("t")].outputs[0].to_string() == "tuple<f32[2], list<i64[], n>>");
  CHECK(g[g.at("e")].outputs[0].to_string() == "list<i64[], n>");
  CHECK(g[g.at("s")].outputs[0].to_string() == "f32[2]");
  auto bad = gpass::parse_text(R"(graph {
  %a = arg() {index = 0} -> (f32[2])
  %t = make_tuple(%a)
  %e = get_tuple(%t) {index = 3}
  %r:0 = return(%e)
})");
  CHECK_THROWS_WITH_AS(gpass::infer_shapes(bad, ctx), doctest::Contains("node 'e' (op get_tuple): index 3 out of range"),
                       gpass::error);
}

TEST_CASE("ops.registry.user_schema_with_infer_function") {
  gpass::op_registry r;
  gpass::op_schema s;
  s.domain = "my";
  s.name = "Double";
  s.inputs = {{"X", "T"}};
  s.outputs = {{"Y", "T"}};
  s.infer = [](gpass::infer_context& c) {
    gpass::shape x = c.input_shape(0);
    if (x.has_rank() && x.rank() == 1) c.set_shape(0, gpass::shape{x[0] * 2});
  };
  r.add(s);
  auto g = gpass::parse_text(R"(graph {
  %a = arg() {index = 0} -> (f16[n])
  %y = my::Double(%a)
  %r:0 = return(%y)
})");
  gpass::type_inference_options o;
  o.registry = &r;
  gpass::type_inference<gpass::graph<>> ti(g, o);
  ti.run();
  CHECK(ti.port(g.at("y"), 0).type.to_string() == "f16[2*n]");
}

TEST_CASE("ops.registry.graph_opset_reads_graph_attributes") {
  gpass::graph<> g;
  CHECK(gpass::graph_opset(g, "") == 0);
  g.attrs()["opset_import"] = std::vector<std::string>{":11", "ai.onnx.ml:3", "com.microsoft:1"};
  CHECK(gpass::graph_opset(g, "") == 11);
  CHECK(gpass::graph_opset(g, "ai.onnx") == 11);
  CHECK(gpass::graph_opset(g, "ai.onnx.ml") == 3);
  CHECK(gpass::graph_opset(g, "other") == 0);
  g.attrs()["opset"] = std::int64_t{13};  // an explicit int wins
  CHECK(gpass::graph_opset(g, "") == 13);
  g.attrs()["opset_import"] = std::vector<std::string>{":x1"};
  CHECK(gpass::graph_opset(g, "ai.onnx.ml") == 0);
}

}  // namespace gpass_test_ops_registry
