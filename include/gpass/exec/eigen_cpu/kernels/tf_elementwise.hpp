// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_elementwise.hpp
/// Eigen CPU kernels of TensorFlow element-wise ops (domain "tf"), on the broadcasting binary
/// and unary engines of elementwise.hpp:
///
/// - binary, broadcasting: Add AddV2 Sub Mul Div RealDiv TruncateDiv FloorDiv FloorMod
///   TruncateMod Mod Maximum Minimum Pow SquaredDifference Atan2 DivNoNan MulNoNan, the
///   comparisons Less LessEqual Greater GreaterEqual Equal NotEqual, LogicalAnd LogicalOr, the
///   bitwise ops and LeftShift RightShift (amounts clamped to [0, bits - 1]);
/// - unary: Neg Abs Square Sqrt Rsqrt Exp Expm1 Log Log1p Tanh Sigmoid Relu Relu6 Elu Selu
///   Softplus Softsign LeakyRelu Floor Ceil Round Rint Sign Reciprocal Inv Sin Cos Tan Asin
///   Acos Atan Sinh Cosh Erf IsNan IsInf IsFinite LogicalNot;
/// - AddN BiasAdd BiasAddV1 Cast Select SelectV2 ClipByValue, FakeQuantWithMinMaxArgs/Vars.
///
/// TF semantics: FloorDiv/FloorMod round toward negative infinity, Div truncates integers,
/// integer division by zero is an error. Private (`gpass::exec::cpu_detail`); the unit
/// `src/tf_elementwise.cpp` registers them.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/elementwise.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

using float_only = type_list<float, double, Eigen::half, Eigen::bfloat16>;
using signed_numeric = ew::signed_numeric_types;
using bool_only = type_list<bool>;

/// Integer division rounding toward negative infinity; division by zero is an error.
template <class C>
C floor_div_int(C a, C b) {
  const C q = ew::div_int(a, b);
  if constexpr (std::is_signed_v<C>) {
    if (b != -1 && a % b != 0 && ((a < 0) != (b < 0))) return static_cast<C>(q - 1);
  }
  return q;
}

/// A shift amount clamped to [0, bits of T - 1].
template <class T>
int shift_amount(T y) {
  constexpr int top = static_cast<int>(sizeof(T) * 8) - 1;
  if constexpr (std::is_signed_v<T>) {
    if (y < 0) return 0;
  }
  return y > static_cast<T>(top) ? top : static_cast<int>(y);
}

template <class L, class F>
void tf_binary(registry& r, const char* op, F f, double cost = 1.0) {
  r.add({.domain = domain, .op = op, .dtypes = L::dtypes(), .make = [f, cost](const kernel_node& n) -> fn {
           return ew::binary_kernel<L, false>(n, f, cost);
         }});
}
template <class L, class F>
void tf_compare(registry& r, const char* op, F f) {
  r.add({.domain = domain, .op = op, .dtypes = L::dtypes(), .make = [f](const kernel_node& n) -> fn {
           return ew::binary_kernel<L, true>(n, f, 1.0);
         }});
}
template <class L, bool BoolOut = false, class F>
void tf_unary(registry& r, const char* op, F f, double cost = 1.0) {
  r.add({.domain = domain, .op = op, .dtypes = L::dtypes(), .make = [f, cost](const kernel_node&) -> fn {
           return ew::unary_kernel<L, BoolOut>(f, cost);
         }});
}

