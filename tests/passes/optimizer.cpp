// SPDX-License-Identifier: Apache-2.0
// The optimizer's passes, text in / text out, ONNX and TensorFlow: fold-constants (kernels,
// inferred values, symbolic Reshape targets), cse, simplify-inference, fold-batch-norm, and
// the levels O1-O3. Rewrites that change numbers are checked by running the graph before
// and after on the same random inputs.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/analysis/verify.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/io/text.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/passes/builtin.hpp>
#include <gpass/passes/optimize.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_optimizer {

namespace {
using G = gpass::graph<>;

/// Parses `text`, runs `pipeline` (registry text) on it, verifies, returns the graph.
G optimize(std::string_view text, const std::string& pipeline, gpass::pass_context& ctx) {
  auto& reg = gpass::pass_registry<G>::global();
  gpass::register_optimizer_passes(reg);
  G g = gpass::parse_text(text);
  reg.parse(pipeline)(g, ctx);
  gpass::verify(g);
  return g;
}

std::int64_t stat(const gpass::pass_context& ctx, const std::string& k) {
  auto s = ctx.statistics();
  auto it = s.find(k);
  return it == s.end() ? 0 : it->second;
}

/// `text` with edits applied: "from|to", several separated by ';' (each `from` must occur).
std::string edited(std::string text, std::string_view edits) {
  for (std::string_view rest = edits; !rest.empty();) {
    const auto semi = std::min(rest.find(';'), rest.size());
    const std::string_view one = rest.substr(0, semi);
    const auto bar = one.find('|');
    const auto at = text.find(one.substr(0, bar));
    REQUIRE(at != std::string::npos);
    text.replace(at, bar, one.substr(bar + 1));
    rest.remove_prefix(std::min(semi + 1, rest.size()));
  }
  return text;
}

std::size_t count_op(const G& g, std::string_view op) {
  std::size_t n = 0;
  for (auto v : g.nodes())
    if (g[v].op == op) ++n;
  return n;
}

/// Runs `a` and `b` on the same seeded random f32 inputs (unknown dims as 2) and returns the
/// largest difference of their outputs.
double max_output_diff(G a, G b) {
  gpass::exec::eigen_cpu cpu({.threads = 1});
  for (G* g : {&a, &b}) {
    gpass::pass_context ctx;
    gpass::infer_shapes(*g, ctx);
  }
  gpass::exec::plan<gpass::exec::eigen_cpu> pa(a, cpu), pb(b, cpu);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<gpass::exec::value> in, in2;
  for (const auto& t : pa.input_types()) {
    std::vector<std::int64_t> sizes;
    for (const auto& d : t.tensor().shape.dims()) sizes.push_back(d.is_known() ? d.value() : 2);
    gpass::tensor x(gpass::dtype::f32, sizes);
    for (auto& e : x.values<float>()) e = u(rng);
    in.emplace_back(x);
    in2.emplace_back(x.clone());
  }
  auto ya = pa.run(std::move(in)), yb = pb.run(std::move(in2));
  REQUIRE(ya.size() == yb.size());
  double worst = 0;
  for (std::size_t k = 0; k < ya.size(); ++k) {
    const auto &x = ya[k].tensor(), &y = yb[k].tensor();
    REQUIRE(x.sizes() == y.sizes());
    for (std::size_t i = 0; i < static_cast<std::size_t>(x.size()); ++i)
      worst = std::max(worst, static_cast<double>(std::abs(x.values<float>()[i] - y.values<float>()[i])));
  }
  return worst;
}
}  // namespace

TEST_CASE("passes.fold_constants.kernels_and_inferred_shapes") {
  gpass::pass_context ctx;
  G g = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[N,3,4])
  %a = Constant() {value = tensor<f32[2]> [1.0, 2.0]}
  %b = Constant() {value = tensor<f32[2]> [3.0, 4.0]}
  %s = Add(%a, %b)
  %sh = Shape(%x)
  %i = Constant() {value = tensor<i64[1]> [1]}
  %c = Gather(%sh, %i) {axis = 0}
  %r0:0 = return(%s, %c)
})",
                 "infer-values,fold-constants,dce", ctx);
  // Add of constants evaluated; Gather(Shape(x), 1) known from x's type although x is an input
  CHECK(gpass::print_text(g).find("%s = Constant() {value = tensor<f32[2]> [4.0, 6.0]}") != std::string::npos);
  CHECK(gpass::print_text(g).find("%c = Constant() {value = tensor<i64[1]> [3]}") != std::string::npos);
  CHECK(count_op(g, "Shape") == 0);
  CHECK(stat(ctx, "fold-constants.folded") == 2);  // s, c (Shape(x) is only partly known)
}

TEST_CASE("passes.fold_constants.symbolic_reshape_target") {
  // BERT's head split: Reshape(x, Concat(Gather(Shape(x), 0), Gather(Shape(x), 1), [4, 2]))
  const char* text = R"(graph {
  %x = arg() {index = 0} -> (f32[B,S,8])
  %sh = Shape(%x)
  %i0 = Constant() {value = tensor<i64[1]> [0]}
  %i1 = Constant() {value = tensor<i64[1]> [1]}
  %b = Gather(%sh, %i0) {axis = 0}
  %s = Gather(%sh, %i1) {axis = 0}
  %h = Constant() {value = tensor<i64[2]> [4, 2]}
  %t = Concat(%b, %s, %h) {axis = 0}
  %y = Reshape(%x, %t)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-values,fold-constants,dce", ctx);
  CHECK(stat(ctx, "fold-constants.symbolic-reshapes") == 1);
  CHECK(count_op(g, "Shape") == 0);
  CHECK(count_op(g, "Concat") == 0);
  CHECK(gpass::print_text(g).find("tensor<i64[4]> [0, 0, 4, 2]") != std::string::npos);
  CHECK(max_output_diff(gpass::parse_text(text), g) == 0.0);

  // one unknown element becomes -1; a symbol at another position of x stays unknown
  gpass::pass_context ctx2;
  G g2 = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[B,S,8])
  %sh = Shape(%x)
  %i1 = Constant() {value = tensor<i64[1]> [1]}
  %s = Gather(%sh, %i1) {axis = 0}
  %m = Constant() {value = tensor<i64[1]> [8]}
  %t = Concat(%s, %m) {axis = 0}
  %y = Reshape(%x, %t)
  %r0:0 = return(%y)
})",
                  "infer-values,fold-constants,dce", ctx2);
  CHECK(gpass::print_text(g2).find("tensor<i64[2]> [-1, 8]") != std::string::npos);

  // allowzero: a 0 would mean a zero dim, so nothing is rewritten
  gpass::pass_context ctx3;
  G g3 = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[B,8])
  %sh = Shape(%x)
  %y = Reshape(%x, %sh) {allowzero = 1}
  %r0:0 = return(%y)
})",
                  "infer-values,fold-constants", ctx3);
  CHECK(stat(ctx3, "fold-constants.symbolic-reshapes") == 0);
  CHECK(count_op(g3, "Shape") == 1);
}

