// SPDX-License-Identifier: Apache-2.0
// gpass_conformance: runs ONNX's backend test data on the Eigen CPU executor.
//
//   gpass_conformance DATA_DIR [--suite=node,simple,...] [--filter=SUBSTRING]
//                     [--expected=FILE] [--threads=N] [--optimize=PIPELINE] [--session=N] [--quiet]
//
// With --optimize (a pass pipeline, "O3"), each model is optimized before it runs: the
// optimizer's differential test (the same tests must pass, against the same references).
// With --session=N, each model also runs through a gpass::session on N CPU devices with its
// nodes spread round-robin, and its outputs must equal the plan's bit for bit.
// With --device=cuda (the binary gpass_conformance_cuda, built with the cuda component), each
// model runs through a session on the GPU with the CPU for the nodes the GPU has no kernel
// for, and its outputs are compared with the references; the summary counts the nodes
// placed on the GPU.
// Prints one line per test (pass / FAIL with max error / unsupported op / ERROR / random: a
// random op's test, whose outputs are checked for types and sizes only) and a summary per suite. With --expected, only the tests listed there (one `suite/test` per line,
// `#` comments) must pass: the exit status is 1 when any of them does not, 0 otherwise; the
// tests that pass but are not listed are printed as "newly passing" (add them to the list).
#include "runner.hpp"

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#if GPASS_CONFORMANCE_CUDA
#include <gpass/session/cuda_devices.hpp>
#endif

namespace gc = gpass_conformance;

int main(int argc, char** argv) {
  std::string data, filter, expected_file;
  std::vector<std::string> suites{"node", "pytorch-converted", "pytorch-operator", "simple"};
  std::string optimize;
  int session_devices = 0;
  int threads = 1;
  bool quiet = false;
  std::string device = "cpu";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&](const char* k) { return a.substr(std::string(k).size()); };
    if (a.rfind("--suite=", 0) == 0) {
      suites.clear();
      std::stringstream ss(val("--suite="));
      for (std::string s; std::getline(ss, s, ',');) suites.push_back(s);
    } else if (a.rfind("--filter=", 0) == 0) filter = val("--filter=");
    else if (a.rfind("--expected=", 0) == 0) expected_file = val("--expected=");
    else if (a.rfind("--threads=", 0) == 0) threads = std::stoi(val("--threads="));
    else if (a.rfind("--optimize=", 0) == 0) optimize = val("--optimize=");
    else if (a.rfind("--session=", 0) == 0) session_devices = std::stoi(val("--session="));
    else if (a.rfind("--device=", 0) == 0) device = val("--device=");
    else if (a == "--quiet") quiet = true;
    else if (!a.empty() && a[0] != '-') data = a;
    else {
      std::cerr << "gpass_conformance: unknown option '" << a << "'\n";
      return 2;
    }
  }
  if (data.empty()) {
    std::cerr << "usage: gpass_conformance DATA_DIR [--suite=a,b] [--filter=S] [--expected=FILE] [--threads=N]"
                 " [--optimize=PIPELINE] [--session=N] [--device=cpu|cuda]\n";
    return 2;
  }
  gc::device_factory devices;
  if (device == "cuda") {
#if GPASS_CONFORMANCE_CUDA
    if (gpass::exec::cuda_device_count() == 0) {
      std::cerr << "gpass_conformance: --device=cuda: no CUDA device\n";
      return 2;
    }
    devices = [] { return gpass::cuda_devices<gpass::graph<>>(); };
#else
    std::cerr << "gpass_conformance: --device=cuda needs gpass_conformance_cuda (built with the cuda component)\n";
    return 2;
#endif
  } else if (device != "cpu") {
    std::cerr << "gpass_conformance: unknown device '" << device << "' (cpu, cuda)\n";
    return 2;
  }
  std::set<std::string> expected;
  if (!expected_file.empty()) {
    std::ifstream in(expected_file);
    if (!in) {
      std::cerr << "gpass_conformance: cannot read " << expected_file << "\n";
      return 2;
    }
    for (std::string line; std::getline(in, line);) {
      line = line.substr(0, line.find('#'));
      while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
      if (!line.empty()) expected.insert(line);
    }
  }
  gpass::register_optimizer_passes(gpass::pass_registry<gpass::graph<>>::global());
  gpass::exec::eigen_cpu cpu({.threads = threads});
  int regressions = 0;
  std::vector<std::string> newly;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& suite : suites) {
    const gc::fs::path root = gc::fs::path(data) / suite;
    if (!gc::fs::is_directory(root)) {
      std::cerr << "gpass_conformance: no folder " << root << "\n";
      return 2;
    }
    std::vector<gc::fs::path> tests;
    for (const auto& d : gc::fs::directory_iterator(root))
      if (d.is_directory() && gc::fs::exists(d.path() / "model.onnx")) tests.push_back(d.path());
    std::sort(tests.begin(), tests.end());
    std::map<gc::status, int> count;
    int total = 0;
    std::size_t nodes_before = 0, nodes_after = 0, sends = 0, spread = 0, placed = 0, on_device = 0;
    for (const auto& t : tests) {
      const std::string id = suite + "/" + t.filename().string();
      if (!filter.empty() && id.find(filter) == std::string::npos) continue;
      ++total;
      auto r = gc::run_test(t, cpu, {}, optimize, session_devices, devices ? &devices : nullptr);
      placed += r.placed_nodes;
      on_device += r.first_device_nodes;
      sends += r.sends;
      spread += r.partitions > 1;
      ++count[r.st];
      nodes_before += r.nodes_before;
      nodes_after += r.nodes_after;
      const bool want = expected.count(id) > 0;
      if (want && r.st != gc::status::pass) ++regressions;
      if (!want && r.st == gc::status::pass && !expected_file.empty()) newly.push_back(id);
      if (!quiet || (want && r.st != gc::status::pass)) {
        std::cout << gc::status_name(r.st) << "  " << id;
        if (r.st == gc::status::fail) std::cout << "  max error " << r.max_abs_error;
        if (!r.message.empty()) std::cout << "  " << r.message;
        if (want && r.st != gc::status::pass) std::cout << "  [EXPECTED TO PASS]";
        std::cout << "\n";
      }
    }
    std::cout << "== " << suite << ": " << total << " tests, " << count[gc::status::pass] << " pass, "
              << count[gc::status::fail] << " fail, " << count[gc::status::unsupported] << " unsupported, "
              << count[gc::status::error] << " error, " << count[gc::status::random] << " random";
    if (!optimize.empty()) std::cout << "; optimized by " << optimize << ": " << nodes_before << " -> " << nodes_after << " nodes";
    if (session_devices > 0)
      std::cout << "; through a session on " << session_devices << " device(s): " << spread << " models ran on several devices, "
                << sends << " send/recv pairs";
    if (devices) std::cout << "; on " << device << ": " << on_device << " of " << placed << " nodes placed on the first device";
    std::cout << "\n";
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& n : newly) std::cout << "newly passing (add to the expected list): " << n << "\n";
  std::cout << "== " << secs << " s";
  if (!expected_file.empty()) std::cout << ", " << regressions << " expected test(s) not passing";
  std::cout << "\n";
  return regressions ? 1 : 0;
}
