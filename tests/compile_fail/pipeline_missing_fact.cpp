// EXPECT: missing_fact<needs_types_fn, gpass::fact_tags::types_inferred>
// SPDX-License-Identifier: Apache-2.0
// A pipeline whose pass requires a fact that no earlier pass provides must not compile, and
// the diagnostic must name the pass and the fact. (The variant with the fact provided is
// compiled and run in tests/pass/pipeline.cpp, test pass.pipeline.fact_provided_compiles.)
#include <gpass/graph/graph.hpp>
#include <gpass/pass/pipeline.hpp>

#include <string_view>

struct cleanup_fn {
  static constexpr std::string_view name = "cleanup";
  static constexpr std::string_view description = "provides nothing about types";
  using provides_facts = gpass::facts<gpass::fact_tags::no_dead_code>;
  template <class G>
  void operator()(G&, gpass::pass_context&) const {}
};

struct needs_types_fn {
  static constexpr std::string_view name = "needs-types";
  static constexpr std::string_view description = "requires inferred types";
  using requires_facts = gpass::facts<gpass::fact_tags::types_inferred>;
  template <class G>
  void operator()(G&, gpass::pass_context&) const {}
};

int main() {
  auto p = gpass::pipeline(cleanup_fn{}, needs_types_fn{});
  gpass::graph<> g;
  p(g);
}
