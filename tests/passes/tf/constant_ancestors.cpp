// SPDX-License-Identifier: Apache-2.0
// The infer-values and delete-constant-ancestors passes (seed 000: a value known by inference
// replaces its computation; a partly known value does not).

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include <gpass/io/text.hpp>
#include <gpass/pass/pass.hpp>
#include <gpass/pass/pipeline.hpp>
#include <gpass/passes/tf/delete_constant_ancestors.hpp>
#include <gpass/passes/common/infer_values.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_tf_constant_ancestors {

namespace {
using G = gpass::graph<>;

// MakeTensorArray(Shape(X)[1]) with ONNX ops: Shape -> Gather -> Unsqueeze feeds the consumer.
std::string shape_graph(std::string_view x_shape) {
  return std::string(R"(graph {
  %X = arg() {index = 0} -> (f32)") + std::string(x_shape) + R"()
  %Shape = Shape(%X)
  %one = Constant() {value = tensor<i64[]> [1]}
  %dim = Gather(%Shape, %one) {axis = 0}
  %axes = Constant() {value = tensor<i64[1]> [0]}
  %dim1 = Unsqueeze(%dim, %axes)
  %y = Reshape(%X, %Shape)
  %z = ConstantOfShape(%dim1)
  %r:0 = return(%y, %dim1)
}
)";
}

std::string run(std::string_view text, gpass::pass_context& ctx) {
  G g = gpass::parse_text(text);
  auto p = gpass::infer_values | gpass::delete_constant_ancestors;
  p(g, ctx);
  return gpass::print_text(g);
}
}  // namespace

TEST_CASE("passes.tf.delete_constant_ancestors.known_value_replaces_its_ancestors") {
  gpass::pass_context ctx;
  G g = gpass::parse_text(shape_graph("[1,5,3]"));
  gpass::infer_values(g, ctx);
  REQUIRE(g[g.at("dim1")].attrs.contains("_value"));
  gpass::delete_constant_ancestors(g, ctx);
  // dim1 is the constant [5]; Gather and %one went with it; Shape stays (Reshape uses it)
  CHECK(g[g.at("dim1")].op == "Constant");
  CHECK(g[g.at("dim1")].attrs.at("value") == gpass::attribute(gpass::tensor::from<std::int64_t>({5})));
  CHECK_FALSE(g.find("dim"));
  CHECK_FALSE(g.find("one"));
  CHECK_FALSE(g.find("axes"));
  CHECK(g.find("Shape"));
  // Shape's own value is known too: it became a constant, and X still feeds Reshape
  CHECK(g[g.at("Shape")].op == "Constant");
  CHECK(g.num_inputs(g.at("Shape")) == 0);
  CHECK(ctx.statistics().at("delete-constant-ancestors.deleted-nodes") >= 3);
  // the expected text: every replacement and deletion at once (ConstantOfShape's value is
  // known as well; replaced nodes move to the end)
  CHECK(gpass::print_text(g) == gpass::print_text(gpass::parse_text(R"(graph {
  %X = arg() {index = 0} -> (f32[1,5,3])
  %y = Reshape(%X, %Shape) -> (f32[1,5,3])
  %r:0 = return(%y, %dim1)
  %Shape = Constant() {value = tensor<i64[3]> [1, 5, 3]} -> (i64[3])
  %dim1 = Constant() {value = tensor<i64[1]> [5]} -> (i64[1])
  %z = Constant() {value = tensor<f32[5]> [0.0, 0.0, 0.0, 0.0, 0.0]} -> (f32[5])
}
)")));
}

TEST_CASE("passes.tf.delete_constant_ancestors.incomplete_value_keeps_the_computation") {
  gpass::pass_context ctx;
  std::string out = run(shape_graph("[1,?,3]"), ctx);
  G g = gpass::parse_text(out);
  // Shape(X) = [1,?,3]: recorded as an incomplete value, nothing is replaced or deleted
  CHECK(g[g.at("Shape")].attrs.contains("_incomplete_value"));
  CHECK_FALSE(g[g.at("Shape")].attrs.contains("_value"));
  CHECK(g[g.at("dim1")].op == "Unsqueeze");
  CHECK(g.find("dim"));
  CHECK(g.find("one"));
  CHECK(ctx.statistics().at("delete-constant-ancestors.replaced-nodes") == 0);
  CHECK(ctx.statistics().at("delete-constant-ancestors.deleted-nodes") == 0);
}

TEST_CASE("passes.tf.delete_constant_ancestors.tensorflow_graph_gets_tf_const_and_keeps_control_inputs") {
  gpass::pass_context ctx;
  G g = gpass::parse_text(R"(graph {frontend = "tensorflow"} {
  %X = arg() {index = 0} -> (f32[2,3])
  %gate = arg() {index = 1} -> (f32[])
  %s = Shape(%X, ^%gate) -> (i64[2])
  %r:0 = return(%s)
}
)");
  auto& n = g[g.at("s")];
  n.attrs["_value"] = gpass::tensor::from<std::int64_t>({2, 3});
  gpass::delete_constant_ancestors(g, ctx);
  const auto& c = g[g.at("s")];
  CHECK(c.op == "Const");
  CHECK(c.domain == "tf");
  CHECK(c.attrs.at("dtype") == gpass::attribute(gpass::dtype::int64));
  CHECK(g.control_inputs(g.at("s")).size() == 1);
  CHECK(g.find("X"));  // an interface node is never deleted
}

TEST_CASE("passes.tf.delete_constant_ancestors.requires_values_inferred") {
  using P = gpass::delete_constant_ancestors_fn;
  static_assert(P::requires_facts::contains<gpass::fact_tags::values_inferred>);
  static_assert(gpass::infer_values_fn::provides_facts::contains<gpass::fact_tags::values_inferred>);
  CHECK(P::name == "delete-constant-ancestors");
}

}  // namespace gpass_test_passes_tf_constant_ancestors
