// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file elementwise.hpp
/// Eigen CPU kernels: the elementwise family (ONNX default domain).
///
/// - binary ops with multidirectional broadcasting: Add Sub Mul Div Pow Mod BitShift And Or
///   Xor Equal Less Greater LessOrEqual GreaterOrEqual, variadic Max Min Sum Mean;
/// - unary math: Abs Acos Acosh Asin Asinh Atan Atanh Ceil Cos Cosh Erf Exp Floor IsInf
///   IsNaN Log Neg Not Reciprocal Round Sign Sin Sinh Sqrt Tan Tanh;
/// - activations: Relu LeakyRelu Elu Selu Celu Sigmoid HardSigmoid HardSwish Softplus
///   Softsign ThresholdedRelu Shrink PRelu Gelu Mish Swish; BitShift and the Bitwise* ops;
/// - Where Clip Cast CastLike Identity Dropout QuantizeLinear DequantizeLinear
///   DynamicQuantizeLinear.
///
/// One broadcasting engine serves every n-ary op: the output index space is coalesced into
/// an outer walk (`strided_walker`) over rows of a contiguous innermost run, in which each
/// operand is either contiguous or a repeated scalar; rows of float/double ops that have an
/// Eigen array form run vectorized. Work is split with `parallel_for`. Private
/// (`gpass::exec::cpu_detail`); `register_elementwise` adds the kernels to a registry.

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <unsupported/Eigen/SpecialFunctions>

#include <gpass/core/attribute.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/low_precision.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/ops/fused_elementwise.hpp>

namespace gpass::exec::cpu_detail {

namespace ew {

using i64 = std::int64_t;

// ---- dtype groups -----------------------------------------------------------------------

using signed_numeric_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int16_t,
                                       std::int32_t, std::int64_t>;
using bool_types = type_list<bool>;
using eq_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int16_t, std::int32_t,
                           std::int64_t, std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t, bool, std::string>;
using pow_base_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int32_t, std::int64_t>;
using pow_exp_types = type_list<float, double, Eigen::half, std::int8_t, std::int16_t, std::int32_t, std::int64_t,
                                std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t>;
using quant_types = type_list<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t>;
using dequant_types = type_list<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::int32_t>;

/// Element types whose rows may run as Eigen array expressions.
template <class T>
inline constexpr bool vec_ok = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
inline constexpr bool is_low_float = std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

template <class T>
using array_of = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T>
using cmap = Eigen::Map<const array_of<T>>;
template <class T>
using mmap = Eigen::Map<array_of<T>>;

// ---- the broadcasting loop engine ---------------------------------------------------------

/// How to walk an n-ary elementwise op: `total` output elements in rows of `inner`
/// contiguous output elements; operand k reads row elements with stride `inner_stride[k]`
/// (0 or 1) from the offset the outer walker gives.
template <std::size_t N>
struct loop_plan {
  i64 total = 0;
  i64 inner = 1;
  std::array<i64, N> inner_stride{};
  std::vector<i64> outer_sizes;
  std::array<std::vector<i64>, N> outer_strides;
};

/// The plan for writing `out` (row-major, contiguous) from operands of `sizes` (each
/// broadcastable to `out`).
template <std::size_t N>
loop_plan<N> make_plan(const std::vector<i64>& out, const std::array<const std::vector<i64>*, N>& sizes) {
  loop_plan<N> p;
  p.total = num_elements(out);
  std::array<std::vector<i64>, N> st;
  for (std::size_t k = 0; k < N; ++k) st[k] = broadcast_strides(*sizes[k], out);
  // dimensions of size > 1, innermost first, merged while every operand stays linear
  std::vector<i64> dims;
  std::array<std::vector<i64>, N> ds;
  for (std::size_t d = out.size(); d-- > 0;) {
    if (out[d] == 1) continue;
    if (!dims.empty()) {
      bool merge = true;
      for (std::size_t k = 0; k < N && merge; ++k) merge = st[k][d] == ds[k].back() * dims.back();
      if (merge) {
        dims.back() *= out[d];
        continue;
      }
    }
    dims.push_back(out[d]);
    for (std::size_t k = 0; k < N; ++k) ds[k].push_back(st[k][d]);
  }
  if (dims.empty()) {  // a single element (or rank 0)
    p.inner = 1;
    for (std::size_t k = 0; k < N; ++k) p.inner_stride[k] = 0;
    return p;
  }
  p.inner = dims[0];
  for (std::size_t k = 0; k < N; ++k) p.inner_stride[k] = ds[k][0];
  for (std::size_t i = dims.size(); i-- > 1;) {
    p.outer_sizes.push_back(dims[i]);
    for (std::size_t k = 0; k < N; ++k) p.outer_strides[k].push_back(ds[k][i]);
  }
  return p;
}

/// A non-owning reference to a callable `void(Args...)` (keeps the parallel machinery
/// instantiated once instead of once per op and element type).
template <class... Args>
class fn_ref {
 public:
  template <class F>
  fn_ref(const F& f) : obj_(&f), call_([](const void* o, Args... a) { (*static_cast<const F*>(o))(a...); }) {}  // NOLINT
  void operator()(Args... a) const { call_(obj_, a...); }

 private:
  const void* obj_;
  void (*call_)(const void*, Args...);
};

/// Calls `body(offsets, out_offset, len)` for runs of the output covering [0, total), in
/// parallel: `offsets[k]` is where operand k's run starts; its stride is `p.inner_stride[k]`.
template <std::size_t N>
void run_plan(const context& ctx, const loop_plan<N>& p, double cost,
              std::type_identity_t<fn_ref<const std::array<i64, N>&, i64, i64>> body) {
  if (p.total <= 0) return;
  ctx.policy().parallel_for(p.total, cost, [&](i64 b, i64 e) {
    strided_walker<N> w(p.outer_sizes, p.outer_strides);
    i64 row = p.inner ? b / p.inner : 0, off = p.inner ? b % p.inner : 0;
    w.seek(row);
    i64 pos = b;
    while (pos < e) {
      const i64 len = std::min(p.inner - off, e - pos);
      std::array<i64, N> at;
      for (std::size_t k = 0; k < N; ++k) at[k] = w.offset(k) + off * p.inner_stride[k];
      body(at, pos, len);
      pos += len;
      off = 0;
      w.next();
    }
  });
}

/// `parallel_for` through a type-erased body.
inline void parallel(const context& ctx, i64 n, double cost, fn_ref<i64, i64> body) {
  ctx.policy().parallel_for(n, cost, [&](i64 b, i64 e) { body(b, e); });
}

template <class F, class A, class B>
concept binary_array_op = requires(const F& f, const cmap<A>& a, const cmap<B>& b) { f.array(a, b); };
template <class F, class A>
concept unary_array_op = requires(const F& f, const cmap<A>& a) { f.array(a); };

/// One run of a binary op: `o[i] = f(a[i*sa], b[i*sb])` for i < n (sa, sb in {0, 1}).
template <class A, class B, class O, class F>
void binary_row(const A* a, i64 sa, const B* b, i64 sb, O* o, i64 n, const F& f) {
  using CA = compute_t<A>;
  using CB = compute_t<B>;
  if constexpr (std::is_same_v<A, B> && std::is_same_v<A, O> && vec_ok<A>) {
    if constexpr (binary_array_op<F, A, A>) {
      mmap<O> y(o, n);
      if (sa && sb) y = f.array(cmap<A>(a, n), cmap<A>(b, n));
      else if (sa) y = f.array(cmap<A>(a, n), array_of<A>::Constant(n, b[0]));
      else if (sb) y = f.array(array_of<A>::Constant(n, a[0]), cmap<A>(b, n));
      else y.setConstant(static_cast<O>(f(CA(a[0]), CB(b[0]))));
      return;
    }
  }
  {
    if (sa && sb) {
      for (i64 i = 0; i < n; ++i) o[i] = static_cast<O>(f(CA(a[i]), CB(b[i])));
    } else if (sa) {
      const CB bv = CB(b[0]);
      for (i64 i = 0; i < n; ++i) o[i] = static_cast<O>(f(CA(a[i]), bv));
    } else if (sb) {
      const CA av = CA(a[0]);
      for (i64 i = 0; i < n; ++i) o[i] = static_cast<O>(f(av, CB(b[i])));
    } else {
      const O v = static_cast<O>(f(CA(a[0]), CB(b[0])));
      for (i64 i = 0; i < n; ++i) o[i] = v;
    }
  }
}

/// `o = f(a, b)` with `a` of `as` and `b` of `bs` broadcast to `os` (`o` may be `a`).
template <class A, class B, class O, class F>
void binary_into(const context& ctx, const A* a, const std::vector<i64>& as, const B* b, const std::vector<i64>& bs,
                 O* o, const std::vector<i64>& os, const F& f, double cost) {
  const auto p = make_plan<2>(os, {&as, &bs});
  run_plan(ctx, p, cost, [&](const std::array<i64, 2>& at, i64 pos, i64 len) {
    binary_row<A, B, O>(a + at[0], p.inner_stride[0], b + at[1], p.inner_stride[1], o + pos, len, f);
  });
}

/// `y[i] = f(x[i])` for i < n, in parallel.
template <class T, class O, class F>
void unary_into(const context& ctx, const T* x, O* y, i64 n, const F& f, double cost) {
  parallel(ctx, n, cost, [&](i64 b, i64 e) {
    if constexpr (std::is_same_v<T, O> && vec_ok<T>) {
      if constexpr (unary_array_op<F, T>) {
        mmap<O>(y + b, e - b) = f.array(cmap<T>(x + b, e - b));
        return;
      }
    }
    {
      for (i64 i = b; i < e; ++i) y[i] = static_cast<O>(f(compute_t<T>(x[i])));
    }
  });
}

// ---- functor building blocks ------------------------------------------------------------

/// A unary functor from a scalar callable and an Eigen array callable.
template <class S, class V>
struct uf {
  S s;
  V v;
  template <class C>
  auto operator()(C x) const {
    return s(x);
  }
  template <class X>
  auto array(const X& x) const {
    return v(x);
  }
};
template <class S, class V>
uf(S, V) -> uf<S, V>;

/// A unary functor with only a scalar form.
template <class S>
struct sf {
  S s;
  template <class C>
  auto operator()(C x) const {
    return s(x);
  }
};
template <class S>
sf(S) -> sf<S>;

/// A binary functor from a scalar callable and an Eigen array callable.
template <class S, class V>
struct bf {
  S s;
  V v;
  template <class CA, class CB>
  auto operator()(CA a, CB b) const {
    return s(a, b);
  }
  template <class X, class Y>
  auto array(const X& x, const Y& y) const {
    return v(x, y);
  }
};
template <class S, class V>
bf(S, V) -> bf<S, V>;

/// A binary functor with only a scalar form.
template <class S>
struct bsf {
  S s;
  template <class CA, class CB>
  auto operator()(CA a, CB b) const {
    return s(a, b);
  }
};
template <class S>
bsf(S) -> bsf<S>;

/// Integer division truncating toward zero; division by zero is an error.
template <class C>
C div_int(C a, C b) {
  if (b == 0) throw error("integer division by zero");
  if constexpr (std::is_signed_v<C>) {
    if (b == -1) return sub_w<C>(C(0), a);
  }
  return static_cast<C>(a / b);
}

/// ONNX Mod: `fmod` = C remainder (sign of the dividend); otherwise Python's (sign of the divisor).
template <class C>
C mod_op(C a, C b, bool fmod) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) throw error("integer modulo by zero");
    if constexpr (std::is_signed_v<C>) {
      if (b == -1) return C(0);
      C r = static_cast<C>(a % b);
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      return r;
    } else {
      return static_cast<C>(a % b);
    }
  } else {
    C r = std::fmod(a, b);
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}

