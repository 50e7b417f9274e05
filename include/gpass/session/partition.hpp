// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file partition.hpp
/// `gpass::partition`: splits a placed graph (and the functions it calls) into one graph per
/// device, joined by `send` / `recv` pairs, as TensorFlow's graph partitioning does.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/passes/detail/constants.hpp>

namespace gpass {

/// The graphs of one placed program, one per device.
template <class G>
struct partitioned_program {
  /// Per device: the part of the main graph it runs, with the parts of the functions it runs
  /// in its library (same names) and the main graph's attributes. Every part ends in a
  /// `return` node and orders its nodes by a chain of control edges (see `partition`).
  std::vector<G> parts;
  std::vector<char> has_main;  ///< per device: whether its part of the main graph has nodes
  /// Per device: the main part's `arg` nodes, in index order, as feed indices of the run.
  std::vector<std::vector<std::size_t>> feeds;
  /// Per device: the main part's results (its `return` inputs) as fetch indices of the run.
  std::vector<std::vector<std::size_t>> fetches;
  /// Per function: the device that calls it and holds its `function_entry` and `return`
  /// (`home`), and the other devices that run a part of it.
  struct function_parts {
    std::size_t home = 0;
    std::vector<std::size_t> remote;
  };
  std::map<std::string, function_parts, std::less<>> functions;
  std::size_t sends = 0;  ///< send nodes made (as many recv nodes)
  std::size_t copied_constants = 0;  ///< constants copied to another device instead of sent
  std::size_t control_transfers = 0;  ///< of which carry a control edge (no value)
};

namespace detail {

template <class G>
void partition_one(const G& h, const std::string& fname, const std::vector<std::string>& device_names,
                   std::vector<G>& out, std::vector<char>& present, partitioned_program<G>& prog) {
  using node_id = typename G::node_id;
  using node_type = typename G::node_type;
  const bool is_main = fname.empty();
  const auto all = topological_order(h);
  // what the results need (a function may hold dead nodes: its plan would have skipped them)
  node_map<G, char> needed(h, 0);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const auto& n = h[*it];
    if (n.domain.empty() && (n.op == "return" || n.op == "function_entry" || n.op == "arg")) needed[*it] = 1;
    if (!needed[*it]) continue;
    for (const auto& in : h.inputs(*it))
      if (!in.empty) needed[in.node] = 1;
    for (auto c : h.control_inputs(*it)) needed[c] = 1;
  }
  std::vector<node_id> order;
  for (auto v : all)
    if (needed[v]) order.push_back(v);
  node_map<G, std::size_t> pos(h, 0), dev(h, 0);
  for (std::size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  for (auto v : order) {
    auto it = std::find(device_names.begin(), device_names.end(), h[v].device);
    if (it == device_names.end())
      throw_node_error("partition: node is placed on '" + h[v].device + "', not a device of this session", h[v].name, h[v].op);
    dev[v] = static_cast<std::size_t>(it - device_names.begin());
  }
  const std::size_t D = device_names.size();
  out.assign(D, G{});
  present.assign(D, 0);
  using key_t = std::tuple<std::size_t, int, std::size_t>;  // chain position: (2*pos +-1, kind, seq)
  std::vector<std::vector<std::pair<key_t, node_id>>> chain(D);
  std::vector<std::optional<node_id>> ret(D);
  std::size_t seq = 0;
  node_map<G, node_id> copy(h, node_id{});
  std::optional<node_id> main_ret;
  for (auto v : order) {
    const auto& n = h[v];
    if (is_main && n.domain.empty() && n.op == "return") {
      main_ret = v;
      continue;
    }
    const std::size_t d = dev[v];
    present[d] = 1;
    copy[v] = out[d].add_node(n);
    if (n.domain.empty() && n.op == "return") ret[d] = copy[v];
    else chain[d].push_back({{2 * pos[v] + 2, 0, seq++}, copy[v]});
  }
  // data and control edges; a crossing edge becomes send -> recv (one pair per tensor and device)
  std::map<std::tuple<node_id, int, std::size_t>, node_id> recv_of;
  auto is_constant = [&](node_id u) {
    return gpass::detail::is_constant_node(h[u]) && h.num_inputs(u) == 0 && h.control_inputs(u).empty();
  };
  auto transfer = [&](node_id u, int port, std::size_t to, std::size_t consumer_pos) -> node_id {
    const std::tuple<node_id, int, std::size_t> k{u, port, to};
    if (auto it = recv_of.find(k); it != recv_of.end()) return it->second;
    if (port >= 0 && is_constant(u)) {
      // a constant read on another device is copied there, not sent: no transfer, and the
      // consumer's kernel still sees a constant input (it may pre-pack it)
      node_type c = h[u];
      c.name = out[to].unique_name(h[u].name);
      c.device = device_names[to];
      auto cv = out[to].add_node(std::move(c));
      chain[to].push_back({{2 * consumer_pos + 1, 1, seq++}, cv});
      present[to] = 1;
      ++prog.copied_constants;
      recv_of.emplace(k, cv);
      return cv;
    }
    const std::size_t from = dev[u];
    const std::string tensor = port < 0 ? "^" + h[u].name : h[u].name + ":" + std::to_string(port);
    const std::string tag = (port < 0 ? "ctrl_" + h[u].name : h[u].name + "_" + std::to_string(port)) + "_" + std::to_string(to);
    node_type s;
    s.op = "send";
    s.name = out[from].unique_name("_send_" + tag);
    s.attrs["tensor_name"] = tensor;
    s.attrs["send_device"] = device_names[from];
    s.attrs["recv_device"] = device_names[to];
    s.device = device_names[from];
    s.outputs.clear();
    node_type r;
    r.op = "recv";
    r.name = out[to].unique_name("_recv_" + (port < 0 ? "ctrl_" + h[u].name : h[u].name + "_" + std::to_string(port)) + "_" +
                                 std::to_string(from));
    r.attrs = s.attrs;
    r.device = device_names[to];
    r.outputs = {port < 0 ? type{} : h[u].outputs[static_cast<std::size_t>(port)]};
    auto sv = out[from].add_node(std::move(s));
    if (port < 0) out[from].add_control(copy[u], sv);
    else out[from].add_input(sv, copy[u], port);
    auto rv = out[to].add_node(std::move(r));
    chain[from].push_back({{2 * pos[u] + 3, 1, seq++}, sv});
    chain[to].push_back({{2 * consumer_pos + 1, 1, seq++}, rv});
    present[to] = 1;
    ++prog.sends;
    if (port < 0) ++prog.control_transfers;
    recv_of.emplace(k, rv);
    return rv;
  };
  for (auto v : order) {
    if (main_ret && v == *main_ret) continue;
    const std::size_t d = dev[v];
    for (std::size_t q = 0; q < h.num_inputs(v); ++q) {
      auto in = h.input(v, static_cast<int>(q));
      if (in.empty) {
        out[d].add_empty_input(copy[v]);
        continue;
      }
      if (dev[in.node] == d) out[d].add_input(copy[v], copy[in.node], in.port);
      else out[d].add_input(copy[v], transfer(in.node, in.port, d, pos[v]), 0);
    }
    for (auto c : h.control_inputs(v)) {
      if (dev[c] == d) out[d].add_control(copy[c], copy[v]);
      else out[d].add_control(transfer(c, -1, d, pos[v]), copy[v]);
    }
  }
  // results: the main graph's fetches go to the part that computes them
  if (is_main) {
    prog.fetches.assign(D, {});
    std::vector<std::vector<std::string>> names(D);
    std::vector<std::string> all_names;
    if (main_ret)
      if (auto it = h[*main_ret].attrs.find("names"); it != h[*main_ret].attrs.end() && it->second.template is<std::vector<std::string>>())
        all_names = it->second.template as<std::vector<std::string>>();
    for (std::size_t d = 0; d < D; ++d) {
      node_type r;
      r.name = "_fetches";
      r.op = "return";
      r.outputs.clear();
      r.device = device_names[d];
      ret[d] = out[d].add_node(std::move(r));
    }
    if (main_ret)
      for (std::size_t k = 0; k < h.num_inputs(*main_ret); ++k) {
        auto in = h.input(*main_ret, static_cast<int>(k));
        if (in.empty) throw error("partition: fetch " + std::to_string(k) + " has no producer");
        const std::size_t d = dev[in.node];
        out[d].add_input(*ret[d], copy[in.node], in.port);
        prog.fetches[d].push_back(k);
        names[d].push_back(k < all_names.size() ? all_names[k] : h[in.node].name);
        present[d] = 1;
      }
    for (std::size_t d = 0; d < D; ++d) out[d][*ret[d]].attrs["names"] = names[d];
  } else {
    for (std::size_t d = 0; d < D; ++d)
      if (present[d] && !ret[d]) {
        node_type r;
        r.name = out[d].unique_name("_part_done");
        r.op = "return";
        r.outputs.clear();
        r.device = device_names[d];
        ret[d] = out[d].add_node(std::move(r));
      }
  }
  // one order per part, the restriction of one topological order of the whole (sends right
  // after their producer, recvs right before their first consumer): parts that each run in
  // that order never wait on each other in a cycle
  for (std::size_t d = 0; d < D; ++d) {
    if (!ret[d]) continue;
    auto& c = chain[d];
    std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 1; i < c.size(); ++i) out[d].add_control(c[i - 1].second, c[i].second);
    if (!c.empty()) out[d].add_control(c.back().second, *ret[d]);
  }
}

}  // namespace detail

