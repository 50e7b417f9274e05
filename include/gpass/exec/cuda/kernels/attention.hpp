// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file attention.hpp
/// The CUDA kernels of ONNX's attention ops: Attention (versions 23 to 25), its KV-cache
/// update TensorScatter (24) and SwiGLU (28).
///
/// Attention takes 3-D or 4-D inputs, grouped-query heads, past key and value caches with the
/// present ones as outputs, a boolean or additive mask of any numeric type (broadcast, shorter
/// than the keys), is_causal, the sliding window, nonpad_kv_seqlen, softcap,
/// softmax_precision and the four qk_matmul_output modes. One generated kernel lays Q, K and V
/// out per head (the caches first) and scales Q and K by sqrt(scale) in Q's type; two
/// strided-batched cuBLASLt products (a batch per key/value head: its group of query heads is
/// one block of rows) surround a kernel that takes each row of scores through softcap, the
/// mask and the softmax, a block per row. Each step rounds to the element type where ONNX's
/// definition materializes a tensor, and the softmax to its precision, as the Eigen CPU
/// kernel does (`eigen_cpu/kernels/attention.hpp`), whose checks and messages it shares
/// (`nn_rules::attention_check`). V of another element type than Q runs where the CPU kernel
/// does (`applies`).
///
/// TensorScatter writes the update along its axis from each batch's write index (linear or
/// circular), the indices read back and checked as on the CPU; SwiGLU is a thread per element
/// with the CPU's roundings.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/array.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/linalg.hpp>
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/kernels/norm.hpp>
#include <gpass/exec/cuda/kernels/transformer.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/nn_rules.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec {

