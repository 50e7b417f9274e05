// SPDX-License-Identifier: Apache-2.0
// The tf-constant-propagation pass (seed 000, "Tensorflow Constant Propagation"): constant
// subgraphs evaluated by the CPU kernels, the size limit, what is never folded.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/io/text.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/passes/tf/constant_propagation.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_tf_constant_propagation {

namespace {
using G = gpass::graph<>;

std::string node_text(const G& g, std::string_view name) {
  std::string all = gpass::print_text(g), key = "  %" + std::string(name);
  for (std::size_t at = all.find(key); at != std::string::npos; at = all.find(key, at + 1)) {
    const char next = all[at + key.size()];
    if (next == ' ' || next == ':') return all.substr(at + 3, all.find('\n', at) - at - 3);
  }
  return "<none>";
}
std::int64_t stat(const gpass::pass_context& ctx, const std::string& k) {
  return ctx.statistics().at("tf-constant-propagation." + k);
}
}  // namespace

// Seed 000: X = Range(100); Y = fill(shape(X), 1). The Range, the Shape and the Fill are
// constants afterwards; the consumer of a placeholder is not.
TEST_CASE("passes.tf.constant_propagation.range_shape_fill") {
  gpass::pass_context ctx;
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[100])
  %start = Constant() {value = tensor<i64[]> [0]}
  %limit = Constant() {value = tensor<i64[]> [100]}
  %delta = Constant() {value = tensor<i64[]> [1]}
  %X = Range(%start, %limit, %delta)
  %shape = Shape(%X)
  %Y = ConstantOfShape(%shape) {value = tensor<f32[1]> [1.0]}
  %y = Add(%x, %Y)
  %r:0 = return(%y, %X)
}
)");
  gpass::constant_propagation(g, ctx);
  CHECK(node_text(g, "shape") == "shape = Constant() {value = tensor<i64[1]> [100]} -> (i64[1])");
  CHECK(g[g.at("Y")].op == "Constant");
  CHECK(g[g.at("Y")].outputs[0].to_string() == "f32[100]");
  CHECK(g[g.at("X")].op == "Constant");  // a graph output keeps its name
  CHECK(g[g.at("X")].attrs.at("value").as<gpass::tensor>().values<std::int64_t>()[99] == 99);
  CHECK(node_text(g, "y") == "y = Add(%x, %Y)");
  CHECK(stat(ctx, "folded") == 3);
  // downstream shape inference now knows the Fill's shape
  gpass::infer_shapes(g, ctx);
  CHECK(g[g.at("y")].outputs[0].to_string() == "f32[100]");
}

TEST_CASE("passes.tf.constant_propagation.size_limit") {
  gpass::pass_context ctx;
  // a Fill of 10^7 elements is not folded, and its kernel is not even run
  G g = gpass::parse_text(R"(graph {
  %dims = Constant() {value = tensor<i64[1]> [10000000]}
  %big = ConstantOfShape(%dims) {value = tensor<f32[1]> [1.0]}
  %small = ConstantOfShape(%dims2) {value = tensor<f32[1]> [2.0]}
  %dims2 = Constant() {value = tensor<i64[1]> [4]}
  %r:0 = return(%big, %small)
}
)");
  gpass::constant_propagation(g, ctx);
  CHECK(g[g.at("big")].op == "ConstantOfShape");
  CHECK(g[g.at("small")].op == "Constant");
  CHECK(stat(ctx, "too-large") == 1);
  CHECK(stat(ctx, "folded") == 1);

  // the options: a growth factor of 1 and no small-result allowance keep Range(0, 100)
  gpass::pass_context strict;
  strict.set_option("tf-constant-propagation.max-growth", "1");
  strict.set_option("tf-constant-propagation.min-bytes", "0");
  G h = gpass::parse_text(R"(graph {
  %start = Constant() {value = tensor<i64[]> [0]}
  %limit = Constant() {value = tensor<i64[]> [100]}
  %delta = Constant() {value = tensor<i64[]> [1]}
  %X = Range(%start, %limit, %delta)
  %n = Size(%X)
  %r:0 = return(%n)
}
)");
  gpass::constant_propagation(h, strict);
  CHECK(h[h.at("X")].op == "Range");     // 800 bytes from 24
  CHECK(h[h.at("n")].op == "Constant");  // Size is smaller than its input: folded
  CHECK(h[h.at("n")].attrs.at("value").as<gpass::tensor>().values<std::int64_t>()[0] == 100);
  strict.set_option("tf-constant-propagation.max-growth", "many");
  CHECK_THROWS_WITH_AS(gpass::constant_propagation(h, strict), doctest::Contains("max-growth"), gpass::error);
}

