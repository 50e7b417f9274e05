// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fold_constants.hpp
/// `gpass::fold_constants`: the "fold-constants" pass (constant folding through the CPU
/// kernels, and shape subgraphs folded from inferred shapes), and the template it shares
/// with the TensorFlow frontend's "tf-constant-propagation".
///
/// Not part of `gpass/passes/common.hpp`: folding evaluates nodes with the Eigen CPU kernels,
/// so this header brings in the CPU backend. `gpass/passes/optimize.hpp` includes it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/pass/rewrite.hpp>
#include <gpass/passes/detail/constant_folding.hpp>

namespace gpass {

namespace detail {

/// The partly known value of `v:port` recorded by inference (`_incomplete_value`), or nullptr.
template <class G>
const shape* incomplete_value(const G& g, typename G::node_id v, int port) {
  const std::string key = port == 0 ? "_incomplete_value" : "_incomplete_value:" + std::to_string(port);
  auto it = g[v].attrs.find(key);
  return it != g[v].attrs.end() && it->second.template is<shape>() ? &it->second.template as<shape>() : nullptr;
}

/// ONNX `Reshape(x, s)` whose target `s` is computed (`Shape -> Gather -> Concat`) and only
/// partly known: an element that is the same symbol as `x`'s dim at its position becomes 0
/// ("copy the input dim"), one element left unknown becomes -1 ("the rest"), and the target
/// becomes a constant. Declines when `allowzero` is set or more than one element is unknown.
template <class G>
bool fold_symbolic_reshape(rewriter<G>& rw, typename G::node_id v) {
  G& g = rw.graph();
  if (g.num_inputs(v) != 2) return false;
  auto s = g.input(v, 1);
  if (s.empty || is_constant_node(g[s.node])) return false;
  if (get_or<std::int64_t>(g[v].attrs, "allowzero", 0) != 0) return false;
  const shape* target = incomplete_value(g, s.node, s.port);
  const type* xt = match::input_type(g, v, 0);
  if (!target || !target->has_rank() || !xt || !xt->is_tensor() || !xt->tensor().shape.has_rank()) return false;
  const auto& xd = xt->tensor().shape.dims();
  std::vector<std::int64_t> out(target->rank());
  int unresolved = -1;
  bool minus_one = false;
  for (std::size_t j = 0; j < out.size(); ++j) {
    const dim& d = target->dims()[j];
    if (d.is_known()) {
      out[j] = d.value();
      minus_one = minus_one || out[j] == -1;
    } else if (d.is_symbolic() && j < xd.size() && xd[j] == d) {
      out[j] = 0;
    } else if (unresolved < 0) {
      unresolved = static_cast<int>(j);
    } else {
      return false;
    }
  }
  if (unresolved >= 0) {
    if (minus_one) return false;
    out[static_cast<std::size_t>(unresolved)] = -1;
  }
  typename G::node_type c;
  c.name = g.unique_name(g[v].name + ".shape");
  c.op = "Constant";
  c.device = g[v].device;
  const auto n = static_cast<std::int64_t>(out.size());
  tensor t = tensor::from(std::move(out), {n});
  c.outputs.assign(1, type(tensor_type{dtype::int64, t.shape()}));
  c.attrs["value"] = std::move(t);
  auto k = rw.add_node(std::move(c));
  g.set_input(v, 1, k, 0);
  rw.changed(v);
  rw.changed(s.node);  // it lost a use
  return true;
}

}  // namespace detail

/// The two constant-folding passes: one engine (`detail::fold_constant_subgraphs`), declared
/// once; they differ in name and in what they read besides constants.
enum class folding_kind {
  tf,         ///< "tf-constant-propagation" (seed 000): constants only
  optimizer,  ///< "fold-constants": constants, inferred values and symbolic Reshape targets
};

/// The constant-folding pass of kind `K` (see `constant_propagation_fn` and `fold_constants_fn`).
template <folding_kind K>
struct constant_folding_pass : pass_base<constant_folding_pass<K>> {
  static constexpr std::array<std::string_view, 2> names{"tf-constant-propagation", "fold-constants"};
  static constexpr std::array<std::string_view, 2> descriptions{
      "Evaluate subgraphs without placeholder, variable or stateful ancestors with the CPU kernels and make them constants",
      "Evaluate constant subgraphs with the CPU kernels, fold values and shapes known from inference"};
  static constexpr std::string_view name = names[static_cast<int>(K)];
  static constexpr std::string_view description = descriptions[static_cast<int>(K)];
  /// Its result does not depend on dead nodes (a `dce` between two runs changes nothing for it).
  static constexpr bool dead_code_insensitive = true;
  using provides_facts = facts<fact_tags::constants_propagated>;
  static constexpr std::array options{
      option_spec{"max-bytes", option_type::integer, "1048576", "largest constant made, in bytes"},
      option_spec{"min-bytes", option_type::integer, "1024", "constants up to this size are made even when they grow the graph"},
      option_spec{"max-growth", option_type::number, "2", "a folded value may be at most this times the bytes of the constants it replaces"},
      option_spec{"inferred-values", option_type::boolean, K == folding_kind::optimizer ? "true" : "false",
                  "also fold what inference recorded (_value, _incomplete_value Reshape targets)"}};

