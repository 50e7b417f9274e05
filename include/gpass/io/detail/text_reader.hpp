// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file text_reader.hpp
/// Private: the graph-independent half of the text IR parser: dims, shapes, types,
/// attribute values and attribute dictionaries, on top of the lexer.

#include <algorithm>
#include <bit>
#include <charconv>
#include <complex>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
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
#include <gpass/io/detail/text_format.hpp>
#include <gpass/io/detail/text_lexer.hpp>

namespace gpass::detail::text {

/// Deepest nesting of `tuple<...>` types the parser accepts.
inline constexpr int max_type_depth = 64;

class reader {
 public:
  reader(std::string_view src, std::string source_name) : lx_(src, std::move(source_name)) {}

  lexer& lex() noexcept { return lx_; }

  // ---- token helpers ---------------------------------------------------------------

  [[noreturn]] void unexpected(const token& t, std::string_view expected) {
    lx_.fail(t, "unexpected " + t.describe() + ", expected " + std::string(expected));
  }
  token expect(char c) {
    if (!lx_.peek().is(c)) unexpected(lx_.peek(), std::string("'") + c + "'");
    return lx_.take();
  }
  bool accept(char c) {
    if (!lx_.peek().is(c)) return false;
    lx_.take();
    return true;
  }
  token expect_kind(tok k, std::string_view what) {
    if (lx_.peek().kind != k) unexpected(lx_.peek(), what);
    return lx_.take();
  }

  // ---- numbers ---------------------------------------------------------------------

  static bool looks_float(std::string_view s) {
    bool hex = s.size() > 1 && (s[0] == '0' || (s[0] == '-' && s.size() > 2 && s[1] == '0')) &&
               (s.find('x') != std::string_view::npos || s.find('X') != std::string_view::npos);
    if (hex) return false;
    return s.find_first_of(".eE") != std::string_view::npos;
  }

  /// An integer of type `I` from a number token.
  template <class I>
  I parse_int(const token& t, std::string_view what = "integer") {
    if (t.kind != tok::number) unexpected(t, what);
    if (looks_float(t.text)) lx_.fail(t, "expected " + std::string(what) + ", got the float " + t.describe());
    I v{};
    const char* b = t.text.data();
    const char* e = b + t.text.size();
    auto r = std::from_chars(b, e, v);
    if (r.ec == std::errc::result_out_of_range)
      lx_.fail(t, "number " + t.describe() + " is out of range for " + std::string(what));
    if (r.ec != std::errc{} || r.ptr != e) {
      // an unsigned target given a valid negative number is a range error, not a malformed one
      if constexpr (std::is_unsigned_v<I>) {
        std::int64_t probe{};
        auto r2 = std::from_chars(b, e, probe);
        if ((r2.ec == std::errc{} && r2.ptr == e) || r2.ec == std::errc::result_out_of_range)
          lx_.fail(t, "number " + t.describe() + " is out of range for " + std::string(what));
      }
      lx_.fail(t, "malformed number " + t.describe());
    }
    return v;
  }

  /// A non-negative int from a number token (ports, counts).
  int parse_small(const token& t, std::string_view what, int limit) {
    auto v = parse_int<std::int64_t>(t, what);
    if (v < 0 || v > limit) lx_.fail(t, "bad " + std::string(what) + " " + t.describe());
    return static_cast<int>(v);
  }

  template <class F>
  F parse_float_text(const token& t, std::string_view text, std::string_view dtype_name) {
    F v{};
    const char* b = text.data();
    const char* e = b + text.size();
    auto r = std::from_chars(b, e, v, std::chars_format::general);
    if (r.ec == std::errc::result_out_of_range)
      lx_.fail(t, "number " + t.describe() + " is out of range for " + std::string(dtype_name));
    if (r.ec != std::errc{} || r.ptr != e) lx_.fail(t, "malformed number " + t.describe());
    return v;
  }

