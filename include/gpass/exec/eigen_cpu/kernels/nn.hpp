// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file nn.hpp
/// Eigen CPU kernels: nn family (ONNX semantics): Softmax, LogSoftmax, Hardmax (opset < 13
/// coerce-to-2-D and opset >= 13 single-axis forms), BatchNormalization,
/// InstanceNormalization, LayerNormalization, LRN, MeanVarianceNormalization, LpNormalization,
/// the recurrent layers LSTM, GRU and RNN, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss,
/// GridSample, AffineGrid, DeformConv and RoiAlign; ONNX Runtime's com.microsoft Gelu,
/// BiasGelu, FastGelu, QuickGelu and SkipLayerNormalization. Floating-point element types (f32, f64; f16 and bf16 compute in float).
/// Private (`gpass::exec::cpu_detail`); `register_nn` adds them to a registry.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include <gpass/core/checked.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/eigen_cpu/kernels/lstm_cell.hpp>
#include <gpass/exec/eigen_cpu/kernels/sgemm.hpp>
#include <gpass/exec/nn_rules.hpp>
#include <gpass/exec/rnn_rules.hpp>

namespace gpass::exec::cpu_detail {

namespace nn_impl {

using i64 = std::int64_t;

template <class C>
using arr = Eigen::Array<C, Eigen::Dynamic, 1>;
template <class C>
using arr_map = Eigen::Map<arr<C>>;
template <class C>
using carr_map = Eigen::Map<const arr<C>>;
template <class C>
using rmat = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Element types the family accepts.
using nn_types = type_list<float, double, Eigen::half, Eigen::bfloat16>;

template <class T>
inline constexpr bool is_low_v = std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

/// `v` (a compute value) as element type `T`.
template <class T, class C>
inline T to_elem(C v) {
  if constexpr (is_low_v<T>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}

/// The elements of a floating-point tensor (any of nn_types) converted to `C`.
template <class C>
std::vector<C> to_compute(const gpass::tensor& t, const kernel_node& n) {
  std::vector<C> r(static_cast<std::size_t>(t.size()));
  dispatch<nn_types>(t.element_type(), n, [&]<class S>() {
    const S* p = t.data<S>();
    for (std::size_t i = 0; i < r.size(); ++i) r[i] = static_cast<C>(static_cast<compute_t<S>>(p[i]));
  });
  return r;
}

/// Writes compute values `v` into a tensor of element type `T`.
template <class T, class C>
void from_compute(const C* v, gpass::tensor& y) {
  T* p = y.data<T>();
  const i64 n = y.size();
  for (i64 i = 0; i < n; ++i) p[i] = to_elem<T>(v[i]);
}

/// Runs `core(const C* x, C* y)` on the elements of `x` and `y` (same element type `T`)
/// in the compute type: directly for f32/f64, through float copies for f16/bf16.
template <class T, class F>
void with_compute(const gpass::tensor& x, gpass::tensor& y, F&& core) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, C>) {
    core(x.data<T>(), y.data<T>());
  } else {
    std::vector<C> xi(static_cast<std::size_t>(x.size())), yo(static_cast<std::size_t>(y.size()));
    const T* px = x.data<T>();
    for (std::size_t i = 0; i < xi.size(); ++i) xi[i] = static_cast<C>(px[i]);
    core(static_cast<const C*>(xi.data()), yo.data());
    from_compute<T>(yo.data(), y);
  }
}

/// The product of sizes [b, e) of `s`: 0 when one is 0, INT64_MAX when it overflows (only
/// the other sizes of an empty tensor can: the kernels do no work for it).
inline i64 prod(const std::vector<i64>& s, std::size_t b, std::size_t e) {
  i64 p = 1;
  bool over = false;
  for (std::size_t i = b; i < e && i < s.size(); ++i) {
    if (s[i] == 0) return 0;
    over = over || __builtin_mul_overflow(p, s[i], &p);
  }
  return over ? std::numeric_limits<i64>::max() : p;
}

inline void check_float(const gpass::tensor& t, const kernel_node& n, const char* what) {
  const dtype d = t.element_type();
  if (d != dtype::f32 && d != dtype::f64 && d != dtype::f16 && d != dtype::bf16)
    n.fail(std::string(what) + " must be a floating-point tensor, got " + std::string(to_string(d)));
}

// ---------------------------------------------------------------------------------------
// Softmax, LogSoftmax, Hardmax

enum class smax { softmax, log_softmax, hardmax };

/// One contiguous row of `n` elements.
template <class C>
void smax_row(const C* x, C* y, i64 n, smax k) {
  if (n == 0) return;
  carr_map<C> xr(x, n);
  arr_map<C> yr(y, n);
  if (k == smax::hardmax) {
    i64 best = 0;
    for (i64 i = 1; i < n; ++i)
      if (x[i] > x[best]) best = i;
    yr.setZero();
    y[best] = C(1);
    return;
  }
  const C m = xr.maxCoeff();
  if (k == smax::softmax) {
    yr = exp_normal_or_zero(xr - m);
    const C s = yr.sum();
    yr *= C(1) / s;
  } else {
    const C s = exp_or_zero(xr - m).sum();
    yr = xr - (m + std::log(s));
  }
}

/// A block of `n` rows of stride `inner`, columns [j0, j1): the reduction runs down the rows.
template <class C>
void smax_block(const C* x, C* y, i64 n, i64 inner, i64 j0, i64 j1, smax k, arr<C>& mx, arr<C>& sum) {
  const i64 w = j1 - j0;
  if (w <= 0 || n == 0) return;
  mx.resize(w);
  sum.resize(w);
  auto row = [&](const C* base, i64 r) { return carr_map<C>(base + r * inner + j0, w); };
  auto orow = [&](i64 r) { return arr_map<C>(y + r * inner + j0, w); };
  if (k == smax::hardmax) {
    for (i64 j = j0; j < j1; ++j) {
      i64 best = 0;
      for (i64 r = 1; r < n; ++r)
        if (x[r * inner + j] > x[best * inner + j]) best = r;
      for (i64 r = 0; r < n; ++r) y[r * inner + j] = r == best ? C(1) : C(0);
    }
    return;
  }
  mx = row(x, 0);
  for (i64 r = 1; r < n; ++r) mx = mx.max(row(x, r));
  sum.setZero();
  if (k == smax::softmax) {
    for (i64 r = 0; r < n; ++r) {
      auto o = orow(r);
      o = exp_normal_or_zero(row(x, r) - mx);
      sum += o;
    }
    sum = sum.inverse();
    for (i64 r = 0; r < n; ++r) orow(r) *= sum;
  } else {
    for (i64 r = 0; r < n; ++r) sum += exp_or_zero(row(x, r) - mx);
    mx += sum.log();
    for (i64 r = 0; r < n; ++r) orow(r) = row(x, r) - mx;
  }
}

/// Softmax-like reduction of a tensor viewed as [outer, n, inner] along the middle axis.
template <class C>
void smax_run(const eigen_cpu& cpu, const C* x, C* y, i64 outer, i64 n, i64 inner, smax k) {
  if (outer == 0 || n == 0 || inner == 0) return;
  if (inner == 1) {
    cpu.parallel_for(outer, static_cast<double>(n) * 8.0, [&](i64 b, i64 e) {
      for (i64 o = b; o < e; ++o) smax_row(x + o * n, y + o * n, n, k);
    });
    return;
  }
  constexpr i64 chunk = 256;
  const i64 chunks = (inner + chunk - 1) / chunk;
  cpu.parallel_for(outer * chunks, static_cast<double>(n * std::min(inner, chunk)) * 8.0, [&](i64 b, i64 e) {
    arr<C> mx, sum;
    for (i64 u = b; u < e; ++u) {
      const i64 o = u / chunks, c = u % chunks;
      const i64 j0 = c * chunk, j1 = std::min(inner, j0 + chunk);
      smax_block(x + o * n * inner, y + o * n * inner, n, inner, j0, j1, k, mx, sum);
    }
  });
}

inline void register_softmax(registry& r, const char* op, smax k) {
  auto make = [k](const kernel_node& n) -> fn {
    const bool legacy = n.opset > 0 && n.opset < 13;
    const i64 axis_attr = n.attr<i64>("axis", legacy ? 1 : -1);
    return [k, legacy, axis_attr](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto& s = x.sizes();
      const i64 rank = static_cast<i64>(s.size());
      i64 outer = 1, len = 1, inner = 1;
      if (rank == 0) {
        // a scalar: one row of one element
      } else {
        const i64 a = normalize_axis(axis_attr, rank, ctx.node());
        if (legacy) {
          outer = prod(s, 0, static_cast<std::size_t>(a));
          len = prod(s, static_cast<std::size_t>(a), s.size());
        } else {
          outer = prod(s, 0, static_cast<std::size_t>(a));
          len = s[static_cast<std::size_t>(a)];
          inner = prod(s, static_cast<std::size_t>(a) + 1, s.size());
        }
      }
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), s);
        with_compute<T>(x, y, [&](const auto* xi, auto* yo) { smax_run(ctx.policy(), xi, yo, outer, len, inner, k); });
      });
    };
  };
  r.add({.domain = "", .op = op, .since_version = 1, .dtypes = nn_types::dtypes(), .make = make});
}

// ---------------------------------------------------------------------------------------
// BatchNormalization

inline void register_batch_norm(registry& r) {
  r.add({.domain = "", .op = "BatchNormalization", .since_version = 1, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const double eps = n.attr<double>("epsilon", 1e-5);
    const double momentum = n.attr<double>("momentum", 0.9);
    const int opset = n.opset;
    bool training = false;
    if (opset >= 14) training = n.attr<i64>("training_mode", 0) != 0;
    else if (opset > 0 && opset < 7) training = n.attr<i64>("is_test", 0) == 0 && n.num_outputs() > 1;
    else training = n.num_outputs() > 1;
    const bool spatial = opset >= 9 || opset == 0 ? true : n.attr<i64>("spatial", 1) != 0;
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto& s = x.sizes();
      if (s.size() < 2) ctx.fail("X must have rank >= 2 (N x C x ...), got rank " + std::to_string(s.size()));
      const i64 N = s[0];
      // channels: C, or C*D1*... for the per-activation (non-spatial) form of old opsets
      const i64 C = spatial ? s[1] : prod(s, 1, s.size());
      const i64 inner = spatial ? prod(s, 2, s.size()) : 1;
      for (std::size_t k = 1; k < 5; ++k) {
        const gpass::tensor& p = ctx.input(k);
        check_float(p, ctx.node(), "scale, B, mean and var");
        if (p.size() != C)
          ctx.fail("input " + std::to_string(k) + " has " + std::to_string(p.size()) + " elements, expected " + std::to_string(C));
      }
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using CT = compute_t<T>;
        using D = double;
        const auto scale = to_compute<D>(ctx.input(1), ctx.node());
        const auto bias = to_compute<D>(ctx.input(2), ctx.node());
        auto mean = to_compute<D>(ctx.input(3), ctx.node());
        auto var = to_compute<D>(ctx.input(4), ctx.node());
        std::vector<D> cur_mean, cur_var;
        // an empty X may have any N and spatial sizes: no statistics loops over them (0)
        const bool empty = x.size() == 0;
        if (training) {
          cur_mean.assign(static_cast<std::size_t>(C), 0.0);
          cur_var.assign(static_cast<std::size_t>(C), 0.0);
          auto xs = to_compute<D>(x, ctx.node());
          const D cnt = static_cast<D>(N) * static_cast<D>(inner);
          for (i64 c = 0; c < (empty ? 0 : C); ++c) {
            D sum = 0;
            for (i64 b = 0; b < N; ++b)
              for (i64 i = 0; i < inner; ++i) sum += xs[static_cast<std::size_t>((b * C + c) * inner + i)];
            const D m = cnt > 0 ? sum / cnt : 0;
            D sq = 0;
            for (i64 b = 0; b < N; ++b)
              for (i64 i = 0; i < inner; ++i) {
                const D d = xs[static_cast<std::size_t>((b * C + c) * inner + i)] - m;
                sq += d * d;
              }
            cur_mean[c] = m;
            cur_var[c] = cnt > 0 ? sq / cnt : 0;
          }
        }
        const std::vector<D>& um = training ? cur_mean : mean;
        const std::vector<D>& uv = training ? cur_var : var;
        std::vector<CT> a(static_cast<std::size_t>(C)), b(static_cast<std::size_t>(C));
        for (i64 c = 0; c < C; ++c) {
          const D k = scale[c] / std::sqrt(uv[c] + eps);
          a[c] = static_cast<CT>(k);
          b[c] = static_cast<CT>(bias[c] - um[c] * k);
        }
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), s);
        with_compute<T>(x, y, [&](const CT* xi, CT* yo) {
          ctx.policy().parallel_for(empty ? 0 : N * C, static_cast<double>(inner) * 2.0, [&](i64 bb, i64 e) {
            for (i64 u = bb; u < e; ++u) {
              const i64 c = u % C;
              arr_map<CT>(yo + u * inner, inner) = carr_map<CT>(xi + u * inner, inner) * a[c] + b[c];
            }
          });
        });
        if (training) {
          auto put = [&](std::size_t port, const std::vector<D>& v, dtype t, const std::vector<i64>& sizes) {
            if (port >= ctx.num_outputs()) return;
            gpass::tensor& o = ctx.allocate_output(port, t, sizes);
            dispatch<nn_types>(t, ctx.node(), [&]<class U>() {
              U* p = o.data<U>();
              for (std::size_t i = 0; i < v.size(); ++i) p[i] = to_elem<U>(v[i]);
            });
          };
          std::vector<D> run_mean(static_cast<std::size_t>(C)), run_var(static_cast<std::size_t>(C));
          for (i64 c = 0; c < C; ++c) {
            run_mean[c] = mean[c] * momentum + cur_mean[c] * (1 - momentum);
            run_var[c] = var[c] * momentum + cur_var[c] * (1 - momentum);
          }
          put(1, run_mean, ctx.input(3).element_type(), ctx.input(3).sizes());
          put(2, run_var, ctx.input(4).element_type(), ctx.input(4).sizes());
          put(3, cur_mean, ctx.input(3).element_type(), ctx.input(3).sizes());
          put(4, cur_var, ctx.input(4).element_type(), ctx.input(4).sizes());
        }
      });
    };
  }});
}

// ---------------------------------------------------------------------------------------
// InstanceNormalization, LayerNormalization, LRN, MeanVarianceNormalization

