// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file pipeline.hpp
/// `gpass::pipeline(a, b, c)` / `a | b | c`: passes composed at compile time (Boost.Hana),
/// with the facts each pass requires checked against those earlier passes provide.

#include <array>
#include <cstddef>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

#include <boost/hana/append.hpp>
#include <boost/hana/concat.hpp>
#include <boost/hana/flatten.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/tuple.hpp>
#include <boost/hana/unpack.hpp>

#include <gpass/pass/context.hpp>
#include <gpass/pass/detail/pass_info.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/instrumentation.hpp>
#include <gpass/pass/pass.hpp>

namespace gpass {

template <class Initial, class... Ps>
class pipeline_t;

namespace detail {

template <class T>
inline constexpr bool is_pipeline_v = false;
template <class I, class... Ps>
inline constexpr bool is_pipeline_v<pipeline_t<I, Ps...>> = true;

/// A pass that runs other passes through the enclosing pipeline's runner (a pipeline, a
/// `fixed_point`), so that each of them is instrumented on its own: it declares
/// `static constexpr bool runs_nested = true` and `template <class G> void
/// run_nested(pipeline_runner<G>&) const`.
template <class T>
inline constexpr bool runs_nested_v = [] {
  if constexpr (requires { bool(T::runs_nested); }) return bool(T::runs_nested);
  else return false;
}();

template <class...>
inline constexpr bool fact_check_false = false;

/// Instantiated when pass `P` requires fact `F` and no earlier pass of the pipeline provides
/// it (nor the pipeline's initial facts): the compiler's diagnostic names both types.
template <class P, class F>
struct missing_fact {
  static_assert(fact_check_false<P, F>, "gpass::pipeline: pass requires a fact that no earlier pass provides");
  static constexpr bool value = true;  // keep going after the diagnostic (no cascade)
};
template <class P, class F, bool Available>
struct require_fact {
  static constexpr bool value = true;
};
template <class P, class F>
struct require_fact<P, F, false> : missing_fact<P, F> {};

template <class P, class Available, class Required>
struct check_requires;
template <class P, class Available, class... Fs>
struct check_requires<P, Available, facts<Fs...>> {
  static constexpr bool value = (require_fact<P, Fs, Available::template contains<Fs>>::value && ... && true);
};

/// Walks the passes of a pipeline: checks each pass's requirements against the facts
/// available before it, and computes the pipeline's net effect. `Provided`: facts whose last
/// mention is a provide; `Invalidated`: facts whose last mention is an invalidate; so that
/// for any starting set A the facts after the pipeline are `(A - Invalidated) ∪ Provided`.
template <class Available, class Provided, class Invalidated, class... Ps>
struct simulate_facts {
  using available = Available;
  using provides = Provided;
  using invalidates = Invalidated;
};
template <class Available, class Provided, class Invalidated, class P, class... Ps>
struct simulate_facts<Available, Provided, Invalidated, P, Ps...> {
  static_assert(check_requires<P, Available, pass_requires_t<P>>::value);
  using prov = pass_provides_t<P>;
  using inv = pass_invalidates_t<P>;
  using next = simulate_facts<facts_after_t<Available, inv, prov>, facts_after_t<Provided, inv, prov>,
                        facts_union_t<facts_difference_t<Invalidated, prov>, facts_difference_t<inv, prov>>, Ps...>;
  using available = typename next::available;
  using provides = typename next::provides;
  using invalidates = typename next::invalidates;
};

/// The names of `Ps...` joined with ',' (the textual pipeline syntax), at compile time.
template <class... Ps>
struct joined_name {
  static constexpr std::size_t size =
      (std::string_view(Ps::name).size() + ... + std::size_t{0}) + (sizeof...(Ps) > 0 ? sizeof...(Ps) - 1 : 0);
  static constexpr std::array<char, size + 1> storage = [] {
    std::array<char, size + 1> a{};
    std::size_t i = 0;
    bool first = true;
    auto put = [&](std::string_view s) {
      if (!first) a[i++] = ',';
      first = false;
      for (char c : s) a[i++] = c;
    };
    (put(std::string_view(Ps::name)), ...);
    (void)put;
    return a;
  }();
  static constexpr std::string_view value{storage.data(), size};
};

/// The concatenation of the passes' required options (or graph attributes), at compile time.
template <bool Attrs, class... Ps>
struct joined_requirements {
  template <class P>
  static constexpr std::span<const std::string_view> of() {
    if constexpr (Attrs) return pass_required_graph_attrs_v<P>;
    else return pass_required_options_v<P>;
  }
  static constexpr std::size_t size = (of<Ps>().size() + ... + std::size_t{0});
  static constexpr std::array<std::string_view, size> value = [] {
    std::array<std::string_view, size> a{};
    std::size_t i = 0;
    auto put = [&](std::span<const std::string_view> s) {
      for (auto x : s) a[i++] = x;
    };
    (put(of<Ps>()), ...);
    (void)put;
    return a;
  }();
};

/// A pipeline argument as a tuple of elements: a pipeline without initial facts is spliced
/// (its passes), anything else is one element (a `pipeline_from` keeps its boundary).
template <class P>
auto splice(P&& p) {
  using T = std::remove_cvref_t<P>;
  if constexpr (is_pipeline_v<T>) {
    if constexpr (std::is_same_v<typename T::requires_facts, facts<>>)
      return std::forward<P>(p).passes();
    else
      return boost::hana::make_tuple(std::forward<P>(p));
  } else {
    return boost::hana::make_tuple(std::forward<P>(p));
  }
}

template <class Initial, class... Ps>
pipeline_t<Initial, Ps...> make_pipeline(boost::hana::tuple<Ps...> t) {
  return pipeline_t<Initial, Ps...>(std::move(t));
}

/// Instantiates `assert_pass_like` for each argument (which diagnoses non-passes with a
/// readable message); always true itself, so that one diagnostic is printed, not three.
template <class... Ps>
constexpr bool all_passes() {
  return ((sizeof(assert_pass_like<std::remove_cvref_t<Ps>>) > 0) && ... && true);
}

}  // namespace detail

/// A compile-time pipeline: passes run in order on one graph, with instrumentation
/// (`instrumentation_options`) around each. Built by `gpass::pipeline(...)`,
/// `gpass::pipeline_from<facts<...>>(...)` or `a | b`; do not name the type, use `auto`.
///
/// Compile-time facts: the facts available before the first pass are `Initial` (none unless
/// `pipeline_from` says so); after each pass they are `(available - invalidates) ∪ provides`.
/// A pass that requires a fact not available at its position makes the pipeline ill-formed,
/// with a diagnostic naming `gpass::detail::missing_fact<Pass, Fact>`.
///
/// A pipeline is itself a pass (`pass_for<pipeline_t<...>, G>`): its `name` is the names of
/// its passes joined by ',', it requires `Initial`, and it provides / invalidates the net
/// effect of its passes, so pipelines compose and can be registered.
/// \code
///   auto p = gpass::delete_disconnected | gpass::dce;
///   p(g);                              // own context, verify after each pass
///   gpass::pass_context ctx;
///   p(g, ctx);                         // same, statistics and diagnostics in ctx
///   gpass::instrumentation_options o;
///   o.timing = true;
///   p.run(g, ctx, o);                  // other instrumentation
///   static_assert(decltype(p)::name == "delete-disconnected,dce");
/// \endcode
template <class Initial, class... Ps>
class pipeline_t : public detail::runs_passes<pipeline_t<Initial, Ps...>> {
  static_assert(is_facts_v<Initial>, "gpass::pipeline_from<F>: F must be gpass::facts<...>");
  static_assert(detail::all_passes<Ps...>());
  using sim = detail::simulate_facts<Initial, facts<>, facts<>, Ps...>;

