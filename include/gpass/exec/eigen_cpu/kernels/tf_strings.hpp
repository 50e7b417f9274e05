// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_strings.hpp
/// Eigen CPU kernels of TensorFlow's element-wise string ops (domain "tf"), with TensorFlow's
/// CPU rules:
/// - AsString: numbers and bools to strings through the printf format TensorFlow builds from
///   `precision`, `scientific`, `shortest`, `width` and `fill` (`%d` / `%lld` / `%u` / `%llu`
///   for integers, `%f` / `%e` / `%g` for floats, halves printed as float, "true" / "false",
///   `%s` for strings), with its attribute checks; the characters it makes (up to 2^20 per
///   element from `width` or `precision`) count against max_tensor_bytes as it makes them;
/// - StringToNumber: float / double as TensorFlow 2.21 reads them (absl::SimpleAtof /
///   SimpleAtod: surrounding whitespace, a sign, decimal or `0x` hex, "inf" / "infinity" /
///   "nan" in any case; overflow to infinity, underflow to zero), int32 / int64 as
///   absl::SimpleAtoi (whitespace, a sign, decimal digits, no overflow); anything else is
///   the error "StringToNumberOp could not correctly convert string: ...";
/// - StringLower / StringUpper with `encoding` "" (ASCII letters; other bytes unchanged).
///   `encoding = "utf-8"` (Unicode case mapping, ICU in TensorFlow) is refused by name;
/// - StringStrip (surrounding ASCII whitespace), StringLength (`unit` BYTE or UTF8_CHAR: the
///   bytes that do not continue a UTF-8 sequence).
/// Private (`gpass::exec::cpu_detail::tf_detail`); the unit `src/tf_elementwise.cpp` registers them.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

namespace strings_impl {

// ASCII whitespace (absl::ascii_isspace), which TensorFlow's number parsers skip around a number.
inline bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

/// A float or double as TensorFlow reads it (absl::SimpleAtof / SimpleAtod): surrounding
/// ASCII whitespace, one '+' or '-', then decimal digits with an optional fraction and
/// exponent, `0x` hex digits (a hex fraction and `p` exponent too), or "inf" / "infinity" /
/// "nan" / "nan(...)" in any case; all of it consumed. Past the type's range: +-infinity;
/// below its smallest subnormal: zero.
template <class T>
std::optional<T> parse_float(std::string_view s) {
  s = trim(s);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) negative = s.front() == '-', s.remove_prefix(1);
  if (s.empty() || s.front() == '+' || s.front() == '-') return std::nullopt;
  T v{};
  auto lower = [&](std::size_t n) {
    std::string out(s.substr(0, n));
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  if (lower(s.size()) == "inf" || lower(s.size()) == "infinity") {
    v = std::numeric_limits<T>::infinity();
  } else if (s.size() >= 3 && lower(3) == "nan") {
    std::string_view rest = s.substr(3);
    if (!rest.empty()) {  // nan(chars): letters, digits and '_'
      if (rest.front() != '(' || rest.back() != ')') return std::nullopt;
      for (char c : rest.substr(1, rest.size() - 2))
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return std::nullopt;
    }
    v = std::numeric_limits<T>::quiet_NaN();
  } else {
    const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    std::string_view body = hex ? s.substr(2) : s;
    const char c = body.front();
    if (!(hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(static_cast<unsigned char>(c))) && c != '.')
      return std::nullopt;
    const auto format = hex ? std::chars_format::hex : std::chars_format::general;
    const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v, format);
    if (end != body.data() + body.size() || ec == std::errc::invalid_argument) return std::nullopt;
    if (ec == std::errc::result_out_of_range) {  // overflow: infinity; underflow: zero or a subnormal
      long double wide = 0;
      const auto r2 = std::from_chars(body.data(), body.data() + body.size(), wide, format);
      bool overflow = false;
      if (r2.ec == std::errc{}) {
        overflow = wide > 1;
      } else {  // past long double's range too: the exponent's sign tells
        const std::size_t e = body.find_first_of(hex ? "pP" : "eE");
        overflow = e == std::string_view::npos || body[e + 1] != '-';
      }
      v = overflow ? std::numeric_limits<T>::infinity() : r2.ec == std::errc{} ? static_cast<T>(wide) : T(0);
    }
  }
  return negative ? -v : v;
}

