#pragma once
/// \file eigen_cpu.hpp
/// The Eigen CPU backend: the `gpass::exec::eigen_cpu` policy and all its kernels.
/// \code
///   gpass::exec::eigen_cpu cpu({.threads = 2});
///   gpass::exec::plan p(g, cpu);
///   auto outputs = p.run({x});
/// \endcode

#include <gpass/exec/eigen_cpu/policy.hpp>
#include <gpass/exec/eigen_cpu/kernels/array.hpp>
#include <gpass/exec/eigen_cpu/kernels/control.hpp>
#include <gpass/exec/eigen_cpu/kernels/elementwise.hpp>
#include <gpass/exec/eigen_cpu/kernels/globals.hpp>
#include <gpass/exec/eigen_cpu/kernels/linalg.hpp>
#include <gpass/exec/eigen_cpu/kernels/lists.hpp>
#include <gpass/exec/eigen_cpu/kernels/nn.hpp>
#include <gpass/exec/eigen_cpu/kernels/reduce.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf.hpp>

namespace gpass::exec {

inline const kernel_registry<eigen_cpu>& eigen_cpu::kernels() const {
  static const kernel_registry<eigen_cpu> r = [] {
    kernel_registry<eigen_cpu> k;
    cpu_detail::register_elementwise(k);
    cpu_detail::register_linalg(k);
    cpu_detail::register_nn(k);
    cpu_detail::register_array(k);
    cpu_detail::register_reduce(k);
    cpu_detail::register_control(k);
    cpu_detail::register_globals(k);
    cpu_detail::register_lists(k);
    cpu_detail::register_tf(k);
    return k;
  }();
  return r;
}

}  // namespace gpass::exec
