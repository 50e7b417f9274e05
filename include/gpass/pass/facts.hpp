// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file facts.hpp
/// Facts: type tags that passes require, provide and invalidate; `gpass::facts<...>` lists
/// them, and the `facts_*_t` aliases compute with such lists at compile time.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gpass {

/// A fact is an empty tag type with a static `name`: something that holds of a graph after
/// a pass establishes it (types inferred, no v1 control flow left, ...). Fact names are
/// what the run-time registry and the `held_facts` graph attribute use, so they must be
/// unique; by convention they are kebab-case.
/// \code
///   struct shapes_inferred { static constexpr std::string_view name = "shapes-inferred"; };
/// \endcode
template <class F>
concept fact = std::is_empty_v<F> && requires {
  { F::name } -> std::convertible_to<std::string_view>;
};

/// A list of facts, used in a pass's `requires_facts`, `provides_facts`, `invalidates_facts`.
/// Order is kept (it is the order names are reported in); duplicates are harmless.
/// \code
///   using provides_facts = gpass::facts<gpass::fact_tags::types_inferred>;
///   static_assert(provides_facts::contains<gpass::fact_tags::types_inferred>);
/// \endcode
template <fact... Fs>
struct facts {
  static constexpr std::size_t size = sizeof...(Fs);
  /// The facts' names, in order.
  static constexpr std::array<std::string_view, sizeof...(Fs)> names{Fs::name...};
  /// True when `F` is in the list.
  template <class F>
  static constexpr bool contains = (std::is_same_v<F, Fs> || ...);
  /// The names as strings (for run-time fact sets).
  static std::vector<std::string> name_strings() { return {std::string(Fs::name)...}; }
};

/// True when `T` is a `gpass::facts<...>` list.
template <class T>
inline constexpr bool is_facts_v = false;
template <class... Fs>
inline constexpr bool is_facts_v<facts<Fs...>> = true;

namespace detail {
template <class L, class F>
struct facts_add;
template <class... Fs, class F>
struct facts_add<facts<Fs...>, F> {
  using type = std::conditional_t<(std::is_same_v<F, Fs> || ...), facts<Fs...>, facts<Fs..., F>>;
};

template <class A, class B>
struct facts_union;
template <class A>
struct facts_union<A, facts<>> {
  using type = A;
};
template <class A, class F, class... Fs>
struct facts_union<A, facts<F, Fs...>> {
  using type = typename facts_union<typename facts_add<A, F>::type, facts<Fs...>>::type;
};

template <class A, class B>
struct facts_difference;
template <class B>
struct facts_difference<facts<>, B> {
  using type = facts<>;
};
template <class F, class... Fs, class B>
struct facts_difference<facts<F, Fs...>, B> {
  using rest = typename facts_difference<facts<Fs...>, B>::type;
  template <class L>
  struct prepend;
  template <class... Ls>
  struct prepend<facts<Ls...>> {
    using type = facts<F, Ls...>;
  };
  using type = std::conditional_t<B::template contains<F>, rest, typename prepend<rest>::type>;
};

template <class A, class B>
struct facts_includes;
template <class A, class... Bs>
struct facts_includes<A, facts<Bs...>> : std::bool_constant<(A::template contains<Bs> && ...)> {};
}  // namespace detail

/// The facts of `A` followed by those of `B` not in `A`.
template <class A, class B>
using facts_union_t = typename detail::facts_union<A, B>::type;
/// The facts of `A` that are not in `B`.
template <class A, class B>
using facts_difference_t = typename detail::facts_difference<A, B>::type;
/// True when every fact of `B` is in `A`.
template <class A, class B>
inline constexpr bool facts_includes_v = detail::facts_includes<A, B>::value;
/// The facts available after a pass with the given `Invalidates` and `Provides` runs on a
/// graph holding `Available`: `(Available - Invalidates) ∪ Provides`.
template <class Available, class Invalidates, class Provides>
using facts_after_t = facts_union_t<facts_difference_t<Available, Invalidates>, Provides>;

/// Facts established by the core passes and importers. A fact is a type (so pipelines check
/// them at compile time) named by its string (so the run-time registry and instrumentation
/// can): each tag below is that one declaration, alike in shape on purpose.
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
/// No TF v1 conditional (Switch/Merge pairs outside loops, from `tf.cond`) is left: they are functional `if`s.
struct conds_functionalized { static constexpr std::string_view name = "conds-functionalized"; };
/// No TF variable op (VariableV2/Assign/`/read`, VarHandleOp/ReadVariableOp/AssignVariableOp) is left:
/// variables are globals (`get_global` / `set_global`) with their initial values kept.
struct variables_lowered { static constexpr std::string_view name = "variables-lowered"; };
/// No TensorArrayV3-family op is left: TensorArrays are `list` values handled by gpass list ops.
struct tensor_arrays_lowered { static constexpr std::string_view name = "tensor-arrays-lowered"; };
/// Every subgraph without a Placeholder/variable/stateful ancestor (within the size limit) is a constant.
struct constants_propagated { static constexpr std::string_view name = "constants-propagated"; };
/// Known values (`value`) and partly known ones (`incomplete_value`) were propagated by inference.
struct values_inferred { static constexpr std::string_view name = "values-inferred"; };
/// No node is left whose only role is to compute the input of a node whose value is known.
struct constant_ancestors_deleted { static constexpr std::string_view name = "constant-ancestors-deleted"; };
/// No node without inputs and outputs is left.
struct no_disconnected { static constexpr std::string_view name = "no-disconnected"; };
/// No node is dead (every node feeds a result or has side effects).
struct no_dead_code { static constexpr std::string_view name = "no-dead-code"; };
}  // namespace fact_tags

}  // namespace gpass
