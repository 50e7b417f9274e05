// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file control.hpp
/// The CUDA kernels of constants and the session's transfers: `Constant` (its value copied
/// to the device once, on the node's first run, and shared by every run after), `Identity`,
/// and `send` / `recv` (`register_transfer_kernels`: device to host and back).

#include <memory>
#include <mutex>
#include <string>

#include <gpass/core/tensor.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/transfer_kernels.hpp>

namespace gpass::exec {

/// Registers Constant, Identity, send and recv for the CUDA policy.
inline void register_cuda_control(kernel_registry<cuda>& r) {
  using cuda_detail::context;
  using cuda_detail::fn;
  r.add({.op = "Constant", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    gpass::tensor v;
    if (n.has_attr("value")) v = n.attr<gpass::tensor>("value");
    else if (n.has_attr("value_float")) v = gpass::tensor::scalar(n.attr<float>("value_float"));
    else if (n.has_attr("value_floats")) v = gpass::tensor::from<float>(n.attr<std::vector<float>>("value_floats"));
    else if (n.has_attr("value_int")) v = gpass::tensor::scalar<std::int64_t>(n.attr<std::int64_t>("value_int"));
    else if (n.has_attr("value_ints")) v = gpass::tensor::from<std::int64_t>(n.attr<std::vector<std::int64_t>>("value_ints"));
    else n.fail("Constant has no numeric value attribute (string constants have no CUDA kernel)");
    if (!cuda_codegen::supported(v.element_type()))
      n.fail("no CUDA kernel for a constant of element type " + std::string(to_string(v.element_type())));
    // uploaded once: the first run pays the copy, every later run shares the device tensor
    struct cached {
      gpass::tensor host;
      std::once_flag once;
      cuda_tensor device;
    };
    auto c = std::make_shared<cached>();
    c->host = std::move(v);
    return [c](context& ctx) {
      std::call_once(c->once, [&] { c->device = ctx.policy().upload(c->host, ctx.stream()); });
      ctx.set_output(0, c->device);
    };
  }});
  r.add({.op = "Identity", .alias_input = 0, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) { ctx.set_output(0, ctx.input_value(0)); };
  }});
  register_transfer_kernels(r);
}

}  // namespace gpass::exec
