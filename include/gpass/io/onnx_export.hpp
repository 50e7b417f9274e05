// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file onnx_export.hpp
/// `gpass::export_onnx` / `gpass::write_onnx_file`: gpass graphs to ONNX models.
///
/// Needs ONNX and protobuf: link the CMake target `gpass::onnx` (compile definitions
/// `ONNX_ML=1 ONNX_NAMESPACE=onnx`; libraries `onnx onnx_proto protobuf`). Never included by
/// `gpass/all.hpp`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/io/detail/onnx_dtype.hpp>
#include <gpass/io/detail/onnx_names.hpp>
#include <gpass/io/detail/onnx_proto.hpp>
#include <gpass/io/detail/onnx_tensor.hpp>
#include <gpass/io/detail/onnx_type.hpp>

namespace gpass {

namespace detail::onnx_io {

/// gpass ops in the default domain that ONNX has no op for (lower them first).
inline bool is_gpass_only_op(std::string_view op) {
  static constexpr std::string_view ops[] = {"get_tuple", "make_tuple", "while", "if",   "get_global",
                                             "set_global", "retval",    "send",  "recv"};
  return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

/// The exporter: one per `export_onnx` call.
template <class G>
class exporter {
 public:
  using node_id = typename G::node_id;

  explicit exporter(const G& top) : top_(top) {}

  onnx::ModelProto export_model() {
    onnx::ModelProto m;
    const auto& a = top_.attrs();
    auto str = [&](std::string_view k) -> const std::string* {
      auto it = a.find(k);
      return it != a.end() && it->second.template is<std::string>() ? &it->second.template as<std::string>() : nullptr;
    };
    auto num = [&](std::string_view k) -> std::optional<std::int64_t> {
      auto it = a.find(k);
      if (it != a.end() && it->second.template is<std::int64_t>()) return it->second.template as<std::int64_t>();
      return std::nullopt;
    };
    if (auto* f = str("frontend"); f && *f != "onnx")
      throw error("the graph comes from the '" + *f + "' frontend (graph attribute frontend); its ops are not ONNX ops");
    ir_version_ = num("ir_version").value_or(default_ir_version);
    m.set_ir_version(ir_version_);
    if (auto* s = str("producer_name")) m.set_producer_name(*s);
    if (auto* s = str("producer_version")) m.set_producer_version(*s);
    if (auto* s = str("domain")) m.set_domain(*s);
    if (auto v = num("model_version")) m.set_model_version(*v);
    if (auto* s = str("doc_string")) m.set_doc_string(*s);
    std::set<std::string> imported;
    if (auto it = a.find("opset_import"); it != a.end() && it->second.template is<std::vector<std::string>>()) {
      for (const auto& s : it->second.template as<std::vector<std::string>>()) {
        auto colon = s.rfind(':');
        std::int64_t version = 0;
        bool ok = colon != std::string::npos && colon + 1 < s.size();
        if (ok) {
          try {
            std::size_t used = 0;
            version = std::stoll(s.substr(colon + 1), &used);
            ok = used == s.size() - colon - 1;
          } catch (...) {
            ok = false;
          }
        }
        if (!ok) throw error("graph attribute opset_import: '" + s + "' is not 'domain:version'");
        auto* o = m.add_opset_import();
        o->set_domain(s.substr(0, colon));
        o->set_version(version);
        imported.insert(o->domain() == "ai.onnx" ? std::string() : o->domain());
      }
    } else {
      auto* o = m.add_opset_import();
      o->set_domain("");
      o->set_version(default_opset);
      imported.insert("");
    }
    auto keys = a.find("metadata_keys");
    auto values = a.find("metadata_values");
    if (keys != a.end() && values != a.end()) {
      const auto& k = keys->second.template as<std::vector<std::string>>();
      const auto& v = values->second.template as<std::vector<std::string>>();
      if (k.size() != v.size()) throw error("graph attributes metadata_keys and metadata_values differ in length");
      for (std::size_t i = 0; i < k.size(); ++i) {
        auto* p = m.add_metadata_props();
        p->set_key(k[i]);
        p->set_value(v[i]);
      }
    }
    export_graph(top_, *m.mutable_graph(), {}, nullptr, 0, true, "main");
    // every domain the nodes use needs an opset import
    for (const auto& d : domains_)
      if (!imported.contains(d)) {
        auto* o = m.add_opset_import();
        o->set_domain(d);
        o->set_version(d.empty() ? default_opset : 1);
      }
    // the functions `call` nodes call, with the model's opset imports
    for (auto& fp : functions_) {
      *fp.mutable_opset_import() = m.opset_import();
      *m.add_functions() = std::move(fp);
    }
    return m;
  }

 private:
  /// Value names of one graph being exported, and of the graphs around it (ONNX forbids a
  /// subgraph to reuse a name of an enclosing graph).
  struct scope {
    const scope* parent = nullptr;
    std::unordered_set<std::string> names;
    bool taken(const std::string& s) const {
      for (const scope* p = this; p; p = p->parent)
        if (p->names.contains(s)) return true;
      return false;
    }
    /// Takes `base`, or `base_k` with the smallest free k (a counter per base keeps repeated
    /// collisions linear: names are only ever added).
    std::string claim(const std::string& base) {
      std::string s = base;
      if (taken(s)) {
        auto& k = next[base];
        do s = base + "_" + std::to_string(++k);
        while (taken(s));
      }
      names.insert(s);
      return s;
    }
    std::unordered_map<std::string, std::uint64_t> next;
  };

  static const std::vector<std::string>* strings_attr(const attribute_map& attrs, std::string_view name) {
    auto it = attrs.find(name);
    if (it == attrs.end() || !it->second.template is<std::vector<std::string>>()) return nullptr;
    return &it->second.template as<std::vector<std::string>>();
  }

  /// The ONNX type written for output `k` of `v`: the kept exact type (`_onnx_types`) while
  /// it agrees with the gpass type, else the gpass type (empty when ONNX cannot say it).
  static onnx::TypeProto port_type(const G& g, node_id v, std::size_t k) {
    const auto& n = g[v];
    const type& t = n.outputs[k];
    if (auto* texts = strings_attr(n.attrs, attr_types); texts && k < texts->size() && !(*texts)[k].empty())
      if (auto tp = parse_type_proto_text((*texts)[k]); tp && type_from_onnx(*tp) == t) return *tp;
    onnx::TypeProto r;
    if (!type_to_onnx(t, r)) r.Clear();
    return r;
  }

  static void write_value_info(onnx::ValueInfoProto& vi, const std::string& name, const onnx::TypeProto& t) {
    vi.set_name(name);
    if (!type_proto_is_empty(t)) *vi.mutable_type() = t;
  }

  bool is_initializer(const G& g, node_id v) const {
    const auto& n = g[v];
    if (ir_version_ < 4 || !n.domain.empty() || n.op != "Constant" || g.num_inputs(v) != 0 || n.outputs.size() != 1)
      return false;
    bool value = false;
    for (const auto& [k, a] : n.attrs) {
      if (k == attr_node && a.template is<bool>() && a.template as<bool>()) return false;
      if (is_reserved_attribute(k) || is_analysis_attribute(k)) continue;
      if (k != "value" || !a.template is<tensor>()) return false;
      value = true;
    }
    return value;
  }

  /// Writes one attribute; function references become subgraphs.
  void write_attribute(const std::string& name, const attribute& a, onnx::AttributeProto& out, const G& g,
                       node_id v, const std::vector<std::string>& captures, const scope& sc, int depth) {
    using A = onnx::AttributeProto;
    out.set_name(name);
    auto fail = [&](const std::string& why) {
      throw_node_error("attribute '" + name + "': " + why, g[v].name, g[v].op);
    };
    auto subgraph = [&](const function_ref& f, onnx::GraphProto& gp) {
      const G* fn = top_.find_function(f.name);
      if (!fn) fail("function '" + f.name + "' is not in the graph's function library");
      export_graph(*fn, gp, captures, &sc, depth + 1, false, f.name);
    };
    auto dtype_number = [&](dtype d) -> std::int64_t {
      auto e = dtype_to_onnx(d);
      if (!e) fail("dtype " + std::string(to_string(d)) + " has no ONNX form");
      return *e;
    };
    auto type_proto = [&](const type& t, onnx::TypeProto& tp) {
      if (!type_to_onnx(t, tp)) fail("type " + t.to_string() + " has no ONNX form");
    };
    auto shape_ints = [&](const shape& s) {
      if (!s.is_fully_known()) fail("shape " + s.to_string() + " is not fully known");
      return s.sizes();
    };
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::int64_t>) {
            out.set_type(A::INT);
            out.set_i(x);
          } else if constexpr (std::is_same_v<T, double>) {
            out.set_type(A::FLOAT);
            out.set_f(static_cast<float>(x));
          } else if constexpr (std::is_same_v<T, std::string>) {
            out.set_type(A::STRING);
            out.set_s(x);
          } else if constexpr (std::is_same_v<T, bool>) {
            out.set_type(A::INT);
            out.set_i(x ? 1 : 0);
          } else if constexpr (std::is_same_v<T, dtype>) {
            out.set_type(A::INT);
            out.set_i(dtype_number(x));
          } else if constexpr (std::is_same_v<T, shape>) {
            out.set_type(A::INTS);
            for (auto s : shape_ints(x)) out.add_ints(s);
          } else if constexpr (std::is_same_v<T, type>) {
            out.set_type(A::TYPE_PROTO);
            type_proto(x, *out.mutable_tp());
          } else if constexpr (std::is_same_v<T, tensor>) {
            out.set_type(A::TENSOR);
            try {
              tensor_to_onnx(x, *out.mutable_t());
            } catch (const error& e) {
              fail(e.message());
            }
          } else if constexpr (std::is_same_v<T, function_ref>) {
            out.set_type(A::GRAPH);
            subgraph(x, *out.mutable_g());
          } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
            out.set_type(A::INTS);
            for (auto i : x) out.add_ints(i);
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            out.set_type(A::FLOATS);
            for (auto f : x) out.add_floats(static_cast<float>(f));
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            out.set_type(A::STRINGS);
            for (const auto& s : x) out.add_strings(s);
          } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
            out.set_type(A::INTS);
            for (bool b : x) out.add_ints(b ? 1 : 0);
          } else if constexpr (std::is_same_v<T, std::vector<dtype>>) {
            out.set_type(A::INTS);
            for (auto d : x) out.add_ints(dtype_number(d));
          } else if constexpr (std::is_same_v<T, std::vector<shape>>) {
            fail("a list of shapes has no ONNX form");
          } else if constexpr (std::is_same_v<T, std::vector<type>>) {
            out.set_type(A::TYPE_PROTOS);
            for (const auto& t : x) type_proto(t, *out.add_type_protos());
          } else if constexpr (std::is_same_v<T, std::vector<tensor>>) {
            out.set_type(A::TENSORS);
            for (const auto& t : x) {
              try {
                tensor_to_onnx(t, *out.add_tensors());
              } catch (const error& e) {
                fail(e.message());
              }
            }
          } else if constexpr (std::is_same_v<T, std::vector<function_ref>>) {
            out.set_type(A::GRAPHS);
            for (const auto& f : x) subgraph(f, *out.add_graphs());
          } else {
            static_assert(sizeof(T) == 0, "attribute kind not handled");
          }
        },
        a.value());
  }

  /// Writes graph `g` (the main graph, or a function whose last `captures.size()`
  /// `function_entry` outputs are the enclosing graph's values of those names).
  void export_graph(const G& g, onnx::GraphProto& out, const std::vector<std::string>& captures, const scope* parent,
                    int depth, bool is_main, const std::string& fallback_name) {
    if (depth > 64) throw error("function references nested deeper than 64 levels (a function that calls itself?)");
    // classify
    std::optional<node_id> entry, ret;
    std::vector<node_id> args;
    node_map<G, char> kind(g, 0);  // 0 node, 1 entry, 2 return, 3 arg, 4 initializer
    for (auto v : g.nodes()) {
      const auto& n = g[v];
      if (n.domain.empty()) {
        if (n.op == "function_entry") {
          if (is_main) throw_node_error("function_entry in the main graph", n.name, n.op);
          if (entry) throw_node_error("a second function_entry in a function", n.name, n.op);
          entry = v;
          kind[v] = 1;
          continue;
        }
        if (n.op == "return") {
          if (ret) throw_node_error("a second return node in a graph", n.name, n.op);
          ret = v;
          kind[v] = 2;
          continue;
        }
        if (n.op == "arg") {
          if (!is_main) throw_node_error("arg node in a function (functions take inputs through function_entry)", n.name, n.op);
          if (n.outputs.size() != 1) throw_node_error("arg node without exactly one output", n.name, n.op);
          args.push_back(v);
          kind[v] = 3;
          continue;
        }
        if (is_gpass_only_op(n.op))
          throw_node_error("op '" + n.op + "' is a gpass op with no ONNX form (lower it first)", n.name, n.op);
      }
      if (is_initializer(g, v)) kind[v] = 4;
    }
    std::size_t formals = 0;
    if (!is_main) {
      std::size_t n_entry = entry ? g[*entry].outputs.size() : 0;
      if (n_entry < captures.size())
        throw error("function '" + fallback_name + "' has " + std::to_string(n_entry) + " arguments, fewer than the " +
                    std::to_string(captures.size()) + " captures of its caller");
      formals = n_entry - captures.size();
    }
    // ports used by some data edge (unused omitted outputs stay unnamed)
    node_map<G, std::vector<char>> used(g);
    for (auto v : g.nodes()) used[v].assign(g[v].outputs.size(), 0);
    for (auto e : g.edges()) {
      const auto& ed = g[e];
      if (ed.src_port != control_port && ed.src_port >= 0) {
        auto& u = used[g.source(e)];
        if (static_cast<std::size_t>(ed.src_port) < u.size()) u[static_cast<std::size_t>(ed.src_port)] = 1;
      }
    }
    std::stable_sort(args.begin(), args.end(), [&](node_id x, node_id y) {
      return get_or<std::int64_t>(g[x].attrs, "index", INT64_MAX) < get_or<std::int64_t>(g[y].attrs, "index", INT64_MAX);
    });

    // ---- value names ---------------------------------------------------------------
    scope sc;
    sc.parent = parent;
    node_map<G, std::vector<std::string>> vn(g);
    for (auto v : g.nodes()) vn[v].assign(g[v].outputs.size(), std::string());
    for (auto v : args) vn[v][0] = sc.claim(g[v].name);
    if (entry) {
      const auto* names = strings_attr(g[*entry].attrs, "names");
      for (std::size_t i = 0; i < formals; ++i)
        vn[*entry][i] = sc.claim(names && i < names->size() && !(*names)[i].empty() ? (*names)[i]
                                                                                   : derived_value_name(g[*entry].name, i));
      for (std::size_t j = 0; j < captures.size(); ++j) vn[*entry][formals + j] = captures[j];
    }
    // graph outputs name their producers; a producer that already has another name gets an Identity
    std::vector<std::string> out_names;
    std::vector<std::pair<std::size_t, std::string>> identities;  // output index, identity output name
    if (ret) {
      const auto* names = strings_attr(g[*ret].attrs, "names");
      for (std::size_t i = 0; i < g.num_inputs(*ret); ++i) {
        auto in = g.input(*ret, static_cast<int>(i));
        if (in.empty) throw_node_error("graph output " + std::to_string(i) + " is not connected", g[*ret].name, g[*ret].op);
        std::string want = names && i < names->size() ? (*names)[i] : std::string();
        auto& cur = vn[in.node][static_cast<std::size_t>(in.port)];
        if (want.empty() || cur == want) continue;
        if (cur.empty() && kind[in.node] != 1 && kind[in.node] != 3) cur = sc.claim(want);
        else identities.emplace_back(i, sc.claim(want));
      }
    }
    for (auto v : g.nodes()) {
      if (kind[v] == 1 || kind[v] == 3 || kind[v] == 2) continue;
      const auto* explicit_names = strings_attr(g[v].attrs, attr_outputs);
      if (explicit_names && explicit_names->size() != g[v].outputs.size()) explicit_names = nullptr;
      if (!explicit_names) continue;
      for (std::size_t k = 0; k < g[v].outputs.size(); ++k)
        if (vn[v][k].empty() && !(*explicit_names)[k].empty()) vn[v][k] = sc.claim((*explicit_names)[k]);
    }
    for (auto v : g.nodes()) {
      if (kind[v] == 1 || kind[v] == 3 || kind[v] == 2) continue;
      const auto* explicit_names = strings_attr(g[v].attrs, attr_outputs);
      if (explicit_names && explicit_names->size() != g[v].outputs.size()) explicit_names = nullptr;
      for (std::size_t k = 0; k < g[v].outputs.size(); ++k) {
        if (!vn[v][k].empty()) continue;
        if (explicit_names && (*explicit_names)[k].empty() && !used[v][k]) continue;  // omitted output
        vn[v][k] = sc.claim(derived_value_name(g[v].name, k));
      }
    }

    // ---- node order: insertion order when it is topological, else a topological order ----
    std::vector<node_id> order;
    {
      node_map<G, std::size_t> pos(g, 0);
      std::size_t i = 0;
      for (auto v : g.nodes()) pos[v] = i++;
      bool sorted = true;
      for (auto e : g.edges())
        if (pos[g.source(e)] >= pos[g.target(e)]) {
          sorted = false;
          break;
        }
      if (sorted)
        for (auto v : g.nodes()) order.push_back(v);
      else
        order = topological_order(g);
    }

    // ---- graph ---------------------------------------------------------------------
    const auto& ga = g.attrs();
    if (auto it = ga.find("name"); it != ga.end() && it->second.template is<std::string>())
      out.set_name(it->second.template as<std::string>());
    else
      out.set_name(fallback_name);
    if (auto it = ga.find("graph_doc_string"); it != ga.end() && it->second.template is<std::string>())
      out.set_doc_string(it->second.template as<std::string>());

    for (auto v : args) {
      write_value_info(*out.add_input(), vn[v][0], port_type(g, v, 0));
      if (auto it = g[v].attrs.find("default"); it != g[v].attrs.end()) {
        if (!it->second.template is<tensor>()) throw_node_error("attribute 'default' is not a tensor", g[v].name, g[v].op);
        auto* t = out.add_initializer();
        try {
          tensor_to_onnx(it->second.template as<tensor>(), *t);
        } catch (const error& e) {
          throw e.with_node(g[v].name, g[v].op);
        }
        t->set_name(vn[v][0]);
      }
    }
    if (entry)
      for (std::size_t i = 0; i < formals; ++i) write_value_info(*out.add_input(), vn[*entry][i], port_type(g, *entry, i));
    for (auto v : order) {
      if (kind[v] != 4) continue;
      auto* t = out.add_initializer();
      try {
        tensor_to_onnx(g[v].attrs.find("value")->second.template as<tensor>(), *t);
      } catch (const error& e) {
        throw e.with_node(g[v].name, g[v].op);
      }
      t->set_name(vn[v][0]);
    }
    for (auto v : order) {
      if (kind[v] != 0) continue;
      const auto& n = g[v];
      auto* np = out.add_node();
      np->set_name(n.name);
      const bool call = n.domain.empty() && n.op == "call";
      if (call) {
        // a call of a function: a node of the FunctionProto's (domain, name)
        auto fit = n.attrs.find("f");
        if (fit == n.attrs.end() || !fit->second.template is<function_ref>())
          throw_node_error("call has no function attribute 'f'", n.name, n.op);
        const std::string& fname = fit->second.template as<function_ref>().name;
        std::string d = get_or<std::string>(n.attrs, attr_function_domain, std::string());
        if (d.empty() || d == "ai.onnx") d = "gpass.functions";  // a model-local function needs its own domain
        np->set_op_type(fname);
        np->set_domain(d);
        domains_.insert(d);
        export_function(fname, d, g, v, depth);
      } else {
        domains_.insert(n.domain);
        np->set_op_type(n.op);
        if (!n.domain.empty()) np->set_domain(n.domain);
      }
      if (auto it = n.attrs.find(attr_doc); it != n.attrs.end() && it->second.template is<std::string>())
        np->set_doc_string(it->second.template as<std::string>());
      std::int64_t ncap = get_or<std::int64_t>(n.attrs, attr_captures, 0);
      if (ncap < 0 || static_cast<std::size_t>(ncap) > g.num_inputs(v))
        throw_node_error("_captures is " + std::to_string(ncap) + " but the node has " +
                             std::to_string(g.num_inputs(v)) + " inputs",
                         n.name, n.op);
      const std::size_t nin = g.num_inputs(v) - static_cast<std::size_t>(ncap);
      std::vector<std::string> caps;
      for (std::size_t k = 0; k < g.num_inputs(v); ++k) {
        auto in = g.input(v, static_cast<int>(k));
        std::string name = in.empty ? std::string() : vn[in.node][static_cast<std::size_t>(in.port)];
        if (k < nin) np->add_input(name);
        else if (name.empty())
          throw_node_error("captured input " + std::to_string(k) + " is not connected", n.name, n.op);
        else
          caps.push_back(name);
      }
      for (std::size_t k = 0; k < n.outputs.size(); ++k) np->add_output(vn[v][k]);
      for (const auto& [name, a] : n.attrs) {
        if (is_reserved_attribute(name) || is_analysis_attribute(name) || (call && name == "f")) continue;
        write_attribute(name, a, *np->add_attribute(), g, v, caps, sc, depth);
      }
    }
    if (ret) {
      std::size_t next_identity = 0;
      out_names.resize(g.num_inputs(*ret));
      for (std::size_t i = 0; i < g.num_inputs(*ret); ++i) {
        auto in = g.input(*ret, static_cast<int>(i));
        const std::string& src = vn[in.node][static_cast<std::size_t>(in.port)];
        if (next_identity < identities.size() && identities[next_identity].first == i) {
          auto* np = out.add_node();
          out_names[i] = identities[next_identity++].second;
          np->set_name(out_names[i]);
          np->set_op_type("Identity");
          np->add_input(src);
          np->add_output(out_names[i]);
          domains_.insert("");
        } else {
          out_names[i] = src;
        }
      }
      const auto* texts = strings_attr(g[*ret].attrs, attr_types);
      for (std::size_t i = 0; i < out_names.size(); ++i) {
        auto in = g.input(*ret, static_cast<int>(i));
        onnx::TypeProto t = port_type(g, in.node, static_cast<std::size_t>(in.port));
        if (texts && i < texts->size() && !(*texts)[i].empty())
          if (auto tp = parse_type_proto_text((*texts)[i])) t = *tp;
        write_value_info(*out.add_output(), out_names[i], t);
      }
    }
    // value_info: every other value whose type is known
    std::unordered_set<std::string> outputs(out_names.begin(), out_names.end());
    for (auto v : order) {
      if (kind[v] != 0) continue;
      for (std::size_t k = 0; k < g[v].outputs.size(); ++k) {
        if (vn[v][k].empty() || outputs.contains(vn[v][k])) continue;
        onnx::TypeProto t = port_type(g, v, k);
        if (type_proto_is_empty(t)) continue;
        write_value_info(*out.add_value_info(), vn[v][k], t);
      }
    }
  }

  /// Writes function `fname` (called by `call` nodes) once, as a FunctionProto of `domain`:
  /// its inputs, outputs and nodes, constants as Constant nodes.
  void export_function(const std::string& fname, const std::string& domain, const G& g, node_id call, int depth) {
    if (!exported_functions_.insert(fname).second) return;
    const G* fn = top_.find_function(fname);
    if (!fn) throw_node_error("call of function '" + fname + "', which the graph's function library does not have", g[call].name, g[call].op);
    onnx::GraphProto gp;
    export_graph(*fn, gp, {}, nullptr, depth + 1, false, fname);
    onnx::FunctionProto fp;
    fp.set_name(fname);
    fp.set_domain(domain);
    for (const auto& i : gp.input()) fp.add_input(i.name());
    for (const auto& o : gp.output()) fp.add_output(o.name());
    for (const auto& t : gp.initializer()) {
      auto* c = fp.add_node();
      c->set_op_type("Constant");
      c->add_output(t.name());
      auto* a = c->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      *a->mutable_t() = t;
      domains_.insert("");
    }
    for (const auto& n : gp.node()) *fp.add_node() = n;
    functions_.push_back(std::move(fp));
  }

  const G& top_;
  std::int64_t ir_version_ = default_ir_version;
  std::set<std::string> domains_;
  std::set<std::string> exported_functions_;
  std::vector<onnx::FunctionProto> functions_;
};

}  // namespace detail::onnx_io

