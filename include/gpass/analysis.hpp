// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file analysis.hpp
/// Umbrella for `gpass/analysis/`: the generic inference engine (seed 004's InferAttr),
/// symbolic dims (union-find), and type/shape inference with value propagation.

#include <gpass/analysis/infer_attr.hpp>
#include <gpass/core/symbols.hpp>
#include <gpass/analysis/type_inference.hpp>
