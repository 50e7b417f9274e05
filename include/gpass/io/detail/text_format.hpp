// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file text_format.hpp
/// Private: the lexical rules of the text IR (which names print bare, how strings are
/// escaped, how numbers are spelled) and the writers of its values (dims, shapes, types,
/// tensors, attributes). Shared by `text_printer.hpp` and `text_parser.hpp`.

#include <bit>
#include <charconv>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <Eigen/Core>

#include <gpass/core/attribute.hpp>
#include <gpass/core/dim.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/low_precision.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>

namespace gpass {

/// How `write_text` prints a graph.
struct text_print_options {
  /// Tensors with more elements than this print as `tensor<f32[64,3,7,7]> __elided__` (the
  /// parser rejects them; MLIR's `--mlir-elide-elementsattrs-if-larger`); -1: all printed.
  std::int64_t elide_elements_over = -1;
};

}  // namespace gpass

namespace gpass::detail::text {

// ---- character classes -------------------------------------------------------------

/// Letters, digits, `_`, `.`, `/`, `-`: the characters of a bare node or function name.
constexpr bool is_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '/' || c == '-';
}
constexpr bool is_ident_start(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
constexpr bool is_ident_char(char c) noexcept { return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.'; }
constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// True when `s` prints bare after `%` or `@` (`[A-Za-z0-9_./-]+`).
constexpr bool is_bare_name(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_name_char(c)) return false;
  return true;
}
/// True when `s` is an identifier (`[A-Za-z_][A-Za-z0-9_.]*`): op, domain, attribute and
/// symbol names print bare when they are.
constexpr bool is_ident(std::string_view s) noexcept {
  if (s.empty() || !is_ident_start(s[0])) return false;
  for (char c : s)
    if (!is_ident_char(c)) return false;
  return true;
}

// ---- strings -----------------------------------------------------------------------

/// Appends `s` as a quoted string literal. Printable ASCII stays as is except `"` and `\`;
/// `\n` and `\t` have short escapes; every other byte is `\xHH`, so any bytes round-trip.
inline void append_quoted(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c >= 0x20 && c < 0x7f) out += ch;
    else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  out += '"';
}
/// A node or function name: bare when `is_bare_name`, quoted otherwise.
inline void append_name(std::string& out, std::string_view s) {
  if (is_bare_name(s)) out += s;
  else append_quoted(out, s);
}
/// An op, domain, attribute or symbol name: bare when `is_ident`, quoted otherwise.
inline void append_ident(std::string& out, std::string_view s) {
  if (is_ident(s)) out += s;
  else append_quoted(out, s);
}

// ---- numbers -----------------------------------------------------------------------

