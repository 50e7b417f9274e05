// SPDX-License-Identifier: Apache-2.0
// Batch splitting (exec/batch_split.hpp): the separability proof on graphs with a symbolic
// batch (what it accepts, what it refuses and why), and plans that run a batch as sub-batches
// (per thread, sample by sample) giving the whole run's results.
#include <doctest/doctest.h>

#include <gpass/exec/batch_split.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/text.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/session.hpp>

#include "random_constants.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_batch_split {

namespace {

namespace ex = gpass::exec;
using i64 = std::int64_t;
using G = gpass::graph<>;

using gpass_test_exec_util::constant;
using gpass_test_exec_util::random_floats;

// The graph of `body` (opset 17), shapes inferred.
G graph_of(const std::string& body) {
  G g = gpass::parse_text("graph {opset_import = [\":17\"]} {\n" + body + "}\n");
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  return g;
}

// A CNN over a batch `n`: conv + relu, strided conv, 1x1 conv + residual, pooling, Flatten,
// Gemm, Softmax.
G cnn(int size = 12) {
  const i64 w = 4;
  const std::string hw = std::to_string(size), hw2 = std::to_string(size / 2);
  std::string t = "  %x = arg() {index = 0} -> (f32[n,3," + hw + "," + hw + "])\n";
  t += constant("w1", {w, 3, 3, 3}, 1, 0.5f) + constant("b1", {w}, 2, 0.1f);
  t += constant("w2", {8, w, 3, 3}, 3, 0.3f) + constant("b2", {8}, 4, 0.1f);
  t += constant("w3", {8, 8, 1, 1}, 5, 0.4f);
  t += constant("wf", {10, 8}, 6, 0.5f) + constant("bf", {10}, 7, 0.1f);
  const std::string ws = std::to_string(w);
  const std::string big = "," + hw + "," + hw + "])\n", small = "," + hw2 + "," + hw2 + "])\n";
  t += "  %c1 = Conv(%x, %w1, %b1) {pads = [1, 1, 1, 1], kernel_shape = [3, 3]} -> (f32[n," + ws + big;
  t += "  %r1 = Relu(%c1) -> (f32[n," + ws + big;
  t += "  %c2 = Conv(%r1, %w2, %b2) {pads = [1, 1, 1, 1], strides = [2, 2]} -> (f32[n,8" + small;
  t += "  %r2 = Relu(%c2) -> (f32[n,8" + small;
  t += "  %c3 = Conv(%r2, %w3) -> (f32[n,8" + small;
  t += "  %s3 = Add(%c3, %r2) -> (f32[n,8" + small;
  t += R"(  %gap = GlobalAveragePool(%s3) -> (f32[n,8,1,1])
  %flat = Flatten(%gap) {axis = 1} -> (f32[n,8])
  %fc = Gemm(%flat, %wf, %bf) {transB = 1} -> (f32[n,10])
  %y = Softmax(%fc) {axis = 1} -> (f32[n,10])
  %r:0 = return(%y, %r2)
)";
  return graph_of(t);
}

