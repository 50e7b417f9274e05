// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file onnx_import.hpp
/// `gpass::import_onnx` / `gpass::read_onnx_file`: ONNX models (`onnx::ModelProto`, `.onnx`
/// files) to gpass graphs, and `gpass::onnx_import_options`.
///
/// Needs ONNX and protobuf: link the CMake target `gpass::onnx` (compile definitions
/// `ONNX_ML=1 ONNX_NAMESPACE=onnx`; libraries `onnx onnx_proto protobuf`). Never included by
/// `gpass/all.hpp`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/io/detail/file.hpp>
#include <gpass/io/detail/onnx_dtype.hpp>
#include <gpass/io/detail/onnx_names.hpp>
#include <gpass/io/detail/onnx_proto.hpp>
#include <gpass/io/detail/onnx_tensor.hpp>
#include <gpass/io/detail/onnx_type.hpp>
#include <gpass/ops/onnx/versions.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/ops/schema.hpp>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

namespace gpass {

/// Options of `import_onnx` and `read_onnx_file`.
/// \code
///   gpass::onnx_import_options o;
///   o.check_model = true;                 // run onnx::checker::check_model first
///   auto g = gpass::read_onnx_file("model.onnx", o);
/// \endcode
struct onnx_import_options {
  /// Initializers of the main graph that are not graph inputs become `Constant` nodes (true,
  /// the default), or graph inputs with a default value, i.e. `arg` nodes with a `default`
  /// attribute and an `index` after the declared inputs (false: every weight becomes an
  /// overridable parameter, and the exported model lists them as inputs). Initializers of
  /// subgraphs always become `Constant` nodes.
  bool initializers_as_constants = true;
  /// Folder that holds the external data files of tensors (`data_location: EXTERNAL`).
  /// Empty: `read_onnx_file` uses the model's folder; `import_onnx` then refuses external data.
  /// Locations must be relative paths that stay inside this folder.
  std::filesystem::path external_data_dir;
  /// Run `onnx::checker::check_model` on the model first; its complaint becomes a `gpass::error`.
  bool check_model = false;
  /// Run ONNX shape inference first, so that `value_info` (and so the gpass output types)
  /// holds every type ONNX can infer.
  bool infer_shapes = false;
  /// Deepest nesting of subgraphs accepted (subgraphs are imported recursively).
  int max_subgraph_depth = 64;
  /// Refuse what gpass would otherwise run with other semantics than the model's: a default
  /// domain opset newer than the newest ONNX release gpass knows, a node whose opset selects
  /// a version of its op (a signature change, see `onnx_op_version`) newer than gpass's schema
  /// ("unsupported op version"), and an attribute the op's version does not define.
  bool strict = true;
};

namespace detail::onnx_io {

/// The attribute type of `a`, inferring it from the field that is set when the (IR v1) model
/// left `type` out; UNDEFINED when nothing is set.
inline int attribute_kind(const onnx::AttributeProto& a) {
  using A = onnx::AttributeProto;
  if (a.type() != A::UNDEFINED) return a.type();
  if (a.has_f()) return A::FLOAT;
  if (a.has_i()) return A::INT;
  if (a.has_s()) return A::STRING;
  if (a.has_t()) return A::TENSOR;
  if (a.has_g()) return A::GRAPH;
  if (a.has_sparse_tensor()) return A::SPARSE_TENSOR;
  if (a.has_tp()) return A::TYPE_PROTO;
  if (a.floats_size()) return A::FLOATS;
  if (a.ints_size()) return A::INTS;
  if (a.strings_size()) return A::STRINGS;
  if (a.tensors_size()) return A::TENSORS;
  if (a.graphs_size()) return A::GRAPHS;
  if (a.sparse_tensors_size()) return A::SPARSE_TENSORS;
  if (a.type_protos_size()) return A::TYPE_PROTOS;
  return A::UNDEFINED;
}

/// The attributes of `n`, sorted by name (the order gpass keeps them in, so that captures are
/// numbered the same way on every import).
inline std::vector<const onnx::AttributeProto*> sorted_attributes(const onnx::NodeProto& n) {
  std::vector<const onnx::AttributeProto*> r;
  r.reserve(static_cast<std::size_t>(n.attribute_size()));
  for (const auto& a : n.attribute()) r.push_back(&a);
  std::stable_sort(r.begin(), r.end(), [](auto* a, auto* b) { return a->name() < b->name(); });
  return r;
}

/// The subgraphs held by attribute `a` (GRAPH or GRAPHS), in order.
inline std::vector<const onnx::GraphProto*> subgraphs_of(const onnx::AttributeProto& a) {
  std::vector<const onnx::GraphProto*> r;
  int k = attribute_kind(a);
  if (k == onnx::AttributeProto::GRAPH) r.push_back(&a.g());
  else if (k == onnx::AttributeProto::GRAPHS)
    for (const auto& g : a.graphs()) r.push_back(&g);
  return r;
}

/// A readable label for an ONNX node before it has a gpass name.
inline std::string node_label(const onnx::NodeProto& n, int index) {
  if (!n.name().empty()) return n.name();
  for (const auto& o : n.output())
    if (!o.empty()) return o;
  return "#" + std::to_string(index);
}

/// Throws `e` with node and op filled in (when not already set).
[[noreturn]] inline void rethrow_for_node(const error& e, const std::string& node, const std::string& op) {
  throw e.with_node(node, op);
}

/// The importer: one per `import_onnx` call.
template <class G>
class importer {
 public:
  using node_id = typename G::node_id;
  using node_type = typename G::node_type;

  importer(G& top, const onnx_import_options& o) : top_(top), opt_(o) {}

