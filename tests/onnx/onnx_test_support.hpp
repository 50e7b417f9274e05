// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers shared by the ONNX tests: building small ModelProtos, comparing gpass graphs.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/io/onnx.hpp>

namespace onnx_test {

// ---- building models -----------------------------------------------------------------

/// A model with ir_version 8 and opset 17 (or the given one), graph named "g".
inline onnx::ModelProto make_model(int opset = 17, std::int64_t ir_version = 8) {
  onnx::ModelProto m;
  m.set_ir_version(ir_version);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

/// `tensor(elem)` with the given dims: a number is a dim_value, a string a dim_param, "?" an empty dim.
struct dim_spec {
  std::variant<std::int64_t, std::string> v;
  dim_spec(int x) : v(std::int64_t{x}) {}              // NOLINT
  dim_spec(const char* s) : v(std::string(s)) {}        // NOLINT
};
inline onnx::TypeProto tensor_type(int elem, std::initializer_list<dim_spec> dims) {
  onnx::TypeProto t;
  auto* tt = t.mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* s = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* od = s->add_dim();
    if (auto* i = std::get_if<std::int64_t>(&d.v)) od->set_dim_value(*i);
    else if (std::get<std::string>(d.v) != "?") od->set_dim_param(std::get<std::string>(d.v));
  }
  return t;
}
inline onnx::TypeProto f32(std::initializer_list<dim_spec> dims) { return tensor_type(onnx::TensorProto::FLOAT, dims); }

inline onnx::ValueInfoProto* add_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                                       const std::string& name, const onnx::TypeProto& t) {
  auto* vi = list->Add();
  vi->set_name(name);
  *vi->mutable_type() = t;
  return vi;
}
inline void add_input(onnx::GraphProto* g, const std::string& name, const onnx::TypeProto& t) {
  add_value(g->mutable_input(), name, t);
}
inline void add_output(onnx::GraphProto* g, const std::string& name, const onnx::TypeProto& t) {
  add_value(g->mutable_output(), name, t);
}
inline void add_output(onnx::GraphProto* g, const std::string& name) { g->add_output()->set_name(name); }

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> inputs,
                                 std::vector<std::string> outputs, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  if (!name.empty()) n->set_name(name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return n;
}

inline onnx::AttributeProto* add_attr(onnx::NodeProto* n, const std::string& name, onnx::AttributeProto::AttributeType t) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(t);
  return a;
}
inline onnx::GraphProto* add_graph_attr(onnx::NodeProto* n, const std::string& name) {
  auto* a = add_attr(n, name, onnx::AttributeProto::GRAPH);
  return a->mutable_g();
}

/// A float tensor proto with float_data.
inline onnx::TensorProto float_tensor(const std::string& name, std::vector<std::int64_t> dims, std::vector<float> v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  for (auto x : v) t.add_float_data(x);
  return t;
}

// ---- comparing graphs ------------------------------------------------------------------

inline std::string attr_text(const gpass::attribute& a) {
  std::string s(a.kind_name());
  if (a.is<std::int64_t>()) s += " " + std::to_string(a.as<std::int64_t>());
  else if (a.is<std::string>()) s += " '" + a.as<std::string>() + "'";
  else if (a.is<gpass::type>()) s += " " + a.as<gpass::type>().to_string();
  else if (a.is<gpass::function_ref>()) s += " @" + a.as<gpass::function_ref>().name;
  else if (a.is<std::vector<std::string>>()) {
    s += " [";
    for (const auto& x : a.as<std::vector<std::string>>()) s += "'" + x + "' ";
    s += "]";
  }
  return s;
}

inline std::string diff_attrs(const gpass::attribute_map& a, const gpass::attribute_map& b) {
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end()) return "attribute '" + k + "' only on the left (" + attr_text(v) + ")";
    if (!(it->second == v)) return "attribute '" + k + "' differs: " + attr_text(v) + " vs " + attr_text(it->second);
  }
  for (const auto& [k, v] : b)
    if (!a.contains(k)) return "attribute '" + k + "' only on the right (" + attr_text(v) + ")";
  return {};
}

