// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf.hpp
/// CUDA kernels of TensorFlow ops (domain "tf"), so that the nodes of an imported TF graph run
/// on the GPU rather than each going back to the CPU:
///
/// - element-wise, generated like ONNX's (elementwise.hpp) with TensorFlow's semantics as the
///   Eigen CPU kernels define them (tf_elementwise.hpp): Add AddV2 Sub Mul RealDiv Div TruncateDiv
///   FloorDiv FloorMod TruncateMod Mod Maximum Minimum Pow SquaredDifference Atan2 DivNoNan
///   MulNoNan, comparisons, logic, bitwise ops, LeftShift RightShift, the unary math and
///   activations (Relu6, Elu, Selu, LeakyRelu, Rsqrt, Square, ...), AddN, BiasAdd(V1), Cast
///   (Truncate too), Select, SelectV2, ClipByValue, ZerosLike, OnesLike; the activation
///   gradients ReluGrad, Relu6Grad, TanhGrad, SigmoidGrad;
/// - Const (uploaded once); views: Identity StopGradient Snapshot PreventGradient
///   PlaceholderWithDefault, EnsureShape, IdentityN, Reshape (0 is a size, not "copy"),
///   ExpandDims, Squeeze; NoOp;
/// - shapes and data movement: Shape ShapeN Size Rank (out_type, written to the device),
///   ConcatV2 Concat Pack Unpack Split SplitV Slice StridedSlice ReverseV2 Tile BroadcastTo Fill,
///   Where (one input: ONNX's NonZero, transposed), GatherNd, ScatterNd, TensorScatterUpdate /
///   Add / Sub / Max / Min (ONNX's GatherND / ScatterND), UnsortedSegmentSum / Prod / Max / Min
///   and SegmentSum / Mean / Prod / Max / Min (ONNX's ScatterND with a reduction over the
///   reduction's identity, `segment_kernels`), Gather, GatherV2 (batch_dims 0; constant indices checked to be in [0, dim) as TF does),
///   Pad PadV2 MirrorPad (REFLECT), with TF's shape rules (`tf_rules`);
/// - through ONNX's CUDA kernels: Transpose (and ConjugateTranspose of real tensors), MatMul (transpose_a / transpose_b) and
///   BatchMatMul / V2 / V3 (adjoints as transposed operands; cuBLASLt), Sum Mean Max Min Prod EuclideanNorm All
///   Any (reduction indices as TF reads them: negative, repeated), BiasAddGrad, ArgMax / ArgMin (int64
///   output; int32 through ONNX's Cast), TopK / TopKV2 (ONNX's TopK), Cumsum / Cumprod, Softmax / LogSoftmax (last axis); Conv2D,
///   DepthwiseConv2dNative, MaxPool, MaxPoolV2, AvgPool in NHWC or NCHW (f32, f64; grouped Conv2D too),
///   Conv3D, MaxPool3D, AvgPool3D in NDHWC
///   as ONNX's Conv / MaxPool / AveragePool between transposes; Conv2DBackpropInput and
///   DepthwiseConv2dNativeBackpropInput (NHWC) as ONNX's ConvTranspose; Conv2DBackpropFilter and
///   DepthwiseConv2dNativeBackpropFilter (NHWC) on cuDNN's backward filter; FusedBatchNorm / V2 /
///   V3 in inference.
///
/// Integer divisions and modulos stay on the CPU: TensorFlow fails on an integer division by
/// zero, which a GPU kernel cannot report. Registered by `register_cuda_tf`, after the ONNX
/// families whose kernels it reuses.

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/kernels/array.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/control.hpp>
#include <gpass/exec/cuda/kernels/elementwise.hpp>
#include <gpass/exec/cuda/kernels/linalg.hpp>
#include <gpass/exec/cuda/kernels/reduce.hpp>
#include <gpass/exec/cuda/kernels/select.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/scratch.hpp>
#include <gpass/exec/shape_rules.hpp>
#include <gpass/exec/tf_rules.hpp>

namespace gpass::exec {

namespace cuda_tf {

using cuda_detail::context;
using cuda_detail::elementwise_op;
using cuda_detail::fn;
using cuda_detail::lit;
using cuda_detail::types;
using i64 = std::int64_t;

using tf_rules::flag;
using tf_rules::tf_axis;
using tf_rules::type_attr;

/// `expr` (a float expression) rounded to the 16-bit type `t` and back, so that a step the CPU
/// takes in half or bfloat16 precision rounds the same way here; `expr` itself otherwise.
inline std::string rounded(dtype t, const std::string& expr) {
  if (t == dtype::f16) return "g_to_float(g_to_half(" + expr + "))";
  if (t == dtype::bf16) return "g_to_float(g_to_bf16(" + expr + "))";
  return expr;
}

inline elementwise_op tf_op(std::string_view name, types t, std::function<std::string(const kernel_node&, const std::vector<dtype>&)> body,
                            int inputs = 1) {
  return {name, t, std::move(body), nullptr, inputs, inputs, 1, 16, nullptr, "tf"};
}
inline elementwise_op tf_expr(std::string_view name, types t, std::string expr, int inputs = 1) {
  return tf_op(name, t, [expr](const kernel_node&, const std::vector<dtype>&) { return "r = (R)(" + expr + ");"; }, inputs);
}
inline elementwise_op tf_predicate(std::string_view name, types t, std::string expr, int inputs) {
  elementwise_op op = tf_op(name, t, [expr](const kernel_node&, const std::vector<dtype>&) { return "r = " + expr + ";"; }, inputs);
  op.output = [](const kernel_node&, const std::vector<dtype>&) { return dtype::bool_; };
  return op;
}

/// TensorFlow's element-wise ops (see the file comment).
inline std::vector<elementwise_op> tf_elementwise_ops() {
  std::vector<elementwise_op> ops;
  // arithmetic (integers wrap, as the CPU kernels' add_w / mul_w)
  for (auto name : {"Add", "AddV2"}) ops.push_back(tf_expr(name, types::numbers, "x0 + x1", 2));
  ops.push_back(tf_expr("Sub", types::numbers, "x0 - x1", 2));
  ops.push_back(tf_expr("Mul", types::numbers, "x0 * x1", 2));
  for (auto name : {"RealDiv", "Div", "TruncateDiv"}) ops.push_back(tf_expr(name, types::floats, "x0 / x1", 2));
  ops.push_back(tf_op("FloorDiv", types::floats, [](const kernel_node&, const std::vector<dtype>& ts) {
    return "r = g_floor(" + rounded(ts[0], "x0 / x1") + ");";
  }, 2));
  // FloorMod: the remainder with the divisor's sign
  ops.push_back(tf_op("FloorMod", types::floats, [](const kernel_node&, const std::vector<dtype>&) {
    return std::string("{ R m = g_fmod(x0, x1); if (m != (R)0 && ((m < (R)0) != (x1 < (R)0))) m += x1; r = m; }");
  }, 2));
  for (auto name : {"TruncateMod", "Mod"}) ops.push_back(tf_expr(name, types::floats, "g_fmod(x0, x1)", 2));
  // NaN-propagating (g_max / g_min return a NaN operand)
  ops.push_back(tf_expr("Maximum", types::numbers, "g_max(x0, (C0)x1)", 2));
  ops.push_back(tf_expr("Minimum", types::numbers, "g_min(x0, (C0)x1)", 2));
  ops.push_back(tf_op("Pow", types::floats, [](const kernel_node&, const std::vector<dtype>& ts) {
    return std::string(ts[0] == dtype::f64 ? "r = g_pow(x0, x1);" : "r = (R)g_pow((float)x0, (float)x1);");
  }, 2));
  ops.push_back(tf_op("SquaredDifference", types::numbers, [](const kernel_node&, const std::vector<dtype>& ts) {
    return "{ const R d = (R)" + rounded(ts[0], "x0 - x1") + "; r = (R)(d * d); }";
  }, 2));
  ops.push_back(tf_expr("Atan2", types::floats, "g_atan2(x0, x1)", 2));
  ops.push_back(tf_expr("DivNoNan", types::floats, "x1 == (C1)0 ? (R)0 : (R)(x0 / x1)", 2));
  ops.push_back(tf_expr("MulNoNan", types::floats, "x1 == (C1)0 ? (R)0 : (R)(x0 * x1)", 2));
  // comparisons and logic
  for (auto [name, e] : std::initializer_list<std::pair<const char*, const char*>>{
           {"Less", "x0 < x1"}, {"LessEqual", "x0 <= x1"}, {"Greater", "x0 > x1"}, {"GreaterEqual", "x0 >= x1"}})
    ops.push_back(tf_predicate(name, types::numbers, e, 2));
  ops.push_back(tf_predicate("Equal", types::all, "x0 == x1", 2));
  ops.push_back(tf_predicate("NotEqual", types::all, "x0 != x1", 2));
  ops.push_back(tf_expr("LogicalAnd", types::bools, "x0 && x1", 2));
  ops.push_back(tf_expr("LogicalOr", types::bools, "x0 || x1", 2));
  ops.push_back(tf_expr("LogicalNot", types::bools, "!x0"));
  ops.push_back(tf_expr("BitwiseAnd", types::integers, "x0 & x1", 2));
  ops.push_back(tf_expr("BitwiseOr", types::integers, "x0 | x1", 2));
  ops.push_back(tf_expr("BitwiseXor", types::integers, "x0 ^ x1", 2));
  ops.push_back(tf_expr("Invert", types::integers, "~x0"));
  // shifts by y clamped to [0, bits - 1]; left shifts of signed values through the unsigned type
  auto shift = [](bool left) {
    return [left](const kernel_node&, const std::vector<dtype>& ts) {
      const std::string top = std::to_string(size_of(ts[0]) * 8 - 1);
      const std::string s = "const int s = x1 < (C1)0 ? 0 : (x1 > (C1)" + top + " ? " + top + " : (int)x1);";
      if (!left) return "{ " + s + " r = (R)(x0 >> s); }";
      std::string u(cuda_codegen::storage_type(ts[0]));
      if (u.rfind("unsigned", 0) != 0) u = u == "signed char" ? "unsigned char" : "unsigned " + u;
      return "{ " + s + " r = (R)((" + u + ")x0 << s); }";
    };
  };
  ops.push_back(tf_op("LeftShift", types::integers, shift(true), 2));
  ops.push_back(tf_op("RightShift", types::integers, shift(false), 2));
  // unary math
  ops.push_back(tf_expr("Neg", types::signed_numbers, "-x0"));
  ops.push_back(tf_op("Abs", types::signed_numbers, [](const kernel_node&, const std::vector<dtype>& ts) {
    return std::string(cuda_codegen::is_float(ts[0]) ? "r = (R)g_fabs(x0);" : "r = (R)(x0 < (C0)0 ? -x0 : x0);");
  }));
  ops.push_back(tf_expr("Square", types::numbers, "x0 * x0"));
  ops.push_back(tf_expr("Rsqrt", types::floats, "(C0)1 / g_sqrt(x0)"));
  for (auto [name, f] : std::initializer_list<std::pair<const char*, const char*>>{
           {"Sqrt", "g_sqrt"}, {"Exp", "g_exp"}, {"Expm1", "g_expm1"}, {"Log", "g_log"}, {"Log1p", "g_log1p"}, {"Tanh", "g_tanh"},
           {"Sin", "g_sin"}, {"Cos", "g_cos"}, {"Tan", "g_tan"}, {"Asin", "g_asin"}, {"Acos", "g_acos"}, {"Atan", "g_atan"},
           {"Sinh", "g_sinh"}, {"Cosh", "g_cosh"}, {"Erf", "g_erf"}, {"Asinh", "g_asinh"}, {"Acosh", "g_acosh"},
           {"Atanh", "g_atanh"}, {"Floor", "g_floor"}, {"Ceil", "g_ceil"}, {"Rint", "g_rint"}})
    ops.push_back(tf_expr(name, types::floats, std::string(f) + "(x0)"));
  // Round: halves to even; integers unchanged
  ops.push_back(tf_op("Round", types::signed_numbers, [](const kernel_node&, const std::vector<dtype>& ts) {
    return std::string(cuda_codegen::is_float(ts[0]) ? "r = (R)g_rint(x0);" : "r = (R)x0;");
  }));
  ops.push_back(tf_expr("Sign", types::signed_numbers, "x0 != x0 ? x0 : (x0 > (C0)0 ? (C0)1 : (x0 < (C0)0 ? (C0)(-1) : (C0)0))"));
  for (auto name : {"Reciprocal", "Inv"}) ops.push_back(tf_expr(name, types::floats, "(C0)1 / x0"));
  ops.push_back(tf_expr("Sigmoid", types::floats, "x0 >= (C0)0 ? (C0)1 / ((C0)1 + g_exp(-x0)) : g_exp(x0) / ((C0)1 + g_exp(x0))"));
  ops.push_back(tf_expr("Relu", types::signed_numbers, "x0 < (C0)0 ? (C0)0 : x0"));
  ops.push_back(tf_expr("Relu6", types::signed_numbers, "x0 < (C0)0 ? (C0)0 : (x0 > (C0)6 ? (C0)6 : x0)"));
  ops.push_back(tf_expr("Elu", types::floats, "x0 < (C0)0 ? g_expm1(x0) : x0"));
  ops.push_back(tf_op("Selu", types::floats, [](const kernel_node&, const std::vector<dtype>& ts) {
    const std::string scale = lit(1.0507009873554804934193349852946, ts[0]), alpha = lit(1.6732632423543772848170429916717, ts[0]);
    return "r = x0 < (C0)0 ? (R)(" + scale + " * " + alpha + " * g_expm1(x0)) : (R)(" + scale + " * x0);";
  }));
  ops.push_back(tf_expr("Softplus", types::floats, "x0 > (C0)0 ? x0 + g_log1p(g_exp(-x0)) : g_log1p(g_exp(x0))"));
  ops.push_back(tf_expr("Softsign", types::floats, "x0 / ((C0)1 + g_fabs(x0))"));
  ops.push_back(tf_op("LeakyRelu", types::floats, [](const kernel_node& n, const std::vector<dtype>& ts) {
    return "r = x0 < (C0)0 ? (R)(x0 * " + lit(n.attr<double>("alpha", 0.2), ts[0]) + ") : (R)x0;";
  }));
  // gradients of activations, as the CPU's (tf_grad.hpp): ReluGrad(gradients, features),
  // Relu6Grad(gradients, features), TanhGrad(y, dy), SigmoidGrad(y, dy); one shape and type
  for (const auto& [name, e, a, b] : std::initializer_list<std::tuple<const char*, const char*, const char*, const char*>>{
           {"ReluGrad", "x1 > (C1)0 ? x0 : (C0)0", "gradients", "features"},
           {"Relu6Grad", "x1 > (C1)0 && x1 < (C1)6 ? x0 : (C0)0", "gradients", "features"},
           {"TanhGrad", "x1 * ((C0)1 - x0 * x0)", "y", "dy"},
           {"SigmoidGrad", "x1 * x0 * ((C0)1 - x0)", "y", "dy"}}) {
    elementwise_op g = tf_expr(name, types::floats, e, 2);
    g.prepare = [a = std::string(a), b = std::string(b)](const kernel_node& n, std::vector<cuda_tensor>& v) {
      if (v.at(0).element_type() != v.at(1).element_type()) n.fail(a + " and " + b + " have different element types");
      if (v[0].sizes() != v[1].sizes())
        n.fail(a + " " + shape::of(v[0].sizes()).to_string() + " and " + b + " " + shape::of(v[1].sizes()).to_string() +
               " must have the same shape");
    };
    ops.push_back(std::move(g));
  }
  ops.push_back(tf_predicate("IsNan", types::floats, "x0 != x0", 1));
  ops.push_back(tf_predicate("IsInf", types::floats, "x0 == (C0)(1.0/0.0) || x0 == (C0)(-1.0/0.0)", 1));
  ops.push_back(tf_predicate("IsFinite", types::floats, "x0 == x0 && x0 != (C0)(1.0/0.0) && x0 != (C0)(-1.0/0.0)", 1));
  ops.push_back(tf_expr("ZerosLike", types::all, "0"));
  ops.push_back(tf_expr("OnesLike", types::all, "1"));
  // AddN: the inputs summed in order
  ops.push_back(tf_op("AddN", types::numbers, [](const kernel_node&, const std::vector<dtype>& ts) {
    std::string b = "r = x0;";
    for (std::size_t i = 1; i < ts.size(); ++i) b += " r = (R)(r + x" + std::to_string(i) + ");";
    return b;
  }));
  ops.back().max_inputs = 16;
  // BiasAdd: the 1-D bias along the channel axis (the last, or 1 for NCHW)
  for (const bool v1 : {false, true}) {
    elementwise_op b = tf_expr(v1 ? "BiasAddV1" : "BiasAdd", types::numbers, "x0 + x1", 2);
    b.prepare = [v1](const kernel_node& n, std::vector<cuda_tensor>& v) {
      const std::string fmt = v1 ? "NHWC" : n.attr<std::string>("data_format", "NHWC");
      if (fmt != "NHWC" && fmt != "NCHW") n.fail("data_format must be NHWC or NCHW, got '" + fmt + "'");
      v[1] = v[1].reshaped(tf_rules::bias_sizes(v.at(0).sizes(), v.at(1).sizes(), fmt == "NCHW", n));
    };
    ops.push_back(std::move(b));
  }
  // Cast: DstT; to bfloat16 truncated when Truncate is set (the store rounds a value it holds
  // exactly); SrcT, when given, must be the input's type
  {
    elementwise_op c = tf_op("Cast", types::all, [](const kernel_node& n, const std::vector<dtype>& ts) {
      const dtype from = type_attr(n, "SrcT", dtype::undefined);
      if (from != dtype::undefined && from != ts[0])
        n.fail("input has element type " + std::string(to_string(ts[0])) + ", SrcT is " + std::string(to_string(from)));
      if (type_attr(n, "DstT", dtype::undefined) == dtype::bf16 && flag(n, "Truncate", false) && (ts[0] == dtype::f32 || ts[0] == dtype::f64))
        return std::string("{ const float f = (float)x0; r = f != f ? f : __uint_as_float(__float_as_uint(f) & 0xffff0000u); }");
      return std::string("r = (R)x0;");
    });
    c.output = [](const kernel_node& n, const std::vector<dtype>&) {
      const dtype t = type_attr(n, "DstT", dtype::undefined);
      if (t == dtype::undefined) n.fail("missing attribute 'DstT'");
      if (!cuda_codegen::supported(t)) n.fail("no CUDA kernel casting to " + std::string(to_string(t)));
      return t;
    };
    ops.push_back(std::move(c));
  }
  // Select (v1): a condition of the sizes of t and e, a scalar, or a vector picking rows
  {
    elementwise_op s = tf_expr("Select", types::bools, "x0 ? (C1)x1 : (C1)x2", 3);
    s.output = [](const kernel_node&, const std::vector<dtype>& ts) { return ts.at(1); };
    s.prepare = [](const kernel_node& n, std::vector<cuda_tensor>& v) {
      v[0] = v.at(0).reshaped(tf_rules::select_condition_sizes(v[0].sizes(), v.at(1).sizes(), v.at(2).sizes(), n));
    };
    ops.push_back(std::move(s));
    elementwise_op s2 = tf_expr("SelectV2", types::bools, "x0 ? (C1)x1 : (C1)x2", 3);
    s2.output = [](const kernel_node&, const std::vector<dtype>& ts) { return ts.at(1); };
    ops.push_back(std::move(s2));
  }
  // ClipByValue: min and max scalars or of t's sizes; NaN bounds propagate as on the CPU
  {
    elementwise_op c = tf_expr("ClipByValue", types::numbers, "g_min(g_max(x0, (C0)x1), (C0)x2)", 3);
    c.prepare = [](const kernel_node& n, std::vector<cuda_tensor>& v) {
      for (std::size_t k : {std::size_t{1}, std::size_t{2}}) {
        if (v.at(k).element_type() != v[0].element_type()) n.fail("clip values have another element type than t");
        if (v[k].size() != 1 && v[k].sizes() != v[0].sizes())
          n.fail("clip value of sizes " + shape::of(v[k].sizes()).to_string() + " is neither a scalar nor of the sizes of t " +
                 shape::of(v[0].sizes()).to_string());
        if (v[k].size() == 1) v[k] = v[k].reshaped({});
      }
    };
    ops.push_back(std::move(c));
  }
  return ops;
}

/// Kernels made per value of what a TF node reads at run time (reduction indices, an axis):
/// `make(key)` the first time a key is seen, then reused. Thread-safe.
class keyed_kernels {
 public:
  template <class Make>
  const fn& get(const std::vector<i64>& key, Make&& make) {
    std::lock_guard lock(mu_);
    auto it = fns_.find(key);
    if (it == fns_.end()) it = fns_.emplace(key, make()).first;
    return it->second;
  }

