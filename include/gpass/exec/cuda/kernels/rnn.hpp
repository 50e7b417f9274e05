// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file rnn.hpp
/// The CUDA recurrent layers: ONNX RNN, GRU and LSTM (every attribute the CPU kernels take:
/// directions, activations with alpha and beta, clip, linear_before_reset, input_forget,
/// peepholes, sequence_lens, initial states, both layouts), for f16, bf16, f32 and f64.
///
/// The inputs are brought to the compute type (f32, or f64) in layout 0 by one generated
/// kernel each; per direction, one cuBLASLt product projects every step's input at once
/// (X W^T: [S*B, G*H]); then each step is one product of the state with R^T and one
/// generated cell kernel (a thread per batch row and hidden unit: gates, biases, peepholes,
/// clip, activations, the new state, masked past each sequence's length); GRU without
/// linear_before_reset needs a second product and kernel per step ((r . h) R_h^T after r).
/// The outputs go back to the element type and layout by one kernel each. Semantics follow
/// the Eigen CPU kernels (`eigen_cpu/kernels/nn.hpp`).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/linalg.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/rnn_rules.hpp>

namespace gpass::exec {

namespace cuda_rnn {

using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using i64 = std::int64_t;
using rnn_rules::act_kind;
using rnn_rules::activation;
using rnn_rules::cell;
using rnn_rules::rnn_config;

/// The expression of activation `a` of `v` in compute type `W`.
inline std::string activation_expr(const activation& a, const std::string& W) {
  const std::string al = cuda_codegen::literal(a.alpha, W), be = cuda_codegen::literal(a.beta, W);
  switch (a.kind) {
    case act_kind::relu: return "(v < (W)0 ? (W)0 : v)";
    case act_kind::tanh: return "g_tanh(v)";
    case act_kind::sigmoid: return "((W)1 / ((W)1 + g_exp(-v)))";
    case act_kind::affine: return "(v * " + al + " + " + be + ")";
    case act_kind::leaky_relu: return "(v >= (W)0 ? v : v * " + al + ")";
    case act_kind::thresholded_relu: return "(v > " + al + " ? v : (W)0)";
    case act_kind::scaled_tanh: return "(" + al + " * g_tanh(v * " + be + "))";
    case act_kind::hard_sigmoid: return "g_min(g_max(v * " + al + " + " + be + ", (W)0), (W)1)";
    case act_kind::elu: return "(v >= (W)0 ? v : " + al + " * (g_exp(v) - (W)1))";
    case act_kind::softsign: return "(v / ((W)1 + g_fabs(v)))";
    case act_kind::softplus: return "(v > (W)20 ? v : g_log((W)1 + g_exp(v)))";
  }
  return "v";
}

/// The library of one layer configuration over element type `t`: `rnn_load3` (a [A, B, C]
/// or, swapped, [B, A, C] array of `T` into a [A, B, C] array of `W`), `rnn_store3` (back),
/// `rnn_store_y` ([S, D, B, H] of `W` into Y of `T` in the layout), and the cell kernels
/// `rnn_cell` (RNN, LSTM, GRU with linear_before_reset), `gru_a` and `gru_b` (GRU without it).
inline std::string rnn_source(dtype t, const rnn_config& cfg) {
  const std::string T(cuda_codegen::storage_type(t)), W(t == dtype::f64 ? "double" : "float");
  std::string s = cuda_codegen::cuda_prelude();
  s += "typedef " + T + " T;\ntypedef " + W + " W;\n";
  s += "#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x "
       "* blockDim.x)\n";
  // the activation functions: f<k>, k = direction * per_dir + slot
  const std::size_t per = cfg.acts_per_dir();
  for (std::size_t k = 0; k < cfg.acts.size(); ++k)
    s += "__device__ __forceinline__ W f" + std::to_string(k) + "(W v) { return " + activation_expr(cfg.acts[k], W) + "; }\n";
  for (std::size_t slot = 0; slot < per; ++slot) {
    s += "__device__ __forceinline__ W act" + std::to_string(slot) + "(int d, W v) { return d == 0 ? f" + std::to_string(slot) + "(v) : f" +
         std::to_string(cfg.dirs == 2 ? per + slot : slot) + "(v); }\n";
  }
  const bool clip = cfg.clip > 0;
  s += "__device__ __forceinline__ W clip(W v) { return " +
       (clip ? "g_min(g_max(v, -" + cuda_codegen::literal(cfg.clip, W) + "), " + cuda_codegen::literal(cfg.clip, W) + ")" : std::string("v")) +
       "; }\n";
  s += R"(
extern "C" __global__ void rnn_load3(const T* __restrict__ x, W* __restrict__ y, long long A, long long B, long long C, int swap) {
  G_LOOP(A * B * C) {
    const long long c = i % C, r = i / C, b = r % B, a = r / B;
    y[i] = (W)g_load(x, swap ? (b * A + a) * C + c : i);
  }
}
extern "C" __global__ void rnn_store3(const W* __restrict__ x, T* __restrict__ y, long long A, long long B, long long C, int swap) {
  G_LOOP(A * B * C) {
    const long long c = i % C, r = i / C, b = r % B, a = r / B;
    g_store(y, swap ? (b * A + a) * C + c : i, x[i]);
  }
}
// y [S, D, B, H] into Y: layout 0 the same order, layout 1 [B, S, D, H]
extern "C" __global__ void rnn_store_y(const W* __restrict__ x, T* __restrict__ y, long long S, long long D, long long B, long long H,
                                       int layout) {
  G_LOOP(S * D * B * H) {
    const long long h = i % H, r = i / H, b = r % B, r2 = r / B, d = r2 % D, s = r2 / D;
    g_store(y, layout ? ((b * S + s) * D + d) * H + h : i, x[i]);
  }
}
// gate j of batch row b: the input projection, the recurrent product, the biases
__device__ __forceinline__ W gate(const W* xw, const W* hr, const W* wb, const W* rb, long long b, long long GH, long long HR, long long j,
                                  bool with_rb) {
  W v = xw[b * GH + j] + (hr ? hr[b * HR + j] : (W)0);
  if (wb) v += wb[j];
  if (rb && with_rb) v += rb[j];
  return v;
}
)";
  // the cell of one step over B rows x H units: reads h, c (state) and writes them in place,
  // and y's row of this step when the step is inside the row's sequence
  s += R"(extern "C" __global__ void rnn_cell(const W* __restrict__ xw, const W* __restrict__ hr, const W* __restrict__ wb,
                                    const W* __restrict__ rb, const W* __restrict__ peep, W* __restrict__ h, W* __restrict__ c,
                                    W* __restrict__ y, const long long* __restrict__ lens, long long B, long long H, long long t,
                                    int d) {
  G_LOOP(B * H) {
    const long long b = i / H, k = i % H;
    if (lens && t >= lens[b]) continue;  // past this sequence's end: the state stays
)";
  if (cfg.kind == cell::lstm) {
    s += R"(    const long long GH = 4 * H;
    const W cp = c[i];
    W gi = gate(xw, hr, wb, rb, b, GH, GH, k, true), go = gate(xw, hr, wb, rb, b, GH, GH, H + k, true);
    W gf = gate(xw, hr, wb, rb, b, GH, GH, 2 * H + k, true), gc = gate(xw, hr, wb, rb, b, GH, GH, 3 * H + k, true);
    if (peep) { gi += peep[k] * cp; gf += peep[2 * H + k] * cp; }
    gi = act0(d, clip(gi));
)";
    s += cfg.input_forget ? "    gf = (W)1 - gi;\n" : "    gf = act0(d, clip(gf));\n";
    s += R"(    gc = act1(d, clip(gc));
    const W cn = gf * cp + gi * gc;
    if (peep) go += peep[H + k] * cn;
    go = act0(d, clip(go));
    const W hn = act2(d, cn) * go;
    c[i] = cn;
    h[i] = hn;
    y[i] = hn;
  }
}
)";
  } else if (cfg.kind == cell::gru) {
    // with linear_before_reset: hr holds h R^T for all three gates
    s += R"(    const long long GH = 3 * H;
    const W z = act0(d, clip(gate(xw, hr, wb, rb, b, GH, GH, k, true)));
    const W r = act0(d, clip(gate(xw, hr, wb, rb, b, GH, GH, H + k, true)));
    const W hh_r = hr[b * GH + 2 * H + k] + (rb ? rb[2 * H + k] : (W)0);
    const W hh = act1(d, clip(gate(xw, nullptr, wb, rb, b, GH, GH, 2 * H + k, false) + r * hh_r));
    const W hn = ((W)1 - z) * hh + z * h[i];
    h[i] = hn;
    y[i] = hn;
  }
}
// without linear_before_reset, first: z and r from h R_zr^T (hr: [B, 2H]), zr keeps them,
// rh = r . h for the second product
extern "C" __global__ void gru_a(const W* __restrict__ xw, const W* __restrict__ hr, const W* __restrict__ wb, const W* __restrict__ rb,
                                 const W* __restrict__ h, W* __restrict__ zr, W* __restrict__ rh, long long B, long long H, int d) {
  G_LOOP(B * H) {
    const long long b = i / H, k = i % H, GH = 3 * H;
    const W z = act0(d, clip(gate(xw, nullptr, wb, rb, b, GH, 0, k, true) + hr[b * 2 * H + k]));
    const W r = act0(d, clip(gate(xw, nullptr, wb, rb, b, GH, 0, H + k, true) + hr[b * 2 * H + H + k]));
    zr[b * 2 * H + k] = z;
    zr[b * 2 * H + H + k] = r;
    rh[i] = r * h[i];
  }
}
// then: the candidate from (r . h) R_h^T (rhr: [B, H]), the new state
extern "C" __global__ void gru_b(const W* __restrict__ xw, const W* __restrict__ rhr, const W* __restrict__ wb, const W* __restrict__ rb,
                                 const W* __restrict__ zr, W* __restrict__ h, W* __restrict__ y, const long long* __restrict__ lens,
                                 long long B, long long H, long long t, int d) {
  G_LOOP(B * H) {
    const long long b = i / H, k = i % H, GH = 3 * H;
    if (lens && t >= lens[b]) continue;
    const W hh = act1(d, clip(gate(xw, nullptr, wb, rb, b, GH, 0, 2 * H + k, true) + rhr[i]));
    const W z = zr[b * 2 * H + k];
    const W hn = ((W)1 - z) * hh + z * h[i];
    h[i] = hn;
    y[i] = hn;
  }
}
)";
  } else {
    s += R"(    const W hn = act0(d, clip(gate(xw, hr, wb, rb, b, H, H, k, true)));
    h[i] = hn;
    y[i] = hn;
  }
}
)";
  }
  return s;
}

