// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file common.hpp
/// Helpers shared by the Eigen CPU kernel families: dtype groups and dispatch, broadcasting,
/// axis normalization, attribute reading. Private (`gpass::exec::cpu_detail`).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/eigen_cpu/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/scratch.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec::cpu_detail {

using context = kernel_context<eigen_cpu>;
using registry = kernel_registry<eigen_cpu>;
using def = kernel_def<eigen_cpu>;
using fn = kernel_fn<eigen_cpu>;

/// A list of C++ element types; `dispatch<L>(t, f)` calls `f.template operator()<T>()` for
/// the `T` in `L` whose dtype is `t`, and fails naming the node otherwise.
template <class... T>
struct type_list {
  static std::vector<dtype> dtypes() { return {dtype_of_v<T>...}; }
};
using float_types = type_list<float, double, Eigen::half, Eigen::bfloat16>;
using signed_int_types = type_list<std::int8_t, std::int16_t, std::int32_t, std::int64_t>;
using unsigned_int_types = type_list<std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t>;
using int_types = type_list<std::int8_t, std::int16_t, std::int32_t, std::int64_t, std::uint8_t, std::uint16_t,
                            std::uint32_t, std::uint64_t>;
using numeric_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int16_t, std::int32_t,
                                std::int64_t, std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t>;
using all_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int16_t, std::int32_t,
                            std::int64_t, std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t, bool,
                            std::string>;

template <class L>
struct dispatcher;
template <class... T>
struct dispatcher<type_list<T...>> {
  template <class F>
  static void run(dtype t, const kernel_node& n, F&& f) {
    bool done = ((t == dtype_of_v<T> ? (f.template operator()<T>(), true) : false) || ...);
    if (!done) n.fail("element type " + std::string(to_string(t)) + " is not supported by this kernel");
  }
};
/// Calls `f.template operator()<T>()` with the element type `T` of dtype `t` among `L`.
template <class L, class F>
void dispatch(dtype t, const kernel_node& n, F&& f) {
  dispatcher<L>::run(t, n, std::forward<F>(f));
}

/// Computation type for an element type: f16/bf16 compute in float.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>, float, T>;

/// exp of an Eigen array expression `x`. Eigen's vectorized exp clamps its argument at its
/// overflow and underflow bounds, so below about -88.38 (f32) or -709.4 (f64) it returns a
/// subnormal floor (2.9e-39 for f32) where std::exp gives smaller subnormals, then 0 (past
/// -103.97 for f32). Here arguments below `lowest` give 0: by default Eigen's lower bound
/// (an absolute error under 3e-39 against std::exp, never the floor); Softmax and attention
/// pass the log of the smallest normal value (`exp_normal_or_zero`), so their probabilities
/// are normal numbers or 0: a masked score gives exactly 0 (the engine's products flush
/// subnormals anyway; an elementwise op reading one would pay a microcode assist).
///
/// Eigen 3.4's `select` has no packet form (an expression holding one is evaluated a
/// coefficient at a time, exp included: 4 ns per value), so the test is a functor with one:
/// Eigen's packet exp, then a blend on the comparison's mask.
template <class S>
struct exp_or_zero_op {
  S lowest;
  S operator()(S v) const { return v < lowest ? S(0) : std::exp(v); }
  template <class P>
  P packetOp(const P& v) const {
    namespace ei = Eigen::internal;
    return ei::pselect(ei::pcmp_lt(v, ei::pset1<P>(lowest)), ei::pzero(v), ei::pexp(v));
  }
};
template <class X, class S = typename std::decay_t<X>::Scalar>
auto exp_or_zero(const X& x, S lowest = std::is_same_v<S, float> ? S(-88.3762626647949) : S(-709.436139303104)) {
  return x.unaryExpr(exp_or_zero_op<S>{lowest});
}
/// `x < bound ? if_less : otherwise` per coefficient of three Eigen array expressions of one
/// size, vectorized (a compare and a blend per packet; Eigen 3.4's `select` is evaluated a
/// coefficient at a time). A NaN x takes `otherwise`, as the scalar `x < bound ? ...` does.
template <class S>
struct where_less_op {
  S bound;
  S operator()(S x, S a, S b) const { return x < bound ? a : b; }
  template <class P>
  P packetOp(const P& x, const P& a, const P& b) const {
    namespace ei = Eigen::internal;
    return ei::pselect(ei::pcmp_lt(x, ei::pset1<P>(bound)), a, b);
  }
};
template <class X, class A, class B, class S = typename std::decay_t<X>::Scalar>
auto where_less(const X& x, S bound, const A& if_less, const B& otherwise) {
  return Eigen::CwiseTernaryOp<where_less_op<S>, const X, const A, const B>(x, if_less, otherwise, where_less_op<S>{bound});
}
template <class X, class S = typename std::decay_t<X>::Scalar>
auto exp_normal_or_zero(const X& x) {
  return exp_or_zero(x, std::is_same_v<S, float> ? S(-87.3365447505531) : S(-708.3964185322641));
}

