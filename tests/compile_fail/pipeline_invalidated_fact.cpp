// EXPECT: missing_fact<needs_types_fn, gpass::fact_tags::types_inferred>
// SPDX-License-Identifier: Apache-2.0
// A fact provided by an earlier pass but invalidated by a later one is no longer available:
// `infer | breaks | needs` must not compile (`infer | needs | breaks` does, see
// tests/pass/pipeline.cpp, test pass.pipeline.facts_flow).
#include <gpass/pass/pipeline.hpp>

#include <string_view>

struct infer_types_fn {
  static constexpr std::string_view name = "infer-types";
  static constexpr std::string_view description = "provides types";
  using provides_facts = gpass::facts<gpass::fact_tags::types_inferred>;
  template <class G>
  void operator()(G&, gpass::pass_context&) const {}
};

struct breaks_types_fn {
  static constexpr std::string_view name = "breaks-types";
  static constexpr std::string_view description = "invalidates types";
  using invalidates_facts = gpass::facts<gpass::fact_tags::types_inferred>;
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

using gpass::operator|;  // the passes are in the global namespace: make `|` visible

int main() {
  auto p = infer_types_fn{} | breaks_types_fn{} | needs_types_fn{};
  (void)p;
}
