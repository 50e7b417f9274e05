// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_spectral.hpp
/// Eigen CPU kernels of TensorFlow's spectral and complex ops (domain "tf"), with its rules:
/// - FFT / IFFT, FFT2D / IFFT2D, FFT3D / IFFT3D (complex64 / complex128): the transform of the
///   innermost 1, 2 or 3 dims; the inverse divides by the points transformed;
/// - RFFT / RFFT2D / RFFT3D (Treal float / double -> Tcomplex, `fft_length` int32 [k]): each
///   inner dim cropped to its fft_length (a shorter dim is an error, as in TensorFlow's
///   kernel: tf.signal pads before it), the last one's fft_length / 2 + 1 bins kept; IRFFT /
///   IRFFT2D / IRFFT3D: the inner dims but the last cropped to fft_length, the last to
///   fft_length / 2 + 1 and read as a Hermitian half spectrum
///   (complex inverse over the other dims, then complex-to-real over the last; the imaginary
///   parts of its DC and Nyquist bins do not count), divided by the points;
/// - Complex (real and imaginary parts, broadcasting), Real, Imag, ComplexAbs (|z| as hypot),
///   Angle (atan2(imag, real)), Conj.
/// Every transform is computed in double (fft.hpp) and rounded once to the element type.
/// Private (`gpass::exec::cpu_detail::tf_detail`); the unit `src/tf_elementwise.cpp` registers
/// them.

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>
#include <gpass/exec/fft.hpp>
#include <gpass/exec/signal_rules.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

namespace spectral_impl {

using fft::cplx;
using complex_types = type_list<std::complex<float>, std::complex<double>>;

/// Checks the tables and buffers of a transform of `n` points (up to ~200 bytes a point: more
/// than the line's data) against max_tensor_bytes.
inline void check_plan(const context& ctx, i64 n) {
  check_scratch(ctx, fft::fft_plan::bytes_needed(static_cast<std::size_t>(n)), "the plan of an FFT of " + std::to_string(n) + " points");
}

/// A row-major complex array in double being transformed along some of its axes.
struct grid {
  std::vector<i64> sizes;
  std::vector<cplx> data;

