#pragma once
/// \file kernel.hpp
/// Kernels: `kernel_node` (a node as a kernel sees it when a plan binds it),
/// `kernel_context<P>` (what a kernel sees when it runs), `kernel_def<P>` and
/// `kernel_registry<P>` (lookup by domain, op, opset and dtype).
///
/// A kernel is made once per node when a plan is built (`kernel_def::make(node)`, which
/// reads and checks the attributes) and then called for every run: `void(kernel_context&)`.
/// The callable is shared by concurrent runs of the plan, so it must not change its own
/// state (capture what the attributes say, by value, and nothing mutable).
/// \code
///   reg.add({.op = "Relu", .dtypes = {gpass::dtype::f32},
///            .make = [](const gpass::exec::kernel_node&) {
///              return [](auto& ctx) {
///                const auto& x = ctx.input(0);
///                auto& y = ctx.allocate_output(0, x.element_type(), x.sizes());
///                ...
///              };
///            }});
/// \endcode

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/core/type.hpp>
#include <gpass/exec/globals.hpp>
#include <gpass/exec/policy.hpp>
#include <gpass/exec/value.hpp>

namespace gpass::exec {

/// A node as a kernel factory sees it: identity, attributes, the opset of its domain, and
/// the types inference gave its inputs and outputs (`type{}` where unknown).
struct kernel_node {
  std::string name;
  std::string op;
  std::string domain;
  attribute_map attrs;
  int opset = 0;  ///< version of the node's domain imported by the model; 0 when unknown
  std::vector<type> input_types;
  std::vector<type> output_types;
  /// Per input port, the value the input always has, when the plan knows it while binding:
  /// the `value` tensor of the `Constant` node that produces it (an initializer). Shorter
  /// than `input_types`, or an empty optional, where not known. A kernel may precompute from
  /// it (e.g. pack a weight matrix once) but must still accept any input at run time.
  std::vector<std::optional<gpass::tensor>> constant_inputs;

  std::size_t num_inputs() const noexcept { return input_types.size(); }
  /// The constant value of input `i` (see `constant_inputs`), or null.
  const gpass::tensor* constant_input(std::size_t i) const noexcept {
    return i < constant_inputs.size() && constant_inputs[i] ? &*constant_inputs[i] : nullptr;
  }
  std::size_t num_outputs() const noexcept { return output_types.size(); }
  bool has_attr(std::string_view a) const { return attrs.find(a) != attrs.end(); }
  /// Attribute `a` as `T`, or `fallback` when absent; a value of another kind is an error
  /// naming the node.
  template <class T>
  T attr(std::string_view a, T fallback) const {
    auto it = attrs.find(a);
    if (it == attrs.end()) return fallback;
    return attr_as<T>(it->second, a);
  }
  /// Attribute `a` as `T`; absent is an error naming the node.
  template <class T>
  T attr(std::string_view a) const {
    auto it = attrs.find(a);
    if (it == attrs.end()) fail("missing attribute '" + std::string(a) + "'");
    return attr_as<T>(it->second, a);
  }
  /// Throws `gpass::error` naming this node and op.
  [[noreturn]] void fail(const std::string& message) const { throw_node_error(message, name, op); }

