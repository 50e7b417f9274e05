// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file type_inference.hpp
/// `gpass::type_inference<G>`: type, shape and value inference over a graph and its function
/// library, driven by the op schemas' functions through `gpass::infer_attr`.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpass/analysis/infer_attr.hpp>
#include <gpass/core/symbols.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/type.hpp>
#include <gpass/graph/attr_key.hpp>
#include <gpass/graph/graph.hpp>
#include <gpass/graph/node_map.hpp>
#include <gpass/ops/formal_types.hpp>
#include <gpass/ops/infer_context.hpp>
#include <gpass/ops/op_memo.hpp>
#include <gpass/ops/opset.hpp>
#include <gpass/ops/port_info.hpp>
#include <gpass/ops/registry.hpp>

namespace gpass {

/// User-provided types by node (`"node"` for output 0, `"node:k"`), see `type_hints_key`.
using type_hints = std::map<std::string, type, std::less<>>;

/// Graph attribute (typed) with hints for the inference passes (seed 004: hints are stored as
/// attributes of the graph): `g.set(gpass::type_hints_key, gpass::type_hints{{"x", t}})`.
inline constexpr attr_key<type_hints> type_hints_key{"type_hints"};
/// Graph attribute (typed) set by the inference passes: output ports still not fully known.
inline constexpr attr_key<std::size_t> unknown_outputs_key{"unknown_outputs"};

/// What `type_inference::apply` writes into the graph.
struct type_inference_apply_options {
  bool shapes = true;                  ///< full types; false: only element types (dtypes)
  bool record_values = true;           ///< write `_value` / `_incomplete_value` attributes
  std::int64_t max_recorded_elements = 64;  ///< larger values are not written
};

/// Options of `type_inference`.
struct type_inference_options {
  /// User-provided types: `"node"` (output 0) or `"node:k"` -> type. Unified with the declared
  /// types of the root graph before inference (seed 004's shape/dtype hints).
  type_hints hints;
  /// Opset of the default domain (ONNX); 0: the graph attribute `opset` (int) or the ONNX
  /// importer's `opset_import` (strings `"domain:version"`) when set, else the newest.
  int opset = 0;
  /// Opsets of other domains (`domain -> version`); graph attributes `opset:<domain>` otherwise.
  std::map<std::string, int, std::less<>> opsets;
  std::size_t max_sweeps = 64;            ///< bound on sweeps of one graph
  std::size_t max_loop_iterations = 16;   ///< bound on loop fixed-point iterations
  std::int64_t max_value_elements = 4096; ///< values with more elements are not propagated
  std::size_t max_call_depth = 32;        ///< bound on nested function inference
  const op_registry* registry = nullptr;  ///< schemas; `op_registry::global()` when null
};

template <class G>
class type_inference;

namespace detail {

inline bool port_is_known(const type& t) {
  if (t.is_tensor()) {
    const auto& tt = t.tensor();
    if (tt.element == dtype::undefined || !tt.shape.has_rank()) return false;
    for (const auto& d : tt.shape.dims())
      if (d.is_unknown()) return false;
    return true;
  }
  if (t.is_list()) return port_is_known(type(t.list().element)) && !t.list().length.is_unknown();
  if (t.is_tuple()) {
    for (const auto& e : t.tuple().elements)
      if (!port_is_known(e)) return false;
    return true;
  }
  return false;
}

// Declared types inside a function body: symbols are the body's own (a previous run's result
// or the importer's names), not the caller's; dropping them keeps calls independent.
inline dim drop_symbols(const dim& d) { return d.is_known() ? d : dim(); }
inline type drop_symbols(const type& t) {
  if (t.is_tensor()) {
    tensor_type r = t.tensor();
    if (r.shape.has_rank())
      for (auto& d : r.shape.dims()) d = drop_symbols(d);
    return r;
  }
  if (t.is_list()) {
    list_type l = t.list();
    l.element = drop_symbols(type(l.element)).tensor();
    l.length = drop_symbols(l.length);
    return l;
  }
  if (t.is_tuple()) {
    tuple_type u;
    for (const auto& e : t.tuple().elements) u.elements.push_back(drop_symbols(e));
    return u;
  }
  return t;
}

// A key for memoizing calls: the type and the contents (hashed when fully known).
inline std::string value_key(const port_info& p) {
  std::string s = p.type.to_string();
  if (p.value.elements) s += "=" + p.value.to_string();
  else if (p.value.is_known()) {
    const tensor& t = p.value.value;
    std::uint64_t h = 1469598103934665603ull;
    auto mix = [&](const void* data, std::size_t n) {
      const auto* b = static_cast<const unsigned char*>(data);
      for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    };
    if (t.element_type() == dtype::string) {
      for (const auto& x : t.values<std::string>()) {
        mix(x.data(), x.size());
        mix("\0", 1);
      }
    } else if (t.nbytes()) {
      mix(t.raw(), t.nbytes());
    }
    s += "=" + std::string(to_string(t.element_type())) + t.shape().to_string() + "#" + std::to_string(h);
  }
  return s;
}

/// The `infer_attr` policy of `type_inference` for one graph (the root, or one call of a function).
template <class G>
class type_policy {
 public:
  using value_type = port_info;
  using node_id = typename G::node_id;
  using state_type = infer_attr_state<G, port_info>;

