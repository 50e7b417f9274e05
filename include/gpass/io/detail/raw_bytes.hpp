// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file raw_bytes.hpp
/// What the importers do to raw bytes copied into a tensor (ONNX `raw_data` and external
/// data, TF `tensor_content`, TensorBundle data files).

#include <cstddef>

#include <gpass/core/dtype.hpp>
#include <gpass/core/tensor.hpp>

namespace gpass::detail {

/// Raw bytes read into a bool tensor hold any value; a bool is 0 or 1 (anything else is
/// undefined behaviour to read): every non-zero byte becomes 1, as ONNX Runtime and
/// TensorFlow read them. Other element types are left alone.
inline void normalize_bools(tensor& t) {
  if (t.element_type() != dtype::bool_) return;
  std::byte* b = t.raw();
  for (std::size_t i = 0; i < t.nbytes(); ++i) b[i] = static_cast<std::byte>(b[i] != std::byte{0});
}

}  // namespace gpass::detail
