// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/graph/graph.hpp>
#include <gpass/io/dot.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_io_dot {

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

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> r;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);) r.push_back(l);
  return r;
}

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

std::size_t count_lines(const std::string& s, const std::string& sub) {
  std::size_t n = 0;
  for (const auto& l : lines(s))
    if (contains(l, sub)) ++n;
  return n;
}

// Node declarations: lines with a label that are not edges.
std::size_t node_lines(const std::string& s) {
  std::size_t n = 0;
  for (const auto& l : lines(s))
    if (contains(l, "\" [") && !contains(l, " -> ") && !contains(l, "label=\"\"]")) ++n;
  return n;
}

std::size_t edge_lines(const std::string& s) { return count_lines(s, " -> "); }

// Braces outside quoted strings balance, and quotes are closed on every line.
bool well_formed(const std::string& s) {
  int depth = 0;
  for (const auto& l : lines(s)) {
    bool in_str = false;
    for (std::size_t i = 0; i < l.size(); ++i) {
      char c = l[i];
      if (in_str) {
        if (c == '\\') ++i;
        else if (c == '"') in_str = false;
      } else if (c == '"') {
        in_str = true;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}') {
        if (--depth < 0) return false;
      }
    }
    if (in_str) return false;
  }
  return depth == 0;
}

// x, y -> add -> relu; x ..> relu (control)
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

G functional_while() {
  G g;
  auto x = g.add_node(mk("x", "Placeholder"));
  auto w = g.add_node(mk("w", "while", 1, {{"cond", gpass::function_ref{"cond"}}, {"body", gpass::function_ref{"body"}}}));
  g.add_input(w, x);
  {
    auto& c = g.add_function("cond", G{});  // built in place (see the note in tests/graph/verify.cpp)
    auto e = c.add_node(mk("entry", "function_entry"));
    auto r = c.add_node(mk("ret", "return", 0));
    c.add_input(r, e);
  }
  {
    auto& b = g.add_function("body", G{});
    auto e = b.add_node(mk("entry", "function_entry"));
    auto a = b.add_node(mk("x", "Neg"));  // same name as a top-level node: ids must not collide
    auto r = b.add_node(mk("ret", "return", 0));
    b.add_input(a, e);
    b.add_input(r, a);
  }
  return g;
}
}  // namespace

TEST_CASE("io.dot.small_graph_exact") {
  auto g = small_graph();
  const std::string expected =
      "digraph \"gpass\" {\n"
      "  compound=true;\n"
      "  node [shape=box, style=rounded];\n"
      "  \"g0/x\" [label=\"x\\nPlaceholder\"];\n"
      "  \"g0/y\" [label=\"y\\nPlaceholder\"];\n"
      "  \"g0/add\" [label=\"add\\nAdd\"];\n"
      "  \"g0/relu\" [label=\"relu\\nRelu\"];\n"
      "  \"g0/x\" -> \"g0/add\";\n"
      "  \"g0/y\" -> \"g0/add\" [label=\"0->1\"];\n"
      "  \"g0/add\" -> \"g0/relu\";\n"
      "  \"g0/x\" -> \"g0/relu\" [style=dashed];\n"
      "}\n";
  CHECK(gpass::to_dot(g) == expected);
  std::ostringstream os;
  gpass::write_dot(os, g);
  CHECK(os.str() == expected);
  CHECK(well_formed(expected));
}

TEST_CASE("io.dot.ports_and_edge_order") {
  G g;
  auto s = g.add_node(mk("split", "Split", 2));
  auto c = g.add_node(mk("concat", "Concat"));
  // wired out of port order: the DOT lists inputs in port order anyway
  g.connect(s, 1, c, 1);
  g.connect(s, 0, c, 0);
  g.add_empty_input(c);
  g.connect(s, 1, c, 3);
  auto t = gpass::to_dot(g);
  auto ls = lines(t);
  std::vector<std::string> edges;
  for (const auto& l : ls)
    if (contains(l, " -> ")) edges.push_back(l);
  REQUIRE(edges.size() == 3);
  CHECK(edges[0] == "  \"g0/split\" -> \"g0/concat\";");
  CHECK(edges[1] == "  \"g0/split\" -> \"g0/concat\" [label=\"1->1\"];");
  CHECK(edges[2] == "  \"g0/split\" -> \"g0/concat\" [label=\"1->3\"];");
  CHECK(node_lines(t) == 2);
}

