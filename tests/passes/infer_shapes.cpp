// SPDX-License-Identifier: Apache-2.0
// The infer-shapes and infer-types passes: value propagation, symbolic shapes, control flow,
// errors naming the node, hints, stability.

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include <gpass/io/text.hpp>
#include <gpass/pass/pass.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/passes/common/infer_types.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_infer_shapes {

namespace {

using G = gpass::graph<>;

G run(std::string_view text, gpass::pass_context* ctx = nullptr) {
  G g = gpass::parse_text(text);
  gpass::pass_context local;
  gpass::infer_shapes(g, ctx ? *ctx : local);
  return g;
}

std::string type_of(const G& g, std::string_view node, std::size_t port = 0) {
  return g[g.at(node)].outputs.at(port).to_string();
}

std::string attr_text(const G& g, std::string_view node, std::string_view key) {
  const auto& a = g[g.at(node)].attrs;
  auto it = a.find(key);
  if (it == a.end()) return "<none>";
  if (it->second.is<gpass::shape>()) return it->second.as<gpass::shape>().to_string();
  if (it->second.is<gpass::tensor>()) {
    const auto& t = it->second.as<gpass::tensor>();
    std::string s = std::string(gpass::to_string(t.element_type())) + t.shape().to_string() + "{";
    if (t.element_type() == gpass::dtype::int64)
      for (std::size_t i = 0; i < static_cast<std::size_t>(t.size()); ++i) s += (i ? "," : "") + std::to_string(t.values<std::int64_t>()[i]);
    return s + "}";
  }
  return std::string(it->second.kind_name());
}

std::string error_of(std::string_view text) {
  try {
    run(text);
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

// x -> Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape(x)
std::string reshape_chain(std::string_view x_type) {
  return "graph {\n  %x = arg() {index = 0} -> (" + std::string(x_type) +
         ")\n"
         "  %shape = Shape(%x)\n"
         "  %i0 = Constant() {value = tensor<i64[]> [0]}\n"
         "  %dim0 = Gather(%shape, %i0)\n"
         "  %axes = Constant() {value = tensor<i64[1]> [0]}\n"
         "  %lead = Unsqueeze(%dim0, %axes)\n"
         "  %minus1 = Constant() {value = tensor<i64[1]> [-1]}\n"
         "  %target = Concat(%lead, %minus1) {axis = 0}\n"
         "  %y = Reshape(%x, %target)\n"
         "  %r:0 = return(%y)\n}\n";
}

}  // namespace

TEST_CASE("passes.infer_shapes.pass_concept") {
  static_assert(gpass::pass_for<gpass::infer_shapes_fn, G>);
  static_assert(gpass::pass_for<gpass::infer_types_fn, G>);
  CHECK(gpass::infer_shapes_fn::name == "infer-shapes");
  CHECK(gpass::infer_types_fn::name == "infer-types");
}

TEST_CASE("passes.infer_shapes.value_propagation_makes_reshape_known") {
  G g = run(reshape_chain("f32[2,3,4]"));
  CHECK(type_of(g, "shape") == "i64[3]");
  CHECK(attr_text(g, "shape", "_value") == "i64[3]{2,3,4}");
  CHECK(attr_text(g, "dim0", "_value") == "i64[]{2}");
  CHECK(attr_text(g, "target", "_value") == "i64[2]{2,-1}");
  CHECK(type_of(g, "y") == "f32[2,12]");
  // constants keep their own value attribute; no `_value` is added to them
  CHECK(attr_text(g, "i0", "_value") == "<none>");
}

TEST_CASE("passes.infer_shapes.incomplete_value_gives_symbolic_reshape") {
  G g = run(reshape_chain("f32[n,3,4]"));
  CHECK(attr_text(g, "shape", "_incomplete_value") == "[n,3,4]");
  CHECK(attr_text(g, "shape", "_value") == "<none>");
  CHECK(attr_text(g, "target", "_incomplete_value") == "[n,-1]");
  CHECK(type_of(g, "y") == "f32[n,12]");
  // unknown dim: the reshape keeps what it can
  G h = run(reshape_chain("f32[?,3,4]"));
  CHECK(type_of(h, "y") == "f32[?,?]");
}

TEST_CASE("passes.infer_shapes.reshape_to_minus_one_is_affine") {
  G g = run(R"(graph {
  %x = arg() {index = 0} -> (f32[n,4])
  %s = Constant() {value = tensor<i64[1]> [-1]}
  %y = Reshape(%x, %s)
  %z = Concat(%y, %y) {axis = 0}
  %r:0 = return(%z)
})");
  CHECK(type_of(g, "y") == "f32[4*n]");
  CHECK(type_of(g, "z") == "f32[8*n]");
}

TEST_CASE("passes.infer_shapes.concat_of_symbols_is_affine") {
  G g = run(R"(graph {
  %x = arg() {index = 0} -> (f32[n])
  %z = Concat(%x, %x) {axis = 0}
  %w = Concat(%z, %x) {axis = 0}
  %r:0 = return(%w)
})");
  CHECK(type_of(g, "z") == "f32[2*n]");
  CHECK(type_of(g, "w") == "f32[3*n]");
}