template <class I>
inline void append_int(std::string& out, I v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

template <class U>
inline void append_hex(std::string& out, U bits) {
  static constexpr char hex[] = "0123456789abcdef";
  out += "0x";
  for (int shift = static_cast<int>(sizeof(U) * 8) - 4; shift >= 0; shift -= 4)
    out += hex[static_cast<unsigned>((bits >> shift) & 15u)];
}

template <class F> struct float_bits;
template <> struct float_bits<float> { using type = std::uint32_t; };
template <> struct float_bits<double> { using type = std::uint64_t; };

/// Appends a float or double so that it parses back bit for bit and never reads as an
/// int: the shortest round-trip decimal (`.0` added when it has no `.` or exponent),
/// `inf`, `-inf`, `nan`, `-nan` (the default quiet NaN), or `nan(0x7fc00001)` (any other
/// NaN, by its bits).
template <class F>
inline void append_floating(std::string& out, F v) {
  using U = typename float_bits<F>::type;
  if (v != v) {
    U bits = std::bit_cast<U>(v);
    U canon = std::bit_cast<U>(std::numeric_limits<F>::quiet_NaN());
    U sign = U{1} << (sizeof(U) * 8 - 1);
    if (bits == canon) out += "nan";
    else if (bits == (canon | sign)) out += "-nan";
    else {
      out += "nan(";
      append_hex(out, bits);
      out += ')';
    }
    return;
  }
  if (v == std::numeric_limits<F>::infinity()) {
    out += "inf";
    return;
  }
  if (v == -std::numeric_limits<F>::infinity()) {
    out += "-inf";
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string_view s(buf, static_cast<std::size_t>(r.ptr - buf));
  out += s;
  if (s.find_first_of(".e") == std::string_view::npos) out += ".0";
}

/// The bits of a 16-bit float (`Eigen::half` or `Eigen::bfloat16`).
template <class H>
inline std::uint16_t half_bits(H h) {
  return Eigen::numext::bit_cast<std::uint16_t>(h);
}
template <class H>
inline H half_from_bits(std::uint16_t b) {
  return Eigen::numext::bit_cast<H>(b);
}
/// The default quiet NaN of a 16-bit float type.
template <class H>
constexpr std::uint16_t half_quiet_nan() {
  return std::is_same_v<H, Eigen::half> ? std::uint16_t{0x7e00} : std::uint16_t{0x7fc0};
}
/// True when the bits of a 16-bit float of type `H` are a NaN.
template <class H>
constexpr bool half_is_nan(std::uint16_t b) {
  if constexpr (std::is_same_v<H, Eigen::half>) return (b & 0x7c00) == 0x7c00 && (b & 0x03ff) != 0;
  else return (b & 0x7f80) == 0x7f80 && (b & 0x007f) != 0;
}

/// Appends a 16-bit float: as the decimal of its (exact) float value, NaNs as for floats.
template <class H>
inline void append_half(std::string& out, H h) {
  std::uint16_t b = half_bits(h);
  if (half_is_nan<H>(b)) {
    if (b == half_quiet_nan<H>()) out += "nan";
    else if (b == (half_quiet_nan<H>() | 0x8000)) out += "-nan";
    else {
      out += "nan(";
      append_hex(out, b);
      out += ')';
    }
    return;
  }
  append_floating(out, static_cast<float>(h));
}

// ---- types -------------------------------------------------------------------------

/// Appends a dim exactly as `dim::to_string` spells it (`?`, `4`, `2*n+m-3`), except that
/// symbols that are not identifiers are quoted.
inline void append_dim(std::string& out, const dim& d) {
  if (d.is_unknown()) {
    out += '?';
    return;
  }
  if (d.terms().empty()) {
    append_int(out, d.constant());
    return;
  }
  bool first = true;
  for (const auto& [name, c] : d.terms()) {
    if (c < 0) out += '-';
    else if (!first) out += '+';
    first = false;
    std::uint64_t m = c < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(c) : static_cast<std::uint64_t>(c);
    if (m != 1) {
      append_int(out, m);
      out += '*';
    }
    append_ident(out, name);
  }
  std::int64_t k = d.constant();
  if (k > 0) {
    out += '+';
    append_int(out, k);
  } else if (k < 0) {
    append_int(out, k);
  }
}

inline void append_shape(std::string& out, const shape& s) {
  if (!s.has_rank()) {
    out += "[*]";
    return;
  }
  out += '[';
  for (std::size_t i = 0; i < s.rank(); ++i) {
    if (i) out += ',';
    append_dim(out, s[i]);
  }
  out += ']';
}

inline void append_tensor_type(std::string& out, const tensor_type& t) {
  out += to_string(t.element);
  append_shape(out, t.shape);
}

/// A `list_type::same_length_as` reference: bare when it is `name` or `name:port` with a
/// bare name, quoted (whole) otherwise.
inline bool is_bare_ref(std::string_view s) {
  auto colon = s.find(':');
  if (colon == std::string_view::npos) return is_bare_name(s);
  std::string_view port = s.substr(colon + 1);
  if (port.empty()) return false;
  for (char c : port)
    if (!is_digit(c)) return false;
  return is_bare_name(s.substr(0, colon));
}

inline void append_type(std::string& out, const type& t) {
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, unknown_type>) {
          out += '?';
        } else if constexpr (std::is_same_v<V, tensor_type>) {
          append_tensor_type(out, v);
        } else if constexpr (std::is_same_v<V, list_type>) {
          out += "list<";
          append_tensor_type(out, v.element);
          out += ", ";
          append_dim(out, v.length);
          if (!v.same_length_as.empty()) {
            out += ", like %";
            if (is_bare_ref(v.same_length_as)) out += v.same_length_as;
            else append_quoted(out, v.same_length_as);
          }
          out += '>';
        } else {
          out += "tuple<";
          for (std::size_t i = 0; i < v.elements.size(); ++i) {
            if (i) out += ", ";
            append_type(out, v.elements[i]);
          }
          out += '>';
        }
      },
      t.value);
}

