// SPDX-License-Identifier: Apache-2.0
/// \file attention.cpp
/// A gpass unit (see gpass/config.hpp): the Eigen CPU attention kernels (Attention,
/// RMSNormalization, RotaryEmbedding, GroupNormalization, LinearAttention,
/// CausalConvWithState, SwiGLU). Compiled once with GPASS_SEPARATE_COMPILATION, or included
/// by <gpass/exec/eigen_cpu.hpp> in header-only mode.

#ifndef GPASS_UNIT_EIGEN_CPU_ATTENTION  // a guard: in header-only mode a unit is also included as a header
#define GPASS_UNIT_EIGEN_CPU_ATTENTION

#include <gpass/exec/eigen_cpu/kernels/attention.hpp>
// (first: compiling this unit proves the family header compiles on its own)
#include <gpass/exec/eigen_cpu.hpp>

GPASS_DECL void gpass::exec::register_eigen_cpu_attention(kernel_registry<eigen_cpu>& r) { cpu_detail::register_attention(r); }

#endif  // GPASS_UNIT_EIGEN_CPU_ATTENTION
