// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file list_ops.hpp
/// The gpass list ops (domain ""): values of `list_type`, the lowering of TensorFlow's
/// TensorArrays (seeds 000 and 002), registered by `register_list_ops`.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/type.hpp>
#include <gpass/ops/infer_context.hpp>
#include <gpass/ops/schema.hpp>

namespace gpass {

class op_registry;

/// Registers the list ops into `r`. A list is a run-time sequence of tensors
/// (`exec::value` sequence); its type is `list<element, length>` (`gpass::list_type`), where
/// every element has the element type (TensorFlow's `infer_shape`). Each op makes a new
/// list value; none changes its input.
///
/// (`list_stack`, `list_from_tensor`, `list_push_back` and `list_pop_back` are the lowering
/// of TensorFlow 2's TensorList ops.)
///
/// | op | inputs | outputs | attributes |
/// |----|--------|---------|------------|
/// | `list_reserve` | size (int scalar) | handle (`resource[]`, carries nothing), list | `dtype`, `element_shape` (default unknown rank), `dynamic_size` (default false) |
/// | `list_write` | list, index, value | list | |
/// | `list_read` | list, index | element | `dtype`, `element_shape` (optional) |
/// | `list_gather` | list, indices (1-D) | the elements stacked on a new axis 0 | `dtype`, `element_shape` (optional) |
/// | `list_scatter` | list, indices (1-D), value | list: element `indices[k]` is `value[k]` | |
/// | `list_size` | list | `i32[]` | |
/// | `list_concat` | list | the elements concatenated on axis 0, their lengths (`i64[n]`) | `dtype`, `element_shape_except0` (optional) |
/// | `list_split` | list, value, lengths (`i64[n]`) | list of the n slices of value on axis 0 | |
/// | `list_stack` | list | every element stacked on a new axis 0 | `dtype`, `element_shape` (optional) |
/// | `list_from_tensor` | value | list of the rows of value (its slices on axis 0) | |
/// | `list_push_back` | list, value | list with value appended | |
/// | `list_pop_back` | list | list without its last element, that element | `dtype`, `element_shape` (optional) |
///
/// Run time (the Eigen CPU kernels): `list_reserve` makes `size` unwritten elements; a write
/// past the end grows the list; reading, stacking or gathering an unwritten element gives
/// zeros when its shape is known (attribute `element_shape`, else the node's inferred output
/// type, else, as TensorFlow's TensorListStack / Gather / GetItem, the shape of a written
/// element; `list_pop_back` only the declared one), else fails. Sizes and indices count
/// against the run's limits (a list of n elements as n tensors of scratch).
///
/// Type functions: `list_reserve` gives `list<dtype element_shape, length>` with the length
/// `size`'s value (known or symbolic) or a fresh symbol (`unknown` when `dynamic_size`);
/// `list_write` / `list_scatter` / `list_split` refine the element type with what they write
/// (unified when compatible, joined otherwise), so a write inside a loop body refines the
/// list's element shape through the loop's fixed point (see `symbol_table::join`: an element
/// shape of unknown rank is not constrained yet); readers give the element type (refined
/// by their `element_shape`); `list_size` gives the length as its value.
/// \code
///   %ta:2 = list_reserve(%n) {dtype = f32, element_shape = shape[*]} -> (resource[], list<f32[*], n>)
///   %w = list_write(%ta:1, %i, %x) -> (list<f32[2,3], n>)
///   %y = list_read(%w, %i) {dtype = f32} -> (f32[2,3])
/// \endcode
void register_list_ops(op_registry& r);

namespace detail {

/// The element type of a list after writing elements of type `t` into one whose elements are
/// `e`: their unification when compatible (TensorFlow: every element has one shape), their
/// join otherwise.
inline tensor_type list_refine(infer_context& c, const tensor_type& e, const tensor_type& t) {
  try {
    return c.symbols().unify(e, t);
  } catch (const error&) {
    type j = c.join(type(e), type(t), "element");
    return j.is_tensor() ? j.tensor() : tensor_type{};
  }
}

/// Input `i` as a list type (unknown element and length when it is not a known list).
inline list_type list_input(const infer_context& c, std::size_t i) {
  const type& t = c.input_type(i);
  return t.is_list() ? t.list() : list_type{};
}

/// The element type a reader declares: attribute `dtype` and `shape_attr`.
inline tensor_type list_declared_element(const infer_context& c, const char* shape_attr) {
  tensor_type t;
  if (c.has_attr("dtype"))
    if (auto d = c.attr_dtype("dtype")) t.element = *d;
  if (const attribute* a = c.attr(shape_attr); a && a->is<shape>()) t.shape = a->as<shape>();
  return t;
}

/// `list_type` with `element` and the length of input 0's list.
inline list_type list_with_element(const infer_context& c, tensor_type element) {
  list_type l = list_input(c, 0);
  l.element = std::move(element);
  return l;
}

/// `s` without its first dim (unknown rank when `s` has none or no rank).
inline shape list_drop_first(const shape& s) {
  if (!s.has_rank() || s.rank() == 0) return shape();
  std::vector<dim> d(s.dims().begin() + 1, s.dims().end());
  return shape(std::move(d));
}

inline void list_reserve_infer(infer_context& c) {
  c.set_tensor(0, dtype::resource, shape::scalar());
  list_type l;
  l.element = list_declared_element(c, "element_shape");
  if (c.attr_int("dynamic_size", 0) != 0) {
    l.length = dim();
  } else if (auto d = c.input_dims(0); d && d->size() == 1) {
    l.length = (*d)[0];
  } else {
    l.length = c.fresh_dim("length");
  }
  c.set_output(1, std::move(l));
}

inline void list_write_infer(infer_context& c) {
  list_type l = list_input(c, 0);
  c.set_output(0, list_with_element(c, list_refine(c, l.element, c.input_tensor(2))));
}

inline void list_read_infer(infer_context& c) {
  tensor_type e = list_refine(c, list_input(c, 0).element, list_declared_element(c, "element_shape"));
  c.set_output(0, e);
}

inline void list_gather_infer(infer_context& c) {
  tensor_type e = list_refine(c, list_input(c, 0).element, list_declared_element(c, "element_shape"));
  tensor_type out{e.element, shape()};
  const shape is = c.input_shape(1);
  if (e.shape.has_rank() && is.has_rank() && is.rank() == 1) {
    std::vector<dim> d{is[0]};
    d.insert(d.end(), e.shape.dims().begin(), e.shape.dims().end());
    out.shape = shape(std::move(d));
  }
  c.set_output(0, out);
}

inline void list_scatter_infer(infer_context& c) {
  list_type l = list_input(c, 0);
  tensor_type v = c.input_tensor(2);
  c.set_output(0, list_with_element(c, list_refine(c, l.element, tensor_type{v.element, list_drop_first(v.shape)})));
}

inline void list_size_infer(infer_context& c) {
  c.set_tensor(0, dtype::int32, shape::scalar());
  const dim n = c.resolve(list_input(c, 0).length);
  if (!n.is_unknown()) c.set_dims_value(0, {n});
}

inline void list_concat_infer(infer_context& c) {
  list_type l = list_input(c, 0);
  tensor_type rest = list_declared_element(c, "element_shape_except0");
  tensor_type e = l.element;
  if (rest.element == dtype::undefined) rest.element = e.element;
  if (e.element == dtype::undefined) e.element = rest.element;
  tensor_type out{e.element, shape()};
  shape tail = rest.shape;
  if (e.shape.has_rank() && e.shape.rank() > 0) {
    tail = c.symbols().unify(list_drop_first(e.shape), tail.has_rank() ? tail : list_drop_first(e.shape));
    const dim n = c.resolve(l.length), d0 = c.resolve(e.shape[0]);
    dim total = n.is_known() && d0.is_known() ? dim(n.value() * d0.value()) : c.fresh_dim("rows");
    std::vector<dim> d{total};
    d.insert(d.end(), tail.dims().begin(), tail.dims().end());
    out.shape = shape(std::move(d));
  } else if (tail.has_rank()) {
    std::vector<dim> d{c.fresh_dim("rows")};
    d.insert(d.end(), tail.dims().begin(), tail.dims().end());
    out.shape = shape(std::move(d));
  }
  c.set_output(0, out);
  c.set_tensor(1, dtype::int64, shape({l.length}));
}

inline void list_split_infer(infer_context& c) {
  list_type l = list_input(c, 0);
  tensor_type v = c.input_tensor(1);
  std::vector<dim> d;
  if (v.shape.has_rank() && v.shape.rank() > 0) {
    d.push_back(dim());
    d.insert(d.end(), v.shape.dims().begin() + 1, v.shape.dims().end());
  }
  tensor_type piece{v.element, v.shape.has_rank() && v.shape.rank() > 0 ? shape(std::move(d)) : shape()};
  l.element = list_refine(c, l.element, piece);
  const shape ls = c.input_shape(2);
  if (ls.has_rank() && ls.rank() == 1) l.length = ls[0];
  c.set_output(0, std::move(l));
}

inline void list_stack_infer(infer_context& c) {
  list_type l = list_input(c, 0);
  tensor_type e = list_refine(c, l.element, list_declared_element(c, "element_shape"));
  tensor_type out{e.element, shape()};
  if (e.shape.has_rank()) {
    std::vector<dim> d{l.length.is_unknown() ? c.fresh_dim("length") : l.length};
    d.insert(d.end(), e.shape.dims().begin(), e.shape.dims().end());
    out.shape = shape(std::move(d));
  }
  c.set_output(0, out);
}

inline void list_from_tensor_infer(infer_context& c) {
  tensor_type v = c.input_tensor(0);
  list_type l;
  l.element = tensor_type{v.element, list_drop_first(v.shape)};
  l.length = v.shape.has_rank() && v.shape.rank() > 0 ? v.shape[0] : c.fresh_dim("length");
  c.set_output(0, std::move(l));
}

inline void list_push_back_infer(infer_context& c) {
  list_type l = list_input(c, 0);
  l.element = list_refine(c, l.element, c.input_tensor(1));
  const dim n = c.resolve(l.length);
  l.length = n.is_known() ? dim(n.value() + 1) : dim();
  c.set_output(0, std::move(l));
}

inline void list_pop_back_infer(infer_context& c) {
  list_type l = list_input(c, 0);
  tensor_type e = list_refine(c, l.element, list_declared_element(c, "element_shape"));
  const dim n = c.resolve(l.length);
  l.length = n.is_known() && n.value() > 0 ? dim(n.value() - 1) : dim();
  l.element = e;
  c.set_output(0, std::move(l));
  c.set_output(1, e);
}

}  // namespace detail

}  // namespace gpass

