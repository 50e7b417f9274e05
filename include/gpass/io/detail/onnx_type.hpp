// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file onnx_type.hpp
/// Private: conversion between ONNX `TypeProto` and `gpass::type`, and the one-line text form
/// of a `TypeProto` that the importer stores when gpass cannot represent a type exactly.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/core/dim.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/type.hpp>
#include <gpass/io/detail/onnx_dtype.hpp>
#include <gpass/io/detail/onnx_proto.hpp>

namespace gpass::detail::onnx_io {

/// `tensor(T)` with its shape: a dim_value is a known dim, a non-empty dim_param a symbol,
/// anything else an unknown dim; no shape at all is an unknown rank.
inline tensor_type tensor_type_from_onnx(const onnx::TypeProto_Tensor& t) {
  tensor_type r;
  r.element = dtype_from_onnx(t.elem_type()).value_or(dtype::undefined);
  if (t.has_shape()) {
    std::vector<dim> dims;
    dims.reserve(static_cast<std::size_t>(t.shape().dim_size()));
    for (const auto& d : t.shape().dim()) {
      if (d.has_dim_value()) dims.emplace_back(d.dim_value());
      else if (d.has_dim_param() && !d.dim_param().empty()) dims.push_back(dim::symbol(d.dim_param()));
      else dims.emplace_back();
    }
    r.shape = shape(std::move(dims));
  }
  return r;
}

/// The gpass type of an ONNX type, as close as gpass can say it: `tensor(T)` is a
/// `tensor_type`, `sequence(tensor(T))` a `list_type` of unknown length; other types
/// (optional, map, sparse tensor, sequences of non-tensors, no type) are `unknown`.
inline type type_from_onnx(const onnx::TypeProto& t) {
  if (t.has_tensor_type()) return tensor_type_from_onnx(t.tensor_type());
  if (t.has_sequence_type() && t.sequence_type().has_elem_type() &&
      t.sequence_type().elem_type().has_tensor_type()) {
    list_type l;
    l.element = tensor_type_from_onnx(t.sequence_type().elem_type().tensor_type());
    return l;
  }
  return type{};
}

/// Writes `t` as an ONNX tensor type; false for dtypes ONNX lacks.
inline bool tensor_type_to_onnx(const tensor_type& t, onnx::TypeProto_Tensor& out) {
  auto e = dtype_to_onnx(t.element);
  if (!e) return false;
  if (*e != onnx::TensorProto::UNDEFINED) out.set_elem_type(*e);
  if (t.shape.has_rank()) {
    auto* s = out.mutable_shape();
    for (const auto& d : t.shape.dims()) {
      auto* od = s->add_dim();
      if (d.is_known()) od->set_dim_value(d.value());
      else if (d.is_symbolic()) od->set_dim_param(d.is_single_symbol() ? d.terms()[0].first : d.to_string());
    }
  }
  return true;
}

/// Writes `t` as an ONNX type; false when ONNX has no form for it (unknown, tuple, and
/// tensors of dtypes ONNX lacks). A list becomes `sequence(tensor(...))` (its length is not kept).
inline bool type_to_onnx(const type& t, onnx::TypeProto& out) {
  out.Clear();
  if (t.is_tensor()) return tensor_type_to_onnx(t.tensor(), *out.mutable_tensor_type());
  if (t.is_list())
    return tensor_type_to_onnx(t.list().element,
                               *out.mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type());
  return false;
}

/// True when `t` has no content (no type at all).
inline bool type_proto_is_empty(const onnx::TypeProto& t) { return t.ByteSizeLong() == 0; }

/// True when `a` and `b` are the same message (same bytes).
template <class M>
bool same_proto(const M& a, const M& b) {
  return a.SerializeAsString() == b.SerializeAsString();
}

/// True when converting `t` to gpass and back gives `t` again (gpass represents it exactly).
inline bool type_round_trips(const onnx::TypeProto& t) {
  onnx::TypeProto back;
  if (!type_to_onnx(type_from_onnx(t), back)) return type_proto_is_empty(t);
  return same_proto(back, t);
}

/// The one-line protobuf text form of a message (`tensor_type { elem_type: 1 }`).
template <class M>
std::string proto_text(const M& m) {
  google::protobuf::TextFormat::Printer p;
  p.SetSingleLineMode(true);
  p.SetUseUtf8StringEscaping(false);
  std::string s;
  p.PrintToString(m, &s);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

/// Parses the text form of a `TypeProto`; `std::nullopt` when it is not one.
inline std::optional<onnx::TypeProto> parse_type_proto_text(std::string_view text) {
  struct quiet : google::protobuf::io::ErrorCollector {
    void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  } errors;
  onnx::TypeProto t;
  google::protobuf::TextFormat::Parser p;
  p.RecordErrorsTo(&errors);
  p.AllowPartialMessage(false);
  if (!p.ParseFromString(std::string(text), &t)) return std::nullopt;
  return t;
}

}  // namespace gpass::detail::onnx_io
