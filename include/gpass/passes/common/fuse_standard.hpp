// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fuse_standard.hpp
/// `gpass::fuse_standard`: the "fuse-standard" pass: fusions whose result is standard ONNX
/// (what ONNX Runtime's basic level does, and Pad into MaxPool after a Relu): Pad into Conv, MatMul + Add into Gemm, and
/// LayerNorms written out in ops into `LayerNormalization`.

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/checked.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/pass/rewrite.hpp>
#include <gpass/ops/opset.hpp>
#include <gpass/passes/common/fold_batch_norm.hpp>
#include <gpass/passes/detail/constants.hpp>

namespace gpass {

namespace detail {

/// The Pad feeding input 0 of `v` when the pad can move into `v`'s own `pads`: a zero Pad of
/// the spatial dims only (rank >= 3, batch and channel pads zero, none negative; an ONNX or TF
/// Pad, `zero_pads`), used by `v` alone, on `v`'s device, with its input present; and `v`
/// without `auto_pad`. `x` is what the Pad reads, `pads` its pads, `s` the spatial rank.
template <class G>
struct movable_pad {
  typename G::node_id pad;
  decltype(std::declval<const G&>().input(typename G::node_id{}, 0)) x;
  std::vector<std::int64_t> pads;
  std::size_t s;
};

template <class G>
std::optional<movable_pad<G>> movable_pad_input(const G& g, typename G::node_id v) {
  const auto in = g.input(v, 0);
  if (in.empty || in.port != 0 || g.uses(in.node).size() != 1 || g[in.node].device != g[v].device) return std::nullopt;
  if (g.num_inputs(in.node) < 1 || g.input(in.node, 0).empty) return std::nullopt;
  if (get_or<std::string>(g[v].attrs, "auto_pad", "NOTSET") != "NOTSET") return std::nullopt;
  auto pads = zero_pads(g, in.node);
  if (!pads || pads->size() < 6 || pads->size() % 2 != 0) return std::nullopt;
  const std::size_t r = pads->size() / 2;
  if ((*pads)[0] != 0 || (*pads)[1] != 0 || (*pads)[r] != 0 || (*pads)[r + 1] != 0) return std::nullopt;
  for (auto p : *pads)
    if (p < 0) return std::nullopt;
  return movable_pad<G>{in.node, g.input(in.node, 0), std::move(*pads), r - 2};
}

/// `v`'s `pads` (zeros when absent) plus the moved Pad's spatial pads, with checked
/// arithmetic (the attributes may be anything); nothing when `v`'s `pads` has the wrong length,
/// a sum overflows, or a side's sum is above `limit(axis)`.
template <class G, class Limit>
std::optional<std::vector<std::int64_t>> merged_pads(const G& g, typename G::node_id v, const movable_pad<G>& p,
                                                     Limit limit) {
  const std::size_t s = p.s, r = s + 2;
  auto cp = get_or<std::vector<std::int64_t>>(g[v].attrs, "pads", std::vector<std::int64_t>(2 * s, 0));
  if (cp.size() != 2 * s) return std::nullopt;
  for (std::size_t i = 0; i < s; ++i) {
    const auto lo = checked_add(cp[i], p.pads[2 + i]), hi = checked_add(cp[s + i], p.pads[r + 2 + i]);
    if (!lo || !hi) return std::nullopt;
    const std::optional<std::int64_t> most = limit(i);
    if (!most || *lo > *most || *hi > *most) return std::nullopt;
    cp[i] = *lo;
    cp[s + i] = *hi;
  }
  return cp;
}

/// `v` reads what the Pad read, with `pads` as its own; the Pad erased.
template <class G>
void move_pad_into(rewriter<G>& rw, typename G::node_id v, const movable_pad<G>& p, std::vector<std::int64_t> pads) {
  G& g = rw.graph();
  g[v].attrs.insert_or_assign("pads", attribute(std::move(pads)));
  g.set_input(v, 0, p.x.node, p.x.port);
  rw.changed(v);
  rw.erase(p.pad);
}

/// `Conv(Pad(x, pads))` with zero padding of the spatial dims only: the Conv reads `x` and
/// pads itself (its `pads` grow by the Pad's). Not with `auto_pad`, nor negative pads. Any
/// channels-first convolution with ONNX's `pads` (Conv, `gpass::FusedConv`; the Pad an ONNX
/// or TF one, `zero_pads`).
template <class G>
bool fuse_pad_into_conv(rewriter<G>& rw, typename G::node_id v) {
  const G& g = rw.graph();
  if (g.num_inputs(v) < 2) return false;
  const auto p = movable_pad_input(g, v);
  if (!p) return false;
  auto pads = merged_pads(g, v, *p, [](std::size_t) { return std::optional<std::int64_t>(std::numeric_limits<std::int64_t>::max()); });
  if (!pads) return false;
  move_pad_into(rw, v, *p, std::move(*pads));
  return true;
}

/// True when every element of output `port` of node `n` is >= 0 (or NaN): the output of a
/// `Relu`, or of a `Clip` whose minimum (attribute before opset 11, constant input 1 after) is >= 0.
template <class G>
bool never_negative(const G& g, typename G::node_id n, int port) {
  const auto& node = g[n];
  if (port != 0 || !node.domain.empty()) return false;
  if (node.op == "Relu") return true;
  if (node.op != "Clip") return false;
  if (node.attrs.count("min")) return get_or<double>(node.attrs, "min", -1.0) >= 0.0;
  const auto lo = scalar_value(constant_input(g, n, 1));
  return lo && *lo >= 0.0;
}

/// `MaxPool(Pad(x, pads))` with zero padding of the spatial dims only and `x` never negative
/// (`never_negative`: after a Relu, as Keras' ResNets pad before their first pool): the
/// MaxPool reads `x` and pads itself (its `pads` grow by the Pad's). The same maximum: a
/// MaxPool never picks its own padding, and the zeros never beat a value of x >= 0 in a
/// window that holds one, which every window does when each side's padding is below the
/// window's extent ((k - 1) * d + 1) and ceil_mode is 0. Not with `auto_pad`, nor with the
/// Indices output (they count positions of the padded input).
template <class G>
bool fuse_pad_into_max_pool(rewriter<G>& rw, typename G::node_id v) {
  const G& g = rw.graph();
  if (g.num_inputs(v) != 1 || g[v].outputs.size() != 1) return false;
  if (get_or<std::int64_t>(g[v].attrs, "ceil_mode", 0) != 0) return false;
  const auto p = movable_pad_input(g, v);
  if (!p || !never_negative(g, p->x.node, p->x.port)) return false;
  const std::size_t s = p->s;
  const auto k = get_or<std::vector<std::int64_t>>(g[v].attrs, "kernel_shape", {});
  const auto d = get_or<std::vector<std::int64_t>>(g[v].attrs, "dilations", std::vector<std::int64_t>(s, 1));
  if (k.size() != s || d.size() != s) return false;
  auto pads = merged_pads(g, v, *p, [&](std::size_t i) -> std::optional<std::int64_t> {
    if (k[i] < 1 || d[i] < 1) return std::nullopt;
    return checked_mul(k[i] - 1, d[i]);  // the window's extent less one
  });
  if (!pads) return false;
  move_pad_into(rw, v, *p, std::move(*pads));
  return true;
}

/// `Add(Reshape(y, s), b)` with `b` a constant along the last axis only, and the Reshape
/// keeping the last dim (so element `j` of every row stays in column `j`): `Reshape(Add(y, b),
/// s)`, which lets `matmul-add-to-gemm` see the bias of a MatMul done in 2-D (tf2onnx's
/// Tensordot: Reshape, MatMul, Reshape, Add).
template <class G>
bool move_bias_before_reshape(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) != 2) return false;
  for (int side = 0; side < 2; ++side) {
    auto r = g.input(v, side);
    const tensor* b = constant_input(g, v, 1 - side);
    if (r.empty || r.port != 0 || !b || g[r.node].op != "Reshape" || !g[r.node].domain.empty()) continue;
    const auto rn = r.node;
    if (g.uses(rn).size() != 1 || g.num_inputs(rn) < 1 || g[rn].device != g[v].device || !g.control_inputs(rn).empty()) continue;
    auto y = g.input(rn, 0);
    const type* yt = match::input_type(g, rn, 0);
    const type& rt = g[rn].outputs[0];
    if (y.empty || !yt || !yt->is_tensor() || !rt.is_tensor() || !match::same_known_tensor_type(rt, g[v].outputs[0])) continue;
    const auto& ys = yt->tensor().shape;
    const auto& rs = rt.tensor().shape;
    if (!ys.has_rank() || ys.rank() == 0 || !rs.has_rank() || rs.rank() == 0) continue;
    const dim& n = ys.dims().back();
    if (!n.is_known() || !(rs.dims().back() == n) || b->element_type() != yt->tensor().element) continue;
    if (b->size() != n.value() || b->sizes().empty() || b->sizes().back() != n.value()) continue;
    typename G::node_type bc = make_constant_node(g[v], b->reshaped({n.value()}), false);
    bc.name = g.unique_name(g[v].name + "/bias");
    const auto bn = rw.add_node(std::move(bc));
    typename G::node_type add;
    add.name = g.unique_name(g[v].name + "/before_reshape");
    add.op = "Add";
    add.device = g[v].device;
    add.outputs = {*yt};
    const auto a = rw.add_node(std::move(add));
    g.add_input(a, y.node, y.port);
    g.add_input(a, bn, 0);
    g.set_input(rn, 0, a, 0);
    rw.changed(rn);
    return rw.replace_keeping_name(v, rn, 0);  // rn's only use is v: never declines
  }
  return false;
}

