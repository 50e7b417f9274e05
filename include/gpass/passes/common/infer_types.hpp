// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file infer_types.hpp
/// `gpass::infer_types`: the "infer-types" pass (element types only).

#include <gpass/config.hpp>
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
using infer_types_fn = inference_pass<inference_kind::types>;
inline constexpr infer_types_fn infer_types{};

}  // namespace gpass
