#pragma once
/// \file constant_propagation.hpp
/// `gpass::constant_propagation`: the "tf-constant-propagation" pass (seed 000, "Tensorflow
/// Constant Propagation"): subgraphs without a Placeholder, variable or stateful ancestor are
/// evaluated by gpass's own CPU kernels and become constants.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/value.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/ops/opset.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/passes/tf/detail/constants.hpp>

namespace gpass {

namespace detail {

/// Bytes of a tensor's contents (strings: their characters).
inline std::int64_t constant_bytes(const tensor& t) {
  if (t.element_type() == dtype::string) {
    std::int64_t n = 0;
    for (const auto& s : t.values<std::string>()) n += static_cast<std::int64_t>(s.size()) + 1;
    return n;
  }
  return static_cast<std::int64_t>(t.nbytes());
}

/// Elements of the first `n` values of integer or float tensor `t` as doubles (empty when
/// not numeric).
inline std::vector<double> constant_numbers(const tensor& t) {
  std::vector<double> r;
  if (t.element_type() == dtype::string || t.element_type() == dtype::bool_ || t.empty()) return r;
  visit_dtype(t.element_type(), [&]<class T>() {
    if constexpr (std::is_arithmetic_v<T>)
      for (const T& x : t.values<T>()) r.push_back(static_cast<double>(x));
  });
  return r;
}

}  // namespace detail

/// Pass "tf-constant-propagation": evaluates, in topological order, every node whose data
/// inputs are all constants (TensorFlow `Const`, ONNX `Constant`, or nodes folded before) with
/// the Eigen CPU kernels (`exec::run_kernel` on `exec::eigen_cpu::kernels()`), and replaces
/// each single-output node so evaluated by a constant node holding the result (`tf::Const`
/// `{dtype, value}` in TensorFlow graphs, ONNX `Constant` otherwise) with the same name, uses
/// and control inputs: graph outputs and fetches keep their names. Seed 000's example,
/// `Range -> Shape -> Fill`, gives a constant `Shape` (and `Fill`), so the `Fill`'s shape is known.
///
/// - Never folded: nodes without data inputs (`Placeholder`, `arg`, `get_global`, ...), so no
///   descendant of one either; ops with effects, hidden state, randomness or v1 control flow
///   (`detail::op_is_pure`); ops calling functions; ops without a CPU kernel (left as they are,
///   statistic `no-kernel`); kernels that fail (statistic `failed`, with a note); results that
///   are not tensors (lists, tuples). A node with several outputs is evaluated (its consumers
///   fold) but stays.
/// - Size limit, so that folding does not grow the model: a result of more than
///   `tf-constant-propagation.max-bytes` bytes (default 1 MiB), or of more than
///   `max-growth` times the bytes of its inputs (default 2) when above `min-bytes` (default
///   1024), is not folded (statistic `too-large`), though its consumers may fold (`Size` of
///   a big `Range`); when its size is known before running (the output type, or
///   `Fill`/`ConstantOfShape`/`Tile`/`Range`/`BroadcastTo`/`Expand` from their constant
///   inputs) and over `max-bytes`, the kernel is not even run: a `Fill` of 10^7 elements costs nothing.
/// - The folded nodes' inputs stay when they have other consumers; those left unused are for
///   `dce`. Cycles (TF v1 loops) are fine: a node on a data cycle is never constant.
/// - Runs on the graph and every function of its library (a function's arguments are not
///   constants). Statistics: `folded`, `no-kernel`, `too-large`, `failed`. Provides
///   `fact_tags::constants_propagated`.
/// \code
///   gpass::pass_context ctx;
///   ctx.set_option("tf-constant-propagation.max-bytes", "65536");
///   gpass::constant_propagation(g, ctx);
/// \endcode
struct constant_propagation_fn : pass_base<constant_propagation_fn> {
  static constexpr std::string_view name = "tf-constant-propagation";
  static constexpr std::string_view description =
      "Evaluate subgraphs without placeholder, variable or stateful ancestors with the CPU kernels and make them constants";
  using provides_facts = facts<fact_tags::constants_propagated>;
  static constexpr std::array options{
      option_spec{"max-bytes", option_type::integer, "1048576", "largest constant made, in bytes"},
      option_spec{"min-bytes", option_type::integer, "1024", "constants up to this size are made even when they grow the graph"},
      option_spec{"max-growth", option_type::number, "2", "a folded value may be at most this times the bytes of the constants it replaces"}};

  template <class G>
  void run(G& g, pass_context& ctx) const {
    limits lim;
    lim.max_bytes = option_int(ctx, "max-bytes");
    lim.min_bytes = option_int(ctx, "min-bytes");
    lim.max_growth = option_number(ctx, "max-growth");
    counters c;
    exec::eigen_cpu cpu({.threads = 1});
    for (G* cur : all_graphs(g)) run_one(*cur, g, cpu, lim, c, ctx);
    ctx.add_statistic("no-kernel", c.no_kernel);
    ctx.add_statistic("too-large", c.too_large);
    ctx.add_statistic("failed", c.failed);
    report_edits(ctx, {{"folded", c.folded}});
  }

