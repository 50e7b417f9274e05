// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_sparse.hpp
/// CUDA kernels of TensorFlow's sparse segment reductions (domain "tf"): SparseSegmentSum,
/// SparseSegmentMean, SparseSegmentSqrtN and their WithNumSegments forms. The indices and
/// segment ids are read back and checked as the CPU kernel checks them (`tf_rules`); each
/// segment's range of the index list is computed on the host; then a thread per output element
/// adds the segment's rows in the index list's order in the compute type (the CPU's sum, in its
/// order: the same bits) and divides by the count (Mean) or its square root (SqrtN). Empty
/// segments are 0. f32, f64, f16 and bf16 as the CPU.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/kernels/tf.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/tf_rules.hpp>

namespace gpass::exec {

namespace cuda_tf {

/// `sparse_segment`: y[s, k] = the sum over j in [starts[s], starts[s + 1]) of x[idx[j], k]
/// (rows of `slice` elements), divided by the count (`kind` 1) or its square root (2); 0 for
/// an empty segment.
inline std::string sparse_segment_source(dtype t) {
  return cuda_nn::head(t) + R"(extern "C" __global__ void sparse_segment(const T* __restrict__ x, const void* idx, int idx64,
    const long long* __restrict__ starts, T* __restrict__ y, long long n, long long slice, int kind) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long s = i / slice, k = i - s * slice, b = starts[s], e = starts[s + 1];
    if (e == b) { g_store(y, i, (W)0); continue; }
    W acc = 0;
    for (long long j = b; j < e; ++j) {
      const long long r = idx64 ? ((const long long*)idx)[j] : (long long)((const int*)idx)[j];
      acc += (W)g_load(x, r * slice + k);
    }
    const W count = (W)(e - b);
    g_store(y, i, acc / (kind == 1 ? count : kind == 2 ? g_sqrt(count) : (W)1));
  }
}
)";
}

/// SparseSegment{Sum,Mean,SqrtN}[WithNumSegments](data, indices, segment_ids[, num_segments]);
/// `kind` 0 sum, 1 mean, 2 sqrt n.
inline fn make_sparse_segment(int kind, bool with_num) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [kind, with_num, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& ix = ctx.input(1);
    const kernel_node& node = ctx.node();
    tf_rules::check_sparse_segment_shapes(x.sizes(), ix.sizes(), ctx.input(2).sizes(), node);
    const auto iv = vector_input(ctx, 1, "indices"), sv = vector_input(ctx, 2, "segment_ids");
    std::optional<i64> num;
    if (with_num) num = scalar_input(ctx, 3, "num_segments");
    const i64 segments = tf_rules::sparse_segment_count(x.sizes()[0], iv, sv, num, node);
    std::vector<i64> out = x.sizes();
    out[0] = segments;
    const dtype t = x.element_type();
    cuda_tensor& y = ctx.allocate_output(0, t, out);
    if (y.size() == 0) return;
    // each segment's range of the index list (the ids are increasing)
    std::vector<i64> starts(static_cast<std::size_t>(segments) + 1);
    std::size_t j = 0;
    for (i64 s = 0; s <= segments; ++s) {
      while (j < sv.size() && sv[j] < s) ++j;
      starts[static_cast<std::size_t>(s)] = static_cast<i64>(j);
    }
    auto& pol = ctx.policy();
    cuda_tensor st = pol.allocate_tensor(dtype::int64, {segments + 1}, ctx.stream());
    pol.copy_to_device(st.data(), starts.data(), starts.size() * sizeof(i64), ctx.stream());
    const auto& k = lib->get(pol, std::string(to_string(t)), {"sparse_segment"}, [&] { return sparse_segment_source(t); });
    const void* xp = x.data();
    const void* ip = ix.data();
    int idx64 = ix.element_type() == dtype::int64;
    const void* sp = st.data();
    void* yp = y.data();
    long long n = y.size(), slice = n / segments;
    int kd = kind;
    void* args[] = {&xp, &ip, &idx64, &sp, &yp, &n, &slice, &kd};
    pol.launch(k.kernels[0], pol.blocks_for(n), 256, args, ctx.stream());
  };
}

}  // namespace cuda_tf

/// Every source tf_sparse.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> tf_sparse_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16})
    r.emplace_back("tf::sparse_segment_" + std::string(to_string(t)), cuda_tf::sparse_segment_source(t));
  return r;
}

/// Registers tf_sparse.hpp's kernels.
inline void register_cuda_tf_sparse(kernel_registry<cuda>& r) {
  const std::vector<dtype> floats{dtype::f32, dtype::f64, dtype::f16, dtype::bf16};
  for (const auto& [name, kind] : {std::pair{"SparseSegmentSum", 0}, std::pair{"SparseSegmentMean", 1}, std::pair{"SparseSegmentSqrtN", 2}})
    for (const bool with_num : {false, true})
      r.add({.domain = "tf", .op = std::string(name) + (with_num ? "WithNumSegments" : ""), .dtypes = floats,
             .make = [kind, with_num](const kernel_node&) { return cuda_tf::make_sparse_segment(kind, with_num); }});
}

}  // namespace gpass::exec
