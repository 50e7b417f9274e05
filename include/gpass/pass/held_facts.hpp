// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file held_facts.hpp
/// `gpass::held_facts`: the graph attribute in which pipelines record the facts a graph holds.

#include <set>
#include <string>

#include <gpass/graph/attr_key.hpp>

namespace gpass {

/// Typed graph attribute holding the names of the facts the graph is known to hold. Every
/// pipeline run (compile-time or dynamic) starts from it (absent = no facts) and updates it
/// after each pass: `held = (held - invalidates) ∪ provides`. A later dynamic pipeline can
/// start its fact check from it:
/// \code
///   gpass::pipeline(gpass::delete_disconnected, gpass::dce)(g);
///   auto p = registry.parse("cse", gpass::held_facts_of(g));   // may require no-dead-code
/// \endcode
/// Passes run outside a pipeline do not update it; code that edits a graph by hand and
/// breaks a fact should erase the attribute (`g.erase(gpass::held_facts)`).
inline constexpr attr_key<std::set<std::string>> held_facts{"gpass.held-facts"};

/// The facts `g` is recorded to hold (empty when the graph has no `held_facts` attribute or
/// its type has no typed attributes).
template <class G>
std::set<std::string> held_facts_of(const G& g) {
  if constexpr (requires { g.has(held_facts); g.get(held_facts); }) {
    if (g.has(held_facts)) return g.get(held_facts);
  }
  return {};
}

}  // namespace gpass
