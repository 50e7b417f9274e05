// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_color.hpp
/// CUDA kernels of TensorFlow's colour and patch image ops (domain "tf"), each output element
/// computed as the CPU kernel computes it:
///
/// - AdjustHue, AdjustSaturation (f32 RGB, the factor read on the device), RGBToHSV and
///   HSVToRGB (f32, f64: TensorFlow's float arithmetic per pixel, a thread per pixel);
/// - AdjustContrastv2 (f32): each image's channel means by TensorFlow's sum — the plane folded
///   in halves, the odd middle row carried over, one launch per fold — then mean + factor *
///   (x - mean);
/// - ExtractImagePatches (every element type the move library has): a thread per output
///   element copies its input element or writes 0 outside the image.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/array.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/tf.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/tf_rules.hpp>
#include <gpass/ops/tf/image.hpp>

namespace gpass::exec {

namespace cuda_tf {

/// The per-pixel colour kernels for pixels of `t` (f32: all of them; f64: rgb_to_hsv and
/// hsv_to_rgb), and AdjustContrastv2's fold and apply.
inline std::string color_source(dtype t) {
  std::string r = cuda_codegen::cuda_prelude();
  r += "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\n";
  r += t == dtype::f64 ? "#define G_MAX 1.7976931348623157e308\n" : "#define G_MAX 3.40282347e38f\n";
  r += R"(#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x * blockDim.x)
// std::max / std::min: the first operand unless the second compares past it (a NaN first stays)
__device__ __forceinline__ float c_max(float a, float b) { return a < b ? b : a; }
__device__ __forceinline__ float c_min(float a, float b) { return b < a ? b : a; }
// x86's conversion of a float outside int's range (or NaN) to int: INT_MIN (what TensorFlow's kernels get)
__device__ __forceinline__ int g_to_int(float v) { return v > -2147483648.0f && v < 2147483648.0f ? (int)v : (int)0x80000000u; }
extern "C" __global__ void rgb_to_hsv(const T* __restrict__ x, T* __restrict__ y, long long pixels) {
  G_LOOP(pixels) {
    const T* p = x + 3 * i;
    const T r = p[0], g = p[1], b = p[2];
    T v = -G_MAX, lo = G_MAX;  // (the CPU's scan from lowest / max: a NaN never wins a comparison)
    for (int k = 0; k < 3; ++k) {
      if (p[k] > v) v = p[k];
      if (p[k] < lo) lo = p[k];
    }
    const T range = v - lo;
    const T s = v > (T)0 ? range / v : (T)0;
    const T norm = ((T)1 / range) * ((T)1 / (T)6);
    T h = r == v ? norm * (g - b) : g == v ? norm * (b - r) + (T)2 / (T)6 : norm * (r - g) + (T)4 / (T)6;
    if (!(range > (T)0)) h = (T)0;
    if (h < (T)0) h = h + (T)1;
    y[3 * i] = h;
    y[3 * i + 1] = s;
    y[3 * i + 2] = v;
  }
}
__device__ __forceinline__ T g_clamp01(T v) { return v > (T)1 ? (T)1 : v < (T)0 ? (T)0 : v; }
extern "C" __global__ void hsv_to_rgb(const T* __restrict__ x, T* __restrict__ y, long long pixels) {
  G_LOOP(pixels) {
    const T h = x[3 * i], s = x[3 * i + 1], v = x[3 * i + 2];
    const T dh = h * (T)6;
    const T dr = g_clamp01(fabs(dh - (T)3) - (T)1);
    const T dg = g_clamp01(-fabs(dh - (T)2) + (T)2);
    const T db = g_clamp01(-fabs(dh - (T)4) + (T)2);
    const T one_s = -s + (T)1;
    y[3 * i] = (one_s + s * dr) * v;
    y[3 * i + 1] = (one_s + s * dg) * v;
    y[3 * i + 2] = (one_s + s * db) * v;
  }
}
)";
  if (t != dtype::f32) return r;
  r += R"(extern "C" __global__ void adjust_hue(const float* __restrict__ x, float* __restrict__ y, long long pixels, const float* delta_p) {
  const float delta = *delta_p;
  G_LOOP(pixels) {
    const float r = x[3 * i], g = x[3 * i + 1], b = x[3 * i + 2];
    float lo, mid, hi;
    int cat;
    if (r < g) {
      if (b < r) hi = g, mid = r, lo = b, cat = 1;
      else if (b > g) hi = b, mid = g, lo = r, cat = 3;
      else hi = g, mid = b, lo = r, cat = 2;
    } else {
      if (b < g) hi = r, mid = g, lo = b, cat = 0;
      else if (b > r) hi = b, mid = r, lo = g, cat = 4;
      else hi = r, mid = b, lo = g, cat = 5;
    }
    float h = 0;
    if (hi != lo) {
      const float ratio = (mid - lo) / (hi - lo);
      h = (float)cat + ((cat & 1) == 0 ? ratio : 1 - ratio);
    }
    h += delta * 6;
    if (isfinite(h)) {
      if (fabsf(h) > 64 * 6.0f) h = fmodf(h, 6.0f);
      while (h < 0) h += 6;
      while (h >= 6) h -= 6;
    }
    const int hc = g_to_int(h);
    float ratio = h - (float)hc;
    if ((hc & 1) != 0) ratio = 1 - ratio;
    const float v = lo + ratio * (hi - lo);
    float* q = y + 3 * i;
    switch (hc) {
      case 0: q[0] = hi, q[1] = v, q[2] = lo; break;
      case 1: q[0] = v, q[1] = hi, q[2] = lo; break;
      case 2: q[0] = lo, q[1] = hi, q[2] = v; break;
      case 3: q[0] = lo, q[1] = v, q[2] = hi; break;
      case 4: q[0] = v, q[1] = lo, q[2] = hi; break;
      default: q[0] = hi, q[1] = lo, q[2] = v;
    }
  }
}
extern "C" __global__ void adjust_saturation(const float* __restrict__ x, float* __restrict__ y, long long pixels, const float* scale_p) {
  const float scale = *scale_p;
  G_LOOP(pixels) {
    const float r = x[3 * i], g = x[3 * i + 1], b = x[3 * i + 2];
    const float v = c_max(r, c_max(g, b));
    const float range = v - c_min(r, c_min(g, b));
    float s = v > 0 ? range / v : 0.0f;
    const float norm = 1.0f / (6.0f * range);
    float h;
    if (r == v) h = norm * (g - b);
    else if (g == v) h = (float)((double)(norm * (b - r)) + 2.0 / 6.0);
    else h = (float)((double)(norm * (r - g)) + 4.0 / 6.0);
    if (range <= 0.0f) h = 0;
    if (h < 0.0f) h = h + 1;
    s = c_min(1.0f, c_max(0.0f, s * scale));
    const float c = s * v, m = v - c, dh = h * 6;
    const int hc = g_to_int(dh);
    float f = dh;
    if (isfinite(f)) {
      if (fabsf(f) > 64.0f) f = fmodf(f, 2.0f);
      while (f <= 0) f += 2.0f;
      while (f >= 2.0f) f -= 2.0f;
    }
    const float xx = c * (1 - fabsf(f - 1));
    float rr = 0, gg = 0, bb = 0;
    switch (hc) {
      case 0: rr = c, gg = xx; break;
      case 1: rr = xx, gg = c; break;
      case 2: gg = c, bb = xx; break;
      case 3: gg = xx, bb = c; break;
      case 4: rr = xx, bb = c; break;
      case 5: rr = c, bb = xx; break;
      default: break;
    }
    y[3 * i] = rr + m;
    y[3 * i + 1] = gg + m;
    y[3 * i + 2] = bb + m;
  }
}
// one fold of AdjustContrastv2's sum over `batch` planes of `plane` floats (C channels): rows
// [0, right) add rows [left, left + right); the first fold reads the images (and carries the
// odd middle row, when left > right), later ones fold acc in place
extern "C" __global__ void contrast_fold(const float* __restrict__ src, float* acc, long long batch, long long plane, long long C,
                                         long long left, long long right, int first) {
  const long long per = (first ? left : right) * C;
  G_LOOP(batch * per) {
    const long long b = i / per, k = i - b * per;
    float* a = acc + b * plane;
    if (first) {
      const float* p = src + b * plane;
      a[k] = k < right * C ? p[left * C + k] + p[k] : p[k];
    } else {
      a[k] += a[left * C + k];
    }
  }
}
extern "C" __global__ void contrast_apply(const float* __restrict__ x, const float* __restrict__ acc, float* __restrict__ y, long long n,
                                          long long plane, long long C, float scale, const float* factor_p) {
  const float factor = *factor_p;
  G_LOOP(n) {
    const long long b = i / plane, k = i - b * plane;
    const float mean = acc[b * plane + k % C] * scale;
    y[i] = mean + factor * (x[i] - mean);
  }
}
)";
  return r;
}

