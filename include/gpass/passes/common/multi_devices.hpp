// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file multi_devices.hpp
/// `gpass::multi_devices` and `gpass::multi_devices_check`: data parallelism (Paddle's
/// `multi_devices_pass` and `multi_devices_check_pass`; TensorFlow's MirroredStrategy, as a
/// graph rewrite). The step is replicated over N devices of this process (and the same over
/// the processes of an MPI run), each replica on its slice of the fed batch and with its own
/// copy of every variable; each gradient an optimizer update (`update_globals`) applies is
/// averaged over all replicas first (`all_reduce`), so every copy gets the same update; the
/// fetches are combined so that the caller sees what the one-device step returns.

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/exec/globals.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/ops/core_ops.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

namespace gpass {

namespace detail {

/// The copy of variable `name` that replica `r` reads and updates (replica 0: the variable itself).
inline std::string replica_variable(const std::string& name, std::int64_t r) {
  return r == 0 ? name : name + "/replica_" + std::to_string(r);
}
/// The name of replica `r`'s copy of node `name`.
inline std::string replica_node_name(std::string_view name, std::int64_t r) {
  return "replica_" + std::to_string(r) + "/" + std::string(name);
}
/// Renames every function reference of `attrs` found in `functions` (old -> new name).
inline void rename_function_refs(attribute_map& attrs, const std::map<std::string, std::string, std::less<>>& functions) {
  for (auto& [k, a] : attrs) {
    if (a.template is<function_ref>()) {
      if (auto it = functions.find(a.template as<function_ref>().name); it != functions.end()) a = function_ref{it->second};
    } else if (a.template is<std::vector<function_ref>>()) {
      auto refs = a.template as<std::vector<function_ref>>();
      for (auto& f : refs)
        if (auto it = functions.find(f.name); it != functions.end()) f.name = it->second;
      a = std::move(refs);
    }
  }
}
/// (replica, name without the prefix) of a node `replica_<r>/<name>`; r = -1 when not one.
inline std::pair<std::int64_t, std::string> split_replica_name(const std::string& name) {
  if (!name.starts_with("replica_")) return {-1, name};
  const std::size_t slash = name.find('/');
  if (slash == std::string::npos || slash == 8) return {-1, name};
  std::int64_t r = 0;
  for (std::size_t i = 8; i < slash; ++i) {
    if (name[i] < '0' || name[i] > '9') return {-1, name};
    r = r * 10 + (name[i] - '0');
  }
  return {r, name.substr(slash + 1)};
}
/// Whether function reference(s) `b` are replica `r`'s copies of replica 0's `a`.
inline bool same_functions_of_replica(const attribute& a, const attribute& b, std::int64_t r) {
  auto same = [&](const function_ref& x, const function_ref& y) {
    auto [rx, bx] = split_replica_name(x.name);
    auto [ry, by] = split_replica_name(y.name);
    return rx == 0 && ry == r && bx == by;
  };
  if (a.template is<function_ref>() && b.template is<function_ref>())
    return same(a.template as<function_ref>(), b.template as<function_ref>());
  if (a.template is<std::vector<function_ref>>() && b.template is<std::vector<function_ref>>()) {
    const auto& x = a.template as<std::vector<function_ref>>();
    const auto& y = b.template as<std::vector<function_ref>>();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!same(x[i], y[i])) return false;
    return true;
  }
  return false;
}

inline bool is_collective_op(const std::string& domain, const std::string& op) {
  return domain.empty() && (op == "all_reduce" || op == "all_gather");
}

inline std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> r;
  std::string cur;
  for (char c : text + ",") {
    if (c == ',' || c == ';') {
      while (!cur.empty() && cur.front() == ' ') cur.erase(cur.begin());
      while (!cur.empty() && cur.back() == ' ') cur.pop_back();
      if (!cur.empty()) r.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return r;
}

}  // namespace detail

/// Pass `multi-devices`: replicates the main graph's step over `replicas` devices for data
/// parallelism (options: `replicas`, `devices` — one per replica, default `/device:CPU:<r>`;
/// `rank` and `ranks` — this process and the number of processes of an MPI run;
/// `replicated-inputs` — inputs fed whole to every replica; `fetch-reduction` — mean or sum).
/// - Every input of rank >= 1 without a default value (an ONNX initializer: a weight) and
///   not in `replicated-inputs` is a batch: replica r of process p
///   reads slice p * replicas + r of replicas * ranks (`batch_slice`; the batch must divide).
/// - Every node but the inputs and the `return` is copied per replica as
///   `replica_<r>/<name>` on that replica's device; variables (`get_global`, `set_global`,
///   `update_globals`) become per-replica copies (`<var>/replica_<r>`, replica 0 keeps the
///   name) with the same initial value.
/// - The gradient input of every `update_globals` (TensorFlow's Apply* after
///   `variables-to-globals`) goes through `all_reduce {reduction = "mean"}` first.
/// - Each fetch that depends on the batch is combined: a tensor whose dim 0 is the batch's
///   is gathered along dim 0 (`all_gather`), any other is averaged (`all_reduce`, or summed
///   with `fetch-reduction=sum`); a fetch that does not depend on the batch is replica 0's.
/// - The collective nodes of each replica are chained by control edges in one order, the
///   same in every replica and process, so that their exchanges never cross.
/// - The functions the step calls (functional loops and conditionals, and the functions they
///   call) are copied per replica as `replica_<r>/<function>`, their nodes on the replica's
///   device reading the replica's variables; a function that writes a variable is refused
///   (its update would need a reduction inside the loop).
/// Statistics: `replicas`, `sliced-inputs`, `reduced-gradients`, `combined-fetches`,
/// `replicated-functions`.
struct multi_devices_fn : pass_base<multi_devices_fn> {
  static constexpr std::string_view name = "multi-devices";
  static constexpr std::string_view description =
      "Data parallelism: replicate the step over devices (and MPI ranks), all-reduce the gradients, combine the fetches";
  static constexpr std::array options{
      option_spec{"replicas", option_type::integer, "2", "replicas in this process (one per device)"},
      option_spec{"devices", option_type::string, "", "the replicas' devices, ',' between names (default /device:CPU:<r>)"},
      option_spec{"rank", option_type::integer, "0", "this process's index in a multi-process (MPI) run"},
      option_spec{"ranks", option_type::integer, "1", "the processes of the run, each with `replicas` replicas"},
      option_spec{"replicated-inputs", option_type::string, "", "inputs fed whole to every replica, ',' between names"},
      option_spec{"fetch-reduction", option_type::string, "mean", "how a batch-dependent fetch not batch-major combines: mean or sum"}};