 private:
  std::mutex mu_;
  std::map<std::vector<i64>, fn> fns_;
};

/// Output `port` = the int64 `v` as a tensor of `t` (int32 or int64) of `sizes` (`fill_ints`),
/// copied to the device.
inline void write_ints(context& ctx, std::size_t port, dtype t, const std::vector<i64>& v, std::vector<i64> sizes) {
  tf_rules::check_int_output(t, ctx.node());
  gpass::tensor h(t, std::move(sizes));
  tf_rules::fill_ints(h, v, ctx.node());
  cuda_tensor& y = ctx.allocate_output(port, t, h.sizes());
  if (h.nbytes() > 0) ctx.policy().copy_to_device(y.data(), h.raw(), h.nbytes(), ctx.stream());
}

/// The one value of a scalar integer input `i` (an axis).
inline i64 scalar_input(context& ctx, std::size_t i, const char* what) {
  const cuda_tensor& t = ctx.input(i);
  if (t.size() != 1 || t.rank() > 1) ctx.fail(std::string(what) + " must be a scalar, got sizes " + t.shape().to_string());
  const auto v = cuda_detail::host_ints(ctx, i);
  return v[0];
}

/// The int64 values of a 1-D (or 0-D) int32 / int64 input, read back (or the plan's constant).
inline std::vector<i64> vector_input(context& ctx, std::size_t i, const char* what) {
  const cuda_tensor& t = ctx.input(i);
  if (t.rank() > 1) ctx.fail(std::string(what) + " must be a vector, got sizes " + t.shape().to_string());
  if (t.element_type() != dtype::int32 && t.element_type() != dtype::int64)
    ctx.fail(std::string(what) + " must be int32 or int64, got " + std::string(to_string(t.element_type())));
  return cuda_detail::host_ints(ctx, i);
}

/// Sum / Mean / Max / Min / Prod / EuclideanNorm / All (min of bools) / Any (max of bools):
/// ONNX's reduction kernel with the reduced axes TF's indices name (negative from the end,
/// repeats allowed; a scalar input takes 0 and -1), keep_dims.
inline fn make_reduction(const kernel_node& n, cuda_reduce_detail::rkind k) {
  kernel_node m = n;
  m.attrs["keepdims"] = static_cast<i64>(flag(n, "keep_dims", false));
  m.attrs["noop_with_empty_axes"] = i64{1};
  auto kernels = std::make_shared<keyed_kernels>();
  return [m, k, kernels](context& ctx) {
    const i64 rank = static_cast<i64>(ctx.input(0).rank());
    const std::vector<i64> axes = tf_rules::reduction_axes(cuda_detail::host_ints(ctx, 1), rank, ctx.node());
    kernels->get(axes, [&] {
      kernel_node r = m;
      r.attrs["axes"] = axes;
      return cuda_reduce_detail::make_reduce(r, k);
    })(ctx);
  };
}

/// ArgMax / ArgMin over the axis of input 1 (int64 output; the first extreme).
inline fn make_arg(const kernel_node& n, bool is_max) {
  kernel_node m = n;
  m.attrs["keepdims"] = i64{0};
  m.attrs["select_last_index"] = i64{0};
  auto kernels = std::make_shared<keyed_kernels>();
  return [m, is_max, kernels](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    if (x.rank() == 0) ctx.fail("input must have rank >= 1");
    const i64 axis = tf_axis(scalar_input(ctx, 1, "dimension"), static_cast<i64>(x.rank()), ctx.node(), "dimension");
    if (x.sizes()[static_cast<std::size_t>(axis)] == 0) ctx.fail("cannot take the arg of an empty dimension");
    kernels->get({axis}, [&] {
      kernel_node r = m;
      r.attrs["axis"] = axis;
      return cuda_reduce_detail::make_arg(r, is_max);
    })(ctx);
  };
}

// ---- convolutions and pools in TF's layouts, through ONNX's kernels -------------------------

/// Runs `f`, a kernel made for `m`, on the device tensors `inputs` and returns its output 0:
/// a step outside the plan (its tensors come from the policy, not from the plan's buffers, and
/// are not counted against the run's limits; the calling node's output is).
inline cuda_tensor run_inner(context& ctx, const fn& f, const kernel_node& m, std::initializer_list<const cuda_tensor*> inputs) {
  using value = context::value_type;
  std::vector<value> in;
  in.reserve(inputs.size());
  for (const cuda_tensor* t : inputs) in.emplace_back(*t);
  std::vector<const value*> ptrs;
  for (const value& v : in) ptrs.push_back(&v);
  std::vector<value> out(1);
  const char wanted[] = {1};
  context inner(m, ctx.policy(), ctx.stream(), ptrs, out, {}, nullptr, wanted, nullptr);
  f(inner);
  return out[0].tensor();
}

/// A function giving an int64 device tensor cast to int32 by ONNX's Cast kernel (`cast`: its
/// maker in the registry), a step of node `n` (TF's int32 indices from ONNX's int64 ones).
inline std::function<cuda_tensor(context&, const cuda_tensor&)> int32_cast(const std::function<fn(const kernel_node&)>& cast,
                                                                           const kernel_node& n) {
  kernel_node to32{.name = n.name, .op = "Cast", .attrs = {{"to", i64{6}}}, .opset = 21};
  fn narrow = cast(to32);
  return [to32, narrow](context& ctx, const cuda_tensor& x) { return run_inner(ctx, narrow, to32, {&x}); };
}

/// `x` with its dims permuted (`y.dims[i] = x.dims[p[i]]`) as a new device tensor.
inline cuda_tensor permuted(context& ctx, cuda_detail::lazy_library& lib, const cuda_tensor& x, const std::vector<i64>& p) {
  const auto v = shape_rules::transpose_view(x.sizes(), p, ctx.node());
  cuda_tensor y = ctx.policy().allocate_tensor(x.element_type(), v.sizes, ctx.stream());
  if (y.size() > 0)
    cuda_array_detail::move(ctx, lib, x.element_type(), y.data(), x.data(), v.sizes, v.strides, shape_rules::strides_of(v.sizes), 0);
  return y;
}

/// Output 0 = `y` (an NCHW result of ONNX's kernel) in the node's layout.
inline void output_in_layout(context& ctx, cuda_detail::lazy_library& lib, const tf_rules::window& win, cuda_tensor y) {
  if (win.nchw) {
    ctx.set_output(0, std::move(y));
    return;
  }
  const auto v = shape_rules::transpose_view(y.sizes(), win.volumetric ? std::vector<i64>{0, 2, 3, 4, 1} : std::vector<i64>{0, 2, 3, 1},
                                             ctx.node());
  cuda_array_detail::copy_view(ctx, lib, y, v.sizes, v.sizes, v.strides, 0);
}

/// The spatial values of `win`'s rank from a depth, height and width: (d, h, w) for a 3-D
/// window, (h, w) for a 2-D one (sizes, output sizes, pads of a `tf_rules::geometry`).
inline std::vector<i64> spatial_of(const tf_rules::window& win, i64 d, i64 h, i64 w) {
  return win.volumetric ? std::vector<i64>{d, h, w} : std::vector<i64>{h, w};
}

/// The spatial values ([d,] h, w) of a TF window attribute `v` (strides, dilations, ksize).
inline std::vector<i64> spatial(const tf_rules::window& win, const std::vector<i64>& v) {
  return spatial_of(win, v[win.d], v[win.h], v[win.w]);
}

/// The permutation from the node's layout to channels first (NHWC / NDHWC), and back.
inline std::vector<i64> to_channels_first(const tf_rules::window& win) {
  return win.volumetric ? std::vector<i64>{0, 4, 1, 2, 3} : std::vector<i64>{0, 3, 1, 2};
}

/// ONNX's padding attributes for TF's: SAME is SAME_UPPER (the odd pixel at the end), VALID,
/// EXPLICIT the pads of the spatial dims.
inline void onnx_padding(const tf_rules::window& win, attribute_map& a) {
  if (win.padding == "SAME") {
    a["auto_pad"] = std::string("SAME_UPPER");
  } else if (win.padding == "VALID") {
    a["auto_pad"] = std::string("VALID");
  } else {
    const auto& e = win.explicit_paddings;
    a["pads"] = std::vector<i64>{e[2 * win.h], e[2 * win.w], e[2 * win.h + 1], e[2 * win.w + 1]};
  }
}

/// The ONNX node a TF window op runs as: the TF node's name and op (for errors), no constant
/// inputs, ONNX's window attributes.
inline kernel_node onnx_window_node(const kernel_node& n, const tf_rules::window& win, std::size_t inputs) {
  kernel_node m;
  m.name = n.name;
  m.op = n.op;
  m.domain = "tf";
  m.opset = 11;
  m.input_types.assign(inputs, type{});
  m.output_types.assign(1, type{});
  m.attrs["strides"] = spatial(win, win.strides);
  onnx_padding(win, m.attrs);
  return m;
}

/// Conv2D (filter [KH, KW, C / groups, OC]) and DepthwiseConv2dNative (filter [KH, KW, C, M])
/// in NHWC or NCHW: the input to NCHW, the filter to OIHW ([C * M, 1, KH, KW] and C groups
/// for the depthwise one), ONNX's Conv (cuDNN), the result back to the node's layout. TF's
/// window rules and messages (`tf_rules::window`) check the attributes and sizes first.
inline fn make_tf_conv(const kernel_node& n, bool depthwise, const std::function<fn(const kernel_node&)>& onnx_conv, bool volumetric = false) {
  const tf_rules::window win(n, false, !volumetric, volumetric);
  kernel_node m = onnx_window_node(n, win, 2);
  m.attrs["dilations"] = spatial(win, win.dilations);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  auto convs = std::make_shared<std::map<i64, std::pair<std::unique_ptr<kernel_node>, fn>>>();
  auto mu = std::make_shared<std::mutex>();
  return [win, m, depthwise, onnx_conv, lib, convs, mu](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& f = ctx.input(1);
    if (x.element_type() != f.element_type()) ctx.fail("input and filter have different element types");
    const auto& fs = f.sizes();
    if (fs.size() != win.rank)
      ctx.fail("the filter must have rank " + std::to_string(win.rank) + " (" +
               std::string(depthwise ? "[KH, KW, C, M]" : win.volumetric ? "DHWIO" : "HWIO") + "), got sizes " + shape::of(fs).to_string());
    const tf_rules::geometry g = win.resolve(x.sizes(), win.filter_window(fs), ctx.node());
    const i64 in_depth = fs[win.rank - 2], out_depth = fs[win.rank - 1];
    i64 groups = 1;
    if (depthwise) {
      if (fs[2] != g.C)
        ctx.fail("the filter's input depth " + std::to_string(fs[2]) + " differs from the input's channels " + std::to_string(g.C));
      groups = g.C;
    } else {
      if (in_depth != g.C && (in_depth <= 0 || g.C % in_depth != 0))
        ctx.fail("the input's channels " + std::to_string(g.C) + " are not a multiple of the filter's input depth " + std::to_string(in_depth));
      groups = in_depth == g.C ? 1 : g.C / in_depth;
      if (out_depth % groups != 0)
        ctx.fail("the filter's output depth " + std::to_string(out_depth) + " is not a multiple of the " + std::to_string(groups) + " groups");
    }
    const i64 OC = depthwise ? g.C * out_depth : out_depth;
    const std::vector<i64> out = win.output_sizes(g, OC);
    if (num_elements(out) == 0 || x.size() == 0 || f.size() == 0) {  // nothing to convolve: zeros, as the CPU kernels
      ctx.allocate_output_zeroed(0, x.element_type(), out);
      return;
    }
    const cuda_tensor xin = win.nchw ? x : permuted(ctx, *lib, x, to_channels_first(win));
    const cuda_tensor w = depthwise      ? permuted(ctx, *lib, f, {2, 3, 0, 1}).reshaped({OC, 1, fs[0], fs[1]})
                          : win.volumetric ? permuted(ctx, *lib, f, {4, 3, 0, 1, 2})
                                           : permuted(ctx, *lib, f, {3, 2, 0, 1});
    const std::pair<std::unique_ptr<kernel_node>, fn>* conv = nullptr;
    {
      std::lock_guard lock(*mu);
      auto it = convs->find(groups);
      if (it == convs->end()) {
        auto node = std::make_unique<kernel_node>(m);
        node->attrs["group"] = groups;
        node->attrs["kernel_shape"] = std::vector<i64>(fs.begin(), fs.end() - 2);
        fn k = onnx_conv(*node);
        it = convs->emplace(groups, std::pair{std::move(node), std::move(k)}).first;
      }
      conv = &it->second;
    }
    cuda_tensor y = run_inner(ctx, conv->second, *conv->first, {&xin, &w});
    std::vector<i64> want{out[0], OC};
    for (i64 v : spatial_of(win, g.OD, g.OH, g.OW)) want.push_back(v);
    if (y.sizes() != want) ctx.fail("the convolution's result has unexpected sizes");
    output_in_layout(ctx, *lib, win, std::move(y));
  };
}

/// Conv2DBackpropInput (filter [KH, KW, C, OC]), DepthwiseConv2dNativeBackpropInput (filter
/// [KH, KW, C, M]) and Conv3DBackpropInputV2 (filter [KD, KH, KW, C, OC]), NHWC / NDHWC as on
/// the CPU: dx = the transposed convolution of dy with the filter (ONNX's ConvTranspose on
/// cuDNN, the filter as [OC, C, k...], C groups for the depthwise one), its pads the forward ones at the start and, at the end, what brings the result to the
/// input's sizes (output_padding for the rows the forward convolution never read). The sizes
/// and checks are the CPU kernel's (`tf_rules::conv_grad_operands`).
inline fn make_tf_conv_input_grad(const kernel_node& n, bool depthwise, const std::function<fn(const kernel_node&)>& onnx_conv_transpose,
                                  bool volumetric = false) {
  const tf_rules::window win(n, false, false, volumetric);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  auto convs = std::make_shared<std::map<std::vector<i64>, std::pair<std::unique_ptr<kernel_node>, fn>>>();
  auto mu = std::make_shared<std::mutex>();
  return [win, depthwise, onnx_conv_transpose, lib, convs, mu, name = n.name, op = n.op](context& ctx) {
    const cuda_tensor& f = ctx.input(1);
    const cuda_tensor& dy = ctx.input(2);
    auto xs = tf_rules::sizes_values(vector_input(ctx, 0, "input_sizes"), win.rank, ctx.node(), "input_sizes");
    if (f.element_type() != dy.element_type()) ctx.fail("filter and out_backprop have different element types");
    const auto o = tf_rules::conv_grad_operands(std::move(xs), f.sizes(), dy.sizes(), win, depthwise, ctx.node());
    const tf_rules::geometry& g = o.g;
    const dtype t = f.element_type();
    if (std::find(o.xs.begin(), o.xs.end(), 0) != o.xs.end() || dy.size() == 0 || f.size() == 0) {  // nothing to add up: zeros, as the CPU
      ctx.allocate_output_zeroed(0, t, o.xs);
      return;
    }
    const std::vector<i64> k(o.fs.begin(), o.fs.end() - 2);  // [KD,] KH, KW
    const std::vector<i64> stride = spatial(win, win.strides), dil = spatial(win, win.dilations);
    const std::vector<i64> begin = spatial_of(win, g.PF, g.PT, g.PL), in = spatial_of(win, g.D, g.H, g.W),
                           out = spatial_of(win, g.OD, g.OH, g.OW);
    // the end pads (or output_padding) that make the transposed convolution's result the input's sizes
    std::vector<i64> end_pads, output_padding;
    for (std::size_t d = 0; d < k.size(); ++d) {
      const i64 tail = stride[d] * (out[d] - 1) + (k[d] - 1) * dil[d] + 1 - begin[d] - in[d];
      end_pads.push_back(std::max<i64>(tail, 0));
      output_padding.push_back(std::max<i64>(-tail, 0));
    }
    const i64 groups = depthwise ? g.C : 1;
    std::vector<i64> key{groups};
    for (const std::vector<i64>* v : std::initializer_list<const std::vector<i64>*>{&stride, &dil, &begin, &end_pads, &output_padding, &k})
      key.insert(key.end(), v->begin(), v->end());
    const std::pair<std::unique_ptr<kernel_node>, fn>* conv = nullptr;
    {
      std::lock_guard lock(*mu);
      auto it = convs->find(key);
      if (it == convs->end()) {
        auto m = std::make_unique<kernel_node>();
        m->name = name;
        m->op = op;
        m->domain = "tf";
        m->opset = 11;
        m->input_types.assign(2, type{});
        m->output_types.assign(1, type{});
        m->attrs["strides"] = stride;
        m->attrs["dilations"] = dil;
        std::vector<i64> pads = begin;
        pads.insert(pads.end(), end_pads.begin(), end_pads.end());
        m->attrs["pads"] = pads;
        m->attrs["output_padding"] = output_padding;
        m->attrs["kernel_shape"] = k;
        m->attrs["group"] = groups;
        fn k = onnx_conv_transpose(*m);
        it = convs->emplace(key, std::pair{std::move(m), std::move(k)}).first;
      }
      conv = &it->second;
    }
    const cuda_tensor dyn = permuted(ctx, *lib, dy, to_channels_first(win));
    const cuda_tensor w = depthwise      ? permuted(ctx, *lib, f, {2, 3, 0, 1}).reshaped({o.out_channels, 1, k[0], k[1]})
                          : win.volumetric ? permuted(ctx, *lib, f, {4, 3, 0, 1, 2})
                                           : permuted(ctx, *lib, f, {3, 2, 0, 1});
    cuda_tensor y = run_inner(ctx, conv->second, *conv->first, {&dyn, &w});
    std::vector<i64> want{g.N, g.C};
    want.insert(want.end(), in.begin(), in.end());
    if (y.sizes() != want) ctx.fail("the transposed convolution's result has unexpected sizes");
    output_in_layout(ctx, *lib, win, std::move(y));
  };
}

/// Conv2DBackpropFilter (filter [KH, KW, C, OC]), DepthwiseConv2dNativeBackpropFilter (filter
/// [KH, KW, C, M]) and Conv3DBackpropFilterV2 (filter [KD, KH, KW, C, OC]), NHWC / NDHWC as on
/// the CPU: cuDNN's backward filter over the input and out_backprop channels first
/// (`cuda_linalg::conv_filter_grad`; C groups of one channel for the depthwise one), its
/// [OC, C, k...] ([C * M, 1, KH, KW]) result permuted into the filter's layout. The sizes and checks are the CPU kernel's (`tf_rules::conv_grad_operands`).
inline fn make_tf_conv_filter_grad(const kernel_node& n, bool depthwise, bool volumetric = false) {
  const tf_rules::window win(n, false, false, volumetric);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  auto st = std::make_shared<cuda_linalg::conv_state>();
  return [win, depthwise, lib, st](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& dy = ctx.input(2);
    auto fs = tf_rules::sizes_values(vector_input(ctx, 1, "filter_sizes"), win.rank, ctx.node(), "filter_sizes");
    if (x.element_type() != dy.element_type()) ctx.fail("input and out_backprop have different element types");
    const auto o = tf_rules::conv_grad_operands(x.sizes(), std::move(fs), dy.sizes(), win, depthwise, ctx.node());
    const tf_rules::geometry& g = o.g;
    const dtype t = x.element_type();
    if (std::find(o.fs.begin(), o.fs.end(), 0) != o.fs.end() || x.size() == 0 || dy.size() == 0) {  // nothing to add up: zeros, as the CPU
      ctx.allocate_output_zeroed(0, t, o.fs);
      return;
    }
    const i64 C = g.C, M = o.fs[win.rank - 1];
    const std::vector<i64> k(o.fs.begin(), o.fs.end() - 2);  // [KD,] KH, KW
    const cuda_tensor xn = permuted(ctx, *lib, x, to_channels_first(win));
    const cuda_tensor dyn = permuted(ctx, *lib, dy, to_channels_first(win));
    std::vector<i64> dws = depthwise ? std::vector<i64>{C * M, 1} : std::vector<i64>{M, C};
    dws.insert(dws.end(), k.begin(), k.end());
    cuda_tensor dw = ctx.policy().allocate_tensor(t, dws, ctx.stream());
    cuda_linalg::conv_window cw{.k = k,
                                .stride = spatial(win, win.strides),
                                .dil = spatial(win, win.dilations),
                                .pad = spatial_of(win, g.PF, g.PT, g.PL),
                                .G = depthwise ? C : 1};
    cuda_linalg::conv_filter_grad(ctx, *st, xn, dyn, dw, cw);
    // to [KH, KW, C, OC] / [KD, KH, KW, C, OC] / [KH, KW, C, M]
    const cuda_tensor src = depthwise ? dw.reshaped({C, M, k[0], k[1]}) : dw;
    const std::vector<i64> perm = depthwise ? std::vector<i64>{2, 3, 0, 1} : win.volumetric ? std::vector<i64>{2, 3, 4, 1, 0} : std::vector<i64>{2, 3, 1, 0};
    const auto v = shape_rules::transpose_view(src.sizes(), perm, ctx.node());
    cuda_array_detail::copy_view(ctx, *lib, src, o.fs, v.sizes, v.strides, 0);
  };
}

/// MaxPool / AvgPool in NHWC or NCHW through ONNX's MaxPool / AveragePool (the average over
/// the window's positions inside the input, as TensorFlow's SAME padding counts them).
inline fn make_tf_pool(const kernel_node& n, bool max, const std::function<fn(const kernel_node&)>& onnx_pool, bool volumetric = false) {
  const tf_rules::window win(n, true, !volumetric, volumetric);
  kernel_node m = onnx_window_node(n, win, 1);
  m.attrs["kernel_shape"] = spatial(win, win.ksize);
  if (!max) m.attrs["count_include_pad"] = i64{0};
  auto node = std::make_shared<const kernel_node>(std::move(m));
  fn pool = onnx_pool(*node);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [win, node, pool, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const tf_rules::geometry g = win.resolve(x.sizes(), win.pool_window(), ctx.node());
    const std::vector<i64> out = win.output_sizes(g, g.C);
    if (num_elements(out) == 0) {
      ctx.allocate_output(0, x.element_type(), out);
      return;
    }
    const cuda_tensor xin = win.nchw ? x : permuted(ctx, *lib, x, to_channels_first(win));
    output_in_layout(ctx, *lib, win, run_inner(ctx, pool, *node, {&xin}));
  };
}

/// FusedBatchNorm's inference body over (x, scale, offset, mean, variance), in double as the
/// CPU kernel computes it: y = (x - mean) * scale / sqrt(variance + epsilon) + offset.
inline std::string batch_norm_body(double epsilon) {
  return "{ const double k = (double)x1 / g_sqrt((double)x4 + " + cuda_codegen::literal(epsilon, "double") +
         "); r = (R)(((double)x0 - (double)x3) * k + (double)x2); }";
}

/// FusedBatchNorm / V2 / V3 in inference (`is_training` false; NHWC or NCHW): y by
/// `batch_norm_body`, the parameters broadcast along the channel axis; batch_mean,
/// batch_variance and the reserve spaces are the given statistics, V3's third reserve space
/// zeros (the CPU kernel's outputs).
inline fn make_tf_batch_norm(const kernel_node& n) {
  const std::string format = n.attr<std::string>("data_format", "NHWC");
  if (format != "NHWC" && format != "NCHW") n.fail("data_format must be NHWC or NCHW, got '" + format + "'");
  const double eps = n.attr<double>("epsilon", 1e-4);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [nchw = format == "NCHW", eps, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("x must have rank >= 2, got sizes " + x.shape().to_string());
    const dtype t = x.element_type();
    const i64 C = x.sizes()[nchw ? 1 : x.rank() - 1];
    std::vector<i64> ps(nchw ? x.rank() - 1 : 1, 1);  // a parameter's view: [C] or [C, 1, ...]
    ps[0] = C;
    std::vector<cuda_tensor> params;
    for (std::size_t k = 1; k < 5; ++k) {
      const cuda_tensor& p = ctx.input(k);
      if (p.element_type() != t)
        ctx.fail("input " + std::to_string(k) + " is " + std::string(to_string(p.element_type())) + ", x is " + std::string(to_string(t)) +
                 " (mixed precision is not supported here)");
      if (p.rank() != 1 || p.sizes()[0] != C)
        ctx.fail("input " + std::to_string(k) + " must have " + std::to_string(C) + " elements, got sizes " + p.shape().to_string());
      params.push_back(p.reshaped(ps));
    }
    auto& pol = ctx.policy();
    cuda_tensor& y = ctx.allocate_output(0, t, x.sizes());
    const auto& k = lib->get(pol, "bn," + std::string(to_string(t)), {"ew_flat", "ew_strided"},
                             [&] { return cuda_codegen::elementwise_source({{t, t, t, t, t}, t, batch_norm_body(eps)}); });
    const cuda_tensor* xs[] = {&x, &params[0], &params[1], &params[2], &params[3]};
    cuda_detail::launch_elementwise(ctx, k, y, xs);
    for (std::size_t o = 1; o < ctx.num_outputs() && o < 6; ++o) {
      if (o == 5) {
        ctx.allocate_output_zeroed(o, t, {C});
        continue;
      }
      const cuda_tensor& from = ctx.input(o == 1 || o == 3 ? 3 : 4);
      cuda_tensor& out = ctx.allocate_output(o, t, {C});
      pol.copy_on_device(out.data(), from.data(), out.nbytes(), ctx.stream());
    }
  };
}

/// The element-wise body that maps segment ids (int32 / int64 `x0`) to ScatterND's int64
/// indices, a negative id to `x1` (num_segments: out of range, so dropped).
inline constexpr const char* segment_ids_body = "r = x0 < 0 ? x1 : (R)x0;";

/// `-x0` for element type `t`; integers through unsigned arithmetic (wrapping, as the CPU's).
inline std::string negate_body(dtype t) {
  if (cuda_codegen::is_float(t)) return "r = (R)(-x0);";
  return "r = (R)(0ull - (unsigned long long)x0);";
}

/// The element types of the segment reductions.
inline std::vector<dtype> segment_types() {
  return {dtype::f16, dtype::bf16, dtype::f32, dtype::f64, dtype::int8, dtype::int16, dtype::int32, dtype::int64,
          dtype::uint8, dtype::uint16, dtype::uint32, dtype::uint64};
}

/// The element-wise body of a sorted segment op's last step over (the combined rows `x0`, the
/// segment's row count `x1`): an empty segment is 0; a mean divides by the count (integers in 64
/// bits, as the CPU kernel: the quotient narrows back exactly).
inline std::string segment_fix_body(dtype t, bool mean) {
  if (!mean) return "r = x1 == 0 ? (R)0 : (R)x0;";
  if (cuda_codegen::is_float(t)) return "r = x1 == 0 ? (R)0 : (R)(x0 / (C0)x1);";
  const bool is_signed = t == dtype::int8 || t == dtype::int16 || t == dtype::int32 || t == dtype::int64;
  return is_signed ? "r = x1 == 0 ? (R)0 : (R)((long long)x0 / (long long)x1);"
                   : "r = x1 == 0 ? (R)0 : (R)((unsigned long long)x0 / (unsigned long long)x1);";
}

/// What the segment reductions share: each row of data combined into its segment by ONNX's
/// ScatterND with a reduction (add, mul, max, min), over an output holding the reduction's
/// identity as the CPU kernel makes it (0, 1, lowest, highest; in f16 / bf16 from float's);
/// negative ids are dropped: a generated element-wise kernel maps them to the segment count,
/// out of range, which the device kernel skips (as it skips ids past the end).
class segment_kernels {
 public:
  segment_kernels(const kernel_node& n, std::string red) : red_(std::move(red)) {
    m_ = n;
    m_.attrs["reduction"] = red_;
    m_.constant_inputs.clear();  // (ONNX's inputs are other ones)
    scatter_ = cuda_array_detail::make_scatter_nd(m_);
  }

