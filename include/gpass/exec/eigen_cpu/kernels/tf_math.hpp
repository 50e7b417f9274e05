// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_math.hpp
/// Eigen CPU kernels of TensorFlow math ops (domain "tf"), on the engines of the ONNX
/// families: Eigen GEMM (linalg.hpp), reductions and ArgMax (reduce.hpp), softmax (nn.hpp);
/// the element-wise ones are in tf_elementwise.hpp.
///
/// MatMul BatchMatMul BatchMatMulV2 BatchMatMulV3 Einsum Sum Mean Max Min Prod All Any
/// EuclideanNorm ArgMax ArgMin Cumsum Softmax LogSoftmax.
///
/// TF semantics: axes arrive as int32/int64 input tensors (negative counts from the end).
/// Private (`gpass::exec::cpu_detail`); the unit `src/tf_math.cpp` registers them.

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/linalg.hpp>
#include <gpass/exec/eigen_cpu/kernels/nn.hpp>
#include <gpass/exec/eigen_cpu/kernels/reduce.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

// ---- matrix products ---------------------------------------------------------------------

using matmul_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int32_t, std::int64_t>;

/// c[b] = op(a[b]) * op(b[b]) for the broadcast batch of a [..., M, K] (or [..., K, M] when
/// `ta`) and b [..., K, N] (or [..., N, K] when `tb`); `broadcast` false requires equal batch
/// dimensions (BatchMatMul v1). Output 0 has element type `out` (the input type unless Tout).
inline void batch_matmul(context& ctx, const gpass::tensor& a, const gpass::tensor& b, bool ta, bool tb, bool broadcast) {
  if (a.rank() < 2 || b.rank() < 2)
    ctx.fail("inputs must have rank >= 2, got sizes " + a.shape().to_string() + " and " + b.shape().to_string());
  if (a.element_type() != b.element_type()) ctx.fail("inputs have different element types");
  const auto& sa = a.sizes();
  const auto& sb = b.sizes();
  const i64 M = ta ? sa.back() : sa[sa.size() - 2], K = ta ? sa[sa.size() - 2] : sa.back();
  const i64 Kb = tb ? sb.back() : sb[sb.size() - 2], N = tb ? sb[sb.size() - 2] : sb.back();
  if (K != Kb)
    ctx.fail("inner dimensions differ: " + a.shape().to_string() + (ta ? " (adjoint)" : "") + " x " + b.shape().to_string() +
             (tb ? " (adjoint)" : ""));
  const std::vector<i64> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  if (!broadcast && ba != bb)
    ctx.fail("batch dimensions differ: " + a.shape().to_string() + " and " + b.shape().to_string());
  const std::vector<i64> batch = broadcast_sizes(ba, bb, ctx.node());
  std::vector<i64> out = batch;
  out.push_back(M);
  out.push_back(N);
  const i64 batches = num_elements(batch);
  std::vector<std::pair<i64, i64>> offs(static_cast<std::size_t>(batches));
  {
    strided_walker<2> w(batch, {broadcast_strides(ba, batch), broadcast_strides(bb, batch)});
    w.seek(0);
    for (i64 i = 0; i < batches; ++i, w.next()) offs[static_cast<std::size_t>(i)] = {w.offset(0), w.offset(1)};
  }
  dispatch<matmul_types>(a.element_type(), ctx.node(), [&]<class T>() {
    if (K == 0) {
      ctx.allocate_output_zeroed(0, a.element_type(), out);
      return;
    }
    gpass::tensor& y = ctx.allocate_output(0, a.element_type(), out);
    if (y.size() == 0) return;
    auto run = [&]<class U>(const U* pa, const U* pb, U* pc) {
      auto one = [&](i64 i, bool par) {
        const auto [oa, ob] = offs[static_cast<std::size_t>(i)];
        linalg::gemm<U>(ctx.policy(),
                        {.M = M, .N = N, .K = K, .a = pa + oa * M * K, .lda = ta ? M : K, .ta = ta, .b = pb + ob * K * N,
                         .ldb = tb ? K : N, .tb = tb, .c = pc + i * M * N, .ldc = N},
                        par);
      };
      if (ctx.policy().threads() > 1 && batches >= ctx.policy().threads()) {
        ctx.policy().parallel_for(batches, static_cast<double>(M * N * K) * linalg::mac_cost, [&](i64 b0, i64 e0) {
          for (i64 i = b0; i < e0; ++i) one(i, false);
        });
      } else {
        for (i64 i = 0; i < batches; ++i) one(i, true);
      }
    };
    if constexpr (linalg::half_like<T>) {
      gpass::tensor af = linalg::convert_tensor<float, T>(a), bf = linalg::convert_tensor<float, T>(b);
      gpass::tensor yf = gpass::tensor::uninitialized(dtype::f32, out);
      run.template operator()<float>(af.data<float>(), bf.data<float>(), yf.data<float>());
      const float* src = yf.data<float>();
      T* dst = y.data<T>();
      for (i64 i = 0; i < y.size(); ++i) dst[i] = static_cast<T>(src[i]);
    } else {
      run.template operator()<T>(a.data<T>(), b.data<T>(), y.data<T>());
    }
  });
}

