// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file collectives.hpp
/// Eigen CPU kernels of the data-parallel core ops the `multi-devices` pass inserts:
/// `batch_slice` (a replica's share of a fed batch), `all_reduce` and `all_gather` (the
/// replicas of one process exchange their tensors through the session step's rendezvous;
/// across processes, replica 0 of each calls the run's `process_group`, MPI's for example,
/// and hands the result to the others).

#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gpass/exec/collectives.hpp>
#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/rendezvous.hpp>

namespace gpass::exec::cpu_detail {

namespace collective {

struct params {
  std::string group;
  std::int64_t replica = 0, replicas = 1, ranks = 1;
  explicit params(const kernel_node& n)
      : group(n.attr<std::string>("group")), replica(n.attr<std::int64_t>("replica")),
        replicas(n.attr<std::int64_t>("replicas")), ranks(n.attr<std::int64_t>("ranks", 1)) {
    // (the replica indexes the exchanged tensors: out of range it wrote past them)
    if (replicas < 1 || ranks < 1 || replica < 0 || replica >= replicas)
      n.fail("replica " + std::to_string(replica) + " of " + std::to_string(replicas) + " replicas and " + std::to_string(ranks) +
             " ranks: needs 0 <= replica < replicas and ranks >= 1");
  }
};

inline std::string key(const params& p, std::int64_t from, std::int64_t to, std::string_view what,
                       std::string_view frame) {
  return rendezvous_key("replica:" + std::to_string(from), "replica:" + std::to_string(to),
                        "collective:" + p.group + ":" + std::string(what), frame);
}

// Every local replica's tensor, in replica order: sends ours to each other replica and
// receives theirs (one step's rendezvous; keys per group, pair and frame).
template <class Context>
std::vector<gpass::tensor> exchange(Context& ctx, const params& p, gpass::tensor mine) {
  std::vector<gpass::tensor> all(static_cast<std::size_t>(p.replicas));
  all[static_cast<std::size_t>(p.replica)] = mine;
  if (p.replicas == 1) return all;
  auto& rv = ctx.step_rendezvous();
  for (std::int64_t s = 0; s < p.replicas; ++s)
    if (s != p.replica) rv.send(key(p, p.replica, s, "part", ctx.frame()), value(mine));
  for (std::int64_t s = 0; s < p.replicas; ++s)
    if (s != p.replica) all[static_cast<std::size_t>(s)] = rv.recv(key(p, s, p.replica, "part", ctx.frame()), ctx.cancel_flag()).tensor();
  return all;
}

// The cross-process step: replica 0 calls `cross(local)` on the run's process group and
// gives the result to the other local replicas; they wait for it.
template <class Context, class Cross>
gpass::tensor across_processes(Context& ctx, const params& p, gpass::tensor local, Cross cross) {
  process_group* pg = ctx.step_process_group();
  const std::int64_t world = pg ? pg->size() : 1;
  if (world != p.ranks)
    ctx.fail("the graph was replicated for " + std::to_string(p.ranks) + " process(es), the run has " + std::to_string(world) +
             " (run the multi-devices pass with ranks=" + std::to_string(world) + ")");
  if (world == 1) return local;
  auto& rv = ctx.step_rendezvous();
  if (p.replica == 0) {
    gpass::tensor r = cross(*pg, std::move(local));
    for (std::int64_t s = 1; s < p.replicas; ++s) rv.send(key(p, 0, s, "result", ctx.frame()), value(r));
    return r;
  }
  return rv.recv(key(p, 0, p.replica, "result", ctx.frame()), ctx.cancel_flag()).tensor();
}

}  // namespace collective

/// Registers `batch_slice` (slice `index` of `count` equal parts of input 0 along dim 0: a
/// view, no copy), `all_reduce` (the sum or mean over every replica of every process, summed
/// in replica order so that all replicas get the same bits) and `all_gather` (every
/// replica's tensor concatenated along dim 0, process-major then replica order).
template <class P = eigen_cpu>
void register_collectives(kernel_registry<P>& r) {
  using context = kernel_context<P>;
  using fn = kernel_fn<P>;
  r.add({.op = "batch_slice", .type_input = 0, .make = [](const kernel_node& n) -> fn {
    const std::int64_t index = n.attr<std::int64_t>("index"), count = n.attr<std::int64_t>("count");
    return [index, count](context& ctx) {
      const gpass::tensor& x = ctx.input(0);
      if (count < 1 || index < 0 || index >= count)
        ctx.fail("slice " + std::to_string(index) + " of " + std::to_string(count) + " does not exist");
      if (x.rank() == 0) ctx.fail("cannot slice a scalar along the batch dimension (feed it whole: replicated-inputs)");
      const std::int64_t batch = x.sizes()[0];
      if (batch % count != 0)
        ctx.fail("a batch of " + std::to_string(batch) + " does not split into " + std::to_string(count) +
                 " equal slices (one per replica)");
      std::vector<std::int64_t> sizes = x.sizes();
      sizes[0] = batch / count;
      const std::int64_t first = index * sizes[0];
      if (x.element_type() == gpass::dtype::string) {
        gpass::tensor y(x.element_type(), sizes);
        const std::int64_t row = sizes[0] == 0 ? 0 : y.size() / sizes[0];
        auto src = x.values<std::string>();
        auto dst = y.values<std::string>();
        for (std::int64_t i = 0; i < y.size(); ++i) dst[static_cast<std::size_t>(i)] = src[static_cast<std::size_t>(first * row + i)];
        ctx.set_output(0, std::move(y));
        return;
      }
      const std::size_t row_bytes = batch == 0 ? 0 : x.nbytes() / static_cast<std::size_t>(batch);
      const gpass::tensor whole = ctx.detached(ctx.input_value(0)).tensor();
      std::shared_ptr<std::byte[]> view(whole.buffer(), whole.buffer().get() + static_cast<std::size_t>(first) * row_bytes);
      ctx.set_output(0, gpass::tensor::wrap(x.element_type(), std::move(sizes), std::move(view)));
    };
  }});
  r.add({.op = "all_reduce", .type_input = 0, .make = [](const kernel_node& n) -> fn {
    const collective::params p(n);
    const std::string reduction = n.attr<std::string>("reduction", std::string("mean"));
    if (reduction != "mean" && reduction != "sum")
      throw_node_error("all_reduce: reduction must be mean or sum, got '" + reduction + "'", n.name, n.op);
    return [p, mean = reduction == "mean"](context& ctx) {
      const gpass::tensor mine = ctx.detached(ctx.input_value(0)).tensor();
      if (mean && !gpass::is_floating(mine.element_type()))
        ctx.fail("the mean of " + std::string(gpass::to_string(mine.element_type())) + " tensors (use reduction sum)");
      const std::string what = "all_reduce '" + ctx.node().name + "'";
      gpass::tensor sum = detail::sum_in_order(collective::exchange(ctx, p, mine), what);
      sum = collective::across_processes(ctx, p, std::move(sum), [&](process_group& pg, gpass::tensor t) {
        pg.all_reduce_sum(t, what);
        return t;
      });
      if (mean) {
        const double scale = 1.0 / static_cast<double>(p.replicas * p.ranks);
        gpass::tensor out = detail::owned(std::move(sum));
        gpass::visit_dtype(out.element_type(), [&]<class T>() {
          if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>)
            for (T& x : out.values<T>()) x *= static_cast<typename T::value_type>(scale);
          else if constexpr (!std::is_same_v<T, std::string> && !std::is_same_v<T, bool>)
            for (T& x : out.values<T>()) x = static_cast<T>(static_cast<double>(x) * scale);
        });
        sum = std::move(out);
      }
      ctx.set_output(0, std::move(sum));
    };
  }});
  r.add({.op = "all_gather", .type_input = 0, .make = [](const kernel_node& n) -> fn {
    const collective::params p(n);
    return [p](context& ctx) {
      const gpass::tensor mine = ctx.detached(ctx.input_value(0)).tensor();
      const std::string what = "all_gather '" + ctx.node().name + "'";
      gpass::tensor all = detail::concat_rows(collective::exchange(ctx, p, mine), what);
      all = collective::across_processes(ctx, p, std::move(all),
                                         [&](process_group& pg, gpass::tensor t) { return pg.all_gather(t, what); });
      ctx.set_output(0, std::move(all));
    };
  }});
}

}  // namespace gpass::exec::cpu_detail
