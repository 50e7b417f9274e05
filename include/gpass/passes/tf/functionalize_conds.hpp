// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file functionalize_conds.hpp
/// `gpass::functionalize_conds`: TensorFlow v1 conditionals (`tf.cond`'s Switch / Merge
/// nodes) to functional `if` nodes with then and else functions.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <numeric>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/passes/tf/detail/control_flow.hpp>

namespace gpass {

namespace detail {

/// Functionalizes the conditionals of one acyclic graph `g` (the top graph or a function of
/// `top`'s library); new functions go to `top`'s library. See `functionalize_conds_fn`.
///
/// Each node gets a *branch state*: the set of (predicate, branch) pairs under which it runs,
/// computed in topological order as the union of its inputs' states, where output `b` of a
/// Switch on predicate `p` adds `(p, b)` and a Merge removes the one pair in which its two
/// inputs differ (the predicate it joins). A conditional is a predicate with the states
/// `S` (its context) of its Switches and Merges; its then (else) nodes are those whose state
/// is `S` plus `(p, true)` (`(p, false)`). Conditionals are converted deepest context first,
/// so an inner conditional is already an `if` node inside its outer branch; those sharing a
/// predicate and context are told apart by the connected parts of their branches.
template <class G>
class cond_functionalizer {
  using node_id = typename G::node_id;
  static constexpr std::string_view pass = "functionalize-conds";

  struct pred_key {
    std::uint64_t serial;
    int port;
    friend auto operator<=>(const pred_key&, const pred_key&) = default;
  };
  struct entry {
    pred_key pred;
    bool branch;
    friend auto operator<=>(const entry&, const entry&) = default;
  };
  using state = std::vector<entry>;  // sorted by predicate; one branch per predicate

  enum side : unsigned char { none = 0, then_side, else_side, switch_node, merge_node };

 public:
  cond_functionalizer(G& g, G& top, std::vector<G*>& new_functions)
      : g_(g), top_(top), new_functions_(new_functions), state_of_(g, 0), side_(g, none), removed_(g.serial_bound(), 0) {}

  /// Converts every conditional. Returns the number of `if` nodes made.
  std::int64_t run() {
    bool any = false;
    for (auto v : g_.nodes())
      if (is_core_op(g_[v], "Switch") || is_core_op(g_[v], "Merge")) any = true;
    if (!any) return 0;
    compute_states();
    // conditionals, deepest context first
    std::vector<std::pair<pred_key, int>> keys;
    for (const auto& [k, c] : conds_) keys.push_back(k);
    std::stable_sort(keys.begin(), keys.end(),
                     [&](const auto& a, const auto& b) { return states_[a.second].size() > states_[b.second].size(); });
    std::int64_t made = 0;
    for (const auto& k : keys) made += convert(k);
    // one bulk removal (a predicate shared by many conditionals keeps a long edge list)
    g_.remove_nodes(dead_);
    for (auto v : g_.nodes())
      if (is_core_op(g_[v], "Switch") || is_core_op(g_[v], "Merge"))
        throw_pass_error(pass, "v1 conditional node left over (not part of a conditional this pass understands)", g_[v].name,
                       g_[v].op);
    return made;
  }

 private:
  [[noreturn]] void fail(node_id v, std::string message) const { throw_pass_error(pass, std::move(message), g_[v].name, g_[v].op); }

  // ---- states ----------------------------------------------------------------------------

