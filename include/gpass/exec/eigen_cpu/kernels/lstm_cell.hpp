// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file lstm_cell.hpp
/// The default LSTM cell (sigmoid gates, tanh cell and output, no peepholes, no clip) in f32,
/// one batch row at a time, vectorized for the processor the GEMM engine runs on (AVX-512 16
/// lanes, AVX2 8 lanes, portable Eigen arrays otherwise; `GPASS_CPU_ISA` caps both alike).
/// The projections of a step arrive as a row of 4H pre-activations (ONNX's gate order i, o, f,
/// c; a cell of units [u0, u1) reads them at u0 + q * H); with the bias b [4H] added:
///   i, o, f = sigmoid(. + b),  g = tanh(. + b),  c = f * c + i * g,  h = o * tanh(c).
/// Private (`gpass::exec::cpu_detail`).
///
/// The x86 forms compute exp as 2^n * e^r (n = round(x / ln 2), |r| <= ln 2 / 2, e^r = 1 + r +
/// r^2 P(r) by Cephes' degree-5 polynomial, 1-2 ulp), sigmoid(x) = 1 / (1 + exp(-x)) and
/// tanh(|x|) = -m / (2 + m) with m = expm1(-2|x|) = 2^n (e^r - 1) + (2^n - 1) (e^r - 1 = r + r^2
/// P(r) keeps small arguments exact: no cancellation near 0; x's sign put back), each division
/// a reciprocal estimate and one Newton step. Arguments are clamped where exp would overflow
/// (sigmoid and tanh are flat there to within f32's rounding); NaN propagates. The test
/// `exec.lstm_cell` bounds the difference from double precision over the whole range.
///
/// A row runs in two passes over its units: the gates and c (o parked in h), then h = o *
/// tanh(c). In one pass each unit block ended on a chain (c, then tanh(c), then h) whose
/// latency the next block's independent gate work could not hide; in two the second pass's
/// blocks are independent of each other. Measured (256 rows of 128 units, the benchmark LSTM's
/// layer at batch 8, AVX-512, best of 3000 alternating runs): 91.3 us -> 74.0 with the two
/// passes, 67.7 with the expm1 tanh as well (its former form computed a small-argument
/// polynomial and 1 - 2 / (e^2|x| + 1) both and picked one: 81.8 with the new tanh alone).

#include <cmath>
#include <cstdint>
#include <string_view>

#include <Eigen/Core>

#include <gpass/exec/eigen_cpu/kernels/sgemm.hpp>

