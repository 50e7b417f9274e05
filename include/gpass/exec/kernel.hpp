// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file kernel.hpp
/// Kernels: `kernel_node` (a node as a kernel sees it when a plan binds it),
/// `kernel_context<P>` (what a kernel sees when it runs), `kernel_def<P>` and
/// `kernel_registry<P>` (lookup by domain, op, opset and dtype).
///
/// A kernel is made once per node when a plan is built (`kernel_def::make(node)`, which
/// reads and checks the attributes) and then called for every run: `void(kernel_context&)`.
/// The callable is shared by concurrent runs of the plan, so it must not change its own
/// state (capture what the attributes say, by value, and nothing mutable).
/// \code
///   reg.add({.op = "Relu", .dtypes = {gpass::dtype::f32},
///            .make = [](const gpass::exec::kernel_node&) {
///              return [](auto& ctx) {
///                const auto& x = ctx.input(0);
///                auto& y = ctx.allocate_output(0, x.element_type(), x.sizes());
///                ...
///              };
///            }});
/// \endcode

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/checked.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/exec/globals.hpp>
#include <gpass/exec/policy.hpp>
#include <gpass/exec/value.hpp>

namespace gpass::exec {

class rendezvous;  // gpass/exec/rendezvous.hpp (the session's; send / recv kernels include it)
class process_group;  // gpass/exec/collectives.hpp (a data-parallel run's processes; all_reduce includes it)

/// A node as a kernel factory sees it: identity, attributes, the opset of its domain, and
/// the types inference gave its inputs and outputs (`type{}` where unknown).
struct kernel_node {
  std::string name;
  std::string op;
  std::string domain;
  attribute_map attrs;
  int opset = 0;  ///< version of the node's domain imported by the model; 0 when unknown
  std::vector<type> input_types;
  std::vector<type> output_types;
  /// Per input port, the value the input always has, when the plan knows it while binding:
  /// the `value` tensor of the `Constant` node that produces it (an initializer). Shorter
  /// than `input_types`, or an empty optional, where not known. A kernel may precompute from
  /// it (e.g. pack a weight matrix once) but must still accept any input at run time.
  std::vector<std::optional<gpass::tensor>> constant_inputs;

  std::size_t num_inputs() const noexcept { return input_types.size(); }
  /// The constant value of input `i` (see `constant_inputs`), or null.
  const gpass::tensor* constant_input(std::size_t i) const noexcept {
    return i < constant_inputs.size() && constant_inputs[i] ? &*constant_inputs[i] : nullptr;
  }
  std::size_t num_outputs() const noexcept { return output_types.size(); }
  bool has_attr(std::string_view a) const { return attrs.find(a) != attrs.end(); }
  /// Attribute `a` as `T`, or `fallback` when absent; a value of another kind is an error
  /// naming the node.
  template <class T>
  T attr(std::string_view a, T fallback) const {
    auto it = attrs.find(a);
    if (it == attrs.end()) return fallback;
    return attr_as<T>(it->second, a);
  }
  /// Attribute `a` as `T`; absent is an error naming the node.
  template <class T>
  T attr(std::string_view a) const {
    auto it = attrs.find(a);
    if (it == attrs.end()) fail("missing attribute '" + std::string(a) + "'");
    return attr_as<T>(it->second, a);
  }
  /// Throws `gpass::error` naming this node and op.
  [[noreturn]] void fail(const std::string& message) const { throw_node_error(message, name, op); }

