// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file grid.hpp
/// CUDA kernels of ONNX's sampling ops: AffineGrid (opset 20), RoiAlign (avg and max, a thread
/// per output element sampling as the CPU kernel does, in double), DeformConv (19, 2-D: a
/// thread per output element sums its taps' bilinear samples in double in the CPU's order; a
/// direct convolution, no im2col product) and GridSample (any number of
/// spatial dimensions; nearest, linear and cubic; zeros, border and reflection padding;
/// align_corners), f32, f64, f16 and bf16, as the CPU kernels compute them:
/// - AffineGrid: a thread per grid point, theta times the normalized coordinates (x, y[, z],
///   1) in double, converted through the compute type;
/// - GridSample: a thread per output element. Along each spatial dimension the sample
///   coordinate, its padding and taps follow the CPU kernel step for step in double (taps the
///   padding sends to one index merged, their weights summed; dimensions with one tap folded
///   into a base offset and weight); the taps of the dimensions are then visited in the CPU's
///   order (last dimension fastest) with the weight products formed in its order, and the
///   sum taken in the compute type: the CPU's result, bit for bit. The source is generated per
///   number of spatial dimensions, so no rank limit applies; the limit on the points one output
///   reads (1024) and every check and message are the CPU's.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/nn_rules.hpp>
#include <gpass/exec/scratch.hpp>

namespace gpass::exec {

namespace cuda_grid {

using cuda_detail::context;
using cuda_detail::fn;
using i64 = std::int64_t;

/// `grid_sample` over x [N, C, dims...] (T) with grid [N, points..., k] (G) into y [N, C,
/// points...] for `k` spatial dimensions.
inline std::string grid_sample_source(dtype t, dtype grid, int k) {
  std::string s = cuda_nn::head(t);
  s += "typedef " + std::string(cuda_codegen::storage_type(grid)) + " G;\n#define G_K " + std::to_string(k) + "\n";
  s += R"(struct g_gs { long long N, C, points, plane; long long dims[G_K], pstr[G_K]; int mode, pad, align; };
__device__ __forceinline__ double g_clampd(double v, double lo, double hi) { return v < lo ? lo : hi < v ? hi : v; }
__device__ __forceinline__ long long g_clampi(long long v, long long lo, long long hi) { return v < lo ? lo : hi < v ? hi : v; }
// x reflected into [lo, hi] (closed form); not finite: NaN
__device__ double g_reflect(double x, double lo, double hi) {
  if (x != x || x - x != 0) return 0.0 / 0.0;
  const double rng = hi - lo;
  if (rng <= 0) return lo;
  if (x < lo || x > hi) {
    const double dx = x < lo ? lo - x : x - hi;
    const double k = floor(dx / rng);
    const double r = g_clampd(dx - k * rng, 0.0, rng);
    const bool even = fmod(k, 2.0) == 0;
    return x < lo ? (even ? lo + r : hi - r) : (even ? hi - r : lo + r);
  }
  return x;
}
extern "C" __global__ void grid_sample(const T* __restrict__ x, const G* __restrict__ grid, T* __restrict__ y, g_gs g) {
  const int taps = g.mode == 0 ? 1 : g.mode == 1 ? 2 : 4;
  const long long total = g.N * g.C * g.points;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
    const long long p = e % g.points, nc = e / g.points, nn = nc / g.C;
    const long long u = nn * g.points + p;
    long long dq[G_K][4];
    double dw[G_K][4];
    int nd[G_K];
    long long base = 0;
    double base_w = 1;
    bool none = false;
    for (int i = 0; i < G_K && !none; ++i) {
      const double v = (double)g_load(grid, u * G_K + (G_K - 1 - i));
      const double len = (double)g.dims[i];
      double c = g.align ? (v + 1) / 2 * (len - 1) : ((v + 1) * len - 1) / 2;
      const double lo = g.align ? 0.0 : -0.5, hi = g.align ? len - 1 : len - 0.5;
      if (g.mode == 0) c = rint(c);
      if (c < lo || c > hi) {
        if (g.pad == 1) c = g_clampd(c, 0.0, len - 1);
        else if (g.pad == 2) c = g_reflect(c, lo, hi);
      }
      if (c != c) { none = true; break; }
      c = g_clampd(c, lo - 4, hi + 4);
      long long ix[4];
      double w[4];
      if (g.mode == 0) {
        ix[0] = (long long)c;
        w[0] = 1;
      } else {
        const double f0 = floor(c), f = c - f0;
        const long long x0 = (long long)f0;
        if (g.mode == 1) {
          ix[0] = x0, ix[1] = x0 + 1;
          w[0] = 1 - f, w[1] = f;
        } else {
          const double A = -0.75, a = fabs(f);
          for (int t = 0; t < 4; ++t) ix[t] = x0 - 1 + t;
          w[0] = ((A * (a + 1) - 5 * A) * (a + 1) + 8 * A) * (a + 1) - 4 * A;
          w[1] = ((A + 2) * a - (A + 3)) * a * a + 1;
          w[2] = ((A + 2) * (1 - a) - (A + 3)) * (1 - a) * (1 - a) + 1;
          w[3] = ((A * (2 - a) - 5 * A) * (2 - a) + 8 * A) * (2 - a) - 4 * A;
        }
      }
      int n = 0;
      for (int t = 0; t < taps; ++t) {
        long long q = ix[t];
        if (q < 0 || q >= g.dims[i]) {
          if (g.pad == 0) continue;
          if (g.pad == 1) q = g_clampi(q, 0, g.dims[i] - 1);
          else q = g_clampi((long long)g_reflect((double)q, lo, hi), 0, g.dims[i] - 1);
        }
        int j = 0;
        while (j < n && dq[i][j] != q) ++j;
        if (j == n) dq[i][n] = q, dw[i][n++] = 0;
        dw[i][j] += w[t];
      }
      if (n == 0) { none = true; break; }
      nd[i] = n;
      if (n == 1) {
        base += dq[i][0] * g.pstr[i];
        base_w *= dw[i][0];
        nd[i] = 0;  // (folded: not visited below)
      }
    }
    W acc = 0;
    if (!none) {
      const T* src = x + nc * g.plane + base;
      int at[G_K];
      for (int i = 0; i < G_K; ++i) at[i] = 0;
      for (;;) {
        long long off = 0;
        double wt = 1.0;
        for (int i = 0; i < G_K; ++i)
          if (nd[i] > 1) off += dq[i][at[i]] * g.pstr[i], wt *= dw[i][at[i]];
        acc += (W)(wt * base_w) * (W)g_load(src, off);
        int i = G_K - 1;
        for (; i >= 0; --i) {
          if (nd[i] <= 1) continue;
          if (++at[i] < nd[i]) break;
          at[i] = 0;
        }
        if (i < 0) break;
      }
    }
    g_store(y, e, acc);
  }
}
)";
  return s;
}

