#pragma once
/// \file array.hpp
/// Eigen CPU kernels: array family. (being written)

#include <gpass/exec/eigen_cpu/kernels/common.hpp>

namespace gpass::exec::cpu_detail {

/// Registers the kernels of this family.
inline void register_array(registry& r) { (void)r; }

}  // namespace gpass::exec::cpu_detail
