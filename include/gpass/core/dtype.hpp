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
};

namespace detail {
struct dtype_info {
  dtype type;
  std::string_view name;
  std::size_t size;  // bytes per element; 0 for non-numeric
};
inline constexpr std::array<dtype_info, 19> dtype_table{{
    {dtype::undefined, "?", 0},     {dtype::bool_, "bool", 1},     {dtype::int8, "i8", 1},
    {dtype::int16, "i16", 2},       {dtype::int32, "i32", 4},      {dtype::int64, "i64", 8},
    {dtype::uint8, "u8", 1},        {dtype::uint16, "u16", 2},     {dtype::uint32, "u32", 4},
    {dtype::uint64, "u64", 8},      {dtype::f16, "f16", 2},        {dtype::bf16, "bf16", 2},
    {dtype::f32, "f32", 4},         {dtype::f64, "f64", 8},        {dtype::complex64, "c64", 8},
    {dtype::complex128, "c128", 16}, {dtype::string, "str", 0},    {dtype::resource, "resource", 0},
    {dtype::variant, "variant", 0},
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
/// True for types whose elements are plain bytes of fixed size (everything but string/resource/variant/undefined).
constexpr bool is_trivial(dtype t) noexcept { return size_of(t) != 0; }

}  // namespace gpass
