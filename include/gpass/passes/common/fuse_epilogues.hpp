// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fuse_epilogues.hpp
/// `gpass::fuse_epilogues`: the "fuse-epilogues" pass: a Conv or Gemm absorbs the residual
/// Add and the activation after it into gpass's fused ops (`gpass::FusedConv`,
/// `gpass::FusedGemm`), which the CPU executor runs as one kernel.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/pass/rewrite.hpp>
#include <gpass/passes/detail/constants.hpp>

namespace gpass {

namespace detail {

/// The activation node `v` as the attributes of a fused op (`activation`,
/// `activation_params`): Relu, LeakyRelu, Clip (constant or absent bounds), Sigmoid, Tanh,
/// HardSigmoid of the default domain; nullopt for anything else.
template <class G>
std::optional<std::pair<std::string, std::vector<double>>> fusable_activation(const G& g, typename G::node_id v) {
  const auto& n = g[v];
  if (!n.domain.empty()) return std::nullopt;
  auto number = [&](const char* k, double def) { return get_or(n.attrs, k, def); };
  if (n.op == "Relu" || n.op == "Sigmoid" || n.op == "Tanh") return std::make_pair(n.op, std::vector<double>{});
  if (n.op == "LeakyRelu") return std::make_pair(n.op, std::vector<double>{number("alpha", 0.01)});
  if (n.op == "HardSigmoid") return std::make_pair(n.op, std::vector<double>{number("alpha", 0.2), number("beta", 0.5)});
  if (n.op == "Clip") {
    std::vector<double> bounds{number("min", -3.4028234663852886e38), number("max", 3.4028234663852886e38)};
    for (int i = 1; i < 3; ++i) {
      if (g.num_inputs(v) <= static_cast<std::size_t>(i) || g.input(v, i).empty) continue;
      const tensor* t = constant_input(g, v, i);
      if (!t || t->size() != 1 || (t->element_type() != dtype::f32 && t->element_type() != dtype::f64)) return std::nullopt;
      bounds[static_cast<std::size_t>(i - 1)] =
          t->element_type() == dtype::f32 ? static_cast<double>(t->values<float>()[0]) : t->values<double>()[0];
    }
    return std::make_pair(n.op, std::move(bounds));
  }
  return std::nullopt;
}

/// The producer of input `i` of `v` when it may be fused into `v`: output 0, its only use,
/// same device, no control edges.
template <class G>
std::optional<typename G::node_id> fusable_producer(const G& g, typename G::node_id v, int i) {
  if (g.num_inputs(v) <= static_cast<std::size_t>(i)) return std::nullopt;
  auto in = g.input(v, i);
  if (in.empty || in.port != 0 || g.uses(in.node).size() != 1 || g[in.node].device != g[v].device) return std::nullopt;
  if (!g.control_inputs(in.node).empty() || !g.control_outputs(in.node).empty()) return std::nullopt;
  return in.node;
}

/// Replaces `v` by the fused op `op` made of producer `p`: `p`'s attributes and inputs, then
/// `extra` (a port of -1 is an empty input), plus `attrs`; `p` goes.
template <class G>
void fuse_into(rewriter<G>& rw, typename G::node_id v, typename G::node_id p, std::string op, attribute_map attrs,
               std::vector<std::pair<typename G::node_id, int>> extra = {}) {
  G& g = rw.graph();
  typename G::node_type n;
  n.op = std::move(op);
  n.domain = "gpass";
  n.device = g[v].device;
  n.attrs = g[p].attrs;
  for (auto& [k, a] : attrs) n.attrs.insert_or_assign(k, std::move(a));
  n.outputs = g[v].outputs;
  std::vector<std::pair<typename G::node_id, int>> inputs;  // port -1: an empty input (an absent bias)
  for (const auto& in : g.inputs(p)) inputs.emplace_back(in.node, in.empty ? -1 : in.port);
  for (auto& e : extra) inputs.push_back(e);
  const auto f = rw.replace_with(v, std::move(n), {});
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].second < 0) g.add_empty_input(f);
    else g.add_input(f, inputs[i].first, inputs[i].second);
  }
  rw.erase(p);
}

/// `Add(Conv(x, w, b), z)` with `z` of the Conv's output type: `gpass::FusedConv(x, w, b, z)`.
template <class G>
bool fuse_conv_add(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) != 2) return false;
  for (int side = 0; side < 2; ++side) {
    auto p = fusable_producer(g, v, side);
    if (!p || g[*p].op != "Conv" || !g[*p].domain.empty() || g.num_inputs(*p) > 3) continue;
    auto z = g.input(v, 1 - side);
    const type* zt = match::input_type(g, v, 1 - side);
    if (z.empty || !zt || !match::same_known_tensor_type(*zt, g[v].outputs[0]) ||
        !match::same_known_tensor_type(g[*p].outputs[0], g[v].outputs[0]))
      continue;
    std::vector<std::pair<typename G::node_id, int>> extra;
    if (g.num_inputs(*p) == 2) extra.emplace_back(z.node, -1);  // no bias: an empty slot
    extra.emplace_back(z.node, z.port);
    fuse_into(rw, v, *p, "FusedConv", {}, std::move(extra));
    return true;
  }
  return false;
}