namespace cuda_attention {

using i64 = std::int64_t;
using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;

// ---- Attention ------------------------------------------------------------------------------

/// What `att_softmax` reads (host mirror of the device `g_att`): rows B * H * Sq of T scores;
/// the mask's 4-D sizes; the past length; the qk_matmul_output mode; whether rows get a bias
/// (mask, causal, window or padding), the causal mask, a past cache, the running sum of a bf16
/// softmax; the window sizes (-1: none) and softcap (0: none).
struct g_att {
  long long rows = 0, T = 0, Sq = 0, H = 0, P = 0;
  long long ms[4] = {1, 1, 1, 1};
  long long mode = 0, has_bias = 0, causal = 0, has_past = 0, running = 0;
  long long left = -1, right = -1;
  double cap = 0;
};

/// The library of Attention for Q's type `t`, softmax type `sm` and mask type `mask`:
/// - `att_layout(y, ys, past, x, B, N, P, S, D, three_d, sq)`: y and ys [B, N, P + S, D] from
///   past [B, N, P, D] (may be null when P is 0) then x ([B, S, N * D] when three_d, else [B,
///   N, S, D]); y the values (may be null), ys the values times sqrt(scale) `sq` rounded to T
///   (may be null);
/// - `mha_merge(y, x, B, S, N, H)`: y [B, S, N, H] = x [B, N, S, H] (MultiHeadAttention's,
///   `cuda_transformer::heads_merge_source`);
/// - `att_softmax(scores, probs, qk, mask, lens, a)`: a block per row of the scores [B, H, Sq,
///   T] (probs may be scores): softcap, the bias, the softmax in the softmax type, the
///   probabilities rounded to T; qk (may be null) the qk_matmul_output of mode a.mode; lens the
///   nonpad_kv_seqlen (may be null).
inline std::string attention_source(dtype t, dtype sm, dtype mask) {
  std::string s = cuda_norm::head(t, sm) + cuda_norm::round_function("g_rs", sm) + "typedef " +
                  std::string(cuda_codegen::storage_type(mask)) + " M;\n";
  s += mask == dtype::bool_ ? "__device__ __forceinline__ W g_mask(const M* m, long long j) { return m[j] ? (W)0 : (W)(-1.0 / 0.0); }\n"
                            : "__device__ __forceinline__ W g_mask(const M* m, long long j) { return (W)g_load(m, j); }\n";
  s += cuda_transformer::heads_merge_source();
  s += R"(extern "C" __global__ void att_layout(T* __restrict__ y, T* __restrict__ ys, const T* __restrict__ past, const T* __restrict__ x, long long B,
    long long N, long long P, long long S, long long D, int three_d, double sq) {
  const W f = g_rt((W)sq);
  const long long L = P + S;
  G_LOOP(B * N * L * D) {
    const long long d = i % D, t = (i / D) % L, u = i / (D * L), n = u % N, b = u / N;
    const T v = t < P ? past[(u * P + t) * D + d] : x[three_d ? ((b * S + (t - P)) * N + n) * D + d : (u * S + (t - P)) * D + d];
    if (y) y[i] = v;
    if (ys) g_store(ys, i, g_rt((W)g_load(&v, 0) * f));
  }
}
struct g_att {
  long long rows, T, Sq, H, P;
  long long ms[4];
  long long mode, has_bias, causal, has_past, running, left, right;
  double cap;
};
// score j of a row: rounded to T after softcap and after the bias (-inf where masked, `*masked`
// then set); the qk output of modes 0 to 2 written when qko is given
__device__ __forceinline__ W g_att_score(const T* sr, const M* mr, const g_att& a, long long i, long long off, long long len, long long j,
    T* qko, bool* masked) {
  W s = (W)g_load(sr, j);
  if (qko && a.mode == 0) g_store(qko, j, s);
  if (a.cap > 0) {
    const W c = g_rt((W)a.cap);
    s = g_rt(g_rt(g_tanh(g_rt(s / c))) * c);
  }
  if (qko && a.mode == 1) g_store(qko, j, s);
  *masked = false;
  if (a.has_bias) {
    const W neg = (W)(-1.0 / 0.0);
    W b = 0;
    b = j >= a.ms[3] ? neg : mr ? g_mask(mr, j) : (W)0;  // (ms[3] is T without a mask)
    const long long diff = i + off - j;  // the query's absolute position minus the key's
    bool allowed = !a.causal || diff >= 0;
    if (a.left >= 0 && diff > a.left) allowed = false;
    if (a.right >= 0 && -diff > a.right) allowed = false;
    if (j >= len) allowed = false;
    if (!allowed) b = neg;
    *masked = b == neg;
    s = g_rt(s + b);
  }
  if (qko && a.mode == 2) g_store(qko, j, s);
  return s;
}
extern "C" __global__ void att_softmax(const T* sc, T* p, T* __restrict__ qk, const M* __restrict__ mask, const long long* __restrict__ lens,
    g_att a) {
  __shared__ W sh[33];
  __shared__ W run;
  const W neg = (W)(-1.0 / 0.0);
  for (long long r = blockIdx.x; r < a.rows; r += gridDim.x) {
    const long long i = r % a.Sq, u = r / a.Sq, h = u % a.H, b = u / a.H;
    const T* sr = sc + r * a.T;
    T* pr = p + r * a.T;
    T* qko = qk ? qk + r * a.T : 0;
    const M* mr = mask ? mask + (((a.ms[0] == 1 ? 0 : b) * a.ms[1] + (a.ms[1] == 1 ? 0 : h)) * a.ms[2] + (a.ms[2] == 1 ? 0 : i)) * a.ms[3] : 0;
    const long long off = a.has_past ? a.P : lens ? lens[b] - a.Sq : 0;  // the keys before the query block
    const long long len = lens ? lens[b] : a.T;
    // the maximum in the softmax type (NaN when a score is), and whether a key is open
    W m = neg, open = 0;
    for (long long j = threadIdx.x; j < a.T; j += blockDim.x) {
      bool masked;
      const W x = g_rs(g_att_score(sr, mr, a, i, off, len, j, qko, &masked));
      if (!masked) open = 1;
      m = g_max(m, x);
    }
    m = g_block_reduce<1>(m, sh);
    open = g_block_reduce<1>(open, sh);
    if ((a.has_bias && open == 0) || m == neg) {  // no key to attend: a zero row
      for (long long j = threadIdx.x; j < a.T; j += blockDim.x) {
        g_store(pr, j, (W)0);
        if (qko && a.mode == 3) g_store(qko, j, (W)0);
      }
      continue;
    }
    W s = 0;
    if (a.running) {  // (bf16: the sum rounded after every addition, in order)
      if (threadIdx.x == 0) {
        for (long long j = 0; j < a.T; ++j) {
          bool masked;
          s = g_rs(s + g_rs((W)g_exp((double)g_rs(g_rs(g_att_score(sr, mr, a, i, off, len, j, 0, &masked)) - m))));
        }
        run = s;
      }
      __syncthreads();
      s = run;
    } else {
      for (long long j = threadIdx.x; j < a.T; j += blockDim.x) {
        bool masked;
        s += g_rs((W)g_exp((double)g_rs(g_rs(g_att_score(sr, mr, a, i, off, len, j, 0, &masked)) - m)));
      }
      s = g_block_reduce<0>(s, sh);
    }
    s = g_rs(s);
    if (s == 0) s = 1;
    for (long long j = threadIdx.x; j < a.T; j += blockDim.x) {
      bool masked;
      const W e = g_rs((W)g_exp((double)g_rs(g_rs(g_att_score(sr, mr, a, i, off, len, j, 0, &masked)) - m)));
      const W q = g_rt(g_rs(e / s));
      g_store(pr, j, q);
      if (qko && a.mode == 3) g_store(qko, j, q);
    }
  }
}
)";
  return s;
}