  type_policy(type_inference<G>& driver, const G& g, std::vector<const G*> chain, std::vector<std::string> paths,
              std::string scope, std::optional<std::vector<port_info>> args, std::string function_name)
      : driver_(&driver),
        g_(&g),
        chain_(std::move(chain)),
        paths_(std::move(paths)),
        scope_(std::move(scope)),
        args_(std::move(args)),
        function_(std::move(function_name)),
        refined_(g, {}),
        schemas_(g, nullptr),
        have_schema_(g, 0),
        refined_dirty_(g, 0),
        seen_version_(g, 0) {
    symbol_table& syms = driver_->symbols();
    for (auto v : g.nodes()) {
      auto& r = refined_[v];
      r.reserve(g[v].outputs.size());
      for (std::size_t k = 0; k < g[v].outputs.size(); ++k) {
        type t = g[v].outputs[k];
        if (is_function()) t = drop_symbols(t);
        else {
          syms.declare_all(t);
          if (auto h = driver_->hint(g[v].name, k)) {
            syms.declare_all(*h);
            try {
              t = syms.unify(t, *h);
            } catch (const error& e) {
              throw_node_error("hint " + h->to_string() + " for output " + std::to_string(k) +
                                   " conflicts with declared type " + t.to_string() + ": " + e.message(),
                               g[v].name, g[v].op);
            }
          }
        }
        r.push_back(std::move(t));
      }
    }
    last_version_ = syms.version();
  }

  bool is_function() const noexcept { return !function_.empty(); }
  const std::vector<const G*>& chain() const noexcept { return chain_; }
  const std::vector<std::string>& paths() const noexcept { return paths_; }
  const std::string& scope() const noexcept { return scope_; }

  std::vector<port_info> initial(const G& g, node_id v) {
    std::vector<port_info> r;
    r.reserve(g[v].outputs.size());
    for (const auto& t : refined_[v]) r.push_back(port_info{t, {}});
    return r;
  }

  bool is_known(const port_info& p) const { return port_is_known(p.type); }

  // infer_attr recomputes only nodes whose inputs changed, or that `stale` reports: `forward`
  // reads nothing else but the refined declared types and the symbol bindings.
  static constexpr bool incremental = true;
  bool stale(const G& g, node_id v, const state_type& s) {
    if (refined_dirty_[v]) return true;
    symbol_table& syms = driver_->symbols();
    if (seen_version_[v] == syms.version()) return false;
    // bindings since v was computed: stale when its outputs or inputs mention a bound symbol
    // (what v saw was resolved then, so a symbol bound now was bound after)
    bool bound = false;
    for (const auto& o : s.outputs(v)) bound = bound || mentions_bound_symbol(syms, o);
    for (std::size_t i = 0, n = g.num_inputs(v); i < n && !bound; ++i)
      if (const port_info* p = s.input(g, v, static_cast<int>(i))) bound = mentions_bound_symbol(syms, *p);
    if (!bound) seen_version_[v] = syms.version();
    return bound;
  }

