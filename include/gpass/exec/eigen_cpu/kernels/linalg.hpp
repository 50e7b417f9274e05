// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file linalg.hpp
/// Eigen CPU kernels: the linalg family: matrix products (MatMul, Gemm, Einsum, Det,
/// MatMulInteger, QLinearMatMul), convolutions (Conv, ConvTranspose, ConvInteger,
/// QLinearConv) and pooling (MaxPool, AveragePool, LpPool, their Global forms, MaxUnpool).
///
/// Products go through Eigen's GEMM on row-major `Eigen::Map`s of the tensors (no copies;
/// transposes are views); with more than one thread the output is cut into row or column
/// blocks, one Eigen product per block, run with `eigen_cpu::parallel_for`. Convolutions
/// are im2col (per block of output positions, into a scratch buffer) + GEMM, with a direct
/// GEMM for 1x1 stride-1 unpadded kernels; ConvTranspose is GEMM + col2im.
///
/// Constant f32 weights (a Constant node feeding B of Gemm/MatMul or W of Conv, see
/// `kernel_node::constant_inputs`) are packed once when the kernel is made, and those
/// products run on sgemm.hpp's micro-kernels (AVX-512 / AVX2 chosen at run time): Gemm and
/// MatMul read the activations in place; stride-1 2-D convolutions read a zero-padded copy of
/// their input in place, other convolutions im2col straight into panel form.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <gpass/exec/einsum_rules.hpp>
#include <gpass/exec/nn_rules.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/fused_activation.hpp>
#include <gpass/exec/eigen_cpu/kernels/sgemm.hpp>
#include <gpass/ops/fused_matmul.hpp>

namespace gpass::exec::cpu_detail {

namespace linalg {

using i64 = std::int64_t;

template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using const_map = Eigen::Map<const row_matrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using mut_map = Eigen::Map<row_matrix<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

/// Rough cost of one multiply-add in a GEMM, in `parallel_for` cost units (about ns).
inline constexpr double mac_cost = 0.04;
/// Total cost below which a product runs on one thread (measured: splitting a 512x512 GEMV
/// over two threads gains nothing; a 64x512x512 GEMM halves).
inline constexpr double parallel_threshold = 10000.0;

inline i64 product(std::span<const i64> v) {
  i64 p = 1;
  for (i64 x : v) p *= x;
  return p;
}

/// Element types computed by Eigen's GEMM (others go through a plain loop).
template <class T>
inline constexpr bool eigen_gemm_type = std::is_same_v<T, float> || std::is_same_v<T, double>;

/// C[r0:r1, c0:c1] (=|+=) alpha * op(A)[r0:r1, :] * op(B)[:, c0:c1], where op(A) is M x K
/// (A stored row-major M x K with row stride lda, or K x M when `ta`), op(B) K x N.
template <class T>
struct gemm_args {
  i64 M = 0, N = 0, K = 0;
  const T* a = nullptr;
  i64 lda = 0;
  bool ta = false;
  const T* b = nullptr;
  i64 ldb = 0;
  bool tb = false;
  T* c = nullptr;
  i64 ldc = 0;
  T alpha = T(1);
  bool accumulate = false;  ///< add to C (which the init callback filled) instead of overwriting
};

/// c + a * b; integers wrap around as two's complement (as the engines compute; signed
/// overflow is undefined behaviour in C++).
template <class T>
T mul_add(T c, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(c) + static_cast<U>(static_cast<U>(a) * static_cast<U>(b))));
  } else {
    return c + a * b;
  }
}

template <class T>
void gemm_block(const gemm_args<T>& g, i64 r0, i64 r1, i64 c0, i64 c1) {
  const i64 m = r1 - r0, n = c1 - c0, K = g.K;
  if (m <= 0 || n <= 0) return;
  if constexpr (eigen_gemm_type<T>) {
    const sgemm::flush_subnormals ftz;  // as the engine's products (sgemm.hpp)
    mut_map<T> C(g.c + r0 * g.ldc + c0, m, n, Eigen::OuterStride<>(g.ldc));
    auto run = [&](const auto& A, const auto& B) {
      if (g.accumulate) C.noalias() += g.alpha * A * B;
      else if (g.alpha == T(1)) C.noalias() = A * B;
      else C.noalias() = g.alpha * A * B;
    };
    auto with_b = [&](const auto& A) {
      if (!g.tb) run(A, const_map<T>(g.b + c0, K, n, Eigen::OuterStride<>(g.ldb)));
      else run(A, const_map<T>(g.b + c0 * g.ldb, n, K, Eigen::OuterStride<>(g.ldb)).transpose());
    };
    if (!g.ta) with_b(const_map<T>(g.a + r0 * g.lda, m, K, Eigen::OuterStride<>(g.lda)));
    else with_b(const_map<T>(g.a + r0, K, m, Eigen::OuterStride<>(g.lda)).transpose());
  } else {
    // plain loop (integer types): i-k-j order so the inner loop runs along rows of B and C
    for (i64 i = r0; i < r1; ++i) {
      T* crow = g.c + i * g.ldc;
      if (!g.accumulate)
        for (i64 j = c0; j < c1; ++j) crow[j] = T(0);
      for (i64 k = 0; k < K; ++k) {
        const T av = mul_add(T(0), g.alpha, g.ta ? g.a[k * g.lda + i] : g.a[i * g.lda + k]);
        if (av == T(0)) continue;
        if (!g.tb) {
          const T* brow = g.b + k * g.ldb;
          for (i64 j = c0; j < c1; ++j) crow[j] = mul_add(crow[j], av, brow[j]);
        } else {
          for (i64 j = c0; j < c1; ++j) crow[j] = mul_add(crow[j], av, g.b[j * g.ldb + k]);
        }
      }
    }
  }
}

/// Runs the product of `g`, split into row or column blocks over the policy's threads when
/// it is big enough; `init(r0, r1, c0, c1)` prepares each block of C first (when accumulating).
template <class T, class Init>
void gemm(const eigen_cpu& pol, const gemm_args<T>& g, Init&& init, bool allow_parallel = true) {
  const i64 M = g.M, N = g.N;
  if (M <= 0 || N <= 0) return;
  const int threads = allow_parallel ? pol.threads() : 1;
  const double total = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(std::max<i64>(g.K, 1)) * mac_cost;
  if (threads <= 1 || total < parallel_threshold) {
    init(0, M, 0, N);
    gemm_block(g, 0, M, 0, N);
    return;
  }
  // split the longer side; column blocks are multiples of 16, row blocks of 8
  const bool by_cols = N >= M;
  const i64 len = by_cols ? N : M;
  const i64 unit = by_cols ? 16 : 8;
  const i64 units = (len + unit - 1) / unit;
  const i64 blocks = std::min<i64>(units, threads);
  const i64 per = (units + blocks - 1) / blocks * unit;  // elements per block
  const i64 nblocks = (len + per - 1) / per;
  pol.parallel_for(nblocks, total / static_cast<double>(nblocks), [&](i64 b, i64 e) {
    const i64 s = b * per, t = std::min(len, e * per);
    if (by_cols) {
      init(0, M, s, t);
      gemm_block(g, 0, M, s, t);
    } else {
      init(s, t, 0, N);
      gemm_block(g, s, t, 0, N);
    }
  });
}

template <class T>
void gemm(const eigen_cpu& pol, const gemm_args<T>& g, bool allow_parallel = true) {
  gemm(pol, g, [](i64, i64, i64, i64) {}, allow_parallel);
}

/// Copies a tensor of element type `From` into a new tensor of element type `To`.
template <class To, class From>
gpass::tensor convert_tensor(const gpass::tensor& t) {
  gpass::tensor r = gpass::tensor::uninitialized(dtype_of_v<To>, t.sizes());
  const From* s = t.data<From>();
  To* d = r.data<To>();
  const i64 n = t.size();
  for (i64 i = 0; i < n; ++i) d[i] = static_cast<To>(static_cast<float>(s[i]));
  return r;
}

// ------------------------------------------------------------------------------------------
// Pre-packed constant operands (f32, the panel form of sgemm.hpp)
//
// A constant weight operand (the initializer B of a Gemm/MatMul, the filter of a Conv) is
// packed once when the plan binds the kernel; each run packs only the activations (or im2col
// writes them straight into panels) and multiplies with sgemm.hpp's micro-kernels.

/// A packed weight with the tensor it was packed from: used only when a run's input is that
/// very tensor (same buffer, sizes and type), so a kernel stays correct on any other input.
template <class Packed>
struct packed_constant {
  gpass::tensor source;
  std::shared_ptr<const Packed> packed;
  const Packed* match(const gpass::tensor& t) const {
    if (!packed || t.raw() != source.raw() || t.element_type() != source.element_type() || t.sizes() != source.sizes())
      return nullptr;
    return packed.get();
  }
};

/// C[M, N] (row-major, row stride ldc) = alpha * op(A) * W (+ what `init(r0, r1, c0, c1)` put
/// in that block of C first, when `accumulate`), W (K x N) packed. op(A) is M x K: A
/// row-major with row stride lda (read in place when alpha is 1), or K x M when `ta` (packed
/// once by the caller, scaled by alpha). The threads split the longer side: W's column
/// panels (each thread reads all of A and its part of W) or, for more rows than columns,
/// A's row panels (each reads its part of A and all of W), so the operand read by every
/// thread is the smaller one.
template <class Init>
void packed_gemm(const eigen_cpu& pol, const sgemm::packed_b& w, const float* a, i64 lda, bool ta, i64 M, float* c,
                 i64 ldc, float alpha, bool accumulate, Init&& init) {
  const i64 N = w.cols, K = w.depth;
  if (M <= 0 || N <= 0) return;
  const sgemm::kernel_info& ki = *w.ki;
  const bool in_place = !ta && alpha == 1.0f;
  const i64 a_stride = K * ki.mr;
  const float* ap = a;
  if (!in_place) {
    float* packed = sgemm::scratch(0, std::max<i64>(1, sgemm::panels(M, ki.mr) * a_stride));
    sgemm::pack_a(a, lda, ta, M, K, ki.mr, packed);
    if (alpha != 1.0f)
      for (i64 i = 0, n = sgemm::panels(M, ki.mr) * a_stride; i < n; ++i) packed[i] *= alpha;
    ap = packed;
  }
  const i64 np = sgemm::panels(N, ki.nr), mp = sgemm::panels(M, ki.mr);
  auto columns = [&](i64 b, i64 e) {  // column panels [b, e)
    const i64 c0 = b * ki.nr, c1 = std::min(N, e * ki.nr);
    if (accumulate) init(0, M, c0, c1);
    sgemm::multiply(ki, ap, a_stride, M, w.data.data(), w.panel_stride(), N, K, c, ldc, accumulate, c0, c1,
                    in_place ? std::max<i64>(lda, 1) : 0);
  };
  auto rows = [&](i64 b, i64 e) {  // row panels [b, e)
    const i64 r0 = b * ki.mr, r1 = std::min(M, e * ki.mr);
    if (accumulate) init(r0, r1, 0, N);
    sgemm::multiply(ki, in_place ? ap + r0 * lda : ap + b * a_stride, a_stride, r1 - r0, w.data.data(), w.panel_stride(), N,
                    K, c + r0 * ldc, ldc, accumulate, 0, N, in_place ? std::max<i64>(lda, 1) : 0);
  };
  const double total = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(std::max<i64>(K, 1)) * mac_cost;
  if (pol.threads() <= 1 || total < parallel_threshold || (np < 2 && mp < 2)) columns(0, np);
  else if (M > N && mp >= 2) pol.parallel_for(mp, total / static_cast<double>(mp), rows);
  else if (np >= 2) pol.parallel_for(np, total / static_cast<double>(np), columns);
  else pol.parallel_for(mp, total / static_cast<double>(mp), rows);
}

// ------------------------------------------------------------------------------------------
// MatMul shapes (numpy semantics)

struct matmul_shape {
  i64 M = 0, N = 0, K = 0;
  std::vector<i64> out;
  i64 batches = 1;
  bool fold = false;                           ///< b has no batch: fold a's batches into M
  std::vector<std::pair<i64, i64>> offsets;    ///< per batch: matrix index in a, in b
};

inline matmul_shape matmul_shapes(const std::vector<i64>& sa, const std::vector<i64>& sb, const kernel_node& n) {
  if (sa.empty() || sb.empty()) n.fail("MatMul inputs must have rank >= 1");
  std::vector<i64> a2 = sa, b2 = sb;
  if (sa.size() == 1) a2 = {1, sa[0]};
  if (sb.size() == 1) b2 = {sb[0], 1};
  matmul_shape r;
  r.M = a2[a2.size() - 2];
  r.K = a2.back();
  r.N = b2.back();
  if (b2[b2.size() - 2] != r.K)
    n.fail("MatMul inner dimensions differ: " + shape::of(sa).to_string() + " x " + shape::of(sb).to_string());
  std::vector<i64> ba(a2.begin(), a2.end() - 2), bb(b2.begin(), b2.end() - 2);
  std::vector<i64> batch = broadcast_sizes(ba, bb, n);
  r.out = batch;
  if (sa.size() > 1) r.out.push_back(r.M);
  if (sb.size() > 1) r.out.push_back(r.N);
  r.batches = product(batch);
  if (product(bb) == 1 && ba == batch) {
    r.fold = true;
    return r;
  }
  r.offsets.reserve(static_cast<std::size_t>(r.batches));
  strided_walker<2> w(batch, {broadcast_strides(ba, batch), broadcast_strides(bb, batch)});
  w.seek(0);
  for (i64 i = 0; i < r.batches; ++i, w.next()) r.offsets.emplace_back(w.offset(0), w.offset(1));
  return r;
}

/// Batched product c[i] = a[oa] * b[ob] for every batch of `s` (row-major contiguous matrices).
template <class T>
void batched_matmul(const eigen_cpu& pol, const matmul_shape& s, const T* a, const T* b, T* c) {
  const i64 M = s.M, N = s.N, K = s.K;
  if (s.fold) {
    gemm<T>(pol, {.M = s.batches * M, .N = N, .K = K, .a = a, .lda = K, .b = b, .ldb = N, .c = c, .ldc = N});
    return;
  }
  auto one = [&](i64 i, bool par) {
    gemm<T>(pol,
            {.M = M, .N = N, .K = K, .a = a + s.offsets[i].first * M * K, .lda = K, .b = b + s.offsets[i].second * K * N,
             .ldb = N, .c = c + i * M * N, .ldc = N},
            par);
  };
  if (pol.threads() > 1 && s.batches >= pol.threads()) {
    pol.parallel_for(s.batches, static_cast<double>(M * N * std::max<i64>(K, 1)) * mac_cost, [&](i64 b0, i64 e0) {
      for (i64 i = b0; i < e0; ++i) one(i, false);
    });
  } else {
    for (i64 i = 0; i < s.batches; ++i) one(i, true);
  }
}

// ------------------------------------------------------------------------------------------
// Window geometry (Conv, ConvTranspose, pooling)

// the window attributes and geometry every executor shares (gpass/exec/shape_rules.hpp)
using shape_rules::resolve_window;
using shape_rules::resolve_transpose_window;
using shape_rules::window_attrs;
using shape_rules::window_geometry;

// ------------------------------------------------------------------------------------------
// Convolution: im2col + GEMM

/// Writes row `row` (channel row / Kk, kernel offset row % Kk) of the im2col matrix of one
/// image-group `x` ([Cg, in...]), columns (output positions) [c0, c1), to `out`.
template <class T>
void im2col_row(const T* x, const window_geometry& g, i64 row, i64 c0, i64 c1, T* out) {
  const std::size_t r = g.in.size();
  const i64 Kk = product(g.kernel), P_in = product(g.in);
  const i64 last = static_cast<i64>(r) - 1;
  std::array<i64, 8> kidx{}, o{};  // spatial rank <= 8 (checked by the Conv kernels)
  const i64 s_last = g.strides[last], d_last = g.dilations[last], in_last = g.in[last], pb_last = g.pad_begin[last];
  const i64 c = row / Kk;
  i64 kr = row % Kk;
  for (std::size_t d = r; d-- > 0;) {
    kidx[d] = kr % g.kernel[d];
    kr /= g.kernel[d];
  }
  const T* xc = x + c * P_in;
  i64 p = c0;
  for (std::size_t d = r, q = c0; d-- > 0;) {
    o[d] = static_cast<i64>(q) % g.out[d];
    q /= static_cast<std::size_t>(g.out[d]);
  }
  while (p < c1) {
    const i64 run = std::min(g.out[last] - o[last], c1 - p);
    bool ok = true;
    i64 off = 0;
    for (i64 d = 0; d < last; ++d) {
      const i64 i = o[d] * g.strides[d] - g.pad_begin[d] + kidx[d] * g.dilations[d];
      if (i < 0 || i >= g.in[d]) {
        ok = false;
        break;
      }
      off = off * g.in[d] + i;
    }
    if (!ok) {
      std::fill(out, out + run, T(0));
    } else {
      const T* xr = xc + off * in_last;
      const i64 i0 = o[last] * s_last - pb_last + kidx[last] * d_last;
      // valid j: 0 <= i0 + j*s < in_last
      i64 jlo = i0 >= 0 ? 0 : (-i0 + s_last - 1) / s_last;
      i64 jhi = i0 >= in_last ? 0 : (in_last - i0 + s_last - 1) / s_last;
      jlo = std::min(jlo, run);
      jhi = std::clamp(jhi, jlo, run);
      std::fill(out, out + jlo, T(0));
      // (offsets summed before they meet the pointer: i0 may lie before the row)
      if (s_last == 1) {
        if (jhi > jlo) std::copy(xr + (i0 + jlo), xr + (i0 + jhi), out + jlo);
      } else {
        for (i64 j = jlo; j < jhi; ++j) out[j] = xr[i0 + j * s_last];
      }
      std::fill(out + jhi, out + run, T(0));
    }
    out += run;
    p += run;
    o[last] += run;
    if (o[last] == g.out[last]) {
      o[last] = 0;
      for (i64 d = last - 1; d >= 0; --d) {
        if (++o[d] < g.out[d]) break;
        o[d] = 0;
      }
    }
  }
}

