// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file dim.hpp
/// `gpass::dim`: one dimension of a shape; known, unknown, or a symbolic affine expression.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpass {

/// A dimension: a known size, an unknown size (`?`), or an affine expression over
/// named symbols (`n`, `2*n`, `n+m-1`).
///
/// Symbols stand for sizes that are unknown but named, so two dims that are the same
/// symbol are equal even when their value is not known. Arithmetic stays exact where it
/// is affine (`n + n == 2*n`, `4 * n`); anything else (`n * m`) becomes unknown.
/// Unification of symbols (deciding that `n` and `m` are equal) is done by the inference
/// engine, not here.
/// \code
///   gpass::dim n = gpass::dim::symbol("n");
///   assert((n + n).to_string() == "2*n");
///   assert((n * 4 + 1).to_string() == "4*n+1");
/// \endcode
class dim {
 public:
  using term = std::pair<std::string, std::int64_t>;  ///< symbol name and coefficient

  /// An unknown dimension.
  dim() = default;
  /// A known dimension. Negative values are not sizes: they make an unknown dim.
  dim(std::int64_t v) : unknown_(v < 0), constant_(v < 0 ? 0 : v) {}  // NOLINT(implicit)

  /// The unknown dimension `?`.
  static dim unknown() { return dim(); }
  /// A known integer that may be negative. Sizes are never negative (`dim(-1)` is unknown),
  /// but value propagation follows integer tensors element by element as dims, and those
  /// elements can be negative (Reshape's `-1`, Slice's `-1` ends): this keeps them exact.
  /// Arithmetic results with a negative constant and no symbol are still unknown.
  static dim integer(std::int64_t v) {
    dim d(0);
    d.constant_ = v;
    return d;
  }
  /// The symbol `name` (coefficient 1).
  static dim symbol(std::string name) {
    dim d(0);
    d.terms_.emplace_back(std::move(name), 1);
    return d;
  }
  /// An affine expression `constant + sum(coeff * symbol)`; terms need not be sorted.
  static dim affine(std::int64_t constant, std::vector<term> terms) {
    dim d(0);
    d.constant_ = constant;
    d.terms_ = std::move(terms);
    d.normalize();
    return d;
  }

  bool is_unknown() const noexcept { return unknown_; }
  bool is_known() const noexcept { return !unknown_ && terms_.empty(); }
  bool is_symbolic() const noexcept { return !unknown_ && !terms_.empty(); }
  /// The known value; requires `is_known()`.
  std::int64_t value() const noexcept { return constant_; }
  /// The value if known.
  std::optional<std::int64_t> known_value() const noexcept {
    return is_known() ? std::optional<std::int64_t>(constant_) : std::nullopt;
  }
  /// The constant part of an affine dim.
  std::int64_t constant() const noexcept { return constant_; }
  /// The symbolic terms, sorted by name, coefficients non-zero.
  const std::vector<term>& terms() const noexcept { return terms_; }
  /// True when the dim is exactly one symbol with coefficient 1 and no constant.
  bool is_single_symbol() const noexcept {
    return !unknown_ && constant_ == 0 && terms_.size() == 1 && terms_[0].second == 1;
  }

  friend bool operator==(const dim& a, const dim& b) {
    if (a.unknown_ || b.unknown_) return a.unknown_ == b.unknown_;
    return a.constant_ == b.constant_ && a.terms_ == b.terms_;
  }

  /// Sum. Like every operator here, a result whose constant or coefficients overflow
  /// `int64_t` is unknown (never a wrapped-around size).
  friend dim operator+(const dim& a, const dim& b) {
    if (a.unknown_ || b.unknown_) return dim();
    std::int64_t c = 0;
    if (__builtin_add_overflow(a.constant_, b.constant_, &c)) return dim();
    std::vector<term> t = a.terms_;
    t.insert(t.end(), b.terms_.begin(), b.terms_.end());
    return affine(c, std::move(t));
  }
  /// Difference; computed directly (not as `a + b * -1`, which would make a known `b`
  /// negative, hence unknown, before the sum).
  friend dim operator-(const dim& a, const dim& b) {
    if (a.unknown_ || b.unknown_) return dim();
    std::int64_t k = 0;
    if (__builtin_sub_overflow(a.constant_, b.constant_, &k)) return dim();
    std::vector<term> t = a.terms_;
    for (const auto& [s, c] : b.terms_) {
      if (c == std::numeric_limits<std::int64_t>::min()) return dim();
      t.emplace_back(s, -c);
    }
    return affine(k, std::move(t));
  }
  friend dim operator*(const dim& a, std::int64_t k) {
    if (a.unknown_) return dim();
    std::vector<term> t = a.terms_;
    for (auto& [s, c] : t)
      if (__builtin_mul_overflow(c, k, &c)) return dim();
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a.constant_, k, &r)) return dim();
    return affine(r, std::move(t));
  }
  friend dim operator*(std::int64_t k, const dim& a) { return a * k; }
  /// Product; affine when one side is known, unknown otherwise.
  friend dim operator*(const dim& a, const dim& b) {
    if (a.is_known()) return b * a.constant_;
    if (b.is_known()) return a * b.constant_;
    return dim();
  }
  /// Exact division by a known positive integer; unknown when not exact.
  friend dim operator/(const dim& a, std::int64_t k) {
    if (a.unknown_ || k <= 0 || a.constant_ % k != 0) return dim();
    std::vector<term> t = a.terms_;
    for (auto& [s, c] : t) {
      if (c % k != 0) return dim();
      c /= k;
    }
    return affine(a.constant_ / k, std::move(t));
  }

  /// Text form: `?`, `4`, `n`, `2*n+m-3`.
  std::string to_string() const {
    if (unknown_) return "?";
    if (terms_.empty()) return std::to_string(constant_);
    std::string s;
    for (const auto& [name, c] : terms_) {
      if (!s.empty()) s += c < 0 ? "-" : "+";
      else if (c < 0) s += "-";
      // the magnitude in unsigned (-c overflows for INT64_MIN)
      const std::uint64_t m = c < 0 ? 0 - static_cast<std::uint64_t>(c) : static_cast<std::uint64_t>(c);
      if (m != 1) s += std::to_string(m) + "*";
      s += name;
    }
    if (constant_ > 0) s += "+" + std::to_string(constant_);
    if (constant_ < 0) s += std::to_string(constant_);
    return s;
  }

 private:
  void normalize() {
    std::sort(terms_.begin(), terms_.end(), [](const term& x, const term& y) { return x.first < y.first; });
    std::vector<term> out;
    for (auto& t : terms_) {
      if (!out.empty() && out.back().first == t.first) {
        if (__builtin_add_overflow(out.back().second, t.second, &out.back().second)) {
          *this = dim();
          return;
        }
      } else {
        out.push_back(std::move(t));
      }
    }
    std::erase_if(out, [](const term& t) { return t.second == 0; });
    terms_ = std::move(out);
    // a known negative size is not a size
    if (terms_.empty() && constant_ < 0) {
      unknown_ = true;
      constant_ = 0;
    }
  }

  bool unknown_ = true;
  std::int64_t constant_ = 0;
  std::vector<term> terms_;
};

}  // namespace gpass
