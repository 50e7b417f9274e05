// SPDX-License-Identifier: Apache-2.0
/// \file tf_array.cpp
/// A gpass unit (see gpass/config.hpp): the Eigen CPU kernels of the TensorFlow graph, shape
/// and data-movement ops, indexed reads/writes, segment reductions and resizing (tf_index.hpp),
/// diagonals and determinants (tf_matrix.hpp), image ops: NMS, CropAndResize, colour adjustments,
/// patches (tf_image.hpp), random ops (tf_random.hpp). Compiled once with
/// GPASS_SEPARATE_COMPILATION, or included by <gpass/exec/eigen_cpu.hpp> in header-only mode.

#ifndef GPASS_UNIT_EIGEN_CPU_TF_ARRAY  // a guard: in header-only mode a unit is also included as a header
#define GPASS_UNIT_EIGEN_CPU_TF_ARRAY

#include <gpass/exec/eigen_cpu/kernels/tf_array.hpp>
// (first: compiling this unit proves the family header compiles on its own)
#include <gpass/exec/eigen_cpu/kernels/tf_image.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_index.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_matrix.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_random.hpp>
#include <gpass/exec/eigen_cpu.hpp>

GPASS_DECL void gpass::exec::register_eigen_cpu_tf_array(kernel_registry<eigen_cpu>& r) {
  cpu_detail::tf_detail::register_tf_array(r);
  cpu_detail::tf_detail::register_tf_image(r);
  cpu_detail::tf_detail::register_tf_index_ops(r);
  cpu_detail::tf_detail::register_tf_matrix(r);
  cpu_detail::tf_detail::register_tf_random(r);
}

#endif  // GPASS_UNIT_EIGEN_CPU_TF_ARRAY
