// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/analysis/verify.hpp>
#include <gpass/io/text.hpp>
#include <gpass/pass/context.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/passes/tf/fold_get_tuple.hpp>
#include <gpass/passes/tf/insert_get_tuple.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_passes_tf_get_tuple {

namespace {

using G = gpass::graph<>;

std::string after(std::string_view text, auto pass) {
  G g = gpass::parse_text(text);
  gpass::pass_context ctx;
  pass(g, ctx);
  return gpass::print_text(g);
}

// Readers of Split ports (two of port 1), v1 control flow (ports kept), a tuple-typed port
// (left alone) and a get_tuple that already selects a port (reused).
constexpr std::string_view multi = R"(graph {
  %x = arg() {index = 0} -> (f32[4,6])
  %s:3 = Split(%x) {axis = 1} -> (f32[4,2], f32[4,2], f32[4,2])
  %a = Relu(%s:1) -> (f32[4,2])
  %b = Neg(%s:1) -> (f32[4,2])
  %c = Add(%s:2, %s:0) -> (f32[4,2])
  %pred = arg() {index = 1} -> (bool[])
  %sw:2 = Switch(%x, %pred) -> (f32[4,6], f32[4,6])
  %m:2 = Merge(%sw:0, %sw:1) -> (f32[4,6], i32[])
  %t:2 = test::Pair(%x) -> (tuple<f32[4,6]>, f32[])
  %u = get_tuple(%t:0) {index = 0} -> (f32[4,6])
  %v = Identity(%t:1) -> (f32[])
  %w = Identity(%t:1) -> (f32[])
  %t/first = get_tuple(%t:1) {index = 1} -> (f32[])
  %r:0 = return(%a, %b, %c, %m:0, %m:1, %u, %v, %w, %t/first)
}
)";

constexpr std::string_view multi_split = R"(graph {
  %x = arg() {index = 0} -> (f32[4,6])
  %s:3 = Split(%x) {axis = 1} -> (f32[4,2], f32[4,2], f32[4,2])
  %a = Relu(%s/get_tuple_1) -> (f32[4,2])
  %b = Neg(%s/get_tuple_1) -> (f32[4,2])
  %c = Add(%s/get_tuple_2, %s/get_tuple_0) -> (f32[4,2])
  %pred = arg() {index = 1} -> (bool[])
  %sw:2 = Switch(%x, %pred) -> (f32[4,6], f32[4,6])
  %m:2 = Merge(%sw:0, %sw:1) -> (f32[4,6], i32[])
  %t:2 = test::Pair(%x) -> (tuple<f32[4,6]>, f32[])
  %u = get_tuple(%t:0) {index = 0} -> (f32[4,6])
  %v = Identity(%t/first) -> (f32[])
  %w = Identity(%t/first) -> (f32[])
  %t/first = get_tuple(%t:1) {index = 1} -> (f32[])
  %r:0 = return(%a, %b, %c, %m:0, %m:1, %u, %v, %w, %t/first)
  %s/get_tuple_1 = get_tuple(%s:1) {index = 1} -> (f32[4,2])
  %s/get_tuple_2 = get_tuple(%s:2) {index = 2} -> (f32[4,2])
  %s/get_tuple_0 = get_tuple(%s:0) {index = 0} -> (f32[4,2])
}
)";

}  // namespace

TEST_CASE("passes.tf.insert_get_tuple.seed_diagram") {
  // seed 000: node1:1 -> node2 becomes node1 -> get_tuple(1) -> node2; Switch:1 stays.
  const std::string expected =
      gpass::print_text(gpass::read_text_file(std::filesystem::path(GPASS_TEST_DATA_DIR) / "ir" / "seed000_get_tuple.gir"));
  std::string input = expected;
  const std::string_view gt = "  %node1/get_tuple_1 = get_tuple(%node1:1) {index = 1} -> (f32[4,2])\n";
  REQUIRE(input.find(gt) != std::string::npos);
  input.erase(input.find(gt), gt.size());
  input.replace(input.find("Relu(%node1/get_tuple_1)"), std::string_view("Relu(%node1/get_tuple_1)").size(), "Relu(%node1:1)");
  // the new node comes last (the seed file lists it before its reader): compare without it
  std::string got = after(input, gpass::insert_get_tuple);
  CHECK(got.find(gt) != std::string::npos);
  got.erase(got.find(gt), gt.size());
  std::string want = expected;
  want.erase(want.find(gt), gt.size());
  CHECK(got == want);
}

TEST_CASE("passes.tf.insert_get_tuple.shared_nodes_and_kept_ports") {
  G g = gpass::parse_text(multi);
  gpass::pass_context ctx;
  gpass::insert_get_tuple(g, ctx);
  CHECK(gpass::print_text(g) == multi_split);
  CHECK(ctx.statistics().at("insert-get-tuple.inserted") == 3);
  CHECK(ctx.statistics().at("insert-get-tuple.rerouted") == 6);
  CHECK_NOTHROW(gpass::verify(g));
  // twice: nothing changes
  gpass::pass_context ctx2;
  gpass::insert_get_tuple(g, ctx2);
  CHECK(gpass::print_text(g) == multi_split);
  CHECK(ctx2.statistics().at("insert-get-tuple.inserted") == 0);
}

