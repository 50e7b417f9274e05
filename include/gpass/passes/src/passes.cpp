// SPDX-License-Identifier: Apache-2.0
/// \file passes.cpp
/// A gpass unit (see gpass/config.hpp): every pass of gpass/passes on the default graph type,
/// instantiated once for the program with GPASS_SEPARATE_COMPILATION (each pass header
/// declares its `run<graph<>>` `extern`), so that the files that run a pass or a pipeline do
/// not compile its body again. Empty in header-only mode.

#ifndef GPASS_UNIT_PASSES  // a guard, as in the other units
#define GPASS_UNIT_PASSES

#include <gpass/passes/common/cse.hpp>
#include <gpass/passes/common/dce.hpp>
#include <gpass/passes/common/delete_disconnected.hpp>
#include <gpass/passes/common/eliminate_identities.hpp>
#include <gpass/passes/common/fold_batch_norm.hpp>
#include <gpass/passes/common/fuse_elementwise.hpp>
#include <gpass/passes/common/fuse_epilogues.hpp>
#include <gpass/passes/common/fuse_standard.hpp>
#include <gpass/passes/common/fold_constants.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/passes/common/infer_types.hpp>
#include <gpass/passes/common/inline_functions.hpp>
#include <gpass/passes/common/nchwc_layout.hpp>
#include <gpass/passes/common/simplify_inference.hpp>
#include <gpass/passes/tf/constant_propagation.hpp>
#include <gpass/passes/tf/delete_constant_ancestors.hpp>
#include <gpass/passes/tf/fold_get_tuple.hpp>
#include <gpass/passes/tf/functionalize_conds.hpp>
#include <gpass/passes/tf/functionalize_loops.hpp>
#include <gpass/passes/tf/functional_ops.hpp>
#include <gpass/passes/common/infer_values.hpp>
#include <gpass/passes/tf/insert_get_tuple.hpp>
#include <gpass/passes/tf/layout.hpp>
#include <gpass/passes/tf/tensor_arrays.hpp>
#include <gpass/passes/tf/variables_to_globals.hpp>

#if !GPASS_HEADER_ONLY
template void gpass::cse_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::fold_batch_norm_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::fuse_elementwise_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::fuse_epilogues_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::fuse_standard_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::simplify_inference_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::dce_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::eliminate_identities_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::inline_functions_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::nchwc_layout_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::delete_disconnected_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::inference_pass<gpass::inference_kind::shapes>::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::inference_pass<gpass::inference_kind::types>::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::constant_folding_pass<gpass::folding_kind::tf>::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::constant_folding_pass<gpass::folding_kind::optimizer>::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::delete_constant_ancestors_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::fold_get_tuple_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::functionalize_conds_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::functional_ops_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::functionalize_loops_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::inference_pass<gpass::inference_kind::values>::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::insert_get_tuple_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::tf_layout_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::tensor_arrays_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
template void gpass::variables_to_globals_fn::run<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx) const;
#endif

#endif  // GPASS_UNIT_PASSES
