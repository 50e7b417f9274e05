// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file constant_folding.hpp
/// The engine of the constant-folding passes (`fold_constants`, `constant_propagation`):
/// evaluates, in data-topological order, the nodes whose inputs are all known with the Eigen
/// CPU kernels, and replaces them by constants under a size guard.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/value.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/ops/opset.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/passes/detail/constants.hpp>

namespace gpass::detail {

/// Elements of integer or float tensor `t` as doubles (empty when not numeric).
inline std::vector<double> constant_numbers(const tensor& t) {
  std::vector<double> r;
  if (t.element_type() == dtype::string || t.element_type() == dtype::bool_ || t.empty()) return r;
  visit_dtype(t.element_type(), [&]<class T>() {
    if constexpr (std::is_arithmetic_v<T>)
      for (const T& x : t.values<T>()) r.push_back(static_cast<double>(x));
  });
  return r;
}

/// How far folding may go (the options of the folding passes).
struct folding_limits {
  std::int64_t max_bytes = 1 << 20;  ///< largest constant made
  std::int64_t min_bytes = 1024;     ///< constants up to this size are made even when they grow the graph
  double max_growth = 2;             ///< a result may be at most this times the bytes of its inputs
  bool inferred_values = false;      ///< nodes with a `_value` attribute (infer-values) are known
  std::int64_t max_held_bytes = std::int64_t{1} << 30;  ///< no more evaluation once the known values hold this much
};

/// What folding did.
struct folding_counters {
  std::int64_t folded = 0, no_kernel = 0, too_large = 0, failed = 0;
};

/// Elements of the (single) output of `n` before running it, when its type or its constant
/// inputs tell (`Fill`, `ConstantOfShape`, `Expand`, `BroadcastTo`, `Tile`, `Range`).
template <class Node>
std::optional<double> expected_elements(const Node& n, const std::vector<const tensor*>& in) {
  if (n.outputs.size() == 1 && n.outputs[0].is_tensor() && n.outputs[0].tensor().shape.is_fully_known())
    return static_cast<double>(num_elements(n.outputs[0].tensor().shape.sizes()));
  auto prod = [](const tensor* t) -> std::optional<double> {
    if (!t) return std::nullopt;
    auto v = constant_numbers(*t);
    if (v.empty() && t->size() != 0) return std::nullopt;
    double r = 1;
    for (double x : v) r *= std::max(x, 0.0);
    return r;
  };
  auto at = [&](std::size_t i) -> const tensor* { return i < in.size() ? in[i] : nullptr; };
  const std::string& op = n.op;
  if (op == "Fill" || op == "ConstantOfShape") return prod(at(0));
  if (op == "BroadcastTo" || op == "Expand") return prod(at(1));
  if (op == "Tile") {
    auto m = prod(at(1));
    if (m && at(0)) return *m * static_cast<double>(at(0)->size());
  }
  if (op == "Range" && at(0) && at(1) && at(2)) {
    auto s = constant_numbers(*at(0)), l = constant_numbers(*at(1)), d = constant_numbers(*at(2));
    if (s.size() == 1 && l.size() == 1 && d.size() == 1 && d[0] != 0) return std::max(0.0, std::ceil((l[0] - s[0]) / d[0]));
  }
  return std::nullopt;
}

/// The value inference recorded for node `n` (its single output's `_value`), or nullptr.
template <class Node>
const tensor* inferred_value(const Node& n) {
  if (n.outputs.size() != 1) return nullptr;
  auto it = n.attrs.find("_value");
  if (it == n.attrs.end() || !it->second.template is<tensor>()) return nullptr;
  return &it->second.template as<tensor>();
}

/// Folds the constant subgraphs of `g` (one graph; `top` is the main graph, for opsets and
/// the constant flavour) with `cpu`'s kernels: every node whose data inputs are all known is
/// evaluated in data-topological order (Kahn; nodes on data cycles never become ready) and,
/// when it is pure, has one tensor output and the result fits `lim`, replaced by a constant
/// node of the same name (`replace_by_constant`). Results over the limits are still known to
/// their consumers. Failures are notes of `ctx`; `c` counts what happened.
template <class G>
void fold_constant_subgraphs(G& g, const G& top, exec::eigen_cpu& cpu, const folding_limits& lim, folding_counters& c,
                             pass_context& ctx) {
  using node_id = typename G::node_id;
  const auto& kernels = cpu.kernels();
  node_map<G, std::size_t> pending(g, 0);
  std::vector<node_id> ready = data_sources(g, pending);
  std::unordered_map<std::uint64_t, std::vector<tensor>> values;  // by serial: known outputs
  std::vector<std::pair<node_id, tensor>> folds;
  // what one evaluation may allocate, and how much the known values may hold in all: a model
  // chooses these constants, and an Expand to 10^12 elements must not be computed
  exec::run_limits eval_limits;
  eval_limits.max_tensor_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(lim.max_bytes, 0)) * 4 + (std::uint64_t{64} << 20);
  eval_limits.max_run_bytes = eval_limits.max_tensor_bytes * 4;
  eval_limits.max_call_depth = 1;
  std::int64_t held_bytes = 0;
  purity_memo pure;
  auto fits = [&](double bytes, std::int64_t in_bytes) {
    return bytes <= static_cast<double>(lim.max_bytes) &&
           (bytes <= static_cast<double>(lim.min_bytes) || bytes <= lim.max_growth * static_cast<double>(in_bytes));
  };
  // Nodes known through inference are not reached by the countdown when an input is not
  // constant (Shape of an argument): they are found on their own.
  if (lim.inferred_values)
    for (auto v : g.nodes()) {
      const auto& n = g[v];
      const tensor* t = inferred_value(n);
      if (!t || is_constant_node(n) || g.num_inputs(v) == 0 || !pure(n.domain, n.op) || calls_function(n.attrs))
        continue;
      values[g.serial(v)] = {*t};
      if (fits(static_cast<double>(constant_bytes(*t)), 0)) folds.emplace_back(v, *t);
      else ++c.too_large;
    }
  // the known value of output `port` of `u`: a constant node's own tensor (not copied: no
  // node changes before the folds at the end), else what was computed or inferred
  auto known = [&](node_id u, int port) -> const tensor* {
    if (port == 0 && is_constant_node(g[u])) return &constant_value(g[u]);
    auto it = values.find(g.serial(u));
    if (it == values.end() || static_cast<std::size_t>(port) >= it->second.size()) return nullptr;
    return &it->second[static_cast<std::size_t>(port)];
  };
  std::vector<const tensor*> in_t;
  for (std::size_t head = 0; head < ready.size(); ++head) {
    const node_id v = ready[head];
    for (auto e : g.out_edges(v))
      if (!g[e].is_control() && --pending[g.target(e)] == 0) ready.push_back(g.target(e));
    const auto& n = g[v];
    if (is_constant_node(n)) continue;           // read in place by its users
    if (values.contains(g.serial(v))) continue;  // known by inference
    const std::size_t num_in = g.num_inputs(v);
    bool any = false, all_known = true;
    in_t.assign(num_in, nullptr);
    for (std::size_t i = 0; i < num_in && all_known; ++i) {
      auto r = g.input(v, static_cast<int>(i));
      if (r.empty) continue;
      any = true;
      in_t[i] = known(r.node, r.port);
      all_known = in_t[i] != nullptr;
    }
    if (!any || !all_known) continue;
    const auto ins = g.inputs(v);
    if (!pure(n.domain, n.op) || calls_function(n.attrs) || n.outputs.empty()) continue;
    if (!kernels.has(n.domain, n.op)) {
      ++c.no_kernel;
      continue;
    }
    std::int64_t in_bytes = 0;
    for (const tensor* t : in_t)
      if (t) in_bytes += constant_bytes(*t);
    if (auto e = expected_elements(n, in_t)) {
      dtype t = n.outputs[0].is_tensor() ? n.outputs[0].tensor().element : dtype::undefined;
      const double elem = static_cast<double>(std::max<std::size_t>(size_of(t), 1));
      if (*e * elem > static_cast<double>(lim.max_bytes)) {  // not even evaluated
        ++c.too_large;
        continue;
      }
    }
    exec::kernel_node kn;
    kn.name = n.name;
    kn.op = n.op;
    kn.domain = n.domain;
    kn.attrs = n.attrs;
    kn.opset = graph_opset(top, n.domain);
    kn.output_types = n.outputs;
    std::vector<exec::value> args(ins.size());
    for (std::size_t i = 0; i < ins.size(); ++i) {
      kn.input_types.push_back(ins[i].empty ? type{} : g[ins[i].node].outputs[static_cast<std::size_t>(ins[i].port)]);
      if (in_t[i]) args[i] = *in_t[i];
    }
    if (held_bytes > lim.max_held_bytes) {  // the known values take enough memory already
      ++c.too_large;
      continue;
    }
    std::vector<exec::value> out;
    try {
      out = exec::run_kernel(cpu, kernels, kn, std::move(args), eval_limits);
    } catch (const error& e) {
      ++c.failed;
      ctx.note("node '" + n.name + "' (op " + n.op + ") not folded: " + e.message());
      continue;
    }
    std::vector<tensor> result;
    std::int64_t out_bytes = 0;
    bool tensors = out.size() == n.outputs.size();
    for (auto& o : out) {
      if (!o.is_tensor()) {
        tensors = false;
        break;
      }
      out_bytes += constant_bytes(o.tensor());
      result.push_back(std::move(o.tensor()));
    }
    if (!tensors) continue;
    // a result over the growth limit is not folded, but its consumers may use it
    const bool fold = fits(static_cast<double>(out_bytes), in_bytes);
    if (!fold) ++c.too_large;
    if (fold && result.size() == 1) folds.emplace_back(v, result[0]);
    held_bytes += out_bytes;
    values[g.serial(v)] = std::move(result);
  }
  for (auto& [v, t] : folds) {
    replace_by_constant(g, v, std::move(t), tf_constants(top, g[v].domain));
    ++c.folded;
  }
}

}  // namespace gpass::detail
