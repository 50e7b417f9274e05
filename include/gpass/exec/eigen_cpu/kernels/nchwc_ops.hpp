// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file nchwc_ops.hpp
/// Eigen CPU kernels of gpass's channel-blocked ops, which the `nchwc-layout` pass puts into a
/// CPU network (schemas: ops/onnx/nchwc.hpp; the layout and the loops: kernels/nchwc.hpp):
/// `gpass::NchwcReorderInput`, `NchwcReorderOutput`, `NchwcConv`, `NchwcMaxPool`,
/// `NchwcAveragePool`, `NchwcGlobalAveragePool`, `NchwcGlobalMaxPool`, f32 only. A constant
/// filter is packed once, when the kernel is made. Private (`gpass::exec::cpu_detail`);
/// `register_nchwc` adds them to a registry; the default registry has them (the unit
/// src/linalg.cpp registers them with the NCHW convolutions), for the `nchwc-layout` pass of
/// `O3`, which puts a network into these ops.

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/eigen_cpu/kernels/nchwc.hpp>
#include <gpass/exec/fused_activation.hpp>

namespace gpass::exec::cpu_detail {

namespace nchwc_ops {

using i64 = std::int64_t;
namespace nc = nchwc;
using shape_rules::resolve_window;
using shape_rules::window_attrs;
using shape_rules::window_geometry;

/// The node's `block` attribute (8 or 16).
inline i64 block_of(const kernel_node& n) {
  const i64 b = n.attr<i64>("block", 0);
  if (b != 8 && b != 16) n.fail("block must be 8 or 16, got " + std::to_string(b));
  return b;
}

/// Input `i` as a blocked tensor [N, Cb, H, W, b] of block `b`.
inline const gpass::tensor& blocked_input(context& ctx, std::size_t i, i64 b) {
  const gpass::tensor& x = ctx.input(i);
  if (x.element_type() != dtype::f32) ctx.fail("input " + std::to_string(i) + " must be f32");
  if (x.rank() != 5 || x.sizes()[4] != b)
    ctx.fail("input " + std::to_string(i) + " must be a blocked tensor [N, C/b, H, W, " + std::to_string(b) + "], got " +
             gpass::detail::sizes_text(x.sizes()));
  return x;
}

/// A 2-D window (attributes `wa`, taps `kernel`) over x's planes: the kernels' geometry.
inline nc::geometry window_of(const window_attrs& wa, const std::vector<i64>& xs, std::vector<i64> kernel,
                              const kernel_node& n) {
  const window_geometry w = resolve_window(wa, {xs[2], xs[3]}, std::move(kernel), n);
  nc::geometry g;
  g.N = xs[0];
  g.H = xs[2];
  g.W = xs[3];
  g.OH = w.out[0];
  g.OW = w.out[1];
  g.KH = w.kernel[0];
  g.KW = w.kernel[1];
  g.sh = w.strides[0];
  g.sw = w.strides[1];
  g.dh = w.dilations[0];
  g.dw = w.dilations[1];
  g.pt = w.pad_begin[0];
  g.pl = w.pad_begin[1];
  g.pb = w.pad_end[0];
  g.pr = w.pad_end[1];
  return g;
}

/// Runs `tasks` tasks of about `cost` each on the policy's threads.
template <class F>
void run_tasks(context& ctx, i64 tasks, double cost, F&& f) {
  ctx.policy().parallel_for(tasks, cost, [&](i64 t0, i64 t1) { f(t0, t1); });
}

/// Runs conv's `tasks` tasks of about `cost` each on the policy's threads, each thread one
/// range of consecutive tasks of about equal work (nc::conv_balanced_bounds) where ranges of
/// equal counts would not be (a 7x7 plane's 10 output blocks in chunks of 3 + 3 + 4).
inline void run_balanced(context& ctx, const nc::conv_args& a, const nc::kernel_set& ks, i64 tasks, double cost) {
  const i64 parts = std::min<i64>(tasks, ctx.policy().threads());
  if (parts <= 1) {
    ks.conv(a, 0, tasks);
    return;
  }
  const std::vector<i64> bounds = nc::conv_balanced_bounds(a, ks, parts);
  ctx.policy().parallel_for(parts, cost * static_cast<double>(tasks) / static_cast<double>(parts), [&](i64 p0, i64 p1) {
    for (i64 p = p0; p < p1; ++p) {
      const std::size_t i = static_cast<std::size_t>(p);
      if (bounds[i] < bounds[i + 1]) ks.conv(a, bounds[i], bounds[i + 1]);
    }
  });
}

/// A pointwise conv split by input blocks on `threads` threads (nc::input_split): thread p's
/// partial sums over its input blocks go to y (p = 0, with the bias) or a buffer of their own,
/// then each thread adds its output blocks' partials, the residual and the clamp.
inline void run_input_split(context& ctx, const nc::conv_args& a, const nc::kernel_set& ks, int threads, double cost) {
  const nc::geometry& g = a.g;
  const i64 b = ks.b, Cb = nc::blocks(g.C, b), Mb = nc::blocks(g.M, b), block = g.OH * g.OW * b;
  const i64 out = Mb * block;
  gpass::tensor partials = gpass::tensor::uninitialized(dtype::f32, {(threads - 1) * out});
  float* const partial = partials.data<float>();
  const nc::aligned_vector<float> no_bias = nc::pack_bias(nullptr, g.M, b);
  ctx.policy().parallel_for(threads, cost / threads, [&](i64 p0, i64 p1) {
    for (i64 p = p0; p < p1; ++p) {
      nc::conv_args u = a;
      u.ib0 = Cb * p / threads;
      u.ib1 = Cb * (p + 1) / threads;
      u.segment = nc::conv_segment;
      u.step = nc::output_step{};  // no residual, no clamp: a partial sum
      u.y = p == 0 ? a.y : partial + (p - 1) * out;
      u.bias = p == 0 ? a.bias : no_bias.data();
      ks.conv(u, 0, nc::conv_tasks(u, ks));
    }
  });
  const float lo = a.step.lo, hi = a.step.hi;
  // on the threads that made the partials (each adds its output blocks: half of what it reads
  // is in its own cache), whatever the pass alone would cost
  ctx.policy().parallel_for(threads, cost / threads, [&](i64 p0, i64 p1) {
    const i64 i0 = Mb * p0 / threads * block, i1 = Mb * p1 / threads * block;
    float* const y = a.y;
    for (int p = 1; p < threads; ++p) {
      const float* const q = partial + (p - 1) * out;
      for (i64 i = i0; i < i1; ++i) y[i] += q[i];
    }
    if (const float* const z = a.step.z)
      for (i64 i = i0; i < i1; ++i) y[i] += z[i];
    for (i64 i = i0; i < i1; ++i) {
      const float v = y[i] < lo ? lo : y[i];  // a NaN stays NaN, as in the kernels' clamp
      y[i] = v > hi ? hi : v;
    }
  });
}

/// A pointwise conv of stride > 1 without pads (nc::subsample_first), image by image: the
/// input pixels it reads copied side by side (nc::subsample, on the threads), then the
/// pointwise conv of stride 1 over the copy, as any other (split by input blocks where
/// nc::input_split says). The copy lives in a buffer of the calling thread, kept across runs
/// (an image's input channels over the output plane: 0.8 MB for ResNet50's largest). `macs`:
/// the convolution's multiply-adds (all images).
inline void run_subsampled(context& ctx, const nc::conv_args& a, const nc::kernel_set& ks, double macs) {
  const nc::geometry& g = a.g;
  const int threads = ctx.policy().threads();
  const i64 b = ks.b, Cb = nc::blocks(g.C, b), Mb = nc::blocks(g.M, b);
  const i64 in_image = Cb * g.H * g.W * b, out_image = Mb * g.OH * g.OW * b, copy_image = Cb * g.OH * g.OW * b;
  static thread_local nc::aligned_vector<float> copy;
  if (copy.size() < static_cast<std::size_t>(copy_image)) copy.assign(static_cast<std::size_t>(copy_image), 0.0f);
  float* const buf = copy.data();  // (the threads' own `copy` is another)
  nc::conv_args u = a;
  u.g.N = 1;
  u.g.H = g.OH;
  u.g.W = g.OW;
  u.g.sh = u.g.sw = u.g.dh = u.g.dw = 1;
  u.x = buf;
  u.segment = nc::conv_segment_for(u.g, ks, threads);
  const i64 tasks = nc::conv_tasks(u, ks);
  const double cost = 0.04 * macs / static_cast<double>(g.N * tasks);  // (an image's tasks)
  const bool split = nc::input_split(u, ks, threads);
  nc::geometry one = g;  // the copy's geometry: one image at a time
  one.N = 1;
  for (i64 n = 0; n < g.N; ++n) {
    const float* x = a.x + n * in_image;
    // a row of OW pixels copied: about 0.25 ns a float
    run_tasks(ctx, Cb * g.OH, 0.25 * static_cast<double>(g.OW * b), [&](i64 t0, i64 t1) { nc::subsample(x, one, b, buf, t0, t1); });
    u.y = a.y + n * out_image;
    u.step.z = a.step.z ? a.step.z + n * out_image : nullptr;
    if (split) run_input_split(ctx, u, ks, threads, cost * static_cast<double>(tasks));
    else run_balanced(ctx, u, ks, tasks, cost);
  }
}

/// The clamp of a fused activation (none, Relu, Clip); other activations fail.
inline nc::output_step clamp_of(const kernel_node& n) {
  const fused_activation act = fused_activation::read(n);
  nc::output_step s;
  switch (act.k) {
    case fused_activation::kind::none:
      break;
    case fused_activation::kind::relu:
      s.lo = 0;
      break;
    case fused_activation::kind::clip:
      s.lo = static_cast<float>(act.a);
      s.hi = static_cast<float>(act.b);
      break;
    default:
      n.fail("the blocked convolution's activation is none, Relu or Clip, not '" + n.attr<std::string>("activation", "") + "'");
  }
  return s;
}

/// A filter packed for the blocked kernels, with the tensor it came from (used only when a
/// run's W is that very tensor).
struct packed_filter {
  gpass::tensor source;
  nc::conv_input in = nc::conv_input::blocked;
  bool depthwise = false;
  i64 wino_tile = 0;  ///< 0: `data` for the direct kernels; 4 or 2: by pack_winograd_filter for tiles of that side
  i64 G = 1;
  std::shared_ptr<const nc::packed_vector<float>> data;
  /// Winograd with the batch unknown when planned: `data` for tiles of 4, this for tiles of 2
  /// where nc::winograd_tile takes them for the batch of a run (null where no batch would)
  std::shared_ptr<const nc::packed_vector<float>> wino2;
  const nc::packed_vector<float>* match(const gpass::tensor& w, nc::conv_input want_in, bool want_dw, i64 want_g) const {
    if (!data || w.raw() != source.raw() || w.sizes() != source.sizes() || w.element_type() != source.element_type() ||
        in != want_in || depthwise != want_dw || G != want_g)
      return nullptr;
    return data.get();
  }
};

/// The filter of geometry `g` packed for block `b`.
inline nc::packed_vector<float> pack(const float* w, const nc::geometry& g, i64 b, nc::conv_input in, bool depthwise) {
  return depthwise ? nc::pack_depthwise_filter(w, g, b) : nc::pack_filter(w, g, b, in);
}

/// The Winograd tile side a constant filter of geometry `g` (channels, taps, groups) is packed
/// for, 0 for none: the window `nc::winograd_supported` takes (3x3, stride 1, no dilation, one
/// group, blocked input), the input's plane known from its type (x: [N, Cb, H, W, b]),
/// `nc::winograd_preferred` for it, and `nc::winograd_tile` for its batch (for a batch of 1
/// where the type does not fix it).
inline i64 winograd_planned(nc::geometry g, const window_attrs& wa, const gpass::shape& xs, nc::conv_input in, i64 b) {
  if (xs.rank() != 5 || !xs[2].is_known() || !xs[3].is_known()) return 0;
  auto pair = [](const std::vector<i64>& v, i64& a, i64& c) {
    if (v.empty()) return true;
    if (v.size() != 2) return false;
    a = v[0];
    c = v[1];
    return true;
  };
  if (!pair(wa.strides, g.sh, g.sw) || !pair(wa.dilations, g.dh, g.dw)) return 0;
  g.N = xs[0].is_known() ? xs[0].value() : 1;
  g.H = xs[2].value();
  g.W = xs[3].value();
  g.OH = g.H;  // the plane as 'same' pads keep it (the choice needs no more)
  g.OW = g.W;
  if (!nc::winograd_supported(g, in) || !nc::winograd_preferred(g, b)) return 0;
  return nc::winograd_tile(g, b);
}

inline def conv_def() {
  return {.domain = "gpass", .op = "NchwcConv", .dtypes = {dtype::f32}, .make = [](const kernel_node& n) -> fn {
            const window_attrs wa = window_attrs::read(n);
            const i64 G = n.attr<i64>("group", 1);
            const i64 b = block_of(n);
            const nc::output_step clamp = clamp_of(n);
            if (G <= 0) n.fail("group must be positive, got " + std::to_string(G));
            // a constant filter is packed now, for the input layout the node's type says
            packed_filter pf;
            const gpass::tensor* wc = n.constant_input(1);
            const type* xt = n.input_types.empty() ? nullptr : &n.input_types[0];
            if (wc && wc->element_type() == dtype::f32 && wc->rank() == 4 && xt && xt->is_tensor() &&
                xt->tensor().shape.has_rank() && wc->sizes()[0] % G == 0) {
              nc::geometry g;
              g.M = wc->sizes()[0];
              g.C = wc->sizes()[1] * G;
              g.KH = wc->sizes()[2];
              g.KW = wc->sizes()[3];
              g.G = G;
              pf.in = xt->tensor().shape.rank() == 4 ? nc::conv_input::nchw : nc::conv_input::blocked;
              pf.depthwise = pf.in == nc::conv_input::blocked && nc::depthwise_supported(g);
              pf.G = G;
              if (pf.depthwise || nc::conv_supported(g, b, pf.in)) {
                pf.source = *wc;
                const gpass::shape& xs = xt->tensor().shape;
                const i64 tile = pf.depthwise ? 0 : winograd_planned(g, wa, xs, pf.in, b);
                if (tile != 0) {
                  // a batch the type does not fix: tiles of 4, and of 2 beside them where a
                  // batch of 1 takes those (the run picks by its batch)
                  const bool batch_known = xs[0].is_known();
                  pf.wino_tile = batch_known ? tile : nc::wino_m;
                  pf.data = std::make_shared<const nc::packed_vector<float>>(nc::pack_winograd_filter(wc->data<float>(), g, b, pf.wino_tile));
                  if (!batch_known && tile == 2)
                    pf.wino2 = std::make_shared<const nc::packed_vector<float>>(nc::pack_winograd_filter(wc->data<float>(), g, b, 2));
                } else {
                  pf.data = std::make_shared<const nc::packed_vector<float>>(pack(wc->data<float>(), g, b, pf.in, pf.depthwise));
                }
              }
            }
            return [=](context& ctx) {
              const gpass::tensor& x = ctx.input(0);
              const gpass::tensor& w = ctx.input(1);
              if (x.element_type() != dtype::f32 || w.element_type() != dtype::f32) ctx.fail("X and W must be f32");
              if (w.rank() != 4) ctx.fail("W must be [M, C/group, kH, kW], got " + gpass::detail::sizes_text(w.sizes()));
              const bool blocked = x.rank() == 5;
              if (!blocked && x.rank() != 4) ctx.fail("X must be blocked (rank 5) or NCHW (rank 4), got " + gpass::detail::sizes_text(x.sizes()));
              if (blocked && x.sizes()[4] != b)
                ctx.fail("X's block " + std::to_string(x.sizes()[4]) + " is not the node's block " + std::to_string(b));
              const auto& ws = w.sizes();
              const i64 M = ws[0], C = ws[1] * G;
              if (M % G) ctx.fail("W's " + std::to_string(M) + " output channels are not a multiple of group " + std::to_string(G));
              if (x.sizes()[1] != (blocked ? nc::blocks(C, b) : C))
                ctx.fail("X " + gpass::detail::sizes_text(x.sizes()) + " does not have the " + std::to_string(C) + " input channels W " +
                         gpass::detail::sizes_text(ws) + " and group " + std::to_string(G) + " read");
              std::vector<i64> kernel{ws[2], ws[3]};
              if (!wa.kernel.empty() && wa.kernel != kernel)
                ctx.fail("kernel_shape does not match W " + gpass::detail::sizes_text(ws));
              nc::geometry g = window_of(wa, x.sizes(), kernel, ctx.node());
              g.C = C;
              g.M = M;
              g.G = G;
              const nc::conv_input in = blocked ? nc::conv_input::blocked : nc::conv_input::nchw;
              const bool dw = blocked && nc::depthwise_supported(g);
              if (!dw && !nc::conv_supported(g, b, in))
                ctx.fail("group " + std::to_string(G) + " with " + std::to_string(C / G) + " input and " + std::to_string(M / G) +
                         " output channels per group has no blocked kernel (channels per group a multiple of " +
                         std::to_string(b) + " needed)");
              const std::vector<i64> ys{g.N, nc::blocks(M, b), g.OH, g.OW, b};
              const float* z = nullptr;
              if (ctx.has_input(3)) {
                const gpass::tensor& zt = ctx.input(3);
                if (zt.element_type() != dtype::f32 || zt.sizes() != ys)
                  ctx.fail("Z must be f32 " + gpass::detail::sizes_text(ys) + " (the output's blocked shape), got " + gpass::detail::sizes_text(zt.sizes()));
                z = zt.data<float>();
              }
              nc::aligned_vector<float> bias_packed;
              if (ctx.has_input(2)) {
                const gpass::tensor& bt = ctx.input(2);
                if (bt.element_type() != dtype::f32 || bt.sizes() != std::vector<i64>{M})
                  ctx.fail("B must be f32 [" + std::to_string(M) + "], got " + gpass::detail::sizes_text(bt.sizes()));
                bias_packed = nc::pack_bias(bt.data<float>(), M, b);
              } else {
                bias_packed = nc::pack_bias(nullptr, M, b);
              }
              // a filter not packed when planned (not constant) is packed for this run, in the
              // huge-page pool too (the chunks such short-lived buffers fill are unmapped as
              // they empty)
              nc::packed_vector<float> w_run;
              const nc::packed_vector<float>* wp = pf.match(w, in, dw, G);
              if (!wp) {
                w_run = pack(w.data<float>(), g, b, in, dw);
                wp = &w_run;
              }
              gpass::tensor& y = ctx.allocate_output(0, dtype::f32, ys);
              if (y.size() == 0) return;
              nc::conv_args a;
              a.g = g;
              a.in = in;
              a.x = x.data<float>();
              a.w = wp->data();
              a.bias = bias_packed.data();
              a.y = y.data<float>();
              a.step = clamp;
              a.step.z = z;
              const nc::kernel_set& ks = nc::kernels_for(b);
              a.segment = nc::conv_segment_for(g, ks, ctx.policy().threads());
              const i64 tasks = dw ? nc::depthwise_tasks(a, ks) : nc::conv_tasks(a, ks);
              if (tasks <= 0) return;
              // multiply-adds per task, at about 0.04 ns each
              const double macs = static_cast<double>(g.N) * static_cast<double>(nc::blocks(M, b) * b) * g.OH * g.OW *
                                  static_cast<double>(dw ? 1 : C / G) * g.KH * g.KW;
              if (w_run.empty() && pf.wino_tile != 0) {  // the constant filter, packed for Winograd
                a.tile = pf.wino_tile;
                if (pf.wino2 && nc::winograd_tile(g, b) == 2) {
                  a.tile = 2;
                  a.w = pf.wino2->data();
                }
                nc::winograd_split(a, ks, ctx.policy().threads());
                const i64 wt = nc::winograd_tasks(a);
                // a quarter (tiles of 4) or 4/9 (tiles of 2) of the direct multiply-adds, plus
                // the transforms
                run_tasks(ctx, wt, (a.tile == 2 ? 0.02 : 0.015) * macs / static_cast<double>(wt), [&](i64 t0, i64 t1) { ks.winograd(a, t0, t1); });
                return;
              }
              // (depthwise: 0.04-0.09 ns, one load per multiply-add; counted at 0.08, so that
              // the small layers run on the threads that wrote their input, not on one thread
              // reading the other cores' halves: MobileNetV2's 14x14 and 7x7 ones)
              const double cost = (dw ? 0.08 : 0.04) * macs / static_cast<double>(tasks);
              if (dw) {  // tasks of equal work: ranges of equal counts
                run_tasks(ctx, tasks, cost, [&](i64 t0, i64 t1) { ks.conv_depthwise(a, t0, t1); });
                return;
              }
              if (nc::subsample_first(g, in, ks)) {
                run_subsampled(ctx, a, ks, macs);
                return;
              }
              if (nc::input_split(a, ks, ctx.policy().threads())) {
                run_input_split(ctx, a, ks, ctx.policy().threads(), cost * static_cast<double>(tasks));
                return;
              }
              run_balanced(ctx, a, ks, tasks, cost);
            };
          }};
}

inline def reorder_input_def() {
  return {.domain = "gpass", .op = "NchwcReorderInput", .dtypes = {dtype::f32}, .make = [](const kernel_node& n) -> fn {
            const i64 b = block_of(n);
            return [b](context& ctx) {
              const gpass::tensor& x = ctx.input(0);
              if (x.element_type() != dtype::f32 || x.rank() != 4) ctx.fail("X must be f32 NCHW (rank 4), got " + gpass::detail::sizes_text(x.sizes()));
              const auto& xs = x.sizes();
              const i64 Cb = nc::blocks(xs[1], b), S = xs[2] * xs[3];
              gpass::tensor& y = ctx.allocate_output(0, dtype::f32, {xs[0], Cb, xs[2], xs[3], b});
              if (y.size() == 0) return;
              run_tasks(ctx, xs[0] * Cb, static_cast<double>(S * b), [&](i64 t0, i64 t1) {
                nc::to_blocked(x.data<float>(), xs[0], xs[1], S, b, false, y.data<float>(), t0, t1);
              });
            };
          }};
}

inline def reorder_output_def() {
  return {.domain = "gpass", .op = "NchwcReorderOutput", .dtypes = {dtype::f32}, .make = [](const kernel_node& n) -> fn {
            const i64 channels = n.attr<i64>("channels", 0);
            if (channels <= 0) n.fail("channels must be positive, got " + std::to_string(channels));
            return [channels](context& ctx) {
              const gpass::tensor& x = ctx.input(0);
              const auto& xs = x.sizes();
              if (x.element_type() != dtype::f32 || x.rank() != 5 || xs[4] <= 0)
                ctx.fail("X must be an f32 blocked tensor [N, C/b, H, W, b], got " + gpass::detail::sizes_text(xs));
              const i64 b = xs[4];
              if (xs[1] != nc::blocks(channels, b))
                ctx.fail("X " + gpass::detail::sizes_text(xs) + " does not hold " + std::to_string(channels) + " channels in blocks of " +
                         std::to_string(b));
              const i64 S = xs[2] * xs[3];
              gpass::tensor& y = ctx.allocate_output(0, dtype::f32, {xs[0], channels, xs[2], xs[3]});
              if (y.size() == 0) return;
              run_tasks(ctx, xs[0] * xs[1], static_cast<double>(S * b), [&](i64 t0, i64 t1) {
                nc::from_blocked(x.data<float>(), xs[0], channels, S, b, false, y.data<float>(), t0, t1);
              });
            };
          }};
}

inline def pool_def(const char* op, nc::pool_kind kind) {
  return {.domain = "gpass", .op = op, .dtypes = {dtype::f32}, .make = [kind](const kernel_node& n) -> fn {
            const window_attrs wa = window_attrs::read(n);
            const i64 b = block_of(n);
            const bool count_pad = n.attr<i64>("count_include_pad", 0) != 0;
            if (wa.kernel.size() != 2) n.fail("kernel_shape must have 2 values");
            return [=](context& ctx) {
              const gpass::tensor& x = blocked_input(ctx, 0, b);
              nc::pool_args a;
              a.g = window_of(wa, x.sizes(), wa.kernel, ctx.node());
              a.g.C = a.g.M = x.sizes()[1] * b;
              a.kind = kind;
              a.count_include_pad = count_pad;
              gpass::tensor& y = ctx.allocate_output(0, dtype::f32, {a.g.N, x.sizes()[1], a.g.OH, a.g.OW, b});
              if (y.size() == 0) return;
              a.x = x.data<float>();
              a.y = y.data<float>();
              const nc::kernel_set& ks = nc::kernels_for(b);
              run_tasks(ctx, nc::pool_tasks(a, ks), static_cast<double>(a.g.OW * a.g.KH * a.g.KW * b) * 0.1,
                        [&](i64 t0, i64 t1) { ks.pool(a, t0, t1); });
            };
          }};
}

inline def global_pool_def(const char* op, nc::pool_kind kind) {
  return {.domain = "gpass", .op = op, .dtypes = {dtype::f32}, .make = [kind](const kernel_node& n) -> fn {
            const i64 b = block_of(n);
            return [=](context& ctx) {
              const gpass::tensor& x = blocked_input(ctx, 0, b);
              const auto& xs = x.sizes();
              nc::pool_args a;
              a.g.N = xs[0];
              a.g.C = a.g.M = xs[1] * b;
              a.g.H = xs[2];
              a.g.W = xs[3];
              a.g.OH = a.g.OW = 1;
              a.kind = kind;
              gpass::tensor& y = ctx.allocate_output(0, dtype::f32, {xs[0], xs[1], 1, 1, b});
              if (y.size() == 0) return;
              a.x = x.data<float>();
              a.y = y.data<float>();
              const nc::kernel_set& ks = nc::kernels_for(b);
              run_tasks(ctx, nc::global_tasks(a, ks), static_cast<double>(xs[2] * xs[3] * b) * 0.1,
                        [&](i64 t0, i64 t1) { ks.global_pool(a, t0, t1); });
            };
          }};
}

}  // namespace nchwc_ops

/// Registers gpass's channel-blocked ops (see the file comment).
/// \code
///   gpass::exec::kernel_registry<gpass::exec::eigen_cpu> reg;
///   gpass::exec::cpu_detail::register_nchwc(reg);
/// \endcode
inline void register_nchwc(registry& r) {
  using namespace nchwc_ops;
  r.add(conv_def());
  r.add(reorder_input_def());
  r.add(reorder_output_def());
  r.add(pool_def("NchwcMaxPool", nc::pool_kind::max));
  r.add(pool_def("NchwcAveragePool", nc::pool_kind::average));
  r.add(global_pool_def("NchwcGlobalAveragePool", nc::pool_kind::average));
  r.add(global_pool_def("NchwcGlobalMaxPool", nc::pool_kind::max));
}

}  // namespace gpass::exec::cpu_detail
