// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_array.hpp
/// More CUDA kernels of TensorFlow ops (domain "tf"), after tf.hpp's: data movement by the
/// strided copies of array.hpp — DepthToSpace / SpaceToDepth (NHWC, NCHW), SpaceToBatchND /
/// BatchToSpaceND (one copy per block offset), Roll (one copy per combination of the rolled
/// axes' two parts), ReverseSequence (array.hpp's copy after TF's checks); generated kernels —
/// OneHot (negative indices match nothing, as in TF), MatrixBandPart (array.hpp's band
/// kernel), LRN over the depth (norm.hpp's kernel), SoftmaxCrossEntropyWithLogits and the
/// sparse one (a block per row); L2Loss (ONNX's ReduceSumSquare, halved);
/// Range (array.hpp's kernel after TF's checks, the values read once); and the small shape computations TensorFlow keeps
/// in host memory even on a GPU — InvertPermutation, BroadcastArgs, BroadcastGradientArgs —
/// read back, computed by the rules the CPU kernels use (`tf_rules`) and written to the device;
/// DynamicStitch / ParallelDynamicStitch and DynamicPartition (indices read back, rows moved by
/// the move library's scatter and gather), CheckNumerics (a
/// device search, one host wait), InTopKV2, MaxPoolGrad and AvgPoolGrad (2-D, NHWC: a gather
/// per input element, the CPU's sums in the CPU's order).
/// Shapes, checks and messages are the CPU kernels' (`tf_rules` where they share code).

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <type_traits>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/kernels/array.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/norm.hpp>
#include <gpass/exec/cuda/kernels/reduce.hpp>
#include <gpass/exec/cuda/kernels/tf.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/shape_rules.hpp>
#include <gpass/exec/tf_rules.hpp>
#include <gpass/ops/tf/nn.hpp>

namespace gpass::exec {

namespace cuda_tf {

/// `ceil(a / b)` for b > 0.
inline i64 ceil_div(i64 a, i64 b) { return a <= 0 ? -((-a) / b) : (a - 1) / b + 1; }  // (a + b - 1 may overflow)

/// SpaceToBatchND (`to_batch`) / BatchToSpaceND: for each block offset the positions of the
/// space side it holds form, per spatial dim, an arithmetic progression (stride the block
/// size), so the whole block moves by one strided copy; padding stays zero.
inline fn make_space_batch(bool to_batch) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [to_batch, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    cuda_array_detail::require_movable(ctx, x.element_type());
    const auto block = vector_input(ctx, 1, "block_shape");
    const cuda_tensor& pc = ctx.input(2);
    if (pc.element_type() != dtype::int32 && pc.element_type() != dtype::int64)
      ctx.fail(std::string(to_batch ? "paddings" : "crops") + " must be int32 or int64, got " + std::string(to_string(pc.element_type())));
    const auto pv = cuda_detail::host_ints(ctx, 2);
    const auto p = tf_rules::plan_space_batch(x.sizes(), block, ctx.input(2).sizes(), pv, to_batch, ctx.node());
    const dtype t = x.element_type();
    cuda_tensor& y = to_batch ? ctx.allocate_output_zeroed(0, t, p.out) : ctx.allocate_output(0, t, p.out);
    if (y.size() == 0 || x.size() == 0) return;
    const std::size_t m = block.size();
    const std::vector<i64>& space = to_batch ? x.sizes() : p.out;  // the space side's sizes (unpadded / cropped)
    const std::vector<i64>& bside = to_batch ? p.out : x.sizes();
    const auto ss = shape_rules::strides_of(space), bs = shape_rules::strides_of(bside);
    const std::size_t rank = x.rank();
    const auto es = static_cast<i64>(size_of(t));
    std::vector<i64> idx(m);
    for (i64 blk = 0; blk < p.blocks; ++blk) {
      for (i64 rest = blk, i = static_cast<i64>(m) - 1; i >= 0; --i) {  // row-major block offset
        idx[static_cast<std::size_t>(i)] = rest % block[static_cast<std::size_t>(i)];
        rest /= block[static_cast<std::size_t>(i)];
      }
      // the copy's sizes, and the strides and offsets of both sides
      std::vector<i64> sizes(rank), sst(rank), bst(rank);
      i64 soff = 0, boff = blk * p.batch * bs[0];
      sizes[0] = p.batch;
      sst[0] = ss[0];
      bst[0] = bs[0];
      bool empty = false;
      for (std::size_t i = 0; i < m; ++i) {
        // space position q = s * b + idx - pad for batch-side positions s in [0, small)
        const i64 b = block[i], pad = pv[2 * i];
        const i64 lo = std::max<i64>(0, ceil_div(pad - idx[i], b));
        const i64 hi = std::min(p.small[i], ceil_div(space[i + 1] + pad - idx[i], b));
        if (hi <= lo) empty = true;
        sizes[i + 1] = std::max<i64>(0, hi - lo);
        soff += (lo * b + idx[i] - pad) * ss[i + 1];
        boff += lo * bs[i + 1];
        sst[i + 1] = b * ss[i + 1];
        bst[i + 1] = bs[i + 1];
      }
      if (empty) continue;
      for (std::size_t d = m + 1; d < rank; ++d) {
        sizes[d] = x.sizes()[d];
        sst[d] = ss[d];
        bst[d] = bs[d];
      }
      if (to_batch)
        cuda_array_detail::move(ctx, *lib, t, static_cast<std::byte*>(y.data()) + boff * es, x.data(), sizes, sst, bst, soff);
      else
        cuda_array_detail::move(ctx, *lib, t, static_cast<std::byte*>(y.data()) + soff * es, x.data(), sizes, bst, sst, boff);
    }
  };
}

/// Roll: each rolled axis splits into the part that moves right and the part that wraps
/// around; one strided copy per combination of the parts.
inline fn make_roll() {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    cuda_array_detail::require_movable(ctx, x.element_type());
    const auto shift = vector_input(ctx, 1, "shift"), axis = vector_input(ctx, 2, "axis");
    const auto& s = x.sizes();
    const auto by = tf_rules::roll_shifts(s, shift, axis, ctx.input(1).sizes(), ctx.input(2).sizes(), ctx.node());
    cuda_tensor& y = ctx.allocate_output(0, x.element_type(), s);
    if (y.size() == 0) return;
    std::vector<std::size_t> rolled;
    for (std::size_t d = 0; d < s.size(); ++d)
      if (by[d] != 0) rolled.push_back(d);
    const auto st = shape_rules::strides_of(s);
    const auto es = static_cast<i64>(size_of(x.element_type()));
    for (std::size_t mask = 0; mask < (std::size_t{1} << rolled.size()); ++mask) {
      std::vector<i64> sizes = s;
      i64 in_off = 0, out_off = 0;
      for (std::size_t k = 0; k < rolled.size(); ++k) {
        const std::size_t d = rolled[k];
        const i64 n = s[d], sh = by[d];
        if (mask & (std::size_t{1} << k)) {  // out[0, sh) = in[n - sh, n)
          sizes[d] = sh;
          in_off += (n - sh) * st[d];
        } else {  // out[sh, n) = in[0, n - sh)
          sizes[d] = n - sh;
          out_off += sh * st[d];
        }
      }
      cuda_array_detail::move(ctx, *lib, x.element_type(), static_cast<std::byte*>(y.data()) + out_off * es, x.data(), sizes, st, st, in_off);
    }
  };
}

