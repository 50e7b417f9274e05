// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_conv.hpp
/// Eigen CPU kernels of TensorFlow's NHWC convolution and pooling ops and their gradients
/// (domain "tf"): Conv2D, DepthwiseConv2dNative (and its BackpropInput/BackpropFilter),
/// Conv2DBackpropInput, Conv2DBackpropFilter,
/// MaxPool, MaxPoolV2, MaxPoolWithArgmax, MaxPoolGrad, AvgPool, AvgPoolGrad, LRN, and batch normalization: FusedBatchNorm{,V2,V3}
/// and FusedBatchNormGrad{,V2,V3}. TensorFlow's window rules: `VALID`, `SAME` (out = ceil(in /
/// stride), the smaller half of the padding before), `EXPLICIT` (`explicit_paddings`);
/// dilations for the convolutions; pooling windows see only the input (no padded values: a
/// max over the valid ones, an average divided by their count). Convolutions are im2col and
/// one GEMM per image (filter HWIO is already the [KH*KW*C, OC] matrix); f32 and f64, NHWC
/// only (TensorFlow's CPU kernels take no NCHW either), except MaxPool and AvgPool, which
/// also read NCHW (what the `tf-layout` pass makes of them). Private
/// (`gpass::exec::cpu_detail::tf_detail`); the unit `src/tf_math.cpp` registers them.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/eigen_cpu/kernels/tf_common.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

namespace conv_impl {

using conv_types = type_list<float, double>;

/// The geometry of a 2-D window over an NHWC input.
struct geometry {
  i64 N = 0, H = 0, W = 0, C = 0;     // input
  i64 KH = 1, KW = 1;                 // window
  i64 SH = 1, SW = 1, DH = 1, DW = 1; // strides, dilations
  i64 PT = 0, PL = 0;                 // padding before (top, left)
  i64 OH = 0, OW = 0;                 // output
};

// The window attributes of node `n`: strides, dilations (`with_dilations`), ksize
// (`pool`), padding.
struct window {
  std::vector<i64> strides, dilations, ksize, explicit_paddings;
  std::string padding;
  bool nchw = false;  // NCHW (forward pooling only: what tf-layout makes); NHWC otherwise
  std::size_t h = 1, w = 2;  // the spatial dims' positions in the 4-value attributes
  // `nchw_ok`: the kernel reads NCHW too (the forward pools)
  window(const kernel_node& n, bool pool, bool nchw_ok = false) {
    const std::string format = n.attr<std::string>("data_format", std::string("NHWC"));
    nchw = format == "NCHW" && nchw_ok;
    if (format != "NHWC" && !nchw)
      n.fail("data_format " + format + " is not supported on the CPU here (NHWC only, as TensorFlow's CPU kernels)");
    if (nchw) h = 2, w = 3;
    const std::size_t c = nchw ? 1 : 3;
    auto four = [&](const char* what, std::vector<i64> v, bool required) {
      if (v.empty() && !required) v = {1, 1, 1, 1};
      if (v.size() != 4) n.fail(std::string(what) + " must have 4 values (" + format + "), got " + std::to_string(v.size()));
      if (v[0] != 1 || v[c] != 1) n.fail(std::string(what) + " must be 1 in the batch and channel dims");
      for (i64 x : v)
        if (x < 1) n.fail(std::string(what) + " must be positive");
      return v;
    };
    strides = four("strides", int_list(n, "strides"), false);
    if (pool) ksize = four("ksize", int_list(n, "ksize"), true);
    else dilations = four("dilations", int_list(n, "dilations"), false);
    padding = n.attr<std::string>("padding");
    if (padding == "EXPLICIT") {
      explicit_paddings = int_list(n, "explicit_paddings");
      if (explicit_paddings.size() != 8) n.fail("explicit_paddings must have 8 values");
      for (i64 p : explicit_paddings)
        if (p < 0) n.fail("explicit_paddings must be >= 0");
    } else if (padding != "SAME" && padding != "VALID") {
      n.fail("unknown padding '" + padding + "'");
    }
  }

