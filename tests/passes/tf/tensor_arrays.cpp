// SPDX-License-Identifier: Apache-2.0
// The lower-tensor-arrays pass (seeds 000/002, "TensorArray"), the list ops' types and their
// Eigen CPU kernels.

#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/passes/tf/tensor_arrays.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_tf_tensor_arrays {

#ifndef GPASS_TEST_DATA_DIR
#define GPASS_TEST_DATA_DIR "tests/data"
#endif

namespace {
using G = gpass::graph<>;

std::string type_of(const G& g, std::string_view node, std::size_t port = 0) {
  return g[g.at(node)].outputs.at(port).to_string();
}
std::vector<float> floats(const gpass::exec::value& v) {
  auto s = v.tensor().values<float>();
  return {s.begin(), s.end()};
}
std::string node_text(const G& g, std::string_view name) {
  // one node's line of the printed graph
  std::string all = gpass::print_text(g), key = "  %" + std::string(name);
  for (std::size_t at = all.find(key); at != std::string::npos; at = all.find(key, at + 1)) {
    const char next = all[at + key.size()];
    if (next == ' ' || next == ':') return all.substr(at + 3, all.find('\n', at) - at - 3);
  }
  return "<none>";
}

// Straight-line use of every lowered op, fed n = 2 and x = [[1,2,3],[4,5,6]].
constexpr const char* straight = R"(graph {
  %n = arg() {index = 0} -> (i32[])
  %x = arg() {index = 1} -> (f32[2,3])
  %ta:2 = tf::TensorArrayV3(%n) {dtype = f32, dynamic_size = false, element_shape = shape[*]} -> (resource[], f32[])
  %i0 = Constant() {value = tensor<i32[]> [0]}
  %i1 = Constant() {value = tensor<i32[]> [1]}
  %x2 = Add(%x, %x)
  %w0 = tf::TensorArrayWriteV3(%ta:0, %i0, %x, %ta:1) {T = f32} -> (f32[])
  %w1 = tf::TensorArrayWriteV3(%ta:0, %i1, %x2, %w0) {T = f32} -> (f32[])
  %read = tf::TensorArrayReadV3(%ta:0, %i1, %w1) {dtype = f32}
  %idx = Constant() {value = tensor<i32[2]> [1, 0]}
  %gather = tf::TensorArrayGatherV3(%ta:0, %idx, %w1) {dtype = f32, element_shape = shape[*]}
  %size = tf::TensorArraySizeV3(%ta:0, %w1) -> (i32[])
  %concat:2 = tf::TensorArrayConcatV3(%ta:0, %w1) {dtype = f32}
  %tb:2 = tf::TensorArrayV3(%n) {dtype = f32, element_shape = shape[*]}
  %sc = tf::TensorArrayScatterV3(%tb:0, %idx, %x, %tb:1) {T = f32}
  %r0 = tf::TensorArrayReadV3(%tb:0, %i0, %sc) {dtype = f32}
  %tc:2 = tf::TensorArrayV3(%n) {dtype = f32, element_shape = shape[?,3]}
  %lens = Constant() {value = tensor<i64[2]> [1, 1]}
  %sp = tf::TensorArraySplitV3(%tc:0, %x, %lens, %tc:1) {T = f32}
  %sp1 = tf::TensorArrayReadV3(%tc:0, %i1, %sp) {dtype = f32}
  %unwritten:2 = tf::TensorArrayV3(%n) {dtype = f32, element_shape = shape[2]}
  %zeros = tf::TensorArrayReadV3(%unwritten:0, %i1, %unwritten:1) {dtype = f32}
  %close:0 = tf::TensorArrayCloseV3(%ta:0, ^%read)
  %r:0 = return(%read, %gather, %size, %concat:0, %concat:1, %r0, %sp1, %zeros, ^%close)
}
)";
}  // namespace