 private:
  template <class T>
  T attr_as(const attribute& v, std::string_view a) const {
    if constexpr (std::is_same_v<T, int> || std::is_same_v<T, std::int64_t>) {
      if (v.is<std::int64_t>()) return static_cast<T>(v.as<std::int64_t>());
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (v.is<double>()) return static_cast<T>(v.as<double>());
      if (v.is<std::int64_t>()) return static_cast<T>(v.as<std::int64_t>());
    } else if constexpr (std::is_same_v<T, std::vector<float>>) {
      if (v.is<std::vector<double>>()) {
        const auto& d = v.as<std::vector<double>>();
        return std::vector<float>(d.begin(), d.end());
      }
    } else {
      if (v.is<T>()) return v.as<T>();
    }
    fail("attribute '" + std::string(a) + "' is a " + std::string(v.kind_name()) + " (unexpected kind)");
  }
};

/// The value of a `Constant` node: its attribute `value` (a tensor), or ONNX's
/// `value_float(s)`, `value_int(s)`, `value_string(s)`; none of them fails naming the node.
inline gpass::tensor constant_attr_value(const kernel_node& n) {
  if (n.has_attr("value")) return n.attr<gpass::tensor>("value");
  if (n.has_attr("value_float")) return gpass::tensor::scalar(n.attr<float>("value_float"));
  if (n.has_attr("value_floats")) return gpass::tensor::from<float>(n.attr<std::vector<float>>("value_floats"));
  if (n.has_attr("value_int")) return gpass::tensor::scalar<std::int64_t>(n.attr<std::int64_t>("value_int"));
  if (n.has_attr("value_ints")) return gpass::tensor::from<std::int64_t>(n.attr<std::vector<std::int64_t>>("value_ints"));
  if (n.has_attr("value_string")) return gpass::tensor::scalar<std::string>(n.attr<std::string>("value_string"));
  if (n.has_attr("value_strings")) return gpass::tensor::from<std::string>(n.attr<std::vector<std::string>>("value_strings"));
  n.fail("Constant has no value attribute");
}

template <class P>
class kernel_context;

/// A bound kernel: called once per run of its node.
template <class P>
using kernel_fn = std::function<void(kernel_context<P>&)>;

/// Resource limits of a run (`plan_options::limits`, `run_kernel`): what stops a hostile
/// model before it takes the machine. 0 means no limit. A run over a limit fails with a
/// `gpass::error` naming the node, the op and the limit.
/// \code
///   std::atomic<bool> stop{false};
///   gpass::exec::plan p(g, cpu, {.limits = {.max_tensor_bytes = 1 << 30, .max_loop_iterations = 1'000'000,
///                                            .cancel = &stop}});
///   // another thread: stop = true;  -> the run throws "run cancelled" at its next kernel or iteration
/// \endcode
struct run_limits {
  /// Bytes of any one tensor a kernel makes (default 16 GiB).
  std::uint64_t max_tensor_bytes = std::uint64_t{16} << 30;
  /// Bytes alive at once in a run: the buffer arenas of the graph and the functions it is
  /// running, and the tensors kernels allocate (counted until they are freed). 0: no limit.
  std::uint64_t max_run_bytes = 0;
  /// Iterations of one loop (ONNX `Loop` and `Scan`, `while`, SequenceMap, the time steps of
  /// an RNN / LSTM / GRU). 0: no limit (TensorFlow's semantics).
  std::int64_t max_loop_iterations = 0;
  /// Nested function calls (loop bodies, branches, calls inside them); bounds the native
  /// recursion of a run, so it always has a limit (0 means the default, 128).
  int max_call_depth = 128;
  /// When set, a run checks it before every kernel and loop iteration and fails with "run
  /// cancelled" once another thread has stored true.
  const std::atomic<bool>* cancel = nullptr;
};

namespace detail {

/// Large buffers of tensors that kernels allocate outside the plan's arena (outputs whose
/// sizes the plan did not know: dynamic shapes, a batch size seen only at run time), kept
/// when freed for the next tensor of the same size class, in this run or a later one. A
/// buffer above glibc's largest mmap threshold (32 MiB) would otherwise be mapped and unmapped
/// each time, every page of it faulted in and zeroed by the kernel again (MobileNetV2 batch 8:
/// 13.6k page faults, a fifth of a run). Size classes are 64 KiB multiples; a request takes
/// the smallest kept buffer of its class or bigger, up to twice its class (a network's
/// activations come in many sizes: with buffers kept only for their own class, MobileNetV2 at
/// batch 8 peaked at 206.7 MB, now 171.0); at most `cap` bytes are kept (freed beyond that).
/// Buffers from 64 KiB up come from it. Below 1 MiB they were malloc's, which gave some of
/// them back to the system when freed (a trimmed heap, an unmapped chunk: glibc's choice,
/// depending on what else the process allocated), so a later run faulted fresh pages in: a
/// traced ResNet50 run faulted ~700 pages more than an untraced one (~150 since), its conv4
/// 1x1 256 -> 1024 layers (800 KB outputs) 1109-1229 us in it against 694-721 since.
/// Thread-safe; tensors keep it alive through their deleters.
class buffer_cache : public std::enable_shared_from_this<buffer_cache> {
 public:
  /// Buffers below this size (one size class) go straight to the allocator.
  static constexpr std::size_t min_bytes = std::size_t{1} << 16;
  explicit buffer_cache(std::size_t cap = std::size_t{1} << 30) : cap_(cap) {}
  buffer_cache(const buffer_cache&) = delete;
  buffer_cache& operator=(const buffer_cache&) = delete;
  ~buffer_cache() {
    for (auto& [n, p] : free_) ::operator delete[](p, std::align_val_t{64});
  }
  /// The size class of a request: the least a buffer `take` returns for it holds.
  static std::size_t size_class(std::size_t bytes) { return (bytes + granule - 1) / granule * granule; }
  /// A buffer and its size (a size class).
  struct block {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
  };
  /// A 64-byte aligned buffer of at least `size_class(bytes)` bytes, at most twice that
  /// (contents unspecified).
  block take(std::size_t bytes) {
    const std::size_t n = size_class(bytes);
    {
      std::lock_guard<std::mutex> lock(m_);
      if (auto it = free_.lower_bound(n); it != free_.end() && it->first / 2 <= n) {
        const block b{it->second, it->first};
        free_.erase(it);
        kept_ -= b.bytes;
        return b;
      }
    }
    return {static_cast<std::byte*>(::operator new[](n, std::align_val_t{64})), n};
  }
  /// Takes back a block of `take`.
  void give(block b) noexcept {
    std::byte* p = b.data;
    const std::size_t n = b.bytes;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (kept_ + n <= cap_) {
        try {
          free_.emplace(n, p);
          kept_ += n;
          return;
        } catch (...) {  // no memory for the entry: free the buffer instead
        }
      }
    }
    ::operator delete[](p, std::align_val_t{64});
  }
  /// Bytes held for reuse now.
  std::size_t kept() const {
    std::lock_guard<std::mutex> lock(m_);
    return kept_;
  }