  std::vector<port_info> forward(const G& g, node_id v, const state_type& s) {
    const auto& n = g[v];
    symbol_table& syms = driver_->symbols();
    refined_dirty_[v] = 0;
    seen_version_[v] = syms.version();
    resolved_.clear();
    const op_schema* schema = schema_of(g, v);
    infer_context ctx = make_context(g, v, s, current_outputs(s, v), schema);
    try {
      if (args_ && n.domain.empty() && n.op == "function_entry") {
        for (std::size_t k = 0; k < ctx.num_outputs() && k < args_->size(); ++k) ctx.output(k) = (*args_)[k];
      } else if (schema) {
        check_arity(*schema, g, v, ctx);
        apply_formal_types.check_inputs(*schema, ctx);
        if (schema->infer) schema->infer(ctx);
        apply_formal_types.fill_outputs(*schema, ctx);
        if (schema->propagate) schema->propagate(ctx);
        // sizes are never negative: a shape function that computed one from out-of-range
        // values (Tile's repeats, ...) would otherwise hand it on to arithmetic and kernels
        for (std::size_t k = 0; k < ctx.num_outputs(); ++k) {
          const type& t = ctx.output(k).type;
          if (!t.is_tensor() || !t.tensor().shape.has_rank()) continue;
          const shape& sh = t.tensor().shape;
          for (std::size_t i = 0; i < sh.rank(); ++i)
            if (sh[i].is_known() && sh[i].value() < 0)
              ctx.fail("output " + std::to_string(k) + " would have a negative size " + std::to_string(sh[i].value()) + " (dim " +
                       std::to_string(i) + " of " + sh.to_string() + ")");
        }
      }
      // declared types (and refinements) constrain what was inferred
      for (std::size_t k = 0; k < ctx.num_outputs(); ++k) {
        const type& decl = refined_[v][k];
        port_info& o = ctx.output(k);
        if (decl.is_unknown()) {
          syms.resolve_in_place(o.type);
        } else {
          try {
            o.type = syms.unify(decl, o.type);
          } catch (const error& e) {
            ctx.fail("declared type " + decl.to_string() + " of output " + std::to_string(k) +
                     " conflicts with the inferred " + syms.resolve(o.type).to_string() + ": " + e.message());
          }
        }
        if (o.value.is_known() && o.value.value.size() > driver_->options().max_value_elements) o.value = {};
        if (o.value.elements && static_cast<std::int64_t>(o.value.elements->size()) > driver_->options().max_value_elements)
          o.value = {};
      }
    } catch (const error& e) {
      rethrow(e, n);
    } catch (const std::exception& e) {
      rethrow(error(std::string("inference failed: ") + e.what()), n);
    }
    for (auto& m : ctx.notes()) driver_->add_note(where(n) + m);
    return std::move(ctx.outputs());
  }

  bool backward(const G& g, node_id v, state_type& s) {
    const auto& n = g[v];
    const op_schema* schema = schema_of(g, v);
    if (!schema) return false;
    if (n.op == "function_entry" && n.domain.empty()) return false;
    // without an infer_backward, only the formals refine, and only inputs of unknown dtype
    if (!schema->infer_backward) {
      bool open = false;
      for (std::size_t i = 0, m = g.num_inputs(v); i < m && !open; ++i) {
        const port_info* p = s.input(g, v, static_cast<int>(i));
        open = p && (p->type.is_unknown() || (p->type.is_tensor() && p->type.tensor().element == dtype::undefined));
      }
      if (!open) return false;
    }
    symbol_table& syms = driver_->symbols();
    resolved_.clear();
    infer_context ctx = make_context(g, v, s, current_outputs(s, v), schema);
    bool changed = false;
    try {
      apply_formal_types.backward(*schema, ctx);
      if (schema->infer_backward) schema->infer_backward(ctx);
      for (const auto& [i, t] : ctx.refinements()) {
        auto r = g.input(v, static_cast<int>(i));
        if (r.empty) continue;
        auto& slot = refined_[r.node];
        if (static_cast<std::size_t>(r.port) >= slot.size()) continue;
        type before = syms.resolve(slot[r.port]);
        type after;
        try {
          after = syms.unify(before, t);
        } catch (const error& e) {
          ctx.fail("input " + std::to_string(i) + " must be " + t.to_string() + " but is " + before.to_string() + ": " +
                   e.message());
        }
        if (!(after == before)) {
          slot[r.port] = after;
          refined_dirty_[r.node] = 1;
          changed = true;
        }
      }
    } catch (const error& e) {
      rethrow(e, n);
    } catch (const std::exception& e) {
      rethrow(error(std::string("inference failed: ") + e.what()), n);
    }
    return changed;
  }

  bool end_sweep() {
    std::size_t v = driver_->symbols().version();
    bool changed = v != last_version_;
    last_version_ = v;
    return changed;
  }

