// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file register.hpp
/// Every TensorFlow op schema family (domain `tf`), with its registration function. The unit
/// `gpass/ops/src/tf_schemas.cpp` includes it and defines `gpass::register_tf_ops`.

namespace gpass {

class op_registry;
// the families (tf/*.hpp) define these; declared here for the include cycle through registry.hpp
void register_tf_misc_ops(op_registry& r);
void register_tf_elementwise_ops(op_registry& r);
void register_tf_shape_ops(op_registry& r);
void register_tf_reduction_ops(op_registry& r);
void register_tf_matmul_ops(op_registry& r);
void register_tf_nn_ops(op_registry& r);
void register_tf_matrix_ops(op_registry& r);
void register_tf_image_ops(op_registry& r);

}  // namespace gpass

#ifndef GPASS_DETAIL_TF_COMMON_INCOMPLETE
#include <gpass/ops/tf/detail/families.hpp>
#endif
