// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file transport.hpp
/// `gpass::exec::transport`: point-to-point messages between the processes of a session
/// whose devices span processes (`/job:worker/task:1/device:CPU:0`): the values a `send`
/// leaves for a `recv` placed in another process, the calls of a function whose parts run
/// there, a step's abort and its end. `thread_transport` connects threads of one process
/// (tests, and the reference of the contract); `gpass::mpi_transport`
/// (`gpass/session/mpi.hpp`) connects the ranks of an `mpirun`.
///
/// Every process runs the same session and the same sequence of runs (one program, many
/// processes, as TensorFlow's workers do), so the steps of all processes are numbered alike:
/// a message names its step, and the receiving process hands it to that step once the step
/// has started there (`attach`), keeping it until then.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/value.hpp>

namespace gpass::exec {

/// One message between the processes of a session.
struct transport_message {
  enum class kind : std::uint8_t {
    value = 1,     ///< `v` for the rendezvous key `text`
    abort = 2,     ///< the step failed in process `from`: `text` says why
    call = 3,      ///< run the part of function `text` on device `device` in frame `frame`, at call depth `depth`
    finished = 4,  ///< process `from` has finished its parts of the step
  };
  kind what = kind::value;
  int from = 0;            ///< the sending process (set by the transport)
  std::uint64_t step = 0;  ///< the step the message belongs to
  std::string text;        ///< value: the key; abort: the reason; call: the function
  std::string frame;       ///< call: the frame of the call
  std::int64_t depth = 0;  ///< call: the call depth
  std::int64_t device = 0;  ///< call: the device (session index) whose part runs
  value v;                 ///< value: the value
};

namespace detail {

class wire_writer {
 public:
  void u8(std::uint8_t x) { bytes_.push_back(static_cast<std::byte>(x)); }
  void u64(std::uint64_t x) {
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<std::byte>((x >> (8 * i)) & 0xff));
  }
  void i64(std::int64_t x) { u64(static_cast<std::uint64_t>(x)); }
  void str(std::string_view s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  std::vector<std::byte> bytes_;
};

// Reads what `wire_writer` wrote; every read is bounds-checked (a damaged message is an error
// naming the sender, never a read past its end).
class wire_reader {
 public:
  wire_reader(std::span<const std::byte> b, int from) : b_(b), from_(from) {}
  std::uint8_t u8() { return static_cast<std::uint8_t>(*take(1)); }
  std::uint64_t u64() {
    const std::byte* p = take(8);
    std::uint64_t x = 0;
    for (int i = 0; i < 8; ++i) x |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    return x;
  }
  std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
  std::string str() {
    const std::uint64_t n = u64();
    if (n > left()) bad("a string of " + std::to_string(n) + " bytes");
    const std::byte* p = take(static_cast<std::size_t>(n));
    return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
  }
  const std::byte* take(std::size_t n) {
    if (n > left()) bad("it ends early");
    const std::byte* p = b_.data() + at_;
    at_ += n;
    return p;
  }
  std::size_t left() const noexcept { return b_.size() - at_; }
  [[noreturn]] void bad(const std::string& why) const {
    throw error("transport: a damaged message from process " + std::to_string(from_) + ": " + why);
  }

 private:
  std::span<const std::byte> b_;
  std::size_t at_ = 0;
  int from_;
};

// `header_only`: dtype and sizes, the bytes travel apart (see `detached_payload`).
// The largest tensor sent apart from its message (64 GiB).
inline constexpr std::uint64_t max_detached_bytes = std::uint64_t{1} << 36;

inline void write_tensor(wire_writer& w, const tensor& t, bool header_only = false) {
  const dtype d = t.element_type();
  if (d != dtype::string && d != dtype::undefined && !is_trivial(d))
    throw error("transport: a " + std::string(to_string(d)) + " tensor cannot be sent to another process");
  w.u8(static_cast<std::uint8_t>(d));
  w.u64(t.rank());
  for (auto s : t.sizes()) w.i64(s);
  if (header_only) return;
  if (d == dtype::string) {
    for (const auto& s : t.values<std::string>()) w.str(s);
  } else if (t.nbytes()) {
    w.raw(t.raw(), t.nbytes());
  }
}

// `detached`: a numeric tensor whose bytes come apart; it is allocated, not filled.
inline tensor read_tensor(wire_reader& r, bool detached = false) {
  const std::uint8_t code = r.u8();
  if (code >= gpass::detail::dtype_table.size()) r.bad("element type code " + std::to_string(code));
  const dtype d = static_cast<dtype>(code);
  if (d != dtype::string && d != dtype::undefined && !is_trivial(d)) r.bad("a " + std::string(to_string(d)) + " tensor");
  const std::uint64_t rank = r.u64();
  if (rank > 64) r.bad("rank " + std::to_string(rank));
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(rank));
  bool empty = false;
  for (auto& s : sizes) {
    s = r.i64();
    if (s < 0) r.bad("a negative size");
    empty = empty || s == 0;
  }
  if (detached) {
    if (d == dtype::string || d == dtype::undefined) r.bad("a detached " + std::string(to_string(d)) + " tensor");
    const auto count = checked_num_elements(sizes);
    const auto bytes = count ? checked_bytes(*count, size_of(d)) : std::nullopt;
    if (!bytes || *bytes > max_detached_bytes) r.bad("a payload of more than " + std::to_string(max_detached_bytes) + " bytes");
    return tensor::uninitialized(d, sizes);
  }
  // the element count must fit in what the message still holds (a byte at least each)
  std::uint64_t n = empty ? 0 : 1;
  for (auto s : sizes)
    if (!empty) {
      if (n > r.left() / static_cast<std::uint64_t>(s)) r.bad("sizes larger than the message");
      n *= static_cast<std::uint64_t>(s);
    }
  if (d == dtype::undefined) {
    if (n != 0 && rank != 0) r.bad("elements of an undefined type");
    return tensor();
  }
  if (d == dtype::string) {
    if (n > r.left() / 8) r.bad("more strings than the message holds");
    tensor t(d, sizes);
    std::string* out = t.data<std::string>();
    for (std::uint64_t i = 0; i < n; ++i) out[i] = r.str();
    return t;
  }
  const std::uint64_t bytes = n * size_of(d);
  if (bytes > r.left()) r.bad("its data ends early");
  tensor t = tensor::uninitialized(d, sizes);
  if (bytes) std::memcpy(t.raw(), r.take(static_cast<std::size_t>(bytes)), static_cast<std::size_t>(bytes));
  return t;
}

}  // namespace detail