inline void register_tf_matmul(registry& r) {
  r.add({.domain = domain, .op = "MatMul", .dtypes = matmul_types::dtypes(), .make = [](const kernel_node& n) -> fn {
           const bool ta = flag(n, "transpose_a", false), tb = flag(n, "transpose_b", false);
           // a constant f32 b (a Const) is packed once here, as ONNX Gemm does
           linalg::packed_constant<sgemm::packed_b> pf;
           if (const gpass::tensor* bc = n.constant_input(1);
               bc && bc->element_type() == dtype::f32 && bc->rank() == 2 && bc->size() > 0) {
             const i64 Kb = tb ? bc->sizes()[1] : bc->sizes()[0], Nb = tb ? bc->sizes()[0] : bc->sizes()[1];
             pf = {*bc, std::make_shared<const sgemm::packed_b>(bc->data<float>(), bc->sizes()[1], tb, Kb, Nb)};
           }
           return [ta, tb, pf](context& ctx) {
             const gpass::tensor& a = ctx.input(0);
             const gpass::tensor& b = ctx.input(1);
             if (a.rank() != 2 || b.rank() != 2)
               ctx.fail("inputs must be matrices, got sizes " + a.shape().to_string() + " and " + b.shape().to_string());
             if (const sgemm::packed_b* w = pf.match(b); w && a.element_type() == dtype::f32) {
               const i64 M = ta ? a.sizes()[1] : a.sizes()[0], K = ta ? a.sizes()[0] : a.sizes()[1];
               if (M >= 1 && K == w->depth) {
                 gpass::tensor& y = ctx.allocate_output(0, dtype::f32, {M, w->cols});
                 linalg::packed_gemm(ctx.policy(), *w, a.data<float>(), a.sizes()[1], ta, M, y.data<float>(), w->cols, 1.0f,
                                     false, [](i64, i64, i64, i64) {});
                 return;
               }
             }
             batch_matmul(ctx, a, b, ta, tb, false);
           };
         }});
  auto batched = [](bool broadcast) {
    return [broadcast](const kernel_node& n) -> fn {
      const bool ta = flag(n, "adj_x", false), tb = flag(n, "adj_y", false);
      const dtype tout = type_attr(n, "Tout", dtype::undefined);
      return [ta, tb, broadcast, tout](context& ctx) {
        if (tout != dtype::undefined && tout != ctx.input(0).element_type())
          ctx.fail("Tout " + std::string(to_string(tout)) + " differs from the input type (not supported)");
        batch_matmul(ctx, ctx.input(0), ctx.input(1), ta, tb, broadcast);
      };
    };
  };
  r.add({.domain = domain, .op = "BatchMatMul", .dtypes = matmul_types::dtypes(), .make = batched(false)});
  r.add({.domain = domain, .op = "BatchMatMulV2", .dtypes = matmul_types::dtypes(), .make = batched(true)});
  r.add({.domain = domain, .op = "BatchMatMulV3", .dtypes = matmul_types::dtypes(), .make = batched(true)});
}

// ---- reductions ----------------------------------------------------------------------------

/// The reduced-dimension mask of TF reduction indices (duplicates allowed, negative from the end).
inline std::vector<char> reduction_mask(const gpass::tensor& x, const gpass::tensor& axes, const kernel_node& n) {
  std::vector<char> mask(x.rank(), 0);
  for (i64 d : tf_rules::reduction_axes(vector_ints(axes, n, "reduction_indices"), static_cast<i64>(x.rank()), n))
    mask[static_cast<std::size_t>(d)] = 1;
  return mask;
}

inline fn make_reduction(const kernel_node& n, reduce_detail::rkind k) {
  const bool keep = flag(n, "keep_dims", false);
  return [keep, k](context& ctx) {
    using namespace reduce_detail;
    const gpass::tensor& x = ctx.input(0);
    const reduce_layout l = make_layout(x.sizes(), reduction_mask(x, ctx.input(1), ctx.node()), keep);
    auto body = [&]<class T>() {
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), l.out_sizes);
      run_reduce<T>(ctx.policy(), x, y, l, k);
    };
    if (k == rkind::l2) dispatch<reduce_float_types>(x.element_type(), ctx.node(), body);
    else dispatch<reduce_types>(x.element_type(), ctx.node(), body);
  };
}

/// All / Any: logical and / or of bool elements over the reduced dimensions.
inline fn make_logical_reduction(const kernel_node& n, bool all) {
  const bool keep = flag(n, "keep_dims", false);
  return [keep, all](context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    if (x.element_type() != dtype::bool_) ctx.fail("input must be bool, got " + std::string(to_string(x.element_type())));
    const auto mask = reduction_mask(x, ctx.input(1), ctx.node());
    std::vector<i64> out, full;  // output sizes; the output seen with the input's rank
    for (std::size_t d = 0; d < x.rank(); ++d) {
      full.push_back(mask[d] ? 1 : x.sizes()[d]);
      if (!mask[d] || keep) out.push_back(full.back());
    }
    gpass::tensor& y = ctx.allocate_output(0, dtype::bool_, out);
    bool* o = y.data<bool>();
    std::fill(o, o + y.size(), all);
    if (x.size() == 0) return;
    const bool* p = x.data<bool>();
    strided_walker<1> w(x.sizes(), {broadcast_strides(full, x.sizes())});
    w.seek(0);
    for (i64 i = 0, e = x.size(); i < e; ++i, w.next()) {
      bool& t = o[w.offset(0)];
      t = all ? (t && p[i]) : (t || p[i]);
    }
  };
}

