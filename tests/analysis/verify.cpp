// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/graph/graph.hpp>
#include <gpass/analysis/verify.hpp>
#include <gpass/ops/core_ops.hpp>
#include <gpass/ops/registry.hpp>

#include <boost/graph/adjacency_list.hpp>

#include <cstdint>
#include <string>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_analysis_verify {

namespace {
using G = gpass::graph<>;

gpass::node mk(std::string name, std::string op, std::size_t outputs = 1, gpass::attribute_map attrs = {}) {
  gpass::node n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.outputs.assign(outputs, gpass::type{});
  n.attrs = std::move(attrs);
  return n;
}

// A registry with the core ops plus a few test ops of known arity.
const gpass::op_registry& test_registry() {
  static const gpass::op_registry* r = [] {
    auto* reg = new gpass::op_registry;
    gpass::register_core_ops(*reg);
    reg->add({.name = "Add", .min_inputs = 2, .max_inputs = 2});
    reg->add({.name = "Relu", .min_inputs = 1, .max_inputs = 1});
    reg->add({.name = "Less", .min_inputs = 2, .max_inputs = 2});
    reg->add({.name = "Const", .min_inputs = 0, .max_inputs = 0,
              .attributes = {{"value", "tensor", true, {}}, {"note", "string", false, {}}}});
    reg->add({.name = "Placeholder", .min_inputs = 0, .max_inputs = 0});
    reg->add({.name = "Identity", .min_inputs = 1, .max_inputs = 1});
    return reg;
  }();
  return *r;
}

gpass::verify_options opts() {
  gpass::verify_options o;
  o.registry = &test_registry();
  return o;
}

std::vector<std::string> rules(const std::vector<gpass::violation>& vs) {
  std::vector<std::string> r;
  for (const auto& v : vs) r.push_back(v.rule);
  return r;
}

std::string dump(const std::vector<gpass::violation>& vs) {
  std::string s;
  for (const auto& v : vs) s += v.rule + " | " + v.message + "\n";
  return s;
}

// x, y -> add -> relu
G small_graph() {
  G g;
  auto x = g.add_node(mk("x", "Placeholder"));
  auto y = g.add_node(mk("y", "Placeholder"));
  auto add = g.add_node(mk("add", "Add"));
  auto relu = g.add_node(mk("relu", "Relu"));
  g.add_input(add, x);
  g.add_input(add, y);
  g.add_input(relu, add);
  g.add_control(x, relu);
  return g;
}

// A TF v1 while loop: i = 0; while (i < 10) i = i + 1.
G tf_v1_loop() {
  G g;
  auto init = g.add_node(mk("init", "Const", 1, {{"value", gpass::tensor::scalar<std::int64_t>(0)}}));
  auto limit = g.add_node(mk("limit", "Const", 1, {{"value", gpass::tensor::scalar<std::int64_t>(10)}}));
  auto one = g.add_node(mk("one", "Const", 1, {{"value", gpass::tensor::scalar<std::int64_t>(1)}}));
  auto enter = g.add_node(mk("while/Enter", "Enter", 1, {{"frame_name", "while"}}));
  auto merge = g.add_node(mk("while/Merge", "Merge", 2));
  auto less = g.add_node(mk("while/Less", "Less"));
  auto cond = g.add_node(mk("while/LoopCond", "LoopCond"));
  auto sw = g.add_node(mk("while/Switch", "Switch", 2));
  auto id = g.add_node(mk("while/Identity", "Identity"));
  auto add = g.add_node(mk("while/add", "Add"));
  auto next = g.add_node(mk("while/NextIteration", "NextIteration"));
  auto exit = g.add_node(mk("while/Exit", "Exit"));
  g.add_input(enter, init);
  g.add_input(merge, enter);
  g.add_input(merge, next);  // the loop back edge
  g.add_input(less, merge);
  g.add_input(less, limit);
  g.add_input(cond, less);
  g.add_input(sw, merge);
  g.add_input(sw, cond);
  g.add_input(exit, sw, 0);
  g.add_input(id, sw, 1);
  g.add_input(add, id);
  g.add_input(add, one);
  g.add_input(next, add);
  return g;
}

// A functional while with cond/body functions.
G functional_while() {
  G g;
  auto x = g.add_node(mk("x", "Placeholder"));
  auto w = g.add_node(mk("w", "while", 1, {{"cond", gpass::function_ref{"cond"}}, {"body", gpass::function_ref{"body"}}}));
  g.add_input(w, x);
  {
    // Built in place: graph's move constructor currently copies the Boost storage and leaves
    // the name index and input slots pointing into the moved-from graph.
    auto& c = g.add_function("cond", G{});
    auto e = c.add_node(mk("entry", "function_entry"));
    auto k = c.add_node(mk("k", "Const", 1, {{"value", gpass::tensor::scalar<std::int64_t>(10)}}));
    auto l = c.add_node(mk("less", "Less"));
    auto r = c.add_node(mk("ret", "return", 0));
    c.add_input(l, e);
    c.add_input(l, k);
    c.add_input(r, l);
  }
  {
    auto& b = g.add_function("body", G{});
    auto e = b.add_node(mk("entry", "function_entry"));
    auto k = b.add_node(mk("one", "Const", 1, {{"value", gpass::tensor::scalar<std::int64_t>(1)}}));
    auto a = b.add_node(mk("add", "Add"));
    auto r = b.add_node(mk("ret", "return", 0));
    b.add_input(a, e);
    b.add_input(a, k);
    b.add_input(r, a);
  }
  return g;
}
}  // namespace

