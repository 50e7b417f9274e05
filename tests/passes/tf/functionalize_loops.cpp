// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/analysis/verify.hpp>
#include <gpass/io/text.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/passes/tf/detail/control_flow.hpp>
#include <gpass/passes/tf/functionalize_loops.hpp>

#include "control_flow_laws.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_tf_functionalize_loops {

namespace {

using G = gpass::graph<>;

G functionalize(std::string_view text) {
  G g = gpass::parse_text(text);
  gpass::pass_context ctx;
  gpass::functionalize_loops(g, ctx);
  return g;
}

/// The control-flow laws (control_flow_laws.hpp) for this pass.
void check_laws(const G& g) {
  gpass_test::tf::check_control_flow_laws(
      g, [](G& h, gpass::pass_context& ctx) { gpass::functionalize_loops(h, ctx); }, "functionalize-loops.loops");
}

/// Runs `g` on the Eigen CPU executor with i32 scalar inputs; returns the i32 scalar results.
std::vector<std::int32_t> run_i32(const G& g, const std::vector<std::int32_t>& inputs) {
  gpass::exec::eigen_cpu cpu;
  gpass::exec::plan p(g, cpu);
  std::vector<gpass::exec::value> in;
  for (auto x : inputs) in.emplace_back(gpass::tensor::scalar<std::int32_t>(x));
  std::vector<std::int32_t> r;
  for (const auto& v : p.run(std::move(in))) r.push_back(v.tensor().data<std::int32_t>()[0]);
  return r;
}

std::string error_of(std::string_view text) {
  G g = gpass::parse_text(text);
  gpass::pass_context ctx;
  try {
    gpass::functionalize_loops(g, ctx);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

std::string read_ir(const char* name) {
  return gpass::print_text(gpass::read_text_file(std::filesystem::path(GPASS_TEST_DATA_DIR) / "ir" / name));
}

// i counts from its input up to n (an invariant: is_constant Enter); acc sums the i seen.
// The initial value of acc is a constant with no edge into it (its Enter has no frame of
// its own); the constant 1 hangs off the body's pivot by a control edge.
constexpr std::string_view accumulate = R"(graph {
  %i = arg() {index = 0} -> (i32[])
  %n = arg() {index = 1} -> (i32[])
  %zero = Constant() {value = tensor<i32[]> [0]} -> (i32[])
  %w/Enter = Enter(%i) {frame_name = "w/while_context", is_constant = false, parallel_iterations = 10} -> (i32[])
  %w/Enter_1 = Enter(%zero) {frame_name = "w/while_context", is_constant = false, parallel_iterations = 10} -> (i32[])
  %w/Enter_2 = Enter(%n) {frame_name = "w/while_context", is_constant = true, parallel_iterations = 10} -> (i32[])
  %w/Merge:2 = Merge(%w/Enter, %w/NextIteration) -> (i32[], i32[])
  %w/Merge_1:2 = Merge(%w/Enter_1, %w/NextIteration_1) -> (i32[], i32[])
  %w/Less = Less(%w/Merge:0, %w/Enter_2) -> (bool[])
  %w/LoopCond = LoopCond(%w/Less) -> (bool[])
  %w/Switch:2 = Switch(%w/Merge:0, %w/LoopCond) -> (i32[], i32[])
  %w/Switch_1:2 = Switch(%w/Merge_1:0, %w/LoopCond) -> (i32[], i32[])
  %w/Identity = Identity(%w/Switch:1) -> (i32[])
  %w/Identity_1 = Identity(%w/Switch_1:1) -> (i32[])
  %w/one = Constant(^%w/Identity) {value = tensor<i32[]> [1]} -> (i32[])
  %w/add = Add(%w/Identity, %w/one) -> (i32[])
  %w/acc = Add(%w/Identity_1, %w/Identity) -> (i32[])
  %w/NextIteration = NextIteration(%w/add) -> (i32[])
  %w/NextIteration_1 = NextIteration(%w/acc) -> (i32[])
  %w/Exit = Exit(%w/Switch:0) -> (i32[])
  %w/Exit_1 = Exit(%w/Switch_1:0) -> (i32[])
  %r:0 = return(%w/Exit, %w/Exit_1)
}
)";

constexpr std::string_view nested = R"(# for i in range(n): for j in range(i): total += 1
graph {
  %n = arg() {index = 0} -> (i32[])
  %zero = Constant() {value = tensor<i32[]> [0]} -> (i32[])
  %o/Enter_i = Enter(%zero) {frame_name = "o/while_context"} -> (i32[])
  %o/Enter_t = Enter(%zero) {frame_name = "o/while_context"} -> (i32[])
  %o/Enter_n = Enter(%n) {frame_name = "o/while_context", is_constant = true} -> (i32[])
  %o/Merge_i:2 = Merge(%o/Enter_i, %o/Next_i) -> (i32[], i32[])
  %o/Merge_t:2 = Merge(%o/Enter_t, %o/Next_t) -> (i32[], i32[])
  %o/Less = Less(%o/Merge_i:0, %o/Enter_n) -> (bool[])
  %o/LoopCond = LoopCond(%o/Less) -> (bool[])
  %o/Switch_i:2 = Switch(%o/Merge_i:0, %o/LoopCond) -> (i32[], i32[])
  %o/Switch_t:2 = Switch(%o/Merge_t:0, %o/LoopCond) -> (i32[], i32[])
  %o/Identity_i = Identity(%o/Switch_i:1) -> (i32[])
  %o/Identity_t = Identity(%o/Switch_t:1) -> (i32[])
  %o/in/zero = Constant(^%o/Identity_i) {value = tensor<i32[]> [0]} -> (i32[])
  %o/in/Enter_j = Enter(%o/in/zero) {frame_name = "o/in/while_context"} -> (i32[])
  %o/in/Enter_t = Enter(%o/Identity_t) {frame_name = "o/in/while_context"} -> (i32[])
  %o/in/Enter_b = Enter(%o/Identity_i) {frame_name = "o/in/while_context", is_constant = true} -> (i32[])
  %o/in/Merge_j:2 = Merge(%o/in/Enter_j, %o/in/Next_j) -> (i32[], i32[])
  %o/in/Merge_t:2 = Merge(%o/in/Enter_t, %o/in/Next_t) -> (i32[], i32[])
  %o/in/Less = Less(%o/in/Merge_j:0, %o/in/Enter_b) -> (bool[])
  %o/in/LoopCond = LoopCond(%o/in/Less) -> (bool[])
  %o/in/Switch_j:2 = Switch(%o/in/Merge_j:0, %o/in/LoopCond) -> (i32[], i32[])
  %o/in/Switch_t:2 = Switch(%o/in/Merge_t:0, %o/in/LoopCond) -> (i32[], i32[])
  %o/in/Identity_j = Identity(%o/in/Switch_j:1) -> (i32[])
  %o/in/Identity_t = Identity(%o/in/Switch_t:1) -> (i32[])
  %o/in/one = Constant(^%o/in/Identity_j) {value = tensor<i32[]> [1]} -> (i32[])
  %o/in/add_j = Add(%o/in/Identity_j, %o/in/one) -> (i32[])
  %o/in/add_t = Add(%o/in/Identity_t, %o/in/one) -> (i32[])
  %o/in/Next_j = NextIteration(%o/in/add_j) -> (i32[])
  %o/in/Next_t = NextIteration(%o/in/add_t) -> (i32[])
  %o/in/Exit_j = Exit(%o/in/Switch_j:0) -> (i32[])
  %o/in/Exit_t = Exit(%o/in/Switch_t:0) -> (i32[])
  %o/one = Constant(^%o/Identity_i) {value = tensor<i32[]> [1]} -> (i32[])
  %o/add_i = Add(%o/Identity_i, %o/one) -> (i32[])
  %o/Next_i = NextIteration(%o/add_i) -> (i32[])
  %o/Next_t = NextIteration(%o/in/Exit_t) -> (i32[])
  %o/Exit_i = Exit(%o/Switch_i:0) -> (i32[])
  %o/Exit_t = Exit(%o/Switch_t:0) -> (i32[])
  %r:0 = return(%o/Exit_i, %o/Exit_t)
}
)";

