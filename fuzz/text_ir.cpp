// SPDX-License-Identifier: Apache-2.0
// Fuzz target text_ir: the text IR parser and printer. Property: whatever parses prints, and
// the printed text parses again to a graph that prints the same (a round trip is exact).
#include <string>

#include <gpass/graph/graph.hpp>
#include <gpass/io/text_parser.hpp>
#include <gpass/io/text_printer.hpp>

#include "harness.hpp"

GPASS_FUZZ_TARGET(text_ir) {
  using G = gpass::graph<>;
  G g;
  try {
    g = gpass::parse_text<G>(gpass_fuzz::bytes_of(data, size), "<fuzz>");
  } catch (const gpass::error&) {
    return 0;  // a clear error is the right answer to bad input
  }
  const std::string once = gpass::print_text(g);
  std::string twice;
  try {
    twice = gpass::print_text(gpass::parse_text<G>(once, "<printed>"));
  } catch (const gpass::error& e) {
    gpass_fuzz::finding("text_ir", std::string("printed IR does not parse: ") + e.what() + "\n--- printed:\n" + once);
  }
  if (once != twice) gpass_fuzz::finding("text_ir", "print -> parse -> print changed the text:\n" + once + "\n---\n" + twice);
  return 0;
}
