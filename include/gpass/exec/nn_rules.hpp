// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file nn_rules.hpp
/// The attribute reading, checks and geometry of ONNX neural-network ops that the Eigen CPU
/// and CUDA kernels share, so that both accept the same nodes and inputs and fail with the
/// same messages: the convolutions' shapes (Conv, ConvInteger, QLinearConv, ConvTranspose),
/// the losses' reduction, GridSample's attributes and shapes, RoiAlign's attributes and boxes,
/// Col2Im's geometry, MaxUnpool's shapes and index mapping, DeformConv's attributes and
/// shapes, the float type codes of
/// softmax_precision and stash_type, Attention's attributes, input checks and mask layout,
/// NonMaxSuppression's shapes and ranking, and ONNX Runtime's Attention and
/// EmbedLayerNormalization checks. Errors name the node.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/scratch.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec::nn_rules {

using i64 = std::int64_t;

// ---- convolutions ---------------------------------------------------------------------------

/// Checks the shapes of a convolution's input [N, C, spatial...] and weight ([M, C / G, k...],
/// or ConvTranspose's [C, M / G, k...] with `transpose`) for `G` groups.
inline void check_conv_shapes(const std::vector<i64>& xs, const std::vector<i64>& ws, i64 G, bool transpose, const kernel_node& n) {
  if (xs.size() < 3) n.fail("input must have rank >= 3 (N, C, spatial...), got " + shape::of(xs).to_string());
  if (ws.size() != xs.size()) n.fail("weight rank " + std::to_string(ws.size()) + " differs from input rank " + std::to_string(xs.size()));
  if (G <= 0) n.fail("group must be positive");
  if (xs.size() > 10) n.fail("at most 8 spatial dimensions are supported, got " + std::to_string(xs.size() - 2));
  if (!transpose) {
    if (ws[1] * G != xs[1])
      n.fail("input has " + std::to_string(xs[1]) + " channels but weight expects " + std::to_string(ws[1]) + " x group " + std::to_string(G));
    if (ws[0] % G != 0) n.fail("output channels " + std::to_string(ws[0]) + " not divisible by group " + std::to_string(G));
  } else {
    if (ws[0] != xs[1]) n.fail("input has " + std::to_string(xs[1]) + " channels but weight has " + std::to_string(ws[0]));
    if (xs[1] % G != 0) n.fail("input channels not divisible by group " + std::to_string(G));
  }
}

/// The window of a convolution's weight `ws` (its spatial sizes, positive), checked against
/// the kernel_shape attribute when there is one.
inline std::vector<i64> kernel_of(const shape_rules::window_attrs& a, const std::vector<i64>& ws, const kernel_node& n) {
  std::vector<i64> k(ws.begin() + 2, ws.end());
  for (i64 v : k)
    if (v <= 0) n.fail("weight has an empty spatial dimension: " + shape::of(ws).to_string());
  if (!a.kernel.empty() && a.kernel != k)
    n.fail("kernel_shape " + shape::of(a.kernel).to_string() + " differs from the weight's " + shape::of(k).to_string());
  return k;
}

// ---- losses ---------------------------------------------------------------------------------

/// The reduction attribute of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
enum class reduction { none, sum, mean };
inline reduction parse_reduction(const kernel_node& n) {
  const std::string r = n.attr<std::string>("reduction", "mean");
  if (r == "none") return reduction::none;
  if (r == "sum") return reduction::sum;
  if (r == "mean") return reduction::mean;
  n.fail("reduction must be none, sum or mean, got '" + r + "'");
}

// ---- GridSample -----------------------------------------------------------------------------

enum class gs_mode { nearest = 0, linear = 1, cubic = 2 };
enum class gs_pad { zeros = 0, border = 1, reflection = 2 };

/// Most input points one GridSample output point may read: the product over the spatial
/// dimensions of min(taps, size) (taps: 1 nearest, 2 linear, 4 cubic). 4^5: cubic over 5
/// spatial dimensions, linear over 10, nearest over any. The spec allows any rank, but the
/// work grows as taps^rank (cubic over 12 dimensions of size 4: 4^12 reads per output point).
inline constexpr double gs_max_points = 1024;

/// GridSample's attributes: mode (nearest, linear / bilinear, cubic / bicubic; linear by
/// default from opset 20, bilinear before), padding_mode, align_corners.
struct grid_sample_attrs {
  std::string name;  ///< the mode as written
  gs_mode mode = gs_mode::linear;
  gs_pad pad = gs_pad::zeros;
  bool align = false;
  static grid_sample_attrs read(const kernel_node& n) {
    grid_sample_attrs a;
    a.name = n.attr<std::string>("mode", n.opset >= 20 ? "linear" : "bilinear");
    if (a.name == "nearest") a.mode = gs_mode::nearest;
    else if (a.name == "bilinear" || a.name == "linear") a.mode = gs_mode::linear;
    else if (a.name == "bicubic" || a.name == "cubic") a.mode = gs_mode::cubic;
    else n.fail("mode must be nearest, linear or cubic, got '" + a.name + "'");
    const std::string pm = n.attr<std::string>("padding_mode", "zeros");
    if (pm == "zeros") a.pad = gs_pad::zeros;
    else if (pm == "border") a.pad = gs_pad::border;
    else if (pm == "reflection") a.pad = gs_pad::reflection;
    else n.fail("padding_mode must be zeros, border or reflection, got '" + pm + "'");
    a.align = n.attr<i64>("align_corners", 0) != 0;
    return a;
  }
  int taps() const { return mode == gs_mode::nearest ? 1 : mode == gs_mode::linear ? 2 : 4; }
};

