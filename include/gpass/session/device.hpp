// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file device.hpp
/// The devices of a session: `session_device<G>` (what the placer and the partitioned run
/// need of a device), `policy_device<P, G>` (a device backed by an executor policy, one
/// policy object, and so one thread pool or GPU context, per device) and `cpu_devices`.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/exec/collectives.hpp>
#include <gpass/exec/globals.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/exec/rendezvous.hpp>
#include <gpass/exec/transport.hpp>
#include <gpass/exec/value.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/session/device_name.hpp>
#include <gpass/session/partition.hpp>
#include <gpass/session/step_stats.hpp>

namespace gpass {

template <class G>
class step_context;

/// A device's compiled parts of one signature: its part of the main graph and of every
/// function it runs a part of.
template <class G>
class device_part {
 public:
  virtual ~device_part() = default;
  /// Runs the main part on its feeds (host values, `partitioned_program::feeds` order) and
  /// returns its fetches (host values).
  virtual std::vector<exec::value> run_main(std::vector<exec::value> args, step_context<G>& step) const = 0;
  /// Runs this device's part of one call of `function` that another device (its home)
  /// makes, in `frame`.
  virtual void run_remote(const std::string& function, const std::string& frame, int depth, step_context<G>& step) const = 0;
};

/// A device of a session. Concurrent calls of every member are safe.
template <class G>
class session_device {
 public:
  explicit session_device(device_name name) : name_(std::move(name)) {}
  virtual ~session_device() = default;
  /// The full name (`/job:localhost/replica:0/task:0/device:CPU:0`).
  const device_name& name() const noexcept { return name_; }
  /// Whether the device has a kernel for `op` (the placer asks).
  virtual bool supports(std::string_view domain, std::string_view op) const = 0;
  /// Whether the device holds tensors of element type `t` (the placer keeps nodes that read
  /// or make other types elsewhere); every type unless a device says otherwise.
  virtual bool holds(dtype) const { return true; }
  /// Whether the device's kernels serve a node like `q` (attributes and types too); by
  /// default `supports(q.domain, q.op)`.
  virtual bool serves(const exec::kernel_query& q) const { return supports(q.domain, q.op); }
  /// Whether the device computes on the element types of a node like `q` (part of `serves`;
  /// the placer also asks it alone, see `placement_device::serves_types`); every node unless
  /// a device says otherwise.
  virtual bool serves_types(const exec::kernel_query&) const { return true; }
  /// Compiles `part` (one of `partition`'s graphs; `has_main`: its main graph has nodes).
  virtual std::unique_ptr<device_part<G>> compile(const G& part, bool has_main, const exec::plan_options& opt,
                                                  std::size_t device_index) const = 0;
  /// The process that runs the device's parts, as the session's `transport` numbers them;
  /// -1: this process (every device but a `remote_device`).
  virtual int process() const noexcept { return -1; }

 private:
  device_name name_;
};

/// A device of another process of the session (`/job:worker/replica:0/task:1/device:CPU:0`
/// seen from task 0): the placer places nodes on it as on a device like `like` (its kernels,
/// its types), and the session sends the values its parts need to process `process` and
/// receives theirs, through the session's `transport`. Its parts are compiled and run there.
/// \code
///   auto mine = gpass::cpu_devices<G>(1);   // or any device of this process
///   auto theirs = std::make_shared<gpass::remote_device<G>>(
///       gpass::parse_device_name("/job:worker/replica:0/task:1/device:CPU:0"), 1, mine[0]);
/// \endcode
template <class G>
class remote_device final : public session_device<G> {
 public:
  remote_device(device_name name, int process, std::shared_ptr<const session_device<G>> like)
      : session_device<G>(std::move(name)), process_(process), like_(std::move(like)) {
    if (process_ < 0) throw error("remote_device '" + this->name().to_string() + "': process must be >= 0");
    if (!like_) throw error("remote_device '" + this->name().to_string() + "': needs a device to describe its kernels");
  }
  bool supports(std::string_view domain, std::string_view op) const override { return like_->supports(domain, op); }
  bool holds(dtype t) const override { return like_->holds(t); }
  bool serves(const exec::kernel_query& q) const override { return like_->serves(q); }
  bool serves_types(const exec::kernel_query& q) const override { return like_->serves_types(q); }
  int process() const noexcept override { return process_; }
  std::unique_ptr<device_part<G>> compile(const G&, bool, const exec::plan_options&, std::size_t) const override {
    return std::make_unique<elsewhere>(this->name().to_string(), process_);
  }

