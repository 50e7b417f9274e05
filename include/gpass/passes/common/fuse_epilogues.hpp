// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fuse_epilogues.hpp
/// `gpass::fuse_epilogues`: the "fuse-epilogues" pass: a Conv or Gemm absorbs the residual
/// Add and the activation after it into gpass's fused ops (`gpass::FusedConv`,
/// `gpass::FusedGemm`), which the CPU executor runs as one kernel; written-out GELUs,
/// attentions and residual LayerNorms become one op each.

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
#include <gpass/ops/opset.hpp>
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

/// The value at input `1 - side` of the binary `v` (an Add) when it may be the residual `Z` of
/// the convolution `p` that input `side` reads: present, and it, `p`'s result and `v`'s of one
/// known type. Nullopt otherwise.
template <class G>
std::optional<std::pair<typename G::node_id, int>> residual_operand(const G& g, typename G::node_id v, int side,
                                                                    typename G::node_id p) {
  auto z = g.input(v, 1 - side);
  const type* zt = match::input_type(g, v, 1 - side);
  if (z.empty || !zt || !match::same_known_tensor_type(*zt, g[v].outputs[0]) ||
      !match::same_known_tensor_type(g[p].outputs[0], g[v].outputs[0]))
    return std::nullopt;
  return std::make_pair(z.node, z.port);
}

