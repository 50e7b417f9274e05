// SPDX-License-Identifier: Apache-2.0
// Tests of the nchwc-layout pass (passes/common/nchwc_layout.hpp): which nodes go to the
// blocked layout, where the reorders go, and that the rewritten graph computes what the
// original did (both run node by node on the Eigen CPU kernels: linalg, which has the
// blocked ops, element-wise and array).

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/io/text.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/passes/common/nchwc_layout.hpp>

#include "../exec/kernel_fixture.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_nchwc_layout {

namespace {

using G = gpass::graph<>;
using gpass::tensor;
using i64 = std::int64_t;

const gpass::exec::kernel_registry<gpass::exec::eigen_cpu>& registry() {
  static const gpass::exec::kernel_registry<gpass::exec::eigen_cpu> r = [] {
    gpass::exec::kernel_registry<gpass::exec::eigen_cpu> k;
    gpass::exec::register_eigen_cpu_linalg(k);
    gpass::exec::register_eigen_cpu_elementwise(k);
    gpass::exec::register_eigen_cpu_array(k);
    return k;
  }();
  return r;
}

/// Runs `g` node by node (args from `feeds` by index); the values `return` reads.
std::vector<tensor> run(const G& g, const std::vector<tensor>& feeds) {
  gpass::exec::eigen_cpu cpu({.threads = 1});
  std::map<std::pair<std::size_t, int>, gpass::exec::value> values;
  std::vector<tensor> out;
  for (auto v : gpass::topological_order(g)) {
    const auto& n = g[v];
    if (n.op == "arg") {
      values[{g.serial(v), 0}] = feeds.at(static_cast<std::size_t>(gpass::get_or(n.attrs, "index", i64{0})));
      continue;
    }
    std::vector<gpass::exec::value> in;
    gpass::exec::kernel_node k{.name = n.name, .op = n.op, .attrs = n.attrs, .opset = 17};
    k.domain = n.domain;
    for (const auto& i : g.inputs(v)) {
      in.push_back(i.empty ? gpass::exec::value{} : values.at({g.serial(i.node), i.port}));
      k.input_types.push_back(i.empty ? gpass::type{} : g[i.node].outputs[static_cast<std::size_t>(i.port)]);
    }
    if (n.op == "return") {
      for (auto& x : in) out.push_back(x.tensor());
      continue;
    }
    k.output_types = n.outputs;
    auto r = gpass::exec::run_kernel(cpu, registry(), k, std::move(in));
    for (std::size_t p = 0; p < r.size(); ++p) values[{g.serial(v), static_cast<int>(p)}] = std::move(r[p]);
  }
  return out;
}

tensor random_tensor(std::vector<i64> sizes, unsigned seed) { return gpass_test_exec::random_f32(std::move(sizes), seed); }

std::map<std::string, int> ops_of(const G& g) {
  std::map<std::string, int> r;
  for (auto v : g.nodes()) ++r[(g[v].domain.empty() ? "" : g[v].domain + "::") + g[v].op];
  return r;
}

std::int64_t stat(const gpass::pass_context& ctx, const std::string& k) {
  auto s = ctx.statistics();
  auto it = s.find(k);
  REQUIRE_MESSAGE(it != s.end(), "missing statistic " << k);
  return it->second;
}

// A small residual CNN: an RGB stem (fused Relu), a max pool, a 3x3 conv + Relu added to the
// pool's output, a depthwise conv, a global pool flattened (an NCHW reader), and a 1x1 conv
// that is a graph output.
constexpr const char* cnn = R"(graph {opset_import = [":17"]} {
  %x = arg() {index = 0} -> (f32[2,3,20,18])
  %w1 = arg() {index = 1} -> (f32[20,3,3,3])
  %b1 = arg() {index = 2} -> (f32[20])
  %w2 = arg() {index = 3} -> (f32[20,20,3,3])
  %wd = arg() {index = 4} -> (f32[20,1,3,3])
  %w3 = arg() {index = 5} -> (f32[12,20,1,1])
  %c1 = gpass::FusedConv(%x, %w1, %b1) {pads = [1, 1, 1, 1], strides = [2, 2], activation = "Relu"}
  %p = MaxPool(%c1) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]}
  %c2 = Conv(%p, %w2) {pads = [1, 1, 1, 1]}
  %r = Relu(%c2)
  %a = Add(%r, %p)
  %d = Conv(%a, %wd) {group = 20, pads = [1, 1, 1, 1]}
  %g = GlobalAveragePool(%d)
  %f = Flatten(%g)
  %c3 = Conv(%a, %w3)
  %out:0 = return(%f, %c3)
})";