/// Whether the GPU kernel takes an attention mask of type `m`.
inline bool mask_type_ok(dtype m) { return cuda_codegen::supported(m); }

/// One Attention node's cuBLASLt plans and generated kernels.
using attention_state = cuda_transformer::sdpa_state;

inline fn make_attention(const kernel_node& n) {
  const nn_rules::attention_attrs a = nn_rules::read_attention_attrs(n);
  auto st = std::make_shared<attention_state>();
  return [a, st](context& ctx) {
    const nn_rules::attention_sizes z = nn_rules::attention_check(ctx, a);
    const cuda_tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
    const dtype t = q.element_type();
    if (v.element_type() != t)
      ctx.fail("the CUDA kernel takes V of Q's element type " + std::string(to_string(t)) + ", got " + std::string(to_string(v.element_type())));
    const cuda_tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    if (mask && !mask_type_ok(mask->element_type()))
      ctx.fail("the CUDA kernel takes no attn_mask of type " + std::string(to_string(mask->element_type())));
    const cuda_tensor* past_k = ctx.has_input(4) ? &ctx.input(4) : nullptr;
    const cuda_tensor* past_v = ctx.has_input(5) ? &ctx.input(5) : nullptr;
    const cuda_tensor* lens = ctx.has_input(6) ? &ctx.input(6) : nullptr;
    if (lens) nn_rules::check_nonpad_lengths(cuda_detail::host_ints(ctx, 6), z, ctx.node());
    const i64 B = z.batch, H = z.q_heads, KH = z.kv_heads, Sq = z.q_seq, S = z.kv_seq, P = z.past, T = z.total, D = z.head, Dv = z.v_head;
    const i64 group = H / KH;
    auto& pol = ctx.policy();
    auto wanted = [&](std::size_t port) { return ctx.num_outputs() > port && ctx.output_wanted(port); };
    cuda_tensor* present_k = wanted(1) ? &ctx.allocate_output(1, t, {B, KH, T, D}) : nullptr;
    cuda_tensor* present_v = wanted(2) ? &ctx.allocate_output(2, t, {B, KH, T, Dv}) : nullptr;
    cuda_tensor& y = z.three_d ? ctx.allocate_output(0, t, {B, Sq, H * Dv}) : ctx.allocate_output(0, t, {B, H, Sq, Dv});
    cuda_tensor* qk = wanted(3) ? &ctx.allocate_output(3, t, {B, H, Sq, T}) : nullptr;
    const bool compute = y.size() != 0 || (qk && qk->size() != 0);
    if (!compute && (!present_k || present_k->size() == 0) && (!present_v || present_v->size() == 0)) return;
    const dtype sm = a.softmax_type == dtype::undefined ? t : a.softmax_type;
    const dtype mt = mask ? mask->element_type() : dtype::bool_;
    const auto& kk = st->lib.get(pol, "att," + std::string(to_string(t)) + "," + std::string(to_string(sm)) + "," + std::string(to_string(mt)),
                                 {"att_layout", "mha_merge", "att_softmax"}, [&] { return attention_source(t, sm, mt); });
    // [B, N, P + len, d] from the cache and x: the values into `out`, the scaled ones into `scaled`
    auto layout = [&](const cuda_tensor& x, const cuda_tensor* past, i64 N, i64 len, i64 d, void* out, void* scaled, double sq) {
      const i64 count = B * N * ((past ? P : 0) + len) * d;
      if (count == 0 || (!out && !scaled)) return;
      const void* pp = past ? past->data() : nullptr;
      const void* xp = x.data();
      long long bb = B, nn = N, p0 = past ? P : 0, ll = len, dd = d;
      int three = z.three_d ? 1 : 0;
      void* args[] = {&out, &scaled, &pp, &xp, &bb, &nn, &p0, &ll, &dd, &three, &sq};
      pol.launch(kk.kernels[0], pol.blocks_for(count), 256, args, ctx.stream());
    };
    const double sq = std::sqrt(a.scale_for(D));
    // K: the present key (when wanted) and the scaled keys; V: the present value, or V itself
    cuda_tensor ks = compute ? pol.allocate_tensor(t, {B, KH, T, D}, ctx.stream()) : cuda_tensor{};
    layout(k, past_k, KH, S, D, present_k ? present_k->data() : nullptr, compute ? ks.data() : nullptr, sq);
    if (!compute) {
      if (present_v) layout(v, past_v, KH, S, Dv, present_v->data(), nullptr, 1.0);
      return;
    }
    const bool v_as_is = !z.three_d && !past_v;
    cuda_tensor vs = present_v ? *present_v : v_as_is ? v : pol.allocate_tensor(t, {B, KH, T, Dv}, ctx.stream());
    if (present_v || !v_as_is) layout(v, past_v, KH, S, Dv, vs.data(), nullptr, 1.0);
    if (T == 0) {  // no key: the product with an empty V is zeros (and qk is empty)
      pol.fill_zero(y, ctx.stream());
      return;
    }
    cuda_tensor qs = pol.allocate_tensor(t, {B, H, Sq, D}, ctx.stream());
    layout(q, nullptr, H, Sq, D, nullptr, qs.data(), sq);
    // scores [B, H, Sq, T] = Q K^T: a batch per key/value head, its query heads' rows one block
    cuda_tensor scores = pol.allocate_tensor(t, {B, H, Sq, T}, ctx.stream());
    if (D == 0) pol.fill_zero(scores, ctx.stream());
    else cuda_transformer::heads_product(ctx, st->lt, t, B * KH, group * Sq, T, D, true, qs.data(), ks.data(), scores.data());
    g_att g;
    g.rows = B * H * Sq;
    g.T = T;
    g.Sq = Sq;
    g.H = H;
    g.P = P;
    g.mode = a.mode;
    g.has_bias = mask || a.masks() || lens ? 1 : 0;
    g.causal = a.causal ? 1 : 0;
    g.has_past = past_k ? 1 : 0;
    g.running = sm == dtype::bf16 ? 1 : 0;
    g.left = a.left;
    g.right = a.right;
    g.cap = a.softcap;
    g.ms[3] = T;  // (no key past a mask that is not there)
    if (mask) {
      const auto ms = nn_rules::attention_mask_dims(mask->sizes(), z, ctx.node());
      for (std::size_t d = 0; d < 4; ++d) g.ms[d] = ms[d];
    }
    {
      const void* sp = scores.data();
      void* pp = scores.data();  // the probabilities in place
      void* qp = qk ? qk->data() : nullptr;
      const void* mp = mask ? mask->data() : nullptr;
      const void* lp = lens ? lens->data() : nullptr;
      void* args[] = {&sp, &pp, &qp, &mp, &lp, &g};
      pol.launch(kk.kernels[2], cuda_norm::row_blocks(g.rows), cuda_norm::row_threads(T), args, ctx.stream());
    }
    if (y.size() == 0) return;
    // Y [B, H, Sq, Dv] = P V, per key/value head as the scores
    if (!z.three_d) {
      cuda_transformer::heads_product(ctx, st->lt, t, B * KH, group * Sq, Dv, T, false, scores.data(), vs.data(), y.data());
      return;
    }
    cuda_tensor yh = pol.allocate_tensor(t, {B, H, Sq, Dv}, ctx.stream());
    cuda_transformer::heads_product(ctx, st->lt, t, B * KH, group * Sq, Dv, T, false, scores.data(), vs.data(), yh.data());
    void* yp = y.data();
    const void* xp = yh.data();
    long long bb = B, ss = Sq, nn = H, hh = Dv;
    void* args[] = {&yp, &xp, &bb, &ss, &nn, &hh};
    pol.launch(kk.kernels[1], pol.blocks_for(y.size()), 256, args, ctx.stream());
  };
}

