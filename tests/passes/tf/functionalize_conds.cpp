// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/analysis/verify.hpp>
#include <gpass/io/text.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/pipeline.hpp>
#include <gpass/passes/tf/detail/control_flow.hpp>
#include <gpass/passes/tf/functionalize_conds.hpp>
#include <gpass/passes/tf/functionalize_loops.hpp>

#include "control_flow_laws.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_tf_functionalize_conds {

namespace {

using G = gpass::graph<>;
namespace ex = gpass::exec;

G functionalize(std::string_view text) {
  G g = gpass::parse_text(text);
  gpass::pass_context ctx;
  gpass::functionalize_loops(g, ctx);
  gpass::functionalize_conds(g, ctx);
  return g;
}

/// The control-flow laws (control_flow_laws.hpp) for both passes.
void check_laws(const G& g) {
  gpass_test::tf::check_control_flow_laws(
      g,
      [](G& h, gpass::pass_context& ctx) {
        gpass::functionalize_loops(h, ctx);
        gpass::functionalize_conds(h, ctx);
      },
      "functionalize-conds.conds");
}

std::vector<ex::value> run(const G& g, std::vector<ex::value> in) {
  ex::eigen_cpu cpu;
  ex::plan p(g, cpu);
  return p.run(std::move(in));
}
std::int32_t i32(const ex::value& v) { return v.tensor().data<std::int32_t>()[0]; }
float f32(const ex::value& v) { return v.tensor().data<float>()[0]; }
ex::value i32v(std::int32_t x) { return gpass::tensor::scalar<std::int32_t>(x); }
ex::value f32v(float x) { return gpass::tensor::scalar<float>(x); }
ex::value boolv(bool x) { return gpass::tensor::scalar<bool>(x); }

std::string error_of(std::string_view text) {
  try {
    functionalize(text);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

// tf.cond(x < y, lambda: x * 2, lambda: y - x) and a second output y on both sides, as
// TensorFlow 1 builds it: a pivot Switch(pred, pred) with Identity nodes the constants hang
// off, and value Switches on Identity(pred).
constexpr std::string_view cond = R"(graph {
  %x = arg() {index = 0} -> (i32[])
  %y = arg() {index = 1} -> (i32[])
  %cond/Less = Less(%x, %y) -> (bool[])
  %cond/Switch:2 = Switch(%cond/Less, %cond/Less) -> (bool[], bool[])
  %cond/switch_t = Identity(%cond/Switch:1) -> (bool[])
  %cond/switch_f = Identity(%cond/Switch:0) -> (bool[])
  %cond/pred_id = Identity(%cond/Less) -> (bool[])
  %cond/Switch_1:2 = Switch(%x, %cond/pred_id) -> (i32[], i32[])
  %cond/Switch_2:2 = Switch(%y, %cond/pred_id) -> (i32[], i32[])
  %cond/two = Constant(^%cond/switch_t) {value = tensor<i32[]> [2]} -> (i32[])
  %cond/mul = Mul(%cond/Switch_1:1, %cond/two) -> (i32[])
  %cond/sub = Sub(%cond/Switch_2:0, %cond/Switch_1:0) -> (i32[])
  %cond/Merge:2 = Merge(%cond/sub, %cond/mul) -> (i32[], i32[])
  %cond/Merge_1:2 = Merge(%cond/Switch_2:0, %cond/Switch_2:1) -> (i32[], i32[])
  %r:0 = return(%cond/Merge:0, %cond/Merge_1:0)
}
)";

constexpr std::string_view cond_in_loop = R"(# for i in range(n): a = a + 1 if i < 3 else a + 10
graph {
  %n = arg() {index = 0} -> (i32[])
  %zero = Constant() {value = tensor<i32[]> [0]} -> (i32[])
  %w/Enter_i = Enter(%zero) {frame_name = "w/while_context"} -> (i32[])
  %w/Enter_a = Enter(%zero) {frame_name = "w/while_context"} -> (i32[])
  %w/Enter_n = Enter(%n) {frame_name = "w/while_context", is_constant = true} -> (i32[])
  %w/Merge_i:2 = Merge(%w/Enter_i, %w/Next_i) -> (i32[], i32[])
  %w/Merge_a:2 = Merge(%w/Enter_a, %w/Next_a) -> (i32[], i32[])
  %w/Less = Less(%w/Merge_i:0, %w/Enter_n) -> (bool[])
  %w/LoopCond = LoopCond(%w/Less) -> (bool[])
  %w/Switch_i:2 = Switch(%w/Merge_i:0, %w/LoopCond) -> (i32[], i32[])
  %w/Switch_a:2 = Switch(%w/Merge_a:0, %w/LoopCond) -> (i32[], i32[])
  %w/Identity_i = Identity(%w/Switch_i:1) -> (i32[])
  %w/Identity_a = Identity(%w/Switch_a:1) -> (i32[])
  %w/three = Constant(^%w/Identity_i) {value = tensor<i32[]> [3]} -> (i32[])
  %w/small = Less(%w/Identity_i, %w/three) -> (bool[])
  %w/cond/Switch:2 = Switch(%w/small, %w/small) -> (bool[], bool[])
  %w/cond/switch_t = Identity(%w/cond/Switch:1) -> (bool[])
  %w/cond/switch_f = Identity(%w/cond/Switch:0) -> (bool[])
  %w/cond/pred_id = Identity(%w/small) -> (bool[])
  %w/cond/Switch_1:2 = Switch(%w/Identity_a, %w/cond/pred_id) -> (i32[], i32[])
  %w/cond/one = Constant(^%w/cond/switch_t) {value = tensor<i32[]> [1]} -> (i32[])
  %w/cond/ten = Constant(^%w/cond/switch_f) {value = tensor<i32[]> [10]} -> (i32[])
  %w/cond/add_t = Add(%w/cond/Switch_1:1, %w/cond/one) -> (i32[])
  %w/cond/add_f = Add(%w/cond/Switch_1:0, %w/cond/ten) -> (i32[])
  %w/cond/Merge:2 = Merge(%w/cond/add_f, %w/cond/add_t) -> (i32[], i32[])
  %w/one = Constant(^%w/Identity_i) {value = tensor<i32[]> [1]} -> (i32[])
  %w/add_i = Add(%w/Identity_i, %w/one) -> (i32[])
  %w/Next_i = NextIteration(%w/add_i) -> (i32[])
  %w/Next_a = NextIteration(%w/cond/Merge:0) -> (i32[])
  %w/Exit_i = Exit(%w/Switch_i:0) -> (i32[])
  %w/Exit_a = Exit(%w/Switch_a:0) -> (i32[])
  %r:0 = return(%w/Exit_a)
}
)";

