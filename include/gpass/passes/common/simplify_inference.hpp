// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file simplify_inference.hpp
/// `gpass::simplify_inference`: the "simplify-inference" pass (NNVM's SimplifyInference):
/// batch normalization in inference mode becomes a per-channel scale and shift, dropout goes.

#include <array>
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
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/pass/rewrite.hpp>
#include <gpass/passes/common/eliminate_identities.hpp>
#include <gpass/passes/common/fold_batch_norm.hpp>

namespace gpass {

namespace detail {

/// Adds nodes for a batch normalization's lowering through the rewriter: one helper per op
/// made, each typed (so the passes after it know its shapes without re-inference).
template <class G>
struct lowering_builder {
  rewriter<G>& rw;
  typename G::node_id anchor;  // the node being lowered: names, device, domain
  using node_id = typename G::node_id;

  node_id op(std::string op, std::vector<std::pair<node_id, int>> in, type out, attribute_map attrs = {}) {
    G& g = rw.graph();
    typename G::node_type n;
    n.name = g.unique_name(g[anchor].name + "/" + op);
    n.op = std::move(op);
    n.domain = g[anchor].domain;
    n.device = g[anchor].device;
    n.attrs = std::move(attrs);
    n.outputs.assign(1, std::move(out));
    auto v = rw.add_node(std::move(n));
    for (const auto& [src, port] : in) g.add_input(v, src, port);
    return v;
  }
  node_id constant(tensor t) {
    type ty(tensor_type{t.element_type(), t.shape()});
    attribute_map a;
    if (rw.graph()[anchor].domain == "tf") a["dtype"] = t.element_type();
    a["value"] = std::move(t);
    return op(rw.graph()[anchor].domain == "tf" ? "Const" : "Constant", {}, std::move(ty), std::move(a));
  }
};

/// A scalar tensor of element type `t` (f16, bf16, f32, f64) holding `x`; empty for other types.
inline tensor float_scalar(dtype t, double x) {
  switch (t) {
    case dtype::f32: return tensor::scalar(static_cast<float>(x));
    case dtype::f64: return tensor::scalar(x);
    case dtype::f16: return tensor::scalar(Eigen::half(static_cast<float>(x)));
    case dtype::bf16: return tensor::scalar(Eigen::bfloat16(static_cast<float>(x)));
    default: return {};
  }
}

template <class Node>
double attr_number(const Node& n, const std::string& key, double fallback) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return fallback;
  if (it->second.template is<double>()) return it->second.template as<double>();
  if (it->second.template is<std::int64_t>()) return static_cast<double>(it->second.template as<std::int64_t>());
  return fallback;
}

/// Lowers an inference-mode batch normalization, ONNX `BatchNormalization` (NCHW: channels
/// at axis 1) or TensorFlow `FusedBatchNorm{,V2,V3}` with `is_training = false` (NHWC:
/// channels last), to `y = x * inv + shift` with `inv = scale / sqrt(var + epsilon)` and
/// `shift = B - mean * inv` (reshaped to `[C, 1, ..., 1]` for channels first). The last `Add`
/// takes the node's name. Declines in training mode, when other outputs are used, when the
/// rank of `x` or the parameters' element type is unknown or differs from `x`'s, and for
/// TensorFlow NCHW. With `foldable_only`, also declines unless `fold-batch-norm` will absorb
/// the result: constant parameters, and `x` the only use of a Conv, Gemm or MatMul output
/// with a constant weight (`layout_of`).
/// True when batch normalization `v` (ONNX `BatchNormalization`, domain "tf":
/// `FusedBatchNorm*`) normalizes with its given statistics and only its result is read: its
/// 5 inputs connected, its other outputs unused, not in training mode (TF: `is_training`
/// false; ONNX: `training_mode` 0, `spatial` 1), TF's data format channels-last. What a
/// rewrite into scale and shift needs (`lower_batch_norm`, `tf-layout`'s
/// `batch-norm-to-scale-shift`).
template <class G>
bool is_inference_batch_norm(const G& g, typename G::node_id v) {
  const auto& n = g[v];
  for (std::size_t k = 1; k < n.outputs.size(); ++k)
    if (!g.uses(v, static_cast<int>(k)).empty()) return false;
  if (g.num_inputs(v) != 5) return false;
  for (int i = 0; i < 5; ++i)
    if (g.input(v, i).empty) return false;
  if (n.domain == "tf") {
    auto it = n.attrs.find("is_training");
    if (it == n.attrs.end() || !it->second.template is<bool>() || it->second.template as<bool>()) return false;
    return get_or<std::string>(n.attrs, "data_format", "NHWC").rfind("NC", 0) != 0;
  }
  return attr_number(n, "training_mode", 0) == 0 && attr_number(n, "spatial", 1) != 0;
}

template <class G>
bool lower_batch_norm(rewriter<G>& rw, typename G::node_id v, bool foldable_only) {
  G& g = rw.graph();
  const auto& n = g[v];
  const bool tf = n.domain == "tf";
  if (!is_inference_batch_norm(g, v)) return false;
  if (foldable_only) {
    for (int i = 1; i < 5; ++i)
      if (!constant_input(g, v, i)) return false;
    auto x = g.input(v, 0);
    if (x.port != 0 || g.uses(x.node).size() != 1 || !layout_of(g, x.node)) return false;
  }
  const type* xt = match::input_type(g, v, 0);
  if (!xt || !xt->is_tensor() || !xt->tensor().shape.has_rank() || xt->tensor().shape.rank() < 2) return false;
  const dtype et = xt->tensor().element;
  for (int i = 1; i < 5; ++i) {
    const type* t = match::input_type(g, v, i);
    if (!t || !t->is_tensor() || t->tensor().element != et) return false;
  }
  tensor eps = float_scalar(et, attr_number(n, "epsilon", tf ? 1e-4 : 1e-5));
  if (eps.empty()) return false;
  const std::size_t rank = xt->tensor().shape.rank();
  const type out_t = n.outputs[0].is_tensor() ? n.outputs[0] : *xt;
  const type param_t(tensor_type{et, shape{}});  // the parameters' shape is left to inference
  attribute_map T;
  if (tf) T["T"] = et;
  auto in = [&](int i) { return std::make_pair(g.input(v, i).node, g.input(v, i).port); };
  const std::string old_name = n.name;
  lowering_builder<G> b{rw, v};
  auto e = b.constant(std::move(eps));
  auto ve = b.op(tf ? "AddV2" : "Add", {in(4), {e, 0}}, *match::input_type(g, v, 4), T);
  typename G::node_id inv;
  if (tf) {
    auto rs = b.op("Rsqrt", {{ve, 0}}, *match::input_type(g, v, 4), T);
    inv = b.op("Mul", {in(1), {rs, 0}}, *match::input_type(g, v, 1), T);
  } else {
    auto sd = b.op("Sqrt", {{ve, 0}}, *match::input_type(g, v, 4));
    inv = b.op("Div", {in(1), {sd, 0}}, *match::input_type(g, v, 1));
  }
  auto mi = b.op("Mul", {in(3), {inv, 0}}, *match::input_type(g, v, 3), T);
  auto sh = b.op("Sub", {in(2), {mi, 0}}, *match::input_type(g, v, 2), T);
  if (!tf && rank > 2) {  // channels first: [C] -> [C, 1, ..., 1]
    std::vector<std::int64_t> dims(rank - 1, 1);
    dims[0] = -1;
    auto s = b.constant(tensor::from(std::move(dims), {static_cast<std::int64_t>(rank - 1)}));
    inv = b.op("Reshape", {{inv, 0}, {s, 0}}, param_t);
    sh = b.op("Reshape", {{sh, 0}, {s, 0}}, param_t);
  }
  auto y1 = b.op("Mul", {in(0), {inv, 0}}, out_t, T);
  g.rename(v, g.unique_name(old_name + ".lowered"));
  auto y = b.op(tf ? "AddV2" : "Add", {{y1, 0}, {sh, 0}}, out_t, T);
  g.rename(y, old_name);
  for (auto c : g.control_inputs(v)) g.add_control(c, y);
  for (auto s : g.control_outputs(v)) g.add_control(y, s);
  rw.replace_uses(v, 0, y, 0);
  rw.erase(v);
  return true;
}

}  // namespace detail

