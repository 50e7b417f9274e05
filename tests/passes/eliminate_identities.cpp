// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/analysis/verify.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/io/text.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/rewrite.hpp>
#include <gpass/passes/common/eliminate_identities.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_eliminate_identities {

namespace {
using G = gpass::graph<>;

/// Runs infer-shapes then eliminate-identities on `text`, returns the printed result.
std::string run(std::string_view text, gpass::pass_context& ctx) {
  G g = gpass::parse_text(text);
  gpass::infer_shapes(g, ctx);
  gpass::eliminate_identities(g, ctx);
  gpass::verify(g);
  return gpass::print_text(g);
}
std::int64_t stat(const gpass::pass_context& ctx, const std::string& k) {
  auto s = ctx.statistics();
  auto it = s.find("eliminate-identities." + k);
  return it == s.end() ? 0 : it->second;
}
}  // namespace

TEST_CASE("passes.eliminate_identities.onnx_patterns") {
  gpass::pass_context ctx;
  std::string out = run(R"(graph {
  %x = arg() {index = 0} -> (f32[2,3])
  %i = Identity(%x)
  %c = Cast(%i) {to = 1}
  %shape = Constant() {value = tensor<i64[2]> [2, 3]}
  %r = Reshape(%c, %shape)
  %d:2 = Dropout(%r)
  %t1 = Transpose(%d:0) {perm = [1, 0]}
  %t2 = Transpose(%t1) {perm = [1, 0]}
  %y = Relu(%t2)
  %r0:0 = return(%y)
})",
                        ctx);
  CHECK(out.find("Identity") == std::string::npos);
  CHECK(out.find("Cast") == std::string::npos);
  CHECK(out.find("Reshape") == std::string::npos);
  CHECK(out.find("Dropout") == std::string::npos);
  CHECK(out.find("%y = Relu(%x)") != std::string::npos);
  CHECK(stat(ctx, "identity") == 1);
  CHECK(stat(ctx, "cast-to-same-type") == 1);
  CHECK(stat(ctx, "reshape-to-same-shape") == 1);
  CHECK(stat(ctx, "dropout") == 1);
  CHECK(stat(ctx, "transpose-pair") == 1);
  CHECK(stat(ctx, "rewrites") == 5);
  // t1 lost its only use; dce removes it (eliminate-identities erases only what it replaces)
  CHECK(out.find("%t1 = Transpose(%x)") != std::string::npos);
}

TEST_CASE("passes.eliminate_identities.keeps_what_changes_values") {
  gpass::pass_context ctx;
  std::string out = run(R"(graph {
  %x = arg() {index = 0} -> (f32[2,3])
  %c = Cast(%x) {to = 7}
  %s = Constant() {value = tensor<i64[2]> [3, 2]}
  %r = Reshape(%x, %s)
  %d:2 = Dropout(%x)
  %t = Transpose(%x) {perm = [1, 0]}
  %i = Identity(%x)
  %r0:0 = return(%c, %r, %d:0, %d:1, %t, %i)
})",
                        ctx);
  CHECK(out.find("%c = Cast(%x)") != std::string::npos);       // f32 -> i64
  CHECK(out.find("%r = Reshape(%x, %s)") != std::string::npos);  // [2,3] -> [3,2]
  CHECK(out.find("Dropout(%x)") != std::string::npos);            // its mask is used
  CHECK(out.find("%t = Transpose(%x)") != std::string::npos);
  CHECK(out.find("%i = Identity(%x)") != std::string::npos);      // a graph output keeps its name
  CHECK(stat(ctx, "rewrites") == 0);
}

TEST_CASE("passes.eliminate_identities.transposes_compose") {
  gpass::pass_context ctx;
  std::string out = run(R"(graph {
  %x = arg() {index = 0} -> (f32[2,3,4])
  %a = Transpose(%x) {perm = [1, 2, 0]}
  %b = Transpose(%a) {perm = [1, 2, 0]}
  %y = Relu(%b)
  %r0:0 = return(%y)
})",
                        ctx);
  // b = x transposed by a's perm then b's: element i of the result is p[q[i]] = [2, 0, 1]
  CHECK(out.find("%b = Transpose(%x) {perm = [2, 0, 1]}") != std::string::npos);
  CHECK(out.find("%y = Relu(%b)") != std::string::npos);
}