  /// The ids' type, checked as the CPU kernel does.
  static void check_type(context& ctx) {
    const cuda_tensor& ids = ctx.input(1);
    if (ids.element_type() != dtype::int32 && ids.element_type() != dtype::int64)
      ctx.fail("segment_ids must be int32 or int64, got " + std::string(to_string(ids.element_type())));
  }
  /// The ids' shape, a prefix of the data's, checked as the CPU kernel does.
  static void check_prefix(context& ctx) {
    const cuda_tensor& ids = ctx.input(1);
    const auto& ds = ctx.input(0).sizes();
    const auto& is = ids.sizes();
    if (is.size() > ds.size() || !std::equal(is.begin(), is.end(), ds.begin()))
      ctx.fail("segment_ids shape " + ids.shape().to_string() + " is not a prefix of data's " + ctx.input(0).shape().to_string());
  }

  /// Output 0, allocated here (of `num` segments), and the combined rows (a new tensor); the ids
  /// checked by `check_type` and `check_prefix` first.
  cuda_tensor scatter(context& ctx, i64 num) {
    const cuda_tensor& data = ctx.input(0);
    const cuda_tensor& ids = ctx.input(1);
    const auto& ds = data.sizes();
    const auto& is = ids.sizes();
    std::vector<i64> out_sizes{num}, rows{ids.size()};
    out_sizes.insert(out_sizes.end(), ds.begin() + static_cast<std::ptrdiff_t>(is.size()), ds.end());
    rows.insert(rows.end(), ds.begin() + static_cast<std::ptrdiff_t>(is.size()), ds.end());
    const dtype t = data.element_type();
    gpass::tensor identity(t, {});
    visit_dtype(t, [&]<class T>() {
      using C = std::conditional_t<std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>, float, T>;
      if constexpr (std::is_arithmetic_v<C> && !std::is_same_v<C, bool>)
        identity.data<T>()[0] = static_cast<T>(red_ == "max"   ? std::numeric_limits<C>::lowest()
                                               : red_ == "min" ? std::numeric_limits<C>::max()
                                               : red_ == "mul" ? C(1)
                                                               : C(0));
    });
    auto& pol = ctx.policy();
    cuda_tensor& out = ctx.allocate_output(0, t, out_sizes);
    if (out.size() > 0) {
      const cuda_tensor one = pol.upload(identity, ctx.stream());
      cuda_array_detail::move(ctx, lib_, t, out.data(), one.data(), out_sizes, std::vector<i64>(out_sizes.size(), 0),
                              shape_rules::strides_of(out_sizes), 0);
    }
    // no data: nothing to combine (TensorFlow returns without looking at the ids)
    if (data.size() == 0 || out.size() == 0) return out;
    cuda_tensor mapped = pol.allocate_tensor(dtype::int64, {ids.size(), 1}, ctx.stream());
    const cuda_tensor limit = pol.upload(gpass::tensor::scalar<i64>(num), ctx.stream());
    const cuda_tensor column = ids.reshaped({ids.size(), 1});
    const cuda_tensor* xs[] = {&column, &limit};
    const dtype it = ids.element_type();
    const auto& k = lib_.get(pol, "segment_ids," + std::string(to_string(it)), {"ew_flat", "ew_strided"}, [&] {
      return cuda_codegen::elementwise_source({{it, dtype::int64}, dtype::int64, segment_ids_body});
    });
    cuda_detail::launch_elementwise(ctx, k, mapped, xs);
    const cuda_tensor updates = data.reshaped(rows);
    const cuda_tensor base = out;
    return run_inner(ctx, scatter_, m_, {&base, &mapped, &updates});
  }