/// Pass "simplify-inference" (NNVM's SimplifyInference): rewrites for inference what only
/// training needs, as rewrite patterns on the graph and every function:
///
/// | pattern | rewrite |
/// |---------|---------|
/// | `batch-norm` | ONNX `BatchNormalization` (not `training_mode`), TF `FusedBatchNorm`, `V2`, `V3` (`is_training = false`, NHWC): `x * inv + shift` (see `detail::lower_batch_norm`) |
/// | `dropout` | ONNX `Dropout` without `training_mode`, mask unused: its input |
///
/// The scale and shift are ops on the parameters; with constant parameters `fold-constants`
/// makes them two constants and `fold-batch-norm` moves them into a preceding Conv, Gemm
/// or MatMul. The lowered node's extra outputs (running mean, ...) must be unused. Option
/// `batch-norm`: `all` (default, NNVM's choice), `foldable` (only where `fold-batch-norm`
/// will absorb the result: constant parameters after a single-use Conv, Gemm or MatMul with
/// a constant weight; elsewhere one batch-norm kernel beats a Mul and an Add), `none`.
/// Statistics: `rewrites`, `batch-norm`, `dropout`. O(V + E).
/// \code
///   gpass::simplify_inference(g, ctx);   // BatchNormalization(x, s, b, m, v) -> Add(Mul(x, inv), shift)
/// \endcode
struct simplify_inference_fn : pass_base<simplify_inference_fn> {
  static constexpr std::string_view name = "simplify-inference";
  static constexpr std::string_view description = "Lower inference-mode batch normalization to scale and shift, remove dropout";
  static constexpr std::array options{
      option_spec{"batch-norm", option_type::string, "all", "which batch norms to lower: all, foldable (into a Conv/Gemm/MatMul), none"}};

  template <class G>
  void run(G& g, pass_context& ctx) const {
    const std::string which = *option_text(ctx, "batch-norm");
    if (which != "all" && which != "foldable" && which != "none")
      fail("option 'simplify-inference.batch-norm' expects all, foldable or none, got '" + which + "'");
    std::vector<rewrite_pattern<G>> ps;
    if (which != "none")
      ps.push_back({.name = "batch-norm",
                    .roots = {{"", "BatchNormalization"}, {"tf", "FusedBatchNorm"}, {"tf", "FusedBatchNormV2"}, {"tf", "FusedBatchNormV3"}},
                    .when = {},
                    .rewrite = [foldable = which == "foldable"](rewriter<G>& rw, typename G::node_id v) {
                      return detail::lower_batch_norm(rw, v, foldable);
                    }});
    for (const auto& p : eliminate_identities_fn::shared_patterns<G>())
      if (p.name == "dropout") ps.push_back(p);
    report_edits(ctx, {{"rewrites", apply_patterns_everywhere(g, ps, ctx)}});
  }
};

/// The `simplify-inference` pass object (see `simplify_inference_fn`).
inline constexpr simplify_inference_fn simplify_inference{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void simplify_inference_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