// ---- TensorScatter --------------------------------------------------------------------------

/// `tscatter(y, u, write, outer, per_batch, L, S, inner, circular)`: y's [outer, L, inner] view
/// gets u [outer, S, inner] from each batch's write index (write may be null: 0), wrapping
/// around L when circular; a thread per update element, moved as an unsigned word of the
/// element's size `bytes`.
inline std::string tensor_scatter_source(std::size_t bytes) {
  const char* word = bytes == 1 ? "unsigned char" : bytes == 2 ? "unsigned short" : bytes == 4 ? "unsigned int" : "unsigned long long";
  return cuda_codegen::cuda_prelude() + "typedef " + word + R"( E;
extern "C" __global__ void tscatter(E* __restrict__ y, const E* __restrict__ u, const long long* __restrict__ write, long long outer,
    long long per_batch, long long L, long long S, long long inner, int circular) {
  const long long n = outer * S * inner;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long e = i % inner, k = (i / inner) % S, q = i / (inner * S);
    const long long w = write ? write[q / per_batch] : 0;
    const long long at = circular ? (w + k) % L : w + k;
    y[(q * L + at) * inner + e] = u[i];
  }
}
)";
}

inline fn make_tensor_scatter(const kernel_node& n) {
  const std::string mode = n.attr<std::string>("mode", "linear");
  if (mode != "linear" && mode != "circular") n.fail("mode must be linear or circular, not '" + mode + "'");
  const i64 axis_attr = n.attr<i64>("axis", -2);
  auto lib = std::make_shared<lazy_library>();
  return [circular = mode == "circular", axis_attr, lib](context& ctx) {
    const cuda_tensor& cache = ctx.input(0);
    const cuda_tensor& upd = ctx.input(1);
    const shape_rules::tensor_scatter_plan sp =
        shape_rules::tensor_scatter(cache.sizes(), upd.sizes(), cache.element_type() == upd.element_type(), axis_attr, ctx.node());
    std::vector<i64> write(static_cast<std::size_t>(sp.batch), 0);
    if (ctx.has_input(2)) write = cuda_detail::host_ints(ctx, 2);
    shape_rules::check_tensor_scatter_writes(write, sp, circular, ctx.node());
    auto& pol = ctx.policy();
    cuda_tensor& y = ctx.allocate_output(0, cache.element_type(), cache.sizes());
    if (y.size() == 0) return;
    const std::size_t es = size_of(cache.element_type());
    pol.copy_on_device(y.data(), cache.data(), static_cast<std::size_t>(cache.size()) * es, ctx.stream());
    const i64 count = sp.outer * sp.S * sp.inner;
    if (count == 0) return;
    const cuda_tensor wd = cuda_detail::upload_vector(ctx, dtype::int64, write);
    const auto& k = lib->get(pol, std::to_string(es), {"tscatter"}, [&] { return tensor_scatter_source(es); });
    void* yp = y.data();
    const void* up = upd.data();
    const void* wp = wd.data();
    long long outer = sp.outer, per = sp.per_batch ? sp.per_batch : 1, L = sp.L, S = sp.S, inner = sp.inner;
    int circ = circular ? 1 : 0;
    void* args[] = {&yp, &up, &wp, &outer, &per, &L, &S, &inner, &circ};
    pol.launch(k.kernels[0], pol.blocks_for(count), 256, args, ctx.stream());
  };
}

