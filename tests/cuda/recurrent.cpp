// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of recurrent.hpp (ONNX LinearAttention and CausalConvWithState, opset 27):
// which nodes the GPU serves and every generated source compiling with NVRTC (no GPU needed),
// each op against the Eigen CPU kernel on a GPU (the same sums in the same order; without a
// GPU, the CPU side of each comparison runs), and the errors naming the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_recurrent {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::fails_alike;

gpass::exec::kernel_node linear(i64 qn, i64 kvn, const char* rule, double scale = 0.0) {
  gpass::attribute_map a{{"q_num_heads", qn}, {"kv_num_heads", kvn}, {"update_rule", std::string(rule)}};
  if (scale != 0.0) a["scale"] = scale;
  return node("LinearAttention", 27, std::move(a), 2);
}

gpass::exec::kernel_node causal(const char* act = "none", std::size_t outs = 2) {
  return node("CausalConvWithState", 27, {{"activation", std::string(act)}}, outs);
}

}  // namespace

TEST_CASE("cuda: LinearAttention and CausalConvWithState are served for the float types, and their sources compile with NVRTC") {
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) {
    CAPTURE(to_string(t));
    CHECK(gpass_test_cuda::serves_in("", "LinearAttention", {t, t, t}, {{"q_num_heads", i64{2}}, {"kv_num_heads", i64{1}}}));
    CHECK(gpass_test_cuda::serves_in("", "CausalConvWithState", {t, t}));
  }
  CHECK_FALSE(gpass_test_cuda::serves_in("", "CausalConvWithState", {dtype::int32, dtype::int32}));
  for (const auto& [name, src] : ex::cuda_recurrent::recurrent_generated_sources())
    for (int arch : {80, 90}) {
      INFO(name << " sm_" << arch);
      CHECK(!ex::nvrtc_compile(src, name, arch, ex::nvrtc_target::ptx).empty());
    }
}

TEST_CASE("cuda: LinearAttention matches the CPU kernel (every update rule, grouped heads, past state, mixed types)") {
  GPASS_GPU_OR_CPU_SIDE();
  std::uint64_t seed = 800;
  struct shape_case {
    i64 B, T, qn, kvn, dk, dv;
  };
  for (const shape_case& c : {shape_case{1, 1, 1, 1, 1, 1}, shape_case{2, 5, 4, 2, 3, 4}, shape_case{1, 17, 2, 2, 8, 5}, shape_case{3, 4, 6, 3, 16, 33},
                              shape_case{1, 64, 1, 1, 32, 32}}) {
    const tensor q = rnd({c.B, c.T, c.qn * c.dk}, seed++, dtype::f32, -1, 1);
    const tensor k = rnd({c.B, c.T, c.kvn * c.dk}, seed++, dtype::f32, -1, 1);
    const tensor v = rnd({c.B, c.T, c.kvn * c.dv}, seed++, dtype::f32, -1, 1);
    const tensor past = rnd({c.B, c.kvn, c.dk, c.dv}, seed++, dtype::f32, -1, 1);
    const tensor decay_head = rnd({c.B, c.T, c.kvn}, seed++, dtype::f32, -0.5, 0);
    const tensor decay_key = rnd({c.B, c.T, c.kvn * c.dk}, seed++, dtype::f32, -0.5, 0);
    const tensor beta_head = rnd({c.B, c.T, c.kvn}, seed++, dtype::f32, 0, 1);
    const tensor beta_one = rnd({c.B, c.T, 1}, seed++, dtype::f32, 0, 1);
    INFO("B " << c.B << " T " << c.T << " heads " << c.qn << "/" << c.kvn << " dk " << c.dk << " dv " << c.dv);
    // sums in the CPU's order; the decay's exponential (of a float in double, rounded) may
    // differ from glibc's expf in the last bit, which the later steps carry (a host emulation of
    // the kernel: within 4e-7 of the CPU here, 1e-5 relative + 1e-5 absolute)
    const double rtol = 1e-5, atol = 1e-6;
    differential(linear(c.qn, c.kvn, "linear"), {q, k, v}, rtol, atol);
    differential(linear(c.qn, c.kvn, "linear", 0.5), {q, k, v, past}, rtol, atol);
    differential(linear(c.qn, c.kvn, "gated"), {q, k, v, tensor{}, decay_head}, rtol, atol);
    differential(linear(c.qn, c.kvn, "gated"), {q, k, v, past, decay_key}, rtol, atol);
    differential(linear(c.qn, c.kvn, "delta"), {q, k, v, tensor{}, tensor{}, beta_head}, rtol, atol);
    differential(linear(c.qn, c.kvn, "gated_delta"), {q, k, v, past, decay_key, beta_one}, rtol, atol);
    differential(linear(c.qn, c.kvn, "gated_delta"), {q, k, v, tensor{}, decay_head, beta_head}, rtol, atol);
  }
  // other and mixed element types: f16 / bf16 / f64 inputs, the state in the past state's type
  const tensor q16 = rnd({2, 6, 4 * 8}, seed++, dtype::f16, -1, 1), k16 = rnd({2, 6, 2 * 8}, seed++, dtype::f16, -1, 1);
  const tensor vb = rnd({2, 6, 2 * 5}, seed++, dtype::bf16, -1, 1), p64 = rnd({2, 2, 8, 5}, seed++, dtype::f64, -1, 1);
  const tensor g64 = rnd({2, 6, 2}, seed++, dtype::f64, -0.5, 0), b32 = rnd({2, 6, 2}, seed++, dtype::f32, 0, 1);
  differential(linear(4, 2, "gated_delta"), {q16, k16, vb, p64, g64, b32}, 1e-3, 1e-3);
  differential(linear(4, 2, "linear"), {rnd({1, 3, 8}, seed++, dtype::f64), rnd({1, 3, 4}, seed++, dtype::f64), rnd({1, 3, 6}, seed++, dtype::f64)},
               1e-6, 1e-6);
  // empty heads and an empty sequence
  differential(linear(1, 1, "linear"), {tensor(dtype::f32, {1, 3, 4}), tensor(dtype::f32, {1, 3, 4}), tensor(dtype::f32, {1, 3, 0})});
  differential(linear(2, 1, "linear"), {tensor(dtype::f32, {2, 0, 4}), tensor(dtype::f32, {2, 0, 2}), tensor(dtype::f32, {2, 0, 3})});
  differential(linear(2, 1, "linear"), {tensor(dtype::f32, {1, 2, 0}), tensor(dtype::f32, {1, 2, 0}), rnd({1, 2, 3}, seed++)});
}

