// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_batch_norm.hpp
/// CUDA kernels of TensorFlow's training batch normalization (domain "tf"), NHWC, f32 and f64
/// as the CPU kernels: FusedBatchNorm / V2 / V3 with `is_training` (the batch's mean and biased variance
/// normalize x; the running statistics out, the variance Bessel-corrected and blended with the
/// inputs when `exponential_avg_factor` != 1; reserve spaces the batch mean and biased variance)
/// and FusedBatchNormGrad / V2 / V3 (training: the batch statistics' own gradient; inference:
/// scale / sqrt(var + eps) * dy; d_scale = sum(dy * x_hat), d_offset = sum(dy)).
///
/// Every statistic is summed in double as the CPU does, but in another order (f64 results may
/// differ from the CPU's in the last bits), in two deterministic levels: a thread
/// per (chunk of rows, channel) adds its rows in order (threads of a warp read adjacent
/// channels), then a thread per channel adds its chunks in order. Nothing is read back: the
/// statistics stay on the device. The inference FusedBatchNorm's kernel is tf.hpp's; both
/// are registered here.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/kernels/tf.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/tf_rules.hpp>

namespace gpass::exec {

namespace cuda_tf {

/// The batch-norm kernels for element type `t` (x, dy, the parameters and outputs; statistics
/// in double):
/// - `bn_part`: per (chunk of `R` rows, channel) the sums of mode 0: x; 1: (x - m)^2; 2: dy and
///   dy * (x - m) * inv, with m = stat[c], inv = stat[C + c];
/// - `bn_sum`: per channel the chunks' sums in order, divided by `div`, into out0 (and out1);
/// - `bn_apply`: y = (x - mean) * (scale / sqrt(var + eps)) + offset;
/// - `bn_out`: the running statistics and reserve spaces of the forward op;
/// - `bn_grad_stat`: stat = (mean, 1 / sqrt(var + eps)) of the gradient's T inputs;
/// - `bn_grad_apply`: dx, and (its first C threads) d_scale and d_offset.
inline std::string batch_norm_train_source(dtype t) {
  std::string r = cuda_codegen::cuda_prelude();
  r += "typedef " + std::string(cuda_codegen::storage_type(t)) + " T;\n";
  r += R"(#define G_LOOP(count) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (count); i += (long long)gridDim.x * blockDim.x)
#define G_D(p, k) ((double)g_load(p, k))
extern "C" __global__ void bn_part(const T* __restrict__ x, const T* __restrict__ dy, const double* __restrict__ stat, double* __restrict__ part,
                                   long long rows, long long C, long long R, int mode) {
  const long long chunks = (rows + R - 1) / R;
  G_LOOP(chunks * C) {
    const long long c = i % C, r0 = (i / C) * R, r1 = r0 + R < rows ? r0 + R : rows;
    double s0 = 0, s1 = 0;
    if (mode == 0) {
      for (long long r = r0; r < r1; ++r) s0 += G_D(x, r * C + c);
    } else if (mode == 1) {
      const double m = stat[c];
      for (long long r = r0; r < r1; ++r) {
        const double d = G_D(x, r * C + c) - m;
        s0 += d * d;
      }
    } else {
      const double m = stat[c], inv = stat[C + c];
      for (long long r = r0; r < r1; ++r) {
        const double g = G_D(dy, r * C + c);
        s0 += g;
        s1 += g * (G_D(x, r * C + c) - m) * inv;
      }
    }
    part[2 * i] = s0;
    part[2 * i + 1] = s1;
  }
}
extern "C" __global__ void bn_sum(const double* __restrict__ part, double* __restrict__ out0, double* __restrict__ out1, long long chunks,
                                  long long C, double div) {
  G_LOOP(C) {
    double s0 = 0, s1 = 0;
    for (long long k = 0; k < chunks; ++k) {
      s0 += part[2 * (k * C + i)];
      s1 += part[2 * (k * C + i) + 1];
    }
    out0[i] = s0 / div;
    if (out1) out1[i] = s1 / div;
  }
}
extern "C" __global__ void bn_apply(const T* __restrict__ x, const T* __restrict__ scale, const T* __restrict__ offset,
                                    const double* __restrict__ mean, const double* __restrict__ var, T* __restrict__ y, long long n, long long C,
                                    double eps) {
  G_LOOP(n) {
    const long long c = i % C;
    const double k = G_D(scale, c) / sqrt(var[c] + eps);
    g_store(y, i, (G_D(x, i) - mean[c]) * k + G_D(offset, c));
  }
}
extern "C" __global__ void bn_out(const double* __restrict__ mean, const double* __restrict__ var, const T* __restrict__ rm,
                                  const T* __restrict__ rv, T* o1, T* o2, T* o3, T* o4, long long C, double adjust, double factor,
                                  int blend) {
  G_LOOP(C) {
    const double v = var[i] * adjust;
    if (o1) g_store(o1, i, blend ? (1 - factor) * G_D(rm, i) + factor * mean[i] : mean[i]);
    if (o2) g_store(o2, i, blend ? (1 - factor) * G_D(rv, i) + factor * v : v);
    if (o3) g_store(o3, i, mean[i]);
    if (o4) g_store(o4, i, var[i]);
  }
}
extern "C" __global__ void bn_grad_stat(const T* __restrict__ mean, const T* __restrict__ var, double* __restrict__ stat, long long C,
                                        double eps) {
  G_LOOP(C) {
    stat[i] = G_D(mean, i);
    stat[C + i] = 1.0 / sqrt(G_D(var, i) + eps);
  }
}
extern "C" __global__ void bn_grad_apply(const T* __restrict__ dy, const T* __restrict__ x, const T* __restrict__ scale,
                                         const double* __restrict__ stat, const double* __restrict__ sums, T* __restrict__ dx,
                                         T* __restrict__ dscale, T* __restrict__ doffset, long long n, long long C, long long rows,
                                         int training) {
  G_LOOP(n) {
    const long long c = i % C;
    const double inv = stat[C + c], k = G_D(scale, c) * inv, g = G_D(dy, i);
    if (training) {
      const double nr = (double)(rows > 1 ? rows : 1), xhat = (G_D(x, i) - stat[c]) * inv;
      g_store(dx, i, k * (g - sums[c] / nr - xhat * sums[C + c] / nr));
    } else {
      g_store(dx, i, k * g);
    }
    if (i < C) {
      g_store(dscale, i, sums[C + i]);
      g_store(doffset, i, sums[i]);
    }
  }
}
)";
  return r;
}

inline const std::vector<std::string>& batch_norm_train_entries() {
  static const std::vector<std::string> v{"bn_part", "bn_sum", "bn_apply", "bn_out", "bn_grad_stat", "bn_grad_apply"};
  return v;
}

/// What a batch-norm kernel runs per call: its generated kernels and the chunking of its rows.
struct bn_runner {
  context& ctx;
  const cuda_detail::lazy_library::entry& k;
  i64 rows, C, R, chunks;
  cuda_tensor part;