TEST_CASE("passes.infer_shapes.broadcast_error_names_node_and_input") {
  std::string e = error_of(R"(graph {
  %a = arg() {index = 0} -> (f32[2,3])
  %b = arg() {index = 1} -> (f32[2,4])
  %add = Add(%a, %b)
  %r:0 = return(%add)
})");
  CHECK(e.find("pass 'infer-shapes'") != std::string::npos);
  CHECK(e.find("node 'add' (op Add): incompatible dims 3 and 4 in input 1") != std::string::npos);
}

TEST_CASE("passes.infer_shapes.dtype_conflict_is_an_error") {
  std::string e = error_of(R"(graph {
  %a = arg() {index = 0} -> (f32[2])
  %b = arg() {index = 1} -> (i64[2])
  %mul = Mul(%a, %b)
  %r:0 = return(%mul)
})");
  CHECK(e.find("node 'mul' (op Mul): incompatible dtypes f32 and i64 for T (inputs 0 and 1)") != std::string::npos);
}

TEST_CASE("passes.infer_shapes.matmul_unifies_symbols") {
  G g = run(R"(graph {
  %a = arg() {index = 0} -> (f32[b,k])
  %w = arg() {index = 1} -> (f32[m,5])
  %y = MatMul(%a, %w)
  %c = arg() {index = 2} -> (f32[3,m])
  %z = MatMul(%c, %w)
  %r:0 = return(%y, %z)
})");
  // k == m learned; the later symbol is bound to the earlier one
  CHECK(type_of(g, "y") == "f32[b,5]");
  CHECK(type_of(g, "z") == "f32[3,5]");
  std::string e = error_of(R"(graph {
  %a = arg() {index = 0} -> (f32[2,3])
  %w = arg() {index = 1} -> (f32[4,5])
  %mm = MatMul(%a, %w)
  %r:0 = return(%mm)
})");
  CHECK(e.find("node 'mm' (op MatMul): incompatible dims 3 and 4") != std::string::npos);
}

TEST_CASE("passes.infer_shapes.declared_types_constrain_and_bind") {
  G g = run(R"(graph {
  %x = arg() {index = 0} -> (f32[n,3])
  %y = Relu(%x) -> (f32[5,?])
  %z = Sigmoid(%x)
  %r:0 = return(%y, %z)
})");
  // the declaration says n == 5
  CHECK(type_of(g, "y") == "f32[5,3]");
  CHECK(type_of(g, "z") == "f32[5,3]");
  std::string e = error_of(R"(graph {
  %x = arg() {index = 0} -> (f32[2,3])
  %y = Relu(%x) -> (f32[2,4])
  %r:0 = return(%y)
})");
  CHECK(e.find("node 'y' (op Relu): declared type f32[2,4] of output 0 conflicts with the inferred f32[2,3]") !=
        std::string::npos);
}

TEST_CASE("passes.infer_shapes.hints_from_graph_attribute") {
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0}
  %y = Tanh(%x)
  %r:0 = return(%y)
})");
  g.set(gpass::type_hints_key, gpass::type_hints{{"x", gpass::tensor_type{gpass::dtype::f16, gpass::shape{7}}}});
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  CHECK(type_of(g, "y") == "f16[7]");
  CHECK(g.get(gpass::unknown_outputs_key) == 0);
  CHECK(ctx.statistics().at("infer-shapes.unknown-outputs") == 0);
}

