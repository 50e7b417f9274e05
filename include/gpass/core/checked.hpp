// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file checked.hpp
/// Overflow-checked integer arithmetic for sizes: the one helper family that shape inference,
/// kernels, the executor's plan and the importers use wherever dims are multiplied or added.
///
/// A hostile model can ask for sizes whose product does not fit in `int64_t` (a Reshape to
/// `[2^32, 2^32]`, a Tile by `2^40`); computed unchecked, the product wraps around to a small
/// number and a kernel then reads or writes outside its buffer. Every size computation goes
/// through these functions instead: the `checked_*` forms return `std::nullopt` on overflow,
/// the `*_or_throw` forms throw a `gpass::error` that says what overflowed (callers add the
/// node, op and pass, as every `gpass::error` does on its way out).
/// \code
///   auto n = gpass::checked_mul(std::int64_t{1} << 32, std::int64_t{1} << 32);  // nullopt
///   std::int64_t k = gpass::num_elements_or_throw({2, 3, 4});                    // 24
/// \endcode

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <gpass/core/error.hpp>

namespace gpass {

/// `a * b`, or nullopt when it overflows `int64_t`.
constexpr std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// `a + b`, or nullopt when it overflows `int64_t`.
constexpr std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// `a - b`, or nullopt when it overflows `int64_t`.
constexpr std::optional<std::int64_t> checked_sub(std::int64_t a, std::int64_t b) noexcept {
  std::int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// The product of `sizes` (the element count of a shape), or nullopt when it overflows.
/// Negative entries multiply like any integer (callers that need sizes check the signs).
constexpr std::optional<std::int64_t> checked_num_elements(std::span<const std::int64_t> sizes) noexcept {
  std::int64_t n = 1;
  for (std::int64_t s : sizes)
    if (__builtin_mul_overflow(n, s, &n)) return std::nullopt;
  return n;
}

/// `elements * element_size` as a byte count, or nullopt when it is negative or does not fit
/// in `std::ptrdiff_t` (the largest object a program can hold).
constexpr std::optional<std::size_t> checked_bytes(std::int64_t elements, std::size_t element_size) noexcept {
  if (elements < 0) return std::nullopt;
  std::int64_t r = 0;
  if (element_size > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()) ||
      __builtin_mul_overflow(elements, static_cast<std::int64_t>(element_size), &r) ||
      r > static_cast<std::int64_t>(std::numeric_limits<std::ptrdiff_t>::max()))
    return std::nullopt;
  return static_cast<std::size_t>(r);
}

namespace detail {
inline std::string sizes_text(std::span<const std::int64_t> sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? "," : "") + std::to_string(sizes[i]);
  return s + "]";
}
}  // namespace detail

/// `a * b`; throws `gpass::error` ("<what>: a * b overflows int64") on overflow.
inline std::int64_t mul_or_throw(std::int64_t a, std::int64_t b, std::string_view what = "size") {
  if (auto r = checked_mul(a, b)) return *r;
  throw error(std::string(what) + ": " + std::to_string(a) + " * " + std::to_string(b) + " overflows int64");
}
/// `a + b`; throws `gpass::error` on overflow.
inline std::int64_t add_or_throw(std::int64_t a, std::int64_t b, std::string_view what = "size") {
  if (auto r = checked_add(a, b)) return *r;
  throw error(std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) + " overflows int64");
}
/// `a - b`; throws `gpass::error` on overflow.
inline std::int64_t sub_or_throw(std::int64_t a, std::int64_t b, std::string_view what = "size") {
  if (auto r = checked_sub(a, b)) return *r;
  throw error(std::string(what) + ": " + std::to_string(a) + " - " + std::to_string(b) + " overflows int64");
}
/// The element count of `sizes`; throws `gpass::error` naming the sizes on overflow.
inline std::int64_t num_elements_or_throw(std::span<const std::int64_t> sizes) {
  if (auto r = checked_num_elements(sizes)) return *r;
  throw error("the element count of " + detail::sizes_text(sizes) + " overflows int64");
}
/// The bytes of `elements` elements of `element_size` bytes; throws on overflow.
inline std::size_t bytes_or_throw(std::int64_t elements, std::size_t element_size) {
  if (auto r = checked_bytes(elements, element_size)) return *r;
  throw error(std::to_string(elements) + " elements of " + std::to_string(element_size) +
              " bytes do not fit in memory (the byte count overflows)");
}

}  // namespace gpass
