// SPDX-License-Identifier: Apache-2.0
// gpass::infer_attr: the generic fixed-point engine with toy policies (seed 004's InferAttr).

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gpass/analysis/infer_attr.hpp>
#include <gpass/graph/graph.hpp>

// The file's own namespace: test files are compiled in batches (tests/CMakeLists.txt).
namespace gpass_test_analysis_infer_attr {

namespace {

using G = gpass::graph<>;

// Forward only: the depth of each node (longest path from a source), -1 when unknown.
struct depth_policy {
  using value_type = int;
  int visits = 0;
  std::vector<int> initial(const G& g, G::node_id v) { return std::vector<int>(g[v].outputs.size(), -1); }
  std::vector<int> forward(const G& g, G::node_id v, const gpass::infer_attr_state<G, int>& s) {
    ++visits;
    int d = 0;
    for (std::size_t i = 0; i < g.num_inputs(v); ++i) {
      const int* in = s.input(g, v, static_cast<int>(i));
      if (!in || *in < 0) return std::vector<int>(g[v].outputs.size(), -1);
      d = std::max(d, *in + 1);
    }
    return std::vector<int>(g[v].outputs.size(), d);
  }
  bool is_known(int d) const { return d >= 0; }
};

// Forward and backward: a "width" that flows down from sources and up from sinks with a
// declared width (like a dtype hint on an output), as NNVM's InferType does both ways.
struct width_policy {
  using value_type = int;  // 0 = unknown
  std::vector<int> initial(const G& g, G::node_id v) {
    auto it = g[v].attrs.find("width");
    int w = it == g[v].attrs.end() ? 0 : static_cast<int>(it->second.as<std::int64_t>());
    return std::vector<int>(g[v].outputs.size(), w);
  }
  std::vector<int> forward(const G& g, G::node_id v, const gpass::infer_attr_state<G, int>& s) {
    std::vector<int> out = s.outputs(v);
    for (std::size_t i = 0; i < g.num_inputs(v); ++i)
      if (const int* in = s.input(g, v, static_cast<int>(i)); in && *in)
        for (auto& o : out)
          if (!o) o = *in;
    return out;
  }
  bool backward(const G& g, G::node_id v, gpass::infer_attr_state<G, int>& s) {
    bool changed = false;
    int w = s.outputs(v).empty() ? 0 : s.outputs(v)[0];
    if (!w) return false;
    for (std::size_t i = 0; i < g.num_inputs(v); ++i) {
      auto r = g.input(v, static_cast<int>(i));
      if (r.empty) continue;
      int& in = s.output(r.node, static_cast<std::size_t>(r.port));
      if (!in) {
        in = w;
        changed = true;
      }
    }
    return changed;
  }
  bool is_known(int w) const { return w != 0; }
};

// Depth, as depth_policy, plus an outside "offset" that stale() reports for one node: the
// confirming sweep visits only that node and what its change reaches
struct incremental_depth : depth_policy {
  static constexpr bool incremental = true;
  G::node_id bumped{};
  int offset = 0;
  bool bump_pending = false;
  std::vector<int> forward(const G& g, G::node_id v, const gpass::infer_attr_state<G, int>& s) {
    auto out = depth_policy::forward(g, v, s);
    if (v == bumped)
      for (auto& o : out)
        if (o >= 0) o = std::max(o, offset);
    return out;
  }
  bool stale(const G&, G::node_id v, const gpass::infer_attr_state<G, int>&) { return bump_pending && v == bumped; }
  bool end_sweep() {
    // after the first sweep, the outside fact changes once
    if (offset != 0) {
      bump_pending = false;
      return false;
    }
    offset = 10;
    bump_pending = true;
    return true;
  }
};

static_assert(gpass::infer_attr_policy<depth_policy, G>);
static_assert(gpass::infer_attr_policy<width_policy, G>);

}  // namespace

TEST_CASE("analysis.infer_attr.forward_sweep_on_a_dag") {
  G g;
  auto a = g.add_node({.name = "a", .op = "Src"});
  auto b = g.add_node({.name = "b", .op = "Op"});
  auto c = g.add_node({.name = "c", .op = "Op"});
  // inserted in reverse dependency order: the engine must sort
  g.add_input(c, b);
  g.add_input(b, a);
  g.add_input(c, a);
  depth_policy p;
  auto r = gpass::infer_attr(g, p);
  CHECK(r.converged);
  CHECK(r.num_sweeps == 2);  // one to compute, one to see nothing changes
  CHECK(r.num_unknown == 0);
  CHECK(r.state.output(a, 0) == 0);
  CHECK(r.state.output(b, 0) == 1);
  CHECK(r.state.output(c, 0) == 2);
  CHECK(p.visits == 6);
}

TEST_CASE("analysis.infer_attr.backward_sweep_fills_producers") {
  G g;
  auto x = g.add_node({.name = "x", .op = "Src"});
  auto y = g.add_node({.name = "y", .op = "Op"});
  auto z = g.add_node({.name = "z", .op = "Op", .attrs = {{"width", std::int64_t{32}}}});
  auto w = g.add_node({.name = "w", .op = "Op"});
  g.add_input(y, x);
  g.add_input(z, y);
  g.add_input(w, x);
  width_policy p;
  auto r = gpass::infer_attr(g, p);
  CHECK(r.converged);
  CHECK(r.state.output(x, 0) == 32);  // from z, backward through y
  CHECK(r.state.output(w, 0) == 32);  // then forward from x
  CHECK(r.num_unknown == 0);
}

TEST_CASE("analysis.infer_attr.cycles_are_tolerated_and_unknowns_counted") {
  // a -> b -> c -> b (a TF v1 style cycle): depth never becomes known on the cycle
  G g;
  auto a = g.add_node({.name = "a", .op = "Src"});
  auto b = g.add_node({.name = "b", .op = "Merge"});
  auto c = g.add_node({.name = "c", .op = "Op"});
  g.add_input(b, a);
  g.add_input(c, b);
  g.add_input(b, c);
  depth_policy p;
  auto r = gpass::infer_attr(g, p);
  CHECK(r.converged);
  CHECK(r.num_unknown == 2);
  CHECK(r.state.output(a, 0) == 0);
}

TEST_CASE("analysis.infer_attr.incremental_policies_recompute_only_what_changed") {
  G g;
  auto a = g.add_node({.name = "a", .op = "Src"});
  auto b = g.add_node({.name = "b", .op = "Op"});
  auto c = g.add_node({.name = "c", .op = "Op"});
  auto x = g.add_node({.name = "x", .op = "Src"});
  auto y = g.add_node({.name = "y", .op = "Op"});
  g.add_input(b, a);
  g.add_input(c, b);
  g.add_input(y, x);
  incremental_depth p;
  p.bumped = b;
  auto r = gpass::infer_attr(g, p);
  CHECK(r.converged);
  CHECK(r.state.output(b, 0) == 10);
  CHECK(r.state.output(c, 0) == 11);  // reached through b's change
  CHECK(r.state.output(y, 0) == 1);
  // sweep 1: all 5; sweep 2: b (stale) and c (its input changed); sweep 3: nothing
  CHECK(p.visits == 7);
  CHECK(r.num_sweeps == 3);
}

TEST_CASE("analysis.infer_attr.max_sweeps_bounds_a_non_converging_policy") {
  struct counter_policy {
    using value_type = int;
    std::vector<int> initial(const G& g, G::node_id v) { return std::vector<int>(g[v].outputs.size(), 0); }
    std::vector<int> forward(const G&, G::node_id v, const gpass::infer_attr_state<G, int>& s) {
      auto o = s.outputs(v);
      for (auto& x : o) ++x;  // never stable
      return o;
    }
    bool is_known(int) const { return true; }
  };
  G g;
  g.add_node({.name = "a", .op = "Src"});
  counter_policy p;
  auto r = gpass::infer_attr(g, p, gpass::infer_attr_options{5});
  CHECK_FALSE(r.converged);
  CHECK(r.num_sweeps == 5);
}

}  // namespace gpass_test_analysis_infer_attr