inline void register_instance_norm(registry& r) {
  r.add({.domain = "", .op = "InstanceNormalization", .since_version = 1, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const double eps = n.attr<double>("epsilon", 1e-5);
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto& s = x.sizes();
      if (s.size() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got rank " + std::to_string(s.size()));
      const i64 N = s[0], C = s[1], inner = prod(s, 2, s.size());
      for (std::size_t k = 1; k < 3; ++k) {
        check_float(ctx.input(k), ctx.node(), "scale and B");
        if (ctx.input(k).size() != C) ctx.fail("scale and B must have C = " + std::to_string(C) + " elements");
      }
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using CT = compute_t<T>;
        const auto scale = to_compute<CT>(ctx.input(1), ctx.node());
        const auto bias = to_compute<CT>(ctx.input(2), ctx.node());
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), s);
        if (y.size() == 0) return;  // (N x C may be anything over empty instances)
        with_compute<T>(x, y, [&](const CT* xi, CT* yo) {
          ctx.policy().parallel_for(N * C, static_cast<double>(inner) * 4.0, [&](i64 b, i64 e) {
            for (i64 u = b; u < e; ++u) {
              const i64 c = u % C;
              carr_map<CT> xr(xi + u * inner, inner);
              arr_map<CT> yr(yo + u * inner, inner);
              const CT m = inner ? xr.sum() / static_cast<CT>(inner) : CT(0);
              const CT v = inner ? (xr - m).square().sum() / static_cast<CT>(inner) : CT(0);
              const CT k = scale[c] / std::sqrt(v + static_cast<CT>(eps));
              yr = (xr - m) * k + bias[c];
            }
          });
        });
      });
    };
  }});
}

inline void register_layer_norm(registry& r) {
  r.add({.domain = "", .op = "LayerNormalization", .since_version = 1, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const double eps = n.attr<double>("epsilon", 1e-5);
    const i64 axis_attr = n.attr<i64>("axis", -1);
    // Mean and InvStdDev have the stash type (ONNX type inference: U = stash_type); an
    // inferred output type wins when there is one.
    const i64 stash = n.attr<i64>("stash_type", 1);
    dtype stat_type = stash == 11 ? dtype::f64 : stash == 10 ? dtype::f16 : stash == 16 ? dtype::bf16 : dtype::f32;
    if (n.num_outputs() > 1 && n.output_types[1].is_tensor()) {
      const dtype t = n.output_types[1].tensor().element;
      if (t == dtype::f32 || t == dtype::f64 || t == dtype::f16 || t == dtype::bf16) stat_type = t;
    }
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto& s = x.sizes();
      const i64 rank = static_cast<i64>(s.size());
      if (rank == 0) ctx.fail("X must have rank >= 1");
      const std::size_t a = static_cast<std::size_t>(normalize_axis(axis_attr, rank, ctx.node()));
      const i64 outer = prod(s, 0, a), inner = prod(s, a, s.size());
      const std::vector<i64> norm_sizes(s.begin() + static_cast<std::ptrdiff_t>(a), s.end());
      // Scale and B broadcast (unidirectionally) to X's normalized dimensions.
      auto expand = [&](const gpass::tensor& p, const char* what) {
        check_float(p, ctx.node(), what);
        std::vector<double> v = to_compute<double>(p, ctx.node());
        if (p.size() == inner && (p.rank() == norm_sizes.size() || p.rank() <= 1)) return v;
        if (p.rank() > norm_sizes.size())
          ctx.fail(std::string(what) + " of shape " + p.shape().to_string() + " does not broadcast to " +
                   shape::of(norm_sizes).to_string());
        const auto ps = p.sizes();
        for (std::size_t i = 0; i < ps.size(); ++i) {
          const i64 want = norm_sizes[norm_sizes.size() - ps.size() + i];
          if (ps[i] != 1 && ps[i] != want)
            ctx.fail(std::string(what) + " of shape " + p.shape().to_string() + " does not broadcast to " +
                     shape::of(norm_sizes).to_string());
        }
        std::vector<double> out(static_cast<std::size_t>(inner));
        strided_walker<1> w(norm_sizes, {broadcast_strides(ps, norm_sizes)});
        w.seek(0);
        for (i64 i = 0; i < inner; ++i, w.next()) out[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>(w.offset(0))];
        return out;
      };
      std::vector<i64> stat_sizes = s;
      for (std::size_t i = a; i < stat_sizes.size(); ++i) stat_sizes[i] = 1;
      // the statistics outputs (Mean, InvStdDev) from one value per row, allocated (and so
      // limit-checked) before anything is sized by the row count
      auto write_stats = [&](auto&& value_of) {
        for (std::size_t port = 1; port < 3 && port < ctx.num_outputs(); ++port) {
          if (!ctx.output_wanted(port)) continue;
          gpass::tensor& o = ctx.allocate_output(port, stat_type, stat_sizes);
          dispatch<nn_types>(stat_type, ctx.node(), [&]<class U>() {
            U* p = o.data<U>();
            for (i64 i = 0; i < o.size(); ++i) p[i] = to_elem<U>(value_of(port, i));
          });
        }
      };
      if (x.size() == 0) {  // no rows or empty rows: the other sizes of an empty X may be anything
        ctx.allocate_output(0, x.element_type(), s);
        const double inv_eps = 1.0 / std::sqrt(eps);
        write_stats([&](std::size_t port, i64) { return port == 1 ? 0.0 : inv_eps; });
        return;
      }
      const std::vector<double> scale = expand(ctx.input(1), "Scale");
      const std::vector<double> bias = ctx.has_input(2) ? expand(ctx.input(2), "B") : std::vector<double>(static_cast<std::size_t>(inner), 0.0);
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using CT = compute_t<T>;
        arr<CT> sc(inner), bi(inner);
        for (i64 i = 0; i < inner; ++i) {
          sc[i] = static_cast<CT>(scale[static_cast<std::size_t>(i)]);
          bi[i] = static_cast<CT>(bias[static_cast<std::size_t>(i)]);
        }
        std::vector<CT> means(static_cast<std::size_t>(outer)), invs(static_cast<std::size_t>(outer));
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), s);
        with_compute<T>(x, y, [&](const CT* xi, CT* yo) {
          ctx.policy().parallel_for(outer, static_cast<double>(inner) * 5.0, [&](i64 b, i64 e) {
            for (i64 o = b; o < e; ++o) {
              carr_map<CT> xr(xi + o * inner, inner);
              arr_map<CT> yr(yo + o * inner, inner);
              const CT m = inner ? xr.sum() / static_cast<CT>(inner) : CT(0);
              const CT v = inner ? (xr - m).square().sum() / static_cast<CT>(inner) : CT(0);
              const CT inv = CT(1) / std::sqrt(v + static_cast<CT>(eps));
              yr = (xr - m) * inv * sc + bi;
              means[static_cast<std::size_t>(o)] = m;
              invs[static_cast<std::size_t>(o)] = inv;
            }
          });
        });
        write_stats([&](std::size_t port, i64 i) { return (port == 1 ? means : invs)[static_cast<std::size_t>(i)]; });
      });
    };
  }});
}

inline void register_lrn(registry& r) {
  r.add({.domain = "", .op = "LRN", .since_version = 1, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const double alpha = n.attr<double>("alpha", 1e-4);
    const double beta = n.attr<double>("beta", 0.75);
    const double bias = n.attr<double>("bias", 1.0);
    const i64 size = n.attr<i64>("size");
    if (size <= 0) n.fail("size must be positive, got " + std::to_string(size));
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto& s = x.sizes();
      if (s.size() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got rank " + std::to_string(s.size()));
      const i64 N = s[0], C = s[1], inner = prod(s, 2, s.size());
      const i64 lo = (size - 1) / 2, hi = size - 1 - lo;  // floor / ceil of (size-1)/2
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using CT = compute_t<T>;
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), s);
        if (y.size() == 0) return;  // (N x C may be anything over empty planes)
        const CT b0 = static_cast<CT>(bias), a0 = static_cast<CT>(alpha / static_cast<double>(size)), e0 = static_cast<CT>(-beta);
        // a window of up to 32 channels is summed for each channel; a wider one slides down the
        // channels (a running sum, in double), so the work is not outputs x size (size 10^6
        // over 10^6 channels of one pixel was 10^12 steps)
        const i64 width = std::min(size, C);
        with_compute<T>(x, y, [&](const CT* xi, CT* yo) {
          if (width <= 32) {
            ctx.policy().parallel_for(N * C, static_cast<double>(inner * width) * 2.0, [&](i64 b, i64 e) {
              arr<CT> acc(inner);
              for (i64 u = b; u < e; ++u) {
                const i64 nn = u / C, c = u % C;
                acc.setZero();
                for (i64 k = std::max<i64>(0, c - lo); k <= std::min(C - 1, c + hi); ++k)
                  acc += carr_map<CT>(xi + (nn * C + k) * inner, inner).square();
                arr_map<CT>(yo + u * inner, inner) = carr_map<CT>(xi + u * inner, inner) * (b0 + a0 * acc).pow(e0);
              }
            });
            return;
          }
          constexpr i64 chunk = 256;  // positions of a plane per work item
          const i64 chunks = (inner + chunk - 1) / chunk;
          ctx.policy().parallel_for(N * chunks, static_cast<double>(C * std::min(inner, chunk)) * 8.0, [&](i64 b, i64 e) {
            std::vector<double> acc;
            for (i64 u = b; u < e; ++u) {
              const i64 j0 = (u % chunks) * chunk, w = std::min(inner - j0, chunk);
              const CT* xb = xi + (u / chunks) * C * inner + j0;
              CT* yb = yo + (u / chunks) * C * inner + j0;
              acc.assign(static_cast<std::size_t>(w), 0.0);
              auto add = [&](i64 k, double sign) {
                const CT* r = xb + k * inner;
                for (i64 j = 0; j < w; ++j) acc[static_cast<std::size_t>(j)] += sign * (static_cast<double>(r[j]) * static_cast<double>(r[j]));
              };
              for (i64 k = 0; k <= std::min(C - 1, hi); ++k) add(k, 1.0);  // channel 0's window
              for (i64 c = 0; c < C; ++c) {
                if (c > 0 && c - 1 - lo >= 0) add(c - 1 - lo, -1.0);
                if (c > 0 && c + hi < C) add(c + hi, 1.0);
                for (i64 j = 0; j < w; ++j)  // (the sum may round below 0 when all left the window)
                  yb[c * inner + j] = xb[c * inner + j] * std::pow(b0 + a0 * static_cast<CT>(std::max(acc[static_cast<std::size_t>(j)], 0.0)), e0);
              }
            }
          });
        });
      });
    };
  }});
}

inline void register_mvn(registry& r) {
  r.add({.domain = "", .op = "MeanVarianceNormalization", .since_version = 1, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const std::vector<i64> axes_attr = n.attr<std::vector<i64>>("axes", std::vector<i64>{0, 2, 3});
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto& s = x.sizes();
      const i64 rank = static_cast<i64>(s.size());
      std::vector<char> reduced(s.size(), 0);
      for (i64 a : axes_attr) {
        // (normalize_axis lets a scalar have axis 0, as the ops that treat it as [1] do; here
        // an axis indexes the input's dimensions)
        reduced[static_cast<std::size_t>(shape_rules::dim_axis(a, rank, ctx.node()))] = 1;
      }
      const i64 total = x.size();
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using CT = compute_t<T>;
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), s);
        if (total == 0) return;  // (the kept sizes of an empty input may be anything: no sums)
        // kept-index of each element: strides over the kept dimensions only
        std::vector<i64> kept_sizes(s.size(), 1);
        i64 groups = 1;
        for (std::size_t i = 0; i < s.size(); ++i)
          if (!reduced[i]) {
            kept_sizes[i] = s[i];
            groups *= s[i];
          }
        const auto ks = broadcast_strides(kept_sizes, s);
        const i64 per = total / groups;
        with_compute<T>(x, y, [&](const CT* xi, CT* yo) {
          std::vector<double> sum(static_cast<std::size_t>(groups), 0.0), sq(static_cast<std::size_t>(groups), 0.0);
          strided_walker<1> w(s, {ks});
          w.seek(0);
          for (i64 i = 0; i < total; ++i, w.next()) sum[static_cast<std::size_t>(w.offset(0))] += xi[i];
          for (auto& v : sum) v /= static_cast<double>(per);
          w.seek(0);
          for (i64 i = 0; i < total; ++i, w.next()) {
            const double d = xi[i] - sum[static_cast<std::size_t>(w.offset(0))];
            sq[static_cast<std::size_t>(w.offset(0))] += d * d;
          }
          for (auto& v : sq) v = 1.0 / (std::sqrt(v / static_cast<double>(per)) + 1e-9);
          w.seek(0);
          for (i64 i = 0; i < total; ++i, w.next()) {
            const auto g = static_cast<std::size_t>(w.offset(0));
            yo[i] = static_cast<CT>((xi[i] - sum[g]) * sq[g]);
          }
        });
      });
    };
  }});
}

/// LpNormalization: x / ||x||_p along `axis` (p = 1 or 2); a zero norm gives 0.
inline void register_lp_normalization(registry& r) {
  r.add({.domain = "", .op = "LpNormalization", .since_version = 1, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const i64 axis_attr = n.attr<i64>("axis", -1), p = n.attr<i64>("p", 2);
    if (p != 1 && p != 2) n.fail("p must be 1 or 2, got " + std::to_string(p));
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto& s = x.sizes();
      if (s.empty()) ctx.fail("input must have rank >= 1");
      const std::size_t axis = static_cast<std::size_t>(normalize_axis(axis_attr, static_cast<i64>(s.size()), ctx.node()));
      const i64 outer = prod(s, 0, axis), inner = prod(s, axis + 1, s.size()), len = s[axis];
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using CT = compute_t<T>;
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), s);
        if (y.size() == 0) return;  // (outer x inner may be anything around an empty axis)
        with_compute<T>(x, y, [&](const CT* xi, CT* yo) {
          ctx.policy().parallel_for(outer * inner, 4.0 * static_cast<double>(len), [&](i64 b, i64 e) {
            for (i64 w = b; w < e; ++w) {
              const i64 base = (w / inner) * len * inner + w % inner;
              double norm = 0;
              for (i64 k = 0; k < len; ++k) {
                const double v = xi[base + k * inner];
                norm += p == 1 ? std::abs(v) : v * v;
              }
              if (p == 2) norm = std::sqrt(norm);
              for (i64 k = 0; k < len; ++k)
                yo[base + k * inner] = norm == 0 ? CT(0) : static_cast<CT>(xi[base + k * inner] / norm);
            }
          });
        });
      });
    };
  }});
}

// ---------------------------------------------------------------------------------------
// Recurrent layers: RNN, GRU, LSTM

using rnn_rules::act_kind;
using rnn_rules::activation;
using rnn_rules::cell;
using rnn_rules::parse_activations;
using rnn_rules::rnn_config;

/// Applies `a` in place to `n` contiguous values.
template <class C>
void apply_activation(const activation& a, C* p, i64 n) {
  arr_map<C> v(p, n);
  const C al = static_cast<C>(a.alpha), be = static_cast<C>(a.beta);
  switch (a.kind) {
    case act_kind::relu: v = v.max(C(0)); break;
    case act_kind::tanh: v = v.tanh(); break;
    case act_kind::sigmoid: v = (C(1) + (-v).exp()).inverse(); break;
    case act_kind::affine: v = v * al + be; break;
    case act_kind::leaky_relu: v = where_less(v, C(0), v * al, v); break;
    case act_kind::thresholded_relu: v = (v > al).select(v, C(0)); break;
    case act_kind::scaled_tanh: v = al * (v * be).tanh(); break;
    case act_kind::hard_sigmoid: v = (v * al + be).max(C(0)).min(C(1)); break;
    case act_kind::elu: v = where_less(v, C(0), al * (v.exp() - C(1)), v); break;
    case act_kind::softsign: v = v / (C(1) + v.abs()); break;
    case act_kind::softplus: v = (v > C(20)).select(v, (C(1) + v.exp()).log()); break;
  }
}

