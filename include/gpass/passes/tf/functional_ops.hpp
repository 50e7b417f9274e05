// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file functional_ops.hpp
/// `gpass::functional_ops`: the "lower-functional-ops" pass: TensorFlow 2's functional
/// control flow (control flow v2) and function calls to gpass's own `while` / `if` and inlined
/// bodies.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/options.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/passes/detail/inline_call.hpp>
#include <gpass/passes/tf/detail/control_flow.hpp>

namespace gpass {

/// Pass "lower-functional-ops": what `tf.function` code freezes to, in gpass's functional IR,
/// on the graph and every function of its library:
///
/// | TensorFlow | gpass |
/// |------------|-------|
/// | `While` / `StatelessWhile(vars) {cond, body}` | `while(vars) {cond, body}` (the condition's result converted to bool when it is not) |
/// | `If` / `StatelessIf(pred, args) {then_branch, else_branch}` | `if(pred, args)` (a numeric scalar predicate is true when non-zero, as in TF; a non-scalar one is a run-time error, where TF tests for emptiness) |
/// | `Case` / `StatelessCase(index, args) {branches}` | `if(index == 0, args) {then = branch 0, else = @<node>_case_1}`, each `_case_k` an `if(index == k)` over the rest; the last branch takes every other index (TF's default branch) |
/// | `PartitionedCall` / `StatefulPartitionedCall(args) {f}` | the body of `f` inlined (option `inline-calls`, default on) |
///
/// Inlining copies the callee's nodes into the caller as `<call>/<node>` (devices: the
/// node's own, else the call's), reads the call's inputs where the body read its arguments,
/// and moves the call's uses to the body's results. Control inputs of the call become control
/// inputs of the copied nodes that have no data input; when the call has control successors a
/// `tf::NoOp` named as the call runs after every copied node and before them. Calls inside
/// inlined bodies are inlined in turn, at most 64 levels deep (a deeper chain is an error
/// naming the call: a recursive function). Functions no node refers to any more (directly or
/// through other functions) are removed from the library. Statistics: `loops`, `conds`,
/// `cases`, `inlined-calls`, `inlined-nodes`, `removed-functions`, `variable-handles-moved`.
///
/// Variable handles (`VarHandleOp`) passed into a loop or a branch are moved into the
/// functions (each gets copies of the `VarHandleOp` where it used the argument; the loop
/// variable or argument goes), so that `variables-to-globals` lowers the reads and writes
/// there (see `forward_variables`).
/// \code
///   %w:2 = tf::StatelessWhile(%i, %x) {body = @b, cond = @c, T = [i32, f32]}
///   // becomes
///   %w:2 = while(%i, %x) {body = @b, cond = @c}
/// \endcode
struct functional_ops_fn : lowering_pass_base<functional_ops_fn> {
  static constexpr std::string_view name = "lower-functional-ops";
  static constexpr std::string_view description =
      "TensorFlow control flow v2 (While/If/Case) to gpass while/if, PartitionedCall/StatefulPartitionedCall inlined";
  static constexpr std::array options{option_spec{"inline-calls", option_type::boolean, "true",
                                                  "inline PartitionedCall/StatefulPartitionedCall bodies (false: keep the calls)"}};
  using provides_facts = facts<>;

  /// How deep calls may nest while inlining (calls in inlined bodies are inlined in turn).
  static constexpr int max_inline_depth = 64;

  template <class G>
  void run(G& g, pass_context& ctx) const {
    stats s;
    const bool do_inline = option_bool(ctx, "inline-calls");
    // the graph, then the functions its lowered nodes refer to, and so on: a function that
    // was only called (inlined everywhere) is never lowered itself, and goes at the end
    std::vector<G*> work{&g};
    std::set<std::string, std::less<>> queued;
    while (!work.empty()) {
      G& h = *work.back();
      work.pop_back();
      if (do_inline) inline_calls(g, h, s);
      lower_control_flow(g, h, s);
      for_each_function_ref(h, [&](const std::string& f) {
        if (queued.insert(f).second)
          if (G* fn = g.find_function(f)) work.push_back(fn);
      });
    }
    s.removed_functions = static_cast<std::int64_t>(remove_unused_functions(g));
    ctx.add_statistic("loops", s.loops);
    ctx.add_statistic("conds", s.conds);
    ctx.add_statistic("cases", s.cases);
    ctx.add_statistic("inlined-calls", s.calls);
    ctx.add_statistic("inlined-nodes", s.nodes);
    ctx.add_statistic("removed-functions", s.removed_functions);
    ctx.add_statistic("variable-handles-moved", s.variables);
  }

