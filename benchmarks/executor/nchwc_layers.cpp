// SPDX-License-Identifier: Apache-2.0
//
// The channel-blocked (NCHWc) convolution and pooling kernels against the NCHW kernels the
// executor runs today, layer by layer, on the convolution layers of MobileNetV2 and ResNet50
// (batch 1, one thread): `nchwc_layers [REPS] [LAYER...]`. Both run on the same input values
// with the filter packed once (as a plan does); the blocked kernel's reorders are timed apart
// (a network in the blocked layout reorders once at its input and once at its output, not per
// layer). Runs alternate between the two kernels and each keeps its fastest run, so the ratio
// holds on a busy machine. Prints one line per layer: microseconds of each, the ratio
// blocked / NCHW, and the largest difference of their outputs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/linalg.hpp>
#include <gpass/exec/eigen_cpu/kernels/nchwc.hpp>
#include <gpass/exec/eigen_cpu/kernels/nn.hpp>

using gpass::tensor;
using i64 = std::int64_t;
namespace ex = gpass::exec;
namespace nc = gpass::exec::cpu_detail::nchwc;

namespace {

tensor rnd(std::vector<i64> s, unsigned seed) {
  tensor t(gpass::dtype::f32, s);
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  for (i64 i = 0; i < t.size(); ++i) t.data<float>()[i] = d(g);
  return t;
}

struct layer {
  const char* name;
  const char* what;
  i64 C, HW, M, G, K, s;
  bool clip6;     // Clip(0, 6), else Relu
  bool nchw_in;   // the blocked kernel reads NCHW (a stem)
  int pool = 0;   // 1: 3x3/2 max pool (C = M), 2: global average pool
};

const std::vector<layer> layers = {
    {"stem", "ResNet50 conv1 7x7/2", 3, 224, 64, 1, 7, 2, false, true},
    {"mstem", "MobileNetV2 Conv1 3x3/2", 3, 224, 32, 1, 3, 2, true, true},
    {"dw112", "MobileNetV2 expanded_conv depthwise 112x112", 32, 112, 32, 32, 3, 1, true, false},
    {"dw2", "MobileNetV2 block_1 depthwise 3x3/2", 96, 112, 96, 96, 3, 2, true, false},
    {"dw", "MobileNetV2 block_2 depthwise 56x56", 144, 56, 144, 144, 3, 1, true, false},
    {"dw6", "MobileNetV2 block_6 depthwise 3x3/2", 192, 28, 192, 192, 3, 2, true, false},
    {"dw14", "MobileNetV2 block_7 depthwise 14x14", 384, 14, 384, 384, 3, 1, true, false},
    {"dw7", "MobileNetV2 block_14 depthwise 7x7", 960, 7, 960, 960, 3, 1, true, false},
    {"pw", "MobileNetV2 block_1 expand 1x1", 16, 112, 96, 1, 1, 1, true, false},
    {"pe", "MobileNetV2 block_2 expand 1x1", 24, 56, 144, 1, 1, 1, true, false},
    {"pj", "MobileNetV2 block_2 project 1x1 (no activation: Relu stands in)", 144, 56, 24, 1, 1, 1, false, false},
    {"pl", "MobileNetV2 Conv_1 1x1 over 7x7", 320, 7, 1280, 1, 1, 1, true, false},
    {"c1", "ResNet50 conv2_x 1x1 reduce", 256, 56, 64, 1, 1, 1, false, false},
    {"c3", "ResNet50 conv2_x 3x3", 64, 56, 64, 1, 3, 1, false, false},
    {"c3b", "ResNet50 conv3_x 3x3", 128, 28, 128, 1, 3, 1, false, false},
    {"c3c", "ResNet50 conv4_x 3x3", 256, 14, 256, 1, 3, 1, false, false},
    {"c3d", "ResNet50 conv5_x 3x3", 512, 7, 512, 1, 3, 1, false, false},
    {"c3e", "3x3 16 -> 16 channels over 112x112 (a small network)", 16, 112, 16, 1, 3, 1, false, false},
    {"c3f", "3x3 32 -> 64 channels over 20x20", 32, 20, 64, 1, 3, 1, false, false},
    {"c1s2", "ResNet50 conv4_block1 shortcut 1x1/2", 512, 28, 1024, 1, 1, 2, false, false},
    {"mp", "ResNet50 pool1 max 3x3/2", 64, 112, 64, 1, 3, 2, false, false, 1},
    {"gap", "ResNet50 global average pool 7x7", 2048, 7, 2048, 1, 7, 1, false, false, 2},
};

/// The NCHW kernel of the executor for a layer, made once.
struct nchw_kernel {
  ex::kernel_registry<ex::eigen_cpu>* reg;
  ex::eigen_cpu* cpu;
  ex::kernel_node n;
  std::vector<ex::value> in;
  std::vector<ex::value> out;
  std::function<void(ex::kernel_context<ex::eigen_cpu>&)> fn;
  decltype(std::declval<ex::eigen_cpu&>().make_stream()) stream;
  ex::detail::lone_kernel_services<ex::eigen_cpu> services{ex::run_limits{}};

