// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_matrix.hpp
/// Eigen CPU kernels of TensorFlow's diagonal ops and MatrixDeterminant (domain "tf"), with
/// TensorFlow's CPU semantics:
///
/// MatrixDiag, MatrixDiagPart, MatrixSetDiag and their V2 / V3 forms: a band `k` of
/// diagonals (a scalar, or `[lower, upper]`), stored one per row from the upper one down;
/// the shorter diagonals of a band aligned as V3's `align` says (superdiagonals first,
/// subdiagonals second; V2 is `LEFT_LEFT`), the rest of the row `padding_value`;
/// MatrixDiag's `num_rows` / `num_cols` (-1: the least size that holds the band, square when
/// both are -1). Every POD element type (numbers and bool).
///
/// MatrixDeterminant (f32, f64) as TensorFlow computes it: Eigen's PartialPivLU in the
/// element type, then sign * exp(sum log |u_ii|) with the signs of the permutation and of the
/// pivots (a zero pivot gives a zero of that sign; an empty matrix 1).
///
/// Bad `k`, sizes or shapes are errors naming the node, as on TensorFlow's CPU (the diagonal
/// ops' rules are `tf_rules`', shared with the CUDA kernels).
/// Private (`gpass::exec::cpu_detail`).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <Eigen/LU>

#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

namespace matrix_detail {

/// TensorFlow's POD types that gpass has: the diagonal ops' element types.
using pod_types = type_list<float, double, Eigen::half, Eigen::bfloat16, std::int8_t, std::int16_t, std::int32_t,
                            std::int64_t, std::uint8_t, std::uint16_t, std::uint32_t, std::uint64_t, bool>;

using alignment = tf_rules::diag_alignment;
using band = tf_rules::diag_band;

/// The band [lower, upper] of input `k`.
inline std::pair<i64, i64> read_band(const gpass::tensor& k, const kernel_node& n) {
  return tf_rules::diag_band_ends(vector_ints(k, n, "k"), n);
}

/// The product of `sizes[0, e)` (sizes of a tensor that exists: no overflow).
inline i64 batch_of(const std::vector<i64>& sizes, std::size_t e) {
  i64 p = 1;
  for (std::size_t i = 0; i < e; ++i) p *= sizes[i];
  return p;
}

/// The one value of `padding_value` (input `i`), of the diagonal's element type.
template <class T>
T padding(const context& ctx, std::size_t i, dtype want) {
  const gpass::tensor& p = ctx.input(i);
  tf_rules::check_diag_padding(p.sizes(), p.element_type(), want, ctx.node());
  return p.data<T>()[0];
}

// MatrixDiag / V2 / V3(diagonal, k, num_rows, num_cols, padding_value)
inline void matrix_diag(context& ctx, bool v1, alignment align) {
  const gpass::tensor& x = ctx.input(0);
  const kernel_node& node = ctx.node();
  std::pair<i64, i64> k{0, 0};
  i64 rows = -1, cols = -1;
  if (!v1) {
    k = read_band(ctx.input(1), node);
    rows = scalar_int(ctx.input(2), node, "num_rows");
    cols = scalar_int(ctx.input(3), node, "num_cols");
  }
  const tf_rules::diag_plan plan = tf_rules::plan_matrix_diag(x.sizes(), k, rows, cols, align, node);
  const band& b = plan.b;
  const i64 batch = plan.batch;
  gpass::tensor& y = ctx.allocate_output(0, x.element_type(), plan.out);
  dispatch<pod_types>(x.element_type(), node, [&]<class T>() {
    const T pad = v1 ? T{} : padding<T>(ctx, 4, x.element_type());
    const T* in = x.data<T>();
    T* o = y.data<T>();
    std::fill(o, o + y.size(), pad);
    if (y.size() == 0) return;
    const i64 mat = b.rows * b.cols, diags = b.count() * b.len;  // within the sizes of tensors that exist
    for (i64 k = 0; k < batch; ++k) b.each([&](i64 at, i64 from) { o[k * mat + at] = in[k * diags + from]; });
  });
}

// MatrixDiagPart / V2 / V3(input, k, padding_value)
inline void matrix_diag_part(context& ctx, bool v1, alignment align) {
  const gpass::tensor& x = ctx.input(0);
  const kernel_node& node = ctx.node();
  const band b = tf_rules::diag_band_of_matrices(x.sizes(), v1 ? std::pair<i64, i64>{0, 0} : read_band(ctx.input(1), node), align, node);
  const auto& xs = x.sizes();
  const i64 batch = batch_of(xs, xs.size() - 2);
  const std::vector<i64> out = b.storage_sizes(xs);
  gpass::tensor& y = ctx.allocate_output(0, x.element_type(), std::move(out));
  dispatch<pod_types>(x.element_type(), node, [&]<class T>() {
    const T pad = v1 ? T{} : padding<T>(ctx, 2, x.element_type());
    const T* in = x.data<T>();
    T* o = y.data<T>();
    std::fill(o, o + y.size(), pad);
    if (x.size() == 0) return;
    const i64 mat = b.rows * b.cols, diags = b.count() * b.len;
    for (i64 k = 0; k < batch; ++k) b.each([&](i64 at, i64 to) { o[k * diags + to] = in[k * mat + at]; });
  });
}

// MatrixSetDiag / V2 / V3(input, diagonal, k)
inline void matrix_set_diag(context& ctx, bool v1, alignment align) {
  const gpass::tensor& x = ctx.input(0);
  const gpass::tensor& dg = ctx.input(1);
  const kernel_node& node = ctx.node();
  const band b = tf_rules::plan_matrix_set_diag(x.sizes(), x.element_type(), dg.sizes(), dg.element_type(),
                                                 v1 ? std::pair<i64, i64>{0, 0} : read_band(ctx.input(2), node), align, node);
  const auto& xs = x.sizes();
  const i64 batch = batch_of(xs, xs.size() - 2);
  gpass::tensor& y = ctx.allocate_output(0, x.element_type(), xs);
  dispatch<pod_types>(x.element_type(), node, [&]<class T>() {
    const T* d = dg.data<T>();
    T* o = y.data<T>();
    std::copy_n(x.data<T>(), x.size(), o);
    if (x.size() == 0) return;
    const i64 mat = b.rows * b.cols, diags = b.count() * b.len;
    for (i64 k = 0; k < batch; ++k) b.each([&](i64 at, i64 from) { o[k * mat + at] = d[k * diags + from]; });
  });
}

/// The determinant of the n x n row-major matrix at `p`, as TensorFlow's CPU kernel computes it:
/// sign * exp(log |det|), the sign that of the row permutation times those of the pivots (0 for
/// a zero pivot, so a singular matrix may give -0; NaN for a NaN pivot), nothing clamped (TF 2.21).
template <class T>
T tf_determinant(const T* p, i64 n) {
  using matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  if (n == 0) return T(1);
  // TensorFlow copies its row-major map into a column-major matrix, then factors that
  const matrix a = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(p, n, n);
  const Eigen::PartialPivLU<matrix> lu(a);
  const auto diag = lu.matrixLU().diagonal().array().eval();
  const T log_abs = diag.cwiseAbs().eval().log().sum();
  T sign = static_cast<T>(lu.permutationP().determinant());
  for (i64 i = 0; i < n; ++i) {
    const T d = diag(i);
    sign *= std::isnan(d) ? d : d > 0 ? T(1) : d < 0 ? T(-1) : T(0);
  }
  return sign * std::exp(log_abs);
}

}  // namespace matrix_detail