/// Fills `dst` ([CK, c1 - c0] row-major) with the im2col columns [c0, c1) of one
/// image-group `x` ([Cg, in...]).
template <class T>
void im2col(const T* x, const window_geometry& g, i64 Cg, i64 c0, i64 c1, T* dst) {
  const i64 rows = Cg * product(g.kernel), width = c1 - c0;
  for (i64 row = 0; row < rows; ++row) im2col_row(x, g, row, c0, c1, dst + row * width);
}

/// Copies n floats; the usual panel widths inline (no library call for 16 or 32 floats).
inline void copy_floats(const float* src, i64 n, float* dst) {
  if (n == 32) std::memcpy(dst, src, 32 * sizeof(float));
  else if (n == 16) std::memcpy(dst, src, 16 * sizeof(float));
  else if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n) * sizeof(float));
}

/// The im2col columns [c0, c1) of one image-group `x` in sgemm's B panel form (panels of
/// `nr` columns, each CK x nr; columns past c1 zero). Two spatial dimensions are written
/// straight into the panels, row by row of the output; others go through `im2col_row`.
inline void im2col_panels(const float* x, const window_geometry& g, i64 Cg, i64 c0, i64 c1, int nr, float* dst) {
  const i64 Kk = product(g.kernel), rows = Cg * Kk, width = c1 - c0, panel = rows * nr;
  // zero the tail of the last panel once (every row's columns past c1)
  if (const i64 tail = width % nr; tail != 0) {
    float* last = dst + (width / nr) * panel;
    for (i64 row = 0; row < rows; ++row) std::fill(last + row * nr + tail, last + row * nr + nr, 0.0f);
  }
  if (g.in.size() != 2) {
    float* line = sgemm::scratch(2, width);
    for (i64 row = 0; row < rows; ++row) {
      im2col_row(x, g, row, c0, c1, line);
      float* out = dst + row * nr;
      for (i64 j0 = 0; j0 < width; j0 += nr, out += panel) std::copy(line + j0, line + std::min<i64>(width, j0 + nr), out);
    }
    return;
  }
  const i64 H = g.in[0], W = g.in[1], OW = g.out[1], KH = g.kernel[0], KW = g.kernel[1];
  const i64 sy = g.strides[0], sx = g.strides[1], dy = g.dilations[0], dx = g.dilations[1];
  const i64 pt = g.pad_begin[0], pl = g.pad_begin[1];
  for (i64 c = 0; c < Cg; ++c) {
    const float* xc = x + c * H * W;
    for (i64 ky = 0; ky < KH; ++ky)
      for (i64 kx = 0; kx < KW; ++kx) {
        float* pp = dst + ((c * KH + ky) * KW + kx) * nr;  // this row in the current panel
        i64 off = 0;                                        // column within the panel
        i64 oy = c0 / OW, ox = c0 % OW;
        for (i64 j = 0; j < width;) {
          const i64 run = std::min(OW - ox, width - j);
          const i64 iy = oy * sy - pt + ky * dy;
          const float* src = iy >= 0 && iy < H ? xc + iy * W : nullptr;
          i64 ix = ox * sx - pl + kx * dx;  // input column of the run's next output
          for (i64 left = run; left > 0;) {
            const i64 chunk = std::min<i64>(left, nr - off);
            float* out = pp + off;
            if (!src) {
              std::fill(out, out + chunk, 0.0f);
            } else {
              // outputs t in [lo, hi) read inside the row: 0 <= ix + t * sx < W
              i64 lo, hi;
              if (sx == 1) {
                lo = std::clamp<i64>(-ix, 0, chunk);
                hi = std::clamp<i64>(W - ix, lo, chunk);
              } else {
                lo = std::min(chunk, ix >= 0 ? i64{0} : (-ix + sx - 1) / sx);
                hi = std::clamp<i64>(ix >= W ? 0 : (W - ix + sx - 1) / sx, lo, chunk);
              }
              std::fill(out, out + lo, 0.0f);
              if (sx == 1) copy_floats(src + ix + lo, hi - lo, out + lo);
              else
                for (i64 t = lo; t < hi; ++t) out[t] = src[ix + t * sx];
              std::fill(out + hi, out + chunk, 0.0f);
            }
            ix += chunk * sx;
            left -= chunk;
            off += chunk;
            if (off == nr) {
              off = 0;
              pp += panel;
            }
          }
          j += run;
          ox = 0;
          ++oy;
        }
      }
  }
}

template <class T>
inline constexpr bool half_like = std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

/// y[i] = act(y[i] (+ z[i])) for i in [0, n) (z may be null): what gpass's fused ops do to
/// their output; one tight loop per activation, chosen once. W: the compute type.
template <class T, class W = std::conditional_t<half_like<T>, float, T>>
void fused_output(const fused_activation& act, T* y, const T* z, i64 n) {
  auto run = [&](auto f) {
    if (z)
      for (i64 i = 0; i < n; ++i) y[i] = static_cast<T>(f(static_cast<W>(y[i]) + static_cast<W>(z[i])));
    else
      for (i64 i = 0; i < n; ++i) y[i] = static_cast<T>(f(static_cast<W>(y[i])));
  };
  const W a = static_cast<W>(act.a), c = static_cast<W>(act.b);
  using K = fused_activation::kind;
  switch (act.k) {
    case K::none: if (z) run([](W x) { return x; }); break;
    case K::relu: run([](W x) { return x < W(0) ? W(0) : x; }); break;
    case K::leaky_relu: run([a](W x) { return x < W(0) ? a * x : x; }); break;
    case K::clip: run([a, c](W x) { return std::min(std::max(x, a), c); }); break;
    case K::sigmoid: run([](W x) { return W(1) / (W(1) + std::exp(-x)); }); break;
    case K::tanh: run([](W x) { return std::tanh(x); }); break;
    case K::hard_sigmoid: run([a, c](W x) { return std::max(W(0), std::min(W(1), a * x + c)); }); break;
  }
}

/// A fused f32 convolution's output step (FusedConv: the residual input z, laid out as y,
/// then the activation), applied by the convolution paths that take it to each block of
/// output they finish, while it is in cache: `apply(at, n)` does y[at, at + n).
struct conv_epilogue {
  fused_activation act;
  float* y = nullptr;
  const float* z = nullptr;
  void apply(i64 at, i64 n) const { fused_output<float>(act, y + at, z ? z + at : nullptr, n); }
};

struct pool_setup;
template <class T>
bool conv_depthwise(const eigen_cpu& pol, const window_geometry& g, i64 N, i64 C, i64 M, const T* x, const T* w,
                    const T* bias, T* y, const conv_epilogue* ep);

/// y[N, M, out...] = conv(x[N, C, in...], w[M, C/G, k...]) + bias[M] (bias may be null).
/// Returns whether it applied `ep` (only the f32 depthwise path does).
template <class T>
bool conv_forward(const eigen_cpu& pol, const window_geometry& g, i64 N, i64 C, i64 M, i64 G, const T* x, const T* w,
                  const T* bias, T* y, const conv_epilogue* ep = nullptr) {
  const i64 P_in = product(g.in), P = product(g.out), Kk = product(g.kernel);
  const i64 Cg = C / G, Mg = M / G, CK = Cg * Kk;
  if (N == 0 || M == 0 || P == 0) return true;
  if (P_in == 0) {  // an empty input (padding makes the output): every tap reads padding
    for (i64 i = 0; i < N * M; ++i) std::fill(y + i * P, y + (i + 1) * P, bias ? bias[i % M] : T(0));
    return false;
  }
  if (Cg == 1 && G > 1 && g.in.size() <= 3) return conv_depthwise(pol, g, N, C, M, x, w, bias, y, ep);
  bool pointwise = true;
  for (std::size_t d = 0; d < g.in.size(); ++d)
    pointwise = pointwise && g.kernel[d] == 1 && g.strides[d] == 1 && g.pad_begin[d] == 0 && g.pad_end[d] == 0;
  // columns (output positions) per task; rows (output channels) per task
  i64 cb = pointwise ? P : std::clamp<i64>((i64{1} << 17) / std::max<i64>(CK, 1), 64, std::max<i64>(P, 1));
  if (cb < P) cb = (cb + 15) / 16 * 16;
  i64 CB = (P + cb - 1) / cb;
  const int threads = pol.threads();
  const double total = static_cast<double>(N * M * P) * static_cast<double>(std::max<i64>(CK, 1)) * mac_cost;
  i64 RB = 1;
  if (threads > 1 && total > parallel_threshold && N * G * CB < threads) {
    if (P >= Mg && P >= 32) {
      cb = std::max<i64>(16, ((P + threads - 1) / threads + 15) / 16 * 16);
      CB = (P + cb - 1) / cb;
    }
    if (N * G * CB < threads) RB = std::min<i64>(threads, std::max<i64>(1, Mg / 8));
  }
  const i64 rb = (Mg + RB - 1) / RB;
  const i64 tasks = N * G * RB * CB;
  pol.parallel_for(tasks, total / static_cast<double>(tasks), [&](i64 b, i64 e) {
    std::unique_ptr<T[]> scratch;
    if (!pointwise) scratch.reset(new T[static_cast<std::size_t>(CK * std::min(cb, P))]);
    for (i64 t = b; t < e; ++t) {
      const i64 cbi = t % CB;
      const i64 rbi = (t / CB) % RB;
      const i64 gi = (t / (CB * RB)) % G;
      const i64 ni = t / (CB * RB * G);
      const i64 c0 = cbi * cb, c1 = std::min(P, c0 + cb), r0 = rbi * rb, r1 = std::min(Mg, r0 + rb);
      if (r0 >= r1) continue;
      const T* xg = x + (ni * C + gi * Cg) * P_in;
      T* yg = y + (ni * M + gi * Mg) * P;
      const T* bmat;
      i64 ldb;
      if (pointwise) {
        bmat = xg + c0;
        ldb = P_in;
      } else {
        im2col(xg, g, Cg, c0, c1, scratch.get());
        bmat = scratch.get();
        ldb = c1 - c0;
      }
      const gemm_args<T> ga{.M = r1 - r0, .N = c1 - c0, .K = CK, .a = w + (gi * Mg + r0) * CK, .lda = CK, .b = bmat,
                            .ldb = ldb, .c = yg + r0 * P + c0, .ldc = P};
      gemm_block(ga, 0, r1 - r0, 0, c1 - c0);
      if (bias) {
        for (i64 m = r0; m < r1; ++m) {
          const T bv = bias[gi * Mg + m];
          T* row = yg + m * P;
          for (i64 j = c0; j < c1; ++j) row[j] += bv;
        }
      }
    }
  });
  return false;
}

/// The f32 filter of a Conv packed once: one sgemm A operand per group, W_g (M/G x C/G*k...).
struct packed_filter {
  const sgemm::kernel_info* ki;
  std::vector<sgemm::packed_a> groups;
  /// Packs w [M, C/G, k...] for kernel `k`.
  packed_filter(const float* w, i64 M, i64 G, i64 CK, const sgemm::kernel_info& k = sgemm::kernel()) : ki(&k) {
    const i64 Mg = M / G;
    groups.reserve(static_cast<std::size_t>(G));
    for (i64 gi = 0; gi < G; ++gi) groups.emplace_back(w + gi * Mg * CK, CK, false, Mg, CK, k);
  }
};

/// Output positions per task of a packed convolution: whole panels of `nr` columns, the
/// packed block (CK x cb) within about 256 KB (L2); with several threads, the panels per task
/// (up to a quarter more) that give the busiest thread the least work (`parallel_for` hands
/// each thread a contiguous, equal count of tasks).
inline i64 conv_task_width(const eigen_cpu& pol, i64 images, i64 P, i64 CK, i64 nr, double total) {
  const i64 total_panels = sgemm::panels(P, static_cast<int>(nr));
  const i64 ppt_max = std::clamp<i64>((i64{1} << 16) / std::max<i64>(CK, 1) / nr, 1, total_panels);
  i64 ppt = ppt_max;
  const int threads = pol.threads();
  if (threads > 1 && total > parallel_threshold) {
    i64 best_load = std::numeric_limits<i64>::max();
    for (i64 q = 1; q <= std::min(total_panels, ppt_max + ppt_max / 4); ++q) {
      const i64 tasks = images * ((total_panels + q - 1) / q), load = (tasks + threads - 1) / threads * q;
      if (load <= best_load) {
        best_load = load;
        ppt = q;
      }
    }
  }
  return std::min(P, ppt * nr);
}

/// Where the taps of one axis of a convolution read its polyphase planes: tap k reads phase
/// `phase[k]` (of `phases` used ones) at `shift[k]` positions past the output position:
/// k * dilation = stride * shift + the phase's first input position.
struct conv_taps {
  std::vector<i64> phase, shift, firsts;  ///< firsts[p]: the input position of phase p's first element
  i64 reach = 0;                          ///< the largest shift
  conv_taps(i64 K, i64 stride, i64 dilation) : phase(static_cast<std::size_t>(K)), shift(static_cast<std::size_t>(K)) {
    for (i64 k = 0; k < K; ++k) {
      const i64 at = k * dilation, r = at % stride;
      auto it = std::find(firsts.begin(), firsts.end(), r);
      if (it == firsts.end()) it = firsts.insert(firsts.end(), r);
      phase[static_cast<std::size_t>(k)] = it - firsts.begin();
      shift[static_cast<std::size_t>(k)] = at / stride;
      reach = std::max(reach, at / stride);
    }
  }
  i64 phases() const { return static_cast<i64>(firsts.size()); }
};

/// Whether a 1-D or 2-D convolution computes on its polyphase grid rather than through
/// im2col: when the grid's dropped columns (Wq - OW per row) are at most half of the OW kept
/// ones, and the polyphase planes within 4x the input and output planes (huge dilations over
/// huge pads take im2col, which never copies the padding). Measured, one AVX-512 thread,
/// ResNet-50's 3x3 convolutions: 56x56 1.8x, 28x28 1.4x, 14x14 1.09x, 7x7 1.03x faster on the
/// grid than through im2col.
inline bool conv_grid_pays(const window_geometry& g) {
  const std::size_t rank = g.in.size();
  if (rank != 1 && rank != 2) return false;
  double planes = 1.0, in = 1.0, out = 1.0;
  for (std::size_t d = 0; d < rank; ++d) {
    // at most min(stride, kernel) phases, each (out + reach) long; the taps' positions in i64
    const double span = static_cast<double>(g.kernel[d] - 1) * static_cast<double>(g.dilations[d]);
    if (span > 1e18) return false;
    const double reach = span / static_cast<double>(g.strides[d]);
    planes *= std::min<double>(static_cast<double>(g.strides[d]), static_cast<double>(g.kernel[d])) * (static_cast<double>(g.out[d]) + reach);
    in *= static_cast<double>(g.in[d]);
    out *= static_cast<double>(g.out[d]);
  }
  if (planes > 4.0 * (in + out) + 65536.0) return false;
  const i64 OW = g.out[rank - 1];
  const i64 dropped = (g.kernel[rank - 1] - 1) * g.dilations[rank - 1] / g.strides[rank - 1];  // below 1e18 (above)
  return OW > 0 && (rank == 1 || dropped <= OW / 2);
}