 private:
  struct stats {
    std::int64_t loops = 0, conds = 0, cases = 0, calls = 0, nodes = 0, removed_functions = 0, variables = 0;
  };

  template <class Node>
  static bool is_tf_op(const Node& n, std::initializer_list<std::string_view> ops) {
    if (!n.domain.empty() && n.domain != "tf") return false;
    for (auto o : ops)
      if (n.op == o) return true;
    return false;
  }

  template <class Node>
  static std::string function_attr(const Node& n, const char* a) {
    auto it = n.attrs.find(a);
    if (it == n.attrs.end() || !it->second.template is<function_ref>())
      fail(n.op + " has no function attribute '" + std::string(a) + "'", n.name, n.op);
    return it->second.template as<function_ref>().name;
  }

  template <class G>
  static const G& callee(const G& root, const typename G::node_type& n, const std::string& f) {
    const G* fn = root.find_function(f);
    if (!fn) fail(n.op + " calls function '" + f + "', which the library does not have", n.name, n.op);
    return *fn;
  }

  /// The function_entry and return nodes of a function.
  template <class G>
  static std::pair<typename G::node_id, typename G::node_id> interface_of(const G& f, const std::string& fname,
                                                                          const typename G::node_type& caller) {
    return detail::function_interface(f, fname, caller, name);
  }

  // ---- inlining ---------------------------------------------------------------------------

  template <class G>
  static void inline_calls(const G& root, G& h, stats& s) {
    using node_id = typename G::node_id;
    std::vector<std::pair<node_id, int>> work;  // (call, depth)
    for (auto v : h.nodes())
      if (is_tf_op(h[v], {"PartitionedCall", "StatefulPartitionedCall"})) work.emplace_back(v, 0);
    while (!work.empty()) {
      auto [c, depth] = work.back();
      work.pop_back();
      if (depth >= max_inline_depth)
        fail("calls nest deeper than " + std::to_string(max_inline_depth) + " levels while inlining (a recursive function?)",
             h[c].name, h[c].op);
      for (auto v : inline_one(root, h, c, s))
        if (is_tf_op(h[v], {"PartitionedCall", "StatefulPartitionedCall"})) work.emplace_back(v, depth + 1);
    }
  }

  /// Inlines call `c` of `h`; returns the new nodes. A `tf::NoOp` named as the call carries
  /// its control successors.
  template <class G>
  static std::vector<typename G::node_id> inline_one(const G& root, G& h, typename G::node_id c, stats& s) {
    const std::string fname = function_attr(h[c], "f");
    const G& f = callee(root, h[c], fname);
    auto added = detail::inline_call(h, c, f, fname, name, [](const typename G::node_type& call) {
      typename G::node_type noop;
      noop.name = call.name;
      noop.op = "NoOp";
      noop.domain = "tf";
      noop.device = call.device;
      noop.outputs.clear();
      return noop;
    });
    ++s.calls;
    s.nodes += static_cast<std::int64_t>(added.size());
    return added;
  }

  // ---- While / If / Case --------------------------------------------------------------------

  template <class G>
  static void lower_control_flow(G& root, G& h, stats& s) {
    using node_id = typename G::node_id;
    std::vector<node_id> functional;
    for (auto v : h.nodes())
      if (is_tf_op(h[v], {"While", "StatelessWhile", "If", "StatelessIf", "Case", "StatelessCase"})) functional.push_back(v);
    for (auto v : functional) {
      const typename G::node_type n = h[v];
      typename G::node_type m;
      m.device = n.device;
      m.outputs.assign(n.outputs.size(), type{});
      std::vector<typename G::input_ref> ins = h.inputs(v);
      if (n.op == "While" || n.op == "StatelessWhile") {
        m.op = "while";
        m.attrs.emplace("cond", function_ref{function_attr(n, "cond")});
        m.attrs.emplace("body", function_ref{function_attr(n, "body")});
        if (auto it = n.attrs.find("parallel_iterations"); it != n.attrs.end()) m.attrs.emplace("parallel_iterations", it->second);
        ++s.loops;
      } else if (n.op == "If" || n.op == "StatelessIf") {
        if (ins.empty()) fail(n.op + " has no predicate input", n.name, n.op);
        m.op = "if";
        m.attrs.emplace("then_branch", function_ref{function_attr(n, "then_branch")});
        m.attrs.emplace("else_branch", function_ref{function_attr(n, "else_branch")});
        ++s.conds;
      } else {
        if (ins.empty()) fail(n.op + " has no branch index input", n.name, n.op);
        auto it = n.attrs.find("branches");
        if (it == n.attrs.end() || !it->second.template is<std::vector<function_ref>>() ||
            it->second.template as<std::vector<function_ref>>().empty())
          fail(n.op + " has no branches", n.name, n.op);
        std::vector<std::string> branches;
        for (const auto& b : it->second.template as<std::vector<function_ref>>()) {
          callee(root, n, b.name);
          branches.push_back(b.name);
        }
        lower_case(root, h, v, branches);
        ++s.cases;
        continue;
      }
      const bool loop = m.op == "while";
      const auto w = replace_with(h, v, std::move(m), ins);
      s.variables += forward_variables(root, h, w, loop);
      if (loop) {  // (after forward_variables, which may have made the condition a copy)
        const std::string c = h[w].attrs.at("cond").template as<function_ref>().name;
        h[w].attrs["cond"] = function_ref{bool_condition(root, h[w], c)};
      }
    }
  }