/// The layer's inputs in the compute type, in layout 0: the input tensors themselves when
/// they already are (f32 / f64 inputs in layout 0), else converted copies held here.
template <class C>
struct rnn_inputs {
  i64 S = 0, B = 0, I = 0, H = 0;
  const C* x = nullptr;     ///< [S, B, I]
  const C* w = nullptr;     ///< [D, G*H, I]
  const C* r = nullptr;     ///< [D, G*H, H]
  const C* bias = nullptr;  ///< [D, 2*G*H] (zeros when absent)
  const C* h0 = nullptr;    ///< [D, B, H]
  const C* c0 = nullptr;    ///< [D, B, H]
  const C* peep = nullptr;  ///< [D, 3*H], null when absent
  std::vector<i64> lens;    ///< [B]
  std::vector<C> held[7];   ///< converted or made values the pointers above may point into
};

/// The recurrent weights in the f32 GEMM engine's panel form, per direction: W_d^T [I, G*H]
/// and R_d^T in column segments ([0, G*H), or for a GRU [0, 2H) and [2H, 3H), which it
/// multiplies apart), packed once for constant weights or per run.
struct rnn_packed {
  std::vector<sgemm::packed_b> w, r;  ///< w[d], r[d * segments + s]
  int segments = 1;
  rnn_packed(const float* w_all, const float* r_all, i64 D, i64 GH, i64 I, i64 H, bool gru) : segments(gru ? 2 : 1) {
    for (i64 d = 0; d < D; ++d) {
      w.emplace_back(w_all + d * GH * I, I, true, I, GH);
      const float* rd = r_all + d * GH * H;
      if (gru) {
        r.emplace_back(rd, H, true, H, 2 * H);
        r.emplace_back(rd + 2 * H * H, H, true, H, H);
      } else {
        r.emplace_back(rd, H, true, H, GH);
      }
    }
  }
};

/// `parallel_for`'s cost of one sequence of a recurrent layer: S steps of a GH x H product
/// (~0.02 ns per multiply-add on one core) and GH activations.
inline double rnn_sequence_cost(i64 S, i64 GH, i64 H) {
  return static_cast<double>(S) * static_cast<double>(GH) * (0.02 * static_cast<double>(H) + 1.0);
}

/// The steps of the default LSTM cell (sigmoid gates, tanh, no peepholes, clip or coupled
/// gates) in f32, for one direction. `xw` [S * B, 4H] holds the input projections; step t
/// multiplies h R^T into its own rows (each read once, so no copy), then runs the cell on
/// them plus `bias` [4H] (Wb + Rb), updating the state `h`, `c` [B, H] in place. `y` (or
/// null) at (t, b) is y[t * y_step + b * H].
///
/// The sequences of a batch are independent: with `share` and a batch big enough, its rows
/// are cut into ranges, each range running every step on one thread without waiting for the
/// others (its rows of the state and of xw stay in that core's cache). With fewer sequences
/// than threads (one sequence on two), each step's hidden units are cut among the threads
/// instead (at multiples of the GEMM's panel width): a thread multiplies h by its units' rows
/// of R for all four gates and runs their cells, and the next step starts when every part of
/// this one has finished (h is read whole by the next step's products, so it alternates
/// between two buffers).
inline void lstm_steps(const eigen_cpu& cpu, bool share, const sgemm::packed_b& pr, float* xw, const float* bias, i64 S, i64 B,
                       i64 H, bool rev, const std::vector<i64>& lens, float* h, float* c, float* y, i64 y_step) {
  const i64 GH = 4 * H;
  auto rows = [&](i64 b0, i64 b1) {
    for (i64 step = 0; step < S; ++step) {
      const i64 t = rev ? S - 1 - step : step;
      float* g = xw + t * B * GH;
      sgemm::multiply(*pr.ki, h + b0 * H, 0, b1 - b0, pr.data.data(), pr.panel_stride(), GH, H, g + b0 * GH, GH, true, 0, GH, H);
      for (i64 b = b0; b < b1; ++b) {
        float* out = y ? y + t * y_step + b * H : nullptr;
        if (t >= lens[static_cast<std::size_t>(b)]) {  // past this sequence's end: the state kept, zeros out
          if (out) std::fill_n(out, H, 0.0f);
          continue;
        }
        lstm_cell::row(g + b * GH, bias, c + b * H, h + b * H, H);
        if (out) std::copy_n(h + b * H, H, out);
      }
    }
  };
  if (!share) return rows(0, B);
  const i64 nr = pr.ki->nr, unit_panels = H % nr == 0 ? H / nr : 0;
  const i64 parts = std::min<i64>(cpu.threads(), unit_panels);
  if (B >= cpu.threads() || parts < 2) {
    cpu.parallel_for(B, rnn_sequence_cost(S, GH, H), rows);
    return;
  }
  // units cut per step: [u(p), u(p + 1)) for part p, whole panels of R^T's columns
  auto unit = [&](i64 p) { return p * unit_panels / parts * nr; };
  std::vector<float> other(static_cast<std::size_t>(B * H));
  float* const hbuf[2] = {h, other.data()};  // step s reads hbuf[s % 2], writes hbuf[(s + 1) % 2]
  auto part = [&](i64 step, i64 p) {
    const i64 t = rev ? S - 1 - step : step;
    float* g = xw + t * B * GH;
    const float* h_in = hbuf[step % 2];
    float* h_out = hbuf[(step + 1) % 2];
    const i64 u0 = unit(p), u1 = unit(p + 1);
    for (i64 q = 0; q < 4; ++q)  // this part's columns of each gate
      sgemm::multiply(*pr.ki, h_in, 0, B, pr.data.data(), pr.panel_stride(), GH, H, g, GH, true, q * H + u0, q * H + u1, H);
    for (i64 b = 0; b < B; ++b) {
      float* hb = h_out + b * H + u0;
      if (t >= lens[static_cast<std::size_t>(b)]) std::copy(h_in + b * H + u0, h_in + b * H + u1, hb);  // the state kept
      else lstm_cell::row(g + b * GH + u0, bias + u0, c + b * H + u0, hb, H, u1 - u0);
      if (y) {
        float* out = y + t * y_step + b * H + u0;
        if (t >= lens[static_cast<std::size_t>(b)]) std::fill(out, out + (u1 - u0), 0.0f);
        else std::copy(hb, hb + (u1 - u0), out);
      }
    }
  };
  // One parallel_for for all the steps (one per step cost about 1 us of a 2 us part). Each of
  // its ranges is a thread's home part, which the thread owns for every step once it claims
  // it (its columns of R stay in that core's L2, its units of c in its L1). A part of step s
  // runs once every part has finished step s - 1 (h is then whole): each part's count of
  // finished steps is written by its owner alone, on a line of its own, so a step costs one
  // line's transfer per other thread. A thread waiting on a part nobody owns (its range not
  // started: a busy pool) claims it and runs it too; that can only happen at step 1 (a part
  // past step 0 has an owner), so the part's step 0 is run first and nothing waits forever:
  // with no worker at all the caller runs every part.
  struct alignas(64) part_state {
    std::atomic<i64> finished{0};  // steps of this part done
    std::atomic<bool> owned{false};
  };
  std::unique_ptr<part_state[]> state(new part_state[static_cast<std::size_t>(parts)]);
  std::atomic<bool> failed{false};
  std::exception_ptr failure;  // written by the one thread that set `failed`
  auto run_part = [&](i64 step, i64 p) {
    if (!failed.load(std::memory_order_relaxed)) {
      try {
        part(step, p);
      } catch (...) {
        if (!failed.exchange(true)) failure = std::current_exception();
      }
    }
    state[p].finished.store(step + 1, std::memory_order_release);
  };
  cpu.parallel_for(parts, 1e9, [&](i64 home, i64) {
    std::vector<i64> mine;  // the parts this thread owns (allocated before it owns any)
    mine.reserve(static_cast<std::size_t>(parts));
    if (state[home].owned.exchange(true, std::memory_order_acq_rel)) return;  // taken by a thread that waited on it
    mine.push_back(home);
    for (i64 step = 0; step < S; ++step) {
      for (std::size_t m = 0; m < mine.size(); ++m) {  // (grows at step 1 only)
        for (i64 q = 0; q < parts; ++q) {
          for (unsigned i = 1; state[q].finished.load(std::memory_order_acquire) < step; ++i) {
            if (!state[q].owned.load(std::memory_order_acquire) && !state[q].owned.exchange(true, std::memory_order_acq_rel)) {
              mine.push_back(q);  // no owner yet: at step 1, its step 0 not run
              run_part(0, q);
              break;
            }
            if (i < 4096) gpass::exec::detail::pause_cpu();
            else std::this_thread::yield();  // the part waited on is descheduled: let it run
          }
        }
        run_part(step, mine[m]);
      }
    }
  });
  if (failed.load()) std::rethrow_exception(failure);
  if (S % 2 == 1) std::copy_n(hbuf[1], B * H, h);  // the last step wrote hbuf[S % 2]
}

/// Runs every direction; fills y [S, D, B, H] (when not null), yh and yc [D, B, H]. f32
/// layers multiply with the GEMM engine on `packed` (the input projections of every step as
/// one product, then one small product per step), others with Eigen.
template <class C>
void rnn_core(const eigen_cpu& cpu, const rnn_config& cfg, const rnn_inputs<C>& in, const rnn_packed* packed, C* y,
              C* yh, C* yc) {
  const i64 S = in.S, B = in.B, I = in.I, H = in.H, G = cfg.gates, D = cfg.dirs, GH = G * H;
  using cmap = Eigen::Map<const rmat<C>>;
  constexpr bool engine = std::is_same_v<C, float>;
  cpu.parallel_for(D, 1e9, [&](i64 d0, i64 d1) {
    for (i64 d = d0; d < d1; ++d) {
      const bool rev = D == 2 ? d == 1 : cfg.reverse;
      const activation* act = cfg.acts.data() + d * (cfg.kind == cell::lstm ? 3 : cfg.kind == cell::gru ? 2 : 1);
      cmap W(in.w + d * GH * I, GH, I), R(in.r + d * GH * H, GH, H);
      const C* wb = in.bias + d * 2 * GH;
      const C* rb = wb + GH;
      arr<C> bsum(GH);
      for (i64 j = 0; j < GH; ++j) {
        const bool keep_rb_apart = cfg.kind == cell::gru && cfg.linear_before_reset && j >= 2 * H;
        bsum[j] = wb[j] + (keep_rb_apart ? C(0) : rb[j]);
      }
      const C* P = in.peep ? in.peep + d * 3 * H : nullptr;
      const C clip = static_cast<C>(cfg.clip);
      const bool standard_lstm = cfg.kind == cell::lstm && !P && cfg.clip <= 0 && !cfg.input_forget &&
                                 act[0].kind == act_kind::sigmoid && act[1].kind == act_kind::tanh && act[2].kind == act_kind::tanh;
      // input projections of every step at once, biases added (by lstm_steps' cell for the
      // default LSTM in f32): [S*B, G*H]
      rmat<C> xw(S * B, GH);
      if constexpr (engine) {  // rows shared out over the threads (one direction: the other waits)
        const sgemm::packed_b& pw = packed->w[static_cast<std::size_t>(d)];
        cpu.parallel_for(S * B, 0.02 * static_cast<double>(GH) * static_cast<double>(std::max<i64>(I, 1)), [&](i64 r0, i64 r1) {
          if (!standard_lstm)
            for (i64 row = r0; row < r1; ++row) xw.row(row) = bsum.transpose().matrix();
          sgemm::multiply(*pw.ki, in.x + r0 * I, 0, r1 - r0, pw.data.data(), pw.panel_stride(), GH, I, xw.data() + r0 * GH, GH,
                          !standard_lstm, 0, -1, std::max<i64>(I, 1));
        });
      } else {
        for (i64 row = 0; row < S * B; ++row) xw.row(row) = bsum.transpose().matrix();
        if (S * B > 0) xw.noalias() += cmap(in.x, S * B, I) * W.transpose();
      }
      // g[:, c0 + ...] += h * (R's rows of `segment`: [0, n), or a GRU's [2H, 3H))^T, h [g.rows(), H]
      // with row stride ldh
      auto recur = [&](rmat<C>& g, const C* h, i64 ldh, int segment, i64 c0, i64 n) {
        if constexpr (engine) {
          const sgemm::packed_b& pr = packed->r[static_cast<std::size_t>(d * packed->segments + segment)];
          sgemm::multiply(*pr.ki, h, 0, g.rows(), pr.data.data(), pr.panel_stride(), n, H, g.data() + c0, g.cols(), true, 0, -1,
                          std::max<i64>(ldh, 1));
        } else {
          g.middleCols(c0, n).noalias() += Eigen::Map<const rmat<C>, 0, Eigen::OuterStride<>>(h, g.rows(), H, Eigen::OuterStride<>(ldh)) *
                                           R.middleRows(segment == 0 ? 0 : 2 * H, n).transpose();
        }
      };
      if constexpr (engine) {
        if (standard_lstm) {
          std::copy_n(in.h0 + d * B * H, B * H, yh + d * B * H);
          std::copy_n(in.c0 + d * B * H, B * H, yc + d * B * H);
          lstm_steps(cpu, D == 1, packed->r[static_cast<std::size_t>(d)], xw.data(), bsum.data(), S, B, H, rev, in.lens,
                     yh + d * B * H, yc + d * B * H, y ? y + d * B * H : nullptr, D * B * H);
          continue;
        }
      }
      // the sequences [b0, b1) of the batch, every step (sequences are independent: see lstm_steps)
      auto rows = [&](i64 b0, i64 b1) {
        const i64 Bn = b1 - b0;
        rmat<C> h = cmap(in.h0 + (d * B + b0) * H, Bn, H);
        rmat<C> c = cmap(in.c0 + (d * B + b0) * H, Bn, H);
        rmat<C> g(Bn, GH), hn(Bn, H), cn(Bn, H), tmp(Bn, H);
        auto clipped = [&](C* p, i64 n) {
          if (cfg.clip > 0) arr_map<C>(p, n) = arr_map<C>(p, n).max(-clip).min(clip);
        };
        for (i64 step = 0; step < S; ++step) {
          const i64 t = rev ? S - 1 - step : step;
          g = xw.middleRows(t * B + b0, Bn);
          if (cfg.kind == cell::gru) {
            recur(g, h.data(), H, 0, 0, 2 * H);
            for (i64 b = 0; b < Bn; ++b) {
              C* gr = g.row(b).data();
              clipped(gr, 2 * H);
              apply_activation(act[0], gr, 2 * H);  // z and r
            }
            if (cfg.linear_before_reset) {
              tmp.setZero();
              recur(tmp, h.data(), H, 1, 0, H);  // tmp has H columns: its own row stride
              for (i64 b = 0; b < Bn; ++b) {
                arr_map<C> hr(g.row(b).data() + 2 * H, H);
                hr += arr_map<C>(g.row(b).data() + H, H) * (arr_map<C>(tmp.row(b).data(), H) + carr_map<C>(rb + 2 * H, H));
              }
            } else {
              for (i64 b = 0; b < Bn; ++b)
                arr_map<C>(tmp.row(b).data(), H) = arr_map<C>(g.row(b).data() + H, H) * arr_map<C>(h.row(b).data(), H);
              recur(g, tmp.data(), H, 1, 2 * H, H);
            }
            for (i64 b = 0; b < Bn; ++b) {
              C* gr = g.row(b).data();
              clipped(gr + 2 * H, H);
              apply_activation(act[1], gr + 2 * H, H);
              arr_map<C> z(gr, H), hh(gr + 2 * H, H);
              arr_map<C>(hn.row(b).data(), H) = (C(1) - z) * hh + z * arr_map<C>(h.row(b).data(), H);
            }
          } else if (cfg.kind == cell::lstm) {
            recur(g, h.data(), H, 0, 0, GH);
            for (i64 b = 0; b < Bn; ++b) {
              C* gr = g.row(b).data();
              arr_map<C> gi(gr, H), go(gr + H, H), gf(gr + 2 * H, H), gc(gr + 3 * H, H);
              arr_map<C> cp(c.row(b).data(), H), cnew(cn.row(b).data(), H);
              if (P) {
                gi += carr_map<C>(P, H) * cp;
                gf += carr_map<C>(P + 2 * H, H) * cp;
              }
              clipped(gr, H);
              clipped(gr + 2 * H, H);
              clipped(gr + 3 * H, H);
              apply_activation(act[0], gr, H);
              if (cfg.input_forget) gf = C(1) - gi;
              else apply_activation(act[0], gr + 2 * H, H);
              apply_activation(act[1], gr + 3 * H, H);
              cnew = gf * cp + gi * gc;
              if (P) go += carr_map<C>(P + H, H) * cnew;
              clipped(gr + H, H);
              apply_activation(act[0], gr + H, H);
              arr_map<C> hv(hn.row(b).data(), H);
              hv = cnew;
              apply_activation(act[2], hv.data(), H);
              hv *= go;
            }
          } else {
            recur(g, h.data(), H, 0, 0, GH);
            for (i64 b = 0; b < Bn; ++b) {
              C* gr = g.row(b).data();
              clipped(gr, H);
              apply_activation(act[0], gr, H);
              arr_map<C>(hn.row(b).data(), H) = arr_map<C>(gr, H);
            }
          }
          for (i64 b = 0; b < Bn; ++b) {
            C* out = y ? y + ((t * D + d) * B + b0 + b) * H : nullptr;
            if (t >= in.lens[static_cast<std::size_t>(b0 + b)]) {  // past this sequence's end: zeros
              if (out) std::fill_n(out, H, C(0));
              continue;
            }
            h.row(b) = hn.row(b);
            if (cfg.kind == cell::lstm) c.row(b) = cn.row(b);
            if (out) std::copy_n(hn.row(b).data(), H, out);
          }
        }
        std::copy_n(h.data(), Bn * H, yh + (d * B + b0) * H);
        std::copy_n(c.data(), Bn * H, yc + (d * B + b0) * H);
      };
      if (D == 1)
        cpu.parallel_for(B, rnn_sequence_cost(S, GH, H), rows);
      else  // the directions already run on the threads
        rows(0, B);
    }
  });
}

