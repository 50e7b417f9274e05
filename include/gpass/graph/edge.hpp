// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file edge.hpp
/// `gpass::edge`: the default edge type (data edge `src_port -> dst_port`, or control edge),
/// and the `edge_like` concept.

#include <concepts>

namespace gpass {

/// The port number of both ends of a control edge.
inline constexpr int control_port = -1;

/// The default edge: a data edge from output `src_port` to input `dst_port`, or a control
/// edge when both ports are `control_port`.
struct edge {
  int src_port = 0;
  int dst_port = 0;
  bool is_control() const noexcept { return src_port == control_port; }
  friend bool operator==(const edge&, const edge&) = default;
};

/// What gpass requires of an edge type: `int src_port, dst_port` and construction from the
/// two ports (`Edge{src, dst}`); a control edge has both ports equal to `control_port`.
template <class E>
concept edge_like = std::semiregular<E> && requires(E e) {
  { e.src_port } -> std::convertible_to<int>;
  { e.dst_port } -> std::convertible_to<int>;
  E{0, 0};
};

}  // namespace gpass
