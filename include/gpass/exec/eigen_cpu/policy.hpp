// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file policy.hpp
/// `gpass::exec::eigen_cpu`: the CPU executor policy: host memory, an intra-op thread pool
/// whose workers spin briefly before sleeping (like ONNX Runtime's: a plan's kernels follow
/// each other within microseconds, and waking a sleeping thread costs tens), and
/// `parallel_for`. Include `<gpass/exec/eigen_cpu.hpp>` for the policy together with its kernels.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <memory>
#include <new>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <gpass/core/tensor.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/policy.hpp>

namespace gpass::exec {

namespace detail {

/// A spin-wait's pause (x86: the PAUSE instruction; elsewhere a yield).
inline void pause_cpu() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

/// The ranges of one `eigen_cpu::parallel_for` call offered to the workers directly (see
/// `worker_pool::offer`): it lives on the caller's stack, workers claim ranges through `next`
/// and count them down in `left` as they finish.
struct offered_ranges {
  void (*call)(void* f, std::int64_t begin, std::int64_t end) = nullptr;
  void* f = nullptr;
  std::int64_t n = 0, step = 1, chunks = 0;
  std::atomic<std::int64_t> next{0};
  std::atomic<std::int64_t> left{0};
  std::atomic<bool> failed{false};
  std::exception_ptr failure;  ///< written by the one thread that set `failed` first

