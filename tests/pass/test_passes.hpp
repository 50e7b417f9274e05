// SPDX-License-Identifier: Apache-2.0
#pragma once
// Test passes shared by the pass-infrastructure tests: each records its name as a note
// (so a test sees the order passes ran in) and declares facts, and nothing else.

#include <string>
#include <string_view>

#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>

namespace test_passes {
namespace ft = gpass::fact_tags;

/// Records its name as a note.
template <class Derived>
struct recorder {
  template <class Graph>
  void operator()(Graph&, gpass::pass_context& ctx) const {
    ctx.note(std::string(Derived::name));
  }
};

struct infer_types_fn : recorder<infer_types_fn> {
  static constexpr std::string_view name = "infer-types";
  static constexpr std::string_view description = "provides types";
  using provides_facts = gpass::facts<ft::types_inferred>;
};
struct needs_types_fn : recorder<needs_types_fn> {
  static constexpr std::string_view name = "needs-types";
  static constexpr std::string_view description = "requires types";
  using requires_facts = gpass::facts<ft::types_inferred>;
};
struct breaks_types_fn : recorder<breaks_types_fn> {
  static constexpr std::string_view name = "breaks-types";
  static constexpr std::string_view description = "invalidates types";
  using invalidates_facts = gpass::facts<ft::types_inferred>;
};
struct shapes_fn : recorder<shapes_fn> {
  static constexpr std::string_view name = "shapes";
  static constexpr std::string_view description = "types -> shapes";
  using requires_facts = gpass::facts<ft::types_inferred>;
  using provides_facts = gpass::facts<ft::shapes_inferred>;
};
struct plain_fn : recorder<plain_fn> {
  static constexpr std::string_view name = "plain";
  static constexpr std::string_view description = "declares nothing";
};

}  // namespace test_passes
