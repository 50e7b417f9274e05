// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file nchwc.hpp
/// Schemas of gpass's channel-blocked ops (domain `gpass`): what a layout pass makes of a CPU
/// network so that its convolutions and pools run on the blocked kernels of
/// `exec/eigen_cpu/kernels/nchwc.hpp` (whose file comment describes the layout: a tensor
/// [N, C, H, W] held as [N, ceil(C / b), H, W, b], channel c at [n, c / b, h, w, c % b], b = 8
/// or 16, the channels past C zero):
///
/// | op | inputs -> output | attributes |
/// |----|------------------|------------|
/// | `NchwcReorderInput` | X [N, C, H, W] -> blocked | `block` |
/// | `NchwcReorderOutput` | blocked -> [N, channels, H, W] | `channels` |
/// | `NchwcConv` | X blocked or NCHW, W [M, C/group, kH, kW], B? [M], Z? blocked -> blocked | Conv's, `activation` ("", Relu, Clip), `activation_params`, `block` |
/// | `NchwcMaxPool`, `NchwcAveragePool` | blocked -> blocked | MaxPool's (no Indices) / AveragePool's, `block` |
/// | `NchwcGlobalAveragePool`, `NchwcGlobalMaxPool` | blocked -> blocked [N, Cb, 1, 1, b] | `block` |
///
/// `register_onnx_nchwc_ops` adds them to a registry; `register_onnx_ops` calls it (the
/// default registry has them), for the `nchwc-layout` pass of `O3`.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <gpass/ops/onnx/common.hpp>
#include <gpass/ops/onnx/nn.hpp>

