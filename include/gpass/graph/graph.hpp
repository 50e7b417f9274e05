// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file graph.hpp
/// `gpass::graph<Node, Edge, Attrs>`: the computation graph, over a Boost.Graph `adjacency_list`.

#include <any>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <boost/range/iterator_range.hpp>

#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/graph/attr_key.hpp>
#include <gpass/graph/edge.hpp>
#include <gpass/graph/name_index.hpp>
#include <gpass/graph/node.hpp>

namespace gpass {

/// A computation graph: named nodes (`Node`, default `gpass::node`) connected by data edges
/// `(src_port -> dst_port)` and control edges (`Edge`, default `gpass::edge`), graph-level
/// attributes (`Attrs`, default `gpass::attribute_map`, printed by the text IR), typed
/// attributes (`attr_key<T>`, seed 001's Get/Set/Has), and a library of functions (nested
/// graphs: loop bodies, conditions, branches) referenced by `function_ref` attributes.
///
/// Storage is a `boost::adjacency_list<listS, listS, bidirectionalS>`: node handles
/// (`node_id`) stay valid until their node is removed, removal is O(degree), and iteration
/// follows insertion order, so the same input always gives the same output. Every node
/// also has a serial number (`serial(n)`, below `serial_bound()`) for dense side tables.
///
/// A node has ordered input ports; each is connected to exactly one producer output, or
/// empty (an omitted optional input). Its output ports are `node.outputs` (one type each).
/// Change a node's name through `rename()`, never by assigning `g[n].name`: the name index
/// (`find`, `at`) is kept in step only by `add_node`, `rename` and the removals.
/// \code
///   gpass::graph<> g;
///   auto x = g.add_node({.name = "x", .op = "Placeholder"});
///   auto y = g.add_node({.name = "y", .op = "Relu"});
///   g.add_input(y, x, 0);                 // x:0 -> y input 0
///   for (auto n : g.nodes()) std::cout << g[n].name << '\n';
/// \endcode
template <node_like Node = gpass::node, edge_like Edge = gpass::edge, class Attrs = attribute_map>
class graph {
  struct vertex_data;
  using impl_type = boost::adjacency_list<boost::listS, boost::listS, boost::bidirectionalS, vertex_data, Edge>;

 public:
  using node_type = Node;
  using edge_type = Edge;
  using attrs_type = Attrs;
  using node_id = typename impl_type::vertex_descriptor;  ///< stable handle of a node
  using edge_id = typename impl_type::edge_descriptor;    ///< stable handle of an edge
  using function_library = std::map<std::string, std::unique_ptr<graph>, std::less<>>;

  /// One input port as seen from its consumer: the producer and its output port, or empty.
  struct input_ref {
    node_id node{};
    int port = 0;
    bool empty = true;
  };
  /// One data use of a node's output: the consumer and its input port, and the output port.
  struct use_ref {
    node_id node;
    int src_port;
    int dst_port;
  };

 private:
  struct vertex_data {
    Node node;
    std::uint64_t serial = 0;
    std::vector<std::optional<edge_id>> inputs;  // one slot per input port
  };

 public:
  graph() = default;
  /// Moves keep every `node_id` valid (they now refer to nodes of the new owner); the
  /// moved-from graph is empty.
  graph(graph&& o) noexcept
      : g_(std::exchange(o.g_, std::make_unique<impl_type>())),
        names_(std::move(o.names_)),
        next_serial_(std::exchange(o.next_serial_, 0)),
        attrs_(std::move(o.attrs_)),
        typed_(std::move(o.typed_)),
        functions_(std::move(o.functions_)) {
    o.names_.clear();
  }
  graph& operator=(graph&& o) noexcept {
    if (this != &o) {
      g_ = std::exchange(o.g_, std::make_unique<impl_type>());
      names_ = std::move(o.names_);
      o.names_.clear();
      next_serial_ = std::exchange(o.next_serial_, 0);
      attrs_ = std::move(o.attrs_);
      typed_ = std::move(o.typed_);
      functions_ = std::move(o.functions_);
    }
    return *this;
  }
  /// A deep copy: same nodes (same serial numbers), edges, attributes and functions.
  graph(const graph& o) { copy_from(o); }
  graph& operator=(const graph& o) {
    if (this != &o) {
      graph tmp(o);
      *this = std::move(tmp);
    }
    return *this;
  }

  // ---- nodes ------------------------------------------------------------------------