/// A 1-D or 2-D convolution without im2col. The input is copied once into polyphase planes
/// with its padding made explicit: plane (py, px) of a channel holds the padded input's rows
/// py, py + sh, ... and columns px, px + sw, ... (one plane at stride 1), each Hq x Wq (the
/// outputs plus the taps' reach), so that tap (ky, kx) of output (oy, ox) is element
/// (oy + ay, ox + ax) of one plane. The micro-kernels read each B half panel in place there, at
/// a per-depth offset (channel, plane, tap shift) from the half panel's first position. When
/// the output rows hold whole half panels (OW a multiple of nr / 2, P of nr) the panels are
/// output positions. Otherwise (`grid`) they run over the planes' grid: position q = oy * Wq +
/// ox, whose half panels are contiguous whatever OW is; the Wq - OW columns past each output
/// row are computed and dropped (none for one output row, or taps without reach). The
/// products go straight to y where positions are output positions; else each task's block
/// goes to a per-thread buffer whose output runs are copied out (with the epilogue).
inline void conv_forward_in_place(const eigen_cpu& pol, const sgemm::kernel_info& ki, const window_geometry& g, i64 N,
                                  i64 C, i64 M, i64 G, const float* x, const packed_filter& w, const float* bias, float* y,
                                  const conv_epilogue* ep, bool grid) {
  const std::size_t c = g.in.size() - 1;  // the column axis; a 1-D convolution has one row
  const i64 H = c ? g.in[0] : 1, W = g.in[c], OH = c ? g.out[0] : 1, OW = g.out[c], KH = c ? g.kernel[0] : 1, KW = g.kernel[c];
  const i64 sh = c ? g.strides[0] : 1, sw = g.strides[c], pt = c ? g.pad_begin[0] : 0, pl = g.pad_begin[c];
  const conv_taps ty(KH, sh, c ? g.dilations[0] : 1), tx(KW, sw, g.dilations[c]);
  const i64 Hq = OH + ty.reach, Wq = OW + tx.reach, pplane = Hq * Wq, nph = ty.phases() * tx.phases(), cplane = nph * pplane;
  const i64 Cg = C / G, Mg = M / G, CK = Cg * KH * KW, P = OH * OW, nr = ki.nr, half = nr / 2;
  // positions of the product: output positions, or the grid's up to the last output
  const i64 Q = grid ? (OH - 1) * Wq + OW : P;
  // xp[n, c, (iy, ix), i, j] = x[n, c, i * sh + firsts_y[iy] - pt, j * sw + firsts_x[ix] - pl],
  // zero outside x; on the grid a last panel reads up to nr - 1 values past the last plane
  const i64 tail = grid ? nr : 0;
  float* xp = sgemm::scratch(3, N * C * cplane + tail);
  std::fill(xp + N * C * cplane, xp + N * C * cplane + tail, 0.0f);
  pol.parallel_for(N * C, static_cast<double>(cplane) * 0.3, [&](i64 b, i64 e) {
    for (i64 nc = b; nc < e; ++nc) {
      const float* src = x + nc * H * W;
      float* dst = xp + nc * cplane;
      for (const i64 fy : ty.firsts)
        for (const i64 fx : tx.firsts) {
          // the columns j whose input column j * sw + fx - pl lies in [0, W)
          const i64 lo = std::clamp<i64>((pl - fx + sw - 1) / sw, 0, Wq);
          const i64 hi = std::clamp<i64>(W + pl - fx > 0 ? (W + pl - fx + sw - 1) / sw : 0, lo, Wq);
          for (i64 i = 0; i < Hq; ++i, dst += Wq) {
            const i64 iy = i * sh + fy - pt;
            if (iy < 0 || iy >= H) {
              std::fill(dst, dst + Wq, 0.0f);
              continue;
            }
            std::fill(dst, dst + lo, 0.0f);
            const i64 at = iy * W + fx - pl;  // + j * sw: column j's input
            if (sw == 1) std::copy(src + at + lo, src + at + hi, dst + lo);
            else
              for (i64 j = lo; j < hi; ++j) dst[j] = src[at + j * sw];
            std::fill(dst + hi, dst + Wq, 0.0f);
          }
        }
    }
  });
  std::vector<i64> off(static_cast<std::size_t>(CK));
  for (i64 ci = 0, k = 0; ci < Cg; ++ci)
    for (std::size_t ky = 0; ky < static_cast<std::size_t>(KH); ++ky)
      for (std::size_t kx = 0; kx < static_cast<std::size_t>(KW); ++kx)
        off[static_cast<std::size_t>(k++)] =
            ci * cplane + (ty.phase[ky] * tx.phases() + tx.phase[kx]) * pplane + ty.shift[ky] * Wq + tx.shift[kx];
  const bool to_y = !grid || OH == 1 || Wq == OW;
  const double total = static_cast<double>(N * M * Q) * static_cast<double>(std::max<i64>(CK, 1)) * mac_cost;
  // B is read in place, not packed per task: tasks as wide as a 512-deep packed block, so
  // that a deep filter streams through the cache for several panels, not one
  i64 cb = conv_task_width(pol, N * G, Q, std::min<i64>(CK, 512), nr, total);
  // a block copied out through the per-thread buffer: Mg x cb within 1 MB (whole panels)
  if (!to_y) cb = std::min(cb, std::max<i64>(nr, (i64{1} << 18) / std::max<i64>(Mg, 1) / nr * nr));
  const i64 CB = (Q + cb - 1) / cb, tasks = N * G * CB;
  pol.parallel_for(tasks, total / static_cast<double>(tasks), [&](i64 b, i64 e) {
    std::vector<const float*> base(static_cast<std::size_t>(2 * (cb / nr + 1)));
    float* block = to_y ? nullptr : sgemm::scratch(1, Mg * cb);
    for (i64 t = b; t < e; ++t) {
      const i64 cbi = t % CB, gi = (t / CB) % G, ni = t / (CB * G);
      const i64 c0 = cbi * cb, c1 = std::min(Q, c0 + cb);
      const float* img = xp + (ni * C + gi * Cg) * cplane;
      if (grid)  // both halves of a ragged last panel (its reads stay within the planes + tail)
        for (i64 q = c0, h = 0; q < c0 + sgemm::panels(c1 - c0, static_cast<int>(nr)) * nr; q += half, ++h)
          base[static_cast<std::size_t>(h)] = img + q;
      else
        for (i64 q = c0, h = 0; q < c1; q += half, ++h) base[static_cast<std::size_t>(h)] = img + (q / OW) * Wq + q % OW;
      float* yg = y + (ni * M + gi * Mg) * P;
      const sgemm::packed_a& wg = w.groups[static_cast<std::size_t>(gi)];
      const float* bg = bias ? bias + gi * Mg : nullptr;
      // the bias added as the micro-kernels store their first depth block
      if (to_y) {
        sgemm::multiply_indirect(ki, wg.data.data(), wg.panel_stride(), Mg, base.data(), off.data(), c1 - c0, CK, yg + c0, P,
                                 false, bg);
        if (ep)
          for (i64 m = 0; m < Mg; ++m) ep->apply((ni * M + gi * Mg + m) * P + c0, c1 - c0);
        continue;
      }
      const i64 n = c1 - c0;
      sgemm::multiply_indirect(ki, wg.data.data(), wg.panel_stride(), Mg, base.data(), off.data(), n, CK, block, n, false, bg);
      // the block's runs of output positions (grid columns below OW) to y
      for (i64 q = c0; q < c1;) {
        const i64 oy = q / Wq, ox = q % Wq;
        if (ox >= OW) {
          q = (oy + 1) * Wq;
          continue;
        }
        const i64 len = std::min(OW - ox, c1 - q), at = oy * OW + ox;
        for (i64 m = 0; m < Mg; ++m) {
          const float* src = block + m * n + (q - c0);
          std::copy(src, src + len, yg + m * P + at);
          if (ep) ep->apply((ni * M + gi * Mg + m) * P + at, len);
        }
        q += len;
      }
    }
  });
}

/// A 1x1 stride-1 unpadded convolution (any rank) reading its input in place: each group's
/// input is already B (Cg rows of P positions), so the micro-kernels read its half panels at
/// a per-channel offset instead of a packed copy; positions past the last whole panel (which
/// would read past the input's end) are packed as usual.
inline void conv_pointwise_in_place(const eigen_cpu& pol, const sgemm::kernel_info& ki, i64 N, i64 C, i64 M, i64 G,
                                    i64 P, const float* x, const packed_filter& w, const float* bias, float* y,
                                    const conv_epilogue* ep, double total) {
  const i64 Cg = C / G, Mg = M / G, nr = ki.nr, half = nr / 2, whole = P / nr * nr;
  std::vector<i64> off(static_cast<std::size_t>(Cg));
  for (i64 ci = 0; ci < Cg; ++ci) off[static_cast<std::size_t>(ci)] = ci * P;
  const i64 cb = conv_task_width(pol, N * G, P, std::min<i64>(Cg, 512), nr, total), CB = (P + cb - 1) / cb;
  const i64 tasks = N * G * CB;
  pol.parallel_for(tasks, total / static_cast<double>(tasks), [&](i64 b, i64 e) {
    std::vector<const float*> base(static_cast<std::size_t>(2 * (cb / nr + 1)));
    for (i64 t = b; t < e; ++t) {
      const i64 cbi = t % CB, gi = (t / CB) % G, ni = t / (CB * G);
      const i64 c0 = cbi * cb, c1 = std::min(P, c0 + cb), cw = std::min(c1, std::max(c0, whole));
      const float* xg = x + (ni * C + gi * Cg) * P;
      float* yg = y + (ni * M + gi * Mg) * P;
      const sgemm::packed_a& wg = w.groups[static_cast<std::size_t>(gi)];
      const float* bg = bias ? bias + gi * Mg : nullptr;
      if (cw > c0) {
        for (i64 q = c0, h = 0; q < cw; q += half, ++h) base[static_cast<std::size_t>(h)] = xg + q;
        sgemm::multiply_indirect(ki, wg.data.data(), wg.panel_stride(), Mg, base.data(), off.data(), cw - c0, Cg, yg + c0,
                                 P, false, bg);
      }
      if (c1 > cw) {  // the ragged last panel, packed
        float* cols = sgemm::scratch(1, Cg * nr);
        sgemm::pack_b(xg + cw, P, false, Cg, c1 - cw, static_cast<int>(nr), cols);
        sgemm::multiply(ki, wg.data.data(), wg.panel_stride(), Mg, cols, Cg * nr, c1 - cw, Cg, yg + cw, P, false, 0, -1, 0,
                        bg);
      }
      if (ep)
        for (i64 m = 0; m < Mg; ++m) ep->apply((ni * M + gi * Mg + m) * P + c0, c1 - c0);
    }
  });
}

/// conv_forward with a packed f32 filter: per task (image, group, block of output positions)
/// im2col writes the block's columns in panel form to a per-thread buffer, and sgemm sets the
/// output block to W_g * columns (plus the bias, added as the micro-kernels store). Stride-1 2-D convolutions
/// with suitable output widths read their input in place instead (`conv_forward_in_place`).
inline void conv_forward_packed(const eigen_cpu& pol, const window_geometry& g, i64 N, i64 C, i64 M, i64 G,
                                const float* x, const packed_filter& w, const float* bias, float* y,
                                const conv_epilogue* ep = nullptr) {
  const i64 P_in = product(g.in), P = product(g.out), Kk = product(g.kernel);
  const i64 Cg = C / G, Mg = M / G, CK = Cg * Kk;
  if (N == 0 || M == 0 || P == 0) return;
  if (P_in == 0) {  // an empty input (padding makes the output): every tap reads padding
    for (i64 i = 0; i < N * M; ++i) std::fill(y + i * P, y + (i + 1) * P, bias ? bias[i % M] : 0.0f);
    if (ep) ep->apply(0, N * M * P);
    return;
  }
  const sgemm::kernel_info& ki = *w.ki;
  bool pointwise = true;
  for (std::size_t d = 0; d < g.in.size(); ++d)
    pointwise = pointwise && g.kernel[d] == 1 && g.strides[d] == 1 && g.pad_begin[d] == 0 && g.pad_end[d] == 0;
  // a strided 1x1 convolution expands nothing: packing its subsampled columns (im2col) reads
  // them faster than the micro-kernels read a phase plane in place (1x1 stride 2, 512 -> 1024
  // channels at 28x28: 2.9 ms packed, 3.7 in place)
  if (!pointwise && Kk > 1 && CK > 0 && conv_grid_pays(g)) {
    const bool whole_half_panels = g.out.back() % (ki.nr / 2) == 0 && P % ki.nr == 0;
    conv_forward_in_place(pol, ki, g, N, C, M, G, x, w, bias, y, ep, !whole_half_panels);
    return;
  }
  const double total = static_cast<double>(N * M * P) * static_cast<double>(std::max<i64>(CK, 1)) * mac_cost;
  // a 1x1 convolution reads its input in place, except with many filters on AVX-512 (one
  // AVX-512 thread, x 112x112 / 56x56: 24 filters 0.77x the packed time, 64 0.96x, 96 1.26x,
  // 144 1.18x, 1280 over 7x7 1.11x; AVX2, 6 x 16 tiles: 0.77-0.86x for each)
  if (pointwise && CK > 0 && P >= ki.nr && (ki.nr <= 16 || M / G <= 64)) {
    conv_pointwise_in_place(pol, ki, N, C, M, G, P, x, w, bias, y, ep, total);
    return;
  }
  const i64 cb = conv_task_width(pol, N * G, P, CK, ki.nr, total), CB = (P + cb - 1) / cb, tasks = N * G * CB;
  pol.parallel_for(tasks, total / static_cast<double>(tasks), [&](i64 b, i64 e) {
    float* cols = sgemm::scratch(1, std::max<i64>(1, sgemm::panels(cb, ki.nr) * CK * ki.nr));
    for (i64 t = b; t < e; ++t) {
      const i64 cbi = t % CB, gi = (t / CB) % G, ni = t / (CB * G);
      const i64 c0 = cbi * cb, c1 = std::min(P, c0 + cb);
      const float* xg = x + (ni * C + gi * Cg) * P_in;
      float* yg = y + (ni * M + gi * Mg) * P;
      if (CK == 0) {
        for (i64 m = 0; m < Mg; ++m) std::fill(yg + m * P + c0, yg + m * P + c1, bias ? bias[gi * Mg + m] : 0.0f);
      } else {
        if (pointwise) sgemm::pack_b(xg + c0, P_in, false, CK, c1 - c0, ki.nr, cols);
        else im2col_panels(xg, g, Cg, c0, c1, ki.nr, cols);
        const sgemm::packed_a& wg = w.groups[static_cast<std::size_t>(gi)];
        // the bias added as the micro-kernels store their first depth block
        sgemm::multiply(ki, wg.data.data(), wg.panel_stride(), Mg, cols, CK * ki.nr, c1 - c0, CK, yg + c0, P, false, 0, -1, 0,
                        bias ? bias + gi * Mg : nullptr);
      }
      if (ep)
        for (i64 m = 0; m < Mg; ++m) ep->apply((ni * M + gi * Mg + m) * P + c0, c1 - c0);
    }
  });
}

/// y[N, M, out...] = conv_transpose(x[N, C, in...], w[C, M/G, k...]) + bias; output
/// position o_d = i_d * s_d + k_d * dil_d - pad_begin_d (outside the computed range: bias).
template <class T>
void conv_transpose_forward(const eigen_cpu& pol, const window_geometry& g, i64 N, i64 C, i64 M, i64 G, const T* x,
                            const T* w, const T* bias, T* y) {
  const std::size_t r = g.in.size();
  const i64 P_in = product(g.in), P = product(g.out), Kk = product(g.kernel);
  const i64 Cg = C / G, Mg = M / G;
  if (N == 0 || M == 0 || P == 0) return;
  const int threads = pol.threads();
  const i64 MB = (threads > 1 && N * G < threads) ? std::min<i64>(threads, Mg) : 1;
  const i64 mb = (Mg + MB - 1) / MB;
  const i64 pcols = std::clamp<i64>((i64{1} << 17) / std::max<i64>(mb * Kk, 1), 16, std::max<i64>(P_in, 1));
  const i64 tasks = N * G * MB;
  const double cost = static_cast<double>(mb * Kk * P_in) * static_cast<double>(std::max<i64>(Cg, 1)) * mac_cost;
  pol.parallel_for(tasks, cost, [&](i64 b, i64 e) {
    std::unique_ptr<T[]> col(new T[static_cast<std::size_t>(std::max<i64>(1, mb * Kk * pcols))]);
    std::vector<i64> kidx(r), ii(r);
    for (i64 t = b; t < e; ++t) {
      const i64 mbi = t % MB, gi = (t / MB) % G, ni = t / (MB * G);
      const i64 m0 = mbi * mb, m1 = std::min(Mg, m0 + mb);
      if (m0 >= m1) continue;
      T* yg = y + (ni * M + gi * Mg) * P;
      for (i64 m = m0; m < m1; ++m) std::fill(yg + m * P, yg + (m + 1) * P, bias ? bias[gi * Mg + m] : T(0));
      const T* xg = x + (ni * C + gi * Cg) * P_in;
      const T* wg = w + gi * Cg * Mg * Kk;
      for (i64 p0 = 0; p0 < P_in; p0 += pcols) {
        const i64 p1 = std::min(P_in, p0 + pcols), width = p1 - p0;
        // col[(m1-m0)*Kk, width] = wg[:, m0*Kk:m1*Kk]^T * xg[:, p0:p1]
        const gemm_args<T> ga{.M = (m1 - m0) * Kk, .N = width, .K = Cg, .a = wg + m0 * Kk, .lda = Mg * Kk, .ta = true,
                              .b = xg + p0, .ldb = P_in, .c = col.get(), .ldc = width};
        gemm_block(ga, 0, ga.M, 0, width);
        for (i64 row = 0; row < (m1 - m0) * Kk; ++row) {
          const i64 m = m0 + row / Kk;
          i64 kr = row % Kk;
          for (std::size_t d = r; d-- > 0;) {
            kidx[d] = kr % g.kernel[d];
            kr /= g.kernel[d];
          }
          T* ym = yg + m * P;
          const T* src = col.get() + row * width;
          i64 q = p0;
          for (std::size_t d = r; d-- > 0;) {
            ii[d] = q % g.in[d];
            q /= g.in[d];
          }
          for (i64 j = 0; j < width; ++j) {
            i64 off = 0;
            bool ok = true;
            for (std::size_t d = 0; d < r; ++d) {
              const i64 o = ii[d] * g.strides[d] + kidx[d] * g.dilations[d] - g.pad_begin[d];
              if (o < 0 || o >= g.out[d]) {
                ok = false;
                break;
              }
              off = off * g.out[d] + o;
            }
            if (ok) ym[off] += src[j];
            for (std::size_t d = r; d-- > 0;) {
              if (++ii[d] < g.in[d]) break;
              ii[d] = 0;
            }
          }
        }
      }
    }
  });
}