template <class C>
C max_nan(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return a < b ? b : a;
}
template <class C>
C min_nan(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return b < a ? b : a;
}

/// Integer power by squaring (wrapping); a negative exponent truncates 1/a^-e toward zero.
template <class C, class E>
C int_pow(C a, E e) {
  if constexpr (std::is_signed_v<E>) {
    if (e < 0) {
      if (a == 1) return C(1);
      if constexpr (std::is_signed_v<C>) {
        if (a == -1) return (e % 2) ? C(-1) : C(1);
      }
      if (a == 0) throw error("integer Pow: zero to a negative power");
      return C(0);
    }
  }
  using U = wide_unsigned_t<C>;
  U r = 1, base = static_cast<U>(a);
  auto n = static_cast<std::make_unsigned_t<E>>(e);
  while (n) {
    if (n & 1) r = static_cast<U>(r * base);
    base = static_cast<U>(base * base);
    n >>= 1;
  }
  return static_cast<C>(r);
}

/// Pow on compute types: the result has the base's type.
struct pow_f {
  template <class CA, class CB>
  CA operator()(CA a, CB b) const {
    if constexpr (std::is_floating_point_v<CA>) {
      return static_cast<CA>(std::pow(a, static_cast<CA>(b)));
    } else if constexpr (std::is_integral_v<CB>) {
      return int_pow<CA, CB>(a, b);
    } else {
      return float_to_int<CA>(std::pow(static_cast<double>(a), static_cast<double>(b)));
    }
  }
};

// ---- string outputs (the checks are in common.hpp) ------------------------------------

/// The characters of `t`'s strings broadcast to `total` elements: each element repeats
/// total / size times.
inline double broadcast_chars(const gpass::tensor& t, i64 total) {
  return total == 0 ? 0.0 : string_chars(t) * static_cast<double>(total / t.size());
}

// ---- kernel makers -----------------------------------------------------------------------

/// Sizes of input 1 of a binary op, aligned for legacy (opset < 7) `broadcast`/`axis`.
inline std::vector<i64> legacy_sizes(const std::vector<i64>& a, const std::vector<i64>& b, i64 axis,
                                     const kernel_node& n) {
  if (axis < 0) axis += static_cast<i64>(a.size());
  // (axis + b's rank overflowed for an axis near INT64_MAX)
  if (axis < 0 || b.size() > a.size() || axis > static_cast<i64>(a.size() - b.size()))
    n.fail("legacy broadcast axis " + std::to_string(axis) + " does not fit " + shape::of(b).to_string() + " into " +
           shape::of(a).to_string());
  std::vector<i64> r = b;
  r.resize(a.size() - static_cast<std::size_t>(axis), 1);
  return r;
}

/// The legacy broadcast axis of a binary node (opset < 7 with `broadcast` = 1 and `axis`), or
/// a sentinel when numpy rules apply.
inline constexpr i64 no_legacy_axis = std::numeric_limits<i64>::min();
inline i64 legacy_axis(const kernel_node& n) {
  if (n.opset > 0 && n.opset < 7 && n.attr<i64>("broadcast", 0) != 0 && n.has_attr("axis")) return n.attr<i64>("axis");
  return no_legacy_axis;
}

/// A binary kernel over the element types `L` (both inputs of one type); the output is the
/// input type, or bool when `BoolOut`.
template <class L, bool BoolOut, class F>
fn binary_kernel(const kernel_node& n, F f, double cost) {
  const i64 lax = legacy_axis(n);
  return [f, cost, lax](context& ctx) {
    const gpass::tensor& a = ctx.input(0);
    const gpass::tensor& b = ctx.input(1);
    if (a.element_type() != b.element_type())
      ctx.fail("inputs have different element types (" + std::string(to_string(a.element_type())) + " and " +
               std::string(to_string(b.element_type())) + ")");
    const std::vector<i64> bs = lax == no_legacy_axis ? b.sizes() : legacy_sizes(a.sizes(), b.sizes(), lax, ctx.node());
    const auto os = broadcast_sizes(a.sizes(), bs, ctx.node());
    dispatch<L>(a.element_type(), ctx.node(), [&]<class T>() {
      using O = std::conditional_t<BoolOut, bool, T>;
      gpass::tensor& y = ctx.allocate_output(0, dtype_of_v<O>, os);
      if (y.size() == 0) return;
      if constexpr (std::is_same_v<O, std::string>)  // StringConcat: |a| + |b| characters per element
        check_string_output(ctx, y.size(), broadcast_chars(a, y.size()) + broadcast_chars(b, y.size()));
      binary_into<T, T, O>(ctx, a.data<T>(), a.sizes(), b.data<T>(), bs, y.data<O>(), os, f, cost);
    });
  };
}

/// A variadic kernel (Max, Min, Sum, Mean): folds `f` over all inputs broadcast together.
template <class L, class F>
fn variadic_kernel(F f, bool mean, double cost) {
  return [f, mean, cost](context& ctx) {
    const std::size_t k = ctx.num_inputs();
    if (k == 0) ctx.fail("needs at least one input");
    const gpass::tensor& x0 = ctx.input(0);
    std::vector<i64> os = x0.sizes();
    for (std::size_t i = 1; i < k; ++i) {
      const gpass::tensor& xi = ctx.input(i);
      if (xi.element_type() != x0.element_type())
        ctx.fail("input " + std::to_string(i) + " has element type " + std::string(to_string(xi.element_type())) +
                 ", input 0 has " + std::string(to_string(x0.element_type())));
      os = broadcast_sizes(os, xi.sizes(), ctx.node());
    }
    dispatch<L>(x0.element_type(), ctx.node(), [&]<class T>() {
      gpass::tensor& y = ctx.allocate_output(0, dtype_of_v<T>, os);
      if (y.size() == 0) return;
      T* o = y.data<T>();
      if (k == 1) {
        binary_into<T, T, T>(ctx, x0.data<T>(), x0.sizes(), x0.data<T>(), x0.sizes(), o, os,
                             bsf{[](auto a, auto) { return a; }}, 1.0);
      } else {
        const gpass::tensor& x1 = ctx.input(1);
        binary_into<T, T, T>(ctx, x0.data<T>(), x0.sizes(), x1.data<T>(), x1.sizes(), o, os, f, cost);
        for (std::size_t i = 2; i < k; ++i) {
          const gpass::tensor& xi = ctx.input(i);
          binary_into<T, T, T>(ctx, o, os, xi.data<T>(), xi.sizes(), o, os, f, cost);
        }
      }
      if (mean && k > 1) {
        const auto inv = static_cast<compute_t<T>>(k);
        unary_into<T, T>(ctx, o, o, y.size(),
                         uf{[inv](auto x) { return x / static_cast<decltype(x)>(inv); },
                            [inv](const auto& x) { return x / static_cast<typename std::decay_t<decltype(x)>::Scalar>(inv); }},
                         1.0);
      }
    });
  };
}

/// A unary kernel over the element types `L`; the output is the input type, or bool when `BoolOut`.
template <class L, bool BoolOut, class F>
fn unary_kernel(F f, double cost) {
  return [f, cost](context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    dispatch<L>(x.element_type(), ctx.node(), [&]<class T>() {
      using O = std::conditional_t<BoolOut, bool, T>;
      gpass::tensor& y = ctx.allocate_output(0, dtype_of_v<O>, x.sizes());
      unary_into<T, O>(ctx, x.data<T>(), y.data<O>(), x.size(), f, cost);
    });
  };
}

template <class L, bool BoolOut = false, class F>
void add_unary(registry& r, const char* op, F f, double cost = 1.0) {
  r.add({.op = op, .dtypes = L::dtypes(), .make = [f, cost](const kernel_node&) -> fn {
           return unary_kernel<L, BoolOut>(f, cost);
         }});
}

template <class L, bool BoolOut = false, class F>
void add_binary(registry& r, const char* op, F f, double cost = 1.0) {
  r.add({.op = op, .dtypes = L::dtypes(), .make = [f, cost](const kernel_node& n) -> fn {
           return binary_kernel<L, BoolOut>(n, f, cost);
         }});
}

/// Scalar type of an Eigen expression argument.
template <class X>
using scalar_of = typename std::decay_t<X>::Scalar;

