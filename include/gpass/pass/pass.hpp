// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file pass.hpp
/// The pass concept (`gpass::pass_like`, `gpass::pass_for<P, G>`) and the traits that read a
/// pass's declared facts and required attributes.

#include <array>
#include <concepts>
#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>

namespace gpass {

namespace detail {
/// `Member<P>` when that names a type, else `facts<>`: the declared facts of a pass, which
/// may leave out any of its three lists.
template <template <class> class Member, class P>
struct facts_member_or_none {
  using type = facts<>;
};
template <template <class> class Member, class P>
  requires requires { typename Member<P>; }
struct facts_member_or_none<Member, P> {
  using type = Member<P>;
};
template <class P>
using requires_member = typename P::requires_facts;
template <class P>
using provides_member = typename P::provides_facts;
template <class P>
using invalidates_member = typename P::invalidates_facts;

inline constexpr std::array<std::string_view, 0> no_names{};

template <class P>
constexpr std::span<const std::string_view> required_options_of() {
  if constexpr (requires { std::span<const std::string_view>(P::required_options); })
    return std::span<const std::string_view>(P::required_options);
  else
    return std::span<const std::string_view>(no_names);
}
template <class P>
constexpr std::span<const std::string_view> required_graph_attrs_of() {
  if constexpr (requires { std::span<const std::string_view>(P::required_graph_attrs); })
    return std::span<const std::string_view>(P::required_graph_attrs);
  else
    return std::span<const std::string_view>(no_names);
}

/// A static member usable as a compile-time `std::string_view` (what pipelines need to build
/// their names at compile time).
template <class P>
concept has_constexpr_name = requires {
  { P::name } -> std::convertible_to<std::string_view>;
  typename std::integral_constant<std::size_t, std::string_view(P::name).size()>;
};
template <class P>
concept has_constexpr_description = requires {
  { P::description } -> std::convertible_to<std::string_view>;
  typename std::integral_constant<std::size_t, std::string_view(P::description).size()>;
};
}  // namespace detail

/// The facts a pass requires before it runs: `P::requires_facts`, or `facts<>` when absent.
template <class P>
using pass_requires_t = typename detail::facts_member_or_none<detail::requires_member, std::remove_cvref_t<P>>::type;
/// The facts a pass establishes: `P::provides_facts`, or `facts<>` when absent.
template <class P>
using pass_provides_t = typename detail::facts_member_or_none<detail::provides_member, std::remove_cvref_t<P>>::type;
/// The facts a pass may break: `P::invalidates_facts`, or `facts<>` when absent. A fact that
/// is neither invalidated nor provided is preserved by the pass.
template <class P>
using pass_invalidates_t = typename detail::facts_member_or_none<detail::invalidates_member, std::remove_cvref_t<P>>::type;

/// The option keys a pass requires in its `pass_context` (seed 001's `RequirePassAttr`):
/// `P::required_options` (a `std::array<std::string_view, N>`), or empty. Keys are full
/// context keys, by convention `pass-name.option`.
template <class P>
inline constexpr std::span<const std::string_view> pass_required_options_v =
    detail::required_options_of<std::remove_cvref_t<P>>();
/// The typed graph attributes (by name) a pass requires on its graph (seed 001's
/// `RequireGraphAttr`): `P::required_graph_attrs`, or empty.
template <class P>
inline constexpr std::span<const std::string_view> pass_required_graph_attrs_v =
    detail::required_graph_attrs_of<std::remove_cvref_t<P>>();

/// The graph-independent half of the pass concept.
///
/// Minimal definition: a copyable object type with `static constexpr std::string_view name`
/// and `description`; optionally `requires_facts`, `provides_facts`, `invalidates_facts`
/// (each a `gpass::facts<...>`), `required_options` and `required_graph_attrs` (each a
/// `static constexpr std::array<std::string_view, N>`), `options` (the typed options it
/// takes, a `std::array<gpass::option_spec, N>`: a textual pipeline giving it any other is
/// an error) and `skip_when_held` (it only
/// establishes its provided facts, so pipelines skip it on a graph that holds them).
///
/// Laws: a pass holds no state that a run mutates (options are immutable members; it is
/// always called through a const reference); after it runs on a graph that holds its
/// `requires_facts`, the graph holds its `provides_facts`, and every fact it held that is
/// not in `invalidates_facts` still holds.
template <class P>
concept pass_like = std::is_object_v<P> && std::copy_constructible<P> && detail::has_constexpr_name<P> &&
                    detail::has_constexpr_description<P> && is_facts_v<pass_requires_t<P>> &&
                    is_facts_v<pass_provides_t<P>> && is_facts_v<pass_invalidates_t<P>>;

/// A pass that can run on graphs of type `G`: a `pass_like` object callable as
/// `std::as_const(p)(g, ctx)` with `G& g` and `gpass::pass_context& ctx`.
/// \code
///   struct count_fn {
///     static constexpr std::string_view name = "count";
///     static constexpr std::string_view description = "Counts nodes";
///     template <class G> void operator()(G& g, gpass::pass_context& ctx) const {
///       ctx.add_statistic("nodes", static_cast<std::int64_t>(g.num_nodes()));
///     }
///   };
///   static_assert(gpass::pass_for<count_fn, gpass::graph<>>);
/// \endcode
template <class P, class G>
concept pass_for = pass_like<P> && requires(const P& p, G& g, pass_context& ctx) { p(g, ctx); };

namespace detail {
/// Instantiated with each argument of a pipeline, so that the diagnostic names the type.
template <class P>
struct assert_pass_like {
  static_assert(pass_like<P>,
                "gpass::pipeline: argument is not a pass (needs static name, description and const "
                "operator()(G&, pass_context&))");
  static_assert(is_facts_v<pass_requires_t<P>> && is_facts_v<pass_provides_t<P>> && is_facts_v<pass_invalidates_t<P>>,
                "gpass::pipeline: a pass's requires_facts, provides_facts and invalidates_facts must be gpass::facts<...>");
  static constexpr bool value = pass_like<P>;
};
/// Instantiated with a pass and a graph type when a pipeline runs.
template <class P, class G>
struct assert_pass_for {
  static_assert(pass_for<P, G>,
                "gpass::pipeline: pass cannot run on this graph type (needs const operator()(G&, pass_context&))");
  static constexpr bool value = pass_for<P, G>;
};
}  // namespace detail

}  // namespace gpass