/// Splits `g`, a main graph whose nodes (and its functions' nodes) are placed on
/// `device_names` (full names in `node.device`, see `place`), into one graph per device:
/// - each node goes to the part of its device; a constant (`Constant`, TensorFlow `Const`)
///   read on another device is copied into that device's part; any other data edge between
///   devices becomes a `send`
///   (on the producer's device, attributes `tensor_name` = `node:port`, `send_device`,
///   `recv_device`) and a `recv` (on the consumer's, the tensor's type), one pair per tensor
///   and destination device; a control edge between devices becomes a `send` with no input
///   (a control input from the source; `tensor_name` = `^node`) and a `recv` that is a control
///   input of the destination;
/// - the main graph's `return` node is split: each part gets a `return` (`_fetches`) with the
///   fetches computed on its device (`fetches[d]` maps them back), its `arg` nodes keep their
///   run indices (`feeds[d]`);
/// - a function is split the same way: the part on the device holding its `function_entry`
///   and `return` (where its callers run, the placer keeps them together) is the `home`,
///   the others end in an empty `return`; the run of a call runs all its parts;
/// - every part chains its nodes by control edges in the order of one topological order of
///   the whole graph, so parts running concurrently cannot wait on each other in a cycle.
///
/// Only functions reachable from the main graph are split. Errors: a node placed on a device
/// not in `device_names`, a cycle (`gpass::error` naming it).
template <class G>
partitioned_program<G> partition(const G& g, const std::vector<std::string>& device_names) {
  partitioned_program<G> prog;
  const std::size_t D = device_names.size();
  std::vector<char> present;
  detail::partition_one(g, "", device_names, prog.parts, present, prog);
  prog.has_main = present;
  prog.feeds.assign(D, {});
  for (std::size_t d = 0; d < D; ++d) {
    prog.parts[d].attrs() = g.attrs();
    std::vector<std::pair<std::int64_t, std::size_t>> idx;
    for (auto v : prog.parts[d].nodes()) {
      const auto& n = prog.parts[d][v];
      if (n.domain.empty() && n.op == "arg") idx.emplace_back(get_or<std::int64_t>(n.attrs, "index", 0), 0);
    }
    std::sort(idx.begin(), idx.end());
    for (auto& [i, unused] : idx) prog.feeds[d].push_back(static_cast<std::size_t>(i));
  }
  // functions reachable from the main graph
  std::vector<std::string> work;
  auto callees = [&](const G& h) {
    for (auto v : h.nodes())
      for (const auto& [k, a] : h[v].attrs) {
        if (a.template is<function_ref>()) work.push_back(a.template as<function_ref>().name);
        else if (a.template is<std::vector<function_ref>>())
          for (const auto& f : a.template as<std::vector<function_ref>>()) work.push_back(f.name);
      }
  };
  callees(g);
  while (!work.empty()) {
    std::string name = std::move(work.back());
    work.pop_back();
    if (prog.functions.count(name)) continue;
    const G* f = g.find_function(name);
    if (!f) throw error("partition: function '" + name + "' is referenced but not in the graph's library");
    callees(*f);
    std::vector<G> parts;
    detail::partition_one(*f, name, device_names, parts, present, prog);
    typename partitioned_program<G>::function_parts info;
    bool home_found = false;
    for (auto v : f->nodes())
      if ((*f)[v].domain.empty() && ((*f)[v].op == "function_entry" || (*f)[v].op == "return")) {
        info.home = static_cast<std::size_t>(std::find(device_names.begin(), device_names.end(), (*f)[v].device) - device_names.begin());
        home_found = true;
      }
    if (!home_found) throw error("partition: function '" + name + "' has no return node");
    for (std::size_t d = 0; d < D; ++d) {
      if (!present[d] && d != info.home) continue;
      if (d != info.home) info.remote.push_back(d);
      prog.parts[d].add_function(name, std::move(parts[d]));
    }
    prog.functions.emplace(std::move(name), std::move(info));
  }
  return prog;
}

}  // namespace gpass