  geometry resolve(const std::vector<i64>& input, i64 kh, i64 kw, const kernel_node& n) const {
    if (input.size() != 4)
      n.fail(std::string("the input must have rank 4 (") + (nchw ? "NCHW" : "NHWC") + "), got sizes " + shape::of(input).to_string());
    geometry g;
    g.N = input[0], g.H = input[h], g.W = input[w], g.C = input[nchw ? 1 : 3];
    g.KH = kh, g.KW = kw, g.SH = strides[h], g.SW = strides[w];
    if (!dilations.empty()) g.DH = dilations[h], g.DW = dilations[w];
    auto dim = [&](i64 in, i64 k, i64 s, i64 d, i64 pad_lo, i64 pad_hi, i64& before) {
      const i64 eff = (k - 1) * d + 1;
      if (padding == "SAME") {
        const i64 out = (in + s - 1) / s;
        const i64 total = std::max<i64>(0, (out - 1) * s + eff - in);
        before = total / 2;
        return out;
      }
      before = padding == "EXPLICIT" ? pad_lo : 0;
      const i64 span = in + (padding == "EXPLICIT" ? pad_lo + pad_hi : 0) - eff;
      if (span < 0) n.fail("the window (" + std::to_string(eff) + ") is larger than the padded input (" + std::to_string(in) + ")");
      return span / s + 1;
    };
    const auto& e = explicit_paddings;
    g.OH = dim(g.H, g.KH, g.SH, g.DH, e.empty() ? 0 : e[2 * h], e.empty() ? 0 : e[2 * h + 1], g.PT);
    g.OW = dim(g.W, g.KW, g.SW, g.DW, e.empty() ? 0 : e[2 * w], e.empty() ? 0 : e[2 * w + 1], g.PL);
    return g;
  }
};

template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// cols[(oh * OW + ow), (kh * KW + kw) * C + c] = x[ih, iw, c] of one image (0 outside).
template <class T>
void im2col(const geometry& g, const T* x, T* cols) {
  const i64 row = g.KH * g.KW * g.C;
  for (i64 oh = 0; oh < g.OH; ++oh)
    for (i64 ow = 0; ow < g.OW; ++ow) {
      T* out = cols + (oh * g.OW + ow) * row;
      for (i64 kh = 0; kh < g.KH; ++kh) {
        const i64 ih = oh * g.SH + kh * g.DH - g.PT;
        for (i64 kw = 0; kw < g.KW; ++kw, out += g.C) {
          const i64 iw = ow * g.SW + kw * g.DW - g.PL;
          if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) std::fill(out, out + g.C, T(0));
          else std::copy(x + (ih * g.W + iw) * g.C, x + (ih * g.W + iw + 1) * g.C, out);
        }
      }
    }
}

// The inverse scatter: dx[ih, iw, c] += cols[...] of one image.
template <class T>
void col2im_add(const geometry& g, const T* cols, T* dx) {
  const i64 row = g.KH * g.KW * g.C;
  for (i64 oh = 0; oh < g.OH; ++oh)
    for (i64 ow = 0; ow < g.OW; ++ow) {
      const T* in = cols + (oh * g.OW + ow) * row;
      for (i64 kh = 0; kh < g.KH; ++kh) {
        const i64 ih = oh * g.SH + kh * g.DH - g.PT;
        for (i64 kw = 0; kw < g.KW; ++kw, in += g.C) {
          const i64 iw = ow * g.SW + kw * g.DW - g.PL;
          if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
          T* dst = dx + (ih * g.W + iw) * g.C;
          for (i64 c = 0; c < g.C; ++c) dst[c] += in[c];
        }
      }
    }
}

// The [KH, KW, C, OC] filter checked against the input's channels.
inline void check_filter(const std::vector<i64>& f, i64 channels, const kernel_node& n) {
  if (f.size() != 4) n.fail("the filter must have rank 4 (HWIO), got sizes " + shape::of(f).to_string());
  if (f[2] != channels)
    n.fail("the filter's input depth " + std::to_string(f[2]) + " differs from the input's channels " + std::to_string(channels) +
           " (grouped convolutions are not supported on the CPU here)");
}

