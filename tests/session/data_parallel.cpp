// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/exec/collectives.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/io/text.hpp>
#include <gpass/pass/registry.hpp>
#include <gpass/passes/builtin.hpp>  // pass_registry<G>::global() fills itself with the built-in passes
#include <gpass/passes/common/multi_devices.hpp>
#include <gpass/session.hpp>

#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace gpass_test_session_data_parallel {

namespace {

using G = gpass::graph<>;
namespace ex = gpass::exec;

// One training step of a scalar weight: y = x * w (fetched: batch-major), loss = mean(y)
// (fetched: averaged), w -= 0.5 * mean(x) (the "gradient", reduced over the replicas).
const char* step_graph = R"(graph {"global:w" = tensor<f32[]> [1.0]} {
  %x = arg() {index = 0} -> (f32[xb])
  %w = get_global() {variable = "w"} -> (f32[])
  %lr = Constant() {value = tensor<f32[]> [0.5]}
  %y = Mul(%x, %w)
  %g = ReduceMean(%x) {keepdims = 0}
  %u = update_globals(%lr, %g, ^%y) {rule = "gradient_descent", variables = ["w"]} -> (f32[])
  %loss = ReduceMean(%y) {keepdims = 0}
  %r:0 = return(%y, %loss, ^%u) {names = ["y", "loss"]}
}
)";

std::vector<float> values(const ex::value& v) {
  const auto& t = v.tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

gpass::tensor vec(std::vector<float> v) { return gpass::tensor::from<float>(v); }

std::function<void(G&)> pipeline(const std::string& text) {
  auto pipe = std::make_shared<gpass::dynamic_pipeline<G>>(gpass::pass_registry<G>::global().parse(text));
  return [pipe](G& g) {
    gpass::pass_context ctx;
    pipe->run(g, ctx, gpass::instrumentation_options{});
  };
}

gpass::session_options<G> replicated(int replicas, int rank = 0, int ranks = 1) {
  gpass::session_options<G> o;
  o.devices = gpass::cpu_devices<G>(replicas);
  o.prepare = pipeline("multi-devices{replicas=" + std::to_string(replicas) + ",rank=" + std::to_string(rank) +
                       ",ranks=" + std::to_string(ranks) + "},multi-devices-check");
  return o;
}

G replicate(const std::string& text, const std::string& options) {
  G g = gpass::parse_text(text);
  gpass::pass_context ctx;
  gpass::pass_registry<G>::global().parse("multi-devices{" + options + "}").run(g, ctx, gpass::instrumentation_options{});
  return g;
}

void check_graph(G& g) {
  gpass::pass_context ctx;
  gpass::pass_registry<G>::global().parse("multi-devices-check").run(g, ctx, gpass::instrumentation_options{});
}

}  // namespace

TEST_CASE("session.data_parallel.two_replicas_match_one_device") {
  gpass::session<G> one(gpass::parse_text(step_graph), {});
  gpass::session<G> two(gpass::parse_text(step_graph), replicated(2));
  for (int step = 0; step < 3; ++step) {
    auto a = one.run({{"x", vec({1, 2, 3, 4})}}, {"y", "loss"}, {"u"});
    auto b = two.run({{"x", vec({1, 2, 3, 4})}}, {"y", "loss"}, {"u"});
    CHECK(values(a[0]) == values(b[0]));  // the slices gathered back in batch order
    CHECK(values(a[1]) == values(b[1]));  // the mean of the replicas' means
  }
  // w: 1 -> 1 - 0.5 * 2.5 = -0.25 -> -1.5 -> -2.75 on every copy
  auto y = two.run({{"x", vec({1, 2, 3, 4})}}, {"y"}, {});
  CHECK(values(y[0]) == std::vector<float>{-2.75f, -5.5f, -8.25f, -11.0f});
  CHECK(two.last_placement().at("replica_1/y") != two.last_placement().at("replica_0/y"));
}

TEST_CASE("session.data_parallel.pass_structure") {
  G g = replicate(step_graph, "replicas=2");
  int slices = 0, reduces = 0, gathers = 0;
  for (auto v : g.nodes()) {
    const auto& n = g[v];
    if (n.op == "batch_slice") ++slices;
    if (n.op == "all_reduce") ++reduces;
    if (n.op == "all_gather") ++gathers;
  }
  CHECK(slices == 2);
  CHECK(reduces == 4);  // the gradient and the loss, per replica
  CHECK(gathers == 2);  // y
  CHECK(g.attrs().count("global:w/replica_1") == 1);
  auto u1 = g.find("replica_1/u");
  REQUIRE(u1);
  CHECK(gpass::get_or<std::vector<std::string>>(g[*u1].attrs, "variables", {}) == std::vector<std::string>{"w/replica_1"});
  CHECK(g[*u1].device == "/device:CPU:1");
  CHECK(g[g.input(*u1, 1).node].op == "all_reduce");
  check_graph(g);  // passes

  // the same graph twice is refused
  CHECK_THROWS_WITH_AS(replicate(gpass::print_text(g), "replicas=2"), doctest::Contains("replicated already"), gpass::error);
  // a call of a function the library lacks is refused (by the verifier first)
  CHECK_THROWS_WITH_AS(replicate(R"(graph {
  %x = arg() {index = 0} -> (f32[2])
  %c = Constant() {value = tensor<bool[]> [true]}
  %y = if(%c, %x) {then_branch = @f, else_branch = @f} -> (f32[2])
  %r:0 = return(%y)
}
)", "replicas=2"),
                       doctest::Contains("unknown function 'f'"), gpass::error);
}