/// The bytes of a message's tensor that travel apart from the message: a transport sends
/// them from the tensor's buffer and receives them into the receiving tensor's buffer, with
/// no copy into or out of the message.
struct detached_payload {
  const std::byte* data = nullptr;  ///< encode: the bytes to send after the message (null: none)
  std::byte* into = nullptr;        ///< decode: where the bytes that follow go (null: none follow)
  std::size_t bytes = 0;
};

/// A numeric tensor of at least this many bytes travels apart (`detached_payload`).
inline constexpr std::size_t detach_from_bytes = 4096;

/// The bytes of `m` (all but `from`): what a transport between processes sends. Values may
/// be tensors of numeric, string or no type, sequences of them, or none; a resource or
/// variant tensor cannot leave its process (an error naming the key). With `payload`, a
/// numeric tensor value of `detach_from_bytes` or more is written without its bytes, which
/// `payload` points at: the transport sends them next.
inline std::vector<std::byte> encode_message(const transport_message& m, detached_payload* payload = nullptr) {
  detail::wire_writer w;
  w.u8(static_cast<std::uint8_t>(m.what));
  w.u64(m.step);
  w.str(m.text);
  w.str(m.frame);
  w.i64(m.depth);
  w.i64(m.device);
  try {
    if (m.v.is_none()) {
      w.u8(0);
    } else if (const tensor* t = m.v.is_tensor() ? &m.v.tensor() : nullptr;
               payload && t && is_trivial(t->element_type()) && t->nbytes() >= detach_from_bytes) {
      w.u8(3);
      detail::write_tensor(w, *t, true);
      payload->data = t->raw();
      payload->bytes = t->nbytes();
    } else if (m.v.is_tensor()) {
      w.u8(1);
      detail::write_tensor(w, m.v.tensor());
    } else {
      w.u8(2);
      w.u64(m.v.sequence().size());
      for (const auto& t : m.v.sequence()) detail::write_tensor(w, t);
    }
  } catch (const error& e) {
    throw error(std::string(e.what()) + " ('" + m.text + "')");
  }
  return w.take();
}

/// The message `encode_message` made, received from process `from`. A damaged or truncated
/// message is a `gpass::error` naming the sender. A message whose tensor travels apart
/// needs `payload`: it gets the tensor's buffer to receive the bytes into (else an error).
inline transport_message decode_message(std::span<const std::byte> bytes, int from, detached_payload* payload = nullptr) {
  detail::wire_reader r(bytes, from);
  transport_message m;
  const std::uint8_t k = r.u8();
  if (k < 1 || k > 4) r.bad("message kind " + std::to_string(k));
  m.what = static_cast<transport_message::kind>(k);
  m.from = from;
  m.step = r.u64();
  m.text = r.str();
  m.frame = r.str();
  m.depth = r.i64();
  m.device = r.i64();
  switch (r.u8()) {
    case 0: break;
    case 1: m.v = detail::read_tensor(r); break;
    case 2: {
      const std::uint64_t n = r.u64();
      if (n > r.left() / 9) r.bad("a sequence longer than the message");
      value::sequence_type s;
      for (std::uint64_t i = 0; i < n; ++i) s.push_back(detail::read_tensor(r));
      m.v = std::move(s);
      break;
    }
    case 3: {
      if (!payload) r.bad("its tensor's bytes travel apart, and nothing receives them");
      tensor t = detail::read_tensor(r, true);
      payload->into = t.raw();
      payload->bytes = t.nbytes();
      m.v = std::move(t);
      break;
    }
    default: r.bad("value kind");
  }
  if (r.left()) r.bad(std::to_string(r.left()) + " bytes after its end");
  return m;
}