/// An int32 or int64 as TensorFlow reads it (absl::SimpleAtoi): surrounding ASCII whitespace,
/// one '+' or '-', decimal digits, no overflow; or nothing.
template <class T>
std::optional<T> parse_int(std::string_view s) {
  s = trim(s);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) negative = s.front() == '-', s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  using U = std::make_unsigned_t<T>;
  const U limit = static_cast<U>(std::numeric_limits<T>::max()) + (negative ? 1u : 0u);
  U v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    const U d = static_cast<U>(c - '0');
    if (v > (limit - d) / 10) return std::nullopt;
    v = static_cast<U>(v * 10 + d);
  }
  return negative ? static_cast<T>(U(0) - v) : static_cast<T>(v);
}

/// AsString's printf format (TensorFlow's rules and errors) for element type `t`.
inline std::string as_string_format(const kernel_node& n, dtype t) {
  const i64 precision = n.attr<i64>("precision", -1), width = n.attr<i64>("width", -1);
  const bool scientific = flag(n, "scientific", false), shortest = flag(n, "shortest", false);
  const std::string fill = n.attr<std::string>("fill", std::string());
  const bool floating = t == dtype::f16 || t == dtype::bf16 || t == dtype::f32 || t == dtype::f64;
  if (!floating && t != dtype::string) {
    if (scientific || shortest) n.fail("scientific and shortest format not supported for datatype " + std::string(to_string(t)));
    if (precision >= 0) n.fail("precision not supported for datatype " + std::string(to_string(t)));
  }
  if (fill.size() > 1) n.fail("Fill string must be one or fewer characters");
  if (scientific && shortest) n.fail("Cannot select both scientific and shortest notation");
  if (width > 1 << 20 || precision > 1 << 20) n.fail("width and precision must be at most 2^20");
  std::string f = "%";
  if (!fill.empty()) {
    if (fill != " " && fill != "+" && fill != "-" && fill != "0" && fill != "#")
      n.fail("Fill argument not supported: \"" + fill + "\"");
    f += fill;
  }
  if (width > -1) f += std::to_string(width);
  if (precision > -1) f += "." + std::to_string(precision);
  switch (t) {
    case dtype::uint8: case dtype::uint16: case dtype::uint32: f += "u"; break;
    case dtype::uint64: f += "llu"; break;
    case dtype::int8: case dtype::int16: case dtype::int32: f += "d"; break;
    case dtype::int64: f += "lld"; break;
    case dtype::f16: case dtype::bf16: case dtype::f32: case dtype::f64: f += shortest ? "g" : scientific ? "e" : "f"; break;
    case dtype::bool_: break;
    case dtype::string: f += "s"; break;
    default: n.fail("AsString does not support " + std::string(to_string(t)));
  }
  return f;
}

// snprintf of one value with a format made by as_string_format; `reserve(length)` is
// called before the string is made (AsString counts it against max_tensor_bytes).
template <class V, class R>
std::string print(const std::string& format, V v, const R& reserve) {
  const int size = std::snprintf(nullptr, 0, format.c_str(), v);
  reserve(static_cast<std::size_t>(std::max(size, 0)));
  std::string s(static_cast<std::size_t>(std::max(size, 0)), '\0');
  std::snprintf(s.data(), s.size() + 1, format.c_str(), v);
  return s;
}

}  // namespace strings_impl

