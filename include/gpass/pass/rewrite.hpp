// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file rewrite.hpp
/// The pattern-rewrite driver (the role of MLIR's greedy rewrite driver): declarative
/// patterns over a node's op, attributes, types and uses, applied over a worklist until none
/// applies. `gpass::rewrite_pattern`, `gpass::rewriter`, `gpass::apply_patterns`, and the
/// conditions of `gpass::match`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/ops/op_memo.hpp>
#include <gpass/pass/context.hpp>

namespace gpass {

/// An op a pattern is rooted at: its domain ("" for ONNX and gpass core ops, "tf" for
/// TensorFlow) and its name.
struct op_ref {
  std::string domain;
  std::string op;
};

template <class G>
class rewriter;

/// One rewrite: tried on every node whose (domain, op) is in `roots`, when every condition in
/// `when` holds; `rewrite` then edits the graph through the rewriter and returns true, or
/// returns false when it declines after all (the graph untouched). Among the patterns of one
/// op, higher `benefit` is tried first (then the order given).
/// \code
///   gpass::rewrite_pattern<G> p{
///       .name = "identity",
///       .roots = {{"", "Identity"}, {"tf", "Identity"}},
///       .when = {gpass::match::not_a_graph_output<G>()},
///       .rewrite = gpass::match::forward_input<G>(0)};
/// \endcode
template <class G>
struct rewrite_pattern {
  using node_id = typename G::node_id;
  std::string name;
  std::vector<op_ref> roots;
  std::vector<std::function<bool(const G&, node_id)>> when;
  std::function<bool(rewriter<G>&, node_id)> rewrite;
  int benefit = 1;
};

/// How `apply_patterns` ran.
struct rewrite_result {
  std::size_t rewrites = 0;  ///< patterns applied
  std::size_t visits = 0;    ///< nodes taken from the worklist
  std::size_t erased = 0;    ///< nodes erased
  bool converged = true;     ///< false when `max_rewrites` stopped it
  std::map<std::string, std::int64_t> hits;  ///< rewrites by pattern name
};

/// Options of `apply_patterns`.
struct rewrite_options {
  /// At most this many rewrites per node of the graph (a guard against patterns that undo
  /// each other); past it the driver stops with `converged == false`.
  std::size_t max_rewrites_per_node = 8;
};

/// The edits a pattern makes, through which the driver learns what to revisit: the users of
/// a replaced value, the producers of an erased node's inputs (they lost a use, so a
/// single-use condition may now hold), new nodes. Erased nodes are removed from the graph
/// when the driver finishes (in bulk); until then they are only marked.
template <class G>
class rewriter {
 public:
  using node_id = typename G::node_id;

  G& graph() noexcept { return g_; }
  const G& graph() const noexcept { return g_; }

