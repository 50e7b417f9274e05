// The acyclic real-TensorFlow fixtures (no v1 loops, conds or variables: shape_ops,
// multi_output, control_deps) imported and run directly on the Eigen CPU executor through
// the TF kernels (domain "tf"), without the frontend passes: each fed Placeholder becomes an
// `arg`, a `return` node takes the fetches; every fetch equals TensorFlow's output (same
// dtype and shape, atol 1e-5). From the binary and the text form, on one and two threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/tensorflow.hpp>

namespace {

const std::filesystem::path tf_dir = std::filesystem::path(GPASS_TEST_DATA_DIR) / "tf";

struct tensor_ref {
  std::string node;
  int port = 0;
  std::filesystem::path file;
};

/// The feeds and fetches `fixture.txt` of fixture `name` lists (an acyclic fixture has no targets).
struct io_list {
  std::vector<tensor_ref> feeds, fetches;
};

io_list read_io(const std::string& name) {
  io_list r;
  std::ifstream in(tf_dir / name / "fixture.txt");
  REQUIRE(in);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string kind, t, file;
    s >> kind >> t >> file;
    if (kind != "feed" && kind != "fetch") {
      REQUIRE(kind != "target");
      continue;
    }
    const auto colon = t.rfind(':');
    tensor_ref ref{t.substr(0, colon), std::stoi(t.substr(colon + 1)), tf_dir / name / file};
    (kind == "feed" ? r.feeds : r.fetches).push_back(std::move(ref));
  }
  return r;
}

/// `g` made runnable: fed Placeholders -> `arg {index}` in feed order, a `return` of the fetches.
gpass::graph<> runnable(gpass::graph<> g, const io_list& io) {
  for (std::size_t k = 0; k < io.feeds.size(); ++k) {
    auto v = g.at(io.feeds[k].node);
    gpass::node n;
    n.name = g[v].name;
    n.op = "arg";
    n.attrs["index"] = static_cast<std::int64_t>(k);
    n.outputs = g[v].outputs;
    g.replace_node(v, std::move(n));
  }
  gpass::node r;
  r.name = "_fetches";
  r.op = "return";
  auto ret = g.add_node(std::move(r));
  for (const auto& f : io.fetches) g.add_input(ret, g.at(f.node), f.port);
  return g;
}

/// Largest |a - b| elementwise (NaN against a number: infinite).
double max_abs_diff(const gpass::tensor& a, const gpass::tensor& b) {
  double m = 0;
  gpass::visit_dtype(a.element_type(), [&]<class T>() {
    if constexpr (std::is_arithmetic_v<T>) {
      auto x = a.values<T>();
      auto y = b.values<T>();
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double u = static_cast<double>(x[i]), w = static_cast<double>(y[i]);
        if (std::isnan(u) != std::isnan(w)) m = INFINITY;
        else if (!std::isnan(u)) m = std::max(m, std::abs(u - w));
      }
    } else {
      if (!(a == b)) m = INFINITY;
    }
  });
  return m;
}

/// Imports `file` of fixture `name`, runs it and compares every fetch with TensorFlow's.
void run_and_compare(const std::string& name, const char* file, int threads) {
  CAPTURE(name);
  CAPTURE(file);
  const io_list io = read_io(name);
  REQUIRE(!io.fetches.empty());
  const auto g = runnable(gpass::read_tf_graph_file(tf_dir / name / file), io);
  std::vector<gpass::exec::value> feeds;
  for (const auto& f : io.feeds) feeds.emplace_back(gpass::read_tf_tensor_file(f.file));
  gpass::exec::eigen_cpu cpu({.threads = threads});
  gpass::exec::plan p(g, cpu);
  const auto out = p.run(feeds);
  REQUIRE(out.size() == io.fetches.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    CAPTURE(io.fetches[i].node);
    CAPTURE(io.fetches[i].port);
    const gpass::tensor ref = gpass::read_tf_tensor_file(io.fetches[i].file);
    REQUIRE(out[i].is_tensor());
    const gpass::tensor& got = out[i].tensor();
    REQUIRE(got.element_type() == ref.element_type());
    REQUIRE(got.sizes() == ref.sizes());
    CHECK(max_abs_diff(got, ref) <= 1e-5);
  }
}

bool have(const std::string& name) { return std::filesystem::exists(tf_dir / name / "graph.pb"); }

}  // namespace

TEST_CASE("tf.run_acyclic.shape_ops") {
  if (!have("shape_ops")) return;
  run_and_compare("shape_ops", "graph.pb", 1);
  run_and_compare("shape_ops", "graph.pbtxt", 2);
}

TEST_CASE("tf.run_acyclic.multi_output") {
  if (!have("multi_output")) return;
  run_and_compare("multi_output", "graph.pb", 1);
  run_and_compare("multi_output", "graph.pbtxt", 2);
}

TEST_CASE("tf.run_acyclic.control_deps") {
  if (!have("control_deps")) return;
  run_and_compare("control_deps", "graph.pb", 1);
  run_and_compare("control_deps", "graph.pbtxt", 2);
}

TEST_CASE("tf.run_acyclic.unfed_placeholder_is_an_error") {
  if (!have("control_deps")) return;
  // without a feed the Placeholder stays a tf node: running it is an error naming the node
  io_list io = read_io("control_deps");
  io.feeds.clear();
  const auto g = runnable(gpass::read_tf_graph_file(tf_dir / "control_deps" / "graph.pb"), io);
  gpass::exec::eigen_cpu cpu;
  gpass::exec::plan p(g, cpu);
  CHECK_THROWS_WITH_AS(p.run({}), doctest::Contains("was not fed"), gpass::error);
}