/// Exports a gpass graph as an ONNX model: the reverse of `import_onnx` (see there for the
/// mapping), so that an imported model exports back to an equivalent model that passes
/// `onnx::checker::check_model`.
///
/// - Model fields come from the graph attributes `ir_version` (default 8), `opset_import`
///   (default `":17"`; a domain used by a node but not imported is added with version 1),
///   `producer_name`, `producer_version`, `domain`, `model_version`, `doc_string`,
///   `metadata_keys`/`metadata_values`, `name` (the graph name; default `main`, and the
///   function name for subgraphs), `graph_doc_string`. Other graph attributes are not written. A graph whose `frontend` attribute names
///   another frontend (`"tensorflow"`) is refused.
/// - `arg` nodes, ordered by `index`, are the graph inputs (named as the node); a `default`
///   is also written as an initializer. `Constant` nodes (default domain, no inputs, only a
///   tensor `value`, not marked `_onnx_node`) are written as initializers when `ir_version`
///   is at least 4, and as `Constant` nodes otherwise. The `return` node's inputs are the
///   graph outputs, named by its `names`.
/// - Other nodes are written in insertion order when that is topological, else in
///   `gpass::topological_order`; the ONNX node name is the gpass node name; `node.device` and
///   control edges are not written (control edges only order the nodes). Value names: `arg`
///   names, `function_entry` `names`, `return` `names`, then `_onnx_outputs`, then derived
///   names (port 0: the node name, port k: `name:k`); a name taken in the graph or an
///   enclosing one gets a `_1`, `_2`... suffix. Unused ports that `_onnx_outputs` leaves empty
///   stay omitted. A graph output whose producer already has another name (an input passed
///   through, one value output twice) is written through an `Identity` node.
/// - Attributes: int → INT, float → FLOAT, string → STRING, bool → INT 0/1, dtype → INT
///   (ONNX element type), shape → INTS (fully known only), type → TYPE_PROTO, tensor →
///   TENSOR (raw_data, string_data for strings), lists likewise, `function_ref` → GRAPH:
///   the function is written as the subgraph. The attributes the importer reserves
///   (`_onnx_*`, `_captures`) are not written.
/// - Types: the output types of the nodes become the types of the inputs, outputs and
///   `value_info` (every value with a known type); an exact ONNX type kept in `_onnx_types`
///   is used while it agrees with the gpass type. `list_type` is written as
///   `sequence(tensor)`, symbolic dims as dim_param (affine ones as their text), unknown and
///   tuple types are left out. The ONNX checker wants the main graph's inputs and outputs
///   typed (tensor types with a rank): run type inference before exporting a graph that
///   was not imported.
/// - Functions: a node with `_captures = k` passes its last k inputs to each function it
///   references as that function's last k `function_entry` outputs; in the subgraph those are
///   not inputs but the enclosing values' names (implicit captures again), so the result is
///   valid ONNX. Functions no node references are not written.
/// - Errors (`gpass::error`, naming the node): gpass ops with no ONNX form (`while`, `if`,
///   `get_tuple`, ...; lower them first), attribute values with no ONNX form, misplaced
///   `function_entry`/`arg`/`return` nodes, missing functions, cycles.
/// \code
///   onnx::ModelProto m = gpass::export_onnx(g);
///   onnx::checker::check_model(m);
/// \endcode
template <class G>
onnx::ModelProto export_onnx(const G& g) {
  static_assert(std::is_same_v<typename G::attrs_type, attribute_map>,
                "gpass::export_onnx needs a graph whose graph attributes are a gpass::attribute_map");
  return detail::onnx_io::exporter<G>(g).export_model();
}

