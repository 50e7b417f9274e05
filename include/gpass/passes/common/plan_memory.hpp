// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file plan_memory.hpp
/// Pass "plan-memory": the executor's buffer plan as a pass (Paddle's
/// `memory_optimization_pass` with its optimize level), recorded on the graph.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/config.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/memory_plan.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/ops/opset.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/facts.hpp>
#include <gpass/pass/pass_base.hpp>

namespace gpass {

/// Pass "plan-memory": plans where the values of the main graph live when the CPU executor
/// runs it, and records the plan on the graph; `exec::plan` uses a recorded plan (after
/// checking it) instead of making its own. Needs static shapes (`infer-shapes` first): values
/// whose sizes are not fixed, results, graph inputs and constants are not planned.
///
/// - Schedule: the executor's (`topological_order`); a value lives from the step that makes
///   it to its last reader (outputs of view kernels such as `Reshape` share their input's
///   buffer and extend its life).
/// - `level` (option, default 2): 0, every value its own memory (the naive sum); 1, values
///   whose lifetimes do not overlap share memory (best-fit offsets in one arena); 2, also in
///   place: an element-wise op (`Add`, `Relu`, ..., `exec::can_write_in_place`) writes its
///   output over an input of the same type and size whose last reader it is.
/// - Recorded: node attribute `_memory_offsets` (ints, one per output: offset in the arena,
///   -1 when not planned), `_memory_in_place` (int: the input whose buffer output 0 takes),
///   graph attributes `memory_level`, `memory_peak_bytes` (the arena), `memory_naive_bytes`
///   (no reuse). Statistics: `peak-bytes`, `naive-bytes`, `planned`, `in-place`.
/// \code
///   gpass::infer_shapes(g, ctx);
///   gpass::plan_memory(g, ctx);          // g.attrs()["memory_peak_bytes"]
///   gpass::exec::plan<gpass::exec::eigen_cpu> p(g, cpu);   // p.stats().recorded_memory_plan
/// \endcode
struct plan_memory_fn : pass_base<plan_memory_fn> {
  static constexpr std::string_view name = "plan-memory";
  static constexpr std::string_view description =
      "Plan the CPU executor's buffers (lifetimes, in-place reuse, arena offsets) and record the plan on the graph";
  using requires_facts = facts<fact_tags::shapes_inferred>;
  static constexpr std::array options{option_spec{
      "level", option_type::integer, "2", "0: no reuse, 1: reuse memory between lifetimes, 2: and element-wise ops in place"}};

