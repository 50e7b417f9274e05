// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file signal_rules.hpp
/// The rules of ONNX's signal ops that the Eigen CPU and CUDA kernels share: DFT's and STFT's
/// shapes, MelWeightMatrix's checks and filter edges; and of TensorFlow's FFT family: the rank,
/// RFFT / IRFFT's fft_length and output sizes, the real / complex type pairs. Errors name the
/// node.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/exec/kernel.hpp>

namespace gpass::exec::signal_rules {

using i64 = std::int64_t;

/// DFT's geometry over an input of `sizes` (real [..., 1] or complex [..., 2]): the transform
/// axis, its length L, the transform's length `len` (dft_length, or L; an inverse one-sided
/// transform 2 (L - 1)), the output's length along the axis and its last dimension, and whether
/// the transform is complex-to-real (inverse and one-sided: the Hermitian spectrum from its
/// first len / 2 + 1 bins).
struct dft_geometry {
  i64 axis = 0, L = 0, len = 0, Lout = 0, C = 0, Cout = 0;
  bool c2r = false;
  std::vector<i64> out_sizes;
};
inline dft_geometry dft_shape(const std::vector<i64>& sizes, i64 axis, std::optional<i64> dft_length, bool inverse, bool onesided,
                              const kernel_node& n) {
  const i64 r = static_cast<i64>(sizes.size());
  if (r < 2) n.fail("DFT input needs rank >= 2 (the last dimension holds real/imaginary parts)");
  dft_geometry g;
  g.C = sizes.back();
  if (g.C != 1 && g.C != 2) n.fail("DFT input's last dimension must be 1 (real) or 2 (complex), got " + std::to_string(g.C));
  if (axis < -r || axis >= r - 1 || axis == -1) n.fail("DFT axis " + std::to_string(axis) + " is out of range");
  g.axis = axis < 0 ? axis + r : axis;
  g.L = sizes[static_cast<std::size_t>(g.axis)];
  g.len = dft_length ? *dft_length : inverse && onesided ? 2 * (g.L - 1) : g.L;
  if (g.len < 1) n.fail("dft_length must be positive, got " + std::to_string(g.len));
  g.c2r = inverse && onesided;
  g.Lout = !inverse && onesided ? g.len / 2 + 1 : g.len;
  g.Cout = g.c2r ? 1 : 2;
  g.out_sizes = sizes;
  g.out_sizes[static_cast<std::size_t>(g.axis)] = g.Lout;
  g.out_sizes.back() = g.Cout;
  return g;
}
/// The lines of a DFT: the products of the dimensions before the axis (`outer`) and between it
/// and the last (`inner`). Only for a non-empty output, whose sizes bound them.
inline std::pair<i64, i64> dft_lines(const std::vector<i64>& sizes, const dft_geometry& g) {
  i64 outer = 1, inner = 1;
  for (i64 d = 0; d < g.axis; ++d) outer *= sizes[static_cast<std::size_t>(d)];
  for (std::size_t d = static_cast<std::size_t>(g.axis) + 1; d + 1 < sizes.size(); ++d) inner *= sizes[d];
  return {outer, inner};
}

/// STFT's geometry: signal [batch B, length S, 1 or 2 (C)], frame_step, the window's sizes
/// (when given: rank 1, its length the frame length) and frame_length (when given); frames of
/// `fl` points every `step`, `bins` per frame (fl / 2 + 1 when one-sided).
struct stft_geometry {
  i64 B = 0, S = 0, C = 0, step = 0, fl = 0, frames = 0, bins = 0;
};
inline stft_geometry stft_shape(const std::vector<i64>& sizes, i64 step, const std::vector<i64>* window, std::optional<i64> frame_length,
                                bool onesided, const kernel_node& n) {
  if (sizes.size() != 3) n.fail("STFT signal must have rank 3 [batch, length, 1 or 2]");
  stft_geometry g;
  g.B = sizes[0], g.S = sizes[1], g.C = sizes[2];
  if (g.C != 1 && g.C != 2) n.fail("STFT signal's last dimension must be 1 or 2");
  if (step < 1) n.fail("frame_step must be positive");
  g.step = step;
  if (window && window->size() != 1) n.fail("window must have rank 1");
  g.fl = window ? (*window)[0] : g.S;
  if (frame_length) {
    if (window && *frame_length != g.fl)
      n.fail("frame_length " + std::to_string(*frame_length) + " differs from the window's length " + std::to_string(g.fl));
    g.fl = *frame_length;
  }
  if (g.fl < 1 || g.fl > g.S) n.fail("frame_length " + std::to_string(g.fl) + " must be in [1, " + std::to_string(g.S) + "]");
  g.frames = 1 + (g.S - g.fl) / g.step;
  g.bins = onesided ? g.fl / 2 + 1 : g.fl;
  return g;
}

/// Checks MelWeightMatrix's arguments.
inline void check_mel_args(i64 mels, i64 dft, i64 rate, double lo, double hi, const kernel_node& n) {
  if (mels < 1 || dft < 1 || rate < 1) n.fail("num_mel_bins, dft_length and sample_rate must be positive");
  // NaN passes every comparison below and would reach a cast to int64 (undefined)
  if (!std::isfinite(lo) || !std::isfinite(hi)) n.fail("lower_edge_hertz and upper_edge_hertz must be finite");
  if (lo < 0 || hi <= lo || hi > static_cast<double>(rate) / 2 + 1e-9) n.fail("need 0 <= lower_edge_hertz < upper_edge_hertz <= sample_rate / 2");
}

/// MelWeightMatrix's filter edges (arguments checked by `check_mel_args`, and the output of
/// [dft / 2 + 1, mels] made first: the edges are no more than its elements): the FFT bin of each
/// of the `mels` + 2 edges, spaced evenly on the mel scale from `lo` to `hi` Hz; filter i rises
/// from edge i to edge i + 1 and falls to edge i + 2. Checks that every bin a filter touches is
/// one of the dft_length / 2 + 1 bins.
inline std::vector<i64> mel_edges(i64 mels, i64 dft, i64 rate, double lo, double hi, const kernel_node& n) {
  auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  // sums in double: mels + 2 and dft + 1 would overflow int64 for the largest values
  const double lo_mel = to_mel(lo), step = (to_mel(hi) - lo_mel) / (static_cast<double>(mels) + 2.0);
  std::vector<i64> e(static_cast<std::size_t>(mels) + 2);
  for (i64 i = 0; i < mels + 2; ++i) {
    // the FFT bin of edge i: about (dft + 1) / 2 at most, fits in int64
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + lo_mel) / 2595.0) - 1.0);
    e[static_cast<std::size_t>(i)] = static_cast<i64>(std::floor((static_cast<double>(dft) + 1.0) * hz / static_cast<double>(rate)));
  }
  const i64 nbins = dft / 2 + 1;
  for (i64 i = 0; i < mels; ++i) {
    const i64 l = e[static_cast<std::size_t>(i)], c = e[static_cast<std::size_t>(i) + 1], h = e[static_cast<std::size_t>(i) + 2];
    if (l < 0 || c >= nbins || (h > c && h - 1 >= nbins)) n.fail("mel filter bin out of range");
  }
  return e;
}