inline const std::vector<std::string>& rnn_entries(cell kind) {
  static const std::vector<std::string> plain{"rnn_load3", "rnn_store3", "rnn_store_y", "rnn_cell"};
  static const std::vector<std::string> gru{"rnn_load3", "rnn_store3", "rnn_store_y", "rnn_cell", "gru_a", "gru_b"};
  return kind == cell::gru ? gru : plain;
}

/// The key of a configuration's library (what its generated source depends on).
inline std::string config_key(dtype t, const rnn_config& cfg) {
  std::string k = std::string(to_string(t)) + "," + std::to_string(static_cast<int>(cfg.kind)) + "," + std::to_string(cfg.dirs) + "," +
                  std::to_string(cfg.clip) + "," + std::to_string(cfg.input_forget ? 1 : 0);
  for (const auto& a : cfg.acts) k += "," + std::to_string(static_cast<int>(a.kind)) + ":" + std::to_string(a.alpha) + ":" + std::to_string(a.beta);
  return k;
}

struct rnn_state {
  lazy_library lib;
  cuda_linalg::lt_state gemm;
};

inline fn make_rnn(const kernel_node& n, cell kind) {
  const rnn_config cfg = rnn_config::read(n, kind);
  auto st = std::make_shared<rnn_state>();
  return [cfg, st, kind](context& ctx) {
    auto& pol = ctx.policy();
    auto& s = ctx.stream();
    const cuda_tensor& X = ctx.input(0);
    const cuda_tensor& Wt = ctx.input(1);
    const cuda_tensor& Rt = ctx.input(2);
    const dtype t = X.element_type();
    if (!cuda_codegen::is_float(t)) ctx.fail("no CUDA recurrent layer for element type " + std::string(to_string(t)));
    if (Wt.element_type() != t || Rt.element_type() != t) ctx.fail("X, W and R have different element types");
    const i64 D = cfg.dirs, G = cfg.gates;
    if (X.rank() != 3) ctx.fail("X must have rank 3, got shape " + X.shape().to_string());
    if (Wt.rank() != 3 || Rt.rank() != 3) ctx.fail("W and R must have rank 3");
    const i64 S = cfg.layout ? X.sizes()[1] : X.sizes()[0];
    const i64 B = cfg.layout ? X.sizes()[0] : X.sizes()[1];
    const i64 I = X.sizes()[2];
    const i64 H = cfg.hidden ? cfg.hidden : Rt.sizes()[2];
    const i64 GH = G * H;
    if (Wt.sizes() != std::vector<i64>{D, GH, I})
      ctx.fail("W has shape " + Wt.shape().to_string() + ", expected " + shape::of({D, GH, I}).to_string());
    if (Rt.sizes() != std::vector<i64>{D, GH, H})
      ctx.fail("R has shape " + Rt.shape().to_string() + ", expected " + shape::of({D, GH, H}).to_string());
    const std::vector<i64> state_sizes = cfg.layout ? std::vector<i64>{B, D, H} : std::vector<i64>{D, B, H};
    auto typed = [&](std::size_t port, const char* what, const std::vector<i64>& want) -> const cuda_tensor* {
      if (!ctx.has_input(port)) return nullptr;
      const cuda_tensor& v = ctx.input(port);
      if (v.element_type() != t) ctx.fail(std::string(what) + " has element type " + std::string(to_string(v.element_type())));
      if (v.sizes() != want) ctx.fail(std::string(what) + " has shape " + v.shape().to_string() + ", expected " + shape::of(want).to_string());
      return &v;
    };
    const cuda_tensor* bias = typed(3, "B", {D, 2 * GH});
    std::vector<i64> lens;
    if (ctx.has_input(4)) {
      lens = cuda_detail::host_ints(ctx, 4);
      if (static_cast<i64>(lens.size()) != B) ctx.fail("sequence_lens must have batch_size elements");
      for (i64 v : lens)
        if (v < 0 || v > S) ctx.fail("sequence_lens value " + std::to_string(v) + " is out of range [0, " + std::to_string(S) + "]");
    }
    const cuda_tensor* h0 = typed(5, "initial_h", state_sizes);
    const cuda_tensor* c0 = kind == cell::lstm ? typed(6, "initial_c", state_sizes) : nullptr;
    const cuda_tensor* peep = kind == cell::lstm ? typed(7, "P", {D, 3 * H}) : nullptr;

    // the outputs (only the wanted ones are written)
    const bool want_y = ctx.num_outputs() > 0 && ctx.output_wanted(0);
    const bool want_h = ctx.num_outputs() > 1 && ctx.output_wanted(1);
    const bool want_c = kind == cell::lstm && ctx.num_outputs() > 2 && ctx.output_wanted(2);
    cuda_tensor* Y = want_y ? &ctx.allocate_output(0, t, cfg.layout ? std::vector<i64>{B, S, D, H} : std::vector<i64>{S, D, B, H}) : nullptr;
    cuda_tensor* YH = want_h ? &ctx.allocate_output(1, t, state_sizes) : nullptr;
    cuda_tensor* YC = want_c ? &ctx.allocate_output(2, t, state_sizes) : nullptr;
    if (D * B * H == 0) return;  // nothing to compute (Y may still have S * 0 elements)

    const dtype w = t == dtype::f64 ? dtype::f64 : dtype::f32;  // the compute type
    const auto& k = st->lib.get(pol, config_key(t, cfg), rnn_entries(kind), [&] { return rnn_source(t, cfg); });
    auto launch = [&](std::size_t entry, long long count, std::vector<void*> args) {
      if (count > 0) pol.launch(k.kernels[entry], pol.blocks_for(count), 256, args.data(), s);
    };
    // an input of element type t as a [A, Bn, C] array of w (swap: it is [Bn, A, C])
    auto load = [&](const cuda_tensor& v, i64 A, i64 Bn, i64 C, bool swap) {
      cuda_tensor r = pol.allocate_tensor(w, {A, Bn, C}, s);
      const void* src = v.data();
      void* dst = r.data();
      long long a = A, b = Bn, c = C;
      int sw = swap ? 1 : 0;
      launch(0, A * Bn * C, {&src, &dst, &a, &b, &c, &sw});
      return r;
    };
    auto zeros = [&](std::vector<i64> sizes) {
      cuda_tensor r = pol.allocate_tensor(w, std::move(sizes), s);
      pol.fill_zero(r, s);
      return r;
    };
    const cuda_tensor x = load(X, S, B, I, cfg.layout != 0);
    const cuda_tensor wm = load(Wt, D, GH, I, false), rm = load(Rt, D, GH, H, false);
    const cuda_tensor bm = bias ? load(*bias, 1, D, 2 * GH, false) : cuda_tensor{};
    const cuda_tensor pm = peep ? load(*peep, 1, D, 3 * H, false) : cuda_tensor{};
    cuda_tensor h = h0 ? load(*h0, D, B, H, cfg.layout != 0) : zeros({D, B, H});
    cuda_tensor c = c0 ? load(*c0, D, B, H, cfg.layout != 0) : zeros({D, B, H});
    cuda_tensor y = zeros({S, D, B, H});
    cuda_tensor lens_dev;
    if (!lens.empty()) lens_dev = pol.upload(gpass::tensor::from<i64>(lens), s);
    const std::size_t es = size_of(w);
    auto at = [&](const cuda_tensor& v, i64 elements) -> void* {
      return v.data() ? static_cast<std::byte*>(v.data()) + static_cast<std::size_t>(elements) * es : nullptr;
    };
    cuda_tensor xw = pol.allocate_tensor(w, {S * B, GH}, s);
    cuda_tensor hr = pol.allocate_tensor(w, {B, GH}, s);
    const bool gru_two = kind == cell::gru && !cfg.linear_before_reset;
    cuda_tensor zr = gru_two ? pol.allocate_tensor(w, {B, 2 * H}, s) : cuda_tensor{};
    cuda_tensor rh = gru_two ? pol.allocate_tensor(w, {B, H}, s) : cuda_tensor{};
    cuda_tensor rhr = gru_two ? pol.allocate_tensor(w, {B, H}, s) : cuda_tensor{};
    // Y = A B^T for row-major A [M, K] and B [N, K] (K = 0: zeros)
    auto product = [&](const void* a, const void* b, void* out, i64 M, i64 N, i64 K, i64 ldb) {
      if (M == 0 || N == 0) return;
      if (K == 0) {
        cuda_detail::check(cudaMemsetAsync(out, 0, static_cast<std::size_t>(M * N) * es, s.stream), "clearing a product");
        return;
      }
      cuda_linalg::lt_problem p{.t = w, .ta = false, .tb = true, .M = M, .N = N, .K = K, .lda = K, .ldb = ldb, .ldc = N};
      cuda_linalg::lt_matmul(ctx, st->gemm, p, 1.0, 0.0, a, b, out);
    };
    const void* no_lens = lens.empty() ? nullptr : lens_dev.data();
    for (i64 d = 0; d < D; ++d) {
      const bool rev = D == 2 ? d == 1 : cfg.reverse;
      const void* Wd = at(wm, d * GH * I);
      const void* Rd = at(rm, d * GH * H);
      const void* wb = bias ? at(bm, d * 2 * GH) : nullptr;
      const void* rb = bias ? at(bm, d * 2 * GH + GH) : nullptr;
      const void* pd = peep ? at(pm, d * 3 * H) : nullptr;
      void* hd = at(h, d * B * H);
      void* cd = at(c, d * B * H);
      product(x.data(), Wd, xw.data(), S * B, GH, I, I);
      int dd = static_cast<int>(d);
      long long bb = B, hh = H;
      for (i64 step = 0; step < S; ++step) {
        const i64 tt = rev ? S - 1 - step : step;
        long long tl = tt;
        const void* xwt = at(xw, tt * B * GH);
        void* yt = at(y, (tt * D + d) * B * H);
        if (gru_two) {
          product(hd, Rd, hr.data(), B, 2 * H, H, H);  // h R_zr^T
          const void* hrp = hr.data();
          void* zp = zr.data();
          void* rp = rh.data();
          launch(4, B * H, {&xwt, &hrp, &wb, &rb, &hd, &zp, &rp, &bb, &hh, &dd});
          product(rh.data(), at(rm, d * GH * H + 2 * H * H), rhr.data(), B, H, H, H);  // (r . h) R_h^T
          const void* rhp = rhr.data();
          const void* zc = zr.data();
          launch(5, B * H, {&xwt, &rhp, &wb, &rb, &zc, &hd, &yt, &no_lens, &bb, &hh, &tl, &dd});
        } else {
          product(hd, Rd, hr.data(), B, GH, H, H);  // h R^T
          const void* hrp = hr.data();
          launch(3, B * H, {&xwt, &hrp, &wb, &rb, &pd, &hd, &cd, &yt, &no_lens, &bb, &hh, &tl, &dd});
        }
      }
    }
    // the outputs in the element type and layout
    if (Y) {
      const void* src = y.data();
      void* dst = Y->data();
      long long ss = S, dd = D, bb = B, hh = H;
      int layout = static_cast<int>(cfg.layout);
      launch(2, S * D * B * H, {&src, &dst, &ss, &dd, &bb, &hh, &layout});
    }
    auto store_state = [&](const cuda_tensor& v, cuda_tensor* out) {
      if (!out) return;
      const void* src = v.data();
      void* dst = out->data();
      long long a = D, bb = B, cc = H;
      int sw = cfg.layout ? 1 : 0;
      launch(1, D * B * H, {&src, &dst, &a, &bb, &cc, &sw});
    };
    store_state(h, YH);
    store_state(c, YC);
  };
}