  /// Output 0 (allocated by `scatter`) = `sums` with each segment fixed by its row count
  /// `counts` (`segment_fix_body`).
  void fix_up(context& ctx, const cuda_tensor& sums, const gpass::tensor& counts, bool mean) {
    auto& pol = ctx.policy();
    std::vector<i64> cs(sums.rank(), 1);
    cs[0] = counts.size();
    const cuda_tensor c = pol.upload(counts, ctx.stream()).reshaped(cs);
    const dtype t = sums.element_type();
    const auto& k = lib_.get(pol, "segment_fix," + std::string(to_string(t)) + (mean ? ",mean" : ""), {"ew_flat", "ew_strided"},
                             [&] { return cuda_codegen::elementwise_source({{t, dtype::int64}, t, segment_fix_body(t, mean)}); });
    const cuda_tensor* xs[] = {&sums, &c};
    cuda_detail::launch_elementwise(ctx, k, ctx.output(0), xs);
  }

 private:
  std::string red_;
  kernel_node m_;
  fn scatter_;
  cuda_detail::lazy_library lib_;
};

/// A kernel's `applies` for the ops of TF's 2-D layouts: a node without data_format (NHWC) or
/// with NHWC or NCHW (other formats stay on the CPU, which fails).
inline bool tf_2d_format(const kernel_query& q) {
  if (!q.attrs) return true;
  auto it = q.attrs->find("data_format");
  if (it == q.attrs->end()) return true;
  return it->second.is<std::string>() && (it->second.as<std::string>() == "NHWC" || it->second.as<std::string>() == "NCHW");
}

/// A kernel's `applies` for the TF ops the CPU takes in NHWC only (the gradients): a node
/// without data_format or with NHWC.
inline bool tf_nhwc_format(const kernel_query& q) {
  if (!q.attrs) return true;
  auto it = q.attrs->find("data_format");
  return it == q.attrs->end() || (it->second.is<std::string>() && it->second.as<std::string>() == "NHWC");
}

/// A kernel's `applies` for the 3-D TF ops (NDHWC only, as the CPU's).
inline bool tf_ndhwc_format(const kernel_query& q) {
  if (!q.attrs) return true;
  auto it = q.attrs->find("data_format");
  return it == q.attrs->end() || (it->second.is<std::string>() && it->second.as<std::string>() == "NDHWC");
}

/// `make` of ONNX's CUDA kernel for (op, opset) in `r`, for a TF node translated to ONNX's.
inline std::function<fn(const kernel_node&)> onnx_make(const kernel_registry<cuda>& r, const char* op, int opset) {
  const kernel_def<cuda>* d = r.find("", op, opset, dtype::undefined);
  if (!d) throw error(std::string("register_cuda_tf: the CUDA kernel of ONNX ") + op + " is missing");
  return d->make;
}

}  // namespace cuda_tf

/// TensorFlow's element-wise sources, for compile checks: each op once for f32 (or the first
/// type it takes) and for one integer type where it takes one, skipping sources the ONNX
/// family already generates.
inline std::vector<std::pair<std::string, std::string>> tf_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  std::set<std::string> seen;
  for (const auto& s : cuda_detail::elementwise_generated_sources()) seen.insert(s.second);
  for (const auto& op : cuda_tf::tf_elementwise_ops()) {
    kernel_node n{.name = "n", .op = std::string(op.op), .domain = "tf"};
    if (op.op == "Cast") n.attrs["DstT"] = dtype::f16;
    const auto all = cuda_detail::dtypes_of(op.accepts);
    std::vector<dtype> picks;
    for (dtype t : {dtype::f32, dtype::int32, dtype::bool_})
      if (std::find(all.begin(), all.end(), t) != all.end()) picks.push_back(t);
    if (picks.empty()) picks.push_back(all.front());
    for (dtype t : picks) {
      std::vector<dtype> ts(static_cast<std::size_t>(op.min_inputs), t);
      if (op.op == "Select" || op.op == "SelectV2") ts = {dtype::bool_, dtype::f32, dtype::f32};
      const dtype out = op.output ? op.output(n, ts) : ts[0];
      std::string src = cuda_codegen::elementwise_source({ts, out, op.body(n, ts)});
      if (seen.insert(src).second) r.emplace_back("tf::" + std::string(op.op) + "_" + std::string(to_string(t)), std::move(src));
    }
  }
  for (dtype it : {dtype::int32, dtype::int64})
    r.emplace_back("tf::segment_ids_" + std::string(to_string(it)),
                   cuda_codegen::elementwise_source({{it, dtype::int64}, dtype::int64, cuda_tf::segment_ids_body}));
  for (dtype t : {dtype::f32, dtype::f16, dtype::int32, dtype::uint8}) {
    const std::string ts(to_string(t));
    r.emplace_back("tf::segment_fix_" + ts, cuda_codegen::elementwise_source({{t, dtype::int64}, t, cuda_tf::segment_fix_body(t, false)}));
    r.emplace_back("tf::segment_mean_" + ts, cuda_codegen::elementwise_source({{t, dtype::int64}, t, cuda_tf::segment_fix_body(t, true)}));
    r.emplace_back("tf::negate_" + ts, cuda_codegen::elementwise_source({{t}, t, cuda_tf::negate_body(t)}));
  }
  for (dtype t : {dtype::f32, dtype::f64})
    r.emplace_back("tf::FusedBatchNorm_" + std::string(to_string(t)),
                   cuda_codegen::elementwise_source({{t, t, t, t, t}, t, cuda_tf::batch_norm_body(1e-3)}));
  return r;
}