std::vector<tensor> cnn_feeds() {
  return {random_tensor({2, 3, 20, 18}, 1), random_tensor({20, 3, 3, 3}, 2), random_tensor({20}, 3),
          random_tensor({20, 20, 3, 3}, 4),  random_tensor({20, 1, 3, 3}, 5),  random_tensor({12, 20, 1, 1}, 6)};
}

G inferred(const char* text) {
  G g = gpass::parse_text(text);
  gpass::pass_context ctx;
  gpass::infer_shapes(g, ctx);
  return g;
}

}  // namespace

TEST_CASE("passes.nchwc_layout.converts_a_cnn_and_computes_the_same") {
  for (const i64 b : {8, 16}) {
    INFO("block " << b);
    const G before = inferred(cnn);
    G g = before;
    gpass::pass_context ctx;
    ctx.set_option("nchwc-layout.block", std::to_string(b));
    gpass::nchwc_layout(g, ctx);
    CHECK(stat(ctx, "nchwc-layout.convs") == 4);
    CHECK(stat(ctx, "nchwc-layout.pools") == 2);
    CHECK(stat(ctx, "nchwc-layout.elementwise") == 2);
    CHECK(stat(ctx, "nchwc-layout.reorders-in") == 0);   // the stem reads the RGB input itself
    CHECK(stat(ctx, "nchwc-layout.reorders-out") == 2);  // for Flatten, and the output c3
    const auto ops = ops_of(g);
    CHECK(ops.count("Conv") == 0);
    CHECK(ops.count("gpass::FusedConv") == 0);
    CHECK(ops.at("gpass::NchwcConv") == 4);
    CHECK(ops.at("gpass::NchwcMaxPool") == 1);
    CHECK(ops.at("gpass::NchwcGlobalAveragePool") == 1);
    CHECK(ops.at("gpass::NchwcReorderOutput") == 2);
    CHECK(ops.at("Relu") == 1);
    CHECK(ops.at("Add") == 1);
    CHECK(ops.at("Flatten") == 1);
    // the reorders took the names of the nodes they stand for: the outputs keep theirs
    CHECK(g[g.at("c3")].op == "NchwcReorderOutput");
    CHECK(g[g.at("g")].op == "NchwcReorderOutput");
    CHECK(g[g.at("c3")].outputs[0].to_string() == "f32[2,12,5,5]");
    CHECK(g[g.at("c1/nchwc")].outputs[0].to_string() == "f32[2," + std::to_string((20 + b - 1) / b) + ",10,9," + std::to_string(b) + "]");
    // the same numbers
    const auto feeds = cnn_feeds();
    const auto want = run(before, feeds), got = run(g, feeds);
    REQUIRE(want.size() == 2);
    REQUIRE(got.size() == 2);
    for (std::size_t o = 0; o < 2; ++o) {
      REQUIRE(got[o].sizes() == want[o].sizes());
      i64 bad = 0;
      for (i64 i = 0; i < want[o].size(); ++i) {
        const double w = want[o].data<float>()[i], x = got[o].data<float>()[i];
        if (!(std::abs(w - x) <= 1e-4 * (1 + std::abs(w)))) ++bad;
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("passes.nchwc_layout.leaves_what_it_cannot_run") {
  // groups of 4 channels, a GPU node, an integer convolution's f64 cousin: all stay
  constexpr const char* text = R"(graph {opset_import = [":17"]} {
  %x = arg() {index = 0} -> (f32[1,32,8,8])
  %w = arg() {index = 1} -> (f32[32,4,3,3])
  %wg = arg() {index = 2} -> (f32[16,32,3,3])
  %y = arg() {index = 3} -> (f64[1,8,8,8])
  %wy = arg() {index = 4} -> (f64[8,8,1,1])
  %c = Conv(%x, %w) {group = 8, pads = [1, 1, 1, 1]}
  %cg = Conv(%x, %wg) on "/device:GPU:0"
  %cy = Conv(%y, %wy)
  %out:0 = return(%c, %cg, %cy)
})";
  G g = inferred(text);
  gpass::pass_context ctx;
  gpass::nchwc_layout(g, ctx);
  CHECK(stat(ctx, "nchwc-layout.convs") == 0);
  CHECK(stat(ctx, "nchwc-layout.reorders-in") == 0);
  CHECK(ops_of(g).at("Conv") == 3);
  // disabled: nothing at all, even for a convertible graph
  G h = inferred(cnn);
  gpass::pass_context off;
  off.set_option("nchwc-layout.enable", "false");
  gpass::nchwc_layout(h, off);
  CHECK(ops_of(h).count("gpass::NchwcConv") == 0);
  // a block size the kernels do not have
  gpass::pass_context bad;
  bad.set_option("nchwc-layout.block", "4");
  CHECK_THROWS_WITH_AS(gpass::nchwc_layout(h, bad), doctest::Contains("must be 0, 8 or 16"), gpass::error);
}

TEST_CASE("passes.nchwc_layout.reorders_a_value_once") {
  // two blocked convolutions of one NCHW value share its reorder; a pool of an NCHW value
  // is not worth one
  constexpr const char* text = R"(graph {opset_import = [":17"]} {
  %x = arg() {index = 0} -> (f32[1,16,6,6])
  %w1 = arg() {index = 1} -> (f32[8,16,3,3])
  %w2 = arg() {index = 2} -> (f32[24,16,1,1])
  %c1 = Conv(%x, %w1) {pads = [1, 1, 1, 1]}
  %c2 = Conv(%x, %w2)
  %p = MaxPool(%x) {kernel_shape = [2, 2], strides = [2, 2]}
  %out:0 = return(%c1, %c2, %p)
})";
  const G before = inferred(text);
  G g = before;
  gpass::pass_context ctx;
  ctx.set_option("nchwc-layout.block", "8");
  gpass::nchwc_layout(g, ctx);
  CHECK(stat(ctx, "nchwc-layout.convs") == 2);
  CHECK(stat(ctx, "nchwc-layout.pools") == 0);
  CHECK(stat(ctx, "nchwc-layout.reorders-in") == 1);
  CHECK(stat(ctx, "nchwc-layout.reorders-out") == 2);
  CHECK(ops_of(g).at("MaxPool") == 1);
  const std::vector<tensor> feeds{random_tensor({1, 16, 6, 6}, 7), random_tensor({8, 16, 3, 3}, 8), random_tensor({24, 16, 1, 1}, 9)};
  const auto want = run(before, feeds), got = run(g, feeds);
  REQUIRE(got.size() == 3);
  for (std::size_t o = 0; o < 3; ++o) {
    REQUIRE(got[o].sizes() == want[o].sizes());
    for (i64 i = 0; i < want[o].size(); ++i)
      REQUIRE(std::abs(got[o].data<float>()[i] - want[o].data<float>()[i]) <= 1e-4f * (1 + std::abs(want[o].data<float>()[i])));
  }
}

}  // namespace gpass_test_passes_nchwc_layout
