// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file reduce.hpp
/// Eigen CPU kernels: the reduce family: reductions (ReduceSum ... ReduceLogSumExp), ArgMax /
/// ArgMin, CumSum; signal ops (window functions, DFT, STFT, MelWeightMatrix); and a few
/// miscellaneous ops (NonMaxSuppression, TfIdfVectorizer, StringNormalizer, the random
/// generators). Private (`gpass::exec::cpu_detail`); `register_reduce` adds them to a registry.

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <numbers>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <gpass/core/checked.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/fft.hpp>
#include <gpass/exec/nn_rules.hpp>
#include <gpass/exec/signal_rules.hpp>

namespace gpass::exec::cpu_detail {

namespace reduce_detail {

// ---------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------

/// What a Reduce* op computes.
enum class rkind { sum, mean, max, min, prod, l1, l2, log_sum, log_sum_exp, sum_square };

/// How partial results combine: every kind accumulates a sum, a product, a max or a min.
enum class acc_kind { sum, prod, max, min };

inline acc_kind accumulation_of(rkind k) {
  switch (k) {
    case rkind::max: return acc_kind::max;
    case rkind::min: return acc_kind::min;
    case rkind::prod: return acc_kind::prod;
    default: return acc_kind::sum;
  }
}

/// The accumulator's starting value (the result of an empty reduction before finishing).
template <class C>
C acc_init(acc_kind a) {
  switch (a) {
    case acc_kind::sum: return C(0);
    case acc_kind::prod: return C(1);
    case acc_kind::max:
      if constexpr (std::numeric_limits<C>::has_infinity) return -std::numeric_limits<C>::infinity();
      else return std::numeric_limits<C>::lowest();
    case acc_kind::min:
      if constexpr (std::numeric_limits<C>::has_infinity) return std::numeric_limits<C>::infinity();
      else return std::numeric_limits<C>::max();
  }
  return C(0);
}

/// Sums and products of int32 and int64 wrap (two's complement, as the executor's integer
/// arithmetic does) instead of overflowing, which is undefined: they are computed in the
/// unsigned type of the same width. (Narrower signed types promote to int, whose sums and
/// products of two of them cannot overflow; the unsigned types wrap already.)
template <class C, bool = std::is_integral_v<C> && std::is_signed_v<C> && sizeof(C) >= sizeof(int)>
struct wrapping {
  using type = C;
};
template <class C>
struct wrapping<C, true> {
  using type = std::make_unsigned_t<C>;
};
template <class C>
using wrapping_t = typename wrapping<C>::type;
template <class C>
inline constexpr bool wraps_v = !std::is_same_v<wrapping_t<C>, C>;

/// `|x|` of a signed integer in its unsigned type (|INT_MIN| is no int).
template <class C>
wrapping_t<C> magnitude(C x) {
  using U = wrapping_t<C>;
  return x < C(0) ? U(0) - static_cast<U>(x) : static_cast<U>(x);
}

template <class C>
C acc_combine(acc_kind a, C x, C y) {
  switch (a) {
    case acc_kind::sum: return add_w(x, y);
    case acc_kind::prod: return mul_w(x, y);
    case acc_kind::max: return y > x ? y : x;
    case acc_kind::min: return y < x ? y : x;
  }
  return x;
}

/// The exp shift for LogSumExp from the maximum: the maximum when finite, else 0.
template <class C>
C lse_shift(C mx) {
  if constexpr (std::is_floating_point_v<C>) return std::isfinite(mx) ? mx : C(0);
  else return C(0);
}

/// A result computed in double as the accumulator type: integers through `float_to_int` (the
/// square root or log of an integer sum that wrapped negative, or of 0, is NaN or -inf, which
/// no cast may take).
template <class C>
C from_double(double x) {
  if constexpr (std::is_integral_v<C>) return float_to_int<C>(x);
  else return static_cast<C>(x);
}

/// The accumulated value turned into the result (`count` elements were reduced).
template <class T, class C>
T finish(rkind k, C acc, std::int64_t count, C shift) {
  switch (k) {
    case rkind::mean:
      if constexpr (std::is_floating_point_v<C>) return static_cast<T>(acc / static_cast<C>(count));
      else if (count == 0) return T(0);
      // divided in 64 bits: `count` as C could be 0 (256 int8 elements) or negative (128)
      else if constexpr (std::is_signed_v<C>) return static_cast<T>(static_cast<std::int64_t>(acc) / count);
      else return static_cast<T>(static_cast<std::uint64_t>(acc) / static_cast<std::uint64_t>(count));
    case rkind::l2: return static_cast<T>(from_double<C>(std::sqrt(static_cast<double>(acc))));
    case rkind::log_sum: return static_cast<T>(from_double<C>(std::log(static_cast<double>(acc))));
    case rkind::log_sum_exp:
      if constexpr (std::is_floating_point_v<C>) return static_cast<T>(std::log(acc) + shift);
      else return static_cast<T>(acc);
    default: return static_cast<T>(acc);
  }
}

/// Accumulates `n` contiguous elements at `p` (mapped for `k`), vectorized with Eigen.
template <class T, class C = compute_t<T>>
C reduce_contiguous(const T* p, std::int64_t n, rkind k, C shift) {
  if (n == 0) return acc_init<C>(accumulation_of(k));
  Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> a(p, static_cast<Eigen::Index>(n));
  auto x = a.template cast<C>();
  if constexpr (wraps_v<C>) {  // sums and products in the unsigned type (wrapping)
    auto u = x.template cast<wrapping_t<C>>();
    switch (k) {
      case rkind::sum:
      case rkind::mean:
      case rkind::log_sum:
      case rkind::log_sum_exp: return static_cast<C>(u.sum());
      case rkind::l1: return static_cast<C>(x.unaryExpr([](C v) { return magnitude(v); }).sum());
      case rkind::l2:
      case rkind::sum_square: return static_cast<C>(u.square().sum());
      case rkind::prod: return static_cast<C>(u.prod());
      case rkind::max:
      case rkind::min: break;
    }
  }
  switch (k) {
    case rkind::sum:
    case rkind::mean:
    case rkind::log_sum: return x.sum();
    case rkind::l1:
      if constexpr (std::is_unsigned_v<C>) return x.sum();
      else return x.abs().sum();
    case rkind::l2:
    case rkind::sum_square: return x.square().sum();
    case rkind::prod: return x.prod();
    case rkind::max: return x.maxCoeff();
    case rkind::min: return x.minCoeff();
    case rkind::log_sum_exp:
      if constexpr (std::is_floating_point_v<C>) return exp_or_zero(x - shift).sum();
      else return x.sum();
  }
  return C(0);
}

/// Accumulates `rows` rows of `w` elements (`stride` apart, starting at `base`) into `acc_p`
/// (mapped for `k`; LogSumExp subtracts `shift_p`), vectorized with Eigen.
template <class T, class C = compute_t<T>>
void accumulate_rows(rkind k, C* acc_p, const C* shift_p, const T* base, Eigen::Index w, std::int64_t rows,
                     std::int64_t stride) {
  Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>> acc(acc_p, w);
  auto each = [&](auto&& step) {
    for (std::int64_t r = 0; r < rows; ++r) {
      const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> row(base + r * stride, w);
      step(row.template cast<C>());
    }
  };
  if constexpr (wraps_v<C>) {  // sums and products in the unsigned type (wrapping)
    using U = wrapping_t<C>;
    Eigen::Array<U, Eigen::Dynamic, 1> ua = acc.template cast<U>();
    bool done = true;
    switch (k) {
      case rkind::sum:
      case rkind::mean:
      case rkind::log_sum:
      case rkind::log_sum_exp: each([&](const auto& v) { ua += v.template cast<U>(); }); break;
      case rkind::l1: each([&](const auto& v) { ua += v.unaryExpr([](C x) { return magnitude(x); }); }); break;
      case rkind::l2:
      case rkind::sum_square: each([&](const auto& v) { ua += v.template cast<U>().square(); }); break;
      case rkind::prod: each([&](const auto& v) { ua *= v.template cast<U>(); }); break;
      case rkind::max:
      case rkind::min: done = false; break;
    }
    if (done) {
      acc = ua.template cast<C>();
      return;
    }
  }
  switch (k) {
    case rkind::sum:
    case rkind::mean:
    case rkind::log_sum: each([&](const auto& v) { acc += v; }); break;
    case rkind::l1:
      if constexpr (std::is_unsigned_v<C>) each([&](const auto& v) { acc += v; });
      else each([&](const auto& v) { acc += v.abs(); });
      break;
    case rkind::l2:
    case rkind::sum_square: each([&](const auto& v) { acc += v.square(); }); break;
    case rkind::prod: each([&](const auto& v) { acc *= v; }); break;
    case rkind::max: each([&](const auto& v) { acc = acc.max(v); }); break;
    case rkind::min: each([&](const auto& v) { acc = acc.min(v); }); break;
    case rkind::log_sum_exp:
      if constexpr (std::is_floating_point_v<C>) {
        const Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, 1>> shift(shift_p, w);
        each([&](const auto& v) { acc += exp_or_zero(v - shift); });
      }
      break;
  }
}

/// A reduction's index space with size-1 dimensions dropped and neighbours of the same kind
/// (reduced or kept) merged.
struct reduce_layout {
  std::vector<std::int64_t> out_sizes;  ///< the output's sizes (keepdims applied)
  std::vector<std::int64_t> dims;       ///< coalesced dimensions
  std::vector<char> reduced;            ///< per coalesced dimension: reduced?
  std::int64_t out_count = 1;
  std::int64_t red_count = 1;
};

inline reduce_layout make_layout(const std::vector<std::int64_t>& sizes, const std::vector<char>& mask, bool keepdims) {
  reduce_layout l;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (mask[d]) {
      l.red_count *= sizes[d];
      if (keepdims) l.out_sizes.push_back(1);
    } else {
      l.out_count *= sizes[d];
      l.out_sizes.push_back(sizes[d]);
    }
    if (sizes[d] == 1) continue;
    if (!l.dims.empty() && l.reduced.back() == mask[d]) {
      l.dims.back() *= sizes[d];
    } else {
      l.dims.push_back(sizes[d]);
      l.reduced.push_back(mask[d]);
    }
  }
  return l;
}

/// Reduces `x` into `y` (already allocated with `l.out_sizes`).
template <class T>
void run_reduce(const eigen_cpu& cpu, const gpass::tensor& x, gpass::tensor& y, const reduce_layout& l, rkind k) {
  using C = compute_t<T>;
  const T* in = x.data<T>();
  T* out = y.data<T>();
  const acc_kind ak = accumulation_of(k);
  const bool lse = k == rkind::log_sum_exp;
  if (l.out_count == 0) return;
  const std::size_t g = l.dims.size();
  const std::int64_t R = l.red_count;
  if (R == 0) {  // empty reductions: the identity of the accumulation, finished
    const T v = finish<T>(k, acc_init<C>(ak), 0, C(0));
    std::fill(out, out + l.out_count, v);
    return;
  }
  // ---- [K, R]: contiguous inner reduction (also a full reduction and a no-op one) --------
  if (g == 0 || (l.reduced.back() && g <= 2)) {
    const std::int64_t K = l.out_count;
    if (K == 1 && R >= 65536 && cpu.threads() > 1) {
      // one big reduction: partial results of chunks, then combined
      const std::int64_t chunk = 16384, nchunks = (R + chunk - 1) / chunk;
      auto partial = [&](rkind kk, C shift) {
        std::vector<C> parts(static_cast<std::size_t>(nchunks));
        cpu.parallel_for(nchunks, 2.0 * chunk, [&](std::int64_t b, std::int64_t e) {
          for (std::int64_t c = b; c < e; ++c)
            parts[c] = reduce_contiguous<T>(in + c * chunk, std::min(chunk, R - c * chunk), kk, shift);
        });
        const acc_kind a = accumulation_of(kk);
        C acc = acc_init<C>(a);
        for (C p : parts) acc = acc_combine(a, acc, p);
        return acc;
      };
      const C shift = lse ? lse_shift(partial(rkind::max, C(0))) : C(0);
      out[0] = finish<T>(k, partial(k, shift), R, shift);
      return;
    }
    cpu.parallel_for(K, 1.0 + 1.5 * static_cast<double>(R), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t o = b; o < e; ++o) {
        const T* p = in + o * R;
        const C shift = lse ? lse_shift(reduce_contiguous<T>(p, R, rkind::max, C(0))) : C(0);
        out[o] = finish<T>(k, reduce_contiguous<T>(p, R, k, shift), R, shift);
      }
    });
    return;
  }
  // ---- [K1, R, K2] (K1 may be absent; a no-op reduction is [K2] with R = 1) --------------
  if (!l.reduced.back() && (g == 1 || (g == 2 && l.reduced[0]) || (g == 3 && l.reduced[1]))) {
    const std::int64_t K2 = l.dims.back();
    const std::int64_t K1 = l.out_count / K2;
    const std::int64_t block = 1024;
    const std::int64_t nblocks = (K2 + block - 1) / block;
    cpu.parallel_for(K1 * nblocks, 2.0 * static_cast<double>(R) * static_cast<double>(std::min(block, K2)),
                     [&](std::int64_t b, std::int64_t e) {
      Eigen::Array<C, Eigen::Dynamic, 1> acc, shift;
      for (std::int64_t item = b; item < e; ++item) {
        const std::int64_t k1 = item / nblocks, c0 = (item % nblocks) * block;
        const Eigen::Index w = static_cast<Eigen::Index>(std::min(block, K2 - c0));
        const T* base = in + k1 * R * K2 + c0;
        shift.setZero(w);
        if (lse) {
          acc.setConstant(w, acc_init<C>(acc_kind::max));
          accumulate_rows<T>(rkind::max, acc.data(), shift.data(), base, w, R, K2);
          for (Eigen::Index j = 0; j < w; ++j) shift[j] = lse_shift(acc[j]);
        }
        acc.setConstant(w, acc_init<C>(ak));
        accumulate_rows<T>(k, acc.data(), shift.data(), base, w, R, K2);
        T* o = out + k1 * K2 + c0;
        for (Eigen::Index j = 0; j < w; ++j) o[j] = finish<T>(k, acc[j], R, shift[j]);
      }
    });
    return;
  }
  // ---- general (several reduced groups, or [R, K, R]): accumulate each innermost row into
  // its output element (a reduced row) or output row (a kept row) -----------------------------
  const std::int64_t last = l.dims.back();
  const bool last_reduced = l.reduced.back() != 0;
  const std::int64_t N = x.size() / last;  // outer rows
  std::vector<std::int64_t> outer_dims(l.dims.begin(), l.dims.end() - 1), outer_strides(g - 1, 0);
  {
    std::int64_t stride = last_reduced ? 1 : last;
    for (std::size_t d = g - 1; d-- > 0;)
      if (!l.reduced[d]) {
        outer_strides[d] = stride;
        stride *= l.dims[d];
      }
  }
  std::vector<C> acc(static_cast<std::size_t>(l.out_count)), shift(static_cast<std::size_t>(l.out_count), C(0));
  auto pass = [&](rkind kk, std::vector<C>& a) {
    const acc_kind ka = accumulation_of(kk);
    std::fill(a.begin(), a.end(), acc_init<C>(ka));
    auto range = [&](std::int64_t b, std::int64_t e, C* ap) {
      strided_walker<1> w(outer_dims, {outer_strides});
      w.seek(b);
      for (std::int64_t i = b; i < e; ++i, w.next()) {
        const T* p = in + i * last;
        const std::int64_t o = w.offset(0);
        if (last_reduced) ap[o] = acc_combine(ka, ap[o], reduce_contiguous<T>(p, last, kk, shift[o]));
        else accumulate_rows<T>(kk, ap + o, shift.data() + o, p, static_cast<Eigen::Index>(last), 1, 0);
      }
    };
    const double row_cost = 2.0 + 1.5 * static_cast<double>(last);
    if (!l.reduced[0]) {
      // the outermost group is kept: its slices write disjoint outputs
      const std::int64_t K0 = l.dims[0], per = N / K0;
      cpu.parallel_for(K0, row_cost * static_cast<double>(per),
                       [&](std::int64_t b, std::int64_t e) { range(b * per, e * per, a.data()); });
      return;
    }
    std::int64_t chunks = std::min<std::int64_t>(cpu.threads(), N);
    if (static_cast<double>(N) * row_cost < 40000.0 || l.out_count * chunks > x.size() / 2) chunks = 1;
    if (chunks <= 1) {
      range(0, N, a.data());
      return;
    }
    std::vector<std::vector<C>> parts(static_cast<std::size_t>(chunks - 1), std::vector<C>(a.size(), acc_init<C>(ka)));
    cpu.parallel_for(chunks, 1e9, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t c = b; c < e; ++c)
        range(c * N / chunks, (c + 1) * N / chunks, c == 0 ? a.data() : parts[c - 1].data());
    });
    for (const auto& part : parts)
      for (std::size_t o = 0; o < a.size(); ++o) a[o] = acc_combine(ka, a[o], part[o]);
  };
  if (lse) {
    pass(rkind::max, acc);
    for (std::size_t o = 0; o < acc.size(); ++o) shift[o] = lse_shift(acc[o]);
  }
  pass(k, acc);
  for (std::int64_t o = 0; o < l.out_count; ++o) out[o] = finish<T>(k, acc[o], R, shift[o]);
}

