// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/graph/graph.hpp>
#include <gpass/io/text.hpp>
#include <gpass/pass/dynamic_pipeline.hpp>
#include <gpass/pass/instrumentation.hpp>
#include <gpass/pass/pipeline.hpp>
#include <gpass/pass/registry.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_pass_instrumentation {

namespace {
using G = gpass::graph<>;
namespace fs = std::filesystem;

/// x -> y -> z, plus an unused constant c.
G sample() {
  G g;
  auto x = g.add_node({.name = "x", .op = "Placeholder"});
  auto y = g.add_node({.name = "y", .op = "Relu"});
  auto z = g.add_node({.name = "z", .op = "Relu"});
  g.add_node({.name = "c", .op = "Const"});
  g.add_input(y, x);
  g.add_input(z, y);
  return g;
}

/// Removes node `c` (2 passes of this kind in a row: the second finds nothing).
struct drop_c_fn {
  static constexpr std::string_view name = "drop-c";
  static constexpr std::string_view description = "removes c";
  void operator()(G& g, gpass::pass_context&) const {
    if (auto c = g.find("c")) g.remove_node(*c);
  }
};
/// Adds a node w = Relu(z): one node and one edge more.
struct grow_fn {
  static constexpr std::string_view name = "grow";
  static constexpr std::string_view description = "adds w";
  void operator()(G& g, gpass::pass_context&) const {
    auto w = g.add_node({.name = g.unique_name("w"), .op = "Relu"});
    g.add_input(w, g.at("z"));
  }
};
/// Deliberately broken: closes a cycle x -> y -> x.
struct make_cycle_fn {
  static constexpr std::string_view name = "make-cycle";
  static constexpr std::string_view description = "breaks the graph";
  void operator()(G& g, gpass::pass_context&) const { g.add_input(g.at("x"), g.at("y")); }
};
/// Deliberately broken: renames a node behind the graph's back, duplicating a name.
struct duplicate_name_fn {
  static constexpr std::string_view name = "duplicate-name";
  static constexpr std::string_view description = "breaks the graph";
  void operator()(G& g, gpass::pass_context&) const { g[g.at("z")].name = "y"; }
};
struct throws_std_fn {
  static constexpr std::string_view name = "throws-std";
  static constexpr std::string_view description = "throws std::out_of_range";
  void operator()(G&, gpass::pass_context&) const { throw std::out_of_range("index 7"); }
};
struct throws_gpass_fn {
  static constexpr std::string_view name = "throws-gpass";
  static constexpr std::string_view description = "throws gpass::error about a node";
  void operator()(G&, gpass::pass_context&) const { gpass::throw_node_error("cannot handle", "y", "Relu"); }
};
struct throws_int_fn {
  static constexpr std::string_view name = "throws-int";
  static constexpr std::string_view description = "throws something that is not an exception";
  void operator()(G&, gpass::pass_context&) const { throw 42; }
};

/// A fresh empty directory under the system temp dir, removed at scope exit.
struct temp_dir {
  fs::path path;
  temp_dir() {
    static std::atomic<int> counter{0};
    auto stamp = std::chrono::steady_clock::now().time_since_epoch().count();
    path = fs::temp_directory_path() /
           ("gpass-pass-test-" + std::to_string(stamp) + "-" + std::to_string(counter++));
    fs::remove_all(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> files() const { return files_in(path); }
  static std::vector<std::string> files_in(const fs::path& dir) {
    std::vector<std::string> r;
    if (fs::exists(dir))
      for (const auto& e : fs::directory_iterator(dir)) r.push_back(e.path().filename().string());
    std::sort(r.begin(), r.end());
    return r;
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

template <class F>
gpass::error catch_error(F&& f) {
  try {
    f();
  } catch (const gpass::error& e) {
    return e;
  }
  FAIL("no gpass::error thrown");
  return gpass::error("unreachable");
}
}  // namespace

using gpass::operator|;

TEST_CASE("pass.instrumentation.verify_after_each_catches_cycle") {
  G g = sample();
  gpass::pass_context ctx;
  auto e = catch_error([&] { (drop_c_fn{} | make_cycle_fn{} | grow_fn{})(g, ctx); });
  CHECK(e.context().pass == "make-cycle");
  CHECK(e.message().starts_with("verification failed after pass 'make-cycle': "));
  CHECK(e.message().find("cycle") != std::string::npos);
  CHECK(g.find("w") == std::nullopt);  // the pipeline stopped there

  // the same through a dynamic pipeline
  gpass::pass_registry<G> r;
  r.add(drop_c_fn{});
  r.add(make_cycle_fn{});
  G h = sample();
  auto e2 = catch_error([&] { r.parse("drop-c,make-cycle")(h); });
  CHECK(e2.context().pass == "make-cycle");
  CHECK(e2.message().starts_with("verification failed after pass 'make-cycle': "));

  // without verification, the broken graph goes through
  G k = sample();
  gpass::instrumentation_options o;
  o.verify_each = false;
  CHECK_NOTHROW((drop_c_fn{} | make_cycle_fn{}).run(k, ctx, o));
}

TEST_CASE("pass.instrumentation.verify_after_each_catches_duplicate_name") {
  G g = sample();
  auto e = catch_error([&] { gpass::pipeline(drop_c_fn{}, duplicate_name_fn{})(g); });
  CHECK(e.context().pass == "duplicate-name");
  CHECK(e.message().starts_with("verification failed after pass 'duplicate-name': "));
  CHECK(std::string(e.what()).find("pass 'duplicate-name'") != std::string::npos);
}

TEST_CASE("pass.instrumentation.verifies_input") {
  G g = sample();
  g.add_input(g.at("x"), g.at("z"));  // cycle x -> y -> z -> x
  auto e = catch_error([&] { gpass::pipeline(drop_c_fn{})(g); });
  CHECK(e.message().starts_with("verification failed on the pipeline input: "));
  CHECK(e.context().pass.empty());
}

TEST_CASE("pass.instrumentation.exceptions_name_the_pass") {
  G g = sample();
  auto e1 = catch_error([&] { (drop_c_fn{} | throws_std_fn{})(g); });
  CHECK(e1.context().pass == "throws-std");
  CHECK(e1.message() == "unexpected exception: index 7");
  auto e2 = catch_error([&] { gpass::pipeline(throws_gpass_fn{})(g); });
  CHECK(e2.context().pass == "throws-gpass");
  CHECK(e2.context().node == "y");
  CHECK(std::string(e2.what()) == "gpass: pass 'throws-gpass': node 'y' (op Relu): cannot handle");
  auto e3 = catch_error([&] { gpass::pipeline(throws_int_fn{})(g); });
  CHECK(e3.context().pass == "throws-int");
  CHECK(e3.message() == "unknown exception");
}

TEST_CASE("pass.instrumentation.timing_report") {
  G g = sample();  // 4 nodes, 2 edges
  gpass::pass_context ctx;
  std::ostringstream out;
  gpass::instrumentation_options o;
  o.timing = true;
  o.timing_stream = &out;
  (drop_c_fn{} | grow_fn{} | drop_c_fn{}).run(g, ctx, o);
  auto report = ctx.timing_report();
  REQUIRE(report.size() == 4);
  const std::regex line(R"(^[a-z-]+: \d+ nodes \([+-]\d+\), \d+ edges \([+-]\d+\), \d+\.\d\d ms$)");
  for (const auto& l : report) CHECK_MESSAGE(std::regex_match(l, line), l);
  CHECK(report[0].starts_with("drop-c: 3 nodes (-1), 2 edges (+0), "));
  CHECK(report[1].starts_with("grow: 4 nodes (+1), 3 edges (+1), "));
  CHECK(report[2].starts_with("drop-c: 4 nodes (+0), 3 edges (+0), "));
  CHECK(report[3].starts_with("total: 4 nodes (+0), 3 edges (+1), "));
  // the same lines were printed
  std::string printed;
  for (const auto& l : report) printed += l + "\n";
  CHECK(out.str() == printed);
  // a new timed run replaces the report
  gpass::pipeline(drop_c_fn{}).run(g, ctx, o);
  CHECK(ctx.timing_report().size() == 2);
  // no timing: no report change
  gpass::pipeline(drop_c_fn{}, drop_c_fn{})(g, ctx);
  CHECK(ctx.timing_report().size() == 2);
}

TEST_CASE("pass.instrumentation.dumps") {
  temp_dir dir;
  G g = sample();
  gpass::pass_context ctx;
  gpass::instrumentation_options o;
  o.dump_dir = dir.path / "nested";  // created when missing
  (drop_c_fn{} | grow_fn{}).run(g, ctx, o);
  auto files = temp_dir::files_in(o.dump_dir);
  CHECK(files == std::vector<std::string>{"01-drop-c.after.gir", "01-drop-c.before.gir", "02-grow.after.gir",
                                          "02-grow.before.gir"});
  for (const auto& f : files) CHECK(slurp(o.dump_dir / f).starts_with("graph"));
  // before-dump of pass 2 is the after-dump of pass 1; it parses back
  CHECK(slurp(o.dump_dir / "01-drop-c.after.gir") == slurp(o.dump_dir / "02-grow.before.gir"));
  G back = gpass::read_text_file<G>(o.dump_dir / "02-grow.after.gir");
  CHECK(back.num_nodes() == 4);
  CHECK(gpass::print_text(back) == gpass::print_text(g));

  // DOT, after-dumps only
  temp_dir dot;
  o.dump_dir = dot.path;
  o.format = gpass::instrumentation_options::dump_format::dot;
  o.dump_before = false;
  G h = sample();
  (drop_c_fn{} | grow_fn{} | drop_c_fn{}).run(h, ctx, o);
  CHECK(dot.files() == std::vector<std::string>{"01-drop-c.after.dot", "02-grow.after.dot", "03-drop-c.after.dot"});
  CHECK(slurp(dot.path / "02-grow.after.dot").find("digraph") != std::string::npos);
}

TEST_CASE("pass.instrumentation.crash_reproducer") {
  temp_dir dir;
  G g = sample();
  G expected = g;  // the input of the failing pass: after drop-c and grow
  gpass::pass_context scratch;
  (drop_c_fn{} | grow_fn{}).run(expected, scratch, gpass::instrumentation_options{});

  gpass::pass_context ctx;
  gpass::instrumentation_options o;
  o.reproducer_dir = dir.path;
  auto e = catch_error([&] { (drop_c_fn{} | grow_fn{} | throws_std_fn{} | grow_fn{}).run(g, ctx, o); });
  const auto path = dir.path / "throws-std.reproducer.gir";
  CHECK(e.context().pass == "throws-std");
  CHECK(e.message() == "unexpected exception: index 7 (reproducer written to " + path.string() + ")");
  CHECK(dir.files() == std::vector<std::string>{"throws-std.reproducer.gir"});
  G back = gpass::read_text_file<G>(path);
  CHECK(gpass::print_text(back) == gpass::print_text(expected));
  CHECK(back.num_nodes() == 4);

  // a verification failure writes one too (input of the pass that broke the graph)
  temp_dir dir2;
  o.reproducer_dir = dir2.path;
  G h = sample();
  auto e2 = catch_error([&] { (drop_c_fn{} | make_cycle_fn{}).run(h, ctx, o); });
  CHECK(e2.message().find("reproducer written to") != std::string::npos);
  G back2 = gpass::read_text_file<G>(dir2.path / "make-cycle.reproducer.gir");
  CHECK(back2.num_nodes() == 3);
  CHECK(back2.num_edges() == 2);

  // off by default: nothing written, no mention
  G k = sample();
  auto e3 = catch_error([&] { gpass::pipeline(throws_std_fn{})(k); });
  CHECK(e3.message() == "unexpected exception: index 7");
}

TEST_CASE("pass.instrumentation.dynamic_and_static_share_instrumentation") {
  gpass::pass_registry<G> r;
  r.add(drop_c_fn{});
  r.add(grow_fn{});
  temp_dir dir;
  gpass::instrumentation_options o;
  o.timing = true;
  o.dump_dir = dir.path;
  G g1 = sample(), g2 = sample();
  gpass::pass_context c1, c2;
  (drop_c_fn{} | grow_fn{}).run(g1, c1, o);
  auto files_static = dir.files();
  fs::remove_all(dir.path);
  r.parse("drop-c,grow").run(g2, c2, o);
  CHECK(dir.files() == files_static);
  CHECK(gpass::print_text(g1) == gpass::print_text(g2));
  REQUIRE(c1.timing_report().size() == c2.timing_report().size());
  for (std::size_t i = 0; i < c1.timing_report().size(); ++i)
    CHECK(c1.timing_report()[i].substr(0, c1.timing_report()[i].rfind(',')) ==
          c2.timing_report()[i].substr(0, c2.timing_report()[i].rfind(',')));
}

}  // namespace gpass_test_pass_instrumentation