  /// A float spelled as a number, `inf`, `-inf`, `nan`, `-nan` or `nan(0xBITS)`. Returns
  /// either the value or the raw bits of a NaN (for `nan(...)`, validated by the caller).
  struct float_text {
    bool is_nan_bits = false;
    std::uint64_t bits = 0;
    bool neg = false;
    enum { number, inf, nan } what = number;
    token tok_;
  };
  float_text read_float_text() {
    float_text f;
    const token& first = lx_.peek();
    f.tok_ = first;
    if (first.kind == tok::number) {
      f.tok_ = lx_.take();
      return f;
    }
    if (first.is('-')) {
      lx_.take();
      f.neg = true;
      if (!(lx_.peek().is_ident("inf") || lx_.peek().is_ident("nan"))) unexpected(lx_.peek(), "'inf' or 'nan'");
    }
    const token& w = lx_.peek();
    if (w.is_ident("inf")) {
      lx_.take();
      f.what = float_text::inf;
      return f;
    }
    if (w.is_ident("nan")) {
      lx_.take();
      f.what = float_text::nan;
      if (!f.neg && lx_.peek().is('(')) {
        lx_.take();
        token h = expect_kind(tok::number, "the bits of a NaN, like 0x7fc00001");
        std::string_view s = h.text;
        if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
          lx_.fail(h, "expected the bits of a NaN in hex, like 0x7fc00001");
        auto r = std::from_chars(s.data() + 2, s.data() + s.size(), f.bits, 16);
        if (r.ec != std::errc{} || r.ptr != s.data() + s.size()) lx_.fail(h, "malformed NaN bits " + h.describe());
        f.is_nan_bits = true;
        f.tok_ = h;
        expect(')');
      }
      return f;
    }
    unexpected(w, "a number");
  }

  /// A float or double element/value.
  template <class F>
  F parse_floating(std::string_view dtype_name) {
    using U = typename float_bits<F>::type;
    float_text f = read_float_text();
    if (f.what == float_text::inf)
      return f.neg ? -std::numeric_limits<F>::infinity() : std::numeric_limits<F>::infinity();
    if (f.what == float_text::nan) {
      U canon = std::bit_cast<U>(std::numeric_limits<F>::quiet_NaN());
      U sign = U{1} << (sizeof(U) * 8 - 1);
      if (!f.is_nan_bits) return std::bit_cast<F>(f.neg ? (canon | sign) : canon);
      if (f.bits > std::numeric_limits<U>::max()) lx_.fail(f.tok_, "NaN bits too wide for " + std::string(dtype_name));
      F v = std::bit_cast<F>(static_cast<U>(f.bits));
      if (v == v) lx_.fail(f.tok_, f.tok_.describe() + " is not the bits of a NaN");
      return v;
    }
    return parse_float_text<F>(f.tok_, f.tok_.text, dtype_name);
  }

  template <class H>
  H parse_half(std::string_view dtype_name) {
    float_text f = read_float_text();
    if (f.what == float_text::inf) return static_cast<H>(f.neg ? -std::numeric_limits<float>::infinity()
                                                               : std::numeric_limits<float>::infinity());
    if (f.what == float_text::nan) {
      if (!f.is_nan_bits) return half_from_bits<H>(f.neg ? (half_quiet_nan<H>() | 0x8000) : half_quiet_nan<H>());
      if (f.bits > 0xffff || !half_is_nan<H>(static_cast<std::uint16_t>(f.bits)))
        lx_.fail(f.tok_, f.tok_.describe() + " is not the bits of a " + std::string(dtype_name) + " NaN");
      return half_from_bits<H>(static_cast<std::uint16_t>(f.bits));
    }
    float v = parse_float_text<float>(f.tok_, f.tok_.text, dtype_name);
    H h = static_cast<H>(v);
    float back = static_cast<float>(h);
    if (back - back != 0.0f)  // finite float became inf
      lx_.fail(f.tok_, "number " + f.tok_.describe() + " is out of range for " + std::string(dtype_name));
    return h;
  }

