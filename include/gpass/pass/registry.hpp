// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file registry.hpp
/// `gpass::pass_registry<G>`: passes and named pipelines by name, and textual pipelines
/// (`"delete-disconnected,dce{keep=out}"`) parsed into `gpass::dynamic_pipeline<G>`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/pass/any_pass.hpp>
#include <gpass/pass/dynamic_pipeline.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/fixed_point.hpp>
#include <gpass/pass/options.hpp>
#include <gpass/pass/pass.hpp>

namespace gpass {

template <class G>
class pass_registry;

/// Registers the passes that ship with gpass. Declared here, defined in
/// `gpass/passes/builtin.hpp` (the `pass` layer does not include the `passes` layer above it):
/// a program that calls `pass_registry<G>::global()` includes `<gpass/passes/builtin.hpp>`, or
/// an umbrella that does (`<gpass/pass.hpp>`, `<gpass/passes.hpp>`, `<gpass/all.hpp>`).
template <class G>
void register_builtin_passes(pass_registry<G>& registry);

namespace detail {

/// Levenshtein distance (small strings: pass names).
inline std::size_t name_edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// One element of a textual pipeline: a name and its `{key=value,...}` options.
struct pipeline_element {
  std::string name;
  std::vector<std::pair<std::string, std::string>> options;
  std::size_t column = 0;  ///< 1-based
};

/// Parses `name{k=v,k2="v 2"}, name2, ...`. Names: `[A-Za-z0-9_.:-]+`. Values: up to `,` or
/// `}` (trimmed), or double-quoted with `\"` and `\\` escapes. `{flag}` means `flag=true`.
inline std::vector<pipeline_element> parse_pipeline_elements(std::string_view text) {
  std::vector<pipeline_element> r;
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto fail = [&](const std::string& what, std::size_t at) -> error {
    error_context c;
    c.file = "<pipeline>";
    c.line = 1;
    c.column = static_cast<int>(at + 1);
    return error("pipeline '" + std::string(text) + "': " + what, std::move(c));
  };
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  auto is_name = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.' || c == ':';
  };
  auto skip = [&] {
    while (i < n && is_space(text[i])) ++i;
  };
  auto read_name = [&](std::string_view what) {
    skip();
    std::size_t start = i;
    while (i < n && is_name(text[i])) ++i;
    if (i == start) {
      if (i < n) throw fail("expected " + std::string(what) + ", found '" + std::string(1, text[i]) + "'", i);
      throw fail("expected " + std::string(what) + " at end of text", i);
    }
    return std::string(text.substr(start, i - start));
  };
  skip();
  if (i == n) return r;  // empty pipeline
  for (;;) {
    skip();
    pipeline_element e;
    e.column = i + 1;
    e.name = read_name("a pass name");
    skip();
    if (i < n && text[i] == '{') {
      std::size_t open = i++;
      skip();
      if (i < n && text[i] == '}') {
        ++i;
      } else {
        for (;;) {
          std::string key = read_name("an option name");
          skip();
          std::string value = "true";
          if (i < n && text[i] == '=') {
            ++i;
            skip();
            value.clear();
            if (i < n && text[i] == '"') {
              std::size_t q = i++;
              for (;;) {
                if (i >= n) throw fail("unterminated '\"'", q);
                char c = text[i++];
                if (c == '"') break;
                if (c == '\\' && i < n) c = text[i++];
                value += c;
              }
            } else {
              std::size_t start = i;
              while (i < n && text[i] != ',' && text[i] != '}' && text[i] != '{') ++i;
              std::string_view v = text.substr(start, i - start);
              while (!v.empty() && is_space(v.back())) v.remove_suffix(1);
              value = std::string(v);
            }
            skip();
          }
          for (const auto& [k, _] : e.options)
            if (k == key) throw fail("option '" + key + "' given twice for '" + e.name + "'", i);
          e.options.emplace_back(std::move(key), std::move(value));
          if (i < n && text[i] == ',') {
            ++i;
            continue;
          }
          if (i < n && text[i] == '}') {
            ++i;
            break;
          }
          if (i >= n) throw fail("unterminated '{'", open);
          throw fail("expected ',' or '}' in the options of '" + e.name + "', found '" + std::string(1, text[i]) + "'",
                     i);
        }
      }
      skip();
    }
    r.push_back(std::move(e));
    if (i == n) break;
    if (text[i] != ',') throw fail("expected ',' between passes, found '" + std::string(1, text[i]) + "'", i);
    ++i;
  }
  return r;
}

}  // namespace detail