  int intern(state s) {
    auto [it, fresh] = ids_.try_emplace(s, static_cast<int>(states_.size()));
    if (fresh) states_.push_back(std::move(s));
    return it->second;
  }
  // The union of two states; -1 when they take different branches of one predicate.
  int join(int a, int b) {
    if (a == b || b == 0) return a;
    if (a == 0) return b;
    auto key = std::make_pair(std::min(a, b), std::max(a, b));
    if (auto it = joins_.find(key); it != joins_.end()) return it->second;
    const state &x = states_[a], &y = states_[b];
    state r;
    std::size_t i = 0, j = 0;
    int result = 0;
    while (i < x.size() || j < y.size()) {
      if (j == y.size() || (i < x.size() && x[i].pred < y[j].pred)) r.push_back(x[i++]);
      else if (i == x.size() || y[j].pred < x[i].pred) r.push_back(y[j++]);
      else {
        if (x[i].branch != y[j].branch) {
          result = -1;
          break;
        }
        r.push_back(x[i++]);
        ++j;
      }
    }
    if (result == 0) result = intern(std::move(r));
    joins_.emplace(key, result);
    return result;
  }
  int with(int s, entry e) {
    state r = states_[s];
    auto pos = std::lower_bound(r.begin(), r.end(), e, [](const entry& a, const entry& b) { return a.pred < b.pred; });
    if (pos != r.end() && pos->pred == e.pred) return pos->branch == e.branch ? s : -1;
    r.insert(pos, e);
    return intern(std::move(r));
  }
  // The predicate of a Switch, through Identity nodes (tf.cond switches its pivot on `pred`
  // and its values on `Identity(pred)`: one predicate).
  pred_key predicate_of(node_id sw) const {
    auto p = g_.input(sw, 1);
    while (g_[p.node].op == "Identity" && (g_[p.node].domain.empty() || g_[p.node].domain == "tf") &&
           g_.num_inputs(p.node) >= 1 && !g_.input(p.node, 0).empty)
      p = g_.input(p.node, 0);
    return {g_.serial(p.node), p.port};
  }
  // The state of the value `u:port` (a Switch output adds its branch).
  int value_state(node_id u, int port) {
    int s = state_of_[u];
    if (is_core_op(g_[u], "Switch")) {
      s = with(s, {predicate_of(u), port == 1});
      if (s < 0) fail(u, "Switch takes both branches of its own predicate");
    }
    return s;
  }
  static bool contains(const state& big, const state& small) {
    return std::includes(big.begin(), big.end(), small.begin(), small.end());
  }

  void compute_states() {
    states_.push_back({});
    ids_.emplace(state{}, 0);
    std::vector<node_id> order;
    try {
      order = topological_order(g_);
    } catch (const error& e) {
      throw e.with_pass(std::string(pass));
    }
    for (auto v : order) {
      const auto& n = g_[v];
      if (is_core_op(n, "Switch")) {
        if (g_.num_inputs(v) != 2 || g_.input(v, 0).empty || g_.input(v, 1).empty) fail(v, "Switch needs a value and a predicate");
      }
      if (is_core_op(n, "Merge")) {
        std::vector<int> ins;
        for (const auto& in : g_.inputs(v))
          if (!in.empty) ins.push_back(value_state(in.node, in.port));
        if (ins.size() != 2) fail(v, "a conditional's Merge must have two inputs, has " + std::to_string(ins.size()));
        const state &a = states_[ins[0]], &b = states_[ins[1]];
        state only_a, only_b, common;
        std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(only_a));
        std::set_difference(b.begin(), b.end(), a.begin(), a.end(), std::back_inserter(only_b));
        std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
        // the two inputs differ in the branch of one predicate (or one input comes from outside
        // the conditional: it is read by the other branch)
        const bool paired = only_a.size() == 1 && only_b.size() == 1 && only_a[0].pred == only_b[0].pred;
        const bool one_sided = only_a.size() + only_b.size() == 1;
        if (!paired && !one_sided) fail(v, "Merge does not join the two branches of one conditional");
        const pred_key p = only_a.empty() ? only_b[0].pred : only_a[0].pred;
        int s = intern(std::move(common));
        // (control inputs from inside the branches do not count: the Merge joins them)
        state_of_[v] = s;
        conds_[{p, s}].merges.push_back(v);
        continue;
      }
      int s = 0;
      for (const auto& in : g_.inputs(v)) {
        if (in.empty) continue;
        s = join(s, value_state(in.node, in.port));
        if (s < 0) fail(v, "reads values from both branches of a conditional (without a Merge)");
      }
      for (auto c : g_.control_inputs(v)) {
        s = join(s, state_of_[c]);
        if (s < 0) fail(v, "control inputs from both branches of a conditional");
      }
      state_of_[v] = s;
      if (is_core_op(n, "Switch")) conds_[{predicate_of(v), s}].switches.push_back(v);
      for (const auto& e : states_[s]) (e.branch ? then_nodes_ : else_nodes_)[e.pred].emplace_back(g_.serial(v), v);
    }
  }

