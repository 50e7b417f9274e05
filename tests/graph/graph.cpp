// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <gpass/graph/graph.hpp>
#include <gpass/graph/library.hpp>
#include <gpass/graph/reachability.hpp>
#include <gpass/graph/subgraph.hpp>
#include <gpass/graph/topological_order.hpp>

#include <algorithm>
#include <map>
#include <type_traits>
#include <utility>
#include <string>
#include <vector>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_graph_graph {

namespace {
using G = gpass::graph<>;

std::vector<std::string> names(const G& g, const std::vector<G::node_id>& v) {
  std::vector<std::string> r;
  for (auto n : v) r.push_back(g[n].name);
  return r;
}
}  // namespace

TEST_CASE("graph.graph.add_connect_remove") {
  G g;
  auto x = g.add_node({.name = "x", .op = "Placeholder"});
  auto y = g.add_node({.name = "y", .op = "Relu"});
  auto z = g.add_node({.name = "z", .op = "Add"});
  g.add_input(y, x);
  g.add_input(z, y);
  g.add_input(z, x);
  g.add_control(x, z);
  g.add_control(x, z);  // idempotent
  CHECK(g.num_nodes() == 3);
  CHECK(g.num_edges() == 4);
  CHECK(g.num_inputs(z) == 2);
  CHECK(g.input(z, 1).node == x);
  CHECK(g.control_inputs(z) == std::vector{x});
  CHECK(g.uses(x).size() == 2);
  CHECK_THROWS_AS(g.add_node({.name = "x", .op = "Other"}), gpass::error);
  CHECK_THROWS_WITH_AS(g.connect(x, 1, y, 1), doctest::Contains("output port 1 out of range"), gpass::error);
  CHECK_THROWS_WITH_AS(g.connect(x, 0, z, 0), doctest::Contains("already connected"), gpass::error);

  g.remove_node(y);
  CHECK(g.num_nodes() == 2);
  CHECK(g.num_edges() == 2);
  CHECK(g.input(z, 0).empty);
  CHECK(!g.find("y"));
  CHECK(g.serial(z) == 2);
  CHECK(g.serial_bound() == 3);
}

TEST_CASE("graph.graph.copy_is_deep_and_ordered") {
  G g;
  auto a = g.add_node({.name = "a", .op = "A"});
  auto b = g.add_node({.name = "b", .op = "B"});
  g.add_input(b, a);
  g.add_control(a, b);
  g.add_function("f", G{});
  G c = g;
  CHECK(c.num_nodes() == 2);
  CHECK(c.num_edges() == 2);
  CHECK(c[c.input(c.at("b"), 0).node].name == "a");
  CHECK(c.find_function("f") != nullptr);
  c[c.at("a")].op = "changed";
  CHECK(g[a].op == "A");
}

TEST_CASE("graph.graph.typed_attributes") {
  G g;
  constexpr gpass::attr_key<int> level{"level"};
  constexpr gpass::attr_key<std::string> wrong{"level"};
  CHECK(!g.has(level));
  CHECK_THROWS_AS(g.get(level), gpass::error);
  g.set(level, 2);
  CHECK(g.has(level));
  CHECK(g.get(level) == 2);
  CHECK_THROWS_AS(g.get(wrong), gpass::error);
  g.erase(level);
  CHECK(!g.has(level));
}

TEST_CASE("graph.graph.replace_node_and_rewire") {
  G g;
  auto x = g.add_node({.name = "x", .op = "X"});
  auto a = g.add_node({.name = "a", .op = "Identity"});
  auto b = g.add_node({.name = "b", .op = "Neg"});
  auto c = g.add_node({.name = "c", .op = "Neg"});
  g.add_input(a, x);
  g.add_input(b, a);
  g.add_input(c, a);
  CHECK(g.replace_uses(a, 0, x, 0) == 2);
  CHECK(g.input(b, 0).node == x);
  auto n = g.replace_node(b, {.name = "ignored", .op = "Abs"});
  CHECK(g[n].name == "b");
  CHECK(g[n].op == "Abs");
  CHECK(g.input(n, 0).node == x);
  g.erase_inputs(c, {0});
  CHECK(g.num_inputs(c) == 0);
}

TEST_CASE("graph.topological_order.orders_and_reports_cycles") {
  G g;
  auto c = g.add_node({.name = "c", .op = "C"});
  auto a = g.add_node({.name = "a", .op = "A"});
  auto b = g.add_node({.name = "b", .op = "B"});
  g.add_input(c, b);
  g.add_input(b, a);
  CHECK(names(g, gpass::topological_order(g)) == std::vector<std::string>{"a", "b", "c"});
  g.add_input(a, c);
  CHECK_THROWS_WITH_AS(gpass::topological_order(g), doctest::Contains("cycle: "), gpass::error);
  try {
    gpass::topological_order(g);
  } catch (const gpass::error& e) {
    std::string m = e.what();
    CHECK(m.find("a") != std::string::npos);
    CHECK(m.find("b") != std::string::npos);
    CHECK(m.find("c") != std::string::npos);
  }
}

