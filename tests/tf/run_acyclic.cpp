// SPDX-License-Identifier: Apache-2.0
// The acyclic real-TensorFlow fixtures (no v1 loops, conds or variables: shape_ops,
// multi_output, control_deps) imported and run directly on the Eigen CPU executor through
// the TF kernels (domain "tf"), without the frontend passes: the fixture's signature is bound
// (fed Placeholders -> `arg`, a `return` of the fetches); every fetch equals TensorFlow's
// output (same dtype and shape, atol 1e-5). From the binary and the text form, on one and two
// threads.
#include <doctest/doctest.h>

#include <string>

#include "fixture_support.hpp"

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_tf_run_acyclic {

namespace {

using namespace gpass_test::tf;

/// Imports `file` of fixture `name`, runs it and compares every fetch with TensorFlow's.
void run_and_compare(const std::string& name, const char* file, int threads) {
  CAPTURE(name);
  CAPTURE(file);
  const fixture f = read_fixture(name);
  REQUIRE(f.targets.empty());
  REQUIRE(!f.fetches.empty());
  const auto g = prepare(f, gpass::read_tf_graph_file(f.dir / file));
  gpass::exec::eigen_cpu cpu({.threads = threads});
  gpass::exec::plan p(g, cpu);
  const auto out = p.run(read_feeds(f));
  REQUIRE(out.size() == f.fetches.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    CAPTURE(f.fetches[i].first);
    REQUIRE(out[i].is_tensor());
    double err = 0;
    CHECK_NOTHROW(err = max_abs_diff(out[i].tensor(), gpass::read_tf_tensor_file(f.fetches[i].second)));
    CHECK(err <= 1e-5);
  }
}

}  // namespace

TEST_CASE("tf.run_acyclic.shape_ops") {
  run_and_compare("shape_ops", "graph.pb", 1);
  run_and_compare("shape_ops", "graph.pbtxt", 2);
}

TEST_CASE("tf.run_acyclic.multi_output") {
  run_and_compare("multi_output", "graph.pb", 1);
  run_and_compare("multi_output", "graph.pbtxt", 2);
}

TEST_CASE("tf.run_acyclic.control_deps") {
  run_and_compare("control_deps", "graph.pb", 1);
  run_and_compare("control_deps", "graph.pbtxt", 2);
}

TEST_CASE("tf.run_acyclic.unfed_placeholder_is_an_error") {
  // without a feed the Placeholder stays a tf node: running it is an error naming the node
  fixture f = read_fixture("control_deps");
  f.feeds.clear();
  const auto g = prepare(f, gpass::read_tf_graph_file(f.dir / "graph.pb"));
  gpass::exec::eigen_cpu cpu;
  gpass::exec::plan p(g, cpu);
  CHECK_THROWS_WITH_AS(p.run({}), doctest::Contains("was not fed"), gpass::error);
}

}  // namespace gpass_test_tf_run_acyclic