  // ---- one conditional (predicate and context) --------------------------------------------

  struct cond_parts {
    std::vector<node_id> switches, merges;
  };

  std::int64_t convert(const std::pair<pred_key, int>& key) {
    const pred_key p = key.first;
    const int ctx = key.second;
    const cond_parts& parts = conds_[key];
    const state& S = states_[ctx];
    // candidates: the Switches, Merges and branch nodes of this predicate in this context
    std::vector<node_id> cand;
    auto add = [&](node_id v, side s) {
      if (side_[v] != none) return;
      side_[v] = s;
      cand.push_back(v);
    };
    for (auto v : parts.switches) add(v, switch_node);
    for (auto v : parts.merges) add(v, merge_node);
    for (int b = 0; b < 2; ++b) {
      auto& bucket = b ? then_nodes_ : else_nodes_;
      auto it = bucket.find(p);
      if (it == bucket.end()) continue;
      for (const auto& [serial, v] : it->second)
        if (!removed_[serial] && contains(states_[state_of_[v]], S)) add(v, b ? then_side : else_side);
    }
    // connected parts: edges among candidates, except those into Switches and out of Merges
    std::unordered_map<std::uint64_t, std::size_t> local;
    for (std::size_t i = 0; i < cand.size(); ++i) local.emplace(g_.serial(cand[i]), i);
    std::vector<std::size_t> up(cand.size());
    std::iota(up.begin(), up.end(), std::size_t{0});
    auto find = [&](std::size_t i) {
      while (up[i] != i) i = up[i] = up[up[i]];
      return i;
    };
    for (std::size_t i = 0; i < cand.size(); ++i) {
      const node_id v = cand[i];
      if (side_[v] == switch_node) continue;
      for (auto e : g_.in_edges(v)) {
        const node_id u = g_.source(e);
        if (side_[u] == none || side_[u] == merge_node) continue;
        auto lu = local.find(g_.serial(u));
        if (lu == local.end()) continue;
        up[find(i)] = find(lu->second);
      }
    }
    std::map<std::size_t, std::vector<node_id>> groups;  // by root, in candidate order
    for (std::size_t i = 0; i < cand.size(); ++i) groups[find(i)].push_back(cand[i]);
    std::vector<std::vector<node_id>> comps;
    for (auto& [r, members] : groups) comps.push_back(std::move(members));
    std::sort(comps.begin(), comps.end(), [&](const auto& a, const auto& b) { return g_.serial(a.front()) < g_.serial(b.front()); });
    // each part sees only its own sides (another part's Merge is an outside value to it)
    std::unordered_map<std::uint64_t, side> side_of;
    for (auto v : cand) side_of.emplace(g_.serial(v), static_cast<side>(side_[v]));
    for (auto v : cand) side_[v] = none;
    std::int64_t made = 0;
    std::vector<node_id> dead_switches;
    for (auto& comp : comps) {
      bool has_body = false;
      bool has_merge = false, pure = true;
      for (auto v : comp) {
        const side sd = side_of.at(g_.serial(v));
        has_body = has_body || sd != switch_node;
        has_merge = has_merge || sd == merge_node;
        const op_schema* sc = op_registry::global().find(g_[v].domain, g_[v].op);
        pure = pure && sc && !sc->traits.side_effects && !sc->traits.stateful && !sc->traits.terminator;
      }
      if (!has_body && !pure) fail(comp.front(), "Switch whose outputs lead to no conditional branch");
      if (!has_merge && pure) {  // nothing outside reads it and it does nothing (a tf.cond pivot)
        dead_switches.insert(dead_switches.end(), comp.begin(), comp.end());
        continue;
      }
      for (auto v : comp) side_[v] = side_of.at(g_.serial(v));
      convert_part(p, ctx, comp);
      ++made;
    }
    for (auto v : dead_switches) removed_[g_.serial(v)] = 1;  // parts with no effect: deleted
    dead_.insert(dead_.end(), dead_switches.begin(), dead_switches.end());
    return made;
  }

