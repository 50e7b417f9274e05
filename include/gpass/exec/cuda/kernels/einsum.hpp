// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file einsum.hpp
/// The CUDA Einsum of ONNX (domain "") and TensorFlow (domain "tf"; the same equations): the
/// contraction `einsum_rules::schedule` plans, as the CPU kernel runs it — each operand's
/// sums and diagonals by one generated kernel (a thread per element of the operand's term,
/// adding in the CPU's order, in the compute type), each pairwise contraction as one strided
/// batched cuBLASLt product (its operands permuted first, by the same generated kernel, where
/// neither layout nor its transpose fits), and the last term read into the output by it too.
/// Intermediates are in the compute type (f32 for f16 / bf16, as the CPU); f32, f64, f16 and
/// bf16 (integer Einsum stays on the CPU).

#include <climits>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/linalg.hpp>
#include <gpass/exec/einsum_rules.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/scratch.hpp>

namespace gpass::exec {

namespace cuda_einsum {

using cuda_detail::context;
using cuda_detail::fn;
using i64 = std::int64_t;

/// `einsum_sum`: y[i] (of `O`) = the sum, in the compute type W, over the `summed` elements
/// of x (of `I`) that walk dimensions kept..rank-1 from the offset of i over dimensions
/// 0..kept-1 (`geom`: rank sizes, then rank strides); `plain`: y[i] = x at that offset (no
/// sum, the sign of a zero kept).
inline std::string einsum_source(dtype in, dtype out) {
  const dtype w = cuda_codegen::is_float(out) && out != dtype::f64 ? dtype::f32 : dtype::f64;
  return cuda_codegen::cuda_prelude() + "typedef " + std::string(cuda_codegen::storage_type(in)) + " I;\ntypedef " +
         std::string(cuda_codegen::storage_type(out)) + " O;\ntypedef " + std::string(cuda_codegen::storage_type(w)) + " W;\n" +
         R"(extern "C" __global__ void einsum_sum(const I* __restrict__ x, O* __restrict__ y, long long n, const long long* __restrict__ geom,
    int rank, int kept, long long summed, int plain) {
  const long long* sizes = geom;
  const long long* strides = geom + rank;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    long long rest = i, base = 0;
    for (int d = kept - 1; d >= 0; --d) {
      const long long c = rest % sizes[d];
      rest /= sizes[d];
      base += c * strides[d];
    }
    if (plain) {
      g_store(y, i, (W)g_load(x, base));
      continue;
    }
    W acc = 0;
    for (long long s = 0; s < summed; ++s) {
      long long r = s, off = base;
      for (int d = rank - 1; d >= kept; --d) {
        const long long c = r % sizes[d];
        r /= sizes[d];
        off += c * strides[d];
      }
      acc += (W)g_load(x, off);
    }
    g_store(y, i, acc);
  }
}
)";
}

/// The compute type of an Einsum over `t` (f32 for f16 / bf16).
inline dtype compute_of(dtype t) { return t == dtype::f64 ? dtype::f64 : dtype::f32; }

/// One node's generated kernels and cuBLASLt plans.
struct einsum_state {
  cuda_detail::lazy_library lib;
  cuda_linalg::lt_state lt;
};

/// y (n elements of `yt`) from x (of `xt`) by `einsum_sum` over dims `walk` / `strides`.
inline void einsum_walk(context& ctx, einsum_state& st, dtype xt, const void* x, dtype yt, void* y, i64 n, const std::vector<i64>& walk,
                        const std::vector<i64>& strides, std::size_t kept, i64 summed, bool plain) {
  if (n == 0) return;
  auto& pol = ctx.policy();
  std::vector<i64> geom = walk;
  geom.insert(geom.end(), strides.begin(), strides.end());
  cuda_tensor g = pol.allocate_tensor(dtype::int64, {static_cast<i64>(geom.size())}, ctx.stream());
  pol.copy_to_device(g.data(), geom.data(), geom.size() * sizeof(i64), ctx.stream());
  const std::string key = std::string(to_string(xt)) + ">" + std::string(to_string(yt));
  const auto& k = st.lib.get(pol, key, {"einsum_sum"}, [&] { return einsum_source(xt, yt); });
  const void* gp = g.data();
  long long nn = n, sm = summed;
  int rank = static_cast<int>(walk.size()), kp = static_cast<int>(kept), pl = plain ? 1 : 0;
  void* args[] = {const_cast<void**>(&x), &y, &nn, const_cast<void**>(&gp), &rank, &kp, &sm, &pl};
  pol.launch(k.kernels[0], pol.blocks_for(n), 256, args, ctx.stream());
}

