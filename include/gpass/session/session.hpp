// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file session.hpp
/// `gpass::session`: TensorFlow's DirectSession (seed 003) for gpass graphs. A session keeps a
/// graph and its globals (variables) alive and runs it any number of times, from any number
/// of threads, on several devices: each `run(feeds, fetches, targets)` signature is rewritten
/// (feeds and fetches through a call frame), pruned, placed, partitioned with send/recv
/// pairs and compiled into one executor per device once, then cached.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/collectives.hpp>
#include <gpass/exec/globals.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/exec/value.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/session/device.hpp>
#include <gpass/session/device_name.hpp>
#include <gpass/session/partition.hpp>
#include <gpass/session/placer.hpp>
#include <gpass/session/rewrite.hpp>
#include <gpass/session/step_stats.hpp>

namespace gpass {

/// `n` Eigen CPU devices (`/job:localhost/replica:0/task:0/device:CPU:0` ...), each with its
/// own thread pool of `threads` threads.
/// \code
///   gpass::session s(g, {.devices = gpass::cpu_devices(2)});
/// \endcode
template <class G = graph<>>
std::vector<std::shared_ptr<session_device<G>>> cpu_devices(int n = 1, int threads = 1) {
  std::vector<std::shared_ptr<session_device<G>>> r;
  for (int i = 0; i < n; ++i)
    r.push_back(std::make_shared<policy_device<exec::eigen_cpu, G>>(
        parse_device_name("/job:localhost/replica:0/task:0/device:CPU:" + std::to_string(i)),
        std::make_unique<exec::eigen_cpu>(exec::eigen_cpu::options{.threads = threads})));
  return r;
}

/// One task of a cluster of TensorFlow jobs: the process that runs the devices
/// `/job:<job>/replica:0/task:<task>/...`.
struct cluster_task {
  std::string job;
  int task = 0;
  friend bool operator==(const cluster_task&, const cluster_task&) = default;
};

/// The tasks of a cluster written `JOB:N[,JOB:N...]` (TensorFlow's ClusterSpec, counted), in
/// process order: `ps:1,worker:2` is ps/0 (process 0), worker/0 (1), worker/1 (2). Errors: a
/// malformed spec, a job given twice, a count < 1 (`gpass::error` quoting the spec).
inline std::vector<cluster_task> parse_cluster(std::string_view spec) {
  std::vector<cluster_task> tasks;
  std::vector<std::string> jobs;
  auto bad = [&](const std::string& why) -> std::vector<cluster_task> {
    throw error("cluster '" + std::string(spec) + "' is not valid (JOB:N[,JOB:N...]): " + why);
  };
  if (spec.empty()) bad("it is empty");
  std::string_view rest = spec;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (comma != std::string_view::npos && rest.empty()) bad("it ends with ','");
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) bad("'" + std::string(item) + "' has no ':N'");
    const std::string job(item.substr(0, colon));
    const std::string_view count = item.substr(colon + 1);
    if (!detail::valid_device_word(job)) bad("bad job name '" + job + "'");
    if (std::find(jobs.begin(), jobs.end(), job) != jobs.end()) bad("job '" + job + "' is given twice");
    int n = 0;
    if (count.empty() || count.size() > 6) bad("bad task count '" + std::string(count) + "'");
    for (char c : count) {
      if (c < '0' || c > '9') bad("bad task count '" + std::string(count) + "'");
      n = n * 10 + (c - '0');
    }
    if (n < 1) bad("job '" + job + "' has no task");
    jobs.push_back(job);
    for (int t = 0; t < n; ++t) tasks.push_back({job, t});
  }
  return tasks;
}

