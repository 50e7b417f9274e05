// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file plan.hpp
/// `gpass::exec::plan<P, G>`: a graph compiled once for a backend (schedule, kernels,
/// buffer plan) and run any number of times, from any number of threads.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/exec/batch_split.hpp>
#include <gpass/exec/globals.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/memory_plan.hpp>
#include <gpass/exec/policy.hpp>
#include <gpass/exec/value.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/ops/constant_node.hpp>
#include <gpass/ops/opset.hpp>

namespace gpass::exec {

/// Options of a plan.
struct plan_options {
  /// Place the outputs whose sizes inference fixed in one arena per run, reusing memory
  /// between values whose lifetimes do not overlap (off: every output is allocated when
  /// its kernel runs).
  bool plan_memory = true;
  /// The globals `get_global` / `set_global` use (TensorFlow variables): null gives the plan a
  /// store of its own; plans given the same store share their globals. Either way the plan
  /// gives the globals without a value the initial values of the graph's `global:<name>`
  /// attributes when it is built (see `global_store`).
  std::shared_ptr<global_store> globals;
  /// Use the buffer plan the `plan-memory` pass recorded on the graph (`_memory_offsets`,
  /// `_memory_in_place`) when it is valid for this plan's schedule; otherwise (or off) plan here.
  bool use_recorded_memory_plan = true;
  /// What one run may take: bytes per tensor and alive at once, loop iterations, call depth,
  /// and a cancellation flag (see `run_limits`; the defaults stop only what no real model does).
  run_limits limits;
  /// Run a batch as sub-batches when the graph is proven batch-separable and that pays (see
  /// `analyze_batch_split`, `choose_batch_split`): one sub-batch per thread, or sample by
  /// sample; the results are the same as a whole run's (to rounding: the kernels see fewer
  /// rows). `limits` then apply to each sub-batch's run (bytes alive at once: per sub-batch,
  /// so up to one sub-batch per thread at a time).
  bool split_batch = true;
};

/// What a plan did with its graph (the main graph; `functions` counts the nested plans).
struct plan_statistics {
  std::size_t steps = 0;               ///< kernels run per run of the main graph
  std::size_t pruned = 0;              ///< nodes not needed by any output (not run)
  std::size_t planned_buffers = 0;     ///< values with static sizes placed in the arena
  std::size_t dynamic_buffers = 0;     ///< values allocated while running (sizes not static)
  std::size_t planned_peak_bytes = 0;  ///< arena size: the peak of the planned values
  std::size_t naive_bytes = 0;         ///< the sum of the planned values' sizes (no reuse)
  std::size_t functions = 0;           ///< nested plans (loop bodies, branches)
  bool recorded_memory_plan = false;   ///< the arena layout is the one `plan-memory` recorded
  std::size_t in_place = 0;            ///< outputs written over their input's buffer (recorded plan)
};

namespace detail {

template <class P, class G>
class plan_root;

/// The plan of one graph body: the main graph (inputs are `arg` nodes) or a function
/// (inputs are the outputs of its `function_entry` node). Immutable once built.
template <class P, class G>
class body_plan {
 public:
  using tensor_type = typename P::tensor_type;
  using value_type = basic_value<tensor_type>;

  body_plan(const G& g, const G& top, P& policy, const plan_options& opt, std::string label)
      : label_(std::move(label)) {
    build(g, top, policy, opt);
  }

  const std::vector<std::string>& input_names() const noexcept { return input_names_; }
  const std::vector<type>& input_types() const noexcept { return input_types_; }
  const std::vector<std::string>& output_names() const noexcept { return output_names_; }
  const std::vector<type>& output_types() const noexcept { return output_types_; }
  const plan_statistics& stats() const noexcept { return stats_; }
  /// Function names referenced by the nodes of this body.
  const std::vector<std::string>& callees() const noexcept { return callees_; }

  /// Runs the body on `args` (one per input; a `none` value takes the input's default).
  std::vector<value_type> run(P& policy, std::vector<value_type> args, const run_services<P>* services) const;

 private:
  struct step {
    std::size_t node = 0;                  // index in nodes_
    kernel_fn<P> fn;
    std::vector<int> in;                   // slot per input port, -1 when omitted
    int out_first = 0;                     // slots out_first .. out_first + num_out - 1
    std::size_t num_out = 0;
    std::vector<planned_buffer> planned;   // per output
    std::vector<char> wanted;              // per output
    int alias_slot = -1;                   // output 0 may alias this slot's buffer
    std::vector<int> release;              // slots dropped after this step
  };