/// Binary elementwise ops.
inline void register_tf_binary(registry& r) {
  using namespace ew;
  const auto add = bf{[](auto a, auto b) { return add_w(a, b); }, [](const auto& x, const auto& y) { return x + y; }};
  tf_binary<numeric_types>(r, "Add", add);
  tf_binary<numeric_types>(r, "AddV2", add);
  tf_binary<numeric_types>(r, "Sub", bf{[](auto a, auto b) { return sub_w(a, b); }, [](const auto& x, const auto& y) { return x - y; }});
  tf_binary<numeric_types>(r, "Mul", bf{[](auto a, auto b) { return mul_w(a, b); }, [](const auto& x, const auto& y) { return x * y; }});
  const auto div = bsf{[](auto a, auto b) {
    if constexpr (std::is_integral_v<decltype(a)>) return div_int(a, b);
    else return a / b;
  }};
  tf_binary<numeric_types>(r, "Div", div, 2.0);
  tf_binary<numeric_types>(r, "TruncateDiv", div, 2.0);
  tf_binary<float_only>(r, "RealDiv", bf{[](auto a, auto b) { return a / b; }, [](const auto& x, const auto& y) { return x / y; }}, 2.0);
  tf_binary<numeric_types>(r, "FloorDiv", bsf{[](auto a, auto b) {
                              if constexpr (std::is_integral_v<decltype(a)>) return floor_div_int(a, b);
                              else return std::floor(a / b);
                            }},
                            4.0);
  tf_binary<numeric_types>(r, "FloorMod", bsf{[](auto a, auto b) { return mod_op(a, b, false); }}, 4.0);
  tf_binary<numeric_types>(r, "TruncateMod", bsf{[](auto a, auto b) { return mod_op(a, b, true); }}, 4.0);
  tf_binary<numeric_types>(r, "Mod", bsf{[](auto a, auto b) { return mod_op(a, b, true); }}, 4.0);
  tf_binary<numeric_types>(r, "Maximum", bf{[](auto a, auto b) { return max_nan(a, b); },
                                             [](const auto& x, const auto& y) {
                                               using S = scalar_of<decltype(x)>;
                                               return x.binaryExpr(y, Eigen::internal::scalar_max_op<S, S, Eigen::PropagateNaN>());
                                             }});
  tf_binary<numeric_types>(r, "Minimum", bf{[](auto a, auto b) { return min_nan(a, b); },
                                             [](const auto& x, const auto& y) {
                                               using S = scalar_of<decltype(x)>;
                                               return x.binaryExpr(y, Eigen::internal::scalar_min_op<S, S, Eigen::PropagateNaN>());
                                             }});
  tf_binary<pow_base_types>(r, "Pow", pow_f{}, 20.0);
  tf_binary<numeric_types>(r, "SquaredDifference", bf{[](auto a, auto b) {
                                                       const auto d = sub_w(a, b);
                                                       return mul_w(d, d);
                                                     },
                                                     [](const auto& x, const auto& y) { return (x - y).square(); }});
  tf_binary<float_only>(r, "Atan2", bsf{[](auto a, auto b) { return std::atan2(a, b); }}, 20.0);
  tf_binary<float_only>(r, "DivNoNan", bsf{[](auto a, auto b) { return b == decltype(b)(0) ? decltype(a)(0) : a / b; }}, 2.0);
  tf_binary<float_only>(r, "MulNoNan", bsf{[](auto a, auto b) { return b == decltype(b)(0) ? decltype(a)(0) : a * b; }}, 2.0);

  tf_compare<numeric_types>(r, "Less", bsf{[](auto a, auto b) { return a < b; }});
  tf_compare<numeric_types>(r, "LessEqual", bsf{[](auto a, auto b) { return a <= b; }});
  tf_compare<numeric_types>(r, "Greater", bsf{[](auto a, auto b) { return a > b; }});
  tf_compare<numeric_types>(r, "GreaterEqual", bsf{[](auto a, auto b) { return a >= b; }});
  tf_compare<eq_types>(r, "Equal", bsf{[](const auto& a, const auto& b) { return a == b; }});
  tf_compare<eq_types>(r, "NotEqual", bsf{[](const auto& a, const auto& b) { return a != b; }});
  tf_binary<bool_only>(r, "LogicalAnd", bsf{[](bool a, bool b) { return a && b; }});
  tf_binary<bool_only>(r, "LogicalOr", bsf{[](bool a, bool b) { return a || b; }});
  tf_binary<int_types>(r, "BitwiseAnd", bsf{[](auto a, auto b) { return static_cast<decltype(a)>(a & b); }});
  tf_binary<int_types>(r, "BitwiseOr", bsf{[](auto a, auto b) { return static_cast<decltype(a)>(a | b); }});
  tf_binary<int_types>(r, "BitwiseXor", bsf{[](auto a, auto b) { return static_cast<decltype(a)>(a ^ b); }});
  // shifts by y clamped to [0, bits - 1] (as TensorFlow's CPU kernels, which define what C++ does
  // not); left shifts of signed values through the unsigned type, right shifts arithmetic
  tf_binary<int_types>(r, "LeftShift", bsf{[](auto a, auto b) {
                         using T = decltype(a);
                         return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) << shift_amount(b));
                       }});
  tf_binary<int_types>(r, "RightShift", bsf{[](auto a, auto b) { return static_cast<decltype(a)>(a >> shift_amount(b)); }});
}