/// How `write_onnx_file` stores large tensors.
struct onnx_write_options {
  /// Tensors of at least this many bytes go to an external data file beside the model
  /// (`data_location = EXTERNAL`, each 64-byte aligned so that `read_onnx_file` maps them);
  /// -1 (the default): only when the model would not fit one protobuf message (2 GiB), and
  /// then every tensor of 1 KiB or more.
  std::int64_t external_data_threshold = -1;
  /// The external data file, a name in the model's folder; empty: `<model file name>.data`.
  std::string external_data_file;
};

namespace detail::onnx_io {

/// Calls `f(onnx::TensorProto&)` for every tensor of `m`: initializers, tensor attributes of
/// the nodes of the graph, of its subgraphs and of the model's functions.
template <class F>
void for_each_model_tensor(onnx::ModelProto& m, F&& f) {
  std::vector<onnx::GraphProto*> graphs{m.mutable_graph()};
  std::vector<google::protobuf::RepeatedPtrField<onnx::NodeProto>*> node_lists;
  for (auto& fp : *m.mutable_functions()) node_lists.push_back(fp.mutable_node());
  while (!graphs.empty() || !node_lists.empty()) {
    if (!graphs.empty()) {
      onnx::GraphProto* g = graphs.back();
      graphs.pop_back();
      for (auto& t : *g->mutable_initializer()) f(t);
      node_lists.push_back(g->mutable_node());
      continue;
    }
    auto* nodes = node_lists.back();
    node_lists.pop_back();
    for (auto& n : *nodes)
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_t()) f(*a.mutable_t());
        for (auto& t : *a.mutable_tensors()) f(t);
        if (a.has_g()) graphs.push_back(a.mutable_g());
        for (auto& sg : *a.mutable_graphs()) graphs.push_back(&sg);
      }
  }
}

