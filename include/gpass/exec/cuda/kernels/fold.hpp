// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file fold.hpp
/// CUDA kernels of the ONNX ops that fold values back into an image: Col2Im (opset 18) and
/// MaxUnpool, as the CPU kernels compute them.
/// - Col2Im: a thread per image element gathers, in the CPU's order (the block's offsets, then
///   the sliding positions), the one column entry per offset that lands on it, summed in the
///   compute type (integers wrapping): the CPU's sums, bit for bit. Any number of spatial
///   dimensions (the source is generated per count).
/// - MaxUnpool: the indices are read on the host and checked as on the CPU (in range, inside
///   output_shape); where several inputs name one output the last one wins, as on the CPU, so
///   the host keeps each output's last writer and a kernel copies those into the zeroed
///   output.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/array.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/nn_rules.hpp>
#include <gpass/exec/shape_rules.hpp>

namespace gpass::exec {

namespace cuda_fold {

using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using i64 = std::int64_t;

/// `col2im` over `nd` spatial dimensions: y [N, C, image...] from x [N, C * prod(block), L].
inline std::string col2im_source(dtype t, int nd) {
  const bool integer = cuda_codegen::is_int(t);
  std::string s = cuda_nn::head(t) + "#define G_D " + std::to_string(nd) + "\n";
  s += integer ? "typedef unsigned long long A;\n" : "typedef W A;\n";
  s += R"(struct g_c2i { long long NC, K, L; long long image[G_D], block[G_D], blocks[G_D], st[G_D], pb[G_D], dl[G_D]; };
extern "C" __global__ void col2im(const T* __restrict__ x, T* __restrict__ y, g_c2i g) {
  long long plane = 1;
  for (int d = 0; d < G_D; ++d) plane *= g.image[d];
  const long long total = g.NC * plane;
  for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < total; e += (long long)gridDim.x * blockDim.x) {
    const long long nc = e / plane;
    long long p[G_D];
    for (long long r = e % plane, d = G_D - 1; d >= 0; --d) p[d] = r % g.image[d], r /= g.image[d];
    A acc = 0;
    for (long long k = 0; k < g.K; ++k) {
      long long kk[G_D];
      for (long long r = k, d = G_D - 1; d >= 0; --d) kk[d] = r % g.block[d], r /= g.block[d];
      long long l = 0;
      bool hit = true;
      for (int d = 0; d < G_D && hit; ++d) {
        const long long q = p[d] + g.pb[d] - kk[d] * g.dl[d];  // block position * stride
        if (q < 0 || q % g.st[d] != 0 || q / g.st[d] >= g.blocks[d]) hit = false;
        else l = l * g.blocks[d] + q / g.st[d];
      }
      if (hit) acc += (A)(W)g_load(x, (nc * g.K + k) * g.L + l);
    }
    g_store(y, e, (W)acc);
  }
}
)";
  return s;
}

/// `scatter_S`: y[dst[i]] = x[src[i]], and `fill_S`: y[i] = *v, for elements of 1, 2, 4 or 8
/// bytes (MaxUnpool's writes; TF SparseToDense's default value and writes).
inline const std::string& scatter_source() {
  static const std::string s = [] {
    std::string r = "// gpass generated\n";
    r += R"(template <class U> __device__ __forceinline__ void t_scatter(const U* __restrict__ x, U* __restrict__ y, const long long* __restrict__ src,
                                                             const long long* __restrict__ dst, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) y[dst[i]] = x[src[i]];
}
template <class U> __device__ __forceinline__ void t_fill(U* __restrict__ y, long long n, const U* __restrict__ v) {
  const U c = *v;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) y[i] = c;
}
)";
    const char* types[] = {"unsigned char", "unsigned short", "unsigned int", "unsigned long long"};
    for (int q = 0; q < 4; ++q) {
      const std::string U = types[q], S = std::to_string(1 << q);
      r += "extern \"C\" __global__ void scatter_" + S + "(const " + U + "* x, " + U +
           "* y, const long long* src, const long long* dst, long long n) { t_scatter(x, y, src, dst, n); }\n";
      r += "extern \"C\" __global__ void fill_" + S + "(" + U + "* y, long long n, const " + U + "* v) { t_fill(y, n, v); }\n";
    }
    return r;
  }();
  return s;
}

/// The entry names of `scatter_source` and the index of elements of `bytes` among each kind's.
inline const std::vector<std::string>& scatter_entries() {
  static const std::vector<std::string> e{"scatter_1", "scatter_2", "scatter_4", "scatter_8", "fill_1", "fill_2", "fill_4", "fill_8"};
  return e;
}
inline std::size_t size_index(std::size_t bytes) { return bytes == 1 ? 0 : bytes == 2 ? 1 : bytes == 4 ? 2 : 3; }

