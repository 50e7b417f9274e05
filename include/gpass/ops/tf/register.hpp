#pragma once
/// \file register.hpp
/// `gpass::register_tf_ops`: registers every TensorFlow op schema (domain `tf`) gpass knows.

namespace gpass {

class op_registry;
// the families (tf/*.hpp) define these; declared here for the include cycle through registry.hpp
void register_tf_misc_ops(op_registry& r);
void register_tf_elementwise_ops(op_registry& r);
void register_tf_shape_ops(op_registry& r);
void register_tf_reduction_ops(op_registry& r);
void register_tf_matmul_ops(op_registry& r);
void register_tf_nn_ops(op_registry& r);

/// Registers the TensorFlow op schemas (domain `tf`, TensorFlow's names, attributes and shape
/// functions) into `r`, one family per header: sources, identities and assertions
/// (`misc.hpp`: Const, Placeholder, Identity, NoOp, ...), element-wise math, comparisons,
/// logic, Cast, Select (`elementwise.hpp`), shapes and indexing (`shape_ops.hpp`: Shape,
/// StridedSlice, Pack, Fill, Range, Reshape, ConcatV2, ...), reductions (`reduction.hpp`),
/// matrix products (`matmul.hpp`) and neural-network ops (`nn.hpp`). Value propagation
/// follows shapes computed in the graph (seed 000): `Shape` of `f32[1,n,3]` has the
/// incomplete value `{1,n,3}`, and `Fill(Shape(x), v)` has `x`'s shape.
/// `op_registry::global()` calls it on first use. The v1 control-flow ops (Enter, Merge, ...)
/// are gpass core ops (domain `""`), not registered here.
/// \code
///   gpass::op_registry r;
///   gpass::register_tf_ops(r);
///   r.find("tf", "StridedSlice")->inputs.size();  // 4: input, begin, end, strides
/// \endcode
inline void register_tf_ops(op_registry& r) {
  register_tf_misc_ops(r);
  register_tf_elementwise_ops(r);
  register_tf_shape_ops(r);
  register_tf_reduction_ops(r);
  register_tf_matmul_ops(r);
  register_tf_nn_ops(r);
}

}  // namespace gpass

#ifndef GPASS_DETAIL_TF_COMMON_INCOMPLETE
#include <gpass/ops/tf/detail/families.hpp>
#endif
