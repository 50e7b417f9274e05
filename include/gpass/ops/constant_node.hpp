// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file constant_node.hpp
/// Recognising constant nodes, for every layer that treats them apart (the constant passes,
/// the executor's plan and batch-split proof, session partitioning).

#include <string_view>

#include <gpass/core/attribute.hpp>
#include <gpass/core/tensor.hpp>

namespace gpass::detail {

/// True for a constant node: TensorFlow `Const` (domain "tf", or the default domain as in
/// hand-written graphs) or ONNX `Constant`, with a tensor `value` attribute.
template <class Node>
bool is_constant_node(const Node& n) {
  // string_view comparisons: the sizes first, no strlen (this runs for every node of every pass)
  const std::string_view op = n.op, domain = n.domain;
  if (!(op == "Const" && (domain.empty() || domain == "tf")) && !(op == "Constant" && domain.empty())) return false;
  auto it = n.attrs.find("value");
  return it != n.attrs.end() && it->second.template is<tensor>();
}

/// The `value` of a constant node (see `is_constant_node`).
template <class Node>
const tensor& constant_value(const Node& n) {
  return n.attrs.find("value")->second.template as<tensor>();
}

/// The `value` of `n` when it is a constant node, else null.
template <class Node>
const tensor* constant_value_or_null(const Node& n) {
  return is_constant_node(n) ? &constant_value(n) : nullptr;
}

}  // namespace gpass::detail