inline void register_rnn(registry& r, const char* op, cell kind) {
  r.add({.domain = "", .op = op, .since_version = 1, .dtypes = nn_types::dtypes(), .make = [kind](const kernel_node& n) -> fn {
    const rnn_config cfg = rnn_config::read(n, kind);
    // constant f32 weights of the expected ranks: packed once, here (used when a run's W and R
    // are these very tensors)
    struct constant_weights {
      gpass::tensor w, r;
      std::shared_ptr<const rnn_packed> packed;
    };
    std::shared_ptr<const constant_weights> cw;
    {
      const gpass::tensor* w = n.constant_input(1);
      const gpass::tensor* rt = n.constant_input(2);
      const i64 G = cfg.gates;
      if (w && rt && w->element_type() == dtype::f32 && rt->element_type() == dtype::f32 && w->rank() == 3 && rt->rank() == 3 &&
          w->sizes()[0] == cfg.dirs && rt->sizes()[0] == cfg.dirs && w->sizes()[1] % G == 0 && w->size() > 0 && rt->size() > 0) {
        const i64 H = w->sizes()[1] / G;
        if ((cfg.hidden == 0 || cfg.hidden == H) && rt->sizes()[1] == G * H && rt->sizes()[2] == H)
          cw = std::make_shared<const constant_weights>(constant_weights{
              *w, *rt,
              std::make_shared<const rnn_packed>(w->data<float>(), rt->data<float>(), cfg.dirs, G * H, w->sizes()[2], H,
                                                 kind == cell::gru)});
      }
    }
    return [cfg, cw](context& ctx) {
      const gpass::tensor& X = ctx.input(0);
      const gpass::tensor& Wt = ctx.input(1);
      const gpass::tensor& Rt = ctx.input(2);
      const i64 D = cfg.dirs, G = cfg.gates;
      if (X.rank() != 3) ctx.fail("X must have rank 3, got shape " + X.shape().to_string());
      if (Wt.rank() != 3 || Rt.rank() != 3) ctx.fail("W and R must have rank 3");
      check_float(Wt, ctx.node(), "W");
      check_float(Rt, ctx.node(), "R");
      const i64 S = cfg.layout ? X.sizes()[1] : X.sizes()[0];
      const i64 B = cfg.layout ? X.sizes()[0] : X.sizes()[1];
      const i64 I = X.sizes()[2];
      const i64 H = cfg.hidden ? cfg.hidden : Rt.sizes()[2];
      if (H > std::numeric_limits<i64>::max() / (2 * G))  // (G * H and 2 * G * H must not wrap around)
        ctx.fail("hidden_size " + std::to_string(H) + " is too large");
      if (Wt.sizes() != std::vector<i64>{D, G * H, I})
        ctx.fail("W has shape " + Wt.shape().to_string() + ", expected " + shape::of({D, G * H, I}).to_string());
      if (Rt.sizes() != std::vector<i64>{D, G * H, H})
        ctx.fail("R has shape " + Rt.shape().to_string() + ", expected " + shape::of({D, G * H, H}).to_string());
      const std::vector<i64> state_sizes = cfg.layout ? std::vector<i64>{B, D, H} : std::vector<i64>{D, B, H};
      dispatch<nn_types>(X.element_type(), ctx.node(), [&]<class T>() {
        using C = compute_t<T>;
        const dtype dt = X.element_type();
        const bool want_y = ctx.num_outputs() > 0 && ctx.output_wanted(0);
        // an empty X (input size 0) may have any S and B: the steps' input projections
        // [S*B, G*H] and the states [D, B, H] are scratch, checked before anything is sized by
        // S or B, and the time loop's S steps count as a loop's iterations
        const double SB = static_cast<double>(S) * static_cast<double>(B);
        check_scratch(ctx, SB * static_cast<double>(G * H) * sizeof(C), "the input projections of " + std::to_string(S) + " steps");
        check_scratch(ctx, static_cast<double>(D) * static_cast<double>(B) * static_cast<double>(H) * sizeof(C), "the hidden states");
        if (want_y) check_scratch(ctx, SB * static_cast<double>(D * H) * sizeof(C), "Y");
        if (B == 0 || H == 0) {  // every output is empty, whatever S (no steps to run)
          if (want_y) ctx.allocate_output(0, dt, cfg.layout ? std::vector<i64>{B, S, D, H} : std::vector<i64>{S, D, B, H});
          for (std::size_t port = 1; port < (cfg.kind == cell::lstm ? 3u : 2u); ++port)
            if (ctx.num_outputs() > port && ctx.output_wanted(port)) ctx.allocate_output(port, dt, state_sizes);
          return;
        }
        if (S > 0) ctx.check_iteration(S - 1);
        rnn_inputs<C> in;
        in.S = S, in.B = B, in.I = I, in.H = H;
        // a tensor's values in the compute type: the tensor itself when it has that type
        auto view = [&](const gpass::tensor& t, std::vector<C>& held) -> const C* {
          if (t.element_type() == dtype_of<C>::value) return t.data<C>();
          held = to_compute<C>(t, ctx.node());
          return held.data();
        };
        in.x = view(X, in.held[0]);
        if (cfg.layout) {  // [B, S, I] -> [S, B, I]
          std::vector<C> t(static_cast<std::size_t>(S * B * I));
          for (i64 s = 0; s < S; ++s)
            for (i64 b = 0; b < B; ++b) std::copy_n(in.x + (b * S + s) * I, I, t.data() + (s * B + b) * I);
          in.held[0].swap(t);
          in.x = in.held[0].data();
        }
        in.w = view(Wt, in.held[1]);
        in.r = view(Rt, in.held[2]);
        if (ctx.has_input(3)) {
          const auto& bt = ctx.input(3);
          if (bt.sizes() != std::vector<i64>{D, 2 * G * H})
            ctx.fail("B has shape " + bt.shape().to_string() + ", expected " + shape::of({D, 2 * G * H}).to_string());
          in.bias = view(bt, in.held[3]);
        } else {
          in.held[3].assign(static_cast<std::size_t>(D * 2 * G * H), C(0));
          in.bias = in.held[3].data();
        }
        in.lens.assign(static_cast<std::size_t>(B), S);
        if (ctx.has_input(4)) {
          const auto lens = int_values(ctx.input(4), ctx.node(), "sequence_lens");
          if (static_cast<i64>(lens.size()) != B) ctx.fail("sequence_lens must have batch_size elements");
          for (i64 v : lens)
            if (v < 0 || v > S) ctx.fail("sequence_lens value " + std::to_string(v) + " is out of range [0, " + std::to_string(S) + "]");
          in.lens = lens;
        }
        auto state = [&](std::size_t port, const char* what, std::vector<C>& held) -> const C* {
          if (!ctx.has_input(port)) {
            held.assign(static_cast<std::size_t>(D * B * H), C(0));
            return held.data();
          }
          const auto& st = ctx.input(port);
          if (st.sizes() != state_sizes)
            ctx.fail(std::string(what) + " has shape " + st.shape().to_string() + ", expected " + shape::of(state_sizes).to_string());
          const C* v = view(st, held);
          if (cfg.layout) {  // [B, D, H] -> [D, B, H]
            std::vector<C> t(static_cast<std::size_t>(D * B * H));
            for (i64 b = 0; b < B; ++b)
              for (i64 d = 0; d < D; ++d) std::copy_n(v + (b * D + d) * H, H, t.data() + (d * B + b) * H);
            held.swap(t);
            v = held.data();
          }
          return v;
        };
        in.h0 = state(5, "initial_h", in.held[4]);
        if (cfg.kind == cell::lstm) {
          in.c0 = state(6, "initial_c", in.held[5]);
        } else {
          in.held[5].assign(static_cast<std::size_t>(D * B * H), C(0));
          in.c0 = in.held[5].data();
        }
        if (cfg.kind == cell::lstm && ctx.has_input(7)) {
          const auto& pt = ctx.input(7);
          if (pt.sizes() != std::vector<i64>{D, 3 * H})
            ctx.fail("P has shape " + pt.shape().to_string() + ", expected " + shape::of({D, 3 * H}).to_string());
          in.peep = view(pt, in.held[6]);
        }
        // f32: the weights packed for the engine (once, when they are the constant ones)
        std::shared_ptr<const rnn_packed> local;
        const rnn_packed* packed = nullptr;
        if constexpr (std::is_same_v<C, float>) {
          if (cw && Wt.raw() == cw->w.raw() && Rt.raw() == cw->r.raw() && Wt.sizes() == cw->w.sizes() &&
              Rt.sizes() == cw->r.sizes() && Wt.element_type() == dtype::f32 && Rt.element_type() == dtype::f32)
            packed = cw->packed.get();
          else
            packed = (local = std::make_shared<const rnn_packed>(in.w, in.r, D, G * H, I, H, cfg.kind == cell::gru)).get();
        }
        // y straight into the output when it has the compute type and layout 0
        std::vector<C> y, yh(static_cast<std::size_t>(D * B * H)), yc(static_cast<std::size_t>(D * B * H));
        const bool direct = want_y && std::is_same_v<T, C> && !cfg.layout;
        C* yp = nullptr;
        if (direct) {
          yp = reinterpret_cast<C*>(ctx.allocate_output(0, dt, {S, D, B, H}).template data<T>());
        } else if (want_y) {
          y.resize(static_cast<std::size_t>(S * D * B * H));
          yp = y.data();
        }
        rnn_core(ctx.policy(), cfg, in, packed, yp, yh.data(), yc.data());
        if (want_y && !direct) {
          if (cfg.layout) {  // [S, D, B, H] -> [B, S, D, H]
            gpass::tensor& o = ctx.allocate_output(0, dt, {B, S, D, H});
            T* p = o.data<T>();
            for (i64 s = 0; s < S; ++s)
              for (i64 d = 0; d < D; ++d)
                for (i64 b = 0; b < B; ++b)
                  for (i64 k = 0; k < H; ++k) p[((b * S + s) * D + d) * H + k] = to_elem<T>(y[static_cast<std::size_t>(((s * D + d) * B + b) * H + k)]);
          } else {
            from_compute<T>(y.data(), ctx.allocate_output(0, dt, {S, D, B, H}));
          }
        }
        auto put_state = [&](std::size_t port, const std::vector<C>& v) {
          if (ctx.num_outputs() <= port || !ctx.output_wanted(port)) return;
          gpass::tensor& o = ctx.allocate_output(port, dt, state_sizes);
          T* p = o.data<T>();
          for (i64 d = 0; d < D; ++d)
            for (i64 b = 0; b < B; ++b)
              for (i64 k = 0; k < H; ++k)
                p[(cfg.layout ? (b * D + d) : (d * B + b)) * H + k] = to_elem<T>(v[static_cast<std::size_t>((d * B + b) * H + k)]);
        };
        put_state(1, yh);
        if (cfg.kind == cell::lstm) put_state(2, yc);
      });
    };
  }});
}


// ---------------------------------------------------------------------------------------
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss

using nn_rules::parse_reduction;
using nn_rules::reduction;

