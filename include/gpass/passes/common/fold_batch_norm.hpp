// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fold_batch_norm.hpp
/// `gpass::fold_batch_norm`: the "fold-batch-norm" pass: per-channel scales and shifts after
/// a Conv, Gemm or MatMul (a batch normalization, once `simplify-inference` lowered it) move
/// into the weights and bias.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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
#include <gpass/passes/detail/constants.hpp>

namespace gpass {

namespace detail {

/// `s` as one factor per channel: `s` broadcast against a value of rank `rank` varies only
/// along `axis` (size `channels` or 1 there, 1 elsewhere, rank at most `rank`). Empty when it
/// does not, or when `s` is not f32/f64.
inline std::vector<double> per_channel(const tensor& s, std::size_t rank, std::size_t axis, std::int64_t channels) {
  if ((s.element_type() != dtype::f32 && s.element_type() != dtype::f64) || s.rank() > rank || channels <= 0) return {};
  const std::size_t off = rank - s.rank();
  for (std::size_t d = 0; d < s.rank(); ++d) {
    const std::int64_t n = s.sizes()[d];
    if (n != 1 && !(d + off == axis && n == channels)) return {};
  }
  std::vector<double> r(static_cast<std::size_t>(channels));
  visit_dtype(s.element_type(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      auto x = s.values<T>();
      for (std::size_t c = 0; c < r.size(); ++c) r[c] = static_cast<double>(x.size() == 1 ? x[0] : x[c]);
    }
  });
  return r;
}

/// `w` with every slice along `axis` (of size `f.size()`) multiplied (`add` false) by, or
/// added (`add` true) to, its factor; an f32/f64 copy.
inline tensor scale_along(const tensor& w, std::size_t axis, const std::vector<double>& f, bool add = false) {
  tensor r = w.clone();
  std::size_t inner = 1;
  for (std::size_t d = axis + 1; d < w.rank(); ++d) inner *= static_cast<std::size_t>(w.sizes()[d]);
  const std::size_t n = f.size();
  visit_dtype(w.element_type(), [&]<class T>() {
    if constexpr (std::is_floating_point_v<T>) {
      auto x = r.values<T>();
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double k = f[(i / inner) % n];
        x[i] = static_cast<T>(add ? static_cast<double>(x[i]) + k : static_cast<double>(x[i]) * k);
      }
    }
  });
  return r;
}

/// Where a producer keeps its weights: the weight input, the axis of output channels in the
/// weights, the axis of channels in the output, the rank of the output and the bias input (-1
/// when it has none).
struct weight_layout {
  int weight = 1;
  std::size_t weight_axis = 0;
  std::size_t out_axis = 1;
  std::size_t out_rank = 0;
  int bias = -1;
  /// TF DepthwiseConv2dNative: the filter [H, W, C, M] read as [H, W, C*M] (output channel
  /// c*M + m), whose axis 2 is `weight_axis`
  bool depthwise = false;
};