/// The devices of a cluster seen from process `rank`: for every task (process `p` = its
/// index in `tasks`), `per_task` CPU devices `/job:J/replica:0/task:T/device:CPU:i`; those of
/// `rank` are Eigen CPU devices of `threads` threads each, the others `remote_device`s like
/// them. Every process makes the same list (the session's `transport` joins them).
/// \code
///   auto tasks = gpass::parse_cluster("ps:1,worker:1");
///   auto transport = std::make_shared<gpass::mpi_transport>();   // this rank of the mpirun
///   gpass::session s(g, {.devices = gpass::cluster_cpu_devices<G>(tasks, transport->rank()),
///                        .transport = transport});
/// \endcode
template <class G = graph<>>
std::vector<std::shared_ptr<session_device<G>>> cluster_cpu_devices(const std::vector<cluster_task>& tasks, int rank,
                                                                    int per_task = 1, int threads = 1) {
  if (rank < 0 || rank >= static_cast<int>(tasks.size()))
    throw error("cluster_cpu_devices: process " + std::to_string(rank) + " is not one of the cluster's " +
                std::to_string(tasks.size()) + " tasks");
  const auto mine = cpu_devices<G>(per_task, threads);
  std::vector<std::shared_ptr<session_device<G>>> r;
  for (std::size_t p = 0; p < tasks.size(); ++p)
    for (int i = 0; i < per_task; ++i) {
      const device_name name = parse_device_name("/job:" + tasks[p].job + "/replica:0/task:" + std::to_string(tasks[p].task) +
                                                 "/device:CPU:" + std::to_string(i));
      if (static_cast<int>(p) == rank)
        r.push_back(std::make_shared<policy_device<exec::eigen_cpu, G>>(
            name, std::make_unique<exec::eigen_cpu>(exec::eigen_cpu::options{.threads = threads})));
      else
        r.push_back(std::make_shared<remote_device<G>>(name, static_cast<int>(p), mine[static_cast<std::size_t>(i)]));
    }
  return r;
}

/// Options of a session.
template <class G = graph<>>
struct session_options {
  /// The devices (full names, distinct). Empty: one CPU device (`cpu_devices(1)`).
  std::vector<std::shared_ptr<session_device<G>>> devices;
  /// Placement: soft placement, `log_device_placement`, the round-robin testing spread.
  placement_options placement;
  /// Applied to each signature's graph after the feed/fetch rewrite and before placement
  /// (for a TensorFlow graph: the `tf-frontend` pipeline, which makes v1 loops functional
  /// and variables globals); the graph is pruned again after it.
  std::function<void(G&)> prepare;
  /// Run `infer-shapes` before compiling (gives the executors their buffer plans).
  bool infer_shapes = true;
  /// The executors' options (buffer plan, run limits); `globals` is ignored (the session's).
  exec::plan_options plan;
  /// Signatures kept compiled (the oldest is dropped past this).
  std::size_t cache_capacity = 64;
  /// The other processes of a data-parallel run (MPI ranks: `gpass::mpi_process_group`), for
  /// the `all_reduce` / `all_gather` nodes of a graph the `multi-devices` pass replicated with
  /// `ranks` > 1; null: this process alone.
  std::shared_ptr<exec::process_group> processes;
  /// The processes of a session whose devices span processes (`remote_device`s: a cluster of
  /// TensorFlow tasks, MPI ranks with `gpass::mpi_transport`): every process makes the same
  /// session, with the same devices in the same order, and the same runs in the same order.
  /// Null: every device is in this process.
  std::shared_ptr<exec::transport> transport;
};

/// Options of one run.
struct run_options {
  bool trace = false;  ///< record every kernel's start and end (`run_metadata::step_stats`)
};

/// What a run reports besides its fetches.
struct run_metadata {
  step_stats stats;             ///< kernels per device (traced runs)
  std::size_t partitions = 0;   ///< devices that ran a part of the main graph
  std::size_t sends = 0;        ///< send/recv pairs of the signature (data and control)
  std::size_t control_sends = 0;  ///< of which carry a control edge
  std::size_t copied_constants = 0;  ///< constants copied to a second device instead of sent
  bool cache_hit = false;       ///< the signature was compiled by an earlier run
};