inline void register_tf_reduce(registry& r) {
  using reduce_detail::rkind;
  const std::pair<const char*, rkind> reductions[] = {{"Sum", rkind::sum}, {"Mean", rkind::mean}, {"Max", rkind::max},
                                                      {"Min", rkind::min}, {"Prod", rkind::prod}, {"EuclideanNorm", rkind::l2}};
  for (const auto& [name, k] : reductions) {
    const rkind kind = k;
    r.add({.domain = domain,
           .op = name,
           .dtypes = kind == rkind::l2 ? reduce_detail::reduce_float_types::dtypes() : reduce_detail::reduce_types::dtypes(),
           .make = [kind](const kernel_node& n) -> fn { return make_reduction(n, kind); }});
  }
  r.add({.domain = domain, .op = "All", .dtypes = {dtype::bool_}, .make = [](const kernel_node& n) -> fn { return make_logical_reduction(n, true); }});
  r.add({.domain = domain, .op = "Any", .dtypes = {dtype::bool_}, .make = [](const kernel_node& n) -> fn { return make_logical_reduction(n, false); }});
  auto arg = [](bool is_max) {
    return [is_max](const kernel_node& n) -> fn {
      const dtype out = type_attr(n, "output_type", dtype::int64);
      if (out != dtype::int64 && out != dtype::int32) n.fail("output_type must be int32 or int64, got " + std::string(to_string(out)));
      return [is_max, out](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        if (x.rank() == 0) ctx.fail("input must have rank >= 1");
        const i64 axis = tf_axis(scalar_int(ctx.input(1), ctx.node(), "dimension"), static_cast<i64>(x.rank()), ctx.node(), "dimension");
        if (x.sizes()[static_cast<std::size_t>(axis)] == 0) ctx.fail("cannot take the arg of an empty dimension");
        reduce_detail::arg_into(ctx, x, axis, false, false, is_max, out);
      };
    };
  };
  r.add({.domain = domain, .op = "ArgMax", .dtypes = numeric_types::dtypes(), .make = arg(true)});
  r.add({.domain = domain, .op = "ArgMin", .dtypes = numeric_types::dtypes(), .make = arg(false)});
  // Cumsum / Cumprod (x, axis; exclusive, reverse) are ONNX's CumSum / CumProd with bool attributes
  for (const bool product : {false, true})
    r.add({.domain = domain, .op = product ? "Cumprod" : "Cumsum", .dtypes = reduce_detail::cumsum_types::dtypes(),
           .make = [product](const kernel_node& n) -> fn {
             kernel_node m = n;
             m.attrs["exclusive"] = static_cast<i64>(flag(n, "exclusive", false));
             m.attrs["reverse"] = static_cast<i64>(flag(n, "reverse", false));
             return reduce_detail::make_cumsum(m, product);
           }});
}

/// Einsum: the same equation language as ONNX's (numpy's), so ONNX's kernel.
inline void register_tf_einsum(registry& r) {
  registry onnx;
  linalg::add_einsum(onnx);
  const def* d = onnx.find("", "Einsum", 0, dtype::undefined);
  if (!d) throw error("register_tf: the ONNX Einsum kernel is missing");
  r.add({.domain = domain, .op = "Einsum", .dtypes = d->dtypes, .make = d->make});
}

// ---- softmax -------------------------------------------------------------------------------

inline void register_tf_softmax(registry& r) {
  auto make = [](nn_impl::smax k) {
    return [k](const kernel_node&) -> fn {
      return [k](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        if (x.rank() < 1) ctx.fail("logits must have rank >= 1");
        const i64 len = x.sizes().back();
        const i64 outer = len == 0 ? 0 : x.size() / len;
        dispatch<nn_impl::nn_types>(x.element_type(), ctx.node(), [&]<class T>() {
          gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
          nn_impl::with_compute<T>(x, y, [&](const auto* xi, auto* yo) { nn_impl::smax_run(ctx.policy(), xi, yo, outer, len, 1, k); });
        });
      };
    };
  };
  r.add({.domain = domain, .op = "Softmax", .dtypes = nn_impl::nn_types::dtypes(), .make = make(nn_impl::smax::softmax)});
  r.add({.domain = domain, .op = "LogSoftmax", .dtypes = nn_impl::nn_types::dtypes(), .make = make(nn_impl::smax::log_softmax)});
}

/// Registers the TF matrix products, Einsum, reductions and softmax.
inline void register_tf_linalg_reduce(registry& r) {
  register_tf_matmul(r);
  register_tf_reduce(r);
  register_tf_softmax(r);
  register_tf_einsum(r);
}

}  // namespace gpass::exec::cpu_detail::tf_detail