TEST_CASE("passes.cse.commutative_chains_constants_and_outputs") {
  gpass::pass_context ctx;
  G g = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[2])
  %y = arg() {index = 1} -> (f32[2])
  %a = Add(%x, %y)
  %b = Add(%y, %x)
  %ra = Relu(%a)
  %rb = Relu(%b)
  %s = Sub(%x, %y)
  %t = Sub(%y, %x)
  %k1 = Constant() {value = tensor<f32[2]> [1.0, 2.0]}
  %k2 = Constant() {value = tensor<f32[2]> [1.0, 2.0]}
  %k3 = Constant() {value = tensor<f32[2]> [1.0, 3.0]}
  %m1 = Mul(%ra, %k1)
  %m2 = Mul(%rb, %k2)
  %m3 = Mul(%rb, %k3)
  %o1 = Add(%m1, %m2)
  %o2 = Add(%s, %t)
  %o3 = Add(%o1, %m3)
  %r0:0 = return(%o1, %o2, %o3)
})",
                 "cse,dce", ctx);
  // b, rb, k2, m2 merge; Sub is not commutative; k3 differs
  CHECK(stat(ctx, "cse.merged") == 4);
  CHECK(count_op(g, "Sub") == 2);
  CHECK(gpass::print_text(g).find("%o1 = Add(%m1, %m1)") != std::string::npos);
  CHECK(gpass::print_text(g).find("%m3 = Mul(%ra, %k3)") != std::string::npos);

  // a graph output keeps its node; random ops never merge
  gpass::pass_context ctx2;
  G g2 = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[2])
  %a = Relu(%x)
  %b = Relu(%x)
  %u1 = RandomUniform() {shape = [2]}
  %u2 = RandomUniform() {shape = [2]}
  %r0:0 = return(%a, %b, %u1, %u2)
})",
                  "cse", ctx2);
  CHECK(stat(ctx2, "cse.merged") == 0);
}

TEST_CASE("passes.cse.tensorflow_and_control_inputs") {
  gpass::pass_context ctx;
  G g = optimize(R"(graph {frontend = "tensorflow"} {
  %x = tf::Placeholder() {dtype = f32} -> (f32[2])
  %init:0 = tf::NoOp()
  %a = tf::AddV2(%x, %x) {T = f32}
  %b = tf::AddV2(%x, %x) {T = f32}
  %c = tf::AddV2(%x, %x, ^%init) {T = f32}
  %m = tf::Maximum(%a, %b) {T = f32}
  %n = tf::Maximum(%b, %c) {T = f32}
  %r0:0 = return(%m, %n)
})",
                 "cse", ctx);
  // a and b merge; c has a control input, so it stays
  CHECK(stat(ctx, "cse.merged") == 1);
  CHECK(gpass::print_text(g).find("%n = tf::Maximum(%a, %c)") != std::string::npos);
}

TEST_CASE("passes.simplify_inference.batch_norm_into_conv") {
  const char* text = R"(graph {
  %x = arg() {index = 0} -> (f32[N,3,5,5])
  %w = Constant() {value = tensor<f32[2,3,3,3]> [0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8, 0.9, 1.0, -1.1, 1.2, 0.1, 0.2, -0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 1.1, -1.2, 0.3, 0.2, 0.1, -0.1, 0.2, -0.3, 0.4, -0.5, 0.6, -0.7, 0.8, -0.9, 1.0, -1.1, 1.2, -0.1, 0.2, -0.3, 0.4, -0.5, 0.6, -0.7, 0.8, -0.9, 1.0, -1.1, 1.2, 0.5, 0.25, 0.125]}
  %bias = Constant() {value = tensor<f32[2]> [0.5, -0.5]}
  %c = Conv(%x, %w, %bias) {pads = [1, 1, 1, 1]}
  %s = Constant() {value = tensor<f32[2]> [1.5, 0.5]}
  %b = Constant() {value = tensor<f32[2]> [0.25, -1.0]}
  %m = Constant() {value = tensor<f32[2]> [0.1, -0.2]}
  %v = Constant() {value = tensor<f32[2]> [2.0, 0.5]}
  %bn = BatchNormalization(%c, %s, %b, %m, %v) {epsilon = 0.001}
  %y = Relu(%bn)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,simplify-inference,fold-constants,fold-batch-norm,dce", ctx);
  CHECK(count_op(g, "BatchNormalization") == 0);
  CHECK(count_op(g, "Mul") == 0);
  CHECK(count_op(g, "Add") == 0);
  CHECK(count_op(g, "Conv") == 1);
  CHECK(stat(ctx, "fold-batch-norm.scale-into-weights") == 1);
  CHECK(stat(ctx, "fold-batch-norm.shift-into-bias") == 1);
  CHECK(max_output_diff(gpass::parse_text(text), g) < 1e-5);

  // NNVM's simplify-inference alone: BN -> Mul/Add on the lowered parameters, same outputs
  gpass::pass_context ctx2;
  G lowered = optimize(text, "infer-shapes,simplify-inference", ctx2);
  CHECK(count_op(lowered, "BatchNormalization") == 0);
  CHECK(count_op(lowered, "Sqrt") == 1);
  CHECK(max_output_diff(gpass::parse_text(text), lowered) < 1e-5);

  // batch-norm=foldable leaves a batch norm that no Conv precedes
  gpass::pass_context ctx3;
  G kept = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[N,2,3])
  %s = Constant() {value = tensor<f32[2]> [1.5, 0.5]}
  %b = Constant() {value = tensor<f32[2]> [0.25, -1.0]}
  %m = Constant() {value = tensor<f32[2]> [0.1, -0.2]}
  %v = Constant() {value = tensor<f32[2]> [2.0, 0.5]}
  %bn = BatchNormalization(%x, %s, %b, %m, %v)
  %r0:0 = return(%bn)
})",
                    "infer-shapes,simplify-inference{batch-norm=foldable}", ctx3);
  CHECK(count_op(kept, "BatchNormalization") == 1);
}

TEST_CASE("passes.fold_batch_norm.gemm_and_matmul") {
  const char* text = R"(graph {
  %x = arg() {index = 0} -> (f32[N,3])
  %w = Constant() {value = tensor<f32[2,3]> [1.0, 2.0, 3.0, -1.0, 0.5, 0.25]}
  %c = Constant() {value = tensor<f32[2]> [0.5, -0.5]}
  %g = Gemm(%x, %w, %c) {transB = 1, beta = 2.0}
  %s = Constant() {value = tensor<f32[1,2]> [2.0, -3.0]}
  %gs = Mul(%g, %s)
  %t = Constant() {value = tensor<f32[2]> [1.0, 4.0]}
  %ga = Add(%gs, %t)
  %w2 = Constant() {value = tensor<f32[2,2]> [1.0, 2.0, 3.0, 4.0]}
  %mm = MatMul(%ga, %w2)
  %s2 = Constant() {value = tensor<f32[2]> [0.5, 2.0]}
  %ms = Mul(%s2, %mm)
  %r0:0 = return(%ms)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,fold-batch-norm,dce", ctx);
  CHECK(count_op(g, "Mul") == 0);
  CHECK(count_op(g, "Add") == 0);
  CHECK(stat(ctx, "fold-batch-norm.rewrites") == 3);
  CHECK(max_output_diff(gpass::parse_text(text), g) < 1e-5);

  // a Conv whose bias slot is present but empty gets the shift there
  const char* empty_bias = R"(graph {
  %x = arg() {index = 0} -> (f32[1,2,3,3])
  %w = Constant() {value = tensor<f32[2,2,1,1]> [1.0, -1.0, 0.5, 2.0]}
  %c = Conv(%x, %w, _)
  %t = Constant() {value = tensor<f32[1,2,1,1]> [0.5, -0.25]}
  %y = Add(%c, %t)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx3;
  G g3 = optimize(empty_bias, "infer-shapes,fold-batch-norm,dce", ctx3);
  CHECK(count_op(g3, "Add") == 0);
  CHECK(gpass::print_text(g3).find("%y = Conv(%x, %w, %c/bias)") != std::string::npos);
  CHECK(max_output_diff(gpass::parse_text(empty_bias), g3) < 1e-6);

  // a scale that varies along another axis than the channels stays
  gpass::pass_context ctx2;
  G g2 = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[3,2])
  %w = Constant() {value = tensor<f32[2,2]> [1.0, 2.0, 3.0, 4.0]}
  %mm = MatMul(%x, %w)
  %s = Constant() {value = tensor<f32[3,1]> [1.0, 2.0, 3.0]}
  %y = Mul(%mm, %s)
  %r0:0 = return(%y)
})",
                  "infer-shapes,fold-batch-norm", ctx2);
  CHECK(count_op(g2, "Mul") == 1);
}

