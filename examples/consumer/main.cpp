// SPDX-License-Identifier: Apache-2.0
// A downstream program using an installed gpass: builds a small graph, cleans it with a
// pipeline composed at compile time, prints it as text IR, checks the node counts, then
// infers its types and runs it on the Eigen CPU executor.
// Exit status 0 when the result is right (the find_package consumer test relies on it).
//
// Built twice by examples/consumer/CMakeLists.txt: `consumer` fully header-only, and
// `consumer_compiled` with gpass::eigen_cpu (GPASS_SEPARATE_COMPILATION, the gpass units
// compiled into the target).

#include <gpass/all.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#ifdef CONSUMER_WITH_TENSORFLOW
#include <gpass/io/tensorflow.hpp>
#endif

#include <cstdint>
#include <cstdlib>
#include <iostream>

int main() {
  gpass::graph<> g;

  // x -> add(x, c) -> return: the result.
  auto x = g.add_node({.name = "x", .op = "arg", .attrs = {{"index", std::int64_t{0}}}});
  auto c = g.add_node({.name = "c", .op = "Constant", .attrs = {{"value", gpass::tensor::from<float>({1.5f, -2.0f})}}});
  auto add = g.add_node({.name = "add", .op = "Add"});
  g.add_input(add, x);
  g.add_input(add, c);
  auto ret = g.add_node({.name = "r", .op = "return", .outputs = {}});
  g.add_input(ret, add);

  // A dead branch (used by nothing that reaches the result) and a disconnected node.
  auto relu = g.add_node({.name = "dead_relu", .op = "Relu"});
  g.add_input(relu, x);
  auto sig = g.add_node({.name = "dead_sigmoid", .op = "Sigmoid"});
  g.add_input(sig, relu);
  g.add_node({.name = "lonely", .op = "Constant", .attrs = {{"value", gpass::tensor::from<float>({7.0f})}}});

  const std::size_t before = g.num_nodes();

  // The pipeline is checked at compile time (facts each pass requires must be provided).
  auto pipe = gpass::delete_disconnected | gpass::dce;
  gpass::pass_context ctx;
  pipe(g, ctx);

  std::cout << gpass::print_text(g);
  std::cout << "nodes: " << before << " -> " << g.num_nodes() << '\n';
  for (const auto& [name, value] : ctx.statistics()) std::cout << "  " << name << " = " << value << '\n';

#ifdef CONSUMER_WITH_TENSORFLOW
  // The tensorflow component: a GraphDef in protobuf text format.
  auto tf = gpass::parse_tf_graph_def_text(R"(
    node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }
    node { name: "y" op: "Relu" input: "x" attr { key: "T" value { type: DT_FLOAT } } })");
  std::cout << gpass::print_text(tf);
  const bool tf_ok = tf.num_nodes() == 2 && tf[tf.at("y")].domain == "tf" && tf.input(tf.at("y"), 0).node == tf.at("x");
#else
  const bool tf_ok = true;
#endif

  // Run it: x = [1, 2] -> x + c = [2.5, 0].
  g[g.at("x")].outputs = {gpass::tensor_type{gpass::dtype::f32, gpass::shape{2}}};
  gpass::infer_shapes(g, ctx);
  gpass::exec::eigen_cpu cpu({.threads = 1});
  gpass::exec::plan plan(g, cpu);
  auto outputs = plan.run({gpass::tensor::from<float>({1.0f, 2.0f})});
  const float* y = outputs.at(0).tensor().data<float>();
  std::cout << "run: [" << y[0] << ", " << y[1] << "]\n";
  const bool run_ok = y[0] == 2.5f && y[1] == 0.0f;

  const bool ok = tf_ok && run_ok && before == 7 && g.num_nodes() == 4 && g.find("x") && g.find("c") && g.find("add") &&
                  g.find("r") && !g.find("dead_relu") && !g.find("dead_sigmoid") && !g.find("lonely");
  std::cout << (ok ? "consumer: OK" : "consumer: WRONG RESULT") << '\n';
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
