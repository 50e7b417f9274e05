// SPDX-License-Identifier: Apache-2.0
// Every TensorFlow frontend fixture (tests/data/tf, training steps included) through a session
// whose devices span two processes (threads joined by `thread_transport`, the messages
// encoded as between MPI ranks), its nodes spread round-robin: TensorFlow's values in every
// process.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gpass/exec/transport.hpp>
#include <gpass/io/tensorflow.hpp>
#include <gpass/passes/tf.hpp>
#include <gpass/session.hpp>

#include "fixture_support.hpp"

namespace gpass_test_tf_cluster_fixtures {

using G = gpass::graph<>;
namespace ex = gpass::exec;

TEST_CASE("tf.session.fixtures_over_two_processes") {
  // every frontend fixture of tests/data/tf (training steps included), its nodes spread
  // round-robin over 2 processes x 2 devices: TensorFlow's values in both processes
  namespace fs = std::filesystem;
  namespace tfx = gpass_test::tf;
  int fixtures = 0;
  std::size_t sends = 0;
  for (const auto& e : fs::directory_iterator(tfx::data_dir)) {
    if (!e.is_directory() || !fs::exists(e.path() / "fixture.txt")) continue;
    const auto f = tfx::read_fixture(e.path().filename().string());
    INFO(f.name);
    std::vector<std::pair<std::string, ex::value>> feeds;
    for (const auto& [t, file] : f.feeds) feeds.emplace_back(t, gpass::read_tf_tensor_file(file));
    std::vector<std::string> fetches;
    for (const auto& [t, file] : f.fetches) fetches.push_back(t);
    std::vector<std::vector<ex::value>> got(2);
    auto procs = ex::thread_transport::make(2);
    std::vector<std::string> errors(2);
    auto process = [&](int rank) {
      gpass::session_options<G> o;
      o.devices = gpass::cluster_cpu_devices<G>(gpass::parse_cluster("worker:2"), rank, 2);
      o.transport = procs[static_cast<std::size_t>(rank)];
      o.placement.spread = gpass::placement_options::spread_kind::round_robin;
      o.prepare = [](G& g) {
        gpass::pass_context ctx;
        gpass::tf_frontend(g, ctx);
      };
      gpass::session<G> s(gpass::read_tf_graph_file<G>(f.dir / "graph.pb"), o);
      for (const auto& target : f.targets) (void)s.run(feeds, {}, {target});
      gpass::run_metadata md;
      got[static_cast<std::size_t>(rank)] = s.run(feeds, fetches, {}, {}, &md);
      if (rank == 0) sends += md.sends;
    };
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        try {
          process(r);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < 2; ++r) {
      CHECK(errors[static_cast<std::size_t>(r)] == "");
      REQUIRE(got[static_cast<std::size_t>(r)].size() == f.fetches.size());
      for (std::size_t k = 0; k < f.fetches.size(); ++k) {
        INFO(f.fetches[k].first << " in process " << r);
        CHECK(tfx::max_abs_diff(got[static_cast<std::size_t>(r)][k].tensor(), gpass::read_tf_tensor_file(f.fetches[k].second)) <=
              1e-5);
      }
    }
    ++fixtures;
  }
  CHECK(fixtures == 33);
  MESSAGE(fixtures << " fixtures over 2 processes: " << sends << " send/recv pairs in their last runs");
  CHECK(sends > 0);
}

}  // namespace gpass_test_tf_cluster_fixtures
