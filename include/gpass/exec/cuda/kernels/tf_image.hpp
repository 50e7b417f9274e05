// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_image.hpp
/// CUDA kernels of TensorFlow's image resizes (domain "tf"), NHWC: ResizeBilinear,
/// ResizeBicubic and ResizeArea (float output, the input read as float) and
/// ResizeNearestNeighbor (the input's type). Each axis's taps — positions and weights, with
/// TensorFlow's coordinate rules, clamping and cubic table — are planned on the host by the
/// rules the CPU kernels use (`tf_rules::bilinear_axis`, `bicubic_axis`, `area_axis`,
/// `nearest_axis`), uploaded, and a generated kernel computes each output element from them in
/// the CPU's order of operations (bilinear: two lerps of a row pair; bicubic: the rows of each
/// of four columns, then the columns; area: each row's first cell, its interior cells
/// unweighted, its last cell, the rows weighted, the sum normalized).

#include <algorithm>
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

/// The float-output resizes of an image of `t`: `resize_bilinear`, `resize_bicubic`,
/// `resize_area`, each over y [N, OH, OW, C] from x [N, H, W, C] with the taps `idx` (int64)
/// and weights `w` (float) laid out as `resize_taps` says.
inline std::string resize_source(dtype t) {
  std::string r = cuda_codegen::cuda_prelude();
  r += "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\n";
  r += R"(struct g_img { long long N, H, W, C, OH, OW; };
#define G_EACH(g) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x, n_ = g.N * g.OH * g.OW * g.C; i < n_; \
                       i += (long long)gridDim.x * blockDim.x)
#define G_SPLIT(g) const long long c = i % g.C, q_ = i / g.C, ox = q_ % g.OW, oy = (q_ / g.OW) % g.OH, b = q_ / (g.OW * g.OH); \
                   const T* img = x + b * g.H * g.W * g.C;
#define G_AT(yy, xx) ((float)g_load(img, ((yy) * g.W + (xx)) * g.C + c))
// idx: row lo [OH], row hi [OH], column lo [OW], column hi [OW]; w: row lerp [OH], column lerp [OW]
extern "C" __global__ void resize_bilinear(const T* __restrict__ x, float* __restrict__ y, g_img g, const long long* __restrict__ idx,
                                           const float* __restrict__ w) {
  G_EACH(g) {
    G_SPLIT(g)
    const long long ylo = idx[oy], yhi = idx[g.OH + oy], xlo = idx[2 * g.OH + ox], xhi = idx[2 * g.OH + g.OW + ox];
    const float wy = w[oy], wx = w[g.OH + ox];
    const float tl = G_AT(ylo, xlo), tr = G_AT(ylo, xhi), bl = G_AT(yhi, xlo), br = G_AT(yhi, xhi);
    const float top = tl + (tr - tl) * wx, bottom = bl + (br - bl) * wx;
    y[i] = top + (bottom - top) * wy;
  }
}
// idx: row taps [OH][4], column taps [OW][4]; w: their weights
extern "C" __global__ void resize_bicubic(const T* __restrict__ x, float* __restrict__ y, g_img g, const long long* __restrict__ idx,
                                          const float* __restrict__ w) {
  G_EACH(g) {
    G_SPLIT(g)
    const long long* ty = idx + 4 * oy;
    const long long* tx = idx + 4 * g.OH + 4 * ox;
    const float* wy = w + 4 * oy;
    const float* wx = w + 4 * g.OH + 4 * ox;
    float col[4];
    for (int k = 0; k < 4; ++k) {
      const long long cx = tx[k];
      col[k] = G_AT(ty[0], cx) * wy[0] + G_AT(ty[1], cx) * wy[1] + G_AT(ty[2], cx) * wy[2] + G_AT(ty[3], cx) * wy[3];
    }
    y[i] = col[0] * wx[0] + col[1] * wx[1] + col[2] * wx[2] + col[3] * wx[3];
  }
}
// idx: row cell offsets [OH + 1], column cell offsets [OW + 1], row cells, column cells; w: the
// row cells' weights, then the column cells'
extern "C" __global__ void resize_area(const T* __restrict__ x, float* __restrict__ y, g_img g, const long long* __restrict__ idx,
                                       const float* __restrict__ w, float norm) {
  const long long* yoff = idx;
  const long long* xoff = idx + g.OH + 1;
  const long long* yat = idx + g.OH + g.OW + 2;
  const long long* xat = yat + yoff[g.OH];
  const float* wy = w;
  const float* wx = w + yoff[g.OH];
  G_EACH(g) {
    G_SPLIT(g)
    const long long x0 = xoff[ox], nx = xoff[ox + 1] - x0;
    float sum = 0;
    if (nx > 0)
      for (long long r = yoff[oy]; r < yoff[oy + 1]; ++r) {
        const long long yy = yat[r];
        float row = G_AT(yy, xat[x0]) * wx[x0];
        if (nx > 1) {
          for (long long k = 1; k + 1 < nx; ++k) row += G_AT(yy, xat[x0 + k]);
          row += G_AT(yy, xat[x0 + nx - 1]) * wx[x0 + nx - 1];
        }
        sum += row * wy[r];
      }
    y[i] = sum * norm;
  }
}
// CropAndResize: y [n, CH, CW, D] from x [batch, H, W, D]; idx: each box's image, then per box
// and crop row (lo, hi, nearest; lo -1 outside the image), then per box and crop column; w:
// the rows' lerps, then the columns'
struct g_crop { long long n, H, W, D, CH, CW; };
extern "C" __global__ void crop_and_resize(const T* __restrict__ x, float* __restrict__ y, g_crop g, const long long* __restrict__ idx,
                                           const float* __restrict__ w, int bilinear, float extrapolation) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x, n_ = g.n * g.CH * g.CW * g.D; i < n_;
       i += (long long)gridDim.x * blockDim.x) {
    const long long d = i % g.D, q = i / g.D, cx = q % g.CW, cy = (q / g.CW) % g.CH, b = q / (g.CW * g.CH);
    const long long* ty = idx + g.n + 3 * (b * g.CH + cy);
    const long long* tx = idx + g.n + 3 * g.n * g.CH + 3 * (b * g.CW + cx);
    if (ty[0] < 0 || tx[0] < 0) { y[i] = extrapolation; continue; }
    const T* img = x + idx[b] * g.H * g.W * g.D;
#define G_PX(yy, xx) ((float)g_load(img, ((yy) * g.W + (xx)) * g.D + d))
    if (!bilinear) { y[i] = G_PX(ty[2], tx[2]); continue; }
    const float wy = w[b * g.CH + cy], wx = w[g.n * g.CH + b * g.CW + cx];
    const float tl = G_PX(ty[0], tx[0]), tr = G_PX(ty[0], tx[1]), bl = G_PX(ty[1], tx[0]), br = G_PX(ty[1], tx[1]);
#undef G_PX
    const float top = tl + (tr - tl) * wx, bottom = bl + (br - bl) * wx;
    y[i] = top + (bottom - top) * wy;
  }
}
)";
  return r;
}

