// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_conv.hpp
/// Eigen CPU kernels of TensorFlow's channels-last convolution and pooling ops and their
/// gradients (domain "tf"): Conv2D, Conv3D, DepthwiseConv2dNative (and its
/// BackpropInput/BackpropFilter), Conv2DBackpropInput, Conv2DBackpropFilter,
/// Conv3DBackpropInputV2, Conv3DBackpropFilterV2, MaxPool, MaxPool3D, MaxPoolV2,
/// MaxPoolWithArgmax, MaxPoolGrad, MaxPool3DGrad, AvgPool, AvgPool3D, AvgPoolGrad,
/// AvgPool3DGrad, LRN, and batch normalization: FusedBatchNorm{,V2,V3} and
/// FusedBatchNormGrad{,V2,V3}. TensorFlow's window rules: `VALID`, `SAME` (out = ceil(in /
/// stride), the smaller half of the padding before), `EXPLICIT` (`explicit_paddings`, 2-D
/// ops); dilations for the convolutions; pooling windows see only the input (no padded
/// values: a max over the valid ones, an average divided by their count). Convolutions are
/// im2col and one GEMM per image, or per block of its output positions where its im2col
/// matrix is large (filter [KD,] KH, KW, C, OC is already the [taps * C, OC] matrix); f32
/// and f64, NHWC / NDHWC only (TensorFlow's CPU kernels take no NCHW either), except
/// MaxPool and AvgPool, which also read NCHW (what the `tf-layout` pass makes of them).
/// Private (`gpass::exec::cpu_detail::tf_detail`); the unit `src/tf_math.cpp` registers them.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

