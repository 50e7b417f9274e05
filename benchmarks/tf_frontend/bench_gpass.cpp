// SPDX-License-Identifier: Apache-2.0
// gpass's TensorFlow import + frontend, timed (the numbers put next to tf2onnx's conversion in
// benchmarks/tf_frontend/README.md).
//
//   gpass_bench_tf_frontend fixtures <tests/data/tf> [reps=20]
//       For every fixture: read graph.pb, bind its signature (fixture.txt's feeds, fetches,
//       targets) -- or read its SavedModel (variables included, signature bound) --, run
//       `gpass::tf_frontend`; prints one JSON object per line: fixture, ok,
//       error (first line), nodes in / out (main graph + functions), ms (median of reps, the
//       whole conversion: file read included) and the import alone.
//   gpass_bench_tf_frontend latency <graph.pb> <input.pb> <feed> <fetch> [reps=20] [O0|O1|O2|O3] [threads=1]
//       A frozen CNN run on the CPU executor (cnn_latency.py compares it with TF).
//   gpass_bench_tf_frontend ops
//       The TensorFlow ops gpass converts (see run_ops), as JSON, for op_coverage.py.
//   gpass_bench_tf_frontend large <graph.pb> [reps=3]
//       A large GraphDef (make_large.py): import and frontend times separately, ns per
//       imported node (best of reps), nodes in / out, functions made.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/ops/registry.hpp>
#include <gpass/io/saved_model.hpp>
#include <gpass/io/tensorflow.hpp>
#include <gpass/io/tf_signature.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/pass/registry.hpp>
#include <gpass/passes/optimize.hpp>
#include <gpass/passes/tf.hpp>

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::size_t count_nodes(const gpass::graph<>& g) {
  std::size_t n = 0;
  for (const auto* h : gpass::all_graphs(g)) n += h->num_nodes();
  return n;
}

/// A fixture's signature; for a SavedModel fixture (`saved_model DIR SIGNATURE`), its folder
/// and signature key instead.
struct fixture_signature {
  gpass::tf_signature tf;
  std::string saved_model, signature;
};

fixture_signature read_signature(const std::filesystem::path& dir) {
  fixture_signature s;
  std::ifstream in(dir / "fixture.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string kind, a, b;
    l >> kind >> a >> b;
    if (kind == "feed") s.tf.feeds.push_back(a);
    else if (kind == "fetch") s.tf.fetches.push_back(a);
    else if (kind == "target") s.tf.targets.push_back(a);
    else if (kind == "saved_model") s.saved_model = a, s.signature = b;
  }
  return s;
}

std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (c == '\n') break;  // first line only
    r += c;
  }
  return r + "\"";
}

int run_fixtures(const std::filesystem::path& root, int reps) {
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(root))
    if (e.is_directory() && std::filesystem::exists(e.path() / "fixture.txt")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    const auto sig = read_signature(dir);
    std::vector<double> total, import;
    std::size_t in_nodes = 0, out_nodes = 0;
    std::string err;
    for (int r = 0; r < reps && err.empty(); ++r) {
      try {
        const auto t0 = clock_type::now();
        auto g = sig.saved_model.empty()
                     ? gpass::read_tf_graph_file(dir / "graph.pb")
                     : gpass::read_tf_saved_model(dir / sig.saved_model, {.signature = sig.signature});
        import.push_back(ms_since(t0));
        in_nodes = count_nodes(g);
        if (sig.saved_model.empty()) gpass::bind_tf_signature(g, sig.tf);
        gpass::pass_context ctx;
        gpass::tf_frontend(g, ctx);
        total.push_back(ms_since(t0));
        out_nodes = count_nodes(g);
      } catch (const std::exception& e) {
        err = e.what();
      }
    }
    std::printf("{\"fixture\": %s, \"ok\": %s, \"error\": %s, \"nodes_in\": %zu, \"nodes_out\": %zu, "
                "\"ms_median\": %.3f, \"import_ms_median\": %.3f, \"reps\": %zu}\n",
                json_string(dir.filename().string()).c_str(), err.empty() ? "true" : "false", json_string(err).c_str(),
                in_nodes, out_nodes, total.empty() ? 0.0 : median(total), import.empty() ? 0.0 : median(import),
                total.size());
  }
  return 0;
}

