// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file dce.hpp
/// `gpass::dce`: dead code elimination over data and control edges, in the graph and its
/// function library, and removal of functions no longer referenced.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/ops/op_memo.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>

namespace gpass {

namespace detail {

/// How DCE sees an op: observable (a result or an effect), interface, or pure.
enum class dce_role : unsigned char { pure = 0, interface = 1, observable = 2 };

/// Memoises the registry lookup per (domain, op) for one pass run (`op_memo`): a short table
/// search per node instead of a registry query (lock + key string) per node.
class dce_role_cache {
 public:
  dce_role operator()(std::string_view domain, std::string_view op) {
    return memo_(domain, op, [](std::string_view d, std::string_view o) {
      const op_schema* s = op_registry::global().find(d, o);
      if (s && (s->traits.terminator || s->traits.side_effects)) return dce_role::observable;
      if (s && s->traits.interface) return dce_role::interface;
      return dce_role::pure;
    });
  }

 private:
  op_memo<dce_role> memo_;
};

/// Splits the comma-separated `dce.keep` option into trimmed, non-empty names.
inline std::vector<std::string> dce_keep_names(std::string_view s) {
  std::vector<std::string> r;
  auto trim = [](std::string_view t) {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
    return t;
  };
  while (true) {
    auto comma = s.find(',');
    auto part = trim(s.substr(0, comma));
    if (!part.empty()) r.emplace_back(part);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return r;
}

}  // namespace detail

/// Pass `dce`: dead code elimination. Removes every node that no root needs, in the graph
/// and in every function it (transitively) references, then removes the functions that are
/// no longer referenced.
///
/// Roots, by op schema (`op_registry::global().find(domain, op)`):
/// - `terminator` (`return`, `retval`): the results;
/// - `side_effects` (`set_global`, `send`): observable effects;
/// - `interface` (`arg`, `function_entry`): the signature stays even when unused, as in ONNX
///   Runtime and MLIR, where an unused graph input or block argument is never dropped;
/// - the nodes named in the option `dce.keep` (comma-separated names of top-graph nodes; a
///   name that is no node is a `gpass::error` naming the pass, raised before any change).
/// A node is live when some root is reachable from it along data or control edges (a control
/// predecessor of a live node is live); liveness is per node, so a node with several
/// outputs stays whole when any output is used. Ops unknown to the registry are treated as
/// pure (removable when unused), and so are `stateful` ops such as `get_global`: reading
/// state is not an effect.
///
/// A graph with no result at all (no terminator, no side effect, no kept node) is left
/// unchanged with a warning: deleting all of it is almost always a graph whose outputs were
/// not marked. Then every function of its library is kept too.
///
/// Functions: a `function_ref` attribute (or list of them) of a surviving node, or of the
/// graph attributes, references a function, looked up in the referencing graph's library and
/// then in the enclosing ones. Referenced functions are cleaned the same way (their
/// `function_entry`/`return` are roots); unreferenced ones are removed.
///
/// Statistics: `removed-nodes` (over all graphs), `removed-functions`. Provides
/// `fact_tags::no_dead_code`. O(V + E) over all graphs, iterative (deep graphs are fine);
/// cycles (TF v1 loops) are handled; dead nodes go in one bulk `graph::remove_nodes`, so a
/// producer with many dead consumers is not searched once per consumer. Called outside a pipeline, it names itself in the
/// context for the duration of the run.
/// \code
///   gpass::pass_context ctx;
///   ctx.set_option("dce.keep", "debug_out");
///   gpass::dce(g, ctx);
///   ctx.statistics().at("dce.removed-nodes");
/// \endcode
struct dce_fn : pass_base<dce_fn> {
  static constexpr std::string_view name = "dce";
  /// Its result does not depend on dead nodes (a `dce` between two runs changes nothing for it).
  static constexpr bool dead_code_insensitive = true;
  static constexpr std::string_view description =
      "Dead code elimination: remove nodes no result, side effect or interface node needs, and unreferenced functions";
  using provides_facts = facts<fact_tags::no_dead_code>;
  static constexpr std::array options{option_spec{"keep", option_type::string, "", "nodes to keep as roots, ';' or ',' between names"}};