/// GridSample's output sizes [N, C, grid's spatial...] for X of `xs` (`x_elements` of them) and
/// a grid of `gsz`, checked; `work` false for an empty output; `reach` the input points one
/// output point reads at most (checked against `gs_max_points`).
struct grid_sample_shape {
  std::vector<i64> out;
  bool work = false;
  double reach = 1;
};
inline grid_sample_shape grid_sample_geometry(const std::vector<i64>& xs, i64 x_elements, const std::vector<i64>& gsz,
                                              const grid_sample_attrs& a, const kernel_node& n) {
  if (xs.size() < 3) n.fail("X must have rank >= 3 (N x C x spatial...), got rank " + std::to_string(xs.size()));
  const std::size_t k = xs.size() - 2;
  if (gsz.size() != k + 2 || gsz[0] != xs[0] || gsz.back() != static_cast<i64>(k))
    n.fail("grid has shape " + shape::of(gsz).to_string() + ", expected [N, out spatial..., " + std::to_string(k) + "] for X of shape " +
           shape::of(xs).to_string());
  grid_sample_shape r;
  r.out = {xs[0], xs[1]};
  r.out.insert(r.out.end(), gsz.begin() + 1, gsz.end() - 1);
  // an empty output takes no work (X's and the grid's other sizes may then be anything)
  r.work = std::all_of(r.out.begin(), r.out.end(), [](i64 v) { return v > 0; });
  if (r.work && x_elements == 0) n.fail("cannot sample from an empty spatial extent " + shape::of(xs).to_string());
  // the input points an output point reads: at most min(taps, size) distinct ones per
  // dimension (padding repeats or drops the others), their product bounded
  for (std::size_t d = 2; d < xs.size(); ++d) r.reach *= static_cast<double>(std::min<i64>(a.taps(), xs[d]));
  if (r.work && r.reach > gs_max_points) {
    char count[32];
    if (r.reach < 1e18) std::snprintf(count, sizeof count, "%.0f", r.reach);
    else std::snprintf(count, sizeof count, "more than 1e18");
    n.fail("mode '" + a.name + "' over the " + std::to_string(k) + " spatial dimensions of X " + shape::of(xs).to_string() + " reads " +
           count + " input points for each output point (min(" + std::to_string(a.taps()) +
           ", size) per dimension), over the limit of " + std::to_string(static_cast<i64>(gs_max_points)));
  }
  return r;
}

// ---- RoiAlign -------------------------------------------------------------------------------

/// RoiAlign's attributes: mode (avg, max), output_height / output_width, sampling_ratio,
/// spatial_scale and coordinate_transformation_mode (half_pixel from opset 16, output_half_pixel
/// before).
struct roi_align_attrs {
  bool avg = true, half = true;
  i64 oh = 1, ow = 1, ratio = 0;
  double scale = 1.0;
  static roi_align_attrs read(const kernel_node& n) {
    roi_align_attrs a;
    const std::string m = n.attr<std::string>("mode", "avg");
    if (m != "avg" && m != "max") n.fail("mode must be avg or max, got '" + m + "'");
    a.avg = m == "avg";
    a.oh = n.attr<i64>("output_height", 1), a.ow = n.attr<i64>("output_width", 1);
    if (a.oh <= 0 || a.ow <= 0) n.fail("output_height and output_width must be positive");
    a.ratio = n.attr<i64>("sampling_ratio", 0);
    a.scale = n.attr<double>("spatial_scale", 1.0);
    const std::string ct = n.attr<std::string>("coordinate_transformation_mode", n.opset > 0 && n.opset < 16 ? "output_half_pixel" : "half_pixel");
    if (ct != "half_pixel" && ct != "output_half_pixel") n.fail("coordinate_transformation_mode must be half_pixel or output_half_pixel");
    a.half = ct == "half_pixel";
    return a;
  }
};

/// Roi `r`'s box (x0, y0, width, height, in input pixels) from its corners `q` and its sampling
/// grid per bin (sampling_ratio, else as many samples as the bin spans pixels, rounded up):
/// the table of a roi's samples (oh x ow x gh x gw of them) counts as scratch against the run's
/// limits, so rois spanning 10^12 pixels are an error, not a hang.
struct roi_box {
  double x0 = 0, y0 = 0, w = 0, h = 0;
  i64 gh = 0, gw = 0;
};
template <class Ctx>
roi_box roi_align_box(const double* q, const roi_align_attrs& a, i64 r, const Ctx& ctx) {
  const double off = a.half ? 0.5 : 0.0;
  roi_box b;
  b.x0 = q[0] * a.scale - off, b.y0 = q[1] * a.scale - off;
  b.w = q[2] * a.scale - off - b.x0, b.h = q[3] * a.scale - off - b.y0;
  if (!a.half) b.w = std::max(b.w, 1.0), b.h = std::max(b.h, 1.0);
  if (!std::isfinite(b.x0) || !std::isfinite(b.y0) || !std::isfinite(b.w) || !std::isfinite(b.h))
    ctx.fail("roi " + std::to_string(r) + " has a coordinate that is not finite (after spatial_scale)");
  const double gh = a.ratio > 0 ? static_cast<double>(a.ratio) : std::max(0.0, std::ceil(b.h / static_cast<double>(a.oh)));
  const double gw = a.ratio > 0 ? static_cast<double>(a.ratio) : std::max(0.0, std::ceil(b.w / static_cast<double>(a.ow)));
  constexpr double sample_bytes = 4 * (sizeof(i64) + sizeof(double));
  check_scratch(ctx, static_cast<double>(a.oh) * static_cast<double>(a.ow) * gh * gw * sample_bytes,
                "roi " + std::to_string(r) + " samples each of its " + std::to_string(a.oh) + "x" + std::to_string(a.ow) +
                    " bins on a grid of " + std::to_string(gh) + " x " + std::to_string(gw) + " points: its table");
  b.gh = static_cast<i64>(gh), b.gw = static_cast<i64>(gw);
  return b;
}