  /// Adds a node with no inputs. An empty name gets a fresh unique one (`op_N`); a name
  /// already in the graph throws.
  node_id add_node(Node n) {
    if (n.name.empty()) n.name = unique_name(n.op.empty() ? std::string("node") : n.op);
    if (names_.contains(n.name, name_of())) throw_node_error("duplicate node name", n.name, n.op);
    // a default vertex, then the node moved in (Boost's add_vertex copies its property)
    node_id v = boost::add_vertex(*g_);
    (*g_)[v].node = std::move(n);
    (*g_)[v].serial = next_serial_++;
    names_.insert((*g_)[v].node.name, v);
    return v;
  }

  /// Removes a node and every edge touching it. Consumers of its outputs are left with
  /// empty input slots.
  void remove_node(node_id v) {
    for (auto [e, end] = boost::out_edges(v, (*g_)); e != end; ++e) {
      const Edge& ed = (*g_)[*e];
      if (ed.dst_port >= 0 && boost::target(*e, (*g_)) != v) clear_slot(boost::target(*e, (*g_)), ed.dst_port);
    }
    boost::clear_vertex(v, (*g_));
    names_.erase((*g_)[v].node.name, v);
    boost::remove_vertex(v, (*g_));
  }

  /// Removes every node for which `dead(node_id)` is true, with their edges, in O(V+E)
  /// overall whatever the degrees (removing nodes one by one costs O(degree) per edge at a
  /// shared neighbour, which is quadratic around a high fan-out node). Consumers of removed
  /// nodes are left with empty input slots. Returns the number of nodes removed.
  template <class Pred>
  std::size_t remove_nodes_if(Pred dead) {
    std::vector<node_id> doomed;
    for (auto v : nodes())
      if (dead(v)) doomed.push_back(v);
    remove_nodes(doomed);
    return doomed.size();
  }

  /// Removes the listed nodes (each at most once) with their edges, like `remove_nodes_if`,
  /// for a caller that already has the list: O(size of the list + edges touching it), with
  /// no walk over the other nodes (beyond two side tables of a byte per serial number).
  void remove_nodes(const std::vector<node_id>& doomed) {
    auto& g = *g_;
    if (doomed.empty()) return;
    std::vector<char> is_dead(next_serial_, 0);
    for (auto d : doomed) is_dead[g[d].serial] = 1;
    auto dead_node = [&](node_id v) { return is_dead[g[v].serial] != 0; };
    // Live neighbours: clear input slots fed by dead producers, and collect them so that each
    // edge list is filtered in one pass.
    std::vector<char> touched(next_serial_, 0);
    std::vector<node_id> live;
    auto touch = [&](node_id v) {
      if (!dead_node(v) && !touched[g[v].serial]) {
        touched[g[v].serial] = 1;
        live.push_back(v);
      }
    };
    for (auto d : doomed) {
      for (auto [e, end] = boost::out_edges(d, g); e != end; ++e) {
        auto t = boost::target(*e, g);
        if (dead_node(t)) continue;
        if (g[*e].src_port != control_port) clear_slot(t, g[*e].dst_port);
        touch(t);
      }
      for (auto [e, end] = boost::in_edges(d, g); e != end; ++e) touch(boost::source(*e, g));
    }
    // Every edge touching a dead node leaves the global edge list exactly once: through its
    // dead source's out-list, or (live source) through its dead target's in-list.
    for (auto d : doomed) {
      for (const auto& se : g.out_edge_list(d)) g.m_edges.erase(se.get_iter());
      for (const auto& se : boost::in_edge_list(g, d))
        if (!dead_node(se.get_target())) g.m_edges.erase(se.get_iter());
    }
    for (auto u : live) {
      g.out_edge_list(u).remove_if([&](const auto& se) { return dead_node(se.get_target()); });
      boost::in_edge_list(g, u).remove_if([&](const auto& se) { return dead_node(se.get_target()); });
    }
    for (auto d : doomed) {
      g.out_edge_list(d).clear();
      boost::in_edge_list(g, d).clear();
      names_.erase(g[d].node.name, d);
      boost::remove_vertex(d, g);
    }
  }

