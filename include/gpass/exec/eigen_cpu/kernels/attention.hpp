// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file attention.hpp
/// Eigen CPU kernels: attention family (ONNX semantics): Attention (versions 23 to 25: 3-D
/// and 4-D inputs, grouped-query heads, boolean or additive masks, causal and sliding-window
/// masks, past and present key/value caches, nonpad_kv_seqlen, softcap, softmax_precision
/// and the four qk_matmul_output modes), RMSNormalization, RotaryEmbedding,
/// GroupNormalization (18: scale and bias per group, 21: per channel), LinearAttention (the
/// four update rules, grouped-query heads), CausalConvWithState, SwiGLU, ai.onnx.preview's
/// FlexAttention (its score and probability modifiers run as functions) and gpass's fused
/// ScaledDotProductAttention. Floating-point
/// element types (f32, f64; f16 and bf16 compute in float).
///
/// Where ONNX's definition materializes an intermediate tensor of the input's element type
/// (the scaled Q and K, the scores, the probabilities), the kernels round to that type too,
/// so f16 and bf16 results agree with ONNX's reference to the last bit or so.
/// Private (`gpass::exec::cpu_detail`); `register_attention` adds them to a registry.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include <gpass/core/checked.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/eigen_cpu/kernels/nn.hpp>
#include <gpass/exec/eigen_cpu/kernels/sgemm.hpp>
#include <gpass/exec/nn_rules.hpp>
#include <gpass/exec/recurrent_rules.hpp>

