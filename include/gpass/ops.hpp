// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file ops.hpp
/// Umbrella header of `gpass/ops/`: op schemas and the op registry (with the core gpass ops
/// and the ONNX default-domain ops registered), the inference interface of ops (port info,
/// known values, the inference context, formal types, broadcasting, loop fixed points) and
/// the opset a graph declares per domain.
/// `gpass/ops/onnx/` holds the ONNX op *schemas*; they need no ONNX library.
/// \code
///   #include <gpass/ops.hpp>
///   const gpass::op_schema* s = gpass::op_registry::global().find("", "return");
///   assert(s && s->traits.terminator);
/// \endcode

#include <gpass/ops/broadcast.hpp>
#include <gpass/ops/core_ops.hpp>
#include <gpass/ops/formal_types.hpp>
#include <gpass/ops/fused_elementwise.hpp>
#include <gpass/ops/infer_context.hpp>
#include <gpass/ops/known_value.hpp>
#include <gpass/ops/loop_fixed_point.hpp>
#include <gpass/ops/opset.hpp>
#include <gpass/ops/port_info.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/ops/schema.hpp>
