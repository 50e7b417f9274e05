// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file mpi.hpp
/// `gpass::mpi_environment` and `gpass::mpi_process_group`: the processes of an `mpirun` as
/// the `process_group` of a data-parallel session (component `gpass::mpi`, which links
/// MPI::MPI_CXX; never included by an umbrella header).
/// \code
///   gpass::mpi_environment mpi(argc, argv);           // MPI_Init_thread ... MPI_Finalize
///   auto world = std::make_shared<gpass::mpi_process_group>();
///   gpass::session_options<> so;
///   so.processes = world;                             // all_reduce across the ranks
///   // prepare: multi-devices{replicas=1,rank=<world->rank()>,ranks=<world->size()>}
/// \endcode

#include <mpi.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/collectives.hpp>

namespace gpass {

/// MPI for the life of the object: `MPI_Init_thread` (at least MPI_THREAD_SERIALIZED: the
/// collectives are called from the executor's threads, one at a time) and `MPI_Finalize`.
/// Does nothing when MPI is initialized already (and then leaves finalizing to its owner).
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
    if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
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

}  // namespace gpass
