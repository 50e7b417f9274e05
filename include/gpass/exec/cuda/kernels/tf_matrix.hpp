// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_matrix.hpp
/// CUDA kernels of TensorFlow's diagonal ops (domain "tf"): MatrixDiag, MatrixDiagPart,
/// MatrixSetDiag and their V2 / V3 forms — a band `k` of diagonals stored one per row from the
/// upper one down, V3's `align` placing the shorter ones, `padding_value` elsewhere. One
/// generated kernel writes each output element: a matrix element finds its diagonal's storage
/// row and place, a storage element its matrix element (the padding value is read on the
/// device, no host wait). The band, sizes, checks and messages are the CPU kernels'
/// (`tf_rules`: `plan_matrix_diag`, `diag_band_of_matrices`, `plan_matrix_set_diag`).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/array.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/tf.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/tf_rules.hpp>

namespace gpass::exec {

namespace cuda_tf {

/// The band a diagonal kernel walks (host mirror of the device `g_band`).
struct g_band {
  long long rows = 0, cols = 0, lo = 0, hi = 0, len = 0, super_left = 1, sub_left = 1;
};

inline g_band device_band(const tf_rules::diag_band& b) {
  return {b.rows, b.cols, b.lo, b.hi, b.len, b.align.super_left ? 1 : 0, b.align.sub_left ? 1 : 0};
}

/// The diagonal kernels for elements of 1, 2, 4 and 8 bytes: `g_diag_S` writes matrices
/// [batch, rows, cols] from a band's storage [batch, count, len] (elements off the band from
/// `base`, MatrixSetDiag's input, or the padding value `*pad`, 0 when null); `g_diag_part_S`
/// writes the storage from the matrices (places no diagonal reaches: `*pad`).
inline const std::string& diag_source() {
  static const std::string s = [] {
    std::string r = cuda_codegen::cuda_prelude();
    r += R"(struct g_band { long long rows, cols, lo, hi, len, super_left, sub_left; };
// diagonal d's length, and where it starts in its storage row
__device__ __forceinline__ long long g_diag_len(const g_band& b, long long d) {
  const long long n = (d < 0 ? b.rows + d : b.rows) < (d > 0 ? b.cols - d : b.cols) ? (d < 0 ? b.rows + d : b.rows) : (d > 0 ? b.cols - d : b.cols);
  return n > 0 ? n : 0;
}
__device__ __forceinline__ long long g_diag_at(const g_band& b, long long d) {
  const bool left = (d >= 0 && b.super_left) || (d <= 0 && b.sub_left);
  return left ? 0 : b.len - g_diag_len(b, d);
}
template <class U> __device__ __forceinline__ void t_diag(U* __restrict__ y, const U* __restrict__ dg, const U* __restrict__ base,
                                                          const U* __restrict__ pad, long long n, g_band b) {
  const long long count = b.hi - b.lo + 1;
  const U p = pad ? *pad : (U)0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long c = i % b.cols, t = i / b.cols, r = t % b.rows, k = t / b.rows, d = c - r;
    if (d < b.lo || d > b.hi) y[i] = base ? base[i] : p;
    else y[i] = dg[(k * count + b.hi - d) * b.len + g_diag_at(b, d) + (r < c ? r : c)];
  }
}
template <class U> __device__ __forceinline__ void t_diag_part(U* __restrict__ y, const U* __restrict__ x, const U* __restrict__ pad,
                                                               long long n, g_band b) {
  const long long count = b.hi - b.lo + 1;
  const U p = pad ? *pad : (U)0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long e = i % b.len, t = i / b.len, d = b.hi - t % count, k = t / count;
    const long long at = g_diag_at(b, d), q = e - at;
    if (q < 0 || q >= g_diag_len(b, d)) y[i] = p;
    else y[i] = x[(k * b.rows + (d < 0 ? -d : 0) + q) * b.cols + (d > 0 ? d : 0) + q];
  }
}
)";
    const char* types[] = {"unsigned char", "unsigned short", "unsigned int", "unsigned long long"};
    for (int q = 0; q < 4; ++q) {
      const std::string U = types[q], S = std::to_string(1 << q);
      r += "extern \"C\" __global__ void g_diag_" + S + "(" + U + "* y, const " + U + "* dg, const " + U + "* base, const " + U +
           "* pad, long long n, g_band b) { t_diag(y, dg, base, pad, n, b); }\n";
      r += "extern \"C\" __global__ void g_diag_part_" + S + "(" + U + "* y, const " + U + "* x, const " + U +
           "* pad, long long n, g_band b) { t_diag_part(y, x, pad, n, b); }\n";
    }
    return r;
  }();
  return s;
}

/// The kernel names of `diag_source`: g_diag_1, g_diag_part_1, g_diag_2, ...
inline const std::vector<std::string>& diag_entries() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> r;
    for (int s : {1, 2, 4, 8}) {
      r.push_back("g_diag_" + std::to_string(s));
      r.push_back("g_diag_part_" + std::to_string(s));
    }
    return r;
  }();
  return v;
}

