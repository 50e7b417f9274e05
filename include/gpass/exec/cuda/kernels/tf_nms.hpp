// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_nms.hpp
/// CUDA kernels of TensorFlow's NonMaxSuppression (V1 to V5, f32 and f16) and
/// CombinedNonMaxSuppression (f32), as the Eigen CPU kernels (TensorFlow's algorithm) compute
/// them:
/// - a thread per (unit, box) ranks the boxes whose score passes the threshold by counting
///   (the greater score first, ties by index), a unit being one image and class of
///   CombinedNonMaxSuppression or the one set of boxes of NonMaxSuppression;
/// - a block per unit then runs TensorFlow's greedy selection over a binary heap (the sorted
///   candidates are one) with its (score, box, first selected box still to compare) entries:
///   the block's threads compute the candidate's IoUs with the boxes kept since its entry was
///   made (TensorFlow's float IoU, rounded to the element type), and one thread applies them in
///   TensorFlow's order: a hard suppression stops at the last kept box whose IoU passes the
///   threshold (or is NaN, whose weight of 0 sends the candidate back), soft-NMS (V5 with
///   sigma > 0) multiplies the score by each Gaussian weight exp(-0.5 IoU^2 / sigma) in the
///   element type's arithmetic, a lowered score going back to the heap;
/// - NonMaxSuppression writes the kept indices (V5 with their scores, V4 / V5 the count;
///   pad_to_max_output_size pads with zeros and needs no host wait, otherwise the count comes
///   back to size the outputs); CombinedNonMaxSuppression ranks each image's selections by
///   score (ties: the lower class, then the earlier selection), a thread per selection, and
///   writes the first of them, boxes clipped with clip_boxes, without a host wait.
/// The weights' exponential is computed in double and rounded to float (glibc's expf may
/// differ by an ulp); everything else is the CPU's arithmetic. Shapes, thresholds and messages
/// are the CPU's (`tf_nms_rules`).

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
#include <gpass/exec/scratch.hpp>
#include <gpass/exec/tf_nms_rules.hpp>
#include <gpass/exec/tf_rules.hpp>

