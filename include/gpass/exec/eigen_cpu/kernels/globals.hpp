#pragma once
/// \file globals.hpp
/// Eigen CPU kernels of the core ops `get_global` and `set_global` (TensorFlow variables
/// after `gpass::variables_to_globals`): they read and write the running plan's
/// `global_store`.

#include <string>
#include <utility>

#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/globals.hpp>

namespace gpass::exec::cpu_detail {

/// Registers `get_global` (output 0: the global's current value; a global without a value is
/// an error naming it) and `set_global` (stores a copy of input 0, which may live in a run's
/// arena, and outputs input 0: the new value, as TensorFlow's `Assign` does). Both need
/// the `variable` string attribute. Ordering between reads and writes is the graph's (data
/// and control edges).
template <class P = eigen_cpu>
void register_globals(kernel_registry<P>& r) {
  using context = kernel_context<P>;
  using fn = kernel_fn<P>;
  r.add({.op = "get_global", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string var = n.attr<std::string>("variable");
    return [var](context& ctx) {
      auto v = ctx.globals().get(var);
      if (!v) ctx.fail("global '" + var + "' has no value (the variable was never initialized or assigned)");
      ctx.set_output(0, std::move(*v));
    };
  }});
  r.add({.op = "set_global", .type_input = 0, .make = [](const kernel_node& n) -> fn {
    const std::string var = n.attr<std::string>("variable");
    return [var](context& ctx) {
      const auto& x = ctx.input(0);
      ctx.globals().set(var, x.clone());
      if (ctx.num_outputs() > 0) ctx.set_output(0, ctx.input_value(0));
    };
  }});
}

}  // namespace gpass::exec::cpu_detail
