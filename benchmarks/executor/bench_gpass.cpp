// SPDX-License-Identifier: Apache-2.0
// bench_gpass: latency of one ONNX model on gpass's Eigen CPU executor.
//
//   bench_gpass MODEL.onnx [--threads=N] [--batch=B] [--iters=K] [--warmup=W] [--dump=DIR]
//
// Loads the model (gpass::read_onnx_file), gives every graph input without a default (inputs
// with one, i.e. initializers listed as inputs, keep it and are not fed) the
// sizes of its declared type with each dim that is not a known integer (the symbolic batch
// 'N', or '?') replaced by B, runs infer-shapes, builds a gpass::exec::plan<eigen_cpu> with
// eigen_cpu({.threads = N}), feeds uniform random inputs in [-1, 1) (seed fixed), runs W
// warm-up runs and then K timed runs, and prints one JSON line:
//
//   {"model": ..., "batch": B, "threads": N, "iters": K, "median_us": ..., "min_us": ...,
//    "planned_peak_bytes": ..., "naive_bytes": ..., "planned_buffers": ..., "dynamic_buffers": ...,
//    "steps": ..., "constant_bytes": ...}
//
// One timed run is one `plan::run` call (inputs already in memory, outputs returned).
// --dump=DIR writes the inputs and outputs of the last run as raw little-endian arrays
// (DIR/input_K.bin, DIR/output_K.bin) plus DIR/shapes.txt (one line per array: input|output,
// K, name, element type, sizes), so that run.sh can check the
// results against ONNX Runtime on the same inputs.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/onnx.hpp>
#include <gpass/passes/common/infer_shapes.hpp>

namespace {

struct options {
  std::string model;
  int threads = 1;
  std::int64_t batch = 1;
  int iters = 100;
  int warmup = -1;  // default: max(3, iters / 10)
  std::string dump;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "bench_gpass: " << why << "\n"
            << "usage: bench_gpass MODEL.onnx [--threads=N] [--batch=B] [--iters=K] [--warmup=W] [--dump=DIR]\n";
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](const std::string& k) -> std::string {
      return a.rfind(k, 0) == 0 ? a.substr(k.size()) : std::string();
    };
    try {
      if (a.rfind("--threads=", 0) == 0) o.threads = std::stoi(val("--threads="));
      else if (a.rfind("--batch=", 0) == 0) o.batch = std::stoll(val("--batch="));
      else if (a.rfind("--iters=", 0) == 0) o.iters = std::stoi(val("--iters="));
      else if (a.rfind("--warmup=", 0) == 0) o.warmup = std::stoi(val("--warmup="));
      else if (a.rfind("--dump=", 0) == 0) o.dump = val("--dump=");
      else if (!a.empty() && a[0] != '-' && o.model.empty()) o.model = a;
      else usage("unknown argument '" + a + "'");
    } catch (const std::logic_error&) {
      usage("bad value in '" + a + "'");
    }
  }
  if (o.model.empty()) usage("no model given");
  if (o.threads < 1 || o.batch < 1 || o.iters < 1) usage("threads, batch and iters must be >= 1");
  if (o.warmup < 0) o.warmup = std::max(3, o.iters / 10);
  return o;
}

// The declared type of graph input `a` with every dim that is not a known integer set to `batch`.
gpass::type with_batch(const gpass::type& t, std::int64_t batch) {
  if (!t.is_tensor() || !t.tensor().shape.has_rank()) return t;
  gpass::type r = t;
  auto& s = r.tensor().shape;
  for (std::size_t d = 0; d < s.rank(); ++d)
    if (!s[d].is_known()) s[d] = gpass::dim::integer(batch);
  return r;
}

gpass::tensor random_tensor(const gpass::type& t, std::mt19937& rng, const std::string& name) {
  if (!t.is_tensor() || !t.tensor().shape.is_fully_known())
    throw std::runtime_error("input '" + name + "' has no static shape: " + t.to_string());
  const auto& tt = t.tensor();
  gpass::tensor x = gpass::tensor::uninitialized(tt.element, tt.shape.sizes());
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const std::int64_t n = x.size();
  switch (tt.element) {
    case gpass::dtype::f32:
      for (std::int64_t i = 0; i < n; ++i) x.data<float>()[i] = static_cast<float>(u(rng));
      break;
    case gpass::dtype::f64:
      for (std::int64_t i = 0; i < n; ++i) x.data<double>()[i] = u(rng);
      break;
    default:
      if (x.nbytes()) std::memset(x.raw(), 0, x.nbytes());
  }
  return x;
}

void write_raw(const std::filesystem::path& p, const gpass::tensor& t) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
}

