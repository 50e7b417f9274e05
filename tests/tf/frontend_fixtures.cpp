// SPDX-License-Identifier: Apache-2.0
// The TensorFlow frontend end to end on every real-TensorFlow fixture of tests/data/tf:
// import graph.pb -> `tf-frontend` -> no v1 control-flow, TensorArray or variable op left ->
// verifies (no cycles) -> every node output has a type and a shape with no `?` dim (symbols
// where dynamic) -> a second run changes nothing -> runs on the Eigen CPU executor -> outputs
// equal TensorFlow's (atol 1e-5); the same after the optimizer's -O3 (its differential test
// on TensorFlow graphs).

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <doctest/doctest.h>

#include <gpass/graph/library.hpp>
#include <gpass/analysis/verify.hpp>
#include <gpass/io/text.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/passes/builtin.hpp>
#include <gpass/passes/optimize.hpp>
#include <gpass/passes/tf.hpp>

#include "fixture_support.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_tf_frontend_fixtures {

namespace {

using namespace gpass_test::tf;

/// Ops that must not survive the frontend (by domain and name).
bool is_tf_v1_or_stateful_op(const gpass::node& n) {
  static const std::set<std::string, std::less<>> core_cf = {"Enter", "Exit", "Merge", "Switch", "NextIteration",
                                                              "LoopCond"};
  static const std::set<std::string, std::less<>> tf_lowered = {
      "VariableV2", "Variable", "Assign", "AssignAdd", "AssignSub", "VarHandleOp", "ReadVariableOp",
      "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "TensorArrayV3", "TensorArrayWriteV3",
      "TensorArrayReadV3", "TensorArrayGatherV3", "TensorArrayScatterV3", "TensorArraySizeV3",
      "TensorArrayConcatV3", "TensorArraySplitV3", "TensorArrayCloseV3", "While", "StatelessWhile", "If",
      "StatelessIf", "Case", "StatelessCase", "PartitionedCall", "StatefulPartitionedCall"};
  if (n.domain.empty()) return core_cf.contains(n.op);
  return n.domain == "tf" && (tf_lowered.contains(n.op) || n.op.starts_with("TensorList"));
}

/// Calls `f(graph, node_id)` for every node of `g` and of its functions.
template <class F>
void for_each_node_everywhere(const gpass::graph<>& g, F&& f) {
  for (const auto* h : gpass::all_graphs(g))
    for (auto v : h->nodes()) f(*h, v);
}

/// Whether `s` has a rank and every dim is a number or a symbol (no `?`).
bool fully_typed(const gpass::shape& s) {
  if (!s.has_rank()) return false;
  for (std::size_t i = 0; i < s.rank(); ++i)
    if (s[i].is_unknown()) return false;
  return true;
}

/// "" when every output of every node has a type with a known dtype and a shape whose every
/// dim is a number or a symbol (lists: the same of their element, except a new list's, which
/// is what the TensorArray declared; resources carry no value), else the first offender.
std::string untyped_output(const gpass::graph<>& g) {
  std::string bad;
  for_each_node_everywhere(g, [&](const gpass::graph<>& h, auto v) {
    if (!bad.empty()) return;
    const auto& n = h[v];
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      const gpass::type& t = n.outputs[k];
      bool ok = false;
      if (t.is_tensor()) {
        const auto& tt = t.tensor();
        ok = tt.element != gpass::dtype::undefined && (tt.element == gpass::dtype::resource || fully_typed(tt.shape));
      } else if (t.is_list()) {
        // a list_reserve's list has no element yet: its element shape is what the TensorArray
        // declared (`[?,5]`, or none); every list made by a write holds the written shape
        ok = t.list().element.element != gpass::dtype::undefined &&
             (n.op == "list_reserve" || fully_typed(t.list().element.shape));
      } else if (t.is_tuple()) {
        ok = true;
      }
      if (!ok) bad = n.name + ":" + std::to_string(k) + " (" + n.op + ") has type " + t.to_string();
    }
  });
  return bad;
}

