// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file elementwise.hpp
/// ONNX element-wise ops: unary math and activations, binary arithmetic with broadcasting
/// (numpy from opset 7, the legacy `broadcast`/`axis` attributes before), variadic
/// Max/Min/Sum/Mean, Clip, the softmax family, and value propagation of integer arithmetic
/// (so `Shape(x)[0] * 2` stays known or symbolic).

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gpass/ops/fused_elementwise.hpp>
#include <gpass/ops/onnx/common.hpp>

namespace gpass {

/// Registers the ONNX element-wise ops into `r` (see the file comment).
void register_onnx_elementwise_ops(op_registry& r);

namespace detail::onnx_ops {

using namespace gpass::onnx_shape;

// Value propagation of integer arithmetic on dims and of small float tensors.
inline void add_value(infer_context& c) {
  eval_elementwise(c, [](const std::vector<dim>& a) { return add_dims(a[0], a[1]); },
                   [](const std::vector<double>& a) { return a[0] + a[1]; });
}
inline void sub_value(infer_context& c) {
  eval_elementwise(c, [](const std::vector<dim>& a) { return sub_dims(a[0], a[1]); },
                   [](const std::vector<double>& a) { return a[0] - a[1]; });
}
inline void mul_value(infer_context& c) {
  eval_elementwise(c, [](const std::vector<dim>& a) { return mul_dims(a[0], a[1]); },
                   [](const std::vector<double>& a) { return a[0] * a[1]; });
}
inline void div_value(infer_context& c) {
  bool integral = is_integer(c.input_dtype(0));
  eval_elementwise(c, [](const std::vector<dim>& a) { return div_dims(a[0], a[1]); },
                   [integral](const std::vector<double>& a) {
                     if (integral) return a[1] == 0 ? 0.0 : std::trunc(a[0] / a[1]);
                     return a[0] / a[1];
                   });
}
inline void mod_value(infer_context& c) {
  bool fmod = c.attr_int("fmod", 0) != 0;
  eval_elementwise(c,
                   [fmod](const std::vector<dim>& a) -> dim {
                     if (!a[0].is_known() || !a[1].is_known() || a[1].value() == 0) return dim();
                     std::int64_t x = a[0].value(), y = a[1].value();
                     if (y == -1) return int_dim(0);  // (INT64_MIN % -1 is UB)
                     std::int64_t m = x % y;
                     if (!fmod && m != 0 && ((m < 0) != (y < 0))) m += y;
                     return int_dim(m);
                   },
                   [fmod](const std::vector<double>& a) {
                     double m = std::fmod(a[0], a[1]);
                     if (!fmod && m != 0 && ((m < 0) != (a[1] < 0))) m += a[1];
                     return m;
                   });
}
inline void neg_value(infer_context& c) {
  eval_elementwise(c, [](const std::vector<dim>& a) { return sub_dims(int_dim(0), a[0]); },
                   [](const std::vector<double>& a) { return -a[0]; });
}
inline void abs_value(infer_context& c) {
  eval_elementwise(c,
                   [](const std::vector<dim>& a) -> dim {
                     if (a[0].is_known()) {
                       const std::int64_t v = a[0].value();
                       if (v == std::numeric_limits<std::int64_t>::min()) return dim();  // (-v overflows)
                       return int_dim(v < 0 ? -v : v);
                     }
                     return a[0].is_symbolic() ? a[0] : dim();  // symbols are sizes (>= 0) when affine-positive
                   },
                   [](const std::vector<double>& a) { return std::fabs(a[0]); });
}
inline void identity_value(infer_context& c) { c.set_value(0, c.input_value(0)); }

// Max/Min over known dims (both known) and numbers: `better(x, r)` says whether x replaces
// the running result r (std::greater<> for Max, std::less<> for Min).
template <class Better>
inline void extremum_value(infer_context& c, Better better) {
  std::size_t n = c.num_inputs();
  eval_elementwise(c,
                   [better](const std::vector<dim>& a) -> dim {
                     dim r = a[0];
                     for (std::size_t i = 1; i < a.size(); ++i) {
                       if (a[i] == r) continue;
                       if (!r.is_known() || !a[i].is_known()) return dim();
                       if (better(a[i].value(), r.value())) r = a[i];
                     }
                     return r;
                   },
                   [n, better](const std::vector<double>& a) {
                     double r = a[0];
                     for (std::size_t i = 1; i < n; ++i)
                       if (better(a[i], r)) r = a[i];
                     return r;
                   });
}
inline void max_value(infer_context& c) { extremum_value(c, std::greater<>()); }
inline void min_value(infer_context& c) { extremum_value(c, std::less<>()); }

// Variadic ops before opset 8: every input has the same shape.
inline void same_shapes(infer_context& c) {
  shape s = c.input_shape(0);
  for (std::size_t i = 1; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) continue;
    try {
      s = c.symbols().unify(s, c.input_shape(i));
    } catch (const error& e) {
      c.fail(e.message() + " in input " + std::to_string(i));
    }
  }
  c.set_shape(0, s);
}

// Softmax family: same shape; the axis must be in range.
inline void softmax_like(infer_context& c) {
  if (auto r = c.input_rank(0)) {
    std::int64_t a = c.attr_int("axis", c.opset() != 0 && c.opset() < 13 ? 1 : -1);
    if (*r > 0) axis(c, a, *r);
  }
  c.set_output(0, c.input_type(0));
}

// PRelu (opset 7+): slope broadcasts unidirectionally to X.
inline void prelu(infer_context& c) {
  shape x = c.input_shape(0);
  shape b = broadcast_inputs(c);
  if (x.has_rank() && b.has_rank() && b.rank() != x.rank())
    c.fail("slope of rank " + std::to_string(c.input_shape(1).rank()) + " does not broadcast to X of rank " +
           std::to_string(x.rank()));
  c.set_shape(0, x.has_rank() ? (b.has_rank() ? b : x) : x);
}

}  // namespace detail::onnx_ops
}  // namespace gpass