TEST_CASE("analysis.verify.valid_graphs_pass") {
  CHECK(gpass::verify_report(G{}, opts()).empty());
  auto g = small_graph();
  auto vs = gpass::verify_report(g, opts());
  CHECK_MESSAGE(vs.empty(), dump(vs));
  CHECK_NOTHROW(gpass::verify(g, opts()));
  CHECK_NOTHROW(gpass::verify(g));  // with the global registry
}

TEST_CASE("analysis.verify.tf_v1_loop_is_legal") {
  auto g = tf_v1_loop();
  auto vs = gpass::verify_report(g, opts());
  CHECK_MESSAGE(vs.empty(), dump(vs));

  // Without the v1 allowance the loop is a cycle, named in edge order from its first node.
  auto o = opts();
  o.allow_v1_control_flow_cycles = false;
  vs = gpass::verify_report(g, o);
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].rule == "cycle");
  CHECK(vs[0].node == "while/Merge");
  CHECK(vs[0].op == "Merge");
  CHECK(vs[0].message ==
        "node 'while/Merge' (op Merge): cycle: while/Merge -> while/Switch -> while/Identity -> while/add -> "
        "while/NextIteration -> while/Merge");
}

TEST_CASE("analysis.verify.only_next_iteration_to_merge_edges_are_exempt") {
  auto g = tf_v1_loop();
  // A second back edge that is not NextIteration -> Merge closes an illegal cycle.
  auto id = g.at("while/Identity");
  auto less = g.at("while/Less");
  g.add_control(id, less);
  auto vs = gpass::verify_report(g, opts());
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].rule == "cycle");
  CHECK(vs[0].node == "while/Less");
  CHECK(vs[0].reason == "cycle: while/Less -> while/LoopCond -> while/Switch -> while/Identity -> while/Less");
}

TEST_CASE("analysis.verify.functional_while_passes") {
  auto g = functional_while();
  auto vs = gpass::verify_report(g, opts());
  CHECK_MESSAGE(vs.empty(), dump(vs));
  CHECK_NOTHROW(gpass::verify(g));
}

TEST_CASE("analysis.verify.duplicate_name") {
  auto g = small_graph();
  g[g.at("y")].name = "x";  // edited directly: two nodes called x, the index knows the first
  auto vs = gpass::verify_report(g, opts());
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].rule == "duplicate-name");
  CHECK(vs[0].node == "x");
  CHECK(vs[0].op == "Placeholder");
  CHECK(vs[0].message == "node 'x' (op Placeholder): duplicate node name (2 nodes are called 'x')");

  // The flagged node is the one the index does not return, whatever the node order.
  G h;
  auto a = h.add_node(mk("a", "A"));
  h.add_node(mk("b", "B"));
  h[a].name = "b";
  vs = gpass::verify_report(h, opts());
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].rule == "duplicate-name");
  CHECK(vs[0].op == "A");
}

