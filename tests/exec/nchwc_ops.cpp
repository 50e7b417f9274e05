// SPDX-License-Identifier: Apache-2.0
// Tests of the Eigen CPU kernels of gpass's channel-blocked ops (kernels/nchwc_ops.hpp):
// ReorderInput -> NchwcConv / pools -> ReorderOutput against the NCHW kernels (FusedConv,
// MaxPool, AveragePool, the global pools) on the same inputs, both block sizes; and the
// errors of bad nodes and inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>

#include "kernel_fixture.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_nchwc_ops {

namespace {

using gpass::tensor;
using gpass::exec::eigen_cpu;
using gpass::exec::kernel_node;
using gpass::exec::kernel_registry;
using gpass::exec::value;
using i64 = std::int64_t;

const kernel_registry<eigen_cpu>& registry() {
  static const kernel_registry<eigen_cpu> r = [] {
    kernel_registry<eigen_cpu> k;
    gpass::exec::register_eigen_cpu_linalg(k);
    return k;
  }();
  return r;
}

tensor random_tensor(std::vector<i64> sizes, unsigned seed) { return gpass_test_exec::random_f32(std::move(sizes), seed); }

kernel_node make_node(std::string domain, std::string op, std::size_t inputs, gpass::attribute_map attrs, int opset = 1) {
  kernel_node n{.name = "n", .op = std::move(op), .attrs = std::move(attrs), .opset = opset};
  n.domain = std::move(domain);
  n.input_types.resize(inputs);
  n.output_types.resize(1);
  return n;
}

tensor run1(const kernel_node& n, std::vector<value> in, int threads = 1) {
  eigen_cpu cpu({.threads = threads});
  return gpass::exec::run_kernel(cpu, registry(), n, std::move(in)).at(0).tensor();
}

std::string error_of(const kernel_node& n, std::vector<value> in) {
  try {
    run1(n, std::move(in));
  } catch (const gpass::error& e) {
    return e.what();
  }
  return "no error";
}

void check_same(const tensor& got, const tensor& want) {
  REQUIRE(got.sizes() == want.sizes());
  i64 bad = 0;
  for (i64 i = 0; i < want.size(); ++i) {
    const double g = got.data<float>()[i], w = want.data<float>()[i];
    if (!(std::abs(g - w) <= 1e-4 * (1.0 + std::abs(w)))) ++bad;
  }
  CHECK(bad == 0);
}

gpass::type f32_type(const std::vector<i64>& sizes) {
  return gpass::tensor_type{gpass::dtype::f32, gpass::shape::of(sizes)};
}

struct conv_case {
  i64 N, C, H, W, M, K, s, p, d, G;
  std::string activation;
  bool residual;
  bool nchw_input;
  i64 sw = 0;  ///< the stride along a row, where not s
};

/// FusedConv (NCHW) against ReorderInput -> NchwcConv -> ReorderOutput, block b; the filter
/// constant (packed when the kernel is made) or not (packed per run).
void check_conv(const conv_case& c, i64 b, bool constant_filter, int threads) {
  const i64 sw = c.sw ? c.sw : c.s;
  INFO("C" << c.C << " " << c.H << "x" << c.W << " M" << c.M << " k" << c.K << " s" << c.s << "," << sw << " p" << c.p << " d" << c.d
           << " G" << c.G << " " << c.activation << std::string(c.residual ? " +Z" : "")
           << std::string(c.nchw_input ? " nchw input" : "") << " b" << b << std::string(constant_filter ? " constant W" : "")
           << " threads " << threads);
  const tensor x = random_tensor({c.N, c.C, c.H, c.W}, 1), w = random_tensor({c.M, c.C / c.G, c.K, c.K}, 2),
               bias = random_tensor({c.M}, 3);
  gpass::attribute_map a{{"group", c.G},
                         {"strides", std::vector<i64>{c.s, sw}},
                         {"dilations", std::vector<i64>{c.d, c.d}},
                         {"pads", std::vector<i64>{c.p, c.p, c.p, c.p}},
                         {"activation", c.activation}};
  if (c.activation == "Clip") a["activation_params"] = std::vector<double>{-0.25, 0.5};
  kernel_node ref = make_node("gpass", "FusedConv", c.residual ? 4 : 3, a);
  const i64 OH = (c.H + 2 * c.p - (c.K - 1) * c.d - 1) / c.s + 1, OW = (c.W + 2 * c.p - (c.K - 1) * c.d - 1) / sw + 1;
  const tensor z = random_tensor({c.N, c.M, OH, OW}, 4);
  std::vector<value> in{x, w, bias};
  if (c.residual) in.push_back(z);
  const tensor want = run1(ref, in);

  kernel_node rin = make_node("gpass", "NchwcReorderInput", 1, {{"block", b}});
  const tensor xb = c.nchw_input ? x : run1(rin, {x});
  a["block"] = b;
  kernel_node conv = make_node("gpass", "NchwcConv", c.residual ? 4 : 3, a);
  conv.input_types[0] = f32_type(xb.sizes());
  if (constant_filter) conv.constant_inputs = {std::nullopt, w};
  std::vector<value> bin{xb, w, bias};
  if (c.residual) bin.push_back(run1(rin, {z}));
  const tensor yb = run1(conv, bin, threads);
  CHECK(yb.sizes() == std::vector<i64>{c.N, (c.M + b - 1) / b, OH, OW, b});
  const tensor y = run1(make_node("gpass", "NchwcReorderOutput", 1, {{"channels", c.M}}), {yb});
  check_same(y, want);
}

}  // namespace

