// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file collectives.hpp
/// `gpass::exec::process_group`: the processes of a data-parallel run (MPI ranks, see
/// `gpass/session/mpi.hpp`) as the collective kernels `all_reduce` and `all_gather` see them,
/// and `thread_process_group`, the same contract between threads of one process (tests, and
/// a reference for other transports).

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>

namespace gpass::exec {

/// The processes that run one program together, each with its own copy of the graph. Every
/// process makes the same collective calls in the same order (the `multi-devices` pass chains
/// the collective nodes so that they do); a call returns when every process has made it.
class process_group {
 public:
  virtual ~process_group() = default;
  /// This process's index, 0 .. size()-1.
  virtual int rank() const noexcept = 0;
  /// The number of processes.
  virtual int size() const noexcept = 0;
  /// Replaces `t` by the elementwise sum of every process's `t` (same dtype and sizes in
  /// every process; f32, f64, i32, i64). `what` names the caller in errors.
  virtual void all_reduce_sum(tensor& t, const std::string& what) = 0;
  /// Every process's `t` concatenated along dim 0 in rank order (the other dims, and the
  /// dtype, the same in every process; numeric dtypes). `what` names the caller in errors.
  virtual tensor all_gather(const tensor& t, const std::string& what) = 0;
};

namespace detail {

// The elementwise sum of equally shaped numeric tensors, added in the order given (so every
// caller that sums the same list gets the same bits). One part is returned as it is (its
// buffer shared: a caller that writes to the result copies it first when it is not the sole
// owner, see `owned`).
inline tensor sum_in_order(const std::vector<tensor>& parts, const std::string& what) {
  if (parts.empty()) throw error(what + ": nothing to sum");
  const tensor& first = parts.front();
  for (const auto& p : parts)
    if (p.element_type() != first.element_type() || p.sizes() != first.sizes())
      throw error(what + ": the replicas' tensors differ (" + std::string(to_string(first.element_type())) +
                  shape::of(first.sizes()).to_string() + " and " + std::string(to_string(p.element_type())) +
                  shape::of(p.sizes()).to_string() + ")");
  if (!is_trivial(first.element_type()) || first.element_type() == dtype::bool_)
    throw error(what + ": cannot sum " + std::string(to_string(first.element_type())) + " tensors");
  if (parts.size() == 1) return first;
  tensor r = first.clone();
  visit_dtype(first.element_type(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, std::string> && !std::is_same_v<T, bool>) {
      T* out = r.data<T>();
      const std::size_t n = static_cast<std::size_t>(r.size());
      for (std::size_t k = 1; k < parts.size(); ++k) {
        const T* in = parts[k].data<T>();
        if constexpr (std::is_integral_v<T>) {  // wrapping (two's complement), never a signed overflow
          using U = std::make_unsigned_t<T>;
          for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<U>(out[i]) + static_cast<U>(in[i]));
        } else {
          for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(out[i] + in[i]);
        }
      }
    }
  });
  return r;
}

// `t` itself when nothing else holds its buffer, else a copy: a tensor that may be written.
inline tensor owned(tensor t) {
  if (t.buffer() && t.buffer().use_count() == 1) return t;
  return t.clone();
}

// Tensors concatenated along dim 0 (the other dims and the dtype equal).
inline tensor concat_rows(const std::vector<tensor>& parts, const std::string& what) {
  if (parts.empty()) throw error(what + ": nothing to concatenate");
  const tensor& first = parts.front();
  if (first.rank() == 0) throw error(what + ": cannot concatenate scalars along dim 0");
  std::vector<std::int64_t> sizes = first.sizes();
  sizes[0] = 0;
  for (const auto& p : parts) {
    bool same = p.element_type() == first.element_type() && p.rank() == first.rank();
    for (std::size_t d = 1; same && d < p.rank(); ++d) same = p.sizes()[d] == first.sizes()[d];
    if (!same)
      throw error(what + ": the replicas' tensors differ beyond dim 0 (" + shape::of(first.sizes()).to_string() + " and " +
                  shape::of(p.sizes()).to_string() + ")");
    sizes[0] += p.sizes()[0];
  }
  tensor r(first.element_type(), sizes);
  if (first.element_type() == dtype::string) {
    std::string* out = r.data<std::string>();
    for (const auto& p : parts)
      for (const auto& s : p.values<std::string>()) *out++ = s;
  } else {
    std::byte* out = r.raw();
    for (const auto& p : parts) {
      if (p.nbytes()) std::memcpy(out, p.raw(), p.nbytes());
      out += p.nbytes();
    }
  }
  return r;
}

}  // namespace detail

/// `size` process groups connected to each other, one per thread standing for a process:
/// what MPI ranks do, between threads. The collective calls of every member must come in
/// the same order, as across processes.
/// \code
///   auto group = gpass::exec::thread_process_group::make(2);   // group[0] and group[1]
/// \endcode
class thread_process_group final : public process_group {
 public:
  static std::vector<std::shared_ptr<process_group>> make(int size) {
    if (size < 1) throw error("thread_process_group: size must be >= 1, got " + std::to_string(size));
    auto hub = std::make_shared<shared>();
    hub->slots.resize(static_cast<std::size_t>(size));
    std::vector<std::shared_ptr<process_group>> r;
    for (int i = 0; i < size; ++i) r.push_back(std::shared_ptr<process_group>(new thread_process_group(hub, i, size)));
    return r;
  }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }

  void all_reduce_sum(tensor& t, const std::string& what) override {
    t = exchange(t, [&](const std::vector<tensor>& all) { return detail::sum_in_order(all, what); });
  }
  tensor all_gather(const tensor& t, const std::string& what) override {
    return exchange(t, [&](const std::vector<tensor>& all) { return detail::concat_rows(all, what); });
  }

 private:
  struct shared {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<tensor> slots;
    int arrived = 0, left = 0;
    std::uint64_t generation = 0;
  };

  thread_process_group(std::shared_ptr<shared> hub, int rank, int size) : hub_(std::move(hub)), rank_(rank), size_(size) {}

  // Deposits `t`, waits for every member's, combines them (each member the same way, in
  // rank order), and waits until every member has read the slots before they are reused.
  template <class Combine>
  tensor exchange(const tensor& t, Combine combine) {
    std::unique_lock lock(hub_->mu);
    hub_->cv.wait(lock, [&] { return hub_->left == 0; });  // the previous call's readers are done
    const std::uint64_t gen = hub_->generation;
    hub_->slots[static_cast<std::size_t>(rank_)] = t;
    if (++hub_->arrived == size_) {
      hub_->arrived = 0;
      hub_->left = size_;
      ++hub_->generation;
      hub_->cv.notify_all();
    } else {
      hub_->cv.wait(lock, [&] { return hub_->generation != gen; });
    }
    std::vector<tensor> all = hub_->slots;
    lock.unlock();
    tensor r;
    std::exception_ptr failure;
    try {
      r = combine(all);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (--hub_->left == 0) {
      for (auto& s : hub_->slots) s = tensor();
      hub_->cv.notify_all();
    }
    lock.unlock();
    if (failure) std::rethrow_exception(failure);
    return r;
  }

  std::shared_ptr<shared> hub_;
  int rank_, size_;
};

}  // namespace gpass::exec