TEST_CASE("session.data_parallel.check_rejects_broken_replicas") {
  SUBCASE("a gradient applied without its all-reduce") {
    G g = replicate(step_graph, "replicas=2");
    for (int r = 0; r < 2; ++r)
      g.set_input(*g.find("replica_" + std::to_string(r) + "/u"), 1, *g.find("replica_" + std::to_string(r) + "/g"), 0);
    CHECK_THROWS_WITH_AS(check_graph(g), doctest::Contains("not all-reduced"), gpass::error);
  }
  SUBCASE("two replicas on one device") {
    G g = replicate(step_graph, "replicas=2,devices=\"cpu:0,cpu:0\"");
    CHECK_THROWS_WITH_AS(check_graph(g), doctest::Contains("share device"), gpass::error);
  }
  SUBCASE("a variable written from the replica's slice of the batch") {
    const std::string text = R"(graph {"global:s" = tensor<f32[]> [0.0]} {
  %x = arg() {index = 0} -> (f32[4])
  %m = ReduceMean(%x) {keepdims = 0}
  %a = set_global(%m) {variable = "s"} -> (f32[])
  %r:0 = return(%m, ^%a) {names = ["m"]}
}
)";
    G g = replicate(text, "replicas=2");
    CHECK_THROWS_WITH_AS(check_graph(g), doctest::Contains("would diverge"), gpass::error);
  }
  SUBCASE("a replica that reads another replica's copy") {
    G g = replicate(step_graph, "replicas=2");
    auto y1 = *g.find("replica_1/y");
    g.set_input(y1, 1, *g.find("replica_0/w"), 0);
    CHECK_THROWS_WITH_AS(check_graph(g), doctest::Contains("not replica 1's copy"), gpass::error);
  }
  SUBCASE("an unreplicated graph") {
    G g = gpass::parse_text(step_graph);
    CHECK_THROWS_WITH_AS(check_graph(g), doctest::Contains("no replicas"), gpass::error);
  }
}

// A step whose forward pass is a loop reading the weight inside its body: y = x * w^n.
const char* loop_step_graph = R"(graph {"global:w" = tensor<f32[]> [1.5]} {
  %x = arg() {index = 0} -> (f32[xb])
  %n = Constant() {value = tensor<i64[]> [3]}
  %i0 = Constant() {value = tensor<i64[]> [0]}
  %loop:3 = while(%i0, %x, %n) {body = @body, cond = @cond}
  %lr = Constant() {value = tensor<f32[]> [0.1]}
  %g = ReduceMean(%loop:1) {keepdims = 0}
  %u = update_globals(%lr, %g, ^%loop) {rule = "gradient_descent", variables = ["w"]} -> (f32[])
  %loss = ReduceMean(%loop:1) {keepdims = 0}
  %r:0 = return(%loop:1, %loss, ^%u) {names = ["y", "loss"]}
}
func @body {
  %a:3 = function_entry() -> (i64[], f32[xb], i64[])
  %one = Constant() {value = tensor<i64[]> [1]}
  %i = Add(%a:0, %one)
  %w = get_global() {variable = "w"} -> (f32[])
  %m = Mul(%a:1, %w)
  %ret:0 = return(%i, %m, %a:2)
}
func @cond {
  %a:3 = function_entry() -> (i64[], f32[xb], i64[])
  %c = Less(%a:0, %a:2)
  %ret:0 = return(%c)
})";

TEST_CASE("session.data_parallel.functions_are_replicated") {
  G g = replicate(loop_step_graph, "replicas=2");
  check_graph(g);
  CHECK(g.find_function("replica_0/body"));
  CHECK(g.find_function("replica_1/cond"));
  CHECK_FALSE(g.find_function("body"));
  const G& b1 = *g.find_function("replica_1/body");
  for (auto v : b1.nodes()) {
    CHECK(b1[v].device == "/device:CPU:1");
    if (b1[v].op == "get_global") CHECK(gpass::get_or<std::string>(b1[v].attrs, "variable", "") == "w/replica_1");
  }
  // the check notices a replica's function reading replica 0's variable
  G bad = g;
  for (auto v : bad.find_function("replica_1/body")->nodes())
    if ((*bad.find_function("replica_1/body"))[v].op == "get_global")
      (*bad.find_function("replica_1/body"))[v].attrs["variable"] = std::string("w");
  CHECK_THROWS_WITH_AS(check_graph(bad), doctest::Contains("reads another variable"), gpass::error);

  gpass::session<G> one(gpass::parse_text(loop_step_graph), {});
  gpass::session<G> two(gpass::parse_text(loop_step_graph), replicated(2));
  for (int step = 0; step < 3; ++step) {
    auto a = one.run({{"x", vec({1, 2, 3, 4})}}, {"y", "loss"}, {"u"});
    auto b = two.run({{"x", vec({1, 2, 3, 4})}}, {"y", "loss"}, {"u"});
    CHECK(values(a[0]) == values(b[0]));
    CHECK(values(a[1]) == values(b[1]));
  }
  // a loop that writes a variable is refused
  std::string writes = loop_step_graph;
  writes.replace(writes.find("%ret:0 = return(%i, %m, %a:2)"), 29, "%s = set_global(%m) {variable = \"w\"} -> ()\n  %ret:0 = return(%i, %m, %a:2)");
  CHECK_THROWS_WITH_AS(replicate(writes, "replicas=2"), doctest::Contains("writes a variable"), gpass::error);
}

