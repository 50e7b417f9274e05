// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file config.hpp
/// Compiler requirements and library-wide configuration macros (all `GPASS_`-prefixed).

#if __cplusplus < 202002L && !defined(_MSVC_LANG)
#error "gpass requires C++20"
#endif

/// `GPASS_ASSERT(cond)`: internal invariant check, active unless NDEBUG.
#include <cassert>
#define GPASS_ASSERT(cond) assert(cond)

/// Separate compilation (the Asio / spdlog model).
///
/// gpass is header-only, but its heavy parts live in a handful of *units*, `.cpp` files under
/// `include/gpass/**/src/`, each defining `GPASS_DECL` entry points or explicit
/// instantiations:
///
///   gpass/ops/src/registry.cpp              `gpass::op_registry::global()`
///   gpass/ops/src/onnx_schemas.cpp          `gpass::register_onnx_ops`
///   gpass/ops/src/tf_schemas.cpp            `gpass::register_tf_ops`
///   gpass/analysis/src/verify.cpp           the verifier on `graph<>`
///   gpass/io/src/text.cpp                   the text IR parser and printer on `graph<>`
///   gpass/passes/src/infer.cpp              shape inference on `graph<>`
///   gpass/passes/src/passes.cpp             every pass's `run` on `graph<>`
///   gpass/exec/eigen_cpu/src/<family>.cpp   `gpass::exec::register_eigen_cpu_<family>`
///   gpass/exec/eigen_cpu/src/plan.cpp       `exec::plan<eigen_cpu, graph<>>`
///
/// - Header-only mode (the default): the headers that declare those entry points include the
///   units at their end, `GPASS_DECL` is `inline`, and everything is compiled in every
///   translation unit that uses it. Nothing to build or link.
/// - `GPASS_SEPARATE_COMPILATION` defined in *every* translation unit of the program: the
///   headers only declare the entry points (and `extern template` the instantiations), and
///   the program compiles each unit once, with the macro defined too. CMake: link
///   `gpass::eigen_cpu` (its interface sources are the units) into one target, or make a
///   library of them with `gpass_add_units_library(<name>)` (cmake/gpassUnits.cmake). Other
///   build systems: compile the files listed by `cmake -P <gpass>/cmake/gpassListUnits.cmake`
///   (they build in parallel), or one `.cpp` that includes `<gpass/src.hpp>`.
///
/// Mixing the modes in one program is an ODR violation: define the macro everywhere or
/// nowhere.
#if defined(GPASS_SEPARATE_COMPILATION)
#define GPASS_HEADER_ONLY 0
#define GPASS_DECL
#else
#define GPASS_HEADER_ONLY 1
#define GPASS_DECL inline
#endif
