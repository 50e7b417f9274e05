// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file recurrent_rules.hpp
/// The attribute reading and checks of ONNX's recurrent-state ops (opset 27) that the Eigen
/// CPU and CUDA kernels share, so that both accept the same nodes and inputs and fail with the
/// same messages: LinearAttention (its update rule, head counts, the shapes of its query, key,
/// value, decay, beta and past state) and CausalConvWithState (its activation, the shapes of
/// its weight, bias and past state). Errors name the node.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/exec/kernel.hpp>

namespace gpass::exec::recurrent_rules {

using i64 = std::int64_t;

/// What a kernel knows of an input: whether it is there, its element type and sizes.
struct operand {
  bool present = false;
  dtype type = dtype::undefined;
  std::vector<i64> sizes;
};

/// Input `i` of a kernel's context `ctx` (either policy's) as an `operand`.
template <class Context>
operand operand_of(const Context& ctx, std::size_t i) {
  if (!ctx.has_input(i)) return {};
  return {true, ctx.input(i).element_type(), ctx.input(i).sizes()};
}

/// Checks that `t` is a floating-point type (f32, f64, f16, bf16).
inline void check_float(dtype t, const char* what, const kernel_node& n) {
  if (t != dtype::f32 && t != dtype::f64 && t != dtype::f16 && t != dtype::bf16)
    n.fail(std::string(what) + " must be a floating-point tensor, got " + std::string(to_string(t)));
}

// ---- LinearAttention ----------------------------------------------------------------------------

/// LinearAttention's attributes: head counts, the update rule (linear, gated, delta or
/// gated_delta: whether the state decays by exp(decay) and whether values are corrected by
/// beta (v - S^T k)), the scale (0: 1 / sqrt(k_head)).
struct linear_attention_attrs {
  i64 qn = 0, kvn = 0;
  std::string rule;
  bool gating = false, delta = false;
  double scale = 0.0;
};

inline linear_attention_attrs read_linear_attention(const kernel_node& n) {
  linear_attention_attrs a;
  a.qn = n.attr<i64>("q_num_heads");
  a.kvn = n.attr<i64>("kv_num_heads");
  if (a.qn <= 0 || a.kvn <= 0 || a.qn % a.kvn != 0)
    n.fail("q_num_heads (" + std::to_string(a.qn) + ") must be a positive multiple of kv_num_heads (" + std::to_string(a.kvn) + ")");
  a.rule = n.attr<std::string>("update_rule", "gated_delta");
  if (a.rule != "linear" && a.rule != "gated" && a.rule != "delta" && a.rule != "gated_delta")
    n.fail("update_rule must be linear, gated, delta or gated_delta, got '" + a.rule + "'");
  a.gating = a.rule == "gated" || a.rule == "gated_delta";
  a.delta = a.rule == "delta" || a.rule == "gated_delta";
  a.scale = n.attr<double>("scale", 0.0);
  return a;
}

/// The geometry of a LinearAttention call: batch B, sequence T, head sizes dk / dv, query heads
/// per KV head, the decay's values per KV head (1 or dk; 0: no decay) and beta's per step (its
/// last dim, 1 or kv_heads; 0: no beta), the state's sizes (B, kv_heads, dk, dv) and type (the
/// past state's, else the query's), the scale.
struct linear_attention_dims {
  i64 B = 0, T = 0, dk = 0, dv = 0, group = 1, decay_per = 0, beta_per = 0;
  std::vector<i64> state_sizes;
  dtype state_type = dtype::undefined;
  float scale = 1.0f;
  double state_count = 0, out_count = 0;  ///< elements of the state and of the output (in double: unchecked products)
};

/// Checks LinearAttention's inputs (query, key, value, past_state, decay, beta).
inline linear_attention_dims check_linear_attention(const linear_attention_attrs& a, const operand& q, const operand& k, const operand& v,
                                                    const operand& past, const operand& decay, const operand& beta, const kernel_node& n) {
  if (a.gating != decay.present) n.fail("update_rule '" + a.rule + (a.gating ? "' needs the input decay" : "' takes no input decay"));
  if (a.delta != beta.present) n.fail("update_rule '" + a.rule + (a.delta ? "' needs the input beta" : "' takes no input beta"));
  for (const operand* t : {&q, &k, &v}) {
    check_float(t->type, "query, key and value", n);
    if (t->sizes.size() != 3) n.fail("query, key and value must be 3-D (batch, seq, heads * head), got " + shape::of(t->sizes).to_string());
  }
  linear_attention_dims d;
  d.B = q.sizes[0];
  d.T = q.sizes[1];
  for (const operand* t : {&k, &v})
    if (t->sizes[0] != d.B || t->sizes[1] != d.T)
      n.fail("query, key and value must have the same batch and sequence length, got " + shape::of(q.sizes).to_string() + ", " +
             shape::of(k.sizes).to_string() + " and " + shape::of(v.sizes).to_string());
  if (q.sizes[2] % a.qn != 0 || k.sizes[2] % a.kvn != 0 || v.sizes[2] % a.kvn != 0)
    n.fail("the last dims of query, key and value (" + std::to_string(q.sizes[2]) + ", " + std::to_string(k.sizes[2]) + ", " +
           std::to_string(v.sizes[2]) + ") must be multiples of their head counts (" + std::to_string(a.qn) + ", " + std::to_string(a.kvn) + ")");
  d.dk = q.sizes[2] / a.qn;
  d.dv = v.sizes[2] / a.kvn;
  d.group = a.qn / a.kvn;
  if (k.sizes[2] / a.kvn != d.dk) n.fail("key's head size " + std::to_string(k.sizes[2] / a.kvn) + " differs from query's " + std::to_string(d.dk));
  if (a.gating) {
    check_float(decay.type, "decay", n);
    const auto& g = decay.sizes;
    if (g.size() != 3 || g[0] != d.B || g[1] != d.T || (g[2] != a.kvn && g[2] != a.kvn * d.dk))
      n.fail("decay must be (batch, seq, kv_heads) or (batch, seq, kv_heads * k_head), got " + shape::of(g).to_string());
    d.decay_per = g[2] == a.kvn ? 1 : d.dk;
  }
  if (a.delta) {
    check_float(beta.type, "beta", n);
    const auto& bt = beta.sizes;
    if (bt.size() != 3 || bt[0] != d.B || bt[1] != d.T || (bt[2] != a.kvn && bt[2] != 1))
      n.fail("beta must be (batch, seq, kv_heads) or (batch, seq, 1), got " + shape::of(bt).to_string());
    d.beta_per = bt[2];
  }
  d.state_sizes = {d.B, a.kvn, d.dk, d.dv};
  const double Bd = static_cast<double>(d.B);
  d.state_count = Bd * static_cast<double>(a.kvn) * static_cast<double>(d.dk) * static_cast<double>(d.dv);
  d.out_count = Bd * static_cast<double>(d.T) * static_cast<double>(a.qn) * static_cast<double>(d.dv);
  d.state_type = q.type;
  if (past.present) {
    check_float(past.type, "past_state", n);
    if (past.sizes != d.state_sizes)
      n.fail("past_state " + shape::of(past.sizes).to_string() + " must be (batch, kv_heads, k_head, v_head) " +
             shape::of(d.state_sizes).to_string());
    d.state_type = past.type;
  }
  d.scale = a.scale == 0.0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.dk))) : static_cast<float>(a.scale);
  return d;
}