/// OneHot(indices, depth, on_value, off_value), `axis` -1 the last: off everywhere but `on` at
/// each index in [0, depth) (negative ones match nothing, as in TensorFlow).
inline fn make_tf_one_hot(const kernel_node& n) {
  const i64 axis_attr = n.attr<i64>("axis", -1);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [axis_attr, lib](context& ctx) {
    const cuda_tensor& ind = ctx.input(0);
    if (ind.element_type() != dtype::int32 && ind.element_type() != dtype::int64)
      ctx.fail("indices must be int32 or int64, got " + std::string(to_string(ind.element_type())));
    const i64 depth = scalar_input(ctx, 1, "depth");
    const cuda_tensor &on = ctx.input(2), &off = ctx.input(3);
    if (depth < 0) ctx.fail("depth must be non-negative, got " + std::to_string(depth));
    if (on.size() != 1 || off.size() != 1 || on.element_type() != off.element_type())
      ctx.fail("on_value and off_value must be scalars of one element type");
    cuda_array_detail::require_movable(ctx, on.element_type());
    const i64 rank = static_cast<i64>(ind.rank());
    const i64 axis = axis_attr == -1 ? rank : tf_axis(axis_attr, rank + 1, ctx.node());
    auto& pol = ctx.policy();
    const std::size_t es = size_of(on.element_type());
    cuda_tensor vals = pol.allocate_tensor(on.element_type(), {2}, ctx.stream());  // [off, on]
    pol.copy_on_device(vals.data(), off.data(), es, ctx.stream());
    pol.copy_on_device(static_cast<std::byte*>(vals.data()) + es, on.data(), es, ctx.stream());
    cuda_array_detail::one_hot_into(ctx, *lib, ind, vals, depth, axis, false);
  };
}

/// LRN over the depth (last) dim of a 4-D input: x * (bias + alpha * the sum of x_k^2 over
/// |k - d| <= depth_radius)^-beta, norm.hpp's kernel with the depth innermost.
inline fn make_tf_lrn(const kernel_node& n) {
  const i64 radius = n.attr<i64>("depth_radius", 5);
  if (radius < 0) n.fail("depth_radius must be non-negative, got " + std::to_string(radius));
  const double bias = n.attr<double>("bias", 1.0), alpha = n.attr<double>("alpha", 1.0), beta = n.attr<double>("beta", 0.5);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    if (x.rank() != 4) ctx.fail("input must be 4-D, got " + x.shape().to_string());
    const dtype t = x.element_type();
    cuda_tensor& y = ctx.allocate_output(0, t, x.sizes());
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, std::string(to_string(t)), {"lrn"}, [&] { return cuda_norm::lrn_source(t); });
    const void* xp = x.data();
    void* yp = y.data();
    long long total = y.size(), depth = x.sizes()[3], inner = 1, lo = std::min(radius, x.sizes()[3]), hi = lo;
    double as = alpha, b = bias, nb = -beta;
    void* args[] = {&xp, &yp, &total, &depth, &inner, &lo, &hi, &as, &b, &nb};
    pol.launch(k.kernels[0], pol.blocks_for(total), 256, args, ctx.stream());
  };
}

/// The element-wise body that halves L2Loss's sum of squares (in the compute type, as the CPU).
inline constexpr const char* halve_body = "r = (R)(x0 / (C0)2);";

/// L2Loss: sum(x^2) / 2 over every element (ONNX's ReduceSumSquare, then halved). An f16 input
/// is summed as f32 and rounded once after the halving, as the CPU kernel does (an f16 sum past
/// 65504 whose half is not would otherwise be infinite).
inline fn make_l2_loss(const kernel_node& n) {
  kernel_node m = n;
  m.attrs = {{"keepdims", i64{0}}};
  m.input_types.assign(1, type{});
  m.constant_inputs.clear();
  fn reduce = cuda_reduce_detail::make_reduce(m, cuda_reduce_detail::rkind::sum_square);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [m, reduce, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    auto& pol = ctx.policy();
    cuda_tensor wide = x;
    if (t == dtype::f16 && x.size() > 0) {
      wide = pol.allocate_tensor(dtype::f32, x.sizes(), ctx.stream());
      const auto& k = lib->get(pol, "widen", {"ew_flat", "ew_strided"},
                               [&] { return cuda_codegen::elementwise_source({{dtype::f16}, dtype::f32, "r = (R)x0;"}); });
      const cuda_tensor* xs[] = {&x};
      cuda_detail::launch_elementwise(ctx, k, wide, xs);
    }
    const dtype st = wide.element_type();
    const cuda_tensor sum = run_inner(ctx, reduce, m, {&wide});
    cuda_tensor& y = ctx.allocate_output(0, t, {});
    const auto& k = lib->get(pol, "halve," + std::string(to_string(st)) + "," + std::string(to_string(t)), {"ew_flat", "ew_strided"},
                             [&] { return cuda_codegen::elementwise_source({{st}, t, halve_body}); });
    const cuda_tensor* xs[] = {&sum};
    cuda_detail::launch_elementwise(ctx, k, y, xs);
  };
}

