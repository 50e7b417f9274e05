// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file layout.hpp
/// `gpass::tf_layout`: the "tf-layout" pass, TensorFlow's NHWC convolutions run as
/// `gpass::FusedConv` in the executor's NCHW layout, and the transposes that conversion puts
/// around them pushed down through the ops between convolutions until they cancel (what
/// Grappler's layout optimizer and ONNX Runtime's transpose optimizer do).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/pass/rewrite.hpp>
#include <gpass/passes/common/fold_batch_norm.hpp>
#include <gpass/passes/common/fuse_epilogues.hpp>
#include <gpass/passes/common/fuse_standard.hpp>
#include <gpass/passes/common/simplify_inference.hpp>
#include <gpass/passes/detail/constants.hpp>

namespace gpass {

namespace detail::tf_layout {

using perm = std::vector<std::int64_t>;

/// NHWC value -> NCHW (`y.dims[i] = x.dims[p[i]]`, TensorFlow's and ONNX's Transpose rule).
inline const perm& to_nchw() {
  static const perm p{0, 3, 1, 2};
  return p;
}
/// NCHW value -> NHWC.
inline const perm& to_nhwc() {
  static const perm p{0, 2, 3, 1};
  return p;
}

inline perm inverse(const perm& p) {
  perm q(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) q[static_cast<std::size_t>(p[i])] = static_cast<std::int64_t>(i);
  return q;
}

inline bool is_identity(const perm& p) {
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<std::int64_t>(i)) return false;
  return true;
}

/// The type of `Transpose(x, p)` for `x` of type `t` (unknown when `t`'s rank is not p's).
inline type transposed_type(const type& t, const perm& p) {
  if (!t.is_tensor()) return type{};
  const tensor_type& x = t.tensor();
  if (!x.shape.has_rank()) return tensor_type{x.element, shape()};
  if (x.shape.rank() != p.size()) return type{};
  std::vector<dim> d;
  d.reserve(p.size());
  for (auto i : p) d.push_back(x.shape.dims()[static_cast<std::size_t>(i)]);
  return tensor_type{x.element, shape(std::move(d))};
}

/// `Transpose(c, p)` of a constant (any element type; `c` of rank p.size()): the output in
/// order, a row of its last dim at a time, reading the input with that dim's stride (filters
/// of tens of MB are re-laid out here).
inline tensor transposed(const tensor& c, const perm& p) {
  const std::size_t r = p.size();
  std::vector<std::int64_t> out(r), in_stride(r, 1), stride(r);  // stride: input step per output dim
  for (std::size_t i = r; i-- > 1;) in_stride[i - 1] = in_stride[i] * c.sizes()[i];
  for (std::size_t i = 0; i < r; ++i) {
    out[i] = c.sizes()[static_cast<std::size_t>(p[i])];
    stride[i] = in_stride[static_cast<std::size_t>(p[i])];
  }
  tensor y(c.element_type(), out);
  if (y.size() == 0) return y;
  if (r == 0) return c.clone();
  const std::int64_t row = out[r - 1], step = stride[r - 1], rows = y.size() / row;
  auto walk = [&]<class E>(const E* src, E* dst) {
    std::vector<std::int64_t> idx(r - 1, 0);
    std::int64_t base = 0;  // input offset of the current row's first element
    for (std::int64_t k = 0; k < rows; ++k, dst += row) {
      for (std::int64_t j = 0; j < row; ++j) dst[j] = src[base + j * step];
      for (std::size_t i = r - 1; i-- > 0;) {  // next row: odometer over the outer dims
        base += stride[i];
        if (++idx[i] < out[i]) break;
        base -= stride[i] * out[i];
        idx[i] = 0;
      }
    }
  };
  if (c.element_type() == dtype::string) {
    walk(c.values<std::string>().data(), y.values<std::string>().data());
    return y;
  }
  const std::byte* src = c.raw();
  std::byte* dst = y.raw();
  switch (size_of(c.element_type())) {
    case 1: walk(reinterpret_cast<const std::uint8_t*>(src), reinterpret_cast<std::uint8_t*>(dst)); break;
    case 2: walk(reinterpret_cast<const std::uint16_t*>(src), reinterpret_cast<std::uint16_t*>(dst)); break;
    case 4: walk(reinterpret_cast<const std::uint32_t*>(src), reinterpret_cast<std::uint32_t*>(dst)); break;
    case 8: walk(reinterpret_cast<const std::uint64_t*>(src), reinterpret_cast<std::uint64_t*>(dst)); break;
    default: {  // wider elements (complex): bytes per element
      const std::size_t es = size_of(c.element_type());
      std::vector<std::int64_t> idx(r, 0);
      for (std::int64_t k = 0; k < y.size(); ++k) {
        std::int64_t off = 0;
        for (std::size_t i = 0; i < r; ++i) off += idx[i] * stride[i];
        std::memcpy(dst + static_cast<std::size_t>(k) * es, src + static_cast<std::size_t>(off) * es, es);
        for (std::size_t i = r; i-- > 0;)
          if (++idx[i] < out[i]) break;
          else idx[i] = 0;
      }
    }
  }
  return y;
}

/// The constant `p` of a `tf::Transpose` node `t`, or nullopt.
template <class G>
std::optional<perm> transpose_perm(const G& g, typename G::node_id t) {
  const auto& n = g[t];
  if (n.domain != "tf" || n.op != "Transpose" || g.num_inputs(t) != 2) return std::nullopt;
  auto p = constant_ints(constant_input(g, t, 1));
  if (!p || p->empty()) return std::nullopt;
  std::vector<char> seen(p->size(), 0);
  for (auto i : *p) {
    if (i < 0 || i >= static_cast<std::int64_t>(p->size()) || seen[static_cast<std::size_t>(i)]) return std::nullopt;
    seen[static_cast<std::size_t>(i)] = 1;
  }
  return p;
}

/// An input that reads `Transpose(x, p)`: `x` (node, port) and `p`.
template <class G>
struct transposed_input {
  typename G::node_id x;
  int port;
  perm p;
  typename G::node_id transpose;  ///< the Transpose node
};

/// Erases `v` when nothing reads it any more (a transpose the rewrite moved past), and then
/// its inputs that became unused constants: single-use conditions after it see the truth.
template <class G>
void erase_if_unused(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (rw.erased(v) || !g.uses(v).empty() || !g.control_inputs(v).empty() || !g.control_outputs(v).empty()) return;
  std::vector<typename G::node_id> ins;
  for (const auto& in : g.inputs(v))
    if (!in.empty) ins.push_back(in.node);
  rw.erase(v);
  for (auto c : ins)
    if (!rw.erased(c) && is_constant_node(g[c]) && g.uses(c).empty() && g.control_inputs(c).empty() &&
        g.control_outputs(c).empty())
      rw.erase(c);
}

template <class G>
std::optional<transposed_input<G>> transposed_at(const G& g, typename G::node_id v, int i) {
  if (static_cast<std::size_t>(i) >= g.num_inputs(v)) return std::nullopt;
  auto in = g.input(v, i);
  if (in.empty || in.port != 0 || g[in.node].device != g[v].device) return std::nullopt;
  auto p = transpose_perm(g, in.node);
  if (!p) return std::nullopt;
  auto x = g.input(in.node, 0);
  if (x.empty) return std::nullopt;
  return transposed_input<G>{x.node, x.port, std::move(*p), in.node};
}

/// No control edges in or out (the rewrites move values, not ordering constraints).
template <class G>
bool free_of_control(const G& g, typename G::node_id v) {
  return g.control_inputs(v).empty() && g.control_outputs(v).empty();
}

/// The element type of output 0, or undefined.
template <class G>
dtype element_of(const G& g, typename G::node_id v) {
  const auto& o = g[v].outputs;
  return !o.empty() && o[0].is_tensor() ? o[0].tensor().element : dtype::undefined;
}

/// Adds a `tf::Const` holding `t`, named after `base`.
template <class G>
typename G::node_id add_const(rewriter<G>& rw, typename G::node_id like, tensor t, std::string_view suffix) {
  G& g = rw.graph();
  typename G::node_type c = make_constant_node(g[like], std::move(t), true);
  c.name = g.unique_name(g[like].name + std::string(suffix));
  return rw.add_node(std::move(c));
}

/// Adds `tf::Transpose(x:port, p)` of output type `t`, named after `like`.
template <class G>
typename G::node_id add_transpose(rewriter<G>& rw, typename G::node_id like, typename G::node_id x, int port,
                                  const perm& p, type t, std::string_view suffix) {
  G& g = rw.graph();
  std::vector<std::int32_t> pv(p.begin(), p.end());
  const auto pc = add_const(rw, like, tensor::from(pv, {static_cast<std::int64_t>(p.size())}), std::string(suffix) + "/perm");
  typename G::node_type n;
  n.op = "Transpose";
  n.domain = "tf";
  n.device = g[like].device;
  n.name = g.unique_name(g[like].name + std::string(suffix));
  if (t.is_tensor()) n.attrs["T"] = t.tensor().element;
  n.attrs["Tperm"] = dtype::int32;
  n.outputs.assign(1, std::move(t));
  const auto v = rw.add_node(std::move(n));
  g.add_input(v, x, port);
  g.add_input(v, pc, 0);
  return v;
}

/// `v` replaced by `Transpose(v', p)`: `v'` is `n` (reading `inputs`), the transpose takes
/// `v`'s name, type and uses.
template <class G>
void replace_by_transposed(rewriter<G>& rw, typename G::node_id v, typename G::node_type n,
                           const std::vector<std::pair<typename G::node_id, int>>& inputs, const perm& p) {
  G& g = rw.graph();
  n.device = g[v].device;
  n.name = g.unique_name(g[v].name + "/nchw");
  const auto nv = rw.add_node(std::move(n));
  for (const auto& [src, port] : inputs) g.add_input(nv, src, port);
  std::vector<std::int32_t> pv(p.begin(), p.end());
  const auto pc = add_const(rw, v, tensor::from(pv, {static_cast<std::int64_t>(p.size())}), "/perm");
  typename G::node_type t;
  t.op = "Transpose";
  t.domain = "tf";
  if (!g[v].outputs.empty() && g[v].outputs[0].is_tensor()) t.attrs["T"] = g[v].outputs[0].tensor().element;
  t.attrs["Tperm"] = dtype::int32;
  t.outputs = g[v].outputs;
  rw.replace_with(v, std::move(t), {{nv, 0}, {pc, 0}});
}

/// A copy of node `v` to compute the same op on re-laid-out inputs: without the values
/// inference recorded for `v` (`_value*`, `_incomplete_value*`), which are in the old layout.
template <class G>
typename G::node_type relaid_copy(const G& g, typename G::node_id v) {
  typename G::node_type n = g[v];
  for (auto it = n.attrs.begin(); it != n.attrs.end();) {
    const std::string_view k = it->first;
    if (k.starts_with("_value") || k.starts_with("_incomplete_value")) it = n.attrs.erase(it);
    else ++it;
  }
  return n;
}

/// Two ints of a TensorFlow 4-value attribute in `format` ("NHWC" / "NCHW"): the H and W ones;
/// nullopt when N or C is not 1 or the attribute does not have 4 values.
inline std::optional<std::array<std::int64_t, 2>> spatial_pair(const attribute_map& attrs, const char* name,
                                                              std::string_view format) {
  auto v = get_or<std::vector<std::int64_t>>(attrs, name, {1, 1, 1, 1});
  if (v.size() != 4) return std::nullopt;
  const bool nhwc = format == "NHWC";
  const std::size_t c = nhwc ? 3 : 1, h = nhwc ? 1 : 2, w = nhwc ? 2 : 3;
  if (v[0] != 1 || v[c] != 1) return std::nullopt;
  return std::array<std::int64_t, 2>{v[h], v[w]};
}

/// `BatchToSpaceND(Conv(SpaceToBatchND(x, block, pads), f), block, crops)` with Conv a NHWC
/// `Conv2D` / `DepthwiseConv2dNative` (VALID, stride 1, no dilation; what TensorFlow makes
/// of a dilated convolution): the Conv on `x` with `dilations = block` and explicit pads
/// `pads - crops` (tf2onnx's rewrite), which `conv-to-nchw` then converts.
template <class G>
struct dilated_conv {
  typename G::node_id conv, s2b;
  std::vector<std::int64_t> block, explicit_paddings;
};

/// The pattern of `fold_space_to_batch` rooted at the BatchToSpaceND `v`, or nullopt.
template <class G>
std::optional<dilated_conv<G>> match_dilated_conv(const G& g, typename G::node_id v) {
  const auto& bn = g[v];
  if (bn.domain != "tf" || bn.op != "BatchToSpaceND" || g.num_inputs(v) != 3 || !free_of_control(g, v)) return std::nullopt;
  auto cin = g.input(v, 0);
  if (cin.empty || cin.port != 0 || g.uses(cin.node).size() != 1 || !free_of_control(g, cin.node)) return std::nullopt;
  const auto conv = cin.node;
  const auto& cn = g[conv];
  if (cn.domain != "tf" || (cn.op != "Conv2D" && cn.op != "DepthwiseConv2dNative") || g.num_inputs(conv) != 2)
    return std::nullopt;
  if (get_or<std::string>(cn.attrs, "data_format", "NHWC") != "NHWC" || get_or<std::string>(cn.attrs, "padding", "") != "VALID")
    return std::nullopt;
  auto st = spatial_pair(cn.attrs, "strides", "NHWC");
  auto dl = spatial_pair(cn.attrs, "dilations", "NHWC");
  if (!st || !dl || (*st)[0] != 1 || (*st)[1] != 1 || (*dl)[0] != 1 || (*dl)[1] != 1) return std::nullopt;
  auto sin = g.input(conv, 0);
  if (sin.empty || sin.port != 0 || g.uses(sin.node).size() != 1 || !free_of_control(g, sin.node)) return std::nullopt;
  const auto s2b = sin.node;
  if (g[s2b].domain != "tf" || g[s2b].op != "SpaceToBatchND" || g.num_inputs(s2b) != 3 || g[s2b].device != g[v].device ||
      g.input(s2b, 0).empty)
    return std::nullopt;
  auto block = constant_ints(constant_input(g, s2b, 1));
  auto block2 = constant_ints(constant_input(g, v, 1));
  auto pads = constant_ints(constant_input(g, s2b, 2));
  auto crops = constant_ints(constant_input(g, v, 2));
  if (!block || !block2 || *block != *block2 || block->size() != 2 || !pads || pads->size() != 4 || !crops ||
      crops->size() != 4)
    return std::nullopt;
  std::vector<std::int64_t> e{0, 0, 0, 0, 0, 0, 0, 0};
  for (std::size_t i = 0; i < 2; ++i) {
    if ((*block)[i] < 1) return std::nullopt;
    e[2 + 2 * i] = (*pads)[2 * i] - (*crops)[2 * i];
    e[3 + 2 * i] = (*pads)[2 * i + 1] - (*crops)[2 * i + 1];
    if (e[2 + 2 * i] < 0 || e[3 + 2 * i] < 0) return std::nullopt;
  }
  return dilated_conv<G>{conv, s2b, *block, std::move(e)};
}

template <class G>
bool fold_space_to_batch(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  auto m = match_dilated_conv(g, v);
  if (!m) return false;
  auto x = g.input(m->s2b, 0);
  auto f = g.input(m->conv, 1);
  typename G::node_type n = relaid_copy(g, m->conv);
  n.attrs.insert_or_assign("padding", attribute(std::string("EXPLICIT")));
  n.attrs.insert_or_assign("explicit_paddings", attribute(m->explicit_paddings));
  n.attrs.insert_or_assign("dilations", attribute(std::vector<std::int64_t>{1, m->block[0], m->block[1], 1}));
  n.outputs = g[v].outputs;
  rw.replace_with(v, std::move(n), {{x.node, x.port}, {f.node, f.port}});
  rw.erase(m->conv);
  erase_if_unused(rw, m->s2b);
  return true;
}

/// TF `Conv2D` / `DepthwiseConv2dNative` (either data format, constant f32 filter, known
/// input channels) -> `gpass::FusedConv` in NCHW between transposes (none for NCHW).
template <class G>
bool convert_conv(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  const auto& n = g[v];
  const bool depthwise = n.op == "DepthwiseConv2dNative";
  if (g.num_inputs(v) != 2 || !free_of_control(g, v) || n.outputs.size() != 1) return false;
  // the middle of a SpaceToBatchND / BatchToSpaceND pair: `dilated-conv` first makes it one Conv
  if (auto us = g.uses(v); us.size() == 1 && match_dilated_conv(g, us[0].node)) return false;
  const tensor* f = constant_input(g, v, 1);
  if (!f || f->element_type() != dtype::f32 || f->rank() != 4) return false;
  const std::string format = get_or<std::string>(n.attrs, "data_format", "NHWC");
  if (format != "NHWC" && format != "NCHW") return false;
  const bool nhwc = format == "NHWC";
  const type* xt = match::input_type(g, v, 0);
  if (!xt || !xt->is_tensor() || xt->tensor().element != dtype::f32 || !xt->tensor().shape.has_rank() ||
      xt->tensor().shape.rank() != 4)
    return false;
  const dim& cin = xt->tensor().shape.dims()[nhwc ? 3 : 1];
  if (!cin.is_known() || cin.value() <= 0) return false;
  const std::int64_t kh = f->sizes()[0], kw = f->sizes()[1], fi = f->sizes()[2], fo = f->sizes()[3];
  std::int64_t group = 1;
  tensor w;
  if (depthwise) {
    if (fi != cin.value()) return false;
    group = fi;
    w = transposed(*f, {2, 3, 0, 1}).reshaped({fi * fo, 1, kh, kw});  // [C,M,H,W] -> [C*M,1,H,W]
  } else {
    if (fi <= 0 || cin.value() % fi != 0) return false;
    group = cin.value() / fi;
    if (fo % group != 0) return false;
    w = transposed(*f, {3, 2, 0, 1});  // HWIO -> OIHW
  }
  auto strides = spatial_pair(n.attrs, "strides", format);
  auto dilations = spatial_pair(n.attrs, "dilations", format);
  if (!strides || !dilations) return false;
  attribute_map a;
  a["kernel_shape"] = std::vector<std::int64_t>{kh, kw};
  a["strides"] = std::vector<std::int64_t>{(*strides)[0], (*strides)[1]};
  a["dilations"] = std::vector<std::int64_t>{(*dilations)[0], (*dilations)[1]};
  a["group"] = group;
  a["activation"] = std::string();
  const std::string padding = get_or<std::string>(n.attrs, "padding", "");
  if (padding == "SAME") {
    a["auto_pad"] = std::string("SAME_UPPER");  // TensorFlow puts the odd pixel at the end
  } else if (padding == "VALID") {
    a["pads"] = std::vector<std::int64_t>{0, 0, 0, 0};
  } else if (padding == "EXPLICIT") {
    auto e = get_or<std::vector<std::int64_t>>(n.attrs, "explicit_paddings", {});
    if (e.size() != 8) return false;
    const std::size_t h = nhwc ? 1 : 2, wd = nhwc ? 2 : 3;
    if (e[0] || e[1] || e[2 * (nhwc ? 3 : 1)] || e[2 * (nhwc ? 3 : 1) + 1]) return false;
    a["pads"] = std::vector<std::int64_t>{e[2 * h], e[2 * wd], e[2 * h + 1], e[2 * wd + 1]};
  } else {
    return false;
  }
  // the NCHW input: the value a NHWC transpose was made of, or a new transpose
  std::pair<typename G::node_id, int> x;
  std::optional<typename G::node_id> reused;
  auto in = g.input(v, 0);
  if (!nhwc) {
    x = {in.node, in.port};
  } else if (auto t = transposed_at(g, v, 0); t && t->p == to_nhwc()) {
    x = {t->x, t->port};
    reused = t->transpose;
  } else {
    x = {add_transpose(rw, v, in.node, in.port, to_nchw(), transposed_type(*xt, to_nchw()), "/input_nchw"), 0};
  }
  const auto wc = add_const(rw, v, std::move(w), "/weight_oihw");
  typename G::node_type c;
  c.op = "FusedConv";
  c.domain = "gpass";
  c.attrs = std::move(a);
  c.outputs.assign(1, nhwc ? transposed_type(n.outputs[0], to_nchw()) : n.outputs[0]);
  if (nhwc) {
    replace_by_transposed(rw, v, std::move(c), {x, {wc, 0}}, to_nhwc());
  } else {
    rw.replace_with(v, std::move(c), {x, {wc, 0}});
  }
  if (reused) erase_if_unused(rw, *reused);
  return true;
}

/// `Transpose(Transpose(x, p), q)`: `Transpose(x, p∘q)`, or `x` when that is the identity.
template <class G>
bool cancel_transposes(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  auto q = transpose_perm(g, v);
  auto t = transposed_at(g, v, 0);
  if (!q || !t || t->p.size() != q->size() || !free_of_control(g, v)) return false;
  perm c(q->size());
  for (std::size_t i = 0; i < q->size(); ++i) c[i] = t->p[static_cast<std::size_t>((*q)[i])];
  if (is_identity(c)) {
    if (!rw.replace_keeping_name(v, t->x, t->port)) return false;  // declines untouched
    erase_if_unused(rw, t->transpose);
    return true;
  }
  std::vector<std::int32_t> pv(c.begin(), c.end());
  const auto pc = add_const(rw, v, tensor::from(pv, {static_cast<std::int64_t>(c.size())}), "/composed_perm");
  typename G::node_type n = relaid_copy(g, v);
  n.attrs.insert_or_assign("Tperm", attribute(dtype::int32));
  rw.replace_with(v, std::move(n), {{t->x, t->port}, {pc, 0}});
  erase_if_unused(rw, t->transpose);
  return true;
}

/// The end of a sinking rewrite: `n` (a copy of `v` for the re-laid-out inputs `ins`) gets
/// `v`'s type in the layout before `p`, replaces `v` followed by `Transpose(., p)`, and the
/// transposes it read past (`moved`) go when nothing else reads them.
template <class G>
void finish_sink(rewriter<G>& rw, typename G::node_id v, typename G::node_type n,
                 const std::vector<std::pair<typename G::node_id, int>>& ins, const perm& p,
                 const std::vector<typename G::node_id>& moved) {
  G& g = rw.graph();
  n.outputs.assign(1, transposed_type(g[v].outputs[0], inverse(p)));
  replace_by_transposed(rw, v, std::move(n), ins, p);
  for (auto t : moved) erase_if_unused(rw, t);
}

/// `Op(Transpose(x, p))`, Op element-wise: `Transpose(Op(x), p)`.
template <class G>
bool sink_unary(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) != 1 || g[v].outputs.size() != 1 || !free_of_control(g, v)) return false;
  auto t = transposed_at(g, v, 0);
  if (!t) return false;
  finish_sink(rw, v, relaid_copy(g, v), {{t->x, t->port}}, t->p, {t->transpose});
  return true;
}

