// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file attention.hpp
/// ONNX transformer-block ops of the newer opsets: Attention (versions 23, 24 and 25: 3-D and
/// 4-D inputs, grouped-query heads, past and present key/value caches, the optional
/// qk_matmul_output, nonpad_kv_seqlen from 24, sliding windows from 25) and gpass's fused
/// `gpass::ScaledDotProductAttention` (what `fuse-epilogues` makes of a written-out
/// attention), RMSNormalization
/// (23), RotaryEmbedding (23), GroupNormalization (18: scale and bias per group, 21: per
/// channel, with stash_type), LinearAttention (27), CausalConvWithState (27), SwiGLU (28) and
/// ai.onnx.preview's FlexAttention (1; its score_mod and prob_mod are functions).
///
/// The shape functions check what the operator definitions require of sizes that are known
/// (head counts dividing hidden sizes, head sizes agreeing between Q, K and the caches) and
/// fail naming the node otherwise.

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/ops/broadcast.hpp>
#include <gpass/ops/onnx/common.hpp>

namespace gpass {

/// Registers the ONNX attention-family ops into `r` (see the file comment).
void register_onnx_attention_ops(op_registry& r);

namespace detail::onnx_ops {

using namespace gpass::onnx_shape;

/// `d / k` for a hidden size `d` split into `k` heads: fails when a known `d` is not a
/// multiple of `k` (`what` names the input).
inline dim head_split(infer_context& c, const dim& d, std::int64_t k, const std::string& what) {
  if (k <= 0) c.fail(what + ": the number of heads must be positive, got " + std::to_string(k));
  if (d.is_known() && d.value() % k != 0)
    c.fail(what + ": hidden size " + std::to_string(d.value()) + " is not a multiple of " + std::to_string(k) + " heads");
  return div_dims(d, dim(k));
}

/// Attention (all versions): Y is (batch, q_heads, q_seq, v_head) for 4-D inputs and (batch,
/// q_seq, q_heads * v_head) for 3-D ones; present_key and present_value are 4-D caches of
/// past + kv_seq positions; qk_matmul_output is (batch, q_heads, q_seq, past + kv_seq).
inline void attention_infer(infer_context& c) {
  shape q = c.input_shape(0), k = c.input_shape(1), v = c.input_shape(2);
  std::optional<std::size_t> rank;
  for (const shape* s : {&q, &k, &v})
    if (s->has_rank()) {
      if (s->rank() != 3 && s->rank() != 4) c.fail("Q, K and V must be 3-D or 4-D, got " + s->to_string());
      if (rank && *rank != s->rank()) c.fail("Q, K and V must have the same rank, got " + q.to_string() + ", " + k.to_string() + " and " + v.to_string());
      rank = s->rank();
    }
  const bool has_qn = c.has_attr("q_num_heads"), has_kvn = c.has_attr("kv_num_heads");
  if (!rank) return;
  if (*rank == 4 && (has_qn || has_kvn) && (c.opset() == 0 || c.opset() >= 25))
    c.fail("q_num_heads and kv_num_heads must not be given for 4-D inputs");
  dim batch, q_heads, q_seq, kv_heads, kv_seq, head, v_head;
  auto at = [](const shape& s, std::size_t i) { return s.has_rank() ? s[i] : dim(); };
  batch = at(q, 0);
  if (k.has_rank()) batch = c.unify(batch, k[0], "(batch of K)");
  if (v.has_rank()) batch = c.unify(batch, v[0], "(batch of V)");
  if (*rank == 3) {
    if (!has_qn || !has_kvn) c.fail("3-D inputs need the attributes q_num_heads and kv_num_heads");
    const std::int64_t qn = c.attr_int("q_num_heads", 0), kvn = c.attr_int("kv_num_heads", 0);
    q_heads = dim(qn);
    kv_heads = dim(kvn);
    q_seq = at(q, 1);
    kv_seq = at(k, 1);
    if (v.has_rank()) kv_seq = c.unify(kv_seq, v[1], "(sequence length of V)");
    head = q.has_rank() ? head_split(c, q[2], qn, "Q") : dim();
    if (k.has_rank()) head = c.unify(head, head_split(c, k[2], kvn, "K"), "(head size of K)");
    v_head = v.has_rank() ? head_split(c, v[2], kvn, "V") : dim();
  } else {
    q_heads = at(q, 1);
    q_seq = at(q, 2);
    head = at(q, 3);
    kv_heads = at(k, 1);
    kv_seq = at(k, 2);
    if (k.has_rank()) head = c.unify(head, k[3], "(head size of K)");
    if (v.has_rank()) {
      kv_heads = c.unify(kv_heads, v[1], "(heads of V)");
      kv_seq = c.unify(kv_seq, v[2], "(sequence length of V)");
    }
    v_head = at(v, 3);
    if (has_qn) q_heads = c.unify(q_heads, dim(c.attr_int("q_num_heads", 0)), "(q_num_heads)");
    if (has_kvn) kv_heads = c.unify(kv_heads, dim(c.attr_int("kv_num_heads", 0)), "(kv_num_heads)");
  }
  if (q_heads.is_known() && kv_heads.is_known() &&
      (kv_heads.value() == 0 || q_heads.value() % kv_heads.value() != 0))
    c.fail("q_num_heads " + q_heads.to_string() + " is not a multiple of kv_num_heads " + kv_heads.to_string());
  // the caches
  dim past(0);
  const bool has_past_k = c.has_input(4), has_past_v = c.has_input(5);
  if (has_past_k != has_past_v) c.fail("past_key and past_value must be given together");
  if (has_past_k) {
    if (c.has_input(6)) c.fail("nonpad_kv_seqlen cannot be combined with past_key and past_value");
    shape pk = c.input_shape(4), pv = c.input_shape(5);
    past = dim();
    for (const shape* s : {&pk, &pv})
      if (s->has_rank() && s->rank() != 4) c.fail("past_key and past_value must be 4-D, got " + s->to_string());
    if (pk.has_rank()) {
      batch = c.unify(batch, pk[0], "(batch of past_key)");
      kv_heads = c.unify(kv_heads, pk[1], "(heads of past_key)");
      past = pk[2];
      head = c.unify(head, pk[3], "(head size of past_key)");
    }
    if (pv.has_rank()) {
      batch = c.unify(batch, pv[0], "(batch of past_value)");
      kv_heads = c.unify(kv_heads, pv[1], "(heads of past_value)");
      past = c.unify(past, pv[2], "(sequence length of past_value)");
      v_head = c.unify(v_head, pv[3], "(head size of past_value)");
    }
  }
  if (c.has_input(6)) {
    shape n = c.input_shape(6);
    if (n.has_rank()) {
      if (n.rank() != 1) c.fail("nonpad_kv_seqlen must be 1-D (batch), got " + n.to_string());
      batch = c.unify(batch, n[0], "(batch of nonpad_kv_seqlen)");
    }
  }
  if (c.has_input(3)) {
    shape m = c.input_shape(3);
    if (m.has_rank() && (m.rank() < 1 || m.rank() > 4))
      c.fail("attn_mask must have rank 1 to 4 (broadcast to batch, heads, q_seq, total_seq), got " + m.to_string());
  }
  const dim total = add_dims(past, kv_seq);
  if (*rank == 4) c.set_shape(0, shape{batch, q_heads, q_seq, v_head});
  else c.set_shape(0, shape{batch, q_seq, mul_dims(q_heads, v_head)});
  c.set_shape(1, shape{batch, kv_heads, total, head});
  c.set_shape(2, shape{batch, kv_heads, total, v_head});
  c.set_shape(3, shape{batch, q_heads, q_seq, total});
}

/// RMSNormalization: Y has X's shape and dtype (ONNX's inference function; its formal says
/// the scale's type, which ONNX's function body makes equal to X's).
inline void rms_norm_infer(infer_context& c) {
  shape x = c.input_shape(0);
  if (x.has_rank()) {
    if (x.rank() == 0) c.fail("X must have rank >= 1");
    axis(c, c.attr_int("axis", -1), x.rank());
  }
  const std::int64_t stash = c.attr_int("stash_type", 1);
  if (stash != 1 && stash != 10 && stash != 11 && stash != 16)
    c.fail("stash_type " + std::to_string(stash) + " is not a floating-point type (1, 10, 11 or 16)");
  c.set_tensor(0, c.input_dtype(0), x);
}

/// RotaryEmbedding: Y has X's type; checks the head and rotary sizes against the caches.
inline void rotary_infer(infer_context& c) {
  shape x = c.input_shape(0);
  c.set_shape(0, x);
  if (!x.has_rank()) return;
  if (x.rank() != 3 && x.rank() != 4) c.fail("X must be 3-D or 4-D, got " + x.to_string());
  const std::int64_t heads = c.attr_int("num_heads", 0);
  dim head;
  if (x.rank() == 4) head = x[3];
  else if (heads <= 0) c.fail("a 3-D X needs the attribute num_heads");
  else head = head_split(c, x[2], heads, "X");
  std::int64_t rot = c.attr_int("rotary_embedding_dim", 0);
  if (rot < 0) c.fail("rotary_embedding_dim must not be negative, got " + std::to_string(rot));
  if (rot == 0 && head.is_known()) rot = head.value();
  if (head.is_known() && rot > head.value())
    c.fail("rotary_embedding_dim " + std::to_string(rot) + " is larger than the head size " + head.to_string());
  if (rot > 0 && rot % 2 != 0) c.fail("the rotated size " + std::to_string(rot) + " must be even");
  const std::size_t want_rank = c.has_input(3) ? 2 : 3;
  for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
    shape s = c.input_shape(i);
    if (!s.has_rank()) continue;
    const std::string what = i == 1 ? "cos_cache" : "sin_cache";
    if (s.rank() != want_rank)
      c.fail(what + " must be " + std::to_string(want_rank) + "-D " +
             (want_rank == 2 ? "(max_position, rotary_dim / 2) with position_ids" : "(batch, seq, rotary_dim / 2) without position_ids") +
             ", got " + s.to_string());
    if (rot > 0) c.unify(s[s.rank() - 1], dim(rot / 2), "(last dim of " + what + " vs rotary_embedding_dim / 2)");
  }
}

/// GroupNormalization: Y has X's shape; scale and bias have `num_groups` elements (version
/// 18) or C (version 21).
inline void group_norm_infer(infer_context& c, bool per_channel) {
  shape x = c.input_shape(0);
  c.set_shape(0, x);
  const std::int64_t groups = c.attr_int("num_groups", 0);
  if (groups <= 0) c.fail("num_groups must be positive, got " + std::to_string(groups));
  if (!x.has_rank()) return;
  if (x.rank() < 2) c.fail("X must have rank >= 2 (N, C, ...), got " + x.to_string());
  const dim& ch = x[1];
  if (ch.is_known() && ch.value() % groups != 0)
    c.fail("the number of channels " + std::to_string(ch.value()) + " is not a multiple of num_groups " + std::to_string(groups));
  const dim want = per_channel ? ch : dim(groups);
  for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
    shape s = c.input_shape(i);
    if (!s.has_rank()) continue;
    const std::string what = i == 1 ? "scale" : "bias";
    if (s.rank() != 1) c.fail(what + " must be 1-D, got " + s.to_string());
    c.unify(s[0], want, "(" + what + " vs " + (per_channel ? "channels" : "num_groups") + ")");
  }
}

