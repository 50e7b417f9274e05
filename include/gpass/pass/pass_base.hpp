// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file pass_base.hpp
/// `gpass::pass_base`: the call operator every pass shares (the graph concept check and the
/// pass's name in the context while it runs), so a pass only writes its `run`.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <gpass/core/error.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/options.hpp>

namespace gpass {

/// Throws the `gpass::error` of pass `pass` about node `node` (op `op`; either may be empty):
/// `gpass: pass 'dce': node 'add_1' (op Add): <message>`.
[[noreturn]] inline void throw_pass_error(std::string_view pass, std::string message, std::string node = {},
                                          std::string op = {}) {
  error_context c;
  c.pass = std::string(pass);
  c.node = std::move(node);
  c.op = std::move(op);
  throw error(std::move(message), std::move(c));
}

/// CRTP base of a pass `Derived` that defines `template <class G> void run(G&, pass_context&)
/// const`. Its `operator()(g, ctx)` requires `G` to model `gpass::graph_type`, names the pass
/// in `ctx` for the run (`pass_name_scope`: a pass called outside a pipeline still puts its
/// name on the errors and diagnostics it raises) and calls `run`. `Derived` keeps the rest of
/// the pass concept (`name`, `description`, the facts; see `gpass::pass_like`). `fail(message,
/// node, op)` throws the pass's `gpass::error`; `option_int(ctx, "opt")` and its siblings
/// read the options it declares (`static constexpr std::array options{gpass::option_spec{...}}`,
/// see `gpass/pass/options.hpp`) with their declared defaults.
/// \code
///   struct count_fn : gpass::pass_base<count_fn> {
///     static constexpr std::string_view name = "count";
///     static constexpr std::string_view description = "Counts nodes";
///     template <class G> void run(G& g, gpass::pass_context& ctx) const {
///       ctx.add_statistic("nodes", static_cast<std::int64_t>(g.num_nodes()));
///     }
///   };
/// \endcode
template <class Derived>
struct pass_base {
  template <class G>
    requires graph_type<G>
  void operator()(G& g, pass_context& ctx) const {
    pass_name_scope scope(ctx, Derived::name);
    static_cast<const Derived&>(*this).run(g, ctx);
  }

  /// Adds each count to the statistics and reports the run as changing the graph when any
  /// is nonzero (`pass_context::report_changed`): for the counters of a pass's edits.
  /// \code
  ///   report_edits(ctx, {{"removed-nodes", removed}, {"removed-functions", functions}});
  /// \endcode
  static void report_edits(pass_context& ctx, std::initializer_list<std::pair<std::string_view, std::int64_t>> counts) {
    bool any = false;
    for (const auto& [stat, n] : counts) {
      ctx.add_statistic(stat, n);
      any = any || n != 0;
    }
    ctx.report_changed(any);
  }

  /// `throw_pass_error` naming this pass.
  [[noreturn]] static void fail(std::string message, std::string node = {}, std::string op = {}) {
    throw_pass_error(Derived::name, std::move(message), std::move(node), std::move(op));
  }

  /// The text of the declared option `opt` (`Derived::options`): the context's
  /// `<name>.<opt>` when set, else the declared default (nullopt when it has none). Throws
  /// the pass's error when the value does not fit the option's type, or when the pass did
  /// not declare `opt`.
  static std::optional<std::string> option_text(const pass_context& ctx, std::string_view opt) {
    const option_spec& spec = declared(opt);
    const std::string key = std::string(Derived::name) + "." + std::string(opt);
    auto v = ctx.option(key);
    if (!v) {
      if (spec.default_value.empty()) return std::nullopt;
      return std::string(spec.default_value);
    }
    if (auto why = option_value_problem(spec, *v); !why.empty()) fail("option '" + key + "' " + why);
    return v;
  }
  /// A declared `int` option (its default when unset; 0 when it has none).
  static std::int64_t option_int(const pass_context& ctx, std::string_view opt) {
    auto v = option_text(ctx, opt);
    return v ? *parse_option_int(*v) : 0;
  }
  /// A declared `bool` option (its default when unset; false when it has none).
  static bool option_bool(const pass_context& ctx, std::string_view opt) {
    auto v = option_text(ctx, opt);
    return v && *parse_option_bool(*v);
  }
  /// A declared `number` option (its default when unset; 0 when it has none).
  static double option_number(const pass_context& ctx, std::string_view opt) {
    auto v = option_text(ctx, opt);
    return v ? *parse_option_number(*v) : 0.0;
  }

 private:
  static const option_spec& declared(std::string_view opt) {
    if (const option_spec* s = find_option(pass_options_v<Derived>, opt)) return *s;
    fail("reads option '" + std::string(opt) + "', which the pass does not declare");
  }
};

/// The base of a pass that lowers ops into others (the TensorFlow frontend's rewrites): it
/// creates nodes whose types, shapes and values are not inferred yet (or resets declared
/// types), so it invalidates the inference facts; run an inference pass after it.
template <class Derived>
struct lowering_pass_base : pass_base<Derived> {
  using invalidates_facts = facts<fact_tags::types_inferred, fact_tags::shapes_inferred, fact_tags::values_inferred>;
};

}  // namespace gpass
