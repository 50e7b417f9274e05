// SPDX-License-Identifier: Apache-2.0
// Tests of `eigen_cpu::parallel_for` (exec/eigen_cpu/policy.hpp): every index run exactly once
// whichever path runs the ranges (the offer slot the spinning workers watch, the task queue
// when another call holds the slot, inline in a worker or a serial scope), exceptions
// rethrown to the caller after every range has finished, workers that sleep between calls.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gpass/exec/eigen_cpu/policy.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_exec_cpu_parallel_for {

namespace {

using i64 = std::int64_t;
using gpass::exec::eigen_cpu;

/// Runs `calls` parallel_for calls of random sizes on `cpu`, some throwing from one range;
/// returns the number of wrong outcomes (an index not run exactly once, an exception lost or
/// invented).
long hammer(const eigen_cpu& cpu, unsigned seed, int calls) {
  std::mt19937 rng(seed);
  long bad = 0;
  for (int i = 0; i < calls; ++i) {
    const i64 n = 1 + static_cast<i64>(rng() % 64);
    const bool do_throw = rng() % 16 == 0;
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    bool caught = false;
    try {
      cpu.parallel_for(n, 1e6, [&](i64 b, i64 e) {
        for (i64 k = b; k < e; ++k) hits[static_cast<std::size_t>(k)].fetch_add(1);
        if (do_throw && b == 0) throw std::runtime_error("range 0");
      });
    } catch (const std::runtime_error&) {
      caught = true;
    }
    bad += caught != do_throw;
    for (const auto& h : hits) bad += h.load() != 1;  // every range ran, the throwing one too
  }
  return bad;
}

}  // namespace

TEST_CASE("exec.cpu_parallel_for.every_index_once") {
  for (int threads : {1, 2, 3, 4}) {
    INFO("threads " << threads);
    eigen_cpu cpu({.threads = threads});
    CHECK(hammer(cpu, 1, 2000) == 0);
  }
}

TEST_CASE("exec.cpu_parallel_for.concurrent_callers") {
  // one call at a time holds the offer slot; the others go through the queue
  eigen_cpu cpu({.threads = 3});
  std::atomic<long> bad{0};
  std::vector<std::thread> callers;
  for (unsigned c = 0; c < 3; ++c) callers.emplace_back([&, c] { bad += hammer(cpu, 10 + c, 1500); });
  for (auto& t : callers) t.join();
  CHECK(bad.load() == 0);
}

TEST_CASE("exec.cpu_parallel_for.sleeping_workers") {
  // no spin: every call wakes the workers from the condition variable (or runs alone)
  eigen_cpu cpu({.threads = 2, .spin_us = 0});
  long bad = 0;
  for (int round = 0; round < 20; ++round) {
    bad += hammer(cpu, 100 + static_cast<unsigned>(round), 50);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  CHECK(bad == 0);
}

TEST_CASE("exec.cpu_parallel_for.nested_and_serial_calls_run_inline") {
  eigen_cpu cpu({.threads = 2});
  std::atomic<long> sum{0};
  cpu.parallel_for(8, 1e6, [&](i64 b, i64 e) {
    for (i64 k = b; k < e; ++k)
      cpu.parallel_for(100, 1e6, [&](i64 b2, i64 e2) {
        for (i64 j = b2; j < e2; ++j) sum.fetch_add(j);
      });
  });
  CHECK(sum.load() == 8 * (99 * 100 / 2));
  {
    eigen_cpu::serial_scope serial;
    CHECK(cpu.threads() == 1);
    const std::thread::id me = std::this_thread::get_id();
    bool elsewhere = false;
    cpu.parallel_for(64, 1e9, [&](i64, i64) { elsewhere = elsewhere || std::this_thread::get_id() != me; });
    CHECK_FALSE(elsewhere);
  }
  CHECK(cpu.threads() == 2);
}

}  // namespace gpass_test_exec_cpu_parallel_for
