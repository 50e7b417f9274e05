// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_ctc.hpp
/// The CUDA kernel of TensorFlow's CTCGreedyDecoder (domain "tf"; f32 / f64 scores), as the
/// Eigen CPU kernel computes it: a thread per (time step, batch entry) picks the first class of
/// the largest score; a thread per batch entry walks its sequence in order, summing the negated
/// scores in the element type (the CPU's sum, bit for bit) and counting the classes kept
/// (blanks dropped, repeats merged with merge_repeated). The counts come back to size the
/// sparse outputs; then each batch entry writes its classes from its offset on.
/// Checks and messages are the CPU's (`tf_ctc_rules::check_greedy`).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/tf.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/tf_ctc_rules.hpp>
#include <gpass/exec/tf_rules.hpp>

namespace gpass::exec {

namespace cuda_tf_ctc {

using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using i64 = std::int64_t;

/// The CTCGreedyDecoder library of score type `t` (f32 or f64).
inline std::string ctc_source(dtype t) {
  std::string s = cuda_codegen::cuda_prelude();
  s += "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\n";
  s += R"(#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x * blockDim.x)
// the first class of the largest score of each (t, b) within b's sequence (x [T, B, C])
extern "C" __global__ void ctc_best(const T* __restrict__ x, long long steps, long long B, long long C, const long long* __restrict__ len,
                                    long long* __restrict__ best) {
  G_LOOP(steps * B) {
    const long long t = i / B, b = i - t * B;
    if (t >= len[b]) continue;
    const T* row = x + i * C;
    long long k = 0;
    for (long long c = 1; c < C; ++c)
      if (row[c] > row[k]) k = c;
    best[i] = k;
  }
}
// per batch entry: the negated sum of its best scores and the number of classes kept
extern "C" __global__ void ctc_count(const T* __restrict__ x, const long long* __restrict__ best, long long B, long long C,
                                     const long long* __restrict__ len, long long blank, int merge, T* __restrict__ log_prob,
                                     long long* __restrict__ count) {
  G_LOOP(B) {
    T score = 0;
    long long prev = -1, kept = 0;
    for (long long t = 0; t < len[i]; ++t) {
      const long long k = best[t * B + i];
      score += -x[(t * B + i) * C + k];
      if (k != blank && !(merge && k == prev)) ++kept;
      prev = k;
    }
    log_prob[i] = score;
    count[i] = kept;
  }
}
// per batch entry: its classes kept, from offsets[b] on (indices [total, 2], values [total])
extern "C" __global__ void ctc_write(const long long* __restrict__ best, long long B, const long long* __restrict__ len, long long blank,
                                     int merge, const long long* __restrict__ offsets, long long* __restrict__ indices,
                                     long long* __restrict__ values) {
  G_LOOP(B) {
    long long at = offsets[i], pos = 0, prev = -1;
    for (long long t = 0; t < len[i]; ++t) {
      const long long k = best[t * B + i];
      if (k != blank && !(merge && k == prev)) {
        indices[2 * at] = i;
        indices[2 * at + 1] = pos++;
        values[at++] = k;
      }
      prev = k;
    }
  }
}
)";
  return s;
}

inline const std::vector<std::string>& ctc_entries() {
  static const std::vector<std::string> e{"ctc_best", "ctc_count", "ctc_write"};
  return e;
}

/// CTCGreedyDecoder(inputs [max_time, batch, classes], sequence_length [batch]) -> decoded
/// indices [total, 2], values [total], dense shape [batch, longest], log_probability [batch, 1].
inline fn make_ctc_greedy(const kernel_node& n) {
  const bool merge = tf_rules::flag(n, "merge_repeated", false);
  const i64 blank_attr = n.attr<i64>("blank_index", -1);
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    const dtype t = x.element_type();
    if (t != dtype::f32 && t != dtype::f64) ctx.fail("inputs must be float32 or float64, got " + std::string(to_string(t)));
    const auto len = cuda_tf::vector_input(ctx, 1, "sequence_length");
    i64 blank = 0;
    const auto sz = tf_ctc_rules::check_greedy(x.sizes(), len, blank_attr, blank, ctx.node());
    auto& pol = ctx.policy();
    auto& st = ctx.stream();
    cuda_tensor& lp = ctx.allocate_output(3, t, {sz.B, 1});
    if (sz.B == 0) {
      ctx.allocate_output(0, dtype::int64, {0, 2});
      ctx.allocate_output(1, dtype::int64, {0});
      cuda_tf::write_ints(ctx, 2, dtype::int64, {0, 0}, {2});
      return;
    }
    const auto& kl = lib->get(pol, std::string(to_string(t)), ctc_entries(), [&] { return ctc_source(t); });
    const cuda_tensor dlen = cuda_detail::upload_vector(ctx, dtype::int64, len);
    cuda_tensor best = pol.allocate_tensor(dtype::int64, {mul_or_throw(sz.T, sz.B, "CTCGreedyDecoder steps")}, st);
    const void* xp = x.data();
    const void* lenp = dlen.data();
    void* bp = best.data();
    long long steps = sz.T, B = sz.B, C = sz.C, bl = blank;
    int mg = merge ? 1 : 0;
    if (best.size() > 0) {
      void* args[] = {&xp, &steps, &B, &C, &lenp, &bp};
      pol.launch(kl.kernels[0], pol.blocks_for(best.size()), 256, args, st);
    }
    cuda_tensor count = pol.allocate_tensor(dtype::int64, {B}, st);
    {
      void* lpp = lp.data();
      void* cp = count.data();
      void* args[] = {&xp, &bp, &B, &C, &lenp, &bl, &mg, &lpp, &cp};
      pol.launch(kl.kernels[1], pol.blocks_for(B), 256, args, st);
    }
    const gpass::tensor hc = pol.download(count, st);
    std::vector<i64> offsets(static_cast<std::size_t>(B));
    i64 total = 0, longest = 0;
    for (i64 b = 0; b < B; ++b) {
      offsets[static_cast<std::size_t>(b)] = total;
      total += hc.data<i64>()[b];
      longest = std::max(longest, hc.data<i64>()[b]);
    }
    cuda_tensor& oi = ctx.allocate_output(0, dtype::int64, {total, 2});
    cuda_tensor& ov = ctx.allocate_output(1, dtype::int64, {total});
    cuda_tf::write_ints(ctx, 2, dtype::int64, {B, longest}, {2});
    if (total == 0) return;
    const cuda_tensor off = cuda_detail::upload_vector(ctx, dtype::int64, offsets);
    const void* op = off.data();
    void* ip = oi.data();
    void* vp = ov.data();
    void* args[] = {&bp, &B, &lenp, &bl, &mg, &op, &ip, &vp};
    pol.launch(kl.kernels[2], pol.blocks_for(B), 256, args, st);
  };
}

/// Generated sources of this family: (name, source).
inline std::vector<std::pair<std::string, std::string>> ctc_generated_sources() {
  return {{"ctc_f32", ctc_source(dtype::f32)}, {"ctc_f64", ctc_source(dtype::f64)}};
}

}  // namespace cuda_tf_ctc

/// Registers CTCGreedyDecoder.
inline void register_cuda_tf_ctc(kernel_registry<cuda>& r) {
  r.add({.domain = "tf", .op = "CTCGreedyDecoder", .dtypes = {dtype::f32, dtype::f64}, .make = cuda_tf_ctc::make_ctc_greedy});
}

}  // namespace gpass::exec
