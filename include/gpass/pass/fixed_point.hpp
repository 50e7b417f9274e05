// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fixed_point.hpp
/// `gpass::fixed_point(p, n)`: run a pass or pipeline again until a round leaves the graph
/// unchanged, at most `n` rounds (the textual form is `fixed-point{pipeline="a,b",
/// max-iterations=n}`, see `pass_registry::parse`).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include <gpass/pass/context.hpp>
#include <gpass/pass/dynamic_pipeline.hpp>
#include <gpass/pass/instrumentation.hpp>
#include <gpass/pass/options.hpp>
#include <gpass/pass/pass.hpp>
#include <gpass/pass/pipeline.hpp>

namespace gpass {

namespace detail {
/// Runs `round()` until a round changes nothing (by `runner.changed_passes()`: a pass that
/// does not report its changes always counts as one) or `max_rounds` rounds ran. Records the
/// statistic `fixed-point.rounds` and warns when the cap stopped it.
template <class G, class Round>
void run_to_fixed_point(pipeline_runner<G>& runner, std::size_t max_rounds, Round&& round) {
  std::size_t rounds = 0;
  bool converged = false;
  while (rounds < max_rounds) {
    const std::size_t before = runner.changed_passes();
    round();
    ++rounds;
    if (runner.changed_passes() == before) {
      converged = true;
      break;
    }
  }
  pass_context& ctx = runner.context();
  std::string outer = ctx.current_pass();
  ctx.set_current_pass("fixed-point");
  ctx.add_statistic("rounds", static_cast<std::int64_t>(rounds));
  if (!converged && max_rounds > 0)
    ctx.warn("no fixed point after " + std::to_string(max_rounds) + " rounds (max-iterations); the last round changed the graph");
  ctx.set_current_pass(std::move(outer));
}
}  // namespace detail

/// A pass or pipeline `P` run to a fixed point (see `gpass::fixed_point`). Its facts are
/// those of `P`; each inner pass is instrumented on its own (verified when it changed the
/// graph, timed, dumped) by the enclosing pipeline.
template <class P>
class fixed_point_t : public detail::runs_passes<fixed_point_t<P>> {
 public:
  static constexpr std::string_view name = "fixed-point";
  static constexpr std::string_view description = "Run a pipeline again until a round changes nothing";
  using requires_facts = pass_requires_t<P>;
  using provides_facts = pass_provides_t<P>;
  using invalidates_facts = pass_invalidates_t<P>;
  static constexpr bool runs_nested = true;

  static_assert(facts_includes_v<facts_after_t<requires_facts, invalidates_facts, provides_facts>, requires_facts>,
                "gpass::fixed_point: the pass breaks a fact it requires, so a second round could not run");

  fixed_point_t(P inner, std::size_t max_iterations) : inner_(std::move(inner)), max_(max_iterations) {}

  /// The inner pass or pipeline, and the round cap.
  const P& inner() const noexcept { return inner_; }
  std::size_t max_iterations() const noexcept { return max_; }

  // p(g, ctx), p(g), p.run(g, ctx, options): see detail::runs_passes.
  /// Runs the rounds through an enclosing pipeline's runner.
  template <class G>
  void run_nested(detail::pipeline_runner<G>& runner) const {
    detail::run_to_fixed_point(runner, max_, [&] {
      if constexpr (detail::runs_nested_v<P>) {
        inner_.run_nested(runner);
      } else if constexpr (detail::assert_pass_for<P, G>::value) {
        runner.run_pass(detail::pass_info_of<P>(), [&] { inner_(runner.graph(), runner.context()); });
      }
    });
  }

 private:
  P inner_;
  std::size_t max_;
};

/// Runs `p` (a pass or a pipeline) again and again until a whole round changes nothing, at
/// most `max_iterations` rounds; warns (`ctx.diagnostics()`) when the cap stops it. Passes
/// that do not report their changes (`pass_context::report_changed`) count as changing the graph, so a
/// round holding one never converges: give fixed points passes that report.
/// \code
///   auto cleanup = gpass::fixed_point(gpass::pipeline(my_fold, gpass::dce), 8);
///   cleanup(g, ctx);                                // ctx.statistics()["fixed-point.rounds"]
/// \endcode
template <class P>
  requires pass_like<std::remove_cvref_t<P>>
fixed_point_t<std::remove_cvref_t<P>> fixed_point(P&& p, std::size_t max_iterations = 10) {
  return {std::forward<P>(p), max_iterations};
}

/// The options of the textual `fixed-point{...}` (what `--list-passes` shows).
inline constexpr std::array fixed_point_options{
    option_spec{"pipeline", option_type::string, "", "the passes of one round (required; quote it: \"a,b\")"},
    option_spec{"max-iterations", option_type::integer, "10", "rounds at most"}};

/// The textual `fixed-point{pipeline="...",max-iterations=N}` of `pass_registry::parse`: a
/// `dynamic_pipeline` run to a fixed point. Its facts are computed by the registry.
template <class G>
class dynamic_fixed_point : public detail::runs_passes<dynamic_fixed_point<G>> {
 public:
  static constexpr std::string_view name = "fixed-point";
  static constexpr std::string_view description = "Run a pipeline again until a round changes nothing";
  static constexpr bool runs_nested = true;

  dynamic_fixed_point(dynamic_pipeline<G> inner, std::size_t max_iterations)
      : inner_(std::move(inner)), max_(max_iterations) {}
  const dynamic_pipeline<G>& inner() const noexcept { return inner_; }
  std::size_t max_iterations() const noexcept { return max_; }

  void run_nested(detail::pipeline_runner<G>& runner) const {
    detail::run_to_fixed_point(runner, max_, [&] { inner_.run_nested(runner); });
  }

 private:
  dynamic_pipeline<G> inner_;
  std::size_t max_;
};

}  // namespace gpass