// A control edge into the Enter and one out of the Exit; a control edge inside the body.
constexpr std::string_view control_deps = R"(graph {
  %x = arg() {index = 0} -> (i32[])
  %before = Identity(%x) -> (i32[])
  %w/Enter = Enter(%x, ^%before) {frame_name = "w/while_context"} -> (i32[])
  %w/Merge:2 = Merge(%w/Enter, %w/NextIteration) -> (i32[], i32[])
  %w/ten = Constant(^%w/Merge) {value = tensor<i32[]> [10]} -> (i32[])
  %w/Less = Less(%w/Merge:0, %w/ten) -> (bool[])
  %w/LoopCond = LoopCond(%w/Less) -> (bool[])
  %w/Switch:2 = Switch(%w/Merge:0, %w/LoopCond) -> (i32[], i32[])
  %w/Identity = Identity(%w/Switch:1) -> (i32[])
  %w/two = Constant(^%w/Identity) {value = tensor<i32[]> [2]} -> (i32[])
  %w/mul = Mul(%w/Identity, %w/two) -> (i32[])
  %w/dep = Identity(%w/mul) -> (i32[])
  %w/next = Identity(%w/mul, ^%w/dep) -> (i32[])
  %w/NextIteration = NextIteration(%w/next) -> (i32[])
  %w/Exit = Exit(%w/Switch:0) -> (i32[])
  %after = Identity(%x, ^%w/Exit) -> (i32[])
  %r:0 = return(%w/Exit, %after)
}
)";