/// Registers the CUDA kernels of TensorFlow ops (after the ONNX families they reuse).
inline void register_cuda_tf(kernel_registry<cuda>& r) {
  using namespace cuda_tf;
  using cuda_detail::host_ints;
  for (const auto& op : tf_elementwise_ops())
    r.add({.domain = "tf", .op = std::string(op.op), .dtypes = cuda_detail::dtypes_of(op.accepts),
           .make = [op](const kernel_node&) { return cuda_detail::make_elementwise(op); }});
  // constants (TF's Const with its dtype checked as the CPU does), views
  r.add({.domain = "tf", .op = "Const", .type_input = -1, .make = [](const kernel_node& n) -> fn {
           gpass::tensor value = n.attr<gpass::tensor>("value");
           const dtype t = type_attr(n, "dtype", value.element_type());
           if (t != value.element_type())
             n.fail("value has element type " + std::string(to_string(value.element_type())) + ", dtype is " + std::string(to_string(t)));
           return cuda_detail::constant_kernel(std::move(value), n);
         }});
  for (const char* op : {"Identity", "StopGradient", "Snapshot", "PreventGradient", "PlaceholderWithDefault"})
    r.add({.domain = "tf", .op = op, .alias_input = 0, .make = [](const kernel_node&) -> fn {
             return [](context& ctx) { ctx.set_output(0, ctx.input_value(0)); };
           }});
  r.add({.domain = "tf", .op = "EnsureShape", .alias_input = 0, .make = [](const kernel_node& n) -> fn {
           const gpass::shape want = n.attr<gpass::shape>("shape", gpass::shape{});
           return [want, check = n.has_attr("shape")](context& ctx) {
             if (check) tf_rules::check_ensure_shape(ctx.input(0).sizes(), want, ctx.node());
             ctx.set_output(0, ctx.input_value(0));
           };
         }});
  r.add({.domain = "tf", .op = "NoOp", .type_input = -1, .make = [](const kernel_node&) -> fn { return [](context&) {}; }});
  // IdentityN: output 0 shares input 0's buffer (alias_input); the others are copies (a plan
  // may reuse the memory of inputs it did not see aliased)
  r.add({.domain = "tf", .op = "IdentityN", .alias_input = 0, .make = [](const kernel_node&) -> fn {
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [lib](context& ctx) {
             if (ctx.num_outputs() > ctx.num_inputs()) ctx.fail("more outputs than inputs");
             for (std::size_t i = 0; i < ctx.num_outputs(); ++i) {
               if (i == 0 || !ctx.input_value(i).is_tensor()) {
                 ctx.set_output(i, ctx.input_value(i));
                 continue;
               }
               const cuda_tensor& x = ctx.input(i);
               cuda_array_detail::require_movable(ctx, x.element_type());
               cuda_array_detail::copy_view(ctx, *lib, x, x.sizes(), x.sizes(), shape_rules::strides_of(x.sizes()), 0, i);
             }
           };
         }});
  r.add({.domain = "tf", .op = "Reshape", .alias_input = 0, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const cuda_tensor& x = ctx.input(0);
             ctx.set_output(0, x.reshaped(shape_rules::reshape_sizes(x.sizes(), host_ints(ctx, 1), true, ctx.node())));
           };
         }});
  r.add({.domain = "tf", .op = "ExpandDims", .alias_input = 0, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const cuda_tensor& x = ctx.input(0);
             std::vector<i64> s = x.sizes();
             s.insert(s.begin() + tf_axis(scalar_input(ctx, 1, "dim"), static_cast<i64>(s.size()) + 1, ctx.node(), "dim"), 1);
             ctx.set_output(0, x.reshaped(std::move(s)));
           };
         }});
  r.add({.domain = "tf", .op = "Squeeze", .alias_input = 0, .make = [](const kernel_node& n) -> fn {
           std::vector<i64> dims = tf_rules::int_list(n, "squeeze_dims");
           if (dims.empty()) dims = tf_rules::int_list(n, "axis");
           return [dims](context& ctx) {
             const cuda_tensor& x = ctx.input(0);
             ctx.set_output(0, x.reshaped(tf_rules::squeeze_sizes(x.sizes(), dims, ctx.node())));
           };
         }});
  // shapes, slices, joins, padding (array.hpp's kernels)
  namespace ad = cuda_array_detail;
  const auto movable = ad::movable_types();
  r.add({.domain = "tf", .op = "Shape", .make = [](const kernel_node& n) -> fn {
           const dtype t = type_attr(n, "out_type", dtype::int32);
           return [t](context& ctx) {
             const auto& s = ctx.input(0).sizes();
             write_ints(ctx, 0, t, s, {static_cast<i64>(s.size())});
           };
         }});
  r.add({.domain = "tf", .op = "Size", .make = [](const kernel_node& n) -> fn {
           const dtype t = type_attr(n, "out_type", dtype::int32);
           return [t](context& ctx) { write_ints(ctx, 0, t, {ctx.input(0).size()}, {}); };
         }});
  r.add({.domain = "tf", .op = "ShapeN", .make = [](const kernel_node& n) -> fn {
           const dtype t = type_attr(n, "out_type", dtype::int32);
           return [t](context& ctx) {
             if (ctx.num_outputs() > ctx.num_inputs()) ctx.fail("more outputs than inputs");
             for (std::size_t i = 0; i < ctx.num_outputs(); ++i) {
               const auto& s = ctx.input(i).sizes();
               write_ints(ctx, i, t, s, {static_cast<i64>(s.size())});
             }
           };
         }});
  r.add({.domain = "tf", .op = "Rank", .make = [](const kernel_node&) -> fn {
           return [](context& ctx) { write_ints(ctx, 0, dtype::int32, {static_cast<i64>(ctx.input(0).rank())}, {}); };
         }});
  r.add({.domain = "tf", .op = "ConcatV2", .dtypes = movable, .make = [](const kernel_node&) -> fn {
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [lib](context& ctx) {
             const std::size_t k = ctx.num_inputs();
             if (k < 2) ctx.fail("needs values and an axis");
             std::vector<const cuda_tensor*> xs;
             for (std::size_t i = 0; i + 1 < k; ++i) xs.push_back(&ctx.input(i));
             const i64 axis = tf_axis(scalar_input(ctx, k - 1, "axis"), static_cast<i64>(xs[0]->rank()), ctx.node(), "axis");
             ad::concat_into(ctx, *lib, xs, axis);
           };
         }});
  // Concat (v1): the axis first, then the values
  r.add({.domain = "tf", .op = "Concat", .dtypes = movable, .type_input = 1, .make = [](const kernel_node&) -> fn {
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [lib](context& ctx) {
             const std::size_t k = ctx.num_inputs();
             if (k < 2) ctx.fail("needs an axis and values");
             std::vector<const cuda_tensor*> xs;
             for (std::size_t i = 1; i < k; ++i) xs.push_back(&ctx.input(i));
             const i64 axis = tf_axis(scalar_input(ctx, 0, "concat_dim"), static_cast<i64>(xs[0]->rank()), ctx.node(), "axis");
             ad::concat_into(ctx, *lib, xs, axis);
           };
         }});
  r.add({.domain = "tf", .op = "Pack", .dtypes = movable, .make = [](const kernel_node& n) -> fn {
           const i64 axis_attr = n.attr<i64>("axis", 0);
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [axis_attr, lib](context& ctx) {
             if (ctx.num_inputs() == 0) ctx.fail("no values");
             const cuda_tensor& x0 = ctx.input(0);
             const i64 axis = tf_axis(axis_attr, static_cast<i64>(x0.rank()) + 1, ctx.node(), "axis");
             std::vector<i64> s = x0.sizes();
             s.insert(s.begin() + axis, 1);
             std::vector<cuda_tensor> views;
             for (std::size_t i = 0; i < ctx.num_inputs(); ++i) {
               const cuda_tensor& x = ctx.input(i);
               if (x.sizes() != x0.sizes())
                 ctx.fail("values have different sizes " + x0.shape().to_string() + " and " + x.shape().to_string());
               views.push_back(x.reshaped(s));
             }
             std::vector<const cuda_tensor*> xs;
             for (const auto& v : views) xs.push_back(&v);
             ad::concat_into(ctx, *lib, xs, axis);
           };
         }});
  r.add({.domain = "tf", .op = "Slice", .dtypes = movable, .make = [](const kernel_node&) -> fn {
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [lib](context& ctx) {
             const cuda_tensor& x = ctx.input(0);
             ad::require_movable(ctx, x.element_type());
             const auto v = tf_rules::slice_view(x.sizes(), host_ints(ctx, 1), host_ints(ctx, 2), ctx.node());
             ad::copy_view(ctx, *lib, x, v.sizes, v.sizes, v.strides, v.offset);
           };
         }});
  r.add({.domain = "tf", .op = "StridedSlice", .dtypes = movable, .make = [](const kernel_node& n) -> fn {
           const i64 bm = n.attr<i64>("begin_mask", 0), em = n.attr<i64>("end_mask", 0), el = n.attr<i64>("ellipsis_mask", 0),
                     na = n.attr<i64>("new_axis_mask", 0), sm = n.attr<i64>("shrink_axis_mask", 0);
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [=](context& ctx) {
             const cuda_tensor& x = ctx.input(0);
             ad::require_movable(ctx, x.element_type());
             const auto p = tf_rules::plan_strided_slice(x.sizes(), host_ints(ctx, 1), host_ints(ctx, 2), host_ints(ctx, 3), bm, em, el, na, sm,
                                                         ctx.node());
             ad::copy_view(ctx, *lib, x, p.final_sizes, p.sizes, p.strides, p.offset);
           };
         }});
  r.add({.domain = "tf", .op = "Tile", .dtypes = movable, .make = ad::make_tile});
  r.add({.domain = "tf", .op = "BroadcastTo", .dtypes = movable, .make = [](const kernel_node&) -> fn {
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [lib](context& ctx) {
             const cuda_tensor& x = ctx.input(0);
             ad::require_movable(ctx, x.element_type());
             const auto s = host_ints(ctx, 1);
             for (i64 v : s)
               if (v < 0) ctx.fail("shape has a negative size " + std::to_string(v));
             if (s.size() < x.rank() || shape_rules::broadcast_sizes(x.sizes(), s, ctx.node()) != s)
               ctx.fail("cannot broadcast sizes " + x.shape().to_string() + " to " + shape::of(s).to_string());
             ad::copy_view(ctx, *lib, x, s, s, shape_rules::broadcast_strides(x.sizes(), s), 0);
           };
         }});
  r.add({.domain = "tf", .op = "Fill", .dtypes = movable, .type_input = 1, .make = [](const kernel_node&) -> fn {
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [lib](context& ctx) {
             const auto dims = host_ints(ctx, 0);
             const cuda_tensor& v = ctx.input(1);
             ad::require_movable(ctx, v.element_type());
             if (v.rank() != 0 && v.size() != 1) ctx.fail("value must be a scalar, got sizes " + v.shape().to_string());
             for (i64 d : dims)
               if (d < 0) ctx.fail("dims has a negative size " + std::to_string(d));
             ad::copy_view(ctx, *lib, v, dims, dims, std::vector<i64>(dims.size(), 0), 0);
           };
         }});
  // GatherNd, ScatterNd and TensorScatterUpdate / Add / Max / Min through ONNX's GatherND and
  // ScatterND (with a reduction): TF's checks first, with the CPU kernels' messages (index
  // tuples no longer than the rank; constant indices in [0, dim), never negative; the
  // updates' shape); indices only known on the device are not checked (out of range: read
  // as zero, or skipped, as TensorFlow's GPU kernels ignore them)
  auto tf_nd = [](context& ctx, std::size_t indices, const std::vector<i64>& sizes) {
    const cuda_tensor& it = ctx.input(indices);
    if (it.rank() < 1) ctx.fail("indices must have rank >= 1");
    const auto k = static_cast<std::size_t>(it.sizes().back());
    if (k > sizes.size()) ctx.fail("indices's last dim " + std::to_string(k) + " is more than the rank " + std::to_string(sizes.size()));
    if (k == 0 || !ctx.node().constant_input(indices)) return;
    const auto v = host_ints(ctx, indices);
    for (std::size_t r = 0; r + k <= v.size(); r += k)
      for (std::size_t d = 0; d < k; ++d)
        if (v[r + d] < 0 || v[r + d] >= sizes[d]) {
          std::string where = "[";
          for (std::size_t e = 0; e < k; ++e) where += (e ? ", " : "") + std::to_string(v[r + e]);
          ctx.fail("indices" + where + "] does not index into " + shape::of(sizes).to_string());
        }
  };
  auto tf_updates = [](context& ctx, std::size_t indices, std::size_t updates, const cuda_tensor& into) {
    const cuda_tensor& it = ctx.input(indices);
    const cuda_tensor& up = ctx.input(updates);
    const auto k = static_cast<std::ptrdiff_t>(it.sizes().back());
    std::vector<i64> want(it.sizes().begin(), it.sizes().end() - 1);
    want.insert(want.end(), into.sizes().begin() + k, into.sizes().end());
    if (up.sizes() != want) ctx.fail("updates has shape " + up.shape().to_string() + ", expected " + shape::of(want).to_string());
    if (up.element_type() != into.element_type()) ctx.fail("updates and tensor have different element types");
  };
  r.add({.domain = "tf", .op = "GatherNd", .dtypes = movable, .make = [tf_nd](const kernel_node& n) -> fn {
           kernel_node m = n;
           m.attrs["batch_dims"] = i64{0};
           fn gather = ad::make_gather_nd(m);
           return [gather, tf_nd](context& ctx) {
             tf_nd(ctx, 1, ctx.input(0).sizes());
             if (ctx.input(1).sizes().back() == 0) ctx.fail("index tuples of length 0 (the whole params per tuple) run on the CPU only");
             gather(ctx);
           };
         }});
  auto scatter_with = [](const kernel_node& n, const char* reduction) {
    kernel_node m = n;
    m.attrs["reduction"] = std::string(reduction);
    return std::pair{m, ad::make_scatter_nd(m)};
  };
  r.add({.domain = "tf", .op = "ScatterNd", .dtypes = movable, .type_input = 1,
         .make = [tf_nd, tf_updates, scatter_with](const kernel_node& n) -> fn {
           auto [m, add] = scatter_with(n, "add");
           // ONNX's inputs are (data, indices, updates): TF's constant indices (input 0) as input 1
           m.constant_inputs = {std::nullopt, n.constant_input(0) ? std::optional<gpass::tensor>(*n.constant_input(0)) : std::nullopt,
                                std::nullopt};
           return [m, add, tf_nd, tf_updates](context& ctx) {
             const auto sizes = host_ints(ctx, 2);
             for (i64 s : sizes)
               if (s < 0) ctx.fail("shape has a negative dim " + std::to_string(s));
             tf_nd(ctx, 0, sizes);
             cuda_tensor& out = ctx.allocate_output_zeroed(0, ctx.input(1).element_type(), sizes);
             tf_updates(ctx, 0, 1, out);
             // ONNX's ScatterND(data, indices, updates) with add, into the zeros
             cuda_tensor sum = run_inner(ctx, add, m, {&out, &ctx.input(0), &ctx.input(1)});
             ctx.set_output(0, std::move(sum));
           };
         }});
  for (const auto& [name, reduction] : {std::pair{"TensorScatterUpdate", "none"}, std::pair{"TensorScatterAdd", "add"},
                                        std::pair{"TensorScatterMax", "max"}, std::pair{"TensorScatterMin", "min"}}) {
    const char* red = reduction;
    r.add({.domain = "tf", .op = name, .dtypes = movable, .make = [tf_nd, tf_updates, scatter_with, red](const kernel_node& n) -> fn {
             auto [m, scatter] = scatter_with(n, red);
             return [m, scatter, tf_nd, tf_updates](context& ctx) {
               const cuda_tensor& x = ctx.input(0);
               tf_nd(ctx, 1, x.sizes());
               tf_updates(ctx, 1, 2, x);
               ctx.set_output(0, run_inner(ctx, scatter, m, {&x, &ctx.input(1), &ctx.input(2)}));
             };
           },
           // (bool max / min are or / and in ONNX's kernels; TensorFlow has none)
           .applies = [red](const kernel_query& q) {
             return std::string_view(red) == "none" || q.inputs.empty() || q.inputs[0] != dtype::bool_;
           }});
  }
  // TensorScatterSub: ONNX's ScatterND adding the negated updates (x - u = x + (-u) exactly;
  // integers wrap alike)
  r.add({.domain = "tf", .op = "TensorScatterSub", .dtypes = movable,
         .make = [tf_nd, tf_updates, scatter_with](const kernel_node& n) -> fn {
           auto [m, scatter] = scatter_with(n, "add");
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [m, scatter, tf_nd, tf_updates, lib](context& ctx) {
             const cuda_tensor& x = ctx.input(0);
             tf_nd(ctx, 1, x.sizes());
             tf_updates(ctx, 1, 2, x);
             const cuda_tensor& up = ctx.input(2);
             const dtype t = up.element_type();
             cuda_tensor neg = ctx.policy().allocate_tensor(t, up.sizes(), ctx.stream());
             if (neg.size() > 0) {
               const auto& k = lib->get(ctx.policy(), "negate," + std::string(to_string(t)), {"ew_flat", "ew_strided"},
                                        [&] { return cuda_codegen::elementwise_source({{t}, t, negate_body(t)}); });
               const cuda_tensor* xs[] = {&up};
               cuda_detail::launch_elementwise(ctx, k, neg, xs);
             }
             ctx.set_output(0, run_inner(ctx, scatter, m, {&x, &ctx.input(1), &neg}));
           };
         },
         .applies = [](const kernel_query& q) { return q.inputs.empty() || q.inputs[0] != dtype::bool_; }});
  // UnsortedSegmentSum / Prod / Max / Min (`segment_kernels`); constant ids of num_segments or
  // more fail as on the CPU (ids only known on the device and past the end are dropped)
  for (const auto& [name, reduction] : {std::pair{"UnsortedSegmentSum", "add"}, std::pair{"UnsortedSegmentProd", "mul"},
                                        std::pair{"UnsortedSegmentMax", "max"}, std::pair{"UnsortedSegmentMin", "min"}}) {
    const std::string red = reduction;
    r.add({.domain = "tf", .op = name, .dtypes = segment_types(), .make = [red](const kernel_node& n) -> fn {
             auto seg = std::make_shared<segment_kernels>(n, red);
             return [seg](context& ctx) {
               const i64 num = scalar_input(ctx, 2, "num_segments");
               if (num < 0) ctx.fail("num_segments must be non-negative, got " + std::to_string(num));
               const cuda_tensor& data = ctx.input(0);
               segment_kernels::check_type(ctx);
               segment_kernels::check_prefix(ctx);
               if (data.size() > 0 && ctx.node().constant_input(1))
                 for (i64 v : host_ints(ctx, 1))
                   if (v >= num) ctx.fail("segment id " + std::to_string(v) + " is out of range [0, " + std::to_string(num) + ")");
               ctx.set_output(0, seg->scatter(ctx, num));
             };
           }});
  }
  // SegmentSum / Mean / Prod / Max / Min: the ids (a vector, non-negative, increasing) read
  // back and checked as the CPU kernel does; the segment count is the last id + 1;
  // `segment_kernels` combines the rows; then an empty segment of Max / Min is 0 (not the
  // identity) and Mean divides by the row counts (an empty segment stays 0), as TensorFlow
  for (const auto& [name, reduction] : {std::pair{"SegmentSum", "add"}, std::pair{"SegmentMean", "add"}, std::pair{"SegmentProd", "mul"},
                                        std::pair{"SegmentMax", "max"}, std::pair{"SegmentMin", "min"}}) {
    const std::string red = reduction;
    const bool mean = std::string_view(name) == "SegmentMean";
    r.add({.domain = "tf", .op = name, .dtypes = segment_types(), .make = [red, mean](const kernel_node& n) -> fn {
             auto seg = std::make_shared<segment_kernels>(n, red);
             return [seg, red, mean](context& ctx) {
               const cuda_tensor& ids = ctx.input(1);
               if (ids.rank() != 1) ctx.fail("segment_ids must be a vector, got " + ids.shape().to_string());
               segment_kernels::check_type(ctx);  // (the shape after the values, as the CPU)
               const auto v = host_ints(ctx, 1);
               for (std::size_t i = 0; i < v.size(); ++i) {
                 if (v[i] < 0) ctx.fail("segment ids must be non-negative, got " + std::to_string(v[i]));
                 if (i > 0 && v[i] < v[i - 1]) ctx.fail("segment ids are not increasing");
               }
               const auto num = v.empty() ? std::optional<i64>(0) : checked_add(v.back(), 1);  // (the id may be INT64_MAX)
               if (!num) ctx.fail("segment id " + std::to_string(v.back()) + " + 1 overflows int64");
               segment_kernels::check_prefix(ctx);
               cuda_tensor sums = seg->scatter(ctx, *num);
               const bool fix = mean || red == "max" || red == "min";
               if (!fix || ctx.input(0).size() == 0 || sums.size() == 0) {
                 ctx.set_output(0, std::move(sums));
                 return;
               }
               // the row count of each segment (`segments` <= the output's elements here)
               check_scratch(ctx, static_cast<double>(*num) * sizeof(i64), "the segment counts");
               gpass::tensor counts(dtype::int64, {*num});
               for (i64 id : v) ++counts.data<i64>()[id];
               seg->fix_up(ctx, sums, counts, mean);
             };
           }});
  }
  // Where (one input): the coordinates [n, rank] of the true / non-zero elements, ONNX's
  // NonZero ([rank, n], row-major order) transposed
  r.add({.domain = "tf", .op = "Where", .dtypes = cuda_select::nonzero_types(), .make = [](const kernel_node& n) -> fn {
           fn nonzero = cuda_select::make_nonzero(n);
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [nonzero, lib, m = n](context& ctx) {
             if (ctx.num_inputs() > 1) ctx.fail("Where with x and y is SelectV2; this Where takes one input");
             const cuda_tensor c = run_inner(ctx, nonzero, m, {&ctx.input(0)});
             const auto v = shape_rules::transpose_view(c.sizes(), std::vector<i64>{1, 0}, ctx.node());
             ad::copy_view(ctx, *lib, c, v.sizes, v.sizes, v.strides, 0);
           };
         }});
  // TF's indices are in [0, dim) (no negative ones, as ONNX has): checked on the host where
  // the plan bound them as constants, with the CPU kernel's message
  auto tf_indices = [](context& ctx, i64 dim) {
    const gpass::tensor* c = ctx.node().constant_input(1);
    if (!c) return;
    const auto v = host_ints(ctx, 1);
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i] < 0 || v[i] >= dim)
        ctx.fail("indices[" + std::to_string(i) + "] = " + std::to_string(v[i]) + " is not in [0, " + std::to_string(dim) + ")");
  };
  // Gather (v1): GatherV2 on axis 0
  r.add({.domain = "tf", .op = "Gather", .dtypes = movable, .make = [tf_indices](const kernel_node& n) -> fn {
           kernel_node m = n;
           m.attrs["axis"] = i64{0};
           fn gather = ad::make_gather(m);
           return [gather, tf_indices](context& ctx) {
             if (ctx.input(0).rank() == 0) ctx.fail("params must have rank >= 1");
             tf_indices(ctx, ctx.input(0).sizes()[0]);
             gather(ctx);
           };
         }});
  r.add({.domain = "tf", .op = "GatherV2", .dtypes = movable,
         .make = [tf_indices](const kernel_node& n) -> fn {
           auto kernels = std::make_shared<keyed_kernels>();
           return [m = n, kernels, tf_indices](context& ctx) {
             const i64 rank = static_cast<i64>(ctx.input(0).rank());
             if (rank == 0) ctx.fail("params must have rank >= 1");
             const i64 axis = tf_axis(scalar_input(ctx, 2, "axis"), rank, ctx.node(), "axis");
             tf_indices(ctx, ctx.input(0).sizes()[static_cast<std::size_t>(axis)]);
             kernels->get({axis}, [&] {
               kernel_node r = m;
               r.attrs["axis"] = axis;
               return ad::make_gather(r);
             })(ctx);
           };
         },
         .applies = [](const kernel_query& q) {  // batch_dims stay on the CPU
           if (!q.attrs) return true;
           auto it = q.attrs->find("batch_dims");
           return it == q.attrs->end() || (it->second.is<i64>() && it->second.as<i64>() == 0);
         }});
  for (const char* op : {"Pad", "PadV2", "MirrorPad"}) {
    const std::string name = op;
    r.add({.domain = "tf", .op = name, .dtypes = movable,
           .make = [name](const kernel_node&) -> fn {
             auto lib = std::make_shared<cuda_detail::lazy_library>();
             return [name, lib](context& ctx) {
               const cuda_tensor& x = ctx.input(0);
               ad::require_movable(ctx, x.element_type());
               const bool mirror = name == "MirrorPad";
               const auto [begin, end] = tf_rules::paddings(x.sizes(), ctx.input(1).sizes(), host_ints(ctx, 1), mirror, ctx.node());
               std::uint64_t cval = 0;
               if (name == "PadV2") {
                 if (ctx.input(2).element_type() != x.element_type() || ctx.input(2).size() != 1)
                   ctx.fail("constant_values must be a scalar of the input type");
                 cval = ad::first_bits(cuda_detail::host_value(ctx, 2));
               }
               ad::pad_into(ctx, *lib, x, begin, end, mirror ? 1 : 0, cval);
             };
           },
           .applies = [mirror = name == "MirrorPad"](const kernel_query& q) {  // SYMMETRIC stays on the CPU (which fails)
             if (!mirror || !q.attrs) return true;
             auto it = q.attrs->find("mode");
             return it != q.attrs->end() && it->second.is<std::string>() && it->second.as<std::string>() == "REFLECT";
           }});
  }
  // NHWC / NCHW convolutions and pools through ONNX's (other data formats stay on the CPU, which fails)
  const auto conv_types = std::vector<dtype>{dtype::f32, dtype::f64};
  for (const auto& [name, depthwise] : {std::pair{"Conv2D", false}, std::pair{"DepthwiseConv2dNative", true}})
    r.add({.domain = "tf", .op = name, .dtypes = conv_types,
           .make = [depthwise, conv = onnx_make(r, "Conv", 11)](const kernel_node& n) { return make_tf_conv(n, depthwise, conv); },
           .applies = tf_2d_format});
  r.add({.domain = "tf", .op = "MaxPool", .dtypes = conv_types,
         .make = [pool = onnx_make(r, "MaxPool", 12)](const kernel_node& n) { return make_tf_pool(n, true, pool); }, .applies = tf_2d_format});
  // the 3-D ones, NDHWC (as the CPU's)
  r.add({.domain = "tf", .op = "Conv3D", .dtypes = conv_types,
         .make = [conv = onnx_make(r, "Conv", 11)](const kernel_node& n) { return make_tf_conv(n, false, conv, true); },
         .applies = tf_ndhwc_format});
  r.add({.domain = "tf", .op = "MaxPool3D", .dtypes = conv_types,
         .make = [pool = onnx_make(r, "MaxPool", 12)](const kernel_node& n) { return make_tf_pool(n, true, pool, true); },
         .applies = tf_ndhwc_format});
  r.add({.domain = "tf", .op = "AvgPool3D", .dtypes = conv_types,
         .make = [pool = onnx_make(r, "AveragePool", 11)](const kernel_node& n) { return make_tf_pool(n, false, pool, true); },
         .applies = tf_ndhwc_format});
  // their input gradients, NHWC (as the CPU's), through ONNX's ConvTranspose
  for (const auto& [name, depthwise] : {std::pair{"Conv2DBackpropInput", false}, std::pair{"DepthwiseConv2dNativeBackpropInput", true}})
    r.add({.domain = "tf", .op = name, .dtypes = conv_types, .type_input = 1,
           .make = [depthwise, convt = onnx_make(r, "ConvTranspose", 11)](const kernel_node& n) {
             return make_tf_conv_input_grad(n, depthwise, convt);
           },
           .applies = tf_nhwc_format});
  r.add({.domain = "tf", .op = "Conv3DBackpropInputV2", .dtypes = conv_types, .type_input = 1,
         .make = [convt = onnx_make(r, "ConvTranspose", 11)](const kernel_node& n) { return make_tf_conv_input_grad(n, false, convt, true); },
         .applies = tf_ndhwc_format});
  // their filter gradients, NHWC (as the CPU's), through cuDNN's backward filter
  for (const auto& [name, depthwise] : {std::pair{"Conv2DBackpropFilter", false}, std::pair{"DepthwiseConv2dNativeBackpropFilter", true}})
    r.add({.domain = "tf", .op = name, .dtypes = conv_types,
           .make = [depthwise](const kernel_node& n) { return make_tf_conv_filter_grad(n, depthwise); }, .applies = tf_nhwc_format});
  r.add({.domain = "tf", .op = "Conv3DBackpropFilterV2", .dtypes = conv_types,
         .make = [](const kernel_node& n) { return make_tf_conv_filter_grad(n, false, true); }, .applies = tf_ndhwc_format});
  // MaxPoolV2: ksize and strides read at run time, a pool made per pair
  r.add({.domain = "tf", .op = "MaxPoolV2", .dtypes = conv_types,
         .make = [pool = onnx_make(r, "MaxPool", 12)](const kernel_node& n) -> fn {
           auto kernels = std::make_shared<keyed_kernels>();
           return [node = n, pool, kernels](context& ctx) {
             for (std::size_t i : {std::size_t{1}, std::size_t{2}}) {
               const char* what = i == 1 ? "ksize" : "strides";
               if (ctx.input(i).rank() > 1) ctx.fail(std::string(what) + " must be a vector, got sizes " + ctx.input(i).shape().to_string());
               if (ctx.input(i).element_type() != dtype::int32 && ctx.input(i).element_type() != dtype::int64)
                 ctx.fail(std::string(what) + " must be int32 or int64, got " + std::string(to_string(ctx.input(i).element_type())));
             }
             const auto ksize = host_ints(ctx, 1), strides = host_ints(ctx, 2);
             std::vector<i64> key = ksize;
             key.push_back(-1);
             key.insert(key.end(), strides.begin(), strides.end());
             kernels->get(key, [&] {
               kernel_node m = node;
               m.attrs["ksize"] = ksize;
               m.attrs["strides"] = strides;
               return make_tf_pool(m, true, pool);
             })(ctx);
           };
         },
         .applies = tf_2d_format});
  r.add({.domain = "tf", .op = "AvgPool", .dtypes = conv_types,
         .make = [pool = onnx_make(r, "AveragePool", 11)](const kernel_node& n) { return make_tf_pool(n, false, pool); },
         .applies = tf_2d_format});
  // (FusedBatchNorm: tf_batch_norm.hpp registers the inference and the training kernels)
  // Split, SplitV, Unpack: one copy per part; ReverseV2: a copy walking the axes backwards
  auto split_kernel = [](std::size_t value, auto&& parts) -> fn {
    auto lib = std::make_shared<cuda_detail::lazy_library>();
    return [value, parts, lib](context& ctx) {
      const cuda_tensor& x = ctx.input(value);
      ad::require_movable(ctx, x.element_type());
      const auto [axis, sizes, squeeze] = parts(ctx, x);
      if (sizes.size() != ctx.num_outputs())
        ctx.fail(std::to_string(sizes.size()) + " parts for " + std::to_string(ctx.num_outputs()) + " outputs");
      const auto st = shape_rules::strides_of(x.sizes());
      i64 start = 0;
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        std::vector<i64> s = x.sizes();
        s[axis] = sizes[i];
        std::vector<i64> out = s;
        if (squeeze) out.erase(out.begin() + static_cast<std::ptrdiff_t>(axis));
        ad::copy_view(ctx, *lib, x, out, s, st, sizes[i] > 0 ? start * st[axis] : 0, i);
        start += sizes[i];
      }
    };
  };
  using split_plan = std::tuple<std::size_t, std::vector<i64>, bool>;
  auto axis_of = [](context& ctx, std::size_t i, const cuda_tensor& x) {
    return static_cast<std::size_t>(tf_axis(scalar_input(ctx, i, "split_dim"), static_cast<i64>(x.rank()), ctx.node(), "split_dim"));
  };
  r.add({.domain = "tf", .op = "Split", .dtypes = movable, .type_input = 1, .make = [=](const kernel_node& n) -> fn {
           return split_kernel(1, [num = n.attr<i64>("num_split", -1), axis_of](context& ctx, const cuda_tensor& x) {
             const std::size_t axis = axis_of(ctx, 0, x);
             return split_plan{axis, tf_rules::split_equal_sizes(x.sizes()[axis], axis, static_cast<i64>(ctx.num_outputs()), num, ctx.node()),
                               false};
           });
         }});
  r.add({.domain = "tf", .op = "SplitV", .dtypes = movable, .make = [=](const kernel_node&) -> fn {
           return split_kernel(0, [axis_of](context& ctx, const cuda_tensor& x) {
             const std::size_t axis = axis_of(ctx, 2, x);
             return split_plan{axis, tf_rules::split_v_sizes(cuda_detail::host_ints(ctx, 1), x.sizes()[axis], axis, ctx.node()), false};
           });
         }});
  r.add({.domain = "tf", .op = "Unpack", .dtypes = movable, .make = [=](const kernel_node& n) -> fn {
           return split_kernel(0, [axis_attr = n.attr<i64>("axis", 0), num = n.attr<i64>("num", -1)](context& ctx, const cuda_tensor& x) {
             const std::size_t axis = tf_rules::unpack_axis(x.sizes(), axis_attr, num, ctx.num_outputs(), ctx.node());
             return split_plan{axis, std::vector<i64>(static_cast<std::size_t>(x.sizes()[axis]), 1), true};
           });
         }});
  r.add({.domain = "tf", .op = "ReverseV2", .dtypes = movable, .make = [](const kernel_node&) -> fn {
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [lib](context& ctx) {
             const cuda_tensor& x = ctx.input(0);
             ad::require_movable(ctx, x.element_type());
             const auto v = tf_rules::reverse_view(x.sizes(), cuda_detail::host_ints(ctx, 1), ctx.node());
             ad::copy_view(ctx, *lib, x, v.sizes, v.sizes, v.strides, v.offset);
           };
         }});
  // data movement and products through ONNX's kernels
  // (ConjugateTranspose of a real tensor is its Transpose; complex tensors stay on the CPU)
  for (const char* op : {"Transpose", "ConjugateTranspose"})
    r.add({.domain = "tf", .op = op, .dtypes = cuda_array_detail::movable_types(), .make = [](const kernel_node&) -> fn {
             auto lib = std::make_shared<cuda_detail::lazy_library>();
             return [lib](context& ctx) {
               const cuda_tensor& x = ctx.input(0);
               cuda_array_detail::require_movable(ctx, x.element_type());
               const auto v = shape_rules::transpose_view(x.sizes(), host_ints(ctx, 1), ctx.node());
               cuda_array_detail::copy_view(ctx, *lib, x, v.sizes, v.sizes, v.strides, 0);
             };
           }});
  const auto float_types = std::vector<dtype>{dtype::f16, dtype::bf16, dtype::f32, dtype::f64};
  r.add({.domain = "tf", .op = "MatMul", .dtypes = float_types, .make = [gemm = onnx_make(r, "Gemm", 13)](const kernel_node& n) {
           kernel_node m = n;
           m.opset = 13;
           m.attrs["transA"] = static_cast<i64>(flag(n, "transpose_a", false));
           m.attrs["transB"] = static_cast<i64>(flag(n, "transpose_b", false));
           return gemm(m);
         }});
  // BatchMatMul (v1: equal batch dims), V2 / V3 (broadcast batch dims): cuBLASLt's batched
  // product, adj_x / adj_y (the adjoint of a real matrix is its transpose) as transposed operands
  for (const auto& [name, broadcast] : {std::pair{"BatchMatMul", false}, std::pair{"BatchMatMulV2", true}, std::pair{"BatchMatMulV3", true}})
    r.add({.domain = "tf", .op = name, .dtypes = float_types,
           .make = [broadcast](const kernel_node& n) -> fn {
             const bool ta = flag(n, "adj_x", false), tb = flag(n, "adj_y", false);
             auto st = std::make_shared<cuda_linalg::lt_state>();
             return [ta, tb, broadcast, st](context& ctx) {
               const cuda_tensor& a = ctx.input(0);
               const cuda_tensor& b = ctx.input(1);
               if (a.rank() < 2 || b.rank() < 2)
                 ctx.fail("inputs must have rank >= 2, got sizes " + a.shape().to_string() + " and " + b.shape().to_string());
               if (a.element_type() != b.element_type()) ctx.fail("inputs have different element types");
               const auto& sa = a.sizes();
               const auto& sb = b.sizes();
               const i64 K = ta ? sa[sa.size() - 2] : sa.back(), Kb = tb ? sb.back() : sb[sb.size() - 2];
               if (K != Kb)
                 ctx.fail("inner dimensions differ: " + a.shape().to_string() + (ta ? " (adjoint)" : "") + " x " + b.shape().to_string() +
                          (tb ? " (adjoint)" : ""));
               if (!broadcast && !std::equal(sa.begin(), sa.end() - 2, sb.begin(), sb.end() - 2))
                 ctx.fail("batch dimensions differ: " + a.shape().to_string() + " and " + b.shape().to_string());
               cuda_linalg::batched_product(ctx, *st, ta, tb, 1.0);
             };
           },
           // another output type stays on the CPU
           .applies = [](const kernel_query& q) {
             if (!q.attrs) return true;
             auto it = q.attrs->find("Tout");
             const dtype tout = it != q.attrs->end() && it->second.is<dtype>() ? it->second.as<dtype>() : dtype::undefined;
             return tout == dtype::undefined || q.inputs.empty() || q.inputs[0] == dtype::undefined || tout == q.inputs[0];
           }});
  for (const auto& [name, log] : {std::pair{"Softmax", false}, std::pair{"LogSoftmax", true}})
    r.add({.domain = "tf", .op = name, .dtypes = float_types, .make = [make = onnx_make(r, log ? "LogSoftmax" : "Softmax", 13)](const kernel_node& n) -> fn {
             kernel_node m = n;
             m.opset = 13;
             m.attrs["axis"] = i64{-1};
             fn f = make(m);
             return [f](context& ctx) {
               if (ctx.input(0).rank() < 1) ctx.fail("logits must have rank >= 1");
               f(ctx);
             };
           }});
  // reductions, arg, cumulative
  using cuda_reduce_detail::rkind;
  for (const auto& [name, k] : {std::pair{"Sum", rkind::sum}, std::pair{"Mean", rkind::mean}, std::pair{"Max", rkind::max},
                                std::pair{"Min", rkind::min}, std::pair{"Prod", rkind::prod}, std::pair{"EuclideanNorm", rkind::l2}}) {
    const rkind kind = k;
    std::vector<dtype> ts = cuda_reduce_detail::types_of(kind);
    ts.erase(std::remove(ts.begin(), ts.end(), dtype::bool_), ts.end());
    r.add({.domain = "tf", .op = name, .dtypes = ts, .make = [kind](const kernel_node& n) { return make_reduction(n, kind); }});
  }
  // BiasAddGrad: the sum over every dim but the channel one (the last, or 1 for NCHW)
  r.add({.domain = "tf", .op = "BiasAddGrad", .dtypes = float_types, .make = [](const kernel_node& n) -> fn {
           const std::string format = n.attr<std::string>("data_format", "NHWC");
           if (format != "NHWC" && format != "NCHW") n.fail("data_format must be NHWC or NCHW, got '" + format + "'");
           kernel_node m = n;
           m.attrs["keepdims"] = i64{0};
           auto kernels = std::make_shared<keyed_kernels>();
           return [m, nchw = format == "NCHW", kernels](context& ctx) {
             const cuda_tensor& g = ctx.input(0);
             if (g.rank() < 2) ctx.fail("out_backprop must have rank >= 2, got " + g.shape().to_string());
             const i64 rank = static_cast<i64>(g.rank()), channel = nchw ? 1 : rank - 1;
             std::vector<i64> axes;
             for (i64 d = 0; d < rank; ++d)
               if (d != channel) axes.push_back(d);
             kernels->get(axes, [&] {
               kernel_node r = m;
               r.attrs["axes"] = axes;
               return cuda_reduce_detail::make_reduce(r, rkind::sum);
             })(ctx);
           };
         }});
  r.add({.domain = "tf", .op = "All", .dtypes = {dtype::bool_}, .make = [](const kernel_node& n) { return make_reduction(n, rkind::min); }});
  r.add({.domain = "tf", .op = "Any", .dtypes = {dtype::bool_}, .make = [](const kernel_node& n) { return make_reduction(n, rkind::max); }});
  // TopK (k an attribute) and TopKV2 (k an input): ONNX's TopK on the last axis, largest first,
  // sorted (equal values in index order); int32 indices (index_type, TF's default) cast from
  // its int64 ones by ONNX's Cast kernel
  for (const auto& [name, v2] : {std::pair{"TopKV2", true}, std::pair{"TopK", false}})
    r.add({.domain = "tf", .op = name, .dtypes = cuda_select::topk_types(),
           .make = [v2, cast = onnx_make(r, "Cast", 21)](const kernel_node& n) -> fn {
             const dtype it = type_attr(n, "index_type", dtype::int32);
             if (it != dtype::int32 && it != dtype::int64) n.fail("index_type must be int32 or int64");
             const i64 k_attr = v2 ? 0 : n.attr<i64>("k");
             kernel_node m = n;
             m.attrs["axis"] = i64{-1};
             m.attrs["largest"] = i64{1};
             m.attrs["sorted"] = i64{1};
             if (!v2) m.attrs["k"] = k_attr;
             fn topk = cuda_select::make_topk(m);
             auto to_int32 = int32_cast(cast, n);
             return [v2, k_attr, it, topk, to_int32](context& ctx) {
               const cuda_tensor& x = ctx.input(0);
               if (x.rank() < 1) ctx.fail("input must have rank >= 1");
               const i64 k = v2 ? scalar_input(ctx, 1, "k") : k_attr;
               if (k < 0) ctx.fail("k must be non-negative, got " + std::to_string(k));
               if (k > x.sizes().back()) ctx.fail("input must have at least k = " + std::to_string(k) + " columns, got " + x.shape().to_string());
               topk(ctx);
               if (it == dtype::int32) {
                 const cuda_tensor wide = ctx.output(1);
                 ctx.set_output(1, to_int32(ctx, wide));
               }
             };
           }});
  // int32 indices: the int64 ones made first, then cast by ONNX's Cast kernel into the output
  for (const auto& [name, is_max] : {std::pair{"ArgMax", true}, std::pair{"ArgMin", false}})
    r.add({.domain = "tf", .op = name, .dtypes = cuda_reduce_detail::numeric_types(),
           .make = [is_max, cast = onnx_make(r, "Cast", 21)](const kernel_node& n) -> fn {
             fn arg = cuda_tf::make_arg(n, is_max);
             const dtype out = type_attr(n, "output_type", dtype::int64);
             if (out == dtype::int64) return arg;
             if (out != dtype::int32) n.fail("output_type must be int32 or int64, got " + std::string(to_string(out)));
             auto to_int32 = int32_cast(cast, n);
             return [arg, to_int32, n](context& ctx) {
               const cuda_tensor wide = run_inner(ctx, arg, n, {&ctx.input(0), &ctx.input(1)});
               const cuda_tensor idx = to_int32(ctx, wide);
               // into the node's own output (allocate_output: the run's limits apply to it)
               cuda_tensor& y = ctx.allocate_output(0, dtype::int32, idx.sizes());
               ctx.policy().copy_on_device(y.data(), idx.data(), idx.nbytes(), ctx.stream());
             };
           }});
  for (const auto& [name, product] : {std::pair{"Cumsum", false}, std::pair{"Cumprod", true}})
    r.add({.domain = "tf", .op = name, .dtypes = cuda_reduce_detail::cumsum_types(), .make = [product](const kernel_node& n) {
             kernel_node m = n;
             m.attrs["exclusive"] = static_cast<i64>(flag(n, "exclusive", false));
             m.attrs["reverse"] = static_cast<i64>(flag(n, "reverse", false));
             return cuda_reduce_detail::make_cumsum(m, product);
           }});
}

}  // namespace gpass::exec