  /// A TensorFlow variable handle (`VarHandleOp`, through `Identity` nodes) passed into a
  /// `while` (a loop variable the body returns unchanged) or an `if` (a branch argument) no
  /// longer travels: the functions get copies of the `VarHandleOp` where they used the
  /// argument, and the argument (with the loop's output, whose uses read the handle) goes.
  /// `variables-to-globals` then sees the variable's reads and writes in the functions.
  /// The functions are copied first (`<f>_vars`), so other callers keep theirs. Returns how
  /// many handles were moved.
  template <class G>
  static std::int64_t forward_variables(G& root, G& h, typename G::node_id w, bool loop) {
    using node_id = typename G::node_id;
    const std::size_t first = loop ? 0 : 1;  // while: every input is a loop variable; if: input 0 is the predicate
    std::vector<std::pair<std::size_t, node_id>> handles;  // (argument, VarHandleOp)
    for (std::size_t k = first; k < h.num_inputs(w); ++k) {
      auto in = h.input(w, static_cast<int>(k));
      while (!in.empty && is_tf_op(h[in.node], {"Identity"}) && h.num_inputs(in.node) == 1) in = h.input(in.node, 0);
      if (!in.empty && is_tf_op(h[in.node], {"VarHandleOp"})) handles.emplace_back(k - first, in.node);
    }
    if (handles.empty()) return 0;
    const std::vector<std::string> attrs = loop ? std::vector<std::string>{"cond", "body"}
                                                : std::vector<std::string>{"then_branch", "else_branch"};
    std::vector<G> copies;
    for (const auto& a : attrs) copies.push_back(callee(root, h[w], h[w].attrs.at(a).template as<function_ref>().name));
    // a loop's body must hand the handle back unchanged
    std::vector<std::size_t> moved;
    for (const auto& [arg, var] : handles) {
      bool ok = true;
      if (loop) {
        G& body = copies[1];
        const auto [entry, ret] = interface_of(body, "body", h[w]);
        const auto r = arg < body.num_inputs(ret) ? body.input(ret, static_cast<int>(arg)) : typename G::input_ref{};
        ok = !r.empty && r.node == entry && r.port == static_cast<int>(arg);
      }
      if (ok) moved.push_back(arg);
    }
    if (moved.empty()) return 0;
    for (G& f : copies) {
      const bool is_body = loop && &f == &copies[1];
      const auto [entry, ret] = interface_of(f, "function", h[w]);
      if (entry == ret) continue;
      for (std::size_t i = moved.size(); i-- > 0;) {
        const std::size_t arg = moved[i];
        node_id var{};
        for (const auto& [a, x] : handles)
          if (a == arg) var = x;
        std::optional<node_id> copy;
        for (const auto& u : f.uses(entry, static_cast<int>(arg))) {
          if (u.node == ret && is_body) continue;  // the body's hand-back: goes below
          if (!copy) {
            typename G::node_type x = h[var];
            x.name = f.unique_name(x.name);
            copy = f.add_node(std::move(x));
          }
          f.set_input(u.node, u.dst_port, *copy, 0);
        }
        if (is_body) f.erase_inputs(ret, {static_cast<int>(arg)});
        drop_output(f, entry, arg);
        if (auto it = f[entry].attrs.find("names"); it != f[entry].attrs.end() && it->second.template is<std::vector<std::string>>()) {
          auto names = it->second.template as<std::vector<std::string>>();
          if (arg < names.size()) names.erase(names.begin() + static_cast<std::ptrdiff_t>(arg));
          it->second = std::move(names);
        }
      }
    }
    for (std::size_t a = 0; a < attrs.size(); ++a) {
      const std::string old = h[w].attrs.at(attrs[a]).template as<function_ref>().name;
      const std::string name = root.unique_function_name(old + "_vars");
      root.add_function(name, std::move(copies[a]));
      h[w].attrs[attrs[a]] = function_ref{name};
    }
    // the node: the loop's outputs read the handle itself; the arguments go
    std::vector<int> ports;
    for (std::size_t i = moved.size(); i-- > 0;) {
      const std::size_t arg = moved[i];
      if (loop) {
        for (const auto& [a, x] : handles)
          if (a == arg) h.replace_uses(w, static_cast<int>(arg), x, 0);
        drop_output(h, w, arg);
      }
      ports.push_back(static_cast<int>(arg + first));
    }
    h.erase_inputs(w, ports);
    return static_cast<std::int64_t>(moved.size());
  }