TEST_CASE("passes.eliminate_identities.tf_identity_keeps_control_order") {
  gpass::pass_context ctx;
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[2])
  %init = tf::NoOp()
  %i = tf::Identity(%x, ^%init) {T = f32}
  %y = tf::Relu(%i) {T = f32}
  %r0:0 = return(%y)
})");
  gpass::eliminate_identities(g, ctx);
  std::string out = gpass::print_text(g);
  CHECK(out.find("Identity") == std::string::npos);
  CHECK(out.find("%y = tf::Relu(%x, ^%init) {T = f32}") != std::string::npos);
}

TEST_CASE("passes.eliminate_identities.functions_too") {
  gpass::pass_context ctx;
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[2])
  %p = arg() {index = 1} -> (bool[])
  %y = if(%p, %x) {else_branch = @f, then_branch = @f}
  %r0:0 = return(%y)
}
func @f {
  %a:1 = function_entry() -> (f32[2])
  %i = Identity(%a:0)
  %n = Neg(%i)
  %r:0 = return(%n)
})");
  gpass::eliminate_identities(g, ctx);
  CHECK(gpass::print_text(g).find("%n = Neg(%a)") != std::string::npos);
}

TEST_CASE("pass.rewrite.driver_errors_and_linear_chains") {
  // a pattern that erases a node still in use is an error naming the pattern and the node
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[2])
  %n = Neg(%x)
  %r0:0 = return(%n)
})");
  std::vector<gpass::rewrite_pattern<G>> bad{
      {.name = "bad", .roots = {{"", "Neg"}}, .when = {}, .rewrite = [](gpass::rewriter<G>& rw, G::node_id v) {
         rw.erase(v);
         return true;
       }}};
  CHECK_THROWS_WITH_AS(gpass::apply_patterns(g, bad),
                       "gpass: rewrite pattern 'bad' erased node 'n' (op Neg) whose outputs are still used", gpass::error);

  // patterns that undo each other stop at the cap
  std::vector<gpass::rewrite_pattern<G>> flip{
      {.name = "flip", .roots = {{"", "Neg"}}, .when = {}, .rewrite = [](gpass::rewriter<G>& rw, G::node_id v) {
         rw.graph()[v].op = "Abs";
         rw.changed(v);
         return true;
       }},
      {.name = "flop", .roots = {{"", "Abs"}}, .when = {}, .rewrite = [](gpass::rewriter<G>& rw, G::node_id v) {
         rw.graph()[v].op = "Neg";
         rw.changed(v);
         return true;
       }}};
  auto r = gpass::apply_patterns(g, flip, {.max_rewrites_per_node = 4});
  CHECK_FALSE(r.converged);
  CHECK(r.rewrites == 12);  // 4 per node, 3 nodes

  // a chain of n Identities goes in one run, in time linear in n
  auto chain = [](int n) {
    G c;
    auto prev = c.add_node({.name = "x", .op = "arg", .attrs = {{"index", std::int64_t{0}}}});
    for (int i = 0; i < n; ++i) {
      auto v = c.add_node({.name = "i" + std::to_string(i), .op = "Identity"});
      c.add_input(v, prev, 0);
      prev = v;
    }
    auto y = c.add_node({.name = "y", .op = "Neg"});
    c.add_input(y, prev, 0);
    auto ret = c.add_node({.name = "r", .op = "return"});
    c[ret].outputs.clear();
    c.add_input(ret, y, 0);
    return c;
  };
  for (int n : {1000, 100000}) {
    G c = chain(n);
    gpass::pass_context ctx;
    gpass::eliminate_identities(c, ctx);
    CHECK(c.num_nodes() == 3);
    CHECK(stat(ctx, "identity") == n);
  }
}

}  // namespace gpass_test_passes_eliminate_identities
