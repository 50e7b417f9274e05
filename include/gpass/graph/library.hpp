// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file library.hpp
/// `gpass::all_graphs`: a graph and every function of its library tree, for passes and tools
/// that work on each graph in turn; `for_each_function_ref` and `remove_unused_functions`.

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include <gpass/core/attribute.hpp>

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

/// Calls `f(const std::string& name)` for every function an attribute of `attrs` names
/// (`function_ref` and lists of them), in attribute order.
template <class F>
void for_each_function_ref(const attribute_map& attrs, F&& f) {
  for (const auto& [an, a] : attrs) {
    if (a.template is<function_ref>()) {
      f(a.template as<function_ref>().name);
    } else if (a.template is<std::vector<function_ref>>()) {
      for (const auto& r : a.template as<std::vector<function_ref>>()) f(r.name);
    }
  }
}

/// Calls `f(const std::string& name)` for every function an attribute of a node of `h` names
/// (`function_ref` and lists of them), in node order.
template <class G, class F>
void for_each_function_ref(const G& h, F&& f) {
  for (auto v : h.nodes()) for_each_function_ref(h[v].attrs, f);
}

/// Removes the functions of `g`'s library that no node of `g` refers to, directly or through
/// other functions of the library; returns how many went. Iterative (no recursion).
template <class G>
std::size_t remove_unused_functions(G& g) {
  std::set<std::string, std::less<>> live;
  std::vector<const G*> work{&g};
  while (!work.empty()) {
    const G* h = work.back();
    work.pop_back();
    for_each_function_ref(*h, [&](const std::string& name) {
      if (live.insert(name).second)
        if (const G* fn = g.find_function(name)) work.push_back(fn);
    });
  }
  std::size_t removed = 0;
  for (auto it = g.functions().begin(); it != g.functions().end();) {
    if (!live.contains(it->first)) {
      it = g.functions().erase(it);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

}  // namespace gpass
