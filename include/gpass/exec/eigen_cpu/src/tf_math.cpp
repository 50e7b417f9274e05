// SPDX-License-Identifier: Apache-2.0
/// \file tf_math.cpp
/// A gpass unit (see gpass/config.hpp): the Eigen CPU kernels of the TensorFlow matrix products,
/// Einsum, reductions, softmax, the gradient ops of dense networks (tf_grad.hpp) and the NHWC
/// convolutions and pooling with their gradients (tf_conv.hpp). Compiled once with
/// GPASS_SEPARATE_COMPILATION, or included by <gpass/exec/eigen_cpu.hpp> in header-only mode.

#ifndef GPASS_UNIT_EIGEN_CPU_TF_MATH  // a guard: in header-only mode a unit is also included as a header
#define GPASS_UNIT_EIGEN_CPU_TF_MATH

#include <gpass/exec/eigen_cpu/kernels/tf_math.hpp>
// (first: compiling this unit proves the family header compiles on its own)
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_conv.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_grad.hpp>

GPASS_DECL void gpass::exec::register_eigen_cpu_tf_math(kernel_registry<eigen_cpu>& r) {
  cpu_detail::tf_detail::register_tf_linalg_reduce(r);
  cpu_detail::tf_detail::register_tf_grad(r);
  cpu_detail::tf_detail::register_tf_conv(r);
  cpu_detail::tf_detail::register_tf_batch_norm(r);
}

#endif  // GPASS_UNIT_EIGEN_CPU_TF_MATH