TEST_CASE("io.dot.escaping") {
  G g;
  auto a = g.add_node(mk("say \"hi\"\\now\nline2", "Weird\"Op"));
  auto b = g.add_node(mk("tab\there\x01", "B"));
  g.add_input(b, a);
  auto t = gpass::to_dot(g);
  CHECK(contains(t, "  \"g0/say \\\"hi\\\"\\\\now\\nline2\" [label=\"say \\\"hi\\\"\\\\now\\nline2\\nWeird\\\"Op\"];\n"));
  CHECK(contains(t, "\"g0/tab\there\\x01\""));
  CHECK(contains(t, "  \"g0/say \\\"hi\\\"\\\\now\\nline2\" -> \"g0/tab\there\\x01\";\n"));
  CHECK(well_formed(t));
  // No raw newline inside any quoted string: every line is a whole statement.
  for (const auto& l : lines(t)) CHECK((l == "}" || l.back() == ';' || l.back() == '{'));

  // Distinct names that differ only in what gets escaped give distinct ids.
  G h;
  h.add_node(mk("a\\nb", "X"));  // backslash, n
  h.add_node(mk("a\nb", "X"));   // newline
  auto th = gpass::to_dot(h);
  CHECK(contains(th, "\"g0/a\\\\nb\""));
  CHECK(contains(th, "\"g0/a\\nb\""));
}