/// The nodes (name, op) of `g` and of its functions, and the function names: what two runs
/// of the frontend must agree on (symbol names of inferred dims are not compared).
std::vector<std::string> structure(const gpass::graph<>& g) {
  std::vector<std::string> s;
  for_each_node_everywhere(g, [&](const gpass::graph<>& h, auto v) { s.push_back(h[v].name + "=" + h[v].op); });
  for (const auto& [name, fn] : g.functions()) s.push_back("@" + name);
  return s;
}

void check_fixture(const std::string& name, const std::filesystem::path& root = data_dir, double tolerance = 1e-5) {
  CAPTURE(name);
  const fixture f = read_fixture(name, root);
  auto g = prepare(f, gpass::read_tf_graph_file(f.dir / "graph.pb"));

  gpass::pass_context ctx;
  gpass::tf_frontend(g, ctx);  // verifies after every pass

  std::vector<std::string> left;
  for_each_node_everywhere(g, [&](const gpass::graph<>& h, auto v) {
    if (is_tf_v1_or_stateful_op(h[v])) left.push_back(h[v].name + " (" + h[v].op + ")");
  });
  CHECK_MESSAGE(left.empty(), "ops left after tf-frontend: " << doctest::toString(left.size()) << ", first "
                                                              << (left.empty() ? "" : left.front()));

  gpass::verify_options vo;
  vo.allow_v1_control_flow_cycles = false;
  CHECK_NOTHROW(gpass::verify(g, vo));

  const std::string untyped = untyped_output(g);
  CHECK_MESSAGE(untyped.empty(), untyped);

  // stability: the frontend on its own result changes nothing (same text IR; both sides are
  // copies, since a copy may list a node's control inputs in another order)
  gpass::graph<> again = g;
  gpass::pass_context ctx2;
  CHECK_NOTHROW(gpass::tf_frontend(again, ctx2));
  CHECK(gpass::print_text(again) == gpass::print_text(gpass::graph<>(g)));

  // the optimizer's -O3 on the frontend's result
  auto& reg = gpass::pass_registry<gpass::graph<>>::global();
  gpass::register_optimizer_passes(reg);
  gpass::graph<> optimized = g;
  gpass::pass_context octx;
  REQUIRE_NOTHROW(reg.parse("O3")(optimized, octx));
  CHECK(optimized.num_nodes() <= g.num_nodes());

  gpass::exec::eigen_cpu cpu({.threads = 1});
  for (gpass::graph<>* h : {&g, &optimized}) {
    CAPTURE(h == &optimized);
    check_outputs(f, run_like_tensorflow(f, *h, cpu), tolerance);
  }
}

}  // namespace

