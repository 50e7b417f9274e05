// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file elementwise.hpp
/// TensorFlow element-wise ops: unary math and activations, binary arithmetic with numpy
/// broadcasting (Add, AddV2, Sub, Mul, RealDiv, Div, FloorDiv, FloorMod, Maximum, Minimum,
/// Pow, SquaredDifference, ...; a dim where the inputs have different symbols becomes the
/// node's own symbol, `tf_shape::numpy_broadcast_named`), AddN, comparisons (bool outputs), LogicalAnd/Or/Not, Cast
/// (`DstT`), Select (v1 rules: a scalar, first-dim vector or same-shape condition), SelectV2
/// (broadcasting), ZerosLike and OnesLike. Integer arithmetic, comparisons, Cast and Select
/// propagate known and symbolic values (`Shape(x)[0] * 2` stays `2*n`).

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/ops/tf/common.hpp>

namespace gpass {

/// Registers the TensorFlow element-wise ops into `r` (see the file comment).
void register_tf_elementwise_ops(op_registry& r);

namespace detail::tf_ops {

// FloorDiv: rounds towards negative infinity (ONNX Div truncates).
inline void floor_div_value(infer_context& c) {
  eval_elementwise(c,
                   [](const std::vector<dim>& a) -> dim {
                     if (a[0].is_known() && a[1].is_known()) {
                       std::int64_t x = a[0].value(), y = a[1].value();
                       // (INT64_MIN / -1 overflows: the quotient is not an int64)
                       if (y == 0 || (y == -1 && x == std::numeric_limits<std::int64_t>::min())) return dim();
                       std::int64_t q = x / y;
                       if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
                       return int_dim(q);
                     }
                     return div_dims(a[0], a[1]);  // exact divisions of symbols only
                   },
                   [](const std::vector<double>& a) { return std::floor(a[0] / a[1]); });
}

inline void square_value(infer_context& c) {
  eval_elementwise(c, [](const std::vector<dim>& a) { return mul_dims(a[0], a[0]); },
                   [](const std::vector<double>& a) { return a[0] * a[0]; });
}

inline void add_n_value(infer_context& c) {
  eval_elementwise(c,
                   [](const std::vector<dim>& a) {
                     dim s = int_dim(0);
                     for (const auto& x : a) s = add_dims(s, x);
                     return s;
                   },
                   [](const std::vector<double>& a) {
                     double s = 0;
                     for (double x : a) s += x;
                     return s;
                   });
}

inline void not_equal_value(infer_context& c) {
  eval_elementwise(c,
                   [](const std::vector<dim>& a) -> dim {
                     if (a[0].is_unknown() || a[1].is_unknown()) return dim();
                     if (a[0] == a[1]) return dim(0);
                     dim d = sub_dims(a[0], a[1]);
                     return d.is_known() ? dim(d.value() != 0 ? 1 : 0) : dim();
                   },
                   [](const std::vector<double>& a) -> double { return a[0] != a[1]; });
}

inline void cast_infer(infer_context& c) {
  c.set_tensor(0, c.attr_dtype("DstT").value_or(dtype::undefined), c.input_shape(0));
}

// Select (v1): t and e have one shape; the condition is a scalar, has that shape, or is a
// vector as long as its first dim.
inline void select_infer(infer_context& c) {
  shape t = c.input_shape(1), e = c.input_shape(2), cond = c.input_shape(0);
  shape out;
  try {
    out = c.symbols().unify(t, e);
  } catch (const error& x) {
    c.fail(x.message() + " in input 2 (t is " + t.to_string() + ", e is " + e.to_string() + ")");
  }
  if (cond.has_rank() && out.has_rank() && cond.rank() != 0) {
    if (cond.rank() == out.rank()) {
      for (std::size_t i = 0; i < out.rank(); ++i) out[i] = c.unify(out[i], cond[i], "in input 0 (condition)");
    } else if (cond.rank() == 1 && out.rank() > 1) {
      out[0] = c.unify(out[0], cond[0], "in input 0 (condition vector and the first dim)");
    } else {
      c.fail("condition " + cond.to_string() + " must be a scalar, a vector or of shape " + out.to_string());
    }
  }
  c.set_shape(0, out);
  dtype_from_inputs(c, 1, 3);
}

inline void select_value(infer_context& c) {
  auto rc = c.input_rank(0), rt = c.input_rank(1);
  if (rc && rt && (*rc == 0 || *rc == *rt)) detail::onnx_ops::where_value(c);
}

// ZerosLike / OnesLike: a known value when the shape is known and small.
inline void fill_like_value(infer_context& c, int v) {
  const type& t = c.output(0).type;
  if (!t.is_tensor() || !t.tensor().shape.is_fully_known()) return;
  dtype d = t.tensor().element;
  auto sizes = t.tensor().shape.sizes();
  if (d == dtype::undefined || !is_trivial(d) || num_elements(sizes) > c.max_value_elements()) return;
  tensor out(d, sizes);
  if (v != 0)
    visit_dtype(d, [&]<class T>() {
      if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>) {
        T* p = out.data<T>();
        for (std::int64_t i = 0; i < out.size(); ++i) p[i] = static_cast<T>(v);
      }
    });
  c.set_value(0, known_value::of(std::move(out)));
}

}  // namespace detail::tf_ops
}  // namespace gpass

