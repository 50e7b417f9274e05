// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fwd.hpp
/// Forward declarations of the main gpass types, for headers that only name them (in
/// function declarations, pointers, references). Include the defining header to use them.
///
/// `gpass::graph` is declared with its constraints (`node_like`, `edge_like`), which come
/// from `<gpass/graph/node.hpp>` and `<gpass/graph/edge.hpp>`; its default arguments
/// (`graph<>` = `graph<node, edge, attribute_map>`) are given by `<gpass/graph/graph.hpp>`.
/// \code
///   #include <gpass/fwd.hpp>
///   void optimize(gpass::graph<gpass::node, gpass::edge, gpass::attribute_map>& g, gpass::pass_context& ctx);
/// \endcode

#include <cstdint>

#include <gpass/graph/edge.hpp>
#include <gpass/graph/node.hpp>
#include <gpass/pass/facts.hpp>

namespace gpass {

// core/
enum class dtype : std::uint8_t;
class dim;
class shape;
struct tensor_type;
struct list_type;
struct tuple_type;
struct unknown_type;
struct type;
class tensor;
struct function_ref;
class attribute;
struct error_context;
class error;

// graph/
struct node;
struct edge;
template <class T>
struct attr_key;
template <node_like Node, edge_like Edge, class Attrs>
class graph;
template <class G, class T>
class node_map;
struct verify_options;

// ops/
struct attribute_spec;
struct op_traits;
struct op_schema;
class op_registry;
struct known_value;
struct port_info;
class infer_context;

// analysis/
class symbol_table;
template <class G>
class type_inference;

// pass/
enum class severity;
struct diagnostic;
class pass_context;
struct instrumentation_options;
template <class Initial, class... Ps>
class pipeline_t;
template <class G>
class any_pass;
template <class G>
class dynamic_pipeline;
template <class G>
class pass_registry;

}  // namespace gpass
