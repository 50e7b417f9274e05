#pragma once
/// \file facts.hpp
/// Facts: type tags that passes require, provide and invalidate; `gpass::facts<...>` lists them.

#include <array>
#include <string_view>
#include <type_traits>

namespace gpass {

/// A fact is an empty tag type with a static `name`: something that holds of a graph after
/// a pass establishes it (types inferred, no v1 control flow left, ...).
/// \code
///   struct shapes_inferred { static constexpr std::string_view name = "shapes-inferred"; };
/// \endcode
template <class F>
concept fact = std::is_empty_v<F> && requires {
  { F::name } -> std::convertible_to<std::string_view>;
};

/// A list of facts, used in a pass's `requires_facts`, `provides_facts`, `invalidates_facts`.
template <fact... Fs>
struct facts {
  static constexpr std::size_t size = sizeof...(Fs);
  /// The facts' names, in order.
  static constexpr std::array<std::string_view, sizeof...(Fs)> names{Fs::name...};
  /// True when `F` is in the list.
  template <class F>
  static constexpr bool contains = (std::is_same_v<F, Fs> || ...);
};

/// Facts established by the core passes and importers.
namespace fact_tags {
/// The graph passed the verifier (structure is sound).
struct verified { static constexpr std::string_view name = "verified"; };
/// Every node output has a known dtype (or an explicit unknown where inference could not decide).
struct types_inferred { static constexpr std::string_view name = "types-inferred"; };
/// Every node output has a shape (possibly symbolic or of unknown rank).
struct shapes_inferred { static constexpr std::string_view name = "shapes-inferred"; };
/// Every data edge goes from a single-value output (TF `node:i` ports split by get_tuple).
struct get_tuple_inserted { static constexpr std::string_view name = "get-tuple-inserted"; };
/// No TF v1 control-flow op (Enter/Exit/Merge/Switch/NextIteration/LoopCond) is left.
struct loops_functionalized { static constexpr std::string_view name = "loops-functionalized"; };
/// No node without inputs and outputs is left.
struct no_disconnected { static constexpr std::string_view name = "no-disconnected"; };
/// No node is dead (every node feeds a result or has side effects).
struct no_dead_code { static constexpr std::string_view name = "no-dead-code"; };
}  // namespace fact_tags

}  // namespace gpass
