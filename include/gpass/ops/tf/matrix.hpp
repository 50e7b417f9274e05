// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file matrix.hpp
/// TensorFlow's batched matrix ops on diagonals: MatrixDiag, MatrixDiagPart, MatrixSetDiag
/// (the main diagonal) and their V2 / V3 forms (a band of diagonals `k`, a scalar or
/// `[lower, upper]`; MatrixDiag's `num_rows` / `num_cols`, -1 for the smallest fitting size;
/// `padding_value`; V3's `align` of the diagonals shorter than the longest, V2 as
/// `LEFT_LEFT`); MatrixDeterminant; the spectral ops FFT, IFFT, RFFT, IRFFT and their 2D / 3D
/// forms. Shapes use the values of `k`, `num_rows` and `num_cols`
/// when they are known and check them as TensorFlow's kernels do.
/// \code
///   // d: f32[2,3,4], k = [-1, 1], num_rows = num_cols = -1
///   //   ->  MatrixDiagV3(d, k, num_rows, num_cols, pad): f32[2,5,5]
/// \endcode

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/ops/tf/common.hpp>

namespace gpass {

/// Registers the TensorFlow diagonal ops and MatrixDeterminant into `r` (see the file comment).
void register_tf_matrix_ops(op_registry& r);

namespace detail::tf_ops {

// Fails unless input `i` (when its rank is known) has a rank in [lo, hi].
inline void rank_between(infer_context& c, std::size_t i, std::size_t lo, std::size_t hi, const char* what) {
  auto r = c.input_rank(i);
  if (!r || (*r >= lo && *r <= hi)) return;
  const std::string want = lo == hi        ? "rank " + std::to_string(lo)
                           : hi == SIZE_MAX ? "rank >= " + std::to_string(lo)
                                            : "a rank in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  c.fail(std::string(what) + " must have " + want + ", got " + c.input_shape(i).to_string());
}

// The band `k` (input `i`) as (lower, upper) when its value is known; a bad band fails.
inline std::optional<std::pair<std::int64_t, std::int64_t>> diag_band(infer_context& c, std::size_t i) {
  rank_between(c, i, 0, 1, "k");
  auto k = c.input_ints(i);
  if (!k) return std::nullopt;
  if (k->empty() || k->size() > 2) c.fail("k must have one or two elements, has " + std::to_string(k->size()));
  for (std::int64_t x : *k)  // TensorFlow's k is int32 (and the arithmetic below stays far from overflow)
    if (x < INT32_MIN || x > INT32_MAX) c.fail("k value " + std::to_string(x) + " does not fit in int32");
  const std::int64_t lo = k->front(), hi = k->back();
  if (lo > hi)
    c.fail("k's lower diagonal " + std::to_string(lo) + " is above its upper diagonal " + std::to_string(hi));
  return std::pair{lo, hi};
}

// Whether the band for input `i` is known to be one diagonal (a scalar or one-element `k`).
inline bool single_diag_k(infer_context& c, std::size_t i) {
  const shape& s = c.input_shape(i);
  return s.has_rank() && (s.rank() == 0 || (s.rank() == 1 && s[0].is_known() && s[0].value() == 1));
}

// Diagonals `lo` and `hi` must lie in a rows x cols matrix (0 always may, for empty matrices).
inline void check_band_fits(infer_context& c, const dim& rows, const dim& cols, std::int64_t lo, std::int64_t hi) {
  if (!rows.is_known() || !cols.is_known()) return;
  for (std::int64_t d : {lo, hi})
    if (d != 0 && (d <= -rows.value() || d >= cols.value()))
      c.fail("diagonal " + std::to_string(d) + " is outside a " + rows.to_string() + "x" + cols.to_string() +
             " matrix (k must be in (" + std::to_string(-rows.value()) + ", " + cols.to_string() + "))");
}

// min / max of two dims: known when both are, the dim itself when they are equal, else a
// symbol of the node named `purpose` when neither is unknown, else unknown.
inline dim pick_dim(infer_context& c, const dim& a, const dim& b, bool want_min, const char* purpose) {
  if (a.is_known() && b.is_known()) return want_min ? std::min(a.value(), b.value()) : std::max(a.value(), b.value());
  if (a == b) return a;
  if (!a.is_unknown() && !b.is_unknown()) return c.fresh_dim(purpose);
  return dim();
}

// The longest diagonal of band [lo, hi] in a rows x cols matrix.
inline dim longest_diag(infer_context& c, const dim& rows, const dim& cols, std::int64_t lo, std::int64_t hi) {
  return pick_dim(c, add_dims(rows, int_dim(std::min<std::int64_t>(hi, 0))),
                  sub_dims(cols, int_dim(std::max<std::int64_t>(lo, 0))), true, "diag_len");
}

// Fails when `got` and `want` are both known and differ.
inline void same_known(infer_context& c, const dim& got, const dim& want, const std::string& what) {
  if (got.is_known() && want.is_known() && got.value() != want.value())
    c.fail(what + " is " + got.to_string() + ", expected " + want.to_string());
}

// MatrixDiag(diagonal): [..., N] -> [..., N, N].
inline void matrix_diag_infer(infer_context& c) {
  rank_between(c, 0, 1, SIZE_MAX, "diagonal");
  const shape& d = c.input_shape(0);
  if (!d.has_rank()) return;
  std::vector<dim> out = d.dims();
  out.push_back(d[d.rank() - 1]);
  c.set_shape(0, shape(std::move(out)));
}

// MatrixDiagV2/V3(diagonal, k, num_rows, num_cols, padding_value): the band's diagonals
// ([..., N] for one, [..., upper - lower + 1, N] for several) into [..., num_rows, num_cols].
inline void matrix_diag_v2_infer(infer_context& c) {
  rank_between(c, 0, 1, SIZE_MAX, "diagonal");
  rank_between(c, 2, 0, 0, "num_rows");
  rank_between(c, 3, 0, 0, "num_cols");
  rank_between(c, 4, 0, 0, "padding_value");
  const shape& d = c.input_shape(0);
  auto band = diag_band(c, 1);
  if (!d.has_rank()) return;
  if (!band) {  // one diagonal gives rank + 1, several keep the rank
    if (d.rank() == 1 || single_diag_k(c, 1)) c.set_shape(0, shape::unknown_dims(d.rank() + 1));
    return;
  }
  const auto [lo, hi] = *band;
  const std::size_t r = d.rank();
  if (lo < hi) {
    if (r < 2)
      c.fail("diagonal must have rank >= 2 for the " + std::to_string(hi - lo + 1) + " diagonals of k, got " +
             d.to_string());
    same_known(c, d[r - 2], dim(hi - lo + 1), "the number of diagonals (diagonal's dim " + std::to_string(r - 2) + ")");
  }
  const dim len = d[r - 1];
  const dim min_rows = sub_dims(len, int_dim(std::min<std::int64_t>(hi, 0)));
  const dim min_cols = add_dims(len, int_dim(std::max<std::int64_t>(lo, 0)));
  const auto nr = c.input_int(2), nc = c.input_int(3);
  if (nr && *nr < -1) c.fail("num_rows must be -1 or a size, got " + std::to_string(*nr));
  if (nc && *nc < -1) c.fail("num_cols must be -1 or a size, got " + std::to_string(*nc));
  dim rows = nr && *nr >= 0 ? dim(*nr) : dim(), cols = nc && *nc >= 0 ? dim(*nc) : dim();
  if (nr && nc && *nr == -1 && *nc == -1) rows = cols = pick_dim(c, min_rows, min_cols, false, "size");
  else if (nr && *nr == -1 && nc) rows = min_rows;
  else if (nc && *nc == -1 && nr) cols = min_cols;
  if (rows.is_known() && min_rows.is_known() && rows.value() < min_rows.value())
    c.fail("num_rows " + rows.to_string() + " is less than the " + min_rows.to_string() + " rows the diagonals need");
  if (cols.is_known() && min_cols.is_known() && cols.value() < min_cols.value())
    c.fail("num_cols " + cols.to_string() + " is less than the " + min_cols.to_string() +
           " columns the diagonals need");
  if (rows.is_known() && cols.is_known() && min_rows.is_known() && min_cols.is_known() &&
      rows.value() != min_rows.value() && cols.value() != min_cols.value())
    c.fail("num_rows " + rows.to_string() + " and num_cols " + cols.to_string() +
           " do not fit the diagonals: one of them must be the least size (" + min_rows.to_string() + " rows or " +
           min_cols.to_string() + " columns)");
  std::vector<dim> out(d.dims().begin(), d.dims().end() - (lo == hi ? 1 : 2));
  out.push_back(rows);
  out.push_back(cols);
  c.set_shape(0, shape(std::move(out)));
}

// MatrixDiagPart(input) and V2/V3(input, k, padding_value): [..., M, N] -> [..., L] for one
// diagonal, [..., upper - lower + 1, L] for several, L the longest diagonal of the band.
inline void matrix_diag_part_infer(infer_context& c) {
  rank_between(c, 0, 2, SIZE_MAX, "input");
  const bool v1 = c.num_inputs() == 1;
  if (!v1) rank_between(c, 2, 0, 0, "padding_value");
  const auto band = v1 ? std::optional(std::pair<std::int64_t, std::int64_t>{0, 0}) : diag_band(c, 1);
  const shape& s = c.input_shape(0);
  if (!s.has_rank()) return;
  const std::size_t r = s.rank();
  if (!band) {
    if (single_diag_k(c, 1)) c.set_shape(0, shape::unknown_dims(r - 1));
    return;
  }
  const auto [lo, hi] = *band;
  check_band_fits(c, s[r - 2], s[r - 1], lo, hi);
  std::vector<dim> out(s.dims().begin(), s.dims().end() - 2);
  if (lo < hi) out.push_back(dim(hi - lo + 1));
  out.push_back(longest_diag(c, s[r - 2], s[r - 1], lo, hi));
  c.set_shape(0, shape(std::move(out)));
}

// MatrixSetDiag(input, diagonal) and V2/V3(input, diagonal, k): the input's shape; the
// diagonal must be what MatrixDiagPart of the input gives for the band.
inline void matrix_set_diag_infer(infer_context& c) {
  rank_between(c, 0, 2, SIZE_MAX, "input");
  rank_between(c, 1, 1, SIZE_MAX, "diagonal");
  const bool v1 = c.num_inputs() == 2;
  const auto band = v1 ? std::optional(std::pair<std::int64_t, std::int64_t>{0, 0}) : diag_band(c, 2);
  shape s = c.input_shape(0);
  const shape& d = c.input_shape(1);
  if (s.has_rank()) {
    const std::size_t r = s.rank();
    // one diagonal: rank r - 1; several: rank r; k unknown: either
    const bool one = band && band->first == band->second, several = band && band->first < band->second;
    rank_between(c, 1, several ? r : r - 1, one ? r - 1 : r, "diagonal");
    if (d.has_rank())  // the leading dims are the batch either way
      for (std::size_t i = 0; i + 2 < r; ++i)
        s[i] = c.unify(s[i], d[i], "(dim " + std::to_string(i) + " of input and diagonal)");
    if (band) {
      const auto [lo, hi] = *band;
      check_band_fits(c, s[r - 2], s[r - 1], lo, hi);
      if (d.has_rank() && lo < hi)
        same_known(c, d[r - 2], dim(hi - lo + 1),
                   "the number of diagonals (diagonal's dim " + std::to_string(r - 2) + ")");
      if (d.has_rank())
        same_known(c, d[d.rank() - 1], longest_diag(c, s[r - 2], s[r - 1], lo, hi),
                   "the diagonal length (diagonal's last dim)");
    }
    c.set_shape(0, std::move(s));
  } else if (band && d.has_rank()) {
    const std::size_t keep = band->first == band->second ? 1 : 2;
    if (d.rank() < keep) c.fail("diagonal must have rank >= " + std::to_string(keep) + ", got " + d.to_string());
    std::vector<dim> out(d.dims().begin(), d.dims().end() - static_cast<std::ptrdiff_t>(keep));
    out.resize(out.size() + 2);
    c.set_shape(0, shape(std::move(out)));
  }
}

// MatrixDeterminant(input): [..., M, M] -> [...].
inline void matrix_determinant_infer(infer_context& c) {
  rank_between(c, 0, 2, SIZE_MAX, "input");
  const shape& s = c.input_shape(0);
  if (!s.has_rank()) return;
  const std::size_t r = s.rank();
  c.unify(s[r - 2], s[r - 1], "(input matrices must be square)");
  c.set_shape(0, shape(std::vector<dim>(s.dims().begin(), s.dims().end() - 2)));
}

// FFT* / IFFT*: the input's shape; RFFT* / IRFFT*: the innermost k dims from fft_length (the
// last one fft_length / 2 + 1 for RFFT), unknown while fft_length is.
inline void fft_infer(infer_context& c, int k, bool real, bool inverse) {
  shape x = c.input_shape(0);
  if (x.has_rank() && x.rank() < static_cast<std::size_t>(k))
    c.fail("input must be at least rank " + std::to_string(k) + ", got " + x.to_string());
  if (!real || !x.has_rank()) return c.set_shape(0, x);
  const std::size_t first = x.rank() - static_cast<std::size_t>(k);
  if (auto len = c.input_ints(1)) {
    if (len->size() != static_cast<std::size_t>(k))
      c.fail("fft_length must have " + std::to_string(k) + " values, got " + std::to_string(len->size()));
    for (int d = 0; d < k; ++d) {
      const std::int64_t n = (*len)[static_cast<std::size_t>(d)];
      if (n < 0) c.fail("fft_length must >= 0, got " + std::to_string(n));
      x[first + static_cast<std::size_t>(d)] = dim(!inverse && d == k - 1 ? (n == 0 ? 0 : n / 2 + 1) : n);
    }
  } else {
    for (std::size_t d = first; d < x.rank(); ++d) x[d] = dim::unknown();
  }
  c.set_shape(0, x);
}

}  // namespace detail::tf_ops
}  // namespace gpass

