// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file recurrent.hpp
/// The CUDA kernels of ONNX's recurrent-state ops (opset 27), as the Eigen CPU kernels compute
/// them (`eigen_cpu/kernels/attention.hpp`):
/// - LinearAttention: the state S (batch, kv_heads, k_head, v_head) is updated step by step;
///   every step only mixes the k_head entries of one column of S, so a thread owns a column
///   (batch, KV head, value index) for the whole sequence, in float whatever the element types
///   (as the CPU): the decay (S *= exp(decay)), the delta rule's correction v <- beta * (v -
///   S^T k), S += k v^T, and each query head's output scale * q^T S, in the CPU's order.
/// - CausalConvWithState: a thread per output element sums its k taps over the past state and
///   the input in the compute type, rounds to the element type, adds the bias, applies SiLU;
///   a thread per element of the new state copies the sequence's last k - 1 values.
/// Everything else in the CPU's order and arithmetic; exponentials of floats are computed in
/// double and rounded, within an ulp of glibc's expf (itself not correctly rounded, and an FMA
/// variant on some CPUs), so results after a decay or SiLU agree to about 1e-7 relative, not
/// bit for bit. Checks and messages are the CPU's (`recurrent_rules`).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/norm.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/recurrent_rules.hpp>
#include <gpass/exec/scratch.hpp>