/// Runs `plan` over the inputs into output 0 (see the file comment).
inline void einsum_run(context& ctx, einsum_state& st, const einsum_rules::schedule& plan, const std::vector<i64>& ys) {
  const dtype t = ctx.input(0).element_type(), w = compute_of(t);
  auto& pol = ctx.policy();
  const auto wsize = static_cast<double>(size_of(w));
  auto check = [&](const std::vector<i64>& sizes, const std::string& what) {
    double n = wsize;
    for (i64 s : sizes) n *= static_cast<double>(s);
    check_scratch(ctx, n, what);
  };
  cuda_tensor& y = ctx.allocate_output(0, t, ys);
  const std::size_t nin = plan.operands.size();
  std::vector<cuda_tensor> terms;
  std::vector<einsum_rules::term> shapes;
  for (std::size_t k = 0; k < nin; ++k) {
    const einsum_rules::operand_step& op = plan.operands[k];
    check(op.t.sizes, "Einsum operand " + std::to_string(k));
    terms.push_back(pol.allocate_tensor(w, op.t.sizes, ctx.stream()));
    shapes.push_back(op.t);
    einsum_walk(ctx, st, t, ctx.input(k).data(), w, terms.back().data(), op.t.count(), op.walk, op.strides, op.kept, op.summed(), false);
  }
  for (const einsum_rules::pair_step& ps : plan.pairs) {
    auto permuted = [&](std::size_t i, const std::vector<int>& to) {
      check(shapes[i].sizes, "Einsum transposed operand");
      const auto [sz, src_st] = einsum_rules::permuted_view(shapes[i], to);
      // (einsum_sum's plain read: a term may have more dimensions than the move library's views)
      cuda_tensor c = pol.allocate_tensor(w, sz, ctx.stream());
      einsum_walk(ctx, st, w, terms[i].data(), w, c.data(), c.size(), sz, src_st, sz.size(), 1, true);
      return c;
    };
    const cuda_tensor a = ps.a_to.empty() ? terms[ps.a] : permuted(ps.a, ps.a_to);
    const cuda_tensor b = ps.b_to.empty() ? terms[ps.b] : permuted(ps.b, ps.b_to);
    check(ps.r.sizes, "Einsum intermediate");
    cuda_tensor r = pol.allocate_tensor(w, ps.r.sizes, ctx.stream());
    if (r.size() > 0 && ps.K == 0) pol.fill_zero(r, ctx.stream());
    if (r.size() > 0 && ps.K > 0) {
      cuda_linalg::lt_problem p{.t = w, .ta = ps.ta, .tb = ps.tb, .M = ps.M, .N = ps.N, .K = ps.K, .lda = ps.ta ? ps.M : ps.K,
                                .ldb = ps.tb ? ps.K : ps.N, .ldc = ps.N};
      const std::size_t es = size_of(w);
      if (ps.nb <= INT_MAX) {
        p.batch = ps.nb;
        p.stride_a = ps.M * ps.K;
        p.stride_b = ps.K * ps.N;
        p.stride_c = ps.M * ps.N;
        cuda_linalg::lt_matmul(ctx, st.lt, p, 1.0, 0.0, a.data(), b.data(), r.data());
      } else {
        for (i64 i = 0; i < ps.nb; ++i)
          cuda_linalg::lt_matmul(ctx, st.lt, p, 1.0, 0.0, static_cast<const std::byte*>(a.data()) + static_cast<std::size_t>(i * ps.M * ps.K) * es,
                                 static_cast<const std::byte*>(b.data()) + static_cast<std::size_t>(i * ps.K * ps.N) * es,
                                 static_cast<std::byte*>(r.data()) + static_cast<std::size_t>(i * ps.M * ps.N) * es);
      }
    }
    terms.erase(terms.begin() + static_cast<std::ptrdiff_t>(ps.b));
    shapes.erase(shapes.begin() + static_cast<std::ptrdiff_t>(ps.b));
    terms[ps.a] = std::move(r);
    shapes[ps.a] = ps.r;
  }
  // the last term read into the output at the plan's strides
  if (y.size() == 0) return;
  einsum_walk(ctx, st, w, terms[0].data(), t, y.data(), y.size(), ys, plan.out_strides, ys.size(), 1, true);
}

/// Einsum (`equation`) over inputs of one float type.
inline fn make_einsum(const kernel_node& n) {
  const std::string equation = n.attr<std::string>("equation");
  auto st = std::make_shared<einsum_state>();
  return [equation, st](context& ctx) {
    const std::size_t nin = ctx.num_inputs();
    if (nin == 0) ctx.fail("Einsum needs at least one input");
    std::vector<std::size_t> ranks;
    std::vector<std::vector<i64>> sizes;
    for (std::size_t i = 0; i < nin; ++i) {
      const cuda_tensor& x = ctx.input(i);
      ranks.push_back(x.rank());
      sizes.push_back(x.sizes());
      if (x.element_type() != ctx.input(0).element_type()) ctx.fail("Einsum inputs have different element types");
    }
    const einsum_rules::plan plan = einsum_rules::parse(equation, ranks, ctx.node());
    const std::vector<i64> size = einsum_rules::label_sizes(plan, sizes, ctx.node());
    einsum_run(ctx, *st, einsum_rules::make_schedule(plan, sizes, size), einsum_rules::output_sizes(plan, size));
  };
}

inline std::vector<dtype> einsum_types() { return {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}; }

}  // namespace cuda_einsum

/// Every source einsum.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> einsum_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : cuda_einsum::einsum_types()) {
    const dtype w = cuda_einsum::compute_of(t);
    r.emplace_back("einsum_" + std::string(to_string(t)) + "_in", cuda_einsum::einsum_source(t, w));
    if (t != w) r.emplace_back("einsum_" + std::string(to_string(t)) + "_out", cuda_einsum::einsum_source(w, t));
  }
  return r;
}

/// Registers ONNX's and TensorFlow's Einsum.
inline void register_cuda_einsum(kernel_registry<cuda>& r) {
  for (const char* domain : {"", "tf"}) r.add({.domain = domain, .op = "Einsum", .dtypes = cuda_einsum::einsum_types(), .make = cuda_einsum::make_einsum});
}

}  // namespace gpass::exec