  static bool in_arena(const std::shared_ptr<std::byte[]>& arena, std::size_t bytes, const std::byte* p) {
    return p && p >= arena.get() && p < arena.get() + bytes;
  }

  // A tensor in the arena outside the region the plan gave its slot (an undeclared alias of
  // another value's buffer) would be overwritten when that region is reused: copy it out.
  void keep_arena_safe(const step& s, value_type* outs, const std::shared_ptr<std::byte[]>& arena) const {
    if constexpr (std::is_same_v<tensor_type, gpass::tensor>) {
      for (std::size_t k = 0; k < s.num_out; ++k) {
        value_type& v = outs[k];
        auto ok_region = [&](const std::byte* p) {
          const planned_buffer* region = nullptr;
          if (k < s.planned.size() && s.planned[k].size) region = &s.planned[k];
          if (region && p >= arena.get() + region->offset && p < arena.get() + region->offset + region->size) return true;
          if (k == 0 && s.alias_slot >= 0) {
            const planned_buffer& a = slot_buffer_[root_[s.alias_slot]];
            if (a.size && p >= arena.get() + a.offset && p < arena.get() + a.offset + a.size) return true;
          }
          return false;
        };
        if (v.is_tensor()) {
          const std::byte* p = v.tensor().raw();
          if (in_arena(arena, arena_bytes_, p) && !ok_region(p)) v = v.tensor().clone();
        } else if (v.is_sequence()) {
          for (auto& t : v.sequence())
            if (in_arena(arena, arena_bytes_, t.raw())) t = t.clone();
        }
      }
    }
  }

  void detach_from_arena(value_type& v, const std::shared_ptr<std::byte[]>& arena) const {
    if constexpr (std::is_same_v<tensor_type, gpass::tensor>) {
      if (v.is_tensor() && in_arena(arena, arena_bytes_, v.tensor().raw())) v = v.tensor().clone();
      else if (v.is_sequence())
        for (auto& t : v.sequence())
          if (in_arena(arena, arena_bytes_, t.raw())) t = t.clone();
    }
  }

  std::shared_ptr<std::byte[]> take_arena(P& policy) const {
    if (arena_bytes() == 0) return nullptr;
    {
      std::lock_guard lock(pool_mutex_);
      if (!arenas_.empty()) {
        auto a = std::move(arenas_.back());
        arenas_.pop_back();
        return a;
      }
    }
    const std::size_t bytes = arena_bytes();
    auto* p = static_cast<std::byte*>(policy.allocate(bytes));
    return std::shared_ptr<std::byte[]>(p, [&policy, bytes](std::byte* q) { policy.deallocate(q, bytes); });
  }
  // The arena a run takes: the planned peak on the host; none for a device policy, whose
  // kernels allocate every output from its own pool (the kernel context carves host tensors
  // only).
  std::size_t arena_bytes() const noexcept {
    if constexpr (std::is_same_v<tensor_type, gpass::tensor>) return arena_bytes_;
    else return 0;
  }
  void give_back_arena(std::shared_ptr<std::byte[]> a) const {
    // only when no tensor still refers to it (fetched values were copied out)
    if (!a || a.use_count() != 1) return;
    std::lock_guard lock(pool_mutex_);
    if (arenas_.size() < 16) arenas_.push_back(std::move(a));
  }

  void check_input(std::size_t i, const value_type& v) const {
    const type& t = input_types_[i];
    if (!t.is_tensor() || !v.is_tensor()) return;
    const auto& tt = t.tensor();
    const auto& x = v.tensor();
    auto fail = [&](const std::string& what) {
      throw error(label_ + ": input '" + input_names_[i] + "': " + what, error_context{.node = input_names_[i], .op = "arg"});
    };
    if (tt.element != dtype::undefined && x.element_type() != tt.element)
      fail("expected element type " + std::string(to_string(tt.element)) + ", got " +
           std::string(to_string(x.element_type())));
    if (!tt.shape.has_rank()) return;
    if (tt.shape.rank() != x.rank())
      fail("expected rank " + std::to_string(tt.shape.rank()) + " (" + tt.to_string() + "), got sizes " +
           shape::of(x.sizes()).to_string());
    for (std::size_t d = 0; d < x.rank(); ++d)
      if (tt.shape[d].is_known() && tt.shape[d].value() != x.sizes()[d])
        fail("expected " + tt.to_string() + ", got sizes " + shape::of(x.sizes()).to_string());
  }

  void build(const G& g, const G& top, P& policy, const plan_options& opt);