/// An empty string when `a` and `b` have the same nodes (by name), ops, domains, attributes,
/// output types, inputs, control edges, graph attributes and functions; else the first difference.
template <class G>
std::string diff_graphs(const G& a, const G& b, const std::string& where = "main graph") {
  if (auto d = diff_attrs(a.attrs(), b.attrs()); !d.empty()) return where + ": graph " + d;
  if (a.num_nodes() != b.num_nodes())
    return where + ": " + std::to_string(a.num_nodes()) + " vs " + std::to_string(b.num_nodes()) + " nodes";
  for (auto v : a.nodes()) {
    const auto& n = a[v];
    auto w = b.find(n.name);
    if (!w) return where + ": node '" + n.name + "' missing on the right";
    const auto& m = b[*w];
    std::string at = where + ": node '" + n.name + "': ";
    if (n.op != m.op) return at + "op " + n.op + " vs " + m.op;
    if (n.domain != m.domain) return at + "domain " + n.domain + " vs " + m.domain;
    if (n.device != m.device) return at + "device";
    if (auto d = diff_attrs(n.attrs, m.attrs); !d.empty()) return at + d;
    if (n.outputs.size() != m.outputs.size()) return at + "output count";
    for (std::size_t k = 0; k < n.outputs.size(); ++k)
      if (!(n.outputs[k] == m.outputs[k]))
        return at + "output " + std::to_string(k) + " type " + n.outputs[k].to_string() + " vs " + m.outputs[k].to_string();
    if (a.num_inputs(v) != b.num_inputs(*w)) return at + "input count";
    for (std::size_t k = 0; k < a.num_inputs(v); ++k) {
      auto x = a.input(v, static_cast<int>(k));
      auto y = b.input(*w, static_cast<int>(k));
      if (x.empty != y.empty) return at + "input " + std::to_string(k) + " empty on one side";
      if (!x.empty && (a[x.node].name != b[y.node].name || x.port != y.port))
        return at + "input " + std::to_string(k) + " " + a[x.node].name + ":" + std::to_string(x.port) + " vs " +
               b[y.node].name + ":" + std::to_string(y.port);
    }
    std::set<std::string> ca, cb;
    for (auto c : a.control_inputs(v)) ca.insert(a[c].name);
    for (auto c : b.control_inputs(*w)) cb.insert(b[c].name);
    if (ca != cb) return at + "control inputs differ";
  }
  if (a.functions().size() != b.functions().size())
    return where + ": " + std::to_string(a.functions().size()) + " vs " + std::to_string(b.functions().size()) +
           " functions";
  for (const auto& [name, f] : a.functions()) {
    const G* h = b.find_function(name);
    if (!h) return where + ": function '" + name + "' missing on the right";
    if (auto d = diff_graphs(*f, *h, "function '" + name + "'"); !d.empty()) return d;
  }
  return {};
}

// ---- the ONNX backend test models ------------------------------------------------------

/// The backend test data: GPASS_ONNX_TESTDATA_DIR (set by CMake when it finds the data), else
/// where Debian's libonnx-testdata puts it.
#ifdef GPASS_ONNX_TESTDATA_DIR
inline const std::filesystem::path backend_data_dir = GPASS_ONNX_TESTDATA_DIR;
#else
inline const std::filesystem::path backend_data_dir = "/usr/share/libonnx-testdata/data";
#endif

/// Every `<dir>/<test>/model.onnx` under node, pytorch-converted, pytorch-operator and simple, sorted.
inline std::vector<std::filesystem::path> backend_models() {
  std::vector<std::filesystem::path> r;
  for (const char* d : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(backend_data_dir / d, ec))
      if (std::filesystem::exists(e.path() / "model.onnx")) r.push_back(e.path() / "model.onnx");
  }
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace onnx_test