 private:
  struct limits {  // from the options (their defaults are declared in `options`)
    std::int64_t max_bytes = 0;
    std::int64_t min_bytes = 0;
    double max_growth = 0;
  };
  struct counters {
    std::int64_t folded = 0, no_kernel = 0, too_large = 0, failed = 0;
  };

  // Elements of the (single) output before running, when known.
  template <class Node>
  static std::optional<double> expected_elements(const Node& n, const std::vector<const tensor*>& in) {
    if (n.outputs.size() == 1 && n.outputs[0].is_tensor() && n.outputs[0].tensor().shape.is_fully_known())
      return static_cast<double>(num_elements(n.outputs[0].tensor().shape.sizes()));
    auto prod = [](const tensor* t) -> std::optional<double> {
      if (!t) return std::nullopt;
      auto v = detail::constant_numbers(*t);
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
      auto s = detail::constant_numbers(*at(0)), l = detail::constant_numbers(*at(1)), d = detail::constant_numbers(*at(2));
      if (s.size() == 1 && l.size() == 1 && d.size() == 1 && d[0] != 0) return std::max(0.0, std::ceil((l[0] - s[0]) / d[0]));
    }
    return std::nullopt;
  }

  static bool calls_function(const attribute_map& attrs) {
    for (const auto& [k, a] : attrs)
      if (a.is<function_ref>() || a.is<std::vector<function_ref>>()) return true;
    return false;
  }

  template <class G>
  static void run_one(G& g, const G& top, exec::eigen_cpu& cpu, const limits& lim, counters& c, pass_context& ctx) {
    using node_id = typename G::node_id;
    const auto& kernels = cpu.kernels();
    // data-only topological order (Kahn); nodes on data cycles never become ready
    node_map<G, std::size_t> pending(g, 0);
    std::vector<node_id> ready;
    for (auto v : g.nodes()) {
      std::size_t n = 0;
      for (const auto& in : g.inputs(v))
        if (!in.empty) ++n;
      pending[v] = n;
      if (n == 0) ready.push_back(v);
    }
    std::unordered_map<std::uint64_t, std::vector<tensor>> values;  // by serial: known outputs
    std::vector<std::pair<node_id, tensor>> folds;
    for (std::size_t head = 0; head < ready.size(); ++head) {
      const node_id v = ready[head];
      for (const auto& u : g.uses(v))
        if (--pending[u.node] == 0) ready.push_back(u.node);
      const auto& n = g[v];
      if (detail::is_constant_node(n)) {
        values[g.serial(v)] = {detail::constant_value(n)};
        continue;
      }
      const auto ins = g.inputs(v);
      bool any = false, all_known = true;
      std::vector<const tensor*> in_t(ins.size(), nullptr);
      for (std::size_t i = 0; i < ins.size(); ++i) {
        if (ins[i].empty) continue;
        any = true;
        auto it = values.find(g.serial(ins[i].node));
        if (it == values.end() || static_cast<std::size_t>(ins[i].port) >= it->second.size()) {
          all_known = false;
          break;
        }
        in_t[i] = &it->second[static_cast<std::size_t>(ins[i].port)];
      }
      if (!any || !all_known) continue;
      if (!detail::op_is_pure(n.domain, n.op) || calls_function(n.attrs) || n.outputs.empty()) continue;
      if (!kernels.has(n.domain, n.op)) {
        ++c.no_kernel;
        continue;
      }
      std::int64_t in_bytes = 0;
      for (const tensor* t : in_t)
        if (t) in_bytes += detail::constant_bytes(*t);
      auto fits = [&](double bytes) {
        return bytes <= static_cast<double>(lim.max_bytes) &&
               (bytes <= static_cast<double>(lim.min_bytes) || bytes <= lim.max_growth * static_cast<double>(in_bytes));
      };
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
      std::vector<exec::value> out;
      try {
        out = exec::run_kernel(cpu, kernels, kn, std::move(args));
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
        out_bytes += detail::constant_bytes(o.tensor());
        result.push_back(std::move(o.tensor()));
      }
      if (!tensors) continue;
      // a result over the growth limit is not folded, but its consumers may use it
      const bool fold = fits(static_cast<double>(out_bytes));
      if (!fold) ++c.too_large;
      if (fold && result.size() == 1) folds.emplace_back(v, result[0]);
      values[g.serial(v)] = std::move(result);
    }
    for (auto& [v, t] : folds) {
      detail::replace_by_constant(g, v, std::move(t), detail::tf_constants(top, g[v].domain));
      ++c.folded;
    }
  }
};

/// The `tf-constant-propagation` pass object (see `constant_propagation_fn`).
inline constexpr constant_propagation_fn constant_propagation{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void constant_propagation_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
