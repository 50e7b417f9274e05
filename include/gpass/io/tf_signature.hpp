// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_signature.hpp
/// `gpass::bind_tf_signature`: chooses the feeds, fetches and targets of an imported
/// TensorFlow graph by tensor name (`"node:port"`), as `Session.run(fetches, feed_dict)`
/// does, so the graph can be optimized and run: fed tensors become `arg` nodes and the
/// fetches the inputs of a `return` node.

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>

namespace gpass {

/// A TensorFlow tensor name split in two: `"node:port"` (`"node"` alone is port 0).
struct tf_tensor_name {
  std::string node;
  int port = 0;
  friend bool operator==(const tf_tensor_name&, const tf_tensor_name&) = default;
};

/// Parses `"node:port"` / `"node"`; a port that is not a non-negative decimal number is a
/// `gpass::error` naming the text.
/// \code
///   auto t = gpass::parse_tf_tensor_name("split:1");   // {"split", 1}
/// \endcode
inline tf_tensor_name parse_tf_tensor_name(std::string_view s) {
  const auto colon = s.rfind(':');
  if (colon == std::string_view::npos) return {std::string(s), 0};
  const std::string_view digits = s.substr(colon + 1);
  if (colon == 0 || digits.empty() || digits.size() > 9)
    throw error("tensor name '" + std::string(s) + "' is not of the form node:port");
  int port = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') throw error("tensor name '" + std::string(s) + "' is not of the form node:port");
    port = port * 10 + (c - '0');
  }
  return {std::string(s.substr(0, colon)), port};
}

/// The feeds, fetches and targets of one `Session.run`.
struct tf_signature {
  std::vector<std::string> feeds;    ///< fed tensors, in the order of the run's inputs
  std::vector<std::string> fetches;  ///< fetched tensors, in the order of the run's outputs
  std::vector<std::string> targets;  ///< nodes run for their effects (control inputs of the result)
};

/// Name of the `return` node `bind_tf_signature` adds.
inline constexpr std::string_view tf_fetch_node_name = "_fetches";

namespace detail {

/// `s` with each unknown dim `i` replaced by the symbol `<name>_d<i>` (`name` with the
/// characters a symbol cannot hold replaced by `_`), as the Placeholder's type function
/// names them: a fed tensor of declared shape `[?,3]` is `x_d0 x 3`, symbolic, not unknown.
inline shape tf_named_dims(shape s, std::string_view name) {
  if (!s.has_rank()) return s;
  std::string base;
  for (char ch : name) base += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') ? ch : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base.insert(base.begin(), '_');
  for (std::size_t i = 0; i < s.rank(); ++i)
    if (s[i].is_unknown()) s[i] = dim::symbol(base + "_d" + std::to_string(i));
  return s;
}

/// Feed `index` of a run: output `port` of `v` becomes an `arg {index}` node, returned. A
/// TensorFlow `Placeholder` (or `PlaceholderWithDefault`, whose default input is dropped) is
/// replaced in place by the `arg` (same name, type from its `dtype` and `shape`, unknown dims
/// named `<name>_d<i>`); any other tensor gets a new `arg` named `_arg_<node>_<port>` of the
/// tensor's type, read by every former consumer of the tensor (the producer stays).
template <class G>
typename G::node_id feed_as_arg(G& g, typename G::node_id v, int port, std::int64_t index) {
  typename G::node_type a;
  a.op = "arg";
  a.attrs["index"] = index;
  const auto& n = g[v];
  if (n.domain == "tf" && (n.op == "Placeholder" || n.op == "PlaceholderWithDefault")) {
    tensor_type tt;
    if (auto it = n.attrs.find("dtype"); it != n.attrs.end() && it->second.template is<dtype>())
      tt.element = it->second.template as<dtype>();
    if (auto it = n.attrs.find("shape"); it != n.attrs.end() && it->second.template is<shape>())
      tt.shape = tf_named_dims(it->second.template as<shape>(), n.name);
    a.outputs = {type(tt)};
    g.set_num_inputs(v, 0);
    return g.replace_node(v, std::move(a));
  }
  a.name = g.unique_name("_arg_" + n.name + "_" + std::to_string(port));
  a.outputs = {n.outputs[static_cast<std::size_t>(port)]};
  auto av = g.add_node(std::move(a));
  g.replace_uses(v, port, av, 0);
  return av;
}

}  // namespace detail