/// ExtractImagePatches' copy for elements of 1, 2, 4 and 8 bytes (`extract_patches_S`).
inline const std::string& patches_source() {
  static const std::string s = [] {
    std::string r = cuda_codegen::cuda_prelude();
    r += R"(struct g_patch { long long B, H, W, C, OY, OX, KY, KX, SY, SX, PY, PX, RY, RX; };
template <class U> __device__ __forceinline__ void t_patches(const U* __restrict__ x, U* __restrict__ y, g_patch g, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    long long t = i / g.C;
    const long long c = i - t * g.C, kx = t % g.KX;
    t /= g.KX;
    const long long ky = t % g.KY;
    t /= g.KY;
    const long long ox = t % g.OX;
    t /= g.OX;
    const long long oy = t % g.OY, b = t / g.OY;
    const long long iy = oy * g.SY - g.PY + ky * g.RY, ix = ox * g.SX - g.PX + kx * g.RX;
    y[i] = iy < 0 || iy >= g.H || ix < 0 || ix >= g.W ? (U)0 : x[((b * g.H + iy) * g.W + ix) * g.C + c];
  }
}
)";
    const char* types[] = {"unsigned char", "unsigned short", "unsigned int", "unsigned long long"};
    for (int q = 0; q < 4; ++q) {
      const std::string U = types[q];
      r += "extern \"C\" __global__ void extract_patches_" + std::to_string(1 << q) + "(const " + U + "* x, " + U +
           "* y, g_patch g, long long n) { t_patches(x, y, g, n); }\n";
    }
    return r;
  }();
  return s;
}