TEST_CASE("analysis.verify.empty_name_and_name_index") {
  auto g = small_graph();
  g[g.at("relu")].name = "";
  g[g.at("add")].name = "sum";  // fresh name, but find("sum") knows nothing
  auto vs = gpass::verify_report(g, opts());
  REQUIRE_MESSAGE(vs.size() == 2, dump(vs));
  CHECK(vs[0].rule == "name-index");
  CHECK(vs[0].node == "sum");
  CHECK(vs[0].message.find("node 'sum' (op Add): name is not in the graph's name index") == 0);
  CHECK(vs[1].rule == "empty-name");
  CHECK(vs[1].node.empty());
  CHECK(vs[1].message == "a node of op Relu has an empty name");
}

TEST_CASE("analysis.verify.dangling_edge_required_input") {
  auto g = small_graph();
  g.remove_node(g.at("y"));  // add's input 1 is left empty
  auto vs = gpass::verify_report(g, opts());
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].rule == "dangling-edge");
  CHECK(vs[0].node == "add");
  CHECK(vs[0].op == "Add");
  CHECK(vs[0].reason == "input 1 is not connected");
  CHECK(vs[0].message == "node 'add' (op Add): input 1 is not connected");

  // Unknown ops may have empty (optional) inputs.
  G h;
  auto a = h.add_node(mk("a", "MyOp"));
  h.add_empty_input(a);
  CHECK(gpass::verify_report(h, opts()).empty());
  // So may known ops, beyond min_inputs.
  gpass::op_registry reg;
  reg.add({.name = "MyOp", .min_inputs = 0, .max_inputs = 2});
  auto o = opts();
  o.registry = &reg;
  CHECK(gpass::verify_report(h, o).empty());
  // Or below min_inputs, when the schema's formals mark the port optional.
  gpass::op_registry reg2;
  gpass::op_schema sc{.name = "MyOp", .min_inputs = 2, .max_inputs = 2};
  sc.inputs = {{"A", "T", gpass::formal_option::optional}, {"B", "T"}};
  reg2.add(sc);
  o.registry = &reg2;
  h.add_input(a, a);  // port 1 (required) connected; port 0 (optional) empty
  auto vs2 = gpass::verify_report(h, o);
  REQUIRE_MESSAGE(vs2.size() == 1, dump(vs2));
  CHECK(vs2[0].rule == "cycle");  // only the self-loop; the empty optional port is fine
}

TEST_CASE("analysis.verify.dangling_edge_structure") {
  auto g = small_graph();
  // An edge added behind the graph's back (not recorded in relu's input slot 0).
  auto& bg = const_cast<std::remove_cvref_t<decltype(g.boost_graph())>&>(g.boost_graph());
  boost::add_edge(g.at("y"), g.at("relu"), gpass::edge{0, 0}, bg);
  auto vs = gpass::verify_report(g, opts());
  REQUIRE_MESSAGE(vs.size() == 1, dump(vs));
  CHECK(vs[0].rule == "dangling-edge");
  CHECK(vs[0].node == "relu");
  CHECK(vs[0].reason == "data edge from 'y':0 into input 0 is not the edge recorded for that input");

  // An edge into a port the node does not have.
  auto h = small_graph();
  auto& bh = const_cast<std::remove_cvref_t<decltype(h.boost_graph())>&>(h.boost_graph());
  boost::add_edge(h.at("x"), h.at("relu"), gpass::edge{0, 3}, bh);
  vs = gpass::verify_report(h, opts());
  REQUIRE_MESSAGE(vs.size() == 1, dump(vs));
  CHECK(vs[0].rule == "port-range");
  CHECK(vs[0].node == "relu");
  CHECK(vs[0].reason == "data edge from 'x':0 enters input 3 but the node has 1 input port");
}

TEST_CASE("analysis.verify.port_range_after_outputs_shrink") {
  G g;
  auto s = g.add_node(mk("split", "Split", 2));
  auto a = g.add_node(mk("a", "Relu"));
  auto b = g.add_node(mk("b", "Relu"));
  g.add_input(a, s, 0);
  g.add_input(b, s, 1);
  CHECK(gpass::verify_report(g, opts()).empty());
  g[s].outputs.resize(1);
  auto vs = gpass::verify_report(g, opts());
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].rule == "port-range");
  CHECK(vs[0].node == "split");
  CHECK(vs[0].message == "node 'split' (op Split): output 1 is used by 'b' (input 0) but the node has 1 output");
}