namespace gpass::exec {

namespace cuda_recurrent {

using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using i64 = std::int64_t;

/// exp of the compute type: a float's in double, rounded.
inline constexpr const char* exp_source =
    "__device__ __forceinline__ float g_expr(float v) { return (float)exp((double)v); }\n"
    "__device__ __forceinline__ double g_expr(double v) { return exp(v); }\n"
    "#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x * "
    "blockDim.x)\n";

// ---- LinearAttention ----------------------------------------------------------------------------

/// The host image of `la_dims`.
struct la_dims {
  long long B = 0, T = 0, qn = 0, kvn = 0, dk = 0, dv = 0, group = 1, decay_per = 0, beta_per = 0;
  float scale = 1.0f;
};

/// The element types of a LinearAttention call: query, key, value, decay, beta, past state and
/// new state (absent inputs: f32, unused).
struct la_types {
  dtype q, k, v, g, b, p, s;
  std::string key() const {
    std::string r;
    for (dtype t : {q, k, v, g, b, p, s}) r += std::string(to_string(t)) + ",";
    return r;
  }
};

/// The LinearAttention library of types `ts`: `la_run` (a thread per column of the state).
inline std::string linear_attention_source(const la_types& ts) {
  std::string s = cuda_codegen::cuda_prelude();
  const std::pair<const char*, dtype> names[] = {{"TQ", ts.q}, {"TK", ts.k}, {"TV", ts.v}, {"TG", ts.g}, {"TB", ts.b}, {"TP", ts.p}, {"TS", ts.s}};
  for (const auto& [name, t] : names) s += "typedef " + std::string(cuda_codegen::storage_type(t)) + " " + name + ";\n";
  s += exp_source;
  s += R"(struct la_dims { long long B, T, qn, kvn, dk, dv, group, decay_per, beta_per; float scale; };
// column m of the state of (b, h): S[dd * dv] for dd < dk; g, bt, past, present may be null
extern "C" __global__ void la_run(const TQ* __restrict__ q, const TK* __restrict__ k, const TV* __restrict__ v, const TG* __restrict__ g,
                                  const TB* __restrict__ bt, const TP* __restrict__ past, float* __restrict__ S, TQ* __restrict__ y,
                                  TS* __restrict__ present, la_dims d) {
  G_LOOP(d.B * d.kvn * d.dv) {
    const long long u = i / d.dv, m = i - u * d.dv, b = u / d.kvn, h = u - b * d.kvn;
    float* Sc = S + u * d.dk * d.dv + m;
    for (long long dd = 0; dd < d.dk; ++dd) Sc[dd * d.dv] = past ? (float)g_load(past, (u * d.dk + dd) * d.dv + m) : 0.0f;
    for (long long t = 0; t < d.T; ++t) {
      const long long bt_h = (b * d.T + t) * d.kvn + h, kt = bt_h * d.dk;
      float vt = (float)g_load(v, bt_h * d.dv + m);
      if (g) {  // S *= exp(decay)
        const long long gb = bt_h * d.decay_per;
        for (long long dd = 0; dd < d.dk; ++dd) Sc[dd * d.dv] *= g_expr((float)g_load(g, gb + (d.decay_per == 1 ? 0 : dd)));
      }
      if (bt) {  // v <- beta * (v - S^T k)
        const float bv = (float)g_load(bt, (b * d.T + t) * d.beta_per + (d.beta_per == 1 ? 0 : h));
        float got = 0.0f;
        for (long long dd = 0; dd < d.dk; ++dd) got += Sc[dd * d.dv] * (float)g_load(k, kt + dd);
        vt = bv * (vt - got);
      }
      for (long long dd = 0; dd < d.dk; ++dd) Sc[dd * d.dv] += (float)g_load(k, kt + dd) * vt;  // S += k v^T
      for (long long hq = h * d.group; hq < (h + 1) * d.group; ++hq) {
        const long long qt = ((b * d.T + t) * d.qn + hq) * d.dk;
        float acc = 0.0f;
        for (long long dd = 0; dd < d.dk; ++dd) acc += (float)g_load(q, qt + dd) * Sc[dd * d.dv];
        g_store(y, ((b * d.T + t) * d.qn + hq) * d.dv + m, d.scale * acc);
      }
    }
    if (present)
      for (long long dd = 0; dd < d.dk; ++dd) g_store(present, (u * d.dk + dd) * d.dv + m, Sc[dd * d.dv]);
  }
}
)";
  return s;
}

inline fn make_linear_attention(const kernel_node& n) {
  const auto attrs = recurrent_rules::read_linear_attention(n);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const auto dims = recurrent_rules::check_linear_attention(attrs, ctx);
    check_scratch(ctx, dims.state_count * sizeof(float), "the state");
    check_scratch(ctx, dims.out_count * sizeof(float), "the output");
    const cuda_tensor& q = ctx.input(0);
    cuda_tensor& y = ctx.allocate_output(0, q.element_type(), {dims.B, dims.T, attrs.qn * dims.dv});
    cuda_tensor* present = nullptr;
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) present = &ctx.allocate_output(1, dims.state_type, dims.state_sizes);
    if (dims.dv == 0) return;  // (no values: the state and output are empty)
    auto& pol = ctx.policy();
    cuda_tensor S = pol.allocate_tensor(dtype::f32, dims.state_sizes, ctx.stream());
    auto type_of = [&](std::size_t i) { return ctx.has_input(i) ? ctx.input(i).element_type() : dtype::f32; };
    const la_types ts{q.element_type(), type_of(1), type_of(2), type_of(4), type_of(5), type_of(3), dims.state_type};
    const auto& kl = lib->get(pol, ts.key(), {"la_run"}, [&] { return linear_attention_source(ts); });
    auto ptr = [&](std::size_t i) -> const void* { return ctx.has_input(i) ? ctx.input(i).data() : nullptr; };
    const void *qp = ptr(0), *kp = ptr(1), *vp = ptr(2), *gp = ptr(4), *bp = ptr(5), *pp = ptr(3);
    void* sp = S.data();
    void* yp = y.data();
    void* np = present ? present->data() : nullptr;
    la_dims d;
    d.B = dims.B;
    d.T = dims.T;
    d.qn = attrs.qn;
    d.kvn = attrs.kvn;
    d.dk = dims.dk;
    d.dv = dims.dv;
    d.group = dims.group;
    d.decay_per = dims.decay_per;
    d.beta_per = dims.beta_per;
    d.scale = dims.scale;
    void* args[] = {&qp, &kp, &vp, &gp, &bp, &pp, &sp, &yp, &np, &d};
    pol.launch(kl.kernels[0], pol.blocks_for(d.B * d.kvn * d.dv), 256, args, ctx.stream());
  };
}

// ---- CausalConvWithState ------------------------------------------------------------------------

