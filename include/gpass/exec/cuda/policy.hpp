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
///
/// While a CUDA graph is captured from the stream (`cuda_graph_plan`, `<gpass/exec/cuda/graph.hpp>`)
/// the policy hands out memory the graph owns, keeps the host data of uploads in pinned memory
/// the graph owns, and refuses what a graph cannot hold: a read back to the host.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
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
#include <gpass/exec/cuda/dynload.hpp>
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

/// What a CUDA graph captured from a policy's stream owns (see `cuda_graph_plan`): the device
/// blocks its allocations got (`cudaMalloc`, outside the stream-ordered pool: a graph replays
/// the addresses it captured), the pinned host copies its uploads read, the pool blocks the host
/// let go of during the capture that the graph still reads, and references to the buffers made
/// before the capture that it uses (the policy's workspace). Freed with the graph.
///
/// While capturing, a block released by the host is reused by a later allocation of the same
/// capture: the captured work is one stream's, so every kernel that read the block is ordered
/// before the one that writes it again, on each replay too.
class capture_state : public std::enable_shared_from_this<capture_state> {
 public:
  capture_state(int device, cudaStream_t stream, std::shared_ptr<void> keep_stream)
      : device_(device), stream_(stream), keep_stream_(std::move(keep_stream)) {}
  capture_state(const capture_state&) = delete;
  capture_state& operator=(const capture_state&) = delete;
  /// The graph that read these blocks is destroyed or has finished (its owner synchronizes).
  ~capture_state() {
    int cur = -1;
    (void)cudaGetDevice(&cur);
    if (cur != device_) (void)cudaSetDevice(device_);
    for (const auto& [p, n] : size_of_) {
      (void)n;
      (void)cudaFree(p);
    }
    for (void* h : host_) (void)cudaFreeHost(h);
    for (void* p : adopted_) (void)cudaFreeAsync(p, stream_);
    if (cur >= 0 && cur != device_) (void)cudaSetDevice(cur);
  }

  /// Device memory for `bytes` that lives as long as the graph.
  std::shared_ptr<std::byte> make_buffer(std::size_t bytes) {
    void* p = nullptr;
    {
      std::lock_guard lock(mu_);
      if (auto it = free_.lower_bound(bytes); it != free_.end() && it->first <= 2 * bytes) {
        p = it->second;
        free_.erase(it);
      }
    }
    if (!p) {
      check(cudaMalloc(&p, bytes), "allocating " + std::to_string(bytes) + " bytes of device memory for a CUDA graph");
      std::lock_guard lock(mu_);
      size_of_.emplace(p, bytes);
      bytes_ += bytes;
    }
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(p), [self = shared_from_this()](std::byte* q) { self->release(q); });
  }
  /// A pinned copy of `n` host bytes at `src` that lives as long as the graph (what a captured
  /// host-to-device copy reads on each replay).
  const void* host_copy(const void* src, std::size_t n) {
    void* h = nullptr;
    check(cudaMallocHost(&h, n), "allocating pinned host memory for a CUDA graph");
    std::memcpy(h, src, n);
    std::lock_guard lock(mu_);
    host_.push_back(h);
    return h;
  }
  /// A pool block the host let go of while capturing: the captured work may read it.
  void adopt(void* p) noexcept {
    std::lock_guard lock(mu_);
    adopted_.push_back(p);
  }
  /// A buffer made before the capture that the captured work uses.
  void keep(std::shared_ptr<std::byte> b) {
    std::lock_guard lock(mu_);
    kept_.push_back(std::move(b));
  }
  /// The capture is over: released blocks are no longer handed out again.
  void seal() noexcept {
    std::lock_guard lock(mu_);
    sealed_ = true;
    free_.clear();
  }
  /// Device bytes the graph owns.
  std::size_t bytes() const noexcept {
    std::lock_guard lock(mu_);
    return bytes_;
  }
  /// Why the capture failed in a way that a later capture may not (the workspace had to grow).
  bool retry = false;

 private:
  void release(void* p) noexcept {
    std::lock_guard lock(mu_);
    if (sealed_) return;
    if (auto it = size_of_.find(p); it != size_of_.end()) free_.emplace(it->second, p);
  }

  int device_;
  cudaStream_t stream_;
  std::shared_ptr<void> keep_stream_;
  mutable std::mutex mu_;
  bool sealed_ = false;
  std::unordered_map<void*, std::size_t> size_of_;
  std::multimap<std::size_t, void*> free_;
  std::vector<void*> host_;
  std::vector<void*> adopted_;
  std::vector<std::shared_ptr<std::byte>> kept_;
  std::size_t bytes_ = 0;
};