/// The device image of ExtractImagePatches' geometry.
struct g_patch {
  long long B, H, W, C, OY, OX, KY, KX, SY, SX, PY, PX, RY, RX;
};

inline const std::vector<std::string>& color_entries() {
  static const std::vector<std::string> f32{"rgb_to_hsv", "hsv_to_rgb", "adjust_hue", "adjust_saturation", "contrast_fold", "contrast_apply"};
  return f32;
}

/// The colour kernels of `t` (f64: the first two only).
inline const cuda_detail::lazy_library::entry& color_kernels(context& ctx, cuda_detail::lazy_library& lib, dtype t) {
  static const std::vector<std::string> f64{"rgb_to_hsv", "hsv_to_rgb"};
  return lib.get(ctx.policy(), std::string(to_string(t)), t == dtype::f32 ? color_entries() : f64, [t] { return color_source(t); });
}

/// The scalar f32 factor of an Adjust* op (input 1) after the CPU's checks of the images
/// (rank >= 3, f32; `rgb`: 3 channels) and of the factor.
inline void check_adjust_args(context& ctx, const char* factor, bool rgb) {
  const cuda_tensor& x = ctx.input(0);
  if (x.rank() < 3) ctx.fail("input must be at least 3-D, got shape " + x.shape().to_string());
  if (x.element_type() != dtype::f32) ctx.fail("images must be float32 on the CPU");
  const cuda_tensor& f = ctx.input(1);
  if (f.rank() != 0) ctx.fail(std::string(factor) + " must be scalar, got shape " + f.shape().to_string());
  if (f.element_type() != dtype::f32) ctx.fail(std::string(factor) + " must be float32");
  if (rgb && x.sizes().back() != 3)
    ctx.fail("input must have 3 channels but instead has " + std::to_string(x.sizes().back()) + " channels");
}

