// SPDX-License-Identifier: Apache-2.0
/// \file registry.cpp
/// A gpass unit (see gpass/config.hpp): `op_registry::global()`, with the core gpass ops and
/// list ops. Compiled once with GPASS_SEPARATE_COMPILATION, or included by
/// <gpass/ops/registry.hpp> in header-only mode.

#ifndef GPASS_UNIT_OP_REGISTRY  // a guard: in header-only mode a unit is also included as a header
#define GPASS_UNIT_OP_REGISTRY

#include <gpass/ops/core_ops.hpp>
#include <gpass/ops/list_ops.hpp>
#include <gpass/ops/registry.hpp>

GPASS_DECL gpass::op_registry& gpass::op_registry::global() {
  // Never destroyed: schemas stay valid during static destruction of user objects.
  static op_registry* r = [] {
    auto* reg = new op_registry;
    register_core_ops(*reg);
    register_list_ops(*reg);
    register_onnx_ops(*reg);
    register_tf_ops(*reg);
    return reg;
  }();
  return *r;
}

#endif  // GPASS_UNIT_OP_REGISTRY
