// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file topological_order.hpp
/// `gpass::topological_order`: an iterative (Kahn) topological order that names a cycle when there is one;
/// `gpass::data_sources`, the start of a Kahn walk that a pass drives itself.

#include <algorithm>
#include <string>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>

namespace gpass {

namespace detail {

/// Finds one cycle among `pending` nodes (those left with unresolved inputs) without
/// recursion and returns its node names in edge order.
template <class G>
std::vector<std::string> find_cycle(const G& g, const node_map<G, std::size_t>& indeg) {
  using node_id = typename G::node_id;
  // Every pending node has a pending predecessor: walk predecessors until a node repeats.
  node_map<G, std::size_t> seen_at(g, static_cast<std::size_t>(-1));
  std::vector<node_id> path;
  node_id cur{};
  for (auto v : g.nodes())
    if (indeg[v] != 0) {
      cur = v;
      break;
    }
  while (seen_at[cur] == static_cast<std::size_t>(-1)) {
    seen_at[cur] = path.size();
    path.push_back(cur);
    node_id next = cur;
    for (auto e : g.in_edges(cur)) {
      auto s = g.source(e);
      if (indeg[s] != 0) {
        next = s;
        break;
      }
    }
    cur = next;
  }
  std::vector<std::string> names;
  for (std::size_t i = seen_at[cur]; i < path.size(); ++i) names.push_back(g[path[i]].name);
  std::reverse(names.begin(), names.end());  // predecessor walk -> edge order
  return names;
}

}  // namespace detail

/// Function object: `topological_order(g)` returns every node of `g` so that each node comes
/// after all producers of its inputs and all its control predecessors. Ties keep insertion
/// order (deterministic). O(V+E), no recursion. On a cycle throws `gpass::error` naming the
/// nodes of one cycle: `cycle: a -> b -> c -> a`.
struct topological_order_fn {
  template <class G>
  std::vector<typename G::node_id> operator()(const G& g) const {
    using node_id = typename G::node_id;
    node_map<G, std::size_t> indeg(g, 0);
    std::vector<node_id> order;
    order.reserve(g.num_nodes());
    for (auto v : g.nodes()) {
      indeg[v] = g.in_degree(v);
      if (indeg[v] == 0) order.push_back(v);
    }
    for (std::size_t head = 0; head < order.size(); ++head)
      for (auto e : g.out_edges(order[head])) {
        auto t = g.target(e);
        if (--indeg[t] == 0) order.push_back(t);
      }
    if (order.size() != g.num_nodes()) {
      auto cyc = detail::find_cycle(g, indeg);
      std::string s;
      for (const auto& n : cyc) s += n + " -> ";
      s += cyc.empty() ? std::string("?") : cyc.front();
      error_context c;
      if (!cyc.empty()) {
        c.node = cyc.front();
        c.op = g[g.at(cyc.front())].op;
      }
      throw error("cycle: " + s, c);
    }
    return order;
  }
};
inline constexpr topological_order_fn topological_order{};

/// The start of a Kahn walk over data edges that a pass drives itself (it may rewire users
/// on the way): `pending[v]` is the number of present data inputs of `v`, and the nodes with
/// none are returned in graph order. A walk pops a node, then counts down its users
/// (`g.uses(v)`, one per data edge) and appends those that reach 0; nodes on data cycles
/// (TensorFlow v1 loops) are never reached.
template <class G>
std::vector<typename G::node_id> data_sources(const G& g, node_map<G, std::size_t>& pending) {
  std::vector<typename G::node_id> ready;
  ready.reserve(g.num_nodes());
  for (auto v : g.nodes()) {
    std::size_t n = 0;
    for (std::size_t i = 0, m = g.num_inputs(v); i < m; ++i)
      if (g.input_edge(v, static_cast<int>(i))) ++n;
    pending[v] = n;
    if (n == 0) ready.push_back(v);
  }
  return ready;
}

}  // namespace gpass