/// LinearAttention: output (batch, seq, q_heads * v_head) and present_state (batch, kv_heads,
/// k_head, v_head) of past_state's type, or of the query's when there is no past_state.
inline void linear_attention_infer(infer_context& c) {
  const std::int64_t qn = c.attr_int("q_num_heads", 0), kvn = c.attr_int("kv_num_heads", 0);
  if (qn <= 0 || kvn <= 0 || qn % kvn != 0)
    c.fail("q_num_heads (" + std::to_string(qn) + ") must be a positive multiple of kv_num_heads (" + std::to_string(kvn) + ")");
  const std::string rule = c.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    c.fail("update_rule must be linear, gated, delta or gated_delta, got '" + rule + "'");
  const bool gating = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (gating != c.has_input(4)) c.fail("update_rule '" + rule + (gating ? "' needs the input decay" : "' takes no input decay"));
  if (delta != c.has_input(5)) c.fail("update_rule '" + rule + (delta ? "' needs the input beta" : "' takes no input beta"));
  shape q = c.input_shape(0), k = c.input_shape(1), v = c.input_shape(2);
  for (const shape* s : {&q, &k, &v})
    if (s->has_rank() && s->rank() != 3) c.fail("query, key and value must be 3-D (batch, seq, heads * head), got " + s->to_string());
  auto at = [](const shape& s, std::size_t i) { return s.has_rank() ? s[i] : dim(); };
  dim batch = at(q, 0), seq = at(q, 1);
  for (const shape* s : {&k, &v})
    if (s->has_rank()) {
      batch = c.unify(batch, (*s)[0], "(batch of key and value)");
      seq = c.unify(seq, (*s)[1], "(sequence length of key and value)");
    }
  dim dk = q.has_rank() ? head_split(c, q[2], qn, "query") : dim();
  if (k.has_rank()) dk = c.unify(dk, head_split(c, k[2], kvn, "key"), "(head size of key vs query)");
  const dim dv = v.has_rank() ? head_split(c, v[2], kvn, "value") : dim();
  dtype state = c.input_dtype(0);
  if (c.has_input(3)) {
    state = c.input_dtype(3);
    shape p = c.input_shape(3);
    if (p.has_rank()) {
      if (p.rank() != 4) c.fail("past_state must be 4-D (batch, kv_heads, k_head, v_head), got " + p.to_string());
      batch = c.unify(batch, p[0], "(batch of past_state)");
      c.unify(p[1], dim(kvn), "(heads of past_state vs kv_num_heads)");
      dk = c.unify(dk, p[2], "(k_head of past_state)");
      c.unify(p[3], dv, "(v_head of past_state)");
    }
  }
  c.set_shape(0, shape{batch, seq, mul_dims(dim(qn), dv)});
  c.set_tensor(1, state, shape{batch, dim(kvn), dk, dv});
}

