// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file common.hpp
/// What the CUDA kernel families share: generated kernels compiled on first use
/// (`lazy_library`), shape inputs read on the host (`host_ints`), broadcasting, and the
/// launcher of element-wise kernels (`launch_elementwise`).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>

namespace gpass::exec::cuda_detail {

using context = kernel_context<cuda>;
using fn = kernel_fn<cuda>;

/// Generated libraries of one node, by a key the kernel chooses (its input types, say):
/// generated and compiled the first time a key is seen, then looked up. Shared by the runs
/// of the node's kernel (thread-safe).
class lazy_library {
 public:
  struct entry {
    std::string source;
    std::vector<cudaKernel_t> kernels;  ///< in the order of the names asked for
  };
  /// The kernels `names` of the source `make()` returns for `key`.
  template <class Make>
  const entry& get(cuda& policy, const std::string& key, const std::vector<std::string>& names, Make&& make) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
    entry e;
    e.source = make();
    for (const auto& n : names) e.kernels.push_back(policy.compile(e.source, n));
    return entries_.emplace(key, std::move(e)).first->second;
  }

 private:
  std::mutex mu_;
  std::map<std::string, entry, std::less<>> entries_;
};

/// The values of integer input `i` (int32 or int64), read on the host: from the constant the
/// plan bound when there is one, else copied from the device (a synchronization).
inline std::vector<std::int64_t> host_ints(context& ctx, std::size_t i) {
  if (const gpass::tensor* c = ctx.node().constant_input(i)) {
    std::vector<std::int64_t> r;
    if (c->element_type() == dtype::int64) for (auto v : c->values<std::int64_t>()) r.push_back(v);
    else if (c->element_type() == dtype::int32) for (auto v : c->values<std::int32_t>()) r.push_back(v);
    else ctx.fail("input " + std::to_string(i) + " must be int32 or int64, not " + std::string(to_string(c->element_type())));
    return r;
  }
  const cuda_tensor& t = ctx.input(i);
  if (t.element_type() != dtype::int64 && t.element_type() != dtype::int32)
    ctx.fail("input " + std::to_string(i) + " must be int32 or int64, not " + std::string(to_string(t.element_type())));
  gpass::tensor h = ctx.policy().download(t, ctx.stream());
  std::vector<std::int64_t> r;
  if (h.element_type() == dtype::int64) for (auto v : h.values<std::int64_t>()) r.push_back(v);
  else for (auto v : h.values<std::int32_t>()) r.push_back(v);
  return r;
}

/// The value of a tensor input on the host (a constant, or a copy from the device).
inline gpass::tensor host_value(context& ctx, std::size_t i) {
  if (const gpass::tensor* c = ctx.node().constant_input(i)) return *c;
  return ctx.policy().download(ctx.input(i), ctx.stream());
}

/// A new device vector of `v`'s values as elements of `t` (of `V`'s size), copied from the host.
template <class V>
cuda_tensor upload_vector(context& ctx, dtype t, const std::vector<V>& v) {
  if (size_of(t) != sizeof(V)) throw error("cuda: uploading values of " + std::to_string(sizeof(V)) + " bytes as " + std::string(to_string(t)));
  auto& pol = ctx.policy();
  cuda_tensor d = pol.allocate_tensor(t, {static_cast<std::int64_t>(v.size())}, ctx.stream());
  pol.copy_to_device(d.data(), v.data(), v.size() * sizeof(V), ctx.stream());
  return d;
}

/// The values of input `i` converted to `R` on the host (`fallback` alone when it is absent);
/// fails on an empty or non-numeric input as the CPU's `values_as`.
template <class R>
std::vector<R> host_values_as(context& ctx, std::size_t i, R fallback) {
  if (!ctx.has_input(i)) return {fallback};
  const gpass::tensor t = host_value(ctx, i);
  std::vector<R> r(static_cast<std::size_t>(t.size()));
  visit_dtype(t.element_type(), [&]<class S>() {
    if constexpr (std::is_arithmetic_v<S>) {
      for (std::size_t k = 0; k < r.size(); ++k) r[k] = static_cast<R>(t.data<S>()[k]);
    } else if constexpr (std::is_same_v<S, Eigen::half> || std::is_same_v<S, Eigen::bfloat16>) {
      for (std::size_t k = 0; k < r.size(); ++k) r[k] = static_cast<R>(static_cast<float>(t.data<S>()[k]));
    } else {
      ctx.fail("input " + std::to_string(i) + " has unsupported type " + std::string(to_string(t.element_type())));
    }
  });
  if (r.empty()) ctx.fail("input " + std::to_string(i) + " is empty");
  return r;
}