/// SoftmaxCrossEntropyWithLogits / the sparse one, a block per row of features [B, N]:
/// logsumexp (max-subtracted, in the compute type), loss[i] = sum_j label(i, j) * (lse - x_ij)
/// (terms of label 0 skipped, as the CPU kernel), backprop[i, j] = softmax(x_i)_j - label(i, j);
/// dense labels at (i * lrow + j * lcol), sparse ones an int32 / int64 class per row (`idx`;
/// a class outside [0, N): the row's loss and backprop are NaN, as TensorFlow's GPU kernel).
inline std::string xent_source(dtype t) {
  return cuda_nn::head(t) + R"(extern "C" __global__ void xent(const T* __restrict__ x, const T* __restrict__ lab, const void* idx, int idx64,
    T* __restrict__ loss, T* __restrict__ back, long long B, long long N, long long lrow, long long lcol) {
  __shared__ W sh[33];
  for (long long i = blockIdx.x; i < B; i += gridDim.x) {
    const T* xr = x + i * N;
    W m = (W)(-1.0 / 0.0);
    for (long long j = threadIdx.x; j < N; j += blockDim.x) m = g_max(m, (W)g_load(xr, j));
    m = g_block_reduce<1>(m, sh);
    W s = 0;
    for (long long j = threadIdx.x; j < N; j += blockDim.x) s += g_exp((W)g_load(xr, j) - m);
    s = g_block_reduce<0>(s, sh);
    const W lse = g_log(s) + m;
    long long c = -1;
    bool bad = false;
    if (idx) {
      c = idx64 ? ((const long long*)idx)[i] : (long long)((const int*)idx)[i];
      bad = c < 0 || c >= N;
    }
    const W nan = (W)(0.0 / 0.0);
    W acc = 0;
    for (long long j = threadIdx.x; j < N; j += blockDim.x) {
      const W v = (W)g_load(xr, j);
      const W l = idx ? (j == c ? (W)1 : (W)0) : (W)g_load(lab, i * lrow + j * lcol);
      if (l != (W)0) acc += l * (lse - v);
      g_store(back, i * N + j, bad ? nan : g_exp(v - m) / s - l);
    }
    acc = g_block_reduce<0>(acc, sh);
    if (threadIdx.x == 0) g_store(loss, i, bad ? nan : acc);
  }
}
)";
}

/// SoftmaxCrossEntropyWithLogits (`sparse` false: labels of the features' type broadcast to
/// [B, N] from [B, N], [1, N], [B, 1], [N] or a scalar) and SparseSoftmaxCrossEntropyWithLogits
/// (int32 / int64 labels [B]; constant ones checked to be in [0, N) on the host, as the CPU).
inline fn make_xent(bool sparse) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [sparse, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& l = ctx.input(1);
    if (x.rank() != 2) ctx.fail("features must be 2-D [batch, classes], got " + x.shape().to_string());
    const i64 b = x.sizes()[0], n = x.sizes()[1];
    long long lrow = 0, lcol = 0;
    if (sparse) {
      if (l.rank() != 1 || l.sizes()[0] != b)
        ctx.fail("labels " + l.shape().to_string() + " must be 1-D with the batch size of features " + x.shape().to_string());
      if (l.element_type() != dtype::int32 && l.element_type() != dtype::int64)
        ctx.fail("labels must be int32 or int64, got " + std::string(to_string(l.element_type())));
      if (ctx.node().constant_input(1)) {
        const auto lab = cuda_detail::host_ints(ctx, 1);
        for (std::size_t i = 0; i < lab.size(); ++i)
          if (lab[i] < 0 || lab[i] >= n)
            ctx.fail("label " + std::to_string(lab[i]) + " of row " + std::to_string(i) + " is outside the valid range [0, " +
                     std::to_string(n) + ")");
      }
    } else {
      if (l.element_type() != x.element_type()) ctx.fail("labels and features have different element types");
      std::vector<i64> ls = l.sizes();
      while (ls.size() < 2) ls.insert(ls.begin(), 1);
      if (ls.size() != 2 || (ls[0] != b && ls[0] != 1) || (ls[1] != n && ls[1] != 1))
        ctx.fail("labels " + l.shape().to_string() + " do not broadcast to features " + x.shape().to_string());
      lrow = ls[0] == 1 ? 0 : ls[1];
      lcol = ls[1] == 1 ? 0 : 1;
    }
    const dtype t = x.element_type();
    cuda_tensor& loss = ctx.allocate_output(0, t, {b});
    cuda_tensor& back = ctx.allocate_output(1, t, {b, n});
    if (b == 0) return;
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, std::string(to_string(t)), {"xent"}, [&] { return xent_source(t); });
    const void* xp = x.data();
    const void* lp = sparse ? nullptr : l.data();
    const void* ip = sparse ? l.data() : nullptr;
    int idx64 = sparse && l.element_type() == dtype::int64;
    void *op = loss.data(), *bp = back.data();
    long long bb = b, nn = n;
    void* args[] = {&xp, &lp, &ip, &idx64, &op, &bp, &bb, &nn, &lrow, &lcol};
    pol.launch(k.kernels[0], static_cast<unsigned>(std::min<i64>(b, 65535)), 256, args, ctx.stream());
  };
}

/// `y` rows = `x` rows picked by the int64 device indices `idx` (`ni` of them) out of `dim`
/// rows of `inner` elements (the move library's gather).
inline void gather_rows(context& ctx, cuda_detail::lazy_library& lib, dtype t, void* y, const void* x, const void* idx, i64 ni, i64 inner,
                        i64 dim) {
  long long nn = ni * inner, n_idx = ni, in = inner, d = dim;
  if (nn == 0) return;
  int idx64 = 1;
  void* xp = const_cast<void*>(x);
  void* ip = const_cast<void*>(idx);
  void* args[] = {&y, &xp, &ip, &idx64, &nn, &n_idx, &in, &d};
  auto& p = ctx.policy();
  const auto& k = cuda_array_detail::move_kernels(ctx, lib);
  p.launch(k.kernels[cuda_array_detail::entry_index(cuda_array_detail::mk::gather, size_of(t))], p.blocks_for(nn), 256, args, ctx.stream());
}

/// Rows of `up` (`n` rows of `inner` elements) written to rows `idx` (int64 device indices; one
/// out of [0, rows) skips its row) of `y` (the move library's ScatterND with 1-tuples).
inline void scatter_rows(context& ctx, cuda_detail::lazy_library& lib, dtype t, void* y, const void* up, const void* idx, i64 n, i64 inner,
                         i64 rows) {
  cuda_array_detail::g_view v;
  v.n = n * inner;
  if (v.n == 0) return;
  v.rank = 1;
  v.sizes[0] = rows;
  v.in_st[0] = inner;
  long long block = inner;
  int idx64 = 1;
  void* upp = const_cast<void*>(up);
  void* ip = const_cast<void*>(idx);
  void* args[] = {&y, &upp, &ip, &idx64, &v, &block};
  auto& p = ctx.policy();
  const auto& k = cuda_array_detail::move_kernels(ctx, lib);
  p.launch(k.kernels[cuda_array_detail::entry_index(cuda_array_detail::mk::scatter_nd, size_of(t))], p.blocks_for(v.n), 256, args,
           ctx.stream());
}

