// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file qlinear.hpp
/// CUDA kernels of ONNX's integer products: MatMulInteger (int32 accumulators of
/// (a - a_zero_point)(b - b_zero_point)) and QLinearMatMul (those accumulators requantized:
/// saturate(round_half_even(acc * a_scale * b_scale / y_scale) + y_zero_point)), uint8 and
/// int8 operands in any mix, MatMul's batch broadcasting; and the integer convolutions
/// ConvInteger and QLinearConv (any number of spatial dimensions up to the CPU's 8, groups,
/// strides, dilations, pads and auto_pad, QLinearConv's int32 bias; a thread per output
/// element). As the CPU kernels: zero points per
/// tensor or per row of a / per column of b, scales per tensor or per row / column, the scale
/// product and quotient in float in the CPU's order, NaN to the zero point; the sums are exact
/// integers (two's complement where they wrap), so the outputs are the CPU's bit for bit.
///
/// The zero points and scales are read on the host (from the plan's constants where they are
/// constants, as in quantized models, else copied back) and checked as the CPU checks them; a
/// generated kernel of 16 x 16 tiles does the product and the requantization.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/tensor.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/linalg.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/nn_rules.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec {

namespace cuda_qlinear {

using cuda_detail::context;
using cuda_detail::fn;
using i64 = std::int64_t;

/// The head of an integer product's source: the operand types TA and TB, the output type TY,
/// and `g_out(acc, scale, zero_point)`: the int32 accumulator itself (an int32 output), or
/// saturate(round_half_even(acc * scale) + zero_point) in float (NaN: the zero point), as the
/// CPU's `requantize`.
inline std::string int_product_head(dtype a, dtype b, dtype y) {
  std::string s = "// gpass generated\n";
  s += "typedef " + std::string(cuda_codegen::storage_type(a)) + " TA;\ntypedef " + std::string(cuda_codegen::storage_type(b)) +
       " TB;\ntypedef " + std::string(cuda_codegen::storage_type(y)) + " TY;\n";
  if (y == dtype::int32)
    return s + "__device__ __forceinline__ TY g_out(unsigned int acc, float, int) { return (TY)acc; }\n";
  const char* lo = y == dtype::uint8 ? "0.0f" : "-128.0f";
  const char* hi = y == dtype::uint8 ? "255.0f" : "127.0f";
  s += "__device__ __forceinline__ TY g_out(unsigned int acc, float scale, int zp) {\n";
  s += "  const float v = (float)(int)acc * scale;\n  float r = v != v ? (float)zp : rintf(v) + (float)zp;\n";
  s += std::string("  r = r < ") + lo + " ? " + lo + " : r > " + hi + " ? " + hi + " : r;\n  return (TY)r;\n}\n";
  return s;
}

/// `qmm`: y[batch] = a[off[2 batch]] x b[off[2 batch + 1]] (M x K times K x N, row-major) with
/// the zero points subtracted; `quant` 0 writes the int32 accumulators, 1 requantizes them to
/// TY (uint8 / int8).
inline std::string qmm_source(dtype a, dtype b, dtype y) {
  std::string s = int_product_head(a, b, y);
  s += R"(#define G_TILE 16
extern "C" __global__ void qmm(const TA* __restrict__ a, const TB* __restrict__ b, TY* __restrict__ y, const long long* __restrict__ off,
    const int* __restrict__ azp, int azn, const int* __restrict__ bzp, int bzn, const float* __restrict__ as, int asn,
    const float* __restrict__ bs, int bsn, float ysc, int yzp, long long M, long long N, long long K, long long batches) {
  __shared__ int sa[G_TILE][G_TILE + 1], sb[G_TILE][G_TILE + 1];
  const long long col = blockIdx.x * (long long)G_TILE + threadIdx.x;
  for (long long bz = blockIdx.z; bz < batches; bz += gridDim.z)
    for (long long r0 = blockIdx.y * (long long)G_TILE; r0 < M; r0 += (long long)gridDim.y * G_TILE) {
      const long long row = r0 + threadIdx.y;
      const TA* ab = a + off[2 * bz] * M * K;
      const TB* bb = b + off[2 * bz + 1] * K * N;
      unsigned int acc = 0;
      for (long long k0 = 0; k0 < K; k0 += G_TILE) {
        const long long ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        sa[threadIdx.y][threadIdx.x] = row < M && ka < K ? (int)ab[row * K + ka] - azp[azn > 1 ? row : 0] : 0;
        sb[threadIdx.y][threadIdx.x] = kb < K && col < N ? (int)bb[kb * N + col] - bzp[bzn > 1 ? col : 0] : 0;
        __syncthreads();
        for (int k = 0; k < G_TILE; ++k) acc += (unsigned int)(sa[threadIdx.y][k] * sb[k][threadIdx.x]);
        __syncthreads();
      }
      if (row < M && col < N) {
        const long long at = (bz * M + row) * N + col;
)";
  s += "        y[at] = g_out(acc, as[asn > 1 ? row : 0] * bs[bsn > 1 ? col : 0] / ysc, yzp);\n";
  s += R"(      }
    }
}
)";
  return s;
}