/// `Op(Transpose(a, p), Transpose(b, p))` or `Op(Transpose(a, p), c)` with `c` a constant,
/// Op element-wise with broadcasting: `Transpose(Op(a, b or c'), p)`, `c'` the constant
/// brought to the rank and transposed by p's inverse. `BiasAdd` (NHWC) becomes `AddV2`.
template <class G>
bool sink_binary(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) != 2 || g[v].outputs.size() != 1 || !free_of_control(g, v)) return false;
  const bool bias_add = g[v].op == "BiasAdd";
  if (bias_add && get_or<std::string>(g[v].attrs, "data_format", "NHWC") != "NHWC") return false;
  std::array<std::optional<transposed_input<G>>, 2> t{transposed_at(g, v, 0), transposed_at(g, v, 1)};
  std::vector<std::pair<typename G::node_id, int>> ins;
  perm p;
  if (t[0] && t[1] && t[0]->p == t[1]->p) {
    p = t[0]->p;
    ins = {{t[0]->x, t[0]->port}, {t[1]->x, t[1]->port}};
  } else {
    const int side = t[0] ? 0 : t[1] ? 1 : -1;
    if (side < 0 || (bias_add && side != 0)) return false;
    p = t[static_cast<std::size_t>(side)]->p;
    const tensor* c = constant_input(g, v, 1 - side);
    if (!c || c->rank() > p.size() || c->element_type() == dtype::string) return false;
    std::vector<std::int64_t> sizes(p.size() - c->rank(), 1);
    sizes.insert(sizes.end(), c->sizes().begin(), c->sizes().end());
    const auto cc = add_const(rw, v, transposed(c->reshaped(sizes), inverse(p)), "/nchw_operand");
    ins.resize(2);
    const auto& ts = t[static_cast<std::size_t>(side)];
    ins[static_cast<std::size_t>(side)] = {ts->x, ts->port};
    ins[static_cast<std::size_t>(1 - side)] = {cc, 0};
  }
  typename G::node_type n = relaid_copy(g, v);
  if (bias_add) {
    n.op = "AddV2";
    n.attrs.erase("data_format");
  }
  std::vector<typename G::node_id> moved;
  for (const auto& ti : t)
    if (ti) moved.push_back(ti->transpose);
  finish_sink(rw, v, std::move(n), ins, p, moved);
  return true;
}

