// SPDX-License-Identifier: Apache-2.0
// All-reduce bandwidth under mpirun: for f32 buffers of 4 KiB to 16 MiB, the time of
//   mpi      MPI_Allreduce(MPI_IN_PLACE, SUM) alone,
//   group    gpass::mpi_process_group::all_reduce_sum (shape check across ranks + copy + the
//            same MPI_Allreduce),
//   session  one gpass::session::run of `x -> all_reduce {reduction = sum} -> return`
//            (the kernel, the session step, the process group),
// on the same buffers, median of 7 batches; rank 0 prints one JSON line per size with the
// algorithm bandwidth (bytes / time) and the ratios to MPI alone. Then, with 2 ranks, the
// round trip of a buffer between them:
//   mpi      MPI_Send to rank 1, MPI_Recv back (a ping-pong),
//   session  one gpass::session::run over a cluster of two tasks (gpass::mpi_transport):
//            `x` (task 0) -> Identity (task 1) -> fetched in both processes, i.e. the value
//            to rank 1 and back, plus each rank's end-of-step message.
//
//   mpirun -np 2 gpass_bench_mpi [max-bytes]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/io/text.hpp>
#include <gpass/session.hpp>
#include <gpass/session/mpi.hpp>

namespace {

using G = gpass::graph<>;
using clock_type = std::chrono::steady_clock;

template <class F>
double median_seconds(gpass::mpi_process_group& world, int reps, F f) {
  std::vector<double> batches;
  for (int b = 0; b < 7; ++b) {
    world.barrier();
    const auto t0 = clock_type::now();
    for (int i = 0; i < reps; ++i) f();
    batches.push_back(std::chrono::duration<double>(clock_type::now() - t0).count() / reps);
  }
  std::sort(batches.begin(), batches.end());
  return batches[batches.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  gpass::mpi_environment env(argc, argv);
  auto world = std::make_shared<gpass::mpi_process_group>();
  const long max_bytes = argc > 1 ? std::atol(argv[1]) : 16L << 20;
  for (long bytes = 4096; bytes <= max_bytes; bytes *= 16) {
    const std::int64_t n = bytes / 4;
    const int reps = static_cast<int>(std::clamp<long>((64L << 20) / bytes, 3, 2000));
    std::vector<float> raw(static_cast<std::size_t>(n), 1.0f);
    const double t_mpi = median_seconds(*world, reps, [&] {
      MPI_Allreduce(MPI_IN_PLACE, raw.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    });
    gpass::tensor t(gpass::dtype::f32, {n});
    const double t_group = median_seconds(*world, reps, [&] { world->all_reduce_sum(t, "bench"); });
    const std::string text = "graph {\n  %x = arg() {index = 0} -> (f32[" + std::to_string(n) +
                             "])\n  %s = all_reduce(%x) {group = \"g\", ranks = " + std::to_string(world->size()) +
                             ", reduction = \"sum\", replica = 0, replicas = 1} -> (f32[" + std::to_string(n) +
                             "])\n  %r:0 = return(%s) {names = [\"s\"]}\n}\n";
    gpass::session_options<G> so;
    so.processes = world;
    gpass::session<G> sess(gpass::parse_text(text), std::move(so));
    gpass::tensor x(gpass::dtype::f32, {n});
    const double t_session = median_seconds(*world, reps, [&] { (void)sess.run({{"x", x}}, {"s"}, {}); });
    if (world->rank() == 0)
      std::printf(
          "{\"ranks\": %d, \"bytes\": %ld, \"mpi_us\": %.2f, \"group_us\": %.2f, \"session_us\": %.2f, "
          "\"mpi_GBps\": %.3f, \"group_GBps\": %.3f, \"session_GBps\": %.3f, \"group_over_mpi\": %.3f, "
          "\"session_over_mpi\": %.3f}\n",
          world->size(), bytes, t_mpi * 1e6, t_group * 1e6, t_session * 1e6, bytes / t_mpi / 1e9, bytes / t_group / 1e9,
          bytes / t_session / 1e9, t_group / t_mpi, t_session / t_mpi);
  }
  if (world->size() != 2) return 0;
  auto transport = std::make_shared<gpass::mpi_transport>();
  for (long bytes = 4096; bytes <= max_bytes; bytes *= 16) {
    const std::int64_t n = bytes / 4;
    const int reps = static_cast<int>(std::clamp<long>((64L << 20) / bytes, 3, 2000));
    std::vector<float> buf(static_cast<std::size_t>(n), 1.0f);
    const int me = world->rank();
    const double t_mpi = median_seconds(*world, reps, [&] {
      if (me == 0) {
        MPI_Send(buf.data(), static_cast<int>(n), MPI_FLOAT, 1, 5, MPI_COMM_WORLD);
        MPI_Recv(buf.data(), static_cast<int>(n), MPI_FLOAT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf.data(), static_cast<int>(n), MPI_FLOAT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), static_cast<int>(n), MPI_FLOAT, 0, 5, MPI_COMM_WORLD);
      }
    });
    const std::string text = "graph {\n  %x = arg() {index = 0} on \"/job:worker/task:0\" -> (f32[" + std::to_string(n) +
                             "])\n  %y = Identity(%x) on \"/job:worker/task:1\"\n  %r:0 = return(%y) {names = [\"y\"]}\n}\n";
    gpass::session_options<G> so;
    so.devices = gpass::cluster_cpu_devices<G>(gpass::parse_cluster("worker:2"), me);
    so.transport = transport;
    gpass::session<G> sess(gpass::parse_text(text), std::move(so));
    gpass::tensor x(gpass::dtype::f32, {n});
    const double t_session = median_seconds(*world, reps, [&] { (void)sess.run({{"x", x}}, {"y"}, {}); });
    if (me == 0)
      std::printf(
          "{\"round_trip_bytes\": %ld, \"mpi_us\": %.2f, \"session_us\": %.2f, \"mpi_GBps\": %.3f, \"session_GBps\": %.3f, "
          "\"session_over_mpi\": %.3f}\n",
          bytes, t_mpi * 1e6, t_session * 1e6, 2.0 * bytes / t_mpi / 1e9, 2.0 * bytes / t_session / 1e9, t_session / t_mpi);
  }
  return 0;
}