/// The layout of producer `p` when it is a Conv (ONNX, channels first; `gpass::FusedConv`
/// without activation and residual; TF Conv2D and DepthwiseConv2dNative, NHWC), Gemm or
/// MatMul (ONNX, TF) with a constant f32/f64 weight; nullopt otherwise.
template <class G>
std::optional<weight_layout> layout_of(const G& g, typename G::node_id p) {
  const auto& n = g[p];
  const tensor* w = constant_input(g, p, 1);
  if (!w || (w->element_type() != dtype::f32 && w->element_type() != dtype::f64)) return std::nullopt;
  auto flag = [&](const char* k) {
    auto it = n.attrs.find(k);
    if (it == n.attrs.end()) return false;
    return it->second.template is<bool>() ? it->second.template as<bool>() : it->second.template as<std::int64_t>() != 0;
  };
  weight_layout l;
  if (n.domain.empty() && n.op == "Conv" && w->rank() >= 3) {
    l = {1, 0, 1, w->rank(), 2};
  } else if (n.domain == "gpass" && n.op == "FusedConv" && w->rank() >= 3) {
    // act(conv + B + Z): only without an activation and a residual is it a plain Conv
    if (!get_or<std::string>(n.attrs, "activation", "").empty()) return std::nullopt;
    if (g.num_inputs(p) > 3 && !g.input(p, 3).empty) return std::nullopt;
    l = {1, 0, 1, w->rank(), 2};
  } else if (n.domain.empty() && n.op == "Gemm" && w->rank() == 2) {
    l = {1, flag("transB") ? std::size_t{0} : std::size_t{1}, 1, 2, 2};
  } else if ((n.domain.empty() || n.domain == "tf") && n.op == "MatMul" && w->rank() == 2) {
    const type& t = n.outputs[0];
    if (!t.is_tensor() || !t.tensor().shape.has_rank() || t.tensor().shape.rank() < 2) return std::nullopt;
    l = {1, flag("transpose_b") ? std::size_t{0} : std::size_t{1}, t.tensor().shape.rank() - 1, t.tensor().shape.rank(), -1};
  } else if (n.domain == "tf" && n.op == "Conv2D" && w->rank() == 4) {
    if (get_or<std::string>(n.attrs, "data_format", "NHWC") != "NHWC") return std::nullopt;
    l = {1, 3, 3, 4, -1};
  } else if (n.domain == "tf" && n.op == "DepthwiseConv2dNative" && w->rank() == 4) {
    if (get_or<std::string>(n.attrs, "data_format", "NHWC") != "NHWC") return std::nullopt;
    l = {1, 2, 3, 4, -1, true};
  } else {
    return std::nullopt;
  }
  return l;
}

/// `Mul(P(x, W, B), s)` or `Add(P(x, W, B), t)` with `P` a Conv, Gemm or MatMul whose output
/// has no other use and `s`, `t` constants that vary only along P's output channels: `W` (and
/// `B`) scaled by `s`, or `t` added to `B` (Conv, Gemm: made when absent); the Mul or Add goes.
template <class G>
bool fold_into_weights(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  const bool add = g[v].op != "Mul";
  if (g.num_inputs(v) != 2) return false;
  for (int side = 0; side < 2; ++side) {
    auto pin = g.input(v, side);
    const tensor* s = constant_input(g, v, 1 - side);
    if (pin.empty || pin.port != 0 || !s || g.uses(pin.node).size() != 1) continue;
    const auto p = pin.node;
    auto l = layout_of(g, p);
    if (!l || g[p].device != g[v].device) continue;
    const tensor& w0 = *constant_input(g, p, l->weight);
    const tensor w = l->depthwise ? w0.reshaped({w0.sizes()[0], w0.sizes()[1], w0.sizes()[2] * w0.sizes()[3]}) : w0;
    if (s->element_type() != w.element_type()) continue;
    const std::int64_t channels = w.sizes()[l->weight_axis];
    auto f = per_channel(*s, l->out_rank, l->out_axis, channels);
    if (f.empty()) continue;
    const bool has_bias = l->bias >= 0 && g.num_inputs(p) > static_cast<std::size_t>(l->bias) && !g.input(p, l->bias).empty;
    const tensor* b = has_bias ? constant_input(g, p, l->bias) : nullptr;
    if (has_bias && (!b || b->element_type() != w.element_type() || b->size() != channels || b->rank() > 2 ||
                     b->sizes().back() != channels))
      continue;
    if (add && l->bias < 0) continue;  // no bias to add to (TF Conv2D, MatMul)
    const double beta = g[p].op == "Gemm" ? get_or(g[p].attrs, "beta", 1.0) : 1.0;
    if (add && has_bias && beta == 0) continue;
    auto constant = [&](tensor t) {
      // a TensorFlow graph's constants are tf::Const (as the weight's own)
      const bool tf = g[p].domain == "tf" || g[g.input(p, l->weight).node].domain == "tf";
      typename G::node_type c = make_constant_node(g[p], std::move(t), tf);
      c.name = g.unique_name(g[p].name + (add ? "/bias" : "/weight"));
      return rw.add_node(std::move(c));
    };
    if (add) {
      std::vector<double> scaled = f;
      for (auto& x : scaled) x /= has_bias ? beta : 1.0;
      tensor nb = scale_along(has_bias ? b->reshaped({channels}) : tensor(w.element_type(), {channels}), 0, scaled, true);
      auto c = constant(std::move(nb));
      if (g.num_inputs(p) > static_cast<std::size_t>(l->bias)) {
        g.set_input(p, l->bias, c, 0);  // the bias, or its empty slot
      } else {
        while (g.num_inputs(p) < static_cast<std::size_t>(l->bias)) g.add_empty_input(p);
        g.add_input(p, c, 0);
      }
      if (!has_bias && g[p].op == "Gemm") g[p].attrs.insert_or_assign("beta", attribute(1.0));
    } else {
      g.set_input(p, l->weight, constant(scale_along(w, l->weight_axis, f).reshaped(w0.sizes())), 0);
      if (has_bias) {
        g.set_input(p, l->bias, constant(scale_along(b->reshaped({channels}), 0, f)), 0);
      }
    }
    if (g[v].outputs[0].is_tensor()) g[p].outputs[0] = g[v].outputs[0];
    rw.changed(p);
    return rw.replace_keeping_name(v, p, 0);  // p's only use is v: never declines
  }
  return false;
}

}  // namespace detail

