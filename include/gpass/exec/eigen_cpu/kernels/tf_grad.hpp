// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_grad.hpp
/// Eigen CPU kernels of the TensorFlow ops that `tf.gradients` emits for dense networks
/// (domain "tf"): ReluGrad, Relu6Grad, TanhGrad, SigmoidGrad, BiasAddGrad,
/// SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits, BroadcastGradientArgs.
/// Floating-point ones compute in `compute_t<T>` (float for f16/bf16). Private
/// (`gpass::exec::cpu_detail::tf_detail`); the unit `src/tf_math.cpp` registers them.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/nn.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>
#include <gpass/ops/tf/nn.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

namespace grad_impl {

using cpu_detail::compute_t;
using nn_impl::nn_types;

// z = f(a, b) element by element for two tensors of one shape and float type.
template <class F>
fn same_shape_binary(F f, const char* a_name, const char* b_name) {
  return [f, a_name, b_name](context& ctx) {
    const gpass::tensor& a = ctx.input(0);
    const gpass::tensor& b = ctx.input(1);
    if (a.element_type() != b.element_type())
      ctx.fail(std::string(a_name) + " and " + b_name + " have different element types");
    if (a.sizes() != b.sizes())
      ctx.fail(std::string(a_name) + " " + a.shape().to_string() + " and " + b_name + " " + b.shape().to_string() +
               " must have the same shape");
    dispatch<nn_types>(a.element_type(), ctx.node(), [&]<class T>() {
      using C = compute_t<T>;
      gpass::tensor& z = ctx.allocate_output(0, a.element_type(), a.sizes());
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* pz = z.data<T>();
      for (i64 i = 0; i < a.size(); ++i)
        pz[i] = nn_impl::to_elem<T>(f(static_cast<C>(pa[i]), static_cast<C>(pb[i])));
    });
  };
}

// log-sum-exp softmax of one row into `p` (probabilities); returns log(sum(exp(x - max))) + max.
template <class C>
C softmax_row(const C* x, C* p, i64 n) {
  C m = -std::numeric_limits<C>::infinity();
  for (i64 j = 0; j < n; ++j) m = std::max(m, x[j]);
  C s = 0;
  for (i64 j = 0; j < n; ++j) s += (p[j] = std::exp(x[j] - m));
  for (i64 j = 0; j < n; ++j) p[j] /= s;
  return std::log(s) + m;
}

// The rows of a softmax cross-entropy: loss[i] = sum_j label(i, j) * (logsumexp(x_i) - x_ij),
// backprop[i, j] = softmax(x_i)_j - label(i, j), with `label(i, j)` in the compute type.
template <class Label>
void xent_rows(context& ctx, const gpass::tensor& x, Label label) {
  const i64 b = x.sizes()[0], n = x.sizes()[1];
  dispatch<nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
    using C = compute_t<T>;
    const T* px = x.data<T>();
    gpass::tensor& loss = ctx.allocate_output(0, x.element_type(), {b});
    gpass::tensor& back = ctx.allocate_output(1, x.element_type(), {b, n});
    std::vector<C> row(static_cast<std::size_t>(n)), prob(static_cast<std::size_t>(n));
    T* pb = back.data<T>();
    T* ploss = loss.data<T>();
    for (i64 i = 0; i < b; ++i) {
      for (i64 j = 0; j < n; ++j) row[static_cast<std::size_t>(j)] = static_cast<C>(px[i * n + j]);
      const C lse = softmax_row(row.data(), prob.data(), n);
      C sum = 0;
      for (i64 j = 0; j < n; ++j) {
        const C lab = label.template operator()<C>(i, j);
        if (lab != C(0)) sum += lab * (lse - row[static_cast<std::size_t>(j)]);
        pb[i * n + j] = nn_impl::to_elem<T>(prob[static_cast<std::size_t>(j)] - lab);
      }
      ploss[i] = nn_impl::to_elem<T>(sum);
    }
  });
}

}  // namespace grad_impl

