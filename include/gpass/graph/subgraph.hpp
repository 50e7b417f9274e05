// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file subgraph.hpp
/// `gpass::extract_subgraph`: copy a set of nodes (and the edges among them) into a new graph.

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>

namespace gpass {

/// The result of `extract_subgraph`: the new graph, and the inputs that crossed into the set
/// from outside (now empty input ports in the new graph), as (inner node name, port,
/// outer producer name, outer port).
template <class G>
struct subgraph_result {
  G graph;
  struct boundary_input {
    std::string node;
    int port;
    std::string producer;
    int producer_port;
  };
  std::vector<boundary_input> inputs;
};

/// Function object: `extract_subgraph(g, nodes)` copies the nodes in `nodes` (any range of
/// `node_id`) into a new graph with the same names, attributes and the data and control edges
/// between them. Data inputs from outside the set become empty ports and are listed in
/// `result.inputs`; control edges from outside are dropped. Node order follows `g`. O(V+E).
struct extract_subgraph_fn {
  template <class G, class Range>
  subgraph_result<G> operator()(const G& g, const Range& nodes) const {
    using node_id = typename G::node_id;
    node_map<G, char> in_set(g, 0);
    for (auto v : nodes) in_set[v] = 1;
    subgraph_result<G> r;
    std::unordered_map<node_id, node_id> map;
    for (auto v : g.nodes())
      if (in_set[v]) map.emplace(v, r.graph.add_node(g[v]));
    for (auto v : g.nodes()) {
      if (!in_set[v]) continue;
      node_id w = map.at(v);
      for (std::size_t i = 0; i < g.num_inputs(v); ++i) {
        auto in = g.input(v, static_cast<int>(i));
        if (!in.empty && in_set[in.node]) {
          r.graph.connect(map.at(in.node), in.port, w, static_cast<int>(i));
        } else {
          r.graph.set_num_inputs(w, std::max(r.graph.num_inputs(w), i + 1));
          if (!in.empty) r.inputs.push_back({g[v].name, static_cast<int>(i), g[in.node].name, in.port});
        }
      }
      for (auto c : g.control_inputs(v))
        if (in_set[c]) r.graph.add_control(map.at(c), w);
    }
    return r;
  }
};
inline constexpr extract_subgraph_fn extract_subgraph{};

}  // namespace gpass