/// AdjustHue (`entry` 2, "delta") / AdjustSaturation (3, "scale"), RGBToHSV (0) / HSVToRGB (1).
inline fn make_tf_color(std::size_t entry) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [entry, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    if (entry >= 2) {
      check_adjust_args(ctx, entry == 2 ? "delta" : "scale", true);
    } else {
      if (x.rank() < 1) ctx.fail("input must be at least 1-D, got shape " + x.shape().to_string());
      if (x.sizes().back() != 3) ctx.fail("input must have 3 channels but input only has " + std::to_string(x.sizes().back()) + " channels");
    }
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
    if (y.size() == 0) return;
    const auto& k = color_kernels(ctx, *lib, x.element_type());
    const void* xp = x.data();
    void* yp = y.data();
    long long pixels = x.size() / 3;
    const void* fp = entry >= 2 ? ctx.input(1).data() : nullptr;
    void* args[] = {&xp, &yp, &pixels, &fp};
    auto& pol = ctx.policy();
    pol.launch(k.kernels[entry], pol.blocks_for(pixels), 256, args, ctx.stream());
  };
}

/// AdjustContrastv2(images, contrast_factor).
inline fn make_tf_adjust_contrast() {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [lib](context& ctx) {
    check_adjust_args(ctx, "contrast_factor", false);
    const cuda_tensor& x = ctx.input(0);
    const auto& s = x.sizes();
    cuda_tensor& y = ctx.allocate_output(0, dtype::f32, s);
    if (x.size() == 0) return;
    auto& pol = ctx.policy();
    const auto& k = color_kernels(ctx, *lib, dtype::f32);
    long long C = s.back(), image = s[s.size() - 3] * s[s.size() - 2], plane = image * C, batch = x.size() / plane;
    cuda_tensor acc = pol.allocate_tensor(dtype::f32, {batch * plane}, ctx.stream());
    const void* xp = x.data();
    void* ap = acc.data();
    long long remaining = image;
    int first = 1;
    do {  // TensorFlow's sum: fold the plane in halves down to one row
      long long right = remaining / 2, left = remaining - right;
      const long long n = batch * (first ? left : right) * C;
      void* args[] = {&xp, &ap, &batch, &plane, &C, &left, &right, &first};
      if (n > 0) pol.launch(k.kernels[4], pol.blocks_for(n), 256, args, ctx.stream());
      remaining = left;
      first = 0;
    } while (remaining > 1);
    void* yp = y.data();
    long long n = x.size();
    float scale = 1.0f / static_cast<float>(image);
    const void* fp = ctx.input(1).data();
    void* args[] = {&xp, &ap, &yp, &n, &plane, &C, &scale, &fp};
    pol.launch(k.kernels[5], pol.blocks_for(n), 256, args, ctx.stream());
  };
}