namespace gpass::exec::cpu_detail {

namespace attention_impl {

using i64 = std::int64_t;
using nn_impl::check_float;
using nn_impl::is_low_v;
using nn_impl::nn_types;
using nn_impl::prod;
using nn_impl::to_compute;
using nn_impl::to_elem;
using nn_rules::attention_attrs;
using nn_rules::attention_check;
using nn_rules::attention_sizes;
using nn_rules::float_type_attr;

template <class C>
using rmat = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class C>
using rmat_map = Eigen::Map<rmat<C>>;
template <class C>
using crmat_map = Eigen::Map<const rmat<C>>;

inline constexpr double neg_inf = -std::numeric_limits<double>::infinity();

/// `v` rounded to element type `T` and back to its compute type `C`: the value a tensor of
/// `T` holds where the ONNX definition materializes one.
template <class T, class C>
inline C round_to(C v) {
  if constexpr (is_low_v<T>) return static_cast<C>(static_cast<float>(T(static_cast<float>(v))));
  else return static_cast<C>(static_cast<T>(v));
}

/// A rounding function for a dtype known at run time (softmax_precision, stash_type).
using rounder = double (*)(double);
inline rounder rounder_for(dtype d, const kernel_node& n) {
  rounder r = nullptr;
  dispatch<nn_types>(d, n, [&]<class T>() { r = &round_to<T, double>; });
  return r;
}

// ---------------------------------------------------------------------------------------
// Attention

/// The elements of Q, K or V (3-D (batch, seq, heads * head) or 4-D (batch, heads, seq,
/// head)) as compute values in (batch, heads, seq, head) order.
template <class C>
std::vector<C> to_bhsd(const gpass::tensor& t, i64 heads, const kernel_node& n) {
  std::vector<C> v = to_compute<C>(t, n);
  if (t.rank() == 4 || v.empty()) return v;  // (empty: heads may be anything, no loop over them)
  const auto& s = t.sizes();
  const i64 B = s[0], S = s[1], D = s[2] / heads;
  std::vector<C> r(v.size());
  for (i64 b = 0; b < B; ++b)
    for (i64 q = 0; q < S; ++q)
      for (i64 h = 0; h < heads; ++h)
        std::copy_n(v.begin() + ((b * S + q) * heads + h) * D, D, r.begin() + ((b * heads + h) * S + q) * D);
  return r;
}

/// `past` then `cur` along the sequence axis: (batch, heads, past + seq, head).
template <class C>
std::vector<C> concat_seq(const std::vector<C>& past, const std::vector<C>& cur, i64 bh, i64 p, i64 s, i64 d) {
  std::vector<C> r(static_cast<std::size_t>(bh * (p + s) * d));
  for (i64 u = 0; u < bh; ++u) {
    std::copy_n(past.begin() + u * p * d, p * d, r.begin() + u * (p + s) * d);
    std::copy_n(cur.begin() + u * s * d, s * d, r.begin() + (u * (p + s) + p) * d);
  }
  return r;
}

/// The additive attention bias of every (batch, head, query) row, of the total sequence length
/// each: the attention mask (boolean: 0 or -inf; numeric: added; a last dimension shorter than
/// the total length is padded with -inf), the causal mask, the sliding window and the padding
/// of nonpad_kv_seqlen. Empty when nothing masks (all zero).
inline std::vector<double> attention_bias(const context& ctx, const attention_attrs& a, const attention_sizes& z) {
  const bool has_mask = ctx.has_input(3), nonpad = ctx.has_input(6);
  const bool window = a.left >= 0 || a.right >= 0;
  if (!has_mask && !a.causal && !window && !nonpad) return {};
  const i64 B = z.batch, H = z.q_heads, Sq = z.q_seq, T = z.total;
  std::vector<i64> lens;
  if (nonpad) lens = int_values(ctx.input(6), ctx.node(), "nonpad_kv_seqlen");
  // offset of the query block: the cached keys before it
  auto offset = [&](i64 b) -> i64 {
    if (z.past > 0 || ctx.has_input(4)) return z.past;
    if (nonpad) return lens[static_cast<std::size_t>(b)] - Sq;
    return 0;
  };
  // (B, H, Sq, T: heads may be any number when the hidden size is 0, and the scores grow as
  // Sq x T where the output grows as Sq)
  const double cells = static_cast<double>(B) * static_cast<double>(H) * static_cast<double>(Sq) * static_cast<double>(T);
  check_scratch(ctx, cells * sizeof(double), "the attention bias (mask, causal or window)");
  std::vector<double> bias(static_cast<std::size_t>(cells), 0.0);  // (exact in double: under the limit)
  if (bias.empty()) return bias;  // nothing to mask (and no loop over rows of no keys)
  if (has_mask) {
    const gpass::tensor& m = ctx.input(3);
    const std::array<i64, 4> ms = nn_rules::attention_mask_dims(m.sizes(), z, ctx.node());
    const bool boolean = m.element_type() == dtype::bool_;
    const std::vector<double> mv = as_doubles(m, ctx.node());
    const i64 L = ms[3];
    for (i64 b = 0; b < B; ++b)
      for (i64 h = 0; h < H; ++h)
        for (i64 i = 0; i < Sq; ++i) {
          const i64 mrow = ((ms[0] == 1 ? 0 : b) * ms[1] + (ms[1] == 1 ? 0 : h)) * ms[2] + (ms[2] == 1 ? 0 : i);
          double* out = bias.data() + ((b * H + h) * Sq + i) * T;
          for (i64 j = 0; j < T; ++j) {
            if (j >= L) {
              out[j] = neg_inf;
              continue;
            }
            const double x = mv[static_cast<std::size_t>(mrow * L + j)];
            out[j] = boolean ? (x != 0 ? 0.0 : neg_inf) : x;
          }
        }
  }
  for (i64 b = 0; b < B; ++b) {
    const i64 off = offset(b);
    const i64 len = nonpad ? lens[static_cast<std::size_t>(b)] : T;
    for (i64 h = 0; h < H; ++h)
      for (i64 i = 0; i < Sq; ++i) {
        double* out = bias.data() + ((b * H + h) * Sq + i) * T;
        for (i64 j = 0; j < T; ++j) {
          const i64 diff = i + off - j;  // the query's absolute position minus the key's
          bool allowed = !a.causal || diff >= 0;
          if (a.left >= 0 && diff > a.left) allowed = false;
          if (a.right >= 0 && -diff > a.right) allowed = false;
          if (j >= len) allowed = false;
          if (!allowed) out[j] = neg_inf;
        }
      }
  }
  return bias;
}

/// Softmax of one row in place, each step rounded by `rp` (the softmax precision); a row
/// whose maximum is -inf (nothing to attend) becomes zeros, NaN propagates. The sum of the
/// exponentials is rounded once, or after every addition when `running_sum` (bf16: numpy's
/// bfloat16, which ONNX's reference computes with, accumulates a sum in bfloat16).
inline void attention_softmax(double* x, i64 n, rounder rp, bool running_sum) {
  double m = neg_inf;
  for (i64 j = 0; j < n; ++j) x[j] = rp(x[j]);  // the scores cast to the softmax precision
  for (i64 j = 0; j < n; ++j) {
    if (std::isnan(x[j])) {
      m = x[j];
      break;
    }
    m = std::max(m, x[j]);
  }
  if (m == neg_inf) {
    std::fill_n(x, n, 0.0);
    return;
  }
  double s = 0;
  for (i64 j = 0; j < n; ++j) {
    s += (x[j] = rp(std::exp(rp(x[j] - m))));
    if (running_sum) s = rp(s);
  }
  s = rp(s);
  if (s == 0) s = 1;
  for (i64 j = 0; j < n; ++j) x[j] = rp(x[j] / s);
}

/// Runs Attention with Q of element type `T1` in compute type `C`.
template <class T1, class C>
void attention_run(context& ctx, const attention_attrs& a, const attention_sizes& z) {
  const gpass::tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  const i64 B = z.batch, H = z.q_heads, KH = z.kv_heads, Sq = z.q_seq, S = z.kv_seq, P = z.past, T = z.total,
            D = z.head, Dv = z.v_head;
  const i64 group = H / KH;
  // present key and value: the caches followed by this step's keys and values
  std::vector<C> kc = to_bhsd<C>(k, KH, ctx.node()), vc = to_bhsd<C>(v, KH, ctx.node());
  if (ctx.has_input(4)) {
    kc = concat_seq(to_compute<C>(ctx.input(4), ctx.node()), kc, B * KH, P, S, D);
    vc = concat_seq(to_compute<C>(ctx.input(5), ctx.node()), vc, B * KH, P, S, Dv);
  }
  auto put = [&](std::size_t port, dtype d, const std::vector<C>& vals, std::vector<i64> sizes) {
    if (port >= ctx.num_outputs() || !ctx.output_wanted(port)) return;
    gpass::tensor& o = ctx.allocate_output(port, d, std::move(sizes));
    dispatch<nn_types>(d, ctx.node(), [&]<class U>() { nn_impl::from_compute<U>(vals.data(), o); });
  };
  put(1, k.element_type(), kc, {B, KH, T, D});
  put(2, v.element_type(), vc, {B, KH, T, Dv});
  // Q and K scaled by sqrt(scale), in T1
  const double scale = a.has_scale ? a.scale : 1.0 / std::sqrt(static_cast<double>(D));
  const C sq = round_to<T1>(static_cast<C>(std::sqrt(scale)));
  std::vector<C> qc = to_bhsd<C>(q, H, ctx.node());
  for (C& x : qc) x = round_to<T1>(static_cast<C>(x * sq));
  for (C& x : kc) x = round_to<T1>(static_cast<C>(x * sq));
  const std::vector<double> bias = attention_bias(ctx, a, z);
  const dtype softmax_type = a.softmax_type == dtype::undefined ? q.element_type() : a.softmax_type;
  const rounder rp = rounder_for(softmax_type, ctx.node());
  const bool running_sum = softmax_type == dtype::bf16;
  const bool want_qk = ctx.num_outputs() > 3 && ctx.output_wanted(3);
  const double rows = static_cast<double>(B) * static_cast<double>(H) * static_cast<double>(Sq);
  check_scratch(ctx, rows * (static_cast<double>(Dv) + (want_qk ? static_cast<double>(T) : 0.0)) * sizeof(C), "the attention's outputs");
  check_scratch(ctx, 2.0 * static_cast<double>(Sq) * static_cast<double>(T) * sizeof(C), "the scores of one head");
  std::vector<C> y(static_cast<std::size_t>(rows * static_cast<double>(Dv)));  // (checked: exact in double)
  std::vector<C> qk(want_qk ? static_cast<std::size_t>(rows * static_cast<double>(T)) : 0);
  const C cap = round_to<T1>(static_cast<C>(a.softcap));
  // nothing to compute when the outputs are empty (then H may be anything: a head size of 0)
  if (!y.empty() || !qk.empty()) ctx.policy().parallel_for(B * H, static_cast<double>(Sq * T * (D + Dv + 20)), [&](i64 lo, i64 hi) {
    rmat<C> scores(Sq, T), probs(Sq, T);
    std::vector<double> row(static_cast<std::size_t>(T));
    for (i64 u = lo; u < hi; ++u) {
      const i64 b = u / H, h = u % H, kvh = b * KH + h / group;  // kv head h / group (interleaved repeat)
      crmat_map<C> qm(qc.data() + u * Sq * D, Sq, D);
      crmat_map<C> km(kc.data() + kvh * T * D, T, D);
      crmat_map<C> vm(vc.data() + kvh * T * Dv, T, Dv);
      scores.noalias() = qm * km.transpose();
      for (i64 i = 0; i < Sq; ++i) {
        const double* bi = bias.empty() ? nullptr : bias.data() + (u * Sq + i) * T;
        C* qko = want_qk ? qk.data() + (u * Sq + i) * T : nullptr;
        bool all_masked = bi != nullptr;
        for (i64 j = 0; j < T; ++j) {
          C s = round_to<T1>(scores(i, j));
          if (qko && a.mode == 0) qko[j] = s;
          if (a.softcap > 0) s = round_to<T1>(static_cast<C>(round_to<T1>(static_cast<C>(std::tanh(round_to<T1>(static_cast<C>(s / cap))))) * cap));
          if (qko && a.mode == 1) qko[j] = s;
          if (bi) {
            s = round_to<T1>(static_cast<C>(s + static_cast<C>(bi[j])));
            if (bi[j] != neg_inf) all_masked = false;
          }
          if (qko && a.mode == 2) qko[j] = s;
          row[static_cast<std::size_t>(j)] = static_cast<double>(s);
        }
        if (all_masked) std::fill(row.begin(), row.end(), 0.0);  // no key to attend: a zero row
        else attention_softmax(row.data(), T, rp, running_sum);
        for (i64 j = 0; j < T; ++j) {
          const C p = round_to<T1>(static_cast<C>(row[static_cast<std::size_t>(j)]));
          probs(i, j) = p;
          if (qko && a.mode == 3) qko[j] = p;
        }
      }
      rmat_map<C> ym(y.data() + u * Sq * Dv, Sq, Dv);
      ym.noalias() = probs * vm;
      for (i64 e = 0; e < Sq * Dv; ++e) ym.data()[e] = round_to<T1>(ym.data()[e]);
    }
  });
  // Y: (batch, heads, q_seq, v_head), or (batch, q_seq, heads * v_head) for 3-D inputs
  gpass::tensor& yo = z.three_d ? ctx.allocate_output(0, q.element_type(), {B, Sq, H * Dv})
                                : ctx.allocate_output(0, q.element_type(), {B, H, Sq, Dv});
  T1* py = yo.data<T1>();
  for (i64 b = 0; b < (yo.size() > 0 ? B : 0); ++b)
    for (i64 h = 0; h < H; ++h)
      for (i64 i = 0; i < Sq; ++i)
        for (i64 d = 0; d < Dv; ++d) {
          const i64 src = ((b * H + h) * Sq + i) * Dv + d;
          const i64 dst = z.three_d ? (b * Sq + i) * H * Dv + h * Dv + d : src;
          py[dst] = to_elem<T1>(y[static_cast<std::size_t>(src)]);
        }
  if (want_qk) put(3, q.element_type(), qk, {B, H, Sq, T});
}

inline void register_attention_op(registry& r) {
  r.add({.domain = "", .op = "Attention", .since_version = 23, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const attention_attrs a = nn_rules::read_attention_attrs(n);
    return [a](context& ctx) {
      const attention_sizes z = attention_check(ctx, a);
      if (ctx.has_input(6)) nn_rules::check_nonpad_lengths(int_values(ctx.input(6), ctx.node(), "nonpad_kv_seqlen"), z, ctx.node());
      const bool wide = ctx.input(0).element_type() == dtype::f64 || ctx.input(2).element_type() == dtype::f64;
      dispatch<nn_types>(ctx.input(0).element_type(), ctx.node(), [&]<class T1>() {
        if (wide) attention_run<T1, double>(ctx, a, z);
        else attention_run<T1, float>(ctx, a, z);
      });
    };
  }});
}

// ---------------------------------------------------------------------------------------
// RMSNormalization

inline void register_rms_norm(registry& r) {
  r.add({.domain = "", .op = "RMSNormalization", .since_version = 23, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const i64 axis_attr = n.attr<i64>("axis", -1);
    const double eps = n.attr<double>("epsilon", 1e-5);
    const dtype stash = float_type_attr(n.attr<i64>("stash_type", 1), n, "stash_type");
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& sc = ctx.input(1);
      check_float(sc, ctx.node(), "scale");
      const auto& s = x.sizes();
      const i64 rank = static_cast<i64>(s.size());
      if (rank == 0) ctx.fail("X must have rank >= 1");
      const std::size_t a = static_cast<std::size_t>(normalize_axis(axis_attr, rank, ctx.node()));
      const i64 outer = prod(s, 0, a), inner = prod(s, a, s.size());
      // scale broadcasts (unidirectionally) to X
      if (sc.rank() > s.size()) ctx.fail("scale " + sc.shape().to_string() + " does not broadcast to X " + x.shape().to_string());
      for (std::size_t i = 0; i < sc.rank(); ++i) {
        const i64 d = sc.sizes()[i], want = s[s.size() - sc.rank() + i];
        if (d != 1 && d != want) ctx.fail("scale " + sc.shape().to_string() + " does not broadcast to X " + x.shape().to_string());
      }
      const std::vector<double> scale = to_compute<double>(sc, ctx.node());
      const auto sstr = broadcast_strides(sc.sizes(), s);
      const rounder rs = rounder_for(stash, ctx.node());
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        const T* px = x.data<T>();
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), s);
        T* py = y.data<T>();
        const double e = rs(static_cast<double>(static_cast<float>(eps)));
        ctx.policy().parallel_for(outer, static_cast<double>(inner) * 8.0, [&](i64 lo, i64 hi) {
          strided_walker<1> w(s, {sstr});
          for (i64 o = lo; o < hi; ++o) {
            const T* xr = px + o * inner;
            double acc = 0;
            for (i64 i = 0; i < inner; ++i) {
              const double xu = rs(static_cast<double>(static_cast<compute_t<T>>(xr[i])));
              acc += rs(xu * xu);
            }
            const double ms = rs(inner ? acc / static_cast<double>(inner) : 0.0);
            const double rms = rs(std::sqrt(rs(ms + e)));
            w.seek(o * inner);
            for (i64 i = 0; i < inner; ++i, w.next()) {
              const double xu = rs(static_cast<double>(static_cast<compute_t<T>>(xr[i])));
              const double normalized = round_to<T>(rs(xu / rms));
              py[o * inner + i] = to_elem<T>(normalized * scale[static_cast<std::size_t>(w.offset(0))]);
            }
          }
        });
      });
    };
  }});
}

