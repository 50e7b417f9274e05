// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file delete_constant_ancestors.hpp
/// `gpass::delete_constant_ancestors`: the "delete-constant-ancestors" pass (seed 000: nodes
/// whose value inference knows become constants; what only computed them goes).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/graph/edge.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/passes/detail/constants.hpp>

namespace gpass {

/// Pass "delete-constant-ancestors": every node whose single output has a fully known value
/// (the `_value` attribute written by `gpass::infer_values`) becomes a constant node holding
/// that value (`tf::Const` in TensorFlow graphs, ONNX `Constant` otherwise; see
/// `detail::make_constant_node`), keeping its name, uses and control inputs; then its
/// ancestors that no longer have any consumer (data or control) are deleted, transitively.
///
/// - `_incomplete_value` (a partly known value, `Shape(x)` of `x: f32[1,?,3]`) never allows a
///   replacement (seed 000): the computation stays.
/// - Never replaced: constants, nodes with several outputs, and ops with effects, results,
///   interface, hidden state or v1 control flow (by their schema). Never deleted: those same
///   ops (`detail::op_is_pure`); a dead Enter or Merge is left to `dce`.
/// - Runs on the graph and on every function of its library (nested ones too); a function's
///   `_value` holds for all its calls (inference joins them).
/// - Statistics: `replaced-nodes`, `deleted-nodes`. O(V + E): one countdown of consumers per
///   node, deleted nodes removed in bulk (`graph::remove_nodes`).
/// Requires `fact_tags::values_inferred`; provides `fact_tags::constant_ancestors_deleted`.
/// \code
///   gpass::infer_values(g, ctx);
///   gpass::delete_constant_ancestors(g, ctx);   // StridedSlice(Shape(x)) with x: f32[1,2,3] -> Const 2
/// \endcode
struct delete_constant_ancestors_fn : pass_base<delete_constant_ancestors_fn> {
  static constexpr std::string_view name = "delete-constant-ancestors";
  static constexpr std::string_view description = "Replace known values by constants and delete the ancestors only they used";
  using requires_facts = facts<fact_tags::values_inferred>;
  using provides_facts = facts<fact_tags::constant_ancestors_deleted>;

  template <class G>
  void run(G& g, pass_context& ctx) const {
    std::int64_t replaced = 0, deleted = 0;
    for (G* cur : all_graphs(g)) run_one(*cur, g, replaced, deleted);
    report_edits(ctx, {{"replaced-nodes", replaced}, {"deleted-nodes", deleted}});
  }

 private:
  template <class G>
  static void run_one(G& g, const G& top, std::int64_t& replaced, std::int64_t& deleted) {
    using node_id = typename G::node_id;
    std::vector<std::pair<node_id, tensor>> targets;
    for (auto v : g.nodes()) {
      const auto& n = g[v];
      if (n.outputs.size() != 1 || g.num_inputs(v) == 0 || detail::is_constant_node(n)) continue;
      auto it = n.attrs.find("_value");
      if (it == n.attrs.end() || !it->second.template is<tensor>()) continue;
      if (it->second.template as<tensor>().empty() || !detail::op_is_pure(n.domain, n.op)) continue;
      targets.emplace_back(v, it->second.template as<tensor>());
    }
    if (targets.empty()) return;
    // Producers whose consumer count drops to zero are deleted (pure ones), transitively. The
    // countdown runs on the graph as it is: targets lose their data inputs; a target may die
    // itself (all its consumers died), and is then deleted instead of replaced.
    node_map<G, std::size_t> consumers(g, 0);
    for (auto v : g.nodes()) consumers[v] = g.out_degree(v);
    node_map<G, char> is_target(g, 0), dead(g, 0);
    for (const auto& t : targets) is_target[t.first] = 1;
    std::vector<node_id> dying, gone;
    auto release = [&](node_id s) {
      if (dead[s] || consumers[s] == 0) return;
      if (--consumers[s] != 0) return;
      const auto& sn = g[s];
      if (!detail::op_is_pure(sn.domain, sn.op)) return;
      dead[s] = 1;
      dying.push_back(s);
    };
    for (const auto& t : targets)
      for (const auto& in : g.inputs(t.first))
        if (!in.empty) release(in.node);
    while (!dying.empty()) {
      node_id d = dying.back();
      dying.pop_back();
      gone.push_back(d);
      for (auto e : g.in_edges(d))
        if (!(is_target[d] && g[e].src_port != control_port)) release(g.source(e));  // a target's data inputs went already
    }
    for (auto& [v, value] : targets) {
      if (dead[v]) continue;
      detail::replace_by_constant(g, v, std::move(value), detail::tf_constants(top, g[v].domain));
      ++replaced;
    }
    deleted += static_cast<std::int64_t>(gone.size());
    g.remove_nodes(gone);
  }
};

/// The `delete-constant-ancestors` pass object (see `delete_constant_ancestors_fn`).
inline constexpr delete_constant_ancestors_fn delete_constant_ancestors{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void delete_constant_ancestors_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