  /// Transforms every line along `axis` (`sign` -1 forward, +1 inverse, unnormalized).
  void transform(const context& ctx, std::size_t axis, int sign) {
    const i64 n = sizes[axis];
    if (n == 0 || data.empty()) return;
    i64 inner = 1;
    for (std::size_t d = axis + 1; d < sizes.size(); ++d) inner *= sizes[d];
    const i64 outer = static_cast<i64>(data.size()) / (n * inner);
    check_plan(ctx, n);
    const fft::fft_plan plan(static_cast<std::size_t>(n), sign);
    std::vector<cplx> line(static_cast<std::size_t>(n)), scratch;
    for (i64 o = 0; o < outer; ++o)
      for (i64 i = 0; i < inner; ++i) {
        cplx* base = data.data() + o * n * inner + i;
        for (i64 k = 0; k < n; ++k) line[static_cast<std::size_t>(k)] = base[k * inner];
        plan.run(line.data(), scratch);
        for (i64 k = 0; k < n; ++k) base[k * inner] = line[static_cast<std::size_t>(k)];
      }
  }
};

/// `x` (any rank >= 0, complex or real of type T) copied into a grid whose innermost `want.size()`
/// dims are `want` (each cropped, or zero-padded when longer).
template <class T>
grid load(const context& ctx, const gpass::tensor& x, const std::vector<i64>& want) {
  grid g;
  g.sizes = x.sizes();
  const std::size_t r = g.sizes.size(), k = want.size();
  for (std::size_t d = 0; d < k; ++d) g.sizes[r - k + d] = want[d];
  i64 count = 1;
  for (i64 s : g.sizes) count *= s;  // (each size at most the input's: no overflow)
  check_scratch(ctx, static_cast<double>(count) * sizeof(cplx), "the complex grid of an FFT");
  g.data.assign(static_cast<std::size_t>(count), cplx(0));
  if (count == 0 || x.size() == 0) return g;
  const T* in = x.data<T>();
  const std::vector<i64>& from = x.sizes();
  // walk the output's elements inside the input's bounds
  std::vector<i64> idx(r, 0);
  for (i64 o = 0; o < count; ++o) {
    bool inside = true;
    i64 src = 0;
    for (std::size_t d = 0; d < r; ++d) {
      inside = inside && idx[d] < from[d];
      src = src * from[d] + idx[d];
    }
    if (inside) {
      if constexpr (std::is_floating_point_v<T>) g.data[static_cast<std::size_t>(o)] = cplx(static_cast<double>(in[src]), 0.0);
      else g.data[static_cast<std::size_t>(o)] = cplx(in[src].real(), in[src].imag());
    }
    for (std::size_t d = r; d-- > 0;) {
      if (++idx[d] < g.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return g;
}

/// The fft_length values of an RFFT / IRFFT (`inverse`) of rank k and the output's sizes
/// (`signal_rules::tf_real_fft_sizes`).
inline std::pair<std::vector<i64>, std::vector<i64>> fft_lengths(const context& ctx, std::size_t k, bool inverse) {
  const gpass::tensor& x = ctx.input(0);
  signal_rules::check_tf_fft_rank(x.sizes(), k, ctx.node());
  std::vector<i64> v = int_values(ctx.input(1), ctx.node(), "fft_length");
  std::vector<i64> out = signal_rules::tf_real_fft_sizes(x.sizes(), k, ctx.input(1).sizes(), v, inverse, ctx.node());
  return {std::move(v), std::move(out)};
}

// FFT / IFFT of rank k on complex input
inline void complex_fft(context& ctx, std::size_t k, bool inverse) {
  const gpass::tensor& x = ctx.input(0);
  signal_rules::check_tf_fft_rank(x.sizes(), k, ctx.node());
  dispatch<complex_types>(x.element_type(), ctx.node(), [&]<class C>() {
    const std::vector<i64> inner(x.sizes().end() - static_cast<std::ptrdiff_t>(k), x.sizes().end());
    grid g = load<C>(ctx, x, inner);
    double points = 1;
    for (std::size_t d = 0; d < k; ++d) {
      g.transform(ctx, x.rank() - k + d, inverse ? +1 : -1);
      points *= static_cast<double>(inner[d]);
    }
    gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
    C* out = y.data<C>();
    const double scale = inverse && points > 0 ? 1.0 / points : 1.0;
    using R = typename C::value_type;
    for (std::size_t i = 0; i < g.data.size(); ++i)
      out[i] = C(static_cast<R>(g.data[i].real() * scale), static_cast<R>(g.data[i].imag() * scale));
  });
}

// RFFT of rank k: real input, complex output with fft_length / 2 + 1 bins in the last dim
inline void real_fft(context& ctx, std::size_t k, dtype complex_type) {
  const gpass::tensor& x = ctx.input(0);
  const auto lengths = fft_lengths(ctx, k, false);
  const std::vector<i64>& len = lengths.first;
  const std::vector<i64>& out_sizes = lengths.second;
  dispatch<type_list<float, double>>(x.element_type(), ctx.node(), [&]<class T>() {
    signal_rules::check_tf_rfft_types(x.element_type(), complex_type, ctx.node());
    using C = std::complex<T>;
    gpass::tensor& y = ctx.allocate_output(0, complex_type, out_sizes);
    if (y.size() == 0) return;
    grid g = load<T>(ctx, x, len);
    for (std::size_t d = 0; d < k; ++d) g.transform(ctx, x.rank() - k + d, -1);
    const i64 n = len.back(), bins = out_sizes.back(), lines = n == 0 ? 0 : static_cast<i64>(g.data.size()) / n;
    C* out = y.data<C>();
    for (i64 l = 0; l < lines; ++l)
      for (i64 b = 0; b < bins; ++b) {
        const cplx v = g.data[static_cast<std::size_t>(l * n + b)];
        out[l * bins + b] = C(static_cast<T>(v.real()), static_cast<T>(v.imag()));
      }
  });
}

// IRFFT of rank k: a Hermitian half spectrum in the last dim, real output of fft_length
inline void inverse_real_fft(context& ctx, std::size_t k, dtype real_type) {
  const gpass::tensor& x = ctx.input(0);
  const auto lengths = fft_lengths(ctx, k, true);
  const std::vector<i64>& len = lengths.first;
  const std::vector<i64>& out_sizes = lengths.second;
  dispatch<complex_types>(x.element_type(), ctx.node(), [&]<class C>() {
    using T = typename C::value_type;
    signal_rules::check_tf_irfft_types(x.element_type(), real_type, ctx.node());
    gpass::tensor& y = ctx.allocate_output(0, real_type, out_sizes);
    if (y.size() == 0) return;
    std::vector<i64> half = len;
    half.back() = len.back() / 2 + 1;
    grid g = load<C>(ctx, x, half);
    for (std::size_t d = 0; d + 1 < k; ++d) g.transform(ctx, x.rank() - k + d, +1);
    // complex-to-real along the last dim: the Hermitian line from its first n / 2 + 1 bins
    const i64 n = len.back(), h = half.back(), lines = static_cast<i64>(g.data.size()) / h;
    check_plan(ctx, n);
    const fft::fft_plan plan(static_cast<std::size_t>(n), +1);
    double points = 1;
    for (i64 l : len) points *= static_cast<double>(l);
    std::vector<cplx> line(static_cast<std::size_t>(n)), scratch;
    T* out = y.data<T>();
    for (i64 l = 0; l < lines; ++l) {
      const cplx* src = g.data.data() + l * h;
      for (i64 j = 0; j < n; ++j) line[static_cast<std::size_t>(j)] = j < h ? src[j] : std::conj(src[n - j]);
      line[0] = cplx(line[0].real(), 0.0);
      if (n % 2 == 0) line[static_cast<std::size_t>(n / 2)] = cplx(line[static_cast<std::size_t>(n / 2)].real(), 0.0);
      plan.run(line.data(), scratch);
      for (i64 j = 0; j < n; ++j) out[l * n + j] = static_cast<T>(line[static_cast<std::size_t>(j)].real() / points);
    }
  });
}

}  // namespace spectral_impl

/// Registers FFT, IFFT, FFT2D, IFFT2D, FFT3D, IFFT3D, RFFT, IRFFT, RFFT2D, IRFFT2D, RFFT3D,
/// IRFFT3D, Complex, Real, Imag, ComplexAbs, Angle, Conj.
inline void register_tf_spectral(registry& r) {
  using namespace spectral_impl;
  for (std::size_t k = 1; k <= 3; ++k) {
    const std::string suffix = k == 1 ? "" : std::to_string(k) + "D";
    for (bool inverse : {false, true}) {
      r.add({.domain = domain, .op = (inverse ? "IFFT" : "FFT") + suffix, .dtypes = complex_types::dtypes(),
             .make = [k, inverse](const kernel_node&) -> fn { return [k, inverse](context& ctx) { complex_fft(ctx, k, inverse); }; }});
    }
    r.add({.domain = domain, .op = "RFFT" + suffix, .dtypes = {dtype::f32, dtype::f64}, .make = [k](const kernel_node& n) -> fn {
      const dtype c = type_attr(n, "Tcomplex", dtype::complex64);
      return [k, c](context& ctx) { real_fft(ctx, k, c); };
    }});
    r.add({.domain = domain, .op = "IRFFT" + suffix, .dtypes = complex_types::dtypes(), .make = [k](const kernel_node& n) -> fn {
      const dtype t = type_attr(n, "Treal", dtype::f32);
      return [k, t](context& ctx) { inverse_real_fft(ctx, k, t); };
    }});
  }
  // complex -> real parts (Tout: float for complex64, double for complex128), and Conj
  auto part = [&](const char* op, auto f) {
    r.add({.domain = domain, .op = op, .dtypes = complex_types::dtypes(), .make = [f](const kernel_node&) -> fn {
      return [f](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        dispatch<complex_types>(x.element_type(), ctx.node(), [&]<class C>() {
          using T = typename C::value_type;
          gpass::tensor& y = ctx.allocate_output(0, dtype_of_v<T>, x.sizes());
          const C* in = x.data<C>();
          T* out = y.data<T>();
          for (i64 i = 0; i < x.size(); ++i) out[i] = f(in[i]);
        });
      };
    }});
  };
  part("Real", [](const auto& z) { return z.real(); });
  part("Imag", [](const auto& z) { return z.imag(); });
  part("ComplexAbs", [](const auto& z) { return std::hypot(z.real(), z.imag()); });
  part("Angle", [](const auto& z) { return std::atan2(z.imag(), z.real()); });
  // Complex: real and imaginary parts, broadcast against each other (float -> complex64,
  // double -> complex128)
  r.add({.domain = domain, .op = "Complex", .dtypes = {dtype::f32, dtype::f64}, .make = [](const kernel_node& n) -> fn {
    const dtype out = type_attr(n, "Tout", dtype::complex64);
    return [out](context& ctx) {
      const gpass::tensor& re = ctx.input(0);
      const gpass::tensor& im = ctx.input(1);
      if (re.element_type() != im.element_type()) ctx.fail("real and imag have different element types");
      dispatch<type_list<float, double>>(re.element_type(), ctx.node(), [&]<class T>() {
        if (out != dtype_of_v<std::complex<T>>)
          ctx.fail("Tout must be " + std::string(to_string(dtype_of_v<std::complex<T>>)) + " for " +
                   std::string(to_string(re.element_type())) + " parts, got " + std::string(to_string(out)));
        const std::vector<i64> sizes = broadcast_sizes(re.sizes(), im.sizes(), ctx.node());
        gpass::tensor& y = ctx.allocate_output(0, out, sizes);
        strided_walker<2> walk(sizes, {broadcast_strides(re.sizes(), sizes), broadcast_strides(im.sizes(), sizes)});
        walk.seek(0);
        std::complex<T>* o = y.data<std::complex<T>>();
        for (i64 i = 0; i < y.size(); ++i, walk.next()) o[i] = {re.data<T>()[walk.offset(0)], im.data<T>()[walk.offset(1)]};
      });
    };
  }});
  r.add({.domain = domain, .op = "Conj", .dtypes = complex_types::dtypes(), .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      dispatch<complex_types>(x.element_type(), ctx.node(), [&]<class C>() {
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
        for (i64 i = 0; i < x.size(); ++i) y.data<C>()[i] = std::conj(x.data<C>()[i]);
      });
    };
  }});
}

}  // namespace gpass::exec::cpu_detail::tf_detail
