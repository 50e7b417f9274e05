// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file mpi.hpp
/// `gpass::mpi_environment`, `gpass::mpi_process_group` and `gpass::mpi_transport`: the
/// processes of an `mpirun` as the `process_group` of a data-parallel session, and as the
/// `transport` of a session whose devices are on several ranks (`/job:worker/task:1/...`)
/// (component `gpass::mpi`, which links MPI::MPI_CXX; never included by an umbrella header).
/// \code
///   gpass::mpi_environment mpi(argc, argv);           // MPI_Init_thread ... MPI_Finalize
///   auto world = std::make_shared<gpass::mpi_process_group>();
///   gpass::session_options<> so;
///   so.processes = world;                             // all_reduce across the ranks
///   // prepare: multi-devices{replicas=1,rank=<world->rank()>,ranks=<world->size()>}
/// \endcode

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/collectives.hpp>
#include <gpass/exec/transport.hpp>

namespace gpass {

/// MPI for the life of the object: `MPI_Init_thread` and `MPI_Finalize`. It asks for
/// MPI_THREAD_MULTIPLE (`mpi_transport` receives on a thread of its own) and needs at least
/// MPI_THREAD_SERIALIZED (the collectives are called from the executor's threads, one at a
/// time). Does nothing when MPI is initialized already (and then leaves finalizing to its
/// owner).
class mpi_environment {
 public:
  mpi_environment(int& argc, char**& argv) { init(&argc, &argv); }
  /// Without the command line (MPI-2 allows it).
  mpi_environment() { init(nullptr, nullptr); }
  mpi_environment(const mpi_environment&) = delete;
  mpi_environment& operator=(const mpi_environment&) = delete;
  ~mpi_environment() {
    if (owner_) MPI_Finalize();
  }

 private:
  void init(int* argc, char*** argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return;
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
      throw error("MPI_Init_thread failed");
    owner_ = true;
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      owner_ = false;
      throw error("this MPI provides thread level " + std::to_string(provided) +
                  ", gpass needs MPI_THREAD_SERIALIZED (collectives run on executor threads)");
    }
  }

  bool owner_ = false;
};