namespace conv_impl {

using conv_types = type_list<float, double>;

using tf_rules::check_depthwise_filter;
using tf_rules::check_filter;
using tf_rules::depthwise_channels;
using tf_rules::geometry;
using tf_rules::grad_operands;
using tf_rules::window;

template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Calls f(o, od, oh, ow) for every output position of `g` (o: the flat position).
template <class F>
void for_each_position(const geometry& g, F&& f) {
  i64 o = 0;
  for (i64 od = 0; od < g.OD; ++od)
    for (i64 oh = 0; oh < g.OH; ++oh)
      for (i64 ow = 0; ow < g.OW; ++ow, ++o) f(o, od, oh, ow);
}

/// Calls f(o, od, oh, ow) for the output positions o in [o0, o1) of `g` (o1 <= out_positions()).
template <class F>
void for_positions(const geometry& g, i64 o0, i64 o1, F&& f) {
  if (o0 >= o1) return;
  i64 ow = o0 % g.OW, oh = o0 / g.OW % g.OH, od = o0 / g.OW / g.OH;
  for (i64 o = o0; o < o1; ++o) {
    f(o, od, oh, ow);
    if (++ow == g.OW) {
      ow = 0;
      if (++oh == g.OH) oh = 0, ++od;
    }
  }
}

/// Calls f(t, p) for every filter tap t (row-major over KD, KH, KW) of output position
/// (od, oh, ow): p is the flat input position it reads, or -1 in the padding. An empty
/// window has no taps (its other sizes may be anything: its filter holds no values).
template <class F>
void for_taps(const geometry& g, i64 od, i64 oh, i64 ow, F&& f) {
  if (g.KD == 0 || g.KH == 0 || g.KW == 0) return;
  i64 t = 0;
  for (i64 kd = 0; kd < g.KD; ++kd) {
    const i64 id = od * g.SD + kd * g.DD - g.PF;
    for (i64 kh = 0; kh < g.KH; ++kh) {
      const i64 ih = oh * g.SH + kh * g.DH - g.PT;
      for (i64 kw = 0; kw < g.KW; ++kw, ++t) {
        const i64 iw = ow * g.SW + kw * g.DW - g.PL;
        const bool inside = id >= 0 && id < g.D && ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
        f(t, inside ? (id * g.H + ih) * g.W + iw : i64{-1});
      }
    }
  }
}

/// Columns of the im2col matrix (taps * C): 0 when the window or the channels are empty,
/// where the window's other sizes are unbounded (an empty filter holds no values). Else
/// bounded by a tensor the caller holds or has allocated (the filter, its gradient: taps *
/// C * OC elements with OC > 0).
inline i64 im2col_width(const geometry& g) {
  return g.C == 0 || g.KD == 0 || g.KH == 0 || g.KW == 0 ? 0 : g.taps() * g.C;
}

/// A 1x1 window of stride 1 without padding: output position o reads input position o,
/// so an image is its own im2col matrix.
inline bool pointwise(const geometry& g) {
  return g.taps() == 1 && g.SD == 1 && g.SH == 1 && g.SW == 1 && g.PF == 0 && g.PT == 0 && g.PL == 0 && g.OD == g.D &&
         g.OH == g.H && g.OW == g.W;
}

/// The blocks of output positions an image's im2col matrix (P rows of K values) is made
/// in, bounding its scratch: the whole image when its matrix fits in `block_bytes` (one GEMM
/// per image), else blocks of about that size, as the matrix of a large window over a large
/// output is far larger than the input and the output (a 100x100x64 window over 1000x1000
/// positions: 2.5 TB). Blocks are multiples of 64 rows (each block's GEMM packs the filter
/// again: at most 1/64 of its work), the last one taking a tail of fewer than 64 rows, so
/// that Eigen computes each row as in one GEMM over the image (whole packets of rows, the
/// same remainder): the forward and input-gradient values do not depend on the blocks (the
/// filter gradient's sums over positions change order). The run's max_tensor_bytes bounds
/// the blocks first (checked as scratch; only a row over it fails).
inline constexpr double block_bytes = 8 << 20;
struct position_blocks {
  i64 P = 0, rows = 0, tail = 0;  // positions; rows per block; rows the last block may take on top
  // The rows of the block at o0 (a block start).
  i64 size(i64 o0) const { return P - o0 <= rows + tail ? P - o0 : rows; }
  // The most rows of a block.
  i64 most() const { return std::min(P, rows + tail); }
};
inline position_blocks blocks_of(const context& ctx, i64 P, i64 K, std::size_t elem, const char* what) {
  const double row = static_cast<double>(K) * static_cast<double>(elem);  // (P, K > 0)
  const std::uint64_t cap = tensor_byte_limit(ctx);
  const double room = cap ? static_cast<double>(cap) / row : std::numeric_limits<double>::infinity();  // rows
  position_blocks b{P, P, 0};
  if (const double fit = std::min(block_bytes / row, room); static_cast<double>(P) > fit)
    b = {P, std::min(P, std::max<i64>(64, static_cast<i64>(fit - 63) / 64 * 64)), 63};
  if (static_cast<double>(b.most()) > room) b = {P, std::max<i64>(1, static_cast<i64>(room)), 0};  // (a small limit)
  check_scratch(ctx, row * static_cast<double>(b.most()), std::string(what) + " (rows of " + std::to_string(K) + " values)");
  return b;
}

// cols[o - o0, t * C + c] = x[p(o, t), c] of one image for the output positions o in [o0, o1)
// (0 in the padding).
template <class T>
void im2col(const geometry& g, const T* x, i64 o0, i64 o1, T* cols) {
  const i64 row = g.taps() * g.C;
  for_positions(g, o0, o1, [&](i64 o, i64 od, i64 oh, i64 ow) {
    T* out = cols + (o - o0) * row;
    for_taps(g, od, oh, ow, [&](i64 t, i64 p) {
      T* dst = out + t * g.C;
      if (p < 0) std::fill(dst, dst + g.C, T(0));
      else std::copy(x + p * g.C, x + (p + 1) * g.C, dst);
    });
  });
}

// The inverse scatter: dx[p(o, t), c] += cols[o - o0, t * C + c] of one image.
template <class T>
void col2im_add(const geometry& g, const T* cols, i64 o0, i64 o1, T* dx) {
  const i64 row = g.taps() * g.C;
  for_positions(g, o0, o1, [&](i64 o, i64 od, i64 oh, i64 ow) {
    const T* in = cols + (o - o0) * row;
    for_taps(g, od, oh, ow, [&](i64 t, i64 p) {
      if (p < 0) return;
      T* dst = dx + p * g.C;
      const T* src = in + t * g.C;
      for (i64 c = 0; c < g.C; ++c) dst[c] += src[c];
    });
  });
}

inline std::vector<i64> sizes_input(const gpass::tensor& t, std::size_t count, const kernel_node& n, const char* what) {
  return tf_rules::sizes_values(vector_ints(t, n, what), count, n, what);
}

// `t` (an out_backprop or grad) must have the window op's output sizes.
inline void check_output_sizes(context& ctx, const gpass::tensor& t, const window& win, const geometry& g, i64 channels,
                               const char* what, const char* op) {
  tf_rules::check_output_sizes(t.sizes(), win, g, channels, what, op, ctx.node());
}

/// Calls f(p) for every valid input position of output position (od, oh, ow) of a pooling
/// window (the padding is not visited).
template <class F>
void for_window(const geometry& g, i64 od, i64 oh, i64 ow, F f) {
  const i64 d0 = od * g.SD - g.PF, h0 = oh * g.SH - g.PT, w0 = ow * g.SW - g.PL;
  // [x0, x0 + k) clipped to [0, size), without forming x0 + k (a window may be near 2^63)
  auto end = [](i64 x0, i64 k, i64 size) { return x0 + std::min(k, size - x0); };
  for (i64 id = std::max<i64>(d0, 0); id < end(d0, g.KD, g.D); ++id)
    for (i64 ih = std::max<i64>(h0, 0); ih < end(h0, g.KH, g.H); ++ih)
      for (i64 iw = std::max<i64>(w0, 0); iw < end(w0, g.KW, g.W); ++iw) f((id * g.H + ih) * g.W + iw);
}

/// Calls `f(out, in, w)` for every output position and valid filter tap of a depthwise
/// convolution of geometry `g` (channel multiplier `M`): the element offsets of the output's
/// channel row (C * M values), the input's channel row (C values) and the filter's [C, M]
/// block at the tap.
template <class F>
void depthwise_walk(const geometry& g, i64 M, F&& f) {
  const i64 OC = g.C * M;
  for (i64 b = 0; b < g.N; ++b)
    for_each_position(g, [&](i64 o, i64 od, i64 oh, i64 ow) {
      const i64 out = (b * g.out_positions() + o) * OC;
      for_taps(g, od, oh, ow, [&](i64 t, i64 p) {
        if (p >= 0) f(out, (b * g.in_positions() + p) * g.C, t * OC);
      });
    });
}

/// The operands of a convolution gradient (`tf_rules::conv_grad_operands`), the sizes input
/// (input 0 for `BackpropInput`, `input_grad`, else input 1) read here.
inline grad_operands read_grad_operands(context& ctx, const window& win, bool input_grad, bool depthwise) {
  const kernel_node& n = ctx.node();
  const gpass::tensor& dy = ctx.input(2);
  std::vector<i64> xs, fs;
  if (input_grad) {
    xs = sizes_input(ctx.input(0), win.rank, n, "input_sizes");
    fs = ctx.input(1).sizes();
    if (ctx.input(1).element_type() != dy.element_type()) ctx.fail("filter and out_backprop have different element types");
  } else {
    xs = ctx.input(0).sizes();
    fs = sizes_input(ctx.input(1), win.rank, n, "filter_sizes");
    if (ctx.input(0).element_type() != dy.element_type()) ctx.fail("input and out_backprop have different element types");
  }
  return tf_rules::conv_grad_operands(std::move(xs), std::move(fs), dy.sizes(), win, depthwise, n);
}

}  // namespace conv_impl

