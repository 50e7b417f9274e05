// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file signal_rules.hpp
/// The rules of ONNX's signal ops that the Eigen CPU and CUDA kernels share: MelWeightMatrix's
/// checks and filter edges. Errors name the node.

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/kernel.hpp>

namespace gpass::exec::signal_rules {

using i64 = std::int64_t;

/// Checks MelWeightMatrix's arguments.
inline void check_mel_args(i64 mels, i64 dft, i64 rate, double lo, double hi, const kernel_node& n) {
  if (mels < 1 || dft < 1 || rate < 1) n.fail("num_mel_bins, dft_length and sample_rate must be positive");
  // NaN passes every comparison below and would reach a cast to int64 (undefined)
  if (!std::isfinite(lo) || !std::isfinite(hi)) n.fail("lower_edge_hertz and upper_edge_hertz must be finite");
  if (lo < 0 || hi <= lo || hi > static_cast<double>(rate) / 2 + 1e-9) n.fail("need 0 <= lower_edge_hertz < upper_edge_hertz <= sample_rate / 2");
}

/// MelWeightMatrix's filter edges (arguments checked by `check_mel_args`, and the output of
/// [dft / 2 + 1, mels] made first: the edges are no more than its elements): the FFT bin of each
/// of the `mels` + 2 edges, spaced evenly on the mel scale from `lo` to `hi` Hz; filter i rises
/// from edge i to edge i + 1 and falls to edge i + 2. Checks that every bin a filter touches is
/// one of the dft_length / 2 + 1 bins.
inline std::vector<i64> mel_edges(i64 mels, i64 dft, i64 rate, double lo, double hi, const kernel_node& n) {
  auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  // sums in double: mels + 2 and dft + 1 would overflow int64 for the largest values
  const double lo_mel = to_mel(lo), step = (to_mel(hi) - lo_mel) / (static_cast<double>(mels) + 2.0);
  std::vector<i64> e(static_cast<std::size_t>(mels) + 2);
  for (i64 i = 0; i < mels + 2; ++i) {
    // the FFT bin of edge i: about (dft + 1) / 2 at most, fits in int64
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + lo_mel) / 2595.0) - 1.0);
    e[static_cast<std::size_t>(i)] = static_cast<i64>(std::floor((static_cast<double>(dft) + 1.0) * hz / static_cast<double>(rate)));
  }
  const i64 nbins = dft / 2 + 1;
  for (i64 i = 0; i < mels; ++i) {
    const i64 l = e[static_cast<std::size_t>(i)], c = e[static_cast<std::size_t>(i) + 1], h = e[static_cast<std::size_t>(i) + 2];
    if (l < 0 || c >= nbins || (h > c && h - 1 >= nbins)) n.fail("mel filter bin out of range");
  }
  return e;
}

}  // namespace gpass::exec::signal_rules
