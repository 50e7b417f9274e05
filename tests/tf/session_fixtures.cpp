// SPDX-License-Identifier: Apache-2.0
// The session on real TensorFlow graphs (tests/data/tf_session, made by its make_fixtures.py
// with TensorFlow running each graph on two CPU devices): the same runs in order through a
// gpass::session on two CPU devices give TensorFlow's values, the nodes with a device request
// or a colocation constraint go where TensorFlow put them, globals persist across runs, and
// every error case is an error naming the nodes.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gpass/io/tensorflow.hpp>
#include <gpass/passes/tf.hpp>
#include <gpass/session.hpp>

#include "fixture_support.hpp"

namespace gpass_test_tf_session_fixtures {

namespace {

using G = gpass::graph<>;
namespace fs = std::filesystem;
const fs::path dir = fs::path(GPASS_TEST_DATA_DIR) / "tf_session";

struct run_spec {
  std::vector<std::pair<std::string, fs::path>> feeds, fetches;
  std::vector<std::string> targets;
  std::string error;
  int tf_sends = -1;
};

struct session_fixture {
  bool soft = false;
  std::vector<run_spec> runs;
  std::map<std::string, std::string> place;
};

session_fixture read(const std::string& name) {
  session_fixture f;
  std::ifstream in(dir / name / "fixture.txt");
  REQUIRE(in);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string kind, a, b;
    s >> kind >> a >> b;
    if (kind == "run") f.runs.emplace_back();
    else if (kind == "soft_placement") f.soft = true;
    else if (kind == "feed") f.runs.back().feeds.emplace_back(a, dir / name / b);
    else if (kind == "fetch") f.runs.back().fetches.emplace_back(a, dir / name / b);
    else if (kind == "target") f.runs.back().targets.push_back(a);
    else if (kind == "sends") f.runs.back().tf_sends = std::stoi(a);
    else if (kind == "error") f.runs.back().error = line.substr(6);
    else if (kind == "place") f.place[a] = b;
  }
  return f;
}

gpass::session_options<G> options(const session_fixture& f, bool round_robin) {
  gpass::session_options<G> o;
  o.devices = gpass::cpu_devices<G>(2);
  o.placement.allow_soft_placement = f.soft;
  if (round_robin) o.placement.spread = gpass::placement_options::spread_kind::round_robin;
  o.prepare = [](G& g) {
    gpass::pass_context ctx;
    gpass::tf_frontend(g, ctx);
  };
  return o;
}

// Runs every run of the fixture in order; returns the number of values compared.
int run_all(const std::string& name, const session_fixture& f, gpass::session<G>& s, std::size_t* sends = nullptr) {
  int compared = 0;
  for (std::size_t r = 0; r < f.runs.size(); ++r) {
    const auto& run = f.runs[r];
    std::vector<std::pair<std::string, gpass::exec::value>> feeds;
    for (const auto& [t, file] : run.feeds) feeds.emplace_back(t, gpass::read_tf_tensor_file(file));
    std::vector<std::string> fetches;
    for (const auto& [t, file] : run.fetches) fetches.push_back(t);
    INFO(name << " run " << r);
    if (!run.error.empty()) continue;  // the error cases are checked by their own tests
    gpass::run_metadata md;
    auto out = s.run(feeds, fetches, run.targets, {}, &md);
    if (sends) *sends += md.sends;
    REQUIRE(out.size() == run.fetches.size());
    for (std::size_t k = 0; k < out.size(); ++k) {
      INFO("fetch " << run.fetches[k].first);
      const auto want = gpass::read_tf_tensor_file(run.fetches[k].second);
      CHECK(gpass_test::tf::max_abs_diff(out[k].tensor(), want) <= 1e-5);
      ++compared;
    }
  }
  return compared;
}

}  // namespace

TEST_CASE("tf.session.fixtures_give_tensorflows_values_on_two_devices") {
  for (const char* name : {"placement", "loop_devices", "variables_devices", "soft_placement_device", "resize_area_device"}) {
    const auto f = read(name);
    for (bool rr : {false, true}) {
      INFO(std::string(name) << std::string(rr ? " round-robin" : ""));
      gpass::session<G> s(gpass::read_tf_graph_file<G>(dir / name / "graph.pb"), options(f, rr));
      std::size_t sends = 0;
      CHECK(run_all(name, f, s, &sends) > 0);
      MESSAGE(std::string(name) << std::string(rr ? " (round-robin)" : "") << ": " << sends << " send/recv pairs over its runs");
    }
  }
}