/// Registers FusedBatchNorm{,V2,V3} and FusedBatchNormGrad{,V2,V3} (NHWC: channels last):
/// TensorFlow's CPU rules. Training: the batch's mean and biased variance normalize `x`;
/// outputs batch_mean / batch_variance are the new running statistics (the batch's, the
/// variance Bessel-corrected, blended with the inputs when `exponential_avg_factor` != 1),
/// reserve_space_1/2 the batch mean and biased variance (what the gradient reads). Inference:
/// the given mean and variance. f32 activations and statistics (T = U = f32) and f64.
inline void register_tf_batch_norm(registry& r) {
  using namespace conv_impl;
  for (const char* op : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
    r.add({.domain = domain, .op = op, .dtypes = conv_types::dtypes(), .make = [](const kernel_node& n) -> fn {
      const std::string format = n.attr<std::string>("data_format", std::string("NHWC"));
      if (format != "NHWC") n.fail("data_format " + format + " is not supported on the CPU here (NHWC only)");
      const double eps = n.attr<double>("epsilon", 1e-4), factor = n.attr<double>("exponential_avg_factor", 1.0);
      const bool training = flag(n, "is_training", true);
      return [eps, factor, training](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        if (x.rank() < 2) ctx.fail("x must have rank >= 2, got sizes " + x.shape().to_string());
        const i64 C = x.sizes().back(), rows = C == 0 ? 0 : x.size() / C;
        for (std::size_t k = 1; k < 5; ++k) {
          const gpass::tensor& p = ctx.input(k);
          if (p.element_type() != x.element_type())
            ctx.fail("input " + std::to_string(k) + " is " + std::string(to_string(p.element_type())) + ", x is " +
                     std::string(to_string(x.element_type())) + " (mixed precision is not supported on the CPU here)");
          const bool stats = k >= 3;
          if (p.rank() != 1 || (p.sizes()[0] != C && !(training && stats && p.sizes()[0] == 0)))
            ctx.fail("input " + std::to_string(k) + " must have " + std::to_string(C) + " elements, got sizes " +
                     p.shape().to_string());
        }
        dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
          const T* px = x.data<T>();
          const T* scale = ctx.input(1).template data<T>();
          const T* offset = ctx.input(2).template data<T>();
          std::vector<double> mean(static_cast<std::size_t>(C)), var(static_cast<std::size_t>(C));
          if (training) {
            for (i64 i = 0; i < rows; ++i)
              for (i64 c = 0; c < C; ++c) mean[static_cast<std::size_t>(c)] += static_cast<double>(px[i * C + c]);
            for (auto& m : mean) m /= static_cast<double>(std::max<i64>(rows, 1));
            for (i64 i = 0; i < rows; ++i)
              for (i64 c = 0; c < C; ++c) {
                const double d = static_cast<double>(px[i * C + c]) - mean[static_cast<std::size_t>(c)];
                var[static_cast<std::size_t>(c)] += d * d;
              }
            for (auto& v : var) v /= static_cast<double>(std::max<i64>(rows, 1));
          } else {
            for (i64 c = 0; c < C; ++c) {
              mean[static_cast<std::size_t>(c)] = static_cast<double>(ctx.input(3).template data<T>()[c]);
              var[static_cast<std::size_t>(c)] = static_cast<double>(ctx.input(4).template data<T>()[c]);
            }
          }
          gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
          T* py = y.data<T>();
          for (i64 c = 0; c < C; ++c) {
            const double k = static_cast<double>(scale[c]) / std::sqrt(var[static_cast<std::size_t>(c)] + eps);
            for (i64 i = 0; i < rows; ++i)
              py[i * C + c] = static_cast<T>((static_cast<double>(px[i * C + c]) - mean[static_cast<std::size_t>(c)]) * k +
                                             static_cast<double>(offset[c]));
          }
          const double adjust = rows > 1 ? static_cast<double>(rows) / static_cast<double>(rows - 1) : 1.0;
          auto out = [&](std::size_t k, auto value) {
            if (k >= ctx.num_outputs()) return;
            gpass::tensor& t = ctx.allocate_output(k, x.element_type(), {C});
            for (i64 c = 0; c < C; ++c) t.data<T>()[c] = static_cast<T>(value(static_cast<std::size_t>(c)));
          };
          const bool blend = training && factor != 1.0 && ctx.input(3).size() == C && ctx.input(4).size() == C;
          out(1, [&](std::size_t c) {
            if (!training) return mean[c];
            return blend ? (1 - factor) * static_cast<double>(ctx.input(3).template data<T>()[c]) + factor * mean[c] : mean[c];
          });
          out(2, [&](std::size_t c) {
            if (!training) return var[c];
            const double v = var[c] * adjust;
            return blend ? (1 - factor) * static_cast<double>(ctx.input(4).template data<T>()[c]) + factor * v : v;
          });
          out(3, [&](std::size_t c) { return mean[c]; });
          out(4, [&](std::size_t c) { return var[c]; });
          out(5, [&](std::size_t) { return 0.0; });
        });
      };
    }});
  // dx = scale / sqrt(var + eps) * (dy - mean(dy) - x_hat * mean(dy * x_hat)) in training
  // (the batch statistics' own gradient), scale / sqrt(var + eps) * dy in inference;
  // d_scale = sum(dy * x_hat), d_offset = sum(dy)
  for (const char* op : {"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"})
    r.add({.domain = domain, .op = op, .dtypes = conv_types::dtypes(), .make = [](const kernel_node& n) -> fn {
      const std::string format = n.attr<std::string>("data_format", std::string("NHWC"));
      if (format != "NHWC") n.fail("data_format " + format + " is not supported on the CPU here (NHWC only)");
      const double eps = n.attr<double>("epsilon", 1e-4);
      const bool training = flag(n, "is_training", true);
      return [eps, training](context& ctx) {
        const gpass::tensor& dy = ctx.input(0);
        const gpass::tensor& x = ctx.input(1);
        if (dy.sizes() != x.sizes() || dy.element_type() != x.element_type())
          ctx.fail("y_backprop " + dy.shape().to_string() + " and x " + x.shape().to_string() + " differ");
        if (x.rank() < 2) ctx.fail("x must have rank >= 2, got sizes " + x.shape().to_string());
        const i64 C = x.sizes().back(), rows = C == 0 ? 0 : x.size() / C;
        for (std::size_t k = 2; k < 5; ++k)
          if (ctx.input(k).element_type() != x.element_type() || ctx.input(k).size() != C)
            ctx.fail("input " + std::to_string(k) + " must be " + std::string(to_string(x.element_type())) + "[" +
                     std::to_string(C) + "], got " + std::string(to_string(ctx.input(k).element_type())) +
                     ctx.input(k).shape().to_string());
        dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
          const T* pdy = dy.data<T>();
          const T* px = x.data<T>();
          const T* scale = ctx.input(2).template data<T>();
          const T* mean = ctx.input(3).template data<T>();
          const T* var = ctx.input(4).template data<T>();
          gpass::tensor& dx = ctx.allocate_output(0, x.element_type(), x.sizes());
          gpass::tensor& dscale = ctx.allocate_output(1, x.element_type(), {C});
          gpass::tensor& doffset = ctx.allocate_output(2, x.element_type(), {C});
          for (i64 c = 0; c < C; ++c) {
            const double inv = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps), m = static_cast<double>(mean[c]);
            double sum_dy = 0, sum_dy_xhat = 0;
            for (i64 i = 0; i < rows; ++i) {
              const double g = static_cast<double>(pdy[i * C + c]);
              sum_dy += g;
              sum_dy_xhat += g * (static_cast<double>(px[i * C + c]) - m) * inv;
            }
            dscale.data<T>()[c] = static_cast<T>(sum_dy_xhat);
            doffset.data<T>()[c] = static_cast<T>(sum_dy);
            const double k = static_cast<double>(scale[c]) * inv, nr = static_cast<double>(std::max<i64>(rows, 1));
            for (i64 i = 0; i < rows; ++i) {
              const double g = static_cast<double>(pdy[i * C + c]);
              const double xhat = (static_cast<double>(px[i * C + c]) - m) * inv;
              dx.data<T>()[i * C + c] =
                  static_cast<T>(training ? k * (g - sum_dy / nr - xhat * sum_dy_xhat / nr) : k * g);
            }
          }
          for (std::size_t k = 3; k < ctx.num_outputs(); ++k) ctx.allocate_output_zeroed(k, x.element_type(), {C});
        });
      };
    }});
}

