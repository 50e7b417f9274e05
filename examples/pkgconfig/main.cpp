// SPDX-License-Identifier: Apache-2.0
// A consumer built with nothing but pkg-config:
//   g++ $(pkg-config --cflags gpass) main.cpp $(pkg-config --libs gpass)
// (the test install.pkg_config_consumer does it against an installed gpass). It uses the
// header-only core: a graph, its topological order, the version.
#include <iostream>

#include <gpass/graph/graph.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/version.hpp>

int main() {
  gpass::graph<> g;
  auto y = g.add_node({.name = "y", .op = "Relu"});
  auto x = g.add_node({.name = "x", .op = "Placeholder"});
  g.add_input(y, x, 0);
  std::cout << "gpass " << gpass::version_string << ":";
  for (auto v : gpass::topological_order(g)) std::cout << ' ' << g[v].name;
  std::cout << '\n';
  return gpass::topological_order(g).front() == x ? 0 : 1;
}
