// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/graph/attr_key.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/pass/registry.hpp>
#include <gpass/passes/builtin.hpp>  // global() holds the built-in passes

#include <array>
#include <atomic>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "test_passes.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_pass_registry {

namespace {
using G = gpass::graph<>;
using registry = gpass::pass_registry<G>;
namespace ft = gpass::fact_tags;

using namespace test_passes;
/// Notes every option it sees whose key starts with "opt."
struct opt_fn {
  static constexpr std::string_view name = "opt";
  static constexpr std::string_view description = "reports its options";
  static constexpr std::array options{gpass::option_spec{"keep", gpass::option_type::string, "", "kept"},
                                      gpass::option_spec{"level", gpass::option_type::integer, "1", "a level"},
                                      gpass::option_spec{"name", gpass::option_type::string, "", "a name"},
                                      gpass::option_spec{"flag", gpass::option_type::boolean, "false", "a flag"},
                                      gpass::option_spec{"x", gpass::option_type::integer, "", "x"},
                                      gpass::option_spec{"a", gpass::option_type::integer, "", "a"}};
  template <class Graph>
  void operator()(Graph&, gpass::pass_context& ctx) const {
    for (const auto& [k, v] : ctx.options())
      if (k.starts_with("opt.")) ctx.note(k + "=" + v);
  }
};
/// Seed 001's RequirePassAttr / RequireGraphAttr.
struct needs_attrs_fn {
  static constexpr std::string_view name = "needs-attrs";
  static constexpr std::string_view description = "requires an option and a graph attribute";
  static constexpr std::array<std::string_view, 1> required_options{"needs-attrs.places"};
  static constexpr std::array<std::string_view, 1> required_graph_attrs{"dep_vars"};
  static constexpr std::array options{gpass::option_spec{"places", gpass::option_type::string, "", "devices"}};
  template <class Graph>
  void operator()(Graph&, gpass::pass_context& ctx) const {
    ctx.note("places=" + *ctx.option("needs-attrs.places"));
  }
};
inline constexpr gpass::attr_key<std::vector<std::string>> dep_vars{"dep_vars"};

registry make_registry() {
  registry r;
  r.add<infer_types_fn>();
  r.add(needs_types_fn{});
  r.add(breaks_types_fn{});
  r.add(plain_fn{});
  r.add(opt_fn{});
  r.add(needs_attrs_fn{});
  return r;
}

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

std::string parse_error(const registry& r, std::string_view text, const std::set<std::string>& initial = {}) {
  try {
    (void)r.parse(text, initial);
  } catch (const gpass::error& e) {
    return e.message();
  }
  return "<no error>";
}
}  // namespace

TEST_CASE("pass.registry.add_find_names") {
  auto r = make_registry();
  const auto* p = r.find("infer-types");
  REQUIRE(p != nullptr);
  CHECK(p->name() == "infer-types");
  CHECK(p->description() == "provides types");
  CHECK(p->provides_facts() == std::vector<std::string>{"types-inferred"});
  CHECK(p->requires_facts().empty());
  CHECK(r.find("needs-types")->requires_facts() == std::vector<std::string>{"types-inferred"});
  CHECK(r.find("breaks-types")->invalidates_facts() == std::vector<std::string>{"types-inferred"});
  CHECK(r.find("needs-attrs")->required_options() == std::vector<std::string>{"needs-attrs.places"});
  CHECK(r.find("needs-attrs")->required_graph_attrs() == std::vector<std::string>{"dep_vars"});
  CHECK(r.find("nope") == nullptr);
  CHECK(r.names() ==
        std::vector<std::string>{"breaks-types", "infer-types", "needs-attrs", "needs-types", "opt", "plain"});
  CHECK_THROWS_WITH_AS(r.add(plain_fn{}), doctest::Contains("pass 'plain' is already registered"), gpass::error);
  CHECK_THROWS_WITH_AS(r.add_pipeline("plain", "opt"), doctest::Contains("already registered"), gpass::error);
  CHECK_THROWS_WITH_AS(r.add("bad name", plain_fn{}), doctest::Contains("invalid pass or pipeline name"),
                       gpass::error);
  // a default-constructed registry is empty
  CHECK(registry{}.names().empty());
}

TEST_CASE("pass.registry.parse_and_run") {
  auto r = make_registry();
  auto p = r.parse(" infer-types , needs-types,plain ");
  CHECK(p.size() == 3);
  CHECK(p.text() == "infer-types , needs-types,plain");
  CHECK(p.to_string() == "infer-types,needs-types,plain");
  CHECK(p.pass_names() == std::vector<std::string>{"infer-types", "needs-types", "plain"});
  CHECK(p.available_facts() == std::set<std::string>{"types-inferred"});
  G g;
  gpass::pass_context ctx;
  p.run(g, ctx, quiet());
  CHECK(ran(ctx) == std::vector<std::string>{"infer-types", "needs-types", "plain"});
  CHECK(gpass::held_facts_of(g) == std::set<std::string>{"types-inferred"});
  // an empty text is an empty pipeline
  CHECK(r.parse("  ").empty());
}

