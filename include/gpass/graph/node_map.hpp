// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file node_map.hpp
/// `gpass::node_map<G, T>`: a dense side table from nodes to values, indexed by serial number.

#include <cstddef>
#include <vector>

#include <gpass/graph/graph.hpp>

namespace gpass {

/// A side table holding one `T` per node of `g` (indexed by `g.serial(n)`), O(1) access.
/// Valid for nodes that existed when it was made (and for later ones after `grow()`).
/// \code
///   gpass::node_map<G, int> depth(g, 0);
///   depth[n] = 3;
/// \endcode
template <class G, class T>
class node_map {
 public:
  node_map(const G& g, T init = T{}) : g_(&g), init_(init), v_(g.serial_bound(), init) {}
  typename std::vector<T>::reference operator[](typename G::node_id n) {
    auto s = g_->serial(n);
    if (s >= v_.size()) [[unlikely]] grow();  // out of line: the common path inlines
    return v_[s];
  }
  typename std::vector<T>::const_reference operator[](typename G::node_id n) const { return v_[g_->serial(n)]; }
  /// Extends the table to nodes added to the graph since it was made.
  [[gnu::noinline]] void grow() { v_.resize(g_->serial_bound(), init_); }

 private:
  const G* g_;
  T init_;
  std::vector<T> v_;
};

}  // namespace gpass
