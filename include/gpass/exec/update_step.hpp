// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file update_step.hpp
/// `exec::update_step`: what an `update_globals` node asks for (its rule, the globals it
/// updates, the rule's flags), read and checked once for the kernels of every policy.

#include <cstddef>
#include <string>
#include <vector>

#include <gpass/exec/kernel.hpp>
#include <gpass/ops/core_ops.hpp>

namespace gpass::exec {

/// The rule of an `update_globals` node, its variables and flags; `of` fails naming the node
/// when the rule is unknown or the node's variables or inputs are not the rule's.
struct update_step {
  std::string rule;
  std::vector<std::string> variables;
  bool nesterov = false;          ///< `use_nesterov` (momentum, adam)
  bool update_slots = true;       ///< `update_slots` (adagrad)
  bool linear_by_lr = false;      ///< `multiply_linear_by_lr` (ftrl)
  std::size_t gradient = 0;       ///< the input that is the gradient

  static update_step of(const kernel_node& n) {
    update_step s{.rule = n.attr<std::string>("rule"), .variables = n.attr<std::vector<std::string>>("variables"),
                  .nesterov = n.attr<bool>("use_nesterov", false), .update_slots = n.attr<bool>("update_slots", true),
                  .linear_by_lr = n.attr<bool>("multiply_linear_by_lr", false)};
    const gpass::detail::update_rule* shape = gpass::detail::find_update_rule(s.rule);
    if (!shape) {
      std::string known;
      for (const auto& u : gpass::detail::update_rules) known += (known.empty() ? "" : ", ") + std::string(u.name);
      n.fail("unknown update rule '" + s.rule + "' (" + known + ")");
    }
    if (s.variables.size() != shape->variables)
      n.fail("rule '" + s.rule + "' updates " + std::to_string(shape->variables) + " variables, " + std::to_string(s.variables.size()) +
             " given");
    if (n.num_inputs() != shape->inputs)
      n.fail("rule '" + s.rule + "' takes " + std::to_string(shape->inputs) + " inputs, the node has " + std::to_string(n.num_inputs()));
    s.gradient = gpass::detail::update_globals_gradient(s.rule, n.num_inputs());
    return s;
  }
};

}  // namespace gpass::exec