 private:
  // The context of v: inputs viewed in the state (copied and resolved only when they mention
  // a symbol bound since), current outputs viewed in `cur`.
  infer_context make_context(const G& g, node_id v, const state_type& s, const std::vector<port_info>& cur,
                             const op_schema* schema) {
    const auto& n = g[v];
    symbol_table& syms = driver_->symbols();
    std::vector<const port_info*> ins;
    ins.reserve(g.num_inputs(v));
    for (std::size_t i = 0; i < g.num_inputs(v); ++i) {
      const port_info* p = s.input(g, v, static_cast<int>(i));
      if (p && syms.mentions_bound(p->type)) {
        resolved_.push_back(*p);
        syms.resolve_in_place(resolved_.back().type);
        p = &resolved_.back();
      }
      if (!p && !g.input(v, static_cast<int>(i)).empty) p = &infer_context::empty_port();
      ins.push_back(p);
    }
    infer_context ctx(n.name, n.op, n.domain, driver_->opset_for(n.domain), n.attrs, std::move(ins), cur, syms, scope_,
                      schema);
    ctx.set_max_value_elements(driver_->options().max_value_elements);
    ctx.set_max_loop_iterations(driver_->options().max_loop_iterations);
    // two pointers: held in std::function's local buffer, no allocation (the node outlives ctx)
    const std::string* node_name = &n.name;
    ctx.set_function_caller([this, node_name](std::string_view fn, std::vector<port_info> args) {
      return driver_->call(*this, *node_name, fn, std::move(args));
    });
    return ctx;
  }

  // v's outputs in the state, or a resolved copy when they mention a symbol bound since
  const std::vector<port_info>& current_outputs(const state_type& s, node_id v) {
    const auto& out = s.outputs(v);
    symbol_table& syms = driver_->symbols();
    bool bound = false;
    for (const auto& o : out) bound = bound || syms.mentions_bound(o.type);
    if (!bound) return out;
    current_ = out;
    for (auto& c : current_) syms.resolve_in_place(c.type);
    return current_;
  }

  const op_schema* schema_of(const G& g, node_id v) {
    if (!have_schema_[v]) {
      schemas_[v] = driver_->schema_for(g[v].domain, g[v].op);
      have_schema_[v] = 1;
    }
    return schemas_[v];
  }

  static bool mentions_bound_symbol(const symbol_table& syms, const port_info& p) {
    if (syms.mentions_bound(p.type)) return true;
    if (p.value.elements)
      for (const auto& d : *p.value.elements)
        if (syms.mentions_bound(d)) return true;
    return false;
  }

  // The number of inputs must fit the schema (functions index inputs by position).
  static void check_arity(const op_schema& s, const G& g, node_id v, infer_context& ctx) {
    const auto n = static_cast<long long>(g.num_inputs(v));
    if (n < s.min_inputs || n > s.max_inputs) {
      std::string want = s.min_inputs == s.max_inputs ? std::to_string(s.min_inputs)
                         : s.max_inputs == op_schema::unbounded
                             ? "at least " + std::to_string(s.min_inputs)
                             : std::to_string(s.min_inputs) + " to " + std::to_string(s.max_inputs);
      ctx.fail("expects " + want + " inputs, has " + std::to_string(n));
    }
    const auto m = static_cast<long long>(g[v].outputs.size());
    if (m > s.max_outputs)
      ctx.fail("has " + std::to_string(m) + " outputs, the op has at most " + std::to_string(s.max_outputs));
  }

  std::string where(const typename G::node_type& n) const {
    std::string s = "node '" + n.name + "' (op " + n.op + ")";
    if (is_function()) s += " in function '" + function_ + "'";
    return s + ": ";
  }

  [[noreturn]] void rethrow(const error& e, const typename G::node_type& n) const {
    error_context c = e.context();
    if (c.node.empty()) {
      c.node = n.name;
      c.op = n.op;
    }
    std::string m = e.message();
    if (is_function() && m.find(" (in function '") == std::string::npos) m += " (in function '" + function_ + "')";
    throw error(std::move(m), std::move(c));
  }

