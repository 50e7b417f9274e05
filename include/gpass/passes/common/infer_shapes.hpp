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
// Reads the inference options of pass `name` from the context and the graph.
template <class G>
type_inference_options infer_options(const G& g, const pass_context& ctx, std::string_view name) {
  type_inference_options o;
  std::string p(name);
  o.opset = static_cast<int>(ctx.option_int(p + ".opset", 0));
  o.max_sweeps = static_cast<std::size_t>(ctx.option_int(p + ".max-sweeps", 64));
  o.max_loop_iterations = static_cast<std::size_t>(ctx.option_int(p + ".max-loop-iterations", 16));
  o.max_value_elements = ctx.option_int(p + ".max-value-elements", 4096);
  if constexpr (requires { g.has(type_hints_key); }) {
    if (g.has(type_hints_key)) o.hints = g.get(type_hints_key);
  }
  return o;
}

template <class G>
void run_inference(G& g, pass_context& ctx, std::string_view name, bool shapes, bool always_record) {
  type_inference<G> ti(g, infer_options(g, ctx, name));
  try {
    ti.run();
    type_inference_apply_options ao;
    ao.shapes = shapes;
    std::string p(name);
    auto rv = ctx.option(p + ".record-values");
    ao.record_values = always_record || (shapes && !(rv && (*rv == "false" || *rv == "0")));
    ao.max_recorded_elements = ctx.option_int(p + ".max-recorded-elements", 64);
    ti.apply(g, ao);
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
extern template void run_inference<graph<>>(graph<>& g, pass_context& ctx, std::string_view name, bool shapes,
                                            bool always_record);
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

  template <class G>
  void run(G& g, pass_context& ctx) const {
    detail::run_inference(g, ctx, name, K != inference_kind::types, K == inference_kind::values);
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