/// A graph kept alive with its globals and run many times, possibly concurrently, on the
/// session's devices (TensorFlow's `Session`).
///
/// For each signature (`feeds`, `fetches`, `targets`, by name: see `run_signature`) the
/// session, once: copies the graph, rewrites it for the run (`rewrite_for_run`: `arg` nodes
/// for the feeds, a `return` for the fetches, pruned to what they and the targets need), runs
/// `prepare` on it, infers shapes, places it (`place`), partitions it (`partition`) and
/// compiles one executor per device. Signatures are cached by the names as given and by the
/// names sorted (a run with the same names in another order reuses the executors).
///
/// `run` executes the partitions concurrently, one per device, in the calling thread and a
/// pool; a call of a function whose nodes span devices (a loop body spread over two CPUs) runs
/// its parts on every device, keyed in the rendezvous by the call's frame. Globals (variables)
/// live in the session across runs and signatures. The stateful nodes keep the device of
/// their first placement.
///
/// **Errors** (`gpass::error`): everything the rewrite, the placer, the partitioner and the
/// executors report, naming node and op; a feed of a name not in the signature's graph, a
/// missing feed, a kernel failure (the first failure of any device; the others are aborted).
/// \code
///   gpass::session s(g, {.devices = gpass::cpu_devices(2)});
///   auto out = s.run({{"x:0", x}}, {"y:0"});          // out[0]: y
///   s.run({}, {}, {"init"});                          // run a target for its effects
/// \endcode
template <class G = graph<>>
class session {
 public:
  explicit session(G g, session_options<G> options = {})
      : graph_(std::move(g)), options_(std::move(options)), epoch_(std::chrono::steady_clock::now()) {
    if (options_.devices.empty()) options_.devices = cpu_devices<G>(1);
    for (const auto& d : options_.devices) {
      if (!d) throw error("session: a null device");
      if (!d->name().full()) throw error("session: device '" + d->name().to_string() + "' is not a full device name");
      const std::string n = d->name().to_string();
      if (std::find(device_names_.begin(), device_names_.end(), n) != device_names_.end())
        throw error("session: device '" + n + "' is given twice");
      device_names_.push_back(n);
      if (d->process() >= 0) {
        if (!options_.transport)
          throw error("session: device '" + n + "' is in process " + std::to_string(d->process()) +
                      ": the session needs a transport (session_options::transport)");
        if (d->process() >= options_.transport->size() || d->process() == options_.transport->rank())
          throw error("session: device '" + n + "' is in process " + std::to_string(d->process()) + ", but this is process " +
                      std::to_string(options_.transport->rank()) + " of " + std::to_string(options_.transport->size()));
      }
      cluster_.add(n, d->process());
    }
    cluster_.transport = options_.transport.get();
    globals_->initialize_from(graph_.attrs());
  }
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  /// Runs the graph: feeds (tensor name, value), fetches (tensor names; their values are
  /// returned in this order), targets (nodes run for their effects).
  std::vector<exec::value> run(const std::vector<std::pair<std::string, exec::value>>& feeds,
                               const std::vector<std::string>& fetches, const std::vector<std::string>& targets = {},
                               const run_options& ro = {}, run_metadata* md = nullptr) {
    if (options_.transport) return run_in_cluster(feeds, fetches, targets, ro, md);
    std::vector<std::string> feed_names;
    feed_names.reserve(feeds.size());
    for (const auto& f : feeds) feed_names.push_back(f.first);
    bool hit = false;
    auto exe = executors_for(feed_names, fetches, targets, &hit);
    // call frame: the feeds in the compiled order, the fetches back in the asked order
    std::vector<exec::value> args(exe->feed_names.size());
    for (const auto& [name, v] : feeds) args[exe->feed_index(name)] = v;
    std::vector<exec::value> out(exe->fetch_names.size());
    step_context<G> step(exe->parts, exe->prog, pool_, *globals_, options_.plan.limits, ro.trace, epoch_,
                          options_.processes.get());
    run_parts(*exe, step, args, out);
    step.rethrow_if_failed();
    return finish_run(*exe, step, out, fetches, hit, md);
  }

 private:
  struct executors;

  // Runs the parts of this process's devices concurrently (the first in this thread).
  void run_parts(const executors& exe, step_context<G>& step, const std::vector<exec::value>& args,
                 std::vector<exec::value>& out) {
    std::vector<std::size_t> running;
    for (std::size_t d = 0; d < exe.parts.size(); ++d)
      if (exe.prog.has_main[d] && step.local(d)) running.push_back(d);
    auto run_part = [&](std::size_t d) {
      std::vector<exec::value> a;
      a.reserve(exe.prog.feeds[d].size());
      for (std::size_t k : exe.prog.feeds[d]) a.push_back(k < args.size() ? args[k] : exec::value{});
      auto r = exe.parts[d]->run_main(std::move(a), step);
      for (std::size_t j = 0; j < r.size() && j < exe.prog.fetches[d].size(); ++j) {
        if (options_.transport) step.share_fetch(d, j, r[j]);
        out[exe.prog.fetches[d][j]] = std::move(r[j]);
      }
    };
    typename step_context<G>::join_set others(step);
    for (std::size_t i = 1; i < running.size(); ++i) others.spawn([&run_part, d = running[i]] { run_part(d); });
    if (!running.empty()) {
      try {
        run_part(running.front());
      } catch (...) {
        step.fail(std::current_exception());
      }
    }
    others.wait();
  }

