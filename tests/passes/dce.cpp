// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/graph/graph.hpp>
#include <gpass/graph/reachability.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/passes/common/dce.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_dce {

namespace {
using G = gpass::graph<>;

/// Adds a node with `n_out` outputs whose inputs are `ins` (output 0 of each).
G::node_id add(G& g, std::string name, std::string op, std::vector<G::node_id> ins = {}, std::size_t n_out = 1) {
  gpass::node n{.name = std::move(name), .op = std::move(op)};
  n.outputs.resize(n_out);
  auto v = g.add_node(std::move(n));
  for (auto i : ins) g.add_input(v, i, 0);
  return v;
}
G::node_id ret(G& g, std::vector<G::node_id> ins, std::string name = "ret") {
  return add(g, std::move(name), "return", std::move(ins), 0);
}

std::vector<std::string> names(const G& g) {
  std::vector<std::string> r;
  for (auto v : g.nodes()) r.push_back(g[v].name);
  return r;
}
std::vector<std::string> function_names(const G& g) {
  std::vector<std::string> r;
  for (const auto& [n, f] : g.functions()) r.push_back(n);
  return r;
}
std::int64_t stat(const gpass::pass_context& ctx, const std::string& k) {
  auto s = ctx.statistics();
  auto it = s.find(k);
  REQUIRE_MESSAGE(it != s.end(), "missing statistic " << k);
  return it->second;
}
using S = std::vector<std::string>;

/// A registered side-effecting op of a test domain (registered once per process).
void register_test_ops() {
  auto& r = gpass::op_registry::global();
  if (!r.find("dce_test", "Print")) {
    gpass::op_schema s;
    s.domain = "dce_test";
    s.name = "Print";
    s.min_outputs = 0;
    s.max_outputs = 0;
    s.traits.side_effects = true;
    r.add(std::move(s));
  }
}
}  // namespace

TEST_CASE("passes.dce.removes_unused_chains") {
  G g;
  auto x = add(g, "x", "arg");
  auto a = add(g, "a", "Relu", {x});
  add(g, "b", "Neg", {x});
  auto c = add(g, "c", "Exp", {g.at("b")});
  add(g, "d", "Add", {c, a});  // uses a live node but is itself dead
  ret(g, {a});
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"x", "a", "ret"});
  CHECK(g.num_edges() == 2);
  CHECK(g.uses(x).size() == 1);
  CHECK(g.uses(a).size() == 1);
  CHECK(stat(ctx, "dce.removed-nodes") == 3);
  CHECK(stat(ctx, "dce.removed-functions") == 0);
  CHECK(ctx.diagnostics().empty());
}

TEST_CASE("passes.dce.unknown_ops_are_pure") {
  G g;
  auto x = add(g, "x", "arg");
  add(g, "unused", "SomeCustomOpNobodyRegistered", {x});
  add(g, "unused_const", "Const");
  ret(g, {x});
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"x", "ret"});
}

TEST_CASE("passes.dce.keeps_side_effects_terminators_and_interface") {
  register_test_ops();
  G g;
  auto x = add(g, "x", "arg");
  add(g, "unused_arg", "arg");  // interface: stays although unused (as ONNX Runtime keeps graph inputs)
  auto v = add(g, "v", "Mul", {x});
  auto w = add(g, "w", "Sqrt", {v});
  add(g, "store", "set_global", {w}, 0);  // side effect keeps v and w
  auto p = add(g, "p", "Neg", {x});
  gpass::node print{.name = "print", .op = "Print", .domain = "dce_test"};
  print.outputs.clear();
  auto pr = g.add_node(print);
  g.add_input(pr, p);
  add(g, "q", "Abs", {x});  // dead
  auto r = add(g, "r", "Tanh", {x});
  add(g, "fetch", "retval", {r}, 0);  // a session fetch is a terminator
  add(g, "dead", "Relu", {x});
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"x", "unused_arg", "v", "w", "store", "p", "print", "r", "fetch"});
  CHECK(stat(ctx, "dce.removed-nodes") == 2);
}

TEST_CASE("passes.dce.same_op_name_in_other_domain_is_not_a_root") {
  G g;
  auto x = add(g, "x", "arg");
  gpass::node n{.name = "fake_return", .op = "return", .domain = "some.other.domain"};
  n.outputs.clear();
  auto f = g.add_node(n);
  g.add_input(f, x);
  ret(g, {x});
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"x", "ret"});
}