/// `check_linear_attention` of a kernel context's inputs (either policy's).
template <class Context>
linear_attention_dims check_linear_attention(const linear_attention_attrs& a, const Context& ctx) {
  return check_linear_attention(a, operand_of(ctx, 0), operand_of(ctx, 1), operand_of(ctx, 2), operand_of(ctx, 3), operand_of(ctx, 4),
                                operand_of(ctx, 5), ctx.node());
}

// ---- CausalConvWithState ------------------------------------------------------------------------

/// CausalConvWithState's activation: whether it is SiLU (silu or swish; else none).
inline bool read_causal_conv_silu(const kernel_node& n) {
  const std::string act = n.attr<std::string>("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") n.fail("activation must be none, silu or swish, got '" + act + "'");
  return act != "none";
}

/// The geometry of a CausalConvWithState call: input (B, C, L), weight (C, 1, K).
struct causal_conv_dims {
  i64 B = 0, C = 0, L = 0, K = 1;
};

/// Checks CausalConvWithState's input, weight, bias and past_state.
inline causal_conv_dims check_causal_conv(const operand& x, const operand& w, const operand& bias, const operand& past, const kernel_node& n) {
  if (x.sizes.size() != 3) n.fail("input must be 3-D (batch, channels, length), got " + shape::of(x.sizes).to_string());
  causal_conv_dims d{x.sizes[0], x.sizes[1], x.sizes[2], 1};
  const auto& ws = w.sizes;
  if (ws.size() != 3 || ws[0] != d.C || ws[1] != 1 || ws[2] < 1)
    n.fail("weight must be (channels, 1, k) with channels " + std::to_string(d.C) + ", got " + shape::of(ws).to_string());
  d.K = ws[2];
  for (const operand* t : {&w, &bias, &past})
    if (t->present && t->type != x.type)
      n.fail("weight, bias and past_state must have the input's element type " + std::string(to_string(x.type)));
  if (bias.present && (bias.sizes.size() != 1 || bias.sizes[0] != d.C))
    n.fail("bias must be (channels) = (" + std::to_string(d.C) + "), got " + shape::of(bias.sizes).to_string());
  if (past.present && past.sizes != std::vector<i64>{d.B, d.C, d.K - 1})
    n.fail("past_state must be (batch, channels, k - 1) = " + shape::of(std::vector<i64>{d.B, d.C, d.K - 1}).to_string() + ", got " +
           shape::of(past.sizes).to_string());
  return d;
}

/// `check_causal_conv` of a kernel context's inputs (either policy's).
template <class Context>
causal_conv_dims check_causal_conv(const Context& ctx) {
  return check_causal_conv(operand_of(ctx, 0), operand_of(ctx, 1), operand_of(ctx, 2), operand_of(ctx, 3), ctx.node());
}

}  // namespace gpass::exec::recurrent_rules
