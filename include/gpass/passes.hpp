// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file passes.hpp
/// Umbrella header of `gpass/passes/`: every pass that needs no optional component
/// (`passes/common/`: framework-independent passes: `dce`, `delete_disconnected`,
/// `infer_types`, `infer_shapes`),
/// and `register_builtin_passes`, which makes them available by name to the run-time
/// registry (`gpass::pass_registry<G>`).
/// \code
///   #include <gpass/passes.hpp>
///   gpass::pass_context ctx;
///   (gpass::delete_disconnected | gpass::dce)(g, ctx);
/// \endcode

#include <gpass/passes/builtin.hpp>
#include <gpass/passes/common.hpp>
#include <gpass/passes/common/dce.hpp>
#include <gpass/passes/common/delete_disconnected.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/passes/common/infer_types.hpp>
