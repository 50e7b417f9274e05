// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file sequence.hpp
/// ONNX sequence and optional ops, with sequences as `list_type` (element type and length):
/// SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceErase, SequenceAt,
/// SequenceLength, SplitToSequence, ConcatFromSequence; Optional, OptionalHasElement,
/// OptionalGetElement (an optional value has the type of its element).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <gpass/ops/onnx/common.hpp>

namespace gpass {

/// Registers the ONNX sequence and optional ops into `r` (see the file comment).
void register_onnx_sequence_ops(op_registry& r);

namespace detail::onnx_ops {

using namespace gpass::onnx_shape;

inline list_type input_list(infer_context& c, std::size_t i) {
  const type& t = c.input_type(i);
  if (t.is_list()) return t.list();
  return list_type{};
}

inline tensor_type as_tensor(const type& t) { return t.is_tensor() ? t.tensor() : tensor_type{}; }

inline void seq_construct(infer_context& c) {
  list_type l;
  std::optional<type> e;
  for (std::size_t i = 0; i < c.num_inputs(); ++i) e = e ? c.join(*e, c.input_type(i), "elem") : c.input_type(i);
  if (e) l.element = as_tensor(*e);
  l.length = dim(static_cast<std::int64_t>(c.num_inputs()));
  c.set_output(0, l);
}

inline void seq_insert(infer_context& c) {
  list_type l = input_list(c, 0);
  const type& t = c.input_type(1);
  if (l.element.element != dtype::undefined && t.is_tensor() && t.tensor().element != dtype::undefined &&
      l.element.element != t.tensor().element)
    c.fail("inserting a " + t.to_string() + " into a sequence of " + l.element.to_string());
  if (l.length.is_known() && l.length.value() == 0 && l.element.element == dtype::undefined) l.element = as_tensor(t);
  else if (l.length.is_known() && l.length.value() == 0) l.element = tensor_type{l.element.element, as_tensor(t).shape};
  else l.element = as_tensor(c.join(type(l.element), t, "elem"));
  l.length = l.length + dim(1);
  l.same_length_as.clear();
  c.set_output(0, l);
}

inline void seq_erase(infer_context& c) {
  list_type l = input_list(c, 0);
  if (l.length.is_known() && l.length.value() == 0) c.fail("erasing from an empty sequence");
  l.length = l.length.is_unknown() ? dim() : sub_dims(l.length, dim(1));
  if (l.length.is_known() && l.length.value() < 0) l.length = dim();
  l.same_length_as.clear();
  c.set_output(0, l);
}

inline void seq_at(infer_context& c) {
  const type& t = c.input_type(0);
  if (t.is_list()) c.set_output(0, t.list().element);
}

inline void seq_length(infer_context& c) {
  c.set_tensor(0, dtype::int64, shape::scalar());
  const type& t = c.input_type(0);
  if (t.is_list() && !t.list().length.is_unknown()) c.set_dims_value(0, {t.list().length});
}

inline void split_to_sequence(infer_context& c) {
  tensor_type t = c.input_tensor(0);
  list_type l;
  l.element.element = t.element;
  if (!t.shape.has_rank()) {
    c.set_output(0, l);
    return;
  }
  std::size_t a = axis(c, c.attr_int("axis", 0), t.shape.rank());
  const dim& d = t.shape[a];
  shape e = t.shape;
  if (!c.has_input(1)) {
    if (c.attr_int("keepdims", 1) != 0) e[a] = dim(1);
    else e.dims().erase(e.dims().begin() + static_cast<std::ptrdiff_t>(a));
    l.length = d;
  } else if (auto sp = c.input_ints(1)) {
    if (c.input_rank(1) == std::optional<std::size_t>(0) || (sp->size() == 1 && c.input_rank(1) != std::optional<std::size_t>(1))) {
      std::int64_t chunk = (*sp)[0];
      if (chunk <= 0) c.fail("split must be positive");
      if (d.is_known()) {
        l.length = dim(d.value() / chunk + (d.value() % chunk != 0 ? 1 : 0));  // (d + chunk - 1 overflowed)
        e[a] = d.value() % chunk == 0 ? dim(chunk) : dim();
      } else {
        e[a] = dim();
      }
    } else {
      l.length = dim(static_cast<std::int64_t>(sp->size()));
      dim common = sp->empty() ? dim() : dim((*sp)[0]);
      for (auto x : *sp)
        if (dim(x) != common) common = dim();
      e[a] = common;
    }
  } else {
    e[a] = dim();
  }
  l.element.shape = e;
  c.set_output(0, l);
}

inline void concat_from_sequence(infer_context& c) {
  list_type l = input_list(c, 0);
  tensor_type e = l.element;
  if (!e.shape.has_rank()) {
    c.set_tensor(0, e.element, shape());
    return;
  }
  const bool new_axis = c.attr_int("new_axis", 0) != 0;
  auto r = static_cast<std::int64_t>(e.shape.rank()) + (new_axis ? 1 : 0);
  std::int64_t a = c.attr_int("axis", 0);
  if (a < -r || a >= r) c.fail("axis " + std::to_string(a) + " out of range");
  if (a < 0) a += r;
  shape s = e.shape;
  if (new_axis) s.dims().insert(s.dims().begin() + a, l.length);
  else s[static_cast<std::size_t>(a)] = mul_dims(s[static_cast<std::size_t>(a)], l.length);
  c.set_tensor(0, e.element, s);
}

}  // namespace detail::onnx_ops
}  // namespace gpass