  bn_runner(context& c, cuda_detail::lazy_library& lib, dtype t, i64 rows_, i64 channels)
      : ctx(c),
        k(lib.get(c.policy(), std::string(to_string(t)), batch_norm_train_entries(), [t] { return batch_norm_train_source(t); })),
        rows(rows_),
        C(channels) {
    // about 64K threads of partial sums (at least 64 rows each), then a thread per channel
    const i64 want = std::max<i64>(1, std::min<i64>(rows, (i64{1} << 16) / std::max<i64>(C, 1)));
    R = std::max<i64>(64, (rows + want - 1) / want);
    chunks = (rows + R - 1) / R;  // (0 without rows: the sums are 0)
    part = c.policy().allocate_tensor(dtype::f64, {std::max<i64>(chunks, 1) * C * 2}, c.stream());
  }
  void launch(std::size_t entry, i64 n, void** args) {
    auto& pol = ctx.policy();
    pol.launch(k.kernels[entry], pol.blocks_for(n), 256, args, ctx.stream());
  }
  /// The per-channel sums of `mode` (see `batch_norm_train_source`) divided by `div` into
  /// out0 (and out1).
  void sums(const void* x, const void* dy, const void* stat, int mode, double div, void* out0, void* out1) {
    void* pp = part.data();
    long long r = rows, c = C, rr = R, ch = chunks;
    void* a1[] = {&x, &dy, &stat, &pp, &r, &c, &rr, &mode};
    if (chunks > 0) launch(0, chunks * C, a1);
    void* a2[] = {&pp, &out0, &out1, &ch, &c, &div};
    launch(1, C, a2);
  }
};

/// The NHWC check the CPU kernels make at construction.
inline void require_nhwc(const kernel_node& n) {
  const std::string format = n.attr<std::string>("data_format", std::string("NHWC"));
  if (format != "NHWC") n.fail("data_format " + format + " is not supported on the CPU here (NHWC only)");
}

/// FusedBatchNorm / V2 / V3 with is_training.
inline fn make_tf_batch_norm_train(const kernel_node& n) {
  require_nhwc(n);
  const double eps = n.attr<double>("epsilon", 1e-4), factor = n.attr<double>("exponential_avg_factor", 1.0);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [eps, factor, lib](context& ctx) {
    const cuda_tensor& x = ctx.input(0);
    if (x.rank() < 2) ctx.fail("x must have rank >= 2, got sizes " + x.shape().to_string());
    const dtype t = x.element_type();
    const i64 C = x.sizes().back(), rows = C == 0 ? 0 : x.size() / C;
    for (std::size_t k = 1; k < 5; ++k) {
      const cuda_tensor& p = ctx.input(k);
      if (p.element_type() != t)
        ctx.fail("input " + std::to_string(k) + " is " + std::string(to_string(p.element_type())) + ", x is " + std::string(to_string(t)) +
                 " (mixed precision is not supported on the CPU here)");
      if (p.rank() != 1 || (p.sizes()[0] != C && !(k >= 3 && p.sizes()[0] == 0)))
        ctx.fail("input " + std::to_string(k) + " must have " + std::to_string(C) + " elements, got sizes " + p.shape().to_string());
    }
    auto& pol = ctx.policy();
    cuda_tensor stats = pol.allocate_tensor(dtype::f64, {2 * std::max<i64>(C, 1)}, ctx.stream());  // mean [C], var [C]
    double* mean = static_cast<double*>(stats.data());
    double* var = mean + C;
    cuda_tensor& y = ctx.allocate_output(0, t, x.sizes());
    if (C > 0) {
      bn_runner run(ctx, *lib, t, rows, C);
      const double div = static_cast<double>(std::max<i64>(rows, 1));
      run.sums(x.data(), nullptr, nullptr, 0, div, mean, nullptr);
      run.sums(x.data(), nullptr, mean, 1, div, var, nullptr);
      if (y.size() > 0) {
        const void* xp = x.data();
        const void* sp = ctx.input(1).data();
        const void* op = ctx.input(2).data();
        void* yp = y.data();
        long long nn = y.size(), c = C;
        double e = eps;
        void* args[] = {&xp, &sp, &op, &mean, &var, &yp, &nn, &c, &e};
        run.launch(2, nn, args);
      }
      std::vector<void*> outs(4, nullptr);
      for (std::size_t o = 1; o <= 4 && o < ctx.num_outputs(); ++o) outs[o - 1] = ctx.allocate_output(o, t, {C}).data();
      const bool blend = factor != 1.0 && ctx.input(3).size() == C && ctx.input(4).size() == C;
      const void* rm = ctx.input(3).data();
      const void* rv = ctx.input(4).data();
      long long c = C;
      double adjust = rows > 1 ? static_cast<double>(rows) / static_cast<double>(rows - 1) : 1.0, f = factor;
      int bl = blend ? 1 : 0;
      void* args[] = {&mean, &var, &rm, &rv, &outs[0], &outs[1], &outs[2], &outs[3], &c, &adjust, &f, &bl};
      run.launch(3, C, args);
    } else {
      for (std::size_t o = 1; o <= 4 && o < ctx.num_outputs(); ++o) ctx.allocate_output(o, t, {C});
    }
    if (ctx.num_outputs() > 5) ctx.allocate_output_zeroed(5, t, {C});
  };
}

/// FusedBatchNormGrad / V2 / V3 (is_training: the batch statistics' gradient too).
inline fn make_tf_batch_norm_grad(const kernel_node& n) {
  require_nhwc(n);
  const double eps = n.attr<double>("epsilon", 1e-4);
  const bool training = flag(n, "is_training", true);
  auto lib = std::make_shared<cuda_detail::lazy_library>();
  return [eps, training, lib](context& ctx) {
    const cuda_tensor& dy = ctx.input(0);
    const cuda_tensor& x = ctx.input(1);
    if (dy.sizes() != x.sizes() || dy.element_type() != x.element_type())
      ctx.fail("y_backprop " + dy.shape().to_string() + " and x " + x.shape().to_string() + " differ");
    if (x.rank() < 2) ctx.fail("x must have rank >= 2, got sizes " + x.shape().to_string());
    const dtype t = x.element_type();
    const i64 C = x.sizes().back(), rows = C == 0 ? 0 : x.size() / C;
    for (std::size_t k = 2; k < 5; ++k)
      if (ctx.input(k).element_type() != t || ctx.input(k).size() != C)
        ctx.fail("input " + std::to_string(k) + " must be " + std::string(to_string(t)) + "[" + std::to_string(C) + "], got " +
                 std::string(to_string(ctx.input(k).element_type())) + ctx.input(k).shape().to_string());
    cuda_tensor& dx = ctx.allocate_output(0, t, x.sizes());
    cuda_tensor& dscale = ctx.allocate_output(1, t, {C});
    cuda_tensor& doffset = ctx.allocate_output(2, t, {C});
    if (C > 0) {
      auto& pol = ctx.policy();
      cuda_tensor scratch = pol.allocate_tensor(dtype::f64, {4 * C}, ctx.stream());  // stat (mean, inv), sums (dy, dy * x_hat)
      double* stat = static_cast<double*>(scratch.data());
      double* sums = stat + 2 * C;
      bn_runner run(ctx, *lib, t, rows, C);
      {
        const void* mp = ctx.input(3).data();
        const void* vp = ctx.input(4).data();
        long long c = C;
        double e = eps;
        void* args[] = {&mp, &vp, &stat, &c, &e};
        run.launch(4, C, args);
      }
      run.sums(x.data(), dy.data(), stat, 2, 1.0, sums, sums + C);
      const void* dyp = dy.data();
      const void* xp = x.data();
      const void* sp = ctx.input(2).data();
      void *dxp = dx.data(), *dsp = dscale.data(), *dop = doffset.data();
      long long nn = x.size(), c = C, r = rows;
      int tr = training ? 1 : 0;
      if (x.size() == 0) {  // no rows: d_scale and d_offset are 0
        pol.fill_zero(dscale, ctx.stream());
        pol.fill_zero(doffset, ctx.stream());
      } else {
        void* args[] = {&dyp, &xp, &sp, &stat, &sums, &dxp, &dsp, &dop, &nn, &c, &r, &tr};
        run.launch(5, nn, args);
      }
    }
    for (std::size_t k = 3; k < ctx.num_outputs(); ++k) ctx.allocate_output_zeroed(k, t, {C});
  };
}

}  // namespace cuda_tf

