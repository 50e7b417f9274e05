// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file text_printer.hpp
/// `gpass::write_text` and `gpass::print_text`: print a graph as text IR (`.gir`).
/// The grammar is documented in `gpass/io/text.hpp`.

#include <cstddef>
#include <ostream>
#include <string>

#include <gpass/config.hpp>
#include <gpass/core/error.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/io/detail/text_concept.hpp>
#include <gpass/io/detail/text_format.hpp>

namespace gpass {

namespace detail::text {

template <class G>
void append_graph_body(std::string& out, const G& g, const text_print_options& o) {
  for (auto v : g.nodes()) {
    const auto& n = g[v];
    out += "  %";
    append_name(out, n.name);
    if (n.outputs.size() != 1) {
      out += ':';
      append_int(out, n.outputs.size());
    }
    out += " = ";
    if (!n.domain.empty()) {
      append_ident(out, n.domain);
      out += "::";
    }
    append_ident(out, n.op);
    out += '(';
    bool first = true;
    std::size_t ni = g.num_inputs(v);
    for (std::size_t k = 0; k < ni; ++k) {
      if (!first) out += ", ";
      first = false;
      auto in = g.input(v, static_cast<int>(k));
      if (in.empty) {
        out += '_';
        continue;
      }
      const auto& src = g[in.node];
      out += '%';
      append_name(out, src.name);
      if (in.port != 0 || src.outputs.size() != 1) {
        out += ':';
        append_int(out, in.port);
      }
    }
    for (auto e : g.in_edges(v)) {
      if (!g[e].is_control()) continue;
      if (!first) out += ", ";
      first = false;
      out += "^%";
      append_name(out, g[g.source(e)].name);
    }
    out += ')';
    append_attribute_map(out, n.attrs, o);
    if (!n.device.empty()) {
      out += " on ";
      append_quoted(out, n.device);
    }
    bool known = false;
    for (const auto& t : n.outputs)
      if (!t.is_unknown()) known = true;
    if (known) {
      out += " -> (";
      for (std::size_t i = 0; i < n.outputs.size(); ++i) {
        if (i) out += ", ";
        append_type(out, n.outputs[i]);
      }
      out += ')';
    }
    out += '\n';
  }
}

template <class G>
void append_graph(std::string& out, const G& g, const text_print_options& o) {
  out += "graph";
  append_attribute_map(out, g.attrs(), o);
  out += " {\n";
  append_graph_body(out, g, o);
  out += "}\n";
  for (const auto& [name, f] : g.functions()) {
    if (!f->functions().empty()) {
      throw error("function '" + name + "' has a function library of its own (first: '" +
                      f->functions().begin()->first +
                      "'); the text IR has one flat namespace of functions: move them to the top graph");
    }
    out += "\nfunc @";
    append_name(out, name);
    append_attribute_map(out, f->attrs(), o);
    out += " {\n";
    append_graph_body(out, *f, o);
    out += "}\n";
  }
}

}  // namespace detail::text

/// Prints `g` as text IR: the graph (attributes, then one line per node in insertion
/// order), then each function of `g.functions()` in name order. Parsing the result with
/// `parse_text` gives back an equal graph, and printing that gives the same bytes.
///
/// Requirements: `G` is a `gpass::graph` with `node_like` nodes and `attribute_map` graph
/// attributes. Not printed: typed graph attributes (`attr_key`), extra members of user
/// node types, serial numbers. With `o.elide_elements_over`, large tensors print as
/// `tensor<f32[64,3,7,7]> __elided__`, which does not parse back. Throws `gpass::error` when a function has a function
/// library of its own (the format has one flat namespace of functions).
/// \code
///   gpass::write_text(std::cout, g);
/// \endcode
#if !GPASS_HEADER_ONLY
namespace detail::text {
// Printing the default graph type is instantiated once, by the unit io/src/text.cpp.
extern template void append_graph<graph<>>(std::string& out, const graph<>& g, const text_print_options& o);
}  // namespace detail::text
#endif

template <class G>
void write_text(std::ostream& os, const G& g, const text_print_options& o = {}) {
  static_assert(detail::text::text_graph<G>,
                "gpass::write_text: G must be a gpass::graph with node_like nodes and attribute_map attributes");
  std::string out;
  detail::text::append_graph(out, g, o);
  os.write(out.data(), static_cast<std::streamsize>(out.size()));
}

/// `g` printed as text IR (see `write_text`).
/// \code
///   std::string s = gpass::print_text(g);
///   assert(gpass::print_text(gpass::parse_text(s)) == s);
/// \endcode
template <class G>
std::string print_text(const G& g, const text_print_options& o = {}) {
  static_assert(detail::text::text_graph<G>,
                "gpass::print_text: G must be a gpass::graph with node_like nodes and attribute_map attributes");
  std::string out;
  detail::text::append_graph(out, g, o);
  return out;
}

}  // namespace gpass