/// Unary elementwise ops.
inline void register_tf_unary(registry& r) {
  using namespace ew;
  tf_unary<signed_numeric>(r, "Neg", uf{[](auto x) { return sub_w(decltype(x)(0), x); }, [](const auto& x) { return -x; }});
  tf_unary<signed_numeric>(r, "Abs", uf{[](auto x) {
                                           using C = decltype(x);
                                           if constexpr (std::is_integral_v<C>) return x < 0 ? sub_w(C(0), x) : x;
                                           else return std::abs(x);
                                         },
                                         [](const auto& x) { return x.abs(); }});
  tf_unary<numeric_types>(r, "Square", uf{[](auto x) { return mul_w(x, x); }, [](const auto& x) { return x.square(); }});
  tf_unary<float_only>(r, "Sqrt", uf{[](auto x) { return std::sqrt(x); }, [](const auto& x) { return x.sqrt(); }}, 4.0);
  tf_unary<float_only>(r, "Rsqrt", uf{[](auto x) { return decltype(x)(1) / std::sqrt(x); }, [](const auto& x) { return x.rsqrt(); }}, 4.0);
  tf_unary<float_only>(r, "Exp", uf{[](auto x) { return std::exp(x); }, [](const auto& x) { return exp_or_zero(x); }}, 10.0);
  tf_unary<float_only>(r, "Expm1", sf{[](auto x) { return std::expm1(x); }}, 10.0);
  tf_unary<float_only>(r, "Log", uf{[](auto x) { return std::log(x); }, [](const auto& x) { return x.log(); }}, 10.0);
  tf_unary<float_only>(r, "Log1p", sf{[](auto x) { return std::log1p(x); }}, 10.0);
  tf_unary<float_only>(r, "Tanh", uf{[](auto x) { return std::tanh(x); }, [](const auto& x) { return x.tanh(); }}, 10.0);
  tf_unary<float_only>(r, "Sigmoid",
                        uf{[](auto x) {
                             using C = decltype(x);
                             return x >= C(0) ? C(1) / (C(1) + std::exp(-x)) : std::exp(x) / (C(1) + std::exp(x));
                           },
                           [](const auto& x) { return x.logistic(); }},
                        10.0);
  tf_unary<signed_numeric>(r, "Relu", uf{[](auto x) { return x < decltype(x)(0) ? decltype(x)(0) : x; },
                                          [](const auto& x) { return amax(x, 0); }});
  tf_unary<signed_numeric>(r, "Relu6", sf{[](auto x) {
                              using C = decltype(x);
                              return x < C(0) ? C(0) : (x > C(6) ? C(6) : x);
                            }});
  tf_unary<float_only>(r, "Elu", sf{[](auto x) { using C = decltype(x); return x < C(0) ? std::expm1(x) : x; }}, 10.0);
  tf_unary<float_only>(r, "Selu", sf{[](auto x) {
                          using C = decltype(x);
                          const C scale = C(1.0507009873554804934193349852946), alpha = C(1.6732632423543772848170429916717);
                          return x < C(0) ? scale * alpha * std::expm1(x) : scale * x;
                        }},
                        10.0);
  tf_unary<float_only>(r, "Softplus", sf{[](auto x) {
                          using C = decltype(x);
                          return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
                        }},
                        20.0);
  tf_unary<float_only>(r, "Softsign", uf{[](auto x) { return x / (decltype(x)(1) + std::abs(x)); },
                                          [](const auto& x) { return x / (x.abs() + scalar_of<decltype(x)>(1)); }},
                        2.0);
  r.add({.domain = domain, .op = "LeakyRelu", .dtypes = float_only::dtypes(), .make = [](const kernel_node& n) -> fn {
           const double alpha = n.attr<double>("alpha", 0.2);
           return unary_kernel<float_only, false>(sf{[alpha](auto x) { using C = decltype(x); return x < C(0) ? x * C(alpha) : x; }}, 2.0);
         }});
  tf_unary<float_only>(r, "Floor", uf{[](auto x) { return std::floor(x); }, [](const auto& x) { return x.floor(); }});
  tf_unary<float_only>(r, "Ceil", uf{[](auto x) { return std::ceil(x); }, [](const auto& x) { return x.ceil(); }});
  // TF Round and Rint: halves to even (the default floating-point rounding mode)
  const auto rint = sf{[](auto x) {
    if constexpr (std::is_floating_point_v<decltype(x)>) return std::nearbyint(x);
    else return x;
  }};
  tf_unary<signed_numeric>(r, "Round", rint);
  tf_unary<float_only>(r, "Rint", rint);
  tf_unary<signed_numeric>(r, "Sign", sf{[](auto x) {
                              using C = decltype(x);
                              if constexpr (std::is_floating_point_v<C>) {
                                if (std::isnan(x)) return x;
                              }
                              return C(x > C(0) ? 1 : (x < C(0) ? -1 : 0));
                            }});
  const auto recip = uf{[](auto x) {
                          if constexpr (std::is_integral_v<decltype(x)>) return div_int(decltype(x)(1), x);
                          else return decltype(x)(1) / x;
                        },
                        [](const auto& x) { return x.inverse(); }};
  tf_unary<signed_numeric>(r, "Reciprocal", recip, 2.0);
  tf_unary<signed_numeric>(r, "Inv", recip, 2.0);
  tf_unary<float_only>(r, "Sin", uf{[](auto x) { return std::sin(x); }, [](const auto& x) { return x.sin(); }}, 10.0);
  tf_unary<float_only>(r, "Cos", uf{[](auto x) { return std::cos(x); }, [](const auto& x) { return x.cos(); }}, 10.0);
  tf_unary<float_only>(r, "Tan", sf{[](auto x) { return std::tan(x); }}, 20.0);
  tf_unary<float_only>(r, "Asin", sf{[](auto x) { return std::asin(x); }}, 20.0);
  tf_unary<float_only>(r, "Acos", sf{[](auto x) { return std::acos(x); }}, 20.0);
  tf_unary<float_only>(r, "Atan", sf{[](auto x) { return std::atan(x); }}, 20.0);
  tf_unary<float_only>(r, "Sinh", sf{[](auto x) { return std::sinh(x); }}, 20.0);
  tf_unary<float_only>(r, "Cosh", sf{[](auto x) { return std::cosh(x); }}, 20.0);
  tf_unary<float_only>(r, "Erf", sf{[](auto x) { return std::erf(x); }}, 20.0);
  tf_unary<float_only>(r, "Asinh", sf{[](auto x) { return std::asinh(x); }}, 20.0);
  tf_unary<float_only>(r, "Acosh", sf{[](auto x) { return std::acosh(x); }}, 20.0);
  tf_unary<float_only>(r, "Atanh", sf{[](auto x) { return std::atanh(x); }}, 20.0);
  tf_unary<int_types>(r, "Invert", sf{[](auto x) { return static_cast<decltype(x)>(~x); }});
  tf_unary<float_only, true>(r, "IsNan", sf{[](auto x) { return std::isnan(x); }});
  tf_unary<float_only, true>(r, "IsInf", sf{[](auto x) { return std::isinf(x); }});
  tf_unary<float_only, true>(r, "IsFinite", sf{[](auto x) { return std::isfinite(x); }});
  tf_unary<bool_only>(r, "LogicalNot", sf{[](bool x) { return !x; }});
}


