// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file common.hpp
/// Shared machinery of the ONNX op schemas: a small builder for schemas (`onnx_op`) and the
/// helpers the shape functions share (axes, broadcasting, element-wise value evaluation).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/dim.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/ops/broadcast.hpp>
#include <gpass/ops/infer_context.hpp>
#include <gpass/ops/schema.hpp>

namespace gpass {

class op_registry;

/// A builder for ONNX default-domain schemas:
/// \code
///   gpass::onnx_op("Relu", 14).in("X:T").out("Y:T").tc("T", gpass::onnx_types::numeric())
///       .infer(gpass::onnx_shape::same_as_input0).add(r);
/// \endcode
/// Formal specs are `name:Type` with suffixes on the name: `?` optional, `*` variadic
/// (homogeneous, at least one), `*0` variadic with none allowed, `~` heterogeneous variadic.
/// Arity (min/max inputs and outputs) follows from the formals. Use `until(v)` for the last
/// opset a schema applies to (when a later version changes semantics).
class onnx_op {
 public:
  explicit onnx_op(std::string name, int since = 1) {
    s_.frontend = "onnx";
    s_.name = std::move(name);
    s_.since_version = since;
  }
  onnx_op& until(int v) {
    s_.until_version = v;
    return *this;
  }
  onnx_op& in(std::string_view spec) {
    s_.inputs.push_back(parse(spec));
    return *this;
  }
  onnx_op& out(std::string_view spec) {
    s_.outputs.push_back(parse(spec));
    return *this;
  }
  /// An optional attribute with a default value.
  onnx_op& attr(std::string name, std::string kind, attribute def) {
    s_.attributes.push_back(attribute_spec{std::move(name), std::move(kind), false, std::move(def)});
    return *this;
  }
  /// An optional attribute without a default.
  onnx_op& opt(std::string name, std::string kind) {
    s_.attributes.push_back(attribute_spec{std::move(name), std::move(kind), false, std::nullopt});
    return *this;
  }
  /// A required attribute.
  onnx_op& req(std::string name, std::string kind) {
    s_.attributes.push_back(attribute_spec{std::move(name), std::move(kind), true, std::nullopt});
    return *this;
  }
  onnx_op& tc(std::string param, std::vector<dtype> allowed) {
    s_.type_constraints.push_back(type_constraint{std::move(param), std::move(allowed), {}});
    return *this;
  }
  onnx_op& infer(infer_function f) {
    s_.infer = std::move(f);
    return *this;
  }
  onnx_op& propagate(infer_function f) {
    s_.propagate = std::move(f);
    return *this;
  }
  onnx_op& backward(infer_function f) {
    s_.infer_backward = std::move(f);
    return *this;
  }
  onnx_op& traits(op_traits t) {
    s_.traits = t;
    return *this;
  }
  onnx_op& doc(std::string d) {
    s_.doc = std::move(d);
    return *this;
  }
  /// The schema (arity computed from the formals).
  op_schema build() const {
    op_schema s = s_;
    arity(s.inputs, s.min_inputs, s.max_inputs);
    arity(s.outputs, s.min_outputs, s.max_outputs);
    return s;
  }
  /// Builds and registers the schema.
  void add(op_registry& r) const;

