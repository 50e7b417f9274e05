// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_sparse.hpp
/// CUDA kernels of TensorFlow's sparse segment reductions (domain "tf"): SparseSegmentSum,
/// SparseSegmentMean, SparseSegmentSqrtN and their WithNumSegments forms. The indices and
/// segment ids are read back and checked as the CPU kernel checks them (`tf_rules`); each
/// segment's range of the index list is computed on the host; then a thread per output element
/// adds the segment's rows in the index list's order in the compute type (the CPU's sum, in its
/// order: the same bits) and divides by the count (Mean) or its square root (SqrtN). Empty
/// segments are 0. f32, f64, f16 and bf16 as the CPU. Also Bincount and DenseBincount
/// (`make_bincount`), SparseToDense (`make_sparse_to_dense`) and SparseReshape
/// (`make_sparse_reshape`: the shapes on the host, `tf_rules::sparse_reshape_shape`, then a
/// thread per entry ravels its index in the input shape and unravels it in the output's, with
/// the CPU's wrapping arithmetic for an index out of the shape) and SparseFillEmptyRows
/// (`make_sparse_fill`: the indices read back, each entry's place planned on the host,
/// `tf_rules::plan_sparse_fill`; a thread per entry moves its index row and value, a thread per
/// empty row writes its entry).

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
#include <gpass/exec/cuda/kernels/fold.hpp>
#include <gpass/exec/cuda/kernels/nn.hpp>
#include <gpass/exec/cuda/kernels/tf.hpp>
#include <gpass/exec/cuda/kernels/tf_image.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/scratch.hpp>
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
    const cuda_tensor st = upload_vector(ctx, dtype::int64, starts);
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

/// `bincount`: for each bin k of the `bins` that are hit, y[key[k]] = the sum, in input order,
/// of the weights at pos[begin[k], begin[k + 1]) (1 each when `weighted` is 0), rounded to T
/// after each addition and wrapping for integers (the CPU's `add_w` on T), or 1 (`binary`).
/// Bins no value hits keep the output's zeros.
inline std::string bincount_source(dtype t) {
  const std::string add = cuda_codegen::is_int(t) ? "acc = (T)((unsigned long long)acc + (unsigned long long)v);"
                                                  : "g_store(&acc, 0, (W)g_load(&acc, 0) + v);";
  return cuda_nn::head(t) + R"(extern "C" __global__ void bincount(const T* __restrict__ w, int weighted, int binary, const long long* __restrict__ key,
    const long long* __restrict__ begin, const long long* __restrict__ pos, T* __restrict__ y, long long bins) {
  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < bins; k += (long long)gridDim.x * blockDim.x) {
    T acc;
    g_store(&acc, 0, (W)(binary ? 1 : 0));
    if (!binary)
      for (long long j = begin[k]; j < begin[k + 1]; ++j) {
        const W v = weighted ? (W)g_load(w, pos[j]) : (W)1;
        )" + add + R"(
      }
    y[key[k]] = acc;
  }
}
)";
}

/// The weight types of Bincount and DenseBincount (every number type, as the CPU).
inline std::vector<dtype> bincount_types() {
  return {dtype::f16,   dtype::bf16,  dtype::f32,    dtype::f64,    dtype::int8,   dtype::int16,
          dtype::int32, dtype::int64, dtype::uint8, dtype::uint16, dtype::uint32, dtype::uint64};
}

