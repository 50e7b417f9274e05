// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file infer_context.hpp
/// `gpass::infer_context`: what an op's type, shape and value functions see of one node,
/// independent of the graph type.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/symbols.hpp>
#include <gpass/core/attribute.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/type.hpp>
#include <gpass/ops/known_value.hpp>
#include <gpass/ops/port_info.hpp>

namespace gpass {

struct op_schema;

/// The view of one node that op inference functions (`op_schema::infer`, `propagate`,
/// `infer_backward`) work on: its identity and attributes, its inputs (types, resolved
/// through the symbol table, and known contents), and the outputs it is filling in. It does
/// not depend on the graph type; the inference engine builds one per node visit.
///
/// Functions report incompatibilities with `fail` (or by letting a `gpass::error` escape):
/// the engine adds the node, op and pass to the message (`node 'add' (op Add): incompatible
/// dims 3 and 4 in input 1`). Control-flow ops run their bodies through `call`.
/// \code
///   // the shape function of a unary op
///   void relu_infer(gpass::infer_context& c) { c.set_output(0, c.input_type(0)); }
/// \endcode
class infer_context {
 public:
  /// Infers a function of the graph's library on argument types/values; returns its results
  /// (empty when the function is unknown or recursion is refused).
  using function_caller = std::function<std::vector<port_info>(std::string_view function, std::vector<port_info> args)>;

  /// Engine side: a context for node `node_name` (op `op` in `domain`, at `opset`; 0 = newest)
  /// with its inputs (`present[i]` false for an omitted optional input) and the outputs as
  /// currently known (declared types, hints, earlier sweeps). The name, op, domain and scope
  /// are viewed, not copied: they must outlive the context (the node's own strings do).
  infer_context(std::string_view node_name, std::string_view op, std::string_view domain, int opset,
                const attribute_map& attrs, std::vector<port_info> inputs, std::vector<bool> present,
                std::vector<port_info> current_outputs, symbol_table& symbols, std::string_view scope = {},
                const op_schema* schema = nullptr)
      : node_name_(node_name),
        op_(op),
        domain_(domain),
        opset_(opset),
        attrs_(&attrs),
        owned_inputs_(std::move(inputs)),
        owned_current_(std::move(current_outputs)),
        current_(owned_current_.data()),
        num_current_(owned_current_.size()),
        outputs_(owned_current_.size()),
        symbols_(&symbols),
        scope_(scope),
        schema_(schema) {
    present.resize(owned_inputs_.size(), true);
    inputs_.reserve(owned_inputs_.size());
    for (std::size_t i = 0; i < owned_inputs_.size(); ++i) inputs_.push_back(present[i] ? &owned_inputs_[i] : nullptr);
  }
  /// Engine side, without copies: `inputs[i]` points to input i's info (nullptr: omitted),
  /// `current` to the current outputs; both must outlive the context.
  infer_context(std::string_view node_name, std::string_view op, std::string_view domain, int opset,
                const attribute_map& attrs, std::vector<const port_info*> inputs, const std::vector<port_info>& current,
                symbol_table& symbols, std::string_view scope, const op_schema* schema)
      : node_name_(node_name),
        op_(op),
        domain_(domain),
        opset_(opset),
        attrs_(&attrs),
        inputs_(std::move(inputs)),
        current_(current.data()),
        num_current_(current.size()),
        outputs_(current.size()),
        symbols_(&symbols),
        scope_(scope),
        schema_(schema) {}
  /// An empty port info (unknown type, no value): what an input without a producer reads.
  static const port_info& empty_port() {
    static const port_info e{};
    return e;
  }
  // the views point into owned vectors' elements, which a move keeps and a copy would not
  infer_context(infer_context&&) = default;
  infer_context(const infer_context&) = delete;
  infer_context& operator=(const infer_context&) = delete;

  // ---- identity ------------------------------------------------------------------------
  std::string_view node_name() const noexcept { return node_name_; }
  std::string_view op() const noexcept { return op_; }
  std::string_view domain() const noexcept { return domain_; }
  /// The opset of the node's domain; 0 when not known (functions then assume the newest).
  int opset() const noexcept { return opset_; }
  /// The schema being applied (may be null).
  const op_schema* schema() const noexcept { return schema_; }
  /// A string naming where this node is (the call path of the functions being inferred).
  std::string_view scope() const noexcept { return scope_; }