/// Generated sources for a few configurations: (name, source).
inline std::vector<std::pair<std::string, std::string>> rnn_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  // each cell on f32; an f16 LSTM and an f64 GRU (the other storage and compute types)
  for (const auto& [t, kind] : {std::pair{dtype::f32, cell::rnn}, std::pair{dtype::f32, cell::gru}, std::pair{dtype::f32, cell::lstm},
                                std::pair{dtype::f16, cell::lstm}, std::pair{dtype::f64, cell::gru}}) {
    rnn_config cfg;
    cfg.kind = kind;
    cfg.gates = kind == cell::lstm ? 4 : kind == cell::gru ? 3 : 1;
    cfg.dirs = 2;
    cfg.clip = kind == cell::gru ? 3.0 : 0.0;
    cfg.input_forget = kind == cell::lstm;
    const std::size_t n = 2 * cfg.acts_per_dir();
    for (std::size_t i = 0; i < n; ++i) {  // the activation kinds in turn, with parameters
      activation a;
      a.kind = static_cast<act_kind>((i * 3 + static_cast<std::size_t>(kind)) % 11);
      a.alpha = 0.5;
      a.beta = 0.25;
      cfg.acts.push_back(a);
    }
    r.emplace_back("rnn_" + std::string(to_string(t)) + "_" + std::to_string(static_cast<int>(kind)), rnn_source(t, cfg));
  }
  return r;
}

}  // namespace cuda_rnn

/// Registers RNN, GRU and LSTM.
inline void register_cuda_rnn(kernel_registry<cuda>& r) {
  using namespace cuda_rnn;
  const std::vector<dtype> ft{dtype::f16, dtype::bf16, dtype::f32, dtype::f64};
  r.add({.op = "RNN", .dtypes = ft, .make = [](const kernel_node& n) { return make_rnn(n, cell::rnn); }});
  r.add({.op = "GRU", .dtypes = ft, .make = [](const kernel_node& n) { return make_rnn(n, cell::gru); }});
  r.add({.op = "LSTM", .dtypes = ft, .make = [](const kernel_node& n) { return make_rnn(n, cell::lstm); }});
}

}  // namespace gpass::exec