TEST_CASE("passes.simplify_inference.tensorflow_fused_batch_norm") {
  gpass::pass_context ctx;
  G g = optimize(R"(graph {frontend = "tensorflow"} {
  %x = tf::Placeholder() {dtype = f32} -> (f32[1,4,4,2])
  %w = tf::Const() {dtype = f32, value = tensor<f32[1,1,2,2]> [1.0, 2.0, 3.0, 4.0]} -> (f32[1,1,2,2])
  %c = tf::Conv2D(%x, %w) {T = f32, strides = [1, 1, 1, 1], padding = "VALID"}
  %s = tf::Const() {dtype = f32, value = tensor<f32[2]> [1.5, 0.5]} -> (f32[2])
  %o = tf::Const() {dtype = f32, value = tensor<f32[2]> [0.25, -1.0]} -> (f32[2])
  %m = tf::Const() {dtype = f32, value = tensor<f32[2]> [0.1, -0.2]} -> (f32[2])
  %v = tf::Const() {dtype = f32, value = tensor<f32[2]> [2.0, 0.5]} -> (f32[2])
  %bn:6 = tf::FusedBatchNormV3(%c, %s, %o, %m, %v) {T = f32, U = f32, epsilon = 0.001, is_training = false}
  %r0:0 = return(%bn:0)
})",
                 "infer-shapes,simplify-inference,fold-constants,fold-batch-norm,dce", ctx);
  CHECK(count_op(g, "FusedBatchNormV3") == 0);
  CHECK(count_op(g, "Mul") == 0);     // the scale went into the filter
  CHECK(count_op(g, "AddV2") == 1);   // Conv2D has no bias: the shift stays
  CHECK(count_op(g, "Conv2D") == 1);
}

TEST_CASE("passes.cse.equal_symbolic_values") {
  // shape computations of the same symbolic batch (tf2onnx writes one per layer)
  gpass::pass_context ctx;
  G g = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[B,4])
  %t = Transpose(%x) {perm = [1, 0]}
  %y = Relu(%x)
  %s1 = Shape(%x)
  %s2 = Shape(%y)
  %s3 = Shape(%t)
  %i = Constant() {value = tensor<i64[1]> [0]}
  %b1 = Gather(%s1, %i) {axis = 0}
  %b2 = Gather(%s2, %i) {axis = 0}
  %j = Constant() {value = tensor<i64[1]> [1]}
  %b3 = Gather(%s3, %j) {axis = 0}
  %c = Concat(%b1, %b2, %b3) {axis = 0}
  %r0:0 = return(%c)
})",
                 "infer-values,cse,dce", ctx);
  // s2 = [B,4] merges into s1, b2 and b3 (both [B], from other shapes) into b1; the Relu and
  // the Transpose are then dead
  CHECK(stat(ctx, "cse.merged") == 3);
  CHECK(gpass::print_text(g).find("%c = Concat(%b1, %b1, %b1)") != std::string::npos);
  CHECK(count_op(g, "Transpose") + count_op(g, "Relu") == 0);

  // with inferred-values off, only structurally equal nodes merge
  gpass::pass_context ctx2;
  G g2 = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[B,4])
  %y = Relu(%x)
  %s1 = Shape(%x)
  %s2 = Shape(%y)
  %r0:0 = return(%s1, %s2)
})",
                  "infer-values,cse{inferred-values=false}", ctx2);
  CHECK(stat(ctx2, "cse.merged") == 0);
}

TEST_CASE("passes.eliminate_identities.pads_and_reshape_round_trips") {
  gpass::pass_context ctx;
  G g = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[2,3])
  %p = Constant() {value = tensor<i64[4]> [0, 0, 0, 0]}
  %pad = Pad(%x, %p)
  %ax = Constant() {value = tensor<i64[1]> [0]}
  %u = Unsqueeze(%pad, %ax)
  %sq = Squeeze(%u, %ax)
  %f = Flatten(%sq) {axis = 1}
  %y = Relu(%f)
  %p2 = Constant() {value = tensor<i64[4]> [0, 1, 0, 0]}
  %z = Pad(%y, %p2)
  %r0:0 = return(%z)
})",
                 "infer-shapes,eliminate-identities,dce", ctx);
  CHECK(stat(ctx, "eliminate-identities.pad-by-zero") == 1);
  CHECK(stat(ctx, "eliminate-identities.reshape-round-trip") == 1);
  CHECK(gpass::print_text(g).find("%y = Relu(%x)") != std::string::npos);  // Flatten of [2,3] is [2,3]
  CHECK(count_op(g, "Pad") == 1);                                        // pads 1: kept
}

TEST_CASE("passes.fuse_standard.pad_into_conv_and_matmul_add_to_gemm") {
  const char* text = R"(graph {
  %x = arg() {index = 0} -> (f32[1,2,4,4])
  %p = Constant() {value = tensor<i64[8]> [0, 0, 1, 2, 0, 0, 1, 0]}
  %pad = Pad(%x, %p)
  %w = Constant() {value = tensor<f32[1,2,2,2]> [1.0, -1.0, 0.5, 2.0, -0.5, 1.5, 0.25, -2.0]}
  %c = Conv(%pad, %w) {pads = [0, 0, 0, 0]}
  %sh = Constant() {value = tensor<i64[2]> [1, -1]}
  %flat = Reshape(%c, %sh)
  %m = Constant() {value = tensor<f32[25,3]> [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 0.1, 0.2, 0.3]}
  %mm = MatMul(%flat, %m)
  %b = Constant() {value = tensor<f32[3]> [1.0, 2.0, 3.0]}
  %y = Add(%mm, %b)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,fuse-standard,dce", ctx);
  CHECK(stat(ctx, "fuse-standard.pad-into-conv") == 1);
  CHECK(stat(ctx, "fuse-standard.matmul-add-to-gemm") == 1);
  CHECK(count_op(g, "Pad") == 0);
  CHECK(gpass::print_text(g).find("%y = Gemm(%flat, %m, %b)") != std::string::npos);  // the Add's name
  CHECK(gpass::print_text(g).find("pads = [1, 2, 1, 0]") != std::string::npos);
  CHECK(max_output_diff(gpass::parse_text(text), g) < 1e-5);
}

TEST_CASE("passes.fuse_standard.pad_into_max_pool") {
  // Keras' ResNet: Relu, ZeroPadding2D, MaxPool 3x3/2: the pool pads itself (the zeros never
  // beat a value >= 0 in a window that holds one)
  const char* text = R"(graph {
  %x = arg() {index = 0} -> (f32[2,3,7,6])
  %lo = Constant() {value = tensor<f32[]> [0.0]}
  %hi = Constant() {value = tensor<f32[]> [6.0]}
  %neg = Constant() {value = tensor<f32[]> [-1.0]}
  %a = Relu(%x)
  %p = Constant() {value = tensor<i64[8]> [0, 0, 1, 1, 0, 0, 1, 2]}
  %pad = Pad(%a, %p)
  %y = MaxPool(%pad) {kernel_shape = [3, 3], strides = [2, 2]}
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,fuse-standard,dce", ctx);
  CHECK(stat(ctx, "fuse-standard.pad-into-max-pool") == 1);
  CHECK(count_op(g, "Pad") == 0);
  CHECK(gpass::print_text(g).find("%y = MaxPool(%a) {kernel_shape = [3, 3], pads = [1, 1, 1, 2], strides = [2, 2]}") !=
        std::string::npos);
  CHECK(max_output_diff(gpass::parse_text(text), g) == 0.0);
  auto rewrites_with = [&](std::string_view from, std::string_view to) {
    std::string edited = text;
    edited.replace(edited.find(from), from.size(), to);
    gpass::pass_context c;
    G h = optimize(edited, "infer-shapes,fuse-standard,dce", c);
    CHECK(max_output_diff(gpass::parse_text(edited), h) == 0.0);
    return stat(c, "fuse-standard.pad-into-max-pool");
  };
  CHECK(rewrites_with("Relu(%x)", "Clip(%x, %lo, %hi)") == 1);  // ReLU6
  CHECK(rewrites_with("Relu(%x)", "Clip(%x, %hi, %hi)") == 1);
  CHECK(rewrites_with("Relu(%x)", "Sigmoid(%x)") == 0);  // not known to be >= 0 here
  CHECK(rewrites_with("Relu(%x)", "Clip(%x, %neg, %hi)") == 0);
  CHECK(rewrites_with("[0, 0, 1, 1, 0, 0, 1, 2]", "[0, 0, 3, 1, 0, 0, 1, 2]") == 0);  // a window of pads only
  CHECK(rewrites_with("strides = [2, 2]", "strides = [2, 2], ceil_mode = 1") == 0);
  CHECK(rewrites_with("[0, 0, 1, 1, 0, 0, 1, 2]", "[0, 1, 1, 1, 0, 0, 1, 2]") == 0);  // pads a channel
}