constexpr std::string_view nested = R"(# (x < y) ? ((x < 0) ? -x : x) : y
graph {
  %x = arg() {index = 0} -> (f32[])
  %y = arg() {index = 1} -> (f32[])
  %c/Less = Less(%x, %y) -> (bool[])
  %c/pred_id = Identity(%c/Less) -> (bool[])
  %c/Switch_x:2 = Switch(%x, %c/pred_id) -> (f32[], f32[])
  %c/Switch_y:2 = Switch(%y, %c/pred_id) -> (f32[], f32[])
  %c/xt = Identity(%c/Switch_x:1) -> (f32[])
  %c/zero = Constant(^%c/xt) {value = tensor<f32[]> [0.0]} -> (f32[])
  %c/negative = Less(%c/xt, %c/zero) -> (bool[])
  %c/in/Switch:2 = Switch(%c/xt, %c/negative) -> (f32[], f32[])
  %c/in/neg = Neg(%c/in/Switch:1) -> (f32[])
  %c/in/Merge:2 = Merge(%c/in/neg, %c/in/Switch:0) -> (f32[], i32[])
  %c/Merge:2 = Merge(%c/in/Merge:0, %c/Switch_y:0) -> (f32[], i32[])
  %r:0 = return(%c/Merge:0)
}
)";

constexpr std::string_view shared_predicate = R"(# two tf.conds on one flag, the second reading the first: x -> (p ? 2x : x) -> (p ? v*v : -v)
graph {
  %x = arg() {index = 0} -> (f32[])
  %p = arg() {index = 1} -> (bool[])
  %a/Switch:2 = Switch(%x, %p) -> (f32[], f32[])
  %a/double = Add(%a/Switch:1, %a/Switch:1) -> (f32[])
  %a/Merge:2 = Merge(%a/Switch:0, %a/double) -> (f32[], i32[])
  %b/Switch:2 = Switch(%a/Merge:0, %p) -> (f32[], f32[])
  %b/square = Mul(%b/Switch:1, %b/Switch:1) -> (f32[])
  %b/neg = Neg(%b/Switch:0) -> (f32[])
  %b/Merge:2 = Merge(%b/neg, %b/square) -> (f32[], i32[])
  %r:0 = return(%b/Merge:0)
}
)";

}  // namespace

static_assert(gpass::pass_requires_t<gpass::functionalize_conds_fn>::contains<gpass::fact_tags::loops_functionalized>);

