// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file broadcast.hpp
/// `gpass::broadcast_shapes`: numpy (multidirectional) broadcasting of shapes with symbolic dims.

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <gpass/core/symbols.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>

namespace gpass {

/// Function object: `broadcast_shapes(shapes, symbols)` is the numpy broadcast of `shapes`
/// (ranks aligned on the right; per dim: equal dims stay, `1` yields to the other side).
///
/// With symbols: `n` and `n` give `n`; `1` and `n` give `n`; a known `k > 1` and `n` give
/// `k` (either `n == k` or `n == 1`; nothing is bound); `n` and `m` give `?`; anything with
/// an unknown-rank shape gives an unknown rank. Two different known dims, neither 1, throw
/// `gpass::error("incompatible dims 3 and 4 in input 1")` (the index of the shape that
/// conflicts with the broadcast of the shapes before it).
/// \code
///   gpass::symbol_table s;
///   auto n = gpass::dim::symbol("n");
///   gpass::broadcast_shapes({gpass::shape{n, 1}, gpass::shape{3}}, s).to_string() == "[n,3]";
/// \endcode
struct broadcast_shapes_fn {
  shape operator()(const std::vector<shape>& shapes, symbol_table& symbols) const {
    std::size_t rank = 0;
    for (const auto& s : shapes) {
      if (!s.has_rank()) return shape();
      rank = std::max(rank, s.rank());
    }
    std::vector<dim> r(rank, dim(1));
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      const shape& s = shapes[k];
      std::size_t off = rank - s.rank();
      for (std::size_t i = 0; i < s.rank(); ++i) {
        dim& acc = r[off + i];
        dim d = symbols.resolve(s[i]);
        acc = symbols.resolve(acc);
        if (acc == d) continue;
        if (acc.is_known() && acc.value() == 1) {
          acc = d;
          continue;
        }
        if (d.is_known() && d.value() == 1) continue;
        if (acc.is_known() && d.is_known())
          throw error("incompatible dims " + acc.to_string() + " and " + d.to_string() + " in input " +
                      std::to_string(k));
        if (acc.is_known()) continue;  // k > 1 vs symbolic/unknown: k
        if (d.is_known()) {
          acc = d;
          continue;
        }
        acc = dim();  // symbolic/unknown vs a different symbolic/unknown
      }
    }
    return shape(std::move(r));
  }
};
inline constexpr broadcast_shapes_fn broadcast_shapes{};

}  // namespace gpass
