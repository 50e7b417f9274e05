// SPDX-License-Identifier: Apache-2.0
//
// The hottest CPU kernels of the real-model benchmark, one per process, for instruction
// counts under callgrind (kernel_instructions.sh builds this against two commits' headers):
// `kernel_instructions KERNEL [REPS]`, KERNEL one of the names below (dw, pw, c3, nc3, lstm1, sdpa, ...). The kernel
// is made once (constant weights packed, as a plan does), run once, then REPS times between
// callgrind's start/stop requests; prints a checksum of output 0 and the wall time per run.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <valgrind/callgrind.h>
#include <gpass/exec/eigen_cpu/kernels/attention.hpp>
#include <gpass/exec/eigen_cpu/kernels/linalg.hpp>
#include <gpass/exec/eigen_cpu/kernels/nchwc_ops.hpp>
#include <gpass/exec/eigen_cpu/kernels/nn.hpp>
using gpass::tensor;
using i64 = std::int64_t;
namespace ex = gpass::exec;
tensor rnd(std::vector<i64> s, unsigned seed) {
  tensor t(gpass::dtype::f32, s);
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  for (i64 i = 0; i < t.size(); ++i) t.data<float>()[i] = d(g);
  return t;
}
int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "dw";
  ex::kernel_registry<ex::eigen_cpu> reg;
  ex::cpu_detail::register_linalg(reg);
  ex::cpu_detail::register_nn(reg);
  ex::cpu_detail::register_attention(reg);
  ex::cpu_detail::register_nchwc(reg);
  ex::eigen_cpu cpu({.threads = 1});
  ex::kernel_node n{.name = "n", .op = "FusedConv", .opset = 1};
  n.domain = "gpass";
  std::vector<ex::value> in;
  auto conv = [&](i64 C, i64 HW, i64 M, i64 G, i64 K, i64 s, const char* act) {
    const i64 p = K / 2;
    n.attrs = {{"group", G}, {"strides", std::vector<i64>{s, s}}, {"pads", std::vector<i64>{p, p, p, p}},
               {"kernel_shape", std::vector<i64>{K, K}}, {"activation", std::string(act)}};
    if (std::string(act) == "Clip") n.attrs["activation_params"] = std::vector<double>{0.0, 6.0};
    tensor w = rnd({M, C / G, K, K}, 2);
    in = {rnd({1, C, HW, HW}, 1), w, rnd({M}, 3)};
    n.input_types.resize(3);
    n.output_types.resize(1);
    n.constant_inputs = {std::nullopt, w, std::nullopt};
  };
  // the channel-blocked convolution the -O3 pipeline runs (input already blocked, as in a
  // network; block 16 natively, 8 under valgrind, which has no AVX-512)
  auto blocked_conv = [&](i64 C, i64 HW, i64 M, i64 K, i64 s, const char* act) {
    namespace nc = ex::cpu_detail::nchwc;
    const i64 b = nc::preferred_block(), p = K / 2;
    n = ex::kernel_node{.name = "n", .op = "NchwcConv", .opset = 1};
    n.domain = "gpass";
    n.attrs = {{"strides", std::vector<i64>{s, s}}, {"pads", std::vector<i64>{p, p, p, p}},
               {"kernel_shape", std::vector<i64>{K, K}}, {"activation", std::string(act)}, {"block", b}};
    tensor w = rnd({M, C, K, K}, 2);
    const std::vector<i64> xs{1, nc::blocks(C, b), HW, HW, b};
    in = {rnd(xs, 1), w, rnd({M}, 3)};
    n.input_types = {gpass::tensor_type{gpass::dtype::f32, gpass::shape::of(xs)}, gpass::type{}, gpass::type{}};
    n.output_types.resize(1);
    n.constant_inputs = {std::nullopt, w, std::nullopt};
  };
  if (what == "dw") conv(144, 56, 144, 144, 3, 1, "Clip");          // MobileNetV2 block_2_depthwise
  else if (what == "dw2") conv(96, 112, 96, 96, 3, 2, "Clip");      // block_1_depthwise (stride 2)
  else if (what == "dw7") conv(960, 7, 960, 960, 3, 1, "Clip");    // block_14_depthwise (7x7)
  else if (what == "dw13") conv(576, 14, 576, 576, 3, 2, "Clip");  // block_13_depthwise (14x14, stride 2)
  else if (what == "dw6") conv(192, 28, 192, 192, 3, 2, "Clip");   // block_6_depthwise (28x28, stride 2)
  else if (what == "dw14") conv(384, 14, 384, 384, 3, 1, "Clip");  // block_7_depthwise (14x14)
  else if (what == "dw112") conv(32, 112, 32, 32, 3, 1, "Clip");   // expanded_conv_depthwise
  else if (what == "pw") conv(16, 112, 96, 1, 1, 1, "Clip");        // block_1_expand (1x1)
  else if (what == "pj") conv(144, 56, 24, 1, 1, 1, "");           // block_2_project (1x1, no activation)
  else if (what == "pe") conv(24, 56, 144, 1, 1, 1, "Clip");        // block_2_expand (1x1)
  else if (what == "pl") conv(320, 7, 1280, 1, 1, 1, "Clip");       // Conv_1 (1x1 over 7x7: a ragged panel)
  else if (what == "c3") conv(64, 56, 64, 1, 3, 1, "Relu");         // ResNet50 conv2_x 3x3
  else if (what == "c3b") conv(128, 28, 128, 1, 3, 1, "Relu");     // ResNet50 conv3_x 3x3
  else if (what == "c3c") conv(256, 14, 256, 1, 3, 1, "Relu");     // ResNet50 conv4_x 3x3
  else if (what == "c3d") conv(512, 7, 512, 1, 3, 1, "Relu");      // ResNet50 conv5_x 3x3
  else if (what == "c1") conv(256, 56, 64, 1, 1, 1, "Relu");        // ResNet50 conv2_x 1x1 reduce
  else if (what == "c1s2") conv(512, 28, 1024, 1, 1, 2, "Relu");   // ResNet50 conv4_block1 shortcut (1x1, stride 2)
  else if (what == "stem") conv(3, 224, 64, 1, 7, 2, "Relu");      // ResNet50 conv1 (7x7, stride 2)
  else if (what == "nc3") blocked_conv(64, 56, 64, 3, 1, "Relu");     // the same layers, channel-blocked
  else if (what == "nc3b") blocked_conv(128, 28, 128, 3, 1, "Relu");
  else if (what == "nc3c") blocked_conv(256, 14, 256, 3, 1, "Relu");
  else if (what == "nc3d") blocked_conv(512, 7, 512, 3, 1, "Relu");
  else if (what == "nc1") blocked_conv(256, 56, 64, 1, 1, "Relu");      // conv2_x 1x1 reduce
  else if (what == "nc1e") blocked_conv(256, 14, 1024, 1, 1, "Relu");   // conv4_x 1x1 expand
  else if (what == "nc1x") blocked_conv(1024, 14, 256, 1, 1, "Relu");   // conv4_x 1x1 reduce
  else if (what == "nc1s") blocked_conv(256, 56, 512, 1, 2, "Relu");   // conv3_block1 shortcut (1x1, stride 2)
  else if (what == "nc1s4") blocked_conv(512, 28, 1024, 1, 2, "Relu");  // conv4_block1 shortcut (1x1, stride 2)
  else if (what == "ncpe") blocked_conv(24, 56, 144, 1, 1, "Clip");     // MobileNetV2 block_2_expand
  else if (what == "ncpj") blocked_conv(144, 56, 24, 1, 1, "");         // MobileNetV2 block_2_project
  else if (what == "lstm1" || what == "lstm8") {                  // the 2-layer LSTM's first layer
    const i64 B = what == "lstm1" ? 1 : 8, S = 32, I = 64, H = 128;
    n = ex::kernel_node{.name = "n", .op = "LSTM", .opset = 14};
    n.attrs = {{"hidden_size", H}};
    tensor w = rnd({1, 4 * H, I}, 5), r = rnd({1, 4 * H, H}, 6);
    for (i64 i = 0; i < w.size(); ++i) w.data<float>()[i] *= 0.1f;
    for (i64 i = 0; i < r.size(); ++i) r.data<float>()[i] *= 0.1f;
    in = {rnd({S, B, I}, 4), w, r, rnd({1, 8 * H}, 7)};
    n.input_types.resize(4);
    n.output_types.resize(3);
    n.constant_inputs = {std::nullopt, w, r};
  }
  else if (what == "sdpa") {  // the BERT-like encoder's fused attention at batch 8: 4 heads of 128 x 64, a key mask
    const i64 B = 8, H = 4, S = 128, D = 64;
    n = ex::kernel_node{.name = "n", .op = "ScaledDotProductAttention", .opset = 1};
    n.domain = "gpass";
    n.attrs = {{"scale", 0.125}};
    in = {rnd({B, H, S, D}, 8), rnd({B, H, S, D}, 9), rnd({B, H, S, D}, 10), rnd({B, 1, 1, S}, 11)};
    n.input_types.resize(4);
    n.output_types.resize(1);
  }
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  double sum = 0;
  // the kernel made once (constant weights packed then), run reps times, as a plan runs it
  const auto* def = reg.find(n.domain, n.op, n.opset, gpass::dtype::f32);
  auto fn = def->make(n);
  std::vector<const ex::value*> inp(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) inp[i] = &in[i];
  std::vector<ex::value> out;
  auto stream = cpu.make_stream();
  const ex::detail::lone_kernel_services<ex::eigen_cpu> services(ex::run_limits{});
  auto once = [&] {
    out.assign(n.num_outputs(), ex::value{});
    std::vector<char> wanted(n.num_outputs(), 1);
    ex::kernel_context<ex::eigen_cpu> ctx(n, cpu, stream, inp, out, {}, nullptr, wanted, &services);
    fn(ctx);
  };
  once();  // warm-up (scratch buffers)
  const auto t0 = std::chrono::steady_clock::now();
  CALLGRIND_START_INSTRUMENTATION;
  for (int r = 0; r < reps; ++r) once();
  CALLGRIND_STOP_INSTRUMENTATION;
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
  const tensor& y = out[0].tensor();
  for (i64 i = 0; i < y.size(); ++i) sum += y.data<float>()[i];
  std::printf("%s checksum %.6f %.1f us/run\n", what.c_str(), sum, us);
}