  /// Removes output port `port` of `v` (which has no uses left) and renumbers the later ones.
  template <class G>
  static void drop_output(G& g, typename G::node_id v, std::size_t port) {
    auto& outs = g[v].outputs;
    if (port >= outs.size()) return;
    for (std::size_t p = port + 1; p < outs.size(); ++p)
      for (const auto& u : g.uses(v, static_cast<int>(p))) g.set_input(u.node, u.dst_port, v, static_cast<int>(p - 1));
    outs.erase(outs.begin() + static_cast<std::ptrdiff_t>(port));
  }

  /// Replaces `v` by a new node `m` (same name, control edges and uses) reading `ins`.
  template <class G>
  static typename G::node_id replace_with(G& h, typename G::node_id v, typename G::node_type m,
                                          const std::vector<typename G::input_ref>& ins) {
    const auto w = detail::take_over_node(h, v, std::move(m));
    for (const auto& in : ins) {
      if (in.empty) h.add_empty_input(w);
      else h.add_input(w, in.node, in.port);
    }
    h.remove_node(v);
    return w;
  }

  /// The condition function of a while loop, returning a bool: `f` itself when its result is
  /// declared bool (or not declared), else a copy `<f>_bool` whose result goes through a
  /// `tf::Cast` to bool (TF: a non-zero number is true).
  template <class G>
  static std::string bool_condition(G& root, const typename G::node_type& n, const std::string& f) {
    const G& fn = callee(root, n, f);
    const auto [entry, ret] = interface_of(fn, f, n);
    if (fn.num_inputs(ret) != 1)
      fail("the condition '" + f + "' returns " + std::to_string(fn.num_inputs(ret)) + " values, expected 1", n.name, n.op);
    const auto in = fn.input(ret, 0);
    if (in.empty) fail("the condition '" + f + "' returns an empty value", n.name, n.op);
    const type& t = fn[in.node].outputs.at(static_cast<std::size_t>(in.port));
    if (!t.is_tensor() || t.tensor().element == dtype::undefined || t.tensor().element == dtype::bool_) return f;
    const std::string name = f + "_bool";
    if (root.find_function(name)) return name;
    G copy = fn;
    const auto [e2, r2] = interface_of(copy, f, n);
    (void)e2;
    const auto src = copy.input(r2, 0);
    typename G::node_type cast;
    cast.name = copy.unique_name("to_bool");
    cast.op = "Cast";
    cast.domain = "tf";
    cast.attrs.emplace("SrcT", t.tensor().element);
    cast.attrs.emplace("DstT", dtype::bool_);
    cast.attrs.emplace("Truncate", false);
    cast.outputs = {type(tensor_type{dtype::bool_, t.tensor().shape})};
    const auto cn = copy.add_node(std::move(cast));
    copy.add_input(cn, src.node, src.port);
    copy.set_input(r2, 0, cn, 0);
    root.add_function(name, std::move(copy));
    return name;
  }

