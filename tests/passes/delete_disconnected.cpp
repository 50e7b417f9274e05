// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/graph/graph.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/passes/common/delete_disconnected.hpp>

#include <cstdint>
#include <string>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_delete_disconnected {

namespace {
using G = gpass::graph<>;

G::node_id add(G& g, std::string name, std::string op, std::vector<G::node_id> ins = {}, std::size_t n_out = 1) {
  gpass::node n{.name = std::move(name), .op = std::move(op)};
  n.outputs.resize(n_out);
  auto v = g.add_node(std::move(n));
  for (auto i : ins) g.add_input(v, i, 0);
  return v;
}
std::vector<std::string> names(const G& g) {
  std::vector<std::string> r;
  for (auto v : g.nodes()) r.push_back(g[v].name);
  return r;
}
std::int64_t stat(const gpass::pass_context& ctx, const std::string& k) {
  auto s = ctx.statistics();
  auto it = s.find(k);
  REQUIRE_MESSAGE(it != s.end(), "missing statistic " << k);
  return it->second;
}
using S = std::vector<std::string>;
}  // namespace

TEST_CASE("passes.delete_disconnected.removes_isolated_nodes_only") {
  G g;
  auto x = add(g, "x", "Placeholder");
  add(g, "lonely_const", "Const");
  auto y = add(g, "y", "Relu", {x});
  add(g, "lonely_relu", "Relu");
  auto c1 = add(g, "ctl_src", "NoOp");  // only a control output
  auto c2 = add(g, "ctl_dst", "NoOp");  // only a control input
  g.add_control(c1, c2);
  add(g, "unused_but_connected", "Neg", {y});  // connected: not this pass's business (dce's)
  add(g, "last", "Unknown");
  gpass::pass_context ctx;
  gpass::delete_disconnected(g, ctx);
  CHECK(names(g) == S{"x", "y", "ctl_src", "ctl_dst", "unused_but_connected"});
  CHECK(g.num_edges() == 3);
  CHECK(stat(ctx, "delete-disconnected.removed-nodes") == 3);
}

TEST_CASE("passes.delete_disconnected.keeps_interface_effects_and_terminators") {
  G g;
  add(g, "unused_arg", "arg");                 // interface: part of the signature
  add(g, "entry", "function_entry", {}, 0);    // interface
  add(g, "store", "set_global", {}, 0);        // side effect (even if malformed here)
  add(g, "done", "return", {}, 0);             // terminator: returns nothing
  add(g, "fetch", "retval", {}, 0);            // terminator
  add(g, "read", "get_global");                // stateful but pure: removed
  gpass::pass_context ctx;
  gpass::delete_disconnected(g, ctx);
  CHECK(names(g) == S{"unused_arg", "entry", "store", "done", "fetch"});
  CHECK(stat(ctx, "delete-disconnected.removed-nodes") == 1);
}

TEST_CASE("passes.delete_disconnected.applies_to_every_function") {
  G g;
  G f;
  auto e = add(f, "entry", "function_entry");
  auto r = add(f, "ret", "return", {e}, 0);
  (void)r;
  add(f, "stray", "Const");
  G nested;
  add(nested, "stray2", "Const");
  add(nested, "ret", "return", {}, 0);
  f.add_function("nested", std::move(nested));
  g.add_function("f", std::move(f));
  G empty_fn;
  g.add_function("empty", std::move(empty_fn));
  add(g, "top_stray", "Const");
  gpass::pass_context ctx;
  gpass::delete_disconnected(g, ctx);
  CHECK(g.empty());
  CHECK(names(*g.find_function("f")) == S{"entry", "ret"});
  CHECK(names(*g.find_function("f")->find_function("nested")) == S{"ret"});
  CHECK(g.functions().size() == 2);  // never removes functions
  CHECK(stat(ctx, "delete-disconnected.removed-nodes") == 3);
}

TEST_CASE("passes.delete_disconnected.idempotent_and_statistics") {
  G g;
  auto a = add(g, "a", "Const");
  add(g, "b", "Relu", {a});
  add(g, "c", "Const");
  gpass::pass_context ctx;
  gpass::delete_disconnected(g, ctx);
  gpass::delete_disconnected(g, ctx);
  CHECK(names(g) == S{"a", "b"});
  CHECK(stat(ctx, "delete-disconnected.removed-nodes") == 1);  // accumulated over both runs

  gpass::pass_context ctx2;
  gpass::delete_disconnected(g, ctx2);
  CHECK(stat(ctx2, "delete-disconnected.removed-nodes") == 0);  // recorded even when zero
  CHECK(ctx2.diagnostics().empty());
  CHECK(ctx2.current_pass().empty());
}

TEST_CASE("passes.delete_disconnected.does_not_cascade") {
  // Removing an isolated node never isolates another one (it had no edges), so one sweep
  // reaches the fixed point; a node that becomes isolated only after *other* passes run is
  // left for the next run.
  G g;
  auto a = add(g, "a", "Const");
  auto b = add(g, "b", "Relu", {a});
  g.remove_node(b);  // a is now isolated
  add(g, "c", "Const");
  gpass::pass_context ctx;
  gpass::delete_disconnected(g, ctx);
  CHECK(g.empty());
  CHECK(stat(ctx, "delete-disconnected.removed-nodes") == 2);
}

TEST_CASE("passes.delete_disconnected.large_graphs") {
  G g;
  constexpr int n = 200000;
  auto prev = add(g, "x", "arg");
  for (int i = 0; i < n; ++i) {
    if (i % 2) prev = add(g, "n" + std::to_string(i), "Relu", {prev});
    else add(g, "n" + std::to_string(i), "Const");
  }
  gpass::pass_context ctx;
  gpass::delete_disconnected(g, ctx);
  CHECK(g.num_nodes() == static_cast<std::size_t>(n / 2 + 1));
  CHECK(stat(ctx, "delete-disconnected.removed-nodes") == n / 2);
}

}  // namespace gpass_test_passes_delete_disconnected