using reduce_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int32_t, std::int64_t, std::uint32_t,
                               std::uint64_t, std::int8_t, std::uint8_t>;
using reduce_float_types = type_list<float, double, Eigen::half, Eigen::bfloat16>;

/// The kernel of one Reduce* op: axes from the attribute (older opsets) or input 1 (ReduceSum
/// since 13, all since 18), keepdims, noop_with_empty_axes.
inline fn make_reduce(const kernel_node& n, rkind k) {
  const bool keepdims = n.attr<std::int64_t>("keepdims", 1) != 0;
  const bool noop = n.attr<std::int64_t>("noop_with_empty_axes", 0) != 0;
  const bool has_attr_axes = n.has_attr("axes");
  const std::vector<std::int64_t> attr_axes =
      has_attr_axes ? n.attr<std::vector<std::int64_t>>("axes") : std::vector<std::int64_t>{};
  return [=](context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    const std::int64_t rank = static_cast<std::int64_t>(x.rank());
    std::vector<std::int64_t> axes = attr_axes;
    if (!has_attr_axes && ctx.has_input(1)) axes = int_values(ctx.input(1), ctx.node(), "axes");
    std::vector<char> mask(static_cast<std::size_t>(rank), 0);
    if (axes.empty()) {
      if (!noop) std::fill(mask.begin(), mask.end(), char{1});
    } else {
      for (std::int64_t a : axes) {
        const std::int64_t d = normalize_axis(a, rank, ctx.node());
        if (rank == 0) continue;
        if (mask[d]) ctx.fail("axis " + std::to_string(a) + " is repeated in axes");
        mask[d] = 1;
      }
    }
    const reduce_layout l = make_layout(x.sizes(), mask, keepdims);
    if (x.element_type() == dtype::bool_ && (k == rkind::max || k == rkind::min)) {
      // ReduceMax / ReduceMin of bool (opset 20): any / all, reduced as bytes 0 and 1
      gpass::tensor xb(dtype::uint8, x.sizes()), yb(dtype::uint8, l.out_sizes);
      std::copy_n(x.data<bool>(), x.size(), xb.data<std::uint8_t>());
      run_reduce<std::uint8_t>(ctx.policy(), xb, yb, l, k);
      gpass::tensor& y = ctx.allocate_output(0, dtype::bool_, l.out_sizes);
      for (std::int64_t i = 0; i < y.size(); ++i) y.data<bool>()[i] = yb.data<std::uint8_t>()[i] != 0;
      return;
    }
    auto body = [&]<class T>() {
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), l.out_sizes);
      run_reduce<T>(ctx.policy(), x, y, l, k);
    };
    if (k == rkind::log_sum_exp) dispatch<reduce_float_types>(x.element_type(), ctx.node(), body);
    else dispatch<reduce_types>(x.element_type(), ctx.node(), body);
  };
}