/// Bincount(arr, size, weights) (1-D) and DenseBincount(input, size, weights) (1-D or 2-D,
/// binary_output), checked as on the CPU. The values are read back (a negative one fails as on
/// the CPU; those >= size are dropped); the host sorts the positions by their (row, bin) —
/// stable, so each bin's positions stay in input order — and `bincount` adds each hit bin's
/// weights in that order: the CPU's sums, deterministic (TensorFlow's GPU kernel adds with
/// atomics).
inline fn make_bincount(const kernel_node& n, bool dense) {
  const bool binary = dense && flag(n, "binary_output", false);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [dense, binary, lib](context& ctx) {
    const cuda_tensor& a = ctx.input(0);
    const i64 size = scalar_input(ctx, 1, "size");
    if (size < 0) ctx.fail("size must be non-negative, got " + std::to_string(size));
    const cuda_tensor& w = ctx.input(2);
    const bool weighted = w.size() > 0;
    if (weighted && w.sizes() != a.sizes()) ctx.fail("weights must have the shape of the input, or be empty");
    if (a.rank() > (dense ? 2u : 1u) || (!dense && a.rank() != 1))
      ctx.fail(std::string("input must be ") + (dense ? "1-D or 2-D" : "1-D") + ", got " + a.shape().to_string());
    const std::vector<i64> v = cuda_detail::host_ints(ctx, 0);
    const i64 rows = a.rank() == 2 ? a.sizes()[0] : 1, cols = a.rank() == 2 ? a.sizes()[1] : a.size();
    const dtype t = w.element_type();
    cuda_tensor& y = ctx.allocate_output_zeroed(0, t, a.rank() == 2 ? std::vector<i64>{rows, size} : std::vector<i64>{size});
    std::vector<std::pair<i64, i64>> hits;  // (row * size + bin, position)
    for (i64 r = 0; r < rows; ++r)
      for (i64 c = 0; c < cols; ++c) {
        const i64 b = v[static_cast<std::size_t>(r * cols + c)];
        if (b < 0) ctx.fail("input has a negative value " + std::to_string(b));
        if (b < size) hits.emplace_back(r * size + b, r * cols + c);
      }
    if (hits.empty() || y.size() == 0) return;
    std::sort(hits.begin(), hits.end());  // (by bin, then position: input order within a bin)
    std::vector<i64> key, begin, pos;
    pos.reserve(hits.size());
    for (std::size_t j = 0; j < hits.size(); ++j) {
      if (j == 0 || hits[j].first != hits[j - 1].first) key.push_back(hits[j].first), begin.push_back(static_cast<i64>(j));
      pos.push_back(hits[j].second);
    }
    begin.push_back(static_cast<i64>(hits.size()));
    const cuda_tensor dk = upload_vector(ctx, dtype::int64, key), db = upload_vector(ctx, dtype::int64, begin),
                      dp = upload_vector(ctx, dtype::int64, pos);
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, std::string(to_string(t)), {"bincount"}, [&] { return bincount_source(t); });
    const void* wp = weighted ? w.data() : nullptr;
    int wd = weighted, bn = binary;
    const void* kp = dk.data();
    const void* bp = db.data();
    const void* pp = dp.data();
    void* yp = y.data();
    long long bins = static_cast<long long>(key.size());
    void* args[] = {&wp, &wd, &bn, &kp, &bp, &pp, &yp, &bins};
    pol.launch(k.kernels[0], pol.blocks_for(bins), 256, args, ctx.stream());
  };
}

/// SparseToDense(sparse_indices, output_shape, sparse_values, default_value), any element
/// type but strings: the indices are read back and checked as on the CPU
/// (`tf_rules::sparse_to_dense_offsets`), the output filled with the default value on the
/// device, then each value written (`cuda_fold::scatter_last`: without validate_indices a
/// repeated index keeps its last value, as on the CPU).
inline fn make_sparse_to_dense(const kernel_node& n) {
  const bool validate = flag(n, "validate_indices", true);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [validate, lib](context& ctx) {
    const cuda_tensor& ix = ctx.input(0);
    const cuda_tensor& vals = ctx.input(2);
    const cuda_tensor& def = ctx.input(3);
    const std::vector<i64> shape_v = vector_input(ctx, 1, "output_shape");
    const std::vector<i64> flat = tf_rules::sparse_to_dense_offsets(ix.sizes(), cuda_detail::host_ints(ctx, 0), shape_v, vals.sizes(),
                                                                    def.sizes(), vals.element_type() == def.element_type(), validate,
                                                                    ctx.node());
    const dtype t = vals.element_type();
    cuda_array_detail::require_movable(ctx, t);
    cuda_tensor& y = ctx.allocate_output(0, t, shape_v);
    if (y.size() == 0) return;
    auto& pol = ctx.policy();
    const auto& k = lib->get(pol, "scatter", cuda_fold::scatter_entries(), [] { return cuda_fold::scatter_source(); });
    void* yp = y.data();
    long long count = y.size();
    const void* vp = def.data();
    void* args[] = {&yp, &count, &vp};
    pol.launch(k.kernels[4 + cuda_fold::size_index(size_of(t))], pol.blocks_for(count), 256, args, ctx.stream());
    // the values in order (without validate_indices a repeated position keeps the last)
    std::vector<std::pair<i64, i64>> writes;
    for (std::size_t j = 0; j < flat.size(); ++j) writes.emplace_back(flat[j], vals.rank() == 0 ? 0 : static_cast<i64>(j));
    cuda_fold::scatter_last(ctx, *lib, vals, y, std::move(writes));
  };
}

/// `sparse_reshape(ix, y, N, R, R2, st)`: y[j] ([R2]) the entry j of ix ([R]) moved from the
/// shape of strides st[0, R) to the shape of strides st[R, R + R2) (64-bit wrapping products
/// and sums, as the CPU's).
inline const std::string& sparse_reshape_source() {
  static const std::string s = cuda_codegen::cuda_prelude() + R"(extern "C" __global__ void sparse_reshape(const long long* __restrict__ ix,
    long long* __restrict__ y, long long N, long long R, long long R2, const long long* __restrict__ st) {
  for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < N; j += (long long)gridDim.x * blockDim.x) {
    unsigned long long u = 0;
    for (long long d = 0; d < R; ++d) u += (unsigned long long)ix[j * R + d] * (unsigned long long)st[d];
    long long at = (long long)u;
    for (long long d = 0; d < R2; ++d) {
      y[j * R2 + d] = at / st[R + d];
      at %= st[R + d];
    }
  }
}
)";
  return s;
}