  type_inference<G>* driver_;
  const G* g_;
  std::vector<const G*> chain_;     // graphs whose libraries are visible, innermost first
  std::vector<std::string> paths_;  // their paths ("" for the root)
  std::string scope_;
  std::optional<std::vector<port_info>> args_;
  std::string function_;
  node_map<G, std::vector<type>> refined_;
  std::deque<port_info> resolved_;    // this forward's resolved copies of inputs (stable addresses)
  std::vector<port_info> current_;    // this forward's resolved copy of the current outputs
  node_map<G, const op_schema*> schemas_;
  node_map<G, char> have_schema_;
  node_map<G, char> refined_dirty_;       // refined_ changed since the node's last forward
  node_map<G, std::size_t> seen_version_;  // symbol table version when last computed or checked
  std::size_t last_version_ = 0;
};

}  // namespace detail

/// Type, shape and value inference over a graph and its functions, with the op registry's
/// schemas: the engine behind the `infer-types` and `infer-shapes` passes.
///
/// - Starts from the declared types of node outputs (graph inputs, importer annotations) and
///   the user's hints, and sweeps with `gpass::infer_attr` until nothing changes. Declared
///   types constrain inferred ones (a conflict is an error naming the node).
/// - Each node's outputs come from its schema (`op_schema::infer`, dtypes from the formals,
///   `propagate` for known contents); nodes without a schema keep their declared types.
/// - Control flow (`while`, `if`, ONNX `Loop`/`If`/`Scan`) infers its functions through
///   `infer_context::call`: each call infers the function graph with the arguments' types
///   (memoized by arguments, recursion refused). The types written for a function's nodes are
///   the join over its calls (for a loop body: the fixed-point iteration).
/// - Symbolic dims live in `symbols()`; fresh symbols are named after nodes, deterministically.
/// - Frontends: TensorFlow and ONNX ops share the default domain. Schemas marked with a
///   `frontend` (the ONNX ones: `"onnx"`) are not used on a graph whose string attribute
///   `frontend` names another one (`"tensorflow"`); such nodes keep their declared types.
///
/// Throws `gpass::error` naming the node and op on incompatible types or shapes.
/// \code
///   gpass::type_inference<gpass::graph<>> ti(g);
///   ti.run();
///   gpass::type t = ti.port(n, 0).type;
/// \endcode
template <class G>
class type_inference {
 public:
  using node_id = typename G::node_id;
  using state_type = infer_attr_state<G, port_info>;
  /// One function graph that was inferred: its library path (`body`, `outer/inner`) and the
  /// join of the states of its calls.
  struct function_result {
    std::string path;
    const G* graph;
    std::shared_ptr<const state_type> state;
  };

  explicit type_inference(const G& g, type_inference_options o = {}) : g_(&g), opts_(std::move(o)) {
    registry_ = opts_.registry ? opts_.registry : &op_registry::global();
    if (opts_.opset == 0) opts_.opset = graph_opset("");
    if constexpr (std::is_same_v<typename G::attrs_type, attribute_map>) {
      auto it = g.attrs().find("frontend");
      if (it != g.attrs().end() && it->second.template is<std::string>()) frontend_ = it->second.template as<std::string>();
    }
  }

  /// Runs inference (once).
  void run() {
    detail::type_policy<G> p(*this, *g_, {g_}, {""}, "", std::nullopt, "");
    auto r = infer_attr(*g_, p, infer_attr_options{opts_.max_sweeps});
    converged_ = r.converged;
    sweeps_ = r.num_sweeps;
    root_ = std::make_shared<state_type>(std::move(r.state));
    if (!converged_) add_note("graph did not converge in " + std::to_string(opts_.max_sweeps) + " sweeps");
    infer_uncalled_functions();
    finalize();
  }

  /// The root graph's result for output `k` of `v` (after `run`), resolved.
  port_info port(node_id v, std::size_t k) {
    port_info p = root_->output(v, k);
    p.type = symbols_.resolve(p.type);
    return p;
  }
  /// The root graph's state (types may mention symbols bound since: resolve them).
  const state_type& state() const { return *root_; }
  /// The inferred functions, ordered by path.
  const std::vector<function_result>& functions() const noexcept { return functions_; }

  /// Output ports (root and functions) whose type is not fully known.
  std::size_t num_unknown() const noexcept { return unknown_; }
  std::size_t num_sweeps() const noexcept { return sweeps_; }
  bool converged() const noexcept { return converged_; }
  symbol_table& symbols() noexcept { return symbols_; }
  const std::vector<std::string>& notes() const noexcept { return notes_; }
  const type_inference_options& options() const noexcept { return opts_; }