/// `qconv`: the integer convolution over `r` spatial dimensions, a thread per output element
/// [N, M, out...]: the sum over its group's channels and the window's taps inside the input of
/// (x - x_zero_point)(w - w_zero_point[m]) (taps in the padding add 0: the zero point), plus
/// the int32 bias, wrapping in 32 bits as the CPU's; `quant` requantizes with x_scale *
/// w_scale[m] / y_scale.
inline std::string qconv_source(dtype x, dtype w, dtype y, int r) {
  std::string s = int_product_head(x, w, y) + "#define G_R " + std::to_string(r) + "\n";
  s += R"(struct g_qconv { long long N, C, M, G; long long in[G_R], k[G_R], s[G_R], d[G_R], pb[G_R], out[G_R]; };
extern "C" __global__ void qconv(const TA* __restrict__ x, const TB* __restrict__ w, const int* __restrict__ bias, TY* __restrict__ y,
    int xzp, const int* __restrict__ wzp, int wzn, float xs, const float* __restrict__ ws, int wsn, float ysc, int yzp, g_qconv g) {
  long long P = 1, K = 1, I = 1;
  for (int d = 0; d < G_R; ++d) P *= g.out[d], K *= g.k[d], I *= g.in[d];
  const long long Mg = g.M / g.G, Cg = g.C / g.G, total = g.N * g.M * P;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
    const long long p = e % P, m = (e / P) % g.M, n = e / (P * g.M), grp = m / Mg;
    long long o[G_R];
    for (long long rest = p, d = G_R - 1; d >= 0; --d) o[d] = rest % g.out[d], rest /= g.out[d];
    const int wz = wzp[wzn > 1 ? m : 0];
    unsigned int acc = bias ? (unsigned int)bias[m] : 0u;
    for (long long c = 0; c < Cg; ++c) {
      const TA* xc = x + (n * g.C + grp * Cg + c) * I;
      const TB* wc = w + (m * Cg + c) * K;
      for (long long t = 0; t < K; ++t) {
        long long at = 0, rest = t;
        bool inside = true;
        long long kk[G_R];
        for (int d = G_R - 1; d >= 0; --d) kk[d] = rest % g.k[d], rest /= g.k[d];
        for (int d = 0; d < G_R; ++d) {
          const long long i = o[d] * g.s[d] - g.pb[d] + kk[d] * g.d[d];
          if (i < 0 || i >= g.in[d]) { inside = false; break; }
          at = at * g.in[d] + i;
        }
        if (inside) acc += (unsigned int)(((int)xc[at] - xzp) * ((int)wc[t] - wz));
      }
    }
)";
  s += "    y[e] = g_out(acc, xs * ws[wsn > 1 ? m : 0] / ysc, yzp);\n";
  s += "  }\n}\n";
  return s;
}

