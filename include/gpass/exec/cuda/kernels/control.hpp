// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file control.hpp
/// The CUDA kernels of constants, control flow and the session's transfers: `Constant` (its
/// value copied to the device once, on the node's first run, and shared by every run after),
/// `Identity`; ONNX `If` and `Loop` and the core `if`, `while` and `call`, whose functions run
/// on the device with their values in device memory (a condition is read back once per
/// iteration: the one synchronization a loop needs); the list ops (`register_list_kernels`:
/// TensorArrays and TensorLists with their elements in device memory); and `send` / `recv`
/// (`register_transfer_kernels`: device to host and back).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/tensor.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/list_kernels.hpp>
#include <gpass/exec/transfer_kernels.hpp>

namespace gpass::exec {

namespace cuda_detail {

using cvalue = basic_value<cuda_tensor>;

inline std::string function_attr(const kernel_node& n, const char* a) {
  auto it = n.attrs.find(a);
  if (it == n.attrs.end() || !it->second.is<function_ref>()) n.fail(std::string("attribute '") + a + "' must name a function");
  return it->second.as<function_ref>().name;
}

/// The one element of a device tensor (bool or number) read back on the host, as true when
/// non-zero; a tensor of another element count is an error naming `what`.
inline bool device_truth(context& ctx, const cuda_tensor& t, const char* what) {
  if (t.size() != 1) ctx.fail(std::string(what) + " must have one element, has " + std::to_string(t.size()));
  const gpass::tensor h = ctx.policy().download(t, ctx.stream());
  bool r = false;
  visit_dtype(h.element_type(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) r = h.data<bool>()[0];
    else if constexpr (std::is_arithmetic_v<T>) r = h.data<T>()[0] != T(0);
    else ctx.fail(std::string(what) + " has element type " + std::string(to_string(h.element_type())));
  });
  return r;
}

/// `parts` stacked along a new axis 0 (each part contiguous: one device copy per part).
inline cuda_tensor stack0(context& ctx, const std::vector<cuda_tensor>& parts, dtype empty_type) {
  if (parts.empty()) return ctx.policy().allocate_tensor(empty_type == dtype::undefined ? dtype::f32 : empty_type, {0}, ctx.stream());
  const auto& first = parts.front();
  for (const auto& p : parts)
    if (p.sizes() != first.sizes() || p.element_type() != first.element_type())
      ctx.fail("cannot stack " + std::string(to_string(p.element_type())) + shape::of(p.sizes()).to_string() + " with " +
               std::string(to_string(first.element_type())) + shape::of(first.sizes()).to_string());
  std::vector<std::int64_t> sizes = first.sizes();
  sizes.insert(sizes.begin(), static_cast<std::int64_t>(parts.size()));
  cuda_tensor out = ctx.policy().allocate_tensor(first.element_type(), sizes, ctx.stream());
  const std::size_t bytes = first.nbytes();
  for (std::size_t k = 0; k < parts.size(); ++k)
    ctx.policy().copy_on_device(static_cast<std::byte*>(out.data()) + k * bytes, parts[k].data(), bytes, ctx.stream());
  return out;
}

inline cvalue scalar_on_device(context& ctx, gpass::tensor t) { return ctx.policy().upload(t, ctx.stream()); }

/// The kernel of a constant node of value `v` (ONNX's Constant, TF's Const): uploaded once,
/// the first run pays the copy and every later run shares the device tensor.
inline fn constant_kernel(gpass::tensor v, const kernel_node& n) {
  if (!cuda::holds(v.element_type()))
    n.fail("no CUDA kernel for a constant of element type " + std::string(to_string(v.element_type())));
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
}

}  // namespace cuda_detail