TEST_CASE("passes.fuse_standard.batched_matmul_add_to_gemm") {
  // a Linear layer over a batch of sequences (PyTorch's export): MatMul of rank 3 with a 2-D
  // weight, then the bias; static shapes: Reshape to rows, Gemm with the bias, Reshape back
  const char* text = R"(graph {opset_import = [":17"]} {
  %x = arg() {index = 0} -> (f32[2,3,2])
  %w = Constant() {value = tensor<f32[2,4]> [1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 0.25, 2.0]}
  %mm = MatMul(%x, %w)
  %b = Constant() {value = tensor<f32[4]> [0.1, 0.2, 0.3, 0.4]}
  %y = Add(%b, %mm)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,fuse-standard,dce", ctx);
  CHECK(stat(ctx, "fuse-standard.matmul-add-to-gemm") == 1);
  CHECK(count_op(g, "Add") + count_op(g, "MatMul") == 0);
  CHECK(count_op(g, "Gemm") == 1);
  CHECK(count_op(g, "Reshape") == 2);
  CHECK(gpass::print_text(g).find("%y = Reshape(") != std::string::npos);  // the graph output keeps its name
  CHECK(max_output_diff(gpass::parse_text(text), g) < 1e-5);
  // a symbolic batch, or a bias that is not a vector of N: left alone
  auto rewrites_with = [&](std::string_view from, std::string_view to) {
    std::string edited = text;
    edited.replace(edited.find(from), from.size(), to);
    gpass::pass_context c;
    (void)optimize(edited, "infer-shapes,fuse-standard", c);
    return stat(c, "fuse-standard.matmul-add-to-gemm");
  };
  CHECK(rewrites_with("f32[2,3,2]", "f32[B,3,2]") == 0);
  CHECK(rewrites_with("tensor<f32[4]>", "tensor<f32[1,4]>") == 0);
}

TEST_CASE("passes.fuse_standard.layer_norm_forms") {
  // PyTorch's export: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add
  const char* torch = R"(graph {opset_import = [":17"]} {
  %x = arg() {index = 0} -> (f32[N,3,4])
  %m = ReduceMean(%x) {axes = [-1]}
  %d = Sub(%x, %m)
  %two = Constant() {value = tensor<f32[]> [2.0]}
  %p = Pow(%d, %two)
  %v = ReduceMean(%p) {axes = [-1]}
  %e = Constant() {value = tensor<f32[]> [0.001]}
  %ve = Add(%v, %e)
  %sd = Sqrt(%ve)
  %n = Div(%d, %sd)
  %g = Constant() {value = tensor<f32[4]> [1.0, 2.0, 0.5, -1.0]}
  %b = Constant() {value = tensor<f32[4]> [0.0, 0.5, 1.0, -0.5]}
  %y1 = Mul(%n, %g)
  %y = Add(%y1, %b)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx;
  G g = optimize(torch, "infer-shapes,fuse-standard,dce", ctx);
  CHECK(stat(ctx, "fuse-standard.layer-norm") == 1);
  CHECK(count_op(g, "LayerNormalization") == 1);
  CHECK(count_op(g, "ReduceMean") + count_op(g, "Sqrt") + count_op(g, "Div") + count_op(g, "Pow") == 0);
  CHECK(gpass::print_text(g).find("%y = LayerNormalization(%x, %y/scale, %y/bias) {axis = -1, epsilon = 0.001") !=
        std::string::npos);
  CHECK(max_output_diff(gpass::parse_text(torch), g) < 1e-5);

  // Keras through tf2onnx: GlobalAveragePool means, Reciprocal, the shift as beta - mean*m
  const char* keras = R"(graph {opset_import = [":17"]} {
  %x = arg() {index = 0} -> (f32[N,3,4])
  %m = GlobalAveragePool(%x)
  %d = Sub(%x, %m)
  %sq = Mul(%d, %d)
  %v = GlobalAveragePool(%sq)
  %e = Constant() {value = tensor<f32[]> [0.001]}
  %ve = Add(%v, %e)
  %sd = Sqrt(%ve)
  %inv = Reciprocal(%sd)
  %g = Constant() {value = tensor<f32[4]> [1.0, 2.0, 0.5, -1.0]}
  %mm = Mul(%inv, %g)
  %y1 = Mul(%x, %mm)
  %m2 = Mul(%m, %mm)
  %b = Constant() {value = tensor<f32[4]> [0.0, 0.5, 1.0, -0.5]}
  %sh = Sub(%b, %m2)
  %y = Add(%y1, %sh)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx2;
  G g2 = optimize(keras, "infer-shapes,fuse-standard,dce", ctx2);
  CHECK(stat(ctx2, "fuse-standard.layer-norm") == 1);
  CHECK(count_op(g2, "LayerNormalization") == 1);
  CHECK(g2.num_nodes() == 5);  // x, LayerNormalization, scale, bias, return
  CHECK(max_output_diff(gpass::parse_text(keras), g2) < 1e-5);

  // an inner value read elsewhere (the mean is also an output): no fusion
  std::string leaky = torch;
  leaky.replace(leaky.find("return(%y)"), 10, "return(%y, %m)");
  gpass::pass_context ctx3;
  G g3 = optimize(leaky, "infer-shapes,fuse-standard", ctx3);
  CHECK(stat(ctx3, "fuse-standard.layer-norm") == 0);
  // before opset 17 there is no LayerNormalization
  std::string old = torch;
  old.replace(old.find("\":17\""), 5, "\":13\"");
  gpass::pass_context ctx4;
  G g4 = optimize(old, "infer-shapes,fuse-standard", ctx4);
  CHECK(count_op(g4, "LayerNormalization") == 0);
}