/// AddN, BiasAdd, Cast, Select, SelectV2, ClipByValue.
/// TensorFlow's fake quantization range: [min, max] moved so that 0 is one of the
/// quant_max - quant_min + 1 levels (all in float, as its kernels compute it).
struct fake_quant_range {
  float min, max, scale;
};
inline fake_quant_range nudge_fake_quant(float min, float max, int quant_min, int quant_max) {
  const float qmin = static_cast<float>(quant_min), qmax = static_cast<float>(quant_max);
  const float scale = (max - min) / (qmax - qmin);
  const float zero_from_min = qmin - min / scale;
  const float zero = zero_from_min < qmin ? qmin : zero_from_min > qmax ? qmax : std::round(zero_from_min);
  return {(qmin - zero) * scale, (qmax - zero) * scale, scale};
}

/// FakeQuantWithMinMaxArgs (min, max attributes) / FakeQuantWithMinMaxVars (scalar inputs):
/// clamp to the nudged range, round to the nearest level (halves up), back to float.
inline fn make_fake_quant(const kernel_node& n, bool vars) {
  const i64 bits = n.attr<i64>("num_bits", 8);
  if (bits < 2 || bits > 16) n.fail("num_bits must be in [2, 16], got " + std::to_string(bits));
  const int qmin = flag(n, "narrow_range", false) ? 1 : 0, qmax = (1 << bits) - 1;
  const float amin = static_cast<float>(n.attr<double>("min", -6.0)), amax = static_cast<float>(n.attr<double>("max", 6.0));
  if (!vars && !(amin < amax)) n.fail("min (" + std::to_string(amin) + ") must be less than max (" + std::to_string(amax) + ")");
  return [=](context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    if (x.element_type() != dtype::f32) ctx.fail("inputs must be float32");
    float lo = amin, hi = amax;
    if (vars) {
      for (std::size_t k : {std::size_t{1}, std::size_t{2}})
        if (ctx.input(k).element_type() != dtype::f32 || ctx.input(k).size() != 1 || ctx.input(k).rank() > 1)
          ctx.fail(std::string(k == 1 ? "min" : "max") + " must be a float32 scalar");
      lo = ctx.input(1).data<float>()[0];
      hi = ctx.input(2).data<float>()[0];
    }
    gpass::tensor& y = ctx.allocate_output(0, dtype::f32, x.sizes());
    const float* in = x.data<float>();
    float* out = y.data<float>();
    if (vars && lo == 0.0f && hi == 0.0f) {  // (TensorFlow: both zero -> zeros)
      std::fill(out, out + y.size(), 0.0f);
      return;
    }
    const fake_quant_range q = nudge_fake_quant(lo, hi, qmin, qmax);
    const float inv = 1.0f / q.scale;
    for (i64 i = 0; i < x.size(); ++i) {
      const float c = std::min(q.max, std::max(q.min, in[i])) - q.min;
      out[i] = std::floor(c * inv + 0.5f) * q.scale + q.min;
    }
  };
}