/// SparseReshape(input_indices [N, R] int64, input_shape [R], new_shape [R']).
inline fn make_sparse_reshape(const kernel_node&) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [lib](context& ctx) {
    const cuda_tensor& ix = ctx.input(0);
    if (ix.rank() != 2) ctx.fail("input_indices must be a matrix, got " + ix.shape().to_string());
    if (ix.element_type() != dtype::int64) ctx.fail("input_indices must be int64, got " + std::string(to_string(ix.element_type())));
    const auto in_shape = vector_input(ctx, 1, "input_shape");
    const i64 N = ix.sizes()[0], R = ix.sizes()[1];
    const auto out_shape = tf_rules::sparse_reshape_shape(N, R, in_shape, vector_input(ctx, 2, "new_shape"), ctx.node());
    const i64 R2 = static_cast<i64>(out_shape.size());
    write_ints(ctx, 1, dtype::int64, out_shape, {R2});
    cuda_tensor& y = ctx.allocate_output(0, dtype::int64, {N, R2});
    if (N == 0) return;
    auto& pol = ctx.policy();
    if (in_shape == out_shape) {
      pol.copy_on_device(y.data(), ix.data(), ix.nbytes(), ctx.stream());
      return;
    }
    std::vector<i64> st = shape_rules::strides_of(in_shape);
    const std::vector<i64> ost = shape_rules::strides_of(out_shape);
    st.insert(st.end(), ost.begin(), ost.end());
    const cuda_tensor dst = cuda_detail::upload_vector(ctx, dtype::int64, st);
    const auto& k = lib->get(pol, "sparse_reshape", {"sparse_reshape"}, [] { return sparse_reshape_source(); });
    const void* xp = ix.data();
    void* yp = y.data();
    long long nn = N, rr = R, r2 = R2;
    const void* sp = dst.data();
    void* args[] = {&xp, &yp, &nn, &rr, &r2, &sp};
    pol.launch(k.kernels[0], pol.blocks_for(N), 256, args, ctx.stream());
  };
}

/// `sparse_fill(ix, vals, def, place, erows, eat, oi, ov, rev, N, R, E)`: each entry j's
/// index row and value to output position place[j] (rev[j] = place[j]); each empty row e's
/// entry [erows[e], 0, ...] and default value at eat[e] (oi zeroed before); values moved as
/// elements of `bytes` bytes.
inline std::string sparse_fill_source(std::size_t bytes) {
  const char* v = bytes == 1 ? "unsigned char" : bytes == 2 ? "unsigned short" : bytes == 4 ? "unsigned int" : "unsigned long long";
  return cuda_codegen::cuda_prelude() + "typedef " + v + R"( V;
extern "C" __global__ void sparse_fill(const long long* __restrict__ ix, const V* __restrict__ vals, const V* __restrict__ def,
    const long long* __restrict__ place, const long long* __restrict__ erows, const long long* __restrict__ eat, long long* __restrict__ oi,
    V* __restrict__ ov, long long* __restrict__ rev, long long N, long long R, long long E) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < N + E; i += (long long)gridDim.x * blockDim.x) {
    if (i < N) {
      const long long at = place[i];
      for (long long d = 0; d < R; ++d) oi[at * R + d] = ix[i * R + d];
      ov[at] = vals[i];
      rev[i] = at;
    } else {
      const long long e = i - N, at = eat[e];
      oi[at * R] = erows[e];
      ov[at] = *def;
    }
  }
}
)";
}