// ---------------------------------------------------------------------------------------
// ArgMax / ArgMin, CumSum
// ---------------------------------------------------------------------------------------

/// Sizes around `axis`: outer (K1), the axis (R), inner (K2).
struct axis_split {
  std::int64_t outer = 1, len = 1, inner = 1;
};
inline axis_split split_at(const std::vector<std::int64_t>& sizes, std::int64_t axis) {
  axis_split s;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(sizes.size()); ++d) {
    if (d < axis) s.outer *= sizes[d];
    else if (d == axis) s.len = sizes[d];
    else s.inner *= sizes[d];
  }
  return s;
}

/// Output 0 = the index (of type `index_type`: int64 or int32) of the largest (`is_max`) or
/// smallest element of `x` along `axis_attr`; ties give the first index (the last when `last`).
inline void arg_into(context& ctx, const gpass::tensor& x, std::int64_t axis_attr, bool keepdims, bool last, bool is_max,
                     dtype index_type = dtype::int64) {
  const std::int64_t rank = static_cast<std::int64_t>(x.rank());
  const std::int64_t axis = normalize_axis(axis_attr, rank, ctx.node());
  std::vector<std::int64_t> out_sizes;
  for (std::int64_t d = 0; d < rank; ++d) {
    if (d != axis) out_sizes.push_back(x.sizes()[d]);
    else if (keepdims) out_sizes.push_back(1);
  }
  const axis_split s = rank == 0 ? axis_split{} : split_at(x.sizes(), axis);
  if (s.len == 0 && s.outer * s.inner != 0) ctx.fail("cannot take the arg of an empty axis");
  gpass::tensor& y = ctx.allocate_output(0, index_type, out_sizes);
  dispatch<type_list<std::int64_t, std::int32_t>>(index_type, ctx.node(), [&]<class I>() {
    I* out = y.data<I>();
    dispatch<numeric_types>(x.element_type(), ctx.node(), [&]<class T>() {
      using C = compute_t<T>;
      const T* in = x.data<T>();
      // better(v, best): v replaces the current best
      auto better = [&](C v, C best) {
        if (is_max) return last ? !(v < best) : v > best;
        return last ? !(v > best) : v < best;
      };
      ctx.policy().parallel_for(s.outer, 2.0 * static_cast<double>(s.len * s.inner), [&](std::int64_t b, std::int64_t e) {
        std::vector<C> best(static_cast<std::size_t>(s.inner));
        for (std::int64_t o = b; o < e; ++o) {
          const T* p = in + o * s.len * s.inner;
          I* q = out + o * s.inner;
          for (std::int64_t j = 0; j < s.inner; ++j) {
            best[j] = static_cast<C>(p[j]);
            q[j] = 0;
          }
          for (std::int64_t r = 1; r < s.len; ++r) {
            const T* row = p + r * s.inner;
            for (std::int64_t j = 0; j < s.inner; ++j) {
              const C v = static_cast<C>(row[j]);
              if (better(v, best[j])) {
                best[j] = v;
                q[j] = static_cast<I>(r);
              }
            }
          }
        }
      });
    });
  });
}

inline fn make_arg(const kernel_node& n, bool is_max) {
  const std::int64_t axis_attr = n.attr<std::int64_t>("axis", 0);
  const bool keepdims = n.attr<std::int64_t>("keepdims", 1) != 0;
  const bool last = n.attr<std::int64_t>("select_last_index", 0) != 0;
  return [=](context& ctx) { arg_into(ctx, ctx.input(0), axis_attr, keepdims, last, is_max); };
}

using cumsum_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int32_t, std::int64_t, std::uint32_t,
                               std::uint64_t>;