/// CausalConvWithState: output of the input's shape (batch, channels, length) and
/// present_state (batch, channels, k - 1) for a weight (channels, 1, k).
inline void causal_conv_infer(infer_context& c) {
  const std::string act = c.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") c.fail("activation must be none, silu or swish, got '" + act + "'");
  shape x = c.input_shape(0), w = c.input_shape(1);
  if (x.has_rank() && x.rank() != 3) c.fail("input must be 3-D (batch, channels, length), got " + x.to_string());
  if (w.has_rank() && w.rank() != 3) c.fail("weight must be 3-D (channels, 1, k), got " + w.to_string());
  dim batch = x.has_rank() ? x[0] : dim(), ch = x.has_rank() ? x[1] : dim(), keep;
  if (w.has_rank()) {
    ch = c.unify(ch, w[0], "(channels of weight)");
    c.unify(w[1], dim(1), "(weight dim 1 of a depthwise convolution)");
    if (w[2].is_known() && w[2].value() < 1) c.fail("the kernel size must be positive, got " + w.to_string());
    keep = sub_dims(w[2], dim(1));
  }
  if (c.has_input(2)) {
    shape b = c.input_shape(2);
    if (b.has_rank()) {
      if (b.rank() != 1) c.fail("bias must be 1-D (channels), got " + b.to_string());
      ch = c.unify(ch, b[0], "(channels of bias)");
    }
  }
  if (c.has_input(3)) {
    shape p = c.input_shape(3);
    if (p.has_rank()) {
      if (p.rank() != 3) c.fail("past_state must be 3-D (batch, channels, k - 1), got " + p.to_string());
      batch = c.unify(batch, p[0], "(batch of past_state)");
      ch = c.unify(ch, p[1], "(channels of past_state)");
      keep = c.unify(keep, p[2], "(past_state length vs kernel size - 1)");
    }
  }
  if (x.has_rank()) c.set_shape(0, shape{batch, ch, x[2]});
  c.set_shape(1, shape{batch, ch, keep});
}

