// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file text_parser.hpp
/// `gpass::parse_text` and `gpass::read_text_file`: read a graph from text IR (`.gir`).
/// The grammar is documented in `gpass/io/text.hpp`.

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/error.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/io/detail/file.hpp>
#include <gpass/io/detail/text_concept.hpp>
#include <gpass/io/detail/text_format.hpp>
#include <gpass/io/detail/text_lexer.hpp>
#include <gpass/io/detail/text_reader.hpp>

namespace gpass {

namespace detail::text {

/// Most output ports a node may declare (`%x:N`); bounds memory on hostile input.
inline constexpr int max_outputs = 1 << 16;

template <class G>
class graph_parser {
 public:
  graph_parser(std::string_view src, std::string source_name, G& out)
      : rd_(src, std::move(source_name)), result_(out), port_budget_((std::size_t{1} << 20) + src.size()) {}

  /// Parses into the graph given to the constructor (built in place: graphs are not moved).
  void run() {
    lexer& lx = rd_.lex();
    bool seen_graph = false;
    for (;;) {
      const token& t = lx.peek();
      if (t.kind == tok::end) {
        if (!seen_graph) lx.fail(t, "missing 'graph { ... }': the input has no top graph");
        return;
      }
      if (t.is_ident("graph")) {
        if (seen_graph)
          lx.fail(t, "a second 'graph': a file holds one top graph (write functions as 'func @name { ... }')");
        seen_graph = true;
        lx.take();
        parse_block(result_);
      } else if (t.is_ident("func")) {
        lx.take();
        token name = rd_.expect_kind(tok::func, "a function name like @body");
        std::string n(name.str());
        if (n.empty()) lx.fail(name, "empty function name");
        if (result_.functions().contains(n)) lx.fail(name, "duplicate function @" + quoted_name(n));
        G& f = result_.add_function(std::move(n), G{});
        parse_block(f);
      } else {
        rd_.unexpected(t, "'graph' or 'func'");
      }
    }
  }

 private:
  enum class ref_kind : unsigned char { data, empty, control };
  struct ref {
    std::size_t name_begin = 0;  // the name is names_[name_begin, name_begin + name_size)
    std::size_t name_size = 0;
    int port = 0;
    int line = 0;
    int column = 0;
    ref_kind kind = ref_kind::data;
  };
  struct pending {
    typename G::node_id node;
    std::size_t begin, end;  // range in refs
  };

  std::string_view name_of(const ref& r) const { return std::string_view(names_).substr(r.name_begin, r.name_size); }
  void set_name(ref& r, std::string_view n) {
    r.name_begin = names_.size();
    r.name_size = n.size();
    names_ += n;
  }

  static std::string quoted_name(std::string_view n) {
    std::string s;
    append_name(s, n);
    return s;
  }

  void parse_block(G& g) {
    lexer& lx = rd_.lex();
    if (lx.peek().is('{')) {
      const token& n1 = lx.peek(1);
      bool attrs = n1.kind == tok::ident || n1.kind == tok::string || (n1.is('}') && lx.peek(2).is('{'));
      if (attrs) g.attrs() = rd_.parse_attribute_map();
    }
    rd_.expect('{');
    std::vector<pending> nodes;
    std::vector<ref> refs;
    names_.clear();
    for (;;) {
      const token& t = lx.peek();
      if (t.is('}')) {
        lx.take();
        break;
      }
      if (t.kind != tok::node) rd_.unexpected(t, "a node definition like '%x = Op(...)', or '}'");
      parse_node(g, nodes, refs);
    }
    connect(g, nodes, refs);
  }

  void parse_node(G& g, std::vector<pending>& nodes, std::vector<ref>& refs) {
    lexer& lx = rd_.lex();
    token nt = lx.take();
    typename G::node_type n{};
    n.name = std::string(nt.str());
    if (n.name.empty()) lx.fail(nt, "empty node name");
    int nout = -1;
    if (rd_.accept(':')) {
      token p = rd_.expect_kind(tok::number, "the number of outputs");
      nout = rd_.parse_small(p, "number of outputs", max_outputs);
    }
    rd_.expect('=');
    token o1 = lx.take();
    if (o1.kind != tok::ident && o1.kind != tok::string) rd_.unexpected(o1, "an op name");
    n.op = std::string(o1.str());
    if (lx.peek().kind == tok::dcolon) {
      lx.take();
      token o2 = lx.take();
      if (o2.kind != tok::ident && o2.kind != tok::string) rd_.unexpected(o2, "an op name after '::'");
      n.domain = std::move(n.op);
      n.op = std::string(o2.str());
    }
    rd_.expect('(');
    std::size_t begin = refs.size();
    if (!rd_.accept(')')) {
      for (;;) {
        parse_input(refs);
        if (rd_.accept(')')) break;
        if (!lx.peek().is(',')) rd_.unexpected(lx.peek(), "',' or ')'");
        lx.take();
      }
    }
    if (lx.peek().is('{')) n.attrs = rd_.parse_attribute_map();
    if (lx.peek().is_ident("on")) {
      lx.take();
      n.device = std::string(rd_.expect_kind(tok::string, "a device string like \"/device:CPU:0\"").str());
    }
    if (lx.peek().kind == tok::arrow) {
      token arrow = lx.take();
      rd_.expect('(');
      std::vector<type> types;
      if (!rd_.accept(')')) {
        for (;;) {
          if (types.size() >= static_cast<std::size_t>(max_outputs)) lx.fail(lx.peek(), "too many output types");
          types.push_back(rd_.parse_type());
          if (rd_.accept(')')) break;
          if (!lx.peek().is(',')) rd_.unexpected(lx.peek(), "',' or ')'");
          lx.take();
        }
      }
      if (nout >= 0 && static_cast<std::size_t>(nout) != types.size())
        lx.fail(arrow, "node %" + quoted_name(n.name) + " has " + std::to_string(nout) + " outputs but " +
                           std::to_string(types.size()) + " output types");
      n.outputs = std::move(types);
    } else {
      std::size_t count = nout < 0 ? 1 : static_cast<std::size_t>(nout);
      // ports declared by a count alone cost no input: bound their total (memory)
      if (count > port_budget_) lx.fail(nt, "too many output ports in total");
      port_budget_ -= count;
      n.outputs.assign(count, type{});
    }
    typename G::node_id v;
    try {
      v = g.add_node(std::move(n));  // checks for a duplicate name; rethrown with the position
    } catch (const error&) {
      if (g.find(nt.str())) lx.fail(nt, "duplicate node name %" + quoted_name(nt.str()));
      throw;
    }
    nodes.push_back({v, begin, refs.size()});
  }