TEST_CASE("passes.tf.constant_propagation.what_is_never_folded") {
  gpass::pass_context ctx;
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[2])
  %c = Constant() {value = tensor<f32[2]> [1.0, 2.0]}
  %placeholder_dependent = Add(%x, %c)
  %random = RandomNormalLike(%c)
  %unknown = tf::NoSuchKernel(%c)
  %v = get_global() {variable = "w"} -> (f32[2])
  %from_global = Add(%v, %c)
  %bad = Reshape(%c, %c)
  %parts:2 = Split(%c) {axis = 0, num_outputs = 2}
  %second = Neg(%parts:1)
  %r:0 = return(%placeholder_dependent, %random, %unknown, %from_global, %second, %parts:0, %bad)
}
)");
  gpass::constant_propagation(g, ctx);
  CHECK(g[g.at("placeholder_dependent")].op == "Add");
  CHECK(g[g.at("random")].op == "RandomNormalLike");
  CHECK(g[g.at("unknown")].op == "NoSuchKernel");
  CHECK(g[g.at("from_global")].op == "Add");
  CHECK(g[g.at("bad")].op == "Reshape");  // the kernel fails: left, with a note
  // a node with several outputs is evaluated (its consumers fold) but stays
  CHECK(g[g.at("parts")].op == "Split");
  CHECK(node_text(g, "second") == "second = Constant() {value = tensor<f32[1]> [-2.0]} -> (f32[1])");
  CHECK(stat(ctx, "no-kernel") == 1);
  CHECK(stat(ctx, "failed") == 1);
  CHECK(stat(ctx, "folded") == 1);
}

TEST_CASE("passes.tf.constant_propagation.tensorflow_graphs_functions_and_control_inputs") {
  gpass::pass_context ctx;
  G g = gpass::parse_text(R"(graph {frontend = "tensorflow"} {
  %x = arg() {index = 0} -> (f32[])
  %a = tf::Const() {dtype = f32, value = tensor<f32[]> [3.0]} -> (f32[])
  %b = Neg(%a, ^%x)
  %loop = while(%x) {body = @body, cond = @cond}
  %r:0 = return(%b, %loop)
}

func @body {
  %args = function_entry() -> (f32[])
  %k = tf::Const() {dtype = f32, value = tensor<f32[]> [2.0]} -> (f32[])
  %k2 = Mul(%k, %k)
  %y = Add(%args, %k2)
  %ret:0 = return(%y)
}

func @cond {
  %args = function_entry() -> (f32[])
  %t = tf::Const() {dtype = bool, value = tensor<bool[]> [false]} -> (bool[])
  %ret:0 = return(%t)
}
)");
  gpass::constant_propagation(g, ctx);
  // TensorFlow graph: tf::Const, named as the node, its control input kept
  CHECK(node_text(g, "b") == "b = tf::Const(^%x) {dtype = f32, value = tensor<f32[]> [-3.0]} -> (f32[])");
  CHECK(g[g.at("loop")].op == "while");  // calls functions: never folded
  const G& body = *g.find_function("body");
  CHECK(node_text(body, "k2") == "k2 = tf::Const() {dtype = f32, value = tensor<f32[]> [4.0]} -> (f32[])");
  CHECK(body[body.at("y")].op == "Add");  // its argument is not a constant
}

}  // namespace gpass_test_passes_tf_constant_propagation