  /// Every data use of `v:port` now reads `with:with_port`; the users are revisited.
  void replace_uses(node_id v, int port, node_id with, int with_port) {
    for (const auto& u : g_.uses(v, port)) push(u.node);
    g_.replace_uses(v, port, with, with_port);
    push(with);
  }
  /// Replaces node `v` (whose outputs other than 0 must be unused) by the value
  /// `with:with_port`, and erases it. Its control predecessors come before whatever
  /// followed it (its data users and control successors), as TensorFlow requires when an
  /// Identity with control inputs goes.
  void replace_by_value(node_id v, node_id with, int with_port) {
    const auto preds = g_.control_inputs(v);
    if (!preds.empty()) {
      for (const auto& u : g_.uses(v))
        for (auto c : preds) g_.add_control(c, u.node);
      for (auto s : g_.control_outputs(v))
        for (auto c : preds) g_.add_control(c, s);
    }
    for (auto s : g_.control_outputs(v))
      if (s != with) g_.add_control(with, s);
    replace_uses(v, 0, with, with_port);
    erase(v);
  }
  /// `replace_by_value`, and when `v` is a graph output (read by `return`), `with` takes its
  /// name, so the graph's outputs keep their names. That needs `with` to be a node whose
  /// only use is `v`, with one output, and not a graph input (`arg`); returns false (nothing
  /// done) when it is not.
  bool replace_keeping_name(node_id v, node_id with, int with_port) {
    bool output = false;
    for (const auto& u : g_.uses(v))
      output = output || (g_[u.node].op == "return" && g_[u.node].domain.empty());
    if (output) {
      const auto& w = g_[with];
      if ((w.op == "arg" && w.domain.empty()) || w.outputs.size() != 1 || g_.uses(with).size() != 1 || with_port != 0)
        return false;
      std::string name = g_[v].name;
      g_.rename(v, g_.unique_name(name + ".replaced"));
      g_.rename(with, std::move(name));
    }
    replace_by_value(v, with, with_port);
    return true;
  }
  /// Replaces `v` by a new node `n` reading `inputs` (value, port) in order: the new node
  /// takes `v`'s name, its control edges and the uses of each of its outputs (port k of `v`
  /// becomes port k of the new node), and `v` is erased. Returns the new node.
  node_id replace_with(node_id v, typename G::node_type n, const std::vector<std::pair<node_id, int>>& inputs) {
    std::string name = g_[v].name;
    g_.rename(v, g_.unique_name(name + ".replaced"));
    n.name = std::move(name);
    const node_id nv = add_node(std::move(n));
    for (const auto& [src, port] : inputs) g_.add_input(nv, src, port);
    for (auto c : g_.control_inputs(v)) g_.add_control(c, nv);
    for (auto s : g_.control_outputs(v)) g_.add_control(nv, s);
    for (std::size_t k = 0; k < g_[v].outputs.size(); ++k) replace_uses(v, static_cast<int>(k), nv, static_cast<int>(k));
    erase(v);
    return nv;
  }
  /// Marks `v` erased (removed when the driver finishes). Its outputs must have no data use
  /// left; its control edges go with it. The producers of its inputs are revisited.
  void erase(node_id v) {
    if (dead_[v]) return;
    if (!g_.uses(v).empty())
      throw error("rewrite pattern '" + std::string(current_) + "' erased node '" + g_[v].name + "' (op " + g_[v].op +
                  ") whose outputs are still used");
    for (const auto& in : g_.inputs(v))
      if (!in.empty) push(in.node);
    for (auto c : g_.control_inputs(v)) g_.remove_control(c, v);
    for (auto c : g_.control_outputs(v)) g_.remove_control(v, c);
    g_.set_num_inputs(v, 0);
    dead_[v] = 1;
    doomed_.push_back(v);
  }
  /// Adds a node (revisited: patterns may apply to it).
  node_id add_node(typename G::node_type n) {
    node_id v = g_.add_node(std::move(n));
    push(v);
    return v;
  }
  /// Says that `v` was edited in place (attributes, inputs): it and its users are revisited.
  void changed(node_id v) {
    push(v);
    for (const auto& u : g_.uses(v)) push(u.node);
  }
  /// True when `v` was erased by a pattern of this run.
  bool erased(node_id v) {
    return dead_[v] != 0;
  }

  // ---- for the driver ----
  explicit rewriter(G& g) : g_(g), queued_(g, 0), dead_(g, 0) { work_.reserve(g.num_nodes()); }
  void push(node_id v) {
    if (dead_[v] || queued_[v]) return;
    queued_[v] = 1;
    work_.push_back(v);
  }
  bool pop(node_id& v) {
    while (!work_.empty()) {
      v = work_.back();
      work_.pop_back();
      queued_[v] = 0;
      if (!dead_[v]) return true;
    }
    return false;
  }
  void set_current(std::string_view pattern) { current_ = pattern; }
  /// Puts every node not yet queued on the worklist, the graph's first node to be popped first.
  void push_all() {
    const auto from = static_cast<std::ptrdiff_t>(work_.size());
    for (auto v : g_.nodes())
      if (!queued_[v] && !dead_[v]) {
        queued_[v] = 1;
        work_.push_back(v);
      }
    std::reverse(work_.begin() + from, work_.end());
  }
  std::size_t finish() {
    const std::size_t n = doomed_.size();
    g_.remove_nodes(doomed_);
    doomed_.clear();
    return n;
  }

 private:
  G& g_;
  node_map<G, char> queued_;
  node_map<G, char> dead_;
  std::vector<node_id> work_;
  std::vector<node_id> doomed_;
  std::string_view current_;  // the running pattern's name (the patterns outlive the rewriter)
};

namespace detail {

/// The patterns of each root op, for `apply_patterns`: one flat array grouped by op (the
/// patterns of an op by benefit, then in the order given) and an open-addressing table from
/// the op's name to its range. Built in O(roots) with two allocations; the views point into
/// the patterns' own strings.
template <class G>
class pattern_index {
 public:
  struct rooted {
    std::string_view domain;
    const rewrite_pattern<G>* pattern;
  };