TEST_CASE("passes.tf.tensor_arrays.lowers_every_op") {
  gpass::pass_context ctx;
  G g = gpass::parse_text(straight);
  gpass::tensor_arrays(g, ctx);
  CHECK(node_text(g, "ta") == "ta:2 = list_reserve(%n) {dtype = f32, dynamic_size = false, element_shape = shape[*]} -> (resource[], ?)");
  CHECK(node_text(g, "w0") == "w0 = list_write(%ta:1, %i0, %x)");
  CHECK(node_text(g, "w1") == "w1 = list_write(%w0, %i1, %x2)");
  CHECK(node_text(g, "read") == "read = list_read(%w1, %i1) {dtype = f32, element_shape = shape[*]}");
  CHECK(node_text(g, "gather") == "gather = list_gather(%w1, %idx) {dtype = f32, element_shape = shape[*]}");
  CHECK(node_text(g, "size") == "size = list_size(%w1) -> (i32[])");
  CHECK(node_text(g, "concat") == "concat:2 = list_concat(%w1) {dtype = f32}");
  CHECK(node_text(g, "sc") == "sc = list_scatter(%tb:1, %idx, %x)");
  CHECK(node_text(g, "sp") == "sp = list_split(%tc:1, %x, %lens)");
  // the reader takes the array's element shape (zeros for an unwritten element at run time)
  CHECK(node_text(g, "zeros") == "zeros = list_read(%unwritten:1, %i1) {dtype = f32, element_shape = shape[2]}");
  CHECK(node_text(g, "close") == "<none>");
  CHECK(ctx.statistics().at("lower-tensor-arrays.arrays") == 4);
  CHECK(ctx.statistics().at("lower-tensor-arrays.lowered-ops") == 16);
  // the control edge through Close is kept: read precedes what followed Close (the return)
  CHECK(g.control_inputs(g.at("r")).size() == 1);
  CHECK(g[g.control_inputs(g.at("r"))[0]].name == "read");

  // types: the element shape comes from the writes, the length from the size
  gpass::infer_shapes(g, ctx);
  CHECK(type_of(g, "ta", 1) == "list<f32[*], ta_length>");
  CHECK(type_of(g, "w0") == "list<f32[2,3], ta_length>");
  CHECK(type_of(g, "read") == "f32[2,3]");
  CHECK(type_of(g, "gather") == "f32[2,2,3]");
  CHECK(type_of(g, "concat", 0) == "f32[concat_rows,3]");
  CHECK(type_of(g, "concat", 1) == "i64[ta_length]");
  CHECK(type_of(g, "r0") == "f32[3]");
  CHECK(type_of(g, "sp1") == "f32[?,3]");
  CHECK(type_of(g, "zeros") == "f32[2]");

  // run it
  gpass::exec::eigen_cpu cpu;
  gpass::exec::plan p(g, cpu);
  auto out = p.run({gpass::tensor::scalar<std::int32_t>(2), gpass::tensor::from<float>({1, 2, 3, 4, 5, 6}, {2, 3})});
  CHECK(floats(out[0]) == std::vector<float>{2, 4, 6, 8, 10, 12});
  CHECK(out[1].tensor().sizes() == std::vector<std::int64_t>{2, 2, 3});
  CHECK(floats(out[1]) == std::vector<float>{2, 4, 6, 8, 10, 12, 1, 2, 3, 4, 5, 6});
  CHECK(out[2].tensor().values<std::int32_t>()[0] == 2);
  CHECK(out[3].tensor().sizes() == std::vector<std::int64_t>{4, 3});
  CHECK(floats(out[3]) == std::vector<float>{1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12});
  CHECK(out[4].tensor().values<std::int64_t>()[0] == 2);
  CHECK(out[4].tensor().values<std::int64_t>()[1] == 2);
  CHECK(floats(out[5]) == std::vector<float>{4, 5, 6});
  CHECK(out[6].tensor().sizes() == std::vector<std::int64_t>{1, 3});
  CHECK(floats(out[6]) == std::vector<float>{4, 5, 6});
  CHECK(floats(out[7]) == std::vector<float>{0, 0});
}

TEST_CASE("passes.tf.tensor_arrays.seed000_fixture") {
  gpass::pass_context ctx;
  G g = gpass::read_text_file(GPASS_TEST_DATA_DIR "/ir/seed000_tensor_array.gir");
  gpass::tensor_arrays(g, ctx);
  // the flow carried the list: write/size/concat/gather read it, the handles are dropped
  CHECK(node_text(g, "write") == "write = list_write(%ta:1, %index, %x)");
  CHECK(node_text(g, "size") == "size = list_size(%write) -> (i32[])");
  CHECK(node_text(g, "concat") == "concat:2 = list_concat(%write) {dtype = f32} -> (f32[?,3], i64[n])");
  CHECK(node_text(g, "gather") ==
        "gather = list_gather(%write, %index) {dtype = f32, element_shape = shape[?,3]} -> (f32[1,?,3])");
  CHECK(node_text(g, "ta2") == "ta2:2 = list_reserve(%n) {dtype = i64, element_shape = shape[*]} -> (resource[], ?)");
}