/// Number of trailing inputs that are captures (`_captures`: the values a function attribute's
/// body reads from the enclosing scope, as If/Loop/Scan and FlexAttention pass them).
inline std::size_t num_captures(const kernel_node& n) {
  return static_cast<std::size_t>(n.attr<std::int64_t>("_captures", 0));
}

/// The function that attribute `a` names; `required`: an error when absent, else "".
inline std::string function_attr(const kernel_node& n, const char* a, bool required = true) {
  auto it = n.attrs.find(a);
  if (it == n.attrs.end() && !required) return {};
  if (it == n.attrs.end() || !it->second.is<function_ref>()) n.fail(std::string("attribute '") + a + "' must name a function");
  return it->second.as<function_ref>().name;
}

/// The elements of tensor `t` (any numeric or bool element type; f16 and bf16 through float)
/// as doubles, in order; another element type fails naming the node.
inline std::vector<double> as_doubles(const gpass::tensor& t, const kernel_node& n) {
  std::vector<double> r(static_cast<std::size_t>(t.size()));
  dispatch<type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int16_t, std::int32_t, std::int64_t,
                     std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t, bool>>(t.element_type(), n, [&]<class S>() {
    const S* p = t.data<S>();
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<double>(static_cast<compute_t<S>>(p[i]));
  });
  return r;
}

// axes, strides, broadcasting: the rules every executor shares (gpass/exec/shape_rules.hpp)
using shape_rules::broadcast_sizes;
using shape_rules::broadcast_strides;
using shape_rules::normalize_axis;
using shape_rules::repeats_into;
using shape_rules::strides_of;

/// Walks the elements of a row-major index space of `sizes` in order, keeping for each of
/// `N` operands the element offset given by its strides (broadcast strides are 0). Cheap per
/// step: an increment of the innermost index, a carry now and then.
template <std::size_t N>
class strided_walker {
 public:
  strided_walker(const std::vector<std::int64_t>& sizes, std::array<std::vector<std::int64_t>, N> strides)
      : sizes_(sizes), strides_(std::move(strides)), index_(sizes.size(), 0) {}
  /// Moves to flat position `pos` (for a thread starting in the middle).
  void seek(std::int64_t pos) {
    offsets_.fill(0);
    for (std::size_t d = sizes_.size(); d-- > 0;) {
      index_[d] = sizes_[d] ? pos % sizes_[d] : 0;
      pos = sizes_[d] ? pos / sizes_[d] : 0;
      for (std::size_t k = 0; k < N; ++k) offsets_[k] += index_[d] * strides_[k][d];
    }
  }
  std::int64_t offset(std::size_t k) const noexcept { return offsets_[k]; }
  void next() noexcept {
    for (std::size_t d = sizes_.size(); d-- > 0;) {
      for (std::size_t k = 0; k < N; ++k) offsets_[k] += strides_[k][d];
      if (++index_[d] < sizes_[d]) return;
      for (std::size_t k = 0; k < N; ++k) offsets_[k] -= strides_[k][d] * sizes_[d];
      index_[d] = 0;
    }
  }

 private:
  std::vector<std::int64_t> sizes_;
  std::array<std::vector<std::int64_t>, N> strides_;
  std::vector<std::int64_t> index_;
  std::array<std::int64_t, N> offsets_{};
};

/// The int64 values of a 0-D or 1-D integer tensor (int32 or int64), e.g. a shape input.
inline std::vector<std::int64_t> int_values(const gpass::tensor& t, const kernel_node& n, const char* what) {
  std::vector<std::int64_t> r;
  if (t.element_type() == dtype::int64) {
    auto v = t.values<std::int64_t>();
    r.assign(v.begin(), v.end());
  } else if (t.element_type() == dtype::int32) {
    auto v = t.values<std::int32_t>();
    r.assign(v.begin(), v.end());
  } else {
    n.fail(std::string(what) + " must be int32 or int64, got " + std::string(to_string(t.element_type())));
  }
  return r;
}

/// Wrapping integer arithmetic on tensor values (two's complement, never a signed overflow,
/// which is undefined): computed in an unsigned type at least as wide as `unsigned` (so that
/// uint16 * uint16 does not promote to int). Every kernel that adds or multiplies integer
/// values it read from a tensor uses these.
template <class C>
using wide_unsigned_t = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;