/// The ranks of an MPI communicator (default MPI_COMM_WORLD) as a `process_group`:
/// `all_reduce_sum` is one `MPI_Allreduce` (in place), `all_gather` one `MPI_Allgather` after
/// a check that every rank brings the same sizes. Calls are serialized by a mutex. Errors
/// name the collective node and the rank.
class mpi_process_group final : public exec::process_group {
 public:
  explicit mpi_process_group(MPI_Comm comm = MPI_COMM_WORLD) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }

  void all_reduce_sum(tensor& t, const std::string& what) override {
    const MPI_Datatype type = mpi_type(t.element_type(), what);
    check_same(t, what);
    t = exec::detail::owned(std::move(t));  // in place unless the buffer is shared (other replicas' values)
    std::lock_guard lock(mu_);
    if (MPI_Allreduce(MPI_IN_PLACE, t.raw(), static_cast<int>(t.size()), type, MPI_SUM, comm_) != MPI_SUCCESS)
      throw error(what + ": MPI_Allreduce failed on rank " + std::to_string(rank_));
  }

  tensor all_gather(const tensor& t, const std::string& what) override {
    if (!is_trivial(t.element_type()) || t.element_type() == dtype::string)
      throw error(what + ": cannot gather " + std::string(to_string(t.element_type())) + " tensors across processes");
    if (t.rank() == 0) throw error(what + ": cannot gather scalars along dim 0");
    check_same(t, what);
    std::vector<std::int64_t> sizes = t.sizes();
    sizes[0] *= size_;
    tensor out = tensor::uninitialized(t.element_type(), sizes);
    std::lock_guard lock(mu_);
    if (MPI_Allgather(t.raw(), static_cast<int>(t.nbytes()), MPI_BYTE, out.raw(), static_cast<int>(t.nbytes()), MPI_BYTE,
                      comm_) != MPI_SUCCESS)
      throw error(what + ": MPI_Allgather failed on rank " + std::to_string(rank_));
    return out;
  }

  /// A barrier over the ranks (benchmarks, tests).
  void barrier() {
    std::lock_guard lock(mu_);
    MPI_Barrier(comm_);
  }

 private:
  static MPI_Datatype mpi_type(dtype d, const std::string& what) {
    switch (d) {
      case dtype::f32: return MPI_FLOAT;
      case dtype::f64: return MPI_DOUBLE;
      case dtype::int32: return MPI_INT32_T;
      case dtype::int64: return MPI_INT64_T;
      default: break;
    }
    throw error(what + ": no MPI reduction for " + std::string(to_string(d)) + " tensors (f32, f64, i32, i64)");
  }

  // Every rank must bring the same dtype and sizes: compared first, so that a mismatch is an
  // error naming both shapes instead of a hang or memory corruption inside MPI.
  void check_same(const tensor& t, const std::string& what) {
    std::vector<std::int64_t> mine{static_cast<std::int64_t>(t.element_type()), static_cast<std::int64_t>(t.rank())};
    for (auto s : t.sizes()) mine.push_back(s);
    mine.resize(10, -1);
    std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(size_));
    {
      std::lock_guard lock(mu_);
      MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, all.data(), static_cast<int>(mine.size()),
                    MPI_INT64_T, comm_);
    }
    for (int r = 0; r < size_; ++r)
      if (!std::equal(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(r) * static_cast<std::ptrdiff_t>(mine.size())))
        throw error(what + ": rank " + std::to_string(r) + " brings another dtype or shape than rank " + std::to_string(rank_) +
                    " (" + std::string(to_string(t.element_type())) + shape::of(t.sizes()).to_string() + ")");
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::mutex mu_;
};

