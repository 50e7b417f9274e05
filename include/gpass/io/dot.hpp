// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file dot.hpp
/// `gpass::write_dot` / `gpass::to_dot`: Graphviz DOT export of a graph and its function library.

#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/edge.hpp>
#include <gpass/graph/graph.hpp>

namespace gpass {

/// What `write_dot` / `to_dot` draw.
/// \code
///   gpass::dot_options o;
///   o.attributes = true;  // also list node attributes in the labels
///   std::string text = gpass::to_dot(g, o);
/// \endcode
struct dot_options {
  bool functions = true;    ///< draw the function library as clusters, with function references as dotted edges
  bool types = true;        ///< list output types in node labels (when at least one is known)
  bool attributes = false;  ///< list node attributes (and the device) in node labels
};

namespace detail {

/// Escapes `s` for a DOT double-quoted string: `"` and `\` are backslash-escaped, a newline
/// becomes `\n`, a carriage return `\r`; other control characters but tab become `\xHH` (readable,
/// and the escaping stays one to one, so distinct node names give distinct ids).
inline void dot_escape(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default:
        if ((u < 0x20 && ch != '\t') || u == 0x7f) {
          out += "\\x";
          out += hex[u >> 4];
          out += hex[u & 15];
        } else {
          out += ch;
        }
    }
  }
}

inline std::string dot_quote(std::string_view s) {
  std::string r = "\"";
  dot_escape(r, s);
  r += '"';
  return r;
}

inline std::string dot_double(double d) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
  if (ec != std::errc{}) return "?";
  std::string s(buf, p);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep floats visibly floats ("inf"/"nan" have an n)
  return s;
}

inline constexpr std::size_t dot_max_list = 8;     // list elements shown before "..."
inline constexpr std::size_t dot_max_string = 48;  // string characters shown before "..."

inline std::string dot_string_value(const std::string& s) {
  if (s.size() <= dot_max_string) return "'" + s + "'";
  return "'" + s.substr(0, dot_max_string) + "...' (" + std::to_string(s.size()) + " chars)";
}

template <class T>
inline constexpr bool dot_is_vector = false;
template <class T>
inline constexpr bool dot_is_vector<std::vector<T>> = true;

template <class T>
std::string dot_scalar(const T& v) {
  if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(v);
  else if constexpr (std::is_same_v<T, double>) return dot_double(v);
  else if constexpr (std::is_same_v<T, std::string>) return dot_string_value(v);
  else if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
  else if constexpr (std::is_same_v<T, dtype>) return std::string(to_string(v));
  else if constexpr (std::is_same_v<T, shape> || std::is_same_v<T, type>) return v.to_string();
  else if constexpr (std::is_same_v<T, tensor>) {
    if (v.empty()) return "tensor<>";
    return "tensor<" + std::string(to_string(v.element_type())) + v.shape().to_string() + ">";
  } else if constexpr (std::is_same_v<T, function_ref>) return "@" + v.name;
  else return "?";
}

/// A short, one-line text of an attribute value for labels (long lists and strings are cut).
inline std::string dot_attribute_value(const attribute& a) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (dot_is_vector<T>) {
          std::string s = "[";
          std::size_t i = 0;
          for (auto it = v.begin(); it != v.end(); ++it, ++i) {
            if (i == dot_max_list) {
              s += ", ... (" + std::to_string(v.size()) + " total)";
              break;
            }
            if (i) s += ", ";
            if constexpr (std::is_same_v<T, std::vector<bool>>) s += dot_scalar(static_cast<bool>(*it));
            else s += dot_scalar(*it);
          }
          return s + "]";
        } else {
          return dot_scalar(v);
        }
      },
      a.value());
}

template <class G>
class dot_writer {
  using node_id = typename G::node_id;
  using edge_id = typename G::edge_id;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  struct scope {
    const G* g;
    std::size_t parent;   // npos for the top graph
    std::string cluster;  // cluster id (empty for the top graph)
  };
  struct ref_edge {
    std::string from;     // node id
    const G* target;      // the referenced function, or nullptr when unresolved
    std::string missing;  // name, when unresolved
    std::string label;    // attribute name (and element index)
  };

 public:
  dot_writer(std::ostream& os, const dot_options& o) : os_(os), opt_(o) {}

