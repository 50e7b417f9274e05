// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file library.hpp
/// `gpass::all_graphs`: a graph and every function of its library tree, for passes and tools
/// that work on each graph in turn.

#include <vector>

namespace gpass {

/// Every graph of `g`'s function library tree, `g` first (pre-order, iterative: no recursion
/// however deep the nesting). `G` may be const (`all_graphs(std::as_const(g))` gives
/// pointers to const graphs). The pointers stay valid while no function is added to or
/// removed from a library.
/// \code
///   for (auto* h : gpass::all_graphs(g)) n += h->num_nodes();   // nodes, functions included
/// \endcode
template <class G>
auto all_graphs(G& g) {
  using ptr = G*;
  std::vector<ptr> out, stack{&g};
  while (!stack.empty()) {
    ptr cur = stack.back();
    stack.pop_back();
    out.push_back(cur);
    for (auto& [name, f] : cur->functions())
      if (f) stack.push_back(f.get());
  }
  return out;
}

}  // namespace gpass