/// `Pad(Transpose(x, p), paddings)` (Pad, PadV2, MirrorPad; constant paddings):
/// `Transpose(Pad(x, paddings'), p)`.
template <class G>
bool sink_pad(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) < 2 || g[v].outputs.size() != 1 || !free_of_control(g, v)) return false;
  auto t = transposed_at(g, v, 0);
  const tensor* pads = constant_input(g, v, 1);
  if (!t || !pads || !constant_ints(pads) || pads->rank() != 2 ||
      pads->sizes()[0] != static_cast<std::int64_t>(t->p.size()) || pads->sizes()[1] != 2)
    return false;
  std::vector<std::pair<typename G::node_id, int>> ins{{t->x, t->port}, {t->x, t->port}};  // [1]: below
  for (std::size_t i = 2; i < g.num_inputs(v); ++i) {
    auto r = g.input(v, static_cast<int>(i));
    if (r.empty) return false;
    ins.emplace_back(r.node, r.port);
  }
  // row i pads dim i of Transpose(x, p), which is dim p[i] of x
  tensor np(pads->element_type(), pads->sizes());
  const std::size_t es = size_of(pads->element_type());
  for (std::size_t i = 0; i < t->p.size(); ++i)
    std::memcpy(np.raw() + static_cast<std::size_t>(t->p[i]) * 2 * es, pads->raw() + i * 2 * es, 2 * es);
  ins[1] = {add_const(rw, v, std::move(np), "/nchw_paddings"), 0};
  finish_sink(rw, v, relaid_copy(g, v), ins, t->p, {t->transpose});
  return true;
}

