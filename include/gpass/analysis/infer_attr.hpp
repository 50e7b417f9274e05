// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file infer_attr.hpp
/// `gpass::infer_attr`: the generic fixed-point engine that infers one attribute per output
/// port (dtype, shape, type, ...) over a graph (seed 004's NNVM `InferAttr`).

#include <concepts>
#include <cstddef>
#include <utility>
#include <vector>

#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>

namespace gpass {

/// The per-port values of an `infer_attr` run: one `V` per output port of every node.
/// \code
///   const V& v = state.output(n, 0);
///   const V* in = state.input(g, n, 1);   // producer's value, nullptr for an empty port
/// \endcode
template <class G, class V>
class infer_attr_state {
 public:
  using node_id = typename G::node_id;
  explicit infer_attr_state(const G& g) : values_(g, {}) {}

  /// The values of all output ports of `v`.
  std::vector<V>& outputs(node_id v) { return values_[v]; }
  const std::vector<V>& outputs(node_id v) const { return values_[v]; }
  /// The value of output `port` of `v`; requires the port to exist.
  const V& output(node_id v, std::size_t port) const { return values_[v].at(port); }
  V& output(node_id v, std::size_t port) { return values_[v].at(port); }
  /// The value flowing into input `port` of `v`: the producer's output, or nullptr when the
  /// port is empty (or the producer has no such output).
  const V* input(const G& g, node_id v, int port) const {
    auto r = g.input(v, port);
    if (r.empty) return nullptr;
    const auto& o = values_[r.node];
    return static_cast<std::size_t>(r.port) < o.size() ? &o[r.port] : nullptr;
  }

