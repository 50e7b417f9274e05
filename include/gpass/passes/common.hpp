#pragma once
/// \file common.hpp
/// Umbrella header of the framework-independent passes (`gpass/passes/common/`).

#include <gpass/passes/common/dce.hpp>
#include <gpass/passes/common/delete_disconnected.hpp>
#include <gpass/passes/common/eliminate_identities.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/passes/common/infer_types.hpp>