  // The layout `plan-memory` recorded on the nodes, taken (slot_buffer_, root_, arena, stats)
  // when its in-place choices are safe for these steps and no two buffers live at the same
  // step overlap; false (nothing changed) otherwise.
  bool use_recorded_plan(const std::vector<type>& slot_type, const std::vector<std::int64_t>& last_use,
                         const std::vector<char>& is_output, std::int64_t end_step) {
    bool recorded = false;
    for (const auto& s : steps_) recorded = recorded || nodes_[s.node].attrs.count("_memory_offsets") != 0;
    if (!recorded) return false;
    std::vector<int> root = root_;
    auto find = [&](int x) {
      while (root[x] != x) x = root[x];
      return x;
    };
    // the last step of each buffer group (a buffer and its views; then what took it in place)
    auto group_lasts = [&] {
      std::vector<std::int64_t> r = last_use;
      for (std::size_t i = 0; i < num_slots_; ++i) r[find(static_cast<int>(i))] = std::max(r[find(static_cast<int>(i))], last_use[i]);
      return r;
    };
    std::vector<std::int64_t> group_last = group_lasts(), slot_step(num_slots_, -1);
    std::size_t in_place = 0;
    for (std::size_t si = 0; si < steps_.size(); ++si) {
      const step& s = steps_[si];
      for (std::size_t k = 0; k < s.num_out; ++k) slot_step[s.out_first + k] = static_cast<std::int64_t>(si);
      const kernel_node& n = nodes_[s.node];
      auto it = n.attrs.find("_memory_in_place");
      if (it == n.attrs.end()) continue;
      if (!it->second.template is<std::int64_t>() || s.num_out == 0) return false;
      const std::int64_t i = it->second.template as<std::int64_t>();
      if (i < 0 || i >= static_cast<std::int64_t>(s.in.size())) return false;
      const int in = s.in[static_cast<std::size_t>(i)], out = s.out_first;
      if (in < 0 || find(out) != out) return false;
      // the input's buffer must die here (no later reader of it or of a view of it)
      const int r = find(in);
      if (is_output[in] || is_output[out] || group_last[r] != static_cast<std::int64_t>(si) ||
          !can_write_in_place(n.domain, n.op) || static_bytes(slot_type[in]) == 0 ||
          static_bytes(slot_type[in]) != static_bytes(slot_type[out]))
        return false;
      root[out] = r;
      group_last[r] = std::max(group_last[r], group_last[out]);
      ++in_place;
    }
    const std::vector<std::int64_t> buffer_last = group_lasts();
    std::vector<placed_buffer> placed;
    std::vector<int> owner;
    std::vector<planned_buffer> buffers(num_slots_);
    for (const step& s : steps_) {
      auto it = nodes_[s.node].attrs.find("_memory_offsets");
      if (it == nodes_[s.node].attrs.end()) continue;
      if (!it->second.template is<std::vector<std::int64_t>>()) return false;
      const auto& offs = it->second.template as<std::vector<std::int64_t>>();
      for (std::size_t k = 0; k < s.num_out && k < offs.size(); ++k) {
        const int slot = s.out_first + static_cast<int>(k);
        const std::size_t bytes = static_bytes(slot_type[slot]);
        if (offs[k] < 0 || bytes == 0 || find(slot) != slot || is_output[slot] || buffer_last[slot] >= end_step) continue;
        buffers[slot] = planned_buffer{static_cast<std::size_t>(offs[k]), (bytes + 63) / 64 * 64};
        placed.push_back({buffers[slot].offset, buffers[slot].size, slot_step[slot], std::max(buffer_last[slot], slot_step[slot])});
        owner.push_back(slot);
      }
    }
    if (!layout_is_valid(placed)) return false;
    std::size_t arena = 0, naive = 0;
    for (const auto& b : placed) {
      arena = std::max(arena, b.offset + b.size);
      naive += b.size;
    }
    for (std::size_t i = 0; i < num_slots_; ++i)
      if (find(static_cast<int>(i)) != static_cast<int>(i) && root_[i] == static_cast<int>(i))  // in place
        buffers[i] = buffers[find(static_cast<int>(i))];
    for (std::size_t i = 0; i < num_slots_; ++i) root[i] = find(static_cast<int>(i));
    root_ = std::move(root);
    slot_buffer_ = std::move(buffers);
    arena_bytes_ = arena;
    stats_.planned_buffers = placed.size();
    stats_.planned_peak_bytes = arena;
    stats_.naive_bytes = naive;
    stats_.recorded_memory_plan = true;
    stats_.in_place = in_place;
    for (const step& s : steps_)
      if (!(nodes_[s.node].domain.empty() && nodes_[s.node].op == "Constant"))
        for (std::size_t k = 0; k < s.num_out; ++k) stats_.dynamic_buffers += slot_buffer_[s.out_first + k].size == 0;
    return true;
  }