 private:
  // the part of a remote device in this process: never run here
  class elsewhere final : public device_part<G> {
   public:
    elsewhere(std::string name, int process) : name_(std::move(name)), process_(process) {}
    std::vector<exec::value> run_main(std::vector<exec::value>, step_context<G>&) const override {
      fail();
      return {};
    }
    void run_remote(const std::string&, const std::string&, int, step_context<G>&) const override { fail(); }

   private:
    [[noreturn]] void fail() const {
      throw error("device '" + name_ + "' runs in process " + std::to_string(process_) + ", not in this one");
    }
    std::string name_;
    int process_;
  };
  int process_;
  std::shared_ptr<const session_device<G>> like_;
};

namespace detail {

/// `cv.wait(lock, ready)`, after looking at `ready` for `spin` first (lock released between
/// looks): the waits of a step are usually microseconds long, and waking a thread through a
/// condition variable costs tens of microseconds on a busy machine.
template <class Ready>
void wait_spinning(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, std::chrono::microseconds spin,
                   Ready ready) {
  const auto until = std::chrono::steady_clock::now() + spin;
  while (!ready() && std::chrono::steady_clock::now() < until) {
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  cv.wait(lock, ready);
}

}  // namespace detail

/// A pool of threads that grows when every thread is busy, so a task never waits for
/// another task to finish (the partitions of a step block on each other's sends).
class elastic_pool {
 public:
  elastic_pool() = default;
  elastic_pool(const elastic_pool&) = delete;
  elastic_pool& operator=(const elastic_pool&) = delete;
  ~elastic_pool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void submit(std::function<void()> f) {
    std::unique_lock lock(mu_);
    queue_.push_back(std::move(f));
    if (idle_ < queue_.size()) {
      threads_.emplace_back([this] { work(); });
    } else {
      lock.unlock();
      cv_.notify_one();
    }
  }
  std::size_t threads() const {
    std::lock_guard lock(mu_);
    return threads_.size();
  }

