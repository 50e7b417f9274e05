// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file instrumentation.hpp
/// `gpass::instrumentation_options`: what happens around every pass of a pipeline run
/// (verification, timing, IR dumps, crash reproducers). Compile-time pipelines
/// (`gpass::pipeline`) and dynamic ones (`gpass::dynamic_pipeline`) share this code.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/analysis/verify.hpp>
#include <gpass/io/dot.hpp>
#include <gpass/io/text.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/detail/pass_info.hpp>
#include <gpass/pass/held_facts.hpp>

namespace gpass {

/// Options for a pipeline run: `pipe.run(g, ctx, opts)`. The defaults (what `pipe(g, ctx)`
/// uses) verify the input and the graph after each pass and do nothing else.
/// \code
///   gpass::instrumentation_options o;
///   o.timing = true;  o.timing_stream = &std::cerr;
///   o.dump_dir = "dumps";                 // dumps/01-dce.before.gir, dumps/01-dce.after.gir, ...
///   o.reproducer_dir = "crash";           // crash/dce.reproducer.gir when dce throws
///   pipe.run(g, ctx, o);
///   for (auto& line : ctx.timing_report()) std::cout << line << '\n';
/// \endcode
struct instrumentation_options {
  /// Run `gpass::verify` on the input and after each pass that changed the graph (a pass
  /// that reports no change, `pass_context::report_changed(false)`, leaves the graph that was
  /// verified before it). A failure after a pass throws
  /// `gpass::error` "verification failed after pass 'x': ..." with the pass in its context;
  /// a failure on the input throws "verification failed on the pipeline input: ...".
  bool verify_each = true;
  /// Collect a timing report: one line per pass, `dce: 18 nodes (-2), 20 edges (-2), 0.72 ms`
  /// (counts after the pass, signed deltas, time of the pass alone), then
  /// `total: N nodes (±d), E edges (±d), t ms` against the pipeline input. Stored in the
  /// context (`pass_context::timing_report()`, replaced by each timed run).
  bool timing = false;
  /// Where timing lines are also printed as they are produced (nullptr: nowhere).
  std::ostream* timing_stream = nullptr;
  /// Empty: no dumps. Otherwise the directory (created when missing) receives the IR before
  /// and after each pass: `NN-<pass>.before.gir` / `NN-<pass>.after.gir` (or `.dot`), NN the
  /// 1-based pass index in the run, at least two digits.
  std::filesystem::path dump_dir;
  /// Format of dumps: gpass text IR (`gpass::print_text`) or Graphviz (`gpass::to_dot`).
  enum class dump_format { text, dot } format = dump_format::text;
  bool dump_before = true;  ///< write `.before` dumps (when dump_dir is set)
  bool dump_after = true;   ///< write `.after` dumps (when dump_dir is set)
  /// Empty: off. Otherwise, when a pass throws (or the graph fails verification after it),
  /// the pass's input graph is written in text IR to `<reproducer_dir>/<pass>.reproducer.gir`
  /// and the error says "reproducer written to <path>". Costs one print of the graph
  /// before every pass, so it is off by default.
  std::filesystem::path reproducer_dir;
  /// When set, the text IR after each pass is printed here, headed by
  /// `// ----- IR after <pass> ----- //` (MLIR's `--print-ir-after-all`).
  std::ostream* print_after_all = nullptr;
  /// How `print_after_all` prints (large constants elided, ...); dumps print everything.
  text_print_options print_options;
};

namespace detail {

/// A pass name made safe for a file name: `[A-Za-z0-9._-]` kept, anything else `_`.
inline std::string dump_file_stem(std::string_view name) {
  std::string r;
  r.reserve(name.size());
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '-' || c == '_';
    r += ok ? c : '_';
  }
  if (r.empty() || r == "." || r == "..") r = "pass";
  return r;
}

/// `"(+3)"`, `"(-2)"`, `"(+0)"`.
inline std::string signed_delta(std::size_t before, std::size_t after) {
  if (after >= before) return "(+" + std::to_string(after - before) + ")";
  return "(-" + std::to_string(before - after) + ")";
}

/// One timing line: `name: N nodes (±d), E edges (±d), t ms`.
inline std::string timing_line(std::string_view name, std::size_t n0, std::size_t n1, std::size_t e0, std::size_t e1,
                               double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", ms);
  return std::string(name) + ": " + std::to_string(n1) + " nodes " + signed_delta(n0, n1) + ", " +
         std::to_string(e1) + " edges " + signed_delta(e0, e1) + ", " + buf + " ms";
}

inline error_context pass_context_of(const pass_info& info) {
  error_context c;
  c.pass = info.name;
  return c;
}

inline void write_instrumentation_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  if (f) f.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!f) throw error("cannot write '" + p.string() + "'");
}

inline void make_instrumentation_dir(const std::filesystem::path& d, std::string_view what) {
  std::error_code ec;
  std::filesystem::create_directories(d, ec);
  if (ec) throw error("cannot create " + std::string(what) + " directory '" + d.string() + "': " + ec.message());
}