  void run() {
    std::vector<const ex::value*> inp(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) inp[i] = &in[i];
    out.assign(n.num_outputs(), ex::value{});
    std::vector<char> wanted(n.num_outputs(), 1);
    ex::kernel_context<ex::eigen_cpu> ctx(n, *cpu, stream, inp, out, {}, nullptr, wanted, &services);
    fn(ctx);
  }
};

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  std::vector<std::string> only(argv + std::min(argc, 2), argv + argc);
  ex::kernel_registry<ex::eigen_cpu> reg;
  ex::cpu_detail::register_linalg(reg);
  ex::cpu_detail::register_nn(reg);
  ex::eigen_cpu cpu({.threads = 1});
  const i64 b = nc::preferred_block();
  const nc::kernel_set& ks = nc::kernels_for(b);
  std::printf("# nchwc_layers: sgemm %s, blocked kernels %s b=%lld, %d alternating runs each, fastest kept\n",
              std::string(ex::cpu_detail::sgemm::kernel().name).c_str(), std::string(ks.name).c_str(),
              static_cast<long long>(b), reps);
  std::printf("%-6s %10s %10s %7s %10s %10s %10s %10s  %s\n", "layer", "nchw_us", "nchwc_us", "ratio", "reorder_us", "max_diff",
              "wino_us", "wino_diff", "what");
  double sum_nchw = 0, sum_nc = 0;
  for (const layer& L : layers) {
    if (!only.empty() && std::find(only.begin(), only.end(), L.name) == only.end()) continue;
    const i64 p = L.K / 2;
    nc::geometry g{.N = 1, .C = L.C, .H = L.HW, .W = L.HW, .M = L.M, .KH = L.K, .KW = L.K, .sh = L.s, .sw = L.s,
                   .pt = p, .pl = p, .pb = p, .pr = p, .G = L.G};
    if (L.pool == 2) g.pt = g.pl = g.pb = g.pr = 0;
    g.OH = (g.H + 2 * g.pt - g.KH) / g.sh + 1;
    g.OW = (g.W + 2 * g.pl - g.KW) / g.sw + 1;
    nchw_kernel k{&reg, &cpu};
    k.stream = cpu.make_stream();
    tensor x = rnd({1, L.C, L.HW, L.HW}, 1);
    tensor w = rnd({L.M, L.C / L.G, L.K, L.K}, 2), bias = rnd({L.M}, 3);
    if (L.pool == 0) {
      k.n = ex::kernel_node{.name = "n", .op = "FusedConv", .opset = 1};
      k.n.domain = "gpass";
      k.n.attrs = {{"group", L.G}, {"strides", std::vector<i64>{L.s, L.s}}, {"pads", std::vector<i64>{p, p, p, p}},
                   {"kernel_shape", std::vector<i64>{L.K, L.K}}, {"activation", std::string(L.clip6 ? "Clip" : "Relu")}};
      if (L.clip6) k.n.attrs["activation_params"] = std::vector<double>{0.0, 6.0};
      k.in = {x, w, bias};
      k.n.input_types.resize(3);
      k.n.output_types.resize(1);
      k.n.constant_inputs = {std::nullopt, w, std::nullopt};
    } else if (L.pool == 1) {
      k.n = ex::kernel_node{.name = "n", .op = "MaxPool", .opset = 12};
      k.n.attrs = {{"strides", std::vector<i64>{L.s, L.s}}, {"pads", std::vector<i64>{p, p, p, p}},
                   {"kernel_shape", std::vector<i64>{L.K, L.K}}};
      k.in = {x};
      k.n.input_types.resize(1);
      k.n.output_types.resize(1);
    } else {
      k.n = ex::kernel_node{.name = "n", .op = "GlobalAveragePool", .opset = 1};
      k.in = {x};
      k.n.input_types.resize(1);
      k.n.output_types.resize(1);
    }
    const auto* def = reg.find(k.n.domain, k.n.op, k.n.opset, gpass::dtype::f32);
    if (!def) {
      std::printf("%-6s (no NCHW kernel)\n", L.name);
      continue;
    }
    k.fn = def->make(k.n);

    // the blocked kernel: input reordered once, filter packed once
    const nc::conv_input in = L.nchw_in ? nc::conv_input::nchw : nc::conv_input::blocked;
    const bool dw = L.pool == 0 && nc::depthwise_supported(g);
    const i64 Cb = nc::blocks(L.C, b), Mb = nc::blocks(L.M, b);
    nc::aligned_vector<float> xb(static_cast<std::size_t>(Cb * L.HW * L.HW * b));
    nc::aligned_vector<float> yb(static_cast<std::size_t>(Mb * g.OH * g.OW * b));
    nc::packed_vector<float> wp;
    nc::aligned_vector<float> bp;
    nc::conv_args ca;
    nc::pool_args pa;
    if (L.pool == 0) {
      wp = dw ? nc::pack_depthwise_filter(w.data<float>(), g, b) : nc::pack_filter(w.data<float>(), g, b, in);
      bp = nc::pack_bias(bias.data<float>(), L.M, b);
      ca.g = g;
      ca.in = in;
      ca.x = L.nchw_in ? x.data<float>() : xb.data();
      ca.w = wp.data();
      ca.bias = bp.data();
      ca.y = yb.data();
      ca.step.lo = 0;
      if (L.clip6) ca.step.hi = 6;
    } else {
      pa.g = g;
      pa.g.M = L.C;
      if (L.pool == 2) pa.g.OH = pa.g.OW = 1;
      pa.kind = L.pool == 1 ? nc::pool_kind::max : nc::pool_kind::average;
      pa.x = xb.data();
      pa.y = yb.data();
    }
    // 3x3 / 1 layers: the Winograd kernel too (its own filter, same input and output buffers)
    const bool wino = L.pool == 0 && !dw && nc::winograd_supported(g, in);
    nc::packed_vector<float> wwp;
    nc::conv_args wa = ca;
    if (wino) {
      wwp = nc::pack_winograd_filter(w.data<float>(), g, b);
      wa.w = wwp.data();
      nc::winograd_split(wa, ks, 1);
    }
    auto run_blocked = [&] {
      if (L.pool == 1) ks.pool(pa, 0, nc::pool_tasks(pa, ks));
      else if (L.pool == 2) ks.global_pool(pa, 0, nc::global_tasks(pa, ks));
      else if (dw) ks.conv_depthwise(ca, 0, nc::depthwise_tasks(ca, ks));
      else ks.conv(ca, 0, nc::conv_tasks(ca, ks));
    };
    const i64 OH = L.pool == 2 ? 1 : g.OH, OW = L.pool == 2 ? 1 : g.OW;
    std::vector<float> back(static_cast<std::size_t>(L.M * OH * OW));
    auto reorder = [&] {
      if (!L.nchw_in) nc::to_blocked(x.data<float>(), 1, L.C, L.HW * L.HW, b, false, xb.data());
      nc::from_blocked(yb.data(), 1, L.M, OH * OW, b, false, back.data());
    };
    reorder();
    k.run();
    run_blocked();
    double best_nchw = 1e30, best_nc = 1e30, best_re = 1e30, best_wino = 1e30, wino_diff = 0;
    if (wino) {  // its output against the direct kernel's
      std::vector<float> direct(yb.begin(), yb.end());
      ks.winograd(wa, 0, nc::winograd_tasks(wa));
      for (std::size_t i = 0; i < direct.size(); ++i) wino_diff = std::max(wino_diff, static_cast<double>(std::abs(direct[i] - yb[i])));
      run_blocked();
    }
    for (int r = 0; r < reps; ++r) {
      double t = now_us();
      k.run();
      best_nchw = std::min(best_nchw, now_us() - t);
      t = now_us();
      run_blocked();
      best_nc = std::min(best_nc, now_us() - t);
      t = now_us();
      reorder();
      best_re = std::min(best_re, now_us() - t);
      if (wino) {
        t = now_us();
        ks.winograd(wa, 0, nc::winograd_tasks(wa));
        best_wino = std::min(best_wino, now_us() - t);
      }
    }
    const tensor& y = k.out[0].tensor();
    double diff = 0;
    for (i64 i = 0; i < y.size(); ++i)
      diff = std::max(diff, static_cast<double>(std::abs(y.data<float>()[i] - back[static_cast<std::size_t>(i)])));
    sum_nchw += best_nchw;
    sum_nc += best_nc;
    char wcol[64] = "         -          -";
    if (wino) std::snprintf(wcol, sizeof wcol, "%10.1f %10.2g", best_wino, wino_diff);
    std::printf("%-6s %10.1f %10.1f %7.2f %10.1f %10.2g %s  %s\n", L.name, best_nchw, best_nc, best_nc / best_nchw, best_re,
                diff, wcol, L.what);
  }
  std::printf("%-6s %10.1f %10.1f %7.2f\n", "total", sum_nchw, sum_nc, sum_nc / sum_nchw);
}