  // One step of a session over several processes: numbered as in every other process; ends
  // when every process has ended its part (`step_context::finish`), then takes the fetches
  // computed elsewhere. A failure before the step starts here (a missing feed) is told to
  // the others as the step's abort.
  std::vector<exec::value> run_in_cluster(const std::vector<std::pair<std::string, exec::value>>& feeds,
                                          const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                                          const run_options& ro, run_metadata* md) {
    std::lock_guard one_step_at_a_time(step_mu_);
    const std::uint64_t step_number = next_step_++;
    std::shared_ptr<const executors> exe;
    std::vector<exec::value> args, out;
    bool hit = false;
    try {
      std::vector<std::string> feed_names;
      for (const auto& f : feeds) feed_names.push_back(f.first);
      exe = executors_for(feed_names, fetches, targets, &hit);
      args.resize(exe->feed_names.size());
      for (const auto& [name, v] : feeds) args[exe->feed_index(name)] = v;
      out.resize(exe->fetch_names.size());
    } catch (const std::exception& e) {
      exec::transport& t = *options_.transport;
      detail::tell_other_processes(t, step_number, exec::transport_message::kind::abort, e.what());
      detail::tell_other_processes(t, step_number, exec::transport_message::kind::finished, {});
      t.detach(step_number);
      throw;
    }
    step_context<G> step(exe->parts, exe->prog, pool_, *globals_, options_.plan.limits, ro.trace, epoch_,
                          options_.processes.get(), &cluster_, step_number);
    run_parts(*exe, step, args, out);
    step.finish();
    step.rethrow_if_failed();
    for (std::size_t d = 0; d < exe->parts.size(); ++d)
      if (!step.local(d))
        for (std::size_t j = 0; j < exe->prog.fetches[d].size(); ++j) out[exe->prog.fetches[d][j]] = step.remote_fetch(d, j);
    return finish_run(*exe, step, out, fetches, hit, md);
  }

  std::vector<exec::value> finish_run(const executors& exe, step_context<G>& step, std::vector<exec::value>& out,
                                      const std::vector<std::string>& fetches, bool hit, run_metadata* md) {
    if (md) {
      md->cache_hit = hit;
      md->partitions = static_cast<std::size_t>(std::count(exe.prog.has_main.begin(), exe.prog.has_main.end(), 1));
      md->sends = exe.prog.sends;
      md->control_sends = exe.prog.control_transfers;
      md->copied_constants = exe.prog.copied_constants;
      md->stats.devices = step.take_stats();
      for (std::size_t d = 0; d < md->stats.devices.size(); ++d) md->stats.devices[d].device = device_names_[d];
    }
    std::vector<exec::value> result;
    result.reserve(fetches.size());
    for (const auto& f : fetches) result.push_back(out[exe.fetch_index(f)]);
    return result;
  }

 public:
  /// Runs the graph with its own inputs and results (an ONNX model): `inputs` in the order of
  /// the graph's `arg` nodes, the results in the order of its `return` node.
  std::vector<exec::value> run_graph(std::vector<exec::value> inputs, const run_options& ro = {}, run_metadata* md = nullptr) {
    const auto& sig = graph_signature();
    if (inputs.size() > sig.feeds.size())
      throw error("session: " + std::to_string(inputs.size()) + " inputs given, the graph has " + std::to_string(sig.feeds.size()));
    std::vector<std::pair<std::string, exec::value>> feeds;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (!inputs[i].is_none()) feeds.emplace_back(sig.feeds[i], std::move(inputs[i]));
    return run(feeds, sig.fetches, sig.targets, ro, md);
  }