TEST_CASE("pass.registry.per_pass_options") {
  auto r = make_registry();
  auto p = r.parse(R"(opt{keep=out, level = 2 ,name="a,b}c"},plain,opt{flag})");
  CHECK(p.steps()[0].options ==
        std::vector<std::pair<std::string, std::string>>{{"opt.keep", "out"}, {"opt.level", "2"}, {"opt.name", "a,b}c"}});
  CHECK(p.to_string() == R"(opt{keep=out,level=2,name="a,b}c"},plain,opt{flag=true})");
  CHECK(r.parse(p.to_string()).to_string() == p.to_string());  // the canonical text parses back
  G g;
  gpass::pass_context ctx;
  ctx.set_option("opt.keep", "global");
  p.run(g, ctx, quiet());
  // each pass sees its own options only; the context's value is restored afterwards
  CHECK(ran(ctx) == std::vector<std::string>{"opt.keep=out", "opt.level=2", "opt.name=a,b}c", "plain",
                                             "opt.flag=true", "opt.keep=global"});
  CHECK(ctx.option("opt.keep") == "global");
  CHECK_FALSE(ctx.option("opt.level"));
}

TEST_CASE("pass.registry.unknown_pass_error") {
  auto r = make_registry();
  CHECK(parse_error(r, "infer-types,needs-typs") ==
        "pipeline 'infer-types,needs-typs': unknown pass 'needs-typs'; did you mean 'needs-types'?");
  CHECK(parse_error(r, "types") ==
        "pipeline 'types': unknown pass 'types'; did you mean 'breaks-types', 'infer-types', 'needs-types'?");
  CHECK(parse_error(r, "zzzzzzzzzz") ==
        "pipeline 'zzzzzzzzzz': unknown pass 'zzzzzzzzzz'; known: 'breaks-types', 'infer-types', 'needs-attrs', "
        "'needs-types', 'opt', 'plain'");
}

TEST_CASE("pass.registry.missing_fact_error") {
  auto r = make_registry();
  CHECK(parse_error(r, "plain,needs-types") ==
        "pipeline 'plain,needs-types': pass 'needs-types' requires fact 'types-inferred', which no earlier pass "
        "provides");
  CHECK(parse_error(r, "infer-types,breaks-types,needs-types") ==
        "pipeline 'infer-types,breaks-types,needs-types': pass 'needs-types' requires fact 'types-inferred', which "
        "no earlier pass provides");
  // initial facts: a set of names, a facts<...> list, or what a graph holds
  CHECK_NOTHROW((void)r.parse("needs-types", {"types-inferred"}));
  CHECK_NOTHROW((void)r.parse("needs-types", gpass::facts<ft::types_inferred>{}));
  G g;
  gpass::pass_context ctx;
  r.parse("infer-types").run(g, ctx, quiet());
  auto later = r.parse("needs-types", gpass::held_facts_of(g));
  CHECK(later.initial_facts() == std::set<std::string>{"types-inferred"});
}

TEST_CASE("pass.registry.syntax_errors") {
  auto r = make_registry();
  CHECK(parse_error(r, "plain,,opt").find("expected a pass name, found ','") != std::string::npos);
  CHECK(parse_error(r, "plain,").find("expected a pass name at end of text") != std::string::npos);
  CHECK(parse_error(r, "opt{keep=1").find("unterminated '{'") != std::string::npos);
  CHECK(parse_error(r, "opt{keep=\"1}").find("unterminated '\"'") != std::string::npos);
  CHECK(parse_error(r, "opt plain").find("expected ',' between passes, found 'p'") != std::string::npos);
  CHECK(parse_error(r, "opt{a=1,a=2}").find("option 'a' given twice") != std::string::npos);
  try {
    (void)r.parse("plain,,opt");
  } catch (const gpass::error& e) {
    CHECK(e.context().column == 7);
  }
}