// ---------------------------------------------------------------------------------------
// RotaryEmbedding

inline void register_rotary_embedding(registry& r) {
  r.add({.domain = "", .op = "RotaryEmbedding", .since_version = 23, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const bool interleaved = n.attr<i64>("interleaved", 0) != 0;
    const i64 num_heads = n.attr<i64>("num_heads", 0);
    const i64 rot_attr = n.attr<i64>("rotary_embedding_dim", 0);
    if (rot_attr < 0) n.fail("rotary_embedding_dim must not be negative, got " + std::to_string(rot_attr));
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor &cs = ctx.input(1), &sn = ctx.input(2);
      const auto& s = x.sizes();
      if (x.rank() != 3 && x.rank() != 4) ctx.fail("X must be 3-D or 4-D, got " + x.shape().to_string());
      for (const gpass::tensor* t : {&cs, &sn})
        if (t->element_type() != x.element_type())
          ctx.fail("cos_cache and sin_cache must have X's element type " + std::string(to_string(x.element_type())));
      // X seen as (batch, heads, seq, head) through strides
      i64 B = s[0], H, S, D, sh, ss;  // sh, ss: strides of a head and of a position
      if (x.rank() == 4) {
        H = s[1], S = s[2], D = s[3];
        sh = S * D;
        ss = D;
      } else {
        if (num_heads <= 0) ctx.fail("a 3-D X needs a positive attribute num_heads");
        if (s[2] % num_heads != 0)
          ctx.fail("X's hidden size " + std::to_string(s[2]) + " is not a multiple of num_heads " + std::to_string(num_heads));
        H = num_heads, S = s[1], D = s[2] / num_heads;
        sh = D;
        ss = H * D;
      }
      const i64 rot = rot_attr == 0 ? D : rot_attr;
      if (rot > D) ctx.fail("rotary_embedding_dim " + std::to_string(rot) + " is larger than the head size " + std::to_string(D));
      if (rot % 2 != 0) ctx.fail("the rotated size " + std::to_string(rot) + " must be even");
      const i64 half = rot / 2;
      if (x.size() == 0) {  // (heads of size 0: num_heads and the other sizes may be anything)
        ctx.allocate_output(0, x.element_type(), s);
        return;
      }
      // the cache row of each (batch, position)
      std::vector<i64> rows(static_cast<std::size_t>(B * S));
      const bool pos = ctx.has_input(3);
      const std::size_t cache_rank = pos ? 2 : 3;
      for (const gpass::tensor* t : {&cs, &sn}) {
        if (t->rank() != cache_rank || t->sizes().back() != half)
          ctx.fail(std::string("cos_cache and sin_cache must be ") +
                   (pos ? "(max_position, " : "(batch, seq, ") + std::to_string(half) + ") " +
                   (pos ? "with position_ids" : "without position_ids") + ", got " + t->shape().to_string());
        if (t->sizes() != cs.sizes()) ctx.fail("cos_cache and sin_cache must have the same shape");
      }
      if (pos) {
        const gpass::tensor& p = ctx.input(3);
        if (p.rank() != 2 || p.sizes()[0] != B || p.sizes()[1] != S)
          ctx.fail("position_ids must be (batch, seq) = (" + std::to_string(B) + ", " + std::to_string(S) + "), got " + p.shape().to_string());
        const auto ids = int_values(p, ctx.node(), "position_ids");
        const i64 max_pos = cs.sizes()[0];
        for (std::size_t i = 0; i < ids.size(); ++i) {
          if (ids[i] < 0 || ids[i] >= max_pos)
            ctx.fail("position id " + std::to_string(ids[i]) + " is out of range [0, " + std::to_string(max_pos) + ") of the caches");
          rows[i] = ids[i];
        }
      } else {
        if (cs.sizes()[0] != B || cs.sizes()[1] != S)
          ctx.fail("cos_cache and sin_cache must be (batch, seq, rotary_dim / 2) = (" + std::to_string(B) + ", " +
                   std::to_string(S) + ", " + std::to_string(half) + "), got " + cs.shape().to_string());
        for (i64 i = 0; i < B * S; ++i) rows[static_cast<std::size_t>(i)] = i;
      }
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using C = compute_t<T>;
        const T *px = x.data<T>(), *pc = cs.data<T>(), *ps = sn.data<T>();
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), s);
        T* py = y.data<T>();
        ctx.policy().parallel_for(B * S, static_cast<double>(H * D) * 6.0, [&](i64 lo, i64 hi) {
          for (i64 u = lo; u < hi; ++u) {
            const i64 b = u / S, q = u % S;
            const T* cr = pc + rows[static_cast<std::size_t>(u)] * half;
            const T* sr = ps + rows[static_cast<std::size_t>(u)] * half;
            for (i64 h = 0; h < H; ++h) {
              const i64 base = x.rank() == 4 ? b * H * S * D + h * sh + q * ss : b * S * H * D + q * ss + h * sh;
              const T* xi = px + base;
              T* yo = py + base;
              for (i64 j = 0; j < half; ++j) {
                const i64 i1 = interleaved ? 2 * j : j, i2 = interleaved ? 2 * j + 1 : j + half;
                const C c = static_cast<C>(cr[j]), sv = static_cast<C>(sr[j]);
                const C x1 = static_cast<C>(xi[i1]), x2 = static_cast<C>(xi[i2]);
                yo[i1] = to_elem<T>(round_to<T>(static_cast<C>(c * x1)) - round_to<T>(static_cast<C>(sv * x2)));
                yo[i2] = to_elem<T>(round_to<T>(static_cast<C>(sv * x1)) + round_to<T>(static_cast<C>(c * x2)));
              }
              for (i64 d = rot; d < D; ++d) yo[d] = xi[d];
            }
          }
        });
      });
    };
  }});
}

