// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fused_matmul.hpp
/// ONNX Runtime's com.microsoft FusedMatMul reads each operand through a permutation: with
/// transBatch the first dimension moves behind the batch dimensions (to position rank - 2: what
/// a Transpose of perm [1, ..., rank - 2, 0, rank - 1] before a MatMul does), then with trans
/// the last two dimensions swap. Shape inference and the kernels share this rule.

#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

namespace gpass {

/// The permutation a FusedMatMul operand of `rank` dimensions is read through: output
/// dimension k is input dimension `perm[k]`.
inline std::vector<std::size_t> fused_matmul_perm(std::size_t rank, bool trans_batch, bool trans) {
  std::vector<std::size_t> perm(rank);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  if (trans_batch && rank >= 3) {
    for (std::size_t k = 0; k + 2 < rank; ++k) perm[k] = k + 1;
    perm[rank - 2] = 0;
  }
  if (trans && rank >= 2) std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

}  // namespace gpass
