// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file graph.hpp
/// `gpass::exec::cuda_graph_plan`: runs a `plan<cuda>` as CUDA graphs. The host's cost of a
/// run (a kernel launch, a cuBLASLt or cuDNN call per node: tens of microseconds for some
/// library calls) is paid once per input signature; later runs with the same element types
/// and sizes replay the captured graph in one launch.
///
/// How: the first run of a signature runs the plan as usual (it compiles kernels, picks cuDNN
/// algorithms, grows the workspace); the next one captures the plan's run from the policy's
/// stream into a graph, reading its inputs from buffers the graph owns, and launches it; later
/// runs copy their inputs into those buffers, launch the graph and copy its outputs into new
/// tensors (device to device: a caller may keep its outputs across runs). A plan whose run
/// reads a value back to the host (a loop's condition, an If's, a size computed on the device)
/// cannot be captured: such a signature keeps running the plan as usual, which `stats()` counts.
///
/// A replay repeats what the capture recorded: the host-side values kernels upload (a Resize's
/// per-axis plan, a Shape's result) must follow from the signature, the attributes and the
/// constants, as they do for gpass's CUDA kernels (which have no random-number or global-state
/// kernels, whose host-side draws a graph would repeat).
///
/// Capturing takes the policy's stream: while a signature is captured (its second run) nothing
/// else may use the policy. Runs of one `cuda_graph_plan` are serialized. The plan must
/// outlive it.
/// \code
///   gpass::exec::cuda gpu;
///   gpass::exec::plan<gpass::exec::cuda> p(g, gpu);
///   gpass::exec::cuda_graph_plan<> fast(p, gpu);
///   for (auto& batch : batches) auto y = fast.run({gpu.upload(batch, gpu.default_stream())});
/// \endcode

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include <gpass/core/error.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/graph/graph.hpp>

namespace gpass::exec {

/// Options of a `cuda_graph_plan`.
struct cuda_graph_options {
  /// Runs of a signature before it is captured (the first compiles kernels and picks
  /// algorithms; the graph must not be captured before).
  int runs_before_capture = 1;
  /// Signatures kept as graphs at once; the least recently used one goes first.
  std::size_t max_graphs = 8;
};

/// What a `cuda_graph_plan` did.
struct cuda_graph_statistics {
  std::size_t runs = 0;          ///< calls of `run`
  std::size_t replays = 0;       ///< runs that launched a captured graph
  std::size_t captures = 0;      ///< graphs captured
  std::size_t plain_runs = 0;    ///< runs of the plan itself (before a capture, or not capturable)
  std::size_t uncapturable = 0;  ///< signatures whose run cannot be a graph
  std::size_t graph_bytes = 0;   ///< device memory the graphs now held own
};

/// A `plan<cuda>` run through CUDA graphs, one per input signature (see the file's comment).
template <class G = graph<>>
class cuda_graph_plan {
 public:
  using value_type = basic_value<cuda_tensor>;

  cuda_graph_plan(const plan<cuda, G>& p, cuda& gpu, cuda_graph_options options = {})
      : plan_(&p), gpu_(&gpu), options_(options) {}
  cuda_graph_plan(const cuda_graph_plan&) = delete;
  cuda_graph_plan& operator=(const cuda_graph_plan&) = delete;
  ~cuda_graph_plan() {
    std::lock_guard lock(mu_);
    clear_locked();
  }

  /// Runs the plan on `inputs` (device tensors); the outputs are new tensors, complete when
  /// this returns (as `plan::run`'s are).
  std::vector<value_type> run(std::vector<value_type> inputs) {
    std::lock_guard lock(mu_);
    ++stats_.runs;
    signature sig;
    for (const auto& v : inputs) {
      if (!v.is_tensor()) return plain(std::move(inputs));  // an omitted input or a list: no graph
      sig.emplace_back(v.tensor().element_type(), v.tensor().sizes());
    }
    entry& e = find(sig);
    if (e.exec) return replay(e, inputs);
    if (e.uncapturable || e.plain_runs < options_.runs_before_capture) {
      ++e.plain_runs;
      return plain(std::move(inputs));
    }
    return capture(e, std::move(inputs));
  }

  /// Drops every graph (the next run of each signature runs the plan and captures again).
  void clear() {
    std::lock_guard lock(mu_);
    clear_locked();
  }

  cuda_graph_statistics stats() const {
    std::lock_guard lock(mu_);
    cuda_graph_statistics s = stats_;
    for (const auto& e : entries_)
      if (e.owner) s.graph_bytes += e.owner->bytes();
    return s;
  }