TEST_CASE("graph.topological_order.deep_chain_no_recursion") {
  G g;
  auto prev = g.add_node({.name = "n0", .op = "X"});
  for (int i = 1; i < 200000; ++i) {
    auto n = g.add_node({.name = "n" + std::to_string(i), .op = "X"});
    g.add_input(n, prev);
    prev = n;
  }
  auto order = gpass::topological_order(g);
  CHECK(order.size() == 200000);
  CHECK(g[order.back()].name == "n199999");
}

TEST_CASE("graph.reachability.forward_and_backward") {
  G g;
  auto a = g.add_node({.name = "a", .op = "A"});
  auto b = g.add_node({.name = "b", .op = "B"});
  auto c = g.add_node({.name = "c", .op = "C"});
  auto d = g.add_node({.name = "d", .op = "D"});
  g.add_input(b, a);
  g.add_control(b, c);
  auto f = gpass::reachable_from(g, std::vector{a});
  CHECK(f[a]);
  CHECK(f[b]);
  CHECK(f[c]);
  CHECK(!f[d]);
  auto data = gpass::reachable_from(g, std::vector{a}, gpass::edge_filter::data_only);
  CHECK(!data[c]);
  auto back = gpass::reaching(g, std::vector{c});
  CHECK(back[a]);
  CHECK(!back[d]);
}

TEST_CASE("graph.subgraph.extracts_with_boundary") {
  G g;
  auto a = g.add_node({.name = "a", .op = "A"});
  auto b = g.add_node({.name = "b", .op = "B"});
  auto c = g.add_node({.name = "c", .op = "C"});
  g.add_input(b, a);
  g.add_input(c, b);
  g.add_input(c, a);
  auto r = gpass::extract_subgraph(g, std::vector{b, c});
  CHECK(r.graph.num_nodes() == 2);
  CHECK(r.graph.num_edges() == 1);
  REQUIRE(r.inputs.size() == 2);
  CHECK(r.inputs[0].node == "b");
  CHECK(r.inputs[0].producer == "a");
  CHECK(r.inputs[1].node == "c");
  CHECK(r.inputs[1].port == 1);
  CHECK(r.graph.input(r.graph.at("c"), 1).empty);
}

TEST_CASE("graph.graph.move_keeps_handles_valid") {
  G a;
  auto x = a.add_node({.name = "x", .op = "X"});
  auto y = a.add_node({.name = "y", .op = "Y"});
  a.add_input(y, x);
  G b(std::move(a));
  CHECK(a.num_nodes() == 0);
  CHECK(!a.find("x"));
  CHECK(b.at("y") == y);
  CHECK(b.input(y, 0).node == x);
  G c;
  c = std::move(b);
  CHECK(c.input(c.at("y"), 0).node == x);
  c.remove_node(x);
  CHECK(c.input(y, 0).empty);
  G d;
  d = c;  // copy assignment goes through a copy and a move
  CHECK(d.num_nodes() == 1);
  CHECK(d.num_inputs(d.at("y")) == 1);
  // a function added by move stays consistent
  G outer;
  G body;
  auto e = body.add_node({.name = "e", .op = "function_entry"});
  auto r = body.add_node({.name = "r", .op = "return"});
  body.add_input(r, e);
  auto& f = outer.add_function("f", std::move(body));
  CHECK(f.input(f.at("r"), 0).node == f.at("e"));
  f.remove_node(f.at("r"));
  CHECK(f.num_nodes() == 1);
}

TEST_CASE("graph.graph.control_edges_from_a_hub_stay_linear") {
  G g;
  auto hub = g.add_node({.name = "hub", .op = "NoOp"});
  std::vector<G::node_id> leaves;
  for (int i = 0; i < 100000; ++i) leaves.push_back(g.add_node({.name = "l" + std::to_string(i), .op = "X"}));
  for (auto l : leaves) g.add_control(hub, l);
  for (auto l : leaves) g.add_control(hub, l);  // duplicates are found through the short side
  CHECK(g.num_edges() == 100000);
  g.remove_control(hub, leaves[5]);
  CHECK(g.num_edges() == 99999);
  CHECK(!g.find_control(hub, leaves[5]));
  CHECK(g.find_control(hub, leaves[6]));
}