 private:
  template <class T>
  T attr_as(const attribute& v, std::string_view a) const {
    if constexpr (std::is_same_v<T, int> || std::is_same_v<T, std::int64_t>) {
      if (v.is<std::int64_t>()) return static_cast<T>(v.as<std::int64_t>());
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (v.is<double>()) return static_cast<T>(v.as<double>());
      if (v.is<std::int64_t>()) return static_cast<T>(v.as<std::int64_t>());
    } else if constexpr (std::is_same_v<T, std::vector<float>>) {
      if (v.is<std::vector<double>>()) {
        const auto& d = v.as<std::vector<double>>();
        return std::vector<float>(d.begin(), d.end());
      }
    } else {
      if (v.is<T>()) return v.as<T>();
    }
    fail("attribute '" + std::string(a) + "' is a " + std::string(v.kind_name()) + " (unexpected kind)");
  }
};

template <class P>
class kernel_context;

/// A bound kernel: called once per run of its node.
template <class P>
using kernel_fn = std::function<void(kernel_context<P>&)>;

namespace detail {
/// What a kernel context needs from the running plan (implemented by `plan`).
template <class P>
struct run_services {
  virtual ~run_services() = default;
  /// Runs function `name` of the graph's library on `args`; returns its results.
  virtual std::vector<basic_value<typename P::tensor_type>> call(std::string_view name,
                                                                  std::vector<basic_value<typename P::tensor_type>> args) const = 0;
  /// The globals of the running plan (`get_global` / `set_global`); null when there are none
  /// (a kernel run on its own by `run_kernel`).
  virtual global_store* run_globals() const { return nullptr; }
};

/// A planned buffer for an output: `size` bytes at `offset` in the run's arena.
struct planned_buffer {
  std::size_t offset = 0;
  std::size_t size = 0;  ///< 0: not planned (allocated at run time)
};
}  // namespace detail

/// What a kernel sees while it runs: its inputs, its outputs, the policy (thread pool,
/// streams) and the node. Inputs are never written. Errors thrown from a kernel get the
/// node's name and op attached by the plan.
template <class P>
class kernel_context {
 public:
  using tensor_type = typename P::tensor_type;
  using value_type = basic_value<tensor_type>;

  /// Built by the plan for each step of a run.
  kernel_context(const kernel_node& node, P& policy, typename P::stream_type& stream,
                 std::span<const value_type* const> inputs, std::span<value_type> outputs,
                 std::span<const detail::planned_buffer> planned, const std::shared_ptr<std::byte[]>* arena,
                 std::span<const char> wanted, const detail::run_services<P>* services)
      : node_(&node), policy_(&policy), stream_(&stream), inputs_(inputs), outputs_(outputs),
        planned_(planned), arena_(arena), wanted_(wanted), services_(services) {}

  const kernel_node& node() const noexcept { return *node_; }
  P& policy() const noexcept { return *policy_; }
  typename P::stream_type& stream() const noexcept { return *stream_; }

  std::size_t num_inputs() const noexcept { return inputs_.size(); }
  /// True when input `i` exists, is connected, and is not an absent optional.
  bool has_input(std::size_t i) const noexcept {
    return i < inputs_.size() && inputs_[i] != nullptr && !inputs_[i]->is_none();
  }
  /// Input `i` as a value (a `none` value when omitted).
  const value_type& input_value(std::size_t i) const {
    static const value_type none{};
    if (i >= inputs_.size() || inputs_[i] == nullptr) return none;
    return *inputs_[i];
  }
  /// Input `i` as a tensor; an omitted input or a sequence is an error naming the node.
  const tensor_type& input(std::size_t i) const {
    if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
    if (!inputs_[i]->is_tensor()) fail("input " + std::to_string(i) + " is a " + inputs_[i]->kind_name() + ", not a tensor");
    return inputs_[i]->tensor();
  }

  std::size_t num_outputs() const noexcept { return outputs_.size(); }
  /// False when nothing consumes output `i` (a kernel may skip computing an optional output).
  bool output_wanted(std::size_t i) const noexcept { return i < wanted_.size() && wanted_[i]; }

