// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file nn.hpp
/// TensorFlow neural-network ops: BiasAdd/BiasAddV1 (`data_format`), Softmax, LogSoftmax,
/// TopKV2 (values and int32 indices), InTopKV2, Conv2D, DepthwiseConv2dNative, MaxPool and
/// AvgPool (NHWC or NCHW, `SAME`/`VALID`/`EXPLICIT` padding, through ONNX's Conv and
/// pooling shape functions), Conv3D, MaxPool3D, AvgPool3D (NDHWC or NCDHW, `SAME`/`VALID`)
/// and their gradients, FusedBatchNorm/V2/V3, Resize{Bilinear,NearestNeighbor,Bicubic,Area},
/// L2Loss; the gradient ops of dense networks: ReluGrad, Relu6Grad, TanhGrad, SigmoidGrad,
/// BiasAddGrad, SoftmaxCrossEntropyWithLogits, SparseSoftmaxCrossEntropyWithLogits,
/// BroadcastGradientArgs (with value propagation).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/ops/tf/common.hpp>

namespace gpass {

/// Registers the TensorFlow neural-network ops into `r` (see the file comment).
void register_tf_nn_ops(op_registry& r);

namespace detail::tf_ops {

// True when the data format puts channels second (NCHW, NCDHW).
inline bool channels_first(infer_context& c) { return c.attr_string("data_format", "NHWC").rfind("NC", 0) == 0; }

inline void bias_add_infer(infer_context& c) {
  shape v = c.input_shape(0), b = c.input_shape(1);
  if (b.has_rank() && b.rank() != 1) c.fail("bias must be 1-D, got " + b.to_string());
  if (v.has_rank()) {
    if (v.rank() < 2) c.fail("value must have rank >= 2, got " + v.to_string());
    std::size_t ch = channels_first(c) && v.rank() >= 3 ? 1 : v.rank() - 1;
    if (b.has_rank()) v[ch] = c.unify(v[ch], b[0], "(bias length vs channel dim " + std::to_string(ch) + ")");
  }
  c.set_shape(0, v);
}

inline void softmax_infer(infer_context& c) {
  if (auto r = c.input_rank(0); r && *r == 0) c.fail("logits must have rank >= 1");
  c.set_output(0, c.input_type(0));
}

// A per-dim attribute (`strides`, `ksize`, `dilations`: one value per input dim) as its
// spatial part.
inline std::vector<std::int64_t> spatial_attr(infer_context& c, const char* name, std::size_t rank, bool nchw) {
  auto v = c.attr_ints(name).value_or(std::vector<std::int64_t>(rank, 1));
  if (v.size() == 1) v.assign(rank, v[0]);
  if (v.size() != rank) c.fail(std::string(name) + " has " + std::to_string(v.size()) + " values for rank " + std::to_string(rank));
  return nchw ? std::vector<std::int64_t>(v.begin() + 2, v.end()) : std::vector<std::int64_t>(v.begin() + 1, v.end() - 1);
}

// A shape in TensorFlow's layout (`nchw` or channels last) in ONNX's [N, C, spatial...].
inline shape to_nchw(const shape& s, bool nchw) {
  if (nchw || !s.has_rank() || s.rank() < 3) return s;
  std::vector<dim> d{s[0], s[s.rank() - 1]};
  d.insert(d.end(), s.dims().begin() + 1, s.dims().end() - 1);
  return shape(std::move(d));
}
inline shape from_nchw(const shape& s, bool nchw) {
  if (nchw || !s.has_rank() || s.rank() < 3) return s;
  std::vector<dim> d{s[0]};
  d.insert(d.end(), s.dims().begin() + 2, s.dims().end());
  d.push_back(s[1]);
  return shape(std::move(d));
}

// Conv2D / DepthwiseConv2dNative / MaxPool / AvgPool: ONNX's Conv and pooling shape
// functions on a view in ONNX's layout (filter [kh, kw, in, out] as [out, in, kh, kw];
// `SAME` padding as `SAME_UPPER`; explicit paddings as `pads`).
inline void window_infer(infer_context& c) {
  shape x = c.input_shape(0);
  const std::string op(c.op());
  const bool pool = op == "MaxPool" || op == "AvgPool" || op == "MaxPoolWithArgmax" || op == "MaxPool3D" || op == "AvgPool3D";
  const bool volumetric = op.ends_with("3D");
  if (!x.has_rank()) return;
  if (x.rank() < 3) c.fail("input must have rank >= 3, got " + x.to_string());
  if (volumetric && x.rank() != 5) c.fail("input must have rank 5 (NDHWC or NCDHW), got " + x.to_string());
  if (volumetric && c.attr_string("padding", "VALID") == "EXPLICIT") c.fail("padding must be SAME or VALID");
  const std::size_t rank = x.rank(), k = rank - 2;
  const bool nchw = channels_first(c);
  attribute_map a;
  a.emplace("strides", spatial_attr(c, "strides", rank, nchw));
  for (auto s : a.at("strides").as<std::vector<std::int64_t>>())
    if (s <= 0) c.fail("strides must be positive");
  if (!pool) a.emplace("dilations", spatial_attr(c, "dilations", rank, nchw));
  else a.emplace("kernel_shape", spatial_attr(c, "ksize", rank, nchw));
  const std::string pad = c.attr_string("padding", "VALID");
  if (pad == "SAME") a.emplace("auto_pad", std::string("SAME_UPPER"));
  else if (pad == "VALID") a.emplace("auto_pad", std::string("VALID"));
  else if (pad == "EXPLICIT") {
    auto e = c.attr_ints("explicit_paddings").value_or(std::vector<std::int64_t>{});
    if (e.size() != 2 * rank) c.fail("explicit_paddings has " + std::to_string(e.size()) + " values for rank " + std::to_string(rank));
    std::vector<std::int64_t> pads(2 * k);
    for (std::size_t i = 0; i < k; ++i) {
      std::size_t d = nchw ? i + 2 : i + 1;
      pads[i] = e[2 * d];
      pads[i + k] = e[2 * d + 1];
    }
    a.emplace("pads", std::move(pads));
  } else {
    c.fail("unknown padding '" + pad + "'");
  }
  shape xv = to_nchw(x, nchw);
  std::vector<port_info> ins{port_info{tensor_type{c.input_dtype(0), xv}, {}}};
  if (!pool) {
    shape f = c.input_shape(1);
    if (f.has_rank() && f.rank() != rank) c.fail("filter " + f.to_string() + " must have rank " + std::to_string(rank));
    shape w;  // ONNX weight [out, in / group, spatial...]
    if (f.has_rank()) {
      std::vector<dim> wd;
      if (op == "DepthwiseConv2dNative") {
        c.unify(xv[1], f[k], "(input channels vs filter dim " + std::to_string(k) + ")");
        wd = {mul_dims(f[k], f[k + 1]), dim(1)};
        if (f[k].is_known()) a.emplace("group", f[k].value());
      } else {
        wd = {f[k + 1], f[k]};
        if (xv[1].is_known() && f[k].is_known() && f[k].value() > 0) {
          if (xv[1].value() % f[k].value() != 0)
            c.fail("input channels " + xv[1].to_string() + " not a multiple of the filter's " + f[k].to_string());
          a.emplace("group", xv[1].value() / f[k].value());
        }
      }
      wd.insert(wd.end(), f.dims().begin(), f.dims().begin() + static_cast<std::ptrdiff_t>(k));
      w = shape(std::move(wd));
    }
    ins.push_back(port_info{tensor_type{c.input_dtype(1), w}, {}});
  }
  on_view(c, std::move(ins), a, pool ? detail::onnx_ops::pool_infer : detail::onnx_ops::conv_infer);
  const type& t = c.output(0).type;
  if (t.is_tensor()) c.set_shape(0, from_nchw(t.tensor().shape, nchw));
  if (op == "MaxPoolWithArgmax" && t.is_tensor()) c.set_shape(1, c.output(0).type.tensor().shape);  // argmax
}

// FusedBatchNorm: y has x's shape; batch mean/variance (and V3's reserve space) the channels'.
inline void fused_batch_norm_infer(infer_context& c) {
  shape x = c.input_shape(0);
  c.set_shape(0, x);
  dim ch = c.input_rank(1) == std::optional<std::size_t>(1) ? c.input_shape(1)[0] : dim();
  if (x.has_rank()) {
    if (x.rank() < 2) c.fail("x must have rank >= 2, got " + x.to_string());
    std::size_t k = channels_first(c) ? 1 : x.rank() - 1;
    ch = c.unify(x[k], ch, "(channels vs scale)");
  }
  for (std::size_t k = 1; k < c.num_outputs(); ++k) c.set_shape(k, shape{ch});
}

// Resize*(images [N, H, W, C], size [2]): [N, size[0], size[1], C] (f32 but for
// ResizeNearestNeighbor, whose output has the input's dtype).
inline void resize_infer(infer_context& c) {
  shape x = c.input_shape(0);
  if (x.has_rank() && x.rank() != 4) c.fail("images must be 4-D, got " + x.to_string());
  auto sz = c.input_dims(1);
  if (sz && sz->size() != 2) c.fail("size must have 2 elements, has " + std::to_string(sz->size()));
  dim h = sz ? (*sz)[0] : dim(), w = sz ? (*sz)[1] : dim();
  c.set_shape(0, shape{x.has_rank() ? x[0] : dim(), h, w, x.has_rank() ? x[3] : dim()});
}

// BiasAddGrad(out_backprop): [C], the channel dim (last for NHWC, 1 for NCHW).
inline void bias_add_grad_infer(infer_context& c) {
  shape g = c.input_shape(0);
  if (!g.has_rank()) return c.set_shape(0, shape{dim()});
  if (g.rank() < 2) c.fail("out_backprop must have rank >= 2, got " + g.to_string());
  c.set_shape(0, shape{channels_first(c) ? g[1] : g[g.rank() - 1]});
}

// (Sparse)SoftmaxCrossEntropyWithLogits(features [B, N], labels): loss [B], backprop [B, N].
inline void xent_infer(infer_context& c) {
  shape x = c.input_shape(0);
  if (x.has_rank() && x.rank() != 2) c.fail("features must be 2-D [batch, classes], got " + x.to_string());
  const dim b = x.has_rank() ? x[0] : dim(), n = x.has_rank() ? x[1] : dim();
  c.set_shape(0, shape{b});
  c.set_shape(1, shape{b, n});
}

// BroadcastGradientArgs(s0, s1): the axes to reduce each side's gradient over, as TensorFlow
// computes them (equal shapes: none; else the axes where a side's left-padded dim is 1). Null
// when the shapes are not both known or do not broadcast.
inline std::optional<std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>>> broadcast_gradient_axes(
    const std::vector<std::int64_t>& s0, const std::vector<std::int64_t>& s1) {
  std::vector<std::int64_t> r0, r1;
  if (s0 == s1) return std::pair{r0, r1};
  const std::size_t rank = std::max(s0.size(), s1.size());
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t d0 = i + s0.size() >= rank ? s0[i + s0.size() - rank] : 1;
    const std::int64_t d1 = i + s1.size() >= rank ? s1[i + s1.size() - rank] : 1;
    if (d0 != d1 && d0 != 1 && d1 != 1) return std::nullopt;
    if (d0 == 1) r0.push_back(static_cast<std::int64_t>(i));
    if (d1 == 1) r1.push_back(static_cast<std::int64_t>(i));
  }
  return std::pair{r0, r1};
}

inline void broadcast_gradient_args_infer(infer_context& c) {
  for (std::size_t k = 0; k < 2; ++k) c.set_shape(k, shape{c.fresh_dim(k == 0 ? "r0" : "r1")});
}

inline void broadcast_gradient_args_value(infer_context& c) {
  auto a = c.input_dims(0), b = c.input_dims(1);
  if (!a || !b) return;
  std::vector<std::int64_t> s0, s1;
  for (const auto& d : *a) {
    if (!d.is_known()) return;
    s0.push_back(d.value());
  }
  for (const auto& d : *b) {
    if (!d.is_known()) return;
    s1.push_back(d.value());
  }
  auto r = broadcast_gradient_axes(s0, s1);
  if (!r) c.fail("s0 and s1 are shapes that do not broadcast");
  const dtype t = c.input_dtype(0) == dtype::int64 ? dtype::int64 : dtype::int32;
  for (std::size_t k = 0; k < 2; ++k) {
    const auto& v = k == 0 ? r->first : r->second;
    tensor out(t, {static_cast<std::int64_t>(v.size())});
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (t == dtype::int32) out.data<std::int32_t>()[i] = static_cast<std::int32_t>(v[i]);
      else out.data<std::int64_t>()[i] = v[i];
    }
    c.set_shape(k, shape{dim(static_cast<std::int64_t>(v.size()))});
    c.set_value(k, known_value::of(std::move(out)));
  }
}

}  // namespace detail::tf_ops
}  // namespace gpass

