// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file synthetic_graph.hpp
/// A deterministic synthetic computation graph for the graph benchmarks.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <gpass/graph/graph.hpp>

namespace gpass_bench {

/// splitmix64: a tiny PRNG whose sequence is the same on every platform and standard library
/// (std::uniform_int_distribution is not), so a seed always gives the same graph.
class splitmix64 {
 public:
  explicit splitmix64(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n) (n > 0; the modulo bias is irrelevant here).
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  /// True with probability `percent`/100.
  bool chance(unsigned percent) { return below(100) < percent; }

 private:
  std::uint64_t s_;
};

/// What `make_synthetic_graph` built.
struct synthetic_stats {
  std::size_t live = 0;          ///< nodes on a path to the return (args and return included)
  std::size_t dead = 0;          ///< nodes of dead branches (connected, but feed no root)
  std::size_t disconnected = 0;  ///< nodes with no edge at all
  std::size_t edges = 0;
};

/// Builds a graph of about `n` nodes (exactly `n` for n >= 64), deterministically from `seed`:
/// - a layered DAG of width 32: layer 0 is 32 `arg` nodes; node j of every later layer takes
///   node j of the previous layer as input 0 (so every layer is fully consumed, hence live), and
///   0-2 more inputs (fan-in 1-3), 85% from the previous layer, 15% skip connections from one of
///   the 16 layers before; 1% of nodes also get a control edge from a node of the previous layer;
/// - about 10% of the nodes are dead branches: chains of 1-4 nodes hanging off live nodes
///   (inputs from live nodes or the previous node of the chain), consumed by nothing live;
/// - about 5% are disconnected `Const` nodes;
/// - a final `return` consuming every node of the last layer (and the nodes of the layer
///   before that a partial last layer leaves unconsumed).
/// Dead and disconnected nodes are interleaved with the live ones in insertion order, as in a
/// real imported graph. Ops other than `arg`/`return` are unknown to the registry (pure).
template <class G>
G make_synthetic_graph(std::size_t n, std::uint64_t seed, synthetic_stats* stats = nullptr) {
  constexpr std::size_t width = 32;
  constexpr std::size_t skip_layers = 16;
  static const char* const ops[] = {"Add", "Mul", "Relu", "MatMul", "Conv", "Sigmoid", "Concat", "Sub"};
  using node_id = typename G::node_id;
  G g;
  splitmix64 rng(seed);
  synthetic_stats st;
  std::vector<node_id> live;  // live nodes in creation order; layer k is [k*width, (k+1)*width)
  live.reserve(n);
  std::size_t counter = 0;
  auto recent = [&] { return live[live.size() - 1 - rng.below(live.size() < 64 ? live.size() : 64)]; };
  auto fresh = [&](const char* op) {
    typename G::node_type nd;
    nd.name = "n" + std::to_string(counter++);
    nd.op = op;
    return g.add_node(std::move(nd));
  };
  // Budget: ~85% live, ~10% dead, ~5% disconnected, +1 for the return.
  const std::size_t total = n < 64 ? 64 : n;
  const std::size_t dead_target = total / 10;
  const std::size_t disc_target = total / 20;
  const std::size_t live_target = total - dead_target - disc_target - 1;

  for (std::size_t j = 0; j < width; ++j) live.push_back(fresh("arg"));
  std::size_t made_live = width;
  for (std::size_t layer = 1; made_live < live_target; ++layer) {
    for (std::size_t j = 0; j < width && made_live < live_target; ++j) {
      node_id v = fresh(ops[rng.below(8)]);
      const std::size_t prev_begin = (layer - 1) * width;
      // input 0: the same column of the previous layer (keeps every node consumed)
      g.add_input(v, live[prev_begin + j]);
      const std::size_t extra = rng.below(3);
      for (std::size_t k = 0; k < extra; ++k) {
        std::size_t src;
        if (rng.chance(85) || layer == 1) {
          src = prev_begin + rng.below(width);
        } else {
          const std::size_t back = 1 + rng.below(layer - 1 < skip_layers ? layer - 1 : skip_layers);
          src = (layer - 1 - back) * width + rng.below(width);
        }
        g.add_input(v, live[src]);
      }
      if (rng.chance(1)) g.add_control(live[prev_begin + rng.below(width)], v);
      live.push_back(v);
      ++made_live;
      // interleave dead branches and disconnected nodes
      if (st.dead < dead_target && rng.below(live_target) < dead_target * 10 / 25) {
        // chains of 1-4 nodes (mean 2.5): start a chain with probability dead/(2.5*live)
        const std::size_t len = 1 + rng.below(4);
        node_id prev_dead{};
        for (std::size_t c = 0; c < len && st.dead < dead_target; ++c) {
          node_id d = fresh(ops[rng.below(8)]);
          g.add_input(d, c == 0 ? recent() : prev_dead);
          if (rng.chance(50)) g.add_input(d, recent());
          prev_dead = d;
          ++st.dead;
        }
      }
      if (st.disconnected < disc_target && rng.below(live_target) < disc_target) {
        fresh("Const");
        ++st.disconnected;
      }
    }
  }
  // Top up the quotas (deterministically) so that the sizes are exact.
  while (st.dead < dead_target) {
    node_id d = fresh("Neg");
    g.add_input(d, live[rng.below(live.size())]);
    ++st.dead;
  }
  while (st.disconnected < disc_target) {
    fresh("Const");
    ++st.disconnected;
  }
  // The return consumes the last layer.
  typename G::node_type r;
  r.name = "return";
  r.op = "return";
  r.outputs.clear();
  node_id ret = g.add_node(std::move(r));
  const std::size_t last_begin = (live.size() - 1) / width * width;
  for (std::size_t i = last_begin; i < live.size(); ++i) g.add_input(ret, live[i]);
  // Nodes of the last full layers that the (possibly partial) last layer does not consume
  // would be dead; consume them too so that "live" is exact.
  if (last_begin >= width)
    for (std::size_t i = last_begin - width + (live.size() - last_begin); i < last_begin; ++i)
      g.add_input(ret, live[i]);
  st.live = live.size() + 1;
  st.edges = g.num_edges();
  if (stats) *stats = st;
  return g;
}

}  // namespace gpass_bench

namespace gpass_bench {

/// Allocates (and never frees) `count` blocks of the size of a small hash-map node.
///
/// `graph`'s copy constructor frees one such node per graph node (its old-to-new node table)
/// when it returns. glibc keeps those blocks on free lists and charges their sorting or
/// consolidation, O(count) scattered memory accesses, to whichever later allocation first
/// needs it: the first scratch vector of the timed operation. Taking the blocks back before
/// timing leaves the operation only its own costs. Call it only in a process that is about to
/// exit (the benchmark's forked children).
inline void drain_small_free_chunks(std::size_t count) {
  auto* hold = static_cast<void**>(std::malloc(count * sizeof(void*)));
  if (!hold) return;
  for (std::size_t i = 0; i < count; ++i) hold[i] = std::malloc(3 * sizeof(void*));
  // deliberately leaked: the process exits right after the measurement
  asm volatile("" : : "r"(hold) : "memory");
}

}  // namespace gpass_bench