/// DynamicStitch / ParallelDynamicStitch: the indices read back and checked by the CPU's rules
/// (`tf_rules::stitch_sizes`); each merged row written once, by the last (input, position) that
/// names it (later inputs over earlier ones, as the CPU kernel copies them): per data input one
/// row scatter whose positions that lose are sent out of range; rows no index names stay 0.
inline fn make_stitch() {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [lib](context& ctx) {
    const std::size_t n = ctx.num_inputs() / 2;
    if (n == 0 || ctx.num_inputs() % 2 != 0) ctx.fail("needs N indices and N data inputs");
    std::vector<std::vector<i64>> idx(n), isz(n), dsz(n);
    std::vector<dtype> dts(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (ctx.input(i).element_type() != dtype::int32) ctx.fail("indices must be int32");
      idx[i] = cuda_detail::host_ints(ctx, i);
      tf_rules::check_stitch_indices(idx[i], i, ctx.node());
      isz[i] = ctx.input(i).sizes();
      dsz[i] = ctx.input(n + i).sizes();
      dts[i] = ctx.input(n + i).element_type();
    }
    const std::vector<i64> out = tf_rules::stitch_sizes(idx, isz, dsz, dts, ctx.node());
    cuda_array_detail::require_movable(ctx, dts[0]);
    cuda_tensor& y = ctx.allocate_output_zeroed(0, dts[0], out);
    if (y.size() == 0) return;
    const i64 rows = out[0], slice = y.size() / rows;
    check_scratch(ctx, static_cast<double>(rows) * 16.0, "the merged rows' writers");
    std::vector<std::pair<std::size_t, i64>> owner(static_cast<std::size_t>(rows), {n, -1});
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < idx[i].size(); ++j) owner[static_cast<std::size_t>(idx[i][j])] = {i, static_cast<i64>(j)};
    auto& pol = ctx.policy();
    for (std::size_t i = 0; i < n; ++i) {
      gpass::tensor to(dtype::int64, {static_cast<i64>(idx[i].size())});
      bool any = false;
      for (std::size_t j = 0; j < idx[i].size(); ++j) {
        const bool wins = owner[static_cast<std::size_t>(idx[i][j])] == std::pair{i, static_cast<i64>(j)};
        to.data<i64>()[j] = wins ? idx[i][j] : rows;
        any = any || wins;
      }
      if (!any) continue;
      const cuda_tensor dev = pol.upload(to, ctx.stream());
      scatter_rows(ctx, *lib, dts[0], y.data(), ctx.input(n + i).data(), dev.data(), to.size(), slice, rows);
    }
  };
}

/// DynamicPartition: the partitions read back and checked by the CPU's rules
/// (`tf_rules::plan_partition`); output q gathers the rows of partition q in row-major order,
/// their positions uploaded once for all the outputs.
inline fn make_partition(const kernel_node& n) {
  const i64 parts = n.attr<i64>("num_partitions");
  if (parts < 1) n.fail("num_partitions must be at least 1, got " + std::to_string(parts));
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [parts, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const cuda_tensor& p = ctx.input(1);
    if (p.element_type() != dtype::int32) ctx.fail("partitions must be int32");
    cuda_array_detail::require_movable(ctx, x.element_type());
    const auto pv = cuda_detail::host_ints(ctx, 1);
    const auto plan = tf_rules::plan_partition(x.sizes(), p.sizes(), pv, parts, ctx.num_outputs(), ctx.node());
    i64 slice = 1;
    for (i64 s : plan.tail) slice *= s;
    // the row positions grouped by partition, in order
    gpass::tensor order(dtype::int64, {static_cast<i64>(pv.size())});
    std::vector<i64> start(static_cast<std::size_t>(parts) + 1, 0);
    for (i64 q = 0; q < parts; ++q) start[static_cast<std::size_t>(q) + 1] = start[static_cast<std::size_t>(q)] + plan.count[static_cast<std::size_t>(q)];
    {
      std::vector<i64> at(start.begin(), start.end() - 1);
      for (std::size_t j = 0; j < pv.size(); ++j) order.data<i64>()[at[static_cast<std::size_t>(pv[j])]++] = static_cast<i64>(j);
    }
    std::vector<cuda_tensor*> outs;
    for (i64 q = 0; q < parts; ++q) {
      std::vector<i64> sz{plan.count[static_cast<std::size_t>(q)]};
      sz.insert(sz.end(), plan.tail.begin(), plan.tail.end());
      outs.push_back(&ctx.allocate_output(static_cast<std::size_t>(q), x.element_type(), sz));
    }
    if (x.size() == 0 || pv.empty()) return;
    const cuda_tensor dev = ctx.policy().upload(order, ctx.stream());
    for (i64 q = 0; q < parts; ++q) {
      const auto qi = static_cast<std::size_t>(q);
      gather_rows(ctx, *lib, x.element_type(), outs[qi]->data(), x.data(), static_cast<const i64*>(dev.data()) + start[qi], plan.count[qi],
                  slice, static_cast<i64>(pv.size()));
    }
  };
}

/// CheckNumerics' search: the smallest flat index of a NaN or infinity (atomicMin into `first`).
inline std::string first_bad_source(dtype t) {
  return cuda_nn::head(t) + R"(extern "C" __global__ void first_bad(const T* __restrict__ x, long long n, unsigned long long* first) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const W v = (W)g_load(x, i);
    if (v != v || v - v != (W)0) atomicMin(first, (unsigned long long)i);
  }
}
)";
}

/// CheckNumerics: the input itself when every element is finite; else fails as the CPU kernel
/// does, naming the first non-finite element's kind (a search on the device, then its index and
/// that element read back: the one host wait of the node).
inline fn make_check_numerics(const kernel_node& n) {
  const std::string message = n.attr<std::string>("message", "");
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [message, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    if (x.size() > 0) {
      auto& pol = ctx.policy();
      const auto none = std::numeric_limits<std::uint64_t>::max();
      cuda_tensor first = pol.upload(gpass::tensor::scalar<std::uint64_t>(none), ctx.stream());
      const auto& k = lib->get(pol, std::string(to_string(t)), {"first_bad"}, [&] { return first_bad_source(t); });
      const void* xp = x.data();
      long long nn = x.size();
      void* fp = first.data();
      void* args[] = {&xp, &nn, &fp};
      pol.launch(k.kernels[0], pol.blocks_for(nn), 256, args, ctx.stream());
      const std::uint64_t at = pol.download(first, ctx.stream()).data<std::uint64_t>()[0];
      if (at != none) {
        const std::size_t es = size_of(t);
        gpass::tensor v(t, {});
        pol.copy_to_host(v.raw(), static_cast<const std::byte*>(x.data()) + at * es, es, ctx.stream());
        pol.synchronize(ctx.stream());
        const double d = visit_dtype(t, [&]<class T>() -> double {
          if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>)
            return static_cast<double>(static_cast<float>(v.data<T>()[0]));
          else
            return 0.0;
        });
        ctx.fail(message + " : Tensor had " + (std::isnan(d) ? "NaN" : "Inf") + " values");
      }
    }
    ctx.set_output(0, ctx.input_value(0));
  };
}

