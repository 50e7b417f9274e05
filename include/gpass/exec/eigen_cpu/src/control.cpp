// SPDX-License-Identifier: Apache-2.0
/// \file control.cpp
/// A gpass unit (see gpass/config.hpp): the Eigen CPU control-flow, globals, list, transfer and collective kernels.
/// Compiled once with GPASS_SEPARATE_COMPILATION, or included by <gpass/exec/eigen_cpu.hpp>
/// in header-only mode.

#ifndef GPASS_UNIT_EIGEN_CPU_CONTROL  // a guard: in header-only mode a unit is also included as a header
#define GPASS_UNIT_EIGEN_CPU_CONTROL

#include <gpass/exec/eigen_cpu/kernels/control.hpp>
// (first: compiling this unit proves the family header compiles on its own)
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/eigen_cpu/kernels/collectives.hpp>
#include <gpass/exec/eigen_cpu/kernels/globals.hpp>
#include <gpass/exec/list_kernels.hpp>
#include <gpass/exec/transfer_kernels.hpp>

GPASS_DECL void gpass::exec::register_eigen_cpu_control(kernel_registry<eigen_cpu>& r) {
  cpu_detail::register_control(r);
  cpu_detail::register_globals(r);
  cpu_detail::register_update_globals(r);
  register_list_kernels(r);
  register_transfer_kernels(r);
  cpu_detail::register_collectives(r);
}

#endif  // GPASS_UNIT_EIGEN_CPU_CONTROL