/// The loss of log-probabilities `lp` ([N, C, D] flattened) against `target` ([N, D]) into
/// output 0 of element type `T`.
template <class T, class C>
void nll_output(context& ctx, const C* lp, const gpass::tensor& x, std::size_t target_port, std::size_t weight_port,
                reduction red, bool has_ignore, i64 ignore) {
  const auto& s = x.sizes();
  if (s.size() < 2) ctx.fail("input must have rank >= 2 (N x C x ...), got rank " + std::to_string(s.size()));
  const gpass::tensor& tt = ctx.input(target_port);
  std::vector<i64> want_t{s[0]};
  want_t.insert(want_t.end(), s.begin() + 2, s.end());
  if (tt.sizes() != want_t)
    ctx.fail("target has shape " + tt.shape().to_string() + ", expected " + shape::of(want_t).to_string());
  const auto target = int_values(tt, ctx.node(), "target");
  const i64 N = s[0], Cn = s[1], D = prod(s, 2, s.size());
  std::vector<double> weight;
  if (ctx.has_input(weight_port)) {
    const gpass::tensor& wt = ctx.input(weight_port);
    check_float(wt, ctx.node(), "weight");
    if (wt.sizes() != std::vector<i64>{Cn}) ctx.fail("weight must have shape [C] = [" + std::to_string(Cn) + "]");
    weight = to_compute<double>(wt, ctx.node());
  }
  std::vector<double> loss(static_cast<std::size_t>(N * D));
  double wsum = 0, lsum = 0;
  for (i64 b = 0; b < N; ++b)
    for (i64 d = 0; d < D; ++d) {
      const i64 t = target[static_cast<std::size_t>(b * D + d)];
      double l = 0, w = 0;
      if (!(has_ignore && t == ignore)) {
        if (t < 0 || t >= Cn) ctx.fail("target value " + std::to_string(t) + " is out of range [0, " + std::to_string(Cn) + ")");
        w = weight.empty() ? 1.0 : weight[static_cast<std::size_t>(t)];
        l = -static_cast<double>(lp[(b * Cn + t) * D + d]) * w;
      }
      loss[static_cast<std::size_t>(b * D + d)] = l;
      wsum += w;
      lsum += l;
    }
  if (red == reduction::none) {
    gpass::tensor& o = ctx.allocate_output(0, x.element_type(), want_t);
    from_compute<T>(loss.data(), o);
  } else {
    gpass::tensor& o = ctx.allocate_output(0, x.element_type(), {});
    o.data<T>()[0] = to_elem<T>(red == reduction::sum ? lsum : lsum / wsum);
  }
}

inline void register_losses(registry& r) {
  r.add({.domain = "", .op = "NegativeLogLikelihoodLoss", .since_version = 1, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const reduction red = parse_reduction(n);
    const bool has_ignore = n.has_attr("ignore_index");
    const i64 ignore = n.attr<i64>("ignore_index", 0);
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using C = compute_t<T>;
        if constexpr (std::is_same_v<T, C>) {
          nll_output<T>(ctx, x.data<T>(), x, 1, 2, red, has_ignore, ignore);
        } else {
          const auto xs = to_compute<C>(x, ctx.node());
          nll_output<T>(ctx, xs.data(), x, 1, 2, red, has_ignore, ignore);
        }
      });
    };
  }});
  r.add({.domain = "", .op = "SoftmaxCrossEntropyLoss", .since_version = 1, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const reduction red = parse_reduction(n);
    const bool has_ignore = n.has_attr("ignore_index");
    const i64 ignore = n.attr<i64>("ignore_index", 0);
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const auto& s = x.sizes();
      if (s.size() < 2) ctx.fail("scores must have rank >= 2 (N x C x ...), got rank " + std::to_string(s.size()));
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using C = compute_t<T>;
        const i64 N = s[0], Cn = s[1], D = prod(s, 2, s.size());
        std::vector<C> lp(static_cast<std::size_t>(x.size()));
        if constexpr (std::is_same_v<T, C>) {
          smax_run(ctx.policy(), x.data<T>(), lp.data(), N, Cn, D, smax::log_softmax);
        } else {
          const auto xs = to_compute<C>(x, ctx.node());
          smax_run(ctx.policy(), xs.data(), lp.data(), N, Cn, D, smax::log_softmax);
        }
        nll_output<T>(ctx, lp.data(), x, 1, 2, red, has_ignore, ignore);
        if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) from_compute<T>(lp.data(), ctx.allocate_output(1, x.element_type(), s));
      });
    };
  }});
}


// ---------------------------------------------------------------------------------------
// GridSample, RoiAlign

using nn_rules::gs_mode;
using nn_rules::gs_pad;

/// Reflects `x` into [lo, hi] by folding at the borders (closed form, no loop per period); a
/// value that is not finite has no reflection: NaN.
inline double gs_reflect(double x, double lo, double hi) {
  if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
  const double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo || x > hi) {
    const double dx = x < lo ? lo - x : x - hi;
    const double k = std::floor(dx / rng);
    const double r = std::clamp(dx - k * rng, 0.0, rng);
    const bool even = std::fmod(k, 2.0) == 0;
    return x < lo ? (even ? lo + r : hi - r) : (even ? hi - r : lo + r);
  }
  return x;
}