// ---------------------------------------------------------------------------------------
// GroupNormalization

inline void register_group_norm(registry& r) {
  r.add({.domain = "", .op = "GroupNormalization", .since_version = 18, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const i64 groups = n.attr<i64>("num_groups");
    if (groups <= 0) n.fail("num_groups must be positive, got " + std::to_string(groups));
    const double eps = n.attr<double>("epsilon", 1e-5);
    // version 21 (opset 21 on): scale and bias per channel and stash_type; 18: per group, in X's type
    const bool per_channel = n.opset == 0 || n.opset >= 21;
    const bool has_stash = per_channel;
    const dtype stash = has_stash ? float_type_attr(n.attr<i64>("stash_type", 1), n, "stash_type") : dtype::undefined;
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto& s = x.sizes();
      if (s.size() < 2) ctx.fail("X must have rank >= 2 (N x C x ...), got " + x.shape().to_string());
      const i64 N = s[0], Cn = s[1], inner = prod(s, 2, s.size());
      if (Cn % groups != 0)
        ctx.fail("the number of channels " + std::to_string(Cn) + " is not a multiple of num_groups " + std::to_string(groups));
      const i64 per = per_channel ? Cn : groups;
      for (std::size_t k = 1; k < 3; ++k) {
        check_float(ctx.input(k), ctx.node(), "scale and bias");
        if (ctx.input(k).size() != per)
          ctx.fail(std::string(k == 1 ? "scale" : "bias") + " must have " + std::to_string(per) +
                   (per_channel ? " elements (one per channel), got " : " elements (one per group), got ") +
                   ctx.input(k).shape().to_string());
      }
      const std::vector<double> scale = to_compute<double>(ctx.input(1), ctx.node());
      const std::vector<double> bias = to_compute<double>(ctx.input(2), ctx.node());
      const i64 cpg = Cn / groups, len = cpg * inner;  // channels per group, elements per group
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        const rounder rs = has_stash ? rounder_for(stash, ctx.node()) : &round_to<T, double>;
        const T* px = x.data<T>();
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), s);
        if (y.size() == 0) return;  // (no channels: num_groups may be anything)
        T* py = y.data<T>();
        const double e = rs(static_cast<double>(static_cast<float>(eps)));
        ctx.policy().parallel_for(N * groups, static_cast<double>(len) * 6.0, [&](i64 lo, i64 hi) {
          for (i64 u = lo; u < hi; ++u) {
            const i64 g = u % groups;
            const T* xg = px + u * len;
            T* yg = py + u * len;
            double sum = 0;
            for (i64 i = 0; i < len; ++i) sum += rs(static_cast<double>(static_cast<compute_t<T>>(xg[i])));
            const double mean = rs(len ? sum / static_cast<double>(len) : 0.0);
            double var = 0;
            for (i64 i = 0; i < len; ++i) {
              const double d = rs(static_cast<double>(static_cast<compute_t<T>>(xg[i]))) - mean;
              var += d * d;
            }
            var = rs(len ? var / static_cast<double>(len) : 0.0);
            const double sd = rs(std::sqrt(rs(var + e)));
            for (i64 i = 0; i < len; ++i) {
              const i64 c = g * cpg + i / inner;
              const std::size_t p = static_cast<std::size_t>(per_channel ? c : g);
              const double xu = rs(static_cast<double>(static_cast<compute_t<T>>(xg[i])));
              const double normalized = round_to<T>(rs(rs(xu - mean) / sd));
              yg[i] = to_elem<T>(round_to<T>(scale[p] * normalized) + bias[p]);
            }
          }
        });
      });
    };
  }});
}

