// The kernels of one nchwc instruction set (see ../nchwc.hpp).
//
// Included once inside each kernel namespace (generic8, generic16, avx2, avx512), not as a
// header: no include guard, the text stamped into each namespace on purpose (GCC's target
// attributes do not propagate into shared templates; see sgemm_driver.inl). Expects in the
// enclosing namespace: `b` (the block), `conv_f` (output blocks per conv task), `conv_acc`
// (accumulator registers of a conv tile), `vec` and vzero, vset1, vload, vstore, vbcast,
// vfma(a, x, acc) = a * x + acc, vadd, vmul, vmax, vmin (x86's operand order: the second
// operand when one is NaN); and, for an x86 set, `GPASS_NCHWC_TARGET` defined to its target
// string.

#ifdef GPASS_NCHWC_TARGET
#define GPASS_NCHWC_FN __attribute__((target(GPASS_NCHWC_TARGET)))
#define GPASS_NCHWC_INL __attribute__((target(GPASS_NCHWC_TARGET), always_inline)) inline
#else
#define GPASS_NCHWC_FN
#define GPASS_NCHWC_INL inline
#endif

/// Asks for the cache line at `p` + `off` floats into L1 (the address need not be inside an
/// object: a prefetch never faults).
GPASS_NCHWC_INL void prefetch(const float* p, i64 off) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(p) + off * i64{sizeof(float)}), 0, 3);
}

/// Stores `acc` at y through the output step (z at the same offset from its base as y).
GPASS_NCHWC_INL void store(float* y, vec acc, const float* z, const vec& lo, const vec& hi) {
  if (z) acc = vadd(acc, vload(z));
  // the clamp's bound first: maxps / minps return their second operand when one is NaN, so a
  // NaN sum stays NaN
  acc = vmin(hi, vmax(lo, acc));
  vstore(y, acc);
}

// ------------------------------------------------------------------------------------------
// Convolution

/// Pixels per conv tile of `F` output blocks: the accumulators (`conv_acc` registers) shared
/// out, at most 12 (the broadcasts of a wider tile cost more than its filter loads save).
constexpr int tile_pixels(int F) { return std::min(12, std::max(1, conv_acc / F)); }

/// The operands of one conv row: F output blocks of one output row.
struct conv_tile_args {
  const float* x;  ///< the input at (input block 0 of the group, row 0, column 0)
  i64 x_block;     ///< floats between input blocks (blocked) / unused (NCHW: one block)
  i64 x_row;       ///< floats between input rows
  i64 x_col;       ///< floats between input columns (b blocked, 1 NCHW)
  i64 x_ci;        ///< floats between the channels of a block (1 blocked, H * W NCHW)
  i64 nb, cb;      ///< input blocks of the group, channels per block
  i64 c_last;      ///< channels of the last input block that are the input's (cb, or fewer: the rest is zeros)
  i64 H, W;        ///< input rows and columns
  i64 OW;          ///< output columns
  const float* w;  ///< the filter at (first output block of the tile, input block 0)
  i64 w_out;       ///< floats between output blocks of the filter (nb * KH * KW * cb * b)
  i64 kh0, kh1;    ///< the taps of the row inside the input
  i64 ih0;         ///< the input row of tap 0 (oh * sh - pt)
  i64 KH, dh, KW, dw;
  i64 sh, sw, pt, pl;
  bool dense;         ///< pointwise (1x1, stride 1, no pads): output pixel q reads input pixel q
  const float* bias;  ///< at the tile's first output block
  float* y;           ///< the output at (first block, row 0 (blocked) / this row (NCHW), pixel 0)
  const float* z;     ///< the residual, same offset (or null)
  i64 y_block;        ///< floats between output blocks
  i64 c0 = 0, c1 = 0;  ///< blocked input: the columns a tile's pixels walk (c0 after c1 - 1, a row down)
  const pixel_walk* walk = nullptr;  ///< blocked input, not pointwise: the order of the pixels
  /// Passes over a filter past the caches (nchwc::conv_prefetch_bytes): pf_on, the task's
  /// passes prefetch the next pass's slice while one runs; a task's `pf` (conv), the next
  /// task's first slice, for its last pass. A tile's: the slice it prefetches, rows of
  /// `pf_row_lines` cache lines from `pf`, `pf_row_bytes` apart, one per output block, its share
  /// the lines [pf0, pf1) of them in order.
  bool pf_on = false;
  const char* pf = nullptr;
  i64 pf_row_lines = 0, pf_row_bytes = 0;
  i64 pf0 = 0, pf1 = 0;
};

/// A tile's share of the next slice (see conv_tile_args::pf), asked for into L2 (the T2 hint:
/// a little faster than T1 in the measurements) a few lines at each of the tile's `steps` steps,
/// so that reading it from memory overlaps the multiply-adds: where the first tile of each pass
/// read its slice itself, it waited for memory while the others found the slice in L2. Spread
/// out, not at the start of each tile: asked for all at once, the lines hold the fill buffers
/// the tile's own loads need (1.07-1.2x slower than no prefetch at all).
struct slice_prefetch {
  const char* row = nullptr;  ///< the current row's first line
  const char* p = nullptr;    ///< the next line
  i64 in_row = 0, row_lines = 1, row_bytes = 0, left = 0, per = 0;
  GPASS_NCHWC_INL slice_prefetch(const conv_tile_args& t, i64 steps) {
    if (!t.pf || t.pf1 <= t.pf0 || t.pf_row_lines <= 0) return;
    row_lines = t.pf_row_lines;
    row_bytes = t.pf_row_bytes;
    row = t.pf + (t.pf0 / row_lines) * row_bytes;
    in_row = t.pf0 % row_lines;
    p = row + in_row * 64;
    left = t.pf1 - t.pf0;
    steps = std::max<i64>(steps, 1);
    per = (left + steps - 1) / steps;
  }
  /// The next `n` lines (fewer at the end of the share).
  GPASS_NCHWC_INL void step(i64 n) {
    for (i64 i = 0; i < n && left > 0; ++i, --left) {
      __builtin_prefetch(p, 0, 1);
      p += 64;
      if (++in_row == row_lines) {
        in_row = 0;
        row += row_bytes;
        p = row;
      }
    }
  }
  GPASS_NCHWC_INL void step() { step(per); }
  GPASS_NCHWC_INL void rest() { step(left); }
};

