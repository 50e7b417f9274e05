// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file constant_propagation.hpp
/// `gpass::constant_propagation`: the "tf-constant-propagation" pass (seed 000, "Tensorflow
/// Constant Propagation"): subgraphs without a Placeholder, variable or stateful ancestor are
/// evaluated by gpass's own CPU kernels and become constants.

#include <array>
#include <string_view>

#include <gpass/config.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/passes/common/fold_constants.hpp>

namespace gpass {

/// Pass "tf-constant-propagation": evaluates, in topological order, every node whose data
/// inputs are all constants (TensorFlow `Const`, ONNX `Constant`, or nodes folded before) with
/// the Eigen CPU kernels (`exec::run_kernel` on `exec::eigen_cpu::kernels()`), and replaces
/// each single-output node so evaluated by a constant node holding the result (`tf::Const`
/// `{dtype, value}` in TensorFlow graphs, ONNX `Constant` otherwise) with the same name, uses
/// and control inputs: graph outputs and fetches keep their names. Seed 000's example,
/// `Range -> Shape -> Fill`, gives a constant `Shape` (and `Fill`), so the `Fill`'s shape is known.
///
/// - Never folded: nodes without data inputs (`Placeholder`, `arg`, `get_global`, ...), so no
///   descendant of one either; ops with effects, hidden state, randomness or v1 control flow
///   (`detail::op_is_pure`); ops calling functions; ops without a CPU kernel (left as they are,
///   statistic `no-kernel`); kernels that fail (statistic `failed`, with a note); results that
///   are not tensors (lists, tuples). A node with several outputs is evaluated (its consumers
///   fold) but stays.
/// - Size limit, so that folding does not grow the model: a result of more than
///   `tf-constant-propagation.max-bytes` bytes (default 1 MiB), or of more than
///   `max-growth` times the bytes of its inputs (default 2) when above `min-bytes` (default
///   1024), is not folded (statistic `too-large`), though its consumers may fold (`Size` of
///   a big `Range`); when its size is known before running (the output type, or
///   `Fill`/`ConstantOfShape`/`Tile`/`Range`/`BroadcastTo`/`Expand` from their constant
///   inputs) and over `max-bytes`, the kernel is not even run: a `Fill` of 10^7 elements costs nothing.
/// - The folded nodes' inputs stay when they have other consumers; those left unused are for
///   `dce`. Cycles (TF v1 loops) are fine: a node on a data cycle is never constant.
/// - Runs on the graph and every function of its library (a function's arguments are not
///   constants). Statistics: `folded`, `no-kernel`, `too-large`, `failed`. Provides
///   `fact_tags::constants_propagated`.
/// \code
///   gpass::pass_context ctx;
///   ctx.set_option("tf-constant-propagation.max-bytes", "65536");
///   gpass::constant_propagation(g, ctx);
/// \endcode
using constant_propagation_fn = constant_folding_pass<folding_kind::tf>;

/// The `tf-constant-propagation` pass object (see `constant_propagation_fn`).
inline constexpr constant_propagation_fn constant_propagation{};

}  // namespace gpass