/// `Add(MatMul(a, b), c)` with `a`, `b` of rank 2, the MatMul's output used once, and `c`
/// broadcast to the product's shape (the Add's output type is the MatMul's): `Gemm(a, b, c)`,
/// named as the Add. With `a` of rank 3 or more and a static shape (a Linear layer over a
/// batch of sequences), `b` of rank 2 and `c` a vector of N: `Reshape(Gemm(Reshape(a, [M, K]),
/// b, c), shape)`, so that the bias goes into the product (an epilogue of cuBLASLt's GEMM, one
/// pass less on the CPU). Floating-point types only.
// The rank >= 3 case of `fuse_matmul_add`: `v` = Add(m = MatMul(a, b), c), c its input `c_side`.
template <class G>
bool fuse_batched_matmul_add(rewriter<G>& rw, typename G::node_id v, typename G::node_id m, int c_side) {
  G& g = rw.graph();
  // Reshape takes its shape as an input from opset 5, Gemm broadcasts C from opset 7
  if (const int opset = graph_opset(g, ""); opset != 0 && opset < 7) return false;
  const auto cin = g.input(v, c_side);
  const auto c = cin.node;
  const int c_port = cin.port;
  const type *ta = match::input_type(g, m, 0), *tb = match::input_type(g, m, 1), *tc = match::input_type(g, v, c_side);
  if (!ta || !tb || !tc || !ta->tensor().shape.is_fully_known() || !tb->tensor().shape.is_fully_known() ||
      !tc->tensor().shape.is_fully_known())
    return false;
  const dtype t = ta->tensor().element;
  if (!is_floating(t) || tb->tensor().element != t || tc->tensor().element != t) return false;
  if (!match::same_known_tensor_type(g[m].outputs[0], g[v].outputs[0]) || !g[v].outputs[0].tensor().shape.is_fully_known()) return false;
  const auto as = ta->tensor().shape.sizes(), bs = tb->tensor().shape.sizes(), cs = tc->tensor().shape.sizes();
  const std::int64_t K = as.back(), N = bs[1];
  if (bs[0] != K || cs.size() != 1 || cs[0] != N) return false;
  std::int64_t M = 1;
  for (std::size_t d = 0; d + 1 < as.size(); ++d) M *= as[d];
  const auto out = g[v].outputs[0].tensor().shape.sizes();
  auto constant = [&](std::vector<std::int64_t> v_, const std::string& suffix) {
    const auto n = static_cast<std::int64_t>(v_.size());
    typename G::node_type k = make_constant_node(g[v], tensor::from<std::int64_t>(std::move(v_), {n}), false);
    k.name = g.unique_name(g[v].name + suffix);
    return rw.add_node(std::move(k));
  };
  auto node = [&](const char* op, const std::string& suffix, std::vector<std::int64_t> sizes) {
    typename G::node_type n;
    n.name = g.unique_name(g[v].name + suffix);
    n.op = op;
    n.device = g[v].device;
    n.outputs = {type(tensor_type{t, shape::of(sizes)})};
    return n;
  };
  const auto a = g.input(m, 0), b = g.input(m, 1);
  const auto rows = rw.add_node(node("Reshape", "/rows", {M, K}));
  g.add_input(rows, a.node, a.port);
  g.add_input(rows, constant({M, K}, "/rows_shape"), 0);
  const auto gemm = rw.add_node(node("Gemm", "/gemm", {M, N}));
  g.add_input(gemm, rows, 0);
  g.add_input(gemm, b.node, b.port);
  g.add_input(gemm, c, c_port);
  const auto shape_back = constant(out, "/shape");
  typename G::node_type back = node("Reshape", "", out);
  back.outputs = g[v].outputs;
  rw.replace_with(v, std::move(back), {{gemm, 0}, {shape_back, 0}});
  rw.erase(m);
  return true;
}