inline void gpass::register_tf_nn_ops(op_registry& r) {
  using namespace detail::tf_ops;
  tf_op("BiasAdd").in("value:T").in("bias:T").out("output:T").type_attr("T").attr("data_format", "string", "NHWC")
      .infer(bias_add_infer).add(r);
  tf_op("BiasAddV1").in("value:T").in("bias:T").out("output:T").type_attr("T").infer(bias_add_infer).add(r);
  for (const char* n : {"Softmax", "LogSoftmax"})
    tf_op(n).in("logits:T").out("output:T").type_attr("T").infer(softmax_infer).add(r);
  tf_op("TopKV2").in("input:T").in("k:Tk").out("values:T").out("indices:index_type").type_attr("T")
      .type_attr("Tk", dtype::int32).type_attr("index_type", dtype::int32).attr("sorted", "bool", true)
      .infer(detail::onnx_ops::topk_infer).add(r);
  tf_op("InTopKV2").in("predictions:f32").in("targets:T").in("k:T").out("precision:bool").type_attr("T", dtype::int32)
      .infer([](infer_context& c) { c.set_shape(0, c.input_shape(1)); }).add(r);

  // 2-D ops (NHWC by default, explicit paddings) and 3-D ones (`volumetric`: NDHWC, SAME or VALID)
  auto window_op = [&](const char* n, bool filter, bool volumetric = false) {
    tf_op o(n);
    o.in("input:T");
    if (filter) o.in("filter:T");
    o.out("output:T").type_attr("T").req("padding", "string").opt("strides", "ints")
        .attr("data_format", "string", volumetric ? "NDHWC" : "NHWC");
    if (!volumetric) o.opt("explicit_paddings", "ints");
    if (filter) o.opt("dilations", "ints");
    else o.req("ksize", "ints");
    o.infer(window_infer).add(r);
  };
  // LRN over the last (depth) dim: x / (bias + alpha * sum of squares within depth_radius)^beta
  tf_op("LRN").in("input:T").out("output:T").type_attr("T").attr("depth_radius", "int", std::int64_t{5})
      .attr("bias", "float", 1.0).attr("alpha", "float", 1.0).attr("beta", "float", 0.5)
      .infer([](infer_context& c) {
        const shape x = c.input_shape(0);
        if (x.has_rank() && x.rank() != 4) c.fail("input must be 4-D, got " + x.to_string());
        c.set_shape(0, x);
      })
      .add(r);
  window_op("Conv2D", true);
  window_op("DepthwiseConv2dNative", true);
  window_op("MaxPool", false);
  window_op("AvgPool", false);
  window_op("Conv3D", true, true);
  window_op("MaxPool3D", false, true);
  window_op("AvgPool3D", false, true);
  // MaxPoolWithArgmax: also where each maximum is, ((y * W + x) * C + c) (+ b * H * W * C with
  // include_batch_in_index)
  tf_op("MaxPoolWithArgmax").in("input:T").out("output:T").out("argmax:Targmax").type_attr("T")
      .type_attr("Targmax", dtype::int64).req("ksize", "ints").req("strides", "ints").req("padding", "string")
      .attr("include_batch_in_index", "bool", false).infer(window_infer).add(r);
  // MaxPoolV2: MaxPool with ksize and strides as int32 inputs (the spatial dims known when they are)
  tf_op("MaxPoolV2").in("input:T").in("ksize:i32").in("strides:i32").out("output:T").type_attr("T")
      .req("padding", "string").attr("data_format", "string", "NHWC")
      .infer([](infer_context& c) {
        const shape x = c.input_shape(0);
        if (!x.has_rank()) return c.set_shape(0, shape::unknown_dims(4));
        if (x.rank() != 4) c.fail("input must be 4-D, got " + x.to_string());
        const bool nchw = channels_first(c);
        const std::string pad = c.attr_string("padding", "VALID");
        if (pad != "SAME" && pad != "VALID") c.fail("padding must be SAME or VALID, got '" + pad + "'");
        const auto ksize = c.input_ints(1), strides = c.input_ints(2);
        if ((ksize && ksize->size() != 4) || (strides && strides->size() != 4)) c.fail("ksize and strides must have 4 values");
        std::vector<dim> out = x.dims();
        for (const std::size_t d : {std::size_t{nchw ? 2u : 1u}, std::size_t{nchw ? 3u : 2u}}) {
          if (!ksize || !strides || !x[d].is_known()) {
            out[d] = dim();
            continue;
          }
          const std::int64_t in = x[d].value(), k = (*ksize)[d], st = (*strides)[d];
          if (k < 1 || st < 1) c.fail("ksize and strides must be positive");
          if (pad == "SAME") out[d] = dim(in / st + (in % st != 0));
          else if (in < k) c.fail("the window (" + std::to_string(k) + ") is larger than the input (" + std::to_string(in) + ")");
          else out[d] = dim((in - k) / st + 1);
        }
        c.set_shape(0, shape(out));
      })
      .add(r);

  for (const char* n : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"}) {
    tf_op o(n);
    std::string s = n;
    const char* u = s == "FusedBatchNorm" ? "T" : "U";
    o.in("x:T").in(std::string("scale:") + u).in(std::string("offset:") + u).in(std::string("mean:") + u)
        .in(std::string("variance:") + u).out("y:T");
    for (const char* k : {"batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"})
      o.out(std::string(k) + ":" + u);
    if (s == "FusedBatchNormV3") o.out(std::string("reserve_space_3:") + u);
    o.type_attr("T");
    if (s != "FusedBatchNorm") o.type_attr("U");
    o.attr("epsilon", "float", 0.0001).attr("exponential_avg_factor", "float", 1.0)
        .attr("data_format", "string", "NHWC").attr("is_training", "bool", true).infer(fused_batch_norm_infer).add(r);
  }
  // FusedBatchNormGrad*(y_backprop, x, scale, reserve_space_1, reserve_space_2[, reserve_space_3]):
  // x_backprop like x; scale_backprop, offset_backprop and the reserve outputs [C]
  for (const char* n : {"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"}) {
    tf_op o(n);
    const std::string s = n;
    const char* u = s == "FusedBatchNormGrad" ? "T" : "U";
    o.in("y_backprop:T").in("x:T").in(s == "FusedBatchNormGrad" ? "scale:T" : "scale:f32").in(std::string("reserve_space_1:") + u)
        .in(std::string("reserve_space_2:") + u);
    if (s == "FusedBatchNormGradV3") o.in(std::string("reserve_space_3:") + u);
    o.out("x_backprop:T").out(std::string("scale_backprop:") + u).out(std::string("offset_backprop:") + u)
        .out(std::string(s == "FusedBatchNormGradV3" ? "reserve_space_4:" : "reserve_space_3:") + u)
        .out(std::string(s == "FusedBatchNormGradV3" ? "reserve_space_5:" : "reserve_space_4:") + u).type_attr("T");
    if (s != "FusedBatchNormGrad") o.type_attr("U");
    o.attr("epsilon", "float", 0.0001).attr("data_format", "string", "NHWC").attr("is_training", "bool", true)
        .infer([](infer_context& c) {
          shape x = c.input_shape(1);
          c.set_shape(0, x);
          dim ch = x.has_rank() && x.rank() >= 2 ? x[channels_first(c) ? 1 : x.rank() - 1] : dim();
          for (std::size_t k = 1; k < c.num_outputs(); ++k) c.set_shape(k, shape{ch});
        })
        .add(r);
  }
  for (const char* n : {"ResizeBilinear", "ResizeNearestNeighbor", "ResizeBicubic"})
    tf_op(n).in("images:T").in("size:i32")
        .out(std::string_view(n) == "ResizeNearestNeighbor" ? "resized_images:T" : "resized_images:f32")
        .type_attr("T").attr("align_corners", "bool", false).attr("half_pixel_centers", "bool", false)
        .infer(resize_infer).add(r);
  // (ResizeArea has no half_pixel_centers: its cells are areas, centred by construction)
  tf_op("ResizeArea").in("images:T").in("size:i32").out("resized_images:f32").type_attr("T")
      .attr("align_corners", "bool", false).infer(resize_infer).add(r);
  tf_op("L2Loss").in("t:T").out("output:T").type_attr("T").infer([](infer_context& c) { c.set_shape(0, shape::scalar()); })
      .add(r);
  // CTCGreedyDecoder(inputs [max_time, batch, classes], sequence_length [batch]): the decoded
  // sequences as COO [M, 2] indices and [M] values, their dense shape [2], [batch, 1] scores
  tf_op("CTCGreedyDecoder").in("inputs:T").in("sequence_length:i32").out("decoded_indices:i64").out("decoded_values:i64")
      .out("decoded_shape:i64").out("log_probability:T").type_attr("T").attr("merge_repeated", "bool", false)
      .attr("blank_index", "int", std::int64_t{-1})
      .infer([](infer_context& c) {
        const shape x = c.input_shape(0);
        if (x.has_rank() && x.rank() != 3) c.fail("inputs must be 3-D [max_time, batch, classes], got " + x.to_string());
        if (auto r = c.input_rank(1); r && *r != 1) c.fail("sequence_length must be a vector, got " + c.input_shape(1).to_string());
        const dim m = c.fresh_dim("decoded");
        c.set_shape(0, shape{m, dim(2)});
        c.set_shape(1, shape{m});
        c.set_shape(2, shape{dim(2)});
        c.set_shape(3, shape{x.has_rank() ? x[1] : c.fresh_dim("batch"), dim(1)});
      })
      .add(r);

  // what tf.gradients emits for dense networks
  for (const char* n : {"ReluGrad", "Relu6Grad"})
    tf_op(n).in("gradients:T").in("features:T").out("backprops:T").type_attr("T")
        .infer(detail::onnx_ops::same_shapes).add(r);
  for (const char* n : {"TanhGrad", "SigmoidGrad"})
    tf_op(n).in("y:T").in("dy:T").out("z:T").type_attr("T").infer(detail::onnx_ops::same_shapes).add(r);
  tf_op("BiasAddGrad").in("out_backprop:T").out("output:T").type_attr("T").attr("data_format", "string", "NHWC")
      .infer(bias_add_grad_infer).add(r);
  tf_op("SoftmaxCrossEntropyWithLogits").in("features:T").in("labels:T").out("loss:T").out("backprop:T")
      .type_attr("T").infer(xent_infer).add(r);
  tf_op("SparseSoftmaxCrossEntropyWithLogits").in("features:T").in("labels:Tlabels").out("loss:T").out("backprop:T")
      .type_attr("T").type_attr("Tlabels", dtype::int64).infer(xent_infer).add(r);
  // ... and for convolutional ones: the shape of the gradient comes from a sizes input
  // (known value) or the original input
  auto shape_from_sizes = [](std::size_t sizes_input, std::size_t rank) {
    return [sizes_input, rank](infer_context& c) {
      if (auto v = c.input_ints(sizes_input)) {
        if (v->size() != rank) c.fail("sizes must have " + std::to_string(rank) + " values, got " + std::to_string(v->size()));
        for (auto d : *v)
          if (d < 0) c.fail("sizes must be >= 0, got " + std::to_string(d));
        c.set_shape(0, shape::of(*v));
      } else if (auto d = c.input_value(sizes_input).dims(); d && d->size() == rank) {
        c.set_shape(0, shape(std::move(*d)));  // Shape(x) of a symbolic batch: [n, 7, 7, 2]
      } else {
        c.set_shape(0, shape::unknown_dims(rank));
      }
    };
  };
  auto conv_grad = [&](const char* n, const char* a, const char* b, std::size_t sizes_input) {
    tf_op o(n);
    o.in(a).in(b).in("out_backprop:T").out("output:T").type_attr("T").req("padding", "string").opt("strides", "ints")
        .attr("data_format", "string", "NHWC").opt("explicit_paddings", "ints").opt("dilations", "ints")
        .attr("use_cudnn_on_gpu", "bool", true).infer(shape_from_sizes(sizes_input, 4)).add(r);
  };
  conv_grad("Conv2DBackpropInput", "input_sizes:i32", "filter:T", 0);
  conv_grad("Conv2DBackpropFilter", "input:T", "filter_sizes:i32", 1);
  conv_grad("DepthwiseConv2dNativeBackpropInput", "input_sizes:i32", "filter:T", 0);
  conv_grad("DepthwiseConv2dNativeBackpropFilter", "input:T", "filter_sizes:i32", 1);
  // the 3-D convolution gradients (NDHWC; input_sizes int32 or int64, Tshape)
  tf_op("Conv3DBackpropInputV2").in("input_sizes:Tshape").in("filter:T").in("out_backprop:T").out("output:T")
      .type_attr("T").type_attr("Tshape", dtype::int32).req("padding", "string").req("strides", "ints")
      .attr("data_format", "string", "NDHWC").opt("dilations", "ints").infer(shape_from_sizes(0, 5)).add(r);
  tf_op("Conv3DBackpropFilterV2").in("input:T").in("filter_sizes:i32").in("out_backprop:T").out("output:T")
      .type_attr("T").req("padding", "string").req("strides", "ints").attr("data_format", "string", "NDHWC")
      .opt("dilations", "ints").infer(shape_from_sizes(1, 5)).add(r);
  tf_op("MaxPoolGrad").in("orig_input:T").in("orig_output:T").in("grad:T").out("output:T").type_attr("T")
      .req("ksize", "ints").req("strides", "ints").req("padding", "string").attr("data_format", "string", "NHWC")
      .opt("explicit_paddings", "ints").infer([](infer_context& c) { c.set_shape(0, c.input_shape(0)); }).add(r);
  tf_op("MaxPool3DGrad").in("orig_input:TInput").in("orig_output:TInput").in("grad:T").out("output:T").type_attr("T")
      .type_attr("TInput", dtype::f32).req("ksize", "ints").req("strides", "ints").req("padding", "string")
      .attr("data_format", "string", "NDHWC").infer([](infer_context& c) { c.set_shape(0, c.input_shape(0)); }).add(r);
  tf_op("AvgPoolGrad").in("orig_input_shape:i32").in("grad:T").out("output:T").type_attr("T").req("ksize", "ints")
      .req("strides", "ints").req("padding", "string").attr("data_format", "string", "NHWC")
      .infer(shape_from_sizes(0, 4)).add(r);
  tf_op("AvgPool3DGrad").in("orig_input_shape:i32").in("grad:T").out("output:T").type_attr("T").req("ksize", "ints")
      .req("strides", "ints").req("padding", "string").attr("data_format", "string", "NDHWC")
      .infer(shape_from_sizes(0, 5)).add(r);
  tf_op("BroadcastGradientArgs").in("s0:T").in("s1:T").out("r0:T").out("r1:T").type_attr("T", dtype::int32)
      .infer(broadcast_gradient_args_infer).propagate(broadcast_gradient_args_value).add(r);
}

// the definitions of the ONNX functions used above (see tf/detail/onnx_functions.hpp)
#include <gpass/ops/onnx/nn.hpp>
#include <gpass/ops/onnx/shape_ops.hpp>
