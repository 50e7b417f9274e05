// SPDX-License-Identifier: Apache-2.0
// The acyclic real-TensorFlow fixtures (no v1 loops, conds or variables: shape_ops,
// multi_output, control_deps) imported and run directly on the Eigen CPU executor through
// the TF kernels (domain "tf"), without the frontend passes: the fixture's signature is bound
// (fed Placeholders -> `arg`, a `return` of the fetches); every fetch equals TensorFlow's
// output (same dtype and shape, atol 1e-5). From the binary and the text form, on one and two
// threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

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

TEST_CASE("tf.run_acyclic.splat_constants") {
  // a Const of one repeated value over more than `splat_fill_bytes` is imported as
  // Fill(dims, value) of two small constants (with the Const's control inputs): never
  // materialized at import, made when a run needs it, under the run's limits
  const std::string text =
      "node { name: 'x' op: 'NoOp' }"
      "node { name: 'c' op: 'Const' input: '^x' attr { key: 'dtype' value { type: DT_INT32 } } attr { key: 'value' "
      "value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 3 } dim { size: 100000 } } int_val: 7 } } } }"
      "node { name: 'z' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } } attr { key: 'value' "
      "value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 300000 } } } } } }"
      "node { name: 'huge' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } } attr { key: 'value' "
      "value { tensor { dtype: DT_FLOAT tensor_shape { dim { size: 1000000 } dim { size: 1000000 } } float_val: 1 } } } }"
      "node { name: 'small' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } } attr { key: 'value' "
      "value { tensor { dtype: DT_INT32 tensor_shape { dim { size: 4 } } int_val: 1 } } } }";
  gpass::graph<> g = gpass::parse_tf_graph_def_text(text, "splat.pbtxt");
  const auto c = g.at("c");
  CHECK(g[c].op == "Fill");
  CHECK(g[c].domain == "tf");
  REQUIRE(g.num_inputs(c) == 2);
  const auto dims = g.input(c, 0).node, value = g.input(c, 1).node;
  CHECK(g[dims].name == "c/splat_dims");
  CHECK(g[value].name == "c/splat_value");
  auto elements = [](const gpass::tensor& t, auto zero) {
    const auto v = t.values<decltype(zero)>();
    return std::vector<decltype(zero)>(v.begin(), v.end());
  };
  CHECK(elements(g[dims].attrs.at("value").as<gpass::tensor>(), std::int64_t{}) == std::vector<std::int64_t>{3, 100000});
  CHECK(elements(g[value].attrs.at("value").as<gpass::tensor>(), std::int32_t{}) == std::vector<std::int32_t>{7});
  for (auto v : {c, dims, value}) {  // the Const's control input, on each (they stay in its frame)
    REQUIRE(g.control_inputs(v).size() == 1);
    CHECK(g[g.control_inputs(v)[0]].name == "x");
  }
  CHECK(g[g.at("z")].op == "Fill");
  CHECK(g[g.at("huge")].op == "Fill");  // 4 TB of ones: a few bytes
  CHECK(g[g.at("small")].op == "Const");  // 16 bytes: an ordinary constant
  CHECK_NOTHROW(gpass::verify(g));

  // run: the values TensorFlow gives
  gpass::tf_signature sig;
  sig.fetches = {"c:0", "z:0", "small:0"};
  gpass::graph<> run = g;
  gpass::bind_tf_signature(run, sig);
  gpass::exec::eigen_cpu cpu({.threads = 1});
  gpass::exec::plan p(run, cpu);
  const auto out = p.run({});
  REQUIRE(out.size() == 3);
  const gpass::tensor& ct = out[0].tensor();
  CHECK(ct.element_type() == gpass::dtype::int32);
  CHECK(ct.sizes() == std::vector<std::int64_t>{3, 100000});
  CHECK(std::all_of(ct.data<std::int32_t>(), ct.data<std::int32_t>() + ct.size(), [](std::int32_t x) { return x == 7; }));
  const gpass::tensor& zt = out[1].tensor();
  CHECK(zt.sizes() == std::vector<std::int64_t>{300000});
  CHECK(std::all_of(zt.data<float>(), zt.data<float>() + zt.size(), [](float x) { return x == 0.0f; }));
  CHECK(elements(out[2].tensor(), std::int32_t{}) == std::vector<std::int32_t>{1, 1, 1, 1});

  // fetching the 4 TB one stops at the run's tensor limit, naming the node
  gpass::tf_signature big;
  big.fetches = {"huge:0"};
  gpass::graph<> hg = g;
  gpass::bind_tf_signature(hg, big);
  gpass::exec::plan hp(hg, cpu, {.limits = {.max_tensor_bytes = std::uint64_t{1} << 30}});
  try {
    (void)hp.run({});
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(std::string(e.what()).find("node 'huge' (op Fill)") != std::string::npos);
    CHECK(std::string(e.what()).find("max_tensor_bytes") != std::string::npos);
  }

  // splat_fill_bytes = 0: every constant is materialized, within max_tensor_bytes
  gpass::tf_import_options o;
  o.splat_fill_bytes = 0;
  o.max_tensor_bytes = 1 << 20;
  try {
    (void)gpass::parse_tf_graph_def_text(text, "splat.pbtxt", o);
    FAIL("no error");
  } catch (const gpass::error& e) {
    CHECK(std::string(e.what()) ==
          "gpass: splat.pbtxt: node 'c' (op Const): attribute 'value': tensor of dtype DT_INT32 and shape [3,100000] "
          "needs 1200000 bytes made of repeated values, more than the 1048576 bytes left of max_tensor_bytes");
  }
}

}  // namespace gpass_test_tf_run_acyclic