std::string json_string(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  try {
    auto g = gpass::read_onnx_file(o.model);
    // fix the symbolic dims of the graph inputs (the `arg` nodes' declared types)
    for (auto v : g.nodes()) {
      auto& n = g[v];
      if (n.domain.empty() && n.op == "arg" && !n.attrs.count("default") && !n.outputs.empty())
        n.outputs[0] = with_batch(n.outputs[0], o.batch);
    }
    gpass::pass_context ctx;
    gpass::infer_shapes(g, ctx);

    // bytes of the Constant nodes' values (initializers): reported apart, the plan does not
    // place them (the Constant kernel hands out its attribute without a copy)
    std::size_t constant_bytes = 0;
    for (auto v : g.nodes()) {
      const auto& n = g[v];
      if (n.domain.empty() && n.op == "Constant" && !n.outputs.empty() && n.outputs[0].is_tensor()) {
        const auto& tt = n.outputs[0].tensor();
        if (tt.shape.is_fully_known() && tt.element != gpass::dtype::string)
          constant_bytes += static_cast<std::size_t>(gpass::num_elements(tt.shape.sizes())) * gpass::size_of(tt.element);
      }
    }

    gpass::exec::eigen_cpu cpu({.threads = o.threads});
    gpass::exec::plan<gpass::exec::eigen_cpu> p(g, cpu);
    const auto& st = p.stats();

    // random values for the inputs without a default; the others (initializers listed as
    // graph inputs, as in IR < 4 models) keep their default
    std::set<std::string> has_default;
    for (auto v : g.nodes())
      if (g[v].domain.empty() && g[v].op == "arg" && g[v].attrs.count("default")) has_default.insert(g[v].name);
    std::mt19937 rng(42);
    std::vector<gpass::exec::value> inputs;
    std::vector<std::size_t> fed;
    for (std::size_t i = 0; i < p.input_names().size(); ++i) {
      if (has_default.count(p.input_names()[i])) {
        inputs.emplace_back();
        continue;
      }
      inputs.emplace_back(random_tensor(p.input_types()[i], rng, p.input_names()[i]));
      fed.push_back(i);
    }

    std::vector<gpass::exec::value> out;
    for (int i = 0; i < o.warmup; ++i) out = p.run(inputs);
    std::vector<double> us(static_cast<std::size_t>(o.iters));
    for (int i = 0; i < o.iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      out = p.run(inputs);
      const auto t1 = std::chrono::steady_clock::now();
      us[static_cast<std::size_t>(i)] = std::chrono::duration<double, std::micro>(t1 - t0).count();
    }
    std::vector<double> sorted = us;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t k = sorted.size();
    const double median = k % 2 ? sorted[k / 2] : 0.5 * (sorted[k / 2 - 1] + sorted[k / 2]);

    if (!o.dump.empty()) {
      namespace fs = std::filesystem;
      fs::create_directories(o.dump);
      std::ofstream shapes(fs::path(o.dump) / "shapes.txt");
      auto line = [&](const char* what, std::size_t i, const std::string& name, const gpass::tensor& t) {
        shapes << what << " " << i << " " << name << " " << gpass::to_string(t.element_type());
        for (auto s : t.sizes()) shapes << " " << s;
        shapes << "\n";
      };
      for (std::size_t i : fed) {
        write_raw(fs::path(o.dump) / ("input_" + std::to_string(i) + ".bin"), inputs[i].tensor());
        line("input", i, p.input_names()[i], inputs[i].tensor());
      }
      for (std::size_t i = 0; i < out.size(); ++i)
        if (out[i].is_tensor()) {
          write_raw(fs::path(o.dump) / ("output_" + std::to_string(i) + ".bin"), out[i].tensor());
          line("output", i, p.output_names()[i], out[i].tensor());
        }
    }

    std::printf(
        "{\"model\": %s, \"batch\": %lld, \"threads\": %d, \"iters\": %d, \"median_us\": %.2f, \"min_us\": %.2f, "
        "\"planned_peak_bytes\": %zu, \"naive_bytes\": %zu, \"planned_buffers\": %zu, \"dynamic_buffers\": %zu, "
        "\"steps\": %zu, \"constant_bytes\": %zu}\n",
        json_string(std::filesystem::path(o.model).parent_path().filename().string() + "/" +
                    std::filesystem::path(o.model).filename().string())
            .c_str(),
        static_cast<long long>(o.batch), o.threads, o.iters, median, sorted.front(), st.planned_peak_bytes,
        st.naive_bytes, st.planned_buffers, st.dynamic_buffers, st.steps, constant_bytes);
  } catch (const std::exception& e) {
    std::printf("{\"model\": %s, \"error\": %s}\n", json_string(o.model).c_str(), json_string(e.what()).c_str());
    std::fflush(stdout);
    std::cerr << "bench_gpass: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