/// Every source tf_batch_norm.hpp generates (name, CUDA C++), for compile checks.
inline std::vector<std::pair<std::string, std::string>> tf_batch_norm_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (dtype t : {dtype::f32, dtype::f64})
    r.emplace_back("tf::batch_norm_train_" + std::string(to_string(t)), cuda_tf::batch_norm_train_source(t));
  return r;
}

/// Registers tf_batch_norm.hpp's kernels: FusedBatchNorm / V2 / V3 (inference: tf.hpp's
/// `make_tf_batch_norm`, NHWC or NCHW; training: NHWC as the CPU's) and the gradients.
inline void register_cuda_tf_batch_norm(kernel_registry<cuda>& r) {
  const std::vector<dtype> floats{dtype::f32, dtype::f64};  // (the CPU kernels' types)
  for (const char* op : {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"})
    r.add({.domain = "tf", .op = op, .dtypes = floats,
           .make = [](const kernel_node& n) {
             return tf_rules::flag(n, "is_training", true) ? cuda_tf::make_tf_batch_norm_train(n) : cuda_tf::make_tf_batch_norm(n);
           },
           .applies = [](const kernel_query& q) {
             const bool training = !q.attrs || tf_rules::flag_in(*q.attrs, "is_training", true);
             return training ? cuda_tf::tf_nhwc_format(q) : cuda_tf::tf_2d_format(q);
           }});
  for (const char* op : {"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"})
    r.add({.domain = "tf", .op = op, .dtypes = floats, .make = cuda_tf::make_tf_batch_norm_grad, .applies = cuda_tf::tf_nhwc_format});
}

}  // namespace gpass::exec
