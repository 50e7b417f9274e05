// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file shape.hpp
/// `gpass::shape`: a list of dims, or a shape of unknown rank.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/dim.hpp>

namespace gpass {

/// The shape of a tensor: either of unknown rank (`[*]`), or a list of `dim`s
/// (`[]` is a scalar, `[2,?,n]` a rank-3 shape with one unknown and one symbolic dim).
/// \code
///   gpass::shape s{2, gpass::dim::symbol("n")};
///   assert(s.rank() == 2 && s.to_string() == "[2,n]");
/// \endcode
class shape {
 public:
  /// A shape of unknown rank.
  shape() = default;
  /// A ranked shape from dims.
  shape(std::initializer_list<dim> dims) : ranked_(true), dims_(dims) {}
  explicit shape(std::vector<dim> dims) : ranked_(true), dims_(std::move(dims)) {}
  /// A ranked, fully known shape from sizes (negative sizes become unknown dims).
  static shape of(const std::vector<std::int64_t>& sizes) {
    std::vector<dim> d;
    d.reserve(sizes.size());
    for (auto s : sizes) d.emplace_back(s);
    return shape(std::move(d));
  }
  /// A shape of unknown rank.
  static shape unknown_rank() { return shape(); }
  /// The rank-0 shape `[]` (note that `shape{}` is the unknown rank: braces with nothing in
  /// them value-initialize).
  static shape scalar() { return shape(std::vector<dim>{}); }
  /// A ranked shape of `rank` unknown dims.
  static shape unknown_dims(std::size_t rank) { return shape(std::vector<dim>(rank)); }

  bool has_rank() const noexcept { return ranked_; }
  /// The rank; requires `has_rank()`.
  std::size_t rank() const noexcept { return dims_.size(); }
  const std::vector<dim>& dims() const noexcept { return dims_; }
  std::vector<dim>& dims() noexcept { return dims_; }
  const dim& operator[](std::size_t i) const { return dims_[i]; }
  dim& operator[](std::size_t i) { return dims_[i]; }

  /// True when the rank and every dim are known.
  bool is_fully_known() const noexcept {
    if (!ranked_) return false;
    for (const auto& d : dims_)
      if (!d.is_known()) return false;
    return true;
  }
  /// The sizes; requires `is_fully_known()`.
  std::vector<std::int64_t> sizes() const {
    std::vector<std::int64_t> v;
    v.reserve(dims_.size());
    for (const auto& d : dims_) v.push_back(d.value());
    return v;
  }
  /// The number of elements as a dim (affine when at most one factor is symbolic).
  dim num_elements() const {
    if (!ranked_) return dim();
    dim n(1);
    for (const auto& d : dims_) n = n * d;
    return n;
  }

  friend bool operator==(const shape& a, const shape& b) { return a.ranked_ == b.ranked_ && a.dims_ == b.dims_; }

  /// Text form: `[*]`, `[]`, `[2,?,n]`.
  std::string to_string() const {
    if (!ranked_) return "[*]";
    std::string s = "[";
    for (std::size_t i = 0; i < dims_.size(); ++i) {
      if (i) s += ",";
      s += dims_[i].to_string();
    }
    return s + "]";
  }

 private:
  bool ranked_ = false;
  std::vector<dim> dims_;
};

/// Number of elements of a fully known shape given as sizes; throws `gpass::error` when the
/// product overflows `int64_t` (see `checked_num_elements` for the form that does not).
inline std::int64_t num_elements(const std::vector<std::int64_t>& sizes) { return num_elements_or_throw(sizes); }

}  // namespace gpass
