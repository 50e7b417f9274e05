// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tensor_arrays.hpp
/// `gpass::tensor_arrays`: the "lower-tensor-arrays" pass (seed 000, "TensorArray"):
/// TensorFlow TensorArrays become `list` values handled by the gpass list ops.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/ops/list_ops.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>

namespace gpass {

/// Pass "lower-tensor-arrays": rewrites the TensorArrayV3 family (domain "tf", or the default
/// domain as in hand-written graphs) into the list ops of `gpass::register_list_ops`, following
/// seed 000: the *flow* value becomes the list (it already goes through every operation and
/// every loop), and the *handle* carries nothing.
///
/// | TensorFlow | gpass |
/// |------------|-------|
/// | `TensorArrayV3(size)` -> (handle, flow) | `list_reserve(size)` -> (handle `resource[]`, list), same name and ports |
/// | `TensorArrayWriteV3(h, i, v, flow)` | `list_write(flow, i, v)` |
/// | `TensorArrayReadV3(h, i, flow)` | `list_read(flow, i)` |
/// | `TensorArrayGatherV3(h, indices, flow)` (also TF1's `stack()`) | `list_gather(flow, indices)` |
/// | `TensorArrayScatterV3(h, indices, v, flow)` (also `unstack()`) | `list_scatter(flow, indices, v)` |
/// | `TensorArrayConcatV3(h, flow)` -> (value, lengths) | `list_concat(flow)` |
/// | `TensorArraySplitV3(h, v, lengths, flow)` | `list_split(flow, v, lengths)` |
/// | `TensorArraySizeV3(h, flow)` | `list_size(flow)` |
/// | `TensorArrayCloseV3(h)` | removed (its control predecessors precede its control successors) |
///
/// Nodes keep their names, uses and control inputs. `dtype`, `element_shape`, `dynamic_size`
/// and `element_shape_except0` are kept; a reader without a known `element_shape` takes the
/// array's when its handle comes from the `TensorArrayV3` through `Enter`/`Identity` nodes of
/// the same graph (so reading an unwritten element can give zeros at run time). `Enter` and
/// `Identity` nodes that only carried handles and are left without consumers are removed; a
/// handle still passed somewhere (a functional loop's invariant) is a value that carries
/// nothing (`resource` type, no value at run time).
///
/// Types: outputs that hold lists become unknown (inference gives them `list` types), and so do
/// the declared types of the nodes the lists flow through (`Enter`/`Merge`/`Switch`/`Exit`/
/// `NextIteration`/`Identity`/tuples/`while`/`if`, and the arguments of the loop bodies and
/// branches they call), which an importer may have declared as the flow's `f32[]`.
///
/// Works before and after `functionalize-loops`: the rewrite is local to each node, on the
/// graph and every function of its library. `TensorArrayGradV3` (gradients) and other
/// TensorArray versions are errors naming the node, its op and the pass. Statistics:
/// `arrays`, `lowered-ops`. Provides `fact_tags::tensor_arrays_lowered`.
/// \code
///   gpass::tensor_arrays(g, ctx);        // TensorArrayWriteV3(h, i, x, flow) -> list_write(flow, i, x)
///   gpass::infer_shapes(g, ctx);         // the list's element type refined by the writes
/// \endcode
struct tensor_arrays_fn : lowering_pass_base<tensor_arrays_fn> {
  static constexpr std::string_view name = "lower-tensor-arrays";
  static constexpr std::string_view description =
      "Lower TensorFlow TensorArrays to list values and the gpass list ops (flow = list, handle carries nothing)";
  using provides_facts = facts<fact_tags::tensor_arrays_lowered>;

  template <class G>
  void run(G& g, pass_context& ctx) const {
    std::vector<std::pair<G*, std::string>> all{{&g, std::string()}};  // graphs and their names in their library
    for (std::size_t i = 0; i < all.size(); ++i)
      for (auto& [fname, f] : all[i].first->functions())
        if (f) all.emplace_back(f.get(), fname);
    std::int64_t arrays = 0, lowered = 0;
    for (auto& [cur, fname] : all) run_one(*cur, arrays, lowered);
    // declared types along the lists' ways, to a fixed point over the functions they enter
    std::set<std::string, std::less<>> entered;
    for (bool grew = true; grew;) {
      const std::size_t before = entered.size();
      for (auto& [cur, fname] : all) clear_flow_types(*cur, !fname.empty() && entered.contains(fname), entered);
      grew = entered.size() != before;
    }
    ctx.add_statistic("arrays", arrays);
    ctx.add_statistic("lowered-ops", lowered);
  }