/// `affine_grid`: grid [N, (D,) H, W, k] from theta [N, k, k + 1] (k 2 or 3).
inline std::string affine_grid_source(dtype t) {
  return cuda_nn::head(t) + R"(__device__ __forceinline__ double g_coord(long long i, long long n, int align) {
  if (align) return n == 1 ? -1.0 : -1.0 + 2.0 * (double)i / (double)(n - 1);
  return -1.0 + (2.0 * (double)i + 1.0) / (double)n;
}
extern "C" __global__ void affine_grid(const T* __restrict__ theta, T* __restrict__ y, long long N, long long D, long long H, long long W_,
                                       int k, int align) {
  const long long total = N * D * H * W_;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
    const long long xx = e % W_, yy = (e / W_) % H, z = (e / (W_ * H)) % D, b = e / (W_ * H * D);
    const double p[4] = {g_coord(xx, W_, align), g_coord(yy, H, align), k == 3 ? g_coord(z, D, align) : 1.0, 1.0};
    const T* t = theta + b * k * (k + 1);
    for (int row = 0; row < k; ++row) {
      double acc = 0;
      for (int c = 0; c <= k; ++c) acc += (double)(W)g_load(t, row * (k + 1) + c) * p[c];
      g_store(y, e * k + row, (W)acc);
    }
  }
}
)";
}

