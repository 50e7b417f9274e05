// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file node.hpp
/// `gpass::node`: the default node type, and the `node_like` concept user node types model.

#include <concepts>
#include <string>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/type.hpp>

namespace gpass {

/// The default node: a named operation with attributes, a device, and one type per output port.
///
/// The number of output ports is `outputs.size()`; an output's type is `type{}` (unknown)
/// until inference fills it in. Input ports live in the graph (they are edges).
/// \code
///   gpass::node n{.name = "add", .op = "Add"};
///   n.outputs.resize(1);
/// \endcode
struct node {
  std::string name;               ///< unique within its graph
  std::string op;                 ///< op name, e.g. "Add", "while"
  std::string domain;             ///< op domain; empty for the default one (ONNX ai.onnx, TensorFlow, gpass core)
  attribute_map attrs;            ///< attributes, ordered by name
  std::string device;             ///< requested or assigned device, empty when none
  std::vector<gpass::type> outputs = std::vector<gpass::type>(1);  ///< one entry per output port

  friend bool operator==(const node&, const node&) = default;
};

/// What gpass requires of a node type: the members of `gpass::node`. User types usually
/// derive from `gpass::node` to add fields of their own.
///
/// Minimal definition: `name`, `op`, `domain`, `device` (`std::string`), `attrs`
/// (`gpass::attribute_map`), `outputs` (a `std::vector<gpass::type>`, one per output port),
/// default-constructible and copyable.
template <class N>
concept node_like = std::semiregular<N> && requires(N n) {
  { n.name } -> std::convertible_to<std::string>;
  { n.op } -> std::convertible_to<std::string>;
  { n.domain } -> std::convertible_to<std::string>;
  { n.device } -> std::convertible_to<std::string>;
  { n.attrs } -> std::convertible_to<attribute_map>;
  { n.outputs } -> std::convertible_to<std::vector<gpass::type>>;
};

}  // namespace gpass