/// Runs passes on one graph with the instrumentation of `instrumentation_options`. One
/// runner per top-level run: `begin()`, `run_pass(...)` for every leaf pass (nested
/// pipelines pass the runner down), `end()`.
template <class G>
class pipeline_runner {
 public:
  pipeline_runner(G& g, pass_context& ctx, const instrumentation_options& opts) : g_(g), ctx_(ctx), o_(opts) {}
  pipeline_runner(const pipeline_runner&) = delete;
  pipeline_runner& operator=(const pipeline_runner&) = delete;

  G& graph() noexcept { return g_; }
  pass_context& context() noexcept { return ctx_; }
  const instrumentation_options& options() const noexcept { return o_; }

  /// Before the first pass: verifies the input (verify_each), prepares dump directories.
  void begin() {
    n_start_ = g_.num_nodes();
    e_start_ = g_.num_edges();
    held_ = held_facts_of(g_);
    if (o_.timing) ctx_.clear_timing_report();
    if (!o_.dump_dir.empty()) make_instrumentation_dir(o_.dump_dir, "dump");
    if (!o_.reproducer_dir.empty()) make_instrumentation_dir(o_.reproducer_dir, "reproducer");
    if (o_.verify_each) {
      try {
        gpass::verify(g_);
      } catch (const error& e) {
        throw error("verification failed on the pipeline input: " + e.message(), e.context());
      }
    }
  }

  /// Runs one pass: `call()` runs it on `graph()` with `context()`.
  template <class F>
  void run_pass(const pass_info& info, F&& call) {
    ++index_;
    check_required(info);
    std::string run_key = options_key(info);
    if (skippable(info, run_key)) {
      if (o_.timing) emit_timing(info.name + ": skipped (its facts are held)");
      return;
    }
    // A pass that reported no change on this very graph (no pass changed it since) would
    // report none again: passes are deterministic functions of the graph and their options.
    if (auto it = unchanged_at_.find(run_key);
        it != unchanged_at_.end() && (info.dead_code_insensitive ? it->second.second == live_changes_ : it->second.first == changed_passes_)) {
      if (o_.timing) emit_timing(info.name + ": skipped (unchanged graph since its last run changed nothing)");
      return;
    }
    std::string input_text;
    const bool text_dumps = o_.format == instrumentation_options::dump_format::text;
    if (!o_.reproducer_dir.empty() || (!o_.dump_dir.empty() && o_.dump_before && text_dumps))
      input_text = print_text(g_);
    if (!o_.dump_dir.empty() && o_.dump_before) dump(info.name, "before", text_dumps ? input_text : to_dot(g_));

    const std::size_t n0 = g_.num_nodes(), e0 = g_.num_edges();
    std::string outer = ctx_.current_pass();
    ctx_.set_current_pass(info.name);
    struct restore_pass {
      pass_context& c;
      std::string& name;
      ~restore_pass() { c.set_current_pass(std::move(name)); }
    } restore{ctx_, outer};

    ctx_.clear_change_report();
    const auto t0 = std::chrono::steady_clock::now();
    try {
      std::forward<F>(call)();
    } catch (const error& e) {
      throw failure(info, e, input_text);
    } catch (const std::exception& e) {
      throw failure(info, error(std::string("unexpected exception: ") + e.what()), input_text);
    } catch (...) {
      throw failure(info, error("unknown exception"), input_text);
    }
    const auto t1 = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    total_ms_ += ms;
    // A pass that reports its changes and made none leaves a graph that was verified (the
    // input, or after the pass before) and that holds the facts it held.
    const bool changed = ctx_.change_report().value_or(true);
    if (changed) {
      ++changed_passes_;
      if (ctx_.change_report_live()) ++live_changes_;
    } else {
      unchanged_at_[std::move(run_key)] = {changed_passes_, live_changes_};
    }

    std::exception_ptr dump_error;
    if (!o_.dump_dir.empty() && o_.dump_after) {
      try {
        dump(info.name, "after", text_dumps ? print_text(g_) : to_dot(g_));
      } catch (...) {
        dump_error = std::current_exception();  // report a verification failure first
      }
    }
    if (o_.verify_each && changed) {
      try {
        gpass::verify(g_);
      } catch (const error& e) {
        error v("verification failed after pass '" + info.name + "': " + e.message(), e.context());
        throw failure(info, v, input_text);
      }
    }
    if (dump_error) std::rethrow_exception(dump_error);

    if (o_.print_after_all) *o_.print_after_all << "// ----- IR after " << info.name << " ----- //\n" << print_text(g_, o_.print_options);
    if (o_.timing)
      emit_timing(timing_line(info.name, n0, g_.num_nodes(), e0, g_.num_edges(), ms) + (changed ? "" : ", unchanged"));
    update_held(info, changed);
  }

  /// How many passes run so far changed the graph (a pass that does not report its changes
  /// counts as changing it).
  std::size_t changed_passes() const noexcept { return changed_passes_; }