/// Input channel `ci` of a pointwise tile (pixel p's block at xp + p * b): F filter vectors, P
/// broadcast inputs, F x P multiply-adds.
template <int F, int P>
GPASS_NCHWC_INL void dense_channel(vec (&acc)[F][P], const float* xp, const float* wp, i64 wo, i64 ci) {
  vec wv[F];
#pragma GCC unroll 4
  for (int f = 0; f < F; ++f) wv[f] = vload(wp + f * wo + ci * b);
#pragma GCC unroll 12
  for (int p = 0; p < P; ++p) {
    const vec xv = vbcast(xp + p * b + ci);
#pragma GCC unroll 4
    for (int f = 0; f < F; ++f) acc[f][p] = vfma(xv, wv[f], acc[f][p]);
  }
}

/// Blocked input: an F x P tile of P output pixels from q0 (q = oh * OW + ow) along the
/// columns [t.c0, t.c1), a row down after the last (a tile may span output rows, so narrow
/// planes fill whole tiles too; see nchwc::pixel_walk). Each tap reads every pixel, a pixel
/// whose tap falls outside the input reading a block of zeros instead (a tap outside for every
/// pixel is skipped); per channel of a block, one vector of filter values per output block and
/// one broadcast input value per pixel. Pointwise (t.dense): the pixels [q0, q0 + P). Pf: ask
/// for the tile's share of the next filter slice on the way (slice_prefetch; a template
/// parameter, as its state in the loops cost the tiles without it up to 7%).
template <int F, int P, bool First, bool Last, bool Dense, bool Pf = false>
GPASS_NCHWC_FN inline void conv_tile_blocked(const conv_tile_args& t, i64 q0, const vec& lo, const vec& hi) {
  i64 ihb[P], iwb[P], yq[P];  // each pixel's input position of tap (0, 0), its offset in y
  if constexpr (Dense) {
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) yq[p] = (q0 + p) * b;
  } else {
    i64 oh = q0 / t.OW, ow = q0 % t.OW;
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) {
      ihb[p] = oh * t.sh - t.pt;
      iwb[p] = ow * t.sw - t.pl;
      yq[p] = (oh * t.OW + ow) * b;
      if (++ow == t.c1) {
        ow = t.c0;
        ++oh;
      }
    }
  }
  vec acc[F][P];
#pragma GCC unroll 4
  for (int f = 0; f < F; ++f) {
    const vec bv = vload(t.bias + f * b);
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) acc[f][p] = First ? bv : vload(t.y + f * t.y_block + yq[p]);
  }
  const i64 wk = b * b;  // floats per tap of a filter block
  const i64 wo = t.w_out;
  [[maybe_unused]] slice_prefetch next(t, Pf ? (Dense ? t.nb : t.nb * t.KH * t.KW) : 0);
  if constexpr (Dense) {  // pointwise: pixel q reads input pixel q
    for (i64 ib = 0; ib < t.nb; ++ib) {
      const float* xp = t.x + ib * t.x_block + q0 * b;
      const float* wp = t.w + ib * wk;
      // the next tile's pixels of this block (the hardware prefetchers fall behind on the
      // input's streams, one per block: ResNet50's 1x1 256 -> 64 at 56x56 11% faster)
#pragma GCC unroll 12
      for (int p = 0; p < P; ++p) prefetch(xp, (P + p) * b);
      if constexpr (Pf) next.step();
      if (ib + 1 < t.nb || t.c_last == b) {
#pragma GCC unroll 4
        for (i64 ci = 0; ci < b; ++ci) dense_channel<F, P>(acc, xp, wp, wo, ci);
      } else {  // a last block partly past the input's channels: its zeros skipped (24 of 32: 25% fewer)
        for (i64 ci = 0; ci < t.c_last; ++ci) dense_channel<F, P>(acc, xp, wp, wo, ci);
      }
    }
  }
  // taps outer, input blocks inner: where each pixel reads (or the zeros) is worked out once
  // per tap, then steps one input block at a time (the zeros by 0)
  for (i64 kh = 0; kh < (Dense ? 0 : t.KH); ++kh)
    for (i64 kw = 0; kw < t.KW; ++kw) {
      const float* xp[P];
      i64 step[P];
      bool any = false;
#pragma GCC unroll 12
      for (int p = 0; p < P; ++p) {
        const i64 ih = ihb[p] + kh * t.dh, iw = iwb[p] + kw * t.dw;
        const bool in = ih >= 0 && ih < t.H && iw >= 0 && iw < t.W;
        xp[p] = in ? t.x + (ih * t.W + iw) * b : zero_block;
        step[p] = in ? t.x_block : 0;
        any = any || in;
      }
      if (!any) continue;
      const float* wp = t.w + (kh * t.KW + kw) * wk;
      const i64 w_block = t.KH * t.KW * wk;  // floats between the filter's input blocks
      for (i64 ib = 0; ib < t.nb; ++ib, wp += w_block) {
        if constexpr (Pf) next.step();
#pragma GCC unroll 4
        for (i64 ci = 0; ci < b; ++ci) {
          vec wv[F];
#pragma GCC unroll 4
          for (int f = 0; f < F; ++f) wv[f] = vload(wp + f * wo + ci * b);
#pragma GCC unroll 12
          for (int p = 0; p < P; ++p) {
            const vec xv = vbcast(xp[p] + ci);
#pragma GCC unroll 4
            for (int f = 0; f < F; ++f) acc[f][p] = vfma(xv, wv[f], acc[f][p]);
          }
        }
#pragma GCC unroll 12
        for (int p = 0; p < P; ++p) xp[p] += step[p];
      }
    }
  if constexpr (Pf) next.rest();  // the taps a tile skipped
#pragma GCC unroll 4
  for (int f = 0; f < F; ++f)
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) {
      const i64 at = f * t.y_block + yq[p];
      if constexpr (Last)
        store(t.y + at, acc[f][p], t.z ? t.z + at : nullptr, lo, hi);
      else
        vstore(t.y + at, acc[f][p]);
    }
}

