// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file insert_get_tuple.hpp
/// `gpass::insert_get_tuple`: routes every read of one output of a multi-output node through
/// a `get_tuple` node (seed 000, "Insert Get Tuple"), keeping the ports of v1 control flow.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/passes/tf/detail/control_flow.hpp>

namespace gpass {

namespace detail {

/// True when `v` is a `get_tuple {index = port}` (a port selector of its producer).
template <class G>
bool is_port_selector(const G& g, typename G::node_id v, int port) {
  const auto& n = g[v];
  return is_core_op(n, "get_tuple") && get_or<std::int64_t>(n.attrs, "index", -1) == port;
}

/// True when the outputs of `v` are routed through `get_tuple` nodes: several outputs, and
/// not a v1 control-flow node (their ports are kept) nor a `function_entry` (arguments).
template <class G>
bool splits_outputs(const G& g, typename G::node_id v) {
  const auto& n = g[v];
  return n.outputs.size() > 1 && !is_v1_control_flow(n) && !is_core_op(n, "function_entry");
}

}  // namespace detail

/// Pass `insert-get-tuple` (seed 000, "Insert Get Tuple"): TensorFlow's `node:i` becomes an
/// explicit `get_tuple`. Every data edge `X:i -> Y` where `X` has more than one output port
/// is rerouted `X:i -> get_tuple {index = i} -> Y`, through one `get_tuple` node shared by all
/// readers of `(X, i)` (named `X/get_tuple_i`, typed like the port), in the graph and in every
/// function of its library.
///
/// The representation (see `tests/data/ir/seed000_get_tuple.gir`): `X` keeps its output ports,
/// the `get_tuple`'s input edge leaves port `i` and its `index` is `i`; a `get_tuple` of a
/// non-tuple value is the value of the port it reads (see the `get_tuple` type function).
///
/// Left as they are, unlike the seed, which collapsed their ports: reads of TF v1
/// control-flow nodes (Enter, Exit, Merge, Switch, NextIteration, LoopCond), so `Switch:0`
/// and `Switch:1` stay distinct edges; reads of `function_entry` (the arguments of a
/// function); reads of ports whose type is a tuple (a `get_tuple` there would extract an
/// element instead); readers that already are such a `get_tuple` (they become the shared
/// node), so running the pass twice changes nothing. Control edges are untouched.
///
/// Statistics: `inserted` (`get_tuple` nodes made), `rerouted` (edges moved). Provides
/// `fact_tags::get_tuple_inserted`; `fold_get_tuple` is the inverse. O(V + E), no recursion.
/// \code
///   // %s:3 = Split(%x) {...}   %y = Relu(%s:1)
///   gpass::pass_context ctx;
///   gpass::insert_get_tuple(g, ctx);
///   // %s/get_tuple_1 = get_tuple(%s:1) {index = 1}   %y = Relu(%s/get_tuple_1)
/// \endcode
struct insert_get_tuple_fn : pass_base<insert_get_tuple_fn> {
  static constexpr std::string_view name = "insert-get-tuple";
  static constexpr std::string_view description =
      "Route each read X:i of a multi-output node through a shared get_tuple {index = i} (v1 control flow keeps its ports)";
  using provides_facts = facts<fact_tags::get_tuple_inserted>;

  template <class G>
  void run(G& g, pass_context& ctx) const {
    using node_id = typename G::node_id;
    std::int64_t inserted = 0, rerouted = 0;
    for (G* cur : all_graphs(g)) {
      G& h = *cur;
      std::vector<node_id> producers;
      for (auto v : h.nodes())
        if (detail::splits_outputs(h, v)) producers.push_back(v);
      for (auto x : producers) {
        std::vector<std::optional<node_id>> shared(h.num_outputs(x));
        const auto uses = h.uses(x);
        for (const auto& u : uses)
          if (!shared[u.src_port] && detail::is_port_selector(h, u.node, u.src_port)) shared[u.src_port] = u.node;
        for (const auto& u : uses) {
          const int p = u.src_port;
          if (detail::is_port_selector(h, u.node, p) || h[x].outputs[p].is_tuple()) continue;
          if (!shared[p]) {
            typename G::node_type n{};
            n.name = h.unique_name(h[x].name + "/get_tuple_" + std::to_string(p));
            n.op = "get_tuple";
            n.attrs.emplace("index", static_cast<std::int64_t>(p));
            n.device = h[x].device;
            n.outputs = {h[x].outputs[p]};
            shared[p] = h.add_node(std::move(n));
            h.connect(x, p, *shared[p], 0);
            ++inserted;
          }
          h.set_input(u.node, u.dst_port, *shared[p], 0);
          ++rerouted;
        }
      }
    }
    report_edits(ctx, {{"inserted", inserted}, {"rerouted", rerouted}});
  }
};

/// The `insert-get-tuple` pass object (see `insert_get_tuple_fn`).
inline constexpr insert_get_tuple_fn insert_get_tuple{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void insert_get_tuple_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