TEST_CASE("cuda: CausalConvWithState matches the CPU kernel (state, bias, SiLU, every float type)") {
  GPASS_GPU_OR_CPU_SIDE();
  std::uint64_t seed = 900;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16})
    for (const ints& s : {ints{1, 1, 1}, ints{2, 3, 7}, ints{4, 16, 100}, ints{1, 5, 2}})
      for (i64 K : {1, 2, 4, 9}) {
        INFO("type " << to_string(t) << " x " << gpass::shape::of(s).to_string() << " k " << K);
        const tensor x = rnd(s, seed++, t, -2, 2), w = rnd({s[1], 1, K}, seed++, t, -1, 1);
        const tensor bias = rnd({s[1]}, seed++, t, -1, 1), past = rnd({s[0], s[1], K - 1}, seed++, t, -2, 2);
        differential(causal(), {x, w}, 0, 0);
        differential(causal(), {x, w, bias, past}, 0, 0);
        // (SiLU's exponential: of a float in double, rounded; of a double the device's)
        differential(causal("silu"), {x, w, tensor{}, past}, 1e-6, 1e-7);
        differential(causal("swish", 1), {x, w, bias}, 1e-6, 1e-7);
      }
  differential(causal(), {tensor(dtype::f32, {2, 3, 0}), rnd({3, 1, 3}, seed++), tensor{}, rnd({2, 3, 2}, seed++)}, 0, 0);
  differential(causal(), {tensor(dtype::f32, {0, 3, 4}), rnd({3, 1, 3}, seed++)}, 0, 0);
}

TEST_CASE("cuda: LinearAttention's and CausalConvWithState's errors name the node, as the CPU's") {
  const tensor q = rnd({1, 2, 4}, 1), k = rnd({1, 2, 4}, 2), v = rnd({1, 2, 4}, 3);
  fails_alike(linear(1, 1, "gated"), {q, k, v}, "update_rule 'gated' needs the input decay");
  fails_alike(linear(1, 1, "linear"), {q, k, v, tensor{}, tensor{}, rnd({1, 2, 1}, 4)}, "update_rule 'linear' takes no input beta");
  fails_alike(linear(1, 1, "linear"), {q, rnd({1, 3, 4}, 5), v}, "the same batch and sequence length");
  fails_alike(linear(2, 1, "linear"), {rnd({1, 2, 6}, 6), k, v}, "key's head size 4 differs from query's 3");
  fails_alike(linear(1, 1, "linear"), {q, k, v, rnd({1, 1, 4, 3}, 7)}, "past_state [1,1,4,3] must be (batch, kv_heads, k_head, v_head)");
  fails_alike(linear(1, 1, "gated"), {q, k, v, tensor{}, rnd({1, 2, 3}, 8)}, "decay must be (batch, seq, kv_heads)");
  const tensor x = rnd({1, 2, 5}, 9);
  fails_alike(causal(), {x, rnd({3, 1, 2}, 10)}, "weight must be (channels, 1, k) with channels 2");
  fails_alike(causal(), {x, rnd({2, 1, 2}, 11), rnd({3}, 12)}, "bias must be (channels) = (2)");
  fails_alike(causal(), {x, rnd({2, 1, 3}, 13), tensor{}, rnd({1, 2, 1}, 14)}, "past_state must be (batch, channels, k - 1) = [1,2,2]");
  fails_alike(causal(), {x, rnd({2, 1, 2}, 15, dtype::f64)}, "must have the input's element type f32");
  fails_alike(causal(), {rnd({2, 5}, 16), rnd({2, 1, 2}, 17)}, "input must be 3-D");
}

}  // namespace gpass_test_cuda_recurrent
