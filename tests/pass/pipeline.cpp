// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/graph/graph.hpp>
#include <gpass/pass/held_facts.hpp>
#include <gpass/pass/pipeline.hpp>
#include <gpass/passes/common/dce.hpp>
#include <gpass/passes/common/delete_disconnected.hpp>

#include <boost/hana/size.hpp>

#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "test_passes.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_pass_pipeline {

namespace {
using G = gpass::graph<>;
namespace ft = gpass::fact_tags;

using namespace test_passes;
using test_passes::infer_types_fn;  // not gpass::infer_types_fn (another file of the batch may include it)

/// Adds a node and counts it; has an immutable option member.
struct add_node_fn {
  static constexpr std::string_view name = "add-node";
  static constexpr std::string_view description = "adds a node";
  std::string base = "extra";
  template <class Graph>
  void operator()(Graph& g, gpass::pass_context& ctx) const {
    g.add_node({.name = g.unique_name(base), .op = "Const"});
    ctx.add_statistic("added");
    ctx.note(ctx.current_pass());
  }
};

struct throws_fn {
  static constexpr std::string_view name = "throws";
  static constexpr std::string_view description = "throws";
  void operator()(G&, gpass::pass_context&) const { throw std::runtime_error("boom"); }
};

std::vector<std::string> ran(const gpass::pass_context& ctx) {
  std::vector<std::string> r;
  for (const auto& d : ctx.diagnostics()) r.push_back(d.message);
  return r;
}

gpass::instrumentation_options quiet() {
  gpass::instrumentation_options o;
  o.verify_each = false;
  return o;
}
}  // namespace

using gpass::operator|;  // the test passes live in an anonymous namespace

TEST_CASE("pass.pipeline.compose") {
  auto p = gpass::pipeline(infer_types_fn{}, needs_types_fn{}, plain_fn{});
  using P = decltype(p);
  static_assert(P::name == "infer-types,needs-types,plain");
  static_assert(P::size == 3);
  static_assert(gpass::pass_for<P, G>);
  static_assert(decltype(boost::hana::size(p.passes()))::value == 3);

  // a | b | c is the same flat pipeline
  auto q = infer_types_fn{} | needs_types_fn{} | plain_fn{};
  static_assert(std::is_same_v<decltype(q), P>);
  // pipeline | pipeline and pass | pipeline splice
  auto front = infer_types_fn{} | needs_types_fn{};
  auto r = front | gpass::pipeline(plain_fn{});
  static_assert(std::is_same_v<decltype(r), P>);
  auto s = plain_fn{} | front;
  static_assert(decltype(s)::name == "plain,infer-types,needs-types");
  auto t = gpass::pipeline(front, plain_fn{}, front);
  static_assert(decltype(t)::size == 5);
  // an empty pipeline is fine and a no-op
  auto e = gpass::pipeline();
  static_assert(decltype(e)::size == 0 && decltype(e)::name.empty());
  G g;
  e(g);
  CHECK(g.empty());
}

TEST_CASE("pass.pipeline.fact_provided_compiles") {
  // the positive variant of tests/compile_fail/pipeline_missing_fact.cpp
  auto p = gpass::pipeline(infer_types_fn{}, needs_types_fn{});
  G g;
  gpass::pass_context ctx;
  p.run(g, ctx, quiet());
  CHECK(ran(ctx) == std::vector<std::string>{"infer-types", "needs-types"});
}

TEST_CASE("pass.pipeline.facts_flow") {
  using namespace gpass;
  // provides then invalidates: nothing provided, types invalidated
  using A = decltype(infer_types_fn{} | needs_types_fn{} | breaks_types_fn{});
  static_assert(std::is_same_v<A::requires_facts, facts<>>);
  static_assert(std::is_same_v<A::provides_facts, facts<>>);
  static_assert(std::is_same_v<A::invalidates_facts, facts<ft::types_inferred>>);
  static_assert(std::is_same_v<A::available_facts, facts<>>);
  // invalidated then provided again: available again
  using B = decltype(infer_types_fn{} | breaks_types_fn{} | infer_types_fn{} | shapes_fn{});
  static_assert(std::is_same_v<B::provides_facts, facts<ft::types_inferred, ft::shapes_inferred>>);
  static_assert(std::is_same_v<B::invalidates_facts, facts<>>);
  // a fact that is not mentioned is preserved: a pipeline_from keeps its initial facts
  using C = decltype(pipeline_from<facts<ft::types_inferred, ft::no_dead_code>>(shapes_fn{}, breaks_types_fn{}));
  static_assert(std::is_same_v<C::requires_facts, facts<ft::types_inferred, ft::no_dead_code>>);
  static_assert(std::is_same_v<C::available_facts, facts<ft::no_dead_code, ft::shapes_inferred>>);
  static_assert(std::is_same_v<C::provides_facts, facts<ft::shapes_inferred>>);
  static_assert(std::is_same_v<C::invalidates_facts, facts<ft::types_inferred>>);
  CHECK(A::invalidates_facts::names[0] == "types-inferred");
}