/// SwiGLU: A and B have the same shape (no broadcasting), which Y has.
inline void swiglu_infer(infer_context& c) {
  shape a = c.input_shape(0), b = c.input_shape(1);
  if (a.has_rank() && b.has_rank()) {
    if (a.rank() != b.rank()) c.fail("A " + a.to_string() + " and B " + b.to_string() + " must have the same shape");
    std::vector<dim> d;
    for (std::size_t i = 0; i < a.rank(); ++i) d.push_back(c.unify(a[i], b[i], "(A and B must have the same shape)"));
    c.set_shape(0, shape(std::move(d)));
    return;
  }
  c.set_shape(0, a.has_rank() ? a : b);
}

/// gpass::ScaledDotProductAttention: Q [B, N, S, D], K [B, N, L, D], V [B, N, L, Dv] give
/// Y [B, N, S, Dv], with B, N and S broadcast with the bias's (the scores are Q K^T + bias);
/// known sizes must agree.
inline void sdpa_infer(infer_context& c) {
  const shape q = c.input_shape(0), k = c.input_shape(1), v = c.input_shape(2);
  const char* names[] = {"Q", "K", "V"};
  const shape* s[] = {&q, &k, &v};
  for (int i = 0; i < 3; ++i)
    if (s[i]->has_rank() && s[i]->rank() != 4) c.fail(std::string(names[i]) + " must be 4-D [batch, heads, sequence, head size], got " + s[i]->to_string());
  auto differ = [](const dim& a, const dim& b) { return a.is_known() && b.is_known() && a.value() != b.value(); };
  if (q.has_rank() && k.has_rank() && (differ(q[3], k[3]) || differ(q[0], k[0]) || differ(q[1], k[1])))
    c.fail("Q " + q.to_string() + " and K " + k.to_string() + " disagree in batch, heads or head size");
  if (k.has_rank() && v.has_rank() && (differ(k[2], v[2]) || differ(k[0], v[0]) || differ(k[1], v[1])))
    c.fail("K " + k.to_string() + " and V " + v.to_string() + " disagree in batch, heads or sequence length");
  if (!q.has_rank() || !k.has_rank() || !v.has_rank()) {
    c.set_tensor(0, c.input_dtype(0), shape());
    return;
  }
  shape scores{q[0], q[1], q[2], k[2]};
  if (c.has_input(3)) {
    const shape b = c.input_shape(3);
    if (b.has_rank() && b.rank() > 4) c.fail("the bias must have at most 4 dimensions, got " + b.to_string());
    try {
      scores = broadcast_shapes({scores, b}, c.symbols());
    } catch (const error& e) {
      c.fail(std::string("the bias does not broadcast with the scores: ") + e.what());
    }
    if (scores.has_rank() && differ(scores[3], k[2])) c.fail("the bias " + b.to_string() + " changes the key length " + k[2].to_string());
  }
  c.set_tensor(0, c.input_dtype(0), scores.has_rank() ? shape{scores[0], scores[1], scores[2], v[3]} : shape());
}

