// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/io/text.hpp>
#include <gpass/session.hpp>

#include <atomic>
#include <cmath>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "loop_graph.hpp"

namespace gpass_test_session_session {

namespace {

using G = gpass::graph<>;
namespace ex = gpass::exec;

G parse(const std::string& s) { return gpass::parse_text(s); }

gpass::tensor vec(std::vector<float> v) { return gpass::tensor::from<float>(v); }

std::vector<float> values(const ex::value& v) {
  const auto& t = v.tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

bool same(const ex::value& a, const ex::value& b) {
  if (!a.is_tensor() || !b.is_tensor()) return false;
  const auto& x = a.tensor();
  const auto& y = b.tensor();
  return x.element_type() == y.element_type() && x.sizes() == y.sizes() &&
         std::equal(x.raw(), x.raw() + x.nbytes(), y.raw());
}

gpass::session_options<G> spread(int n) {
  gpass::session_options<G> o;
  o.devices = gpass::cpu_devices<G>(n);
  o.placement.spread = gpass::placement_options::spread_kind::round_robin;
  return o;
}

// y = relu(x * w + b) * 2, z = x + 1; a chain that round-robin placement cuts at every edge
const char* mlp = R"(graph {
  %x = arg() {index = 0} -> (f32[4])
  %w = Constant() {value = tensor<f32[4]> [1.0, -2.0, 3.0, -4.0]}
  %b = Constant() {value = tensor<f32[4]> [0.5, 0.5, 0.5, 0.5]}
  %m = Mul(%x, %w)
  %a = Add(%m, %b)
  %r = Relu(%a)
  %two = Constant() {value = tensor<f32[]> [2.0]}
  %y = Mul(%r, %two)
  %one = Constant() {value = tensor<f32[]> [1.0]}
  %z = Add(%x, %one)
  %ret:0 = return(%y, %z) {names = ["y", "z"]}
})";

using gpass_test_graphs::while_loop;

}  // namespace

TEST_CASE("session.device_name.parse_match_merge") {
  auto full = gpass::parse_device_name("/job:localhost/replica:0/task:0/device:CPU:1");
  CHECK(full.full());
  CHECK(full.to_string() == "/job:localhost/replica:0/task:0/device:CPU:1");
  CHECK(full.short_name() == "cpu:1");
  CHECK(gpass::parse_device_name("cpu:1") == gpass::parse_device_name("/device:CPU:1"));
  CHECK(gpass::parse_device_name("/cpu:1") == gpass::parse_device_name("CPU:1"));
  CHECK(gpass::device_matches(gpass::parse_device_name("/device:CPU:*"), full));
  CHECK(gpass::device_matches(gpass::parse_device_name("/job:localhost"), full));
  CHECK(gpass::device_matches(gpass::parse_device_name(""), full));
  CHECK_FALSE(gpass::device_matches(gpass::parse_device_name("/gpu:0"), full));
  CHECK_FALSE(gpass::device_matches(gpass::parse_device_name("/cpu:0"), full));
  auto a = gpass::parse_device_name("/job:localhost");
  auto b = gpass::parse_device_name("/cpu:1");
  CHECK(gpass::devices_compatible(a, b));
  CHECK(gpass::merge_devices(a, b).to_string() == "/job:localhost/device:CPU:1");
  CHECK_FALSE(gpass::devices_compatible(b, gpass::parse_device_name("/cpu:0")));
  CHECK_THROWS_WITH(gpass::parse_device_name("/device:CPU:x"), doctest::Contains("bad device index"));
  CHECK_THROWS_WITH(gpass::parse_device_name("/job:a/job:b"), doctest::Contains("two job"));
  CHECK_THROWS_WITH(gpass::parse_device_name("/cpu:0/gpu:0"), doctest::Contains("two device"));
}