// A 2-layer LSTM like tf2onnx writes one: [n, seq, in] transposed to time-major, zero initial
// states expanded from Shape(x)[0], the second layer's last step through Gemm.
G lstm() {
  std::string t = "  %x = arg() {index = 0} -> (f32[n,5,4])\n";
  t += constant("W1", {1, 24, 4}, 11, 0.5f) + constant("R1", {1, 24, 6}, 12, 0.5f) + constant("B1", {1, 48}, 13, 0.1f);
  t += constant("W2", {1, 24, 6}, 14, 0.5f) + constant("R2", {1, 24, 6}, 15, 0.5f);
  t += constant("wo", {6, 3}, 16, 0.5f);
  t += R"(  %zero = Constant() {value = tensor<f32[]> [0.0]} -> (f32[])
  %hidden = Constant() {value = tensor<i64[1]> [6]} -> (i64[1])
  %s0 = Constant() {value = tensor<i64[1]> [0]} -> (i64[1])
  %s1 = Constant() {value = tensor<i64[1]> [1]} -> (i64[1])
  %last = Constant() {value = tensor<i64[1]> [-1]} -> (i64[1])
  %big = Constant() {value = tensor<i64[1]> [1000]} -> (i64[1])
  %shape = Shape(%x) -> (i64[3])
  %bsz = Slice(%shape, %s0, %s1, %s0) -> (i64[1])
  %hshape = Concat(%bsz, %hidden) {axis = 0} -> (i64[2])
  %z = Expand(%zero, %hshape) -> (f32[n,6])
  %h0 = Unsqueeze(%z, %s0) -> (f32[1,n,6])
  %xt = Transpose(%x) {perm = [1, 0, 2]} -> (f32[5,n,4])
  %l1:3 = LSTM(%xt, %W1, %R1, %B1, _, %h0, %h0) {hidden_size = 6} -> (f32[5,1,n,6], f32[1,n,6], f32[1,n,6])
  %y1 = Squeeze(%l1:0, %s1) -> (f32[5,n,6])
  %l2:3 = LSTM(%y1, %W2, %R2, _, _, %h0) {hidden_size = 6} -> (f32[5,1,n,6], f32[1,n,6], f32[1,n,6])
  %y2 = Squeeze(%l2:0, %s1) -> (f32[5,n,6])
  %tail = Slice(%y2, %last, %big, %s0) -> (f32[1,n,6])
  %h = Squeeze(%tail, %s0) -> (f32[n,6])
  %o = MatMul(%h, %wo) -> (f32[n,3])
  %r:0 = return(%o, %l2:0, %l1:2)
)";
  return graph_of(t);
}

// Token rows reshaped to [n*4, 8] for a product and back, a layer norm over the features.
G rows() {
  std::string t = "  %x = arg() {index = 0} -> (f32[n,4,8])\n";
  t += constant("w", {8, 8}, 21, 0.5f) + constant("gamma", {8}, 22, 1.f) + constant("beta", {8}, 23, 0.1f);
  t += R"(  %flat_shape = Constant() {value = tensor<i64[2]> [-1, 8]} -> (i64[2])
  %back_shape = Constant() {value = tensor<i64[3]> [-1, 4, 8]} -> (i64[3])
  %f = Reshape(%x, %flat_shape) -> (f32[4*n,8])
  %m = MatMul(%f, %w) -> (f32[4*n,8])
  %b = Reshape(%m, %back_shape) -> (f32[n,4,8])
  %a = Add(%b, %x) -> (f32[n,4,8])
  %y:3 = LayerNormalization(%a, %gamma, %beta) {axis = -1} -> (f32[n,4,8], f32[n,4,1], f32[n,4,1])
  %t = Transpose(%y:0) {perm = [1, 2, 0]} -> (f32[4,8,n])
  %mx = ReduceMax(%t) {axes = [0], keepdims = 0} -> (f32[8,n])
  %r:0 = return(%y:0, %mx)
)";
  return graph_of(t);
}

// Two dense layers with more weights than values per sample.
G mlp() {
  std::string t = "  %x = arg() {index = 0} -> (f32[n,64])\n";
  t += constant("w1", {64, 256}, 31, 0.2f) + constant("w2", {256, 10}, 32, 0.2f);
  t += R"(  %h = MatMul(%x, %w1) -> (f32[n,256])
  %a = Relu(%h) -> (f32[n,256])
  %y = MatMul(%a, %w2) -> (f32[n,10])
  %r:0 = return(%y)
)";
  return graph_of(t);
}

std::vector<float> floats(const ex::value& v) {
  auto s = v.tensor().values<float>();
  return {s.begin(), s.end()};
}

