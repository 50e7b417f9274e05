// SPDX-License-Identifier: Apache-2.0
// Type inference with the TensorFlow op schemas (include/gpass/ops/tf) on the acyclic
// real-TensorFlow fixtures: after import and infer-shapes every output of every node has a
// dtype and a shape whose dims are known or symbolic, and shapes computed in the graph
// (Fill(Shape(x)), Range(0, Shape(x)[0]), Reshape(x, [Size])) are followed; a
// PartitionedCall is inferred through its library function.

#include <cstdint>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

#include <gpass/io/tensorflow.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_tf_ops_infer {

namespace {

const std::filesystem::path tf_fixtures = std::filesystem::path(GPASS_TEST_DATA_DIR) / "tf";

gpass::graph<> inferred(const std::string& fixture) {
  auto g = gpass::read_tf_graph_file(tf_fixtures / fixture / "graph.pb");
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  return g;
}

// A tensor type with a dtype and a rank whose dims are all known or symbolic.
bool fully_typed(const gpass::type& t) {
  if (!t.is_tensor() || t.tensor().element == gpass::dtype::undefined || !t.tensor().shape.has_rank()) return false;
  for (const auto& d : t.tensor().shape.dims())
    if (d.is_unknown()) return false;
  return true;
}

std::string type_of(const gpass::graph<>& g, const std::string& node, std::size_t port = 0) {
  return g[g.at(node)].outputs.at(port).to_string();
}

}  // namespace

TEST_CASE("tf.ops_infer.acyclic_fixtures_fully_typed") {
  for (const char* name : {"shape_ops", "multi_output", "control_deps", "extra/function_call"}) {
    auto g = inferred(name);
    std::size_t ports = 0;
    for (auto v : g.nodes())
      for (const auto& t : g[v].outputs) {
        ++ports;
        CHECK_MESSAGE(fully_typed(t), name, ": ", g[v].name, " (", g[v].op, ") is ", t.to_string());
      }
    CHECK(ports + 1 >= g.num_nodes());  // every node but a NoOp has outputs
    CHECK(g.num_nodes() >= 5);
  }
}

TEST_CASE("tf.ops_infer.shape_ops_fixture_follows_computed_shapes") {
  auto g = inferred("shape_ops");
  const std::string x = type_of(g, "x");  // f32[<symbol>,3]
  REQUIRE(x.size() > 7);
  const std::string n = x.substr(4, x.size() - 7);
  CHECK(type_of(g, "filled") == x);                  // Fill(Shape(x), 2.0)
  CHECK(type_of(g, "rng") == "i32[" + n + "]");      // Range(0, Shape(x)[0], 1)
  CHECK(type_of(g, "flat") == "f32[3*" + n + "]");   // Reshape(x, [Shape(x)[0] * Shape(x)[1]])
  CHECK(type_of(g, "zeros") == "f32[" + n + ",2]");  // Fill(Pack(Shape(x)[0], 2), 0)
  CHECK(type_of(g, "tiled") == x);                   // Tile(ExpandDims(range, 1), [1, Shape(x)[1:][0]])
  CHECK(type_of(g, "squeezed") == x);
  const auto& sh = g[g.at("sh")].attrs;
  REQUIRE(sh.count("_incomplete_value") == 1);
  CHECK(sh.at("_incomplete_value").as<gpass::shape>().to_string() == "[" + n + ",3]");
  CHECK(g[g.at("tail")].attrs.at("_value").as<gpass::tensor>().values<std::int32_t>()[0] == 3);  // Shape(x)[1:]
}

TEST_CASE("tf.ops_infer.partitioned_call_through_its_function") {
  auto g = inferred("extra/function_call");  // f(a, b) = (a * b + 1, tanh(a))
  CHECK(type_of(g, "PartitionedCall", 1) == type_of(g, "x"));
  CHECK(type_of(g, "o2") == type_of(g, "x"));
  const std::string r0 = type_of(g, "PartitionedCall", 0);  // x * y: x's or y's rows, a symbol of its own
  CHECK(r0.size() > 7);
  CHECK(r0.substr(r0.size() - 3) == ",3]");
  CHECK(r0 != type_of(g, "x"));
}

}  // namespace gpass_test_tf_ops_infer