/// `Add(Conv(x, w, b), z)` with `z` of the Conv's output type: `gpass::FusedConv(x, w, b, z)`.
template <class G>
bool fuse_conv_add(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) != 2) return false;
  for (int side = 0; side < 2; ++side) {
    auto p = fusable_producer(g, v, side);
    if (!p || g[*p].op != "Conv" || !g[*p].domain.empty() || g.num_inputs(*p) > 3) continue;
    auto z = residual_operand(g, v, side, *p);
    if (!z) continue;
    std::vector<std::pair<typename G::node_id, int>> extra;
    if (g.num_inputs(*p) == 2) extra.emplace_back(z->first, -1);  // no bias: an empty slot
    extra.push_back(*z);
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

/// `LayerNormalization(Add(a, b), gamma, beta)` over the last axis (the residual connection
/// of a transformer block), `a` and `b` broadcast to the sum (as the kernel broadcasts
/// them), the sum of a known type, `gamma` and `beta` vectors of the
/// last axis's size, the statistics outputs unused: ONNX Runtime's
/// `com.microsoft::SkipLayerNormalization(a, b, gamma, beta)` {epsilon}, named as the
/// LayerNormalization. Other users of the sum (the residual stream of a pre-norm block) read
/// its output 3 (`input_skip_bias_sum`); a sum that is a graph output stays as it is.
template <class G>
bool fuse_skip_layer_norm(rewriter<G>& rw, typename G::node_id ln) {
  G& g = rw.graph();
  if (!g[ln].domain.empty() || g.num_inputs(ln) < 2 || g.num_inputs(ln) > 3) return false;
  for (std::size_t k = 1; k < g[ln].outputs.size(); ++k)
    if (!g.uses(ln, static_cast<int>(k)).empty()) return false;
  const type yt = g[ln].outputs[0];
  if (!yt.is_tensor() || !yt.tensor().shape.has_rank() || yt.tensor().shape.rank() < 1) return false;
  const dtype et = yt.tensor().element;
  if (et != dtype::f32 && et != dtype::f64 && et != dtype::f16) return false;
  const auto rank = static_cast<std::int64_t>(yt.tensor().shape.rank());
  const auto axis = get_or<std::int64_t>(g[ln].attrs, "axis", -1);
  if (axis != -1 && axis != rank - 1) return false;
  const dim h = yt.tensor().shape[static_cast<std::size_t>(rank - 1)];
  if (!h.is_known()) return false;
  for (int i = 1; i < static_cast<int>(g.num_inputs(ln)); ++i) {  // gamma, beta: [H]
    if (g.input(ln, i).empty) {
      if (i == 1) return false;
      continue;
    }
    const type* t = match::input_type(g, ln, i);
    if (!t || !t->is_tensor() || t->tensor().element != et || !t->tensor().shape.has_rank() || t->tensor().shape.rank() != 1 ||
        !(t->tensor().shape[0] == h))
      return false;
  }
  const auto s = g.input(ln, 0);
  if (s.empty || s.port != 0) return false;
  const auto add = s.node;
  const auto& an = g[add];
  if (!an.domain.empty() || an.op != "Add" || g.num_inputs(add) != 2 || an.device != g[ln].device) return false;
  if (!g.control_inputs(add).empty() || !g.control_outputs(add).empty()) return false;
  if (!match::same_known_tensor_type(an.outputs[0], yt)) return false;
  for (int i = 0; i < 2; ++i) {  // the operands broadcast to the sum (the kernel does it too)
    const type* t = match::input_type(g, add, i);
    if (g.input(add, i).empty || !t || !t->is_tensor() || t->tensor().element != et || !t->tensor().shape.has_rank() ||
        static_cast<std::int64_t>(t->tensor().shape.rank()) > rank)
      return false;
  }
  const auto users = g.uses(add);
  for (const auto& u : users)
    if (g[u.node].op == "return" && g[u.node].domain.empty()) return false;
  const bool sum_used = users.size() > 1;
  typename G::node_type n;
  n.op = "SkipLayerNormalization";
  n.domain = "com.microsoft";
  n.device = g[ln].device;
  n.attrs["epsilon"] = get_or<double>(g[ln].attrs, "epsilon", 1e-5);
  n.outputs.assign(1, yt);
  if (sum_used) {  // mean and inv_std_var (unused, f32 [..., 1]), then the sum
    std::vector<dim> stat = yt.tensor().shape.dims();
    stat.back() = dim(1);
    n.outputs.push_back(type(tensor_type{dtype::f32, shape(stat)}));
    n.outputs.push_back(type(tensor_type{dtype::f32, shape(stat)}));
    n.outputs.push_back(an.outputs[0]);
  }
  std::vector<std::pair<typename G::node_id, int>> inputs;
  for (int i = 0; i < 2; ++i) inputs.emplace_back(g.input(add, i).node, g.input(add, i).port);
  for (int i = 1; i < static_cast<int>(g.num_inputs(ln)); ++i) {
    const auto in = g.input(ln, i);
    if (in.empty) break;  // beta absent (bias, input 4, is never set)
    inputs.emplace_back(in.node, in.port);
  }
  const auto f = rw.replace_with(ln, std::move(n), inputs);
  if (sum_used) rw.replace_uses(add, 0, f, 3);
  rw.erase(add);
  return true;
}

/// Scaled dot-product attention written out, rooted at its `Softmax`:
/// `MatMul(Softmax(Add(Mul(MatMul(q, kT), c), bias)), v)` over 4-D [batch, heads, ...]
/// tensors, where the scaling (`Mul` by a scalar constant either side, `Div` by one, or none)
/// and the additive bias (either side of the `Add`, of rank 4 or less, broadcast as the `Add`
/// does) are optional; Q, K and V of one batch and head count: `gpass::ScaledDotProductAttention(q, k, v, bias) {scale}`, named as the last
/// `MatMul`. `k` is `kT` with its last two axes swapped: the input of `kT`'s `Transpose` with
/// the permutation composed (no transpose at all when that is the identity), else a new
/// `Transpose`. The softmax is over the last axis; the inner nodes are used only in the
/// chain; f32, f64 or f16.
template <class G>
bool fuse_attention(rewriter<G>& rw, typename G::node_id sm) {
  using node_id = typename G::node_id;
  G& g = rw.graph();
  const std::string device = g[sm].device;
  auto plain = [&](node_id v, std::string_view op) {
    return g[v].domain.empty() && g[v].op == op && g[v].device == device && g.control_inputs(v).empty() &&
           g.control_outputs(v).empty();
  };
  auto only_use = [&](node_id v) { return g.uses(v).size() == 1 && g.uses(v)[0].src_port == 0; };
  auto rank4 = [](const type* t) {
    return t && t->is_tensor() && t->tensor().shape.has_rank() && t->tensor().shape.rank() == 4 ? &t->tensor() : nullptr;
  };
  if (!plain(sm, "Softmax") || g.num_inputs(sm) != 1 || !only_use(sm)) return false;
  const tensor_type* pt = rank4(&g[sm].outputs[0]);
  if (!pt || (pt->element != dtype::f32 && pt->element != dtype::f64 && pt->element != dtype::f16)) return false;
  if (auto it = g[sm].attrs.find("axis"); it != g[sm].attrs.end()) {
    const auto axis = get_or<std::int64_t>(g[sm].attrs, "axis", 0);
    if (axis != 3 && axis != -1) return false;
  } else if (const auto opset = graph_opset(g, ""); opset != 0 && opset < 13) {
    return false;  // before opset 13 the default axis is 1 (of a flattened 2-D view)
  }
  // the user: MatMul(probabilities, v)
  const auto use = g.uses(sm)[0];
  const node_id out = use.node;
  if (!plain(out, "MatMul") || use.dst_port != 0 || g.num_inputs(out) != 2 || g.input(out, 1).empty) return false;
  // the scores, from the Softmax's input back to the first MatMul
  std::vector<node_id> inner{sm};
  std::optional<std::pair<node_id, int>> bias;
  double scale = 1.0;
  auto producer = [&](node_id v, int i) -> std::optional<node_id> {
    const auto in = g.input(v, i);
    if (in.empty || in.port != 0 || !only_use(in.node)) return std::nullopt;
    return in.node;
  };
  auto x = producer(sm, 0);
  if (x && plain(*x, "Add") && g.num_inputs(*x) == 2) {
    const node_id add = *x;
    x.reset();
    for (int side = 0; side < 2 && !x; ++side) {
      auto p = producer(add, side);
      const type* other = match::input_type(g, add, 1 - side);
      if (!p || g.input(add, 1 - side).empty || !other || !other->is_tensor() || !other->tensor().shape.has_rank() ||
          other->tensor().shape.rank() > 4 || !rank4(&g[*p].outputs[0]))
        continue;
      if (!plain(*p, "Mul") && !plain(*p, "Div") && !plain(*p, "MatMul")) continue;
      x = p;
      bias = std::make_pair(g.input(add, 1 - side).node, g.input(add, 1 - side).port);
    }
    if (!x) return false;
    inner.push_back(add);
  }
  if (x && (plain(*x, "Mul") || plain(*x, "Div")) && g.num_inputs(*x) == 2) {
    const node_id m = *x;
    x.reset();
    for (int side = 0; side < 2 && !x; ++side) {
      if (g[m].op == "Div" && side == 1) break;  // Div(c, scores) is no scaling
      const auto c = scalar_value(constant_input(g, m, 1 - side));
      auto p = producer(m, side);
      if (!c || !p || !std::isfinite(*c) || *c == 0.0) continue;
      x = p;
      scale = g[m].op == "Mul" ? *c : 1.0 / *c;
    }
    if (!x) return false;
    inner.push_back(m);
  }
  if (!x || !plain(*x, "MatMul") || g.num_inputs(*x) != 2) return false;
  const node_id qk = *x;
  inner.push_back(qk);
  const auto qin = g.input(qk, 0), ktin = g.input(qk, 1), vin = g.input(out, 1);
  const tensor_type* qt = rank4(match::input_type(g, qk, 0));
  const tensor_type* ktt = rank4(match::input_type(g, qk, 1));
  const tensor_type* vt = rank4(match::input_type(g, out, 1));
  if (qin.empty || ktin.empty || !qt || !ktt || !vt || qt->element != pt->element || ktt->element != pt->element || vt->element != pt->element)
    return false;
  // one batch and one head count (no MatMul broadcasting), Q·K^T's and P·V's inner sizes
  const shape &qs = qt->shape, &ks = ktt->shape, &vs = vt->shape;
  for (std::size_t d = 0; d < 2; ++d)
    if (!(qs[d] == ks[d]) || !(qs[d] == vs[d])) return false;
  if (!(qs[3] == ks[2]) || !(ks[3] == vs[2])) return false;
  // K: kT with its last two axes swapped
  std::pair<node_id, int> k{ktin.node, ktin.port};
  std::vector<std::int64_t> perm{0, 1, 3, 2};
  const node_id kt = ktin.node;
  bool drop_kt = false;
  if (ktin.port == 0 && plain(kt, "Transpose") && g.num_inputs(kt) == 1 && only_use(kt)) {
    const auto p = get_or<std::vector<std::int64_t>>(g[kt].attrs, "perm", {});
    if (p.size() == 4) {
      perm = {p[0], p[1], p[3], p[2]};
      k = {g.input(kt, 0).node, g.input(kt, 0).port};
      drop_kt = true;
    }
  }
  const type* ksrc = drop_kt ? match::input_type(g, kt, 0) : &g[kt].outputs[static_cast<std::size_t>(ktin.port)];
  if (!rank4(ksrc)) return false;
  std::vector<dim> kdims;
  for (auto a : perm) kdims.push_back(ksrc->tensor().shape[static_cast<std::size_t>(a)]);
  if (perm != std::vector<std::int64_t>{0, 1, 2, 3}) {
    typename G::node_type t;
    t.name = g.unique_name(g[out].name + "/key");
    t.op = "Transpose";
    t.device = device;
    t.attrs["perm"] = perm;
    t.outputs.assign(1, type(tensor_type{pt->element, shape(kdims)}));
    const node_id tn = rw.add_node(std::move(t));
    g.add_input(tn, k.first, k.second);
    k = {tn, 0};
  }
  typename G::node_type n;
  n.op = "ScaledDotProductAttention";
  n.domain = "gpass";
  n.device = device;
  n.attrs["scale"] = scale;
  n.outputs = g[out].outputs;
  std::vector<std::pair<node_id, int>> inputs{{qin.node, qin.port}, k, {vin.node, vin.port}};
  if (bias) inputs.push_back(*bias);
  rw.replace_with(out, std::move(n), inputs);
  for (auto v : inner) rw.erase(v);  // in chain order: each one's only user is gone
  if (drop_kt) rw.erase(kt);
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
/// | `attention` | `MatMul(Softmax(Add(Mul(MatMul(q, kT), c), bias)), v)` on 4-D heads (scaling and bias optional, see `detail::fuse_attention`): `gpass::ScaledDotProductAttention(q, k, v, bias) {scale}` |
/// | `skip-layer-norm` | `LayerNormalization(Add(a, b), gamma, beta)` over the last axis: `com.microsoft::SkipLayerNormalization(a, b, gamma, beta)`, other users of the sum reading its output 3 (see `detail::fuse_skip_layer_norm`) |
///
/// `gpass::FusedConv` (`X, W, B?, Z?`; Conv's attributes, `activation`, `activation_params`)
/// computes `act(Conv(X, W, B) + Z)`, `gpass::FusedGemm` `act(Gemm(A, B, C))`,
/// `gpass::ScaledDotProductAttention` `softmax(Q K^T scale + bias) V` per batch and head,
/// `gpass::Gelu` ONNX 20's `Gelu` (for graphs of older opsets); all have op
/// schemas and Eigen CPU kernels, and export to ONNX in domain `gpass` (other runtimes do not
/// know them: this is `-O3`). `SkipLayerNormalization` is ONNX Runtime's (domain
/// `com.microsoft`), which gpass also runs. The replaced node's name goes to the fused op. Statistics:
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
        {.name = "gelu", .roots = {{"", "Erf"}}, .when = {}, .rewrite = detail::fuse_gelu<G>},
        {.name = "attention", .roots = {{"", "Softmax"}}, .when = {}, .rewrite = detail::fuse_attention<G>},
        {.name = "skip-layer-norm", .roots = {{"", "LayerNormalization"}}, .when = {}, .rewrite = detail::fuse_skip_layer_norm<G>}};
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
