// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file value.hpp
/// `gpass::exec::basic_value<Tensor>`: what flows along an edge at run time: a tensor, a
/// sequence of tensors (ONNX `seq(tensor)`, a TensorArray), or nothing (an absent optional).

#include <cstddef>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>

namespace gpass::exec {

/// A run-time value of a backend whose tensors are `Tensor` (`gpass::tensor` on the CPU).
/// \code
///   gpass::exec::value v = gpass::tensor::scalar(1.0f);
///   v.is_tensor();                     // true
///   gpass::exec::value s = std::vector<gpass::tensor>{};   // an empty sequence
/// \endcode
template <class Tensor>
class basic_value {
 public:
  using tensor_type = Tensor;
  using sequence_type = std::vector<Tensor>;

  /// Nothing: an absent optional, or an omitted input.
  basic_value() = default;
  basic_value(Tensor t) : v_(std::move(t)) {}               // NOLINT(implicit)
  basic_value(sequence_type s) : v_(std::move(s)) {}        // NOLINT(implicit)

  bool is_none() const noexcept { return std::holds_alternative<std::monostate>(v_); }
  bool is_tensor() const noexcept { return std::holds_alternative<Tensor>(v_); }
  bool is_sequence() const noexcept { return std::holds_alternative<sequence_type>(v_); }

  /// The tensor; throws `gpass::error` when this is a sequence or nothing.
  const Tensor& tensor() const {
    if (const Tensor* t = std::get_if<Tensor>(&v_)) return *t;
    throw error(std::string("expected a tensor, got ") + kind_name());
  }
  Tensor& tensor() { return const_cast<Tensor&>(std::as_const(*this).tensor()); }
  /// The sequence; throws `gpass::error` when this is a tensor or nothing.
  const sequence_type& sequence() const {
    if (const sequence_type* s = std::get_if<sequence_type>(&v_)) return *s;
    throw error(std::string("expected a sequence, got ") + kind_name());
  }
  sequence_type& sequence() { return const_cast<sequence_type&>(std::as_const(*this).sequence()); }

  /// "none", "tensor" or "sequence".
  const char* kind_name() const noexcept { return is_none() ? "none" : is_tensor() ? "tensor" : "sequence"; }

 private:
  std::variant<std::monostate, Tensor, sequence_type> v_;
};

/// The CPU value type.
using value = basic_value<gpass::tensor>;

}  // namespace gpass::exec