/// FlexAttention (ai.onnx.preview): Q (B, Hq, L, E), K (B, Hkv, S, E), V (B, Hkv, S, Ev) give
/// Y (B, Hq, L, Ev); Hq is a multiple of Hkv.
inline void flex_attention_infer(infer_context& c) {
  shape q = c.input_shape(0), k = c.input_shape(1), v = c.input_shape(2);
  for (const shape* s : {&q, &k, &v})
    if (s->has_rank() && s->rank() != 4) c.fail("Q, K and V must be 4-D, got " + s->to_string());
  dim batch = q.has_rank() ? q[0] : dim();
  if (k.has_rank()) batch = c.unify(batch, k[0], "(batch of K)");
  if (v.has_rank()) batch = c.unify(batch, v[0], "(batch of V)");
  if (q.has_rank() && k.has_rank()) {
    c.unify(q[3], k[3], "(head size of Q and K)");
    if (q[1].is_known() && k[1].is_known() && (k[1].value() <= 0 || q[1].value() % k[1].value() != 0))
      c.fail("the query heads (" + q[1].to_string() + ") must be a multiple of the key/value heads (" + k[1].to_string() + ")");
  }
  if (k.has_rank() && v.has_rank()) {
    c.unify(k[1], v[1], "(heads of K and V)");
    c.unify(k[2], v[2], "(sequence of K and V)");
  }
  c.set_shape(0, shape{batch, q.has_rank() ? q[1] : dim(), q.has_rank() ? q[2] : dim(), v.has_rank() ? v[3] : dim()});
}

}  // namespace detail::onnx_ops
}  // namespace gpass