 private:
  template <class Node>
  static bool is_tf(const Node& n) {
    return n.domain == "tf" || n.domain.empty();
  }
  template <class Node>
  static bool is_carrier(const Node& n) {
    return (n.op == "Enter" && n.domain.empty()) || (n.op == "Identity" && is_tf(n));
  }
  static bool is_list_op(std::string_view op) { return op.starts_with("list_"); }

  // The element_shape of the TensorArray a handle input comes from, through carriers.
  template <class G>
  static std::optional<shape> array_element_shape(const G& g, typename G::input_ref in) {
    for (std::size_t guard = 0; !in.empty && guard < 64; ++guard) {
      const auto& n = g[in.node];
      if ((n.op == "TensorArrayV3" && is_tf(n)) || (n.op == "list_reserve" && n.domain.empty())) {
        auto it = n.attrs.find("element_shape");
        if (it != n.attrs.end() && it->second.template is<shape>()) return it->second.template as<shape>();
        return std::nullopt;
      }
      if (!is_carrier(n) || g.num_inputs(in.node) < 1) return std::nullopt;
      in = g.input(in.node, 0);
    }
    return std::nullopt;
  }

  template <class G>
  static void run_one(G& g, std::int64_t& arrays, std::int64_t& lowered) {
    using node_id = typename G::node_id;
    using node_type = typename G::node_type;
    std::vector<node_id> todo;
    for (auto v : g.nodes()) {
      const auto& n = g[v];
      if (is_tf(n) && n.op.starts_with("TensorArray")) todo.push_back(v);
    }
    std::vector<typename G::input_ref> handles;  // handle inputs of the lowered ops
    for (auto v : todo) {
      const node_type n = g[v];
      const auto ins = g.inputs(v);
      auto need = [&](std::size_t k) {
        if (ins.size() != k)
          fail(n.op + " expects " + std::to_string(k) + " inputs, has " + std::to_string(ins.size()), n.name, n.op);
        for (const auto& r : ins)
          if (r.empty) fail(n.op + " has an empty input", n.name, n.op);
      };
      auto copy_attr = [&](node_type& to, const char* a) {
        if (auto it = n.attrs.find(a); it != n.attrs.end()) to.attrs[a] = it->second;
      };
      node_type m;
      m.op = "";
      std::vector<int> order;  // inputs of the new node, as ports of the old one
      bool keep_types = false;
      std::size_t outs = 1;
      if (n.op == "TensorArrayV3") {
        need(1);
        m.op = "list_reserve";
        copy_attr(m, "dtype");
        copy_attr(m, "element_shape");
        copy_attr(m, "dynamic_size");
        if (!m.attrs.contains("dtype")) fail("TensorArrayV3 without a dtype attribute", n.name, n.op);
        order = {0};
        outs = 2;
        ++arrays;
      } else if (n.op == "TensorArrayWriteV3") {
        need(4);
        m.op = "list_write";
        order = {3, 1, 2};
      } else if (n.op == "TensorArrayReadV3") {
        need(3);
        m.op = "list_read";
        copy_attr(m, "dtype");
        order = {2, 1};
        keep_types = true;
      } else if (n.op == "TensorArrayGatherV3") {
        need(3);
        m.op = "list_gather";
        copy_attr(m, "dtype");
        copy_attr(m, "element_shape");
        order = {2, 1};
        keep_types = true;
      } else if (n.op == "TensorArrayScatterV3") {
        need(4);
        m.op = "list_scatter";
        order = {3, 1, 2};
      } else if (n.op == "TensorArrayConcatV3") {
        need(2);
        m.op = "list_concat";
        copy_attr(m, "dtype");
        copy_attr(m, "element_shape_except0");
        order = {1};
        outs = 2;
        keep_types = true;
      } else if (n.op == "TensorArraySplitV3") {
        need(4);
        m.op = "list_split";
        order = {3, 1, 2};
      } else if (n.op == "TensorArraySizeV3") {
        need(2);
        m.op = "list_size";
        order = {1};
        keep_types = true;
      } else if (n.op == "TensorArrayCloseV3") {
        if (!ins.empty() && !ins[0].empty) handles.push_back(ins[0]);
        auto preds = g.control_inputs(v);
        for (auto s : g.control_outputs(v))
          for (auto p : preds) g.add_control(p, s);
        g.remove_node(v);
        ++lowered;
        continue;
      } else {
        fail("TensorArray op " + n.op + " is not supported by lower-tensor-arrays", n.name, n.op);
      }
      if (m.op == "list_read" || m.op == "list_gather") {
        auto it = m.attrs.find("element_shape");
        const bool known = it != m.attrs.end() && it->second.template is<shape>() && it->second.template as<shape>().has_rank();
        if (!known)
          if (auto s = array_element_shape(g, ins[0])) m.attrs["element_shape"] = *s;
      }
      if (m.op != "list_reserve") handles.push_back(ins[0]);
      m.device = n.device;
      m.outputs.assign(outs, type{});
      if (keep_types)
        for (std::size_t k = 0; k < outs && k < n.outputs.size(); ++k) m.outputs[k] = n.outputs[k];
      if (m.op == "list_reserve") m.outputs[0] = tensor_type{dtype::resource, shape::scalar()};
      // the new node takes over name, control inputs and uses
      std::string nm = n.name;
      auto controls = g.control_inputs(v);
      g.rename(v, g.unique_name(nm + ".lowered"));
      m.name = nm;
      auto w = g.add_node(std::move(m));
      for (auto p : controls) g.add_control(p, w);
      for (int port : order) g.add_input(w, ins[static_cast<std::size_t>(port)].node, ins[static_cast<std::size_t>(port)].port);
      g.replace_all_uses(v, w);
      g.remove_node(v);
      ++lowered;
    }
    // carriers of handles left without consumers go, up their chains
    for (auto h : handles) {
      typename G::input_ref in = h;
      while (!in.empty && is_carrier(g[in.node]) && !g.has_consumers(in.node)) {
        auto up = g.num_inputs(in.node) > 0 ? g.input(in.node, 0) : typename G::input_ref{};
        g.remove_node(in.node);
        in = up;
      }
    }
  }