  std::string label_;
  bool is_main_ = true;
  std::vector<kernel_node> nodes_;
  std::vector<step> steps_;
  std::size_t num_slots_ = 0;
  std::vector<int> input_slots_, output_slots_;
  std::vector<std::string> input_names_, output_names_;
  std::vector<type> input_types_, output_types_;
  std::vector<std::optional<gpass::tensor>> defaults_;
  std::vector<int> root_;
  std::vector<planned_buffer> slot_buffer_;
  std::size_t arena_bytes_ = 0;
  plan_statistics stats_;
  std::vector<std::string> callees_;
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::shared_ptr<std::byte[]>> arenas_;
};

// Out of the class: not implicitly inline, so an `extern template` of a plan stops the
// instantiation in every user translation unit (gpass/exec/eigen_cpu.hpp declares one).
template <class P, class G>
auto body_plan<P, G>::run(P& policy, std::vector<value_type> args, const run_services<P>* services) const
    -> std::vector<value_type> {
  if (args.size() != input_slots_.size())
    throw error(label_ + ": expected " + std::to_string(input_slots_.size()) + " inputs, got " +
                std::to_string(args.size()));
  std::vector<value_type> slots(num_slots_);
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_none() && defaults_[i]) {
      auto st = policy.make_stream();
      args[i] = policy.upload(*defaults_[i], st);
    }
    // (an input of unknown type, such as an ONNX optional, may be fed nothing)
    if (args[i].is_none() && is_main_ && input_types_[i].is_tensor())
      throw error(label_ + ": no value fed for input '" + input_names_[i] + "'",
                  error_context{.node = input_names_[i], .op = "arg"});
    check_input(i, args[i]);
    slots[input_slots_[i]] = std::move(args[i]);
  }
  run_budget* budget = services ? services->budget() : nullptr;
  kernel_recorder* recorder = services ? services->recorder() : nullptr;
  // the arena counts as alive for the whole run of this body
  struct arena_charge {
    run_budget* b;
    std::size_t bytes;
    ~arena_charge() {
      if (b) b->refund(bytes);
    }
  } charged{nullptr, arena_bytes()};
  if (budget && arena_bytes()) {
    try {
      budget->charge(arena_bytes());  // (each planned output is checked against max_tensor_bytes when made)
    } catch (const error& e) {
      throw error(label_ + ": the buffer plan (" + std::to_string(arena_bytes()) + " bytes): " + e.message());
    }
    charged.b = budget;
  }
  auto arena = take_arena(policy);
  auto stream = policy.make_stream();
  std::vector<const value_type*> ins;
  for (const step& s : steps_) {
    ins.assign(s.in.size(), nullptr);
    for (std::size_t k = 0; k < s.in.size(); ++k)
      if (s.in[k] >= 0) ins[k] = &slots[s.in[k]];
    // (a step of no outputs may have out_first == slots.size(), of an empty vector too)
    value_type* outs = slots.data() + s.out_first;
    const kernel_node& n = nodes_[s.node];
    kernel_context<P> ctx(n, policy, stream, ins, std::span<value_type>(outs, s.num_out), s.planned,
                          arena ? &arena : nullptr, s.wanted, services);
    try {
      if (budget) budget->check_cancelled();
      if (recorder) {
        const auto start = std::chrono::steady_clock::now();
        s.fn(ctx);
        recorder->record(n, start, std::chrono::steady_clock::now());
      } else {
        s.fn(ctx);
      }
    } catch (const error& e) {
      give_back_arena(std::move(arena));
      throw e.with_node(n.name, n.op);
    } catch (const std::exception& e) {
      give_back_arena(std::move(arena));
      throw error(std::string("kernel failed: ") + e.what(), error_context{.node = n.name, .op = n.op});
    }
    if (arena) keep_arena_safe(s, outs, arena);
    for (int r : s.release) slots[r] = value_type{};
  }
  policy.synchronize(stream);
  std::vector<value_type> result;
  result.reserve(output_slots_.size());
  for (int o : output_slots_) {
    value_type v = o >= 0 ? slots[o] : value_type{};
    if (arena) detach_from_arena(v, arena);
    result.push_back(std::move(v));
  }
  slots.clear();
  give_back_arena(std::move(arena));
  return result;
}

