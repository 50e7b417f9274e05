// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_spectral.hpp
/// CUDA kernels of TensorFlow's spectral and complex ops (domain "tf"), as the Eigen CPU
/// kernels compute them:
/// - FFT / IFFT, FFT2D / IFFT2D, FFT3D / IFFT3D (complex64 / complex128), RFFT / RFFT2D /
///   RFFT3D (f32 / f64 to Tcomplex) and IRFFT / IRFFT2D / IRFFT3D (to Treal): the inner axes
///   transformed one after the other, in the CPU's order, by the FFT plan of ONNX's DFT
///   (`cuda_signal`: the CPU's plan run on the device in double). Between axes the values stay
///   in double (a grid of complex doubles), rounded once to the output type, as on the CPU. An
///   RFFT / IRFFT input longer than its fft_length (IRFFT's last axis: fft_length / 2 + 1 bins)
///   is cropped first, as the CPU crops; IRFFT's last axis is the Hermitian extension of its
///   bins, the imaginary parts of its DC and Nyquist bins dropped, divided by the points
///   transformed as the CPU divides.
/// - Complex (broadcasting), Real, Imag, ComplexAbs, Angle and Conj as generated element-wise
///   kernels over complex64 (`g_c64`) and complex128 (`g_c128`) elements. complex64's |z| and
///   angle are computed in double and rounded to float (glibc's hypotf computes in double too;
///   its atan2f may differ by an ulp); complex128's use the device's hypot and atan2 (within an
///   ulp or two of glibc's).
/// Shapes, type pairs and messages are the CPU's (`signal_rules::tf_real_fft_sizes`, ...).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/array.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/signal.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/scratch.hpp>
#include <gpass/exec/shape_rules.hpp>
#include <gpass/exec/signal_rules.hpp>
#include <gpass/exec/tf_rules.hpp>

