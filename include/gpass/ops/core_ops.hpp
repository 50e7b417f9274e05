// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file core_ops.hpp
/// The core gpass ops (tuples, functional control flow, functions, globals, session
/// plumbing) and TensorFlow v1 control-flow ops, registered by `register_core_ops`.

#include <gpass/ops/schema.hpp>

namespace gpass {

class op_registry;

/// Registers the core gpass ops into `r`:
/// - `get_tuple` (1 in, 1 out, `index:int`), `make_tuple` (n in, 1 out);
/// - `while` (n in, n out, `cond:func`, `body:func`), `if` (1+n in, m out, `then_branch`, `else_branch`);
/// - `function_entry` (0 in, n out: a function's arguments), `return` (n in, 0 out: its results);
/// - `get_global` / `set_global` (`variable:string`), `update_globals` (an optimizer step:
///   `rule:string`, `variables:strings`, `use_nesterov:bool`);
/// - `arg` / `retval` (`index:int`) and `send` (0 or 1 in) / `recv` (`tensor_name`,
///   `send_device`, `recv_device`) used by the session's partitions;
/// - TF v1 control flow: Enter, Exit, Merge, Switch, NextIteration, LoopCond (may form cycles).
///
/// Type functions: `get_tuple` takes element `index` of its tuple input (any other input: forwards
/// its type and value, the port already selects the value); `make_tuple` makes a
/// tuple type; `while` iterates `body` to a fixed point of the carried types
/// (`loop_fixed_point`) and infers `cond`; `if` joins the results of both branches (only the
/// taken branch when the predicate's value is known); `set_global` forwards its input's type;
/// `function_entry`, `arg`, `get_global`, `recv` keep their declared types; Enter, Exit,
/// NextIteration, LoopCond and Switch forward input 0; Merge joins its known inputs with its
/// own previous type (so a TF v1 loop reaches a fixed point) and outputs an `i32` index.
void register_core_ops(op_registry& r);

}  // namespace gpass

#include <gpass/ops/infer_context.hpp>
#include <gpass/ops/loop_fixed_point.hpp>

