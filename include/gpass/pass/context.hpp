// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file context.hpp
/// `gpass::pass_context`: what a pass run sees besides the graph: options, statistics, diagnostics.

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/core/error.hpp>

namespace gpass {

/// Severity of a diagnostic.
enum class severity { note, warning, error };

/// One diagnostic emitted by a pass.
struct diagnostic {
  gpass::severity severity = severity::note;
  std::string pass;
  std::string node;  ///< empty when not about one node
  std::string message;
};

/// The context a pass runs in. Passes are stateless: everything a run produces besides the
/// graph (statistics, diagnostics) goes here, and everything configurable comes from here
/// (string options, seed 001's pass attributes) or from the pass object's immutable members.
/// The pipeline sets `current_pass()` around each pass. Thread-safe for statistics and
/// diagnostics.
/// \code
///   gpass::pass_context ctx;
///   ctx.set_option("dce.keep", "output");
///   pipeline(g, ctx);
///   for (auto& [k, v] : ctx.statistics()) std::cout << k << " = " << v << '\n';
/// \endcode
class pass_context {
 public:
  pass_context() = default;
  pass_context(const pass_context&) = delete;
  pass_context& operator=(const pass_context&) = delete;

  // ---- options ----
  /// Sets an option (by convention `pass-name.option`).
  void set_option(std::string key, std::string value) { options_.insert_or_assign(std::move(key), std::move(value)); }
  /// An option's value, if set.
  std::optional<std::string> option(std::string_view key) const {
    auto it = options_.find(key);
    if (it == options_.end()) return std::nullopt;
    return it->second;
  }
  /// An integer option, or `fallback`; throws `gpass::error` when set but not an integer.
  std::int64_t option_int(std::string_view key, std::int64_t fallback) const {
    auto v = option(key);
    if (!v) return fallback;
    try {
      std::size_t pos = 0;
      auto r = std::stoll(*v, &pos);
      if (pos == v->size()) return r;
    } catch (...) {
    }
    throw error("option '" + std::string(key) + "' is not an integer: '" + *v + "'");
  }
  /// Removes an option (no-op when unset).
  void erase_option(std::string_view key) {
    auto it = options_.find(key);
    if (it != options_.end()) options_.erase(it);
  }
  /// All options, by key.
  const std::map<std::string, std::string, std::less<>>& options() const noexcept { return options_; }

  // ---- statistics ----
  /// Adds `n` to the statistic `pass.name` of the current pass (e.g. `dce.removed-nodes`).
  void add_statistic(std::string_view name, std::int64_t n = 1) {
    std::lock_guard lock(mu_);
    stats_[current_ + "." + std::string(name)] += n;
  }
  /// All statistics, by `pass.name`.
  std::map<std::string, std::int64_t> statistics() const {
    std::lock_guard lock(mu_);
    return stats_;
  }

  // ---- diagnostics ----
  void note(std::string message, std::string node = {}) { emit(severity::note, std::move(message), std::move(node)); }
  void warn(std::string message, std::string node = {}) { emit(severity::warning, std::move(message), std::move(node)); }
  void emit(gpass::severity s, std::string message, std::string node = {}) {
    std::lock_guard lock(mu_);
    diags_.push_back({s, current_, std::move(node), std::move(message)});
  }
  std::vector<diagnostic> diagnostics() const {
    std::lock_guard lock(mu_);
    return diags_;
  }

  // ---- timing report ----
  /// The timing report of the last pipeline run with `instrumentation_options::timing` set:
  /// one line per pass, `dce: 18 nodes (-2), 20 edges (-2), 0.72 ms`, then a `total: ...`
  /// line. Each such run replaces the previous report.
  std::vector<std::string> timing_report() const {
    std::lock_guard lock(mu_);
    return timing_;
  }
  /// Appends a line to the timing report (used by the pipeline instrumentation).
  void add_timing_line(std::string line) {
    std::lock_guard lock(mu_);
    timing_.push_back(std::move(line));
  }
  /// Clears the timing report (done at the start of each timed pipeline run).
  void clear_timing_report() {
    std::lock_guard lock(mu_);
    timing_.clear();
  }

  // ---- changes ----
  /// A pass reports whether its run changed the graph (call it once, at the end; a pass
  /// that never calls it counts as changing the graph). Pipelines then skip the
  /// verification of a graph that a pass left unchanged and keep the facts it held, and
  /// `gpass::fixed_point` stops when a round changes nothing. Several reports in one run
  /// (a pass calling others) combine: changed if any says so.
  void report_changed(bool changed) noexcept {
    reported_ = true;
    changed_ = changed_ || changed;
    live_changed_ = live_changed_ || changed;
  }
  /// Like `report_changed(removed)`, for a pass whose only change is the removal of nodes
  /// nothing used (dead code, `dce`): the passes that say their results do not depend on
  /// dead nodes (`P::dead_code_insensitive`) and changed nothing before need not run again.
  void report_removed_dead_code(bool removed) noexcept {
    reported_ = true;
    changed_ = changed_ || removed;
  }
  /// Whether a change other than a removal of dead code was reported since
  /// `clear_change_report()`.
  bool change_report_live() const noexcept { return !reported_ || live_changed_; }
  /// What was reported since `clear_change_report()` (used by pipelines): nullopt when
  /// nothing was, else whether anything changed.
  std::optional<bool> change_report() const noexcept {
    if (!reported_) return std::nullopt;
    return changed_;
  }
  void clear_change_report() noexcept { reported_ = changed_ = live_changed_ = false; }

  /// The pass now running (empty outside a pipeline).
  const std::string& current_pass() const noexcept { return current_; }
  /// Set by pipelines around each pass.
  void set_current_pass(std::string name) { current_ = std::move(name); }

 private:
  mutable std::mutex mu_;
  std::string current_;
  std::map<std::string, std::string, std::less<>> options_;
  std::map<std::string, std::int64_t> stats_;
  std::vector<diagnostic> diags_;
  std::vector<std::string> timing_;
  bool reported_ = false, changed_ = false, live_changed_ = false;
};

/// Names a pass in `ctx.current_pass()` for the duration of a scope when the pass runs
/// outside a pipeline (so that its statistics and diagnostics carry its name); inside a
/// pipeline, which has already named it, it does nothing.
/// \code
///   void operator()(G& g, gpass::pass_context& ctx) const {
///     gpass::pass_name_scope scope(ctx, name);
///     ctx.add_statistic("removed-nodes", 3);   // "dce.removed-nodes" either way
///   }
/// \endcode
class pass_name_scope {
 public:
  pass_name_scope(pass_context& ctx, std::string_view name) : ctx_(ctx), set_(ctx.current_pass().empty()) {
    if (set_) ctx_.set_current_pass(std::string(name));
  }
  ~pass_name_scope() {
    if (set_) ctx_.set_current_pass({});
  }
  pass_name_scope(const pass_name_scope&) = delete;
  pass_name_scope& operator=(const pass_name_scope&) = delete;

 private:
  pass_context& ctx_;
  bool set_;
};

}  // namespace gpass
