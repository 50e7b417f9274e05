// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file formal_types.hpp
/// `gpass::apply_formal_types`: dtype inference and checking from an op's formal parameters
/// (ONNX-style type parameters shared between inputs and outputs).

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/type.hpp>
#include <gpass/ops/infer_context.hpp>
#include <gpass/ops/schema.hpp>

namespace gpass {

namespace detail {
// Type parameters that stand for tensors (`T`, `T1`, `Tind`, `I`, `B`...), not for
// sequences (`S`), optionals (`O`) or any value (`V`).
inline bool is_tensor_param(const std::string& t) {
  if (t.empty() || !(t[0] >= 'A' && t[0] <= 'Z')) return false;
  return t[0] != 'S' && t[0] != 'O' && t[0] != 'V';
}
// The fixed dtype of a formal (`f32`, `i64`); none for a type parameter, whose name starts
// with a capital (dtype names are lower case): no search of the dtype table for those.
inline std::optional<dtype> fixed_dtype(const std::string& t) {
  if (t.empty() || (t[0] >= 'A' && t[0] <= 'Z')) return std::nullopt;
  return parse_dtype(t);
}
inline dtype element_dtype(const type& t) {
  if (t.is_tensor()) return t.tensor().element;
  return dtype::undefined;
}
}  // namespace detail

/// The dtypes bound to an op's type parameters (`T` -> f32, with the input that bound it):
/// a small flat table (no allocation for up to 8 parameters) that `apply_formal_types` fills
/// once per node inference.
class formal_bindings {
 public:
  struct entry {
    std::string_view param;  ///< the schema's parameter name (the schema outlives the table)
    dtype type = dtype::undefined;
    std::size_t input = 0;   ///< the port that bound it (an input; in `backward`, an output)
  };
  /// The entry of `param`, or nullptr.
  const entry* find(std::string_view param) const noexcept {
    for (std::size_t i = 0; i < size(); ++i)
      if (at(i).param == param) return &at(i);
    return nullptr;
  }
  /// Adds `param` unless bound; returns its entry and whether it was added.
  std::pair<const entry*, bool> emplace(std::string_view param, dtype d, std::size_t input) {
    if (const entry* e = find(param)) return {e, false};
    if (n_ < fixed_.size()) fixed_[n_] = entry{param, d, input};
    else more_.push_back(entry{param, d, input});
    ++n_;
    return {&at(n_ - 1), true};
  }
  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  const entry& at(std::size_t i) const noexcept { return i < fixed_.size() ? fixed_[i] : more_[i - fixed_.size()]; }

 private:
  std::array<entry, 8> fixed_{};
  std::vector<entry> more_;
  std::size_t n_ = 0;
};

/// Function object: the dtypes that `s`'s formals imply for the node in `ctx`.
/// - `check_inputs(s, ctx)`: inputs sharing a type parameter must have equal dtypes, and an
///   input whose formal is a fixed dtype must have it; fails with `incompatible dtypes f32
///   and i64 for T (inputs 0 and 1)` otherwise. Returns the parameters' dtypes.
/// - `fill_outputs(s, ctx)`: outputs whose formal is a fixed dtype or a parameter bound by an
///   input get that dtype (where the shape function left it undefined).
/// - `backward(s, ctx)`: inputs whose parameter is bound by a known output dtype are refined
///   (`ctx.refine_input`) when their dtype is not known.
/// \code
///   gpass::apply_formal_types.fill_outputs(schema, ctx);
/// \endcode
struct apply_formal_types_fn {
  formal_bindings check_inputs(const op_schema& s, infer_context& ctx) const {
    formal_bindings bound;
    for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
      const formal_parameter* f = s.formal_input(i);
      if (!f || !ctx.has_input(i)) continue;
      if (f->option == formal_option::variadic && !f->homogeneous) continue;
      dtype d = detail::element_dtype(ctx.input_type(i));
      if (d == dtype::undefined) continue;
      if (auto fixed = detail::fixed_dtype(f->type)) {
        if (*fixed != d)
          ctx.fail("input " + std::to_string(i) + " ('" + f->name + "') must be " + std::string(to_string(*fixed)) +
                   ", got " + std::string(to_string(d)));
        continue;
      }
      if (!detail::is_tensor_param(f->type)) continue;
      auto [it, fresh] = bound.emplace(f->type, d, i);
      if (!fresh && it->type != d)
        ctx.fail("incompatible dtypes " + std::string(to_string(it->type)) + " and " + std::string(to_string(d)) +
                 " for " + f->type + " (inputs " + std::to_string(it->input) + " and " + std::to_string(i) + ")");
    }
    return bound;
  }

  void fill_outputs(const op_schema& s, infer_context& ctx) const {
    auto bound = check_inputs_quiet(s, ctx);
    for (std::size_t k = 0; k < ctx.num_outputs(); ++k) {
      const formal_parameter* f = s.formal_output(k);
      if (!f || (f->option == formal_option::variadic && !f->homogeneous)) continue;
      dtype d = dtype::undefined;
      if (auto fixed = detail::fixed_dtype(f->type)) d = *fixed;
      else if (detail::is_tensor_param(f->type)) {
        if (const auto* e = bound.find(f->type)) d = e->type;
      }
      if (d == dtype::undefined) continue;
      type& t = ctx.output(k).type;
      if (t.is_unknown()) t = tensor_type{d, shape()};
      else if (t.is_tensor() && t.tensor().element == dtype::undefined) t.tensor().element = d;
    }
  }

  void backward(const op_schema& s, infer_context& ctx) const {
    formal_bindings bound;
    for (std::size_t k = 0; k < ctx.num_outputs(); ++k) {
      const formal_parameter* f = s.formal_output(k);
      if (!f || !detail::is_tensor_param(f->type)) continue;
      if (f->option == formal_option::variadic && !f->homogeneous) continue;
      dtype d = detail::element_dtype(ctx.current_output(k).type);
      if (d != dtype::undefined) bound.emplace(f->type, d, k);
    }
    if (bound.empty()) return;
    for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
      const formal_parameter* f = s.formal_input(i);
      if (!f || !ctx.has_input(i)) continue;
      if (f->option == formal_option::variadic && !f->homogeneous) continue;
      const auto* e = bound.find(f->type);
      if (!e) continue;
      const type& t = ctx.input_type(i);
      if (t.is_unknown()) ctx.refine_input(i, tensor_type{e->type, shape()});
      else if (t.is_tensor() && t.tensor().element == dtype::undefined)
        ctx.refine_input(i, tensor_type{e->type, t.tensor().shape});
    }
  }

 private:
  formal_bindings check_inputs_quiet(const op_schema& s, const infer_context& ctx) const {
    formal_bindings bound;
    for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
      const formal_parameter* f = s.formal_input(i);
      if (!f || !ctx.has_input(i) || !detail::is_tensor_param(f->type)) continue;
      if (f->option == formal_option::variadic && !f->homogeneous) continue;
      dtype d = detail::element_dtype(ctx.input_type(i));
      if (d != dtype::undefined) bound.emplace(f->type, d, i);
    }
    return bound;
  }
};
inline constexpr apply_formal_types_fn apply_formal_types{};

}  // namespace gpass