/// `R(Transpose(x, p), axes)` (Mean, Sum, Max, Min, Prod; constant axes): with `keep_dims`,
/// `Transpose(R(x, p[axes]), p)`; without it, `R(x, p[axes])` when the kept axes stay in
/// order (global pooling of NHWC), else nothing.
template <class G>
bool sink_reduce(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) != 2 || g[v].outputs.size() != 1 || !free_of_control(g, v)) return false;
  auto t = transposed_at(g, v, 0);
  const tensor* ax = constant_input(g, v, 1);
  auto axes = constant_ints(ax);
  if (!t || !axes) return false;
  const auto r = static_cast<std::int64_t>(t->p.size());
  std::vector<char> reduced(t->p.size(), 0);
  for (auto& a : *axes) {
    if (a < -r || a >= r) return false;
    if (a < 0) a += r;
    reduced[static_cast<std::size_t>(a)] = 1;
  }
  std::vector<std::int64_t> mapped;
  for (auto a : *axes) mapped.push_back(t->p[static_cast<std::size_t>(a)]);
  const bool keep = get_or<bool>(g[v].attrs, "keep_dims", false);
  if (!keep) {
    std::int64_t last = -1;
    for (std::size_t j = 0; j < t->p.size(); ++j) {
      if (reduced[j]) continue;
      if (t->p[j] < last) return false;
      last = t->p[j];
    }
  }
  tensor na = ax->element_type() == dtype::int32
                  ? tensor::from(std::vector<std::int32_t>(mapped.begin(), mapped.end()), {static_cast<std::int64_t>(mapped.size())})
                  : tensor::from(mapped, {static_cast<std::int64_t>(mapped.size())});
  const auto ac = add_const(rw, v, std::move(na), "/nchw_axes");
  if (keep) {
    finish_sink(rw, v, relaid_copy(g, v), {{t->x, t->port}, {ac, 0}}, t->p, {t->transpose});
  } else {
    rw.replace_with(v, relaid_copy(g, v), {{t->x, t->port}, {ac, 0}});
    erase_if_unused(rw, t->transpose);
  }
  return true;
}