  /// After the last pass: the total timing line.
  void end() {
    if (o_.timing) emit_timing(timing_line("total", n_start_, g_.num_nodes(), e_start_, g_.num_edges(), total_ms_));
  }

 private:
  void check_required(const pass_info& info) {
    for (const auto& key : info.required_options)
      if (!ctx_.option(key))
        throw error("pass '" + info.name + "' requires option '" + key + "', which is not set", pass_context_of(info));
    if (!info.required_graph_attrs.empty()) {
      if constexpr (requires(const G& cg, std::string_view s) {
                      { cg.has_attr_named(s) } -> std::convertible_to<bool>;
                    }) {
        for (const auto& a : info.required_graph_attrs)
          if (!g_.has_attr_named(a))
            throw error("pass '" + info.name + "' requires graph attribute '" + a + "', which is not set",
                        pass_context_of(info));
      } else {
        throw error("pass '" + info.name + "' requires graph attributes, but this graph type has none",
                    pass_context_of(info));
      }
    }
  }

  void dump(const std::string& pass, std::string_view when, const std::string& text) {
    char idx[32];
    std::snprintf(idx, sizeof idx, "%02zu", index_);
    const char* ext = o_.format == instrumentation_options::dump_format::text ? ".gir" : ".dot";
    write_instrumentation_file(o_.dump_dir / (std::string(idx) + "-" + dump_file_stem(pass) + "." + std::string(when) + ext), text);
  }

  /// The error to throw for a failed pass: pass name set, reproducer written when asked.
  error failure(const pass_info& info, const error& e, const std::string& input_text) {
    error_context c = e.context();
    if (c.pass.empty()) c.pass = info.name;
    std::string msg = e.message();
    if (!o_.reproducer_dir.empty()) {
      auto path = o_.reproducer_dir / (dump_file_stem(info.name) + ".reproducer.gir");
      try {
        write_instrumentation_file(path, input_text);
        msg += " (reproducer written to " + path.string() + ")";
      } catch (const error& w) {
        msg += " (no reproducer: " + w.message() + ")";
      }
    }
    return error(std::move(msg), std::move(c));
  }

  void emit_timing(std::string line) {
    if (o_.timing_stream) *o_.timing_stream << line << '\n';
    ctx_.add_timing_line(std::move(line));
  }

  /// A pass that only establishes facts (`skip_when_held`) is skipped when the graph holds
  /// them all and no option of it is set (an option could ask for something else).
  bool skippable(const pass_info& info, const std::string& run_key) const {
    if (!info.skip_when_held || info.provides_facts.empty()) return false;
    for (const auto& f : info.provides_facts)
      if (!held_.contains(f)) return false;
    return run_key == info.name;  // no option set
  }

  /// The pass's name and the options set for it (`name.key=value`, in key order).
  std::string options_key(const pass_info& info) const {
    std::string key = info.name;
    const std::string prefix = info.name + ".";
    for (auto it = ctx_.options().lower_bound(prefix); it != ctx_.options().end() && it->first.starts_with(prefix); ++it)
      key += '\0' + it->first + '=' + it->second;
    return key;
  }

  void update_held(const pass_info& info, bool changed) {
    if (info.invalidates_facts.empty() && info.provides_facts.empty()) return;
    if (changed)
      for (const auto& f : info.invalidates_facts) held_.erase(f);
    for (const auto& f : info.provides_facts) held_.insert(f);
    if constexpr (requires { g_.set(held_facts, held_); }) g_.set(held_facts, held_);
  }

  G& g_;
  pass_context& ctx_;
  const instrumentation_options& o_;
  std::size_t index_ = 0;
  std::size_t n_start_ = 0, e_start_ = 0;
  double total_ms_ = 0;
  std::size_t changed_passes_ = 0;
  std::size_t live_changes_ = 0;  // changes other than removals of dead code
  // pass + options -> (changed_passes_, live_changes_) when it last changed nothing
  std::map<std::string, std::pair<std::size_t, std::size_t>> unchanged_at_;
  std::set<std::string> held_;
};

/// The entry points of a pass that runs other passes (`pipeline_t`, `dynamic_pipeline`,
/// `fixed_point_t`): `p(g, ctx)` and `p(g)` run it with default instrumentation (verify the
/// input and the graph after each pass that changed it), `p.run(g, ctx, options)` with
/// `options`; each makes a runner and calls `Derived::run_nested(runner)`. Errors: a pass
/// that fails, a missing required option or graph attribute, or a failed verification
/// throw `gpass::error` with the pass in its context.
template <class Derived>
struct runs_passes {
  template <class G>
  void operator()(G& g, pass_context& ctx) const {
    run(g, ctx, instrumentation_options{});
  }
  template <class G>
  void operator()(G& g) const {
    pass_context ctx;
    run(g, ctx, instrumentation_options{});
  }
  template <class G>
  void run(G& g, pass_context& ctx, const instrumentation_options& options) const {
    pipeline_runner<G> runner(g, ctx, options);
    runner.begin();
    static_cast<const Derived&>(*this).run_nested(runner);
    runner.end();
  }
};

}  // namespace detail

}  // namespace gpass