/// CumSum (`product` false) and CumProd (opset 26): running sums / products along input 1's
/// axis, `exclusive` (each output leaves its own element out) and `reverse`.
inline fn make_cumsum(const kernel_node& n, bool product = false) {
  const bool exclusive = n.attr<std::int64_t>("exclusive", 0) != 0;
  const bool reverse = n.attr<std::int64_t>("reverse", 0) != 0;
  return [=](context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    const auto av = int_values(ctx.input(1), ctx.node(), "axis");
    if (av.size() != 1) ctx.fail("axis must hold one value");
    const std::int64_t rank = static_cast<std::int64_t>(x.rank());
    if (rank == 0) ctx.fail(std::string(product ? "CumProd" : "CumSum") + " needs an input of rank >= 1");
    const std::int64_t axis = normalize_axis(av[0], rank, ctx.node());
    const axis_split s = split_at(x.sizes(), axis);
    dispatch<cumsum_types>(x.element_type(), ctx.node(), [&]<class T>() {
      using C = compute_t<T>;
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
      const T* in = x.data<T>();
      T* out = y.data<T>();
      const Eigen::Index w = static_cast<Eigen::Index>(s.inner);
      ctx.policy().parallel_for(s.outer, 2.0 * static_cast<double>(s.len * s.inner), [&](std::int64_t b, std::int64_t e) {
        Eigen::Array<C, Eigen::Dynamic, 1> acc(w);
        for (std::int64_t o = b; o < e; ++o) {
          if (product) acc.setOnes();
          else acc.setZero();
          for (std::int64_t i = 0; i < s.len; ++i) {
            const std::int64_t r = reverse ? s.len - 1 - i : i;
            const std::int64_t off = (o * s.len + r) * s.inner;
            Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> src(in + off, w);
            Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> dst(out + off, w);
            if (exclusive) dst = acc.template cast<T>();
            if (product) {
              if constexpr (std::is_integral_v<C>) {  // wrapping, as integer products do (no signed overflow)
                using U = std::make_unsigned_t<C>;
                for (Eigen::Index q = 0; q < w; ++q) acc[q] = static_cast<C>(static_cast<U>(acc[q]) * static_cast<U>(static_cast<C>(src[q])));
              } else {
                acc *= src.template cast<C>();
              }
            } else if constexpr (wraps_v<C>) {  // wrapping, as the product above
              using U = wrapping_t<C>;
              acc = (acc.template cast<U>() + src.template cast<C>().template cast<U>()).template cast<C>();
            } else {
              acc += src.template cast<C>();
            }
            if (!exclusive) dst = acc.template cast<T>();
          }
        }
      });
    });
  };
}

// ---------------------------------------------------------------------------------------
// Attribute helpers
// ---------------------------------------------------------------------------------------

/// A dtype attribute: a `gpass::dtype`, an ONNX TensorProto.DataType number, or a short name.
inline dtype dtype_attr(const kernel_node& n, std::string_view name, dtype fallback) {
  auto it = n.attrs.find(name);
  if (it == n.attrs.end()) return fallback;
  const attribute& a = it->second;
  if (a.is<dtype>()) return a.as<dtype>();
  if (a.is<std::int64_t>()) {
    if (auto d = dtype_from_onnx_code(a.as<std::int64_t>())) return *d;
    n.fail("attribute '" + std::string(name) + "': unsupported data type " + std::to_string(a.as<std::int64_t>()));
  }
  if (a.is<std::string>())
    if (auto d = parse_dtype(a.as<std::string>())) return *d;
  n.fail("attribute '" + std::string(name) + "' is a " + std::string(a.kind_name()) + ", expected a data type");
}

/// The single integer of a scalar (or one-element) int32/int64 input.
inline std::int64_t scalar_int(const gpass::tensor& t, const kernel_node& n, const char* what) {
  const auto v = int_values(t, n, what);
  if (v.size() != 1) n.fail(std::string(what) + " must hold one value, got " + std::to_string(v.size()));
  return v[0];
}

/// The single value of a scalar (or one-element) numeric input, as a double.
inline double scalar_double(const gpass::tensor& t, const kernel_node& n, const char* what) {
  if (t.size() != 1) n.fail(std::string(what) + " must hold one value, got " + std::to_string(t.size()));
  double r = 0;
  dispatch<numeric_types>(t.element_type(), n, [&]<class T>() { r = static_cast<double>(static_cast<compute_t<T>>(t.data<T>()[0])); });
  return r;
}

/// Output `port` of type `t` and `sizes`, element i the double `value(i)` (called in order): the
/// output is allocated first, so its sizes meet the run's limits before any work or memory is spent.
template <class F>
void write_generated(context& ctx, std::size_t port, dtype t, std::vector<std::int64_t> sizes, F&& value) {
  gpass::tensor& y = ctx.allocate_output(port, t, std::move(sizes));
  dispatch<numeric_types>(t, ctx.node(), [&]<class T>() {
    T* p = y.data<T>();
    for (std::int64_t i = 0; i < y.size(); ++i) p[i] = static_cast<T>(static_cast<compute_t<T>>(value(i)));
  });
}

// ---------------------------------------------------------------------------------------
// Signal: windows, FFT, DFT, STFT, MelWeightMatrix
// ---------------------------------------------------------------------------------------

enum class window_kind { hann, hamming, blackman };

inline fn make_window(const kernel_node& n, window_kind w) {
  const dtype out = dtype_attr(n, "output_datatype", dtype::f32);
  const bool periodic = n.attr<std::int64_t>("periodic", 1) != 0;
  if (!is_floating(out) && !is_integer(out)) n.fail("output_datatype must be numeric");
  return [=](context& ctx) {
    const std::int64_t size = scalar_int(ctx.input(0), ctx.node(), "size");
    if (size < 0) ctx.fail("window size must be non-negative, got " + std::to_string(size));
    const double N = static_cast<double>(periodic ? size : size - 1);
    const double pi = std::numbers::pi;
    // straight into the output: a size over the limits fails before any memory is taken
    write_generated(ctx, 0, out, {size}, [&](std::int64_t i) {
      if (N <= 0) return 1.0;
      const double a = 2.0 * pi * static_cast<double>(i) / N;
      switch (w) {
        case window_kind::hann: return 0.5 - 0.5 * std::cos(a);
        case window_kind::hamming: return 25.0 / 46.0 - (21.0 / 46.0) * std::cos(a);
        case window_kind::blackman: return 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2.0 * a);
      }
      return 0.0;
    });
  };
}

using fft::cplx;
using fft::fft_plan;

/// Checks the plan of an FFT of `n` points run over `lines` lines with `parallel_for`: each
/// thread that takes part holds its own line and scratch besides the shared plan.
inline void check_fft(context& ctx, std::int64_t n, std::int64_t lines) {
  const std::int64_t runs = std::max<std::int64_t>(1, std::min<std::int64_t>(lines, ctx.policy().threads()));
  check_scratch(ctx, fft_plan::bytes_needed(static_cast<std::size_t>(n), static_cast<std::size_t>(runs)),
                "the plan of a DFT of " + std::to_string(n) + " points" +
                    (runs > 1 ? " on " + std::to_string(runs) + " threads" : std::string()));
}

