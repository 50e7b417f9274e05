// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fft.hpp
/// The discrete Fourier transform of the Eigen CPU kernels (ONNX DFT / STFT in reduce.hpp,
/// TensorFlow's FFT family in tf_spectral.hpp): radix 2 for powers of two, Bluestein's chirp-z
/// for any other length, in double. Private (`gpass::exec::cpu_detail::fft`).

#include <complex>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <utility>
#include <vector>

namespace gpass::exec::cpu_detail::fft {

using cplx = std::complex<double>;

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
    const double ang = sign * 2.0 * std::numbers::pi / static_cast<double>(len);
    for (std::size_t j = 0; j < half; ++j) tw[j] = std::polar(1.0, ang * static_cast<double>(j));
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
/// made; `run` needs a scratch buffer per thread.
class fft_plan {
 public:
  fft_plan(std::size_t n, int sign) : n_(n), sign_(sign) {
    if ((n & (n - 1)) == 0) return;
    m_ = 1;
    while (m_ < 2 * n - 1) m_ <<= 1;
    chirp_.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      // k^2 mod 2n keeps the angle small and exact
      const std::uint64_t k2 = (static_cast<std::uint64_t>(k) * k) % (2 * static_cast<std::uint64_t>(n));
      chirp_[k] = std::polar(1.0, sign * std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n));
    }
    kernel_.assign(m_, cplx(0));
    kernel_[0] = std::conj(chirp_[0]);
    for (std::size_t k = 1; k < n; ++k) kernel_[k] = kernel_[m_ - k] = std::conj(chirp_[k]);
    fft_pow2(kernel_.data(), m_, -1);
  }
  std::size_t size() const noexcept { return n_; }
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

}  // namespace gpass::exec::cpu_detail::fft