/// A named textual pipeline in a registry (`default` = "delete-disconnected,dce").
struct named_pipeline {
  std::string name;
  std::string text;
  std::string description;
};

/// The run-time pass registry for graphs of type `G` (one per graph type, since passes are
/// templates): passes by name, named pipelines, and textual pipelines parsed with the same
/// fact check as compile-time pipelines. Thread-safe: lookups and parses may run while
/// other threads add passes.
///
/// `global()` is created on first use (thread-safe, no static-initialisation order issues)
/// and holds the built-in passes; a default-constructed registry is empty (call
/// `register_builtin_passes(r)` to fill it).
/// \code
///   auto& reg = gpass::pass_registry<gpass::graph<>>::global();
///   reg.add(my_pass);                                  // by its static name
///   reg.add_pipeline("cleanup", "delete-disconnected,dce");
///   auto p = reg.parse("cleanup,my-pass{level=2}");   // my-pass sees option my-pass.level=2
///   p(g);
/// \endcode
template <class G>
class pass_registry {
 public:
  pass_registry() = default;
  pass_registry(const pass_registry& o) {
    std::shared_lock lock(o.mu_);
    passes_ = o.passes_;
    pipelines_ = o.pipelines_;
  }
  pass_registry& operator=(const pass_registry& o) {
    if (this != &o) {
      pass_registry tmp(o);
      std::unique_lock lock(mu_);
      passes_ = std::move(tmp.passes_);
      pipelines_ = std::move(tmp.pipelines_);
    }
    return *this;
  }

  /// The process-wide registry for `G`, holding the built-in passes (see
  /// `gpass/passes/builtin.hpp`, which must be included by the program).
  static pass_registry& global() {
    static pass_registry r{builtin_tag{}};
    return r;
  }

  /// Registers a default-constructed `P` under `P::name`.
  template <class P>
  void add() {
    add(P{});
  }
  /// Registers a pass (or compile-time pipeline) under its static name. Throws when the
  /// name is taken.
  template <class P>
    requires pass_for<std::remove_cvref_t<P>, G>
  void add(P&& p) {
    add(any_pass<G>(std::forward<P>(p)));
  }
  /// Registers a pass (typically a compile-time pipeline) under another name.
  template <class P>
    requires pass_for<std::remove_cvref_t<P>, G>
  void add(std::string name, P&& p, std::string description = {}) {
    add(any_pass<G>(std::move(name), std::forward<P>(p), std::move(description)));
  }
  /// Registers a type-erased pass. Throws when the name is taken or is not a valid name.
  void add(any_pass<G> p) {
    check_name(p.name());
    std::unique_lock lock(mu_);
    check_free(p.name());
    std::string name = p.name();
    passes_.emplace(std::move(name), std::move(p));
  }
  /// Registers a named pipeline: `text` is expanded wherever `name` appears in a parsed
  /// pipeline. Its syntax is checked now; its passes when it is used.
  void add_pipeline(std::string name, std::string text, std::string description = {}) {
    check_name(name);
    (void)detail::parse_pipeline_elements(text);
    std::unique_lock lock(mu_);
    check_free(name);
    std::string key = name;
    pipelines_.emplace(std::move(key), named_pipeline{std::move(name), std::move(text), std::move(description)});
  }

  /// The pass called `name`, or nullptr. The pointer stays valid as long as the registry.
  const any_pass<G>* find(std::string_view name) const {
    std::shared_lock lock(mu_);
    auto it = passes_.find(name);
    return it == passes_.end() ? nullptr : &it->second;
  }
  /// The named pipeline called `name`, or nullptr.
  const named_pipeline* find_pipeline(std::string_view name) const {
    std::shared_lock lock(mu_);
    auto it = pipelines_.find(name);
    return it == pipelines_.end() ? nullptr : &it->second;
  }
  /// True when `name` is a pass or a named pipeline.
  bool contains(std::string_view name) const {
    std::shared_lock lock(mu_);
    return passes_.find(name) != passes_.end() || pipelines_.find(name) != pipelines_.end();
  }
  /// The names of the passes, sorted.
  std::vector<std::string> names() const {
    std::shared_lock lock(mu_);
    std::vector<std::string> r;
    for (const auto& [k, _] : passes_) r.push_back(k);
    return r;
  }
  /// The names of the named pipelines, sorted.
  std::vector<std::string> pipeline_names() const {
    std::shared_lock lock(mu_);
    std::vector<std::string> r;
    for (const auto& [k, _] : pipelines_) r.push_back(k);
    return r;
  }