 public:
  /// The facts the pipeline needs on its input (its `Initial` facts).
  using requires_facts = Initial;
  /// Facts the pipeline establishes (whose last mention in the pipeline is a provide).
  using provides_facts = typename sim::provides;
  /// Facts the pipeline may break (whose last mention in the pipeline is an invalidate).
  using invalidates_facts = typename sim::invalidates;
  /// The facts held after the pipeline when its input holds exactly `Initial`.
  using available_facts = typename sim::available;

  /// The names of the passes, joined by ',' (nested pipelines contribute their own name).
  static constexpr std::string_view name = detail::joined_name<Ps...>::value;
  static constexpr std::string_view description = "compile-time pipeline";
  /// All required options of its passes (for information: they are checked pass by pass).
  static constexpr auto required_options = detail::joined_requirements<false, Ps...>::value;
  /// All required graph attributes of its passes (for information).
  static constexpr auto required_graph_attrs = detail::joined_requirements<true, Ps...>::value;
  /// The number of elements (passes and nested pipelines).
  static constexpr std::size_t size = sizeof...(Ps);
  static constexpr bool runs_nested = true;

  pipeline_t()
    requires(std::is_default_constructible_v<Ps> && ...)
  = default;
  explicit pipeline_t(boost::hana::tuple<Ps...> passes) : passes_(std::move(passes)) {}