template <class G>
bool fuse_matmul_add(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) != 2) return false;
  for (int side = 0; side < 2; ++side) {
    auto mm = g.input(v, side);
    auto c = g.input(v, 1 - side);
    if (mm.empty || c.empty || mm.port != 0) continue;
    const auto m = mm.node;
    if (g[m].op != "MatMul" || !g[m].domain.empty() || g.num_inputs(m) != 2 || g.uses(m).size() != 1) continue;
    if (g[m].device != g[v].device || !g.control_inputs(m).empty() || !g.control_outputs(m).empty()) continue;
    const type *ta = match::input_type(g, m, 0), *tb = match::input_type(g, m, 1), *tc = match::input_type(g, v, 1 - side);
    auto rank = [](const type* t) -> std::size_t {
      return t && t->is_tensor() && t->tensor().shape.has_rank() ? t->tensor().shape.rank() : 99;
    };
    if (rank(ta) >= 3 && rank(ta) != 99 && rank(tb) == 2 && rank(tc) == 1) {
      if (fuse_batched_matmul_add(rw, v, m, 1 - side)) return true;
      continue;
    }
    if (rank(ta) != 2 || rank(tb) != 2 || rank(tc) > 2) continue;
    if (!is_floating(ta->tensor().element) || !match::same_known_tensor_type(g[m].outputs[0], g[v].outputs[0])) continue;
    typename G::node_type gemm;
    gemm.op = "Gemm";
    gemm.device = g[v].device;
    gemm.outputs = g[v].outputs;
    auto a = g.input(m, 0), b = g.input(m, 1);
    rw.replace_with(v, std::move(gemm), {{a.node, a.port}, {b.node, b.port}, {c.node, c.port}});
    rw.erase(m);
    return true;
  }
  return false;
}