inline void cubic_coeffs(double f, double* c) {
  constexpr double A = -0.75;
  const double x = std::abs(f);
  c[0] = ((A * (x + 1) - 5 * A) * (x + 1) + 8 * A) * (x + 1) - 4 * A;
  c[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
  c[2] = ((A + 2) * (1 - x) - (A + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((A * (2 - x) - 5 * A) * (2 - x) + 8 * A) * (2 - x) - 4 * A;
}

/// One query row of ONNX Runtime's attention: p_j = softmax_j(score(j)) over the `T` keys
/// (in double, max-subtracted), then `out(d, sum_j p_j value(j, d))` for each of the `dv`
/// values; `p` is scratch.
template <class Score, class Value, class Out>
inline void attend_row(i64 T, i64 dv, std::vector<double>& p, Score&& score, Value&& value, Out&& out) {
  p.resize(static_cast<std::size_t>(T));
  double mx = -std::numeric_limits<double>::infinity();
  for (i64 j = 0; j < T; ++j) mx = std::max(mx, p[static_cast<std::size_t>(j)] = score(j));
  double sum = 0;
  for (auto& v : p) sum += (v = std::exp(v - mx));
  for (i64 d = 0; d < dv; ++d) {
    double o = 0;
    for (i64 j = 0; j < T; ++j) o += p[static_cast<std::size_t>(j)] * value(j, d);
    out(d, o / sum);
  }
}

/// ONNX Runtime's attention_bias input: [B or 1, num_heads or 1, S, T] (checked; may be
/// absent), and the offset of its element for batch b, head h, query i, key j.
struct ort_attention_bias {
  const gpass::tensor* t = nullptr;
  i64 S = 0, T = 0;
  ort_attention_bias(const gpass::tensor* bias, i64 B, i64 N, i64 s, i64 total, const context& ctx) : t(bias), S(s), T(total) {
    if (t) nn_rules::check_ort_attention_bias(t->sizes(), B, N, S, T, ctx.node());
  }
  i64 offset(i64 b, i64 h, i64 i, i64 j) const {
    const i64 ab = t->sizes()[0] == 1 ? 0 : b, ah = t->sizes()[1] == 1 ? 0 : h;
    return ((ab * t->sizes()[1] + ah) * S + i) * T + j;
  }
};

/// ONNX Runtime's com.microsoft activations and SkipLayerNormalization (what its
/// transformer optimizer writes): Gelu (erf form), BiasGelu (Gelu(A + B)), FastGelu (tanh
/// form, optional bias), QuickGelu (x * sigmoid(alpha x), alpha 1.702), and
/// SkipLayerNormalization: s = input + skip (+ bias), normalized over the last axis, times
/// gamma (+ beta); outputs the result, the mean, the inverse standard deviation and s (input
/// and skip broadcast like NumPy, a superset of ONNX Runtime's shapes);
/// SkipSimplifiedLayerNormalization (its RMS form) and EmbedLayerNormalization.
inline void register_ort_contrib(registry& r) {
  // y = f(x + bias), bias broadcast over the last axis (input 1 when present)
  auto unary = [&](const char* op, auto f, bool bias_input) {
    r.add({.domain = "com.microsoft", .op = op, .since_version = 1, .dtypes = nn_types::dtypes(),
           .make = [f, bias_input](const kernel_node& n) -> fn {
             const double alpha = n.attr<double>("alpha", 1.702);
             return [f, bias_input, alpha](context& ctx) {
               const gpass::tensor& x = ctx.input(0);
               const gpass::tensor* b = bias_input && ctx.has_input(1) ? &ctx.input(1) : nullptr;
               const i64 last = x.rank() ? x.sizes().back() : 1;
               if (b && (b->size() != last || b->element_type() != x.element_type()))
                 ctx.fail("the bias has shape " + b->shape().to_string() + ", the input's last axis " + std::to_string(last));
               dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
                 gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
                 const T* xp = x.data<T>();
                 const T* bp = b ? b->data<T>() : nullptr;
                 T* yp = y.data<T>();
                 ctx.policy().parallel_for(x.size(), 20.0, [&](i64 lo, i64 hi) {
                   for (i64 i = lo; i < hi; ++i) {
                     float v = static_cast<float>(xp[i]);
                     if (bp) v += static_cast<float>(bp[i % last]);
                     yp[i] = static_cast<T>(f(v, static_cast<float>(alpha)));
                   }
                 });
               });
             };
           }});
  };
  auto gelu_erf = [](float v, float) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); };
  unary("Gelu", gelu_erf, false);
  unary("BiasGelu", gelu_erf, true);
  unary("FastGelu", [](float v, float) { return 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v))); }, true);
  unary("QuickGelu", [](float v, float a) { return v / (1.0f + std::exp(-a * v)); }, false);

  // SkipLayerNormalization and its RMS form SkipSimplifiedLayerNormalization (no centering,
  // no beta: inputs input, skip, gamma, bias)
  auto skip_norm = [](bool simplified) {
    return [simplified](const kernel_node& n) -> fn {
      const double eps = n.attr<double>("epsilon", 1e-12);
      return [eps, simplified](context& ctx) {
        // input and skip of other sizes: both broadcast to the sum's sizes first (NumPy); the
        // common cases read them in place: equal sizes, or a skip whose sizes are the sum's
        // last ones (one row, or a position table [seq, H] under [batch, seq, H]), read with a
        // period of its rows
        const std::vector<i64> sizes = broadcast_sizes(ctx.input(0).sizes(), ctx.input(1).sizes(), ctx.node());
        gpass::tensor xb, sb;
        auto expanded = [&](const gpass::tensor& t, gpass::tensor& keep) -> const gpass::tensor& {
          if (t.sizes() == sizes) return t;
          // (sized by the broadcast, as the output is, but made before it: checked)
          double count = 1;
          for (i64 v : sizes) count *= static_cast<double>(v);
          check_scratch(ctx, count * static_cast<double>(size_of(t.element_type())), "the broadcast input or skip");
          keep = gpass::tensor(t.element_type(), sizes);
          const auto es = static_cast<i64>(size_of(t.element_type()));
          const auto* src = reinterpret_cast<const unsigned char*>(t.raw());
          auto* dst = reinterpret_cast<unsigned char*>(keep.raw());
          strided_walker<1> w(sizes, {broadcast_strides(t.sizes(), sizes)});
          w.seek(0);
          for (i64 e = 0; e < keep.size(); ++e, w.next())
            std::memcpy(dst + e * es, src + w.offset(0) * es, static_cast<std::size_t>(es));
          return keep;
        };
        const gpass::tensor& x = expanded(ctx.input(0), xb);
        const gpass::tensor& skip = repeats_into(ctx.input(1).sizes(), sizes) ? ctx.input(1) : expanded(ctx.input(1), sb);
        const gpass::tensor& gamma = ctx.input(2);
        const gpass::tensor* beta = !simplified && ctx.has_input(3) ? &ctx.input(3) : nullptr;
        const std::size_t bias_input = simplified ? 3 : 4;
        const gpass::tensor* bias = ctx.has_input(bias_input) ? &ctx.input(bias_input) : nullptr;
        if (x.rank() < 1) ctx.fail("input must have rank >= 1");
        const i64 H = x.sizes().back(), rows = H ? x.size() / H : 0;
        if (x.size() != 0 && (skip.size() == 0 || skip.size() % H != 0 || x.size() % skip.size() != 0))
          ctx.fail("skip has shape " + skip.shape().to_string() + ", the input " + x.shape().to_string());
        for (const gpass::tensor* p : {&gamma, beta, bias})
          if (p && p->size() != H) ctx.fail("gamma, beta and bias must have " + std::to_string(H) + " values");
        dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
          auto vals = [](const gpass::tensor* t) {
            std::vector<double> v;
            if (t)
              for (i64 i = 0; i < t->size(); ++i) v.push_back(static_cast<double>(static_cast<compute_t<T>>(t->data<T>()[i])));
            return v;
          };
          const auto g = vals(&gamma), be = vals(beta), bi = vals(bias);
          gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
          std::vector<i64> stat_sizes(x.sizes().begin(), x.sizes().end() - 1);
          stat_sizes.push_back(1);
          auto wanted = [&](std::size_t k) { return ctx.num_outputs() > k && ctx.output_wanted(k); };
          gpass::tensor* mean_t = wanted(1) ? &ctx.allocate_output(1, dtype::f32, stat_sizes) : nullptr;
          gpass::tensor* inv_t = wanted(2) ? &ctx.allocate_output(2, dtype::f32, stat_sizes) : nullptr;
          gpass::tensor* sum_t = wanted(3) ? &ctx.allocate_output(3, x.element_type(), x.sizes()) : nullptr;
          const T* xp = x.data<T>();
          const T* sp = skip.data<T>();
          const i64 skip_rows = H && skip.size() ? skip.size() / H : 1;  // rows of skip, repeated over the input's
          T* yp = y.data<T>();
          if constexpr (std::is_same_v<T, float>) {
            // f32: vectorized in float, the statistics too, in two passes (the mean, then the
            // squared deviations from it; Eigen's sums keep one float accumulator per lane)
            auto to_arr = [H](const std::vector<double>& v) {
              arr<float> a(v.empty() ? 0 : H);
              for (std::size_t j = 0; j < v.size(); ++j) a[static_cast<i64>(j)] = static_cast<float>(v[j]);
              return a;
            };
            const arr<float> gv = to_arr(g), bev = to_arr(be), biv = to_arr(bi);
            ctx.policy().parallel_for(rows, 4.0 * static_cast<double>(H), [&](i64 lo, i64 hi) {
              arr<float> sv(H);
              for (i64 row = lo; row < hi; ++row) {
                sv = carr_map<float>(xp + row * H, H) + carr_map<float>(sp + (row % skip_rows) * H, H);
                if (biv.size()) sv += biv;
                if (sum_t) arr_map<float>(sum_t->data<float>() + row * H, H) = sv;
                const double mean = simplified || H == 0 ? 0.0 : static_cast<double>(sv.sum()) / static_cast<double>(H);
                const double var = H == 0 ? 0.0 : static_cast<double>((sv - static_cast<float>(mean)).square().sum()) / static_cast<double>(H);
                const double inv = 1.0 / std::sqrt(var + eps);
                arr_map<float> yr(yp + row * H, H);
                yr = (sv - static_cast<float>(mean)) * static_cast<float>(inv) * gv;
                if (bev.size()) yr += bev;
                if (mean_t) mean_t->data<float>()[row] = static_cast<float>(mean);
                if (inv_t) inv_t->data<float>()[row] = static_cast<float>(inv);
              }
            });
            return;
          }
          ctx.policy().parallel_for(rows, 8.0 * static_cast<double>(H), [&](i64 lo, i64 hi) {
            std::vector<double> sv(static_cast<std::size_t>(H));
            for (i64 row = lo; row < hi; ++row) {
              double mean = 0;
              for (i64 j = 0; j < H; ++j) {
                const i64 k = row * H + j;
                double v = static_cast<double>(static_cast<compute_t<T>>(xp[k])) +
                           static_cast<double>(static_cast<compute_t<T>>(sp[(row % skip_rows) * H + j]));
                if (!bi.empty()) v += bi[static_cast<std::size_t>(j)];
                if (sum_t) sum_t->data<T>()[k] = static_cast<T>(static_cast<compute_t<T>>(v));
                sv[static_cast<std::size_t>(j)] = v;
                mean += v;
              }
              mean = simplified ? 0.0 : mean / static_cast<double>(H);
              double var = 0;
              for (double v : sv) var += (v - mean) * (v - mean);
              const double inv = 1.0 / std::sqrt(var / static_cast<double>(H) + eps);
              for (i64 j = 0; j < H; ++j) {
                double o = (sv[static_cast<std::size_t>(j)] - mean) * inv * g[static_cast<std::size_t>(j)];
                if (!be.empty()) o += be[static_cast<std::size_t>(j)];
                yp[row * H + j] = static_cast<T>(static_cast<compute_t<T>>(o));
              }
              if (mean_t) mean_t->data<float>()[row] = static_cast<float>(mean);
              if (inv_t) inv_t->data<float>()[row] = static_cast<float>(inv);
            }
          });
        });
      };
    };
  };
  r.add({.domain = "com.microsoft", .op = "SkipLayerNormalization", .since_version = 1, .dtypes = nn_types::dtypes(),
         .make = skip_norm(false)});
  r.add({.domain = "com.microsoft", .op = "SkipSimplifiedLayerNormalization", .since_version = 1, .dtypes = nn_types::dtypes(),
         .make = skip_norm(true)});

  // Attention (the fused self-attention of ONNX Runtime's transformer optimizer): QKV =
  // input x weights + bias split into num_heads heads (qkv_hidden_sizes, else three equal
  // parts), softmax(Q K^T scale + mask + attention_bias) V with the heads merged. mask_index:
  // [B] end positions, [2B] end then start positions, [B, S_total] a 0/1 mask or [B, S,
  // S_total] one per query; masked keys get mask_filter_value added; unidirectional masks the
  // keys after the query's position P + i. past [2, B, N, P, H] (keys, values) comes before
  // this step's; present [2, B, N, P + S, H] returns both (S_total = P + S).
  r.add({.domain = "com.microsoft", .op = "Attention", .since_version = 1, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const nn_rules::ort_attention_attrs at = nn_rules::read_ort_attention_attrs(n);
    const i64 heads = at.heads;
    const bool causal = at.causal;
    const double filter = at.filter, scale_attr = at.scale;
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& w = ctx.input(1);
      const gpass::tensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
      const gpass::tensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
      const gpass::tensor* past = ctx.has_input(4) ? &ctx.input(4) : nullptr;
      const gpass::tensor* abias = ctx.has_input(5) ? &ctx.input(5) : nullptr;
      const nn_rules::ort_attention_sizes z =
          nn_rules::ort_attention_check(ctx, heads, at.qkv_sizes, ctx.num_outputs() > 1 && ctx.output_wanted(1));
      const i64 B = z.B, S = z.S, Hin = z.Hin, W3 = z.W3, Hq = z.Hq, Hk = z.Hk, Hv = z.Hv, dq = z.dq, dv = z.dv, P = z.P, total = z.total;
      const double scale = scale_attr != 0.0 ? scale_attr : 1.0 / std::sqrt(static_cast<double>(dq));
      // the additive mask of (b, query i, key j): 0 or mask_filter_value
      const std::vector<i64> m = mask ? int_values(*mask, ctx.node(), "mask_index") : std::vector<i64>{};
      auto masked = [&](i64 b, i64 i, i64 j) {
        if (causal && j > P + i) return true;
        switch (z.mask_kind) {  // (the forms of nn_rules::ort_attention_sizes)
          case 1: return j >= m[static_cast<std::size_t>(b)];
          case 2: return j >= m[static_cast<std::size_t>(b)] || j < m[static_cast<std::size_t>(B + b)];
          case 3: return m[static_cast<std::size_t>(b * total + j)] == 0;
          case 4: return m[static_cast<std::size_t>((b * S + i) * total + j)] == 0;
          default: return false;
        }
      };
      const ort_attention_bias ab(abias, B, heads, S, total, ctx);
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using C = compute_t<T>;
        using Mat = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        // Q, K and V of every position: more than the output when V is narrow or empty; none
        // at all for weights of no columns (then B x S of an empty input may be anything)
        check_scratch(ctx, static_cast<double>(B) * static_cast<double>(S) * static_cast<double>(W3) * sizeof(C), "the Q, K and V projections");
        if (W3 == 0) {
          ctx.allocate_output(0, x.element_type(), {B, S, 0});
          if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) ctx.allocate_output(1, x.element_type(), {2, B, heads, total, 0});
          return;
        }
        Mat X(B * S, Hin), Wm(Hin, W3);
        for (i64 i = 0; i < X.size(); ++i) X.data()[i] = static_cast<C>(x.data<T>()[i]);
        for (i64 i = 0; i < Wm.size(); ++i) Wm.data()[i] = static_cast<C>(w.data<T>()[i]);
        Mat qkv = X * Wm;
        if (bias)
          for (i64 r0 = 0; r0 < qkv.rows(); ++r0)
            for (i64 c0 = 0; c0 < W3; ++c0) qkv(r0, c0) += static_cast<C>(bias->data<T>()[c0]);
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), {B, S, Hv});
        // key (part 0) or value (part 1) d of head h at position j: the past's, then this step's
        auto kv = [&](int part, i64 b, i64 h, i64 j, i64 d) {
          if (j < P) return static_cast<double>(static_cast<C>(past->data<T>()[(((part * B + b) * heads + h) * P + j) * dq + d]));
          return static_cast<double>(qkv(b * S + j - P, (part ? Hq + Hk + h * dv : Hq + h * dq) + d));
        };
        if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
          gpass::tensor& present = ctx.allocate_output(1, x.element_type(), {2, B, heads, total, dq});
          // (empty when the heads have size 0: then num_heads may be anything)
          for (int part = 0; part < (present.size() > 0 ? 2 : 0); ++part)
            for (i64 b = 0; b < B; ++b)
              for (i64 h = 0; h < heads; ++h)
                for (i64 j = 0; j < total; ++j)
                  for (i64 d = 0; d < dq; ++d)
                    present.data<T>()[((((part * B + b) * heads + h) * total + j) * dq) + d] = static_cast<T>(static_cast<C>(kv(part, b, h, j, d)));
        }
        std::vector<double> p;
        for (i64 b = 0; b < (y.size() > 0 ? B : 0); ++b)  // (as present: no work for an empty output)
          for (i64 h = 0; h < heads; ++h)
            for (i64 i = 0; i < S; ++i) {
              auto score = [&](i64 j) {
                double sc = 0;
                for (i64 d = 0; d < dq; ++d) sc += static_cast<double>(qkv(b * S + i, h * dq + d)) * kv(0, b, h, j, d);
                sc *= scale;
                if (masked(b, i, j)) sc += filter;
                if (abias) sc += static_cast<double>(static_cast<C>(abias->data<T>()[ab.offset(b, h, i, j)]));
                return sc;
              };
              attend_row(
                  total, dv, p, score, [&](i64 j, i64 d) { return kv(1, b, h, j, d); },
                  [&](i64 d, double o) { y.data<T>()[(b * S + i) * Hv + h * dv + d] = static_cast<T>(static_cast<C>(o)); });
            }
      });
    };
  }});

  // MultiHeadAttention (ONNX Runtime's attention over projected Q, K, V): query [B, S, D] with
  // key [B, L, D] and value [B, L, Dv] (bias [D + D + Dv] added to each), key and value
  // already per head [B, N, L, H] (no bias on them), packed QKV [B, S, N, 3, H] or packed KV
  // [B, L, N, 2, H]; past_key / past_value [B, N, P, H] come before this step's keys and values
  // and present_key / present_value return both. key_padding_mask: [B] key lengths, or a 0/1
  // [B, L or P + L] or [B, S, P + L]; masked keys and (unidirectional) keys after the query's
  // position P + i get mask_filter_value added; attention_bias [B or 1, N or 1, S, P + L].
  r.add({.domain = "com.microsoft", .op = "MultiHeadAttention", .since_version = 1, .dtypes = nn_types::dtypes(),
         .make = [](const kernel_node& n) -> fn {
    const i64 N = n.attr<i64>("num_heads");
    if (N <= 0) n.fail("num_heads must be positive");
    const bool causal = n.attr<i64>("unidirectional", 0) != 0;
    const double filter = n.attr<double>("mask_filter_value", -10000.0);
    const double scale_attr = n.attr<double>("scale", 0.0);
    return [=](context& ctx) {
      const gpass::tensor& q = ctx.input(0);
      const gpass::tensor* key = ctx.has_input(1) ? &ctx.input(1) : nullptr;
      const gpass::tensor* value = ctx.has_input(2) ? &ctx.input(2) : nullptr;
      const gpass::tensor* bias = ctx.has_input(3) ? &ctx.input(3) : nullptr;
      const gpass::tensor* mask = ctx.has_input(4) ? &ctx.input(4) : nullptr;
      const gpass::tensor* abias = ctx.has_input(5) ? &ctx.input(5) : nullptr;
      const gpass::tensor* past_k = ctx.has_input(6) ? &ctx.input(6) : nullptr;
      const gpass::tensor* past_v = ctx.has_input(7) ? &ctx.input(7) : nullptr;
      if (ctx.has_input(8) || ctx.has_input(9)) ctx.fail("past_sequence_length and cache_indirection (shared buffers, beam search) have no kernel here");
      if (ctx.num_outputs() > 3 && ctx.output_wanted(3)) ctx.fail("the qk output has no kernel here");
      if (q.rank() != 3 && q.rank() != 5) ctx.fail("query must be [B, S, D] or packed [B, S, N, 3, H], got " + q.shape().to_string());
      const i64 B = q.sizes()[0], S = q.sizes()[1];
      // the layout: Q, K, V as (b, n, position, d) readers over the inputs
      enum class kv_form { separate, per_head, packed_kv, packed_qkv } form;
      i64 Hq = 0, Hv = 0, L = 0;
      if (q.rank() == 5) {
        if (key || value) ctx.fail("packed QKV takes no key or value");
        if (q.sizes()[2] != N || q.sizes()[3] != 3) ctx.fail("packed QKV must be [B, S, num_heads, 3, H], got " + q.shape().to_string());
        form = kv_form::packed_qkv;
        Hq = Hv = q.sizes()[4];
        L = S;
      } else {
        if (q.sizes()[2] % N != 0) ctx.fail("query hidden size " + std::to_string(q.sizes()[2]) + " is not a multiple of " + std::to_string(N) + " heads");
        Hq = q.sizes()[2] / N;
        if (!key) ctx.fail("key is missing (query is not packed)");
        if (key->rank() == 5) {
          if (value) ctx.fail("packed KV takes no value");
          if (key->sizes()[0] != B || key->sizes()[2] != N || key->sizes()[3] != 2 || key->sizes()[4] != Hq)
            ctx.fail("packed KV must be [B, L, num_heads, 2, H], got " + key->shape().to_string());
          form = kv_form::packed_kv;
          L = key->sizes()[1];
          Hv = Hq;
        } else if (key->rank() == 4) {
          if (!value || value->rank() != 4 || key->sizes() != std::vector<i64>{B, N, key->sizes()[2], Hq} || value->sizes()[0] != B ||
              value->sizes()[1] != N || value->sizes()[2] != key->sizes()[2])
            ctx.fail("per-head key and value must be [B, num_heads, L, H], got " + key->shape().to_string() + " and " +
                     (value ? value->shape().to_string() : std::string("none")));
          if (bias) ctx.fail("a bias cannot go with per-head key and value");
          form = kv_form::per_head;
          L = key->sizes()[2];
          Hv = value->sizes()[3];
        } else if (key->rank() == 3) {
          if (!value || value->rank() != 3 || key->sizes()[0] != B || key->sizes()[2] != q.sizes()[2] || value->sizes()[0] != B ||
              value->sizes()[1] != key->sizes()[1] || value->sizes()[2] % N != 0)
            ctx.fail("key and value must be [B, L, D] and [B, L, Dv], got " + key->shape().to_string() + " and " +
                     (value ? value->shape().to_string() : std::string("none")));
          form = kv_form::separate;
          L = key->sizes()[1];
          Hv = value->sizes()[2] / N;
        } else {
          ctx.fail("key must be [B, L, D], [B, num_heads, L, H] or packed [B, L, num_heads, 2, H], got " + key->shape().to_string());
        }
      }
      // (head sizes of empty inputs may be anything: N * Hv wrapped around to a small Dv, and
      // the heads wrote past Y)
      if (Hq > std::numeric_limits<i64>::max() / 3 / N || Hv > std::numeric_limits<i64>::max() / 3 / N)
        ctx.fail("num_heads " + std::to_string(N) + " x head sizes " + std::to_string(Hq) + ", " + std::to_string(Hv) + " overflow int64");
      const i64 D = N * Hq, Dv = N * Hv;
      if (bias && bias->size() != 2 * D + Dv) ctx.fail("bias must have " + std::to_string(2 * D + Dv) + " values, got " + std::to_string(bias->size()));
      for (const gpass::tensor* t : {key, value, bias, abias, past_k, past_v})
        if (t && t->element_type() != q.element_type()) ctx.fail("query, key, value, bias, attention_bias and the past state must have one element type");
      if ((past_k == nullptr) != (past_v == nullptr)) ctx.fail("past_key and past_value go together");
      i64 P = 0;
      if (past_k) {
        P = past_k->rank() == 4 ? past_k->sizes()[2] : -1;
        if (past_k->sizes() != std::vector<i64>{B, N, P, Hq} || past_v->sizes() != std::vector<i64>{B, N, P, Hv})
          ctx.fail("past_key and past_value must be [B, num_heads, P, H], got " + past_k->shape().to_string() + " and " + past_v->shape().to_string());
      }
      if (P > std::numeric_limits<i64>::max() - L) ctx.fail("past and key lengths overflow int64");  // (of empty inputs)
      const i64 T = P + L;
      const double scale = scale_attr != 0.0 ? scale_attr : 1.0 / std::sqrt(static_cast<double>(Hq));
      std::vector<i64> m;
      std::size_t mrank = 0;
      if (mask) {
        m = int_values(*mask, ctx.node(), "key_padding_mask");
        mrank = mask->rank();
        const auto& ms = mask->sizes();
        const bool ok = (mrank == 1 && ms[0] == B) || (mrank == 2 && ms[0] == B && (ms[1] == L || ms[1] == T)) ||
                        (mrank == 3 && ms == std::vector<i64>{B, S, T});
        if (!ok) ctx.fail("key_padding_mask of shape " + mask->shape().to_string() + " is not [B], [B, L], [B, total] or [B, S, total]");
      }
      auto masked = [&](i64 b, i64 i, i64 j) {
        if (causal && j > P + i) return true;
        if (!mask) return false;
        if (mrank == 1) return j >= m[static_cast<std::size_t>(b)];
        if (mrank == 2) {
          const i64 w = mask->sizes()[1], jj = j - (T - w);  // a [B, L] mask covers this step's keys
          return jj >= 0 && m[static_cast<std::size_t>(b * w + jj)] == 0;
        }
        return m[static_cast<std::size_t>((b * S + i) * T + j)] == 0;
      };
      const ort_attention_bias ab(abias, B, N, S, T, ctx);
      dispatch<nn_types>(q.element_type(), ctx.node(), [&]<class E>() {
        using C = compute_t<E>;
        auto at = [](const gpass::tensor& t, i64 k) { return static_cast<double>(static_cast<C>(t.data<E>()[k])); };
        auto bias_at = [&](i64 k) { return bias ? at(*bias, k) : 0.0; };
        // Q (b, n, i, d); K and V (b, n, j, d) over the past then this step's keys
        auto qv = [&](i64 b, i64 h, i64 i, i64 d) {
          if (form == kv_form::packed_qkv) return at(q, (((b * S + i) * N + h) * 3 + 0) * Hq + d) + bias_at(h * Hq + d);
          return at(q, (b * S + i) * D + h * Hq + d) + bias_at(h * Hq + d);
        };
        auto kv = [&](bool is_v, i64 b, i64 h, i64 j, i64 d) {
          const i64 H = is_v ? Hv : Hq;
          if (j < P) return at(is_v ? *past_v : *past_k, ((b * N + h) * P + j) * H + d);
          j -= P;
          const i64 bo = is_v ? 2 * D + h * Hv + d : D + h * Hq + d;  // this value's bias
          switch (form) {
            case kv_form::packed_qkv: return at(q, (((b * S + j) * N + h) * 3 + (is_v ? 2 : 1)) * H + d) + bias_at(bo);
            case kv_form::packed_kv: return at(*key, (((b * L + j) * N + h) * 2 + (is_v ? 1 : 0)) * H + d) + bias_at(bo);
            case kv_form::per_head: return at(is_v ? *value : *key, ((b * N + h) * L + j) * H + d);
            default: return at(is_v ? *value : *key, (b * L + j) * (is_v ? Dv : D) + h * H + d) + bias_at(bo);
          }
        };
        gpass::tensor& y = ctx.allocate_output(0, q.element_type(), {B, S, Dv});
        auto wanted = [&](std::size_t k) { return ctx.num_outputs() > k && ctx.output_wanted(k); };
        for (std::size_t k = 1; k < 3; ++k) {
          if (!wanted(k)) continue;
          const bool is_v = k == 2;
          const i64 H = is_v ? Hv : Hq;
          gpass::tensor& pres = ctx.allocate_output(k, q.element_type(), {B, N, T, H});
          for (i64 b = 0; b < (pres.size() > 0 ? B : 0); ++b)  // (heads of size 0: N may be anything)
            for (i64 h = 0; h < N; ++h)
              for (i64 j = 0; j < T; ++j)
                for (i64 d = 0; d < H; ++d) pres.data<E>()[((b * N + h) * T + j) * H + d] = static_cast<E>(static_cast<C>(kv(is_v, b, h, j, d)));
        }
        std::vector<double> p, qrow(static_cast<std::size_t>(Hq));
        for (i64 b = 0; b < (y.size() > 0 ? B : 0); ++b)
          for (i64 h = 0; h < N; ++h)
            for (i64 i = 0; i < S; ++i) {
              for (i64 d = 0; d < Hq; ++d) qrow[static_cast<std::size_t>(d)] = qv(b, h, i, d);
              auto score = [&](i64 j) {
                double sc = 0;
                for (i64 d = 0; d < Hq; ++d) sc += qrow[static_cast<std::size_t>(d)] * kv(false, b, h, j, d);
                sc *= scale;
                if (masked(b, i, j)) sc += filter;
                if (abias) sc += at(*abias, ab.offset(b, h, i, j));
                return sc;
              };
              attend_row(
                  T, Hv, p, score, [&](i64 j, i64 d) { return kv(true, b, h, j, d); },
                  [&](i64 d, double o) { y.data<E>()[(b * S + i) * Dv + h * Hv + d] = static_cast<E>(static_cast<C>(o)); });
            }
      });
    };
  }});

  // EmbedLayerNormalization: the word (+ position, + segment) embeddings of token ids summed
  // and layer-normalized over the hidden axis; mask_index[b] = the count of non-zero mask
  // entries of sequence b (0 without a mask); the sum before the normalization as output 2
  r.add({.domain = "com.microsoft", .op = "EmbedLayerNormalization", .since_version = 1, .dtypes = nn_types::dtypes(),
         .type_input = 2, .make = [](const kernel_node& n) -> fn {
           const double eps = n.attr<double>("epsilon", 1e-12);
           return [eps](context& ctx) {
             const gpass::tensor& ids = ctx.input(0);
             const gpass::tensor* seg = ctx.has_input(1) ? &ctx.input(1) : nullptr;
             const gpass::tensor& word = ctx.input(2);
             const gpass::tensor& pos = ctx.input(3);
             const gpass::tensor* seg_emb = ctx.has_input(4) ? &ctx.input(4) : nullptr;
             const gpass::tensor& gamma = ctx.input(5);
             const gpass::tensor& beta = ctx.input(6);
             const gpass::tensor* mask = ctx.has_input(7) ? &ctx.input(7) : nullptr;
             const gpass::tensor* pos_ids = ctx.has_input(8) ? &ctx.input(8) : nullptr;
             const nn_rules::embed_ln_sizes z = nn_rules::embed_ln_check(ctx);
             const i64 B = z.B, S = z.S, H = z.H;
             const std::vector<i64> id = int_values(ids, ctx.node(), "input_ids");
             const std::vector<i64> sid = seg ? int_values(*seg, ctx.node(), "segment_ids") : std::vector<i64>{};
             const std::vector<i64> pid = pos_ids ? int_values(*pos_ids, ctx.node(), "position_ids") : std::vector<i64>{};
             dispatch<nn_types>(word.element_type(), ctx.node(), [&]<class T>() {
               auto row_of = [&](const gpass::tensor& table, i64 r, const char* what) {
                 nn_rules::check_embed_row(r, table.sizes()[0], what, ctx.node());
                 return table.data<T>() + r * H;
               };
               gpass::tensor& y = ctx.allocate_output(0, word.element_type(), {B, S, H});
               gpass::tensor* sum_t =
                   ctx.num_outputs() > 2 && ctx.output_wanted(2) ? &ctx.allocate_output(2, word.element_type(), {B, S, H}) : nullptr;
               std::vector<double> v(static_cast<std::size_t>(H));
               for (i64 t = 0; t < B * S; ++t) {
                 const T* w = row_of(word, id[static_cast<std::size_t>(t)], "input id");
                 const i64 p = pos_ids ? pid[static_cast<std::size_t>(static_cast<i64>(pid.size()) == S ? t % S : t)] : t % S;
                 const T* pe = row_of(pos, p, "position id");
                 const T* se = seg ? row_of(*seg_emb, sid[static_cast<std::size_t>(t)], "segment id") : nullptr;
                 double mean = 0;
                 for (i64 j = 0; j < H; ++j) {
                   double e = static_cast<double>(static_cast<compute_t<T>>(w[j])) + static_cast<double>(static_cast<compute_t<T>>(pe[j]));
                   if (se) e += static_cast<double>(static_cast<compute_t<T>>(se[j]));
                   v[static_cast<std::size_t>(j)] = e;
                   mean += e;
                   if (sum_t) sum_t->data<T>()[t * H + j] = static_cast<T>(static_cast<compute_t<T>>(e));
                 }
                 mean /= static_cast<double>(H);
                 double var = 0;
                 for (double e : v) var += (e - mean) * (e - mean);
                 const double inv = 1.0 / std::sqrt(var / static_cast<double>(H) + eps);
                 for (i64 j = 0; j < H; ++j)
                   y.data<T>()[t * H + j] = static_cast<T>(static_cast<compute_t<T>>(
                       (v[static_cast<std::size_t>(j)] - mean) * inv * static_cast<double>(static_cast<compute_t<T>>(gamma.data<T>()[j])) +
                       static_cast<double>(static_cast<compute_t<T>>(beta.data<T>()[j]))));
               }
               if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
                 gpass::tensor& mi = ctx.allocate_output_zeroed(1, dtype::int32, {B});
                 if (mask) {
                   const std::vector<i64> m = int_values(*mask, ctx.node(), "mask");
                   if (static_cast<i64>(m.size()) != B * S) ctx.fail("mask must have the shape of input_ids");
                   for (i64 b = 0; b < B; ++b)
                     for (i64 s = 0; s < S; ++s) mi.data<std::int32_t>()[b] += m[static_cast<std::size_t>(b * S + s)] != 0;
                 }
               }
             });
           };
         }});
}