  // ---- dims, shapes, types ---------------------------------------------------------

  /// `?`, `4`, `n`, `2*n+m-3`, `"sym bol"+1`.
  dim parse_dim() {
    const token& t0 = lx_.peek();
    if (t0.is('?')) {
      lx_.take();
      return dim();
    }
    int line = t0.line, column = t0.column;
    std::int64_t constant = 0;
    std::vector<dim::term> terms;
    auto add_checked = [&](std::int64_t& acc, std::int64_t v, const token& at) {
      if (__builtin_add_overflow(acc, v, &acc)) lx_.fail(at, "dim overflows 64 bits");
    };
    bool first = true;
    for (;;) {
      int sign = 1;
      const token& p = lx_.peek();
      if (first) {
        if (p.is('-')) {
          lx_.take();
          sign = -1;
        }
      } else if (p.is('+')) {
        lx_.take();
      } else if (p.is('-')) {
        lx_.take();
        sign = -1;
      } else if (!(p.kind == tok::number && !p.text.empty() && p.text[0] == '-')) {
        break;
      }
      first = false;
      token t = lx_.take();
      if (t.kind == tok::number) {
        std::int64_t v = parse_int<std::int64_t>(t, "dim");
        if (sign < 0) {
          if (v == std::numeric_limits<std::int64_t>::min()) lx_.fail(t, "dim overflows 64 bits");
          v = -v;
        }
        if (accept('*')) {
          token s = lx_.take();
          if (s.kind != tok::ident && s.kind != tok::string) unexpected(s, "a symbol name");
          terms.emplace_back(std::string(s.str()), v);
        } else {
          add_checked(constant, v, t);
        }
      } else if (t.kind == tok::ident || t.kind == tok::string) {
        terms.emplace_back(std::string(t.str()), sign);
      } else {
        unexpected(t, "a dim (a size, '?' or a symbol)");
      }
    }
    {
      // each symbol once (sorted check: linear-logarithmic even for absurdly long dims)
      std::vector<std::string_view> names;
      names.reserve(terms.size());
      for (const auto& term : terms) names.push_back(term.first);
      std::sort(names.begin(), names.end());
      for (std::size_t i = 1; i < names.size(); ++i)
        if (names[i] == names[i - 1]) lx_.fail(line, column, "symbol '" + std::string(names[i]) + "' appears twice in a dim");
    }
    if (terms.empty()) {
      if (constant >= 0) return dim(constant);
      // a known negative integer (value propagation keeps Reshape's -1 exact), when dim has them
      if constexpr (requires { dim::integer(std::int64_t{}); }) return dim::integer(constant);
      else lx_.fail(line, column, "negative dimension " + std::to_string(constant));
    }
    return dim::affine(constant, std::move(terms));
  }

  /// `[*]`, `[]`, `[2,?,n]`.
  shape parse_shape() {
    expect('[');
    if (accept('*')) {
      expect(']');
      return shape();
    }
    std::vector<dim> dims;
    if (accept(']')) return shape(std::move(dims));
    for (;;) {
      dims.push_back(parse_dim());
      if (accept(']')) break;
      if (!lx_.peek().is(',')) unexpected(lx_.peek(), "',' or ']'");
      lx_.take();
    }
    return shape(std::move(dims));
  }

  /// A dtype name (`f32`, `?`).
  dtype parse_dtype_token() {
    const token& t = lx_.peek();
    if (t.is('?')) {
      lx_.take();
      return dtype::undefined;
    }
    if (t.kind != tok::ident) unexpected(t, "a dtype");
    auto d = gpass::parse_dtype(t.text);
    if (!d) lx_.fail(t, "unknown dtype '" + std::string(t.text) + "'");
    lx_.take();
    return *d;
  }