TEST_CASE("tf.frontend.while_one_var") { check_fixture("while_one_var"); }
TEST_CASE("tf.frontend.while_two_vars") { check_fixture("while_two_vars"); }
TEST_CASE("tf.frontend.while_invariant") { check_fixture("while_invariant"); }
TEST_CASE("tf.frontend.nested_loops") { check_fixture("nested_loops"); }
TEST_CASE("tf.frontend.while_growing") { check_fixture("while_growing"); }
TEST_CASE("tf.frontend.while_ctrl") { check_fixture("while_ctrl"); }
TEST_CASE("tf.frontend.tensor_array_loop") { check_fixture("tensor_array_loop"); }
TEST_CASE("tf.frontend.dynamic_rnn_lstm") { check_fixture("dynamic_rnn_lstm"); }
TEST_CASE("tf.frontend.cond") { check_fixture("cond"); }
TEST_CASE("tf.frontend.variables") { check_fixture("variables"); }
TEST_CASE("tf.frontend.shape_ops") { check_fixture("shape_ops"); }
TEST_CASE("tf.frontend.multi_output") { check_fixture("multi_output"); }
TEST_CASE("tf.frontend.control_deps") { check_fixture("control_deps"); }
TEST_CASE("tf.frontend.variables_in_loop") { check_fixture("variables_in_loop"); }
TEST_CASE("tf.frontend.mlp_gradients") { check_fixture("mlp_gradients"); }
TEST_CASE("tf.frontend.mlp_training") { check_fixture("mlp_training"); }
TEST_CASE("tf.frontend.cnn_training") { check_fixture("cnn_training"); }
TEST_CASE("tf.frontend.cnn_bn_training") { check_fixture("cnn_bn_training"); }
TEST_CASE("tf.frontend.mlp_more_optimizers") { check_fixture("mlp_more_optimizers"); }
// seeded random initializers: the init target draws TensorFlow's values
TEST_CASE("tf.frontend.mlp_random_init") { check_fixture("mlp_random_init"); }
// centered RMSProp, Adadelta, Ftrl and FtrlV2
TEST_CASE("tf.frontend.mlp_optimizers_3") { check_fixture("mlp_optimizers_3"); }
// depthwise convolutions and their gradients
TEST_CASE("tf.frontend.dwcnn_training") { check_fixture("dwcnn_training"); }
// ProximalGradientDescent and ProximalAdagrad
TEST_CASE("tf.frontend.mlp_proximal") { check_fixture("mlp_proximal"); }
// ResizeBicubic (legacy and half-pixel Keys weights, align_corners, uint8) and ResizeBilinear
TEST_CASE("tf.frontend.image_resize") { check_fixture("image_resize"); }
// ResizeArea (down, up, same, align_corners, 3 channels and not, float/uint8/int32/half) and
// UniqueWithCounts (-0 and +0 one value, every NaN its own; int64 indices; strings)
TEST_CASE("tf.frontend.image_area_unique") { check_fixture("image_area_unique"); }
// MatrixDiag / DiagPart / SetDiag V1-V3 (k scalars and bands, the four aligns, num_rows /
// num_cols, padding; int, float, half, bool) and MatrixDeterminant (singular, -0, 20x20, 0x0)
TEST_CASE("tf.frontend.matrix_ops") { check_fixture("matrix_ops"); }
// DepthToSpace / SpaceToDepth, Roll, Cumprod, LeftShift / RightShift (clamped amounts), LRN,
// DynamicStitch, DynamicPartition, SparseToDense, SparseSegment*, FakeQuantWithMinMax*, MaxPoolV2,
// MaxPoolWithArgmax
TEST_CASE("tf.frontend.array_ops_2") { check_fixture("array_ops_2"); }
TEST_CASE("tf.frontend.image_ops") { check_fixture("image_ops"); }
// SparseReshape, SparseFillEmptyRows (strings too) and CTCGreedyDecoder (merged or not, blank 0)
TEST_CASE("tf.frontend.sparse_ctc") { check_fixture("sparse_ctc"); }
TEST_CASE("tf.frontend.conv3d") { check_fixture("conv3d"); }
TEST_CASE("tf.frontend.string_ops") { check_fixture("string_ops"); }
TEST_CASE("tf.frontend.combined_nms") { check_fixture("combined_nms"); }
TEST_CASE("tf.frontend.spectral") { check_fixture("spectral"); }

// TensorFlow 2 (tests/data/tf2): control flow v2, calls, TensorLists, Keras RNNs
TEST_CASE("tf2.frontend.while_v2") { check_fixture("while_v2", tf2_data_dir); }
TEST_CASE("tf2.frontend.cond_v2") { check_fixture("cond_v2", tf2_data_dir); }
TEST_CASE("tf2.frontend.case_v2") { check_fixture("case_v2", tf2_data_dir); }
TEST_CASE("tf2.frontend.nested_calls") { check_fixture("nested_calls", tf2_data_dir); }
TEST_CASE("tf2.frontend.tensor_list_loop") { check_fixture("tensor_list_loop", tf2_data_dir); }
TEST_CASE("tf2.frontend.keras_lstm") { check_fixture("keras_lstm", tf2_data_dir); }
TEST_CASE("tf2.frontend.keras_bidirectional") { check_fixture("keras_bidirectional", tf2_data_dir); }
TEST_CASE("tf2.frontend.index_ops") { check_fixture("index_ops", tf2_data_dir); }
// the random streams are TensorFlow's bit for bit (Philox, its conversions and order)
TEST_CASE("tf2.frontend.random_ops") { check_fixture("random_ops", tf2_data_dir, 0.0); }
// a Keras CNN with every NHWC form `tf-layout` converts (O3 runs it: check_fixture compares)
TEST_CASE("tf2.frontend.keras_cnn_layout") {
  check_fixture("keras_cnn_layout", tf2_data_dir);
  const fixture f = read_fixture("keras_cnn_layout", tf2_data_dir);
  auto g = prepare(f, gpass::read_tf_graph_file(f.dir / "graph.pb"));
  gpass::pass_context ctx;
  gpass::tf_frontend(g, ctx);
  auto& reg = gpass::pass_registry<gpass::graph<>>::global();
  gpass::register_optimizer_passes(reg);
  reg.parse("O3")(g, ctx);
  std::map<std::string, int> ops;
  for (auto v : g.nodes()) ++ops[g[v].op];
  CHECK(ops["Conv2D"] + ops["DepthwiseConv2dNative"] == 0);  // the dilated one's SpaceToBatchND form too
  CHECK(ops["FusedConv"] + ops["NchwcConv"] == 5);  // (-O3's nchwc-layout blocks those it can)
  CHECK(ops["FusedBatchNormV3"] + ops["Relu6"] + ops["Relu"] + ops["Pad"] == 0);
  CHECK(ops["BiasAdd"] == 1);  // the Dense layer's
  CHECK(ops["SpaceToBatchND"] + ops["BatchToSpaceND"] == 0);
  CHECK(ops["Transpose"] == 1);  // the input's: the rest cancelled
}