TEST_CASE("passes.infer_shapes.backward_inference_fills_inputs") {
  // Identity-like ops take their input type from a declared output type
  G g = run(R"(graph {
  %x = arg() {index = 0}
  %y = Identity(%x)
  %z = Neg(%y) -> (f32[4])
  %r:0 = return(%z)
})");
  CHECK(type_of(g, "y") == "f32[4]");
  CHECK(type_of(g, "x") == "f32[4]");
}

TEST_CASE("passes.infer_shapes.data_dependent_sizes_get_fresh_symbols") {
  G g = run(R"(graph {
  %x = arg() {index = 0} -> (f32[3,4])
  %nonzero = NonZero(%x)
  %t = Transpose(%nonzero)
  %u:4 = Unique(%x)
  %r:0 = return(%t, %u:0, %u:2)
})");
  CHECK(type_of(g, "nonzero") == "i64[2,nonzero_0]");
  CHECK(type_of(g, "t") == "i64[nonzero_0,2]");
  CHECK(type_of(g, "u", 0) == "f32[u_0]");
  CHECK(type_of(g, "u", 1) == "i64[u_0]");
  CHECK(type_of(g, "u", 2) == "i64[12]");
}

TEST_CASE("passes.infer_shapes.loop_growing_by_concat_widens_to_a_symbol") {
  gpass::pass_context ctx;
  G g = run(R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %loop = while(%x) {body = @body, cond = @cond}
  %r:0 = return(%loop)
}
func @body {
  %a = function_entry() -> (f32[*])
  %c = Concat(%a, %a) {axis = 0}
  %ret:0 = return(%c)
}
func @cond {
  %a = function_entry()
  %t = Constant() {value = tensor<bool[]> [true]}
  %ret:0 = return(%t)
})",
            &ctx);
  // a fresh symbol for the changing dim, the fixed one stays
  CHECK(type_of(g, "loop") == "f32[loop,2]");
  // the body is written at its fixed point
  const G& body = *g.find_function("body");
  CHECK(body[body.at("a")].outputs[0].to_string() == "f32[loop,2]");
  CHECK(body[body.at("c")].outputs[0].to_string() == "f32[2*loop,2]");
  const G& cond = *g.find_function("cond");
  CHECK(cond[cond.at("t")].outputs[0].to_string() == "bool[]");
  CHECK(ctx.statistics().at("infer-shapes.sweeps") <= 3);
  CHECK(ctx.statistics().at("infer-shapes.functions") == 2);
}

TEST_CASE("passes.infer_shapes.loop_with_invariant_shape_keeps_it") {
  G g = run(R"(graph {
  %x = arg() {index = 0} -> (f32[n,3])
  %i = Constant() {value = tensor<i64[]> [0]}
  %loop:2 = while(%i, %x) {body = @body, cond = @cond}
  %r:0 = return(%loop:0, %loop:1)
}
func @body {
  %a:2 = function_entry()
  %one = Constant() {value = tensor<i64[]> [1]}
  %i = Add(%a:0, %one)
  %y = Tanh(%a:1)
  %ret:0 = return(%i, %y)
}
func @cond {
  %a:2 = function_entry()
  %ten = Constant() {value = tensor<i64[]> [10]}
  %c = Less(%a:0, %ten)
  %ret:0 = return(%c)
})");
  CHECK(type_of(g, "loop", 0) == "i64[]");
  CHECK(type_of(g, "loop", 1) == "f32[n,3]");
  // the counter's value changes across iterations: not recorded as known
  const G& body = *g.find_function("body");
  CHECK(attr_text(body, "i", "_value") == "<none>");
}

TEST_CASE("passes.infer_shapes.loop_changing_dtype_is_an_error") {
  std::string e = error_of(R"(graph {
  %x = arg() {index = 0} -> (f32[2])
  %loop = while(%x) {body = @body, cond = @cond}
  %r:0 = return(%loop)
}
func @body {
  %a = function_entry()
  %c = Cast(%a) {to = 7}
  %ret:0 = return(%c)
}
func @cond {
  %a = function_entry()
  %t = Constant() {value = tensor<bool[]> [true]}
  %ret:0 = return(%t)
})");
  CHECK(e.find("node 'loop' (op while): incompatible dtypes f32 and i64") != std::string::npos);
}