/// ResizeNearestNeighbor's copy for elements of 1, 2, 4 and 8 bytes (`resize_nearest_S`):
/// y [N, OH, OW, C] from x [N, H, W, C] at rows idx[0, OH) and columns idx[OH, OH + OW).
inline const std::string& nearest_source() {
  static const std::string s = [] {
    std::string r = cuda_codegen::cuda_prelude();
    r += "struct g_img { long long N, H, W, C, OH, OW; };\n";
    r += R"(template <class U> __device__ __forceinline__ void t_nearest(const U* __restrict__ x, U* __restrict__ y, g_img g,
                                                             const long long* __restrict__ idx) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x, n = g.N * g.OH * g.OW * g.C; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long c = i % g.C, q = i / g.C, ox = q % g.OW, oy = (q / g.OW) % g.OH, b = q / (g.OW * g.OH);
    y[i] = x[((b * g.H + idx[oy]) * g.W + idx[g.OH + ox]) * g.C + c];
  }
}
)";
    const char* types[] = {"unsigned char", "unsigned short", "unsigned int", "unsigned long long"};
    for (int q = 0; q < 4; ++q) {
      const std::string U = types[q];
      r += "extern \"C\" __global__ void resize_nearest_" + std::to_string(1 << q) + "(const " + U + "* x, " + U +
           "* y, g_img g, const long long* idx) { t_nearest(x, y, g, idx); }\n";
    }
    return r;
  }();
  return s;
}

/// The device image of `resize_sizes`.
struct g_img {
  long long N = 0, H = 0, W = 0, C = 0, OH = 0, OW = 0;
};

using cuda_detail::upload_vector;

/// The resize kinds.
enum class resize_kind { bilinear, nearest, bicubic, area };

