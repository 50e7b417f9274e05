// SPDX-License-Identifier: Apache-2.0
// Graph benchmarks: topological order, dce, delete-disconnected, eliminate-identities, cse and
// fuse-elementwise on synthetic graphs of 10^3 .. 10^6 nodes, reported in ns per node
// (counter "ns/node").
//
// Each measurement runs the operation once on a fresh copy of the graph, in a process forked
// for it from a worker that holds only the synthetic graph (see size_worker); the benchmark
// library gets the time through a pipe (manual time). README.md explains why (in-process
// timings depended on the heap's history by up to 10x).

#include <benchmark/benchmark.h>

#include <gpass/graph/graph.hpp>
#include <gpass/graph/topological_order.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/passes/common/dce.hpp>
#include <gpass/passes/common/delete_disconnected.hpp>
#include <gpass/passes/common/cse.hpp>
#include <gpass/passes/common/eliminate_identities.hpp>
#include <gpass/passes/common/fuse_elementwise.hpp>

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "synthetic_graph.hpp"

namespace {

using G = gpass::graph<>;
constexpr std::uint64_t seed = 20240601;

/// The result one measurement sends back.
struct child_result {
  double seconds = 0;
  std::int64_t removed = 0;
  double nodes = 0;
  double edges = 0;
  int ok = 0;
};

enum class op_id : int { topological_order = 0, dce = 1, delete_disconnected = 2, eliminate_identities = 3, cse = 4, fuse_elementwise = 5 };

/// Runs operation `op` once on `g` and returns what it removed.
std::int64_t run_op(op_id op, G& g) {
  switch (op) {
    case op_id::topological_order: {
      auto order = gpass::topological_order(g);
      benchmark::DoNotOptimize(order.data());
      return static_cast<std::int64_t>(g.num_nodes() - order.size());  // 0
    }
    case op_id::dce: {
      gpass::pass_context ctx;
      gpass::dce(g, ctx);
      return ctx.statistics().at("dce.removed-nodes");
    }
    case op_id::delete_disconnected: {
      gpass::pass_context ctx;
      gpass::delete_disconnected(g, ctx);
      return ctx.statistics().at("delete-disconnected.removed-nodes");
    }
    case op_id::eliminate_identities: {  // the pattern-rewrite driver
      gpass::pass_context ctx;
      gpass::eliminate_identities(g, ctx);
      return ctx.statistics().at("eliminate-identities.rewrites");
    }
    case op_id::cse: {  // hashing in data-topological order
      gpass::pass_context ctx;
      gpass::cse(g, ctx);
      return ctx.statistics().at("cse.merged");
    }
    case op_id::fuse_elementwise: {  // the pattern driver growing element-wise trees
      gpass::pass_context ctx;
      gpass::fuse_elementwise(g, ctx);
      auto st = ctx.statistics();
      auto it = st.find("fuse-elementwise.elementwise-group");
      return it == st.end() ? 0 : it->second;
    }
  }
  return -1;
}

/// Untimed preparation of the copy for `op`: for eliminate-identities, the `Relu` and
/// `Sigmoid` nodes (about a quarter of the live ones) become single-input `Identity` nodes.
void prepare(op_id op, G& g) {
  if (op == op_id::fuse_elementwise) {
    // typed as f32[8] everywhere; Add/Mul/Sub keep two inputs, Relu/Sigmoid one (a binary
    // op with one input becomes a Relu): about half of the nodes can be fused
    const gpass::type t(gpass::tensor_type{gpass::dtype::f32, gpass::shape{gpass::dim(8)}});
    for (auto v : g.nodes()) {
      auto& n = g[v];
      if (n.op == "return") continue;
      for (auto& o : n.outputs) o = t;
      const int arity = gpass::fused_op_arity(n.op);
      if (arity == 0) continue;
      if (g.num_inputs(v) < static_cast<std::size_t>(arity)) n.op = "Relu";
      const std::size_t keep = static_cast<std::size_t>(gpass::fused_op_arity(n.op));
      if (g.num_inputs(v) > keep) {
        std::vector<int> extra;
        for (std::size_t i = keep; i < g.num_inputs(v); ++i) extra.push_back(static_cast<int>(i));
        g.erase_inputs(v, extra);
      }
    }
    return;
  }
  if (op != op_id::eliminate_identities) return;
  for (auto v : g.nodes())
    if (g[v].op == "Relu" || g[v].op == "Sigmoid") {
      g[v].op = "Identity";
      if (g.num_inputs(v) > 1) g.erase_inputs(v, [&] {
          std::vector<int> extra;
          for (std::size_t i = 1; i < g.num_inputs(v); ++i) extra.push_back(static_cast<int>(i));
          return extra;
        }());
    }
}

/// CPU time of the calling thread (user + system, page faults included). The machine is
/// shared, so wall-clock time would also count the time other processes held the CPU.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

bool read_all(int fd, void* p, std::size_t n) {
  auto* c = static_cast<char*>(p);
  while (n) {
    ssize_t r = read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}
bool write_all(int fd, const void* p, std::size_t n) {
  auto* c = static_cast<const char*>(p);
  while (n) {
    ssize_t r = write(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

/// A process that holds the synthetic graph of one size and nothing else. For each request
/// it forks a child that copies the graph (copy constructor, untimed; with
/// GPASS_BENCH_LAYOUT=built it builds the graph again instead, which leaves the nodes spread
/// in memory as an importer would), takes back the small
/// blocks the copy freed (untimed, see drain_small_free_chunks), runs the operation once
/// (timed: thread CPU time) and sends the result. Every measurement thus starts from the same heap and the
/// same graph layout, whatever the benchmark process or earlier measurements allocated and
/// freed, and no child writes to memory shared with a parent that has freed a lot (which
/// would charge the timed part with copy-on-write faults).
class size_worker {
 public:
  explicit size_worker(std::size_t n) : n_(n) {
    int req[2], res[2];
    if (pipe(req) != 0 || pipe(res) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(req[1]);
      close(res[0]);
      serve(req[0], res[1]);
    }
    close(req[0]);
    close(res[1]);
    req_ = req[1];
    res_ = res[0];
  }
  ~size_worker() {
    if (req_ >= 0) close(req_);
    if (res_ >= 0) close(res_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  size_worker(const size_worker&) = delete;
  size_worker& operator=(const size_worker&) = delete;
  std::size_t size() const { return n_; }

  bool measure(op_id op, child_result& out) {
    int o = static_cast<int>(op);
    return pid_ > 0 && write_all(req_, &o, sizeof o) && read_all(res_, &out, sizeof out) && out.ok;
  }

 private:
  [[noreturn]] void serve(int req, int res) {
    G base = gpass_bench::make_synthetic_graph<G>(n_, seed);
    (void)gpass::op_registry::global();  // built once, as in a real program, not in the timed part
    const char* layout = std::getenv("GPASS_BENCH_LAYOUT");
    const bool built_layout = layout && std::string(layout) == "built";
    int o = 0;
    while (read_all(req, &o, sizeof o)) {
      pid_t c = fork();
      if (c == 0) {
        child_result r;
        // never destroyed: the OS takes the memory back at _exit
        G* copy = built_layout ? new G(gpass_bench::make_synthetic_graph<G>(n_, seed)) : new G(base);
        prepare(static_cast<op_id>(o), *copy);
        gpass_bench::drain_small_free_chunks(base.num_nodes() + 64);
        const double t0 = cpu_seconds();
        r.removed = run_op(static_cast<op_id>(o), *copy);
        r.seconds = cpu_seconds() - t0;
        r.nodes = static_cast<double>(base.num_nodes());
        r.edges = static_cast<double>(base.num_edges());
        r.ok = 1;
        write_all(res, &r, sizeof r);
        _exit(0);
      }
      int status = 0;
      if (c < 0 || waitpid(c, &status, 0) != c || !WIFEXITED(status)) {
        child_result fail;
        write_all(res, &fail, sizeof fail);
      }
    }
    _exit(0);
  }

  std::size_t n_;
  pid_t pid_ = -1;
  int req_ = -1, res_ = -1;
};

/// The worker of the current size (one at a time, so that forks stay cheap).
size_worker& worker(std::size_t n) {
  static std::unique_ptr<size_worker> w;
  if (!w || w->size() != n) {
    w.reset();
    w = std::make_unique<size_worker>(n);
  }
  return *w;
}

void bench(benchmark::State& state, op_id op) {
  size_worker& w = worker(static_cast<std::size_t>(state.range(0)));
  child_result r;
  for (auto _ : state) {
    if (!w.measure(op, r)) {
      state.SkipWithError("measurement process failed");
      break;
    }
    state.SetIterationTime(r.seconds);
  }
  // seconds per node; the table script prints it in ns
  state.counters["ns/node"] =
      benchmark::Counter(r.nodes, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["nodes"] = r.nodes;
  state.counters["edges"] = r.edges;
  state.counters["removed"] = static_cast<double>(r.removed);
}

void bm_topological_order(benchmark::State& state) { bench(state, op_id::topological_order); }
void bm_dce(benchmark::State& state) { bench(state, op_id::dce); }
void bm_delete_disconnected(benchmark::State& state) { bench(state, op_id::delete_disconnected); }
void bm_eliminate_identities(benchmark::State& state) { bench(state, op_id::eliminate_identities); }
void bm_cse(benchmark::State& state) { bench(state, op_id::cse); }
void bm_fuse_elementwise(benchmark::State& state) { bench(state, op_id::fuse_elementwise); }

// A fork and a copy per iteration cost far more than the timed operation, so the iteration
// counts are fixed (about 10^6 nodes processed per size, at least 5 runs; scaled by
// GPASS_BENCH_ITER_SCALE) instead of letting the library grow them until the timed part
// reaches its minimum time. Registered size by size, so that each size's graph is built once.
void register_all() {
  for (std::int64_t n : {1000, 10000, 100000, 1000000}) {
    std::int64_t iters = std::max<std::int64_t>(5, 1000000 / n);
    if (const char* s = std::getenv("GPASS_BENCH_ITER_SCALE"))
      iters = std::max<std::int64_t>(1, static_cast<std::int64_t>(static_cast<double>(iters) * std::atof(s)));
    for (auto [name, f] : {std::pair{"bm_topological_order", &bm_topological_order}, std::pair{"bm_dce", &bm_dce},
                           std::pair{"bm_delete_disconnected", &bm_delete_disconnected},
                           std::pair{"bm_eliminate_identities", &bm_eliminate_identities}, std::pair{"bm_cse", &bm_cse},
                           std::pair{"bm_fuse_elementwise", &bm_fuse_elementwise}})
      benchmark::RegisterBenchmark(name, f)->Arg(n)->Iterations(iters)->Unit(benchmark::kMicrosecond)->UseManualTime();
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