// ---- Col2Im ---------------------------------------------------------------------------------

/// Col2Im's geometry: input [N, C * prod(block), L] of sliding blocks summed back into an image
/// [N, C, image...]: per spatial axis the block, strides, pads (begin), dilations and the
/// number of sliding positions; checked as the spec asks.
struct col2im_geometry {
  std::vector<i64> image, block, blocks, strides, pad_begin, dilations, out;
  i64 kprod = 1, L = 1, C = 0;
};
inline col2im_geometry col2im_plan(const std::vector<i64>& xs, const std::vector<i64>& image, const std::vector<i64>& block,
                                   const std::vector<i64>& strides_attr, const std::vector<i64>& pads_attr,
                                   const std::vector<i64>& dil_attr, const kernel_node& n) {
  const std::size_t nd = image.size();
  if (nd == 0 || block.size() != nd)
    n.fail("image_shape and block_shape must have the same non-zero length, got " + std::to_string(nd) + " and " +
           std::to_string(block.size()));
  auto list = [&](const std::vector<i64>& v, std::size_t len, i64 def, const char* what) {
    if (v.empty()) return std::vector<i64>(len, def);
    if (v.size() != len) n.fail(std::string(what) + " has " + std::to_string(v.size()) + " values, expected " + std::to_string(len));
    return v;
  };
  col2im_geometry g;
  g.image = image;
  g.block = block;
  g.strides = list(strides_attr, nd, 1, "strides");
  g.dilations = list(dil_attr, nd, 1, "dilations");
  const std::vector<i64> pd = list(pads_attr, 2 * nd, 0, "pads");
  g.pad_begin.assign(pd.begin(), pd.begin() + static_cast<std::ptrdiff_t>(nd));
  if (xs.size() != 3) n.fail("input must be 3-D [N, C * prod(block_shape), L], got " + shape::of(xs).to_string());
  auto mul = [&](i64 a, i64 b) {
    auto r = checked_mul(a, b);
    if (!r) n.fail("image_shape, block_shape, pads and dilations overflow int64");
    return *r;
  };
  auto add = [&](i64 a, i64 b) {
    auto r = checked_add(a, b);
    if (!r) n.fail("image_shape, block_shape, pads and dilations overflow int64");
    return *r;
  };
  g.blocks.resize(nd);
  for (std::size_t d = 0; d < nd; ++d) {
    if (block[d] <= 0 || g.strides[d] <= 0 || g.dilations[d] <= 0 || image[d] < 0) n.fail("block_shape, strides and dilations must be positive");
    g.kprod = mul(g.kprod, block[d]);
    const i64 span = add(add(image[d], pd[d]), pd[d + nd]) - add(mul(g.dilations[d], block[d] - 1), 1);
    g.blocks[d] = span < 0 ? 0 : span / g.strides[d] + 1;
    g.L = mul(g.L, g.blocks[d]);
  }
  const i64 CK = xs[1];
  if (CK % g.kprod != 0)
    n.fail("input's dimension 1 (" + std::to_string(CK) + ") is not a multiple of prod(block_shape) " + std::to_string(g.kprod));
  if (xs[2] != g.L) n.fail("input has " + std::to_string(xs[2]) + " blocks, image_shape and block_shape give " + std::to_string(g.L));
  g.C = CK / g.kprod;
  g.out = {xs[0], g.C};
  g.out.insert(g.out.end(), image.begin(), image.end());
  return g;
}

// ---- MaxUnpool ------------------------------------------------------------------------------

/// MaxUnpool's shapes: `inferred`, the shape MaxPool's input had (the indices are flat positions
/// in it), and `out`, the output's (output_shape's values `requested` when given, else
/// `inferred`), checked.
struct unpool_shapes {
  std::vector<i64> inferred, out;
  i64 total = 0;  ///< elements of `inferred`
};
inline unpool_shapes max_unpool_shapes(const std::vector<i64>& xs, const std::vector<i64>& is, const shape_rules::window_attrs& wa,
                                       const std::optional<std::vector<i64>>& requested, const kernel_node& n) {
  if (xs.size() < 3) n.fail("input must have rank >= 3, got " + shape::of(xs).to_string());
  if (is != xs) n.fail("indices shape " + shape::of(is).to_string() + " differs from X's " + shape::of(xs).to_string());
  const std::size_t rk = xs.size() - 2;
  if (wa.kernel.size() != rk) n.fail("kernel_shape does not match the spatial rank");
  if (!wa.strides.empty() && wa.strides.size() != rk)
    n.fail("strides has " + std::to_string(wa.strides.size()) + " values for " + std::to_string(rk) + " spatial axes");
  if (!wa.pads.empty() && wa.pads.size() != 2 * rk)
    n.fail("pads has " + std::to_string(wa.pads.size()) + " values for " + std::to_string(rk) + " spatial axes");
  unpool_shapes r;
  r.inferred = {xs[0], xs[1]};
  for (std::size_t d = 0; d < rk; ++d) {
    const i64 s = wa.strides.empty() ? 1 : wa.strides[d];
    const i64 pb = wa.pads.empty() ? 0 : wa.pads[d], pe = wa.pads.empty() ? 0 : wa.pads[d + rk];
    // (in - 1) * stride + kernel - pads, overflow-checked
    auto v = checked_mul(xs[d + 2] - 1, s);
    if (v) v = checked_add(*v, wa.kernel[d]);
    if (v) v = checked_sub(*v, pb);
    if (v) v = checked_sub(*v, pe);
    if (!v) n.fail("the unpooled size of spatial axis " + std::to_string(d) + " overflows int64");
    r.inferred.push_back(std::max<i64>(0, *v));
  }
  r.out = r.inferred;
  if (requested) {
    r.out = *requested;
    if (r.out.size() != xs.size()) n.fail("output_shape has " + std::to_string(r.out.size()) + " values for rank " + std::to_string(xs.size()));
    if (r.out[0] != xs[0] || r.out[1] != xs[1]) n.fail("output_shape must keep N and C");
    for (i64 v : r.out)
      if (v < 0) n.fail("output_shape must be non-negative");
  }
  const auto total = checked_num_elements(r.inferred);
  if (!total) n.fail("the unpooled shape's element count overflows int64");
  r.total = *total;
  return r;
}