TEST_CASE("tf.session.placement_follows_requests_and_colocation_as_tensorflow") {
  const auto f = read("placement");
  gpass::session<G> s(gpass::read_tf_graph_file<G>(dir / "placement" / "graph.pb"), options(f, false));
  const auto& run = f.runs.front();
  std::vector<std::pair<std::string, gpass::exec::value>> feeds;
  for (const auto& [t, file] : run.feeds) feeds.emplace_back(t, gpass::read_tf_tensor_file(file));
  gpass::run_metadata md;
  (void)s.run(feeds, {"d:0", "f:0"}, {}, {}, &md);
  const auto placed = s.last_placement();
  int matched = 0;
  for (const auto& [node, dev] : f.place) {
    auto it = placed.find(node);
    if (it == placed.end()) continue;  // folded into a constant or lowered
    INFO(node);
    CHECK(it->second == dev);
    ++matched;
  }
  CHECK(matched >= 4);  // a, b, c (colocated with a), e
  CHECK(md.sends > 0);
  // feeding b:0 cuts x and a away: no feed for x is needed
  const auto& run1 = f.runs[1];
  auto out = s.run({{"b:0", gpass::read_tf_tensor_file(run1.feeds[0].second)}}, {"f:0", "d:0"});
  CHECK(gpass_test::tf::max_abs_diff(out[0].tensor(), gpass::read_tf_tensor_file(run1.fetches[0].second)) <= 1e-5);
  const auto cut = s.last_placement();
  CHECK(cut.count("a") == 0);
  CHECK(cut.count("x") == 0);
}

TEST_CASE("tf.session.resize_area_where_tensorflow_put_it") {
  const auto f = read("resize_area_device");
  gpass::session<G> s(gpass::read_tf_graph_file<G>(dir / "resize_area_device" / "graph.pb"), options(f, false));
  const auto& run = f.runs.front();
  auto out = s.run({{"x:0", gpass::read_tf_tensor_file(run.feeds[0].second)}}, {"y:0"});
  CHECK(gpass_test::tf::max_abs_diff(out[0].tensor(), gpass::read_tf_tensor_file(run.fetches[0].second)) <= 1e-5);
  const auto placed = s.last_placement();
  REQUIRE(placed.count("resize") == 1);
  CHECK(placed.at("resize") == f.place.at("resize"));
}

TEST_CASE("tf.session.loop_body_on_another_device") {
  const auto f = read("loop_devices");
  gpass::session<G> s(gpass::read_tf_graph_file<G>(dir / "loop_devices" / "graph.pb"), options(f, false));
  std::vector<std::pair<std::string, gpass::exec::value>> feeds;
  for (const auto& [t, file] : f.runs[0].feeds) feeds.emplace_back(t, gpass::read_tf_tensor_file(file));
  gpass::run_metadata md;
  auto out = s.run(feeds, {"out:0", "count:0"}, {}, {.trace = true}, &md);
  CHECK(gpass_test::tf::max_abs_diff(out[0].tensor(), gpass::read_tf_tensor_file(f.runs[0].fetches[0].second)) <= 1e-5);
  // the body's m and s run on CPU:1, the loop on CPU:0: their tensors cross in every iteration
  const auto placed = s.last_placement();
  int body_on_1 = 0;
  for (const auto& [node, dev] : placed)
    if ((node.ends_with("/loop/m") || node.ends_with("/loop/s")) && dev.ends_with("CPU:1")) ++body_on_1;
  CHECK(body_on_1 == 2);
  CHECK(md.sends >= 2);
  std::set<std::string> frames;
  for (const auto& d : md.stats.devices)
    if (d.device.ends_with("CPU:1"))
      for (const auto& n : d.nodes) frames.insert(n.frame);
  CHECK(frames.size() == 5);  // one frame per iteration of the body (n = 5)
  // a tensor inside the loop cannot be fetched (as in TensorFlow: "not fetchable")
  CHECK_THROWS_WITH(s.run(feeds, {"loop/m:0"}), doctest::Contains("inside the while loop"));
}

TEST_CASE("tf.session.variables_persist_and_stay_pinned") {
  const auto f = read("variables_devices");
  gpass::session<G> s(gpass::read_tf_graph_file<G>(dir / "variables_devices" / "graph.pb"), options(f, true));
  CHECK(run_all("variables_devices", f, s) == 1);
  // a global stays on the device its first signature put it on, whatever other signature
  // touches it: round-robin would spread each new signature's groups afresh
  gpass::session<G> t(gpass::read_tf_graph_file<G>(dir / "variables_devices" / "graph.pb"), options(f, true));
  (void)t.run({}, {}, {"init"});
  (void)t.run({{"x:0", gpass::tensor::from<float>({1, 1})}}, {}, {"update"});
  const auto first = t.last_placement();
  REQUIRE(first.count("upd_v"));  // set_global of v
  REQUIRE(first.count("upd_r"));  // set_global of r
  (void)t.run({}, {"y:0"});
  const auto second = t.last_placement();
  REQUIRE(second.count("Read/ReadVariableOp"));  // get_global of v, only in this signature
  REQUIRE(second.count("y/ReadVariableOp"));     // get_global of r
  CHECK(second.at("Read/ReadVariableOp") == first.at("upd_v"));
  CHECK(second.at("y/ReadVariableOp") == first.at("upd_r"));
  CHECK(first.at("upd_v") != first.at("upd_r"));  // (round-robin put the two variables apart)
  // as in TensorFlow, a variable read before its initializer ran is an error
  gpass::session<G> u(gpass::read_tf_graph_file<G>(dir / "variables_devices" / "graph.pb"), options(f, true));
  CHECK_THROWS_WITH(u.run({{"x:0", gpass::tensor::from<float>({1, 1})}}, {}, {"update"}), doctest::Contains("never initialized"));
}

