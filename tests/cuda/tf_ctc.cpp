// SPDX-License-Identifier: Apache-2.0
// The CUDA kernel of tf_ctc.hpp (TensorFlow CTCGreedyDecoder): which nodes the GPU serves and
// its sources compiling with NVRTC (no GPU needed), the op against the Eigen CPU kernel on a
// GPU (bit for bit: the same sums in the same order; without a GPU, the CPU side of each
// comparison runs), and the errors naming the node.

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_tf_ctc {

namespace {

using namespace gpass_test_cuda::prelude;
using gpass_test_cuda::fails_alike;

gpass::exec::kernel_node ctc(bool merge, std::int64_t blank = -1) {
  gpass::attribute_map a{{"merge_repeated", merge}};
  if (blank != -1) a["blank_index"] = blank;
  return node("CTCGreedyDecoder", 1, std::move(a), 4, "tf");
}

// scores in a small range of integers: ties (the first class wins), repeats and blanks
tensor scores(ints s, std::uint64_t seed, dtype t = dtype::f32) {
  tensor x = rnd(std::move(s), seed, dtype::f64, -3, 3);
  for (i64 i = 0; i < x.size(); ++i) x.data<double>()[i] = std::floor(x.data<double>()[i]) / 4;
  if (t == dtype::f64) return x;
  tensor y(dtype::f32, x.sizes());
  for (i64 i = 0; i < x.size(); ++i) y.data<float>()[i] = static_cast<float>(x.data<double>()[i]);
  return y;
}

}  // namespace

TEST_CASE("cuda: CTCGreedyDecoder is served for f32 and f64, and its sources compile with NVRTC") {
  CHECK(gpass_test_cuda::serves_in("tf", "CTCGreedyDecoder", {dtype::f32, dtype::int32}));
  CHECK(gpass_test_cuda::serves_in("tf", "CTCGreedyDecoder", {dtype::f64, dtype::int32}));
  CHECK_FALSE(gpass_test_cuda::serves_in("tf", "CTCGreedyDecoder", {dtype::f16, dtype::int32}));
  for (const auto& [name, src] : ex::cuda_tf_ctc::ctc_generated_sources())
    for (int arch : {80, 90}) {
      INFO(name << " sm_" << arch);
      CHECK(!ex::nvrtc_compile(src, name, arch, ex::nvrtc_target::ptx).empty());
    }
}

TEST_CASE("cuda: TensorFlow CTCGreedyDecoder matches the CPU kernel bit for bit") {
  GPASS_GPU_OR_CPU_SIDE();
  std::uint64_t seed = 700;
  for (dtype t : {dtype::f32, dtype::f64})
    for (const ints& s : {ints{1, 1, 1}, ints{7, 3, 5}, ints{50, 16, 29}, ints{300, 4, 3}, ints{20, 1000, 6}}) {
      const tensor x = scores(s, seed++, t);
      const i64 T = s[0], B = s[1];
      std::vector<std::int32_t> len(static_cast<std::size_t>(B));
      for (i64 b = 0; b < B; ++b) len[static_cast<std::size_t>(b)] = static_cast<std::int32_t>((b * 7 + 3) % (T + 1));  // 0 to T
      const tensor lens = tensor::from<std::int32_t>(len);
      for (bool merge : {false, true})
        for (i64 blank : {i64{-1}, i64{0}, s[2] / 2}) {
          INFO("type " << to_string(t) << " shape " << gpass::shape::of(s).to_string() << " merge " << merge << " blank " << blank);
          differential(ctc(merge, blank), {x, lens}, 0, 0);
        }
    }
  // NaN and infinite scores (NaN never wins a comparison), int64 lengths, every length zero,
  // an empty batch, no time steps
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const tensor odd = tensor::from<float>({nan, 1, 2, 3, nan, -inf, inf, 0, inf, inf, 1, 1}, {2, 2, 3});
  differential(ctc(true), {odd, tensor::from<i64>({2, 2})}, 0, 0);
  differential(ctc(false, 0), {odd, tensor::from<i64>({2, 1})}, 0, 0);
  differential(ctc(true), {scores({4, 3, 5}, seed++), tensor::from<i64>({0, 0, 0})}, 0, 0);
  differential(ctc(true), {tensor(dtype::f32, {5, 0, 4}), tensor(dtype::int32, {0})}, 0, 0);
  differential(ctc(false), {tensor(dtype::f32, {0, 2, 4}), tensor::from<std::int32_t>({0, 0})}, 0, 0);
}

TEST_CASE("cuda: CTCGreedyDecoder's errors name the node, as the CPU's") {
  const tensor x = scores({4, 2, 3}, 1);
  fails_alike(ctc(true), {scores({4, 6}, 2), tensor::from<std::int32_t>({1, 1})}, "inputs must be 3-D");
  fails_alike(ctc(true), {x, tensor::from<std::int32_t>({1, 1, 1})}, "sequence_length has 3 entries for a batch of 2");
  fails_alike(ctc(true), {x, tensor::from<std::int32_t>({1, 5})}, "sequence_length(1) = 5 is not in [0, 4]");
  fails_alike(ctc(true), {x, tensor::from<std::int32_t>({-1, 0})}, "sequence_length(0) = -1 is not in [0, 4]");
  fails_alike(ctc(true, 3), {x, tensor::from<std::int32_t>({1, 1})}, "blank_index 3 is out of range for 3 classes");
  fails_alike(ctc(true), {x, tensor::from<std::int32_t>({1, 1, 1, 1}, {2, 2})}, "sequence_length must be a vector");
}

}  // namespace gpass_test_cuda_tf_ctc