inline void register_tf_misc(registry& r) {
  using namespace ew;
  r.add({.domain = domain, .op = "FakeQuantWithMinMaxArgs", .dtypes = {dtype::f32},
         .make = [](const kernel_node& n) { return make_fake_quant(n, false); }});
  r.add({.domain = domain, .op = "FakeQuantWithMinMaxVars", .dtypes = {dtype::f32},
         .make = [](const kernel_node& n) { return make_fake_quant(n, true); }});
  r.add({.domain = domain, .op = "AddN", .dtypes = numeric_types::dtypes(), .make = [](const kernel_node&) -> fn {
           return variadic_kernel<numeric_types>(bf{[](auto a, auto b) { return add_w(a, b); }, [](const auto& x, const auto& y) { return x + y; }},
                                                 false, 1.0);
         }});
  auto bias_add = [](bool v1) {
    return [v1](const kernel_node& n) -> fn {
      const std::string fmt = v1 ? "NHWC" : n.attr<std::string>("data_format", "NHWC");
      if (fmt != "NHWC" && fmt != "NCHW") n.fail("data_format must be NHWC or NCHW, got '" + fmt + "'");
      const bool nchw = fmt == "NCHW";
      return [nchw](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        const gpass::tensor& b = ctx.input(1);
        if (x.element_type() != b.element_type()) ctx.fail("value and bias have different element types");
        const auto bs = tf_rules::bias_sizes(x.sizes(), b.sizes(), nchw, ctx.node());
        dispatch<numeric_types>(x.element_type(), ctx.node(), [&]<class T>() {
          gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
          if (y.size() == 0) return;
          binary_into<T, T, T>(ctx, x.data<T>(), x.sizes(), b.data<T>(), bs, y.data<T>(), x.sizes(),
                               bf{[](auto p, auto q) { return add_w(p, q); }, [](const auto& p, const auto& q) { return p + q; }}, 1.0);
        });
      };
    };
  };
  r.add({.domain = domain, .op = "BiasAdd", .dtypes = numeric_types::dtypes(), .make = bias_add(false)});
  r.add({.domain = domain, .op = "BiasAddV1", .dtypes = numeric_types::dtypes(), .make = bias_add(true)});
  r.add({.domain = domain, .op = "Cast", .dtypes = all_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const dtype to = type_attr(n, "DstT", dtype::undefined);
           if (to == dtype::undefined) n.fail("missing attribute 'DstT'");
           const dtype from = type_attr(n, "SrcT", dtype::undefined);
           const bool truncate = flag(n, "Truncate", false);
           return [to, from, truncate](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             if (from != dtype::undefined && x.element_type() != from)
               ctx.fail("input has element type " + std::string(to_string(x.element_type())) + ", SrcT is " + std::string(to_string(from)));
             // to bfloat16: rounded to nearest even (as cast_into does) unless Truncate
             if (to == dtype::bf16 && truncate && (x.element_type() == dtype::f32 || x.element_type() == dtype::f64)) {
               gpass::tensor& y = ctx.allocate_output(0, to, x.sizes());
               Eigen::bfloat16* o = y.data<Eigen::bfloat16>();
               dispatch<type_list<float, double>>(x.element_type(), ctx.node(), [&]<class S>() {
                 const S* p = x.data<S>();
                 for (i64 i = 0; i < x.size(); ++i) o[i] = to_bf16_truncated(static_cast<float>(p[i]));
               });
               return;
             }
             cast_into(ctx, x, to);
           };
         }});
  // Select (v1): the condition has the sizes of t and e, or is a scalar, or a vector that
  // picks rows (the first dimension) of t and e.
  r.add({.domain = domain, .op = "Select", .dtypes = all_types::dtypes(), .type_input = 1, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& c = ctx.input(0);
             const gpass::tensor& t = ctx.input(1);
             const gpass::tensor& e = ctx.input(2);
             where_into(ctx, c.reshaped(tf_rules::select_condition_sizes(c.sizes(), t.sizes(), e.sizes(), ctx.node())), t, e);
           };
         }});
  r.add({.domain = domain, .op = "SelectV2", .dtypes = all_types::dtypes(), .type_input = 1, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) { where_into(ctx, ctx.input(0), ctx.input(1), ctx.input(2)); };
         }});
  r.add({.domain = domain, .op = "ClipByValue", .dtypes = numeric_types::dtypes(), .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const gpass::tensor& lo = ctx.input(1);
             const gpass::tensor& hi = ctx.input(2);
             if (lo.element_type() != x.element_type() || hi.element_type() != x.element_type())
               ctx.fail("clip values have another element type than t");
             for (const gpass::tensor* b : {&lo, &hi})
               if (b->size() != 1 && b->sizes() != x.sizes())
                 ctx.fail("clip value of sizes " + b->shape().to_string() + " is neither a scalar nor of the sizes of t " + x.shape().to_string());
             auto one = [](const gpass::tensor& b) { return b.size() == 1 ? std::vector<i64>{} : b.sizes(); };
             dispatch<numeric_types>(x.element_type(), ctx.node(), [&]<class T>() {
               gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
               if (y.size() == 0) return;
               binary_into<T, T, T>(ctx, x.data<T>(), x.sizes(), lo.data<T>(), one(lo), y.data<T>(), x.sizes(),
                                    bsf{[](auto a, auto b) { return max_nan(a, b); }}, 1.0);
               binary_into<T, T, T>(ctx, y.data<T>(), x.sizes(), hi.data<T>(), one(hi), y.data<T>(), x.sizes(),
                                    bsf{[](auto a, auto b) { return min_nan(a, b); }}, 1.0);
             });
           };
         }});
}

/// Registers the TF element-wise kernels, AddN, BiasAdd, Cast, Select, ClipByValue.
inline void register_tf_elementwise(registry& r) {
  register_tf_binary(r);
  register_tf_unary(r);
  register_tf_misc(r);
}

}  // namespace gpass::exec::cpu_detail::tf_detail
