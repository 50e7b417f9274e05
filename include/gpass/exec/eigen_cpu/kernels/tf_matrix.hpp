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
/// Bad `k`, sizes or shapes are errors naming the node, as on TensorFlow's CPU.
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

/// Where the shorter diagonals of a band sit in their rows (V3's `align`).
struct alignment {
  bool super_left = true, sub_left = true;  // V1 and V2: LEFT_LEFT
};

inline alignment read_alignment(const kernel_node& n) {
  if (!n.has_attr("align")) return {};
  const std::string a = n.attr<std::string>("align");
  if (a == "LEFT_LEFT") return {true, true};
  if (a == "LEFT_RIGHT") return {true, false};
  if (a == "RIGHT_LEFT") return {false, true};
  if (a == "RIGHT_RIGHT") return {false, false};
  n.fail("align must be LEFT_RIGHT, RIGHT_LEFT, LEFT_LEFT or RIGHT_RIGHT, got '" + a + "'");
}

/// The band [lower, upper] of input `k` (a scalar or one or two values, within int32 as
/// TensorFlow's int32 `k`).
inline std::pair<i64, i64> read_band(const gpass::tensor& k, const kernel_node& n) {
  const auto v = vector_ints(k, n, "k");
  if (v.empty() || v.size() > 2) n.fail("k must have one or two elements, has " + std::to_string(v.size()));
  for (i64 x : v)
    if (x < INT32_MIN || x > INT32_MAX) n.fail("k value " + std::to_string(x) + " does not fit in int32");
  if (v.front() > v.back())
    n.fail("k's lower diagonal " + std::to_string(v.front()) + " is above its upper diagonal " +
           std::to_string(v.back()));
  return {v.front(), v.back()};
}

/// Both band ends must lie in a rows x cols matrix (0 always may, for empty matrices).
inline void check_band_fits(const kernel_node& n, i64 rows, i64 cols, i64 lo, i64 hi) {
  for (i64 d : {lo, hi})
    if (d != 0 && (d <= -rows || d >= cols))
      n.fail("diagonal " + std::to_string(d) + " is outside a " + std::to_string(rows) + "x" + std::to_string(cols) +
             " matrix (k must be in (" + std::to_string(-rows) + ", " + std::to_string(cols) + "))");
}

/// The geometry of a band in a batch of rows x cols matrices, and of its diagonals' storage:
/// diagonal d (from `hi` down to `lo`) is row `hi - d` of `len` elements.
struct band {
  i64 lo = 0, hi = 0, rows = 0, cols = 0, len = 0;
  alignment align;
  i64 count() const { return hi - lo + 1; }
  /// Diagonal d's length and where it starts in its storage row.
  std::pair<i64, i64> extent(i64 d) const {
    const i64 n = std::max<i64>(0, std::min(rows + std::min<i64>(d, 0), cols - std::max<i64>(d, 0)));
    const bool left = (d >= 0 && align.super_left) || (d <= 0 && align.sub_left);
    return {n, left ? 0 : len - n};
  }
  /// The sizes of the band's storage for matrices of `sizes` (batch dims, then [count,] len).
  std::vector<i64> storage_sizes(const std::vector<i64>& sizes) const {
    std::vector<i64> out(sizes.begin(), sizes.end() - 2);
    if (lo < hi) out.push_back(count());
    out.push_back(len);
    return out;
  }
  /// Calls f(matrix offset, storage offset) for each element of the band in one matrix.
  template <class F>
  void each(F&& f) const {
    for (i64 d = hi; d >= lo; --d) {
      const auto [n, at] = extent(d);
      const i64 row0 = std::max<i64>(0, -d), col0 = std::max<i64>(0, d), base = (hi - d) * len + at;
      for (i64 e = 0; e < n; ++e) f((row0 + e) * cols + col0 + e, base + e);
    }
  }
};

/// The band `k` (input `k_input`; V1: the main diagonal) of input 0's matrices (rank >= 2),
/// checked to lie in them.
inline band band_of_matrices(const context& ctx, std::size_t k_input, bool v1, alignment align) {
  const auto& xs = ctx.input(0).sizes();
  band b{.align = align};
  if (!v1) std::tie(b.lo, b.hi) = read_band(ctx.input(k_input), ctx.node());
  b.rows = xs[xs.size() - 2];
  b.cols = xs[xs.size() - 1];
  check_band_fits(ctx.node(), b.rows, b.cols, b.lo, b.hi);
  b.len = std::max<i64>(0, std::min(b.rows + std::min<i64>(b.hi, 0), b.cols - std::max<i64>(b.lo, 0)));
  return b;
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
  if (p.size() != 1 || p.rank() > 1) ctx.fail("padding_value must be a scalar, got sizes " + p.shape().to_string());
  if (p.element_type() != want)
    ctx.fail("padding_value is " + std::string(to_string(p.element_type())) + ", the diagonal " +
             std::string(to_string(want)));
  return p.data<T>()[0];
}