/// The multidirectional (NumPy) broadcast of `shapes`; fails naming the node when two sizes
/// differ and neither is 1.
inline std::vector<std::int64_t> broadcast_sizes(const context& ctx, std::span<const std::vector<std::int64_t>> shapes) {
  std::size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  std::vector<std::int64_t> out(rank, 1);
  for (const auto& s : shapes)
    for (std::size_t d = 0; d < s.size(); ++d) {
      std::int64_t& o = out[rank - s.size() + d];
      const std::int64_t v = s[d];
      if (v == o || v == 1) continue;
      if (o == 1) o = v;
      else ctx.fail("cannot broadcast sizes " + shape::of(s).to_string() + " to " + shape::of(out).to_string());
    }
  return out;
}

/// Launches the `ew_flat` / `ew_strided` pair `k` (from `cuda_codegen::elementwise_source`)
/// writing `y` from `xs`, each broadcast to `y`'s sizes.
inline void launch_elementwise(context& ctx, const lazy_library::entry& k, const cuda_tensor& y,
                               std::span<const cuda_tensor* const> xs) {
  const std::int64_t n = y.size();
  if (n == 0) return;
  const auto& out = y.sizes();
  const std::size_t rank = out.size();
  std::vector<void*> ptrs;
  ptrs.reserve(xs.size() + 1);
  ptrs.push_back(y.data());
  bool flat = true;
  unsigned long long scalar_mask = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    ptrs.push_back(xs[i]->data());
    if (xs[i]->size() == 1 && n != 1) scalar_mask |= 1ull << i;
    else if (xs[i]->size() != n) flat = false;  // same count with another rank is a reshape: fine
  }
  auto& p = ctx.policy();
  std::vector<void*> args;
  for (auto& q : ptrs) args.push_back(&q);
  long long nn = n;
  if (flat) {
    args.push_back(&nn);
    args.push_back(&scalar_mask);
    p.launch(k.kernels[0], p.blocks_for(n), 256, args.data(), ctx.stream());
    return;
  }
  // strides of each input against the output, right-aligned, 0 where broadcast
  const std::size_t m = xs.size();
  std::vector<std::vector<std::int64_t>> st(m, std::vector<std::int64_t>(rank, 0));
  for (std::size_t i = 0; i < m; ++i) {
    const auto& s = xs[i]->sizes();
    std::int64_t stride = 1;
    for (std::size_t d = s.size(); d-- > 0;) {
      const std::size_t od = rank - s.size() + d;
      st[i][od] = s[d] == 1 ? 0 : stride;
      stride *= s[d];
    }
  }
  // merge neighbouring dimensions that every input walks the same way
  std::vector<std::int64_t> sizes;
  std::vector<std::vector<std::int64_t>> strides(m);
  for (std::size_t d = 0; d < rank; ++d) {
    if (out[d] == 1) continue;
    bool merge = !sizes.empty();
    for (std::size_t i = 0; merge && i < m; ++i)
      merge = strides[i].back() == st[i][d] * out[d];
    if (merge) {
      sizes.back() *= out[d];
      for (std::size_t i = 0; i < m; ++i) strides[i].back() = st[i][d];
    } else {
      sizes.push_back(out[d]);
      for (std::size_t i = 0; i < m; ++i) strides[i].push_back(st[i][d]);
    }
  }
  if (sizes.size() > static_cast<std::size_t>(cuda_codegen::max_rank))
    ctx.fail("broadcasting over " + std::to_string(sizes.size()) + " dimensions that cannot be merged (the CUDA kernels take " +
             std::to_string(cuda_codegen::max_rank) + ")");
  constexpr std::size_t R = cuda_codegen::max_rank;
  std::vector<long long> words(2 + R + R * std::max<std::size_t>(m, 1), 0);
  words[0] = n;
  words[1] = static_cast<long long>(sizes.size());
  for (std::size_t d = 0; d < sizes.size(); ++d) words[2 + d] = sizes[d];
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t d = 0; d < sizes.size(); ++d) words[2 + R + i * R + d] = strides[i][d];
  args.push_back(words.data());
  p.launch(k.kernels[1], p.blocks_for(n), 256, args.data(), ctx.stream());
}

}  // namespace gpass::exec::cuda_detail