// the convolutions' shape checks every executor shares (gpass/exec/nn_rules.hpp)
using nn_rules::check_conv_shapes;
using nn_rules::kernel_of;

template <class T>
const T* bias_of(const context& ctx, std::size_t i, i64 M) {
  if (!ctx.has_input(i)) return nullptr;
  const gpass::tensor& b = ctx.input(i);
  if (b.size() != M) ctx.fail("bias has " + std::to_string(b.size()) + " elements, expected " + std::to_string(M));
  return b.data<T>();
}

// ------------------------------------------------------------------------------------------
// Pooling

enum class pool_kind { max, average, lp };

/// A window geometry padded to 3 spatial dimensions (leading size-1 dimensions) with, per
/// dimension and output index, the first tap position, the range of taps [lo, hi) inside the
/// input, and the count of taps inside the padded input (for count_include_pad).
struct pool_setup {
  /// The taps t in [0, k) whose position first + t * dil lies in [begin, end), as [t0, t1)
  /// (t0 == t1 when none does). `dil` > 0.
  static std::pair<i64, i64> taps_within(i64 first, i64 k, i64 dil, i64 begin, i64 end) {
    auto floor_div = [](i64 a, i64 b) { return a / b - (a % b != 0 && a < 0 ? 1 : 0); };
    const i64 t0 = std::min(k, std::max<i64>(0, -floor_div(first - begin, dil)));
    const i64 t1 = std::min(k, floor_div(end - 1 - first, dil) + 1);
    return {t0, std::max(t0, t1)};
  }

  std::array<i64, 3> in{}, out{}, dil{}, kernel{}, stride{}, pad{};
  std::array<std::vector<i64>, 3> start, lo, hi, padded;
  i64 inner_begin = 0, inner_end = 0;  ///< outputs along the last dimension whose taps are all inside

  /// The taps of output (o0, o1, o2) inside the padded input (AveragePool's count_include_pad
  /// divisor), as a double: with huge kernels the product need not fit in int64.
  double padded_count(i64 o0, i64 o1, i64 o2) const {
    return static_cast<double>(padded[0][static_cast<std::size_t>(o0)]) * static_cast<double>(padded[1][static_cast<std::size_t>(o1)]) *
           static_cast<double>(padded[2][static_cast<std::size_t>(o2)]);
  }

  explicit pool_setup(const window_geometry& g) {
    const std::size_t r = g.in.size(), lead = 3 - r;
    for (std::size_t d = 0; d < 3; ++d) {
      const bool real = d >= lead;
      const std::size_t e = real ? d - lead : 0;
      in[d] = real ? g.in[e] : 1;
      out[d] = real ? g.out[e] : 1;
      dil[d] = real ? g.dilations[e] : 1;
      const i64 k = real ? g.kernel[e] : 1, s = real ? g.strides[e] : 1, pb = real ? g.pad_begin[e] : 0,
                pe = real ? g.pad_end[e] : 0;
      kernel[d] = k;
      stride[d] = s;
      pad[d] = pb;
      // Closed forms, not a walk over the taps: a kernel of 10^8 taps over a 32-wide input
      // costs its output size, not 10^8 per output.
      for (i64 o = 0; o < out[d]; ++o) {
        const i64 first = o * s - pb;
        const auto [l, h] = taps_within(first, k, dil[d], 0, in[d]);
        const auto [pl, ph] = taps_within(first, k, dil[d], -pb, in[d] + pe);
        start[d].push_back(first);
        lo[d].push_back(l);
        hi[d].push_back(h);
        padded[d].push_back(ph - pl);
      }
    }
    inner_begin = 0;
    while (inner_begin < out[2] && (lo[2][inner_begin] != 0 || hi[2][inner_begin] != kernel[2])) ++inner_begin;
    inner_end = inner_begin;
    while (inner_end < out[2] && lo[2][inner_end] == 0 && hi[2][inner_end] == kernel[2]) ++inner_end;
  }
};

/// Max (without indices) or average pooling of one plane, a row of outputs at a time: the
/// interior outputs of a row take each tap in a tight loop over outputs.
template <class T, pool_kind K>
void pool_plane_rows(const pool_setup& s, bool count_include_pad, const T* xp, T* yp, std::vector<compute_t<T>>& acc) {
  using C = compute_t<T>;
  const i64 in1 = s.in[1], in2 = s.in[2], out2 = s.out[2], d2 = s.dil[2], s2 = s.stride[2], k2n = s.kernel[2];
  const i64 ib = s.inner_begin, ie = s.inner_end;
  const i64 *st2 = s.start[2].data(), *lo2 = s.lo[2].data(), *hi2 = s.hi[2].data();
  const C init = K == pool_kind::max ? (std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                                            : std::numeric_limits<C>::lowest())
                                     : C(0);
  acc.resize(static_cast<std::size_t>(out2));
  C* a = acc.data();
  for (i64 o0 = 0; o0 < s.out[0]; ++o0)
    for (i64 o1 = 0; o1 < s.out[1]; ++o1, yp += out2) {
      std::fill(a, a + out2, init);
      i64 rows = 0;
      for (i64 k0 = s.lo[0][o0]; k0 < s.hi[0][o0]; ++k0) {
        const i64 i0 = s.start[0][o0] + k0 * s.dil[0];
        for (i64 k1 = s.lo[1][o1]; k1 < s.hi[1][o1]; ++k1, ++rows) {
          const i64 i1 = s.start[1][o1] + k1 * s.dil[1];
          const T* row = xp + (i0 * in1 + i1) * in2;
          auto edge = [&](i64 o2) {
            for (i64 k2 = lo2[o2]; k2 < hi2[o2]; ++k2) {
              const C v = static_cast<C>(row[st2[o2] + k2 * d2]);
              if constexpr (K == pool_kind::max) a[o2] = std::max(a[o2], v);
              else a[o2] += v;
            }
          };
          for (i64 o2 = 0; o2 < ib; ++o2) edge(o2);
          for (i64 o2 = ie; o2 < out2; ++o2) edge(o2);
          for (i64 k2 = 0; k2 < (ie > ib ? k2n : 0); ++k2) {
            const i64 off = k2 * d2 - s.pad[2];  // (an index: before the row for the first outputs' taps)
            if (s2 == 1) {
              for (i64 o2 = ib; o2 < ie; ++o2) {
                if constexpr (K == pool_kind::max) a[o2] = std::max(a[o2], static_cast<C>(row[off + o2]));
                else a[o2] += static_cast<C>(row[off + o2]);
              }
            } else {
              for (i64 o2 = ib; o2 < ie; ++o2) {
                if constexpr (K == pool_kind::max) a[o2] = std::max(a[o2], static_cast<C>(row[off + o2 * s2]));
                else a[o2] += static_cast<C>(row[off + o2 * s2]);
              }
            }
          }
        }
      }
      for (i64 o2 = 0; o2 < out2; ++o2) {
        const i64 count = rows * (hi2[o2] - lo2[o2]);
        C v = a[o2];
        if constexpr (K == pool_kind::max) {
          if (count == 0) v = C(0);
        } else {
          const double div = count_include_pad ? s.padded_count(o0, o1, o2) : static_cast<double>(count);
          v = div > 0 ? static_cast<C>(v / static_cast<C>(div)) : C(0);
        }
        yp[o2] = static_cast<T>(v);
      }
    }
}

/// Pools one (n, c) plane: `xp` [in...] -> `yp` [out...]; `ip` (Indices, may be null) gets
/// `base` + the spatial position of each maximum.
template <class T, pool_kind K>
void pool_plane(const pool_setup& s, bool count_include_pad, double p, const T* xp, T* yp, std::int64_t* ip, i64 base,
                bool col_major) {
  using C = compute_t<T>;
  const i64 in0 = s.in[0], in1 = s.in[1], in2 = s.in[2], d0 = s.dil[0], d1 = s.dil[1], d2 = s.dil[2];
  const i64 *st0 = s.start[0].data(), *st1 = s.start[1].data(), *st2 = s.start[2].data();
  const i64 *lo0 = s.lo[0].data(), *lo1 = s.lo[1].data(), *lo2 = s.lo[2].data();
  const i64 *hi0 = s.hi[0].data(), *hi1 = s.hi[1].data(), *hi2 = s.hi[2].data();
  const C pc = static_cast<C>(p);
  i64 q = 0;
  for (i64 o0 = 0; o0 < s.out[0]; ++o0)
    for (i64 o1 = 0; o1 < s.out[1]; ++o1)
      for (i64 o2 = 0; o2 < s.out[2]; ++o2, ++q) {
        const i64 a2 = st2[o2], l2 = lo2[o2], h2 = hi2[o2];
        C acc = C(0);
        if constexpr (K == pool_kind::max)
          acc = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::lowest();
        i64 best = -1, count = 0;
        for (i64 k0 = lo0[o0]; k0 < hi0[o0]; ++k0) {
          const i64 i0 = st0[o0] + k0 * d0;
          for (i64 k1 = lo1[o1]; k1 < hi1[o1]; ++k1) {
            const i64 i1 = st1[o1] + k1 * d1;
            // the row's element k2 at xp[at + k2 * d2] (an index: `at` may lie before the row,
            // and a pointer there would be out of bounds, or null plus an offset when x is empty)
            const i64 at = (i0 * in1 + i1) * in2 + a2;
            if constexpr (K == pool_kind::max) {
              if (!ip) {
                for (i64 k2 = l2; k2 < h2; ++k2) acc = std::max(acc, static_cast<C>(xp[at + k2 * d2]));
                count += h2 - l2;
              } else {
                for (i64 k2 = l2; k2 < h2; ++k2) {
                  const C v = static_cast<C>(xp[at + k2 * d2]);
                  if (v > acc || best < 0) {
                    acc = v;
                    const i64 i2 = a2 + k2 * d2;
                    best = col_major ? i0 + in0 * (i1 + in1 * i2) : (i0 * in1 + i1) * in2 + i2;
                  }
                }
              }
            } else if constexpr (K == pool_kind::average) {
              for (i64 k2 = l2; k2 < h2; ++k2) acc += static_cast<C>(xp[at + k2 * d2]);
              count += h2 - l2;
            } else {
              for (i64 k2 = l2; k2 < h2; ++k2) {
                const C v = static_cast<C>(xp[at + k2 * d2]);
                if constexpr (std::is_unsigned_v<C>) acc += static_cast<C>(std::pow(v, pc));
                else acc += static_cast<C>(std::pow(std::abs(v), pc));
              }
            }
          }
        }
        if constexpr (K == pool_kind::average) {
          const double div = count_include_pad ? s.padded_count(o0, o1, o2) : static_cast<double>(count);
          acc = div > 0 ? static_cast<C>(acc / static_cast<C>(div)) : C(0);
        } else if constexpr (K == pool_kind::lp) {
          acc = static_cast<C>(std::pow(static_cast<double>(acc), 1.0 / p));
        } else {
          if (ip ? best < 0 : count == 0) {
            acc = C(0);  // window entirely in padding
            best = 0;
          }
        }
        yp[q] = static_cast<T>(acc);
        if constexpr (K == pool_kind::max)
          if (ip) ip[q] = base + best;
      }
}

/// Pools every (n, c) plane of x [N, C, in...] into y [N, C, out...] (up to 3 spatial
/// dimensions), in parallel over planes.
template <class T>
void pool_forward(const eigen_cpu& pol, const window_geometry& g, pool_kind kind, bool count_include_pad, double p,
                  i64 planes, const T* x, T* y, std::int64_t* indices, bool col_major_indices) {
  const pool_setup s(g);
  const i64 Pin = s.in[0] * s.in[1] * s.in[2], Pout = s.out[0] * s.out[1] * s.out[2];
  double win = 1;  // taps per output at most (those inside the input)
  for (std::size_t d = 0; d < 3; ++d) win *= static_cast<double>(std::min(s.kernel[d], s.in[d]));
  pol.parallel_for(planes, static_cast<double>(Pout) * win * 0.5 + 1.0, [&](i64 b, i64 e) {
    std::vector<compute_t<T>> acc;
    for (i64 pl = b; pl < e; ++pl) {
      const T* xp = x + pl * Pin;
      T* yp = y + pl * Pout;
      std::int64_t* ip = indices ? indices + pl * Pout : nullptr;
      if (kind == pool_kind::max && !ip) pool_plane_rows<T, pool_kind::max>(s, count_include_pad, xp, yp, acc);
      else if (kind == pool_kind::average) pool_plane_rows<T, pool_kind::average>(s, count_include_pad, xp, yp, acc);
      else if (kind == pool_kind::max) pool_plane<T, pool_kind::max>(s, count_include_pad, p, xp, yp, ip, pl * Pin, col_major_indices);
      else if (kind == pool_kind::average) pool_plane<T, pool_kind::average>(s, count_include_pad, p, xp, yp, ip, pl * Pin, false);
      else pool_plane<T, pool_kind::lp>(s, count_include_pad, p, xp, yp, ip, pl * Pin, false);
    }
  });
}

/// Depthwise 3-D convolution (one input channel per group): each output plane is a weighted
/// sum of shifted input planes, a row of outputs at a time (the interior in tight loops).
template <class T>
void conv_depthwise_3d(const eigen_cpu& pol, const window_geometry& g, i64 N, i64 C, i64 M, const T* x, const T* w,
                    const T* bias, T* y) {
  const pool_setup s(g);
  const i64 Pin = s.in[0] * s.in[1] * s.in[2], Pout = s.out[0] * s.out[1] * s.out[2];
  const i64 K0 = s.kernel[0], K1 = s.kernel[1], K2 = s.kernel[2], Kk = K0 * K1 * K2;
  const i64 Mg = M / C;
  pol.parallel_for(N * M, static_cast<double>(Pout * Kk) * 0.3 + 1.0, [&](i64 b, i64 e) {
    const i64 in1 = s.in[1], in2 = s.in[2], out2 = s.out[2], d2 = s.dil[2], s2 = s.stride[2];
    const i64 ib = s.inner_begin, ie = s.inner_end;
    const i64 *st2 = s.start[2].data(), *lo2 = s.lo[2].data(), *hi2 = s.hi[2].data();
    for (i64 pl = b; pl < e; ++pl) {
      const i64 m = pl % M, n = pl / M;
      const T* xp = x + (n * C + m / Mg) * Pin;
      const T* wm = w + m * Kk;
      T* yp = y + pl * Pout;
      const T bv = bias ? bias[m] : T(0);
      for (i64 o0 = 0; o0 < s.out[0]; ++o0)
        for (i64 o1 = 0; o1 < s.out[1]; ++o1, yp += out2) {
          std::fill(yp, yp + out2, bv);
          for (i64 k0 = s.lo[0][o0]; k0 < s.hi[0][o0]; ++k0) {
            const i64 i0 = s.start[0][o0] + k0 * s.dil[0];
            for (i64 k1 = s.lo[1][o1]; k1 < s.hi[1][o1]; ++k1) {
              const i64 i1 = s.start[1][o1] + k1 * s.dil[1];
              const T* row = xp + (i0 * in1 + i1) * in2;
              const T* wk = wm + (k0 * K1 + k1) * K2;
              auto edge = [&](i64 o2) {
                T acc = T(0);
                for (i64 k2 = lo2[o2]; k2 < hi2[o2]; ++k2) acc += wk[k2] * row[st2[o2] + k2 * d2];
                yp[o2] += acc;
              };
              for (i64 o2 = 0; o2 < ib; ++o2) edge(o2);
              for (i64 o2 = ie; o2 < out2; ++o2) edge(o2);
              if (ie <= ib) continue;
              using vec = Eigen::Array<T, Eigen::Dynamic, 1>;
              Eigen::Map<vec> out(yp + ib, ie - ib);
              const T* r = row + ib * s2 - s.pad[2];
              if (s2 == 1) {
                using in_map = Eigen::Map<const vec>;
                if (K2 == 3) {
                  out += wk[0] * in_map(r, ie - ib) + wk[1] * in_map(r + d2, ie - ib) + wk[2] * in_map(r + 2 * d2, ie - ib);
                } else {
                  for (i64 k2 = 0; k2 < K2; ++k2) out += wk[k2] * in_map(r + k2 * d2, ie - ib);
                }
              } else {
                using in_map = Eigen::Map<const vec, Eigen::Unaligned, Eigen::InnerStride<>>;
                const Eigen::InnerStride<> st(s2);
                if (K2 == 3) {
                  out += wk[0] * in_map(r, ie - ib, st) + wk[1] * in_map(r + d2, ie - ib, st) +
                         wk[2] * in_map(r + 2 * d2, ie - ib, st);
                } else {
                  for (i64 k2 = 0; k2 < K2; ++k2) out += wk[k2] * in_map(r + k2 * d2, ie - ib, st);
                }
              }
            }
          }
        }
    }
  });
}

