// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_common.hpp
/// Helpers shared by the Eigen CPU kernels of TensorFlow ops (domain "tf"): reading TF
/// attributes (bools, type attributes, int lists) and scalar/axis inputs, which TF passes as
/// int32 or int64 tensors. Private (`gpass::exec::cpu_detail::tf_detail`).

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/tf_rules.hpp>

namespace gpass::exec::cpu_detail::tf_detail {

using i64 = std::int64_t;

/// The TF domain name of every kernel here.
inline constexpr const char* domain = "tf";

using tf_rules::flag;
using tf_rules::tf_axis;
using tf_rules::int_list;
using tf_rules::type_attr;

/// The one integer of a scalar (or one-element) int32/int64 input (an axis, k, num...).
inline i64 scalar_int(const gpass::tensor& t, const kernel_node& n, const char* what) {
  if (t.size() != 1 || t.rank() > 1)
    n.fail(std::string(what) + " must be a scalar, got sizes " + t.shape().to_string());
  return int_values(t.rank() == 0 ? t : t.reshaped({}), n, what)[0];
}

/// The int64 values of a 1-D (or 0-D) int32/int64 input whose rank is checked.
inline std::vector<i64> vector_ints(const gpass::tensor& t, const kernel_node& n, const char* what) {
  if (t.rank() > 1) n.fail(std::string(what) + " must be a vector, got sizes " + t.shape().to_string());
  return int_values(t, n, what);
}

/// Writes the int64 values `v` to output `port` as a 1-D tensor of `t` (int32 or int64);
/// values outside int32 fail when `t` is int32.
inline void write_ints(context& ctx, std::size_t port, dtype t, const std::vector<i64>& v, std::vector<i64> sizes) {
  tf_rules::check_int_output(t, ctx.node());
  tf_rules::fill_ints(ctx.allocate_output(port, t, std::move(sizes)), v, ctx.node());
}

}  // namespace gpass::exec::cpu_detail::tf_detail