/// Matching of a normalization written out in elementwise ops (what exporters emit for
/// LayerNorm): the nodes seen, so that the match can check that nothing else reads them.
template <class G>
struct norm_match {
  using node_id = typename G::node_id;
  using value = std::pair<node_id, int>;
  const G& g;
  std::vector<node_id> nodes;  // matched, from the output towards the input

  /// `v` is an op `op` of the default domain with one output; it joins the match.
  bool take(node_id v, std::string_view op) {
    if (!g[v].domain.empty() || g[v].op != op || g[v].outputs.size() != 1) return false;
    nodes.push_back(v);
    return true;
  }
  std::optional<value> in(node_id v, int i) const {
    if (g.num_inputs(v) <= static_cast<std::size_t>(i)) return std::nullopt;
    auto r = g.input(v, i);
    if (r.empty) return std::nullopt;
    return value{r.node, r.port};
  }
  /// A binary op `op` at `v` with a constant on one side: the other side.
  std::optional<value> with_constant(node_id v, std::string_view op, const tensor*& c) {
    if (!take(v, op) || g.num_inputs(v) != 2) return std::nullopt;
    for (int side = 0; side < 2; ++side)
      if ((c = constant_input(g, v, side))) return in(v, 1 - side);
    return std::nullopt;
  }
  /// The mean of `v`'s input over its last axis, keeping it: ReduceMean (axes [-1] or
  /// [rank-1], by attribute or constant input) or GlobalAveragePool of a rank-3 value.
  std::optional<value> mean_last(node_id v) {
    const type* t = match::input_type(g, v, 0);
    if (!t || !t->is_tensor() || !t->tensor().shape.has_rank()) return std::nullopt;
    const auto r = static_cast<std::int64_t>(t->tensor().shape.rank());
    if (g[v].domain.empty() && g[v].op == "GlobalAveragePool" && r == 3) {
      take(v, "GlobalAveragePool");
      return in(v, 0);
    }
    if (!take(v, "ReduceMean")) return std::nullopt;
    if (get_or<std::int64_t>(g[v].attrs, "keepdims", 1) == 0) return std::nullopt;
    std::optional<std::vector<std::int64_t>> axes;
    if (auto a = g[v].attrs.find("axes"); a != g[v].attrs.end()) axes = a->second.template as<std::vector<std::int64_t>>();
    else axes = constant_ints(constant_input(g, v, 1));
    if (!axes || axes->size() != 1 || ((*axes)[0] != -1 && (*axes)[0] != r - 1)) return std::nullopt;
    return in(v, 0);
  }
  /// True when every matched node's outputs are read only by matched nodes (or, for `root`, by anyone).
  bool closed(node_id root) const {
    for (auto v : nodes) {
      if (v == root) continue;
      for (const auto& u : g.uses(v))
        if (std::find(nodes.begin(), nodes.end(), u.node) == nodes.end()) return false;
      if (!g.control_inputs(v).empty() || !g.control_outputs(v).empty()) return false;
    }
    return true;
  }
};