/// `Pool(Transpose(x, to_nhwc))`, Pool a TF MaxPool / AvgPool in NHWC: `Transpose(Pool'(x),
/// to_nhwc)` with Pool' in NCHW (ksize, strides and explicit paddings re-ordered).
template <class G>
bool sink_pool(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) != 1 || g[v].outputs.size() != 1 || !free_of_control(g, v)) return false;
  if (get_or<std::string>(g[v].attrs, "data_format", "NHWC") != "NHWC") return false;
  auto t = transposed_at(g, v, 0);
  if (!t || t->p != to_nhwc() || element_of(g, v) != dtype::f32) return false;
  typename G::node_type n = relaid_copy(g, v);
  for (const char* k : {"ksize", "strides"}) {
    auto a = get_or<std::vector<std::int64_t>>(n.attrs, k, {});
    if (a.size() != 4) return false;
    n.attrs.insert_or_assign(k, attribute(std::vector<std::int64_t>{a[0], a[3], a[1], a[2]}));
  }
  if (auto e = get_or<std::vector<std::int64_t>>(n.attrs, "explicit_paddings", {}); !e.empty()) {
    if (e.size() != 8) return false;
    n.attrs.insert_or_assign("explicit_paddings", attribute(std::vector<std::int64_t>{e[0], e[1], e[6], e[7], e[2], e[3], e[4], e[5]}));
  }
  n.attrs.insert_or_assign("data_format", attribute(std::string("NCHW")));
  finish_sink(rw, v, std::move(n), {{t->x, t->port}}, to_nhwc(), {t->transpose});
  return true;
}