namespace gpass::exec {

namespace cuda_tf_nms {

using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using i64 = std::int64_t;

/// The library for boxes and scores of type `t` (f32 or f16):
/// - `tf_nms_rank(scores, units, N, K, thr, order, cand)`: order[u] the boxes of unit u whose
///   score passes thr, by rank; cand[u] (zeroed before) how many;
/// - `tf_nms_select(boxes, scores, units, N, q, K, iou, thr, scale, soft, max_out, cap, order,
///   cand, hs, hb, hg, sims, sel, sel_scores, count)`: a block per unit, the heap in hs / hb / hg
///   (N entries a unit), sims / sel / sel_scores cap entries a unit, count[u] the boxes kept;
/// - `tf_nms_out(sel, sel_scores, count, len, idx, sc, valid)`: NonMaxSuppression's outputs;
/// - `tf_nms_combined(boxes, sel, sel_scores, count, N, q, K, cap, units, per_image, clip, ob,
///   os, oc)` and `tf_nms_valid(count, B, K, per_image, valid)`: CombinedNonMaxSuppression's.
/// Boxes are [B, N, q, 4] and scores [B, N, K] (NonMaxSuppression: B = q = K = 1).
inline std::string tf_nms_source(dtype t) {
  const bool half = t == dtype::f16;
  return cuda_codegen::cuda_prelude() + "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\n" +
         (half ? "__device__ __forceinline__ float g_round(float v) { return g_to_float(g_to_half(v)); }\n"
               : "__device__ __forceinline__ float g_round(float v) { return v; }\n") +
         R"(#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x * blockDim.x)
// std::min and std::max (NaN as they treat it)
__device__ __forceinline__ float g_lo(float a, float b) { return b < a ? b : a; }
__device__ __forceinline__ float g_hi(float a, float b) { return a < b ? b : a; }
__device__ __forceinline__ const T* g_box(const T* boxes, long long img, long long i, long long col, long long N, long long q) {
  return boxes + ((img * N + i) * q + col) * 4;
}
// TensorFlow's intersection over union of boxes a and b (any two opposite corners), in float;
// 0 when either is empty
__device__ float g_iou(const T* a, const T* b) {
  const float a0 = (float)g_load(a, 0), a1 = (float)g_load(a, 1), a2 = (float)g_load(a, 2), a3 = (float)g_load(a, 3);
  const float b0 = (float)g_load(b, 0), b1 = (float)g_load(b, 1), b2 = (float)g_load(b, 2), b3 = (float)g_load(b, 3);
  const float ymin_i = g_lo(a0, a2), xmin_i = g_lo(a1, a3), ymax_i = g_hi(a0, a2), xmax_i = g_hi(a1, a3);
  const float ymin_j = g_lo(b0, b2), xmin_j = g_lo(b1, b3), ymax_j = g_hi(b0, b2), xmax_j = g_hi(b1, b3);
  const float area_i = (ymax_i - ymin_i) * (xmax_i - xmin_i);
  const float area_j = (ymax_j - ymin_j) * (xmax_j - xmin_j);
  if (area_i <= 0 || area_j <= 0) return 0.0f;
  const float iy = g_hi(g_lo(ymax_i, ymax_j) - g_hi(ymin_i, ymin_j), 0.0f);
  const float ix = g_hi(g_lo(xmax_i, xmax_j) - g_hi(xmin_i, xmin_j), 0.0f);
  const float inter = iy * ix;
  return inter / (area_i + area_j - inter);
}
// entry (as, ab) comes out of the heap before (bs, bb): the greater score, ties the lower box
__device__ __forceinline__ bool g_first(float as, int ab, float bs, int bb) { return as > bs || (as == bs && ab < bb); }
// heap entry h set to (score s, box b, first kept box to compare g)
__device__ __forceinline__ void g_put(float* us, int* ub, int* ug, int h, float s, int b, int g) {
  us[h] = s;
  ub[h] = b;
  ug[h] = g;
}
extern "C" __global__ void tf_nms_rank(const T* __restrict__ scores, long long units, long long N, long long K, float thr,
    int* __restrict__ order, int* __restrict__ cand) {
  G_LOOP(units * N) {
    const long long u = i / N, b = i % N, img = u / K, k = u % K;
    const T* s = scores + img * N * K + k;
    const float sb = (float)g_load(s, b * K);
    if (!(sb > thr)) continue;
    long long r = 0;
    for (long long j = 0; j < N; ++j) {
      const float sj = (float)g_load(s, j * K);
      if (sj > thr && (sj > sb || (sj == sb && j < b))) ++r;
    }
    order[u * N + r] = (int)b;
    atomicAdd(cand + u, 1);
  }
}
extern "C" __global__ void tf_nms_select(const T* __restrict__ boxes, const T* __restrict__ scores, long long units, long long N,
    long long q, long long K, float iou, float thr, float scale, int soft, long long max_out, long long cap,
    const int* __restrict__ order, const int* __restrict__ cand, float* __restrict__ hs, int* __restrict__ hb, int* __restrict__ hg,
    float* __restrict__ sims, int* __restrict__ sel, float* __restrict__ sel_scores, int* __restrict__ count) {
  __shared__ float c_score;
  __shared__ int c_box, c_begin, done, jmax, kept, size;
  for (long long u = blockIdx.x; u < units; u += gridDim.x) {
    const long long img = u / K, k = u % K, col = q > 1 ? k : 0;
    const T* s = scores + img * N * K + k;
    float* us = hs + u * N;
    int* ub = hb + u * N;
    int* ug = hg + u * N;
    float* usim = sims + u * cap;
    int* usel = sel + u * cap;
    float* uss = sel_scores + u * cap;
    const int m = cand[u];
    for (int r = threadIdx.x; r < m; r += blockDim.x) {
      const int b = order[u * N + r];
      g_put(us, ub, ug, r, (float)g_load(s, (long long)b * K), b, 0);
    }
    if (threadIdx.x == 0) {
      kept = 0;
      size = m;
    }
    __syncthreads();
    for (;;) {
      if (threadIdx.x == 0) {
        done = size == 0 || kept >= max_out;
        if (!done) {  // pop the top; the last entry sinks from the root
          c_score = us[0];
          c_box = ub[0];
          c_begin = ug[0];
          --size;
          const float ls = us[size];
          const int lb = ub[size], lg = ug[size];
          int h = 0;
          for (;;) {
            int c = 2 * h + 1;
            if (c >= size) break;
            if (c + 1 < size && g_first(us[c + 1], ub[c + 1], us[c], ub[c])) ++c;
            if (!g_first(us[c], ub[c], ls, lb)) break;
            g_put(us, ub, ug, h, us[c], ub[c], ug[c]);
            h = c;
          }
          g_put(us, ub, ug, h, ls, lb, lg);
        }
        jmax = -1;
      }
      __syncthreads();
      if (done) break;
      // the IoUs with the boxes kept since the entry was made; hard NMS: the last one that
      // suppresses or is NaN (the later ones weigh exactly 1)
      const T* cb = g_box(boxes, img, c_box, col, N, q);
      int mine = -1;
      for (int j = c_begin + threadIdx.x; j < kept; j += blockDim.x) {
        const float sim = g_round(g_iou(cb, g_box(boxes, img, usel[j], col, N, q)));
        usim[j] = sim;
        if (!soft && (sim > iou || sim != sim)) mine = j;
      }
      if (mine >= 0) atomicMax(&jmax, mine);
      __syncthreads();
      if (threadIdx.x == 0) {
        float score = c_score;
        bool suppressed = false;
        for (int j = soft ? kept - 1 : jmax; j >= c_begin; --j) {
          const float sim = usim[j];
          const float w = soft || sim <= iou ? g_round((float)exp((double)g_round(g_round(scale * sim) * sim))) : 0.0f;
          score = g_round(score * w);
          if (!soft && sim > iou) {
            suppressed = true;
            break;
          }
          if (score <= thr) break;
        }
        if (!suppressed) {
          if (score == c_score) {
            usel[kept] = c_box;
            uss[kept] = score;
            ++kept;
          } else if (score > thr) {  // softly suppressed: back in the heap with its lower score
            int h = size++;
            while (h > 0) {
              const int p = (h - 1) / 2;
              if (!g_first(score, c_box, us[p], ub[p])) break;
              g_put(us, ub, ug, h, us[p], ub[p], ug[p]);
              h = p;
            }
            g_put(us, ub, ug, h, score, c_box, kept);
          }
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) count[u] = kept;
    __syncthreads();
  }
}
extern "C" __global__ void tf_nms_out(const int* __restrict__ sel, const float* __restrict__ sel_scores, const int* __restrict__ count,
    long long len, int* __restrict__ idx, T* __restrict__ sc, int* __restrict__ valid) {
  const int n = *count;
  G_LOOP(len) {
    idx[i] = i < n ? sel[i] : 0;
    if (sc) g_store(sc, i, i < n ? sel_scores[i] : 0.0f);
  }
  if (valid && blockIdx.x == 0 && threadIdx.x == 0) *valid = n;
}
extern "C" __global__ void tf_nms_combined(const T* __restrict__ boxes, const int* __restrict__ sel, const float* __restrict__ sel_scores,
    const int* __restrict__ count, long long N, long long q, long long K, long long cap, long long units, long long per_image, int clip,
    float* __restrict__ ob, float* __restrict__ os, float* __restrict__ oc) {
  G_LOOP(units * cap) {
    const long long u = i / cap, j = i % cap;
    if (j >= count[u]) continue;
    const long long img = u / K, k = u % K;
    const float s = sel_scores[i];
    long long r = 0;
    for (long long k2 = 0; k2 < K; ++k2) {
      const long long u2 = img * K + k2;
      const int c2 = count[u2];
      for (long long j2 = 0; j2 < c2; ++j2) {
        const float s2 = sel_scores[u2 * cap + j2];
        if (s2 > s || (s2 == s && (k2 < k || (k2 == k && j2 < j)))) ++r;
      }
    }
    if (r >= per_image) continue;
    const long long o = img * per_image + r;
    const T* src = g_box(boxes, img, sel[i], q > 1 ? k : 0, N, q);
    for (int c = 0; c < 4; ++c) {
      const float v = (float)g_load(src, c);
      ob[o * 4 + c] = clip ? g_hi(g_lo(v, 1.0f), 0.0f) : v;
    }
    os[o] = s;
    oc[o] = (float)k;
  }
}
extern "C" __global__ void tf_nms_valid(const int* __restrict__ count, long long B, long long K, long long per_image, int* __restrict__ valid) {
  G_LOOP(B) {
    long long t = 0;
    for (long long k = 0; k < K; ++k) t += count[i * K + k];
    valid[i] = (int)(t < per_image ? t : per_image);
  }
}
)";
}

inline const std::vector<std::string>& entry_names() {
  static const std::vector<std::string> v = {"tf_nms_rank", "tf_nms_select", "tf_nms_out", "tf_nms_combined", "tf_nms_valid"};
  return v;
}

/// `v` rounded to element type `t` (f32 or f16), as a float.
inline float in_type(dtype t, double v) {
  const float f = static_cast<float>(v);
  return t == dtype::f16 ? static_cast<float>(Eigen::half(f)) : f;
}

/// The selection's buffers and its kernels' launch: units of N boxes ([B, N, q, 4] boxes,
/// [B, N, K] scores), at most max_out kept a unit; fills `sel`, `sel_scores` ([units, cap]) and
/// `count` ([units]).
struct selection {
  i64 units = 0, N = 0, q = 1, K = 1, max_out = 0, cap = 0;
  float iou = 0, thr = 0, scale = 0;
  bool soft = false;
  cuda_tensor sel, sel_scores, count;
};
inline void select(context& ctx, const lazy_library::entry& k, const cuda_tensor& boxes, const cuda_tensor& scores, selection& s) {
  auto& pol = ctx.policy();
  s.count = pol.allocate_tensor(dtype::int32, {s.units}, ctx.stream());
  s.sel = pol.allocate_tensor(dtype::int32, {s.units, s.cap}, ctx.stream());
  s.sel_scores = pol.allocate_tensor(dtype::f32, {s.units, s.cap}, ctx.stream());
  if (s.cap == 0) {
    pol.fill_zero(s.count, ctx.stream());
    return;
  }
  check_scratch(ctx, static_cast<double>(s.units) * (16.0 * static_cast<double>(s.N) + 12.0 * static_cast<double>(s.cap)),
                "the ranked candidates and heaps of the non-max suppression");
  cuda_tensor order = pol.allocate_tensor(dtype::int32, {s.units, s.N}, ctx.stream());
  cuda_tensor cand = pol.allocate_tensor(dtype::int32, {s.units}, ctx.stream());
  cuda_tensor hs = pol.allocate_tensor(dtype::f32, {s.units, s.N}, ctx.stream());
  cuda_tensor hb = pol.allocate_tensor(dtype::int32, {s.units, s.N}, ctx.stream());
  cuda_tensor hg = pol.allocate_tensor(dtype::int32, {s.units, s.N}, ctx.stream());
  cuda_tensor sims = pol.allocate_tensor(dtype::f32, {s.units, s.cap}, ctx.stream());
  pol.fill_zero(cand, ctx.stream());
  {
    const void* sp = scores.data();
    long long uu = s.units, nn = s.N, kk = s.K;
    float th = s.thr;
    void* op = order.data();
    void* cp = cand.data();
    void* args[] = {&sp, &uu, &nn, &kk, &th, &op, &cp};
    pol.launch(k.kernels[0], pol.blocks_for(s.units * s.N), 256, args, ctx.stream());
  }
  const void* bp = boxes.data();
  const void* sp = scores.data();
  long long uu = s.units, nn = s.N, qq = s.q, kk = s.K, mo = s.max_out, cp = s.cap;
  float io = s.iou, th = s.thr, sc = s.scale;
  int so = s.soft ? 1 : 0;
  const void* op = order.data();
  const void* cd = cand.data();
  void* p_hs = hs.data();
  void* p_hb = hb.data();
  void* p_hg = hg.data();
  void* p_sims = sims.data();
  void* p_sel = s.sel.data();
  void* p_ss = s.sel_scores.data();
  void* p_count = s.count.data();
  void* args[] = {&bp, &sp, &uu, &nn, &qq, &kk, &io, &th, &sc, &so, &mo, &cp, &op, &cd, &p_hs, &p_hb, &p_hg, &p_sims, &p_sel, &p_ss, &p_count};
  pol.launch(k.kernels[1], static_cast<unsigned>(std::min<i64>(s.units, 65535)), 256, args, ctx.stream());
}

/// A scalar input read on the host as a double, checked to be 0-D.
inline double scalar(context& ctx, std::size_t i, const char* what) {
  tf_nms_rules::check_scalar(ctx.input(i).sizes(), what, ctx.node());
  return cuda_detail::host_values_as<double>(ctx, i, 0.0).at(0);
}

/// NonMaxSuppression (`version` 1) to NonMaxSuppressionV5.
inline fn make_tf_nms(const kernel_node& n, int version) {
  const float iou_attr = version == 1 ? n.attr<float>("iou_threshold", 0.5f) : 0.0f;
  const bool pad = version >= 4 && tf_rules::flag(n, "pad_to_max_output_size", false);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const kernel_node& node = ctx.node();
    const cuda_tensor& boxes = ctx.input(0);
    const cuda_tensor& scores = ctx.input(1);
    tf_nms_rules::check_scalar(ctx.input(2).sizes(), "max_output_size", node);
    const i64 max_out = cuda_detail::host_ints(ctx, 2).at(0);
    const double iou = version == 1 ? iou_attr : scalar(ctx, 3, "iou_threshold");
    tf_nms_rules::check_iou_threshold(iou, node);
    const double score_thr = version >= 3 ? scalar(ctx, 4, "score_threshold") : 0.0;
    const double sigma = version == 5 ? scalar(ctx, 5, "soft_nms_sigma") : 0.0;
    tf_nms_rules::check_soft_nms_sigma(sigma, node);
    const dtype t = boxes.element_type();
    const i64 N = tf_nms_rules::nms_boxes(boxes.sizes(), t, scores.sizes(), scores.element_type(), node);
    if (version == 5)
      for (std::size_t i = 3; i < 6; ++i)
        if (ctx.input(i).element_type() != t) ctx.fail("the thresholds of NonMaxSuppressionV5 must be " + std::string(to_string(t)));
    tf_nms_rules::check_max_output_size(max_out, node);
    if (N > std::numeric_limits<int>::max()) ctx.fail("the CUDA kernel takes at most 2^31 - 1 boxes, got " + std::to_string(N));
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, std::string(to_string(t)), entry_names(), [&] { return tf_nms_source(t); });
    // the thresholds in T (from float, as TensorFlow's GetScalar); V1 / V2 select every score
    selection s;
    s.units = 1;
    s.N = N;
    s.max_out = max_out;
    s.cap = std::min(max_out, N);
    s.iou = in_type(t, iou);
    s.thr = version >= 3 ? in_type(t, score_thr)
                         : (t == dtype::f16 ? static_cast<float>(std::numeric_limits<Eigen::half>::lowest()) : std::numeric_limits<float>::lowest());
    s.soft = in_type(t, sigma) > 0;
    if (s.soft)
      s.scale = t == dtype::f16 ? static_cast<float>(Eigen::half(-0.5f) / Eigen::half(static_cast<float>(sigma)))
                                : -0.5f / static_cast<float>(sigma);
    select(ctx, k, boxes, scores, s);
    i64 len = max_out;
    if (!pad) {  // the count sizes the outputs
      const gpass::tensor c = pol.download(s.count, ctx.stream());
      len = c.data<std::int32_t>()[0];
    }
    cuda_tensor& idx = ctx.allocate_output(0, dtype::int32, {len});
    cuda_tensor* sc = version == 5 ? &ctx.allocate_output(1, t, {len}) : nullptr;
    cuda_tensor* valid = version >= 4 ? &ctx.allocate_output(version == 5 ? 2 : 1, dtype::int32, {}) : nullptr;
    const void* p_sel = s.sel.data();
    const void* p_ss = s.sel_scores.data();
    const void* p_count = s.count.data();
    long long ll = len;
    void* p_idx = idx.data();
    void* p_sc = sc ? sc->data() : nullptr;
    void* p_valid = valid ? valid->data() : nullptr;
    void* args[] = {&p_sel, &p_ss, &p_count, &ll, &p_idx, &p_sc, &p_valid};
    pol.launch(k.kernels[2], pol.blocks_for(std::max<i64>(len, 1)), 256, args, ctx.stream());
  };
}

/// CombinedNonMaxSuppression(boxes [B, N, q, 4], scores [B, N, K], max_output_size_per_class,
/// max_total_size, iou_threshold, score_threshold).
inline fn make_combined_nms(const kernel_node& n) {
  const bool pad_per_class = tf_rules::flag(n, "pad_per_class", false), clip = tf_rules::flag(n, "clip_boxes", true);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const kernel_node& node = ctx.node();
    const cuda_tensor& boxes = ctx.input(0);
    const cuda_tensor& scores = ctx.input(1);
    const tf_nms_rules::combined_shape c = tf_nms_rules::combined_nms_shape(boxes.sizes(), scores.sizes(), node);
    for (std::size_t i = 2; i < 4; ++i)
      if (ctx.input(i).rank() != 0) ctx.fail(std::string(i == 2 ? "max_output_size_per_class" : "max_total_size") + " must be 0-D");
    const i64 per_class = cuda_detail::host_ints(ctx, 2).at(0);
    const i64 total = cuda_detail::host_ints(ctx, 3).at(0);
    const i64 per_image = tf_nms_rules::combined_nms_per_image(per_class, total, c.K, pad_per_class, node);
    const double iou = scalar(ctx, 4, "iou_threshold"), score_thr = scalar(ctx, 5, "score_threshold");
    tf_nms_rules::check_iou_threshold(iou, node);
    if (boxes.element_type() != dtype::f32 || scores.element_type() != dtype::f32) ctx.fail("boxes and scores must be float32");
    if (c.N > std::numeric_limits<int>::max()) ctx.fail("the CUDA kernel takes at most 2^31 - 1 boxes, got " + std::to_string(c.N));
    auto& pol = ctx.policy();
    cuda_tensor& ob = ctx.allocate_output(0, dtype::f32, {c.B, per_image, 4});
    cuda_tensor& os = ctx.allocate_output(1, dtype::f32, {c.B, per_image});
    cuda_tensor& oc = ctx.allocate_output(2, dtype::f32, {c.B, per_image});
    cuda_tensor& ov = ctx.allocate_output(3, dtype::int32, {c.B});
    for (cuda_tensor* o : {&ob, &os, &oc, &ov}) pol.fill_zero(*o, ctx.stream());
    if (c.B == 0 || c.K == 0) return;
    const auto& k = lib->get(pol, "f32", entry_names(), [&] { return tf_nms_source(dtype::f32); });
    selection s;
    s.units = c.B * c.K;
    s.N = c.N;
    s.q = c.q;
    s.K = c.K;
    s.max_out = std::min(per_class, c.N);
    s.cap = s.max_out;
    s.iou = static_cast<float>(iou);
    s.thr = static_cast<float>(score_thr);
    select(ctx, k, boxes, scores, s);
    if (s.cap == 0) return;
    {
      const void* bp = boxes.data();
      const void* p_sel = s.sel.data();
      const void* p_ss = s.sel_scores.data();
      const void* p_count = s.count.data();
      long long nn = c.N, qq = c.q, kk = c.K, cp = s.cap, uu = s.units, pi = per_image;
      int cl = clip ? 1 : 0;
      void* p_ob = ob.data();
      void* p_os = os.data();
      void* p_oc = oc.data();
      void* args[] = {&bp, &p_sel, &p_ss, &p_count, &nn, &qq, &kk, &cp, &uu, &pi, &cl, &p_ob, &p_os, &p_oc};
      pol.launch(k.kernels[3], pol.blocks_for(s.units * s.cap), 256, args, ctx.stream());
    }
    const void* p_count = s.count.data();
    long long bb = c.B, kk = c.K, pi = per_image;
    void* p_ov = ov.data();
    void* args[] = {&p_count, &bb, &kk, &pi, &p_ov};
    pol.launch(k.kernels[4], pol.blocks_for(c.B), 256, args, ctx.stream());
  };
}

}  // namespace cuda_tf_nms

/// Every source tf_nms.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> tf_nms_generated_sources() {
  return {{"tf::nms_f32", cuda_tf_nms::tf_nms_source(dtype::f32)}, {"tf::nms_f16", cuda_tf_nms::tf_nms_source(dtype::f16)}};
}

/// Registers NonMaxSuppression (f32), NonMaxSuppressionV2 to V5 (f32, f16) and
/// CombinedNonMaxSuppression (f32) (domain "tf").
inline void register_cuda_tf_nms(kernel_registry<cuda>& r) {
  for (int version = 1; version <= 5; ++version)
    r.add({.domain = "tf",
           .op = version == 1 ? std::string("NonMaxSuppression") : "NonMaxSuppressionV" + std::to_string(version),
           .dtypes = version == 1 ? std::vector<dtype>{dtype::f32} : std::vector<dtype>{dtype::f32, dtype::f16},
           .make = [version](const kernel_node& n) { return cuda_tf_nms::make_tf_nms(n, version); }});
  r.add({.domain = "tf", .op = "CombinedNonMaxSuppression", .dtypes = {dtype::f32}, .make = cuda_tf_nms::make_combined_nms});
}

}  // namespace gpass::exec