namespace gpass::exec {

namespace cuda_tf_spectral {

using cuda_detail::context;
using cuda_detail::fn;
using i64 = std::int64_t;

// ---- the transforms ---------------------------------------------------------------------------

/// The element type a tensor of type `t` holds its parts in (complex64: f32, complex128: f64).
inline dtype part_type(dtype t) {
  if (t == dtype::complex64) return dtype::f32;
  if (t == dtype::complex128) return dtype::f64;
  return t;
}

/// Whether `t` is complex64 or complex128.
inline bool is_complex(dtype t) { return t == dtype::complex64 || t == dtype::complex128; }

/// Where a pass reads from or writes to: the data, its part type, its parts per element (1 real,
/// 2 complex) and its sizes (in elements).
struct operand {
  const void* data = nullptr;
  dtype parts = dtype::f64;
  i64 C = 2;
  std::vector<i64> sizes;
};

/// One pass of a transform: the lines of `src` along `axis` (its first `len` points, zero past
/// its size), transformed by the plan of `len` points in direction `sign` (`c2r`: the Hermitian
/// extension, see `dft_load`), their first `Lout` points stored into `dst` (of `src`'s sizes but
/// `Lout` along the axis, `Cout` parts of type `dst_parts`), times `scale` (or divided by it).
inline void fft_pass(context& ctx, cuda_signal::fft_state& st, const operand& src, std::size_t axis, i64 len, int sign, int c2r,
                     void* dst, dtype dst_parts, i64 Cout, i64 Lout, double scale, bool divide) {
  i64 outer = 1, inner = 1;
  for (std::size_t d = 0; d < src.sizes.size(); ++d) {
    if (d < axis) outer *= src.sizes[d];
    if (d > axis) inner *= src.sizes[d];
  }
  const i64 lines = outer * inner;
  const std::string what = "an FFT of " + std::to_string(len) + " points";
  const auto t = cuda_signal::tables_for(ctx, st, len, sign, what);
  check_scratch(ctx, static_cast<double>(lines) * static_cast<double>(t->M) * 16.0, "the working lines of " + what);
  auto& pol = ctx.policy();
  const auto& kl = cuda_signal::fft_library(ctx, st, src.parts);
  cuda_tensor w = pol.allocate_tensor(dtype::f64, {lines, t->M, 2}, ctx.stream());
  {
    const void* xp = src.data;
    void* wp = w.data();
    const void* cp = t->bluestein ? t->chirp.data() : nullptr;
    long long ll = lines, in = inner, L = src.sizes[axis], C = src.C, ln = len, M = t->M;
    int cr = c2r;
    void* args[] = {&xp, &wp, &cp, &ll, &in, &L, &C, &ln, &M, &cr};
    pol.launch(kl.kernels[0], pol.blocks_for(lines * t->M), 256, args, ctx.stream());
  }
  cuda_signal::run_fft(ctx, kl, *t, w, lines);
  const auto& ks = cuda_signal::fft_library(ctx, st, dst_parts);
  cuda_signal::store_lines(ctx, ks, *t, w, dst, lines, inner, Lout, Cout, scale, divide);
}

/// The passes of a rank-k transform of `x` into `y` (allocated, not empty), one per inner axis
/// in order: axis r - k + d transformed by `len[d]` points in direction `sign`. Every pass but
/// the last writes a grid of complex doubles; the last writes `y`, with `last_c2r`, `Lout` and
/// the scale or divisor of the last axis. `grid_count` is the CPU's grid (checked as it is).
struct pass_plan {
  std::vector<i64> len;
  int sign = -1;
  int last_c2r = 0;
  i64 last_Lout = 0;
  double scale = 1.0;
  bool divide = false;
};
inline void run_passes(context& ctx, cuda_signal::fft_state& st, const cuda_tensor& x, i64 x_parts_per_element, cuda_tensor& y,
                       const pass_plan& p, double grid_count) {
  check_scratch(ctx, grid_count * 16.0, "the complex grid of an FFT");
  const std::size_t k = p.len.size(), r = x.rank();
  operand src{x.data(), part_type(x.element_type()), x_parts_per_element, x.sizes()};
  cuda_tensor grid;  // the current grid (src points into it after the first pass)
  for (std::size_t d = 0; d < k; ++d) {
    const std::size_t axis = r - k + d;
    const bool last = d + 1 == k;
    if (last) {
      fft_pass(ctx, st, src, axis, p.len[d], p.sign, p.last_c2r, y.data(), part_type(y.element_type()),
               is_complex(y.element_type()) ? 2 : 1, p.last_Lout, p.scale, p.divide);
      return;
    }
    std::vector<i64> sizes = src.sizes;
    sizes[axis] = p.len[d];
    double count = 1;
    for (i64 s : sizes) count *= static_cast<double>(s);
    check_scratch(ctx, count * 16.0, "the complex grid of an FFT");
    std::vector<i64> gs = sizes;
    gs.push_back(2);
    cuda_tensor next = ctx.policy().allocate_tensor(dtype::f64, gs, ctx.stream());
    fft_pass(ctx, st, src, axis, p.len[d], p.sign, 0, next.data(), dtype::f64, 2, p.len[d], 1.0, false);
    grid = std::move(next);
    src = operand{grid.data(), dtype::f64, 2, std::move(sizes)};
  }
}

/// The product of the sizes of `x` with its inner `want.size()` dims replaced by `want`.
inline double grid_count(const std::vector<i64>& sizes, const std::vector<i64>& want) {
  double c = 1;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    const std::size_t from_end = sizes.size() - d;
    c *= static_cast<double>(from_end <= want.size() ? want[want.size() - from_end] : sizes[d]);
  }
  return c;
}

/// FFT / IFFT of rank k (complex to complex; the inverse divided by the points, as a product
/// with their reciprocal).
inline fn make_complex_fft(std::size_t k, bool inverse) {
  auto st = std::make_shared<cuda_signal::fft_state>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    signal_rules::check_tf_fft_rank(x.sizes(), k, ctx.node());
    if (!is_complex(x.element_type())) ctx.fail("input must be complex64 or complex128, got " + std::string(to_string(x.element_type())));
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
    if (y.size() == 0) return;
    pass_plan p;
    p.len.assign(x.sizes().end() - static_cast<std::ptrdiff_t>(k), x.sizes().end());
    double points = 1;
    for (i64 l : p.len) points *= static_cast<double>(l);
    p.sign = inverse ? +1 : -1;
    p.last_Lout = p.len.back();
    p.scale = inverse ? 1.0 / points : 1.0;
    run_passes(ctx, *st, x, 2, y, p, static_cast<double>(x.size()));
  };
}