/// `ConcatV2(Transpose(x_i, p)..., axis)`, constant axis, every input transposed by p:
/// `Transpose(ConcatV2(x_i..., p[axis]), p)`.
template <class G>
bool sink_concat(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  const std::size_t m = g.num_inputs(v);
  if (m < 2 || g[v].outputs.size() != 1 || !free_of_control(g, v)) return false;
  const tensor* ax = constant_input(g, v, static_cast<int>(m - 1));
  auto axis = constant_ints(ax);
  if (!axis || axis->size() != 1) return false;
  std::vector<std::pair<typename G::node_id, int>> ins;
  std::vector<typename G::node_id> moved;
  perm p;
  for (std::size_t i = 0; i + 1 < m; ++i) {
    auto t = transposed_at(g, v, static_cast<int>(i));
    if (!t || (i > 0 && t->p != p)) return false;
    p = t->p;
    ins.emplace_back(t->x, t->port);
    moved.push_back(t->transpose);
  }
  std::int64_t a = (*axis)[0];
  const auto r = static_cast<std::int64_t>(p.size());
  if (a < -r || a >= r) return false;
  if (a < 0) a += r;
  const std::int64_t na = p[static_cast<std::size_t>(a)];
  tensor at = ax->element_type() == dtype::int32 ? tensor::scalar(static_cast<std::int32_t>(na)) : tensor::scalar(na);
  ins.emplace_back(add_const(rw, v, std::move(at), "/nchw_axis"), 0);
  finish_sink(rw, v, relaid_copy(g, v), ins, p, moved);
  return true;
}

/// TF `FusedBatchNorm` / `V2` / `V3` in inference (`is_training = false`, NHWC, f32, the
/// other outputs unused) with constant scale, offset, mean and variance, reading a transposed
/// value or a `gpass::FusedConv`: `AddV2(Mul(x, inv), shift)` with the constants `inv = scale /
/// sqrt(variance + epsilon)` and `shift = offset - mean * inv` computed here (in double), which
/// the sinking and `scale-into-weights` / `shift-into-bias` then take into the convolution.
template <class G>
bool lower_constant_batch_norm(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  const auto& n = g[v];
  if (n.outputs.empty() || !free_of_control(g, v) || !is_inference_batch_norm(g, v)) return false;
  if (get_or<std::string>(n.attrs, "data_format", "NHWC") != "NHWC") return false;  // not NDHWC
  auto x = g.input(v, 0);
  if (x.empty || element_of(g, v) != dtype::f32) return false;
  if (!transposed_at(g, v, 0) && !(g[x.node].domain == "gpass" && g[x.node].op == "FusedConv")) return false;
  std::array<const tensor*, 4> p{};
  for (int i = 1; i < 5; ++i) {
    p[static_cast<std::size_t>(i - 1)] = constant_input(g, v, i);
    const tensor* t = p[static_cast<std::size_t>(i - 1)];
    if (!t || t->element_type() != dtype::f32 || t->rank() != 1 || t->size() != p[0]->size()) return false;
  }
  const std::int64_t c = p[0]->size();
  const double eps = get_or(n.attrs, "epsilon", 1e-4);
  std::vector<float> inv(static_cast<std::size_t>(c)), shift(static_cast<std::size_t>(c));
  for (std::size_t i = 0; i < inv.size(); ++i) {
    const double k = static_cast<double>(p[0]->values<float>()[i]) /
                     std::sqrt(static_cast<double>(p[3]->values<float>()[i]) + static_cast<double>(static_cast<float>(eps)));
    inv[i] = static_cast<float>(k);
    shift[i] = static_cast<float>(static_cast<double>(p[1]->values<float>()[i]) - static_cast<double>(p[2]->values<float>()[i]) * k);
  }
  const auto ic = add_const(rw, v, tensor::from(inv, {c}), "/inv");
  const auto sc = add_const(rw, v, tensor::from(shift, {c}), "/shift");
  typename G::node_type m;
  m.op = "Mul";
  m.domain = "tf";
  m.device = n.device;
  m.name = g.unique_name(n.name + "/scaled");
  m.attrs["T"] = dtype::f32;
  m.outputs.assign(1, n.outputs[0]);
  const auto mv = rw.add_node(std::move(m));
  g.add_input(mv, x.node, x.port);
  g.add_input(mv, ic, 0);
  typename G::node_type a;
  a.op = "AddV2";
  a.domain = "tf";
  a.attrs["T"] = dtype::f32;
  a.outputs.assign(1, g[v].outputs[0]);
  rw.replace_with(v, std::move(a), {{mv, 0}, {sc, 0}});
  return true;
}