// A functional loop writing x into the array at every iteration: the element shape of the
// list leaving the loop is refined by the write in the body (seed 000, "element shapes
// refined by writes inside loop bodies").
TEST_CASE("passes.tf.tensor_arrays.write_in_loop_body_refines_the_element_shape") {
  gpass::pass_context ctx;
  G g = gpass::parse_text(R"(graph {
  %n = arg() {index = 0} -> (i32[])
  %x = arg() {index = 1} -> (f32[2,3])
  %ta:2 = tf::TensorArrayV3(%n) {dtype = f32, element_shape = shape[*]} -> (resource[], f32[])
  %zero = Constant() {value = tensor<i32[]> [0]}
  %init = make_tuple(%zero, %ta:1, %x, %n) -> (tuple<i32[], f32[], f32[2,3], i32[]>)
  %loop = while(%init) {body = @body, cond = @cond} -> (tuple<i32[], f32[], f32[2,3], i32[]>)
  %flow = get_tuple(%loop) {index = 1} -> (f32[])
  %idx = Constant() {value = tensor<i32[2]> [0, 1]}
  %out = tf::TensorArrayGatherV3(%ta:0, %idx, %flow) {dtype = f32, element_shape = shape[*]}
  %r:0 = return(%out)
}

func @body {
  %args = function_entry() -> (tuple<i32[], f32[], f32[2,3], i32[]>)
  %i = get_tuple(%args) {index = 0} -> (i32[])
  %flow = get_tuple(%args) {index = 1} -> (f32[])
  %x = get_tuple(%args) {index = 2} -> (f32[2,3])
  %n = get_tuple(%args) {index = 3} -> (i32[])
  %h = Constant() {value = tensor<i32[]> [0]}
  %w = tf::TensorArrayWriteV3(%h, %i, %x, %flow) {T = f32} -> (f32[])
  %one = Constant() {value = tensor<i32[]> [1]}
  %next = Add(%i, %one)
  %t = make_tuple(%next, %w, %x, %n)
  %ret:0 = return(%t)
}

func @cond {
  %args = function_entry() -> (tuple<i32[], f32[], f32[2,3], i32[]>)
  %i = get_tuple(%args) {index = 0} -> (i32[])
  %n = get_tuple(%args) {index = 3} -> (i32[])
  %less = Less(%i, %n)
  %ret:0 = return(%less)
}
)");
  gpass::tensor_arrays(g, ctx);
  // the flow's declared f32[] types are gone along its way, in the loop and its functions
  CHECK(type_of(g, "loop") == "?");
  CHECK(type_of(g, "flow") == "?");
  CHECK(gpass::print_text(*g.find_function("body")).find("-> (f32[])") == std::string::npos);
  gpass::infer_shapes(g, ctx);
  CHECK(type_of(g, "ta", 1) == "list<f32[*], ta_length>");
  CHECK(type_of(g, "flow") == "list<f32[2,3], ta_length>");
  CHECK(type_of(g, "out") == "f32[2,2,3]");
  const G& body = *g.find_function("body");
  CHECK(body[body.at("w")].outputs[0].to_string() == "list<f32[2,3], ta_length>");
}