TEST_CASE("passes.fuse_standard.bias_before_reshape_then_gemm") {
  // tf2onnx's Tensordot: Reshape to 2-D, MatMul, Reshape back, Add the bias
  const char* text = R"(graph {
  %x = arg() {index = 0} -> (f32[B,3,2])
  %s2 = Constant() {value = tensor<i64[2]> [-1, 2]}
  %r2 = Reshape(%x, %s2)
  %w = Constant() {value = tensor<f32[2,4]> [1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 0.25, 2.0]}
  %mm = MatMul(%r2, %w)
  %s3 = Constant() {value = tensor<i64[3]> [-1, 3, 4]}
  %r3 = Reshape(%mm, %s3)
  %b = Constant() {value = tensor<f32[1,1,4]> [0.1, 0.2, 0.3, 0.4]}
  %y = Add(%r3, %b)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,fuse-standard,dce", ctx);
  CHECK(stat(ctx, "fuse-standard.bias-before-reshape") == 1);
  CHECK(stat(ctx, "fuse-standard.matmul-add-to-gemm") == 1);
  CHECK(count_op(g, "Add") + count_op(g, "MatMul") == 0);
  CHECK(gpass::print_text(g).find("%y = Reshape(") != std::string::npos);  // the graph output keeps its name
  CHECK(max_output_diff(gpass::parse_text(text), g) < 1e-5);

  // a Reshape that moves the last axis: the bias stays where it is
  gpass::pass_context ctx2;
  G g2 = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[2,6])
  %s = Constant() {value = tensor<i64[2]> [3, 4]}
  %r = Reshape(%x, %s)
  %b = Constant() {value = tensor<f32[4]> [0.1, 0.2, 0.3, 0.4]}
  %y = Add(%r, %b)
  %r0:0 = return(%y)
})",
                  "infer-shapes,fuse-standard", ctx2);
  CHECK(stat(ctx2, "fuse-standard.bias-before-reshape") == 0);
}

TEST_CASE("passes.fuse_epilogues.conv_add_activation_and_gemm") {
  const char* text = R"(graph {
  %x = arg() {index = 0} -> (f32[1,2,3,3])
  %r = arg() {index = 1} -> (f32[1,2,3,3])
  %w = Constant() {value = tensor<f32[2,2,1,1]> [1.0, -1.0, 0.5, 2.0]}
  %c = Conv(%x, %w)
  %s = Add(%c, %r)
  %a = Relu(%s)
  %w2 = Constant() {value = tensor<f32[2,2,1,1]> [0.5, 1.0, -1.0, 0.25]}
  %bb = Constant() {value = tensor<f32[2]> [0.1, -0.1]}
  %c2 = Conv(%a, %w2, %bb)
  %lo = Constant() {value = tensor<f32[]> [0.0]}
  %hi = Constant() {value = tensor<f32[]> [0.5]}
  %a2 = Clip(%c2, %lo, %hi)
  %sh = Constant() {value = tensor<i64[2]> [1, -1]}
  %f = Reshape(%a2, %sh)
  %gw = Constant() {value = tensor<f32[18,2]> [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0]}
  %gm = Gemm(%f, %gw)
  %y = Sigmoid(%gm)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,fuse-epilogues,dce", ctx);
  CHECK(stat(ctx, "fuse-epilogues.conv-add") == 1);
  CHECK(stat(ctx, "fuse-epilogues.activation") == 3);
  CHECK(count_op(g, "FusedConv") == 2);
  CHECK(count_op(g, "FusedGemm") == 1);
  CHECK(count_op(g, "Relu") + count_op(g, "Clip") + count_op(g, "Sigmoid") + count_op(g, "Add") == 0);
  const std::string out = gpass::print_text(g);
  CHECK(out.find("%a = gpass::FusedConv(%x, %w, _, %r) {activation = \"Relu\"}") != std::string::npos);
  CHECK(out.find("activation_params = [0.0, 0.5]") != std::string::npos);
  CHECK(max_output_diff(gpass::parse_text(text), g) < 1e-5);  // the fused kernels run
}

/// `tensor<f32[sizes]> [...]` with deterministic values in [-1, 1) (the seed varies them).
std::string f32_tensor(const std::vector<std::int64_t>& sizes, unsigned seed) {
  std::int64_t n = 1;
  std::string s = "tensor<f32[";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    n *= sizes[i];
    s += (i ? "," : "") + std::to_string(sizes[i]);
  }
  s += "]> [";
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-8, 7);
  for (std::int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(u(rng) / 8.0);
  return s + "]";
}

TEST_CASE("passes.tf_layout.convolutions_in_nchw_transposes_cancelled") {
  // A Keras-like NHWC block: Conv2D SAME stride 2 + BiasAdd + per-channel Mul + Relu6,
  // depthwise (multiplier 2) + Relu, a 1x1 Conv2D, a residual AddV2, Pad, a dilated EXPLICIT
  // Conv2D, then MaxPool (made NCHW) and a global Mean (reduces in NCHW).
  const std::string text = R"(graph {frontend = "tensorflow"} {
  %x = arg() {index = 0} -> (f32[1,9,8,3])
  %w = tf::Const() {dtype = f32, value = )" + f32_tensor({3, 3, 3, 4}, 1) + R"(}
  %c = tf::Conv2D(%x, %w) {T = f32, strides = [1, 2, 2, 1], padding = "SAME", data_format = "NHWC", dilations = [1, 1, 1, 1]}
  %b = tf::Const() {dtype = f32, value = )" + f32_tensor({4}, 2) + R"(}
  %cb = tf::BiasAdd(%c, %b) {T = f32, data_format = "NHWC"}
  %s = tf::Const() {dtype = f32, value = tensor<f32[4]> [1.5, 0.5, -2.0, 1.0]}
  %m = tf::Mul(%cb, %s) {T = f32}
  %r = tf::Relu6(%m) {T = f32}
  %dw = tf::Const() {dtype = f32, value = )" + f32_tensor({3, 3, 4, 2}, 3) + R"(}
  %d = tf::DepthwiseConv2dNative(%r, %dw) {T = f32, strides = [1, 1, 1, 1], padding = "SAME", data_format = "NHWC", dilations = [1, 1, 1, 1]}
  %dr = tf::Relu(%d) {T = f32}
  %pw = tf::Const() {dtype = f32, value = )" + f32_tensor({1, 1, 8, 4}, 4) + R"(}
  %p = tf::Conv2D(%dr, %pw) {T = f32, strides = [1, 1, 1, 1], padding = "VALID", data_format = "NHWC", dilations = [1, 1, 1, 1]}
  %sum = tf::AddV2(%p, %r) {T = f32}
  %pp = tf::Const() {dtype = i32, value = tensor<i32[4,2]> [0, 0, 1, 0, 0, 1, 0, 0]}
  %pad = tf::Pad(%sum, %pp) {T = f32, Tpaddings = i32}
  %qw = tf::Const() {dtype = f32, value = )" + f32_tensor({2, 2, 4, 3}, 5) + R"(}
  %q = tf::Conv2D(%pad, %qw) {T = f32, strides = [1, 1, 1, 1], padding = "EXPLICIT", explicit_paddings = [0, 0, 1, 0, 0, 1, 0, 0], data_format = "NHWC", dilations = [1, 2, 1, 1]}
  %mx = tf::MaxPool(%q) {T = f32, ksize = [1, 2, 2, 1], strides = [1, 2, 2, 1], padding = "VALID", data_format = "NHWC"}
  %ax = tf::Const() {dtype = i32, value = tensor<i32[2]> [1, 2]}
  %mean = tf::Mean(%q, %ax) {T = f32, Tidx = i32, keep_dims = false}
  %r0:0 = return(%mean, %mx)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,tf-layout,dce", ctx);
  CHECK(count_op(g, "Conv2D") + count_op(g, "DepthwiseConv2dNative") == 0);
  CHECK(count_op(g, "FusedConv") == 4);
  // the graph input's and the MaxPool's result (a graph output, NHWC); the rest cancelled
  CHECK(count_op(g, "Transpose") == 2);
  CHECK(stat(ctx, "tf-layout.sink-pool") == 1);
  CHECK(count_op(g, "BiasAdd") + count_op(g, "Mul") + count_op(g, "Relu6") + count_op(g, "Relu") +
            count_op(g, "AddV2") + count_op(g, "Pad") == 0);
  CHECK(stat(ctx, "tf-layout.conv-to-nchw") == 4);
  CHECK(stat(ctx, "tf-layout.residual-into-conv") == 1);
  CHECK(stat(ctx, "tf-layout.pad-into-conv") == 1);
  CHECK(stat(ctx, "tf-layout.activation-into-conv") == 2);
  const std::string out = gpass::print_text(g);
  CHECK(out.find("auto_pad = \"SAME_UPPER\"") != std::string::npos);
  CHECK(out.find("group = 4") != std::string::npos);               // the depthwise one
  CHECK(out.find("dilations = [2, 1]") != std::string::npos);
  CHECK(out.find("activation = \"Clip\"") != std::string::npos);
  CHECK(max_output_diff(gpass::parse_text(text), g) < 1e-4);
  // the O3 level runs it on TensorFlow graphs, then nchwc-layout blocks three of the four
  // (not the depthwise one with multiplier 2: 4 groups of one input and two output channels)
  gpass::pass_context ctx3;
  G g3 = optimize(text, "O3", ctx3);
  CHECK(stat(ctx3, "tf-layout.conv-to-nchw") == 4);
  CHECK(count_op(g3, "NchwcConv") == 3);
  CHECK(count_op(g3, "FusedConv") == 1);
  CHECK(count_op(g3, "Conv2D") + count_op(g3, "DepthwiseConv2dNative") == 0);
  CHECK(max_output_diff(gpass::parse_text(text), g3) < 1e-4);
}

