// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file attribute.hpp
/// Attribute values of nodes and graphs: `gpass::attribute` and `gpass::attribute_map`.

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>

namespace gpass {

/// A reference to a function of the graph's function library (a loop body, a branch).
/// Text: `@name`.
struct function_ref {
  std::string name;
  friend bool operator==(const function_ref&, const function_ref&) = default;
};

/// One attribute value: int, float, string, bool, dtype, shape, full type, tensor,
/// function reference, or a list of one of those.
/// \code
///   gpass::attribute a = std::int64_t{3};
///   a.as<std::int64_t>() == 3;
///   gpass::attribute l = std::vector<std::int64_t>{1, 2};
/// \endcode
class attribute {
 public:
  using variant_type =
      std::variant<std::int64_t, double, std::string, bool, dtype, shape, type, tensor, function_ref,
                   std::vector<std::int64_t>, std::vector<double>, std::vector<std::string>, std::vector<bool>,
                   std::vector<dtype>, std::vector<shape>, std::vector<type>, std::vector<tensor>,
                   std::vector<function_ref>>;

  attribute() : v_(std::int64_t{0}) {}
  template <class T>
    requires std::is_constructible_v<variant_type, T&&> && (!std::is_same_v<std::decay_t<T>, attribute>)
  attribute(T&& v) : v_(convert(std::forward<T>(v))) {}  // NOLINT(implicit)

  /// The held value as `T`; throws `gpass::error` naming both kinds on mismatch.
  template <class T>
  const T& as() const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    throw error("attribute is a " + std::string(kind_name()) + ", not a " + std::string(kind_name_of<T>()));
  }
  template <class T>
  bool is() const noexcept {
    return std::holds_alternative<T>(v_);
  }
  const variant_type& value() const noexcept { return v_; }
  variant_type& value() noexcept { return v_; }

  /// The name of the held kind: "int", "float", "string", "bool", "dtype", "shape", "type",
  /// "tensor", "func", and "ints", "floats", ... for lists.
  std::string_view kind_name() const noexcept { return kind_names[v_.index()]; }

  friend bool operator==(const attribute& a, const attribute& b) { return a.v_ == b.v_; }

  template <class T>
  static constexpr std::string_view kind_name_of() {
    return kind_names[variant_type(T{}).index()];
  }

 private:
  static constexpr std::string_view kind_names[] = {"int",    "float",  "string", "bool",  "dtype",  "shape",
                                                    "type",   "tensor", "func",   "ints",  "floats", "strings",
                                                    "bools",  "dtypes", "shapes", "types", "tensors", "funcs"};

  template <class T>
  static variant_type convert(T&& v) {
    using D = std::decay_t<T>;
    if constexpr (std::is_same_v<D, int> || std::is_same_v<D, long> || std::is_same_v<D, long long>)
      return std::int64_t(v);
    else if constexpr (std::is_same_v<D, float>) return double(v);
    else if constexpr (std::is_same_v<D, const char*> || std::is_same_v<D, char*>) return std::string(v);
    else return variant_type(std::forward<T>(v));
  }

  variant_type v_;
};

/// Attributes of a node or graph, ordered by name (deterministic printing).
using attribute_map = std::map<std::string, attribute, std::less<>>;

/// The value of attribute `name` in `m` as `T`, or `fallback` when absent.
template <class T>
T get_or(const attribute_map& m, std::string_view name, T fallback) {
  auto it = m.find(name);
  return it == m.end() ? fallback : it->second.as<T>();
}

}  // namespace gpass
