// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file cse.hpp
/// `gpass::cse`: the "cse" pass (common-subexpression elimination).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/ops/op_memo.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/pass_base.hpp>
#include <gpass/passes/detail/constants.hpp>

namespace gpass {

namespace detail {

/// True for ops whose inputs may be reordered without changing the result (ONNX and
/// TensorFlow; the variadic ONNX `Sum`, `Mean`, `Max`, `Min` in all their inputs).
inline bool is_commutative_op(std::string_view domain, std::string_view op) {
  static constexpr std::string_view onnx[] = {"Add", "Mul", "Max", "Min", "Sum", "Mean", "And", "Or", "Xor", "Equal",
                                              "BitwiseAnd", "BitwiseOr", "BitwiseXor"};
  static constexpr std::string_view tf[] = {"Add", "AddV2", "Mul", "Maximum", "Minimum", "LogicalAnd", "LogicalOr",
                                            "Equal", "NotEqual", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "AddN"};
  if (domain.empty()) return std::find(std::begin(onnx), std::end(onnx), op) != std::end(onnx);
  if (domain == "tf") return std::find(std::begin(tf), std::end(tf), op) != std::end(tf);
  return false;
}

inline std::size_t hash_mix(std::size_t h, std::size_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

/// The nodes CSE keeps, by key hash: open addressing over a flat array sized once for the
/// graph (no allocation per node, nothing is ever erased); `for_each(h, f)` visits the nodes
/// stored under hash `h` until `f` returns true.
template <class NodeId>
class cse_table {
 public:
  explicit cse_table(std::size_t nodes) {
    std::size_t cap = 16;
    int bits = 4;
    while (cap < 2 * nodes + 1) {
      cap *= 2;
      ++bits;
    }
    slots_.resize(cap);
    mask_ = cap - 1;
    shift_ = 64 - bits;
  }
  template <class F>
  bool for_each(std::size_t h, F&& f) const {
    for (std::size_t i = home(h);; i = (i + 1) & mask_) {
      const slot& s = slots_[i];
      if (!s.used) return false;
      if (s.hash == h && f(s.node)) return true;
    }
  }
  void insert(std::size_t h, NodeId v) {
    std::size_t i = home(h);
    while (slots_[i].used) i = (i + 1) & mask_;
    slots_[i] = {h, v, true};
  }

 private:
  struct slot {
    std::size_t hash = 0;
    NodeId node{};
    bool used = false;
  };
  // Fibonacci hashing: the key hashes mix serial numbers with shifts and xors, whose low
  // bits alone would cluster; the product's top bits spread them over the table
  std::size_t home(std::size_t h) const noexcept {
    return static_cast<std::size_t>((static_cast<std::uint64_t>(h) * 0x9e3779b97f4a7c15ULL) >> shift_);
  }
  std::vector<slot> slots_;
  std::size_t mask_ = 0;
  int shift_ = 60;
};

/// A hash of a tensor's dtype, sizes and contents, in O(1): of the contents only the first
/// and last 64 bytes count (equal hashes are compared in full; a weight tensor is not read
/// whole on every run).
inline std::size_t hash_tensor(const tensor& t) {
  std::size_t h = std::hash<int>{}(static_cast<int>(t.element_type()));
  for (auto s : t.sizes()) h = hash_mix(h, std::hash<std::int64_t>{}(s));
  if (t.element_type() == dtype::string) {
    if (t.size() != 0) h = hash_mix(h, std::hash<std::string>{}(t.values<std::string>()[0]));
  } else if (const std::size_t n = t.nbytes(); n != 0) {
    const char* p = reinterpret_cast<const char*>(t.raw());
    const std::size_t k = std::min<std::size_t>(n, 64);
    h = hash_mix(h, std::hash<std::string_view>{}(std::string_view(p, k)));
    h = hash_mix(h, std::hash<std::string_view>{}(std::string_view(p + n - k, k)));
  }
  return h;
}

}  // namespace detail

/// Pass "cse": common-subexpression elimination. Two nodes of the same op, domain and
/// attributes reading the same values (in any order for commutative ops: `Add`, `Mul`,
/// `Max`, `Sum`, TF `AddV2`, `Maximum`, ..., see `detail::is_commutative_op`) with the same
/// control inputs compute the same thing; the later one's uses read the first one's outputs
/// and it goes. Equal constants (ONNX `Constant`, TF `Const`: same dtype, shape and bits)
/// merge too, up to `cse.max-constant-bytes` (default 1 MiB).
///
/// With `cse.inferred-values` (default true; run `infer-values` just before, so the
/// attributes are current), nodes whose partly known value inference recorded as the same
/// (`_incomplete_value` with no unknown dim, same type: `Shape(x)[0]` and `Shape(y)[0]` of
/// two tensors whose dim 0 is the same symbol `batch`) merge whatever their ops: symbols are
/// unified by inference, so equal symbolic values are equal at run time. This is what
/// removes the repeated shape computations of exported models (one per layer in tf2onnx's
/// LSTMs and attention blocks). Nodes with control edges are not merged this way.
///
/// - Never merged: ops with effects, hidden state or randomness (`detail::op_is_pure`), ops
///   that call functions, nodes without inputs other than constants (`arg`, `Placeholder`),
///   a node whose output is a graph output (it keeps its name; it may still absorb later
///   copies), nodes on data cycles (TF v1 loops).
/// - Visits nodes in data-topological order, so a merge makes the users of both nodes equal in
///   turn (`Relu(Add(a,b))` and `Relu(Add(b,a))` merge whole). The merged node's control
///   successors follow the one kept. Runs on the graph and every function. O(V + E) expected
///   (hashing; attributes compared only on equal hashes).
/// - Statistics: `merged` (nodes removed).
/// \code
///   gpass::cse(g, ctx);   // %a = Add(%x, %y)  %b = Add(%y, %x)  -> %b's users read %a
/// \endcode
struct cse_fn : pass_base<cse_fn> {
  static constexpr std::string_view name = "cse";
  /// Its result does not depend on dead nodes (a `dce` between two runs changes nothing for it).
  static constexpr bool dead_code_insensitive = true;
  static constexpr std::string_view description = "Merge nodes that compute the same value (common-subexpression elimination)";
  static constexpr std::array options{
      option_spec{"max-constant-bytes", option_type::integer, "1048576", "largest constants compared for merging, in bytes"},
      option_spec{"inferred-values", option_type::boolean, "true", "also merge nodes whose _incomplete_value (infer-values) is the same"}};