  void run(const G& top) {
    std::string name = "gpass";
    if constexpr (std::same_as<typename G::attrs_type, attribute_map>) {
      auto it = top.attrs().find("name");
      if (it != top.attrs().end() && it->second.template is<std::string>() &&
          !it->second.template as<std::string>().empty())
        name = it->second.template as<std::string>();
    }
    os_ << "digraph " << dot_quote(name) << " {\n";
    os_ << "  compound=true;\n";
    os_ << "  node [shape=box, style=rounded];\n";
    scopes_.push_back({&top, npos, std::string()});
    index_.emplace(&top, 0);
    body(0, 1);

    if (opt_.functions) {
      // Depth-first over nested libraries with an explicit stack (no recursion): a cluster is
      // opened, its body written, its own functions nested inside, then it is closed.
      struct frame {
        std::size_t scope;
        typename G::function_library::const_iterator it, end;
      };
      std::vector<frame> stack;
      stack.push_back({0, top.functions().begin(), top.functions().end()});
      while (!stack.empty()) {
        frame& f = stack.back();
        const std::size_t depth = stack.size();
        if (f.it == f.end) {
          const std::size_t s = f.scope;
          stack.pop_back();
          if (s != 0) os_ << std::string(2 * (depth - 1), ' ') << "}\n";
          continue;
        }
        const auto& [fname, fn] = *f.it;
        ++f.it;
        if (!fn) continue;
        const std::size_t parent = f.scope;
        const std::size_t k = scopes_.size();
        std::string cluster = parent == 0 ? "cluster_" + fname : scopes_[parent].cluster + "/" + fname;
        if (!clusters_.insert(cluster).second) {  // a nested path equal to a name with '/': keep ids unique
          std::string base = cluster;
          for (std::size_t i = 1; !clusters_.insert(cluster = base + "~" + std::to_string(i)).second;) ++i;
        }
        scopes_.push_back({fn.get(), parent, cluster});
        index_.emplace(fn.get(), k);
        const std::string ind(2 * depth, ' ');
        os_ << ind << "subgraph " << dot_quote(cluster) << " {\n";
        os_ << ind << "  label=" << dot_quote("@" + fname) << ";\n";
        os_ << ind << "  style=rounded;\n";
        os_ << ind << "  " << dot_quote(anchor_id(k)) << " [shape=point, style=invis, label=\"\"];\n";
        body(k, depth + 1);
        stack.push_back({k, fn->functions().begin(), fn->functions().end()});
      }

      std::set<std::string> missing;
      for (const auto& r : refs_) {
        if (r.target) {
          const std::size_t k = index_.at(r.target);
          os_ << "  " << dot_quote(r.from) << " -> " << dot_quote(anchor_id(k)) << " [style=dotted, lhead="
              << dot_quote(scopes_[k].cluster) << ", label=" << dot_quote(r.label) << "];\n";
        } else {
          const std::string id = "missing/" + r.missing;
          if (missing.insert(r.missing).second)
            os_ << "  " << dot_quote(id) << " [label=" << dot_quote("@" + r.missing + "\n(missing)")
                << ", style=dashed, color=red];\n";
          os_ << "  " << dot_quote(r.from) << " -> " << dot_quote(id) << " [style=dotted, color=red, label="
              << dot_quote(r.label) << "];\n";
        }
      }
    }
    os_ << "}\n";
  }

 private:
  static std::string anchor_id(std::size_t k) { return "g" + std::to_string(k); }
  static std::string node_id_of(std::size_t k, const std::string& name) { return "g" + std::to_string(k) + "/" + name; }

  const G* resolve(std::size_t s, std::string_view name) const {
    for (std::size_t i = s; i != npos; i = scopes_[i].parent)
      if (const G* f = scopes_[i].g->find_function(name)) return f;
    return nullptr;
  }

  std::string label(const typename G::node_type& n) const {
    std::string l = n.name;
    l += '\n';
    l += n.domain.empty() ? n.op : n.domain + "::" + n.op;
    if (opt_.types && !n.outputs.empty()) {
      bool known = false;
      for (const auto& t : n.outputs) known = known || !t.is_unknown();
      if (known) {
        l += '\n';
        for (std::size_t i = 0; i < n.outputs.size(); ++i) {
          if (i) l += ", ";
          l += n.outputs[i].to_string();
        }
      }
    }
    if (opt_.attributes) {
      for (const auto& [key, a] : n.attrs) l += "\n" + key + "=" + dot_attribute_value(a);
      if (!n.device.empty()) l += "\ndevice=" + n.device;
    }
    return l;
  }

