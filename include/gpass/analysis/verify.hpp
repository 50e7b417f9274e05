// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file verify.hpp
/// `gpass::verify` / `gpass::verify_report`: checks that a graph (and its function library) is
/// well formed: consistent edges and ports, unique names, no cycles (except TF v1 loops),
/// resolved function references, function signatures, and op schemas.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/graph/edge.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/ops/opset.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/ops/schema.hpp>

namespace gpass {

/// What `verify` / `verify_report` check.
/// \code
///   gpass::verify_options o;
///   o.allow_v1_control_flow_cycles = false;  // a graph after functionalize-loops has no cycles at all
///   gpass::verify(g, o);
/// \endcode
struct verify_options {
  /// Schemas for the arity and attribute checks of ops it knows; `nullptr` skips schema checks.
  const op_registry* registry = &op_registry::global();
  /// Check node arity and attributes against `registry` (ops it does not know are not errors).
  bool check_schemas = true;
  /// TF v1 loops: a data edge from a `NextIteration` node into a `Merge` node (a loop back
  /// edge) is ignored by the cycle check, so the cycles such edges close are legal.
  bool allow_v1_control_flow_cycles = true;
  /// Verify every function of the library too (and functions nested in functions).
  bool check_functions = true;
};

/// One broken rule, found by `verify_report`.
///
/// Rule ids (stable strings):
/// - `"duplicate-name"`: a node shares its name with another one (reported on the node(s) that
///   `find(name)` does not return; such names come from editing `g[v].name` directly);
/// - `"empty-name"`: a node has an empty name;
/// - `"name-index"`: a node's name is not the one the graph's index knows (the name was edited
///   through `g[v].name` instead of `graph::rename`), so `find(name)` does not return it;
/// - `"dangling-edge"`: an input port the op requires is empty (`input 1 is not connected`; a
///   port below the schema's `min_inputs` whose formal input is not `optional`), or
///   an input slot and the edges disagree (a data edge not recorded in its slot, a slot whose
///   edge is not in the graph);
/// - `"port-range"`: a data edge leaves an output port the producer does not have (e.g. after
///   `node.outputs` was shrunk), or enters an input port the consumer does not have, or has
///   malformed ports;
/// - `"cycle"`: a cycle (`cycle: a -> b -> c -> a`), one violation per strongly connected part;
/// - `"unresolved-function"`: a `function_ref` attribute (or an element of a `funcs` list)
///   names no function of the library;
/// - `"function-signature"`: a function without exactly one `return` node, or with more than
///   one `function_entry` node;
/// - `"arity"`: number of input or output ports outside the schema's range;
/// - `"missing-attribute"`: a required attribute of the schema is absent;
/// - `"attribute-kind"`: an attribute's kind differs from the schema's (`attribute::kind_name()`);
/// - `"recursive-function"`: a function calls itself, directly or through others
///   (`f -> g -> f`).
struct violation {
  std::string rule;      ///< the rule id, e.g. "cycle"
  std::string function;  ///< the function the node is in (`outer/inner` when nested); empty = top graph
  std::string node;      ///< the offending node; empty when the violation is about a whole function
  std::string op;        ///< the node's op (`domain::op` outside the default domain)
  std::string message;   ///< full text: `function 'body': node 'add' (op Add): input 1 is not connected`
  std::string reason;    ///< the text without the function/node prefix: `input 1 is not connected`
};

namespace detail {

inline std::string qualified_op(std::string_view domain, std::string_view op) {
  return domain.empty() ? std::string(op) : std::string(domain) + "::" + std::string(op);
}

inline std::string describe_range(int lo, int hi) {
  if (lo == hi) return "exactly " + std::to_string(lo);
  if (hi == op_schema::unbounded) return "at least " + std::to_string(lo);
  if (lo <= 0) return "at most " + std::to_string(hi);
  return std::to_string(lo) + " to " + std::to_string(hi);
}

inline std::string plural(std::size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

/// A graph being verified: the graph, its function path, and the enclosing scope (for
/// resolving function references lexically: own library, then the enclosing graphs').
template <class G>
struct verify_scope {
  const G* g;
  std::string path;
  std::size_t parent;  // index into the scope list; npos for the top graph
};

template <class G>
class verifier {
  using node_id = typename G::node_id;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

 public:
  verifier(const verify_options& o, std::vector<violation>& out) : opt_(o), out_(out) {}

  void run(const G& top) {
    top_ = &top;
    scopes_.push_back({&top, std::string(), npos});
    check_graph_attrs(top);
    // Pre-order walk of the function library tree with an explicit stack (no recursion).
    std::vector<std::size_t> stack{0};
    while (!stack.empty()) {
      std::size_t s = stack.back();
      stack.pop_back();
      check_graph(s);
      if (!opt_.check_functions) break;
      const auto& lib = scopes_[s].g->functions();
      std::size_t first = scopes_.size();
      for (const auto& [name, fn] : lib) {
        if (!fn) continue;
        std::string path = scopes_[s].path.empty() ? name : scopes_[s].path + "/" + name;
        scopes_.push_back({fn.get(), std::move(path), s});
      }
      for (std::size_t i = scopes_.size(); i > first; --i) stack.push_back(i - 1);
    }
    if (opt_.check_functions) check_recursion();
  }

 private:
  // ---- reporting ----------------------------------------------------------------------

  void report(std::string rule, const std::string& function, const std::string& node, const std::string& op,
              std::string reason) {
    violation v;
    v.rule = std::move(rule);
    v.function = function;
    v.node = node;
    v.op = op;
    std::string msg;
    if (!function.empty()) msg += "function '" + function + "': ";
    if (!node.empty()) {
      msg += "node '" + node + "'";
      if (!op.empty()) msg += " (op " + op + ")";
      msg += ": ";
    }
    msg += reason;
    v.message = std::move(msg);
    v.reason = std::move(reason);
    out_.push_back(std::move(v));
  }
  void report_node(std::string rule, std::size_t s, const G& g, node_id v, std::string reason) {
    const auto& n = g[v];
    report(std::move(rule), scopes_[s].path, n.name, qualified_op(n.domain, n.op), std::move(reason));
  }

  // ---- function references ------------------------------------------------------------

  bool resolves(std::size_t s, std::string_view name) const {
    for (std::size_t i = s; i != npos; i = scopes_[i].parent)
      if (scopes_[i].g->find_function(name)) return true;
    return false;
  }

  /// Calls `bad(attr_name, element_index_or_npos, function_name)` for each unresolved reference.
  template <class Bad>
  void check_refs(std::size_t s, const attribute_map& attrs, Bad&& bad) const {
    for (const auto& [key, a] : attrs) {
      if (const auto* f = std::get_if<function_ref>(&a.value())) {
        if (!resolves(s, f->name)) bad(key, npos, f->name);
      } else if (const auto* fs = std::get_if<std::vector<function_ref>>(&a.value())) {
        for (std::size_t i = 0; i < fs->size(); ++i)
          if (!resolves(s, (*fs)[i].name)) bad(key, i, (*fs)[i].name);
      }
    }
  }

  static std::string ref_reason(const std::string& key, std::size_t index, const std::string& fn,
                                bool graph_level) {
    std::string r = graph_level ? "graph attribute '" : "attribute '";
    r += key + "'";
    if (index != npos) r += " element " + std::to_string(index);
    return r + " refers to unknown function '" + fn + "'";
  }

  void check_graph_attrs(const G& top) {
    if constexpr (std::same_as<typename G::attrs_type, attribute_map>) {
      check_refs(0, top.attrs(), [&](const std::string& key, std::size_t i, const std::string& fn) {
        report("unresolved-function", std::string(), std::string(), std::string(), ref_reason(key, i, fn, true));
      });
    }
  }

  // ---- one graph ----------------------------------------------------------------------

  static bool is_core(const typename G::node_type& n, std::string_view op) { return n.domain.empty() && n.op == op; }

  bool ignored_edge(const G& g, typename G::edge_id e) const {
    if (!opt_.allow_v1_control_flow_cycles || g[e].src_port == control_port) return false;
    return is_core(g[g.source(e)], "NextIteration") && is_core(g[g.target(e)], "Merge");
  }

  void check_graph(std::size_t s) {
    const G& g = *scopes_[s].g;
    // names: how many nodes carry each name (a node the index does not return is the duplicate)
    std::unordered_map<std::string_view, std::size_t> count;
    count.reserve(g.num_nodes());
    for (auto v : g.nodes()) ++count[std::string_view(g[v].name)];
    std::vector<char> matched;
    node_id entry{}, ret{};
    std::size_t entries = 0, returns = 0;

    for (auto v : g.nodes()) {
      const auto& n = g[v];

      // names
      if (n.name.empty()) {
        report("empty-name", scopes_[s].path, std::string(), qualified_op(n.domain, n.op),
               "a node of op " + qualified_op(n.domain, n.op) + " has an empty name");
      } else if (auto f = g.find(n.name); !f || *f != v) {
        if (std::size_t k = count[std::string_view(n.name)]; k > 1)
          report_node("duplicate-name", s, g, v, "duplicate node name (" + std::to_string(k) + " nodes are called '" + n.name + "')");
        else
          report_node("name-index", s, g, v, "name is not in the graph's name index (was it changed without graph::rename?)");
      }

      // structure: out-edges (source ports), in-edges (destination ports and slots)
      const std::size_t nout = n.outputs.size();
      for (auto e : g.out_edges(v)) {
        const auto& ed = g[e];
        if (ed.src_port == control_port || ed.src_port < 0) continue;  // checked at the consumer
        if (static_cast<std::size_t>(ed.src_port) >= nout)
          report_node("port-range", s, g, v,
                      "output " + std::to_string(ed.src_port) + " is used by '" + g[g.target(e)].name +
                          "' (input " + std::to_string(ed.dst_port) + ") but the node has " +
                          plural(nout, "output"));
      }
      const std::size_t nin = g.num_inputs(v);
      matched.assign(nin, 0);
      for (auto e : g.in_edges(v)) {
        const auto& ed = g[e];
        const bool ctl = ed.src_port == control_port && ed.dst_port == control_port;
        if (ctl) continue;
        const std::string& src = g[g.source(e)].name;
        if (ed.src_port < 0 || ed.dst_port < 0) {
          report_node("port-range", s, g, v,
                      "edge from '" + src + "' has malformed ports (" + std::to_string(ed.src_port) + " -> " +
                          std::to_string(ed.dst_port) + ")");
          continue;
        }
        if (static_cast<std::size_t>(ed.dst_port) >= nin) {
          report_node("port-range", s, g, v,
                      "data edge from '" + src + "':" + std::to_string(ed.src_port) + " enters input " +
                          std::to_string(ed.dst_port) + " but the node has " + plural(nin, "input port"));
          continue;
        }
        auto slot = g.input_edge(v, ed.dst_port);
        if (slot && *slot == e) {
          matched[ed.dst_port] = 1;
        } else {
          report_node("dangling-edge", s, g, v,
                      "data edge from '" + src + "':" + std::to_string(ed.src_port) + " into input " +
                          std::to_string(ed.dst_port) + " is not the edge recorded for that input");
        }
      }
      for (std::size_t k = 0; k < nin; ++k)
        if (!matched[k] && g.input_edge(v, static_cast<int>(k)))
          report_node("dangling-edge", s, g, v,
                      "input " + std::to_string(k) + " refers to an edge that is not in the graph");

      // schema
      if (opt_.check_schemas && opt_.registry) {
        // the schema of the opset the top graph declares for the op's domain (newest when none)
        if (const op_schema* sc = opt_.registry->find(n.domain, n.op, graph_opset(*top_, n.domain)))
          check_schema(s, g, v, *sc, matched);
      }

      // function references
      check_refs(s, n.attrs, [&](const std::string& key, std::size_t i, const std::string& fn) {
        report_node("unresolved-function", s, g, v, ref_reason(key, i, fn, false));
      });

      // signature nodes
      if (s != 0) {
        if (is_core(n, "function_entry")) {
          if (++entries == 1) entry = v;
          else
            report_node("function-signature", s, g, v,
                        "second function_entry node (the first is '" + g[entry].name + "')");
        } else if (is_core(n, "return")) {
          if (++returns == 1) ret = v;
          else report_node("function-signature", s, g, v, "second return node (the first is '" + g[ret].name + "')");
        }
      }
    }
    if (s != 0 && returns == 0)
      report("function-signature", scopes_[s].path, std::string(), std::string(), "no return node (a function needs exactly one)");

    check_cycles(s, g);
  }

  void check_schema(std::size_t s, const G& g, node_id v, const op_schema& sc, const std::vector<char>& matched) {
    const auto& n = g[v];
    const std::size_t nin = g.num_inputs(v);
    if (nin < static_cast<std::size_t>(std::max(sc.min_inputs, 0)) ||
        nin > static_cast<std::size_t>(std::max(sc.max_inputs, 0)))
      report_node("arity", s, g, v,
                  "has " + plural(nin, "input port") + ", expected " + describe_range(sc.min_inputs, sc.max_inputs));
    // Ports below min_inputs must be connected, unless the schema's formals say the port is optional.
    const std::size_t req = std::min(nin, static_cast<std::size_t>(std::max(sc.min_inputs, 0)));
    for (std::size_t k = 0; k < req; ++k)
      if (!matched[k] && !g.input_edge(v, static_cast<int>(k))) {
        const formal_parameter* f = sc.formal_input(k);
        if (!f || f->option != formal_option::optional)
          report_node("dangling-edge", s, g, v, "input " + std::to_string(k) + " is not connected");
      }
    const std::size_t nout = n.outputs.size();
    if (nout < static_cast<std::size_t>(std::max(sc.min_outputs, 0)) ||
        nout > static_cast<std::size_t>(std::max(sc.max_outputs, 0)))
      report_node("arity", s, g, v,
                  "has " + plural(nout, "output") + ", expected " + describe_range(sc.min_outputs, sc.max_outputs));
    for (const auto& spec : sc.attributes) {
      auto it = n.attrs.find(spec.name);
      if (it == n.attrs.end()) {
        if (spec.required)
          report_node("missing-attribute", s, g, v,
                      "missing required attribute '" + spec.name + "'" + (spec.kind.empty() ? "" : " (" + spec.kind + ")"));
      } else if (!spec.kind.empty() && it->second.kind_name() != spec.kind) {
        report_node("attribute-kind", s, g, v,
                    "attribute '" + spec.name + "' is a " + std::string(it->second.kind_name()) + ", expected " +
                        spec.kind);
      }
    }
  }

  // ---- recursion: a cycle in the call graph of the functions (no model recurses; a run of
  // one would only stop at the executor's call-depth limit). Iterative DFS, three colours.

  std::size_t scope_of_callee(std::size_t s, std::string_view name) const {
    for (std::size_t i = s; i != npos; i = scopes_[i].parent)
      if (const G* f = scopes_[i].g->find_function(name)) {
        for (std::size_t k = 0; k < scopes_.size(); ++k)
          if (scopes_[k].g == f && scopes_[k].parent == i) return k;
        return npos;
      }
    return npos;
  }

  void check_recursion() {
    const std::size_t n = scopes_.size();
    std::vector<std::vector<std::size_t>> calls(n);
    for (std::size_t s = 0; s < n; ++s) {
      const G& g = *scopes_[s].g;
      for (auto v : g.nodes())
        for (const auto& [key, a] : g[v].attrs) {
          (void)key;
          auto add = [&](const std::string& fn) {
            const std::size_t c = scope_of_callee(s, fn);
            if (c != npos) calls[s].push_back(c);
          };
          if (const auto* f = std::get_if<function_ref>(&a.value())) add(f->name);
          else if (const auto* fs = std::get_if<std::vector<function_ref>>(&a.value()))
            for (const auto& f : *fs) add(f.name);
        }
    }
    std::vector<char> colour(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<std::size_t> path;
    std::vector<std::pair<std::size_t, std::size_t>> stack;  // (scope, next call to follow)
    for (std::size_t root = 0; root < n; ++root) {
      if (colour[root]) continue;
      stack.emplace_back(root, 0);
      colour[root] = 1;
      path.push_back(root);
      while (!stack.empty()) {
        auto& [s, next] = stack.back();
        if (next == calls[s].size()) {
          colour[s] = 2;
          path.pop_back();
          stack.pop_back();
          continue;
        }
        const std::size_t c = calls[s][next++];
        if (colour[c] == 1) {
          std::string chain;
          bool on = false;
          for (std::size_t p : path) {
            if (p == c) on = true;
            if (on) chain += scopes_[p].path + " -> ";
          }
          report("recursive-function", scopes_[c].path, std::string(), std::string(),
                 "the function calls itself (" + chain + scopes_[c].path + "); recursion is not allowed");
          return;  // one report: the rest would repeat it
        }
        if (colour[c] == 0) {
          colour[c] = 1;
          path.push_back(c);
          stack.emplace_back(c, 0);
        }
      }
    }
  }

  // ---- cycles: Kahn to find the nodes on or after a cycle, then iterative Tarjan on those,
  // and a BFS inside each strongly connected part for a shortest cycle through its first node.

  void check_cycles(std::size_t s, const G& g) {
    node_map<G, std::size_t> indeg(g, 0);
    std::vector<node_id> queue;
    queue.reserve(g.num_nodes());
    for (auto v : g.nodes()) {
      std::size_t d = 0;
      for (auto e : g.in_edges(v))
        if (!ignored_edge(g, e)) ++d;
      indeg[v] = d;
      if (d == 0) queue.push_back(v);
    }
    for (std::size_t head = 0; head < queue.size(); ++head)
      for (auto e : g.out_edges(queue[head]))
        if (!ignored_edge(g, e) && --indeg[g.target(e)] == 0) queue.push_back(g.target(e));
    if (queue.size() == g.num_nodes()) return;
    // pending nodes: indeg != 0. Every cycle lies among them.

    constexpr std::size_t unvisited = static_cast<std::size_t>(-1);
    node_map<G, std::size_t> index(g, unvisited), low(g, 0), comp(g, unvisited);
    node_map<G, char> on_stack(g, 0);
    std::vector<node_id> tstack;
    using out_iter = decltype(g.out_edges(std::declval<node_id>()).begin());
    struct frame {
      node_id v;
      out_iter it, end;
    };
    std::vector<frame> frames;
    std::size_t counter = 0, ncomp = 0;
    auto push = [&](node_id v) {
      index[v] = low[v] = counter++;
      tstack.push_back(v);
      on_stack[v] = 1;
      auto r = g.out_edges(v);
      frames.push_back({v, r.begin(), r.end()});
    };
    for (auto root : g.nodes()) {
      if (indeg[root] == 0 || index[root] != unvisited) continue;
      push(root);
      while (!frames.empty()) {
        frame& f = frames.back();
        if (f.it != f.end) {
          auto e = *f.it;
          ++f.it;
          node_id w = g.target(e);
          if (ignored_edge(g, e) || indeg[w] == 0) continue;
          if (index[w] == unvisited) push(w);  // invalidates f
          else if (on_stack[w]) low[f.v] = std::min(low[f.v], index[w]);
          continue;
        }
        node_id v = f.v;
        frames.pop_back();
        if (!frames.empty()) low[frames.back().v] = std::min(low[frames.back().v], low[v]);
        if (low[v] == index[v]) {
          node_id w;
          do {
            w = tstack.back();
            tstack.pop_back();
            on_stack[w] = 0;
            comp[w] = ncomp;
          } while (w != v);
          ++ncomp;
        }
      }
    }

    // One cycle per non-trivial component, reported from the component's first node in node order.
    std::vector<char> reported(ncomp, 0);
    node_map<G, std::size_t> parent(g, unvisited);  // BFS: index into `bfs` of the predecessor
    std::vector<node_id> bfs;
    for (auto v : g.nodes()) {
      if (indeg[v] == 0 || reported[comp[v]]) continue;
      const std::size_t c = comp[v];
      // BFS from v inside the component until an edge returns to v.
      bfs.clear();
      bfs.push_back(v);
      parent[v] = unvisited - 1;  // visited, root
      std::size_t closing = unvisited;
      for (std::size_t head = 0; head < bfs.size() && closing == unvisited; ++head)
        for (auto e : g.out_edges(bfs[head])) {
          node_id w = g.target(e);
          if (ignored_edge(g, e) || indeg[w] == 0 || comp[w] != c) continue;
          if (w == v) {
            closing = head;
            break;
          }
          if (parent[w] == unvisited) {
            parent[w] = head;
            bfs.push_back(w);
          }
        }
      if (closing == unvisited) continue;  // trivial component: a node after a cycle
      reported[c] = 1;
      std::vector<node_id> cyc;
      for (std::size_t i = closing;; i = parent[bfs[i]]) {
        cyc.push_back(bfs[i]);
        if (i == 0) break;
      }
      std::reverse(cyc.begin(), cyc.end());
      constexpr std::size_t shown = 32;
      std::string r = "cycle: ";
      for (std::size_t i = 0; i < cyc.size() && i < shown; ++i) r += g[cyc[i]].name + " -> ";
      if (cyc.size() > shown) r += "... (" + plural(cyc.size() - shown, "more node") + ") -> ";
      r += g[v].name;
      report_node("cycle", s, g, v, std::move(r));
    }
  }

  const verify_options& opt_;
  const G* top_ = nullptr;
  std::vector<violation>& out_;
  std::vector<verify_scope<G>> scopes_;
};

/// Every violation of `g` (`verify_report`'s work; not inline, so that the
/// separate-compilation mode instantiates it for `graph<>` once, in analysis/src/verify.cpp).
template <class G>
std::vector<violation> verify_all(const G& g, const verify_options& options) {
  std::vector<violation> out;
  verifier<G>(options, out).run(g);
  return out;
}
#if !GPASS_HEADER_ONLY
extern template std::vector<violation> verify_all<graph<>>(const graph<>& g, const verify_options& options);
#endif

}  // namespace detail

/// Function object: `verify_report(g[, options])` checks `g` (and, by default, every function
/// of its library) and returns every violation found, in a deterministic order: the top graph
/// first, then functions depth first in name order; within a graph, node by node in node
/// order, then whole-function rules, then cycles. An empty result means the graph is valid.
///
/// Requirements: `G` is a `gpass::graph`. O(V+E) plus the attributes; no recursion.
/// \code
///   for (const auto& v : gpass::verify_report(g))
///     std::cerr << v.rule << ": " << v.message << '\n';
///   // cycle: node 'a' (op A): cycle: a -> b -> a
/// \endcode
struct verify_report_fn {
  template <graph_type G>
  std::vector<violation> operator()(const G& g, const verify_options& options = {}) const {
    return detail::verify_all(g, options);
  }
};
inline constexpr verify_report_fn verify_report{};

/// Function object: `verify(g[, options])` throws `gpass::error` for the first violation that
/// `verify_report` finds (its context names the node and op; the message names the function
/// and says how many more violations there are), and returns normally for a valid graph.
/// \code
///   try { gpass::verify(g); }
///   catch (const gpass::error& e) {
///     // gpass: node 'add' (op Add): input 1 is not connected (and 2 more violations)
///   }
/// \endcode
struct verify_fn {
  template <graph_type G>
  void operator()(const G& g, const verify_options& options = {}) const {
    auto vs = verify_report(g, options);
    if (vs.empty()) return;
    const violation& v = vs.front();
    error_context c;
    std::string msg;
    if (v.node.empty()) {
      msg = v.message;
    } else {
      c.node = v.node;
      c.op = v.op;
      msg = v.reason;
      if (!v.function.empty()) msg += " (in function '" + v.function + "')";
    }
    if (vs.size() > 1) msg += " (and " + detail::plural(vs.size() - 1, "more violation") + ")";
    throw error(std::move(msg), std::move(c));
  }
};
inline constexpr verify_fn verify{};

}  // namespace gpass