TEST_CASE("pass.registry.named_pipelines") {
  auto r = make_registry();
  r.add_pipeline("front", "infer-types, plain", "types first");
  r.add_pipeline("all", "front,needs-types");
  REQUIRE(r.find_pipeline("front") != nullptr);
  CHECK(r.find_pipeline("front")->description == "types first");
  CHECK(r.pipeline_names() == std::vector<std::string>{"all", "front"});
  CHECK(r.contains("all"));
  auto p = r.parse("all,opt{x=1}");
  CHECK(p.to_string() == "infer-types,plain,needs-types,opt{x=1}");
  CHECK(parse_error(r, "all{x=1}") == "pipeline 'all{x=1}': named pipeline 'all' takes no options");
  r.add_pipeline("loop1", "plain,loop2");
  r.add_pipeline("loop2", "loop1");
  CHECK(parse_error(r, "loop1").find("named pipeline 'loop1' refers to itself") != std::string::npos);
  r.add_pipeline("broken", "plain,nope");
  CHECK(parse_error(r, "broken") ==
        "pipeline 'broken': unknown pass 'nope'; did you mean 'opt'? (in named pipeline 'broken' = 'plain,nope')");
  CHECK_THROWS_WITH_AS(r.add_pipeline("bad", "a,,b"), doctest::Contains("expected a pass name"), gpass::error);
}

TEST_CASE("pass.registry.compile_time_pipeline_registered") {
  auto r = make_registry();
  r.add("types-then-check", gpass::pipeline(infer_types_fn{}, needs_types_fn{}), "a compiled pipeline");
  const auto* p = r.find("types-then-check");
  REQUIRE(p != nullptr);
  CHECK(p->is_pipeline());
  CHECK(p->description() == "a compiled pipeline");
  CHECK(p->provides_facts() == std::vector<std::string>{"types-inferred"});
  auto d = r.parse("types-then-check,needs-types");
  G g;
  gpass::pass_context ctx;
  auto o = quiet();
  o.timing = true;
  d.run(g, ctx, o);
  CHECK(ran(ctx) == std::vector<std::string>{"infer-types", "needs-types", "needs-types"});
  // the inner passes are instrumented one by one
  auto report = ctx.timing_report();
  REQUIRE(report.size() == 4);
  CHECK(report[0].starts_with("infer-types: "));
  CHECK(report[1].starts_with("needs-types: "));
  CHECK(report[3].starts_with("total: "));
}

TEST_CASE("pass.registry.required_options_and_graph_attrs") {
  auto r = make_registry();
  G g;
  {
    gpass::pass_context ctx;
    try {
      r.parse("plain,needs-attrs").run(g, ctx, quiet());
      FAIL("no error");
    } catch (const gpass::error& e) {
      CHECK(e.message() == "pass 'needs-attrs' requires option 'needs-attrs.places', which is not set");
      CHECK(e.context().pass == "needs-attrs");
    }
  }
  {
    gpass::pass_context ctx;
    CHECK_THROWS_WITH_AS(r.parse("needs-attrs{places=cpu}").run(g, ctx, quiet()),
                         doctest::Contains("pass 'needs-attrs' requires graph attribute 'dep_vars', which is not set"),
                         gpass::error);
  }
  g.set(dep_vars, {"a"});
  {
    gpass::pass_context ctx;
    r.parse("needs-attrs{places=cpu}").run(g, ctx, quiet());
    CHECK(ran(ctx) == std::vector<std::string>{"places=cpu"});
  }
  {
    gpass::pass_context ctx;
    ctx.set_option("needs-attrs.places", "gpu");  // set in the context instead
    r.parse("needs-attrs").run(g, ctx, quiet());
    CHECK(ran(ctx) == std::vector<std::string>{"places=gpu"});
  }
  // compile-time pipelines check the same way
  G h;
  gpass::pass_context ctx;
  ctx.set_option("needs-attrs.places", "gpu");
  CHECK_THROWS_WITH_AS(gpass::pipeline(plain_fn{}, needs_attrs_fn{}).run(h, ctx, quiet()),
                       doctest::Contains("requires graph attribute 'dep_vars'"), gpass::error);
}

TEST_CASE("pass.registry.global_has_builtins") {
  auto& r = registry::global();
  CHECK(&r == &registry::global());
  REQUIRE(r.find("dce") != nullptr);
  REQUIRE(r.find("delete-disconnected") != nullptr);
  CHECK(r.find("dce")->provides_facts() == std::vector<std::string>{"no-dead-code"});
  REQUIRE(r.find_pipeline("default") != nullptr);
  auto p = r.parse("default");
  CHECK(p.pass_names() == std::vector<std::string>{"delete-disconnected", "dce"});
  CHECK(p.available_facts().contains("no-dead-code"));
  // concurrent first use and lookups from many threads
  std::atomic<int> found{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      auto& reg = gpass::pass_registry<gpass::graph<gpass::node, gpass::edge, gpass::attribute_map>>::global();
      if (reg.find("dce") && reg.parse("default").size() == 2) ++found;
    });
  for (auto& t : threads) t.join();
  CHECK(found == 8);
}

}  // namespace gpass_test_pass_registry
