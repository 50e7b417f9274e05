// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file functionalize_loops.hpp
/// `gpass::functionalize_loops`: TensorFlow v1 loop frames (Enter / Merge / Switch / Exit /
/// NextIteration / LoopCond) to functional `while` nodes with condition and body functions
/// (seed 000, "Functionalize Loop").

#include <algorithm>
#include <cstddef>
#include <cstdint>
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
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/passes/tf/detail/control_flow.hpp>

namespace gpass {

namespace detail {

/// Functionalizes the loops of one graph `g` (the top graph or a function of `top`'s
/// library); new functions go to `top`'s library. See `functionalize_loops_fn`.
template <class G>
class loop_functionalizer {
  using node_id = typename G::node_id;
  static constexpr std::string_view pass = "functionalize-loops";
  static constexpr int unvisited = -2, free_node = -1;

  // Roles of the nodes of the frame being converted.
  enum role : unsigned char { other = 0, var_enter, invariant_enter, loop_merge, loop_switch, next_iteration, loop_exit, loop_cond };

  struct frame {
    std::string name;
    int parent = 0;
    int depth = 0;
    std::vector<node_id> nodes;
  };
  struct loop_var {
    node_id merge{}, enter{}, next{};
    std::vector<node_id> exits;
  };

 public:
  loop_functionalizer(G& g, G& top)
      : g_(g), top_(top), frame_of_(g, unvisited), role_(g, other), index_(g, -1), in_cond_(g, 0), in_body_(g, 0), gone_(g, 0) {}

  /// Converts every frame, innermost first. Returns the number of loops converted.
  std::int64_t run() {
    bool any = false;
    for (auto v : g_.nodes())
      if (is_v1_control_flow(g_[v])) any = true;
    if (!any) return 0;
    assign_frames();
    std::vector<int> order;
    for (int f = 1; f < static_cast<int>(frames_.size()); ++f) order.push_back(f);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return frames_[a].depth > frames_[b].depth; });
    std::vector<node_id> free_used;  // free constants read by some frame: removed when left unused
    for (auto v : g_.nodes())
      if (frame_of_[v] == free_node && g_.out_degree(v) > 0) free_used.push_back(v);
    std::int64_t loops = 0;
    for (int f : order) {
      convert(f);
      ++loops;
    }
    // one bulk removal: removing frame by frame would filter the edge lists of a node that
    // feeds many loops (a shared invariant) once per loop
    g_.remove_nodes(dead_);
    std::vector<node_id> unused;
    for (auto v : free_used)
      if (g_.out_degree(v) == 0) unused.push_back(v);
    g_.remove_nodes(unused);
    for (auto v : g_.nodes()) {
      const auto& n = g_[v];
      if (is_core_op(n, "Enter") || is_core_op(n, "Exit") || is_core_op(n, "NextIteration") || is_core_op(n, "LoopCond"))
        throw_pass_error(pass, "v1 loop node outside of any loop frame (no Enter leads to it)", n.name, n.op);
    }
    try {
      (void)topological_order(g_);
    } catch (const error& e) {
      throw e.with_pass(std::string(pass));
    }
    return loops;
  }

 private:
  [[noreturn]] void fail(node_id v, std::string message) const { throw_pass_error(pass, std::move(message), g_[v].name, g_[v].op); }

  std::string frame_label(int f) const { return f == 0 ? std::string("the top level") : "frame '" + frames_[f].name + "'"; }

  // ---- frames ----------------------------------------------------------------------------

  // The frame an Enter node opens when reached from frame `parent` (created on first use).
  int child_frame(int parent, node_id enter) {
    auto it = g_[enter].attrs.find("frame_name");
    if (it == g_[enter].attrs.end() || !it->second.template is<std::string>())
      fail(enter, "Enter has no string attribute 'frame_name'");
    const std::string& name = it->second.template as<std::string>();
    auto [pos, fresh] = frame_by_name_.try_emplace(name, static_cast<int>(frames_.size()));
    if (fresh) {
      frames_.push_back({name, parent, frames_[parent].depth + 1, {}});
    } else if (frames_[pos->second].parent != parent) {
      fail(enter, "frame '" + name + "' is entered from " + frame_label(frames_[pos->second].parent) + " and from " +
                      frame_label(parent));
    }
    return pos->second;
  }