/// ExtractImagePatches(images) {ksizes, strides, rates, padding}, the CPU's geometry and checks.
inline fn make_tf_extract_patches(const kernel_node& n) {
  auto fail = [&n](const std::string& m) { n.fail(m); };
  using gpass::detail::tf_ops::tf_image::patch_attr;
  const auto k = patch_attr(std::optional(tf_rules::int_list(n, "ksizes")), "ksizes", fail);
  const auto s = patch_attr(std::optional(tf_rules::int_list(n, "strides")), "strides", fail);
  const auto rt = patch_attr(std::optional(tf_rules::int_list(n, "rates")), "rates", fail);
  const std::string pad = n.attr<std::string>("padding", "");
  if (pad != "SAME" && pad != "VALID") n.fail("padding must be SAME or VALID, got '" + pad + "'");
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [k, s, rt, same = pad == "SAME", lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    cuda_array_detail::require_movable(ctx, x.element_type());
    if (x.rank() != 4) ctx.fail("input must be 4-dimensional, got shape " + x.shape().to_string());
    const kernel_node& node = ctx.node();
    auto fail = [&node](const std::string& m) { node.fail(m); };
    const i64 B = x.sizes()[0], H = x.sizes()[1], W = x.sizes()[2], C = x.sizes()[3];
    using gpass::detail::tf_ops::tf_image::patch_geometry;
    const auto ay = patch_geometry(H, k.first, s.first, rt.first, same, fail);
    const auto ax = patch_geometry(W, k.second, s.second, rt.second, same, fail);
    const i64 depth = mul_or_throw(mul_or_throw(k.first, k.second, "patch taps"), C, "patch depth");
    const std::vector<i64> sizes{B, ay.out, ax.out, depth};
    num_elements_or_throw(sizes);
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), sizes);
    if (y.size() == 0) return;
    g_patch g{B, H, W, C, ay.out, ax.out, ay.k, ax.k, ay.stride, ax.stride, ay.pad, ax.pad, ay.rate, ax.rate};
    const std::size_t es = size_of(x.element_type());
    const std::size_t q = es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3;
    auto& pol = ctx.policy();
    const auto& kk = lib->get(pol, "patches", {"extract_patches_1", "extract_patches_2", "extract_patches_4", "extract_patches_8"},
                              [] { return patches_source(); });
    const void* xp = x.data();
    void* yp = y.data();
    long long nn = y.size();
    void* args[] = {&xp, &yp, &g, &nn};
    pol.launch(kk.kernels[q], pol.blocks_for(nn), 256, args, ctx.stream());
  };
}

}  // namespace cuda_tf

/// Every source tf_color.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> tf_color_generated_sources() {
  return {{"tf::color_f32", cuda_tf::color_source(dtype::f32)},
          {"tf::color_f64", cuda_tf::color_source(dtype::f64)},
          {"tf::extract_patches", cuda_tf::patches_source()}};
}

/// Registers tf_color.hpp's kernels.
inline void register_cuda_tf_color(kernel_registry<cuda>& r) {
  using namespace cuda_tf;
  r.add({.domain = "tf", .op = "RGBToHSV", .dtypes = {dtype::f32, dtype::f64}, .make = [](const kernel_node&) { return make_tf_color(0); }});
  r.add({.domain = "tf", .op = "HSVToRGB", .dtypes = {dtype::f32, dtype::f64}, .make = [](const kernel_node&) { return make_tf_color(1); }});
  r.add({.domain = "tf", .op = "AdjustHue", .dtypes = {dtype::f32}, .make = [](const kernel_node&) { return make_tf_color(2); }});
  r.add({.domain = "tf", .op = "AdjustSaturation", .dtypes = {dtype::f32}, .make = [](const kernel_node&) { return make_tf_color(3); }});
  r.add({.domain = "tf", .op = "AdjustContrastv2", .dtypes = {dtype::f32}, .make = [](const kernel_node&) { return make_tf_adjust_contrast(); }});
  r.add({.domain = "tf", .op = "ExtractImagePatches", .dtypes = cuda_array_detail::movable_types(), .make = make_tf_extract_patches});
}

}  // namespace gpass::exec
