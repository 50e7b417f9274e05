// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file any_pass.hpp
/// `gpass::any_pass<G>`: a type-erased pass on graphs of type `G` (what the run-time registry
/// stores), with its name, description, facts and required attributes as strings.

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/pass/context.hpp>
#include <gpass/pass/detail/pass_info.hpp>
#include <gpass/pass/instrumentation.hpp>
#include <gpass/pass/pass.hpp>
#include <gpass/pass/pipeline.hpp>

namespace gpass {

/// A pass of any type that runs on `G`, behind a cheap, copyable, immutable handle.
/// A compile-time pipeline wrapped in an `any_pass` keeps its inner passes: when it runs in
/// a dynamic pipeline, each of them is instrumented (verified, timed, dumped) on its own.
/// \code
///   gpass::any_pass<gpass::graph<>> p(gpass::dce);
///   p.name();                 // "dce"
///   p.provides_facts();       // {"no-dead-code"}
///   p(g, ctx);                // runs it (no instrumentation)
/// \endcode
template <class G>
class any_pass {
  struct model {
    virtual ~model() = default;
    virtual void call(G& g, pass_context& ctx) const = 0;
    virtual void run_in(detail::pipeline_runner<G>& runner, const detail::pass_info& info) const = 0;
  };
  template <class P>
  struct model_of final : model {
    explicit model_of(P p) : pass(std::move(p)) {}
    void call(G& g, pass_context& ctx) const override { pass(g, ctx); }
    void run_in(detail::pipeline_runner<G>& runner, const detail::pass_info& info) const override {
      if constexpr (detail::runs_nested_v<P>) {
        pass.run_nested(runner);
      } else {
        runner.run_pass(info, [&] { pass(runner.graph(), runner.context()); });
      }
    }
    P pass;
  };

 public:
  /// Wraps a pass; its name and description are `P::name` and `P::description`.
  template <class P>
    requires(!std::is_same_v<std::remove_cvref_t<P>, any_pass> && pass_for<std::remove_cvref_t<P>, G>)
  explicit any_pass(P&& p)
      : info_(std::make_shared<const detail::pass_info>(detail::pass_info_of<std::remove_cvref_t<P>>())),
        impl_(std::make_shared<const model_of<std::remove_cvref_t<P>>>(std::forward<P>(p))),
        is_pipeline_(detail::is_pipeline_v<std::remove_cvref_t<P>>) {}

  /// Wraps a pass with the given description (a pass whose facts are known only at run
  /// time: a textual `fixed-point{...}`).
  template <class P>
    requires pass_for<std::remove_cvref_t<P>, G>
  any_pass(detail::pass_info info, P&& p) : any_pass(std::forward<P>(p)) {
    info_ = std::make_shared<const detail::pass_info>(std::move(info));
  }

  /// Wraps a pass under another name (and description, when not empty); used to register a
  /// compile-time pipeline under a short name.
  template <class P>
    requires pass_for<std::remove_cvref_t<P>, G>
  any_pass(std::string name, P&& p, std::string description = {}) : any_pass(std::forward<P>(p)) {
    auto info = std::make_shared<detail::pass_info>(*info_);
    info->name = std::move(name);
    if (!description.empty()) info->description = std::move(description);
    info_ = std::move(info);
  }

  const std::string& name() const noexcept { return info_->name; }
  const std::string& description() const noexcept { return info_->description; }
  /// Names of the facts the pass requires / provides / invalidates.
  const std::vector<std::string>& requires_facts() const noexcept { return info_->requires_facts; }
  const std::vector<std::string>& provides_facts() const noexcept { return info_->provides_facts; }
  const std::vector<std::string>& invalidates_facts() const noexcept { return info_->invalidates_facts; }
  /// Option keys that must be set in the context (seed 001's RequirePassAttr).
  const std::vector<std::string>& required_options() const noexcept { return info_->required_options; }
  /// Typed graph attributes that must be set on the graph (seed 001's RequireGraphAttr).
  const std::vector<std::string>& required_graph_attrs() const noexcept { return info_->required_graph_attrs; }
  /// True when the wrapped pass is a compile-time pipeline.
  bool is_pipeline() const noexcept { return is_pipeline_; }
  /// Everything above, as one struct.
  const detail::pass_info& info() const noexcept { return *info_; }

  /// Runs the pass directly (no instrumentation, no requirement checks; a wrapped pipeline
  /// runs with its default instrumentation).
  void operator()(G& g, pass_context& ctx) const { impl_->call(g, ctx); }

  /// Runs the pass under a pipeline runner (used by `dynamic_pipeline`; not for users).
  void run_in(detail::pipeline_runner<G>& runner) const { impl_->run_in(runner, *info_); }

 private:
  std::shared_ptr<const detail::pass_info> info_;
  std::shared_ptr<const model> impl_;
  bool is_pipeline_ = false;
};

}  // namespace gpass