// ---- TensorFlow's FFT family ------------------------------------------------------------------

/// Checks that an input of `sizes` has the rank (>= k) a rank-k transform needs.
inline void check_tf_fft_rank(const std::vector<i64>& sizes, std::size_t k, const kernel_node& n) {
  if (sizes.size() < k) n.fail("input must be at least rank " + std::to_string(k) + ", got sizes " + shape::of(sizes).to_string());
}

/// The output sizes of TensorFlow's rank-k RFFT (or IRFFT: `inverse`) over an input of `sizes`
/// given fft_length (of sizes `length_sizes`, values `v`): k non-negative values, each at most
/// its input dim (IRFFT's last: fft_length / 2 + 1 at most), as TensorFlow's kernels require
/// (tf.signal pads the input before them). The inner dims become fft_length; RFFT's last keeps
/// fft_length / 2 + 1 bins (none for 0).
inline std::vector<i64> tf_real_fft_sizes(const std::vector<i64>& sizes, std::size_t k, const std::vector<i64>& length_sizes,
                                          const std::vector<i64>& v, bool inverse, const kernel_node& n) {
  check_tf_fft_rank(sizes, k, n);
  if (length_sizes.size() != 1 || v.size() != k)
    n.fail("fft_length must be a vector of " + std::to_string(k) + " values, got sizes " + shape::of(length_sizes).to_string());
  std::vector<i64> out = sizes;
  for (std::size_t i = 0; i < k; ++i) {
    if (v[i] < 0) n.fail("fft_length must >= 0, got " + std::to_string(v[i]));
    const std::size_t d = sizes.size() - k + i;
    const i64 need = inverse && i + 1 == k ? v[i] / 2 + 1 : v[i];
    if (sizes[d] < need)
      n.fail("Input dimension " + std::to_string(d) + " must have length of at least " + std::to_string(need) + " but got: " +
             std::to_string(sizes[d]));
    out[d] = v[i];
  }
  if (!inverse) out.back() = v.back() == 0 ? 0 : v.back() / 2 + 1;
  return out;
}

/// TensorFlow's pairs of real and complex types: f32 with complex64, f64 with complex128.
inline dtype tf_complex_of(dtype real) { return real == dtype::f64 ? dtype::complex128 : dtype::complex64; }
inline dtype tf_real_of(dtype complex) { return complex == dtype::complex128 ? dtype::f64 : dtype::f32; }
/// Checks RFFT's Tcomplex against its real input type (f32 or f64).
inline void check_tf_rfft_types(dtype real, dtype complex, const kernel_node& n) {
  if (tf_complex_of(real) != complex)
    n.fail("Treal " + std::string(to_string(real)) + " goes with Tcomplex " + (real == dtype::f64 ? "complex128" : "complex64") + ", got " +
           std::string(to_string(complex)));
}
/// Checks IRFFT's Treal against its complex input type (complex64 or complex128).
inline void check_tf_irfft_types(dtype complex, dtype real, const kernel_node& n) {
  if (tf_real_of(complex) != real)
    n.fail("Tcomplex " + std::string(to_string(complex)) + " goes with Treal " + std::string(to_string(tf_real_of(complex))) + ", got " +
           std::string(to_string(real)));
}

}  // namespace gpass::exec::signal_rules