TEST_CASE("passes.tf.tensor_arrays.v1_loop_handles_are_dropped") {
  gpass::pass_context ctx;
  // TF v1: the handle enters the frame as an invariant, the flow as a loop variable
  G g = gpass::parse_text(R"(graph {
  %n = arg() {index = 0} -> (i32[])
  %x = arg() {index = 1} -> (f32[3])
  %ta:2 = tf::TensorArrayV3(%n) {dtype = f32, element_shape = shape[*]} -> (resource[], f32[])
  %zero = Constant() {value = tensor<i32[]> [0]}
  %e_i = Enter(%zero) {frame_name = "l"} -> (i32[])
  %e_flow = Enter(%ta:1) {frame_name = "l"} -> (f32[])
  %e_h = Enter(%ta:0) {frame_name = "l", is_constant = true} -> (resource[])
  %e_x = Enter(%x) {frame_name = "l", is_constant = true} -> (f32[3])
  %e_n = Enter(%n) {frame_name = "l", is_constant = true} -> (i32[])
  %m_i:2 = Merge(%e_i, %ni_i) -> (i32[], i32[])
  %m_flow:2 = Merge(%e_flow, %ni_flow) -> (f32[], i32[])
  %less = Less(%m_i:0, %e_n)
  %cond = LoopCond(%less)
  %s_i:2 = Switch(%m_i:0, %cond) -> (i32[], i32[])
  %s_flow:2 = Switch(%m_flow:0, %cond) -> (f32[], f32[])
  %id_i = Identity(%s_i:1) -> (i32[])
  %id_flow = Identity(%s_flow:1) -> (f32[])
  %w = tf::TensorArrayWriteV3(%e_h, %id_i, %e_x, %id_flow) {T = f32} -> (f32[])
  %one = Constant(^%id_i) {value = tensor<i32[]> [1]}
  %next = Add(%id_i, %one)
  %ni_i = NextIteration(%next) -> (i32[])
  %ni_flow = NextIteration(%w) -> (f32[])
  %exit_flow = Exit(%s_flow:0) -> (f32[])
  %size = tf::TensorArraySizeV3(%ta:0, %exit_flow) -> (i32[])
  %r:0 = return(%size)
}
)");
  gpass::tensor_arrays(g, ctx);
  CHECK_FALSE(g.find("e_h"));  // the handle's Enter carried nothing to anyone
  CHECK(node_text(g, "w") == "w = list_write(%id_flow, %id_i, %e_x)");
  CHECK(type_of(g, "e_flow") == "?");
  CHECK(type_of(g, "m_flow", 0) == "?");
  CHECK(type_of(g, "m_flow", 1) == "i32[]");
  CHECK(type_of(g, "exit_flow") == "?");
  CHECK(type_of(g, "e_i") == "i32[]");  // not on the list's way
  gpass::infer_shapes(g, ctx);
  CHECK(type_of(g, "exit_flow") == "list<f32[3], ta_length>");
}

TEST_CASE("passes.tf.tensor_arrays.errors") {
  gpass::pass_context ctx;
  G g = gpass::parse_text(R"(graph {
  %n = arg() {index = 0} -> (i32[])
  %ta:2 = tf::TensorArrayV3(%n) {dtype = f32}
  %grad:2 = tf::TensorArrayGradV3(%ta:0, %ta:1) {source = "gradients"}
  %r:0 = return(%grad:1)
}
)");
  CHECK_THROWS_WITH_AS(gpass::tensor_arrays(g, ctx),
                       doctest::Contains("TensorArrayGradV3 is not supported by lower-tensor-arrays"), gpass::error);
  G h = gpass::parse_text(R"(graph {
  %n = arg() {index = 0} -> (i32[])
  %ta:2 = tf::TensorArrayV3(%n) {dtype = f32}
  %w = tf::TensorArrayWriteV3(%ta:0, %n, %ta:1) {T = f32}
  %r:0 = return(%w)
}
)");
  CHECK_THROWS_WITH_AS(gpass::tensor_arrays(h, ctx), doctest::Contains("expects 4 inputs, has 3"), gpass::error);
  // a read of an unwritten element whose shape is unknown fails at run time
  G u = gpass::parse_text(R"(graph {
  %n = arg() {index = 0} -> (i32[])
  %ta:2 = list_reserve(%n) {dtype = f32}
  %rd = list_read(%ta:1, %n) {dtype = f32}
  %r:0 = return(%rd)
}
)");
  gpass::exec::eigen_cpu cpu;
  gpass::exec::plan p(u, cpu);
  CHECK_THROWS_WITH_AS(p.run({gpass::tensor::scalar<std::int32_t>(0)}), doctest::Contains("index 0 out of range"), gpass::error);
  CHECK_THROWS_WITH_AS(p.run({gpass::tensor::scalar<std::int32_t>(-1)}), doctest::Contains("negative list size"), gpass::error);
}

}  // namespace gpass_test_passes_tf_tensor_arrays
