// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file onnx_names.hpp
/// Private: the names the ONNX importer and exporter agree on (reserved attributes, graph
/// attributes, derived value names).

#include <cstddef>
#include <string>
#include <string_view>

namespace gpass::detail::onnx_io {

// Node attributes the importer adds (never written to ONNX as attributes).
inline constexpr std::string_view attr_outputs = "_onnx_outputs";  ///< strings: ONNX output value names
inline constexpr std::string_view attr_doc = "_onnx_doc";          ///< string: the node's doc_string
inline constexpr std::string_view attr_node = "_onnx_node";        ///< bool: a Constant that was an ONNX node
inline constexpr std::string_view attr_types = "_onnx_types";      ///< strings: exact ONNX types (text) per port
inline constexpr std::string_view attr_captures = "_captures";     ///< int: trailing inputs that are captures
/// string: the ONNX domain of a model-local function a `call` node calls
inline constexpr std::string_view attr_function_domain = "_onnx_function_domain";

/// True for attribute names the importer reserves for itself.
constexpr bool is_reserved_attribute(std::string_view name) noexcept {
  return name.starts_with("_onnx_") || name == attr_captures;
}

/// True for attributes that gpass analyses record on nodes (`_value`, `_incomplete_value`,
/// with an optional `:port` suffix, written by type inference): facts about the graph, not
/// op attributes, so they are never exported.
constexpr bool is_analysis_attribute(std::string_view name) noexcept {
  for (std::string_view base : {std::string_view("_value"), std::string_view("_incomplete_value")})
    if (name.starts_with(base) && (name.size() == base.size() || name[base.size()] == ':')) return true;
  return false;
}

/// The value name the exporter derives for output `port` of a node called `node`
/// (when the node has no `_onnx_outputs`): the node name for port 0, `node:port` otherwise.
inline std::string derived_value_name(std::string_view node, std::size_t port) {
  std::string s(node);
  if (port != 0) s += ":" + std::to_string(port);
  return s;
}

/// Default opset and IR version written when a graph does not say (ONNX 1.12).
inline constexpr int default_opset = 17;
inline constexpr int default_ir_version = 8;

}  // namespace gpass::detail::onnx_io
