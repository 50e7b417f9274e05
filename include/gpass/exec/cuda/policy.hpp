// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file policy.hpp
/// `gpass::exec::cuda`: the CUDA executor policy: one device, one compute stream, device
/// memory from the policy's own stream-ordered pool (`cudaMallocFromPoolAsync`: freed blocks
/// are reused by later allocations on the stream without a device synchronization, and the
/// pool keeps what it took), pinned staging buffers for host-to-device copies, and the cuBLASLt and cuDNN
/// handles the kernels share. Include `<gpass/exec/cuda.hpp>` for the policy with its kernels.
///
/// All the work of a policy is queued on its one stream, in the order the plans issue it, so
/// a buffer freed by the host (a tensor's last copy gone) is safe to reuse at once: every
/// kernel that read it was queued before. Concurrent runs share the stream (their kernels
/// interleave in submission order, each run's own order kept).

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <gpass/core/checked.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/nvrtc.hpp>
#include <gpass/exec/cuda/runtime.hpp>
#include <gpass/exec/cuda/tensor.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/policy.hpp>

namespace gpass::exec {

namespace cuda_detail {

/// Makes `device` current on the calling thread for the life of the guard (a no-op when it
/// already is).
class device_guard {
 public:
  explicit device_guard(int device) {
    int cur = -1;
    check(cudaGetDevice(&cur), "cudaGetDevice");
    if (cur != device) {
      check(cudaSetDevice(device), "cudaSetDevice");
      previous_ = cur;
    }
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  ~device_guard() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
};

/// What a policy's tensors need after the policy is gone: the device, the stream their
/// memory is ordered on, the pool. Destroyed with the last of them.
struct device_core {
  int device = 0;
  int arch = 0;
  int multiprocessors = 1;
  cudaStream_t stream = nullptr;
  cudaMemPool_t pool = nullptr;

  explicit device_core(int d) : device(d) {
    const int n = cuda_device_count();
    if (n == 0) throw error("cuda: no CUDA device (no GPU, or no driver that this CUDA runtime can use)");
    if (d < 0 || d >= n) throw error("cuda: device " + std::to_string(d) + " does not exist (" + std::to_string(n) + " devices)");
    device_guard g(d);
    arch = cuda_compute_capability(d);
    check(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, d), "multiprocessor count");
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
    // the policy's own pool (its blocks never wait on another policy's stream), which keeps
    // the memory it took: a plan allocates the same sizes every run
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = d;
    check(cudaMemPoolCreate(&pool, &props), "creating a memory pool");
    std::uint64_t keep = std::numeric_limits<std::uint64_t>::max();
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "the pool's release threshold");
  }
  device_core(const device_core&) = delete;
  device_core& operator=(const device_core&) = delete;
  ~device_core() {
    if (stream) {
      (void)cudaStreamSynchronize(stream);
      (void)cudaStreamDestroy(stream);
    }
    if (pool) (void)cudaMemPoolDestroy(pool);
  }

  void* allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    device_guard g(device);
    void* p = nullptr;
    const cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool, stream);
    if (e != cudaSuccess) check(e, "allocating " + std::to_string(bytes) + " bytes of device memory");
    return p;
  }
  void deallocate(void* p) noexcept {
    if (!p) return;
    (void)cudaFreeAsync(p, stream);
  }
};

/// A pinned host buffer that host-to-device copies go through: the host data is copied into
/// it at once (so the caller may free its own at once) and the device copy queued behind; the
/// next use waits for the event of the previous copy.
class pinned_staging {
 public:
  static constexpr std::size_t capacity = std::size_t{8} << 20;
  pinned_staging() = default;
  pinned_staging(const pinned_staging&) = delete;
  pinned_staging& operator=(const pinned_staging&) = delete;
  ~pinned_staging() {
    for (auto& s : slots_) {
      if (s.done) (void)cudaEventSynchronize(s.done);  // its last copy read the buffer
      if (s.done) (void)cudaEventDestroy(s.done);
      if (s.host) (void)cudaFreeHost(s.host);
    }
  }
  /// Copies `n <= capacity` bytes from `src` (host) to `dst` (device) on `stream`.
  void copy(void* dst, const void* src, std::size_t n, cudaStream_t stream) {
    std::lock_guard lock(mu_);
    slot& s = slots_[next_];
    next_ = (next_ + 1) % slots_.size();
    if (!s.host) {
      check(cudaMallocHost(&s.host, capacity), "allocating pinned host memory");
      check(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming), "creating an event");
    } else {
      check(cudaEventSynchronize(s.done), "waiting for a staging copy");
    }
    std::memcpy(s.host, src, n);
    check(cudaMemcpyAsync(dst, s.host, n, cudaMemcpyHostToDevice, stream), "copying to the device");
    check(cudaEventRecord(s.done, stream), "recording an event");
  }

 private:
  struct slot {
    void* host = nullptr;
    cudaEvent_t done = nullptr;
  };
  std::mutex mu_;
  std::array<slot, 2> slots_{};
  std::size_t next_ = 0;
};

}  // namespace cuda_detail