/// The output offset of MaxUnpool index `k` (a flat position in `s.inferred`, landing at the
/// same coordinates of `s.out`), checked.
inline i64 unpool_offset(i64 k, const unpool_shapes& s, const kernel_node& n) {
  if (k < 0 || k >= s.total) n.fail("index " + std::to_string(k) + " out of range [0, " + std::to_string(s.total) + ")");
  if (s.out == s.inferred) return k;
  i64 rem = k, off = 0, mul = 1;
  bool inside = true;
  for (std::size_t d = s.out.size(); d-- > 0;) {
    const i64 c = rem % s.inferred[d];
    rem /= s.inferred[d];
    if (c >= s.out[d]) inside = false;
    off += c * mul;
    mul *= s.out[d];
  }
  if (!inside) n.fail("index " + std::to_string(k) + " falls outside output_shape");
  return off;
}

// ---- float type codes ---------------------------------------------------------------------

/// The floating-point dtype of an ONNX TensorProto data type number (1, 10, 11, 16), as
/// softmax_precision and stash_type give it; other numbers fail naming `what`.
inline dtype float_type_attr(i64 v, const kernel_node& n, const char* what) {
  switch (v) {
    case 1: return dtype::f32;
    case 10: return dtype::f16;
    case 11: return dtype::f64;
    case 16: return dtype::bf16;
    default: break;
  }
  n.fail(std::string(what) + " " + std::to_string(v) + " is not a floating-point type (1: float, 10: float16, 11: double, 16: bfloat16)");
}

// ---- Attention (ONNX 23 to 25) --------------------------------------------------------------

/// The attributes of one Attention node.
struct attention_attrs {
  bool causal = false;
  i64 q_heads = 0, kv_heads = 0;  ///< 0: not given
  i64 mode = 0;                   ///< qk_matmul_output_mode
  bool has_scale = false;
  double scale = 0;
  double softcap = 0;
  dtype softmax_type = dtype::undefined;  ///< undefined: Q's type
  i64 left = -1, right = -1;              ///< sliding window (version 25)
  int opset = 0;

  /// The scale of the scores: the attribute, or 1 / sqrt(head size).
  double scale_for(i64 head) const { return has_scale ? scale : 1.0 / std::sqrt(static_cast<double>(head)); }
  /// Whether a row's scores get an additive bias besides the attention mask (causal, window).
  bool masks() const { return causal || left >= 0 || right >= 0; }
};

/// Reads and checks the attributes of an Attention node.
inline attention_attrs read_attention_attrs(const kernel_node& n) {
  attention_attrs a;
  a.causal = n.attr<i64>("is_causal", 0) != 0;
  a.q_heads = n.attr<i64>("q_num_heads", 0);
  a.kv_heads = n.attr<i64>("kv_num_heads", 0);
  a.mode = n.attr<i64>("qk_matmul_output_mode", 0);
  if (a.mode < 0 || a.mode > 3) n.fail("qk_matmul_output_mode must be 0, 1, 2 or 3, got " + std::to_string(a.mode));
  a.has_scale = n.has_attr("scale");
  a.scale = n.attr<double>("scale", 0.0);
  a.softcap = n.attr<double>("softcap", 0.0);
  if (n.has_attr("softmax_precision")) a.softmax_type = float_type_attr(n.attr<i64>("softmax_precision"), n, "softmax_precision");
  a.left = n.attr<i64>("left_window_size", -1);
  a.right = n.attr<i64>("right_window_size", -1);
  if (a.left < -1 || a.right < -1)
    n.fail("left_window_size and right_window_size must be -1 or non-negative, got " + std::to_string(a.left) + " and " +
           std::to_string(a.right));
  a.opset = n.opset;
  return a;
}

/// The sizes of one Attention call, every tensor seen as 4-D (batch, heads, sequence, head).
struct attention_sizes {
  i64 batch = 0, q_heads = 0, kv_heads = 0, q_seq = 0, kv_seq = 0, past = 0, total = 0, head = 0, v_head = 0;
  bool three_d = false;
};