#include <gpass/ops/registry.hpp>

inline void gpass::register_list_ops(op_registry& r) {
  auto add = [&](std::string name, int n_in, int n_out, std::vector<attribute_spec> attrs, std::string doc,
                 infer_function f) {
    op_schema s;
    s.name = std::move(name);
    s.min_inputs = s.max_inputs = n_in;
    s.min_outputs = s.max_outputs = n_out;
    s.attributes = std::move(attrs);
    s.doc = std::move(doc);
    s.infer = std::move(f);
    r.add(std::move(s));
  };
  auto req = [](std::string n, std::string k) { return attribute_spec{std::move(n), std::move(k), true, {}}; };
  auto opt = [](std::string n, std::string k, attribute v) {
    return attribute_spec{std::move(n), std::move(k), false, std::move(v)};
  };
  add("list_reserve", 1, 2, {req("dtype", "dtype"), opt("element_shape", "shape", shape()), opt("dynamic_size", "bool", false)},
      "A list of `size` unwritten elements (output 1); output 0 is a handle that carries nothing.",
      detail::list_reserve_infer);
  add("list_write", 3, 1, {}, "The list with element `index` set to `value`.", detail::list_write_infer);
  add("list_read", 2, 1, {req("dtype", "dtype"), opt("element_shape", "shape", shape())}, "Element `index` of the list.",
      detail::list_read_infer);
  add("list_gather", 2, 1, {req("dtype", "dtype"), opt("element_shape", "shape", shape())},
      "The elements at `indices`, stacked on a new axis 0.", detail::list_gather_infer);
  add("list_scatter", 3, 1, {}, "The list with element `indices[k]` set to `value[k]`.", detail::list_scatter_infer);
  add("list_size", 1, 1, {}, "The number of elements of the list (i32 scalar).", detail::list_size_infer);
  add("list_concat", 1, 2, {req("dtype", "dtype"), opt("element_shape_except0", "shape", shape())},
      "The elements concatenated on axis 0, and their lengths.", detail::list_concat_infer);
  add("list_split", 3, 1, {}, "A list of the slices of `value` on axis 0 with the given `lengths`.",
      detail::list_split_infer);
  add("list_stack", 1, 1, {req("dtype", "dtype"), opt("element_shape", "shape", shape())},
      "Every element of the list, stacked on a new axis 0.", detail::list_stack_infer);
  add("list_from_tensor", 1, 1, {}, "A list of the rows (slices on axis 0) of `value`.", detail::list_from_tensor_infer);
  add("list_push_back", 2, 1, {}, "The list with `value` appended.", detail::list_push_back_infer);
  add("list_pop_back", 1, 2, {req("dtype", "dtype"), opt("element_shape", "shape", shape())},
      "The list without its last element, and that element.", detail::list_pop_back_infer);
}