  // Clears the declared types of the nodes lists flow through, from the list producers (and
  // the arguments of this function when a list enters it: `is_entered`); adds the functions
  // of the loops and branches reached to `entered`.
  template <class G>
  static void clear_flow_types(G& g, bool is_entered, std::set<std::string, std::less<>>& entered) {
    using node_id = typename G::node_id;
    std::vector<node_id> work;
    std::unordered_set<std::uint64_t> seen;
    for (auto v : g.nodes()) {
      auto& n = g[v];
      if (!n.domain.empty()) continue;
      if (n.op == "list_reserve" || n.op == "list_write" || n.op == "list_scatter" || n.op == "list_split") {
        work.push_back(v);
      } else if (n.op == "function_entry" && is_entered) {
        for (auto& t : n.outputs) t = type{};
        work.push_back(v);
      }
    }
    while (!work.empty()) {
      node_id v = work.back();
      work.pop_back();
      for (const auto& u : g.uses(v)) {
        auto& c = g[u.node];
        if (!seen.insert(g.serial(u.node)).second) continue;
        if (c.domain.empty() && is_list_op(c.op)) continue;
        const bool fwd = (c.domain.empty() && (c.op == "Enter" || c.op == "Exit" || c.op == "Merge" || c.op == "Switch" ||
                                               c.op == "NextIteration" || c.op == "get_tuple" || c.op == "make_tuple" ||
                                               c.op == "while" || c.op == "if" || c.op == "Identity")) ||
                         (c.domain == "tf" && (c.op == "Identity" || c.op == "IdentityN"));
        if (!fwd) continue;
        for (std::size_t k = 0; k < c.outputs.size(); ++k)
          if (!(c.op == "Merge" && k == 1)) c.outputs[k] = type{};
        if (c.op == "while" || c.op == "if")
          for (const auto& [an, a] : c.attrs)
            if (a.template is<function_ref>()) entered.insert(a.template as<function_ref>().name);
        work.push_back(u.node);
      }
    }
  }
};

/// The `lower-tensor-arrays` pass object (see `tensor_arrays_fn`).
inline constexpr tensor_arrays_fn tensor_arrays{};
#if !GPASS_HEADER_ONLY
// Instantiated once for the default graph type, by the unit passes/src/passes.cpp.
extern template void tensor_arrays_fn::run<graph<>>(graph<>& g, pass_context& ctx) const;
#endif

}  // namespace gpass
