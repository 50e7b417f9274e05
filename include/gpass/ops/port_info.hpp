// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file port_info.hpp
/// `gpass::port_info`: what inference knows about one value (an output port): its type and contents.

#include <string>

#include <gpass/core/type.hpp>
#include <gpass/ops/known_value.hpp>

namespace gpass {

/// The type of a value and what is known of its contents: the per-port state of type and
/// shape inference, and what op type/value functions read and write through
/// `gpass::infer_context`.
/// \code
///   gpass::port_info p{gpass::tensor_type{gpass::dtype::i64, gpass::shape{2}},
///                      gpass::known_value::of_dims({gpass::dim::symbol("n"), 3})};
///   p.to_string();  // "i64[2] = {n,3}"
/// \endcode
struct port_info {
  gpass::type type;
  known_value value;

  friend bool operator==(const port_info&, const port_info&) = default;
  std::string to_string() const {
    std::string s = type.to_string();
    if (!value.empty()) s += " = " + value.to_string();
    return s;
  }
};

}  // namespace gpass