constexpr std::string_view partial_vars = R"(# k is read only by the condition (its Merge has no Switch); m's final value is unused
# (its Switch has no Exit).
graph {
  %n = arg() {index = 0} -> (i32[])
  %zero = Constant() {value = tensor<i32[]> [0]} -> (i32[])
  %one = Constant() {value = tensor<i32[]> [1]} -> (i32[])
  %w/Enter_i = Enter(%zero) {frame_name = "w/while_context"} -> (i32[])
  %w/Enter_k = Enter(%zero) {frame_name = "w/while_context"} -> (i32[])
  %w/Enter_m = Enter(%one) {frame_name = "w/while_context"} -> (i32[])
  %w/Enter_n = Enter(%n) {frame_name = "w/while_context", is_constant = true} -> (i32[])
  %w/Merge_i:2 = Merge(%w/Enter_i, %w/Next_i) -> (i32[], i32[])
  %w/Merge_k:2 = Merge(%w/Enter_k, %w/Next_k) -> (i32[], i32[])
  %w/Merge_m:2 = Merge(%w/Enter_m, %w/Next_m) -> (i32[], i32[])
  %w/Less = Less(%w/Merge_k:0, %w/Enter_n) -> (bool[])
  %w/LoopCond = LoopCond(%w/Less) -> (bool[])
  %w/Switch_i:2 = Switch(%w/Merge_i:0, %w/LoopCond) -> (i32[], i32[])
  %w/Switch_m:2 = Switch(%w/Merge_m:0, %w/LoopCond) -> (i32[], i32[])
  %w/Identity_i = Identity(%w/Switch_i:1) -> (i32[])
  %w/one = Constant(^%w/Identity_i) {value = tensor<i32[]> [1]} -> (i32[])
  %w/add_i = Add(%w/Identity_i, %w/one) -> (i32[])
  %w/mul_m = Mul(%w/Switch_m:1, %w/add_i) -> (i32[])
  %w/Next_i = NextIteration(%w/add_i) -> (i32[])
  %w/Next_k = NextIteration(%w/add_i) -> (i32[])
  %w/Next_m = NextIteration(%w/mul_m) -> (i32[])
  %w/Exit_i = Exit(%w/Switch_i:0) -> (i32[])
  %r:0 = return(%w/Exit_i)
}
)";