TEST_CASE("tf.session.errors_name_the_nodes") {
  {
    const auto f = read("colocation_conflict");
    gpass::session<G> s(gpass::read_tf_graph_file<G>(dir / "colocation_conflict" / "graph.pb"), options(f, false));
    CHECK_THROWS_WITH(s.run({{"x:0", gpass::tensor::from<float>({1, 2})}}, {"c:0"}),
                      doctest::Contains("colocation conflict"));
    try {
      (void)s.run({{"x:0", gpass::tensor::from<float>({1, 2})}}, {"c:0"});
    } catch (const gpass::error& e) {
      const std::string m = e.what();
      CHECK(m.find("'c'") != std::string::npos);
      CHECK(m.find("'a'") != std::string::npos);
    }
  }
  {
    const auto f = read("missing_device");
    REQUIRE(!f.runs.front().error.empty());  // TensorFlow refused too
    gpass::session<G> s(gpass::read_tf_graph_file<G>(dir / "missing_device" / "graph.pb"), options(f, false));
    CHECK_THROWS_WITH(s.run({{"x:0", gpass::tensor::from<float>({1, 2})}}, {"b:0"}),
                      doctest::Contains("requests device '/device:GPU:0', which this session does not have"));
  }
  {
    const auto f = read("placement");
    gpass::session<G> s(gpass::read_tf_graph_file<G>(dir / "placement" / "graph.pb"), options(f, false));
    CHECK_THROWS_WITH(s.run({}, {"f:0"}), doctest::Contains("placeholder 'x'"));
    CHECK_THROWS_WITH(s.run({{"x:0", gpass::tensor::from<float>({1, 2})}}, {"f:0"}), doctest::Contains("x"));
    CHECK_THROWS_WITH(s.run({}, {"nope:0"}), doctest::Contains("nope"));
  }
}

// Every fixture of tests/data/tf (the frontend's) through a session: its targets each in their
// own run, then the fetches, on one device and on two with the nodes spread round-robin; the
// values equal TensorFlow's, and the two-device run equals the one-device run bit for bit.
TEST_CASE("tf.session.every_frontend_fixture_on_one_and_two_devices") {
  namespace tfx = gpass_test::tf;
  int fixtures = 0;
  std::size_t total_sends = 0;
  for (const auto& e : fs::directory_iterator(tfx::data_dir)) {
    if (!e.is_directory() || !fs::exists(e.path() / "fixture.txt")) continue;
    const auto f = tfx::read_fixture(e.path().filename().string());
    INFO(f.name);
    std::vector<std::pair<std::string, gpass::exec::value>> feeds;
    for (const auto& [t, file] : f.feeds) feeds.emplace_back(t, gpass::read_tf_tensor_file(file));
    std::vector<std::string> fetches;
    for (const auto& [t, file] : f.fetches) fetches.push_back(t);
    std::vector<std::vector<gpass::exec::value>> results;
    for (int devices : {1, 2}) {
      gpass::session_options<G> o = options(session_fixture{}, devices == 2);
      if (devices == 1) o.devices = gpass::cpu_devices<G>(1);
      gpass::session<G> s(gpass::read_tf_graph_file<G>(f.dir / "graph.pb"), o);
      for (const auto& t : f.targets) (void)s.run(feeds, {}, {t});  // (as TensorFlow ran them: with the feeds)
      gpass::run_metadata md;
      results.push_back(s.run(feeds, fetches, {}, {}, &md));
      std::map<std::string, int> per_device;
      for (const auto& [n, d] : s.last_placement()) ++per_device[gpass::parse_device_name(d).short_name()];
      std::string placed;
      for (const auto& [d, c] : per_device) placed += " " + d + "=" + std::to_string(c);
      MESSAGE(f.name << ", " << devices << " device(s): placement" << placed << ", " << md.sends << " send/recv pairs ("
                     << md.control_sends << " control), " << md.partitions << " partition(s) run");
      if (devices == 2) total_sends += md.sends;
      REQUIRE(results.back().size() == f.fetches.size());
      for (std::size_t k = 0; k < f.fetches.size(); ++k) {
        INFO(f.fetches[k].first);
        CHECK(tfx::max_abs_diff(results.back()[k].tensor(), gpass::read_tf_tensor_file(f.fetches[k].second)) <= 1e-5);
      }
    }
    for (std::size_t k = 0; k < f.fetches.size(); ++k) {
      const auto& a = results[0][k].tensor();
      const auto& b = results[1][k].tensor();
      CHECK(a.sizes() == b.sizes());
      CHECK(std::equal(a.raw(), a.raw() + a.nbytes(), b.raw(), b.raw() + b.nbytes()));
    }
    ++fixtures;
  }
  CHECK(fixtures == 33);
  CHECK(total_sends > 0);
}

}  // namespace gpass_test_tf_session_fixtures
