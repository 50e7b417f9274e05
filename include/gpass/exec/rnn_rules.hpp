// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file rnn_rules.hpp
/// What every executor's recurrent layers (ONNX RNN, GRU, LSTM) read from a node the same
/// way: the activation functions with their alpha and beta (`parse_activations`) and the
/// layer's configuration (`rnn_config::read`: gates, hidden size, directions, clip,
/// linear_before_reset, input_forget, layout). Errors name the node.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <gpass/exec/kernel.hpp>

namespace gpass::exec::rnn_rules {

using i64 = std::int64_t;

enum class act_kind { relu, tanh, sigmoid, affine, leaky_relu, thresholded_relu, scaled_tanh, hard_sigmoid, elu, softsign, softplus };

/// One activation function of a recurrent layer with its alpha and beta.
struct activation {
  act_kind kind = act_kind::tanh;
  double alpha = 0, beta = 0;
};

inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return s;
}

/// Parses the `activations` (+ `activation_alpha`, `activation_beta`) attributes: `per_dir`
/// functions per direction, `defaults` when absent. Alpha and beta values are consumed in
/// order by the functions that take them.
inline std::vector<activation> parse_activations(const kernel_node& n, int dirs, const std::vector<std::string>& defaults) {
  std::vector<std::string> names = n.attr<std::vector<std::string>>("activations", std::vector<std::string>{});
  const std::vector<double> alphas = n.attr<std::vector<double>>("activation_alpha", std::vector<double>{});
  const std::vector<double> betas = n.attr<std::vector<double>>("activation_beta", std::vector<double>{});
  const std::size_t per_dir = defaults.size();
  if (names.empty()) {
    for (int d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == per_dir && dirs == 2) {
    const auto first = names;
    names.insert(names.end(), first.begin(), first.end());
  }
  if (names.size() != per_dir * static_cast<std::size_t>(dirs))
    n.fail("activations lists " + std::to_string(names.size()) + " functions, expected " +
           std::to_string(per_dir * static_cast<std::size_t>(dirs)));
  std::vector<activation> r;
  std::size_t ai = 0, bi = 0;
  auto take = [&](const std::vector<double>& v, std::size_t& i, double fallback) { return i < v.size() ? v[i++] : fallback; };
  for (const auto& name : names) {
    const std::string l = lower(name);
    activation a;
    if (l == "relu") a.kind = act_kind::relu;
    else if (l == "tanh") a.kind = act_kind::tanh;
    else if (l == "sigmoid") a.kind = act_kind::sigmoid;
    else if (l == "affine") { a.kind = act_kind::affine; a.alpha = take(alphas, ai, 1.0); a.beta = take(betas, bi, 0.0); }
    else if (l == "leakyrelu") { a.kind = act_kind::leaky_relu; a.alpha = take(alphas, ai, 0.01); }
    else if (l == "thresholdedrelu") { a.kind = act_kind::thresholded_relu; a.alpha = take(alphas, ai, 1.0); }
    else if (l == "scaledtanh") { a.kind = act_kind::scaled_tanh; a.alpha = take(alphas, ai, 1.0); a.beta = take(betas, bi, 1.0); }
    else if (l == "hardsigmoid") { a.kind = act_kind::hard_sigmoid; a.alpha = take(alphas, ai, 0.2); a.beta = take(betas, bi, 0.5); }
    else if (l == "elu") { a.kind = act_kind::elu; a.alpha = take(alphas, ai, 1.0); }
    else if (l == "softsign") a.kind = act_kind::softsign;
    else if (l == "softplus") a.kind = act_kind::softplus;
    else n.fail("unknown activation function '" + name + "'");
    r.push_back(a);
  }
  return r;
}

enum class cell { rnn, gru, lstm };

/// What a recurrent node's attributes say.
struct rnn_config {
  cell kind = cell::rnn;
  i64 gates = 1;
  i64 hidden = 0;  ///< 0: from R
  int dirs = 1;
  bool reverse = false;  ///< the single direction is "reverse"
  std::vector<activation> acts;
  double clip = 0;  ///< <= 0: none
  bool linear_before_reset = false;
  bool input_forget = false;
  i64 layout = 0;

  /// Activation functions per direction.
  std::size_t acts_per_dir() const noexcept { return kind == cell::lstm ? 3 : kind == cell::gru ? 2 : 1; }

  static rnn_config read(const kernel_node& n, cell kind) {
    rnn_config cfg;
    cfg.kind = kind;
    cfg.gates = kind == cell::lstm ? 4 : kind == cell::gru ? 3 : 1;
    cfg.hidden = n.attr<i64>("hidden_size", 0);
    if (cfg.hidden < 0) n.fail("hidden_size must be positive");
    const std::string dir = n.attr<std::string>("direction", "forward");
    if (dir == "bidirectional") cfg.dirs = 2;
    else if (dir == "reverse") cfg.reverse = true;
    else if (dir != "forward") n.fail("direction must be forward, reverse or bidirectional, got '" + dir + "'");
    const std::vector<std::string> defaults = kind == cell::lstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                              : kind == cell::gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                                  : std::vector<std::string>{"Tanh"};
    cfg.acts = parse_activations(n, cfg.dirs, defaults);
    cfg.clip = n.attr<double>("clip", 0.0);
    cfg.linear_before_reset = n.attr<i64>("linear_before_reset", 0) != 0;
    cfg.input_forget = n.attr<i64>("input_forget", 0) != 0;
    cfg.layout = n.attr<i64>("layout", 0);
    if (cfg.layout != 0 && cfg.layout != 1) n.fail("layout must be 0 or 1");
    return cfg;
  }
};

}  // namespace gpass::exec::rnn_rules