constexpr std::string_view sequential = R"(# two loops in a row: the second's Enter reads the first's Exit; both read the invariant n
graph {
  %x = arg() {index = 0} -> (i32[])
  %n = arg() {index = 1} -> (i32[])
  %a/Enter = Enter(%x) {frame_name = "a/while_context"} -> (i32[])
  %a/Enter_n = Enter(%n) {frame_name = "a/while_context", is_constant = true} -> (i32[])
  %a/Merge:2 = Merge(%a/Enter, %a/NextIteration) -> (i32[], i32[])
  %a/Less = Less(%a/Merge:0, %a/Enter_n) -> (bool[])
  %a/LoopCond = LoopCond(%a/Less) -> (bool[])
  %a/Switch:2 = Switch(%a/Merge:0, %a/LoopCond) -> (i32[], i32[])
  %a/add = Add(%a/Switch:1, %a/Switch:1) -> (i32[])
  %a/NextIteration = NextIteration(%a/add) -> (i32[])
  %a/Exit = Exit(%a/Switch:0) -> (i32[])
  %b/Enter = Enter(%a/Exit) {frame_name = "b/while_context"} -> (i32[])
  %b/Enter_n = Enter(%n) {frame_name = "b/while_context", is_constant = true} -> (i32[])
  %b/Merge:2 = Merge(%b/Enter, %b/NextIteration) -> (i32[], i32[])
  %b/Greater = Greater(%b/Merge:0, %b/Enter_n) -> (bool[])
  %b/LoopCond = LoopCond(%b/Greater) -> (bool[])
  %b/Switch:2 = Switch(%b/Merge:0, %b/LoopCond) -> (i32[], i32[])
  %b/Identity = Identity(%b/Switch:1) -> (i32[])
  %b/three = Constant(^%b/Identity) {value = tensor<i32[]> [3]} -> (i32[])
  %b/sub = Sub(%b/Identity, %b/three) -> (i32[])
  %b/NextIteration = NextIteration(%b/sub) -> (i32[])
  %b/Exit = Exit(%b/Switch:0) -> (i32[])
  %r:0 = return(%b/Exit)
}
)";

}  // namespace

TEST_CASE("passes.tf.functionalize_loops.one_variable") {
  // seed 000: while(lambda i: i < 10, lambda i: i + 1, [i])
  G g = gpass::read_text_file(std::filesystem::path(GPASS_TEST_DATA_DIR) / "ir" / "seed000_tf_while_one_var.gir");
  gpass::pass_context ctx;
  gpass::functionalize_loops(g, ctx);
  CHECK(gpass::print_text(g) == R"(graph {producer = 26, versions = "tf-1.6"} {
  %i = Const() {dtype = i32, value = tensor<i32[]> [0]} -> (i32[])
  %retval = retval(%while) {index = 0}
  %while = while(%i) {body = @while_body, cond = @while_cond, parallel_iterations = 10} -> (i32[])
}

func @while_body {
  %args = function_entry() -> (i32[])
  %while/Identity = Identity(%args) {T = i32} -> (i32[])
  %while/add/y = Const() {dtype = i32, value = tensor<i32[]> [1]} -> (i32[])
  %while/add = Add(%while/Identity, %while/add/y) {T = i32} -> (i32[])
  %return:0 = return(%while/add)
}

func @while_cond {
  %args = function_entry() -> (i32[])
  %while/Less/y = Const() {dtype = i32, value = tensor<i32[]> [10]} -> (i32[])
  %while/Less = Less(%args, %while/Less/y) {T = i32} -> (bool[])
  %return:0 = return(%while/Less)
}
)");
  CHECK(ctx.statistics().at("functionalize-loops.loops") == 1);
}

TEST_CASE("passes.tf.functionalize_loops.two_variables") {
  // seed 000: while(lambda i, j: i < j, lambda i, j: (i + 1, j), [i, j]); the constant 1 is
  // an is_constant Enter: a third carried value the body passes through.
  G g = gpass::parse_text(read_ir("seed000_tf_while_two_vars.gir"));
  gpass::pass_context ctx;
  gpass::functionalize_loops(g, ctx);
  CHECK(gpass::print_text(g) == R"(graph {
  %i = Placeholder() {dtype = i32, shape = shape[]}
  %j = Placeholder() {dtype = i32, shape = shape[]}
  %one = Const() {dtype = i32, value = tensor<i32[]> [1]}
  %r:0 = return(%while:0, %while:1)
  %while:3 = while(%i, %j, %one) {body = @while_body, cond = @while_cond}
}

func @while_body {
  %args:3 = function_entry()
  %while/Identity = Identity(%args:0)
  %while/Identity_1 = Identity(%args:1)
  %while/add = Add(%while/Identity, %args:2)
  %return:0 = return(%while/add, %while/Identity_1, %args:2)
}

func @while_cond {
  %args:3 = function_entry()
  %while/Less = Less(%args:0, %args:1)
  %return:0 = return(%while/Less)
}
)");
  check_laws(g);
}