TEST_CASE("session.rewrite.feeding_an_intermediate_cuts_what_is_upstream") {
  G g = parse(mlp);
  gpass::rewrite_for_run(g, {.feeds = {"a:0"}, .fetches = {"y"}});
  // x, w, b, m and the z branch are gone: a is an arg now
  CHECK_FALSE(g.find("m"));
  CHECK_FALSE(g.find("x"));
  CHECK_FALSE(g.find("z"));
  CHECK(g.find("_arg_a_0"));
  CHECK(g[*g.find("_arg_a_0")].op == "arg");
  CHECK(g.find("_fetches"));
  CHECK_THROWS_WITH(gpass::rewrite_for_run(*std::make_unique<G>(parse(mlp)), {.fetches = {"nope:0"}}),
                    doctest::Contains("nope"));
  G h = parse(mlp);
  CHECK_THROWS_WITH(gpass::rewrite_for_run(h, {.feeds = {"m:0", "m"}, .fetches = {"y"}}), doctest::Contains("fed twice"));
  G k = parse(mlp);
  CHECK_THROWS_WITH(gpass::rewrite_for_run(k, {.fetches = {"m:3"}}), doctest::Contains("out of range"));
}

TEST_CASE("session.run.one_and_two_devices_give_identical_outputs") {
  gpass::session<G> one(parse(mlp));
  gpass::session<G> two(parse(mlp), spread(2));
  auto x = vec({1, 2, 3, 4});
  gpass::run_metadata md1, md2;
  auto r1 = one.run({{"x", x}}, {"y", "z"}, {}, {}, &md1);
  auto r2 = two.run({{"x", x}}, {"y", "z"}, {}, {}, &md2);
  REQUIRE(r1.size() == 2);
  CHECK(values(r1[0]) == std::vector<float>{3, 0, 19, 0});
  CHECK(values(r1[1]) == std::vector<float>{2, 3, 4, 5});
  CHECK(same(r1[0], r2[0]));
  CHECK(same(r1[1], r2[1]));
  CHECK(md1.sends == 0);
  CHECK(md2.sends > 0);
  CHECK(md2.partitions == 2);
  // both devices hold nodes
  std::set<std::string> used;
  for (const auto& [n, d] : two.last_placement()) used.insert(d);
  CHECK(used.size() == 2);
}

TEST_CASE("session.run.loop_body_spread_over_devices_sends_inside_the_loop") {
  gpass::session<G> one(parse(while_loop));
  auto opts = spread(3);
  gpass::session<G> three(parse(while_loop), opts);
  std::vector<std::pair<std::string, ex::value>> feeds{{"x", vec({0.1f, 0.2f, 0.3f})}, {"n", gpass::tensor::scalar<std::int64_t>(7)}};
  gpass::run_metadata md;
  auto a = one.run(feeds, {"out", "count"});
  auto b = three.run(feeds, {"out", "count"}, {}, {.trace = true}, &md);
  CHECK(same(a[0], b[0]));
  CHECK(same(a[1], b[1]));
  CHECK(b[1].tensor().data<std::int64_t>()[0] == 7);
  // the body's parts exchanged tensors in every iteration: its nodes ran in 7 frames
  const auto& prog = three.partitions({"x", "n"}, {"out", "count"});
  REQUIRE(prog.functions.count("body"));
  CHECK_FALSE(prog.functions.at("body").remote.empty());
  std::set<std::string> frames;
  for (const auto& d : md.stats.devices)
    for (const auto& n : d.nodes)
      if (n.frame.find("/body#") != std::string::npos) frames.insert(n.frame);
  CHECK(frames.size() == 7);
  // the trace is JSON with one process per device
  const std::string trace = gpass::chrome_trace(md.stats);
  CHECK(trace.find("\"traceEvents\"") != std::string::npos);
  CHECK(trace.find("/job:localhost/replica:0/task:0/device:CPU:2") != std::string::npos);
  CHECK(trace.find("\"ph\": \"X\"") != std::string::npos);
}

TEST_CASE("session.run.executor_cache_unsorted_and_sorted_keys") {
  gpass::session<G> s(parse(mlp), spread(2));
  auto x = vec({1, 2, 3, 4});
  gpass::run_metadata md;
  auto a = s.run({{"x", x}}, {"y", "z"}, {}, {}, &md);
  CHECK_FALSE(md.cache_hit);
  auto b = s.run({{"x", x}}, {"z", "y"}, {}, {}, &md);  // same names, other order
  CHECK(md.cache_hit);
  CHECK(s.compilations() == 1);
  CHECK(same(a[0], b[1]));
  CHECK(same(a[1], b[0]));
  (void)s.run({{"x", x}}, {"y"}, {}, {}, &md);
  CHECK_FALSE(md.cache_hit);
  CHECK(s.compilations() == 2);
  // bounded
  gpass::session_options<G> o;
  o.cache_capacity = 2;
  gpass::session<G> small(parse(mlp), o);
  for (int i = 0; i < 5; ++i) (void)small.run({{"x", x}}, {i % 2 ? "y" : "z"});
  CHECK(small.cached() <= 2);
}

