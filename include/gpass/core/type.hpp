// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file type.hpp
/// Value types: `tensor_type`, `list_type` (TensorArray), `tuple_type`, and `type` (any of them, or unknown).

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <gpass/core/dim.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/shape.hpp>

namespace gpass {

/// The type of a tensor value: element type and shape. Text: `f32[2,n]`, `?[*]`.
struct tensor_type {
  dtype element = dtype::undefined;
  gpass::shape shape;  ///< unknown rank by default
  friend bool operator==(const tensor_type&, const tensor_type&) = default;
  std::string to_string() const { return std::string(gpass::to_string(element)) + shape.to_string(); }
};

/// The type of a list of tensors (a TensorArray, seed 002): the type shared by its
/// elements, the length, and optionally the name of another list value whose length
/// this one shares (seed 002's `ref_tensor_array_id`). Text: `list<f32[?,3], n>`.
struct list_type {
  tensor_type element;
  dim length;
  std::string same_length_as;  ///< empty, or `node:port` of a list with the same length
  friend bool operator==(const list_type&, const list_type&) = default;
  std::string to_string() const {
    std::string s = "list<" + element.to_string() + ", " + length.to_string();
    if (!same_length_as.empty()) s += ", like %" + same_length_as;
    return s + ">";
  }
};

struct type;

/// The type of a tuple of values. Text: `tuple<f32[2], list<i64[], ?>>`.
struct tuple_type {
  std::vector<type> elements;
  friend bool operator==(const tuple_type&, const tuple_type&);
  std::string to_string() const;
};

/// Not known yet. Text: `?`.
struct unknown_type {
  friend bool operator==(const unknown_type&, const unknown_type&) = default;
};

/// Any value type: unknown, tensor, list or tuple.
/// \code
///   gpass::type t = gpass::tensor_type{gpass::dtype::f32, gpass::shape{2, 3}};
///   assert(t.to_string() == "f32[2,3]");
/// \endcode
struct type {
  std::variant<unknown_type, tensor_type, list_type, tuple_type> value;

  type() = default;
  type(unknown_type t) : value(t) {}           // NOLINT(implicit)
  type(tensor_type t) : value(std::move(t)) {}  // NOLINT(implicit)
  type(list_type t) : value(std::move(t)) {}    // NOLINT(implicit)
  type(tuple_type t) : value(std::move(t)) {}   // NOLINT(implicit)

  bool is_unknown() const noexcept { return std::holds_alternative<unknown_type>(value); }
  bool is_tensor() const noexcept { return std::holds_alternative<tensor_type>(value); }
  bool is_list() const noexcept { return std::holds_alternative<list_type>(value); }
  bool is_tuple() const noexcept { return std::holds_alternative<tuple_type>(value); }
  const tensor_type& tensor() const { return std::get<tensor_type>(value); }
  tensor_type& tensor() { return std::get<tensor_type>(value); }
  const list_type& list() const { return std::get<list_type>(value); }
  const tuple_type& tuple() const { return std::get<tuple_type>(value); }

  friend bool operator==(const type& a, const type& b) { return a.value == b.value; }

  std::string to_string() const {
    return std::visit(
        [](const auto& v) -> std::string {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, unknown_type>) return "?";
          else return v.to_string();
        },
        value);
  }
};

inline bool operator==(const tuple_type& a, const tuple_type& b) { return a.elements == b.elements; }

inline std::string tuple_type::to_string() const {
  std::string s = "tuple<";
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (i) s += ", ";
    s += elements[i].to_string();
  }
  return s + ">";
}

}  // namespace gpass