/// QLinearMatMul's and QLinearConv's requantization inputs read on the host: the scales of
/// the two operands (inputs 1 and 4), y_scale (6) and y_zero_point (7); 1, 1, 1 and 0 for the
/// integer ops.
struct requant_values {
  std::vector<float> s1{1.f}, s2{1.f}, ysc{1.f};
  std::vector<std::int32_t> yzp{0};
};
inline requant_values read_requant(context& ctx) {
  requant_values q;
  q.s1 = cuda_detail::host_values_as<float>(ctx, 1, 1.f);
  q.s2 = cuda_detail::host_values_as<float>(ctx, 4, 1.f);
  q.ysc = cuda_detail::host_values_as<float>(ctx, 6, 1.f);
  q.yzp = cuda_detail::host_values_as<std::int32_t>(ctx, 7, 0);
  return q;
}
/// The requantized output's type: y_zero_point's (the first operand's without one), 8-bit.
inline dtype requant_type(const context& ctx, dtype operand) {
  const dtype yt = ctx.has_input(7) ? ctx.input(7).element_type() : operand;
  if (yt != dtype::uint8 && yt != dtype::int8) ctx.fail("y_zero_point must be int8 or uint8");
  return yt;
}

/// MatMul's shapes of a x b (NumPy broadcasting of the batch dims) with each output batch's
/// matrix in a and in b.
struct product_shape {
  i64 M = 0, N = 0, K = 0;
  std::vector<i64> out;
  std::vector<i64> offsets;  ///< per output batch: a's matrix, b's matrix
};
inline product_shape product_shapes(const context& ctx, const std::vector<i64>& sa, const std::vector<i64>& sb) {
  const cuda_linalg::matmul_shape m = cuda_linalg::matmul_shapes(ctx, sa, sb);
  product_shape r{.M = m.M, .N = m.N, .K = m.K, .out = m.out};
  for (const auto& [oa, ob] : cuda_linalg::batch_offsets(m.batch, m.ba, m.bb)) r.offsets.insert(r.offsets.end(), {oa, ob});
  return r;
}

/// MatMulInteger(A, B[, a_zero_point, b_zero_point]) and QLinearMatMul(a, a_scale,
/// a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point) (`quant`).
inline fn make_qmm(bool quant) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [quant, lib](context& ctx) {
    const auto azp = cuda_detail::host_values_as<std::int32_t>(ctx, 2, 0), bzp = cuda_detail::host_values_as<std::int32_t>(ctx, quant ? 5 : 3, 0);
    const cuda_tensor& a = ctx.input(0);
    const cuda_tensor& b = ctx.input(quant ? 3 : 1);
    const product_shape s = product_shapes(ctx, a.sizes(), b.sizes());
    if (azp.size() > 1 && static_cast<i64>(azp.size()) != s.M) ctx.fail("a zero point must be a scalar or have M values");
    if (bzp.size() > 1 && static_cast<i64>(bzp.size()) != s.N) ctx.fail("b zero point must be a scalar or have N values");
    for (const cuda_tensor* t : {&a, &b})
      if (t->element_type() != dtype::uint8 && t->element_type() != dtype::int8)
        ctx.fail("expected an int8 or uint8 tensor, got " + std::string(to_string(t->element_type())));
    requant_values q;
    if (quant) {
      q = read_requant(ctx);
      if (q.ysc.size() != 1 || q.yzp.size() != 1) ctx.fail("y_scale and y_zero_point must be scalars");
      if (q.s1.size() > 1 && static_cast<i64>(q.s1.size()) != s.M) ctx.fail("a_scale must be a scalar or have M values");
      if (q.s2.size() > 1 && static_cast<i64>(q.s2.size()) != s.N) ctx.fail("b_scale must be a scalar or have N values");
    }
    const dtype yt = quant ? requant_type(ctx, a.element_type()) : dtype::int32;
    const std::vector<float>&as = q.s1, &bs = q.s2, &ysc = q.ysc;
    const std::vector<std::int32_t>& yzp = q.yzp;
    cuda_tensor& y = ctx.allocate_output(0, yt, s.out);
    if (y.size() == 0) return;
    const i64 batches = static_cast<i64>(s.offsets.size() / 2);
    auto& pol = ctx.policy();
    const cuda_tensor doff = cuda_detail::upload_vector(ctx, dtype::int64, s.offsets);
    const cuda_tensor dazp = cuda_detail::upload_vector(ctx, dtype::int32, azp), dbzp = cuda_detail::upload_vector(ctx, dtype::int32, bzp);
    const cuda_tensor das = cuda_detail::upload_vector(ctx, dtype::f32, as), dbs = cuda_detail::upload_vector(ctx, dtype::f32, bs);
    const std::string key = std::string(to_string(a.element_type())) + "_" + std::string(to_string(b.element_type())) + "_" +
                            std::string(to_string(yt));
    const auto& k = lib->get(pol, key, {"qmm"}, [&] { return qmm_source(a.element_type(), b.element_type(), yt); });
    const void* ap = a.data();
    const void* bp = b.data();
    void* yp = y.data();
    const void* op = doff.data();
    const void* azpp = dazp.data();
    const void* bzpp = dbzp.data();
    const void* asp = das.data();
    const void* bsp = dbs.data();
    int azn = static_cast<int>(azp.size()), bzn = static_cast<int>(bzp.size()), asn = static_cast<int>(as.size()),
        bsn = static_cast<int>(bs.size()), yz = yzp[0];
    float ys = ysc[0];
    long long M = s.M, N = s.N, K = s.K, nb = batches;
    void* args[] = {&ap, &bp, &yp, &op, &azpp, &azn, &bzpp, &bzn, &asp, &asn, &bsp, &bsn, &ys, &yz, &M, &N, &K, &nb};
    const dim3 grid(static_cast<unsigned>((N + 15) / 16), static_cast<unsigned>(std::min<i64>((M + 15) / 16, 65535)),
                    static_cast<unsigned>(std::min<i64>(batches, 65535)));
    pol.launch(k.kernels[0], grid, dim3(16, 16), args, ctx.stream());
  };
}