  /// Renames a node; throws when the new name is taken.
  void rename(node_id v, std::string name) {
    if (name == (*g_)[v].node.name) return;
    if (names_.contains(name, name_of())) throw_node_error("cannot rename to '" + name + "': name taken", (*g_)[v].node.name, (*g_)[v].node.op);
    names_.erase((*g_)[v].node.name, v);
    (*g_)[v].node.name = std::move(name);
    names_.insert((*g_)[v].node.name, v);
  }

  /// A name not used in the graph, derived from `base` (`base`, `base_1`, `base_2`, ...).
  std::string unique_name(std::string_view base) const {
    if (!names_.contains(base, name_of())) return std::string(base);
    std::string b(base);
    for (std::uint64_t i = 1;; ++i) {
      std::string c = b + "_" + std::to_string(i);
      if (!names_.contains(c, name_of())) return c;
    }
  }

  Node& operator[](node_id v) { return (*g_)[v].node; }
  const Node& operator[](node_id v) const { return (*g_)[v].node; }
  /// The edge's ports.
  const Edge& operator[](edge_id e) const { return (*g_)[e]; }

  /// The node called `name`, if any. O(1).
  std::optional<node_id> find(std::string_view name) const {
    return names_.find(name, name_of());
  }
  /// The node called `name`; throws when there is none.
  node_id at(std::string_view name) const {
    auto v = names_.find(name, name_of());
    if (!v) throw error("no node named '" + std::string(name) + "'");
    return *v;
  }

  /// All nodes, in insertion order.
  auto nodes() const { return boost::make_iterator_range(boost::vertices((*g_))); }
  std::size_t num_nodes() const noexcept { return boost::num_vertices((*g_)); }
  /// Number of edges, data and control.
  std::size_t num_edges() const noexcept { return boost::num_edges((*g_)); }
  bool empty() const noexcept { return num_nodes() == 0; }

  /// The serial number of a node: unique in this graph, never reused, increasing with creation.
  std::uint64_t serial(node_id v) const noexcept { return (*g_)[v].serial; }
  /// One more than the largest serial number ever given: the size for side tables indexed by serial.
  std::uint64_t serial_bound() const noexcept { return next_serial_; }
  /// Renumbers serials to 0..n-1 in node order (makes side tables dense after many removals).
  void compact_serials() {
    std::uint64_t i = 0;
    for (auto v : nodes()) (*g_)[v].serial = i++;
    next_serial_ = i;
  }

  // ---- ports and edges --------------------------------------------------------------

  /// Number of input ports (connected or empty) of a node.
  std::size_t num_inputs(node_id v) const noexcept { return (*g_)[v].inputs.size(); }
  /// Number of output ports of a node.
  std::size_t num_outputs(node_id v) const noexcept { return (*g_)[v].node.outputs.size(); }
  /// Resizes the node's input ports; dropped ports are disconnected.
  void set_num_inputs(node_id v, std::size_t n) {
    auto& in = (*g_)[v].inputs;
    for (std::size_t i = n; i < in.size(); ++i)
      if (in[i]) boost::remove_edge(*in[i], (*g_));
    in.resize(n);
  }

  /// Connects `src:src_port` to input port `dst_port` of `dst` (ports grow as needed; the
  /// port must be empty). Throws when `src_port` is not an output port of `src`.
  edge_id connect(node_id src, int src_port, node_id dst, int dst_port) {
    if (src_port < 0 || static_cast<std::size_t>(src_port) >= num_outputs(src))
      throw_node_error("output port " + std::to_string(src_port) + " out of range (node has " +
                           std::to_string(num_outputs(src)) + " outputs)",
                       (*g_)[src].node.name, (*g_)[src].node.op);
    if (dst_port < 0) throw_node_error("negative input port", (*g_)[dst].node.name, (*g_)[dst].node.op);
    auto& in = (*g_)[dst].inputs;
    if (static_cast<std::size_t>(dst_port) >= in.size()) in.resize(dst_port + 1);
    if (in[dst_port])
      throw_node_error("input " + std::to_string(dst_port) + " is already connected", (*g_)[dst].node.name,
                       (*g_)[dst].node.op);
    auto [e, ok] = boost::add_edge(src, dst, Edge{src_port, dst_port}, (*g_));
    (void)ok;
    (*g_)[dst].inputs[dst_port] = e;
    return e;
  }
  /// Appends an input port to `dst` connected to `src:src_port`.
  edge_id add_input(node_id dst, node_id src, int src_port = 0) {
    return connect(src, src_port, dst, static_cast<int>(num_inputs(dst)));
  }
  /// Appends an empty (omitted optional) input port to `dst`.
  void add_empty_input(node_id dst) { (*g_)[dst].inputs.emplace_back(); }