 private:
  static constexpr std::size_t granule = std::size_t{1} << 16;
  mutable std::mutex m_;
  std::multimap<std::size_t, std::byte*> free_;
  std::size_t kept_ = 0, cap_;
};

/// The accounting of one run against its `run_limits`, shared by the calls nested in it.
/// Live bytes are counted by a shared counter that tensors allocated by kernels decrement
/// when they are freed, which may be after the run.
class run_budget {
 public:
  explicit run_budget(const run_limits& l)
      : limits_(l), live_(l.max_run_bytes ? std::make_shared<std::atomic<std::uint64_t>>(0) : nullptr) {}
  /// Part of a run accounted elsewhere too (a session runs one step as several partitions,
  /// on several threads): the live-bytes counter is shared, calls start at `depth`.
  run_budget(const run_limits& l, std::shared_ptr<std::atomic<std::uint64_t>> live, int depth)
      : limits_(l), live_(l.max_run_bytes ? std::move(live) : nullptr), depth_(depth) {}
  /// Calls entered and not left.
  int depth() const noexcept { return depth_; }

  const run_limits& limits() const noexcept { return limits_; }
  /// Throws "run cancelled" once the cancellation flag is set.
  void check_cancelled() const {
    if (limits_.cancel && limits_.cancel->load(std::memory_order_relaxed)) throw error("run cancelled");
  }
  /// Checks one tensor of `bytes` against `max_tensor_bytes`.
  void check_tensor(std::size_t bytes) const {
    if (limits_.max_tensor_bytes && bytes > limits_.max_tensor_bytes)
      throw error("a tensor of " + std::to_string(bytes) + " bytes is over the limit of " +
                  std::to_string(limits_.max_tensor_bytes) + " bytes per tensor (max_tensor_bytes)");
  }
  /// Counts `bytes` more as alive; throws (counting nothing) when that is over `max_run_bytes`.
  void charge(std::size_t bytes) {
    if (!live_) return;
    const std::uint64_t before = live_->fetch_add(bytes, std::memory_order_relaxed);
    if (before + bytes > limits_.max_run_bytes) {
      live_->fetch_sub(bytes, std::memory_order_relaxed);
      throw error("the run needs more than " + std::to_string(limits_.max_run_bytes) + " bytes alive at once (" +
                  std::to_string(before) + " in use, " + std::to_string(bytes) + " more asked; max_run_bytes)");
    }
  }
  void refund(std::size_t bytes) noexcept {
    if (live_) live_->fetch_sub(bytes, std::memory_order_relaxed);
  }
  /// The live-bytes counter (null without `max_run_bytes`), for deleters that outlive the run.
  const std::shared_ptr<std::atomic<std::uint64_t>>& live() const noexcept { return live_; }
  /// Enters a function call; throws when that is deeper than `max_call_depth`.
  void enter_call(std::string_view function) {
    const int cap = limits_.max_call_depth > 0 ? limits_.max_call_depth : 128;
    if (depth_ >= cap)
      throw error("calling function '" + std::string(function) + "' nests calls deeper than " + std::to_string(cap) +
                  " levels (max_call_depth; a function that calls itself?)");
    ++depth_;
  }
  void leave_call() noexcept { --depth_; }

