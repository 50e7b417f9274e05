// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file eliminate_identities.hpp
/// `gpass::eliminate_identities`: the "eliminate-identities" pass, written as rewrite
/// patterns (`gpass/pass/rewrite.hpp`): nodes that return their input unchanged go.

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/pass/rewrite.hpp>
#include <gpass/passes/detail/constants.hpp>

namespace gpass {

namespace detail {

/// The permutation of a Transpose node: its `perm`, or the reversal of its input's rank
/// (ONNX's default); empty when neither is known.
template <class G>
std::vector<std::int64_t> transpose_perm(const G& g, typename G::node_id v) {
  if (auto it = g[v].attrs.find("perm"); it != g[v].attrs.end()) return it->second.template as<std::vector<std::int64_t>>();
  const type* t = match::input_type(g, v, 0);
  if (!t || !t->is_tensor() || !t->tensor().shape.has_rank()) return {};
  std::vector<std::int64_t> p(t->tensor().shape.rank());
  std::iota(p.rbegin(), p.rend(), std::int64_t{0});
  return p;
}

inline bool is_identity_perm(const std::vector<std::int64_t>& p) {
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<std::int64_t>(i)) return false;
  return true;
}

template <class G>
bool has_identity_perm(const G& g, typename G::node_id v) {
  const auto p = transpose_perm(g, v);
  return !p.empty() && is_identity_perm(p);
}

/// Transpose(Transpose(x, p), q) is Transpose(x, p∘q) (element i of the result is p[q[i]]):
/// the identity goes entirely, anything else becomes one Transpose of x.
template <class G>
bool fold_transpose_pair(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) < 1) return false;
  auto in = g.input(v, 0);
  if (in.empty || in.port != 0) return false;
  const auto inner = in.node;
  if (g[inner].op != "Transpose" || !g[inner].domain.empty() || g.num_inputs(inner) < 1) return false;
  auto x = g.input(inner, 0);
  const auto p = transpose_perm(g, inner), q = transpose_perm(g, v);
  if (x.empty || p.empty() || p.size() != q.size()) return false;
  std::vector<std::int64_t> r(q.size());
  for (std::size_t i = 0; i < q.size(); ++i) {
    if (q[i] < 0 || static_cast<std::size_t>(q[i]) >= p.size()) return false;
    r[i] = p[static_cast<std::size_t>(q[i])];
  }
  if (is_identity_perm(r) && rw.replace_keeping_name(v, x.node, x.port)) {
    // gone
  } else {
    g.set_input(v, 0, x.node, x.port);
    g[v].attrs.insert_or_assign("perm", attribute(std::move(r)));
    rw.changed(v);
    rw.changed(inner);  // it lost a use
  }
  return true;
}

/// A Pad that pads nothing: ONNX `Pad` with zero padding (any value, constant mode), TF
/// `Pad`, `PadV2`, `MirrorPad` with constant paddings all zero.
template <class G>
bool pads_nothing(const G& g, typename G::node_id v) {
  std::optional<std::vector<std::int64_t>> p;
  if (g[v].domain.empty()) p = onnx_pad_amounts(g, v);
  else p = constant_ints(constant_input(g, v, 1));
  if (!p) return false;
  for (auto x : *p)
    if (x != 0) return false;
  return true;
}

/// True for ops that only reshape (the elements keep their order).
template <class Node>
bool is_reshape_like(const Node& n) {
  if (n.domain.empty()) return n.op == "Reshape" || n.op == "Squeeze" || n.op == "Unsqueeze" || n.op == "Flatten";
  return n.domain == "tf" && (n.op == "Reshape" || n.op == "Squeeze" || n.op == "ExpandDims");
}

/// `R2(R1(x))` for reshape-like `R1`, `R2` (Squeeze/Unsqueeze pairs, Reshape back, ...) whose
/// result has `x`'s type: `x`.
template <class G>
bool fold_reshape_round_trip(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) < 1) return false;
  auto in = g.input(v, 0);
  if (in.empty || in.port != 0 || !is_reshape_like(g[in.node]) || g.num_inputs(in.node) < 1) return false;
  auto x = g.input(in.node, 0);
  if (x.empty) return false;
  const type* xt = match::input_type(g, in.node, 0);
  if (!xt || !match::same_known_tensor_type(*xt, g[v].outputs[0])) return false;
  return rw.replace_keeping_name(v, x.node, x.port);
}

}  // namespace detail