  void parse_input(std::vector<ref>& refs) {
    lexer& lx = rd_.lex();
    const token& t = lx.peek();
    ref r;
    r.line = t.line;
    r.column = t.column;
    if (t.is('^')) {
      lx.take();
      token c = rd_.expect_kind(tok::node, "a node after '^' (a control input, like ^%x)");
      set_name(r, c.str());
      r.kind = ref_kind::control;
      r.line = c.line;
      r.column = c.column;
    } else if (t.is_ident("_")) {
      lx.take();
      r.kind = ref_kind::empty;
    } else if (t.kind == tok::node) {
      token c = lx.take();
      set_name(r, c.str());
      if (rd_.accept(':')) {
        token p = rd_.expect_kind(tok::number, "a port number");
        r.port = rd_.parse_small(p, "port", std::numeric_limits<int>::max());
      }
    } else {
      rd_.unexpected(t, "an input (%x, %x:1, _ or ^%x)");
    }
    refs.push_back(std::move(r));
  }

  void connect(G& g, const std::vector<pending>& nodes, const std::vector<ref>& refs) {
    lexer& lx = rd_.lex();
    for (const auto& p : nodes) {
      for (std::size_t i = p.begin; i < p.end; ++i) {
        const ref& r = refs[i];
        if (r.kind == ref_kind::empty) {
          g.add_empty_input(p.node);
          continue;
        }
        std::string_view name = name_of(r);
        auto src = g.find(name);
        if (!src) lx.fail(r.line, r.column, "unknown node %" + quoted_name(name));
        if (r.kind == ref_kind::control) {
          g.add_control(*src, p.node);
          continue;
        }
        std::size_t nout = g.num_outputs(*src);
        if (static_cast<std::size_t>(r.port) >= nout)
          lx.fail(r.line, r.column,
                  "bad port: %" + quoted_name(name) + ":" + std::to_string(r.port) + ", but node %" +
                      quoted_name(name) + " has " + std::to_string(nout) + " output" + (nout == 1 ? "" : "s"));
        g.add_input(p.node, *src, r.port);
      }
    }
  }

  reader rd_;
  G& result_;
  std::string names_;  // the names of the inputs of the current block, back to back
  std::size_t port_budget_;  // output ports that may still be declared by a count alone
};

}  // namespace detail::text

namespace detail::text {
/// Parses `text` into the empty graph `g` (`parse_text`'s work; not inline, so that the
/// separate-compilation mode instantiates it for `graph<>` once, in io/src/text.cpp).
template <class G>
void parse_into(G& g, std::string_view text, std::string_view source_name) {
  graph_parser<G>(text, std::string(source_name), g).run();
}
#if !GPASS_HEADER_ONLY
extern template void parse_into<graph<>>(graph<>& g, std::string_view text, std::string_view source_name);
#endif
}  // namespace detail::text

/// Parses text IR into a graph of type `G` (default `gpass::graph<>`). Node order, ports,
/// edges, control edges, attributes, devices, output types, graph attributes and functions
/// are exactly those printed by `print_text`; inputs may name nodes defined later (cycles).
///
/// Throws `gpass::error` on any malformed input, with `context().file` = `source_name` and
/// 1-based `line`/`column`; it never crashes or hangs (tuple types nest at most 64 deep, a
/// node has at most 65536 outputs, and outputs declared by a count alone, `%x:N` without
/// `->`, total at most 2^20 plus the input size). Linear in the input size.
/// \code
///   auto g = gpass::parse_text("graph {\n  %x = Placeholder() -> (f32[2])\n  %r:0 = return(%x)\n}\n");
/// \endcode
template <class G = graph<>>
G parse_text(std::string_view text, std::string_view source_name = "<input>") {
  static_assert(detail::text::text_graph<G>,
                "gpass::parse_text: G must be a gpass::graph with node_like nodes and attribute_map attributes");
  G g;
  detail::text::parse_into(g, text, source_name);
  return g;
}

/// Reads and parses a `.gir` file (see `parse_text`); errors name the file.
/// \code
///   auto g = gpass::read_text_file("model.gir");
/// \endcode
template <class G = graph<>>
G read_text_file(const std::filesystem::path& path) {
  return parse_text<G>(detail::read_model_file(path, "text IR"), path.string());
}

}  // namespace gpass
