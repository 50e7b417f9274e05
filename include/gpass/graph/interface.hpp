// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file interface.hpp
/// `gpass::interface_of`: a graph's inputs (its `arg` nodes, in `index` order, with their
/// declared types) and the names of its results, as an executor or a session names them;
/// `gpass::op_counts`: its nodes per op type.

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/type.hpp>

namespace gpass {

/// What a caller of a graph sees: input names and types, result names.
struct graph_interface {
  std::vector<std::string> inputs;   ///< `arg` node names, by their `index` attribute
  std::vector<type> input_types;     ///< the declared type of each input
  std::vector<std::string> outputs;  ///< per `return` input: its `names` entry, else the producer's name
};

/// The interface of `g`'s main graph (default domain `arg` and `return` nodes). O(V).
/// \code
///   auto io = gpass::interface_of(g);   // io.inputs == {"x"}, io.outputs == {"y"}
/// \endcode
template <class G>
graph_interface interface_of(const G& g) {
  graph_interface r;
  std::vector<std::tuple<std::int64_t, std::string, type>> args;
  for (auto v : g.nodes()) {
    const auto& n = g[v];
    if (!n.domain.empty()) continue;
    if (n.op == "arg")
      args.emplace_back(get_or<std::int64_t>(n.attrs, "index", 0), n.name, n.outputs.empty() ? type{} : n.outputs[0]);
    if (n.op == "return") {
      std::vector<std::string> names;
      if (auto it = n.attrs.find("names"); it != n.attrs.end() && it->second.template is<std::vector<std::string>>())
        names = it->second.template as<std::vector<std::string>>();
      for (std::size_t k = 0; k < g.num_inputs(v); ++k) {
        auto in = g.input(v, static_cast<int>(k));
        r.outputs.push_back(k < names.size() ? names[k] : (in.empty ? std::string() : g[in.node].name));
      }
    }
  }
  std::stable_sort(args.begin(), args.end(), [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  for (auto& [i, name, t] : args) {
    r.inputs.push_back(std::move(name));
    r.input_types.push_back(std::move(t));
  }
  return r;
}

/// Nodes per op type (`domain::op` outside the default domain) of `g` and its functions,
/// `arg` and `return` not counted (onnxsim's before/after summary). O(V).
template <class G>
std::map<std::string, std::int64_t> op_counts(const G& g) {
  std::map<std::string, std::int64_t> r;
  auto count = [&](const G& h) {
    for (auto v : h.nodes()) {
      const auto& n = h[v];
      if (n.domain.empty() && (n.op == "arg" || n.op == "return")) continue;
      ++r[n.domain.empty() ? n.op : n.domain + "::" + n.op];
    }
  };
  count(g);
  for (const auto& [name, f] : g.functions()) count(*f);
  return r;
}

}  // namespace gpass
