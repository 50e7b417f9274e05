// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/graph/graph.hpp>
#include <gpass/io/text.hpp>
#include <gpass/pass/fixed_point.hpp>
#include <gpass/pass/held_facts.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/pass/registry.hpp>
#include <gpass/passes/builtin.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_pass_options {

namespace {
using G = gpass::graph<>;
using registry = gpass::pass_registry<G>;
namespace ft = gpass::fact_tags;

std::string parse_error(const registry& r, std::string_view text) {
  try {
    (void)r.parse(text);
  } catch (const gpass::error& e) {
    return e.message();
  }
  return "(no error)";
}

/// Declares one option of each type and notes what it reads.
struct typed_fn : gpass::pass_base<typed_fn> {
  static constexpr std::string_view name = "typed";
  static constexpr std::string_view description = "reads typed options";
  static constexpr std::array options{
      gpass::option_spec{"level", gpass::option_type::integer, "2", "how hard"},
      gpass::option_spec{"ratio", gpass::option_type::number, "0.5", "a fraction"},
      gpass::option_spec{"fast", gpass::option_type::boolean, "false", "cut corners"},
      gpass::option_spec{"label", gpass::option_type::string, "", "a label"}};
  template <class Graph>
  void run(Graph&, gpass::pass_context& ctx) const {
    ctx.note("level=" + std::to_string(option_int(ctx, "level")) + " ratio=" + std::to_string(option_number(ctx, "ratio")) +
             " fast=" + (option_bool(ctx, "fast") ? "1" : "0") + " label=" + option_text(ctx, "label").value_or("-"));
  }
};
/// Reads an option it does not declare (a programming error, reported as the pass's error).
struct undeclared_fn : gpass::pass_base<undeclared_fn> {
  static constexpr std::string_view name = "undeclared";
  static constexpr std::string_view description = "reads an undeclared option";
  template <class Graph>
  void run(Graph&, gpass::pass_context& ctx) const {
    (void)option_int(ctx, "nope");
  }
};

/// Removes one `Peelable` node per run and reports whether it did; declares that it breaks types.
struct peel_fn : gpass::pass_base<peel_fn> {
  static constexpr std::string_view name = "peel";
  static constexpr std::string_view description = "removes one unused node per run";
  using invalidates_facts = gpass::facts<ft::types_inferred>;
  template <class Graph>
  void run(Graph& g, gpass::pass_context& ctx) const {
    for (auto v : g.nodes())
      if (g[v].op == "Peelable") {
        g.remove_node(v);
        ctx.add_statistic("removed");
        ctx.report_changed(true);
        return;
      }
    ctx.report_changed(false);
  }
};
/// Changes nothing but does not say so (so every run counts as a change).
struct silent_fn : gpass::pass_base<silent_fn> {
  static constexpr std::string_view name = "silent";
  static constexpr std::string_view description = "changes nothing, reports nothing";
  template <class Graph>
  void run(Graph&, gpass::pass_context&) const {}
};

/// Requires types, changes nothing (and says so).
struct test_fixed_point_needs_types : gpass::pass_base<test_fixed_point_needs_types> {
  static constexpr std::string_view name = "needs-types-fp";
  static constexpr std::string_view description = "requires types";
  using requires_facts = gpass::facts<ft::types_inferred>;
  template <class Graph>
  void run(Graph&, gpass::pass_context& ctx) const {
    ctx.report_changed(false);
  }
};

G peelable(int n) {
  G g;
  for (int i = 0; i < n; ++i) g.add_node({.name = "n" + std::to_string(i), .op = "Peelable"});
  g.add_node({.name = "keep", .op = "Other"});
  return g;
}

registry make_registry() {
  registry r;
  gpass::register_builtin_passes(r);
  r.add(typed_fn{});
  r.add(undeclared_fn{});
  r.add(peel_fn{});
  r.add(silent_fn{});
  return r;
}

std::vector<std::string> notes(const gpass::pass_context& ctx) {
  std::vector<std::string> r;
  for (const auto& d : ctx.diagnostics()) r.push_back(d.message);
  return r;
}
}  // namespace