  // ---- attributes ----------------------------------------------------------------------
  const attribute_map& attrs() const noexcept { return *attrs_; }
  bool has_attr(std::string_view n) const { return attrs_->find(n) != attrs_->end(); }
  /// The attribute `n`, or the schema's default, or nullptr.
  const attribute* attr(std::string_view n) const;
  std::int64_t attr_int(std::string_view n, std::int64_t fallback) const {
    const attribute* a = attr(n);
    if (!a) return fallback;
    if (a->is<std::int64_t>()) return a->as<std::int64_t>();
    if (a->is<bool>()) return a->as<bool>() ? 1 : 0;
    fail("attribute '" + std::string(n) + "' is a " + std::string(a->kind_name()) + ", expected an int");
  }
  double attr_float(std::string_view n, double fallback) const {
    const attribute* a = attr(n);
    if (!a) return fallback;
    if (a->is<double>()) return a->as<double>();
    if (a->is<std::int64_t>()) return static_cast<double>(a->as<std::int64_t>());
    fail("attribute '" + std::string(n) + "' is a " + std::string(a->kind_name()) + ", expected a float");
  }
  std::string attr_string(std::string_view n, std::string fallback) const {
    const attribute* a = attr(n);
    if (!a) return fallback;
    if (a->is<std::string>()) return a->as<std::string>();
    fail("attribute '" + std::string(n) + "' is a " + std::string(a->kind_name()) + ", expected a string");
  }
  std::optional<std::vector<std::int64_t>> attr_ints(std::string_view n) const {
    const attribute* a = attr(n);
    if (!a) return std::nullopt;
    if (a->is<std::vector<std::int64_t>>()) return a->as<std::vector<std::int64_t>>();
    if (a->is<std::int64_t>()) return std::vector<std::int64_t>{a->as<std::int64_t>()};
    fail("attribute '" + std::string(n) + "' is a " + std::string(a->kind_name()) + ", expected ints");
  }
  std::optional<std::vector<double>> attr_floats(std::string_view n) const {
    const attribute* a = attr(n);
    if (!a) return std::nullopt;
    if (a->is<std::vector<double>>()) return a->as<std::vector<double>>();
    if (a->is<double>()) return std::vector<double>{a->as<double>()};
    fail("attribute '" + std::string(n) + "' is a " + std::string(a->kind_name()) + ", expected floats");
  }
  /// A dtype attribute given as a dtype or as an ONNX TensorProto data type number.
  std::optional<dtype> attr_dtype(std::string_view n) const;
  /// The name of a function-reference attribute.
  std::optional<std::string> attr_function(std::string_view n) const {
    const attribute* a = attr(n);
    if (!a) return std::nullopt;
    if (a->is<function_ref>()) return a->as<function_ref>().name;
    if (a->is<std::string>()) return a->as<std::string>();
    fail("attribute '" + std::string(n) + "' is a " + std::string(a->kind_name()) + ", expected a function");
  }

  // ---- inputs --------------------------------------------------------------------------
  std::size_t num_inputs() const noexcept { return inputs_.size(); }
  /// True when input `i` exists and is connected (not an omitted optional input).
  bool has_input(std::size_t i) const noexcept { return i < inputs_.size() && inputs_[i]; }
  /// Number of inputs that are present (trailing omitted ones not counted).
  std::size_t num_present_inputs() const noexcept {
    std::size_t n = inputs_.size();
    while (n > 0 && !inputs_[n - 1]) --n;
    return n;
  }
  const port_info& input(std::size_t i) const { return has_input(i) ? *inputs_[i] : empty_port(); }
  const type& input_type(std::size_t i) const { return input(i).type; }
  /// Input `i` as a tensor type (undefined dtype and unknown rank when not a known tensor).
  tensor_type input_tensor(std::size_t i) const {
    const type& t = input_type(i);
    return t.is_tensor() ? t.tensor() : tensor_type{};
  }
  dtype input_dtype(std::size_t i) const {
    const type& t = input_type(i);
    return t.is_tensor() ? t.tensor().element : dtype::undefined;
  }
  /// Input `i`'s shape (unknown rank when not a known tensor), viewed in place: valid while
  /// this context lives.
  const shape& input_shape(std::size_t i) const {
    static const shape unknown_rank;
    const type& t = input_type(i);
    return t.is_tensor() ? t.tensor().shape : unknown_rank;
  }
  /// The rank of input `i`, if known.
  std::optional<std::size_t> input_rank(std::size_t i) const {
    const type& t = input_type(i);
    if (t.is_tensor() && t.tensor().shape.has_rank()) return t.tensor().shape.rank();
    return std::nullopt;
  }
  const known_value& input_value(std::size_t i) const { return input(i).value; }
  /// Input `i`'s contents as dims (partly known integer values), if any.
  std::optional<std::vector<dim>> input_dims(std::size_t i) const {
    auto d = input(i).value.dims(max_value_elements_);
    if (d)
      for (auto& x : *d) x = symbols_->resolve(x);
    return d;
  }
  /// Input `i`'s contents as integers, when fully known.
  std::optional<std::vector<std::int64_t>> input_ints(std::size_t i) const {
    auto d = input_dims(i);
    if (!d) return std::nullopt;
    std::vector<std::int64_t> r;
    r.reserve(d->size());
    for (const auto& x : *d) {
      if (!x.is_known()) return std::nullopt;
      r.push_back(x.value());
    }
    return r;
  }
  /// Input `i`'s single element as an integer, when known.
  std::optional<std::int64_t> input_int(std::size_t i) const {
    auto v = input_ints(i);
    if (!v || v->size() != 1) return std::nullopt;
    return (*v)[0];
  }
  /// Input `i`'s contents as doubles, when fully known and numeric.
  std::optional<std::vector<double>> input_doubles(std::size_t i) const {
    return input(i).value.doubles(max_value_elements_);
  }