TEST_CASE("passes.tf.insert_get_tuple.functions") {
  const std::string got = after(R"(graph {
  %x = arg() {index = 0}
  %l = while(%x) {body = @b, cond = @c}
  %r:0 = return(%l)
}

func @b {
  %a = function_entry()
  %t:2 = TopKV2(%a, %a)
  %r:0 = return(%t:1)
}

func @c {
  %a:2 = function_entry()
  %r:0 = return(%a:1)
}
)",
                                gpass::insert_get_tuple);
  CHECK(got.find("%t/get_tuple_1 = get_tuple(%t:1) {index = 1}") != std::string::npos);
  CHECK(got.find("%r:0 = return(%t/get_tuple_1)") != std::string::npos);
  CHECK(got.find("%r:0 = return(%a:1)") != std::string::npos);  // arguments keep their ports
}

TEST_CASE("passes.tf.fold_get_tuple.inverse") {
  G g = gpass::parse_text(multi_split);
  gpass::pass_context ctx;
  gpass::fold_get_tuple(g, ctx);
  // every port selector goes (%t/first too); the get_tuple of the tuple-typed port stays
  CHECK(gpass::print_text(g) == R"(graph {
  %x = arg() {index = 0} -> (f32[4,6])
  %s:3 = Split(%x) {axis = 1} -> (f32[4,2], f32[4,2], f32[4,2])
  %a = Relu(%s:1) -> (f32[4,2])
  %b = Neg(%s:1) -> (f32[4,2])
  %c = Add(%s:2, %s:0) -> (f32[4,2])
  %pred = arg() {index = 1} -> (bool[])
  %sw:2 = Switch(%x, %pred) -> (f32[4,6], f32[4,6])
  %m:2 = Merge(%sw:0, %sw:1) -> (f32[4,6], i32[])
  %t:2 = test::Pair(%x) -> (tuple<f32[4,6]>, f32[])
  %u = get_tuple(%t:0) {index = 0} -> (f32[4,6])
  %v = Identity(%t:1) -> (f32[])
  %w = Identity(%t:1) -> (f32[])
  %r:0 = return(%a, %b, %c, %m:0, %m:1, %u, %v, %w, %t:1)
}
)");
  CHECK(ctx.statistics().at("fold-get-tuple.folded") == 4);
  // fold(insert(g)) == g on a graph with no selector of its own
  const std::string plain = after(multi_split, gpass::fold_get_tuple);
  CHECK(after(after(plain, gpass::insert_get_tuple), gpass::fold_get_tuple) == plain);
}

TEST_CASE("passes.tf.fold_get_tuple.keeps_tuples_and_control_edges") {
  const std::string got = after(R"(graph {
  %x = arg() {index = 0}
  %c = arg() {index = 1}
  %t = make_tuple(%x, %x)
  %e = get_tuple(%t) {index = 0}
  %s:2 = Split(%x)
  %g = get_tuple(%s:1, ^%c) {index = 1}
  %y = Relu(%g)
  %z = Neg(%x, ^%g)
  %u = get_tuple(%x) {index = 0}
  %r:0 = return(%e, %y, %z, %u)
}
)",
                                gpass::fold_get_tuple);
  CHECK(got == R"(graph {
  %x = arg() {index = 0}
  %c = arg() {index = 1}
  %t = make_tuple(%x, %x)
  %e = get_tuple(%t) {index = 0}
  %s:2 = Split(%x)
  %y = Relu(%s:1, ^%c)
  %z = Neg(%x, ^%c, ^%s)
  %u = get_tuple(%x) {index = 0}
  %r:0 = return(%e, %y, %z, %u)
}
)");
}

TEST_CASE("passes.tf.insert_get_tuple.types_and_execution") {
  // get_tuple of a port forwards the port's type (and value) in inference, and runs as the
  // value itself on the executor.
  G g = gpass::parse_text(R"(graph {
  %x = arg() {index = 0} -> (f32[2,4])
  %s:2 = Split(%x) {axis = 1}
  %y = Neg(%s:1)
  %r:0 = return(%y, %s:0)
}
)");
  gpass::pass_context ctx;
  gpass::insert_get_tuple(g, ctx);
  gpass::infer_shapes(g, ctx);
  CHECK(gpass::print_text(g) == R"(graph {
  %x = arg() {index = 0} -> (f32[2,4])
  %s:2 = Split(%x) {axis = 1} -> (f32[2,2], f32[2,2])
  %y = Neg(%s/get_tuple_1) -> (f32[2,2])
  %r:0 = return(%y, %s/get_tuple_0)
  %s/get_tuple_1 = get_tuple(%s:1) {index = 1} -> (f32[2,2])
  %s/get_tuple_0 = get_tuple(%s:0) {index = 0} -> (f32[2,2])
}
)");
  gpass::exec::eigen_cpu cpu;
  gpass::exec::plan p(g, cpu);
  auto out = p.run({gpass::tensor::from<float>({1, 2, 3, 4, 5, 6, 7, 8}).reshaped({2, 4})});
  REQUIRE(out.size() == 2);
  const float* y = out[0].tensor().data<float>();
  const float* a = out[1].tensor().data<float>();
  CHECK(std::vector<float>(y, y + 4) == std::vector<float>{-3, -4, -7, -8});
  CHECK(std::vector<float>(a, a + 4) == std::vector<float>{1, 2, 5, 6});
}

}  // namespace gpass_test_passes_tf_get_tuple
