// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file nms.hpp
/// The CUDA kernel of ONNX NonMaxSuppression (10, 11): a block per (batch, class) ranks the
/// boxes above the score threshold by score (each thread counts the candidates before its
/// boxes: the greater score first, NaN after every number, ties by index, as
/// `nn_rules::nms_before` orders them on the CPU) and then selects greedily in that order, its
/// threads checking a candidate against the kept boxes together (in double, the CPU's
/// arithmetic); the counts come back to the host, which sizes the output, and a second kernel
/// writes the (batch, class, box) rows in the CPU's order. Shapes, thresholds and messages
/// follow the Eigen CPU kernel (`nn_rules::nms_check`).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/nn_rules.hpp>

namespace gpass::exec {

namespace cuda_nms {

using i64 = std::int64_t;
using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;

/// The library for boxes and scores of type `t`:
/// - `nms_class(boxes, scores, nb, nbox, nc, center, has_score, score_thr, iou, max_out, cap,
///   order, sel, count)`: a block per (batch, class) u: order[u] the candidates by rank, sel[u]
///   (cap entries) the kept boxes, count[u] how many;
/// - `nms_rows(sel, count, offset, units, nc, cap, y)`: y [total, 3] the (batch, class, box)
///   rows of each unit from its offset.
inline std::string nms_source(dtype t) {
  return cuda_codegen::cuda_prelude() + "typedef " + std::string(cuda_codegen::storage_type(t)) + R"( T;
struct g_rect { double y0, x0, y1, x1; };
__device__ __forceinline__ double g_lo(double a, double b) { return b < a ? b : a; }
__device__ __forceinline__ double g_hi(double a, double b) { return a < b ? b : a; }
__device__ __forceinline__ g_rect g_rect_of(const T* boxes, long long b, long long nbox, long long i, int center) {
  const T* p = boxes + (b * nbox + i) * 4;
  const double p0 = (double)g_load(p, 0), p1 = (double)g_load(p, 1), p2 = (double)g_load(p, 2), p3 = (double)g_load(p, 3);
  g_rect r;
  if (center) {
    r.y0 = p1 - p3 / 2; r.x0 = p0 - p2 / 2; r.y1 = p1 + p3 / 2; r.x1 = p0 + p2 / 2;
  } else {
    r.y0 = g_lo(p0, p2); r.x0 = g_lo(p1, p3); r.y1 = g_hi(p0, p2); r.x1 = g_hi(p1, p3);
  }
  return r;
}
// whether b suppresses a: their intersection over union above iou
__device__ __forceinline__ bool g_suppress(const g_rect& a, const g_rect& b, double iou) {
  const double ix = g_lo(a.x1, b.x1) - g_hi(a.x0, b.x0);
  const double iy = g_lo(a.y1, b.y1) - g_hi(a.y0, b.y0);
  if (ix <= 0 || iy <= 0) return false;
  const double inter = ix * iy;
  const double area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
  const double uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou;
}
// score a of box i ranks before score b of box j
__device__ __forceinline__ bool g_before(double a, long long i, double b, long long j) {
  const bool na = a != a, nb = b != b;
  if (na != nb) return nb;
  if (!na && a != b) return a > b;
  return i < j;
}
extern "C" __global__ void nms_class(const T* __restrict__ boxes, const T* __restrict__ scores, long long nb, long long nbox, long long nc,
    int center, int has_score, double score_thr, double iou, long long max_out, long long cap, int* __restrict__ order,
    long long* __restrict__ sel, long long* __restrict__ count) {
  __shared__ long long total;
  for (long long u = blockIdx.x; u < nb * nc; u += gridDim.x) {
    const long long b = u / nc;
    const T* s = scores + u * nbox;
    int* ord = order + u * nbox;
    long long* su = sel + u * cap;
    if (threadIdx.x == 0) total = 0;
    __syncthreads();
    long long mine = 0;
    for (long long i = threadIdx.x; i < nbox; i += blockDim.x) {
      const double si = (double)g_load(s, i);
      if (has_score && !(si > score_thr)) continue;
      long long r = 0;
      for (long long j = 0; j < nbox; ++j) {
        const double sj = (double)g_load(s, j);
        if (has_score && !(sj > score_thr)) continue;
        if (g_before(sj, j, si, i)) ++r;
      }
      ord[r] = (int)i;
      ++mine;
    }
    if (mine) atomicAdd((unsigned long long*)&total, (unsigned long long)mine);
    __syncthreads();
    const long long m = total;
    long long kept = 0;
    for (long long k = 0; k < m && kept < max_out; ++k) {
      const long long i = ord[k];
      const g_rect r = g_rect_of(boxes, b, nbox, i, center);
      int hit = 0;
      for (long long q = threadIdx.x; q < kept && !hit; q += blockDim.x) hit = g_suppress(r, g_rect_of(boxes, b, nbox, su[q], center), iou);
      if (__syncthreads_or(hit)) continue;
      if (threadIdx.x == 0) su[kept] = i;
      ++kept;
      __syncthreads();
    }
    if (threadIdx.x == 0) count[u] = kept;
    __syncthreads();
  }
}
extern "C" __global__ void nms_rows(const long long* __restrict__ sel, const long long* __restrict__ count, const long long* __restrict__ offset,
    long long units, long long nc, long long cap, long long* __restrict__ y) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < units * cap; i += (long long)gridDim.x * blockDim.x) {
    const long long u = i / cap, q = i % cap;
    if (q >= count[u]) continue;
    long long* row = y + (offset[u] + q) * 3;
    row[0] = u / nc;
    row[1] = u % nc;
    row[2] = sel[i];
  }
}
)";
}

