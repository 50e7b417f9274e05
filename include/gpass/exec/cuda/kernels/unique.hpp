// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file unique.hpp
/// The CUDA kernels of ONNX Unique and TensorFlow's Unique / UniqueWithCounts, for every
/// element type the generated kernels move (numbers and bool).
///
/// One plan serves both: the rows (the elements of a flattened input, or ONNX's slices along
/// `axis`) are sorted by a bitonic network over their indices, compared lexicographically by
/// TopK's order-preserving keys (-0 equal to +0, every NaN equal and the largest) with ties by
/// index, one launch per stage; a sorted position starts a new value where its row differs
/// from the one before (for TensorFlow also at every NaN: its hash map finds no NaN again). A
/// block per chunk counts those starts, the counts come back (the number of values sizes the
/// outputs), and each block numbers its chunk's positions by a block-wide prefix sum, keeping
/// each value's first position and row. ONNX's sorted output stops there; TensorFlow's order
/// (and ONNX's `sorted = 0`) is the values by their first occurrence, a second bitonic sort of
/// the values by first row. Then a thread per row writes its value's index, a thread per value
/// its first row and count, and the unique rows are gathered from the input (bit for bit).
///
/// Semantics and error messages follow the Eigen CPU kernels (`eigen_cpu/kernels/array.hpp`,
/// `tf_index.hpp`).

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/error.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/select.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/scratch.hpp>
#include <gpass/exec/shape_rules.hpp>
#include <gpass/exec/tf_rules.hpp>