TEST_CASE("pass.options.unknown_option_lists_the_valid_ones") {
  registry r = make_registry();
  std::string e = parse_error(r, "dce{nosuchopt=1}");
  CHECK(e.find("pass 'dce' has no option 'nosuchopt'") != std::string::npos);
  CHECK(e.find("keep: string") != std::string::npos);
  e = parse_error(r, "typed{levle=3}");
  CHECK(e.find("has no option 'levle'") != std::string::npos);
  CHECK(e.find("level: int = 2 - how hard") != std::string::npos);
  CHECK(e.find("fast: bool = false") != std::string::npos);
  CHECK(parse_error(r, "delete-disconnected{x=1}") ==
        "pipeline 'delete-disconnected{x=1}': pass 'delete-disconnected' has no option 'x'; it takes no options");
}

TEST_CASE("pass.options.ill_typed_values_are_errors") {
  registry r = make_registry();
  CHECK(parse_error(r, "infer-shapes{max-sweeps=abc}") ==
        "pipeline 'infer-shapes{max-sweeps=abc}': option 'infer-shapes.max-sweeps' expects an int, got 'abc'");
  CHECK(parse_error(r, "typed{ratio=1e400}").find("expects a number, got '1e400'") != std::string::npos);
  CHECK(parse_error(r, "typed{fast=maybe}").find("expects a bool, got 'maybe'") != std::string::npos);
  CHECK(parse_error(r, "typed{level=2.5}").find("expects an int") != std::string::npos);
  // accepted spellings
  CHECK_NOTHROW((void)r.parse("typed{level=-3,ratio=1e-3,fast,label=\"a, b\"}"));
  CHECK_NOTHROW((void)r.parse("typed{fast=off}"));
}

TEST_CASE("pass.options.typed_reads_use_declared_defaults") {
  registry r = make_registry();
  G g;
  gpass::pass_context ctx;
  r.parse("typed,typed{level=7,ratio=0.25,fast=yes,label=x}").run(g, ctx, {});
  auto n = notes(ctx);
  REQUIRE(n.size() == 2);
  CHECK(n[0] == "level=2 ratio=0.500000 fast=0 label=-");
  CHECK(n[1] == "level=7 ratio=0.250000 fast=1 label=x");
  // options set directly in the context are checked when the pass reads them
  gpass::pass_context bad;
  bad.set_option("typed.level", "many");
  CHECK_THROWS_WITH_AS(typed_fn{}(g, bad), "gpass: pass 'typed': option 'typed.level' expects an int, got 'many'",
                       gpass::error);
  CHECK_THROWS_WITH_AS(undeclared_fn{}(g, ctx),
                       "gpass: pass 'undeclared': reads option 'nope', which the pass does not declare", gpass::error);
}

TEST_CASE("pass.options.builtin_passes_declare_their_options") {
  registry r = make_registry();
  auto names_of = [&](std::string_view pass) {
    std::vector<std::string> v;
    for (const auto& o : r.find(pass)->info().options) v.emplace_back(o.name);
    return v;
  };
  CHECK(names_of("dce") == std::vector<std::string>{"keep"});
  CHECK(names_of("infer-shapes") == std::vector<std::string>{"opset", "max-sweeps", "max-loop-iterations",
                                                             "max-value-elements", "record-values",
                                                             "max-recorded-elements"});
  CHECK(names_of("delete-disconnected").empty());
  CHECK(r.find("infer-shapes")->info().skip_when_held);
}

TEST_CASE("pass.changes.unchanged_graph_keeps_facts_and_is_not_reverified") {
  registry r = make_registry();
  G g = peelable(1);
  gpass::pass_context ctx;
  gpass::instrumentation_options o;
  o.timing = true;
  // types-inferred is held; peel invalidates it only when it changes the graph
  g.set(gpass::held_facts, std::set<std::string>{"types-inferred"});
  r.parse("peel,peel").run(g, ctx, o);
  auto t = ctx.timing_report();
  REQUIRE(t.size() == 3);
  CHECK(t[0].find("unchanged") == std::string::npos);
  CHECK(t[1].ends_with(", unchanged"));
  CHECK_FALSE(gpass::held_facts_of(g).contains("types-inferred"));  // the first run broke it

  G h = peelable(0);
  h.set(gpass::held_facts, std::set<std::string>{"types-inferred"});
  r.parse("peel").run(h, ctx, o);
  CHECK(gpass::held_facts_of(h).contains("types-inferred"));  // nothing changed: still held
}