  // ---- outputs -------------------------------------------------------------------------
  std::size_t num_outputs() const noexcept { return outputs_.size(); }
  /// What was known of output `k` before this visit (declared type, hints, earlier sweeps).
  const port_info& current_output(std::size_t k) const { return k < num_current_ ? current_[k] : empty_port(); }
  /// The output being computed (writable).
  port_info& output(std::size_t k) {
    if (k >= outputs_.size()) fail("output " + std::to_string(k) + " out of range (node has " +
                                   std::to_string(outputs_.size()) + " outputs)");
    return outputs_[k];
  }
  const std::vector<port_info>& outputs() const noexcept { return outputs_; }
  std::vector<port_info>& outputs() noexcept { return outputs_; }
  /// Sets the type of output `k` (ignored when the node has fewer outputs: optional outputs).
  void set_output(std::size_t k, type t) {
    if (k < outputs_.size()) outputs_[k].type = std::move(t);
  }
  void set_tensor(std::size_t k, dtype d, shape s) { set_output(k, tensor_type{d, std::move(s)}); }
  /// Sets output `k`'s shape, keeping its dtype.
  void set_shape(std::size_t k, shape s) {
    if (k >= outputs_.size()) return;
    auto& t = outputs_[k].type;
    dtype d = t.is_tensor() ? t.tensor().element : dtype::undefined;
    t = tensor_type{d, std::move(s)};
  }
  /// Sets output `k`'s dtype, keeping its shape.
  void set_dtype(std::size_t k, dtype d) {
    if (k >= outputs_.size()) return;
    auto& t = outputs_[k].type;
    if (t.is_tensor()) t.tensor().element = d;
    else t = tensor_type{d, shape()};
  }
  /// Sets output `k`'s contents.
  void set_value(std::size_t k, known_value v) {
    if (k < outputs_.size()) outputs_[k].value = std::move(v);
  }
  /// Sets output `k`'s contents from dims (a fully known tensor is made when the output's
  /// dtype is an integer type and its element count matches).
  void set_dims_value(std::size_t k, std::vector<dim> d) {
    if (k >= outputs_.size()) return;
    for (auto& x : d) x = symbols_->resolve(x);
    const type& t = outputs_[k].type;
    if (t.is_tensor() && (is_integer(t.tensor().element) || t.tensor().element == dtype::bool_) &&
        t.tensor().shape.is_fully_known())
      if (auto v = known_value::to_tensor(d, t.tensor().element, t.tensor().shape.sizes())) {
        outputs_[k].value = known_value::of(std::move(*v));
        return;
      }
    outputs_[k].value = known_value::of_dims(std::move(d));
  }

  // ---- backward inference --------------------------------------------------------------
  /// Records that input `i` must have type `t` (used by `op_schema::infer_backward`; the
  /// engine unifies it with the producer's output).
  void refine_input(std::size_t i, type t) {
    if (has_input(i)) refinements_.emplace_back(i, std::move(t));
  }
  const std::vector<std::pair<std::size_t, type>>& refinements() const noexcept { return refinements_; }

