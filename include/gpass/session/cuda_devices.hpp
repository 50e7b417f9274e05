// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file cuda_devices.hpp
/// `gpass::cuda_devices`: the devices of a session on a machine with GPUs: every CUDA device
/// (`/job:localhost/replica:0/task:0/device:GPU:k`, one `exec::cuda` policy each) first, so
/// that the placer puts a node on `GPU:0` whenever it has a kernel there and its types fit,
/// then one Eigen CPU device for the rest (soft placement per node; the session's send /
/// recv pairs copy between them). Without a usable GPU: the CPU device alone. Part of the
/// `cuda` component.
/// \code
///   gpass::session s(g, {.devices = gpass::cuda_devices()});
///   s.run({{"x", x}}, {"y"});            // y computed on GPU:0 where the ops allow
///   s.last_placement();                  // node -> device
/// \endcode

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/exec/cuda.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/session/device.hpp>
#include <gpass/session/device_name.hpp>
#include <gpass/session/session.hpp>

namespace gpass {

/// What `cuda_devices` makes.
struct cuda_device_options {
  int max_gpus = 1;         ///< GPUs to use at most (the first ones); 0: none
  int cpu_threads = 1;      ///< intra-op threads of the CPU device
  bool allow_tf32 = false;  ///< `exec::cuda::options::allow_tf32` of every GPU
  bool pinned_download = true;  ///< `exec::cuda::options::pinned_download` of every GPU
};

/// The GPUs (up to `o.max_gpus`; one whose policy cannot be made is left out) and one CPU
/// device, GPUs first.
template <class G = graph<>>
std::vector<std::shared_ptr<session_device<G>>> cuda_devices(cuda_device_options o = {}) {
  std::vector<std::shared_ptr<session_device<G>>> r;
  const int gpus = std::min(o.max_gpus, exec::cuda_device_count());
  for (int i = 0; i < gpus; ++i) {
    std::unique_ptr<exec::cuda> p;
    try {
      p = std::make_unique<exec::cuda>(exec::cuda::options{.device = i, .allow_tf32 = o.allow_tf32, .pinned_download = o.pinned_download});
    } catch (const error&) {
      continue;  // a GPU that cannot be used (exclusive mode taken, out of memory): left out
    }
    r.push_back(std::make_shared<policy_device<exec::cuda, G>>(
        parse_device_name("/job:localhost/replica:0/task:0/device:GPU:" + std::to_string(i)), std::move(p)));
  }
  auto cpu = cpu_devices<G>(1, o.cpu_threads);
  r.insert(r.end(), cpu.begin(), cpu.end());
  return r;
}

}  // namespace gpass
