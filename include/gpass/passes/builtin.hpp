// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file builtin.hpp
/// `gpass::register_builtin_passes(registry)`: fills a registry with the passes that ship
/// with gpass. `pass_registry<G>::global()` calls it on first use.

#include <gpass/pass/registry.hpp>
#include <gpass/passes/common/cse.hpp>
#include <gpass/passes/common/dce.hpp>
#include <gpass/passes/common/delete_disconnected.hpp>
#include <gpass/passes/common/eliminate_identities.hpp>
#include <gpass/passes/common/fold_batch_norm.hpp>
#include <gpass/passes/common/fuse_elementwise.hpp>
#include <gpass/passes/common/fuse_epilogues.hpp>
#include <gpass/passes/common/fuse_standard.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/passes/common/infer_types.hpp>
#include <gpass/passes/common/infer_values.hpp>
#include <gpass/passes/common/inline_functions.hpp>
#include <gpass/passes/common/multi_devices.hpp>
#include <gpass/passes/common/simplify_inference.hpp>
#include <gpass/passes/tf/layout.hpp>

namespace gpass {

/// Registers the built-in passes and named pipelines into `registry`:
/// - `dce` (`gpass::dce`), `delete-disconnected` (`gpass::delete_disconnected`),
///   `infer-types`, `infer-shapes`, `infer-values` (`gpass::infer_types`, ...), and the
///   optimizer passes that need no kernels: `eliminate-identities`, `cse`,
///   `simplify-inference`, `fold-batch-norm`, `fuse-standard`, `fuse-epilogues`,
///   `fuse-elementwise`, `tf-layout` (TensorFlow convolutions in NCHW); data
///   parallelism: `multi-devices`, `multi-devices-check`; `inline-functions` (calls of ONNX
///   model-local functions replaced by their bodies);
/// - the named pipeline `default` = `"delete-disconnected,dce"`.
///
/// The passes that evaluate nodes with the CPU kernels are registered by
/// `gpass::register_optimizer_passes` (`gpass/passes/optimize.hpp`: `fold-constants` and the
/// levels `O1`-`O3`) and `gpass::register_tf_passes` (`gpass/passes/tf.hpp`: the TensorFlow
/// frontend passes and `tf-frontend`).
///
/// Requirements: the built-in passes run on `G` (true for `gpass::graph<N, E, A>`). Throws
/// `gpass::error` when one of the names is already taken in `registry`.
/// \code
///   gpass::pass_registry<gpass::graph<>> r;       // empty
///   gpass::register_builtin_passes(r);
///   auto p = r.parse("default");
/// \endcode
template <class G>
void register_builtin_passes(pass_registry<G>& registry) {
  registry.add(dce);
  registry.add(delete_disconnected);
  registry.add(eliminate_identities);
  registry.add(cse);
  registry.add(simplify_inference);
  registry.add(fold_batch_norm);
  registry.add(fuse_standard);
  registry.add(fuse_epilogues);
  registry.add(fuse_elementwise);
  registry.add(tf_layout);
  registry.add(infer_types);
  registry.add(infer_shapes);
  registry.add(infer_values);
  registry.add(multi_devices);
  registry.add(multi_devices_check);
  registry.add(inline_functions);
  registry.add_pipeline("default", "delete-disconnected,dce", "Deletes disconnected nodes, then dead code");
}

}  // namespace gpass
