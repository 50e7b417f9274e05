#pragma once
/// \file infer_types.hpp
/// `gpass::infer_types`: the "infer-types" pass (element types only).

#include <string_view>

#include <gpass/config.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

namespace gpass {

/// The "infer-types" pass: infers the element type (dtype) of every node output of the graph
/// and of the functions it calls, and writes it into `g[v].outputs[k]`, keeping the shapes
/// that were there (seed 004's InferType). Runs the same engine as `infer_shapes` (dtypes of
/// control flow depend on shapes of nothing, but bodies are inferred the same way) and writes
/// no values. Options, statistics and errors as `infer_shapes`, under `infer-types.`.
/// \code
///   gpass::infer_types(g, ctx);
///   g[g.at("y")].outputs[0].to_string();   // "f32[*]" when no shape was declared
/// \endcode
struct infer_types_fn : pass_base<infer_types_fn> {
  static constexpr std::string_view name = "infer-types";
  static constexpr std::string_view description = "Infer the element type of every value";
  using provides_facts = facts<fact_tags::types_inferred>;

  template <class G>
  void run(G& g, pass_context& ctx) const {
    detail::run_inference(g, ctx, name, false);
  }
};
inline constexpr infer_types_fn infer_types{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void infer_types_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