inline void gpass::register_onnx_sequence_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  namespace ot = onnx_types;
  onnx_op("SequenceEmpty", 11).out("output:S").opt("dtype", "int")
      .infer([](infer_context& c) {
        list_type l;
        l.element.element = c.attr_dtype("dtype").value_or(dtype::f32);
        l.length = dim(0);
        c.set_output(0, l);
      })
      .add(r);
  onnx_op("SequenceConstruct", 11).in("inputs*:T").out("output_sequence:S").infer(seq_construct).add(r);
  onnx_op("SequenceInsert", 11).in("input_sequence:S").in("tensor:T").in("position?:I").out("output_sequence:S")
      .tc("I", ot::index()).infer(seq_insert).add(r);
  onnx_op("SequenceErase", 11).in("input_sequence:S").in("position?:I").out("output_sequence:S")
      .tc("I", ot::index()).infer(seq_erase).add(r);
  onnx_op("SequenceAt", 11).in("input_sequence:S").in("position:I").out("tensor:T").tc("I", ot::index())
      .infer(seq_at).add(r);
  onnx_op("SequenceLength", 11).in("input_sequence:S").out("length:i64").infer(seq_length).add(r);
  onnx_op("SplitToSequence", 11).in("input:T").in("split?:I").out("output_sequence:S").tc("I", ot::index())
      .attr("axis", "int", std::int64_t{0}).attr("keepdims", "int", std::int64_t{1}).infer(split_to_sequence).add(r);
  onnx_op("ConcatFromSequence", 11).in("input_sequence:S").out("concat_result:T").req("axis", "int")
      .attr("new_axis", "int", std::int64_t{0}).infer(concat_from_sequence).add(r);
  onnx_op("Optional", 15).in("input?:V").out("output:O").opt("type", "type")
      .infer([](infer_context& c) {
        if (c.has_input(0)) c.set_output(0, c.input_type(0));
        else if (const attribute* a = c.attr("type"); a && a->is<type>()) c.set_output(0, a->as<type>());
      })
      .add(r);
  // OptionalHasElement-18 also takes a tensor or a sequence (true) or no input (false)
  onnx_op("OptionalHasElement", 15).until(17).in("input?:O").out("output:bool")
      .infer([](infer_context& c) { c.set_tensor(0, dtype::bool_, shape::scalar()); })
      .add(r);
  onnx_op("OptionalHasElement", 18).in("input?:O").out("output:bool")
      .infer([](infer_context& c) { c.set_tensor(0, dtype::bool_, shape::scalar()); })
      .add(r);
  onnx_op("OptionalGetElement", 15).in("input:O").out("output:V")
      .infer([](infer_context& c) { c.set_output(0, c.input_type(0)); })
      .add(r);
}