TEST_CASE("tf.frontend.registry_pipeline_matches_compile_time") {
  // The run-time `tf-frontend` (register_tf_passes) gives the same graph as gpass::tf_frontend.
  gpass::pass_registry<gpass::graph<>> reg;
  gpass::register_builtin_passes(reg);
  gpass::register_tf_passes(reg);
  gpass::register_tf_passes(reg);  // a second call is harmless
  for (const char* name : {"nested_loops", "cond", "tensor_array_loop"}) {
    CAPTURE(name);
    const fixture f = read_fixture(name);
    auto a = prepare(f, gpass::read_tf_graph_file(f.dir / "graph.pb"));
    auto b = a;
    gpass::pass_context ca, cb;
    gpass::tf_frontend(a, ca);
    reg.parse("tf-frontend")(b, cb);
    CHECK(structure(a) == structure(b));
  }
  CHECK(reg.parse("functionalize-loops,functionalize-conds").pass_names() ==
        std::vector<std::string>{"functionalize-loops", "functionalize-conds"});
}

TEST_CASE("tf.frontend.every_fixture_has_a_test") {
  // A fixture added to tests/data/tf without a test case above fails here.
  const std::set<std::string> tested = {"while_one_var", "while_two_vars", "while_invariant", "nested_loops",
                                        "while_growing", "while_ctrl",     "tensor_array_loop", "dynamic_rnn_lstm",
                                        "cond",          "variables",      "shape_ops",      "multi_output",
                                        "control_deps",  "variables_in_loop", "mlp_gradients",
                                        "mlp_training", "cnn_training", "cnn_bn_training",
                                        "mlp_more_optimizers", "mlp_random_init", "mlp_optimizers_3", "dwcnn_training", "mlp_proximal",
                                        "image_resize", "image_area_unique", "matrix_ops", "array_ops_2",
                                        "image_ops", "sparse_ctc", "conv3d", "string_ops", "combined_nms", "spectral"};
  for (const auto& e : std::filesystem::directory_iterator(data_dir))
    if (e.is_directory() && std::filesystem::exists(e.path() / "fixture.txt"))
      CHECK_MESSAGE(tested.contains(e.path().filename().string()), e.path().filename().string());
  // tests/data/tf2: the frozen graphs above; SavedModels are tested in tests/tf/saved_model.cpp
  const std::set<std::string> tested2 = {"while_v2", "cond_v2", "case_v2", "nested_calls", "tensor_list_loop",
                                         "keras_lstm", "keras_bidirectional", "index_ops", "random_ops", "saved_mlp", "saved_keras_cnn", "saved_v1",
                                         "keras_cnn_layout"};
  for (const auto& e : std::filesystem::directory_iterator(tf2_data_dir))
    if (e.is_directory() && std::filesystem::exists(e.path() / "fixture.txt"))
      CHECK_MESSAGE(tested2.contains(e.path().filename().string()), e.path().filename().string());
}

}  // namespace gpass_test_tf_frontend_fixtures
