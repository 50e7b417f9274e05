// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file families.hpp
/// Every TensorFlow op family header (included by tf/register.hpp, or at the end of
/// tf/common.hpp when that one was being read first).

#include <gpass/ops/tf/elementwise.hpp>
#include <gpass/ops/tf/image.hpp>
#include <gpass/ops/tf/matmul.hpp>
#include <gpass/ops/tf/matrix.hpp>
#include <gpass/ops/tf/misc.hpp>
#include <gpass/ops/tf/nn.hpp>
#include <gpass/ops/tf/reduction.hpp>
#include <gpass/ops/tf/shape_ops.hpp>
