// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file rewrite.hpp
/// The feed/fetch rewrite of a session run (TensorFlow DirectSession's, seed 003): the fed
/// tensors become `arg` nodes read from the call frame, the fetched tensors the inputs of a
/// `return` node written to it, the targets its control inputs; then the graph is pruned to
/// what the fetches and targets need, so feeding a tensor cuts everything upstream of it.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/io/tf_signature.hpp>

namespace gpass {

/// The feeds, fetches and targets of one `session::run`, by name. A tensor name is, in this
/// order of lookup: a result name of the graph (its `return` node's `names`, as ONNX names
/// outputs), the name of an `arg` node (a graph input), or `node:port` / `node` (port 0).
/// A target is a node name.
struct run_signature {
  std::vector<std::string> feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
};

/// Name of the `return` node `rewrite_for_run` makes.
inline constexpr std::string_view fetch_node_name = "_fetches";

namespace detail {

template <class G>
struct tensor_ref {
  typename G::node_id node{};
  int port = 0;
};

// The results of a graph with a `return` node: name -> producer, and the node itself.
template <class G>
std::optional<typename G::node_id> find_return(const G& g) {
  for (auto v : g.nodes())
    if (g[v].domain.empty() && g[v].op == "return") return v;
  return std::nullopt;
}

}  // namespace detail

/// Removes every node of `g` that its `return` node does not need (through data and
/// control edges; cycles are fine). Returns the number removed. A graph without a `return`
/// node is left as is.
template <class G>
std::size_t prune_for_run(G& g) {
  auto ret = detail::find_return(g);
  if (!ret) return 0;
  node_map<G, char> needed(g, 0);
  std::vector<typename G::node_id> work{*ret};
  needed[*ret] = 1;
  while (!work.empty()) {
    auto v = work.back();
    work.pop_back();
    for (const auto& in : g.inputs(v))
      if (!in.empty && !needed[in.node]) needed[in.node] = 1, work.push_back(in.node);
    for (auto c : g.control_inputs(v))
      if (!needed[c]) needed[c] = 1, work.push_back(c);
  }
  std::vector<typename G::node_id> doomed;
  for (auto v : g.nodes())
    if (!needed[v]) doomed.push_back(v);
  g.remove_nodes(doomed);
  return doomed.size();
}

/// Rewrites `g` (a main graph, imported from ONNX or TensorFlow, with or without a `return`
/// node) for one run:
/// - feed k becomes `arg {index = k}`: an `arg` node fed by name keeps its node; a fed
///   TensorFlow `Placeholder` is replaced by an `arg` of its declared type; any other tensor
///   gets a new `arg` (`_arg_<node>_<port>`, the tensor's type) that every consumer reads
///   instead, which cuts the producer off when nothing else needs it;
/// - the existing `return` node (if any) is removed and a new `return` named `_fetches`
///   takes the fetches in order (`names` = the fetch names); a fetch of a fed tensor gives
///   the fed value; each target becomes a control input of it;
/// - `arg` nodes that are not fed keep their node with an index after the feeds (their
///   `default` applies; without one the run fails if they are needed);
/// - every node that neither a fetch nor a target needs is removed (`prune_for_run`).
///
/// Errors (`gpass::error` naming the name): an unknown tensor or node, a port out of range,
/// a tensor fed twice, a fetch inside a TensorFlow v1 loop frame (as TensorFlow, "not
/// fetchable"), no fetch and no target.
/// \code
///   gpass::rewrite_for_run(g, {.feeds = {"x:0"}, .fetches = {"y:0"}, .targets = {"update"}});
/// \endcode
template <class G>
void rewrite_for_run(G& g, const run_signature& sig) {
  using node_id = typename G::node_id;
  using node_type = typename G::node_type;
  if (sig.fetches.empty() && sig.targets.empty()) throw error("a run needs at least one fetch or target");

  // the graph's results by name, then the old return node goes
  std::vector<std::pair<std::string, detail::tensor_ref<G>>> results;
  if (auto ret = detail::find_return(g)) {
    std::vector<std::string> names;
    if (auto it = g[*ret].attrs.find("names"); it != g[*ret].attrs.end() && it->second.template is<std::vector<std::string>>())
      names = it->second.template as<std::vector<std::string>>();
    for (std::size_t k = 0; k < g.num_inputs(*ret) && k < names.size(); ++k) {
      auto in = g.input(*ret, static_cast<int>(k));
      if (!in.empty) results.push_back({names[k], {in.node, in.port}});
    }
    g.remove_node(*ret);
  }
  if (g.find(fetch_node_name)) throw error("the graph already has a node named _fetches");

  auto resolve = [&](const std::string& name, const char* what) -> detail::tensor_ref<G> {
    for (const auto& [n, t] : results)
      if (n == name) return t;
    if (auto v = g.find(name); v && g[*v].domain.empty() && g[*v].op == "arg") return {*v, 0};
    const tf_tensor_name t = parse_tf_tensor_name(name);
    auto v = g.find(t.node);
    if (!v) throw error(std::string(what) + " '" + name + "': no tensor or node of that name in the graph");
    if (static_cast<std::size_t>(t.port) >= g.num_outputs(*v))
      throw_node_error(std::string(what) + " '" + name + "': output " + std::to_string(t.port) + " out of range (the node has " +
                           std::to_string(g.num_outputs(*v)) + ")",
                       g[*v].name, g[*v].op);
    return {*v, t.port};
  };

  std::vector<std::pair<node_id, int>> fed;  // the fed tensors (before the rewrite)
  std::vector<node_id> fed_args;
  for (std::size_t k = 0; k < sig.feeds.size(); ++k) {
    auto t = resolve(sig.feeds[k], "feed");
    for (std::size_t j = 0; j < fed.size(); ++j)
      if (fed[j] == std::pair{t.node, t.port} || (fed_args[j] == t.node && t.port == 0))
        throw error("feed '" + sig.feeds[k] + "' is fed twice");
    fed.emplace_back(t.node, t.port);
    node_type& n = g[t.node];
    if (n.domain.empty() && n.op == "arg") {
      n.attrs["index"] = static_cast<std::int64_t>(k);
      n.attrs["_fed"] = true;
      fed_args.push_back(t.node);
      continue;
    }
    const std::string device = n.device;  // (a new arg goes where the fed tensor's producer was asked to)
    const node_id av = detail::feed_as_arg(g, t.node, t.port, static_cast<std::int64_t>(k));
    g[av].attrs["_fed"] = true;
    g[av].device = device;
    fed_args.push_back(av);
  }
  // inputs that are not fed: after the feeds, in their old order
  {
    std::vector<std::pair<std::int64_t, node_id>> rest;
    for (auto v : g.nodes()) {
      auto& n = g[v];
      if (!(n.domain.empty() && n.op == "arg") || n.attrs.count("_fed")) continue;
      rest.emplace_back(get_or<std::int64_t>(n.attrs, "index", 0), v);
    }
    std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 0; i < rest.size(); ++i) g[rest[i].second].attrs["index"] = static_cast<std::int64_t>(sig.feeds.size() + i);
    for (auto v : fed_args) g[v].attrs.erase("_fed");
  }