  /// Writes the result into `g` (the graph this object was made with, non-const) and into
  /// the functions of its library that were inferred: `g[v].outputs[k]` gets the resolved type
  /// (or only its element type), and, when `record_values`, known contents are written as node
  /// attributes `_value` (tensor) / `_incomplete_value` (shape of the element dims) for port
  /// 0 and `_value:k` / `_incomplete_value:k` for port k, on nodes with inputs (constants
  /// keep theirs) and at most `max_recorded_elements` elements. Stale `_value*` and
  /// `_incomplete_value*` attributes are removed from every node first.
  void apply(G& g, const type_inference_apply_options& o = {}) {
    if (&g != g_) throw error("type_inference::apply: not the graph that was inferred");
    write(g, *root_, o);
    // function graphs are owned by g's library (reached from it): writing through is sound
    for (const auto& f : functions_) write(const_cast<G&>(*f.graph), *f.state, o);
    if constexpr (requires { g.set(unknown_outputs_key, std::size_t{}); }) g.set(unknown_outputs_key, unknown_);
  }

  // ---- used by the policy --------------------------------------------------------------
  void add_note(std::string s) {
    if (notes_.size() < 1000) notes_.push_back(std::move(s));
  }
  std::optional<type> hint(std::string_view node, std::size_t port) const {
    if (opts_.hints.empty()) return std::nullopt;
    auto it = opts_.hints.find(std::string(node) + ":" + std::to_string(port));
    if (it != opts_.hints.end()) return it->second;
    if (port == 0) {
      it = opts_.hints.find(node);
      if (it != opts_.hints.end()) return it->second;
    }
    return std::nullopt;
  }
  int opset_for(std::string_view domain) const {
    auto d = op_registry::normalize_domain(domain);
    if (d.empty()) return opts_.opset;
    auto it = opts_.opsets.find(d);
    if (it != opts_.opsets.end()) return it->second;
    return graph_opset(d);
  }
  const op_schema* schema_for(std::string_view domain, std::string_view op) {
    return schema_memo_(domain, op, [this](std::string_view d, std::string_view o) {
      const op_schema* s = registry_->find(d, o, opset_for(d));
      if (!s && opset_for(d) != 0) s = registry_->find(d, o, 0);
      // TensorFlow graphs share only the default domain with ONNX; other domains' schemas
      // (gpass's fused ops, com.microsoft) apply to every frontend's graphs
      if (s && op_registry::normalize_domain(d).empty() && !s->frontend.empty() && !frontend_.empty() &&
          s->frontend != frontend_)
        s = nullptr;
      return s;
    });
  }

  /// Infers function `fn` (looked up in the libraries visible from `caller`) on `args`.
  std::vector<port_info> call(detail::type_policy<G>& caller, const std::string& node, std::string_view fn,
                              std::vector<port_info> args) {
    const G* fg = nullptr;
    std::vector<const G*> chain;
    std::vector<std::string> paths;
    const auto& cc = caller.chain();
    for (std::size_t j = 0; j < cc.size(); ++j)
      if ((fg = cc[j]->find_function(fn))) {
        chain.push_back(fg);
        paths.push_back(caller.paths()[j].empty() ? std::string(fn) : caller.paths()[j] + "/" + std::string(fn));
        chain.insert(chain.end(), cc.begin() + static_cast<std::ptrdiff_t>(j), cc.end());
        paths.insert(paths.end(), caller.paths().begin() + static_cast<std::ptrdiff_t>(j), caller.paths().end());
        break;
      }
    if (!fg) {
      add_note("node '" + node + "': function '" + std::string(fn) + "' not found");
      return {};
    }
    for (auto& a : args) a.type = symbols_.resolve(a.type);
    std::string scope = caller.scope() + "/" + node + "@" + std::string(fn);
    std::string key = scope + "|";
    for (const auto& a : args) key += detail::value_key(a) + ";";
    if (auto it = cache_.find(key); it != cache_.end()) {
      for (const auto& w : it->second.writes) write_record(w);
      return it->second.results;
    }
    if (active_.count(fg) || depth_ >= opts_.max_call_depth) {
      add_note("node '" + node + "': recursive or too deeply nested call of '" + std::string(fn) + "' not inferred");
      return {};
    }
    active_.insert(fg);
    ++depth_;
    struct guard {
      type_inference* self;
      const G* fg;
      ~guard() {
        self->active_.erase(fg);
        --self->depth_;
      }
    } gd{this, fg};
    std::vector<record_write> writes;
    recorders_.push_back(&writes);
    infer_attr_result<G, port_info> r{state_type(*fg)};
    try {
      detail::type_policy<G> p(*this, *fg, chain, paths, scope, std::move(args), paths.front());
      r = infer_attr(*fg, p, infer_attr_options{opts_.max_sweeps});
    } catch (...) {
      recorders_.pop_back();
      throw;
    }
    recorders_.pop_back();
    if (!r.converged) add_note("function '" + paths.front() + "' did not converge");
    auto st = std::make_shared<state_type>(std::move(r.state));
    std::vector<port_info> results;
    for (auto v : fg->nodes())
      if ((*fg)[v].op == "return" && (*fg)[v].domain.empty()) {
        for (std::size_t i = 0; i < fg->num_inputs(v); ++i) {
          const port_info* pi = st->input(*fg, v, static_cast<int>(i));
          results.push_back(pi ? port_info{symbols_.resolve(pi->type), pi->value} : port_info{});
        }
        break;
      }
    writes.push_back(record_write{paths.front(), fg, scope, st});
    for (const auto& w : writes) write_record(w);
    cache_.emplace(std::move(key), cache_entry{results, std::move(writes)});
    return results;
  }