TEST_CASE("passes.infer_shapes.if_joins_branches") {
  G g = run(R"(graph {
  %p = arg() {index = 0} -> (bool[])
  %x = arg() {index = 1} -> (f32[4,3])
  %if:2 = if(%p, %x) {else_branch = @else, then_branch = @then}
  %r:0 = return(%if:0, %if:1)
}
func @then {
  %a = function_entry()
  %t = Transpose(%a)
  %ret:0 = return(%a, %t)
}
func @else {
  %a = function_entry()
  %z = Concat(%a, %a) {axis = 1}
  %ret:0 = return(%a, %z)
})");
  CHECK(type_of(g, "if", 0) == "f32[4,3]");
  // [3,4] vs [4,6]: both dims differ -> fresh symbols of the If node
  CHECK(type_of(g, "if", 1) == "f32[if,if_1]");
}

TEST_CASE("passes.infer_shapes.if_with_known_predicate_takes_one_branch") {
  G g = run(R"(graph {
  %p = Constant() {value = tensor<bool[]> [false]}
  %x = arg() {index = 0} -> (f32[4,3])
  %if = if(%p, %x) {else_branch = @else, then_branch = @then}
  %r:0 = return(%if)
}
func @then {
  %a = function_entry()
  %t = Transpose(%a)
  %ret:0 = return(%t)
}
func @else {
  %a = function_entry()
  %ret:0 = return(%a)
})");
  CHECK(type_of(g, "if") == "f32[4,3]");
}

TEST_CASE("passes.infer_shapes.onnx_loop_scan_outputs_and_captures") {
  // ONNX Loop as imported: inputs M, cond, carried..., captures (`_captures`)
  G g = run(R"(graph {
  %m = Constant() {value = tensor<i64[]> [5]}
  %x = arg() {index = 0} -> (f32[1])
  %w = arg() {index = 1} -> (f32[3])
  %loop:2 = Loop(%m, _, %x, %w) {_captures = 1, body = @body}
  %r:0 = return(%loop:0, %loop:1)
}
func @body {
  %a:4 = function_entry()
  %y = Add(%a:2, %a:3)
  %s = Relu(%a:3)
  %ret:0 = return(%a:1, %a:2, %s)
})");
  CHECK(type_of(g, "loop", 0) == "f32[1]");
  CHECK(type_of(g, "loop", 1) == "f32[5,3]");
  const G& body = *g.find_function("body");
  CHECK(body[body.at("y")].outputs[0].to_string() == "f32[3]");
}

TEST_CASE("passes.infer_shapes.tf_v1_merge_loop_reaches_a_fixed_point") {
  // Enter -> Merge -> Switch -> (body: Concat) -> NextIteration -> Merge (a cycle)
  gpass::pass_context ctx;
  G g = run(R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %enter = Enter(%x) {frame_name = "f"}
  %merge:2 = Merge(%enter, %next)
  %pred = arg() {index = 1} -> (bool[])
  %cond = LoopCond(%pred)
  %switch:2 = Switch(%merge:0, %cond)
  %grow = Concat(%switch:1, %switch:1) {axis = 0}
  %next = NextIteration(%grow)
  %exit = Exit(%switch:0)
  %r:0 = return(%exit)
})",
            &ctx);
  CHECK(type_of(g, "merge", 0) == "f32[merge,2]");
  CHECK(type_of(g, "merge", 1) == "i32[]");
  CHECK(type_of(g, "grow") == "f32[2*merge,2]");
  CHECK(type_of(g, "exit") == "f32[merge,2]");
  CHECK(ctx.statistics().at("infer-shapes.sweeps") < 10);
}