  template <class G>
  void run(G& g, pass_context& ctx) const {
    detail::folding_limits lim;
    lim.max_bytes = this->option_int(ctx, "max-bytes");
    lim.min_bytes = this->option_int(ctx, "min-bytes");
    lim.max_growth = this->option_number(ctx, "max-growth");
    lim.inferred_values = this->option_bool(ctx, "inferred-values");
    detail::folding_counters c;
    std::int64_t reshapes = 0;
    exec::eigen_cpu cpu({.threads = 1});
    const std::vector<rewrite_pattern<G>> patterns{
        {.name = "symbolic-reshape", .roots = {{"", "Reshape"}}, .when = {}, .rewrite = detail::fold_symbolic_reshape<G>}};
    for (G* cur : all_graphs(g)) {
      if (lim.inferred_values) reshapes += static_cast<std::int64_t>(apply_patterns(*cur, patterns).rewrites);
      detail::fold_constant_subgraphs(*cur, g, cpu, lim, c, ctx);
    }
    ctx.add_statistic("no-kernel", c.no_kernel);
    ctx.add_statistic("too-large", c.too_large);
    ctx.add_statistic("failed", c.failed);
    this->report_edits(ctx, {{"folded", c.folded}, {"symbolic-reshapes", reshapes}});
  }
};

#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void constant_folding_pass<folding_kind::tf>::run<graph<>>(graph<>& g, pass_context& ctx) const;
extern template void constant_folding_pass<folding_kind::optimizer>::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

/// Pass "fold-constants": constant folding as the optimizer's cleanup level does it (ONNX
/// Runtime's constant folding, onnxsim's): the engine of `tf-constant-propagation` (see
/// `constant_propagation_fn`: every node whose inputs are constants is evaluated with the Eigen
/// CPU kernels and becomes an ONNX `Constant`, or a `tf::Const` in TensorFlow graphs, of the
/// same name; pure ops only; the same size guard and options `max-bytes`, `min-bytes`,
/// `max-growth`), plus what inference knows (option `inferred-values`, default true; run
/// `infer-values` just before, so the attributes are current):
/// - a node whose value inference recorded (`_value`: `Shape` of `x: f32[1,3,224,224]`, a
///   `Gather` of it) becomes a constant even though its inputs are not constants;
/// - an ONNX `Reshape` whose target is computed and partly known (`_incomplete_value`, from
///   `Shape -> Gather -> Concat` on symbolic dims) gets a constant target: elements equal to
///   the input's dim at the same position become 0, a single unknown one -1 (pattern
///   `symbolic-reshape`; not with `allowzero`).
/// The computations left without users are for `dce`. Statistics: `folded`,
/// `symbolic-reshapes`, `no-kernel`, `too-large`, `failed`. O(V + E).
/// \code
///   gpass::infer_values(g, ctx);
///   gpass::fold_constants(g, ctx);   // Reshape(x: f32[N,S,768], Concat(Gather(Shape(x),0), ...)) -> Reshape(x, [0,0,12,64])
/// \endcode
using fold_constants_fn = constant_folding_pass<folding_kind::optimizer>;
inline constexpr fold_constants_fn fold_constants{};

}  // namespace gpass