  // Spreads frames from the queued nodes along data and control edges, as TensorFlow's
  // executor does: an Enter opens its child frame, an Exit's successors are in the parent.
  void spread(std::vector<node_id>& queue) {
    for (std::size_t head = 0; head < queue.size(); ++head) {
      const node_id n = queue[head];
      const int f = frame_of_[n];
      for (auto e : g_.out_edges(n)) {
        const node_id m = g_.target(e);
        int t = f;
        if (is_core_op(g_[n], "Exit")) {
          if (f == 0) fail(n, "Exit at the top level (no Enter leads to it)");
          t = frames_[f].parent;
        }
        if (is_core_op(g_[m], "Enter")) t = child_frame(t, m);
        int& fm = frame_of_[m];
        if (fm == unvisited) {
          fm = t;
          queue.push_back(m);
        } else if (fm != t && fm != free_node) {
          fail(m, "inputs from different loop frames: " + frame_label(fm) + " and " + frame_label(t));
        }
      }
    }
    queue.clear();
  }

  void assign_frames() {
    frames_.push_back({"", 0, 0, {}});
    std::vector<node_id> queue, pending;  // pending: Enters of free constants
    for (auto v : g_.nodes()) {
      if (g_.in_degree(v) != 0) continue;
      if (is_free_constant(g_, v)) {
        frame_of_[v] = free_node;
        for (auto e : g_.out_edges(v))
          if (is_core_op(g_[g_.target(e)], "Enter")) pending.push_back(g_.target(e));
      } else {
        frame_of_[v] = 0;
        queue.push_back(v);
      }
    }
    spread(queue);
    // An Enter whose only input is a free constant joins the frame of its name (another
    // Enter opened it), or opens it at the top level.
    for (bool progress = true; progress;) {
      progress = false;
      for (auto en : pending) {
        if (frame_of_[en] != unvisited) continue;
        auto it = g_[en].attrs.find("frame_name");
        if (it == g_[en].attrs.end() || !it->second.template is<std::string>()) fail(en, "Enter has no string attribute 'frame_name'");
        auto fr = frame_by_name_.find(it->second.template as<std::string>());
        if (fr == frame_by_name_.end()) continue;
        frame_of_[en] = fr->second;
        queue.push_back(en);
        spread(queue);
        progress = true;
      }
      if (progress) continue;
      for (auto en : pending)
        if (frame_of_[en] == unvisited) {
          frame_of_[en] = child_frame(0, en);
          queue.push_back(en);
          spread(queue);
          progress = true;
          break;
        }
    }
    // Nodes nothing reached (fed only by free constants, or a cycle with no way in) are at
    // the top level.
    for (auto v : g_.nodes())
      if (frame_of_[v] == unvisited) {
        frame_of_[v] = 0;
        queue.push_back(v);
        spread(queue);
      }
    for (auto v : g_.nodes())
      if (frame_of_[v] >= 1) frames_[frame_of_[v]].nodes.push_back(v);
  }

  // ---- one frame -------------------------------------------------------------------------