/// Coefficient-wise max / min of an array expression and a scalar that propagate NaN (like
/// the scalar forms, `std::max(x, s)` with a NaN `x`).
template <class X>
auto amax(const X& x, scalar_of<X> s) {
  using S = scalar_of<X>;
  return x.binaryExpr(array_of<S>::Constant(x.size(), s), Eigen::internal::scalar_max_op<S, S, Eigen::PropagateNaN>());
}
template <class X>
auto amin(const X& x, scalar_of<X> s) {
  using S = scalar_of<X>;
  return x.binaryExpr(array_of<S>::Constant(x.size(), s), Eigen::internal::scalar_min_op<S, S, Eigen::PropagateNaN>());
}

// ---- Cast ----------------------------------------------------------------------------------

/// The dtype an ONNX `TensorProto.DataType` number names (undefined when none).
inline dtype onnx_dtype_number(i64 v) { return dtype_from_onnx_code(v).value_or(dtype::undefined); }

/// The dtype a Cast `to` attribute names: a dtype, an ONNX data type number, or (Cast-1) an
/// ONNX type name such as "FLOAT".
inline dtype cast_target(const kernel_node& n) {
  auto it = n.attrs.find("to");
  if (it == n.attrs.end()) n.fail("missing attribute 'to'");
  const attribute& a = it->second;
  dtype t = dtype::undefined;
  if (a.is<dtype>()) t = a.as<dtype>();
  else if (a.is<i64>()) t = onnx_dtype_number(a.as<i64>());
  else if (a.is<std::string>()) {
    static constexpr std::pair<std::string_view, dtype> names[] = {
        {"FLOAT", dtype::f32},   {"UINT8", dtype::uint8},   {"INT8", dtype::int8},     {"UINT16", dtype::uint16},
        {"INT16", dtype::int16}, {"INT32", dtype::int32},   {"INT64", dtype::int64},   {"STRING", dtype::string},
        {"BOOL", dtype::bool_},  {"FLOAT16", dtype::f16},   {"DOUBLE", dtype::f64},    {"UINT32", dtype::uint32},
        {"UINT64", dtype::uint64}, {"BFLOAT16", dtype::bf16}};
    for (const auto& [s, d] : names)
      if (a.as<std::string>() == s) t = d;
    if (t == dtype::undefined)
      if (auto p = parse_dtype(a.as<std::string>())) t = *p;
  } else {
    n.fail("attribute 'to' is a " + std::string(a.kind_name()) + ", expected a data type");
  }
  if (t == dtype::undefined) n.fail("attribute 'to' names no supported data type");
  return t;
}

/// f32 -> bf16 rounded to nearest, ties to even (what TensorFlow, ONNX Runtime and the ONNX
/// reference since 1.14 do): finite values past the largest bf16 become infinities, signed
/// zeros and subnormals keep their sign, NaN stays a (quiet) NaN of the same sign.
inline Eigen::bfloat16 to_bf16_nearest_even(float f) {
  const auto bits = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return Eigen::numext::bit_cast<Eigen::bfloat16>(static_cast<std::uint16_t>((bits >> 16) | 0x0040u));
  const std::uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
  return Eigen::numext::bit_cast<Eigen::bfloat16>(static_cast<std::uint16_t>(rounded >> 16));
}

/// f32 -> bf16 by dropping the low 16 bits (TensorFlow's Cast with `Truncate`); NaN stays NaN.
inline Eigen::bfloat16 to_bf16_truncated(float f) {
  if (std::isnan(f)) return to_bf16_nearest_even(f);
  return Eigen::numext::bit_cast<Eigen::bfloat16>(static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(f) >> 16));
}

/// Parses `s` as a number for Cast from string ("+INF", "INF", "-INF", "NaN" in any case,
/// plain and scientific forms). Fails with a clear error when it is not a number.
inline double parse_number(const std::string& s, const kernel_node& n) {
  std::string_view v = s;
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  bool neg = false;
  std::string_view body = v;
  if (!body.empty() && (body.front() == '+' || body.front() == '-')) {
    neg = body.front() == '-';
    body.remove_prefix(1);
  }
  auto ieq = [](std::string_view x, std::string_view y) {
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (std::tolower(static_cast<unsigned char>(x[i])) != y[i]) return false;
    return true;
  };
  if (ieq(body, "inf") || ieq(body, "infinity")) return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  if (ieq(body, "nan")) return std::numeric_limits<double>::quiet_NaN();
  double r = 0;
  auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), r);
  if (body.empty() || ec != std::errc{} || p != body.data() + body.size())
    n.fail("cannot convert string '" + s + "' to a number");
  return neg ? -r : r;
}

/// One element converted from `S` to `D` per the ONNX Cast rules.
template <class S, class D>
D cast_one(const S& s, const kernel_node& n) {
  if constexpr (std::is_same_v<S, D>) {
    return s;
  } else if constexpr (std::is_same_v<D, std::string>) {
    if constexpr (std::is_same_v<S, bool>) {
      return s ? "1" : "0";
    } else if constexpr (std::is_integral_v<S>) {
      return std::to_string(s);
    } else {
      char buf[64];
      if constexpr (std::is_same_v<S, double>) {
        auto r = std::to_chars(buf, buf + sizeof buf, s);
        return std::string(buf, r.ptr);
      } else {
        auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(s));
        return std::string(buf, r.ptr);
      }
    }
  } else if constexpr (std::is_same_v<S, std::string>) {
    if constexpr (std::is_integral_v<D> && !std::is_same_v<D, bool>) {
      // exact integers first (keeps 64-bit precision), then anything numeric
      i64 v = 0;
      const char* b = s.data();
      if (!s.empty() && s.front() == '+') ++b;
      auto [p, ec] = std::from_chars(b, s.data() + s.size(), v);
      if (ec == std::errc{} && p == s.data() + s.size() && b != p) return static_cast<D>(v);
      if constexpr (std::is_same_v<D, std::uint64_t>) {
        std::uint64_t u = 0;
        auto [p2, ec2] = std::from_chars(b, s.data() + s.size(), u);
        if (ec2 == std::errc{} && p2 == s.data() + s.size() && b != p2) return u;
      }
      return float_to_int<D>(parse_number(s, n));
    } else {
      return cast_one<double, D>(parse_number(s, n), n);
    }
  } else if constexpr (std::is_same_v<D, bool>) {
    return static_cast<compute_t<S>>(s) != compute_t<S>(0);
  } else if constexpr (std::is_same_v<S, bool>) {
    return static_cast<D>(s ? 1 : 0);
  } else if constexpr (std::is_same_v<D, Eigen::bfloat16>) {
    return to_bf16_nearest_even(static_cast<float>(static_cast<compute_t<S>>(s)));
  } else if constexpr (is_low_float<S> || is_low_float<D>) {
    using C = std::conditional_t<std::is_same_v<S, double> || std::is_same_v<D, double>, double, float>;
    const C c = static_cast<C>(static_cast<compute_t<S>>(s));
    if constexpr (std::is_integral_v<D>) return float_to_int<D>(c);
    else return static_cast<D>(static_cast<float>(c));
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    return float_to_int<D>(s);
  } else {
    return static_cast<D>(s);
  }
}

/// The low-precision dtypes (gpass/core/low_precision.hpp), which Cast, CastLike,
/// QuantizeLinear and DequantizeLinear take and make.
inline std::vector<dtype> low_precision_dtypes() {
  return {dtype::f8e4m3fn, dtype::f8e4m3fnuz, dtype::f8e5m2, dtype::f8e5m2fnuz, dtype::u4,
          dtype::i4,       dtype::f4e2m1,     dtype::f8e8m0, dtype::u2,         dtype::i2};
}
/// `types` and the low-precision dtypes.
inline std::vector<dtype> with_low_precision(std::vector<dtype> types) {
  for (dtype d : low_precision_dtypes()) types.push_back(d);
  return types;
}

/// Cast's conversion options for the low-precision targets.
struct cast_options {
  bool saturate = true;                          ///< float8 targets (Cast-19)
  e8m0_rounding rounding = e8m0_rounding::up;    ///< f8e8m0 targets (Cast-24)
};

/// The elements of `x` as doubles (low-precision codes decoded, strings parsed, bool 0 / 1).
inline void to_doubles(const context& ctx, const gpass::tensor& x, std::vector<double>& out) {
  out.resize(static_cast<std::size_t>(x.size()));
  if (is_low_precision(x.element_type())) {
    const auto* c = reinterpret_cast<const std::uint8_t*>(x.raw());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = from_low_precision(x.element_type(), c[i]);
    return;
  }
  dispatch<all_types>(x.element_type(), ctx.node(), [&]<class S>() {
    const S* s = x.data<S>();
    for (std::size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<S, std::string>) out[i] = parse_number(s[i], ctx.node());
      else if constexpr (std::is_same_v<S, bool>) out[i] = s[i] ? 1.0 : 0.0;
      else if constexpr (std::is_same_v<S, std::complex<float>> || std::is_same_v<S, std::complex<double>>)
        ctx.fail("a complex tensor does not cast to or from the low-precision types");
      else out[i] = static_cast<double>(static_cast<compute_t<S>>(s[i]));
    }
  });
}

