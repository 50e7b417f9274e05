// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fused_activation.hpp
/// `gpass::exec::fused_activation`: the activation a fused op (gpass::FusedConv,
/// gpass::FusedGemm, ONNX Runtime's com.microsoft forms) applies to its result, as every
/// executor reads it from the node.

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include <gpass/exec/kernel.hpp>

namespace gpass::exec {

/// The activation a fused op applies to its result: attribute `activation` ("" none,
/// "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid") with `activation_params`
/// (LeakyRelu: alpha; Clip: min, max; HardSigmoid: alpha, beta), or ONNX Runtime's
/// FusedGemm's `activation_alpha` / `activation_beta`.
struct fused_activation {
  enum class kind { none, relu, leaky_relu, clip, sigmoid, tanh, hard_sigmoid } k = kind::none;
  double a = 0, b = 0;

  static fused_activation read(const kernel_node& n) {
    const std::string name = n.attr<std::string>("activation", "");
    std::vector<double> p = n.attr<std::vector<double>>("activation_params", {});
    if (p.empty() && n.has_attr("activation_alpha")) {
      p.push_back(n.attr<double>("activation_alpha"));
      if (n.has_attr("activation_beta")) p.push_back(n.attr<double>("activation_beta"));
    }
    auto param = [&](std::size_t i, double def) { return i < p.size() ? p[i] : def; };
    fused_activation f;
    if (name.empty()) f.k = kind::none;
    else if (name == "Relu") f.k = kind::relu;
    else if (name == "LeakyRelu") f = {kind::leaky_relu, param(0, 0.01), 0};
    else if (name == "Clip") f = {kind::clip, param(0, -std::numeric_limits<double>::infinity()), param(1, std::numeric_limits<double>::infinity())};
    else if (name == "Sigmoid") f.k = kind::sigmoid;
    else if (name == "Tanh") f.k = kind::tanh;
    else if (name == "HardSigmoid") f = {kind::hard_sigmoid, param(0, 0.2), param(1, 0.5)};
    else n.fail("unknown fused activation '" + name + "'");
    return f;
  }
};

}  // namespace gpass::exec
