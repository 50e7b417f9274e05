// SPDX-License-Identifier: Apache-2.0
/// \file onnx_schemas.cpp
/// A gpass unit (see gpass/config.hpp): the ONNX default-domain op schemas,
/// `gpass::register_onnx_ops`. Compiled once with GPASS_SEPARATE_COMPILATION, or included by
/// <gpass/ops/registry.hpp> in header-only mode.

#ifndef GPASS_UNIT_ONNX_SCHEMAS  // a guard: in header-only mode a unit is also included as a header
#define GPASS_UNIT_ONNX_SCHEMAS

#include <gpass/ops/onnx/register.hpp>
#include <gpass/ops/registry.hpp>

// Families in the order of the ONNX operator documentation's sections.
GPASS_DECL void gpass::register_onnx_ops(op_registry& r) {
  register_onnx_elementwise_ops(r);
  register_onnx_logical_ops(r);
  register_onnx_reduction_ops(r);
  register_onnx_nn_ops(r);
  register_onnx_nchwc_ops(r);  // gpass's channel-blocked ops (what -O3 makes of CPU convolutions)
  register_onnx_attention_ops(r);
  register_onnx_shape_ops(r);
  register_onnx_matmul_ops(r);
  register_onnx_control_flow_ops(r);
  register_onnx_sequence_ops(r);
  register_onnx_misc_ops(r);
  register_onnx_ml_ops(r);
}

#endif  // GPASS_UNIT_ONNX_SCHEMAS