namespace gpass::detail {

inline void core_get_tuple(infer_context& c) {
  const type& t = c.input_type(0);
  std::int64_t i = c.attr_int("index", 0);
  if (t.is_tuple()) {
    const auto& e = t.tuple().elements;
    if (i < 0 || static_cast<std::size_t>(i) >= e.size())
      c.fail("index " + std::to_string(i) + " out of range for " + t.to_string());
    c.set_output(0, e[static_cast<std::size_t>(i)]);
  } else if (!t.is_unknown()) {
    c.output(0) = c.input(0);  // not a tuple: the value of the port it reads (TF `node:i`)
  }
}

inline void core_make_tuple(infer_context& c) {
  tuple_type t;
  for (std::size_t i = 0; i < c.num_inputs(); ++i) t.elements.push_back(c.input_type(i));
  c.set_output(0, std::move(t));
}

// The rules of `update_globals`: how many globals each updates and how many inputs it takes.
struct update_rule {
  std::string_view name;    ///< the `rule` attribute
  std::string_view tf_op;   ///< the TensorFlow op it lowers (and its `Resource` form)
  std::size_t variables;    ///< globals updated (the op's leading variable inputs)
  std::size_t inputs;       ///< the other inputs (hyper-parameters and the gradient)
  std::size_t gradient;     ///< which of them is the gradient (TensorFlow's argument order)
};
inline constexpr update_rule update_rules[] = {
    {"gradient_descent", "ApplyGradientDescent", 1, 2, 1}, {"momentum", "ApplyMomentum", 2, 3, 1},
    {"adam", "ApplyAdam", 3, 7, 6},                        {"adagrad", "ApplyAdagrad", 2, 2, 1},
    {"adagrad_v2", "ApplyAdagradV2", 2, 3, 2},             {"rmsprop", "ApplyRMSProp", 3, 5, 4},
    {"centered_rmsprop", "ApplyCenteredRMSProp", 4, 5, 4}, {"adadelta", "ApplyAdadelta", 3, 4, 3},
    {"ftrl", "ApplyFtrl", 3, 5, 0},                        {"ftrl_v2", "ApplyFtrlV2", 3, 6, 0},
    {"proximal_gradient_descent", "ApplyProximalGradientDescent", 1, 4, 3},
    {"proximal_adagrad", "ApplyProximalAdagrad", 2, 4, 3}};
/// The rule named `name`, or null.
inline const update_rule* find_update_rule(std::string_view name) {
  for (const auto& r : update_rules)
    if (r.name == name) return &r;
  return nullptr;
}

// update_globals: output 0 has the gradient's type, which is the variable's (the gradient's
// position is the rule's, as in TensorFlow's ops; the last input for an unknown rule).
inline std::size_t update_globals_gradient(std::string_view rule, std::size_t inputs) {
  if (const update_rule* r = find_update_rule(rule); r && r->gradient < inputs) return r->gradient;
  return inputs == 0 ? 0 : inputs - 1;
}
inline void core_update_globals_type(infer_context& c) {
  if (c.num_outputs() == 0 || c.num_inputs() == 0) return;
  const std::size_t g = update_globals_gradient(c.attr_string("rule", ""), c.num_inputs());
  if (g < c.num_inputs()) c.set_output(0, c.input_type(g));
}

// The type of input 0 with dim 0 divided (batch_slice) or multiplied (all_gather) by
// `factor`, unknown when it is not a known multiple.
inline void core_scale_dim0(infer_context& c, std::int64_t factor, bool divide) {
  if (c.num_outputs() == 0 || c.num_inputs() == 0) return;
  type t = c.input_type(0);
  if (t.is_tensor() && t.tensor().shape.has_rank() && t.tensor().shape.rank() > 0 && factor > 0) {
    tensor_type tt = t.tensor();
    std::vector<dim> dims;
    for (std::size_t d = 0; d < tt.shape.rank(); ++d) dims.push_back(tt.shape[d]);
    if (dims[0].is_known() && (!divide || dims[0].value() % factor == 0))
      dims[0] = dim(divide ? dims[0].value() / factor : dims[0].value() * factor);
    else
      dims[0] = dim::unknown();
    tt.shape = shape(std::move(dims));
    t = type(std::move(tt));
  }
  c.set_output(0, std::move(t));
}

inline void core_forward(infer_context& c) {
  for (std::size_t k = 0; k < c.num_outputs(); ++k) c.output(k) = c.input(0);
}

inline void core_while(infer_context& c) {
  auto body = c.attr_function("body");
  auto cond = c.attr_function("cond");
  std::vector<port_info> init;
  for (std::size_t i = 0; i < c.num_inputs(); ++i) init.push_back(c.input(i));
  auto state = loop_fixed_point(c, init, [&](const std::vector<port_info>& s) -> std::optional<std::vector<port_info>> {
    if (!body) return std::nullopt;
    auto r = c.call(*body, s);
    if (r.size() < s.size()) return std::nullopt;
    r.resize(s.size());
    return r;
  });
  if (cond) c.call(*cond, state);
  for (std::size_t k = 0; k < c.num_outputs() && k < state.size(); ++k) c.output(k) = state[k];
}

// The join of two branches' results into the outputs; `taken` selects one when known.
inline void join_branches(infer_context& c, const std::vector<port_info>& a, const std::vector<port_info>& b,
                          std::optional<bool> taken) {
  for (std::size_t k = 0; k < c.num_outputs(); ++k) {
    const bool ha = k < a.size(), hb = k < b.size();
    if (taken) {
      if (*taken && ha) c.output(k) = a[k];
      if (!*taken && hb) c.output(k) = b[k];
      continue;
    }
    if (!ha || !hb) continue;
    c.set_output(k, c.join(a[k].type, b[k].type, "out" + std::to_string(k)));
    if (a[k].value == b[k].value) c.set_value(k, a[k].value);
  }
}

inline std::optional<bool> known_predicate(const infer_context& c, std::size_t i) {
  auto v = c.input_ints(i);
  if (v && v->size() == 1) return (*v)[0] != 0;
  if (auto d = c.input_doubles(i); d && d->size() == 1) return (*d)[0] != 0;
  return std::nullopt;
}

inline void core_if(infer_context& c) {
  std::vector<port_info> args;
  for (std::size_t i = 1; i < c.num_inputs(); ++i) args.push_back(c.input(i));
  auto tb = c.attr_function("then_branch");
  auto eb = c.attr_function("else_branch");
  std::vector<port_info> a = tb ? c.call(*tb, args) : std::vector<port_info>{};
  std::vector<port_info> b = eb ? c.call(*eb, args) : std::vector<port_info>{};
  join_branches(c, a, b, known_predicate(c, 0));
}

inline void core_call(infer_context& c) {
  auto f = c.attr_function("f");
  if (!f) return;
  std::vector<port_info> args;
  for (std::size_t i = 0; i < c.num_inputs(); ++i) args.push_back(c.input(i));
  std::vector<port_info> r = c.call(*f, args);
  if (r.size() != c.num_outputs())
    c.fail("function '" + *f + "' returns " + std::to_string(r.size()) + " values, the call has " +
           std::to_string(c.num_outputs()) + " outputs");
  for (std::size_t k = 0; k < r.size(); ++k) c.output(k) = r[k];
}

inline void core_merge(infer_context& c) {
  std::optional<port_info> acc;
  if (!c.current_output(0).type.is_unknown()) acc = c.current_output(0);
  for (std::size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i) || c.input_type(i).is_unknown()) continue;  // not reached yet (back edge)
    if (!acc) {
      acc = c.input(i);
      continue;
    }
    port_info j;
    j.type = c.join(acc->type, c.input_type(i), "out0");
    if (acc->value == c.input_value(i)) j.value = acc->value;
    acc = std::move(j);
  }
  if (acc) c.output(0) = *acc;
  c.set_tensor(1, dtype::int32, shape::scalar());
}

}  // namespace gpass::detail

