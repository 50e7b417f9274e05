// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file placer.hpp
/// `gpass::place`: assigns every node of a graph (and of the functions in its library) to one
/// device, the way TensorFlow's placer does (seed 003): union-find over the colocation
/// constraints, then one device per group.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/type.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/session/device_name.hpp>

namespace gpass {

/// A device the placer may use: its full name and whether it has a kernel for an op.
struct placement_device {
  device_name name;
  std::function<bool(std::string_view domain, std::string_view op)> supports;
  /// Whether the device holds tensors of an element type (a GPU holds no strings); null:
  /// every type. A node whose known input or output types it does not hold goes elsewhere.
  std::function<bool(dtype)> holds = nullptr;
  /// Whether the device's kernels serve a node of these attributes and element types (see
  /// `exec::kernel_query`); null: `supports` alone decides. When no device serves a group,
  /// the placer falls back to `serves_types` and `supports` (and the executor reports what
  /// is missing).
  std::function<bool(const exec::kernel_query&)> serves = nullptr;
  /// Whether the device computes on the element types of a node like this (a GPU that holds
  /// complex values computes only some ops on them); null: every node. Asked on its own where
  /// no device serves a group: a device whose kernels would take the node's types is chosen
  /// before one that only has a kernel of its op.
  std::function<bool(const exec::kernel_query&)> serves_types = nullptr;
};

/// How `place` chooses.
struct placement_options {
  /// When a group's requested device does not exist or has no kernel for one of its ops,
  /// use a device that has them all (TensorFlow's `allow_soft_placement`); off: an error.
  bool allow_soft_placement = false;
  /// Print each node's device (`name: (op): /job:localhost/replica:0/task:0/device:CPU:0`,
  /// function nodes as `function/name`), as TensorFlow's `log_device_placement`.
  bool log_device_placement = false;
  std::ostream* log = nullptr;  ///< where to print; null: std::cerr
  /// Groups with no requested device go to the first device that can run them (`first`), or
  /// to the devices in turn (`round_robin`: a testing option that spreads a graph so every
  /// cross-device path is exercised).
  enum class spread_kind { first, round_robin } spread = spread_kind::first;
  /// Devices of stateful nodes placed by earlier placements (key: node name, or
  /// `function/node`): they stay there.
  const std::map<std::string, std::string, std::less<>>* pinned = nullptr;
};

/// What `place` did.
struct placement_result {
  std::size_t groups = 0;                                 ///< colocation groups
  std::map<std::string, std::size_t> nodes_per_device;    ///< full device name -> nodes
  /// The stateful nodes (variables, random ops, effects; and `global:<variable>` for the
  /// globals read or written) and their devices, to pin them in later placements
  /// (`placement_options::pinned`).
  std::map<std::string, std::string, std::less<>> stateful;
};

namespace detail {

struct placer_item {
  std::size_t graph = 0;  // 0: the main graph, k: the k-th function
  std::string key;        // node name, or function/node
  std::optional<device_name> request;
  std::string request_text;
  std::string variable;  // get_global / set_global: the global it reads or writes
};

inline std::size_t uf_find(std::vector<std::size_t>& p, std::size_t x) {
  while (p[x] != x) {
    p[x] = p[p[x]];
    x = p[x];
  }
  return x;
}

inline bool is_metadata_op(std::string_view domain, std::string_view op) {
  if (domain.empty()) return op == "Shape" || op == "Size";
  if (domain == "tf") return op == "Shape" || op == "ShapeN" || op == "Size" || op == "Rank";
  return false;
}

inline bool is_interface_op(std::string_view domain, std::string_view op) {
  return domain.empty() && (op == "arg" || op == "return" || op == "function_entry");
}

}  // namespace detail

/// Places every node of `g` and of its functions on one of `devices`, writing the device's
/// full name to `node.device`. Constraints, joined by union-find into groups:
/// - a node's requested device (`node.device`, partial specs allowed: `/cpu:1`, `/device:CPU:*`);
/// - colocation: `_class` attributes `loc:@<node>` (TensorFlow's `colocate_with`; a name not
///   in the graph, pruned away, is ignored);
/// - a generator (no inputs, no control edges, not stateful) with one consumer goes with it;
///   a metadata op (`Shape`, `Size`, `Rank`, `ShapeN`) goes with the producer of its input;
///   both only when they request no device themselves;
/// - resource edges (an input of element type `resource`) and every `get_global` /
///   `set_global` / `update_globals` of one variable stay together; a node calling a function (loop body,
///   branch) stays with that function's `function_entry` and `return`;
/// - stateful nodes placed earlier (`pinned`, by node name) keep their device, and so does
///   every reader and writer of a global placed earlier (key `global:<variable>`: a variable
///   stays on one device whatever signature touches it).
///
/// Each group goes to the first device that matches its merged request and has a kernel for
/// every op of the group. Errors (`gpass::error` naming the nodes): two requests in a group
/// that conflict, a requested device the session does not have or that cannot run an op
/// (unless `allow_soft_placement`), an op no device can run, a malformed device name.
/// \code
///   std::vector<gpass::placement_device> devs = {{gpass::parse_device_name("/job:localhost/replica:0/task:0/device:CPU:0"), has_kernel}};
///   auto r = gpass::place(g, devs, {.log_device_placement = true});
/// \endcode
template <class G>
placement_result place(G& g, const std::vector<placement_device>& devices, const placement_options& opt = {}) {
  using node_id = typename G::node_id;
  if (devices.empty()) throw error("placement: no devices");
  std::vector<G*> graphs{&g};
  std::vector<std::string> graph_names{""};
  for (auto& [name, f] : g.functions()) {
    graphs.push_back(f.get());
    graph_names.push_back(name);
  }
  std::vector<detail::placer_item> items;
  std::vector<node_map<G, std::size_t>> index;
  std::vector<std::pair<G*, node_id>> where;  // per item
  for (std::size_t gi = 0; gi < graphs.size(); ++gi) {
    G& h = *graphs[gi];
    index.emplace_back(h, 0);
    for (auto v : h.nodes()) {
      index[gi][v] = items.size();
      where.emplace_back(&h, v);
      detail::placer_item it;
      it.graph = gi;
      it.key = gi == 0 ? h[v].name : graph_names[gi] + "/" + h[v].name;
      if (h[v].domain.empty() && (h[v].op == "get_global" || h[v].op == "set_global"))
        if (auto a = h[v].attrs.find("variable"); a != h[v].attrs.end() && a->second.template is<std::string>())
          it.variable = a->second.template as<std::string>();
      if (h[v].domain.empty() && h[v].op == "update_globals")
        if (auto a = h[v].attrs.find("variables"); a != h[v].attrs.end() && a->second.template is<std::vector<std::string>>() &&
                                                   !a->second.template as<std::vector<std::string>>().empty())
          it.variable = a->second.template as<std::vector<std::string>>().front();
      if (!h[v].device.empty()) {
        try {
          it.request = parse_device_name(h[v].device);
        } catch (const error& e) {
          throw_node_error("placement: " + e.message(), h[v].name, h[v].op);
        }
        if (it.request->empty()) it.request.reset();
        else it.request_text = h[v].device;
      }
      items.push_back(std::move(it));
    }
  }
  std::vector<std::size_t> parent(items.size());
  std::iota(parent.begin(), parent.end(), std::size_t{0});
  auto unite = [&](std::size_t a, std::size_t b) {
    a = detail::uf_find(parent, a), b = detail::uf_find(parent, b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  };
  const auto& reg = op_registry::global();
  auto stateful = [&](const typename G::node_type& n) {
    const op_schema* s = reg.find(n.domain, n.op);
    return s && (s->traits.stateful || s->traits.side_effects);
  };
  std::map<std::string, std::size_t, std::less<>> global_first;  // variable -> first get/set_global
  for (std::size_t gi = 0; gi < graphs.size(); ++gi) {
    G& h = *graphs[gi];
    for (auto v : h.nodes()) {
      const std::size_t i = index[gi][v];
      const auto& n = h[v];
      // colocation groups
      auto coloc = [&](const std::string& c) {
        if (!c.starts_with("loc:@")) return;
        if (auto u = h.find(std::string_view(c).substr(5))) unite(i, index[gi][*u]);
      };
      if (auto a = n.attrs.find("_class"); a != n.attrs.end()) {
        if (a->second.template is<std::vector<std::string>>())
          for (const auto& c : a->second.template as<std::vector<std::string>>()) coloc(c);
        else if (a->second.template is<std::string>()) coloc(a->second.template as<std::string>());
      }
      // generators with their consumer
      if (!items[i].request && h.num_inputs(v) == 0 && h.control_inputs(v).empty() && h.control_outputs(v).empty() &&
          !stateful(n) && !(n.domain.empty() && (n.op == "function_entry" || n.op == "return"))) {
        auto uses = h.uses(v);
        bool one = !uses.empty();
        for (const auto& u : uses) one = one && u.node == uses.front().node;
        if (one) unite(i, index[gi][uses.front().node]);
      }
      // metadata ops with their input's producer
      if (!items[i].request && detail::is_metadata_op(n.domain, n.op) && h.num_inputs(v) > 0) {
        auto in = h.input(v, 0);
        if (!in.empty) unite(i, index[gi][in.node]);
      }
      // resource edges
      for (const auto& in : h.inputs(v)) {
        if (in.empty) continue;
        const auto& t = h[in.node].outputs[static_cast<std::size_t>(in.port)];
        if (t.is_tensor() && t.tensor().element == dtype::resource) unite(i, index[gi][in.node]);
      }
      // one variable, one device (with the optimizer steps that update it)
      auto with_global = [&](const std::string& var) {
        auto [it, fresh] = global_first.try_emplace(var, i);
        if (!fresh) unite(i, it->second);
      };
      if (n.domain.empty() && (n.op == "get_global" || n.op == "set_global"))
        if (auto a = n.attrs.find("variable"); a != n.attrs.end() && a->second.template is<std::string>())
          with_global(a->second.template as<std::string>());
      if (n.domain.empty() && n.op == "update_globals")
        if (auto a = n.attrs.find("variables"); a != n.attrs.end() && a->second.template is<std::vector<std::string>>())
          for (const auto& var : a->second.template as<std::vector<std::string>>()) with_global(var);
      // callers with the functions they call
      auto call = [&](const std::string& fname) {
        for (std::size_t fj = 1; fj < graphs.size(); ++fj) {
          if (graph_names[fj] != fname) continue;
          for (auto u : graphs[fj]->nodes()) {
            const auto& m = (*graphs[fj])[u];
            if (m.domain.empty() && (m.op == "function_entry" || m.op == "return")) unite(i, index[fj][u]);
          }
        }
      };
      for (const auto& [k, a] : n.attrs) {
        if (a.template is<function_ref>()) call(a.template as<function_ref>().name);
        else if (a.template is<std::vector<function_ref>>())
          for (const auto& f : a.template as<std::vector<function_ref>>()) call(f.name);
      }
    }
  }

  // groups: merged requests, members
  const std::size_t N = items.size();
  std::vector<std::vector<std::size_t>> members(N);
  for (std::size_t i = 0; i < N; ++i) members[detail::uf_find(parent, i)].push_back(i);
  auto name_of = [&](std::size_t i) { return items[i].key; };
  auto op_of = [&](std::size_t i) -> const typename G::node_type& { return (*where[i].first)[where[i].second]; };
  std::string all_devices;
  for (const auto& d : devices) all_devices += (all_devices.empty() ? "" : ", ") + d.name.to_string();

  placement_result result;
  std::vector<std::string> chosen(N);
  std::size_t turn = 0;
  for (std::size_t root = 0; root < N; ++root) {
    if (members[root].empty()) continue;
    ++result.groups;
    const auto& group = members[root];
    device_name spec;
    std::size_t spec_from = group.front();
    bool any_request = false;
    auto add_request = [&](const device_name& r, std::size_t who, const std::string& why) {
      if (!devices_compatible(spec, r)) {
        const auto& a = op_of(who);
        throw_node_error("placement: node '" + name_of(who) + "' " + why + " '" + r.to_string() + "', but node '" + name_of(spec_from) +
                             "' of its colocation group requests '" + spec.to_string() + "' (colocation conflict)",
                         a.name, a.op);
      }
      if (!any_request) spec_from = who;
      spec = merge_devices(spec, r);
      any_request = true;
    };
    for (std::size_t i : group)
      if (items[i].request) add_request(*items[i].request, i, "requests device");
    bool pinned = false;
    if (opt.pinned)
      for (std::size_t i : group) {
        auto p = opt.pinned->find(items[i].key);
        if (p == opt.pinned->end() && !items[i].variable.empty()) p = opt.pinned->find("global:" + items[i].variable);
        if (p != opt.pinned->end()) {
          add_request(parse_device_name(p->second), i,
                      p->first.starts_with("global:") ? "uses global '" + items[i].variable + "', placed in an earlier run on"
                                                      : "is stateful and was placed in an earlier run on");
          pinned = true;
        }
      }
    // the element types of a node's inputs and outputs, where inference knew them: a
    // tensor's, a list's elements' (a list of strings stays where strings live, whichever op
    // reads it); a resource handle (a list's output 0) carries nothing and goes anywhere
    auto holds_types = [&](const placement_device& d, std::size_t i) {
      if (!d.holds) return true;
      const G& h = *where[i].first;
      const auto v = where[i].second;
      auto ok = [&](const type& t) {
        const dtype e = t.is_tensor() ? t.tensor().element : t.is_list() ? t.list().element.element : dtype::undefined;
        return e == dtype::undefined || e == dtype::resource || d.holds(e);
      };
      for (const auto& t : h[v].outputs)
        if (!ok(t)) return false;
      for (const auto& in : h.inputs(v))
        if (!in.empty && !ok(h[in.node].outputs[static_cast<std::size_t>(in.port)])) return false;
      return true;
    };
    auto query = [&](std::size_t i) {
      const G& h = *where[i].first;
      const auto v = where[i].second;
      auto element = [](const type& t) { return t.is_tensor() ? t.tensor().element : dtype::undefined; };
      exec::kernel_query q{.domain = h[v].domain, .op = h[v].op, .attrs = &h[v].attrs};
      for (const auto& in : h.inputs(v))
        q.inputs.push_back(in.empty ? dtype::undefined : element(h[in.node].outputs[static_cast<std::size_t>(in.port)]));
      for (const auto& t : h[v].outputs) q.outputs.push_back(element(t));
      return q;
    };
    // strict: the kernels must serve the node's attributes and types too; typed: the device
    // must compute on its types
    auto supports_all = [&](const placement_device& d, std::size_t* missing, bool strict = false, bool typed = false) {
      for (std::size_t i : group) {
        const auto& n = op_of(i);
        // an interface op (a feed's `arg`, a `return`) needs no kernel, but its values live on the device
        const bool interface = detail::is_interface_op(n.domain, n.op);
        bool ok = (interface || d.supports(n.domain, n.op)) && holds_types(d, i);
        const bool ask_serves = strict && d.serves, ask_types = (strict || typed) && d.serves_types;
        if (ok && !interface && (ask_serves || ask_types)) {
          const exec::kernel_query q = query(i);
          ok = (!ask_serves || d.serves(q)) && (!ask_types || d.serves_types(q));
        }
        if (!ok) {
          if (missing) *missing = i;
          return false;
        }
      }
      return true;
    };
    std::vector<std::size_t> matching, capable;
    for (std::size_t d = 0; d < devices.size(); ++d) {
      if (device_matches(spec, devices[d].name)) matching.push_back(d);
      if (supports_all(devices[d], nullptr, true)) capable.push_back(d);
    }
    for (const bool typed : {true, false})
      if (capable.empty())
        for (std::size_t d = 0; d < devices.size(); ++d)
          if (supports_all(devices[d], nullptr, false, typed)) capable.push_back(d);
    if (capable.empty()) {
      std::size_t miss = group.front();
      supports_all(devices.front(), &miss);
      const auto& n = op_of(miss);
      throw_node_error("placement: no device of this session (" + all_devices + ") has a kernel for op '" + n.op + "'" +
                           (n.domain.empty() ? std::string() : " of domain '" + n.domain + "'"),
                       name_of(miss), n.op);
    }
    std::vector<std::size_t> ok;
    for (std::size_t d : matching)
      if (std::find(capable.begin(), capable.end(), d) != capable.end()) ok.push_back(d);
    if (ok.empty()) {
      if (!opt.allow_soft_placement || pinned) {
        const auto& a = op_of(spec_from);
        if (matching.empty())
          throw_node_error("placement: node '" + name_of(spec_from) + "' requests device '" + spec.to_string() +
                               "', which this session does not have (devices: " + all_devices +
                               "; allow_soft_placement would choose another)",
                           a.name, a.op);
        std::size_t miss = group.front();
        supports_all(devices[matching.front()], &miss, true);
        const auto& m = op_of(miss);
        throw_node_error("placement: no kernel for op '" + m.op + "' (node '" + name_of(miss) + "') on " +
                             devices[matching.front()].name.to_string() + ", which node '" + name_of(spec_from) +
                             "' of its group requests (allow_soft_placement would choose another)",
                         m.name, m.op);
      }
      ok = capable;  // soft placement
    }
    std::size_t pick = ok.front();
    if (!any_request && opt.spread == placement_options::spread_kind::round_robin) pick = ok[turn++ % ok.size()];
    const std::string full = devices[pick].name.to_string();
    for (std::size_t i : group) chosen[i] = full;
  }
  for (std::size_t gi = 0; gi < graphs.size(); ++gi) {
    G& h = *graphs[gi];
    for (auto v : h.nodes()) {
      const std::size_t i = index[gi][v];
      h[v].device = chosen[i];
      ++result.nodes_per_device[chosen[i]];
      if (stateful(h[v])) result.stateful[items[i].key] = chosen[i];
      if (!items[i].variable.empty()) result.stateful["global:" + items[i].variable] = chosen[i];
      if (opt.log_device_placement) {
        std::ostream& os = opt.log ? *opt.log : std::cerr;
        os << items[i].key << ": (" << (h[v].domain.empty() ? "" : h[v].domain + "::") << h[v].op << "): " << chosen[i] << '\n';
      }
    }
  }
  return result;
}

}  // namespace gpass
