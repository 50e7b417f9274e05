// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file register.hpp
/// Every ONNX op schema family (the default domain, ai.onnx.ml, ai.onnx.preview.training), with its registration function. The unit
/// `gpass/ops/src/onnx_schemas.cpp` includes it and defines `gpass::register_onnx_ops`.

#include <gpass/ops/onnx/attention.hpp>
#include <gpass/ops/onnx/control_flow.hpp>
#include <gpass/ops/onnx/elementwise.hpp>
#include <gpass/ops/onnx/logical.hpp>
#include <gpass/ops/onnx/matmul.hpp>
#include <gpass/ops/onnx/misc.hpp>
#include <gpass/ops/onnx/ml.hpp>
#include <gpass/ops/onnx/nchwc.hpp>
#include <gpass/ops/onnx/nn.hpp>
#include <gpass/ops/onnx/reduction.hpp>
#include <gpass/ops/onnx/sequence.hpp>
#include <gpass/ops/onnx/shape_ops.hpp>

namespace gpass {

class op_registry;
// declared here too: with include cycles through registry.hpp a family header may not be done yet
void register_onnx_elementwise_ops(op_registry& r);
void register_onnx_shape_ops(op_registry& r);
void register_onnx_reduction_ops(op_registry& r);
void register_onnx_nn_ops(op_registry& r);
void register_onnx_matmul_ops(op_registry& r);
void register_onnx_logical_ops(op_registry& r);
void register_onnx_control_flow_ops(op_registry& r);
void register_onnx_sequence_ops(op_registry& r);
void register_onnx_misc_ops(op_registry& r);
void register_onnx_attention_ops(op_registry& r);
void register_onnx_ml_ops(op_registry& r);
void register_onnx_nchwc_ops(op_registry& r);

}  // namespace gpass
