#pragma once
/// \file schema.hpp
/// `gpass::op_schema`: what gpass knows about an op (arity, attributes, behaviour flags).

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gpass/core/attribute.hpp>

namespace gpass {

/// The declaration of one attribute of an op.
struct attribute_spec {
  std::string name;
  std::string kind;                   ///< `attribute::kind_name()` of the expected value ("int", "floats", ...)
  bool required = false;
  std::optional<attribute> default_value;
};

/// Behaviour of an op that passes must respect.
struct op_traits {
  bool side_effects = false;  ///< has effects beyond its outputs (writes state, I/O): never dead
  bool terminator = false;    ///< a graph or function result (`return`, `retval`): a root of liveness
  bool control_flow = false;  ///< TF v1 control flow (Enter/Merge/Switch/...): may form cycles
  bool stateful = false;      ///< output depends on hidden state (reads variables, random): never folded or merged
  bool interface = false;     ///< part of the graph's signature (arguments): never removed as dead or disconnected
};

/// The schema of an op: identity, opset range, arity, attributes and traits.
///
/// `max_inputs`/`max_outputs` are `unbounded` for variadic ops. Later layers (type and shape
/// inference, kernels) attach their functions by (domain, name) in their own registries.
struct op_schema {
  static constexpr int unbounded = std::numeric_limits<int>::max();

  std::string domain;  ///< empty for the default domain
  std::string name;
  int since_version = 1;            ///< first opset this schema applies to
  int until_version = unbounded;    ///< last opset this schema applies to
  int min_inputs = 0;
  int max_inputs = unbounded;
  int min_outputs = 1;
  int max_outputs = 1;
  std::vector<attribute_spec> attributes;
  op_traits traits;
  std::string doc;

  const attribute_spec* find_attribute(std::string_view n) const {
    for (const auto& a : attributes)
      if (a.name == n) return &a;
    return nullptr;
  }
};

}  // namespace gpass