TEST_CASE("passes.tf.functionalize_conds.cond") {
  G g = functionalize(cond);
  CHECK(gpass::print_text(g) == R"(graph {
  %x = arg() {index = 0} -> (i32[])
  %y = arg() {index = 1} -> (i32[])
  %cond/Less = Less(%x, %y) -> (bool[])
  %cond/pred_id = Identity(%cond/Less) -> (bool[])
  %r:0 = return(%cond:0, %cond:1)
  %cond:2 = if(%cond/Less, %cond/Less, %x, %y) {else_branch = @cond_else, then_branch = @cond_then} -> (i32[], i32[])
}

func @cond_else {
  %args:3 = function_entry() -> (bool[], i32[], i32[])
  %cond/switch_f = Identity(%args:0) -> (bool[])
  %cond/sub = Sub(%args:2, %args:1) -> (i32[])
  %return:0 = return(%cond/sub, %args:2)
}

func @cond_then {
  %args:3 = function_entry() -> (bool[], i32[], i32[])
  %cond/switch_t = Identity(%args:0) -> (bool[])
  %cond/two = Constant() {value = tensor<i32[]> [2]} -> (i32[])
  %cond/mul = Mul(%args:1, %cond/two) -> (i32[])
  %return:0 = return(%cond/mul, %args:2)
}
)");
  check_laws(g);
  auto a = run(g, {i32v(1), i32v(3)});
  CHECK(i32(a[0]) == 2);
  CHECK(i32(a[1]) == 3);
  auto b = run(g, {i32v(5), i32v(3)});
  CHECK(i32(b[0]) == -2);
  CHECK(i32(b[1]) == 3);
}

TEST_CASE("passes.tf.functionalize_conds.cond_in_loop") {
  // the conditional is in the loop body: functionalize-loops moves it into the body
  // function, where functionalize-conds finds it
  G g = functionalize(cond_in_loop);
  CHECK(gpass::print_text(g) == R"(graph {
  %n = arg() {index = 0} -> (i32[])
  %zero = Constant() {value = tensor<i32[]> [0]} -> (i32[])
  %r:0 = return(%w:1)
  %w:3 = while(%zero, %zero, %n) {body = @w_body, cond = @w_cond} -> (i32[], i32[], i32[])
}

func @w/cond_else {
  %args_1:2 = function_entry() -> (bool[], i32[])
  %w/cond/switch_f = Identity(%args_1:0) -> (bool[])
  %w/cond/ten = Constant() {value = tensor<i32[]> [10]} -> (i32[])
  %w/cond/add_f = Add(%args_1:1, %w/cond/ten) -> (i32[])
  %return_1:0 = return(%w/cond/add_f)
}

func @w/cond_then {
  %args_1:2 = function_entry() -> (bool[], i32[])
  %w/cond/switch_t = Identity(%args_1:0) -> (bool[])
  %w/cond/one = Constant() {value = tensor<i32[]> [1]} -> (i32[])
  %w/cond/add_t = Add(%args_1:1, %w/cond/one) -> (i32[])
  %return_1:0 = return(%w/cond/add_t)
}

func @w_body {
  %args:3 = function_entry() -> (i32[], i32[], i32[])
  %w/Identity_i = Identity(%args:0) -> (i32[])
  %w/Identity_a = Identity(%args:1) -> (i32[])
  %w/three = Constant() {value = tensor<i32[]> [3]} -> (i32[])
  %w/small = Less(%w/Identity_i, %w/three) -> (bool[])
  %w/cond/pred_id = Identity(%w/small) -> (bool[])
  %w/one = Constant() {value = tensor<i32[]> [1]} -> (i32[])
  %w/add_i = Add(%w/Identity_i, %w/one) -> (i32[])
  %return:0 = return(%w/add_i, %w/cond, %args:2)
  %w/cond = if(%w/small, %w/small, %w/Identity_a) {else_branch = @w/cond_else, then_branch = @w/cond_then} -> (i32[])
}

func @w_cond {
  %args:3 = function_entry() -> (i32[], i32[], i32[])
  %w/Less = Less(%args:0, %args:2) -> (bool[])
  %return:0 = return(%w/Less)
}
)");
  check_laws(g);
  CHECK(i32(run(g, {i32v(5)})[0]) == 1 + 1 + 1 + 10 + 10);
  CHECK(i32(run(g, {i32v(2)})[0]) == 2);
  CHECK(i32(run(g, {i32v(0)})[0]) == 0);
}