/// `x` cropped to at most `want` points along its inner `want.size()` axes, as the CPU crops
/// before the first pass (so that no pass works on points the CPU drops): a copy where an axis
/// is longer, else nothing. Complex elements move as their two parts.
inline std::optional<cuda_tensor> crop_to(context& ctx, cuda_detail::lazy_library& lib, const cuda_tensor& x, const std::vector<i64>& want) {
  const auto& xs = x.sizes();
  std::vector<i64> sizes = xs;
  bool longer = false;
  for (std::size_t d = 0; d < want.size(); ++d) {
    i64& sz = sizes[xs.size() - want.size() + d];
    if (sz > want[d]) {
      sz = want[d];
      longer = true;
    }
  }
  if (!longer) return std::nullopt;
  cuda_tensor y = ctx.policy().allocate_tensor(x.element_type(), sizes, ctx.stream());
  std::vector<i64> in_st = shape_rules::strides_of(xs), view = sizes;
  if (is_complex(x.element_type())) {
    for (i64& st : in_st) st *= 2;
    in_st.push_back(1);
    view.push_back(2);
  }
  cuda_array_detail::move(ctx, lib, part_type(x.element_type()), y.data(), x.data(), view, in_st, shape_rules::strides_of(view), 0);
  return y;
}

/// The fft_length values of an RFFT / IRFFT (read on the host) and the output's sizes.
inline std::pair<std::vector<i64>, std::vector<i64>> fft_lengths(context& ctx, std::size_t k, bool inverse) {
  const cuda_tensor& x = ctx.input(0);
  signal_rules::check_tf_fft_rank(x.sizes(), k, ctx.node());
  std::vector<i64> v = cuda_detail::host_ints(ctx, 1);
  std::vector<i64> out = signal_rules::tf_real_fft_sizes(x.sizes(), k, ctx.input(1).sizes(), v, inverse, ctx.node());
  return {std::move(v), std::move(out)};
}

/// RFFT of rank k: the complex transform of the real input cropped to fft_length, the last
/// axis's first fft_length / 2 + 1 bins kept.
inline fn make_real_fft(const kernel_node& n, std::size_t k) {
  const dtype complex_type = tf_rules::type_attr(n, "Tcomplex", dtype::complex64);
  auto st = std::make_shared<cuda_signal::fft_state>();
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const auto lengths = fft_lengths(ctx, k, false);
    if (x.element_type() != dtype::f32 && x.element_type() != dtype::f64)
      ctx.fail("input must be float32 or float64, got " + std::string(to_string(x.element_type())));
    signal_rules::check_tf_rfft_types(x.element_type(), complex_type, ctx.node());
    cuda_tensor& y = ctx.allocate_output(0, complex_type, lengths.second);
    if (y.size() == 0) return;
    pass_plan p;
    p.len = lengths.first;
    p.last_Lout = lengths.second.back();
    const auto c = crop_to(ctx, *lib, x, p.len);
    run_passes(ctx, *st, c ? *c : x, 1, y, p, grid_count(x.sizes(), p.len));
  };
}