/// `roi_align`: y [R, C, oh, ow] from x [N, C, H, W], a thread per output element; each roi's
/// box (x0, y0, w, h in pixels) and sampling grid (gh x gw per bin) in `box` / `grid`, its image
/// in `img`. The samples and their bilinear weights in double, avg (the mean) or max (of the
/// weighted corners), as the CPU kernel.
inline std::string roi_align_source(dtype t) {
  return cuda_nn::head(t) + R"(struct g_roi { long long R, C, H, W, oh, ow; int avg; };
extern "C" __global__ void roi_align(const T* __restrict__ x, T* __restrict__ y, const double* __restrict__ box,
                                     const long long* __restrict__ grid, const long long* __restrict__ img, g_roi g) {
  const long long total = g.R * g.C * g.oh * g.ow;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
    const long long pw = e % g.ow, ph = (e / g.ow) % g.oh, c = (e / (g.ow * g.oh)) % g.C, r = e / (g.ow * g.oh * g.C);
    const double sw = box[4 * r], sh = box[4 * r + 1], bh = box[4 * r + 3] / (double)g.oh, bw = box[4 * r + 2] / (double)g.ow;
    const long long gh = grid[2 * r], gw = grid[2 * r + 1];
    const double count = (double)(gh * gw > 1 ? gh * gw : 1);
    const T* src = x + (img[r] * g.C + c) * g.H * g.W;
    double acc = 0;
    bool first = true;
    for (long long iy = 0; iy < gh; ++iy) {
      const double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
      for (long long ix = 0; ix < gw; ++ix) {
        const double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
        long long p[4] = {0, 0, 0, 0};
        double w[4] = {0, 0, 0, 0};
        if (!(yy < -1.0 || yy > (double)g.H || xx < -1.0 || xx > (double)g.W)) {
          double yv = yy > 0.0 ? yy : 0.0, xv = xx > 0.0 ? xx : 0.0;
          long long yl = (long long)yv, xl = (long long)xv, yh, xh;
          if (yl >= g.H - 1) { yh = yl = g.H - 1; yv = (double)yl; } else { yh = yl + 1; }
          if (xl >= g.W - 1) { xh = xl = g.W - 1; xv = (double)xl; } else { xh = xl + 1; }
          const double ly = yv - (double)yl, lx = xv - (double)xl, hy = 1 - ly, hx = 1 - lx;
          p[0] = yl * g.W + xl, p[1] = yl * g.W + xh, p[2] = yh * g.W + xl, p[3] = yh * g.W + xh;
          w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
        }
        if (g.avg) {
          for (int j = 0; j < 4; ++j) acc += w[j] * (double)(W)g_load(src, p[j]);
        } else {
          double v = w[0] * (double)(W)g_load(src, p[0]);
          for (int j = 1; j < 4; ++j) { const double u = w[j] * (double)(W)g_load(src, p[j]); v = v < u ? u : v; }
          acc = first ? v : (acc < v ? v : acc);
          first = false;
        }
      }
    }
    g_store(y, e, (W)(g.avg ? acc / count : acc));
  }
}
)";
}

/// RoiAlign(X, rois, batch_indices): mode, output_height / width, sampling_ratio,
/// spatial_scale, coordinate_transformation_mode. The rois and indices are read on the host
/// and checked as on the CPU (finite boxes, indices in range, each roi's table of samples
/// within the tensor limit); each roi's box and grid are uploaded.
inline fn make_roi_align(const kernel_node& n) {
  const nn_rules::roi_align_attrs attrs = nn_rules::roi_align_attrs::read(n);
  const i64 oh = attrs.oh, ow = attrs.ow;
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& rois_t = ctx.input(1);
    cuda_nn::check_float(ctx, rois_t, "rois");
    if (x.rank() != 4) ctx.fail("X must have rank 4 (N x C x H x W), got shape " + x.shape().to_string());
    if (rois_t.rank() != 2 || rois_t.sizes()[1] != 4) ctx.fail("rois must have shape [num_rois, 4], got " + rois_t.shape().to_string());
    const i64 R = rois_t.sizes()[0];
    const std::vector<i64> bidx = cuda_detail::host_ints(ctx, 2);
    if (static_cast<i64>(bidx.size()) != R) ctx.fail("batch_indices must have num_rois elements");
    const i64 N = x.sizes()[0], C = x.sizes()[1], H = x.sizes()[2], W = x.sizes()[3];
    if ((H == 0 || W == 0) && R * C > 0) ctx.fail("cannot pool from an empty feature map " + x.shape().to_string());
    for (i64 b : bidx)
      if (b < 0 || b >= N) ctx.fail("batch index " + std::to_string(b) + " is out of range [0, " + std::to_string(N) + ")");
    const std::vector<double> rois = R > 0 ? cuda_detail::host_values_as<double>(ctx, 1, 0.0) : std::vector<double>{};
    std::vector<double> box(static_cast<std::size_t>(4 * R));
    std::vector<i64> grid(static_cast<std::size_t>(2 * R));
    for (i64 r = 0; r < R; ++r) {
      const nn_rules::roi_box b = nn_rules::roi_align_box(rois.data() + 4 * r, attrs, r, ctx);
      const std::size_t at = static_cast<std::size_t>(r);
      box[4 * at] = b.x0, box[4 * at + 1] = b.y0, box[4 * at + 2] = b.w, box[4 * at + 3] = b.h;
      grid[2 * at] = b.gh, grid[2 * at + 1] = b.gw;
    }
    const dtype t = x.element_type();
    cuda_tensor& y = ctx.allocate_output(0, t, {R, C, oh, ow});
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const cuda_tensor db = cuda_detail::upload_vector(ctx, dtype::f64, box), dg = cuda_detail::upload_vector(ctx, dtype::int64, grid),
                      di = cuda_detail::upload_vector(ctx, dtype::int64, bidx);
    const auto& kn = lib->get(pol, std::string(to_string(t)), {"roi_align"}, [&] { return roi_align_source(t); });
    struct {
      long long R, C, H, W, oh, ow;
      int avg;
    } g{R, C, H, W, oh, ow, attrs.avg ? 1 : 0};
    const void* xp = x.data();
    void* yp = y.data();
    const void* bp = db.data();
    const void* gp = dg.data();
    const void* ip = di.data();
    void* args[] = {&xp, &yp, &bp, &gp, &ip, &g};
    pol.launch(kn.kernels[0], pol.blocks_for(y.size()), 256, args, ctx.stream());
  };
}