// ---- SwiGLU ---------------------------------------------------------------------------------

/// `swiglu(y, a, b, n, alpha)`: y = A * sigmoid(alpha * A) * B, each step rounded to T as the
/// CPU kernel (ONNX's reference) does.
inline std::string swiglu_source(dtype t) {
  return cuda_norm::head(t, t) + R"(extern "C" __global__ void swiglu(T* __restrict__ y, const T* __restrict__ a, const T* __restrict__ b, long long n,
    double alpha) {
  const W al = g_rt((W)alpha);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const W x = (W)g_load(a, i);
    const W e = g_rt(g_exp(g_rt(-al * x)));
    const W sig = g_rt((W)1 / g_rt((W)1 + e));
    g_store(y, i, g_rt(x * sig) * (W)g_load(b, i));
  }
}
)";
}

inline fn make_swiglu(const kernel_node& n) {
  const double alpha = n.attr<double>("alpha", 1.0);
  auto lib = std::make_shared<lazy_library>();
  return [alpha, lib](context& ctx) {
    const cuda_tensor &a = ctx.input(0), &b = ctx.input(1);
    if (a.sizes() != b.sizes() || a.element_type() != b.element_type())
      ctx.fail("A " + std::string(to_string(a.element_type())) + a.shape().to_string() + " and B " + std::string(to_string(b.element_type())) +
               b.shape().to_string() + " must have the same shape and element type (no broadcasting)");
    cuda_nn::check_float(ctx, a, "A");
    const dtype t = a.element_type();
    cuda_tensor& y = ctx.allocate_output(0, t, a.sizes());
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, std::string(to_string(t)), {"swiglu"}, [&] { return swiglu_source(t); });
    void* yp = y.data();
    const void* ap = a.data();
    const void* bp = b.data();
    long long nn = y.size();
    double al = alpha;
    void* args[] = {&yp, &ap, &bp, &nn, &al};
    pol.launch(k.kernels[0], pol.blocks_for(nn), 256, args, ctx.stream());
  };
}