/// Checks the inputs of an Attention node (any executor's context: `input(i)`, `has_input(i)`,
/// `fail`) and returns their sizes. The values of nonpad_kv_seqlen are checked apart
/// (`check_nonpad_lengths`), where the executor has them on the host.
template <class Ctx>
attention_sizes attention_check(const Ctx& ctx, const attention_attrs& a) {
  const auto &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  for (std::size_t i = 0; i < 3; ++i) {
    const dtype d = ctx.input(i).element_type();
    if (d != dtype::f32 && d != dtype::f64 && d != dtype::f16 && d != dtype::bf16)
      ctx.fail("Q, K and V must be a floating-point tensor, got " + std::string(to_string(d)));
  }
  if (k.element_type() != q.element_type())
    ctx.fail("K must have Q's element type " + std::string(to_string(q.element_type())) + ", got " + std::string(to_string(k.element_type())));
  if ((q.rank() != 3 && q.rank() != 4) || k.rank() != q.rank() || v.rank() != q.rank())
    ctx.fail("Q, K and V must all be 3-D or all be 4-D, got " + q.shape().to_string() + ", " + k.shape().to_string() + " and " +
             v.shape().to_string());
  attention_sizes z;
  const auto &qs = q.sizes(), &ks = k.sizes(), &vs = v.sizes();
  z.batch = qs[0];
  if (ks[0] != z.batch || vs[0] != z.batch)
    ctx.fail("Q, K and V must have the same batch size, got " + q.shape().to_string() + ", " + k.shape().to_string() + " and " +
             v.shape().to_string());
  if (q.rank() == 3) {
    z.three_d = true;
    if (a.q_heads <= 0 || a.kv_heads <= 0) ctx.fail("3-D inputs need positive attributes q_num_heads and kv_num_heads");
    z.q_heads = a.q_heads;
    z.kv_heads = a.kv_heads;
    if (qs[2] % z.q_heads != 0)
      ctx.fail("Q's hidden size " + std::to_string(qs[2]) + " is not a multiple of q_num_heads " + std::to_string(z.q_heads));
    if (ks[2] % z.kv_heads != 0 || vs[2] % z.kv_heads != 0)
      ctx.fail("the hidden sizes of K (" + std::to_string(ks[2]) + ") and V (" + std::to_string(vs[2]) + ") must be multiples of kv_num_heads " +
               std::to_string(z.kv_heads));
    z.q_seq = qs[1];
    z.kv_seq = ks[1];
    z.head = qs[2] / z.q_heads;
    if (ks[2] / z.kv_heads != z.head)
      ctx.fail("K's head size " + std::to_string(ks[2] / z.kv_heads) + " differs from Q's " + std::to_string(z.head));
    if (vs[1] != z.kv_seq) ctx.fail("K and V must have the same sequence length, got " + k.shape().to_string() + " and " + v.shape().to_string());
    z.v_head = vs[2] / z.kv_heads;
  } else {
    if ((a.q_heads || a.kv_heads) && (a.opset == 0 || a.opset >= 25)) ctx.fail("q_num_heads and kv_num_heads must not be given for 4-D inputs");
    z.q_heads = qs[1];
    z.kv_heads = ks[1];
    if ((a.q_heads && a.q_heads != z.q_heads) || (a.kv_heads && a.kv_heads != z.kv_heads))
      ctx.fail("q_num_heads " + std::to_string(a.q_heads) + " and kv_num_heads " + std::to_string(a.kv_heads) +
               " do not match the inputs' heads " + std::to_string(z.q_heads) + " and " + std::to_string(z.kv_heads));
    z.q_seq = qs[2];
    z.kv_seq = ks[2];
    z.head = qs[3];
    if (ks[3] != z.head) ctx.fail("K's head size " + std::to_string(ks[3]) + " differs from Q's " + std::to_string(z.head));
    if (vs[1] != z.kv_heads || vs[2] != z.kv_seq)
      ctx.fail("V " + v.shape().to_string() + " must have K's heads and sequence length " + k.shape().to_string());
    z.v_head = vs[3];
  }
  if (z.kv_heads <= 0 || z.q_heads % z.kv_heads != 0)
    ctx.fail("the query heads (" + std::to_string(z.q_heads) + ") must be a multiple of the key/value heads (" + std::to_string(z.kv_heads) +
             ")");
  const bool pk = ctx.has_input(4), pv = ctx.has_input(5);
  if (pk != pv) ctx.fail("past_key and past_value must be given together");
  if (pk) {
    if (ctx.has_input(6)) ctx.fail("nonpad_kv_seqlen cannot be combined with past_key and past_value");
    const auto &p1 = ctx.input(4), &p2 = ctx.input(5);
    if (p1.element_type() != k.element_type() || p2.element_type() != v.element_type())
      ctx.fail("past_key and past_value must have the element types of K and V");
    if (p1.rank() != 4 || p2.rank() != 4)
      ctx.fail("past_key and past_value must be 4-D, got " + p1.shape().to_string() + " and " + p2.shape().to_string());
    z.past = p1.sizes()[2];
    const std::vector<i64> want_k{z.batch, z.kv_heads, z.past, z.head}, want_v{z.batch, z.kv_heads, z.past, z.v_head};
    if (p1.sizes() != want_k || p2.sizes() != want_v)
      ctx.fail("past_key " + p1.shape().to_string() + " and past_value " + p2.shape().to_string() + " must be " +
               shape::of(want_k).to_string() + " and " + shape::of(want_v).to_string());
  }
  z.total = z.past + z.kv_seq;
  if (ctx.has_input(6)) {
    const auto& np = ctx.input(6);
    if (np.element_type() != dtype::int64 || np.rank() != 1 || np.sizes()[0] != z.batch)
      ctx.fail("nonpad_kv_seqlen must be an int64 vector of batch size " + std::to_string(z.batch) + ", got " +
               std::string(to_string(np.element_type())) + np.shape().to_string());
  }
  return z;
}

/// Checks the values of nonpad_kv_seqlen: counts of valid keys, at most the keys there are.
inline void check_nonpad_lengths(const std::vector<i64>& lens, const attention_sizes& z, const kernel_node& n) {
  for (i64 len : lens)
    if (len < 0 || len > z.total)
      n.fail("nonpad_kv_seqlen " + std::to_string(len) + " is out of range [0, " + std::to_string(z.total) +
             "] (the key/value sequence length)");
}