/// The TensorFlow ops gpass converts: those with an op schema (domain `tf`) and an Eigen CPU
/// kernel, and those the tf-frontend passes lower into other ops (control flow, variables,
/// TensorArrays, TensorLists, calls). One JSON object: {"runnable": [...], "lowered": [...],
/// "schema_only": [...]}.
int run_ops() {
  // what the frontend's passes rewrite (functionalize-loops/conds, lower-functional-ops,
  // variables-to-globals, lower-tensor-arrays), as their documentation lists them
  const std::vector<std::string> lowered = {
      "Enter", "RefEnter", "Exit", "RefExit", "Merge", "RefMerge", "Switch", "RefSwitch", "NextIteration",
      "RefNextIteration", "LoopCond", "While", "StatelessWhile", "If", "StatelessIf", "Case", "StatelessCase",
      "PartitionedCall", "StatefulPartitionedCall", "VariableV2", "Variable", "VarHandleOp", "ReadVariableOp",
      "Assign", "AssignAdd", "AssignSub", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
      "VarIsInitializedOp", "IsVariableInitialized", "ApplyGradientDescent", "ResourceApplyGradientDescent",
      "ApplyMomentum", "ResourceApplyMomentum", "ApplyAdam", "ResourceApplyAdam", "ApplyAdagrad",
      "ResourceApplyAdagrad", "ApplyAdagradV2", "ResourceApplyAdagradV2", "ApplyRMSProp", "ResourceApplyRMSProp",
      "TensorArrayV3", "TensorArrayWriteV3", "TensorArrayReadV3", "TensorArrayGatherV3", "TensorArrayScatterV3",
      "TensorArrayConcatV3", "TensorArraySplitV3", "TensorArraySizeV3", "TensorArrayCloseV3", "TensorListReserve",
      "EmptyTensorList", "TensorListFromTensor", "TensorListGetItem", "TensorListSetItem", "TensorListStack",
      "TensorListGather", "TensorListScatter", "TensorListScatterV2", "TensorListScatterIntoExistingList",
      "TensorListLength", "TensorListPushBack", "TensorListPopBack", "TensorListConcat", "TensorListConcatV2",
      "TensorListSplit"};
  const auto& kernels = gpass::exec::eigen_cpu({.threads = 1}).kernels();
  std::vector<std::string> runnable, schema_only;
  for (const auto* s : gpass::op_registry::global().all()) {
    if (s->domain != "tf") continue;
    (kernels.has("tf", s->name) ? runnable : schema_only).push_back(s->name);
  }
  for (auto* v : {&runnable, &schema_only}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string r = "[";
    for (std::size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + json_string(v[i]);
    return r + "]";
  };
  std::printf("{\"runnable\": %s, \"lowered\": %s, \"schema_only\": %s}\n", list(runnable).c_str(), list(lowered).c_str(),
              list(schema_only).c_str());
  return 0;
}

/// Latency of a frozen GraphDef on the Eigen CPU executor: `feed` (a tensor name) gets the
/// TensorProto in `input`, `fetch` is fetched; tf-frontend, then the optimizer level `level`
/// (`O1`..`O3`; none when empty or `O0`); `threads` executor threads; prints one JSON object: the
/// median and the best of `reps` runs after 3 warm-up runs.
int run_latency(const std::filesystem::path& graph, const std::filesystem::path& input, const std::string& feed,
                const std::string& fetch, int reps, const std::string& level, int threads) {
  const bool opt = !level.empty() && level != "O0";
  auto g = gpass::read_tf_graph_file(graph);
  gpass::bind_tf_signature(g, {.feeds = {feed}, .fetches = {fetch}});
  gpass::pass_context ctx;
  gpass::tf_frontend(g, ctx);
  if (opt) {
    auto& reg = gpass::pass_registry<gpass::graph<>>::global();
    gpass::register_optimizer_passes(reg);
    gpass::pass_context octx;
    reg.parse(level)(g, octx);
  }
  gpass::exec::eigen_cpu cpu({.threads = threads});
  gpass::exec::plan p(g, cpu);
  const std::vector<gpass::exec::value> in{gpass::read_tf_tensor_file(input)};
  for (int i = 0; i < 3; ++i) (void)p.run(in);
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = clock_type::now();
    (void)p.run(in);
    ms.push_back(ms_since(t0));
  }
  std::printf("{\"graph\": %s, \"level\": %s, \"threads\": %d, \"ms_median\": %.3f, \"ms_min\": %.3f, \"reps\": %d}\n",
              json_string(graph.string()).c_str(), json_string(opt ? level : "O0").c_str(), threads, median(ms),
              *std::min_element(ms.begin(), ms.end()), reps);
  return 0;
}

int run_large(const std::filesystem::path& file, int reps) {
  double best_import = 1e300, best_frontend = 1e300;
  std::size_t in_nodes = 0, out_nodes = 0, functions = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = clock_type::now();
    auto g = gpass::read_tf_graph_file(file);
    best_import = std::min(best_import, ms_since(t0));
    in_nodes = g.num_nodes();
    gpass::pass_context ctx;
    t0 = clock_type::now();
    gpass::tf_frontend(g, ctx);
    best_frontend = std::min(best_frontend, ms_since(t0));
    out_nodes = count_nodes(g);
    functions = g.functions().size();
  }
  std::printf("{\"file\": %s, \"nodes_in\": %zu, \"nodes_out\": %zu, \"functions\": %zu, \"import_ms\": %.1f, "
              "\"frontend_ms\": %.1f, \"import_ns_per_node\": %.0f, \"frontend_ns_per_node\": %.0f, "
              "\"total_ns_per_node\": %.0f}\n",
              json_string(file.string()).c_str(), in_nodes, out_nodes, functions, best_import, best_frontend,
              best_import * 1e6 / static_cast<double>(in_nodes), best_frontend * 1e6 / static_cast<double>(in_nodes),
              (best_import + best_frontend) * 1e6 / static_cast<double>(in_nodes));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "ops") return run_ops();
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s fixtures <tests/data/tf> [reps] | large <graph.pb> [reps] | ops\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  try {
    if (mode == "fixtures") return run_fixtures(argv[2], argc > 3 ? std::stoi(argv[3]) : 20);
    if (mode == "large") return run_large(argv[2], argc > 3 ? std::stoi(argv[3]) : 3);
    if (mode == "latency" && argc >= 6)
      return run_latency(argv[2], argv[3], argv[4], argv[5], argc > 6 ? std::stoi(argv[6]) : 20,
                         argc > 7 ? std::string(argv[7]) : std::string(), argc > 8 ? std::stoi(argv[8]) : 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