/// A node's generated kernels.
inline fn make_nms(const kernel_node& n) {
  const bool center = n.attr<i64>("center_point_box", 0) != 0;
  auto lib = std::make_shared<lazy_library>();
  return [center, lib](context& ctx) {
    const cuda_tensor& boxes = ctx.input(0);
    const cuda_tensor& scores = ctx.input(1);
    const nn_rules::nms_shape z = nn_rules::nms_check(boxes.sizes(), scores.sizes(), ctx.node());
    if (scores.element_type() != boxes.element_type()) ctx.fail("scores must have the element type of boxes");
    auto given = [&](std::size_t i) { return ctx.has_input(i) && ctx.input(i).size() > 0; };
    const i64 max_out = given(2) ? std::max<i64>(0, cuda_detail::host_values_as<i64>(ctx, 2, 0).at(0)) : 0;
    const double iou = given(3) ? cuda_detail::host_values_as<double>(ctx, 3, 0.0).at(0) : 0.0;
    const bool has_score = given(4);
    const double score_thr = has_score ? cuda_detail::host_values_as<double>(ctx, 4, 0.0).at(0) : 0.0;
    nn_rules::check_iou_threshold(iou, ctx.node());
    auto& pol = ctx.policy();
    const i64 units = z.batches * z.classes;
    if (units == 0 || z.boxes == 0 || max_out == 0) {
      ctx.allocate_output(0, dtype::int64, {0, 3});
      return;
    }
    if (z.boxes > std::numeric_limits<int>::max()) ctx.fail("the CUDA kernel takes at most 2^31 - 1 boxes, got " + std::to_string(z.boxes));
    const i64 cap = std::min(max_out, z.boxes);
    const dtype t = boxes.element_type();
    const auto& k = lib->get(pol, std::string(to_string(t)), {"nms_class", "nms_rows"}, [&] { return nms_source(t); });
    cuda_tensor order = pol.allocate_tensor(dtype::int32, {units, z.boxes}, ctx.stream());
    cuda_tensor sel = pol.allocate_tensor(dtype::int64, {units, cap}, ctx.stream());
    cuda_tensor count = pol.allocate_tensor(dtype::int64, {units}, ctx.stream());
    {
      const void* bp = boxes.data();
      const void* sp = scores.data();
      long long nb = z.batches, nbox = z.boxes, nc = z.classes, mo = max_out, cp = cap;
      int ce = center ? 1 : 0, hs = has_score ? 1 : 0;
      double st = score_thr, io = iou;
      void* op = order.data();
      void* lp = sel.data();
      void* cnt = count.data();
      void* args[] = {&bp, &sp, &nb, &nbox, &nc, &ce, &hs, &st, &io, &mo, &cp, &op, &lp, &cnt};
      pol.launch(k.kernels[0], static_cast<unsigned>(std::min<i64>(units, 65535)), 256, args, ctx.stream());
    }
    // the counts on the host: the output's size and each unit's first row
    const gpass::tensor counts = pol.download(count, ctx.stream());
    std::vector<i64> offset(static_cast<std::size_t>(units));
    i64 total = 0;
    for (i64 u = 0; u < units; ++u) {
      offset[static_cast<std::size_t>(u)] = total;
      total += counts.data<i64>()[u];
    }
    cuda_tensor& y = ctx.allocate_output(0, dtype::int64, {total, 3});
    if (total == 0) return;
    const cuda_tensor off = cuda_detail::upload_vector(ctx, dtype::int64, offset);
    const void* lp = sel.data();
    const void* cp = count.data();
    const void* opp = off.data();
    long long uu = units, nc = z.classes, cc = cap;
    void* yp = y.data();
    void* args[] = {&lp, &cp, &opp, &uu, &nc, &cc, &yp};
    pol.launch(k.kernels[1], pol.blocks_for(units * cap), 256, args, ctx.stream());
  };
}

/// Every generated source of this family: (name, source).
inline std::vector<std::pair<std::string, std::string>> nms_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16}) r.emplace_back("nms_" + std::string(to_string(t)), nms_source(t));
  return r;
}

}  // namespace cuda_nms

/// Registers NonMaxSuppression (10): scores of the boxes' element type (others run where the
/// CPU kernel does).
inline void register_cuda_nms(kernel_registry<cuda>& r) {
  r.add({.op = "NonMaxSuppression", .since_version = 10, .dtypes = {dtype::f32, dtype::f64, dtype::f16}, .make = cuda_nms::make_nms,
         .applies = [](const kernel_query& q) { return q.inputs.size() >= 2 && q.inputs[1] == q.inputs[0]; }});
}

}  // namespace gpass::exec