/// NCHW input (a few channels, `cb` of them in one block): an F x P tile of output pixels
/// [ow0, ow0 + P) reading taps kw in [kw0, kw1) for every pixel (interior tiles read all of
/// them; a border pixel goes alone, its taps clipped to the input). S: the stride along a row
/// when known at compile time (1 or 2; 0: t.sw), so that the P pixels' inputs are constant
/// offsets from one pointer (with a run-time stride the compiler keeps a pointer per pixel and
/// runs out of registers: ResNet50's 7x7 / 2 stem 13% faster, MobileNetV2's 3x3 / 2 one 15%).
template <int F, int P, int S = 0>
GPASS_NCHWC_FN inline void conv_tile_nchw(const conv_tile_args& t, i64 ow0, i64 kw0, i64 kw1, const vec& lo,
                                          const vec& hi) {
  vec acc[F][P];
#pragma GCC unroll 4
  for (int f = 0; f < F; ++f) {
    const vec bv = vload(t.bias + f * b);
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) acc[f][p] = bv;
  }
  const i64 wk = t.cb * b;
  const i64 wo = t.w_out, xc = t.x_ci;
  const i64 xs = S > 0 ? S : t.sw;
  const i64 iw0 = ow0 * t.sw - t.pl;
  for (i64 kh = t.kh0; kh < t.kh1; ++kh) {
    const float* xr = t.x + (t.ih0 + kh * t.dh) * t.x_row + iw0;
    const float* wr = t.w + kh * t.KW * wk;
    for (i64 kw = kw0; kw < kw1; ++kw) {
      const float* xq = xr + kw * t.dw;  // pixel p's input at xq + p * xs
      const float* wp = wr + kw * wk;
      for (i64 ci = 0; ci < t.cb; ++ci, xq += xc, wp += b) {
        vec wv[F];
#pragma GCC unroll 4
        for (int f = 0; f < F; ++f) wv[f] = vload(wp + f * wo);
#pragma GCC unroll 12
        for (int p = 0; p < P; ++p) {
          const vec xv = vbcast(xq + p * xs);
#pragma GCC unroll 4
          for (int f = 0; f < F; ++f) acc[f][p] = vfma(xv, wv[f], acc[f][p]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int f = 0; f < F; ++f)
#pragma GCC unroll 12
    for (int p = 0; p < P; ++p) {
      const i64 at = f * t.y_block + (ow0 + p) * b;
      store(t.y + at, acc[f][p], t.z ? t.z + at : nullptr, lo, hi);
    }
}

/// `n` (1 <= n <= P) pixels from ow0: the tile of exactly n pixels. First / Last: whether the
/// tile starts from the bias (else from y's partial sums) and ends with the output step (else
/// stores partial sums): passes over the input blocks (blocked input only).
template <int F, int P, bool First, bool Last>
GPASS_NCHWC_INL void conv_pixels(i64 n, bool blocked, const conv_tile_args& t, i64 ow0, i64 kw0, i64 kw1,
                                 const vec& lo, const vec& hi) {
  if constexpr (P > 1) {
    if (n != P) {
      conv_pixels<F, P - 1, First, Last>(n, blocked, t, ow0, kw0, kw1, lo, hi);
      return;
    }
  }
  // the prefetching tiles: passes over a large filter (never First && Last, one pass) and
  // Winograd's products over a large one (pointwise, First && Last); no other form sets t.pf,
  // so no other is compiled
  if (blocked && t.pf) {
    if constexpr (!(First && Last)) {
      if (t.dense)
        conv_tile_blocked<F, P, First, Last, true, true>(t, ow0, lo, hi);
      else
        conv_tile_blocked<F, P, First, Last, false, true>(t, ow0, lo, hi);
      return;
    } else if (t.dense) {
      conv_tile_blocked<F, P, true, true, true, true>(t, ow0, lo, hi);
      return;
    }
  }
  if (blocked && t.dense)
    conv_tile_blocked<F, P, First, Last, true>(t, ow0, lo, hi);
  else if (blocked)
    conv_tile_blocked<F, P, First, Last, false>(t, ow0, lo, hi);
  else if (t.sw == 2)
    conv_tile_nchw<F, P, 2>(t, ow0, kw0, kw1, lo, hi);
  else if (t.sw == 1)
    conv_tile_nchw<F, P, 1>(t, ow0, kw0, kw1, lo, hi);
  else
    conv_tile_nchw<F, P>(t, ow0, kw0, kw1, lo, hi);
}

/// Output pixels [ow0, ow1) of F output blocks, in tiles of as even widths as tile_pixels(F)
/// allows (14 pixels as 7 + 7, not 12 + 2). Blocked input: pixels of the plane as one row.
/// NCHW input: pixels of one output row; the interior `inner` so, the border pixels one at a
/// time, their taps clipped.
template <int F, bool First = true, bool Last = true>
GPASS_NCHWC_FN inline void conv_row(bool blocked, const geometry& g, const conv_tile_args& t, i64 ow0, i64 ow1,
                                    const tap_range& inner, const vec& lo, const vec& hi) {
  constexpr int P = tile_pixels(F);
  auto tiles = [](i64 n) { return (n + P - 1) / P; };
  // the next filter slice's lines, shared out over the tiles in order (see slice_prefetch)
  const i64 pf_lines = t.pf ? F * t.pf_row_lines : 0;
  if (blocked && t.dense) {  // pixels [ow0, ow1) in order (also Winograd's products, g not theirs)
    const i64 n = ow1 - ow0, k = tiles(n);
    conv_tile_args u = t;
    for (i64 i = 0, ow = ow0; i < k; ++i) {
      const i64 w = n / k + (i < n % k ? 1 : 0);
      u.pf0 = i * pf_lines / k;
      u.pf1 = (i + 1) * pf_lines / k;
      conv_pixels<F, P, First, Last>(w, true, u, ow, 0, g.KW, lo, hi);
      ow += w;
    }
    return;
  }
  if (blocked) {  // [ow0, ow1): places in nchwc::pixel_walk; tiles inside each of its rectangles
    const pixel_walk& walk = *t.walk;
    conv_tile_args u = t;
    i64 all = 0, ti = 0;  // tiles in all, this one's place
    for (int r = 0; r < (t.pf ? walk.count : 0); ++r) {
      const pixel_walk::rect& rc = walk.rects[static_cast<std::size_t>(r)];
      const i64 q0 = std::max(ow0, rc.begin), q1 = std::min(ow1, rc.end());
      if (q0 < q1) all += tiles(q1 - q0);
    }
    for (int r = 0; r < walk.count; ++r) {
      const pixel_walk::rect& rc = walk.rects[static_cast<std::size_t>(r)];
      const i64 q0 = std::max(ow0, rc.begin), q1 = std::min(ow1, rc.end());
      if (q0 >= q1) continue;
      u.c0 = rc.c0;
      u.c1 = rc.c1;
      const i64 n = q1 - q0, k = tiles(n);
      for (i64 i = 0, q = q0; i < k; ++i, ++ti) {
        const i64 w = n / k + (i < n % k ? 1 : 0);
        if (pf_lines > 0) {
          u.pf0 = ti * pf_lines / all;
          u.pf1 = (ti + 1) * pf_lines / all;
        }
        conv_pixels<F, P, First, Last>(w, true, u, rc.pixel(q, g.OW), 0, g.KW, lo, hi);
        q += w;
      }
    }
    return;
  }
  const i64 in0 = std::clamp(inner.lo, ow0, ow1), in1 = std::clamp(inner.hi, in0, ow1);
  for (i64 ow = ow0; ow < in0; ++ow) {
    const tap_range r = taps_inside(ow * g.sw - g.pl, g.KW, g.dw, g.W);
    conv_tile_nchw<F, 1>(t, ow, r.lo, r.hi, lo, hi);
  }
  const i64 n = in1 - in0, k = tiles(n);
  for (i64 i = 0, ow = in0; i < k; ++i) {
    const i64 w = n / k + (i < n % k ? 1 : 0);
    conv_pixels<F, P, true, true>(w, false, t, ow, 0, g.KW, lo, hi);
    ow += w;
  }
  for (i64 ow = in1; ow < ow1; ++ow) {
    const tap_range r = taps_inside(ow * g.sw - g.pl, g.KW, g.dw, g.W);
    conv_tile_nchw<F, 1>(t, ow, r.lo, r.hi, lo, hi);
  }
}

/// The row for `f` (1 <= f <= F) output blocks.
template <int F, bool First = true, bool Last = true>
GPASS_NCHWC_INL void conv_row_blocks(int f, bool blocked, const geometry& g, const conv_tile_args& t, i64 ow0,
                                     i64 ow1, const tap_range& inner, const vec& lo, const vec& hi) {
  if constexpr (F > 1) {
    if (f != F) {
      conv_row_blocks<F - 1, First, Last>(f, blocked, g, t, ow0, ow1, inner, lo, hi);
      return;
    }
  }
  conv_row<F, First, Last>(blocked, g, t, ow0, ow1, inner, lo, hi);
}

/// A row of blocked input in `passes` passes over the input blocks (see nchwc::conv_passes):
/// each pass's filter slice read from cache across the row's tiles; one pass: the whole sum in
/// registers, no partial sums in y. With t.pf_on, each pass prefetches the next one's slice;
/// the last pass, the next task's first where conv set t.pf.
GPASS_NCHWC_INL void conv_row_passes(int f, const geometry& g, const conv_tile_args& t, i64 ow0, i64 ow1, i64 passes,
                                     const tap_range& inner, const vec& lo, const vec& hi) {
  if (passes <= 1) {
    conv_row_blocks<conv_f, true, true>(f, true, g, t, ow0, ow1, inner, lo, hi);
    return;
  }
  const i64 w_block = t.KH * t.KW * t.cb * b;  // floats between the filter's input blocks
  const i64 block_lines = w_block * i64{sizeof(float)} / 64;
  auto pass_blocks = [&](i64 i) { return t.nb / passes + (i < t.nb % passes ? 1 : 0); };
  for (i64 i = 0, ib0 = 0; i < passes; ++i) {
    conv_tile_args u = t;
    u.nb = pass_blocks(i);
    u.c_last = i + 1 == passes ? t.c_last : t.cb;
    u.x = t.x + ib0 * t.x_block;
    u.w = t.w + ib0 * w_block;
    ib0 += u.nb;
    u.pf = nullptr;
    if ((t.pf_on && i + 1 < passes) || (i + 1 == passes && t.pf)) {
      u.pf = i + 1 < passes ? reinterpret_cast<const char*>(t.w + ib0 * w_block) : t.pf;
      u.pf_row_lines = pass_blocks(i + 1 < passes ? i + 1 : 0) * block_lines;
      u.pf_row_bytes = t.w_out * i64{sizeof(float)};
    }
    if (i == 0)
      conv_row_blocks<conv_f, true, false>(f, true, g, u, ow0, ow1, inner, lo, hi);
    else if (i + 1 == passes)
      conv_row_blocks<conv_f, false, true>(f, true, g, u, ow0, ow1, inner, lo, hi);
    else
      conv_row_blocks<conv_f, false, false>(f, true, g, u, ow0, ow1, inner, lo, hi);
  }
}

/// Tasks [t0, t1) of a convolution (see nchwc::conv_tasks): task = ((n * groups + group) *
/// chunks + chunk) * rows + row, the chunks ceil(blocks / conv_f) even parts of the group's
/// output blocks; a row is a run of `a.segment` pixels of the plane (blocked input) or one
/// output row (NCHW input).
GPASS_NCHWC_FN inline void conv(const conv_args& a, i64 t0, i64 t1) {
  const geometry& g = a.g;
  const bool blocked = a.in == conv_input::blocked;
  const i64 rows = conv_rows(g, a.in, a.segment);
  const i64 groups = g.G == 1 ? 1 : g.G;
  const i64 Cg = g.C / groups;
  const i64 nb = blocked ? blocks(Cg, b) : 1, cb = blocked ? b : Cg;
  const i64 gb = conv_group_blocks(g, b);  // output blocks per group
  const i64 chunks = blocks(gb, conv_f);
  const i64 Mb = blocks(g.M, b), Cb = blocks(g.C, b);
  const vec lo = vset1(a.step.lo), hi = vset1(a.step.hi);
  const tap_range inner = interior(g.sw, g.pl, g.KW, g.dw, g.W, g.OW);
  const sgemm::flush_subnormals ftz;
  // the input blocks summed: all, or [ib0, ib1) of them (blocked input)
  const i64 ib0 = blocked && a.ib1 >= 0 ? std::clamp<i64>(a.ib0, 0, nb) : 0;
  const i64 ib1 = blocked && a.ib1 >= 0 ? std::clamp<i64>(a.ib1, ib0, nb) : nb;
  const i64 passes = blocked ? conv_passes(g, ib1 - ib0, b, conv_f) : 1;
  conv_tile_args ta{};
  ta.nb = ib1 - ib0;
  ta.cb = cb;
  ta.c_last = blocked ? (ib1 == nb ? Cg - (nb - 1) * b : b) : cb;
  ta.H = g.H;
  ta.W = g.W;
  ta.OW = g.OW;
  ta.w_out = nb * g.KH * g.KW * cb * b;
  ta.KH = g.KH;
  ta.dh = g.dh;
  ta.KW = g.KW;
  ta.dw = g.dw;
  ta.sh = g.sh;
  ta.sw = g.sw;
  ta.pt = g.pt;
  ta.pl = g.pl;
  ta.y_block = g.OH * g.OW * b;
  ta.dense = g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 && g.OH == g.H && g.OW == g.W;
  const pixel_walk walk(g);
  ta.walk = &walk;
  ta.pf_on = blocked && conv_prefetches_filter(g, b, conv_f, ib1 - ib0);
  if (blocked) {
    ta.x_block = g.H * g.W * b;
    ta.x_row = g.W * b;
    ta.x_col = b;
    ta.x_ci = 1;
  } else {
    ta.x_block = 0;
    ta.x_row = g.W;
    ta.x_col = 1;
    ta.x_ci = g.H * g.W;
  }
  for (i64 t = t0; t < t1; ++t) {
    const i64 row = t % rows;
    i64 r = t / rows;
    const i64 ch = r % chunks;
    r /= chunks;
    const i64 grp = r % groups, n = r / groups;
    // chunk ch: output blocks [ch * gb / chunks, (ch + 1) * gb / chunks) of the group, sizes
    // differing by one at most (6 blocks are 3 + 3, not 4 + 2: equal tasks, so that threads
    // sharing them out in halves finish together)
    const i64 cb0 = ch * gb / chunks, cb1 = (ch + 1) * gb / chunks;
    const i64 ob0 = grp * gb + cb0;
    const int f = static_cast<int>(cb1 - cb0);
    conv_tile_args u = ta;
    u.x = blocked ? a.x + (n * Cb + grp * nb + ib0) * ta.x_block : a.x + n * g.C * ta.x_ci;
    u.w = a.w + ob0 * ta.w_out + ib0 * g.KH * g.KW * cb * b;
    u.bias = a.bias + ob0 * b;
    i64 yoff = (n * Mb + ob0) * g.OH * g.OW * b, q0 = 0, q1 = 0;
    if (blocked) {
      q0 = row * a.segment;
      q1 = std::min(g.OH * g.OW, q0 + a.segment);
    } else {
      u.ih0 = row * g.sh - g.pt;
      const tap_range kr = taps_inside(u.ih0, g.KH, g.dh, g.H);
      u.kh0 = kr.lo;
      u.kh1 = kr.hi;
      yoff += row * g.OW * b;
      q1 = g.OW;
    }
    u.y = a.y + yoff;
    u.z = a.step.z ? a.step.z + yoff : nullptr;
    // a large filter: the first run of a chunk's pixels reads its slices from memory, so its
    // passes prefetch (the chunk's later runs find them in L2), where the run is long enough
    // for a pass's products to outlast reading the next slice (conv_prefetch_pixels); the
    // last pass of such a task before a chunk's first run prefetches that run's first slice
    // (the range going on, the output blocks of the same group)
    const bool long_run = q1 - q0 >= conv_prefetch_pixels;
    u.pf_on = ta.pf_on && row == 0 && long_run;
    u.pf = ta.pf_on && long_run && t + 1 < t1 && row + 1 == rows && ch + 1 < chunks
               ? reinterpret_cast<const char*>(u.w + f * ta.w_out)
               : nullptr;
    if (blocked)
      conv_row_passes(f, g, u, q0, q1, passes, inner, lo, hi);
    else
      conv_row_blocks<conv_f>(f, false, g, u, q0, q1, inner, lo, hi);
  }
}

// ------------------------------------------------------------------------------------------
// Winograd F(4x4, 3x3) and F(2x2, 3x3) (see ../nchwc.hpp)

/// r = B^T d for one column (or row) of 6 vectors (F(4x4, 3x3)).
GPASS_NCHWC_INL void wino_in(const vec (&d)[6], vec (&r)[6]) {
  const vec four = vset1(4.0f), m4 = vset1(-4.0f), m5 = vset1(-5.0f), two = vset1(2.0f);
  r[0] = vfma(m5, d[2], vfma(four, d[0], d[4]));  // 4 d0 - 5 d2 + d4
  const vec s = vfma(m4, d[2], d[4]);              // d4 - 4 d2
  const vec u = vfma(m4, d[1], d[3]);              // d3 - 4 d1
  r[1] = vadd(s, u);
  r[2] = vsub(s, u);
  const vec p = vsub(d[4], d[2]);
  const vec q = vmul(two, vsub(d[3], d[1]));
  r[3] = vadd(p, q);
  r[4] = vsub(p, q);
  r[5] = vfma(m5, d[3], vfma(four, d[1], d[5]));  // 4 d1 - 5 d3 + d5
}

/// r = A^T m for one column (or row) of 6 vectors (F(4x4, 3x3)).
GPASS_NCHWC_INL void wino_out(const vec (&m)[6], vec (&r)[4]) {
  const vec a = vadd(m[1], m[2]), d1 = vsub(m[1], m[2]), c = vadd(m[3], m[4]), d3 = vsub(m[3], m[4]);
  r[0] = vadd(vadd(m[0], a), c);
  r[1] = vfma(vset1(2.0f), d3, d1);
  r[2] = vfma(vset1(4.0f), c, a);
  r[3] = vadd(vfma(vset1(8.0f), d3, d1), m[5]);
}

/// r = B^T d for one column (or row) of 4 vectors (F(2x2, 3x3)).
GPASS_NCHWC_INL void wino_in(const vec (&d)[4], vec (&r)[4]) {
  r[0] = vsub(d[0], d[2]);
  r[1] = vadd(d[1], d[2]);
  r[2] = vsub(d[2], d[1]);
  r[3] = vsub(d[1], d[3]);
}

/// r = A^T m for one column (or row) of 4 vectors (F(2x2, 3x3)).
GPASS_NCHWC_INL void wino_out(const vec (&m)[4], vec (&r)[2]) {
  r[0] = vadd(vadd(m[0], m[1]), m[2]);
  r[1] = vsub(vsub(m[1], m[2]), m[3]);
}

/// Tasks [t0, t1) of a Winograd convolution of tiles of side `m` (w: pack_winograd_filter for
/// m; see nchwc::winograd_split): task = chunk * a.groups + group, chunk k the output tiles
/// [k * a.tiles, (k + 1) * a.tiles) of the batch (tile = (n * TH + th) * TW + tw), group j the
/// j-th of a.groups even parts of the chunks of conv_f output blocks. Per task: the tiles'
/// patches transformed into V [points][Cb][T][b] (each point a plane of T "pixels" in the
/// blocked layout); per chunk of conv_f output blocks of the group, the products of each
/// point's V with its filter (a 1x1 convolution's register tiles) into S [points][conv_f][T][b];
/// then each tile's points transformed to its m x m pixels, the bias and the output step
/// applied as they are stored.
template <int m>
GPASS_NCHWC_FN inline void winograd_tiles_of(const conv_args& a, i64 t0, i64 t1) {
  constexpr int A = m + 2, points = A * A;
  const geometry& g = a.g;
  const i64 Cb = blocks(g.C, b), Mb = blocks(g.M, b);
  const i64 TH = blocks(g.OH, m), TW = blocks(g.OW, m), per_image = TH * TW;
  const i64 all = g.N * per_image, T = std::max<i64>(a.tiles, 1), groups = std::max<i64>(a.groups, 1);
  const i64 ob_chunks = blocks(Mb, conv_f), per_group = blocks(ob_chunks, groups);
  const vec lo = vset1(a.step.lo), hi = vset1(a.step.hi);
  const vec none_lo = vset1(-std::numeric_limits<float>::infinity()), none_hi = vset1(std::numeric_limits<float>::infinity());
  const sgemm::flush_subnormals ftz;
  // scratch of this thread, kept between calls (no allocation per run once grown)
  static thread_local aligned_vector<float> scratch;
  const std::size_t v_size = static_cast<std::size_t>(points * Cb * T * b);
  const std::size_t s_size = static_cast<std::size_t>(points * conv_f * T * b);
  if (scratch.size() < v_size + s_size) scratch.assign(v_size + s_size, 0.0f);
  float* V = scratch.data();
  float* S = V + v_size;
  alignas(64) static constexpr float zeros[conv_f * b] = {};  // the products' "bias"
  const i64 plane = g.H * g.W * b;
  struct tile_at {
    i64 n, th, tw;
  };
  auto tile = [&](i64 q) { return tile_at{q / per_image, (q % per_image) / TW, q % TW}; };
  // the products: each point's V times its filter, a 1x1 convolution's register tiles
  conv_tile_args u{};
  u.nb = Cb;
  u.cb = b;
  u.c_last = g.C - (Cb - 1) * b;  // (V past the channels: zeros)
  u.x_block = T * b;
  u.x_col = b;
  u.x_ci = 1;
  u.H = u.W = 1;
  u.OW = T;
  u.KH = u.KW = u.sh = u.sw = u.dh = u.dw = 1;
  u.dense = true;
  u.w_out = Cb * b * b;
  u.bias = zeros;
  const bool pf_on = winograd_filter_bytes(g, b, m) >= conv_prefetch_bytes;
  u.y_block = T * b;
  for (i64 task = t0; task < t1; ++task) {
    const i64 q0 = task / groups * T, q1 = std::min(all, q0 + T), nq = q1 - q0;
    const i64 ob_begin = task % groups * per_group * conv_f, ob_end = std::min(Mb, ob_begin + per_group * conv_f);
    if (nq <= 0 || ob_begin >= ob_end) continue;
    // 1. input transform, V[xi][ib][q][.] = (B^T d B)[xi]
    for (i64 q = q0; q < q1; ++q) {
      const auto [n, th, tw] = tile(q);
      const i64 ih0 = th * m - g.pt, iw0 = tw * m - g.pl;
      bool row_in[A], col_in[A];
      for (int i = 0; i < A; ++i) {
        row_in[i] = ih0 + i >= 0 && ih0 + i < g.H;
        col_in[i] = iw0 + i >= 0 && iw0 + i < g.W;
      }
      const float* xn = a.x + n * Cb * plane;
      for (i64 ib = 0; ib < Cb; ++ib) {
        const float* xb = xn + ib * plane;
        vec t[A][A];
        for (int j = 0; j < A; ++j) {
          vec d[A], r[A];
#pragma GCC unroll 6
          for (int i = 0; i < A; ++i)
            d[i] = row_in[i] && col_in[j] ? vload(xb + ((ih0 + i) * g.W + iw0 + j) * b) : vzero();
          wino_in(d, r);
#pragma GCC unroll 6
          for (int i = 0; i < A; ++i) t[i][j] = r[i];
        }
        float* vq = V + (ib * T + (q - q0)) * b;
#pragma GCC unroll 6
        for (int i = 0; i < A; ++i) {
          vec r[A];
          wino_in(t[i], r);
#pragma GCC unroll 6
          for (int j = 0; j < A; ++j) vstore(vq + (i * A + j) * Cb * T * b, r[j]);
        }
      }
    }
    // 2. per chunk of output blocks: the products, then the output transform
    for (i64 ob0 = ob_begin; ob0 < ob_end; ob0 += conv_f) {
      const int f = static_cast<int>(std::min<i64>(conv_f, ob_end - ob0));
      for (i64 xi = 0; xi < points; ++xi) {
        u.x = V + xi * Cb * T * b;
        u.w = a.w + (xi * Mb + ob0) * Cb * b * b;
        u.y = S + xi * conv_f * T * b;
        // a filter past the caches: each point's products prefetch the next point's slice
        // (the last point's, the next chunk's first), as passes over a direct filter do
        u.pf = nullptr;
        if (pf_on && nq >= conv_prefetch_pixels && (xi + 1 < points || ob0 + conv_f < ob_end)) {
          u.pf = reinterpret_cast<const char*>(xi + 1 < points ? u.w + Mb * u.w_out : a.w + (ob0 + conv_f) * u.w_out);
          u.pf_row_bytes = u.w_out * i64{sizeof(float)};
          u.pf_row_lines = u.pf_row_bytes / 64;
        }
        conv_row_blocks<conv_f>(f, true, g, u, 0, nq, tap_range{}, none_lo, none_hi);
      }
      for (int fb = 0; fb < f; ++fb) {
        const vec bias = vload(a.bias + (ob0 + fb) * b);
        for (i64 q = q0; q < q1; ++q) {
          const auto [n, th, tw] = tile(q);
          const float* sq = S + (fb * T + (q - q0)) * b;
          vec sm[m][A];  // A^T m, column by column
          for (int j = 0; j < A; ++j) {
            vec mm[A], r[m];
#pragma GCC unroll 6
            for (int i = 0; i < A; ++i) mm[i] = vload(sq + (i * A + j) * conv_f * T * b);
            wino_out(mm, r);
#pragma GCC unroll 4
            for (int i = 0; i < m; ++i) sm[i][j] = r[i];
          }
          const i64 oh0 = th * m, ow0 = tw * m;
          const i64 rows = std::min<i64>(m, g.OH - oh0), cols = std::min<i64>(m, g.OW - ow0);
          const i64 ybase = ((n * Mb + ob0 + fb) * g.OH + oh0) * g.OW + ow0;
          for (i64 i = 0; i < rows; ++i) {
            vec r[m];
            wino_out(sm[i], r);
            for (i64 j = 0; j < cols; ++j) {
              const i64 at = (ybase + i * g.OW + j) * b;
              store(a.y + at, vadd(r[j], bias), a.step.z ? a.step.z + at : nullptr, lo, hi);
            }
          }
        }
      }
    }
  }
}

/// Tasks [t0, t1) of a Winograd convolution, tiles of side a.tile (4 or 2).
GPASS_NCHWC_FN inline void winograd(const conv_args& a, i64 t0, i64 t1) {
  if (a.tile == 2)
    winograd_tiles_of<2>(a, t0, t1);
  else
    winograd_tiles_of<4>(a, t0, t1);
}

// ------------------------------------------------------------------------------------------
// Depthwise convolution

inline constexpr int dw_p = conv_acc >= 12 ? 8 : 4;

/// The operands of one depthwise tile: P output pixels of one row of one channel block.
struct dw_tile_args {
  const float* x;  ///< the channel block's input plane
  i64 x_row;       ///< W * b
  i64 ih0, kh0, kh1, dh;
  i64 KW, dw, sw;
  const float* w;  ///< the block's taps [KH, KW, b]
  vec bias;
  float* y;
  const float* z;
};

template <int P>
GPASS_NCHWC_INL void dw_tile(const dw_tile_args& t, i64 iw0, i64 kw0, i64 kw1, const vec& lo, const vec& hi) {
  vec acc[P];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) acc[p] = t.bias;
  for (i64 kh = t.kh0; kh < t.kh1; ++kh) {
    const float* xr = t.x + (t.ih0 + kh * t.dh) * t.x_row;
    const float* wr = t.w + kh * t.KW * b;
    for (i64 kw = kw0; kw < kw1; ++kw) {
      const vec wv = vload(wr + kw * b);
      const float* xp = xr + (iw0 + kw * t.dw) * b;
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) acc[p] = vfma(vload(xp + p * t.sw * b), wv, acc[p]);
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) store(t.y + p * b, acc[p], t.z ? t.z + p * b : nullptr, lo, hi);
}

/// An interior tile of a 3-wide window at stride S (1 or 2), no dilation along the row: the
/// row's S * (P - 1) + 3 input pixels loaded once and each used by every tap that reads it
/// (dw_tile loads 3 P), the three taps' filter vectors once per kernel row. MobileNetV2's
/// 3x3 layers (AMD Zen 4, one thread, best of 300): 32 channels at 112x112 112 -> 101 us, 96
/// at 112x112 / 2 114-118 -> 100-104, 192 at 28x28 49-50 -> 43.5, 384 at 14x14 28 -> 23.5.
template <int P, int S>
GPASS_NCHWC_INL void dw_tile3(const dw_tile_args& t, i64 iw0, const vec& lo, const vec& hi) {
  constexpr int X = S * (P - 1) + 3;
  vec acc[P];
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) acc[p] = t.bias;
  for (i64 kh = t.kh0; kh < t.kh1; ++kh) {
    const float* xp = t.x + (t.ih0 + kh * t.dh) * t.x_row + iw0 * b;
    const float* wr = t.w + kh * 3 * b;
    vec xv[X];
#pragma GCC unroll 24
    for (int i = 0; i < X; ++i) xv[i] = vload(xp + i * b);
#pragma GCC unroll 3
    for (int kw = 0; kw < 3; ++kw) {
      const vec wv = vload(wr + kw * b);
#pragma GCC unroll 8
      for (int p = 0; p < P; ++p) acc[p] = vfma(xv[S * p + kw], wv, acc[p]);
    }
  }
#pragma GCC unroll 8
  for (int p = 0; p < P; ++p) store(t.y + p * b, acc[p], t.z ? t.z + p * b : nullptr, lo, hi);
}

template <int P>
GPASS_NCHWC_INL void dw_pixels(i64 n, const dw_tile_args& t, i64 iw0, i64 kw0, i64 kw1, const vec& lo, const vec& hi) {
  if constexpr (P > 1) {
    if (n != P) {
      dw_pixels<P - 1>(n, t, iw0, kw0, kw1, lo, hi);
      return;
    }
  }
  if (t.KW == 3 && t.dw == 1 && kw0 == 0 && kw1 == 3) {
    if (t.sw == 1) return dw_tile3<P, 1>(t, iw0, lo, hi);
    if (t.sw == 2) return dw_tile3<P, 2>(t, iw0, lo, hi);
  }
  dw_tile<P>(t, iw0, kw0, kw1, lo, hi);
}

/// Tasks [t0, t1) of a depthwise convolution: task = (n * Cb + cb) * OH + oh.
GPASS_NCHWC_FN inline void conv_depthwise(const conv_args& a, i64 t0, i64 t1) {
  const geometry& g = a.g;
  const i64 Cb = blocks(g.C, b);
  const vec lo = vset1(a.step.lo), hi = vset1(a.step.hi);
  const tap_range inner = interior(g.sw, g.pl, g.KW, g.dw, g.W, g.OW);
  const sgemm::flush_subnormals ftz;
  for (i64 t = t0; t < t1; ++t) {
    const i64 oh = t % g.OH, nc = t / g.OH, cb = nc % Cb;
    dw_tile_args u{};
    u.x = a.x + nc * g.H * g.W * b;
    u.x_row = g.W * b;
    u.ih0 = oh * g.sh - g.pt;
    const tap_range kr = taps_inside(u.ih0, g.KH, g.dh, g.H);
    u.kh0 = kr.lo;
    u.kh1 = kr.hi;
    u.dh = g.dh;
    u.KW = g.KW;
    u.dw = g.dw;
    u.sw = g.sw;
    u.w = a.w + cb * g.KH * g.KW * b;
    u.bias = vload(a.bias + cb * b);
    const i64 yrow = (nc * g.OH + oh) * g.OW * b;
    for (i64 ow = 0; ow < g.OW;) {
      u.y = a.y + yrow + ow * b;
      u.z = a.step.z ? a.step.z + yrow + ow * b : nullptr;
      const i64 iw0 = ow * g.sw - g.pl;
      if (ow < inner.lo || ow >= inner.hi) {
        const tap_range r = taps_inside(iw0, g.KW, g.dw, g.W);
        dw_tile<1>(u, iw0, r.lo, r.hi, lo, hi);
        ++ow;
        continue;
      }
      const i64 n = std::min<i64>(dw_p, inner.hi - ow);
      dw_pixels<dw_p>(n, u, iw0, 0, g.KW, lo, hi);
      ow += n;
    }
  }
}

// ------------------------------------------------------------------------------------------
// Pooling

/// Tasks [t0, t1) of a pool: task = (n * Cb + cb) * OH + oh; a pixel at a time, its taps
/// clipped to the input. Average: the sum over the taps inside the input, divided by their
/// count, or (count_include_pad) by the count of taps inside the padded input.
GPASS_NCHWC_FN inline void pool(const pool_args& a, i64 t0, i64 t1) {
  const geometry& g = a.g;
  const vec lo = vset1(a.step.lo), hi = vset1(a.step.hi);
  const bool is_max = a.kind == pool_kind::max;
  for (i64 t = t0; t < t1; ++t) {
    const i64 oh = t % g.OH, nc = t / g.OH;
    const float* xc = a.x + nc * g.H * g.W * b;
    const i64 ih0 = oh * g.sh - g.pt;
    const tap_range kr = taps_inside(ih0, g.KH, g.dh, g.H);
    const tap_range kp = taps_inside(ih0 + g.pt, g.KH, g.dh, g.H + g.pt + g.pb);
    const i64 yrow = (nc * g.OH + oh) * g.OW * b;
    for (i64 ow = 0; ow < g.OW; ++ow) {
      const i64 iw0 = ow * g.sw - g.pl;
      const tap_range cr = taps_inside(iw0, g.KW, g.dw, g.W);
      vec acc = is_max ? vset1(-std::numeric_limits<float>::infinity()) : vzero();
      for (i64 kh = kr.lo; kh < kr.hi; ++kh) {
        const i64 row = (ih0 + kh * g.dh) * g.W + iw0;  // may be negative: an index, never a pointer
        if (is_max)
          for (i64 kw = cr.lo; kw < cr.hi; ++kw) acc = vmax(vload(xc + (row + kw * g.dw) * b), acc);
        else
          for (i64 kw = cr.lo; kw < cr.hi; ++kw) acc = vadd(acc, vload(xc + (row + kw * g.dw) * b));
      }
      const i64 inside = (kr.hi - kr.lo) * (cr.hi - cr.lo);  // taps inside the input
      if (is_max && inside == 0) acc = vzero();  // a window entirely in padding: 0, as the NCHW pool's
      if (!is_max) {
        i64 count = inside;
        if (a.count_include_pad) {
          const tap_range cp = taps_inside(iw0 + g.pl, g.KW, g.dw, g.W + g.pl + g.pr);
          count = (kp.hi - kp.lo) * (cp.hi - cp.lo);
        }
        acc = count > 0 ? vmul(acc, vset1(1.0f / static_cast<float>(count))) : vzero();
      }
      const i64 at = yrow + ow * b;
      store(a.y + at, acc, a.step.z ? a.step.z + at : nullptr, lo, hi);
    }
  }
}

/// Tasks [t0, t1) of a global pool (y [N, Cb, 1, 1, b]): task = n * Cb + cb.
GPASS_NCHWC_FN inline void global_pool(const pool_args& a, i64 t0, i64 t1) {
  const geometry& g = a.g;
  const vec lo = vset1(a.step.lo), hi = vset1(a.step.hi);
  const bool is_max = a.kind == pool_kind::max;
  const i64 S = g.H * g.W;
  for (i64 t = t0; t < t1; ++t) {
    const float* xc = a.x + t * S * b;
    const vec init = is_max ? vset1(-std::numeric_limits<float>::infinity()) : vzero();
    vec acc[4] = {init, init, init, init};  // four chains: the adds' latency hidden
    i64 s = 0;
    for (; s + 4 <= S; s += 4)
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        const vec v = vload(xc + (s + u) * b);
        acc[u] = is_max ? vmax(v, acc[u]) : vadd(acc[u], v);
      }
    for (; s < S; ++s) acc[0] = is_max ? vmax(vload(xc + s * b), acc[0]) : vadd(acc[0], vload(xc + s * b));
    vec r = is_max ? vmax(vmax(acc[0], acc[1]), vmax(acc[2], acc[3])) : vadd(vadd(acc[0], acc[1]), vadd(acc[2], acc[3]));
    if (!is_max) r = vmul(r, vset1(1.0f / static_cast<float>(S)));
    store(a.y + t * b, r, a.step.z ? a.step.z + t * b : nullptr, lo, hi);
  }
}

#undef GPASS_NCHWC_FN
#undef GPASS_NCHWC_INL