namespace gpass {

namespace detail::onnx_ops {

inline std::int64_t nchwc_block(infer_context& c) {
  const std::int64_t b = c.attr_int("block", 0);
  if (b != 8 && b != 16) c.fail("block must be 8 or 16, got " + std::to_string(b));
  return b;
}
inline dim nchwc_blocks(const dim& channels, std::int64_t b) {
  return channels.is_known() ? dim((channels.value() + b - 1) / b) : dim();
}
// A blocked input of block b: rank 5, last dim b.
inline void nchwc_check_blocked(infer_context& c, const shape& x, std::int64_t b) {
  if (x.rank() != 5) c.fail("input must be a blocked tensor [N, C/b, H, W, b] (rank 5), got " + x.to_string());
  c.unify(x[4], dim(b), "(block)");
}

inline void nchwc_reorder_input_infer(infer_context& c) {
  const std::int64_t b = nchwc_block(c);
  const shape& x = c.input_shape(0);
  if (!x.has_rank()) return c.set_shape(0, shape::unknown_dims(5));
  if (x.rank() != 4) c.fail("input must be NCHW (rank 4), got " + x.to_string());
  c.set_shape(0, shape{x[0], nchwc_blocks(x[1], b), x[2], x[3], dim(b)});
}

inline void nchwc_reorder_output_infer(infer_context& c) {
  const std::int64_t channels = c.attr_int("channels", 0);
  if (channels <= 0) c.fail("channels must be positive, got " + std::to_string(channels));
  const shape& x = c.input_shape(0);
  if (!x.has_rank()) return c.set_shape(0, shape::unknown_dims(4));
  if (x.rank() != 5) c.fail("input must be a blocked tensor [N, C/b, H, W, b] (rank 5), got " + x.to_string());
  if (x[4].is_known()) {
    if (x[4].value() <= 0) c.fail("block must be positive, got " + x.to_string());
    c.unify(x[1], nchwc_blocks(dim(channels), x[4].value()), "(channel blocks vs channels)");
  }
  c.set_shape(0, shape{x[0], dim(channels), x[2], x[3]});
}

inline void nchwc_conv_infer(infer_context& c) {
  const std::int64_t b = nchwc_block(c);
  const shape &x = c.input_shape(0), &wt = c.input_shape(1);
  if (wt.has_rank() && wt.rank() != 4) c.fail("weight must be [M, C/group, kH, kW] (rank 4), got " + wt.to_string());
  if (!x.has_rank()) return c.set_shape(0, shape::unknown_dims(5));
  if (x.rank() == 5) nchwc_check_blocked(c, x, b);
  else if (x.rank() != 4) c.fail("input must be blocked (rank 5) or NCHW (rank 4), got " + x.to_string());
  if (wt.has_rank()) {
    const dim cin = wt[1] * c.attr_int("group", 1);
    c.unify(x[1], x.rank() == 5 ? nchwc_blocks(cin, b) : cin, "(input channels vs weight dim 1 * group)");
  }
  std::vector<dim> out{x[0], wt.has_rank() ? nchwc_blocks(wt[0], b) : dim()};
  auto w = read_window(c, 2, &wt);
  for (std::size_t i = 0; i < 2; ++i) out.push_back(w ? window_out(c, x[i + 2], *w, i) : dim());
  out.push_back(dim(b));
  c.set_shape(0, shape(std::move(out)));
}

inline void nchwc_pool_infer(infer_context& c) {
  const std::int64_t b = nchwc_block(c);
  const shape& x = c.input_shape(0);
  if (!x.has_rank()) return c.set_shape(0, shape::unknown_dims(5));
  nchwc_check_blocked(c, x, b);
  auto w = read_window(c, 2, nullptr);
  std::vector<dim> out{x[0], x[1]};
  for (std::size_t i = 0; i < 2; ++i) out.push_back(w ? window_out(c, x[i + 2], *w, i) : dim());
  out.push_back(dim(b));
  c.set_shape(0, shape(std::move(out)));
}

inline void nchwc_global_pool_infer(infer_context& c) {
  const std::int64_t b = nchwc_block(c);
  const shape& x = c.input_shape(0);
  if (!x.has_rank()) return c.set_shape(0, shape::unknown_dims(5));
  nchwc_check_blocked(c, x, b);
  c.set_shape(0, shape{x[0], x[1], dim(1), dim(1), dim(b)});
}

}  // namespace detail::onnx_ops

/// Registers the channel-blocked ops (see the file comment) into `r`.
inline void register_onnx_nchwc_ops(op_registry& r) {
  using namespace detail::onnx_ops;
  auto window_attrs = [](onnx_op& o) -> onnx_op& {  // as Conv's and the pools'
    return o.attr("auto_pad", "string", "NOTSET").opt("kernel_shape", "ints").opt("pads", "ints").opt("strides", "ints");
  };
  auto gpass_op = [&r](onnx_op& o, const char* doc) {
    op_schema s = o.doc(doc).build();
    s.domain = "gpass";
    r.add(std::move(s));
  };
  const std::vector<dtype> f32{dtype::f32};
  {
    onnx_op o("NchwcReorderInput", 1);
    o.in("X:T").out("Y:T").tc("T", f32).req("block", "int").infer(nchwc_reorder_input_infer);
    gpass_op(o, "NCHW [N, C, H, W] -> blocked [N, ceil(C / block), H, W, block], the channels past C zero");
  }
  {
    onnx_op o("NchwcReorderOutput", 1);
    o.in("X:T").out("Y:T").tc("T", f32).req("channels", "int").infer(nchwc_reorder_output_infer);
    gpass_op(o, "blocked [N, ceil(channels / b), H, W, b] -> NCHW [N, channels, H, W]");
  }
  {
    onnx_op o("NchwcConv", 1);
    o.in("X:T").in("W:T").in("B?:T").in("Z?:T").out("Y:T").tc("T", f32).opt("dilations", "ints")
        .attr("group", "int", std::int64_t{1}).attr("activation", "string", "").opt("activation_params", "floats")
        .req("block", "int");
    window_attrs(o).infer(nchwc_conv_infer);
    gpass_op(o, "FusedConv (activation none, Relu or Clip) from a blocked (or NCHW) X to a blocked Y; W, B as Conv's, Z blocked as Y");
  }
  {
    onnx_op o("NchwcMaxPool", 1);
    o.in("X:T").out("Y:T").tc("T", f32).attr("ceil_mode", "int", std::int64_t{0}).opt("dilations", "ints")
        .req("block", "int");
    window_attrs(o).infer(nchwc_pool_infer);
    gpass_op(o, "MaxPool (2-D, no Indices) of a blocked X");
  }
  {
    onnx_op o("NchwcAveragePool", 1);
    o.in("X:T").out("Y:T").tc("T", f32).attr("ceil_mode", "int", std::int64_t{0})
        .attr("count_include_pad", "int", std::int64_t{0}).opt("dilations", "ints").req("block", "int");
    window_attrs(o).infer(nchwc_pool_infer);
    gpass_op(o, "AveragePool (2-D) of a blocked X");
  }
  for (const char* n : {"NchwcGlobalAveragePool", "NchwcGlobalMaxPool"}) {
    onnx_op o(n, 1);
    o.in("X:T").out("Y:T").tc("T", f32).req("block", "int").infer(nchwc_global_pool_infer);
    gpass_op(o, "GlobalAveragePool / GlobalMaxPool of a blocked X");
  }
}

}  // namespace gpass