/// `Act(Conv(...))`, `Act(Gemm(...))` (or of a fused op without activation yet):
/// `gpass::FusedConv` / `gpass::FusedGemm` with `activation = Act`.
template <class G>
bool fuse_activation(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  auto act = fusable_activation(g, v);
  auto p = fusable_producer(g, v, 0);
  if (!act || !p) return false;
  // the fused kernels are for floating-point results (an integer Gemm keeps its activation)
  const type& t = g[v].outputs[0];
  if (!t.is_tensor() || !is_floating(t.tensor().element)) return false;
  const auto& pn = g[*p];
  std::string op;
  if (pn.domain.empty() && (pn.op == "Conv" || pn.op == "Gemm")) op = "Fused" + pn.op;
  else if (pn.domain == "gpass" && (pn.op == "FusedConv" || pn.op == "FusedGemm")) {
    if (!get_or<std::string>(pn.attrs, "activation", "").empty()) return false;
    op = pn.op;
  } else {
    return false;
  }
  attribute_map a;
  a["activation"] = act->first;
  if (!act->second.empty()) a["activation_params"] = std::move(act->second);
  fuse_into(rw, v, *p, std::move(op), std::move(a));
  return true;
}

/// The only data user of `v` (output 0) when it is op `op` of the default domain, same
/// device, no control edges; and the other input of that binary user.
template <class G>
std::optional<std::pair<typename G::node_id, std::optional<std::pair<typename G::node_id, int>>>> sole_user(
    const G& g, typename G::node_id v, std::string_view op) {
  const auto us = g.uses(v);
  if (us.size() != 1 || us[0].src_port != 0) return std::nullopt;
  const auto u = us[0].node;
  if (!g[u].domain.empty() || g[u].op != op || g[u].device != g[v].device || !g.control_inputs(u).empty()) return std::nullopt;
  std::optional<std::pair<typename G::node_id, int>> other;
  if (g.num_inputs(u) == 2) {
    auto o = g.input(u, 1 - us[0].dst_port);
    if (!o.empty) other = std::make_pair(o.node, o.port);
  }
  return std::make_pair(u, other);
}

/// GELU written out around an `Erf` (the root): `Mul(Mul(x, 0.5), Add(Erf(Mul(x, 1/sqrt2)),
/// 1))` (Keras through tf2onnx; `Div(x, sqrt2)` too) or `Mul(Mul(x, Add(Erf(Div(x, sqrt2)),
/// 1)), 0.5)` (PyTorch): `gpass::Gelu(x)`, named as the last node. Constants within 1e-4 of
/// 0.5, 1/sqrt(2) (or sqrt(2) for the Div) and 1; f32; the inner nodes used only there.
template <class G>
bool fuse_gelu(rewriter<G>& rw, typename G::node_id e) {
  using node_id = typename G::node_id;
  G& g = rw.graph();
  auto near = [](const tensor* t, double want) {
    auto v = scalar_value(t);
    return v && std::abs(*v - want) <= 1e-4 * std::abs(want);
  };
  if (g.num_inputs(e) != 1 || !g.control_outputs(e).empty()) return false;
  auto tin = g.input(e, 0);
  if (tin.empty || tin.port != 0 || g.uses(tin.node).size() != 1) return false;
  const node_id t = tin.node;
  if (!g[t].domain.empty() || g.num_inputs(t) != 2 || (g[t].op != "Mul" && g[t].op != "Div")) return false;
  const tensor* c = constant_input(g, t, 1);
  const int xside = c ? 0 : 1;
  if (!c && g[t].op == "Mul") c = constant_input(g, t, 0);
  if (!c || !near(c, g[t].op == "Mul" ? 0.7071067811865476 : 1.4142135623730951)) return false;
  auto xin = g.input(t, xside);
  if (xin.empty) return false;
  const std::pair<node_id, int> x{xin.node, xin.port};
  const type* xt = match::input_type(g, t, xside);
  if (!xt || !xt->is_tensor() || xt->tensor().element != dtype::f32) return false;
  // the constant a binary user reads besides the chain, or nullptr
  auto other_constant = [&](const auto& user) -> const tensor* {
    if (!user || !user->second || user->second->second != 0 || !is_constant_node(g[user->second->first])) return nullptr;
    return &constant_value(g[user->second->first]);
  };
  auto add = sole_user(g, e, "Add");
  if (!add || !near(other_constant(add), 1.0)) return false;
  auto mul = sole_user(g, add->first, "Mul");
  if (!mul || !mul->second) return false;
  std::vector<node_id> inner{t, e, add->first};
  node_id last = mul->first;
  const auto h = *mul->second;
  if (h == x) {  // PyTorch: Mul(x, a) then Mul(., 0.5)
    auto half = sole_user(g, mul->first, "Mul");
    if (!half || !near(other_constant(half), 0.5)) return false;
    inner.push_back(mul->first);
    last = half->first;
  } else {  // Keras: h = Mul(x, 0.5), used only here
    const node_id hm = h.first;
    if (h.second != 0 || !g[hm].domain.empty() || g[hm].op != "Mul" || g.num_inputs(hm) != 2 || g.uses(hm).size() != 1)
      return false;
    const int hx = constant_input(g, hm, 1) ? 0 : 1;
    auto hxin = g.input(hm, hx);
    if (hxin.empty || std::make_pair(hxin.node, hxin.port) != x || !near(constant_input(g, hm, 1 - hx), 0.5)) return false;
    inner.push_back(hm);
  }
  typename G::node_type n;
  n.op = "Gelu";
  n.domain = "gpass";
  n.device = g[last].device;
  n.outputs = g[last].outputs;
  rw.replace_with(last, std::move(n), {x});
  for (auto it = inner.rbegin(); it != inner.rend(); ++it)
    if (!rw.erased(*it) && g.uses(*it).empty()) rw.erase(*it);
  return true;
}

}  // namespace detail

