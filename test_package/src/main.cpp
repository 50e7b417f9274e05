// SPDX-License-Identifier: Apache-2.0
// The test package of the Conan recipe (and of scripts/vcpkg-layout.sh): a graph, its topological order and the TensorFlow tensor-name
// parser (component tensorflow), header-only.
#include <iostream>

#include <gpass/graph/graph.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/io/tf_signature.hpp>
#include <gpass/version.hpp>

int main() {
  gpass::graph<> g;
  auto y = g.add_node({.name = "y", .op = "Relu"});
  auto x = g.add_node({.name = "x", .op = "Placeholder"});
  g.add_input(y, x, 0);
  const auto t = gpass::parse_tf_tensor_name("split:1");
  std::cout << "gpass " << gpass::version_string << " (installed package):";
  for (auto v : gpass::topological_order(g)) std::cout << ' ' << g[v].name;
  std::cout << "; tensor " << t.node << " port " << t.port << '\n';
  return gpass::topological_order(g).front() == x && t.port == 1 ? 0 : 1;
}
