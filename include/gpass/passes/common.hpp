// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file common.hpp
/// Umbrella header of the framework-independent passes (`gpass/passes/common/`), except
/// `fold_constants.hpp`, which brings in the CPU kernels (`gpass/passes/optimize.hpp` has it).

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