 private:
  void work() {
    std::unique_lock lock(mu_);
    for (;;) {
      ++idle_;
      // a step submits its parts back to back: stay awake a little before sleeping
      detail::wait_spinning(lock, cv_, std::chrono::microseconds(100), [&] { return stop_ || !queue_.empty(); });
      --idle_;
      if (queue_.empty()) return;  // stopping
      auto f = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      f();
      lock.lock();
    }
  }
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;
  bool stop_ = false;
};

/// The processes of a session whose devices span processes (see `exec::transport`): made
/// once by the session, read by each of its steps.
struct step_cluster {
  exec::transport* transport = nullptr;
  std::vector<int> process_of;            ///< per device (session index): its process, -1 this one
  std::vector<std::string> device_names;  ///< per device: its full name
  std::map<std::string, int, std::less<>> remote;  ///< the devices of other processes: name -> process
  /// Adds the next device (session order).
  void add(std::string name, int process) {
    if (process >= 0) remote.emplace(name, process);
    process_of.push_back(process);
    device_names.push_back(std::move(name));
  }
};

namespace detail {
/// Tells every other process of `t` that step `step` ended here (`finished`) or failed
/// (`abort`, `text` the reason). A process that cannot be told of an abort is passed over
/// (the step fails anyway, and it ends on its own); not reaching one with `finished` throws.
inline void tell_other_processes(exec::transport& t, std::uint64_t step, exec::transport_message::kind k, const std::string& text) {
  for (int p = 0; p < t.size(); ++p) {
    if (p == t.rank()) continue;
    exec::transport_message m;
    m.what = k;
    m.step = step;
    m.text = text;
    try {
      t.post(p, std::move(m));
    } catch (const std::exception&) {
      if (k == exec::transport_message::kind::finished) throw;
    }
  }
}
}  // namespace detail

/// One step (one `session::run`): its rendezvous, its globals and limits, its first error,
/// the kernel timings when traced, and the way to start the parts of a call on other devices.
/// In a session over several processes (`cluster`), it is also the step's end of the
/// transport: values for devices of other processes leave through it, theirs arrive in its
/// rendezvous, calls of functions with parts here start here, and an abort in any process
/// aborts the step in every one.
template <class G>
class step_context final : public exec::rendezvous_router, public exec::step_endpoint {
 public:
  step_context(const std::vector<std::unique_ptr<device_part<G>>>& parts, const partitioned_program<G>& prog,
               elastic_pool& pool, exec::global_store& globals, const exec::run_limits& limits, bool trace,
               std::chrono::steady_clock::time_point epoch, exec::process_group* processes = nullptr,
               const step_cluster* cluster = nullptr, std::uint64_t step = 0)
      : parts_(parts), prog_(prog), pool_(pool), globals_(globals), limits_(limits), trace_(trace), epoch_(epoch),
        processes_(processes), cluster_(cluster), step_(step), live_(std::make_shared<std::atomic<std::uint64_t>>(0)),
        stats_(parts.size()) {
    if (cluster_) {
      rendezvous_.set_router(this);
      remote_calls_ = std::make_unique<join_set>(*this);
      cluster_->transport->attach(step_, this);
    }
  }
  step_context(const step_context&) = delete;
  step_context& operator=(const step_context&) = delete;
  ~step_context() override {
    if (cluster_) {
      remote_calls_->wait();
      cluster_->transport->detach(step_);
    }
  }

  exec::rendezvous& rendezvous() noexcept { return rendezvous_; }
  exec::global_store& globals() noexcept { return globals_; }
  /// The other processes of a data-parallel run (`session_options::processes`), or null.
  exec::process_group* processes() const noexcept { return processes_; }
  const exec::run_limits& limits() const noexcept { return limits_; }
  const std::shared_ptr<std::atomic<std::uint64_t>>& live() const noexcept { return live_; }
  bool tracing() const noexcept { return trace_; }
  /// A fresh number for a call frame.
  std::uint64_t next_call() noexcept { return calls_.fetch_add(1, std::memory_order_relaxed); }
  const typename partitioned_program<G>::function_parts* function(std::string_view name) const {
    auto it = prog_.functions.find(name);
    return it == prog_.functions.end() ? nullptr : &it->second;
  }
  const device_part<G>& part(std::size_t d) const { return *parts_[d]; }
  /// Whether device `d` runs in this process.
  bool local(std::size_t d) const noexcept { return !cluster_ || cluster_->process_of[d] < 0; }

  /// Records the first failure of the step and aborts its rendezvous, so every partition
  /// waiting on a `recv` stops; in a session over several processes, the others are told.
  void fail(std::exception_ptr e) {
    std::string msg = "the step was aborted";
    std::string what = "unknown error";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
      msg = std::string("the step was aborted: ") + x.what();
    } catch (...) {
    }
    bool first = false;
    {
      std::lock_guard lock(mu_);
      if (!error_) {
        error_ = e;
        first = true;
      }
    }
    rendezvous_.abort(std::move(msg));
    if (first && cluster_) tell_others(exec::transport_message::kind::abort, what);
  }
  /// Throws the step's first failure, if any.
  void rethrow_if_failed() {
    std::exception_ptr e;
    {
      std::lock_guard lock(mu_);
      e = error_;
    }
    if (e) std::rethrow_exception(e);
  }

