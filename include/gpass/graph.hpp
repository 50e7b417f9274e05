// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file graph.hpp
/// Umbrella header of `gpass/graph/`: the graph (`gpass::graph<Node, Edge, Attrs>`), its node
/// and edge types, typed graph attributes, side tables, algorithms (topological order,
/// reachability, subgraph extraction). The verifier, which needs the op schemas, is in
/// `gpass/analysis/verify.hpp` (umbrella `gpass/analysis.hpp`).
/// \code
///   #include <gpass/graph.hpp>
///   gpass::graph<> g;
///   auto x = g.add_node({.name = "x", .op = "Placeholder"});
///   for (auto v : gpass::topological_order(g)) std::cout << g[v].name << '\n';
/// \endcode

#include <gpass/graph/attr_key.hpp>
#include <gpass/graph/edge.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/interface.hpp>
#include <gpass/graph/node.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/graph/reachability.hpp>
#include <gpass/graph/subgraph.hpp>
#include <gpass/graph/topological_order.hpp>