TEST_CASE("analysis.verify.cycle") {
  G g;
  auto in = g.add_node(mk("in", "Placeholder"));
  auto a = g.add_node(mk("a", "A"));
  auto b = g.add_node(mk("b", "B"));
  auto c = g.add_node(mk("c", "C"));
  auto after = g.add_node(mk("after", "D"));
  g.add_input(a, in);
  g.add_input(a, c);
  g.add_input(b, a);
  g.add_input(c, b);
  g.add_input(after, c);
  auto vs = gpass::verify_report(g, opts());
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].rule == "cycle");
  CHECK(vs[0].node == "a");
  CHECK(vs[0].op == "A");
  CHECK(vs[0].message == "node 'a' (op A): cycle: a -> b -> c -> a");

  // Two independent cycles and a control self-loop: one violation each, in node order.
  auto x = g.add_node(mk("x", "X"));
  auto y = g.add_node(mk("y", "Y"));
  g.add_input(x, y);
  g.add_input(y, x);
  auto z = g.add_node(mk("z", "Z"));
  g.add_control(z, z);
  vs = gpass::verify_report(g, opts());
  REQUIRE(vs.size() == 3);
  CHECK(vs[0].reason == "cycle: a -> b -> c -> a");
  CHECK(vs[1].reason == "cycle: x -> y -> x");
  CHECK(vs[2].reason == "cycle: z -> z");
}

TEST_CASE("analysis.verify.cycle_long_is_iterative_and_shortened") {
  // A 200000-node cycle: no recursion (no stack overflow) and a bounded message.
  G g;
  constexpr int n = 200000;
  std::vector<G::node_id> v;
  v.reserve(n);
  for (int i = 0; i < n; ++i) v.push_back(g.add_node(mk("n" + std::to_string(i), "Op")));
  for (int i = 1; i < n; ++i) g.add_input(v[i], v[i - 1]);
  CHECK(gpass::verify_report(g, opts()).empty());
  g.add_input(v[0], v[n - 1]);
  auto vs = gpass::verify_report(g, opts());
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].rule == "cycle");
  CHECK(vs[0].node == "n0");
  CHECK(vs[0].reason.find("cycle: n0 -> n1 -> n2 -> ") == 0);
  CHECK(vs[0].reason.find("... (199968 more nodes) -> n0") != std::string::npos);
  CHECK(vs[0].reason.size() < 1000);
}

TEST_CASE("analysis.verify.unresolved_function") {
  auto g = functional_while();
  g[g.at("w")].attrs["body"] = gpass::function_ref{"bodyy"};
  auto n = g.add_node(mk("case", "Case", 1, {{"branches", std::vector<gpass::function_ref>{{"cond"}, {"nope"}}}}));
  g.add_input(n, g.at("x"));
  auto vs = gpass::verify_report(g, opts());
  REQUIRE_MESSAGE(vs.size() == 2, dump(vs));
  CHECK(vs[0].rule == "unresolved-function");
  CHECK(vs[0].node == "w");
  CHECK(vs[0].message == "node 'w' (op while): attribute 'body' refers to unknown function 'bodyy'");
  CHECK(vs[1].rule == "unresolved-function");
  CHECK(vs[1].node == "case");
  CHECK(vs[1].reason == "attribute 'branches' element 1 refers to unknown function 'nope'");

  // Inside a function, references resolve against the top graph's library (flat namespace).
  auto h = functional_while();
  auto& body = *h.find_function("body");
  auto call = body.add_node(mk("call", "Call", 1, {{"f", gpass::function_ref{"cond"}}}));
  body.add_input(call, body.at("add"));
  body.add_node(mk("bad", "Call", 1, {{"f", gpass::function_ref{"missing"}}}));
  vs = gpass::verify_report(h, opts());
  REQUIRE_MESSAGE(vs.size() == 1, dump(vs));
  CHECK(vs[0].rule == "unresolved-function");
  CHECK(vs[0].function == "body");
  CHECK(vs[0].node == "bad");
  CHECK(vs[0].message == "function 'body': node 'bad' (op Call): attribute 'f' refers to unknown function 'missing'");
}