template <class P, class G>
void body_plan<P, G>::build(const G& g, const G& top, P& policy, const plan_options& opt) {
  using node_id = typename G::node_id;
  const auto order = topological_order(g);
  // interface
  std::optional<node_id> ret, entry;
  std::vector<std::pair<std::int64_t, node_id>> args;
  for (auto v : order) {
    const auto& n = g[v];
    if (!n.domain.empty()) continue;
    if (n.op == "return") {
      if (ret) throw_node_error(label_ + " has two return nodes ('" + g[*ret].name + "' and this one)", n.name, n.op);
      ret = v;
    } else if (n.op == "function_entry") {
      if (entry) throw_node_error(label_ + " has two function_entry nodes", n.name, n.op);
      entry = v;
    } else if (n.op == "arg") {
      args.emplace_back(get_or<std::int64_t>(n.attrs, "index", static_cast<std::int64_t>(args.size())), v);
    }
  }
  if (!ret) throw error(label_ + " has no return node: nothing to compute");
  is_main_ = !entry;
  std::stable_sort(args.begin(), args.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  // nodes needed by the results (one reverse sweep over the topological order)
  node_map<G, char> needed(g, 0);
  needed[*ret] = 1;
  if (entry) needed[*entry] = 1;
  for (auto& a : args) needed[a.second] = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (!needed[*it]) continue;
    for (const auto& in : g.inputs(*it))
      if (!in.empty) needed[in.node] = 1;
    for (auto c : g.control_inputs(*it)) needed[c] = 1;
  }

  // slots: one per output port of every needed node
  node_map<G, int> first_slot(g, -1);
  std::vector<type> slot_type;
  for (auto v : order) {
    if (!needed[v]) {
      ++stats_.pruned;
      continue;
    }
    first_slot[v] = static_cast<int>(slot_type.size());
    for (const auto& t : g[v].outputs) slot_type.push_back(t);
  }
  num_slots_ = slot_type.size();
  auto slot_of = [&](node_id v, int port) { return first_slot[v] + port; };

  if (entry) {
    const auto& e = g[*entry];
    std::vector<std::string> names;
    if (auto it = e.attrs.find("names"); it != e.attrs.end() && it->second.template is<std::vector<std::string>>())
      names = it->second.template as<std::vector<std::string>>();
    for (std::size_t k = 0; k < e.outputs.size(); ++k) {
      input_slots_.push_back(slot_of(*entry, static_cast<int>(k)));
      input_names_.push_back(k < names.size() ? names[k] : e.name + ":" + std::to_string(k));
      input_types_.push_back(e.outputs[k]);
      defaults_.emplace_back();
    }
  }
  for (auto& [idx, v] : args) {
    (void)idx;
    const auto& a = g[v];
    input_slots_.push_back(slot_of(v, 0));
    input_names_.push_back(a.name);
    input_types_.push_back(a.outputs.empty() ? type{} : a.outputs[0]);
    auto d = a.attrs.find("default");
    if (d != a.attrs.end() && d->second.template is<gpass::tensor>()) defaults_.emplace_back(d->second.template as<gpass::tensor>());
    else defaults_.emplace_back();
  }
  {
    const auto& r = g[*ret];
    std::vector<std::string> names;
    if (auto it = r.attrs.find("names"); it != r.attrs.end() && it->second.template is<std::vector<std::string>>())
      names = it->second.template as<std::vector<std::string>>();
    for (std::size_t k = 0; k < g.num_inputs(*ret); ++k) {
      auto in = g.input(*ret, static_cast<int>(k));
      output_slots_.push_back(in.empty ? -1 : slot_of(in.node, in.port));
      output_names_.push_back(k < names.size() ? names[k] : (in.empty ? std::string() : g[in.node].name));
      output_types_.push_back(in.empty ? type{} : g[in.node].outputs[static_cast<std::size_t>(in.port)]);
    }
  }

  // steps
  const int opset = graph_opset(top, "");
  std::vector<std::int64_t> last_use(num_slots_, -1);
  for (auto v : order) {
    if (!needed[v] || v == *ret || (entry && v == *entry)) continue;
    const auto& n = g[v];
    if (n.domain.empty() && n.op == "arg") continue;
    kernel_node kn;
    kn.name = n.name;
    kn.op = n.op;
    kn.domain = n.domain;
    kn.attrs = n.attrs;
    kn.opset = n.domain.empty() ? opset : graph_opset(top, n.domain);
    kn.output_types = n.outputs;
    step s;
    s.node = nodes_.size();
    for (std::size_t k = 0; k < g.num_inputs(v); ++k) {
      auto in = g.input(v, static_cast<int>(k));
      if (in.empty) {
        s.in.push_back(-1);
        kn.input_types.emplace_back();
      } else {
        s.in.push_back(slot_of(in.node, in.port));
        kn.input_types.push_back(g[in.node].outputs[static_cast<std::size_t>(in.port)]);
        // an input made by a Constant node (or a TensorFlow Const, which outputs its value
        // as is) always has its `value` (kernels may pre-pack it)
        const auto& src = g[in.node];
        if (const gpass::tensor* c = in.port == 0 ? gpass::detail::constant_value_or_null(src) : nullptr) {
          kn.constant_inputs.resize(k + 1);
          kn.constant_inputs[k] = *c;
        }
      }
    }
    for (const auto& [k, a] : n.attrs) {
      if (a.template is<function_ref>()) callees_.push_back(a.template as<function_ref>().name);
      else if (a.template is<std::vector<function_ref>>())
        for (const auto& f : a.template as<std::vector<function_ref>>()) callees_.push_back(f.name);
    }
    const auto& reg = policy.kernels();
    const kernel_def<P>* def = reg.find(kn.domain, kn.op, kn.opset, dtype::undefined);
    if (!def) {
      std::string what = reg.has(kn.domain, kn.op)
                             ? "no " + std::string(P::name) + " kernel for op '" + kn.op + "' at opset " + std::to_string(kn.opset)
                             : "no " + std::string(P::name) + " kernel for op '" + kn.op + "'" +
                                   (kn.domain.empty() ? std::string() : " of domain '" + kn.domain + "'");
      throw_node_error(what + " (unsupported op)", kn.name, kn.op);
    }
    dtype t = dtype::undefined;
    const type* selector = def->type_input >= 0
                               ? (static_cast<std::size_t>(def->type_input) < kn.input_types.size() ? &kn.input_types[def->type_input] : nullptr)
                               : (kn.output_types.empty() ? nullptr : &kn.output_types[0]);
    if (selector && selector->is_tensor()) t = selector->tensor().element;
    if (t != dtype::undefined) {
      def = reg.find(kn.domain, kn.op, kn.opset, t);
      if (!def)
        throw_node_error("no " + std::string(P::name) + " kernel for op '" + kn.op + "' on element type " +
                             std::string(to_string(t)) + " (unsupported type)",
                         kn.name, kn.op);
    }
    try {
      s.fn = def->make(kn);
    } catch (const error& e) {
      throw e.with_node(kn.name, kn.op);
    } catch (const std::exception& e) {
      throw error(e.what(), error_context{.node = kn.name, .op = kn.op});
    }
    s.out_first = first_slot[v];
    s.num_out = n.outputs.size();
    s.wanted.assign(s.num_out, 0);
    for (const auto& u : g.uses(v))
      if (needed[u.node] && u.src_port >= 0 && static_cast<std::size_t>(u.src_port) < s.num_out) s.wanted[u.src_port] = 1;
    if (def->alias_input >= 0 && static_cast<std::size_t>(def->alias_input) < s.in.size()) s.alias_slot = s.in[def->alias_input];
    const auto step_index = static_cast<std::int64_t>(steps_.size());
    for (int in : s.in)
      if (in >= 0) last_use[in] = std::max(last_use[in], step_index);
    for (std::size_t k = 0; k < s.num_out; ++k) last_use[s.out_first + k] = std::max(last_use[s.out_first + k], step_index);
    nodes_.push_back(std::move(kn));
    steps_.push_back(std::move(s));
  }
  const auto end_step = static_cast<std::int64_t>(steps_.size());
  std::vector<char> is_output(num_slots_, 0);
  for (int o : output_slots_)
    if (o >= 0) {
      is_output[o] = 1;
      last_use[o] = end_step;
    }

  // buffer roots: an output that may alias an input shares that input's buffer lifetime
  root_.resize(num_slots_);
  for (std::size_t i = 0; i < num_slots_; ++i) root_[i] = static_cast<int>(i);
  for (const auto& s : steps_)
    if (s.alias_slot >= 0 && s.num_out > 0) root_[s.out_first] = root_[s.alias_slot];
  std::vector<std::int64_t> buffer_last = last_use;
  for (std::size_t i = 0; i < num_slots_; ++i) buffer_last[root_[i]] = std::max(buffer_last[root_[i]], last_use[i]);

  // memory plan: the one plan-memory recorded, when it holds for these steps
  slot_buffer_.assign(num_slots_, planned_buffer{});
  if (!(opt.plan_memory && opt.use_recorded_memory_plan && use_recorded_plan(slot_type, last_use, is_output, end_step))) {
    // static-sized outputs that are not results and not inputs
    std::vector<buffer_request> req;
    std::vector<int> req_slot;
    for (std::size_t si = 0; si < steps_.size(); ++si) {
      const auto& s = steps_[si];
      // constants hand out their attribute's buffer: nothing to place
      if (nodes_[s.node].domain.empty() && nodes_[s.node].op == "Constant") continue;
      for (std::size_t k = 0; k < s.num_out; ++k) {
        const int slot = s.out_first + static_cast<int>(k);
        const std::size_t bytes = static_bytes(slot_type[slot]);
        const bool aliased = buffer_last[slot] >= end_step;  // lives to the end (a result, or a result views it)
        if (bytes == 0 || !opt.plan_memory || is_output[slot] || aliased) {
          ++stats_.dynamic_buffers;
          continue;
        }
        req.push_back({bytes, static_cast<std::int64_t>(si), std::max<std::int64_t>(buffer_last[slot], static_cast<std::int64_t>(si))});
        req_slot.push_back(slot);
      }
    }
    const auto layout = plan_memory(req);
    for (std::size_t r = 0; r < req.size(); ++r)
      slot_buffer_[req_slot[r]] = planned_buffer{layout.offsets[r], (req[r].size + 63) / 64 * 64};
    arena_bytes_ = layout.arena_bytes;
    stats_.planned_buffers = req.size();
    stats_.planned_peak_bytes = layout.arena_bytes;
    stats_.naive_bytes = layout.naive_bytes;
  }
  for (auto& s : steps_) {
    s.planned.resize(s.num_out);
    for (std::size_t k = 0; k < s.num_out; ++k) s.planned[k] = slot_buffer_[s.out_first + k];
  }

  // release each value after its last use (results and inputs are kept to the end)
  for (std::size_t i = 0; i < num_slots_; ++i) {
    if (is_output[i] || last_use[i] < 0 || last_use[i] >= end_step) continue;
    steps_[static_cast<std::size_t>(last_use[i])].release.push_back(static_cast<int>(i));
  }
  stats_.steps = steps_.size();
  std::sort(callees_.begin(), callees_.end());
  callees_.erase(std::unique(callees_.begin(), callees_.end()), callees_.end());
}

}  // namespace detail