  /// Runs the part of `function` on device `d`, of another process, for the call in `frame`:
  /// asks that process to, and waits until it has.
  void call_remote(std::size_t d, const std::string& function, const std::string& frame, int depth) {
    exec::transport_message m;
    m.what = exec::transport_message::kind::call;
    m.step = step_;
    m.text = function;
    m.frame = frame;
    m.depth = depth;
    m.device = static_cast<std::int64_t>(d);
    cluster_->transport->post(cluster_->process_of[d], std::move(m));
    (void)rendezvous_.recv(call_done_key(d, function, frame), limits_.cancel);
  }

  /// The values of a fetch computed by device `d` go to every other process.
  void share_fetch(std::size_t d, std::size_t j, const exec::value& v) {
    for (int p = 0; p < cluster_->transport->size(); ++p)
      if (p != cluster_->transport->rank()) post_value(p, fetch_key(d, j), v);
  }
  /// The value of fetch `j` of device `d` of another process (after `finish`).
  exec::value remote_fetch(std::size_t d, std::size_t j) { return rendezvous_.recv(fetch_key(d, j)); }

  /// Ends this process's part of the step: tells the others, waits until every other process
  /// has ended its part and the calls they made here are done.
  void finish() {
    tell_others(exec::transport_message::kind::finished, {});
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return finished_ + 1 >= cluster_->transport->size(); });
    }
    remote_calls_->wait();
  }

  // a value sent to a device of another process
  bool forward(const std::string& key, exec::value& v) override {
    auto it = cluster_->remote.find(exec::rendezvous_recv_device(key));
    if (it == cluster_->remote.end()) return false;
    post_value(it->second, key, std::move(v));
    return true;
  }

  // a recv waits for a value: one from another process keeps the transport polling
  void waiting(std::string_view key, bool begins) override {
    if (cluster_->remote.find(exec::rendezvous_send_device(key)) != cluster_->remote.end())
      cluster_->transport->awaiting(begins);
  }

  // a message of this step from another process (not blocking, not posting)
  void receive(exec::transport_message m) override {
    using kind = exec::transport_message::kind;
    try {
      switch (m.what) {
        case kind::value: rendezvous_.send(m.text, std::move(m.v)); break;
        case kind::abort: {
          bool first = false;
          {
            std::lock_guard lock(mu_);
            if (!error_) {
              error_ = std::make_exception_ptr(error("process " + std::to_string(m.from) + " failed the step: " + m.text));
              first = true;
            }
          }
          if (first) rendezvous_.abort("the step was aborted: process " + std::to_string(m.from) + " failed it: " + m.text);
          break;
        }
        case kind::call: {
          const auto d = static_cast<std::size_t>(m.device);
          if (m.device < 0 || d >= parts_.size() || !local(d))
            throw error("process " + std::to_string(m.from) + " asks for a part of function '" + m.text + "' on device " +
                        std::to_string(m.device) + ", not one of this process");
          remote_calls_->spawn([this, d, from = m.from, fn = std::move(m.text), frame = std::move(m.frame),
                                depth = static_cast<int>(m.depth)] {
            parts_[d]->run_remote(fn, frame, depth, *this);
            post_value(from, call_done_key(d, fn, frame), exec::value{});
          });
          break;
        }
        case kind::finished: {
          std::lock_guard lock(mu_);
          ++finished_;
          cv_.notify_all();
          break;
        }
      }
    } catch (...) {
      // (a value sent twice, a call of no part here: the step fails; told to the others
      // from a pool thread, since a receiver must not post)
      auto e = std::current_exception();
      remote_calls_->spawn([e] { std::rethrow_exception(e); });
    }
  }

  /// Tasks started with `spawn` and not finished, counted by a `join` set.
  class join_set {
   public:
    explicit join_set(step_context& s) : s_(s) {}
    join_set(const join_set&) = delete;
    ~join_set() { wait(); }
    void spawn(std::function<void()> f) {
      {
        std::lock_guard lock(mu_);
        ++pending_;
      }
      s_.pool_.submit([this, f = std::move(f)] {
        try {
          f();
        } catch (...) {
          s_.fail(std::current_exception());
        }
        std::lock_guard lock(mu_);
        if (--pending_ == 0) cv_.notify_all();
      });
    }
    void wait() {
      std::unique_lock lock(mu_);
      detail::wait_spinning(lock, cv_, std::chrono::microseconds(50), [&] { return pending_ == 0; });
    }

   private:
    step_context& s_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::size_t pending_ = 0;
  };

  /// Records one kernel run on device `d` (traced steps).
  void record(std::size_t d, const exec::kernel_node& n, std::string_view frame, std::chrono::steady_clock::time_point a,
              std::chrono::steady_clock::time_point b) {
    static std::atomic<std::uint64_t> threads{0};
    thread_local const std::uint64_t tid = threads.fetch_add(1) + 1;
    node_exec_stats st;
    st.node = n.name;
    st.op = n.domain.empty() ? n.op : n.domain + "::" + n.op;
    st.frame = std::string(frame);
    st.start_us = std::chrono::duration_cast<std::chrono::microseconds>(a - epoch_).count();
    st.end_us = std::chrono::duration_cast<std::chrono::microseconds>(b - epoch_).count();
    st.thread = tid;
    std::lock_guard lock(mu_);
    stats_[d].nodes.push_back(std::move(st));
  }
  std::vector<device_step_stats> take_stats() {
    std::lock_guard lock(mu_);
    return std::move(stats_);
  }

 private:
  std::string fetch_key(std::size_t d, std::size_t j) const {
    return exec::rendezvous_key(cluster_->device_names[d], "*", "_fetch:" + std::to_string(j), "");
  }
  std::string call_done_key(std::size_t d, const std::string& function, const std::string& frame) const {
    return exec::rendezvous_key(cluster_->device_names[d], "*", "_done:" + function, frame);
  }
  void post_value(int to, std::string key, exec::value v) {
    exec::transport_message m;
    m.what = exec::transport_message::kind::value;
    m.step = step_;
    m.text = std::move(key);
    m.v = std::move(v);
    cluster_->transport->post(to, std::move(m));
  }
  void tell_others(exec::transport_message::kind k, const std::string& text) {
    detail::tell_other_processes(*cluster_->transport, step_, k, text);
  }

  const std::vector<std::unique_ptr<device_part<G>>>& parts_;
  const partitioned_program<G>& prog_;
  elastic_pool& pool_;
  exec::global_store& globals_;
  exec::run_limits limits_;
  bool trace_;
  std::chrono::steady_clock::time_point epoch_;
  exec::process_group* processes_;
  const step_cluster* cluster_;
  std::uint64_t step_;  // the step's number, the same in every process (a session over processes)
  exec::rendezvous rendezvous_;
  std::atomic<std::uint64_t> calls_{0};
  std::shared_ptr<std::atomic<std::uint64_t>> live_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::exception_ptr error_;
  int finished_ = 0;
  std::vector<device_step_stats> stats_;
  std::unique_ptr<join_set> remote_calls_;  // the calls other processes made of parts here
};