/// SparseFillEmptyRows(indices [N, R] int64, values [N], dense_shape [R], default_value).
inline fn make_sparse_fill(const kernel_node&) {
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [lib](context& ctx) {
    const cuda_tensor& ix = ctx.input(0);
    const cuda_tensor& vals = ctx.input(1);
    const cuda_tensor& def = ctx.input(3);
    const auto dshape = vector_input(ctx, 2, "dense_shape");
    const i64 rows = tf_rules::sparse_fill_rows(ix.sizes(), vals.sizes(), vals.element_type(), def.sizes(), def.element_type(), dshape, ctx.node());
    if (ix.element_type() != dtype::int64) ctx.fail("indices must be int64, got " + std::string(to_string(ix.element_type())));
    cuda_array_detail::require_movable(ctx, vals.element_type());
    const i64 N = ix.sizes()[0], R = ix.sizes()[1];
    const std::vector<i64> iv = cuda_detail::host_ints(ctx, 0);
    cuda_tensor& empty = ctx.allocate_output(2, dtype::bool_, {rows});
    check_scratch(ctx, static_cast<double>(rows) * 2 * sizeof(i64), "the row table");
    const tf_rules::sparse_fill_plan plan = tf_rules::plan_sparse_fill(iv, N, R, rows, ctx.node());
    auto& pol = ctx.policy();
    if (rows > 0) pol.copy_to_device(empty.data(), plan.empty.data(), plan.empty.size(), ctx.stream());
    cuda_tensor& oi = ctx.allocate_output(0, dtype::int64, {plan.total, R});
    cuda_tensor& ov = ctx.allocate_output(1, vals.element_type(), {plan.total});
    cuda_tensor& rev = ctx.allocate_output(3, dtype::int64, {N});
    const i64 E = static_cast<i64>(plan.empty_rows.size());
    if (plan.total == 0) return;
    pol.fill_zero(oi, ctx.stream());
    const std::size_t bytes = size_of(vals.element_type());
    const cuda_tensor place = cuda_detail::upload_vector(ctx, dtype::int64, plan.place), erows = cuda_detail::upload_vector(ctx, dtype::int64, plan.empty_rows),
                      eat = cuda_detail::upload_vector(ctx, dtype::int64, plan.empty_at);
    const auto& k = lib->get(pol, std::to_string(bytes), {"sparse_fill"}, [&] { return sparse_fill_source(bytes); });
    const void* xp = ix.data();
    const void* vp = vals.data();
    const void* dp = def.data();
    const void* pp = place.data();
    const void* rp = erows.data();
    const void* ap = eat.data();
    void* op = oi.data();
    void* ovp = ov.data();
    void* rvp = rev.data();
    long long nn = N, rr = R, ee = E;
    void* args[] = {&xp, &vp, &dp, &pp, &rp, &ap, &op, &ovp, &rvp, &nn, &rr, &ee};
    pol.launch(k.kernels[0], pol.blocks_for(N + E), 256, args, ctx.stream());
  };
}

}  // namespace cuda_tf

/// Every source tf_sparse.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> tf_sparse_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16})
    r.emplace_back("tf::sparse_segment_" + std::string(to_string(t)), cuda_tf::sparse_segment_source(t));
  for (dtype t : cuda_tf::bincount_types()) r.emplace_back("tf::bincount_" + std::string(to_string(t)), cuda_tf::bincount_source(t));
  r.emplace_back("tf::sparse_reshape", cuda_tf::sparse_reshape_source());
  for (std::size_t bytes : {1, 2, 4, 8}) r.emplace_back("tf::sparse_fill_" + std::to_string(bytes), cuda_tf::sparse_fill_source(bytes));
  return r;
}

/// Registers tf_sparse.hpp's kernels.
inline void register_cuda_tf_sparse(kernel_registry<cuda>& r) {
  const std::vector<dtype> floats{dtype::f32, dtype::f64, dtype::f16, dtype::bf16};
  for (const auto& [name, kind] : {std::pair{"SparseSegmentSum", 0}, std::pair{"SparseSegmentMean", 1}, std::pair{"SparseSegmentSqrtN", 2}})
    for (const bool with_num : {false, true})
      r.add({.domain = "tf", .op = std::string(name) + (with_num ? "WithNumSegments" : ""), .dtypes = floats,
             .make = [kind, with_num](const kernel_node&) { return cuda_tf::make_sparse_segment(kind, with_num); }});
  r.add({.domain = "tf", .op = "SparseToDense", .dtypes = cuda_array_detail::movable_types(), .type_input = 2,
         .make = cuda_tf::make_sparse_to_dense});
  // SparseReshape: int64 indices (as TensorFlow's op)
  r.add({.domain = "tf", .op = "SparseReshape", .dtypes = {dtype::int64}, .make = cuda_tf::make_sparse_reshape});
  // SparseFillEmptyRows: values of any type the GPU moves, int64 indices
  r.add({.domain = "tf", .op = "SparseFillEmptyRows", .dtypes = cuda_array_detail::movable_types(), .type_input = 1,
         .make = cuda_tf::make_sparse_fill,
         .applies = [](const kernel_query& q) { return q.inputs.empty() || q.inputs[0] == dtype::undefined || q.inputs[0] == dtype::int64; }});
  for (const bool dense : {false, true})
    r.add({.domain = "tf", .op = dense ? "DenseBincount" : "Bincount", .dtypes = cuda_tf::bincount_types(), .type_input = 2,
           .make = [dense](const kernel_node& n) { return cuda_tf::make_bincount(n, dense); }});
}

}  // namespace gpass::exec