TEST_CASE("passes.tf_layout.batch_norm_after_a_biased_conv") {
  // Keras' Conv2D(use_bias=True) + BatchNormalization + ReLU: the batch norm reads a BiasAdd,
  // which -O2 does not fold it through; tf-layout lowers it to constants and folds all three
  const std::string text = R"(graph {frontend = "tensorflow"} {
  %x = arg() {index = 0} -> (f32[2,6,5,3])
  %w = tf::Const() {dtype = f32, value = )" + f32_tensor({3, 3, 3, 4}, 11) + R"(}
  %c = tf::Conv2D(%x, %w) {T = f32, strides = [1, 1, 1, 1], padding = "SAME", data_format = "NHWC"}
  %b = tf::Const() {dtype = f32, value = )" + f32_tensor({4}, 12) + R"(}
  %cb = tf::BiasAdd(%c, %b) {T = f32, data_format = "NHWC"}
  %sc = tf::Const() {dtype = f32, value = tensor<f32[4]> [1.5, 0.5, 2.0, 1.0]}
  %of = tf::Const() {dtype = f32, value = tensor<f32[4]> [0.25, -1.0, 0.5, 0.0]}
  %mn = tf::Const() {dtype = f32, value = tensor<f32[4]> [0.1, -0.2, 0.3, 0.0]}
  %vr = tf::Const() {dtype = f32, value = tensor<f32[4]> [2.0, 0.5, 1.0, 0.25]}
  %bn:6 = tf::FusedBatchNormV3(%cb, %sc, %of, %mn, %vr) {T = f32, U = f32, epsilon = 0.001, is_training = false, data_format = "NHWC"}
  %r = tf::Relu(%bn:0) {T = f32}
  %r0:0 = return(%r)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,tf-layout,dce", ctx);
  CHECK(stat(ctx, "tf-layout.batch-norm-to-scale-shift") == 1);
  CHECK(count_op(g, "FusedConv") == 1);
  CHECK(count_op(g, "FusedBatchNormV3") + count_op(g, "BiasAdd") + count_op(g, "Mul") + count_op(g, "AddV2") +
            count_op(g, "Relu") == 0);
  CHECK(count_op(g, "Transpose") == 2);  // the input's and the output's (a graph output)
  CHECK(max_output_diff(gpass::parse_text(text), g) < 1e-4);
}

TEST_CASE("passes.tf_layout.declines") {
  // a filter that is not constant, unknown input channels, an NHWC value read by a Reshape
  gpass::pass_context ctx;
  G g = optimize(R"(graph {frontend = "tensorflow"} {
  %x = arg() {index = 0} -> (f32[1,4,4,2])
  %w = arg() {index = 1} -> (f32[1,1,2,2])
  %c = tf::Conv2D(%x, %w) {T = f32, strides = [1, 1, 1, 1], padding = "VALID"}
  %u = arg() {index = 2} -> (f32[1,4,4,?])
  %k = tf::Const() {dtype = f32, value = tensor<f32[1,1,2,2]> [1.0, 2.0, 3.0, 4.0]}
  %c2 = tf::Conv2D(%u, %k) {T = f32, strides = [1, 1, 1, 1], padding = "VALID"}
  %c3 = tf::Conv2D(%x, %k) {T = f32, strides = [1, 1, 1, 1], padding = "VALID"}
  %sh = tf::Const() {dtype = i32, value = tensor<i32[2]> [1, 32]}
  %f = tf::Reshape(%c3, %sh) {T = f32, Tshape = i32}
  %r0:0 = return(%c, %c2, %f)
})",
                 "infer-shapes,tf-layout,dce", ctx);
  CHECK(count_op(g, "Conv2D") == 2);
  CHECK(count_op(g, "FusedConv") == 1);
  CHECK(count_op(g, "Transpose") == 2);  // around the converted one: the Reshape reads NHWC
}

TEST_CASE("passes.fuse_epilogues.gelu_forms") {
  const char* torch = R"(graph {
  %x = arg() {index = 0} -> (f32[2,5])
  %r2 = Constant() {value = tensor<f32[]> [1.4142135]}
  %t = Div(%x, %r2)
  %e = Erf(%t)
  %one = Constant() {value = tensor<f32[]> [1.0]}
  %a = Add(%e, %one)
  %m = Mul(%x, %a)
  %h = Constant() {value = tensor<f32[]> [0.5]}
  %y = Mul(%m, %h)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx;
  G g = optimize(torch, "infer-shapes,fuse-epilogues,dce", ctx);
  CHECK(stat(ctx, "fuse-epilogues.gelu") == 1);
  CHECK(gpass::print_text(g).find("%y = gpass::Gelu(%x)") != std::string::npos);
  CHECK(g.num_nodes() == 3);
  CHECK(max_output_diff(gpass::parse_text(torch), g) < 1e-5);

  const char* keras = R"(graph {
  %x = arg() {index = 0} -> (f32[2,5])
  %h = Constant() {value = tensor<f32[]> [0.5]}
  %half = Mul(%x, %h)
  %k = Constant() {value = tensor<f32[]> [0.70710677]}
  %t = Mul(%x, %k)
  %e = Erf(%t)
  %one = Constant() {value = tensor<f32[]> [1.0]}
  %a = Add(%one, %e)
  %y = Mul(%half, %a)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx2;
  G g2 = optimize(keras, "infer-shapes,fuse-epilogues,dce", ctx2);
  CHECK(stat(ctx2, "fuse-epilogues.gelu") == 1);
  CHECK(max_output_diff(gpass::parse_text(keras), g2) < 1e-5);

  // another constant than 1/sqrt(2): not a GELU
  std::string other = keras;
  other.replace(other.find("0.70710677"), 10, "0.80000000");
  gpass::pass_context ctx3;
  G g3 = optimize(other, "infer-shapes,fuse-epilogues", ctx3);
  CHECK(count_op(g3, "Erf") == 1);
}

