// SPDX-License-Identifier: Apache-2.0
// Sessions whose devices span processes (`/job:worker/task:1/device:CPU:0`): every process
// runs the same session over a `transport`; here the processes are threads joined by
// `thread_transport` (the same messages, encoded and decoded, as `mpi_transport` sends
// between the ranks of an mpirun; tests/tools/mpi_cluster.sh runs those).
#include <doctest/doctest.h>

#include <gpass/exec/transport.hpp>
#include <gpass/io/text.hpp>
#include <gpass/session.hpp>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace gpass_test_session_cluster {

namespace {

using G = gpass::graph<>;
namespace ex = gpass::exec;

std::vector<float> values(const ex::value& v) {
  const auto& t = v.tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.size());
}

gpass::tensor vec(std::vector<float> v) { return gpass::tensor::from<float>(v); }

// Runs `body(rank, transport)` in `n` threads standing for the processes; returns what each
// threw ("" when nothing).
std::vector<std::string> in_processes(int n, const std::function<void(int, std::shared_ptr<ex::transport>)>& body) {
  auto procs = ex::thread_transport::make(n);
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        body(r, procs[static_cast<std::size_t>(r)]);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

gpass::session_options<G> cluster_options(const std::string& spec, int rank, std::shared_ptr<ex::transport> t, int per_task = 1,
                                          bool round_robin = false) {
  gpass::session_options<G> o;
  o.devices = gpass::cluster_cpu_devices<G>(gpass::parse_cluster(spec), rank, per_task);
  o.transport = std::move(t);
  if (round_robin) o.placement.spread = gpass::placement_options::spread_kind::round_robin;
  return o;
}

// x on the worker 0, its square on worker 1, a global counter on worker 1, the sum back on 0
const char* tasks_graph = R"(graph {"global:n" = tensor<f32[]> [0.0]} {
  %x = arg() {index = 0} -> (f32[3])
  %a = Mul(%x, %x) on "/job:worker/task:1"
  %n = get_global() {variable = "n"} on "/job:worker/task:1" -> (f32[])
  %one = Constant() {value = tensor<f32[]> [1.0]}
  %m = Add(%n, %one) on "/job:worker/task:1"
  %u = set_global(%m) {variable = "n"} on "/job:worker/task:1" -> ()
  %b = Add(%a, %x) on "/job:worker/task:0"
  %c = Mul(%b, %m) on "/job:worker/task:0"
  %r:0 = return(%c, %a, ^%u) {names = ["c", "a"]}
}
)";

// a loop whose body spreads over the devices of both processes (round-robin placement): the
// calls of the body run parts in the other process
const char* loop_graph = R"(graph {
  %x = arg() {index = 0} -> (f32[3])
  %n = arg() {index = 1} -> (i64[])
  %i0 = Constant() {value = tensor<i64[]> [0]}
  %loop:3 = while(%i0, %x, %n) {body = @body, cond = @cond}
  %out = Neg(%loop:1)
  %ret:0 = return(%out, %loop:0) {names = ["out", "count"]}
}
func @body {
  %a:3 = function_entry() -> (i64[], f32[3], i64[])
  %one = Constant() {value = tensor<i64[]> [1]}
  %i = Add(%a:0, %one)
  %h = Constant() {value = tensor<f32[]> [0.5]}
  %s = Mul(%a:1, %h)
  %t = Sin(%s)
  %u = Add(%t, %a:1)
  %v = Cos(%u)
  %w = Add(%v, %s)
  %ret:0 = return(%i, %w, %a:2)
}
func @cond {
  %a:3 = function_entry() -> (i64[], f32[3], i64[])
  %c = Less(%a:0, %a:2)
  %ret:0 = return(%c)
})";

}  // namespace