template <class C>
C add_w(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = wide_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <class C>
C sub_w(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = wide_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <class C>
C mul_w(C a, C b) {
  if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
    using U = wide_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

/// A floating value converted to integer type `D` with defined results: NaN -> 0, values
/// out of the int64 range saturate, others truncate and wrap into `D` (like numpy on x86).
template <class D, class F>
D float_to_int(F x) {
  if (std::isnan(x)) return D(0);
  if constexpr (std::is_same_v<D, std::uint64_t>) {
    if (x >= F(18446744073709551616.0)) return std::numeric_limits<D>::max();
    if (x >= F(9223372036854775808.0)) return static_cast<D>(x);
  }
  if (x >= F(9223372036854775808.0)) return static_cast<D>(std::numeric_limits<std::int64_t>::max());
  if (x <= F(-9223372036854775808.0)) return static_cast<D>(std::numeric_limits<std::int64_t>::min());
  return static_cast<D>(static_cast<std::int64_t>(x));
}

// ---- string outputs ----------------------------------------------------------------------
// `allocate_output` counts a string tensor's elements (sizeof(std::string) each), not their
// characters, and every copy of a string holds its own: Expand, Tile, Gather or Pad of one
// long string, or StringConcat of a tensor with itself 30 times (2^30 characters an element),
// would make gigabytes within the limit. The kernels that make strings check the characters
// first.

/// Whether `elements` strings holding `chars` characters in all fit the run's
/// max_tensor_bytes (the default limit without a plan's budget); `chars` is a double: sums of
/// products cannot overflow.
template <class Ctx>
bool string_output_fits(const Ctx& ctx, std::int64_t elements, double chars) {
  const std::uint64_t cap = tensor_byte_limit(ctx);
  return !cap || static_cast<double>(elements) * static_cast<double>(sizeof(std::string)) + chars <= static_cast<double>(cap);
}

/// Fails, naming the node, when output `out` of `elements` strings holding `chars`
/// characters in all would be over max_tensor_bytes.
template <class Ctx>
void check_string_output(const Ctx& ctx, std::int64_t elements, double chars, std::size_t out = 0) {
  if (string_output_fits(ctx, elements, chars)) return;
  const std::uint64_t cap = tensor_byte_limit(ctx);
  ctx.fail("output " + std::to_string(out) + " would hold " + count_str(chars) + " characters in " + std::to_string(elements) +
           " strings (" + count_str(static_cast<double>(elements) * static_cast<double>(sizeof(std::string)) + chars) +
           " bytes), over the limit of " + std::to_string(cap) + " bytes per tensor (max_tensor_bytes)");
}

/// Checks output `out`, `elements` strings copied from `sources` (the first the tensor
/// copied: nothing to check unless it holds strings; then a fill value, or an empty tensor),
/// against max_tensor_bytes before the copy. The bound `elements` x the longest source
/// string settles it in a pass over the sources when they are smaller than the output;
/// otherwise `chars()` counts the copies' characters exactly (a pass over the output, whose
/// element count `allocate_output` has checked).
template <class Ctx, class F>
void check_string_copies(const Ctx& ctx, std::initializer_list<const gpass::tensor*> sources, std::int64_t elements, F chars,
                         std::size_t out = 0) {
  if (elements == 0 || (*sources.begin())->element_type() != dtype::string) return;
  std::int64_t given = 0;
  std::size_t longest = 0;
  for (const gpass::tensor* t : sources) {
    if (t->element_type() != dtype::string) continue;
    given += t->size();
    if (given >= elements) break;  // no cheaper than the exact count
    for (const std::string& s : t->values<std::string>()) longest = std::max(longest, s.size());
  }
  if (given < elements && string_output_fits(ctx, elements, static_cast<double>(elements) * static_cast<double>(longest))) return;
  check_string_output(ctx, elements, chars(), out);
}

/// The characters of the strings of `t`, summed.
inline double string_chars(const gpass::tensor& t) {
  double n = 0;
  for (const std::string& s : t.values<std::string>()) n += static_cast<double>(s.size());
  return n;
}

/// A generator for one run: from the `seed` attribute when present, else nondeterministic.
inline std::mt19937_64 make_engine(bool seeded, double seed) {
  if (seeded) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &seed, sizeof bits);
    std::seed_seq s{static_cast<std::uint32_t>(bits), static_cast<std::uint32_t>(bits >> 32)};
    return std::mt19937_64(s);
  }
  std::random_device rd;
  std::seed_seq s{rd(), rd(), rd(), rd()};
  return std::mt19937_64(s);
}

}  // namespace gpass::exec::cpu_detail

/// exp_or_zero_op and where_less_op have packet forms where Eigen has the packet operations.
template <class S>
struct Eigen::internal::functor_traits<gpass::exec::cpu_detail::exp_or_zero_op<S>> {
  enum { Cost = functor_traits<scalar_exp_op<S>>::Cost + 2, PacketAccess = packet_traits<S>::HasExp && packet_traits<S>::HasCmp };
};
template <class S>
struct Eigen::internal::functor_traits<gpass::exec::cpu_detail::where_less_op<S>> {
  enum { Cost = 2, PacketAccess = packet_traits<S>::HasCmp };
};