  template <class G>
  void run(G& g, pass_context& ctx) const {
    using node_id = typename G::node_id;
    using node_type = typename G::node_type;
    const std::int64_t replicas = option_int(ctx, "replicas"), rank = option_int(ctx, "rank"), ranks = option_int(ctx, "ranks");
    const std::string reduction = *option_text(ctx, "fetch-reduction");
    if (replicas < 1) fail("replicas must be >= 1, got " + std::to_string(replicas));
    if (ranks < 1 || rank < 0 || rank >= ranks)
      fail("rank " + std::to_string(rank) + " of " + std::to_string(ranks) + " process(es) does not exist");
    if (reduction != "mean" && reduction != "sum") fail("fetch-reduction must be mean or sum, got '" + reduction + "'");
    std::vector<std::string> devices = detail::split_names(option_text(ctx, "devices").value_or(""));
    if (devices.empty())
      for (std::int64_t r = 0; r < replicas; ++r) devices.push_back("/device:CPU:" + std::to_string(r));
    if (static_cast<std::int64_t>(devices.size()) != replicas)
      fail(std::to_string(devices.size()) + " devices for " + std::to_string(replicas) + " replicas");
    const std::vector<std::string> whole = detail::split_names(option_text(ctx, "replicated-inputs").value_or(""));

    try {  // the fetches' shapes tell batch-major results apart; run without them if inference fails
      pass_context scratch;
      infer_shapes(g, scratch);
    } catch (const error&) {
    }

    // the interface: inputs (sliced or whole) and the one return node
    std::vector<node_id> args, body;
    std::optional<node_id> ret;
    for (auto v : topological_order(g)) {
      const auto& n = g[v];
      if (n.domain.empty() && (n.op == "batch_slice" || detail::is_collective_op(n.domain, n.op)))
        fail("the graph is replicated already", n.name, n.op);
      if (n.domain.empty() && n.op == "arg") args.push_back(v);
      else if (n.domain.empty() && n.op == "return") {
        if (ret) fail("the graph has two return nodes", n.name, n.op);
        ret = v;
      } else body.push_back(v);
    }
    if (!ret) fail("the graph has no return node (bind a signature first)");
    node_map<G, char> sliced(g, 0), batch_dependent(g, 0);
    std::set<std::string> batch_dims;
    std::int64_t sliced_inputs = 0;
    for (auto a : args) {
      const auto& n = g[a];
      if (std::find(whole.begin(), whole.end(), n.name) != whole.end()) continue;
      if (auto d = n.attrs.find("default"); d != n.attrs.end() && d->second.template is<tensor>()) continue;  // a weight
      const type& t = n.outputs.empty() ? type{} : n.outputs[0];
      if (!t.is_tensor() || (t.tensor().shape.has_rank() && t.tensor().shape.rank() == 0)) continue;
      sliced[a] = 1;
      batch_dependent[a] = 1;
      ++sliced_inputs;
      if (t.tensor().shape.has_rank() && !t.tensor().shape[0].is_unknown()) batch_dims.insert(t.tensor().shape[0].to_string());
    }
    for (auto v : body)
      for (std::size_t k = 0; k < g.num_inputs(v); ++k) {
        auto in = g.input(v, static_cast<int>(k));
        if (!in.empty && batch_dependent[in.node]) batch_dependent[v] = 1;
      }
    for (const std::string& w : whole)
      if (std::none_of(args.begin(), args.end(), [&](node_id a) { return g[a].name == w; }))
        fail("replicated-inputs names '" + w + "', which is not an input of the graph");

    // the replicas' nodes (created first, wired next)
    node_map<G, std::vector<node_id>> copies(g, {});
    node_map<G, std::vector<node_id>> slices(g, {});
    auto add = [&](node_type n, std::int64_t r) {
      n.device = devices[static_cast<std::size_t>(r)];
      return g.add_node(std::move(n));
    };
    for (std::int64_t r = 0; r < replicas; ++r) {
      for (auto a : args) {
        if (!sliced[a]) continue;
        node_type s;
        s.name = detail::replica_node_name(g[a].name, r);
        s.op = "batch_slice";
        s.attrs["index"] = rank * replicas + r;
        s.attrs["count"] = replicas * ranks;
        s.outputs = {type{}};
        node_id sv = add(std::move(s), r);
        g.add_input(sv, a, 0);
        slices[a].push_back(sv);
      }
      for (auto v : body) {
        node_type n = g[v];
        n.name = detail::replica_node_name(n.name, r);
        if (auto it = n.attrs.find("variable"); it != n.attrs.end() && it->second.template is<std::string>())
          it->second = detail::replica_variable(it->second.template as<std::string>(), r);
        if (auto it = n.attrs.find("variables"); it != n.attrs.end() && it->second.template is<std::vector<std::string>>()) {
          std::vector<std::string> vars = it->second.template as<std::vector<std::string>>();
          for (auto& x : vars) x = detail::replica_variable(x, r);
          it->second = std::move(vars);
        }
        copies[v].push_back(add(std::move(n), r));
      }
    }
    // the functions the step calls, per replica
    std::vector<std::string> called, work;
    auto call = [&](const std::string& f) { work.push_back(f); };
    for (auto v : body) for_each_function_ref(g[v].attrs, call);
    while (!work.empty()) {
      std::string f = std::move(work.back());
      work.pop_back();
      if (std::find(called.begin(), called.end(), f) != called.end()) continue;
      const G* fg = g.find_function(f);
      if (!fg) fail("function '" + f + "' is called but not in the graph's library");
      for (auto v : fg->nodes()) {
        const auto& n = (*fg)[v];
        if (n.domain.empty() && (n.op == "set_global" || n.op == "update_globals"))
          fail("function '" + f + "' writes a variable: updates inside loops or conditionals cannot be replicated yet", n.name, n.op);
      }
      for_each_function_ref(*fg, call);
      called.push_back(std::move(f));
    }
    for (std::int64_t r = 0; r < replicas; ++r) {
      std::map<std::string, std::string, std::less<>> renamed;
      for (const auto& f : called) renamed.emplace(f, detail::replica_node_name(f, r));
      for (auto v : body) detail::rename_function_refs(g[copies[v][static_cast<std::size_t>(r)]].attrs, renamed);
      for (const auto& f : called) {
        G clone = *g.find_function(f);
        for (auto v : clone.nodes()) {
          auto& n = clone[v];
          n.device = devices[static_cast<std::size_t>(r)];
          if (auto it = n.attrs.find("variable"); it != n.attrs.end() && it->second.template is<std::string>())
            it->second = detail::replica_variable(it->second.template as<std::string>(), r);
          detail::rename_function_refs(n.attrs, renamed);
        }
        g.add_function(renamed.at(f), std::move(clone));
      }
    }
    for (const auto& f : called) g.functions().erase(f);

    // each variable's copies start from its initial value
    std::vector<std::pair<std::string, attribute>> initial;
    for (const auto& [k, val] : g.attrs())
      if (k.starts_with(exec::global_attr_prefix)) initial.emplace_back(k, val);
    for (const auto& [k, val] : initial)
      for (std::int64_t r = 1; r < replicas; ++r)
        g.attrs()[std::string(exec::global_attr_prefix) + detail::replica_variable(k.substr(exec::global_attr_prefix.size()), r)] = val;

    auto source = [&](typename G::input_ref in, std::int64_t r) -> std::pair<node_id, int> {
      if (sliced[in.node]) return {slices[in.node][static_cast<std::size_t>(r)], 0};
      if (g[in.node].domain.empty() && g[in.node].op == "arg") return {in.node, in.port};
      return {copies[in.node][static_cast<std::size_t>(r)], in.port};
    };
    // collectives, per replica, in the order they are made: the originals' topological order
    std::vector<std::vector<node_id>> chain(static_cast<std::size_t>(replicas));
    auto collective = [&](std::string op, std::string group, std::pair<node_id, int> src, std::int64_t r,
                          std::string red) {
      node_type c;
      c.name = g.unique_name(detail::replica_node_name(group + "/" + op, r));
      c.op = std::move(op);
      c.attrs["group"] = std::move(group);
      c.attrs["replica"] = r;
      c.attrs["replicas"] = replicas;
      c.attrs["ranks"] = ranks;
      if (c.op == "all_reduce") c.attrs["reduction"] = std::move(red);
      c.outputs = {type{}};
      node_id cv = add(std::move(c), r);
      g.add_input(cv, src.first, src.second);
      chain[static_cast<std::size_t>(r)].push_back(cv);
      return cv;
    };
    std::int64_t reduced = 0;
    for (auto v : body) {
      const std::string orig_name = g[v].name;
      const bool update = g[v].domain.empty() && g[v].op == "update_globals";
      const std::size_t grad = update ? detail::update_globals_gradient(get_or<std::string>(g[v].attrs, "rule", ""), g.num_inputs(v))
                                      : g.num_inputs(v);
      for (std::int64_t r = 0; r < replicas; ++r) {
        const node_id c = copies[v][static_cast<std::size_t>(r)];
        for (std::size_t k = 0; k < g.num_inputs(v); ++k) {
          auto in = g.input(v, static_cast<int>(k));
          if (in.empty) {
            g.add_empty_input(c);
            continue;
          }
          auto src = source(in, r);
          if (k == grad) src = {collective("all_reduce", orig_name, src, r, "mean"), 0};
          g.add_input(c, src.first, src.second);
        }
        for (auto p : g.control_inputs(v)) {
          if (g[p].domain.empty() && g[p].op == "arg") g.add_control(p, c);
          else g.add_control(copies[p][static_cast<std::size_t>(r)], c);
        }
      }
      if (update) ++reduced;
    }

    // the fetches
    const node_id rv = *ret;
    std::int64_t combined = 0;
    for (std::size_t k = 0; k < g.num_inputs(rv); ++k) {
      auto in = g.input(rv, static_cast<int>(k));
      if (in.empty || (g[in.node].domain.empty() && g[in.node].op == "arg")) continue;
      if (!batch_dependent[in.node]) {
        g.set_input(rv, static_cast<int>(k), copies[in.node][0], in.port);
        continue;
      }
      const type t = g[in.node].outputs[static_cast<std::size_t>(in.port)];
      const bool batch_major = t.is_tensor() && t.tensor().shape.has_rank() && t.tensor().shape.rank() > 0 &&
                               !t.tensor().shape[0].is_unknown() && batch_dims.count(t.tensor().shape[0].to_string()) > 0;
      if (!batch_major && t.is_tensor() && !is_floating(t.tensor().element) && reduction == "mean")
        fail("fetch " + std::to_string(k) + " ('" + g[in.node].name + "') is a " + t.to_string() +
                 " that depends on the batch but is not batch-major: it cannot be averaged over the replicas "
                 "(fetch-reduction=sum sums it)",
             g[in.node].name, g[in.node].op);
      const std::string group = "fetch_" + std::to_string(k);
      node_id first{};
      for (std::int64_t r = 0; r < replicas; ++r) {
        const node_id c = collective(batch_major ? "all_gather" : "all_reduce", group,
                                     {copies[in.node][static_cast<std::size_t>(r)], in.port}, r, reduction);
        if (r == 0) first = c;
        else g.add_control(c, rv);  // keeps the other replicas' halves of the exchange alive
      }
      g.set_input(rv, static_cast<int>(k), first, 0);
      ++combined;
    }
    for (auto p : g.control_inputs(rv)) {
      if (g[p].domain.empty() && g[p].op == "arg") continue;
      if (copies[p].empty()) continue;  // a node made here
      g.remove_control(p, rv);
      for (auto c : copies[p]) g.add_control(c, rv);
    }
    // one order of the collectives, the same in every replica (and every process)
    for (const auto& nodes : chain)
      for (std::size_t i = 1; i < nodes.size(); ++i) g.add_control(nodes[i - 1], nodes[i]);

    g.remove_nodes(body);
    report_edits(ctx, {{"replicas", replicas}, {"sliced-inputs", sliced_inputs}, {"reduced-gradients", reduced},
                       {"combined-fetches", combined}, {"replicated-functions", static_cast<std::int64_t>(called.size())}});
  }
};

/// The `multi-devices` pass object (see `multi_devices_fn`).
inline constexpr multi_devices_fn multi_devices{};

/// Pass `multi-devices-check`: verifies a graph `multi-devices` replicated (Paddle's
/// `multi_devices_check_pass`): every replica `replica_<r>/` has the same nodes (op,
/// attributes, inputs up to the replica) on its own device, distinct from the others'; each
/// replica reads and writes its own copy of each variable; the gradient of every
/// `update_globals` is reduced exactly once (an `all_reduce` of every replica, in one group,
/// whose input is no collective's output), its other inputs and every `set_global`'s value
/// do not depend on the replica's slice of the batch except through a collective (the
/// copies would diverge); the collectives of every replica are chained in the same order.
/// Changes nothing; fails naming the first node that breaks a rule.
struct multi_devices_check_fn : pass_base<multi_devices_check_fn> {
  static constexpr std::string_view name = "multi-devices-check";
  static constexpr std::string_view description =
      "Verify a data-parallel graph: identical replicas on distinct devices, each gradient all-reduced once, no divergent variable";