/// GridSample(X, grid): mode, padding_mode, align_corners; the checks and limit the CPU's.
inline fn make_grid_sample(const kernel_node& n) {
  const nn_rules::grid_sample_attrs attrs = nn_rules::grid_sample_attrs::read(n);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [attrs, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& grid = ctx.input(1);
    cuda_nn::check_float(ctx, grid, "grid");
    const auto& xs = x.sizes();
    const nn_rules::grid_sample_shape shp = nn_rules::grid_sample_geometry(xs, x.size(), grid.sizes(), attrs, ctx.node());
    const std::vector<i64>& out_sizes = shp.out;
    const bool work = shp.work;
    const std::size_t k = xs.size() - 2;
    const i64 N = xs[0], C = xs[1];
    const dtype t = x.element_type();
    cuda_tensor& y = ctx.allocate_output(0, t, out_sizes);
    if (!work) return;
    // the kernel's parameters: N, C, points, plane, dims[k], pstr[k] (int64), then mode, pad, align (int)
    std::vector<long long> words{N, C, y.size() / (N * C), x.size() / (N * C)};
    for (std::size_t d = 0; d < k; ++d) words.push_back(xs[2 + d]);
    std::vector<long long> pstr(k, 1);
    for (std::size_t d = k - 1; d-- > 0;) pstr[d] = pstr[d + 1] * xs[3 + d];
    words.insert(words.end(), pstr.begin(), pstr.end());
    std::vector<std::byte> params(words.size() * sizeof(long long) + 3 * sizeof(int) + sizeof(long long));
    std::memcpy(params.data(), words.data(), words.size() * sizeof(long long));
    const int flags[3] = {static_cast<int>(attrs.mode), static_cast<int>(attrs.pad), attrs.align ? 1 : 0};
    std::memcpy(params.data() + words.size() * sizeof(long long), flags, sizeof flags);
    auto& pol = ctx.policy();
    const std::string key = std::string(to_string(t)) + "_" + std::string(to_string(grid.element_type())) + "_" + std::to_string(k);
    const auto& kn = lib->get(pol, key, {"grid_sample"}, [&] { return grid_sample_source(t, grid.element_type(), static_cast<int>(k)); });
    const void* xp = x.data();
    const void* gp = grid.data();
    void* yp = y.data();
    void* args[] = {&xp, &gp, &yp, params.data()};
    pol.launch(kn.kernels[0], pol.blocks_for(y.size()), 256, args, ctx.stream());
  };
}