/// DFT (opset 17: axis attribute; opset 20: axis input 2, default -2). Real ([..., 1]) or
/// complex ([..., 2]) input; onesided forward keeps n/2+1 bins; onesided inverse is a
/// complex-to-real inverse.
inline fn make_dft(const kernel_node& n) {
  const bool inverse = n.attr<std::int64_t>("inverse", 0) != 0;
  const bool onesided = n.attr<std::int64_t>("onesided", 0) != 0;
  const std::int64_t axis_attr = n.attr<std::int64_t>("axis", n.opset >= 20 ? -2 : 1);
  return [=](context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    const std::int64_t axis = ctx.has_input(2) ? scalar_int(ctx.input(2), ctx.node(), "axis") : axis_attr;
    std::optional<std::int64_t> dft_length;
    if (ctx.has_input(1)) dft_length = scalar_int(ctx.input(1), ctx.node(), "dft_length");
    const signal_rules::dft_geometry g = signal_rules::dft_shape(x.sizes(), axis, dft_length, inverse, onesided, ctx.node());
    const std::int64_t L = g.L, len = g.len, Lout = g.Lout, C = g.C, Cout = g.Cout;
    const bool c2r = g.c2r;
    dispatch<float_types>(x.element_type(), ctx.node(), [&]<class T>() {
      using CT = compute_t<T>;
      // the output first: a dft_length over the limits fails there, an empty output needs no
      // plan; then the plan's tables (up to ~200 bytes a point, not bounded by the output)
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), g.out_sizes);
      if (y.size() == 0) return;
      const auto [outer, inner] = signal_rules::dft_lines(x.sizes(), g);  // (the output's sizes bound them)
      check_fft(ctx, len, outer * inner);
      const fft_plan plan(static_cast<std::size_t>(len), inverse ? +1 : -1);
      const T* in = x.data<T>();
      T* out = y.data<T>();
      const double scale = inverse ? 1.0 / static_cast<double>(len) : 1.0;
      ctx.policy().parallel_for(outer * inner, 20.0 * static_cast<double>(len) * std::log2(static_cast<double>(len) + 1),
                                [&](std::int64_t b, std::int64_t e) {
        std::vector<cplx> buf(static_cast<std::size_t>(len)), scratch;
        for (std::int64_t line = b; line < e; ++line) {
          const std::int64_t o = line / inner, i = line % inner;
          auto at = [&](std::int64_t j) {
            const T* p = in + ((o * L + j) * inner + i) * C;
            return cplx(static_cast<double>(static_cast<CT>(p[0])), C == 2 ? static_cast<double>(static_cast<CT>(p[1])) : 0.0);
          };
          if (c2r) {
            // Hermitian spectrum from its first len/2+1 bins
            const std::int64_t half = len / 2 + 1;
            for (std::int64_t k = 0; k < len; ++k) {
              const std::int64_t src = k < half ? k : len - k;
              const cplx v = src < L ? at(src) : cplx(0);
              buf[k] = k < half ? v : std::conj(v);
            }
          } else {
            for (std::int64_t j = 0; j < len; ++j) buf[j] = j < L ? at(j) : cplx(0);
          }
          plan.run(buf.data(), scratch);
          for (std::int64_t k = 0; k < Lout; ++k) {
            T* q = out + ((o * Lout + k) * inner + i) * Cout;
            q[0] = static_cast<T>(static_cast<CT>(buf[k].real() * scale));
            if (Cout == 2) q[1] = static_cast<T>(static_cast<CT>(buf[k].imag() * scale));
          }
        }
      });
    });
  };
}

/// STFT: signal [batch, length, 1 or 2], frame_step, optional window [frame_length], optional
/// frame_length; output [batch, frames, bins, 2].
inline fn make_stft(const kernel_node& n) {
  const bool onesided = n.attr<std::int64_t>("onesided", 1) != 0;
  return [=](context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    const std::int64_t step_value = scalar_int(ctx.input(1), ctx.node(), "frame_step");
    const std::vector<std::int64_t>* window_sizes = ctx.has_input(2) ? &ctx.input(2).sizes() : nullptr;
    std::optional<std::int64_t> frame_length;
    if (ctx.has_input(3)) frame_length = scalar_int(ctx.input(3), ctx.node(), "frame_length");
    const signal_rules::stft_geometry g = signal_rules::stft_shape(x.sizes(), step_value, window_sizes, frame_length, onesided, ctx.node());
    const std::int64_t B = g.B, S = g.S, C = g.C, step = g.step, fl = g.fl, frames = g.frames, bins = g.bins;
    std::vector<double> window;
    if (ctx.has_input(2)) window = as_doubles(ctx.input(2), ctx.node());
    dispatch<float_types>(x.element_type(), ctx.node(), [&]<class T>() {
      using CT = compute_t<T>;
      // the output first: with no batch the signal's length is not bounded by any data, and
      // an empty output needs no window and no plan
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), {B, frames, bins, 2});
      if (y.size() == 0) return;
      check_fft(ctx, fl, B * frames);
      if (window.empty()) window.assign(static_cast<std::size_t>(fl), 1.0);
      const fft_plan plan(static_cast<std::size_t>(fl), -1);
      const T* in = x.data<T>();
      T* out = y.data<T>();
      ctx.policy().parallel_for(B * frames, 20.0 * static_cast<double>(fl) * std::log2(static_cast<double>(fl) + 1),
                                [&](std::int64_t b0, std::int64_t e0) {
        std::vector<cplx> buf(static_cast<std::size_t>(fl)), scratch;
        for (std::int64_t item = b0; item < e0; ++item) {
          const std::int64_t b = item / frames, f = item % frames;
          const T* p = in + (b * S + f * step) * C;
          for (std::int64_t j = 0; j < fl; ++j)
            buf[j] = cplx(static_cast<double>(static_cast<CT>(p[j * C])) * window[j],
                          C == 2 ? static_cast<double>(static_cast<CT>(p[j * C + 1])) * window[j] : 0.0);
          plan.run(buf.data(), scratch);
          T* q = out + item * bins * 2;
          for (std::int64_t k = 0; k < bins; ++k) {
            q[2 * k] = static_cast<T>(static_cast<CT>(buf[k].real()));
            q[2 * k + 1] = static_cast<T>(static_cast<CT>(buf[k].imag()));
          }
        }
      });
    });
  };
}

/// MelWeightMatrix: [dft_length/2+1, num_mel_bins] triangular filters (as ONNX's reference).
inline fn make_mel(const kernel_node& n) {
  const dtype out = dtype_attr(n, "output_datatype", dtype::f32);
  return [=](context& ctx) {
    const std::int64_t mels = scalar_int(ctx.input(0), ctx.node(), "num_mel_bins");
    const std::int64_t dft = scalar_int(ctx.input(1), ctx.node(), "dft_length");
    const std::int64_t rate = scalar_int(ctx.input(2), ctx.node(), "sample_rate");
    const double lo = scalar_double(ctx.input(3), ctx.node(), "lower_edge_hertz");
    const double hi = scalar_double(ctx.input(4), ctx.node(), "upper_edge_hertz");
    signal_rules::check_mel_args(mels, dft, rate, lo, hi, ctx.node());
    const std::int64_t nbins = dft / 2 + 1;
    // the output first (its element count checked, its bytes against the limits), written in
    // place; the edges no more than its elements
    gpass::tensor& y = ctx.allocate_output_zeroed(0, out, {nbins, mels});
    const std::vector<std::int64_t> e = signal_rules::mel_edges(mels, dft, rate, lo, hi, ctx.node());
    dispatch<numeric_types>(out, ctx.node(), [&]<class T>() {
      T* w = y.data<T>();
      auto set = [&](std::int64_t j, std::int64_t i, double v) { w[j * mels + i] = static_cast<T>(static_cast<compute_t<T>>(v)); };
      std::int64_t l = e[0], c = e[1];
      for (std::int64_t i = 0; i < mels; ++i) {
        const std::int64_t h = e[static_cast<std::size_t>(i) + 2];
        if (c == l) set(c, i, 1.0);
        else
          for (std::int64_t j = l; j <= c; ++j) set(j, i, static_cast<double>(j - l) / static_cast<double>(c - l));
        if (h > c)
          for (std::int64_t j = c; j < h; ++j) set(j, i, static_cast<double>(h - j) / static_cast<double>(h - c));
        l = c, c = h;
      }
    });
  };
}

// ---------------------------------------------------------------------------------------
// NonMaxSuppression
// ---------------------------------------------------------------------------------------

