// SPDX-License-Identifier: Apache-2.0
// The first steps of the ONNX fuzz targets (onnx, run): parse and import the bytes, then
// infer types and shapes (a failed inference leaves what was inferred; the graph goes on).
#pragma once

#include <optional>
#include <string_view>

#include <gpass/io/onnx_import.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

namespace gpass_fuzz {

/// The imported, inferred graph; nullopt when the bytes are not an importable model (a
/// `gpass::error`, the right answer to bad input).
inline std::optional<gpass::graph<>> import_onnx_and_infer(std::string_view bytes) {
  std::optional<gpass::graph<>> g;
  try {
    g = gpass::parse_onnx_model<gpass::graph<>>(bytes, "<fuzz>");
  } catch (const gpass::error&) {
    return std::nullopt;
  }
  try {
    gpass::pass_context ctx;
    gpass::infer_shapes(*g, ctx);
  } catch (const gpass::error&) {
  }
  return g;
}

}  // namespace gpass_fuzz