/// Every generated source of this family: (name, source).
inline std::vector<std::pair<std::string, std::string>> attention_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : cuda_nn::float_types()) {
    const std::string ts(to_string(t));
    r.emplace_back("attention_" + ts, attention_source(t, t, dtype::bool_));
    r.emplace_back("attention_" + ts + "_mask_" + ts, attention_source(t, t, t));
    r.emplace_back("swiglu_" + ts, swiglu_source(t));
  }
  r.emplace_back("attention_f16_softmax_f32_mask_i64", attention_source(dtype::f16, dtype::f32, dtype::int64));
  r.emplace_back("attention_f32_softmax_bf16_mask_u8", attention_source(dtype::f32, dtype::bf16, dtype::uint8));
  r.emplace_back("attention_f32_softmax_f64", attention_source(dtype::f32, dtype::f64, dtype::bool_));
  for (std::size_t bytes : {1, 2, 4, 8}) r.emplace_back("tensor_scatter_" + std::to_string(bytes), tensor_scatter_source(bytes));
  return r;
}

}  // namespace cuda_attention

/// Registers Attention (23), TensorScatter (24) and SwiGLU (28).
inline void register_cuda_attention(kernel_registry<cuda>& r) {
  using namespace cuda_attention;
  const auto ft = cuda_nn::float_types();
  // Attention: V of Q's type, a mask of a type the generated kernels hold
  r.add({.domain = "", .op = "Attention", .since_version = 23, .dtypes = ft, .make = make_attention, .applies = [](const kernel_query& q) {
           if (q.inputs.size() < 3 || q.inputs[2] != q.inputs[0]) return false;
           return q.inputs.size() < 4 || q.inputs[3] == dtype::undefined || mask_type_ok(q.inputs[3]);
         }});
  r.add({.domain = "", .op = "TensorScatter", .since_version = 24, .dtypes = cuda_array_detail::movable_types(), .make = make_tensor_scatter});
  r.add({.domain = "", .op = "SwiGLU", .since_version = 28, .dtypes = ft, .make = make_swiglu});
}

}  // namespace gpass::exec