// Runs `g` on batches 1..8 at 1 and 2 threads, split and whole: equal results (to rounding:
// kernels see fewer rows); `expect_split_t*` say whether batch 8 splits at 1 and 2 threads.
void check_split_runs(const G& g, const std::vector<i64>& sample, int batch_axis, bool expect_split_t1, bool expect_split_t2) {
  for (int threads : {1, 2}) {
    ex::eigen_cpu cpu({.threads = threads});
    ex::plan<ex::eigen_cpu> split(g, cpu), whole(g, cpu, {.split_batch = false});
    REQUIRE(split.batch_split().separable);
    CHECK_FALSE(whole.batch_split().separable);
    CHECK(whole.batch_split().reason.find("off") != std::string::npos);
    const bool expect = threads == 1 ? expect_split_t1 : expect_split_t2;
    CHECK(ex::choose_batch_split(split.batch_split(), 8, threads).splits(8) == expect);
    CHECK_FALSE(ex::choose_batch_split(split.batch_split(), 1, threads).splits(1));
    for (i64 n : {1, 2, 3, 5, 8}) {
      INFO("threads " << threads << ", batch " << n);
      std::vector<i64> sizes = sample;
      sizes[static_cast<std::size_t>(batch_axis)] = n;
      i64 count = 1;
      for (i64 s : sizes) count *= s;
      const auto x = gpass::tensor::from<float>(random_floats(static_cast<std::size_t>(count), static_cast<unsigned>(n), 1.f), sizes);
      const auto a = split.run({x}), b = whole.run({x});
      REQUIRE(a.size() == b.size());
      for (std::size_t o = 0; o < a.size(); ++o) {
        INFO("result " << o);
        CHECK(a[o].tensor().sizes() == b[o].tensor().sizes());
        const auto va = floats(a[o]), vb = floats(b[o]);
        REQUIRE(va.size() == vb.size());
        int bad = 0;
        for (std::size_t i = 0; i < va.size(); ++i) bad += std::abs(va[i] - vb[i]) <= 1e-5f * (1.f + std::abs(vb[i])) ? 0 : 1;
        CHECK(bad == 0);
      }
    }
  }
}

// The reason a graph is not separable ("" when it is).
std::string refusal(const std::string& body) {
  const auto info = ex::analyze_batch_split(graph_of(body));
  return info.separable ? std::string() : info.reason;
}

}  // namespace

TEST_CASE("exec.batch_split.proves_cnns_rnns_and_row_reshapes_separable") {
  {
    const auto info = ex::analyze_batch_split(cnn());
    CHECK(info.separable);
    CHECK(info.symbol == "n");
    CHECK(info.input_axis == std::vector<int>{0});
    CHECK(info.output_axis == std::vector<int>{0, 0});
    CHECK_FALSE(info.recurrent);
    // per sample: c1, r1 (4x12x12 floats each), c2, r2, c3, s3 (8x6x6), gap, flat, fc, y
    CHECK(info.sample_bytes == doctest::Approx(4.0 * (2 * 4 * 144 + 4 * 8 * 36 + 8 + 8 + 10 + 10)));
    CHECK(info.constant_bytes == doctest::Approx(4.0 * (4 * 27 + 4 + 8 * 36 + 8 + 64 + 80 + 10)));
  }
  {
    const auto info = ex::analyze_batch_split(lstm());
    CHECK_MESSAGE(info.separable, info.reason);
    CHECK(info.recurrent);
    CHECK(info.output_axis == std::vector<int>{0, 2, 1});  // o [n,3]; Y [5,1,n,6]; Y_c [1,n,6]
  }
  {
    const auto info = ex::analyze_batch_split(rows());
    CHECK_MESSAGE(info.separable, info.reason);
    CHECK(info.output_axis == std::vector<int>{0, 1});
  }
}