/// Registers Conv2D, Conv3D, DepthwiseConv2dNative, DepthwiseConv2dNativeBackpropInput,
/// DepthwiseConv2dNativeBackpropFilter, Conv2DBackpropInput, Conv2DBackpropFilter,
/// Conv3DBackpropInputV2, Conv3DBackpropFilterV2, MaxPool, MaxPool3D, MaxPoolV2,
/// MaxPoolWithArgmax, MaxPoolGrad, MaxPool3DGrad, AvgPool, AvgPool3D, AvgPoolGrad,
/// AvgPool3DGrad, LRN.
inline void register_tf_conv(registry& r) {
  using namespace conv_impl;
  // Conv2D / Conv3D: im2col and one GEMM per block of an image's output positions (the
  // filter is already the [taps * C, OC] matrix); a pointwise one multiplies the image itself
  auto conv = [&](const char* op, bool volumetric) {
    r.add({.domain = domain, .op = op, .dtypes = conv_types::dtypes(), .make = [volumetric](const kernel_node& n) -> fn {
      const window win(n, false, false, volumetric);
      return [win](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        const gpass::tensor& f = ctx.input(1);
        if (x.element_type() != f.element_type()) ctx.fail("input and filter have different element types");
        check_filter(f.sizes(), x.rank() == win.rank ? x.sizes().back() : -1, win, ctx.node());
        const geometry g = win.resolve(x.sizes(), win.filter_window(f.sizes()), ctx.node());
        const i64 OC = f.sizes().back();
        dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
          gpass::tensor& y = ctx.allocate_output(0, x.element_type(), win.output_sizes(g, OC));
          if (y.size() == 0) return;
          const i64 K = im2col_width(g), P = g.out_positions();
          if (K == 0) {  // an empty filter
            std::fill(y.data<T>(), y.data<T>() + y.size(), T(0));
            return;
          }
          const bool direct = pointwise(g);
          const position_blocks blocks =
              direct ? position_blocks{P, P, 0} : blocks_of(ctx, P, K, sizeof(T), "the convolution's im2col block");
          std::vector<T> cols(direct ? 0 : static_cast<std::size_t>(blocks.most() * K));
          Eigen::Map<const row_matrix<T>> wm(f.data<T>(), K, OC);
          for (i64 b = 0; b < g.N; ++b) {
            const T* xb = x.data<T>() + b * g.in_positions() * g.C;
            for (i64 o0 = 0, rows = 0; o0 < P; o0 += rows) {
              rows = blocks.size(o0);
              if (!direct) im2col(g, xb, o0, o0 + rows, cols.data());
              Eigen::Map<row_matrix<T>> ym(y.data<T>() + (b * P + o0) * OC, rows, OC);
              ym.noalias() = Eigen::Map<const row_matrix<T>>(direct ? xb : cols.data(), rows, K) * wm;
            }
          }
        });
      };
    }});
  };
  conv("Conv2D", false);
  conv("Conv3D", true);
  // their gradients: dx = col2im(dy W^T), dW = sum over images of im2col(x)^T dy (per block
  // of output positions as the forward; a pointwise one reads and writes the images)
  auto conv_input_grad = [&](const char* op, bool volumetric) {
    r.add({.domain = domain, .op = op, .dtypes = conv_types::dtypes(), .type_input = 1,
           .make = [volumetric](const kernel_node& n) -> fn {
      const window win(n, false, false, volumetric);
      return [win](context& ctx) {
        const grad_operands o = read_grad_operands(ctx, win, true, false);
        const geometry& g = o.g;
        const gpass::tensor& f = ctx.input(1);
        const gpass::tensor& dy = ctx.input(2);
        const i64 OC = o.out_channels;
        dispatch<conv_types>(f.element_type(), ctx.node(), [&]<class T>() {
          gpass::tensor& dx = ctx.allocate_output_zeroed(0, f.element_type(), o.xs);
          const i64 K = im2col_width(g), P = g.out_positions();
          if (dx.size() == 0 || P == 0 || K == 0 || OC == 0) return;
          Eigen::Map<const row_matrix<T>> wm(f.data<T>(), K, OC);
          if (pointwise(g)) {  // dx is its own column matrix (added to its zeros, as col2im would)
            for (i64 b = 0; b < g.N; ++b)
              Eigen::Map<row_matrix<T>>(dx.data<T>() + b * P * K, P, K).noalias() +=
                  Eigen::Map<const row_matrix<T>>(dy.data<T>() + b * P * OC, P, OC) * wm.transpose();
            return;
          }
          const position_blocks blocks = blocks_of(ctx, P, K, sizeof(T), "the convolution gradient's column block");
          std::vector<T> cols(static_cast<std::size_t>(blocks.most() * K));
          for (i64 b = 0; b < g.N; ++b)
            for (i64 o0 = 0, rows = 0; o0 < P; o0 += rows) {
              rows = blocks.size(o0);
              Eigen::Map<row_matrix<T>>(cols.data(), rows, K).noalias() =
                  Eigen::Map<const row_matrix<T>>(dy.data<T>() + (b * P + o0) * OC, rows, OC) * wm.transpose();
              col2im_add(g, cols.data(), o0, o0 + rows, dx.data<T>() + b * g.in_positions() * g.C);
            }
        });
      };
    }});
  };
  conv_input_grad("Conv2DBackpropInput", false);
  conv_input_grad("Conv3DBackpropInputV2", true);
  auto conv_filter_grad = [&](const char* op, bool volumetric) {
    r.add({.domain = domain, .op = op, .dtypes = conv_types::dtypes(), .make = [volumetric](const kernel_node& n) -> fn {
      const window win(n, false, false, volumetric);
      return [win](context& ctx) {
        const grad_operands o = read_grad_operands(ctx, win, false, false);
        const geometry& g = o.g;
        const gpass::tensor& x = ctx.input(0);
        const gpass::tensor& dy = ctx.input(2);
        const i64 OC = o.out_channels;
        dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
          gpass::tensor& df = ctx.allocate_output_zeroed(0, x.element_type(), o.fs);
          const i64 K = im2col_width(g), P = g.out_positions();  // K * OC: df's size
          if (df.size() == 0 || P == 0) return;
          const bool direct = pointwise(g);
          const position_blocks blocks =
              direct ? position_blocks{P, P, 0} : blocks_of(ctx, P, K, sizeof(T), "the filter gradient's im2col block");
          std::vector<T> cols(direct ? 0 : static_cast<std::size_t>(blocks.most() * K));
          Eigen::Map<row_matrix<T>> dw(df.data<T>(), K, OC);
          for (i64 b = 0; b < g.N; ++b) {
            const T* xb = x.data<T>() + b * g.in_positions() * g.C;
            for (i64 o0 = 0, rows = 0; o0 < P; o0 += rows) {
              rows = blocks.size(o0);
              if (!direct) im2col(g, xb, o0, o0 + rows, cols.data());
              dw.noalias() += Eigen::Map<const row_matrix<T>>(direct ? xb : cols.data(), rows, K).transpose() *
                              Eigen::Map<const row_matrix<T>>(dy.data<T>() + (b * P + o0) * OC, rows, OC);
            }
          }
        });
      };
    }});
  };
  conv_filter_grad("Conv2DBackpropFilter", false);
  conv_filter_grad("Conv3DBackpropFilterV2", true);

  // DepthwiseConv2dNative: filter [KH, KW, C, M]; output channel c * M + m convolves input
  // channel c with filter (., ., c, m); its gradients walk the same (output, tap) pairs
  r.add({.domain = domain, .op = "DepthwiseConv2dNative", .dtypes = conv_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const window win(n, false);
    return [win](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& f = ctx.input(1);
      if (x.element_type() != f.element_type()) ctx.fail("input and filter have different element types");
      check_depthwise_filter(f.sizes(), x.rank() == 4 ? x.sizes()[3] : -1, ctx.node());
      const geometry g = win.resolve(x.sizes(), win.filter_window(f.sizes()), ctx.node());
      const i64 M = f.sizes()[3];
      dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
        const std::vector<i64> ys = win.output_sizes(g, depthwise_channels(g.C, M, ctx.node()));
        gpass::tensor& y = ctx.allocate_output_zeroed(0, x.element_type(), ys);
        if (y.size() == 0) return;  // (an empty filter's window may be of any size: not walked)
        const T* px = x.data<T>();
        const T* pf = f.data<T>();
        T* py = y.data<T>();
        depthwise_walk(g, M, [&](i64 out, i64 in, i64 w) {
          for (i64 c = 0; c < g.C; ++c)
            for (i64 m = 0; m < M; ++m) py[out + c * M + m] += px[in + c] * pf[w + c * M + m];
        });
      });
    };
  }});
  // its gradients: dx[in + c] += dy[out + c*M + m] * w[..] (BackpropInput), dw[..] += x[in + c] * dy[..] (BackpropFilter)
  auto depthwise_grad = [](bool input_grad) {
    return [input_grad](const kernel_node& n) -> fn {
      const window win(n, false);
      return [win, input_grad](context& ctx) {
        const grad_operands o = read_grad_operands(ctx, win, input_grad, true);
        const gpass::tensor& operand = ctx.input(input_grad ? 1 : 0);  // the filter, or the input
        const gpass::tensor& dy = ctx.input(2);
        const i64 C = o.g.C, M = o.fs[3];
        dispatch<conv_types>(operand.element_type(), ctx.node(), [&]<class T>() {
          gpass::tensor& out = ctx.allocate_output_zeroed(0, operand.element_type(), input_grad ? o.xs : o.fs);
          if (out.size() == 0 || o.out_channels == 0) return;  // (an empty filter's window is not walked)
          const T* pa = operand.data<T>();
          const T* pd = dy.data<T>();
          T* po = out.data<T>();
          if (input_grad)
            depthwise_walk(o.g, M, [&](i64 y, i64 in, i64 w) {
              for (i64 c = 0; c < C; ++c)
                for (i64 m = 0; m < M; ++m) po[in + c] += pd[y + c * M + m] * pa[w + c * M + m];
            });
          else
            depthwise_walk(o.g, M, [&](i64 y, i64 in, i64 w) {
              for (i64 c = 0; c < C; ++c)
                for (i64 m = 0; m < M; ++m) po[w + c * M + m] += pa[in + c] * pd[y + c * M + m];
            });
        });
      };
    };
  };
  r.add({.domain = domain, .op = "DepthwiseConv2dNativeBackpropInput", .dtypes = conv_types::dtypes(), .type_input = 1,
         .make = depthwise_grad(true)});
  r.add({.domain = domain, .op = "DepthwiseConv2dNativeBackpropFilter", .dtypes = conv_types::dtypes(),
         .make = depthwise_grad(false)});

  // pooling: output (b, position, c) over the valid positions of its window
  auto pool_into = [](const window& win, bool max, context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    const geometry g = win.resolve(x.sizes(), win.pool_window(), ctx.node());
    // element offsets of (c, position) in an image of the input and the output, per layout
    const bool cf = win.nchw;
    dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
      gpass::tensor& y = ctx.allocate_output(0, x.element_type(), win.output_sizes(g, g.C));
      // (an empty output: its positions, without channels or images, may be ~2^62 or overflow)
      if (y.size() == 0) return;
      const i64 S = g.in_positions(), OS = g.out_positions();
      auto in_at = [&](i64 c, i64 p) { return cf ? c * S + p : p * g.C + c; };
      auto out_at = [&](i64 c, i64 o) { return cf ? c * OS + o : o * g.C + c; };
      for (i64 b = 0; b < g.N; ++b) {
        const T* px = x.data<T>() + b * S * g.C;
        T* py = y.data<T>() + b * OS * g.C;
        for_each_position(g, [&](i64 o, i64 od, i64 oh, i64 ow) {
          for (i64 c = 0; c < g.C; ++c) {
            T acc = max ? -std::numeric_limits<T>::infinity() : T(0);
            i64 count = 0;
            for_window(g, od, oh, ow, [&](i64 p) {
              const T v = px[in_at(c, p)];
              acc = max ? std::max(acc, v) : acc + v;
              ++count;
            });
            py[out_at(c, o)] = max ? acc : (count ? acc / static_cast<T>(count) : T(0));
          }
        });
      }
    });
  };
  auto pool = [&](const char* op, bool max, bool volumetric) {
    r.add({.domain = domain, .op = op, .dtypes = conv_types::dtypes(),
           .make = [max, volumetric, pool_into](const kernel_node& n) -> fn {
      const window win(n, true, !volumetric, volumetric);
      return [win, max, pool_into](context& ctx) { pool_into(win, max, ctx); };
    }});
  };
  pool("MaxPool", true, false);
  pool("AvgPool", false, false);
  pool("MaxPool3D", true, true);
  pool("AvgPool3D", false, true);
  // MaxPoolV2: the window's ksize and strides read from inputs 1 and 2 at run time
  r.add({.domain = domain, .op = "MaxPoolV2", .dtypes = conv_types::dtypes(), .make = [pool_into](const kernel_node& n) -> fn {
    return [node = n, pool_into](context& ctx) {
      kernel_node m = node;
      m.attrs["ksize"] = vector_ints(ctx.input(1), ctx.node(), "ksize");
      m.attrs["strides"] = vector_ints(ctx.input(2), ctx.node(), "strides");
      pool_into(window(m, true, true), true, ctx);
    };
  }});
  // MaxPoolWithArgmax (NHWC): the first maximum of each window in row-major order, and its
  // flat index ((y * W + x) * C + c), plus b * H * W * C with include_batch_in_index
  r.add({.domain = domain, .op = "MaxPoolWithArgmax", .dtypes = conv_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const window win(n, true);
    const dtype at = type_attr(n, "Targmax", dtype::int64);
    if (at != dtype::int64 && at != dtype::int32) n.fail("Targmax must be int32 or int64");
    const bool with_batch = flag(n, "include_batch_in_index", false);
    return [win, at, with_batch](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const geometry g = win.resolve(x.sizes(), win.pool_window(), ctx.node());
      const std::vector<i64> out = win.output_sizes(g, g.C);
      std::vector<i64> where;
      dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), out);  // (the run's limits checked first)
        if (y.size() == 0) return;  // (as the pools')
        where.assign(static_cast<std::size_t>(y.size()), -1);
        const i64 image = g.in_positions() * g.C;
        for (i64 b = 0; b < g.N; ++b) {
          const T* px = x.data<T>() + b * image;
          for_each_position(g, [&](i64 o, i64 od, i64 oh, i64 ow) {
            for (i64 c = 0; c < g.C; ++c) {
              const i64 k = (b * g.out_positions() + o) * g.C + c;
              T best = std::numeric_limits<T>::lowest();
              i64& arg = where[static_cast<std::size_t>(k)];
              for_window(g, od, oh, ow, [&](i64 p) {
                const T v = px[p * g.C + c];
                if (arg == -1 || v > best) best = v, arg = (with_batch ? b * image : 0) + p * g.C + c;
              });
              y.data<T>()[k] = best;
            }
          });
        }
      });
      write_ints(ctx, 1, at, where, out);
    };
  }});

  // LRN over the depth (last) dim: x * (bias + alpha * sum of x_k^2 over |k - d| <= depth_radius)^-beta
  using lrn_types = type_list<float, double, Eigen::half, Eigen::bfloat16>;
  r.add({.domain = domain, .op = "LRN", .dtypes = lrn_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const i64 radius = n.attr<i64>("depth_radius", 5);
    if (radius < 0) n.fail("depth_radius must be non-negative, got " + std::to_string(radius));
    const double bias = n.attr<double>("bias", 1.0), alpha = n.attr<double>("alpha", 1.0), beta = n.attr<double>("beta", 0.5);
    return [=](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      if (x.rank() != 4) ctx.fail("input must be 4-D, got " + x.shape().to_string());
      const i64 depth = x.sizes()[3], rows = depth == 0 ? 0 : x.size() / depth;
      dispatch<lrn_types>(x.element_type(), ctx.node(), [&]<class T>() {
        using C = compute_t<T>;
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), x.sizes());
        const T* in = x.data<T>();
        T* out = y.data<T>();
        const i64 window = std::min(depth, 2 * std::min(radius, depth) + 1);  // (2 * radius + 1 may overflow)
        ctx.policy().parallel_for(rows, static_cast<double>(depth) * static_cast<double>(window + 20),
                                  [&](i64 b, i64 e) {
                                    std::vector<C> sq(static_cast<std::size_t>(depth));
                                    for (i64 row = b; row < e; ++row) {
                                      const T* xi = in + row * depth;
                                      for (i64 d = 0; d < depth; ++d) sq[static_cast<std::size_t>(d)] = static_cast<C>(xi[d]) * static_cast<C>(xi[d]);
                                      for (i64 d = 0; d < depth; ++d) {
                                        C sum = 0;
                                        for (i64 k = std::max<i64>(0, d - radius), last = std::min(depth - 1, d + std::min(radius, depth)); k <= last; ++k)
                                          sum += sq[static_cast<std::size_t>(k)];
                                        const C base = static_cast<C>(bias) + static_cast<C>(alpha) * sum;
                                        out[row * depth + d] = static_cast<T>(static_cast<C>(xi[d]) * std::pow(base, static_cast<C>(-beta)));
                                      }
                                    }
                                  });
      });
    };
  }});

  // MaxPoolGrad: each output's gradient goes to the first maximum of its window (row-major
  // window order), as TensorFlow's CPU kernel routes it. MaxPool3DGrad: to every input of the
  // window within 1e-5 of the given forward output (orig_output), as TensorFlow's CPU kernel
  // for 3-D pooling routes it (ties all receive it).
  auto max_pool_grad = [&](const char* op, bool volumetric) {
    r.add({.domain = domain, .op = op, .dtypes = conv_types::dtypes(),
           .make = [volumetric](const kernel_node& n) -> fn {
      const window win(n, true, false, volumetric);
      return [win](context& ctx) {
        const gpass::tensor& x = ctx.input(0);
        const gpass::tensor& fwd = ctx.input(1);
        const gpass::tensor& dy = ctx.input(2);
        if (x.element_type() != dy.element_type() || fwd.element_type() != dy.element_type())
          ctx.fail("orig_input, orig_output and grad have different element types");
        const geometry g = win.resolve(x.sizes(), win.pool_window(), ctx.node());
        check_output_sizes(ctx, dy, win, g, g.C, "grad", "pooling");
        if (win.volumetric) check_output_sizes(ctx, fwd, win, g, g.C, "orig_output", "pooling");
        dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
          gpass::tensor& dx = ctx.allocate_output_zeroed(0, x.element_type(), x.sizes());
          if (dy.size() == 0) return;  // (as the pools')
          const i64 S = g.in_positions(), OS = g.out_positions();
          for (i64 b = 0; b < g.N; ++b) {
            const T* px = x.data<T>() + b * S * g.C;
            const T* py = fwd.data<T>() + b * OS * g.C;
            const T* pg = dy.data<T>() + b * OS * g.C;
            T* pd = dx.data<T>() + b * S * g.C;
            for_each_position(g, [&](i64 o, i64 od, i64 oh, i64 ow) {
              for (i64 c = 0; c < g.C; ++c) {
                const T grad = pg[o * g.C + c];
                if (win.volumetric) {
                  const T y = py[o * g.C + c];
                  for_window(g, od, oh, ow, [&](i64 p) {
                    if (std::abs(px[p * g.C + c] - y) < T(1e-5)) pd[p * g.C + c] += grad;
                  });
                  continue;
                }
                i64 at = -1;
                T best = -std::numeric_limits<T>::infinity();
                for_window(g, od, oh, ow, [&](i64 p) {
                  if (at < 0 || px[p * g.C + c] > best) best = px[p * g.C + c], at = p;
                });
                if (at >= 0) pd[at * g.C + c] += grad;
              }
            });
          }
        });
      };
    }});
  };
  max_pool_grad("MaxPoolGrad", false);
  max_pool_grad("MaxPool3DGrad", true);
  // AvgPoolGrad / AvgPool3DGrad: each output's gradient spread evenly over the valid
  // positions of its window
  auto avg_pool_grad = [&](const char* op, bool volumetric) {
    r.add({.domain = domain, .op = op, .dtypes = conv_types::dtypes(), .type_input = 1,
           .make = [volumetric](const kernel_node& n) -> fn {
      const window win(n, true, false, volumetric);
      return [win](context& ctx) {
        const std::vector<i64> xs = sizes_input(ctx.input(0), win.rank, ctx.node(), "orig_input_shape");
        const gpass::tensor& dy = ctx.input(1);
        const geometry g = win.resolve(xs, win.pool_window(), ctx.node());
        check_output_sizes(ctx, dy, win, g, g.C, "grad", "pooling");
        dispatch<conv_types>(dy.element_type(), ctx.node(), [&]<class T>() {
          gpass::tensor& dx = ctx.allocate_output_zeroed(0, dy.element_type(), xs);
          if (dy.size() == 0 || dx.size() == 0) return;  // (as the pools')
          const i64 S = g.in_positions(), OS = g.out_positions();
          for (i64 b = 0; b < g.N; ++b) {
            const T* pg = dy.data<T>() + b * OS * g.C;
            T* pd = dx.data<T>() + b * S * g.C;
            for_each_position(g, [&](i64 o, i64 od, i64 oh, i64 ow) {
              i64 count = 0;
              for_window(g, od, oh, ow, [&](i64) { ++count; });
              if (count == 0) return;
              for (i64 c = 0; c < g.C; ++c) {
                const T share = pg[o * g.C + c] / static_cast<T>(count);
                for_window(g, od, oh, ow, [&](i64 p) { pd[p * g.C + c] += share; });
              }
            });
          }
        });
      };
    }});
  };
  avg_pool_grad("AvgPoolGrad", false);
  avg_pool_grad("AvgPool3DGrad", true);
}

}  // namespace gpass::exec::cpu_detail::tf_detail