TEST_CASE("exec.nchwc_ops.conv_matches_fused_conv") {
  const std::vector<conv_case> cases = {
      {1, 20, 9, 11, 24, 3, 1, 1, 1, 1, "Relu", false, false},   // 3x3, ragged channels
      {2, 16, 7, 7, 40, 1, 1, 0, 1, 1, "", true, false},         // pointwise + residual
      {1, 24, 13, 10, 24, 3, 2, 1, 1, 24, "Clip", false, false}, // depthwise, stride 2
      {1, 32, 8, 8, 64, 3, 1, 2, 2, 2, "Relu", true, false},     // two groups of 16 -> 32, dilated
      {1, 3, 23, 21, 20, 7, 2, 3, 1, 1, "Relu", false, true},    // a stem on the NCHW input
      {1, 17, 5, 6, 9, 5, 3, 2, 1, 1, "", false, false},         // 5x5, stride 3
      {2, 40, 18, 17, 33, 3, 1, 1, 1, 1, "Clip", true, false},   // 3x3 / 1 + residual: Winograd when W is constant
      {1, 24, 6, 5, 16, 3, 1, 0, 1, 1, "Relu", false, false},    // 3x3 / 1 without pads (tiles cut short)
      {1, 96, 7, 7, 160, 1, 1, 0, 1, 1, "", true, false},        // work enough for threads: chunks of unequal blocks
      {1, 40, 15, 13, 56, 3, 1, 1, 1, 1, "Relu", false, false},  // and runs of unequal pixels
      {1, 200, 13, 13, 24, 1, 1, 0, 1, 1, "Clip", true, false},  // pointwise, many input blocks: split by input blocks on threads
      {1, 200, 13, 13, 24, 1, 1, 0, 1, 1, "", false, false},
      // pointwise of stride > 1 without pads: over a copy of the pixels read (nc::subsample_first),
      // odd planes, ragged channels, a batch, both strides, a residual; a 1x1 / 2 with pads does not
      {2, 40, 15, 13, 136, 1, 2, 0, 1, 1, "Relu", true, false},
      {1, 24, 9, 11, 80, 1, 3, 0, 1, 1, "", false, false, 2},
      {3, 32, 10, 7, 192, 1, 1, 0, 1, 2, "Clip", true, false, 2},  // two groups, along rows only
      {1, 48, 12, 12, 72, 1, 2, 1, 1, 1, "Relu", false, false},
  };
  for (const i64 b : {8, 16})
    for (const conv_case& c : cases) {
      check_conv(c, b, true, 1);
      check_conv(c, b, true, 2);
      check_conv(c, b, false, 2);
      check_conv(c, b, false, 3);
    }
}