/// The ranks of an MPI communicator (default MPI_COMM_WORLD, duplicated: its messages never
/// meet the application's) as the `transport` of a session over several processes: rank `r`
/// is process `r`. A message is one `MPI_Send` of its encoded bytes, and a tensor of 4 KiB
/// or more follows it from and into the tensors' own buffers (no copies); a thread of the
/// transport receives (`MPI_Improbe` / `MPI_Mrecv`: polling without pause while a thread here
/// awaits a value from another rank, else with a back-off of up to 250 us) and hands each
/// message to its step. Needs MPI_THREAD_MULTIPLE (an error says so
/// otherwise). Construct it on every rank (collective: it duplicates the communicator); its
/// destructor stops the thread, collectively too.
/// \code
///   gpass::mpi_environment mpi(argc, argv);
///   auto transport = std::make_shared<gpass::mpi_transport>();
///   auto devices = gpass::cluster_cpu_devices<G>(gpass::parse_cluster("ps:1,worker:1"), transport->rank());
///   gpass::session<G> s(g, {.devices = devices, .transport = transport});
/// \endcode
class mpi_transport final : public exec::transport {
 public:
  explicit mpi_transport(MPI_Comm comm = MPI_COMM_WORLD) {
    int level = 0;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE)
      throw error("mpi_transport: MPI runs at thread level " + std::to_string(level) +
                  "; sessions over several ranks need MPI_THREAD_MULTIPLE (initialize MPI with gpass::mpi_environment)");
    if (MPI_Comm_dup(comm, &comm_) != MPI_SUCCESS) throw error("mpi_transport: MPI_Comm_dup failed");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    send_mu_ = std::vector<std::mutex>(static_cast<std::size_t>(size_));
    receiver_ = std::thread([this] { receive_loop(); });
  }
  mpi_transport(const mpi_transport&) = delete;
  mpi_transport& operator=(const mpi_transport&) = delete;
  ~mpi_transport() override {
    // every rank stops receiving only when every rank is done sending
    MPI_Barrier(comm_);
    stop_.store(true);
    receiver_.join();
    MPI_Comm_free(&comm_);
  }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }

  void post(int to, exec::transport_message m) override {
    check_destination(to);
    exec::detached_payload payload;
    const auto bytes = exec::encode_message(m, &payload);
    if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
      throw error("mpi_transport: a message of " + std::to_string(bytes.size()) + " bytes for '" + m.text +
                  "' (one MPI message holds at most 2 GiB; large tensors travel apart, not strings)");
    // the message and its payload go together: the receiver takes the payload right after
    std::lock_guard lock(send_mu_[static_cast<std::size_t>(to)]);
    if (MPI_Send(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, to, tag, comm_) != MPI_SUCCESS)
      throw error("mpi_transport: MPI_Send from rank " + std::to_string(rank_) + " to rank " + std::to_string(to) + " failed");
    for (std::size_t at = 0; at < payload.bytes; at += chunk) {
      const int n = static_cast<int>(std::min(chunk, payload.bytes - at));
      if (MPI_Send(payload.data + at, n, MPI_BYTE, to, payload_tag, comm_) != MPI_SUCCESS)
        throw error("mpi_transport: MPI_Send of a payload from rank " + std::to_string(rank_) + " to rank " + std::to_string(to) +
                    " failed");
    }
  }

  void awaiting(bool begins) override { awaiting_.fetch_add(begins ? 1 : -1, std::memory_order_relaxed); }

  /// Messages received (all steps).
  std::uint64_t received() const noexcept { return received_.load(); }

 private:
  static constexpr int tag = 7101, payload_tag = 7102;
  static constexpr std::size_t chunk = std::size_t{1} << 30;  // bytes per payload message

  void receive_loop() {
    std::vector<std::byte> buffer;
    int idle = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      int flag = 0;
      MPI_Message msg;
      MPI_Status st;
      if (MPI_Improbe(MPI_ANY_SOURCE, tag, comm_, &flag, &msg, &st) != MPI_SUCCESS) break;
      if (!flag) {
        // microseconds apart within a step, and without pause while a value from another
        // rank is awaited here; sleep longer between steps
        if (awaiting_.load(std::memory_order_relaxed) > 0) idle = 0;
        if (++idle < 200) std::this_thread::yield();
        else std::this_thread::sleep_for(std::chrono::microseconds(std::min(250, 5 * (idle - 199))));
        continue;
      }
      idle = 0;
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      buffer.resize(static_cast<std::size_t>(count));
      MPI_Mrecv(buffer.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
      received_.fetch_add(1, std::memory_order_relaxed);
      try {
        exec::detached_payload payload;
        auto m = exec::decode_message(buffer, st.MPI_SOURCE, &payload);
        for (std::size_t at = 0; at < payload.bytes; at += chunk) {
          const int n = static_cast<int>(std::min(chunk, payload.bytes - at));
          MPI_Recv(payload.into + at, n, MPI_BYTE, st.MPI_SOURCE, payload_tag, comm_, MPI_STATUS_IGNORE);
        }
        deliver(std::move(m));
      } catch (const std::exception& e) {
        // a damaged message: its step (bytes 1-8) is aborted, not left waiting for it
        if (buffer.size() >= 9) {
          exec::transport_message m;
          m.what = exec::transport_message::kind::abort;
          m.from = st.MPI_SOURCE;
          for (int i = 0; i < 8; ++i) m.step |= static_cast<std::uint64_t>(buffer[static_cast<std::size_t>(1 + i)]) << (8 * i);
          m.text = e.what();
          deliver(std::move(m));
        }
      }
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> received_{0};
  std::atomic<int> awaiting_{0};  // threads waiting for a value from another rank
  std::vector<std::mutex> send_mu_;  // per destination
  std::thread receiver_;
};

}  // namespace gpass