  void import_model(const onnx::ModelProto& m) {
    for (const auto& fp : m.functions()) {
      if (fp.name().empty()) throw error("a model-local function has no name");
      const std::string d = fp.domain() == "ai.onnx" ? std::string() : fp.domain();
      if (!local_functions_.emplace(function_key(d, fp.name(), string_field(fp, 13)), &fp).second)  // overload
        throw error("model-local function '" + fp.name() + "' of domain '" + fp.domain() + "' is defined twice");
    }
    if (m.training_info_size() != 0) throw error("training_info is not supported");
    if (!m.has_graph()) throw error("the model has no graph");
    auto& a = top_.attrs();
    a["frontend"] = std::string("onnx");
    a["ir_version"] = static_cast<std::int64_t>(m.ir_version());
    check_opset_imports(m.opset_import(), "the model");
    std::vector<std::string> opsets;
    for (const auto& o : m.opset_import()) opsets.push_back(o.domain() + ":" + std::to_string(o.version()));
    a["opset_import"] = std::move(opsets);
    for (const auto& o : m.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") onnx_opset_ = static_cast<int>(std::min<std::int64_t>(o.version(), 1 << 30));
    if (opt_.strict && onnx_opset_ > onnx_newest_known_opset)
      throw error("the model imports opset " + std::to_string(onnx_opset_) +
                  " of the ONNX default domain; the newest gpass knows is " + std::to_string(onnx_newest_known_opset) +
                  " (unsupported op version: its operators may have semantics gpass does not implement)");
    if (!m.producer_name().empty()) a["producer_name"] = m.producer_name();
    if (!m.producer_version().empty()) a["producer_version"] = m.producer_version();
    if (!m.domain().empty()) a["domain"] = m.domain();
    if (m.has_model_version()) a["model_version"] = static_cast<std::int64_t>(m.model_version());
    if (!m.doc_string().empty()) a["doc_string"] = m.doc_string();
    if (m.metadata_props_size() != 0) {
      std::vector<std::string> keys, values;
      for (const auto& p : m.metadata_props()) {
        keys.push_back(p.key());
        values.push_back(p.value());
      }
      a["metadata_keys"] = std::move(keys);
      a["metadata_values"] = std::move(values);
    }
    import_graph(m.graph(), top_, nullptr, nullptr, 0);
  }

 private:
  struct port {
    node_id node;
    int index;
  };
  int onnx_opset_ = 0;  // the model's default-domain opset (0: none imported)

  // ---- model-local functions -----------------------------------------------------------

  static std::string function_key(const std::string& domain, const std::string& name, const std::string& overload) {
    return domain + '\n' + name + '\n' + overload;
  }
  std::unordered_map<std::string, const onnx::FunctionProto*> local_functions_;  // key -> function
  external_files files_;  // external data files, mapped once
  std::unordered_map<std::string, std::string> instances_;  // function key + attribute values -> gpass function
  static constexpr std::size_t max_function_instances = 10000;
  std::unordered_set<std::string> importing_;               // function keys being imported (recursion)
  std::unordered_map<const onnx::FunctionProto*, std::vector<onnx::AttributeProto>> defaults_;  // attribute_proto

  /// Replaces the attributes of `n` (and of the nodes of its subgraphs) that refer to a
  /// function attribute (`ref_attr_name`) by the bound value, or drops them when unbound.
  static void bind_attributes(onnx::NodeProto& n, const std::map<std::string, const onnx::AttributeProto*>& bound,
                              const std::string& fname, int depth) {
    if (depth > 64) throw error("function '" + fname + "': subgraphs nested deeper than 64 levels");
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> out;
    for (auto& a : *n.mutable_attribute()) {
      if (!a.ref_attr_name().empty()) {
        auto it = bound.find(a.ref_attr_name());
        if (it == bound.end()) continue;  // not given and no default: the attribute is absent
        onnx::AttributeProto b = *it->second;
        if (a.type() != onnx::AttributeProto::UNDEFINED && b.type() != onnx::AttributeProto::UNDEFINED &&
            a.type() != b.type())
          throw error("node '" + n.name() + "' (op " + n.op_type() + ") of function '" + fname + "': attribute '" + a.name() +
                      "' refers to function attribute '" + a.ref_attr_name() + "', which has another type");
        b.set_name(a.name());
        b.clear_ref_attr_name();
        *out.Add() = std::move(b);
        continue;
      }
      if (a.has_g())
        for (auto& sn : *a.mutable_g()->mutable_node()) bind_attributes(sn, bound, fname, depth + 1);
      for (auto& sg : *a.mutable_graphs())
        for (auto& sn : *sg.mutable_node()) bind_attributes(sn, bound, fname, depth + 1);
      *out.Add() = std::move(a);
    }
    n.mutable_attribute()->Swap(&out);
  }

  /// The gpass function for a call `call` of model-local function `fp`: one per distinct set
  /// of attribute values (the call's, else the function's defaults), imported on first use
  /// with the references to the function's attributes replaced by those values.
  std::string instantiate(const onnx::FunctionProto& fp, const std::string& key, const onnx::NodeProto& call) {
    std::set<std::string> declared(fp.attribute().begin(), fp.attribute().end());
    std::map<std::string, const onnx::AttributeProto*> bound;
    // attribute_proto (field 11, onnx 1.13+): the attributes with default values
    std::vector<onnx::AttributeProto>& defaults = defaults_[&fp];
    if (defaults.empty())
      for (const auto& bytes : field_bytes(fp, 11))
        if (!defaults.emplace_back().ParseFromString(bytes))
          throw error("model-local function '" + fp.name() + "': an attribute default does not parse");
    for (const auto& a : defaults) {
      declared.insert(a.name());
      bound[a.name()] = &a;
    }
    for (const auto& a : call.attribute()) {
      if (!declared.contains(a.name()))
        throw error("attribute '" + a.name() + "' is not an attribute of model-local function '" + fp.name() + "'");
      if (!a.ref_attr_name().empty())
        throw error("attribute '" + a.name() + "' refers to a function attribute (ref_attr_name '" + a.ref_attr_name() +
                    "') outside a model-local function");
      bound[a.name()] = &a;
    }
    std::string instance = key;
    for (const auto& [name, a] : bound) instance += '\n' + name + '=' + a->SerializeAsString();
    if (importing_.contains(key))
      throw error("model-local function '" + fp.name() + "' calls itself (recursive functions are not supported)");
    if (auto it = instances_.find(instance); it != instances_.end()) return it->second;
    if (instances_.size() >= max_function_instances)
      throw error("model-local functions are instantiated for more than " + std::to_string(max_function_instances) +
                  " sets of attribute values (a model that grows exponentially?)");
    if (importing_.size() >= static_cast<std::size_t>(opt_.max_subgraph_depth))
      throw error("model-local function calls nest deeper than " + std::to_string(opt_.max_subgraph_depth) + " levels");
    check_opset_imports(fp.opset_import(), "model-local function '" + fp.name() + "'");
    for (const auto& o : fp.opset_import())
      if ((o.domain().empty() || o.domain() == "ai.onnx") && onnx_opset_ > 0 && o.version() != onnx_opset_)
        throw error("model-local function '" + fp.name() + "' imports opset " + std::to_string(o.version()) +
                    " of the default domain, the model " + std::to_string(onnx_opset_) +
                    " (gpass runs a model at one opset per domain)");
    onnx::GraphProto gp;
    gp.set_name(fp.name());
    for (const auto& i : fp.input()) gp.add_input()->set_name(i);
    for (const auto& o : fp.output()) gp.add_output()->set_name(o);
    for (const auto& bytes : field_bytes(fp, 12))  // value_info (onnx 1.15+)
      if (!gp.add_value_info()->ParseFromString(bytes))
        throw error("model-local function '" + fp.name() + "': a value_info does not parse");
    for (const auto& n : fp.node()) bind_attributes(*gp.add_node() = n, bound, fp.name(), 0);
    const std::string fname = fresh_function_name(fp.name());
    instances_.emplace(instance, fname);
    G& fg = top_.add_function(fname, G{});
    importing_.insert(key);
    const std::vector<std::string> no_captures;
    const std::vector<type> no_types;
    try {
      import_graph(gp, fg, &no_captures, &no_types, static_cast<int>(importing_.size()));
    } catch (const error& e) {
      throw error("in model-local function '" + fp.name() + "': " + e.message(), e.context());
    }
    importing_.erase(key);
    return fname;
  }

  /// One version per domain ("" and "ai.onnx" are one): a domain imported twice at two
  /// versions is ambiguous, an error naming both (the same version twice is accepted).
  template <class Opsets>
  static void check_opset_imports(const Opsets& opsets, const std::string& who) {
    std::map<std::string, std::int64_t> seen;
    for (const auto& o : opsets) {
      const std::string d = o.domain() == "ai.onnx" ? std::string() : o.domain();
      const auto [it, fresh] = seen.emplace(d, o.version());
      if (!fresh && it->second != o.version())
        throw error(who + " imports the domain '" + (d.empty() ? std::string("ai.onnx") : d) + "' twice, at opsets " +
                    std::to_string(it->second) + " and " + std::to_string(o.version()));
    }
  }

  struct frame {
    G& g;
    std::unordered_map<std::string, port> values;  // value name -> producer port
    std::unordered_set<std::string> typed;         // values whose type is set
  };

  // ---- free variables (implicit captures) of subgraphs -------------------------------

  /// The names a subgraph uses but does not define (its implicit captures, including those of
  /// its own subgraphs), in order of first use. Memoized.
  const std::vector<std::string>& free_vars(const onnx::GraphProto& gp, int depth) {
    if (auto it = free_memo_.find(&gp); it != free_memo_.end()) return it->second;
    if (depth > opt_.max_subgraph_depth)
      throw error("subgraphs nested deeper than " + std::to_string(opt_.max_subgraph_depth) + " levels");
    std::unordered_set<std::string> defined;
    for (const auto& i : gp.input()) defined.insert(i.name());
    for (const auto& i : gp.initializer()) defined.insert(i.name());
    for (const auto& i : gp.sparse_initializer()) defined.insert(i.values().name());
    for (const auto& n : gp.node())
      for (const auto& o : n.output())
        if (!o.empty()) defined.insert(o);
    std::vector<std::string> out;
    std::unordered_set<std::string> seen;
    auto use = [&](const std::string& name) {
      if (!name.empty() && !defined.contains(name) && seen.insert(name).second) out.push_back(name);
    };
    for (const auto& n : gp.node()) {
      for (const auto& i : n.input()) use(i);
      for (const auto* a : sorted_attributes(n))
        for (const auto* sub : subgraphs_of(*a))
          for (const auto& v : free_vars(*sub, depth + 1)) use(v);
    }
    for (const auto& o : gp.output()) use(o.name());
    return free_memo_.emplace(&gp, std::move(out)).first->second;
  }

  // ---- types -------------------------------------------------------------------------

  /// Sets `_onnx_types[k]` of node `v` (a strings attribute with one entry per output port).
  static void set_type_text(G& g, node_id v, std::size_t k, std::size_t ports, std::string text) {
    auto& attrs = g[v].attrs;
    auto it = attrs.find(attr_types);
    if (it == attrs.end()) it = attrs.emplace(std::string(attr_types), std::vector<std::string>(ports)).first;
    auto& list = std::get<std::vector<std::string>>(it->second.value());
    if (list.size() < ports) list.resize(ports);
    list[k] = std::move(text);
  }

  /// Gives output `k` of `v` the type `tp`; keeps the exact ONNX type in `_onnx_types` when
  /// gpass cannot say it exactly.
  static void apply_type(G& g, node_id v, int k, const onnx::TypeProto& tp) {
    g[v].outputs[static_cast<std::size_t>(k)] = type_from_onnx(tp);
    if (!type_round_trips(tp)) set_type_text(g, v, static_cast<std::size_t>(k), g[v].outputs.size(), proto_text(tp));
  }

  /// The ONNX type the exporter writes for output `k` of `v`.
  static onnx::TypeProto effective_type(const G& g, node_id v, int k) {
    const auto& n = g[v];
    if (auto it = n.attrs.find(attr_types); it != n.attrs.end()) {
      const auto& list = it->second.template as<std::vector<std::string>>();
      if (static_cast<std::size_t>(k) < list.size() && !list[static_cast<std::size_t>(k)].empty())
        if (auto tp = parse_type_proto_text(list[static_cast<std::size_t>(k)])) return *tp;
    }
    onnx::TypeProto r;
    if (!type_to_onnx(n.outputs[static_cast<std::size_t>(k)], r)) r.Clear();
    return r;
  }

  static bool has_type(const onnx::ValueInfoProto& vi) { return vi.has_type() && !type_proto_is_empty(vi.type()); }

  // ---- values ------------------------------------------------------------------------

  void define(frame& f, const std::string& name, node_id v, int k, const std::string& what) {
    if (!f.values.emplace(name, port{v, k}).second)
      rethrow_for_node(error("value '" + name + "' is defined twice (" + what + "); ONNX graphs are in SSA form"),
                       f.g[v].name, f.g[v].op);
  }

  /// `base`, or `base_k` with the smallest free k (as `graph::unique_name`; names are never
  /// freed during an import, so a counter per base keeps this linear overall).
  std::string fresh_name(const G& g, const std::string& base) {
    if (!g.find(base)) return base;
    auto& k = suffix_[{&g, base}];
    std::string s;
    do s = base + "_" + std::to_string(++k);
    while (g.find(s));
    return s;
  }
  /// A function name not used yet, derived from `base` (as `graph::unique_function_name`).
  std::string fresh_function_name(const std::string& base) {
    if (!top_.find_function(base)) return base;
    auto& k = suffix_[{nullptr, base}];
    std::string s;
    do s = base + "_" + std::to_string(++k);
    while (top_.find_function(s));
    return s;
  }

  /// The gpass name of an ONNX node: its ONNX name when not empty and free, else its first
  /// non-empty output name when free, else a fresh name derived from that.
  std::string pick_name(const G& g, const onnx::NodeProto& n) {
    if (!n.name().empty() && !g.find(n.name())) return n.name();
    std::string first;
    for (const auto& o : n.output())
      if (!o.empty()) {
        first = o;
        break;
      }
    if (!first.empty() && !g.find(first)) return first;
    return fresh_name(g, !first.empty() ? first : !n.name().empty() ? n.name() : n.op_type());
  }

  attribute convert_attribute(const onnx::AttributeProto& a, int kind) {
    using A = onnx::AttributeProto;
    const std::string what = "attribute '" + a.name() + "'";
    switch (kind) {
      case A::FLOAT: return static_cast<double>(a.f());
      case A::INT: return static_cast<std::int64_t>(a.i());
      case A::STRING: return a.s();
      case A::TENSOR: return tensor_from_onnx(a.t(), opt_.external_data_dir, &files_);
      case A::TYPE_PROTO: {
        if (!type_round_trips(a.tp()) || type_from_onnx(a.tp()).is_unknown())
          throw error(what + ": TYPE_PROTO '" + proto_text(a.tp()) + "' has no gpass form");
        return type_from_onnx(a.tp());
      }
      case A::FLOATS: return std::vector<double>(a.floats().begin(), a.floats().end());
      case A::INTS: return std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
      case A::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
      case A::TENSORS: {
        std::vector<tensor> v;
        for (const auto& t : a.tensors()) v.push_back(tensor_from_onnx(t, opt_.external_data_dir, &files_));
        return v;
      }
      case A::TYPE_PROTOS: {
        std::vector<type> v;
        for (const auto& t : a.type_protos()) {
          if (!type_round_trips(t) || type_from_onnx(t).is_unknown())
            throw error(what + ": TYPE_PROTO '" + proto_text(t) + "' has no gpass form");
          v.push_back(type_from_onnx(t));
        }
        return v;
      }
      case A::SPARSE_TENSOR:
      case A::SPARSE_TENSORS: throw error(what + ": sparse tensor attributes are not supported");
      case A::UNDEFINED: throw error(what + ": no value");
      default: throw error(what + ": unsupported attribute type " + std::to_string(kind));
    }
  }

  // ---- graphs ------------------------------------------------------------------------

  /// Imports `gp` into `g`: the main graph (`captures == nullptr`) or a function whose
  /// `function_entry` outputs are the formal inputs followed by `captures`.
  void import_graph(const onnx::GraphProto& gp, G& g, const std::vector<std::string>* captures,
                    const std::vector<type>* capture_types, int depth) {
    if (depth > opt_.max_subgraph_depth)
      throw error("subgraphs nested deeper than " + std::to_string(opt_.max_subgraph_depth) + " levels");
    const bool is_main = captures == nullptr;
    if (gp.quantization_annotation_size() != 0)
      throw error("graph '" + gp.name() + "': quantization_annotation is not supported");
    if (!gp.name().empty()) g.attrs()["name"] = gp.name();
    if (!gp.doc_string().empty()) g.attrs()["graph_doc_string"] = gp.doc_string();
    frame f{g, {}, {}};

    // initializers by name
    std::map<std::string, const onnx::TensorProto*, std::less<>> inits;
    for (const auto& t : gp.initializer()) {
      if (t.name().empty()) throw error("an initializer has no name");
      if (!inits.emplace(t.name(), &t).second)
        throw error("initializer '" + t.name() + "' is defined twice; ONNX graphs are in SSA form");
    }
    auto tensor_of = [&](const onnx::TensorProto& t, const std::string& node, const char* op) {
      try {
        return tensor_from_onnx(t, opt_.external_data_dir, &files_);
      } catch (const error& e) {
        rethrow_for_node(e, node, op);
      }
    };
    auto add_constant = [&](const std::string& name, tensor value) {
      if (f.values.contains(name)) throw error("value '" + name + "' is defined twice; ONNX graphs are in SSA form");
      node_type n;
      n.name = name;
      if (g.find(name)) {  // the name of a node that is not a value (function_entry)
        n.name = fresh_name(g, name);
        n.attrs[std::string(attr_outputs)] = std::vector<std::string>{name};
      }
      n.op = "Constant";
      tensor_type tt{value.element_type(), value.shape()};
      n.outputs.assign(1, type(tt));
      n.attrs["value"] = std::move(value);
      node_id v = g.add_node(std::move(n));
      define(f, name, v, 0, "initializer");
      f.typed.insert(name);
    };

    if (is_main) {
      // graph inputs -> arg nodes (an initializer of the same name is the default value)
      std::int64_t index = 0;
      for (const auto& in : gp.input()) {
        if (in.name().empty()) throw error("graph input " + std::to_string(index) + " has no name");
        node_type n;
        n.name = in.name();
        n.op = "arg";
        n.outputs.assign(1, type{});
        n.attrs["index"] = index;
        if (auto it = inits.find(in.name()); it != inits.end()) n.attrs["default"] = tensor_of(*it->second, in.name(), "arg");
        if (g.find(in.name()))
          throw error("graph input '" + in.name() + "' is listed twice; ONNX graphs are in SSA form");
        node_id v = g.add_node(std::move(n));
        define(f, in.name(), v, 0, "graph input");
        if (has_type(in)) {
          apply_type(g, v, 0, in.type());
          f.typed.insert(in.name());
        }
        ++index;
      }
      for (const auto& t : gp.initializer()) {
        if (f.values.contains(t.name())) continue;  // an input's default
        if (opt_.initializers_as_constants) {
          add_constant(t.name(), tensor_of(t, t.name(), "Constant"));
          continue;
        }
        node_type n;
        n.name = t.name();
        n.op = "arg";
        n.attrs["index"] = index++;
        tensor value = tensor_of(t, t.name(), "arg");
        n.outputs.assign(1, type(tensor_type{value.element_type(), value.shape()}));
        n.attrs["default"] = std::move(value);
        node_id v = g.add_node(std::move(n));
        define(f, t.name(), v, 0, "initializer");
        f.typed.insert(t.name());
      }
    } else {
      // formal inputs and captures -> the outputs of one function_entry node
      node_type e;
      e.name = fresh_name(g, "function_entry");
      e.op = "function_entry";
      e.outputs.assign(static_cast<std::size_t>(gp.input_size()) + captures->size(), type{});
      std::vector<std::string> names;
      for (const auto& in : gp.input()) {
        if (in.name().empty()) throw error("input " + std::to_string(names.size()) + " of subgraph '" + gp.name() + "' has no name");
        if (inits.contains(in.name()))
          throw error("subgraph '" + gp.name() + "': input '" + in.name() +
                      "' is also an initializer (a subgraph input with a default value is not supported)");
        names.push_back(in.name());
      }
      e.attrs["names"] = names;
      node_id v = g.add_node(std::move(e));
      for (std::size_t i = 0; i < names.size(); ++i) {
        define(f, names[i], v, static_cast<int>(i), "subgraph input");
        const auto& in = gp.input(static_cast<int>(i));
        if (has_type(in)) {
          apply_type(g, v, static_cast<int>(i), in.type());
          f.typed.insert(in.name());
        }
      }
      for (std::size_t j = 0; j < captures->size(); ++j) {
        int k = static_cast<int>(names.size() + j);
        define(f, (*captures)[j], v, k, "captured value");
        g[v].outputs[static_cast<std::size_t>(k)] = (*capture_types)[j];
        f.typed.insert((*captures)[j]);
      }
      for (const auto& t : gp.initializer()) add_constant(t.name(), tensor_of(t, t.name(), "Constant"));
    }
    for (const auto& s : gp.sparse_initializer()) {
      const std::string& name = s.values().name();
      if (name.empty()) throw error("a sparse initializer has no name");
      if (f.values.contains(name)) throw error("sparse initializer '" + name + "' is also an input or initializer");
      try {
        add_constant(name, sparse_to_dense(s, opt_.external_data_dir));
      } catch (const error& e) {
        rethrow_for_node(e, name, "Constant");
      }
    }

    // pass A: nodes, their attributes (except subgraphs) and the values they define
    std::vector<node_id> ids;
    ids.reserve(static_cast<std::size_t>(gp.node_size()));
    for (int i = 0; i < gp.node_size(); ++i) ids.push_back(create_node(f, gp.node(i), i));

    // types: graph outputs, then value_info (the first type given for a value wins)
    std::vector<std::string> output_types(static_cast<std::size_t>(gp.output_size()));
    bool any_output_type = false;
    for (int i = 0; i < gp.output_size(); ++i) {
      const auto& out = gp.output(i);
      if (out.name().empty()) throw error("graph output " + std::to_string(i) + " has no name");
      auto it = f.values.find(out.name());
      if (it == f.values.end())
        throw error("graph output '" + out.name() + "' has no producer (no input, initializer or node defines it)");
      if (!has_type(out)) continue;
      if (!f.typed.contains(out.name())) {
        apply_type(g, it->second.node, it->second.index, out.type());
        f.typed.insert(out.name());
      } else if (!same_proto(effective_type(g, it->second.node, it->second.index), out.type())) {
        output_types[static_cast<std::size_t>(i)] = proto_text(out.type());
        any_output_type = true;
      }
    }
    for (const auto& vi : gp.value_info()) {
      auto it = f.values.find(vi.name());
      if (it == f.values.end() || f.typed.contains(vi.name()) || !has_type(vi)) continue;
      apply_type(g, it->second.node, it->second.index, vi.type());
      f.typed.insert(vi.name());
    }

    // pass B: inputs, subgraphs and their captures
    for (int i = 0; i < gp.node_size(); ++i) connect_node(f, gp.node(i), ids[static_cast<std::size_t>(i)], depth);

    // graph outputs -> one return node
    node_type r;
    r.name = fresh_name(g, "return");
    r.op = "return";
    r.outputs.clear();
    std::vector<std::string> names;
    for (const auto& out : gp.output()) names.push_back(out.name());
    r.attrs["names"] = names;
    if (any_output_type) r.attrs[std::string(attr_types)] = std::move(output_types);
    node_id rv = g.add_node(std::move(r));
    for (const auto& name : names) {
      const port& p = f.values.at(name);
      g.add_input(rv, p.node, p.index);
    }

    // ONNX graphs are acyclic; a cycle is a malformed model
    (void)topological_order(g);
  }

  /// Pass A for one node: creates it with its outputs and non-graph attributes.
  node_id create_node(frame& f, const onnx::NodeProto& n, int index) {
    G& g = f.g;
    const std::string label = node_label(n, index);
    if (n.op_type().empty()) throw_node_error("node has no op_type", label, "");
    const std::string domain = n.domain() == "ai.onnx" ? std::string() : n.domain();
    if (domain.empty() && (n.op_type() == "arg" || n.op_type() == "return" || n.op_type() == "function_entry" ||
                           n.op_type() == "call"))
      throw_node_error("op '" + n.op_type() + "' in the default domain is reserved by gpass", label, n.op_type());
    node_type nd;
    nd.name = pick_name(g, n);
    nd.outputs.assign(static_cast<std::size_t>(n.output_size()), type{});
    const std::string fkey = function_key(domain, n.op_type(), string_field(n, 8));  // overload
    if (auto fit = local_functions_.find(fkey); fit != local_functions_.end()) {
      // a call of a model-local function: a core `call` of its gpass instance
      nd.op = "call";
      try {
        nd.attrs["f"] = function_ref{instantiate(*fit->second, fkey, n)};
      } catch (const error& e) {
        rethrow_for_node(e, label, n.op_type());
      }
      nd.attrs[std::string(attr_function_domain)] = n.domain();
      return add_created_node(f, n, std::move(nd));
    }
    if (opt_.strict && domain.empty()) check_version(n, label);
    nd.op = n.op_type();
    nd.domain = domain;
    for (const auto* a : sorted_attributes(n)) {
      try {
        if (a->name().empty()) throw error("an attribute has no name");
        if (is_reserved_attribute(a->name()))
          throw error("attribute name '" + a->name() + "' is reserved by the gpass ONNX importer");
        if (!a->ref_attr_name().empty())
          throw error("attribute '" + a->name() + "' refers to a function attribute (ref_attr_name '" +
                      a->ref_attr_name() + "'); only model-local functions may do that");
        if (nd.attrs.contains(a->name())) throw error("attribute '" + a->name() + "' is given twice");
        int kind = attribute_kind(*a);
        if (kind == onnx::AttributeProto::GRAPH || kind == onnx::AttributeProto::GRAPHS) continue;  // pass B
        if (kind == onnx::AttributeProto::SPARSE_TENSOR && a->name() == "sparse_value" && domain.empty() &&
            n.op_type() == "Constant" && n.attribute_size() == 1) {
          // Constant(sparse_value) is Constant(value) with the dense tensor
          nd.attrs["value"] = sparse_to_dense(a->sparse_tensor(), opt_.external_data_dir);
          continue;
        }
        nd.attrs[a->name()] = convert_attribute(*a, kind);
      } catch (const error& e) {
        rethrow_for_node(e, label, n.op_type());
      }
    }
    if (domain.empty() && nd.op == "Constant" && nd.attrs.size() == 1 && nd.attrs.begin()->first == "value" &&
        nd.attrs.begin()->second.template is<tensor>())
      nd.attrs[std::string(attr_node)] = true;  // keep it a node on export (not an initializer)
    return add_created_node(f, n, std::move(nd));
  }

  /// Adds `nd`, made from ONNX node `n`, to the frame's graph with its doc string and output
  /// names, and defines its output values.
  node_id add_created_node(frame& f, const onnx::NodeProto& n, node_type nd) {
    G& g = f.g;
    if (!n.doc_string().empty()) nd.attrs[std::string(attr_doc)] = n.doc_string();
    bool derived = true;
    for (int k = 0; k < n.output_size(); ++k)
      if (n.output(k) != derived_value_name(nd.name, static_cast<std::size_t>(k))) derived = false;
    if (!derived) nd.attrs[std::string(attr_outputs)] = std::vector<std::string>(n.output().begin(), n.output().end());
    node_id v = g.add_node(std::move(nd));
    for (int k = 0; k < n.output_size(); ++k)
      if (!n.output(k).empty()) define(f, n.output(k), v, k, "node output");
    return v;
  }

  /// Strict mode: the op version the model's opset selects must be one gpass implements (every
  /// version up to `onnx_implemented_opset`, later ones where a schema's `since_version` says
  /// so), and every attribute must be one ONNX defines for that version.
  void check_version(const onnx::NodeProto& n, const std::string& label) const {
    // no default-domain opset imported (not valid ONNX): what gpass implements applies, the
    // opset its export writes
    const int opset = onnx_opset_ > 0 ? onnx_opset_ : onnx_implemented_opset;
    const int wanted = onnx_op_version(n.op_type(), opset);
    if (wanted == 0) return;  // not an ONNX operator at this opset: "unsupported op" later
    if (wanted > onnx_implemented_opset) {
      const op_schema* sc = op_registry::global().find("", n.op_type(), opset);
      if (sc && sc->frontend == "onnx" && sc->since_version < wanted)
        throw_node_error("unsupported op version: opset " + std::to_string(opset) + " selects " + n.op_type() + "-" +
                             std::to_string(wanted) + ", gpass implements " + n.op_type() + "-" +
                             std::to_string(sc->since_version),
                         label, n.op_type());
    }
    if (const auto* defined = onnx_op_attributes(n.op_type(), opset))
      for (const auto& a : n.attribute())
        if (!a.name().empty() && std::find(defined->begin(), defined->end(), a.name()) == defined->end())
          throw_node_error("attribute '" + a.name() + "' is not defined by " + n.op_type() + " at opset " +
                               std::to_string(opset) + " (unknown attribute)",
                           label, n.op_type());
  }

  /// Pass B for one node: connects its inputs, imports its subgraphs as functions and adds
  /// their captures as trailing inputs.
  void connect_node(frame& f, const onnx::NodeProto& n, node_id v, int depth) {
    G& g = f.g;
    for (int k = 0; k < n.input_size(); ++k) {
      const std::string& name = n.input(k);
      if (name.empty()) {
        g.add_empty_input(v);
        continue;
      }
      auto it = f.values.find(name);
      if (it == f.values.end())
        throw_node_error("input " + std::to_string(k) + " ('" + name + "') has no producer", g[v].name, g[v].op);
      g.add_input(v, it->second.node, it->second.index);
    }
    if (g[v].domain.empty() && g[v].op == "call") return;  // its attributes went into the function
    std::vector<std::pair<const onnx::AttributeProto*, std::vector<const onnx::GraphProto*>>> subs;
    for (const auto* a : sorted_attributes(n)) {
      auto gs = subgraphs_of(*a);
      int kind = attribute_kind(*a);
      if (kind == onnx::AttributeProto::GRAPH || kind == onnx::AttributeProto::GRAPHS) subs.emplace_back(a, std::move(gs));
    }
    if (subs.empty()) return;
    // the captures of all subgraphs of this node, in order of first use
    std::vector<std::string> captures;
    std::vector<type> capture_types;
    std::vector<port> capture_ports;
    std::unordered_set<std::string> seen;
    try {
      for (const auto& [a, gs] : subs)
        for (const auto* sub : gs)
          for (const auto& name : free_vars(*sub, depth + 1))
            if (seen.insert(name).second) {
              auto it = f.values.find(name);
              if (it == f.values.end())
                throw error("value '" + name + "' used in subgraph attribute '" + a->name() + "' has no producer");
              captures.push_back(name);
              capture_ports.push_back(it->second);
              capture_types.push_back(g[it->second.node].outputs[static_cast<std::size_t>(it->second.index)]);
            }
    } catch (const error& e) {
      rethrow_for_node(e, g[v].name, g[v].op);
    }
    for (const auto& [a, gs] : subs) {
      std::vector<function_ref> refs;
      for (std::size_t j = 0; j < gs.size(); ++j) {
        std::string base = g[v].name + "." + a->name();
        if (attribute_kind(*a) == onnx::AttributeProto::GRAPHS) base += "." + std::to_string(j);
        std::string fname = fresh_function_name(base);
        G& fg = top_.add_function(fname, G{});
        try {
          import_graph(*gs[j], fg, &captures, &capture_types, depth + 1);
        } catch (const error& e) {
          // name the innermost node when there is one, and the path of functions
          error_context c = e.context();
          if (c.node.empty()) {
            c.node = g[v].name;
            c.op = g[v].op;
          }
          throw error("in function '" + fname + "': " + e.message(), c);
        }
        refs.push_back(function_ref{fname});
      }
      if (attribute_kind(*a) == onnx::AttributeProto::GRAPH) g[v].attrs[a->name()] = refs.front();
      else g[v].attrs[a->name()] = std::move(refs);
    }
    for (const auto& p : capture_ports) g.add_input(v, p.node, p.index);
    if (!captures.empty()) g[v].attrs[std::string(attr_captures)] = static_cast<std::int64_t>(captures.size());
  }

  G& top_;
  const onnx_import_options& opt_;
  std::unordered_map<const onnx::GraphProto*, std::vector<std::string>> free_memo_;
  struct suffix_key_hash {
    std::size_t operator()(const std::pair<const G*, std::string>& k) const noexcept {
      return std::hash<const void*>{}(k.first) ^ (std::hash<std::string>{}(k.second) * 31);
    }
  };
  std::unordered_map<std::pair<const G*, std::string>, std::uint64_t, suffix_key_hash> suffix_;
};

}  // namespace detail::onnx_io

/// Imports an ONNX model into a new gpass graph.
///
/// **Requirements.** `G` is a `gpass::graph` whose graph attributes are a
/// `gpass::attribute_map` (the default). The model is well formed (`onnx::checker` would
/// accept it; set `options.check_model` to run it first); what is not supported or malformed
/// throws `gpass::error` naming the node and op.
///
/// **Mapping** (the exporter, `export_onnx`, reverses each rule, so import → export → import
/// gives the same gpass graph):
/// - *Model and graph fields* become graph attributes: `frontend` = `"onnx"` (so that type
///   inference picks the ONNX op schemas), `ir_version` (int), `opset_import`
///   (strings `"domain:version"`, e.g. `":13"`, `"ai.onnx.ml:3"`), and when present
///   `producer_name`, `producer_version`, `domain`, `doc_string` (strings), `model_version`
///   (int), `metadata_keys` / `metadata_values` (parallel strings), `name` (the graph name),
///   `graph_doc_string`. `training_info` and `quantization_annotation` are refused (errors).
/// - *Model-local functions* (`FunctionProto`): a node whose (domain, op_type, overload) names
///   one becomes a core `call` node (default domain) with `f` = the gpass function holding
///   the function's body and `_onnx_function_domain` = the node's domain. The body is
///   imported once per distinct set of attribute values (the call's, else the function's
///   defaults), with the attributes that refer to a function attribute (`ref_attr_name`)
///   replaced by those values (an unbound one is dropped); the function's inputs are the
///   `function_entry` outputs. A function that calls itself, or one importing another
///   default-domain opset than the model, is refused. `inline-functions` replaces the calls
///   by the bodies; the exporter writes each called function back as a FunctionProto.
/// - *Graph inputs* become `arg` nodes named as the input, with `index` (int, position among the
///   inputs) and the input's type as output type. An input that is also an initializer gets
///   its value as `default` (tensor). *Initializers* that are not inputs become `Constant` nodes
///   (default domain) named as the initializer, with `value` (tensor) and output type
///   `dtype[dims]` (or, with `initializers_as_constants = false`, `arg` nodes with `default`
///   and an `index` after the declared inputs). Sparse initializers become dense constants.
/// - *Nodes* become nodes with op = op_type and domain = domain (`""` and `"ai.onnx"` both
///   become the empty default domain), one input port per ONNX input (an empty name is an
///   empty port) and one output port per ONNX output (an empty name, an omitted optional
///   output, keeps its port). Node names: the ONNX node name when it is non-empty and not
///   taken, else its first non-empty output name when not taken, else a fresh name derived
///   from it (`y_1`). The exporter derives value names from node names (port 0: the node
///   name, port k: `name:k`); when the ONNX output names differ from that, they are kept in
///   the strings attribute `_onnx_outputs` (`""` for omitted outputs). A doc_string is kept
///   as `_onnx_doc`. ONNX node names that are empty or duplicated are not kept otherwise
///   (the exporter writes the gpass names).
/// - *Attributes*: INT → int, FLOAT → float (double), STRING → string (bytes kept), TENSOR →
///   tensor, TYPE_PROTO → type, INTS/FLOATS/STRINGS/TENSORS/TYPE_PROTOS → the list kinds,
///   GRAPH/GRAPHS → `function_ref`(s) (below). SPARSE_TENSOR(S) attributes are refused, except
///   `Constant(sparse_value)`, which becomes `Constant(value)` with the dense tensor. An ONNX
///   `Constant` node with just `value` is marked `_onnx_node = true` so that it stays a node
///   on export (unmarked `Constant`s are written as initializers). Attribute names starting
///   with `_onnx_`, and `_captures`, are reserved (errors).
/// - *Graph outputs* become one `return` node whose inputs are the outputs in order, with
///   `names` (strings) = the output names. Output types become the producers' output types; an
///   output whose declared type differs from its producer's (an input passed through with
///   another type) keeps it in `_onnx_types` of the `return` node.
/// - *Types* (inputs, outputs, value_info; the first type given for a value wins, later
///   duplicates are dropped): `tensor(T)` with its shape → `tensor_type` (dim_value → known
///   dim, dim_param → `dim::symbol(name)`, neither → unknown dim, no shape → unknown rank),
///   `sequence(tensor(T))` → `list_type` of unknown length; optional, map, sparse and other
///   types → unknown. Whenever the gpass type does not say the ONNX type exactly (those types,
///   denotations, negative dims, ...) the ONNX type is kept, in protobuf text form, in the
///   strings attribute `_onnx_types` of the producer (one entry per output port, `""` for
///   exact ones); the exporter uses it while it still agrees with the gpass type. value_info
///   entries naming no value are dropped, and so are the doc strings of ValueInfos and of
///   attributes.
/// - *Tensors*: every ONNX element type maps to a dtype (FLOAT f32, DOUBLE f64, FLOAT16 f16,
///   BFLOAT16 bf16, INT8..INT64, UINT8..UINT64, BOOL bool, STRING str, COMPLEX64/128
///   c64/c128); data from raw_data (little-endian) or from the typed field ONNX assigns to
///   the type (float_data, int32_data for i8/i16/i32/u8/u16/bool/f16/bf16, int64_data,
///   uint64_data for u32/u64, double_data, string_data). A data length that does not match
///   the dims is an error. External data is read from `options.external_data_dir` (the
///   model's folder for `read_onnx_file`) and is refused without one; segments are refused.
///   Tensor names and doc strings inside attributes are not kept.
/// - *Subgraphs* (If branches, Loop/Scan bodies, any GRAPH attribute) become functions of the
///   main graph's library (one flat namespace, named `<node>.<attribute>`, `.<i>` for
///   GRAPHS, made unique with `_1`...), referenced by `function_ref`. A function has one
///   `function_entry` node whose outputs are the subgraph's inputs (`names` = their names,
///   types from their ValueInfo), one `return` node, and the graph attributes `name` and
///   `graph_doc_string` of the subgraph. Values a subgraph uses from
///   enclosing graphs (implicit captures, including those of its own subgraphs) become
///   explicit: extra `function_entry` outputs after the formal inputs (every subgraph of a
///   node gets all captures of the node, in order of first use, attributes taken by name),
///   extra inputs of the node after its ONNX inputs, and `_captures` (int) = their number.
///   A value captured from two levels up is captured by each level in between.
/// - The ONNX graph must be acyclic; nodes need not be topologically sorted.
/// \code
///   onnx::ModelProto m = ...;
///   auto g = gpass::import_onnx(m);
///   for (auto v : g.nodes()) std::cout << g[v].name << " = " << g[v].op << '\n';
/// \endcode
template <class G = graph<>>
G import_onnx(const onnx::ModelProto& model, const onnx_import_options& options = {}) {
  static_assert(std::is_same_v<typename G::attrs_type, attribute_map>,
                "gpass::import_onnx needs a graph whose graph attributes are a gpass::attribute_map");
  const onnx::ModelProto* m = &model;
  onnx::ModelProto inferred;
  if (options.infer_shapes) {
    inferred = model;
    try {
      onnx::shape_inference::InferShapes(inferred);
    } catch (const std::exception& e) {
      throw error(std::string("ONNX shape inference failed: ") + e.what());
    }
    m = &inferred;
  }
  if (options.check_model) {
    try {
      onnx::checker::check_model(*m);
    } catch (const std::exception& e) {
      throw error(std::string("ONNX checker: ") + e.what());
    }
  }
  G g;
  detail::onnx_io::importer<G>(g, options).import_model(*m);
  return g;
}

namespace detail::onnx_io {

/// `bytes` parsed into `m` (see parse_onnx_model for the errors).
inline void parse_model_proto(std::string_view bytes, const error_context& where, const onnx_import_options& options,
                              onnx::ModelProto& m) {
  if (bytes.empty()) throw error("not an ONNX model (no bytes)", where);
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw error("ONNX models over 2 GiB cannot be parsed (protobuf's limit); keep the weights as external data", where);
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  // each level of subgraph is 3 messages (GraphProto > NodeProto > AttributeProto) deep
  in.SetRecursionLimit(std::max(100, 3 * std::max(options.max_subgraph_depth, 0) + 40));
  if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    throw error("not an ONNX model (protobuf parsing failed: truncated or malformed, or nested deeper than " +
                    std::to_string(options.max_subgraph_depth) + " subgraphs)",
                where);
}

/// `m` imported, errors naming `where`'s file.
template <class G>
G import_parsed(const onnx::ModelProto& m, const error_context& where, const onnx_import_options& options) {
  try {
    return import_onnx<G>(m, options);
  } catch (const error& e) {
    error_context c = e.context();
    c.file = where.file;
    throw error(e.message(), c);
  }
}

}  // namespace detail::onnx_io

/// Parses a serialized `ModelProto` (the bytes of an `.onnx` file) and imports it (see
/// `import_onnx`). Empty input is an error (protobuf would read it as an empty model); the
/// protobuf recursion limit is raised to what `options.max_subgraph_depth` subgraphs need,
/// so a model nested too deeply is refused by the importer with that limit named, not by the
/// parser. External data is refused unless `options.external_data_dir` is set.
/// \code
///   std::string bytes = ...;
///   auto g = gpass::parse_onnx_model(bytes, "model.onnx");
/// \endcode
template <class G = graph<>>
G parse_onnx_model(std::string_view bytes, std::string_view source_name = {}, const onnx_import_options& options = {}) {
  error_context where;
  where.file = source_name.empty() ? std::string("<ONNX model>") : std::string(source_name);
  onnx::ModelProto m;
  detail::onnx_io::parse_model_proto(bytes, where, options, m);
  return detail::onnx_io::import_parsed<G>(m, where, options);
}

/// Reads an ONNX model file and imports it (see `import_onnx` for the mapping). Errors
/// (a missing, empty or unreadable file, bad protobuf, malformed model) are `gpass::error`s
/// naming the file. External tensor data is read from the model's folder unless
/// `options.external_data_dir` says otherwise. The file's bytes are released once parsed, so
/// the weights are held twice at most (parsed, imported), not three times.
/// \code
///   auto g = gpass::read_onnx_file("model.onnx");
/// \endcode
template <class G = graph<>>
G read_onnx_file(const std::filesystem::path& path, const onnx_import_options& options = {}) {
  onnx_import_options o = options;
  if (o.external_data_dir.empty()) {
    o.external_data_dir = path.parent_path();
    if (o.external_data_dir.empty()) o.external_data_dir = ".";
  }
  error_context where;
  where.file = path.string();
  onnx::ModelProto m;
  {
    const std::string bytes = detail::read_model_file(path, "ONNX model");
    detail::onnx_io::parse_model_proto(bytes, where, o, m);
  }
  return detail::onnx_io::import_parsed<G>(m, where, o);
}

}  // namespace gpass