// ---------------------------------------------------------------------------------------
// LinearAttention

inline void register_linear_attention(registry& r) {
  r.add({.domain = "", .op = "LinearAttention", .since_version = 27, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const recurrent_rules::linear_attention_attrs attrs = recurrent_rules::read_linear_attention(n);
    const i64 qn = attrs.qn, kvn = attrs.kvn;
    const bool gating = attrs.gating, delta = attrs.delta;
    return [=](context& ctx) {
      const gpass::tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
      const auto dims = recurrent_rules::check_linear_attention(attrs, ctx);
      const i64 B = dims.B, T = dims.T, dk = dims.dk, dv = dims.dv, group = dims.group, decay_per = dims.decay_per, beta_per = dims.beta_per;
      const std::vector<float> qf = to_compute<float>(q, ctx.node()), kf = to_compute<float>(k, ctx.node()), vf = to_compute<float>(v, ctx.node());
      // decay: (B, T, kv_heads) per head or (B, T, kv_heads * dk) per key dimension; beta: (B, T, kv_heads or 1)
      std::vector<float> decay, beta;
      if (gating) decay = to_compute<float>(ctx.input(4), ctx.node());
      if (delta) beta = to_compute<float>(ctx.input(5), ctx.node());
      // the state (B, kv_heads, dk, dv), in float whatever its element type
      const std::vector<i64>& state_sizes = dims.state_sizes;
      const double state_count = dims.state_count, out_count = dims.out_count;
      check_scratch(ctx, state_count * sizeof(float), "the state");
      check_scratch(ctx, out_count * sizeof(float), "the output");
      std::vector<float> state(static_cast<std::size_t>(state_count), 0.0f);  // (exact: under the limit)
      const dtype state_type = dims.state_type;
      if (ctx.has_input(3)) state = to_compute<float>(ctx.input(3), ctx.node());
      const float scale = dims.scale;
      std::vector<float> out(static_cast<std::size_t>(out_count));
      // (no values: the state and output are empty, and kv_num_heads may be anything)
      if (dv > 0) ctx.policy().parallel_for(B * kvn, static_cast<double>(T * dk * dv * (3 + group)) * 2.0, [&](i64 lo, i64 hi) {
        std::vector<float> vt(static_cast<std::size_t>(dv));
        for (i64 u = lo; u < hi; ++u) {
          const i64 b = u / kvn, h = u % kvn;
          float* S = state.data() + u * dk * dv;  // (dk, dv)
          for (i64 t = 0; t < T; ++t) {
            const float* kt = kf.data() + ((b * T + t) * kvn + h) * dk;
            std::copy_n(vf.data() + ((b * T + t) * kvn + h) * dv, dv, vt.begin());
            if (gating) {  // S *= exp(g)
              const float* g = decay.data() + ((b * T + t) * kvn + h) * decay_per;
              for (i64 d = 0; d < dk; ++d) {
                const float e = std::exp(g[decay_per == 1 ? 0 : d]);
                for (i64 m = 0; m < dv; ++m) S[d * dv + m] *= e;
              }
            }
            if (delta) {  // v <- beta * (v - S^T k)
              const float bv = beta[static_cast<std::size_t>((b * T + t) * beta_per + (beta_per == 1 ? 0 : h))];
              for (i64 m = 0; m < dv; ++m) {
                float got = 0;
                for (i64 d = 0; d < dk; ++d) got += S[d * dv + m] * kt[d];
                vt[static_cast<std::size_t>(m)] = bv * (vt[static_cast<std::size_t>(m)] - got);
              }
            }
            for (i64 d = 0; d < dk; ++d)  // S += k (outer) v
              for (i64 m = 0; m < dv; ++m) S[d * dv + m] += kt[d] * vt[static_cast<std::size_t>(m)];
            for (i64 hq = h * group; hq < (h + 1) * group; ++hq) {  // query heads reading this KV head
              const float* qt = qf.data() + ((b * T + t) * qn + hq) * dk;
              float* o = out.data() + ((b * T + t) * qn + hq) * dv;
              for (i64 m = 0; m < dv; ++m) {
                float acc = 0;
                for (i64 d = 0; d < dk; ++d) acc += qt[d] * S[d * dv + m];
                o[m] = scale * acc;
              }
            }
          }
        }
      });
      gpass::tensor& y = ctx.allocate_output(0, q.element_type(), {B, T, qn * dv});
      dispatch<nn_types>(q.element_type(), ctx.node(), [&]<class U>() { nn_impl::from_compute<U>(out.data(), y); });
      if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
        gpass::tensor& ps = ctx.allocate_output(1, state_type, state_sizes);
        dispatch<nn_types>(state_type, ctx.node(), [&]<class U>() { nn_impl::from_compute<U>(state.data(), ps); });
      }
    };
  }});
}

// ---------------------------------------------------------------------------------------
// CausalConvWithState, SwiGLU

inline void register_causal_conv(registry& r) {
  r.add({.domain = "", .op = "CausalConvWithState", .since_version = 27, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const bool silu = recurrent_rules::read_causal_conv_silu(n);
    return [=](context& ctx) {
      const gpass::tensor &x = ctx.input(0), &w = ctx.input(1);
      const auto dims = recurrent_rules::check_causal_conv(ctx);
      const i64 B = dims.B, C = dims.C, L = dims.L, K = dims.K, keep = K - 1, len = keep + L;  // the padded sequence: state then input
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using CT = compute_t<T>;
        const T *px = x.data<T>(), *pw = w.data<T>();
        const T* pb = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
        const T* pp = ctx.has_input(3) ? ctx.input(3).data<T>() : nullptr;
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), {B, C, L});
        T* py = y.data<T>();
        T* pst = nullptr;
        if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) pst = ctx.allocate_output(1, x.element_type(), {B, C, keep}).template data<T>();
        ctx.policy().parallel_for(B * C, static_cast<double>(L * K) * 2.0, [&](i64 lo, i64 hi) {
          std::vector<CT> seq(static_cast<std::size_t>(len));
          for (i64 u = lo; u < hi; ++u) {
            const i64 c = u % C;
            for (i64 i = 0; i < keep; ++i) seq[static_cast<std::size_t>(i)] = pp ? static_cast<CT>(pp[u * keep + i]) : CT(0);
            for (i64 i = 0; i < L; ++i) seq[static_cast<std::size_t>(keep + i)] = static_cast<CT>(px[u * L + i]);
            const T* wc = pw + c * K;
            for (i64 i = 0; i < L; ++i) {
              CT acc = 0;
              for (i64 j = 0; j < K; ++j) acc += static_cast<CT>(wc[j]) * seq[static_cast<std::size_t>(i + j)];
              CT o = round_to<T>(acc);
              if (pb) o = round_to<T>(static_cast<CT>(o + static_cast<CT>(pb[c])));
              if (silu) o = static_cast<CT>(o * (CT(1) / (CT(1) + std::exp(-o))));  // in float (f64: double)
              py[u * L + i] = to_elem<T>(o);
            }
            if (pst)
              for (i64 i = 0; i < keep; ++i) pst[u * keep + i] = to_elem<T>(seq[static_cast<std::size_t>(len - keep + i)]);
          }
        });
      });
    };
  }});
}