/// Pass "fold-batch-norm": moves per-channel scales and shifts into the weights of the
/// Conv, Gemm or MatMul before them (ONNX Runtime's Conv/BN, Conv/Mul and Conv/Add fusions), as
/// rewrite patterns on the graph and every function:
///
/// | pattern | rewrite |
/// |---------|---------|
/// | `scale-into-weights` | `Mul(P(x, W, B), s)` -> `P(x, W*s, B*s)` |
/// | `shift-into-bias` | `Add(P(x, W, B), t)` -> `P(x, W, B+t)` (Conv, Gemm; the bias made when absent) |
///
/// `P` is an ONNX `Conv` (channels axis 1), `Gemm` (`transB` honoured; `beta` divides the
/// shift), `MatMul` (ONNX or TF, channels last, TF `transpose_b` honoured), TF `Conv2D`
/// (NHWC, filter HWIO; scale only), TF `DepthwiseConv2dNative` (NHWC, filter [H,W,C,M],
/// output channel c*M+m; scale only) or `gpass::FusedConv` without activation and residual
/// (what `tf-layout` makes) whose weight is a constant f32/f64 and whose output has
/// no other use; `s` and `t` are constants of the weight's type that vary only along the
/// output channels (`[C,1,1]`, `[1,C,1,1]`, `[C]` for channels last, scalars). New constants
/// are made (the old ones may have other users; `dce` removes the rest). A batch
/// normalization is folded by `simplify-inference,fold-constants,fold-batch-norm`. When the
/// Mul or Add is a graph output, P takes its name. Statistics: `rewrites`, one per pattern. O(V + E)
/// plus the weights' sizes.
/// \code
///   gpass::fold_batch_norm(g, ctx);   // Add(Mul(Conv(x, W), s), t) -> Conv(x, W*s, t)
/// \endcode
struct fold_batch_norm_fn : pass_base<fold_batch_norm_fn> {
  static constexpr std::string_view name = "fold-batch-norm";
  static constexpr std::string_view description = "Fold per-channel scales and shifts into the preceding Conv, Gemm or MatMul weights";

  template <class G>
  void run(G& g, pass_context& ctx) const {
    const std::vector<rewrite_pattern<G>> ps{
        {.name = "scale-into-weights", .roots = {{"", "Mul"}, {"tf", "Mul"}}, .when = {}, .rewrite = detail::fold_into_weights<G>},
        {.name = "shift-into-bias", .roots = {{"", "Add"}}, .when = {}, .rewrite = detail::fold_into_weights<G>}};
    report_edits(ctx, {{"rewrites", apply_patterns_everywhere(g, ps, ctx)}});
  }
};

/// The `fold-batch-norm` pass object (see `fold_batch_norm_fn`).
inline constexpr fold_batch_norm_fn fold_batch_norm{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void fold_batch_norm_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