TEST_CASE("session.cluster.wire_format") {
  auto round_trip = [](ex::value v) {
    ex::transport_message m;
    m.what = ex::transport_message::kind::value;
    m.step = 42;
    m.text = "a;b;x:0;";
    m.v = std::move(v);
    auto back = ex::decode_message(ex::encode_message(m), 3);
    CHECK(back.from == 3);
    CHECK(back.step == 42);
    CHECK(back.text == "a;b;x:0;");
    return back.v;
  };
  auto f = round_trip(gpass::tensor::from<float>({1.5f, -2.0f, 3.25f, 0.0f}, {2, 2}));
  CHECK(f.tensor().sizes() == std::vector<std::int64_t>{2, 2});
  CHECK(values(f) == std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f});
  gpass::tensor s(gpass::dtype::string, {3});
  s.data<std::string>()[0] = "one";
  s.data<std::string>()[2] = std::string("t\0o", 3);
  auto sb = round_trip(s);
  CHECK(sb.tensor() == s);
  auto seq = round_trip(ex::value::sequence_type{gpass::tensor::from<std::int64_t>({7, 8}), gpass::tensor(gpass::dtype::f16, {0, 4})});
  REQUIRE(seq.is_sequence());
  CHECK(seq.sequence().size() == 2);
  CHECK(seq.sequence()[0].data<std::int64_t>()[1] == 8);
  CHECK(seq.sequence()[1].sizes() == std::vector<std::int64_t>{0, 4});
  CHECK(round_trip(ex::value{}).is_none());
  CHECK(round_trip(gpass::tensor::from<double>({2.5}, {})).tensor().rank() == 0);

  // a large numeric tensor travels apart from its message (from and into the buffers)
  std::vector<float> big(5000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.5f;
  ex::transport_message bm;
  bm.text = "k";
  bm.v = gpass::tensor::from<float>(big, {50, 100});
  ex::detached_payload out, in;
  const auto header = ex::encode_message(bm, &out);
  CHECK(header.size() < 100);
  CHECK(out.bytes == 20000);
  CHECK(out.data == bm.v.tensor().raw());
  CHECK_THROWS_WITH_AS(ex::decode_message(header, 2), doctest::Contains("travel apart"), gpass::error);
  auto got = ex::decode_message(header, 2, &in);
  REQUIRE(in.bytes == 20000);
  std::memcpy(in.into, out.data, in.bytes);
  CHECK(values(got.v) == big);
  CHECK(got.v.tensor().sizes() == std::vector<std::int64_t>{50, 100});
  CHECK(ex::encode_message(bm).size() > 20000);  // without a payload: in the message

  // damaged bytes: errors naming the sender, never a read past the end
  ex::transport_message m;
  m.text = "k";
  m.v = gpass::tensor::from<float>({1, 2, 3});
  const auto bytes = ex::encode_message(m);
  for (std::size_t cut = 0; cut < bytes.size(); ++cut)
    CHECK_THROWS_WITH_AS(ex::decode_message(std::span(bytes.data(), cut), 5), doctest::Contains("damaged message from process 5"),
                         gpass::error);
  auto longer = bytes;
  longer.push_back(std::byte{0});
  CHECK_THROWS_WITH_AS(ex::decode_message(longer, 1), doctest::Contains("after its end"), gpass::error);
  auto huge = bytes;
  // the first size of the tensor (after kind, step, two strings, depth, device, value kind, dtype, rank)
  const std::size_t at = 1 + 8 + (8 + 1) + 8 + 8 + 8 + 1 + 1 + 8;
  for (std::size_t i = 0; i < 8; ++i) huge[at + i] = std::byte{0x7f};
  CHECK_THROWS_WITH_AS(ex::decode_message(huge, 1), doctest::Contains("larger than the message"), gpass::error);
}

TEST_CASE("session.cluster.rendezvous_router") {
  // values for device "b" leave through the router; a recv that waits says so
  struct router final : ex::rendezvous_router {
    std::vector<std::string> forwarded, waits;
    bool forward(const std::string& key, ex::value&) override {
      if (ex::rendezvous_recv_device(key) != "b") return false;
      forwarded.push_back(key);
      return true;
    }
    void waiting(std::string_view key, bool begins) override { waits.push_back((begins ? "+" : "-") + std::string(key)); }
  } r;
  ex::rendezvous rv;
  rv.set_router(&r);
  rv.send("a;b;x:0;", ex::value(vec({1})));
  CHECK(r.forwarded == std::vector<std::string>{"a;b;x:0;"});
  CHECK(rv.pending() == 0);
  rv.send("a;c;y:0;", ex::value(vec({2})));
  CHECK(values(rv.recv("a;c;y:0;")) == std::vector<float>{2});
  CHECK(r.waits.empty());  // it was there: no wait
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    rv.send("q;c;z:0;", ex::value(vec({3})));
  });
  CHECK(values(rv.recv("q;c;z:0;")) == std::vector<float>{3});
  later.join();
  CHECK(r.waits == std::vector<std::string>{"+q;c;z:0;", "-q;c;z:0;"});
  CHECK(ex::rendezvous_send_device("q;c;z:0;") == "q");
}

