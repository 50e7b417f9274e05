// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file optimize.hpp
/// The optimizer's levels and `register_optimizer_passes`, which makes `fold-constants`,
/// `plan-memory`, `nchwc-layout` and the level pipelines `O1`, `O2`, `O3` available by name (as `gpass-opt -O2` runs them).
///
/// Not part of `gpass/passes.hpp`: `fold-constants` evaluates nodes with the Eigen CPU
/// kernels, so this header brings in the CPU backend.
/// \code
///   #include <gpass/passes/optimize.hpp>
///   auto& reg = gpass::pass_registry<gpass::graph<>>::global();
///   gpass::register_optimizer_passes(reg);
///   reg.parse("O2")(g, ctx);
/// \endcode

#include <array>
#include <mutex>
#include <string_view>

#include <gpass/pass/registry.hpp>
#include <gpass/passes/builtin.hpp>
#include <gpass/passes/common/fold_constants.hpp>
#include <gpass/passes/common/nchwc_layout.hpp>
#include <gpass/passes/common/plan_memory.hpp>

namespace gpass {

/// One optimization level: its pipeline name and text, and what it does.
struct optimize_level {
  std::string_view name;
  std::string_view pipeline;
  std::string_view description;
};

/// The levels, each one the one before plus more (what `gpass-opt -O1` ... `-O3` run):
/// - `O1`, cleanup: inference of values, constant and shape folding, identity elimination,
///   CSE and DCE, repeated to a fixed point (at most 4 rounds);
/// - `O2`, standard ONNX: `O1`, then `simplify-inference` (batch normalizations that follow a
///   Conv, Gemm or MatMul lowered to scale and shift), folding, `fold-batch-norm` (the scale
///   and shift into the weights), `fuse-standard` (Pad into Conv, and into MaxPool after a Relu, MatMul + Add into Gemm),
///   and `O1` again; its result uses only standard ops (ONNX Runtime runs it);
/// - `O3`: `O2` and fused ops other runtimes may not have (`fuse-epilogues`:
///   `gpass::FusedConv` and `gpass::FusedGemm` with residual Add and activation,
///   `gpass::Gelu`, `gpass::ScaledDotProductAttention`, ONNX Runtime's
///   `com.microsoft::SkipLayerNormalization`; then `fuse-elementwise`: the remaining chains of
///   element-wise ops as `gpass::FusedElementwise`; on TensorFlow graphs first `tf-layout`:
///   NHWC convolutions as `gpass::FusedConv` in NCHW, their transposes cancelled, batch
///   norms, biases, residual adds and activations folded in); gpass runs its result.
inline constexpr std::array optimize_levels{
    optimize_level{"O1",
                   "fixed-point{pipeline=\"infer-values,fold-constants,eliminate-identities,cse,dce\",max-iterations=4}",
                   "Cleanup: fold constants and shapes, remove identities, CSE, DCE (to a fixed point)"},
    optimize_level{"O2", "O1,simplify-inference{batch-norm=foldable},fold-constants,fold-batch-norm,fuse-standard,O1",
                   "O1 and inference simplification: batch normalization folded into weights, dropout removed"},
    optimize_level{"O3", "O2,tf-layout,fuse-epilogues,nchwc-layout,fuse-elementwise,dce",
                   "O2 and fused ops: Conv/Gemm epilogues, GELU, attention, skip LayerNorm, CPU convolutions channel-blocked, element-wise chains"},
};

/// Registers `fold-constants`, `plan-memory`, `nchwc-layout` and the level pipelines (`optimize_levels`) into `registry`
/// (the built-in passes they use must be there: `pass_registry::global()` has them). Does
/// nothing when `O1` is registered already; throws `gpass::error` when only some names are.
template <class G>
void register_optimizer_passes(pass_registry<G>& registry) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  if (registry.find_pipeline("O1")) return;
  registry.add(fold_constants);
  registry.add(plan_memory);
  registry.add(nchwc_layout);
  for (const auto& l : optimize_levels)
    registry.add_pipeline(std::string(l.name), std::string(l.pipeline), std::string(l.description));
}

}  // namespace gpass