  void convert_part(const pred_key& p, int ctx, std::vector<node_id>& comp) {
    std::sort(comp.begin(), comp.end(), [&](node_id a, node_id b) { return g_.serial(a) < g_.serial(b); });
    std::vector<node_id> switches, merges, then_nodes, else_nodes;
    for (auto v : comp) {
      switch (side_[v]) {
        case switch_node: switches.push_back(v); break;
        case merge_node: merges.push_back(v); break;
        case then_side: then_nodes.push_back(v); break;
        case else_side: else_nodes.push_back(v); break;
        default: break;
      }
    }
    const node_id anchor = merges.empty() ? comp.front() : merges.front();
    for (auto v : comp) {
      const op_schema* s = op_registry::global().find(g_[v].domain, g_[v].op);
      if (side_[v] != switch_node && side_[v] != merge_node && s && (s->traits.terminator || s->traits.interface))
        fail(v, "a value of a conditional branch is used outside the conditional without a Merge");
    }
    for (auto m : merges)
      if (!g_.uses(m, 1).empty()) fail(m, "the value_index output (1) of a conditional's Merge is used");
    if (switches.empty()) fail(anchor, "conditional without a Switch");
    const auto pred_in = g_.input(switches.front(), 1);

    // captures: the Switches' inputs, then values read from outside the conditional
    std::vector<std::pair<node_id, int>> captures;
    std::map<std::pair<std::uint64_t, int>, int> capture_of;
    auto capture = [&](node_id u, int port) {
      auto [it, fresh] = capture_of.try_emplace({g_.serial(u), port}, static_cast<int>(captures.size()));
      if (fresh) captures.emplace_back(u, port);
      return it->second;
    };
    std::unordered_map<std::uint64_t, int> switch_arg;
    for (auto s : switches) {
      auto in = g_.input(s, 0);
      switch_arg[g_.serial(s)] = capture(in.node, in.port);
    }
    // how side `b` reads `u:port` when `u` is not one of its nodes
    auto outside = [&](node_id u, int port, side b, bool scan) -> outside_read {
      if (side_[u] == switch_node) {
        if ((port == 1) != (b == then_side))
          fail(u, std::string("the ") + (b == then_side ? "then" : "else") + " branch reads the other branch's output of this Switch");
        return {switch_arg.at(g_.serial(u))};
      }
      if (side_[u] == then_side || side_[u] == else_side) fail(u, "read by the other branch of its conditional");
      if (side_[u] == merge_node) fail(u, "a conditional's Merge read inside its own branches");
      if (is_free_constant(g_, u)) return {};
      if (scan) return {capture(u, port)};
      return {capture_of.at({g_.serial(u), port})};
    };
    std::vector<std::pair<node_id, int>> then_results, else_results;
    for (auto m : merges) {
      // 0: from outside the conditional (read by the branch the other input does not take)
      std::vector<std::pair<std::pair<node_id, int>, int>> ins;  // (value, 1 then / 2 else / 0)
      for (const auto& in : g_.inputs(m)) {
        if (in.empty) continue;
        int b = 0;
        for (const auto& x : states_[value_state(in.node, in.port)])
          if (x.pred == p) b = x.branch ? 1 : 2;
        ins.push_back({{in.node, in.port}, b});
      }
      if (ins.size() == 2 && ins[0].second == 0) ins[0].second = 3 - ins[1].second;
      if (ins.size() == 2 && ins[1].second == 0) ins[1].second = 3 - ins[0].second;
      if (ins.size() != 2 || ins[0].second == ins[1].second) fail(m, "the Merge does not join the two branches of its conditional");
      then_results.push_back(ins[0].second == 1 ? ins[0].first : ins[1].first);
      else_results.push_back(ins[0].second == 2 ? ins[0].first : ins[1].first);
    }
    // scan reads of both sides (and the results) to list the captures before building
    auto scan_side = [&](const std::vector<node_id>& nodes, side b) {
      for (auto v : nodes)
        for (const auto& in : g_.inputs(v))
          if (!in.empty && side_[in.node] != b) outside(in.node, in.port, b, true);
    };
    scan_side(then_nodes, then_side);
    scan_side(else_nodes, else_side);
    for (const auto& [u, port] : then_results)
      if (side_[u] != then_side) outside(u, port, then_side, true);
    for (const auto& [u, port] : else_results)
      if (side_[u] != else_side) outside(u, port, else_side, true);

    std::vector<type> arg_types;
    for (const auto& [u, port] : captures) arg_types.push_back(g_[u].outputs[static_cast<std::size_t>(port)]);
    auto keep_control = [&](node_id, node_id dst) { return !is_constant_op(g_[dst]); };
    G then_fn = extract_function(g_, then_nodes, [&](node_id v) { return side_[v] == then_side; }, arg_types, then_results,
                                 [&](node_id u, int port) { return outside(u, port, then_side, false); }, keep_control);
    G else_fn = extract_function(g_, else_nodes, [&](node_id v) { return side_[v] == else_side; }, arg_types, else_results,
                                 [&](node_id u, int port) { return outside(u, port, else_side, false); }, keep_control);

    // the if node: named after the Merges' scope (`cond` for `cond/Merge`)
    std::string base = g_[anchor].name;
    if (auto slash = base.rfind('/'); slash != std::string::npos && slash > 0) base.resize(slash);
    else base = "cond";
    const std::string then_name = top_.unique_function_name(base + "_then");
    new_functions_.push_back(&top_.add_function(then_name, std::move(then_fn)));
    const std::string else_name = top_.unique_function_name(base + "_else");
    new_functions_.push_back(&top_.add_function(else_name, std::move(else_fn)));
    typename G::node_type n{};
    n.name = g_.unique_name(base);
    n.op = "if";
    n.attrs.emplace("then_branch", function_ref{then_name});
    n.attrs.emplace("else_branch", function_ref{else_name});
    n.device = g_[switches.front()].device;
    n.outputs.clear();
    for (auto m : merges) n.outputs.push_back(g_[m].outputs.empty() ? type{} : g_[m].outputs[0]);
    const node_id w = g_.add_node(std::move(n));
    state_of_.grow();
    side_.grow();
    removed_.resize(g_.serial_bound(), 0);
    g_.add_input(w, pred_in.node, pred_in.port);
    for (const auto& [u, port] : captures) g_.add_input(w, u, port);
    // control edges crossing the conditional's boundary move to the if node
    for (auto v : comp) {
      for (auto c : g_.control_inputs(v))
        if (side_[c] == none && !removed_[g_.serial(c)]) g_.add_control(c, w);
      for (auto s : g_.control_outputs(v))
        if (side_[s] == none && !removed_[g_.serial(s)]) g_.add_control(w, s);
    }
    for (std::size_t j = 0; j < merges.size(); ++j) g_.replace_uses(merges[j], 0, w, static_cast<int>(j));
    state_of_[w] = ctx;
    for (const auto& e : states_[ctx]) (e.branch ? then_nodes_ : else_nodes_)[e.pred].emplace_back(g_.serial(w), w);
    for (auto v : comp) removed_[g_.serial(v)] = 1;
    for (auto v : comp) side_[v] = none;
    dead_.insert(dead_.end(), comp.begin(), comp.end());  // removed in bulk at the end
  }