/// IRFFT of rank k: complex inverses over the inner axes but the last, then the real inverse of
/// the last's Hermitian half spectrum, divided by every point transformed.
inline fn make_inverse_real_fft(const kernel_node& n, std::size_t k) {
  const dtype real_type = tf_rules::type_attr(n, "Treal", dtype::f32);
  auto st = std::make_shared<cuda_signal::fft_state>();
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const auto lengths = fft_lengths(ctx, k, true);
    if (!is_complex(x.element_type())) ctx.fail("input must be complex64 or complex128, got " + std::string(to_string(x.element_type())));
    signal_rules::check_tf_irfft_types(x.element_type(), real_type, ctx.node());
    cuda_tensor& y = ctx.allocate_output(0, real_type, lengths.second);
    if (y.size() == 0) return;
    pass_plan p;
    p.len = lengths.first;
    p.sign = +1;
    p.last_c2r = 2;
    p.last_Lout = p.len.back();
    double points = 1;
    for (i64 l : p.len) points *= static_cast<double>(l);
    p.scale = points;
    p.divide = true;
    std::vector<i64> half = p.len;
    half.back() = half.back() / 2 + 1;
    const auto c = crop_to(ctx, *lib, x, half);
    run_passes(ctx, *st, c ? *c : x, 2, y, p, grid_count(x.sizes(), half));
  };
}

// ---- the element-wise complex ops -------------------------------------------------------------

/// An element-wise op over complex elements: its body for each complex type (`x0` a `g_c64` or
/// `g_c128`, `r` of the output type).
struct part_op {
  const char* name;
  bool keeps_type;  ///< the output complex (Conj) or its part type
  const char* body64;
  const char* body128;
};
inline const std::vector<part_op>& part_ops() {
  static const std::vector<part_op> v = {
      {"Real", false, "r = x0.x;", "r = x0.x;"},
      {"Imag", false, "r = x0.y;", "r = x0.y;"},
      // (an infinite part gives +inf even beside a NaN, as hypotf)
      {"ComplexAbs", false,
       "r = isinf(x0.x) || isinf(x0.y) ? __int_as_float(0x7f800000) : (float)sqrt((double)x0.x * (double)x0.x + (double)x0.y * (double)x0.y);",
       "r = hypot(x0.x, x0.y);"},
      {"Angle", false, "r = (float)atan2((double)x0.y, (double)x0.x);", "r = atan2(x0.y, x0.x);"},
      {"Conj", true, "r.x = x0.x; r.y = -x0.y;", "r.x = x0.x; r.y = -x0.y;"},
  };
  return v;
}

/// The element-wise source of `op` over complex type `t`.
inline std::string part_source(const part_op& op, dtype t) {
  const bool wide = t == dtype::complex128;
  return cuda_codegen::elementwise_source({{t}, op.keeps_type ? t : part_type(t), wide ? op.body128 : op.body64});
}

inline fn make_part(const part_op& op) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [op, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    if (!is_complex(t)) ctx.fail("input must be complex64 or complex128, got " + std::string(to_string(t)));
    cuda_tensor& y = ctx.allocate_output(0, op.keeps_type ? t : part_type(t), x.sizes());
    if (y.size() == 0) return;
    const auto& k = lib->get(ctx.policy(), std::string(to_string(t)), {"ew_flat", "ew_strided"}, [&] { return part_source(op, t); });
    const cuda_tensor* xs[] = {&x};
    cuda_detail::launch_elementwise(ctx, k, y, xs);
  };
}