TEST_CASE("session.cluster.parse_cluster") {
  auto t = gpass::parse_cluster("ps:1,worker:2");
  REQUIRE(t.size() == 3);
  CHECK(t[0] == gpass::cluster_task{"ps", 0});
  CHECK(t[2] == gpass::cluster_task{"worker", 1});
  CHECK_THROWS_WITH_AS(gpass::parse_cluster(""), doctest::Contains("empty"), gpass::error);
  CHECK_THROWS_WITH_AS(gpass::parse_cluster("worker"), doctest::Contains("no ':N'"), gpass::error);
  CHECK_THROWS_WITH_AS(gpass::parse_cluster("worker:0"), doctest::Contains("no task"), gpass::error);
  CHECK_THROWS_WITH_AS(gpass::parse_cluster("a:1,a:2"), doctest::Contains("given twice"), gpass::error);
  CHECK_THROWS_WITH_AS(gpass::parse_cluster("a:1,"), doctest::Contains("ends with ','"), gpass::error);
  CHECK_THROWS_WITH_AS(gpass::parse_cluster("a:x"), doctest::Contains("bad task count"), gpass::error);
  auto devs = gpass::cluster_cpu_devices<G>(t, 1, 2);
  REQUIRE(devs.size() == 6);
  CHECK(devs[2]->name().to_string() == "/job:worker/replica:0/task:0/device:CPU:0");
  CHECK(devs[0]->process() == 0);
  CHECK(devs[2]->process() == -1);
  CHECK(devs[3]->process() == -1);
  CHECK(devs[4]->process() == 2);
  CHECK_THROWS_WITH_AS(gpass::cluster_cpu_devices<G>(t, 3), doctest::Contains("not one of the cluster's 3 tasks"), gpass::error);
}

TEST_CASE("session.cluster.nodes_go_to_their_tasks") {
  gpass::session<G> one(gpass::parse_text(tasks_graph), {.devices = gpass::cpu_devices<G>(2), .placement = {.allow_soft_placement = true}});
  std::vector<std::vector<ex::value>> want;
  for (int step = 0; step < 3; ++step) want.push_back(one.run({{"x", vec({1, 2, 3})}}, {"c", "a"}, {"u"}));
  std::vector<std::vector<std::vector<ex::value>>> got(2);
  std::vector<std::map<std::string, std::string>> placed(2);
  auto errors = in_processes(2, [&](int rank, std::shared_ptr<ex::transport> t) {
    gpass::session<G> s(gpass::parse_text(tasks_graph), cluster_options("worker:2", rank, t));
    for (int step = 0; step < 3; ++step) got[static_cast<std::size_t>(rank)].push_back(s.run({{"x", vec({1, 2, 3})}}, {"c", "a"}, {"u"}));
    placed[static_cast<std::size_t>(rank)] = s.last_placement();
    CHECK(t->waiting() == 0);
  });
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
  for (int rank = 0; rank < 2; ++rank) {
    REQUIRE(got[static_cast<std::size_t>(rank)].size() == 3);
    for (int step = 0; step < 3; ++step)
      for (int k = 0; k < 2; ++k)
        CHECK(values(got[static_cast<std::size_t>(rank)][static_cast<std::size_t>(step)][static_cast<std::size_t>(k)]) ==
              values(want[static_cast<std::size_t>(step)][static_cast<std::size_t>(k)]));
    CHECK(placed[static_cast<std::size_t>(rank)].at("a") == "/job:worker/replica:0/task:1/device:CPU:0");
    CHECK(placed[static_cast<std::size_t>(rank)].at("u") == "/job:worker/replica:0/task:1/device:CPU:0");
    CHECK(placed[static_cast<std::size_t>(rank)].at("c") == "/job:worker/replica:0/task:0/device:CPU:0");
  }
  // the counter lives in process 1 only: c = (x*x + x) * 3 on the third step
  CHECK(values(got[0][2][0]) == std::vector<float>{6, 18, 36});
}

TEST_CASE("session.cluster.function_parts_in_another_process") {
  gpass::session<G> one(gpass::parse_text(loop_graph), {});
  const auto n = gpass::tensor::from<std::int64_t>({6}, {});
  auto want = one.run({{"x", vec({0.1f, 0.2f, 0.3f})}, {"n", n}}, {"out", "count"});
  std::vector<std::vector<ex::value>> got(3);
  std::size_t sends = 0;
  auto errors = in_processes(3, [&](int rank, std::shared_ptr<ex::transport> t) {
    gpass::session<G> s(gpass::parse_text(loop_graph), cluster_options("worker:3", rank, t, 2, true));
    gpass::run_metadata md;
    for (int rep = 0; rep < 2; ++rep) got[static_cast<std::size_t>(rank)] = s.run({{"x", vec({0.1f, 0.2f, 0.3f})}, {"n", n}}, {"out", "count"}, {}, {}, &md);
    if (rank == 0) sends = md.sends;
    std::map<int, int> tasks;
    for (const auto& [node, dev] : s.last_placement())
      if (node.starts_with("body/")) ++tasks[*gpass::parse_device_name(dev).task];
    if (rank == 0) CHECK(tasks.size() == 3);  // the body spans the three processes
  });
  for (int r = 0; r < 3; ++r) {
    CHECK(errors[static_cast<std::size_t>(r)] == "");
    REQUIRE(got[static_cast<std::size_t>(r)].size() == 2);
    CHECK(values(got[static_cast<std::size_t>(r)][0]) == values(want[0]));
    CHECK(got[static_cast<std::size_t>(r)][1].tensor().data<std::int64_t>()[0] == 6);
  }
  CHECK(sends > 4);
}