/// NonMaxSuppression: boxes [batches, boxes, 4], scores [batches, classes, boxes], optional
/// max_output_boxes_per_class (default 0), iou_threshold (0), score_threshold (none); output
/// [selected, 3] rows (batch, class, box), per class by decreasing score (ties: lower index; NaN
/// scores last: `nn_rules::nms_before`).
inline fn make_nms(const kernel_node& n) {
  const bool center = n.attr<std::int64_t>("center_point_box", 0) != 0;
  return [=](context& ctx) {
    const gpass::tensor& boxes_t = ctx.input(0);
    const gpass::tensor& scores_t = ctx.input(1);
    const nn_rules::nms_shape z = nn_rules::nms_check(boxes_t.sizes(), scores_t.sizes(), ctx.node());
    const std::int64_t nb = z.batches, nbox = z.boxes, nc = z.classes;
    std::int64_t max_out = 0;
    if (ctx.has_input(2) && ctx.input(2).size() > 0) max_out = std::max<std::int64_t>(0, int_values(ctx.input(2), ctx.node(), "max_output_boxes_per_class").at(0));
    double iou = 0;
    if (ctx.has_input(3) && ctx.input(3).size() > 0) iou = as_doubles(ctx.input(3), ctx.node()).at(0);
    const bool has_score = ctx.has_input(4) && ctx.input(4).size() > 0;
    const double score_thr = has_score ? as_doubles(ctx.input(4), ctx.node()).at(0) : 0.0;
    nn_rules::check_iou_threshold(iou, ctx.node());
    const std::vector<double> boxes = as_doubles(boxes_t, ctx.node());
    const std::vector<double> scores = as_doubles(scores_t, ctx.node());
    // each box as (ymin, xmin, ymax, xmax)
    struct rect {
      double y0, x0, y1, x1;
    };
    auto rect_of = [&](std::int64_t b, std::int64_t i) {
      const double* p = boxes.data() + (b * nbox + i) * 4;
      if (center) return rect{p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
      return rect{std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]), std::max(p[1], p[3])};
    };
    auto suppress = [&](const rect& a, const rect& b) {
      const double ix = std::min(a.x1, b.x1) - std::max(a.x0, b.x0);
      const double iy = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
      if (ix <= 0 || iy <= 0) return false;
      const double inter = ix * iy;
      const double area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
      const double uni = area_a + area_b - inter;
      if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
      return inter / uni > iou;
    };
    std::vector<std::int64_t> selected;  // triples
    std::vector<std::int64_t> order;
    std::vector<rect> kept;
    for (std::int64_t b = 0; b < nb && max_out > 0; ++b) {
      for (std::int64_t c = 0; c < nc; ++c) {
        const double* s = scores.data() + (b * nc + c) * nbox;
        order.clear();
        for (std::int64_t i = 0; i < nbox; ++i)
          if (!has_score || s[i] > score_thr) order.push_back(i);
        std::sort(order.begin(), order.end(), [&](std::int64_t i, std::int64_t j) { return nn_rules::nms_before(s[i], i, s[j], j); });
        kept.clear();
        for (std::int64_t i : order) {
          if (static_cast<std::int64_t>(kept.size()) >= max_out) break;
          const rect r = rect_of(b, i);
          bool ok = true;
          for (const rect& k : kept)
            if (suppress(r, k)) {
              ok = false;
              break;
            }
          if (!ok) continue;
          kept.push_back(r);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
    const std::int64_t count = static_cast<std::int64_t>(selected.size() / 3);
    gpass::tensor& y = ctx.allocate_output(0, dtype::int64, {count, 3});
    std::copy(selected.begin(), selected.end(), y.data<std::int64_t>());
  };
}

// ---------------------------------------------------------------------------------------
// TfIdfVectorizer, StringNormalizer
// ---------------------------------------------------------------------------------------

/// TfIdfVectorizer: counts the pool's n-grams (sizes min_gram_length..max_gram_length, with
/// up to max_skip_count skipped items between neighbours) in each row of X ([C] or [B, C]);
/// output f32 [output_size] or [B, output_size] weighted by mode TF / IDF / TFIDF.
inline fn make_tfidf(const kernel_node& n) {
  const std::int64_t min_gram = n.attr<std::int64_t>("min_gram_length");
  const std::int64_t max_gram = n.attr<std::int64_t>("max_gram_length");
  const std::int64_t max_skip = n.attr<std::int64_t>("max_skip_count");
  const std::string mode = n.attr<std::string>("mode");
  const auto counts = n.attr<std::vector<std::int64_t>>("ngram_counts");
  const auto indexes = n.attr<std::vector<std::int64_t>>("ngram_indexes");
  const auto pool_ints = n.attr<std::vector<std::int64_t>>("pool_int64s", {});
  const auto pool_strings = n.attr<std::vector<std::string>>("pool_strings", {});
  const auto weights = n.attr<std::vector<float>>("weights", {});
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") n.fail("mode must be TF, IDF or TFIDF, got '" + mode + "'");
  if (min_gram < 1 || max_gram < min_gram) n.fail("need 1 <= min_gram_length <= max_gram_length");
  if (max_skip < 0) n.fail("max_skip_count must be non-negative");
  if (!pool_ints.empty() && !pool_strings.empty()) n.fail("give pool_int64s or pool_strings, not both");
  const bool strings = !pool_strings.empty();
  // words: pool strings to ids (their first position)
  std::unordered_map<std::string, std::int64_t> word_ids;
  std::vector<std::int64_t> pool;
  if (strings) {
    for (const auto& s : pool_strings) pool.push_back(word_ids.emplace(s, static_cast<std::int64_t>(word_ids.size())).first->second);
  } else {
    pool = pool_ints;
  }
  const std::int64_t total = static_cast<std::int64_t>(pool.size());
  std::int64_t out_size = 0;
  for (std::int64_t i : indexes) {
    if (i < 0) n.fail("ngram_indexes must be non-negative");
    if (i == std::numeric_limits<std::int64_t>::max()) n.fail("ngram_indexes value " + std::to_string(i) + " is too large");
    out_size = std::max(out_size, i + 1);
  }
  // n-gram -> its slot, slot -> output index: rows count into slots (one per output index
  // that an n-gram counts into), a scratch bounded by the pool, not by max(ngram_indexes)
  std::map<std::vector<std::int64_t>, std::int64_t> grams;
  std::vector<std::int64_t> slot_index;
  std::unordered_map<std::int64_t, std::int64_t> slot_of;
  std::int64_t gram_no = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const std::int64_t size = static_cast<std::int64_t>(k) + 1;
    const std::int64_t begin = counts[k], end = k + 1 < counts.size() ? counts[k + 1] : total;
    if (begin < 0 || end < begin || end > total || (end - begin) % size != 0) n.fail("ngram_counts does not fit the pool");
    for (std::int64_t p = begin; p < end; p += size, ++gram_no) {
      if (gram_no >= static_cast<std::int64_t>(indexes.size())) n.fail("ngram_indexes has fewer entries than the pool's n-grams");
      if (size < min_gram || size > max_gram) continue;
      auto [g, fresh] = grams.emplace(std::vector<std::int64_t>(pool.begin() + p, pool.begin() + p + size), 0);
      if (!fresh) continue;  // the first of equal n-grams counts
      auto [s, new_slot] = slot_of.emplace(indexes[gram_no], static_cast<std::int64_t>(slot_index.size()));
      if (new_slot) slot_index.push_back(indexes[gram_no]);
      g->second = s->second;
    }
  }
  if (!weights.empty() && static_cast<std::int64_t>(weights.size()) < out_size) n.fail("weights has fewer entries than the output");
  // no pool n-gram is longer than ngram_counts has sizes: longer ones would never match
  const std::int64_t longest = std::min<std::int64_t>(max_gram, static_cast<std::int64_t>(counts.size()));
  // n-grams with gaps (skip > 1) have at least 2 items
  const std::int64_t shortest_gapped = std::max<std::int64_t>(min_gram, 2);
  return [=](context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    if (x.rank() > 2) ctx.fail("TfIdfVectorizer input must have rank 1 or 2");
    const std::int64_t rows = x.rank() == 2 ? x.sizes()[0] : 1;
    const std::int64_t C = x.rank() == 0 ? 1 : x.sizes().back();
    std::vector<std::int64_t> ids(static_cast<std::size_t>(x.size()));
    if (x.element_type() == dtype::string) {
      if (!strings) ctx.fail("string input needs pool_strings");
      const std::string* p = x.data<std::string>();
      for (std::size_t i = 0; i < ids.size(); ++i) {
        auto it = word_ids.find(p[i]);
        ids[i] = it == word_ids.end() ? -1 : it->second;
      }
    } else {
      if (strings) ctx.fail("integer input needs pool_int64s");
      ids = int_values(x.reshaped({x.size()}), ctx.node(), "X");
    }
    // the output first: an output size over the limits fails before any work
    const std::vector<std::int64_t> out_sizes =
        x.rank() == 2 ? std::vector<std::int64_t>{rows, out_size} : std::vector<std::int64_t>{out_size};
    gpass::tensor& y = ctx.allocate_output(0, dtype::f32, out_sizes);
    auto weigh = [&](double f, std::int64_t i) {
      if (mode == "IDF") return f > 0 ? (weights.empty() ? 1.0 : weights[i]) : 0.0;
      if (mode == "TFIDF" && !weights.empty()) return f * weights[i];
      return f;
    };
    const std::atomic<bool>* cancel = ctx.cancel_flag();
    std::vector<double> freq(slot_index.size());
    std::vector<std::int64_t> key;
    for (std::int64_t row = 0; row < rows; ++row) {
      const std::int64_t* p = ids.data() + row * C;
      std::fill(freq.begin(), freq.end(), 0.0);
      for (std::int64_t start = 0; start < C; ++start) {
        if (cancel && cancel->load(std::memory_order_relaxed)) ctx.fail("run cancelled");
        // skips 1 .. max_skip + 1 apart, until even the shortest n-gram with gaps no longer
        // fits: fewer items fit the further apart they are (max_skip_count may be 10^15)
        for (std::int64_t skip = 1; skip - 1 <= max_skip; ++skip) {
          const std::int64_t fit = (C - 1 - start) / skip + 1;  // items at start, start + skip, ... before C
          const std::int64_t last = std::min(longest, fit);
          if (skip > 1 && last < shortest_gapped) break;
          for (std::int64_t size = skip > 1 ? shortest_gapped : min_gram; size <= last; ++size) {
            key.clear();
            for (std::int64_t j = 0; j < size; ++j) key.push_back(p[start + j * skip]);
            auto it = grams.find(key);
            if (it != grams.end()) freq[static_cast<std::size_t>(it->second)] += 1.0;
          }
        }
      }
      // every output element from its count (0 for those no n-gram counts into)
      float* out = y.data<float>() + row * out_size;
      for (std::int64_t i = 0; i < out_size; ++i) out[i] = static_cast<float>(weigh(0.0, i));
      for (std::size_t k = 0; k < slot_index.size(); ++k) out[slot_index[k]] = static_cast<float>(weigh(freq[k], slot_index[k]));
    }
  };
}

/// StringSplit (opset 20): each string split as Python's `str.split` does: on `delimiter`
/// (empty or absent: on runs of whitespace, leading and trailing whitespace dropped), at most
/// `maxsplit` times (the rest is the last piece); output 0 [x..., most pieces] padded with
/// "", output 1 the counts.
inline fn make_string_split(const kernel_node& n) {
  const std::string delim = n.attr<std::string>("delimiter", "");
  const bool has_max = n.has_attr("maxsplit");
  const std::int64_t maxsplit = n.attr<std::int64_t>("maxsplit", -1);
  if (has_max && maxsplit < 0) n.fail("maxsplit must not be negative, got " + std::to_string(maxsplit));
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  // calls piece(position, length) for each piece of `str`
  auto split = [=](const std::string& str, auto&& piece) {
    std::int64_t count = 0;
    if (delim.empty()) {
      std::size_t p = 0;
      while (p < str.size()) {
        while (p < str.size() && is_space(str[p])) ++p;
        if (p == str.size()) break;
        if (has_max && count == maxsplit) {  // the rest, as it is (Python's str.split)
          piece(p, str.size() - p);
          break;
        }
        std::size_t e = p;
        while (e < str.size() && !is_space(str[e])) ++e;
        piece(p, e - p);
        ++count;
        p = e;
      }
    } else {
      std::size_t p = 0;
      for (;;) {
        const std::size_t f = has_max && count == maxsplit ? std::string::npos : str.find(delim, p);
        if (f == std::string::npos) {
          piece(p, str.size() - p);
          break;
        }
        piece(p, f - p);
        ++count;
        p = f + delim.size();
      }
    }
  };
  return [=](context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    const std::string* in = x.data<std::string>();
    // the pieces counted first, the output allocated (its cells checked against the limits:
    // one string of a million delimiters pads every other row to a million), then split into it
    std::int64_t most = 0;
    for (std::int64_t i = 0; i < x.size(); ++i) {
      std::int64_t n = 0;
      split(in[i], [&](std::size_t, std::size_t) { ++n; });
      most = std::max(most, n);
    }
    std::vector<std::int64_t> ys = x.sizes();
    ys.push_back(most);
    gpass::tensor& y = ctx.allocate_output(0, dtype::string, ys);
    std::string* yo = y.data<std::string>();
    std::int64_t* counts = ctx.num_outputs() > 1 ? ctx.allocate_output(1, dtype::int64, x.sizes()).data<std::int64_t>() : nullptr;
    for (std::int64_t i = 0; i < x.size(); ++i) {
      std::int64_t k = 0;
      split(in[i], [&](std::size_t p, std::size_t len) { yo[i * most + k++] = in[i].substr(p, len); });
      if (counts) counts[i] = k;
    }
  };
}

/// RegexFullMatch (opset 20): true where the whole string matches `pattern` (compiled once
/// with std::regex's ECMAScript grammar: RE2's common syntax; RE2-only constructs such as
/// named groups `(?P<n>...)` are refused with an error naming the node). With libstdc++ the
/// breadth-first matcher runs (polynomial time, like RE2; backreferences are refused).
inline fn make_regex_full_match(const kernel_node& n) {
  const std::string pattern = n.attr<std::string>("pattern");
  std::shared_ptr<const std::regex> re;
  try {
#if defined(__GLIBCXX__)
    // libstdc++'s breadth-first matcher: time polynomial in the input, no recursion over it
    // (no backreferences)
    re = std::make_shared<const std::regex>(pattern, std::regex::ECMAScript | std::regex_constants::__polynomial);
#else
    re = std::make_shared<const std::regex>(pattern, std::regex::ECMAScript);
#endif
  } catch (const std::regex_error& e) {
    n.fail("pattern '" + pattern + "' is not a regular expression gpass supports (" + e.what() + ")");
  }
  return [re](context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    gpass::tensor& y = ctx.allocate_output(0, dtype::bool_, x.sizes());
    for (std::int64_t i = 0; i < x.size(); ++i) y.data<bool>()[i] = std::regex_match(x.data<std::string>()[i], *re);
  };
}

/// StringNormalizer: drops the elements equal to a stopword (ignoring ASCII case unless
/// is_case_sensitive), then changes ASCII case (LOWER / UPPER / NONE). Input [C] or [1, C];
/// all dropped gives [""] (shape [1] or [1, 1]).
inline fn make_string_normalizer(const kernel_node& n) {
  const std::string action = n.attr<std::string>("case_change_action", "NONE");
  const bool sensitive = n.attr<std::int64_t>("is_case_sensitive", 0) != 0;
  const auto stop_list = n.attr<std::vector<std::string>>("stopwords", {});
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    n.fail("case_change_action must be NONE, LOWER or UPPER, got '" + action + "'");
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::set<std::string> stops;
  for (const auto& s : stop_list) stops.insert(sensitive ? s : lower(s));
  return [=](context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    if (!(x.rank() == 1 || (x.rank() == 2 && x.sizes()[0] == 1))) ctx.fail("StringNormalizer input must be [C] or [1, C]");
    std::vector<std::string> kept;
    for (const std::string& s : x.values<std::string>()) {
      if (!stops.empty() && stops.count(sensitive ? s : lower(s))) continue;
      std::string t = s;
      if (action == "LOWER") t = lower(t);
      else if (action == "UPPER")
        for (char& c : t) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      kept.push_back(std::move(t));
    }
    if (kept.empty()) kept.emplace_back();
    const std::int64_t k = static_cast<std::int64_t>(kept.size());
    gpass::tensor& y = ctx.allocate_output(0, dtype::string, x.rank() == 2 ? std::vector<std::int64_t>{1, k} : std::vector<std::int64_t>{k});
    std::move(kept.begin(), kept.end(), y.data<std::string>());
  };
}

// ---------------------------------------------------------------------------------------
// Random generators (seeded: the same seed gives the same values; no seed: fresh each run)
// ---------------------------------------------------------------------------------------

enum class random_kind { uniform, normal, bernoulli };

/// RandomUniform / RandomNormal (shape attribute), RandomUniformLike / RandomNormalLike
/// (shape of input 0), Bernoulli (probabilities in input 0).
inline fn make_random(const kernel_node& n, random_kind k, bool like) {
  const bool seeded = n.has_attr("seed");
  const double seed = n.attr<double>("seed", 0.0);
  const double a = k == random_kind::normal ? n.attr<double>("mean", 0.0) : n.attr<double>("low", 0.0);
  const double b = k == random_kind::normal ? n.attr<double>("scale", 1.0) : n.attr<double>("high", 1.0);
  const bool has_dtype = n.has_attr("dtype");
  const dtype attr_t = dtype_attr(n, "dtype", dtype::f32);
  std::vector<std::int64_t> shape_attr;
  if (!like) {
    shape_attr = n.attr<std::vector<std::int64_t>>("shape");
    for (std::int64_t s : shape_attr)
      if (s < 0) n.fail("shape must not have negative sizes");
  }
  if (k == random_kind::uniform && !(a <= b)) n.fail("need low <= high");
  if (k == random_kind::normal && !(b >= 0)) n.fail("scale must be non-negative");
  return [=](context& ctx) {
    std::vector<std::int64_t> sizes = shape_attr;
    dtype t = attr_t;
    const gpass::tensor* in = nullptr;
    if (like) {
      in = &ctx.input(0);
      sizes = in->sizes();
      if (!has_dtype) t = in->element_type();
    }
    auto eng = make_engine(seeded, seed);
    // values drawn straight into the output, allocated first: a shape attribute over the
    // limits (or whose element count overflows) fails before any memory is taken
    if (k == random_kind::bernoulli) {
      const std::vector<double> p = as_doubles(*in, ctx.node());
      std::uniform_real_distribution<double> u(0.0, 1.0);
      gpass::tensor& y = ctx.allocate_output(0, t, sizes);
      if (t == dtype::bool_) {
        for (std::int64_t i = 0; i < y.size(); ++i) y.data<bool>()[i] = u(eng) < p[i];
        return;
      }
      dispatch<numeric_types>(t, ctx.node(), [&]<class T>() {
        for (std::int64_t i = 0; i < y.size(); ++i)
          y.data<T>()[i] = static_cast<T>(static_cast<compute_t<T>>(u(eng) < p[i] ? 1.0 : 0.0));
      });
      return;
    }
    if (!is_floating(t)) ctx.fail("random values need a floating-point dtype, got " + std::string(to_string(t)));
    if (k == random_kind::uniform) {
      std::uniform_real_distribution<double> u(a, b);
      write_generated(ctx, 0, t, sizes, [&](std::int64_t) { return u(eng); });
    } else {
      std::normal_distribution<double> d(a, b);
      write_generated(ctx, 0, t, sizes, [&](std::int64_t) { return d(eng); });
    }
  };
}

}  // namespace reduce_detail

