// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file pass_info.hpp
/// `gpass::detail::pass_info`: the run-time description of a pass (name, facts, required
/// attributes) that instrumentation and the registry use.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/pass/options.hpp>
#include <gpass/pass/pass.hpp>

namespace gpass::detail {

/// What instrumentation and the registry need to know of one pass.
struct pass_info {
  std::string name;
  std::string description;
  std::vector<std::string> requires_facts;
  std::vector<std::string> provides_facts;
  std::vector<std::string> invalidates_facts;
  std::vector<std::string> required_options;
  std::vector<std::string> required_graph_attrs;
  /// The options it declares (`P::options`; views of static storage).
  std::vector<option_spec> options;
  /// It only establishes its provided facts (an analysis such as inference), so a pipeline
  /// skips it when the graph holds them all already (`P::skip_when_held`).
  bool skip_when_held = false;
  /// Its result does not depend on nodes nothing uses (`P::dead_code_insensitive`): after it
  /// changed nothing, a pipeline skips it again while the only changes since were removals
  /// of dead code (`pass_context::report_removed_dead_code`).
  bool dead_code_insensitive = false;
};

template <class P>
constexpr bool skip_when_held_v = [] {
  if constexpr (requires { bool(P::skip_when_held); }) return bool(P::skip_when_held);
  else return false;
}();

template <class P>
constexpr bool dead_code_insensitive_v = [] {
  if constexpr (requires { bool(P::dead_code_insensitive); }) return bool(P::dead_code_insensitive);
  else return false;
}();

inline std::vector<std::string> string_list(std::span<const std::string_view> names) {
  return {names.begin(), names.end()};
}

/// The `pass_info` of a pass type, built once.
template <class P>
const pass_info& pass_info_of() {
  static const pass_info info{std::string(std::string_view(P::name)),
                              std::string(std::string_view(P::description)),
                              pass_requires_t<P>::name_strings(),
                              pass_provides_t<P>::name_strings(),
                              pass_invalidates_t<P>::name_strings(),
                              string_list(pass_required_options_v<P>),
                              string_list(pass_required_graph_attrs_v<P>),
                              {pass_options_v<P>.begin(), pass_options_v<P>.end()},
                              skip_when_held_v<P>,
                              dead_code_insensitive_v<P>};
  return info;
}

}  // namespace gpass::detail