 private:
  using signature = std::vector<std::pair<dtype, std::vector<std::int64_t>>>;
  struct entry {
    signature sig;
    int plain_runs = 0;
    int attempts = 0;
    bool uncapturable = false;
    std::shared_ptr<cuda_detail::capture_state> owner;  // the graph's memory
    std::vector<cuda_tensor> inputs;                    // what the graph reads its inputs from
    std::vector<value_type> outputs;                    // where it leaves its outputs
    cudaGraphExec_t exec = nullptr;
  };

  std::vector<value_type> plain(std::vector<value_type> inputs) {
    ++stats_.plain_runs;
    return plan_->run(std::move(inputs));
  }

  entry& find(const signature& sig) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->sig == sig) {
        entries_.splice(entries_.begin(), entries_, it);  // most recently used first
        return entries_.front();
      }
    while (entries_.size() >= std::max<std::size_t>(options_.max_graphs, 1)) {
      drop(entries_.back());
      entries_.pop_back();
    }
    entries_.emplace_front();
    entries_.front().sig = sig;
    return entries_.front();
  }

  std::vector<value_type> replay(entry& e, const std::vector<value_type>& inputs) {
    auto& s = gpu_->default_stream();
    for (std::size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].tensor().data() != e.inputs[i].data())
        gpu_->copy_on_device(e.inputs[i].data(), inputs[i].tensor().data(), e.inputs[i].nbytes(), s);
    return launch(e);
  }

  std::vector<value_type> launch(entry& e) {
    auto& s = gpu_->default_stream();
    {
      cuda_detail::device_guard g(gpu_->device());
      cuda_detail::check(cudaGraphLaunch(e.exec, s.stream), "launching a CUDA graph");
    }
    ++stats_.replays;
    std::vector<value_type> out;
    out.reserve(e.outputs.size());
    for (const auto& o : e.outputs) {
      const cuda_tensor& t = o.tensor();
      cuda_tensor c = gpu_->allocate_tensor(t.element_type(), t.sizes(), s);
      gpu_->copy_on_device(c.data(), t.data(), t.nbytes(), s);
      out.emplace_back(std::move(c));
    }
    gpu_->synchronize(s);
    return out;
  }

  std::vector<value_type> capture(entry& e, std::vector<value_type> inputs) {
    auto& s = gpu_->default_stream();
    auto owner = gpu_->make_capture_state();
    // the graph's own input buffers, filled before the capture (their copies are not in it)
    std::vector<cuda_tensor> graph_inputs;
    std::vector<value_type> args;
    for (const auto& v : inputs) {
      const cuda_tensor& t = v.tensor();
      cuda_tensor b(t.element_type(), t.sizes(), t.nbytes() ? owner->make_buffer(t.nbytes()) : nullptr);
      if (t.nbytes()) gpu_->copy_on_device(b.data(), t.data(), t.nbytes(), s);
      graph_inputs.push_back(b);
      args.emplace_back(std::move(b));
    }
    ++e.attempts;
    bool ok = true;
    std::vector<value_type> outs;
    gpu_->begin_capture(owner);
    try {
      outs = plan_->run(std::move(args));
    } catch (...) {
      ok = false;  // not capturable (or a real error, which the plain run below reports)
    }
    auto [graph, err] = gpu_->end_capture();
    for (const auto& o : outs)
      if (!o.is_tensor()) ok = false;
    cudaGraphExec_t exec = nullptr;
    if (ok && graph && err == cudaSuccess) {
      cuda_detail::device_guard g(gpu_->device());
      if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
        exec = nullptr;
        (void)cudaGetLastError();
      }
    }
    if (graph) (void)cudaGraphDestroy(graph);
    if (!exec) {
      outs.clear();
      // nothing of the capture ran; its memory may go once the work queued before it is done
      gpu_->synchronize(s);
      const bool retry = owner->retry && e.attempts < 3;
      graph_inputs.clear();
      owner.reset();
      if (!retry) {
        e.uncapturable = true;
        ++stats_.uncapturable;
      }
      return plain(std::move(inputs));
    }
    ++stats_.captures;
    e.owner = std::move(owner);
    e.inputs = std::move(graph_inputs);
    e.outputs = std::move(outs);
    e.exec = exec;
    return launch(e);
  }

  void drop(entry& e) noexcept {
    if (e.exec) {
      (void)cudaStreamSynchronize(gpu_->default_stream().stream);  // no launch still reads its memory
      (void)cudaGraphExecDestroy(e.exec);
      e.exec = nullptr;
    }
    e.outputs.clear();
    e.inputs.clear();
    e.owner.reset();
  }

  void clear_locked() noexcept {
    for (auto& e : entries_) drop(e);
    entries_.clear();
  }

  const plan<cuda, G>* plan_;
  cuda* gpu_;
  cuda_graph_options options_;
  mutable std::mutex mu_;
  std::list<entry> entries_;
  cuda_graph_statistics stats_;
};

}  // namespace gpass::exec
