// SPDX-License-Identifier: Apache-2.0
// bench_cuda: latency of one ONNX model on gpass's CUDA policy, and the cuBLASLt GEMM rate.
//
//   bench_cuda MODEL.onnx [--batch=B] [--iters=K] [--warmup=W] [--optimize=PIPELINE] [--tf32]
//                         [--inputs=DIR] [--dump=DIR]
//   bench_cuda --gemm=N [--tf32] [--dtype=f32|bf16]
//   bench_cuda --kernel-set
//   bench_cuda --download=MB
//
// A model: read, the graph inputs' symbolic dims set to B, optimized (default "O3"), shapes
// inferred, then run through a session on `cuda_devices()` (GPU:0, CPU:0 for what the GPU
// has no kernel for). Inputs: DIR/input_K.bin (raw little-endian arrays in the graph's input
// order) when --inputs is given, else uniform random floats in [-1, 1) and integer zeros.
// Two timings, each the median of K runs after W warm-ups:
//   host_us   one `session::run`: host inputs in, host outputs out (the copies included);
//   device_us when every node is on the GPU, one run of a `plan<cuda>` on device-resident
//             inputs, up to the stream's synchronization (what a framework's own timing of
//             its GPU graph measures);
//   graph_us  the same plan run by a `cuda_graph_plan` (captured once, then one CUDA graph
//             launch per run, the outputs copied out), with graph_rel_diff its largest
//             difference from the plan's own outputs relative to their peak.
// Prints one JSON line; --dump=DIR writes the outputs of the last session run as
// DIR/output_K.bin. --gemm=N times C = A B with N x N x N operands on cuBLASLt instead.
// --kernel-set compiles (or reads from the disk cache) and loads every source the kernel
// families generate (`cuda_generated_sources()`) for this GPU, and prints the time: run it
// twice on one GPASS_CUDA_CACHE_DIR for the cold and the cached figures. --download=MB times
// `cuda::download` of an MB-megabyte device tensor into a new host tensor, through the pinned
// buffers and straight into pageable memory. --pageable-download runs a model's session with
// `pinned_download` off.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gpass/exec/cuda.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/onnx.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/passes/optimize.hpp>
#include <gpass/session.hpp>
#include <gpass/session/cuda_devices.hpp>