TEST_CASE("session.cluster.failures_end_the_step_in_every_process") {
  // a kernel fails in process 1 (shapes that do not broadcast): both runs fail, process 0
  // naming process 1; the next step runs in both
  const char* g = R"(graph {
    %x = arg() {index = 0} -> (f32[?])
    %y = arg() {index = 1} -> (f32[?])
    %a = Add(%x, %y) on "/job:worker/task:1"
    %b = Neg(%a) on "/job:worker/task:0"
    %r:0 = return(%b) {names = ["b"]}
  })";
  std::vector<std::string> first(2), second(2), third(2);
  std::vector<std::vector<float>> last(2);
  auto errors = in_processes(2, [&](int rank, std::shared_ptr<ex::transport> t) {
    gpass::session<G> s(gpass::parse_text(g), cluster_options("worker:2", rank, t));
    try {
      s.run({{"x", vec({1, 2, 3})}, {"y", vec({1, 2})}}, {"b"});
    } catch (const gpass::error& e) {
      first[static_cast<std::size_t>(rank)] = e.what();
    }
    // a feed missing in process 1, where its arg node runs (a generator goes with its one
    // consumer): the step fails there, and so in process 0
    try {
      if (rank == 1) s.run({{"x", vec({1, 2})}}, {"b"});
      else s.run({{"x", vec({1, 2})}, {"y", vec({1, 2})}}, {"b"});
    } catch (const gpass::error& e) {
      second[static_cast<std::size_t>(rank)] = e.what();
    }
    // a feed of no tensor in process 0: its compilation fails before the step starts there
    try {
      if (rank == 0) s.run({{"x", vec({1, 2})}, {"y", vec({1, 2})}, {"nosuch:0", vec({1})}}, {"b"});
      else s.run({{"x", vec({1, 2})}, {"y", vec({1, 2})}}, {"b"});
    } catch (const gpass::error& e) {
      third[static_cast<std::size_t>(rank)] = e.what();
    }
    last[static_cast<std::size_t>(rank)] = values(s.run({{"x", vec({1, 2})}, {"y", vec({3, 4})}}, {"b"})[0]);
  });
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
  CHECK(first[1].find("'a'") != std::string::npos);  // the kernel's error names its node
  CHECK(first[0].find("process 1 failed the step") != std::string::npos);
  CHECK(first[0].find("'a'") != std::string::npos);
  CHECK(second[1].find("no value fed for input 'y'") != std::string::npos);
  CHECK(second[0].find("process 1 failed the step") != std::string::npos);
  CHECK(third[0].find("nosuch") != std::string::npos);
  CHECK(third[1].find("process 0 failed the step") != std::string::npos);
  CHECK(last[0] == std::vector<float>{-4, -6});
  CHECK(last[1] == std::vector<float>{-4, -6});
}

TEST_CASE("session.cluster.errors") {
  // a remote device without a transport, a process out of range
  auto t = ex::thread_transport::make(2);
  auto devs = gpass::cluster_cpu_devices<G>(gpass::parse_cluster("worker:2"), 0);
  CHECK_THROWS_WITH_AS(gpass::session<G>(gpass::parse_text(tasks_graph), {.devices = devs}), doctest::Contains("needs a transport"),
                       gpass::error);
  auto three = gpass::cluster_cpu_devices<G>(gpass::parse_cluster("worker:3"), 0);
  CHECK_THROWS_WITH_AS(gpass::session<G>(gpass::parse_text(tasks_graph), {.devices = three, .transport = t[0]}),
                       doctest::Contains("is in process 2, but this is process 0 of 2"), gpass::error);
  // a node asking for a task the cluster does not have: a placement error naming it
  const char* g = R"(graph {
    %x = arg() {index = 0} -> (f32[3])
    %a = Neg(%x) on "/job:worker/task:4"
    %r:0 = return(%a) {names = ["a"]}
  })";
  auto errors = in_processes(2, [&](int rank, std::shared_ptr<ex::transport> tr) {
    gpass::session<G> s(gpass::parse_text(g), cluster_options("worker:2", rank, tr));
    s.run({{"x", vec({1, 2, 3})}}, {"a"});
  });
  CHECK(errors[0].find("'a'") != std::string::npos);
  CHECK(errors[0].find("/job:worker/task:4") != std::string::npos);
  CHECK(errors[1].find("'a'") != std::string::npos);
}

}  // namespace gpass_test_session_cluster
