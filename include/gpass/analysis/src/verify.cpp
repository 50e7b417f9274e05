// SPDX-License-Identifier: Apache-2.0
/// \file verify.cpp
/// A gpass unit (see gpass/config.hpp): the verifier on the default graph type, instantiated
/// once for the program with GPASS_SEPARATE_COMPILATION (<gpass/analysis/verify.hpp>
/// declares it `extern`). Empty in header-only mode.

#ifndef GPASS_UNIT_ANALYSIS_VERIFY  // a guard, as in the other units
#define GPASS_UNIT_ANALYSIS_VERIFY

#include <gpass/analysis/verify.hpp>

#if !GPASS_HEADER_ONLY
template std::vector<gpass::violation> gpass::detail::verify_all<gpass::graph<>>(const gpass::graph<>& g,
                                                                                const gpass::verify_options& options);
#endif

#endif  // GPASS_UNIT_ANALYSIS_VERIFY