namespace gpass::exec {

namespace cuda_unique {

using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using i64 = std::int64_t;

/// The host image of `g_rows`: `n` rows of `m` elements; row r's element j at
/// ((j / inner) * dim + r) * inner + j % inner (dim = n: the rows are one axis of the input).
struct rows_arg {
  long long n = 0, m = 1, dim = 0, inner = 1;
};

/// The Unique library of element type `t`.
inline std::string unique_source(dtype t) {
  const std::string T(cuda_codegen::storage_type(t)), W(cuda_codegen::compute_type(t));
  std::string s = cuda_codegen::cuda_prelude();
  s += "typedef " + T + " T;\ntypedef " + W + " W;\n";
  s += cuda_select::key_source(t);
  s += cuda_select::block_scan_source();
  s += R"(#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x * blockDim.x)
struct g_rows { long long n, m, dim, inner; };
// rows a and b compared element by element by their keys: -1, 0 or 1
__device__ int g_cmp(const T* __restrict__ x, g_rows v, long long a, long long b) {
  for (long long j = 0; j < v.m; ++j) {
    const long long o = j / v.inner, q = j - o * v.inner;
    const unsigned long long ka = g_key(g_load(x, (o * v.dim + a) * v.inner + q));
    const unsigned long long kb = g_key(g_load(x, (o * v.dim + b) * v.inner + q));
    if (ka != kb) return ka < kb ? -1 : 1;
  }
  return 0;
}
// whether item a sorts before item b (distinct): padding (>= count) after every item; items by
// key when there are keys, else by row; ties by index
__device__ bool g_before(const T* __restrict__ x, g_rows v, const long long* __restrict__ key, long long count, long long a, long long b) {
  if (a >= count || b >= count) return a < b;
  if (key) return key[a] < key[b] || (key[a] == key[b] && a < b);
  const int c = g_cmp(x, v, a, b);
  return c < 0 || (c == 0 && a < b);
}
extern "C" __global__ void uq_iota(long long* __restrict__ p, long long P) { G_LOOP(P) p[i] = i; }
// one stage (block size kk, distance jj) of the bitonic sort of p[0, P), ascending by g_before
extern "C" __global__ void uq_stage(long long* __restrict__ p, long long P, long long kk, long long jj, const T* __restrict__ x, g_rows v,
                                    const long long* __restrict__ key, long long count) {
  G_LOOP(P) {
    const long long b = i ^ jj;
    if (b <= i) continue;
    const long long pa = p[i], pb = p[b];
    const bool greater = g_before(x, v, key, count, pb, pa);
    const bool up = (i & kk) == 0;
    if (greater == up) {
      p[i] = pb;
      p[b] = pa;
    }
  }
}
// whether sorted position j starts a new value (nan_distinct: every NaN is one; 1-D rows)
__device__ bool g_new(const T* __restrict__ x, g_rows v, const long long* __restrict__ p, long long j, int nan_distinct) {
  if (j == 0) return true;
  if (nan_distinct && g_isnan(g_load(x, p[j]))) return true;
  return g_cmp(x, v, p[j - 1], p[j]) != 0;
}
// block b counts the new values of sorted positions [b * chunk, min(n, (b + 1) * chunk))
extern "C" __global__ void uq_count(const T* __restrict__ x, g_rows v, const long long* __restrict__ p, long long chunk, int nan_distinct,
                                    long long* __restrict__ counts) {
  const long long begin = blockIdx.x * chunk, end = min(v.n, begin + chunk);
  long long c = 0;
  for (long long tile = begin; tile < end; tile += blockDim.x) {
    const long long j = tile + threadIdx.x;
    int total;
    g_block_scan(j < end && g_new(x, v, p, j, nan_distinct) ? 1 : 0, &total);
    c += total;
  }
  if (threadIdx.x == 0) counts[blockIdx.x] = c;
}
// block b numbers its chunk's sorted positions from offsets[b] on: group[j] the value of
// position j; start[g] and first[g] the first position and row of value g; start[K] = n
extern "C" __global__ void uq_groups(const T* __restrict__ x, g_rows v, const long long* __restrict__ p, long long chunk, int nan_distinct,
                                     const long long* __restrict__ offsets, long long K, long long* __restrict__ group,
                                     long long* __restrict__ start, long long* __restrict__ first) {
  const long long begin = blockIdx.x * chunk, end = min(v.n, begin + chunk);
  long long base = offsets[blockIdx.x];
  for (long long tile = begin; tile < end; tile += blockDim.x) {
    const long long j = tile + threadIdx.x;
    const int f = j < end && g_new(x, v, p, j, nan_distinct) ? 1 : 0;
    int total;
    const int before = g_block_scan(f, &total);
    if (j < end) {
      const long long g = base + before + f - 1;
      group[j] = g;
      if (f) {
        start[g] = j;
        first[g] = p[j];
      }
      if (j == v.n - 1) start[K] = v.n;
    }
    base += total;
  }
}
// the place of each value in the output order: slot[order[q]] = q
extern "C" __global__ void uq_slots(const long long* __restrict__ order, long long K, long long* __restrict__ slot) {
  G_LOOP(K) slot[order[i]] = i;
}
__device__ __forceinline__ void g_put(void* out, long long at, long long value, int wide) {
  if (wide) ((long long*)out)[at] = value;
  else ((int*)out)[at] = (int)value;
}
// each row's value index in the output order (slot null: the sorted order)
extern "C" __global__ void uq_inverse(const long long* __restrict__ p, const long long* __restrict__ group, const long long* __restrict__ slot,
                                      long long n, void* __restrict__ inverse, int wide) {
  G_LOOP(n) {
    const long long g = group[i];
    g_put(inverse, p[i], slot ? slot[g] : g, wide);
  }
}
// each value's first row and count (counts may be null), in the output order
extern "C" __global__ void uq_values(const long long* __restrict__ start, const long long* __restrict__ first, const long long* __restrict__ slot,
                                     long long K, long long* __restrict__ first_at, void* __restrict__ counts, int wide) {
  G_LOOP(K) {
    const long long s = slot ? slot[i] : i;
    first_at[s] = first[i];
    if (counts) g_put(counts, s, start[i + 1] - start[i], wide);
  }
}
// the unique rows: y's [outer, K, inner] from x's [outer, dim, inner] at the first rows
extern "C" __global__ void uq_gather(const T* __restrict__ x, g_rows v, const long long* __restrict__ first_at, long long K, T* __restrict__ y) {
  G_LOOP(K * v.m) {
    const long long o = i / (K * v.inner), r = i - o * K * v.inner, q = r / v.inner, c = r - q * v.inner;
    y[i] = x[(o * v.dim + first_at[q]) * v.inner + c];
  }
}
)";
  return s;
}

inline const std::vector<std::string>& unique_entries() {
  static const std::vector<std::string> e{"uq_iota", "uq_stage", "uq_count", "uq_groups", "uq_slots", "uq_inverse", "uq_values", "uq_gather"};
  return e;
}
enum entry_index : std::size_t { k_iota, k_stage, k_count, k_groups, k_slots, k_inverse, k_values, k_gather };

/// Where the results go: an absent output's pointer is null (its values still computed into
/// scratch where another output needs them).
struct unique_outputs {
  void* y = nullptr;         ///< the unique rows, [outer, K, inner]
  void* first_at = nullptr;  ///< int64 [K]: each value's first row
  void* inverse = nullptr;   ///< [n]: each row's value index (int64, or int32 where !wide)
  void* counts = nullptr;    ///< [K]: how often each value occurs (int64, or int32 where !wide)
};

/// The unique rows `v` of `x` (element type `t`) on the device: sorts, numbers the values and
/// asks `allocate(K)` for the outputs once their number K is known; `by_first` orders the values
/// by first occurrence (else sorted), `nan_distinct` makes every NaN a value of its own (1-D).
template <class Allocate>
void run_unique(context& ctx, lazy_library& lib, const cuda_tensor& x, rows_arg v, bool by_first, bool nan_distinct, bool wide,
                Allocate&& allocate) {
  const dtype t = x.element_type();
  auto& pol = ctx.policy();
  auto& st = ctx.stream();
  if (v.n == 0) {
    allocate(i64{0});
    return;
  }
  const auto& kl = lib.get(pol, std::string(to_string(t)), unique_entries(), [&] { return unique_source(t); });
  const void* xp = x.data();
  const void* no_key = nullptr;
  // a bitonic sort of p[0, P) (items at or past `count` are padding) by row, or by `key`
  auto sort = [&](cuda_tensor& p, long long P, long long count, const void* key) {
    void* pp = p.data();
    {
      void* args[] = {&pp, &P};
      pol.launch(kl.kernels[k_iota], pol.blocks_for(P), 256, args, st);
    }
    for (long long kk = 2; kk <= P; kk <<= 1)
      for (long long jj = kk >> 1; jj > 0; jj >>= 1) {
        void* args[] = {&pp, &P, &kk, &jj, &xp, &v, &key, &count};
        pol.launch(kl.kernels[k_stage], pol.blocks_for(P), 256, args, st);
      }
  };
  auto pow2 = [](long long n) {
    long long P = 1;
    while (P < n) P <<= 1;
    return P;
  };
  const long long P = pow2(v.n);
  check_scratch(ctx, static_cast<double>(P) * 8.0 * 2.0, "the sort of Unique's rows");
  cuda_tensor perm = pol.allocate_tensor(dtype::int64, {P}, st);
  sort(perm, P, v.n, no_key);
  // the new values per chunk, read back
  const cuda_select::chunk_plan c = cuda_select::chunks_for(v.n);
  const long long blocks = c.blocks;
  long long chunk = c.chunk;
  int nan = nan_distinct ? 1 : 0;
  const void* pp = perm.data();
  cuda_tensor counts = pol.allocate_tensor(dtype::int64, {blocks}, st);
  {
    void* cp = counts.data();
    void* args[] = {&xp, &v, &pp, &chunk, &nan, &cp};
    pol.launch(kl.kernels[k_count], static_cast<unsigned>(blocks), 256, args, st);
  }
  auto [offsets, K] = cuda_select::chunk_offsets(ctx, counts);
  const cuda_tensor off = pol.upload(offsets, st);
  cuda_tensor group = pol.allocate_tensor(dtype::int64, {v.n}, st);
  cuda_tensor start = pol.allocate_tensor(dtype::int64, {K + 1}, st);
  cuda_tensor first = pol.allocate_tensor(dtype::int64, {K}, st);
  const void* op = off.data();
  void* gp = group.data();
  void* sp = start.data();
  void* fp = first.data();
  {
    void* args[] = {&xp, &v, &pp, &chunk, &nan, &op, &K, &gp, &sp, &fp};
    pol.launch(kl.kernels[k_groups], static_cast<unsigned>(blocks), 256, args, st);
  }
  // the output order: by first row (the first rows are distinct), or the sorted order
  std::optional<cuda_tensor> slot;
  const void* slot_p = nullptr;
  if (by_first) {
    const long long PK = pow2(K);
    cuda_tensor order = pol.allocate_tensor(dtype::int64, {PK}, st);
    sort(order, PK, K, fp);
    slot = pol.allocate_tensor(dtype::int64, {K}, st);
    const void* orp = order.data();
    void* slp = slot->data();
    void* args[] = {&orp, &K, &slp};
    pol.launch(kl.kernels[k_slots], pol.blocks_for(K), 256, args, st);
    slot_p = slot->data();
  }
  unique_outputs out = allocate(static_cast<i64>(K));
  std::optional<cuda_tensor> first_scratch;  // the first rows, where Y or the counts need them and no output takes them
  if (!out.first_at && (out.y || out.counts)) {
    first_scratch = pol.allocate_tensor(dtype::int64, {K}, st);
    out.first_at = first_scratch->data();
  }
  int w = wide ? 1 : 0;
  if (out.inverse) {
    long long n = v.n;
    const void* gcp = group.data();
    void* args[] = {&pp, &gcp, &slot_p, &n, &out.inverse, &w};
    pol.launch(kl.kernels[k_inverse], pol.blocks_for(n), 256, args, st);
  }
  if (out.first_at) {
    const void* scp = start.data();
    const void* fcp = first.data();
    void* args[] = {&scp, &fcp, &slot_p, &K, &out.first_at, &out.counts, &w};
    pol.launch(kl.kernels[k_values], pol.blocks_for(K), 256, args, st);
  }
  if (out.y && v.m > 0) {
    const void* fa = out.first_at;
    void* args[] = {&xp, &v, &fa, &K, &out.y};
    pol.launch(kl.kernels[k_gather], pol.blocks_for(mul_or_throw(K, v.m, "Unique output")), 256, args, st);
  }
}

/// The element types Unique takes on the GPU (numbers and bool).
inline std::vector<dtype> unique_types() { return cuda_select::nonzero_types(); }

/// ONNX Unique (11): flattened, or the slices along `axis`; sorted (default) or by first
/// occurrence; outputs Y, indices, inverse_indices, counts (int64), the last three optional.
inline fn make_onnx_unique(const kernel_node& n) {
  const bool sorted = n.attr<i64>("sorted", 1) != 0;
  const std::optional<i64> axis_attr = n.has_attr("axis") ? std::optional<i64>(n.attr<i64>("axis")) : std::nullopt;
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    if (!cuda_codegen::supported(t)) ctx.fail("no CUDA Unique for element type " + std::string(to_string(t)));
    const auto& xs = x.sizes();
    rows_arg v;
    std::size_t axis = 0;
    if (axis_attr) {
      axis = static_cast<std::size_t>(shape_rules::dim_axis(*axis_attr, static_cast<i64>(xs.size()), ctx.node()));
      v.n = v.dim = xs[axis];
      v.inner = shape_rules::prod(xs, axis + 1, xs.size());
      v.m = mul_or_throw(shape_rules::prod(xs, 0, axis), v.inner, "Unique rows");
    } else {
      v.n = v.dim = x.size();
    }
    run_unique(ctx, *lib, x, v, !sorted, false, true, [&](i64 K) {
      std::vector<i64> ysz = axis_attr ? xs : std::vector<i64>{K};
      if (axis_attr) ysz[axis] = K;
      unique_outputs o;
      o.y = ctx.allocate_output(0, t, ysz).data();
      if (ctx.num_outputs() > 1) o.first_at = ctx.allocate_output(1, dtype::int64, {K}).data();
      if (ctx.num_outputs() > 2) o.inverse = ctx.allocate_output(2, dtype::int64, {v.n}).data();
      if (ctx.num_outputs() > 3) o.counts = ctx.allocate_output(3, dtype::int64, {K}).data();
      if (K == 0 || v.m == 0) o.y = nullptr;  // nothing to gather
      if (K == 0) o = {};
      return o;
    });
  };
}