/// ConvInteger(x, w[, x_zero_point, w_zero_point]) and QLinearConv(x, x_scale, x_zero_point,
/// w, w_scale, w_zero_point, y_scale, y_zero_point[, B]) (`quant`): the checks, their order and
/// messages the CPU kernels'.
inline fn make_qconv(const kernel_node& n, bool quant) {
  const shape_rules::window_attrs wa = shape_rules::window_attrs::read(n);
  const i64 G = n.attr<i64>("group", 1);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [wa, G, quant, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& w = ctx.input(quant ? 3 : 1);
    const auto& xs = x.sizes();
    const auto& wsz = w.sizes();
    nn_rules::check_conv_shapes(xs, wsz, G, false, ctx.node());
    const std::vector<i64> kernel = nn_rules::kernel_of(wa, wsz, ctx.node());
    const shape_rules::window_geometry g = shape_rules::resolve_window(wa, {xs.begin() + 2, xs.end()}, kernel, ctx.node());
    const i64 N = xs[0], C = xs[1], M = wsz[0];
    std::vector<i64> ys{N, M};
    ys.insert(ys.end(), g.out.begin(), g.out.end());
    const auto xzp = cuda_detail::host_values_as<std::int32_t>(ctx, 2, 0), wzp = cuda_detail::host_values_as<std::int32_t>(ctx, quant ? 5 : 3, 0);
    if (xzp.size() != 1) ctx.fail("x zero point must be a scalar");
    if (wzp.size() > 1 && static_cast<i64>(wzp.size()) != M) ctx.fail("w zero point must be a scalar or have M values");
    for (const cuda_tensor* t : {&x, &w})
      if (t->element_type() != dtype::uint8 && t->element_type() != dtype::int8)
        ctx.fail("expected an int8 or uint8 tensor, got " + std::string(to_string(t->element_type())));
    const cuda_tensor* bias = nullptr;
    if (quant && ctx.has_input(8)) {
      bias = &ctx.input(8);
      if (bias->element_type() != dtype::int32 || bias->size() != M) ctx.fail("bias must be int32 with M values");
    }
    requant_values q;
    if (quant) {
      q = read_requant(ctx);
      if (q.s1.size() != 1 || q.ysc.size() != 1 || q.yzp.size() != 1) ctx.fail("x_scale, y_scale and y_zero_point must be scalars");
      if (q.s2.size() > 1 && static_cast<i64>(q.s2.size()) != M) ctx.fail("w_scale must be a scalar or have M values");
    }
    const dtype yt = quant ? requant_type(ctx, x.element_type()) : dtype::int32;
    const std::vector<float>&xsc = q.s1, &wsc = q.s2, &ysc = q.ysc;
    const std::vector<std::int32_t>& yzp = q.yzp;
    cuda_tensor& y = ctx.allocate_output(0, yt, ys);
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const cuda_tensor dwzp = cuda_detail::upload_vector(ctx, dtype::int32, wzp), dws = cuda_detail::upload_vector(ctx, dtype::f32, wsc);
    const int r = static_cast<int>(xs.size() - 2);
    // g_qconv: N, C, M, G, then in, k, s, d, pb, out (r values each)
    std::vector<long long> words{N, C, M, G};
    for (const auto* v : {&g.in, &g.kernel, &g.strides, &g.dilations, &g.pad_begin, &g.out}) words.insert(words.end(), v->begin(), v->end());
    const std::string key = std::string(to_string(x.element_type())) + "_" + std::string(to_string(w.element_type())) + "_" +
                            std::string(to_string(yt)) + "_" + std::to_string(r);
    const auto& k = lib->get(pol, key, {"qconv"}, [&] { return qconv_source(x.element_type(), w.element_type(), yt, r); });
    const void* xp = x.data();
    const void* wp = w.data();
    const void* bp = bias ? bias->data() : nullptr;
    void* yp = y.data();
    int xz = xzp[0], wzn = static_cast<int>(wzp.size()), wsn = static_cast<int>(wsc.size()), yz = yzp[0];
    float xs0 = xsc[0], ys0 = ysc[0];
    const void* wzpp = dwzp.data();
    const void* wsp = dws.data();
    void* args[] = {&xp, &wp, &bp, &yp, &xz, &wzpp, &wzn, &xs0, &wsp, &wsn, &ys0, &yz, words.data()};
    pol.launch(k.kernels[0], pol.blocks_for(y.size()), 256, args, ctx.stream());
  };
}

}  // namespace cuda_qlinear

