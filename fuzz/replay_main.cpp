// SPDX-License-Identifier: Apache-2.0
// The replay driver: runs a fuzz target over files and folders of inputs (the committed
// corpora and regression inputs), without a fuzzer and without sanitizers. Any crash,
// uncaught exception or broken property aborts; the CTest tests fuzz.replay.<target> use it.
//   gpass_fuzz_replay TARGET PATH...
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "harness.hpp"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc < 3) {
    std::cerr << "usage: gpass_fuzz_replay TARGET PATH...\ntargets:";
    for (const auto& [name, f] : gpass_fuzz::targets()) std::cerr << ' ' << name;
    std::cerr << '\n';
    return 2;
  }
  auto it = gpass_fuzz::targets().find(argv[1]);
  if (it == gpass_fuzz::targets().end()) {
    std::cerr << "gpass_fuzz_replay: no target '" << argv[1] << "'\n";
    return 2;
  }
  std::vector<fs::path> files;
  for (int i = 2; i < argc; ++i) {
    const fs::path p = argv[i];
    if (fs::is_directory(p)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(p)) {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::cerr << "replay " << f.string() << '\n';
    it->second(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "gpass_fuzz_replay " << argv[1] << ": " << files.size() << " inputs replayed in " << s << " s, no finding\n";
  return files.empty() ? 1 : 0;
}