/// InTopKV2(predictions [B, N] f32, targets [B], k): whether each row's target class is among
/// its k largest (fewer than k classes strictly larger; a non-finite or out of range target is
/// false), a thread per row.
inline std::string in_top_k_source() {
  return cuda_codegen::cuda_prelude() + R"(extern "C" __global__ void in_top_k(const float* __restrict__ p, const void* t, int t64, bool* out,
    long long rows, long long cols, long long k) {
  for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < rows; r += (long long)gridDim.x * blockDim.x) {
    const long long c = t64 ? ((const long long*)t)[r] : (long long)((const int*)t)[r];
    bool in = false;
    if (c >= 0 && c < cols) {
      const float v = p[r * cols + c];
      if (v == v && v - v == 0.0f) {
        long long more = 0;
        for (long long j = 0; j < cols; ++j) more += p[r * cols + j] > v;
        in = more < k;
      }
    }
    out[r] = in;
  }
}
)";
}

/// The 2-D pools' gradients in NHWC, deterministic: `max_arg`, a thread per output element,
/// finds its window's first maximum (row-major window order; a NaN first element stays, as the
/// CPU kernel compares); `pool_grad`, a thread per input element, adds up in output-position
/// order the gradients routed to it (MaxPoolGrad: the outputs whose maximum it is; AvgPoolGrad:
/// each covering output's gradient over its window's valid positions), as the CPU kernel
/// adds them: the same sums, in the same order.
inline std::string pool_grad_source(dtype t) {
  const std::string T(cuda_codegen::storage_type(t));
  return cuda_codegen::cuda_prelude() + "typedef " + T + R"( T;
struct g_pool { long long N, D, H, W, C, OD, OH, OW, KD, KH, KW, SD, SH, SW, PF, PT, PL; };
__device__ __forceinline__ long long g_end(long long x0, long long k, long long size) { return x0 + (k < size - x0 ? k : size - x0); }
__device__ __forceinline__ long long g_cdiv(long long a, long long b) { return a <= 0 ? -((-a) / b) : (a - 1) / b + 1; }
// the outputs o0..o1 along one axis whose windows (o * S - P, K cells) hold position x
__device__ __forceinline__ void g_range(long long x, long long P, long long K, long long S, long long O, long long& o0, long long& o1) {
  o0 = g_cdiv(x + P - K + 1, S);
  o1 = (x + P) / S;
  if (o0 < 0) o0 = 0;
  if (o1 > O - 1) o1 = O - 1;
}
// output element i's window: its first maximum's position (d * H + h) * W + w (-1 for a window
// without cells, `best` then unchanged), row-major window order
__device__ long long g_window_max(const T* __restrict__ x, const g_pool& g, long long i, T& best) {
  long long q = i / g.C;
  const long long c = i - q * g.C, ow = q % g.OW, oh = (q / g.OW) % g.OH, od = (q / (g.OW * g.OH)) % g.OD, b = q / (g.OW * g.OH * g.OD);
  const long long d0 = od * g.SD - g.PF, h0 = oh * g.SH - g.PT, w0 = ow * g.SW - g.PL;
  long long at = -1;
  for (long long id = d0 > 0 ? d0 : 0; id < g_end(d0, g.KD, g.D); ++id)
    for (long long ih = h0 > 0 ? h0 : 0; ih < g_end(h0, g.KH, g.H); ++ih)
      for (long long iw = w0 > 0 ? w0 : 0; iw < g_end(w0, g.KW, g.W); ++iw) {
        const T v = x[(((b * g.D + id) * g.H + ih) * g.W + iw) * g.C + c];
        if (at < 0 || v > best) { best = v; at = (id * g.H + ih) * g.W + iw; }
      }
  return at;
}
extern "C" __global__ void max_arg(const T* __restrict__ x, long long* __restrict__ arg, g_pool g) {
  const long long total = g.N * g.OD * g.OH * g.OW * g.C;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    T best = (T)0;
    arg[i] = g_window_max(x, g, i, best);
  }
}
// MaxPoolWithArgmax: y = the window's first maximum (row-major window order; `lowest` for a
// window without cells), arg = its flat index p * C + c (+ b * image with `image` > 0), int32
// (`arg32`) or int64
extern "C" __global__ void max_with_arg(const T* __restrict__ x, T* __restrict__ y, void* __restrict__ arg, g_pool g, long long image,
                                        int arg32, double lowest) {
  const long long total = g.N * g.OD * g.OH * g.OW * g.C;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    T best = (T)lowest;
    long long at = g_window_max(x, g, i, best);
    if (at >= 0) at = at * g.C + i % g.C + (image > 0 ? i / (g.OD * g.OH * g.OW * g.C) * image : 0);
    y[i] = best;
    if (arg32) ((int*)arg)[i] = (int)at;
    else ((long long*)arg)[i] = at;
  }
}
// mode 0: max by arg (the window's first maximum); 1: average over the window's valid
// positions; 2: max to every input within 1e-5 of the forward output y (3-D, TensorFlow's CPU)
extern "C" __global__ void pool_grad(const T* __restrict__ dy, const long long* __restrict__ arg, T* __restrict__ dx, g_pool g,
                                     const T* __restrict__ x, const T* __restrict__ y, int mode) {
  const long long total = g.N * g.D * g.H * g.W * g.C;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    long long q = i / g.C;
    const long long c = i - q * g.C, w = q % g.W, h = (q / g.W) % g.H, d = (q / (g.W * g.H)) % g.D, b = q / (g.W * g.H * g.D);
    long long od0, od1, oh0, oh1, ow0, ow1;
    g_range(d, g.PF, g.KD, g.SD, g.OD, od0, od1);
    g_range(h, g.PT, g.KH, g.SH, g.OH, oh0, oh1);
    g_range(w, g.PL, g.KW, g.SW, g.OW, ow0, ow1);
    const long long p = (d * g.H + h) * g.W + w;
    T acc = (T)0;
    for (long long od = od0; od <= od1; ++od)
      for (long long oh = oh0; oh <= oh1; ++oh)
        for (long long ow = ow0; ow <= ow1; ++ow) {
          const long long o = (((b * g.OD + od) * g.OH + oh) * g.OW + ow) * g.C + c;
          if (mode == 0) {
            if (arg[o] == p) acc += dy[o];
          } else if (mode == 2) {
            if (fabs(x[i] - y[o]) < (T)1e-5) acc += dy[o];
          } else {
            const long long d0 = od * g.SD - g.PF, h0 = oh * g.SH - g.PT, w0 = ow * g.SW - g.PL;
            const long long depths = g_end(d0, g.KD, g.D) - (d0 > 0 ? d0 : 0), rows = g_end(h0, g.KH, g.H) - (h0 > 0 ? h0 : 0),
                            cols = g_end(w0, g.KW, g.W) - (w0 > 0 ? w0 : 0);
            acc += dy[o] / (T)(depths * rows * cols);
          }
        }
    dx[i] = acc;
  }
}
)";
}

