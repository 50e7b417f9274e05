// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file elementwise.hpp
/// The element-wise CUDA kernels: one description per op (`elementwise_op`: which element
/// types, what the body computes, the output's type), generated into a kernel per node and
/// input types by `cuda_codegen::elementwise_source` and compiled by NVRTC on first use.
/// Math, activations, comparisons, logic, bit operations, Cast, Where, Clip, and the
/// variadic Sum / Mean / Max / Min, and gpass::FusedElementwise (a chain of them as one
/// kernel), all broadcasting like NumPy.

#include <cmath>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/ops/fused_elementwise.hpp>

namespace gpass::exec {

namespace cuda_detail {

/// Which element types an op takes (its type-selecting input).
enum class types { floats, signed_numbers, numbers, integers, bools, all };

inline std::vector<dtype> dtypes_of(types t) {
  const std::vector<dtype> floats{dtype::f16, dtype::bf16, dtype::f32, dtype::f64};
  const std::vector<dtype> sints{dtype::int8, dtype::int16, dtype::int32, dtype::int64};
  const std::vector<dtype> uints{dtype::uint8, dtype::uint16, dtype::uint32, dtype::uint64};
  std::vector<dtype> r;
  auto add = [&](const std::vector<dtype>& v) { r.insert(r.end(), v.begin(), v.end()); };
  switch (t) {
    case types::floats: add(floats); break;
    case types::signed_numbers: add(floats); add(sints); break;
    case types::numbers: add(floats); add(sints); add(uints); break;
    case types::integers: add(sints); add(uints); break;
    case types::bools: r.push_back(dtype::bool_); break;
    case types::all: add(floats); add(sints); add(uints); r.push_back(dtype::bool_); break;
  }
  return r;
}

/// One element-wise op: `body(node, input types)` is the kernel body (see
/// `cuda_codegen::elementwise_spec`), `output(node, input types)` the output's type.
struct elementwise_op {
  std::string_view op;
  types accepts;
  std::function<std::string(const kernel_node&, const std::vector<dtype>&)> body;
  std::function<dtype(const kernel_node&, const std::vector<dtype>&)> output;  ///< null: input 0's type
  int min_inputs = 1, max_inputs = 1;
  int since = 1;
  int data_inputs = 16;  ///< inputs past these are read for their type only (CastLike's second)
  /// Reshapes the present inputs before broadcasting (PRelu-6's channel slope); may be null.
  std::function<void(const kernel_node&, std::vector<cuda_tensor>&)> prepare = nullptr;
  std::string_view domain = "";  ///< the op's domain ("": ONNX's)
};

inline std::string lit(double v, dtype t) { return cuda_codegen::literal(v, cuda_codegen::compute_type(t)); }

/// The kernel of one element-wise node: generated per list of input types.
inline fn make_elementwise(const elementwise_op& op) {
  auto lib = std::make_shared<lazy_library>();
  return [op, lib, name = std::string(op.op)](context& ctx) {
    std::vector<const cuda_tensor*> xs;
    std::vector<dtype> ts;
    for (std::size_t i = 0; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i)) {
        xs.push_back(&ctx.input(i));
        ts.push_back(xs.back()->element_type());
      } else if (static_cast<int>(i) < op.min_inputs) {
        ctx.fail("input " + std::to_string(i) + " is missing");
      } else {
        xs.push_back(nullptr);  // an omitted optional input (Clip's bounds): the body knows
        ts.push_back(dtype::undefined);
      }
    for (dtype t : ts)
      if (t != dtype::undefined && !cuda_codegen::supported(t))
        ctx.fail("no CUDA kernel for element type " + std::string(to_string(t)));
    const dtype out = op.output ? op.output(ctx.node(), ts) : ts.at(0);
    std::string key = std::string(to_string(out));
    for (dtype t : ts) key += ",", key += to_string(t);
    std::vector<cuda_tensor> present;
    std::vector<dtype> present_types;
    for (std::size_t i = 0; i < xs.size() && static_cast<int>(i) < op.data_inputs; ++i)
      if (xs[i]) {
        present.push_back(*xs[i]);
        present_types.push_back(ts[i]);
      }
    if (op.prepare) op.prepare(ctx.node(), present);
    std::vector<std::vector<std::int64_t>> shapes;
    std::vector<const cuda_tensor*> operands;
    for (const auto& t : present) {
      shapes.push_back(t.sizes());
      operands.push_back(&t);
    }
    const auto& k = lib->get(ctx.policy(), key, {"ew_flat", "ew_strided"}, [&] {
      return cuda_codegen::elementwise_source({present_types, out, op.body(ctx.node(), ts)});
    });
    auto& y = ctx.allocate_output(0, out, broadcast_sizes(ctx, shapes));
    launch_elementwise(ctx, k, y, operands);
  };
}

/// Binary `x0 <op> x1` of one type.
inline elementwise_op binary(std::string_view name, types t, std::string expr) {
  return {name, t, [expr](const kernel_node&, const std::vector<dtype>&) { return "r = (R)(" + expr + ");"; }, nullptr, 2, 2};
}
inline elementwise_op unary(std::string_view name, types t, std::string expr) {
  return {name, t, [expr](const kernel_node&, const std::vector<dtype>&) { return "r = (R)(" + expr + ");"; }, nullptr, 1, 1};
}
inline elementwise_op compare(std::string_view name, std::string expr) {
  return {name, types::all, [expr](const kernel_node&, const std::vector<dtype>&) { return "r = " + expr + ";"; },
          [](const kernel_node&, const std::vector<dtype>&) { return dtype::bool_; }, 2, 2};
}
/// A unary float op whose body reads the node's float attributes.
inline elementwise_op activation(std::string_view name, std::function<std::string(const kernel_node&, dtype)> body) {
  return {name, types::floats, [body](const kernel_node& n, const std::vector<dtype>& ts) { return body(n, ts[0]); }, nullptr, 1, 1};
}

/// Every element-wise op of the default domain.
inline std::vector<elementwise_op> elementwise_ops() {
  std::vector<elementwise_op> ops;
  // arithmetic (integer division by zero gives 0 instead of trapping)
  ops.push_back(binary("Add", types::numbers, "x0 + x1"));
  ops.push_back(binary("Sub", types::numbers, "x0 - x1"));
  ops.push_back(binary("Mul", types::numbers, "x0 * x1"));
  ops.push_back({"Div", types::numbers,
                 [](const kernel_node&, const std::vector<dtype>& ts) {
                   return cuda_codegen::is_int(ts[0]) ? std::string("r = x1 == 0 ? (R)0 : (R)(x0 / x1);") : std::string("r = x0 / x1;");
                 },
                 nullptr, 2, 2});
  ops.push_back({"Pow", types::numbers,
                 [](const kernel_node&, const std::vector<dtype>& ts) {
                   if (ts[0] == dtype::f64 || cuda_codegen::is_int(ts[0])) return std::string("r = (R)g_pow((double)x0, (double)x1);");
                   return std::string("r = (R)g_pow((float)x0, (float)x1);");
                 },
                 nullptr, 2, 2});
  ops.push_back({"Mod", types::numbers,
                 [](const kernel_node& n, const std::vector<dtype>& ts) {
                   const bool fm = n.attr<std::int64_t>("fmod", 0) != 0;
                   if (cuda_codegen::is_float(ts[0])) {
                     if (fm) return std::string("r = g_fmod(x0, x1);");
                     return std::string("{ R m = g_fmod(x0, x1); if (m != (R)0 && ((m < (R)0) != (x1 < (R)0))) m += x1; r = m; }");
                   }
                   if (fm || cuda_codegen::is_unsigned_int(ts[0])) return std::string("r = x1 == 0 ? (R)0 : (R)(x0 % x1);");
                   return std::string("if (x1 == 0) r = 0; else { R m = (R)(x0 % x1); if (m != 0 && ((m < 0) != (x1 < 0))) m += x1; r = m; }");
                 },
                 nullptr, 2, 2});
  ops.push_back({"PRelu", types::signed_numbers,
                 [](const kernel_node&, const std::vector<dtype>&) { return std::string("r = x0 < (R)0 ? (R)(x1 * x0) : x0;"); },
                 nullptr, 2, 2, 1, 16,
                 // opset < 7: a 1-D slope of the channel count applies along axis 1
                 [](const kernel_node& n, std::vector<cuda_tensor>& v) {
                   if (n.opset > 0 && n.opset < 7 && v.size() == 2 && v[1].rank() == 1 && v[0].rank() >= 2 &&
                       v[1].sizes()[0] == v[0].sizes()[1] && v[1].sizes()[0] != 1) {
                     std::vector<std::int64_t> s(v[0].rank() - 1, 1);
                     s[0] = v[1].sizes()[0];
                     v[1] = v[1].reshaped(s);
                   }
                 }});
  // variadic
  auto fold = [](std::string_view name, std::string step, bool mean) {
    return elementwise_op{name, types::numbers,
                          [step, mean](const kernel_node&, const std::vector<dtype>& ts) {
                            std::string b = "r = x0;";
                            for (std::size_t i = 1; i < ts.size(); ++i) {
                              std::string s = step;
                              for (std::size_t p; (p = s.find('#')) != std::string::npos;) s.replace(p, 1, "x" + std::to_string(i));
                              b += " r = (R)(" + s + ");";
                            }
                            if (mean) b += " r = (R)(r / (R)" + std::to_string(ts.size()) + ");";
                            return b;
                          },
                          nullptr, 1, 16};
  };
  ops.push_back(fold("Sum", "r + #", false));
  ops.push_back(fold("Mean", "r + #", true));
  ops.push_back(fold("Max", "g_max(r, (R)#)", false));
  ops.push_back(fold("Min", "g_min(r, (R)#)", false));
  // comparisons and logic
  ops.push_back(compare("Equal", "x0 == x1"));
  ops.push_back(compare("Less", "x0 < x1"));
  ops.push_back(compare("Greater", "x0 > x1"));
  ops.push_back(compare("LessOrEqual", "x0 <= x1"));
  ops.push_back(compare("GreaterOrEqual", "x0 >= x1"));
  ops.push_back(binary("And", types::bools, "x0 && x1"));
  ops.push_back(binary("Or", types::bools, "x0 || x1"));
  ops.push_back(binary("Xor", types::bools, "x0 != x1"));
  ops.push_back(unary("Not", types::bools, "!x0"));
  ops.push_back(binary("BitwiseAnd", types::integers, "x0 & x1"));
  ops.push_back(binary("BitwiseOr", types::integers, "x0 | x1"));
  ops.push_back(binary("BitwiseXor", types::integers, "x0 ^ x1"));
  ops.push_back(unary("BitwiseNot", types::integers, "~x0"));
  ops.push_back({"BitShift", types::integers,
                 [](const kernel_node& n, const std::vector<dtype>& ts) {
                   const bool left = n.attr<std::string>("direction") == "LEFT";
                   const int bits = static_cast<int>(size_of(ts[0]) * 8);
                   return "r = (x1 < 0 || x1 >= " + std::to_string(bits) + ") ? (R)0 : (R)(x0 " + (left ? "<<" : ">>") + " x1);";
                 },
                 nullptr, 2, 2});
  // unary math
  ops.push_back(unary("Abs", types::numbers, "x0 < (R)0 ? (R)(-x0) : x0"));
  ops.push_back(unary("Neg", types::signed_numbers, "-x0"));
  ops.push_back(unary("Sign", types::numbers, "(x0 > (R)0) ? (R)1 : (x0 < (R)0 ? (R)(-1) : (R)0)"));
  for (auto [name, f] : std::initializer_list<std::pair<std::string_view, std::string_view>>{
           {"Exp", "g_exp"}, {"Log", "g_log"}, {"Sqrt", "g_sqrt"}, {"Erf", "g_erf"}, {"Sin", "g_sin"}, {"Cos", "g_cos"},
           {"Tan", "g_tan"}, {"Asin", "g_asin"}, {"Acos", "g_acos"}, {"Atan", "g_atan"}, {"Sinh", "g_sinh"},
           {"Cosh", "g_cosh"}, {"Tanh", "g_tanh"}, {"Asinh", "g_asinh"}, {"Acosh", "g_acosh"}, {"Atanh", "g_atanh"},
           {"Floor", "g_floor"}, {"Ceil", "g_ceil"}, {"Round", "g_rint"}})
    ops.push_back(unary(name, types::floats, std::string(f) + "(x0)"));
  ops.push_back(unary("Reciprocal", types::floats, "(R)1 / x0"));
  ops.push_back(unary("Sigmoid", types::floats, "x0 >= (R)0 ? (R)1 / ((R)1 + g_exp(-x0)) : g_exp(x0) / ((R)1 + g_exp(x0))"));
  ops.push_back(unary("Softplus", types::floats, "x0 > (R)0 ? x0 + g_log1p(g_exp(-x0)) : g_log1p(g_exp(x0))"));
  ops.push_back(unary("Softsign", types::floats, "x0 / ((R)1 + g_fabs(x0))"));
  ops.push_back(unary("Relu", types::signed_numbers, "x0 > (R)0 ? x0 : (R)0"));
  ops.push_back(unary("HardSwish", types::floats, "x0 * g_max((R)0, g_min((R)1, x0 / (R)6 + (R)0.5))"));
  ops.push_back(unary("Mish", types::floats, "x0 * g_tanh(x0 > (R)0 ? x0 + g_log1p(g_exp(-x0)) : g_log1p(g_exp(x0)))"));
  ops.push_back(activation("LeakyRelu", [](const kernel_node& n, dtype t) {
    return "r = x0 >= (R)0 ? x0 : (R)(" + lit(n.attr<double>("alpha", 0.01), t) + " * x0);";
  }));
  ops.push_back(activation("Elu", [](const kernel_node& n, dtype t) {
    return "r = x0 >= (R)0 ? x0 : (R)(" + lit(n.attr<double>("alpha", 1.0), t) + " * g_expm1(x0));";
  }));
  ops.push_back(activation("Selu", [](const kernel_node& n, dtype t) {
    const std::string a = lit(n.attr<double>("alpha", 1.67326319217681884765625), t);
    const std::string g = lit(n.attr<double>("gamma", 1.05070102214813232421875), t);
    return "r = x0 > (R)0 ? (R)(" + g + " * x0) : (R)(" + g + " * (" + a + " * g_exp(x0) - " + a + "));";
  }));
  ops.push_back(activation("Celu", [](const kernel_node& n, dtype t) {
    const std::string a = lit(n.attr<double>("alpha", 1.0), t);
    return "r = g_max((R)0, x0) + g_min((R)0, (R)(" + a + " * (g_exp(x0 / " + a + ") - (R)1)));";
  }));
  ops.push_back(activation("ThresholdedRelu", [](const kernel_node& n, dtype t) {
    return "r = x0 > " + lit(n.attr<double>("alpha", 1.0), t) + " ? x0 : (R)0;";
  }));
  ops.push_back(activation("HardSigmoid", [](const kernel_node& n, dtype t) {
    return "r = g_max((R)0, g_min((R)1, (R)(" + lit(n.attr<double>("alpha", 0.2), t) + " * x0 + " +
           lit(n.attr<double>("beta", 0.5), t) + ")));";
  }));
  ops.push_back(activation("Shrink", [](const kernel_node& n, dtype t) {
    const std::string l = lit(n.attr<double>("lambd", 0.5), t), b = lit(n.attr<double>("bias", 0.0), t);
    return "r = x0 < -" + l + " ? (R)(x0 + " + b + ") : (x0 > " + l + " ? (R)(x0 - " + b + ") : (R)0);";
  }));
  ops.push_back(activation("Swish", [](const kernel_node& n, dtype t) {  // x * sigmoid(alpha x), stable for large |alpha x|
    const std::string z = "(R)(" + lit(n.attr<double>("alpha", 1.0), t) + " * x0)";
    return "r = x0 * (" + z + " >= (R)0 ? (R)1 / ((R)1 + g_exp(-" + z + ")) : g_exp(" + z + ") / ((R)1 + g_exp(" + z + ")));";
  }));
  ops.push_back(activation("Gelu", [](const kernel_node& n, dtype) {
    if (n.attr<std::string>("approximate", "none") == "tanh")
      return std::string("r = (R)0.5 * x0 * ((R)1 + g_tanh((R)0.7978845608028654 * (x0 + (R)0.044715 * x0 * x0 * x0)));");
    return std::string("r = (R)0.5 * x0 * ((R)1 + g_erf(x0 * (R)0.7071067811865476));");
  }));
  // the Gelu forms of the optimizer (gpass::Gelu, -O3's fusion of the erf pattern) and of
  // ONNX Runtime's contrib domain; a bias input (BiasGelu, FastGelu) is along the last axis
  const std::string erf_gelu = "r = (R)0.5 * v * ((R)1 + g_erf(v * (R)0.7071067811865476));";
  const std::string tanh_gelu = "r = (R)0.5 * v * ((R)1 + g_tanh((R)0.7978845608028654 * (v + (R)0.044715 * v * v * v)));";
  auto with_bias = [](std::string body) {
    return [body](const kernel_node&, const std::vector<dtype>& ts) {
      return std::string(ts.size() > 1 && ts[1] != dtype::undefined ? "R v = x0 + (R)x1; " : "R v = x0; ") + body;
    };
  };
  {
    elementwise_op g = ops[ops.size() - 1];  // ONNX's Gelu (last added), approximate attribute and all
    g.domain = "gpass";
    ops.push_back(g);
  }
  ops.push_back({"Gelu", types::floats, with_bias(erf_gelu), nullptr, 1, 1, 1, 16, nullptr, "com.microsoft"});
  ops.push_back({"BiasGelu", types::floats, with_bias(erf_gelu), nullptr, 2, 2, 1, 16, nullptr, "com.microsoft"});
  ops.push_back({"FastGelu", types::floats, with_bias(tanh_gelu), nullptr, 1, 2, 1, 16, nullptr, "com.microsoft"});
  ops.push_back({"QuickGelu", types::floats,
                 [](const kernel_node& n, const std::vector<dtype>& ts) {
                   return "r = x0 / ((R)1 + g_exp(-" + lit(n.attr<double>("alpha", 1.702), ts[0]) + " * x0));";
                 },
                 nullptr, 1, 1, 1, 16, nullptr, "com.microsoft"});
  ops.push_back({"IsNaN", types::floats, [](const kernel_node&, const std::vector<dtype>&) { return std::string("r = x0 != x0;"); },
                 [](const kernel_node&, const std::vector<dtype>&) { return dtype::bool_; }, 1, 1});
  ops.push_back({"IsInf", types::floats,
                 [](const kernel_node& n, const std::vector<dtype>&) {
                   const bool neg = n.attr<std::int64_t>("detect_negative", 1) != 0, pos = n.attr<std::int64_t>("detect_positive", 1) != 0;
                   return std::string("r = ") + (pos ? "x0 == (C0)(1.0/0.0)" : "false") + " || " + (neg ? "x0 == (C0)(-1.0/0.0)" : "false") + ";";
                 },
                 [](const kernel_node&, const std::vector<dtype>&) { return dtype::bool_; }, 1, 1});
  // selection and conversion
  ops.push_back({"Where", types::bools, [](const kernel_node&, const std::vector<dtype>&) { return std::string("r = x0 ? (R)x1 : (R)x2;"); },
                 [](const kernel_node&, const std::vector<dtype>& ts) { return ts.at(1); }, 3, 3});
  ops.push_back({"Clip", types::numbers,
                 [](const kernel_node& n, const std::vector<dtype>& ts) {
                   std::string b = "r = x0;";
                   int k = 1;  // the body's parameters are the present inputs, in order
                   if (n.opset > 0 && n.opset < 11) {
                     b += " r = g_max(r, " + lit(n.attr<double>("min", -3.4028234663852886e38), ts[0]) + ");";
                     b += " r = g_min(r, " + lit(n.attr<double>("max", 3.4028234663852886e38), ts[0]) + ");";
                     return b;
                   }
                   if (ts.size() > 1 && ts[1] != dtype::undefined) b += " r = g_max(r, (R)x" + std::to_string(k++) + ");";
                   if (ts.size() > 2 && ts[2] != dtype::undefined) b += " r = g_min(r, (R)x" + std::to_string(k++) + ");";
                   return b;
                 },
                 nullptr, 1, 3});
  // Cast: `to` is a dtype or an ONNX data type number; strings and the low-precision types
  // have no CUDA kernel (the placer leaves such nodes on the CPU)
  ops.push_back({"Cast", types::all, [](const kernel_node&, const std::vector<dtype>&) { return std::string("r = (R)x0;"); },
                 [](const kernel_node& n, const std::vector<dtype>&) {
                   auto it = n.attrs.find("to");
                   dtype t = dtype::undefined;
                   if (it != n.attrs.end() && it->second.is<dtype>()) t = it->second.as<dtype>();
                   else if (it != n.attrs.end() && it->second.is<std::int64_t>())
                     t = dtype_from_onnx_code(it->second.as<std::int64_t>()).value_or(dtype::undefined);
                   if (!cuda_codegen::supported(t)) n.fail("no CUDA kernel casting to " + std::string(to_string(t)));
                   return t;
                 },
                 1, 1});
  ops.push_back({"CastLike", types::all, [](const kernel_node&, const std::vector<dtype>&) { return std::string("r = (R)x0;"); },
                 [](const kernel_node&, const std::vector<dtype>& ts) { return ts.at(1); }, 2, 2, 1, 1});
  // gpass::FusedElementwise (fuse-elementwise): the program's steps composed from the bodies
  // above, each in a block of its own where x0 / x1 are its operands and r its result
  {
    std::map<std::string, elementwise_op, std::less<>> parts;
    for (const auto& o : ops)
      if (o.domain.empty() && fused_op_arity(o.op) != 0) parts.emplace(std::string(o.op), o);
    ops.push_back({"FusedElementwise", types::floats,
                   [parts](const kernel_node& n, const std::vector<dtype>& ts) {
                     const std::vector<fused_step> steps = parse_fused_program(
                         n.attr<std::vector<std::string>>("program", {}), ts.size(), [&](const std::string& m) { n.fail(m); });
                     std::string b;
                     for (std::size_t k = 0; k < steps.size(); ++k) {
                       const auto& st = steps[k];
                       const auto part = parts.find(st.op);
                       if (part == parts.end()) n.fail("no CUDA body for '" + st.op + "'");
                       auto operand = [](int a) { return a >= 0 ? "(R)x" + std::to_string(a) : "s" + std::to_string(-a - 1); };
                       b += "R s" + std::to_string(k) + "; { const R a_ = " + operand(st.args[0]) + ";";
                       if (st.arity == 2) b += " const R b_ = " + operand(st.args[1]) + ";";
                       b += " { const R x0 = a_;";
                       if (st.arity == 2) b += " const R x1 = b_;";
                       b += " R r; " + part->second.body(n, std::vector<dtype>(static_cast<std::size_t>(st.arity), ts.at(0))) + " s" +
                            std::to_string(k) + " = r; } }\n  ";
                     }
                     return b + "r = s" + std::to_string(steps.size() - 1) + ";";
                   },
                   nullptr, 1, 16, 1, 16, nullptr, "gpass"});
  }
  return ops;
}

/// Every source the element-wise family generates for each op and each type it accepts (the
/// attributes at their defaults, but BitShift LEFT and Cast to f16): (name, source).
inline std::vector<std::pair<std::string, std::string>> elementwise_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (const auto& op : elementwise_ops()) {
    kernel_node n{.name = "n", .op = std::string(op.op), .domain = std::string(op.domain), .opset = 21};
    if (op.op == "BitShift") n.attrs["direction"] = std::string("LEFT");
    if (op.op == "Cast") n.attrs["to"] = dtype::f16;
    if (op.op == "FusedElementwise") {  // every op a program may use, chained, on one input
      std::vector<std::string> program;
      auto prev = [&] { return program.empty() ? std::string("x0") : "s" + std::to_string(program.size() - 1); };
      for (auto u : fused_unary_ops) program.push_back(std::string(u) + " " + prev());
      for (auto b : fused_binary_ops) program.push_back(std::string(b) + " " + prev() + " x0");
      n.attrs["program"] = program;
    }
    for (dtype t : dtypes_of(op.accepts)) {
      std::vector<dtype> ts(static_cast<std::size_t>(op.min_inputs), t);
      if (op.op == "Where") ts = {dtype::bool_, dtype::f32, dtype::f32};
      if (op.op == "Clip") ts = {t, t, t};
      const dtype out = op.output ? op.output(n, ts) : ts[0];
      std::vector<dtype> data(ts.begin(), ts.begin() + std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(ts.size()), op.data_inputs));
      r.emplace_back((op.domain.empty() ? "" : std::string(op.domain) + "::") + std::string(op.op) + "_" + std::string(to_string(t)),
                     cuda_codegen::elementwise_source({data, out, op.body(n, ts)}));
    }
  }
  return r;
}

}  // namespace cuda_detail

/// Registers the element-wise CUDA kernels.
inline void register_cuda_elementwise(kernel_registry<cuda>& r) {
  for (const auto& op : cuda_detail::elementwise_ops())
    r.add({.domain = std::string(op.domain), .op = std::string(op.op), .since_version = op.since, .dtypes = cuda_detail::dtypes_of(op.accepts),
           .make = [op](const kernel_node&) { return cuda_detail::make_elementwise(op); }});
}

}  // namespace gpass::exec