/// `acc[i] = bias + sum_t w[t] * p[t][i]` for i in [0, n) rounded up to a multiple of 16:
/// 16 positions at a time, summed over every tap in registers, stored once; `K` > 0: that many
/// taps, unrolled (the weights held in registers), else `taps` of them; each sum then clamped
/// to [lo, hi] as Clip does (-inf / inf: no activation; 0 / inf: Relu). Reads and writes up
/// to 15 elements past n (the caller's buffers have that slack).
template <class T, int K = 0>
void depthwise_taps(T* __restrict acc, i64 n, const T* const* p, const T* w, i64 taps, T bias, T lo, T hi) {
  constexpr i64 V = 16;
  if constexpr (K > 0) {
    const T* q[K];
    T wt[K];
    for (int t = 0; t < K; ++t) {
      q[t] = p[t];
      wt[t] = w[t];
    }
    for (i64 i0 = 0; i0 < n; i0 += V) {
      T a[V];
      for (i64 k = 0; k < V; ++k) a[k] = bias;
#pragma GCC unroll 32
      for (int t = 0; t < K; ++t)
        for (i64 k = 0; k < V; ++k) a[k] += wt[t] * q[t][i0 + k];
      for (i64 k = 0; k < V; ++k) acc[i0 + k] = std::min(std::max(a[k], lo), hi);
    }
  } else {
    for (i64 i0 = 0; i0 < n; i0 += V) {
      T a[V];
      for (i64 k = 0; k < V; ++k) a[k] = bias;
      for (i64 t = 0; t < taps; ++t) {
        const T* __restrict q = p[t] + i0;
        const T wt = w[t];
        for (i64 k = 0; k < V; ++k) a[k] += wt * q[k];
      }
      for (i64 k = 0; k < V; ++k) acc[i0 + k] = std::min(std::max(a[k], lo), hi);
    }
  }
}

/// The geometry of a 1-D / 2-D depthwise convolution (1-D as one row).
struct depthwise_geometry {
  i64 H, W, KH, KW, sh, sw, dh, dw, ph, pw, Ho, Wo;
};