  void body(std::size_t k, std::size_t depth) {
    const G& g = *scopes_[k].g;
    const std::string ind(2 * depth, ' ');
    for (auto v : g.nodes()) {
      const auto& n = g[v];
      const std::string id = node_id_of(k, n.name);
      os_ << ind << dot_quote(id) << " [label=" << dot_quote(label(n)) << "];\n";
      if (opt_.functions) {
        for (const auto& [key, a] : n.attrs) {
          if (const auto* f = std::get_if<function_ref>(&a.value())) {
            add_ref(k, id, f->name, key);
          } else if (const auto* fs = std::get_if<std::vector<function_ref>>(&a.value())) {
            for (std::size_t i = 0; i < fs->size(); ++i)
              add_ref(k, id, (*fs)[i].name, key + "[" + std::to_string(i) + "]");
          }
        }
      }
    }
    // Edges grouped by consumer in node order: data inputs in port order, then control inputs
    // in edge order (bucketed by port: linear, and independent of the order ports were wired).
    std::vector<std::vector<edge_id>> by_port;
    std::vector<edge_id> control;
    for (auto v : g.nodes()) {
      by_port.clear();
      control.clear();
      for (auto e : g.in_edges(v)) {
        const auto& ed = g[e];
        if (ed.src_port == control_port || ed.dst_port < 0) {
          control.push_back(e);
          continue;
        }
        const auto p = static_cast<std::size_t>(ed.dst_port);
        if (p >= by_port.size()) by_port.resize(p + 1);
        by_port[p].push_back(e);
      }
      const std::string to = dot_quote(node_id_of(k, g[v].name));
      for (const auto& es : by_port)
        for (auto e : es) {
          const auto& ed = g[e];
          os_ << ind << dot_quote(node_id_of(k, g[g.source(e)].name)) << " -> " << to;
          if (ed.src_port != 0 || ed.dst_port != 0)
            os_ << " [label=" << dot_quote(std::to_string(ed.src_port) + "->" + std::to_string(ed.dst_port)) << "]";
          os_ << ";\n";
        }
      for (auto e : control)
        os_ << ind << dot_quote(node_id_of(k, g[g.source(e)].name)) << " -> " << to << " [style=dashed];\n";
    }
  }

  void add_ref(std::size_t k, const std::string& from, const std::string& fname, std::string label) {
    const G* target = resolve(k, fname);
    refs_.push_back({from, target, target ? std::string() : fname, std::move(label)});
  }

  std::ostream& os_;
  const dot_options& opt_;
  std::vector<scope> scopes_;
  std::unordered_map<const G*, std::size_t> index_;
  std::set<std::string> clusters_;
  std::vector<ref_edge> refs_;
};

}  // namespace detail

/// Function object: `write_dot(os, g[, options])` writes `g` as a Graphviz `digraph`.
///
/// - One DOT node per gpass node, id `"g0/<name>"` (`g<k>/` prefixes the nodes of the k-th
///   graph: 0 is `g`, functions are numbered depth first in name order, so ids never collide),
///   labelled with its name, its op (`domain::op` outside the default domain), its output types
///   when `types` and at least one is known, and `key=value` lines when `attributes`.
/// - Data edges `producer -> consumer`, labelled `src->dst` unless both ports are 0; they are
///   listed per consumer in node order, inputs in port order. Control edges are dashed.
/// - With `functions`, each function is a `subgraph "cluster_<name>"` (nested functions nest,
///   `cluster_<outer>/<inner>`), labelled `@<name>`, holding an invisible anchor node `"g<k>"`;
///   every `function_ref` attribute (and each element of a `funcs` list) is a dotted edge from
///   the node to that cluster (`lhead`, `compound=true`), labelled with the attribute name.
///   A reference to no function goes to a red `"missing/<name>"` node instead.
/// - Strings are quoted and escaped (`"`, `\`, newlines); output is deterministic.
///
/// Requirements: `G` is a `gpass::graph`. O(V+E) plus attributes; no recursion.
/// \code
///   std::ofstream f("g.dot");
///   gpass::write_dot(f, g);   // then: dot -Tsvg g.dot > g.svg
/// \endcode
struct write_dot_fn {
  template <graph_type G>
  void operator()(std::ostream& os, const G& g, const dot_options& options = {}) const {
    detail::dot_writer<G>(os, options).run(g);
  }
};
inline constexpr write_dot_fn write_dot{};

/// Function object: `to_dot(g[, options])` returns what `write_dot` writes, as a string.
/// \code
///   std::string text = gpass::to_dot(g, {.functions = false});
/// \endcode
struct to_dot_fn {
  template <graph_type G>
  std::string operator()(const G& g, const dot_options& options = {}) const {
    std::ostringstream os;
    write_dot(os, g, options);
    return std::move(os).str();
  }
};
inline constexpr to_dot_fn to_dot{};

}  // namespace gpass
