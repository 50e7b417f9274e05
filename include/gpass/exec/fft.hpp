// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fft.hpp
/// The discrete Fourier transform of the executors (`gpass::exec::fft`): radix 2 for powers of
/// two, Bluestein's chirp-z for any other length, in double. The Eigen CPU kernels (ONNX DFT /
/// STFT in reduce.hpp, TensorFlow's FFT family in tf_spectral.hpp) run `fft_plan` on the host;
/// the CUDA kernels (`cuda/kernels/signal.hpp`) run the same plan on the device from its
/// tables (`chirp`, `kernel`, `twiddles`), so both take the same steps.

#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>

namespace gpass::exec::fft {

using cplx = std::complex<double>;

/// The twiddle factor j of a radix-2 stage of `len` points: e^(sign 2 pi i j / len).
inline cplx stage_twiddle(std::size_t len, std::size_t j, int sign) {
  const double ang = sign * 2.0 * std::numbers::pi / static_cast<double>(len);
  return std::polar(1.0, ang * static_cast<double>(j));
}

/// Every stage's twiddles of a radix-2 FFT of `m` points (a power of two), the stage of half
/// size h (len 2h) at [h - 1, 2h - 1): m - 1 in all.
inline std::vector<cplx> twiddles(std::size_t m, int sign) {
  std::vector<cplx> t;
  t.reserve(m > 0 ? m - 1 : 0);
  for (std::size_t len = 2; len <= m; len <<= 1)
    for (std::size_t j = 0; j < len / 2; ++j) t.push_back(stage_twiddle(len, j, sign));
  return t;
}

/// In-place radix-2 FFT of `m` (a power of two) points; `sign` -1: forward, +1: inverse
/// (unnormalized).
inline void fft_pow2(cplx* a, std::size_t m, int sign) {
  for (std::size_t i = 1, j = 0; i < m; ++i) {
    std::size_t bit = m >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  std::vector<cplx> tw;
  for (std::size_t len = 2; len <= m; len <<= 1) {
    const std::size_t half = len / 2;
    tw.resize(half);
    for (std::size_t j = 0; j < half; ++j) tw[j] = stage_twiddle(len, j, sign);
    for (std::size_t i = 0; i < m; i += len)
      for (std::size_t j = 0; j < half; ++j) {
        const cplx u = a[i + j], v = a[i + j + half] * tw[j];
        a[i + j] = u + v;
        a[i + j + half] = u - v;
      }
  }
}

/// A discrete Fourier transform of `n` points (any n >= 1): radix 2 when n is a power of two,
/// otherwise Bluestein's chirp-z algorithm on a power-of-two convolution. Immutable once
/// made; `run` needs a scratch buffer per thread. Its tables and buffers take up to ~200n
/// bytes: callers sized by a model check `bytes_needed` against their limits first.
class fft_plan {
 public:
  /// The length of Bluestein's convolution for `n` points (the power of two >= 2n - 1; 0 when
  /// n is a power of two, which radix 2 does without), or nullopt when that does not fit in
  /// size_t (searched naively, it would wrap to 0 and the search never end).
  static std::optional<std::size_t> padded_length(std::size_t n) noexcept {
    if ((n & (n - 1)) == 0) return 0;
    constexpr std::size_t top = std::size_t{1} << (std::numeric_limits<std::size_t>::digits - 1);
    if (n > top / 2) return std::nullopt;  // 2n - 1 > top: no power of two above it
    std::size_t m = 1;
    while (m < 2 * n - 1) m <<= 1;
    return m;
  }
  /// The bytes a plan of `n` points holds (Bluestein's chirp and kernel) plus those `runs`
  /// concurrent `run`s use (each: the caller's line of n points, the scratch, the twiddles),
  /// or nullopt when they do not fit in size_t. A caller that runs the plan on several
  /// threads passes the number of threads: each holds its own line and scratch.
  static std::optional<std::size_t> bytes_needed(std::size_t n, std::size_t runs = 1) noexcept {
    const auto m = padded_length(n);
    if (!m) return std::nullopt;
    // in complex numbers: radix 2: per run the line (n) and the twiddles (n/2); Bluestein: the
    // plan's chirp (n) and kernel (m), per run the line (n), the scratch (m), the twiddles (m/2)
    std::size_t plan = 0, run = n + n / 2, count = 0, bytes = 0;
    if (*m != 0 && (__builtin_add_overflow(n, *m, &plan) || __builtin_add_overflow(n, *m, &run) ||
                    __builtin_add_overflow(run, *m / 2, &run)))
      return std::nullopt;
    if (__builtin_mul_overflow(run, runs, &count) || __builtin_add_overflow(count, plan, &count) ||
        __builtin_mul_overflow(count, sizeof(cplx), &bytes))
      return std::nullopt;
    return bytes;
  }

  fft_plan(std::size_t n, int sign) : n_(n), sign_(sign) {
    const auto m = padded_length(n);
    if (!m) throw gpass::error("an FFT of " + std::to_string(n) + " points is too long (its padded length overflows)");
    m_ = *m;
    if (m_ == 0) return;
    chirp_.resize(n);
    // k^2 mod 2n keeps the angle small and exact; formed as (k-1)^2 + 2k - 1, which stays
    // below 4n, where k * k would overflow for k >= 2^32
    std::uint64_t k2 = 0;
    const std::uint64_t two_n = 2 * static_cast<std::uint64_t>(n);
    for (std::size_t k = 0; k < n; ++k) {
      if (k > 0) k2 = (k2 + 2 * static_cast<std::uint64_t>(k) - 1) % two_n;
      chirp_[k] = std::polar(1.0, sign * std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n));
    }
    kernel_.assign(m_, cplx(0));
    kernel_[0] = std::conj(chirp_[0]);
    for (std::size_t k = 1; k < n; ++k) kernel_[k] = kernel_[m_ - k] = std::conj(chirp_[k]);
    fft_pow2(kernel_.data(), m_, -1);
  }
  std::size_t size() const noexcept { return n_; }
  /// -1: forward, +1: inverse.
  int sign() const noexcept { return sign_; }
  /// Bluestein's convolution length (0: radix 2 alone), its chirp (n points) and kernel (the
  /// forward transform of the conjugate chirp, m points): what a device runs the plan from.
  std::size_t padded() const noexcept { return m_; }
  const std::vector<cplx>& chirp() const noexcept { return chirp_; }
  const std::vector<cplx>& kernel() const noexcept { return kernel_; }
  /// Transforms `a` (n points) in place; `scratch` is reused between calls.
  void run(cplx* a, std::vector<cplx>& scratch) const {
    if (m_ == 0) {
      fft_pow2(a, n_, sign_);
      return;
    }
    scratch.assign(m_, cplx(0));
    for (std::size_t k = 0; k < n_; ++k) scratch[k] = a[k] * chirp_[k];
    fft_pow2(scratch.data(), m_, -1);
    for (std::size_t k = 0; k < m_; ++k) scratch[k] *= kernel_[k];
    fft_pow2(scratch.data(), m_, +1);
    const double inv = 1.0 / static_cast<double>(m_);
    for (std::size_t k = 0; k < n_; ++k) a[k] = scratch[k] * chirp_[k] * inv;
  }

 private:
  std::size_t n_;
  int sign_;
  std::size_t m_ = 0;
  std::vector<cplx> chirp_, kernel_;
};

}  // namespace gpass::exec::fft
