// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file all.hpp
/// Everything in gpass that needs only `gpass::gpass` (Boost, Eigen): the core values and
/// types, the graph and its algorithms, op schemas, inference (`analysis/`), the pass
/// infrastructure, the passes, the text IR and DOT output.
///
/// Never included here (they need an optional component; include them yourself and link it):
/// - `<gpass/io/onnx.hpp>`: ONNX import/export, CMake component `onnx` (`gpass::onnx`);
/// - CUDA headers (`<gpass/exec/cuda/...>`): never part of an umbrella.
/// \code
///   #include <gpass/all.hpp>
///   gpass::graph<> g = gpass::parse_text(text);
///   gpass::pass_context ctx;
///   (gpass::delete_disconnected | gpass::dce)(g, ctx);
///   std::cout << gpass::print_text(g);
/// \endcode

#include <gpass/config.hpp>
#include <gpass/version.hpp>

#include <gpass/analysis.hpp>
#include <gpass/core.hpp>
#include <gpass/graph.hpp>
#include <gpass/io.hpp>
#include <gpass/ops.hpp>
#include <gpass/pass.hpp>
#include <gpass/passes.hpp>
