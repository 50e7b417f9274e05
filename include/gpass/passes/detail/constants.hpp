// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file constants.hpp
/// Private helpers of the constant passes (`fold_constants`, `constant_propagation`,
/// `delete_constant_ancestors`): recognising constant nodes (ops/constant_node.hpp) and making
/// new ones.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/ops/constant_node.hpp>
#include <gpass/ops/op_memo.hpp>
#include <gpass/ops/registry.hpp>

namespace gpass::detail {

/// Bytes of a tensor's contents (strings: their characters).
inline std::int64_t constant_bytes(const tensor& t) {
  if (t.element_type() == dtype::string) {
    std::int64_t n = 0;
    for (const auto& s : t.values<std::string>()) n += static_cast<std::int64_t>(s.size()) + 1;
    return n;
  }
  return static_cast<std::int64_t>(t.nbytes());
}

/// True when constants replacing nodes of domain `node_domain` are TensorFlow `Const` nodes:
/// the domain is "tf", or the main graph `g`'s string attribute `frontend` is "tf" (the
/// TensorFlow importer's) or "tensorflow" (functions have no such attribute: pass the main graph).
template <class G>
bool tf_constants(const G& g, std::string_view node_domain) {
  if (node_domain == "tf") return true;
  if constexpr (std::is_same_v<typename G::attrs_type, attribute_map>) {
    auto it = g.attrs().find("frontend");
    if (it != g.attrs().end() && it->second.template is<std::string>()) {
      const auto& f = it->second.template as<std::string>();
      return f == "tf" || f == "tensorflow";
    }
  }
  return false;
}

/// A constant node holding `v`: `tf::Const {dtype, value}` when `tf`, ONNX `Constant {value}`
/// otherwise; its output type is `v`'s. The name is left empty (the caller's `replace_node`
/// gives it the replaced node's name); the device is kept.
template <class Node>
Node make_constant_node(const Node& like, tensor v, bool tf) {
  Node n;
  n.device = like.device;
  n.outputs.assign(1, type(tensor_type{v.element_type(), v.shape()}));
  if (tf) {
    n.op = "Const";
    n.domain = "tf";
    n.attrs["dtype"] = v.element_type();
  } else {
    n.op = "Constant";
  }
  n.attrs["value"] = std::move(v);
  return n;
}

/// Replaces node `v` of `g` by a constant node holding `value` (see `make_constant_node`; a
/// `tf::Const` when `tf`) with the same name, device, control inputs and uses; its data inputs
/// are dropped. Returns the new node.
template <class G>
typename G::node_id replace_by_constant(G& g, typename G::node_id v, tensor value, bool tf) {
  auto n = make_constant_node(g[v], std::move(value), tf);
  std::string name = g[v].name;
  auto controls = g.control_inputs(v);
  g.rename(v, g.unique_name(name + ".folded"));
  n.name = std::move(name);
  auto c = g.add_node(std::move(n));
  for (auto p : controls) g.add_control(p, c);
  g.replace_all_uses(v, c);
  g.remove_node(v);
  return c;
}

/// The constant value input `i` of `v` reads (an ONNX `Constant` or TF `Const`), or nullptr.
template <class G>
const tensor* constant_input(const G& g, typename G::node_id v, int i) {
  if (i < 0 || static_cast<std::size_t>(i) >= g.num_inputs(v)) return nullptr;
  auto in = g.input(v, i);
  if (in.empty || in.port != 0 || !is_constant_node(g[in.node])) return nullptr;
  return &constant_value(g[in.node]);
}

/// The integer elements of a constant tensor (empty optional when `t` is not an integer tensor).
inline std::optional<std::vector<std::int64_t>> constant_ints(const tensor* t) {
  if (!t || (t->element_type() != dtype::int64 && t->element_type() != dtype::int32)) return std::nullopt;
  std::vector<std::int64_t> r;
  if (t->element_type() == dtype::int64)
    for (auto x : t->values<std::int64_t>()) r.push_back(x);
  else
    for (auto x : t->values<std::int32_t>()) r.push_back(x);
  return r;
}

/// The value of a one-element numeric tensor as a double (nullopt otherwise).
inline std::optional<double> scalar_value(const tensor* t) {
  if (!t || t->size() != 1 || t->element_type() == dtype::string || t->element_type() == dtype::undefined) return std::nullopt;
  std::optional<double> r;
  visit_dtype(t->element_type(), [&]<class T>() {
    if constexpr (std::is_arithmetic_v<T>) r = static_cast<double>(t->values<T>()[0]);
  });
  return r;
}

/// The pad amounts of an ONNX `Pad`, `[b_0, ..., b_{r-1}, e_0, ..., e_{r-1}]`: its constant
/// input `pads` (opset 11 on), else its attribute `pads`; nullopt when they are not constant
/// or `axes` is given.
template <class G>
std::optional<std::vector<std::int64_t>> onnx_pad_amounts(const G& g, typename G::node_id p) {
  if (g.num_inputs(p) > 3 && !g.input(p, 3).empty) return std::nullopt;  // axes
  if (g.num_inputs(p) > 1 && !g.input(p, 1).empty) return constant_ints(constant_input(g, p, 1));
  if (auto a = g[p].attrs.find("pads"); a != g[p].attrs.end()) return a->second.template as<std::vector<std::int64_t>>();
  return std::nullopt;
}

/// The pads (ONNX's order: every dim's begin, then every dim's end) of an ONNX `Pad` that
/// pads with zeros in `constant` mode (`onnx_pad_amounts`), or of a TF `Pad` / `PadV2` (by
/// zero) with constant paddings. Nullopt for other modes, values or non-constant pads.
template <class G>
std::optional<std::vector<std::int64_t>> zero_pads(const G& g, typename G::node_id p) {
  const auto& n = g[p];
  if (n.domain == "tf" && (n.op == "Pad" || n.op == "PadV2")) {
    if (n.op == "PadV2" && (g.num_inputs(p) < 3 || scalar_value(constant_input(g, p, 2)) != 0.0)) return std::nullopt;
    auto rows = constant_ints(constant_input(g, p, 1));  // [rank, 2]: begin, end per dim
    if (!rows || rows->size() % 2 != 0) return std::nullopt;
    const std::size_t r = rows->size() / 2;
    std::vector<std::int64_t> pads(rows->size());
    for (std::size_t i = 0; i < r; ++i) {
      pads[i] = (*rows)[2 * i];
      pads[r + i] = (*rows)[2 * i + 1];
    }
    return pads;
  }
  if (!n.domain.empty() || n.op != "Pad") return std::nullopt;
  if (get_or<std::string>(n.attrs, "mode", "constant") != "constant" || get_or(n.attrs, "value", 0.0) != 0.0)
    return std::nullopt;
  if (g.num_inputs(p) > 2 && !g.input(p, 2).empty && scalar_value(constant_input(g, p, 2)) != 0.0) return std::nullopt;
  return onnx_pad_amounts(g, p);
}


/// True when an attribute of the node names a function (the node calls it).
inline bool calls_function(const attribute_map& attrs) {
  for (const auto& [k, a] : attrs)
    if (a.is<function_ref>() || a.is<std::vector<function_ref>>()) return true;
  return false;
}

/// How the constant passes may treat an op: never touched (effects, results, interface,
/// v1 control flow, hidden state, random numbers), or pure. Ops unknown to the registry are
/// pure, except random ones (`RandomUniform`, `TruncatedNormal`, ... by name: a schema may
/// be missing while the op is being added).
inline bool op_is_pure(std::string_view domain, std::string_view op) {
  // the most common node by far: no registry lookup
  if ((op == "Constant" && domain.empty()) || (op == "Const" && domain == "tf")) return true;
  if (op.find("Random") != std::string_view::npos || op == "TruncatedNormal" || op == "Multinomial" ||
      op == "Bernoulli" || op == "ParameterizedTruncatedNormal")
    return false;
  const op_schema* s = op_registry::global().find(domain, op);
  if (!s) return true;
  const op_traits& t = s->traits;
  return !(t.side_effects || t.terminator || t.control_flow || t.stateful || t.interface);
}

/// `op_is_pure` memoized for one pass over a graph (`op_memo`: one registry lookup per
/// distinct op, then a short table search per node).
class purity_memo {
 public:
  bool operator()(std::string_view domain, std::string_view op) { return memo_(domain, op, op_is_pure); }

 private:
  op_memo<bool> memo_;
};

}  // namespace gpass::detail