TEST_CASE("exec.nchwc_ops.pools_match_the_nchw_pools") {
  const tensor x = random_tensor({2, 21, 13, 12}, 5);
  struct pool_case {
    const char* op;
    gpass::attribute_map attrs;
  };
  const std::vector<pool_case> cases = {
      {"MaxPool", {{"kernel_shape", std::vector<i64>{3, 3}}, {"strides", std::vector<i64>{2, 2}}, {"pads", std::vector<i64>{1, 1, 1, 1}}}},
      {"MaxPool", {{"kernel_shape", std::vector<i64>{2, 3}}, {"strides", std::vector<i64>{2, 2}}, {"ceil_mode", i64{1}}}},
      {"AveragePool",
       {{"kernel_shape", std::vector<i64>{3, 3}}, {"strides", std::vector<i64>{2, 2}}, {"pads", std::vector<i64>{1, 1, 1, 1}},
        {"count_include_pad", i64{1}}}},
      {"AveragePool",
       {{"kernel_shape", std::vector<i64>{3, 2}}, {"strides", std::vector<i64>{2, 1}}, {"pads", std::vector<i64>{0, 1, 1, 0}},
        {"ceil_mode", i64{1}}}},
      {"GlobalAveragePool", {}},
      {"GlobalMaxPool", {}},
  };
  for (const i64 b : {8, 16})
    for (const pool_case& c : cases) {
      INFO(c.op << " b" << b);
      const int opset = std::string(c.op) == "AveragePool" ? 19 : 12;
      kernel_node ref = make_node("", c.op, 1, c.attrs, opset);
      const tensor want = run1(ref, {x});
      gpass::attribute_map a = c.attrs;
      a["block"] = b;
      const tensor xb = run1(make_node("gpass", "NchwcReorderInput", 1, {{"block", b}}), {x});
      const tensor yb = run1(make_node("gpass", std::string("Nchwc") + c.op, 1, a), {xb});
      const tensor y = run1(make_node("gpass", "NchwcReorderOutput", 1, {{"channels", i64{21}}}), {yb});
      check_same(y, want);
    }
}

TEST_CASE("exec.nchwc_ops.bad_nodes_and_inputs_are_errors") {
  const tensor x = random_tensor({1, 16, 5, 5}, 6), w = random_tensor({8, 16, 3, 3}, 7);
  const tensor xb = run1(make_node("gpass", "NchwcReorderInput", 1, {{"block", i64{8}}}), {x});
  gpass::attribute_map a{{"pads", std::vector<i64>{1, 1, 1, 1}}, {"block", i64{8}}};
  // a block size the kernels do not have
  CHECK(error_of(make_node("gpass", "NchwcReorderInput", 1, {{"block", i64{4}}}), {x}).find("block must be 8 or 16") !=
        std::string::npos);
  // input channels that are not the filter's
  const tensor w24 = random_tensor({8, 24, 3, 3}, 8);
  CHECK(error_of(make_node("gpass", "NchwcConv", 2, a), {xb, w24}).find("input channels") != std::string::npos);
  // groups of 4 channels: no blocked kernel
  gpass::attribute_map ga = a;
  ga["group"] = i64{4};
  const tensor w4 = random_tensor({8, 4, 3, 3}, 9);
  CHECK(error_of(make_node("gpass", "NchwcConv", 2, ga), {xb, w4}).find("no blocked kernel") != std::string::npos);
  // an activation the output step does not have
  gpass::attribute_map sa = a;
  sa["activation"] = std::string("Sigmoid");
  CHECK(error_of(make_node("gpass", "NchwcConv", 2, sa), {xb, w}).find("none, Relu or Clip") != std::string::npos);
  // a residual of the wrong shape
  CHECK(error_of(make_node("gpass", "NchwcConv", 4, a), {xb, w, value{}, xb}).find("Z must be") != std::string::npos);
  // a channel count the blocks cannot hold
  CHECK(error_of(make_node("gpass", "NchwcReorderOutput", 1, {{"channels", i64{17}}}), {xb}).find("does not hold") !=
        std::string::npos);
  // a pool over an NCHW tensor
  CHECK(error_of(make_node("gpass", "NchwcMaxPool", 1, {{"kernel_shape", std::vector<i64>{2, 2}}, {"block", i64{8}}}), {x})
            .find("blocked tensor") != std::string::npos);
  // an empty batch: an empty result
  const tensor x0 = random_tensor({0, 16, 5, 5}, 10);
  const tensor xb0 = run1(make_node("gpass", "NchwcReorderInput", 1, {{"block", i64{8}}}), {x0});
  CHECK(run1(make_node("gpass", "NchwcConv", 2, a), {xb0, w}).sizes() == std::vector<i64>{0, 1, 5, 5, 8});
}

}  // namespace gpass_test_exec_nchwc_ops