inline void register_swiglu(registry& r) {
  r.add({.domain = "", .op = "SwiGLU", .since_version = 28, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const double alpha = n.attr<double>("alpha", 1.0);
    return [=](context& ctx) {
      const gpass::tensor &a = ctx.input(0), &b = ctx.input(1);
      if (a.sizes() != b.sizes() || a.element_type() != b.element_type())
        ctx.fail("A " + std::string(to_string(a.element_type())) + a.shape().to_string() + " and B " +
                 std::string(to_string(b.element_type())) + b.shape().to_string() + " must have the same shape and element type (no broadcasting)");
      dispatch<nn_types>(a.element_type(), ctx.node(), [&]<class T>() {
        using CT = compute_t<T>;
        const T *pa = a.data<T>(), *pb = b.data<T>();
        gpass::tensor& y = ctx.allocate_output(0, a.element_type(), a.sizes());
        T* py = y.data<T>();
        const CT al = round_to<T>(static_cast<CT>(alpha));
        // Y = A * sigmoid(alpha * A) * B, each step in T (ONNX's reference)
        ctx.policy().parallel_for(a.size(), 20.0, [&](i64 lo, i64 hi) {
          for (i64 i = lo; i < hi; ++i) {
            const CT x = static_cast<CT>(pa[i]);
            const CT e = round_to<T>(static_cast<CT>(std::exp(round_to<T>(static_cast<CT>(-al * x)))));
            const CT sig = round_to<T>(static_cast<CT>(CT(1) / round_to<T>(static_cast<CT>(CT(1) + e))));
            py[i] = to_elem<T>(round_to<T>(static_cast<CT>(x * sig)) * static_cast<CT>(pb[i]));
          }
        });
      });
    };
  }});
}

#if GPASS_SGEMM_X86
/// One row of ScaledDotProductAttention's f32 scores to probabilities with AVX-512 (16 lanes,
/// lstm_cell's exp), as the Eigen form below computes it: x = x * scale (+ bias[j], read
/// contiguously), then e = exp(x - max), 0 where x - max is below the log of the smallest
/// normal (exp_normal_or_zero; from there to -87 the exp is e^-87, under 1.7e-38), then e /
/// sum(e); three passes over the row where the Eigen form (8 lanes under -march=x86-64-v3)
/// takes five. A NaN score, or a row whose every score is -inf, gives NaN, as there.
__attribute__((target("avx512f,avx2,fma"))) inline void sdpa_softmax_avx512(float* x, i64 L, float scale, const float* bias) {
  namespace v = lstm_cell::avx512;
  auto lanes = [L](i64 j) { return L - j >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (L - j)) - 1u); };
  const __m512 sc = _mm512_set1_ps(scale);
  __m512 top = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (i64 j = 0; j < L; j += 16) {
    const __mmask16 m = lanes(j);
    __m512 r = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), sc);
    if (bias) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(m, bias + j));
    _mm512_mask_storeu_ps(x + j, m, r);
    top = _mm512_mask_max_ps(top, m, r, top);  // (a NaN lane keeps NaN out of top: the NaN comes back through its exp)
  }
  const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(top));
  const __m512 lowest = _mm512_set1_ps(-87.3365447505531f);
  __m512 sum = _mm512_setzero_ps();
  for (i64 j = 0; j < L; j += 16) {
    const __mmask16 m = lanes(j);
    const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), mx);
    const __m512 e = _mm512_mask_mov_ps(v::vexp(d), _mm512_cmp_ps_mask(d, lowest, _CMP_LT_OQ), _mm512_setzero_ps());
    _mm512_mask_storeu_ps(x + j, m, e);
    sum = _mm512_mask_add_ps(sum, m, sum, e);
  }
  const __m512 total = _mm512_set1_ps(_mm512_reduce_add_ps(sum));
  for (i64 j = 0; j < L; j += 16) {
    const __mmask16 m = lanes(j);
    _mm512_mask_storeu_ps(x + j, m, _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + j), total));
  }
}
#endif