/// A resize's taps as its kernel reads them (see `resize_source` / `nearest_source`): int64
/// positions, float weights, and ResizeArea's normalization.
struct resize_taps {
  std::vector<i64> idx;
  std::vector<float> w;
  float norm = 0;
};
inline resize_taps plan_resize_taps(resize_kind kind, const tf_rules::resize_sizes& d, const tf_rules::resize_attrs& a) {
  const float hs = tf_rules::resize_scale(d.H, d.OH, a.align), ws = tf_rules::resize_scale(d.W, d.OW, a.align);
  resize_taps p;
  switch (kind) {
    case resize_kind::nearest: {
      p.idx = tf_rules::nearest_axis(d.OH, d.H, hs, a.align, a.half);
      const auto cols = tf_rules::nearest_axis(d.OW, d.W, ws, a.align, a.half);
      p.idx.insert(p.idx.end(), cols.begin(), cols.end());
      break;
    }
    case resize_kind::bilinear: {  // row lo, row hi, column lo, column hi; row lerps, column lerps
      const auto rows = tf_rules::bilinear_axis(d.OH, d.H, hs, a.half), cols = tf_rules::bilinear_axis(d.OW, d.W, ws, a.half);
      for (const auto* axis : {&rows, &cols}) {
        for (const auto& tap : *axis) p.idx.push_back(tap.lo);
        for (const auto& tap : *axis) p.idx.push_back(tap.hi);
      }
      for (const auto* axis : {&rows, &cols})
        for (const auto& tap : *axis) p.w.push_back(tap.lerp);
      break;
    }
    case resize_kind::bicubic: {  // four taps per row, then per column
      const auto rows = tf_rules::bicubic_axis(d.OH, d.H, hs, a.half), cols = tf_rules::bicubic_axis(d.OW, d.W, ws, a.half);
      for (const auto* axis : {&rows, &cols})
        for (const auto& taps : *axis) {
          p.idx.insert(p.idx.end(), taps.at.begin(), taps.at.end());
          p.w.insert(p.w.end(), taps.w.begin(), taps.w.end());
        }
      break;
    }
    case resize_kind::area: {  // row cell offsets, column cell offsets, row cells, column cells
      const auto rows = tf_rules::area_axis(d.OH, d.H, hs), cols = tf_rules::area_axis(d.OW, d.W, ws);
      for (const auto* axis : {&rows, &cols}) {
        i64 at = 0;
        p.idx.push_back(0);
        for (const auto& cells : *axis) p.idx.push_back(at += static_cast<i64>(cells.at.size()));
      }
      for (const auto* axis : {&rows, &cols})
        for (const auto& cells : *axis) {
          p.idx.insert(p.idx.end(), cells.at.begin(), cells.at.end());
          p.w.insert(p.w.end(), cells.w.begin(), cells.w.end());
        }
      p.norm = static_cast<float>(1.0 / static_cast<double>(hs * ws));
      break;
    }
  }
  return p;
}

/// ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic and ResizeArea (see the file comment).
inline fn make_tf_resize(const kernel_node& n, resize_kind kind) {
  tf_rules::resize_attrs a;
  if (kind == resize_kind::area) a.align = flag(n, "align_corners", false);
  else a = tf_rules::read_resize_attrs(n);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [kind, a, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    const tf_rules::resize_sizes d = tf_rules::resize_geometry(x.sizes(), vector_input(ctx, 1, "size"), ctx.node());
    cuda_tensor& y = ctx.allocate_output(0, kind == resize_kind::nearest ? t : dtype::f32, {d.N, d.OH, d.OW, d.C});
    if (y.size() == 0) return;
    resize_taps p = plan_resize_taps(kind, d, a);
    auto& pol = ctx.policy();
    const cuda_tensor di = upload_vector(ctx, dtype::int64, p.idx);
    const cuda_tensor dw = p.w.empty() ? cuda_tensor{} : upload_vector(ctx, dtype::f32, p.w);
    g_img g{d.N, d.H, d.W, d.C, d.OH, d.OW};
    const void* xp = x.data();
    void* yp = y.data();
    const void* ip = di.data();
    const void* wp = p.w.empty() ? nullptr : dw.data();
    long long total = y.size();
    if (kind == resize_kind::nearest) {
      cuda_array_detail::require_movable(ctx, t);
      const std::size_t es = size_of(t);
      const std::size_t q = es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3;
      const auto& k = lib->get(pol, "nearest", {"resize_nearest_1", "resize_nearest_2", "resize_nearest_4", "resize_nearest_8"},
                               [] { return nearest_source(); });
      void* args[] = {&xp, &yp, &g, &ip};
      pol.launch(k.kernels[q], pol.blocks_for(total), 256, args, ctx.stream());
      return;
    }
    const auto& k = lib->get(pol, std::string(to_string(t)), {"resize_bilinear", "resize_bicubic", "resize_area"}, [&] { return resize_source(t); });
    void* args[] = {&xp, &yp, &g, &ip, &wp, &p.norm};
    const std::size_t entry = kind == resize_kind::bilinear ? 0 : kind == resize_kind::bicubic ? 1 : 2;
    pol.launch(k.kernels[entry], pol.blocks_for(total), 256, args, ctx.stream());
  };
}

/// The device image of `g_crop`.
struct g_crop {
  long long n = 0, H = 0, W = 0, D = 0, CH = 0, CW = 0;
};