  template <class G>
  void run(G& g, pass_context& ctx) const {
    const std::int64_t level = option_int(ctx, "level");
    if (level < 0 || level > 2)
      throw error("option 'level' must be 0, 1 or 2, got " + std::to_string(level), error_context{.pass = std::string(name)});
    using node_id = typename G::node_id;
    const auto order = topological_order(g);
    exec::eigen_cpu cpu({.threads = 1});
    const auto& kernels = cpu.kernels();
    const int opset = graph_opset(g, "");

    // steps and slots (one per output port), as the executor numbers them
    node_map<G, std::int64_t> step(g, -1);
    node_map<G, int> first_slot(g, -1);
    std::vector<node_id> slot_node;
    std::vector<int> slot_port;
    std::int64_t steps = 0;
    for (auto v : order) {
      const auto& n = g[v];
      for (auto& key : {"_memory_offsets", "_memory_in_place"}) g[v].attrs.erase(key);
      first_slot[v] = static_cast<int>(slot_node.size());
      for (std::size_t k = 0; k < n.outputs.size(); ++k) {
        slot_node.push_back(v);
        slot_port.push_back(static_cast<int>(k));
      }
      if (n.domain.empty() && (n.op == "arg" || n.op == "return" || n.op == "function_entry")) continue;
      step[v] = steps++;
    }
    const std::size_t num_slots = slot_node.size();
    std::vector<std::int64_t> last(num_slots, -1);
    std::vector<char> result(num_slots, 0);
    for (auto v : order) {
      const bool ret = g[v].domain.empty() && g[v].op == "return";
      for (const auto& in : g.inputs(v)) {
        if (in.empty) continue;
        const int s = first_slot[in.node] + in.port;
        if (ret) result[s] = 1;
        last[s] = std::max(last[s], ret ? steps : step[v]);
      }
    }
    auto bytes_of = [&](int s) -> std::size_t {
      const auto& n = g[slot_node[s]];
      if (step[slot_node[s]] < 0 || result[s]) return 0;
      if ((n.domain.empty() && n.op == "Constant") || (n.domain == "tf" && n.op == "Const")) return 0;
      return exec::static_bytes(n.outputs[static_cast<std::size_t>(slot_port[s])]);
    };

    // buffers: views share their input's, in-place outputs take their input's
    std::vector<int> root(num_slots);
    for (std::size_t s = 0; s < num_slots; ++s) root[s] = static_cast<int>(s);
    std::vector<std::int64_t> buffer_last = last;
    std::int64_t in_place = 0;
    for (auto v : order) {
      const auto& n = g[v];
      if (step[v] < 0 || n.outputs.empty()) continue;
      const int out = first_slot[v];
      const auto* def = kernels.find(n.domain, n.op, n.domain.empty() ? opset : graph_opset(g, n.domain), dtype::undefined);
      if (def && def->alias_input >= 0 && static_cast<std::size_t>(def->alias_input) < g.num_inputs(v)) {
        auto in = g.input(v, def->alias_input);
        if (!in.empty) root[out] = root[first_slot[in.node] + in.port];
      } else if (level >= 2 && exec::can_write_in_place(n.domain, n.op) && bytes_of(out) != 0) {
        for (std::size_t i = 0; i < g.num_inputs(v); ++i) {
          auto in = g.input(v, static_cast<int>(i));
          if (in.empty) continue;
          // the input's buffer (its own, or the one it took in place) must die here
          const int s = first_slot[in.node] + in.port, r = root[s];
          if (bytes_of(r) == 0 || bytes_of(s) != bytes_of(out) || buffer_last[r] != step[v] ||
              !(g[in.node].outputs[static_cast<std::size_t>(in.port)] == n.outputs[0]))
            continue;
          root[out] = r;
          g[v].attrs["_memory_in_place"] = static_cast<std::int64_t>(i);
          ++in_place;
          break;
        }
      }
      for (std::size_t k = 0; k < n.outputs.size(); ++k) {
        const int s = out + static_cast<int>(k);
        buffer_last[root[s]] = std::max(buffer_last[root[s]], buffer_last[s]);
      }
    }

    // place the buffers that own memory
    std::vector<exec::buffer_request> req;
    std::vector<int> req_slot;
    for (std::size_t s = 0; s < num_slots; ++s) {
      const std::size_t b = bytes_of(static_cast<int>(s));
      if (root[s] != static_cast<int>(s) || b == 0 || buffer_last[s] >= steps) continue;
      const std::int64_t first = step[slot_node[s]];
      req.push_back({b, first, std::max(buffer_last[s], first)});
      req_slot.push_back(static_cast<int>(s));
    }
    if (level == 0)  // no reuse: each request lives for the whole run
      for (auto& r : req) r.first = 0, r.last = steps;
    const auto layout = exec::plan_memory(req);
    std::vector<std::int64_t> offset(num_slots, -1);
    for (std::size_t r = 0; r < req.size(); ++r) offset[req_slot[r]] = static_cast<std::int64_t>(layout.offsets[r]);
    for (auto v : order) {
      if (step[v] < 0 || g[v].outputs.empty()) continue;
      std::vector<std::int64_t> offs;
      bool any = false;
      for (std::size_t k = 0; k < g[v].outputs.size(); ++k) {
        const int s = first_slot[v] + static_cast<int>(k);
        // an in-place output is written over its input's buffer; a view's has none of its own
        const bool own = root[s] == s || g[v].attrs.count("_memory_in_place");
        offs.push_back(own && bytes_of(s) != 0 ? offset[root[s]] : -1);
        any = any || offs.back() >= 0;
      }
      if (any) g[v].attrs["_memory_offsets"] = std::move(offs);
    }
    if constexpr (requires { g.attrs()["x"] = attribute(std::int64_t{}); }) {
      g.attrs()["memory_level"] = level;
      g.attrs()["memory_peak_bytes"] = static_cast<std::int64_t>(layout.arena_bytes);
      g.attrs()["memory_naive_bytes"] = static_cast<std::int64_t>(layout.naive_bytes);
    }
    ctx.add_statistic("peak-bytes", static_cast<std::int64_t>(layout.arena_bytes));
    ctx.add_statistic("naive-bytes", static_cast<std::int64_t>(layout.naive_bytes));
    ctx.add_statistic("planned", static_cast<std::int64_t>(req.size()));
    ctx.add_statistic("in-place", in_place);
    ctx.report_changed(true);  // attributes written
  }
};

/// The `plan-memory` pass object (see `plan_memory_fn`).
inline constexpr plan_memory_fn plan_memory{};

}  // namespace gpass