  void convert(int fi) {
    const frame& F = frames_[fi];
    const std::string where = "frame '" + F.name + "'";
    std::vector<node_id> conds, merges, enters, nexts, switches, exits;
    for (auto v : F.nodes) {
      const auto& n = g_[v];
      if (!n.domain.empty()) continue;
      if (n.op == "LoopCond") conds.push_back(v);
      else if (n.op == "Enter") enters.push_back(v);
      else if (n.op == "NextIteration") nexts.push_back(v);
      else if (n.op == "Switch") switches.push_back(v);
      else if (n.op == "Exit") exits.push_back(v);
      else if (n.op == "Merge") {
        for (const auto& in : g_.inputs(v))
          if (!in.empty && is_core_op(g_[in.node], "NextIteration")) {
            merges.push_back(v);
            break;
          }
      }
    }
    if (conds.empty()) fail(F.nodes.front(), where + " has no LoopCond");
    if (conds.size() > 1)
      fail(conds[1], where + " has two LoopConds ('" + g_[conds[0]].name + "' and '" + g_[conds[1]].name + "')");
    const node_id lc = conds[0];
    role_[lc] = loop_cond;
    if (g_.num_inputs(lc) != 1 || g_.input(lc, 0).empty) fail(lc, "LoopCond of " + where + " has no input");

    // loop variables: Enter -> Merge <- NextIteration
    std::vector<loop_var> vars;
    for (auto m : merges) {
      const int k = static_cast<int>(vars.size());
      loop_var lv;
      lv.merge = m;
      const auto ins = g_.inputs(m);
      if (ins.size() != 2 || ins[0].empty || ins[1].empty)
        fail(m, "loop Merge of " + where + " must have two inputs (an Enter and a NextIteration)");
      const int ni = is_core_op(g_[ins[0].node], "NextIteration") ? 0 : 1;
      lv.next = ins[ni].node;
      lv.enter = ins[1 - ni].node;
      if (is_core_op(g_[lv.enter], "NextIteration")) fail(m, "loop Merge of " + where + " has two NextIteration inputs");
      if (!is_core_op(g_[lv.enter], "Enter") || frame_of_[lv.enter] != fi)
        fail(m, "the initial value of loop Merge does not come from an Enter of " + where);
      if (role_[lv.enter] != other || g_.uses(lv.enter).size() != 1)
        fail(lv.enter, "Enter of " + where + " feeds a loop Merge and other nodes");
      if (frame_of_[lv.next] != fi) fail(lv.next, "NextIteration feeds a Merge of another frame (" + where + ")");
      if (role_[lv.next] != other) fail(lv.next, "NextIteration feeds two loop Merges");
      if (g_.num_inputs(lv.next) != 1 || g_.input(lv.next, 0).empty) fail(lv.next, "NextIteration has no input");
      role_[m] = loop_merge;
      role_[lv.enter] = var_enter;
      role_[lv.next] = next_iteration;
      index_[m] = index_[lv.enter] = index_[lv.next] = k;
      vars.push_back(std::move(lv));
    }
    for (auto n : nexts)
      if (role_[n] != next_iteration) fail(n, "NextIteration of " + where + " feeds no loop Merge (NextIteration without its Merge)");
    for (auto s : switches) {
      const auto pred = g_.input(s, 1);
      if (pred.empty || pred.node != lc) continue;  // a conditional inside the loop: a body node
      const auto in = g_.input(s, 0);
      if (in.empty || role_[in.node] != loop_merge || in.port != 0)
        fail(s, "Switch driven by the LoopCond of " + where + " does not switch a loop Merge");
      role_[s] = loop_switch;
      index_[s] = index_[in.node];
    }
    for (auto x : exits) {
      const auto in = g_.input(x, 0);
      if (in.empty || role_[in.node] != loop_switch || in.port != 0)
        fail(x, "Exit of " + where + " does not read output 0 of a loop Switch");
      role_[x] = loop_exit;
      index_[x] = index_[in.node];
      vars[static_cast<std::size_t>(index_[x])].exits.push_back(x);
    }
    std::vector<node_id> invariants;
    for (auto e : enters) {
      if (role_[e] != other) continue;
      if (g_.num_inputs(e) != 1 || g_.input(e, 0).empty) fail(e, "Enter has no input");
      role_[e] = invariant_enter;
      index_[e] = static_cast<int>(vars.size() + invariants.size());
      invariants.push_back(e);
    }
    for (auto v : vars)
      if (g_.input(v.enter, 0).empty) fail(v.enter, "Enter has no input");

    // carried values: the loop variables, then the invariants (passed through unchanged)
    std::vector<type> carried;
    for (const auto& v : vars) {
      const auto in = g_.input(v.enter, 0);
      carried.push_back(first_known({&g_[v.merge].outputs[0], &g_[v.enter].outputs[0],
                                     &g_[in.node].outputs[static_cast<std::size_t>(in.port)]}));
    }
    for (auto e : invariants) {
      const auto in = g_.input(e, 0);
      carried.push_back(first_known({&g_[e].outputs[0], &g_[in.node].outputs[static_cast<std::size_t>(in.port)]}));
    }

    // the condition: what the LoopCond's input needs
    std::vector<node_id> stack;
    auto walk = [&](node_char_map& flag) {
      while (!stack.empty()) {
        const node_id v = stack.back();
        stack.pop_back();
        auto visit = [&](node_id u) {
          if (role_[u] == other && frame_of_[u] == fi && !flag[u] && !gone_[u]) {
            flag[u] = 1;
            stack.push_back(u);
          }
        };
        for (const auto& in : g_.inputs(v))
          if (!in.empty) visit(in.node);
        if (!is_constant_op(g_[v]))  // control edges from pivots into constants are dropped
          for (auto c : g_.control_inputs(v)) visit(c);
      }
    };
    auto start = [&](node_char_map& flag, node_id u) {
      if (role_[u] == other && frame_of_[u] == fi && !flag[u]) {
        flag[u] = 1;
        stack.push_back(u);
      }
    };
    start(in_cond_, g_.input(lc, 0).node);
    walk(in_cond_);
    // the body: what the NextIterations need, and every other node of the frame
    for (const auto& v : vars) start(in_body_, g_.input(v.next, 0).node);
    for (auto v : F.nodes)
      if (!in_cond_[v]) start(in_body_, v);
    walk(in_body_);

    std::vector<node_id> cond_members, body_members;
    for (auto v : F.nodes) {
      if (in_cond_[v]) cond_members.push_back(v);
      if (in_body_[v]) body_members.push_back(v);
    }
    // control edges from the body's pivots (Identity of a loop Switch) into constants go
    auto keep_control = [&](node_id src, node_id dst) {
      if (!is_constant_op(g_[dst]) || g_[src].op != "Identity" || g_.num_inputs(src) < 1) return true;
      const auto in = g_.input(src, 0);
      return in.empty || role_[in.node] != loop_switch;
    };
    auto carried_arg = [&](node_id u) { return outside_read{index_[u]}; };
    auto cond_resolve = [&](node_id u, int port) -> outside_read {
      if (role_[u] == loop_merge && port == 0) return carried_arg(u);
      if (role_[u] == invariant_enter) return carried_arg(u);
      if (frame_of_[u] == free_node) return {};
      fail(u, "the condition of " + where + " reads this node, which is not computable from the loop variables (Merge values)");
    };
    auto body_resolve = [&](node_id u, int port) -> outside_read {
      if (role_[u] == loop_switch && port == 1) return carried_arg(u);
      if (role_[u] == loop_merge && port == 0) return carried_arg(u);
      if (role_[u] == invariant_enter) return carried_arg(u);
      if (frame_of_[u] == free_node) return {};
      fail(u, "the body of " + where + " reads this node, which is not a loop variable, a loop invariant or a node of the frame");
    };
    std::vector<std::pair<node_id, int>> cond_results{{g_.input(lc, 0).node, g_.input(lc, 0).port}};
    std::vector<std::pair<node_id, int>> body_results;
    for (const auto& v : vars) body_results.emplace_back(g_.input(v.next, 0).node, g_.input(v.next, 0).port);
    for (auto e : invariants) body_results.emplace_back(e, 0);
    G cond_fn = extract_function(g_, cond_members, [&](node_id v) { return in_cond_[v] != 0; }, carried, cond_results,
                                 cond_resolve, keep_control);
    G body_fn = extract_function(g_, body_members, [&](node_id v) { return in_body_[v] != 0; }, carried, body_results,
                                 body_resolve, keep_control);

    // the while node
    std::string base = F.name;
    if (constexpr std::string_view suffix = "/while_context"; base.size() > suffix.size() && base.ends_with(suffix))
      base.resize(base.size() - suffix.size());
    if (base.empty()) base = "while";
    const std::string cond_name = top_.unique_function_name(base + "_cond");
    top_.add_function(cond_name, std::move(cond_fn));
    const std::string body_name = top_.unique_function_name(base + "_body");
    top_.add_function(body_name, std::move(body_fn));
    const node_id first_enter = vars.empty() ? (invariants.empty() ? lc : invariants.front()) : vars.front().enter;
    typename G::node_type w{};
    w.name = g_.unique_name(base);
    w.op = "while";
    w.attrs.emplace("cond", function_ref{cond_name});
    w.attrs.emplace("body", function_ref{body_name});
    if (auto it = g_[first_enter].attrs.find("parallel_iterations");
        it != g_[first_enter].attrs.end() && it->second.template is<std::int64_t>())
      w.attrs.emplace("parallel_iterations", it->second);
    w.device = g_[first_enter].device;
    w.outputs = carried;
    const node_id wn = g_.add_node(std::move(w));
    frame_of_.grow();
    role_.grow();
    index_.grow();
    in_cond_.grow();
    in_body_.grow();
    gone_.grow();
    std::vector<node_id> all_enters;
    for (const auto& v : vars) all_enters.push_back(v.enter);
    for (auto e : invariants) all_enters.push_back(e);
    for (auto e : all_enters) {
      const auto in = g_.input(e, 0);
      g_.add_input(wn, in.node, in.port);
      for (auto c : g_.control_inputs(e))
        if (frame_of_[c] != fi && !gone_[c]) g_.add_control(c, wn);
    }
    for (std::size_t k = 0; k < vars.size(); ++k)
      for (auto x : vars[k].exits) {
        g_.replace_uses(x, 0, wn, static_cast<int>(k));
        for (auto s : g_.control_outputs(x))
          if (frame_of_[s] != fi && !gone_[s]) g_.add_control(wn, s);
      }
    const int parent = F.parent;
    frame_of_[wn] = parent;
    // the frame's nodes are gone (removed in bulk at the end; their edges to live nodes were
    // moved to the while node)
    for (auto v : frames_[fi].nodes) {
      gone_[v] = 1;
      dead_.push_back(v);
    }
    frames_[fi].nodes.clear();
    frames_[parent].nodes.push_back(wn);
  }