namespace detail {

template <class P, class G>
class policy_part;

// What the kernels of one partition see while it runs in one frame.
template <class P, class G>
class part_services final : public exec::detail::run_services<P>, public exec::detail::kernel_recorder {
 public:
  using value_type = exec::basic_value<typename P::tensor_type>;
  part_services(const policy_part<P, G>& part, step_context<G>& step, std::string frame, int depth)
      : part_(part), step_(step), frame_(std::move(frame)), budget_(step.limits(), step.live(), depth) {}

  std::vector<value_type> call(std::string_view name, std::vector<value_type> args) const override {
    budget_.enter_call(name);
    struct leave {
      exec::detail::run_budget& b;
      ~leave() { b.leave_call(); }
    } guard{budget_};
    std::string child = frame_;
    child.append(1, '/').append(name).append(1, '#').append(std::to_string(step_.next_call()));
    return part_.call(name, std::move(args), step_, std::move(child), budget_.depth());
  }
  exec::global_store* run_globals() const override { return &step_.globals(); }
  exec::detail::run_budget* budget() const override { return &budget_; }
  exec::rendezvous* run_rendezvous() const override { return &step_.rendezvous(); }
  exec::process_group* run_process_group() const override { return step_.processes(); }
  std::string_view run_frame() const override { return frame_; }
  exec::detail::kernel_recorder* recorder() const override {
    return step_.tracing() ? const_cast<part_services*>(this) : nullptr;
  }
  exec::detail::buffer_cache* buffers() const override { return part_.buffers(); }
  void record(const exec::kernel_node& n, std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) override {
    step_.record(part_.device_index(), n, frame_, a, b);
  }

