// SPDX-License-Identifier: Apache-2.0
/// \file plan.cpp
/// A gpass unit (see gpass/config.hpp): `plan<eigen_cpu, graph<>>`, instantiated once for the
/// program with GPASS_SEPARATE_COMPILATION (<gpass/exec/eigen_cpu.hpp> declares it `extern`).
/// Empty in header-only mode: every translation unit instantiates what it uses.

#ifndef GPASS_UNIT_EIGEN_CPU_PLAN  // a guard: in header-only mode a unit is also included as a header
#define GPASS_UNIT_EIGEN_CPU_PLAN

#include <gpass/exec/eigen_cpu.hpp>

#if !GPASS_HEADER_ONLY
template class gpass::exec::detail::body_plan<gpass::exec::eigen_cpu, gpass::graph<>>;
template class gpass::exec::plan<gpass::exec::eigen_cpu, gpass::graph<>>;
#endif

#endif  // GPASS_UNIT_EIGEN_CPU_PLAN
