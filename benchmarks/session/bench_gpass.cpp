// SPDX-License-Identifier: Apache-2.0
// gpass_bench_session GRAPH.pb [RUNS] [DEVICES]: times gpass::session::run on a TensorFlow
// GraphDef (tf_session.py writes the 10-node one): import, a session on DEVICES CPU devices
// (1 thread each; nodes spread round-robin when DEVICES > 1) with the tf-frontend pipeline,
// one warm-up run (it compiles the signature), then RUNS runs of the same feed and fetch.
// Prints one JSON line: {"peer": "gpass", "devices": D, "runs": N, "us_median": M, "us_min": L, "y": [...]}.
// Also times the plan alone (the same graph, no session) for the session's own share.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/io/tensorflow.hpp>
#include <gpass/io/tf_signature.hpp>
#include <gpass/passes/tf.hpp>
#include <gpass/session.hpp>

namespace {
using G = gpass::graph<>;
using clock_type = std::chrono::steady_clock;

double us(clock_type::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

struct figures {
  double median = 0, min = 0;
};
template <class F>
figures time_runs(int runs, F&& f) {
  std::vector<double> t;
  t.reserve(static_cast<std::size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    const auto a = clock_type::now();
    f();
    t.push_back(us(clock_type::now() - a));
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front()};
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: gpass_bench_session GRAPH.pb [RUNS] [DEVICES]\n";
    return 2;
  }
  const int runs = argc > 2 ? std::stoi(argv[2]) : 20000;
  const int devices = argc > 3 ? std::stoi(argv[3]) : 1;
  try {
    G g = gpass::read_tf_graph_file<G>(argv[1]);
    gpass::session_options<G> o;
    o.devices = gpass::cpu_devices<G>(devices, 1);
    if (devices > 1) o.placement.spread = gpass::placement_options::spread_kind::round_robin;
    o.prepare = [](G& h) {
      gpass::pass_context ctx;
      gpass::tf_frontend(h, ctx);
    };
    gpass::session<G> s(g, o);
    const gpass::exec::value x = gpass::tensor::from<float>({1.0f, 2.0f, -3.0f, 4.0f});
    const std::vector<std::pair<std::string, gpass::exec::value>> feeds{{"x:0", x}};
    const std::vector<std::string> fetches{"y:0"};
    const auto t0 = clock_type::now();
    auto y = s.run(feeds, fetches);
    const double first_us = us(clock_type::now() - t0);
    for (int i = 0; i < 200; ++i) (void)s.run(feeds, fetches);
    const figures f = time_runs(runs, [&] { (void)s.run(feeds, fetches); });
    // the plan alone, on the graph the session compiled (bound, frontend, one device)
    G h = g;
    gpass::bind_tf_signature(h, {.feeds = {"x:0"}, .fetches = {"y:0"}});
    gpass::pass_context ctx;
    gpass::tf_frontend(h, ctx);
    gpass::exec::eigen_cpu cpu({.threads = 1});
    gpass::exec::plan<gpass::exec::eigen_cpu> p(h, cpu);
    const figures pf = time_runs(runs, [&] { (void)p.run({x}); });
    const auto& t = y[0].tensor();
    std::printf("{\"peer\": \"gpass\", \"devices\": %d, \"runs\": %d, \"first_run_us\": %.1f, \"us_median\": %.3f, \"us_min\": %.3f, "
                "\"plan_us_median\": %.3f, \"y\": [%.9g, %.9g, %.9g, %.9g]}\n",
                devices, runs, first_us, f.median, f.min, pf.median, static_cast<double>(t.data<float>()[0]),
                static_cast<double>(t.data<float>()[1]), static_cast<double>(t.data<float>()[2]),
                static_cast<double>(t.data<float>()[3]));
  } catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
}