TEST_CASE("session.run.globals_persist_across_runs") {
  // v += x each run of `update`; fetch v
  const char* text = R"(graph {"global:v" = tensor<f32[2]> [1.0, 2.0]} {
  %x = arg() {index = 0} -> (f32[2])
  %v = get_global() {variable = "v"} -> (f32[2])
  %s = Add(%v, %x)
  %update = set_global(%s) {variable = "v"}
  %read = get_global() {variable = "v"} -> (f32[2])
  %ret:0 = return(%read) {names = ["read"]}
})";
  gpass::session<G> s(parse(text), spread(2));
  auto x = vec({10, 20});
  for (int i = 0; i < 3; ++i) (void)s.run({{"x", x}}, {}, {"update"});
  auto r = s.run({}, {"read"});
  CHECK(values(r[0]) == std::vector<float>{31, 62});
  CHECK(values(ex::value(*s.globals().get("v"))) == std::vector<float>{31, 62});
}

TEST_CASE("session.run.errors") {
  gpass::session<G> s(parse(mlp), spread(2));
  CHECK_THROWS_WITH(s.run({}, {"y"}), doctest::Contains("no value fed for input 'x'"));
  CHECK_THROWS_WITH(s.run({{"x", vec({1, 2, 3, 4})}}, {"nope"}), doctest::Contains("nope"));
  CHECK_THROWS_WITH(s.run({{"x", vec({1, 2})}}, {"y"}), doctest::Contains("expected"));
  CHECK_THROWS_WITH(s.run({}, {}), doctest::Contains("at least one fetch or target"));
  // a kernel that fails on one device while the other waits on a recv: the error, no hang
  const char* bad = R"(graph {
  %x = arg() {index = 0} -> (f32[*])
  %s = arg() {index = 1} -> (i64[*])
  %r = Reshape(%x, %s)
  %y = Relu(%r)
  %z = Neg(%y)
  %ret:0 = return(%z) {names = ["z"]}
})";
  gpass::session<G> b(parse(bad), spread(2));
  CHECK_THROWS_WITH(b.run({{"x", vec({1, 2, 3})}, {"s", gpass::tensor::from<std::int64_t>({2})}}, {"z"}),
                    doctest::Contains("Reshape"));
  // and the session still runs afterwards
  auto ok = b.run({{"x", vec({1, -2})}, {"s", gpass::tensor::from<std::int64_t>({2})}}, {"z"});
  CHECK(values(ok[0]) == std::vector<float>{-1, 0});
}

TEST_CASE("session.run.many_threads_mixed_signatures_identical_results") {
  gpass::session<G> s(parse(while_loop), spread(2));
  gpass::session<G> ref(parse(while_loop));
  auto x = vec({0.1f, 0.2f, 0.3f});
  auto n = gpass::tensor::scalar<std::int64_t>(5);
  const auto want = ref.run({{"x", x}, {"n", n}}, {"out", "count"});
  const auto want_out = ref.run({{"x", x}, {"n", n}}, {"out"});
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        if ((i + t) % 3 == 0) {
          auto r = s.run({{"n", n}, {"x", x}}, {"count", "out"});
          if (!same(r[0], want[1]) || !same(r[1], want[0])) ++bad;
        } else if ((i + t) % 3 == 1) {
          auto r = s.run({{"x", x}, {"n", n}}, {"out"});
          if (!same(r[0], want_out[0])) ++bad;
        } else {
          auto r = s.run({{"x", x}, {"n", n}}, {"out", "count"});
          if (!same(r[0], want[0]) || !same(r[1], want[1])) ++bad;
        }
      }
    });
  for (auto& t : threads) t.join();
  CHECK(bad == 0);
  CHECK(s.compilations() == 2);
}

}  // namespace gpass_test_session_session