/// Host mirror of the device `g_pool`.
struct g_pool {
  long long N, D, H, W, C, OD, OH, OW, KD, KH, KW, SD, SH, SW, PF, PT, PL;
};

/// MaxPoolGrad / MaxPool3DGrad(orig_input, orig_output, grad) (`max`) and AvgPoolGrad /
/// AvgPool3DGrad(orig_input_shape, grad), NHWC / NDHWC as on the CPU: `pool_grad_source`'s
/// kernels, the window and checks TF's (`tf_rules::window`, `check_output_sizes`). The 2-D
/// max routes each gradient to its window's first maximum; the 3-D one to every input within
/// 1e-5 of the forward output, as TensorFlow's CPU kernels do.
inline fn make_pool_grad(const kernel_node& n, bool max, bool volumetric = false) {
  const tf_rules::window win(n, true, false, volumetric);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [win, max, lib](context& ctx) {
    const cuda_tensor& dy = ctx.input(max ? 2 : 1);
    std::vector<i64> xs;
    if (max) {
      const cuda_tensor& x = ctx.input(0);
      if (x.element_type() != dy.element_type() || ctx.input(1).element_type() != dy.element_type())
        ctx.fail("orig_input, orig_output and grad have different element types");
      xs = x.sizes();
    } else {
      xs = tf_rules::sizes_values(vector_input(ctx, 0, "orig_input_shape"), win.rank, ctx.node(), "orig_input_shape");
    }
    const tf_rules::geometry g = win.resolve(xs, win.pool_window(), ctx.node());
    tf_rules::check_output_sizes(dy.sizes(), win, g, g.C, "grad", "pooling", ctx.node());
    if (max && win.volumetric) tf_rules::check_output_sizes(ctx.input(1).sizes(), win, g, g.C, "orig_output", "pooling", ctx.node());
    const dtype t = dy.element_type();
    cuda_tensor& dx = ctx.allocate_output_zeroed(0, t, xs);
    if (dy.size() == 0 || dx.size() == 0) return;
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, std::string(to_string(t)), {"max_arg", "pool_grad"}, [&] { return pool_grad_source(t); });
    g_pool gp{g.N, g.D, g.H, g.W, g.C, g.OD, g.OH, g.OW, g.KD, g.KH, g.KW, g.SD, g.SH, g.SW, g.PF, g.PT, g.PL};
    cuda_tensor arg;
    const void* ap = nullptr;
    int mode = !max ? 1 : win.volumetric ? 2 : 0;
    if (mode == 0) {
      arg = pol.allocate_tensor(dtype::int64, dy.sizes(), ctx.stream());
      const void* xp = ctx.input(0).data();
      void* argp = arg.data();
      void* args[] = {&xp, &argp, &gp};
      pol.launch(k.kernels[0], pol.blocks_for(dy.size()), 256, args, ctx.stream());
      ap = arg.data();
    }
    const void* dyp = dy.data();
    void* dxp = dx.data();
    const void* xp = max ? ctx.input(0).data() : nullptr;
    const void* yp = max ? ctx.input(1).data() : nullptr;
    void* args[] = {&dyp, &ap, &dxp, &gp, &xp, &yp, &mode};
    pol.launch(k.kernels[1], pol.blocks_for(dx.size()), 256, args, ctx.stream());
  };
}

/// MaxPoolWithArgmax(input) NHWC, f32 / f64 as on the CPU: `max_with_arg` writes each
/// window's first maximum and its flat index (TensorFlow's ((y * W + x) * C + c), plus
/// b * H * W * C with include_batch_in_index). An int32 Targmax whose indices may pass int32
/// (the batch's or the image's size) takes the int64 indices back to the host and fails there
/// on the first that does not fit, as the CPU kernel.
inline fn make_max_pool_with_argmax(const kernel_node& n) {
  const tf_rules::window win(n, true);
  const dtype at = tf_rules::type_attr(n, "Targmax", dtype::int64);
  if (at != dtype::int64 && at != dtype::int32) n.fail("Targmax must be int32 or int64");
  const bool with_batch = flag(n, "include_batch_in_index", false);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [win, at, with_batch, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const tf_rules::geometry g = win.resolve(x.sizes(), win.pool_window(), ctx.node());
    const std::vector<i64> out = win.output_sizes(g, g.C);
    const dtype t = x.element_type();
    cuda_tensor& y = ctx.allocate_output(0, t, out);
    if (y.size() == 0) {
      ctx.allocate_output(1, at, out);
      return;
    }
    const i64 image = g.in_positions() * g.C;
    const i64 bound = with_batch ? g.N * image : image;  // (every index is below it)
    const bool direct = at == dtype::int64 || bound - 1 <= INT32_MAX;
    auto& pol = ctx.policy();
    cuda_tensor wide;
    if (!direct) wide = pol.allocate_tensor(dtype::int64, out, ctx.stream());
    cuda_tensor& a = direct ? ctx.allocate_output(1, at, out) : wide;
    const auto& k = lib->get(pol, std::string(to_string(t)), {"max_with_arg"}, [&] { return pool_grad_source(t); });
    g_pool gp{g.N, g.D, g.H, g.W, g.C, g.OD, g.OH, g.OW, g.KD, g.KH, g.KW, g.SD, g.SH, g.SW, g.PF, g.PT, g.PL};
    const void* xp = x.data();
    void* yp = y.data();
    void* ap = a.data();
    long long img = with_batch ? image : 0;
    int arg32 = direct && at == dtype::int32;
    double lowest = t == dtype::f32 ? static_cast<double>(std::numeric_limits<float>::lowest()) : std::numeric_limits<double>::lowest();
    void* args[] = {&xp, &yp, &ap, &gp, &img, &arg32, &lowest};
    pol.launch(k.kernels[0], pol.blocks_for(y.size()), 256, args, ctx.stream());
    if (!direct) {
      const gpass::tensor h = pol.download(wide, ctx.stream());
      write_ints(ctx, 1, at, std::vector<i64>(h.data<i64>(), h.data<i64>() + h.size()), out);
    }
  };
}

}  // namespace cuda_tf