 private:
  run_limits limits_;
  std::shared_ptr<std::atomic<std::uint64_t>> live_;
  int depth_ = 0;
};

/// Receives the start and end of every kernel a traced run executes (the session's step
/// statistics). Called from the threads running the kernels, concurrently.
struct kernel_recorder {
  virtual ~kernel_recorder() = default;
  virtual void record(const kernel_node& n, std::chrono::steady_clock::time_point start,
                      std::chrono::steady_clock::time_point end) = 0;
};

/// What a kernel context needs from the running plan (implemented by `plan`, and by the
/// session for the partitions it runs).
template <class P>
struct run_services {
  virtual ~run_services() = default;
  /// Runs function `name` of the graph's library on `args`; returns its results.
  virtual std::vector<basic_value<typename P::tensor_type>> call(std::string_view name,
                                                                  std::vector<basic_value<typename P::tensor_type>> args) const = 0;
  /// The globals of the running plan (`get_global` / `set_global`); null when there are none
  /// (a kernel run on its own by `run_kernel`).
  virtual global_store* run_globals() const { return nullptr; }
  /// The accounting of the run against its limits; null when it has none.
  virtual run_budget* budget() const { return nullptr; }
  /// Where `send` / `recv` exchange tensors in this run; null outside a session.
  virtual rendezvous* run_rendezvous() const { return nullptr; }
  /// The other processes of a data-parallel run (`all_reduce` across ranks); null when the
  /// run has none.
  virtual process_group* run_process_group() const { return nullptr; }
  /// The frame the kernels run in (part of every rendezvous key; see `rendezvous_key`).
  virtual std::string_view run_frame() const { return {}; }
  /// Receives kernel timings when the run is traced; null otherwise.
  virtual kernel_recorder* recorder() const { return nullptr; }
  /// Keeps large unplanned buffers for reuse across runs; null: allocate each one. The cache
  /// must be owned by a `std::shared_ptr` (the tensors it lends keep it alive).
  virtual buffer_cache* buffers() const { return nullptr; }
};

/// A planned buffer for an output: `size` bytes at `offset` in the run's arena.
struct planned_buffer {
  std::size_t offset = 0;
  std::size_t size = 0;  ///< 0: not planned (allocated at run time)
};
}  // namespace detail

/// What a kernel sees while it runs: its inputs, its outputs, the policy (thread pool,
/// streams) and the node. Inputs are never written. Errors thrown from a kernel get the
/// node's name and op attached by the plan.
template <class P>
class kernel_context {
 public:
  using tensor_type = typename P::tensor_type;
  using value_type = basic_value<tensor_type>;

  /// Built by the plan for each step of a run.
  kernel_context(const kernel_node& node, P& policy, typename P::stream_type& stream,
                 std::span<const value_type* const> inputs, std::span<value_type> outputs,
                 std::span<const detail::planned_buffer> planned, const std::shared_ptr<std::byte[]>* arena,
                 std::span<const char> wanted, const detail::run_services<P>* services)
      : node_(&node), policy_(&policy), stream_(&stream), inputs_(inputs), outputs_(outputs),
        planned_(planned), arena_(arena), wanted_(wanted), services_(services) {}