/// A graph compiled for policy `P`: built once (topological schedule of the nodes the results
/// need, a kernel bound to each, a buffer plan over the values whose sizes inference fixed,
/// nested plans for every function a node calls), then `run` any number of times.
///
/// **Requirements.** `g` is a main graph: `arg` nodes (inputs, ordered by their `index`
/// attribute; `default` gives an input a value when none is fed), one `return` node
/// (results, named by its `names` attribute), functions in its library referenced by
/// `function_ref` attributes (bodies of `Loop`, branches of `If`...; each with one
/// `function_entry` and one `return`). Run `infer-shapes` first to get the buffer plan;
/// without types everything is allocated at run time. The graph is copied into the plan
/// (kernels, attributes); the policy must outlive the plan.
///
/// **Errors** (`gpass::error` naming node and op): a node without a kernel ("unsupported
/// op"), a cycle, bad attributes (at build); a missing feed, a feed of the wrong element type
/// or sizes, a kernel failure (at run).
///
/// **Threads.** `run` is const and may be called concurrently: each run has its own values
/// and arena (arenas are pooled), kernels are shared and stateless.
/// \code
///   gpass::exec::eigen_cpu cpu({.threads = 2});
///   gpass::exec::plan p(g, cpu);
///   std::vector<gpass::exec::value> out = p.run({gpass::tensor::from<float>({1, 2, 3})});
///   p.stats().planned_peak_bytes;
/// \endcode
template <executor_policy P, class G = graph<>>
class plan {
 public:
  using tensor_type = typename P::tensor_type;
  using value_type = basic_value<tensor_type>;

