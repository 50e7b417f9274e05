// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file src.hpp
/// Every gpass unit in one file, for builds without CMake that want separate compilation
/// (see gpass/config.hpp): compile one `.cpp` containing
/// \code
///   #define GPASS_SEPARATE_COMPILATION  // or -DGPASS_SEPARATE_COMPILATION for the whole build
///   #include <gpass/src.hpp>
/// \endcode
/// and define GPASS_SEPARATE_COMPILATION in every other file of the program. Compiling the
/// units as separate files (cmake/gpassListUnits.cmake lists them) builds faster, in
/// parallel, with less memory per compiler process. In header-only mode this header adds
/// nothing: the headers already define everything.

#include <gpass/config.hpp>

#if !GPASS_HEADER_ONLY
#include <gpass/analysis/src/verify.cpp>
#include <gpass/exec/eigen_cpu/src/array.cpp>
#include <gpass/exec/eigen_cpu/src/attention.cpp>
#include <gpass/exec/eigen_cpu/src/control.cpp>
#include <gpass/exec/eigen_cpu/src/elementwise.cpp>
#include <gpass/exec/eigen_cpu/src/linalg.cpp>
#include <gpass/exec/eigen_cpu/src/ml.cpp>
#include <gpass/exec/eigen_cpu/src/nn.cpp>
#include <gpass/exec/eigen_cpu/src/plan.cpp>
#include <gpass/exec/eigen_cpu/src/reduce.cpp>
#include <gpass/exec/eigen_cpu/src/tf_array.cpp>
#include <gpass/exec/eigen_cpu/src/tf_elementwise.cpp>
#include <gpass/exec/eigen_cpu/src/tf_math.cpp>
#include <gpass/io/src/text.cpp>
#include <gpass/ops/src/onnx_schemas.cpp>
#include <gpass/ops/src/registry.cpp>
#include <gpass/ops/src/tf_schemas.cpp>
#include <gpass/passes/src/infer.cpp>
#include <gpass/passes/src/passes.cpp>
#endif