/// Depthwise convolution of small planes, vectorized over channels instead of positions: `L`
/// output channels at a time, their inputs copied into one zero-padded buffer of L-channel
/// pixels (xb[i][j][lane]), each output pixel the sum of its taps' pixel vectors times the
/// taps' weight vectors, clamped to [lo, hi], its lanes then stored to the L output planes.
/// No per-row work, so a 7x7 plane costs what its 49 pixels cost. `ep` (when not null) is
/// applied to each output plane after.
template <class T>
void conv_depthwise_blocked(const eigen_cpu& pol, const depthwise_geometry& d, i64 N, i64 C, i64 M, const T* x,
                            const T* w, const T* bias, T* y, T lo, T hi, const conv_epilogue* ep) {
  constexpr i64 L = 8;
  typedef T vec __attribute__((vector_size(L * sizeof(T))));  // one pixel's L channels
  const i64 Mg = M / C, Kk = d.KH * d.KW, P = d.Ho * d.Wo, Pin = d.H * d.W;
  // the padded rows and columns any tap reads: from -pad to (out - 1) * stride + (k - 1) * dilation - pad
  const i64 Hp = (d.Ho - 1) * d.sh + (d.KH - 1) * d.dh + 1, Wp = (d.Wo - 1) * d.sw + (d.KW - 1) * d.dw + 1;
  const i64 MB = (M + L - 1) / L;
  std::vector<i64> tap(static_cast<std::size_t>(Kk));  // tap t's pixel offset in xb
  for (i64 ky = 0; ky < d.KH; ++ky)
    for (i64 kx = 0; kx < d.KW; ++kx) tap[static_cast<std::size_t>(ky * d.KW + kx)] = ky * d.dh * Wp + kx * d.dw;
  // the input rows / columns inside the padded window
  const i64 r0 = std::min(d.ph, Hp), r1 = std::clamp<i64>(d.ph + d.H, r0, Hp);
  const i64 c0 = std::min(d.pw, Wp), c1 = std::clamp<i64>(d.pw + d.W, c0, Wp);
  // r[k][c] <-> r[c][k] (unpack pairs, then quads, then the 128-bit halves)
  auto transpose8 = [](vec* r) {
    vec t[L], u[L];
    for (int k = 0; k < L; k += 2) {
      t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
      t[k + 1] = __builtin_shufflevector(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int k = 0; k < L; k += 4) {
      u[k] = __builtin_shufflevector(t[k], t[k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[k + 1] = __builtin_shufflevector(t[k], t[k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
      u[k + 2] = __builtin_shufflevector(t[k + 1], t[k + 3], 0, 1, 8, 9, 4, 5, 12, 13);
      u[k + 3] = __builtin_shufflevector(t[k + 1], t[k + 3], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (int k = 0; k < 4; ++k) {
      r[k] = __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
      r[k + 4] = __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
  };
  pol.parallel_for(N * MB, static_cast<double>(L * (P * Kk + Pin)) * 0.3 + 1.0, [&](i64 b, i64 e) {
    // pixels of L channels: the padded input (zero: the padding, never written), the outputs, the weights
    sgemm::aligned_vector<T> buf(static_cast<std::size_t>((Hp * Wp + P + Kk) * L));
    vec* __restrict xb = reinterpret_cast<vec*>(buf.data());
    vec* __restrict yb = xb + Hp * Wp;
    vec* __restrict wv = yb + P;
    const i64* __restrict tp = tap.data();
    for (i64 t = b; t < e; ++t) {
      const i64 n = t / MB, m0 = (t % MB) * L, lanes = std::min(L, M - m0);
      // lanes past M compute on a copy of the last lane's input (their weights zero) and are not stored
      const T* xc[L];
      vec bv{};
      for (i64 c = 0; c < L; ++c) {
        const i64 m = m0 + std::min(c, lanes - 1);
        xc[c] = x + (n * C + m / Mg) * Pin - d.pw;
        for (i64 k = 0; k < Kk; ++k) wv[k][c] = c < lanes ? w[m * Kk + k] : T(0);
        bv[c] = bias && c < lanes ? bias[m] : T(0);
      }
      for (i64 i = r0; i < r1; ++i) {
        const i64 at = (i - d.ph) * d.W;
        vec* dst = xb + i * Wp;
        i64 j = c0;
        for (vec r[L]; j + L <= c1; j += L) {  // 8 columns of the 8 channels, transposed to 8 pixels
          for (i64 c = 0; c < L; ++c) __builtin_memcpy(&r[c], xc[c] + at + j, sizeof(vec));
          transpose8(r);
          for (i64 k = 0; k < L; ++k) dst[j + k] = r[k];
        }
        for (; j < c1; ++j)
          dst[j] = vec{xc[0][at + j], xc[1][at + j], xc[2][at + j], xc[3][at + j], xc[4][at + j], xc[5][at + j],
                       xc[6][at + j], xc[7][at + j]};
      }
      // every output pixel: bias + its taps, clamped as Clip computes std::min(std::max(a, lo), hi)
      auto pixels = [&]<int K>() {
        vec wk[K > 0 ? K : 1];
        i64 to[K > 0 ? K : 1];
        if constexpr (K > 0)
          for (int k = 0; k < K; ++k) {
            wk[k] = wv[k];
            to[k] = tp[k];
          }
        for (i64 oy = 0, q = 0; oy < d.Ho; ++oy)
          for (i64 ox = 0; ox < d.Wo; ++ox, ++q) {
            const vec* px = xb + oy * d.sh * Wp + ox * d.sw;
            vec a = bv;
            if constexpr (K > 0) {
#pragma GCC unroll 32
              for (int k = 0; k < K; ++k) a += wk[k] * px[to[k]];
            } else {
              for (i64 k = 0; k < Kk; ++k) a += wv[k] * px[tp[k]];
            }
            a = a < lo ? vec{} + lo : a;
            yb[q] = hi < a ? vec{} + hi : a;
          }
      };
      if (Kk == 9) pixels.template operator()<9>();
      else if (Kk == 3) pixels.template operator()<3>();
      else pixels.template operator()<0>();
      T* yp = y + (n * M + m0) * P;
      i64 q = 0;
      for (vec r[L]; q + L <= P; q += L) {  // 8 pixels transposed to 8 positions of each channel
        for (i64 k = 0; k < L; ++k) r[k] = yb[q + k];
        transpose8(r);
        for (i64 c = 0; c < lanes; ++c) __builtin_memcpy(yp + c * P + q, &r[c], sizeof(vec));
      }
      for (i64 c = 0; c < lanes; ++c)
        for (i64 qt = q; qt < P; ++qt) yp[c * P + qt] = yb[qt][c];
      if constexpr (std::is_same_v<T, float>)
        if (ep)
          for (i64 c = 0; c < lanes; ++c) ep->apply((n * M + m0 + c) * P, P);
    }
  });
}

/// Depthwise 1-D / 2-D convolution (one input channel per group, `M / C` outputs per channel).
/// Each input plane is copied once into its polyphase planes, zero padded: for strides
/// (sh, sw), plane (py, px) holds the padded input's rows py, py + sh, ... and columns px,
/// px + sw, ..., so that every filter tap (ky, kx) reads one of those planes at a constant
/// offset from the output position, with unit stride. The output plane is then a few flat
/// passes over a row-padded accumulator (no edge cases, any stride, dilation or padding),
/// whose valid columns are copied out (through `ep` when given, for f32). Returns whether it
/// applied `ep`.
template <class T>
bool conv_depthwise(const eigen_cpu& pol, const window_geometry& g, i64 N, i64 C, i64 M, const T* x, const T* w,
                    const T* bias, T* y, const conv_epilogue* ep) {
  if (g.in.size() > 2) {
    conv_depthwise_3d(pol, g, N, C, M, x, w, bias, y);
    return false;
  }
  const bool one_d = g.in.size() == 1;
  auto at = [&](const std::vector<i64>& v, std::size_t d, i64 unit) { return one_d ? (d == 0 ? unit : v[0]) : v[d]; };
  const i64 H = at(g.in, 0, 1), W = at(g.in, 1, 1), KH = at(g.kernel, 0, 1), KW = at(g.kernel, 1, 1);
  const i64 sh = at(g.strides, 0, 1), sw = at(g.strides, 1, 1), dh = at(g.dilations, 0, 1), dw = at(g.dilations, 1, 1);
  const i64 ph = at(g.pad_begin, 0, 0), pw = at(g.pad_begin, 1, 0), Ho = at(g.out, 0, 1), Wo = at(g.out, 1, 1);
  const i64 Kk = KH * KW, Mg = M / C;
  // an f32 epilogue of Relu or Clip (or none) without a residual: applied as the sums are stored
  // (no clamp: the type's whole range, infinities included)
  T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  if constexpr (std::numeric_limits<T>::has_infinity) {
    lo = -std::numeric_limits<T>::infinity();
    hi = std::numeric_limits<T>::infinity();
  }
  bool clamped = false;
  if constexpr (std::is_same_v<T, float>) {
    using A = fused_activation::kind;
    if (ep && !ep->z && (ep->act.k == A::none || ep->act.k == A::relu || ep->act.k == A::clip)) {
      clamped = true;
      if (ep->act.k == A::relu) lo = 0.0f;
      if (ep->act.k == A::clip) {
        lo = static_cast<float>(ep->act.a);
        hi = static_cast<float>(ep->act.b);
      }
    }
  }
  // short output rows: vectorized over channels, where the per-row work of the planes below
  // costs more than the taps (one thread, AVX2, 3x3 filters: 960 channels 7x7 0.66x the
  // planes' time, 576 14x14 -> 7x7 stride 2 0.49x, 192 28x28 -> 14x14 stride 2 0.84x; 384
  // 14x14 at stride 1 1.1x, 144 56x56 2.4x)
  {
    const double hp = static_cast<double>(Ho - 1) * static_cast<double>(sh) + static_cast<double>(KH - 1) * static_cast<double>(dh) + 1.0;
    const double wp = static_cast<double>(Wo - 1) * static_cast<double>(sw) + static_cast<double>(KW - 1) * static_cast<double>(dw) + 1.0;
    const bool short_rows = Wo <= 7 || (sh * sw > 1 && Wo <= 14);
    if constexpr (std::is_same_v<T, float>) {
      if (short_rows && hp * wp <= 4.0 * static_cast<double>(H * W + Ho * Wo) + 65536.0) {
        conv_depthwise_blocked(pol, depthwise_geometry{H, W, KH, KW, sh, sw, dh, dw, ph, pw, Ho, Wo}, N, C, M, x, w, bias, y,
                               lo, hi, clamped ? nullptr : ep);
        return true;
      }
    }
  }
  // tap (ky, kx) reads plane ((ky*dh) % sh, (kx*dw) % sw) at row offset (ky*dh) / sh and
  // column offset (kx*dw) / sw; the planes have Wq columns (at least Wo + the largest column
  // offset) and Hq rows (one more than the largest row read, for the garbage columns of the
  // last row)
  const i64 oy_max = (KH - 1) * dh / sh, ox_max = (KW - 1) * dw / sw;
  const auto Wq = checked_add(Wo, ox_max), Hq = Wq ? checked_add(Ho, oy_max + 1) : std::nullopt;
  const auto plane = Hq ? checked_mul(*Hq, *Wq) : std::nullopt, n_acc = Wq ? checked_mul(Ho, *Wq) : std::nullopt;
  // the phases some tap reads, and each tap's phase slot and offset in it
  std::vector<std::pair<i64, i64>> phases;
  for (i64 ky = 0; ky < KH; ++ky)
    for (i64 kx = 0; kx < KW; ++kx) phases.emplace_back((ky * dh) % sh, (kx * dw) % sw);
  std::sort(phases.begin(), phases.end());
  phases.erase(std::unique(phases.begin(), phases.end()), phases.end());
  const i64 slots = static_cast<i64>(phases.size());
  const auto slot_elems = plane ? checked_mul(slots, *plane) : std::nullopt;
  const auto scratch = slot_elems && n_acc ? checked_add(*slot_elems, *n_acc) : std::nullopt;
  // geometry whose planes would be much larger than the input and output planes (huge
  // dilations over huge pads): the direct loops, which need no scratch
  if (!scratch || *scratch > 4 * (H * W + Ho * Wo) + 65536) {
    conv_depthwise_3d(pol, g, N, C, M, x, w, bias, y);
    return false;
  }
  std::vector<i64> offset(static_cast<std::size_t>(Kk)), slot(static_cast<std::size_t>(Kk));
  for (i64 ky = 0; ky < KH; ++ky)
    for (i64 kx = 0; kx < KW; ++kx) {
      const std::size_t t = static_cast<std::size_t>(ky * KW + kx);
      const std::pair<i64, i64> ph_of{(ky * dh) % sh, (kx * dw) % sw};
      slot[t] = std::lower_bound(phases.begin(), phases.end(), ph_of) - phases.begin();
      offset[t] = ((ky * dh) / sh) * *Wq + (kx * dw) / sw;
    }
  // per phase, the plane columns j with 0 <= j*sw + px - pw < W (both numerators are >= 0)
  std::vector<std::pair<i64, i64>> cols;
  for (const auto& [py, px] : phases) {
    const i64 c0 = std::clamp<i64>((pw - px + sw - 1) / sw, 0, *Wq);
    cols.emplace_back(c0, std::clamp<i64>((W + pw - px + sw - 1) / sw, c0, *Wq));
  }
  pol.parallel_for(N * M, static_cast<double>(Ho * Wo * Kk) * 0.3 + static_cast<double>(H * W) * 0.2 + 1.0,
                   [&](i64 b, i64 e) {
    std::vector<T> buf(static_cast<std::size_t>(*scratch + 32));  // + the 16-wide passes' slack
    T* planes = buf.data();
    T* acc = planes + slots * *plane;
    std::vector<const T*> src(static_cast<std::size_t>(Kk));
    i64 loaded = -1;  // the input plane the polyphase planes hold
    for (i64 pl = b; pl < e; ++pl) {
      const i64 m = pl % M, n = pl / M, ci = n * C + m / Mg;
      if (ci != loaded) {
        const T* xp = x + ci * H * W;
        // plane row by plane row, the phases (sorted by row phase, then column phase) in
        // turn: the input rows are read once each, in order, every column phase of a row
        // while it is in L1. Only the positions that read the input are written: the
        // padding is the same for every plane, zero since `buf` was made.
        for (i64 r = 0; r < *Hq; ++r)
          for (i64 k = 0; k < slots; ++k) {
            const auto [py, px] = phases[static_cast<std::size_t>(k)];
            const auto [c0, c1] = cols[static_cast<std::size_t>(k)];
            const i64 row = r * sh + py - ph;
            if (row < 0 || row >= H) continue;
            T* __restrict q = planes + k * *plane + r * *Wq;
            const T* __restrict xr = xp + row * W + (px - pw);  // plane column j reads input column j*sw + px - pw
            if (sw == 1) for (i64 j = c0; j < c1; ++j) q[j] = xr[j];
            else if (sw == 2) for (i64 j = c0; j < c1; ++j) q[j] = xr[2 * j];
            else for (i64 j = c0; j < c1; ++j) q[j] = xr[j * sw];
          }
        loaded = ci;
      }
      for (std::size_t t = 0; t < src.size(); ++t) src[t] = planes + slot[t] * *plane + offset[t];
      const T bm = bias ? bias[m] : T(0);
      if (Kk == 9) depthwise_taps<T, 9>(acc, *n_acc, src.data(), w + m * Kk, Kk, bm, lo, hi);  // 3 x 3
      else if (Kk == 25) depthwise_taps<T, 25>(acc, *n_acc, src.data(), w + m * Kk, Kk, bm, lo, hi);  // 5 x 5
      else depthwise_taps(acc, *n_acc, src.data(), w + m * Kk, Kk, bm, lo, hi);
      T* yp = y + pl * Ho * Wo;
      for (i64 r = 0; r < Ho; ++r) {
        const T* __restrict from = acc + r * *Wq;
        T* __restrict to = yp + r * Wo;
        for (i64 j = 0; j < Wo; ++j) to[j] = from[j];
      }
      if constexpr (std::is_same_v<T, float>)
        if (ep && !clamped) ep->apply(pl * Ho * Wo, Ho * Wo);
    }
  });
  return std::is_same_v<T, float>;
}

// ------------------------------------------------------------------------------------------
// Quantized helpers

/// The values of a zero point / scale input as a vector (broadcast per row/column/channel).
template <class R>
std::vector<R> values_as(const context& ctx, std::size_t i, R fallback) {
  if (!ctx.has_input(i)) return {fallback};
  const gpass::tensor& t = ctx.input(i);
  std::vector<R> r(static_cast<std::size_t>(t.size()));
  visit_dtype(t.element_type(), [&]<class S>() {
    if constexpr (std::is_arithmetic_v<S>) {
      const S* p = t.data<S>();
      for (std::size_t k = 0; k < r.size(); ++k) r[k] = static_cast<R>(p[k]);
    } else if constexpr (std::is_same_v<S, Eigen::half> || std::is_same_v<S, Eigen::bfloat16>) {  // scales of opset 21
      const S* p = t.data<S>();
      for (std::size_t k = 0; k < r.size(); ++k) r[k] = static_cast<R>(static_cast<float>(p[k]));
    } else {
      ctx.fail("input " + std::to_string(i) + " has unsupported type " + std::string(to_string(t.element_type())));
    }
  });
  if (r.empty()) ctx.fail("input " + std::to_string(i) + " is empty");
  return r;
}

/// int32 copy of an 8-bit tensor minus a zero point (scalar, or one per `group` of `inner`
/// consecutive elements: per row / per channel), or per `inner`-periodic element (per column).
inline std::vector<std::int32_t> shifted_int32(const context& ctx, const gpass::tensor& t, const std::vector<std::int32_t>& zp,
                                               i64 outer_block, i64 period) {
  check_scratch(ctx, checked_bytes(t.size(), sizeof(std::int32_t)), "the int32 copy of an 8-bit input");
  std::vector<std::int32_t> r(static_cast<std::size_t>(t.size()));
  auto run = [&]<class S>() {
    const S* p = t.data<S>();
    const i64 n = t.size();
    for (i64 k = 0; k < n; ++k) {
      std::int32_t z = zp[0];
      if (zp.size() > 1) z = period > 0 ? zp[static_cast<std::size_t>(k % period)] : zp[static_cast<std::size_t>((k / outer_block) % static_cast<i64>(zp.size()))];
      r[static_cast<std::size_t>(k)] = static_cast<std::int32_t>(p[k]) - z;
    }
  };
  if (t.element_type() == dtype::uint8) run.template operator()<std::uint8_t>();
  else if (t.element_type() == dtype::int8) run.template operator()<std::int8_t>();
  else ctx.fail("expected an int8 or uint8 tensor, got " + std::string(to_string(t.element_type())));
  return r;
}

/// Bytes of int32 accumulators for an output of `sizes` (nullopt past size_t), for
/// `check_scratch`: they are scratch the size of the output, which an integer product or
/// convolution may make far larger than its inputs (K = 0, or large pads).
inline std::optional<std::size_t> int32_bytes(std::span<const i64> sizes) {
  const auto n = checked_num_elements(sizes);
  return n ? checked_bytes(*n, sizeof(std::int32_t)) : std::nullopt;
}

/// Writes saturate(round_half_even(acc * scale) + zero_point) into `out` of type uint8/int8.
template <class Q>
Q requantize(float v, std::int32_t zp) {
  const float lo = static_cast<float>(std::numeric_limits<Q>::lowest()), hi = static_cast<float>(std::numeric_limits<Q>::max());
  if (std::isnan(v)) return static_cast<Q>(std::clamp(static_cast<float>(zp), lo, hi));  // (NaN would convert to any value)
  const float r = std::nearbyint(v) + static_cast<float>(zp);
  return static_cast<Q>(std::clamp(r, lo, hi));
}

// ------------------------------------------------------------------------------------------
// Einsum

/// One operand or intermediate of an Einsum contraction: contiguous values in the compute
/// type, one distinct label per dimension.
template <class C>
struct einsum_term {
  std::vector<int> labels;
  std::vector<i64> sizes;
  std::vector<C> values;
};

/// The values of `t` with its dimensions in the label order `to` (a permutation of its labels).
template <class C>
std::vector<C> einsum_permuted(const einsum_term<C>& t, const std::vector<int>& to) {
  const auto [sz, pst] = einsum_rules::permuted_view({t.labels, t.sizes}, to);
  std::vector<C> r(t.values.size());
  strided_walker<1> w(sz, {pst});
  w.seek(0);
  for (std::size_t i = 0; i < r.size(); ++i, w.next()) r[i] = t.values[static_cast<std::size_t>(w.offset(0))];
  return r;
}

/// Einsum as `einsum_rules::schedule` says (numpy's and ONNX Runtime's optimizing einsum):
/// each operand's sums, then the pairwise batched products, then the last term read into `y`;
/// the operand terms, permuted copies and intermediates each counted against max_tensor_bytes.
template <class T>
void einsum_contract(context& ctx, const std::vector<const gpass::tensor*>& ins, const einsum_rules::schedule& plan, gpass::tensor& y) {
  using C = compute_t<T>;
  const std::size_t nin = ins.size();
  auto check = [&](const std::vector<i64>& sizes, const std::string& what) {
    double n = sizeof(C);
    for (i64 s : sizes) n *= static_cast<double>(s);
    check_scratch(ctx, n, what);
  };
  std::vector<einsum_term<C>> terms(nin);
  for (std::size_t k = 0; k < nin; ++k) {
    const einsum_rules::operand_step& op = plan.operands[k];
    einsum_term<C>& t = terms[k];
    t.labels = op.t.labels;
    t.sizes = op.t.sizes;
    check(t.sizes, "Einsum operand " + std::to_string(k));
    t.values.assign(static_cast<std::size_t>(product(t.sizes)), C(0));
    const i64 nsum = op.summed();
    if (t.values.empty() || nsum == 0) continue;
    const T* src = ins[k]->data<T>();
    strided_walker<1> w(op.walk, {op.strides});
    w.seek(0);
    for (C& v : t.values) {
      C acc = C(0);
      for (i64 s = 0; s < nsum; ++s, w.next()) acc = mul_add(acc, C(1), static_cast<C>(src[w.offset(0)]));
      v = acc;
    }
  }

  const eigen_cpu& pol = ctx.policy();
  for (const einsum_rules::pair_step& ps : plan.pairs) {
    const einsum_term<C>& a = terms[ps.a];
    const einsum_term<C>& b = terms[ps.b];
    std::vector<C> a_copy, b_copy;
    if (!ps.a_to.empty()) {
      check(a.sizes, "Einsum transposed operand");
      a_copy = einsum_permuted(a, ps.a_to);
    }
    if (!ps.b_to.empty()) {
      check(b.sizes, "Einsum transposed operand");
      b_copy = einsum_permuted(b, ps.b_to);
    }
    const C* ap = a_copy.empty() ? a.values.data() : a_copy.data();
    const C* bp = b_copy.empty() ? b.values.data() : b_copy.data();
    einsum_term<C> r;
    r.labels = ps.r.labels;
    r.sizes = ps.r.sizes;
    check(r.sizes, "Einsum intermediate");
    r.values.assign(static_cast<std::size_t>(product(r.sizes)), C(0));
    const i64 M = ps.M, N = ps.N, K = ps.K;
    const bool ta = ps.ta, tb = ps.tb;
    if (!r.values.empty() && K > 0) {
      C* rp = r.values.data();
      const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
      auto one = [&](i64 i, bool par) {
        const C* ai = ap + i * M * K;
        const C* bi2 = bp + i * K * N;
        C* ci = rp + i * M * N;
        if (work >= 4096) {
          gemm<C>(pol, {.M = M, .N = N, .K = K, .a = ai, .lda = ta ? M : K, .ta = ta, .b = bi2, .ldb = tb ? K : N, .tb = tb, .c = ci, .ldc = N},
                  par);
          return;
        }
        for (i64 m = 0; m < M; ++m)
          for (i64 q = 0; q < N; ++q) {
            C acc = C(0);
            for (i64 k = 0; k < K; ++k)
              acc = mul_add(acc, ta ? ai[k * M + m] : ai[m * K + k], tb ? bi2[q * K + k] : bi2[k * N + q]);
            ci[m * N + q] = acc;
          }
      };
      if (pol.threads() > 1 && ps.nb >= pol.threads()) {
        pol.parallel_for(ps.nb, work * mac_cost + 8, [&](i64 s, i64 e) {
          for (i64 i = s; i < e; ++i) one(i, false);
        });
      } else {
        for (i64 i = 0; i < ps.nb; ++i) one(i, true);
      }
    }
    terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(ps.b));
    terms[ps.a] = std::move(r);
  }

  // the last term has the output's labels
  const einsum_term<C>& t = terms[0];
  T* yp = y.data<T>();
  strided_walker<1> w(y.sizes(), {plan.out_strides});
  w.seek(0);
  for (i64 i = 0; i < y.size(); ++i, w.next())
    yp[i] = t.values.empty() ? T(0) : static_cast<T>(t.values[static_cast<std::size_t>(w.offset(0))]);
}

/// Determinant of an n x n row-major matrix (LU with partial pivoting, in double).
inline double determinant(std::vector<double>& a, i64 n) {
  double det = 1.0;
  for (i64 c = 0; c < n; ++c) {
    i64 piv = c;
    for (i64 r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[piv * n + c])) piv = r;
    if (a[piv * n + c] == 0.0) return 0.0;
    if (piv != c) {
      for (i64 k = 0; k < n; ++k) std::swap(a[c * n + k], a[piv * n + k]);
      det = -det;
    }
    const double d = a[c * n + c];
    det *= d;
    for (i64 r = c + 1; r < n; ++r) {
      const double f = a[r * n + c] / d;
      if (f == 0.0) continue;
      for (i64 k = c + 1; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
    }
  }
  return det;
}

using gemm_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int32_t, std::int64_t, std::uint32_t,
                             std::uint64_t>;
using conv_types = type_list<float, double, Eigen::half, Eigen::bfloat16>;
using maxpool_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::uint8_t>;
using einsum_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int32_t, std::int64_t, std::uint32_t, std::uint64_t>;

/// The common part of Conv and ConvTranspose: checks the bias type, allocates output 0 of
/// `ys`, and calls `forward.template operator()<U>(x, w, bias, y)` on the element pointers
/// (bias null when absent); f16/bf16 run in float on converted copies.
template <class F>
void run_conv_like(context& ctx, const gpass::tensor& x, const gpass::tensor& w, const std::vector<i64>& ys, i64 M,
                   const char* op, F&& forward) {
  dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
    if (ctx.has_input(2) && ctx.input(2).element_type() != x.element_type())
      ctx.fail(std::string(op) + " B has a different element type");
    const T* bias = bias_of<T>(ctx, 2, M);
    gpass::tensor& y = ctx.allocate_output(0, x.element_type(), ys);
    if (y.size() == 0) return;
    if constexpr (half_like<T>) {
      gpass::tensor xf = convert_tensor<float, T>(x), wf = convert_tensor<float, T>(w), bf;
      if (bias) bf = convert_tensor<float, T>(ctx.input(2));
      gpass::tensor yf = gpass::tensor::uninitialized(dtype::f32, ys);
      forward.template operator()<float>(xf.data<float>(), wf.data<float>(), bias ? bf.data<float>() : nullptr,
                                         yf.data<float>());
      const float* src = yf.data<float>();
      T* dst = y.data<T>();
      for (i64 i = 0; i < y.size(); ++i) dst[i] = static_cast<T>(src[i]);
    } else {
      forward.template operator()<T>(x.data<T>(), w.data<T>(), bias, y.data<T>());
    }
  });
}

// ---- kernels --------------------------------------------------------------------------------

/// ONNX Runtime's FusedMatMul (com.microsoft): alpha * op(A) x op(B), op permuting the operand
/// as `fused_matmul_perm` says (transBatch: the first dimension behind the batch ones; trans:
/// the last two swapped).
inline void add_fused_matmul(registry& r) {
  using L = type_list<float, double, Eigen::half, Eigen::bfloat16>;
  r.add({.domain = "com.microsoft", .op = "FusedMatMul", .dtypes = L::dtypes(), .make = [](const kernel_node& n) -> fn {
           const double alpha = n.attr<double>("alpha", 1.0);
           const bool ta = n.attr<i64>("transA", 0) != 0, tb = n.attr<i64>("transB", 0) != 0;
           const bool tba = n.attr<i64>("transBatchA", 0) != 0, tbb = n.attr<i64>("transBatchB", 0) != 0;
           return [=](context& ctx) {
             const gpass::tensor& a = ctx.input(0);
             const gpass::tensor& b = ctx.input(1);
             if (a.element_type() != b.element_type()) ctx.fail("FusedMatMul inputs have different element types");
             if ((tba || tbb) && (a.rank() < 3 || a.rank() != b.rank()))
               ctx.fail("transBatchA / transBatchB need inputs of one rank >= 3 (as ONNX Runtime), got " + a.shape().to_string() + " and " +
                        b.shape().to_string());
             dispatch<L>(a.element_type(), ctx.node(), [&]<class T>() {
               using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
               // the operands in C, read through their permutations
               auto prep = [&](const gpass::tensor& t, bool tbatch, bool tr) {
                 const auto perm = fused_matmul_perm(t.rank(), tbatch, tr);
                 const auto st = strides_of(t.sizes());
                 std::vector<i64> sz(t.rank()), pst(t.rank());
                 for (std::size_t k = 0; k < t.rank(); ++k) {
                   sz[k] = t.sizes()[perm[k]];
                   pst[k] = st[perm[k]];
                 }
                 gpass::tensor o = gpass::tensor::uninitialized(dtype_of_v<C>, sz);
                 const T* src = t.data<T>();
                 C* dst = o.data<C>();
                 strided_walker<1> w(sz, {pst});
                 w.seek(0);
                 for (i64 i = 0; i < o.size(); ++i, w.next()) dst[i] = static_cast<C>(src[w.offset(0)]);
                 return o;
               };
               const gpass::tensor ac = prep(a, tba, ta), bc = prep(b, tbb, tb);
               const matmul_shape s = matmul_shapes(ac.sizes(), bc.sizes(), ctx.node());
               gpass::tensor yc = gpass::tensor::uninitialized(dtype_of_v<C>, s.out);
               if (s.K == 0) std::fill_n(yc.data<C>(), yc.size(), C(0));
               else if (yc.size() > 0) batched_matmul<C>(ctx.policy(), s, ac.data<C>(), bc.data<C>(), yc.data<C>());
               gpass::tensor& y = ctx.allocate_output(0, a.element_type(), s.out);
               T* yo = y.data<T>();
               const C* yi = yc.data<C>();
               for (i64 i = 0; i < y.size(); ++i) yo[i] = static_cast<T>(static_cast<C>(alpha) * yi[i]);
             });
           };
         }});
}

inline void add_matmul(registry& r) {
  r.add({.op = "MatMul", .dtypes = gemm_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           // a constant f32 B holding one K x N matrix is packed once here
           packed_constant<sgemm::packed_b> pf;
           if (const gpass::tensor* bc = n.constant_input(1);
               bc && bc->element_type() == dtype::f32 && bc->rank() >= 2 && bc->size() > 0) {
             const auto& bs = bc->sizes();
             const i64 Kb = bs[bs.size() - 2], Nb = bs.back();
             if (Kb * Nb == bc->size()) pf = {*bc, std::make_shared<const sgemm::packed_b>(bc->data<float>(), Nb, false, Kb, Nb)};
           }
           return [pf](context& ctx) {
             const gpass::tensor& a = ctx.input(0);
             const gpass::tensor& b = ctx.input(1);
             if (a.element_type() != b.element_type()) ctx.fail("MatMul inputs have different element types");
             const matmul_shape s = matmul_shapes(a.sizes(), b.sizes(), ctx.node());
             dispatch<gemm_types>(a.element_type(), ctx.node(), [&]<class T>() {
               if (s.K == 0) {
                 ctx.allocate_output_zeroed(0, a.element_type(), s.out);
                 return;
               }
               gpass::tensor& y = ctx.allocate_output(0, a.element_type(), s.out);
               if (y.size() == 0) return;
               if constexpr (half_like<T>) {
                 gpass::tensor af = convert_tensor<float, T>(a), bf = convert_tensor<float, T>(b);
                 gpass::tensor yf = gpass::tensor::uninitialized(dtype::f32, s.out);
                 batched_matmul<float>(ctx.policy(), s, af.data<float>(), bf.data<float>(), yf.data<float>());
                 const float* src = yf.data<float>();
                 T* dst = y.data<T>();
                 for (i64 i = 0; i < y.size(); ++i) dst[i] = static_cast<T>(src[i]);
               } else {
                 // a's batches folded into rows (one row too: the packed GEMV is as fast as Eigen's)
                 if constexpr (std::is_same_v<T, float>) {
                   const i64 rows = s.batches * s.M;
                   if (const sgemm::packed_b* w = pf.match(b); w && s.fold && rows >= 1 && b.rank() >= 2) {
                     packed_gemm(ctx.policy(), *w, a.data<float>(), s.K, false, rows, y.data<float>(), s.N, 1.0f, false,
                                 [](i64, i64, i64, i64) {});
                     return;
                   }
                 }
                 batched_matmul<T>(ctx.policy(), s, a.data<T>(), b.data<T>(), y.data<T>());
               }
             });
           };
         }});
}

inline def gemm_def() {
  return {.op = "Gemm", .dtypes = gemm_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const bool ta = n.attr<i64>("transA", 0) != 0, tb = n.attr<i64>("transB", 0) != 0;
           const double alpha = n.attr<double>("alpha", 1.0), beta = n.attr<double>("beta", 1.0);
           // a constant f32 B (an initializer) is packed once here: op(B) is K x N, column-major
           // in B when transB (B is [N, K]), row-major otherwise (B is [K, N])
           packed_constant<sgemm::packed_b> pf;
           if (const gpass::tensor* bc = n.constant_input(1);
               bc && bc->element_type() == dtype::f32 && bc->rank() == 2 && bc->size() > 0) {
             const i64 Kb = tb ? bc->sizes()[1] : bc->sizes()[0], Nb = tb ? bc->sizes()[0] : bc->sizes()[1];
             pf = {*bc, std::make_shared<const sgemm::packed_b>(bc->data<float>(), bc->sizes()[1], tb, Kb, Nb)};
           }
           return [=](context& ctx) {
             const gpass::tensor& a = ctx.input(0);
             const gpass::tensor& b = ctx.input(1);
             if (a.rank() != 2 || b.rank() != 2)
               ctx.fail("Gemm inputs must be matrices, got " + a.shape().to_string() + " and " + b.shape().to_string());
             if (a.element_type() != b.element_type()) ctx.fail("Gemm inputs have different element types");
             const i64 M = ta ? a.sizes()[1] : a.sizes()[0], K = ta ? a.sizes()[0] : a.sizes()[1];
             const i64 Kb = tb ? b.sizes()[1] : b.sizes()[0], N = tb ? b.sizes()[0] : b.sizes()[1];
             if (K != Kb) ctx.fail("Gemm inner dimensions differ: " + std::to_string(K) + " vs " + std::to_string(Kb));
             const gpass::tensor* c = ctx.has_input(2) && beta != 0.0 ? &ctx.input(2) : nullptr;
             i64 crs = 0, ccs = 0;  // C strides over Y's rows and columns (0: broadcast)
             if (c) {
               if (c->element_type() != a.element_type()) ctx.fail("Gemm C has a different element type");
               const auto& cs = c->sizes();
               if (cs.size() > 2) ctx.fail("Gemm C must have rank <= 2, got " + c->shape().to_string());
               const i64 cr = cs.size() == 2 ? cs[0] : 1, cc = cs.empty() ? 1 : cs.back();
               if ((cr != 1 && cr != M) || (cc != 1 && cc != N))
                 ctx.fail("Gemm C of shape " + c->shape().to_string() + " does not broadcast to [" + std::to_string(M) + "," + std::to_string(N) + "]");
               crs = cr == 1 ? 0 : cc;
               ccs = cc == 1 ? 0 : 1;
             }
             dispatch<gemm_types>(a.element_type(), ctx.node(), [&]<class T>() {
               gpass::tensor& y = ctx.allocate_output(0, a.element_type(), {M, N});
               if (y.size() == 0) return;
               using W = std::conditional_t<half_like<T>, float, T>;
               gpass::tensor af, bf, cf, yf;
               const W *ap, *bp, *cp = nullptr;
               W* yp;
               if constexpr (half_like<T>) {
                 af = convert_tensor<float, T>(a);
                 bf = convert_tensor<float, T>(b);
                 if (c) cf = convert_tensor<float, T>(*c);
                 yf = gpass::tensor::uninitialized(dtype::f32, {M, N});
                 ap = af.data<float>();
                 bp = bf.data<float>();
                 if (c) cp = cf.data<float>();
                 yp = yf.data<float>();
               } else {
                 ap = a.data<T>();
                 bp = b.data<T>();
                 if (c) cp = c->data<T>();
                 yp = y.data<T>();
               }
               // (an integer Gemm takes alpha and beta as integers, as numpy's astype would: a
               // value beyond the type's range must not reach a cast, which is undefined there)
               auto coef = [](double v) {
                 if constexpr (std::is_integral_v<W>) return float_to_int<W>(v);
                 else return static_cast<W>(v);
               };
               const W wbeta = coef(beta);
               const gemm_args<W> g{.M = M, .N = N, .K = K, .a = ap, .lda = a.sizes()[1], .ta = ta, .b = bp,
                                    .ldb = b.sizes()[1], .tb = tb, .c = yp, .ldc = N, .alpha = coef(alpha),
                                    .accumulate = cp != nullptr};
               auto init = [&](i64 r0, i64 r1, i64 c0, i64 c1, bool zero) {
                 if (!cp) {
                   if (zero)
                     for (i64 i = r0; i < r1; ++i) std::fill(yp + i * N + c0, yp + i * N + c1, W(0));
                   return;
                 }
                 for (i64 i = r0; i < r1; ++i) {
                   W* row = yp + i * N;
                   const W* crow = cp + i * crs;
                   if (ccs == 0) {
                     const W v = mul_add(W(0), wbeta, crow[0]);
                     for (i64 j = c0; j < c1; ++j) row[j] = v;
                   } else {
                     for (i64 j = c0; j < c1; ++j) row[j] = mul_add(W(0), wbeta, crow[j]);
                   }
                 }
               };
               bool done = false;
               // any batch on the packed constant (at batch 1, a GEMV, it matches Eigen's built with
               // the same instruction set, and it picks AVX-512 at run time)
               if constexpr (std::is_same_v<T, float>) {
                 if (const sgemm::packed_b* w = pf.match(b); w) {
                   packed_gemm(ctx.policy(), *w, ap, a.sizes()[1], ta, M, yp, N, static_cast<float>(alpha), cp != nullptr,
                               [&](i64 r0, i64 r1, i64 c0, i64 c1) { init(r0, r1, c0, c1, false); });
                   done = true;
                 }
               }
               if (!done) gemm<W>(ctx.policy(), g, [&](i64 r0, i64 r1, i64 c0, i64 c1) { init(r0, r1, c0, c1, false); });
               if constexpr (half_like<T>) {
                 T* dst = y.data<T>();
                 for (i64 i = 0; i < y.size(); ++i) dst[i] = static_cast<T>(yp[i]);
               }
             });
           };
         }};
}

/// A fused op's residual: input `z_input` when given (null otherwise), which must have the
/// result's sizes and element type.
inline const gpass::tensor* fused_residual(const context& ctx, int z_input, const std::vector<i64>& sizes, dtype type) {
  const gpass::tensor* z = z_input >= 0 && ctx.has_input(static_cast<std::size_t>(z_input))
                               ? &ctx.input(static_cast<std::size_t>(z_input))
                               : nullptr;
  if (z && (z->sizes() != sizes || z->element_type() != type))
    ctx.fail("the added input has shape " + gpass::shape::of(z->sizes()).to_string() + ", the result " +
             gpass::shape::of(sizes).to_string());
  return z;
}

/// The output step of gpass's fused ops, over the whole output: y = act(y (+ z)), z input
/// `z_input` when given (the same shape and type as y: a residual).
inline void fused_output_pass(context& ctx, const fused_activation& act, int z_input) {
  gpass::tensor& y = ctx.output(0);
  const gpass::tensor* z = fused_residual(ctx, z_input, y.sizes(), y.element_type());
  if (!z && act.k == fused_activation::kind::none) return;
  dispatch<conv_types>(y.element_type(), ctx.node(), [&]<class T>() {
    T* yp = y.data<T>();
    const T* zp = z ? z->data<T>() : nullptr;
    ctx.policy().parallel_for(y.size(), 2.0, [&](i64 b, i64 e) { fused_output<T>(act, yp + b, zp ? zp + b : nullptr, e - b); });
  });
}

/// Conv, or with `fused` gpass's FusedConv (Conv, plus input 3 when given, through the
/// node's activation): the f32 paths apply that step to each output block as they finish it
/// (`conv_epilogue`), the others over the whole output after.
inline def conv_def(bool fused = false) {
  return {.op = "Conv", .dtypes = conv_types::dtypes(), .make = [fused](const kernel_node& n) -> fn {
           const window_attrs wa = window_attrs::read(n);
           const i64 G = n.attr<i64>("group", 1);
           const fused_activation act = fused ? fused_activation::read(n) : fused_activation{};
           // a constant f32 filter (not depthwise) is packed once here
           packed_constant<packed_filter> pw;
           if (const gpass::tensor* wc = n.constant_input(1);
               wc && wc->element_type() == dtype::f32 && wc->rank() >= 3 && wc->size() > 0 && G >= 1 && wc->sizes()[0] % G == 0) {
             const i64 Mw = wc->sizes()[0], CKw = wc->size() / Mw;
             const bool depthwise = wc->sizes()[1] == 1 && G > 1;
             if (!depthwise) pw = {*wc, std::make_shared<const packed_filter>(wc->data<float>(), Mw, G, CKw)};
           }
           return [=](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const gpass::tensor& w = ctx.input(1);
             if (w.element_type() != x.element_type()) ctx.fail("Conv X and W have different element types");
             check_conv_shapes(x.sizes(), w.sizes(), G, false, ctx.node());
             const auto& xs = x.sizes();
             const window_geometry g = resolve_window(wa, {xs.begin() + 2, xs.end()}, kernel_of(wa, w.sizes(), ctx.node()), ctx.node());
             const i64 N = xs[0], C = xs[1], M = w.sizes()[0];
             std::vector<i64> ys{N, M};
             ys.insert(ys.end(), g.out.begin(), g.out.end());
             // the fused step, when there is one: z checked before the product
             const gpass::tensor* z = fused ? fused_residual(ctx, 3, ys, x.element_type()) : nullptr;
             const bool step = fused && (z || act.k != fused_activation::kind::none);
             bool applied = false;
             // f32 outputs take the step as the blocks are written (half types run in a float copy)
             auto epilogue = [&]<class U>(U* yp) -> std::optional<conv_epilogue> {
               if constexpr (std::is_same_v<U, float>)
                 if (step && x.element_type() == dtype::f32) return conv_epilogue{act, yp, z ? z->data<float>() : nullptr};
               return std::nullopt;
             };
             if (const auto* pk = pw.match(w); pk && x.element_type() == dtype::f32 && C == w.sizes()[1] * G) {
               run_conv_like(ctx, x, w, ys, M, "Conv", [&]<class U>(const U* xp, const U*, const U* bp, U* yp) {
                 if constexpr (std::is_same_v<U, float>) {
                   const std::optional<conv_epilogue> ep = epilogue(yp);
                   conv_forward_packed(ctx.policy(), g, N, C, M, G, xp, *pk, bp, yp, ep ? &*ep : nullptr);
                   applied = ep.has_value();
                 }
               });
             } else {
               run_conv_like(ctx, x, w, ys, M, "Conv", [&]<class U>(const U* xp, const U* wp, const U* bp, U* yp) {
                 const std::optional<conv_epilogue> ep = epilogue(yp);
                 applied = conv_forward<U>(ctx.policy(), g, N, C, M, G, xp, wp, bp, yp, ep ? &*ep : nullptr) && ep.has_value();
               });
             }
             if (step && !applied) fused_output_pass(ctx, act, 3);
           };
         }};
}

// ---- gpass's fused ops (the optimizer's -O3) ---------------------------------------------

// the activation of a fused op: gpass::exec::fused_activation (gpass/exec/fused_activation.hpp)

/// `base` (the kernel of a standard op) as gpass's fused op `op`: output 0 of the standard
/// kernel, plus input `z_input` when given (the same shape: a residual), through the
/// activation of `fused_activation`, in place. With `base_fuses`, the base kernel does that
/// itself (it reads the node's activation): only the name changes.
inline def fused_def(def base, std::string op, int z_input, std::string domain = "gpass", bool base_fuses = false) {
  base.domain = std::move(domain);
  base.op = std::move(op);
  base.since_version = 1;
  if (base_fuses) return base;
  auto make = std::move(base.make);
  base.make = [make, z_input](const kernel_node& n) -> fn {
    fn inner = make(n);
    const fused_activation act = fused_activation::read(n);
    return [inner, act, z_input](context& ctx) {
      inner(ctx);
      fused_output_pass(ctx, act, z_input);
    };
  };
  return base;
}

inline void add_conv_transpose(registry& r) {
  r.add({.op = "ConvTranspose", .dtypes = conv_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           window_attrs wa = window_attrs::read(n);
           wa.ceil_mode = false;
           const i64 G = n.attr<i64>("group", 1);
           const std::vector<i64> output_padding = n.attr<std::vector<i64>>("output_padding", {});
           const std::vector<i64> output_shape = n.attr<std::vector<i64>>("output_shape", {});
           return [=](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const gpass::tensor& w = ctx.input(1);
             if (w.element_type() != x.element_type()) ctx.fail("ConvTranspose X and W have different element types");
             check_conv_shapes(x.sizes(), w.sizes(), G, true, ctx.node());
             const auto& xs = x.sizes();
             const window_geometry g = resolve_transpose_window(wa, output_padding, output_shape, {xs.begin() + 2, xs.end()},
                                                                kernel_of(wa, w.sizes(), ctx.node()), ctx.node());
             const i64 N = xs[0], C = xs[1], M = w.sizes()[1] * G;
             std::vector<i64> ys{N, M};
             ys.insert(ys.end(), g.out.begin(), g.out.end());
             run_conv_like(ctx, x, w, ys, M, "ConvTranspose", [&]<class U>(const U* xp, const U* wp, const U* bp, U* yp) {
               conv_transpose_forward<U>(ctx.policy(), g, N, C, M, G, xp, wp, bp, yp);
             });
           };
         }});
}

/// MaxPool, AveragePool, LpPool.
inline void add_pool(registry& r, const char* op, pool_kind kind, std::vector<dtype> dtypes) {
  r.add({.op = op, .dtypes = std::move(dtypes), .make = [kind](const kernel_node& n) -> fn {
           const window_attrs wa = window_attrs::read(n);
           if (wa.kernel.empty()) n.fail("missing attribute 'kernel_shape'");
           const bool include_pad = n.attr<i64>("count_include_pad", 0) != 0;
           const i64 storage_order = n.attr<i64>("storage_order", 0);
           const double p = static_cast<double>(n.attr<i64>("p", 2));
           if (kind == pool_kind::lp && p <= 0) n.fail("p must be positive");
           return [=](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const auto& xs = x.sizes();
             if (xs.size() < 3) ctx.fail("input must have rank >= 3, got " + x.shape().to_string());
             if (xs.size() > 5) ctx.fail("pooling supports up to 3 spatial dimensions");
             const window_geometry g = resolve_window(wa, {xs.begin() + 2, xs.end()}, wa.kernel, ctx.node());
             std::vector<i64> ys{xs[0], xs[1]};
             ys.insert(ys.end(), g.out.begin(), g.out.end());
             auto run = [&]<class T>() {
               gpass::tensor& y = ctx.allocate_output(0, x.element_type(), ys);
               std::int64_t* idx = nullptr;
               if (kind == pool_kind::max && ctx.num_outputs() > 1 && ctx.output_wanted(1))
                 idx = ctx.allocate_output(1, dtype::int64, ys).template data<std::int64_t>();
               if (y.size() == 0) return;
               pool_forward<T>(ctx.policy(), g, kind, include_pad, p, xs[0] * xs[1], x.data<T>(), y.data<T>(), idx,
                               storage_order != 0);
             };
             if (kind == pool_kind::max) dispatch<maxpool_types>(x.element_type(), ctx.node(), run);
             else dispatch<conv_types>(x.element_type(), ctx.node(), run);
           };
         }});
}

inline void add_global_pool(registry& r, const char* op, pool_kind kind) {
  r.add({.op = op, .dtypes = conv_types::dtypes(), .make = [kind](const kernel_node& n) -> fn {
           const double p = static_cast<double>(n.attr<i64>("p", 2));
           if (kind == pool_kind::lp && p <= 0) n.fail("p must be positive");
           return [=](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const auto& xs = x.sizes();
             if (xs.size() < 2) ctx.fail("input must have rank >= 2, got " + x.shape().to_string());
             std::vector<i64> ys(xs.size(), 1);
             ys[0] = xs[0];
             ys[1] = xs[1];
             const i64 planes = xs[0] * xs[1], P = product(std::span<const i64>(xs).subspan(2));
             dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
               using C = compute_t<T>;
               gpass::tensor& y = ctx.allocate_output(0, x.element_type(), ys);
               const T* xp = x.data<T>();
               T* yp = y.data<T>();
               ctx.policy().parallel_for(planes, static_cast<double>(P) + 1.0, [&](i64 b, i64 e) {
                 for (i64 pl = b; pl < e; ++pl) {
                   const T* s = xp + pl * P;
                   C acc;
                   if constexpr (std::is_same_v<C, T>) {
                     Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> v(s, P);
                     if (kind == pool_kind::max) acc = P ? v.maxCoeff() : C(0);
                     else if (kind == pool_kind::average) acc = P ? v.sum() / static_cast<C>(P) : C(0);
                     else acc = static_cast<C>(std::pow(static_cast<double>(v.abs().pow(static_cast<C>(p)).sum()), 1.0 / p));
                   } else {
                     acc = kind == pool_kind::max ? -std::numeric_limits<C>::infinity() : C(0);
                     for (i64 i = 0; i < P; ++i) {
                       const C v = static_cast<C>(s[i]);
                       if (kind == pool_kind::max) acc = std::max(acc, v);
                       else if (kind == pool_kind::average) acc += v;
                       else acc += static_cast<C>(std::pow(std::abs(static_cast<double>(v)), p));
                     }
                     if (kind == pool_kind::average) acc = P ? acc / static_cast<C>(P) : C(0);
                     if (kind == pool_kind::lp) acc = static_cast<C>(std::pow(static_cast<double>(acc), 1.0 / p));
                     if (kind == pool_kind::max && P == 0) acc = C(0);
                   }
                   yp[pl] = static_cast<T>(acc);
                 }
               });
             });
           };
         }});
}

