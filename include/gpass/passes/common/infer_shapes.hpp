// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file infer_shapes.hpp
/// `gpass::infer_shapes`: the "infer-shapes" pass (types, symbolic shapes and known values).

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <tuple>

#include <gpass/analysis/type_inference.hpp>
#include <gpass/config.hpp>
#include <gpass/core/error.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>

namespace gpass {

namespace detail {
/// What an inference pass was asked for (its options, read by `inference_pass::run`).
struct inference_settings {
  type_inference_options inference;
  type_inference_apply_options apply;
};

template <class G>
void run_inference(G& g, pass_context& ctx, std::string_view name, inference_settings s) {
  if constexpr (requires { g.has(type_hints_key); }) {
    if (g.has(type_hints_key)) s.inference.hints = g.get(type_hints_key);
  }
  type_inference<G> ti(g, s.inference);
  try {
    ti.run();
    ti.apply(g, s.apply);
  } catch (const error& e) {
    throw e.with_pass(std::string(name));
  }
  ctx.add_statistic("unknown-outputs", static_cast<std::int64_t>(ti.num_unknown()));
  ctx.add_statistic("sweeps", static_cast<std::int64_t>(ti.num_sweeps()));
  ctx.add_statistic("functions", static_cast<std::int64_t>(ti.functions().size()));
  for (const auto& n : ti.notes()) ctx.note(n);
}
#if !GPASS_HEADER_ONLY
// Inference on the default graph type is instantiated once, by the unit passes/src/infer.cpp.
extern template void run_inference<graph<>>(graph<>& g, pass_context& ctx, std::string_view name,
                                            inference_settings s);
#endif
}  // namespace detail

/// The three inference passes, `infer_types`, `infer_shapes` and `infer_values`: one engine
/// (`detail::run_inference`), declared once; they differ in their name (the prefix of their
/// options and statistics), what they write and the facts they provide.
enum class inference_kind {
  types,   ///< "infer-types": element types only
  shapes,  ///< "infer-shapes": types, symbolic shapes and (option) known values
  values,  ///< "infer-values": types, shapes and known values, always recorded
};

/// The inference pass of kind `K` (see the aliases `infer_types_fn`, `infer_shapes_fn`,
/// `infer_values_fn` for each one's contract).
template <inference_kind K>
struct inference_pass : pass_base<inference_pass<K>> {
  static constexpr std::array<std::string_view, 3> names{"infer-types", "infer-shapes", "infer-values"};
  static constexpr std::array<std::string_view, 3> descriptions{
      "Infer the element type of every value",
      "Infer element types and (symbolic) shapes of every value, following shapes computed in the graph",
      "Infer types and shapes and record known (_value) and partly known (_incomplete_value) contents"};
  static constexpr std::string_view name = names[static_cast<int>(K)];
  static constexpr std::string_view description = descriptions[static_cast<int>(K)];
  using provides_facts = std::tuple_element_t<
      static_cast<std::size_t>(K),
      std::tuple<facts<fact_tags::types_inferred>, facts<fact_tags::shapes_inferred, fact_tags::types_inferred>,
                 facts<fact_tags::types_inferred, fact_tags::shapes_inferred, fact_tags::values_inferred>>>;
  /// Inference only establishes its facts: a pipeline skips it on a graph that holds them.
  static constexpr bool skip_when_held = true;
  /// Its result does not depend on dead nodes (a `dce` between two runs changes nothing for it).
  static constexpr bool dead_code_insensitive = true;
  static constexpr std::array options{
      option_spec{"opset", option_type::integer, "0", "ONNX opset of the schemas (0: the graph's `opset` attribute, else the newest)"},
      option_spec{"max-sweeps", option_type::integer, "64", "sweeps over the graph before giving up on a fixed point"},
      option_spec{"max-loop-iterations", option_type::integer, "16", "iterations of a loop body before its carried dims widen"},
      option_spec{"max-value-elements", option_type::integer, "4096", "largest value propagated through the graph, in elements"},
      option_spec{"record-values", option_type::boolean, "true", "write known values as `_value` attributes (infer-shapes; infer-values always does)"},
      option_spec{"max-recorded-elements", option_type::integer, "64", "largest value written as an attribute, in elements"}};

  template <class G>
  void run(G& g, pass_context& ctx) const {
    detail::inference_settings s;
    s.inference.opset = static_cast<int>(this->option_int(ctx, "opset"));
    s.inference.max_sweeps = static_cast<std::size_t>(this->option_int(ctx, "max-sweeps"));
    s.inference.max_loop_iterations = static_cast<std::size_t>(this->option_int(ctx, "max-loop-iterations"));
    s.inference.max_value_elements = this->option_int(ctx, "max-value-elements");
    s.apply.shapes = K != inference_kind::types;
    s.apply.record_values =
        K == inference_kind::values || (K == inference_kind::shapes && this->option_bool(ctx, "record-values"));
    s.apply.max_recorded_elements = this->option_int(ctx, "max-recorded-elements");
    detail::run_inference(g, ctx, name, s);
  }
};

#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void inference_pass<inference_kind::types>::run<graph<>>(graph<>& g, pass_context& ctx) const;
extern template void inference_pass<inference_kind::shapes>::run<graph<>>(graph<>& g, pass_context& ctx) const;
extern template void inference_pass<inference_kind::values>::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

/// The "infer-shapes" pass: infers the type of every node output of the graph and of the
/// functions it calls (element type and shape, with symbolic dims) with
/// `gpass::type_inference`, and writes them into `g[v].outputs[k]`.
///
/// - Starts from declared types (graph inputs, importer annotations) and the hints in the
///   graph attribute `type_hints_key`; sweeps to a fixed point (seed 004's InferShape).
/// - Shapes computed in the graph are followed (seed 000): `Shape -> Gather -> Concat ->
///   Reshape` makes the Reshape's shape known or symbolic. Known contents are recorded as
///   node attributes `_value` / `_incomplete_value` (port k > 0: `_value:k`, ...), at most
///   64 elements (option `infer-shapes.max-recorded-elements`; `infer-shapes.record-values`
///   = `false` turns it off).
/// - Loops widen carried dims that change to fresh symbols; If joins its branches.
/// - Options (pass context): `infer-shapes.opset` (default: graph attribute `opset`, else the
///   newest), `max-sweeps`, `max-loop-iterations`, `max-value-elements`.
/// - Statistics: `infer-shapes.unknown-outputs` (ports not fully known; also the graph
///   attribute `unknown_outputs_key`), `infer-shapes.sweeps`, `infer-shapes.functions`.
/// - Throws `gpass::error` naming the pass, node and op when shapes are incompatible:
///   `pass 'infer-shapes': node 'add' (op Add): incompatible dims 3 and 4 in input 1`.
/// \code
///   gpass::pass_context ctx;
///   gpass::infer_shapes(g, ctx);
///   g[g.at("y")].outputs[0].to_string();   // "f32[n,12]"
/// \endcode
using infer_shapes_fn = inference_pass<inference_kind::shapes>;
inline constexpr infer_shapes_fn infer_shapes{};

}  // namespace gpass