/// The sources tf_array.hpp generates beyond the other families' (for compile checks).
inline std::vector<std::pair<std::string, std::string>> tf_array_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : {dtype::f32, dtype::f16, dtype::f64}) {
    if (t == dtype::f16) {  // (summed as f32)
      r.emplace_back("tf::L2Loss_halve_f32_f16", cuda_codegen::elementwise_source({{dtype::f32}, t, cuda_tf::halve_body}));
      r.emplace_back("tf::L2Loss_widen_f16", cuda_codegen::elementwise_source({{t}, dtype::f32, "r = (R)x0;"}));
    } else {
      r.emplace_back("tf::L2Loss_halve_" + std::string(to_string(t)), cuda_codegen::elementwise_source({{t}, t, cuda_tf::halve_body}));
    }
    r.emplace_back("tf::xent_" + std::string(to_string(t)), cuda_tf::xent_source(t));
  }
  r.emplace_back("tf::xent_bf16", cuda_tf::xent_source(dtype::bf16));
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16})
    r.emplace_back("tf::CheckNumerics_" + std::string(to_string(t)), cuda_tf::first_bad_source(t));
  r.emplace_back("tf::InTopKV2", cuda_tf::in_top_k_source());
  for (dtype t : {dtype::f32, dtype::f64}) r.emplace_back("tf::pool_grad_" + std::string(to_string(t)), cuda_tf::pool_grad_source(t));
  return r;
}