/// AffineGrid(theta, size): align_corners; the checks the CPU's.
inline fn make_affine_grid(const kernel_node& n) {
  const bool align = n.attr<i64>("align_corners", 0) != 0;
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [align, lib](context& ctx) {
    const cuda_tensor& theta = ctx.input(0);
    const std::vector<i64> size = cuda_detail::host_ints(ctx, 1);
    if (size.size() != 4 && size.size() != 5) ctx.fail("size must have 4 (2-D) or 5 (3-D) values, got " + std::to_string(size.size()));
    const std::size_t nd = size.size() - 2;
    const i64 N = size[0];
    if (theta.rank() != 3 || theta.sizes()[0] != N || theta.sizes()[1] != static_cast<i64>(nd) || theta.sizes()[2] != static_cast<i64>(nd) + 1)
      ctx.fail("theta must be [" + std::to_string(N) + ", " + std::to_string(nd) + ", " + std::to_string(nd + 1) + "], got " +
               theta.shape().to_string());
    for (i64 v : size)
      if (v < 0) ctx.fail("size must not be negative");
    std::vector<i64> out{N};
    for (std::size_t d = 0; d < nd; ++d) out.push_back(size[2 + d]);
    out.push_back(static_cast<i64>(nd));
    const dtype t = theta.element_type();
    cuda_tensor& y = ctx.allocate_output(0, t, out);
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const auto& kn = lib->get(pol, std::string(to_string(t)), {"affine_grid"}, [&] { return affine_grid_source(t); });
    const void* tp = theta.data();
    void* yp = y.data();
    long long nn = N, D = nd == 3 ? size[2] : 1, H = size[nd == 3 ? 3 : 2], W = size[nd == 3 ? 4 : 3];
    int kk = static_cast<int>(nd), al = align ? 1 : 0;
    void* args[] = {&tp, &yp, &nn, &D, &H, &W, &kk, &al};
    pol.launch(kn.kernels[0], pol.blocks_for(N * D * H * W), 256, args, ctx.stream());
  };
}


// ---- DeformConv ---------------------------------------------------------------------------------

/// `deform_conv(x, w, off, b, mask, y, g)`: a thread per output element (n, m, oh, ow) sums, in
/// double and in the CPU's order (input channel of the group, then tap), each tap's bilinear
/// sample of X at its offset position (zero outside), times the mask and the weight, after
/// the bias; b and mask may be null.
inline std::string deform_conv_source(dtype t) {
  return cuda_codegen::cuda_prelude() + "typedef " + std::string(cuda_codegen::storage_type(t)) + R"( T;
struct g_deform { long long N, C, H, W, M, Cg, kH, kW, oH, oW, og, group, sh, sw, ph, pw, dh, dw; };
extern "C" __global__ void deform_conv(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ off,
    const T* __restrict__ b, const T* __restrict__ mask, T* __restrict__ y, g_deform g) {
  const long long taps = g.kH * g.kW, total = g.N * g.M * g.oH * g.oW, Mg = g.M / g.group, Cog = g.C / g.og;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const long long ow = i % g.oW, oh = (i / g.oW) % g.oH, m = (i / (g.oW * g.oH)) % g.M, nb = i / (g.oW * g.oH * g.M);
    const long long grp = m / Mg;
    double acc = b ? (double)g_load(b, m) : 0.0;
    for (long long cl = 0; cl < g.Cg; ++cl) {
      const long long c = grp * g.Cg + cl, ogi = c / Cog;
      const T* plane = x + (nb * g.C + c) * g.H * g.W;
      for (long long t = 0; t < taps; ++t) {
        const long long kh = t / g.kW, kw = t % g.kW;
        const long long oi = ((nb * g.og + ogi) * taps + t) * 2;
        const double dh = (double)g_load(off, (oi * g.oH + oh) * g.oW + ow);
        const double dw = (double)g_load(off, ((oi + 1) * g.oH + oh) * g.oW + ow);
        const double ph = (double)oh * (double)g.sh - (double)g.ph + (double)kh * (double)g.dh + dh;
        const double pw = (double)ow * (double)g.sw - (double)g.pw + (double)kw * (double)g.dw + dw;
        if (!(ph > -1 && ph < (double)g.H && pw > -1 && pw < (double)g.W)) continue;
        const double h0 = floor(ph), w0 = floor(pw);
        const double fh = ph - h0, fw = pw - w0;
        double v = 0;
        for (int a = 0; a < 2; ++a)
          for (int bb = 0; bb < 2; ++bb) {
            const long long hh = (long long)h0 + a, ww = (long long)w0 + bb;
            if (hh < 0 || hh >= g.H || ww < 0 || ww >= g.W) continue;
            v += (a ? fh : 1 - fh) * (bb ? fw : 1 - fw) * (double)g_load(plane, hh * g.W + ww);
          }
        if (mask) v *= (double)g_load(mask, (((nb * g.og + ogi) * taps + t) * g.oH + oh) * g.oW + ow);
        acc += v * (double)g_load(w, ((m * g.Cg + cl) * g.kH + kh) * g.kW + kw);
      }
    }
    g_store(y, i, acc);
  }
}
)";
}