TEST_CASE("passes.infer_shapes.running_twice_is_stable") {
  const char* text = R"(graph {
  %x = arg() {index = 0} -> (f32[2,2])
  %loop = while(%x) {body = @body, cond = @cond}
  %nz = NonZero(%loop)
  %r:0 = return(%loop, %nz)
}
func @body {
  %a = function_entry()
  %c = Concat(%a, %a) {axis = 0}
  %ret:0 = return(%c)
}
func @cond {
  %a = function_entry()
  %t = Constant() {value = tensor<bool[]> [true]}
  %ret:0 = return(%t)
})";
  G g = run(text);
  std::string once = gpass::print_text(g);
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  CHECK(gpass::print_text(g) == once);
}

TEST_CASE("passes.infer_shapes.infer_types_writes_dtypes_only") {
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[2,3])
  %s = Shape(%x)
  %y = Relu(%x) -> (?[2,?])
  %r:0 = return(%s, %y)
})");
  gpass::pass_context ctx;
  gpass::infer_types(g, ctx);
  CHECK(type_of(g, "s") == "i64[*]");
  CHECK(type_of(g, "y") == "f32[2,?]");
  CHECK(attr_text(g, "s", "_incomplete_value") == "<none>");
  CHECK(attr_text(g, "s", "_value") == "<none>");
}

TEST_CASE("passes.infer_shapes.stale_values_are_replaced") {
  G g = gpass::parse_text(reshape_chain("f32[n,3,4]"));
  g[g.at("y")].attrs["_value"] = gpass::tensor::from<std::int64_t>({9});
  g[g.at("shape")].attrs["_value:3"] = gpass::tensor::from<std::int64_t>({9});
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  CHECK(attr_text(g, "y", "_value") == "<none>");
  CHECK(attr_text(g, "shape", "_value:3") == "<none>");
  CHECK(attr_text(g, "shape", "_incomplete_value") == "[n,3,4]");
}

TEST_CASE("passes.infer_shapes.record_values_option") {
  G g = gpass::parse_text(reshape_chain("f32[2,3,4]"));
  gpass::pass_context ctx;
  ctx.set_option("infer-shapes.record-values", "false");
  gpass::infer_shapes(g, ctx);
  CHECK(attr_text(g, "shape", "_value") == "<none>");
  CHECK(type_of(g, "y") == "f32[2,12]");
}

TEST_CASE("passes.infer_shapes.unknown_outputs_are_counted") {
  gpass::pass_context ctx;
  G g = run(R"(graph {
  %x = arg() {index = 0}
  %y = SomeCustomOp(%x)
  %z = Relu(%y)
  %r:0 = return(%z)
})",
            &ctx);
  CHECK(type_of(g, "z") == "?");
  CHECK(ctx.statistics().at("infer-shapes.unknown-outputs") == 3);
  CHECK(g.get(gpass::unknown_outputs_key) == 3);
}

TEST_CASE("passes.infer_shapes.onnx_opset_from_graph_attribute") {
  // Squeeze takes axes from an attribute until opset 12, from an input from 13
  G g = run(R"(graph {opset_import = [":11"]} {
  %x = arg() {index = 0} -> (f32[1,3,1])
  %y = Squeeze(%x) {axes = [0]}
  %r:0 = return(%y)
})");
  CHECK(type_of(g, "y") == "f32[3,1]");
  G h = run(R"(graph {opset_import = [":13"]} {
  %x = arg() {index = 0} -> (f32[1,3,1])
  %axes = Constant() {value = tensor<i64[1]> [2]}
  %y = Squeeze(%x, %axes)
  %r:0 = return(%y)
})");
  CHECK(type_of(h, "y") == "f32[1,3]");
}

TEST_CASE("passes.infer_shapes.deep_chain_does_not_recurse") {
  std::string text = "graph {\n  %x0 = arg() {index = 0} -> (f32[n,2])\n";
  for (int i = 1; i <= 20000; ++i)
    text += "  %x" + std::to_string(i) + " = Relu(%x" + std::to_string(i - 1) + ")\n";
  text += "  %r:0 = return(%x20000)\n}\n";
  G g = run(text);
  CHECK(type_of(g, "x20000") == "f32[n,2]");
}