/// Registers tf_array.hpp's kernels (after `register_cuda_tf`, whose ONNX kernels they reuse).
inline void register_cuda_tf_array(kernel_registry<cuda>& r) {
  using namespace cuda_tf;
  namespace ad = cuda_array_detail;
  const auto movable = ad::movable_types();
  for (const auto& [name, to_space] : {std::pair{"DepthToSpace", true}, std::pair{"SpaceToDepth", false}})
    r.add({.domain = "tf", .op = name, .dtypes = movable,
           .make = [to_space](const kernel_node& n) -> fn {
             const i64 b = n.attr<i64>("block_size");
             if (b < 2) n.fail("block_size must be at least 2, got " + std::to_string(b));
             const std::string fmt = n.attr<std::string>("data_format", "NHWC");
             if (fmt != "NHWC" && fmt != "NCHW") n.fail("data_format must be NHWC or NCHW, got '" + fmt + "'");
             auto lib = std::make_shared<cuda_detail::lazy_library>();
             return [to_space, b, nchw = fmt == "NCHW", lib](context& ctx) {
               const cuda_tensor& x = ctx.input(0);
               ad::require_movable(ctx, x.element_type());
               const auto v = tf_rules::depth_space_view(x.sizes(), b, nchw, to_space, ctx.node());
               ad::copy_view(ctx, *lib, x, v.out, v.view.sizes, v.view.strides, 0);
             };
           },
           .applies = tf_2d_format});
  r.add({.domain = "tf", .op = "SpaceToBatchND", .dtypes = movable, .make = [](const kernel_node&) { return make_space_batch(true); }});
  r.add({.domain = "tf", .op = "BatchToSpaceND", .dtypes = movable, .make = [](const kernel_node&) { return make_space_batch(false); }});
  r.add({.domain = "tf", .op = "Roll", .dtypes = movable, .make = [](const kernel_node&) { return make_roll(); }});
  r.add({.domain = "tf", .op = "ReverseSequence", .dtypes = movable, .make = [](const kernel_node& n) -> fn {
           const i64 seq_attr = n.attr<i64>("seq_dim"), batch_attr = n.attr<i64>("batch_dim", 0);
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [lib, seq_attr, batch_attr](context& ctx) {
             const cuda_tensor& x = ctx.input(0);
             ad::require_movable(ctx, x.element_type());
             const auto rank = static_cast<i64>(x.rank());
             const i64 seq = tf_axis(seq_attr, rank, ctx.node(), "seq_dim"), batch = tf_axis(batch_attr, rank, ctx.node(), "batch_dim");
             if (seq == batch) ctx.fail("seq_dim and batch_dim are both " + std::to_string(seq));
             const auto len = vector_input(ctx, 1, "seq_lengths");
             const auto& s = x.sizes();
             if (static_cast<i64>(len.size()) != s[static_cast<std::size_t>(batch)])
               ctx.fail("seq_lengths has " + std::to_string(len.size()) + " entries, the batch dim is " +
                        std::to_string(s[static_cast<std::size_t>(batch)]));
             for (i64 l : len)
               if (l < 0 || l > s[static_cast<std::size_t>(seq)])
                 ctx.fail("seq_lengths has " + std::to_string(l) + ", outside [0, " + std::to_string(s[static_cast<std::size_t>(seq)]) + "]");
             ad::reverse_sequence_into(ctx, *lib, x, len, static_cast<std::size_t>(batch), static_cast<std::size_t>(seq));
           };
         }});
  r.add({.domain = "tf", .op = "OneHot", .dtypes = movable, .type_input = 2, .make = make_tf_one_hot,
         .applies = [](const kernel_query& q) { return q.inputs.empty() || q.inputs[0] == dtype::int32 || q.inputs[0] == dtype::int64; }});
  r.add({.domain = "tf", .op = "MatrixBandPart", .dtypes = movable, .make = [](const kernel_node&) -> fn {
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [lib](context& ctx) {
             const cuda_tensor& x = ctx.input(0);
             ad::require_movable(ctx, x.element_type());
             if (x.rank() < 2) ctx.fail("input must have rank >= 2, got " + x.shape().to_string());
             const i64 lower = scalar_input(ctx, 1, "num_lower"), upper = scalar_input(ctx, 2, "num_upper");
             const i64 m = x.sizes()[x.rank() - 2], k = x.sizes()[x.rank() - 1];
             if (lower > m) ctx.fail("num_lower must be at most the number of rows, got " + std::to_string(lower));
             if (upper > k) ctx.fail("num_upper must be at most the number of columns, got " + std::to_string(upper));
             // kept: column - row in [-lower, upper], a negative bound keeping that whole side
             ad::band_into(ctx, *lib, x, lower < 0 ? LLONG_MIN : -lower, upper < 0 ? LLONG_MAX : upper);
           };
         }});
  r.add({.domain = "tf", .op = "Range", .dtypes = {dtype::f32, dtype::f64, dtype::int32, dtype::int64}, .make = [](const kernel_node&) -> fn {
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [lib](context& ctx) {
             const cuda_tensor &a = ctx.input(0), &l = ctx.input(1), &d = ctx.input(2);
             if (l.element_type() != a.element_type() || d.element_type() != a.element_type())
               ctx.fail("start, limit and delta must have the same element type");
             if (a.size() != 1 || l.size() != 1 || d.size() != 1 || a.rank() > 0 || l.rank() > 0 || d.rank() > 0)
               ctx.fail("start, limit and delta must be scalars");
             const gpass::tensor hs = cuda_detail::host_value(ctx, 0), hl = cuda_detail::host_value(ctx, 1), hd = cuda_detail::host_value(ctx, 2);
             visit_dtype(a.element_type(), [&]<class T>() {
               if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
                             std::is_same_v<T, std::int64_t>)
                 tf_rules::check_range(hs.data<T>()[0], hl.data<T>()[0], hd.data<T>()[0], ctx.node());
               else
                 ctx.fail("no CUDA Range of element type " + std::string(to_string(a.element_type())));
             });
             ad::range_into(ctx, *lib, 1, hs, hl, hd);  // (the values read once)
           };
         }});
  r.add({.domain = "tf", .op = "LRN", .dtypes = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}, .make = make_tf_lrn});
  r.add({.domain = "tf", .op = "L2Loss", .dtypes = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}, .make = make_l2_loss});
  const std::vector<dtype> floats = {dtype::f32, dtype::f64, dtype::f16, dtype::bf16};
  r.add({.domain = "tf", .op = "SoftmaxCrossEntropyWithLogits", .dtypes = floats, .make = [](const kernel_node&) { return make_xent(false); }});
  r.add({.domain = "tf", .op = "SparseSoftmaxCrossEntropyWithLogits", .dtypes = floats,
         .make = [](const kernel_node&) { return make_xent(true); }});
  for (const char* op : {"DynamicStitch", "ParallelDynamicStitch"})
    r.add({.domain = "tf", .op = op, .dtypes = {dtype::int32}, .make = [](const kernel_node&) { return make_stitch(); },
           .applies = [](const kernel_query& q) {  // (the data's type, input N of 2N)
             const std::size_t k = q.inputs.size() / 2;
             return k == 0 || q.inputs[k] == dtype::undefined || cuda_codegen::supported(q.inputs[k]);
           }});
  r.add({.domain = "tf", .op = "DynamicPartition", .dtypes = movable, .make = make_partition});
  // the 2-D pools' gradients, NHWC (as the CPU's; NCHW and the 3-D ones stay on the CPU)
  r.add({.domain = "tf", .op = "MaxPoolWithArgmax", .dtypes = {dtype::f32, dtype::f64}, .make = make_max_pool_with_argmax});
  r.add({.domain = "tf", .op = "MaxPoolGrad", .dtypes = {dtype::f32, dtype::f64}, .make = [](const kernel_node& n) { return make_pool_grad(n, true); },
         .applies = tf_nhwc_format});
  r.add({.domain = "tf", .op = "AvgPoolGrad", .dtypes = {dtype::f32, dtype::f64}, .type_input = 1,
         .make = [](const kernel_node& n) { return make_pool_grad(n, false); }, .applies = tf_nhwc_format});
  r.add({.domain = "tf", .op = "MaxPool3DGrad", .dtypes = {dtype::f32, dtype::f64},
         .make = [](const kernel_node& n) { return make_pool_grad(n, true, true); }, .applies = tf_ndhwc_format});
  r.add({.domain = "tf", .op = "AvgPool3DGrad", .dtypes = {dtype::f32, dtype::f64}, .type_input = 1,
         .make = [](const kernel_node& n) { return make_pool_grad(n, false, true); }, .applies = tf_ndhwc_format});
  r.add({.domain = "tf", .op = "CheckNumerics", .dtypes = floats, .alias_input = 0, .make = make_check_numerics});
  r.add({.domain = "tf", .op = "InTopKV2", .dtypes = {dtype::f32}, .make = [](const kernel_node&) -> fn {
           auto lib = std::make_shared<cuda_detail::lazy_library>();
           return [lib](context& ctx) {
             const cuda_tensor& p = ctx.input(0);
             if (p.rank() != 2 || p.element_type() != dtype::f32) ctx.fail("predictions must be a 2-D f32 tensor");
             const cuda_tensor& t = ctx.input(1);
             if (t.rank() > 1) ctx.fail("targets must be a vector, got sizes " + t.shape().to_string());
             if (t.element_type() != dtype::int32 && t.element_type() != dtype::int64) ctx.fail("targets must be int32 or int64");
             if (ctx.input(2).rank() > 1 || ctx.input(2).size() != 1) ctx.fail("k must be a scalar, got sizes " + ctx.input(2).shape().to_string());
             const i64 k = vector_input(ctx, 2, "k")[0], rows = p.sizes()[0], cols = p.sizes()[1];
             if (t.size() != rows) ctx.fail("targets must have one entry per row of predictions");
             cuda_tensor& out = ctx.allocate_output(0, dtype::bool_, {rows});
             if (rows == 0) return;
             auto& pol = ctx.policy();
             const auto& kk = lib->get(pol, "in_top_k", {"in_top_k"}, [] { return in_top_k_source(); });
             const void* pp = p.data();
             const void* tp = t.data();
             int t64 = t.element_type() == dtype::int64;
             void* op = out.data();
             long long rr = rows, cc = cols, kv = k;
             void* args[] = {&pp, &tp, &t64, &op, &rr, &cc, &kv};
             pol.launch(kk.kernels[0], pol.blocks_for(rows), 256, args, ctx.stream());
           };
         }});
  // shape computations on a few ints (host memory in TensorFlow's GPU kernels too)
  const std::vector<dtype> ints = {dtype::int32, dtype::int64};
  r.add({.domain = "tf", .op = "InvertPermutation", .dtypes = ints, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const auto inv = tf_rules::invert_permutation(vector_input(ctx, 0, "x"), ctx.node());
             write_ints(ctx, 0, ctx.input(0).element_type(), inv, {static_cast<i64>(inv.size())});
           };
         }});
  r.add({.domain = "tf", .op = "BroadcastArgs", .dtypes = ints, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             const auto s0 = vector_input(ctx, 0, "s0"), s1 = vector_input(ctx, 1, "s1");
             const auto out = tf_rules::broadcast_args(s0, s1, ctx.node());
             write_ints(ctx, 0, ctx.input(0).element_type(), out, {static_cast<i64>(out.size())});
           };
         }});
  r.add({.domain = "tf", .op = "BroadcastGradientArgs", .dtypes = ints, .make = [](const kernel_node&) -> fn {
           return [](context& ctx) {
             if (ctx.input(0).rank() != 1 || ctx.input(1).rank() != 1) ctx.fail("s0 and s1 must be 1-D shapes");
             const auto s0 = vector_input(ctx, 0, "s0"), s1 = vector_input(ctx, 1, "s1");
             const auto axes = gpass::detail::tf_ops::broadcast_gradient_axes(s0, s1);
             if (!axes) ctx.fail("incompatible shapes " + shape::of(s0).to_string() + " and " + shape::of(s1).to_string());
             const dtype t = ctx.input(0).element_type();
             write_ints(ctx, 0, t, axes->first, {static_cast<i64>(axes->first.size())});
             if (ctx.num_outputs() > 1) write_ints(ctx, 1, t, axes->second, {static_cast<i64>(axes->second.size())});
           };
         }});
}

}  // namespace gpass::exec
