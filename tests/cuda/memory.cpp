// SPDX-License-Identifier: Apache-2.0
// The CUDA policy's transfers: uploads and downloads of every size around the staging
// buffers' piece sizes give back the bytes that went in, through the pinned buffers and
// straight into pageable memory.

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <gpass/exec/cuda.hpp>

#include "fixture.hpp"

namespace gpass_test_cuda_memory {

TEST_CASE("cuda: upload then download returns the same bytes at every size, pinned or pageable") {
  GPASS_REQUIRE_GPU();
  namespace ex = gpass::exec;
  constexpr std::size_t piece = ex::cuda_detail::pinned_readback::capacity;
  constexpr std::size_t stage = ex::cuda_detail::pinned_staging::capacity;
  constexpr std::size_t min = ex::cuda::pinned_download_min;
  const std::vector<std::size_t> bytes{0,         4,         stage + 4,         min - 4,           min,
                                       min + 4,   min + piece - 4, min + piece, min + 2 * piece + 12, min + 3 * piece + 8};
  for (const bool pinned : {true, false}) {
    ex::cuda gpu({.pinned_download = pinned});
    auto& s = gpu.default_stream();
    for (const std::size_t n : bytes) {
      CAPTURE(pinned);
      CAPTURE(n);
      gpass::tensor h = gpass::tensor::uninitialized(gpass::dtype::int32, {static_cast<std::int64_t>(n / 4)});
      auto* v = h.data<std::int32_t>();
      for (std::size_t i = 0; i < n / 4; ++i) v[i] = static_cast<std::int32_t>(i * 2654435761u ^ n);
      const ex::cuda_tensor d = gpu.upload(h, s);
      const gpass::tensor back = gpu.download(d, s);
      REQUIRE(back.nbytes() == n);
      CHECK(std::memcmp(back.raw(), h.raw(), n) == 0);
    }
  }
}

}  // namespace gpass_test_cuda_memory