// MatrixDiag / V2 / V3(diagonal, k, num_rows, num_cols, padding_value)
inline void matrix_diag(context& ctx, bool v1, alignment align) {
  const gpass::tensor& x = ctx.input(0);
  const kernel_node& node = ctx.node();
  if (x.rank() < 1) ctx.fail("diagonal must have rank >= 1, got " + x.shape().to_string());
  band b{.align = align};
  i64 rows = -1, cols = -1;
  if (!v1) {
    std::tie(b.lo, b.hi) = read_band(ctx.input(1), node);
    rows = scalar_int(ctx.input(2), node, "num_rows");
    cols = scalar_int(ctx.input(3), node, "num_cols");
  }
  const auto& xs = x.sizes();
  const std::size_t r = xs.size();
  if (b.lo < b.hi && (r < 2 || xs[r - 2] != b.count()))
    ctx.fail("diagonal " + x.shape().to_string() + " does not hold the " + std::to_string(b.count()) +
             " diagonals of k [" + std::to_string(b.lo) + ", " + std::to_string(b.hi) +
             "] (its dim -2 must be their number)");
  b.len = xs[r - 1];
  const i64 min_rows = b.len - std::min<i64>(b.hi, 0), min_cols = b.len + std::max<i64>(b.lo, 0);
  if (rows < -1 || (rows != -1 && rows < min_rows))
    ctx.fail("num_rows " + std::to_string(rows) + " is less than the " + std::to_string(min_rows) +
             " rows the diagonals need");
  if (cols < -1 || (cols != -1 && cols < min_cols))
    ctx.fail("num_cols " + std::to_string(cols) + " is less than the " + std::to_string(min_cols) +
             " columns the diagonals need");
  if (rows == -1 && cols == -1) rows = cols = std::max(min_rows, min_cols);
  else if (rows == -1) rows = min_rows;
  else if (cols == -1) cols = min_cols;
  if (rows != min_rows && cols != min_cols)
    ctx.fail("num_rows " + std::to_string(rows) + " and num_cols " + std::to_string(cols) +
             " do not fit the diagonals: one of them must be the least size (" + std::to_string(min_rows) +
             " rows or " + std::to_string(min_cols) + " columns)");
  b.rows = rows;
  b.cols = cols;
  const std::size_t lead = b.lo == b.hi ? r - 1 : r - 2;
  std::vector<i64> out(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(lead));
  const i64 batch = batch_of(xs, lead);
  out.push_back(rows);
  out.push_back(cols);
  gpass::tensor& y = ctx.allocate_output(0, x.element_type(), std::move(out));
  dispatch<pod_types>(x.element_type(), node, [&]<class T>() {
    const T pad = v1 ? T{} : padding<T>(ctx, 4, x.element_type());
    const T* in = x.data<T>();
    T* o = y.data<T>();
    std::fill(o, o + y.size(), pad);
    if (y.size() == 0) return;
    const i64 mat = rows * cols, diags = b.count() * b.len;  // within the sizes of tensors that exist
    for (i64 k = 0; k < batch; ++k) b.each([&](i64 at, i64 from) { o[k * mat + at] = in[k * diags + from]; });
  });
}

// MatrixDiagPart / V2 / V3(input, k, padding_value)
inline void matrix_diag_part(context& ctx, bool v1, alignment align) {
  const gpass::tensor& x = ctx.input(0);
  const kernel_node& node = ctx.node();
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, got " + x.shape().to_string());
  const band b = band_of_matrices(ctx, 1, v1, align);
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
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, got " + x.shape().to_string());
  if (dg.rank() < 1) ctx.fail("diagonal must have rank >= 1, got " + dg.shape().to_string());
  if (dg.element_type() != x.element_type())
    ctx.fail("diagonal is " + std::string(to_string(dg.element_type())) + ", input " +
             std::string(to_string(x.element_type())));
  const band b = band_of_matrices(ctx, 2, v1, align);
  const auto& xs = x.sizes();
  const std::vector<i64> want = b.storage_sizes(xs);
  if (dg.sizes() != want)
    ctx.fail("diagonal has shape " + dg.shape().to_string() + ", expected " + shape::of(want).to_string() +
             " for input " + x.shape().to_string() + " and k [" + std::to_string(b.lo) + ", " + std::to_string(b.hi) +
             "]");
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
               const alignment a = read_alignment(n);
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