/// Moves the raw data of the tensors of `m` of at least `threshold` bytes into `file`
/// (`location` in the model): each 64-byte aligned, the tensor pointing at it.
inline void move_to_external_data(onnx::ModelProto& m, std::int64_t threshold, const std::filesystem::path& file,
                                  const std::string& location) {
  // written beside, then renamed over `file`: tensors still mapped from an earlier `file`
  // (read_onnx_file of the same model) keep their pages
  const std::filesystem::path tmp = file.string() + ".gpass-tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw error("cannot open the external data file '" + tmp.string() + "' for writing");
  std::uint64_t offset = 0;
  for_each_model_tensor(m, [&](onnx::TensorProto& t) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL || static_cast<std::int64_t>(t.raw_data().size()) < threshold) return;
    const std::uint64_t pad = (64 - offset % 64) % 64;
    static const char zeros[64] = {};
    out.write(zeros, static_cast<std::streamsize>(pad));
    offset += pad;
    const std::string& raw = t.raw_data();
    out.write(raw.data(), static_cast<std::streamsize>(raw.size()));
    auto add = [&](const char* k, const std::string& v) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", location);
    add("offset", std::to_string(offset));
    add("length", std::to_string(raw.size()));
    offset += raw.size();
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
  });
  out.close();
  if (!out) throw error("cannot write the external data file '" + tmp.string() + "'");
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw error("cannot rename '" + tmp.string() + "' to '" + file.string() + "': " + ec.message());
}

}  // namespace detail::onnx_io