/// TensorFlow Unique / UniqueWithCounts (x 1-D): the values by first occurrence (-0 equal to
/// +0, every NaN a value of its own), each element's index, the counts; indices and counts of
/// `out_idx` (int32 or int64).
inline fn make_tf_unique(const kernel_node& n, bool with_counts) {
  const dtype it = tf_rules::type_attr(n, "out_idx", dtype::int32);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    if (!cuda_codegen::supported(t)) ctx.fail("no CUDA Unique for element type " + std::string(to_string(t)));
    if (x.rank() != 1) ctx.fail("x must be a vector, got " + x.shape().to_string());
    tf_rules::check_int_output(it, ctx.node());
    // (int32 indices: the CPU fails on the first index or count past INT32_MAX; the GPU, stricter,
    // on any input of more elements than int32 counts, before it sorts)
    if (it == dtype::int32 && x.size() > INT32_MAX)
      ctx.fail("x has " + std::to_string(x.size()) + " elements: its indices and counts do not fit in int32");
    rows_arg v;
    v.n = v.dim = x.size();
    run_unique(ctx, *lib, x, v, true, true, it == dtype::int64, [&](i64 K) {
      unique_outputs o;
      o.y = ctx.allocate_output(0, t, {K}).data();
      o.inverse = ctx.allocate_output(1, it, {v.n}).data();
      if (with_counts) o.counts = ctx.allocate_output(2, it, {K}).data();
      if (K == 0) o = {};
      return o;
    });
  };
}

/// Generated sources of this family for representative element types: (name, source).
inline std::vector<std::pair<std::string, std::string>> unique_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  // the key encodings (float, signed, unsigned, bool) and a 16-bit float
  for (dtype t : {dtype::f32, dtype::f16, dtype::int64, dtype::bool_}) r.emplace_back("unique_" + std::string(to_string(t)), unique_source(t));
  return r;
}

}  // namespace cuda_unique

/// Registers ONNX Unique and TensorFlow Unique / UniqueWithCounts.
inline void register_cuda_unique(kernel_registry<cuda>& r) {
  using namespace cuda_unique;
  r.add({.op = "Unique", .dtypes = unique_types(), .make = make_onnx_unique});
  r.add({.domain = "tf", .op = "Unique", .dtypes = unique_types(), .make = [](const kernel_node& n) { return make_tf_unique(n, false); }});
  r.add({.domain = "tf", .op = "UniqueWithCounts", .dtypes = unique_types(),
         .make = [](const kernel_node& n) { return make_tf_unique(n, true); }});
}

}  // namespace gpass::exec
