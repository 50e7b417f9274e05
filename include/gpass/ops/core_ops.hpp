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
/// - `get_global` / `set_global` (`variable:string`);
/// - `arg` / `retval` (`index:int`) and `send` / `recv` (`tensor_name`, `send_device`,
///   `recv_device`) used by the session;
/// - TF v1 control flow: Enter, Exit, Merge, Switch, NextIteration, LoopCond (may form cycles).
void register_core_ops(op_registry& r);

}  // namespace gpass

#include <gpass/ops/registry.hpp>

inline void gpass::register_core_ops(op_registry& r) {
  constexpr int U = op_schema::unbounded;
  auto add = [&](std::string name, int min_in, int max_in, int min_out, int max_out,
                 std::vector<attribute_spec> attrs, op_traits t, std::string doc) {
    op_schema s;
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

  add("get_tuple", 1, 1, 1, 1, {req("index", "int")}, pure, "Element `index` of a tuple.");
  add("make_tuple", 0, U, 1, 1, {}, pure, "A tuple of its inputs.");
  add("while", 0, U, 0, U, {req("cond", "func"), req("body", "func")}, pure,
      "Functional loop: while cond(vars) do vars = body(vars); outputs the final vars.");
  add("if", 1, U, 0, U, {req("then_branch", "func"), req("else_branch", "func")}, pure,
      "Functional conditional: input 0 selects then_branch or else_branch, applied to the other inputs.");
  add("function_entry", 0, 0, 0, U, {}, iface, "The arguments of a function, one per output port.");
  add("return", 0, U, 0, 0, {}, term, "The results of a graph or function, one per input port.");
  add("get_global", 0, 0, 1, 1, {req("variable", "string")}, op_traits{.stateful = true},
      "Reads the global (variable) `variable`.");
  add("set_global", 1, 1, 0, 1, {req("variable", "string")}, effect, "Writes the global (variable) `variable`.");
  add("arg", 0, 0, 1, 1, {req("index", "int")}, iface, "Session feed `index` read from the call frame.");
  add("retval", 1, 1, 0, 0, {req("index", "int")}, term, "Session fetch `index` written to the call frame.");
  add("send", 1, 1, 0, 0,
      {req("tensor_name", "string"), req("send_device", "string"), req("recv_device", "string")}, effect,
      "Sends its input through the rendezvous.");
  add("recv", 0, 0, 1, 1,
      {req("tensor_name", "string"), req("send_device", "string"), req("recv_device", "string")},
      op_traits{.stateful = true}, "Receives a tensor through the rendezvous.");
  add("Enter", 1, 1, 1, 1, {req("frame_name", "string"), opt("is_constant", "bool", false)}, cf,
      "TF v1: enters a loop frame.");
  add("Exit", 1, 1, 1, 1, {}, cf, "TF v1: leaves a loop frame.");
  add("Merge", 1, U, 2, 2, {}, cf, "TF v1: forwards the first available input; output 1 is its index.");
  add("Switch", 2, 2, 2, 2, {}, cf, "TF v1: forwards input 0 to output 1 if input 1 (pred) is true, else output 0.");
  add("NextIteration", 1, 1, 1, 1, {}, cf, "TF v1: feeds the next iteration of a loop.");
  add("LoopCond", 1, 1, 1, 1, {}, cf, "TF v1: the loop predicate.");
}