inline void gpass::register_onnx_attention_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  namespace ot = onnx_types;
  const auto fl = ot::floats();
  auto mask_types = ot::numeric();
  mask_types.push_back(dtype::bool_);

  // Attention: 24 adds the input nonpad_kv_seqlen, 25 the attributes left_window_size and
  // right_window_size.
  auto attention = [&](int since, int until) {
    onnx_op o("Attention", since);
    o.until(until).in("Q:T1").in("K:T1").in("V:T2").in("attn_mask?:U").in("past_key?:T1").in("past_value?:T2");
    if (since >= 24) o.in("nonpad_kv_seqlen?:i64");
    o.out("Y:T1").out("present_key?:T1").out("present_value?:T2").out("qk_matmul_output?:T1").tc("T1", fl).tc("T2", fl)
        .tc("U", mask_types).attr("is_causal", "int", std::int64_t{0}).opt("kv_num_heads", "int").opt("q_num_heads", "int")
        .attr("qk_matmul_output_mode", "int", std::int64_t{0}).opt("scale", "float").attr("softcap", "float", 0.0)
        .opt("softmax_precision", "int");
    if (since >= 25) o.attr("left_window_size", "int", std::int64_t{-1}).attr("right_window_size", "int", std::int64_t{-1});
    o.infer(attention_infer).add(r);
  };
  attention(23, 23);
  attention(24, 24);
  attention(25, op_schema::unbounded);

  {  // ai.onnx.preview FlexAttention: score_mod and prob_mod are functions of one tensor (and captures)
    op_schema flex = onnx_op("FlexAttention", 1).in("Q:T1").in("K:T1").in("V:T1").in("captures~0:V").out("Y:T1").tc("T1", fl)
                         .opt("prob_mod", "func").opt("scale", "float").opt("score_mod", "func").opt("softmax_precision", "int")
                         .infer(flex_attention_infer).build();
    flex.domain = "ai.onnx.preview";
    r.add(std::move(flex));
  }
  {  // gpass's fused op (the optimizer's -O3: fuse-epilogues' `attention` pattern)
    op_schema sdpa = onnx_op("ScaledDotProductAttention", 1).in("Q:T").in("K:T").in("V:T").in("bias?:T").out("Y:T").tc("T", fl)
                         .req("scale", "float").infer(sdpa_infer)
                         .doc("softmax(Q K^T * scale + bias) V over the last axis, per batch and head: Q [B, N, S, D], "
                              "K [B, N, L, D], V [B, N, L, Dv], the scores [B, N, S, L] broadcast with the bias (NumPy); "
                              "Y [B', N', S', Dv] of the broadcast sizes")
                         .build();
    sdpa.domain = "gpass";
    r.add(std::move(sdpa));
  }

  // ONNX names the scale's type parameter V (Y:V), but its inference function gives Y the type
  // of X, as does its function body (Mul of X's normalized values cast back to X's type and
  // the scale): Y is T here. (gpass reserves parameters starting with V for any value.)
  onnx_op("RMSNormalization", 23).in("X:T").in("scale:TS").out("Y:T").tc("T", fl).tc("TS", fl)
      .attr("axis", "int", std::int64_t{-1}).attr("epsilon", "float", 1e-5).attr("stash_type", "int", std::int64_t{1})
      .infer(rms_norm_infer).add(r);

  onnx_op("RotaryEmbedding", 23).in("X:T").in("cos_cache:T").in("sin_cache:T").in("position_ids?:M").out("Y:T")
      .tc("T", {dtype::f32, dtype::f16, dtype::bf16}).tc("M", {dtype::int64}).attr("interleaved", "int", std::int64_t{0})
      .opt("num_heads", "int").attr("rotary_embedding_dim", "int", std::int64_t{0}).infer(rotary_infer).add(r);

  onnx_op("GroupNormalization", 18).until(20).in("X:T").in("scale:T").in("bias:T").out("Y:T").tc("T", fl)
      .attr("epsilon", "float", 1e-5).req("num_groups", "int")
      .infer([](infer_context& c) { group_norm_infer(c, false); }).add(r);
  onnx_op("GroupNormalization", 21).in("X:T").in("scale:T").in("bias:T").out("Y:T").tc("T", fl)
      .attr("epsilon", "float", 1e-5).req("num_groups", "int").attr("stash_type", "int", std::int64_t{1})
      .infer([](infer_context& c) { group_norm_infer(c, true); }).add(r);

  // ONNX names the state's type parameter S; gpass reserves parameters starting with S for
  // sequences: TS here.
  const std::vector<dtype> half_single{dtype::f16, dtype::bf16, dtype::f32};
  onnx_op("LinearAttention", 27).in("query:T").in("key:T").in("value:T").in("past_state?:TS").in("decay?:T").in("beta?:T")
      .out("output:T").out("present_state:TS").tc("T", half_single).tc("TS", half_single)
      .attr("chunk_size", "int", std::int64_t{64}).req("kv_num_heads", "int").req("q_num_heads", "int")
      .attr("scale", "float", 0.0).attr("update_rule", "string", "gated_delta").infer(linear_attention_infer).add(r);
  onnx_op("CausalConvWithState", 27).in("input:T").in("weight:T").in("bias?:T").in("past_state?:T").out("output:T")
      .out("present_state:T").tc("T", half_single).attr("activation", "string", "none").infer(causal_conv_infer).add(r);
  onnx_op("SwiGLU", 28).in("A:T").in("B:T").out("Y:T").tc("T", fl).attr("alpha", "float", 1.0).infer(swiglu_infer).add(r);
}