  /// Claims and runs ranges until none is left to claim.
  void run() noexcept {
    for (;;) {
      const std::int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks) return;
      try {
        call(f, c * step, std::min(n, c * step + step));
      } catch (...) {
        if (!failed.exchange(true, std::memory_order_acq_rel)) failure = std::current_exception();
      }
      left.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
};

/// A fixed set of worker threads running scheduled tasks in order. An idle worker spins for
/// up to `spin` (checking for new work) before it sleeps on a condition variable.
///
/// Besides the queue, one `parallel_for` at a time may `offer` its ranges in a slot the
/// spinning workers watch: a worker then starts on a range after reading one cache line the
/// caller wrote, not after the queue's lock, a heap-allocated task and a shared state (a
/// `parallel_for` of two 5 us ranges on 2 threads: 7.0 us through the queue; see
/// `eigen_cpu::parallel_for`). The offer lives on the caller's stack: the caller withdraws it
/// and waits until no worker is still reading it (`readers_`) before it returns.
class worker_pool {
 public:
  worker_pool(int workers, std::chrono::microseconds spin) : spin_(spin) {
    threads_.reserve(static_cast<std::size_t>(workers));
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { loop(); });
  }
  worker_pool(const worker_pool&) = delete;
  worker_pool& operator=(const worker_pool&) = delete;
  ~worker_pool() {
    stopping_.store(true, std::memory_order_relaxed);
    {
      std::lock_guard lock(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  void schedule(std::function<void()> task) {
    std::lock_guard lock(m_);
    queue_.push_back(std::move(task));
    pending_.fetch_add(1, std::memory_order_release);
    if (sleepers_ > 0) wake_.notify_one();
  }
  /// Puts `r` in the offer slot, for the workers to run ranges of; false when another call's
  /// ranges are there (the caller then schedules tasks instead).
  bool offer(offered_ranges& r) {
    offered_ranges* expected = nullptr;
    if (!offer_.compare_exchange_strong(expected, &r, std::memory_order_seq_cst)) return false;
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleepers_count_.load(std::memory_order_seq_cst) > 0) {  // wake the sleeping ones
      std::lock_guard lock(m_);
      wake_.notify_all();
    }
    return true;
  }
  /// Takes `r` (offered by this thread) out of the slot and returns once no worker can still
  /// touch it: the ranges claimed are finished (`left` 0) and no worker is between reading
  /// the slot and leaving it.
  void withdraw(offered_ranges& r) noexcept {
    offer_.store(nullptr, std::memory_order_seq_cst);
    const auto until = std::chrono::steady_clock::now() + spin_;
    bool spinning = true;
    for (unsigned i = 1; r.left.load(std::memory_order_acquire) != 0 || readers_.load(std::memory_order_seq_cst) != 0; ++i) {
      if (spinning) {
        pause_cpu();
        if (i % 256 == 0 && std::chrono::steady_clock::now() > until) spinning = false;
      } else {
        std::this_thread::yield();  // a long range, or a reader descheduled: let the others run
      }
    }
  }
  /// Whether the calling thread is one of this pool's workers.
  bool in_worker() const noexcept { return current() == this; }
  /// How long an idle worker spins before it sleeps.
  std::chrono::microseconds spin() const noexcept { return spin_; }

 private:
  static const worker_pool*& current() noexcept {
    thread_local const worker_pool* p = nullptr;
    return p;
  }
  /// Runs the ranges of the offer in the slot, if any this worker has not run yet (`seen`: the
  /// generation of the last offer it took part in). The offer is read only between counting
  /// this worker in `readers_` and out (see `withdraw`).
  bool run_offer(std::uint64_t& seen) noexcept {
    readers_.fetch_add(1, std::memory_order_seq_cst);
    const std::uint64_t gen = generation_.load(std::memory_order_seq_cst);
    offered_ranges* r = offer_.load(std::memory_order_seq_cst);
    const bool any = r != nullptr && gen != seen;
    if (any) {
      r->run();
      seen = gen;
    }
    readers_.fetch_sub(1, std::memory_order_release);
    return any;
  }
  /// Whether an offer this worker has not taken part in may be in the slot (reads no offer).
  bool offered(std::uint64_t seen) const noexcept {
    return offer_.load(std::memory_order_seq_cst) != nullptr && generation_.load(std::memory_order_seq_cst) != seen;
  }
  void loop() {
    current() = this;
    std::uint64_t seen = 0;  // the generation of the last offer this worker took part in
    for (;;) {
      if (spin_.count() > 0) {
        auto until = std::chrono::steady_clock::now() + spin_;
        for (unsigned i = 1; pending_.load(std::memory_order_acquire) == 0; ++i) {
          if (offered(seen)) {
            run_offer(seen);
            until = std::chrono::steady_clock::now() + spin_;  // spin again after the work
            continue;
          }
          pause_cpu();
          if (i % 256 == 0 && (stopping_.load(std::memory_order_relaxed) || std::chrono::steady_clock::now() > until)) break;
        }
      }
      if (run_offer(seen)) continue;
      std::function<void()> task;
      {
        std::unique_lock lock(m_);
        while (queue_.empty() && !stop_ && !offered(seen)) {
          ++sleepers_;
          sleepers_count_.fetch_add(1, std::memory_order_seq_cst);
          if (!offered(seen)) wake_.wait(lock);
          sleepers_count_.fetch_sub(1, std::memory_order_relaxed);
          --sleepers_;
        }
        if (queue_.empty() && offered(seen)) continue;  // run the offer (outside the lock)
        if (queue_.empty()) return;  // stopping, nothing left
        task = std::move(queue_.front());
        queue_.pop_front();
        pending_.fetch_sub(1, std::memory_order_relaxed);
      }
      task();
    }
  }

  std::chrono::microseconds spin_;
  std::mutex m_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  std::atomic<std::int64_t> pending_{0};
  std::atomic<offered_ranges*> offer_{nullptr};
  std::atomic<std::uint64_t> generation_{0};  ///< offers made so far
  std::atomic<int> readers_{0};         ///< workers between reading offer_ and leaving it
  std::atomic<int> sleepers_count_{0};  ///< sleepers_, readable without the lock
  std::atomic<bool> stopping_{false};
  int sleepers_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

/// The ranges of one `eigen_cpu::parallel_for` call: claimed through `next`, counted down in
/// `left` as they finish.
struct parallel_for_state {
  explicit parallel_for_state(std::int64_t n) : chunks(n), left(n) {}
  const std::int64_t chunks;
  std::atomic<std::int64_t> next{0};
  std::atomic<std::int64_t> left;
  std::mutex m;
  std::condition_variable done;
  std::exception_ptr failure;

  /// Claims and runs ranges until none is left to claim.
  template <class F>
  void run(F& f, std::int64_t n, std::int64_t step) {
    for (;;) {
      const std::int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks) return;
      try {
        f(c * step, std::min(n, c * step + step));
      } catch (...) {
        std::lock_guard lock(m);
        if (!failure) failure = std::current_exception();
      }
      if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard lock(m);
        done.notify_all();
      }
    }
  }
  /// Waits until every range has finished: spinning up to `spin` first (a worker's range
  /// ends within microseconds of the caller's in a balanced split, and a thread woken from
  /// a condition variable takes tens of microseconds to run again: with a spin of 4000 loads
  /// instead, ResNet50 at batch 1 on 2 threads took 31.4 ms a run, now 29.0).
  void wait(std::chrono::microseconds spin) {
    if (spin.count() > 0) {
      const auto until = std::chrono::steady_clock::now() + spin;
      for (unsigned i = 1; left.load(std::memory_order_acquire) != 0; ++i) {
        pause_cpu();
        if (i % 256 == 0 && std::chrono::steady_clock::now() > until) break;
      }
    }
    if (left.load(std::memory_order_acquire) == 0) return;
    std::unique_lock lock(m);
    done.wait(lock, [&] { return left.load(std::memory_order_acquire) == 0; });
  }
};
}  // namespace detail

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
    int threads = 1;     ///< intra-op threads, caller included (>= 1)
    int spin_us = 200;   ///< how long an idle worker spins for new work, and a caller for its workers' ranges, before sleeping (0: sleep at once)
  };