/// The CUDA policy: the kernels of `<gpass/exec/cuda.hpp>` on one GPU. Constructing it on a
/// machine with no usable GPU throws `gpass::error`; ask `cuda_device_count()` first.
/// \code
///   if (gpass::exec::cuda_device_count() > 0) {
///     gpass::exec::cuda gpu({.device = 0});
///     gpass::exec::plan p(g, gpu);
///     auto y = gpu.download(p.run({gpu.upload(x, gpu.default_stream())})[0].tensor(), gpu.default_stream());
///   }
/// \endcode
class cuda {
 public:
  static constexpr std::string_view name = "cuda";
  using tensor_type = cuda_tensor;
  /// The stream a run queues its work on (all runs of a policy share its stream).
  struct stream_type {
    cudaStream_t stream = nullptr;
  };

  struct options {
    int device = 0;  ///< CUDA device ordinal
    /// Let cuBLAS / cuDNN use TF32 tensor cores for f32 products and convolutions (faster,
    /// about 10 mantissa bits; ONNX Runtime's CUDA provider and PyTorch's convolutions do
    /// by default). Off: full f32.
    bool allow_tf32 = false;
  };

  cuda() : cuda(options{}) {}
  explicit cuda(options o) : options_(o), core_(std::make_shared<cuda_detail::device_core>(o.device)) {
    stream_.stream = core_->stream;
  }
  cuda(const cuda&) = delete;
  cuda& operator=(const cuda&) = delete;
  ~cuda() {
    if (cudnn_) (void)cudnnDestroy(cudnn_);
    if (cublaslt_) (void)cublasLtDestroy(cublaslt_);
  }

  /// The element types a device tensor may have: bool, the integers, f16, bf16, f32, f64
  /// (not strings, complex numbers or the sub-byte and 8-bit float types).
  static constexpr bool holds(dtype t) noexcept { return cuda_codegen::supported(t); }

  int device() const noexcept { return core_->device; }
  /// Compute capability as major * 10 + minor.
  int arch() const noexcept { return core_->arch; }
  int multiprocessors() const noexcept { return core_->multiprocessors; }
  const options& config() const noexcept { return options_; }

