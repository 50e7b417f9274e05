// SPDX-License-Identifier: Apache-2.0
// Fuzz target tf: TensorFlow GraphDefs, binary or text (chosen as gpass-opt does, by the
// first byte), imported and lowered by the tf-frontend pipeline (which evaluates constant
// subgraphs with the CPU kernels). Property: bad input is a gpass::error, never a crash, an
// exception of another type or a graph that fails verification.
#include <string>

#include <gpass/analysis/verify.hpp>
#include <gpass/io/tensorflow.hpp>
#include <gpass/passes/tf.hpp>

#include "harness.hpp"

GPASS_FUZZ_TARGET(tf) {
  using G = gpass::graph<>;
  const auto bytes = gpass_fuzz::bytes_of(data, size);
  gpass::tf_import_options o;
  o.max_tensor_bytes = std::uint64_t{64} << 20;
  G g;
  try {
    g = gpass::detail::tf_io::looks_binary_graph_def(bytes) ? gpass::parse_tf_graph_def<G>(bytes, "<fuzz>", o)
                                                             : gpass::parse_tf_graph_def_text<G>(bytes, "<fuzz>", o);
  } catch (const gpass::error&) {
    return 0;
  }
  try {
    gpass::pass_context ctx;
    gpass::tf_frontend(g, ctx);
  } catch (const gpass::error&) {
    return 0;
  }
  const auto bad = gpass::verify_report(g);
  if (!bad.empty()) gpass_fuzz::finding("tf", "tf-frontend left a graph that does not verify: " + bad.front().message);
  return 0;
}