 private:
  node_map<G, std::vector<V>> values_;
};

/// What a policy for `infer_attr` provides (the attribute being inferred, seed 004's
/// FInferShape/FInferType plus their lattice).
///
/// Minimal definition:
/// - `value_type`: the attribute of one output port; equality comparable.
/// - `std::vector<value_type> initial(const G&, node_id)`: the starting values of a node's
///   outputs (declared types, user hints; "unknown" otherwise), one per output port.
/// - `std::vector<value_type> forward(const G&, node_id, const infer_attr_state&)`: the node's
///   outputs computed from its inputs' current values (and its own current outputs).
/// - `bool is_known(const value_type&)`: whether a value counts as inferred.
///
/// Optional:
/// - `bool backward(const G&, node_id, infer_attr_state&)`: refines the node's inputs from
///   its outputs (run in reverse order after each forward sweep); returns true when it
///   changed anything.
/// - `bool end_sweep()`: returns true when something outside the state changed during the
///   sweep (e.g. new symbol bindings), forcing another sweep.
/// - `static constexpr bool incremental = true` with `bool stale(const G&, node_id, const
///   infer_attr_state&)`: the policy promises that `forward` (and `backward`) of a node depend
///   only on its inputs' values, on its own outputs idempotently (recomputing on an unchanged
///   input gives the same result), and on what `stale` reports changed outside the state (a
///   refinement of the node's declared type, a symbol binding it mentions). The engine then
///   recomputes, after the first sweep, only the nodes whose inputs changed since they were
///   last computed, or that are stale: a sweep that confirms the fixed point is O(V+E) checks
///   instead of V calls of `forward`. Its `backward` must not write the state: it refines
///   what the policy holds and reports the refined producers through `stale`.
///
/// Laws: `forward` is deterministic and, on a fixed input state, returns the same result
/// every time; values only move in one direction of the policy's lattice (refinement, or
/// widening where loops join), so a fixed point is reached.
template <class P, class G>
concept infer_attr_policy = requires(P& p, const G& g, typename G::node_id v,
                                     const infer_attr_state<G, typename P::value_type>& s,
                                     const typename P::value_type& x) {
  typename P::value_type;
  { p.initial(g, v) } -> std::same_as<std::vector<typename P::value_type>>;
  { p.forward(g, v, s) } -> std::same_as<std::vector<typename P::value_type>>;
  { p.is_known(x) } -> std::convertible_to<bool>;
  { x == x } -> std::convertible_to<bool>;
};

/// Options of `infer_attr`.
struct infer_attr_options {
  std::size_t max_sweeps = 64;  ///< bound on sweeps (forward + backward); each sweep is O(V+E)
};

/// The result of `infer_attr`: the values, how many are still unknown, how many sweeps ran,
/// and whether a fixed point was reached within `max_sweeps`.
template <class G, class V>
struct infer_attr_result {
  infer_attr_state<G, V> state;
  std::size_t num_unknown = 0;  ///< output ports whose value `is_known` rejects
  std::size_t num_sweeps = 0;
  bool converged = false;
};

namespace detail {

/// A sweep order: topological where the graph is acyclic; nodes on cycles (TF v1 loops) are
/// taken in insertion order when nothing else is ready, so every node appears once. O(V+E).
template <class G>
std::vector<typename G::node_id> sweep_order(const G& g) {
  using node_id = typename G::node_id;
  node_map<G, std::size_t> indeg(g, 0);
  node_map<G, char> done(g, 0);
  std::vector<node_id> all;
  all.reserve(g.num_nodes());
  for (auto v : g.nodes()) {
    all.push_back(v);
    indeg[v] = g.in_degree(v);
  }
  std::vector<node_id> order;
  order.reserve(all.size());
  std::size_t next_forced = 0, head = 0;
  auto push = [&](node_id v) {
    if (done[v]) return;
    done[v] = 1;
    order.push_back(v);
  };
  for (auto v : all)
    if (indeg[v] == 0) push(v);
  while (order.size() < all.size() || head < order.size()) {
    if (head == order.size()) {
      // stuck on a cycle: take the first remaining node in insertion order
      while (next_forced < all.size() && done[all[next_forced]]) ++next_forced;
      if (next_forced == all.size()) break;
      push(all[next_forced]);
    }
    node_id u = order[head++];
    for (auto e : g.out_edges(u)) {
      auto t = g.target(e);
      if (indeg[t] > 0 && --indeg[t] == 0) push(t);
    }
  }
  return order;
}

template <class P, class G, class S>
concept has_backward = requires(P& p, const G& g, typename G::node_id v, S& s) {
  { p.backward(g, v, s) } -> std::convertible_to<bool>;
};
template <class P>
concept has_end_sweep = requires(P& p) {
  { p.end_sweep() } -> std::convertible_to<bool>;
};
template <class P, class G, class S>
concept is_incremental = requires(P& p, const G& g, typename G::node_id v, const S& s) {
  requires P::incremental;
  { p.stale(g, v, s) } -> std::convertible_to<bool>;
};

}  // namespace detail

/// Function object: `infer_attr(g, policy, options)` infers `Policy::value_type` for every
/// output port of `g` (seed 004's InferAttr):
/// 1. start from `policy.initial` (declared values and hints);
/// 2. sweep forward in topological order (cycles are tolerated), computing each node with
///    `policy.forward`, then backward in reverse order with `policy.backward` when the policy
///    has one;
/// 3. stop when a sweep changes nothing (or after `max_sweeps`);
/// 4. count the ports still unknown.
/// Each sweep is O(V+E); nothing recurses over the graph structure. Exceptions thrown by the
/// policy propagate.
/// \code
///   struct depth_policy {
///     using value_type = int;
///     std::vector<int> initial(const G& g, G::node_id v) { return std::vector<int>(g[v].outputs.size(), -1); }
///     std::vector<int> forward(const G& g, G::node_id v, const gpass::infer_attr_state<G, int>& s) { ... }
///     bool is_known(int d) const { return d >= 0; }
///   };
///   auto r = gpass::infer_attr(g, p);
///   r.state.output(n, 0);
/// \endcode
struct infer_attr_fn {
  template <class G, class Policy>
    requires infer_attr_policy<Policy, G>
  infer_attr_result<G, typename Policy::value_type> operator()(const G& g, Policy& policy,
                                                               infer_attr_options options = {}) const {
    using V = typename Policy::value_type;
    using node_id = typename G::node_id;
    using state_type = infer_attr_state<G, V>;
    constexpr bool incremental = detail::is_incremental<Policy, G, state_type>;
    infer_attr_result<G, V> r{state_type(g)};
    auto order = detail::sweep_order(g);
    for (auto v : order) r.state.outputs(v) = policy.initial(g, v);
    // incremental policies: logical clock of the last forward / backward of each node and of
    // the last change of its outputs (by forward, or by a backward of a consumer)
    node_map<G, std::size_t> computed(g, 0), refined(g, 0), changed_at(g, 0);
    std::size_t clock = 0;
    auto inputs_changed_since = [&](node_id v, std::size_t t) {
      for (std::size_t i = 0, n = g.num_inputs(v); i < n; ++i) {
        auto in = g.input(v, static_cast<int>(i));
        if (!in.empty && changed_at[in.node] > t) return true;
      }
      return false;
    };
    while (r.num_sweeps < options.max_sweeps) {
      ++r.num_sweeps;
      bool changed = false;
      for (auto v : order) {
        if constexpr (incremental) {
          if (r.num_sweeps > 1 && !inputs_changed_since(v, computed[v]) && !policy.stale(g, v, std::as_const(r.state)))
            continue;
          computed[v] = ++clock;
        }
        std::vector<V> out = policy.forward(g, v, std::as_const(r.state));
        if (out != r.state.outputs(v)) {
          r.state.outputs(v) = std::move(out);
          changed = true;
          if constexpr (incremental) changed_at[v] = clock;
        }
      }
      if constexpr (detail::has_backward<Policy, G, state_type>) {
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
          if constexpr (incremental) {
            if (r.num_sweeps > 1 && changed_at[*it] <= refined[*it] && !inputs_changed_since(*it, refined[*it]) &&
                !policy.stale(g, *it, std::as_const(r.state)))
              continue;
            refined[*it] = ++clock;
          }
          if (policy.backward(g, *it, r.state)) changed = true;
        }
      }
      if constexpr (detail::has_end_sweep<Policy>) {
        if (policy.end_sweep()) changed = true;
      }
      if (!changed) {
        r.converged = true;
        break;
      }
    }
    for (auto v : order)
      for (const auto& x : r.state.outputs(v))
        if (!policy.is_known(x)) ++r.num_unknown;
    return r;
  }
};
inline constexpr infer_attr_fn infer_attr{};

}  // namespace gpass