TEST_CASE("graph.graph.remove_nodes_if_bulk") {
  G g;
  auto hub = g.add_node({.name = "hub", .op = "Const"});
  auto sink = g.add_node({.name = "sink", .op = "Sum"});
  std::vector<G::node_id> mid;
  for (int i = 0; i < 50000; ++i) {
    auto m = g.add_node({.name = "m" + std::to_string(i), .op = "Neg"});
    g.add_input(m, hub);
    g.add_input(sink, m);
    g.add_control(hub, m);
    mid.push_back(m);
  }
  auto keep = g.add_node({.name = "keep", .op = "Neg"});
  g.add_input(keep, hub);
  // remove every odd m: hub fan-out and sink fan-in are huge, removal stays linear
  std::size_t n = g.remove_nodes_if([&](G::node_id v) {
    const auto& name = g[v].name;
    return name[0] == 'm' && (std::stoi(name.substr(1)) % 2 == 1);
  });
  CHECK(n == 25000);
  CHECK(g.num_nodes() == 25003);
  CHECK(g.num_edges() == 25000 * 3 + 1);
  CHECK(g.num_inputs(sink) == 50000);
  CHECK(g.input(sink, 1).empty);
  CHECK(!g.input(sink, 2).empty);
  CHECK(!g.find("m1"));
  CHECK(g.uses(hub).size() == 25001);
  CHECK(g.control_outputs(hub).size() == 25000);
  std::size_t edges = 0;
  for (auto e : g.edges()) {
    (void)e;
    ++edges;
  }
  CHECK(edges == g.num_edges());
  // then remove all but hub; the graph stays consistent
  g.remove_nodes_if([&](G::node_id v) { return v != hub; });
  CHECK(g.num_nodes() == 1);
  CHECK(g.num_edges() == 0);
  CHECK(!g.has_consumers(hub));
}

TEST_CASE("graph.name_index.random_against_reference") {
  // Random adds, renames and removals (single and bulk) on a graph, checked against a
  // std::map after every step: find() and at() agree, and erased names are gone.
  gpass::graph<> g;
  std::map<std::string, gpass::graph<>::node_id> ref;
  std::uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  auto check = [&] {
    REQUIRE(g.num_nodes() == ref.size());
    for (const auto& [name, v] : ref) {
      auto f = g.find(name);
      REQUIRE(f.has_value());
      CHECK(*f == v);
      CHECK(g[v].name == name);
    }
  };
  for (int step = 0; step < 4000; ++step) {
    const auto r = next() % 10;
    const std::string name = "n" + std::to_string(next() % 700);
    if (r < 5) {
      if (ref.contains(name)) {
        CHECK_THROWS_AS(g.add_node({.name = name, .op = "Relu"}), gpass::error);
      } else {
        ref[name] = g.add_node({.name = name, .op = "Relu"});
      }
    } else if (r < 7 && !ref.empty()) {
      auto it = ref.lower_bound(name);
      if (it == ref.end()) it = ref.begin();
      g.remove_node(it->second);
      ref.erase(it);
      CHECK_FALSE(g.find(name).has_value() != ref.contains(name));
    } else if (r < 9 && !ref.empty()) {
      auto it = ref.lower_bound(name);
      if (it == ref.end()) it = ref.begin();
      const std::string to = "m" + std::to_string(next() % 700);
      if (ref.contains(to)) {
        CHECK_THROWS_AS(g.rename(it->second, to), gpass::error);
      } else {
        auto v = it->second;
        g.rename(v, to);
        ref.erase(it);
        ref[to] = v;
      }
    } else {
      // bulk: remove every node whose name ends in the drawn digit
      const char d = static_cast<char>('0' + next() % 10);
      std::vector<gpass::graph<>::node_id> doomed;
      for (auto it = ref.begin(); it != ref.end();)
        if (it->first.back() == d) {
          doomed.push_back(it->second);
          it = ref.erase(it);
        } else {
          ++it;
        }
      g.remove_nodes(doomed);
    }
    if (step % 50 == 0) check();
  }
  check();
  for (int i = 0; i < 700; ++i) {
    const std::string n = "n" + std::to_string(i), m = "m" + std::to_string(i);
    CHECK(g.find(n).has_value() == ref.contains(n));
    CHECK(g.find(m).has_value() == ref.contains(m));
  }
  // A copy has its own index, equal in content.
  gpass::graph<> c(g);
  for (const auto& [name, v] : ref) CHECK(c[c.at(name)].name == name);
}

TEST_CASE("graph.library.all_graphs_preorder_nested") {
  // g has functions a and b; b has its own function c: every graph once, g first, then each
  // function before the functions of its library
  G c;
  c.add_node({.name = "in_c"});
  G b;
  b.add_node({.name = "in_b"});
  b.add_function("c", std::move(c));
  G g;
  g.add_function("a", G{});
  g.add_function("b", std::move(b));
  const auto all = gpass::all_graphs(g);
  REQUIRE(all.size() == 4);
  CHECK(all.front() == &g);
  const G* fb = g.find_function("b");
  const G* fc = fb->find_function("c");
  std::vector<const G*> seen(all.begin(), all.end());
  CHECK(std::count(seen.begin(), seen.end(), g.find_function("a")) == 1);
  CHECK(std::count(seen.begin(), seen.end(), fc) == 1);
  CHECK(std::find(seen.begin(), seen.end(), fb) < std::find(seen.begin(), seen.end(), fc));
  // on a const graph: pointers to const graphs, same graphs
  const auto call = gpass::all_graphs(std::as_const(g));
  static_assert(std::is_same_v<decltype(call), const std::vector<const G*>>);
  CHECK(std::vector<const G*>(call.begin(), call.end()) == seen);
}

}  // namespace gpass_test_graph_graph