/// The CausalConvWithState library of element type `t`: `ccs_out` (a thread per output element)
/// and `ccs_state` (a thread per element of the new state).
inline std::string causal_conv_source(dtype t) {
  return cuda_norm::head(t, t) + exp_source + R"(// the padded sequence of row u (the past state's k - 1 values, or zeros, then the input's L)
__device__ __forceinline__ W g_seq(const T* __restrict__ x, const T* __restrict__ past, long long u, long long p, long long L, long long keep) {
  if (p < keep) return past ? (W)g_load(past, u * keep + p) : (W)0;
  return (W)g_load(x, u * L + p - keep);
}
extern "C" __global__ void ccs_out(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias, const T* __restrict__ past,
                                   T* __restrict__ y, long long rows, long long C, long long L, long long K, int silu) {
  G_LOOP(rows * L) {
    const long long u = i / L, p = i - u * L, c = u % C;
    W acc = 0;
    for (long long j = 0; j < K; ++j) acc += (W)g_load(w, c * K + j) * g_seq(x, past, u, p + j, L, K - 1);
    W o = g_rt(acc);
    if (bias) o = g_rt(o + (W)g_load(bias, c));
    if (silu) o = o * ((W)1 / ((W)1 + g_expr(-o)));
    g_store(y, i, o);
  }
}
extern "C" __global__ void ccs_state(const T* __restrict__ x, const T* __restrict__ past, T* __restrict__ present, long long rows, long long L,
                                     long long K) {
  const long long keep = K - 1;
  G_LOOP(rows * keep) {
    const long long u = i / keep, r = i - u * keep;
    g_store(present, i, g_seq(x, past, u, L + r, L, keep));
  }
}
)";
}

inline fn make_causal_conv(const kernel_node& n) {
  const bool silu = recurrent_rules::read_causal_conv_silu(n);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const auto d = recurrent_rules::check_causal_conv(ctx);
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    cuda_tensor& y = ctx.allocate_output(0, t, {d.B, d.C, d.L});
    cuda_tensor* present = nullptr;
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) present = &ctx.allocate_output(1, t, {d.B, d.C, d.K - 1});
    auto& pol = ctx.policy();
    const auto& kl = lib->get(pol, std::string(to_string(t)), {"ccs_out", "ccs_state"}, [&] { return causal_conv_source(t); });
    const void* xp = x.data();
    const void* wp = ctx.input(1).data();
    const void* bp = ctx.has_input(2) ? ctx.input(2).data() : nullptr;
    const void* pp = ctx.has_input(3) ? ctx.input(3).data() : nullptr;
    long long rows = d.B * d.C, C = d.C, L = d.L, K = d.K;
    if (y.size() > 0) {
      void* yp = y.data();
      int s = silu ? 1 : 0;
      void* args[] = {&xp, &wp, &bp, &pp, &yp, &rows, &C, &L, &K, &s};
      pol.launch(kl.kernels[0], pol.blocks_for(y.size()), 256, args, ctx.stream());
    }
    if (present && present->size() > 0) {
      void* np = present->data();
      void* args[] = {&xp, &pp, &np, &rows, &L, &K};
      pol.launch(kl.kernels[1], pol.blocks_for(present->size()), 256, args, ctx.stream());
    }
  };
}

/// Generated sources of this family for representative element types: (name, source).
inline std::vector<std::pair<std::string, std::string>> recurrent_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  const dtype f32 = dtype::f32;
  r.emplace_back("linear_attention_f32", linear_attention_source({f32, f32, f32, f32, f32, f32, f32}));
  r.emplace_back("linear_attention_mixed", linear_attention_source({dtype::f16, dtype::bf16, f32, dtype::f64, dtype::f16, dtype::f64, dtype::f64}));
  for (dtype t : {f32, dtype::f64, dtype::f16, dtype::bf16}) r.emplace_back("causal_conv_" + std::string(to_string(t)), causal_conv_source(t));
  return r;
}

}  // namespace cuda_recurrent

/// Registers LinearAttention and CausalConvWithState (27).
inline void register_cuda_recurrent(kernel_registry<cuda>& r) {
  const std::vector<dtype> floats{dtype::f32, dtype::f64, dtype::f16, dtype::bf16};
  r.add({.domain = "", .op = "LinearAttention", .since_version = 27, .dtypes = floats, .make = cuda_recurrent::make_linear_attention});
  r.add({.domain = "", .op = "CausalConvWithState", .since_version = 27, .dtypes = floats, .make = cuda_recurrent::make_causal_conv});
}

}  // namespace gpass::exec