  /// `f32[2,3]`, `?[*]`.
  tensor_type parse_tensor_type() {
    tensor_type t;
    t.element = parse_dtype_token();
    if (!lx_.peek().is('[')) unexpected(lx_.peek(), "'[' (a shape; write f32[*] for unknown rank)");
    t.shape = parse_shape();
    return t;
  }

  /// `?`, a tensor type, `list<...>`, `tuple<...>`. Nesting is bounded by `max_type_depth`.
  type parse_type(int depth = 0) {
    const token& t = lx_.peek();
    if (t.is('?') && !lx_.peek(1).is('[')) {
      lx_.take();
      return type();
    }
    if (t.is_ident("list")) {
      lx_.take();
      expect('<');
      list_type l;
      l.element = parse_tensor_type();
      expect(',');
      l.length = parse_dim();
      if (accept(',')) {
        if (!lx_.peek().is_ident("like")) unexpected(lx_.peek(), "'like'");
        lx_.take();
        token r = expect_kind(tok::node, "a node reference like %ta:0");
        l.same_length_as = std::string(r.str());
        if (accept(':')) {
          token p = expect_kind(tok::number, "a port number");
          parse_small(p, "port", std::numeric_limits<int>::max());
          l.same_length_as += ':';
          l.same_length_as += p.text;
        }
        if (l.same_length_as.empty()) lx_.fail(r, "empty node name");
      }
      expect('>');
      return l;
    }
    if (t.is_ident("tuple")) {
      if (depth >= max_type_depth)
        lx_.fail(t, "type nesting too deep (more than " + std::to_string(max_type_depth) + " levels)");
      lx_.take();
      expect('<');
      tuple_type tu;
      if (accept('>')) return tu;
      for (;;) {
        tu.elements.push_back(parse_type(depth + 1));
        if (accept('>')) break;
        if (!lx_.peek().is(',')) unexpected(lx_.peek(), "',' or '>'");
        lx_.take();
      }
      return tu;
    }
    if (t.kind != tok::ident && !t.is('?')) unexpected(t, "a type");
    return parse_tensor_type();
  }

  // ---- tensors ---------------------------------------------------------------------

  template <class T>
  T parse_element(dtype d) {
    std::string_view dn = to_string(d);
    if constexpr (std::is_same_v<T, bool>) {
      const token& t = lx_.peek();
      if (t.is_ident("true")) {
        lx_.take();
        return true;
      }
      if (t.is_ident("false")) {
        lx_.take();
        return false;
      }
      unexpected(t, "true or false");
    } else if constexpr (std::is_same_v<T, std::string>) {
      return std::string(expect_kind(tok::string, "a string").str());
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      return parse_floating<T>(dn);
    } else if constexpr (std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
      return parse_half<T>(dn);
    } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      using F = typename T::value_type;
      expect('(');
      F re = parse_floating<F>(dn);
      expect(',');
      F im = parse_floating<F>(dn);
      expect(')');
      return T(re, im);
    } else {
      token t = lx_.take();
      if (t.kind != tok::number) unexpected(t, "an integer");
      if constexpr (std::is_unsigned_v<T>) {
        auto v = parse_int<std::uint64_t>(t, dn);
        if (v > std::numeric_limits<T>::max()) lx_.fail(t, "number " + t.describe() + " is out of range for " + std::string(dn));
        return static_cast<T>(v);
      } else {
        auto v = parse_int<std::int64_t>(t, dn);
        if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
          lx_.fail(t, "number " + t.describe() + " is out of range for " + std::string(dn));
        return static_cast<T>(v);
      }
    }
  }