/// The double whose shortest decimal form is the float's (0.001f -> 0.001, not
/// 0.0010000000474974513): how an f32 constant reads as a double attribute.
inline double float_as_written(float f) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f);
  if (ec != std::errc{}) return static_cast<double>(f);
  double d = static_cast<double>(f);
  std::from_chars(buf, end, d);
  return d;
}

/// A constant f32 per-channel vector of `c` elements (shape `[c]`, `[1, c]`, `[1, 1, c]`, ...).
inline bool channel_vector(const tensor* t, std::int64_t c) {
  return t && t->element_type() == dtype::f32 && t->size() == c && t->rank() >= 1 && t->sizes().back() == c;
}

/// A LayerNorm over the last axis written out in elementwise ops, rooted at its last node:
/// - the Keras / tf2onnx form: `Add(Mul(x, m), Sub(beta, Mul(mean, m)))` with
///   `m = Mul(Reciprocal(Sqrt(Add(var, eps))), gamma)`;
/// - the PyTorch form: `Add(Mul(Div(d, Sqrt(Add(var, eps))), gamma), beta)` (the Mul and Add
///   optional);
/// where `mean = Mean(x)`, `d = Sub(x, mean)`, `var = Mean(Mul(d, d) | Pow(d, 2))` and `Mean`
/// is a ReduceMean over the last axis (or GlobalAveragePool of a rank-3 value): an ONNX
/// `LayerNormalization(x, gamma, beta) {axis = -1, epsilon}` (opset 17), named as the root.
/// f32, constant `eps`, `gamma`, `beta`; nothing outside the match may read its inner nodes.
template <class G>
bool fuse_layer_norm(rewriter<G>& rw, typename G::node_id root) {
  using node_id = typename G::node_id;
  using value = std::pair<node_id, int>;
  G& g = rw.graph();
  norm_match<G> m{g, {}};
  const tensor *gamma = nullptr, *beta = nullptr, *eps = nullptr;
  std::optional<value> x, mean, d;
  // the statistics: var + eps -> Sqrt, from a node `sqrt` (checks d and mean; sets x)
  auto statistics = [&](node_id sqrt) -> bool {
    if (!m.take(sqrt, "Sqrt")) return false;
    auto ve = m.in(sqrt, 0);
    if (!ve || ve->second != 0) return false;
    auto var = m.with_constant(ve->first, "Add", eps);
    if (!var || var->second != 0 || !eps || eps->size() != 1 || eps->element_type() != dtype::f32) return false;
    auto sq = m.mean_last(var->first);
    if (!sq || sq->second != 0) return false;
    const node_id q = sq->first;
    std::optional<value> dd;
    if (g[q].domain.empty() && g[q].op == "Mul" && g.num_inputs(q) == 2 && m.in(q, 0) == m.in(q, 1)) {
      m.take(q, "Mul");
      dd = m.in(q, 0);
    } else if (const tensor* two = nullptr; (dd = m.with_constant(q, "Pow", two))) {
      if (scalar_value(two) != 2.0 || constant_input(g, q, 1) != two) return false;
    } else {
      return false;
    }
    if (d && dd != d) return false;
    if (!dd || dd->second != 0 || !m.take(dd->first, "Sub")) return false;
    d = dd;
    auto dx = m.in(d->first, 0), dm = m.in(d->first, 1);
    if (!dx || !dm || dm->second != 0) return false;
    if (mean && dm != mean) return false;
    auto mx = m.mean_last(dm->first);
    if (!mx || *mx != *dx) return false;
    mean = dm;
    x = dx;
    return true;
  };
  if (!g[root].domain.empty() || g.num_inputs(root) != 2) return false;
  bool ok = false;
  if (g[root].op == "Add") {
    // Keras form: Add(Mul(x, mm), Sub(beta, Mul(mean, mm)))
    for (int side = 0; side < 2 && !ok; ++side) {
      const auto keep = m.nodes;
      auto y1 = m.in(root, side), sh = m.in(root, 1 - side);
      if (!y1 || !sh || y1->second != 0 || sh->second != 0) break;
      if (g[sh->first].op == "Sub" && g[y1->first].op == "Mul" && m.take(root, "Add") && m.take(sh->first, "Sub") &&
          (beta = constant_input(g, sh->first, 0)) && m.take(y1->first, "Mul")) {
        auto m2 = m.in(sh->first, 1);
        if (m2 && m2->second == 0 && m.take(m2->first, "Mul")) {
          // y1 = Mul(x, mm), m2 = Mul(mean, mm): mm is the input they share
          for (int a = 0; a < 2 && !ok; ++a)
            for (int b = 0; b < 2 && !ok; ++b) {
              auto mm = m.in(y1->first, a);
              if (!mm || mm != m.in(m2->first, b) || mm->second != 0) continue;
              const auto inner = m.nodes;
              d.reset(), mean.reset(), x.reset();
              auto inv = m.with_constant(mm->first, "Mul", gamma);
              if (inv && inv->second == 0 && m.take(inv->first, "Reciprocal")) {
                auto sq = m.in(inv->first, 0);
                if (sq && sq->second == 0 && statistics(sq->first) && m.in(y1->first, 1 - a) == x &&
                    m.in(m2->first, 1 - b) == mean)
                  ok = true;
              }
              if (!ok) m.nodes = inner;
            }
        }
      }
      if (!ok) m.nodes = keep;
    }
  }
  if (!ok) {
    // PyTorch form, from the root down: [Add(., beta)] [Mul(., gamma)] Div(d, Sqrt(...))
    m.nodes.clear();
    gamma = beta = nullptr;
    d.reset(), mean.reset(), x.reset();
    node_id v = root;
    auto below = std::optional<value>{value{root, 0}};
    // fuse at the last node: a Div or Mul whose only user is a Mul or Add with a constant
    // waits for that user to be the root
    if (const auto users = g.uses(root); users.size() == 1 && g[root].op != "Add") {
      const auto& un = g[users[0].node];
      if (un.domain.empty() && (un.op == "Add" || (un.op == "Mul" && g[root].op == "Div")) &&
          g.num_inputs(users[0].node) == 2 && constant_input(g, users[0].node, 1 - users[0].dst_port))
        return false;
    }
    if (g[v].op == "Add") {
      below = m.with_constant(v, "Add", beta);
      if (!below || below->second != 0) return false;
      v = below->first;
    }
    if (g[v].op == "Mul") {
      below = m.with_constant(v, "Mul", gamma);
      if (!below || below->second != 0) return false;
      v = below->first;
    }
    if (!m.take(v, "Div") || g.num_inputs(v) != 2) return false;
    auto dv = m.in(v, 0), sv = m.in(v, 1);
    if (!dv || !sv || sv->second != 0) return false;
    d = dv;
    ok = statistics(sv->first);
    if (!ok) return false;
  }
  if (!m.closed(root)) return false;
  const type* xt = &g[x->first].outputs[static_cast<std::size_t>(x->second)];
  if (!xt->is_tensor() || xt->tensor().element != dtype::f32 || !xt->tensor().shape.has_rank() ||
      !xt->tensor().shape.dims().back().is_known())
    return false;
  const std::int64_t c = xt->tensor().shape.dims().back().value();
  if ((gamma && !channel_vector(gamma, c)) || (beta && !channel_vector(beta, c))) return false;
  auto constant = [&](tensor t, const char* what) {
    typename G::node_type n = make_constant_node(g[root], std::move(t), false);
    n.name = g.unique_name(g[root].name + what);
    return rw.add_node(std::move(n));
  };
  const node_id gn = constant(gamma ? gamma->reshaped({c}) : tensor::from(std::vector<float>(static_cast<std::size_t>(c), 1.0f), {c}), "/scale");
  std::vector<value> ins{*x, {gn, 0}};
  if (beta) ins.emplace_back(constant(beta->reshaped({c}), "/bias"), 0);
  typename G::node_type ln;
  ln.op = "LayerNormalization";
  ln.device = g[root].device;
  ln.attrs["axis"] = std::int64_t{-1};
  ln.attrs["epsilon"] = float_as_written(eps->values<float>()[0]);
  ln.outputs = g[root].outputs;
  rw.replace_with(root, std::move(ln), ins);
  for (auto v : m.nodes)  // from the output towards the input: each is unused when its turn comes
    if (v != root && !rw.erased(v) && g.uses(v).empty()) rw.erase(v);
  return true;
}

}  // namespace detail