/// Registers AsString, StringToNumber, StringLower, StringUpper, StringStrip, StringLength.
inline void register_tf_strings(registry& r) {
  using namespace strings_impl;
  using printable = type_list<std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t, std::uint16_t,
                              std::uint32_t, std::uint64_t, float, double, Eigen::half, Eigen::bfloat16, bool, std::string>;
  r.add({.domain = domain, .op = "AsString", .dtypes = printable::dtypes(), .make = [](const kernel_node& n) -> fn {
    const dtype t = type_attr(n, "T", dtype::f32);
    const std::string format = as_string_format(n, t);  // TensorFlow checks the attributes at kernel construction
    return [t, format](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const std::string f = x.element_type() == t ? format : as_string_format(ctx.node(), x.element_type());
      gpass::tensor& y = ctx.allocate_output(0, dtype::string, x.sizes());
      std::string* out = y.data<std::string>();
      // every element may be up to 2^20 + 330 characters (width, precision, a double's
      // digits): the characters are counted as they are made, so a run over the limit stops
      // before the element that crosses it
      double chars = 0;
      auto reserve = [&](std::size_t n) {
        chars += static_cast<double>(n);
        check_string_output(ctx, x.size(), chars);
      };
      dispatch<printable>(x.element_type(), ctx.node(), [&]<class T>() {
        const T* in = x.data<T>();
        for (i64 i = 0; i < x.size(); ++i) {
          if constexpr (std::is_same_v<T, bool>) out[i] = in[i] ? "true" : "false";
          else if constexpr (std::is_same_v<T, std::string>) out[i] = print(f, in[i].c_str(), reserve);
          else if constexpr (std::is_same_v<T, std::int64_t>) out[i] = print(f, static_cast<long long>(in[i]), reserve);
          else if constexpr (std::is_same_v<T, std::uint64_t>) out[i] = print(f, static_cast<unsigned long long>(in[i]), reserve);
          else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) out[i] = print(f, static_cast<int>(in[i]), reserve);
          else if constexpr (std::is_integral_v<T>) out[i] = print(f, static_cast<unsigned>(in[i]), reserve);
          else if constexpr (std::is_same_v<T, double>) out[i] = print(f, in[i], reserve);
          else out[i] = print(f, static_cast<double>(static_cast<float>(in[i])), reserve);
        }
      });
    };
  }});
  r.add({.domain = domain, .op = "StringToNumber", .dtypes = {dtype::string}, .make = [](const kernel_node& n) -> fn {
    const dtype out = type_attr(n, "out_type", dtype::f32);
    if (out != dtype::f32 && out != dtype::f64 && out != dtype::int32 && out != dtype::int64)
      n.fail("out_type must be float, double, int32 or int64, got " + std::string(to_string(out)));
    return [out](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      gpass::tensor& y = ctx.allocate_output(0, out, x.sizes());
      const std::string* in = x.data<std::string>();
      dispatch<type_list<float, double, std::int32_t, std::int64_t>>(out, ctx.node(), [&]<class T>() {
        T* o = y.data<T>();
        for (i64 i = 0; i < x.size(); ++i) {
          std::optional<T> v;
          if constexpr (std::is_floating_point_v<T>) v = parse_float<T>(in[i]);
          else v = parse_int<T>(in[i]);
          if (!v) ctx.fail("StringToNumberOp could not correctly convert string: " + in[i]);
          o[i] = *v;
        }
      });
    };
  }});
  auto change_case = [&](const char* op, bool upper) {
    r.add({.domain = domain, .op = op, .dtypes = {dtype::string}, .make = [upper](const kernel_node& n) -> fn {
      const std::string encoding = n.attr<std::string>("encoding", std::string());
      if (!encoding.empty())
        n.fail("encoding '" + encoding + "' (Unicode case mapping) is not supported; only \"\" (ASCII letters)");
      return [upper](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        gpass::tensor& y = ctx.allocate_output(0, dtype::string, x.sizes());
        for (i64 i = 0; i < x.size(); ++i) {
          std::string s = x.data<std::string>()[i];
          for (char& c : s)
            if (upper ? (c >= 'a' && c <= 'z') : (c >= 'A' && c <= 'Z')) c = static_cast<char>(c ^ 0x20);
          y.data<std::string>()[i] = std::move(s);
        }
      };
    }});
  };
  change_case("StringLower", false);
  change_case("StringUpper", true);
  r.add({.domain = domain, .op = "StringStrip", .dtypes = {dtype::string}, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      gpass::tensor& y = ctx.allocate_output(0, dtype::string, x.sizes());
      for (i64 i = 0; i < x.size(); ++i) y.data<std::string>()[i] = std::string(trim(x.data<std::string>()[i]));
    };
  }});
  r.add({.domain = domain, .op = "StringLength", .dtypes = {dtype::string}, .make = [](const kernel_node& n) -> fn {
    const std::string unit = n.attr<std::string>("unit", std::string("BYTE"));
    if (unit != "BYTE" && unit != "UTF8_CHAR") n.fail("unit must be BYTE or UTF8_CHAR, got '" + unit + "'");
    return [chars = unit == "UTF8_CHAR"](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      gpass::tensor& y = ctx.allocate_output(0, dtype::int32, x.sizes());
      for (i64 i = 0; i < x.size(); ++i) {
        const std::string& s = x.data<std::string>()[i];
        std::size_t count = s.size();
        if (chars)  // UTF-8 characters: the bytes that are not continuation bytes (10xxxxxx)
          count = static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
        if (count > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
          ctx.fail("a string of " + std::to_string(count) + " units does not fit int32");
        y.data<std::int32_t>()[i] = static_cast<std::int32_t>(count);
      }
    };
  }});
}

}  // namespace gpass::exec::cpu_detail::tf_detail