/// Complex(real, imag): the parts broadcast against each other (f32 -> complex64, f64 ->
/// complex128, as Tout says).
inline std::string complex_source(dtype parts) {
  return cuda_codegen::elementwise_source({{parts, parts}, signal_rules::tf_complex_of(parts), "r.x = x0; r.y = x1;"});
}
inline fn make_complex(const kernel_node& n) {
  const dtype out = tf_rules::type_attr(n, "Tout", dtype::complex64);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [out, lib](context& ctx) {
    const cuda_tensor& re = ctx.input(0);
    const cuda_tensor& im = ctx.input(1);
    const dtype t = re.element_type();
    if (t != im.element_type()) ctx.fail("real and imag have different element types");
    if (t != dtype::f32 && t != dtype::f64) ctx.fail("real and imag must be float32 or float64, got " + std::string(to_string(t)));
    if (out != signal_rules::tf_complex_of(t))
      ctx.fail("Tout must be " + std::string(to_string(signal_rules::tf_complex_of(t))) + " for " + std::string(to_string(t)) +
               " parts, got " + std::string(to_string(out)));
    cuda_tensor& y = ctx.allocate_output(0, out, shape_rules::broadcast_sizes(re.sizes(), im.sizes(), ctx.node()));
    if (y.size() == 0) return;
    const auto& k = lib->get(ctx.policy(), std::string(to_string(t)), {"ew_flat", "ew_strided"}, [&] { return complex_source(t); });
    const cuda_tensor* xs[] = {&re, &im};
    cuda_detail::launch_elementwise(ctx, k, y, xs);
  };
}

/// The ops of this file (domain "tf"): their kernels take complex values.
inline std::vector<std::string> complex_ops() {
  std::vector<std::string> r;
  for (const char* k : {"", "2D", "3D"})
    for (const char* op : {"FFT", "IFFT", "RFFT", "IRFFT"}) r.push_back(std::string(op) + k);
  for (const auto& op : part_ops()) r.emplace_back(op.name);
  r.emplace_back("Complex");
  return r;
}

}  // namespace cuda_tf_spectral

/// Every source tf_spectral.hpp generates (name, CUDA C++), for compile checks (the transforms'
/// library is signal.hpp's).
inline std::vector<std::pair<std::string, std::string>> tf_spectral_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (const auto& op : cuda_tf_spectral::part_ops())
    for (dtype t : {dtype::complex64, dtype::complex128})
      r.emplace_back("tf::" + std::string(op.name) + "_" + std::string(to_string(t)), cuda_tf_spectral::part_source(op, t));
  for (dtype t : {dtype::f32, dtype::f64}) r.emplace_back("tf::Complex_" + std::string(to_string(t)), cuda_tf_spectral::complex_source(t));
  return r;
}

/// Registers FFT, IFFT, FFT2D, IFFT2D, FFT3D, IFFT3D, RFFT, IRFFT, RFFT2D, IRFFT2D, RFFT3D,
/// IRFFT3D, Complex, Real, Imag, ComplexAbs, Angle and Conj (domain "tf").
inline void register_cuda_tf_spectral(kernel_registry<cuda>& r) {
  const std::vector<dtype> complex_types{dtype::complex64, dtype::complex128};
  for (std::size_t k = 1; k <= 3; ++k) {
    const std::string suffix = k == 1 ? "" : std::to_string(k) + "D";
    for (bool inverse : {false, true})
      r.add({.domain = "tf", .op = (inverse ? "IFFT" : "FFT") + suffix, .dtypes = complex_types,
             .make = [k, inverse](const kernel_node&) { return cuda_tf_spectral::make_complex_fft(k, inverse); }});
    r.add({.domain = "tf", .op = "RFFT" + suffix, .dtypes = {dtype::f32, dtype::f64},
           .make = [k](const kernel_node& n) { return cuda_tf_spectral::make_real_fft(n, k); }});
    r.add({.domain = "tf", .op = "IRFFT" + suffix, .dtypes = complex_types,
           .make = [k](const kernel_node& n) { return cuda_tf_spectral::make_inverse_real_fft(n, k); }});
  }
  for (const auto& op : cuda_tf_spectral::part_ops())
    r.add({.domain = "tf", .op = op.name, .dtypes = complex_types, .make = [&op](const kernel_node&) { return cuda_tf_spectral::make_part(op); }});
  r.add({.domain = "tf", .op = "Complex", .dtypes = {dtype::f32, dtype::f64}, .make = cuda_tf_spectral::make_complex});
}

}  // namespace gpass::exec