  eigen_cpu() : eigen_cpu(options{}) {}
  explicit eigen_cpu(options o) : threads_(std::max(1, o.threads)) {
    if (threads_ > 1)
      pool_ = std::make_unique<detail::worker_pool>(threads_ - 1, std::chrono::microseconds(std::max(0, o.spin_us)));
  }
  eigen_cpu(const eigen_cpu&) = delete;
  eigen_cpu& operator=(const eigen_cpu&) = delete;

  /// The intra-op threads a kernel may use now: 1 inside a `serial_scope` on this thread.
  int threads() const noexcept { return serial_depth() > 0 ? 1 : threads_; }

  /// While one lives, `parallel_for` calls made on this thread run inline and `threads()` is
  /// 1: a plan running a sub-batch per pool thread makes its kernels single-threaded so.
  class serial_scope {
   public:
    serial_scope() noexcept { ++serial_depth(); }
    ~serial_scope() { --serial_depth(); }
    serial_scope(const serial_scope&) = delete;
    serial_scope& operator=(const serial_scope&) = delete;
  };

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
  /// nested waiting). The ranges are claimed dynamically: the calling thread runs ranges too,
  /// and runs those no worker has started yet (a worker that is slow to wake up, on a busy
  /// machine, delays nothing but its own range). The ranges go to the workers through the
  /// pool's offer slot (one call at a time; the others through its queue): two 5 us ranges on
  /// 2 threads take 5.6-5.9 us a call so, 6.9-7.2 us through the queue (a scratch loop of
  /// 20,000 calls), about 1 us less for each of a network's convolutions at batch 1.
  template <class F>
  void parallel_for(std::int64_t n, double cost, F&& f) const {
    if (n <= 0) return;
    const int workers = pool_ && serial_depth() == 0 ? threads_ : 1;
    std::int64_t chunks = 1;
    if (workers > 1 && !pool_->in_worker()) {
      const double total = cost * static_cast<double>(n);
      chunks = std::min<std::int64_t>({n, workers, static_cast<std::int64_t>(total / 20000.0) + 1});
    }
    if (chunks <= 1) {
      f(std::int64_t{0}, n);
      return;
    }
    const std::int64_t step = (n + chunks - 1) / chunks;
    chunks = (n + step - 1) / step;
    using fn_type = std::remove_reference_t<F>;
    {  // the offer slot: the workers start within a cache line's transfer
      detail::offered_ranges r;
      r.call = [](void* fp, std::int64_t b, std::int64_t e) { (*static_cast<fn_type*>(fp))(b, e); };
      r.f = const_cast<void*>(static_cast<const void*>(std::addressof(f)));
      r.n = n;
      r.step = step;
      r.chunks = chunks;
      r.left.store(chunks, std::memory_order_relaxed);
      if (pool_->offer(r)) {
        r.run();
        pool_->withdraw(r);  // waits for the ranges the workers claimed
        if (r.failed.load(std::memory_order_acquire)) std::rethrow_exception(r.failure);
        return;
      }
    }
    // another call holds the slot: tasks on the queue, with a shared state
    // shared with the scheduled helpers, which may start after the call returned: they touch
    // `f` only after claiming a range, and the call waits for every claimed range
    auto st = std::make_shared<detail::parallel_for_state>(chunks);
    fn_type* fp = &f;
    for (std::int64_t c = 1; c < chunks; ++c)
      pool_->schedule([st, fp, n, step] { st->run(*fp, n, step); });
    st->run(f, n, step);
    st->wait(pool_->spin());
    if (st->failure) std::rethrow_exception(st->failure);
  }

 private:
  static int& serial_depth() noexcept {
    thread_local int depth = 0;
    return depth;
  }
  static void copy(void* dst, const void* src, std::size_t n) {
    if (n) std::memcpy(dst, src, n);
  }

  int threads_ = 1;
  std::unique_ptr<detail::worker_pool> pool_;
  stream_type stream_;
};

}  // namespace gpass::exec