  const kernel_node& node() const noexcept { return *node_; }
  P& policy() const noexcept { return *policy_; }
  typename P::stream_type& stream() const noexcept { return *stream_; }

  std::size_t num_inputs() const noexcept { return inputs_.size(); }
  /// True when input `i` exists, is connected, and is not an absent optional.
  bool has_input(std::size_t i) const noexcept {
    return i < inputs_.size() && inputs_[i] != nullptr && !inputs_[i]->is_none();
  }
  /// Input `i` as a value (a `none` value when omitted).
  const value_type& input_value(std::size_t i) const {
    static const value_type none{};
    if (i >= inputs_.size() || inputs_[i] == nullptr) return none;
    return *inputs_[i];
  }
  /// Input `i` as a tensor; an omitted input or a sequence is an error naming the node.
  const tensor_type& input(std::size_t i) const {
    if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
    if (!inputs_[i]->is_tensor()) fail("input " + std::to_string(i) + " is a " + inputs_[i]->kind_name() + ", not a tensor");
    return inputs_[i]->tensor();
  }

  std::size_t num_outputs() const noexcept { return outputs_.size(); }
  /// False when nothing consumes output `i` (a kernel may skip computing an optional output).
  bool output_wanted(std::size_t i) const noexcept { return i < wanted_.size() && wanted_[i]; }

  /// Output `i` as a new tensor of `t` and `sizes` whose contents are unspecified: the kernel
  /// must write every element. Uses the buffer the plan reserved for it when the sizes
  /// match the plan's, otherwise allocates.
  tensor_type& allocate_output(std::size_t i, dtype t, std::vector<std::int64_t> sizes) {
    check_output(i);
    std::size_t need = 0;
    try {
      for (auto s : sizes)
        if (s < 0) throw error("output " + std::to_string(i) + " has a negative size " + std::to_string(s));
      need = bytes_or_throw(num_elements(sizes), t == dtype::string ? sizeof(std::string) : size_of(t));
      if (detail::run_budget* b = budget()) b->check_tensor(need);
    } catch (const error& e) {
      fail(e.message());
    }
    if constexpr (std::is_same_v<tensor_type, gpass::tensor>) {
      if (i < planned_.size() && planned_[i].size != 0 && arena_ && t != dtype::string) {
        if (need != 0 && need <= planned_[i].size) {
          std::shared_ptr<std::byte[]> view(*arena_, arena_->get() + planned_[i].offset);
          outputs_[i] = gpass::tensor::wrap(t, std::move(sizes), std::move(view));
          return outputs_[i].tensor();
        }
      }
      // large buffers from the run's cache (kept for reuse when freed); any buffer counted
      // against max_run_bytes while alive: the deleter gives the bytes back, even after the run
      detail::run_budget* b = budget();
      std::shared_ptr<std::atomic<std::uint64_t>> live = b ? b->live() : nullptr;
      detail::buffer_cache* cache = services_ && need >= detail::buffer_cache::min_bytes ? services_->buffers() : nullptr;
      if ((cache || live) && t != dtype::string && is_trivial(t) && need != 0) {
        if (live) {
          try {
            b->charge(need);
          } catch (const error& e) {
            fail(e.message());
          }
        }
        detail::buffer_cache::block got;
        try {
          got = cache ? cache->take(need)
                      : detail::buffer_cache::block{static_cast<std::byte*>(::operator new[](need, std::align_val_t{64})), need};
        } catch (...) {
          if (live) b->refund(need);
          throw;
        }
        std::shared_ptr<detail::buffer_cache> keep = cache ? cache->shared_from_this() : nullptr;
        std::shared_ptr<std::byte[]> buf(got.data, [keep = std::move(keep), live, need, got](std::byte* q) {
          if (keep) keep->give({q, got.bytes});
          else ::operator delete[](q, std::align_val_t{64});
          if (live) live->fetch_sub(need, std::memory_order_relaxed);
        });
        outputs_[i] = gpass::tensor::wrap(t, std::move(sizes), std::move(buf));
        return outputs_[i].tensor();
      }
    }
    outputs_[i] = policy_->allocate_tensor(t, std::move(sizes), *stream_);
    return outputs_[i].tensor();
  }
  /// Output `i` as the kernel made it (after `allocate_output`), to be finished in place.
  tensor_type& output(std::size_t i) {
    check_output(i);
    if (!outputs_[i].is_tensor()) fail("output " + std::to_string(i) + " is not a tensor yet");
    return outputs_[i].tensor();
  }
  /// Like `allocate_output`, with every element zero (false, "").
  tensor_type& allocate_output_zeroed(std::size_t i, dtype t, std::vector<std::int64_t> sizes) {
    auto& r = allocate_output(i, t, std::move(sizes));
    policy_->fill_zero(r, *stream_);
    return r;
  }
  /// Sets output `i` to `v` (a tensor made by the kernel, a view of an input, a sequence).
  void set_output(std::size_t i, value_type v) {
    check_output(i);
    outputs_[i] = std::move(v);
  }