/// DeformConv (19, 2-D): the attributes and shapes checked as on the CPU
/// (`nn_rules::deform_conv_check`).
inline fn make_deform_conv(const kernel_node& n) {
  const nn_rules::deform_conv_attrs a = nn_rules::read_deform_conv_attrs(n);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [a, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& w = ctx.input(1);
    const cuda_tensor& off = ctx.input(2);
    const cuda_tensor* b = ctx.has_input(3) ? &ctx.input(3) : nullptr;
    const cuda_tensor* mask = ctx.has_input(4) ? &ctx.input(4) : nullptr;
    const nn_rules::deform_conv_shape s =
        nn_rules::deform_conv_check(x.sizes(), w.sizes(), off.sizes(), b ? &b->sizes() : nullptr, mask ? &mask->sizes() : nullptr, a, ctx.node());
    const dtype t = x.element_type();
    const std::pair<const cuda_tensor*, const char*> others[] = {{&w, "W"}, {&off, "offset"}, {b, "B"}, {mask, "mask"}};
    for (const auto& [o, what] : others)
      if (o) nn_rules::check_deform_conv_type(t, o->element_type(), what, ctx.node());
    cuda_tensor& y = ctx.allocate_output(0, t, {s.N, s.M, s.oH, s.oW});
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const auto& kn = lib->get(pol, std::string(to_string(t)), {"deform_conv"}, [&] { return deform_conv_source(t); });
    struct {
      long long N, C, H, W, M, Cg, kH, kW, oH, oW, og, group, sh, sw, ph, pw, dh, dw;
    } g{s.N, s.C, s.H, s.W, s.M, s.Cg, s.kH, s.kW, s.oH, s.oW, a.offset_group, a.group,
        a.strides[0], a.strides[1], a.pads[0], a.pads[1], a.dilations[0], a.dilations[1]};
    const void* xp = x.data();
    const void* wp = w.data();
    const void* op = off.data();
    const void* bp = b ? b->data() : nullptr;
    const void* mp = mask ? mask->data() : nullptr;
    void* yp = y.data();
    void* args[] = {&xp, &wp, &op, &bp, &mp, &yp, &g};
    pol.launch(kn.kernels[0], pol.blocks_for(y.size()), 256, args, ctx.stream());
  };
}

}  // namespace cuda_grid

/// Every source grid.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> grid_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) {
    r.emplace_back("affine_grid_" + std::string(to_string(t)), cuda_grid::affine_grid_source(t));
    r.emplace_back("roi_align_" + std::string(to_string(t)), cuda_grid::roi_align_source(t));
    r.emplace_back("deform_conv_" + std::string(to_string(t)), cuda_grid::deform_conv_source(t));
    for (int k : {1, 2, 3}) r.emplace_back("grid_sample_" + std::string(to_string(t)) + "_" + std::to_string(k), cuda_grid::grid_sample_source(t, t, k));
  }
  r.emplace_back("grid_sample_f16_f32_2", cuda_grid::grid_sample_source(dtype::f16, dtype::f32, 2));
  return r;
}

/// Registers grid.hpp's kernels.
inline void register_cuda_grid(kernel_registry<cuda>& r) {
  const std::vector<dtype> floats{dtype::f32, dtype::f64, dtype::f16, dtype::bf16};
  r.add({.op = "GridSample", .dtypes = floats, .make = cuda_grid::make_grid_sample});
  r.add({.op = "AffineGrid", .since_version = 20, .dtypes = floats, .make = cuda_grid::make_affine_grid});
  r.add({.op = "RoiAlign", .dtypes = floats, .make = cuda_grid::make_roi_align});
  r.add({.op = "DeformConv", .since_version = 19, .dtypes = floats, .make = cuda_grid::make_deform_conv});
}

}  // namespace gpass::exec