  /// The graph's own signature: its inputs (`arg` nodes by index), results (`return`) and
  /// targets (the control inputs of its `return`).
  const run_signature& graph_signature() const {
    std::call_once(own_sig_once_, [&] {
      std::vector<std::pair<std::int64_t, std::string>> args;
      for (auto v : graph_.nodes()) {
        const auto& n = graph_[v];
        if (n.domain.empty() && n.op == "arg") args.emplace_back(get_or<std::int64_t>(n.attrs, "index", 0), n.name);
        if (n.domain.empty() && n.op == "return") {
          std::vector<std::string> names;
          if (auto it = n.attrs.find("names"); it != n.attrs.end() && it->second.template is<std::vector<std::string>>())
            names = it->second.template as<std::vector<std::string>>();
          for (std::size_t k = 0; k < graph_.num_inputs(v); ++k) {
            auto in = graph_.input(v, static_cast<int>(k));
            own_sig_.fetches.push_back(k < names.size() && !names[k].empty()
                                           ? names[k]
                                           : (in.empty ? std::string() : graph_[in.node].name + ":" + std::to_string(in.port)));
          }
          for (auto c : graph_.control_inputs(v)) own_sig_.targets.push_back(graph_[c].name);
        }
      }
      std::stable_sort(args.begin(), args.end());
      for (auto& a : args) own_sig_.feeds.push_back(a.second);
    });
    return own_sig_;
  }

  /// The globals (variables) of the session: their values persist across runs.
  exec::global_store& globals() noexcept { return *globals_; }
  /// The devices' full names, in the session's order.
  const std::vector<std::string>& device_names() const noexcept { return device_names_; }
  /// The device of every node placed so far, for the most recent signature compiled (as
  /// `name -> device`; function nodes as `function/name`).
  std::map<std::string, std::string> last_placement() const {
    std::lock_guard lock(mu_);
    return last_placement_;
  }
  /// Signatures compiled (cache misses) and cached now.
  std::size_t compilations() const {
    std::lock_guard lock(mu_);
    return compilations_;
  }
  std::size_t cached() const {
    std::lock_guard lock(mu_);
    return order_.size();
  }
  /// The graph the session runs (as given).
  const G& graph() const noexcept { return graph_; }
  /// The partitioned graphs of a signature (compiling it if needed): one per device.
  const partitioned_program<G>& partitions(const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                                           const std::vector<std::string>& targets = {}) {
    return executors_for(feeds, fetches, targets, nullptr)->prog;
  }