/// The attention mask's sizes as 4-D (ones in front), checked: each of the first three
/// broadcasts to (batch, q_heads, q_seq), the last is at most the total sequence length (the
/// keys past it are masked).
inline std::array<i64, 4> attention_mask_dims(const std::vector<i64>& m, const attention_sizes& z, const kernel_node& n) {
  const std::size_t r = m.size();
  if (r < 1 || r > 4) n.fail("attn_mask must have rank 1 to 4, got " + shape::of(m).to_string());
  std::array<i64, 4> ms{1, 1, 1, 1};
  std::copy(m.begin(), m.end(), ms.begin() + static_cast<std::ptrdiff_t>(4 - r));
  const std::array<i64, 4> target{z.batch, z.q_heads, z.q_seq, z.total};
  if (ms[3] > z.total)
    n.fail("attn_mask " + shape::of(m).to_string() + " is longer than the total sequence length " + std::to_string(z.total));
  for (std::size_t d = 0; d < 3; ++d)
    if (ms[d] != 1 && ms[d] != target[d])
      n.fail("attn_mask " + shape::of(m).to_string() + " does not broadcast to (batch, q_heads, q_seq, total_seq) " +
             shape::of(std::vector<i64>(target.begin(), target.end())).to_string());
  return ms;
}

// ---- DeformConv -----------------------------------------------------------------------------

/// DeformConv's attributes (2-D): group, offset_group, strides, dilations, pads and the
/// optional kernel_shape, checked.
struct deform_conv_attrs {
  i64 group = 1, offset_group = 1;
  std::vector<i64> strides, dilations, pads, kernel_shape;
};
inline deform_conv_attrs read_deform_conv_attrs(const kernel_node& n) {
  deform_conv_attrs a;
  a.group = n.attr<i64>("group", 1);
  a.offset_group = n.attr<i64>("offset_group", 1);
  a.strides = n.attr<std::vector<i64>>("strides", {1, 1});
  a.dilations = n.attr<std::vector<i64>>("dilations", {1, 1});
  a.pads = n.attr<std::vector<i64>>("pads", {0, 0, 0, 0});
  a.kernel_shape = n.attr<std::vector<i64>>("kernel_shape", {});
  if (a.group < 1 || a.offset_group < 1) n.fail("group and offset_group must be positive");
  if (a.strides.size() != 2 || a.dilations.size() != 2 || a.pads.size() != 4 || (!a.kernel_shape.empty() && a.kernel_shape.size() != 2))
    n.fail("only 2-D DeformConv is supported (strides, dilations, kernel_shape of 2 values, pads of 4)");
  for (i64 v : a.strides)
    if (v < 1) n.fail("strides must be positive");
  for (i64 v : a.dilations)
    if (v < 1) n.fail("dilations must be positive");
  return a;
}

/// DeformConv's sizes: X [N, C, H, W], W [M, Cg, kH, kW], the output [N, M, oH, oW], taps =
/// kH * kW.
struct deform_conv_shape {
  i64 N = 0, C = 0, H = 0, W = 0, M = 0, Cg = 0, kH = 0, kW = 0, oH = 0, oW = 0, taps = 0;
};
/// Checks DeformConv's inputs (X, W, offset [N, offset_group * taps * 2, oH, oW], B of M
/// values when given, mask [N, offset_group * taps, oH, oW] when given; every one of X's
/// element type) and returns its sizes. Pads and dilations whose arithmetic overflows are an
/// error.
inline deform_conv_shape deform_conv_check(const std::vector<i64>& x, const std::vector<i64>& w, const std::vector<i64>& off,
                                           const std::vector<i64>* b, const std::vector<i64>* mask, const deform_conv_attrs& a,
                                           const kernel_node& n) {
  if (x.size() != 4 || w.size() != 4 || off.size() != 4)
    n.fail("X, W and offset must be 4-D (2-D DeformConv), got " + shape::of(x).to_string() + ", " + shape::of(w).to_string() + ", " +
           shape::of(off).to_string());
  deform_conv_shape s{.N = x[0], .C = x[1], .H = x[2], .W = x[3], .M = w[0], .Cg = w[1]};
  s.kH = a.kernel_shape.empty() ? w[2] : a.kernel_shape[0];
  s.kW = a.kernel_shape.empty() ? w[3] : a.kernel_shape[1];
  if (s.kH != w[2] || s.kW != w[3]) n.fail("kernel_shape does not match W " + shape::of(w).to_string());
  if (s.Cg * a.group != s.C || s.M % a.group != 0)
    n.fail("X has " + std::to_string(s.C) + " channels, W " + shape::of(w).to_string() + " with group " + std::to_string(a.group));
  if (s.C % a.offset_group != 0 || (s.C > 0 && a.offset_group > s.C)) n.fail("the channels are not a multiple of offset_group");
  if (s.kH <= 0 || s.kW <= 0 || s.kH > (i64{1} << 20) || s.kW > (i64{1} << 20) || a.offset_group > (i64{1} << 20))
    n.fail("kernel_shape and offset_group must be positive and below 2^20");
  auto extent = [&](i64 in, i64 p0, i64 p1, i64 k, i64 d, i64 st) {
    const auto span = checked_mul(k - 1, d);
    const auto padded = checked_add(in, p0);
    const auto total = padded ? checked_add(*padded, p1) : std::nullopt;
    const auto room = total && span ? checked_sub(*total, *span) : std::nullopt;
    if (!room || *room == std::numeric_limits<i64>::min()) n.fail("pads and dilations overflow int64");
    return (*room - 1) / st + 1;
  };
  s.oH = extent(s.H, a.pads[0], a.pads[2], s.kH, a.dilations[0], a.strides[0]);
  s.oW = extent(s.W, a.pads[1], a.pads[3], s.kW, a.dilations[1], a.strides[1]);
  s.taps = s.kH * s.kW;
  auto expect = [&](const std::vector<i64>& got, i64 channels, const char* what) {
    if (got != std::vector<i64>{s.N, channels, s.oH, s.oW})
      n.fail(std::string(what) + " is " + shape::of(got).to_string() + ", expected [" + std::to_string(s.N) + "," + std::to_string(channels) +
             "," + std::to_string(s.oH) + "," + std::to_string(s.oW) + "]");
  };
  expect(off, a.offset_group * s.taps * 2, "offset");
  if (b && gpass::num_elements(*b) != s.M) n.fail("B must have " + std::to_string(s.M) + " values");
  if (mask) expect(*mask, a.offset_group * s.taps, "mask");
  return s;
}
/// Checks that DeformConv's input `what` (W, offset, B, mask) has X's element type `x`.
inline void check_deform_conv_type(dtype x, dtype t, const char* what, const kernel_node& n) {
  if (t != x) n.fail(std::string(what) + " is " + std::string(to_string(t)) + ", X " + std::string(to_string(x)));
}