/// Pass "fuse-epilogues" (`op_fuse_pass`, ONNX Runtime's Conv/Gemm activation fusions): what
/// follows a Conv or Gemm and is cheap to do while its result is in cache goes into gpass's
/// fused ops, as rewrite patterns on the graph and every function:
///
/// | pattern | rewrite |
/// |---------|---------|
/// | `conv-add` | `Add(Conv(x, w, b), z)`, `z` of the same shape: `gpass::FusedConv(x, w, b, z)` |
/// | `activation` | Relu, LeakyRelu, Clip, Sigmoid, Tanh, HardSigmoid of a Conv, Gemm or such fused op: `activation` attribute |
/// | `gelu` | GELU written out around an `Erf` (Keras/tf2onnx and PyTorch forms, see `detail::fuse_gelu`): `gpass::Gelu(x)` |
///
/// `gpass::FusedConv` (`X, W, B?, Z?`; Conv's attributes, `activation`, `activation_params`)
/// computes `act(Conv(X, W, B) + Z)`, `gpass::FusedGemm` `act(Gemm(A, B, C))`, `gpass::Gelu`
/// ONNX 20's `Gelu` (for graphs of older opsets); all have op
/// schemas and Eigen CPU kernels, and export to ONNX in domain `gpass` (other runtimes do not
/// know them: this is `-O3`). The replaced node's name goes to the fused op. Statistics:
/// `rewrites`, one per pattern. O(V + E).
/// \code
///   gpass::fuse_epilogues(g, ctx);   // Relu(Add(Conv(x, w, b), r)) -> gpass::FusedConv(x, w, b, r) {activation = "Relu"}
/// \endcode
struct fuse_epilogues_fn : pass_base<fuse_epilogues_fn> {
  static constexpr std::string_view name = "fuse-epilogues";
  static constexpr std::string_view description = "Fuse residual Adds and activations into Conv and Gemm (gpass::FusedConv, gpass::FusedGemm)";

  template <class G>
  void run(G& g, pass_context& ctx) const {
    const std::vector<rewrite_pattern<G>> ps{
        {.name = "conv-add", .roots = {{"", "Add"}}, .when = {}, .rewrite = detail::fuse_conv_add<G>},
        {.name = "activation",
         .roots = {{"", "Relu"}, {"", "LeakyRelu"}, {"", "Clip"}, {"", "Sigmoid"}, {"", "Tanh"}, {"", "HardSigmoid"}},
         .when = {},
         .rewrite = detail::fuse_activation<G>},
        {.name = "gelu", .roots = {{"", "Erf"}}, .when = {}, .rewrite = detail::fuse_gelu<G>}};
    report_edits(ctx, {{"rewrites", apply_patterns_everywhere(g, ps, ctx)}});
  }
};

/// The `fuse-epilogues` pass object (see `fuse_epilogues_fn`).
inline constexpr fuse_epilogues_fn fuse_epilogues{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void fuse_epilogues_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