  G& g_;
  G& top_;
  std::vector<G*>& new_functions_;
  node_map<G, int> state_of_;
  node_map<G, unsigned char> side_;
  std::vector<unsigned char> removed_;  // by serial: nodes moved into functions (or deleted)
  std::vector<node_id> dead_;          // the same nodes, removed from the graph at the end
  std::vector<state> states_;
  std::map<state, int> ids_;
  std::map<std::pair<int, int>, int> joins_;
  std::map<std::pair<pred_key, int>, cond_parts> conds_;
  // nodes (serial, id) by the branches they run under
  std::map<pred_key, std::vector<std::pair<std::uint64_t, node_id>>> then_nodes_, else_nodes_;
};

}  // namespace detail

/// Pass `functionalize-conds`: TensorFlow v1 conditionals (`tf.cond` outside loops: Switch
/// nodes sharing a predicate, Merge nodes joining the two branches) become functional `if`
/// nodes, in the graph and in every function of its library, including the loop bodies made
/// by `functionalize_loops` (a conditional inside a loop) and the branches it makes itself.
///
/// A conditional is identified by its predicate and its Merges (see
/// `detail::cond_functionalizer` for the branch states that find them): its then nodes are
/// those reached from `Switch:1` (data or control edges) before a Merge, its else nodes
/// those reached from `Switch:0`. It becomes
/// `%c = if(pred, x_1, ..., x_k) {then_branch = @c_then, else_branch = @c_else}` with one
/// output per Merge (users of `Merge:0` read `%c:j`), where `x_1..x_k` are the Switches'
/// inputs and then any other outside value a branch reads; both functions take `x_1..x_k`
/// (a Switch output read in a branch is its argument) and return, per Merge, the input that
/// comes from their branch. Constants with no edge into them are copied into the branches;
/// control edges from the pivots (`Switch`, `Identity`) into constants are dropped; control
/// edges between the conditional and outside nodes move to the `if` node. Nested
/// conditionals become `if` nodes inside the outer branch functions (innermost first);
/// conditionals that share a predicate but not their branches (say an `is_training` flag
/// used by several `tf.cond`s) become separate `if`s. A part with no Merge whose nodes all
/// have known pure ops (a Switch nobody reads, a `tf.cond` pivot `Switch(p, p)` with its
/// `Identity` nodes when no constant hangs off them) is deleted; with effects it becomes an
/// `if` with no outputs. `if` nodes and functions are named after the Merges' name scope (`cond`,
/// `cond_then`, `cond_else` for `cond/Merge`), made unique.
///
/// **Errors** (`gpass::error` naming the pass and the node): a Merge that does not join the
/// two branches of one predicate, a node reading both branches without a Merge, a branch
/// value used outside without a Merge (a `return` in a branch), a Merge's `value_index`
/// output in use, a cycle (run `functionalize_loops` first: it is required), a Switch or
/// Merge left over.
///
/// Statistic: `conds`. Requires `fact_tags::loops_functionalized`; provides
/// `fact_tags::conds_functionalized`. O((V + E) · d) per graph for conditionals nested d
/// deep; iterative, no recursion over graph depth.
/// \code
///   gpass::pass_context ctx;
///   (gpass::functionalize_loops | gpass::functionalize_conds)(g, ctx);
/// \endcode
/// (Declared like every pass, `lowering_pass_base` giving its facts: the lines it shares in
/// shape with `functionalize_loops` are that declaration and the member list of a detail class.)
struct functionalize_conds_fn : lowering_pass_base<functionalize_conds_fn> {
  static constexpr std::string_view name = "functionalize-conds";
  static constexpr std::string_view description =
      "Turn TF v1 conditionals (Switch/Merge from tf.cond) into functional if nodes";
  using requires_facts = facts<fact_tags::loops_functionalized>;
  using provides_facts = facts<fact_tags::conds_functionalized>;

  template <class G>
  void run(G& g, pass_context& ctx) const {
    std::int64_t conds = 0;
    std::vector<G*> work = all_graphs(g);
    std::vector<G*> made;
    while (!work.empty()) {
      G* cur = work.back();
      work.pop_back();
      made.clear();
      conds += detail::cond_functionalizer<G>(*cur, g, made).run();
      work.insert(work.end(), made.begin(), made.end());
    }
    ctx.add_statistic("conds", conds);
  }
};

/// The `functionalize-conds` pass object (see `functionalize_conds_fn`).
inline constexpr functionalize_conds_fn functionalize_conds{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void functionalize_conds_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
