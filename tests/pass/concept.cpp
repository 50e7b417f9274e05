// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/graph/graph.hpp>
#include <gpass/pass/pass.hpp>
#include <gpass/pass/pipeline.hpp>

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_pass_concept {

namespace {
using G = gpass::graph<>;
namespace ft = gpass::fact_tags;

struct good_fn {
  static constexpr std::string_view name = "good";
  static constexpr std::string_view description = "does nothing";
  template <class Graph>
  void operator()(Graph&, gpass::pass_context&) const {}
};

struct full_fn {
  static constexpr std::string_view name = "full";
  static constexpr std::string_view description = "declares everything";
  using requires_facts = gpass::facts<ft::types_inferred>;
  using provides_facts = gpass::facts<ft::shapes_inferred, ft::no_dead_code>;
  using invalidates_facts = gpass::facts<ft::no_disconnected>;
  static constexpr std::array<std::string_view, 2> required_options{"full.level", "places"};
  static constexpr std::array<std::string_view, 1> required_graph_attrs{"dep_vars"};
  void operator()(G&, gpass::pass_context&) const {}  // only for gpass::graph<>
};

// An immutable option member is fine: the pass is still const-called.
struct with_option_fn {
  static constexpr std::string_view name = "with-option";
  static constexpr std::string_view description = "has an option";
  std::string keep = "out";
  template <class Graph>
  void operator()(Graph&, gpass::pass_context&) const {}
};

struct no_name_fn {
  static constexpr std::string_view description = "x";
  template <class Graph>
  void operator()(Graph&, gpass::pass_context&) const {}
};
struct no_description_fn {
  static constexpr std::string_view name = "x";
  template <class Graph>
  void operator()(Graph&, gpass::pass_context&) const {}
};
struct runtime_name_fn {
  static inline const std::string name = "x";  // not a constant expression
  static constexpr std::string_view description = "x";
  template <class Graph>
  void operator()(Graph&, gpass::pass_context&) const {}
};
struct mutable_call_fn {
  static constexpr std::string_view name = "x";
  static constexpr std::string_view description = "x";
  template <class Graph>
  void operator()(Graph&, gpass::pass_context&) {}  // not const: would mutate the pass
};
struct no_context_fn {
  static constexpr std::string_view name = "x";
  static constexpr std::string_view description = "x";
  template <class Graph>
  void operator()(Graph&) const {}
};
struct move_only_fn {
  static constexpr std::string_view name = "x";
  static constexpr std::string_view description = "x";
  std::unique_ptr<int> state;
  template <class Graph>
  void operator()(Graph&, gpass::pass_context&) const {}
};
struct bad_facts_fn {
  static constexpr std::string_view name = "x";
  static constexpr std::string_view description = "x";
  using provides_facts = ft::types_inferred;  // not a facts<...> list
  template <class Graph>
  void operator()(Graph&, gpass::pass_context&) const {}
};
struct other_graph {};
}  // namespace

TEST_CASE("pass.concept.accepts_passes") {
  static_assert(gpass::pass_like<good_fn>);
  static_assert(gpass::pass_for<good_fn, G>);
  static_assert(gpass::pass_for<full_fn, G>);
  static_assert(gpass::pass_for<with_option_fn, G>);
  // a compile-time pipeline is a pass too
  static_assert(gpass::pass_for<decltype(gpass::pipeline(good_fn{}, with_option_fn{})), G>);
  CHECK(gpass::pass_for<good_fn, G>);
}

TEST_CASE("pass.concept.rejects_non_passes") {
  static_assert(!gpass::pass_like<no_name_fn>);
  static_assert(!gpass::pass_like<no_description_fn>);
  static_assert(!gpass::pass_like<runtime_name_fn>);
  static_assert(!gpass::pass_for<mutable_call_fn, G>);
  static_assert(!gpass::pass_for<no_context_fn, G>);
  static_assert(!gpass::pass_like<move_only_fn>);
  static_assert(!gpass::pass_like<bad_facts_fn>);
  static_assert(!gpass::pass_like<int>);
  static_assert(!gpass::pass_like<ft::types_inferred>);  // a fact is not a pass
  // runs on gpass::graph<> only
  static_assert(gpass::pass_like<full_fn>);
  static_assert(!gpass::pass_for<full_fn, other_graph>);
  CHECK_FALSE(gpass::pass_for<mutable_call_fn, G>);
}

TEST_CASE("pass.concept.traits") {
  static_assert(std::is_same_v<gpass::pass_requires_t<good_fn>, gpass::facts<>>);
  static_assert(std::is_same_v<gpass::pass_provides_t<good_fn>, gpass::facts<>>);
  static_assert(std::is_same_v<gpass::pass_invalidates_t<good_fn>, gpass::facts<>>);
  static_assert(std::is_same_v<gpass::pass_requires_t<const full_fn&>, gpass::facts<ft::types_inferred>>);
  static_assert(gpass::pass_provides_t<full_fn>::contains<ft::no_dead_code>);
  static_assert(gpass::pass_invalidates_t<full_fn>::contains<ft::no_disconnected>);
  static_assert(gpass::pass_required_options_v<good_fn>.empty());
  static_assert(gpass::pass_required_options_v<full_fn>.size() == 2);
  static_assert(gpass::pass_required_options_v<full_fn>[1] == "places");
  static_assert(gpass::pass_required_graph_attrs_v<full_fn>[0] == "dep_vars");
  CHECK(gpass::pass_provides_t<full_fn>::names[0] == "shapes-inferred");
}

TEST_CASE("pass.concept.facts_algebra") {
  using A = gpass::facts<ft::types_inferred, ft::shapes_inferred>;
  using B = gpass::facts<ft::shapes_inferred, ft::no_dead_code>;
  static_assert(std::is_same_v<gpass::facts_union_t<A, B>,
                               gpass::facts<ft::types_inferred, ft::shapes_inferred, ft::no_dead_code>>);
  static_assert(std::is_same_v<gpass::facts_difference_t<A, B>, gpass::facts<ft::types_inferred>>);
  static_assert(gpass::facts_includes_v<A, gpass::facts<ft::shapes_inferred>>);
  static_assert(!gpass::facts_includes_v<A, B>);
  static_assert(std::is_same_v<gpass::facts_after_t<A, gpass::facts<ft::types_inferred>, gpass::facts<ft::no_dead_code>>,
                               gpass::facts<ft::shapes_inferred, ft::no_dead_code>>);
  static_assert(gpass::is_facts_v<A> && !gpass::is_facts_v<ft::verified>);
  CHECK(gpass::facts_union_t<A, B>::name_strings() ==
        std::vector<std::string>{"types-inferred", "shapes-inferred", "no-dead-code"});
}

}  // namespace gpass_test_pass_concept