TEST_CASE("session.data_parallel.errors_name_the_node") {
  gpass::session<G> two(gpass::parse_text(step_graph), replicated(2));
  // a batch of 3 does not split over 2 replicas
  CHECK_THROWS_WITH_AS(two.run({{"x", vec({1, 2, 3})}}, {"y"}, {}), doctest::Contains("batch_slice"), gpass::error);
  // a graph replicated for two processes, run in one
  gpass::session<G> ranks(gpass::parse_text(step_graph), replicated(1, 0, 2));
  CHECK_THROWS_WITH_AS(ranks.run({{"x", vec({1, 2, 3, 4})}}, {"loss"}, {}), doctest::Contains("2 process(es), the run has 1"),
                       gpass::error);
}

TEST_CASE("session.data_parallel.processes") {
  // two "processes" (threads with a thread_process_group), each with 2 replicas: 4 slices
  for (int per_process : {1, 2}) {
    auto group = ex::thread_process_group::make(2);
    std::vector<std::vector<float>> y(2), loss(2);
    std::vector<std::string> errors(2);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < 2; ++rank)
      threads.emplace_back([&, rank] {
        try {
          auto o = replicated(per_process, rank, 2);
          o.processes = group[static_cast<std::size_t>(rank)];
          gpass::session<G> s(gpass::parse_text(step_graph), std::move(o));
          for (int step = 0; step < 3; ++step) {
            auto r = s.run({{"x", vec({1, 2, 3, 4, 5, 6, 7, 8})}}, {"y", "loss"}, {"u"});
            y[static_cast<std::size_t>(rank)] = values(r[0]);
            loss[static_cast<std::size_t>(rank)] = values(r[1]);
          }
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(rank)] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    CHECK(errors[0].empty());
    CHECK(errors[1].empty());
    gpass::session<G> one(gpass::parse_text(step_graph), {});
    std::vector<ex::value> r;
    for (int step = 0; step < 3; ++step) r = one.run({{"x", vec({1, 2, 3, 4, 5, 6, 7, 8})}}, {"y", "loss"}, {"u"});
    CHECK(y[0] == values(r[0]));
    CHECK(y[1] == values(r[0]));
    CHECK(loss[0] == values(r[1]));
    CHECK(loss[1] == values(r[1]));
  }
}

TEST_CASE("session.data_parallel.thread_process_group") {
  auto group = ex::thread_process_group::make(3);
  std::vector<gpass::tensor> sums(3), gathered(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      for (int round = 0; round < 50; ++round) {  // the slots are reused round after round
        gpass::tensor t = vec({float(r), float(round)});
        group[static_cast<std::size_t>(r)]->all_reduce_sum(t, "test");
        sums[static_cast<std::size_t>(r)] = t;
        gathered[static_cast<std::size_t>(r)] = group[static_cast<std::size_t>(r)]->all_gather(vec({float(r)}), "test");
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 3; ++r) {
    CHECK(values(sums[static_cast<std::size_t>(r)]) == std::vector<float>{3.0f, 147.0f});
    CHECK(values(gathered[static_cast<std::size_t>(r)]) == std::vector<float>{0.0f, 1.0f, 2.0f});
  }
}

TEST_CASE("session.data_parallel.integer_sums_wrap") {
  // an all-reduce of int32 / int64 gradients wraps (two's complement), as the kernels' integer
  // sums do; it was a signed overflow (undefined)
  const auto i32_max = std::numeric_limits<std::int32_t>::max();
  auto s = ex::detail::sum_in_order({gpass::tensor::from<std::int32_t>({i32_max, 1}), gpass::tensor::from<std::int32_t>({1, 2})}, "test");
  CHECK(s.values<std::int32_t>()[0] == std::numeric_limits<std::int32_t>::min());
  CHECK(s.values<std::int32_t>()[1] == 3);
  const auto i64_min = std::numeric_limits<std::int64_t>::min();
  auto l = ex::detail::sum_in_order({gpass::tensor::from<std::int64_t>({i64_min}), gpass::tensor::from<std::int64_t>({-1})}, "test");
  CHECK(l.values<std::int64_t>()[0] == std::numeric_limits<std::int64_t>::max());
}

}  // namespace gpass_test_session_data_parallel
