// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file text_concept.hpp
/// Private: the graphs the text IR can print and parse.

#include <concepts>

#include <gpass/core/attribute.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node.hpp>

namespace gpass::detail::text {

/// A `gpass::graph` whose node type is `node_like` and whose graph attributes are a
/// `gpass::attribute_map`.
template <class G>
concept text_graph = graph_type<G> && node_like<typename G::node_type> &&
                     std::same_as<typename G::attrs_type, attribute_map>;

}  // namespace gpass::detail::text