TEST_CASE("pass.changes.inference_is_skipped_when_its_facts_are_held") {
  registry r = make_registry();
  G g = gpass::parse_text(R"(graph {
  %a = arg() {index = 0} -> (f32[3])
  %b = Relu(%a)
  %r:0 = return(%b)
})");
  gpass::pass_context ctx;
  gpass::instrumentation_options o;
  o.timing = true;
  r.parse("infer-shapes,dce,infer-shapes").run(g, ctx, o);
  auto t = ctx.timing_report();
  REQUIRE(t.size() == 4);
  CHECK(t[0].starts_with("infer-shapes: "));
  CHECK(t[2] == "infer-shapes: skipped (its facts are held)");
  CHECK(g[g.at("b")].outputs[0].to_string() == "f32[3]");
  // an option given to the pass means it runs again
  r.parse("infer-shapes{max-sweeps=8}").run(g, ctx, o);
  CHECK(ctx.timing_report()[0].find("skipped") == std::string::npos);
  // a pass that may change the graph without saying so breaks nothing here (it declares no
  // invalidation), so inference is still skipped after it
  r.parse("silent,infer-shapes").run(g, ctx, o);
  CHECK(ctx.timing_report()[1] == "infer-shapes: skipped (its facts are held)");
}

TEST_CASE("pass.changes.a_pass_is_not_rerun_on_the_graph_it_left_unchanged") {
  registry r = make_registry();
  gpass::pass_context ctx;
  gpass::instrumentation_options o;
  o.timing = true;
  const std::string skipped = "peel: skipped (unchanged graph since its last run changed nothing)";
  // nothing to peel: the second run would see the same graph, so it does not run
  G g = peelable(0);
  r.parse("peel,peel").run(g, ctx, o);
  auto t = ctx.timing_report();
  REQUIRE(t.size() == 3);
  CHECK(t[0].ends_with(", unchanged"));
  CHECK(t[1] == skipped);
  // a pass that changed the graph (or may have: silent) in between means it runs again
  G h = peelable(1);
  r.parse("peel,peel,peel").run(h, ctx, o);
  t = ctx.timing_report();
  REQUIRE(t.size() == 4);
  CHECK(t[0].find("unchanged") == std::string::npos);  // removed n0
  CHECK(t[1].ends_with(", unchanged"));
  CHECK(t[2] == skipped);
  G s = peelable(0);
  r.parse("peel,silent,peel").run(s, ctx, o);
  t = ctx.timing_report();
  REQUIRE(t.size() == 4);
  CHECK(t[2].starts_with("peel: "));
  CHECK(t[2].ends_with(", unchanged"));
}

TEST_CASE("pass.changes.removing_dead_code_does_not_rerun_passes_it_cannot_affect") {
  registry r = make_registry();
  gpass::pass_context ctx;
  gpass::instrumentation_options o;
  o.timing = true;
  // %d is dead: dce removes it, and only that; cse (dead-code insensitive) found nothing
  // to merge before, so it is not run again; peel (not declared insensitive) is
  G g = gpass::parse_text(R"(graph {
  %a = arg() {index = 0} -> (f32[3])
  %b = Relu(%a)
  %d = Neg(%a)
  %r:0 = return(%b)
})");
  r.parse("cse,peel,dce,cse,peel").run(g, ctx, o);
  auto t = ctx.timing_report();
  REQUIRE(t.size() == 6);
  CHECK(t[2].starts_with("dce: "));
  CHECK(t[2].find("unchanged") == std::string::npos);
  CHECK(t[3] == "cse: skipped (unchanged graph since its last run changed nothing)");
  CHECK(t[4].starts_with("peel: "));
  CHECK(ctx.statistics().at("dce.removed-nodes") == 1);
  // a change that is not only dead code (peel removes a live node) runs cse again
  G h = peelable(1);
  r.parse("cse,peel,cse").run(h, ctx, o);
  t = ctx.timing_report();
  REQUIRE(t.size() == 4);
  CHECK(t[2].starts_with("cse: "));
  CHECK(t[2].find("skipped") == std::string::npos);
}