inline void add_max_unpool(registry& r) {
  r.add({.op = "MaxUnpool", .dtypes = conv_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const window_attrs wa = window_attrs::read(n);
           if (wa.kernel.empty()) n.fail("missing attribute 'kernel_shape'");
           return [=](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const gpass::tensor& ind = ctx.input(1);
             std::optional<std::vector<i64>> requested;
             if (ctx.has_input(2)) requested = int_values(ctx.input(2), ctx.node(), "output_shape");
             const nn_rules::unpool_shapes s = nn_rules::max_unpool_shapes(x.sizes(), ind.sizes(), wa, requested, ctx.node());
             const std::vector<i64> idx = int_values(ind.reshaped({ind.size()}), ctx.node(), "indices");
             dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
               gpass::tensor& y = ctx.allocate_output_zeroed(0, x.element_type(), s.out);
               const T* xp = x.data<T>();
               T* yp = y.data<T>();
               // an index is a flat position in the inferred shape; it lands at the same
               // coordinates of the (possibly larger) output shape; a later one wins
               for (i64 i = 0; i < x.size(); ++i) yp[nn_rules::unpool_offset(idx[static_cast<std::size_t>(i)], s, ctx.node())] = xp[i];
             });
           };
         }});
}

inline void add_einsum(registry& r) {
  r.add({.op = "Einsum", .dtypes = einsum_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const std::string equation = n.attr<std::string>("equation");
           return [=](context& ctx) {
             const std::size_t nin = ctx.num_inputs();
             if (nin == 0) ctx.fail("Einsum needs at least one input");
             std::vector<const gpass::tensor*> ins;
             std::vector<std::size_t> ranks;
             for (std::size_t i = 0; i < nin; ++i) {
               ins.push_back(&ctx.input(i));
               ranks.push_back(ins.back()->rank());
               if (ins.back()->element_type() != ins[0]->element_type()) ctx.fail("Einsum inputs have different element types");
             }
             const einsum_rules::plan plan = einsum_rules::parse(equation, ranks, ctx.node());
             std::vector<std::vector<i64>> sizes;
             for (const gpass::tensor* t : ins) sizes.push_back(t->sizes());
             const std::vector<i64> size = einsum_rules::label_sizes(plan, sizes, ctx.node());
             const std::vector<i64> ys = einsum_rules::output_sizes(plan, size);
             dispatch<einsum_types>(ins[0]->element_type(), ctx.node(), [&]<class T>() {
               gpass::tensor& y = ctx.allocate_output(0, ins[0]->element_type(), ys);
               einsum_contract<T>(ctx, ins, einsum_rules::make_schedule(plan, sizes, size), y);
             });
           };
         }});
}