  // ---- symbols -------------------------------------------------------------------------
  symbol_table& symbols() noexcept { return *symbols_; }
  /// A fresh symbol for this node, the same one on every visit with the same `purpose`
  /// (named `<node>_<purpose>`). Use for data-dependent sizes (NonZero, Unique).
  dim fresh_dim(std::string_view purpose) {
    std::string base(node_name_);
    if (!purpose.empty()) base += "_" + std::string(purpose);
    return symbols_->fresh_for(std::string(scope_) + "/" + std::string(node_name_) + "/" + std::string(purpose), base);
  }
  /// Unifies two dims; on a contradiction fails with `incompatible dims a and b <where>`.
  dim unify(const dim& a, const dim& b, std::string_view where = {}) {
    dim ra = symbols_->resolve(a), rb = symbols_->resolve(b);
    if (!symbols_->unify(ra, rb))
      fail("incompatible dims " + ra.to_string() + " and " + rb.to_string() + suffix(where));
    return symbols_->resolve(ra.is_unknown() ? rb : ra);
  }
  /// Unifies two types; on a contradiction fails naming what differs and `where`.
  type unify(const type& a, const type& b, std::string_view where = {}) {
    try {
      return symbols_->unify(a, b);
    } catch (const error& e) {
      fail(e.message() + suffix(where));
    }
  }
  /// Joins two types (a value that is either): different dims become this node's fresh
  /// symbol for `purpose` (stable across visits, so fixed points are reached), named after
  /// the node (`loop`, then `loop_1`, ...).
  type join(const type& a, const type& b, std::string_view purpose) {
    try {
      return symbols_->join(a, b, std::string(scope_) + "/" + std::string(node_name_) + "/" + std::string(purpose), node_name_);
    } catch (const error& e) {
      fail(e.message() + " (" + std::string(purpose) + ")");
    }
  }
  /// Joins two dims like `join` on types.
  dim join(const dim& a, const dim& b, std::string_view purpose) {
    return symbols_->join(a, b, std::string(scope_) + "/" + std::string(node_name_) + "/" + std::string(purpose), node_name_);
  }
  dim resolve(const dim& d) { return symbols_->resolve(d); }

  // ---- functions (control flow) --------------------------------------------------------
  /// Engine side: how `call` reaches the function library.
  void set_function_caller(function_caller c) { caller_ = std::move(c); }
  /// Infers the function `fn` on `args`; returns its results, or an empty vector when the
  /// function cannot be inferred (unknown name, recursion).
  std::vector<port_info> call(std::string_view fn, std::vector<port_info> args) {
    if (!caller_) return {};
    return caller_(fn, std::move(args));
  }

  // ---- limits and diagnostics ----------------------------------------------------------
  /// Values with more elements than this are not computed by value functions.
  std::int64_t max_value_elements() const noexcept { return max_value_elements_; }
  void set_max_value_elements(std::int64_t n) noexcept { max_value_elements_ = n; }
  /// Loops are iterated at most this many times before their carried values are widened to
  /// unknown.
  std::size_t max_loop_iterations() const noexcept { return max_loop_iterations_; }
  void set_max_loop_iterations(std::size_t n) noexcept { max_loop_iterations_ = n; }
  /// Records a note for the pass's diagnostics.
  void note(std::string message) { notes_.push_back(std::move(message)); }
  const std::vector<std::string>& notes() const noexcept { return notes_; }

  /// Throws `gpass::error` naming this node and op.
  [[noreturn]] void fail(std::string message) const {
    error_context c;
    c.node = node_name_;
    c.op = op_;
    throw error(std::move(message), std::move(c));
  }

 private:
  static std::string suffix(std::string_view where) { return where.empty() ? std::string() : " " + std::string(where); }

  // views of the node's strings and the caller's scope: they outlive the context
  std::string_view node_name_, op_, domain_;
  int opset_ = 0;
  const attribute_map* attrs_;
  std::vector<port_info> owned_inputs_;   // the copying constructor's inputs
  std::vector<const port_info*> inputs_;  // nullptr: omitted
  std::vector<port_info> owned_current_;
  const port_info* current_ = nullptr;
  std::size_t num_current_ = 0;
  std::vector<port_info> outputs_;
  symbol_table* symbols_;
  std::string_view scope_;
  const op_schema* schema_;
  function_caller caller_;
  std::int64_t max_value_elements_ = 4096;
  std::size_t max_loop_iterations_ = 16;
  std::vector<std::pair<std::size_t, type>> refinements_;
  std::vector<std::string> notes_;
};

}  // namespace gpass

#include <gpass/ops/schema.hpp>

inline const gpass::attribute* gpass::infer_context::attr(std::string_view n) const {
  auto it = attrs_->find(n);
  if (it != attrs_->end()) return &it->second;
  if (schema_)
    if (const attribute_spec* s = schema_->find_attribute(n))
      if (s->default_value) return &*s->default_value;
  return nullptr;
}

inline std::optional<gpass::dtype> gpass::infer_context::attr_dtype(std::string_view n) const {
  const attribute* a = attr(n);
  if (!a) return std::nullopt;
  if (a->is<dtype>()) return a->as<dtype>();
  if (a->is<std::int64_t>()) {
    if (auto d = dtype_from_onnx_code(a->as<std::int64_t>())) return *d;
    fail("attribute '" + std::string(n) + "': unknown data type " + std::to_string(a->as<std::int64_t>()));
  }
  if (a->is<std::string>()) {
    if (auto d = parse_dtype(a->as<std::string>())) return *d;
  }
  fail("attribute '" + std::string(n) + "' is a " + std::string(a->kind_name()) + ", expected a dtype");
}