/// CropAndResize(image, boxes, box_ind, crop_size), bilinear or nearest: the boxes and their
/// images are read back and checked as on the CPU (`tf_rules::crop_geometry`,
/// `check_crop_boxes`), each box's row and column samples planned by the CPU's rule
/// (`tf_rules::crop_axis`) and uploaded; `crop_and_resize` computes each output element from
/// them in the CPU's order of operations.
inline fn make_crop_and_resize(const kernel_node& n) {
  const std::string method = n.attr<std::string>("method", "bilinear");
  if (method != "bilinear" && method != "nearest") n.fail("method must be 'bilinear' or 'nearest', got '" + method + "'");
  const float extrapolation = n.attr<float>("extrapolation_value", 0.0f);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [bilinear = method == "bilinear", extrapolation, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const kernel_node& node = ctx.node();
    if (ctx.input(1).element_type() != dtype::f32) ctx.fail("boxes must be float32");
    const tf_rules::crop_sizes c = tf_rules::crop_geometry(x.sizes(), ctx.input(1).sizes(), ctx.input(2).sizes(), ctx.input(3).sizes(),
                                                           [&] { return vector_input(ctx, 3, "crop_size"); }, node);
    const std::vector<i64> ind = vector_input(ctx, 2, "box_ind");
    const gpass::tensor boxes = cuda_detail::host_value(ctx, 1);
    const float* bx = boxes.data<float>();
    tf_rules::check_crop_boxes(ind, bx, c, node);
    num_elements_or_throw(std::vector<i64>{c.n, c.CH, c.CW, c.D});
    cuda_tensor& y = ctx.allocate_output(0, dtype::f32, {c.n, c.CH, c.CW, c.D});
    if (y.size() == 0) return;
    std::vector<i64> idx(ind);
    std::vector<float> rows_w, cols_w;
    std::vector<i64> cols_idx;
    for (i64 b = 0; b < c.n; ++b) {
      const float* box = bx + b * 4;  // y1, x1, y2, x2
      for (const auto& t : tf_rules::crop_axis(box[0], box[2], c.CH, c.H)) {
        idx.insert(idx.end(), {t.inside ? t.lo : -1, t.hi, t.near});
        rows_w.push_back(t.lerp);
      }
      for (const auto& t : tf_rules::crop_axis(box[1], box[3], c.CW, c.W)) {
        cols_idx.insert(cols_idx.end(), {t.inside ? t.lo : -1, t.hi, t.near});
        cols_w.push_back(t.lerp);
      }
    }
    idx.insert(idx.end(), cols_idx.begin(), cols_idx.end());
    rows_w.insert(rows_w.end(), cols_w.begin(), cols_w.end());
    auto& pol = ctx.policy();
    const cuda_tensor di = upload_vector(ctx, dtype::int64, idx), dw = upload_vector(ctx, dtype::f32, rows_w);
    const dtype t = x.element_type();
    const auto& k = lib->get(pol, std::string(to_string(t)), {"crop_and_resize"}, [&] { return resize_source(t); });
    g_crop g{c.n, c.H, c.W, c.D, c.CH, c.CW};
    const void* xp = x.data();
    void* yp = y.data();
    const void* ip = di.data();
    const void* wp = dw.data();
    int bl = bilinear;
    float ex = extrapolation;
    void* args[] = {&xp, &yp, &g, &ip, &wp, &bl, &ex};
    pol.launch(k.kernels[0], pol.blocks_for(y.size()), 256, args, ctx.stream());
  };
}

/// The image types of the float-output resizes (every number type the CPU reads as float).
inline std::vector<dtype> resize_types() {
  std::vector<dtype> r;
  for (dtype t : cuda_array_detail::movable_types())
    if (t != dtype::bool_) r.push_back(t);
  return r;
}

}  // namespace cuda_tf

/// Every source tf_image.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> tf_image_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r{{"tf::resize_nearest", cuda_tf::nearest_source()}};
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::uint8, dtype::int64})
    r.emplace_back("tf::resize_" + std::string(to_string(t)), cuda_tf::resize_source(t));
  return r;
}

/// Registers tf_image.hpp's kernels.
inline void register_cuda_tf_image(kernel_registry<cuda>& r) {
  using namespace cuda_tf;
  const std::pair<const char*, resize_kind> kinds[] = {{"ResizeBilinear", resize_kind::bilinear},
                                                       {"ResizeNearestNeighbor", resize_kind::nearest},
                                                       {"ResizeBicubic", resize_kind::bicubic},
                                                       {"ResizeArea", resize_kind::area}};
  for (const auto& [name, kind] : kinds)
    r.add({.domain = "tf", .op = name, .dtypes = kind == resize_kind::nearest ? cuda_array_detail::movable_types() : resize_types(),
           .make = [kind](const kernel_node& n) { return make_tf_resize(n, kind); }});
  r.add({.domain = "tf", .op = "CropAndResize", .dtypes = resize_types(), .make = make_crop_and_resize});
}

}  // namespace gpass::exec