/// What receives the messages of one step in one process (the session's step).
class step_endpoint {
 public:
  virtual ~step_endpoint() = default;
  /// Takes one message of the step. Called by the transport's receiving thread (or a
  /// sender's thread, `thread_transport`), one at a time per process, in the order each
  /// sender sent them; must not block and must not post messages itself.
  virtual void receive(transport_message m) = 0;
};

/// The processes of a session and the messages between them. Messages from one process to
/// another arrive in the order they were posted. Thread-safe.
class transport {
 public:
  virtual ~transport() = default;
  /// This process, 0 .. size()-1.
  virtual int rank() const noexcept = 0;
  /// The number of processes.
  virtual int size() const noexcept = 0;
  /// Sends `m` to process `to` (`m.from` is set to this process). May block until the
  /// receiver took the message in, never on the receiver's step.
  virtual void post(int to, transport_message m) = 0;
  /// A thread of this process starts (`begins`) or stops waiting for a value from another
  /// process: a transport that polls keeps polling without pause while one does.
  virtual void awaiting(bool /*begins*/) {}

  /// The messages of step `step` go to `e` from now on (those that came earlier are handed
  /// over first, in their order), until `detach(step)`.
  void attach(std::uint64_t step, step_endpoint* e) {
    std::lock_guard lock(inbox_mu_);
    auto& slot = steps_[step];
    slot.endpoint = e;
    for (auto& m : slot.early) e->receive(std::move(m));
    slot.early.clear();
  }
  /// Ends step `step` here: its later messages are dropped (none should come: every process
  /// finishes a step after it sent its messages of that step, see `transport_message::kind`).
  void detach(std::uint64_t step) {
    std::lock_guard lock(inbox_mu_);
    steps_.erase(step);
    if (step >= done_below_) done_below_ = step + 1;
  }
  /// Messages kept for steps not started here yet.
  std::size_t waiting() const {
    std::lock_guard lock(inbox_mu_);
    std::size_t n = 0;
    for (const auto& [s, slot] : steps_) n += slot.early.size();
    return n;
  }

 protected:
  /// A message arrived from another process: to its step's endpoint, or kept for it.
  void deliver(transport_message m) {
    std::lock_guard lock(inbox_mu_);
    if (m.step < done_below_ && !steps_.count(m.step)) return;  // a step this process has ended
    auto& slot = steps_[m.step];
    if (slot.endpoint) slot.endpoint->receive(std::move(m));
    else slot.early.push_back(std::move(m));
  }
  void check_destination(int to) const {
    if (to < 0 || to >= size() || to == rank())
      throw error("transport: process " + std::to_string(rank()) + " cannot post to process " + std::to_string(to) + " (of " +
                  std::to_string(size()) + ")");
  }

 private:
  struct slot {
    step_endpoint* endpoint = nullptr;
    std::vector<transport_message> early;
  };
  mutable std::mutex inbox_mu_;
  std::map<std::uint64_t, slot> steps_;
  std::uint64_t done_below_ = 0;
};

/// `size` transports connected to each other, one per thread standing for a process: what
/// `mpi_transport` does between ranks, in one process. Messages are encoded and decoded as
/// between processes (the same bytes, large tensors apart), and delivered in the poster's
/// thread.
/// \code
///   auto procs = gpass::exec::thread_transport::make(2);   // procs[0], procs[1]
/// \endcode
class thread_transport final : public transport {
 public:
  static std::vector<std::shared_ptr<transport>> make(int size) {
    if (size < 1) throw error("thread_transport: size must be >= 1, got " + std::to_string(size));
    auto peers = std::make_shared<std::vector<std::weak_ptr<thread_transport>>>();
    std::vector<std::shared_ptr<transport>> r;
    for (int i = 0; i < size; ++i) {
      auto t = std::shared_ptr<thread_transport>(new thread_transport(peers, i, size));
      peers->push_back(t);
      r.push_back(std::move(t));
    }
    return r;
  }
  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  void post(int to, transport_message m) override {
    check_destination(to);
    detached_payload out, in;
    const auto bytes = encode_message(m, &out);
    auto peer = (*peers_)[static_cast<std::size_t>(to)].lock();
    if (!peer) throw error("transport: process " + std::to_string(to) + " has ended");
    auto back = decode_message(bytes, rank_, &in);
    if (in.bytes != out.bytes) throw error("transport: a payload of " + std::to_string(out.bytes) + " bytes arrives as " + std::to_string(in.bytes));
    if (in.bytes) std::memcpy(in.into, out.data, in.bytes);
    peer->deliver(std::move(back));
  }

 private:
  thread_transport(std::shared_ptr<std::vector<std::weak_ptr<thread_transport>>> peers, int rank, int size)
      : peers_(std::move(peers)), rank_(rank), size_(size) {}
  std::shared_ptr<std::vector<std::weak_ptr<thread_transport>>> peers_;
  int rank_, size_;
};

}  // namespace gpass::exec