TEST_CASE("analysis.verify.function_signature") {
  auto g = functional_while();
  auto& body = *g.find_function("body");
  body.remove_node(body.at("ret"));
  auto& cond = *g.find_function("cond");
  auto e2 = cond.add_node(mk("entry2", "function_entry"));
  auto r2 = cond.add_node(mk("ret2", "return", 0));
  cond.add_input(r2, e2);
  auto vs = gpass::verify_report(g, opts());
  REQUIRE_MESSAGE(vs.size() == 3, dump(vs));
  // functions in name order: body, then cond
  CHECK(vs[0].rule == "function-signature");
  CHECK(vs[0].function == "body");
  CHECK(vs[0].node.empty());
  CHECK(vs[0].message == "function 'body': no return node (a function needs exactly one)");
  CHECK(vs[1].rule == "function-signature");
  CHECK(vs[1].function == "cond");
  CHECK(vs[1].node == "entry2");
  CHECK(vs[1].message ==
        "function 'cond': node 'entry2' (op function_entry): second function_entry node (the first is 'entry')");
  CHECK(vs[2].node == "ret2");
  CHECK(vs[2].reason == "second return node (the first is 'ret')");

  // Skipped when functions are not checked.
  auto o = opts();
  o.check_functions = false;
  CHECK(gpass::verify_report(g, o).empty());
}

TEST_CASE("analysis.verify.arity") {
  G g;
  auto x = g.add_node(mk("x", "Placeholder"));
  auto t = g.add_node(mk("t", "get_tuple", 1, {{"index", std::int64_t{0}}}));
  g.add_input(t, x);
  g.add_input(t, x);
  auto m = g.add_node(mk("m", "Merge", 1));  // Merge has 2 outputs and needs an input
  (void)m;
  auto vs = gpass::verify_report(g, opts());
  REQUIRE_MESSAGE(vs.size() == 3, dump(vs));
  CHECK(vs[0].rule == "arity");
  CHECK(vs[0].node == "t");
  CHECK(vs[0].message == "node 't' (op get_tuple): has 2 input ports, expected exactly 1");
  CHECK(vs[1].rule == "arity");
  CHECK(vs[1].reason == "has 0 input ports, expected at least 1");
  CHECK(vs[2].rule == "arity");
  CHECK(vs[2].reason == "has 1 output, expected exactly 2");
}

TEST_CASE("analysis.verify.missing_attribute_and_kind") {
  G g;
  auto x = g.add_node(mk("x", "Placeholder"));
  auto t = g.add_node(mk("t", "get_tuple"));
  g.add_input(t, x);
  auto k = g.add_node(mk("k", "Const", 1, {{"value", std::int64_t{3}}, {"note", "fine"}}));
  (void)k;
  auto vs = gpass::verify_report(g, opts());
  REQUIRE_MESSAGE(vs.size() == 2, dump(vs));
  CHECK(vs[0].rule == "missing-attribute");
  CHECK(vs[0].node == "t");
  CHECK(vs[0].message == "node 't' (op get_tuple): missing required attribute 'index' (int)");
  CHECK(vs[1].rule == "attribute-kind");
  CHECK(vs[1].node == "k");
  CHECK(vs[1].message == "node 'k' (op Const): attribute 'value' is a int, expected tensor");

  g[t].attrs["index"] = std::string("zero");
  vs = gpass::verify_report(g, opts());
  REQUIRE(vs.size() == 2);
  CHECK(vs[0].rule == "attribute-kind");
  CHECK(vs[0].reason == "attribute 'index' is a string, expected int");

  // Schema checks can be turned off, or skipped with no registry.
  auto o = opts();
  o.check_schemas = false;
  CHECK(gpass::verify_report(g, o).empty());
  o = opts();
  o.registry = nullptr;
  CHECK(gpass::verify_report(g, o).empty());
}

TEST_CASE("analysis.verify.domains_are_distinct") {
  G g;
  auto t = g.add_node(mk("t", "get_tuple"));  // default domain: needs an input and an index
  g[t].domain = "custom";                     // another domain: unknown op, no schema checks
  CHECK(gpass::verify_report(g, opts()).empty());
  g[t].domain.clear();
  auto vs = gpass::verify_report(g, opts());
  const std::vector<std::string> expected{"arity", "missing-attribute"};
  CHECK(rules(vs) == expected);
}