/// gpass::ScaledDotProductAttention (the optimizer's fused attention): per batch and head,
/// Y = softmax(Q K^T * scale + bias) V, with the scores, the scaling, the bias and the softmax
/// done as the written-out ops they replace do them (in the element type's compute type, the
/// scale applied to the product, softmax as exp(x - max) / sum), so results match the unfused
/// graph to rounding. The bias broadcasts with the scores as the `Add` it replaces did
/// (NumPy): by strides, never materialized; where it is larger in batch, heads or query
/// rows, Q, K and V are read broadcast.
inline void register_scaled_dot_product_attention(registry& r) {
  r.add({.domain = "gpass", .op = "ScaledDotProductAttention", .since_version = 1, .dtypes = nn_types::dtypes(),
         .make = [](const kernel_node& n) -> fn {
           const double scale = n.attr<double>("scale", 1.0);
           return [scale](context& ctx) {
             const gpass::tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
             const gpass::tensor* bias = ctx.has_input(3) ? &ctx.input(3) : nullptr;
             if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
               ctx.fail("Q, K and V must be 4-D, got " + q.shape().to_string() + ", " + k.shape().to_string() + ", " + v.shape().to_string());
             const i64 B = q.sizes()[0], H = q.sizes()[1], S = q.sizes()[2], D = q.sizes()[3], L = k.sizes()[2], Dv = v.sizes()[3];
             if (k.sizes()[0] != B || k.sizes()[1] != H || k.sizes()[3] != D || v.sizes()[0] != B || v.sizes()[1] != H || v.sizes()[2] != L)
               ctx.fail("Q " + q.shape().to_string() + ", K " + k.shape().to_string() + " and V " + v.shape().to_string() + " do not agree");
             for (const gpass::tensor* t : {&k, &v, bias})
               if (t && t->element_type() != q.element_type()) ctx.fail("Q, K, V and the bias must have one element type");
             // the scores' sizes broadcast with the bias's, and the bias's strides over them
             std::array<i64, 4> out{B, H, S, L}, bs{0, 0, 0, 0};
             if (bias) {
               const auto view = shape_rules::attention_bias(bias->sizes(), out, ctx.node());
               out = view.sizes;
               bs = view.strides;
             }
             const i64 Bo = out[0], Ho = out[1], So = out[2];
             dispatch<nn_types>(q.element_type(), ctx.node(), [&]<class T>() {
               using C = compute_t<T>;
               gpass::tensor& y = ctx.allocate_output(0, q.element_type(), {Bo, Ho, So, Dv});
               if (y.size() == 0) return;
               if (L == 0) {  // no key: the product with an empty V is zeros
                 std::fill_n(y.data<T>(), y.size(), T(0));
                 return;
               }
               // f32 and f64 are read in place; f16 and bf16 through their compute type
               std::vector<C> qv, kv, vv, bv, yv;
               auto view = [&](const gpass::tensor& t, std::vector<C>& buf) -> const C* {
                 if constexpr (std::is_same_v<T, C>) return t.data<C>();
                 else return (buf = to_compute<C>(t, ctx.node())).data();
               };
               const C* qp = view(q, qv);
               const C* kp = view(k, kv);
               const C* vp = view(v, vv);
               const C* bp = bias ? view(*bias, bv) : nullptr;
               C* yp = nullptr;
               if constexpr (std::is_same_v<T, C>) yp = y.data<C>();
               else {
                 yv.resize(static_cast<std::size_t>(y.size()));
                 yp = yv.data();
               }
               const C sc = static_cast<C>(scale);
               // each thread's scores grow as S x L where the output grows as S
               check_scratch(ctx, (static_cast<double>(S) + static_cast<double>(So)) * static_cast<double>(L) * sizeof(C),
                             "the scores of one head");
               ctx.policy().parallel_for(Bo * Ho, static_cast<double>(So * L * (D + Dv + 8)), [&](i64 lo, i64 hi) {
                 rmat<C> raw(S, L), probs(So, L);
                 for (i64 u = lo; u < hi; ++u) {
                   const i64 b = u / Ho, h = u % Ho;
                   const i64 in = (B == 1 ? 0 : b) * H + (H == 1 ? 0 : h);  // Q, K, V read broadcast
                   crmat_map<C> qm(qp + in * S * D, S, D);
                   crmat_map<C> km(kp + in * L * D, L, D);
                   crmat_map<C> vm(vp + in * L * Dv, L, Dv);
                   rmat<C>& qk = So == S ? probs : raw;
                   if constexpr (std::is_same_v<C, float>) {
                     // f32: gpass's GEMM engine, K^T packed (read column-major), Q in place
                     const sgemm::kernel_info& ki = sgemm::kernel();
                     float* kpanels = sgemm::scratch(1, sgemm::panels(L, ki.nr) * D * ki.nr);
                     sgemm::pack_b(km.data(), D, true, D, L, ki.nr, kpanels);
                     sgemm::multiply(ki, qm.data(), 0, S, kpanels, D * ki.nr, L, D, qk.data(), L, false, 0, -1, std::max<i64>(D, 1));
                   } else {
                     qk.noalias() = qm * km.transpose();
                   }
                   using row_map = Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>>;
                   using crow_map = Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, 1>>;
                   for (i64 i = 0; i < So; ++i) {
                     row_map row(probs.data() + i * L, L);
                     if (So != S) row = crow_map(raw.data(), L);  // one query row, broadcast by the bias
#if GPASS_SGEMM_X86
                     if constexpr (std::is_same_v<C, float>) {
                       static const bool avx512 = sgemm::kernel().name == "avx512";
                       if (avx512 && (!bp || bs[3] == 1)) {
                         sdpa_softmax_avx512(row.data(), L, sc, bp ? bp + b * bs[0] + h * bs[1] + i * bs[2] : nullptr);
                         continue;
                       }
                     }
#endif
                     if (bp && bs[3] == 1) {
                       row = row * sc + crow_map(bp + b * bs[0] + h * bs[1] + i * bs[2], L);
                     } else {
                       row *= sc;
                       if (bp) {
                         const C* bi = bp + b * bs[0] + h * bs[1] + i * bs[2];
                         for (i64 j = 0; j < L; ++j) row(j) += bi[j * bs[3]];
                       }
                     }
                     const C m = row.maxCoeff();
                     row = exp_normal_or_zero(row - m);
                     row /= row.sum();
                   }
                   if constexpr (std::is_same_v<C, float>) {
                     const sgemm::kernel_info& ki = sgemm::kernel();
                     float* vpanels = sgemm::scratch(2, sgemm::panels(Dv, ki.nr) * L * ki.nr);
                     sgemm::pack_b(vm.data(), Dv, false, L, Dv, ki.nr, vpanels);
                     sgemm::multiply(ki, probs.data(), 0, So, vpanels, L * ki.nr, Dv, L, yp + u * So * Dv, Dv, false, 0, -1,
                                     std::max<i64>(L, 1));
                   } else {
                     rmat_map<C>(yp + u * So * Dv, So, Dv).noalias() = probs * vm;
                   }
                 }
               });
               if constexpr (!std::is_same_v<T, C>) nn_impl::from_compute<T>(yp, y);
             });
           };
         }});
}

// ---------------------------------------------------------------------------------------
// FlexAttention (ai.onnx.preview)

/// The attributes of one FlexAttention node.
struct flex_attrs {
  bool has_scale = false;
  double scale = 0;
  dtype softmax_type = dtype::undefined;  ///< undefined: f32, or f64 for f64 inputs
  std::string score_mod, prob_mod;        ///< functions of the library; empty: none
  std::size_t captures = 0;               ///< trailing inputs passed to the modifiers
};

/// Calls modifier `f` on `x` (values of `d`, sizes `sizes`) with the node's captures; its one
/// output must keep the sizes. Returns the output's values, rounded by `rp`.
inline std::vector<double> flex_modify(context& ctx, const flex_attrs& a, const std::string& f, const std::vector<double>& x, dtype d,
                                       const std::vector<i64>& sizes, rounder rp) {
  gpass::tensor t(d, sizes);
  dispatch<nn_types>(d, ctx.node(), [&]<class U>() {
    U* p = t.data<U>();
    for (std::size_t i = 0; i < x.size(); ++i) p[i] = to_elem<U>(x[i]);
  });
  std::vector<value> args;
  args.emplace_back(std::move(t));
  for (std::size_t i = ctx.num_inputs() - a.captures; i < ctx.num_inputs(); ++i) args.push_back(ctx.input_value(i));
  auto out = ctx.call(f, std::move(args));
  if (out.size() != 1 || !out[0].is_tensor()) ctx.fail("modifier '" + f + "' must return one tensor");
  const gpass::tensor& y = out[0].tensor();
  if (y.sizes() != sizes)
    ctx.fail("modifier '" + f + "' returned " + y.shape().to_string() + " for " + shape::of(sizes).to_string() + " (it must keep the shape)");
  std::vector<double> r = as_doubles(y, ctx.node());
  for (double& v : r) v = rp(v);
  return r;
}

