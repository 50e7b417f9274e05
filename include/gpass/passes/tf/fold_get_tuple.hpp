// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fold_get_tuple.hpp
/// `gpass::fold_get_tuple`: bypasses the `get_tuple` nodes that only select a port (the
/// inverse of `insert_get_tuple`), leaving plain multi-port IR.

#include <cstdint>
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

/// True when the `get_tuple` node `v` only selects the port it reads: its input is `X:i` with
/// `index == i`, that port's type is not a tuple, `X` is not a `make_tuple`, and either the
/// type is known or `X` has several outputs (an unknown single output may be a tuple).
template <class G>
bool is_foldable_get_tuple(const G& g, typename G::node_id v) {
  if (!is_core_op(g[v], "get_tuple") || g.num_inputs(v) != 1) return false;
  auto in = g.input(v, 0);
  if (in.empty || get_or<std::int64_t>(g[v].attrs, "index", -1) != in.port) return false;
  const auto& x = g[in.node];
  if (is_core_op(x, "make_tuple")) return false;
  const type& t = x.outputs[static_cast<std::size_t>(in.port)];
  if (t.is_tuple()) return false;
  return !t.is_unknown() || x.outputs.size() > 1;
}

}  // namespace detail

/// Pass `fold-get-tuple`: the inverse of `insert_get_tuple`. Every `get_tuple` that only
/// selects a port (`get_tuple(X:i) {index = i}` where port `i` does not carry a tuple; see
/// `detail::is_foldable_get_tuple`) is removed and its readers read `X:i` directly, in the
/// graph and in every function of its library. Its control predecessors become control
/// predecessors of its readers, and its control successors follow `X`. `get_tuple`s of real
/// tuples (from `make_tuple`, or typed `tuple<...>`) stay.
///
/// Statistic: `folded`. Invalidates `fact_tags::get_tuple_inserted`. O(V + E), no recursion.
/// \code
///   // %s/get_tuple_1 = get_tuple(%s:1) {index = 1}   %y = Relu(%s/get_tuple_1)
///   gpass::fold_get_tuple(g, ctx);
///   // %y = Relu(%s:1)
/// \endcode
struct fold_get_tuple_fn : pass_base<fold_get_tuple_fn> {
  static constexpr std::string_view name = "fold-get-tuple";
  static constexpr std::string_view description =
      "Bypass get_tuple nodes that only select an output port (the inverse of insert-get-tuple)";
  using provides_facts = facts<>;
  using invalidates_facts = facts<fact_tags::get_tuple_inserted>;

  template <class G>
  void run(G& g, pass_context& ctx) const {
    using node_id = typename G::node_id;
    std::int64_t folded = 0;
    for (G* cur : all_graphs(g)) {
      G& h = *cur;
      std::vector<node_id> doomed;
      for (auto v : h.nodes())
        if (detail::is_foldable_get_tuple(h, v)) doomed.push_back(v);
      for (auto v : doomed) {
        const auto in = h.input(v, 0);
        const auto preds = h.control_inputs(v);
        const auto succs = h.control_outputs(v);
        if (!preds.empty()) {
          for (const auto& u : h.uses(v))
            for (auto c : preds) h.add_control(c, u.node);
          for (auto s : succs)
            for (auto c : preds) h.add_control(c, s);
        }
        h.replace_uses(v, 0, in.node, in.port);
        for (auto s : succs) h.add_control(in.node, s);
      }
      h.remove_nodes(doomed);
      folded += static_cast<std::int64_t>(doomed.size());
    }
    report_edits(ctx, {{"folded", folded}});
  }
};

/// The `fold-get-tuple` pass object (see `fold_get_tuple_fn`).
inline constexpr fold_get_tuple_fn fold_get_tuple{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void fold_get_tuple_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