TEST_CASE("passes.dce.multi_output_node_stays_whole") {
  G g;
  auto x = add(g, "x", "arg");
  auto split = add(g, "split", "Split", {x}, 3);
  auto use = add(g, "use", "Relu");
  g.add_input(use, split, 2);  // only output 2 is used
  add(g, "use0", "Relu", {split});  // dead use of output 0
  ret(g, {use});
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"x", "split", "use", "ret"});
  CHECK(g.num_outputs(split) == 3);
  CHECK(g.uses(split, 0).empty());
  CHECK(g.uses(split, 2).size() == 1);
  CHECK(g.input(split, 0).node == x);
}

TEST_CASE("passes.dce.keeps_control_dependency_ancestors") {
  G g;
  auto x = add(g, "x", "arg");
  auto init = add(g, "init", "Assign_like_pure_op", {x});  // pure, but ordered before y
  auto init_src = add(g, "init_src", "Const");
  g.add_input(init, init_src);
  auto y = add(g, "y", "Relu", {x});
  g.add_control(init, y);
  auto z = add(g, "z", "Neg", {x});
  auto after = add(g, "after", "Exp", {x});
  g.add_control(z, after);  // z only orders a dead node: dead too
  auto r = ret(g, {y});
  auto guard = add(g, "guard", "NoOp");  // control-only predecessor of the return
  g.add_control(guard, r);
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"x", "init", "init_src", "y", "ret", "guard"});
  CHECK(g.control_inputs(y) == std::vector{init});
  CHECK(g.control_inputs(r) == std::vector{guard});
  CHECK(stat(ctx, "dce.removed-nodes") == 2);
}

TEST_CASE("passes.dce.honours_dce_keep") {
  G g;
  auto x = add(g, "x", "arg");
  auto dbg = add(g, "debug", "Mul", {x});
  add(g, "debug2", "Relu", {dbg});
  add(g, "gone", "Abs", {x});
  add(g, "also_kept", "Const");
  ret(g, {x});
  gpass::pass_context ctx;
  ctx.set_option("dce.keep", " debug2 ,, also_kept,");
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"x", "debug", "debug2", "also_kept", "ret"});
  CHECK(stat(ctx, "dce.removed-nodes") == 1);
}

TEST_CASE("passes.dce.keep_alone_is_a_root") {
  G g;  // no return at all, but a kept node makes the graph's purpose explicit
  auto c = add(g, "c", "Const");
  auto y = add(g, "y", "Relu", {c});
  add(g, "z", "Neg", {y});
  gpass::pass_context ctx;
  ctx.set_option("dce.keep", "y");
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"c", "y"});
  CHECK(ctx.diagnostics().empty());
}

TEST_CASE("passes.dce.unknown_keep_name_is_an_error") {
  G g;
  auto x = add(g, "x", "arg");
  add(g, "dead", "Relu", {x});
  ret(g, {x});
  gpass::pass_context ctx;
  ctx.set_option("dce.keep", "x,nope");
  CHECK_THROWS_WITH_AS(gpass::dce(g, ctx), doctest::Contains("pass 'dce'"), gpass::error);
  try {
    gpass::dce(g, ctx);
  } catch (const gpass::error& e) {
    CHECK(e.context().pass == "dce");
    CHECK(e.message().find("'nope'") != std::string::npos);
  }
  CHECK(names(g) == S{"x", "dead", "ret"});  // nothing changed
  CHECK(ctx.current_pass().empty());         // the context is restored on error
}

TEST_CASE("passes.dce.no_roots_warns_and_keeps_everything") {
  G g;
  auto c = add(g, "c", "Const");
  auto y = add(g, "y", "Relu", {c});
  add(g, "z", "Neg", {y});
  add(g, "unused_arg", "arg");  // interface nodes alone are not results
  g.add_function("f", G{});
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"c", "y", "z", "unused_arg"});
  CHECK(function_names(g) == S{"f"});  // a library of a graph without results is kept too
  auto d = ctx.diagnostics();
  REQUIRE(d.size() == 1);
  CHECK(d[0].severity == gpass::severity::warning);
  CHECK(d[0].pass == "dce");
  CHECK(d[0].message.find("no result") != std::string::npos);
  CHECK(stat(ctx, "dce.removed-nodes") == 0);

  G empty;
  gpass::pass_context ctx2;
  gpass::dce(empty, ctx2);
  CHECK(ctx2.diagnostics().empty());  // nothing to warn about
  CHECK(empty.empty());
}