/// Y = modp(softmax(mods(Q K^T * scale))) V per batch and head (heads of K and V shared by
/// groups of query heads), as ONNX defines it: Q and K each scaled by sqrt(scale) in their
/// type, the scores in that type, then the softmax precision for the scores, the modifiers,
/// the softmax and the product with V; Y in V's type.
inline void flex_attention_run(context& ctx, const flex_attrs& a) {
  const gpass::tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  for (const gpass::tensor* t : {&q, &k, &v})
    if (t->rank() != 4) ctx.fail("Q, K and V must be 4-D, got " + t->shape().to_string());
  if (k.element_type() != q.element_type() || v.element_type() != q.element_type()) ctx.fail("Q, K and V must have one element type");
  const i64 B = q.sizes()[0], H = q.sizes()[1], L = q.sizes()[2], E = q.sizes()[3];
  const i64 KH = k.sizes()[1], S = k.sizes()[2], Ev = v.sizes()[3];
  if (k.sizes()[0] != B || v.sizes()[0] != B) ctx.fail("Q, K and V must have the same batch size");
  if (k.sizes()[3] != E) ctx.fail("Q and K must have the same head size, got " + std::to_string(E) + " and " + std::to_string(k.sizes()[3]));
  if (v.sizes()[1] != KH || v.sizes()[2] != S) ctx.fail("K and V must have the same heads and sequence length");
  if (KH <= 0 || H % KH != 0)
    ctx.fail("the query heads (" + std::to_string(H) + ") must be a multiple of the key/value heads (" + std::to_string(KH) + ")");
  const i64 group = H / KH;
  const dtype in_type = q.element_type();
  const dtype cd = a.softmax_type != dtype::undefined ? a.softmax_type : in_type == dtype::f64 ? dtype::f64 : dtype::f32;
  const rounder ri = rounder_for(in_type, ctx.node()), rc = rounder_for(cd, ctx.node());
  // sqrt(scale) computed in float, then in the input type
  const double scale = a.has_scale ? a.scale : 1.0 / std::sqrt(static_cast<double>(E));
  const double sq = ri(static_cast<double>(std::sqrt(static_cast<float>(scale))));
  std::vector<double> qs = as_doubles(q, ctx.node()), ks = as_doubles(k, ctx.node()), vs = as_doubles(v, ctx.node());
  for (double& x : qs) x = ri(x * sq);
  for (double& x : ks) x = ri(x * sq);
  for (double& x : vs) x = rc(x);
  const std::vector<i64> score_sizes{B, H, L, S};
  // the scores (held in double) count against the run's limit on one tensor's bytes
  const std::size_t score_bytes = bytes_or_throw(num_elements_or_throw(score_sizes), sizeof(double));
  if (detail::run_budget* b = ctx.budget()) {
    try {
      b->check_tensor(score_bytes);
    } catch (const error& e) {
      ctx.fail("the scores: " + e.message());
    }
  }
  std::vector<double> scores(score_bytes / sizeof(double));
  ctx.policy().parallel_for(B * H, static_cast<double>(L * S * E), [&](i64 lo, i64 hi) {
    for (i64 u = lo; u < hi; ++u) {
      const i64 kvh = (u / H) * KH + (u % H) / group;
      for (i64 i = 0; i < L; ++i)
        for (i64 j = 0; j < S; ++j) {
          const double* qr = qs.data() + (u * L + i) * E;
          const double* kr = ks.data() + (kvh * S + j) * E;
          double acc = 0;
          for (i64 e = 0; e < E; ++e) acc += qr[e] * kr[e];
          scores[static_cast<std::size_t>((u * L + i) * S + j)] = rc(ri(acc));  // the product in T1, cast to the precision
        }
    }
  });
  if (!a.score_mod.empty()) scores = flex_modify(ctx, a, a.score_mod, scores, cd, score_sizes, rc);
  // softmax over the keys, each step in the softmax precision (a row of -inf gives NaN, as
  // exp(-inf - -inf) does)
  for (i64 row = 0; row < B * H * L; ++row) {
    double* x = scores.data() + row * S;
    double m = -std::numeric_limits<double>::infinity();
    for (i64 j = 0; j < S; ++j) m = std::isnan(x[j]) || std::isnan(m) ? std::numeric_limits<double>::quiet_NaN() : std::max(m, x[j]);
    double sum = 0;
    for (i64 j = 0; j < S; ++j) sum += (x[j] = rc(std::exp(rc(x[j] - m))));
    sum = rc(sum);
    for (i64 j = 0; j < S; ++j) x[j] = rc(x[j] / sum);
  }
  if (!a.prob_mod.empty()) scores = flex_modify(ctx, a, a.prob_mod, scores, cd, score_sizes, rc);
  gpass::tensor& yo = ctx.allocate_output(0, v.element_type(), {B, H, L, Ev});
  std::vector<double> y(static_cast<std::size_t>(B * H * L * Ev));
  ctx.policy().parallel_for(B * H, static_cast<double>(L * S * Ev), [&](i64 lo, i64 hi) {
    for (i64 u = lo; u < hi; ++u) {
      const i64 kvh = (u / H) * KH + (u % H) / group;
      for (i64 i = 0; i < L; ++i) {
        const double* p = scores.data() + (u * L + i) * S;
        double* yr = y.data() + (u * L + i) * Ev;
        for (i64 j = 0; j < S; ++j) {
          const double* vr = vs.data() + (kvh * S + j) * Ev;
          for (i64 e = 0; e < Ev; ++e) yr[e] += p[j] * vr[e];
        }
        for (i64 e = 0; e < Ev; ++e) yr[e] = rc(yr[e]);
      }
    }
  });
  dispatch<nn_types>(v.element_type(), ctx.node(), [&]<class U>() {
    U* py = yo.data<U>();
    for (std::size_t i = 0; i < y.size(); ++i) py[i] = to_elem<U>(y[i]);
  });
}

inline void register_flex_attention(registry& r) {
  r.add({.domain = "ai.onnx.preview", .op = "FlexAttention", .since_version = 1, .dtypes = nn_types::dtypes(),
         .make = [](const kernel_node& n) -> fn {
           flex_attrs a;
           a.has_scale = n.has_attr("scale");
           a.scale = n.attr<double>("scale", 0.0);
           if (n.has_attr("softmax_precision")) a.softmax_type = float_type_attr(n.attr<i64>("softmax_precision"), n, "softmax_precision");
           a.score_mod = function_attr(n, "score_mod", false);
           a.prob_mod = function_attr(n, "prob_mod", false);
           a.captures = num_captures(n);
           return [a](context& ctx) {
             if (ctx.num_inputs() < 3 + a.captures) ctx.fail("expects Q, K, V and " + std::to_string(a.captures) + " captures");
             flex_attention_run(ctx, a);
           };
         }});
}

}  // namespace attention_impl

/// Registers the kernels of this family.
inline void register_attention(registry& r) {
  attention_impl::register_attention_op(r);
  attention_impl::register_rms_norm(r);
  attention_impl::register_rotary_embedding(r);
  attention_impl::register_group_norm(r);
  attention_impl::register_linear_attention(r);
  attention_impl::register_causal_conv(r);
  attention_impl::register_swiglu(r);
  attention_impl::register_scaled_dot_product_attention(r);
  attention_impl::register_flex_attention(r);
}

}  // namespace gpass::exec::cpu_detail