  /// Adds a control edge `src -> dst` (dst runs after src); no-op when it already exists.
  /// The duplicate check scans the shorter of src's out-edges and dst's in-edges, so adding
  /// many control edges from one node stays linear.
  void add_control(node_id src, node_id dst) {
    if (find_control(src, dst)) return;
    boost::add_edge(src, dst, Edge{control_port, control_port}, (*g_));
  }
  /// Removes the control edge `src -> dst` if present.
  void remove_control(node_id src, node_id dst) {
    if (auto e = find_control(src, dst)) boost::remove_edge(*e, (*g_));
  }
  /// The control edge `src -> dst`, if present. O(min(out_degree(src), in_degree(dst))).
  std::optional<edge_id> find_control(node_id src, node_id dst) const {
    auto& g = *g_;
    if (boost::out_degree(src, g) <= boost::in_degree(dst, g)) {
      for (auto [e, end] = boost::out_edges(src, g); e != end; ++e)
        if (boost::target(*e, g) == dst && g[*e].src_port == control_port) return *e;
    } else {
      for (auto [e, end] = boost::in_edges(dst, g); e != end; ++e)
        if (boost::source(*e, g) == src && g[*e].src_port == control_port) return *e;
    }
    return std::nullopt;
  }

  /// Disconnects input port `port` of `v`, leaving it empty.
  void disconnect_input(node_id v, int port) {
    auto& slot = (*g_)[v].inputs.at(port);
    if (slot) {
      boost::remove_edge(*slot, (*g_));
      slot.reset();
    }
  }
  /// Rewires input port `port` of `v` to `src:src_port`.
  void set_input(node_id v, int port, node_id src, int src_port) {
    disconnect_input(v, port);
    connect(src, src_port, v, port);
  }
  /// Removes every input port of `v` whose index is in `ports` and renumbers the others.
  void erase_inputs(node_id v, std::vector<int> ports) {
    std::vector<input_ref> keep;
    std::vector<bool> drop(num_inputs(v), false);
    for (int p : ports) drop.at(p) = true;
    for (std::size_t i = 0; i < num_inputs(v); ++i)
      if (!drop[i]) keep.push_back(input(v, static_cast<int>(i)));
    set_num_inputs(v, 0);
    for (const auto& r : keep) {
      if (r.empty) add_empty_input(v);
      else add_input(v, r.node, r.port);
    }
  }

  /// Input port `port` of `v`.
  input_ref input(node_id v, int port) const {
    const auto& slot = (*g_)[v].inputs.at(port);
    if (!slot) return {};
    return {boost::source(*slot, (*g_)), (*g_)[*slot].src_port, false};
  }
  /// All input ports of `v`, in port order.
  std::vector<input_ref> inputs(node_id v) const {
    std::vector<input_ref> r;
    r.reserve(num_inputs(v));
    for (std::size_t i = 0; i < num_inputs(v); ++i) r.push_back(input(v, static_cast<int>(i)));
    return r;
  }
  /// The edge of input port `port`, if connected.
  std::optional<edge_id> input_edge(node_id v, int port) const { return (*g_)[v].inputs.at(port); }

  /// Nodes with a control edge into `v`, in edge order.
  std::vector<node_id> control_inputs(node_id v) const {
    std::vector<node_id> r;
    for (auto [e, end] = boost::in_edges(v, (*g_)); e != end; ++e)
      if ((*g_)[*e].src_port == control_port) r.push_back(boost::source(*e, (*g_)));
    return r;
  }
  /// Nodes with a control edge from `v`, in edge order.
  std::vector<node_id> control_outputs(node_id v) const {
    std::vector<node_id> r;
    for (auto [e, end] = boost::out_edges(v, (*g_)); e != end; ++e)
      if ((*g_)[*e].src_port == control_port) r.push_back(boost::target(*e, (*g_)));
    return r;
  }