/// `x` cast to `to` as a new tensor written to output 0.
inline void cast_into(context& ctx, const gpass::tensor& x, dtype to, cast_options o = {}) {
  if (is_low_precision(x.element_type()) || is_low_precision(to)) {
    // through double: decode the source, then encode the target (ONNX's rules for the
    // low-precision types: gpass/core/low_precision.hpp)
    if (is_small_integer(to) && is_integer(x.element_type())) {  // integers wrap exactly (no trip through double)
      gpass::tensor& y = ctx.allocate_output(0, to, x.sizes());
      auto* c = reinterpret_cast<std::uint8_t*>(y.raw());
      const unsigned mask = (1u << bit_width(to)) - 1;
      dispatch<int_types>(x.element_type(), ctx.node(), [&]<class S>() {
        const S* s = x.data<S>();
        for (i64 i = 0; i < x.size(); ++i) c[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(s[i]) & mask);
      });
      return;
    }
    std::vector<double> v;
    to_doubles(ctx, x, v);
    gpass::tensor& y = ctx.allocate_output(0, to, x.sizes());
    if (is_low_precision(to)) {
      auto* c = reinterpret_cast<std::uint8_t*>(y.raw());
      for (std::size_t i = 0; i < v.size(); ++i) c[i] = to_low_precision(to, v[i], o.saturate, o.rounding);
      return;
    }
    dispatch<all_types>(to, ctx.node(), [&]<class D>() {
      D* d = y.data<D>();
      for (std::size_t i = 0; i < v.size(); ++i) d[i] = cast_one<double, D>(v[i], ctx.node());
    });
    return;
  }
  dispatch<all_types>(x.element_type(), ctx.node(), [&]<class S>() {
    dispatch<all_types>(to, ctx.node(), [&]<class D>() {
      gpass::tensor& y = ctx.allocate_output(0, to, x.sizes());
      const S* s = x.data<S>();
      D* d = y.data<D>();
      const kernel_node& n = ctx.node();
      const double cost = std::is_same_v<S, std::string> || std::is_same_v<D, std::string> ? 200.0 : 1.0;
      if constexpr (std::is_same_v<S, D> && !std::is_same_v<S, std::string>) {
        if (x.nbytes()) std::memcpy(d, s, x.nbytes());
      } else {
        parallel(ctx, x.size(), cost, [&](i64 b, i64 e) {
          for (i64 i = b; i < e; ++i) d[i] = cast_one<S, D>(s[i], n);
        });
      }
    });
  });
}

// ---- quantization ---------------------------------------------------------------------------

/// Where the quantization parameter (scale, zero point) of each element of `x` is: one for
/// the tensor, one per index of an axis (a 1-D parameter), or one per block of `block`
/// consecutive indices of an axis (blocked quantization: the parameter has x's rank and
/// ceil(size / block) on the axis).
struct quant_layout {
  i64 axis = -1;   ///< -1: per tensor
  i64 block = 0;   ///< 0: per axis
  i64 mid = 1, inner = 1, param_mid = 1;
  /// The parameter index of element `i` of `x`.
  i64 operator()(i64 i) const {
    if (axis < 0) return 0;
    const i64 m = (i / inner) % mid;
    if (block == 0) return m;
    return ((i / inner / mid) * param_mid + m / block) * inner + i % inner;
  }
};

inline quant_layout quant_layout_of(const std::vector<i64>& xs, const std::vector<i64>& ps, i64 axis, i64 block,
                                    const kernel_node& n, const char* what) {
  quant_layout q;
  if (block < 0) n.fail("block_size must not be negative, got " + std::to_string(block));
  if (block == 0 && num_elements(ps) == 1 && ps.size() <= 1) return q;
  // per-axis or blocked: x needs the axis (a scalar has none: its sizes were read past the end)
  if (xs.empty())
    n.fail(std::string(what) + " has sizes " + shape::of(ps).to_string() + (block ? ", blocked" : ", per-axis") +
           " quantization needs x of rank >= 1, x is a scalar");
  const i64 a = normalize_axis(axis, static_cast<i64>(xs.size()), n);
  const std::size_t ua = static_cast<std::size_t>(a);
  q.axis = a;
  q.block = block;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    if (d == ua) q.mid = xs[d];
    else if (d > ua) q.inner *= xs[d];
  }
  if (block == 0) {
    if (ps.size() != 1) n.fail(std::string(what) + " must be a scalar or a 1-D tensor, got " + shape::of(ps).to_string());
    if (ps[0] != xs[ua])
      n.fail(std::string(what) + " has " + std::to_string(ps[0]) + " elements, axis " + std::to_string(a) + " of " +
             shape::of(xs).to_string() + " has " + std::to_string(xs[ua]));
    q.param_mid = q.mid;
    return q;
  }
  bool ok = ps.size() == xs.size();
  for (std::size_t d = 0; ok && d < xs.size(); ++d)
    ok = d == ua ? ps[d] == xs[d] / block + (xs[d] % block != 0) : ps[d] == xs[d];
  if (!ok)
    n.fail(std::string(what) + " has sizes " + shape::of(ps).to_string() + ", blocked quantization of " +
           shape::of(xs).to_string() + " along axis " + std::to_string(a) + " with block_size " + std::to_string(block) +
           " needs " + std::to_string(xs[ua] / block + (xs[ua] % block != 0)) + " on that axis and x's sizes elsewhere");
  q.param_mid = ps[ua];
  return q;
}

/// The float values of a scale tensor (f32, f16, bf16, f64).
inline std::vector<float> float_values(const gpass::tensor& t, const kernel_node& n, const char* what) {
  std::vector<float> r(static_cast<std::size_t>(t.size()));
  if (is_low_precision(t.element_type())) {  // f8e8m0 scales
    const auto* c = reinterpret_cast<const std::uint8_t*>(t.raw());
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = from_low_precision(t.element_type(), c[i]);
    return r;
  }
  dispatch<float_types>(t.element_type(), n, [&]<class T>() {
    const T* p = t.data<T>();
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>(p[i]);
  });
  (void)what;
  return r;
}

template <class Q>
Q saturate_round(float v, float zp) {
  float r = std::nearbyint(v) + zp;
  constexpr float lo = static_cast<float>(std::numeric_limits<Q>::lowest());
  constexpr float hi = static_cast<float>(std::numeric_limits<Q>::max());
  if (std::isnan(r)) return Q(0);
  r = std::min(std::max(r, lo), hi);
  return static_cast<Q>(r);
}

/// Output 0 = `c ? x : y` elementwise, the three broadcast together (multidirectionally);
/// `c` is bool, `x` and `y` have one element type.
inline void where_into(context& ctx, const gpass::tensor& c, const gpass::tensor& x, const gpass::tensor& y) {
  if (c.element_type() != dtype::bool_) ctx.fail("condition must be bool, got " + std::string(to_string(c.element_type())));
  if (x.element_type() != y.element_type())
    ctx.fail("X and Y have different element types (" + std::string(to_string(x.element_type())) + " and " +
             std::string(to_string(y.element_type())) + ")");
  const auto os = broadcast_sizes(broadcast_sizes(c.sizes(), x.sizes(), ctx.node()), y.sizes(), ctx.node());
  dispatch<all_types>(x.element_type(), ctx.node(), [&]<class T>() {
    gpass::tensor& out = ctx.allocate_output(0, x.element_type(), os);
    if (out.size() == 0) return;
    const bool* cp = c.data<bool>();
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    if constexpr (std::is_same_v<T, std::string>) {
      // strings broadcast into copies: both branches bound the characters; the exact count
      // (a pass over the output, bounded by its element count) only when that is over the limit
      const i64 n = out.size();
      if (!string_output_fits(ctx, n, broadcast_chars(x, n) + broadcast_chars(y, n))) {
        strided_walker<3> w(os, {broadcast_strides(c.sizes(), os), broadcast_strides(x.sizes(), os), broadcast_strides(y.sizes(), os)});
        w.seek(0);
        double chars = 0;
        for (i64 i = 0; i < n; ++i, w.next())
          chars += static_cast<double>(cp[w.offset(0)] ? xp[w.offset(1)].size() : yp[w.offset(2)].size());
        check_string_output(ctx, n, chars);
      }
    }
    T* op = out.data<T>();
    const auto p = make_plan<3>(os, {&c.sizes(), &x.sizes(), &y.sizes()});
    run_plan(ctx, p, std::is_same_v<T, std::string> ? 50.0 : 1.0, [&](const std::array<i64, 3>& at, i64 pos, i64 len) {
      const bool* cr = cp + at[0];
      const T* xr = xp + at[1];
      const T* yr = yp + at[2];
      const i64 sc = p.inner_stride[0], sx = p.inner_stride[1], sy = p.inner_stride[2];
      T* o = op + pos;
      for (i64 i = 0; i < len; ++i) o[i] = cr[i * sc] ? xr[i * sx] : yr[i * sy];
    });
  });
}

}  // namespace ew