/// Registers Constant, Identity, the control-flow ops, send and recv for the CUDA policy.
inline void register_cuda_control(kernel_registry<cuda>& r) {
  using cuda_detail::context;
  using cuda_detail::fn;
  r.add({.op = "Constant", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    return cuda_detail::constant_kernel(constant_attr_value(n), n);
  }});
  r.add({.op = "Identity", .alias_input = 0, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) { ctx.set_output(0, ctx.input_value(0)); };
  }});
  using cuda_detail::cvalue;
  using cuda_detail::function_attr;
  auto captures = [](const kernel_node& n) { return static_cast<std::size_t>(n.attr<std::int64_t>("_captures", 0)); };
  auto finish = [](context& ctx, std::vector<cvalue> out, const std::string& f) {
    if (out.size() != ctx.num_outputs())
      ctx.fail("function '" + f + "' returned " + std::to_string(out.size()) + " values for " + std::to_string(ctx.num_outputs()) +
               " outputs");
    for (std::size_t k = 0; k < out.size(); ++k) ctx.set_output(k, std::move(out[k]));
  };
  r.add({.op = "If", .type_input = -1, .make = [captures, finish](const kernel_node& n) -> fn {
    const std::string then_f = function_attr(n, "then_branch"), else_f = function_attr(n, "else_branch");
    const std::size_t caps = captures(n);
    return [then_f, else_f, caps, finish](context& ctx) {
      const bool c = cuda_detail::device_truth(ctx, ctx.input(0), "the If condition");
      std::vector<cvalue> args;
      for (std::size_t i = ctx.num_inputs() - caps; i < ctx.num_inputs(); ++i) args.push_back(ctx.input_value(i));
      const std::string& f = c ? then_f : else_f;
      finish(ctx, ctx.call(f, std::move(args)), f);
    };
  }});
  r.add({.op = "if", .type_input = -1, .make = [finish](const kernel_node& n) -> fn {
    const std::string then_f = function_attr(n, "then_branch"), else_f = function_attr(n, "else_branch");
    return [then_f, else_f, finish](context& ctx) {
      const bool c = cuda_detail::device_truth(ctx, ctx.input(0), "the if predicate");
      std::vector<cvalue> args;
      for (std::size_t i = 1; i < ctx.num_inputs(); ++i) args.push_back(ctx.input_value(i));
      const std::string& f = c ? then_f : else_f;
      finish(ctx, ctx.call(f, std::move(args)), f);
    };
  }});
  r.add({.op = "call", .type_input = -1, .make = [finish](const kernel_node& n) -> fn {
    const std::string f = function_attr(n, "f");
    return [f, finish](context& ctx) {
      std::vector<cvalue> args;
      for (std::size_t i = 0; i < ctx.num_inputs(); ++i) args.push_back(ctx.input_value(i));
      finish(ctx, ctx.call(f, std::move(args)), f);
    };
  }});
  // while(v...) {cond, body}: TensorFlow's loop; the condition's bool scalar read back once
  // per iteration
  r.add({.op = "while", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string cond = function_attr(n, "cond"), body = function_attr(n, "body");
    if (n.num_outputs() > n.num_inputs()) n.fail("while has more outputs than loop-carried inputs");
    return [cond, body](context& ctx) {
      std::vector<cvalue> state;
      for (std::size_t i = 0; i < ctx.num_inputs(); ++i) state.push_back(ctx.input_value(i));
      for (std::int64_t i = 0;; ++i) {
        ctx.check_iteration(i);
        auto c = ctx.call(cond, state);
        if (c.size() != 1 || !c[0].is_tensor() || c[0].tensor().element_type() != dtype::bool_ || c[0].tensor().rank() != 0)
          ctx.fail("condition '" + cond + "' must return one bool scalar");
        if (!cuda_detail::device_truth(ctx, c[0].tensor(), "the while condition")) break;
        auto next = ctx.call(body, std::move(state));
        if (next.size() != ctx.num_inputs())
          ctx.fail("body '" + body + "' returned " + std::to_string(next.size()) + " values for " + std::to_string(ctx.num_inputs()) +
                   " loop-carried values");
        state = std::move(next);
      }
      for (std::size_t k = 0; k < ctx.num_outputs(); ++k) ctx.set_output(k, std::move(state[k]));
    };
  }});
  // Loop(M, cond, v...): ONNX's loop; scan outputs stacked along a new axis 0
  r.add({.op = "Loop", .type_input = -1, .make = [captures](const kernel_node& n) -> fn {
    const std::string body = function_attr(n, "body");
    const std::size_t caps = captures(n);
    if (n.num_inputs() < 2 + caps) n.fail("Loop needs M and cond inputs");
    const std::size_t carried = n.num_inputs() - 2 - caps;
    if (carried > n.num_outputs()) n.fail("Loop has fewer outputs than loop-carried values");
    std::vector<dtype> scan_types;
    for (std::size_t k = carried; k < n.num_outputs(); ++k)
      scan_types.push_back(n.output_types[k].is_tensor() ? n.output_types[k].tensor().element : dtype::undefined);
    return [body, caps, carried, scan_types](context& ctx) {
      std::int64_t max_trip = -1;
      if (ctx.has_input(0)) {
        const auto m = cuda_detail::host_ints(ctx, 0);
        if (m.size() != 1) ctx.fail("the trip count M must have one element");
        max_trip = m[0];
      }
      bool cond = !ctx.has_input(1) || cuda_detail::device_truth(ctx, ctx.input(1), "the loop condition");
      std::vector<cvalue> state;
      for (std::size_t k = 0; k < carried; ++k) state.push_back(ctx.input_value(2 + k));
      std::vector<cvalue> captured;
      for (std::size_t i = ctx.num_inputs() - caps; i < ctx.num_inputs(); ++i) captured.push_back(ctx.input_value(i));
      const std::size_t num_scan = ctx.num_outputs() - carried;
      std::vector<std::vector<cuda_tensor>> scans(num_scan);
      for (std::int64_t i = 0; (max_trip < 0 || i < max_trip) && cond; ++i) {
        ctx.check_iteration(i);
        std::vector<cvalue> args;
        args.push_back(cuda_detail::scalar_on_device(ctx, gpass::tensor::scalar<std::int64_t>(i)));
        args.push_back(cuda_detail::scalar_on_device(ctx, gpass::tensor::scalar<bool>(cond)));
        for (auto& s : state) args.push_back(std::move(s));
        for (const auto& c : captured) args.push_back(c);
        auto out = ctx.call(body, std::move(args));
        if (out.size() != 1 + carried + num_scan)
          ctx.fail("loop body returned " + std::to_string(out.size()) + " values, expected " + std::to_string(1 + carried + num_scan));
        cond = cuda_detail::device_truth(ctx, out[0].tensor(), "the body's condition output");
        for (std::size_t k = 0; k < carried; ++k) state[k] = std::move(out[1 + k]);
        for (std::size_t k = 0; k < num_scan; ++k) scans[k].push_back(out[1 + carried + k].tensor());
      }
      for (std::size_t k = 0; k < carried; ++k) ctx.set_output(k, std::move(state[k]));
      for (std::size_t k = 0; k < num_scan; ++k) ctx.set_output(carried + k, cuda_detail::stack0(ctx, scans[k], scan_types[k]));
    };
  }});
  r.add({.op = "make_tuple", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    if (n.num_inputs() != 0) n.fail("a tuple of values has no run-time form (only the empty tuple runs)");
    return [](context& ctx) { ctx.set_output(0, cvalue{}); };
  }});
  r.add({.op = "get_tuple", .type_input = -1, .alias_input = 0, .make = [](const kernel_node&) -> fn {
    return [](context& ctx) { ctx.set_output(0, ctx.input_value(0)); };
  }});
  register_list_kernels(r);
  register_transfer_kernels(r);
}

}  // namespace gpass::exec
