// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file nchwc.hpp
/// f32 convolution and pooling kernels in a channel-blocked layout ("NCHWc"): a 4-D tensor
/// [N, C, H, W] is held as [N, ceil(C / b), H, W, b], each pixel of a channel block `b`
/// contiguous channels (one SIMD register: b = 16 for AVX-512, 8 for AVX2 and the portable
/// kernels), the channels past C zero. In that layout a convolution needs no im2col and no
/// padded copy: an output pixel's `b` channels are one register, a sum over taps and input
/// channels of one broadcast input value times one vector of `b` filter values; depthwise
/// convolutions and pools are sums and maxima of whole pixel vectors.
///
/// What is here:
/// - reorders between NCHW / NHWC and the blocked layout (`to_blocked`, `from_blocked`);
/// - filters packed once for the blocked kernels (`pack_filter`, `pack_depthwise_filter`);
/// - `conv`: a 2-D convolution, blocked input (or NCHW input, for a network's first layers,
///   whose few channels are not worth blocking) to blocked output, any stride, dilation and
///   padding, groups whose channel counts are multiples of b; register tiles of F output
///   blocks x P output pixels (AVX-512 up to 4 x 6 or 2 x 12, AVX2 2 x 6 or 1 x 12) over the
///   output plane taken as one row (a tile may span output rows), cut into tiles of even
///   widths, a tap outside the input read from a block of zeros (so border pixels run in
///   whole tiles);
/// - `winograd`: a 3x3 convolution of stride 1 (blocked input, one group) as Winograd's
///   F(4x4, 3x3): each 4x4 output tile from 36 products over the input channels, 4 times fewer
///   multiply-adds, for a filter transformed once (`pack_winograd_filter`, 4 times the size);
///   `winograd_preferred` says where it is worth the memory;
/// - `conv_depthwise`: one input channel per group, P pixel vectors at a time;
/// - `pool`: max and average pooling (with or without the pads counted), `global_pool`;
/// - every kernel stores through one output step: + z (a residual in the output's layout, for
///   fused additions) and a clamp to [lo, hi] (Relu: [0, inf), Clip, none: [-inf, inf]).
///
/// Kernels exist per instruction set (AVX-512F, AVX2 + FMA, portable C++ for b = 8 and 16),
/// stamped from detail/nchwc_kernels.inl as sgemm.hpp's are; `kernels_for(b)` picks the best
/// one this processor runs for a block size (capped by `GPASS_CPU_ISA`, as sgemm's choice).
/// Each kernel works on a range of independent tasks (output rows), so callers split them
/// across threads with any `parallel_for(n, cost, f(begin, end))`.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/sgemm.hpp>

