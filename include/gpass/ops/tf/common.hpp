// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file common.hpp
/// Shared machinery of the TensorFlow op schemas (domain `tf`): the schema builder `tf_op`,
/// TensorFlow's type attributes (`T`, `dtype`, `out_type`, ...) as output dtypes, and
/// `tf_shape::on_view`, which runs an ONNX shape or value function on a TensorFlow node whose
/// operands are laid out differently (an axis given as an input instead of an attribute).

// The TF family headers are included by tf/register.hpp, which registry.hpp includes. While
// this header is incomplete (it includes onnx/common.hpp, which includes registry.hpp), that
// inclusion is deferred to the end of this header (tf/detail/families.hpp).
#define GPASS_DETAIL_TF_COMMON_INCOMPLETE 1

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/ops/infer_context.hpp>
#include <gpass/ops/onnx/common.hpp>
#include <gpass/ops/port_info.hpp>
#include <gpass/ops/schema.hpp>
#include <gpass/ops/tf/detail/onnx_functions.hpp>

namespace gpass {

class op_registry;

/// Helpers shared by the TensorFlow shape and value functions.
namespace tf_shape {

/// Sets the dtypes TensorFlow's type attributes give: an input whose formal type names a
/// type attribute (`x:T`) must have that dtype (fails with `input 1 ('y') is i32, attribute
/// T is f32`), and an output whose formal type names one (`y:DstT`, `output:out_type`) gets
/// it when the shape function left the dtype undefined. Attributes absent from the node use
/// the schema's defaults (`Shape`'s `out_type` is i32). Runs around every `tf_op` shape
/// function; needs `c.schema()`.
inline void check_type_attrs(infer_context& c) {
  const op_schema* s = c.schema();
  if (!s) return;
  for (std::size_t i = 0; i < c.num_inputs(); ++i) {
    const formal_parameter* f = s->formal_input(i);
    if (!f || !f->homogeneous || !c.has_input(i)) continue;
    const attribute* a = c.attr(f->type);
    if (!a || !a->is<dtype>()) continue;
    dtype d = c.input_dtype(i);
    if (d != dtype::undefined && d != a->as<dtype>())
      c.fail("input " + std::to_string(i) + " ('" + f->name + "') is " + std::string(to_string(d)) + ", attribute " +
             f->type + " is " + std::string(to_string(a->as<dtype>())));
  }
}

/// The output half of `check_type_attrs`: output dtypes from type attributes.
inline void fill_type_attrs(infer_context& c) {
  const op_schema* s = c.schema();
  if (!s) return;
  for (std::size_t k = 0; k < c.num_outputs(); ++k) {
    const formal_parameter* f = s->formal_output(k);
    if (!f || !f->homogeneous) continue;
    const attribute* a = c.attr(f->type);
    if (!a || !a->is<dtype>()) continue;
    const type& t = c.output(k).type;
    if (t.is_unknown() || (t.is_tensor() && t.tensor().element == dtype::undefined)) c.set_dtype(k, a->as<dtype>());
  }
}

/// Output 0's shape is the numpy broadcast of the inputs' (`onnx_shape::broadcast_inputs`);
/// a dim where inputs have different symbols (`n` and `m`: either, or the other is 1) becomes
/// a fresh symbol of the node (`<node>_b<i>`) instead of unknown, so that the value has a
/// named size. Dims unknown in an input stay unknown.
/// \code
///   // x: f32[n,3], y: f32[m,3]  ->  AddV2(x, y): f32[add_b0,3]
/// \endcode
inline void numpy_broadcast_named(infer_context& c) {
  shape out = onnx_shape::broadcast_inputs(c);
  if (!out.has_rank()) return c.set_shape(0, out);
  for (std::size_t i = 0; i < out.rank(); ++i) {
    if (!out[i].is_unknown()) continue;
    bool all_named = true;
    for (std::size_t j = 0; j < c.num_inputs() && all_named; ++j) {
      shape s = c.input_shape(j);
      const std::size_t off = out.rank() - s.rank();
      if (i >= off && s[i - off].is_unknown()) all_named = false;
    }
    if (all_named) out[i] = c.fresh_dim("b" + std::to_string(i));
  }
  c.set_shape(0, std::move(out));
}

/// A port holding the constant `t` (type and known value).
inline port_info constant_port(tensor t) {
  type ty = tensor_type{t.element_type(), t.shape()};
  return port_info{std::move(ty), known_value::of(std::move(t))};
}

/// Runs `f` (an ONNX shape or value function) on a view of `c` whose inputs are `inputs` (some
/// of `c`'s, `c.input(i)`, or constants, `constant_port`) and whose attributes are `attrs`
/// (no schema defaults), starting from `c`'s outputs as computed so far; the view's outputs
/// become `c`'s. Errors and fresh symbols are the node's own (same name, scope and symbols).
/// \code
///   // ConcatV2: the values are inputs 0..N-1, the axis is input N
///   attribute_map a{{"axis", *c.input_int(n)}};
///   std::vector<port_info> ins;
///   for (std::size_t i = 0; i < n; ++i) ins.push_back(c.input(i));
///   gpass::tf_shape::on_view(c, std::move(ins), a, gpass::detail::onnx_ops::concat_infer);
/// \endcode
template <class F>
void on_view(infer_context& c, std::vector<port_info> inputs, const attribute_map& attrs, F&& f) {
  std::vector<bool> present(inputs.size(), true);
  std::vector<port_info> current;
  current.reserve(c.num_outputs());
  for (std::size_t k = 0; k < c.num_outputs(); ++k) current.push_back(c.current_output(k));
  infer_context v(c.node_name(), c.op(), c.domain(), 0, attrs, std::move(inputs), std::move(present), std::move(current),
                  c.symbols(), c.scope(), nullptr);
  v.set_max_value_elements(c.max_value_elements());
  v.set_max_loop_iterations(c.max_loop_iterations());
  v.outputs() = c.outputs();
  f(v);
  c.outputs() = std::move(v.outputs());
  for (const auto& n : v.notes()) c.note(n);
}

/// Inputs `first` to `last - 1` of `c` as ports (for `on_view`).
inline std::vector<port_info> input_ports(const infer_context& c, std::size_t first, std::size_t last) {
  std::vector<port_info> r;
  for (std::size_t i = first; i < last && i < c.num_inputs(); ++i) r.push_back(c.input(i));
  return r;
}

/// Output 0's dtype, when the shape function left it undefined, is that of the first input
/// with a known dtype among `first..last` (variadic lists the formals cannot bind).
inline void dtype_from_inputs(infer_context& c, std::size_t first, std::size_t last) {
  const type& t = c.output(0).type;
  if (t.is_tensor() && t.tensor().element != dtype::undefined) return;
  for (std::size_t i = first; i < last && i < c.num_inputs(); ++i)
    if (c.input_dtype(i) != dtype::undefined) {
      c.set_dtype(0, c.input_dtype(i));
      return;
    }
}

/// The length of a 1-D operand: its known contents' size, else its shape's only dim if known.
inline std::optional<std::size_t> vector_length(const infer_context& c, std::size_t i) {
  if (auto d = c.input_dims(i)) return d->size();
  shape s = c.input_shape(i);
  if (s.has_rank() && s.rank() == 1 && s[0].is_known()) return static_cast<std::size_t>(s[0].value());
  return std::nullopt;
}

/// TensorFlow's largest rank (TensorShape's kMaxDims).
inline constexpr std::size_t max_rank = 254;

/// Fails when the vector input `i`, `n` elements long, holds a shape of more dims than
/// TensorFlow allows (a hostile length, or a negative one read as size_t, would otherwise
/// have inference allocate that many dims).
inline void check_shape_length(const infer_context& c, std::size_t i, std::size_t n) {
  if (n > max_rank)
    c.fail("input " + std::to_string(i) + " holds a shape of " + std::to_string(n) + " dims; TensorFlow allows at most " +
           std::to_string(max_rank));
}

/// `n` unknown dims, `n` being the length of the vector input `i` that holds a shape.
inline shape unknown_dims_of_length(const infer_context& c, std::size_t i, std::size_t n) {
  check_shape_length(c, i, n);
  return shape::unknown_dims(n);
}

/// Output `out`'s shape is the value of the vector input `i` (ScatterNd's shape, a random
/// op's shape, ...): its dims when known, else as many unknown dims as the vector is long.
inline void set_shape_from_input(infer_context& c, std::size_t out, std::size_t i) {
  if (auto d = c.input_dims(i)) {
    check_shape_length(c, i, d->size());
    c.set_shape(out, shape(*d));
  } else if (auto n = vector_length(c, i)) {
    c.set_shape(out, unknown_dims_of_length(c, i, *n));
  }
}

/// A shape attribute's dims with every unknown dim replaced by a fresh symbol of the node
/// (`<node>_d<i>`), so that values fed at run time have named sizes.
inline shape with_fresh_symbols(infer_context& c, shape s) {
  if (!s.has_rank()) return s;
  for (std::size_t i = 0; i < s.rank(); ++i)
    if (s[i].is_unknown()) s[i] = c.fresh_dim("d" + std::to_string(i));
  return s;
}

}  // namespace tf_shape

// The shape and value functions of the TF family headers (tf/*.hpp) live here and use the
// ONNX and TensorFlow helpers unqualified.
namespace detail::tf_ops {
using namespace gpass::onnx_shape;
using namespace gpass::tf_shape;
}  // namespace detail::tf_ops

/// A builder for TensorFlow op schemas (domain `tf`), on top of
/// `onnx_op`'s formal specs (`name:Type`, `?` optional, `*` variadic, `~` heterogeneous).
/// A formal's type is a TensorFlow type attribute (`T`, `Tidx`, `out_type`, `DstT`) or a
/// dtype (`bool`, `i32`): inputs sharing an attribute must agree, and the attribute, when the
/// node has it (or the schema declares a default with `type_attr`), is the dtype of the
/// outputs that name it (`tf_shape::check_type_attrs`).
/// \code
///   gpass::tf_op("Shape").in("input:T").out("output:out_type").type_attr("T")
///       .type_attr("out_type", gpass::dtype::int32).infer(f).add(r);
/// \endcode
class tf_op {
 public:
  explicit tf_op(std::string name) : o_(std::move(name)) {}
  tf_op& in(std::string_view spec) {
    o_.in(spec);
    return *this;
  }
  tf_op& out(std::string_view spec) {
    o_.out(spec);
    return *this;
  }
  /// A type attribute (kind `dtype`), optional, with a default when TensorFlow has one.
  tf_op& type_attr(std::string name, std::optional<dtype> def = std::nullopt) {
    if (def) o_.attr(std::move(name), "dtype", *def);
    else o_.opt(std::move(name), "dtype");
    return *this;
  }
  /// An optional attribute with a default value.
  tf_op& attr(std::string name, std::string kind, attribute def) {
    o_.attr(std::move(name), std::move(kind), std::move(def));
    return *this;
  }
  /// An optional attribute without a default.
  tf_op& opt(std::string name, std::string kind) {
    o_.opt(std::move(name), std::move(kind));
    return *this;
  }
  /// A required attribute.
  tf_op& req(std::string name, std::string kind) {
    o_.req(std::move(name), std::move(kind));
    return *this;
  }
  tf_op& infer(infer_function f) {
    infer_ = std::move(f);
    return *this;
  }
  tf_op& propagate(infer_function f) {
    o_.propagate(std::move(f));
    return *this;
  }
  tf_op& backward(infer_function f) {
    o_.backward(std::move(f));
    return *this;
  }
  tf_op& traits(op_traits t) {
    o_.traits(t);
    return *this;
  }
  tf_op& doc(std::string d) {
    o_.doc(std::move(d));
    return *this;
  }
  /// Overrides the output arity the formals imply (`NoOp`: none).
  tf_op& num_outputs(int lo, int hi) {
    outputs_ = {lo, hi};
    return *this;
  }
  /// Overrides the input arity the formals imply.
  tf_op& num_inputs(int lo, int hi) {
    inputs_ = {lo, hi};
    return *this;
  }
  /// The schema: domain `tf`, the shape function wrapped by the type-attribute checks.
  op_schema build() const {
    op_schema s = o_.build();
    s.domain = "tf";
    s.frontend.clear();  // the domain tells TF ops apart: no graph `frontend` attribute hides them
    if (outputs_) std::tie(s.min_outputs, s.max_outputs) = *outputs_;
    if (inputs_) std::tie(s.min_inputs, s.max_inputs) = *inputs_;
    s.infer = [f = infer_](infer_context& c) {
      tf_shape::check_type_attrs(c);
      if (f) f(c);
      tf_shape::fill_type_attrs(c);
    };
    return s;
  }
  /// Builds and registers the schema.
  void add(op_registry& r) const;

 private:
  onnx_op o_;
  infer_function infer_;
  std::optional<std::pair<int, int>> outputs_, inputs_;
};

}  // namespace gpass

inline void gpass::tf_op::add(op_registry& r) const { r.add(build()); }

#undef GPASS_DETAIL_TF_COMMON_INCOMPLETE
#include <gpass/ops/tf/detail/families.hpp>