/// Every source qlinear.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> qlinear_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype a : {dtype::uint8, dtype::int8})
    for (dtype y : {dtype::int32, dtype::uint8, dtype::int8})
      r.emplace_back("qmm_" + std::string(to_string(a)) + "_" + std::string(to_string(y)), cuda_qlinear::qmm_source(a, dtype::int8, y));
  for (int rank : {1, 2, 3})
    for (dtype y : {dtype::int32, dtype::uint8})
      r.emplace_back("qconv_" + std::to_string(rank) + "_" + std::string(to_string(y)), cuda_qlinear::qconv_source(dtype::uint8, dtype::int8, y, rank));
  return r;
}

/// Registers qlinear.hpp's kernels.
inline void register_cuda_qlinear(kernel_registry<cuda>& r) {
  const std::vector<dtype> q8{dtype::uint8, dtype::int8};
  r.add({.op = "MatMulInteger", .since_version = 10, .dtypes = q8, .make = [](const kernel_node&) { return cuda_qlinear::make_qmm(false); }});
  r.add({.op = "QLinearMatMul", .since_version = 10, .dtypes = q8, .make = [](const kernel_node&) { return cuda_qlinear::make_qmm(true); }});
  r.add({.op = "ConvInteger", .since_version = 10, .dtypes = q8, .make = [](const kernel_node& n) { return cuda_qlinear::make_qconv(n, false); }});
  r.add({.op = "QLinearConv", .since_version = 10, .dtypes = q8, .make = [](const kernel_node& n) { return cuda_qlinear::make_qconv(n, true); }});
}

}  // namespace gpass::exec