/// Pass "fuse-standard": fusions whose result is standard ONNX, so any ONNX runtime runs it
/// (ONNX Runtime's basic-level Pad and MatMul/Add fusions), as rewrite patterns on the graph
/// and every function:
///
/// | pattern | rewrite |
/// |---------|---------|
/// | `pad-into-conv` | `Conv(Pad(x))` with zero padding of the spatial dims: the Conv's `pads` grow |
/// | `pad-into-max-pool` | `MaxPool(Pad(x))` with zero padding of the spatial dims, `x` after a Relu (or a Clip from >= 0), each side's padding below the window: the MaxPool's `pads` grow |
/// | `matmul-add-to-gemm` | `Add(MatMul(a, b), c)`, `a` and `b` of rank 2, `c` broadcast to the product: `Gemm(a, b, c)` |
/// | `bias-before-reshape` | `Add(Reshape(y, s), b)`, `b` along the last axis, which the Reshape keeps: `Reshape(Add(y, b), s)` (then a Gemm) |
/// | `layer-norm` | a LayerNorm over the last axis written out in ops (Keras/tf2onnx and PyTorch forms, see `detail::fuse_layer_norm`): `LayerNormalization` (opset 17 and later) |
///
/// Run `infer-shapes` first (the Gemm fusion needs ranks). The replaced Add's name goes to the
/// Gemm, so graph outputs keep their names. Statistics: `rewrites`, one per pattern. O(V + E).
/// \code
///   gpass::fuse_standard(g, ctx);   // Add(MatMul(x: f32[N,4], w), b) -> Gemm(x, w, b)
/// \endcode
struct fuse_standard_fn : pass_base<fuse_standard_fn> {
  static constexpr std::string_view name = "fuse-standard";
  static constexpr std::string_view description = "Fusions into standard ONNX ops: Pad into Conv and MaxPool, MatMul and Add into Gemm, LayerNormalization";