TEST_CASE("analysis.verify.report_lists_several_violations") {
  auto g = functional_while();
  g[g.at("w")].attrs.erase("cond");                   // missing-attribute
  g[g.at("x")].name = "w";                            // duplicate-name
  auto& body = *g.find_function("body");
  body.remove_node(body.at("one"));                   // dangling input in body's add
  body.add_input(body.at("entry"), body.at("add"));   // cycle entry -> add -> entry (and arity of entry)
  auto vs = gpass::verify_report(g, opts());
  const std::vector<std::string> expected{"duplicate-name", "missing-attribute", "arity", "dangling-edge", "cycle"};
  CHECK_MESSAGE(rules(vs) == expected, dump(vs));
  REQUIRE(vs.size() == 5);
  CHECK(vs[0].node == "w");
  CHECK(vs[0].op == "Placeholder");
  CHECK(vs[2].function == "body");
  CHECK(vs[2].node == "entry");
  CHECK(vs[3].message == "function 'body': node 'add' (op Add): input 1 is not connected");
  CHECK(vs[4].message == "function 'body': node 'entry' (op function_entry): cycle: entry -> add -> entry");
}

TEST_CASE("analysis.verify.throws_naming_the_node") {
  auto g = small_graph();
  g.remove_node(g.at("y"));
  CHECK_THROWS_WITH_AS(gpass::verify(g, opts()), "gpass: node 'add' (op Add): input 1 is not connected",
                       gpass::error);
  g[g.at("relu")].name.clear();  // empty-name
  g.add_node(mk("", "Relu"));     // named Relu by add_node, but has no input: arity
  try {
    gpass::verify(g, opts());
    FAIL("verify did not throw");
  } catch (const gpass::error& e) {
    CHECK(e.context().node == "add");
    CHECK(e.context().op == "Add");
    CHECK(std::string(e.what()) ==
          "gpass: node 'add' (op Add): input 1 is not connected (and 2 more violations)");
  }

  // Inside a function, the message names the function.
  auto h = functional_while();
  auto& body = *h.find_function("body");
  body.remove_node(body.at("one"));
  try {
    gpass::verify(h, opts());
    FAIL("verify did not throw");
  } catch (const gpass::error& e) {
    CHECK(e.context().node == "add");
    CHECK(std::string(e.what()) == "gpass: node 'add' (op Add): input 1 is not connected (in function 'body')");
  }

  // A violation without a node.
  body.remove_node(body.at("ret"));
  body.remove_node(body.at("add"));
  CHECK_THROWS_WITH_AS(gpass::verify(h, opts()),
                       "gpass: function 'body': no return node (a function needs exactly one)", gpass::error);
}

TEST_CASE("analysis.verify.nested_function_libraries") {
  // A function with its own library: its nodes may reference it and the top library.
  auto g = functional_while();
  auto& body = *g.find_function("body");
  body.add_function("helper", G{}).add_node(mk("r", "return", 0));
  body.add_node(mk("call", "Call", 1, {{"f", gpass::function_ref{"helper"}}, {"g", gpass::function_ref{"cond"}}}));
  auto vs = gpass::verify_report(g, opts());
  CHECK_MESSAGE(vs.empty(), dump(vs));
  // The top graph cannot see body's helper.
  g.add_node(mk("call", "Call", 1, {{"f", gpass::function_ref{"helper"}}}));
  // Nested functions are verified too, and named by path.
  body.find_function("helper")->add_node(mk("r2", "return", 0));
  vs = gpass::verify_report(g, opts());
  REQUIRE_MESSAGE(vs.size() == 2, dump(vs));
  CHECK(vs[0].rule == "unresolved-function");
  CHECK(vs[0].function.empty());
  CHECK(vs[1].rule == "function-signature");
  CHECK(vs[1].function == "body/helper");
  CHECK(vs[1].node == "r2");
}

TEST_CASE("analysis.verify.graph_attribute_function_refs") {
  auto g = functional_while();
  g.attrs()["entry"] = gpass::function_ref{"body"};
  CHECK(gpass::verify_report(g, opts()).empty());
  g.attrs()["entry"] = gpass::function_ref{"main"};
  auto vs = gpass::verify_report(g, opts());
  REQUIRE(vs.size() == 1);
  CHECK(vs[0].rule == "unresolved-function");
  CHECK(vs[0].node.empty());
  CHECK(vs[0].message == "graph attribute 'entry' refers to unknown function 'main'");
}

}  // namespace gpass_test_analysis_verify