/// Registers the kernels of this family.
inline void register_reduce(registry& r) {
  using namespace reduce_detail;
  const std::pair<const char*, rkind> reductions[] = {
      {"ReduceSum", rkind::sum},         {"ReduceMean", rkind::mean},
      {"ReduceMax", rkind::max},         {"ReduceMin", rkind::min},
      {"ReduceProd", rkind::prod},       {"ReduceL1", rkind::l1},
      {"ReduceL2", rkind::l2},           {"ReduceLogSum", rkind::log_sum},
      {"ReduceLogSumExp", rkind::log_sum_exp}, {"ReduceSumSquare", rkind::sum_square},
  };
  for (const auto& [name, k] : reductions) {
    const rkind kind = k;
    auto types = kind == rkind::log_sum_exp ? reduce_float_types::dtypes() : reduce_types::dtypes();
    if (kind == rkind::max || kind == rkind::min) types.push_back(dtype::bool_);
    r.add({.op = name,
           .dtypes = std::move(types),
           .make = [kind](const kernel_node& n) -> fn { return make_reduce(n, kind); }});
  }
  r.add({.op = "ArgMax", .dtypes = numeric_types::dtypes(), .make = [](const kernel_node& n) -> fn { return make_arg(n, true); }});
  r.add({.op = "ArgMin", .dtypes = numeric_types::dtypes(), .make = [](const kernel_node& n) -> fn { return make_arg(n, false); }});
  r.add({.op = "CumSum", .dtypes = cumsum_types::dtypes(), .make = [](const kernel_node& n) -> fn { return make_cumsum(n); }});
  r.add({.op = "CumProd", .since_version = 26, .dtypes = cumsum_types::dtypes(),
         .make = [](const kernel_node& n) -> fn { return make_cumsum(n, true); }});
  r.add({.op = "HannWindow", .since_version = 17, .dtypes = {dtype::int32, dtype::int64},
         .make = [](const kernel_node& n) -> fn { return make_window(n, window_kind::hann); }});
  r.add({.op = "HammingWindow", .since_version = 17, .dtypes = {dtype::int32, dtype::int64},
         .make = [](const kernel_node& n) -> fn { return make_window(n, window_kind::hamming); }});
  r.add({.op = "BlackmanWindow", .since_version = 17, .dtypes = {dtype::int32, dtype::int64},
         .make = [](const kernel_node& n) -> fn { return make_window(n, window_kind::blackman); }});
  r.add({.op = "DFT", .since_version = 17, .dtypes = float_types::dtypes(), .make = [](const kernel_node& n) -> fn { return make_dft(n); }});
  r.add({.op = "STFT", .since_version = 17, .dtypes = float_types::dtypes(), .make = [](const kernel_node& n) -> fn { return make_stft(n); }});
  r.add({.op = "MelWeightMatrix", .since_version = 17, .dtypes = {dtype::int32, dtype::int64},
         .make = [](const kernel_node& n) -> fn { return make_mel(n); }});
  r.add({.op = "NonMaxSuppression", .since_version = 10, .dtypes = {dtype::f32, dtype::f64, dtype::f16},
         .make = [](const kernel_node& n) -> fn { return make_nms(n); }});
  r.add({.op = "TfIdfVectorizer", .since_version = 9, .dtypes = {dtype::int32, dtype::int64, dtype::string},
         .make = [](const kernel_node& n) -> fn { return make_tfidf(n); }});
  r.add({.op = "StringSplit", .since_version = 20, .dtypes = {dtype::string},
         .make = [](const kernel_node& n) -> fn { return make_string_split(n); }});
  r.add({.op = "RegexFullMatch", .since_version = 20, .dtypes = {dtype::string},
         .make = [](const kernel_node& n) -> fn { return make_regex_full_match(n); }});
  r.add({.op = "StringNormalizer", .since_version = 10, .dtypes = {dtype::string},
         .make = [](const kernel_node& n) -> fn { return make_string_normalizer(n); }});
  r.add({.op = "RandomUniform", .type_input = -1,
         .make = [](const kernel_node& n) -> fn { return make_random(n, random_kind::uniform, false); }});
  r.add({.op = "RandomNormal", .type_input = -1,
         .make = [](const kernel_node& n) -> fn { return make_random(n, random_kind::normal, false); }});
  r.add({.op = "RandomUniformLike", .make = [](const kernel_node& n) -> fn { return make_random(n, random_kind::uniform, true); }});
  r.add({.op = "RandomNormalLike", .make = [](const kernel_node& n) -> fn { return make_random(n, random_kind::normal, true); }});
  r.add({.op = "Bernoulli", .since_version = 15, .dtypes = float_types::dtypes(),
         .make = [](const kernel_node& n) -> fn { return make_random(n, random_kind::bernoulli, true); }});
}

}  // namespace gpass::exec::cpu_detail
