// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file attr_key.hpp
/// `gpass::attr_key<T>`: a typed key for graph attributes (seed 001's `Get/Set/Has`).

#include <string_view>

namespace gpass {

/// A typed name for a graph attribute. Declare keys once, as constants:
/// \code
///   inline constexpr gpass::attr_key<int> optimize_level{"optimize_level"};
///   g.set(optimize_level, 1);
///   if (g.has(optimize_level)) use(g.get(optimize_level));
/// \endcode
/// Getting a key with a different `T` than it was set with throws `gpass::error`.
template <class T>
struct attr_key {
  using value_type = T;
  std::string_view name;
};

}  // namespace gpass