  plan(const G& g, P& policy, plan_options options = {});

  /// Input names (graph input order), their declared types, result names and types.
  const std::vector<std::string>& input_names() const noexcept { return main_->input_names(); }
  const std::vector<type>& input_types() const noexcept { return main_->input_types(); }
  const std::vector<std::string>& output_names() const noexcept { return main_->output_names(); }
  const std::vector<type>& output_types() const noexcept { return main_->output_types(); }
  const plan_statistics& stats() const noexcept { return stats_; }
  /// The globals this plan's `get_global` / `set_global` read and write; they persist across
  /// runs (inspect or change them between runs).
  global_store& globals() const noexcept { return *globals_; }

  /// Runs the graph on `inputs` (one per input, in order; a `none` value uses the input's
  /// `default`) and returns the results in order.
  std::vector<value_type> run(std::vector<value_type> inputs) const {
    if constexpr (std::is_same_v<value_type, value> && requires { typename P::serial_scope; }) {
      if (split_.separable) {
        auto sub_run = [this](std::vector<value_type> sub) {
          frame f(*this);
          return main_->run(*policy_, std::move(sub), &f);
        };
        if (auto r = run_batch_split(*policy_, split_, input_types(), inputs, sub_run)) return std::move(*r);
      }
    }
    frame f(*this);
    return main_->run(*policy_, std::move(inputs), &f);
  }
  /// Whether the graph is batch-separable, and why not (see `plan_options::split_batch`).
  const batch_split_info& batch_split() const noexcept { return split_; }
  /// Runs the graph on inputs given by name; inputs with a `default` may be left out. An
  /// unknown name is an error. (A separate name: `run({a, b})` stays unambiguous.)
  std::vector<value_type> run_named(const std::map<std::string, value_type, std::less<>>& feeds) const {
    const auto& names = input_names();
    std::vector<value_type> in(names.size());
    std::size_t used = 0;
    for (std::size_t i = 0; i < names.size(); ++i)
      if (auto it = feeds.find(names[i]); it != feeds.end()) {
        in[i] = it->second;
        ++used;
      }
    if (used != feeds.size())
      for (const auto& [k, v] : feeds)
        if (std::find(names.begin(), names.end(), k) == names.end())
          throw error("feed '" + k + "' is not an input of the graph");
    return run(std::move(in));
  }

