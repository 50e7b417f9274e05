// SPDX-License-Identifier: Apache-2.0
/// \file ml.cpp
/// A gpass unit (see gpass/config.hpp): the Eigen CPU kernels of ONNX's ai.onnx.ml and
/// ai.onnx.preview.training domains. Compiled once with GPASS_SEPARATE_COMPILATION, or included
/// by <gpass/exec/eigen_cpu.hpp> in header-only mode.

#ifndef GPASS_UNIT_EIGEN_CPU_ML  // a guard: in header-only mode a unit is also included as a header
#define GPASS_UNIT_EIGEN_CPU_ML

#include <gpass/exec/eigen_cpu/kernels/ml.hpp>
// (first: compiling this unit proves the family header compiles on its own)
#include <gpass/exec/eigen_cpu.hpp>

GPASS_DECL void gpass::exec::register_eigen_cpu_ml(kernel_registry<eigen_cpu>& r) { cpu_detail::register_ml(r); }

#endif  // GPASS_UNIT_EIGEN_CPU_ML
