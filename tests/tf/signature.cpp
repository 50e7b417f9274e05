// SPDX-License-Identifier: Apache-2.0
// gpass::bind_tf_signature (<gpass/io/tf_signature.hpp>): feeds become `arg` nodes, fetches
// the inputs of a `return` node, targets its control inputs; errors name the tensor.

#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/tensorflow.hpp>
#include <gpass/io/text.hpp>
#include <gpass/io/tf_signature.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_tf_signature {

namespace {

// x (placeholder) -> Split into two halves -> a = half0 * 2, b = half1 + a; NoOp `touch`.
const char* split_graph = R"(
node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: 4 } } } } }
node { name: "axis" op: "Const" attr { key: "dtype" value { type: DT_INT32 } }
       attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape {} int_val: 0 } } } }
node { name: "split" op: "Split" input: "axis" input: "x" attr { key: "num_split" value { i: 2 } }
       attr { key: "T" value { type: DT_FLOAT } } }
node { name: "two" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 2 } } } }
node { name: "a" op: "Mul" input: "split" input: "two" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "b" op: "AddV2" input: "split:1" input: "a" attr { key: "T" value { type: DT_FLOAT } } }
node { name: "touch" op: "NoOp" input: "^b" }
)";

gpass::graph<> load() { return gpass::parse_tf_graph_def_text(split_graph, "split.pbtxt"); }

std::string bind_error(const gpass::tf_signature& sig) {
  auto g = load();
  try {
    gpass::bind_tf_signature(g, sig);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("io.tf_signature.parse_tensor_name") {
  CHECK(gpass::parse_tf_tensor_name("split:1") == gpass::tf_tensor_name{"split", 1});
  CHECK(gpass::parse_tf_tensor_name("a/b") == gpass::tf_tensor_name{"a/b", 0});
  CHECK_THROWS_WITH(gpass::parse_tf_tensor_name("a:x"), "gpass: tensor name 'a:x' is not of the form node:port");
  CHECK_THROWS_WITH(gpass::parse_tf_tensor_name(":1"), "gpass: tensor name ':1' is not of the form node:port");
}

TEST_CASE("io.tf_signature.placeholder_feed_and_fetches") {
  auto g = load();
  gpass::bind_tf_signature(g, {.feeds = {"x:0"}, .fetches = {"b:0", "split:0"}, .targets = {"touch"}});
  const auto x = g.at("x");
  CHECK(g[x].op == "arg");
  CHECK(g[x].domain.empty());
  CHECK(g[x].attrs.at("index").as<std::int64_t>() == 0);
  CHECK(g[x].outputs.at(0).to_string() == "f32[4]");
  const auto r = g.at("_fetches");
  CHECK(g[r].op == "return");
  REQUIRE(g.num_inputs(r) == 2);
  CHECK(g[g.input(r, 0).node].name == "b");
  CHECK(g[g.input(r, 1).node].name == "split");
  CHECK(g.input(r, 1).port == 0);
  REQUIRE(g.control_inputs(r).size() == 1);
  CHECK(g[g.control_inputs(r).front()].name == "touch");
}

TEST_CASE("io.tf_signature.feed_an_intermediate_tensor") {
  // Feeding split:1 replaces that value only: b reads the arg, a still reads split:0.
  auto g = load();
  gpass::bind_tf_signature(g, {.feeds = {"x", "split:1"}, .fetches = {"b", "split:1"}});
  const auto arg = g.at("_arg_split_1");
  CHECK(g[arg].op == "arg");
  CHECK(g[arg].attrs.at("index").as<std::int64_t>() == 1);
  CHECK(g.input(g.at("b"), 0).node == arg);
  CHECK(g[g.input(g.at("a"), 0).node].name == "split");
  const auto r = g.at("_fetches");
  CHECK(g.input(r, 1).node == arg);  // fetching a fed tensor returns the fed value

  gpass::exec::eigen_cpu cpu({.threads = 1});
  gpass::exec::plan p(g, cpu);
  auto out = p.run({gpass::tensor::from<float>({1, 2, 3, 4}), gpass::tensor::from<float>({10, 20})});
  REQUIRE(out.size() == 2);
  // b = fed + 2 * split:0 = [10 + 2, 20 + 4]
  CHECK(out[0].tensor() == gpass::tensor::from<float>({12, 24}));
  CHECK(out[1].tensor() == gpass::tensor::from<float>({10, 20}));
}

TEST_CASE("io.tf_signature.errors") {
  CHECK(bind_error({.fetches = {"nope:0"}}) == "gpass: fetch 'nope:0': no node 'nope' in the graph");
  CHECK(bind_error({.fetches = {"split:2"}}) ==
        "gpass: node 'split' (op Split): fetch 'split:2': output 2 out of range (the node has 2)");
  CHECK(bind_error({.feeds = {"x", "x:0"}}) == "gpass: feed 'x:0' is fed twice");
  CHECK(bind_error({.targets = {"ghost"}}) == "gpass: target 'ghost': no node 'ghost' in the graph");
  auto g = load();
  gpass::bind_tf_signature(g, {.fetches = {"b"}});
  CHECK_THROWS_WITH(gpass::bind_tf_signature(g, {.fetches = {"b"}}),
                    "gpass: the graph already has a node named _fetches (signature bound twice?)");
}

TEST_CASE("io.tf_signature.unknown_dims_become_named_symbols") {
  // a fed Placeholder of shape [?,3] (name with a '/') is an arg of type f32[in_x_d0,3]
  auto g = gpass::parse_tf_graph_def_text(R"(
node { name: "in/x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } }
       attr { key: "shape" value { shape { dim { size: -1 } dim { size: 3 } } } } }
node { name: "y" op: "Relu" input: "in/x" attr { key: "T" value { type: DT_FLOAT } } }
)",
                                          "dims.pbtxt");
  gpass::bind_tf_signature(g, {.feeds = {"in/x:0"}, .fetches = {"y:0"}});
  CHECK(g[g.at("in/x")].outputs.at(0).to_string() == "f32[in_x_d0,3]");
  CHECK(gpass::detail::tf_named_dims(gpass::shape(), "x").to_string() == "[*]");  // unknown rank stays
  CHECK(gpass::detail::tf_named_dims(gpass::shape(std::vector<gpass::dim>{gpass::dim()}), "0a").to_string() == "[_0a_d0]");
}

}  // namespace gpass_test_tf_signature
