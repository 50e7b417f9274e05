#pragma once
/// \file fuse_standard.hpp
/// `gpass::fuse_standard`: the "fuse-standard" pass: fusions whose result is standard ONNX
/// (what ONNX Runtime's basic level does): Pad into Conv, MatMul + Add into Gemm.

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
#include <gpass/pass/context.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/pass/rewrite.hpp>
#include <gpass/passes/common/fold_batch_norm.hpp>
#include <gpass/passes/detail/constants.hpp>

namespace gpass {

namespace detail {

/// `Conv(Pad(x, pads))` with zero padding of the spatial dims only: the Conv reads `x` and
/// pads itself (its `pads` grow by the Pad's). Not with `auto_pad`, nor negative pads.
template <class G>
bool fuse_pad_into_conv(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) < 2) return false;
  auto in = g.input(v, 0);
  if (in.empty || in.port != 0 || g.uses(in.node).size() != 1 || g[in.node].device != g[v].device) return false;
  auto pads = zero_pads(g, in.node);
  if (!pads || pads->size() < 6 || pads->size() % 2 != 0) return false;
  const std::size_t r = pads->size() / 2;
  if ((*pads)[0] != 0 || (*pads)[1] != 0 || (*pads)[r] != 0 || (*pads)[r + 1] != 0) return false;
  for (auto p : *pads)
    if (p < 0) return false;
  auto& attrs = g[v].attrs;
  if (auto a = attrs.find("auto_pad"); a != attrs.end() && a->second.template as<std::string>() != "NOTSET") return false;
  std::vector<std::int64_t> cp(2 * (r - 2), 0);
  if (auto a = attrs.find("pads"); a != attrs.end()) {
    cp = a->second.template as<std::vector<std::int64_t>>();
    if (cp.size() != 2 * (r - 2)) return false;
  }
  for (std::size_t i = 0; i + 2 < r; ++i) {
    cp[i] += (*pads)[2 + i];
    cp[(r - 2) + i] += (*pads)[r + 2 + i];
  }
  if (g.num_inputs(in.node) < 1 || g.input(in.node, 0).empty) return false;
  auto x = g.input(in.node, 0);
  attrs.insert_or_assign("pads", attribute(std::move(cp)));
  g.set_input(v, 0, x.node, x.port);
  rw.changed(v);
  rw.erase(in.node);
  return true;
}

/// `Add(MatMul(a, b), c)` with `a`, `b` of rank 2, the MatMul's output used once, and `c`
/// broadcast to the product's shape (the Add's output type is the MatMul's): `Gemm(a, b, c)`,
/// named as the Add. Floating-point types only.
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

}  // namespace detail

/// Pass "fuse-standard": fusions whose result is standard ONNX, so any ONNX runtime runs it
/// (ONNX Runtime's basic-level Pad and MatMul/Add fusions), as rewrite patterns on the graph
/// and every function:
///
/// | pattern | rewrite |
/// |---------|---------|
/// | `pad-into-conv` | `Conv(Pad(x))` with zero padding of the spatial dims: the Conv's `pads` grow |
/// | `matmul-add-to-gemm` | `Add(MatMul(a, b), c)`, `a` and `b` of rank 2, `c` broadcast to the product: `Gemm(a, b, c)` |
///
/// Run `infer-shapes` first (the Gemm fusion needs ranks). The replaced Add's name goes to the
/// Gemm, so graph outputs keep their names. Statistics: `rewrites`, one per pattern. O(V + E).
/// \code
///   gpass::fuse_standard(g, ctx);   // Add(MatMul(x: f32[N,4], w), b) -> Gemm(x, w, b)
/// \endcode
struct fuse_standard_fn : pass_base<fuse_standard_fn> {
  static constexpr std::string_view name = "fuse-standard";
  static constexpr std::string_view description = "Fusions into standard ONNX ops: Pad into Conv, MatMul and Add into Gemm";

  template <class G>
  void run(G& g, pass_context& ctx) const {
    const std::vector<rewrite_pattern<G>> ps{
        {.name = "pad-into-conv", .roots = {{"", "Conv"}}, .when = {}, .rewrite = detail::fuse_pad_into_conv<G>},
        {.name = "matmul-add-to-gemm", .roots = {{"", "Add"}}, .when = {}, .rewrite = detail::fuse_matmul_add<G>}};
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