  explicit pattern_index(const std::vector<rewrite_pattern<G>>& patterns) {
    std::size_t roots = 0;
    for (const auto& p : patterns) roots += p.roots.size();
    std::size_t cap = 16;
    while (cap < 2 * roots + 1) cap *= 2;
    slots_.resize(cap);
    mask_ = cap - 1;
    for (const auto& p : patterns)  // distinct ops, and how many roots each
      for (const auto& r : p.roots) ++claim(r.op).count;
    std::uint32_t at = 0;
    for (auto& sl : slots_)
      if (sl.used) {
        sl.begin = at;
        at += sl.count;
        sl.count = 0;
      }
    entries_.resize(at);
    for (const auto& p : patterns)
      for (const auto& r : p.roots) {
        slot& sl = claim(r.op);
        rooted* first = entries_.data() + sl.begin;
        std::uint32_t k = sl.count++;
        first[k] = {r.domain, &p};
        // insertion by benefit; equal benefits keep the order given
        for (; k > 0 && first[k - 1].pattern->benefit < first[k].pattern->benefit; --k) std::swap(first[k - 1], first[k]);
      }
  }

  /// The patterns rooted at `op` (any domain), best first; empty when none.
  std::pair<const rooted*, const rooted*> find(std::string_view op) const {
    for (std::size_t i = hash_name(op) & mask_;; i = (i + 1) & mask_) {
      const slot& sl = slots_[i];
      if (!sl.used) return {nullptr, nullptr};
      if (sl.op == op) return {entries_.data() + sl.begin, entries_.data() + sl.begin + sl.count};
    }
  }

