// SPDX-License-Identifier: Apache-2.0
/// \file tf_elementwise.cpp
/// A gpass unit (see gpass/config.hpp): the Eigen CPU kernels of the TensorFlow element-wise
/// ops (broadcasting binary and unary math, AddN, BiasAdd,
/// Cast, Select, ClipByValue), the element-wise string ops (tf_strings.hpp) and the spectral
/// and complex ops (tf_spectral.hpp). Compiled once with
/// GPASS_SEPARATE_COMPILATION, or included by <gpass/exec/eigen_cpu.hpp> in header-only mode.

#ifndef GPASS_UNIT_EIGEN_CPU_TF_ELEMENTWISE  // a guard: in header-only mode a unit is also included as a header
#define GPASS_UNIT_EIGEN_CPU_TF_ELEMENTWISE

#include <gpass/exec/eigen_cpu/kernels/tf_elementwise.hpp>
// (first: compiling this unit proves the family header compiles on its own)
#include <gpass/exec/eigen_cpu/kernels/tf_spectral.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_strings.hpp>
#include <gpass/exec/eigen_cpu.hpp>

GPASS_DECL void gpass::exec::register_eigen_cpu_tf_elementwise(kernel_registry<eigen_cpu>& r) {
  cpu_detail::tf_detail::register_tf_elementwise(r);
  cpu_detail::tf_detail::register_tf_strings(r);
  cpu_detail::tf_detail::register_tf_spectral(r);
}

#endif  // GPASS_UNIT_EIGEN_CPU_TF_ELEMENTWISE
