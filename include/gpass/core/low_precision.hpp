// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file low_precision.hpp
/// Conversions between float and the low-precision dtypes (`is_low_precision`): the four
/// float8 kinds, float8e8m0, float4e2m1 and the 4- and 2-bit integers, whose tensors hold one
/// bit code per byte. The rules are ONNX's (Cast-19/21/24, QuantizeLinear), as its reference
/// implementation applies them:
/// - to a float8: round to nearest, ties to even; a finite value past the largest one becomes
///   that largest value with `saturate`, else infinity (f8e5m2) or NaN (the others, which
///   have no infinity); infinities likewise (saturate: the largest value); NaN stays NaN; the
///   `fnuz` kinds have no negative zero;
/// - to f4e2m1: round to nearest even, always saturating (largest 6; NaN becomes -0, as
///   ml_dtypes does);
/// - to f8e8m0: the float32's exponent, rounded by `round_mode` (up, down, nearest), 0xFF for
///   NaN and infinities; with `saturate` the largest power (2^127) does not round up into NaN;
/// - to the 4- and 2-bit integers: truncated toward zero and wrapped (like a C cast to a
///   narrower integer; NaN and infinities give 0).
/// \code
///   std::uint8_t c = gpass::to_low_precision(gpass::dtype::f8e4m3fn, 3.14159f);  // 0x45 = 3.25
///   float v = gpass::from_low_precision(gpass::dtype::f8e4m3fn, c);               // 3.25
/// \endcode

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include <gpass/core/dtype.hpp>

namespace gpass {

/// How `to_low_precision` rounds to f8e8m0 (Cast-24's `round_mode`).
enum class e8m0_rounding { up, down, nearest };

namespace detail {

/// The layout of a small float kind: exponent and mantissa bits, bias, and its special codes.
struct small_float {
  int exp_bits, man_bits, bias;
  bool has_inf;       ///< IEEE-like infinities (f8e5m2)
  bool fnuz;          ///< NaN is 0x80, no negative zero
  bool has_nan;       ///< f4e2m1 has none
  double max;         ///< the largest finite value
};

constexpr small_float small_float_of(dtype t) noexcept {
  switch (t) {
    case dtype::f8e4m3fn: return {4, 3, 7, false, false, true, 448.0};
    case dtype::f8e4m3fnuz: return {4, 3, 8, false, true, true, 240.0};
    case dtype::f8e5m2: return {5, 2, 15, true, false, true, 57344.0};
    case dtype::f8e5m2fnuz: return {5, 2, 16, false, true, true, 57344.0};
    default: return {2, 1, 1, false, false, false, 6.0};  // f4e2m1
  }
}

inline float decode_small_float(const small_float& f, std::uint8_t code) {
  const int total = f.exp_bits + f.man_bits;
  const bool neg = (code >> total) & 1;
  const int e = (code >> f.man_bits) & ((1 << f.exp_bits) - 1);
  const int m = code & ((1 << f.man_bits) - 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (f.fnuz && code == 0x80) return nan;
  const int emax = (1 << f.exp_bits) - 1;
  if (f.has_inf && e == emax) return m == 0 ? (neg ? -1.0f : 1.0f) * std::numeric_limits<float>::infinity() : nan;
  if (!f.has_inf && !f.fnuz && f.has_nan && e == emax && m == (1 << f.man_bits) - 1) return nan;  // e4m3fn
  double v = e == 0 ? std::ldexp(static_cast<double>(m), 1 - f.bias - f.man_bits)
                    : std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f.man_bits), e - f.bias);
  return static_cast<float>(neg ? -v : v);
}

inline std::uint8_t encode_small_float(const small_float& f, double v, bool saturate) {
  const int total = f.exp_bits + f.man_bits;
  const std::uint8_t sign = std::signbit(v) ? static_cast<std::uint8_t>(1u << total) : 0;
  const std::uint8_t max_code = [&] {
    // the largest finite code: all exponent bits set except for has_inf; e4m3fn's top code is NaN
    const int emax = (1 << f.exp_bits) - 1;
    if (f.has_inf) return static_cast<std::uint8_t>(((emax - 1) << f.man_bits) | ((1 << f.man_bits) - 1));
    if (!f.fnuz && f.has_nan) return static_cast<std::uint8_t>((emax << f.man_bits) | ((1 << f.man_bits) - 2));
    return static_cast<std::uint8_t>((emax << f.man_bits) | ((1 << f.man_bits) - 1));
  }();
  const std::uint8_t nan_code = f.fnuz ? 0x80 : static_cast<std::uint8_t>(sign | ((1 << total) - 1));
  if (std::isnan(v)) {
    if (!f.has_nan) return static_cast<std::uint8_t>(1u << total);  // f4e2m1: -0
    if (f.has_inf) return static_cast<std::uint8_t>(sign | (((1 << total) - 1) - 1));  // e5m2: 0x7E / 0xFE
    return nan_code;
  }
  auto overflow = [&]() -> std::uint8_t {
    if (saturate || !f.has_nan) return static_cast<std::uint8_t>(max_code | sign);
    if (f.has_inf) return static_cast<std::uint8_t>(sign | (((1 << f.exp_bits) - 1) << f.man_bits));
    return nan_code;
  };
  const double a = std::abs(v);
  if (std::isinf(a)) return overflow();
  if (a == 0) return f.fnuz ? 0 : sign;
  // round to the grid of the binade (subnormals below the smallest normal)
  int e = std::ilogb(a);
  const int emin = 1 - f.bias;
  if (e < emin) e = emin;
  const double q = std::ldexp(1.0, e - f.man_bits);
  const double r = std::nearbyint(a / q) * q;  // ties to even (the default rounding mode)
  if (r > f.max) return overflow();
  if (r == 0) return f.fnuz ? 0 : sign;
  int re = std::ilogb(r);
  std::uint8_t code;
  if (re < emin) {
    code = static_cast<std::uint8_t>(std::ldexp(r, -(emin - f.man_bits)));  // subnormal mantissa
  } else {
    const int m = static_cast<int>(std::ldexp(r, f.man_bits - re)) - (1 << f.man_bits);
    code = static_cast<std::uint8_t>(((re + f.bias) << f.man_bits) | m);
  }
  // fnuz: the sign bit of a non-zero value (0x80 alone is NaN, excluded above)
  return static_cast<std::uint8_t>(code | sign);
}

inline std::uint8_t encode_e8m0(float v, bool saturate, e8m0_rounding mode) {
  const auto bits = std::bit_cast<std::uint32_t>(v);
  std::uint32_t e = (bits >> 23) & 0xFF;
  if (e == 0xFF) return 0xFF;
  bool up = false;
  if (mode == e8m0_rounding::nearest) {
    const bool g = bits & 0x400000, r = bits & 0x200000, s = (bits & 0x1FFFFF) != 0, lsb = e > 0;
    up = g && (r || s || lsb);
  } else if (mode == e8m0_rounding::up) {
    up = (bits & 0x7FFFFF) != 0;
  }
  if (up && !(saturate && e == 0xFE)) ++e;
  return static_cast<std::uint8_t>(e);
}

}  // namespace detail