inline void gpass::register_tf_matrix_ops(op_registry& r) {
  using namespace detail::tf_ops;
  const std::string right_left = "RIGHT_LEFT";  // TensorFlow's default align
  tf_op("MatrixDiag").in("diagonal:T").out("output:T").type_attr("T").infer(matrix_diag_infer)
      .doc("A batch of square matrices with `diagonal` on the main diagonal, zeros elsewhere.").add(r);
  tf_op("MatrixDiagV2").in("diagonal:T").in("k:i32").in("num_rows:i32").in("num_cols:i32").in("padding_value:T")
      .out("output:T").type_attr("T").infer(matrix_diag_v2_infer).add(r);
  tf_op("MatrixDiagV3").in("diagonal:T").in("k:i32").in("num_rows:i32").in("num_cols:i32").in("padding_value:T")
      .out("output:T").type_attr("T").attr("align", "string", right_left).infer(matrix_diag_v2_infer)
      .doc("Matrices of `num_rows` x `num_cols` holding the diagonals of band `k`, `padding_value` elsewhere.").add(r);
  tf_op("MatrixDiagPart").in("input:T").out("diagonal:T").type_attr("T").infer(matrix_diag_part_infer).add(r);
  tf_op("MatrixDiagPartV2").in("input:T").in("k:i32").in("padding_value:T").out("diagonal:T").type_attr("T")
      .infer(matrix_diag_part_infer).add(r);
  tf_op("MatrixDiagPartV3").in("input:T").in("k:i32").in("padding_value:T").out("diagonal:T").type_attr("T")
      .attr("align", "string", right_left).infer(matrix_diag_part_infer)
      .doc("The diagonals of band `k` of each matrix, the shorter ones padded with `padding_value`.").add(r);
  tf_op("MatrixSetDiag").in("input:T").in("diagonal:T").out("output:T").type_attr("T").infer(matrix_set_diag_infer)
      .add(r);
  tf_op("MatrixSetDiagV2").in("input:T").in("diagonal:T").in("k:i32").out("output:T").type_attr("T")
      .infer(matrix_set_diag_infer).add(r);
  tf_op("MatrixSetDiagV3").in("input:T").in("diagonal:T").in("k:i32").out("output:T").type_attr("T")
      .attr("align", "string", right_left).infer(matrix_set_diag_infer)
      .doc("`input` with the diagonals of band `k` replaced by `diagonal`.").add(r);
  tf_op("MatrixDeterminant").in("input:T").out("output:T").type_attr("T").infer(matrix_determinant_infer)
      .doc("The determinant of each square matrix (LU with partial pivoting; an empty matrix has 1).").add(r);

  // the spectral ops: FFT / IFFT of the innermost 1-3 dims, RFFT / IRFFT with fft_length
  for (int k = 1; k <= 3; ++k) {
    const std::string suffix = k == 1 ? "" : std::to_string(k) + "D";
    for (const char* name : {"FFT", "IFFT"})
      tf_op(name + suffix).in("input:Tcomplex").out("output:Tcomplex").type_attr("Tcomplex", dtype::complex64)
          .infer([k](infer_context& c) { fft_infer(c, k, false, false); }).add(r);
    tf_op("RFFT" + suffix).in("input:Treal").in("fft_length:i32").out("output:Tcomplex").type_attr("Treal", dtype::f32)
        .type_attr("Tcomplex", dtype::complex64).infer([k](infer_context& c) { fft_infer(c, k, true, false); }).add(r);
    tf_op("IRFFT" + suffix).in("input:Tcomplex").in("fft_length:i32").out("output:Treal").type_attr("Treal", dtype::f32)
        .type_attr("Tcomplex", dtype::complex64).infer([k](infer_context& c) { fft_infer(c, k, true, true); }).add(r);
  }
}