  /// Output `i` as a new tensor of `t` and `sizes` whose contents are unspecified: the kernel
  /// must write every element. Uses the buffer the plan reserved for it when the sizes
  /// match the plan's, otherwise allocates.
  tensor_type& allocate_output(std::size_t i, dtype t, std::vector<std::int64_t> sizes) {
    check_output(i);
    if constexpr (std::is_same_v<tensor_type, gpass::tensor>) {
      if (i < planned_.size() && planned_[i].size != 0 && arena_ && t != dtype::string) {
        const std::size_t need = static_cast<std::size_t>(num_elements(sizes)) * size_of(t);
        if (need != 0 && need <= planned_[i].size) {
          std::shared_ptr<std::byte[]> view(*arena_, arena_->get() + planned_[i].offset);
          outputs_[i] = gpass::tensor::wrap(t, std::move(sizes), std::move(view));
          return outputs_[i].tensor();
        }
      }
    }
    outputs_[i] = policy_->allocate_tensor(t, std::move(sizes), *stream_);
    return outputs_[i].tensor();
  }
  /// Output `i` as the kernel made it (after `allocate_output`), to be finished in place.
  tensor_type& output(std::size_t i) {
    check_output(i);
    if (!outputs_[i].is_tensor()) fail("output " + std::to_string(i) + " is not a tensor yet");
    return outputs_[i].tensor();
  }
  /// Like `allocate_output`, with every element zero (false, "").
  tensor_type& allocate_output_zeroed(std::size_t i, dtype t, std::vector<std::int64_t> sizes) {
    auto& r = allocate_output(i, t, std::move(sizes));
    policy_->fill_zero(r, *stream_);
    return r;
  }
  /// Sets output `i` to `v` (a tensor made by the kernel, a view of an input, a sequence).
  void set_output(std::size_t i, value_type v) {
    check_output(i);
    outputs_[i] = std::move(v);
  }

  /// Runs function `name` of the graph's library (a loop body, a branch) on `args` (its
  /// formal inputs, then the captures the importer made explicit) and returns its results.
  std::vector<value_type> call(std::string_view name, std::vector<value_type> args) const {
    if (!services_) fail("cannot call function '" + std::string(name) + "' here");
    return services_->call(name, std::move(args));
  }

  /// The globals of the running plan (`get_global` / `set_global`, see `global_store`);
  /// fails naming the node when the kernel runs outside a plan (`run_kernel`).
  global_store& globals() const {
    global_store* g = services_ ? services_->run_globals() : nullptr;
    if (!g) fail("no globals here (the kernel runs outside a plan)");
    return *g;
  }

  /// Throws `gpass::error` naming the node and op.
  [[noreturn]] void fail(const std::string& message) const { node_->fail(message); }

 private:
  void check_output(std::size_t i) const {
    if (i >= outputs_.size())
      fail("output " + std::to_string(i) + " out of range (" + std::to_string(outputs_.size()) + " outputs)");
  }

  const kernel_node* node_;
  P* policy_;
  typename P::stream_type* stream_;
  std::span<const value_type* const> inputs_;
  std::span<value_type> outputs_;
  std::span<const detail::planned_buffer> planned_;
  const std::shared_ptr<std::byte[]>* arena_;
  std::span<const char> wanted_;
  const detail::run_services<P>* services_;
};

/// A kernel definition: which nodes it serves and how to make the callable for one node.
template <class P>
struct kernel_def {
  std::string domain;          ///< op domain ("" for the default ONNX / gpass domain)
  std::string op;              ///< op name
  int since_version = 1;       ///< first opset of the domain it implements
  std::vector<dtype> dtypes;   ///< element types of input `type_input` it accepts; empty: any
  int type_input = 0;          ///< the input whose dtype selects the kernel (-1: output 0)
  int alias_input = -1;        ///< output 0 may share the buffer of this input (Reshape, Identity)
  std::function<kernel_fn<P>(const kernel_node&)> make;  ///< builds the kernel of one node
};

/// Kernels of one policy, by (domain, op): for a node, the definition with the highest
/// `since_version` not above the node's opset whose dtype list accepts the node's type.
template <class P>
class kernel_registry {
 public:
  /// Adds a definition (several per op: by opset range or dtype).
  void add(kernel_def<P> def) {
    if (!def.make) throw error("kernel_registry: kernel for '" + def.op + "' has no factory");
    defs_[{def.domain, def.op}].push_back(std::move(def));
  }

  /// True when some kernel serves (domain, op) at some opset.
  bool has(std::string_view domain, std::string_view op) const {
    return defs_.find(std::pair<std::string, std::string>(domain, op)) != defs_.end();
  }

