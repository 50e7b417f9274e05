// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file reachability.hpp
/// `gpass::reachable_from` / `gpass::reaching`: forward and backward reachability over data and control edges.

#include <vector>

#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>

namespace gpass {

/// Which edges a reachability walk follows.
enum class edge_filter { all, data_only, control_only };

namespace detail {
template <class G, class Seeds, bool Forward>
node_map<G, char> reach(const G& g, const Seeds& seeds, edge_filter f) {
  node_map<G, char> seen(g, 0);
  std::vector<typename G::node_id> stack;
  for (auto s : seeds)
    if (!seen[s]) {
      seen[s] = 1;
      stack.push_back(s);
    }
  auto follow = [&](const auto& e) {
    bool ctl = g[e].src_port == control_port;
    return f == edge_filter::all || (f == edge_filter::control_only) == ctl;
  };
  while (!stack.empty()) {
    auto v = stack.back();
    stack.pop_back();
    if constexpr (Forward) {
      for (auto e : g.out_edges(v))
        if (follow(e) && !seen[g.target(e)]) {
          seen[g.target(e)] = 1;
          stack.push_back(g.target(e));
        }
    } else {
      for (auto e : g.in_edges(v))
        if (follow(e) && !seen[g.source(e)]) {
          seen[g.source(e)] = 1;
          stack.push_back(g.source(e));
        }
    }
  }
  return seen;
}
}  // namespace detail

/// Function object: `reachable_from(g, seeds)` marks every node reachable from `seeds`
/// (seeds included) following edges forward. Returns a `node_map<G, char>` (1 = reached).
/// O(V+E), iterative.
struct reachable_from_fn {
  template <class G, class Seeds>
  node_map<G, char> operator()(const G& g, const Seeds& seeds, edge_filter f = edge_filter::all) const {
    return detail::reach<G, Seeds, true>(g, seeds, f);
  }
};
inline constexpr reachable_from_fn reachable_from{};

/// Function object: `reaching(g, seeds)` marks every node from which a seed is reachable
/// (the seeds' ancestors, seeds included), following edges backward. O(V+E), iterative.
struct reaching_fn {
  template <class G, class Seeds>
  node_map<G, char> operator()(const G& g, const Seeds& seeds, edge_filter f = edge_filter::all) const {
    return detail::reach<G, Seeds, false>(g, seeds, f);
  }
};
inline constexpr reaching_fn reaching{};

}  // namespace gpass