  /// Every data use of any output of `v`.
  std::vector<use_ref> uses(node_id v) const {
    std::vector<use_ref> r;
    for (auto [e, end] = boost::out_edges(v, (*g_)); e != end; ++e)
      if ((*g_)[*e].src_port != control_port) r.push_back({boost::target(*e, (*g_)), (*g_)[*e].src_port, (*g_)[*e].dst_port});
    return r;
  }
  /// Data uses of output `port` of `v`.
  std::vector<use_ref> uses(node_id v, int port) const {
    std::vector<use_ref> r;
    for (auto [e, end] = boost::out_edges(v, (*g_)); e != end; ++e)
      if ((*g_)[*e].src_port == port) r.push_back({boost::target(*e, (*g_)), (*g_)[*e].src_port, (*g_)[*e].dst_port});
    return r;
  }
  /// True when any output of `v` has a data use, or `v` has a control successor.
  bool has_consumers(node_id v) const noexcept { return boost::out_degree(v, (*g_)) != 0; }
  /// Number of incoming edges (data and control).
  std::size_t in_degree(node_id v) const noexcept { return boost::in_degree(v, (*g_)); }
  /// Number of outgoing edges (data and control).
  std::size_t out_degree(node_id v) const noexcept { return boost::out_degree(v, (*g_)); }

  /// Rewires every data use of `from:from_port` to `to:to_port`. Returns the number rewired.
  std::size_t replace_uses(node_id from, int from_port, node_id to, int to_port) {
    auto us = uses(from, from_port);
    for (const auto& u : us) set_input(u.node, u.dst_port, to, to_port);
    return us.size();
  }
  /// Rewires every data use of every output of `from` to the same port of `to`, and moves its
  /// control successors to `to`.
  void replace_all_uses(node_id from, node_id to) {
    for (const auto& u : uses(from)) set_input(u.node, u.dst_port, to, u.src_port);
    for (auto c : control_outputs(from)) {
      remove_control(from, c);
      if (c != to) add_control(to, c);
    }
  }
  /// Replaces `old` by a new node `n` that takes over its name, inputs, control edges and uses
  /// (uses of output k of `old` become uses of output k of the new node). Returns the new node.
  node_id replace_node(node_id old, Node n) {
    std::string name = (*g_)[old].node.name;
    auto ins = inputs(old);
    auto cins = control_inputs(old);
    rename(old, unique_name(name + ".replaced"));
    n.name = name;
    node_id v = add_node(std::move(n));
    for (const auto& r : ins) {
      if (r.empty) add_empty_input(v);
      else add_input(v, r.node, r.port);
    }
    for (auto c : cins) add_control(c, v);
    replace_all_uses(old, v);
    remove_node(old);
    return v;
  }

  /// The underlying Boost.Graph (for BGL algorithms). Do not add or remove data edges through
  /// it: the graph keeps its input slots in step with its edges.
  const impl_type& boost_graph() const noexcept { return (*g_); }
  /// Source and target of an edge.
  node_id source(edge_id e) const { return boost::source(e, (*g_)); }
  node_id target(edge_id e) const { return boost::target(e, (*g_)); }
  /// All edges (data and control), grouped by source node.
  auto edges() const { return boost::make_iterator_range(boost::edges((*g_))); }
  /// Outgoing edges of a node (data and control).
  auto out_edges(node_id v) const { return boost::make_iterator_range(boost::out_edges(v, (*g_))); }
  /// Incoming edges of a node (data and control).
  auto in_edges(node_id v) const { return boost::make_iterator_range(boost::in_edges(v, (*g_))); }

  // ---- graph attributes -------------------------------------------------------------

  /// The graph-level attributes (`Attrs`), e.g. its name and producer.
  Attrs& attrs() noexcept { return attrs_; }
  const Attrs& attrs() const noexcept { return attrs_; }

  /// Sets a typed attribute (seed 001 `Set`).
  template <class T>
  void set(attr_key<T> key, T value) {
    typed_.insert_or_assign(std::string(key.name), std::any(std::move(value)));
  }
  /// True when a typed attribute is set (seed 001 `Has`).
  template <class T>
  bool has(attr_key<T> key) const {
    return typed_.find(key.name) != typed_.end();
  }
  /// True when a typed attribute called `name` is set, whatever its type (seed 001's
  /// `Has(name)`; used to check a pass's required graph attributes).
  bool has_attr_named(std::string_view name) const { return typed_.find(name) != typed_.end(); }
  /// A typed attribute (seed 001 `Get`); throws when unset or set with another type.
  template <class T>
  T& get(attr_key<T> key) {
    auto it = typed_.find(key.name);
    if (it == typed_.end()) throw error("graph attribute '" + std::string(key.name) + "' is not set");
    if (T* p = std::any_cast<T>(&it->second)) return *p;
    throw error("graph attribute '" + std::string(key.name) + "' has type " + it->second.type().name() +
                ", not " + typeid(T).name());
  }
  template <class T>
  const T& get(attr_key<T> key) const {
    return const_cast<graph*>(this)->get(key);
  }
  /// Removes a typed attribute.
  template <class T>
  void erase(attr_key<T> key) {
    auto it = typed_.find(key.name);
    if (it != typed_.end()) typed_.erase(it);
  }