  /// Runs function `name` of the graph's library (a loop body, a branch) on `args` (its
  /// formal inputs, then the captures the importer made explicit) and returns its results.
  std::vector<value_type> call(std::string_view name, std::vector<value_type> args) const {
    if (!services_) fail("cannot call function '" + std::string(name) + "' here");
    return services_->call(name, std::move(args));
  }

  /// The globals of the running plan (`get_global` / `set_global`, see `global_store`);
  /// fails naming the node when the kernel runs outside a plan (`run_kernel`).
  global_store& globals() const {
    global_store* g = services_ ? services_->run_globals() : nullptr;
    if (!g) fail("no globals here (the kernel runs outside a plan)");
    return *g;
  }

  /// The rendezvous of the running session step (`send` / `recv`); fails naming the node
  /// outside a session.
  rendezvous& step_rendezvous() const {
    rendezvous* r = services_ ? services_->run_rendezvous() : nullptr;
    if (!r) fail("no rendezvous here (send and recv run only in a session's partitions)");
    return *r;
  }
  /// The processes of a data-parallel run (MPI ranks), or null: the run is one process.
  process_group* step_process_group() const { return services_ ? services_->run_process_group() : nullptr; }
  /// The frame this kernel runs in (see `rendezvous_key`); empty outside a session.
  std::string_view frame() const { return services_ ? services_->run_frame() : std::string_view{}; }
  /// The run's cancellation flag, or null.
  const std::atomic<bool>* cancel_flag() const {
    detail::run_budget* b = budget();
    return b ? b->limits().cancel : nullptr;
  }
  /// `v` with every tensor that lives in this run's buffer arena copied out of it (a value
  /// that must outlive its slot: a sent tensor, a stored global).
  value_type detached(value_type v) const {
    if constexpr (std::is_same_v<tensor_type, gpass::tensor>) {
      if (!arena_ || !*arena_) return v;
      const auto& arena = *arena_;
      auto inside = [&](const gpass::tensor& t) {  // shares the arena's ownership: a view into it
        return !t.buffer().owner_before(arena) && !arena.owner_before(t.buffer());
      };
      if (v.is_tensor() && inside(v.tensor())) v = v.tensor().clone();
      else if (v.is_sequence())
        for (auto& t : v.sequence())
          if (inside(t)) t = t.clone();
    }
    return v;
  }

  /// Throws `gpass::error` naming the node and op.
  [[noreturn]] void fail(const std::string& message) const { node_->fail(message); }

  /// Called by loop kernels before iteration `iteration` (0-based): fails when the run was
  /// cancelled or the loop would run more than `run_limits::max_loop_iterations` times.
  void check_iteration(std::int64_t iteration) const {
    detail::run_budget* b = budget();
    if (!b) return;
    try {
      b->check_cancelled();
    } catch (const error& e) {
      fail(e.message());
    }
    const std::int64_t cap = b->limits().max_loop_iterations;
    if (cap > 0 && iteration >= cap)
      fail("the loop runs more than " + std::to_string(cap) + " iterations (max_loop_iterations)");
  }
  /// The run's limits and accounting (null outside a plan with limits).
  detail::run_budget* budget() const { return services_ ? services_->budget() : nullptr; }