TEST_CASE("passes.tf.functionalize_conds.nested") {
  G g = functionalize(nested);
  CHECK(gpass::print_text(g) == R"(graph {
  %x = arg() {index = 0} -> (f32[])
  %y = arg() {index = 1} -> (f32[])
  %c/Less = Less(%x, %y) -> (bool[])
  %c/pred_id = Identity(%c/Less) -> (bool[])
  %r:0 = return(%c)
  %c = if(%c/pred_id, %x, %y) {else_branch = @c_else, then_branch = @c_then} -> (f32[])
}

func @c/in_else {
  %args = function_entry() -> (f32[])
  %return:0 = return(%args)
}

func @c/in_then {
  %args = function_entry() -> (f32[])
  %c/in/neg = Neg(%args) -> (f32[])
  %return:0 = return(%c/in/neg)
}

func @c_else {
  %args:2 = function_entry() -> (f32[], f32[])
  %return:0 = return(%args:1)
}

func @c_then {
  %args:2 = function_entry() -> (f32[], f32[])
  %c/xt = Identity(%args:0) -> (f32[])
  %c/zero = Constant() {value = tensor<f32[]> [0.0]} -> (f32[])
  %c/negative = Less(%c/xt, %c/zero) -> (bool[])
  %c/in = if(%c/negative, %c/xt) {else_branch = @c/in_else, then_branch = @c/in_then} -> (f32[])
  %return:0 = return(%c/in)
}
)");
  check_laws(g);
  CHECK(f32(run(g, {f32v(-4), f32v(1)})[0]) == 4.0f);
  CHECK(f32(run(g, {f32v(3), f32v(5)})[0]) == 3.0f);
  CHECK(f32(run(g, {f32v(7), f32v(2)})[0]) == 2.0f);
}

TEST_CASE("passes.tf.functionalize_conds.shared_predicate") {
  // one if per tf.cond even though they share their predicate (one if would read its own
  // output: a cycle)
  G g = functionalize(shared_predicate);
  CHECK(gpass::print_text(g) == R"(graph {
  %x = arg() {index = 0} -> (f32[])
  %p = arg() {index = 1} -> (bool[])
  %r:0 = return(%b)
  %a = if(%p, %x) {else_branch = @a_else, then_branch = @a_then} -> (f32[])
  %b = if(%p, %a) {else_branch = @b_else, then_branch = @b_then} -> (f32[])
}

func @a_else {
  %args = function_entry() -> (f32[])
  %return:0 = return(%args)
}

func @a_then {
  %args = function_entry() -> (f32[])
  %a/double = Add(%args, %args) -> (f32[])
  %return:0 = return(%a/double)
}

func @b_else {
  %args = function_entry() -> (f32[])
  %b/neg = Neg(%args) -> (f32[])
  %return:0 = return(%b/neg)
}

func @b_then {
  %args = function_entry() -> (f32[])
  %b/square = Mul(%args, %args) -> (f32[])
  %return:0 = return(%b/square)
}
)");
  check_laws(g);
  CHECK(f32(run(g, {f32v(3), boolv(true)})[0]) == 36.0f);
  CHECK(f32(run(g, {f32v(3), boolv(false)})[0]) == -3.0f);
}

TEST_CASE("passes.tf.functionalize_conds.errors") {
  CHECK(error_of(R"(graph {
  %x = arg() {index = 0} -> (f32[])
  %p = arg() {index = 1} -> (bool[])
  %s:2 = Switch(%x, %p) -> (f32[], f32[])
  %t = Neg(%s:1) -> (f32[])
  %m:2 = Merge(%s:1, %t) -> (f32[], i32[])
  %r:0 = return(%m:0)
}
)") ==
        "gpass: pass 'functionalize-conds': node 'm' (op Merge): Merge does not join the two branches of one conditional");
  CHECK(error_of(R"(graph {
  %x = arg() {index = 0} -> (f32[])
  %p = arg() {index = 1} -> (bool[])
  %s:2 = Switch(%x, %p) -> (f32[], f32[])
  %t = Add(%s:0, %s:1) -> (f32[])
  %r:0 = return(%t)
}
)") ==
        "gpass: pass 'functionalize-conds': node 't' (op Add): reads values from both branches of a conditional (without a Merge)");
  CHECK(error_of(R"(graph {
  %x = arg() {index = 0} -> (f32[])
  %p = arg() {index = 1} -> (bool[])
  %s:2 = Switch(%x, %p) -> (f32[], f32[])
  %t = Neg(%s:1) -> (f32[])
  %f = Neg(%s:0) -> (f32[])
  %m:2 = Merge(%f, %t) -> (f32[], i32[])
  %r:0 = return(%m:0, %t)
}
)") ==
        "gpass: pass 'functionalize-conds': node 'r' (op return): a value of a conditional branch is used outside the "
        "conditional without a Merge");
}

TEST_CASE("passes.tf.functionalize_conds.pipeline") {
  // composed at compile time: conds requires what loops provides
  G g = gpass::parse_text(cond_in_loop);
  gpass::pass_context ctx;
  (gpass::functionalize_loops | gpass::functionalize_conds)(g, ctx);
  CHECK(ctx.statistics().at("functionalize-loops.loops") == 1);
  CHECK(ctx.statistics().at("functionalize-conds.conds") == 1);
}

}  // namespace gpass_test_passes_tf_functionalize_conds