inline void register_tf_grad(registry& r) {
  using namespace grad_impl;
  const auto floats = nn_types::dtypes();
  // gradients of activations: ReluGrad(gradients, features), TanhGrad(y, dy), SigmoidGrad(y, dy)
  r.add({.domain = domain, .op = "ReluGrad", .dtypes = floats, .make = [](const kernel_node&) -> fn {
    return same_shape_binary([](auto g, auto x) { return x > decltype(x)(0) ? g : decltype(g)(0); }, "gradients", "features");
  }});
  r.add({.domain = domain, .op = "Relu6Grad", .dtypes = floats, .make = [](const kernel_node&) -> fn {
    return same_shape_binary([](auto g, auto x) { return x > decltype(x)(0) && x < decltype(x)(6) ? g : decltype(g)(0); },
                             "gradients", "features");
  }});
  r.add({.domain = domain, .op = "TanhGrad", .dtypes = floats, .make = [](const kernel_node&) -> fn {
    return same_shape_binary([](auto y, auto dy) { return dy * (decltype(y)(1) - y * y); }, "y", "dy");
  }});
  r.add({.domain = domain, .op = "SigmoidGrad", .dtypes = floats, .make = [](const kernel_node&) -> fn {
    return same_shape_binary([](auto y, auto dy) { return dy * y * (decltype(y)(1) - y); }, "y", "dy");
  }});

  // BiasAddGrad(out_backprop): the sum over every dim but the channel one (last for NHWC,
  // 1 for NCHW)
  r.add({.domain = domain, .op = "BiasAddGrad", .dtypes = floats, .make = [](const kernel_node& n) -> fn {
    const std::string format = n.attr<std::string>("data_format", "NHWC");
    if (format != "NHWC" && format != "NCHW") n.fail("data_format must be NHWC or NCHW, got '" + format + "'");
    const bool nchw = format == "NCHW";
    return [nchw](context& ctx) {
      const gpass::tensor& g = ctx.input(0);
      if (g.rank() < 2) ctx.fail("out_backprop must have rank >= 2, got " + g.shape().to_string());
      const std::size_t c_axis = nchw ? 1 : g.rank() - 1;
      const auto& s = g.sizes();
      i64 outer = 1, inner = 1;
      for (std::size_t d = 0; d < c_axis; ++d) outer *= s[d];
      for (std::size_t d = c_axis + 1; d < s.size(); ++d) inner *= s[d];
      const i64 ch = s[c_axis];
      dispatch<nn_types>(g.element_type(), ctx.node(), [&]<class T>() {
        using C = compute_t<T>;
        std::vector<C> acc(static_cast<std::size_t>(ch), C(0));
        const T* p = g.data<T>();
        for (i64 o = 0; o < outer; ++o)
          for (i64 c = 0; c < ch; ++c)
            for (i64 i = 0; i < inner; ++i) acc[static_cast<std::size_t>(c)] += static_cast<C>(p[(o * ch + c) * inner + i]);
        gpass::tensor& out = ctx.allocate_output(0, g.element_type(), {ch});
        nn_impl::from_compute<T>(acc.data(), out);
      });
    };
  }});

  // SoftmaxCrossEntropyWithLogits(features [B, N], labels [B, N]) -> loss [B], backprop [B, N]
  // (labels broadcast to the features' shape, as TensorFlow allows)
  r.add({.domain = domain, .op = "SoftmaxCrossEntropyWithLogits", .dtypes = floats, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& l = ctx.input(1);
      if (x.rank() != 2) ctx.fail("features must be 2-D [batch, classes], got " + x.shape().to_string());
      if (l.element_type() != x.element_type()) ctx.fail("labels and features have different element types");
      const i64 b = x.sizes()[0], n = x.sizes()[1];
      // labels: [B, N], [1, N], [B, 1], [N] or a scalar, broadcast to [B, N]
      std::vector<i64> ls = l.sizes();
      while (ls.size() < 2) ls.insert(ls.begin(), 1);
      if (ls.size() != 2 || (ls[0] != b && ls[0] != 1) || (ls[1] != n && ls[1] != 1))
        ctx.fail("labels " + l.shape().to_string() + " do not broadcast to features " + x.shape().to_string());
      dispatch<nn_types>(l.element_type(), ctx.node(), [&]<class L>() {
        const L* pl = l.data<L>();
        xent_rows(ctx, x, [&]<class C>(i64 i, i64 j) {
          return static_cast<C>(static_cast<compute_t<L>>(pl[(ls[0] == 1 ? 0 : i) * ls[1] + (ls[1] == 1 ? 0 : j)]));
        });
      });
    };
  }});

  // SparseSoftmaxCrossEntropyWithLogits(features [B, N], labels [B] int32/int64) -> loss [B],
  // backprop [B, N]; a label outside [0, N) is an error (TensorFlow's CPU kernel)
  r.add({.domain = domain, .op = "SparseSoftmaxCrossEntropyWithLogits", .dtypes = floats, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& l = ctx.input(1);
      if (x.rank() != 2) ctx.fail("features must be 2-D [batch, classes], got " + x.shape().to_string());
      if (l.rank() != 1 || l.sizes()[0] != x.sizes()[0])
        ctx.fail("labels " + l.shape().to_string() + " must be 1-D with the batch size of features " + x.shape().to_string());
      const std::vector<i64> lab = int_values(l, ctx.node(), "labels");
      const i64 b = x.sizes()[0], n = x.sizes()[1];
      for (i64 i = 0; i < b; ++i)
        if (lab[static_cast<std::size_t>(i)] < 0 || lab[static_cast<std::size_t>(i)] >= n)
          ctx.fail("label " + std::to_string(lab[static_cast<std::size_t>(i)]) + " of row " + std::to_string(i) +
                   " is outside the valid range [0, " + std::to_string(n) + ")");
      xent_rows(ctx, x, [&]<class C>(i64 i, i64 j) { return j == lab[static_cast<std::size_t>(i)] ? C(1) : C(0); });
    };
  }});

  // BroadcastGradientArgs(s0, s1) -> r0, r1: the axes (of the broadcast shape) to sum each
  // side's gradient over. TensorFlow's rule: equal shapes reduce nothing; otherwise every axis
  // where a side's (left-padded) dim is 1 is reduced, also where both are 1.
  r.add({.domain = domain, .op = "BroadcastGradientArgs", .dtypes = {dtype::int32, dtype::int64}, .type_input = 0,
         .make = [](const kernel_node&) -> fn {
    return [](context& ctx) {
      const gpass::tensor& a = ctx.input(0);
      const gpass::tensor& b = ctx.input(1);
      if (a.rank() != 1 || b.rank() != 1) ctx.fail("s0 and s1 must be 1-D shapes");
      const std::vector<i64> s0 = int_values(a, ctx.node(), "s0"), s1 = int_values(b, ctx.node(), "s1");
      // (the rule the op's value propagation uses, gpass/ops/tf/nn.hpp)
      const auto axes = gpass::detail::tf_ops::broadcast_gradient_axes(s0, s1);
      if (!axes) ctx.fail("incompatible shapes " + shape::of(s0).to_string() + " and " + shape::of(s1).to_string());
      const auto& [r0, r1] = *axes;
      const dtype t = a.element_type();
      for (int k = 0; k < 2; ++k) {
        const auto& v = k == 0 ? r0 : r1;
        gpass::tensor& out = ctx.allocate_output(static_cast<std::size_t>(k), t, {static_cast<i64>(v.size())});
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (t == dtype::int32) out.data<std::int32_t>()[i] = static_cast<std::int32_t>(v[i]);
          else out.data<std::int64_t>()[i] = v[i];
        }
      }
    };
  }});
}

}  // namespace gpass::exec::cpu_detail::tf_detail