inline std::vector<i64> sizes_input(const gpass::tensor& t, const kernel_node& n, const char* what) {
  std::vector<i64> v = vector_ints(t, n, what);
  if (v.size() != 4) n.fail(std::string(what) + " must have 4 values, got " + std::to_string(v.size()));
  for (i64 d : v)
    if (d < 0) n.fail(std::string(what) + " must be >= 0");
  return v;
}

// `t` (an out_backprop or grad) must have the window op's output sizes.
inline void check_output_sizes(context& ctx, const gpass::tensor& t, const geometry& g, i64 channels, const char* what,
                               const char* op) {
  const std::vector<i64> want{g.N, g.OH, g.OW, channels};
  if (t.sizes() != want)
    ctx.fail(std::string(what) + " has sizes " + t.shape().to_string() + ", the " + op + "'s output is " +
             shape::of(want).to_string());
}

/// Calls f(b, oh, ow, c) for every output element of a pooling with geometry `g`.
template <class F>
void for_each_output(const geometry& g, F f) {
  for (i64 b = 0; b < g.N; ++b)
    for (i64 oh = 0; oh < g.OH; ++oh)
      for (i64 ow = 0; ow < g.OW; ++ow)
        for (i64 c = 0; c < g.C; ++c) f(b, oh, ow, c);
}

// Visits every valid input position of output (oh, ow) of a pooling window.
template <class F>
void for_window(const geometry& g, i64 oh, i64 ow, F f) {
  const i64 h0 = oh * g.SH - g.PT, w0 = ow * g.SW - g.PL;
  for (i64 ih = std::max<i64>(h0, 0); ih < std::min(h0 + g.KH, g.H); ++ih)
    for (i64 iw = std::max<i64>(w0, 0); iw < std::min(w0 + g.KW, g.W); ++iw) f(ih, iw);
}

/// Checks a depthwise filter's sizes [KH, KW, C, M] against the input's channels `c` (-1: unknown).
inline void check_depthwise_filter(const std::vector<i64>& fs, i64 c, const kernel_node& n) {
  if (fs.size() != 4) n.fail("the filter must have rank 4 ([KH, KW, C, M]), got sizes " + shape::of(fs).to_string());
  if (c >= 0 && fs[2] != c)
    n.fail("the filter's input depth " + std::to_string(fs[2]) + " differs from the input's channels " + std::to_string(c));
}

/// Calls `f(out, in, w)` for every output position and valid filter tap of a depthwise
/// convolution of geometry `g` (channel multiplier `M`): the element offsets of the output's
/// channel row (C * M values), the input's channel row (C values) and the filter's [C, M]
/// block at the tap.
template <class F>
void depthwise_walk(const geometry& g, i64 M, F&& f) {
  const i64 OC = g.C * M;
  for (i64 b = 0; b < g.N; ++b)
    for (i64 oh = 0; oh < g.OH; ++oh)
      for (i64 ow = 0; ow < g.OW; ++ow) {
        const i64 out = ((b * g.OH + oh) * g.OW + ow) * OC;
        for (i64 kh = 0; kh < g.KH; ++kh) {
          const i64 ih = oh * g.SH + kh * g.DH - g.PT;
          if (ih < 0 || ih >= g.H) continue;
          for (i64 kw = 0; kw < g.KW; ++kw) {
            const i64 iw = ow * g.SW + kw * g.DW - g.PL;
            if (iw < 0 || iw >= g.W) continue;
            f(out, ((b * g.H + ih) * g.W + iw) * g.C, (kh * g.KW + kw) * OC);
          }
        }
      }
}

