// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file rendezvous.hpp
/// `gpass::exec::rendezvous`: where a `send` kernel leaves a tensor and the matching `recv`
/// kernel (on another device, another thread) picks it up, keyed as TensorFlow keys its
/// rendezvous: source device, destination device, tensor name, and the frame and iteration
/// the two nodes run in.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include <gpass/core/error.hpp>
#include <gpass/exec/value.hpp>

namespace gpass::exec {

/// The key of one transfer: `send_device;recv_device;tensor;frame`. `frame` names the
/// function call the nodes run in (the step's root frame, then `/<function>#<call>` per
/// nested call, so every iteration of a loop body has its own), which keeps the tensors of
/// different iterations apart.
/// \code
///   gpass::exec::rendezvous_key("/device:CPU:0", "/device:CPU:1", "mul:0", "step/body#3");
/// \endcode
inline std::string rendezvous_key(std::string_view send_device, std::string_view recv_device, std::string_view tensor,
                                  std::string_view frame) {
  std::string k;
  k.reserve(send_device.size() + recv_device.size() + tensor.size() + frame.size() + 3);
  k.append(send_device).append(1, ';').append(recv_device).append(1, ';').append(tensor).append(1, ';').append(frame);
  return k;
}

/// Where a rendezvous sends the values whose receiving device is in another process (a
/// session's step over a `transport`, see `gpass/exec/transport.hpp`).
class rendezvous_router {
 public:
  virtual ~rendezvous_router() = default;
  /// Takes `v` when the receiving device of `key` is in another process (and sends it
  /// there); false: the value stays in this rendezvous.
  virtual bool forward(const std::string& key, value& v) = 0;
  /// A `recv` of `key` starts (`begins`) or stops waiting for its value (a transport that
  /// polls can then poll without pause while a value from another process is awaited).
  virtual void waiting(std::string_view /*key*/, bool /*begins*/) {}
};

/// The sending device of a rendezvous key (its first field).
inline std::string_view rendezvous_send_device(std::string_view key) { return key.substr(0, key.find(';')); }

/// The receiving device of a rendezvous key (its second field).
inline std::string_view rendezvous_recv_device(std::string_view key) {
  const auto a = key.find(';');
  if (a == std::string_view::npos) return {};
  const auto b = key.find(';', a + 1);
  return key.substr(a + 1, b == std::string_view::npos ? std::string_view::npos : b - a - 1);
}

/// A blocking mailbox of host values for one step (one `session::run`). `send` never blocks;
/// `recv` waits until the value with its key was sent, the rendezvous was aborted (another
/// device failed: `recv` rethrows that error), or the run was cancelled. Each key is sent and
/// received once. Thread-safe.
/// \code
///   gpass::exec::rendezvous r;
///   r.send("a;b;x:0;", gpass::exec::value(gpass::tensor::from<float>({1})));
///   auto v = r.recv("a;b;x:0;");       // the tensor
/// \endcode
class rendezvous {
 public:
  rendezvous() = default;
  rendezvous(const rendezvous&) = delete;
  rendezvous& operator=(const rendezvous&) = delete;

  /// Leaves `v` under `key`. Sending a key twice is an error (two sends of one tensor in
  /// one frame: a partitioning bug, or a frame key reused).
  void send(const std::string& key, value v) {
    if (router_ && router_->forward(key, v)) return;
    {
      std::lock_guard lock(mu_);
      if (aborted_) return;  // nobody will receive it
      auto [it, fresh] = items_.try_emplace(key);
      if (!fresh && it->second.sent) throw error("rendezvous: '" + key + "' sent twice");
      it->second.sent = true;
      it->second.v = std::move(v);
    }
    cv_.notify_all();
  }

  /// Waits for the value under `key` and takes it. Throws the abort error when the step was
  /// aborted, and "run cancelled" when `cancel` is set while waiting.
  value recv(const std::string& key, const std::atomic<bool>* cancel = nullptr) {
    // the sender is usually microseconds away: look again for a while before sleeping
    // (a wake-up through the condition variable costs tens of microseconds on a busy VM)
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
    struct wait_note {  // tells the router while this recv waits
      rendezvous_router* r = nullptr;
      std::string_view key;
      ~wait_note() {
        if (r) r->waiting(key, false);
      }
    } note;
    std::unique_lock lock(mu_);
    for (;;) {
      if (aborted_) throw error(abort_message_);
      auto it = items_.find(key);
      if (it != items_.end() && it->second.sent) {
        value v = std::move(it->second.v);
        items_.erase(it);
        return v;
      }
      if (cancel && cancel->load(std::memory_order_relaxed)) throw error("run cancelled");
      if (router_ && !note.r) {
        note.r = router_;
        note.key = key;
        router_->waiting(key, true);
      }
      if (std::chrono::steady_clock::now() < spin_until) {
        lock.unlock();
        std::this_thread::yield();
        lock.lock();
      } else if (cancel) {
        cv_.wait_for(lock, std::chrono::milliseconds(20));
      } else {
        cv_.wait(lock);
      }
    }
  }

  /// Values sent to a device in another process go to `r` (null: none; set before the step
  /// runs).
  void set_router(rendezvous_router* r) noexcept { router_ = r; }

  /// How long `recv` looks for its value before it sleeps, in microseconds.
  static constexpr int spin_us = 50;

  /// Fails every `recv` waiting now or later with `message` (the first abort wins); sends
  /// are dropped from then on.
  void abort(std::string message) {
    {
      std::lock_guard lock(mu_);
      if (aborted_) return;
      aborted_ = true;
      abort_message_ = std::move(message);
      items_.clear();
    }
    cv_.notify_all();
  }
  bool aborted() const {
    std::lock_guard lock(mu_);
    return aborted_;
  }
  /// Values sent and not yet received (0 after a complete step).
  std::size_t pending() const {
    std::lock_guard lock(mu_);
    return items_.size();
  }

 private:
  struct item {
    bool sent = false;
    value v;
  };
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, item, std::less<>> items_;
  bool aborted_ = false;
  std::string abort_message_;
  rendezvous_router* router_ = nullptr;
};

}  // namespace gpass::exec