  template <class G>
  void run(G& g, pass_context& ctx) const {
    std::vector<rewrite_pattern<G>> ps{
        {.name = "pad-into-conv", .roots = {{"", "Conv"}}, .when = {}, .rewrite = detail::fuse_pad_into_conv<G>},
        {.name = "pad-into-max-pool", .roots = {{"", "MaxPool"}}, .when = {}, .rewrite = detail::fuse_pad_into_max_pool<G>},
        {.name = "matmul-add-to-gemm", .roots = {{"", "Add"}}, .when = {}, .rewrite = detail::fuse_matmul_add<G>},
        {.name = "bias-before-reshape", .roots = {{"", "Add"}}, .when = {}, .rewrite = detail::move_bias_before_reshape<G>}};
    if (graph_opset(g, "") >= 17)  // LayerNormalization is an ONNX op from opset 17
      ps.push_back({.name = "layer-norm",
                     .roots = {{"", "Add"}, {"", "Mul"}, {"", "Div"}},
                     .when = {},
                     .rewrite = detail::fuse_layer_norm<G>,
                     .benefit = 2});
    report_edits(ctx, {{"rewrites", apply_patterns_everywhere(g, ps, ctx)}});
  }
};

/// The `fuse-standard` pass object (see `fuse_standard_fn`).
inline constexpr fuse_standard_fn fuse_standard{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void fuse_standard_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
