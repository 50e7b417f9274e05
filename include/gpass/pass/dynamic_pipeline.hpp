// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file dynamic_pipeline.hpp
/// `gpass::dynamic_pipeline<G>`: a pipeline built at run time (usually by
/// `pass_registry<G>::parse`), checked for facts like compile-time pipelines.

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/pass/any_pass.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/instrumentation.hpp>

namespace gpass {

namespace detail {
/// Sets options in a context for one scope and restores the previous values afterwards.
class scoped_options {
 public:
  scoped_options(pass_context& ctx, const std::vector<std::pair<std::string, std::string>>& opts) : ctx_(ctx) {
    saved_.reserve(opts.size());
    for (const auto& [k, v] : opts) {
      saved_.emplace_back(k, ctx.option(k));
      ctx.set_option(k, v);
    }
  }
  scoped_options(const scoped_options&) = delete;
  scoped_options& operator=(const scoped_options&) = delete;
  ~scoped_options() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) ctx_.set_option(it->first, *it->second);
      else ctx_.erase_option(it->first);
    }
  }

 private:
  pass_context& ctx_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};
}  // namespace detail

namespace detail {
/// An option value as pipeline text: as it is, or double-quoted (with `\"` and `\\`) when it
/// is empty or holds a character the pipeline syntax uses (`,{}"`) or outer white space.
inline std::string quote_option_value(const std::string& v) {
  bool plain = !v.empty() && v.front() != ' ' && v.back() != ' ' && v.find_first_of(",{}\"\\\t\n") == std::string::npos;
  if (plain) return v;
  std::string r = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r + '"';
}
}  // namespace detail

/// A sequence of type-erased passes, each with options that are set in the context (as
/// `pass-name.key`) only while that pass runs. Construction checks facts as compile-time
/// pipelines do: starting from `initial_facts`, each pass's required facts must be available,
/// else `gpass::error` "pipeline 'a,b': pass 'b' requires fact 'types-inferred', which no
/// earlier pass provides".
/// \code
///   auto p = gpass::pass_registry<gpass::graph<>>::global().parse("delete-disconnected,dce");
///   p(g);                                   // verify after each pass
///   gpass::instrumentation_options o;
///   o.timing = true;
///   p.run(g, ctx, o);
/// \endcode
template <class G>
class dynamic_pipeline : public detail::runs_passes<dynamic_pipeline<G>> {
 public:
  /// One pass of the pipeline and its options (full context keys, `pass-name.key`).
  struct step {
    any_pass<G> pass;
    std::vector<std::pair<std::string, std::string>> options;
  };

  dynamic_pipeline() = default;
  /// Checks facts (see above); `text` names the pipeline in errors (default: `to_string()`).
  explicit dynamic_pipeline(std::vector<step> steps, std::set<std::string> initial_facts = {}, std::string text = {})
      : steps_(std::move(steps)), initial_(std::move(initial_facts)), text_(std::move(text)) {
    if (text_.empty()) text_ = to_string();
    available_ = initial_;
    for (const auto& s : steps_) {
      for (const auto& f : s.pass.requires_facts())
        if (!available_.contains(f))
          throw error("pipeline '" + text_ + "': pass '" + s.pass.name() + "' requires fact '" + f +
                      "', which no earlier pass provides");
      for (const auto& f : s.pass.invalidates_facts()) {
        available_.erase(f);
        provides_.erase(f);
        invalidates_.insert(f);
      }
      for (const auto& f : s.pass.provides_facts()) {
        available_.insert(f);
        invalidates_.erase(f);
        provides_.insert(f);
      }
    }
  }

  /// The text the pipeline was built from.
  const std::string& text() const noexcept { return text_; }
  /// Canonical text: `a,b{key=value},c` (named pipelines expanded).
  std::string to_string() const {
    std::string r;
    for (const auto& s : steps_) {
      if (!r.empty()) r += ',';
      r += s.pass.name();
      if (!s.options.empty()) {
        r += '{';
        bool first = true;
        for (const auto& [k, v] : s.options) {
          if (!first) r += ',';
          first = false;
          std::string key = k.starts_with(s.pass.name() + ".") ? k.substr(s.pass.name().size() + 1) : k;
          r += key + '=' + detail::quote_option_value(v);
        }
        r += '}';
      }
    }
    return r;
  }
  const std::vector<step>& steps() const noexcept { return steps_; }
  std::size_t size() const noexcept { return steps_.size(); }
  bool empty() const noexcept { return steps_.empty(); }
  /// The names of the passes, in order.
  std::vector<std::string> pass_names() const {
    std::vector<std::string> r;
    for (const auto& s : steps_) r.push_back(s.pass.name());
    return r;
  }
  /// The facts assumed on the input.
  const std::set<std::string>& initial_facts() const noexcept { return initial_; }
  /// The facts held after the pipeline when its input holds exactly `initial_facts()`.
  const std::set<std::string>& available_facts() const noexcept { return available_; }
  /// The pipeline's net effect, as for compile-time pipelines: the facts whose last mention
  /// is a provide, and those whose last mention is an invalidate.
  const std::set<std::string>& provides_facts() const noexcept { return provides_; }
  const std::set<std::string>& invalidates_facts() const noexcept { return invalidates_; }

  // p(g, ctx), p(g), p.run(g, ctx, options): see detail::runs_passes.

  /// Runs the steps through an existing runner (not for users).
  void run_nested(detail::pipeline_runner<G>& runner) const {
    for (const auto& s : steps_) {
      detail::scoped_options scope(runner.context(), s.options);
      s.pass.run_in(runner);
    }
  }

 private:
  std::vector<step> steps_;
  std::set<std::string> initial_;
  std::set<std::string> available_;
  std::set<std::string> provides_, invalidates_;
  std::string text_;
};

}  // namespace gpass
