// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file matmul.hpp
/// TensorFlow matrix products: MatMul (2-D, `transpose_a`/`transpose_b`), BatchMatMul (equal
/// batch dims), BatchMatMulV2 and BatchMatMulV3 (broadcast batch dims; `adj_x`/`adj_y`; V3's
/// `Tout`), through ONNX's numpy matmul shape function; Einsum (`equation`, ONNX's Einsum
/// shape function).

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <gpass/ops/tf/common.hpp>

namespace gpass {

/// Registers the TensorFlow matrix products into `r` (see the file comment).
void register_tf_matmul_ops(op_registry& r);

namespace detail::tf_ops {

inline void matmul_infer(infer_context& c) {
  const bool plain = c.op() == "MatMul";
  const bool ta = c.attr_int(plain ? "transpose_a" : "adj_x", 0) != 0;
  const bool tb = c.attr_int(plain ? "transpose_b" : "adj_y", 0) != 0;
  shape a = c.input_shape(0), b = c.input_shape(1);
  auto prepare = [&](shape& s, bool t, const char* what) {
    if (!s.has_rank()) return;
    if (plain && s.rank() != 2) c.fail(std::string(what) + " must be 2-D, got " + s.to_string());
    if (s.rank() < 2) c.fail(std::string(what) + " must have rank >= 2, got " + s.to_string());
    if (t) std::swap(s[s.rank() - 1], s[s.rank() - 2]);
  };
  prepare(a, ta, plain ? "a" : "x");
  prepare(b, tb, plain ? "b" : "y");
  if (c.op() == "BatchMatMul" && a.has_rank() && b.has_rank()) {
    if (a.rank() != b.rank()) c.fail("x " + a.to_string() + " and y " + b.to_string() + " must have one rank");
    for (std::size_t i = 0; i + 2 < a.rank(); ++i) a[i] = b[i] = c.unify(a[i], b[i], "(batch dim " + std::to_string(i) + ")");
  }
  if (!a.has_rank() || !b.has_rank()) {
    if (plain) c.set_shape(0, shape{a.has_rank() ? a[0] : dim(), b.has_rank() ? b[1] : dim()});
    return;
  }
  detail::onnx_ops::matmul_shapes(c, a, b);
}

}  // namespace detail::tf_ops
}  // namespace gpass

inline void gpass::register_tf_matmul_ops(op_registry& r) {
  using namespace detail::tf_ops;
  tf_op("MatMul").in("a:T").in("b:T").out("product:T").type_attr("T").attr("transpose_a", "bool", false)
      .attr("transpose_b", "bool", false).infer(matmul_infer).add(r);
  for (const char* n : {"BatchMatMul", "BatchMatMulV2"})
    tf_op(n).in("x:T").in("y:T").out("output:T").type_attr("T").attr("adj_x", "bool", false).attr("adj_y", "bool", false)
        .infer(matmul_infer).add(r);
  tf_op("Einsum").in("inputs*:T").out("output:T").type_attr("T").req("equation", "string").opt("N", "int")
      .infer(detail::onnx_ops::einsum_infer).add(r);
  tf_op("BatchMatMulV3").in("x:Ta").in("y:Tb").out("output:Tout").type_attr("Ta").type_attr("Tb").type_attr("Tout")
      .attr("adj_x", "bool", false).attr("adj_y", "bool", false).infer(matmul_infer).add(r);
}

// the definitions of the ONNX functions used above (see tf/detail/onnx_functions.hpp)
#include <gpass/ops/onnx/matmul.hpp>
