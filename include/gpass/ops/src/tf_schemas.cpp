// SPDX-License-Identifier: Apache-2.0
/// \file tf_schemas.cpp
/// A gpass unit (see gpass/config.hpp): the TensorFlow op schemas (domain `tf`),
/// `gpass::register_tf_ops`. Compiled once with GPASS_SEPARATE_COMPILATION, or included by
/// <gpass/ops/registry.hpp> in header-only mode.

#ifndef GPASS_UNIT_TF_SCHEMAS  // a guard: in header-only mode a unit is also included as a header
#define GPASS_UNIT_TF_SCHEMAS

#include <gpass/ops/tf/register.hpp>
#include <gpass/ops/registry.hpp>

// Sources and identities first: later families refer to nothing registered before them, the
// order only fixes the registry's listing order.
GPASS_DECL void gpass::register_tf_ops(op_registry& r) {
  register_tf_misc_ops(r);
  register_tf_elementwise_ops(r);
  register_tf_shape_ops(r);
  register_tf_reduction_ops(r);
  register_tf_matmul_ops(r);
  register_tf_nn_ops(r);
  register_tf_matrix_ops(r);
  register_tf_image_ops(r);
}

#endif  // GPASS_UNIT_TF_SCHEMAS