/// The operands of a convolution gradient (Conv2D's or a depthwise one's, `depthwise`): the
/// input's and the filter's sizes (one of them read from the sizes input: input 0 for
/// `BackpropInput`, `input_grad`, else input 1), the geometry and the output channels, with
/// out_backprop (input 2) checked against them.
struct grad_operands {
  std::vector<i64> xs, fs;
  geometry g;
  i64 out_channels = 0;
};
inline grad_operands read_grad_operands(context& ctx, const window& win, bool input_grad, bool depthwise) {
  const kernel_node& n = ctx.node();
  const gpass::tensor& dy = ctx.input(2);
  grad_operands o;
  if (input_grad) {
    o.xs = sizes_input(ctx.input(0), n, "input_sizes");
    o.fs = ctx.input(1).sizes();
    if (ctx.input(1).element_type() != dy.element_type()) ctx.fail("filter and out_backprop have different element types");
  } else {
    o.xs = ctx.input(0).sizes();
    o.fs = sizes_input(ctx.input(1), n, "filter_sizes");
    if (ctx.input(0).element_type() != dy.element_type()) ctx.fail("input and out_backprop have different element types");
  }
  const i64 channels = o.xs.size() == 4 ? o.xs[3] : -1;
  if (depthwise) check_depthwise_filter(o.fs, channels, n);
  else check_filter(o.fs, channels, n);
  o.g = win.resolve(o.xs, o.fs[0], o.fs[1], n);
  o.out_channels = depthwise ? o.g.C * o.fs[3] : o.fs[3];
  check_output_sizes(ctx, dy, o.g, o.out_channels, "out_backprop", depthwise ? "depthwise convolution" : "convolution");
  return o;
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

/// Registers Conv2D, DepthwiseConv2dNative, DepthwiseConv2dNativeBackpropInput,
/// DepthwiseConv2dNativeBackpropFilter, Conv2DBackpropInput, Conv2DBackpropFilter, MaxPool,
/// MaxPoolGrad, AvgPool, AvgPoolGrad.
inline void register_tf_conv(registry& r) {
  using namespace conv_impl;
  r.add({.domain = domain, .op = "Conv2D", .dtypes = conv_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const window win(n, false);
    return [win](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& f = ctx.input(1);
      if (x.element_type() != f.element_type()) ctx.fail("input and filter have different element types");
      check_filter(f.sizes(), x.rank() == 4 ? x.sizes()[3] : -1, ctx.node());
      const geometry g = win.resolve(x.sizes(), f.sizes()[0], f.sizes()[1], ctx.node());
      const i64 OC = f.sizes()[3], K = g.KH * g.KW * g.C, P = g.OH * g.OW;
      dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), {g.N, g.OH, g.OW, OC});
        if (y.size() == 0) return;
        std::vector<T> cols(static_cast<std::size_t>(P * K));
        Eigen::Map<const row_matrix<T>> wm(f.data<T>(), K, OC);
        for (i64 b = 0; b < g.N; ++b) {
          im2col(g, x.data<T>() + b * g.H * g.W * g.C, cols.data());
          Eigen::Map<row_matrix<T>> ym(y.data<T>() + b * P * OC, P, OC);
          ym.noalias() = Eigen::Map<const row_matrix<T>>(cols.data(), P, K) * wm;
        }
      });
    };
  }});
  r.add({.domain = domain, .op = "Conv2DBackpropInput", .dtypes = conv_types::dtypes(), .type_input = 1,
         .make = [](const kernel_node& n) -> fn {
    const window win(n, false);
    return [win](context& ctx) {
      const grad_operands o = read_grad_operands(ctx, win, true, false);
      const geometry& g = o.g;
      const gpass::tensor& f = ctx.input(1);
      const gpass::tensor& dy = ctx.input(2);
      const i64 OC = o.out_channels, K = g.KH * g.KW * g.C, P = g.OH * g.OW;
      dispatch<conv_types>(f.element_type(), ctx.node(), [&]<class T>() {
        gpass::tensor& dx = ctx.allocate_output_zeroed(0, f.element_type(), o.xs);
        if (dx.size() == 0 || P == 0) return;
        std::vector<T> cols(static_cast<std::size_t>(P * K));
        Eigen::Map<const row_matrix<T>> wm(f.data<T>(), K, OC);
        for (i64 b = 0; b < g.N; ++b) {
          Eigen::Map<row_matrix<T>>(cols.data(), P, K).noalias() =
              Eigen::Map<const row_matrix<T>>(dy.data<T>() + b * P * OC, P, OC) * wm.transpose();
          col2im_add(g, cols.data(), dx.data<T>() + b * g.H * g.W * g.C);
        }
      });
    };
  }});
  r.add({.domain = domain, .op = "Conv2DBackpropFilter", .dtypes = conv_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const window win(n, false);
    return [win](context& ctx) {
      const grad_operands o = read_grad_operands(ctx, win, false, false);
      const geometry& g = o.g;
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& dy = ctx.input(2);
      const i64 OC = o.out_channels, K = g.KH * g.KW * g.C, P = g.OH * g.OW;
      dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
        gpass::tensor& df = ctx.allocate_output_zeroed(0, x.element_type(), o.fs);
        if (df.size() == 0 || P == 0) return;
        std::vector<T> cols(static_cast<std::size_t>(P * K));
        Eigen::Map<row_matrix<T>> dw(df.data<T>(), K, OC);
        for (i64 b = 0; b < g.N; ++b) {
          im2col(g, x.data<T>() + b * g.H * g.W * g.C, cols.data());
          dw.noalias() += Eigen::Map<const row_matrix<T>>(cols.data(), P, K).transpose() *
                          Eigen::Map<const row_matrix<T>>(dy.data<T>() + b * P * OC, P, OC);
        }
      });
    };
  }});

  // DepthwiseConv2dNative: filter [KH, KW, C, M]; output channel c * M + m convolves input
  // channel c with filter (., ., c, m); its gradients walk the same (output, tap) pairs
  r.add({.domain = domain, .op = "DepthwiseConv2dNative", .dtypes = conv_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const window win(n, false);
    return [win](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& f = ctx.input(1);
      if (x.element_type() != f.element_type()) ctx.fail("input and filter have different element types");
      check_depthwise_filter(f.sizes(), x.rank() == 4 ? x.sizes()[3] : -1, ctx.node());
      const geometry g = win.resolve(x.sizes(), f.sizes()[0], f.sizes()[1], ctx.node());
      const i64 M = f.sizes()[3];
      dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
        gpass::tensor& y = ctx.allocate_output_zeroed(0, x.element_type(), {g.N, g.OH, g.OW, g.C * M});
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

  // pooling: output (b, oh, ow, c) over the valid positions of its window
  auto pool_into = [](const window& win, bool max, context& ctx) {
    const gpass::tensor& x = ctx.input(0);
    const geometry g = win.resolve(x.sizes(), win.ksize[win.h], win.ksize[win.w], ctx.node());
    // element strides of (c, h, w) in the input and the output, per layout
    const bool cf = win.nchw;
    const i64 xc = cf ? g.H * g.W : 1, xh = cf ? g.W : g.W * g.C, xw = cf ? 1 : g.C, xb = g.H * g.W * g.C;
    const i64 yc = cf ? g.OH * g.OW : 1, yh = cf ? g.OW : g.OW * g.C, yw = cf ? 1 : g.C, yb = g.OH * g.OW * g.C;
    dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
      gpass::tensor& y = ctx.allocate_output(
          0, x.element_type(), cf ? std::vector<i64>{g.N, g.C, g.OH, g.OW} : std::vector<i64>{g.N, g.OH, g.OW, g.C});
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for_each_output(g, [&](i64 b, i64 oh, i64 ow, i64 c) {
        T acc = max ? -std::numeric_limits<T>::infinity() : T(0);
        i64 count = 0;
        for_window(g, oh, ow, [&](i64 ih, i64 iw) {
          const T v = px[b * xb + c * xc + ih * xh + iw * xw];
          acc = max ? std::max(acc, v) : acc + v;
          ++count;
        });
        py[b * yb + c * yc + oh * yh + ow * yw] = max ? acc : (count ? acc / static_cast<T>(count) : T(0));
      });
    });
  };
  auto pool = [&](const char* op, bool max) {
    r.add({.domain = domain, .op = op, .dtypes = conv_types::dtypes(), .make = [max, pool_into](const kernel_node& n) -> fn {
      const window win(n, true, true);
      return [win, max, pool_into](context& ctx) { pool_into(win, max, ctx); };
    }});
  };
  pool("MaxPool", true);
  pool("AvgPool", false);
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
      const geometry g = win.resolve(x.sizes(), win.ksize[win.h], win.ksize[win.w], ctx.node());
      const std::vector<i64> out{g.N, g.OH, g.OW, g.C};
      std::vector<i64> where;
      dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
        gpass::tensor& y = ctx.allocate_output(0, x.element_type(), out);  // (the run's limits checked first)
        where.assign(static_cast<std::size_t>(y.size()), -1);
        const T* px = x.data<T>();
        T* py = y.data<T>();
        for_each_output(g, [&](i64 b, i64 oh, i64 ow, i64 c) {
          const i64 o = ((b * g.OH + oh) * g.OW + ow) * g.C + c;
          T best = std::numeric_limits<T>::lowest();
          i64& arg = where[static_cast<std::size_t>(o)];
          for_window(g, oh, ow, [&](i64 ih, i64 iw) {
            const i64 i = (ih * g.W + iw) * g.C + c;
            const T v = px[b * g.H * g.W * g.C + i];
            if (arg == -1 || v > best) best = v, arg = with_batch ? b * g.H * g.W * g.C + i : i;
          });
          py[o] = best;
        });
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
        ctx.policy().parallel_for(rows, static_cast<double>(depth) * static_cast<double>(std::min(depth, 2 * radius + 1) + 20),
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
  // window order), as TensorFlow's CPU kernel routes it
  r.add({.domain = domain, .op = "MaxPoolGrad", .dtypes = conv_types::dtypes(), .make = [](const kernel_node& n) -> fn {
    const window win(n, true);
    return [win](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      const gpass::tensor& dy = ctx.input(2);
      if (x.element_type() != dy.element_type()) ctx.fail("orig_input and grad have different element types");
      const geometry g = win.resolve(x.sizes(), win.ksize[1], win.ksize[2], ctx.node());
      check_output_sizes(ctx, dy, g, g.C, "grad", "pooling");
      dispatch<conv_types>(x.element_type(), ctx.node(), [&]<class T>() {
        gpass::tensor& dx = ctx.allocate_output_zeroed(0, x.element_type(), x.sizes());
        const T* px = x.data<T>();
        const T* pg = dy.data<T>();
        T* pd = dx.data<T>();
        for (i64 b = 0; b < g.N; ++b)
          for (i64 oh = 0; oh < g.OH; ++oh)
            for (i64 ow = 0; ow < g.OW; ++ow)
              for (i64 c = 0; c < g.C; ++c) {
                i64 at = -1;
                T best = -std::numeric_limits<T>::infinity();
                for_window(g, oh, ow, [&](i64 ih, i64 iw) {
                  const i64 k = ((b * g.H + ih) * g.W + iw) * g.C + c;
                  if (at < 0 || px[k] > best) best = px[k], at = k;
                });
                if (at >= 0) pd[at] += pg[((b * g.OH + oh) * g.OW + ow) * g.C + c];
              }
      });
    };
  }});
  // AvgPoolGrad: each output's gradient spread evenly over the valid positions of its window
  r.add({.domain = domain, .op = "AvgPoolGrad", .dtypes = conv_types::dtypes(), .type_input = 1,
         .make = [](const kernel_node& n) -> fn {
    const window win(n, true);
    return [win](context& ctx) {
      const std::vector<i64> xs = sizes_input(ctx.input(0), ctx.node(), "orig_input_shape");
      const gpass::tensor& dy = ctx.input(1);
      const geometry g = win.resolve(xs, win.ksize[1], win.ksize[2], ctx.node());
      check_output_sizes(ctx, dy, g, g.C, "grad", "pooling");
      dispatch<conv_types>(dy.element_type(), ctx.node(), [&]<class T>() {
        gpass::tensor& dx = ctx.allocate_output_zeroed(0, dy.element_type(), xs);
        const T* pg = dy.data<T>();
        T* pd = dx.data<T>();
        for (i64 b = 0; b < g.N; ++b)
          for (i64 oh = 0; oh < g.OH; ++oh)
            for (i64 ow = 0; ow < g.OW; ++ow) {
              i64 count = 0;
              for_window(g, oh, ow, [&](i64, i64) { ++count; });
              if (count == 0) continue;
              for (i64 c = 0; c < g.C; ++c) {
                const T share = pg[((b * g.OH + oh) * g.OW + ow) * g.C + c] / static_cast<T>(count);
                for_window(g, oh, ow, [&](i64 ih, i64 iw) { pd[((b * g.H + ih) * g.W + iw) * g.C + c] += share; });
              }
            }
      });
    };
  }});
}

}  // namespace gpass::exec::cpu_detail::tf_detail
