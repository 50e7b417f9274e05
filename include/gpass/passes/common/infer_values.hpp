// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file infer_values.hpp
/// `gpass::infer_values`: the "infer-values" pass (type inference with value propagation,
/// seed 000's "Constant Propagation in Type Inference").

#include <gpass/config.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

namespace gpass {

/// The "infer-values" pass: infers the type of every value of the graph and of its functions
/// and records what is known of their contents, for the passes that act on known values
/// (`gpass::delete_constant_ancestors`).
///
/// It is the `infer-shapes` engine (`gpass::type_inference`) with value recording always on;
/// this pass exists to name the fact it establishes (`fact_tags::values_inferred`) so that a
/// pipeline requiring it checks at compile time. After it runs:
/// - fully known contents of output 0 are the node attribute `_value` (a tensor; `_value:k`
///   for output k), seed 000's `node.value`: the node may be replaced by a constant;
/// - partly known integer contents (a shape with unknown dims, `Shape(x)` of `x: f32[1,?,3]`)
///   are `_incomplete_value` (a `shape` whose dims are the elements; `_incomplete_value:k`),
///   seed 000's `incomplete_value`: downstream inference uses them, nothing is deleted;
/// - values larger than `infer-values.max-recorded-elements` (default 64) are not recorded
///   (`infer-values.record-values` is ignored: this pass always records).
/// Options and statistics are those of `infer_shapes` under the `infer-values.` prefix
/// (`infer-values.opset`, `max-sweeps`, `max-loop-iterations`, `max-value-elements`).
/// Throws `gpass::error` naming the pass, node and op on incompatible types.
/// \code
///   gpass::pass_context ctx;
///   gpass::infer_values(g, ctx);
///   g[g.at("StridedSlice")].attrs.contains("_value");
/// \endcode
using infer_values_fn = inference_pass<inference_kind::values>;
inline constexpr infer_values_fn infer_values{};

}  // namespace gpass