// after the helpers: registry.hpp includes the ONNX schemas, which use them
#include <gpass/ops/registry.hpp>

inline void gpass::register_core_ops(op_registry& r) {
  constexpr int U = op_schema::unbounded;
  auto add = [&](std::string name, int min_in, int max_in, int min_out, int max_out,
                 std::vector<attribute_spec> attrs, op_traits t, std::string doc, infer_function f = {}) {
    op_schema s;
    s.infer = std::move(f);
    s.name = std::move(name);
    s.min_inputs = min_in;
    s.max_inputs = max_in;
    s.min_outputs = min_out;
    s.max_outputs = max_out;
    s.attributes = std::move(attrs);
    s.traits = t;
    s.doc = std::move(doc);
    r.add(std::move(s));
  };
  auto req = [](std::string n, std::string k) { return attribute_spec{std::move(n), std::move(k), true, {}}; };
  auto opt = [](std::string n, std::string k, attribute v) {
    return attribute_spec{std::move(n), std::move(k), false, std::move(v)};
  };
  const op_traits pure{};
  const op_traits effect{.side_effects = true};
  const op_traits term{.terminator = true};
  const op_traits cf{.control_flow = true};
  const op_traits iface{.interface = true};

  add("get_tuple", 1, 1, 1, 1, {req("index", "int")}, pure, "Element `index` of a tuple.", detail::core_get_tuple);
  add("make_tuple", 0, U, 1, 1, {}, pure, "A tuple of its inputs.", detail::core_make_tuple);
  add("while", 0, U, 0, U, {req("cond", "func"), req("body", "func")}, pure,
      "Functional loop: while cond(vars) do vars = body(vars); outputs the final vars.", detail::core_while);
  add("if", 1, U, 0, U, {req("then_branch", "func"), req("else_branch", "func")}, pure,
      "Functional conditional: input 0 selects then_branch or else_branch, applied to the other inputs.",
      detail::core_if);
  add("call", 0, U, 0, U, {req("f", "func")}, pure,
      "Applies function `f` to the inputs; its results are the outputs (ONNX model-local functions; "
      "`inline-functions` replaces calls by the functions' bodies).",
      detail::core_call);
  add("function_entry", 0, 0, 0, U, {}, iface, "The arguments of a function, one per output port.");
  add("return", 0, U, 0, 0, {}, term, "The results of a graph or function, one per input port.");
  add("get_global", 0, 0, 1, 1, {req("variable", "string")}, op_traits{.stateful = true},
      "Reads the global (variable) `variable`.");
  add("set_global", 1, 1, 0, 1, {req("variable", "string")}, effect, "Writes the global (variable) `variable`.",
      detail::core_forward);
  add("update_globals", 1, U, 0, 1,
      {req("rule", "string"), req("variables", "strings"), opt("use_nesterov", "bool", false),
       opt("update_slots", "bool", true), opt("multiply_linear_by_lr", "bool", false)},
      effect,
      "An optimizer step on globals (TensorFlow's Apply* after variables-to-globals): `rule` gradient_descent "
      "(inputs alpha, delta), momentum (lr, grad, momentum; variables var, accum), adam (beta1_power, "
      "beta2_power, lr, beta1, beta2, epsilon, grad; variables var, m, v), adagrad (lr, grad; variables var, "
      "accum; update_slots), adagrad_v2 (lr, epsilon, grad), rmsprop (lr, rho, momentum, epsilon, grad; "
      "variables var, ms, mom), centered_rmsprop (the same; variables var, mg, ms, mom), adadelta (lr, rho, epsilon, "
      "grad; variables var, accum, accum_update), ftrl (grad, lr, l1, l2, lr_power) or ftrl_v2 (grad, lr, l1, l2, "
      "l2_shrinkage, lr_power; variables var, accum, linear; multiply_linear_by_lr), proximal_gradient_descent (alpha, "
      "l1, l2, delta) or proximal_adagrad (lr, l1, l2, grad; variables var, accum); output: the new value of the first.",
      detail::core_update_globals_type);
  add("arg", 0, 0, 1, 1, {req("index", "int")}, iface, "Session feed `index` read from the call frame.");
  add("retval", 1, 1, 0, 0, {req("index", "int")}, term, "Session fetch `index` written to the call frame.");
  add("send", 0, 1, 0, 0,
      {req("tensor_name", "string"), req("send_device", "string"), req("recv_device", "string")}, effect,
      "Sends its input through the rendezvous (no input: a control edge between devices, nothing sent).");
  add("recv", 0, 0, 1, 1,
      {req("tensor_name", "string"), req("send_device", "string"), req("recv_device", "string")},
      op_traits{.stateful = true}, "Receives a tensor through the rendezvous.");
  const op_traits collective{.stateful = true};
  add("batch_slice", 1, 1, 1, 1, {req("index", "int"), req("count", "int")}, pure,
      "Data parallelism: slice `index` of `count` equal parts of input 0 along dim 0 (a replica's share of a batch).",
      [](infer_context& c) { detail::core_scale_dim0(c, c.attr_int("count", 1), true); });
  add("all_reduce", 1, 1, 1, 1,
      {req("group", "string"), req("replica", "int"), req("replicas", "int"), opt("ranks", "int", std::int64_t{1}),
       opt("reduction", "string", std::string("mean"))},
      collective,
      "Data parallelism: the sum or mean of input 0 over the `replicas` replicas of `group` in this process and "
      "the `ranks` processes of the run; every replica gets the same value.",
      detail::core_forward);
  add("all_gather", 1, 1, 1, 1,
      {req("group", "string"), req("replica", "int"), req("replicas", "int"), opt("ranks", "int", std::int64_t{1})},
      collective,
      "Data parallelism: input 0 of every replica of `group` (of every process) concatenated along dim 0, "
      "process-major then replica order.",
      [](infer_context& c) { detail::core_scale_dim0(c, c.attr_int("replicas", 1) * c.attr_int("ranks", 1), false); });
  add("Enter", 1, 1, 1, 1, {req("frame_name", "string"), opt("is_constant", "bool", false)}, cf,
      "TF v1: enters a loop frame.", detail::core_forward);
  add("Exit", 1, 1, 1, 1, {}, cf, "TF v1: leaves a loop frame.", detail::core_forward);
  add("Merge", 1, U, 2, 2, {}, cf, "TF v1: forwards the first available input; output 1 is its index.",
      detail::core_merge);
  add("Switch", 2, 2, 2, 2, {}, cf, "TF v1: forwards input 0 to output 1 if input 1 (pred) is true, else output 0.",
      detail::core_forward);
  add("NextIteration", 1, 1, 1, 1, {}, cf, "TF v1: feeds the next iteration of a loop.", detail::core_forward);
  add("LoopCond", 1, 1, 1, 1, {}, cf, "TF v1: the loop predicate.", detail::core_forward);
}
