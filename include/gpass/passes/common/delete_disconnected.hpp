// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file delete_disconnected.hpp
/// `gpass::delete_disconnected`: removes nodes that have no edge at all (seed 000, "Delete
/// Disconnected Nodes").

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>

namespace gpass {

namespace detail {

/// True when the schema of `n` (looked up in the global registry) marks it as part of the
/// graph's signature or as observable: such nodes are never removed by structural clean-ups.
template <class Node>
bool disconnected_pinned(const Node& n) {
  const op_schema* s = op_registry::global().find(n.domain, n.op);
  return s && (s->traits.interface || s->traits.side_effects || s->traits.terminator);
}

}  // namespace detail

/// Pass `delete-disconnected` (seed 000): deletes every node that has no inputs and no
/// outputs, i.e. no data edge and no control edge in either direction, in the graph and in
/// every function of its library (nested libraries included).
///
/// Kept even when isolated: nodes whose op schema (`op_registry::global().find(domain, op)`)
/// has the trait
/// - `interface` (`arg`, `function_entry`): they are the graph's signature; an unused
///   argument is still an argument callers pass, and deleting it would renumber the others;
/// - `side_effects` (`set_global`, `send`): running them is observable even with no edges;
/// - `terminator` (`return`, `retval`): they are the graph's results; a `return` with no
///   inputs is a function returning nothing, not an unused node.
/// Ops unknown to the registry are treated as pure. Unlike `dce`, this pass never looks at
/// liveness: a connected but unused chain stays; use `dce` for that.
///
/// Statistic: `removed-nodes` (`delete-disconnected.removed-nodes`). Provides
/// `fact_tags::no_disconnected`. O(V + E) over all graphs; no recursion over graph structure.
/// Called outside a pipeline, it names itself in the context for the duration of the run.
/// \code
///   gpass::pass_context ctx;
///   gpass::delete_disconnected(g, ctx);
///   ctx.statistics().at("delete-disconnected.removed-nodes");
/// \endcode
struct delete_disconnected_fn : pass_base<delete_disconnected_fn> {
  static constexpr std::string_view name = "delete-disconnected";
  static constexpr std::string_view description =
      "Delete nodes with no inputs and no outputs (keeps interface, side-effecting and terminator nodes)";
  using provides_facts = facts<fact_tags::no_disconnected>;

  template <class G>
  void run(G& g, pass_context& ctx) const {
    std::int64_t removed = 0;
    std::vector<typename G::node_id> doomed;
    for (G* cur : all_graphs(g)) {
      doomed.clear();
      for (auto v : cur->nodes())
        if (cur->in_degree(v) == 0 && cur->out_degree(v) == 0 && !detail::disconnected_pinned((*cur)[v]))
          doomed.push_back(v);
      for (auto v : doomed) cur->remove_node(v);  // O(1): the node has no edges
      removed += static_cast<std::int64_t>(doomed.size());
    }
    report_edits(ctx, {{"removed-nodes", removed}});
  }
};

/// The `delete-disconnected` pass object (see `delete_disconnected_fn`).
inline constexpr delete_disconnected_fn delete_disconnected{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void delete_disconnected_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