/// AffineGrid (opset 20): the sampling grid of affine matrices theta [N, 2, 3] (2-D) or
/// [N, 3, 4] (3-D) for an output of `size` [N, C, H, W] or [N, C, D, H, W]: grid [N, H, W, 2]
/// or [N, D, H, W, 3] of theta times the normalized coordinates (x, y[, z], 1) in [-1, 1]
/// (pixel centers, or corners with align_corners).
inline void register_affine_grid(registry& r) {
  r.add({.domain = "", .op = "AffineGrid", .since_version = 20, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const bool align = n.attr<i64>("align_corners", 0) != 0;
    return [align](context& ctx) {
      const gpass::tensor& theta = ctx.input(0);
      const std::vector<i64> size = int_values(ctx.input(1), ctx.node(), "size");
      if (size.size() != 4 && size.size() != 5) ctx.fail("size must have 4 (2-D) or 5 (3-D) values, got " + std::to_string(size.size()));
      const std::size_t nd = size.size() - 2;  // spatial dimensions
      const i64 N = size[0];
      if (theta.rank() != 3 || theta.sizes()[0] != N || theta.sizes()[1] != static_cast<i64>(nd) ||
          theta.sizes()[2] != static_cast<i64>(nd) + 1)
        ctx.fail("theta must be [" + std::to_string(N) + ", " + std::to_string(nd) + ", " + std::to_string(nd + 1) +
                 "], got " + theta.shape().to_string());
      for (i64 v : size)
        if (v < 0) ctx.fail("size must not be negative");
      std::vector<i64> out{N};
      for (std::size_t d = 0; d < nd; ++d) out.push_back(size[2 + d]);
      out.push_back(static_cast<i64>(nd));
      // normalized coordinate of index i of an axis of n points
      auto coord = [align](i64 i, i64 n) {
        if (align) return n == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1);
        return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(n);
      };
      dispatch<nn_types>(theta.element_type(), ctx.node(), [&]<class T>() {
        gpass::tensor& y = ctx.allocate_output(0, theta.element_type(), out);
        if (y.size() == 0) return;  // (N x D x H may be anything when W is 0)
        const T* th = theta.data<T>();
        T* g = y.data<T>();
        const i64 D = nd == 3 ? size[2] : 1, H = size[nd == 3 ? 3 : 2], W = size[nd == 3 ? 4 : 3];
        const i64 k = static_cast<i64>(nd);
        for (i64 b = 0; b < N; ++b) {
          const T* t = th + b * k * (k + 1);
          for (i64 z = 0; z < D; ++z)
            for (i64 yy = 0; yy < H; ++yy)
              for (i64 x = 0; x < W; ++x) {
                // homogeneous source point (x, y[, z], 1)
                double p[4] = {coord(x, W), coord(yy, H), nd == 3 ? coord(z, D) : 1.0, 1.0};
                for (i64 row = 0; row < k; ++row) {
                  double acc = 0;
                  for (i64 c = 0; c <= k; ++c) acc += static_cast<double>(static_cast<compute_t<T>>(t[row * (k + 1) + c])) * p[c];
                  *g++ = static_cast<T>(static_cast<compute_t<T>>(acc));
                }
              }
        }
      });
    };
  }});
}