  /// `Case(index, args) {branches}` -> `if(index == 0, args, index) {@<b0>_case, @<v>_case_1}`
  /// and functions `<v>_case_k(args, index) = if(index == k, args, index) {@<bk>_case,
  /// <v>_case_{k+1}}`; the last `else` is the last branch. `<b>_case` is branch `b` with one
  /// more (unused) argument, the index, so that every branch of the chain takes the same
  /// arguments.
  template <class G>
  static void lower_case(G& root, G& h, typename G::node_id v, const std::vector<std::string>& branches) {
    using node_id = typename G::node_id;
    using ref = typename G::input_ref;
    const typename G::node_type n = h[v];
    const auto ins = h.inputs(v);
    const std::size_t nargs = ins.size() - 1;
    const std::ptrdiff_t nb = static_cast<std::ptrdiff_t>(branches.size());
    // the branches, taking the index last
    std::vector<std::string> with_index;
    for (const auto& b : branches) with_index.push_back(branch_with_index(root, n, b, nargs));
    // index == k as nodes of `into`
    auto equal_to = [&](G& into, ref index, std::ptrdiff_t k) {
      const node_id cn = detail::add_int32_const(into, n.name + "/branch_" + std::to_string(k), static_cast<std::int32_t>(k), n.device);
      typename G::node_type e;
      e.name = into.unique_name(n.name + "/is_branch_" + std::to_string(k));
      e.op = "Equal";
      e.domain = "tf";
      e.device = n.device;
      e.attrs.emplace("T", dtype::int32);
      e.attrs.emplace("incompatible_shape_error", true);
      e.outputs = {type(tensor_type{dtype::bool_, shape::scalar()})};
      const node_id en = into.add_node(std::move(e));
      into.add_input(en, index.node, index.port);
      into.add_input(en, cn, 0);
      return ref{en, 0, false};
    };
    auto if_node = [&](std::ptrdiff_t k, const std::string& else_f) {
      typename G::node_type m;
      m.op = "if";
      m.device = n.device;
      m.attrs.emplace("then_branch", function_ref{with_index[static_cast<std::size_t>(k)]});
      m.attrs.emplace("else_branch", function_ref{else_f});
      m.outputs.assign(n.outputs.size(), type{});
      return m;
    };
    std::string next = with_index.back();
    for (std::ptrdiff_t k = nb - 2; k >= 1; --k) {
      G fn;
      typename G::node_type entry;
      entry.name = "args";
      entry.op = "function_entry";
      entry.outputs.assign(nargs + 1, type{});
      entry.outputs.back() = tensor_type{dtype::int32, shape::scalar()};
      const node_id en = fn.add_node(std::move(entry));
      const ref pred = equal_to(fn, ref{en, static_cast<int>(nargs), false}, k);
      typename G::node_type m = if_node(k, next);
      m.name = "case";
      const node_id w = fn.add_node(std::move(m));
      fn.add_input(w, pred.node, pred.port);
      for (std::size_t a = 0; a <= nargs; ++a) fn.add_input(w, en, static_cast<int>(a));
      typename G::node_type r;
      r.name = "return";
      r.op = "return";
      r.outputs.clear();
      const node_id rn = fn.add_node(std::move(r));
      for (std::size_t o = 0; o < n.outputs.size(); ++o) fn.add_input(rn, w, static_cast<int>(o));
      next = root.unique_function_name(n.name + "_case_" + std::to_string(k));
      root.add_function(next, std::move(fn));
    }
    // in the graph: if(index == 0, args, index) {branch 0, next}; one branch: always it
    std::vector<ref> if_ins{equal_to(h, ins[0], 0)};
    for (std::size_t a = 1; a < ins.size(); ++a) if_ins.push_back(ins[a]);
    if_ins.push_back(ins[0]);
    replace_with(h, v, if_node(0, nb == 1 ? with_index[0] : next), if_ins);
  }

  /// Branch `b` of a Case with one more argument (the branch index, unused): `<b>_case`.
  template <class G>
  static std::string branch_with_index(G& root, const typename G::node_type& n, const std::string& b, std::size_t nargs) {
    const std::string name = b + "_case";
    if (root.find_function(name)) return name;
    G copy = callee(root, n, b);
    auto [entry, ret] = interface_of(copy, b, n);
    if (entry == ret) {  // no arguments: an entry of its own
      typename G::node_type e;
      e.name = copy.unique_name("args");
      e.op = "function_entry";
      e.outputs.clear();
      entry = copy.add_node(std::move(e));
    }
    if (copy[entry].outputs.size() != nargs)
      fail("branch '" + b + "' takes " + std::to_string(copy[entry].outputs.size()) + " arguments, the Case passes " +
               std::to_string(nargs),
           n.name, n.op);
    copy[entry].outputs.push_back(tensor_type{dtype::int32, shape::scalar()});
    if (auto it = copy[entry].attrs.find("names"); it != copy[entry].attrs.end() && it->second.template is<std::vector<std::string>>()) {
      auto names = it->second.template as<std::vector<std::string>>();
      names.push_back("branch_index");
      it->second = std::move(names);
    }
    root.add_function(name, std::move(copy));
    return name;
  }

};

/// The `lower-functional-ops` pass object (see `functional_ops_fn`).
inline constexpr functional_ops_fn functional_ops{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void functional_ops_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
