#pragma once
/// \file tf.hpp
/// Eigen CPU kernels of TensorFlow ops (domain "tf"): the element-wise ops
/// (tf_elementwise.hpp), the other math ops (tf_math.hpp) and the graph, shape and
/// data-movement ops (tf_array.hpp). Imported TF graphs run on the executor
/// with these, and constant propagation evaluates TF nodes through them
/// (`exec::run_kernel`). TF v1 control flow (Enter/Merge/Switch/...), TensorArrays and
/// variables are lowered by the frontend passes before execution. Private
/// (`gpass::exec::cpu_detail`); `register_tf` adds the kernels to a registry.

#include <gpass/exec/eigen_cpu/kernels/tf_array.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_elementwise.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_math.hpp>

namespace gpass::exec::cpu_detail {

/// Registers the TF math kernels (domain "tf").
inline void register_tf_math(registry& r) {
  register_tf_elementwise(r);
  register_tf_linalg_reduce(r);
}

/// Registers every TF kernel (domain "tf"). The Eigen CPU policy registers them through its
/// three units instead (`register_eigen_cpu_tf`, `gpass/exec/eigen_cpu.hpp`).
inline void register_tf(registry& r) {
  register_tf_math(r);
  register_tf_array(r);
}

}  // namespace gpass::exec::cpu_detail