 private:
  void check_output(std::size_t i) const {
    if (i >= outputs_.size())
      fail("output " + std::to_string(i) + " out of range (" + std::to_string(outputs_.size()) + " outputs)");
  }

  const kernel_node* node_;
  P* policy_;
  typename P::stream_type* stream_;
  std::span<const value_type* const> inputs_;
  std::span<value_type> outputs_;
  std::span<const detail::planned_buffer> planned_;
  const std::shared_ptr<std::byte[]>* arena_;
  std::span<const char> wanted_;
  const detail::run_services<P>* services_;
};

/// What the placer knows of a node when it asks whether a device's kernels serve it: op,
/// attributes, and the element types inference gave its inputs and outputs
/// (`dtype::undefined` where unknown).
struct kernel_query {
  std::string_view domain;
  std::string_view op;
  const attribute_map* attrs = nullptr;
  std::vector<dtype> inputs;
  std::vector<dtype> outputs;
};

/// A kernel definition: which nodes it serves and how to make the callable for one node.
template <class P>
struct kernel_def {
  std::string domain;          ///< op domain ("" for the default ONNX / gpass domain)
  std::string op;              ///< op name
  int since_version = 1;       ///< first opset of the domain it implements
  std::vector<dtype> dtypes;   ///< element types of input `type_input` it accepts; empty: any
  int type_input = 0;          ///< the input whose dtype selects the kernel (-1: output 0)
  int alias_input = -1;        ///< output 0 may share the buffer of this input (Reshape, Identity)
  std::function<kernel_fn<P>(const kernel_node&)> make;  ///< builds the kernel of one node
  /// Whether the kernel serves a node of these attributes and types beyond its op and dtype
  /// (a GPU kernel that has no training mode, no reduction but 'none'); null: every node.
  /// The placer asks, so that such a node goes to a device that serves it.
  std::function<bool(const kernel_query&)> applies = nullptr;
};

/// Kernels of one policy, by (domain, op): for a node, the definition with the highest
/// `since_version` not above the node's opset whose dtype list accepts the node's type.
template <class P>
class kernel_registry {
 public:
  /// Adds a definition (several per op: by opset range or dtype).
  void add(kernel_def<P> def) {
    if (!def.make) throw error("kernel_registry: kernel for '" + def.op + "' has no factory");
    defs_[{def.domain, def.op}].push_back(std::move(def));
  }

  /// True when some kernel serves (domain, op) at some opset.
  bool has(std::string_view domain, std::string_view op) const {
    return defs_.find(std::pair<std::string, std::string>(domain, op)) != defs_.end();
  }

  /// True when some definition of (domain, op) serves a node like `q`: its dtype list accepts
  /// the type of its type-selecting input (or output 0) where known, and its `applies`
  /// predicate, if any, agrees.
  bool serves(const kernel_query& q) const {
    auto it = defs_.find(std::pair<std::string, std::string>(q.domain, q.op));
    if (it == defs_.end()) return false;
    for (const auto& d : it->second) {
      dtype t = dtype::undefined;
      if (d.type_input >= 0 && static_cast<std::size_t>(d.type_input) < q.inputs.size()) t = q.inputs[static_cast<std::size_t>(d.type_input)];
      else if (d.type_input < 0 && !q.outputs.empty()) t = q.outputs.front();
      if (t != dtype::undefined && !d.dtypes.empty() && std::find(d.dtypes.begin(), d.dtypes.end(), t) == d.dtypes.end()) continue;
      if (d.applies && !d.applies(q)) continue;
      return true;
    }
    return false;
  }

  /// The definition for a node of (domain, op) at `opset` (0: newest) whose type-selecting
  /// input has dtype `t` (`dtype::undefined`: not known yet, any definition); null if none.
  const kernel_def<P>* find(std::string_view domain, std::string_view op, int opset, dtype t) const {
    auto it = defs_.find(std::pair<std::string, std::string>(domain, op));
    if (it == defs_.end()) return nullptr;
    const kernel_def<P>* best = nullptr;
    for (const auto& d : it->second) {
      if (opset > 0 && d.since_version > opset) continue;
      if (t != dtype::undefined && !d.dtypes.empty() && std::find(d.dtypes.begin(), d.dtypes.end(), t) == d.dtypes.end())
        continue;
      if (!best || d.since_version > best->since_version) best = &d;
    }
    return best;
  }