 private:
  // One function state recorded for writing back: the latest inference of `path` at `scope`.
  struct record_write {
    std::string path;
    const G* graph;
    std::string scope;
    std::shared_ptr<const state_type> state;
  };
  struct cache_entry {
    std::vector<port_info> results;
    std::vector<record_write> writes;  // this call's record and its nested calls', replayed on a hit
  };
  void write_record(const record_write& w) {
    auto& rec = records_[w.path];
    rec.graph = w.graph;
    rec.by_scope[w.scope] = w.state;
    if (!recorders_.empty()) recorders_.back()->push_back(w);
  }
  struct record {
    const G* graph = nullptr;
    std::map<std::string, std::shared_ptr<const state_type>> by_scope;
  };

  static void clear_values(attribute_map& m) {
    for (auto it = m.begin(); it != m.end();) {
      std::string_view k = it->first;
      if (k.starts_with("_value") || k.starts_with("_incomplete_value")) it = m.erase(it);
      else ++it;
    }
  }

  void write(G& g, const state_type& s, const type_inference_apply_options& o) {
    for (auto v : g.nodes()) {
      auto& n = g[v];
      if (o.record_values) clear_values(n.attrs);
      const auto& out = s.outputs(v);
      for (std::size_t k = 0; k < n.outputs.size() && k < out.size(); ++k) {
        if (o.shapes) {
          // copied in place (storage reused) when nothing needs resolving; skipped when equal
          const type& inferred = out[k].type;
          if (symbols_.mentions_bound(inferred)) n.outputs[k] = symbols_.resolve(inferred);
          else if (!(n.outputs[k] == inferred)) n.outputs[k] = inferred;
        } else if (type t = symbols_.resolve(out[k].type); t.is_tensor()) {
          const type& old = n.outputs[k];
          n.outputs[k] = tensor_type{t.tensor().element, old.is_tensor() ? old.tensor().shape : shape()};
        } else if (n.outputs[k].is_unknown()) {
          n.outputs[k] = std::move(t);
        }
        if (!o.record_values || g.num_inputs(v) == 0) continue;
        const known_value& kv = out[k].value;
        std::string suffix = k == 0 ? std::string() : ":" + std::to_string(k);
        if (kv.is_known() && kv.value.size() <= o.max_recorded_elements) {
          n.attrs["_value" + suffix] = kv.value;
        } else if (kv.elements && static_cast<std::int64_t>(kv.elements->size()) <= o.max_recorded_elements) {
          std::vector<dim> d;
          for (const auto& x : *kv.elements) d.push_back(symbols_.resolve(x));
          n.attrs["_incomplete_value" + suffix] = shape(std::move(d));
        }
      }
    }
  }

  int graph_opset(std::string_view domain) const { return gpass::graph_opset(*g_, domain); }