TEST_CASE("passes.tf.functionalize_loops.invariant") {
  G g = functionalize(accumulate);
  CHECK(gpass::print_text(g) == R"(graph {
  %i = arg() {index = 0} -> (i32[])
  %n = arg() {index = 1} -> (i32[])
  %zero = Constant() {value = tensor<i32[]> [0]} -> (i32[])
  %r:0 = return(%w:0, %w:1)
  %w:3 = while(%i, %zero, %n) {body = @w_body, cond = @w_cond, parallel_iterations = 10} -> (i32[], i32[], i32[])
}

func @w_body {
  %args:3 = function_entry() -> (i32[], i32[], i32[])
  %w/Identity = Identity(%args:0) -> (i32[])
  %w/Identity_1 = Identity(%args:1) -> (i32[])
  %w/one = Constant() {value = tensor<i32[]> [1]} -> (i32[])
  %w/add = Add(%w/Identity, %w/one) -> (i32[])
  %w/acc = Add(%w/Identity_1, %w/Identity) -> (i32[])
  %return:0 = return(%w/add, %w/acc, %args:2)
}

func @w_cond {
  %args:3 = function_entry() -> (i32[], i32[], i32[])
  %w/Less = Less(%args:0, %args:2) -> (bool[])
  %return:0 = return(%w/Less)
}
)");
  check_laws(g);
  // i from 2 to 5: acc = 2 + 3 + 4; from 7 (already >= 5): no iteration
  CHECK(run_i32(g, {2, 5}) == std::vector<std::int32_t>{5, 9});
  CHECK(run_i32(g, {7, 5}) == std::vector<std::int32_t>{7, 0});
  CHECK(run_i32(g, {-3, 3}) == std::vector<std::int32_t>{3, -3 - 2 - 1 + 0 + 1 + 2});
}

TEST_CASE("passes.tf.functionalize_loops.nested") {
  // The inner bound is the outer variable: the inner frame becomes a while node in the
  // outer body, reading the outer body's values.
  G g = functionalize(nested);
  CHECK(gpass::print_text(g) == R"(graph {
  %n = arg() {index = 0} -> (i32[])
  %zero = Constant() {value = tensor<i32[]> [0]} -> (i32[])
  %r:0 = return(%o:0, %o:1)
  %o:3 = while(%zero, %zero, %n) {body = @o_body, cond = @o_cond} -> (i32[], i32[], i32[])
}

func @o/in_body {
  %args:3 = function_entry() -> (i32[], i32[], i32[])
  %o/in/Identity_j = Identity(%args:0) -> (i32[])
  %o/in/Identity_t = Identity(%args:1) -> (i32[])
  %o/in/one = Constant() {value = tensor<i32[]> [1]} -> (i32[])
  %o/in/add_j = Add(%o/in/Identity_j, %o/in/one) -> (i32[])
  %o/in/add_t = Add(%o/in/Identity_t, %o/in/one) -> (i32[])
  %return:0 = return(%o/in/add_j, %o/in/add_t, %args:2)
}

func @o/in_cond {
  %args:3 = function_entry() -> (i32[], i32[], i32[])
  %o/in/Less = Less(%args:0, %args:2) -> (bool[])
  %return:0 = return(%o/in/Less)
}

func @o_body {
  %args:3 = function_entry() -> (i32[], i32[], i32[])
  %o/Identity_i = Identity(%args:0) -> (i32[])
  %o/Identity_t = Identity(%args:1) -> (i32[])
  %o/in/zero = Constant() {value = tensor<i32[]> [0]} -> (i32[])
  %o/one = Constant() {value = tensor<i32[]> [1]} -> (i32[])
  %o/add_i = Add(%o/Identity_i, %o/one) -> (i32[])
  %o/in:3 = while(%o/in/zero, %o/Identity_t, %o/Identity_i) {body = @o/in_body, cond = @o/in_cond} -> (i32[], i32[], i32[])
  %return:0 = return(%o/add_i, %o/in:1, %args:2)
}

func @o_cond {
  %args:3 = function_entry() -> (i32[], i32[], i32[])
  %o/Less = Less(%args:0, %args:2) -> (bool[])
  %return:0 = return(%o/Less)
}
)");
  check_laws(g);
  // total = 0 + 1 + ... + (n - 1)
  CHECK(run_i32(g, {4}) == std::vector<std::int32_t>{4, 6});
  CHECK(run_i32(g, {7}) == std::vector<std::int32_t>{7, 21});
  CHECK(run_i32(g, {0}) == std::vector<std::int32_t>{0, 0});
}

