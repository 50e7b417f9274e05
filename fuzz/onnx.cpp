// SPDX-License-Identifier: Apache-2.0
// Fuzz target onnx: ONNX models imported, inferred (types, symbolic shapes, known values),
// exported and imported again. Property: bad input is a gpass::error; what imports and
// exports imports again.
#include <string>

#include <gpass/io/onnx_export.hpp>

#include "harness.hpp"
#include "onnx_input.hpp"

GPASS_FUZZ_TARGET(onnx) {
  using G = gpass::graph<>;
  auto g = gpass_fuzz::import_onnx_and_infer(gpass_fuzz::bytes_of(data, size));
  if (!g) return 0;
  std::string bytes;
  try {
    gpass::export_onnx(*g).SerializeToString(&bytes);
  } catch (const gpass::error&) {
    return 0;
  }
  try {
    (void)gpass::parse_onnx_model<G>(bytes, "<exported>");
  } catch (const gpass::error& e) {
    gpass_fuzz::finding("onnx", std::string("an exported model does not import again: ") + e.what());
  }
  return 0;
}