TEST_CASE("pass.pipeline.nested_pipeline_from") {
  using namespace gpass;
  auto tail = pipeline_from<facts<ft::types_inferred>>(needs_types_fn{}, shapes_fn{});
  using T = decltype(tail);
  static_assert(std::is_same_v<T::requires_facts, facts<ft::types_inferred>>);
  static_assert(T::name == "needs-types,shapes");
  // used after a pass that provides its initial facts, it stays one element
  auto full = infer_types_fn{} | tail | plain_fn{};
  using F = decltype(full);
  static_assert(F::size == 3);
  static_assert(F::name == "infer-types,needs-types,shapes,plain");
  static_assert(std::is_same_v<F::requires_facts, facts<>>);
  static_assert(F::provides_facts::contains<ft::shapes_inferred>);
  // as the first operand, a pipeline_from keeps its initial facts and grows
  auto grown = tail | needs_types_fn{};
  static_assert(std::is_same_v<decltype(grown)::requires_facts, facts<ft::types_inferred>>);
  static_assert(decltype(grown)::size == 3);

  G g;
  pass_context ctx;
  full.run(g, ctx, quiet());
  CHECK(ran(ctx) == std::vector<std::string>{"infer-types", "needs-types", "shapes", "plain"});
  // pipelines of pipelines of pipelines
  auto deep = pipeline(full, pipeline(full, plain_fn{}));
  pass_context ctx2;
  deep.run(g, ctx2, quiet());
  CHECK(ran(ctx2).size() == 9);
}

TEST_CASE("pass.pipeline.runs_in_order_with_context") {
  auto p = add_node_fn{} | add_node_fn{.base = "other"} | add_node_fn{};
  G g;
  gpass::pass_context ctx;
  p(g, ctx);  // default instrumentation: verification on
  CHECK(g.num_nodes() == 3);
  CHECK(g.find("extra"));
  CHECK(g.find("other"));
  CHECK(g.find("extra_1"));
  CHECK(ctx.statistics().at("add-node.added") == 3);
  CHECK(ran(ctx) == std::vector<std::string>{"add-node", "add-node", "add-node"});
  for (const auto& d : ctx.diagnostics()) CHECK(d.pass == "add-node");
  CHECK(ctx.current_pass().empty());  // restored after the run

  // own context
  G h;
  p(h);
  CHECK(h.num_nodes() == 3);
}

TEST_CASE("pass.pipeline.records_held_facts") {
  G g;
  CHECK(gpass::held_facts_of(g).empty());
  gpass::pass_context c0;
  (infer_types_fn{} | shapes_fn{}).run(g, c0, quiet());
  CHECK(gpass::held_facts_of(g) == std::set<std::string>{"types-inferred", "shapes-inferred"});
  gpass::pass_context ctx;
  gpass::pipeline(breaks_types_fn{}).run(g, ctx, quiet());
  CHECK(gpass::held_facts_of(g) == std::set<std::string>{"shapes-inferred"});
  CHECK(g.has_attr_named("gpass.held-facts"));
}

TEST_CASE("pass.pipeline.errors_name_the_pass") {
  G g;
  gpass::pass_context ctx;
  auto p = gpass::pipeline(plain_fn{}, throws_fn{});
  try {
    p.run(g, ctx, quiet());
    FAIL("no exception");
  } catch (const gpass::error& e) {
    CHECK(e.context().pass == "throws");
    CHECK(std::string(e.what()).find("boom") != std::string::npos);
  }
}

TEST_CASE("pass.pipeline.builtin_passes") {
  auto p = gpass::delete_disconnected | gpass::dce;
  using P = decltype(p);
  static_assert(P::name == "delete-disconnected,dce");
  static_assert(P::provides_facts::contains<ft::no_disconnected>);
  static_assert(P::provides_facts::contains<ft::no_dead_code>);
  G g;
  auto x = g.add_node({.name = "x", .op = "Placeholder"});
  auto y = g.add_node({.name = "y", .op = "Relu"});
  g.add_input(y, x);
  g.add_node({.name = "lonely", .op = "Const"});
  gpass::pass_context ctx;
  p(g, ctx);
  CHECK_FALSE(g.find("lonely"));
  CHECK(gpass::held_facts_of(g) == std::set<std::string>{"no-disconnected", "no-dead-code"});
}

}  // namespace gpass_test_pass_pipeline