/// The `gpass::FusedConv` producing input `i` of `v` when `v` may be folded into it: output
/// 0, its only use, same device, no activation yet (and no residual when `no_residual`).
template <class G>
std::optional<typename G::node_id> open_conv(const G& g, typename G::node_id v, int i, bool no_residual) {
  auto p = fusable_producer(g, v, i);
  if (!p || g[*p].domain != "gpass" || g[*p].op != "FusedConv") return std::nullopt;
  if (!get_or<std::string>(g[*p].attrs, "activation", "").empty()) return std::nullopt;
  if (no_residual && g.num_inputs(*p) > 3) return std::nullopt;
  return p;
}

/// `Act(FusedConv(...))`, Act a TF Relu, Relu6, Sigmoid, Tanh or LeakyRelu: the activation
/// goes into the FusedConv (`activation`, `activation_params`).
template <class G>
bool fold_activation(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) != 1 || !g.control_inputs(v).empty()) return false;
  auto p = open_conv(g, v, 0, false);
  if (!p) return false;
  const std::string& op = g[v].op;
  std::string act = op;
  std::vector<double> params;
  if (op == "Relu6") {
    act = "Clip";
    params = {0.0, 6.0};
  } else if (op == "LeakyRelu") {
    params = {get_or(g[v].attrs, "alpha", 0.2)};
  } else if (op != "Relu" && op != "Sigmoid" && op != "Tanh") {
    return false;
  }
  auto& a = g[*p].attrs;
  a.insert_or_assign("activation", attribute(act));
  if (params.empty()) a.erase("activation_params");
  else a.insert_or_assign("activation_params", attribute(params));
  g[*p].outputs[0] = g[v].outputs[0];
  rw.changed(*p);
  return rw.replace_keeping_name(v, *p, 0);
}

/// `Add(FusedConv(x, W, B), z)` (TF Add / AddV2), `z` of the same type and not per-channel
/// constant: `FusedConv(x, W, B, z)` (the residual).
template <class G>
bool fold_residual(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) != 2 || !g.control_inputs(v).empty()) return false;
  for (int side = 0; side < 2; ++side) {
    auto p = open_conv(g, v, side, true);
    if (!p) continue;
    auto z = residual_operand(g, v, side, *p);
    if (!z) continue;
    if (g.num_inputs(*p) == 2) g.add_empty_input(*p);
    g.add_input(*p, z->first, z->second);
    rw.changed(*p);
    return rw.replace_keeping_name(v, *p, 0);
  }
  return false;
}

}  // namespace detail::tf_layout

/// Pass "tf-layout": TensorFlow convolutions run in the executor's layout (Grappler's layout
/// optimizer, ONNX Runtime's transpose optimizer), as rewrite patterns on the graph and every
/// function:
///
/// | pattern | rewrite |
/// |---------|---------|
/// | `conv-to-nchw` | TF `Conv2D` / `DepthwiseConv2dNative` with a constant f32 filter (NHWC: between `Transpose`s; NCHW: directly) -> `gpass::FusedConv` (filter to OIHW, depthwise as `group` = channels; SAME -> `SAME_UPPER`, VALID, EXPLICIT; strides, dilations) |
/// | `dilated-conv` | `BatchToSpaceND(Conv2D(SpaceToBatchND(x)))` (how TensorFlow writes a dilated convolution) -> one `Conv2D` with `dilations` and explicit pads |
/// | `cancel-transposes` | `Transpose(Transpose(x, p), q)` -> `Transpose(x, p∘q)`, or `x` |
/// | `sink-unary` | `Op(Transpose(x, p))`, Op element-wise (Relu, Relu6, Sigmoid, Cast, ...) -> `Transpose(Op(x), p)` |
/// | `sink-binary` | `Op(Transpose(a, p), Transpose(b, p))` or with a constant (re-laid out) -> `Transpose(Op(a, b), p)`; `BiasAdd` becomes `AddV2` |
/// | `sink-pad` | `Pad(Transpose(x, p))` (Pad, PadV2, MirrorPad) -> `Transpose(Pad(x), p)` |
/// | `sink-reduce` | `Mean/Sum/Max/Min/Prod(Transpose(x, p), axes)` -> reduced over `p[axes]` (no transpose after when the kept axes stay in order: global pooling) |
/// | `sink-pool` | `MaxPool/AvgPool(Transpose(x, NCHW->NHWC))`, NHWC, f32 -> `Transpose(Pool(x) in NCHW)` |
/// | `sink-concat` | `ConcatV2(Transpose(x_i, p)..., axis)` -> `Transpose(ConcatV2(x_i..., p[axis]), p)` |
/// | `batch-norm-to-scale-shift` | inference `FusedBatchNorm*` (NHWC, constant statistics) after a convolution: `AddV2(Mul(x, inv), shift)` with constants, then folded |
/// | `scale-into-weights`, `shift-into-bias` | per-channel `Mul` / `Add` / `AddV2` constants after a FusedConv into its weights and bias (`fold-batch-norm`'s rewrite) |
/// | `residual-into-conv` | `AddV2(FusedConv(x, W, B), z)` -> `FusedConv(x, W, B, z)` |
/// | `activation-into-conv` | `Relu`, `Relu6` (Clip 0..6), `Sigmoid`, `Tanh`, `LeakyRelu` after a FusedConv -> its `activation` |
/// | `pad-into-conv` | `FusedConv(Pad(x))`, zeros on H and W only -> the FusedConv's `pads` (`fuse-standard`'s rewrite) |
///
/// Transposes that remain sit where an op that keeps NHWC (Reshape, SpaceToDepth, a graph
/// output...) reads the value. Run `infer-shapes` first (the conversion needs the input
/// channels; `-O3` runs the pass after `-O2`). A graph without TensorFlow ops is left at once.
/// Statistics: `rewrites`, one per pattern. Each rewrite is local and moves a transpose one
/// node down: on CNNs about one rewrite per node (the driver caps them at 8 per node), plus
/// the filters' sizes; nothing recurses.
/// \code
///   gpass::tf_layout(g, ctx);   // tf::Conv2D(x: f32[1,8,8,3], w) -> Transpose(gpass::FusedConv(Transpose(x)))
/// \endcode
struct tf_layout_fn : pass_base<tf_layout_fn> {
  static constexpr std::string_view name = "tf-layout";
  static constexpr std::string_view description =
      "Run TensorFlow NHWC convolutions as gpass::FusedConv in NCHW and cancel the transposes around them";