// ---- NonMaxSuppression ----------------------------------------------------------------------

/// NonMaxSuppression's sizes: boxes [batches, boxes, 4], scores [batches, classes, boxes].
struct nms_shape {
  i64 batches = 0, boxes = 0, classes = 0;
};
inline nms_shape nms_check(const std::vector<i64>& boxes, const std::vector<i64>& scores, const kernel_node& n) {
  if (boxes.size() != 3 || boxes[2] != 4) n.fail("boxes must have shape [batches, boxes, 4]");
  if (scores.size() != 3) n.fail("scores must have shape [batches, classes, boxes]");
  if (scores[0] != boxes[0] || scores[2] != boxes[1])
    n.fail("scores " + shape::of(scores).to_string() + " do not match boxes " + shape::of(boxes).to_string());
  return {boxes[0], boxes[1], scores[1]};
}
inline void check_iou_threshold(double iou, const kernel_node& n) {
  if (!(iou >= 0 && iou <= 1)) n.fail("iou_threshold must be in [0, 1]");
}
/// Whether score `a` of box `i` ranks before score `b` of box `j`: the greater score first, a
/// NaN after every number, ties (and NaNs among themselves) by index.
inline bool nms_before(double a, i64 i, double b, i64 j) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na != nb) return nb;
  if (!na && a != b) return a > b;
  return i < j;
}

// ---- ONNX Runtime's Attention and EmbedLayerNormalization (com.microsoft) -------------------

/// Checks ONNX Runtime's attention_bias ([B or 1, N or 1, S, T]).
inline void check_ort_attention_bias(const std::vector<i64>& t, i64 B, i64 N, i64 S, i64 T, const kernel_node& n) {
  if (t.size() != 4 || t[2] != S || t[3] != T || (t[0] != 1 && t[0] != B) || (t[1] != 1 && t[1] != N))
    n.fail("attention_bias must be [B or 1, num_heads or 1, " + std::to_string(S) + ", " + std::to_string(T) + "], got " +
           shape::of(t).to_string());
}

/// The attributes of a com.microsoft Attention node (num_heads checked).
struct ort_attention_attrs {
  i64 heads = 0;
  bool causal = false;          ///< unidirectional
  double filter = -10000.0;     ///< mask_filter_value
  double scale = 0;             ///< 0: 1 / sqrt(head size)
  std::vector<i64> qkv_sizes;   ///< qkv_hidden_sizes (empty: three equal parts)
};
inline ort_attention_attrs read_ort_attention_attrs(const kernel_node& n) {
  ort_attention_attrs a;
  a.heads = n.attr<i64>("num_heads");
  if (a.heads <= 0) n.fail("num_heads must be positive");
  a.causal = n.attr<i64>("unidirectional", 0) != 0;
  a.filter = n.attr<double>("mask_filter_value", -10000.0);
  a.scale = n.attr<double>("scale", 0.0);
  a.qkv_sizes = n.attr<std::vector<i64>>("qkv_hidden_sizes", {});
  return a;
}

/// The sizes of one com.microsoft Attention call: input [B, S, Hin], weights [Hin, W3] split
/// into Q, K and V of Hq, Hk and Hv columns (`heads` heads of dq and dv), past [2, B, heads,
/// P, dq], total = P + S keys; the mask_index form (0 none, 1 [B] ends, 2 [2B] ends then
/// starts, 3 [B, total] 0/1, 4 [B, S, total] 0/1).
struct ort_attention_sizes {
  i64 B = 0, S = 0, Hin = 0, W3 = 0, Hq = 0, Hk = 0, Hv = 0, heads = 0, dq = 0, dv = 0, P = 0, total = 0;
  int mask_kind = 0;
};