/// y[dst] = x[src] for each (dst, src) of `writes`, listed in the CPU's order of writing:
/// where several name one element of y the last one wins, as on the CPU (a stable sort by
/// destination keeps their order; each destination's last is copied, so no two threads
/// write one element).
inline void scatter_last(context& ctx, lazy_library& lib, const cuda_tensor& x, cuda_tensor& y, std::vector<std::pair<i64, i64>> writes) {
  if (writes.empty()) return;
  std::stable_sort(writes.begin(), writes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<i64> src, dst;
  for (std::size_t j = 0; j < writes.size(); ++j)
    if (j + 1 == writes.size() || writes[j + 1].first != writes[j].first) dst.push_back(writes[j].first), src.push_back(writes[j].second);
  const cuda_tensor ds = cuda_detail::upload_vector(ctx, dtype::int64, src), dd = cuda_detail::upload_vector(ctx, dtype::int64, dst);
  auto& pol = ctx.policy();
  const auto& k = lib.get(pol, "scatter", scatter_entries(), [] { return scatter_source(); });
  const void* xp = x.data();
  void* yp = y.data();
  const void* sp = ds.data();
  const void* dp = dd.data();
  long long count = static_cast<long long>(src.size());
  void* args[] = {&xp, &yp, &sp, &dp, &count};
  pol.launch(k.kernels[size_index(size_of(x.element_type()))], pol.blocks_for(count), 256, args, ctx.stream());
}

/// Col2Im(input, image_shape, block_shape): strides, pads, dilations; the checks the CPU's.
inline fn make_col2im(const kernel_node& n) {
  const auto strides_attr = n.attr<std::vector<i64>>("strides", {});
  const auto pads_attr = n.attr<std::vector<i64>>("pads", {});
  const auto dil_attr = n.attr<std::vector<i64>>("dilations", {});
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const std::vector<i64> image = cuda_detail::host_ints(ctx, 1);
    const std::vector<i64> block = cuda_detail::host_ints(ctx, 2);
    const nn_rules::col2im_geometry geo = nn_rules::col2im_plan(x.sizes(), image, block, strides_attr, pads_attr, dil_attr, ctx.node());
    const std::vector<i64>& out = geo.out;
    const dtype t = x.element_type();
    cuda_tensor& y = ctx.allocate_output(0, t, out);
    if (y.size() == 0) return;
    std::vector<long long> words{out[0] * geo.C, geo.kprod, geo.L};
    for (const auto* v : {&geo.image, &geo.block, &geo.blocks, &geo.strides, &geo.pad_begin, &geo.dilations})
      words.insert(words.end(), v->begin(), v->end());
    auto& pol = ctx.policy();
    const int nd = static_cast<int>(image.size());
    const std::string key = std::string(to_string(t)) + "_" + std::to_string(nd);
    const auto& k = lib->get(pol, key, {"col2im"}, [&] { return col2im_source(t, nd); });
    const void* xp = x.data();
    void* yp = y.data();
    void* args[] = {&xp, &yp, words.data()};
    pol.launch(k.kernels[0], pol.blocks_for(y.size()), 256, args, ctx.stream());
  };
}

/// MaxUnpool(X, I[, output_shape]): kernel_shape, strides, pads; the checks the CPU's.
inline fn make_max_unpool(const kernel_node& n) {
  const shape_rules::window_attrs wa = shape_rules::window_attrs::read(n);
  if (wa.kernel.empty()) n.fail("missing attribute 'kernel_shape'");
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [wa, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& ind = ctx.input(1);
    std::optional<std::vector<i64>> requested;
    if (ctx.has_input(2)) requested = cuda_detail::host_ints(ctx, 2);
    const nn_rules::unpool_shapes s = nn_rules::max_unpool_shapes(x.sizes(), ind.sizes(), wa, requested, ctx.node());
    const std::vector<i64> idx = cuda_detail::host_ints(ctx, 1);
    const dtype t = x.element_type();
    cuda_tensor& y = ctx.allocate_output_zeroed(0, t, s.out);
    std::vector<std::pair<i64, i64>> writes;  // (output position, input position), in input order
    writes.reserve(idx.size());
    for (std::size_t i = 0; i < idx.size(); ++i) writes.emplace_back(nn_rules::unpool_offset(idx[i], s, ctx.node()), static_cast<i64>(i));
    if (y.size() > 0) scatter_last(ctx, *lib, x, y, std::move(writes));
  };
}

}  // namespace cuda_fold

/// Every source fold.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> fold_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r{{"scatter", cuda_fold::scatter_source()}};
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::int32, dtype::uint8})
    for (int nd : {1, 2, 3}) r.emplace_back("col2im_" + std::string(to_string(t)) + "_" + std::to_string(nd), cuda_fold::col2im_source(t, nd));
  return r;
}

/// Registers fold.hpp's kernels.
inline void register_cuda_fold(kernel_registry<cuda>& r) {
  std::vector<dtype> numeric;
  for (dtype t : cuda_array_detail::movable_types())
    if (t != dtype::bool_) numeric.push_back(t);
  r.add({.op = "Col2Im", .since_version = 18, .dtypes = numeric, .make = cuda_fold::make_col2im});
  r.add({.op = "MaxUnpool", .dtypes = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}, .make = cuda_fold::make_max_unpool});
}

}  // namespace gpass::exec
