// SPDX-License-Identifier: Apache-2.0
/// \file infer.cpp
/// A gpass unit (see gpass/config.hpp): type and shape inference (`infer-types`,
/// `infer-shapes`, `tf-infer-values`) on the default graph type, instantiated once for the
/// program with GPASS_SEPARATE_COMPILATION (<gpass/passes/common/infer_shapes.hpp> declares
/// it `extern`). Empty in header-only mode.

#ifndef GPASS_UNIT_PASSES_INFER  // a guard, as in the other units
#define GPASS_UNIT_PASSES_INFER

#include <gpass/passes/common/infer_shapes.hpp>

#if !GPASS_HEADER_ONLY
template void gpass::detail::run_inference<gpass::graph<>>(gpass::graph<>& g, gpass::pass_context& ctx,
                                                           std::string_view name, gpass::detail::inference_settings s);
#endif

#endif  // GPASS_UNIT_PASSES_INFER