/// The value of bit code `code` of low-precision dtype `t` (integers exactly; NaN where the
/// code is one). `t` must satisfy `is_low_precision`.
inline float from_low_precision(dtype t, std::uint8_t code) {
  switch (t) {
    case dtype::u4: return static_cast<float>(code & 0x0F);
    case dtype::i4: return static_cast<float>((code & 0x08) ? static_cast<int>(code & 0x0F) - 16 : code & 0x0F);
    case dtype::u2: return static_cast<float>(code & 0x03);
    case dtype::i2: return static_cast<float>((code & 0x02) ? static_cast<int>(code & 0x03) - 4 : code & 0x03);
    case dtype::f8e8m0:
      return code == 0xFF ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(std::ldexp(1.0, static_cast<int>(code) - 127));
    default: return detail::decode_small_float(detail::small_float_of(t), code);
  }
}

/// The bit code of `v` in low-precision dtype `t` (the rules in the file comment; `saturate`
/// and `rounding` as Cast's attributes).
inline std::uint8_t to_low_precision(dtype t, double v, bool saturate = true, e8m0_rounding rounding = e8m0_rounding::up) {
  switch (t) {
    case dtype::u4: case dtype::i4: case dtype::u2: case dtype::i2: {
      if (!std::isfinite(v)) return 0;
      const double m = std::fmod(std::trunc(v), 256.0);  // exact; wraps like the narrowing cast
      return static_cast<std::uint8_t>(static_cast<int>(m) & ((1 << bit_width(t)) - 1));
    }
    case dtype::f8e8m0: return detail::encode_e8m0(static_cast<float>(v), saturate, rounding);
    default: return detail::encode_small_float(detail::small_float_of(t), v, saturate);
  }
}

/// The range of a low-precision integer dtype (u4 [0, 15], i4 [-8, 7], u2 [0, 3], i2 [-2, 1]);
/// for the float kinds, +-their largest finite value.
inline std::pair<double, double> low_precision_range(dtype t) {
  switch (t) {
    case dtype::u4: return {0, 15};
    case dtype::i4: return {-8, 7};
    case dtype::u2: return {0, 3};
    case dtype::i2: return {-2, 1};
    case dtype::f8e8m0: return {std::ldexp(1.0, -127), std::ldexp(1.0, 127)};
    default: {
      const double m = detail::small_float_of(t).max;
      return {-m, m};
    }
  }
}

/// Cast-24's `round_mode` attribute ("up", "down", "nearest"); false when it is none of them.
inline bool parse_e8m0_rounding(std::string_view s, e8m0_rounding& out) {
  if (s == "up") out = e8m0_rounding::up;
  else if (s == "down") out = e8m0_rounding::down;
  else if (s == "nearest") out = e8m0_rounding::nearest;
  else return false;
  return true;
}

}  // namespace gpass