namespace gpass::exec::cpu_detail::lstm_cell {

using i64 = std::int64_t;

/// The cell for `H` units of one row, the gates `gs` apart (the row's hidden size), any
/// processor: Eigen arrays.
inline void row_portable(const float* gates, const float* bias, float* c, float* h, i64 H, i64 gs) {
  using arr = Eigen::Array<float, Eigen::Dynamic, 1>;
  using cmap = Eigen::Map<const arr>;
  using map = Eigen::Map<arr>;
  const arr i = (1.0f + (-(cmap(gates, H) + cmap(bias, H))).exp()).inverse();
  const arr o = (1.0f + (-(cmap(gates + gs, H) + cmap(bias + gs, H))).exp()).inverse();
  const arr f = (1.0f + (-(cmap(gates + 2 * gs, H) + cmap(bias + 2 * gs, H))).exp()).inverse();
  map cv(c, H), hv(h, H);
  cv = f * cv + i * (cmap(gates + 3 * gs, H) + cmap(bias + 3 * gs, H)).tanh();
  hv = o * cv.tanh();
}

// The constants of the x86 forms (Cephes' expf and tanhf).
inline constexpr float exp_hi = 88.0f;   // exp(88) = 1.65e38; 2^n stays a normal number
inline constexpr float exp_lo = -87.0f;  // exp(-87) = 1.6e-38
inline constexpr float log2e = 1.44269504088896341f;
inline constexpr float ln2_hi = 0.693359375f;
inline constexpr float ln2_lo = -2.12194440e-4f;
inline constexpr float ep[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
inline constexpr float tanh_hi = 9.0f;  // tanh(9) = 1 - 3e-8 rounds to 1 in f32; n stays in [-26, 0]

#if GPASS_SGEMM_X86
// The two forms below are alike in shape on purpose (as nchwc's kernel sets): each maps the
// same steps onto its own registers under its own target attribute.
namespace avx512 {
#define GPASS_CELL_FN __attribute__((target("avx512f,avx2,fma"), always_inline)) inline
using vec = __m512;
// (masked forms with every lane set where GCC 12 warns that the plain ones read an undefined vector)
inline constexpr __mmask16 all = 0xFFFF;
GPASS_CELL_FN vec set1(float v) { return _mm512_set1_ps(v); }
/// e^x (NaN stays NaN: the clamp's bound is the first operand of max / min, which return
/// their second operand when one is NaN).
GPASS_CELL_FN vec vexp(vec x) {
  x = _mm512_maskz_min_ps(all, set1(exp_hi), _mm512_maskz_max_ps(all, set1(exp_lo), x));
  const vec n = _mm512_maskz_roundscale_ps(all, _mm512_mul_ps(x, set1(log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  vec r = _mm512_fnmadd_ps(n, set1(ln2_hi), x);
  r = _mm512_fnmadd_ps(n, set1(ln2_lo), r);
  vec p = set1(ep[0]);
  for (int k = 1; k < 6; ++k) p = _mm512_fmadd_ps(p, r, set1(ep[k]));
  const vec r2 = _mm512_mul_ps(r, r);
  const vec e = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, set1(1.0f)));
  return _mm512_maskz_scalef_ps(all, e, n);
}
/// 1 / d: the 14-bit estimate and one Newton step (about 2^-27 relative; a NaN stays NaN)
GPASS_CELL_FN vec vrcp(vec d) {
  const vec y = _mm512_maskz_rcp14_ps(all, d);
  return _mm512_mul_ps(y, _mm512_fnmadd_ps(d, y, set1(2.0f)));
}
GPASS_CELL_FN vec vsigmoid(vec x) { return vrcp(_mm512_add_ps(set1(1.0f), vexp(_mm512_sub_ps(_mm512_setzero_ps(), x)))); }
/// tanh(x): -m / (2 + m) for m = expm1(-2|x|), x's sign put back (NaN stays NaN: the clamp's
/// bound is min's first operand)
GPASS_CELL_FN vec vtanh(vec x) {
  const vec sign = _mm512_castsi512_ps(_mm512_maskz_and_epi32(all, _mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
  const vec a = _mm512_castsi512_ps(_mm512_maskz_and_epi32(all, _mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
  const vec y = _mm512_mul_ps(_mm512_maskz_min_ps(all, set1(tanh_hi), a), set1(-2.0f));  // -2|x|, in [-18, 0]
  const vec n = _mm512_maskz_roundscale_ps(all, _mm512_mul_ps(y, set1(log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  vec r = _mm512_fnmadd_ps(n, set1(ln2_hi), y);
  r = _mm512_fnmadd_ps(n, set1(ln2_lo), r);
  vec p = set1(ep[0]);
  for (int k = 1; k < 6; ++k) p = _mm512_fmadd_ps(p, r, set1(ep[k]));
  const vec em = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);                       // e^r - 1
  const vec t = _mm512_maskz_scalef_ps(all, set1(1.0f), n);                         // 2^n, n in [-26, 0]
  const vec m = _mm512_fmadd_ps(t, em, _mm512_sub_ps(t, set1(1.0f)));              // e^y - 1 (t - 1 exact)
  const vec th = _mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), m), vrcp(_mm512_add_ps(m, set1(2.0f))));
  return _mm512_castsi512_ps(_mm512_maskz_or_epi32(all, _mm512_castps_si512(th), _mm512_castps_si512(sign)));
}
GPASS_CELL_FN __mmask16 lanes(i64 H, i64 j) { return H - j >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (H - j)) - 1u); }
GPASS_CELL_FN vec gate(const float* gates, const float* bias, i64 at, __mmask16 m) {
  return _mm512_add_ps(_mm512_maskz_loadu_ps(m, gates + at), _mm512_maskz_loadu_ps(m, bias + at));
}
/// The two passes (see the file's note): c and o (in h), then h = o * tanh(c).
__attribute__((target("avx512f,avx2,fma"))) inline void row(const float* gates, const float* bias, float* c, float* h, i64 H, i64 gs) {
  for (i64 j = 0; j < H; j += 16) {
    const __mmask16 m = lanes(H, j);
    const vec i = vsigmoid(gate(gates, bias, j, m));
    const vec o = vsigmoid(gate(gates, bias, gs + j, m));
    const vec f = vsigmoid(gate(gates, bias, 2 * gs + j, m));
    const vec g = vtanh(gate(gates, bias, 3 * gs + j, m));
    _mm512_mask_storeu_ps(c + j, m, _mm512_fmadd_ps(f, _mm512_maskz_loadu_ps(m, c + j), _mm512_mul_ps(i, g)));
    _mm512_mask_storeu_ps(h + j, m, o);
  }
  for (i64 j = 0; j < H; j += 16) {
    const __mmask16 m = lanes(H, j);
    _mm512_mask_storeu_ps(h + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, h + j), vtanh(_mm512_maskz_loadu_ps(m, c + j))));
  }
}
#undef GPASS_CELL_FN
}  // namespace avx512

namespace avx2 {
#define GPASS_CELL_FN __attribute__((target("avx2,fma"), always_inline)) inline
using vec = __m256;
GPASS_CELL_FN vec set1(float v) { return _mm256_set1_ps(v); }
GPASS_CELL_FN vec vexp(vec x) {
  x = _mm256_min_ps(set1(exp_hi), _mm256_max_ps(set1(exp_lo), x));
  const vec n = _mm256_round_ps(_mm256_mul_ps(x, set1(log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  vec r = _mm256_fnmadd_ps(n, set1(ln2_hi), x);
  r = _mm256_fnmadd_ps(n, set1(ln2_lo), r);
  vec p = set1(ep[0]);
  for (int k = 1; k < 6; ++k) p = _mm256_fmadd_ps(p, r, set1(ep[k]));
  const vec r2 = _mm256_mul_ps(r, r);
  const vec e = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, set1(1.0f)));
  // 2^n from its exponent bits: n in [-126, 127] after the clamp (a NaN's garbage n is
  // harmless: e is NaN)
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(e, _mm256_castsi256_ps(bits));
}
/// 1 / d: the 12-bit estimate and one Newton step (about 2^-22 relative; a NaN stays NaN)
GPASS_CELL_FN vec vrcp(vec d) {
  const vec y = _mm256_rcp_ps(d);
  return _mm256_mul_ps(y, _mm256_fnmadd_ps(d, y, set1(2.0f)));
}
GPASS_CELL_FN vec vsigmoid(vec x) { return vrcp(_mm256_add_ps(set1(1.0f), vexp(_mm256_sub_ps(_mm256_setzero_ps(), x)))); }
GPASS_CELL_FN vec vtanh(vec x) {
  const vec sign = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u))));
  const vec a = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
  const vec y = _mm256_mul_ps(_mm256_min_ps(set1(tanh_hi), a), set1(-2.0f));
  const vec n = _mm256_round_ps(_mm256_mul_ps(y, set1(log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  vec r = _mm256_fnmadd_ps(n, set1(ln2_hi), y);
  r = _mm256_fnmadd_ps(n, set1(ln2_lo), r);
  vec p = set1(ep[0]);
  for (int k = 1; k < 6; ++k) p = _mm256_fmadd_ps(p, r, set1(ep[k]));
  const vec em = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
  // 2^n from its exponent bits (a NaN's garbage n is harmless: em is NaN)
  const vec t = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  const vec m = _mm256_fmadd_ps(t, em, _mm256_sub_ps(t, set1(1.0f)));
  const vec th = _mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), m), vrcp(_mm256_add_ps(m, set1(2.0f))));
  return _mm256_or_ps(th, sign);
}
GPASS_CELL_FN vec gate(const float* gates, const float* bias, i64 at) {
  return _mm256_add_ps(_mm256_loadu_ps(gates + at), _mm256_loadu_ps(bias + at));
}
/// The two passes over the whole 8-unit blocks (see the file's note), then the last H % 8
/// units through a padded copy.
__attribute__((target("avx2,fma"))) inline void row(const float* gates, const float* bias, float* c, float* h, i64 H, i64 gs) {
  const i64 whole = H / 8 * 8;
  for (i64 j = 0; j < whole; j += 8) {
    const vec i = vsigmoid(gate(gates, bias, j));
    const vec o = vsigmoid(gate(gates, bias, gs + j));
    const vec f = vsigmoid(gate(gates, bias, 2 * gs + j));
    const vec g = vtanh(gate(gates, bias, 3 * gs + j));
    _mm256_storeu_ps(c + j, _mm256_fmadd_ps(f, _mm256_loadu_ps(c + j), _mm256_mul_ps(i, g)));
    _mm256_storeu_ps(h + j, o);
  }
  for (i64 j = 0; j < whole; j += 8) _mm256_storeu_ps(h + j, _mm256_mul_ps(_mm256_loadu_ps(h + j), vtanh(_mm256_loadu_ps(c + j))));
  if (whole < H) {
    alignas(32) float gt[4][8] = {}, bt[4][8] = {}, ct[8] = {}, ht[8] = {};
    const i64 n = H - whole;
    for (int q = 0; q < 4; ++q)
      for (i64 k = 0; k < n; ++k) {
        gt[q][k] = gates[q * gs + whole + k];
        bt[q][k] = bias[q * gs + whole + k];
      }
    for (i64 k = 0; k < n; ++k) ct[k] = c[whole + k];
    const vec i = vsigmoid(_mm256_add_ps(_mm256_load_ps(gt[0]), _mm256_load_ps(bt[0])));
    const vec o = vsigmoid(_mm256_add_ps(_mm256_load_ps(gt[1]), _mm256_load_ps(bt[1])));
    const vec f = vsigmoid(_mm256_add_ps(_mm256_load_ps(gt[2]), _mm256_load_ps(bt[2])));
    const vec g = vtanh(_mm256_add_ps(_mm256_load_ps(gt[3]), _mm256_load_ps(bt[3])));
    const vec cn = _mm256_fmadd_ps(f, _mm256_load_ps(ct), _mm256_mul_ps(i, g));
    _mm256_store_ps(ct, cn);
    _mm256_store_ps(ht, _mm256_mul_ps(o, vtanh(cn)));
    for (i64 k = 0; k < n; ++k) {
      c[whole + k] = ct[k];
      h[whole + k] = ht[k];
    }
  }
}
#undef GPASS_CELL_FN
}  // namespace avx2
#endif

/// The cell's form for this process: that of the GEMM engine's instruction set, also in a
/// build for AVX2, where Eigen's own 8-lane arrays are slower (256 rows of 128 units, -O3
/// -march=x86-64-v3: Eigen 127 us, the AVX2 form 98, the AVX-512 form 68).
using row_fn = void (*)(const float*, const float*, float*, float*, i64, i64);
inline row_fn row_for_this_cpu() {
#if GPASS_SGEMM_X86
  const std::string_view isa = sgemm::kernel().name;
  if (isa == "avx512") return &avx512::row;
  if (isa == "avx2") return &avx2::row;
#endif
  return &row_portable;
}

/// One row of the default LSTM cell: `gates` [4H] the step's projections (without bias),
/// `bias` [4H], the state `c` updated in place, `h` [H] written (the x86 forms park the
/// output gate there between their passes: h must not overlap the other arguments). `units` < H: units
/// [u0, u0 + units) of a row of hidden size H, every pointer at unit u0.
inline void row(const float* gates, const float* bias, float* c, float* h, i64 H, i64 units = -1) {
  static const row_fn f = row_for_this_cpu();
  f(gates, bias, c, h, units < 0 ? H : units, H);
}

}  // namespace gpass::exec::cpu_detail::lstm_cell
