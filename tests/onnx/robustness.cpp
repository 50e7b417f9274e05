// SPDX-License-Identifier: Apache-2.0
// Bad input never crashes: corrupted backend models are either imported or refused with a
// gpass::error, and what imports also exports (or is refused with a gpass::error).

#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <gpass/io/onnx.hpp>

#include "onnx_test_support.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_onnx_robustness {

TEST_CASE("onnx.import.corrupted_models") {
  const auto models = onnx_test::backend_models();
  if (models.empty()) {
    MESSAGE("no ONNX backend test data (install libonnx-testdata)");
    return;
  }
  std::mt19937_64 rng(20240611);  // fixed seed: the same mutations on every run
  std::size_t parsed = 0, imported = 0, refused = 0, exported = 0;
  std::vector<std::string> failures;
  for (const auto& path : models) {
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.empty()) continue;
    for (int round = 0; round < 4; ++round) {
      std::string b = bytes;
      const auto flips = 1 + rng() % 3;
      for (std::uint64_t k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<char>(rng() & 0xff);
      if (round == 3) b.resize(rng() % b.size());  // truncated
      onnx::ModelProto m;
      if (!m.ParseFromString(b)) continue;
      ++parsed;
      gpass::graph<> g;
      try {
        g = gpass::import_onnx(m);
        ++imported;
      } catch (const gpass::error&) {
        ++refused;
        continue;
      } catch (const std::exception& e) {
        failures.push_back(path.string() + " round " + std::to_string(round) + ": import threw a non-gpass error: " +
                           e.what());
        continue;
      }
      try {
        (void)gpass::export_onnx(g);
        ++exported;
      } catch (const gpass::error&) {
      } catch (const std::exception& e) {
        failures.push_back(path.string() + " round " + std::to_string(round) + ": export threw a non-gpass error: " +
                           e.what());
      }
    }
  }
  std::cout << "onnx.import.corrupted_models: " << parsed << " corrupted models parse, " << imported << " import, "
            << refused << " refused, " << exported << " export\n";
  for (const auto& f : failures) std::cout << "  FAIL " << f << '\n';
  CHECK(failures.empty());
  CHECK(parsed > 1000);  // the mutations do reach the importer
  CHECK(refused > 0);
}

TEST_CASE("onnx.import.mutated_models") {
  // structural mutations: rewired inputs, duplicated outputs, removed nodes, resized tensors,
  // retyped attributes; the importer must refuse them cleanly or import a graph that exports
  const auto models = onnx_test::backend_models();
  if (models.empty()) return;
  std::mt19937_64 rng(7);
  std::size_t imported = 0, refused = 0, exported = 0;
  std::vector<std::string> failures;
  for (const auto& path : models) {
    onnx::ModelProto original;
    {
      std::ifstream in(path, std::ios::binary);
      if (!original.ParseFromIstream(&in)) continue;
    }
    for (int round = 0; round < 3; ++round) {
      onnx::ModelProto m = original;
      // mutate the main graph or the first subgraph
      onnx::GraphProto* g = m.mutable_graph();
      for (auto& n : *g->mutable_node())
        for (auto& a : *n.mutable_attribute())
          if (a.has_g() && rng() % 2) g = a.mutable_g();
      if (g->node_size() == 0) continue;
      auto& n = *g->mutable_node(static_cast<int>(rng() % static_cast<std::uint64_t>(g->node_size())));
      switch (rng() % 6) {
        case 0:
          if (n.input_size()) n.set_input(static_cast<int>(rng() % n.input_size()), rng() % 2 ? "no_such_value" : "");
          break;
        case 1:
          if (n.output_size() && g->input_size()) n.set_output(0, g->input(0).name());
          break;
        case 2: g->mutable_node()->DeleteSubrange(static_cast<int>(rng() % g->node_size()), 1); break;
        case 3:
          for (auto& t : *g->mutable_initializer()) t.add_dims(3);
          for (auto& a : *n.mutable_attribute())
            if (a.has_t()) a.mutable_t()->add_dims(2);
          break;
        case 4:
          for (auto& a : *n.mutable_attribute()) a.set_type(static_cast<onnx::AttributeProto::AttributeType>(rng() % 15));
          break;
        case 5:
          if (n.output_size()) n.add_input(n.output(0));  // a self loop
          break;
      }
      gpass::graph<> gg;
      try {
        gg = gpass::import_onnx(m);
        ++imported;
      } catch (const gpass::error&) {
        ++refused;
        continue;
      } catch (const std::exception& e) {
        failures.push_back(path.string() + ": import threw a non-gpass error: " + e.what());
        continue;
      }
      try {
        (void)gpass::export_onnx(gg);
        ++exported;
      } catch (const gpass::error&) {
      } catch (const std::exception& e) {
        failures.push_back(path.string() + ": export threw a non-gpass error: " + e.what());
      }
    }
  }
  std::cout << "onnx.import.mutated_models: " << imported << " import, " << refused << " refused, " << exported
            << " export\n";
  for (const auto& f : failures) std::cout << "  FAIL " << f << '\n';
  CHECK(failures.empty());
  CHECK(refused > 500);
}

}  // namespace gpass_test_onnx_robustness
