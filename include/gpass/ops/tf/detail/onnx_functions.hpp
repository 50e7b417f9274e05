// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file onnx_functions.hpp
/// Declarations of the ONNX shape and value functions the TensorFlow schemas reuse.
///
/// Their definitions are in the ONNX family headers (onnx/shape_ops.hpp, ...). Those may
/// still be being read when a TF family header is (the include cycle through registry.hpp
/// starts from whichever header a translation unit includes first), so the TF headers use
/// these declarations and include the ONNX family headers at their end: every definition is
/// in the translation unit once the outermost header is done.

#include <cstdint>
#include <vector>

#include <gpass/core/dim.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/ops/infer_context.hpp>

namespace gpass::detail::onnx_ops {
// onnx/elementwise.hpp
inline void add_value(infer_context& c);
inline void sub_value(infer_context& c);
inline void mul_value(infer_context& c);
inline void div_value(infer_context& c);
inline void mod_value(infer_context& c);
inline void neg_value(infer_context& c);
inline void abs_value(infer_context& c);
inline void identity_value(infer_context& c);
inline void max_value(infer_context& c);
inline void min_value(infer_context& c);
inline void same_shapes(infer_context& c);
// onnx/logical.hpp
inline void cast_value(infer_context& c);
inline void compare_value(infer_context& c, char op);
inline void logic_value(infer_context& c, char op);
inline void where_value(infer_context& c);
// onnx/matmul.hpp
inline void matmul_shapes(infer_context& c, shape a, shape b);
inline void einsum_infer(infer_context& c);
// onnx/nn.hpp
inline void conv_infer(infer_context& c);
inline void pool_infer(infer_context& c);
// onnx/reduction.hpp
inline void reduce_value(infer_context& c, char op);
inline void arg_reduce_infer(infer_context& c);
// onnx/shape_ops.hpp
inline void same_elements_value(infer_context& c);
inline void constant_infer(infer_context& c);
inline void shape_infer(infer_context& c);
inline void size_infer(infer_context& c);
inline void reshape_to(infer_context& c, const std::vector<dim>& target, bool allowzero);
inline void squeeze_infer(infer_context& c);
inline void unsqueeze_infer(infer_context& c);
inline void concat_infer(infer_context& c);
inline void concat_value(infer_context& c);
inline void split_infer(infer_context& c);
inline void split_value(infer_context& c);
inline std::int64_t slice_len(std::int64_t n, std::int64_t start, std::int64_t end, std::int64_t step);
inline dim slice_len_symbolic(const dim& n, std::int64_t start, std::int64_t end, std::int64_t step);
inline void gather_value(infer_context& c);
inline void gather_nd_infer(infer_context& c);
inline void transpose_infer(infer_context& c);
inline void expand_infer(infer_context& c);
inline void expand_value(infer_context& c);
inline void tile_infer(infer_context& c);
inline void pad_infer(infer_context& c);
inline void range_infer(infer_context& c);
inline void range_value(infer_context& c);
inline void constant_of_shape_infer(infer_context& c);
inline void constant_of_shape_value(infer_context& c);
inline void onehot_infer(infer_context& c);
inline void topk_infer(infer_context& c);
}  // namespace gpass::detail::onnx_ops
