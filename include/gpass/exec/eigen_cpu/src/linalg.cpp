// SPDX-License-Identifier: Apache-2.0
/// \file linalg.cpp
/// A gpass unit (see gpass/config.hpp): the Eigen CPU linalg kernels. Compiled once with
/// GPASS_SEPARATE_COMPILATION, or included by <gpass/exec/eigen_cpu.hpp> in header-only mode.

#ifndef GPASS_UNIT_EIGEN_CPU_LINALG  // a guard: in header-only mode a unit is also included as a header
#define GPASS_UNIT_EIGEN_CPU_LINALG

#include <gpass/exec/eigen_cpu/kernels/linalg.hpp>
// (first: compiling this unit proves the family header compiles on its own)
#include <gpass/exec/eigen_cpu/kernels/nchwc_ops.hpp>
#include <gpass/exec/eigen_cpu.hpp>

// The convolutions of both layouts: NCHW (linalg) and channel-blocked (nchwc_ops, what the
// `nchwc-layout` pass of -O3 makes).
GPASS_DECL void gpass::exec::register_eigen_cpu_linalg(kernel_registry<eigen_cpu>& r) {
  cpu_detail::register_linalg(r);
  cpu_detail::register_nchwc(r);
}

#endif  // GPASS_UNIT_EIGEN_CPU_LINALG