  /// The definition for a node of (domain, op) at `opset` (0: newest) whose type-selecting
  /// input has dtype `t` (`dtype::undefined`: not known yet, any definition); null if none.
  const kernel_def<P>* find(std::string_view domain, std::string_view op, int opset, dtype t) const {
    auto it = defs_.find(std::pair<std::string, std::string>(domain, op));
    if (it == defs_.end()) return nullptr;
    const kernel_def<P>* best = nullptr;
    for (const auto& d : it->second) {
      if (opset > 0 && d.since_version > opset) continue;
      if (t != dtype::undefined && !d.dtypes.empty() && std::find(d.dtypes.begin(), d.dtypes.end(), t) == d.dtypes.end())
        continue;
      if (!best || d.since_version > best->since_version) best = &d;
    }
    return best;
  }

  /// Every (domain, op) served, sorted.
  std::vector<std::pair<std::string, std::string>> ops() const {
    std::vector<std::pair<std::string, std::string>> r;
    for (const auto& [k, v] : defs_) r.push_back(k);
    return r;
  }

 private:
  std::map<std::pair<std::string, std::string>, std::vector<kernel_def<P>>, std::less<>> defs_;
};

}  // namespace gpass::exec

namespace gpass::exec {

/// Runs the kernel `registry` has for `node` once on `inputs` (one value per input port; a
/// `none` value for an omitted one) and returns its outputs. The one-node evaluation that
/// constant folding and kernel tests use; plans bind kernels once instead.
/// \code
///   gpass::exec::eigen_cpu cpu;
///   gpass::exec::kernel_node n{.name = "r", .op = "Relu", .input_types = {t}, .output_types = {t}};
///   auto out = gpass::exec::run_kernel(cpu, cpu.kernels(), n, {x});
/// \endcode
template <class P>
std::vector<basic_value<typename P::tensor_type>> run_kernel(P& policy, const kernel_registry<P>& registry,
                                                             const kernel_node& node,
                                                             std::vector<basic_value<typename P::tensor_type>> inputs) {
  using value_type = basic_value<typename P::tensor_type>;
  kernel_node n = node;
  if (n.input_types.size() < inputs.size()) n.input_types.resize(inputs.size());
  if (n.output_types.empty()) n.output_types.resize(1);
  dtype t = dtype::undefined;
  // the dtype of the first tensor input selects among the definitions (kernels check the rest)
  for (const auto& v : inputs)
    if (v.is_tensor()) {
      t = v.tensor().element_type();
      break;
    }
  const kernel_def<P>* def = registry.find(n.domain, n.op, n.opset, dtype::undefined);
  if (!def) n.fail("no " + std::string(P::name) + " kernel for op '" + n.op + "'" + (n.domain.empty() ? "" : " of domain '" + n.domain + "'"));
  if (def->type_input >= 0 && static_cast<std::size_t>(def->type_input) < inputs.size() && inputs[def->type_input].is_tensor())
    t = inputs[def->type_input].tensor().element_type();
  def = registry.find(n.domain, n.op, n.opset, t);
  if (!def) n.fail("no " + std::string(P::name) + " kernel for op '" + n.op + "' on " + std::string(to_string(t)));
  kernel_fn<P> fn = def->make(n);
  std::vector<const value_type*> in(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) in[i] = inputs[i].is_none() ? nullptr : &inputs[i];
  std::vector<value_type> out(n.num_outputs());
  std::vector<char> wanted(n.num_outputs(), 1);
  auto stream = policy.make_stream();
  kernel_context<P> ctx(n, policy, stream, in, out, {}, nullptr, wanted, nullptr);
  try {
    fn(ctx);
  } catch (const error& e) {
    throw e.with_node(n.name, n.op);
  } catch (const std::exception& e) {
    throw error(std::string("kernel failed: ") + e.what(), error_context{.node = n.name, .op = n.op});
  }
  policy.synchronize(stream);
  return out;
}

}  // namespace gpass::exec
