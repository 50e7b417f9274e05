// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file dtype.hpp
/// Element types of tensors: `gpass::dtype`, their names and sizes.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gpass {

/// The element type of a tensor.
///
/// `undefined` means "not known yet" (before type inference). `resource` is an
/// opaque handle (TF variables, TensorArrays), `variant` an opaque TF variant.
/// Text form (see `to_string`): `f32`, `i64`, `bool`, `str`, ...
enum class dtype : std::uint8_t {
  undefined,
  bool_,
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  uint64,
  f16,
  bf16,
  f32,
  f64,
  complex64,
  complex128,
  string,
  resource,
  variant,
  // the low-precision types of ONNX 1.14-1.20: one element per byte, holding its bit code
  // (the low 4 or 2 bits for the 4- and 2-bit types); gpass/core/low_precision.hpp converts
  f8e4m3fn,    ///< float8, 4 exponent bits, 3 mantissa bits, no inf (ONNX FLOAT8E4M3FN)
  f8e4m3fnuz,  ///< the same with no negative zero (NaN 0x80; FLOAT8E4M3FNUZ)
  f8e5m2,      ///< float8, 5 exponent bits, 2 mantissa bits, inf (FLOAT8E5M2)
  f8e5m2fnuz,  ///< the same with no inf and no negative zero (FLOAT8E5M2FNUZ)
  u4,          ///< 4-bit unsigned integer (UINT4)
  i4,          ///< 4-bit signed integer (INT4)
  f4e2m1,      ///< float4, 2 exponent bits, 1 mantissa bit (FLOAT4E2M1)
  f8e8m0,      ///< a power of two 2^(e-127), 0xFF NaN (FLOAT8E8M0, a scale type)
  u2,          ///< 2-bit unsigned integer (UINT2)
  i2,          ///< 2-bit signed integer (INT2)
};

namespace detail {
struct dtype_info {
  dtype type;
  std::string_view name;
  std::size_t size;  // bytes per element; 0 for non-numeric
};
inline constexpr std::array<dtype_info, 29> dtype_table{{
    {dtype::undefined, "?", 0},     {dtype::bool_, "bool", 1},     {dtype::int8, "i8", 1},
    {dtype::int16, "i16", 2},       {dtype::int32, "i32", 4},      {dtype::int64, "i64", 8},
    {dtype::uint8, "u8", 1},        {dtype::uint16, "u16", 2},     {dtype::uint32, "u32", 4},
    {dtype::uint64, "u64", 8},      {dtype::f16, "f16", 2},        {dtype::bf16, "bf16", 2},
    {dtype::f32, "f32", 4},         {dtype::f64, "f64", 8},        {dtype::complex64, "c64", 8},
    {dtype::complex128, "c128", 16}, {dtype::string, "str", 0},    {dtype::resource, "resource", 0},
    {dtype::variant, "variant", 0},
    {dtype::f8e4m3fn, "f8e4m3fn", 1}, {dtype::f8e4m3fnuz, "f8e4m3fnuz", 1}, {dtype::f8e5m2, "f8e5m2", 1},
    {dtype::f8e5m2fnuz, "f8e5m2fnuz", 1}, {dtype::u4, "u4", 1},        {dtype::i4, "i4", 1},
    {dtype::f4e2m1, "f4e2m1", 1},     {dtype::f8e8m0, "f8e8m0", 1},      {dtype::u2, "u2", 1},
    {dtype::i2, "i2", 1},
}};
}  // namespace detail

/// The short text name of a dtype (`f32`, `i64`, `bool`, `str`, `?` for undefined).
constexpr std::string_view to_string(dtype t) noexcept {
  return detail::dtype_table[static_cast<std::size_t>(t)].name;
}


/// The dtype of an ONNX `TensorProto.DataType` number (1 = FLOAT ... 16 = BFLOAT16), the form
/// in which imported ONNX attributes such as Cast's `to` carry a type; empty for numbers gpass
/// has no dtype for.
constexpr std::optional<dtype> dtype_from_onnx_code(std::int64_t code) noexcept {
  switch (code) {
    case 1: return dtype::f32;
    case 2: return dtype::uint8;
    case 3: return dtype::int8;
    case 4: return dtype::uint16;
    case 5: return dtype::int16;
    case 6: return dtype::int32;
    case 7: return dtype::int64;
    case 8: return dtype::string;
    case 9: return dtype::bool_;
    case 10: return dtype::f16;
    case 11: return dtype::f64;
    case 12: return dtype::uint32;
    case 13: return dtype::uint64;
    case 14: return dtype::complex64;
    case 15: return dtype::complex128;
    case 16: return dtype::bf16;
    case 17: return dtype::f8e4m3fn;
    case 18: return dtype::f8e4m3fnuz;
    case 19: return dtype::f8e5m2;
    case 20: return dtype::f8e5m2fnuz;
    case 21: return dtype::u4;
    case 22: return dtype::i4;
    case 23: return dtype::f4e2m1;
    case 24: return dtype::f8e8m0;
    case 25: return dtype::u2;
    case 26: return dtype::i2;
    default: return std::nullopt;
  }
}
/// Parses a short dtype name; `std::nullopt` when it is not one.
constexpr std::optional<dtype> parse_dtype(std::string_view s) noexcept {
  for (const auto& i : detail::dtype_table)
    if (i.name == s) return i.type;
  return std::nullopt;
}

/// Bytes per element; 0 for types without a fixed-size element (string, resource, variant, undefined).
constexpr std::size_t size_of(dtype t) noexcept { return detail::dtype_table[static_cast<std::size_t>(t)].size; }

/// True for floating-point types (f16, bf16, f32, f64).
constexpr bool is_floating(dtype t) noexcept {
  return t == dtype::f16 || t == dtype::bf16 || t == dtype::f32 || t == dtype::f64;
}
/// True for signed and unsigned integer types (not bool).
constexpr bool is_integer(dtype t) noexcept {
  return t >= dtype::int8 && t <= dtype::uint64;
}
/// True for unsigned integer types.
constexpr bool is_unsigned(dtype t) noexcept { return t >= dtype::uint8 && t <= dtype::uint64; }
/// True for the low-precision types (float8, float4, 4- and 2-bit integers): one byte per
/// element holding its bit code, no C++ element type (`visit_dtype` refuses them); kernels
/// convert them through float (gpass/core/low_precision.hpp).
constexpr bool is_low_precision(dtype t) noexcept { return t >= dtype::f8e4m3fn && t <= dtype::i2; }
/// True for the 4- and 2-bit integer types (u4, i4, u2, i2).
constexpr bool is_small_integer(dtype t) noexcept {
  return t == dtype::u4 || t == dtype::i4 || t == dtype::u2 || t == dtype::i2;
}
/// Bits of one element: 4 (u4, i4, f4e2m1), 2 (u2, i2), else 8 * `size_of` (ONNX packs the
/// sub-byte types; in memory every low-precision element takes a byte).
constexpr std::size_t bit_width(dtype t) noexcept {
  if (t == dtype::u4 || t == dtype::i4 || t == dtype::f4e2m1) return 4;
  if (t == dtype::u2 || t == dtype::i2) return 2;
  return 8 * size_of(t);
}
/// True for types whose elements are plain bytes of fixed size (everything but string/resource/variant/undefined).
constexpr bool is_trivial(dtype t) noexcept { return size_of(t) != 0; }

}  // namespace gpass