  template <class G>
  static std::vector<rewrite_pattern<G>> patterns() {
    namespace d = detail::tf_layout;
    std::vector<op_ref> unary, binary;
    for (std::string_view op : {"Relu", "Relu6", "Elu", "Selu", "LeakyRelu", "Sigmoid", "Tanh", "Softplus", "Softsign",
                                "Neg", "Abs", "Sqrt", "Rsqrt", "Square", "Exp", "Expm1", "Log", "Log1p", "Floor", "Ceil",
                                "Round", "Rint", "Sign", "Reciprocal", "Inv", "Erf", "Cast", "Identity", "Sin", "Cos",
                                "Swish", "Gelu", "IsNan", "LogicalNot"})
      unary.push_back({"tf", std::string(op)});
    for (std::string_view op : {"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "Maximum", "Minimum",
                                "SquaredDifference", "Pow", "FloorDiv", "FloorMod", "BiasAdd", "LogicalAnd", "LogicalOr"})
      binary.push_back({"tf", std::string(op)});
    return {
        {.name = "conv-to-nchw",
         .roots = {{"tf", "Conv2D"}, {"tf", "DepthwiseConv2dNative"}},
         .when = {},
         .rewrite = d::convert_conv<G>},
        {.name = "dilated-conv", .roots = {{"tf", "BatchToSpaceND"}}, .when = {}, .rewrite = d::fold_space_to_batch<G>},
        {.name = "cancel-transposes", .roots = {{"tf", "Transpose"}}, .when = {}, .rewrite = d::cancel_transposes<G>},
        {.name = "activation-into-conv",
         .roots = {{"tf", "Relu"}, {"tf", "Relu6"}, {"tf", "Sigmoid"}, {"tf", "Tanh"}, {"tf", "LeakyRelu"}},
         .when = {},
         .rewrite = d::fold_activation<G>,
         .benefit = 2},
        {.name = "sink-unary", .roots = unary, .when = {}, .rewrite = d::sink_unary<G>},
        {.name = "scale-into-weights", .roots = {{"tf", "Mul"}}, .when = {}, .rewrite = detail::fold_into_weights<G>, .benefit = 2},
        {.name = "shift-into-bias",
         .roots = {{"tf", "Add"}, {"tf", "AddV2"}},
         .when = {},
         .rewrite = detail::fold_into_weights<G>,
         .benefit = 2},
        {.name = "residual-into-conv", .roots = {{"tf", "Add"}, {"tf", "AddV2"}}, .when = {}, .rewrite = d::fold_residual<G>},
        {.name = "sink-binary", .roots = binary, .when = {}, .rewrite = d::sink_binary<G>, .benefit = 3},
        {.name = "sink-pad",
         .roots = {{"tf", "Pad"}, {"tf", "PadV2"}, {"tf", "MirrorPad"}},
         .when = {},
         .rewrite = d::sink_pad<G>},
        {.name = "sink-reduce",
         .roots = {{"tf", "Mean"}, {"tf", "Sum"}, {"tf", "Max"}, {"tf", "Min"}, {"tf", "Prod"}},
         .when = {},
         .rewrite = d::sink_reduce<G>},
        {.name = "sink-concat", .roots = {{"tf", "ConcatV2"}}, .when = {}, .rewrite = d::sink_concat<G>},
        {.name = "batch-norm-to-scale-shift",
         .roots = {{"tf", "FusedBatchNorm"}, {"tf", "FusedBatchNormV2"}, {"tf", "FusedBatchNormV3"}},
         .when = {},
         .rewrite = d::lower_constant_batch_norm<G>},
        {.name = "sink-pool", .roots = {{"tf", "MaxPool"}, {"tf", "AvgPool"}}, .when = {}, .rewrite = d::sink_pool<G>},
        {.name = "pad-into-conv", .roots = {{"gpass", "FusedConv"}}, .when = {}, .rewrite = detail::fuse_pad_into_conv<G>},
    };
  }

  template <class G>
  void run(G& g, pass_context& ctx) const {
    static const std::vector<rewrite_pattern<G>> ps = patterns<G>();
    // every pattern is rooted at a TensorFlow op: other graphs (ONNX at -O3) are left at once
    auto has_tf_node = [](const G& h) {
      for (auto v : h.nodes())
        if (h[v].domain == "tf") return true;
      return false;
    };
    bool tf = false;
    for (G* cur : all_graphs(g)) tf = tf || has_tf_node(*cur);
    report_edits(ctx, {{"rewrites", tf ? apply_patterns_everywhere(g, ps, ctx) : std::int64_t{0}}});
  }
};

/// The `tf-layout` pass object (see `tf_layout_fn`).
inline constexpr tf_layout_fn tf_layout{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void tf_layout_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