TEST_CASE("passes.tf.functionalize_loops.control_dependencies") {
  G g = functionalize(control_deps);
  CHECK(gpass::print_text(g) == R"(graph {
  %x = arg() {index = 0} -> (i32[])
  %before = Identity(%x) -> (i32[])
  %after = Identity(%x, ^%w) -> (i32[])
  %r:0 = return(%w, %after)
  %w = while(%x, ^%before) {body = @w_body, cond = @w_cond} -> (i32[])
}

func @w_body {
  %args = function_entry() -> (i32[])
  %w/Identity = Identity(%args) -> (i32[])
  %w/two = Constant() {value = tensor<i32[]> [2]} -> (i32[])
  %w/mul = Mul(%w/Identity, %w/two) -> (i32[])
  %w/dep = Identity(%w/mul) -> (i32[])
  %w/next = Identity(%w/mul, ^%w/dep) -> (i32[])
  %return:0 = return(%w/next)
}

func @w_cond {
  %args = function_entry() -> (i32[])
  %w/ten = Constant() {value = tensor<i32[]> [10]} -> (i32[])
  %w/Less = Less(%args, %w/ten) -> (bool[])
  %return:0 = return(%w/Less)
}
)");
  check_laws(g);
  CHECK(run_i32(g, {3}) == std::vector<std::int32_t>{12, 3});   // 3 -> 6 -> 12
  CHECK(run_i32(g, {10}) == std::vector<std::int32_t>{10, 10});
}

TEST_CASE("passes.tf.functionalize_loops.merge_without_switch_and_switch_without_exit") {
  // k (Merge without Switch) is only read by the condition; m (Switch without Exit) is
  // carried but its final value is unused.
  G g = functionalize(partial_vars);
  CHECK(gpass::print_text(g) == R"(graph {
  %n = arg() {index = 0} -> (i32[])
  %zero = Constant() {value = tensor<i32[]> [0]} -> (i32[])
  %one = Constant() {value = tensor<i32[]> [1]} -> (i32[])
  %r:0 = return(%w:0)
  %w:4 = while(%zero, %zero, %one, %n) {body = @w_body, cond = @w_cond} -> (i32[], i32[], i32[], i32[])
}

func @w_body {
  %args:4 = function_entry() -> (i32[], i32[], i32[], i32[])
  %w/Identity_i = Identity(%args:0) -> (i32[])
  %w/one = Constant() {value = tensor<i32[]> [1]} -> (i32[])
  %w/add_i = Add(%w/Identity_i, %w/one) -> (i32[])
  %w/mul_m = Mul(%args:2, %w/add_i) -> (i32[])
  %return:0 = return(%w/add_i, %w/add_i, %w/mul_m, %args:3)
}

func @w_cond {
  %args:4 = function_entry() -> (i32[], i32[], i32[], i32[])
  %w/Less = Less(%args:1, %args:3) -> (bool[])
  %return:0 = return(%w/Less)
}
)");
  check_laws(g);
  CHECK(run_i32(g, {3}) == std::vector<std::int32_t>{3});
  CHECK(run_i32(g, {0}) == std::vector<std::int32_t>{0});
}

TEST_CASE("passes.tf.functionalize_loops.error_two_loop_conds") {
  std::string text(accumulate);
  text.replace(text.find("  %w/Switch_1:2 = Switch(%w/Merge_1:0, %w/LoopCond)"),
               std::string_view("  %w/Switch_1:2 = Switch(%w/Merge_1:0, %w/LoopCond)").size(),
               "  %w/LoopCond_1 = LoopCond(%w/Less) -> (bool[])\n  %w/Switch_1:2 = Switch(%w/Merge_1:0, %w/LoopCond_1)");
  const std::string e = error_of(text);
  CHECK(e == "gpass: pass 'functionalize-loops': node 'w/LoopCond_1' (op LoopCond): frame 'w/while_context' has two "
             "LoopConds ('w/LoopCond' and 'w/LoopCond_1')");
}