/// Registers the kernels of this family.
inline void register_elementwise(registry& r) {
  using namespace ew;
  using std::int64_t;

  // ---- binary arithmetic ---------------------------------------------------------------
  add_binary<numeric_types>(r, "Add", bf{[](auto a, auto b) { return add_w(a, b); }, [](const auto& x, const auto& y) { return x + y; }});
  add_binary<numeric_types>(r, "Sub", bf{[](auto a, auto b) { return sub_w(a, b); }, [](const auto& x, const auto& y) { return x - y; }});
  add_binary<numeric_types>(r, "Mul", bf{[](auto a, auto b) { return mul_w(a, b); }, [](const auto& x, const auto& y) { return x * y; }});
  add_binary<numeric_types>(r, "Div", bf{[](auto a, auto b) {
                                          if constexpr (std::is_integral_v<decltype(a)>) return div_int(a, b);
                                          else return a / b;
                                        },
                                        [](const auto& x, const auto& y) { return x / y; }});
  r.add({.op = "Mod", .dtypes = numeric_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const bool fmod = n.attr<int64_t>("fmod", 0) != 0;
           return binary_kernel<numeric_types, false>(n, bsf{[fmod](auto a, auto b) { return mod_op(a, b, fmod); }}, 2.0);
         }});
  // BitShift: unsigned types, signed ones from opset 28 (an arithmetic right shift; shifts by
  // the bit width or more, or by a negative amount, give 0, or -1 for a negative value
  // shifted right)
  r.add({.op = "BitShift", .dtypes = int_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const std::string dir = n.attr<std::string>("direction");
           if (dir != "LEFT" && dir != "RIGHT") n.fail("attribute 'direction' must be LEFT or RIGHT, got '" + dir + "'");
           const bool left = dir == "LEFT";
           return binary_kernel<int_types, false>(n, bsf{[left](auto a, auto b) {
                                                    using C = decltype(a);
                                                    using U = std::make_unsigned_t<C>;
                                                    constexpr auto bits = sizeof(C) * 8;
                                                    if (b < C(0) || static_cast<U>(b) >= bits) return left || a >= C(0) ? C(0) : C(-1);
                                                    return left ? C(static_cast<U>(a) << b) : C(a >> b);
                                                  }},
                                                  1.0);
         }});
  add_binary<type_list<std::string>>(r, "StringConcat", bsf{[](const std::string& a, const std::string& b) { return a + b; }}, 20.0);
  add_binary<int_types>(r, "BitwiseAnd", bsf{[](auto a, auto b) { return decltype(a)(a & b); }});
  add_binary<int_types>(r, "BitwiseOr", bsf{[](auto a, auto b) { return decltype(a)(a | b); }});
  add_binary<int_types>(r, "BitwiseXor", bsf{[](auto a, auto b) { return decltype(a)(a ^ b); }});
  add_unary<int_types>(r, "BitwiseNot", sf{[](auto a) { return decltype(a)(~a); }});
  r.add({.op = "Pow", .dtypes = pow_base_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const i64 lax = legacy_axis(n);
           return [lax](context& ctx) {
             const gpass::tensor& a = ctx.input(0);
             const gpass::tensor& b = ctx.input(1);
             const std::vector<i64> bs = lax == no_legacy_axis ? b.sizes() : legacy_sizes(a.sizes(), b.sizes(), lax, ctx.node());
             const auto os = broadcast_sizes(a.sizes(), bs, ctx.node());
             dispatch<pow_base_types>(a.element_type(), ctx.node(), [&]<class A>() {
               dispatch<pow_exp_types>(b.element_type(), ctx.node(), [&]<class B>() {
                 gpass::tensor& y = ctx.allocate_output(0, dtype_of_v<A>, os);
                 if (y.size() == 0) return;
                 binary_into<A, B, A>(ctx, a.data<A>(), a.sizes(), b.data<B>(), bs, y.data<A>(), os, pow_f{}, 20.0);
               });
             });
           };
         }});

  // ---- logic and comparison --------------------------------------------------------------
  add_binary<bool_types>(r, "And", bsf{[](bool a, bool b) { return a && b; }});
  add_binary<bool_types>(r, "Or", bsf{[](bool a, bool b) { return a || b; }});
  add_binary<bool_types>(r, "Xor", bsf{[](bool a, bool b) { return a != b; }});
  add_binary<eq_types, true>(r, "Equal", bsf{[](const auto& a, const auto& b) { return a == b; }});
  add_binary<numeric_types, true>(r, "Less", bsf{[](auto a, auto b) { return a < b; }});
  add_binary<numeric_types, true>(r, "Greater", bsf{[](auto a, auto b) { return a > b; }});
  add_binary<numeric_types, true>(r, "LessOrEqual", bsf{[](auto a, auto b) { return a <= b; }});
  add_binary<numeric_types, true>(r, "GreaterOrEqual", bsf{[](auto a, auto b) { return a >= b; }});

  // ---- variadic ----------------------------------------------------------------------------
  auto add_variadic = [&r](const char* op, auto types, auto f, bool mean) {
    using L = decltype(types);
    r.add({.op = op, .dtypes = L::dtypes(), .make = [f, mean](const kernel_node&) -> fn {
             return variadic_kernel<L>(f, mean, 1.0);
           }});
  };
  add_variadic("Max", numeric_types{},
               bf{[](auto a, auto b) { return max_nan(a, b); },
                  [](const auto& x, const auto& y) {
                    using S = scalar_of<decltype(x)>;
                    return x.binaryExpr(y, Eigen::internal::scalar_max_op<S, S, Eigen::PropagateNaN>());
                  }},
               false);
  add_variadic("Min", numeric_types{},
               bf{[](auto a, auto b) { return min_nan(a, b); },
                  [](const auto& x, const auto& y) {
                    using S = scalar_of<decltype(x)>;
                    return x.binaryExpr(y, Eigen::internal::scalar_min_op<S, S, Eigen::PropagateNaN>());
                  }},
               false);
  add_variadic("Sum", numeric_types{}, bf{[](auto a, auto b) { return add_w(a, b); }, [](const auto& x, const auto& y) { return x + y; }}, false);
  add_variadic("Mean", float_types{}, bf{[](auto a, auto b) { return a + b; }, [](const auto& x, const auto& y) { return x + y; }}, true);

  // ---- unary math ----------------------------------------------------------------------------
  add_unary<numeric_types>(r, "Abs", uf{[](auto x) {
                                          using C = decltype(x);
                                          if constexpr (std::is_unsigned_v<C>) return x;
                                          else if constexpr (std::is_integral_v<C>) return x < 0 ? sub_w(C(0), x) : x;
                                          else return std::abs(x);
                                        },
                                        [](const auto& x) { return x.abs(); }});
  add_unary<signed_numeric_types>(r, "Neg", uf{[](auto x) { return sub_w(decltype(x)(0), x); }, [](const auto& x) { return -x; }});
  add_unary<numeric_types>(r, "Sign", sf{[](auto x) {
                                         using C = decltype(x);
                                         if constexpr (std::is_floating_point_v<C>) {
                                           if (std::isnan(x)) return x;
                                         }
                                         return C(x > C(0) ? 1 : (x < C(0) ? -1 : 0));
                                       }});
  add_unary<float_types>(r, "Ceil", uf{[](auto x) { return std::ceil(x); }, [](const auto& x) { return x.ceil(); }});
  add_unary<float_types>(r, "Floor", uf{[](auto x) { return std::floor(x); }, [](const auto& x) { return x.floor(); }});
  add_unary<float_types>(r, "Round", uf{[](auto x) { return std::nearbyint(x); }, [](const auto& x) { return x.rint(); }});
  add_unary<float_types>(r, "Exp", uf{[](auto x) { return std::exp(x); }, [](const auto& x) { return exp_or_zero(x); }}, 10.0);
  add_unary<float_types>(r, "Log", uf{[](auto x) { return std::log(x); }, [](const auto& x) { return x.log(); }}, 10.0);
  add_unary<float_types>(r, "Sqrt", uf{[](auto x) { return std::sqrt(x); }, [](const auto& x) { return x.sqrt(); }}, 4.0);
  add_unary<float_types>(r, "Reciprocal", uf{[](auto x) { return decltype(x)(1) / x; }, [](const auto& x) { return x.inverse(); }}, 2.0);
  add_unary<float_types>(r, "Sin", uf{[](auto x) { return std::sin(x); }, [](const auto& x) { return x.sin(); }}, 10.0);
  add_unary<float_types>(r, "Cos", uf{[](auto x) { return std::cos(x); }, [](const auto& x) { return x.cos(); }}, 10.0);
  add_unary<float_types>(r, "Tan", sf{[](auto x) { return std::tan(x); }}, 20.0);
  add_unary<float_types>(r, "Asin", sf{[](auto x) { return std::asin(x); }}, 20.0);
  add_unary<float_types>(r, "Acos", sf{[](auto x) { return std::acos(x); }}, 20.0);
  add_unary<float_types>(r, "Atan", sf{[](auto x) { return std::atan(x); }}, 20.0);
  add_unary<float_types>(r, "Sinh", sf{[](auto x) { return std::sinh(x); }}, 20.0);
  add_unary<float_types>(r, "Cosh", sf{[](auto x) { return std::cosh(x); }}, 20.0);
  add_unary<float_types>(r, "Asinh", sf{[](auto x) { return std::asinh(x); }}, 20.0);
  add_unary<float_types>(r, "Acosh", sf{[](auto x) { return std::acosh(x); }}, 20.0);
  add_unary<float_types>(r, "Atanh", sf{[](auto x) { return std::atanh(x); }}, 20.0);
  add_unary<float_types>(r, "Tanh", uf{[](auto x) { return std::tanh(x); }, [](const auto& x) { return x.tanh(); }}, 10.0);
  // Erf: Eigen's vectorized form on contiguous runs (f32: within 4e-7 of the exact value,
  // 20x the speed of libm's erff), libm's elsewhere
  add_unary<float_types>(r, "Erf", uf{[](auto x) { return std::erf(x); }, [](const auto& x) { return x.erf(); }}, 20.0);
  add_unary<float_types, true>(r, "IsNaN", sf{[](auto x) { return std::isnan(x); }});
  r.add({.op = "IsInf", .dtypes = float_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const bool neg = n.attr<int64_t>("detect_negative", 1) != 0;
           const bool pos = n.attr<int64_t>("detect_positive", 1) != 0;
           return unary_kernel<float_types, true>(sf{[neg, pos](auto x) { return std::isinf(x) && (x > 0 ? pos : neg); }}, 1.0);
         }});
  add_unary<bool_types>(r, "Not", sf{[](bool x) { return !x; }});

  // ---- activations --------------------------------------------------------------------------
  add_unary<signed_numeric_types>(r, "Relu", uf{[](auto x) { return x < decltype(x)(0) ? decltype(x)(0) : x; },
                                                [](const auto& x) { return amax(x, 0); }});
  r.add({.op = "LeakyRelu", .dtypes = float_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const double alpha = n.attr<double>("alpha", 0.01);
           return unary_kernel<float_types, false>(
               uf{[alpha](auto x) { using C = decltype(x); return x >= C(0) ? x : x * C(alpha); },
                  [alpha](const auto& x) { using S = scalar_of<decltype(x)>; return where_less(x, S(0), x * S(alpha), x); }},
               2.0);
         }});
  r.add({.op = "Elu", .dtypes = float_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const double alpha = n.attr<double>("alpha", 1.0);
           return unary_kernel<float_types, false>(
               uf{[alpha](auto x) { using C = decltype(x); return x >= C(0) ? x : C(alpha) * (std::exp(x) - C(1)); },
                  [alpha](const auto& x) { using S = scalar_of<decltype(x)>; return where_less(x, S(0), S(alpha) * (x.exp() - S(1)), x); }},
               10.0);
         }});
  r.add({.op = "Selu", .dtypes = float_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const double alpha = n.attr<double>("alpha", 1.67326319217681884765625);
           const double gamma = n.attr<double>("gamma", 1.05070102062225341796875);
           return unary_kernel<float_types, false>(sf{[alpha, gamma](auto x) {
                                                     using C = decltype(x);
                                                     return x > C(0) ? C(gamma) * x : C(gamma) * (C(alpha) * std::exp(x) - C(alpha));
                                                   }},
                                                   10.0);
         }});
  r.add({.op = "Celu", .dtypes = float_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const double alpha = n.attr<double>("alpha", 1.0);
           if (alpha == 0) n.fail("attribute 'alpha' must not be 0");
           return unary_kernel<float_types, false>(sf{[alpha](auto x) {
                                                     using C = decltype(x);
                                                     return std::max(C(0), x) + std::min(C(0), C(alpha) * (std::exp(x / C(alpha)) - C(1)));
                                                   }},
                                                   10.0);
         }});
  add_unary<float_types>(r, "Sigmoid",
                         uf{[](auto x) {
                              using C = decltype(x);
                              return x >= C(0) ? C(1) / (C(1) + std::exp(-x)) : std::exp(x) / (C(1) + std::exp(x));
                            },
                            [](const auto& x) { return x.logistic(); }},
                         10.0);
  r.add({.op = "HardSigmoid", .dtypes = float_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const double alpha = n.attr<double>("alpha", 0.2), beta = n.attr<double>("beta", 0.5);
           return unary_kernel<float_types, false>(
               uf{[alpha, beta](auto x) { using C = decltype(x); return std::max(std::min(C(alpha) * x + C(beta), C(1)), C(0)); },
                  [alpha, beta](const auto& x) { using S = scalar_of<decltype(x)>; return amax(amin(S(alpha) * x + S(beta), S(1)), S(0)); }},
               2.0);
         }});
  add_unary<float_types>(r, "HardSwish",
                         uf{[](auto x) { using C = decltype(x); return x * std::max(std::min(x * C(1.0 / 6) + C(0.5), C(1)), C(0)); },
                            [](const auto& x) { using S = scalar_of<decltype(x)>; return x * amax(amin(x * S(1.0 / 6) + S(0.5), S(1)), S(0)); }},
                         2.0);
  add_unary<float_types>(r, "Softplus", sf{[](auto x) {
                                             using C = decltype(x);
                                             return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
                                           }},
                         20.0);
  add_unary<float_types>(r, "Softsign", uf{[](auto x) { return x / (decltype(x)(1) + std::abs(x)); },
                                           [](const auto& x) { return x / (x.abs() + scalar_of<decltype(x)>(1)); }},
                         2.0);
  r.add({.op = "ThresholdedRelu", .dtypes = float_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const double alpha = n.attr<double>("alpha", 1.0);
           return unary_kernel<float_types, false>(sf{[alpha](auto x) { using C = decltype(x); return x > C(alpha) ? x : C(0); }}, 1.0);
         }});
  r.add({.op = "Shrink", .dtypes = signed_numeric_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const double bias = n.attr<double>("bias", 0.0), lambd = n.attr<double>("lambd", 0.5);
           return unary_kernel<signed_numeric_types, false>(sf{[bias, lambd](auto x) {
                                                              using C = decltype(x);
                                                              const double v = static_cast<double>(x);
                                                              // integers: a result past C's range (int64's 2^63, a huge or
                                                              // NaN bias) converts defined (NaN 0, saturating, wrapping)
                                                              auto to_c = [](double r) {
                                                                if constexpr (std::is_integral_v<C>) return float_to_int<C>(r);
                                                                else return static_cast<C>(r);
                                                              };
                                                              if (v < -lambd) return to_c(v + bias);
                                                              if (v > lambd) return to_c(v - bias);
                                                              return C(0);
                                                            }},
                                                            2.0);
         }});
  add_unary<float_types>(r, "Mish", sf{[](auto x) {  // x * tanh(softplus(x))
                                         using C = decltype(x);
                                         const C sp = x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
                                         return x * std::tanh(sp);
                                       }},
                         25.0);
  r.add({.op = "Swish", .dtypes = float_types::dtypes(), .make = [](const kernel_node& n) -> fn {  // x * sigmoid(alpha x)
           const double alpha = n.attr<double>("alpha", 1.0);
           return unary_kernel<float_types, false>(sf{[alpha](auto x) {
                                                     using C = decltype(x);
                                                     const C z = C(alpha) * x;
                                                     return x * (z >= C(0) ? C(1) / (C(1) + std::exp(-z)) : std::exp(z) / (C(1) + std::exp(z)));
                                                   }},
                                                   12.0);
         }});
  // ONNX's Gelu (opset 20) and gpass's (the optimizer's -O3 on older graphs): one kernel
  auto gelu = [](const kernel_node& n) -> fn {
           const std::string approx = n.attr<std::string>("approximate", "none");
           if (approx != "none" && approx != "tanh") n.fail("attribute 'approximate' must be none or tanh, got '" + approx + "'");
           if (approx == "tanh")
             return unary_kernel<float_types, false>(sf{[](auto x) {
                                                       using C = decltype(x);
                                                       const C k = C(0.7978845608028654);  // sqrt(2/pi)
                                                       return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
                                                     }},
                                                     20.0);
           return unary_kernel<float_types, false>(
               uf{[](auto x) { using C = decltype(x); return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476))); },
                  [](const auto& x) {
                    using S = scalar_of<decltype(x)>;
                    return S(0.5) * x * (S(1) + (x * S(0.7071067811865476)).erf());
                  }},
               20.0);
         };
  r.add({.op = "Gelu", .dtypes = float_types::dtypes(), .make = gelu});
  r.add({.domain = "gpass", .op = "Gelu", .dtypes = float_types::dtypes(), .make = gelu});
  // gpass::FusedElementwise (fuse-elementwise): the program's steps on blocks of elements,
  // each step an Eigen array expression of the op's vectorized form above, the blocks small
  // enough that every intermediate stays in cache
  r.add({.domain = "gpass", .op = "FusedElementwise", .dtypes = type_list<float, double>::dtypes(), .make = [](const kernel_node& n) -> fn {
           const std::vector<fused_step> steps = parse_fused_program(
               n.attr<std::vector<std::string>>("program", {}), n.num_inputs(), [&](const std::string& m) { n.fail(m); });
           return [steps](context& ctx) {
             const std::size_t k = ctx.num_inputs();
             std::vector<i64> os;
             for (std::size_t i = 0; i < k; ++i) {
               if (ctx.input(i).element_type() != ctx.input(0).element_type()) ctx.fail("the inputs must have one element type");
               os = i == 0 ? ctx.input(0).sizes() : broadcast_sizes(os, ctx.input(i).sizes(), ctx.node());
             }
             dispatch<type_list<float, double>>(ctx.input(0).element_type(), ctx.node(), [&]<class T>() {
               gpass::tensor& y = ctx.allocate_output(0, ctx.input(0).element_type(), os);
               const i64 total = y.size();
               if (total == 0) return;
               // how each input is read: in place (all elements), one value, repeated (its
               // sizes are the output's last ones: a bias vector), or through broadcast strides
               enum class read { full, scalar, repeated, strided };
               std::vector<read> how(k);
               std::vector<std::vector<i64>> strides(k);
               for (std::size_t i = 0; i < k; ++i) {
                 const auto& x = ctx.input(i);
                 how[i] = x.size() == total ? read::full : x.size() == 1 ? read::scalar : read::strided;
                 if (how[i] != read::strided) continue;
                 if (repeats_into(x.sizes(), os)) how[i] = read::repeated;
                 else strides[i] = broadcast_strides(x.sizes(), os);
               }
               constexpr i64 block = 512;
               T* yp = y.data<T>();
               ctx.policy().parallel_for((total + block - 1) / block, 4.0 * static_cast<double>(block * static_cast<i64>(steps.size())),
                                         [&](i64 b0, i64 b1) {
                 std::vector<T> buf(static_cast<std::size_t>(block) * (steps.size() + k));
                 T* const step_buf = buf.data();
                 T* const in_buf = buf.data() + static_cast<std::size_t>(block) * steps.size();
                 for (i64 blk = b0; blk < b1; ++blk) {
                   const i64 lo = blk * block, len = std::min(block, total - lo);
                   // the inputs of this block, contiguous
                   std::vector<const T*> in(k);
                   for (std::size_t i = 0; i < k; ++i) {
                     const T* xp = ctx.input(i).template data<T>();
                     T* dst = in_buf + static_cast<i64>(i) * block;
                     if (how[i] == read::full) {
                       in[i] = xp + lo;
                       continue;
                     }
                     if (how[i] == read::scalar) {
                       std::fill_n(dst, len, xp[0]);
                     } else if (how[i] == read::repeated) {
                       const i64 period = ctx.input(i).size();
                       for (i64 e = 0, at = lo % period; e < len; ++e, at = at + 1 == period ? 0 : at + 1) dst[e] = xp[at];
                     } else {
                       strided_walker<1> w(os, {strides[i]});
                       w.seek(lo);
                       for (i64 e = 0; e < len; ++e, w.next()) dst[e] = xp[w.offset(0)];
                     }
                     in[i] = dst;
                   }
                   for (std::size_t st = 0; st < steps.size(); ++st) {
                     const fused_step& p = steps[st];
                     auto operand = [&](int a) {
                       return cmap<T>(a >= 0 ? in[static_cast<std::size_t>(a)] : step_buf + static_cast<i64>(-a - 1) * block, len);
                     };
                     T* out = st + 1 == steps.size() ? yp + lo : step_buf + static_cast<i64>(st) * block;
                     mmap<T> o(out, len);
                     const auto a = operand(p.args[0]);
                     switch (p.code) {
                       case fused_op::Add: o = a + operand(p.args[1]); break;
                       case fused_op::Sub: o = a - operand(p.args[1]); break;
                       case fused_op::Mul: o = a * operand(p.args[1]); break;
                       case fused_op::Div: o = a / operand(p.args[1]); break;
                       case fused_op::Relu: o = amax(a, T(0)); break;
                       case fused_op::Sigmoid: o = a.logistic(); break;
                       case fused_op::Tanh: o = a.tanh(); break;
                       case fused_op::Exp: o = exp_or_zero(a); break;
                       case fused_op::Log: o = a.log(); break;
                       case fused_op::Neg: o = -a; break;
                       case fused_op::Abs: o = a.abs(); break;
                       case fused_op::Sqrt: o = a.sqrt(); break;
                       case fused_op::Erf: o = a.erf(); break;
                       case fused_op::Reciprocal: o = a.inverse(); break;
                       case fused_op::Ceil: o = a.ceil(); break;
                       case fused_op::Floor: o = a.floor(); break;
                     }
                   }
                 }
               });
             });
           };
         }});
  r.add({.op = "PRelu", .dtypes = signed_numeric_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const int opset = n.opset;
           return [opset](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const gpass::tensor& s = ctx.input(1);
             if (x.element_type() != s.element_type())
               ctx.fail("slope has element type " + std::string(to_string(s.element_type())) + ", X has " +
                        std::string(to_string(x.element_type())));
             std::vector<i64> ss = s.sizes();
             // opset < 7: a 1-D slope of the channel count applies along axis 1
             if (opset > 0 && opset < 7 && ss.size() == 1 && x.rank() >= 2 && ss[0] == x.sizes()[1] && ss[0] != 1)
               ss.resize(x.rank() - 1, 1);
             if (broadcast_sizes(x.sizes(), ss, ctx.node()) != x.sizes())
               ctx.fail("slope of sizes " + shape::of(s.sizes()).to_string() + " does not broadcast to X " +
                        shape::of(x.sizes()).to_string());
             dispatch<signed_numeric_types>(x.element_type(), ctx.node(), [&]<class T>() {
               gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
               if (y.size() == 0) return;
               binary_into<T, T, T>(ctx, x.data<T>(), x.sizes(), s.data<T>(), ss, y.data<T>(), x.sizes(),
                                    bf{[](auto a, auto b) { return a < decltype(a)(0) ? mul_w(a, b) : a; },
                                       [](const auto& a, const auto& b) { return where_less(a, scalar_of<decltype(a)>(0), a * b, a); }},
                                    2.0);
             });
           };
         }});

  // ---- Where, Clip ------------------------------------------------------------------------------
  r.add({.op = "Where", .dtypes = all_types::dtypes(), .type_input = 1, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             where_into(ctx, ctx.input(0), ctx.input(1), ctx.input(2));
           };
         }});
  r.add({.op = "Clip", .dtypes = numeric_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const bool attrs = n.opset > 0 && n.opset < 11;
           const double attr_min = n.attr<double>("min", -std::numeric_limits<double>::infinity());
           const double attr_max = n.attr<double>("max", std::numeric_limits<double>::infinity());
           return [attrs, attr_min, attr_max](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             dispatch<numeric_types>(x.element_type(), ctx.node(), [&]<class T>() {
               using C = compute_t<T>;
               C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
               if constexpr (std::is_floating_point_v<C>) {
                 lo = -std::numeric_limits<C>::infinity();
                 hi = std::numeric_limits<C>::infinity();
               }
               auto bound = [&](std::size_t i, C fallback) -> C {
                 if (!ctx.has_input(i)) return fallback;
                 const gpass::tensor& t = ctx.input(i);
                 if (t.element_type() != x.element_type())
                   ctx.fail(std::string(i == 1 ? "min" : "max") + " has element type " + std::string(to_string(t.element_type())) +
                            ", input has " + std::string(to_string(x.element_type())));
                 if (t.size() != 1) ctx.fail(std::string(i == 1 ? "min" : "max") + " must be a scalar, got " + t.shape().to_string());
                 return static_cast<C>(t.data<T>()[0]);
               };
               if (attrs) {
                 if constexpr (std::is_floating_point_v<C>) {
                   lo = static_cast<C>(attr_min);
                   hi = static_cast<C>(attr_max);
                 } else {
                   // saturated to C's range (a bound of 1000 on int8 was a cast out of range)
                   auto saturate = [](double v) {
                     if (v <= static_cast<double>(std::numeric_limits<C>::lowest())) return std::numeric_limits<C>::lowest();
                     if (v >= static_cast<double>(std::numeric_limits<C>::max())) return std::numeric_limits<C>::max();
                     return static_cast<C>(v);
                   };
                   if (std::isfinite(attr_min)) lo = saturate(attr_min);
                   if (std::isfinite(attr_max)) hi = saturate(attr_max);
                 }
               } else {
                 lo = bound(1, lo);
                 hi = bound(2, hi);
               }
               gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
               // ONNX: min > max gives max everywhere (numpy clip order: max(min(...)))
               unary_into<T, T>(ctx, x.data<T>(), y.data<T>(), x.size(),
                                uf{[lo, hi](auto v) { using V = decltype(v); return std::min(std::max(v, V(lo)), V(hi)); },
                                   [lo, hi](const auto& v) { using S = scalar_of<decltype(v)>; return amin(amax(v, S(lo)), S(hi)); }},
                                1.0);
             });
           };
         }});

  // ---- Cast, CastLike, Identity, Dropout ---------------------------------------------------------
  auto cast_opts = [](const kernel_node& n) {
    cast_options o;
    o.saturate = n.attr<std::int64_t>("saturate", 1) != 0;
    const std::string mode = n.attr<std::string>("round_mode", "up");
    if (!parse_e8m0_rounding(mode, o.rounding)) n.fail("round_mode must be up, down or nearest, not '" + mode + "'");
    return o;
  };
  r.add({.op = "Cast", .dtypes = with_low_precision(all_types::dtypes()), .make = [cast_opts](const kernel_node& n) -> fn {
           const dtype to = cast_target(n);
           return [to, o = cast_opts(n)](context& ctx) { cast_into(ctx, ctx.input(0), to, o); };
         }});
  r.add({.op = "CastLike", .dtypes = with_low_precision(all_types::dtypes()), .make = [cast_opts](const kernel_node& n) -> fn {
           return [o = cast_opts(n)](context& ctx) { cast_into(ctx, ctx.input(0), ctx.input(1).element_type(), o); };
         }});
  r.add({.op = "Identity", .alias_input = 0, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) { ctx.set_output(0, ctx.input_value(0)); };
         }});
  // Dropout: inference (no training_mode, or false, or ratio 0) passes the input through with
  // an all-true mask; training mode keeps each element with probability 1 - ratio and scales
  // it by 1 / (1 - ratio), the mask saying which were kept (a generator seeded by the `seed`
  // attribute when there is one, else a nondeterministic one, as RandomUniform's)
  r.add({.op = "Dropout", .dtypes = float_types::dtypes(), .alias_input = 0, .make = [](const kernel_node& n) -> fn {
           const int opset = n.opset;
           const double attr_ratio = n.attr<double>("ratio", 0.5);
           const bool seeded = n.has_attr("seed");
           const double seed = n.attr<double>("seed", 0.0);
           return [opset, attr_ratio, seeded, seed](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             bool training = false;
             double ratio = attr_ratio;
             if (opset == 0 || opset >= 12) {
               ratio = 0.5;
               if (ctx.has_input(1)) {
                 const gpass::tensor& rt = ctx.input(1);
                 if (rt.size() != 1) ctx.fail("ratio must be a scalar");
                 dispatch<float_types>(rt.element_type(), ctx.node(), [&]<class T>() { ratio = static_cast<double>(rt.data<T>()[0]); });
               }
               if (ctx.has_input(2)) {
                 const gpass::tensor& tm = ctx.input(2);
                 if (tm.element_type() != dtype::bool_ || tm.size() != 1) ctx.fail("training_mode must be a bool scalar");
                 training = tm.data<bool>()[0];
               }
             }
             const bool want_mask = ctx.num_outputs() > 1 && ctx.output_wanted(1);
             const bool old_mask = opset > 0 && opset < 10;  // the mask in the input's type
             if (training && ratio != 0) {
               if (!(ratio > 0 && ratio < 1)) ctx.fail("ratio must be in [0, 1), got " + std::to_string(ratio));
               std::mt19937_64 eng = make_engine(seeded, seed);
               std::uniform_real_distribution<double> u(0.0, 1.0);
               std::vector<char> keep(static_cast<std::size_t>(x.size()));
               for (auto& k : keep) k = u(eng) >= ratio;
               const double scale = 1.0 / (1.0 - ratio);
               dispatch<float_types>(x.element_type(), ctx.node(), [&]<class T>() {
                 using C = compute_t<T>;
                 gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
                 for (i64 i = 0; i < x.size(); ++i)
                   y.data<T>()[i] = keep[static_cast<std::size_t>(i)] ? static_cast<T>(static_cast<C>(static_cast<double>(static_cast<C>(x.data<T>()[i])) * scale)) : T(0);
                 if (want_mask && old_mask) {
                   gpass::tensor& m = ctx.allocate_output(1, x.element_type(), x.sizes());
                   for (i64 i = 0; i < x.size(); ++i) m.data<T>()[i] = T(keep[static_cast<std::size_t>(i)] ? 1 : 0);
                 }
               });
               if (want_mask && !old_mask) {
                 gpass::tensor& m = ctx.allocate_output(1, dtype::bool_, x.sizes());
                 for (i64 i = 0; i < x.size(); ++i) m.data<bool>()[i] = keep[static_cast<std::size_t>(i)] != 0;
               }
               return;
             }
             ctx.set_output(0, x);
             if (want_mask) {
               if (old_mask) {
                 dispatch<float_types>(x.element_type(), ctx.node(), [&]<class T>() {
                   gpass::tensor& m = ctx.allocate_output(1, x.element_type(), x.sizes());
                   std::fill_n(m.data<T>(), m.size(), T(1));
                 });
               } else {
                 gpass::tensor& m = ctx.allocate_output(1, dtype::bool_, x.sizes());
                 std::fill_n(m.data<bool>(), m.size(), true);
               }
             }
           };
         }});

  // ---- quantization ---------------------------------------------------------------------------
  r.add({.op = "QuantizeLinear", .dtypes = {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::int32},
         .make = [](const kernel_node& n) -> fn {
           const i64 axis = n.attr<i64>("axis", 1);
           const i64 block = n.attr<i64>("block_size", 0);
           const i64 out_code = n.attr<i64>("output_dtype", 0);
           const bool saturate = n.attr<i64>("saturate", 1) != 0;
           dtype out_type = dtype::uint8;
           if (out_code != 0) {
             auto d = dtype_from_onnx_code(out_code);
             if (!d || !(*d == dtype::uint8 || *d == dtype::int8 || *d == dtype::uint16 || *d == dtype::int16 ||
                         (is_low_precision(*d) && *d != dtype::f8e8m0)))
               n.fail("output_dtype " + std::to_string(out_code) + " is not a quantized type (8-, 16-, 4- or 2-bit integers, float8, float4)");
             out_type = *d;
           }
           return [axis, block, out_code, out_type, saturate](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const gpass::tensor& sc = ctx.input(1);
             const bool has_zp = ctx.has_input(2);
             const dtype qt = has_zp ? ctx.input(2).element_type() : out_type;
             if (has_zp && out_code != 0 && qt != out_type)
               ctx.fail("y_zero_point has element type " + std::string(to_string(qt)) + ", output_dtype says " +
                        std::string(to_string(out_type)));
             const quant_layout lay = quant_layout_of(x.sizes(), sc.sizes(), axis, block, ctx.node(), "y_scale");
             if (has_zp && ctx.input(2).sizes() != sc.sizes() && !(ctx.input(2).size() == 1 && sc.size() == 1))
               ctx.fail("y_zero_point has sizes " + ctx.input(2).shape().to_string() + ", y_scale has " + sc.shape().to_string());
             const std::vector<float> scale = float_values(sc, ctx.node(), "y_scale");
             for (float s : scale)
               if (!(s != 0) || !std::isfinite(s)) ctx.fail("y_scale must be finite and non-zero");
             std::vector<float> xf(static_cast<std::size_t>(x.size()));
             dispatch<type_list<float, Eigen::half, Eigen::bfloat16, double, std::int32_t>>(x.element_type(), ctx.node(), [&]<class T>() {
               const T* p = x.data<T>();
               for (std::size_t i = 0; i < xf.size(); ++i) xf[i] = static_cast<float>(p[i]);
             });
             if (is_low_precision(qt)) {
               // 4- and 2-bit integers: rounded (ties to even) and clamped; float8 / float4: cast
               // (saturating unless `saturate` = 0)
               std::vector<double> zp(scale.size(), 0.0);
               if (has_zp) {
                 const auto* z = reinterpret_cast<const std::uint8_t*>(ctx.input(2).raw());
                 for (std::size_t i = 0; i < zp.size(); ++i) zp[i] = from_low_precision(qt, z[i]);
               }
               const bool integral = is_small_integer(qt);
               const auto [lo, hi] = low_precision_range(qt);
               gpass::tensor& y = ctx.allocate_output(0, qt, x.sizes());
               auto* o = reinterpret_cast<std::uint8_t*>(y.raw());
               for (i64 i = 0; i < x.size(); ++i) {
                 const std::size_t c = static_cast<std::size_t>(lay(i));
                 const float v = xf[static_cast<std::size_t>(i)] / scale[c];  // in float, as ONNX divides
                 o[i] = integral ? to_low_precision(qt, std::clamp(std::nearbyint(static_cast<double>(v)) + zp[c], lo, hi))
                                 : to_low_precision(qt, static_cast<double>(v) + zp[c], saturate);
               }
               return;
             }
             dispatch<quant_types>(qt, ctx.node(), [&]<class Q>() {
               std::vector<float> zp(scale.size(), 0.0f);
               if (has_zp) {
                 const Q* z = ctx.input(2).data<Q>();
                 for (std::size_t i = 0; i < zp.size(); ++i) zp[i] = static_cast<float>(z[i]);
               }
               gpass::tensor& y = ctx.allocate_output(0, qt, x.sizes());
               Q* o = y.data<Q>();
               ctx.policy().parallel_for(x.size(), 4.0, [&](i64 b, i64 e) {
                 for (i64 i = b; i < e; ++i) {
                   const std::size_t c = static_cast<std::size_t>(lay(i));
                   o[i] = saturate_round<Q>(xf[static_cast<std::size_t>(i)] / scale[c], zp[c]);
                 }
               });
             });
           };
         }});
  r.add({.op = "DequantizeLinear", .dtypes = with_low_precision(dequant_types::dtypes()), .make = [](const kernel_node& n) -> fn {
           const i64 axis = n.attr<i64>("axis", 1);
           const i64 block = n.attr<i64>("block_size", 0);
           const i64 out_code = n.attr<i64>("output_dtype", 0);
           dtype out_type = dtype::undefined;  // the scale's type
           if (out_code != 0) {
             auto d = dtype_from_onnx_code(out_code);
             if (!d || (*d != dtype::f32 && *d != dtype::f16 && *d != dtype::bf16))
               n.fail("output_dtype " + std::to_string(out_code) + " must be float, float16 or bfloat16");
             out_type = *d;
           }
           return [axis, block, out_type](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const gpass::tensor& sc = ctx.input(1);
             const bool has_zp = ctx.has_input(2);
             const quant_layout lay = quant_layout_of(x.sizes(), sc.sizes(), axis, block, ctx.node(), "x_scale");
             if (has_zp && ctx.input(2).element_type() != x.element_type())
               ctx.fail("x_zero_point has element type " + std::string(to_string(ctx.input(2).element_type())) + ", x has " +
                        std::string(to_string(x.element_type())));
             if (has_zp && ctx.input(2).size() != sc.size())
               ctx.fail("x_zero_point has sizes " + ctx.input(2).shape().to_string() + ", x_scale has " + sc.shape().to_string());
             const std::vector<float> scale = float_values(sc, ctx.node(), "x_scale");
             if (is_low_precision(x.element_type())) {  // decoded codes
               const dtype qt = x.element_type();
               std::vector<double> zp(scale.size(), 0.0);
               if (has_zp) {
                 const auto* z = reinterpret_cast<const std::uint8_t*>(ctx.input(2).raw());
                 for (std::size_t i = 0; i < zp.size(); ++i) zp[i] = from_low_precision(qt, z[i]);
               }
               const dtype out_t = out_type == dtype::undefined ? (is_low_precision(sc.element_type()) ? dtype::f32 : sc.element_type()) : out_type;
               const auto* p = reinterpret_cast<const std::uint8_t*>(x.raw());
               dispatch<float_types>(out_t, ctx.node(), [&]<class F>() {
                 gpass::tensor& y = ctx.allocate_output(0, out_t, x.sizes());
                 F* o = y.data<F>();
                 for (i64 i = 0; i < x.size(); ++i) {
                   const std::size_t c = static_cast<std::size_t>(lay(i));
                   o[i] = static_cast<F>(static_cast<float>((from_low_precision(qt, p[i]) - zp[c]) * scale[c]));
                 }
               });
               return;
             }
             dispatch<dequant_types>(x.element_type(), ctx.node(), [&]<class Q>() {
               std::vector<float> zp(scale.size(), 0.0f);
               if (has_zp) {
                 const Q* z = ctx.input(2).data<Q>();
                 for (std::size_t i = 0; i < zp.size(); ++i) zp[i] = static_cast<float>(z[i]);
               }
               const dtype out_t = out_type != dtype::undefined ? out_type
                                   : is_low_precision(sc.element_type()) ? dtype::f32  // an f8e8m0 scale
                                                                          : sc.element_type();
               dispatch<float_types>(out_t, ctx.node(), [&]<class F>() {
                 gpass::tensor& y = ctx.allocate_output(0, out_t, x.sizes());
                 const Q* p = x.data<Q>();
                 F* o = y.data<F>();
                 ctx.policy().parallel_for(x.size(), 2.0, [&](i64 b, i64 e) {
                   for (i64 i = b; i < e; ++i) {
                     const std::size_t c = static_cast<std::size_t>(lay(i));
                     o[i] = static_cast<F>((static_cast<float>(p[i]) - zp[c]) * scale[c]);
                   }
                 });
               });
             });
           };
         }});
  r.add({.op = "DynamicQuantizeLinear", .dtypes = {dtype::f32}, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             if (x.element_type() != dtype::f32) ctx.fail("input must be f32, got " + std::string(to_string(x.element_type())));
             const float* p = x.data<float>();
             float lo = 0, hi = 0;  // the range always includes 0
             for (i64 i = 0; i < x.size(); ++i) {
               if (std::isnan(p[i])) ctx.fail("input contains NaN");
               lo = std::min(lo, p[i]);
               hi = std::max(hi, p[i]);
             }
             const float scale = (hi - lo) / 255.0f;
             float zpf = 0;
             if (scale != 0) zpf = std::min(255.0f, std::max(0.0f, std::nearbyint(0.0f - lo / scale)));
             gpass::tensor& y = ctx.allocate_output(0, dtype::uint8, x.sizes());
             std::uint8_t* o = y.data<std::uint8_t>();
             ctx.policy().parallel_for(x.size(), 4.0, [&](i64 b, i64 e) {
               for (i64 i = b; i < e; ++i) o[i] = scale == 0 ? std::uint8_t(zpf) : saturate_round<std::uint8_t>(p[i] / scale, zpf);
             });
             if (ctx.num_outputs() > 1) ctx.allocate_output(1, dtype::f32, {}).data<float>()[0] = scale;
             if (ctx.num_outputs() > 2) ctx.allocate_output(2, dtype::uint8, {}).data<std::uint8_t>()[0] = static_cast<std::uint8_t>(zpf);
           };
         }});
}

}  // namespace gpass::exec::cpu_detail