/// Registers the kernels of this file (see the file comment).
inline void register_tf_matrix(registry& r) {
  using namespace matrix_detail;
  using op_fn = void (*)(context&, bool, alignment);
  const std::pair<const char*, op_fn> families[] = {
      {"MatrixDiag", matrix_diag}, {"MatrixDiagPart", matrix_diag_part}, {"MatrixSetDiag", matrix_set_diag}};
  for (const auto& [base, run] : families)
    for (const char* suffix : {"", "V2", "V3"}) {
      const bool v1 = *suffix == '\0';
      r.add({.domain = domain, .op = std::string(base) + suffix, .dtypes = pod_types::dtypes(),
             .make = [v1, run](const kernel_node& n) -> fn {
               const alignment a = tf_rules::read_diag_alignment(n);
               return [v1, run, a](context& ctx) { run(ctx, v1, a); };
             }});
    }
  r.add({.domain = domain, .op = "MatrixDeterminant", .dtypes = type_list<float, double>::dtypes(),
         .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const gpass::tensor& x = ctx.input(0);
             const auto& xs = x.sizes();
             if (xs.size() < 2) ctx.fail("input must have rank >= 2, got " + x.shape().to_string());
             const i64 n = xs.back();
             if (xs[xs.size() - 2] != n) ctx.fail("input matrices must be square, got " + x.shape().to_string());
             gpass::tensor& y = ctx.allocate_output(0, x.element_type(), std::vector<i64>(xs.begin(), xs.end() - 2));
             dispatch<type_list<float, double>>(x.element_type(), ctx.node(), [&]<class T>() {
               const T* p = x.data<T>();
               T* o = y.data<T>();
               for (i64 k = 0; k < y.size(); ++k) o[k] = tf_determinant(p + k * n * n, n);
             });
           };
         }});
}

}  // namespace gpass::exec::cpu_detail::tf_detail