inline void gpass::register_tf_elementwise_ops(op_registry& r) {
  using namespace detail::tf_ops;
  namespace ox = detail::onnx_ops;

  // unary, same type and shape
  for (const char* n : {"Abs",   "Acos",  "Acosh",      "Asin",  "Asinh",      "Atan",   "Atanh",  "Ceil",
                        "Cos",   "Cosh",  "Elu",        "Erf",   "Exp",        "Expm1",  "Floor",  "Inv",
                        "Log",   "Log1p", "Neg",        "Reciprocal", "Relu",  "Relu6",  "Rint",   "Round",
                        "Rsqrt", "Selu",  "Sigmoid",    "Sign",  "Sin",        "Sinh",   "Softplus", "Softsign",
                        "Sqrt",  "Square", "Tan",       "Tanh",  "LeakyRelu",  "OnesLike", "ZerosLike", "Invert"}) {
    tf_op o(n);
    o.in("x:T").out("y:T").type_attr("T").infer(same_as_input0).backward(same_as_output0_backward);
    std::string s = n;
    if (s == "LeakyRelu") o.attr("alpha", "float", 0.2);
    if (s == "Neg") o.propagate(ox::neg_value);
    if (s == "Abs") o.propagate(ox::abs_value);
    if (s == "Square") o.propagate(square_value);
    if (s == "ZerosLike") o.propagate([](infer_context& c) { fill_like_value(c, 0); });
    if (s == "OnesLike") o.propagate([](infer_context& c) { fill_like_value(c, 1); });
    o.add(r);
  }

  // fake quantization: the input rounded to one of 2^num_bits levels over [min, max] (nudged
  // so that 0 is a level), as float
  tf_op("FakeQuantWithMinMaxArgs").in("inputs:f32").out("outputs:f32").attr("min", "float", -6.0).attr("max", "float", 6.0)
      .attr("num_bits", "int", std::int64_t{8}).attr("narrow_range", "bool", false).infer(same_as_input0).add(r);
  tf_op("FakeQuantWithMinMaxVars").in("inputs:f32").in("min:f32").in("max:f32").out("outputs:f32")
      .attr("num_bits", "int", std::int64_t{8}).attr("narrow_range", "bool", false).infer(same_as_input0).add(r);

  // binary, numpy broadcasting
  struct binary {
    const char* name;
    infer_function value;
  };
  for (const auto& b : {binary{"Add", ox::add_value}, binary{"AddV2", ox::add_value}, binary{"Sub", ox::sub_value},
                        binary{"Mul", ox::mul_value}, binary{"RealDiv", ox::div_value}, binary{"Div", ox::div_value},
                        binary{"TruncateDiv", ox::div_value}, binary{"FloorDiv", floor_div_value},
                        binary{"FloorMod", ox::mod_value}, binary{"Maximum", ox::max_value},
                        binary{"Minimum", ox::min_value}, binary{"Pow", nullptr}, binary{"SquaredDifference", nullptr},
                        binary{"Mod", nullptr}, binary{"TruncateMod", nullptr}, binary{"DivNoNan", nullptr},
                        binary{"MulNoNan", nullptr}, binary{"Atan2", nullptr}, binary{"BitwiseAnd", nullptr},
                        binary{"BitwiseOr", nullptr}, binary{"BitwiseXor", nullptr}, binary{"LeftShift", nullptr},
                        binary{"RightShift", nullptr}})
    tf_op(b.name).in("x:T").in("y:T").out("z:T").type_attr("T").infer(numpy_broadcast_named).propagate(b.value).add(r);

  tf_op("AddN").in("inputs*:T").out("sum:T").type_attr("T").opt("N", "int").infer(ox::same_shapes)
      .propagate(add_n_value).doc("The sum of N tensors of one shape.").add(r);

  // comparisons and logic
  struct cmp {
    const char* name;
    char op;
  };
  for (auto x : {cmp{"Equal", '='}, cmp{"Greater", '>'}, cmp{"Less", '<'}, cmp{"GreaterEqual", 'g'},
                 cmp{"LessEqual", 'l'}, cmp{"NotEqual", '!'}}) {
    char op = x.op;
    infer_function prop = [op](infer_context& c) {
      if (op == '!') not_equal_value(c);
      else ox::compare_value(c, op);
    };
    tf_op o(x.name);
    o.in("x:T").in("y:T").out("z:bool").type_attr("T").infer(numpy_broadcast_named).propagate(prop);
    if (op == '=' || op == '!') o.attr("incompatible_shape_error", "bool", true);
    o.add(r);
  }
  for (auto x : {cmp{"LogicalAnd", '&'}, cmp{"LogicalOr", '|'}}) {
    char op = x.op;
    tf_op(x.name).in("x:bool").in("y:bool").out("z:bool").infer(numpy_broadcast_named)
        .propagate([op](infer_context& c) { ox::logic_value(c, op); }).add(r);
  }
  tf_op("LogicalNot").in("x:bool").out("y:bool").infer(shape_as_input0)
      .propagate([](infer_context& c) { ox::logic_value(c, '!'); }).add(r);
  for (const char* n : {"IsNan", "IsInf", "IsFinite"})
    tf_op(n).in("x:T").out("y:bool").type_attr("T").infer(shape_as_input0).add(r);

  tf_op("Cast").in("x:SrcT").out("y:DstT").type_attr("SrcT").type_attr("DstT").attr("Truncate", "bool", false)
      .infer(cast_infer).propagate(ox::cast_value).doc("`x` converted to `DstT`.").add(r);

  tf_op("Select").in("condition:bool").in("t:T").in("e:T").out("output:T").type_attr("T").infer(select_infer)
      .propagate(select_value).add(r);
  tf_op("SelectV2").in("condition:bool").in("t:T").in("e:T").out("output:T").type_attr("T").infer(numpy_broadcast_named)
      .propagate(ox::where_value).add(r);
  // complex parts (Tout: float for complex64, double for complex128) and the conjugate
  for (const char* n : {"Real", "Imag", "ComplexAbs", "Angle"})
    tf_op(n).in("input:T").out("output:Tout").type_attr("T", dtype::complex64).type_attr("Tout", dtype::f32)
        .infer(shape_as_input0).add(r);
  tf_op("Conj").in("input:T").out("output:T").type_attr("T", dtype::complex64).infer(shape_as_input0).add(r);
  tf_op("Complex").in("real:T").in("imag:T").out("out:Tout").type_attr("T", dtype::f32).type_attr("Tout", dtype::complex64)
      .infer(numpy_broadcast_named).add(r);
}

// the definitions of the ONNX functions used above (see tf/detail/onnx_functions.hpp)
#include <gpass/ops/onnx/elementwise.hpp>
#include <gpass/ops/onnx/logical.hpp>