/// DeformConv (opset 19, 2-D): a convolution whose taps sample X at positions moved by
/// `offset` [N, offset_group * kH * kW * 2, oH, oW] (dh, dw per tap) with bilinear
/// interpolation (zero outside), weighted by `mask` [N, offset_group * kH * kW, oH, oW] when
/// given; group, offset_group, strides, pads, dilations; bias B.
inline void register_deform_conv(registry& r) {
  r.add({.domain = "", .op = "DeformConv", .since_version = 19, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const nn_rules::deform_conv_attrs a = nn_rules::read_deform_conv_attrs(n);
    const std::vector<i64> &strides = a.strides, &dil = a.dilations, &pads = a.pads;
    const i64 group = a.group, offset_group = a.offset_group;
    return [=](context& ctx) {
      const gpass::tensor &x = ctx.input(0), &w = ctx.input(1), &off = ctx.input(2);
      const bool has_b = ctx.has_input(3), has_mask = ctx.has_input(4);
      const nn_rules::deform_conv_shape s =
          nn_rules::deform_conv_check(x.sizes(), w.sizes(), off.sizes(), has_b ? &ctx.input(3).sizes() : nullptr,
                                      has_mask ? &ctx.input(4).sizes() : nullptr, a, ctx.node());
      const std::pair<const gpass::tensor*, const char*> others[] = {
          {&w, "W"}, {&off, "offset"}, {has_b ? &ctx.input(3) : nullptr, "B"}, {has_mask ? &ctx.input(4) : nullptr, "mask"}};
      for (const auto& [o, what] : others)
        if (o) nn_rules::check_deform_conv_type(x.element_type(), o->element_type(), what, ctx.node());
      const i64 N = s.N, C = s.C, H = s.H, W = s.W, M = s.M, Cg = s.Cg, kH = s.kH, kW = s.kW, oH = s.oH, oW = s.oW, taps = s.taps;
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        auto f = [](const gpass::tensor& t) {
          std::vector<double> v(static_cast<std::size_t>(t.size()));
          for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<compute_t<T>>(t.data<T>()[i]));
          return v;
        };
        const auto xv = f(x), wv = f(w), ov = f(off);
        const auto bv = has_b ? f(ctx.input(3)) : std::vector<double>(static_cast<std::size_t>(M), 0.0);
        const auto mv = has_mask ? f(ctx.input(4)) : std::vector<double>{};
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), {N, M, oH, oW});
        if (y.size() == 0) return;  // (N x M may be anything over empty output planes)
        T* yo = y.data<T>();
        const i64 Mg = M / group, Cog = C / offset_group;
        ctx.policy().parallel_for(N * M, static_cast<double>(oH * oW) * static_cast<double>(Cg * taps) * 12.0, [&](i64 b, i64 e) {
          for (i64 nm = b; nm < e; ++nm) {
            const i64 nb = nm / M, m = nm % M, g = m / Mg;
            for (i64 oh = 0; oh < oH; ++oh)
              for (i64 ow = 0; ow < oW; ++ow) {
                double acc = bv[static_cast<std::size_t>(m)];
                for (i64 cl = 0; cl < Cg; ++cl) {
                  const i64 c = g * Cg + cl, og = c / Cog;
                  const double* plane = xv.data() + (nb * C + c) * H * W;
                  for (i64 t = 0; t < taps; ++t) {
                    const i64 kh = t / kW, kw = t % kW;
                    const i64 oi = ((nb * offset_group + og) * taps + t) * 2;
                    const double dh = ov[static_cast<std::size_t>((oi * oH + oh) * oW + ow)];
                    const double dw = ov[static_cast<std::size_t>(((oi + 1) * oH + oh) * oW + ow)];
                    // (in double: no int64 overflow whatever the pads and dilations)
                    const double ph = static_cast<double>(oh) * static_cast<double>(strides[0]) - static_cast<double>(pads[0]) +
                                      static_cast<double>(kh) * static_cast<double>(dil[0]) + dh;
                    const double pw = static_cast<double>(ow) * static_cast<double>(strides[1]) - static_cast<double>(pads[1]) +
                                      static_cast<double>(kw) * static_cast<double>(dil[1]) + dw;
                    // bilinear, zero outside (NaN or far-away positions read nothing)
                    if (!(ph > -1 && ph < static_cast<double>(H) && pw > -1 && pw < static_cast<double>(W))) continue;
                    const double h0 = std::floor(ph), w0 = std::floor(pw);
                    const double fh = ph - h0, fw = pw - w0;
                    double v = 0;
                    for (int a = 0; a < 2; ++a)
                      for (int bb = 0; bb < 2; ++bb) {
                        const i64 hh = static_cast<i64>(h0) + a, ww = static_cast<i64>(w0) + bb;
                        if (hh < 0 || hh >= H || ww < 0 || ww >= W) continue;
                        v += (a ? fh : 1 - fh) * (bb ? fw : 1 - fw) * plane[hh * W + ww];
                      }
                    if (has_mask) v *= mv[static_cast<std::size_t>((((nb * offset_group + og) * taps + t) * oH + oh) * oW + ow)];
                    acc += v * wv[static_cast<std::size_t>(((m * Cg + cl) * kH + kh) * kW + kw)];
                  }
                }
                yo[((nb * M + m) * oH + oh) * oW + ow] = static_cast<T>(static_cast<compute_t<T>>(acc));
              }
          }
        });
      });
    };
  }});
}

inline void register_grid_sample(registry& r) {
  r.add({.domain = "", .op = "GridSample", .since_version = 1, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const nn_rules::grid_sample_attrs attrs = nn_rules::grid_sample_attrs::read(n);
    const gs_mode mode = attrs.mode;
    const gs_pad pad = attrs.pad;
    const bool align = attrs.align;
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& grid = ctx.input(1);
      check_float(grid, ctx.node(), "grid");
      const auto& xs = x.sizes();
      const auto& gsz = grid.sizes();
      const nn_rules::grid_sample_shape shp = nn_rules::grid_sample_geometry(xs, x.size(), gsz, attrs, ctx.node());
      const std::vector<i64>& out_sizes = shp.out;
      const bool work = shp.work;
      const double reach = shp.reach;
      const std::size_t k = xs.size() - 2;
      const i64 N = xs[0], Cn = xs[1];
      const std::vector<i64> dims(xs.begin() + 2, xs.end());
      const int taps = attrs.taps();
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using CT = compute_t<T>;
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), out_sizes);
        if (!work) return;
        const i64 plane = prod(xs, 2, xs.size()), points = prod(gsz, 1, gsz.size() - 1);
        const std::vector<double> g = to_compute<double>(grid, ctx.node());
        const auto pstr = strides_of(dims);
        const auto most = static_cast<std::size_t>(reach);
        with_compute<T>(x, y, [&](const CT* xi, CT* yo) {
          ctx.policy().parallel_for(N * points, static_cast<double>(Cn) * reach * 2.0 + 20.0 * static_cast<double>(k) + 50.0, [&](i64 b, i64 e) {
            // the offsets and weights of the input points an output point reads: the product
            // of each dimension's distinct taps (last dimension fastest); dimensions of one
            // tap add to a base offset and weight instead
            std::vector<i64> off, off2;
            std::vector<double> wt, wt2;
            std::vector<CT> cw;
            for (auto* v : {&off, &off2}) v->reserve(most);
            for (auto* v : {&wt, &wt2}) v->reserve(most);
            cw.reserve(most);
            for (i64 u = b; u < e; ++u) {
              const i64 nn = u / points, p = u % points;
              off.assign(1, 0);
              wt.assign(1, 1.0);
              i64 base = 0;
              double base_w = 1;
              for (std::size_t i = 0; i < k; ++i) {
                const double v = g[static_cast<std::size_t>(u * static_cast<i64>(k) + static_cast<i64>(k - 1 - i))];
                const double len = static_cast<double>(dims[i]);
                double c = align ? (v + 1) / 2 * (len - 1) : ((v + 1) * len - 1) / 2;
                const double lo = align ? 0.0 : -0.5, hi = align ? len - 1 : len - 0.5;
                if (mode == gs_mode::nearest) c = std::nearbyint(c);
                if (c < lo || c > hi) {
                  if (pad == gs_pad::border) c = std::clamp(c, 0.0, len - 1);
                  else if (pad == gs_pad::reflection) c = gs_reflect(c, lo, hi);
                }
                // a NaN coordinate (or an infinite one, which reflection makes NaN) samples
                // nothing: 0, as in PyTorch (ONNX Runtime casts it to an index: undefined)
                if (std::isnan(c)) {
                  off.clear();
                  break;
                }
                // far outside: every tap is outside, keep the index arithmetic finite
                c = std::clamp(c, lo - 4, hi + 4);
                i64 ix[4];
                double w[4];
                if (mode == gs_mode::nearest) {
                  ix[0] = static_cast<i64>(c);
                  w[0] = 1;
                } else {
                  const double f0 = std::floor(c);
                  const double f = c - f0;
                  const auto x0 = static_cast<i64>(f0);
                  if (mode == gs_mode::linear) {
                    ix[0] = x0, ix[1] = x0 + 1;
                    w[0] = 1 - f, w[1] = f;
                  } else {
                    for (int t = 0; t < 4; ++t) ix[t] = x0 - 1 + t;
                    cubic_coeffs(f, w);
                  }
                }
                // padding of each tap; the distinct indices inside, their weights summed
                i64 dq[4];
                double dw[4];
                int nd = 0;
                for (int t = 0; t < taps; ++t) {
                  i64 q = ix[t];
                  if (q < 0 || q >= dims[i]) {
                    if (pad == gs_pad::zeros) continue;
                    if (pad == gs_pad::border) q = std::clamp<i64>(q, 0, dims[i] - 1);
                    else q = std::clamp<i64>(static_cast<i64>(gs_reflect(static_cast<double>(q), lo, hi)), 0, dims[i] - 1);
                  }
                  int j = 0;
                  while (j < nd && dq[j] != q) ++j;
                  if (j == nd) dq[nd] = q, dw[nd++] = 0;
                  dw[j] += w[t];
                }
                if (nd == 0) {
                  off.clear();
                  break;
                }
                if (nd == 1) {
                  base += dq[0] * pstr[i];
                  base_w *= dw[0];
                  continue;
                }
                off2.clear();
                wt2.clear();
                for (std::size_t a = 0; a < off.size(); ++a)
                  for (int j = 0; j < nd; ++j) {
                    off2.push_back(off[a] + dq[j] * pstr[i]);
                    wt2.push_back(wt[a] * dw[j]);
                  }
                off.swap(off2);
                wt.swap(wt2);
              }
              cw.resize(off.size());
              for (std::size_t j = 0; j < off.size(); ++j) cw[j] = static_cast<CT>(wt[j] * base_w);
              for (i64 c = 0; c < Cn; ++c) {
                const CT* src = xi + (nn * Cn + c) * plane + base;
                CT acc = 0;
                for (std::size_t j = 0; j < off.size(); ++j) acc += cw[j] * src[off[j]];
                yo[(nn * Cn + c) * points + p] = acc;
              }
            }
          });
        });
      });
    };
  }});
}

inline void register_roi_align(registry& r) {
  r.add({.domain = "", .op = "RoiAlign", .since_version = 1, .dtypes = nn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const nn_rules::roi_align_attrs attrs = nn_rules::roi_align_attrs::read(n);
    const bool avg = attrs.avg;
    const i64 oh = attrs.oh, ow = attrs.ow;
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& rois_t = ctx.input(1);
      check_float(rois_t, ctx.node(), "rois");
      if (x.rank() != 4) ctx.fail("X must have rank 4 (N x C x H x W), got shape " + x.shape().to_string());
      if (rois_t.rank() != 2 || rois_t.sizes()[1] != 4) ctx.fail("rois must have shape [num_rois, 4], got " + rois_t.shape().to_string());
      const i64 R = rois_t.sizes()[0];
      const auto bidx = int_values(ctx.input(2), ctx.node(), "batch_indices");
      if (static_cast<i64>(bidx.size()) != R) ctx.fail("batch_indices must have num_rois elements");
      const i64 N = x.sizes()[0], Cn = x.sizes()[1], H = x.sizes()[2], W = x.sizes()[3];
      if ((H == 0 || W == 0) && R * Cn > 0) ctx.fail("cannot pool from an empty feature map " + x.shape().to_string());
      for (i64 b : bidx)
        if (b < 0 || b >= N) ctx.fail("batch index " + std::to_string(b) + " is out of range [0, " + std::to_string(N) + ")");
      const std::vector<double> rois = to_compute<double>(rois_t, ctx.node());
      std::vector<nn_rules::roi_box> boxes(static_cast<std::size_t>(R));
      for (i64 rr = 0; rr < R; ++rr) boxes[static_cast<std::size_t>(rr)] = nn_rules::roi_align_box(rois.data() + rr * 4, attrs, rr, ctx);
      const std::atomic<bool>* cancel = ctx.cancel_flag();
      dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using CT = compute_t<T>;
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), {R, Cn, oh, ow});
        if (y.size() == 0) return;  // (no channels: the rois' sample tables would be built for nothing)
        with_compute<T>(x, y, [&](const CT* xi, CT* yo) {
          ctx.policy().parallel_for(R, static_cast<double>(Cn * oh * ow) * 40.0, [&](i64 b, i64 e) {
            struct sample { i64 p[4]; double w[4]; };
            std::vector<sample> pre;
            for (i64 rr = b; rr < e; ++rr) {
              if (cancel && cancel->load(std::memory_order_relaxed)) ctx.fail("run cancelled");
              const nn_rules::roi_box& bx = boxes[static_cast<std::size_t>(rr)];
              const double sw = bx.x0, sh = bx.y0;
              const double bh = bx.h / static_cast<double>(oh), bw = bx.w / static_cast<double>(ow);
              const i64 gh = bx.gh, gw = bx.gw;
              const double count = static_cast<double>(std::max<i64>(gh * gw, 1));
              pre.clear();
              for (i64 ph = 0; ph < oh; ++ph)
                for (i64 pw = 0; pw < ow; ++pw)
                  for (i64 iy = 0; iy < gh; ++iy) {
                    const double yy = sh + static_cast<double>(ph) * bh + (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
                    for (i64 ix = 0; ix < gw; ++ix) {
                      const double xx = sw + static_cast<double>(pw) * bw + (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
                      sample s{};
                      if (yy < -1.0 || yy > static_cast<double>(H) || xx < -1.0 || xx > static_cast<double>(W)) {
                        pre.push_back(s);
                        continue;
                      }
                      double yv = std::max(yy, 0.0), xv = std::max(xx, 0.0);
                      i64 yl = static_cast<i64>(yv), xl = static_cast<i64>(xv), yh, xh;
                      if (yl >= H - 1) {
                        yh = yl = H - 1;
                        yv = static_cast<double>(yl);
                      } else {
                        yh = yl + 1;
                      }
                      if (xl >= W - 1) {
                        xh = xl = W - 1;
                        xv = static_cast<double>(xl);
                      } else {
                        xh = xl + 1;
                      }
                      const double ly = yv - static_cast<double>(yl), lx = xv - static_cast<double>(xl), hy = 1 - ly, hx = 1 - lx;
                      s = sample{{yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh}, {hy * hx, hy * lx, ly * hx, ly * lx}};
                      pre.push_back(s);
                    }
                  }
              const i64 per = gh * gw;
              for (i64 c = 0; c < Cn; ++c) {
                const CT* src = xi + (bidx[static_cast<std::size_t>(rr)] * Cn + c) * H * W;
                CT* dst = yo + (rr * Cn + c) * oh * ow;
                for (i64 bin = 0; bin < oh * ow; ++bin) {
                  double acc = 0;
                  bool first = true;
                  for (i64 t = 0; t < per; ++t) {
                    const sample& s = pre[static_cast<std::size_t>(bin * per + t)];
                    if (avg) {
                      for (int j = 0; j < 4; ++j) acc += s.w[j] * static_cast<double>(src[s.p[j]]);
                    } else {
                      double v = s.w[0] * static_cast<double>(src[s.p[0]]);
                      for (int j = 1; j < 4; ++j) v = std::max(v, s.w[j] * static_cast<double>(src[s.p[j]]));
                      acc = first ? v : std::max(acc, v);
                      first = false;
                    }
                  }
                  dst[bin] = static_cast<CT>(avg ? acc / count : acc);
                }
              }
            }
          });
        });
      });
    };
  }});
}

}  // namespace nn_impl

/// Registers the kernels of this family.
inline void register_nn(registry& r) {
  nn_impl::register_softmax(r, "Softmax", nn_impl::smax::softmax);
  nn_impl::register_softmax(r, "LogSoftmax", nn_impl::smax::log_softmax);
  nn_impl::register_softmax(r, "Hardmax", nn_impl::smax::hardmax);
  nn_impl::register_batch_norm(r);
  nn_impl::register_instance_norm(r);
  nn_impl::register_layer_norm(r);
  nn_impl::register_lrn(r);
  nn_impl::register_mvn(r);
  nn_impl::register_lp_normalization(r);
  nn_impl::register_rnn(r, "RNN", nn_impl::cell::rnn);
  nn_impl::register_rnn(r, "GRU", nn_impl::cell::gru);
  nn_impl::register_rnn(r, "LSTM", nn_impl::cell::lstm);
  nn_impl::register_losses(r);
  nn_impl::register_grid_sample(r);
  nn_impl::register_affine_grid(r);
  nn_impl::register_deform_conv(r);
  nn_impl::register_ort_contrib(r);
  nn_impl::register_roi_align(r);
}

}  // namespace gpass::exec::cpu_detail