TEST_CASE("passes.dce.works_inside_functions_and_removes_unreferenced_ones") {
  G g;
  // body(i) = i + 1, with a dead node; cond(i) = i < 10 calling helper; helper references itself.
  G body;
  auto be = add(body, "entry", "function_entry", {}, 2);
  auto one = add(body, "one", "Const");
  auto inc = add(body, "inc", "Add", {be, one});
  add(body, "dead_in_body", "Mul", {be, be});
  auto br = ret(body, {inc});
  body.add_input(br, be, 1);  // second loop variable passes through (entry output 1)
  G cond;
  auto ce = add(cond, "entry", "function_entry", {}, 2);
  auto ten = add(cond, "ten", "Const");
  auto less = add(cond, "less", "Less", {ce, ten});
  cond[less].attrs["helper"] = gpass::function_ref{"helper"};
  ret(cond, {less});
  G helper;
  auto he = add(helper, "entry", "function_entry");
  auto hn = add(helper, "n", "Identity", {he});
  helper[hn].attrs["self"] = gpass::function_ref{"helper"};  // recursion terminates
  ret(helper, {hn});
  G unused;
  auto ue = add(unused, "entry", "function_entry");
  ret(unused, {ue});
  G only_dead_ref;  // referenced only by a dead node of the top graph
  ret(only_dead_ref, {});
  G branch_a, branch_b;  // referenced through a list of functions
  ret(branch_a, {});
  ret(branch_b, {});
  add(branch_b, "dead_in_branch", "Const");
  g.add_function("body", std::move(body));
  g.add_function("cond", std::move(cond));
  g.add_function("helper", std::move(helper));
  g.add_function("unused", std::move(unused));
  g.add_function("only_dead_ref", std::move(only_dead_ref));
  g.add_function("branch_a", std::move(branch_a));
  g.add_function("branch_b", std::move(branch_b));

  auto x = add(g, "x", "arg");
  auto w = add(g, "loop", "while", {x, x}, 2);
  g[w].attrs["cond"] = gpass::function_ref{"cond"};
  g[w].attrs["body"] = gpass::function_ref{"body"};
  auto sw = add(g, "case", "Case", {x});
  g[sw].attrs["branches"] = std::vector<gpass::function_ref>{{"branch_a"}, {"branch_b"}};
  auto dead = add(g, "dead_call", "call", {x});
  g[dead].attrs["f"] = gpass::function_ref{"only_dead_ref"};
  auto r = ret(g, {w, sw});
  (void)r;

  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"x", "loop", "case", "ret"});
  CHECK(function_names(g) == S{"body", "branch_a", "branch_b", "cond", "helper"});
  CHECK(names(*g.find_function("body")) == S{"entry", "one", "inc", "ret"});
  CHECK(names(*g.find_function("branch_b")) == S{"ret"});
  CHECK(names(*g.find_function("cond")) == S{"entry", "ten", "less", "ret"});
  CHECK(stat(ctx, "dce.removed-nodes") == 3);  // dead_call, dead_in_body, dead_in_branch
  CHECK(stat(ctx, "dce.removed-functions") == 2);
  CHECK(ctx.diagnostics().empty());
}

TEST_CASE("passes.dce.function_without_result_is_kept_with_warning") {
  G g;
  G f;
  auto fe = add(f, "entry", "function_entry");
  add(f, "y", "Relu", {fe});  // no return: suspicious, keep as is
  g.add_function("f", std::move(f));
  auto x = add(g, "x", "arg");
  auto c = add(g, "call", "call", {x});
  g[c].attrs["f"] = gpass::function_ref{"f"};
  ret(g, {c});
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(*g.find_function("f")) == S{"entry", "y"});
  auto d = ctx.diagnostics();
  REQUIRE(d.size() == 1);
  CHECK(d[0].message.find("function 'f'") != std::string::npos);
}

TEST_CASE("passes.dce.graph_attribute_references_keep_functions") {
  G g;
  g.add_function("entry_point", G{});
  g.add_function("other", G{});
  g.attrs()["main"] = gpass::function_ref{"entry_point"};
  auto x = add(g, "x", "arg");
  ret(g, {x});
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(function_names(g) == S{"entry_point"});
  CHECK(stat(ctx, "dce.removed-functions") == 1);
}