namespace {

namespace fs = std::filesystem;
namespace ex = gpass::exec;
using G = gpass::graph<>;

struct options {
  std::string model, optimize = "O3", inputs, dump, dtype = "f32";
  std::int64_t batch = 1, gemm = 0;
  int iters = 50, warmup = 10;
  bool tf32 = false;
  bool profile = false;
  bool kernel_set = false;
  bool pageable_download = false;
  double download_mb = 0;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "bench_cuda: " << why << "\n"
            << "usage: bench_cuda MODEL.onnx [--batch=B] [--iters=K] [--warmup=W] [--optimize=P] [--tf32] [--inputs=DIR] [--dump=DIR]\n"
            << "       bench_cuda --gemm=N [--tf32] [--dtype=f32|bf16]\n"
            << "       bench_cuda --kernel-set | --download=MB\n";
  std::exit(2);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t k = v.size();
  return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

template <class F>
double time_us(F&& f, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(us);
}

// The cuBLASLt rate on N x N x N: f32 (full or TF32) or bf16 with f32 accumulation.
int gemm(const options& o) {
  ex::cuda gpu({.allow_tf32 = o.tf32});
  const bool bf16 = o.dtype == "bf16";
  const gpass::dtype t = bf16 ? gpass::dtype::bf16 : gpass::dtype::f32;
  const std::int64_t n = o.gemm;
  auto& s = gpu.default_stream();
  auto a = gpu.allocate_tensor(t, {n, n}, s), b = gpu.allocate_tensor(t, {n, n}, s);
  gpu.fill_zero(a, s);
  gpu.fill_zero(b, s);
  ex::kernel_node node{.name = "gemm", .op = "MatMul", .opset = 21};
  node.input_types.resize(2);
  node.output_types.resize(1);
  const auto* def = gpu.kernels().find("", "MatMul", 21, t);
  if (!def) usage("no CUDA MatMul kernel");
  auto fn = def->make(node);
  std::vector<ex::basic_value<ex::cuda_tensor>> in{a, b}, out(1);
  std::vector<const ex::basic_value<ex::cuda_tensor>*> ins{&in[0], &in[1]};
  std::vector<char> wanted{1};
  auto run = [&] {
    ex::kernel_context<ex::cuda> ctx(node, gpu, s, ins, out, {}, nullptr, wanted, nullptr);
    fn(ctx);
  };
  run();
  gpu.synchronize(s);
  const int reps = 20;
  const double us = time_us([&] {
    for (int i = 0; i < reps; ++i) run();
    gpu.synchronize(s);
  }, 2, 5) / reps;
  std::printf("{\"gemm\": %lld, \"dtype\": \"%s\", \"tf32\": %s, \"us\": %.2f, \"tflops\": %.2f}\n", static_cast<long long>(n),
              o.dtype.c_str(), o.tf32 ? "true" : "false", us, 2.0 * n * n * n / us * 1e-6);
  return 0;
}

// `cuda::download` of an MB-megabyte tensor into a new host tensor, pinned and pageable.
int download(const options& o) {
  const auto n = static_cast<std::int64_t>(o.download_mb * (1 << 20) / 4);
  double us[2] = {0, 0};
  for (int pinned = 1; pinned >= 0; --pinned) {
    ex::cuda gpu({.pinned_download = pinned != 0});
    auto& s = gpu.default_stream();
    auto d = gpu.allocate_tensor(gpass::dtype::f32, {n}, s);
    gpu.fill_zero(d, s);
    us[pinned] = time_us([&] { (void)gpu.download(d, s); }, 3, o.iters);
  }
  const double mb = static_cast<double>(n) * 4 / 1e6;
  std::printf("{\"download_mb\": %.2f, \"pinned_us\": %.1f, \"pageable_us\": %.1f, \"pinned_gbs\": %.2f, \"pageable_gbs\": %.2f}\n",
              mb, us[1], us[0], mb / us[1] * 1e-3, mb / us[0] * 1e-3);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](const char* k) { return a.substr(std::string(k).size()); };
    try {
      if (a.rfind("--batch=", 0) == 0) o.batch = std::stoll(val("--batch="));
      else if (a.rfind("--iters=", 0) == 0) o.iters = std::stoi(val("--iters="));
      else if (a.rfind("--warmup=", 0) == 0) o.warmup = std::stoi(val("--warmup="));
      else if (a.rfind("--optimize=", 0) == 0) o.optimize = val("--optimize=");
      else if (a.rfind("--inputs=", 0) == 0) o.inputs = val("--inputs=");
      else if (a.rfind("--dump=", 0) == 0) o.dump = val("--dump=");
      else if (a.rfind("--gemm=", 0) == 0) o.gemm = std::stoll(val("--gemm="));
      else if (a.rfind("--dtype=", 0) == 0) o.dtype = val("--dtype=");
      else if (a == "--tf32") o.tf32 = true;
      else if (a == "--profile") o.profile = true;
      else if (a == "--kernel-set") o.kernel_set = true;
      else if (a == "--pageable-download") o.pageable_download = true;
      else if (a.rfind("--download=", 0) == 0) o.download_mb = std::stod(val("--download="));
      else if (!a.empty() && a[0] != '-' && o.model.empty()) o.model = a;
      else usage("unknown argument '" + a + "'");
    } catch (const std::logic_error&) {
      usage("bad value in '" + a + "'");
    }
  }
  try {
    if (o.kernel_set && ex::cuda_device_count() == 0) {
      // no GPU: NVRTC alone (machine code for sm_90, as a cold cache compiles it)
      const auto sources = ex::cuda_generated_sources();
      const auto t0 = std::chrono::steady_clock::now();
      std::size_t bytes = 0;
      for (const auto& [name, src] : sources) bytes += ex::nvrtc_compile(src, name, 90, ex::nvrtc_target::cubin).size();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("{\"kernel_set\": %zu, \"arch\": 90, \"gpu\": false, \"nvrtc_s\": %.3f, \"cubin_bytes\": %zu}\n", sources.size(), s, bytes);
      return 0;
    }
    if (o.kernel_set) {
      ex::cuda gpu;
      const auto sources = ex::cuda_generated_sources();
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& [name, src] : sources) ex::cuda_kernel_cache::instance().library(src, gpu.arch());
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto st = ex::cuda_kernel_cache::instance().stats();
      std::printf("{\"kernel_set\": %zu, \"arch\": %d, \"seconds\": %.3f, \"compiled\": %llu, \"disk_hits\": %llu, \"nvrtc_s\": %.3f, "
                  "\"load_s\": %.3f, \"cache\": \"%s\"}\n",
                  sources.size(), gpu.arch(), s, static_cast<unsigned long long>(st.compiled), static_cast<unsigned long long>(st.disk_hits),
                  st.compile_seconds, st.load_seconds, ex::cuda_kernel_cache::directory().string().c_str());
      return 0;
    }
    if (o.download_mb > 0) {
      if (ex::cuda_device_count() == 0) {
        std::cerr << "bench_cuda: no CUDA device\n";
        return 2;
      }
      return download(o);
    }
    if (o.gemm > 0) {
      if (ex::cuda_device_count() == 0) {
        std::cerr << "bench_cuda: no CUDA device\n";
        return 2;
      }
      return gemm(o);
    }
    if (o.model.empty()) usage("no model given");
    G g = gpass::read_onnx_file(o.model);
    for (auto v : g.nodes()) {
      auto& n = g[v];
      if (n.domain.empty() && n.op == "arg" && !n.attrs.count("default") && !n.outputs.empty() && n.outputs[0].is_tensor()) {
        auto& s = n.outputs[0].tensor().shape;
        if (s.has_rank())
          for (std::size_t d = 0; d < s.rank(); ++d)
            if (!s[d].is_known()) s[d] = gpass::dim::integer(o.batch);
      }
    }
    gpass::register_optimizer_passes(gpass::pass_registry<G>::global());
    const std::size_t nodes_before = g.num_nodes();
    const auto t0 = std::chrono::steady_clock::now();
    if (!o.optimize.empty() && o.optimize != "none") {
      gpass::pass_context ctx;
      ctx.set_option("nchwc-layout.enable", "false");  // (O3's channel-blocked convolutions are CPU ops)
      gpass::pass_registry<G>::global().parse(o.optimize)(g, ctx);
    }
    {
      gpass::pass_context ctx;
      gpass::infer_shapes(g, ctx);
    }
    // the inputs, in the order of the graph's arg nodes
    std::vector<std::pair<int, std::string>> args;
    std::map<std::string, gpass::type> arg_type;
    for (auto v : g.nodes()) {
      const auto& n = g[v];
      if (n.domain.empty() && n.op == "arg" && !n.attrs.count("default")) {
        args.emplace_back(static_cast<int>(gpass::get_or(n.attrs, "index", std::int64_t{0})), n.name);
        arg_type[n.name] = n.outputs.at(0);
      }
    }
    std::sort(args.begin(), args.end());
    std::vector<std::pair<std::string, ex::value>> feeds;
    std::mt19937 rng(42);
    for (std::size_t k = 0; k < args.size(); ++k) {
      const auto& name = args[k].second;
      const auto& t = arg_type[name];
      if (!t.is_tensor() || !t.tensor().shape.is_fully_known()) throw gpass::error("input '" + name + "' has no static shape");
      gpass::tensor x = gpass::tensor::uninitialized(t.tensor().element, t.tensor().shape.sizes());
      if (!o.inputs.empty()) {
        std::ifstream f(fs::path(o.inputs) / ("input_" + std::to_string(k) + ".bin"), std::ios::binary);
        if (!f.read(reinterpret_cast<char*>(x.raw()), static_cast<std::streamsize>(x.nbytes())))
          throw gpass::error("cannot read input " + std::to_string(k) + " from " + o.inputs);
      } else if (x.element_type() == gpass::dtype::f32) {
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (std::int64_t i = 0; i < x.size(); ++i) x.data<float>()[i] = u(rng);
      } else if (x.nbytes()) {
        std::memset(x.raw(), 0, x.nbytes());
      }
      feeds.emplace_back(name, std::move(x));
    }
    std::vector<std::string> fetches;
    for (auto v : g.nodes())
      if (g[v].domain.empty() && g[v].op == "return") {
        const auto names = gpass::get_or(g[v].attrs, "names", std::vector<std::string>{});
        fetches = names;
      }
    std::cerr << "bench_cuda: " << g.num_nodes() << " nodes after " << o.optimize << "; compiling the session\n";
    auto devices = gpass::cuda_devices<G>({.allow_tf32 = o.tf32, .pinned_download = !o.pageable_download});
    auto* gpu_device = dynamic_cast<gpass::policy_device<ex::cuda, G>*>(devices.front().get());
    gpass::session<G> sess(g, {.devices = devices});
    std::vector<ex::value> out;
    const auto t1 = std::chrono::steady_clock::now();
    out = sess.run(feeds, fetches);  // the first run compiles the kernels
    std::cerr << "bench_cuda: first run done\n";
    const auto t2 = std::chrono::steady_clock::now();
    std::size_t on_gpu = 0, placed = 0;
    std::map<std::string, int> cpu_ops;
    for (const auto& [node, dev] : sess.last_placement()) {
      ++placed;
      if (dev.find("GPU") != std::string::npos) ++on_gpu;
    }
    for (const auto& [node, dev] : sess.last_placement())
      if (dev.find("CPU") != std::string::npos)
        if (auto v = g.find(node)) ++cpu_ops[g[*v].op];
    const double host_us = time_us([&] { out = sess.run(feeds, fetches); }, o.warmup, o.iters);
    if (o.profile) {
      // one traced run: microseconds per op (the host's time in each kernel call: queueing
      // work, or the work itself under CUDA_LAUNCH_BLOCKING=1), the costliest first
      gpass::run_metadata md;
      out = sess.run(feeds, fetches, {}, {.trace = true}, &md);
      std::map<std::string, std::pair<double, int>> per_op;
      for (const auto& d : md.stats.devices)
        for (const auto& n : d.nodes) {
          auto& e = per_op[n.op + (d.device.find("GPU") != std::string::npos ? "@gpu" : "@cpu")];
          e.first += static_cast<double>(n.end_us - n.start_us);
          ++e.second;
        }
      std::vector<std::pair<double, std::string>> rows;
      for (const auto& [op, e] : per_op) rows.emplace_back(e.first, op + " x" + std::to_string(e.second));
      std::sort(rows.rbegin(), rows.rend());
      for (const auto& [us, what] : rows) std::cerr << "  " << us << " us  " << what << "\n";
    }
    if (!o.dump.empty()) {
      fs::create_directories(o.dump);
      for (std::size_t k = 0; k < out.size(); ++k)
        if (out[k].is_tensor()) {
          std::ofstream f(fs::path(o.dump) / ("output_" + std::to_string(k) + ".bin"), std::ios::binary);
          f.write(reinterpret_cast<const char*>(out[k].tensor().raw()), static_cast<std::streamsize>(out[k].tensor().nbytes()));
        }
    }
    // the GPU alone: a plan<cuda> on device-resident inputs, when the GPU runs every node
    double device_us = -1, graph_us = -1, graph_rel_diff = 0;
    ex::cuda_graph_statistics graph_stats;
    std::string cpu_list;
    for (const auto& [op, n] : cpu_ops)
      if (op != "arg" && op != "return") cpu_list += (cpu_list.empty() ? "" : ",") + op + ":" + std::to_string(n);
    if (cpu_list.empty() && gpu_device) {
      std::cerr << "bench_cuda: timing a plan<cuda>\n";
      ex::cuda& gpu = gpu_device->policy();  // the session's: its kernels and memory are warm
      ex::plan<ex::cuda> p(g, gpu);
      std::vector<ex::basic_value<ex::cuda_tensor>> in;
      for (auto& [name, v] : feeds) in.emplace_back(gpu.upload(v.tensor(), gpu.default_stream()));
      auto run = [&] {
        auto r = p.run(in);
        gpu.synchronize(gpu.default_stream());
      };
      device_us = time_us(run, o.warmup, o.iters);
      // the same plan as CUDA graphs: one launch per run once the signature is captured
      std::cerr << "bench_cuda: timing the plan as CUDA graphs\n";
      try {
        ex::cuda_graph_plan<G> gp(p, gpu);
        graph_us = time_us([&] { (void)gp.run(in); }, o.warmup, o.iters);
        const auto want = p.run(in), got = gp.run(in);
        for (std::size_t k = 0; k < want.size() && k < got.size(); ++k) {
          if (!want[k].is_tensor() || !got[k].is_tensor()) continue;
          const gpass::tensor a = gpu.download(want[k].tensor(), gpu.default_stream());
          const gpass::tensor b = gpu.download(got[k].tensor(), gpu.default_stream());
          if (a.element_type() != gpass::dtype::f32 || b.element_type() != gpass::dtype::f32 || a.size() != b.size()) continue;
          double peak = 0, diff = 0;
          for (std::int64_t i = 0; i < a.size(); ++i) {
            peak = std::max(peak, static_cast<double>(std::fabs(a.data<float>()[i])));
            diff = std::max(diff, static_cast<double>(std::fabs(a.data<float>()[i] - b.data<float>()[i])));
          }
          graph_rel_diff = std::max(graph_rel_diff, peak > 0 ? diff / peak : diff);
        }
        graph_stats = gp.stats();
      } catch (const std::exception& e) {
        std::cerr << "bench_cuda: CUDA graphs: " << e.what() << "\n";
        graph_us = -2;
      }
    }
    const auto stats = ex::cuda_kernel_cache::instance().stats();
    std::printf(
        "{\"model\": \"%s\", \"batch\": %lld, \"tf32\": %s, \"pinned_download\": %s, \"optimize\": \"%s\", \"nodes\": [%zu, %zu], \"on_gpu\": [%zu, %zu], "
        "\"cpu_ops\": \"%s\", \"first_run_ms\": %.1f, \"optimize_ms\": %.1f, \"host_us\": %.1f, \"device_us\": %.1f, "
        "\"graph_us\": %.1f, \"graph_captures\": %zu, \"graph_uncapturable\": %zu, \"graph_mb\": %.1f, \"graph_rel_diff\": %.3g, "
        "\"nvrtc_compiled\": %llu, \"nvrtc_disk_hits\": %llu, \"nvrtc_s\": %.3f, \"load_s\": %.3f}\n",
        fs::path(o.model).filename().string().c_str(), static_cast<long long>(o.batch), o.tf32 ? "true" : "false", o.pageable_download ? "false" : "true", o.optimize.c_str(),
        nodes_before, g.num_nodes(), on_gpu, placed, cpu_list.c_str(),
        std::chrono::duration<double, std::milli>(t2 - t1).count(), std::chrono::duration<double, std::milli>(t1 - t0).count(),
        host_us, device_us, graph_us, graph_stats.captures, graph_stats.uncapturable,
        static_cast<double>(graph_stats.graph_bytes) / (1 << 20), graph_rel_diff, static_cast<unsigned long long>(stats.compiled), static_cast<unsigned long long>(stats.disk_hits),
        stats.compile_seconds, stats.load_seconds);
  } catch (const std::exception& e) {
    std::cerr << "bench_cuda: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