inline void add_det(registry& r) {
  r.add({.op = "Det", .dtypes = conv_types::dtypes(), .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const auto& xs = x.sizes();
             if (xs.size() < 2 || xs[xs.size() - 1] != xs[xs.size() - 2])
               ctx.fail("Det needs square matrices [..., M, M], got " + x.shape().to_string());
             const i64 m = xs.back();
             std::vector<i64> ys(xs.begin(), xs.end() - 2);
             dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
               gpass::tensor& y = ctx.allocate_output(0, x.element_type(), ys);
               const T* xp = x.data<T>();
               T* yp = y.data<T>();
               if (y.size() == 0) return;  // (no matrices: m may be anything)
               std::vector<double> a(static_cast<std::size_t>(m * m));
               for (i64 b = 0; b < y.size(); ++b) {
                 for (i64 i = 0; i < m * m; ++i) a[static_cast<std::size_t>(i)] = static_cast<double>(static_cast<compute_t<T>>(xp[b * m * m + i]));
                 yp[b] = static_cast<T>(static_cast<compute_t<T>>(determinant(a, m)));
               }
             });
           };
         }});
}

/// Integer product of MatMulInteger / QLinearMatMul: int32 accumulators of (a - azp)(b - bzp).
inline std::vector<std::int32_t> integer_matmul(const context& ctx, const gpass::tensor& a, const gpass::tensor& b,
                                                const std::vector<std::int32_t>& azp, const std::vector<std::int32_t>& bzp,
                                                matmul_shape& s) {
  s = matmul_shapes(a.sizes(), b.sizes(), ctx.node());
  if (azp.size() > 1 && static_cast<i64>(azp.size()) != s.M) ctx.fail("a zero point must be a scalar or have M values");
  if (bzp.size() > 1 && static_cast<i64>(bzp.size()) != s.N) ctx.fail("b zero point must be a scalar or have N values");
  check_scratch(ctx, int32_bytes(s.out), "the int32 accumulators of the product");
  const std::vector<std::int32_t> a32 = shifted_int32(ctx, a, azp, s.K, 0);
  const std::vector<std::int32_t> b32 = shifted_int32(ctx, b, bzp, 1, s.N);
  std::vector<std::int32_t> y(static_cast<std::size_t>(product(s.out)));
  if (!y.empty()) batched_matmul<std::int32_t>(ctx.policy(), s, a32.data(), b32.data(), y.data());
  return y;
}

inline void add_quantized(registry& r) {
  const std::vector<dtype> q8{dtype::uint8, dtype::int8};
  r.add({.op = "MatMulInteger", .since_version = 10, .dtypes = q8, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             matmul_shape s;
             const auto azp = values_as<std::int32_t>(ctx, 2, 0), bzp = values_as<std::int32_t>(ctx, 3, 0);
             std::vector<std::int32_t> acc = integer_matmul(ctx, ctx.input(0), ctx.input(1), azp, bzp, s);
             gpass::tensor& y = ctx.allocate_output(0, dtype::int32, s.out);
             std::copy(acc.begin(), acc.end(), y.data<std::int32_t>());
           };
         }});
  r.add({.op = "QLinearMatMul", .since_version = 10, .dtypes = q8, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             matmul_shape s;
             const auto azp = values_as<std::int32_t>(ctx, 2, 0), bzp = values_as<std::int32_t>(ctx, 5, 0);
             const auto as = values_as<float>(ctx, 1, 1.f), bs = values_as<float>(ctx, 4, 1.f), ysc = values_as<float>(ctx, 6, 1.f);
             const auto yzp = values_as<std::int32_t>(ctx, 7, 0);
             std::vector<std::int32_t> acc = integer_matmul(ctx, ctx.input(0), ctx.input(3), azp, bzp, s);
             if (ysc.size() != 1 || yzp.size() != 1) ctx.fail("y_scale and y_zero_point must be scalars");
             if (as.size() > 1 && static_cast<i64>(as.size()) != s.M) ctx.fail("a_scale must be a scalar or have M values");
             if (bs.size() > 1 && static_cast<i64>(bs.size()) != s.N) ctx.fail("b_scale must be a scalar or have N values");
             const dtype yt = ctx.has_input(7) ? ctx.input(7).element_type() : ctx.input(0).element_type();
             gpass::tensor& y = ctx.allocate_output(0, yt, s.out);
             auto run = [&]<class Q>() {
               Q* yp = y.data<Q>();
               for (std::size_t i = 0; i < acc.size(); ++i) {
                 const i64 col = static_cast<i64>(i) % s.N, row = (static_cast<i64>(i) / s.N) % s.M;
                 const float scale = as[as.size() > 1 ? static_cast<std::size_t>(row) : 0] * bs[bs.size() > 1 ? static_cast<std::size_t>(col) : 0] / ysc[0];
                 yp[i] = requantize<Q>(static_cast<float>(acc[i]) * scale, yzp[0]);
               }
             };
             if (yt == dtype::uint8) run.template operator()<std::uint8_t>();
             else if (yt == dtype::int8) run.template operator()<std::int8_t>();
             else ctx.fail("y_zero_point must be int8 or uint8");
           };
         }});
  auto conv_int = [](context& ctx, const window_attrs& wa, i64 G, std::size_t xi, std::size_t xzi, std::size_t wi,
                     std::size_t wzi, std::size_t bi, std::vector<i64>& ys) {
    const gpass::tensor& x = ctx.input(xi);
    const gpass::tensor& w = ctx.input(wi);
    check_conv_shapes(x.sizes(), w.sizes(), G, false, ctx.node());
    const auto& xs = x.sizes();
    const window_geometry g = resolve_window(wa, {xs.begin() + 2, xs.end()}, kernel_of(wa, w.sizes(), ctx.node()), ctx.node());
    const i64 N = xs[0], C = xs[1], M = w.sizes()[0];
    ys = {N, M};
    ys.insert(ys.end(), g.out.begin(), g.out.end());
    const auto xzp = values_as<std::int32_t>(ctx, xzi, 0), wzp = values_as<std::int32_t>(ctx, wzi, 0);
    if (xzp.size() != 1) ctx.fail("x zero point must be a scalar");
    if (wzp.size() > 1 && static_cast<i64>(wzp.size()) != M) ctx.fail("w zero point must be a scalar or have M values");
    // (large pads made a 1.6 GB accumulator from a 3x52 image: fuzzing)
    check_scratch(ctx, int32_bytes(ys), "the int32 accumulators of the convolution");
    const std::vector<std::int32_t> x32 = shifted_int32(ctx, x, xzp, 1, 0);
    const std::vector<std::int32_t> w32 = shifted_int32(ctx, w, wzp, M ? w.size() / M : 1, 0);
    std::vector<std::int32_t> bias;
    if (bi != 0 && ctx.has_input(bi)) {
      const gpass::tensor& b = ctx.input(bi);
      if (b.element_type() != dtype::int32 || b.size() != M) ctx.fail("bias must be int32 with M values");
      bias.assign(b.data<std::int32_t>(), b.data<std::int32_t>() + M);
    }
    std::vector<std::int32_t> y(static_cast<std::size_t>(product(ys)));
    // computed in uint32, the same bits: the sums (depthwise taps, the bias) wrap as two's
    // complement instead of overflowing int32 (255 * 255 * 33026 taps already does)
    const auto as_u32 = [](const std::vector<std::int32_t>& v) { return reinterpret_cast<const std::uint32_t*>(v.data()); };
    if (!y.empty())
      conv_forward<std::uint32_t>(ctx.policy(), g, N, C, M, G, as_u32(x32), as_u32(w32), bias.empty() ? nullptr : as_u32(bias),
                                  reinterpret_cast<std::uint32_t*>(y.data()));
    return y;
  };
  r.add({.op = "ConvInteger", .since_version = 10, .dtypes = q8, .make = [conv_int](const kernel_node& n) -> fn {
           const window_attrs wa = window_attrs::read(n);
           const i64 G = n.attr<i64>("group", 1);
           return [=](context& ctx) {
             std::vector<i64> ys;
             std::vector<std::int32_t> acc = conv_int(ctx, wa, G, 0, 2, 1, 3, 0, ys);
             gpass::tensor& y = ctx.allocate_output(0, dtype::int32, ys);
             std::copy(acc.begin(), acc.end(), y.data<std::int32_t>());
           };
         }});
  r.add({.op = "QLinearConv", .since_version = 10, .dtypes = q8, .make = [conv_int](const kernel_node& n) -> fn {
           const window_attrs wa = window_attrs::read(n);
           const i64 G = n.attr<i64>("group", 1);
           return [=](context& ctx) {
             std::vector<i64> ys;
             std::vector<std::int32_t> acc = conv_int(ctx, wa, G, 0, 2, 3, 5, 8, ys);
             const auto xs = values_as<float>(ctx, 1, 1.f), ws = values_as<float>(ctx, 4, 1.f), ysc = values_as<float>(ctx, 6, 1.f);
             const auto yzp = values_as<std::int32_t>(ctx, 7, 0);
             const i64 M = ys[1], P = product(std::span<const i64>(ys).subspan(2));
             if (xs.size() != 1 || ysc.size() != 1 || yzp.size() != 1) ctx.fail("x_scale, y_scale and y_zero_point must be scalars");
             if (ws.size() > 1 && static_cast<i64>(ws.size()) != M) ctx.fail("w_scale must be a scalar or have M values");
             const dtype yt = ctx.has_input(7) ? ctx.input(7).element_type() : ctx.input(0).element_type();
             gpass::tensor& y = ctx.allocate_output(0, yt, ys);
             auto run = [&]<class Q>() {
               Q* yp = y.data<Q>();
               for (std::size_t i = 0; i < acc.size(); ++i) {
                 const i64 m = (static_cast<i64>(i) / std::max<i64>(P, 1)) % std::max<i64>(M, 1);
                 const float scale = xs[0] * ws[ws.size() > 1 ? static_cast<std::size_t>(m) : 0] / ysc[0];
                 yp[i] = requantize<Q>(static_cast<float>(acc[i]) * scale, yzp[0]);
               }
             };
             if (yt == dtype::uint8) run.template operator()<std::uint8_t>();
             else if (yt == dtype::int8) run.template operator()<std::int8_t>();
             else ctx.fail("y_zero_point must be int8 or uint8");
           };
         }});
}

}  // namespace linalg

/// Registers the kernels of this family: MatMul, Gemm, Conv, ConvTranspose, MaxPool,
/// AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool, GlobalLpPool, MaxUnpool, Einsum,
/// Det, MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv.
/// \code
///   gpass::exec::kernel_registry<gpass::exec::eigen_cpu> reg;
///   gpass::exec::cpu_detail::register_linalg(reg);
/// \endcode
inline void register_linalg(registry& r) {
  using namespace linalg;
  add_matmul(r);
  r.add(gemm_def());
  r.add(conv_def());
  r.add(fused_def(gemm_def(), "FusedGemm", -1));
  r.add(fused_def(conv_def(true), "FusedConv", 3, "gpass", true));
  // what ONNX Runtime's extended optimizer saves (domain com.microsoft): the same fused ops,
  // and MatMul with transposes and a scale
  r.add(fused_def(gemm_def(), "FusedGemm", -1, "com.microsoft"));
  r.add(fused_def(conv_def(true), "FusedConv", 3, "com.microsoft", true));
  add_fused_matmul(r);
  add_conv_transpose(r);
  add_pool(r, "MaxPool", pool_kind::max, maxpool_types::dtypes());
  add_pool(r, "AveragePool", pool_kind::average, conv_types::dtypes());
  add_pool(r, "LpPool", pool_kind::lp, conv_types::dtypes());
  add_global_pool(r, "GlobalMaxPool", pool_kind::max);
  add_global_pool(r, "GlobalAveragePool", pool_kind::average);
  add_global_pool(r, "GlobalLpPool", pool_kind::lp);
  add_max_unpool(r);
  add_einsum(r);
  add_det(r);
  add_quantized(r);
}

}  // namespace gpass::exec::cpu_detail
