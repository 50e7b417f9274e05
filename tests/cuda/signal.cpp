// SPDX-License-Identifier: Apache-2.0
// The CUDA kernels of signal.hpp (HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix,
// DFT, STFT):
// which nodes the GPU serves (no GPU needed), each against the Eigen CPU kernel on a GPU
// (without one, the CPU side of each comparison runs), and the errors naming the node.

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_signal {

namespace {

using namespace gpass_test_cuda::prelude;

const char* const windows[] = {"HannWindow", "HammingWindow", "BlackmanWindow"};

}  // namespace

TEST_CASE("cuda: the window functions the GPU serves") {
  for (const char* op : windows) {
    CAPTURE(op);
    CHECK(gpass_test_cuda::serves_in("", op, {dtype::int32}));
    CHECK(gpass_test_cuda::serves_in("", op, {dtype::int64}));
  }
}

TEST_CASE("cuda: HannWindow, HammingWindow and BlackmanWindow match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  // periodic and symmetric; sizes 0, 1 (N 0: ones), 2, 10, 1000; f32, f64, f16 and int outputs
  // (the CPU's conversion: truncation)
  for (const char* op : windows)
    for (const i64 periodic : {0, 1})
      for (const i64 size : {0, 1, 2, 10, 1000})
        for (const i64 out : {1, 11, 10, 6}) {  // (ONNX codes: f32, f64, f16, int32)
          CAPTURE(op);
          CAPTURE(periodic);
          CAPTURE(size);
          CAPTURE(out);
          const auto n = node(op, 17, {{"periodic", periodic}, {"output_datatype", out}});
          differential(n, {tensor::from<i64>({size}, {})}, out == 10 ? 1e-3 : 1e-12, out == 10 ? 1e-3 : 1e-15);
        }
  differential(node("HannWindow", 17), {tensor::from<std::int32_t>({7}, {1})}, 1e-7, 1e-7);
}

TEST_CASE("cuda: MelWeightMatrix matches the CPU kernel bit for bit") {
  CHECK(gpass_test_cuda::serves_in("", "MelWeightMatrix", {dtype::int64, dtype::int64, dtype::int64, dtype::f32, dtype::f32}));
  GPASS_GPU_OR_CPU_SIDE();
  struct mel_case {
    i64 mels, dft, rate;
    float lo, hi;
  };
  // narrow filters (one bin: a weight of 1) and wide ones; the edge at the Nyquist bin; int outputs
  for (const auto& c : {mel_case{8, 16, 8192, 0, 4096}, mel_case{20, 512, 16000, 20, 8000}, mel_case{5, 64, 100, 3, 49},
                        mel_case{40, 1024, 44100, 0, 22050}})
    for (const i64 out : {1, 11, 6}) {
      CAPTURE(c.mels);
      CAPTURE(out);
      differential(node("MelWeightMatrix", 17, {{"output_datatype", out}}),
                   {tensor::from<i64>({c.mels}, {}), tensor::from<i64>({c.dft}, {}), tensor::from<std::int32_t>({static_cast<std::int32_t>(c.rate)}, {}),
                    tensor::from<float>({c.lo}, {}), tensor::from<float>({c.hi}, {})},
                   0, 0);
    }
}

TEST_CASE("cuda: the window functions fail as the CPU's do, naming the node") {
  const auto fails = gpass_test_cuda::fails_alike;
  fails(node("HannWindow", 17), {tensor::from<i64>({-3}, {})}, "window size must be non-negative");
  fails(node("BlackmanWindow", 17), {I({3, 4})}, "must hold one value");
  const auto mel = node("MelWeightMatrix", 17);
  const tensor one = tensor::from<i64>({8}, {});
  fails(mel, {tensor::from<i64>({0}, {}), one, tensor::from<i64>({100}, {}), tensor::scalar(0.0f), tensor::scalar(40.0f)}, "must be positive");
  fails(mel, {one, one, tensor::from<i64>({100}, {}), tensor::scalar(10.0f), tensor::scalar(60.0f)}, "upper_edge_hertz <= sample_rate / 2");
  fails(mel, {one, one, tensor::from<i64>({100}, {}), tensor::scalar(std::numeric_limits<float>::quiet_NaN()), tensor::scalar(40.0f)},
        "must be finite");
}

TEST_CASE("cuda: DFT and STFT match the CPU kernels") {
  GPASS_GPU_OR_CPU_SIDE();
  CHECK(gpass_test_cuda::serves_in("", "DFT", {dtype::f32}));
  CHECK(gpass_test_cuda::serves_in("", "STFT", {dtype::f16, dtype::int64, dtype::f16}));
  CHECK_FALSE(gpass_test_cuda::serves_in("", "STFT", {dtype::f32, dtype::int64, dtype::f64}));
  const auto dft = [](int opset, gpass::attribute_map a) { return node("DFT", opset, std::move(a)); };
  // powers of two (radix 2) and other lengths (Bluestein), real and complex, each axis
  for (i64 L : {i64{1}, i64{2}, i64{5}, i64{8}, i64{12}, i64{17}, i64{64}, i64{100}, i64{1000}}) {
    INFO("length " << L);
    const tensor x1 = rnd({3, L, 1}, 1 + L), x2 = rnd({2, L, 3, 2}, 2 + L);
    differential(dft(17, {}), {x1}, 1e-5, 1e-4);
    differential(dft(17, {{"axis", i64{1}}}), {x2}, 1e-5, 1e-4);
    differential(dft(17, {{"inverse", i64{1}}}), {x2}, 1e-5, 1e-5);
    differential(dft(17, {{"onesided", i64{1}}}), {x1}, 1e-5, 1e-4);
    if (L > 1) differential(dft(20, {{"inverse", i64{1}}, {"onesided", i64{1}}}), {rnd({2, L, 2}, 3 + L), tensor{}, I({1})}, 1e-5, 1e-5);
    differential(dft(20, {}), {x2, I({L + 3}), I({-3})}, 1e-5, 1e-4);  // zero-padded
    differential(dft(20, {}), {x2, I({(L + 1) / 2}), I({1})}, 1e-5, 1e-4);  // truncated
    differential(dft(20, {}), {x2, tensor{}, I({2})}, 1e-5, 1e-4);
  }
  differential(dft(17, {}), {rnd({2, 96, 1}, 20, dtype::f64)}, 1e-12, 1e-12);
  differential(dft(17, {{"axis", i64{1}}}), {rnd({4, 48, 2}, 21, dtype::f16, -1, 1)}, 2e-3, 2e-2);
  differential(dft(17, {}), {rnd({0, 8, 1}, 22)});
  // STFT: with and without a window, one- and two-sided, a frame length that is not a power of two
  const auto stft = [](i64 onesided) { return node("STFT", 17, {{"onesided", onesided}}); };
  differential(stft(1), {rnd({2, 100, 1}, 30), I({10}), tensor{}, I({16})}, 1e-5, 1e-4);
  differential(stft(0), {rnd({2, 100, 2}, 31), I({7}), rnd({20}, 32, dtype::f32, 0, 1)}, 1e-5, 1e-4);
  differential(stft(1), {rnd({1, 333, 1}, 33), I({33}), rnd({45}, 34, dtype::f32, 0, 1), I({45})}, 1e-5, 1e-4);
  differential(stft(1), {rnd({2, 64, 1}, 35, dtype::bf16), I({16}), rnd({32}, 36, dtype::bf16, 0, 1)}, 1e-2, 1e-1);
}

TEST_CASE("cuda: DFT and STFT fail as the CPU's do, naming the node") {
  gpass_test_cuda::fails_alike(node("DFT", 17, {{"axis", i64{2}}}), {rnd({2, 8, 1}, 40)}, "DFT axis 2 is out of range");
  gpass_test_cuda::fails_alike(node("DFT", 20, {}), {rnd({2, 8, 1}, 41), I({0})}, "dft_length must be positive");
  gpass_test_cuda::fails_alike(node("DFT", 17, {}), {rnd({2, 8, 3}, 42)}, "must be 1 (real) or 2 (complex)");
  gpass_test_cuda::fails_alike(node("STFT", 17, {}), {rnd({2, 10, 1}, 43), I({2}), rnd({12}, 44)}, "frame_length 12 must be in [1, 10]");
  gpass_test_cuda::fails_alike(node("STFT", 17, {}), {rnd({2, 10, 1}, 45), I({0}), tensor{}, I({4})}, "frame_step must be positive");
}

}  // namespace gpass_test_cuda_signal
