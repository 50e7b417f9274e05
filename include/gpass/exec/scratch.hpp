// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file scratch.hpp
/// What a kernel of any policy may hold besides its outputs: `check_scratch` weighs a table,
/// an intermediate or a list's handles, sized by attributes or values rather than by the
/// kernel's input and output, against the run's max_tensor_bytes, as if it were a tensor.

#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>

#include <gpass/exec/kernel.hpp>

namespace gpass::exec {

/// The run's max_tensor_bytes (the default limit without a plan's budget; 0: none).
template <class Ctx>
std::uint64_t tensor_byte_limit(const Ctx& ctx) {
  const auto* b = ctx.budget();
  return b ? b->limits().max_tensor_bytes : run_limits{}.max_tensor_bytes;
}

/// A count held in a double (a product that may be past int64) for an error message: exact
/// digits below 10^18, then three significant digits; infinity (an overflowed count) in words.
inline std::string count_str(double v) {
  char s[32];
  if (v < 1e18) std::snprintf(s, sizeof s, "%.0f", v);  // (exact below 2^53, then close)
  else if (v <= std::numeric_limits<double>::max()) std::snprintf(s, sizeof s, "%.3g", v);
  else std::snprintf(s, sizeof s, "more than 1.8e308");
  return s;
}

/// Checks `bytes` of a kernel's scratch (a table, an intermediate sized by attributes or
/// values rather than by its input and output) against the run's max_tensor_bytes, as if it
/// were a tensor; fails naming the node. `bytes` is a double so that callers can pass
/// products that would overflow int64.
template <class Ctx>
void check_scratch(const Ctx& ctx, double bytes, const std::string& what) {
  const std::uint64_t cap = tensor_byte_limit(ctx);
  if (cap && !(bytes <= static_cast<double>(cap)))
    ctx.fail(what + " needs " + count_str(bytes) + " bytes of scratch, over the limit of " + std::to_string(cap) +
             " bytes per tensor (max_tensor_bytes)");
}

/// `check_scratch` of a byte count that may have overflowed (nullopt: fails).
template <class Ctx>
void check_scratch(const Ctx& ctx, std::optional<std::size_t> bytes, const std::string& what) {
  check_scratch(ctx, bytes ? static_cast<double>(*bytes) : std::numeric_limits<double>::infinity(), what);
}

}  // namespace gpass::exec