/// Pass "eliminate-identities": removes nodes whose output is their input, as rewrite
/// patterns run to a fixed point (`gpass::apply_patterns`) on the graph and every function:
///
/// | pattern | rewrite |
/// |---------|---------|
/// | `identity` | `Identity` (ONNX, TF), TF `Snapshot`, `StopGradient`: the input |
/// | `dropout` | ONNX `Dropout` without `training_mode`, mask unused: the input (inference) |
/// | `cast-to-same-type` | `Cast` (ONNX, TF) whose input already has the output's type |
/// | `reshape-to-same-shape` | `Reshape`, `Flatten`, `Squeeze`, `Unsqueeze` (ONNX; TF `Reshape`, `Squeeze`) whose input already has the output's shape |
/// | `expand-to-same-shape` | ONNX `Expand`, TF `BroadcastTo` that change nothing |
/// | `transpose-pair` | `Transpose(Transpose(x))`: one Transpose, or `x` when they cancel |
/// | `identity-transpose` | a `Transpose` with the identity permutation |
/// | `pad-by-zero` | ONNX `Pad`, TF `Pad`/`PadV2`/`MirrorPad` with all paddings 0 |
/// | `reshape-round-trip` | `Squeeze(Unsqueeze(x))`, `Reshape(Flatten(x))`, ... back to `x`'s shape: `x` |
///
/// "Same type" means a known element type and dims that are all known or the same symbols
/// (run `infer-shapes` first to find more). A node whose output is a graph output (read by
/// `return`) goes only when the node before it can take its name (it has no other use and
/// is not a graph input: `rewriter::replace_keeping_name`), so graph outputs keep their names. Control edges are kept: a removed
/// node's control predecessors come before its users. Statistics: `rewrites`, and one per
/// pattern that applied (`identity`, `transpose-pair`, ...). Reports its changes; O(V + E).
/// \code
///   gpass::eliminate_identities(g, ctx);   // y = Identity(Cast<f32>(x: f32[2])) -> y reads x
/// \endcode
struct eliminate_identities_fn : pass_base<eliminate_identities_fn> {
  static constexpr std::string_view name = "eliminate-identities";
  /// Its result does not depend on dead nodes (a `dce` between two runs changes nothing for it).
  static constexpr bool dead_code_insensitive = true;
  static constexpr std::string_view description = "Remove nodes that return their input unchanged";

  /// The patterns of the pass, for graphs of type `G`.
  template <class G>
  static std::vector<rewrite_pattern<G>> patterns() {
    using namespace match;
    return {
        {.name = "identity",
         .roots = {{"", "Identity"}, {"tf", "Identity"}, {"tf", "Snapshot"}, {"tf", "StopGradient"}},
         .when = {},
         .rewrite = forward_input<G>(0)},
        {.name = "dropout",
         .roots = {{"", "Dropout"}},
         .when = {output_unused<G>(1), inputs_at_most<G>(2)},
         .rewrite = forward_input<G>(0)},
        {.name = "cast-to-same-type",
         .roots = {{"", "Cast"}, {"tf", "Cast"}},
         .when = {same_type_as_input<G>()},
         .rewrite = forward_input<G>(0)},
        {.name = "reshape-to-same-shape",
         .roots = {{"", "Reshape"}, {"", "Flatten"}, {"", "Squeeze"}, {"", "Unsqueeze"}, {"tf", "Reshape"}, {"tf", "Squeeze"}},
         .when = {same_type_as_input<G>()},
         .rewrite = forward_input<G>(0)},
        {.name = "expand-to-same-shape",
         .roots = {{"", "Expand"}, {"tf", "BroadcastTo"}},
         .when = {same_type_as_input<G>()},
         .rewrite = forward_input<G>(0)},
        {.name = "transpose-pair", .roots = {{"", "Transpose"}}, .when = {}, .rewrite = detail::fold_transpose_pair<G>,
         .benefit = 2},
        {.name = "identity-transpose",
         .roots = {{"", "Transpose"}},
         .when = {detail::has_identity_perm<G>},
         .rewrite = forward_input<G>(0)},
        {.name = "pad-by-zero",
         .roots = {{"", "Pad"}, {"tf", "Pad"}, {"tf", "PadV2"}, {"tf", "MirrorPad"}},
         .when = {detail::pads_nothing<G>},
         .rewrite = forward_input<G>(0)},
        {.name = "reshape-round-trip",
         .roots = {{"", "Reshape"}, {"", "Squeeze"}, {"", "Unsqueeze"}, {"", "Flatten"}, {"tf", "Reshape"}, {"tf", "Squeeze"}, {"tf", "ExpandDims"}},
         .when = {},
         .rewrite = detail::fold_reshape_round_trip<G>},
    };
  }

  /// `patterns<G>()`, made once per process (they depend on no option).
  template <class G>
  static const std::vector<rewrite_pattern<G>>& shared_patterns() {
    static const std::vector<rewrite_pattern<G>> p = patterns<G>();
    return p;
  }

  template <class G>
  void run(G& g, pass_context& ctx) const {
    report_edits(ctx, {{"rewrites", apply_patterns_everywhere(g, shared_patterns<G>(), ctx)}});
  }
};

/// The `eliminate-identities` pass object (see `eliminate_identities_fn`).
inline constexpr eliminate_identities_fn eliminate_identities{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void eliminate_identities_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
