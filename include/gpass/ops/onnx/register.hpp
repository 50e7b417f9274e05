#pragma once
/// \file register.hpp
/// `gpass::register_onnx_ops`: registers every ONNX default-domain op schema gpass knows.

#include <gpass/ops/onnx/control_flow.hpp>
#include <gpass/ops/onnx/elementwise.hpp>
#include <gpass/ops/onnx/logical.hpp>
#include <gpass/ops/onnx/matmul.hpp>
#include <gpass/ops/onnx/misc.hpp>
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

/// Registers the ONNX default-domain (`""`, also spelled `ai.onnx`) op schemas into `r`, one
/// family per header: element-wise math (`elementwise.hpp`), casts/comparisons/logic
/// (`logical.hpp`), reductions (`reduction.hpp`), neural-network ops (`nn.hpp`), shape ops
/// (`shape_ops.hpp`), matrix products (`matmul.hpp`), control flow (`control_flow.hpp`),
/// sequences and optionals (`sequence.hpp`), and the rest (`misc.hpp`). Where an op's
/// semantics changed between opsets (attributes becoming inputs, broadcasting rules) there
/// is one schema per range. `op_registry::global()` calls it on first use.
/// \code
///   gpass::op_registry r;
///   gpass::register_onnx_ops(r);
///   r.find("", "Squeeze", 13)->inputs.size();  // 2: data, axes
/// \endcode
inline void register_onnx_ops(op_registry& r) {
  register_onnx_elementwise_ops(r);
  register_onnx_logical_ops(r);
  register_onnx_reduction_ops(r);
  register_onnx_nn_ops(r);
  register_onnx_shape_ops(r);
  register_onnx_matmul_ops(r);
  register_onnx_control_flow_ops(r);
  register_onnx_sequence_ops(r);
  register_onnx_misc_ops(r);
}

}  // namespace gpass