TEST_CASE("passes.dce.nested_libraries_resolve_inner_first") {
  G g;
  G outer_fn;  // a function with a library of its own
  auto e = add(outer_fn, "entry", "function_entry");
  auto call = add(outer_fn, "call", "call", {e});
  outer_fn[call].attrs["f"] = gpass::function_ref{"inner"};
  ret(outer_fn, {call});
  G inner;
  ret(inner, {});
  G inner_unused;
  ret(inner_unused, {});
  outer_fn.add_function("inner", std::move(inner));
  outer_fn.add_function("inner_unused", std::move(inner_unused));
  g.add_function("outer_fn", std::move(outer_fn));
  G same_name_outside;  // shadowed by outer_fn's own "inner": unreferenced
  ret(same_name_outside, {});
  g.add_function("inner", std::move(same_name_outside));
  auto x = add(g, "x", "arg");
  auto c = add(g, "c", "call", {x});
  g[c].attrs["f"] = gpass::function_ref{"outer_fn"};
  ret(g, {c});
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(function_names(g) == S{"outer_fn"});
  CHECK(function_names(*g.find_function("outer_fn")) == S{"inner"});
  CHECK(stat(ctx, "dce.removed-functions") == 2);
}

TEST_CASE("passes.dce.cycles") {
  G g;
  // A TF v1 style loop whose Exit is unused: the whole cycle is dead.
  auto x = add(g, "x", "arg");
  auto enter = add(g, "enter", "Enter", {x});
  auto merge = add(g, "merge", "Merge", {enter}, 2);
  auto body = add(g, "body", "Add", {merge});
  auto next = add(g, "next", "NextIteration", {body});
  g.add_input(merge, next);
  // A live loop feeding the return.
  auto enter2 = add(g, "enter2", "Enter", {x});
  auto merge2 = add(g, "merge2", "Merge", {enter2}, 2);
  auto sw = add(g, "switch", "Switch", {merge2, merge2}, 2);
  auto body2 = add(g, "body2", "Add");
  g.add_input(body2, sw, 1);
  auto next2 = add(g, "next2", "NextIteration", {body2});
  g.add_input(merge2, next2);
  auto exit2 = add(g, "exit2", "Exit", {sw});
  ret(g, {exit2});
  (void)next;
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"x", "enter2", "merge2", "switch", "body2", "next2", "exit2", "ret"});
  CHECK(stat(ctx, "dce.removed-nodes") == 4);
}

TEST_CASE("passes.dce.idempotent") {
  G g;
  auto x = add(g, "x", "arg");
  auto a = add(g, "a", "Relu", {x});
  add(g, "b", "Neg", {a});
  auto c = add(g, "c", "Exp", {a});
  auto r = ret(g, {c});
  auto n = add(g, "n", "NoOp");
  g.add_control(n, r);
  G f;
  ret(f, {});
  g.add_function("f", std::move(f));
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  auto once = names(g);
  auto edges_once = g.num_edges();
  CHECK(once == S{"x", "a", "c", "ret", "n"});
  gpass::pass_context ctx2;
  gpass::dce(g, ctx2);
  CHECK(names(g) == once);
  CHECK(g.num_edges() == edges_once);
  CHECK(stat(ctx2, "dce.removed-nodes") == 0);
  CHECK(stat(ctx2, "dce.removed-functions") == 0);
}

TEST_CASE("passes.dce.statistics_use_the_pipeline_pass_name") {
  G g;
  auto x = add(g, "x", "arg");
  add(g, "dead", "Relu", {x});
  ret(g, {x});
  gpass::pass_context ctx;
  ctx.set_current_pass("dce#2");  // as a pipeline would
  gpass::dce(g, ctx);
  CHECK(stat(ctx, "dce#2.removed-nodes") == 1);
  CHECK(ctx.current_pass() == "dce#2");
}

TEST_CASE("passes.dce.shared_producer_with_many_dead_consumers") {
  G g;
  auto x = add(g, "x", "arg");
  auto live = add(g, "live", "Relu", {x});
  ret(g, {live});
  constexpr int n = 100000;
  for (int i = 0; i < n; ++i) add(g, "d" + std::to_string(i), "Neg", {x});
  auto last = add(g, "sink", "Sum");  // one dead node with a huge fan-in
  for (int i = 0; i < n; i += 10) g.add_input(last, g.at("d" + std::to_string(i)));
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"x", "live", "ret"});
  CHECK(g.num_edges() == 2);
  CHECK(stat(ctx, "dce.removed-nodes") == n + 1);
}

TEST_CASE("passes.dce.live_and_dead_consumers_of_one_producer") {
  // Removing dead consumers one by one searches the producer's use list each time: with many
  // live uses listed first that is quadratic. The pass must stay linear (this would take
  // minutes otherwise).
  G g;
  auto x = add(g, "x", "arg");
  constexpr int n = 50000;
  auto sum = add(g, "sum", "Sum");
  for (int i = 0; i < n; ++i) g.add_input(sum, x);  // live uses first
  ret(g, {sum});
  for (int i = 0; i < n; ++i) add(g, "d" + std::to_string(i), "Neg", {x});  // then dead ones
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"x", "sum", "ret"});
  CHECK(g.uses(x).size() == static_cast<std::size_t>(n));
  CHECK(stat(ctx, "dce.removed-nodes") == n);
}