  // TensorFlow v1 loops: a tensor inside a frame (reached from an Enter without passing its
  // Exit) has a value per iteration, none to fetch (TensorFlow: "not fetchable")
  std::optional<node_map<G, char>> in_frame;
  auto inside_loop = [&](node_id v) {
    if (!in_frame) {
      in_frame.emplace(g, 0);
      std::vector<node_id> work;
      for (auto u : g.nodes())
        if (g[u].op == "Enter") (*in_frame)[u] = 1, work.push_back(u);
      while (!work.empty()) {
        auto u = work.back();
        work.pop_back();
        if (g[u].op == "Exit") continue;
        auto visit = [&](node_id w) {
          if (!(*in_frame)[w]) (*in_frame)[w] = 1, work.push_back(w);
        };
        for (const auto& use : g.uses(u)) visit(use.node);
        for (auto c : g.control_outputs(u)) visit(c);
      }
    }
    return (*in_frame)[v] && g[v].op != "Exit";
  };
  std::vector<std::pair<node_id, int>> srcs;
  for (const auto& f : sig.fetches) {
    auto t = resolve(f, "fetch");
    if (inside_loop(t.node))
      throw_node_error("fetch '" + f + "': the tensor is inside the while loop of a TensorFlow frame (it has a value per "
                           "iteration): not fetchable; fetch the loop's results instead",
                       g[t.node].name, g[t.node].op);
    std::pair<node_id, int> src{t.node, t.port};
    for (std::size_t k = 0; k < fed.size(); ++k)
      if (fed[k] == src) src = {fed_args[k], 0};
    srcs.push_back(src);
  }
  std::vector<node_id> tgts;
  for (const auto& t : sig.targets) {
    auto v = g.find(t);
    if (!v) throw error("target '" + t + "': no node of that name in the graph");
    tgts.push_back(*v);
  }
  node_type r;
  r.name = std::string(fetch_node_name);
  r.op = "return";
  r.outputs.clear();
  r.attrs["names"] = sig.fetches;
  auto ret = g.add_node(std::move(r));
  for (auto [v, port] : srcs) g.add_input(ret, v, port);
  for (auto v : tgts) g.add_control(v, ret);
  prune_for_run(g);
}

}  // namespace gpass