  using node_char_map = node_map<G, unsigned char>;

  G& g_;
  G& top_;
  node_map<G, int> frame_of_;
  node_map<G, unsigned char> role_;
  node_map<G, int> index_;  // loop variable / carried value index of the loop nodes
  node_char_map in_cond_, in_body_;
  node_char_map gone_;           // nodes of converted frames, removed at the end
  std::vector<node_id> dead_;
  std::vector<frame> frames_;
  std::unordered_map<std::string, int> frame_by_name_;
};

}  // namespace detail

/// Pass `functionalize-loops` (seed 000, "Functionalize Loop"): every TensorFlow v1 loop
/// frame becomes one functional `while` node, in the graph and in every function of its
/// library; the condition and body become functions of the top graph's library.
///
/// **Frames.** Nodes get frames as TensorFlow's executor gives them: an `Enter` opens the
/// frame named by its `frame_name`, an `Exit`'s successors are back in the parent frame,
/// every other node is in the frame of its inputs (data and control edges). A frame holds:
/// one `LoopCond`; per loop variable an `Enter -> Merge <- NextIteration` triple, optionally
/// a `Switch(Merge, LoopCond)` and `Exit(Switch:0)` nodes; `Enter`s feeding no Merge (loop
/// invariants, `is_constant` or not); and the other nodes (condition and body).
///
/// **Result.** For a frame with loop variables v1..vn and invariants c1..cm:
/// `%w = while(init_1, ..., init_n, c_1, ..., c_m) {cond = @F_cond, body = @F_body}` with n+m
/// outputs (the inputs are the Enters' inputs, so the while takes separate loop variables,
/// no tuples). Users of the Exit of variable k read `%w:k`. The invariants are extra
/// loop-carried values that the body passes through unchanged (not captures: gpass's
/// `while` has none, and this keeps both functions' signatures equal to the while's).
/// - `F_cond(v1..vn, c1..cm)`: returns the LoopCond's input, computed from the Merge values
///   (the nodes the LoopCond needs; anything else, e.g. a Switch output, is an error).
/// - `F_body(v1..vn, c1..cm)`: returns the NextIterations' inputs, then c1..cm; it holds what
///   they need (reading `Switch:1` or a Merge value as the variable) and every other node of
///   the frame, so side-effecting nodes are kept.
/// The function base name `F` is the frame name without `/while_context` (`while` for
/// `while/while_context`), made unique; the while node gets that name too.
///
/// **Also handled.** Constants with no edge into them read inside a frame are copied into
/// the functions that read them (and removed when nothing else reads them); constants with
/// control edges from the frame's pivots (Merge, or an Identity of a loop Switch) lose those
/// edges (other control edges between nodes of the frame stay). Nested loops:
/// inner frames first, so an inner loop becomes a `while` node inside the outer body.
/// Control edges into Enters move to the while node, control edges out of Exits leave it;
/// other control edges into constants or from v1 nodes inside the frame are dropped. A
/// Merge without a Switch (a variable only the condition reads), a Switch without an Exit
/// (a variable whose final value is unused: its output stays unused). Conditionals inside a
/// loop (Switch/Merge not driven by the LoopCond) become body nodes (`functionalize_conds`
/// handles them there). `parallel_iterations` of the first Enter is kept on the while.
///
/// **Errors** (`gpass::error` naming the pass, the node and its op, and the frame): a frame
/// with no or two LoopConds, a NextIteration that feeds no loop Merge, a loop Merge that is
/// not Enter + NextIteration, an Exit not reading a loop Switch, a condition reading values
/// not computable from the Merge values, a body reading values of another frame, nodes with
/// inputs from different frames, v1 loop nodes outside any frame. The result never has a
/// cycle (checked).
///
/// Statistic: `loops`. Provides `fact_tags::loops_functionalized`. O(V + E) per graph
/// (each node is moved once; a node that both the condition and the body need is copied
/// into both); iterative, no recursion over graph depth.
/// \code
///   gpass::pass_context ctx;
///   gpass::functionalize_loops(g, ctx);   // tf_while_one_var.gir -> %while = while(%i) {...}
/// \endcode
/// (Declared like every pass, `lowering_pass_base` giving its facts: the lines it shares in
/// shape with `functionalize_conds` are that declaration and the member list of a detail class.)
struct functionalize_loops_fn : lowering_pass_base<functionalize_loops_fn> {
  static constexpr std::string_view name = "functionalize-loops";
  static constexpr std::string_view description =
      "Turn TF v1 loop frames (Enter/Merge/Switch/Exit/NextIteration/LoopCond) into functional while nodes";
  using provides_facts = facts<fact_tags::loops_functionalized>;

  template <class G>
  void run(G& g, pass_context& ctx) const {
    std::int64_t loops = 0;
    for (G* cur : all_graphs(g)) loops += detail::loop_functionalizer<G>(*cur, g).run();
    ctx.add_statistic("loops", loops);
  }
};

/// The `functionalize-loops` pass object (see `functionalize_loops_fn`).
inline constexpr functionalize_loops_fn functionalize_loops{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void functionalize_loops_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
