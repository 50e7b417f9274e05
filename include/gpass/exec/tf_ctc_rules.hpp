// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_ctc_rules.hpp
/// The rules of TensorFlow's CTCGreedyDecoder that the Eigen CPU and CUDA kernels share: the
/// checks of its inputs and attributes, in TensorFlow's words. Errors name the node.

#include <cstdint>
#include <string>
#include <vector>

#include <gpass/core/shape.hpp>
#include <gpass/exec/kernel.hpp>

namespace gpass::exec::tf_ctc_rules {

using i64 = std::int64_t;

/// The sizes [max_time, batch, classes] of CTCGreedyDecoder's inputs.
struct ctc_sizes {
  i64 T = 0, B = 0, C = 0;
};

/// Checks CTCGreedyDecoder's inputs of `sizes`, the sequence lengths `len` (each in
/// [0, max_time], one per batch entry) and `blank_index` (negative from the end); returns the
/// sizes and sets `blank` to the blank class.
inline ctc_sizes check_greedy(const std::vector<i64>& sizes, const std::vector<i64>& len, i64 blank_index, i64& blank,
                              const kernel_node& n) {
  if (sizes.size() != 3) n.fail("inputs must be 3-D [max_time, batch, classes], got " + shape::of(sizes).to_string());
  const ctc_sizes s{sizes[0], sizes[1], sizes[2]};
  if (static_cast<i64>(len.size()) != s.B)
    n.fail("sequence_length has " + std::to_string(len.size()) + " entries for a batch of " + std::to_string(s.B));
  blank = blank_index < 0 ? blank_index + s.C : blank_index;
  if (blank < 0 || blank >= s.C)
    n.fail("blank_index " + std::to_string(blank_index) + " is out of range for " + std::to_string(s.C) + " classes");
  for (std::size_t b = 0; b < len.size(); ++b)
    if (len[b] < 0 || len[b] > s.T)
      n.fail("sequence_length(" + std::to_string(b) + ") = " + std::to_string(len[b]) + " is not in [0, " + std::to_string(s.T) + "]");
  return s;
}

}  // namespace gpass::exec::tf_ctc_rules