/// Exports `g` (see `export_onnx`) and writes it as a binary `.onnx` file, large tensors in
/// an external data file beside it when `options` asks or the model would pass protobuf's
/// 2 GiB limit (`onnx_write_options`). Errors name the file.
/// \code
///   gpass::write_onnx_file(g, "optimized.onnx");
///   gpass::write_onnx_file(g, "big.onnx", {.external_data_threshold = 1024});  // big.onnx.data
/// \endcode
template <class G>
void write_onnx_file(const G& g, const std::filesystem::path& path, const onnx_write_options& options = {}) {
  error_context where;
  where.file = path.string();
  onnx::ModelProto m;
  try {
    m = export_onnx(g);
  } catch (const error& e) {
    error_context c = e.context();
    c.file = path.string();
    throw error(e.message(), c);
  }
  std::int64_t threshold = options.external_data_threshold;
  if (threshold < 0 && m.ByteSizeLong() >= (std::size_t{1} << 31) - (std::size_t{1} << 20)) threshold = 1024;
  if (threshold >= 0) {
    const std::string location =
        options.external_data_file.empty() ? path.filename().string() + ".data" : options.external_data_file;
    const std::filesystem::path rel(location);
    if (rel.empty() || rel.has_parent_path() || rel.is_absolute())
      throw error("external_data_file '" + location + "' must be a file name (it goes beside the model)", where);
    try {
      detail::onnx_io::move_to_external_data(m, threshold, path.parent_path() / rel, location);
    } catch (const error& e) {
      throw error(e.message(), where);
    }
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw error("cannot open the file for writing", where);
  if (!m.SerializeToOstream(&out)) throw error("cannot serialize the ONNX model (over 2 GiB?)", where);
  out.close();
  if (!out) throw error("cannot write the file", where);
}

}  // namespace gpass