  /// The passes, in order.
  const boost::hana::tuple<Ps...>& passes() const& noexcept { return passes_; }
  boost::hana::tuple<Ps...> passes() && noexcept { return std::move(passes_); }

  // p(g, ctx), p(g), p.run(g, ctx, options): see detail::runs_passes.

  /// Runs the passes through an existing runner (used by enclosing pipelines; not for users).
  template <class G>
  void run_nested(detail::pipeline_runner<G>& runner) const {
    boost::hana::for_each(passes_, [&](const auto& p) {
      using P = std::remove_cvref_t<decltype(p)>;
      if constexpr (detail::runs_nested_v<P>) {
        p.run_nested(runner);
      } else if constexpr (detail::assert_pass_for<P, G>::value) {
        runner.run_pass(detail::pass_info_of<P>(), [&] { p(runner.graph(), runner.context()); });
      }
    });
  }

 private:
  boost::hana::tuple<Ps...> passes_;
};

/// Composes passes (and pipelines) into a compile-time pipeline starting from no facts.
/// A pipeline argument is spliced in, except a `pipeline_from` that is not the first
/// argument, which stays one element whose initial facts are checked at its position. When
/// the first argument is a pipeline, the result starts from its initial facts.
/// \code
///   auto p = gpass::pipeline(gpass::delete_disconnected, gpass::dce);
/// \endcode
template <class... Ps>
auto pipeline(Ps&&... ps) {
  static_assert(detail::all_passes<Ps...>());
  if constexpr (sizeof...(Ps) == 0) {
    return pipeline_t<facts<>>();
  } else {
    return [](auto&& first, auto&&... rest) {
      using F = std::remove_cvref_t<decltype(first)>;
      if constexpr (detail::is_pipeline_v<F>) {
        return detail::make_pipeline<typename F::requires_facts>(boost::hana::flatten(boost::hana::make_tuple(
            std::forward<decltype(first)>(first).passes(), detail::splice(std::forward<decltype(rest)>(rest))...)));
      } else {
        return detail::make_pipeline<facts<>>(boost::hana::flatten(boost::hana::make_tuple(
            boost::hana::make_tuple(std::forward<decltype(first)>(first)),
            detail::splice(std::forward<decltype(rest)>(rest))...)));
      }
    }(std::forward<Ps>(ps)...);
  }
}

/// Like `pipeline(...)`, but the pipeline starts from the facts `Initial` (a
/// `gpass::facts<...>`), which become its `requires_facts`.
/// \code
///   auto tail = gpass::pipeline_from<gpass::facts<gpass::fact_tags::types_inferred>>(my_fold, gpass::dce);
/// \endcode
template <class Initial, class... Ps>
auto pipeline_from(Ps&&... ps) {
  static_assert(is_facts_v<Initial>, "gpass::pipeline_from<F>: F must be gpass::facts<...>");
  static_assert(detail::all_passes<Ps...>());
  return detail::make_pipeline<Initial>(
      boost::hana::flatten(boost::hana::make_tuple(boost::hana::tuple<>{}, detail::splice(std::forward<Ps>(ps))...)));
}

/// `a | b`: the same as `gpass::pipeline(a, b)`, so `a | b | c` is one flat pipeline.
/// Found by argument-dependent lookup when an operand is a gpass type; for two passes of
/// your own namespace, write `using gpass::operator|;` or use `gpass::pipeline`.
template <class A, class B>
  requires(pass_like<std::remove_cvref_t<A>> && pass_like<std::remove_cvref_t<B>>)
auto operator|(A&& a, B&& b) {
  return pipeline(std::forward<A>(a), std::forward<B>(b));
}

}  // namespace gpass