TEST_CASE("passes.fuse_epilogues.skip_layer_norm") {
  // two blocks: post-norm (the sum read by the LayerNormalization only), then pre-norm (the
  // residual stream %s2 also read by the next Add, through output 3)
  const char* text = R"(graph {opset_import = [":17"]} {
  %x = arg() {index = 0} -> (f32[N,3,4])
  %h = arg() {index = 1} -> (f32[N,3,4])
  %g = Constant() {value = tensor<f32[4]> [1.0, 2.0, 0.5, -1.0]}
  %b = Constant() {value = tensor<f32[4]> [0.0, 0.5, 1.0, -0.5]}
  %s1 = Add(%x, %h)
  %n1 = LayerNormalization(%s1, %g, %b) {axis = -1, epsilon = 0.001}
  %t = Tanh(%n1)
  %s2 = Add(%n1, %t)
  %n2 = LayerNormalization(%s2, %g) {axis = 2}
  %u = Sigmoid(%n2)
  %y = Add(%s2, %u)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,fuse-epilogues,dce", ctx);
  CHECK(stat(ctx, "fuse-epilogues.skip-layer-norm") == 2);
  CHECK(count_op(g, "LayerNormalization") == 0);
  CHECK(count_op(g, "SkipLayerNormalization") == 2);
  CHECK(count_op(g, "Add") == 1);
  const std::string out = gpass::print_text(g);
  CHECK(out.find("%n1 = com.microsoft::SkipLayerNormalization(%x, %h, %g, %b) {epsilon = 0.001") != std::string::npos);
  CHECK(out.find("%n2:4 = com.microsoft::SkipLayerNormalization(%n1, %t, %g) {epsilon = 1e-05}") != std::string::npos);
  CHECK(out.find("%y = Add(%n2:3, %u)") != std::string::npos);
  CHECK(max_output_diff(gpass::parse_text(text), g) < 1e-5);  // ONNX Runtime's op, gpass's kernel

  // a skip that broadcasts over the batch: the kernel broadcasts it as the Add did
  {
    const std::string b = edited(text, "%h = arg() {index = 1} -> (f32[N,3,4])|%h = arg() {index = 1} -> (f32[3,4])");
    gpass::pass_context cb;
    G gb = optimize(b, "infer-shapes,fuse-epilogues,dce", cb);
    CHECK(stat(cb, "fuse-epilogues.skip-layer-norm") == 2);
    CHECK(max_output_diff(gpass::parse_text(b), gb) < 1e-5);
  }

  // declined: the sum is a graph output; the statistics are read; not the last axis
  for (std::string_view change : {"%r0:0 = return(%y)|%r0:0 = return(%y, %s1)",
                                  "%n2 = LayerNormalization|%n2:3 = LayerNormalization;%u = Sigmoid(%n2)|%u = Sigmoid(%n2:1)",
                                  "{axis = 2}|{axis = 1}"}) {
    const std::string other = edited(text, change);
    gpass::pass_context c2;
    G g2 = optimize(other, "infer-shapes,fuse-epilogues,dce", c2);
    CHECK(stat(c2, "fuse-epilogues.skip-layer-norm") == 1);
    CHECK(count_op(g2, "LayerNormalization") == 1);
    CHECK(max_output_diff(gpass::parse_text(other), g2) < 1e-5);
  }
}

TEST_CASE("passes.fuse_epilogues.attention") {
  // BERT's attention core: K comes as [N, S, heads, D] and is transposed to [N, heads, D, S];
  // the mask bias [N, 1, 1, S] is added on the left
  const char* text = R"(graph {opset_import = [":17"]} {
  %q = arg() {index = 0} -> (f32[N,2,5,4])
  %k = arg() {index = 1} -> (f32[N,5,2,4])
  %v = arg() {index = 2} -> (f32[N,2,5,3])
  %m = arg() {index = 3} -> (f32[N,1,1,5])
  %kt = Transpose(%k) {perm = [0, 2, 3, 1]}
  %s = MatMul(%q, %kt)
  %c = Constant() {value = tensor<f32[]> [0.5]}
  %z = Mul(%s, %c)
  %a = Add(%m, %z)
  %p = Softmax(%a) {axis = -1}
  %y = MatMul(%p, %v)
  %r0:0 = return(%y)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,fuse-epilogues,dce", ctx);
  CHECK(stat(ctx, "fuse-epilogues.attention") == 1);
  CHECK(count_op(g, "Softmax") + count_op(g, "MatMul") + count_op(g, "Add") + count_op(g, "Mul") == 0);
  CHECK(count_op(g, "Transpose") == 1);  // [0, 2, 3, 1] then the swap: [0, 2, 1, 3]
  const std::string out = gpass::print_text(g);
  CHECK(out.find("%y = gpass::ScaledDotProductAttention(%q, %y/key, %v, %m) {scale = 0.5}") != std::string::npos);
  CHECK(out.find("%y/key = Transpose(%k) {perm = [0, 2, 1, 3]}") != std::string::npos);
  CHECK(max_output_diff(gpass::parse_text(text), g) < 1e-5);

  // Div by a constant, no bias, K^T given: a Transpose swaps its last two axes; K given as
  // [N, 2, 5, 4] through Transpose [0, 1, 3, 2]: no Transpose left
  for (bool given : {false, true}) {
    const std::string other =
        edited(text, given ? "f32[N,5,2,4]|f32[N,2,4,5];%kt = Transpose(%k) {perm = [0, 2, 3, 1]}|%kt = Sigmoid(%k)"
                           : "f32[N,5,2,4]|f32[N,2,5,4];%kt = Transpose(%k) {perm = [0, 2, 3, 1]}|%kt = Transpose(%k) {perm = [0, 1, 3, 2]}");
    const std::string div = edited(other, "%z = Mul(%s, %c)|%z = Div(%s, %c);%a = Add(%m, %z)|%a = Identity(%z)");
    gpass::pass_context c2;
    G g2 = optimize(div, "infer-shapes,eliminate-identities,fuse-epilogues,dce", c2);
    CHECK(stat(c2, "fuse-epilogues.attention") == 1);
    CHECK(gpass::print_text(g2).find("{scale = 2.0}") != std::string::npos);
    CHECK(count_op(g2, "Transpose") == (given ? 1u : 0u));
    CHECK(max_output_diff(gpass::parse_text(div), g2) < 1e-5);
  }

  // a bias larger than the scores in batch and query rows (one query row, batch 1): the
  // fused op broadcasts Q, K and V as the Add and the MatMul did
  {
    const std::string up = edited(text, "f32[N,2,5,4]|f32[1,2,1,4];f32[N,5,2,4]|f32[1,5,2,4];f32[N,2,5,3]|f32[1,2,5,3];f32[N,1,1,5]|f32[3,1,6,5]");
    gpass::pass_context c4;
    G g4 = optimize(up, "infer-shapes,fuse-epilogues,dce", c4);
    CHECK(stat(c4, "fuse-epilogues.attention") == 1);
    CHECK(gpass::print_text(g4).find("-> (f32[3,2,6,3])") != std::string::npos);
    CHECK(max_output_diff(gpass::parse_text(up), g4) < 1e-5);
  }

  // declined: softmax over another axis; the probabilities read elsewhere; a bias of rank 5
  for (std::string_view change : {"{axis = -1}|{axis = 2}", "%r0:0 = return(%y)|%r0:0 = return(%y, %p)",
                                  "f32[N,1,1,5]|f32[3,N,2,5,5]"}) {
    const std::string other = edited(text, change);
    gpass::pass_context c3;
    G g3 = optimize(other, "infer-shapes,fuse-epilogues,dce", c3);
    CHECK(stat(c3, "fuse-epilogues.attention") == 0);
    CHECK(count_op(g3, "Softmax") == 1);
  }
}

