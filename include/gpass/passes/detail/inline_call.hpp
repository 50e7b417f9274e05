// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file inline_call.hpp
/// Private: inlining one call node (a node whose function attribute names a library function
/// applied to its inputs) into the graph that holds it. Shared by `inline-functions` (core
/// `call` nodes, ONNX model-local functions) and `lower-functional-ops` (TensorFlow's
/// `PartitionedCall`).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/graph/graph.hpp>

namespace gpass::detail {

/// The `function_entry` and `return` nodes of function `f` (the return node twice when the
/// function takes no arguments); fails naming `pass` and `caller` when there is no `return`.
template <class G>
std::pair<typename G::node_id, typename G::node_id> function_interface(const G& f, const std::string& fname,
                                                                      const typename G::node_type& caller,
                                                                      std::string_view pass) {
  std::optional<typename G::node_id> entry, ret;
  for (auto v : f.nodes()) {
    if (f[v].domain.empty() && f[v].op == "function_entry") entry = v;
    if (f[v].domain.empty() && f[v].op == "return") ret = v;
  }
  if (!ret) throw error("function '" + fname + "' has no return node", error_context{std::string(pass), caller.name, caller.op});
  return {entry.value_or(*ret), *ret};
}

/// Replaces call node `c` of `h` by a copy of function `f` (named `fname`): the copies are
/// named `<call>/<node>` (made unique), take the call's device where they have none, read the
/// call's inputs where the body reads its arguments, and the call's uses read the body's
/// results. Control inputs of the call go to the copies that have no data input (and to the
/// copies the body orders after its entry); when the call has control successors, or the
/// body's `return` has control inputs, `make_anchor(call)` makes a node (named as the call)
/// that runs after every copy and orders the call's successors. Returns the copies. Fails
/// (naming `pass` and the call) when `f` is `h` itself or the arities differ. O(size of `f` +
/// degree of the call).
template <class G, class MakeAnchor>
std::vector<typename G::node_id> inline_call(G& h, typename G::node_id c, const G& f, const std::string& fname,
                                             std::string_view pass, MakeAnchor&& make_anchor) {
  using node_id = typename G::node_id;
  const typename G::node_type call = h[c];
  auto fail = [&](const std::string& why) { throw error(why, error_context{std::string(pass), call.name, call.op}); };
  if (&f == &h) fail("function '" + fname + "' calls itself (a recursive function cannot be inlined)");
  const auto [entry, ret] = function_interface(f, fname, call, pass);
  const auto call_inputs = h.inputs(c);
  const auto call_controls = h.control_inputs(c);
  const auto call_successors = h.control_outputs(c);
  if (f.num_inputs(ret) != call.outputs.size())
    fail("function '" + fname + "' returns " + std::to_string(f.num_inputs(ret)) + " values, the call has " +
         std::to_string(call.outputs.size()) + " outputs");
  if (entry != ret && f.num_outputs(entry) != call_inputs.size())
    fail("function '" + fname + "' takes " + std::to_string(f.num_outputs(entry)) + " arguments, the call passes " +
         std::to_string(call_inputs.size()));
  h.rename(c, h.unique_name(call.name + ".inlined"));

  std::unordered_map<std::uint64_t, node_id> copy;
  std::vector<node_id> added;
  for (auto u : f.nodes()) {
    if (u == entry || u == ret) continue;
    typename G::node_type n = f[u];
    n.name = h.unique_name(call.name + "/" + n.name);
    if (n.device.empty()) n.device = call.device;
    const node_id w = h.add_node(std::move(n));
    copy.emplace(f.serial(u), w);
    added.push_back(w);
  }
  // a value of the body in the caller: an argument is the call's input
  auto value_of = [&](const typename G::input_ref& in) -> typename G::input_ref {
    if (in.empty) return in;
    if (in.node == entry) return call_inputs.at(static_cast<std::size_t>(in.port));
    typename G::input_ref r = in;
    r.node = copy.at(f.serial(in.node));
    return r;
  };
  for (auto u : f.nodes()) {
    if (u == entry || u == ret) continue;
    const node_id w = copy.at(f.serial(u));
    bool has_data = false;
    for (std::size_t p = 0; p < f.num_inputs(u); ++p) {
      auto in = value_of(f.input(u, static_cast<int>(p)));
      if (in.empty) {
        h.add_empty_input(w);
        continue;
      }
      has_data = true;
      h.connect(in.node, in.port, w, static_cast<int>(p));
    }
    for (auto p : f.control_inputs(u)) {
      if (p == entry) {
        for (auto cc : call_controls) h.add_control(cc, w);
      } else {
        h.add_control(copy.at(f.serial(p)), w);
      }
    }
    if (!has_data)
      for (auto cc : call_controls) h.add_control(cc, w);
  }
  // the call's results
  std::vector<typename G::input_ref> results;
  for (std::size_t k = 0; k < f.num_inputs(ret); ++k) {
    auto in = value_of(f.input(ret, static_cast<int>(k)));
    if (in.empty) fail("function '" + fname + "' returns an empty value " + std::to_string(k));
    results.push_back(in);
  }
  for (std::size_t k = 0; k < results.size(); ++k) h.replace_uses(c, static_cast<int>(k), results[k].node, results[k].port);
  if (!call_successors.empty() || !f.control_inputs(ret).empty()) {
    const node_id z = h.add_node(make_anchor(call));
    for (auto w : added) h.add_control(w, z);
    for (const auto& r : results) h.add_control(r.node, z);
    for (auto cc : call_controls) h.add_control(cc, z);
    for (auto sn : call_successors) h.add_control(z, sn);
  }
  h.remove_node(c);
  return added;
}

}  // namespace gpass::detail
