// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file loop_fixed_point.hpp
/// `gpass::loop_fixed_point`: the types of loop-carried values, by iterating a loop body's
/// inference and joining (widening) until nothing changes.

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/ops/infer_context.hpp>
#include <gpass/ops/port_info.hpp>

namespace gpass {

/// Function object: `loop_fixed_point(ctx, init, step)` returns the types (and contents) of
/// loop-carried values valid for every iteration.
///
/// `step(state)` infers one iteration: it returns the carried values the body produces from
/// `state`, or nullopt when the body cannot be inferred. The state starts at `init` and
/// becomes `join(state, step(state))` (per value, with the node's join symbols for purpose
/// `v<i>`) until it no longer changes. A dim that changes across iterations becomes a fresh
/// symbol and stays that symbol (joins absorb it), so a loop that doubles a tensor each
/// iteration gives `[k,2]`, never a wrong fixed size and never an endless iteration. Contents
/// that change are dropped. After `ctx.max_loop_iterations()` without a fixed point (which
/// widening makes rare), every carried value becomes unknown.
///
/// A carried value whose dtype changes across iterations fails (`incompatible dtypes f32 and
/// i64 (v1)`).
/// \code
///   auto carried = gpass::loop_fixed_point(c, init, [&](const std::vector<gpass::port_info>& s)
///       -> std::optional<std::vector<gpass::port_info>> { ... c.call(body, s) ... });
/// \endcode
struct loop_fixed_point_fn {
  template <class Step>
  std::vector<port_info> operator()(infer_context& c, std::vector<port_info> init, Step&& step) const {
    std::vector<port_info> state = std::move(init);
    for (auto& p : state) p.type = c.symbols().resolve(p.type);
    for (std::size_t it = 0; it < c.max_loop_iterations(); ++it) {
      std::optional<std::vector<port_info>> next = step(std::as_const(state));
      std::vector<port_info> joined(state.size());
      for (std::size_t i = 0; i < state.size(); ++i) {
        if (!next || i >= next->size()) {
          joined[i] = port_info{};
          continue;
        }
        const port_info& b = (*next)[i];
        joined[i].type = c.join(state[i].type, b.type, "v" + std::to_string(i));
        if (state[i].value == b.value) joined[i].value = state[i].value;
      }
      for (auto& p : joined) p.type = c.symbols().resolve(p.type);
      if (joined == state) return state;
      state = std::move(joined);
    }
    c.note("loop did not reach a fixed point in " + std::to_string(c.max_loop_iterations()) +
           " iterations; carried values widened to unknown");
    return std::vector<port_info>(state.size());
  }
};
inline constexpr loop_fixed_point_fn loop_fixed_point{};

}  // namespace gpass