TEST_CASE("passes.fuse_elementwise.groups_programs_and_broadcasting") {
  // one tree of five ops (x read twice, a [N,3,1] operand and a bias vector broadcast);
  // %y is read twice, so the Exp after it stays alone
  const char* text = R"(graph {opset_import = [":17"]} {
  %x = arg() {index = 0} -> (f32[N,3,4])
  %w = arg() {index = 1} -> (f32[N,3,1])
  %b = Constant() {value = tensor<f32[4]> [0.5, -0.5, 1.0, 0.0]}
  %m = Mul(%x, %w)
  %a = Add(%m, %b)
  %t = Tanh(%a)
  %s = Sigmoid(%x)
  %y = Mul(%t, %s)
  %e = Exp(%y)
  %r0:0 = return(%y, %e)
})";
  gpass::pass_context ctx;
  G g = optimize(text, "infer-shapes,fuse-elementwise,dce", ctx);
  CHECK(stat(ctx, "fuse-elementwise.elementwise-group") == 1);
  CHECK(count_op(g, "FusedElementwise") == 1);
  CHECK(count_op(g, "Exp") == 1);
  CHECK(count_op(g, "Tanh") + count_op(g, "Sigmoid") + count_op(g, "Mul") + count_op(g, "Add") == 0);
  const std::string out = gpass::print_text(g);
  CHECK(out.find(R"(%y = gpass::FusedElementwise(%x, %w, %b) {program = ["Mul x0 x1", "Add s0 x2", "Tanh s1", "Sigmoid x0", "Mul s2 s3"]})") !=
        std::string::npos);
  CHECK(max_output_diff(gpass::parse_text(text), g) < 1e-6);
  // running it again changes nothing
  gpass::pass_context ctx2;
  auto& reg = gpass::pass_registry<G>::global();
  reg.parse("fuse-elementwise")(g, ctx2);
  CHECK(stat(ctx2, "fuse-elementwise.elementwise-group") == 0);

  // a program that names an op it may not use, or reads a later step: clear errors
  for (std::string_view program : {R"(["Foo x0"])", R"(["Relu s1", "Neg x0"])", R"(["Add x0 x3"])"}) {
    const std::string bad = std::string(R"(graph {
  %x = arg() {index = 0} -> (f32[2])
  %y = gpass::FusedElementwise(%x) {program = )") + std::string(program) + R"(}
  %r0:0 = return(%y)
})";
    G b = gpass::parse_text(bad);
    gpass::pass_context c3;
    std::string message;
    try {
      reg.parse("infer-shapes")(b, c3);
    } catch (const gpass::error& e) {
      message = e.what();
    }
    CHECK(message.find("fused element-wise program") != std::string::npos);
  }
}

TEST_CASE("passes.optimize.levels") {
  auto& reg = gpass::pass_registry<G>::global();
  gpass::register_optimizer_passes(reg);
  gpass::register_optimizer_passes(reg);  // twice is harmless
  for (const auto& l : gpass::optimize_levels) CHECK(reg.find_pipeline(l.name) != nullptr);
  gpass::pass_context ctx;
  G g = optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[N,4])
  %i = Identity(%x)
  %k = Constant() {value = tensor<f32[4]> [1.0, 1.0, 1.0, 1.0]}
  %k2 = Constant() {value = tensor<f32[4]> [1.0, 1.0, 1.0, 1.0]}
  %kk = Add(%k, %k2)
  %a = Mul(%i, %kk)
  %b = Mul(%i, %kk)
  %d:2 = Dropout(%b)
  %y = Add(%a, %d:0)
  %dead = Relu(%x)
  %r0:0 = return(%y)
})",
                 "O2", ctx);
  CHECK(gpass::print_text(g) == R"(graph {
  %x = arg() {index = 0} -> (f32[N,4])
  %a = Mul(%x, %kk) -> (f32[N,4])
  %y = Add(%a, %a) -> (f32[N,4])
  %r0:0 = return(%y)
  %kk = Constant() {value = tensor<f32[4]> [2.0, 2.0, 2.0, 2.0]} -> (f32[4])
}
)");
}


TEST_CASE("passes.plan_memory.levels_in_place_and_the_executor_uses_it") {
  // Exp -> Relu -> Neg -> Add(., x) -> Tanh: at level 2 the chain runs in one buffer
  const char* text = R"(graph {
  %x = arg() {index = 0} -> (f32[1024])
  %a = Exp(%x)
  %b = Relu(%a)
  %c = Neg(%b)
  %d = Add(%c, %x)
  %e = Tanh(%d)
  %r:0 = return(%e)
})";
  auto peak = [&](int level, gpass::pass_context& ctx) {
    G g = optimize(text, "infer-shapes,plan-memory{level=" + std::to_string(level) + "}", ctx);
    return g;
  };
  gpass::pass_context c0, c1, c2;
  G g0 = peak(0, c0), g1 = peak(1, c1), g2 = peak(2, c2);
  CHECK(stat(c0, "plan-memory.peak-bytes") == 4 * 4096);  // a, b, c, d each their own
  CHECK(stat(c1, "plan-memory.peak-bytes") == 2 * 4096);  // two live at each step
  CHECK(stat(c2, "plan-memory.peak-bytes") == 4096);      // b, c, d written over a
  CHECK(stat(c2, "plan-memory.in-place") == 3);
  CHECK(stat(c2, "plan-memory.naive-bytes") == 4096);
  CHECK(g2.attrs().at("memory_peak_bytes").as<std::int64_t>() == 4096);
  CHECK(g2[g2.at("d")].attrs.at("_memory_in_place").as<std::int64_t>() == 0);  // over c, not over x
  CHECK(g2[g2.at("a")].attrs.at("_memory_offsets").as<std::vector<std::int64_t>>() == std::vector<std::int64_t>{0});
  CHECK_FALSE(g2[g2.at("e")].attrs.count("_memory_offsets"));  // a result: not planned
  CHECK(print_text(g2).find("_memory_in_place") != std::string::npos);

  // the executor takes the recorded layout, and computes the same
  gpass::exec::eigen_cpu cpu({.threads = 1});
  for (G* g : {&g1, &g2}) {
    gpass::exec::plan<gpass::exec::eigen_cpu> p(*g, cpu);
    CHECK(p.stats().recorded_memory_plan);
    CHECK(p.stats().planned_peak_bytes == static_cast<std::size_t>(g->attrs().at("memory_peak_bytes").as<std::int64_t>()));
  }
  gpass::exec::plan<gpass::exec::eigen_cpu> p2(g2, cpu);
  CHECK(p2.stats().in_place == 3);
  CHECK(max_output_diff(gpass::parse_text(text), g2) == 0);
  CHECK(max_output_diff(gpass::parse_text(text), g0) == 0);

  // a recorded layout that does not hold is not used: overlapping live buffers ...
  G bad = g1;
  for (auto v : bad.nodes())
    if (bad[v].attrs.count("_memory_offsets")) bad[v].attrs["_memory_offsets"] = std::vector<std::int64_t>{0};
  gpass::exec::plan<gpass::exec::eigen_cpu> pb(bad, cpu);
  CHECK_FALSE(pb.stats().recorded_memory_plan);
  CHECK(pb.stats().planned_peak_bytes == 2 * 4096);  // the executor's own plan
  CHECK(max_output_diff(gpass::parse_text(text), bad) == 0);
  // ... or an in-place write over a value read later (x by d)
  G late = g2;
  late[late.at("a")].attrs["_memory_in_place"] = std::int64_t{0};
  gpass::exec::plan<gpass::exec::eigen_cpu> pl(late, cpu);
  CHECK_FALSE(pl.stats().recorded_memory_plan);
  CHECK(max_output_diff(gpass::parse_text(text), late) == 0);

  // unknown sizes are not planned; a bad level is an error naming the pass
  gpass::pass_context cs;
  optimize(R"(graph {
  %x = arg() {index = 0} -> (f32[?])
  %a = Exp(%x)
  %b = Relu(%a)
  %r:0 = return(%b)
})", "infer-shapes,plan-memory", cs);
  CHECK(stat(cs, "plan-memory.planned") == 0);
  gpass::pass_context ce;
  CHECK_THROWS_WITH_AS(optimize(text, "infer-shapes,plan-memory{level=3}", ce), doctest::Contains("'level' must be 0, 1 or 2"),
                       gpass::error);
}

}  // namespace gpass_test_passes_optimizer