TEST_CASE("passes.tf.functionalize_loops.error_next_iteration_without_merge") {
  const std::string e = error_of(R"(graph {
  %x = arg() {index = 0} -> (i32[])
  %w/Enter = Enter(%x) {frame_name = "w/while_context"} -> (i32[])
  %w/Enter_1 = Enter(%x) {frame_name = "w/while_context", is_constant = true} -> (i32[])
  %w/Merge:2 = Merge(%w/Enter) -> (i32[], i32[])
  %w/Less = Less(%w/Merge:0, %w/Enter_1) -> (bool[])
  %w/LoopCond = LoopCond(%w/Less) -> (bool[])
  %w/Switch:2 = Switch(%w/Merge:0, %w/LoopCond) -> (i32[], i32[])
  %w/add = Add(%w/Switch:1, %w/Switch:1) -> (i32[])
  %w/NextIteration = NextIteration(%w/add) -> (i32[])
  %w/Exit = Exit(%w/Switch:0) -> (i32[])
  %r:0 = return(%w/Exit)
}
)");
  CHECK(e == "gpass: pass 'functionalize-loops': node 'w/NextIteration' (op NextIteration): NextIteration of frame "
             "'w/while_context' feeds no loop Merge (NextIteration without its Merge)");
}

TEST_CASE("passes.tf.functionalize_loops.error_condition_not_from_merges") {
  std::string text(accumulate);
  const std::string_view from = "%w/Less = Less(%w/Merge:0, %w/Enter_2)";
  text.replace(text.find(from), from.size(), "%w/Less = Less(%w/Switch_1:1, %w/Enter_2)");
  const std::string e = error_of(text);
  CHECK(e == "gpass: pass 'functionalize-loops': node 'w/Switch_1' (op Switch): the condition of frame "
             "'w/while_context' reads this node, which is not computable from the loop variables (Merge values)");
}

TEST_CASE("passes.tf.functionalize_loops.sequential") {
  // an Exit feeding the next loop's Enter: the Enter's frame opens in the Exit's parent
  G g = functionalize(sequential);
  CHECK(gpass::print_text(g) == R"(graph {
  %x = arg() {index = 0} -> (i32[])
  %n = arg() {index = 1} -> (i32[])
  %r:0 = return(%b:0)
  %a:2 = while(%x, %n) {body = @a_body, cond = @a_cond} -> (i32[], i32[])
  %b:2 = while(%a:0, %n) {body = @b_body, cond = @b_cond} -> (i32[], i32[])
}

func @a_body {
  %args:2 = function_entry() -> (i32[], i32[])
  %a/add = Add(%args:0, %args:0) -> (i32[])
  %return:0 = return(%a/add, %args:1)
}

func @a_cond {
  %args:2 = function_entry() -> (i32[], i32[])
  %a/Less = Less(%args:0, %args:1) -> (bool[])
  %return:0 = return(%a/Less)
}

func @b_body {
  %args:2 = function_entry() -> (i32[], i32[])
  %b/Identity = Identity(%args:0) -> (i32[])
  %b/three = Constant() {value = tensor<i32[]> [3]} -> (i32[])
  %b/sub = Sub(%b/Identity, %b/three) -> (i32[])
  %return:0 = return(%b/sub, %args:1)
}

func @b_cond {
  %args:2 = function_entry() -> (i32[], i32[])
  %b/Greater = Greater(%args:0, %args:1) -> (bool[])
  %return:0 = return(%b/Greater)
}
)");
  check_laws(g);
  CHECK(run_i32(g, {1, 10}) == std::vector<std::int32_t>{10});  // 1 -> 16 (doubling), 16 -> 10 (minus 3)
  CHECK(run_i32(g, {3, 5}) == std::vector<std::int32_t>{3});    // 3 -> 6, 6 -> 3
}

}  // namespace gpass_test_passes_tf_functionalize_loops