/// Launches the diagonal kernel `part` (false: g_diag, true: g_diag_part) for elements of `t`.
inline void launch_diag(context& ctx, cuda_detail::lazy_library& lib, dtype t, bool part, void* args[], i64 n) {
  const std::size_t es = size_of(t);
  const std::size_t q = es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3;
  auto& pol = ctx.policy();
  const auto& k = lib.get(pol, "diag", diag_entries(), [] { return diag_source(); });
  pol.launch(k.kernels[2 * q + (part ? 1 : 0)], pol.blocks_for(n), 256, args, ctx.stream());
}

/// Matrices `y` from the band `b`'s storage `dg`, their other elements from `base` (an input
/// of y's sizes) or the padding value `*pad` (0 when both are null).
inline void diag_into(context& ctx, cuda_detail::lazy_library& lib, cuda_tensor& y, const void* dg, const void* base, const void* pad,
                      const tf_rules::diag_band& b) {
  if (y.size() == 0) return;
  void* yp = y.data();
  long long n = y.size();
  g_band gb = device_band(b);
  void* args[] = {&yp, &dg, &base, &pad, &n, &gb};
  launch_diag(ctx, lib, y.element_type(), false, args, n);
}

/// The band [lower, upper] of input `i` (`k`).
inline std::pair<i64, i64> diag_band_input(context& ctx, std::size_t i) {
  return tf_rules::diag_band_ends(vector_input(ctx, i, "k"), ctx.node());
}

/// MatrixDiag / V2 / V3(diagonal, k, num_rows, num_cols, padding_value).
inline fn make_matrix_diag(bool v1, tf_rules::diag_alignment align) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [v1, align, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const kernel_node& node = ctx.node();
    const dtype t = x.element_type();
    cuda_array_detail::require_movable(ctx, t);
    std::pair<i64, i64> k{0, 0};
    i64 rows = -1, cols = -1;
    if (!v1) {
      k = diag_band_input(ctx, 1);
      rows = scalar_input(ctx, 2, "num_rows");
      cols = scalar_input(ctx, 3, "num_cols");
    }
    const tf_rules::diag_plan plan = tf_rules::plan_matrix_diag(x.sizes(), k, rows, cols, align, node);
    cuda_tensor& y = ctx.allocate_output(0, t, plan.out);
    if (!v1) tf_rules::check_diag_padding(ctx.input(4).sizes(), ctx.input(4).element_type(), t, node);
    diag_into(ctx, *lib, y, x.data(), nullptr, v1 ? nullptr : ctx.input(4).data(), plan.b);
  };
}

/// MatrixDiagPart / V2 / V3(input, k, padding_value).
inline fn make_matrix_diag_part(bool v1, tf_rules::diag_alignment align) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [v1, align, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const kernel_node& node = ctx.node();
    const dtype t = x.element_type();
    cuda_array_detail::require_movable(ctx, t);
    const auto b = tf_rules::diag_band_of_matrices(x.sizes(), v1 ? std::pair<i64, i64>{0, 0} : diag_band_input(ctx, 1), align, node);
    cuda_tensor& y = ctx.allocate_output(0, t, b.storage_sizes(x.sizes()));
    if (!v1) tf_rules::check_diag_padding(ctx.input(2).sizes(), ctx.input(2).element_type(), t, node);
    if (y.size() == 0) return;
    const void* xp = x.data();
    const void* pad = v1 ? nullptr : ctx.input(2).data();
    void* yp = y.data();
    long long n = y.size();
    g_band gb = device_band(b);
    void* args[] = {&yp, &xp, &pad, &n, &gb};
    launch_diag(ctx, *lib, t, true, args, n);
  };
}

/// MatrixSetDiag / V2 / V3(input, diagonal, k).
inline fn make_matrix_set_diag(bool v1, tf_rules::diag_alignment align) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [v1, align, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& dgt = ctx.input(1);
    const dtype t = x.element_type();
    cuda_array_detail::require_movable(ctx, t);
    const auto b = tf_rules::plan_matrix_set_diag(x.sizes(), t, dgt.sizes(), dgt.element_type(),
                                                  v1 ? std::pair<i64, i64>{0, 0} : diag_band_input(ctx, 2), align, ctx.node());
    cuda_tensor& y = ctx.allocate_output(0, t, x.sizes());
    diag_into(ctx, *lib, y, dgt.data(), x.data(), nullptr, b);
  };
}

}  // namespace cuda_tf

/// Every source tf_matrix.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> tf_matrix_generated_sources() {
  return {{"tf::diag", cuda_tf::diag_source()}};
}

/// Registers tf_matrix.hpp's kernels.
inline void register_cuda_tf_matrix(kernel_registry<cuda>& r) {
  using namespace cuda_tf;
  using maker = fn (*)(bool, tf_rules::diag_alignment);
  const std::pair<const char*, maker> families[] = {
      {"MatrixDiag", make_matrix_diag}, {"MatrixDiagPart", make_matrix_diag_part}, {"MatrixSetDiag", make_matrix_set_diag}};
  for (const auto& [base, make] : families)
    for (const char* suffix : {"", "V2", "V3"}) {
      const bool v1 = *suffix == '\0';
      r.add({.domain = "tf", .op = std::string(base) + suffix, .dtypes = cuda_array_detail::movable_types(),
             .make = [v1, make](const kernel_node& n) -> fn { return make(v1, tf_rules::read_diag_alignment(n)); }});
    }
}

}  // namespace gpass::exec