  template <class G>
  void run(G& g, pass_context& ctx) const {
    using node_id = typename G::node_id;

    // dce.keep is validated before anything changes.
    std::vector<node_id> keep;
    if (auto opt = option_text(ctx, "keep"))
      for (const auto& n : detail::dce_keep_names(*opt)) {
        auto v = g.find(n);
        if (!v) fail("option dce.keep names no node '" + n + "'");
        keep.push_back(*v);
      }

    struct item {
      G* graph;
      std::vector<G*> scope;  // owners of the enclosing libraries, outermost first
      std::string label;      // "graph" or "function 'f'", for diagnostics
    };
    std::int64_t removed_nodes = 0;
    std::int64_t removed_functions = 0;
    std::unordered_set<const G*> referenced;
    std::vector<G*> visited;
    std::vector<item> work;
    work.push_back({&g, {}, "graph"});
    bool top = true;
    while (!work.empty()) {
      item it = std::move(work.back());
      work.pop_back();
      G& cur = *it.graph;
      visited.push_back(&cur);
      bool has_roots = false;
      std::vector<G*> chain = it.scope;
      chain.push_back(&cur);
      // Marks the function `fname` referenced, resolving it in this graph's library first.
      auto reference = [&](std::string_view fname) {
        for (std::size_t i = chain.size(); i-- > 0;) {
          auto& lib = chain[i]->functions();
          auto f = lib.find(fname);
          if (f == lib.end() || !f->second) continue;
          if (referenced.insert(f->second.get()).second)
            work.push_back({f->second.get(), std::vector<G*>(chain.begin(), chain.begin() + i + 1),
                            "function '" + f->first + "'"});
          return;
        }
      };
      removed_nodes += run_one(cur, top ? keep : std::vector<node_id>{}, has_roots, ctx, it.label, reference);
      top = false;
      if (!has_roots)  // nothing is known to be unused: keep the whole library
        for (auto& [fname, f] : cur.functions()) reference(fname);
      if constexpr (std::is_same_v<typename G::attrs_type, attribute_map>)
        for_each_function_ref(cur.attrs(), reference);
    }

    // Unreferenced functions go (with any library nested in them).
    for (G* owner : visited) {
      auto& lib = owner->functions();
      for (auto f = lib.begin(); f != lib.end();) {
        if (f->second && referenced.contains(f->second.get())) {
          ++f;
          continue;
        }
        std::vector<const G*> gone{f->second.get()};
        while (!gone.empty()) {
          const G* x = gone.back();
          gone.pop_back();
          if (!x) continue;
          ++removed_functions;
          for (const auto& [n, sub] : x->functions()) gone.push_back(sub.get());
        }
        f = lib.erase(f);
      }
    }
    ctx.add_statistic("removed-nodes", removed_nodes);
    ctx.add_statistic("removed-functions", removed_functions);
    ctx.report_removed_dead_code(removed_nodes != 0 || removed_functions != 0);
  }

 private:
  /// DCE of one graph (not its library). Returns the number of nodes removed; sets
  /// `has_roots` to false (and warns) when the graph has no result and is left unchanged.
  /// Calls `on_ref(name)` for each function referenced by a node that stays.
  ///
  /// Liveness: a forward pass classifies the nodes (roots are live) and lists them; then one
  /// backward sweep over that list marks the producers and control predecessors of each live
  /// node live. Nodes usually come after their producers, so this sweep alone settles almost
  /// everything; a producer marked live after the sweep has passed it (a node added late, a
  /// cycle) goes on a worklist finished by an iterative walk. O(V + E) either way. (Sweeping
  /// a vector rather than the node list lets the processor fetch many nodes at once: about
  /// twice as fast on large graphs as a walk of the list or a depth-first search.)
  template <class G, class OnRef>
  static std::int64_t run_one(G& g, const std::vector<typename G::node_id>& keep, bool& has_roots,
                              pass_context& ctx, const std::string& label, OnRef&& on_ref) {
    using node_id = typename G::node_id;
    constexpr unsigned char live_bit = 1, swept_bit = 2;
    node_map<G, unsigned char> state(g, 0);
    for (auto k : keep) state[k] |= live_bit;
    bool observable = !keep.empty();
    std::vector<node_id> order;
    order.reserve(g.num_nodes());
    {
      detail::dce_role_cache role;
      for (auto v : g.nodes()) {
        order.push_back(v);
        auto r = role(g[v].domain, g[v].op);
        if (r == detail::dce_role::pure) continue;
        state[v] |= live_bit;
        observable = observable || r == detail::dce_role::observable;
      }
    }
    std::vector<node_id> late;  // marked live after the sweep passed them
    if (observable)
      for (std::size_t i = order.size(); i-- > 0;) {
        const node_id v = order[i];
        unsigned char& s = state[v];
        s |= swept_bit;
        if (!(s & live_bit)) continue;
        for (auto e : g.in_edges(v)) {
          unsigned char& ps = state[g.source(e)];
          if (ps & live_bit) continue;
          ps |= live_bit;
          if (ps & swept_bit) late.push_back(g.source(e));
        }
      }
    has_roots = observable;
    if (!observable) {
      if (!g.empty())
        ctx.warn(label + " has no result (no terminator, side-effecting or kept node): left unchanged");
      for (auto v : order) for_each_function_ref(g[v].attrs, on_ref);
      return 0;
    }
    while (!late.empty()) {
      node_id v = late.back();
      late.pop_back();
      for (auto e : g.in_edges(v)) {
        unsigned char& ps = state[g.source(e)];
        if (ps & live_bit) continue;
        ps |= live_bit;
        late.push_back(g.source(e));
      }
    }
    std::vector<node_id> dead;
    for (auto v : order) {
      if (state[v] & live_bit) for_each_function_ref(g[v].attrs, on_ref);
      else dead.push_back(v);
    }
    // Bulk removal: O(V + E) however many dead consumers a live node has.
    g.remove_nodes(dead);
    return static_cast<std::int64_t>(dead.size());
  }
};

/// The `dce` pass object (see `dce_fn`).
inline constexpr dce_fn dce{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void dce_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