inline void gpass::register_onnx_elementwise_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  namespace ot = onnx_types;
  const auto fl = ot::floats();
  const auto num = ot::numeric();

  // unary, same type and shape
  struct unary {
    const char* name;
    int since;
    bool numeric;
  };
  for (auto u : std::initializer_list<unary>{
           {"Abs", 1, true},       {"Acos", 7, false},     {"Acosh", 9, false},   {"Asin", 7, false},
           {"Asinh", 9, false},    {"Atan", 7, false},     {"Atanh", 9, false},   {"Ceil", 1, false},
           {"Cos", 7, false},      {"Cosh", 9, false},     {"Erf", 9, true},      {"Exp", 1, false},
           {"Floor", 1, false},    {"Log", 1, false},      {"Neg", 1, true},      {"Reciprocal", 1, false},
           {"Relu", 1, true},      {"Round", 11, false},   {"Sigmoid", 1, false}, {"Sign", 9, true},
           {"Sin", 7, false},      {"Sinh", 9, false},     {"Softplus", 1, false}, {"Softsign", 1, false},
           {"Sqrt", 1, false},     {"Tan", 7, false},      {"Tanh", 1, false},    {"HardSwish", 14, false},
           {"Celu", 12, false},    {"Elu", 1, false},      {"HardSigmoid", 1, false}, {"LeakyRelu", 1, false},
           {"Selu", 1, false},     {"ThresholdedRelu", 10, false}, {"Shrink", 9, true}}) {
    onnx_op o(u.name, u.since);
    o.in("X:T").out("Y:T").tc("T", u.numeric ? num : fl).infer(same_as_input0).backward(same_as_output0_backward);
    std::string n = u.name;
    if (n == "Celu" || n == "Elu" || n == "ThresholdedRelu") o.attr("alpha", "float", 1.0);
    if (n == "LeakyRelu") o.attr("alpha", "float", 0.01);
    if (n == "HardSigmoid") o.attr("alpha", "float", 0.2).attr("beta", "float", 0.5);
    if (n == "Selu") o.attr("alpha", "float", 1.67326319217681884765625).attr("gamma", "float", 1.05070102214813232421875);
    if (n == "Shrink") o.attr("bias", "float", 0.0).attr("lambd", "float", 0.5);
    if (n == "Neg") o.propagate(neg_value);
    if (n == "Abs") o.propagate(abs_value);
    o.add(r);
  }
  {  // gpass's fused op (the optimizer's -O3): ONNX 20's Gelu for graphs of older opsets
    op_schema s = onnx_op("Gelu", 1).in("X:T").out("Y:T").tc("T", fl).attr("approximate", "string", "none")
                      .infer(same_as_input0).doc("x * Phi(x) (erf form; `approximate = \"tanh\"`: tanh form)").build();
    s.domain = "gpass";
    r.add(std::move(s));
  }

  {  // gpass's fused op (the optimizer's -O3: fuse-elementwise): a chain of element-wise ops
    op_schema s = onnx_op("FusedElementwise", 1).in("X*:T").out("Y:T").tc("T", {dtype::f32, dtype::f64}).req("program", "strings")
                      .infer([](infer_context& c) {
                        const attribute* a = c.attr("program");
                        if (!a || !a->is<std::vector<std::string>>()) c.fail("attribute 'program' must be strings");
                        (void)parse_fused_program(a->as<std::vector<std::string>>(), c.num_inputs(),
                                                  [&](const std::string& m) { c.fail(m); });
                        numpy_broadcast(c);
                      })
                      .doc("The steps of `program` (see gpass/ops/fused_elementwise.hpp) on the inputs broadcast to the "
                           "output, element by element; the last step is Y")
                      .build();
    s.domain = "gpass";
    r.add(std::move(s));
  }

  // binary arithmetic: legacy broadcast before opset 7, numpy after
  struct binary {
    const char* name;
    infer_function value;
  };
  for (const auto& b : {binary{"Add", add_value}, binary{"Sub", sub_value}, binary{"Mul", mul_value},
                        binary{"Div", div_value}}) {
    onnx_op(b.name, 1).until(6).in("A:T").in("B:T").out("C:T").tc("T", num)
        .attr("broadcast", "int", std::int64_t{0}).opt("axis", "int").infer(legacy_binary).propagate(b.value).add(r);
    onnx_op(b.name, 7).in("A:T").in("B:T").out("C:T").tc("T", num).infer(numpy_broadcast).propagate(b.value).add(r);
  }
  onnx_op("Pow", 1).until(6).in("X:T").in("Y:T").out("Z:T").tc("T", fl)
      .attr("broadcast", "int", std::int64_t{0}).opt("axis", "int").infer(legacy_binary).add(r);
  onnx_op("Pow", 7).until(11).in("X:T").in("Y:T").out("Z:T").tc("T", fl).infer(numpy_broadcast).add(r);
  onnx_op("Pow", 12).in("X:T").in("Y:T1").out("Z:T").tc("T", num).tc("T1", num).infer(numpy_broadcast)
      .propagate([](infer_context& c) {
        eval_elementwise(c, nullptr, [](const std::vector<double>& a) { return std::pow(a[0], a[1]); });
      })
      .add(r);
  onnx_op("Mod", 10).in("A:T").in("B:T").out("C:T").tc("T", num).attr("fmod", "int", std::int64_t{0})
      .infer(numpy_broadcast).propagate(mod_value).add(r);
  onnx_op("BitShift", 11).until(27).in("X:T").in("Y:T").out("Z:T").tc("T", ot::unsigned_ints()).req("direction", "string")
      .infer(numpy_broadcast).add(r);
  onnx_op("BitShift", 28).in("X:T").in("Y:T").out("Z:T").tc("T", ot::ints()).req("direction", "string")  // signed too
      .infer(numpy_broadcast).add(r);
  for (const char* n : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"})
    onnx_op(n, 18).in("A:T").in("B:T").out("C:T").tc("T", ot::ints()).infer(numpy_broadcast).add(r);
  onnx_op("BitwiseNot", 18).in("X:T").out("Y:T").tc("T", ot::ints()).infer(same_as_input0).add(r);
  onnx_op("Mish", 18).in("X:T").out("Y:T").tc("T", fl).infer(same_as_input0).backward(same_as_output0_backward).add(r);
  onnx_op("Swish", 24).in("X:T").out("Y:T").tc("T", fl).attr("alpha", "float", 1.0).infer(same_as_input0)
      .backward(same_as_output0_backward).add(r);
  onnx_op("Gelu", 20).in("X:T").out("Y:T").tc("T", fl).attr("approximate", "string", "none").infer(same_as_input0)
      .backward(same_as_output0_backward).add(r);
  onnx_op("PRelu", 1).until(6).in("X:T").in("slope:T").out("Y:T").tc("T", fl).infer(shape_as_input0).add(r);
  onnx_op("PRelu", 7).in("X:T").in("slope:T").out("Y:T").tc("T", num).infer(prelu).add(r);

  // variadic
  struct variadic {
    const char* name;
    infer_function value;
  };
  for (const auto& v : {variadic{"Max", max_value}, variadic{"Min", min_value}, variadic{"Sum", nullptr},
                        variadic{"Mean", nullptr}}) {
    onnx_op(v.name, 1).until(7).in("data_0*:T").out("out:T").tc("T", fl).infer(same_shapes).propagate(v.value).add(r);
    onnx_op(v.name, 8).in("data_0*:T").out("out:T").tc("T", num).infer(numpy_broadcast).propagate(v.value).add(r);
  }

  // Clip: min/max attributes until opset 10, optional inputs from 11
  onnx_op("Clip", 1).until(10).in("input:T").out("output:T").tc("T", fl).opt("min", "float").opt("max", "float")
      .infer(same_as_input0).backward(same_as_output0_backward).add(r);
  onnx_op("Clip", 11).in("input:T").in("min?:T").in("max?:T").out("output:T").tc("T", num)
      .infer([](infer_context& c) {
        for (std::size_t i = 1; i < 3; ++i)
          if (auto rk = c.input_rank(i); rk && *rk != 0 && !(*rk == 1 && c.input_shape(i)[0] == dim(1)))
            c.fail("input " + std::to_string(i) + " (" + (i == 1 ? "min" : "max") + ") must be a scalar, got " +
                   c.input_shape(i).to_string());
        c.set_output(0, c.input_type(0));
      })
      .backward(same_as_output0_backward)
      .add(r);

  // softmax family (coerced to 2-D before 13; the shape is the input's either way)
  for (const char* n : {"Softmax", "LogSoftmax", "Hardmax"}) {
    onnx_op(n, 1).until(12).in("input:T").out("output:T").tc("T", fl).attr("axis", "int", std::int64_t{1})
        .infer(softmax_like).add(r);
    onnx_op(n, 13).in("input:T").out("output:T").tc("T", fl).attr("axis", "int", std::int64_t{-1})
        .infer(softmax_like).add(r);
  }
}