  // Functions no inferred node called (dead code, or a library used from outside): inferred
  // from their declared argument types, so that their nodes get types too. Functions that
  // other functions reference go after those (their callers may reach them first, with
  // better argument types). Nested libraries included; iterative over the nesting.
  void infer_uncalled_functions() {
    struct item {
      std::string path;
      const G* graph;
      std::vector<const G*> chain;
      std::vector<std::string> paths;
    };
    std::vector<item> all;
    std::vector<item> work{{"", g_, {g_}, {""}}};
    std::set<std::string> referenced;
    auto note_refs = [&](const G& g) {
      for (auto v : g.nodes())
        for (const auto& [k, a] : g[v].attrs) {
          if (a.template is<function_ref>()) referenced.insert(a.template as<function_ref>().name);
          else if (a.template is<std::vector<function_ref>>())
            for (const auto& f : a.template as<std::vector<function_ref>>()) referenced.insert(f.name);
        }
    };
    note_refs(*g_);
    while (!work.empty()) {
      item it = std::move(work.back());
      work.pop_back();
      for (const auto& [name, fn] : it.graph->functions()) {
        const G* fg = fn.get();
        std::vector<const G*> chain{fg};
        chain.insert(chain.end(), it.chain.begin(), it.chain.end());
        std::vector<std::string> paths{it.path.empty() ? name : it.path + "/" + name};
        paths.insert(paths.end(), it.paths.begin(), it.paths.end());
        note_refs(*fg);
        item f{paths.front(), fg, chain, paths};
        all.push_back(f);
        if (!fg->functions().empty()) work.push_back(std::move(f));
      }
    }
    std::sort(all.begin(), all.end(), [](const item& a, const item& b) { return a.path < b.path; });
    auto name_of = [](const std::string& path) {
      auto slash = path.rfind('/');
      return slash == std::string::npos ? path : path.substr(slash + 1);
    };
    for (int round = 0; round < 2; ++round)
      for (const auto& f : all) {
        if (records_.count(f.path)) continue;
        if (round == 0 && referenced.count(name_of(f.path))) continue;
        std::string scope = "/@" + f.path;
        detail::type_policy<G> p(*this, *f.graph, f.chain, f.paths, scope, std::nullopt, f.path);
        auto r = infer_attr(*f.graph, p, infer_attr_options{opts_.max_sweeps});
        write_record(record_write{f.path, f.graph, scope, std::make_shared<state_type>(std::move(r.state))});
      }
  }

  // (resolving substitutes bound symbols: it never makes a dim unknown or an unknown dim
  // known, so the ports are counted as they are, without resolved copies)
  void count_unknown(const G& g, const state_type& s) {
    for (auto v : g.nodes())
      for (const auto& p : s.outputs(v))
        if (!detail::port_is_known(p.type)) ++unknown_;
  }

  void finalize() {
    unknown_ = 0;
    count_unknown(*g_, *root_);
    functions_.clear();
    for (const auto& [path, rec] : records_) {
      const G& fg = *rec.graph;
      std::shared_ptr<const state_type> joined;
      if (rec.by_scope.size() == 1) {
        joined = rec.by_scope.begin()->second;
      } else {
        auto st = std::make_shared<state_type>(*rec.by_scope.begin()->second);
        bool first = true;
        for (const auto& [scope, s] : rec.by_scope) {
          if (first) {
            first = false;
            continue;
          }
          for (auto v : fg.nodes()) {
            auto& out = st->outputs(v);
            const auto& other = s->outputs(v);
            for (std::size_t k = 0; k < out.size() && k < other.size(); ++k) {
              try {
                out[k].type = symbols_.join(out[k].type, other[k].type, "fn/" + path + "/" + fg[v].name + "/" +
                                                std::to_string(k), fg[v].name);
              } catch (const error&) {
                out[k].type = type{};
              }
              if (!(out[k].value == other[k].value)) out[k].value = {};
            }
          }
        }
        joined = st;
      }
      count_unknown(fg, *joined);
      functions_.push_back(function_result{path, &fg, joined});
    }
  }

  friend class detail::type_policy<G>;

  const G* g_;
  type_inference_options opts_;
  const op_registry* registry_ = nullptr;
  std::string frontend_;  // graph attribute `frontend` ("tensorflow", "onnx"), empty when unset
  symbol_table symbols_;
  op_memo<const op_schema*> schema_memo_;  // schema_for's memo by (domain, op)
  std::map<std::string, cache_entry> cache_;
  std::map<std::string, record> records_;
  std::set<const G*> active_;
  std::vector<std::vector<record_write>*> recorders_;
  std::size_t depth_ = 0;
  std::shared_ptr<state_type> root_;
  std::vector<function_result> functions_;
  std::vector<std::string> notes_;
  std::size_t unknown_ = 0;
  std::size_t sweeps_ = 0;
  bool converged_ = false;
};

}  // namespace gpass