  template <class G>
  void run(G& g, pass_context& ctx) const {
    std::int64_t merged = 0;
    const std::int64_t max_const = option_int(ctx, "max-constant-bytes");
    const bool by_value = option_bool(ctx, "inferred-values");
    for (G* cur : all_graphs(g)) merged += run_one(*cur, max_const, by_value);
    report_edits(ctx, {{"merged", merged}});
  }

 private:
  template <class G>
  static std::int64_t run_one(G& g, std::int64_t max_const, bool by_value) {
    using node_id = typename G::node_id;
    using input_key = std::vector<std::pair<std::uint64_t, int>>;  // (serial, port) of each data input
    node_map<G, std::size_t> pending(g, 0);
    std::vector<node_id> ready = data_sources(g, pending);
    node_map<G, char> is_output(g, 0);
    for (auto v : g.nodes())
      if (g[v].op == "return" && g[v].domain.empty())
        for (const auto& in : g.inputs(v))
          if (!in.empty) is_output[in.node] = 1;
    detail::cse_table<node_id> seen(g.num_nodes());  // key hash -> the nodes kept
    std::unordered_map<std::string, node_id> by_symbolic_value;  // "type|value" -> first node
    std::vector<node_id> doomed;
    // The key of a node (inputs in canonical order, control inputs sorted) into reused buffers;
    // no allocation per node once they have grown.
    auto make_key = [&](node_id v, input_key& in, std::vector<std::uint64_t>& ctl) {
      const auto& n = g[v];
      in.clear();
      ctl.clear();
      std::size_t data = 0;
      for (std::size_t i = 0; i < g.num_inputs(v); ++i) {
        auto r = g.input(v, static_cast<int>(i));
        in.emplace_back(r.empty ? ~std::uint64_t{0} : g.serial(r.node), r.port);
        data += r.empty ? 0 : 1;
      }
      if (detail::is_commutative_op(n.domain, n.op)) std::sort(in.begin(), in.end());
      if (g.in_degree(v) != data) {  // control inputs
        for (auto c : g.control_inputs(v)) ctl.push_back(g.serial(c));
        std::sort(ctl.begin(), ctl.end());
      }
    };
    // `cv`: the node's constant value when it is a constant node, else nullptr
    auto hash_key = [&](node_id v, const input_key& in, const std::vector<std::uint64_t>& ctl, const tensor* cv) {
      const auto& n = g[v];
      std::size_t h = detail::hash_name(n.op);
      if (!n.domain.empty()) h = detail::hash_mix(h, detail::hash_name(n.domain));
      for (const auto& [sr, p] : in) h = detail::hash_mix(detail::hash_mix(h, std::hash<std::uint64_t>{}(sr)), std::hash<int>{}(p));
      for (auto c : ctl) h = detail::hash_mix(h, std::hash<std::uint64_t>{}(c));
      // attributes are compared on a hash match; their number is enough to spread the keys
      h = detail::hash_mix(h, n.attrs.size());
      if (cv) h = detail::hash_mix(h, detail::hash_tensor(*cv));
      return h;
    };
    detail::purity_memo pure;
    auto mergeable = [&](node_id v, const tensor* cv) {
      const auto& n = g[v];
      if (cv) return detail::constant_bytes(*cv) <= max_const;  // a constant node: pure, no call
      if (n.op == "return" || !pure(n.domain, n.op) || detail::calls_function(n.attrs)) return false;
      return g.num_inputs(v) != 0;
    };
    // the symbolic value of a single-output node, "" when it has none (or an unknown dim)
    auto symbolic_value = [&](node_id v) -> std::string {
      const auto& n = g[v];
      if (!by_value || n.outputs.size() != 1 || !n.outputs[0].is_tensor()) return {};
      auto it = n.attrs.find("_incomplete_value");
      if (it == n.attrs.end() || !it->second.template is<shape>()) return {};
      const shape& sv = it->second.template as<shape>();
      if (!sv.has_rank()) return {};
      for (const auto& d : sv.dims())
        if (d.is_unknown()) return {};
      return n.outputs[0].to_string() + "|" + sv.to_string();
    };
    // v's users read rep from now on, and v goes; the users count down as if v were done
    auto merge = [&](node_id v, node_id rep) {
      const auto users = g.uses(v);
      g.replace_all_uses(v, rep);
      for (const auto& u : users)
        if (--pending[u.node] == 0) ready.push_back(u.node);
      doomed.push_back(v);
    };
    input_key kin, win;
    std::vector<std::uint64_t> kctl, wctl;
    for (std::size_t head = 0; head < ready.size(); ++head) {
      const node_id v = ready[head];
      const tensor* cv = detail::is_constant_node(g[v]) ? &detail::constant_value(g[v]) : nullptr;
      if (mergeable(v, cv)) {
        if (std::string sv = cv ? std::string() : symbolic_value(v); !sv.empty()) {  // constants have none
          auto [it, fresh] = by_symbolic_value.try_emplace(std::move(sv), v);
          // without control edges: they could order rep after one of its own descendants
          if (!fresh && !is_output[v] && g[it->second].device == g[v].device && g.control_inputs(v).empty() &&
              g.control_outputs(v).empty()) {
            merge(v, it->second);
            continue;
          }
        }
        make_key(v, kin, kctl);
        const std::size_t h = hash_key(v, kin, kctl, cv);
        std::optional<node_id> rep;
        seen.for_each(h, [&](node_id w) {
          const auto &a = g[v], &b = g[w];
          if (a.op != b.op || a.domain != b.domain || a.outputs.size() != b.outputs.size() || a.device != b.device)
            return false;
          make_key(w, win, wctl);
          if (win == kin && wctl == kctl && a.attrs == b.attrs) rep = w;
          return rep.has_value();
        });
        if (rep && !is_output[v]) {
          for (auto s : g.control_outputs(v)) g.add_control(*rep, s);
          merge(v, *rep);
          continue;
        }
        if (!rep) seen.insert(h, v);
      }
      for (auto e : g.out_edges(v))
        if (!g[e].is_control() && --pending[g.target(e)] == 0) ready.push_back(g.target(e));
    }
    g.remove_nodes(doomed);
    return static_cast<std::int64_t>(doomed.size());
  }
};

/// The `cse` pass object (see `cse_fn`).
inline constexpr cse_fn cse{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void cse_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