TEST_CASE("passes.dce.deep_chains_do_not_overflow_the_stack") {
  // One chain of 10^6 nodes: the first half feeds the return, the second half is dead.
  G g;
  constexpr int depth = 1000000;
  auto prev = add(g, "x", "arg");
  for (int i = 0; i < depth; ++i) {
    prev = add(g, "l" + std::to_string(i), "Relu", {prev});
    if (i == depth / 2 - 1) ret(g, {prev});
  }
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(g.num_nodes() == static_cast<std::size_t>(depth / 2) + 2);
  CHECK(stat(ctx, "dce.removed-nodes") == depth / 2);
  CHECK(g.find("l499999"));
  CHECK(!g.find("l500000"));
  CHECK(!g.find("l999999"));
}

namespace {
/// A user node type (derived from gpass::node, as node_like suggests).
struct my_node : gpass::node {
  int cost = 0;
};
}  // namespace

TEST_CASE("passes.dce.user_node_types") {
  gpass::graph<my_node> g;
  my_node x;
  x.name = "x";
  x.op = "arg";
  my_node y;
  y.name = "y";
  y.op = "Relu";
  my_node r;
  r.name = "r";
  r.op = "return";
  r.outputs.clear();
  auto vx = g.add_node(x);
  auto vy = g.add_node(y);
  auto vr = g.add_node(r);
  g.add_input(vy, vx);
  g.add_input(vr, vx);
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(g.num_nodes() == 2);
  CHECK(!g.find("y"));
}

TEST_CASE("passes.dce.insertion_order_does_not_matter") {
  // Consumers inserted before their producers: liveness must still reach the producers.
  G g;
  auto r = ret(g, {});
  auto y = add(g, "y", "Relu");
  auto p2 = add(g, "p2", "Neg");
  auto p1 = add(g, "p1", "arg");
  auto late_dead = add(g, "late_dead", "Exp");
  g.add_input(r, y);
  g.add_input(y, p2);
  g.add_input(p2, p1);
  g.add_input(late_dead, p2);
  auto c = add(g, "c", "NoOp");
  g.add_control(c, p2);
  gpass::pass_context ctx;
  gpass::dce(g, ctx);
  CHECK(names(g) == S{"ret", "y", "p2", "p1", "c"});
}

TEST_CASE("passes.dce.matches_reachability_on_random_graphs") {
  // Law: the survivors are exactly the roots and their ancestors (gpass::reaching), for graphs
  // with arbitrary insertion order, cycles, control edges and multi-output nodes.
  std::uint64_t state = 12345;
  auto rnd = [&](std::uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>((state >> 33) % n);
  };
  for (int round = 0; round < 20; ++round) {
    G g;
    const std::size_t n = 50 + rnd(400);
    std::vector<G::node_id> v;
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t k = rnd(100);
      const char* op = k < 3 ? "return" : k < 5 ? "set_global" : k < 8 ? "arg" : "Op";
      std::size_t outs = std::string(op) == "return" || std::string(op) == "set_global" ? 0 : 1 + rnd(2);
      v.push_back(add(g, "n" + std::to_string(i), op, {}, outs));
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (g[v[i]].op == "arg") continue;
      std::size_t fan = rnd(4);
      for (std::size_t k = 0; k < fan; ++k) {
        auto src = v[rnd(n)];
        if (g.num_outputs(src) == 0) continue;
        g.add_input(v[i], src, static_cast<int>(rnd(g.num_outputs(src))));
      }
      if (rnd(10) == 0) g.add_control(v[rnd(n)], v[i]);
    }
    std::vector<G::node_id> roots;
    for (auto x : g.nodes())
      if (g[x].op != "Op") roots.push_back(x);
    auto live = gpass::reaching(g, roots);
    S expected;
    bool observable = false;
    for (auto x : g.nodes()) {
      if (live[x]) expected.push_back(g[x].name);
      observable = observable || g[x].op == "return" || g[x].op == "set_global";
    }
    if (!observable) expected = names(g);
    gpass::pass_context ctx;
    gpass::dce(g, ctx);
    CHECK(names(g) == expected);
    gpass::pass_context ctx2;
    gpass::dce(g, ctx2);
    CHECK(names(g) == expected);
  }
}

}  // namespace gpass_test_passes_dce