  // ---- function library -------------------------------------------------------------

  /// The functions (nested graphs) of this graph, by name, in name order.
  function_library& functions() noexcept { return functions_; }
  const function_library& functions() const noexcept { return functions_; }
  /// The function called `name`, or nullptr.
  graph* find_function(std::string_view name) {
    auto it = functions_.find(name);
    return it == functions_.end() ? nullptr : it->second.get();
  }
  const graph* find_function(std::string_view name) const {
    auto it = functions_.find(name);
    return it == functions_.end() ? nullptr : it->second.get();
  }
  /// Adds (or replaces) a function and returns it.
  graph& add_function(std::string name, graph body) {
    auto p = std::make_unique<graph>(std::move(body));
    auto& slot = functions_[std::move(name)];
    slot = std::move(p);
    return *slot;
  }
  /// A function name not used yet, derived from `base`.
  std::string unique_function_name(std::string_view base) const {
    if (!functions_.contains(base)) return std::string(base);
    for (std::uint64_t i = 1;; ++i) {
      std::string c = std::string(base) + "_" + std::to_string(i);
      if (!functions_.contains(c)) return c;
    }
  }

 private:
  void clear_slot(node_id v, int port) {
    auto& in = (*g_)[v].inputs;
    if (static_cast<std::size_t>(port) < in.size()) in[port].reset();
  }

  // The name index compares a probed name with the node's own.
  auto name_of() const {
    return [g = g_.get()](node_id v) -> std::string_view { return (*g)[v].node.name; };
  }

  void copy_from(const graph& o) {
    // old -> new node, indexed by serial (serials are unique and below serial_bound())
    std::vector<node_id> map(o.next_serial_);
    auto to_new = [&](node_id v) { return map[(*o.g_)[v].serial]; };
    names_.reserve(o.num_nodes());
    for (auto v : o.nodes()) {
      node_id w = boost::add_vertex(*g_);  // then one copy of the node (not two)
      (*g_)[w].node = o[v];
      (*g_)[w].serial = (*o.g_)[v].serial;
      names_.insert((*g_)[w].node.name, w);
      map[(*o.g_)[v].serial] = w;
      (*g_)[w].inputs.resize(o.num_inputs(v));
    }
    // edges in the source's out-edge order, so that use order is preserved too
    for (auto v : o.nodes())
      for (auto [e, end] = boost::out_edges(v, (*o.g_)); e != end; ++e) {
        const Edge& ed = (*o.g_)[*e];
        const node_id t = to_new(boost::target(*e, (*o.g_)));
        auto [ne, ok] = boost::add_edge(to_new(v), t, ed, (*g_));
        (void)ok;
        if (ed.src_port != control_port) (*g_)[t].inputs[ed.dst_port] = ne;
      }
    next_serial_ = o.next_serial_;
    attrs_ = o.attrs_;
    typed_ = o.typed_;
    for (const auto& [name, f] : o.functions_) functions_.emplace(name, std::make_unique<graph>(*f));
  }

  // Held by pointer: boost::adjacency_list has no move constructor (moving copies), and
  // input slots and the name index hold descriptors into this storage.
  std::unique_ptr<impl_type> g_ = std::make_unique<impl_type>();
  detail::name_index<node_id> names_;
  std::uint64_t next_serial_ = 0;
  Attrs attrs_{};
  std::map<std::string, std::any, std::less<>> typed_;
  function_library functions_;
};

/// True when `G` is an instantiation of `gpass::graph`.
template <class G>
concept graph_type = requires(G& g, const G& cg, typename G::node_id v) {
  typename G::node_type;
  typename G::edge_type;
  { cg.nodes() };
  { cg.num_nodes() } -> std::convertible_to<std::size_t>;
  { g[v] } -> std::same_as<typename G::node_type&>;
  { cg.serial(v) } -> std::convertible_to<std::uint64_t>;
};

}  // namespace gpass
