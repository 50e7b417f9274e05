// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file known_value.hpp
/// `gpass::known_value`: what inference knows about the contents of a value (seed 000's
/// `node.value` and `incomplete_value`).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/dim.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/tensor.hpp>

namespace gpass {

/// The contents of a value as far as inference knows them: nothing, fully (`value`, a host
/// tensor), or, for integer tensors, element by element as dims (`elements`, row-major; some
/// may be symbolic or unknown). This is how a shape computed in the graph is followed:
/// `Shape(x)` of `x: f32[n,3]` has `elements == {n, 3}` (seed 000's `incomplete_value`), and
/// becomes a full `value` when every dim is known.
///
/// Storage on graphs (see `gpass::infer_shapes`): port 0's known value is written to the node
/// attribute `_value` (a tensor) or `_incomplete_value` (a `shape` whose dims are the
/// elements); port k > 0 uses `_value:k` / `_incomplete_value:k`.
/// \code
///   auto v = gpass::known_value::of_dims({gpass::dim::symbol("n"), 3});
///   assert(!v.is_known() && v.dims()->at(1) == gpass::dim(3));
///   auto w = gpass::known_value::of(gpass::tensor::from<std::int64_t>({2, 3}));
///   assert(w.is_known() && w.ints() == std::vector<std::int64_t>({2, 3}));
/// \endcode
struct known_value {
  /// The full contents; `value.empty()` when not fully known.
  tensor value;
  /// The elements of an integer tensor as dims, when only partly known (unset otherwise).
  std::optional<std::vector<dim>> elements;

  /// A fully known value.
  static known_value of(tensor t) { return known_value{std::move(t), std::nullopt}; }
  /// An integer value known element by element (all-known dims stay `elements`: the dtype
  /// and sizes needed to make a tensor are the caller's, see `to_tensor`).
  static known_value of_dims(std::vector<dim> d) { return known_value{tensor(), std::move(d)}; }

  /// True when nothing is known.
  bool empty() const noexcept { return value.empty() && !elements; }
  /// True when the contents are fully known as a tensor.
  bool is_known() const noexcept { return !value.empty(); }

  /// The elements as dims: from `elements`, or from an integer (or bool) `value` with at most
  /// `limit` elements; nullopt otherwise.
  std::optional<std::vector<dim>> dims(std::int64_t limit = 1 << 16) const {
    if (elements) return elements;
    if (value.empty() || value.size() > limit) return std::nullopt;
    std::optional<std::vector<dim>> r;
    if (!is_integer(value.element_type()) && value.element_type() != dtype::bool_) return r;
    r.emplace();
    r->reserve(static_cast<std::size_t>(value.size()));
    visit_dtype(value.element_type(), [&]<class T>() {
      if constexpr (std::is_integral_v<T>) {
        for (const T& x : value.values<T>()) {
          // a negative element is a value, not a size: `dim::integer` keeps it exact
          r->push_back(dim::integer(static_cast<std::int64_t>(x)));
        }
      }
    });
    return r;
  }

  /// The elements as integers when all are known (from `value` or from all-known `elements`).
  std::optional<std::vector<std::int64_t>> ints(std::int64_t limit = 1 << 16) const {
    if (elements) {
      std::vector<std::int64_t> r;
      r.reserve(elements->size());
      for (const auto& d : *elements) {
        if (!d.is_known()) return std::nullopt;
        r.push_back(d.value());
      }
      return r;
    }
    if (value.empty() || value.size() > limit) return std::nullopt;
    if (!is_integer(value.element_type()) && value.element_type() != dtype::bool_) return std::nullopt;
    std::vector<std::int64_t> r;
    r.reserve(static_cast<std::size_t>(value.size()));
    visit_dtype(value.element_type(), [&]<class T>() {
      if constexpr (std::is_integral_v<T>)
        for (const T& x : value.values<T>()) r.push_back(static_cast<std::int64_t>(x));
    });
    return r;
  }

  /// The elements as doubles when fully known and numeric (not complex/string).
  std::optional<std::vector<double>> doubles(std::int64_t limit = 1 << 16) const {
    if (value.empty()) {
      if (auto i = ints(limit)) return std::vector<double>(i->begin(), i->end());
      return std::nullopt;
    }
    if (value.size() > limit) return std::nullopt;
    std::optional<std::vector<double>> r;
    visit_dtype(value.element_type(), [&]<class T>() {
      if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
        r.emplace();
        for (const T& x : value.values<T>()) r->push_back(static_cast<double>(x));
      }
    });
    return r;
  }

  /// A tensor of dtype `t` and `sizes` holding all-known `elements` (integer or bool `t`).
  /// nullopt when an element is not known or the count does not match.
  static std::optional<tensor> to_tensor(const std::vector<dim>& elems, dtype t, std::vector<std::int64_t> sizes) {
    if (!is_integer(t) && t != dtype::bool_) return std::nullopt;
    if (num_elements(sizes) != static_cast<std::int64_t>(elems.size())) return std::nullopt;
    for (const auto& d : elems)
      if (!d.is_known()) return std::nullopt;
    tensor r(t, std::move(sizes));
    visit_dtype(t, [&]<class T>() {
      if constexpr (std::is_integral_v<T>) {
        T* p = r.data<T>();
        for (std::size_t i = 0; i < elems.size(); ++i) {
          p[i] = static_cast<T>(elems[i].constant());
        }
      }
    });
    return r;
  }

  /// Text form for diagnostics: `?`, `{2,n,?}`, or `tensor<i64[3]>`.
  std::string to_string() const {
    if (elements) {
      std::string s = "{";
      for (std::size_t i = 0; i < elements->size(); ++i) {
        if (i) s += ",";
        s += (*elements)[i].to_string();
      }
      return s + "}";
    }
    if (value.empty()) return "?";
    std::string s = "tensor<" + std::string(gpass::to_string(value.element_type())) + value.shape().to_string();
    if (auto d = dims(16)) {
      s += " {";
      for (std::size_t i = 0; i < d->size(); ++i) {
        if (i) s += ",";
        s += (*d)[i].to_string();
      }
      s += "}";
    }
    return s + ">";
  }

  friend bool operator==(const known_value& a, const known_value& b) {
    return a.elements == b.elements && a.value == b.value;
  }
};

}  // namespace gpass
