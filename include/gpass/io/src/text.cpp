// SPDX-License-Identifier: Apache-2.0
/// \file text.cpp
/// A gpass unit (see gpass/config.hpp): the text IR parser and printer on the default graph
/// type, instantiated once for the program with GPASS_SEPARATE_COMPILATION
/// (<gpass/io/text_parser.hpp> and <gpass/io/text_printer.hpp> declare them `extern`).
/// Empty in header-only mode.

#ifndef GPASS_UNIT_IO_TEXT  // a guard, as in the other units
#define GPASS_UNIT_IO_TEXT

#include <gpass/io/text.hpp>

#if !GPASS_HEADER_ONLY
template void gpass::detail::text::parse_into<gpass::graph<>>(gpass::graph<>& g, std::string_view text,
                                                              std::string_view source_name);
template void gpass::detail::text::append_graph<gpass::graph<>>(std::string& out, const gpass::graph<>& g,
                                                               const gpass::text_print_options& o);
#endif

#endif  // GPASS_UNIT_IO_TEXT