TEST_CASE("exec.batch_split.embedding_tables_are_not_weights_read_whole") {
  // token ids [n, 6] -> a 1000 x 16 table's rows -> a 16 x 16 product: per sample, the
  // product's weights are read whole, the table only by the rows gathered
  std::string t = "  %ids = arg() {index = 0} -> (i64[n,6])\n";
  t += constant("table", {1000, 16}, 41, 1.f) + constant("w", {16, 16}, 42, 0.5f);
  t += R"(  %e = Gather(%table, %ids) {axis = 0} -> (f32[n,6,16])
  %y = MatMul(%e, %w) -> (f32[n,6,16])
  %r:0 = return(%y)
)";
  const auto info = ex::analyze_batch_split(graph_of(t));
  REQUIRE_MESSAGE(info.separable, info.reason);
  CHECK(info.constant_bytes == doctest::Approx(16.0 * 16 * 4));
  CHECK(info.sample_bytes == doctest::Approx(2.0 * 6 * 16 * 4));
}

TEST_CASE("exec.batch_split.refuses_what_mixes_samples") {
  const std::string x = "  %x = arg() {index = 0} -> (f32[n,4])\n";
  const std::string axes0 = "  %ax0 = Constant() {value = tensor<i64[1]> [0]} -> (i64[1])\n";
  // a reduction over the batch
  CHECK(refusal(x + "  %y = ReduceMean(%x) {axes = [0]} -> (f32[1,4])\n  %r:0 = return(%y)\n").find("'y' (ReduceMean)") !=
        std::string::npos);
  // a softmax over the batch
  CHECK(refusal(x + "  %y = Softmax(%x) {axis = 0} -> (f32[n,4])\n  %r:0 = return(%y)\n").find("over the batch axis") !=
        std::string::npos);
  // the batch size used as data: x / n
  CHECK(refusal("  %x = arg() {index = 0} -> (f32[n,2])\n" R"(  %s = Shape(%x) -> (i64[2])
  %f = Cast(%s) {to = 1} -> (f32[2])
  %y = Div(%x, %f) -> (f32[n,2])
  %r:0 = return(%y)
)").find("batch size into data") != std::string::npos);
  // Squeeze without axes: a batch of one would lose its axis
  CHECK(refusal("  %x = arg() {index = 0} -> (f32[n,1,4])\n  %y = Squeeze(%x) -> (f32[n,4])\n  %r:0 = return(%y)\n") != "");
  // x^T x contracts the batch
  CHECK(refusal(x + R"(  %t = Transpose(%x) {perm = [1, 0]} -> (f32[4,n])
  %y = MatMul(%t, %x) -> (f32[4,4])
  %r:0 = return(%y)
)") != "");
  // fused attention per sample and head, with a per-sample mask bias
  const std::string qkv = R"(  %q = arg() {index = 0} -> (f32[n,2,5,4])
  %m = arg() {index = 1} -> (f32[n,1,1,5])
)";
  CHECK(refusal(qkv + R"(  %y = gpass::ScaledDotProductAttention(%q, %q, %q, %m) {scale = 0.5} -> (f32[n,2,5,4])
  %r:0 = return(%y)
)") == "");
  // the batch moved off the leading axis, then flattened with the features
  CHECK(refusal(x + R"(  %t = Transpose(%x) {perm = [1, 0]} -> (f32[4,n])
  %s = Constant() {value = tensor<i64[1]> [-1]} -> (i64[1])
  %y = Reshape(%t, %s) -> (f32[4*n])
  %r:0 = return(%y)
)").find("'y' (Reshape)") != std::string::npos);
  // a slice of part of the batch; one of all of it (tf2onnx's x[:, None] masks) is kept
  CHECK(refusal(x + R"(  %b = Constant() {value = tensor<i64[2]> [0, 0]} -> (i64[2])
  %e = Constant() {value = tensor<i64[2]> [2, 1000000000]} -> (i64[2])
  %a = Constant() {value = tensor<i64[2]> [0, 1]} -> (i64[2])
  %y = Slice(%x, %b, %e, %a) -> (f32[?,4])
  %r:0 = return(%y)
)").find("slices the batch axis") != std::string::npos);
  CHECK(refusal(x + R"(  %b = Constant() {value = tensor<i64[2]> [0, 1]} -> (i64[2])
  %e = Constant() {value = tensor<i64[2]> [1000000000, 1000000000]} -> (i64[2])
  %a = Constant() {value = tensor<i64[2]> [0, 1]} -> (i64[2])
  %y = Slice(%x, %b, %e, %a) -> (f32[n,3])
  %r:0 = return(%y)
)") == "");
  // concatenation along the batch
  CHECK(refusal(x + "  %y = Concat(%x, %x) {axis = 0} -> (f32[2*n,4])\n  %r:0 = return(%y)\n") != "");
  // batch statistics
  CHECK(refusal("  %x = arg() {index = 0} -> (f32[n,2,3,3])\n" + constant("s", {2}, 1, 1.f) + constant("b", {2}, 2, 1.f) +
                R"(  %y:3 = BatchNormalization(%x, %s, %b, %s, %b) {training_mode = 1} -> (f32[n,2,3,3], f32[2], f32[2])
  %r:0 = return(%y:0)
)") != "");
  // random numbers drawn per run
  CHECK(refusal(x + "  %y = RandomNormalLike(%x) -> (f32[n,4])\n  %r:0 = return(%y)\n").find("effects") != std::string::npos);
  // Resize keeping the batch, and one resizing it
  const std::string img = "  %x = arg() {index = 0} -> (f32[n,2,4,4])\n";
  CHECK(refusal(img + R"(  %s = Constant() {value = tensor<f32[4]> [1.0, 1.0, 2.0, 2.0]} -> (f32[4])
  %y = Resize(%x, _, %s) {mode = "linear"} -> (f32[n,2,8,8])
  %r:0 = return(%y)
)") == "");
  CHECK(refusal(img + R"(  %s = Constant() {value = tensor<f32[4]> [2.0, 1.0, 2.0, 2.0]} -> (f32[4])
  %y = Resize(%x, _, %s) {mode = "nearest"} -> (f32[2*n,2,8,8])
  %r:0 = return(%y)
)").find("not batched") != std::string::npos);
  // a variable read (another run may have written it)
  CHECK(refusal(x + "  %v = get_global() {variable = \"v\"} -> (f32[4])\n  %y = Add(%x, %v) -> (f32[n,4])\n  %r:0 = return(%y)\n")
            .find("effects") != std::string::npos);
  // a result that does not depend on the batch
  CHECK(refusal(x + axes0 + "  %y = Relu(%x) -> (f32[n,4])\n  %r:0 = return(%y, %ax0)\n").find("not batched") != std::string::npos);
  // no symbolic batch at all
  CHECK(refusal("  %x = arg() {index = 0} -> (f32[2,4])\n  %y = Relu(%x) -> (f32[2,4])\n  %r:0 = return(%y)\n").find("symbolic") !=
        std::string::npos);
}

TEST_CASE("exec.batch_split.split_runs_equal_whole_runs") {
  // activation-bound (a sample's values outweigh the weights): a part per thread; sample by
  // sample when a sample's values reach 1 MiB (at 160x160: 1.6 MiB)
  {
    const G g = cnn(160);
    const auto info = ex::analyze_batch_split(g);
    REQUIRE(info.sample_bytes > 1024 * 1024);
    REQUIRE(info.sample_bytes > info.constant_bytes);
    check_split_runs(g, {1, 3, 160, 160}, 0, true, true);
    const auto c = ex::choose_batch_split(info, 8, 2);
    CHECK(c.parts == 2);
    CHECK(c.micro == 1);
    CHECK(ex::choose_batch_split(info, 8, 1).micro == 1);
  }
  {
    const G g = cnn(12);  // 9.4 kB a sample: whole at 1 thread, a part per thread at 2
    const auto info = ex::analyze_batch_split(g);
    REQUIRE(info.sample_bytes > info.constant_bytes);
    check_split_runs(g, {1, 3, 12, 12}, 0, false, true);
    CHECK(ex::choose_batch_split(info, 8, 2).micro == 4);
  }
  // weight-bound: whole at 1 thread and at 2
  {
    const G g = mlp();
    const auto info = ex::analyze_batch_split(g);
    REQUIRE(info.sample_bytes < info.constant_bytes);
    check_split_runs(g, {1, 64}, 0, false, false);
  }
  // recurrent: whole at 1 thread, a part per thread at 2; results batched at axes 0, 2, 1
  {
    const G g = lstm();
    check_split_runs(g, {1, 5, 4}, 0, false, true);
    const auto c = ex::choose_batch_split(ex::analyze_batch_split(g), 5, 2);
    CHECK(c.parts == 2);
    CHECK(c.micro == 3);
  }
  // row reshapes; a result batched at its last axis (activation-bound, small: a part per thread)
  check_split_runs(rows(), {1, 4, 8}, 0, false, true);
}

TEST_CASE("exec.batch_split.bad_feeds_fail_like_a_whole_run") {
  const G g = cnn();
  ex::eigen_cpu cpu({.threads = 2});
  ex::plan<ex::eigen_cpu> p(g, cpu);
  REQUIRE(p.batch_split().separable);
  // wrong channel count: the whole run's error (naming the node), not a split's
  const auto bad = gpass::tensor::from<float>(random_floats(8 * 4 * 12 * 12, 1, 1.f), {8, 4, 12, 12});
  std::string split_error, whole_error;
  try {
    (void)p.run({bad});
  } catch (const gpass::error& e) {
    split_error = e.what();
  }
  ex::plan<ex::eigen_cpu> w(g, cpu, {.split_batch = false});
  try {
    (void)w.run({bad});
  } catch (const gpass::error& e) {
    whole_error = e.what();
  }
  CHECK_FALSE(split_error.empty());
  CHECK(split_error == whole_error);
  // wrong rank
  CHECK_THROWS_AS((void)p.run({gpass::tensor::from<float>(random_floats(8, 1, 1.f), {8})}), gpass::error);
}

TEST_CASE("exec.batch_split.sessions_split_like_plans") {
  // a one-device session on 2 threads runs the LSTM's batch as 2 parts: the plan's results
  const G g = lstm();
  gpass::session_options<G> o;
  o.devices.push_back(std::make_shared<gpass::policy_device<ex::eigen_cpu, G>>(
      gpass::parse_device_name("/job:localhost/replica:0/task:0/device:CPU:0"),
      std::make_unique<ex::eigen_cpu>(ex::eigen_cpu::options{.threads = 2})));
  gpass::session<G> s(G(g), o);
  ex::eigen_cpu one({.threads = 1});
  ex::plan<ex::eigen_cpu> whole(g, one, {.split_batch = false});
  for (i64 n : {1, 6}) {
    const auto x = gpass::tensor::from<float>(random_floats(static_cast<std::size_t>(n * 20), 40, 1.f), {n, 5, 4});
    const auto a = s.run_graph({x}), b = whole.run({x});
    REQUIRE(a.size() == b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      CHECK(a[k].tensor().sizes() == b[k].tensor().sizes());
      const auto va = floats(a[k]), vb = floats(b[k]);
      for (std::size_t i = 0; i < va.size() && i < vb.size(); ++i) CHECK(std::abs(va[i] - vb[i]) <= 1e-5f);
    }
  }
}

TEST_CASE("exec.batch_split.serial_scope_makes_kernels_single_threaded") {
  ex::eigen_cpu cpu({.threads = 2});
  CHECK(cpu.threads() == 2);
  {
    ex::eigen_cpu::serial_scope s;
    CHECK(cpu.threads() == 1);
    const auto caller = std::this_thread::get_id();
    int other = 0;
    cpu.parallel_for(64, 1e9, [&](i64 b, i64 e) {
      for (i64 i = b; i < e; ++i) other += std::this_thread::get_id() == caller ? 0 : 1;
    });
    CHECK(other == 0);
  }
  CHECK(cpu.threads() == 2);
}

}  // namespace gpass_test_exec_batch_split