 private:
  const policy_part<P, G>& part_;
  step_context<G>& step_;
  std::string frame_;
  mutable exec::detail::run_budget budget_;
};

template <class P, class G>
class policy_part final : public device_part<G> {
 public:
  using value_type = exec::basic_value<typename P::tensor_type>;
  policy_part(P& policy, const G& part, bool has_main, const exec::plan_options& opt, std::size_t index)
      : policy_(&policy), index_(index) {
    if (has_main) main_ = std::make_unique<exec::detail::body_plan<P, G>>(part, part, policy, opt, "graph");
    for (const auto& [name, f] : part.functions())
      functions_.emplace(name, std::make_unique<exec::detail::body_plan<P, G>>(*f, part, policy, opt, "function '" + name + "'"));
    // a batch-separable main part (one device, no functions, no transfers) may run its batch
    // as sub-batches, like `exec::plan` (see `exec::plan_options::split_batch`)
    if constexpr (splits_batch && std::is_same_v<typename G::attrs_type, attribute_map>)
      if (has_main && opt.split_batch && functions_.empty()) split_ = exec::analyze_batch_split(part);
  }
  std::size_t device_index() const noexcept { return index_; }
  /// The part's cache of large unplanned buffers (kept across steps).
  exec::detail::buffer_cache* buffers() const noexcept { return buffers_.get(); }

  std::vector<exec::value> run_main(std::vector<exec::value> args, step_context<G>& step) const override {
    if (!main_) return {};
    if constexpr (splits_batch) {
      if (split_.separable && !step.tracing()) {
        auto sub_run = [&](std::vector<exec::value> sub) {
          part_services<P, G> sv(*this, step, std::string(), 0);
          return main_->run(*policy_, std::move(sub), &sv);
        };
        if (auto r = exec::run_batch_split(*policy_, split_, main_->input_types(), args, sub_run)) return std::move(*r);
      }
    }
    part_services<P, G> sv(*this, step, std::string(), 0);
    if constexpr (std::is_same_v<typename P::tensor_type, gpass::tensor>) {
      return main_->run(*policy_, std::move(args), &sv);
    } else {
      // feeds and fetches cross between the host and the device (tensors, and the tensors
      // of sequences)
      auto st = policy_->make_stream();
      std::vector<value_type> in;
      for (auto& a : args) {
        if (a.is_tensor()) in.emplace_back(policy_->upload(a.tensor(), st));
        else if (a.is_sequence()) {
          typename value_type::sequence_type seq;
          for (const auto& t : a.sequence()) seq.push_back(policy_->upload(t, st));
          in.emplace_back(std::move(seq));
        } else in.emplace_back();
      }
      auto out = main_->run(*policy_, std::move(in), &sv);
      std::vector<exec::value> r;
      for (auto& o : out) {
        if (o.is_tensor()) r.emplace_back(policy_->download(o.tensor(), st));
        else if (o.is_sequence()) {
          exec::value::sequence_type seq;
          for (const auto& t : o.sequence()) seq.push_back(policy_->download(t, st));
          r.emplace_back(std::move(seq));
        } else r.emplace_back();
      }
      policy_->synchronize(st);
      return r;
    }
  }