/// What a policy's tensors need after the policy is gone: the device, the stream their
/// memory is ordered on, the pool. Destroyed with the last of them.
struct device_core {
  int device = 0;
  int arch = 0;
  int multiprocessors = 1;
  cudaStream_t stream = nullptr;
  cudaMemPool_t pool = nullptr;
  /// The capture in progress on `stream`, or null (set by `cuda::begin_capture`).
  std::atomic<capture_state*> capture{nullptr};

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
    if (capture_state* c = capture.load(std::memory_order_acquire)) {
      c->adopt(p);  // a captured kernel may read it: it lives as long as the graph
      return;
    }
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

/// Two pinned host buffers that device-to-host copies go through, in pieces: piece k is
/// copied by the DMA engine into one buffer while the host copies piece k-1 out of the other
/// into the destination. A copy straight into pageable memory goes through the driver's own
/// staging, a piece at a time with no overlap (about 1.4 GB/s into a fresh 12.6 MB tensor on
/// a lent H200 machine).
class pinned_readback {
 public:
  static constexpr std::size_t capacity = std::size_t{4} << 20;
  pinned_readback() = default;
  pinned_readback(const pinned_readback&) = delete;
  pinned_readback& operator=(const pinned_readback&) = delete;
  ~pinned_readback() {
    for (auto& s : slots_) {
      if (s.done) (void)cudaEventDestroy(s.done);
      if (s.host) (void)cudaFreeHost(s.host);
    }
  }
  /// Copies `n` bytes from `src` (device) to `dst` (host) behind the work queued on `stream`;
  /// complete when this returns.
  void copy(void* dst, const void* src, std::size_t n, cudaStream_t stream) {
    std::lock_guard lock(mu_);
    for (auto& s : slots_)
      if (!s.host) {
        check(cudaMallocHost(&s.host, capacity), "allocating pinned host memory");
        check(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming), "creating an event");
      }
    struct piece {
      std::size_t slot, at, len;
    };
    std::optional<piece> pending;  // queued on the stream, not yet copied out
    std::size_t at = 0, k = 0;
    while (at < n || pending) {
      std::optional<piece> queued;
      if (at < n) {
        const piece p{k % slots_.size(), at, std::min(capacity, n - at)};
        check(cudaMemcpyAsync(slots_[p.slot].host, static_cast<const std::byte*>(src) + p.at, p.len, cudaMemcpyDeviceToHost, stream),
              "copying to the host");
        check(cudaEventRecord(slots_[p.slot].done, stream), "recording an event");
        queued = p;
        at += p.len;
        ++k;
      }
      if (pending) {  // its slot is not the one just queued: two slots, alternating
        check(cudaEventSynchronize(slots_[pending->slot].done), "waiting for a copy to the host");
        std::memcpy(static_cast<std::byte*>(dst) + pending->at, slots_[pending->slot].host, pending->len);
      }
      pending = queued;
    }
  }