TEST_CASE("io.dot.types_and_attributes") {
  G g;
  gpass::node n = mk("c", "Const", 2,
                     {{"value", gpass::tensor::from<float>({1, 2, 3, 4, 5, 6}, {2, 3})},
                      {"axes", std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
                      {"alpha", 0.5},
                      {"beta", 2.0},
                      {"flag", true},
                      {"mode", std::string("a \"quoted\" mode")},
                      {"dt", gpass::dtype::f32},
                      {"f", gpass::function_ref{"nope"}}});
  n.outputs[0] = gpass::tensor_type{gpass::dtype::f32, gpass::shape{2, 3}};
  n.device = "/cpu:0";
  g.add_node(n);
  g.add_node(mk("u", "Unknown"));  // unknown types only: no types line

  auto t = gpass::to_dot(g, {.functions = false});
  CHECK(contains(t, "[label=\"c\\nConst\\nf32[2,3], ?\"];"));
  CHECK(contains(t, "[label=\"u\\nUnknown\"];"));
  CHECK(!contains(t, "alpha"));

  t = gpass::to_dot(g, {.functions = false, .types = false, .attributes = true});
  CHECK(!contains(t, "f32[2,3], ?"));
  CHECK(contains(t,
                 "[label=\"c\\nConst\\nalpha=0.5\\naxes=[0, 1, 2, 3, 4, 5, 6, 7, ... (10 total)]\\nbeta=2.0"
                 "\\ndt=f32\\nf=@nope\\nflag=true\\nmode='a \\\"quoted\\\" mode'\\nvalue=tensor<f32[2,3]>"
                 "\\ndevice=/cpu:0\"];"));
  CHECK(well_formed(t));
}

TEST_CASE("io.dot.function_clusters") {
  auto g = functional_while();
  auto t = gpass::to_dot(g);
  CHECK(well_formed(t));
  // functions in name order: body is g1, cond is g2
  CHECK(count_lines(t, "subgraph ") == 2);
  CHECK(contains(t, "  subgraph \"cluster_body\" {\n    label=\"@body\";\n"));
  CHECK(contains(t, "  subgraph \"cluster_cond\" {\n    label=\"@cond\";\n"));
  CHECK(contains(t, "    \"g1\" [shape=point, style=invis, label=\"\"];\n"));
  CHECK(contains(t, "    \"g1/x\" [label=\"x\\nNeg\"];\n"));  // no collision with top-level x
  CHECK(contains(t, "  \"g0/x\" [label=\"x\\nPlaceholder\"];\n"));
  CHECK(contains(t, "    \"g1/entry\" -> \"g1/x\";\n"));
  CHECK(contains(t, "    \"g2/entry\" -> \"g2/ret\";\n"));
  CHECK(contains(t, "  \"g0/w\" -> \"g1\" [style=dotted, lhead=\"cluster_body\", label=\"body\"];\n"));
  CHECK(contains(t, "  \"g0/w\" -> \"g2\" [style=dotted, lhead=\"cluster_cond\", label=\"cond\"];\n"));
  CHECK(node_lines(t) == 2 + 3 + 2);  // anchors are not counted
  CHECK(edge_lines(t) == 1 + 2 + 1 + 2);

  auto flat = gpass::to_dot(g, {.functions = false});
  CHECK(!contains(flat, "subgraph"));
  CHECK(!contains(flat, "dotted"));
  CHECK(node_lines(flat) == 2);
}

TEST_CASE("io.dot.function_refs_lists_missing_and_nested") {
  auto g = functional_while();
  auto c = g.add_node(mk("case", "Case", 1,
                         {{"branches", std::vector<gpass::function_ref>{{"cond"}, {"gone"}}}, {"other", gpass::function_ref{"gone"}}}));
  g.add_input(c, g.at("x"));
  auto& body = *g.find_function("body");
  auto& helper = body.add_function("helper", G{});
  helper.add_node(mk("r", "return", 0));
  body.add_node(mk("call", "Call", 1, {{"f", gpass::function_ref{"helper"}}, {"g", gpass::function_ref{"cond"}}}));

  auto t = gpass::to_dot(g);
  CHECK(well_formed(t));
  // Nested library: a cluster inside body's cluster, numbered depth first (body g1, helper g2, cond g3).
  CHECK(contains(t, "    subgraph \"cluster_body/helper\" {\n      label=\"@helper\";\n"));
  CHECK(contains(t, "      \"g2/r\" [label=\"r\\nreturn\"];\n    }\n  }\n"));
  CHECK(contains(t, "  \"g1/call\" -> \"g2\" [style=dotted, lhead=\"cluster_body/helper\", label=\"f\"];\n"));
  CHECK(contains(t, "  \"g1/call\" -> \"g3\" [style=dotted, lhead=\"cluster_cond\", label=\"g\"];\n"));
  CHECK(contains(t, "  \"g0/case\" -> \"g3\" [style=dotted, lhead=\"cluster_cond\", label=\"branches[0]\"];\n"));
  // A missing function: one red node, one edge per reference.
  CHECK(count_lines(t, "\"missing/gone\" [label=\"@gone\\n(missing)\", style=dashed, color=red];") == 1);
  CHECK(contains(t, "  \"g0/case\" -> \"missing/gone\" [style=dotted, color=red, label=\"branches[1]\"];\n"));
  CHECK(contains(t, "  \"g0/case\" -> \"missing/gone\" [style=dotted, color=red, label=\"other\"];\n"));
}

TEST_CASE("io.dot.graph_name_and_determinism") {
  auto g = functional_while();
  g.attrs()["name"] = std::string("my \"net\"");
  auto t = gpass::to_dot(g);
  CHECK(t.rfind("digraph \"my \\\"net\\\"\" {\n", 0) == 0);
  CHECK(gpass::to_dot(functional_while()) == gpass::to_dot(functional_while()));
  G copy = g;
  CHECK(gpass::to_dot(copy) == t);
}

TEST_CASE("io.dot.large_graph") {
  G g;
  constexpr int n = 50000;
  auto prev = g.add_node(mk("n0", "Op"));
  for (int i = 1; i < n; ++i) {
    auto v = g.add_node(mk("n" + std::to_string(i), "Op"));
    g.add_input(v, prev);
    prev = v;
  }
  auto t = gpass::to_dot(g);
  CHECK(node_lines(t) == n);
  CHECK(edge_lines(t) == n - 1);
  CHECK(well_formed(t));
}

}  // namespace gpass_test_io_dot