TEST_CASE("passes.infer_shapes.functions_called_twice_are_joined") {
  G g = run(R"(graph {
  %p = arg() {index = 0} -> (bool[])
  %x = arg() {index = 1} -> (f32[2,3])
  %y = arg() {index = 2} -> (f32[5,3])
  %a = if(%p, %x) {else_branch = @id, then_branch = @id}
  %b = if(%p, %y) {else_branch = @id, then_branch = @id}
  %r:0 = return(%a, %b)
}
func @id {
  %e = function_entry()
  %t = Tanh(%e)
  %ret:0 = return(%t)
})");
  // each call is inferred with its own arguments
  CHECK(type_of(g, "a") == "f32[2,3]");
  CHECK(type_of(g, "b") == "f32[5,3]");
  // the body's written types hold for both calls
  const G& id = *g.find_function("id");
  CHECK(id[id.at("t")].outputs[0].to_string() == "f32[t,3]");
}

TEST_CASE("passes.infer_shapes.uncalled_functions_use_declared_arguments") {
  G g = run(R"(graph {
  %x = arg() {index = 0} -> (f32[2])
  %r:0 = return(%x)
}
func @lib {
  %e:2 = function_entry() -> (f32[4,3], i64[2])
  %s = Shape(%e:0)
  %c = Concat(%s, %e:1) {axis = 0}
  %ret:0 = return(%c)
})");
  const G& lib = *g.find_function("lib");
  CHECK(lib[lib.at("c")].outputs[0].to_string() == "i64[4]");
  CHECK(attr_text(lib, "s", "_value") == "i64[2]{4,3}");
}

TEST_CASE("passes.infer_shapes.recursion_is_refused_not_looped") {
  gpass::pass_context ctx;
  G g = run(R"(graph {
  %p = arg() {index = 0} -> (bool[])
  %x = arg() {index = 1} -> (f32[2])
  %a = if(%p, %x) {else_branch = @f, then_branch = @f}
  %r:0 = return(%a)
}
func @f {
  %e:2 = function_entry()
  %again = if(%e:0, %e:1) {else_branch = @f, then_branch = @f}
  %ret:0 = return(%again)
})",
            &ctx);
  CHECK(type_of(g, "a") == "?");
  bool noted = false;
  for (const auto& d : ctx.diagnostics())
    if (d.message.find("recursive") != std::string::npos) noted = true;
  CHECK(noted);
}

TEST_CASE("passes.infer_shapes.onnx_scan_stacks_outputs") {
  // a running sum over the rows of x: state [3], scan input x [t,3] (axis 0), scan output [t,3]
  G g = run(R"(graph {opset_import = [":16"]} {
  %init = arg() {index = 0} -> (f32[3])
  %x = arg() {index = 1} -> (f32[t,3])
  %scan:2 = Scan(%init, %x) {body = @body, num_scan_inputs = 1, scan_output_axes = [1]}
  %r:0 = return(%scan:0, %scan:1)
}
func @body {
  %e:2 = function_entry()
  %sum = Add(%e:0, %e:1)
  %copy = Identity(%sum)
  %ret:0 = return(%sum, %copy)
})");
  CHECK(type_of(g, "scan", 0) == "f32[3]");
  CHECK(type_of(g, "scan", 1) == "f32[3,t]");
  const G& body = *g.find_function("body");
  CHECK(body[body.at("e")].outputs[1].to_string() == "f32[3]");
}

TEST_CASE("passes.infer_shapes.tensorflow_graphs_skip_onnx_schemas") {
  // TensorFlow and ONNX share the default domain: TF's Slice(input, begin, size) is not ONNX's
  const char* text = R"(graph {frontend = "tensorflow"} {
  %x = Placeholder() -> (f32[4,6])
  %b = Const() {value = tensor<i32[2]> [0, 1]} -> (i32[2])
  %s = Const() {value = tensor<i32[2]> [2, 3]} -> (i32[2])
  %y = Slice(%x, %b, %s) -> (f32[2,3])
  %m:2 = Merge(%y, %y)
  %r:0 = return(%m:0)
})";
  G g = run(text);
  CHECK(type_of(g, "y") == "f32[2,3]");   // the declared type, untouched
  CHECK(type_of(g, "m") == "f32[2,3]");   // core ops still apply
  CHECK(type_of(g, "m", 1) == "i32[]");
}

}  // namespace gpass_test_passes_infer_shapes
