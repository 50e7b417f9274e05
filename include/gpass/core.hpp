// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file core.hpp
/// Umbrella header of `gpass/core/`: values and types shared by everything else: errors,
/// dtypes, dims (known, symbolic, unknown), shapes, types (tensor, list, tuple), host
/// tensors, attribute values and the symbol table of symbolic dims (union-find).
/// \code
///   #include <gpass/core.hpp>
///   gpass::shape s{2, gpass::dim::symbol("n")};
///   assert(s.to_string() == "[2,n]");
/// \endcode

#include <gpass/core/attribute.hpp>
#include <gpass/core/dim.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/low_precision.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/symbols.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