 private:
  struct executors {
    std::vector<std::string> feed_names, fetch_names;
    std::map<std::string, std::size_t, std::less<>> feed_at, fetch_at;
    partitioned_program<G> prog;
    std::vector<std::unique_ptr<device_part<G>>> parts;
    std::size_t feed_index(std::string_view n) const {
      auto it = feed_at.find(n);
      if (it == feed_at.end()) throw error("session: '" + std::string(n) + "' is not a feed of this run");
      return it->second;
    }
    std::size_t fetch_index(std::string_view n) const {
      auto it = fetch_at.find(n);
      if (it == fetch_at.end()) throw error("session: '" + std::string(n) + "' is not a fetch of this run");
      return it->second;
    }
  };

  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s.append(x).append(1, ',');
    return s;
  }
  static std::string key_of(const std::vector<std::string>& f, const std::vector<std::string>& o, const std::vector<std::string>& t) {
    return join(f) + "->" + join(o) + "/" + join(t);
  }

  std::shared_ptr<const executors> executors_for(const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                                                 const std::vector<std::string>& targets, bool* hit) {
    const std::string key = key_of(feeds, fetches, targets);
    {
      std::lock_guard lock(mu_);
      if (auto it = cache_.find(key); it != cache_.end()) {
        if (hit) *hit = true;
        return it->second;
      }
    }
    auto sorted = [](std::vector<std::string> v) {
      std::sort(v.begin(), v.end());
      return v;
    };
    const std::string sorted_key = key_of(sorted(feeds), sorted(fetches), sorted(targets));
    // the unsorted key (the fast path above), then the sorted one (the same names in another order)
    auto lookup = [&]() -> std::shared_ptr<const executors> {
      std::lock_guard lock(mu_);
      if (auto it = cache_.find(key); it != cache_.end()) return it->second;
      if (auto it = cache_.find(sorted_key); it != cache_.end()) {
        auto found = it->second;
        cache_.emplace(key, found);
        order_.push_back(key);
        evict();
        return found;
      }
      return nullptr;
    };
    if (auto found = lookup()) {
      if (hit) *hit = true;
      return found;
    }
    for (std::size_t i = 0; i < feeds.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (feeds[i] == feeds[j]) throw error("session: feed '" + feeds[i] + "' is given twice");
    // one compilation at a time: threads asking for the same new signature wait for the
    // first one's executors instead of compiling it again (runs of cached ones go on)
    std::lock_guard compiling(compile_mu_);
    if (auto found = lookup()) {
      if (hit) *hit = true;
      return found;
    }
    auto exe = compile(feeds, fetches, targets);
    std::lock_guard lock(mu_);
    ++compilations_;
    cache_.emplace(key, exe);
    order_.push_back(key);
    if (sorted_key != key) {
      cache_.emplace(sorted_key, exe);
      order_.push_back(sorted_key);
    }
    evict();
    if (hit) *hit = false;
    return exe;
  }
  void evict() {
    while (order_.size() > std::max<std::size_t>(options_.cache_capacity, 2)) {
      cache_.erase(order_.front());
      order_.erase(order_.begin());
    }
  }

  std::shared_ptr<const executors> compile(const std::vector<std::string>& feeds, const std::vector<std::string>& fetches,
                                           const std::vector<std::string>& targets) {
    auto exe = std::make_shared<executors>();
    exe->feed_names = feeds;
    exe->fetch_names = fetches;
    for (std::size_t i = 0; i < feeds.size(); ++i) exe->feed_at.emplace(feeds[i], i);
    for (std::size_t i = 0; i < fetches.size(); ++i) exe->fetch_at.emplace(fetches[i], i);
    G g = graph_;
    rewrite_for_run(g, {.feeds = feeds, .fetches = fetches, .targets = targets});
    if (options_.prepare) {
      options_.prepare(g);
      prune_for_run(g);
    }
    for (auto v : g.nodes()) {
      const auto& n = g[v];
      if (n.domain == "tf" && (n.op == "Placeholder" || n.op == "PlaceholderWithDefault") && g.num_inputs(v) == 0)
        throw_node_error("the run needs the value of placeholder '" + n.name + "': feed it", n.name, n.op);
    }
    if (options_.infer_shapes) {
      try {
        pass_context ictx;
        gpass::infer_shapes(g, ictx);
      } catch (const std::exception&) {
        // no static sizes: the executors allocate at run time, kernels check
      }
    }
    globals_->initialize_from(g.attrs());
    std::vector<placement_device> devs;
    for (const auto& d : options_.devices)
      devs.push_back({d->name(), [dev = d.get()](std::string_view dom, std::string_view op) { return dev->supports(dom, op); },
                      [dev = d.get()](dtype t) { return dev->holds(t); },
                      [dev = d.get()](const exec::kernel_query& q) { return dev->serves(q); },
                      [dev = d.get()](const exec::kernel_query& q) { return dev->serves_types(q); }});
    placement_options po = options_.placement;
    std::map<std::string, std::string, std::less<>> pinned;
    {
      std::lock_guard lock(mu_);
      pinned = pinned_;
    }
    po.pinned = &pinned;
    const placement_result placed = place(g, devs, po);
    exe->prog = partition(g, device_names_);
    exec::plan_options popt = options_.plan;
    popt.globals = nullptr;
    for (std::size_t d = 0; d < options_.devices.size(); ++d)
      exe->parts.push_back(options_.devices[d]->compile(exe->prog.parts[d], exe->prog.has_main[d] != 0, popt, d));
    std::lock_guard lock(mu_);
    for (const auto& [k, v] : placed.stateful) pinned_.try_emplace(k, v);
    last_placement_.clear();
    auto note = [&](const G& h, const std::string& prefix) {
      for (auto v : h.nodes()) last_placement_[prefix + h[v].name] = h[v].device;
    };
    note(g, "");
    for (const auto& [name, f] : g.functions()) note(*f, name + "/");
    return exe;
  }

  G graph_;
  session_options<G> options_;
  std::chrono::steady_clock::time_point epoch_;
  std::vector<std::string> device_names_;
  std::shared_ptr<exec::global_store> globals_ = std::make_shared<exec::global_store>();
  elastic_pool pool_;
  mutable std::mutex mu_;
  std::mutex compile_mu_;
  std::map<std::string, std::shared_ptr<const executors>, std::less<>> cache_;
  std::vector<std::string> order_;
  std::map<std::string, std::string, std::less<>> pinned_;
  std::map<std::string, std::string> last_placement_;
  std::size_t compilations_ = 0;
  step_cluster cluster_;        // the devices' processes (a session over several processes), made once
  std::mutex step_mu_;          // its steps run one at a time, numbered alike in every process
  std::uint64_t next_step_ = 0;
  mutable std::once_flag own_sig_once_;
  mutable run_signature own_sig_;
};

}  // namespace gpass