 private:
  struct slot {
    std::string_view op;
    std::uint32_t begin = 0, count = 0;
    bool used = false;
  };
  slot& claim(std::string_view op) {
    std::size_t i = hash_name(op) & mask_;
    while (slots_[i].used && slots_[i].op != op) i = (i + 1) & mask_;
    slot& sl = slots_[i];
    if (!sl.used) {
      sl.used = true;
      sl.op = op;
    }
    return sl;
  }
  std::vector<slot> slots_;
  std::vector<rooted> entries_;
  std::size_t mask_ = 0;
};

}  // namespace detail

/// Applies `patterns` to `g` (this graph only; its functions are graphs of their own) until
/// no pattern applies to any node: every node starts on the worklist (in graph order), a
/// node is tried against the patterns of its op, and a rewrite puts what it touched back on
/// the worklist. O(V + R·d) for R rewrites touching d nodes each; no recursion. Stops with
/// `converged == false` after `max_rewrites_per_node · V` rewrites.
template <class G>
rewrite_result apply_patterns(G& g, const std::vector<rewrite_pattern<G>>& patterns, const rewrite_options& o = {}) {
  using node_id = typename G::node_id;
  const detail::pattern_index<G> by_op(patterns);
  rewrite_result res;
  rewriter<G> rw(g);
  rw.push_all();
  const std::size_t cap = std::max<std::size_t>(1, o.max_rewrites_per_node * std::max<std::size_t>(1, g.num_nodes()));
  node_id v;
  while (rw.pop(v)) {
    ++res.visits;
    const auto [first, last] = by_op.find(g[v].op);
    for (auto it = first; it != last; ++it) {
      const auto& [domain, p] = *it;
      if (domain != g[v].domain) continue;
      bool ok = true;
      for (const auto& c : p->when)
        if (!c(std::as_const(g), v)) {
          ok = false;
          break;
        }
      if (!ok) continue;
      rw.set_current(p->name);
      if (!p->rewrite(rw, v)) continue;
      ++res.rewrites;
      ++res.hits[p->name];
      if (!rw.erased(v)) rw.push(v);
      break;
    }
    if (res.rewrites >= cap) {
      res.converged = false;
      break;
    }
  }
  res.erased = rw.finish();
  return res;
}

/// Applies `patterns` (`apply_patterns`) to `g` and to every function of its library, adds
/// each pattern's hits to the statistics of `ctx` (the running pass's name as prefix), warns
/// when a graph did not reach a fixed point, and returns the number of rewrites.
template <class G>
std::int64_t apply_patterns_everywhere(G& g, const std::vector<rewrite_pattern<G>>& patterns, pass_context& ctx) {
  std::int64_t rewrites = 0;
  for (G* cur : all_graphs(g)) {
    rewrite_result r = apply_patterns(*cur, patterns);
    rewrites += static_cast<std::int64_t>(r.rewrites);
    for (const auto& [p, n] : r.hits) ctx.add_statistic(p, n);
    if (!r.converged) ctx.warn("rewrites stopped before a fixed point (patterns undo each other?)");
  }
  return rewrites;
}

/// Conditions and rewrites for `rewrite_pattern`: the declarative part of patterns.
namespace match {

/// The type of the value node `v` reads at input `i` (nullptr when the input is missing).
template <class G>
const type* input_type(const G& g, typename G::node_id v, int i) {
  if (i < 0 || static_cast<std::size_t>(i) >= g.num_inputs(v)) return nullptr;
  auto in = g.input(v, i);
  if (in.empty) return nullptr;
  const auto& outs = g[in.node].outputs;
  return static_cast<std::size_t>(in.port) < outs.size() ? &outs[static_cast<std::size_t>(in.port)] : nullptr;
}

/// True when `a` and `b` are tensor types of one known element type and one shape whose
/// dims are all known or symbolic (the same symbols), so one value can stand for the other.
inline bool same_known_tensor_type(const type& a, const type& b) {
  if (!a.is_tensor() || !b.is_tensor()) return false;
  const tensor_type &x = a.tensor(), &y = b.tensor();
  if (x.element == dtype::undefined || x.element != y.element || !x.shape.has_rank() || !y.shape.has_rank()) return false;
  if (x.shape.rank() != y.shape.rank()) return false;
  for (std::size_t i = 0; i < x.shape.rank(); ++i) {
    const dim &p = x.shape.dims()[i], &q = y.shape.dims()[i];
    if (p.is_unknown() || q.is_unknown() || !(p == q)) return false;
  }
  return true;
}

/// Input `i` exists and its value has the same known type as output `o` of the node.
template <class G>
auto same_type_as_input(int i = 0, int o = 0) {
  return [=](const G& g, typename G::node_id v) {
    const type* t = input_type(g, v, i);
    return t && static_cast<std::size_t>(o) < g[v].outputs.size() &&
           same_known_tensor_type(*t, g[v].outputs[static_cast<std::size_t>(o)]);
  };
}

/// Output `port` of the node has no data use.
template <class G>
auto output_unused(int port) {
  return [=](const G& g, typename G::node_id v) { return g.uses(v, port).empty(); };
}

/// Output `port` has exactly one data use.
template <class G>
auto single_use(int port = 0) {
  return [=](const G& g, typename G::node_id v) { return g.uses(v, port).size() == 1; };
}

/// No output of the node is read by the graph's `return` (a graph output keeps the node
/// that produces it, and with it its name).
template <class G>
auto not_a_graph_output() {
  return [](const G& g, typename G::node_id v) {
    for (const auto& u : g.uses(v))
      if (g[u.node].op == "return" && g[u.node].domain.empty()) return false;
    return true;
  };
}

/// The node has at most `n` inputs, or those past `n` are missing (optional and absent).
template <class G>
auto inputs_at_most(std::size_t n) {
  return [=](const G& g, typename G::node_id v) {
    for (std::size_t i = n; i < g.num_inputs(v); ++i)
      if (!g.input(v, static_cast<int>(i)).empty) return false;
    return true;
  };
}

/// The rewrite "the node is its input `i`": uses of output 0 read input `i`'s value instead
/// and the node goes (`rewriter::replace_keeping_name`: a graph output keeps its name, or
/// the rewrite declines).
template <class G>
auto forward_input(int i) {
  return [=](rewriter<G>& rw, typename G::node_id v) {
    if (i < 0 || static_cast<std::size_t>(i) >= rw.graph().num_inputs(v)) return false;
    auto in = rw.graph().input(v, i);
    if (in.empty) return false;
    return rw.replace_keeping_name(v, in.node, in.port);
  };
}

}  // namespace match

}  // namespace gpass