namespace gpass::exec::cpu_detail::nchwc {

using i64 = std::int64_t;
template <class T>
using aligned_vector = sgemm::aligned_vector<T>;
template <class T>
using packed_vector = sgemm::packed_vector<T>;

inline i64 blocks(i64 c, i64 b) { return (c + b - 1) / b; }

/// A 2-D window over an NCHW input [N, C, H, W] giving an output [N, M, OH, OW].
struct geometry {
  i64 N = 1, C = 0, H = 0, W = 0;
  i64 M = 0, OH = 0, OW = 0;  ///< pools: M = C
  i64 KH = 1, KW = 1;
  i64 sh = 1, sw = 1, dh = 1, dw = 1;
  i64 pt = 0, pl = 0;  ///< top / left pads
  i64 pb = 0, pr = 0;  ///< bottom / right pads (average pooling counting the pads reads them)
  i64 G = 1;           ///< groups (convolutions)
};

/// What every kernel does to a value as it stores it: y = clamp(acc + z, lo, hi), z (when not
/// null) a tensor in the output's blocked layout, not overlapping y (a convolution summing in
/// passes writes partial sums to y before its last pass reads z).
struct output_step {
  const float* z = nullptr;
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

// ------------------------------------------------------------------------------------------
// Reorders (memory bound; one loop for every instruction set)

/// x [N, C, S] (NCHW, S = H * W; or NHWC [N, S, C] when `nhwc`) -> y [N, ceil(C / b), S, b].
inline void to_blocked(const float* x, i64 N, i64 C, i64 S, i64 b, bool nhwc, float* y, i64 t0 = 0, i64 t1 = -1) {
  // tasks: (n, channel block)
  const i64 Cb = blocks(C, b);
  if (t1 < 0) t1 = N * Cb;
  for (i64 t = t0; t < t1; ++t) {
    const i64 n = t / Cb, cb = t % Cb;
    const i64 c0 = cb * b, cn = std::min(b, C - c0);
    float* yb = y + t * S * b;
    if (nhwc) {
      const float* xs = x + n * S * C + c0;
      for (i64 s = 0; s < S; ++s, xs += C, yb += b) {
        i64 l = 0;
        for (; l < cn; ++l) yb[l] = xs[l];
        for (; l < b; ++l) yb[l] = 0.0f;
      }
      continue;
    }
    const float* xc = x + (n * C + c0) * S;
    for (i64 s0 = 0; s0 < S; s0 += 64) {  // 64 pixels of the b planes at a time: each read a run
      const i64 s1 = std::min(S, s0 + 64);
      for (i64 l = 0; l < b; ++l) {
        float* d = yb + s0 * b + l;
        if (l < cn) {
          const float* src = xc + l * S;
          for (i64 s = s0; s < s1; ++s, d += b) *d = src[s];
        } else {
          for (i64 s = s0; s < s1; ++s, d += b) *d = 0.0f;
        }
      }
    }
  }
}

/// y [N, ceil(C / b), S, b] -> x [N, C, S] (or NHWC [N, S, C] when `nhwc`); the channels past C
/// are dropped.
inline void from_blocked(const float* y, i64 N, i64 C, i64 S, i64 b, bool nhwc, float* x, i64 t0 = 0, i64 t1 = -1) {
  const i64 Cb = blocks(C, b);
  if (t1 < 0) t1 = N * Cb;
  for (i64 t = t0; t < t1; ++t) {
    const i64 n = t / Cb, cb = t % Cb;
    const i64 c0 = cb * b, cn = std::min(b, C - c0);
    const float* yb = y + t * S * b;
    if (nhwc) {
      float* xs = x + n * S * C + c0;
      for (i64 s = 0; s < S; ++s, xs += C, yb += b)
        for (i64 l = 0; l < cn; ++l) xs[l] = yb[l];
      continue;
    }
    float* xc = x + (n * C + c0) * S;
    for (i64 s0 = 0; s0 < S; s0 += 64) {
      const i64 s1 = std::min(S, s0 + 64);
      for (i64 l = 0; l < cn; ++l) {
        const float* src = yb + s0 * b + l;
        float* d = xc + l * S;
        for (i64 s = s0; s < s1; ++s, src += b) d[s] = *src;
      }
    }
  }
}

/// x [N, Cb, H, W, b] -> y [N, Cb, OH, OW, b], y's pixel (oh, ow) x's (oh * sh, ow * sw) (of
/// geometry g: what a pointwise convolution of those strides without pads reads; see
/// `subsample_first`). Tasks: output rows (n * Cb + cb) * OH + oh, [t0, t1) of N * Cb * OH.
inline void subsample(const float* x, const geometry& g, i64 b, float* y, i64 t0, i64 t1) {
  for (i64 t = t0; t < t1; ++t) {
    const i64 oh = t % g.OH, plane = t / g.OH;
    const float* src = x + (plane * g.H + oh * g.sh) * g.W * b;
    float* dst = y + t * g.OW * b;
    for (i64 ow = 0; ow < g.OW; ++ow, src += g.sw * b, dst += b) std::copy(src, src + b, dst);
  }
}

// ------------------------------------------------------------------------------------------
// Filters

/// How a convolution reads its input.
enum class conv_input {
  blocked,  ///< [N, ceil(C / b), H, W, b]
  nchw,     ///< [N, C, H, W] as it is (the first layers: C small)
};

/// Whether `conv` computes a convolution of geometry `g` (G groups) reading `in`: one group,
/// or (blocked input) groups whose input and output channels are multiples of b.
inline bool conv_supported(const geometry& g, i64 b, conv_input in) {
  if (g.G == 1) return true;
  if (in != conv_input::blocked || g.G <= 0 || g.C % g.G || g.M % g.G) return false;
  return (g.C / g.G) % b == 0 && (g.M / g.G) % b == 0;
}

/// Output pixels per task of a convolution with blocked input (the plane taken as one row), at
/// most: `conv_segment_for` takes fewer where threads need more tasks.
inline constexpr i64 conv_segment = 96;

/// Passes over the input blocks of a convolution with blocked input (`nb` blocks per group,
/// chunks of `f` output blocks of `b`): a task reads its chunk's filter slice for all input
/// blocks once per register tile, so where that slice is larger than a cache level the sums run
/// in passes over the input blocks (of even sizes), each pass's slice read from cache across
/// the task's tiles, the partial sums kept in y between passes. Slice per pass: 32 KB (L1) for
/// pointwise filters, 144 KB (L2) for wider ones; one pass where a second would be less than
/// half as big. Measured (AVX-512, one thread, against one pass): ResNet50's 1x1 layers 8-14%
/// faster, its 3x3 over 512 channels at 7x7 10%, MobileNetV2's last 1x1 5%, the rest
/// unchanged. Strided pointwise layers (1x1 / 2 shortcuts) keep one pass: passes measured 5-10%
/// slower there (a pass's input pixels spread over twice the lines).
inline i64 conv_passes(const geometry& g, i64 nb, i64 b, i64 f) {
  const bool pointwise = g.KH * g.KW == 1;
  if (pointwise && (g.sh != 1 || g.sw != 1)) return 1;
  const i64 budget = pointwise ? 32 << 10 : 144 << 10;
  const i64 per_pass = std::max<i64>(1, budget / (g.KH * g.KW * b * b * f * 4));  // blocks
  return nb < per_pass * 3 / 2 ? 1 : blocks(nb, per_pass);
}

/// Packed filters (direct, or Winograd's transformed ones) of this many bytes or more are read
/// with the next slice prefetched while one is used (see slice_prefetch in
/// detail/nchwc_kernels.inl): half again past L2 (2 MB on the Xeon measured), they come from L3
/// or memory on every run. Measured (one thread, AVX-512, -O3 -march=x86-64-v3, paired
/// alternating runs against no prefetch, filters from memory): ResNet50's 3x3 512 at 7x7 (9 MB)
/// 0.94-0.95 (from L3: 0.88-0.95), its 1x1 2048 -> 512 and 512 -> 2048 +z at 7x7 (4 MB)
/// 0.90-0.98, its F(2x2) 256 at 14x14 (4 MB) 0.95-1.02 (the best runs 8-17% faster); in
/// ResNet50 at batch 1 (per-node minima of 8 traced runs of each binary, alternating): the 7x7
/// 3x3 layers 0.85, the 7x7 1x1 ones 0.86, the 14x14 F(2x2) ones 0.81, the whole 0.93. Under
/// it the filter stays in L2 and a prefetch only costs: a 3x3 256 at 14x14 (2.4 MB) 1.03-1.04.
inline constexpr double conv_prefetch_bytes = 3 << 20;

/// Output pixels (Winograd: tiles) a task needs for its passes to prefetch: each filter value
/// read from memory takes 4 bytes and feeds one multiply-add a pixel, so on fewer pixels a
/// pass's products end before the next slice could arrive (about 10 GB/s from memory on one
/// core, 160 GFLOP/s of products), and the prefetches only hold up the tile's own loads: in
/// tasks of 25 and 24 pixels (ResNet50's 7x7 layers on 2 threads, as they were cut before
/// conv_segment_for kept such layers' planes whole) prefetching was 10-30% slower than not. At
/// 49 pixels and more, it gains.
inline constexpr i64 conv_prefetch_pixels = 40;

/// The "rows" of a convolution's tasks: runs of `segment` pixels of the output plane (blocked
/// input), output rows (NCHW input).
inline i64 conv_rows(const geometry& g, conv_input in, i64 segment = conv_segment) {
  return in == conv_input::blocked ? blocks(g.OH * g.OW, std::max<i64>(segment, 1)) : g.OH;
}

/// Output blocks per group of a convolution (all of them for G = 1).
inline i64 conv_group_blocks(const geometry& g, i64 b) { return g.G == 1 ? blocks(g.M, b) : g.M / g.G / b; }

/// Whether `conv` with blocked input (blocks of `b`, chunks of `f` output blocks) reads its
/// packed filter in passes that prefetch the next pass's slice, in its tasks of
/// conv_prefetch_pixels or more: more than one pass over the `summed` input blocks a task
/// sums (all of a group's when negative), in a filter of conv_prefetch_bytes or more.
inline bool conv_prefetches_filter(const geometry& g, i64 b, i64 f, i64 summed = -1) {
  const i64 groups = g.G == 1 ? 1 : g.G;
  const i64 nb = blocks(g.C / groups, b);
  const double bytes = static_cast<double>(blocks(g.M, b)) * static_cast<double>(nb * g.KH * g.KW * b * b) * sizeof(float);
  return conv_passes(g, summed < 0 ? nb : summed, b, f) > 1 && bytes >= conv_prefetch_bytes;
}

/// Whether `conv_depthwise` computes it: a group per input channel, one output channel each.
inline bool depthwise_supported(const geometry& g) { return g.G > 1 && g.G == g.C && g.M == g.C; }

/// The filter of `conv` (w [M, C / G, KH, KW]) packed for block b: [ceil(M / b), nb, KH, KW,
/// cb, b], output channels innermost. Blocked input: nb = the input blocks of a group
/// (ceil(C / G / b)), cb = b; NCHW input: nb = 1, cb = C. Values past the channels are zero.
inline packed_vector<float> pack_filter(const float* w, const geometry& g, i64 b, conv_input in) {
  const i64 Cg = g.C / g.G, Mb = blocks(g.M, b), K = g.KH * g.KW;
  const i64 nb = in == conv_input::blocked ? blocks(Cg, b) : 1, cb = in == conv_input::blocked ? b : Cg;
  packed_vector<float> p(static_cast<std::size_t>(std::max<i64>(1, Mb * nb * K * cb * b)), 0.0f);
  for (i64 o = 0; o < g.M; ++o)
    for (i64 c = 0; c < Cg; ++c)
      for (i64 k = 0; k < K; ++k) {
        const i64 ob = o / b, ib = c / cb, ci = c % cb;
        p[static_cast<std::size_t>((((ob * nb + ib) * K + k) * cb + ci) * b + o % b)] = w[(o * Cg + c) * K + k];
      }
  return p;
}

/// The filter of `conv_depthwise` (w [C, 1, KH, KW]) packed as [ceil(C / b), KH, KW, b].
inline packed_vector<float> pack_depthwise_filter(const float* w, const geometry& g, i64 b) {
  const i64 K = g.KH * g.KW;
  packed_vector<float> p(static_cast<std::size_t>(std::max<i64>(1, blocks(g.C, b) * K * b)), 0.0f);
  for (i64 c = 0; c < g.C; ++c)
    for (i64 k = 0; k < K; ++k) p[static_cast<std::size_t>(((c / b) * K + k) * b + c % b)] = w[c * K + k];
  return p;
}

// ------------------------------------------------------------------------------------------
// Winograd F(4x4, 3x3) and F(2x2, 3x3)
//
// A 3x3 convolution of stride 1 computed over m x m output tiles: each tile's (m + 2)^2 input
// patch d becomes V = B^T d B, each channel pair's filter g becomes U = G g G^T (once, when
// packed), the (m + 2)^2 points of a tile are independent products over the input channels,
// M(xi) = sum_c V(xi, c) U(xi, c, m), and the tile's output is A^T M A. F(4x4, 3x3): 36
// multiply-adds per channel pair and tile instead of 144 (4 x 4 pixels x 9 taps); the
// transforms (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", points 0,
// +-1, +-2, +-1/2):
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
// F(2x2, 3x3): 16 multiply-adds for 36 (points 0, +-1, infinity), a transformed filter of 16
// values per channel pair instead of 36:
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
// Rounding: the transforms add a few ulps per value (more than a direct sum, the same order as
// a different summation order); the test `exec.nchwc.winograd_matches_double` bounds it.

/// Output pixels along a tile's side of the default form, F(4x4, 3x3).
inline constexpr i64 wino_m = 4;

/// Points of a tile of side m: its (m + 2) x (m + 2) input patch.
constexpr i64 winograd_points(i64 m) { return (m + 2) * (m + 2); }

/// Whether `winograd` computes a convolution: one group, blocked input, 3x3 taps, stride 1, no
/// dilation (any pads).
inline bool winograd_supported(const geometry& g, conv_input in) {
  return g.G == 1 && in == conv_input::blocked && g.KH == 3 && g.KW == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 &&
         g.dw == 1;
}

/// Bytes of the transformed filter of tiles of side m (`pack_winograd_filter`): (m + 2)^2
/// values per pair of (block-padded) channels.
inline double winograd_filter_bytes(const geometry& g, i64 b, i64 m = wino_m) {
  return 4.0 * static_cast<double>(winograd_points(m)) * static_cast<double>(blocks(g.C, b) * b) *
         static_cast<double>(blocks(g.M, b) * b);
}

/// `GPASS_CONV_WINOGRAD` in the environment: "0" turns Winograd off (every convolution
/// direct, summed in the order of the taps), "4" keeps F(4x4, 3x3) everywhere (no F(2x2)).
inline std::string_view winograd_env() {
  static const std::string value = [] {
    const char* e = std::getenv("GPASS_CONV_WINOGRAD");
    return std::string(e ? e : "");
  }();
  return value;
}

/// Whether a convolution `winograd_supported` runs faster so than directly, for the memory its
/// filter takes (36 values per channel pair, 4 times the direct kernel's 9): always on planes of
/// 12 x 12 pixels or more (on ResNet50's layers, one thread: 2-2.4x faster than the direct
/// kernel at 56x56 and 28x28, 1.3x at 14x14; nchwc_layers), and on smaller ones while the
/// transformed filter stays within 4 MB (at 7x7 over 512 channels it is 1.1x faster, for 28 MB
/// more than the direct filter per layer); never past 64 MB of transformed filter (about 680
/// channels in and out). `GPASS_CONV_WINOGRAD=0` turns it off.
inline bool winograd_preferred(const geometry& g, i64 b) {
  if (winograd_env() == "0") return false;
  const double bytes = winograd_filter_bytes(g, b);
  constexpr double MB = 1 << 20;
  return bytes <= 4 * MB || (g.OH * g.OW >= 144 && bytes <= 64 * MB);
}

/// Output tiles (m x m pixels, the last row and column of tiles cut short) of one image.
inline i64 winograd_tiles(const geometry& g, i64 m = wino_m) { return blocks(g.OH, m) * blocks(g.OW, m); }

/// The tile side of a convolution `winograd_preferred` takes (g.N the batch): 2 where the
/// batch has few F(4x4) tiles (32 or fewer) for a transformed F(4x4) filter past L2 (2 MB),
/// else 4. There the products are bound by reading the transformed filter, once per run from
/// memory, and F(2x2)'s is 16/36 of it, for 2.25x fewer multiply-adds than direct instead of
/// 4x. ResNet50's 14x14 layers at batch 1 (16 tiles of 4x4, 49 of 2x2, 256 channels), the
/// products alone with the filters flushed from the caches (one thread, AVX-512): F(4x4)
/// 987-1022 us, F(2x2) 819-823; with the filters in L3: 649-798 vs 664-871; on 28x28 and
/// larger planes F(4x4) is faster either way (49 tiles: 506 vs 720 cold). Winograd's own
/// points: 4x4 tiles cover a 14x14 plane as 16x16 (30% of the products wasted), 2x2 ones
/// exactly. `GPASS_CONV_WINOGRAD=4` keeps 4 everywhere.
inline i64 winograd_tile(const geometry& g, i64 b) {
  if (winograd_env() == "4") return 4;
  return g.N * winograd_tiles(g, 4) <= 32 && winograd_filter_bytes(g, b, 4) > 2.0 * (1 << 20) ? 2 : 4;
}

/// The filter of `winograd` (w [M, C, 3, 3]) for tiles of side m (4 or 2): U = G g G^T of each
/// channel pair (in double), packed as [(m + 2)^2][ceil(M / b)][ceil(C / b)][b input
/// channels][b output channels], point-major: each point's filter is a 1x1 convolution's
/// `pack_filter`. Values past the channels are zero.
inline packed_vector<float> pack_winograd_filter(const float* w, const geometry& g, i64 b, i64 m = wino_m) {
  static constexpr double G4[6][3] = {{1.0 / 4, 0, 0},
                                      {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                      {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                      {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                      {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                      {0, 0, 1}};
  static constexpr double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  if (m != 4 && m != 2) throw std::invalid_argument("pack_winograd_filter: tiles of side 4 or 2");
  const int A = static_cast<int>(m) + 2;
  auto G = [&](int i, int j) { return m == 4 ? G4[i][j] : G2[i][j]; };
  const i64 Mb = blocks(g.M, b), Cb = blocks(g.C, b);
  packed_vector<float> p(static_cast<std::size_t>(std::max<i64>(1, winograd_points(m) * Mb * Cb * b * b)), 0.0f);
  for (i64 o = 0; o < g.M; ++o)
    for (i64 c = 0; c < g.C; ++c) {
      const float* k = w + (o * g.C + c) * 9;
      double t[6][3];  // G g
      for (int i = 0; i < A; ++i)
        for (int j = 0; j < 3; ++j) t[i][j] = G(i, 0) * k[j] + G(i, 1) * k[3 + j] + G(i, 2) * k[6 + j];
      for (int i = 0; i < A; ++i)
        for (int j = 0; j < A; ++j) {
          const double u = t[i][0] * G(j, 0) + t[i][1] * G(j, 1) + t[i][2] * G(j, 2);  // (G g) G^T
          const i64 xi = i * A + j;
          p[static_cast<std::size_t>((((xi * Mb + o / b) * Cb + c / b) * b + c % b) * b + o % b)] = static_cast<float>(u);
        }
    }
  return p;
}

/// A bias (or none) as ceil(M / b) * b values, zero past M.
inline aligned_vector<float> pack_bias(const float* bias, i64 M, i64 b) {
  aligned_vector<float> p(static_cast<std::size_t>(std::max<i64>(1, blocks(M, b) * b)), 0.0f);
  if (bias) std::copy(bias, bias + M, p.begin());
  return p;
}

// ------------------------------------------------------------------------------------------
// Kernel arguments

/// One call of `conv` / `conv_depthwise`.
struct conv_args {
  geometry g;
  conv_input in = conv_input::blocked;
  const float* x = nullptr;     ///< the input, laid out as `in` says
  const float* w = nullptr;     ///< pack_filter / pack_depthwise_filter for this block size
  const float* bias = nullptr;  ///< pack_bias for this block size
  float* y = nullptr;           ///< [N, ceil(M / b), OH, OW, b]
  output_step step;
  i64 segment = conv_segment;   ///< output pixels per task (blocked input; see conv_segment_for)
  i64 tile = wino_m;            ///< `winograd`: output pixels along a tile's side, 4 or 2 (w packed so)
  i64 tiles = 0;                ///< `winograd`: output tiles per task (winograd_split)
  i64 groups = 1;               ///< `winograd`: groups of output blocks per tile chunk
  /// `conv` with blocked input: the sums run over a group's input blocks [ib0, ib1) only (ib1
  /// -1: all), w still the whole packed filter: a partial output (see `input_split`)
  i64 ib0 = 0, ib1 = -1;
};

enum class pool_kind { max, average };

/// One call of `pool` / `global_pool`: x [N, ceil(C / b), H, W, b] -> y [N, ceil(C / b), OH, OW, b].
struct pool_args {
  geometry g;
  pool_kind kind = pool_kind::max;
  bool count_include_pad = false;
  const float* x = nullptr;
  float* y = nullptr;
  output_step step;
};

/// The first and one-past-last taps k of a window axis with k * d + start inside [0, n).
struct tap_range {
  i64 lo = 0, hi = 0;
};
inline tap_range taps_inside(i64 start, i64 K, i64 d, i64 n) {
  // k >= ceil(-start / d), k <= floor((n - 1 - start) / d)
  i64 lo = start >= 0 ? 0 : (-start + d - 1) / d;
  i64 hi = n - 1 - start < 0 ? 0 : (n - 1 - start) / d + 1;
  lo = std::min(lo, K);
  hi = std::clamp(hi, lo, K);
  return {lo, hi};
}

/// The output positions [lo, hi) of an axis whose every tap is inside the input (stride s,
/// pad p, K taps of dilation d, input n, output o); lo <= hi.
inline tap_range interior(i64 s, i64 p, i64 K, i64 d, i64 n, i64 o) {
  const i64 lo = std::min(o, (p + s - 1) / s);
  const i64 last = n - 1 + p - (K - 1) * d;  // o * s <= last
  const i64 hi = last < 0 ? 0 : std::min(o, last / s + 1);
  return {lo, std::max(lo, hi)};
}

/// The order a convolution with blocked input walks its output pixels in (`conv`'s tasks cut
/// it into runs of `conv_args::segment`, tiles of consecutive pixels in it): up to five
/// rectangles of the plane, each walked row by row: the rows whose taps go past the top (all
/// columns), then of the rows whose taps stay inside, the left columns whose taps go past the
/// left edge, the interior, the right columns, and last the rows past the bottom. A register
/// tile of pixels that all miss a tap skips it, so tiles taken inside one rectangle skip every
/// tap outside the input but the corners': a 3x3 convolution over a 7x7 plane runs 369 of its
/// 441 pixel taps instead of every one (the 72 others multiply zeros). Left and right columns
/// (either may be none: pads on one side) stay in their rows, the middle rows one rectangle,
/// where either would hold fewer than `min_side` pixels; a pointwise convolution without pads
/// is one rectangle, the plane in order.
struct pixel_walk {
  static constexpr i64 min_side = 4;
  struct rect {
    i64 begin;   ///< its first pixel's place in the walk
    i64 r0, r1;  ///< rows [r0, r1)
    i64 c0, c1;  ///< columns [c0, c1)
    i64 end() const { return begin + (r1 - r0) * (c1 - c0); }
    /// The pixel (oh * OW + ow) at place q of the walk (begin <= q < end()).
    i64 pixel(i64 q, i64 OW) const {
      const i64 o = q - begin, w = c1 - c0;
      return (r0 + o / w) * OW + c0 + o % w;
    }
  };
  std::array<rect, 5> rects{};
  int count = 0;

  explicit pixel_walk(const geometry& g) {
    const tap_range rows = interior(g.sh, g.pt, g.KH, g.dh, g.H, g.OH);
    const tap_range cols = interior(g.sw, g.pl, g.KW, g.dw, g.W, g.OW);
    const i64 mid = rows.hi - rows.lo, left = mid * cols.lo, right = mid * (g.OW - cols.hi);
    const bool sides = mid > 0 && cols.hi > cols.lo && left + right > 0 && (left == 0 || left >= min_side) &&
                       (right == 0 || right >= min_side);
    i64 at = 0;
    auto add = [&](i64 r0, i64 r1, i64 c0, i64 c1) {
      if (r1 <= r0 || c1 <= c0) return;
      rects[static_cast<std::size_t>(count++)] = {at, r0, r1, c0, c1};
      at += (r1 - r0) * (c1 - c0);
    };
    add(0, rows.lo, 0, g.OW);
    if (sides) {
      add(rows.lo, rows.hi, 0, cols.lo);
      add(rows.lo, rows.hi, cols.lo, cols.hi);
      add(rows.lo, rows.hi, cols.hi, g.OW);
    } else {
      add(rows.lo, rows.hi, 0, g.OW);
    }
    add(rows.hi, g.OH, 0, g.OW);
  }
};

// ------------------------------------------------------------------------------------------
// Kernels per instruction set

/// Zeros a tap outside the input reads (one block of channels).
alignas(64) inline constexpr float zero_block[16] = {};

/// Each kernel namespace: block `b`, a vector type `vec` of b floats and its operations.
namespace generic8 {
inline constexpr i64 b = 8;
#include <gpass/exec/eigen_cpu/kernels/detail/nchwc_portable_vec.inl>
#include <gpass/exec/eigen_cpu/kernels/detail/nchwc_kernels.inl>
}  // namespace generic8

namespace generic16 {
inline constexpr i64 b = 16;
#include <gpass/exec/eigen_cpu/kernels/detail/nchwc_portable_vec.inl>
#include <gpass/exec/eigen_cpu/kernels/detail/nchwc_kernels.inl>
}  // namespace generic16

#if GPASS_SGEMM_X86
// The two x86 sets below are alike in shape on purpose: each maps the vector operations onto
// its own registers and intrinsics (__m256 / __m512), under its own target attribute.
namespace avx2 {
inline constexpr i64 b = 8;
inline constexpr int conv_f = 2, conv_acc = 12;  // accumulators: 12 of the 16 registers
using vec = __m256;
#define GPASS_NCHWC_TARGET "avx2,fma"
#define GPASS_NCHWC_VEC __attribute__((target(GPASS_NCHWC_TARGET), always_inline)) inline
GPASS_NCHWC_VEC vec vzero() { return _mm256_setzero_ps(); }
GPASS_NCHWC_VEC vec vset1(float v) { return _mm256_set1_ps(v); }
GPASS_NCHWC_VEC vec vload(const float* p) { return _mm256_loadu_ps(p); }
GPASS_NCHWC_VEC void vstore(float* p, vec v) { _mm256_storeu_ps(p, v); }
GPASS_NCHWC_VEC vec vbcast(const float* p) { return _mm256_broadcast_ss(p); }
GPASS_NCHWC_VEC vec vfma(vec a, vec x, vec acc) { return _mm256_fmadd_ps(a, x, acc); }
GPASS_NCHWC_VEC vec vadd(vec a, vec x) { return _mm256_add_ps(a, x); }
GPASS_NCHWC_VEC vec vsub(vec a, vec x) { return _mm256_sub_ps(a, x); }
GPASS_NCHWC_VEC vec vmul(vec a, vec x) { return _mm256_mul_ps(a, x); }
GPASS_NCHWC_VEC vec vmax(vec a, vec x) { return _mm256_max_ps(a, x); }
GPASS_NCHWC_VEC vec vmin(vec a, vec x) { return _mm256_min_ps(a, x); }
#include <gpass/exec/eigen_cpu/kernels/detail/nchwc_kernels.inl>
#undef GPASS_NCHWC_VEC
#undef GPASS_NCHWC_TARGET
}  // namespace avx2

namespace avx512 {
inline constexpr i64 b = 16;
inline constexpr int conv_f = 4, conv_acc = 24;  // accumulators: 24 of the 32 registers
using vec = __m512;
#define GPASS_NCHWC_TARGET "avx512f,avx2,fma"
#define GPASS_NCHWC_VEC __attribute__((target(GPASS_NCHWC_TARGET), always_inline)) inline
GPASS_NCHWC_VEC vec vzero() { return _mm512_setzero_ps(); }
GPASS_NCHWC_VEC vec vset1(float v) { return _mm512_set1_ps(v); }
GPASS_NCHWC_VEC vec vload(const float* p) { return _mm512_loadu_ps(p); }
GPASS_NCHWC_VEC void vstore(float* p, vec v) { _mm512_storeu_ps(p, v); }
GPASS_NCHWC_VEC vec vbcast(const float* p) { return _mm512_set1_ps(*p); }
GPASS_NCHWC_VEC vec vfma(vec a, vec x, vec acc) { return _mm512_fmadd_ps(a, x, acc); }
GPASS_NCHWC_VEC vec vadd(vec a, vec x) { return _mm512_add_ps(a, x); }
GPASS_NCHWC_VEC vec vsub(vec a, vec x) { return _mm512_sub_ps(a, x); }
GPASS_NCHWC_VEC vec vmul(vec a, vec x) { return _mm512_mul_ps(a, x); }
// (masked forms: GCC 12 warns that the plain ones read an undefined vector)
GPASS_NCHWC_VEC vec vmax(vec a, vec x) { return _mm512_maskz_max_ps(__mmask16(0xFFFF), a, x); }
GPASS_NCHWC_VEC vec vmin(vec a, vec x) { return _mm512_maskz_min_ps(__mmask16(0xFFFF), a, x); }
#include <gpass/exec/eigen_cpu/kernels/detail/nchwc_kernels.inl>
#undef GPASS_NCHWC_VEC
#undef GPASS_NCHWC_TARGET
}  // namespace avx512
#endif

// ------------------------------------------------------------------------------------------
// Choosing the kernels

/// One instruction set's kernels for one block size. Each runs tasks [t0, t1) of its call:
/// conv and conv_depthwise `conv_tasks(a)`, pool `pool_tasks(a)`, global_pool `global_tasks(a)`.
struct kernel_set {
  std::string_view name;
  i64 b = 8;
  i64 conv_f = 1;  ///< output blocks per conv task
  void (*conv)(const conv_args&, i64, i64) = nullptr;
  void (*conv_depthwise)(const conv_args&, i64, i64) = nullptr;
  void (*pool)(const pool_args&, i64, i64) = nullptr;
  void (*global_pool)(const pool_args&, i64, i64) = nullptr;
  void (*winograd)(const conv_args&, i64, i64) = nullptr;  ///< w: pack_winograd_filter
};

/// The kernel sets this processor runs, best first per block size (the portable ones last).
inline const std::vector<kernel_set>& available_kernels() {
  static const std::vector<kernel_set> all = [] {
    std::vector<kernel_set> r;
#if GPASS_SGEMM_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
      r.push_back({"avx512", 16, avx512::conv_f, &avx512::conv, &avx512::conv_depthwise, &avx512::pool, &avx512::global_pool, &avx512::winograd});
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      r.push_back({"avx2", 8, avx2::conv_f, &avx2::conv, &avx2::conv_depthwise, &avx2::pool, &avx2::global_pool, &avx2::winograd});
#endif
    r.push_back({"generic", 16, generic16::conv_f, &generic16::conv, &generic16::conv_depthwise, &generic16::pool, &generic16::global_pool, &generic16::winograd});
    r.push_back({"generic", 8, generic8::conv_f, &generic8::conv, &generic8::conv_depthwise, &generic8::pool, &generic8::global_pool, &generic8::winograd});
    return r;
  }();
  return all;
}

/// The block size of this process: that of sgemm's kernel (16 with AVX-512, else 8), so
/// `GPASS_CPU_ISA` caps both alike.
inline i64 preferred_block() { return sgemm::kernel().name == "avx512" ? 16 : 8; }

/// The kernels for block size `b` (8 or 16): the first set with that block at or below the
/// instruction set sgemm runs on (so `GPASS_CPU_ISA` caps both alike): AVX-512 for 16 and
/// AVX2 for 8 on an AVX-512 machine; capped to AVX2, the portable kernels for 16.
inline const kernel_set& kernels_for(i64 b) {
  const std::vector<kernel_set>& all = available_kernels();
  std::size_t from = 0;
  while (from < all.size() && all[from].name != sgemm::kernel().name) ++from;
  if (from == all.size()) from = 0;
  for (std::size_t i = from; i < all.size(); ++i)
    if (all[i].b == b) return all[i];
  return all.back();
}

/// Conv tasks per "row": images x groups x chunks of up to `conv_f` output blocks.
inline i64 conv_units(const geometry& g, const kernel_set& k) {
  const i64 groups = g.G == 1 ? 1 : g.G;
  return g.N * groups * blocks(conv_group_blocks(g, k.b), k.conv_f);
}
/// Task counts of the kernels of `k`. A task of conv: one "row" (`conv_rows`) of one image and
/// one chunk of up to `conv_f` output blocks of a group; of depthwise and pool: one output row
/// of one channel block of one image; of global_pool: one channel block of one image.
inline i64 conv_tasks(const conv_args& a, const kernel_set& k) { return conv_units(a.g, k) * conv_rows(a.g, a.in, a.segment); }

/// The `conv_args::segment` for `threads` threads: the plane cut into runs of at most
/// conv_segment pixels of about even lengths (196 pixels as 66 + 66 + 64, not 96 + 96 + 4: a
/// 4-pixel task costs a tile's filter reads for a sixth of its work), or, where that leaves
/// fewer than 8 tasks per thread (small planes, few output blocks: a network's last layers),
/// into as many runs as wanted, of 12 pixels or more (49 pixels in two runs are 25 + 24, not
/// 24 + 24 + a task of 1 pixel, whose tile would run at a quarter of the speed); but a layer
/// whose filter slices are prefetched (conv_prefetches_filter) keeps runs of
/// conv_prefetch_pixels or more where that leaves each thread two tasks: ResNet50's last stage
/// at batch 1 on 2 threads, 8 tasks of the whole 7x7 plane instead of 16 of 25 and 24 pixels
/// (per-node minima of 20 alternating processes: its 3x3 layers 0.71-0.85, its 1x1 2048 ->
/// 512 0.74-0.93, the five 3978 -> 3209 us, the other stages 0.97-1.01). The threads then
/// share the tasks out by their work (`conv_balanced_bounds`). One thread keeps conv_segment.
inline i64 conv_segment_for(const geometry& g, const kernel_set& k, int threads) {
  if (threads <= 1) return conv_segment;
  const i64 units = conv_units(g, k);  // tasks per pixel run
  const i64 want = 8 * static_cast<i64>(threads);
  const i64 plane = std::max<i64>(g.OH * g.OW, 1);
  i64 runs = blocks(plane, conv_segment);
  if (units * runs < want) {
    runs = std::max(runs, std::min(blocks(want, std::max<i64>(units, 1)), std::max<i64>(1, plane / 12)));
    // a filter its passes prefetch (conv_prefetches_filter): runs long enough to prefetch
    // (conv_prefetch_pixels), where each thread still gets two tasks or more
    if (units >= 2 * static_cast<i64>(threads) && conv_prefetches_filter(g, k.b, k.conv_f))
      runs = std::min(runs, std::max(blocks(plane, conv_segment), plane / conv_prefetch_pixels));
  }
  return blocks(plane, runs);
}

/// Whether `conv` on `threads` threads splits its sums by input blocks instead of its output
/// blocks by thread: a pointwise layer of one image on a small plane (196 pixels or fewer) with
/// at least five times as many input as output blocks (MobileNetV2's projections after a
/// depthwise layer; at 3-4 times, 576 -> 160 and 960 -> 320, it measured no faster, the second
/// pass's reads of the partials as large as what it saves). Its input was written by the
/// threads a range of channel blocks each; split by output blocks, each thread reads every
/// input block, half of them from another core's cache (about 10 us of 70-80 at 14x14 x 576 -> 96 on the 2-vCPU Xeon). Split by input blocks,
/// thread p sums over the blocks [Cb p / T, Cb (p + 1) / T) into a partial output of every
/// output block, and a second pass adds the partials, the residual and the clamp by output
/// blocks (harness, 2 threads: 576 -> 96 +z at 14x14 81.7 -> 75.6-78.5 us, 960 -> 160 +z at
/// 7x7 65.2-66.3 -> 54.9-56.6; in MobileNetV2 at batch 1, minima of 20 traced runs: 82 / 80 ->
/// 77 / 77 and 68 / 68 -> 61 / 61 us).
inline bool input_split(const conv_args& a, const kernel_set& k, int threads) {
  const geometry& g = a.g;
  if (threads < 2 || a.in != conv_input::blocked || g.G != 1 || g.N != 1) return false;
  if (g.KH != 1 || g.KW != 1 || g.sh != 1 || g.sw != 1 || g.pt != 0 || g.pl != 0 || g.OH != g.H || g.OW != g.W) return false;
  const i64 Cb = blocks(g.C, k.b), Mb = blocks(g.M, k.b);
  return g.OH * g.OW <= 196 && Cb >= 5 * Mb && Cb >= 2 * static_cast<i64>(threads);
}

/// `GPASS_CONV_SUBSAMPLE` in the environment: "0" turns `subsample_first` off.
inline bool subsample_env_off() {
  static const bool off = [] {
    const char* e = std::getenv("GPASS_CONV_SUBSAMPLE");
    return e && std::string_view(e) == "0";
  }();
  return off;
}

/// Whether a convolution is better run over a copy of the input pixels it reads (`subsample`),
/// as a pointwise convolution of stride 1: a pointwise one of stride > 1 without pads (ResNet's
/// 1x1 / 2 layers) whose output blocks take two chunks or more, so that the input is read
/// more than once. Its input pixels read in place spread over two to four times the cache
/// lines (the rows between not read, a pixel's neighbours in a row fetched with it), too many
/// for L2 on layers that read them once per chunk; the copy is a quarter of the input.
/// Measured on ResNet50's six 1x1 / 2 layers (2-vCPU Xeon, AVX-512, per-node minima of
/// alternating traced runs, off (`GPASS_CONV_SUBSAMPLE=0`) against on): batch 1 on 2 threads
/// 4729 -> 3300 us (10 runs each; the 256 -> 512 at 56x56 1255 -> 775), batch 8 on 2 threads
/// 40.6 -> 32.7 ms, batch 1 on one thread 6747 -> 5739 us (a noisy hour: the 256 -> 128 one
/// 417 -> 515); the layers alone in a harness, best of 30: 0.91 of the time on 2 threads, 0.96
/// on one.
inline bool subsample_first(const geometry& g, conv_input in, const kernel_set& k) {
  if (in != conv_input::blocked || g.KH != 1 || g.KW != 1 || (g.sh == 1 && g.sw == 1)) return false;
  if (g.pt != 0 || g.pl != 0 || g.pb != 0 || g.pr != 0) return false;
  if (g.OH != (g.H - 1) / g.sh + 1 || g.OW != (g.W - 1) / g.sw + 1) return false;
  return blocks(conv_group_blocks(g, k.b), k.conv_f) >= 2 && !subsample_env_off();
}

/// Bounds of `parts` contiguous ranges of conv's tasks (see `conv`'s task order) of about equal
/// work, part p being [bounds[p], bounds[p + 1]). A task's work is its output blocks times its
/// pixels: chunks of output blocks differ by one block (10 blocks in chunks of 4 are 3 + 3 +
/// 4) and a plane's last run is shorter, so ranges of equal counts are not equal work. A task
/// goes to the part its work's middle falls in, so each bound is within half a task of its
/// even share. Contiguous, so a thread keeps the output blocks (and the filter slice) of
/// consecutive tasks. Whole units (an image's group's chunk: `rows` tasks) are stepped over at
/// once, so a run pays for its units and the rows of the units the bounds fall in, not for
/// every task (1056 tasks, ResNet50's 56x56 layers at batch 8, walked task by task: 21 us).
inline std::vector<i64> conv_balanced_bounds(const conv_args& a, const kernel_set& k, i64 parts) {
  const geometry& g = a.g;
  const i64 rows = conv_rows(g, a.in, a.segment), units = conv_units(g, k);
  const i64 gb = conv_group_blocks(g, k.b), chunks = std::max<i64>(blocks(gb, k.conv_f), 1);
  const i64 plane = g.OH * g.OW, run = a.in == conv_input::blocked ? a.segment : g.OW;
  auto pixels = [&](i64 row) { return static_cast<double>(std::min(plane, (row + 1) * run) - row * run); };
  parts = std::max<i64>(parts, 1);
  std::vector<i64> bounds(static_cast<std::size_t>(parts + 1), units * rows);
  bounds[0] = 0;
  // every unit's rows cover the plane once: the work of all tasks
  const double total = static_cast<double>(units / chunks) * static_cast<double>(gb) * static_cast<double>(plane);
  double done = 0;  // the work of the tasks before task (u, r)
  i64 u = 0, r = 0;
  for (i64 p = 1; p < parts; ++p) {
    const double target = total * static_cast<double>(p) / static_cast<double>(parts);
    while (u < units) {
      const i64 ch = u % chunks;
      const double f = static_cast<double>((ch + 1) * gb / chunks - ch * gb / chunks);
      // the middles of a unit's tasks increase: all of them at or below the target when the
      // last one's is
      if (r == 0 && done + f * static_cast<double>(plane) - f * pixels(rows - 1) / 2 <= target) {
        done += f * static_cast<double>(plane);
        ++u;
        continue;
      }
      const double w = f * pixels(r);
      if (done + w / 2 > target) break;
      done += w;
      if (++r == rows) {
        r = 0;
        ++u;
      }
    }
    bounds[static_cast<std::size_t>(p)] = u * rows + r;
  }
  return bounds;
}

/// `conv_args::tiles` and `groups` for `winograd` (kernels `k`, tiles of side `a.tile`) on
/// `threads` threads. A task transforms its tiles' input once, then reads the whole transformed
/// filter of its output blocks (points x C x M values) once: so tasks of as many tiles as keep
/// the transformed input (points x C values a tile) within 1 MB (at most 48 tiles of 4x4, 64 of
/// 2x2: a 14x14 plane's 49), of even sizes. On threads, where those chunks of tiles are not a
/// multiple of the threads, few (under 4 a thread) and the output blocks enough, each chunk's
/// output blocks are split in `threads` groups (each task reading its group's part of the
/// filter, the input transformed once per group: ResNet50's 14x14 layers at batch 1 are one
/// chunk of tiles); otherwise the chunks are cut smaller, to a multiple of the threads.
inline void winograd_split(conv_args& a, const kernel_set& k, int threads) {
  const geometry& g = a.g;
  const i64 all = g.N * winograd_tiles(g, a.tile);
  a.groups = 1;
  a.tiles = 1;
  if (all <= 0) return;
  const i64 points = winograd_points(a.tile);
  const i64 most = std::clamp<i64>((i64{1} << 20) / (points * std::max<i64>(g.C, 1) * 4), 1, a.tile == 2 ? 64 : 48);
  i64 chunks = blocks(all, most);
  if (threads > 1 && chunks % threads != 0) {
    if (chunks < 4 * static_cast<i64>(threads) && blocks(blocks(g.M, k.b), k.conv_f) >= threads)
      a.groups = threads;
    else
      chunks = blocks(chunks, threads) * threads;
  }
  a.tiles = std::max<i64>(1, blocks(all, chunks));
}
inline i64 winograd_tasks(const conv_args& a) {
  return blocks(a.g.N * winograd_tiles(a.g, a.tile), std::max<i64>(a.tiles, 1)) * std::max<i64>(a.groups, 1);
}
inline i64 depthwise_tasks(const conv_args& a, const kernel_set& k) { return a.g.N * blocks(a.g.C, k.b) * a.g.OH; }
inline i64 pool_tasks(const pool_args& a, const kernel_set& k) { return a.g.N * blocks(a.g.C, k.b) * a.g.OH; }
inline i64 global_tasks(const pool_args& a, const kernel_set& k) { return a.g.N * blocks(a.g.C, k.b); }

}  // namespace gpass::exec::cpu_detail::nchwc
