// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file transfer_kernels.hpp
/// The kernels of the core ops `send` and `recv` for any executor policy: they move a value
/// between the partitions of a session step through its `rendezvous`. The rendezvous holds
/// host values, so a policy whose tensors live on a device copies to the host at `send` and
/// back at `recv` (the host/device copies of a cross-device edge); on the CPU nothing is
/// copied unless the sent tensor lives in the sender's buffer arena.

#include <string>
#include <type_traits>
#include <utility>

#include <gpass/exec/kernel.hpp>
#include <gpass/exec/rendezvous.hpp>
#include <gpass/exec/value.hpp>

namespace gpass::exec {

/// Registers `send` (input 0 goes to the rendezvous under `rendezvous_key(send_device,
/// recv_device, tensor_name, frame)`) and `recv` (output 0: the value sent under the same
/// key; waits for it). Both need the string attributes `tensor_name`, `send_device` and
/// `recv_device`, and run only inside a session (elsewhere they fail naming the node).
template <class P>
void register_transfer_kernels(kernel_registry<P>& r) {
  using context = kernel_context<P>;
  using fn = kernel_fn<P>;
  struct names {
    std::string tensor, from, to;
    explicit names(const kernel_node& n)
        : tensor(n.attr<std::string>("tensor_name")), from(n.attr<std::string>("send_device")),
          to(n.attr<std::string>("recv_device")) {}
  };
  r.add({.op = "send", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    return [k = names(n)](context& ctx) {
      auto& rv = ctx.step_rendezvous();
      typename context::value_type v = ctx.detached(ctx.input_value(0));
      value host;
      if constexpr (std::is_same_v<typename P::tensor_type, gpass::tensor>) {
        host = std::move(v);
      } else {
        // an unset element (a reserved list's) stays unset: it has no type to copy
        auto down = [&](const auto& t) { return t.empty() ? gpass::tensor{} : ctx.policy().download(t, ctx.stream()); };
        if (v.is_tensor()) host = down(v.tensor());
        else if (v.is_sequence()) {
          value::sequence_type s;
          for (const auto& t : v.sequence()) s.push_back(down(t));
          host = std::move(s);
        }
        ctx.policy().synchronize(ctx.stream());
      }
      rv.send(rendezvous_key(k.from, k.to, k.tensor, ctx.frame()), std::move(host));
    };
  }});
  r.add({.op = "recv", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    return [k = names(n)](context& ctx) {
      // what another device sends differs every run: a CUDA graph would replay this run's
      if constexpr (requires(P& p) { p.capturing(); })
        if (ctx.policy().capturing()) ctx.fail("a value received from another device cannot be captured in a CUDA graph");
      value host = ctx.step_rendezvous().recv(rendezvous_key(k.from, k.to, k.tensor, ctx.frame()), ctx.cancel_flag());
      if constexpr (std::is_same_v<typename P::tensor_type, gpass::tensor>) {
        ctx.set_output(0, std::move(host));
      } else {
        typename context::value_type v;
        auto up = [&](const gpass::tensor& t) { return t.empty() ? typename P::tensor_type{} : ctx.policy().upload(t, ctx.stream()); };
        if (host.is_tensor()) v = up(host.tensor());
        else if (host.is_sequence()) {
          typename context::value_type::sequence_type s;
          for (const auto& t : host.sequence()) s.push_back(up(t));
          v = std::move(s);
        }
        ctx.set_output(0, std::move(v));
      }
    };
  }});
}

}  // namespace gpass::exec