 private:
  // One run: its calls (with their depth) and its accounting against the limits.
  class frame final : public detail::run_services<P> {
   public:
    explicit frame(const plan& p) : plan_(p), budget_(p.limits_) {}
    std::vector<value_type> call(std::string_view name, std::vector<value_type> args) const override {
      auto it = plan_.functions_.find(name);
      if (it == plan_.functions_.end()) throw error("function '" + std::string(name) + "' has no plan");
      budget_.enter_call(name);
      struct leave {
        detail::run_budget& b;
        ~leave() { b.leave_call(); }
      } guard{budget_};
      return it->second->run(*plan_.policy_, std::move(args), this);
    }
    global_store* run_globals() const override { return plan_.globals_.get(); }
    detail::run_budget* budget() const override { return &budget_; }
    detail::buffer_cache* buffers() const override { return plan_.buffers_.get(); }

   private:
    const plan& plan_;
    mutable detail::run_budget budget_;
  };

  P* policy_;
  run_limits limits_;
  std::shared_ptr<global_store> globals_;
  std::unique_ptr<detail::body_plan<P, G>> main_;
  std::map<std::string, std::unique_ptr<detail::body_plan<P, G>>, std::less<>> functions_;
  plan_statistics stats_;
  batch_split_info split_;
  std::shared_ptr<detail::buffer_cache> buffers_ = std::make_shared<detail::buffer_cache>();
};

template <executor_policy P, class G>
plan<P, G>::plan(const G& g, P& policy, plan_options options) : policy_(&policy), limits_(options.limits) {
  globals_ = options.globals ? options.globals : std::make_shared<global_store>();
  if constexpr (std::is_same_v<typename G::attrs_type, attribute_map>) globals_->initialize_from(g.attrs());
  main_ = std::make_unique<detail::body_plan<P, G>>(g, g, policy, options, "graph");
  // nested plans for every function reachable from the main graph
  std::vector<std::string> work = main_->callees();
  while (!work.empty()) {
    std::string name = std::move(work.back());
    work.pop_back();
    if (functions_.count(name)) continue;
    const G* f = g.find_function(name);
    if (!f) throw error("function '" + name + "' is referenced but not in the graph's library");
    auto body = std::make_unique<detail::body_plan<P, G>>(*f, g, policy, options, "function '" + name + "'");
    for (const auto& c : body->callees()) work.push_back(c);
    functions_.emplace(std::move(name), std::move(body));
  }
  stats_ = main_->stats();
  stats_.functions = functions_.size();
  if constexpr (std::is_same_v<typename G::attrs_type, attribute_map>) {
    if (!options.split_batch) split_.reason = "off (plan_options::split_batch)";
    else if (!functions_.empty()) split_.reason = "the graph calls functions";
    else split_ = analyze_batch_split(g);
  }
}

}  // namespace gpass::exec