/// Rewrites an imported TensorFlow graph `g` (no `return` node yet) for one signature, the
/// feed/fetch rewrite of TensorFlow's DirectSession:
/// - feed k (`"node:port"`) becomes `arg {index = k}`: a fed `Placeholder` (or
///   `PlaceholderWithDefault`) is replaced in place by the `arg` (same name, output type from
///   its `dtype` and `shape` attributes, unknown dims named `<name>_d<i>`); any other fed
///   tensor gets a new `arg` node named `_arg_<node>_<port>`, its output type that of the
///   tensor, and every use of the tensor reads the `arg` instead (the producer stays, for
///   its other outputs or effects);
/// - a `return` node named `_fetches` takes the fetches in order (its `names` are the fetch
///   strings, so the results are named "loss:0" as they were fetched), and has a control
///   input from each target.
///
/// Nodes that no fetch or target needs stay (run `dce` to drop them). Errors (`gpass::error`
/// naming the tensor): an unknown node, a port the node does not have, a tensor fed twice,
/// a graph that already has a `_fetches` node.
/// \code
///   auto g = gpass::read_tf_graph_file("model.pb");
///   gpass::bind_tf_signature(g, {.feeds = {"x:0"}, .fetches = {"y:0", "top:1"}});
///   gpass::exec::plan p(g, cpu);            // p.run({x}) returns {y, top:1}
/// \endcode
template <class G>
void bind_tf_signature(G& g, const tf_signature& sig) {
  using node_type = typename G::node_type;
  auto lookup = [&](const std::string& name, const char* what) {
    const tf_tensor_name t = parse_tf_tensor_name(name);
    auto v = g.find(t.node);
    if (!v) throw error(std::string(what) + " '" + name + "': no node '" + t.node + "' in the graph");
    if (static_cast<std::size_t>(t.port) >= g.num_outputs(*v))
      throw_node_error(std::string(what) + " '" + name + "': output " + std::to_string(t.port) +
                           " out of range (the node has " + std::to_string(g.num_outputs(*v)) + ")",
                       g[*v].name, g[*v].op);
    return std::pair{*v, t.port};
  };
  if (g.find(tf_fetch_node_name)) throw error("the graph already has a node named _fetches (signature bound twice?)");

  std::vector<tf_tensor_name> fed;
  std::vector<typename G::node_id> fed_args;  // the arg of each feed (fetching a fed tensor gives the fed value)
  for (std::size_t k = 0; k < sig.feeds.size(); ++k) {
    auto [v, port] = lookup(sig.feeds[k], "feed");
    const tf_tensor_name t{g[v].name, port};
    for (const auto& f : fed)
      if (f == t) throw error("feed '" + sig.feeds[k] + "' is fed twice");
    fed.push_back(t);
    fed_args.push_back(detail::feed_as_arg(g, v, port, static_cast<std::int64_t>(k)));
  }

  node_type r;
  r.name = std::string(tf_fetch_node_name);
  r.op = "return";
  r.outputs.clear();
  std::vector<std::pair<typename G::node_id, int>> srcs;
  for (const auto& f : sig.fetches) {
    auto src = lookup(f, "fetch");
    const tf_tensor_name t{g[src.first].name, src.second};
    for (std::size_t k = 0; k < fed.size(); ++k)
      if (fed[k] == t) src = {fed_args[k], 0};
    srcs.push_back(src);
  }
  std::vector<typename G::node_id> tgts;
  for (const auto& t : sig.targets) {
    auto v = g.find(t);
    if (!v) throw error("target '" + t + "': no node '" + t + "' in the graph");
    tgts.push_back(*v);
  }
  r.attrs["names"] = sig.fetches;  // the results are named as fetched ("loss:0")
  auto ret = g.add_node(std::move(r));
  for (auto [v, port] : srcs) g.add_input(ret, v, port);
  for (auto v : tgts) g.add_control(v, ret);
}

}  // namespace gpass
