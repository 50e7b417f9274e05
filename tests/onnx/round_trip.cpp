// SPDX-License-Identifier: Apache-2.0
// Round trip over ONNX's backend test models: import, export, check, re-import, compare.

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <google/protobuf/util/message_differencer.h>

#include <gpass/io/onnx.hpp>
#include <gpass/io/text.hpp>

#include "onnx_test_support.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_onnx_round_trip {

namespace {

// ONNX's "full check": the checker, then strict shape inference with type checking.
void full_check(const onnx::ModelProto& m) {
  onnx::checker::check_model(m);
  onnx::ModelProto copy = m;
  onnx::ShapeInferenceOptions o(/*check_type=*/true, /*strict_mode=*/1, /*data_prop=*/false);
  onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), o);
}

bool passes_full_check(const onnx::ModelProto& m) {
  try {
    full_check(m);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// What import -> export may change, undone: node names, attribute order, tensor encodings
// (typed fields -> raw_data), names of tensors inside attributes, value_info order, an
// explicit empty domain, empty doc strings.
void normalize_tensor(onnx::TensorProto& t, bool keep_name) {
  std::string name = t.name();
  gpass::tensor x = gpass::detail::onnx_io::tensor_from_onnx(t);
  t.Clear();
  gpass::detail::onnx_io::tensor_to_onnx(x, t);
  if (keep_name) t.set_name(name);
}
void normalize_graph(onnx::GraphProto& g) {
  for (auto& t : *g.mutable_initializer()) normalize_tensor(t, true);
  for (auto& n : *g.mutable_node()) {
    n.clear_name();
    if (n.domain().empty() || n.domain() == "ai.onnx") n.clear_domain();
    if (n.doc_string().empty()) n.clear_doc_string();
    auto* attrs = n.mutable_attribute();
    std::stable_sort(attrs->begin(), attrs->end(), [](const auto& a, const auto& b) { return a.name() < b.name(); });
    for (auto& a : *attrs) {
      if (a.has_t()) normalize_tensor(*a.mutable_t(), false);
      for (auto& t : *a.mutable_tensors()) normalize_tensor(t, false);
      if (a.has_g()) normalize_graph(*a.mutable_g());
      for (auto& sub : *a.mutable_graphs()) normalize_graph(sub);
    }
  }
  auto* vi = g.mutable_value_info();
  std::stable_sort(vi->begin(), vi->end(), [](const auto& a, const auto& b) { return a.name() < b.name(); });
}
void normalize_model(onnx::ModelProto& m) {
  for (auto& o : *m.mutable_opset_import())
    if (o.domain().empty()) o.clear_domain();
  normalize_graph(*m.mutable_graph());
}

/// An empty string when the export of the import of `original` is `original` up to `normalize_model`.
std::string diff_models(onnx::ModelProto original, onnx::ModelProto exported) {
  normalize_model(original);
  normalize_model(exported);
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  if (d.Compare(original, exported)) return {};
  return diff.empty() ? std::string("differs") : diff.substr(0, diff.find('\n'));
}

}  // namespace

TEST_CASE("onnx.round_trip.backend_models") {
  const auto models = onnx_test::backend_models();
  if (models.empty()) {
    MESSAGE("no ONNX backend test data under " << onnx_test::backend_data_dir << " (install libonnx-testdata)");
    return;
  }
  // measured on libonnx-testdata 1.12.0 (1072 models); the counts may only go up
  constexpr std::size_t baseline_models = 1072;
  constexpr std::size_t baseline_imported = 1072;
  constexpr std::size_t baseline_exported = 1072;
  constexpr std::size_t baseline_checked = 1072;
  constexpr std::size_t baseline_full_checked = 1069;  // as many as the original models pass
  constexpr std::size_t baseline_equal = 1072;
  constexpr std::size_t baseline_stable = 1072;
  constexpr std::size_t baseline_same_as_original = 1072;
  constexpr std::size_t baseline_text = 1072;

  std::size_t imported = 0, exported = 0, checked = 0, full_checked = 0, original_full = 0, equal = 0, stable = 0, same = 0, text = 0;
  std::vector<std::string> failures;
  const auto start = std::chrono::steady_clock::now();
  for (const auto& path : models) {
    const std::string name = path.parent_path().parent_path().filename().string() + "/" +
                             path.parent_path().filename().string();
    onnx::ModelProto original;
    {
      std::ifstream in(path, std::ios::binary);
      if (!original.ParseFromIstream(&in)) {
        failures.push_back(name + ": cannot parse the original");
        continue;
      }
    }
    const bool original_passes_full = passes_full_check(original);
    original_full += original_passes_full;
    gpass::graph<> g1;
    try {
      g1 = gpass::read_onnx_file(path);
      ++imported;
    } catch (const std::exception& e) {
      failures.push_back(name + ": import: " + e.what());
      continue;
    }
    onnx::ModelProto m1;
    try {
      m1 = gpass::export_onnx(g1);
      ++exported;
    } catch (const std::exception& e) {
      failures.push_back(name + ": export: " + e.what());
      continue;
    }
    if (auto d = diff_models(original, m1); d.empty()) ++same;
    else failures.push_back(name + ": the export differs from the original: " + d);
    try {
      const std::string printed = gpass::print_text(g1);
      auto g3 = gpass::parse_text(printed, name);
      if (auto d = onnx_test::diff_graphs(g1, g3); !d.empty()) failures.push_back(name + ": text IR round trip: " + d);
      else if (gpass::print_text(g3) != printed) failures.push_back(name + ": text IR printed twice differs");
      else ++text;
    } catch (const std::exception& e) {
      failures.push_back(name + ": text IR: " + e.what());
    }
    try {
      onnx::checker::check_model(m1);
      ++checked;
    } catch (const std::exception& e) {
      failures.push_back(name + ": check_model: " + e.what());
      continue;
    }
    try {
      full_check(m1);
      ++full_checked;
    } catch (const std::exception& e) {
      if (original_passes_full) failures.push_back(name + ": full check (the original passes it): " + e.what());
    }
    gpass::graph<> g2;
    try {
      g2 = gpass::import_onnx(m1);
    } catch (const std::exception& e) {
      failures.push_back(name + ": re-import: " + e.what());
      continue;
    }
    if (auto d = onnx_test::diff_graphs(g1, g2); !d.empty()) {
      failures.push_back(name + ": re-imported graph differs: " + d);
      continue;
    }
    ++equal;
    // exporting the re-imported graph gives the same bytes (export is deterministic and stable)
    if (gpass::export_onnx(g2).SerializeAsString() == m1.SerializeAsString()) ++stable;
    else failures.push_back(name + ": second export differs from the first");
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "onnx.round_trip.backend_models: " << models.size() << " models, " << imported << " imported, "
            << exported << " exported, " << checked << " pass check_model, " << full_checked
            << " pass the full check (originals: " << original_full << "), " << equal << " re-imported equal, "
            << stable << " export-stable, " << same << " exported = original (normalized), " << text
            << " text IR round trips, " << seconds << " s\n";
  for (const auto& f : failures) std::cout << "  FAIL " << f << '\n';
  CHECK(models.size() >= baseline_models);
  CHECK(imported >= baseline_imported);
  CHECK(exported >= baseline_exported);
  CHECK(checked >= baseline_checked);
  CHECK(full_checked >= baseline_full_checked);
  CHECK(equal >= baseline_equal);
  CHECK(stable >= baseline_stable);
  CHECK(same >= baseline_same_as_original);
  CHECK(text >= baseline_text);
}

}  // namespace gpass_test_onnx_round_trip