  /// Every (domain, op) served, sorted.
  std::vector<std::pair<std::string, std::string>> ops() const {
    std::vector<std::pair<std::string, std::string>> r;
    for (const auto& [k, v] : defs_) r.push_back(k);
    return r;
  }

 private:
  std::map<std::pair<std::string, std::string>, std::vector<kernel_def<P>>, std::less<>> defs_;
};

}  // namespace gpass::exec

namespace gpass::exec {

/// Runs the kernel `registry` has for `node` once on `inputs` (one value per input port; a
/// `none` value for an omitted one) and returns its outputs. The one-node evaluation that
/// constant folding and kernel tests use; plans bind kernels once instead.
/// \code
///   gpass::exec::eigen_cpu cpu;
///   gpass::exec::kernel_node n{.name = "r", .op = "Relu", .input_types = {t}, .output_types = {t}};
///   auto out = gpass::exec::run_kernel(cpu, cpu.kernels(), n, {x});
/// \endcode
namespace detail {
/// The services of a kernel run on its own: limits, no functions, no globals.
template <class P>
struct lone_kernel_services final : run_services<P> {
  explicit lone_kernel_services(const run_limits& l) : limits(l) {}
  std::vector<basic_value<typename P::tensor_type>> call(std::string_view name,
                                                         std::vector<basic_value<typename P::tensor_type>>) const override {
    throw error("cannot call function '" + std::string(name) + "' here (the kernel runs outside a plan)");
  }
  run_budget* budget() const override { return &limits; }
  mutable run_budget limits;
};
}  // namespace detail

/// `limits` bound what the kernel may allocate (constant folding runs kernels on constants
/// a model chose).
template <class P>
std::vector<basic_value<typename P::tensor_type>> run_kernel(P& policy, const kernel_registry<P>& registry,
                                                             const kernel_node& node,
                                                             std::vector<basic_value<typename P::tensor_type>> inputs,
                                                             const run_limits& limits = {}) {
  using value_type = basic_value<typename P::tensor_type>;
  kernel_node n = node;
  if (n.input_types.size() < inputs.size()) n.input_types.resize(inputs.size());
  if (n.output_types.empty()) n.output_types.resize(1);
  dtype t = dtype::undefined;
  // the dtype of the first tensor input selects among the definitions (kernels check the rest)
  for (const auto& v : inputs)
    if (v.is_tensor()) {
      t = v.tensor().element_type();
      break;
    }
  const kernel_def<P>* def = registry.find(n.domain, n.op, n.opset, dtype::undefined);
  if (!def) n.fail("no " + std::string(P::name) + " kernel for op '" + n.op + "'" + (n.domain.empty() ? "" : " of domain '" + n.domain + "'"));
  if (def->type_input >= 0 && static_cast<std::size_t>(def->type_input) < inputs.size() && inputs[def->type_input].is_tensor())
    t = inputs[def->type_input].tensor().element_type();
  def = registry.find(n.domain, n.op, n.opset, t);
  if (!def) n.fail("no " + std::string(P::name) + " kernel for op '" + n.op + "' on " + std::string(to_string(t)));
  kernel_fn<P> fn = def->make(n);
  std::vector<const value_type*> in(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) in[i] = inputs[i].is_none() ? nullptr : &inputs[i];
  std::vector<value_type> out(n.num_outputs());
  std::vector<char> wanted(n.num_outputs(), 1);
  auto stream = policy.make_stream();
  const detail::lone_kernel_services<P> services(limits);
  kernel_context<P> ctx(n, policy, stream, in, out, {}, nullptr, wanted, &services);
  try {
    fn(ctx);
  } catch (const error& e) {
    throw e.with_node(n.name, n.op);
  } catch (const std::exception& e) {
    throw error(std::string("kernel failed: ") + e.what(), error_context{.node = n.name, .op = n.op});
  }
  policy.synchronize(stream);
  return out;
}

}  // namespace gpass::exec