  void run_remote(const std::string& function, const std::string& frame, int depth, step_context<G>& step) const override {
    auto it = functions_.find(function);
    if (it == functions_.end()) throw error("function '" + function + "' has no part on this device");
    part_services<P, G> sv(*this, step, frame, depth);
    (void)it->second->run(*policy_, {}, &sv);
  }

  // One call of `name` made by a kernel of this device (its home): the other devices run
  // their parts of it in the same frame, concurrently.
  std::vector<value_type> call(std::string_view name, std::vector<value_type> args, step_context<G>& step, std::string frame,
                               int depth) const {
    auto it = functions_.find(name);
    if (it == functions_.end()) throw error("function '" + std::string(name) + "' has no plan on this device");
    const auto* info = step.function(name);
    part_services<P, G> sv(*this, step, frame, depth);
    if (!info || info->remote.empty()) return it->second->run(*policy_, std::move(args), &sv);
    typename step_context<G>::join_set remote(step);
    const std::string fname(name);
    for (std::size_t d : info->remote) {
      if (step.local(d)) remote.spawn([&step, d, fname, frame, depth] { step.part(d).run_remote(fname, frame, depth, step); });
      else remote.spawn([&step, d, fname, frame, depth] { step.call_remote(d, fname, frame, depth); });
    }
    std::vector<value_type> r;
    try {
      r = it->second->run(*policy_, std::move(args), &sv);
    } catch (...) {
      step.fail(std::current_exception());
      remote.wait();
      step.rethrow_if_failed();
      throw;
    }
    remote.wait();
    step.rethrow_if_failed();
    return r;
  }

 private:
  static constexpr bool splits_batch =
      std::is_same_v<typename P::tensor_type, gpass::tensor> && requires { typename P::serial_scope; };
  P* policy_;
  std::size_t index_;
  exec::batch_split_info split_;
  std::unique_ptr<exec::detail::body_plan<P, G>> main_;
  std::map<std::string, std::unique_ptr<exec::detail::body_plan<P, G>>, std::less<>> functions_;
  std::shared_ptr<exec::detail::buffer_cache> buffers_ = std::make_shared<exec::detail::buffer_cache>();
};

}  // namespace detail

/// A device backed by one object of executor policy `P` (owned): the device's thread pool on
/// the CPU, its context and streams on a GPU. The `send` / `recv` kernels of `P` copy between
/// the device and the host.
template <exec::executor_policy P, class G = graph<>>
class policy_device final : public session_device<G> {
 public:
  policy_device(device_name name, std::unique_ptr<P> policy) : session_device<G>(std::move(name)), policy_(std::move(policy)) {}
  bool supports(std::string_view domain, std::string_view op) const override { return policy_->kernels().has(domain, op); }
  /// A predicate that cannot read the node's attributes (another kind than it expects)
  /// counts as "not served": the kernel would reject the node too.
  bool serves(const exec::kernel_query& q) const override {
    try {
      return serves_types(q) && policy_->kernels().serves(q);
    } catch (const std::exception&) {
      return false;
    }
  }
  /// `P::serves_types(q)` when the policy says which nodes it computes on its types for
  /// (`cuda::serves_types`), else true.
  bool serves_types(const exec::kernel_query& q) const override {
    if constexpr (requires { { P::serves_types(q) } -> std::convertible_to<bool>; }) return P::serves_types(q);
    else return true;
  }
  /// `P::holds(t)` when the policy says which element types it holds, else true.
  bool holds(dtype t) const override {
    if constexpr (requires { { P::holds(t) } -> std::convertible_to<bool>; }) return P::holds(t);
    else return true;
  }
  std::unique_ptr<device_part<G>> compile(const G& part, bool has_main, const exec::plan_options& opt,
                                          std::size_t device_index) const override {
    return std::make_unique<detail::policy_part<P, G>>(*policy_, part, has_main, opt, device_index);
  }
  P& policy() const noexcept { return *policy_; }

 private:
  std::unique_ptr<P> policy_;
};

}  // namespace gpass