 private:
  struct slot {
    void* host = nullptr;
    cudaEvent_t done = nullptr;
  };
  std::mutex mu_;
  std::array<slot, 2> slots_{};
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
    /// How a convolution's bias, residual and ReLU are applied where cuDNN's fused call
    /// (`cudnnConvolutionBiasActivationForward`) could do it: the faster of that call and the
    /// convolution followed by one generated kernel, timed once per shape; or always one of them.
    enum class epilogue { timed, cudnn_fused, separate };
    epilogue conv_epilogue = epilogue::timed;
    /// `download` of `pinned_download_min` (32 MiB) or more through pinned buffers, the
    /// host's copy out of one overlapping the device's copy into the other; off, or smaller:
    /// one copy into the pageable result.
    bool pinned_download = true;
  };

  cuda() : cuda(options{}) {}
  explicit cuda(options o) : options_(o), core_(std::make_shared<cuda_detail::device_core>(o.device)) {
    stream_.stream = core_->stream;
  }
  cuda(const cuda&) = delete;
  cuda& operator=(const cuda&) = delete;
  ~cuda() {
    if (cudnn_) (void)cudnnDestroy(cudnn_);
    if (cublaslt_) (void)GPASS_CUBLASLT(cublasLtDestroy)(cublaslt_);
  }

  /// The element types a device tensor may have: bool, the integers, f16, bf16, f32, f64, and
  /// complex64 / complex128 (not strings or the sub-byte and 8-bit float types). Complex
  /// values go only to the kernels that take them (`serves_types`).
  static constexpr bool holds(dtype t) noexcept {
    return cuda_codegen::supported(t) || t == dtype::complex64 || t == dtype::complex128;
  }
  /// Whether the kernels may serve a node of these element types (a session's placer asks,
  /// with the registry's `serves`): a node that reads or makes a complex value only where its
  /// op computes on complex values or only moves its buffer (TensorFlow's FFT family and
  /// complex parts, the views, constants); a kernel's dtype list names one input's type, and
  /// most kernels generate arithmetic for the types `cuda_codegen::supported` lists. Defined in
  /// <gpass/exec/cuda.hpp>.
  static bool serves_types(const kernel_query& q);

  int device() const noexcept { return core_->device; }
  /// Compute capability as major * 10 + minor.
  int arch() const noexcept { return core_->arch; }
  int multiprocessors() const noexcept { return core_->multiprocessors; }
  const options& config() const noexcept { return options_; }

  // ---- memory and transfers --------------------------------------------------------
  void* allocate(std::size_t bytes) {
    if (capturing()) throw error("cuda: a raw allocation cannot be captured in a CUDA graph");
    return core_->allocate(std::max<std::size_t>(bytes, 1));
  }
  void deallocate(void* p, std::size_t) { core_->deallocate(p); }
  void copy_to_device(void* dst, const void* src, std::size_t n, stream_type& s) {
    if (n == 0) return;
    cuda_detail::device_guard g(device());
    if (cuda_detail::capture_state* c = capturing()) {
      // the graph replays the copy: its source must outlive this call, with the same bytes
      cuda_detail::check(cudaMemcpyAsync(dst, c->host_copy(src, n), n, cudaMemcpyHostToDevice, s.stream), "copying to the device");
      return;
    }
    // through the staging buffers, in pieces: the host data is copied out before this
    // returns whatever memory it lives in (pageable or page-locked)
    constexpr std::size_t cap = cuda_detail::pinned_staging::capacity;
    for (std::size_t at = 0; at < n; at += cap)
      staging_.copy(static_cast<std::byte*>(dst) + at, static_cast<const std::byte*>(src) + at, std::min(cap, n - at), s.stream);
  }
  void copy_to_host(void* dst, const void* src, std::size_t n, stream_type& s) {
    if (n == 0) return;
    if (capturing())
      throw error("cuda: a value read back to the host (a loop's condition, a shape computed on the device) cannot be captured in a CUDA graph");
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
    if (capturing()) return;  // the graph's launch is synchronized by whoever launches it
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
  /// The size from which `download` goes through the pinned buffers (measured on a lent H200
  /// machine: 105 MB 15% faster than the driver's pageable copy, 13 MB 10% slower).
  static constexpr std::size_t pinned_download_min = std::size_t{32} << 20;
  gpass::tensor download(const cuda_tensor& t, stream_type& s) {
    gpass::tensor h = gpass::tensor::uninitialized(t.element_type(), t.sizes());
    if (t.nbytes() >= pinned_download_min && options_.pinned_download && !capturing()) {
      cuda_detail::device_guard g(device());
      readback_.copy(h.raw(), t.data(), t.nbytes(), s.stream);
    } else if (t.nbytes()) {
      copy_to_host(h.raw(), t.data(), t.nbytes(), s);
      synchronize(s);
    }
    return h;
  }

  /// Device memory for `bytes` as a shared buffer that goes back to the pool when released.
  std::shared_ptr<std::byte> make_buffer(std::size_t bytes) {
    if (bytes == 0) return {};
    if (cuda_detail::capture_state* c = capturing()) return c->make_buffer(bytes);
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
    if (cuda_detail::capture_state* c = capturing()) {
      if (bytes > workspace_bytes_ || !workspace_) {
        c->retry = true;  // the run outside the capture grows it; the next capture fits
        throw error("cuda: the workspace must grow to " + std::to_string(bytes) + " bytes, which a CUDA graph capture cannot do");
      }
      c->keep(workspace_);
      return workspace_;
    }
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
      if (GPASS_CUBLASLT(cublasLtCreate)(&cublaslt_) != CUBLAS_STATUS_SUCCESS) throw error("cuda: cublasLtCreate failed");
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

  // ---- CUDA graph capture (what `cuda_graph_plan` uses) -------------------------------
  /// The owner of a new graph's memory on this policy's device and stream.
  std::shared_ptr<cuda_detail::capture_state> make_capture_state() const {
    return std::make_shared<cuda_detail::capture_state>(core_->device, core_->stream, std::shared_ptr<void>(core_));
  }
  /// Starts capturing the policy's stream into a graph whose memory `c` owns. Nothing else may
  /// use the policy until `end_capture`: all its work is captured.
  void begin_capture(std::shared_ptr<cuda_detail::capture_state> c) {
    cuda_detail::device_guard g(device());
    capture_ = std::move(c);
    core_->capture.store(capture_.get(), std::memory_order_release);
    const cudaError_t e = cudaStreamBeginCapture(stream_.stream, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) {
      core_->capture.store(nullptr, std::memory_order_release);
      capture_.reset();
      cuda_detail::check(e, "beginning a CUDA graph capture");
    }
  }
  /// Ends the capture: the graph (null, with the error, when the capture failed).
  std::pair<cudaGraph_t, cudaError_t> end_capture() noexcept {
    cudaGraph_t graph = nullptr;
    const cudaError_t e = cudaStreamEndCapture(stream_.stream, &graph);
    core_->capture.store(nullptr, std::memory_order_release);
    if (capture_) capture_->seal();
    capture_.reset();
    if (e != cudaSuccess && graph) {
      (void)cudaGraphDestroy(graph);
      graph = nullptr;
    }
    (void)cudaGetLastError();  // a capture's failure is not sticky: clear it
    return {graph, e};
  }
  /// The capture in progress, or null.
  cuda_detail::capture_state* capturing() const noexcept { return core_->capture.load(std::memory_order_acquire); }

  /// The kernels (defined in `<gpass/exec/cuda.hpp>`).
  const kernel_registry<cuda>& kernels() const;

 private:
  options options_;
  std::shared_ptr<cuda_detail::device_core> core_;
  std::shared_ptr<cuda_detail::capture_state> capture_;
  stream_type stream_;
  cuda_detail::pinned_staging staging_;
  cuda_detail::pinned_readback readback_;
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