  // ---- memory and transfers --------------------------------------------------------
  void* allocate(std::size_t bytes) { return core_->allocate(std::max<std::size_t>(bytes, 1)); }
  void deallocate(void* p, std::size_t) { core_->deallocate(p); }
  void copy_to_device(void* dst, const void* src, std::size_t n, stream_type& s) {
    if (n == 0) return;
    cuda_detail::device_guard g(device());
    // through the staging buffers, in pieces: the host data is copied out before this
    // returns whatever memory it lives in (pageable or page-locked)
    constexpr std::size_t cap = cuda_detail::pinned_staging::capacity;
    for (std::size_t at = 0; at < n; at += cap)
      staging_.copy(static_cast<std::byte*>(dst) + at, static_cast<const std::byte*>(src) + at, std::min(cap, n - at), s.stream);
  }
  void copy_to_host(void* dst, const void* src, std::size_t n, stream_type& s) {
    if (n == 0) return;
    cuda_detail::device_guard g(device());
    cuda_detail::check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s.stream), "copying to the host");
  }
  void copy_on_device(void* dst, const void* src, std::size_t n, stream_type& s) {
    if (n == 0) return;
    cuda_detail::device_guard g(device());
    cuda_detail::check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s.stream), "copying on the device");
  }
  /// Waits for the work queued on `s`; a failure of an earlier kernel surfaces here.
  void synchronize(stream_type& s) {
    cuda_detail::device_guard g(device());
    cuda_detail::check(cudaStreamSynchronize(s.stream), "synchronizing the stream");
  }
  stream_type make_stream() { return stream_; }
  stream_type& default_stream() { return stream_; }

  /// A new device tensor (contents unspecified). Strings have no device form.
  cuda_tensor allocate_tensor(dtype t, std::vector<std::int64_t> sizes, stream_type&) {
    if (t == dtype::string || size_of(t) == 0)
      throw error("cuda: no device tensors of element type " + std::string(to_string(t)));
    for (auto s : sizes)
      if (s < 0) throw error("cuda: negative size " + std::to_string(s));
    const std::size_t n = bytes_or_throw(num_elements_or_throw(sizes), size_of(t));
    return cuda_tensor(t, std::move(sizes), make_buffer(n));
  }
  void fill_zero(cuda_tensor& t, stream_type& s) {
    if (t.nbytes() == 0) return;
    cuda_detail::device_guard g(device());
    cuda_detail::check(cudaMemsetAsync(t.data(), 0, t.nbytes(), s.stream), "clearing a tensor");
  }
  /// A device copy of host tensor `t`, queued on `s` (`t` may be freed at once).
  cuda_tensor upload(const gpass::tensor& t, stream_type& s) {
    cuda_tensor d = allocate_tensor(t.element_type(), t.sizes(), s);
    copy_to_device(d.data(), t.raw(), t.nbytes(), s);
    return d;
  }
  /// A host copy of `t`; the copy is complete when this returns.
  gpass::tensor download(const cuda_tensor& t, stream_type& s) {
    gpass::tensor h = gpass::tensor::uninitialized(t.element_type(), t.sizes());
    if (t.nbytes()) {
      copy_to_host(h.raw(), t.data(), t.nbytes(), s);
      synchronize(s);
    }
    return h;
  }

  /// Device memory for `bytes` as a shared buffer that goes back to the pool when released.
  std::shared_ptr<std::byte> make_buffer(std::size_t bytes) {
    if (bytes == 0) return {};
    auto* p = static_cast<std::byte*>(core_->allocate(bytes));
    return std::shared_ptr<std::byte>(p, [core = core_](std::byte* q) { core->deallocate(q); });
  }

  // ---- what kernels use --------------------------------------------------------------
  /// Launches `k` (a `cuda_kernel_cache` entry) on `s`.
  void launch(cudaKernel_t k, dim3 grid, dim3 block, void** args, stream_type& s, std::size_t shared_bytes = 0) {
    cuda_detail::device_guard g(device());
    cuda_detail::check(cudaLaunchKernel(reinterpret_cast<const void*>(k), grid, block, args, shared_bytes, s.stream),
                       "launching a kernel");
  }
  /// Scratch memory of at least `bytes` for a library call (cuBLASLt, cuDNN), shared by every
  /// kernel of the policy: all work is on one stream, so one call's scratch is free again when
  /// the next call runs. Grown on demand (the old block goes back to the pool, stream-ordered,
  /// once its last holder lets go); hold the returned pointer across the call.
  std::shared_ptr<std::byte> workspace(std::size_t bytes) {
    std::lock_guard lock(workspace_mu_);
    if (bytes > workspace_bytes_ || !workspace_) {
      workspace_ = make_buffer(std::max<std::size_t>(bytes, 1));
      workspace_bytes_ = std::max<std::size_t>(bytes, 1);
    }
    return workspace_;
  }

  /// Blocks for a grid-stride loop over `n` items: enough to fill the device, no more.
  unsigned blocks_for(std::int64_t n, unsigned threads = 256) const noexcept {
    const std::int64_t want = (n + threads - 1) / threads;
    const std::int64_t cap = std::int64_t{core_->multiprocessors} * 32;
    return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(want, cap)));
  }
  /// The compiled entry `entry` of generated `source` for this device (see `cuda_kernel_cache`).
  cudaKernel_t compile(const std::string& source, const std::string& entry) {
    cuda_detail::device_guard g(device());
    return cuda_kernel_cache::instance().get(source, entry, arch());
  }

  /// The cuBLASLt handle (made on first use). cuBLASLt handles may be used concurrently.
  cublasLtHandle_t cublaslt() {
    std::call_once(cublaslt_once_, [&] {
      cuda_detail::device_guard g(device());
      if (cublasLtCreate(&cublaslt_) != CUBLAS_STATUS_SUCCESS) throw error("cuda: cublasLtCreate failed");
    });
    return cublaslt_;
  }
  /// The cuDNN handle bound to the policy's stream, with the lock that serializes its use.
  std::pair<cudnnHandle_t, std::unique_lock<std::mutex>> cudnn() {
    std::call_once(cudnn_once_, [&] {
      cuda_detail::device_guard g(device());
      cudnnStatus_t st = cudnnCreate(&cudnn_);
      if (st != CUDNN_STATUS_SUCCESS) throw error(std::string("cuda: cudnnCreate failed: ") + cudnnGetErrorString(st));
      st = cudnnSetStream(cudnn_, stream_.stream);
      if (st != CUDNN_STATUS_SUCCESS) throw error(std::string("cuda: cudnnSetStream failed: ") + cudnnGetErrorString(st));
    });
    return {cudnn_, std::unique_lock<std::mutex>(cudnn_mu_)};
  }

  /// The kernels (defined in `<gpass/exec/cuda.hpp>`).
  const kernel_registry<cuda>& kernels() const;

 private:
  options options_;
  std::shared_ptr<cuda_detail::device_core> core_;
  stream_type stream_;
  cuda_detail::pinned_staging staging_;
  std::once_flag cublaslt_once_, cudnn_once_;
  cublasLtHandle_t cublaslt_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  std::mutex cudnn_mu_;
  std::mutex workspace_mu_;
  std::shared_ptr<std::byte> workspace_;
  std::size_t workspace_bytes_ = 0;
};

static_assert(executor_policy<cuda>);

}  // namespace gpass::exec