TEST_CASE("pass.fixed_point.compile_time_runs_until_nothing_changes") {
  G g = peelable(3);
  gpass::pass_context ctx;
  gpass::fixed_point(peel_fn{}, 10)(g, ctx);
  CHECK(g.num_nodes() == 1);
  CHECK(ctx.statistics().at("fixed-point.rounds") == 4);  // 3 that changed, 1 that did not
  CHECK(ctx.statistics().at("peel.removed") == 3);
  CHECK(ctx.diagnostics().empty());

  G h = peelable(5);
  gpass::pass_context capped;
  gpass::fixed_point(gpass::pipeline(peel_fn{}, peel_fn{}), 2)(h, capped);
  CHECK(h.num_nodes() == 2);  // 2 rounds of 2 peels
  CHECK(capped.statistics().at("fixed-point.rounds") == 2);
  REQUIRE(capped.diagnostics().size() == 1);
  CHECK(capped.diagnostics()[0].severity == gpass::severity::warning);
  CHECK(capped.diagnostics()[0].message.find("no fixed point after 2 rounds") != std::string::npos);

  // a pass that does not report its changes never lets a round converge
  G s = peelable(0);
  gpass::pass_context sc;
  gpass::fixed_point(silent_fn{}, 3)(s, sc);
  CHECK(sc.statistics().at("fixed-point.rounds") == 3);
  static_assert(gpass::pass_for<gpass::fixed_point_t<peel_fn>, G>);
  static_assert(std::is_same_v<gpass::fixed_point_t<peel_fn>::invalidates_facts, gpass::facts<ft::types_inferred>>);
}

TEST_CASE("pass.fixed_point.textual") {
  registry r = make_registry();
  G g = peelable(4);
  gpass::pass_context ctx;
  auto p = r.parse(R"(fixed-point{pipeline="peel,delete-disconnected",max-iterations=9})");
  CHECK(p.to_string() == R"(fixed-point{pipeline="peel,delete-disconnected",max-iterations=9})");
  CHECK(r.parse(p.to_string()).to_string() == p.to_string());
  p.run(g, ctx, {});
  // delete-disconnected removes the rest at once (they have no edges); peel then finds none
  CHECK(g.num_nodes() == 0);
  CHECK(ctx.statistics().at("fixed-point.rounds") == 2);
  CHECK(p.steps()[0].pass.info().provides_facts == std::vector<std::string>{"no-disconnected"});
  CHECK(p.steps()[0].pass.info().invalidates_facts == std::vector<std::string>{"types-inferred"});

  CHECK(parse_error(r, "fixed-point{max-iterations=2}").find("fixed-point needs its option 'pipeline'") !=
        std::string::npos);
  CHECK(parse_error(r, "fixed-point{pipeline=peel,max-iterations=0}").find("at least 1") != std::string::npos);
  CHECK(parse_error(r, "fixed-point{pipeline=peel,rounds=2}").find("has no option 'rounds'") != std::string::npos);
  CHECK(parse_error(r, R"(fixed-point{pipeline="nosuch"})").find("unknown pass 'nosuch'") != std::string::npos);
  // the inner pipeline's options are checked too
  CHECK(parse_error(r, R"(fixed-point{pipeline="dce{x=1}"})").find("pass 'dce' has no option 'x'") !=
        std::string::npos);
}

TEST_CASE("pass.fixed_point.textual_facts") {
  registry r = make_registry();
  r.add(test_fixed_point_needs_types{});
  // a round that needs types from before, and whose peel breaks them: a second round could not run
  CHECK(parse_error(r, R"(fixed-point{pipeline="needs-types-fp,peel"})").find("breaks fact 'types-inferred'") !=
        std::string::npos);
  // required facts come from before the fixed point
  CHECK(parse_error(r, R"(fixed-point{pipeline="needs-types-fp"})").find("requires fact 'types-inferred'") !=
        std::string::npos);
  CHECK_NOTHROW((void)r.parse(R"(infer-types,fixed-point{pipeline="needs-types-fp,dce"})"));
}

}  // namespace gpass_test_pass_options