/// Checks the inputs of a com.microsoft Attention node (any executor's context) and returns
/// their sizes. `want_present`: output 1 is wanted (it needs equal Q, K and V head sizes).
template <class Ctx>
ort_attention_sizes ort_attention_check(const Ctx& ctx, i64 heads, const std::vector<i64>& qkv_sizes, bool want_present) {
  const auto& x = ctx.input(0);
  const auto& w = ctx.input(1);
  if (ctx.has_input(6)) ctx.fail("past_sequence_length (a shared past/present buffer) has no kernel here");
  if (x.rank() != 3 || w.rank() != 2 || w.sizes()[0] != x.sizes()[2])
    ctx.fail("input must be [batch, sequence, hidden] and weights [hidden, 3 x hidden], got " + x.shape().to_string() + " and " +
             w.shape().to_string());
  ort_attention_sizes z;
  z.heads = heads;
  z.B = x.sizes()[0], z.S = x.sizes()[1], z.Hin = x.sizes()[2], z.W3 = w.sizes()[1];
  z.Hq = z.Hk = z.Hv = z.W3 / 3;
  if (!qkv_sizes.empty()) {
    if (qkv_sizes.size() != 3) ctx.fail("qkv_hidden_sizes must have 3 values");
    // (each within the weights' columns: a negative one indexed before Q's, a huge one made
    // the sum wrap around)
    for (i64 v : qkv_sizes)
      if (v < 0 || v > z.W3) ctx.fail("qkv_hidden_sizes must be in [0, " + std::to_string(z.W3) + "], got " + std::to_string(v));
    z.Hq = qkv_sizes[0], z.Hk = qkv_sizes[1], z.Hv = qkv_sizes[2];
  }
  if (z.Hq + z.Hk + z.Hv != z.W3 || z.Hq != z.Hk || z.Hq % heads != 0 || z.Hv % heads != 0)
    ctx.fail("weights of " + std::to_string(z.W3) + " columns do not split into Q, K, V of " + std::to_string(heads) + " heads");
  if (ctx.has_input(2) && ctx.input(2).size() != z.W3) ctx.fail("bias must have " + std::to_string(z.W3) + " values");
  z.dq = z.Hq / heads, z.dv = z.Hv / heads;
  if (ctx.has_input(4)) {
    const auto& past = ctx.input(4);
    z.P = past.rank() == 5 ? past.sizes()[3] : -1;
    if (past.sizes() != std::vector<i64>{2, z.B, heads, z.P, z.dq} || z.dq != z.dv)
      ctx.fail("past must be [2, B, num_heads, P, head size] (equal Q, K and V head sizes), got " + past.shape().to_string());
    if (past.element_type() != x.element_type()) ctx.fail("past must have the input's element type");
  }
  if (z.P > std::numeric_limits<i64>::max() - z.S) ctx.fail("past and sequence lengths overflow int64");  // (of empty inputs)
  z.total = z.P + z.S;
  if (want_present && z.dq != z.dv)
    ctx.fail("present needs equal Q, K and V head sizes, got " + std::to_string(z.dq) + " and " + std::to_string(z.dv));
  if (ctx.has_input(3)) {
    const auto& m = ctx.input(3);
    const std::size_t r = m.rank();
    const std::vector<i64>& ms = m.sizes();
    if (r == 1 && m.size() == z.B) z.mask_kind = 1;
    else if (r == 1 && m.size() == 2 * z.B) z.mask_kind = 2;
    else if (r == 2 && ms == std::vector<i64>{z.B, z.total}) z.mask_kind = 3;
    else if (r == 3 && ms == std::vector<i64>{z.B, z.S, z.total}) z.mask_kind = 4;
    else
      ctx.fail("mask_index of shape " + m.shape().to_string() + " is not [B], [2B], [B, total] or [B, S, total] (total " +
               std::to_string(z.total) + ")");
  }
  if (ctx.has_input(5)) check_ort_attention_bias(ctx.input(5).sizes(), z.B, heads, z.S, z.total, ctx.node());
  return z;
}

/// The sizes of one EmbedLayerNormalization call: input_ids [B, S], hidden size H.
struct embed_ln_sizes {
  i64 B = 0, S = 0, H = 0;
};

/// Checks the inputs of a com.microsoft EmbedLayerNormalization node (the ids' values apart:
/// `embed_row`).
template <class Ctx>
embed_ln_sizes embed_ln_check(const Ctx& ctx) {
  const auto& ids = ctx.input(0);
  const auto& word = ctx.input(2);
  const auto& pos = ctx.input(3);
  const bool seg = ctx.has_input(1), seg_emb = ctx.has_input(4);
  if (ids.rank() != 2) ctx.fail("input_ids must be [batch, sequence], got " + ids.shape().to_string());
  if (word.rank() != 2 || pos.rank() != 2 || (seg_emb && ctx.input(4).rank() != 2)) ctx.fail("the embedding tables must be 2-D");
  embed_ln_sizes z{ids.sizes()[0], ids.sizes()[1], word.sizes()[1]};
  if (pos.sizes()[1] != z.H || (seg_emb && ctx.input(4).sizes()[1] != z.H) || ctx.input(5).size() != z.H || ctx.input(6).size() != z.H)
    ctx.fail("the embeddings, gamma and beta must have the hidden size " + std::to_string(z.H));
  if (seg && !seg_emb) ctx.fail("segment_ids without segment_embedding");
  if (seg && ctx.input(1).size() != z.B * z.S) ctx.fail("segment_ids must have the shape of input_ids");
  if (ctx.has_input(8) && ctx.input(8).size() != z.B * z.S && ctx.input(8).size() != z.S)
    ctx.fail("position_ids must be [batch, sequence] or [1, sequence]");
  return z;
}

/// Checks that row `r` of an embedding table of `rows` rows exists (`what`: "input id"...).
inline void check_embed_row(i64 r, i64 rows, const char* what, const kernel_node& n) {
  if (r < 0 || r >= rows) n.fail(std::string(what) + " " + std::to_string(r) + " is out of range [0, " + std::to_string(rows) + ")");
}

}  // namespace gpass::exec::nn_rules
