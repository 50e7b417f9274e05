// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file eigen_cpu.hpp
/// The Eigen CPU backend: the `gpass::exec::eigen_cpu` policy and the declarations of its
/// kernel units.
/// \code
///   gpass::exec::eigen_cpu cpu({.threads = 2});
///   gpass::exec::plan p(g, cpu);
///   auto outputs = p.run({x});
/// \endcode
///
/// The kernels are defined in eleven units, one per family (`gpass/exec/eigen_cpu/src/*.cpp`;
/// the TensorFlow ops in three), each with one entry point that adds its family to a
/// registry, and `plan<eigen_cpu>` on the default graph type is instantiated by a twelfth
/// (`src/plan.cpp`). In header-only mode (the
/// default) this header includes the units; with `GPASS_SEPARATE_COMPILATION` it only
/// declares them and the build compiles each unit once (see `gpass/config.hpp`).

#include <gpass/config.hpp>
#include <gpass/exec/eigen_cpu/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/graph/graph.hpp>

namespace gpass::exec {

/// Element-wise math, comparisons, logic, casts (`src/elementwise.cpp`).
GPASS_DECL void register_eigen_cpu_elementwise(kernel_registry<eigen_cpu>& r);
/// Matrix products, convolutions, pooling, the packed f32 GEMM (`src/linalg.cpp`).
GPASS_DECL void register_eigen_cpu_linalg(kernel_registry<eigen_cpu>& r);
/// Normalizations, softmax, recurrent cells, losses, sampling (`src/nn.cpp`).
GPASS_DECL void register_eigen_cpu_nn(kernel_registry<eigen_cpu>& r);
/// Attention, RMSNormalization, RotaryEmbedding, GroupNormalization, LinearAttention,
/// CausalConvWithState, SwiGLU (`src/attention.cpp`).
GPASS_DECL void register_eigen_cpu_attention(kernel_registry<eigen_cpu>& r);
/// ONNX's ai.onnx.ml (ArrayFeatureExtractor, Binarizer, LabelEncoder, TreeEnsemble, the
/// classic TreeEnsembleRegressor/Classifier, Linear*, SVM*, Scaler, Normalizer, Imputer,
/// OneHotEncoder, FeatureVectorizer, CategoryMapper) and ai.onnx.preview.training (Adagrad,
/// Adam, Momentum) ops (`src/ml.cpp`).
GPASS_DECL void register_eigen_cpu_ml(kernel_registry<eigen_cpu>& r);
/// Shapes, data movement, indexing, construction, selection, resizing (`src/array.cpp`).
GPASS_DECL void register_eigen_cpu_array(kernel_registry<eigen_cpu>& r);
/// Reductions, arg-min/max, cumulative sums, top-k style scans (`src/reduce.cpp`).
GPASS_DECL void register_eigen_cpu_reduce(kernel_registry<eigen_cpu>& r);
/// Control flow, constants, globals (variables), list (TensorArray) ops and the session's
/// `send` / `recv` (`src/control.cpp`).
GPASS_DECL void register_eigen_cpu_control(kernel_registry<eigen_cpu>& r);
/// The TensorFlow ops (domain `tf`) adapt TF's operands to the kernels above, in three units:
/// element-wise math, AddN, BiasAdd, Cast, Select (`src/tf_elementwise.cpp`), matrix
/// products, reductions, softmax (`src/tf_math.cpp`), graph, shape and data-movement ops
/// (`src/tf_array.cpp`).
GPASS_DECL void register_eigen_cpu_tf_elementwise(kernel_registry<eigen_cpu>& r);
GPASS_DECL void register_eigen_cpu_tf_math(kernel_registry<eigen_cpu>& r);
GPASS_DECL void register_eigen_cpu_tf_array(kernel_registry<eigen_cpu>& r);
/// Every TensorFlow kernel (the three units above).
inline void register_eigen_cpu_tf(kernel_registry<eigen_cpu>& r) {
  register_eigen_cpu_tf_elementwise(r);
  register_eigen_cpu_tf_math(r);
  register_eigen_cpu_tf_array(r);
}

/// Adds every Eigen CPU kernel family to `r`.
inline void register_eigen_cpu_kernels(kernel_registry<eigen_cpu>& r) {
  register_eigen_cpu_elementwise(r);
  register_eigen_cpu_linalg(r);
  register_eigen_cpu_nn(r);
  register_eigen_cpu_attention(r);
  register_eigen_cpu_ml(r);
  register_eigen_cpu_array(r);
  register_eigen_cpu_reduce(r);
  register_eigen_cpu_control(r);
  register_eigen_cpu_tf(r);
}

inline const kernel_registry<eigen_cpu>& eigen_cpu::kernels() const {
  static const kernel_registry<eigen_cpu> r = [] {
    kernel_registry<eigen_cpu> k;
    register_eigen_cpu_kernels(k);
    return k;
  }();
  return r;
}

#if !GPASS_HEADER_ONLY
// The plan of the default graph type on this policy is instantiated once, by the unit
// src/plan.cpp.
extern template class detail::body_plan<eigen_cpu, graph<>>;
extern template class plan<eigen_cpu, graph<>>;
#endif

}  // namespace gpass::exec

#if GPASS_HEADER_ONLY
#include <gpass/exec/eigen_cpu/src/array.cpp>
#include <gpass/exec/eigen_cpu/src/attention.cpp>
#include <gpass/exec/eigen_cpu/src/control.cpp>
#include <gpass/exec/eigen_cpu/src/elementwise.cpp>
#include <gpass/exec/eigen_cpu/src/linalg.cpp>
#include <gpass/exec/eigen_cpu/src/ml.cpp>
#include <gpass/exec/eigen_cpu/src/nn.cpp>
#include <gpass/exec/eigen_cpu/src/reduce.cpp>
#include <gpass/exec/eigen_cpu/src/tf_array.cpp>
#include <gpass/exec/eigen_cpu/src/tf_elementwise.cpp>
#include <gpass/exec/eigen_cpu/src/tf_math.cpp>
#endif