  /// Parses a textual pipeline: pass and named-pipeline names separated by ',', each pass
  /// optionally followed by `{key=value,...}` options that are set as `pass-name.key` in the
  /// context while that pass runs. Named pipelines expand (they take no options). The fact
  /// check starts from `initial_facts` (e.g. `gpass::held_facts_of(g)`). Throws
  /// `gpass::error` on a syntax error, an unknown name (with close names suggested), a
  /// recursive named pipeline, or a missing fact.
  dynamic_pipeline<G> parse(std::string_view text, const std::set<std::string>& initial_facts = {}) const {
    std::vector<typename dynamic_pipeline<G>::step> steps;
    {
      std::shared_lock lock(mu_);
      std::vector<std::string> expanding;
      expand(text, text, expanding, steps);
    }
    std::string_view t = text;
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t' || t.front() == '\n')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\n')) t.remove_suffix(1);
    return dynamic_pipeline<G>(std::move(steps), initial_facts, std::string(t));
  }
  /// `parse` starting from the facts of a `gpass::facts<...>` list.
  template <class... Fs>
  dynamic_pipeline<G> parse(std::string_view text, facts<Fs...>) const {
    return parse(text, std::set<std::string>{std::string(Fs::name)...});
  }

 private:
  struct builtin_tag {};
  explicit pass_registry(builtin_tag) { register_builtin_passes(*this); }

  static void check_name(const std::string& name) {
    bool ok = !name.empty();
    for (char c : name)
      ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                  c == '-' || c == '.' || c == ':');
    if (!ok) throw error("invalid pass or pipeline name '" + name + "' (use letters, digits, '_', '-', '.', ':')");
  }
  void check_free(const std::string& name) const {
    if (passes_.find(name) != passes_.end()) throw error("pass '" + name + "' is already registered");
    if (pipelines_.find(name) != pipelines_.end()) throw error("a pipeline named '" + name + "' is already registered");
  }

  void expand(std::string_view top, std::string_view text, std::vector<std::string>& expanding,
              std::vector<typename dynamic_pipeline<G>::step>& steps) const {
    for (auto& e : detail::parse_pipeline_elements(text)) {
      if (auto it = passes_.find(e.name); it != passes_.end()) {
        check_options(top, e.name, it->second.info().options, e.options);
        typename dynamic_pipeline<G>::step s{it->second, {}};
        for (auto& [k, v] : e.options) s.options.emplace_back(e.name + "." + k, std::move(v));
        steps.push_back(std::move(s));
        continue;
      }
      if (e.name == dynamic_fixed_point<G>::name) {
        steps.push_back(fixed_point_step(top, e, expanding));
        continue;
      }
      auto pit = pipelines_.find(e.name);
      if (pit == pipelines_.end()) throw unknown(top, e);
      if (!e.options.empty())
        throw error("pipeline '" + std::string(top) + "': named pipeline '" + e.name + "' takes no options");
      if (std::find(expanding.begin(), expanding.end(), e.name) != expanding.end())
        throw error("pipeline '" + std::string(top) + "': named pipeline '" + e.name + "' refers to itself");
      expanding.push_back(e.name);
      try {
        expand(top, pit->second.text, expanding, steps);
      } catch (const error& err) {
        if (err.message().find("(in named pipeline") != std::string::npos) throw;
        throw error(err.message() + " (in named pipeline '" + e.name + "' = '" + pit->second.text + "')",
                    err.context());
      }
      expanding.pop_back();
    }
  }

  /// Every option given to pass `pass` must be one it declares, with a value of its type.
  static void check_options(std::string_view top, const std::string& pass, std::span<const option_spec> specs,
                            const std::vector<std::pair<std::string, std::string>>& given) {
    for (const auto& [k, v] : given) {
      const option_spec* spec = find_option(specs, k);
      if (!spec) {
        std::string msg = "pipeline '" + std::string(top) + "': pass '" + pass + "' has no option '" + k + "'";
        if (specs.empty()) {
          msg += "; it takes no options";
        } else {
          msg += "; its options:";
          for (const auto& o : specs) msg += " " + describe_option(o) + ";";
          msg.pop_back();
        }
        throw error(msg);
      }
      if (auto why = option_value_problem(*spec, v); !why.empty())
        throw error("pipeline '" + std::string(top) + "': option '" + pass + "." + k + "' " + why);
    }
  }

  /// `fixed-point{pipeline="a,b",max-iterations=N}`: the inner pipeline parsed now, its
  /// facts computed (what it needs from before, what it leaves), run to a fixed point.
  typename dynamic_pipeline<G>::step fixed_point_step(std::string_view top, const detail::pipeline_element& e,
                                                      std::vector<std::string>& expanding) const {
    check_options(top, "fixed-point", fixed_point_options, e.options);
    std::string inner_text;
    std::int64_t max_rounds = *parse_option_int(find_option(fixed_point_options, "max-iterations")->default_value);
    bool has_pipeline = false;
    for (const auto& [k, v] : e.options) {
      if (k == "pipeline") {
        inner_text = v;
        has_pipeline = true;
      } else {
        max_rounds = *parse_option_int(v);
      }
    }
    if (!has_pipeline) throw error("pipeline '" + std::string(top) + "': fixed-point needs its option 'pipeline'");
    if (max_rounds < 1)
      throw error("pipeline '" + std::string(top) + "': fixed-point's max-iterations must be at least 1, got " +
                  std::to_string(max_rounds));
    std::vector<typename dynamic_pipeline<G>::step> inner;
    expand(top, inner_text, expanding, inner);

    // what a round needs from before it: what its passes require and no earlier one provides
    std::set<std::string> needed, available;
    for (const auto& st : inner) {
      for (const auto& f : st.pass.requires_facts())
        if (!available.contains(f)) needed.insert(f);
      for (const auto& f : st.pass.invalidates_facts()) available.erase(f);
      for (const auto& f : st.pass.provides_facts()) available.insert(f);
    }
    dynamic_pipeline<G> body(std::move(inner), needed, inner_text);  // checks the round's own facts
    for (const auto& f : needed)
      if (body.invalidates_facts().contains(f))
        throw error("pipeline '" + std::string(top) + "': fixed-point{pipeline=\"" + inner_text +
                    "\"} breaks fact '" + f + "', which it requires: a second round could not run");
    detail::pass_info info;
    info.name = std::string(dynamic_fixed_point<G>::name);
    info.description = std::string(dynamic_fixed_point<G>::description);
    info.options.assign(fixed_point_options.begin(), fixed_point_options.end());
    info.requires_facts.assign(needed.begin(), needed.end());
    info.provides_facts.assign(body.provides_facts().begin(), body.provides_facts().end());
    info.invalidates_facts.assign(body.invalidates_facts().begin(), body.invalidates_facts().end());
    typename dynamic_pipeline<G>::step s{
        any_pass<G>(std::move(info), dynamic_fixed_point<G>(std::move(body), static_cast<std::size_t>(max_rounds))),
        {}};
    for (const auto& [k, v] : e.options) s.options.emplace_back("fixed-point." + k, v);
    return s;
  }

  error unknown(std::string_view top, const detail::pipeline_element& e) const {
    std::vector<std::string> all;
    for (const auto& [k, _] : passes_) all.push_back(k);
    for (const auto& [k, _] : pipelines_) all.push_back(k);
    std::sort(all.begin(), all.end());
    // close names: the nearest ones by edit distance (within a limit), and names that
    // contain the unknown one (or the reverse), in name order
    std::vector<std::string> close;
    const std::size_t limit = std::max<std::size_t>(2, e.name.size() / 3);
    std::size_t best = limit + 1;
    for (const auto& k : all) best = std::min(best, detail::name_edit_distance(e.name, k));
    for (const auto& k : all)
      if ((best <= limit && detail::name_edit_distance(e.name, k) == best) ||
          (e.name.size() >= 3 && (k.find(e.name) != std::string::npos || e.name.find(k) != std::string::npos)))
        close.push_back(k);
    std::string msg = "pipeline '" + std::string(top) + "': unknown pass '" + e.name + "'";
    auto list = [](const std::vector<std::string>& v) {
      std::string s;
      for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", '" : "'") + v[i] + "'";
      return s;
    };
    if (!close.empty()) msg += "; did you mean " + list(close) + "?";
    else if (all.empty()) msg += "; the registry is empty";
    else msg += "; known: " + list(all);
    return error(msg);
  }

  mutable std::shared_mutex mu_;
  std::map<std::string, any_pass<G>, std::less<>> passes_;
  std::map<std::string, named_pipeline, std::less<>> pipelines_;
};

}  // namespace gpass

