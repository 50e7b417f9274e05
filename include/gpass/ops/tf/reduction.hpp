// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file reduction.hpp
/// TensorFlow reductions: Sum, Mean, Max, Min, Prod, All, Any (axes as the input
/// `reduction_indices`, a scalar or a vector; `keep_dims`; an empty axis list reduces
/// nothing), ArgMax and ArgMin (`dimension` input, `output_type`). Sum, Prod, Max and Min of a
/// small integer vector propagate its known or symbolic value (`Prod(Shape(x))` is `3*n`).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <gpass/ops/tf/common.hpp>

namespace gpass {

/// Registers the TensorFlow reductions into `r` (see the file comment).
void register_tf_reduction_ops(op_registry& r);

namespace detail::tf_ops {

// The normalized axes of a reduction (duplicates allowed, as in TensorFlow), if known.
inline std::optional<std::vector<std::size_t>> reduction_axes(infer_context& c, std::size_t rank) {
  auto ax = c.input_ints(1);
  if (!ax) return std::nullopt;
  std::vector<std::size_t> r;
  for (auto a : *ax) {
    std::size_t n = axis(c, a, rank, "reduction axis");
    if (std::find(r.begin(), r.end(), n) == r.end()) r.push_back(n);
  }
  return r;
}

inline void reduce_infer(infer_context& c) {
  const bool keep = c.attr_int("keep_dims", 0) != 0;
  auto r = c.input_rank(0);
  if (!r) return;
  auto axs = reduction_axes(c, *r);
  if (!axs) {  // axes computed at run time
    if (keep) c.set_shape(0, shape::unknown_dims(*r));
    return;
  }
  shape s = c.input_shape(0);
  std::vector<dim> out;
  for (std::size_t i = 0; i < *r; ++i) {
    if (std::find(axs->begin(), axs->end(), i) == axs->end()) out.push_back(s[i]);
    else if (keep) out.push_back(dim(1));
  }
  c.set_shape(0, shape(std::move(out)));
}

// Over the only axis of a vector: ONNX's reduce_value; over no axis: the input's value.
inline void reduce_value(infer_context& c, char op) {
  if (c.input_rank(0) != std::optional<std::size_t>(1)) return;
  auto axs = reduction_axes(c, 1);
  if (!axs) return;
  if (axs->empty()) {
    c.set_value(0, c.input_value(0));
    return;
  }
  if (op) detail::onnx_ops::reduce_value(c, op);
}

inline void arg_reduce_infer(infer_context& c) {
  auto r = c.input_rank(0);
  if (!r) return;
  if (*r == 0) c.fail("cannot reduce a scalar");
  auto d = c.input_int(1);
  if (!d) {
    c.set_shape(0, shape::unknown_dims(*r - 1));
    return;
  }
  attribute_map a{{"axis", *d}, {"keepdims", std::int64_t{0}}};
  dtype t = c.output(0).type.is_tensor() ? c.output(0).type.tensor().element : dtype::undefined;
  on_view(c, input_ports(c, 0, 1), a, detail::onnx_ops::arg_reduce_infer);
  if (t != dtype::undefined) c.set_dtype(0, t);
}

}  // namespace detail::tf_ops
}  // namespace gpass

inline void gpass::register_tf_reduction_ops(op_registry& r) {
  using namespace detail::tf_ops;
  struct red {
    const char* name;
    char value;  // ONNX reduce_value's operator; 0: only the no-axis identity
  };
  for (auto x : {red{"Sum", '+'}, red{"Mean", 0}, red{"Max", '>'}, red{"Min", '<'}, red{"Prod", '*'}, red{"All", 0},
                 red{"Any", 0}, red{"EuclideanNorm", 0}}) {
    char v = x.value;
    std::string n = x.name;
    tf_op o(x.name);
    if (n == "All" || n == "Any") o.in("input:bool").out("output:bool");
    else o.in("input:T").out("output:T").type_attr("T");
    o.in("reduction_indices:Tidx").type_attr("Tidx", dtype::int32).attr("keep_dims", "bool", false)
        .infer(reduce_infer).propagate([v](infer_context& c) { reduce_value(c, v); }).add(r);
  }
  for (const char* n : {"ArgMax", "ArgMin"})
    tf_op(n).in("input:T").in("dimension:Tidx").out("output:output_type").type_attr("T").type_attr("Tidx", dtype::int32)
        .type_attr("output_type", dtype::int64).infer(arg_reduce_infer).add(r);
}

// the definitions of the ONNX functions used above (see tf/detail/onnx_functions.hpp)
#include <gpass/ops/onnx/reduction.hpp>