// ---- tensors and attributes --------------------------------------------------------

template <class T>
inline void append_element(std::string& out, const T& v) {
  if constexpr (std::is_same_v<T, bool>) out += v ? "true" : "false";
  else if constexpr (std::is_same_v<T, std::string>) append_quoted(out, v);
  else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) append_floating(out, v);
  else if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) append_half(out, v);
  else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    out += '(';
    append_floating(out, v.real());
    out += ", ";
    append_floating(out, v.imag());
    out += ')';
  } else {
    append_int(out, v);
  }
}

/// `tensor<f32[2,2]> [1.0, 2.0, 3.0, 4.0]`: the type, then every element, flattened row-major.
inline void append_tensor(std::string& out, const tensor& t, const text_print_options& o = {}) {
  out += "tensor<";
  out += to_string(t.element_type());
  out += '[';
  for (std::size_t i = 0; i < t.sizes().size(); ++i) {
    if (i) out += ',';
    append_int(out, t.sizes()[i]);
  }
  if (o.elide_elements_over >= 0 && t.size() > o.elide_elements_over) {
    out += "]> __elided__";
    return;
  }
  out += "]> [";
  if (is_low_precision(t.element_type())) {
    // low-precision elements print as their values (exact; they parse back to the same codes)
    const auto* codes = reinterpret_cast<const std::uint8_t*>(t.raw());
    const dtype d = t.element_type();
    const bool integral = is_small_integer(d);
    for (std::int64_t i = 0; i < t.size(); ++i) {
      if (i) out += ", ";
      const float v = from_low_precision(d, codes[i]);
      if (integral) append_int(out, static_cast<std::int64_t>(v));
      else append_floating(out, static_cast<double>(v));
    }
  } else if (t.element_type() != dtype::undefined && t.size() > 0) {
    visit_dtype(t.element_type(), [&]<class T>() {
      auto vs = t.values<T>();
      for (std::size_t i = 0; i < vs.size(); ++i) {
        if (i) out += ", ";
        append_element(out, vs[i]);
      }
    });
  }
  out += ']';
}

template <class T>
inline void append_scalar_value(std::string& out, const T& v, const text_print_options& o = {}) {
  if constexpr (std::is_same_v<T, std::int64_t>) append_int(out, v);
  else if constexpr (std::is_same_v<T, double>) append_floating(out, v);
  else if constexpr (std::is_same_v<T, std::string>) append_quoted(out, v);
  else if constexpr (std::is_same_v<T, bool>) out += v ? "true" : "false";
  else if constexpr (std::is_same_v<T, dtype>) out += to_string(v);
  else if constexpr (std::is_same_v<T, shape>) {
    out += "shape";
    append_shape(out, v);
  } else if constexpr (std::is_same_v<T, type>) {
    out += "type<";
    append_type(out, v);
    out += '>';
  } else if constexpr (std::is_same_v<T, tensor>) {
    append_tensor(out, v, o);
  } else {
    static_assert(std::is_same_v<T, function_ref>);
    out += '@';
    append_name(out, v.name);
  }
}

template <class T> struct is_std_vector : std::false_type {};
template <class T, class A> struct is_std_vector<std::vector<T, A>> : std::true_type {};

/// Appends an attribute value (`3`, `2.5`, `"s"`, `f32`, `shape[2,?]`, `[1, 2]`, `ints[]`, ...).
inline void append_attribute(std::string& out, const attribute& a, const text_print_options& o = {}) {
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (is_std_vector<V>::value) {
          if (v.empty()) {
            out += a.kind_name();
            out += "[]";
            return;
          }
          out += '[';
          for (std::size_t i = 0; i < v.size(); ++i) {
            if (i) out += ", ";
            append_scalar_value<typename V::value_type>(out, v[i], o);
          }
          out += ']';
        } else {
          append_scalar_value(out, v, o);
        }
      },
      a.value());
}

/// Appends ` {name = value, ...}` (with the leading space), or nothing for an empty map.
inline void append_attribute_map(std::string& out, const attribute_map& m, const text_print_options& o = {}) {
  if (m.empty()) return;
  out += " {";
  bool first = true;
  for (const auto& [name, value] : m) {
    if (!first) out += ", ";
    first = false;
    append_ident(out, name);
    out += " = ";
    append_attribute(out, value, o);
  }
  out += '}';
}

}  // namespace gpass::detail::text
