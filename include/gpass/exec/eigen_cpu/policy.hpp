#pragma once
/// \file policy.hpp
/// `gpass::exec::eigen_cpu`: the CPU executor policy: host memory, an intra-op thread pool
/// (Eigen's non-blocking `ThreadPool`), and `parallel_for`. Include `<gpass/exec/eigen_cpu.hpp>`
/// for the policy together with its kernels.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <memory>
#include <new>
#include <string_view>
#include <vector>

#define EIGEN_USE_THREADS 1
#include <unsupported/Eigen/CXX11/ThreadPool>

#include <gpass/core/tensor.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/policy.hpp>

namespace gpass::exec {

/// The CPU policy. `threads` is the intra-op parallelism: the calling thread plus
/// `threads - 1` pool workers (1: everything runs on the caller, no pool). One policy may
/// serve any number of plans and concurrent runs.
/// \code
///   gpass::exec::eigen_cpu cpu({.threads = 4});
///   gpass::exec::plan p(g, cpu);
/// \endcode
class eigen_cpu {
 public:
  static constexpr std::string_view name = "cpu";
  using tensor_type = gpass::tensor;
  struct stream_type {};  ///< the CPU runs kernels in order on the calling thread

  struct options {
    int threads = 1;  ///< intra-op threads, caller included (>= 1)
  };

  eigen_cpu() : eigen_cpu(options{}) {}
  explicit eigen_cpu(options o) : threads_(std::max(1, o.threads)) {
    if (threads_ > 1) pool_ = std::make_unique<Eigen::ThreadPool>(threads_ - 1);
  }
  eigen_cpu(const eigen_cpu&) = delete;
  eigen_cpu& operator=(const eigen_cpu&) = delete;

  int threads() const noexcept { return threads_; }

  // ---- memory and transfers (host memory: copies are memcpy) -------------------------
  void* allocate(std::size_t bytes) { return ::operator new[](std::max<std::size_t>(bytes, 1), std::align_val_t{64}); }
  void deallocate(void* p, std::size_t) { ::operator delete[](p, std::align_val_t{64}); }
  void copy_to_device(void* dst, const void* src, std::size_t n, stream_type&) { copy(dst, src, n); }
  void copy_to_host(void* dst, const void* src, std::size_t n, stream_type&) { copy(dst, src, n); }
  void copy_on_device(void* dst, const void* src, std::size_t n, stream_type&) { copy(dst, src, n); }
  void synchronize(stream_type&) {}
  stream_type make_stream() { return {}; }
  stream_type& default_stream() { return stream_; }
  gpass::tensor upload(const gpass::tensor& t, stream_type&) { return t; }
  gpass::tensor download(const gpass::tensor& t, stream_type&) { return t; }
  gpass::tensor allocate_tensor(dtype t, std::vector<std::int64_t> sizes, stream_type&) {
    return t == dtype::string ? gpass::tensor(t, std::move(sizes)) : gpass::tensor::uninitialized(t, std::move(sizes));
  }
  void fill_zero(gpass::tensor& t, stream_type&) {
    if (t.element_type() != dtype::string && t.nbytes()) std::memset(t.raw(), 0, t.nbytes());
  }

  /// The kernels (defined in `<gpass/exec/eigen_cpu.hpp>`).
  const kernel_registry<eigen_cpu>& kernels() const;

  // ---- intra-op parallelism ----------------------------------------------------------

  /// Calls `f(begin, end)` on disjoint ranges covering [0, n), in parallel on the pool when
  /// there is enough work: `cost` is a rough cost of one item in nanoseconds-like units (ranges
  /// below about 20,000 units are not worth a thread hop). Returns when all are done; the first
  /// exception thrown by `f` is rethrown then. Calls made from a pool worker run inline (no
  /// nested waiting).
  template <class F>
  void parallel_for(std::int64_t n, double cost, F&& f) const {
    if (n <= 0) return;
    const int workers = pool_ ? threads_ : 1;
    std::int64_t chunks = 1;
    if (workers > 1 && pool_->CurrentThreadId() < 0) {
      const double total = cost * static_cast<double>(n);
      chunks = std::min<std::int64_t>({n, workers, static_cast<std::int64_t>(total / 20000.0) + 1});
    }
    if (chunks <= 1) {
      f(std::int64_t{0}, n);
      return;
    }
    const std::int64_t step = (n + chunks - 1) / chunks;
    chunks = (n + step - 1) / step;
    Eigen::Barrier done(static_cast<unsigned>(chunks - 1));
    std::mutex m;
    std::exception_ptr failure;
    auto guarded = [&](std::int64_t b, std::int64_t e) {
      try {
        f(b, e);
      } catch (...) {
        std::lock_guard lock(m);
        if (!failure) failure = std::current_exception();
      }
    };
    for (std::int64_t c = 1; c < chunks; ++c) {
      const std::int64_t b = c * step, e = std::min(n, b + step);
      pool_->Schedule([&guarded, &done, b, e] {
        guarded(b, e);
        done.Notify();
      });
    }
    guarded(std::int64_t{0}, std::min(n, step));
    done.Wait();
    if (failure) std::rethrow_exception(failure);
  }

 private:
  static void copy(void* dst, const void* src, std::size_t n) {
    if (n) std::memcpy(dst, src, n);
  }

  int threads_ = 1;
  std::unique_ptr<Eigen::ThreadPool> pool_;
  stream_type stream_;
};

}  // namespace gpass::exec