  template <class G>
  void run(G& g, pass_context& ctx) const {
    using node_id = typename G::node_id;
    std::map<std::int64_t, std::map<std::string, node_id>> replicas;
    for (auto v : g.nodes()) {
      auto [r, base] = detail::split_replica_name(g[v].name);
      if (r >= 0) replicas[r][base] = v;
    }
    if (replicas.empty()) fail("the graph has no replicas (run multi-devices first)");
    const std::int64_t count = static_cast<std::int64_t>(replicas.size());
    if (replicas.rbegin()->first != count - 1) fail("replica " + std::to_string(count - 1) + " is missing");
    const auto& first = replicas.begin()->second;
    std::set<std::string> devices;
    std::map<std::int64_t, std::string> replica_device;
    auto stripped = [&](node_id v) { return detail::split_replica_name(g[v].name); };
    for (const auto& [r, nodes] : replicas) {
      if (nodes.size() != first.size())
        fail("replica " + std::to_string(r) + " has " + std::to_string(nodes.size()) + " nodes, replica 0 has " +
             std::to_string(first.size()));
      std::string device;
      for (const auto& [base, v] : nodes) {
        auto it = first.find(base);
        if (it == first.end()) fail("replica " + std::to_string(r) + " has a node replica 0 lacks", g[v].name, g[v].op);
        const auto& a = g[it->second];
        const auto& b = g[v];
        if (a.op != b.op || a.domain != b.domain || g.num_inputs(it->second) != g.num_inputs(v))
          fail("differs from replica 0's '" + a.name + "' (" + a.op + ")", b.name, b.op);
        if (device.empty()) device = b.device;
        else if (b.device != device) fail("replica " + std::to_string(r) + " spans devices " + device + " and " + b.device, b.name, b.op);
        for (const auto& [k, val] : b.attrs) {
          if (k == "variable" || k == "variables" || k == "replica" || k == "index" || k.starts_with("_")) continue;
          auto ia = a.attrs.find(k);
          if (ia == a.attrs.end()) fail("attribute '" + k + "' differs from replica 0's", b.name, b.op);
          if (!(ia->second == val) && !detail::same_functions_of_replica(ia->second, val, r))
            fail("attribute '" + k + "' differs from replica 0's", b.name, b.op);
        }
        auto expect_var = [&](const std::string& mine, const std::string& theirs) {
          if (mine != detail::replica_variable(theirs, r))
            fail("reads or writes variable '" + mine + "', not replica " + std::to_string(r) + "'s copy '" +
                     detail::replica_variable(theirs, r) + "'",
                 b.name, b.op);
        };
        if (b.attrs.count("variable")) expect_var(get_or<std::string>(b.attrs, "variable", ""), get_or<std::string>(a.attrs, "variable", ""));
        if (auto iv = b.attrs.find("variables"); iv != b.attrs.end() && iv->second.template is<std::vector<std::string>>()) {
          const auto& mine = iv->second.template as<std::vector<std::string>>();
          const auto theirs = get_or<std::vector<std::string>>(a.attrs, "variables", {});
          if (mine.size() != theirs.size()) fail("updates other variables than replica 0's", b.name, b.op);
          for (std::size_t i = 0; i < mine.size(); ++i) expect_var(mine[i], theirs[i]);
        }
        if (detail::is_collective_op(b.domain, b.op) && get_or<std::int64_t>(b.attrs, "replica", -1) != r)
          fail("a collective of replica " + std::to_string(r) + " says it is replica " +
                   std::to_string(get_or<std::int64_t>(b.attrs, "replica", -1)),
               b.name, b.op);
        for (std::size_t k = 0; k < g.num_inputs(v); ++k) {
          auto ia = g.input(it->second, static_cast<int>(k)), ib = g.input(v, static_cast<int>(k));
          if (ia.empty != ib.empty) fail("input " + std::to_string(k) + " differs from replica 0's", b.name, b.op);
          if (ia.empty) continue;
          auto [ra, na] = stripped(ia.node);
          auto [rb, nb] = stripped(ib.node);
          const bool same = ra < 0 ? ia.node == ib.node && ia.port == ib.port : (rb == r && na == nb && ia.port == ib.port);
          if (!same) fail("input " + std::to_string(k) + " reads '" + g[ib.node].name + "', not replica " + std::to_string(r) +
                              "'s copy of what replica 0 reads ('" + g[ia.node].name + "')",
                          b.name, b.op);
        }
      }
      if (!devices.insert(device).second)
        fail("replicas share device " + device + " (their collectives would wait for each other on one thread)");
      replica_device[r] = device;
    }
    // the replicas' functions: replica 0's, copied for each replica on its device, reading
    // its variables
    std::map<std::string, std::map<std::int64_t, const G*>> functions;
    for (const auto& [name, f] : g.functions()) {
      auto [r, base] = detail::split_replica_name(name);
      if (r >= 0) functions[base][r] = f.get();
    }
    for (const auto& [base, copies] : functions) {
      if (static_cast<std::int64_t>(copies.size()) != count || !copies.count(0))
        fail("function '" + base + "' has " + std::to_string(copies.size()) + " replica copies for " + std::to_string(count) +
             " replicas");
      const G& f0 = *copies.at(0);
      for (const auto& [r, f] : copies) {
        const std::string fname = detail::replica_node_name(base, r);
        if (f->num_nodes() != f0.num_nodes()) fail("function '" + fname + "' differs from replica 0's copy");
        auto a_nodes = f0.nodes();
        auto ia = a_nodes.begin();
        for (auto v : f->nodes()) {
          const auto& a = f0[*ia++];
          const auto& b = (*f)[v];
          if (a.op != b.op || a.domain != b.domain || a.name != b.name)
            fail("function '" + fname + "' differs from replica 0's copy at '" + a.name + "'", b.name, b.op);
          if (b.device != replica_device[r])
            fail("function '" + fname + "' runs on " + b.device + ", not on replica " + std::to_string(r) + "'s device", b.name, b.op);
          if (a.attrs.count("variable") &&
              get_or<std::string>(b.attrs, "variable", "") != detail::replica_variable(get_or<std::string>(a.attrs, "variable", ""), r))
            fail("function '" + fname + "' reads another variable than replica " + std::to_string(r) + "'s copy", b.name, b.op);
          if (b.domain.empty() && (b.op == "set_global" || b.op == "update_globals"))
            fail("function '" + fname + "' writes a variable from the replica's slice of the batch", b.name, b.op);
        }
      }
    }
    // batch dependence, cut at the collectives (whose outputs are the same in every replica)
    node_map<G, char> dep(g, 0);
    for (auto v : topological_order(g)) {
      const auto& n = g[v];
      if (n.domain.empty() && n.op == "batch_slice") dep[v] = 1;
      if (detail::is_collective_op(n.domain, n.op)) continue;
      for (std::size_t k = 0; k < g.num_inputs(v); ++k) {
        auto in = g.input(v, static_cast<int>(k));
        if (!in.empty && dep[in.node]) dep[v] = 1;
      }
    }
    std::map<std::string, std::vector<node_id>> groups;
    std::int64_t gradients = 0;
    for (auto v : g.nodes()) {
      const auto& n = g[v];
      if (!n.domain.empty()) continue;
      if (detail::is_collective_op(n.domain, n.op)) groups[n.op + ":" + get_or<std::string>(n.attrs, "group", "")].push_back(v);
      if (n.op == "set_global" && g.num_inputs(v) > 0) {
        auto in = g.input(v, 0);
        if (!in.empty && dep[in.node])
          fail("writes variable '" + get_or<std::string>(n.attrs, "variable", "") + "' from its replica's slice of the batch "
                   "without an all-reduce: the replicas' copies would diverge",
               n.name, n.op);
      }
      if (n.op != "update_globals") continue;
      const std::size_t grad = detail::update_globals_gradient(get_or<std::string>(n.attrs, "rule", ""), g.num_inputs(v));
      for (std::size_t k = 0; k < g.num_inputs(v); ++k) {
        auto in = g.input(v, static_cast<int>(k));
        if (in.empty) continue;
        const auto& src = g[in.node];
        if (k != grad) {
          if (dep[in.node])
            fail("input " + std::to_string(k) + " depends on the replica's slice of the batch without an all-reduce", n.name, n.op);
          continue;
        }
        if (!(src.domain.empty() && src.op == "all_reduce"))
          fail("its gradient ('" + src.name + "', " + src.op + ") is not all-reduced over the replicas", n.name, n.op);
        if (g.uses(in.node).size() != 1) fail("its all-reduced gradient '" + src.name + "' also feeds other nodes", n.name, n.op);
        auto before = g.input(in.node, 0);
        if (!before.empty && detail::is_collective_op(g[before.node].domain, g[before.node].op))
          fail("its gradient is reduced twice ('" + g[before.node].name + "' then '" + src.name + "')", n.name, n.op);
        ++gradients;
      }
    }
    for (const auto& [key, members] : groups) {
      std::set<std::int64_t> seen;
      for (auto v : members) {
        const auto& n = g[v];
        if (get_or<std::int64_t>(n.attrs, "replicas", 0) != count)
          fail("says " + std::to_string(get_or<std::int64_t>(n.attrs, "replicas", 0)) + " replicas, the graph has " +
                   std::to_string(count),
               n.name, n.op);
        if (!seen.insert(get_or<std::int64_t>(n.attrs, "replica", -1)).second)
          fail("group '" + key + "' has two members for one replica", n.name, n.op);
      }
      if (static_cast<std::int64_t>(seen.size()) != count)
        fail("group '" + key + "' has " + std::to_string(seen.size()) + " members for " + std::to_string(count) + " replicas",
             g[members.front()].name, g[members.front()].op);
    }
    // the chains: each replica's collectives in one order, the same groups in every replica
    std::vector<std::string> order0;
    for (const auto& [r, nodes] : replicas) {
      std::vector<node_id> mine;
      for (const auto& [base, v] : nodes)
        if (detail::is_collective_op(g[v].domain, g[v].op)) mine.push_back(v);
      std::map<node_id, node_id> next;
      std::set<node_id> has_prev;
      for (auto v : mine)
        for (auto p : g.control_inputs(v))
          if (std::find(mine.begin(), mine.end(), p) != mine.end()) {
            if (next.count(p)) fail("two collectives follow one in replica " + std::to_string(r) + "'s chain", g[v].name, g[v].op);
            next[p] = v;
            has_prev.insert(v);
          }
      std::vector<std::string> order;
      for (auto v : mine)
        if (!has_prev.count(v)) {
          for (auto cur = v;;) {
            order.push_back(get_or<std::string>(g[cur].attrs, "group", "") + ":" + g[cur].op);
            auto it = next.find(cur);
            if (it == next.end()) break;
            cur = it->second;
          }
        }
      if (order.size() != mine.size() || (!mine.empty() && mine.size() - has_prev.size() != 1))
        fail("replica " + std::to_string(r) + "'s collectives are not chained in one order (exchanges could cross)");
      if (r == replicas.begin()->first) order0 = order;
      else if (order != order0) fail("replica " + std::to_string(r) + " runs its collectives in another order than replica 0");
    }
    ctx.add_statistic("replicas", count);
    ctx.add_statistic("reduced-gradients", gradients);
    ctx.report_changed(false);
  }
};

/// The `multi-devices-check` pass object (see `multi_devices_check_fn`).
inline constexpr multi_devices_check_fn multi_devices_check{};

}  // namespace gpass