  /// `tensor<f32[2]> [1.0, 2.0]` (after the `tensor` keyword has been seen, not taken).
  tensor parse_tensor() {
    lx_.take();  // 'tensor'
    expect('<');
    const token& tt = lx_.peek();
    int tl = tt.line, tc = tt.column;
    tensor_type ty = parse_tensor_type();
    expect('>');
    if (!ty.shape.has_rank()) lx_.fail(tl, tc, "a tensor value needs a known shape, got " + ty.to_string());
    std::vector<std::int64_t> sizes;
    std::uint64_t count = 1;
    bool zero = false;
    for (const auto& d : ty.shape.dims()) {
      if (!d.is_known()) lx_.fail(tl, tc, "a tensor value needs a known shape, got " + ty.to_string());
      sizes.push_back(d.value());
      if (d.value() == 0) zero = true;
      else if (__builtin_mul_overflow(count, static_cast<std::uint64_t>(d.value()), &count) ||
               count > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        lx_.fail(tl, tc, "tensor " + ty.to_string() + " has too many elements");
    }
    if (zero) count = 0;
    dtype d = ty.element;
    if (lx_.peek().is_ident("__elided__"))
      lx_.fail(lx_.peek(), "tensor " + ty.to_string() + " was elided when printed (print it without eliding to parse it)");
    token open = expect('[');
    if (d == dtype::undefined) {
      if (!lx_.peek().is(']')) lx_.fail(lx_.peek(), "a tensor of dtype ? has no elements; write []");
      lx_.take();
      return tensor(dtype::undefined, std::move(sizes));
    }
    if (d == dtype::resource || d == dtype::variant)
      lx_.fail(tl, tc, "a tensor of dtype " + std::string(to_string(d)) + " cannot hold values");
    if (is_low_precision(d)) {  // values, encoded to the dtype's bit codes
      tensor r(d, sizes);
      auto* codes = reinterpret_cast<std::uint8_t*>(r.raw());
      std::uint64_t k = 0;
      if (!accept(']')) {
        for (;;) {
          const token& at = lx_.peek();
          if (k >= count)
            lx_.fail(at, "too many elements for tensor " + ty.to_string() + " (expected " + std::to_string(count) + ")");
          codes[k++] = to_low_precision(d, parse_element<double>(dtype::f64));
          if (accept(']')) break;
          if (!lx_.peek().is(',')) unexpected(lx_.peek(), "',' or ']'");
          lx_.take();
        }
      }
      if (k != count)
        lx_.fail(open, "tensor " + ty.to_string() + " needs " + std::to_string(count) + " elements, got " + std::to_string(k));
      return r;
    }
    return visit_dtype(d, [&]<class T>() -> tensor {
      std::vector<T> values;
      if (!accept(']')) {
        for (;;) {
          const token& at = lx_.peek();
          if (values.size() >= count)
            lx_.fail(at, "too many elements for tensor " + ty.to_string() + " (expected " + std::to_string(count) + ")");
          values.push_back(parse_element<T>(d));
          if (accept(']')) break;
          if (!lx_.peek().is(',')) unexpected(lx_.peek(), "',' or ']'");
          lx_.take();
        }
      }
      if (values.size() != count)
        lx_.fail(open, "tensor " + ty.to_string() + " needs " + std::to_string(count) + " elements, got " +
                           std::to_string(values.size()));
      return tensor::from<T>(std::move(values), std::move(sizes));
    });
  }

  // ---- attribute values ------------------------------------------------------------

  /// One non-list attribute value.
  attribute parse_scalar_value() {
    const token& t = lx_.peek();
    switch (t.kind) {
      case tok::number: {
        if (looks_float(t.text)) return parse_floating<double>("float");
        token n = lx_.take();
        return parse_int<std::int64_t>(n, "int");
      }
      case tok::string: return std::string(lx_.take().str());
      case tok::func: {
        token f = lx_.take();
        return function_ref{std::string(f.str())};
      }
      case tok::punct:
        if (t.is('?')) {
          lx_.take();
          return dtype::undefined;
        }
        if (t.is('-')) return parse_floating<double>("float");
        if (t.is('[')) lx_.fail(t, "lists of lists are not attribute values");
        unexpected(t, "an attribute value");
      case tok::ident: {
        std::string_view w = t.text;
        if (w == "true" || w == "false") {
          lx_.take();
          return w == "true";
        }
        if (w == "inf" || w == "nan") return parse_floating<double>("float");
        if (w == "shape") {
          lx_.take();
          if (!lx_.peek().is('[')) unexpected(lx_.peek(), "'[' after 'shape'");
          return parse_shape();
        }
        if (w == "type") {
          lx_.take();
          expect('<');
          type ty = parse_type();
          expect('>');
          return ty;
        }
        if (w == "tensor") return parse_tensor();
        return parse_dtype_token();
      }
      default: unexpected(t, "an attribute value");
    }
  }

  static std::optional<std::size_t> list_kind_index(std::string_view w) {
    static constexpr std::string_view kinds[] = {"ints",   "floats", "strings", "bools",  "dtypes",
                                                 "shapes", "types",  "tensors", "funcs"};
    for (std::size_t i = 0; i < std::size(kinds); ++i)
      if (kinds[i] == w) return i;
    return std::nullopt;
  }

  static attribute empty_list(std::size_t kind) {
    switch (kind) {
      case 0: return std::vector<std::int64_t>{};
      case 1: return std::vector<double>{};
      case 2: return std::vector<std::string>{};
      case 3: return std::vector<bool>{};
      case 4: return std::vector<dtype>{};
      case 5: return std::vector<shape>{};
      case 6: return std::vector<type>{};
      case 7: return std::vector<tensor>{};
      default: return std::vector<function_ref>{};
    }
  }

  /// Any attribute value, lists included.
  attribute parse_value() {
    const token& t = lx_.peek();
    if (t.kind == tok::ident && lx_.peek(1).is('[')) {
      if (auto k = list_kind_index(t.text)) {
        std::string kind(t.text);
        lx_.take();
        lx_.take();
        if (!lx_.peek().is(']'))
          lx_.fail(lx_.peek(), "'" + kind + "[...]' is only for empty lists; write the elements as [a, b]");
        lx_.take();
        return empty_list(*k);
      }
    }
    if (!t.is('[')) return parse_scalar_value();
    token open = lx_.take();
    if (lx_.peek().is(']'))
      lx_.fail(open, "an empty list needs its kind, like ints[] or strings[]");
    attribute first = parse_scalar_value();
    std::string first_kind(first.kind_name());
    return std::visit(
        [&](auto&& v) -> attribute {
          using V = std::decay_t<decltype(v)>;
          if constexpr (text::is_std_vector<V>::value) {
            return attribute();  // unreachable: scalars only
          } else {
            std::vector<V> out;
            out.push_back(std::move(v));
            while (accept(',')) {
              const token& at = lx_.peek();
              int l = at.line, c = at.column;
              attribute next = parse_scalar_value();
              V* p = std::get_if<V>(&next.value());
              if (!p)
                lx_.fail(l, c, "mixed-kind list: a " + std::string(next.kind_name()) + " in a list of " + first_kind + "s");
              out.push_back(std::move(*p));
            }
            if (!lx_.peek().is(']')) unexpected(lx_.peek(), "',' or ']'");
            lx_.take();
            return out;
          }
        },
        first.value());
  }

  /// `{name = value, ...}` (the opening brace is the current token).
  attribute_map parse_attribute_map() {
    attribute_map m;
    expect('{');
    if (accept('}')) return m;
    for (;;) {
      token n = lx_.take();
      if (n.kind != tok::ident && n.kind != tok::string) unexpected(n, "an attribute name");
      std::string name(n.str());
      expect('=');
      attribute v = parse_value();
      if (!m.emplace(name, std::move(v)).second) lx_.fail(n, "duplicate attribute '" + name + "'");
      if (accept('}')) break;
      if (!lx_.peek().is(',')) unexpected(lx_.peek(), "',' or '}'");
      lx_.take();
    }
    return m;
  }

 private:
  lexer lx_;
};

}  // namespace gpass::detail::text