 private:
  static formal_parameter parse(std::string_view spec) {
    formal_parameter f;
    auto colon = spec.find(':');
    std::string name(spec.substr(0, colon));
    f.type = colon == std::string_view::npos ? std::string("T") : std::string(spec.substr(colon + 1));
    while (!name.empty()) {
      char c = name.back();
      if (c == '?') f.option = formal_option::optional;
      else if (c == '*') f.option = formal_option::variadic;
      else if (c == '~') {
        f.option = formal_option::variadic;
        f.homogeneous = false;
      } else if (c == '0' && name.size() >= 2 && (name[name.size() - 2] == '*' || name[name.size() - 2] == '~'))
        f.min_arity = 0;
      else break;
      name.pop_back();
    }
    f.name = std::move(name);
    return f;
  }
  static void arity(const std::vector<formal_parameter>& f, int& lo, int& hi) {
    if (f.empty()) {
      lo = 0;
      hi = op_schema::unbounded;
      return;
    }
    lo = 0;
    hi = 0;
    int required = 0;
    for (std::size_t i = 0; i < f.size(); ++i) {
      if (f[i].option == formal_option::variadic) {
        hi = op_schema::unbounded;
        if (f[i].min_arity > 0) required = static_cast<int>(i) + f[i].min_arity;
      } else {
        ++hi;
        if (f[i].option == formal_option::single) required = static_cast<int>(i) + 1;
      }
    }
    lo = required;
  }
  op_schema s_;
};

/// Dtype groups used in ONNX type constraints.
namespace onnx_types {
inline std::vector<dtype> floats() { return {dtype::f16, dtype::bf16, dtype::f32, dtype::f64}; }
inline std::vector<dtype> signed_ints() { return {dtype::int8, dtype::int16, dtype::int32, dtype::int64}; }
inline std::vector<dtype> unsigned_ints() { return {dtype::uint8, dtype::uint16, dtype::uint32, dtype::uint64}; }
inline std::vector<dtype> ints() {
  auto a = signed_ints();
  auto b = unsigned_ints();
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
inline std::vector<dtype> numeric() {
  auto a = ints();
  auto b = floats();
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
inline std::vector<dtype> all() {
  auto a = numeric();
  for (dtype d : {dtype::bool_, dtype::string, dtype::complex64, dtype::complex128}) a.push_back(d);
  return a;
}
inline std::vector<dtype> index() { return {dtype::int32, dtype::int64}; }
inline std::vector<dtype> boolean() { return {dtype::bool_}; }
}  // namespace onnx_types

/// Helpers shared by the ONNX shape and value functions.
namespace onnx_shape {

/// The longest shape vector whose declared length inference takes as a rank when its
/// contents are unknown (a length past any real rank says nothing, and would have inference
/// allocate that many dims: the rank is left unknown instead).
inline constexpr std::int64_t max_inferred_rank = 4096;

/// The declared length of the vector input `i` that holds a shape of unknown contents, when it
/// is known and at most `max_inferred_rank`.
inline std::optional<std::size_t> shape_input_length(const infer_context& c, std::size_t i) {
  shape s = c.input_shape(i);
  if (s.has_rank() && s.rank() == 1 && s[0].is_known() && s[0].value() <= max_inferred_rank)
    return static_cast<std::size_t>(s[0].value());
  return std::nullopt;
}

/// Normalizes `axis` into [0, rank); fails naming `what` when out of range.
inline std::size_t axis(infer_context& c, std::int64_t a, std::size_t rank, std::string_view what = "axis") {
  auto r = static_cast<std::int64_t>(rank);
  if (a < -r || a >= r)
    c.fail(std::string(what) + " " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
  return static_cast<std::size_t>(a < 0 ? a + r : a);
}

/// Normalizes a list of axes; fails on duplicates or out-of-range axes.
inline std::vector<std::size_t> axes(infer_context& c, const std::vector<std::int64_t>& a, std::size_t rank,
                                     std::string_view what = "axes") {
  std::vector<std::size_t> r;
  r.reserve(a.size());
  for (auto x : a) {
    std::size_t n = axis(c, x, rank, what);
    if (std::find(r.begin(), r.end(), n) != r.end()) c.fail(std::string(what) + " has duplicate axis " + std::to_string(x));
    r.push_back(n);
  }
  return r;
}

/// Output 0 is input 0's type (element-wise unary ops).
inline void same_as_input0(infer_context& c) {
  c.set_output(0, c.input_type(0));
}
/// Backward: input 0 has output 0's type.
inline void same_as_output0_backward(infer_context& c) {
  const type& t = c.current_output(0).type;
  if (!t.is_unknown()) c.refine_input(0, t);
}
/// Output 0 has input 0's shape (dtype from the formals).
inline void shape_as_input0(infer_context& c) { c.set_shape(0, c.input_shape(0)); }

/// Multidirectional broadcast of the shapes of the present inputs `first..` into output 0's
/// shape; fails with `incompatible dims a and b in input i`.
inline shape broadcast_inputs(infer_context& c, std::size_t first = 0, std::size_t last = static_cast<std::size_t>(-1)) {
  std::vector<shape> shapes;
  std::vector<std::size_t> index;
  for (std::size_t i = first; i < c.num_inputs() && i < last; ++i) {
    if (!c.has_input(i)) continue;
    shapes.push_back(c.input_shape(i));
    index.push_back(i);
  }
  try {
    return broadcast_shapes(shapes, c.symbols());
  } catch (const error& e) {
    // re-run pairwise to name the actual input
    std::vector<shape> acc;
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      acc.push_back(shapes[k]);
      try {
        broadcast_shapes(acc, c.symbols());
      } catch (const error& e2) {
        std::string m = e2.message();
        auto pos = m.rfind(" in input ");
        if (pos != std::string::npos) m = m.substr(0, pos);
        c.fail(m + " in input " + std::to_string(index[k]));
      }
    }
    c.fail(e.message());
  }
}

/// Output 0's shape is the numpy broadcast of all inputs (binary and variadic element-wise ops).
inline void numpy_broadcast(infer_context& c) { c.set_shape(0, broadcast_inputs(c)); }

/// Legacy (opset < 7) binary broadcasting: B broadcasts to A when `broadcast` is 1, else the
/// shapes must be equal.
inline void legacy_binary(infer_context& c) {
  shape a = c.input_shape(0), b = c.input_shape(1);
  if (c.attr_int("broadcast", 0) == 0) {
    try {
      c.set_shape(0, c.symbols().unify(a, b));
    } catch (const error& e) {
      c.fail(e.message() + " in input 1");
    }
    return;
  }
  c.set_shape(0, a);
}

/// The sizes of a value whose contents are known (`value` sizes, or the type's shape for
/// element-wise dims, or a vector of its elements).
inline std::optional<std::vector<std::int64_t>> value_sizes(const infer_context& c, std::size_t i) {
  const known_value& v = c.input_value(i);
  if (v.is_known()) return v.value.sizes();
  if (!v.elements) return std::nullopt;
  shape s = c.input_shape(i);
  if (s.is_fully_known() && num_elements(s.sizes()) == static_cast<std::int64_t>(v.elements->size())) return s.sizes();
  if (s.has_rank() && s.rank() == 0 && v.elements->size() == 1) return std::vector<std::int64_t>{};
  return std::vector<std::int64_t>{static_cast<std::int64_t>(v.elements->size())};
}

/// Index of element `flat` of an output of `out` sizes in an input of `in` sizes broadcast to it.
inline std::size_t broadcast_index(std::size_t flat, const std::vector<std::int64_t>& out,
                                   const std::vector<std::int64_t>& in) {
  std::size_t idx = 0, stride = 1;
  std::size_t r = out.size(), ri = in.size();
  for (std::size_t k = 0; k < r; ++k) {
    std::size_t d = r - 1 - k;
    auto od = static_cast<std::size_t>(out[d]);
    std::size_t coord = flat % od;
    flat /= od;
    if (k < ri) {
      auto id = static_cast<std::size_t>(in[ri - 1 - k]);
      idx += (id == 1 ? 0 : coord) * stride;
      stride *= id;
    }
  }
  return idx;
}

/// Whether `x`, truncated toward zero, is a value of the integer type `T` (casting a double
/// outside it, or NaN, is undefined behaviour).
template <class T>
inline bool fits_integer(double x) {
  const double t = std::trunc(x);
  const double hi = std::ldexp(1.0, std::numeric_limits<T>::digits);  // exclusive: 2^63 for int64
  return t >= (std::is_signed_v<T> ? -hi : 0.0) && t < hi;
}
/// `x` truncated to int64, or nullopt when it is NaN or outside int64.
inline std::optional<std::int64_t> double_to_int64(double x) {
  if (!fits_integer<std::int64_t>(x)) return std::nullopt;
  return static_cast<std::int64_t>(x);
}

/// Evaluates an element-wise op on the known contents of the present inputs, with numpy
/// broadcasting. `f_dims` computes on dims (integer tensors, partly known), `f_num` on
/// doubles (fully known numeric tensors). The result is written into output 0 (as dims or as
/// a tensor of output 0's dtype). Skips silently when contents or dtypes are not known, or
/// the result would exceed `max_value_elements`.
inline void eval_elementwise(infer_context& c, const std::function<dim(const std::vector<dim>&)>& f_dims,
                             const std::function<double(const std::vector<double>&)>& f_num) {
  const std::size_t n = c.num_inputs();
  if (n == 0) return;
  std::vector<std::vector<std::int64_t>> sizes(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!c.has_input(i)) return;
    auto s = value_sizes(c, i);
    if (!s) return;
    sizes[i] = *s;
  }
  // output sizes: numpy broadcast of known sizes
  std::size_t rank = 0;
  for (const auto& s : sizes) rank = std::max(rank, s.size());
  std::vector<std::int64_t> out(rank, 1);
  for (const auto& s : sizes)
    for (std::size_t k = 0; k < s.size(); ++k) {
      auto& o = out[rank - s.size() + k];
      if (s[k] == o || s[k] == 1) continue;
      if (o == 1) o = s[k];
      else return;  // the shape function reports the mismatch
    }
  std::int64_t total = num_elements(out);
  if (total > c.max_value_elements()) return;
  dtype od = c.output(0).type.is_tensor() ? c.output(0).type.tensor().element : dtype::undefined;
  // dims path: every input integer-like with element dims
  bool dims_ok = f_dims != nullptr;
  std::vector<std::vector<dim>> dv(n);
  for (std::size_t i = 0; i < n && dims_ok; ++i) {
    auto d = c.input_dims(i);
    if (!d) dims_ok = false;
    else dv[i] = std::move(*d);
  }
  if (dims_ok && (is_integer(od) || od == dtype::bool_ || od == dtype::undefined)) {
    std::vector<dim> r;
    r.reserve(static_cast<std::size_t>(total));
    std::vector<dim> args(n);
    for (std::int64_t e = 0; e < total; ++e) {
      for (std::size_t i = 0; i < n; ++i) args[i] = dv[i][broadcast_index(static_cast<std::size_t>(e), out, sizes[i])];
      r.push_back(f_dims(args));
    }
    if (od != dtype::undefined) {
      bool all = std::all_of(r.begin(), r.end(), [](const dim& d) { return d.is_known(); });
      if (all)
        if (auto t = known_value::to_tensor(r, od, out)) {
          c.set_value(0, known_value::of(std::move(*t)));
          return;
        }
    }
    c.set_value(0, known_value::of_dims(std::move(r)));
    return;
  }
  if (!f_num || od == dtype::undefined || od == dtype::string || od == dtype::complex64 || od == dtype::complex128) return;
  std::vector<std::vector<double>> nv(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto d = c.input_doubles(i);
    if (!d) return;
    nv[i] = std::move(*d);
  }
  tensor t(od, out);
  std::vector<double> args(n);
  bool out_of_range = false;
  visit_dtype(od, [&]<class T>() {
    if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
      T* p = t.data<T>();
      for (std::int64_t e = 0; e < total; ++e) {
        for (std::size_t i = 0; i < n; ++i) args[i] = nv[i][broadcast_index(static_cast<std::size_t>(e), out, sizes[i])];
        double x = f_num(args);
        if constexpr (std::is_same_v<T, bool>) p[e] = x != 0;
        else if constexpr (std::is_integral_v<T>) {
          // a result outside T (Pow, a Cast of 1e30 or inf) is left to run time: casting it is UB
          if (!std::isnan(x) && !fits_integer<T>(x)) {
            out_of_range = true;
            return;
          }
          p[e] = static_cast<T>(std::isnan(x) ? 0 : x);
        } else p[e] = static_cast<T>(x);
      }
    }
  });
  if (out_of_range) return;
  c.set_value(0, known_value::of(std::move(t)));
}

/// A dim from an exact integer (negative values kept, see `dim::integer`).
inline dim int_dim(std::int64_t v) { return dim::integer(v); }

/// Sum, difference and product of dims holding integer values (negative constants allowed).
/// A sum or difference that overflows `int64_t` is unknown (Slice ends of `INT64_MAX` are
/// legitimate); a product of known dims that overflows is an error (it is the size of a
/// tensor no machine holds), raised as a `gpass::error` the inference engine attributes to
/// the node.
inline dim add_dims(const dim& a, const dim& b) {
  if (a.is_known() && b.is_known()) {
    auto r = checked_add(a.value(), b.value());
    return r ? int_dim(*r) : dim();
  }
  return a + b;
}
inline dim sub_dims(const dim& a, const dim& b) {
  if (a.is_known() && b.is_known()) {
    auto r = checked_sub(a.value(), b.value());
    return r ? int_dim(*r) : dim();
  }
  return a - b;
}
inline dim mul_dims(const dim& a, const dim& b) {
  if (a.is_known() && b.is_known()) return int_dim(mul_or_throw(a.value(), b.value(), "dimension product"));
  if (a.is_known() && a.value() < 0) return dim();  // keep symbols non-negative
  if (b.is_known() && b.value() < 0) return dim();
  return a * b;
}
/// Integer division (truncating for known values; exact affine division for symbols).
inline dim div_dims(const dim& a, const dim& b) {
  if (a.is_known() && b.is_known()) {
    if (b.value() == 0) return dim();
    if (b.value() == -1 && a.value() == std::numeric_limits<std::int64_t>::min()) return dim();  // overflows
    return int_dim(a.value() / b.value());
  }
  if (b.is_known() && b.value() > 0) return a / b.value();
  if (a == b && a.is_symbolic()) return dim(1);
  return dim();
}

/// The product of dims (unknown when more than one is symbolic and none is 0).
inline dim product(const std::vector<dim>& ds) {
  dim r(1);
  for (const auto& d : ds) r = mul_dims(r, d);
  return r;
}

/// The number of non-zero elements of input 0: counted when its contents are known, else the
/// node's fresh symbol for `purpose` (NonZero, TensorFlow's Where).
inline dim nonzero_count(infer_context& c, std::string_view purpose) {
  dim count = c.fresh_dim(purpose);
  if (auto v = c.input_doubles(0)) {
    std::int64_t n = 0;
    for (double x : *v) n += x != 0;
    count = dim(n);
  }
  return count;
}

/// Split's outputs: output k has shape `s` with axis `a` replaced by `parts[k]` (ONNX Split,
/// TensorFlow Split and SplitV).
inline void set_split_shapes(infer_context& c, const shape& s, std::size_t a, const std::vector<dim>& parts) {
  for (std::size_t k = 0; k < parts.size(); ++k) {
    shape o = s;
    o[a] = parts[k];
    c.set_shape(k, o);
  }
}

}  // namespace onnx_shape
}  // namespace gpass

// registry.hpp includes the ONNX registration, which includes this header: define what needs
// the complete registry after it.
#include <gpass/ops/registry.hpp>

inline void gpass::onnx_op::add(op_registry& r) const { r.add(build()); }
